"""The bad-input table: one parametrized test over every case x every backend.

Each case asserts the exception class (from :mod:`arrayselect`), that the
message names the offending argument (and, for shapes, the shapes), and that
no input array was modified.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from oracle import bits_equal
from xp_helpers import (
    backend_kind,
    dtype_skip_reason,
    from_numpy,
    select_after_warming,
    supports_out,
    to_numpy,
)

import arrayselect as asel

S = (2, 3, 4, 5)


@dataclass
class Inputs:
    """What a case builds: positional args and keyword options of ``select``."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Case:
    id: str
    build: Callable[[ModuleType], Inputs]
    exc: type[Exception] | Callable[[ModuleType], type[Exception]]
    words: tuple[str, ...] | Callable[[ModuleType], tuple[str, ...]]
    only: Callable[[ModuleType], str | None] = lambda xp: None  # reason to skip


def _arr(xp, shape=(2, 3), dtype="float32", value=1):
    if dtype == "bool":
        return from_numpy(xp, np.ones(shape, dtype=bool))
    return from_numpy(xp, np.full(shape, value).astype(dtype))


def _cond(xp, shape=(2, 3)):
    return from_numpy(xp, (np.arange(int(np.prod(shape))) % 2 == 0).reshape(shape))


def _std(xp, **kwargs) -> Inputs:
    return Inputs((_cond(xp), _arr(xp), _arr(xp, value=2)), kwargs)


def _foreign(xp, a: np.ndarray):
    """``a`` as an array of another library than ``xp`` (never NumPy for JAX)."""
    kind = backend_kind(xp)
    if kind == "numpy":
        try:
            import torch
        except ImportError:
            pass
        else:
            return torch.from_numpy(np.array(a))
    if kind in ("numpy", "jax", "cupy"):
        strict = pytest.importorskip("array_api_strict", reason="array_api_strict not installed")
        return strict.asarray(a)
    return np.array(a)


def _shapes(cond, then, else_, **kwargs):
    def build(xp):
        return Inputs((_cond(xp, cond), _arr(xp, then), _arr(xp, else_, value=2)), kwargs)

    return build


def _out_exc(shape_or_dtype_exc):
    """``out=`` on a library without it is a SelectTypeError whatever else is wrong."""

    def exc(xp):
        return shape_or_dtype_exc if supports_out(xp) else asel.SelectTypeError

    return exc


def _needs(dtype):
    return lambda xp: dtype_skip_reason(xp, dtype)


def _only_numpy(xp):
    return None if backend_kind(xp) == "numpy" else "NumPy-only input (NumPy dtype/flags)"


def _table_like(module: str) -> Any:
    """An object of a class from ``module`` (pandas, polars), without importing it."""
    cls = type("Series", (), {"__module__": module, "to_numpy": lambda self: np.ones(3)})
    return cls()


MODES_LISTED = ("auto_broadcast", "'none'", "'numpy'", "'pdpd'")
COND_BROADCASTS_LISTED = ("cond_broadcast", "'unidirectional'", "'multidirectional'")

