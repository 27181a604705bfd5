"""Concurrency and caches: threads give serial results; every cache stays bounded.

* 8 threads x ~200 calls mixing shapes, dtypes, modes, errors and backends
  (NumPy, NumPy through the portable backend, PyTorch, JAX, array-api-strict,
  a little Dask) give exactly the results (or the exception classes) of the
  same calls made serially, and nothing else escapes.
* Every cache the library keeps (``arrayselect._base.caches.cache_sizes()``, every
  ``functools.lru_cache`` in an ``arrayselect`` module, every dict a backend
  object holds) stays within its bound after more distinct shapes and dtypes
  than the bound, also when 8 threads fill it at once.
* ``tracemalloc``: once the caches are full, thousands more distinct shapes do
  not grow the memory held.
"""

from __future__ import annotations

import gc
import sys
import threading
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from oracle import bits_equal
from xp_helpers import to_numpy

import arrayselect as asel
from arrayselect._base import caches as _caches
from arrayselect._dispatch import registry as _registry
from arrayselect._rules.shapes import make_plan

THREADS = 8
CALLS_PER_THREAD = 200

# --------------------------------------------------------------------------- libraries


def _libraries() -> dict[str, Callable[[np.ndarray], Any]]:
    """name -> converter from NumPy, for every installed library (CPU only)."""
    libs: dict[str, Callable[[np.ndarray], Any]] = {
        "numpy": lambda a: a,
        "numpy_portable": lambda a: a,
    }
    try:
        import torch

        libs["torch"] = lambda a: torch.from_numpy(np.array(a))
    except ImportError:
        pass
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        libs["jax"] = lambda a: jnp.asarray(a)
    except ImportError:
        pass
    try:
        import array_api_strict

        libs["array_api_strict"] = lambda a: array_api_strict.asarray(a)
    except ImportError:
        pass
    try:
        import dask.array as da

        libs["dask"] = lambda a: da.from_array(np.array(a), chunks=2)
    except ImportError:
        pass
    return libs


# --------------------------------------------------------------------------- call specs

MODES = [
    {},
    {"cond_broadcast": "multidirectional"},
    {"auto_broadcast": "none"},
    {"auto_broadcast": "pdpd"},
    {"auto_broadcast": "pdpd", "axis": 0},
]
DTYPES = ["float32", "float64", "int8", "uint16", "int64", "bool", "complex64"]


