#!/usr/bin/env bash
# CI matrix job: arrayselect's suite on CPython VERSION (3.12, 3.13, 3.14).
#
#   bash scripts/ci/job_python.sh 3.14
#
# Where the interpreter comes from: Debian sid ships python3.13 and python3.14 (amd64, no
# emulation), so one minimal sid root with both is made with mmdebstrap (cached: the jobs
# of group sid-root, which never run at once, share it) and the job runs chrooted in it.
# No Debian suite ships 3.12: that job takes the machine's own python3.12 (pyenv's on our
# machines); where there is none, it cannot run (on CI: it fails, scripts/ci/_job.sh).
# The root, the venv and pip's cache stay under $CI_CACHE/python-VERSION (the root under
# $CI_CACHE/sid-root). In the venv: NumPy and the libraries with wheels for that Python
# (JAX, Dask, array-api-strict/extra, ml_dtypes). PyTorch is left out: on Python other
# than 3.11 PyPI's torch is a CUDA build of several GB (only 3.11's CPU file lies on this
# machine's disk). The package is built with ARRAYSELECT_REQUIRE_KERNEL=1, the suite runs
# with --junitxml, and scripts/ci/record.py writes the job's record.
source "$(dirname "$0")/_job.sh"
version=${1:?usage: job_python.sh VERSION (e.g. 3.14)}
repo=$REPO
job="python-$version"
job_init "$job" "$version" x86_64 newest
cache=$CI_CACHE/$job
mkdir -p "$cache"
record() { job_record "$@"; }  # record STATUS NOTE [JUNIT]

# Which tests, by the groups of tests/conftest.py: the whole suite but the tooling (docs,
# packaging, benchmarks, CI: the main job's), CuPy and the conformance runtimes, whose
# tools only the 3.11 job installs. PyTorch's tests skip themselves (no torch here).
tests=(tests -m "'not tooling and not cupy and not runtimes'")
# JAX as the 3.11 job has it (0.10.2, which has cp312-cp314 wheels): with jaxlib 0.11.2
# and 0.12.0.1 a select on float8_e3m4/e4m3/e5m2 loses NaN payloads
# (tests/test_jax_transforms.py), a newer-dependency finding rather than an interpreter's.
pkgs="numpy pytest hypothesis threadpoolctl flatbuffers build array-api-compat array-api-strict array-api-extra ml_dtypes jax==0.10.2 jaxlib==0.10.2 dask[array,distributed]"

# Where to run: "root" (the sid chroot, for the versions sid ships) or "host".
SID_PYTHONS="3.13 3.14"
root="$CI_CACHE/sid-root"
if [[ " $SID_PYTHONS " == *" $version "* ]]; then
  mode=root
  [ "$(id -u)" -eq 0 ] || job_cannot_run "needs root (chroot, mount) for the sid root"
  job_need mmdebstrap