CASES = [
    # --- cond dtype
    Case(
        "cond-float",
        lambda xp: Inputs((_arr(xp, dtype="float32"), _arr(xp), _arr(xp))),
        asel.SelectTypeError,
        ("cond", "float32"),
    ),
    Case(
        "cond-complex",
        lambda xp: Inputs((_arr(xp, dtype="complex64"), _arr(xp), _arr(xp))),
        asel.SelectTypeError,
        ("cond", "complex64"),
    ),
    # --- then/else dtypes
    Case(
        "then-else-dtypes-differ",
        lambda xp: Inputs((_cond(xp), _arr(xp, dtype="int32"), _arr(xp, dtype="float32"))),
        asel.SelectTypeError,
        ("then", "else", "int32", "float32"),
    ),
    Case(
        "then-else-int-widths-differ",
        lambda xp: Inputs((_cond(xp), _arr(xp, dtype="int8"), _arr(xp, dtype="int16"))),
        asel.SelectTypeError,
        ("then", "else", "int8", "int16"),
    ),
    Case(
        "scalars-of-two-types",
        lambda xp: Inputs((_cond(xp, ()), 1, 2.5)),
        asel.SelectTypeError,
        ("then", "else"),
    ),
    # --- non-arrays
    Case(
        "cond-masked-array",
        lambda xp: Inputs((np.ma.array([True, False, True], mask=[1, 0, 0]), _arr(xp), 0.0)),
        asel.SelectTypeError,
        ("cond", "masked array", "numpy.ma.where"),
        only=_only_numpy,
    ),
    Case(
        "then-masked-array",
        lambda xp: Inputs((_arr(xp, dtype="bool"), np.ma.array(np.ones((2, 3)), mask=True), 0.0)),
        asel.SelectTypeError,
        ("then", "masked array", "numpy.ma.where"),
        only=_only_numpy,
    ),
    Case(
        "then-pandas-series",
        lambda xp: Inputs((_arr(xp, dtype="bool"), _table_like("pandas.core.series"), 0.0)),
        asel.SelectTypeError,
        ("then", "pandas.core.series.Series", ".to_numpy()"),
    ),
    Case(
        "cond-polars-series",
        lambda xp: Inputs((_table_like("polars.series.series"), _arr(xp), _arr(xp))),
        asel.SelectTypeError,
        ("cond", "polars", ".to_numpy()"),
    ),
    Case(
        "cond-list",
        lambda xp: Inputs(([[True, False, True]] * 2, _arr(xp), _arr(xp))),
        asel.SelectTypeError,
        ("cond", "list"),
    ),
    Case(
        "then-list",
        lambda xp: Inputs((_cond(xp), [[1.0] * 3] * 2, _arr(xp))),
        asel.SelectTypeError,
        ("then", "list"),
    ),
    Case(
        "else-tuple",
        lambda xp: Inputs((_cond(xp), _arr(xp), (1.0, 2.0, 3.0))),
        asel.SelectTypeError,
        ("else", "tuple"),
    ),
    Case(
        "then-None",
        lambda xp: Inputs((_cond(xp), None, _arr(xp))),
        asel.SelectTypeError,
        ("then", "None"),
    ),
    Case(
        "else-str",
        lambda xp: Inputs((_cond(xp), _arr(xp), "abc")),
        asel.SelectTypeError,
        ("else", "str"),
    ),
    Case(
        "cond-None",
        lambda xp: Inputs((None, _arr(xp), _arr(xp))),
        asel.SelectTypeError,
        ("cond", "None"),
    ),
    Case(
        "cond-python-bool",
        lambda xp: Inputs((True, _arr(xp), _arr(xp))),
        asel.SelectTypeError,
        ("cond", "bool"),
    ),
    Case(
        "cond-python-int",
        lambda xp: Inputs((1, _arr(xp), _arr(xp))),
        asel.SelectTypeError,
        ("cond", "int"),
    ),
    Case(
        "out-list",
        lambda xp: _std(xp, out=[[0.0] * 3] * 2),
        asel.SelectTypeError,
        ("out", "list"),
    ),
    # --- options
    Case(
        "auto_broadcast-unknown",
        lambda xp: _std(xp, auto_broadcast="bogus"),
        asel.SelectValueError,
        ("bogus", *MODES_LISTED),
    ),
    Case(
        "auto_broadcast-wrong-case",
        lambda xp: _std(xp, auto_broadcast="NumPy"),
        asel.SelectValueError,
        ("NumPy", *MODES_LISTED),
    ),
    Case(
        "auto_broadcast-None",
        lambda xp: _std(xp, auto_broadcast=None),
        asel.SelectValueError,
        MODES_LISTED,
    ),
    Case(
        "cond_broadcast-unknown",
        lambda xp: _std(xp, cond_broadcast="sideways"),
        asel.SelectValueError,
        ("sideways", *COND_BROADCASTS_LISTED),
    ),
    Case(
        "axis-minus-2",
        lambda xp: _std(xp, auto_broadcast="pdpd", axis=-2),
        asel.SelectValueError,
        ("axis", "-2", "-1"),
    ),
    Case(
        "axis-float",
        lambda xp: _std(xp, auto_broadcast="pdpd", axis=1.0),
        asel.SelectTypeError,
        ("axis", "float"),
    ),
    Case(
        "axis-str",
        lambda xp: _std(xp, auto_broadcast="pdpd", axis="1"),
        asel.SelectTypeError,
        ("axis", "str"),
    ),
    Case(
        "axis-bool",
        lambda xp: _std(xp, auto_broadcast="pdpd", axis=True),
        asel.SelectTypeError,
        ("axis", "bool"),
    ),
    Case(
        "axis-None",
        lambda xp: _std(xp, auto_broadcast="pdpd", axis=None),
        asel.SelectTypeError,
        ("axis", "None"),
    ),
    Case(
        "axis-with-numpy-mode",
        lambda xp: _std(xp, axis=0),
        asel.SelectValueError,
        ("axis", "'pdpd'", "'numpy'"),
    ),
    Case(
        "axis-with-none-mode",
        lambda xp: _std(xp, auto_broadcast="none", axis=1),
        asel.SelectValueError,
        ("axis", "'pdpd'", "'none'"),
    ),
    Case(
        "multidirectional-with-none",
        lambda xp: _std(xp, auto_broadcast="none", cond_broadcast="multidirectional"),
        asel.SelectValueError,
        ("cond_broadcast", "'numpy'", "'unidirectional'"),
    ),
    Case(
        "multidirectional-with-pdpd",
        lambda xp: _std(xp, auto_broadcast="pdpd", cond_broadcast="multidirectional"),
        asel.SelectValueError,
        ("cond_broadcast", "'numpy'", "'unidirectional'"),
    ),
    # --- mixed libraries
    Case(
        "mixed-then-foreign",
        lambda xp: Inputs((_cond(xp), _foreign(xp, np.ones((2, 3), np.float32)), _arr(xp))),
        asel.SelectTypeError,
        ("then", "librar"),
    ),
    Case(
        "mixed-cond-foreign",
        lambda xp: Inputs((_foreign(xp, np.ones((2, 3), bool)), _arr(xp), _arr(xp))),
        asel.SelectTypeError,
        ("cond", "librar"),
    ),
    Case(
        "mixed-else-foreign-scalar-then",
        lambda xp: Inputs((_cond(xp), 1.0, _foreign(xp, np.ones((2, 3), np.float32)))),
        asel.SelectTypeError,
        ("else", "librar"),
    ),
    # --- Python scalars: range and kind
    Case(
        "scalar-300-into-int8-else",
        lambda xp: Inputs((_cond(xp), _arr(xp, dtype="int8"), 300)),
        asel.ScalarOverflowError,
        ("else", "300", "int8"),
    ),
    Case(
        "scalar-300-into-int8-then",
        lambda xp: Inputs((_cond(xp), 300, _arr(xp, dtype="int8"))),
        asel.ScalarOverflowError,
        ("then", "300", "int8"),
    ),
    Case(
        "scalar-minus-1-into-uint8",
        lambda xp: Inputs((_cond(xp), _arr(xp, dtype="uint8"), -1)),
        asel.ScalarOverflowError,
        ("else", "-1", "uint8"),
    ),
    Case(
        "scalar-1e10-into-float16",
        lambda xp: Inputs((_cond(xp), _arr(xp, dtype="float16"), 1e10)),
        asel.ScalarOverflowError,
        ("else", "float16"),
        only=_needs("float16"),
    ),
    Case(
        "scalar-float-into-int",
        lambda xp: Inputs((_cond(xp), _arr(xp, dtype="int32"), 1.5)),
        asel.SelectTypeError,
        ("else", "float", "int32"),
    ),
    Case(
        "scalar-complex-into-float",
        lambda xp: Inputs((_cond(xp), 1j, _arr(xp, dtype="float32"))),
        asel.SelectTypeError,
        ("then", "complex", "float32"),
    ),
    Case(
        "scalar-bool-into-int",
        lambda xp: Inputs((_cond(xp), _arr(xp, dtype="int32"), True)),
        asel.SelectTypeError,
        ("else", "bool", "int32"),
    ),
    Case(
        "scalar-int-into-bool",
        lambda xp: Inputs((_cond(xp), 1, _arr(xp, dtype="bool"))),
        asel.SelectTypeError,
        ("then", "int", "bool"),
    ),
    Case(
        "scalars-int-beyond-int64",
        lambda xp: Inputs((_cond(xp, ()), 2**64, 0)),
        asel.ScalarOverflowError,
        ("then", str(2**64)),
    ),
    # --- out
    Case(
        "out-wrong-shape",
        lambda xp: _std(xp, out=_arr(xp, (3, 2), value=0)),
        _out_exc(asel.SelectShapeError),
        lambda xp: ("out", "(3, 2)", "(2, 3)") if supports_out(xp) else ("out",),
    ),
    Case(
        "out-broadcastable-shape",
        lambda xp: _std(xp, out=_arr(xp, (1, 2, 3), value=0)),
        _out_exc(asel.SelectShapeError),
        lambda xp: ("out", "(1, 2, 3)", "(2, 3)") if supports_out(xp) else ("out",),
    ),
    Case(
        "out-wrong-dtype",
        lambda xp: _std(xp, out=_arr(xp, dtype="float64", value=0)),
        _out_exc(asel.SelectTypeError),
        lambda xp: ("out", "float64", "float32") if supports_out(xp) else ("out",),
    ),
    Case(
        "out-other-library",
        lambda xp: _std(xp, out=_foreign(xp, np.zeros((2, 3), np.float32))),
        asel.SelectTypeError,
        ("out",),
    ),
    Case(
        "out-read-only-numpy",
        lambda xp: _std(xp, out=_read_only(np.zeros((2, 3), np.float32))),
        asel.SelectValueError,
        ("out", "read-only"),
        only=_only_numpy,
    ),
    # --- dtypes Select does not support (NumPy has them)
    Case(
        "then-else-str-dtype",
        lambda xp: Inputs((_cond(xp), np.full((2, 3), "a"), np.full((2, 3), "b"))),
        asel.SelectTypeError,
        ("then",),
        only=_only_numpy,
    ),
    Case(
        "then-else-datetime-dtype",
        lambda xp: Inputs(
            (_cond(xp), np.zeros((2, 3), "datetime64[s]"), np.zeros((2, 3), "datetime64[s]"))
        ),
        asel.SelectTypeError,
        ("then", "datetime64"),
        only=_only_numpy,
    ),
    Case(
        "cond-str-dtype",
        lambda xp: Inputs((np.full((2, 3), "x"), _arr(xp), _arr(xp))),
        asel.SelectTypeError,
        ("cond",),
        only=_only_numpy,
    ),
    # --- failing shapes, each mode
    Case(
        "none-else-differs",
        _shapes((2, 3), (2, 3), (3, 2), auto_broadcast="none"),
        asel.SelectShapeError,
        ("else", "(3, 2)", "(2, 3)", "none"),
    ),
    Case(
        "none-cond-rank",
        _shapes((1, 2, 3), (2, 3), (2, 3), auto_broadcast="none"),
        asel.SelectShapeError,
        ("cond", "(1, 2, 3)", "none"),
    ),
    Case(
        "numpy-then-else-clash",
        _shapes((), (2, 3), (4, 3)),
        asel.SelectShapeError,
        ("then", "else", "(2, 3)", "(4, 3)"),
    ),
    Case(
        "numpy-cond-one-way",
        _shapes((3, 5), S, S),
        asel.SelectShapeError,
        ("cond", "(3, 5)", "(2, 3, 4, 5)"),
    ),
    Case(
        "numpy-cond-rank-too-high",
        _shapes((2, 1, 1, 1, 1), S, S),
        asel.SelectShapeError,
        ("cond", "(2, 1, 1, 1, 1)", "(2, 3, 4, 5)"),
    ),
    Case(
        "numpy-cond-would-enlarge",
        _shapes((1, 1, 3), (1, 3, 1), (3, 1, 1)),
        asel.SelectShapeError,
        ("cond", "(1, 1, 3)"),
    ),
    Case(
        "numpy-multidirectional-clash",
        _shapes((2,), (3,), (3,), cond_broadcast="multidirectional"),
        asel.SelectShapeError,
        ("cond", "(2,)", "(3,)"),
    ),
    Case(
        "pdpd-else",
        _shapes((), S, (3,), auto_broadcast="pdpd"),
        asel.SelectShapeError,
        ("else", "(3,)", "(2, 3, 4, 5)", "pdpd"),
    ),
    Case(
        "pdpd-cond-axis",
        _shapes((4,), S, (), auto_broadcast="pdpd", axis=1),
        asel.SelectShapeError,
        ("cond", "(4,)", "(2, 3, 4, 5)", "pdpd"),
    ),
    Case(
        "pdpd-else-rank-too-high",
        _shapes((), (3, 4), (2, 3, 4), auto_broadcast="pdpd"),
        asel.SelectShapeError,
        ("else", "(2, 3, 4)", "(3, 4)"),
    ),
    Case(
        "pdpd-axis-past-end",
        _shapes((), S, (5,), auto_broadcast="pdpd", axis=4),
        asel.SelectShapeError,
        ("else", "(5,)", "(2, 3, 4, 5)"),
    ),
    Case(
        "pdpd-then-smaller",
        _shapes((), (3,), (2, 3), auto_broadcast="pdpd"),
        asel.SelectShapeError,
        ("else", "(2, 3)", "(3,)"),
    ),
]


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _snapshot(x: Any) -> np.ndarray | None:
    """A NumPy copy of array ``x`` (any library), or ``None`` for non-arrays."""
    if x is None or isinstance(x, (bool, int, float, complex, str, list, tuple)):
        return None
    if not hasattr(x, "dtype"):  # a stand-in of a table library: not an array
        return None
    return to_numpy(x)


