#!/usr/bin/env bash
# The CI jobs, in ARRAYSELECT_MATRIX_LANES (default 2) concurrent lanes, after one shared
# artifact is built (the wheel, scripts/ci/build_wheel.sh, when a chosen job tests it):
# each job with a start line, its result line (scripts/ci/record.py), its wall time and
# its whole log; then the platform table docs/platform_matrix.inc
# (scripts/ci/render_matrix.py) and every job's time.
#
#   bash scripts/ci/matrix.sh [JOB ...]     default: every job in JOBS
#
# Run after scripts/ci/system_setup.sh (system packages) and scripts/_venv.sh (.venv):
# no job installs anything another job uses (each job's venvs, roots and downloads are
# its own, under ${ARRAYSELECT_CI_CACHE:-~/.cache/arrayselect-ci}), and jobs of one group
# never run at once (the sid root of the sid Pythons).
#
# Leaving a job out: ARRAYSELECT_SKIP_JOBS="qemu-s390x cross" (names, space- or
# comma-separated); its row then says "not run: opted out by ARRAYSELECT_SKIP_JOBS".
# Nothing else leaves a job out: on CI (CI=true) a job that cannot run fails
# (scripts/ci/_job.sh), and a job that exits non-zero or records nothing is recorded as
# failed here. Exit status: 1 if any job failed, after every job has run.
#
# Why lanes: the jobs are mostly single-core (one pytest process; qemu-user emulates one
# CPU per thread), so on CI's 2-core machine two at a time take about half the time of one
# after the other. Jobs start longest first (JOBS is in that order).
set -uo pipefail
cd "$(dirname "$0")/../.."
export ARRAYSELECT_MATRIX_DIR=${ARRAYSELECT_MATRIX_DIR:-$PWD/.ci-matrix}
export ARRAYSELECT_WHEEL_DIR=${ARRAYSELECT_WHEEL_DIR:-$ARRAYSELECT_MATRIX_DIR/wheel}
LOGS=$ARRAYSELECT_MATRIX_DIR/logs
mkdir -p "$LOGS"
LANES=${ARRAYSELECT_MATRIX_LANES:-2}
SCRIPTS=${ARRAYSELECT_MATRIX_SCRIPTS:-scripts/ci}
PY=${ARRAYSELECT_CI_PYTHON:-python3}  # for record.py and render_matrix.py (standard library)
# name | script and arguments | group | needs the wheel | table row: interpreter, CPU,
# dependency set ("-": no row). Longest first; cold and warm times are in
# docs/platforms.md. ARRAYSELECT_MATRIX_JOBS (the same lines) replaces the table: the
# tests of this script run fake jobs with it.
JOBS=(
  "main|job_main.sh|main|wheel|3.11|x86_64|pinned (scripts/constraints.txt)"
  "deps-newest|job_deps.sh newest|deps-newest|-|3.11|x86_64|newest"
  "qemu-aarch64|job_qemu.sh aarch64|qemu-aarch64|wheel|3.14|aarch64 (qemu)|Debian sid"
  "qemu-s390x|job_qemu.sh s390x|qemu-s390x|wheel|3.14|s390x (qemu)|Debian sid"
  "deps-oldest|job_deps.sh oldest|deps-oldest|-|3.11|x86_64|oldest"
  "python-3.13|job_python.sh 3.13|sid-root|-|3.13|x86_64|newest"
  "python-3.14|job_python.sh 3.14|sid-root|-|3.14|x86_64|newest"
  "python-3.12|job_python.sh 3.12|python-3.12|-|3.12|x86_64|newest"
  "cross|job_cross.sh|cross|-|-|-|-"
  "freethreaded|job_freethreaded.sh|freethreaded|-|3.13t|x86_64|newest"
  "checks|job_checks.sh|checks|-|-|-|-"
)
if [ -n "${ARRAYSELECT_MATRIX_JOBS:-}" ]; then
  mapfile -t JOBS <<< "$ARRAYSELECT_MATRIX_JOBS"
