#!/usr/bin/env bash
# The nightly loop a scheduler runs: score tonight's predictions, find the last successful
# run, compare, and exit non-zero on an alarm.
#
# Usage:
#   scripts/nightly.sh ROOT PREDICTIONS [REFERENCES]
#
# Layout under ROOT (a local directory; Hive-style partitions a warehouse can read):
#   ROOT/run_date=YYYY-MM-DD/run_id=RUN_ID/          overlap score output (_SUCCESS last)
#   ROOT/compare/run_date=YYYY-MM-DD/run_id=RUN_ID/  compare.parquet, compare.json, delta.png
#
# The baseline is the newest complete run (one with _SUCCESS) dated on or before tonight's
# RUN_DATE, other than tonight's: newest by run_date, then by the time its _SUCCESS was
# written. Failed or half-written runs have no _SUCCESS and are never used as a baseline.
#
# Environment (all optional):
#   OVERLAP       the overlap command (default: overlap; e.g. ".venv/bin/overlap")
#   RUN_DATE      the date partition, YYYY-MM-DD (default: today in UTC)
#   RUN_ID        the run id (default: UTC time stamp and a random suffix, e.g. 20250101T020000Z-1a2b)
#   SCORE_ARGS    extra arguments for overlap score (default: --keep-text, so the examples that
#                 moved can be read even after tonight's inputs are overwritten)
#   COMPARE_ARGS  extra arguments for overlap compare (e.g. "--band 0.005 --metric rougeL.fmeasure")
#   BASELINE      compare with this run directory instead of the last successful run
#   PUBLISH_ARGS  when set, publish tonight's run with `overlap publish RUN_DIR $PUBLISH_ARGS`
#                 right after scoring, e.g. "--delta /data/warehouse --label model=m7" or
#                 "--iceberg sqlite:////data/catalog.db --namespace evals"; a failed publish
#                 stops the loop with its exit code (publishing again later completes it)
#   REPORT        REPORT=1 also writes the HTML report of tonight's run against the baseline,
#                 COMPARE_DIR/report.html (overlap report; a failure is reported, not fatal)
#
# Rerunning a night (same RUN_DATE and RUN_ID) resumes it: a score that finished is reused,
# an interrupted one resumes from its staging directory, and the comparison (and what
# follows it) is done again. ROOT may hold any characters (spaces, '[', '*', ...).
#
# Exit codes: 0 no alarm, or a first run with nothing to compare with; 1 alarm; 2 bad usage
# or input; 3 or 4 as overlap score (output held by another run; execution failure).
set -uo pipefail