def _resolve(value, xp):
    return value(xp) if callable(value) and not isinstance(value, type) else value


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input(xp: ModuleType, case: Case):
    reason = case.only(xp)
    if reason:
        pytest.skip(reason)
    inputs = case.build(xp)
    named = dict(zip(("cond", "then", "else"), inputs.args, strict=True))
    if "out" in inputs.kwargs:
        named["out"] = inputs.kwargs["out"]
    before = {k: _snapshot(v) for k, v in named.items()}
    exc = _resolve(case.exc, xp)
    words = _resolve(case.words, xp)

    with pytest.raises(exc) as info:
        asel.select(*inputs.args, **inputs.kwargs)

    assert isinstance(info.value, asel.SelectError)
    assert isinstance(info.value, (TypeError, ValueError))
    msg = str(info.value)
    for word in words:
        pattern = re.escape(word) if not word[0].isalnum() else r"\b" + re.escape(word)
        assert re.search(pattern, msg), f"{word!r} not in message: {msg}"
    for name, snap in before.items():
        if snap is not None:
            after = to_numpy(named[name])
            assert after.dtype == snap.dtype and after.shape == snap.shape, name
            assert bits_equal(after, snap), name
    # Once more after a valid call of the same signature has warmed every cache.
    _, again = select_after_warming(inputs.args, inputs.kwargs)
    assert type(again) is type(info.value) and str(again) == msg, (again, info.value)
    for name, snap in before.items():
        if snap is not None:
            assert bits_equal(to_numpy(named[name]), snap), f"{name} modified (warm)"


