#!/usr/bin/env bash
# CI matrix job: the package on another CPU, its pytest run under qemu-user: aarch64
# (little-endian, like x86-64 but another ISA and memory model) or s390x (big-endian).
#
#   bash scripts/ci/job_qemu.sh aarch64|s390x
#
# Only pytest runs under emulation. Everything else runs natively on this machine:
# * the root: a Debian sid root of the target architecture, extracted by mmdebstrap
#   (--variant=extract: the packages unpacked, no maintainer script run under qemu; the
#   few links and files those scripts would make are made below). sid's python3 (3.14)
#   with Debian's NumPy, pytest, hypothesis and ml_dtypes (PyPI has no s390x NumPy) and
#   Python's headers. Cached under $CI_CACHE/qemu-ARCH (made in about 10 s).
# * the package: the x86-64 wheel that matrix.sh built (scripts/ci/build_wheel.sh), its
#   three extensions compiled again by Debian's cross compiler (ARCH-linux-gnu-gcc)
#   against the root's headers (scripts/ci/cross_wheel.py), installed into the root's
#   site-packages by this machine's pip with the target's tags, beside the pure-Python
#   array-api-compat/-strict/-extra and build wheels from PyPI.
# The tests: those marked "platform" (tests/conftest.py: ASPECTS; the kernel, core,
# family, dtype, error, layout, fuzz and no-kernel tests) on NumPy and array-api-strict;
# ARRAYSELECT_QEMU_MARKS replaces the marker expression. Tests that compile C skip here (the root
# has no compiler: under emulation gcc took 1465 s for the kernel alone); the main job
# runs them, including the kernel compiled by the aarch64 cross compiler.
source "$(dirname "$0")/_job.sh"
ARCH=${1:?usage: job_qemu.sh aarch64|s390x}
case $ARCH in
  aarch64) DEBARCH=arm64 ;;
  s390x) DEBARCH=s390x ;;
  *) echo "job_qemu.sh: unknown CPU $ARCH" >&2; exit 2 ;;
esac
TRIPLET=$ARCH-linux-gnu
# qemu's default aarch64 CPU ("max") implements pointer authentication with the QARMA
# cipher, and Debian builds every arm64 binary with PAC instructions on each call: Python
# ran about 5x slower (import numpy, arrayselect, pytest, hypothesis: 10.97 s against
# 2.02 s as a Cortex-A72, which has no PAuth and takes those instructions as NOPs).
QEMU_CPU_MODEL=""
[ "$ARCH" = aarch64 ] && QEMU_CPU_MODEL=cortex-a72
job_init "qemu-$ARCH" 3.14 "$ARCH (qemu)" "Debian sid"
[ "$(id -u)" -eq 0 ] || job_cannot_run "needs root (chroot, mount)"
job_need mmdebstrap "$TRIPLET-gcc" "qemu-$ARCH-static"
grep -qx enabled "/proc/sys/fs/binfmt_misc/qemu-$ARCH" 2> /dev/null \
  || job_cannot_run "qemu-$ARCH is not registered with binfmt_misc (bash scripts/ci/system_setup.sh registers it)"
WHEEL=$(ls "${ARRAYSELECT_WHEEL_DIR:?set by matrix.sh}"/arrayselect-*manylinux*.whl 2> /dev/null | head -1)
[ -n "$WHEEL" ] || job_cannot_run "no x86-64 wheel in $ARRAYSELECT_WHEEL_DIR (scripts/ci/build_wheel.sh makes it)"

CACHE=$CI_CACHE/qemu-$ARCH
ROOT=$CACHE/root
log() { echo "job $JOB_NAME: $*"; }

