#!/usr/bin/env bash
# CI matrix job "main": the whole test suite on CPython 3.11, x86-64, the pinned
# dependencies, against the wheel users get (scripts/ci/build_wheel.sh: manylinux_2_28)
# installed in a venv of its own, the checkout off sys.path.
#
#   bash scripts/ci/job_main.sh [PYTEST ARGS]
#
# The wheel is installed with the extras the suite needs (test, conformance, cuda-check),
# as a user would, so its own metadata resolves its dependencies; scripts/constraints.txt
# pins the CPU torch as for .venv (pip takes most wheels from its cache or this machine's
# disk: about a minute). The suite itself checks that it imports the installed wheel
# (ARRAYSELECT_TEST_INSTALLED_IN, tests/conftest.py). This catches what an editable
# install hides: a missing .pyi, py.typed or package data, a dependency left out.
source "$(dirname "$0")/_job.sh"
job_init main 3.11 x86_64 "pinned (scripts/constraints.txt)"
WHEEL=$(ls "${ARRAYSELECT_WHEEL_DIR:?set by matrix.sh}"/arrayselect-*manylinux*.whl 2> /dev/null | head -1)
[ -n "$WHEEL" ] || job_cannot_run "no wheel in $ARRAYSELECT_WHEEL_DIR (scripts/ci/build_wheel.sh makes it)"
VENV=$ARRAYSELECT_MATRIX_DIR/main-venv
rm -rf "$VENV"
"$("$REPO/.venv/bin/python" -c 'import sys; print(sys._base_executable)')" -m venv "$VENV"
export PIP_CACHE_DIR=$CI_CACHE/main/pip  # its own: the other jobs run beside it
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "arrayselect[test,conformance,cuda-check] @ file://$WHEEL" \
  -c "$REPO/scripts/constraints.txt"
(cd / && "$VENV/bin/python" -c "import arrayselect as a; print('testing', a.__file__); a.show_runtime()")
junit=$ARRAYSELECT_MATRIX_DIR/main.xml
set +e
# the venv's pytest script, not `python -m pytest`: the latter puts the checkout on sys.path
ARRAYSELECT_TEST_INSTALLED_IN=$VENV "$VENV/bin/pytest" \
  --junitxml="$junit" "$@"
status=$?
set -e
versions=$("$VENV/bin/python" -c "import importlib.metadata as m; print(', '.join(
    f'{n} {m.version(n)}' for n in ('numpy', 'jax', 'torch', 'dask')))")
note="the installed wheel $(basename "$WHEEL" | grep -oE 'manylinux_2_[0-9]+' | tail -1); $versions"
if [ "$status" -eq 0 ]; then
  job_record run "$note" "$junit"
else
  job_record failed "$note" "$junit"
fi
exit "$status"
