#!/usr/bin/env bash
# Set everything up, then run the whole test suite, mypy and ruff.
ARRAYSELECT_EXTRAS=test,dev
source "$(dirname "$0")/_venv.sh"
set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing the run" >&2
  exit 1
fi
[ "$status" -eq 0 ] || exit "$status"
.venv/bin/mypy
.venv/bin/ruff check src backends tests
DOCS_DOCTESTS=0 bash scripts/docs.sh