usage() {
    sed -n '2,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

[[ $# -ge 2 && $# -le 3 ]] || usage
ROOT=${1%/}
[[ $ROOT == -* ]] && ROOT=./$ROOT  # never taken for an option by find
PREDICTIONS=$2
REFERENCES=${3:-}
read -r -a OVERLAP_CMD <<< "${OVERLAP:-overlap}"
read -r -a SCORE_EXTRA <<< "${SCORE_ARGS---keep-text}"
read -r -a COMPARE_EXTRA <<< "${COMPARE_ARGS:-}"
RUN_DATE=${RUN_DATE:-$(date -u +%Y-%m-%d)}
RUN_ID=${RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)-$(od -An -N2 -tx2 /dev/urandom | tr -d ' ')}
if [[ ! $RUN_DATE =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]]; then
    echo "nightly: RUN_DATE must be YYYY-MM-DD, got '$RUN_DATE'" >&2
    exit 2
fi
# RUN_ID becomes a directory name: the rule of overlap score --run-id, checked before any path
# is built from it.
if [[ ! $RUN_ID =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ ]]; then
    echo "nightly: RUN_ID must be 1-128 letters, digits, '.', '_' or '-' starting with a" \
         "letter or digit, got '$RUN_ID'" >&2
    exit 2
fi

RUN_DIR="$ROOT/run_date=$RUN_DATE/run_id=$RUN_ID"
COMPARE_DIR="$ROOT/compare/run_date=$RUN_DATE/run_id=$RUN_ID"

# 1. Score tonight's predictions (reused when this night's run already finished).
if [[ -f $RUN_DIR/_SUCCESS ]]; then
    echo "nightly: reusing the finished run $RUN_DIR" >&2
else
    score=("${OVERLAP_CMD[@]}" score "$PREDICTIONS")
    [[ -n $REFERENCES ]] && score+=(--references "$REFERENCES")
    score+=(--output "$RUN_DIR" --run-id "$RUN_ID" "${SCORE_EXTRA[@]}")
    echo "nightly: scoring into $RUN_DIR" >&2
    "${score[@]}"
    rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "nightly: overlap score failed (exit $rc); no comparison; to resume, run again" \
             "with RUN_DATE=$RUN_DATE RUN_ID=$RUN_ID" >&2
        exit "$rc"
    fi
fi

# 1b. Publish tonight's run to warehouse tables (only when PUBLISH_ARGS is set).
if [[ -n ${PUBLISH_ARGS:-} ]]; then
    read -r -a PUBLISH_EXTRA <<< "$PUBLISH_ARGS"
    echo "nightly: publishing $RUN_DIR" >&2
    "${OVERLAP_CMD[@]}" publish "$RUN_DIR" --run-date "$RUN_DATE" "${PUBLISH_EXTRA[@]}"
    rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "nightly: overlap publish failed (exit $rc); run it again to complete" >&2
        exit "$rc"
    fi
fi

# 2. Find the last successful run before this one.
last_successful() {
    local marker dir date stamp
    # ROOT is matched as a literal prefix (quoted), never as a pattern
    find "$ROOT" -mindepth 3 -maxdepth 3 -type f -name _SUCCESS -print0 2>/dev/null |
    while IFS= read -r -d '' marker; do
        [[ ${marker#"$ROOT/"} == run_date=*/run_id=*/_SUCCESS ]] || continue
        dir=${marker%/_SUCCESS}
        [[ $dir == "$RUN_DIR" ]] && continue
        date=${dir#"$ROOT/run_date="}
        date=${date%%/*}
        [[ $date > $RUN_DATE ]] && continue
        stamp=$(stat -c %Y "$marker")
        printf '%s\t%s\t%s\n' "$date" "$stamp" "$dir"
    done | sort -t $'\t' -k1,1 -k2,2n | tail -n 1 | cut -f3-
}
baseline=${BASELINE:-$(last_successful)}
if [[ -z $baseline ]]; then
    echo "nightly: no earlier successful run under $ROOT; nothing to compare with" >&2
    exit 0
fi

# 3. Compare; overlap compare exits 1 on an alarm.
mkdir -p "$COMPARE_DIR"
echo "nightly: comparing $RUN_DIR with $baseline" >&2
"${OVERLAP_CMD[@]}" compare "$baseline" "$RUN_DIR" --output "$COMPARE_DIR" \
    --plot "$COMPARE_DIR/delta.png" "${COMPARE_EXTRA[@]}"
rc=$?

# 3b. The HTML report beside compare.json (only when REPORT=1); compare's exit code stands.
if [[ ${REPORT:-0} == 1 ]]; then
    "${OVERLAP_CMD[@]}" report "$RUN_DIR" --baseline "$baseline" \
        --output "$COMPARE_DIR/report.html" >&2 \
        || echo "nightly: overlap report failed; the comparison stands" >&2
fi

case $rc in
    0) echo "nightly: no alarm" >&2 ;;
    1) echo "nightly: ALARM: read $COMPARE_DIR/compare.json and the examples that moved" >&2 ;;
    *) echo "nightly: overlap compare failed (exit $rc); to redo it, run again with" \
            "RUN_DATE=$RUN_DATE RUN_ID=$RUN_ID" >&2
       exit "$rc" ;;
esac

# Publishing (PUBLISH_ARGS) is step 1b, right after scoring: tonight's run is in the tables
# whatever the comparison finds, and a rerun publishes again (writing only what is missing).

exit "$rc"
