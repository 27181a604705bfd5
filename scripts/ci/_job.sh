# Sourced by every job script of scripts/ci/matrix.sh: how a job records its outcome and
# what it does when it cannot run.
#
#   job_init NAME PYTHON CPU DEPS    the job's row in the platform table
#   job_need COMMAND...              each command must exist, else job_cannot_run
#   job_cannot_run WHY               on CI (CI=true, which .ci/run sets): the job FAILS,
#                                    saying why; elsewhere it is recorded as not run
#   job_record STATUS NOTE [JUNIT]   the job's record (scripts/ci/record.py)
#
# A command that fails ends the job (set -e) with its own error output in the job's log;
# matrix.sh then records the job as failed if it had not recorded itself.
# No job installs system packages: scripts/ci/system_setup.sh installs them all, once,
# before any job runs.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CI_CACHE=${ARRAYSELECT_CI_CACHE:-$HOME/.cache/arrayselect-ci}
DEBIAN_MIRROR=${ARRAYSELECT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
JOB_START=$SECONDS
# the interpreter of record.py (standard library only): any python3
CI_PYTHON=${ARRAYSELECT_CI_PYTHON:-python3}

on_ci() { [ -n "${CI:-}" ] && [ "$CI" != false ] && [ "$CI" != 0 ]; }

job_init() {
  JOB_NAME=$1 JOB_PYTHON=$2 JOB_CPU=$3 JOB_DEPS=$4
  mkdir -p "$CI_CACHE"
}

job_record() { # STATUS NOTE [JUNIT]
  "$CI_PYTHON" "$REPO/scripts/ci/record.py" "$JOB_NAME" --python "$JOB_PYTHON" --cpu "$JOB_CPU" \
    --deps "$JOB_DEPS" --status "$1" --seconds "$((SECONDS - JOB_START))" --note "$2" \
    ${3:+--junit "$3"}
}

job_cannot_run() { # WHY
  if on_ci; then
    echo "job $JOB_NAME: FAILED: cannot run: $1" >&2
    job_record failed "cannot run: $1"
    exit 1
  fi
  echo "job $JOB_NAME: not run: $1"
  job_record skipped "$1"
  exit 0
}

job_need() { # COMMAND...
  local cmd
  for cmd in "$@"; do
    command -v "$cmd" > /dev/null \
      || job_cannot_run "$cmd is missing (bash scripts/ci/system_setup.sh installs it)"
  done
}

# The tracked and untracked-but-not-ignored files of the checkout, copied into DIR (the
# jobs build and test from such a copy, so that this checkout's build outputs stay out).
copy_checkout() { # DIR
  mkdir -p "$1"
  git -C "$REPO" ls-files -z --cached --others --exclude-standard \
    | (cd "$REPO" && tar -c --null -T - -f -) | tar -x -C "$1" -f -
}

# The newest orig tarball of a Debian source package the mirror's SUITE names, matching
# the extended regex VERSION_RE, downloaded once into $CI_CACHE/src; prints its path.
debian_source() { # PACKAGE SUITE VERSION_RE
  local pkg=$1 name url
  name=$(curl -fsS --max-time 120 "$DEBIAN_MIRROR/dists/$2/main/source/Sources.xz" | xz -dc \
    | { grep -oE "${pkg}_$3\.orig\.tar\.[a-z]+" || true; } | sort -uV | tail -1) || return 1
  [ -n "$name" ] || { echo "no ${pkg}_$3 orig tarball in $2's Sources at $DEBIAN_MIRROR" >&2; return 1; }
  url="$DEBIAN_MIRROR/pool/main/${pkg:0:1}/$pkg/$name"
  mkdir -p "$CI_CACHE/src"
  if [ ! -f "$CI_CACHE/src/$name" ]; then
    # explicit returns: set -e does not hold in a function called as `debian_source || ...`
    curl -fsS --max-time 900 -o "$CI_CACHE/src/$name.part" "$url" || return 1
    mv "$CI_CACHE/src/$name.part" "$CI_CACHE/src/$name" || return 1
  fi
  echo "$CI_CACHE/src/$name"
}
