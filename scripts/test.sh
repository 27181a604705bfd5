#!/usr/bin/env bash
# Set everything up, then run the whole test suite, mypy and ruff, build the
# docs; then check that the asv benchmark suite imports and is well formed
# (against this environment), run each of its benchmark classes once
# (asv_benchmarks/ci_run.py), and check that the quick benchmark comparison runs and
# matches NumPy; then the cross-platform check of the C code
# (scripts/cross_check.sh: Windows under Wine, macOS, aarch64 under qemu, musl; a
# few minutes, with tools from Debian's apt and PyPI). Where apt-get is missing it
# is skipped with a line saying so; ARRAYSELECT_CROSS_CHECK=0 skips it anyway.
# conformance: OpenVINO, ONNX Runtime and PaddlePaddle for tests/test_conformance_runtimes.py
# (measured: +47 s of install and ~1 GB in .venv, ~5 s of tests).
# cuda-check: CuPy and NVRTC, so that tests/test_cupy_kernels.py compiles every CUDA
# kernel variant (no GPU needed).
ARRAYSELECT_EXTRAS=test,dev,conformance,cuda-check
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
.venv/bin/ruff check src backends tests asv_benchmarks
DOCS_DOCTESTS=0 bash scripts/docs.sh
(cd asv_benchmarks && ../.venv/bin/asv check -E existing)
# The asv suite for real: every benchmark class once on one small combination, killed
# (exit 124) if still running after ARRAYSELECT_ASV_TIMEOUT seconds (default 600).
.venv/bin/python asv_benchmarks/ci_run.py
.venv/bin/python -m arrayselect bench --quick
if [ "${ARRAYSELECT_CROSS_CHECK:-1}" = 0 ]; then
  echo "cross check skipped: ARRAYSELECT_CROSS_CHECK=0"
elif ! command -v apt-get > /dev/null; then
  echo "cross check skipped: it installs its tools with apt-get, which this machine lacks"
else
  bash scripts/cross_check.sh
fi
