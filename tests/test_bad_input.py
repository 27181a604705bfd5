"""The full bad-input table, on every backend (the ``xp`` fixture).

Extends ``test_errors.py`` (same helpers) to: every wrong dtype for cond, then,
else and out; every Python scalar kind against every dtype (out-of-range ints,
NaN and huge floats into float16 included); non-array objects (lists, strings,
None, objects with a fake ``shape`` or a broken ``__array_namespace__``);
NumPy's object, string, datetime and structured dtypes; unknown or misspelled
option values; ``axis`` of the wrong type or sign; failing shapes in every mode
at every position; mixed namespaces and devices; ``out`` of the wrong shape,
dtype, namespace, read-only or self-overlapping.

Every case asserts the exact exception class, the argument's name in the
message, and that no array was modified. Expected outcomes come from
:mod:`contract` (SPEC §4-§7 restated), never from the library.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from contract import DOCUMENTED, dtype_kind, scalar_error
from oracle import bits_equal, oracle_select
from xp_helpers import (
    ALL_DTYPES,
    Backend,
    backend_kind,
    dtype_skip_reason,
    from_numpy,
    numpy_dtype,
    select_after_warming,
    supports_out,
    to_numpy,
)

import arrayselect as asel

# --------------------------------------------------------------------------- machinery


def _snapshot(x: Any) -> np.ndarray | None:
    """A NumPy copy of an array of any library; ``None`` for anything else."""
    if x is None or isinstance(x, (bool, int, float, complex, str, bytes, list, tuple)):
        return None
    if isinstance(x, FakeShaped) or not hasattr(type(x), "__array_namespace__"):
        return None
    if getattr(getattr(x, "device", None), "type", None) == "meta":
        return None  # PyTorch meta tensors have no data
    try:
        snap = to_numpy(x)
    except Exception:
        return None
    return None if snap.dtype.hasobject else snap  # object arrays have no bits to compare


def _word_found(word: str, msg: str) -> bool:
    pattern = re.escape(word) if not word[0].isalnum() else r"\b" + re.escape(word)
    return re.search(pattern, msg) is not None


def expect_error(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    exc: type[Exception],
    words: tuple[str, ...],
) -> asel.SelectError:
    """``select(*args, **kwargs)`` raises exactly ``exc``, names ``words``, modifies nothing."""
    named = dict(zip(("cond", "then", "else"), args, strict=True))
    if "out" in kwargs:
        named["out"] = kwargs["out"]
    before = {name: _snapshot(x) for name, x in named.items()}
    try:
        asel.select(*args, **kwargs)
    except DOCUMENTED as err:
        error = err
    else:
        raise AssertionError(f"no error; expected {exc.__name__}")
    assert type(error) is exc, f"{type(error).__name__} instead of {exc.__name__}: {error}"
    msg = str(error)
    for word in words:
        assert _word_found(word, msg), f"{word!r} not in message: {msg}"
    _untouched(named, before)
    # Once more after a valid call of the same signature has warmed every cache.
    _, again = select_after_warming(args, kwargs)
    assert type(again) is type(error) and str(again) == msg, f"warm: {again!r} after {error!r}"
    _untouched(named, before)
    assert isinstance(error, asel.SelectError)
    return error  # type: ignore[return-value]


def _untouched(named: dict[str, Any], before: dict[str, np.ndarray | None]) -> None:
    for name, snap in before.items():
        if snap is not None:
            after = to_numpy(named[name])
            assert after.dtype == snap.dtype and after.shape == snap.shape, name
            assert bits_equal(after, snap), f"{name} was modified"


def _arr(xp: ModuleType, dtype: str = "float32", shape: tuple[int, ...] = (2, 3), value: Any = 1):
    if dtype_skip_reason(xp, dtype):
        pytest.skip(dtype_skip_reason(xp, dtype))
    if dtype == "bool":
        return from_numpy(xp, np.full(shape, bool(value)))
    return from_numpy(xp, np.full(shape, value).astype(numpy_dtype(dtype)))


COND_NP = np.array([[True, False, True], [False, True, False]])


def _cond(xp: ModuleType, shape: tuple[int, ...] = (2, 3)):
    return from_numpy(xp, (np.arange(math.prod(shape)) % 2 == 0).reshape(shape))


def _other(name: str) -> str:
    """Another dtype of the same width class (next in ALL_DTYPES, cyclic)."""
    return ALL_DTYPES[(ALL_DTYPES.index(name) + 1) % len(ALL_DTYPES)]


# --------------------------------------------------------------------------- dtypes

WRONG_COND_DTYPES = [d for d in ALL_DTYPES if dtype_kind(numpy_dtype(d)) in ("float", "complex")]


@pytest.mark.parametrize("dtype", WRONG_COND_DTYPES)
def test_cond_wrong_dtype(xp: ModuleType, dtype: str):
    cond = _arr(xp, dtype)
    expect_error((cond, _arr(xp), _arr(xp, value=2)), {}, asel.SelectTypeError, ("cond", dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("order", ["then-first", "else-first"])
def test_then_else_dtypes_differ(xp: ModuleType, dtype: str, order: str):
    a, b = _arr(xp, dtype), _arr(xp, _other(dtype), value=0)
    then, else_ = (a, b) if order == "then-first" else (b, a)
    words = ("then", "else", dtype, _other(dtype))
    expect_error((_cond(xp), then, else_), {}, asel.SelectTypeError, words)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_out_wrong_dtype(xp: ModuleType, dtype: str):
    then, else_ = _arr(xp, dtype), _arr(xp, dtype, value=0)
    out = _arr(xp, _other(dtype), value=0)
    words = ("out", _other(dtype), dtype) if supports_out(xp) else ("out",)
    expect_error((_cond(xp), then, else_), {"out": out}, asel.SelectTypeError, words)


# --------------------------------------------------------------------------- Python scalars

BIG = (2**15, 2**16, 2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64)
SCALARS: tuple[Any, ...] = (
    True,
    False,
    0,
    1,
    -1,
    127,
    128,
    -128,
    -129,
    255,
    256,
    *BIG,
    -(2**63),
    -(2**63) - 1,
    2**1000,
    -(2**1000),
    0.0,
    -0.0,
    0.5,
    math.nan,
    math.inf,
    -math.inf,
    65504.0,
    65505.0,
    65520.0,
    1e5,
    3.4028234663852886e38,
    3.5e38,
    1.7976931348623157e308,
    5e-324,
    1j,
    -0j,
    complex(math.nan, math.inf),
    complex(1e39, 0),
    complex(0, -1e39),
    complex(1e300, 1e300),
)


def _scalar_as_array(value: Any, dtype: np.dtype[Any]) -> np.ndarray:
    """What a scalar that fits becomes: NumPy's own conversion (SPEC §4, 'takes the dtype').

    An int taking a floating dtype goes through a Python float, as NumPy itself
    converts it (ml_dtypes cannot convert ints beyond int64 directly).
    """
    if type(value) is int and dtype_kind(dtype) in ("float", "complex"):
        value = float(value)
    return np.asarray(value, dtype=dtype)


def _same_values(got: np.ndarray, expected: np.ndarray) -> bool:
    """Bit-equal, except that any NaN equals any NaN (libraries canonicalise scalar NaNs)."""
    if bits_equal(got, expected):
        return True
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return False
    g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    e = expected.astype(g.dtype)
    return bool(np.array_equal(g, e, equal_nan=True)) and bool(
        np.array_equal(np.signbit(g.real), np.signbit(e.real))
    )


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_python_scalar_against_every_dtype(xp: ModuleType, dtype: str):
    """Every kind of Python scalar against every dtype, as then and as else."""
    np_dtype = numpy_dtype(dtype)
    array_np = np.zeros((2, 3), dtype=np_dtype)
    array = _arr(xp, dtype, value=0)
    cond = _cond(xp)
    failures = []
    for i, value in enumerate(SCALARS):
        expected_error = scalar_error(value, np_dtype)
        # Both positions on NumPy; elsewhere alternate (the code path is symmetric).
        positions = (
            ("then", "else") if backend_kind(xp) == "numpy" else ("then", "else")[i % 2 :][:1]
        )
        for position in positions:
            args = (cond, value, array) if position == "then" else (cond, array, value)
            if expected_error is not None:
                try:
                    expect_error(args, {}, expected_error, (position,))
                except AssertionError as exc:
                    failures.append(f"{position}={value!r}: {exc}")
                continue
            try:
                got = to_numpy(asel.select(*args))
            except Exception as exc:
                failures.append(f"{position}={value!r}: unexpected {type(exc).__name__}: {exc}")
                continue
            scalar = _scalar_as_array(value, np_dtype)
            t, e = (scalar, array_np) if position == "then" else (array_np, scalar)
            expected = oracle_select(COND_NP, t, e)
            if not _same_values(got, expected):
                failures.append(f"{position}={value!r}: got {got!r}, expected {expected!r}")
    assert not failures, "\n".join(failures)


SCALAR_TYPES = (bool, int, float, complex)
SAMPLE = {bool: True, int: 3, float: 2.5, complex: 1 - 2j}


@pytest.mark.parametrize("then_type", SCALAR_TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("else_type", SCALAR_TYPES, ids=lambda t: t.__name__)
def test_two_python_scalars(xp: ModuleType, then_type: type, else_type: type):
    cond = _cond(xp, ())
    then, else_ = SAMPLE[then_type], SAMPLE[else_type]
    if then_type is not else_type:
        words = ("then", "else", then_type.__name__, else_type.__name__)
        expect_error((cond, then, else_), {}, asel.SelectTypeError, words)
        return
    result = asel.select(cond, then, else_)
    # SPEC §4: the namespace's default dtype for the kind, asked of the library itself.
    default = xp.asarray(type(then)(0)).dtype
    assert result.dtype == default
    assert to_numpy(result).item() == then


@pytest.mark.parametrize(
    ("then", "else_"),
    [(2**63, 0), (0, -(2**63) - 1), (2**64, 1), (1e300, 0.0), (complex(0, 1e300), 0j)],
    ids=str,
)
def test_two_python_scalars_out_of_default_range(xp: ModuleType, then: Any, else_: Any):
    cond = _cond(xp, ())
    # The namespace's default dtype for the kind, asked of the library itself.
    default = np.dtype(str(xp.asarray(type(then)(0)).dtype).rpartition(".")[2])
    expected = scalar_error(then, default) or scalar_error(else_, default)
    if expected is None:
        got = to_numpy(asel.select(cond, then, else_))
        assert got.item() == then
        return
    name = "then" if scalar_error(then, default) else "else"
    expect_error((cond, then, else_), {}, expected, (name,))


# --------------------------------------------------------------------------- non-arrays


class FakeShaped:
    """Looks like an array (shape, dtype, ndim) but speaks no Array API."""

    shape = (2, 3)
    ndim = 2
    dtype = np.dtype(np.float32)
    size = 6

    def __len__(self) -> int:
        return 2


class FakeNamespaceRaises(FakeShaped):
    device = "cpu"

    def __array_namespace__(self, api_version: str | None = None) -> ModuleType:
        raise RuntimeError("this namespace is broken")


class FakeNamespaceNone(FakeShaped):
    device = "cpu"

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        return None


class FakeNamespaceAttr(FakeShaped):
    device = "cpu"
    __array_namespace__ = 5


class FakeNamespaceNoDevice(FakeShaped):
    def __array_namespace__(self, api_version: str | None = None) -> ModuleType:
        return np


def _generator():
    yield 1.0


NON_ARRAYS: list[tuple[str, Callable[[], Any]]] = [
    ("list", lambda: [[1.0, 2.0, 3.0]] * 2),
    ("tuple", lambda: ((1.0, 2.0, 3.0),) * 2),
    ("str", lambda: "abc"),
    ("bytes", lambda: b"abc"),
    ("None", lambda: None),
    ("dict", lambda: {"a": 1}),
    ("set", lambda: {1.0}),
    ("object", object),
    ("range", lambda: range(3)),
    ("generator", _generator),
    ("memoryview", lambda: memoryview(b"abcdef")),
    ("fake-shape", FakeShaped),
    ("fake-namespace-raises", FakeNamespaceRaises),
    ("fake-namespace-none", FakeNamespaceNone),
    ("fake-namespace-attr", FakeNamespaceAttr),
    ("fake-namespace-no-device", FakeNamespaceNoDevice),
    ("int-subclass", lambda: _IntSub(1)),
    ("float-subclass", lambda: _FloatSub(1.0)),
]


class _IntSub(int):
    pass


class _FloatSub(float):
    pass


@pytest.mark.parametrize(("label", "make"), NON_ARRAYS, ids=[n for n, _ in NON_ARRAYS])
@pytest.mark.parametrize("position", ["cond", "then", "else", "out"])
def test_non_array_objects(xp: ModuleType, label: str, make: Callable[[], Any], position: str):
    if position == "out" and label == "None":
        pytest.skip("out=None means no out")
    args = [_cond(xp), _arr(xp), _arr(xp, value=2)]
    kwargs: dict[str, Any] = {}
    if position == "out":
        kwargs["out"] = make()
    else:
        args[("cond", "then", "else").index(position)] = make()
    expect_error(tuple(args), kwargs, asel.SelectTypeError, (position,))


@pytest.mark.parametrize(
    ("label", "make"), NON_ARRAYS[11:16], ids=[n for n, _ in NON_ARRAYS[11:16]]
)
def test_all_three_fake(label: str, make: Callable[[], Any]):
    """Nothing but fake arrays: still a SelectTypeError naming cond, never a crash."""
    expect_error((make(), make(), make()), {}, asel.SelectTypeError, ("cond",))
    expect_error((make(), 1.0, 2.0), {}, asel.SelectTypeError, ("cond",))


@pytest.mark.parametrize("value", [True, 1, 1.0, 1j], ids=repr)
def test_python_scalar_cond_or_out(xp: ModuleType, value: Any):
    expect_error((value, _arr(xp), _arr(xp)), {}, asel.SelectTypeError, ("cond",))
    expect_error((_cond(xp), _arr(xp), _arr(xp)), {"out": value}, asel.SelectTypeError, ("out",))


# --------------------------------------------------------------------------- NumPy-only dtypes

NUMPY_ONLY_DTYPES = ["object", "U3", "S3", "datetime64[s]", "timedelta64[ms]", "i4,f4", "V4"]


def _np_only(dtype: str) -> np.ndarray:
    return np.zeros((2, 3), dtype=dtype)


# Object, str, datetime64 and structured dtypes exist only in NumPy.
@pytest.mark.parametrize("library", [Backend.NUMPY, Backend.NUMPY_PORTABLE], ids=str)
@pytest.mark.parametrize("dtype", NUMPY_ONLY_DTYPES)
@pytest.mark.parametrize("position", ["cond", "then", "else", "then+else", "then+scalar", "out"])
def test_numpy_only_dtypes(xp: ModuleType, dtype: str, position: str):
    cond, then, else_ = COND_NP.copy(), np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)
    kwargs: dict[str, Any] = {}
    name = position.partition("+")[0]
    if position == "cond":
        cond = _np_only(dtype)
    elif position == "then":
        then = _np_only(dtype)
    elif position == "else":
        else_ = _np_only(dtype)
    elif position == "then+else":
        then, else_ = _np_only(dtype), _np_only(dtype)
    elif position == "then+scalar":
        then, else_ = _np_only(dtype), 1.0
    else:
        kwargs["out"] = _np_only(dtype)
    expect_error((cond, then, else_), kwargs, asel.SelectTypeError, (name,))


# --------------------------------------------------------------------------- options

MODES_LISTED = ("auto_broadcast", "'none'", "'numpy'", "'pdpd'")
CB_LISTED = ("cond_broadcast", "'unidirectional'", "'multidirectional'")
BAD_MODES = [
    "nmupy",
    "Numpy",
    "NUMPY",
    " numpy",
    "numpy ",
    "",
    "pdpd\x00",
    "broadcast",
    "np",
    b"numpy",
    0,
    1.5,
    None,
    ["numpy"],
    ("numpy",),
    np.str_("bogus"),
    object(),
]
BAD_CBS = [
    "uni",
    "Unidirectional",
    "multi",
    "bidirectional",
    "",
    b"unidirectional",
    None,
    0,
    True,
    ["multidirectional"],
    np.str_("sideways"),
]
BAD_AXIS_TYPES = [
    1.0,
    0.0,
    "1",
    "-1",
    None,
    True,
    False,
    np.bool_(True),
    [1],
    (1,),
    np.array([1]),
    np.array([0, 1]),
    np.float64(1.0),
    1 + 0j,
    object(),
    slice(1),
]
BAD_AXIS_VALUES = [-2, -3, -(2**70), np.int64(-5), np.int8(-2)]


@pytest.mark.parametrize("value", BAD_MODES, ids=repr)
def test_unknown_auto_broadcast(xp: ModuleType, value: Any):
    args = (_cond(xp), _arr(xp), _arr(xp))
    expect_error(args, {"auto_broadcast": value}, asel.SelectValueError, MODES_LISTED)


@pytest.mark.parametrize("value", BAD_CBS, ids=repr)
def test_unknown_cond_broadcast(xp: ModuleType, value: Any):
    args = (_cond(xp), _arr(xp), _arr(xp))
    expect_error(args, {"cond_broadcast": value}, asel.SelectValueError, CB_LISTED)


@pytest.mark.parametrize("value", BAD_AXIS_TYPES, ids=repr)
@pytest.mark.parametrize("mode", ["pdpd", "numpy"])
def test_axis_wrong_type(xp: ModuleType, value: Any, mode: str):
    args = (_cond(xp), _arr(xp), _arr(xp))
    kwargs = {"auto_broadcast": mode, "axis": value}
    expect_error(args, kwargs, asel.SelectTypeError, ("axis", type(value).__name__))


@pytest.mark.parametrize("value", BAD_AXIS_VALUES, ids=repr)
def test_axis_wrong_sign(xp: ModuleType, value: Any):
    args = (_cond(xp), _arr(xp), _arr(xp))
    kwargs = {"auto_broadcast": "pdpd", "axis": value}
    expect_error(args, kwargs, asel.SelectValueError, ("axis", str(int(value)), "-1"))


@pytest.mark.parametrize("mode", ["none", "numpy"])
@pytest.mark.parametrize("axis", [0, 1, np.int32(2), 10**30])
def test_axis_outside_pdpd(xp: ModuleType, mode: str, axis: Any):
    args = (_cond(xp), _arr(xp), _arr(xp))
    kwargs = {"auto_broadcast": mode, "axis": axis}
    expect_error(args, kwargs, asel.SelectValueError, ("axis", "'pdpd'", repr(mode)))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"cond_brodcast": "x"},
        {"axes": 1},
        {"mode": "numpy"},
        {"else_": 1.0},
        {"autobroadcast": "none"},
    ],
    ids=str,
)
def test_misspelled_keyword_names(kwargs: dict[str, Any]):
    """Python itself refuses unknown keyword names: a TypeError that names the keyword.

    (Not an arrayselect exception: the signature is checked before any of our
    code runs; documented in docs/hardening.md.)
    """
    (name,) = kwargs
    cond, then = np.array([True]), np.array([1.0])
    args: tuple[Any, ...] = (cond, then) if name == "else_" else (cond, then, then)
    with pytest.raises(TypeError, match=re.escape(name)):
        asel.select(*args, **kwargs)
    with pytest.raises(TypeError, match=re.escape(name)):
        asel.select_shape((1,), (1,), (1,), **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- shapes

# (id, cond, then, else, options, argument the message must name)
SHAPE_FAILURES: list[
    tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...], dict[str, Any], str]
] = [
    ("none-cond-dim", (2, 4), (2, 3), (2, 3), {"auto_broadcast": "none"}, "cond"),
    ("none-cond-rank", (1, 2, 3), (2, 3), (2, 3), {"auto_broadcast": "none"}, "cond"),
    ("none-cond-broadcastable", (1, 3), (2, 3), (2, 3), {"auto_broadcast": "none"}, "cond"),
    ("none-then-dim", (2, 3), (2, 4), (2, 3), {"auto_broadcast": "none"}, "then"),
    ("none-then-rank", (2, 3), (3,), (2, 3), {"auto_broadcast": "none"}, "then"),
    ("none-else-dim", (2, 3), (2, 3), (0, 3), {"auto_broadcast": "none"}, "else"),
    ("none-else-rank", (2, 3), (2, 3), (), {"auto_broadcast": "none"}, "else"),
    ("numpy-then-else", (), (2, 3), (4, 3), {}, "then"),
    ("numpy-then-else-zero", (), (0, 3), (2, 3), {}, "else"),
    ("numpy-then-else-inner", (), (2, 3, 1), (2, 4, 5), {}, "then"),
    ("numpy-cond-dim", (4,), (2, 3), (2, 3), {}, "cond"),
    ("numpy-cond-zero", (0,), (2, 3), (2, 3), {}, "cond"),
    ("numpy-cond-rank", (1, 2, 3), (2, 3), (2, 3), {}, "cond"),
    ("numpy-cond-enlarges", (2, 3), (1, 3), (1, 3), {}, "cond"),
    ("numpy-cond-enlarges-scalar", (3,), (), (), {}, "cond"),
    ("multi-cond-dim", (4,), (2, 3), (2, 3), {"cond_broadcast": "multidirectional"}, "cond"),
    ("multi-cond-zero", (2, 1), (3, 3), (3, 1), {"cond_broadcast": "multidirectional"}, "cond"),
    ("multi-then-else", (1,), (2, 3), (3, 3), {"cond_broadcast": "multidirectional"}, "then"),
    ("pdpd-else-rank", (), (2, 3), (1, 2, 3), {"auto_broadcast": "pdpd"}, "else"),
    ("pdpd-else-dim", (), (2, 3), (2,), {"auto_broadcast": "pdpd"}, "else"),
    ("pdpd-else-axis", (), (2, 3), (3,), {"auto_broadcast": "pdpd", "axis": 0}, "else"),
    ("pdpd-else-past-end", (), (2, 3), (3,), {"auto_broadcast": "pdpd", "axis": 2}, "else"),
    ("pdpd-else-huge-axis", (), (2, 3), (), {"auto_broadcast": "pdpd", "axis": 10**9}, "else"),
    ("pdpd-else-zero", (), (2, 3), (0,), {"auto_broadcast": "pdpd", "axis": 1}, "else"),
    ("pdpd-cond-rank", (1, 2, 3), (2, 3), (), {"auto_broadcast": "pdpd"}, "cond"),
    ("pdpd-cond-dim", (4,), (2, 3), (), {"auto_broadcast": "pdpd"}, "cond"),
    ("pdpd-cond-axis", (2,), (2, 3), (3,), {"auto_broadcast": "pdpd", "axis": 1}, "cond"),
    ("pdpd-cond-past-end", (3, 1), (2, 3), (), {"auto_broadcast": "pdpd", "axis": 2}, "cond"),
    ("pdpd-then-smaller", (), (3,), (2, 3), {"auto_broadcast": "pdpd"}, "else"),
    ("pdpd-then-scalar", (1,), (), (), {"auto_broadcast": "pdpd"}, "cond"),
]


def _shape_case_arrays(xp, cond, then, else_):
    c = from_numpy(xp, np.zeros(cond, dtype=bool))
    t = from_numpy(xp, np.ones(then, dtype=np.int16))
    e = from_numpy(xp, np.zeros(else_, dtype=np.int16))
    return c, t, e


@pytest.mark.parametrize(
    ("cid", "cond", "then", "else_", "options", "name"),
    SHAPE_FAILURES,
    ids=[c[0] for c in SHAPE_FAILURES],
)
def test_shape_failures(xp: ModuleType, cid, cond, then, else_, options, name):
    args = _shape_case_arrays(xp, cond, then, else_)
    shape = {"cond": cond, "then": then, "else": else_}[name]
    expect_error(args, options, asel.SelectShapeError, (name, str(shape)))


@pytest.mark.parametrize(
    ("cid", "cond", "then", "else_", "options", "name"),
    SHAPE_FAILURES,
    ids=[c[0] for c in SHAPE_FAILURES],
)
def test_shape_failures_select_shape(cid, cond, then, else_, options, name):
    with pytest.raises(asel.SelectShapeError) as info:
        asel.select_shape(cond, then, else_, **options)
    assert type(info.value) is asel.SelectShapeError
    assert _word_found(name, str(info.value)), str(info.value)


@pytest.mark.parametrize(
    ("cid", "cond", "then", "else_", "options", "name"),
    SHAPE_FAILURES,
    ids=[c[0] for c in SHAPE_FAILURES],
)
def test_shape_failures_with_scalars(xp: ModuleType, cid, cond, then, else_, options, name):
    """The same failures with a Python scalar standing for a () then or else."""
    if then != () and else_ != ():
        pytest.skip("no 0-d then/else to replace by a scalar")
    c, t, e = _shape_case_arrays(xp, cond, then, else_)
    t = 1 if then == () else t
    e = 0 if else_ == () and then != () else e
    expect_error((c, t, e), options, asel.SelectShapeError, (name,))


# --------------------------------------------------------------------------- namespaces, devices

FOREIGN = ("numpy", "torch", "array_api_strict", "jax.numpy", "dask.array")


def _foreign_array(module: str, a: np.ndarray) -> Any:
    mod = pytest.importorskip(module, reason=f"{module} is not installed")
    if module == "jax.numpy":
        import jax

        jax.config.update("jax_enable_x64", True)
    if module == "torch":
        return mod.from_numpy(np.array(a))
    if module == "dask.array":
        return mod.from_array(np.array(a))
    return mod.asarray(a) if module != "numpy" else np.array(a)


def _joins(kind: str, foreign: str) -> bool:
    """NumPy arrays may join JAX arrays (SPEC §5); every other mix is an error."""
    pair = {kind, {"jax.numpy": "jax", "dask.array": "dask"}.get(foreign, foreign)}
    return pair == {"numpy", "jax"}


@pytest.mark.parametrize("foreign", FOREIGN)
@pytest.mark.parametrize("position", ["cond", "then", "else", "out"])
def test_mixed_namespaces(xp: ModuleType, foreign: str, position: str):
    kind = backend_kind(xp)
    if {"jax.numpy": "jax", "dask.array": "dask"}.get(foreign, foreign) == kind:
        pytest.skip("same library")
    if _joins(kind, foreign) and position != "out":
        pytest.skip("NumPy arrays join JAX arrays (SPEC §5); tested in test_registry")
    sample = {"cond": COND_NP, "out": np.zeros((2, 3), np.float32)}.get(
        position, np.ones((2, 3), np.float32)
    )
    other = _foreign_array(foreign, sample)
    args = [_cond(xp), _arr(xp), _arr(xp, value=2)]
    kwargs: dict[str, Any] = {}
    if position == "out":
        kwargs["out"] = other
    else:
        args[("cond", "then", "else").index(position)] = other
    expect_error(tuple(args), kwargs, asel.SelectTypeError, (position,))


@pytest.mark.parametrize("position", ["cond", "then", "else"])
def test_devices_differ(xp: ModuleType, position: str):
    kind = backend_kind(xp)
    if kind == "array_api_strict":
        other = xp.Device("device1")

        def move(a):
            return xp.asarray(a, device=other)
    elif kind == "torch":

        def move(a):
            return a.to("meta")
    else:
        pytest.skip(f"{kind}: no second device on this machine")
    args = [_cond(xp), _arr(xp), _arr(xp, value=2)]
    i = ("cond", "then", "else").index(position)
    args[i] = move(args[i])
    expect_error(tuple(args), {}, asel.SelectValueError, (position, "device"))


def test_out_on_other_device(xp: ModuleType):
    if backend_kind(xp) != "torch":
        pytest.skip("torch: a 'meta' out next to CPU inputs")
    out = xp.zeros((2, 3), device="meta")
    expect_error((_cond(xp), _arr(xp), _arr(xp)), {"out": out}, asel.SelectValueError, ("out",))


# --------------------------------------------------------------------------- out

OUT_SHAPES = [(3, 2), (1, 2, 3), (2, 3, 1), (2, 1), (1, 3), (), (0,), (6,), (0, 3), (2, 0)]


@pytest.mark.parametrize("shape", OUT_SHAPES, ids=str)
def test_out_wrong_shape(xp: ModuleType, shape: tuple[int, ...]):
    out = from_numpy(xp, np.zeros(shape, np.float32))
    if supports_out(xp):
        exc, words = asel.SelectShapeError, ("out", str(shape), "(2, 3)")
    else:
        exc, words = asel.SelectTypeError, ("out",)
    expect_error((_cond(xp), _arr(xp), _arr(xp)), {"out": out}, exc, words)


def test_out_read_only(xp: ModuleType):
    if backend_kind(xp) != "numpy":
        pytest.skip("NumPy: arrays with writeable=False")
    out = np.zeros((2, 3), np.float32)
    out.flags.writeable = False
    words = ("out", "read-only")
    expect_error((_cond(xp), _arr(xp), _arr(xp)), {"out": out}, asel.SelectValueError, words)
    # A read-only input as out (out is then): refused, the input is untouched.
    then = _arr(xp)
    then.flags.writeable = False
    expect_error((_cond(xp), then, _arr(xp)), {"out": then}, asel.SelectValueError, words)


def test_out_broadcast_view(xp: ModuleType):
    """``broadcast_to`` views are read-only; made writable they overlap themselves."""
    kind = backend_kind(xp)
    if kind == "numpy":
        out = np.broadcast_to(np.zeros(3, np.float32), (2, 3))
        args = (_cond(xp), _arr(xp), _arr(xp))
        expect_error(args, {"out": out}, asel.SelectValueError, ("out",))
        stride_tricks = importlib.import_module("numpy.lib.stride_tricks")
        base = np.zeros(3, np.float32)
        out = stride_tricks.as_strided(base, shape=(2, 3), strides=(0, 4))
        assert out.flags.writeable
        expect_error(args, {"out": out}, asel.SelectValueError, ("out", "stride 0"))
        assert not base.any()
    elif kind == "torch":
        base = xp.zeros(3)
        out = base.expand(2, 3)
        expect_error((_cond(xp), _arr(xp), _arr(xp)), {"out": out}, asel.SelectValueError, ("out",))
        assert not base.any()
    else:
        pytest.skip(f"{kind}: no writable self-overlapping views")


def test_out_torch_leaf_requires_grad(xp: ModuleType):
    if backend_kind(xp) != "torch":
        pytest.skip("torch-only")
    out = xp.zeros((2, 3), requires_grad=True)
    expect_error((_cond(xp), _arr(xp), _arr(xp)), {"out": out}, asel.SelectValueError, ("out",))


def test_out_whose_elements_overlap(xp: ModuleType):
    """The issue's reproducer: a zero-stride ``out`` refused cold and after a warm
    cache; elements that share bytes through other strides too; an interleaved but
    disjoint layout accepted."""
    if backend_kind(xp) != "numpy":
        pytest.skip("NumPy: as_strided makes any layout")
    stride_tricks = importlib.import_module("numpy.lib.stride_tricks")
    c, a = np.array([True, False, True, False]), np.arange(4.0)
    b = -a - 3
    base = np.zeros(1)
    zero = stride_tricks.as_strided(base, (4,), (0,), writeable=True)
    expect_error((c, a, b), {"out": zero}, asel.SelectValueError, ("out", "stride 0"))
    asel.select(c, a, b, out=np.empty(4))  # warms the decision cache for this signature
    expect_error((c, a, b), {"out": zero}, asel.SelectValueError, ("out", "stride 0"))
    assert not base.any()
    half = stride_tricks.as_strided(np.zeros(3), (4,), (4,), writeable=True)  # 8-byte items
    expect_error((c, a, b), {"out": half}, asel.SelectValueError, ("out", "share memory"))
    # (3, 2) float32 with strides (8, 12): offsets 0, 12, 8, 20, 16, 28 - disjoint.
    store = np.zeros(8, np.float32)
    interleaved = stride_tricks.as_strided(store, (3, 2), (8, 12), writeable=True)
    c2 = np.array([[True, False], [False, True], [True, True]])
    t2, e2 = np.ones((3, 2), np.float32), np.full((3, 2), 2.0, np.float32)
    assert asel.select(c2, t2, e2, out=interleaved) is interleaved
    assert bits_equal(np.array(interleaved), oracle_select(c2, t2, e2))
