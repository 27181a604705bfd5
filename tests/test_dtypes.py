"""Dtypes: every dtype per backend, bit-exact specials, Python scalars, integer cond."""

from __future__ import annotations

import math
from types import ModuleType

import array_api_compat
import numpy as np
import pytest
from oracle import bits_equal, oracle_select
from xp_helpers import ALL_DTYPES, backend_kind, from_numpy, numpy_dtype, skip_dtype, to_numpy

import arrayselect as asel

KIND = {
    "bool": "bool",
    **{f"int{n}": "int" for n in (8, 16, 32, 64)},
    **{f"uint{n}": "uint" for n in (8, 16, 32, 64)},
    "float16": "float",
    "bfloat16": "float",
    "float32": "float",
    "float64": "float",
    "complex64": "complex",
    "complex128": "complex",
}

COND = np.array([True, False, False, True, True, False, True, False])


def _sample_values(name: str) -> np.ndarray:
    """Eight values of dtype ``name``, extremes included."""
    dt = numpy_dtype(name)
    kind = KIND[name]
    if kind == "bool":
        return np.array([True, True, False, True, False, False, True, False])
    if kind in ("int", "uint"):
        info = np.iinfo(dt)
        vals = [info.min, info.max, 0, 1, info.max - 1, info.min + 1, 7, 3]
        return np.array(vals, dtype=dt)
    base = np.array([1.5, -2.25, 0.0, -0.0, 3.0, -1.0, 0.125, 100.0])
    if kind == "complex":
        return (base + 1j * base[::-1]).astype(dt)
    return base.astype(dt)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype(xp: ModuleType, dtype: str):
    skip_dtype(xp, dtype)
    then = _sample_values(dtype)
    else_ = then[::-1].copy()
    result = asel.select(from_numpy(xp, COND), from_numpy(xp, then), from_numpy(xp, else_))
    got = to_numpy(result)
    assert got.dtype == numpy_dtype(dtype)
    assert bits_equal(got, oracle_select(COND, then, else_))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_broadcast(xp: ModuleType, dtype: str):
    skip_dtype(xp, dtype)
    # then (2, 1, 4), else (4,), cond (2, 1, 1) -> (2, 1, 4); pdpd: else (2,) axis 0.
    then = _sample_values(dtype).reshape(2, 1, 4)
    else_ = _sample_values(dtype)[4:][::-1].copy()
    cond = np.array([True, False]).reshape(2, 1, 1)
    xc, xt, xe = from_numpy(xp, cond), from_numpy(xp, then), from_numpy(xp, else_)
    got = to_numpy(asel.select(xc, xt, xe))
    assert bits_equal(got, oracle_select(cond, then, else_))
    pd_else = _sample_values(dtype)[:2].copy()
    opts = {"auto_broadcast": "pdpd", "axis": 0}
    got = to_numpy(asel.select(from_numpy(xp, cond), xt, from_numpy(xp, pd_else), **opts))
    assert bits_equal(got, oracle_select(cond, then, pd_else, **opts))


# ----------------------------------------------------------------- bit exactness

SPECIAL_BITS = {
    # qNaN payloads, sNaN, -0.0, +inf, -inf, smallest subnormal, negative subnormal, 1.0
    "float16": ([0x7E01, 0xFE23, 0x7C01, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x83FF], np.uint16),
    "bfloat16": ([0x7FC1, 0xFFA5, 0x7F81, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x807F], np.uint16),
    "float32": (
        [0x7FC00001, 0xFFC12345, 0x7F800001, 0x80000000, 0x7F800000, 0xFF800000, 0x1, 0x807FFFFF],
        np.uint32,
    ),
    "float64": (
        [
            0x7FF8000000000001,
            0xFFF8DEAD0000BEEF,
            0x7FF0000000000001,
            0x8000000000000000,
            0x7FF0000000000000,
            0xFFF0000000000000,
            0x0000000000000001,
            0x800FFFFFFFFFFFFF,
        ],
        np.uint64,
    ),
}


def _xfail_jax_bfloat16_nan(xp: ModuleType, dtype: str) -> None:
    if backend_kind(xp) == "jax" and dtype == "bfloat16":
        import jax

        # The native JAX backend selects bfloat16 on its bit patterns; only the
        # portable path (jnp.where) still goes through XLA:CPU's float32 select.
        native = asel.backend_for(xp.asarray([True]), xp.asarray([1.0]), 0.0).name == "jax"
        if jax.default_backend() == "cpu" and not native:
            pytest.xfail(
                "known bug: XLA:CPU computes bfloat16 select in float32 and canonicalises NaN "
                "payloads (0x7fc1 -> 0x7fc0); fix: select on lax.bitcast_convert_type(x, uint16)"
            )


