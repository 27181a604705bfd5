#!/usr/bin/env bash
# The CI matrix: every job script in turn, each with a start line, its own result line
# (scripts/ci/record.py) and its wall time, then the table in docs/platform_matrix.inc
# (scripts/ci/render_matrix.py), which docs/platforms.md includes.
#
#   bash scripts/ci/matrix.sh [JOB ...]     default: every job below but those in
#                                           NOT_IN_CI, which are recorded as not run
#
# A job script that is missing is skipped with a line saying so (and a "skipped" cell);
# a job whose tooling cannot be installed skips itself, saying why. The main run (the
# suite on CPython 3.11, x86-64, pinned dependencies) is scripts/test.sh's own pytest,
# recorded there as the job "main" before this script runs. Exit status: 1 if any job
# failed, after every job has run and the table is written.
set -uo pipefail
cd "$(dirname "$0")/../.."
export ARRAYSELECT_MATRIX_DIR=${ARRAYSELECT_MATRIX_DIR:-$PWD/.ci-matrix}
mkdir -p "$ARRAYSELECT_MATRIX_DIR"
# job name | script and its arguments | interpreter, CPU, dependency set (for a skip record)
JOBS=(
  "python-3.12|job_python.sh 3.12|3.12|x86_64|newest"
  "python-3.13|job_python.sh 3.13|3.13|x86_64|newest"
  "python-3.14|job_python.sh 3.14|3.14|x86_64|newest"
  "freethreaded|job_freethreaded.sh|3.13t|x86_64|newest"
  "deps-oldest|job_deps.sh oldest|3.11|x86_64|oldest"
  "deps-newest|job_deps.sh newest|3.11|x86_64|newest"
  "qemu-aarch64|job_qemu.sh aarch64|3.14|aarch64 (qemu)|Debian sid"
  "qemu-s390x|job_qemu.sh s390x|3.14|s390x (qemu)|Debian sid"
  "cross|job_cross.sh|3.11|windows, macos, musl|C only"
)
# Jobs that CI (this script without arguments) does not run yet, and why; each still runs
# by name (bash scripts/ci/matrix.sh qemu-s390x). Their cells say so instead of a result.
declare -A NOT_IN_CI=(
  [deps-oldest]="not run by CI yet: the suite still fails on the SPEC 0 minimums (torch 2.6, JAX 0.5, array-api-strict 2.3); run it with bash scripts/ci/matrix.sh deps-oldest"
  [deps-newest]="not run by CI yet: its last run (torch 2.15.0) had 4 failures, fixed since but not rerun as a whole; run it with bash scripts/ci/matrix.sh deps-newest"
  [qemu-aarch64]="not run by CI yet: its emulated root and build do not fit CI's time; run it with bash scripts/ci/matrix.sh qemu-aarch64"
  [qemu-s390x]="not run by CI yet: emulated build and tests take about 40 min; run it with bash scripts/ci/matrix.sh qemu-s390x"
)
wanted=" $* "
failed=()
total_start=$(date +%s)
for entry in "${JOBS[@]}"; do
  IFS='|' read -r job cmd py cpu deps <<< "$entry"
  [ $# -eq 0 ] || [[ $wanted == *" $job "* ]] || continue
  if [ $# -eq 0 ] && [ -n "${NOT_IN_CI[$job]:-}" ]; then
    echo "matrix $job: skipped: ${NOT_IN_CI[$job]}"
    python3 scripts/ci/record.py "$job" --python "$py" --cpu "$cpu" --deps "$deps" \
      --status skipped --note "${NOT_IN_CI[$job]}" > /dev/null
    continue
  fi
  read -r -a argv <<< "$cmd"
  script=scripts/ci/${argv[0]}
  if [ ! -f "$script" ]; then
    echo "matrix $job: skipped: $script is not in this checkout"
    python3 scripts/ci/record.py "$job" --python "$py" --cpu "$cpu" --deps "$deps" \
      --status skipped --note "$script is not in this checkout" > /dev/null
    continue
  fi
  echo "matrix $job: starting ($cmd) at $(date -u +%H:%M:%S)"
  t0=$(date +%s)
  bash "$script" "${argv[@]:1}"
  status=$?
  echo "matrix $job: finished, exit status $status, in $(($(date +%s) - t0)) s"
  [ "$status" -eq 0 ] || failed+=("$job")
done
echo "matrix: all jobs in $(($(date +%s) - total_start)) s"
python3 scripts/ci/render_matrix.py
if [ ${#failed[@]} -gt 0 ]; then
  echo "matrix: failed: ${failed[*]}"
  exit 1
fi