def _spec(rng: np.random.Generator, i: int, libs: list[str]) -> dict[str, Any]:
    """One call: library, NumPy inputs, options; about one in six is invalid."""
    lib = libs[i % len(libs)]
    if lib == "dask" and (i // len(libs)) % 5:
        lib = "numpy"  # Dask lightly: each call builds and computes a graph
    if lib == "jax" and (i // len(libs)) % 3:
        # JAX compiles once per shape and dtype: keep those few
        lib = "torch" if "torch" in libs else "numpy"
    opts = dict(MODES[int(rng.integers(len(MODES)))])
    dtype = np.dtype(DTYPES[int(rng.integers(len(DTYPES)))])
    n, m = int(rng.integers(0, 4)), int(rng.integers(1, 5))
    if lib == "jax":
        n, m = 2, 3
    then_shape = (n, m) if opts.get("auto_broadcast") != "pdpd" or n else (2, m)
    if opts.get("auto_broadcast") == "none":
        cond_shape, else_shape = then_shape, then_shape
    elif opts.get("auto_broadcast") == "pdpd":
        cond_shape = (then_shape[0],) if opts.get("axis") == 0 else (m,)
        else_shape = (then_shape[0], 1) if opts.get("axis") == 0 else (1,)
    else:
        cond_shape, else_shape = (m,), (1, m)
    if i % 6 == 5:
        cond_shape = (m + 1,)  # invalid everywhere: a SelectShapeError
    cond = rng.integers(0, 2, size=cond_shape).astype(bool)
    then = rng.integers(0, 100, size=then_shape).astype(dtype)
    else_: Any = rng.integers(0, 100, size=else_shape).astype(dtype)
    if i % 7 == 3 and dtype.kind in "iuf":
        else_ = 7  # a Python scalar that fits
    if i % 11 == 4:
        other = {"f": np.float64, "c": np.complex128}.get(dtype.kind, np.float32)
        other = np.float32 if other == dtype else other
        else_ = else_.astype(other) if isinstance(else_, np.ndarray) else 1j
    return {"lib": lib, "cond": cond, "then": then, "else": else_, "opts": opts}


def _run(spec: dict[str, Any], convert: Callable[[np.ndarray], Any]) -> Any:
    """(``"ok"``, NumPy result) or (``"error"``, exception class)."""
    args = [
        convert(v) if isinstance(v, np.ndarray) else v
        for v in (spec["cond"], spec["then"], spec["else"])
    ]
    try:
        if spec["lib"] == "numpy_portable":
            with asel.force_portable():  # a context variable: set it in this thread
                result = asel.select(*args, **spec["opts"])
        else:
            result = asel.select(*args, **spec["opts"])
    except asel.SelectError as exc:
        return ("error", type(exc))
    return ("ok", to_numpy(result))


def _same(a: Any, b: Any) -> bool:
    if a[0] != b[0]:
        return False
    return a[1] is b[1] if a[0] == "error" else bits_equal(a[1], b[1])


def test_threads_give_serial_results():
    libs = _libraries()
    rng = np.random.default_rng(2024)
    specs = [_spec(rng, i, sorted(libs)) for i in range(CALLS_PER_THREAD)]
    make_plan.cache_clear()  # the threads race on cache misses as well as hits
    serial = [_run(s, libs[s["lib"]]) for s in specs]
    assert {r[0] for r in serial} == {"ok", "error"}
    assert {s["lib"] for s in specs} == set(libs)
    make_plan.cache_clear()

    barrier = threading.Barrier(THREADS)
    results: dict[int, list[Any]] = {}
    failures: list[BaseException] = []

    def worker(t: int) -> None:
        order = np.random.default_rng(t).permutation(len(specs))
        try:
            barrier.wait()
            out = [None] * len(specs)
            for k in order:
                out[k] = _run(specs[k], libs[specs[k]["lib"]])
            results[t] = out
        except BaseException as exc:  # anything at all escaping is a failure
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not failures, failures[:3]
    assert len(results) == THREADS
    for t, out in results.items():
        for k, (got, want) in enumerate(zip(out, serial, strict=True)):
            assert _same(got, want), (t, k, specs[k]["lib"], specs[k]["opts"], got[0], want[0])


# --------------------------------------------------------------------------- caches


def _lru_caches() -> dict[str, Any]:
    """Every memoised function (``functools.lru_cache``'s interface) in an arrayselect module."""
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("arrayselect") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if not isinstance(value, type) and callable(getattr(value, "cache_parameters", None)):
                found[f"{name}.{attr}"] = value
    return found


def _backend_containers() -> dict[str, int]:
    """len() of every dict/list/set a created backend object holds."""
    sizes = {}
    for key, backend in list(_registry._backends.items()):
        for attr, value in vars(backend).items():
            if isinstance(value, (dict, list, set)):
                sizes[f"{key}.{attr}"] = len(value)
    return sizes


def _flood_shapes(
    start: int, count: int, *, portable: bool = False, shape_too: bool = True
) -> None:
    """``count`` calls, each with a shape never seen before (zero-size: no data)."""
    for k in range(start, start + count):
        cond, then = np.zeros((k, 0), bool), np.zeros((1, k, 0), np.float32)
        if portable:
            with asel.force_portable():
                asel.select(cond, then, 1.0)
        else:
            asel.select(cond, then, 1.0)
        if shape_too:
            asel.select_shape((k, None), (1, k), (), cond_broadcast="multidirectional")


def _bound() -> int:
    sizes = _caches.cache_sizes()
    assert "shapes.make_plan" in sizes, sizes
    return max(bound for _, bound in sizes.values())


def test_caches_are_registered_and_bounded():
    for name, func in _lru_caches().items():
        assert func.cache_parameters()["maxsize"] is not None, f"{name} is an unbounded cache"
    asel.select(np.array([True]), np.array([1.0]), 0.0)  # creates the NumPy backend
    sizes = _caches.cache_sizes()
    assert "dtypes.numpy_dtype_kind" in sizes, sizes
    for name, (size, bound) in sizes.items():
        assert 0 <= size <= bound, (name, size, bound)


def test_caches_stay_bounded_under_threads():
    bound = _bound()
    per_thread = bound // THREADS + 300  # together well over the bound
    failures: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            _flood_shapes(10_000 + t * per_thread, per_thread, portable=t % 2 == 1)
            # Distinct structured dtypes: refused, but their kinds are cached.
            for j in range(40):
                dtype = np.dtype([(f"f{t}_{j}", np.int8)])
                with pytest.raises(asel.SelectTypeError):
                    asel.select(np.array([True]), np.zeros(1, dtype), np.zeros(1, dtype))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not failures, failures[:3]
    for name, (size, cache_bound) in _caches.cache_sizes().items():
        assert size <= cache_bound, (name, size, cache_bound)
    assert _caches.cache_sizes()["dtypes.numpy_dtype_kind"][0] > 0
    for name, func in _lru_caches().items():
        info = func.cache_info()
        assert info.currsize <= info.maxsize, (name, info)
    assert 0 < make_plan.cache_info().currsize <= make_plan.cache_info().maxsize


def test_memory_does_not_grow_with_distinct_shapes():
    bound = _bound()
    gc.collect()
    # Trace from before the caches fill: tracemalloc counts only what it saw
    # allocated, so entries evicted later must have been traced too.
    tracemalloc.start()
    try:
        # Fill every shape-keyed cache to its bound, twice over, so that the
        # caches' own tables are reallocated under tracing too.
        _flood_shapes(100_000, 2 * bound, shape_too=False)
        _flood_shapes(200_000, 200, portable=True, shape_too=False)
        containers_before = _backend_containers()
        registry_before = (len(_registry._backends), len(_registry.fast_paths))
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        # As many new shapes again: a bounded cache empties when full, so each one whose
        # bound divides 2 * bound holds as many entries as at `before` (the NumPy
        # signature cache keeps about 1 KB per signature, 1 MiB when full).
        _flood_shapes(300_000, 2 * bound, shape_too=False)
        _flood_shapes(400_000, 200, portable=True, shape_too=False)
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grown = after - before
    # 2 * bound + 200 unbounded plans alone would hold ~6 MiB; bounded caches only
    # replace their entries (allowance: one reallocated cache table, and the 200
    # portable plans the shared plan cache holds more than at `before`).
    assert grown < 512 * 1024, f"memory grew by {grown} bytes over {2 * bound + 200} new shapes"
    for name, size in _backend_containers().items():
        assert size <= max(containers_before.get(name, 0), 256), (name, size)
    # The backend registry and the fast-path table are per library, not per shape.
    assert (len(_registry._backends), len(_registry.fast_paths)) == registry_before
    for name, (size, cache_bound) in _caches.cache_sizes().items():
        assert size <= cache_bound, (name, size, cache_bound)
