#!/usr/bin/env bash
# CI matrix job: arrayselect's suite on CPython VERSION (3.12, 3.13, 3.14, ...).
#
#   bash scripts/ci/job_python.sh 3.14
#
# Where the interpreter comes from: Debian sid ships python3.13 and python3.14 (amd64, no
# emulation), so a minimal sid root is made with mmdebstrap and the job runs chrooted in it;
# no Debian suite ships 3.12, so for a version sid lacks the job takes the machine's own
# python3.X (pyenv's, where the machine image has one) and otherwise is skipped, saying why.
# The root, the venv and pip's cache stay under ${ARRAYSELECT_CI_CACHE:-$HOME/.cache/arrayselect-ci}.
# In the venv: NumPy and the libraries with wheels for that Python (JAX, Dask,
# array-api-strict/extra, ml_dtypes). PyTorch is left out: on Python other than 3.11 PyPI's
# torch is a CUDA build of several GB (only 3.11's CPU file lies on this machine's disk).
# The package is built with ARRAYSELECT_REQUIRE_KERNEL=1, the suite runs with --junitxml,
# and scripts/ci/record.py writes the job's record.
#
# Exit status: 0 when the tests pass or the job is skipped (it says why), else non-zero.
set -euo pipefail
start=$SECONDS
version=${1:?usage: job_python.sh VERSION (e.g. 3.14)}
repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=${ARRAYSELECT_CI_CACHE:-$HOME/.cache/arrayselect-ci}
mirror=${ARRAYSELECT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
job="python-$version"
mkdir -p "$cache"

record() {  # record STATUS NOTE [JUNIT]
  python3 "$repo/scripts/ci/record.py" "$job" --python "$version" --cpu x86_64 --deps newest \
    --status "$1" --seconds "$((SECONDS - start))" --note "$2" ${3:+--junit "$3"}
}
skip() { echo "job $job skipped: $1"; record skipped "$1"; exit 0; }

# Which tests: the whole suite but the parts needing what this venv lacks or what is
# another job's (torch and CuPy; the docs, packaging and conformance runtimes, whose
# tools only the 3.11 job installs).
tests=(tests --ignore=tests/test_docs.py --ignore=tests/test_doc_links.py
  --ignore=tests/test_packaging.py --ignore=tests/test_conformance_runtimes.py
  --ignore=tests/test_asv_suite.py --ignore=tests/test_bench.py
  --ignore=tests/test_cupy_backend.py --ignore=tests/test_cupy_kernels.py
  --ignore=tests/test_cupy_backend_emulated.py --ignore=tests/test_examples.py
  --ignore=tests/test_scale_out_example.py)
# JAX as the 3.11 job has it (0.10.2, which has cp312-cp314 wheels): with jaxlib 0.11.2
# and 0.12.0.1 a select on float8_e3m4/e4m3/e5m2 loses NaN payloads
# (tests/test_jax_transforms.py), a newer-dependency finding rather than an interpreter's.
pkgs="numpy pytest hypothesis threadpoolctl flatbuffers build array-api-compat array-api-strict array-api-extra ml_dtypes jax==0.10.2 jaxlib==0.10.2 dask[array,distributed]"

# Where to run: "root" (a sid chroot) or "host" (the machine's python3.X).
mode=""
root="$cache/sid-root"
install_mmdebstrap() {  # a fresh machine's apt knows no package before an update
  command -v apt-get > /dev/null || return 1
  apt-get install -y -q mmdebstrap > /dev/null 2>&1 \
    || { apt-get update -q > /dev/null 2>&1 && apt-get install -y -q mmdebstrap > /dev/null 2>&1; }
}
if command -v mmdebstrap > /dev/null || install_mmdebstrap; then
  if [ -x "$root/usr/bin/python$version" ]; then
    mode=root
  else
    # Not `curl | grep -q`: under pipefail, grep's early exit fails curl with SIGPIPE.
    sid_pkgs=$(curl -fsS --max-time 60 "$mirror/dists/sid/main/binary-amd64/Packages.xz" 2>/dev/null \
      | xz -dc 2>/dev/null | grep -x "Package: python$version-venv" || true)
    [ -z "$sid_pkgs" ] || mode=root
  fi
fi
if [ -z "$mode" ]; then
  # pyenv's own install first: its shim on PATH fails unless that version is selected
  for cand in "$HOME"/.pyenv/versions/"$version".*/bin/python"$version" "$(command -v "python$version" || true)"; do
    if [ -n "$cand" ] && [ -x "$cand" ] && "$cand" -c 'import ssl, venv' 2> /dev/null; then
      host_py=$cand; mode=host; break
    fi
  done
fi
[ -n "$mode" ] || skip "no CPython $version: Debian sid does not ship it and this machine has no python$version"

work=$(mktemp -d)
cleanup() {
  if [ "$mode" = root ]; then
    umount "$root/proc" 2>/dev/null || true
    umount "$root/work" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
git -C "$repo" ls-files -z --cached --others --exclude-standard \
  | (cd "$repo" && xargs -0 cp --parents -t "$work" 2>/dev/null) || true

if [ "$mode" = root ]; then
  # One sid root holds every sid Python the jobs ask for: a new version is added with apt.
  if [ ! -x "$root/usr/bin/python$version" ]; then
    if [ ! -d "$root/usr" ]; then
      echo "making a Debian sid root with python$version (mmdebstrap)"
      t0=$SECONDS
      rm -rf "$root.part"
      mmdebstrap --quiet --variant=minbase \
        --include="python$version,python$version-venv,python$version-dev,gcc,libc6-dev,ca-certificates,git" \
        --aptopt='Acquire::Check-Valid-Until "false"' sid "$root.part" "$mirror" > /dev/null
      mv "$root.part" "$root"
      echo "made the root in $((SECONDS - t0)) s"
    else
      echo "adding python$version to the sid root"
      cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
      chroot "$root" sh -c "apt-get -o Acquire::Check-Valid-Until=false update -q > /dev/null && \
        apt-get install -y -q python$version python$version-venv python$version-dev > /dev/null"
    fi
  fi
  # The host's CA bundle, for pip inside the root.
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  # pip's configuration (index, caps) as the host has it.
  if [ -d /etc/xdg/pip ]; then mkdir -p "$root/etc/xdg"; rm -rf "$root/etc/xdg/pip"; cp -r /etc/xdg/pip "$root/etc/xdg/pip"; fi
  [ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
  mkdir -p "$root/proc" "$root/work" "$cache/pip"
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
echo "job $job: setup done at $((SECONDS - start)) s; pytest"

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
echo "job $job: $((SECONDS - start)) s"
if grep -q 'failures="0"' "$work/junit.xml" 2>/dev/null && grep -q 'errors="0"' "$work/junit.xml" && [ "$status" -eq 0 ]; then
  record run "numpy, JAX 0.10.2, dask, array-api-strict/extra, ml_dtypes (newest but JAX); no torch (a CUDA build of several GB on this Python)" "$work/junit.xml"
else
  record failed "pytest failed" "$work/junit.xml"
  exit 1
fi
