#!/usr/bin/env bash
# CI matrix job: arrayselect on a free-threaded CPython (built with --disable-gil).
#
# No Debian package is free-threaded and python.org is out of reach, so CPython is built
# from Debian's source tarball: the newest 3.14 that sid's Sources name and the pool
# serves, else trixie's 3.13 (scripts/ci/_job.sh: debian_source). The built interpreter
# and pip's cache stay under $CI_CACHE/freethreaded, so only the first
# run pays for the build (about 4-8 minutes on 2 cores). Then: a venv, NumPy's cp31Xt
# wheel, arrayselect built with ARRAYSELECT_REQUIRE_KERNEL=1, a check that the GIL stays
# off after every extension is imported, the NumPy parts of the suite and the
# free-threading stress test; scripts/ci/record.py writes the job's record.
#
# Exit status: 0 when the tests pass, else non-zero (scripts/ci/_job.sh: on CI a job
# that cannot run fails).
source "$(dirname "$0")/_job.sh"
repo=$REPO
job=freethreaded
job_init "$job" 3.13t x86_64 newest
cache=$CI_CACHE/$job
mkdir -p "$cache"
record() { JOB_PYTHON=$2; job_record "$1" "$3" ${4:+"$4"}; }  # record STATUS VERSION NOTE [JUNIT]
job_need curl xz make gcc

# The newest CPython 3.14 source sid names, else trixie's 3.13.
tarball=$(debian_source python3.14 sid '3\.14\.[0-9]+' || debian_source python3.13 trixie '3\.13\.[0-9]+')
name=${tarball##*/}
full=${name#*_}; full=${full%.orig.tar.*}  # e.g. 3.13.5
minor=${full%.*}                             # e.g. 3.13
version="${minor}t"
prefix="$cache/cpython-${full}t"
py="$prefix/bin/python${minor}t"

if [ ! -x "$py" ] || ! "$py" -c 'import ssl, sys; assert not sys._is_gil_enabled()' 2> /dev/null; then
  echo "building free-threaded CPython $full from $name"
  t0=$SECONDS
  build=$(mktemp -d)
  tar -xf "$tarball" -C "$build" --strip-components=1
  rm -rf "$prefix"
  (cd "$build" && ./configure --disable-gil --prefix="$prefix" --without-ensurepip \
      --disable-test-modules > "$build/configure.log" 2>&1 \
    && make -j"$(nproc)" > "$build/make.log" 2>&1 \
    && make install > "$build/install.log" 2>&1) \
    || { tail -40 "$build"/*.log; rm -rf "$build" "$prefix"; echo "job $job: CPython build failed"; record failed "$version" "CPython $full build failed"; exit 1; }
  rm -rf "$build"
  "$py" -m ensurepip > /dev/null 2>&1 || true
  echo "built CPython ${full}t in $((SECONDS - t0)) s"
fi
"$py" -c 'import sys; assert not sys._is_gil_enabled(), "not a free-threaded build"; print(sys.version)'

venv="$cache/venv-${full}t"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
export PIP_CACHE_DIR="$cache/pip"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip setuptools
# NumPy publishes free-threaded (cp313t, cp314t) wheels; the test suite's other needs.
"$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: \
  numpy pytest hypothesis array-api-compat array-api-strict
"$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: ml_dtypes array-api-extra 2>/dev/null \
  || echo "ml_dtypes / array-api-extra: no wheel for ${version}; tests that need them skip"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Build from a copy of the checkout, so the host's build outputs (3.11 .so files) stay out.
copy_checkout "$work"
(cd "$work" && ARRAYSELECT_REQUIRE_KERNEL=1 "$venv/bin/python" -m pip install -q \
  --disable-pip-version-check --no-deps --no-build-isolation .)

# A first look: arrayselect imported and a select made, the GIL still off (the suite's
# test_extensions_keep_gil_off imports every compiled module of the package).
(cd /tmp && "$venv/bin/python" -c '
import sys
import numpy as np
import arrayselect
assert arrayselect.select(np.array([True, False]), np.array([1, 1]), 2).tolist() == [1, 2]
assert not sys._is_gil_enabled(), "an extension turned the GIL back on"
print("GIL off after importing arrayselect:", sys.version)
')

junit="$work/junit.xml"
# The tests marked "threads" (tests/conftest.py: ASPECTS; the stress test among them), on
# NumPy: the other libraries have no free-threaded wheels here. Run from the copy,
# against the installed package.
set +e
(cd "$work" && PYTHONPATH= "$venv/bin/python" -m pytest -q -p no:cacheprovider \
  -o addopts="" --junitxml="$junit" -k "numpy or free_threading or not (jax or torch or dask or cupy or strict)" \
  tests -m threads)
status=$?
set -e
# Throughput of 8 threads of small calls, without the GIL and with it (PYTHON_GIL=1),
# on this interpreter; a figure for the log (2 cores: at most about 2x), not a test.
throughput() {
  (cd /tmp && env "$@" "$venv/bin/python" - <<'PY'
import sys, threading, time
import numpy as np
import arrayselect as asel
cond = np.array([True, False] * 4)
a = np.arange(8.0)
b = -a
which = np.arange(8) % 3
def work(n):
    out = np.empty(8)
    for _ in range(n):
        asel.select(cond, a, b)
        asel.where(cond, a, 1.5)
        asel.select_n(which, a, b, a, out=out)
work(500)
n, threads = 3000, 8
ths = [threading.Thread(target=work, args=(n,)) for _ in range(threads)]
t = time.perf_counter()
for th in ths:
    th.start()
for th in ths:
    th.join()
dt = time.perf_counter() - t
print(f"throughput: {threads} threads x {3 * n} calls (select, where, select_n out=, 8 elements): "
      f"{3 * n * threads / dt:,.0f} calls/s with the GIL {'on' if sys._is_gil_enabled() else 'off'}")
PY
  )
}
if [ "$status" -eq 0 ] && [ "${ARRAYSELECT_FT_MEASURE:-1}" != 0 ]; then
  throughput PYTHON_GIL=0 || true
  throughput PYTHON_GIL=1 || true
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
echo "job $job: pytest exit $status, $((SECONDS - JOB_START)) s"
if [ "$status" -eq 0 ]; then
  record run "$version" "NumPy parts + free-threading stress test; CPython ${full}t from Debian's source" "$junit"
else
  record failed "$version" "pytest exit $status" "$junit"
  exit 1
fi
