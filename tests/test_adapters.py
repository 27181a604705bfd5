"""``arrayselect.adapters``: every present library and device, bit for bit, and what is missing."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from oracle import bits_equal
from xp_helpers import run_without

from arrayselect import adapters

FOUND = adapters.discover()
PRESENT = pytest.mark.parametrize("lib", FOUND.present, ids=lambda a: a.key)


def _awkward(name: str) -> np.ndarray:
    """Eight values of dtype ``name`` with every byte pattern the bits allow (NaN payloads...)."""
    dtype = adapters.numpy_dtype(name)
    if dtype.kind == "b":
        return np.array([True, False, True, True, False, False, True, False])
    raw = np.random.default_rng(7).integers(0, 256, size=8 * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype)


def test_importing_the_module_imports_no_array_library() -> None:
    code = (
        "import sys, arrayselect.adapters; "
        "print([m for m in ('torch', 'jax', 'dask', 'cupy', 'array_api_strict', 'ml_dtypes') "
        "if m in sys.modules])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


def test_discover_lists_every_key_once_with_reasons() -> None:
    keys = [a.key for a in FOUND.present] + list(FOUND.missing)
    assert sorted(keys) == sorted(adapters.KEYS)
    assert all(reason for reason in FOUND.missing.values())
    assert "numpy" in [a.key for a in FOUND.present]
    with pytest.raises(ValueError, match="unknown adapter"):
        adapters.get("numpyy")


@PRESENT
@pytest.mark.parametrize("name", adapters.DTYPES)
def test_round_trip_keeps_dtype_and_bits(lib: adapters.Library, name: str) -> None:
    try:
        values = _awkward(name)
    except adapters.DtypeUnavailableError:
        pytest.skip("no ml_dtypes")
    if not lib.has_dtype(name):
        reason = lib.missing_dtype_reason(name)
        assert reason
        with pytest.raises(adapters.DtypeUnavailableError, match=re.escape(reason)):
            lib.from_numpy(values)
        return
    x = lib.from_numpy(values.reshape(2, 4))
    back = lib.to_numpy(lib.sync(x))
    assert back.dtype == values.dtype and bits_equal(back, values.reshape(2, 4))
    back_t = lib.to_numpy(lib.sync(lib.transpose(x)))
    assert bits_equal(back_t, values.reshape(2, 4).T)


@PRESENT
def test_peer_compile_concat_reshape(lib: adapters.Library) -> None:
    cond = lib.from_numpy(np.array([True, False, True]))
    then = lib.from_numpy(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    else_ = lib.from_numpy(np.array([-1.0, -2.0, -3.0], dtype=np.float32))
    where: Any = lib.compile(lib.peer)
    got = lib.to_numpy(lib.sync(where(cond, then, else_)))
    assert got.tolist() == [1.0, -2.0, 3.0]
    joined = lib.concat([then, else_])
    assert lib.to_numpy(lib.sync(lib.reshape(joined, (2, 3)))).tolist() == [
        [1.0, 2.0, 3.0],
        [-1.0, -2.0, -3.0],
    ]
    assert adapters.for_array(then).library == lib.library
    assert lib.device_kind in ("cpu", "gpu") and lib.device_name and lib.version


def test_copy_seconds_is_a_time() -> None:
    assert 0 < adapters.get("numpy").copy_seconds(2**20) < 1


def test_dask_chunking() -> None:
    try:
        halves = adapters.get("dask")
    except adapters.LibraryUnavailableError as exc:
        pytest.skip(str(exc))
    rows = adapters.get("dask", dask_chunking="rows")
    a = np.arange(20 * 6).reshape(20, 6)
    assert halves.from_numpy(a).chunks == ((10, 10), (3, 3))
    assert rows.from_numpy(a).chunks == ((3,) * 6 + (2,), (6,))
    with pytest.raises(ValueError, match="chunking"):
        adapters.DaskAdapter("columns")  # type: ignore[arg-type]


def test_numpy_dtype_without_ml_dtypes() -> None:
    proc = run_without(
        "ml_dtypes",
        """
        from arrayselect import adapters
        try:
            adapters.numpy_dtype("bfloat16")
        except adapters.DtypeUnavailableError as exc:
            print(exc)
        print(adapters.get("numpy").missing_dtype_reason("bfloat16"))
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("bfloat16 needs ml_dtypes") == 2, proc.stdout
