#!/usr/bin/env bash
# The CI matrix: the job scripts in ARRAYSELECT_MATRIX_LANES (default 2) concurrent lanes,
# each job with a start line, its own result line (scripts/ci/record.py) and its wall time,
# then the table in docs/platform_matrix.inc (scripts/ci/render_matrix.py), which
# docs/platforms.md includes.
#
#   bash scripts/ci/matrix.sh [JOB ...]     default: every job below but those in
#                                           NOT_IN_CI, which are recorded as not run
#
# Why lanes: the jobs are single-core (one pytest process; qemu-user emulates one CPU per
# thread), so on CI's 2-core machine two at a time take about half the time of one after
# the other. A job's output goes to $ARRAYSELECT_MATRIX_DIR/logs/JOB.log and is printed
# whole when it finishes, so the output of concurrent jobs never interleaves. Jobs start
# longest first (the JOBS table is in that order) and a job waits while another of its
# group runs: a group shares something that cannot be used twice at once (the sid root
# with its /work mount; a build folder in this checkout).
#
# A job script that is missing is skipped with a line saying so (and a "skipped" cell);
# a job whose tooling cannot be installed skips itself, saying why. The main run (the
# suite on CPython 3.11, x86-64, pinned dependencies) is scripts/test.sh's own pytest,
# recorded there as the job "main" before this script runs. Exit status: 1 if any job
# failed, after every job has run and the table is written.
set -uo pipefail
cd "$(dirname "$0")/../.."
export ARRAYSELECT_MATRIX_DIR=${ARRAYSELECT_MATRIX_DIR:-$PWD/.ci-matrix}
LOGS=$ARRAYSELECT_MATRIX_DIR/logs
mkdir -p "$LOGS"
LANES=${ARRAYSELECT_MATRIX_LANES:-2}
# job name | script and its arguments | group | interpreter, CPU, dependency set (for a
# skip record). Longest first; warm caches, about (s): qemu ~400-600 each, deps ~450
# each, cross ~290, the three sid Pythons ~270 each (one group: ~810 in all), free-threaded
# ~75. The sid Pythons start after the deps jobs, so both lanes end at about the same time.
JOBS=(
  "qemu-aarch64|job_qemu.sh aarch64|qemu-aarch64|3.14|aarch64 (qemu)|Debian sid"
  "qemu-s390x|job_qemu.sh s390x|qemu-s390x|3.14|s390x (qemu)|Debian sid"
  "deps-oldest|job_deps.sh oldest|deps|3.11|x86_64|oldest"
  "deps-newest|job_deps.sh newest|deps|3.11|x86_64|newest"
  "cross|job_cross.sh|cross|3.11|windows, macos, musl|C only"
  "python-3.12|job_python.sh 3.12|sid-root|3.12|x86_64|newest"
  "python-3.13|job_python.sh 3.13|sid-root|3.13|x86_64|newest"
  "python-3.14|job_python.sh 3.14|sid-root|3.14|x86_64|newest"
  "freethreaded|job_freethreaded.sh|freethreaded|3.13t|x86_64|newest"
)
# Jobs that CI (this script without arguments) does not run yet, and why: none today. An
# entry [job]="reason" keeps a job out of CI (it still runs by name, bash
# scripts/ci/matrix.sh JOB) and its cell says the reason instead of a result.
declare -A NOT_IN_CI=()
wanted=" $* "
failed=()
total_start=$(date +%s)
queue=()
for entry in "${JOBS[@]}"; do
  IFS='|' read -r job cmd group py cpu deps <<< "$entry"
  [ $# -eq 0 ] || [[ $wanted == *" $job "* ]] || continue
  if [ $# -eq 0 ] && [ -n "${NOT_IN_CI[$job]:-}" ]; then
    echo "matrix $job: skipped: ${NOT_IN_CI[$job]}"
    python3 scripts/ci/record.py "$job" --python "$py" --cpu "$cpu" --deps "$deps" \
      --status skipped --note "${NOT_IN_CI[$job]}" > /dev/null
    continue
  fi
  read -r -a argv <<< "$cmd"
  if [ ! -f "scripts/ci/${argv[0]}" ]; then
    echo "matrix $job: skipped: scripts/ci/${argv[0]} is not in this checkout"
    python3 scripts/ci/record.py "$job" --python "$py" --cpu "$cpu" --deps "$deps" \
      --status skipped --note "scripts/ci/${argv[0]} is not in this checkout" > /dev/null
    continue
  fi
  queue+=("$entry")
done

declare -A running=()  # pid -> "job|group|start seconds"
busy_group() {         # is a job of group $1 running?
  local r
  for r in "${running[@]}"; do [[ $r == *"|$1|"* ]] && return 0; done
  return 1
}
finish() {             # reap one finished job: its line, its time, its log
  local pid status job group t0
  wait -n -p pid "${!running[@]}"
  status=$?
  IFS='|' read -r job group t0 <<< "${running[$pid]}"
  unset "running[$pid]"
  echo "matrix $job: finished, exit status $status, in $(($(date +%s) - t0)) s; its log:"
  sed "s/^/  $job| /" "$LOGS/$job.log"
  [ "$status" -eq 0 ] || failed+=("$job")
}
while [ ${#queue[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
  started=0
  if [ ${#running[@]} -lt "$LANES" ]; then
    for i in "${!queue[@]}"; do
      IFS='|' read -r job cmd group py cpu deps <<< "${queue[$i]}"
      busy_group "$group" && continue
      read -r -a argv <<< "$cmd"
      echo "matrix $job: starting ($cmd) at $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
      bash "scripts/ci/${argv[0]}" "${argv[@]:1}" > "$LOGS/$job.log" 2>&1 < /dev/null &
      running[$!]="$job|$group|$(date +%s)"
      unset "queue[$i]"
      queue=("${queue[@]}")
      started=1
      break
    done
  fi
  # a free lane and a job it may start: start it now; otherwise wait for one to end
  [ "$started" -eq 1 ] || finish
done
echo "matrix: all jobs in $(($(date +%s) - total_start)) s ($LANES lanes)"
python3 scripts/ci/render_matrix.py
if [ ${#failed[@]} -gt 0 ]; then
  echo "matrix: failed: ${failed[*]}"
  exit 1
fi
