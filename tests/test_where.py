"""``arrayselect.where`` against the standard's ``where`` of each library, bit for bit.

Property tests (hypothesis) on every backend of the ``xp`` fixture: random
shapes that broadcast together (ranks 0-4, sizes 0, 1 and n), every pair of
dtypes (and Python scalars of every kind) for ``x1`` and ``x2``, values of
random bits (NaN payloads, -0.0, subnormals). The reference is the
standard's ``where`` for the library, its Array API namespace's
(``array_api_compat.array_namespace(x).where``: ``np.where``,
``array_api_compat.torch.where``, ``jnp.where``, ``array_api_compat.dask.array.where``,
``array_api_strict.where``), never arrayselect: where it returns a result,
``where`` returns the same dtype, shape and bits; where it refuses the
operands, ``where`` refuses them too.

Two classified differences: XLA's CPU ``where`` canonicalises the NaN payloads of
bfloat16 and three float8 types (``jnp.where`` computes through float32; see
``docs/differences.md``), which arrayselect's JAX backend keeps, so for those
dtypes NaNs are compared as NaNs; and array_api_strict refuses two Python
scalars (the standard leaves them out), which ``where`` takes as NumPy, PyTorch
and JAX do.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from types import ModuleType
from typing import Any

import array_api_compat
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import bits_equal
from xp_helpers import (
    ALL_DTYPES,
    backend_kind,
    dtype_skip_reason,
    from_numpy,
    fullgraph,
    numpy_dtype,
    to_numpy,
    where_lacks,
)

import arrayselect as asel
from arrayselect._base import caches as _caches

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SCALAR_KINDS = ("py-bool", "py-int", "py-float", "py-complex")
OPERANDS = (*ALL_DTYPES, *SCALAR_KINDS)
# jnp.where selects these through float32 on XLA's CPU backend: NaN payloads change.
_XLA_CANONICAL_NANS = frozenset({"bfloat16", "float8_e4m3", "float8_e5m2", "float8_e3m4"})


def _library_where(xp: ModuleType) -> Any:
    """The standard's ``where`` for the library: its Array API namespace's
    (``array_api_compat.array_namespace``), which for PyTorch promotes a 0-d
    tensor like any other where ``torch.where`` lets the other operand's dtype win.
    """

    def standard_where(condition: Any, x1: Any, x2: Any) -> Any:
        return array_api_compat.array_namespace(condition).where(condition, x1, x2)

    return standard_where


@st.composite
def where_cases(draw: Any) -> tuple[Any, ...]:
    n = draw(st.sampled_from((2, 3)))
    rank = draw(st.integers(0, 4))
    base = tuple(draw(st.sampled_from((0, 1, n, n, n))) for _ in range(rank))

    def operand_shape() -> tuple[int, ...]:
        keep = draw(st.integers(0, rank))
        return tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in base[rank - keep :])

    kinds = (draw(st.sampled_from(OPERANDS)), draw(st.sampled_from(OPERANDS)))
    shapes = (operand_shape(), operand_shape(), operand_shape())
    seed = draw(st.integers(0, 2**32 - 1))
    return kinds, shapes, seed


def _scalar(kind: str, rng: np.random.Generator) -> Any:
    pick = int(rng.integers(0, 6))
    if kind == "py-bool":
        return bool(pick % 2)
    if kind == "py-int":
        return (0, 1, -1, 7, 100, -128)[pick]
    if kind == "py-float":
        return (0.0, -0.0, 0.5, -2.25, math.inf, math.nan)[pick]
    return (0j, 1 - 2j, complex(0.5, -0.0), complex(math.inf, 1), 1j, -1 + 0j)[pick]


def _array(kind: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dtype = numpy_dtype(kind)
    if kind == "bool":
        return rng.random(shape) < 0.5
    raw = rng.integers(0, 256, size=math.prod(shape) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        result = fn(*args)
    except Exception as exc:
        return exc
    return to_numpy(result)


def _nan_tolerant_equal(got: np.ndarray, expected: np.ndarray) -> bool:
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return False
    g, e = got.astype(np.float64), expected.astype(np.float64)
    nan = np.isnan(g) & np.isnan(e)
    return bool(np.array_equal(g[~nan], e[~nan]) and bits_equal(got[~nan], expected[~nan]))


@SETTINGS
@given(case=where_cases())
def test_where_matches_the_library_where(xp: ModuleType, case: tuple[Any, ...]) -> None:
    kinds, (cshape, shape1, shape2), seed = case
    rng = np.random.default_rng(seed)
    for kind in kinds:
        if kind in ALL_DTYPES and dtype_skip_reason(xp, kind):
            return  # the library has no such dtype
        if kind in ALL_DTYPES and where_lacks(xp, kind):
            # nor a where for it (torch 2.6-2.9, uint16/32/64): arrayselect's selects on
            # their bits are checked against NumPy by tests/test_dtypes.py
            return
    operands = [
        _scalar(kind, rng) if kind in SCALAR_KINDS else from_numpy(xp, _array(kind, shape, rng))
        for kind, shape in zip(kinds, (shape1, shape2), strict=True)
    ]
    condition = from_numpy(xp, rng.random(cshape) < 0.5)
    expected = _outcome(_library_where(xp), condition, *operands)
    got = _outcome(asel.where, condition, *operands)
    if isinstance(expected, Exception):
        if kinds[0] in SCALAR_KINDS and kinds[1] in SCALAR_KINDS:
            # Classified: the standard leaves two scalars out and array_api_strict
            # refuses them; arrayselect.where takes them as NumPy, PyTorch and JAX do.
            return
        assert isinstance(got, Exception), (kinds, expected, got.dtype)
        return
    assert not isinstance(got, Exception), (kinds, expected.dtype, got)
    if backend_kind(xp) == "jax" and expected.dtype.name in _XLA_CANONICAL_NANS:
        assert _nan_tolerant_equal(got, expected), kinds
    else:
        assert bits_equal(got, expected), (kinds, got, expected)


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_where_refuses_what_the_standard_refuses(xp: ModuleType, warm: bool) -> None:
    """In where's words, cold or warm: warm, the calls go first to select's fast
    path (the dtypes need no promotion), whose errors would name cond, then, else."""
    c = from_numpy(xp, np.array([True, False, True]))
    x = from_numpy(xp, np.arange(3, dtype=np.float32))
    _caches.clear_all()
    if warm:
        asel.where(c, x, x)
        asel.where(c, x, 0.0)
    with pytest.raises(asel.SelectTypeError, match="condition must have a boolean dtype"):
        asel.where(from_numpy(xp, np.array([1, 0, 1], np.int8)), x, x)
    with pytest.raises(asel.SelectTypeError, match="condition must be an array"):
        asel.where([True, False, True], x, x)
    with pytest.raises(asel.SelectShapeError, match=r"x1 shape \(3,\) and x2 shape \(4,\)"):
        asel.where(c, x, from_numpy(xp, np.zeros(4, np.float32)))
    with pytest.raises(asel.SelectShapeError, match=r"condition shape \(2,\)"):
        asel.where(from_numpy(xp, np.array([True, False])), x, 0.0)


def test_where_needs_no_pass_when_dtypes_agree() -> None:
    """Same dtypes, or a Python scalar of the array's kind: no cast, straight to select."""
    from arrayselect.backends.shared import kernel

    c = np.array([True, False, True])
    x = np.arange(3, dtype=np.float32)
    before = kernel.kernel_stats()["calls"]
    for other in (x[::-1].copy(), 0.5):
        result = asel.where(c, x, other)
        assert result.dtype == np.float32
    assert kernel.kernel_stats()["calls"] == before + 2  # one kernel call each, no astype pass
    np.testing.assert_array_equal(asel.where(c, x, 0.5), np.where(c, x, np.float32(0.5)))


