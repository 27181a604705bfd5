#!/usr/bin/env bash
# GPU check: on a machine with an NVIDIA GPU and NO network, where cupy, jax[cuda],
# numpy and pytest are preinstalled but this package is not:
#   1. install the carried wheels (.whl/: array-api-compat, array-api-strict,
#      array-api-extra, dask, partd, locket; setuptools only as a build fallback)
#      into a private folder on PYTHONPATH, and this package (built offline, no
#      build isolation; with the carried setuptools if the machine's is too old for
#      pyproject.toml; as a copied source tree, without C extensions, if that fails too),
#   2. print the machine (nvidia-smi, versions) and run the GPU benchmarks
#      (asv_benchmarks/gpu_bench.py),
#   3. run the CuPy and JAX parts of the test suite (pytest -k "cupy or jax", the
#      select family included; pytest-xdist workers where it is installed), under a
#      time limit, every failure reported (no -x), JUnit XML kept,
#   4. print one results table (scripts/gpu_report.py).
# Fill .whl/ beforehand, where pip has a network, for the machine's Python, e.g.
#   python -m pip download --only-binary=:all: --python-version 3.12 \
#     --platform manylinux2014_x86_64 --no-deps -d .whl array-api-compat array-api-strict \
#     array-api-extra dask partd locket setuptools
# Usage: bash scripts/gpu_check.sh        PYTHON=/path/to/python picks the interpreter,
#        GPU_CHECK_OUT=dir keeps install.txt, bench.json, bench.txt, junit.xml,
#        junit-serial.xml, pytest.txt, report.txt, gpu_results.json there; GPU_CHECK_TEST_TIMEOUT (seconds, 300) bounds
#        pytest; GPU_CHECK_WORKERS (8) is pytest-xdist's -n.
# Exit status: 0 when the tests pass and the benchmarks ran on a GPU.
# Without a GPU it still runs: the GPU tests skip, and the report says NOT MEASURED.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
OUT=${GPU_CHECK_OUT:-$(mktemp -d)}
WORK=$(mktemp -d)  # private site folder and fallbacks: never under $OUT
mkdir -p "$OUT"
echo "== arrayselect GPU check: $($PY --version 2>&1), results in $OUT"
nvidia-smi -L 2>/dev/null || echo "(nvidia-smi not found)"

# 1. install, offline
{
  if compgen -G ".whl/*.whl" > /dev/null; then
    wheels=$(ls .whl/*.whl | grep -v '/setuptools-' || true)
    if [ -n "$wheels" ]; then
      # shellcheck disable=SC2086  # one argument per wheel
      $PY -m pip install -q --no-index --no-deps --no-compile --target "$WORK/site" $wheels \
        || echo "warning: the wheels in .whl/ did not install"
      export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
    fi
  fi
  install() { $PY -m pip install -q --no-index --no-build-isolation --no-deps . ; }
  if install; then
    echo "installed with the machine's setuptools"
  elif compgen -G ".whl/setuptools-*.whl" > /dev/null \
      && $PY -m pip install -q --no-index --no-deps --target "$WORK/build-tools" .whl/setuptools-*.whl \
      && PYTHONPATH="$WORK/build-tools:$PYTHONPATH" install; then
    echo "installed with the carried setuptools"
  else
    echo "pip could not install the package offline: using a copied tree on PYTHONPATH"
    mkdir -p "$WORK/pkg"
    cp -r src/arrayselect "$WORK/pkg/arrayselect"
    cp -r backends "$WORK/pkg/arrayselect/backends"
    export PYTHONPATH="$WORK/pkg:$PYTHONPATH"
  fi
} > "$OUT/install.txt" 2>&1
cat "$OUT/install.txt"
rm -rf build  # setuptools' build tree: not needed after the install
if ! (cd "$WORK" && $PY -c "import arrayselect, array_api_compat; print('arrayselect', arrayselect.__version__, 'from', arrayselect.__file__)"); then
  echo "arrayselect (or array-api-compat) is not importable: put its wheel in .whl/" >&2
  exit 1
fi
# JAX takes 75% of the GPU's memory at its first array unless told not to: CuPy, and
# the other pytest workers, need theirs.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
export PYTHONUNBUFFERED=1

# 2. benchmarks (first: they are short, and they are what the targets are judged on)
$PY asv_benchmarks/gpu_bench.py --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
bench_rc=$?
[ "$bench_rc" -eq 0 ] || [ "$bench_rc" -eq 2 ] || tail -n 30 "$OUT/bench.txt"

# 3. tests (collection errors in modules needing absent extras must not stop the rest).
# pytest-xdist needs every worker to collect the same test ids: tests whose ids hold
# an object's address ("<object object at 0x...>") differ between processes, so they
# run in a second, single-process pytest.
limit=${GPU_CHECK_TEST_TIMEOUT:-300}
run_pytest() {  # run_pytest JUNIT SECONDS ARGS...: SIGINT at the limit, so pytest still
  local junit=$1 seconds=$2  # writes its summary and JUnit XML
  shift 2
  timeout -s INT -k 30 "$seconds" $PY -m pytest -q -p no:cacheprovider \
    --continue-on-collection-errors -rfEs --junitxml="$junit" "$@"
}
start=$(date +%s)
if $PY -c "import xdist" 2>/dev/null; then
  run_pytest "$OUT/junit.xml" "$limit" -n "${GPU_CHECK_WORKERS:-8}" tests \
    -k "(cupy or jax) and not object" > "$OUT/pytest.txt" 2>&1
  test_rc=$?
  left=$((limit - ($(date +%s) - start)))
  [ "$left" -gt 30 ] || left=30
  run_pytest "$OUT/junit-serial.xml" "$left" tests -k "(cupy or jax) and object" \
    >> "$OUT/pytest.txt" 2>&1
  rc2=$?
  [ "$rc2" -eq 0 ] || [ "$rc2" -eq 5 ] || test_rc=$rc2  # 5: no test selected
else
  run_pytest "$OUT/junit.xml" "$limit" tests -k "cupy or jax" > "$OUT/pytest.txt" 2>&1
  test_rc=$?
fi
[ "$test_rc" -ne 124 ] || echo "pytest ran past GPU_CHECK_TEST_TIMEOUT and was stopped" >> "$OUT/pytest.txt"
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.txt" | tail -n 40

# 4. one table
jax_backend=$($PY -c "import jax; print(jax.default_backend())" 2>/dev/null || echo "not installed")
junits=(--junit "$OUT/junit.xml")
[ ! -f "$OUT/junit-serial.xml" ] || junits+=(--junit "$OUT/junit-serial.xml")
$PY scripts/gpu_report.py "${junits[@]}" --bench "$OUT/bench.json" \
  --test-rc "$test_rc" --bench-rc "$bench_rc" --jax-backend "$jax_backend" \
  --save "$OUT/gpu_results.json" | tee "$OUT/report.txt"
# docs/_data/gpu_results.json is a copy of gpu_results.json from a run on a GPU.