# --- the root (cached) -------------------------------------------------------------
PACKAGES=base-files,base-passwd,dash,coreutils,python3,libpython3-dev,python3-numpy
PACKAGES+=,python3-pytest,python3-hypothesis,python3-ml-dtypes,python3-setuptools,python3-pip
if [ "$(cat "$ROOT/.packages" 2> /dev/null)" != "$PACKAGES" ]; then
  t0=$SECONDS
  rm -rf "$ROOT" "$ROOT.part"
  mkdir -p "$CACHE"
  mmdebstrap --quiet --variant=extract --arch="$DEBARCH" \
    --aptopt='Acquire::Check-Valid-Until "false"' --include="$PACKAGES" sid "$ROOT.part" \
    "$DEBIAN_MIRROR"
  # What the packages' maintainer scripts would have made: the BLAS/LAPACK links of
  # update-alternatives (NumPy loads libblas.so.3), the users and groups of base-passwd.
  for lib in "$ROOT.part/usr/lib/$TRIPLET"/{blas,lapack}/lib*.so.3; do
    ln -sf "$(basename "$(dirname "$lib")")/$(basename "$lib")" "$ROOT.part/usr/lib/$TRIPLET/"
  done
  cp "$ROOT.part/usr/share/base-passwd/passwd.master" "$ROOT.part/etc/passwd"
  cp "$ROOT.part/usr/share/base-passwd/group.master" "$ROOT.part/etc/group"
  echo "$PACKAGES" > "$ROOT.part/.packages"
  mv "$ROOT.part" "$ROOT"
  log "root extracted in $((SECONDS - t0)) s"
fi
# pip in the root (the sdist test) needs a CA bundle: this machine's, on every run
mkdir -p "$ROOT/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/"
PYVER=$(basename "$(ls -d "$ROOT"/usr/lib/python3.[0-9]* | sort -V | tail -1)")  # python3.14
JOB_PYTHON=${PYVER#python}

# --- the package, cross-built here ---------------------------------------------------
t0=$SECONDS
SITE=$ROOT/usr/local/lib/$PYVER/dist-packages
rm -rf "$SITE" "$CACHE/dist"
python3 "$REPO/scripts/ci/cross_wheel.py" --wheel "$WHEEL" --root "$ROOT" --cc "$TRIPLET-gcc" \
  --out "$CACHE/dist"
# The target's tags: pip refuses a wheel that is not for the interpreter it installs for.
# No pip configuration file: no machine-local find-links or constraints.
PIP_CONFIG_FILE=/dev/null python3 -m pip install -q --no-deps --only-binary=:all: \
  --target "$SITE" --platform "linux_$ARCH" --python-version "$JOB_PYTHON" \
  --implementation cp --abi "cp${JOB_PYTHON/./}" --root-user-action=ignore \
  "$CACHE"/dist/arrayselect-*.whl array-api-compat array-api-strict array-api-extra \
  build pyproject_hooks packaging
log "package cross-built and installed in $((SECONDS - t0)) s"

# --- the tests, under qemu -----------------------------------------------------------
cleanup() {
  mountpoint -q "$ROOT/proc" && umount "$ROOT/proc"
  return 0
}
trap cleanup EXIT
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
rm -rf "$ROOT/src"
copy_checkout "$ROOT/src"
in_root() {
  chroot "$ROOT" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    ${QEMU_CPU_MODEL:+QEMU_CPU=$QEMU_CPU_MODEL} "$@"
}
in_root python3 -c "import arrayselect as a; i = a.runtime_info(); \
assert i['kernel']['built'] and i['fastcall'], i; a.show_runtime()"
marks=${ARRAYSELECT_QEMU_MARKS:-platform}
t0=$SECONDS
set +e
# from /src, importing the installed package (the checkout keeps it under src/, off the path)
in_root sh -c "cd /src && python3 -m pytest -q -p no:cacheprovider --junitxml=/tmp/junit.xml \
  tests -m $(printf '%q' "$marks")"
status=$?
set -e
cp "$ROOT/tmp/junit.xml" "$CACHE/junit.xml"
log "pytest ran in $((SECONDS - t0)) s"
versions=$(in_root python3 -c "
import importlib.metadata as m, platform, sys
print(f'{platform.machine()}, {sys.byteorder}-endian; cross-built by $TRIPLET-gcc; ' + ', '.join(
    f'{n} {m.version(n)}' for n in ('numpy', 'ml_dtypes', 'array-api-strict')))")
if [ "$status" -eq 0 ]; then
  job_record run "$versions" "$CACHE/junit.xml"
else
  job_record failed "$versions" "$CACHE/junit.xml"
fi
exit "$status"