def _specials(name: str) -> np.ndarray:
    if name.startswith("complex"):
        part = "float32" if name == "complex64" else "float64"
        real = _specials(part)
        pairs = np.stack([real, real[::-1]], axis=-1).copy()
        return pairs.view(np.dtype(name)).reshape(real.shape)
    bits, utype = SPECIAL_BITS[name]
    return np.array(bits, dtype=utype).view(numpy_dtype(name))


FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pattern", ["mixed", "all-true", "all-false"])
def test_specials_bit_exact(xp: ModuleType, dtype: str, pattern: str):
    """NaN payloads, sNaN, -0.0, +-inf and subnormals keep their exact bits."""
    _xfail_jax_bfloat16_nan(xp, dtype)
    then = _specials(dtype)
    else_ = then[::-1].copy()
    cond = {"mixed": COND, "all-true": np.ones(8, bool), "all-false": np.zeros(8, bool)}[pattern]
    got = to_numpy(asel.select(from_numpy(xp, cond), from_numpy(xp, then), from_numpy(xp, else_)))
    assert bits_equal(got, oracle_select(cond, then, else_))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("mode", ["numpy", "pdpd"])
def test_specials_bit_exact_broadcast(xp: ModuleType, dtype: str, mode: str):
    """Broadcast (reshaped/expanded) inputs keep their bits too."""
    _xfail_jax_bfloat16_nan(xp, dtype)
    specials = _specials(dtype)
    then = specials.reshape(2, 4)
    else_ = specials[:4].reshape(4, 1) if mode == "numpy" else specials[:2].reshape(2, 1)
    cond = np.array([False, True, False, True])
    opts = {"auto_broadcast": mode}
    if mode == "numpy":
        then = then.reshape(2, 1, 4)  # -> (2, 4, 4)
    xs = [from_numpy(xp, a) for a in (cond, then, else_)]
    if mode == "pdpd":
        cond = cond.reshape(1, 4)
        xs[0] = from_numpy(xp, cond)
    got = to_numpy(asel.select(*xs, **opts))
    assert bits_equal(got, oracle_select(cond, then, else_, **opts))


# ----------------------------------------------------------------- integer cond

INT_CONDS = {
    "int8": [-128, -1, 0, 1, 127, 0, 2, 0],
    "int16": [256, -256, 0, 1, -32768, 0, 512, 0],  # low byte zero
    "int32": [65536, -65536, 0, 1, -(2**31), 0, 2**24, 0],
    "int64": [2**32, -(2**63), 0, 1, 2**40, 0, -(2**32), 0],  # low 32 bits zero
    "uint8": [255, 128, 0, 1, 2, 0, 254, 0],
    "uint16": [256, 65535, 0, 1, 32768, 0, 512, 0],
    "uint32": [2**31, 2**16, 0, 1, 2**32 - 1, 0, 2**24, 0],
    "uint64": [2**63, 2**32, 0, 1, 2**64 - 1, 0, 2**40, 0],
}


@pytest.mark.parametrize("cond_dtype", sorted(INT_CONDS))
@pytest.mark.parametrize("mode", ["numpy", "none", "pdpd"])
def test_integer_cond_nonzero_is_true(xp: ModuleType, cond_dtype: str, mode: str):
    """SPEC §4 / DirectML: any nonzero integer (negative, high bits only) is true."""
    cond = np.array(INT_CONDS[cond_dtype], dtype=cond_dtype)
    then = np.arange(1, 9, dtype=np.int32)
    else_ = -then
    expected = np.array([1, 2, -3, 4, 5, -6, 7, -8], dtype=np.int32)
    result = asel.select(
        from_numpy(xp, cond), from_numpy(xp, then), from_numpy(xp, else_), auto_broadcast=mode
    )
    assert bits_equal(to_numpy(result), expected)


