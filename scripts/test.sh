#!/usr/bin/env bash
# The README's test command, and CI's (.ci/run): set everything up, then run every job.
#
#   bash scripts/test.sh [JOB ...]      default: every job of scripts/ci/matrix.sh
#
# 1. scripts/ci/system_setup.sh: every system package any job needs, once, serially
#    (root and apt-get; on CI a failure here fails the run).
# 2. scripts/_venv.sh: .venv with the package (editable) and every extra the jobs use.
# 3. scripts/ci/matrix.sh: the wheel built and repaired (manylinux_2_28), then the jobs two
#    at a time: main (the whole suite against the installed wheel, CPython 3.11), checks
#    (mypy, ruff, the docs, the asv suite, `bench --quick`), the oldest and newest
#    dependency sets, CPython 3.12-3.14 and a free-threaded 3.13t, aarch64 and s390x under
#    qemu, the C code cross-compiled for Windows, macOS and musl. It writes the platform
#    table docs/platform_matrix.inc.
# ARRAYSELECT_SKIP_JOBS="job ..." leaves jobs out, and their rows say so. The exit status is
# non-zero if the setup or any job failed.
# conformance (extra): OpenVINO, ONNX Runtime and PaddlePaddle for
# tests/test_conformance_runtimes.py (about 1 GB in .venv). cuda-check: CuPy and NVRTC, so
# that tests/test_cupy_kernels.py compiles every CUDA kernel variant (no GPU needed).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/ci/system_setup.sh
ARRAYSELECT_EXTRAS=test,dev,docs,conformance,cuda-check
t0=$SECONDS
source scripts/_venv.sh
echo "test.sh: .venv ready in $((SECONDS - t0)) s"
export ARRAYSELECT_MATRIX_DIR=${ARRAYSELECT_MATRIX_DIR:-$PWD/.ci-matrix}
rm -rf "$ARRAYSELECT_MATRIX_DIR"
status=0
bash scripts/ci/matrix.sh "$@" || status=$?
echo "test.sh: everything in $((SECONDS - start)) s, exit status $status"
exit "$status"