# Shape cases through select_shape too: the same exception class and argument.
SHAPE_CASES = [c for c in CASES if c.exc is asel.SelectShapeError]


@pytest.mark.parametrize("case", SHAPE_CASES, ids=lambda c: c.id)
def test_bad_shapes_select_shape(case: Case):
    inputs = case.build(np)
    shapes = [tuple(a.shape) for a in inputs.args]
    with pytest.raises(asel.SelectShapeError) as info:
        asel.select_shape(*shapes, **inputs.kwargs)
    for word in case.words:
        assert word in str(info.value), (word, str(info.value))


BAD_SELECT_SHAPE_ARGS = [
    (("x", (2,), (2,)), {}, asel.SelectTypeError, "cond_shape"),
    (((2,), 3, (2,)), {}, asel.SelectTypeError, "then_shape"),
    (((2,), (2,), (2.0,)), {}, asel.SelectTypeError, "else_shape"),
    (((2,), (-1,), (2,)), {}, asel.SelectValueError, "then_shape"),
    (((2,), (True,), (2,)), {}, asel.SelectTypeError, "then_shape"),
    (((2,), (2,), (2,)), {"auto_broadcast": "bogus"}, asel.SelectValueError, "auto_broadcast"),
    (((2,), (2,), (2,)), {"axis": 1}, asel.SelectValueError, "axis"),
    (((2,), (2,), (2,)), {"auto_broadcast": "pdpd", "axis": 0.5}, asel.SelectTypeError, "axis"),
    (
        ((2,), (2,), (2,)),
        {"auto_broadcast": "none", "cond_broadcast": "multidirectional"},
        asel.SelectValueError,
        "cond_broadcast",
    ),
]