@pytest.mark.parametrize("cond_dtype", ["int8", "uint8", "int64"])
def test_integer_cond_broadcast(xp: ModuleType, cond_dtype: str):
    cond = np.array([[0], [2]], dtype=cond_dtype)  # (2, 1) onto (2, 3)
    then = np.array([1.0, 2.0, 3.0])
    else_ = np.array([[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0]])
    expected = np.array([[-1.0, -2.0, -3.0], [1.0, 2.0, 3.0]])
    got = to_numpy(asel.select(from_numpy(xp, cond), from_numpy(xp, then), from_numpy(xp, else_)))
    assert bits_equal(got, expected)


# ----------------------------------------------------------------- Python scalars

FITS = {  # SPEC §4: which dtype kinds a Python scalar of each type may take
    bool: {"bool"},
    int: {"int", "uint", "float", "complex"},
    float: {"float", "complex"},
    complex: {"complex"},
}
SCALARS = [True, False, 7, 0, -0.0, 0.5, math.inf, -math.inf, complex(1.5, -2.0)]


def _scalar_id(value):
    return f"{type(value).__name__}({value!r})"


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("value", SCALARS, ids=_scalar_id)
@pytest.mark.parametrize("side", ["then", "else"])
def test_python_scalar_operand(xp: ModuleType, dtype: str, value, side: str):
    skip_dtype(xp, dtype)
    array = _sample_values(dtype)
    xc, xa = from_numpy(xp, COND), from_numpy(xp, array)
    args = (xc, value, xa) if side == "then" else (xc, xa, value)
    if KIND[dtype] not in FITS[type(value)]:
        with pytest.raises(asel.SelectTypeError, match=side) as info:
            asel.select(*args)
        assert not isinstance(info.value, asel.ScalarOverflowError)
        return
    scalar = np.asarray(value, dtype=numpy_dtype(dtype))  # 0-d, NumPy's conversion
    result = asel.select(*args)
    got = to_numpy(result)
    assert got.dtype == numpy_dtype(dtype)
    expected = (
        oracle_select(COND, scalar, array) if side == "then" else oracle_select(COND, array, scalar)
    )
    assert bits_equal(got, expected)


@pytest.mark.parametrize("value", [True, 3, 0.5, complex(0.5, -1.0)], ids=_scalar_id)
def test_both_scalars_take_default_dtype(xp: ModuleType, value):
    cond = np.array([True, False, True])
    xc = from_numpy(xp, cond)
    other = type(value)(0)
    ns = array_api_compat.array_namespace(xc)
    defaults = ns.__array_namespace_info__().default_dtypes()
    kind = {bool: None, int: "integral", float: "real floating", complex: "complex floating"}
    default = ns.bool if kind[type(value)] is None else defaults[kind[type(value)]]
    expected_dtype = to_numpy(ns.zeros((0,), dtype=default)).dtype
    # Two 0-d operands: cond (3,) may enlarge the output only when multidirectional.
    got = to_numpy(asel.select(xc, value, other, cond_broadcast="multidirectional"))
    assert got.dtype == expected_dtype
    t, e = np.asarray(value, dtype=expected_dtype), np.asarray(other, dtype=expected_dtype)
    assert bits_equal(got, oracle_select(cond, t, e, cond_broadcast="multidirectional"))


def test_both_scalars_of_different_types_do_not_promote(xp: ModuleType):
    xc = from_numpy(xp, np.array([True, False]))
    with pytest.raises(asel.SelectTypeError, match="then") as info:
        asel.select(xc, 1, 2.5)
    assert "else" in str(info.value)


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**70])
def test_both_scalars_int_out_of_default_range(xp: ModuleType, value):
    """Two Python ints beyond the default integer dtype (int64 here) are an error."""
    xc = from_numpy(xp, np.array(True))
    with pytest.raises(asel.ScalarOverflowError):
        asel.select(xc, value, 0)
    with pytest.raises(asel.ScalarOverflowError):
        asel.select(xc, 0, value)


def test_both_scalars_float_out_of_default_range(xp: ModuleType):
    xc = from_numpy(xp, np.array(True))
    ns = array_api_compat.array_namespace(xc)
    default = ns.__array_namespace_info__().default_dtypes()["real floating"]
    if to_numpy(ns.zeros((0,), dtype=default)).dtype != np.float32:
        pytest.skip(f"default real floating dtype of {backend_kind(xp)} is not float32")
    with pytest.raises(asel.ScalarOverflowError):
        asel.select(xc, 1e300, 0.0)


