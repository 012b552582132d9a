#!/usr/bin/env bash
# The nightly loop a scheduler runs: `overlap nightly ROOT PREDICTIONS [REFERENCES]` (see
# `overlap nightly --help` and the README's "Nightly use"). Kept so that existing schedules
# work: the settings come from the same environment variables (RUN_DATE, RUN_ID, BASELINE,
# SCORE_ARGS, COMPARE_ARGS, PUBLISH_ARGS, REPORT=1), OVERLAP names the command (default:
# overlap; e.g. ".venv/bin/overlap"), and the exit codes are the command's: 0 no alarm, or a
# first run with nothing to compare with; 1 alarm; 2 bad usage or input; 3 or 4 as overlap
# score. ROOT may hold any characters.
if [[ $# -lt 2 || $# -gt 3 ]]; then
    echo "Usage: scripts/nightly.sh ROOT PREDICTIONS [REFERENCES]  (overlap nightly --help)" >&2
    exit 2
fi
read -r -a OVERLAP_CMD <<< "${OVERLAP:-overlap}"
exec "${OVERLAP_CMD[@]}" nightly "$@"