@pytest.mark.parametrize(("args", "kwargs", "exc", "word"), BAD_SELECT_SHAPE_ARGS)
def test_bad_select_shape_arguments(args, kwargs, exc, word):
    with pytest.raises(exc, match=word):
        asel.select_shape(*args, **kwargs)


def test_devices_differ_array_api_strict(library):
    """SPEC §5: inputs on different devices are a ValueError naming them."""
    strict = pytest.importorskip("array_api_strict", reason="array_api_strict not installed")
    if str(library) != "array_api_strict":
        pytest.skip("array_api_strict is the CPU-only library with several devices")
    other = strict.Device("device1")
    cond = strict.asarray([True, False])
    then = strict.asarray([1.0, 2.0], device=other)
    with pytest.raises(asel.SelectValueError, match=r"\bcond\b.*\bthen\b|\bthen\b.*\bcond\b"):
        asel.select(cond, then, strict.asarray([3.0, 4.0]))


def test_devices_differ_torch(library):
    torch = pytest.importorskip("torch", reason="torch not installed")
    if str(library) != "torch":
        pytest.skip("torch-only: a 'meta' tensor is on another device than a CPU tensor")
    cond = torch.tensor([True, False])
    then = torch.ones(2, device="meta")
    with pytest.raises(asel.SelectValueError, match="device"):
        asel.select(cond, then, torch.zeros(2))