else
  mode=host
  host_py=""
  # pyenv's own install first: its shim on PATH fails unless that version is selected
  for cand in "$HOME"/.pyenv/versions/"$version".*/bin/python"$version" "$(command -v "python$version" || true)"; do
    if [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c 'import ssl, venv' 2> /dev/null; then
      host_py=$cand; break
    fi
  done
  [ -n "$host_py" ] || job_cannot_run "no python$version on this machine (Debian sid does not ship it)"
fi

work=$(mktemp -d)
cleanup() {
  if [ "$mode" = root ]; then
    umount "$root/proc" 2>/dev/null || true
    umount "$root/work" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
copy_checkout "$work"

if [ "$mode" = root ]; then
  # One sid root with every sid Python the jobs ask for, made natively (amd64)
  packages="gcc,libc6-dev,ca-certificates"
  for v in $SID_PYTHONS; do packages+=",python$v,python$v-venv,python$v-dev"; done
  if [ "$(cat "$root/.packages" 2> /dev/null)" != "$packages" ]; then
    echo "making a Debian sid root with python $SID_PYTHONS (mmdebstrap)"
    t0=$SECONDS
    rm -rf "$root" "$root.part"
    mmdebstrap --quiet --variant=minbase --include="$packages" \
      --aptopt='Acquire::Check-Valid-Until "false"' sid "$root.part" "$DEBIAN_MIRROR"
    echo "$packages" > "$root.part/.packages"
    mv "$root.part" "$root"
    echo "made the root in $((SECONDS - t0)) s"
  fi
  # The host's CA bundle, for pip inside the root.
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  # pip's configuration (index, caps) as the host has it.
  if [ -d /etc/xdg/pip ]; then mkdir -p "$root/etc/xdg"; rm -rf "$root/etc/xdg/pip"; cp -r /etc/xdg/pip "$root/etc/xdg/pip"; fi
  [ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
  mkdir -p "$root/proc" "$root/work" "$cache/pip"
  mountpoint -q "$root/proc" && umount "$root/proc"
  mount -t proc proc "$root/proc"
  mount --bind "$work" "$root/work"
  mkdir -p "$root/pipcache"
  mountpoint -q "$root/pipcache" || mount --bind "$cache/pip" "$root/pipcache"
  run() { chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    PIP_CACHE_DIR=/pipcache ARRAYSELECT_REQUIRE_KERNEL=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    sh -c "cd /work && $1"; }
  venv=/venv-$version
  cleanup() {
    umount "$root/pipcache" 2>/dev/null || true
    umount "$root/proc" 2>/dev/null || true
    umount "$root/work" 2>/dev/null || true
    rm -rf "$work"
  }
  [ -x "$root$venv/bin/python" ] || run "python$version -m venv $venv"
else
  run() { (cd "$work" && env PIP_CACHE_DIR="$cache/pip" ARRAYSELECT_REQUIRE_KERNEL=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONPATH= sh -c "$1"); }
  venv="$cache/venv-$version-host"
  [ -x "$venv/bin/python" ] || "$host_py" -m venv "$venv"
fi

echo "job $job: CPython from $mode ($( [ "$mode" = root ] && echo 'Debian sid' || echo "$host_py")); installing"
run "$venv/bin/python -m pip install -q --upgrade pip setuptools wheel"
run "$venv/bin/python -m pip install -q --only-binary=:all: $(printf "'%s' " $pkgs)" \
  || { echo "job $job: a dependency has no wheel for $version"; record failed "pip install failed"; exit 1; }
run "$venv/bin/python -m pip install -q --no-deps --no-build-isolation ."
run "$venv/bin/python -c 'import arrayselect as a, sys; i = a.runtime_info(); assert i[\"kernel\"][\"built\"] and i[\"fastcall\"], i; print(sys.version)'"
echo "job $job: setup done at $((SECONDS - JOB_START)) s; pytest"

set +e
# The tests import the installed package (the checkout keeps it under src/, off sys.path).
run "$venv/bin/python -m pytest -q -p no:cacheprovider --junitxml=junit.xml ${tests[*]} > pytest.log 2>&1"
status=$?
# The log outlives the job's temporary copy, for a failure's details.
mkdir -p "$cache/logs"
cp "$work/pytest.log" "$cache/logs/$job-pytest.log" 2>/dev/null || true
tail -25 "$work/pytest.log"
echo "job $job: the whole pytest log is $cache/logs/$job-pytest.log"
set -e
echo "job $job: $((SECONDS - JOB_START)) s"
if grep -q 'failures="0"' "$work/junit.xml" 2>/dev/null && grep -q 'errors="0"' "$work/junit.xml" && [ "$status" -eq 0 ]; then
  record run "numpy, JAX 0.10.2, dask, array-api-strict/extra, ml_dtypes (newest but JAX); no torch (a CUDA build of several GB on this Python)" "$work/junit.xml"
else
  record failed "pytest failed" "$work/junit.xml"
  exit 1
fi