def test_where_mixed_kinds_follow_the_library() -> None:
    c = np.array([True, False])
    i8 = np.array([1, 2], np.int8)
    assert asel.where(c, i8, 0.5).dtype == np.where(c, i8, 0.5).dtype == np.float64
    assert asel.where(c, i8, np.float32(2.5)).dtype == np.where(c, i8, np.float32(2.5)).dtype
    assert asel.where(c, i8, np.array([1, 2], np.uint8)).dtype == np.int16


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != "bfloat16"])
def test_where_every_dtype_on_numpy(dtype: str) -> None:
    rng = np.random.default_rng(1)
    c = rng.random((4, 5)) < 0.5
    a, b = _array(dtype, (4, 5), rng), _array(dtype, (1, 5), rng)
    assert bits_equal(asel.where(c, a, b), np.where(c, a, b))


@pytest.mark.parametrize(
    ("dtype", "value"),
    [("float16", 1e10), ("float16", -1e300), ("float32", 1e300), ("int8", 1000), ("uint8", -1)],
)
def test_out_of_range_scalars_convert_as_the_library_does(
    xp: ModuleType, dtype: str, value: Any
) -> None:
    """Where select would raise ScalarOverflowError, where converts like the library."""
    if dtype_skip_reason(xp, dtype):
        pytest.skip(dtype_skip_reason(xp, dtype))
    condition = from_numpy(xp, np.array([True, False, True]))
    x1 = from_numpy(xp, np.arange(3).astype(dtype))
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's overflow warning on the conversion
        expected = _outcome(_library_where(xp), condition, x1, value)
        got = _outcome(asel.where, condition, x1, value)
    if isinstance(expected, Exception):
        assert isinstance(got, Exception), (expected, got)
    else:
        assert not isinstance(got, Exception), got
        assert bits_equal(got, expected), (got, expected)


