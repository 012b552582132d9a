#!/usr/bin/env bash
# The nightly loop a scheduler runs: `overlap nightly ROOT PREDICTIONS [REFERENCES]` (see
# `overlap nightly --help` and docs/compare.md, "Nightly use"). The settings come from the
# same environment variables (RUN_DATE, RUN_ID, BASELINE, SCORE_ARGS, COMPARE_ARGS,
# PUBLISH_ARGS, REPORT=1), OVERLAP names the command (default: overlap; e.g.
# ".venv/bin/overlap"), and the exit codes are the command's: 0 no alarm, or a first run
# with nothing to compare with; 1 alarm; 2 bad usage or input; 3 or 4 as overlap score.
# ROOT may hold any characters.
#
# For cron: with NIGHTLY_LOG=FILE every night's output (stdout and stderr) is appended to
# FILE as it comes, and printed on stdout only when the night exits non-zero (an alarm or a
# failure), so that cron, which mails whatever a job prints, mails exactly the nights that
# need a person.
if [[ $# -lt 2 || $# -gt 3 ]]; then
    echo "Usage: scripts/nightly.sh ROOT PREDICTIONS [REFERENCES]  (overlap nightly --help)" >&2
    exit 2
fi
read -r -a OVERLAP_CMD <<< "${OVERLAP:-overlap}"
if [[ -z "${NIGHTLY_LOG:-}" ]]; then
    exec "${OVERLAP_CMD[@]}" nightly "$@"
fi
set -o pipefail
night=$(mktemp "${TMPDIR:-/tmp}/overlap-nightly.XXXXXX") || exit 4
trap 'rm -f -- "$night"' EXIT
echo "== overlap nightly $(date -u +%Y-%m-%dT%H:%M:%SZ) RUN_DATE=${RUN_DATE:-} RUN_ID=${RUN_ID:-}" \
    >> "$NIGHTLY_LOG" || exit 4
"${OVERLAP_CMD[@]}" nightly "$@" 2>&1 | tee -a -- "$NIGHTLY_LOG" > "$night"
code=$?
echo "== exit $code" >> "$NIGHTLY_LOG"
if [[ $code -ne 0 ]]; then
    echo "overlap nightly exited $code (1: alarm; 2-4: a failure); full log: $NIGHTLY_LOG"
    cat -- "$night"
fi
exit "$code"
