#!/usr/bin/env bash
# CI matrix job: the test suite on CPython 3.11 (x86-64) against the oldest or the newest
# dependency set.
#
#   bash scripts/ci/job_deps.sh oldest   every library at exactly the lower bound that
#                                        pyproject.toml declares (scripts/ci/lower_bounds.py
#                                        turns each `>=X` into `==X`; docs/platforms.md has
#                                        the support policy that chose them)
#   bash scripts/ci/job_deps.sh newest   whatever pip resolves today, torch included
#
# torch: our machines' pip configuration (/etc/xdg/pip/pip.conf) adds a constraint file
# that caps torch (torch<=2.14.1), and PIP_FIND_LINKS points at a local folder. The newest
# set must not inherit them, so this job runs pip with PIP_CONFIG_FILE=/dev/null (pip then
# reads no configuration file at all; the CA bundle still comes from the environment:
# PIP_CERT / SSL_CERT_FILE) and PIP_FIND_LINKS and PIP_CONSTRAINT unset. PyPI's Linux torch
# is the CUDA build: torch and its nvidia-* wheels are several GB, downloaded once into
# the pip cache below.
#
# The venvs live under ${ARRAYSELECT_CI_CACHE:-~/.cache/arrayselect-ci}/deps-SET and are the cache:
# the oldest one is rebuilt when pyproject.toml or setup.py change; the newest one is
# upgraded in place on every run (pip downloads only what was released since).
# ARRAYSELECT_DEPS_PYTEST_ARGS replaces the default test selection (below). Ends with
# scripts/ci/record.py (one line, one JSON file); exits non-zero when a test fails.
source "$(dirname "$0")/_job.sh"
cd "$REPO"
SET=${1:?usage: job_deps.sh oldest|newest}
case $SET in oldest | newest) ;; *) echo "job_deps.sh: unknown set $SET" >&2; exit 2 ;; esac
job_init "deps-$SET" 3.11 x86_64 "$SET"
CACHE=$CI_CACHE/deps-$SET
PY311=${ARRAYSELECT_CI_PYTHON311:-python3.11}
VENV=$CACHE/venv
JUNIT=$CACHE/junit.xml
job_need "$PY311"
mkdir -p "$CACHE"
export PIP_CACHE_DIR=$CACHE/pip PIP_DISABLE_PIP_VERSION_CHECK=1
# no config file: lifts our machines' torch cap (see above); applies to both sets so that
# they depend on PyPI alone
export PIP_CONFIG_FILE=/dev/null
unset PIP_FIND_LINKS PIP_CONSTRAINT
python3 scripts/ci/lower_bounds.py --requirements > "$CACHE/requirements.txt"
python3 scripts/ci/lower_bounds.py --test-tools > "$CACHE/test-tools.txt"
pins=()
if [ "$SET" = oldest ]; then
  python3 scripts/ci/lower_bounds.py > "$CACHE/oldest-pins.txt"
  pins=(-c "$CACHE/oldest-pins.txt")
fi
# The venv is the cache: the oldest one is rebuilt only when pyproject.toml or setup.py
# change; the newest one is upgraded in place (pip downloads only what was released since).
stamp=$(cat pyproject.toml setup.py | sha256sum | cut -c1-16)
t0=$(date +%s)
if [ "$(cat "$VENV/.stamp" 2> /dev/null)" != "$stamp" ]; then
  rm -rf "$VENV"
  "$PY311" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi
# the dependencies (the newest set upgraded, every one), then the package itself, not
# editable: its extensions built into the venv from this checkout
upgrade=()
[ "$SET" = oldest ] || upgrade=(--upgrade --upgrade-strategy eager)
"$VENV/bin/python" -m pip install -q "${upgrade[@]}" "${pins[@]}" \
  -r "$CACHE/requirements.txt" -r "$CACHE/test-tools.txt"
# from a copy: a build folder in this checkout would be shared with the other jobs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
copy_checkout "$work/src"
ARRAYSELECT_REQUIRE_KERNEL=1 "$VENV/bin/python" -m pip install -q "${pins[@]}" \
  --force-reinstall --no-deps "$work/src"
echo "$stamp" > "$VENV/.stamp"
echo "job_deps $SET: venv ready in $(($(date +%s) - t0)) s"
versions=$("$VENV/bin/python" -c "
import importlib.metadata as m
print(', '.join(f'{n} {m.version(n)}' for n in ('numpy', 'jax', 'torch', 'dask',
      'array-api-compat', 'array-api-strict', 'array-api-extra', 'ml_dtypes')))")
echo "job_deps $SET: $versions"
# newest only: which torch design runs (show_runtime's line), so the log says it
[ "$SET" = oldest ] || "$VENV/bin/python" -c "import torch, arrayselect; arrayselect.show_runtime()" \
  | grep "torch backend:" || true
# The default selection, by marker (tests/conftest.py: ASPECTS): the tests whose outcome
# the libraries' versions decide (their promotion, dtypes, eager and compiled calls, JAX's
# 64-bit mode, torch's kernels, Dask's graphs, the sdist and plugin builds) - not the
# NumPy kernel's own tests, the docs, the examples or the benchmarks, which the main run
# has (CI's time: docs/platforms.md).
marks="versions"
# newest only: the rest of the torch tests (issue 26: CI runs them on the newest torch, with
# the recent-call design this torch verifies; the oldest set has not been run with them)
[ "$SET" = oldest ] || marks="versions or torch"
if [ -n "${ARRAYSELECT_DEPS_PYTEST_ARGS:-}" ]; then
  read -r -a args <<< "$ARRAYSELECT_DEPS_PYTEST_ARGS"
else
  args=(tests -m "$marks")
fi
set +e
"$VENV/bin/python" -m pytest -q -p no:cacheprovider --junitxml="$JUNIT" "${args[@]}"
status=$?
set -e
if [ "$status" -eq 0 ]; then
  job_record run "$versions" "$JUNIT"
else
  job_record failed "$versions" "$JUNIT"
fi
exit "$status"