def test_odd_but_valid_options(xp: ModuleType):
    """NumPy integers are ints for ``axis`` (what a NumPy user expects)."""
    cond = from_numpy(xp, np.array([True, False]))
    then = from_numpy(xp, np.zeros((2, 3), np.int8))
    for axis in (np.int64(0), np.int32(0), 0):
        got = to_numpy(asel.select(cond, then, 1, auto_broadcast="pdpd", axis=axis))
        assert bits_equal(got, np.array([[0, 0, 0], [1, 1, 1]], dtype=np.int8))


@pytest.mark.parametrize(
    ("call", "value", "exc", "word"),
    [
        (asel.set_num_threads, 0, asel.SelectValueError, "[1, 256], got 0"),
        (asel.set_num_threads, 2.0, asel.SelectTypeError, "must be an int, got float"),
        (asel.set_num_threads, True, asel.SelectTypeError, "must be an int, got bool"),
        (asel.set_pool_limit, -5, asel.SelectValueError, ">= 0 bytes, got -5"),
        (asel.set_pool_limit, "1M", asel.SelectTypeError, "must be an int (bytes), got str"),
    ],
)
def test_settings_refusals_are_select_errors(call, value, exc, word):
    before = (asel.get_num_threads(), asel.get_pool_limit())
    with pytest.raises(exc, match=re.escape(word)) as info:
        call(value)
    # Still the builtin class, so that code catching ValueError/TypeError keeps working.
    assert isinstance(info.value, ValueError if exc is asel.SelectValueError else TypeError)
    assert (asel.get_num_threads(), asel.get_pool_limit()) == before


def test_two_big_scalars_name_the_default_dtype_readably():
    with pytest.raises(asel.ScalarOverflowError) as info:
        asel.select(np.array([True]), 2**70, 1)
    assert "of the library's default dtype int64, which two Python scalars" in str(info.value)


_PUBLIC_ERRORS = [
    "SelectError",
    "SelectShapeError",
    "SelectValueError",
    "SelectTypeError",
    "ScalarOverflowError",
    "SelectCallbackError",
]


@pytest.mark.parametrize("name", _PUBLIC_ERRORS)
def test_public_errors_show_their_public_name(name: str) -> None:
    """Tracebacks, reprs and the docs say arrayselect.X, never arrayselect._base.errors.X,
    and the errors still pickle (pickle finds them by that name)."""
    import pickle
    import traceback

    cls = getattr(asel, name)
    assert f"{cls.__module__}.{cls.__qualname__}" == f"arrayselect.{name}"
    assert repr(cls) == f"<class 'arrayselect.{name}'>"
    exc = cls("what was wrong")
    assert traceback.format_exception_only(exc)[-1] == f"arrayselect.{name}: what was wrong\n"
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is cls and again.args == exc.args


def test_a_raised_error_names_the_public_class() -> None:
    import traceback

    with pytest.raises(asel.SelectShapeError) as info:
        asel.select(np.ones(2, bool), np.ones(3), np.ones(4))
    assert "".join(traceback.format_exception(info.value)).count("arrayselect._base.errors") == 0
