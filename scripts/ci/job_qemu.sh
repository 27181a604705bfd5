#!/usr/bin/env bash
# CI matrix job: the real package, its C extensions built, tested on another CPU under
# qemu-user: aarch64 (little-endian, like x86-64 but another ISA and memory model) or
# s390x (big-endian).
#
#   bash scripts/ci/job_qemu.sh aarch64|s390x
#
# How: a Debian sid root for that architecture (mmdebstrap; sid's Release file may be past
# its Valid-Until date, hence Acquire::Check-Valid-Until "false"), run through binfmt_misc
# and qemu-user-static (root needed: mounting, chroot). sid's own python3 (3.14) with
# Debian's python3-numpy, -pytest, -hypothesis and -ml-dtypes (PyPI has no s390x NumPy);
# the pure-Python array-api-compat/-strict/-extra are wheels downloaded here on the host
# (the host's pip and CA bundle; the bundle is copied into the root too, for pip there).
# The package is built and installed inside the root by its own gcc (pip, no build
# isolation, Debian's setuptools): no cross toolchain to keep in step. Every gcc run goes
# through ccache, whose store stays in the cached root, so only C files changed since the
# last run compile under emulation. Measured (s390x, load 1.5-3): 100 s with ccache cold,
# 46 s warm. aarch64 is far slower cold: gcc -O3 vectorizes for NEON, and sk_family.c
# alone took 408 s, sk_loops.c 12 min, the whole build 1465 s (load 3-4.5).
#
# Tests: ARRAYSELECT_QEMU_TESTS (default below) - the kernel, core, family, fuzz and
# no-kernel tests on NumPy and array-api-strict. The root and the wheels are cached under
# ${ARRAYSELECT_CI_CACHE:-~/.cache/arrayselect-ci}/qemu (the first run builds the root:
# arm64 663 s at load 1.5-3, s390x 1640 s at load ~10; later runs reuse it). Skips
# (saying why) without apt-get or root.
set -euo pipefail
cd "$(dirname "$0")/../.."
SRC=$PWD
ARCH=${1:?usage: job_qemu.sh aarch64|s390x}
case $ARCH in
  aarch64) DEBARCH=arm64 ;;
  s390x) DEBARCH=s390x ;;
  *) echo "job_qemu.sh: unknown CPU $ARCH" >&2; exit 2 ;;
esac
CACHE=${ARRAYSELECT_CI_CACHE:-$HOME/.cache/arrayselect-ci}/qemu
ROOT=$CACHE/root-$DEBARCH
JUNIT=$CACHE/junit-$ARCH.xml
start=$(date +%s)
PYVER=?
record() {
  python3 scripts/ci/record.py "qemu-$ARCH" --python "$PYVER" --cpu "$ARCH (qemu)" \
    --deps "Debian sid" --seconds "$(($(date +%s) - start))" "$@"
}
skip() {
  echo "job_qemu $ARCH skipped: $*"
  record --status skipped --note "$*"
  exit 0
}
log() { echo "job_qemu $ARCH: $*"; }

# --- tools: mmdebstrap, qemu-user-static, binfmt_misc ------------------------------
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  sudo -n true 2> /dev/null || skip "needs root (binfmt_misc, chroot) and sudo is not available"
  SUDO="sudo -n"
fi
command -v apt-get > /dev/null || skip "installs mmdebstrap and qemu-user-static with apt-get, which this machine lacks"
need=()
command -v mmdebstrap > /dev/null || need+=(mmdebstrap)
command -v "qemu-$ARCH-static" > /dev/null || need+=(qemu-user-static)
command -v update-binfmts > /dev/null || need+=(binfmt-support)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  # the matrix runs jobs two at a time, and others install with apt too: wait for dpkg's
  # lock rather than fail on it
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${need[@]}" > /dev/null || skip "apt-get could not install ${need[*]}"
fi
if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
  $SUDO mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
    skip "cannot mount binfmt_misc (a container without the privilege?)"
fi
[ -e "/proc/sys/fs/binfmt_misc/qemu-$ARCH" ] || $SUDO update-binfmts --enable "qemu-$ARCH" ||
  skip "cannot register qemu-$ARCH with binfmt_misc"

# --- the root (cached) -------------------------------------------------------------
PACKAGES=python3,python3-dev,python3-pip,python3-setuptools,python3-numpy
PACKAGES+=,python3-pytest,python3-hypothesis,python3-ml-dtypes,gcc,libc6-dev,ca-certificates
# ccache: gcc under emulation is the slow part (measured: 1102 s for the three extensions
# on s390x at load 11, 100 s at load 2); the root keeps ccache's store, so a run whose C
# code did not change compiles nothing
if [ "$(cat "$ROOT/.packages" 2> /dev/null)" != "$PACKAGES,ccache" ]; then
  t0=$(date +%s)
  $SUDO rm -rf "$ROOT" "$ROOT.part"
  mkdir -p "$CACHE"
  $SUDO mmdebstrap --quiet --variant=minbase --arch="$DEBARCH" \
    --aptopt='Acquire::Check-Valid-Until "false"' --include="$PACKAGES,ccache" sid "$ROOT.part" ||
    skip "mmdebstrap could not build a $DEBARCH sid root (mirror unreachable?)"
  echo "$PACKAGES,ccache" | $SUDO tee "$ROOT.part/.packages" > /dev/null
  $SUDO mv "$ROOT.part" "$ROOT"
  log "root built in $(($(date +%s) - t0)) s"