def test_where_under_torch_compile() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    c, a, b = torch.rand(6) < 0.5, torch.arange(6, dtype=torch.int8), torch.rand(6)
    whole = fullgraph(torch)
    compiled = torch.compile(lambda c, a, b: asel.where(c, a, b), fullgraph=whole, backend="eager")
    assert torch.equal(compiled(c, a, b), torch.where(c, a, b))
    scalar = torch.compile(lambda c, b: asel.where(c, b, 0.5), fullgraph=whole, backend="eager")
    assert torch.equal(scalar(c, b), torch.where(c, b, 0.5))


def test_out_of_range_scalar_errors_do_not_depend_on_earlier_calls() -> None:
    """The promotion is decided by type (and cached by type): the error for a value
    out of range is the same whether or not an in-range call came first."""
    code = """
import array_api_strict as xp, arrayselect as asel
c, x = xp.asarray([True, False]), xp.asarray([1, 2], dtype=xp.int8)
def outcome():
    try:
        asel.where(c, x, 300)
    except Exception as exc:
        return type(exc).__name__
print(outcome(), end=" ")
asel.where(c, x, 5)
print(outcome())
"""
    pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    cold, warm = done.stdout.split()
    assert cold == warm, (cold, warm)


def test_zero_d_tensors_promote_as_the_standard_says_not_as_torch_where() -> None:
    """``torch.where`` lets a dimensioned tensor's dtype win over a 0-d one of the same
    kind; the standard (and ``array_api_compat.torch``) promotes them as any two arrays."""
    torch = pytest.importorskip("torch", reason="torch is not installed")
    c = torch.tensor([True, False])
    i8, f32 = torch.tensor([1, 2], dtype=torch.int8), torch.tensor([1.0, 2.0])
    for x1, x2, dtype in [
        (i8, torch.tensor(300, dtype=torch.int16), torch.int16),
        (f32, torch.tensor(0.1, dtype=torch.float64), torch.float64),
        (torch.tensor(7, dtype=torch.int8), torch.tensor([1, 2], dtype=torch.uint8), torch.int16),
    ]:
        assert torch.where(c, x1, x2).dtype != dtype  # what a torch user would get
        got = asel.where(c, x1, x2)
        assert got.dtype == dtype
        expected = torch.where(c, x1.to(dtype), x2.to(dtype))
        assert torch.equal(got, expected)
