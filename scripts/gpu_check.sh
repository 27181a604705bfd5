#!/usr/bin/env bash
# GPU check: on a machine with an NVIDIA GPU and NO network, where cupy, jax[cuda],
# numpy and pytest are preinstalled but this package is not:
#   1. install arrayselect offline (wheels in .whl/ first, e.g. array-api-compat;
#      fill it beforehand with `python -m pip download --no-deps -d .whl array-api-compat`),
#   2. run the CuPy and JAX parts of the test suite (pytest -k "cupy or jax"),
#   3. run the GPU benchmarks (asv_benchmarks/gpu_bench.py),
#   4. print one results table.
# Usage: bash scripts/gpu_check.sh        PYTHON=/path/to/python to pick the interpreter,
#        GPU_CHECK_OUT=dir to keep junit.xml, pytest.txt, bench.json, bench.txt there.
# Exit status: 0 when the tests pass and the benchmarks ran on a GPU.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
OUT=${GPU_CHECK_OUT:-$(mktemp -d)}
mkdir -p "$OUT"
echo "== arrayselect GPU check: $($PY --version 2>&1), results in $OUT"
nvidia-smi -L 2>/dev/null || echo "(nvidia-smi not found)"

# 1. install, offline
if compgen -G ".whl/*.whl" > /dev/null; then
  $PY -m pip install -q --no-index --no-deps .whl/*.whl \
    || echo "warning: the wheels in .whl/ did not install"
fi
if ! $PY -m pip install -q --no-index --no-build-isolation --no-deps -e . ; then
  echo "pip could not install the package offline: using a copied tree on PYTHONPATH"
  rm -rf "$OUT/pkg" && mkdir -p "$OUT/pkg"
  cp -r src/arrayselect "$OUT/pkg/arrayselect"
  cp -r backends "$OUT/pkg/arrayselect/backends"
  export PYTHONPATH="$OUT/pkg${PYTHONPATH:+:$PYTHONPATH}"
fi
if ! $PY -c "import arrayselect, array_api_compat; print('arrayselect', arrayselect.__version__, 'from', arrayselect.__file__)"; then
  echo "arrayselect (or array-api-compat) is not importable: put its wheel in .whl/" >&2
  exit 1
fi

# 2. tests (collection errors in modules needing absent extras must not stop the rest)
$PY -m pytest -q -p no:cacheprovider --continue-on-collection-errors -rs \
  --junitxml="$OUT/junit.xml" tests -k "cupy or jax" > "$OUT/pytest.txt" 2>&1
test_rc=$?
tail -n 60 "$OUT/pytest.txt"

# 3. benchmarks
$PY asv_benchmarks/gpu_bench.py --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
bench_rc=$?
[ "$bench_rc" -le 2 ] || tail -n 30 "$OUT/bench.txt"

# 4. one table
jax_backend=$($PY -c "import jax; print(jax.default_backend())" 2>/dev/null || echo "not installed")
$PY scripts/gpu_report.py --junit "$OUT/junit.xml" --bench "$OUT/bench.json" \
  --test-rc "$test_rc" --bench-rc "$bench_rc" --jax-backend "$jax_backend"
