#!/usr/bin/env bash
# CI matrix job "main": the whole test suite on CPython 3.11, x86-64, the pinned
# dependencies, against the wheel users get (scripts/ci/build_wheel.sh: manylinux_2_28)
# installed in a venv of its own, the checkout off sys.path.
#
#   bash scripts/ci/job_main.sh [PYTEST ARGS]
#
# The venv takes the test dependencies from .venv (a .pth line naming .venv's
# site-packages, after the venv's own): one install of torch, JAX and the rest, not two.
# .venv's editable arrayselect stays out of it (a .pth line adds a folder, not the .pth
# files in it). The suite itself checks that it imports the installed wheel
# (ARRAYSELECT_TEST_INSTALLED_IN, tests/conftest.py). This catches what an editable
# install hides: a missing .pyi, py.typed or package data.
source "$(dirname "$0")/_job.sh"
job_init main 3.11 x86_64 "pinned (scripts/constraints.txt)"
WHEEL=$(ls "${ARRAYSELECT_WHEEL_DIR:?set by matrix.sh}"/arrayselect-*manylinux*.whl 2> /dev/null | head -1)
[ -n "$WHEEL" ] || job_cannot_run "no wheel in $ARRAYSELECT_WHEEL_DIR (scripts/ci/build_wheel.sh makes it)"
VENV=$ARRAYSELECT_MATRIX_DIR/main-venv
rm -rf "$VENV"
"$(.venv/bin/python -c 'import sys; print(sys._base_executable)')" -m venv "$VENV"
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$REPO/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
  > "$SITE/_arrayselect_ci_test_deps.pth"
"$VENV/bin/python" -m pip install -q --no-deps --no-index "$WHEEL"
(cd / && "$VENV/bin/python" -c "import arrayselect as a; print('testing', a.__file__); a.show_runtime()")
junit=$ARRAYSELECT_MATRIX_DIR/main.xml
set +e
# the pytest script, not `python -m pytest`: the latter puts the checkout on sys.path
ARRAYSELECT_TEST_INSTALLED_IN=$VENV "$VENV/bin/python" "$REPO/.venv/bin/pytest" \
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
