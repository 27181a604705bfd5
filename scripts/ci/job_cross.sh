#!/usr/bin/env bash
# CI matrix job: scripts/cross_check.sh (the C extensions compiled for Windows, macOS and
# musl, the kernel's C harness run under Wine, qemu-aarch64 and natively on musl), one
# matrix record per platform: "compiled" (the Python package was not imported there; the
# note says what ran). Its tools come from scripts/ci/system_setup.sh and the dev extra;
# cross_check.sh fails, naming the one that is missing.
source "$(dirname "$0")/_job.sh"
cd "$REPO"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
record() { # job cpu status note
  JOB_NAME=cross-$1 JOB_CPU=$2 job_record "$3" "$4"
}
JOB_PYTHON=3.11 JOB_DEPS="C only"
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
