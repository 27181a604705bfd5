#!/usr/bin/env bash
# Make this machine look new to CI, prove it, and run CI on a clean clone, cold.
#
#   bash scripts/ci/fresh_machine.sh [--purge-only | --warm]
#
# 1. Purges what CI's scripts installed or made: every Debian package that
#    scripts/ci/system_setup.sh installed (it wrote their names, and the dependencies
#    apt pulled in with them, to /var/lib/arrayselect-ci/installed), apt's downloaded
#    .deb files, qemu-user's binfmt_misc entries, $ARRAYSELECT_CI_CACHE
#    (~/.cache/arrayselect-ci: the Debian roots, the venvs of the jobs, the built
#    CPython, the source tarballs), pip's cache.
# 2. Checks that they are gone: no such package installed, no cache folder, no binfmt
#    entry; it stops with an error if anything is left.
# 3. Clones this repository's HEAD into a temporary folder (no .venv, no build outputs),
#    runs `CI=true bash .ci/run` there, and prints the total and each job's time.
# --warm skips 1 and 2: the same run with everything installed and cached (the warm
# figure). Needs root. The log of the run is kept in $TMPDIR/arrayselect-fresh-*.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "fresh_machine.sh: needs root (it purges packages)" >&2; exit 1; }
REPO=$PWD
CI_CACHE=${ARRAYSELECT_CI_CACHE:-$HOME/.cache/arrayselect-ci}
INSTALLED=/var/lib/arrayselect-ci/installed
PIP_CACHE=$(python3 -m pip cache dir 2> /dev/null || echo "$HOME/.cache/pip")

# --- 1. purge ------------------------------------------------------------------------
purge() {
  if [ -s "$INSTALLED" ]; then
    mapfile -t pkgs < <(sort -u "$INSTALLED")
    present=()
    for p in "${pkgs[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" && present+=("$p")
    done
    if [ ${#present[@]} -gt 0 ]; then
      echo "fresh_machine: purging ${#present[@]} packages"
      DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${present[@]}" > /dev/null
    fi
  fi
  apt-get clean  # the downloaded .deb files too: a new machine downloads them
  for arch in aarch64 s390x; do
    [ -e "/proc/sys/fs/binfmt_misc/qemu-$arch" ] && echo -1 > "/proc/sys/fs/binfmt_misc/qemu-$arch"
  done
  # the roots hold mounts while a job runs; none may be left
  if grep -q " $CI_CACHE/" /proc/mounts; then
    grep " $CI_CACHE/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount
  fi
  rm -rf "$CI_CACHE" "$PIP_CACHE"
}

# --- 2. check ------------------------------------------------------------------------
check() {
  left=()
  if [ -s "$INSTALLED" ]; then
    while read -r p; do
      dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" && left+=("package $p")
    done < <(sort -u "$INSTALLED")
  fi
  for tool in mmdebstrap qemu-aarch64-static aarch64-linux-gnu-gcc s390x-linux-gnu-gcc \
    x86_64-w64-mingw32-gcc wine64 arch-test; do
    command -v "$tool" > /dev/null && left+=("command $tool")
  done
  for arch in aarch64 s390x; do
    [ -e "/proc/sys/fs/binfmt_misc/qemu-$arch" ] && left+=("binfmt entry qemu-$arch")
  done
  [ -e "$CI_CACHE" ] && left+=("$CI_CACHE")
  [ -e "$PIP_CACHE" ] && left+=("$PIP_CACHE")
  if [ ${#left[@]} -gt 0 ]; then
    printf 'fresh_machine: still here: %s\n' "${left[@]}" >&2
    exit 1
  fi
  echo "fresh_machine: purged and checked: no CI package, binfmt entry, cache or root left"
}

if [ "${1:-}" = --warm ]; then
  echo "fresh_machine: --warm: nothing purged"
else
  purge
  check
fi
[ "${1:-}" != --purge-only ] || exit 0

# --- 3. CI on a clean clone ----------------------------------------------------------
clone=$(mktemp -d)
log=${TMPDIR:-/tmp}/arrayselect-fresh-$(date -u +%Y%m%dT%H%M%S).log
git clone -q "$REPO" "$clone/arrayselect"
echo "fresh_machine: CI=true bash .ci/run in $clone/arrayselect (commit $(git -C "$clone/arrayselect" rev-parse --short HEAD)), log $log"
echo "fresh_machine: CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
start=$SECONDS
set +e
(cd "$clone/arrayselect" && CI=true bash .ci/run) > "$log" 2>&1
status=$?
set -e
total=$((SECONDS - start))
echo "fresh_machine: .ci/run exit status $status in $total s ($((total / 60)) min $((total % 60)) s)"
# the steps' times, each job's result line (printed inside its log) and time
grep -E "^system setup: done|^test.sh: .venv ready|^matrix: wheel step|^  [a-z0-9._-]+\| matrix [a-z0-9._-]+: (run|failed|compiled|skipped|opted-out) " "$log" \
  | sed -E 's/^  [a-z0-9._-]+\| //' || true
sed -n '/^matrix: every job/,/^matrix: all jobs/p' "$log"
cp "$clone/arrayselect/docs/platform_matrix.inc" "${log%.log}.platform_matrix.inc" 2> /dev/null || true
rm -rf "$clone"
exit "$status"
