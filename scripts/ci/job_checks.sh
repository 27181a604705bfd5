#!/usr/bin/env bash
# CI matrix job "checks": what is not a platform's test run, in .venv (CPython 3.11):
# mypy and ruff; the docs built with warnings as errors (their examples run as doctests
# in the main job, tests/test_docs.py); the asv suite imported (`asv check`) and run once
# per benchmark class on one small combination (asv_benchmarks/ci_run.py); the quick
# benchmark comparison (`arrayselect bench --quick`), which must match NumPy. Each step's
# time is printed; the first failing step ends the job with its own output.
source "$(dirname "$0")/_job.sh"
cd "$REPO"
step() { # NAME COMMAND...
  local t0=$SECONDS
  echo "checks: $1"
  "${@:2}"
  echo "checks: $1 done in $((SECONDS - t0)) s"
}
step mypy .venv/bin/mypy
step ruff .venv/bin/ruff check src backends tests asv_benchmarks
step docs .venv/bin/sphinx-build -q -W --keep-going -b html docs docs/_build/html
step "asv check" sh -c 'cd asv_benchmarks && ../.venv/bin/asv check -E existing'
step "asv run (one combination per class)" .venv/bin/python asv_benchmarks/ci_run.py
step "bench --quick" .venv/bin/python -m arrayselect bench --quick