fi
$SUDO cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/ca-certificates.crt"
PYVER=$($SUDO chroot "$ROOT" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# pure-Python wheels the root's Debian lacks, fetched by the host's pip (cached; under a
# lock, as matrix.sh may run both qemu jobs at once): the array API libraries, and `build`
# for tests/test_no_kernel.py's sdist test
WHEELS=$CACHE/wheels
PURE="array-api-compat array-api-strict array-api-extra build pyproject_hooks"
mkdir -p "$CACHE"
(
  flock 9
  if ! ls "$WHEELS"/array_api_extra-*.whl "$WHEELS"/build-*.whl "$WHEELS"/pyproject_hooks-*.whl \
    > /dev/null 2>&1; then
    # shellcheck disable=SC2086
    PIP_CONFIG_FILE=/dev/null python3 -m pip download -q --no-deps --only-binary=:all: \
      -d "$WHEELS" $PURE
  fi
) 9> "$CACHE/wheels.lock" || skip "pip could not download $PURE"

# --- the package, built inside the root ----------------------------------------------
cleanup() {
  for m in dev/shm proc; do
    mountpoint -q "$ROOT/$m" && $SUDO umount "$ROOT/$m"
  done
  return 0
}
trap cleanup EXIT
mountpoint -q "$ROOT/proc" || $SUDO mount -t proc proc "$ROOT/proc"
$SUDO mkdir -p "$ROOT/dev/shm"
mountpoint -q "$ROOT/dev/shm" || $SUDO mount -t tmpfs shm "$ROOT/dev/shm"
$SUDO rm -rf "$ROOT/src" "$ROOT/wheels"
$SUDO mkdir -p "$ROOT/src"
git ls-files -co --exclude-standard -z | $SUDO tar -c --null -T - -f - | $SUDO tar -x -C "$ROOT/src" -f -
$SUDO cp -r "$WHEELS" "$ROOT/wheels"
t0=$(date +%s)
# /usr/lib/ccache first on PATH: every gcc/cc run in the root goes through ccache, the
# package's build and the tests' own one-file compiles (on aarch64,
# test_compiles_for_aarch64_and_with_clang_without_warnings compiles every kernel file
# with -O3 -Werror by the root's aarch64-linux-gnu-gcc: as slow as the build when cold)
in_root() {
  $SUDO chroot "$ROOT" env -i PATH=/usr/lib/ccache:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 CCACHE_DIR=/var/cache/ccache "$@"
}
# shellcheck disable=SC2086
in_root python3 -m pip install -q --break-system-packages --root-user-action=ignore \
  --no-index --find-links /wheels $PURE
if ! in_root sh -c 'cd /src && ARRAYSELECT_REQUIRE_KERNEL=1 python3 -m pip install -q \
  --no-warn-script-location --break-system-packages --root-user-action=ignore \
  --no-build-isolation --no-deps --force-reinstall .'; then
  record --status failed --note "the package did not build on $ARCH"
  exit 1
fi
# setuptools' build folder would shadow the `build` package for tests run from /src
$SUDO rm -rf "$ROOT/src/build"
in_root python3 -c "import arrayselect as a; i = a.runtime_info(); \
assert i['kernel']['built'] and i['fastcall'], i"
log "package built and installed in $(($(date +%s) - t0)) s"

# --- the tests -----------------------------------------------------------------------
# kernel (every file of it: tests/test_kernel*.py too, where they exist), core, family,
# fuzz and no-kernel tests; patterns, expanded in the checkout
DEFAULT_TESTS="tests/test_numpy_kernel.py tests/test_numpy_kernel_family.py \
tests/test_numpy_kernel_pool.py tests/test_numpy_kernel_cpu.py tests/test_kernel*.py \
tests/test_where.py tests/test_select_family*.py tests/test_family*.py tests/test_layout.py \
tests/test_dtypes.py tests/test_bad_input.py tests/test_plan_dims.py tests/test_fuzz.py \
tests/test_no_kernel.py"
read -r -a patterns <<< "${ARRAYSELECT_QEMU_TESTS:-$DEFAULT_TESTS}"
tests=()
for p in "${patterns[@]}"; do
  while IFS= read -r f; do tests+=("$f"); done < <(compgen -G "$p" || true)
done
# Left out: the kernel built again with SK_NO_DISPATCH (x86-64's dispatch switched off).
# Off x86-64 that macro changes nothing (sk_loops_base.h: "SK_NO_DISPATCH ||
# !x86_64"), so it is this job's own build again: one multi-source gcc run that ccache
# cannot cache, 342 s of emulated gcc on s390x. The main job runs it on x86-64.
tests+=(--deselect tests/test_numpy_kernel_cpu.py::test_builds_and_runs_with_dispatch_disabled)
t0=$(date +%s)
set +e
# from /src/tests' parent, but importing the installed package (no src/arrayselect on
# the path: the repository keeps it under src/)
in_root sh -c "cd /src && python3 -m pytest -q -p no:cacheprovider --junitxml=/tmp/junit.xml $(printf '%q ' "${tests[@]}")"
status=$?
set -e
$SUDO cp "$ROOT/tmp/junit.xml" "$JUNIT" 2> /dev/null || true
log "pytest ran in $(($(date +%s) - t0)) s"
versions=$(in_root python3 -c "
import importlib.metadata as m, platform, sys
print(f'{platform.machine()}, {sys.byteorder}-endian; ' + ', '.join(
    f'{n} {m.version(n)}' for n in ('numpy', 'ml_dtypes', 'array-api-strict')))")
if [ "$status" -eq 0 ]; then
  record --status run --junit "$JUNIT" --note "$versions"
else
  record --status failed --junit "$JUNIT" --note "$versions"
fi
exit "$status"
