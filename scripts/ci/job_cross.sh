#!/usr/bin/env bash
# CI matrix job: scripts/cross_check.sh (the C extensions compiled for Windows, macOS and
# musl, the kernel's C harness run under Wine, qemu-aarch64 and natively on musl), one
# matrix record per platform: "compiled" (the Python package was not imported there; the
# note says what ran). Skips, saying so, where apt-get is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
record() { # job cpu status note
  python3 scripts/ci/record.py "cross-$1" --python 3.11 --cpu "$2" --deps "C only" \
    --status "$3" --seconds "$(($(date +%s) - start))" --note "$4"
}
if [ "${ARRAYSELECT_CROSS_CHECK:-1}" = 0 ]; then
  echo "job_cross skipped: ARRAYSELECT_CROSS_CHECK=0"
  record all "windows, macos, musl" skipped "ARRAYSELECT_CROSS_CHECK=0"
  exit 0
fi
if ! command -v apt-get > /dev/null; then
  echo "job_cross skipped: scripts/cross_check.sh installs its tools with apt-get, which this machine lacks"
  record all "windows, macos, musl" skipped "no apt-get for mingw-w64, Wine, qemu-user-static"
  exit 0
fi
set +e
bash scripts/cross_check.sh 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# one line per platform from cross_check.sh: "NAME: ok — SUMMARY" or "NAME: FAILED (...)"
for entry in "windows (wine)|windows|x86_64 Windows (mingw-w64, Wine)" \
  "macos arm64|macos-arm64|arm64 macOS" "macos x86_64|macos-x86_64|x86_64 macOS" \
  "musl|musl|x86_64 musl"; do
  IFS='|' read -r name job cpu <<< "$entry"
  line=$(grep -m1 "^$name: " "$log" || true)
  case $line in
    "$name: ok"*) record "$job" "$cpu" compiled "C extensions only: ${line#"$name: ok — "}" ;;
    *) record "$job" "$cpu" failed "${line:-no result line}" ;;
  esac
done
exit "$status"