RANGE_EDGES = {
    "int8": ([-128, 127], [-129, 128, 300]),
    "uint8": ([0, 255], [-1, 256]),
    "int16": ([-(2**15), 2**15 - 1], [2**15]),
    "uint16": ([65535], [65536, -1]),
    "int32": ([-(2**31), 2**31 - 1], [2**31]),
    "uint32": ([2**32 - 1], [2**32]),
    "int64": ([-(2**63), 2**63 - 1], [2**63, -(2**63) - 1]),
    "uint64": ([2**64 - 1], [2**64, -1]),
    "float16": ([65504, -65504, 1e-8], [70000, 1e10, -1e10]),
    "bfloat16": ([3.0e38], [1e39, 10**40]),
    "float32": ([3.0e38, 2**100], [1e39, -1e39, 10**40]),
    "float64": ([1e308, 2**1000], [10**400]),
    "complex64": ([complex(3e38, -3e38)], [complex(1e39, 0), complex(0, -1e39)]),
    "complex128": ([complex(1e308, 1)], [10**400]),
}


@pytest.mark.parametrize("dtype", sorted(RANGE_EDGES))
def test_scalar_range(xp: ModuleType, dtype: str):
    skip_dtype(xp, dtype)
    ok, bad = RANGE_EDGES[dtype]
    array = _sample_values(dtype)[:2].copy()
    xc, xa = from_numpy(xp, COND[:2].copy()), from_numpy(xp, array)
    for value in ok:
        got = to_numpy(asel.select(xc, xa, value))
        scalar = np.asarray(value, dtype=numpy_dtype(dtype))
        assert bits_equal(got, oracle_select(COND[:2], array, scalar)), value
    for value in bad:
        with pytest.raises(asel.ScalarOverflowError, match="else"):
            asel.select(xc, xa, value)
        with pytest.raises(asel.ScalarOverflowError, match="then"):
            asel.select(xc, value, xa)
    # Non-finite floats are not "out of range": they are values of the dtype.
    if KIND[dtype] in ("float", "complex"):
        got = to_numpy(asel.select(xc, -math.inf, xa))
        assert got[0] == -math.inf


def test_scalar_exceptions_are_builtin_errors():
    # SPEC §7: type problems are TypeErrors; range problems also ValueErrors.
    assert issubclass(asel.ScalarOverflowError, TypeError)
    assert issubclass(asel.ScalarOverflowError, ValueError)
    assert issubclass(asel.SelectShapeError, ValueError)
    assert issubclass(asel.SelectValueError, ValueError)
    assert issubclass(asel.SelectTypeError, TypeError)


def test_bfloat16_under_force_portable_is_not_called_unsupported() -> None:
    """NumPy's bfloat16 (ml_dtypes) is floating: the native backend takes it; under
    force_portable() the refusal says the portable backend's namespace lacks it,
    never that Select supports no such dtype or that it is not floating."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    c = np.array([True, False])
    x = np.array([1.5, 2.5], dtype=ml_dtypes.bfloat16)
    y = np.array([3.0, 4.0], dtype=ml_dtypes.bfloat16)
    assert asel.select(c, x, y).tobytes() == np.where(c, x, y).tobytes()
    with asel.force_portable(), pytest.raises(asel.SelectTypeError) as info:
        asel.select(c, x, y)
    message = str(info.value)
    assert "array_api_compat.numpy" in message and "portable backend" in message
    assert "does not support" not in message and "expected a boolean" not in message


def test_portable_torch_without_a_where_kernel_says_so() -> None:
    """On a torch whose ``torch.where`` lacks a dtype (torch < 2.7: uint16/32/64, float8),
    the portable backend raises a SelectTypeError naming the dtype, not torch's error; the
    native backend selects anyway (on integer views)."""
    torch = pytest.importorskip("torch")
    from xp_helpers import _torch_where_lacks

    lacking = [n for n in ("uint16", "uint32", "uint64") if _torch_where_lacks(torch, n)]
    if not lacking:
        pytest.skip(f"torch {torch.__version__} has a where kernel for every dtype")
    cond = torch.tensor([True, False])
    for name in lacking:
        a = torch.tensor([1, 2]).to(getattr(torch, name))
        b = torch.tensor([7, 9]).to(getattr(torch, name))
        assert asel.select(cond, a, b).tolist() == [1, 9]
        with asel.force_portable(), pytest.raises(asel.SelectTypeError, match=name):
            asel.select(cond, a, b)
