#!/usr/bin/env bash
# The one setup step: every system package that any CI job needs, installed once and
# serially before any job starts, and qemu-user registered with binfmt_misc. No job script
# installs system packages (tests/test_ci_matrix.py checks it); a job that finds a tool
# missing fails on CI and is recorded as not run elsewhere (scripts/ci/_job.sh).
#
#   bash scripts/ci/system_setup.sh          install what is missing (Debian/Ubuntu, root)
#   bash scripts/ci/system_setup.sh --list   print the packages, one per line
#
# apt: the package lists are updated once; every apt-get waits for dpkg's lock
# (DPkg::Lock::Timeout) and a failed command (a transient mirror error, another apt
# holding the lists' lock, which DPkg::Lock::Timeout does not cover) is tried again, up to
# three times, its own error output printed each time. On CI (CI=true, which .ci/run sets)
# anything that cannot be installed ends this script with that output and exit status 1;
# elsewhere (no root, no apt-get) it says what it did not install and ends with 0, and the
# jobs that need it are recorded as not run.
set -euo pipefail
cd "$(dirname "$0")/../.."

# package -> what needs it
declare -A PACKAGES=(
  [mmdebstrap]="the Debian roots: qemu-aarch64, qemu-s390x (foreign, extracted) and python-3.13/3.14 (sid amd64)"
  [arch-test]="mmdebstrap's check that the machine runs a foreign architecture (qemu jobs)"
  [qemu-user-static]="running aarch64 and s390x programs: the qemu jobs' pytest, the cross job's aarch64 harness"
  [binfmt-support]="registering qemu-user with binfmt_misc (update-binfmts)"
  [gcc-aarch64-linux-gnu]="cross-building the aarch64 extensions (qemu-aarch64) and the aarch64 compile test (main)"
  [gcc-s390x-linux-gnu]="cross-building the s390x extensions (qemu-s390x)"
  # the cross compilers' C libraries: only recommended by the compilers, which
  # --no-install-recommends leaves out
  [libc6-dev-arm64-cross]="the aarch64 cross compiler's C library and headers"
  [libc6-dev-s390x-cross]="the s390x cross compiler's C library and headers"
  [gcc-mingw-w64-x86-64]="compiling the extensions and the harness for Windows (cross)"
  [wine64]="running the Windows harness (cross)"
  [clang]="the kernel compiled by Clang without warnings (main: tests/test_numpy_kernel_cpu.py)"
  [curl]="fetching CPython's source from Debian's pool (freethreaded, cross)"
  [xz-utils]="unpacking Debian's indexes and source tarballs"
  [make]="building the free-threaded CPython (freethreaded)"
  [libssl-dev]="the free-threaded CPython's ssl module (pip needs it)"
  [libffi-dev]="the free-threaded CPython's ctypes"
  [zlib1g-dev]="the free-threaded CPython's zlib (pip needs it)"
  [libbz2-dev]="the free-threaded CPython's bz2"
  [liblzma-dev]="the free-threaded CPython's lzma"
)
if [ "${1:-}" = --list ]; then
  printf '%s\n' "${!PACKAGES[@]}" | sort
  exit 0
fi

on_ci() { [ -n "${CI:-}" ] && [ "${CI}" != false ] && [ "${CI}" != 0 ]; }
cannot() { # WHY: fail on CI, say so and go on elsewhere
  if on_ci; then
    echo "system setup: FAILED: $1" >&2
    exit 1
  fi
  echo "system setup: not done: $1 (outside CI: the jobs that need it are recorded as not run)"
  exit 0
}
start=$SECONDS

# apt-get with dpkg's lock waited for, and three tries: each failure's output is printed.
apt() {
  local try out
  for try in 1 2 3; do
    if out=$(DEBIAN_FRONTEND=noninteractive $SUDO apt-get -q -y -o DPkg::Lock::Timeout=600 \
      -o Acquire::Retries=3 "$@" 2>&1); then
      return 0
    fi
    echo "system setup: \`apt-get $*\` failed (try $try of 3):" >&2
    echo "$out" | tail -25 | sed 's/^/    /' >&2
    [ "$try" -eq 3 ] || sleep $((try * ${ARRAYSELECT_APT_RETRY_SECONDS:-15}))
  done
  return 1
}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if sudo -n true 2> /dev/null; then SUDO="sudo -n"; else cannot "not root and no password-less sudo"; fi
fi

missing=()
for pkg in $(printf '%s\n' "${!PACKAGES[@]}" | sort); do
  dpkg-query -W -f='${Status}' "$pkg" 2> /dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get > /dev/null || cannot "apt-get is missing; needed: ${missing[*]}"
  echo "system setup: installing ${missing[*]}"
  installed() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" {print $2}' | sort; }
  before=$(installed || true)
  apt update || cannot "apt-get update failed (its output is above)"
  apt install --no-install-recommends "${missing[@]}" \
    || cannot "apt-get install ${missing[*]} failed (its output is above)"
  # what this step installed, with the dependencies apt pulled in: what
  # scripts/ci/fresh_machine.sh purges to make the machine look new again
  record=${ARRAYSELECT_SETUP_RECORD:-/var/lib/arrayselect-ci/installed}
  $SUDO mkdir -p "$(dirname "$record")"
  comm -13 <(echo "$before") <(installed || true) | $SUDO tee -a "$record" > /dev/null
else
  echo "system setup: every system package is installed"
fi

# Each compiler compiles and links a C file against its C library: a missing library is
# found here, not in a job (the cross compilers only recommend theirs).
probe=$(mktemp -d)
printf '#include <stdio.h>\n#include <pthread.h>\nint main(void) { return puts(""); }\n' \
  > "$probe/probe.c"
for cc in aarch64-linux-gnu-gcc s390x-linux-gnu-gcc x86_64-w64-mingw32-gcc clang; do
  # (an output file, not /dev/null: the mingw linker seeks in it)
  "$cc" "$probe/probe.c" -o "$probe/probe" 2> "$probe/log" \
    || { cat "$probe/log" >&2; cannot "$cc cannot compile and link a C file (its output is above)"; }
done
rm -rf "$probe"

# qemu-user through binfmt_misc: the kernel runs foreign binaries in the roots with it
if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
  $SUDO mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc \
    || cannot "mount -t binfmt_misc failed (a container without the privilege?)"
fi
for arch in aarch64 s390x; do
  if [ ! -e "/proc/sys/fs/binfmt_misc/qemu-$arch" ]; then
    $SUDO update-binfmts --enable "qemu-$arch" || cannot "update-binfmts --enable qemu-$arch failed"
  fi
  grep -qx enabled "/proc/sys/fs/binfmt_misc/qemu-$arch" \
    || cannot "qemu-$arch is registered with binfmt_misc but not enabled"
done
echo "system setup: done in $((SECONDS - start)) s"