fi
skip_jobs=${ARRAYSELECT_SKIP_JOBS:-}
skip_jobs=" ${skip_jobs//,/ } "
wanted=" $* "
failed=()
total_start=$(date +%s)
queue=()
need_wheel=0
for entry in "${JOBS[@]}"; do
  IFS='|' read -r job cmd group wheel py cpu deps <<< "$entry"
  [ $# -eq 0 ] || [[ $wanted == *" $job "* ]] || continue
  if [[ $skip_jobs == *" $job "* ]]; then
    echo "matrix $job: not run: opted out by ARRAYSELECT_SKIP_JOBS"
    [ "$py" = - ] || "$PY" scripts/ci/record.py "$job" --python "$py" --cpu "$cpu" \
      --deps "$deps" --status opted-out --note "ARRAYSELECT_SKIP_JOBS" > /dev/null
    continue
  fi
  [ "$wheel" = wheel ] && need_wheel=1
  queue+=("$entry")
done

if [ "$need_wheel" = 1 ] && [ -z "${ARRAYSELECT_MATRIX_JOBS:-}" ]; then
  echo "matrix: building the wheel (scripts/ci/build_wheel.sh) at $(date -u +%H:%M:%S)"
  t0=$(date +%s)
  if ! bash scripts/ci/build_wheel.sh "$ARRAYSELECT_WHEEL_DIR"; then
    echo "matrix: the wheel did not build; the jobs that test it will fail" >&2
  fi
  echo "matrix: wheel step in $(($(date +%s) - t0)) s"
fi

declare -A running=()  # pid -> "job|group|start seconds|table row?"
declare -A took=()     # job -> seconds
busy_group() {         # is a job of group $1 running?
  local r
  for r in "${running[@]}"; do [[ $r == *"|$1|"* ]] && return 0; done
  return 1
}
finish() {             # reap one finished job: its line, its time, its log, its record
  local pid status job group t0 row rec
  wait -n -p pid "${!running[@]}"
  status=$?
  IFS='|' read -r job group t0 row <<< "${running[$pid]}"
  unset "running[$pid]"
  took[$job]=$(($(date +%s) - t0))
  echo "matrix $job: finished, exit status $status, in ${took[$job]} s; its log:"
  sed "s/^/  $job| /" "$LOGS/$job.log"
  rec=$ARRAYSELECT_MATRIX_DIR/$job.json
  if [ "$row" = row ]; then
    # a job that exits non-zero or records nothing is failed, whatever it said
    if [ "$status" -ne 0 ] && ! grep -qs '"status": "failed"' "$rec"; then
      IFS='|' read -r _ _ _ _ py cpu deps <<< "$(printf '%s\n' "${JOBS[@]}" | grep "^$job|")"
      "$PY" scripts/ci/record.py "$job" --python "$py" --cpu "$cpu" --deps "$deps" \
        --status failed --seconds "${took[$job]}" --note "exit status $status (its log above)"
    elif [ "$status" -eq 0 ] && ! compgen -G "$ARRAYSELECT_MATRIX_DIR/$job*.json" > /dev/null; then
      IFS='|' read -r _ _ _ _ py cpu deps <<< "$(printf '%s\n' "${JOBS[@]}" | grep "^$job|")"
      "$PY" scripts/ci/record.py "$job" --python "$py" --cpu "$cpu" --deps "$deps" \
        --status failed --seconds "${took[$job]}" --note "the job recorded no result"
      status=1
    fi
  fi
  [ "$status" -eq 0 ] || failed+=("$job")
}
while [ ${#queue[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
  started=0
  if [ ${#running[@]} -lt "$LANES" ]; then
    for i in "${!queue[@]}"; do
      IFS='|' read -r job cmd group wheel py cpu deps <<< "${queue[$i]}"
      busy_group "$group" && continue
      read -r -a argv <<< "$cmd"
      echo "matrix $job: starting ($cmd) at $(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg)"
      rm -f "$ARRAYSELECT_MATRIX_DIR/$job.json"
      ARRAYSELECT_JOB=$job bash "$SCRIPTS/${argv[0]}" "${argv[@]:1}" > "$LOGS/$job.log" 2>&1 < /dev/null &
      running[$!]="$job|$group|$(date +%s)|$([ "$py" = - ] && echo none || echo row)"
      unset "queue[$i]"
      queue=("${queue[@]}")
      started=1
      break
    done
  fi
  # a free lane and a job it may start: start it now; otherwise wait for one to end
  [ "$started" -eq 1 ] || finish
done
total=$(($(date +%s) - total_start))
echo "matrix: every job's wall time:"
for job in "${!took[@]}"; do echo "  ${took[$job]} s  $job"; done | sort -rn
echo "matrix: all jobs in $total s ($LANES lanes)"
[ -n "${ARRAYSELECT_MATRIX_JOBS:-}" ] || "$PY" scripts/ci/render_matrix.py
if [ ${#failed[@]} -gt 0 ]; then
  echo "matrix: failed: ${failed[*]}"
  exit 1
fi
