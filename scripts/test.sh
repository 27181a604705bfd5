#!/usr/bin/env bash
# Set everything up, then run the whole test suite (the CI matrix's main job: CPython 3.11,
# x86-64, the pinned dependencies), mypy and ruff; then the CI matrix (scripts/ci/matrix.sh,
# two jobs at a time: CPython 3.12-3.14 and a free-threaded 3.13t, the package on aarch64
# and big-endian s390x under qemu, the C code cross-compiled for Windows, macOS and musl;
# the jobs in its NOT_IN_CI table run only by name, recorded as not run), which writes the
# table docs/platform_matrix.inc; then build the docs; then check that the asv
# benchmark suite imports and is well formed (against this environment), run each of its
# benchmark classes once (asv_benchmarks/ci_run.py), and check that the quick benchmark
# comparison runs and matches NumPy.
# ARRAYSELECT_MATRIX=0 skips the matrix (saying so); ARRAYSELECT_CROSS_CHECK=0 skips its
# cross-compiling job; a matrix job whose tools cannot be installed skips itself, saying
# why. A failed matrix job fails the run after the docs and benchmark checks.
# conformance: OpenVINO, ONNX Runtime and PaddlePaddle for tests/test_conformance_runtimes.py
# (measured: +47 s of install and ~1 GB in .venv, ~5 s of tests).
# cuda-check: CuPy and NVRTC, so that tests/test_cupy_kernels.py compiles every CUDA
# kernel variant (no GPU needed).
ARRAYSELECT_EXTRAS=test,dev,conformance,cuda-check
source "$(dirname "$0")/_venv.sh"
export ARRAYSELECT_MATRIX_DIR=${ARRAYSELECT_MATRIX_DIR:-$PWD/.ci-matrix}
rm -rf "$ARRAYSELECT_MATRIX_DIR"
mkdir -p "$ARRAYSELECT_MATRIX_DIR"
main_start=$(date +%s)
set +e
.venv/bin/python -m pytest --junitxml="$ARRAYSELECT_MATRIX_DIR/main.xml" "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing the run" >&2
  exit 1
fi
main_status=run
[ "$status" -eq 0 ] || main_status=failed
python3 scripts/ci/record.py main --python 3.11 --cpu x86_64 --deps "pinned (scripts/constraints.txt)" \
  --status "$main_status" --junit "$ARRAYSELECT_MATRIX_DIR/main.xml" \
  --seconds "$(($(date +%s) - main_start))" \
  --note "$(.venv/bin/python -c "import importlib.metadata as m; print(', '.join(f'{n} {m.version(n)}' for n in ('numpy', 'jax', 'torch', 'dask')))")"
[ "$status" -eq 0 ] || exit "$status"
.venv/bin/mypy
.venv/bin/ruff check src backends tests asv_benchmarks
matrix_status=0
if [ "${ARRAYSELECT_MATRIX:-1}" = 0 ]; then
  echo "matrix skipped: ARRAYSELECT_MATRIX=0 (docs/platform_matrix.inc keeps the last run's table)"
else
  bash scripts/ci/matrix.sh || matrix_status=$?
fi
DOCS_DOCTESTS=0 bash scripts/docs.sh
(cd asv_benchmarks && ../.venv/bin/asv check -E existing)
# The asv suite for real: every benchmark class once on one small combination, killed
# (exit 124) if still running after ARRAYSELECT_ASV_TIMEOUT seconds (default 600).
.venv/bin/python asv_benchmarks/ci_run.py
.venv/bin/python -m arrayselect bench --quick
exit "$matrix_status"
