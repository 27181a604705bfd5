#!/usr/bin/env bash
# The main job: set everything up, run the self-check on every backend, then the
# quick benchmark comparison on every backend and device present. Arguments go
# to the benchmark (e.g. --png chart.png). Fails if either fails.
ARRAYSELECT_EXTRAS=backends,plot
source "$(dirname "$0")/_venv.sh"
set +e
.venv/bin/python -m arrayselect selfcheck
selfcheck=$?
echo
.venv/bin/python -m arrayselect bench --quick "$@"
bench=$?
set -e
[ "$selfcheck" -eq 0 ] && [ "$bench" -eq 0 ]
