"""The select family's kept decisions and NumPy's fast routes, against oracles.

Every call runs cold (no decision kept) and warm (the second and third calls
reuse the decision of the first), and each answer is compared with an
independent oracle: ``array_api_extra.apply_where`` for ``apply_where``,
``np.select`` / ``np.choose`` semantics (``tests/oracle.py``) for
``select_cases`` / ``select_n``. The key tests flip one thing a decision depends
on between calls of otherwise the same signature and check that the answer
(or the error) is the one a cold call gives. NumPy's kernel entry points for
``apply_where`` (``apply_take``, ``apply_put``) are checked against boolean
indexing for every item size they move.
"""

from __future__ import annotations

import struct
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from oracle import bits_equal, oracle_select_cases, oracle_select_n
from xp_helpers import backend_kind, from_numpy, to_numpy

import arrayselect as asel
from arrayselect._dispatch import memo as _family_memo


def _xpx_apply_where(*args: Any, **kwargs: Any) -> Any:
    xpx = pytest.importorskip("array_api_extra")
    return xpx.apply_where(*args, **kwargs)


@pytest.fixture(params=["compiled", "python"])
def memo_find(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The memo lookup of this build (``_fastcall.family_find``) or its Python steps
    (a build without a C compiler): each test using it runs with both.
    """
    if request.param == "python":
        monkeypatch.setattr(_family_memo, "_family_find", None)
    elif _family_memo._family_find is None:
        pytest.skip("built without arrayselect._dispatch._fastcall")
    return str(request.param)


def _cold_then_warm(fn: Callable[[], Any]) -> list[Any]:
    """``fn()`` with no decision kept, then twice more (the decision reused)."""
    _family_memo.clear()
    return [fn() for _ in range(3)]


def _eager(xp: ModuleType) -> bool:
    return backend_kind(xp) != "jax"


# --------------------------------------------------------------------------- apply_where


def _apply_where_calls(xp: ModuleType) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """apply_where calls of every form and layout, each (name, args, kwargs)."""
    rng = np.random.default_rng(28)
    f = lambda a: from_numpy(xp, np.asarray(a))  # noqa: E731
    x = f(rng.standard_normal((3, 4)))
    x32 = f(rng.standard_normal((3, 4)).astype(np.float32))
    y = f(rng.standard_normal(4).astype(np.float32))
    col = f(rng.standard_normal((3, 1)))
    i16 = f(rng.integers(-5, 5, (3, 4), dtype=np.int16))
    flat = f(rng.standard_normal(1000))
    log, neg = xp.log, lambda a: -a
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
        ("fill float", (x > 0, x, log), {"fill_value": np.nan}),
        ("fill float32", (x32 > 0, x32, log), {"fill_value": -1.5}),
        ("fill int", (i16 > 0, i16, neg), {"fill_value": 7}),
        ("fill bool on ints", (i16 > 0, i16, neg), {"fill_value": True}),
        ("fill complex", (x > 0, x, log), {"fill_value": 1j}),
        ("f2", (x > 0, x, log, neg), {}),
        ("f2 of another dtype", (x > 0, x, log, lambda a: a > 1), {}),
        ("two args", (x > 0, (x, y), lambda a, b: a * b, lambda a, b: a - b), {}),
        ("array fill", (x > 0, x, log), {"fill_value": y}),
        ("broadcast cond", (col > 0, x, log), {"fill_value": 0.0}),
        ("broadcast args", (x > 0, (col, y), lambda a, b: a + b), {"fill_value": 0.0}),
        ("all true", (x == x, x, neg), {"fill_value": 0.0}),
        ("all false", (x != x, x, neg), {"fill_value": 2.0}),
        ("all false f2", (x != x, x, neg, log), {}),
        ("10^3", (flat > 0, flat, log), {"fill_value": np.nan}),
        ("10^3 f2", (flat > 0, flat, log, neg), {}),
        ("empty", (f(np.zeros((0, 3))) > 0, f(np.zeros((0, 3))), log), {"fill_value": 1.0}),
        ("0-d", (f(np.array(2.0)) > 0, f(np.array(2.0)), log), {"fill_value": 1.0}),
    ]
    if backend_kind(xp) in ("numpy", "cupy", "torch"):
        calls.append(("transposed", (x.T > 0, x.T, log), {"fill_value": 0.0}))
        calls.append(("step-2 slices", (flat[::2] > 0, flat[::2], log, neg), {}))
    return calls


def test_apply_where_cold_and_warm_match_array_api_extra(xp: ModuleType) -> None:
    for name, args, kwargs in _apply_where_calls(xp):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the both-sided log of negatives (JAX, Dask)
            try:
                expected = to_numpy(_xpx_apply_where(*args, **kwargs))
            except TypeError:  # a promotion the library refuses (a bool beside ints)
                continue
            got = _cold_then_warm(lambda a=args, k=kwargs: asel.apply_where(*a, **k))
        for k, result in enumerate(got):
            assert bits_equal(to_numpy(result), expected), (name, k)


def test_apply_where_functions_see_only_their_elements_warm(xp: ModuleType) -> None:
    """Cold and warm, f1 and f2 get exactly the elements of their side, in C order."""
    if not _eager(xp) or backend_kind(xp) == "dask":
        pytest.skip("JAX evaluates both sides everywhere; Dask calls them block by block")
    x_np = np.random.default_rng(3).standard_normal((4, 250))
    x, mask = from_numpy(xp, x_np), x_np > 0
    seen: dict[str, list[np.ndarray]] = {"f1": [], "f2": []}

    def side(name: str, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def call(a: Any) -> Any:
            seen[name].append(to_numpy(a))
            return fn(a)

        return call

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # log never sees a negative
        for _ in _cold_then_warm(
            lambda: asel.apply_where(x > 0, x, side("f1", xp.log), side("f2", xp.abs))
        ):
            pass
    assert len(seen["f1"]) == len(seen["f2"]) == 3
    for got in seen["f1"]:
        assert bits_equal(got, x_np[mask])
    for got in seen["f2"]:
        assert bits_equal(got, x_np[~mask])


def test_apply_where_callback_errors_warm_leave_inputs_untouched(xp: ModuleType) -> None:
    if backend_kind(xp) == "dask":
        pytest.skip("Dask calls the functions when the result is computed")
    x_np = np.array([[-1.0, 2.0, 3.0], [4.0, -5.0, 6.0]])
    x = from_numpy(xp, x_np)

    def boom(a: Any) -> Any:
        raise ZeroDivisionError("boom")

    def wrong_shape(a: Any) -> Any:
        return a[:1] if a.shape[0] else a

    for f1, pattern in ((boom, "f1 raised ZeroDivisionError"), (wrong_shape, "f1 must")):
        for _ in range(2):  # a valid call of the same signature keeps a decision
            asel.apply_where(x > 0, x, xp.abs, fill_value=0.0)
        for _ in range(2):
            with pytest.raises(asel.SelectCallbackError, match=pattern):
                asel.apply_where(x > 0, x, f1, fill_value=0.0)
            assert bits_equal(to_numpy(x), x_np)


def _outcome(fn: Callable[[], Any]) -> tuple[Any, ...]:
    """What a call gives: the error's class and message, or the result's dtype and bits
    (a library's own error too: array-api-strict refuses a float beside int16).
    """
    try:
        got = to_numpy(fn())
    except Exception as exc:
        return (type(exc), str(exc))
    return (str(got.dtype), got.tobytes(), got.shape)


def test_apply_where_memo_cannot_change_an_answer(xp: ModuleType, memo_find: str) -> None:
    """Calls that differ from each other only in one thing a decision depends on (a
    dtype, a shape, cond's dtype, a Python scalar's type, args as a tuple or not, f2
    or fill_value, how many args) give, warm and in any order, what they give cold.
    """
    f = lambda a: from_numpy(xp, np.asarray(a))  # noqa: E731
    x = f(np.array([1.0, -2.0, 3.0]))
    x32, x16 = f(np.array([1.0, -2.0, 3.0], np.float32)), f(np.array([1, -2, 3], np.int16))
    row, col = f(np.array([[1.0, -2.0, 3.0]])), f(np.array([[1.0], [-2.0]]))
    c = x > 0
    c8 = f(np.array([1, 0, 1], np.int8))
    neg, add = (lambda a: -a), (lambda a, b: a + b)
    calls: list[Callable[[], Any]] = [
        lambda: asel.apply_where(c, x, neg, fill_value=0.5),
        lambda: asel.apply_where(c, x32, neg, fill_value=0.5),
        lambda: asel.apply_where(c, x16, neg, fill_value=0.5),
        lambda: asel.apply_where(c, x16, neg, fill_value=5),
        lambda: asel.apply_where(c, x16, neg, fill_value=True),
        lambda: asel.apply_where(c, x, neg, fill_value=1j),
        lambda: asel.apply_where(c8, x, neg, fill_value=0.5),  # not boolean: refused
        lambda: asel.apply_where(c, row, neg, fill_value=0.5),
        lambda: asel.apply_where(c, col, neg, fill_value=0.5),
        lambda: asel.apply_where(c, (x,), neg, fill_value=0.5),
        lambda: asel.apply_where(c, (x, x32), add, fill_value=0.5),
        lambda: asel.apply_where(c, (x, row), add, fill_value=0.5),
        lambda: asel.apply_where(c, x, neg, neg),
        lambda: asel.apply_where(c, x, neg, fill_value=x32),
        lambda: asel.apply_where(c, x, neg, fill_value=f(np.array([[1.0], [2.0]]))),
        lambda: asel.apply_where(c, f(np.ones(4)), neg, fill_value=0.5),  # shapes: refused
    ]
    cold = []
    for call in calls:
        _family_memo.clear()
        cold.append(_outcome(call))
    for _ in range(2):
        assert [_outcome(call) for call in calls] == cold
    for _ in range(2):  # the other order
        assert [_outcome(call) for call in reversed(calls)] == cold[::-1]


def test_apply_where_fill_value_objects_cannot_change_an_answer(xp: ModuleType) -> None:
    """Python fill values that are equal but differ (0.0 and -0.0, two nan objects),
    one object beside arguments of other dtypes, and a value the result dtype cannot
    hold after one it can, give warm and in any order what they give cold (NumPy
    keeps each scalar fill's checked array per value: its type and bits).
    """
    from arrayselect.backends.shared import numpy_family

    f = lambda a: from_numpy(xp, np.asarray(a))  # noqa: E731
    x, x32 = f(np.array([1.0, -2.0, 3.0])), f(np.array([1.0, -2.0, 3.0], np.float32))
    u8 = f(np.array([1, 2, 3], np.uint8))
    c = x > 0
    neg = lambda a: -a  # noqa: E731
    nan, other_nan, big = float("nan"), float("inf") - float("inf"), 299
    big += 1  # 300, made at run time: not the constant 300 of any other code
    calls: list[Callable[[], Any]] = [
        lambda: asel.apply_where(c, x, neg, fill_value=0.0),
        lambda: asel.apply_where(c, x, neg, fill_value=-0.0),
        lambda: asel.apply_where(c, x32, neg, fill_value=-0.0),
        lambda: asel.apply_where(c, x, neg, fill_value=nan),
        lambda: asel.apply_where(c, x32, neg, fill_value=other_nan),
        lambda: asel.apply_where(c, u8, neg, fill_value=3),
        lambda: asel.apply_where(c, u8, neg, fill_value=big),  # out of uint8's range
        lambda: asel.apply_where(c, x, neg, fill_value=big),
    ]
    cold = []
    for call in calls:
        _family_memo.clear()
        numpy_family._fills.clear()
        cold.append(_outcome(call))
    assert cold[0] != cold[1]  # the sign of zero is in the bits
    assert cold[6][0] is asel.ScalarOverflowError
    for _ in range(2):
        assert [_outcome(call) for call in calls] == cold
    for _ in range(2):  # the other order
        assert [_outcome(call) for call in reversed(calls)] == cold[::-1]


def test_numpy_scalar_fills_are_kept_per_value_not_per_object() -> None:
    """A fill made anew on every call (``fill_value=float("nan")``) reuses the checked
    array kept for its value; a nan of other bits and the other zero get their own."""
    from arrayselect.backends.shared import numpy_family

    x = np.array([1.0, -2.0, 3.0])
    numpy_family._fills.clear()
    fills = [float("nan"), float("inf") - float("inf"), 0.0, -0.0]
    # each built at run time, so no two are one object
    again = [float("nan"), float("inf") - float("inf"), float("0.0"), float("-0.0")]
    for value in fills:
        asel.apply_where(x > 0, x, np.negative, fill_value=value)
    kept = len(numpy_family._fills)
    # the first fill of each bits under its object's id and under its bits; a later
    # fill of the same bits (inf - inf is the default nan on aarch64 and s390x) finds
    # that entry and adds none
    assert kept == 2 * len({struct.pack("<d", v) for v in fills})
    for value, same in zip(fills, again, strict=True):
        assert same is not value
        got = asel.apply_where(x > 0, x, np.negative, fill_value=same)
        assert struct.pack("<d", got[1]) == struct.pack("<d", same)  # its own bits
    assert len(numpy_family._fills) == kept  # each found by its value: nothing new


def test_family_memo_keys_hold_force_portable(memo_find: str) -> None:
    """A decision made for the native backend is not used under force_portable (where
    the portable backend serves NumPy), nor the other way round.
    """
    x = np.array([1.0, -2.0, 3.0])
    _family_memo.clear()
    calls: list[Callable[[], Any]] = [
        lambda: asel.apply_where(x > 0, x, np.negative, fill_value=0.0),
        lambda: asel.select_cases([x > 0], [x], 0.0),
        lambda: asel.select_n(np.array([0, 1, 0]), x, -x),
    ]
    for call in calls:
        native = call()
        kept = len(_family_memo._memos)
        with asel.force_portable():
            portable = call()
            assert len(_family_memo._memos) == kept + 1  # a decision of its own
            call()
            assert len(_family_memo._memos) == kept + 1
        assert bits_equal(call(), native) and bits_equal(portable, native)


def test_apply_where_jax_weak_type_is_in_the_key(memo_find: str) -> None:
    """A weakly typed JAX array promotes like a Python scalar: a decision for a strong
    float32 ``fill_value`` is not reused for a weak one (or the other way round).
    """
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.array([1.0, -2.0, 3.0], jnp.float16)
    strong, weak = jnp.array(0.5, jnp.float32), jnp.asarray(0.5)
    for first, second in ((strong, weak), (weak, strong)):
        _family_memo.clear()
        asel.apply_where(x > 0, x, jnp.negative, fill_value=first)
        got = asel.apply_where(x > 0, x, jnp.negative, fill_value=second)
        expected = _xpx_apply_where(x > 0, x, jnp.negative, fill_value=second)
        assert got.dtype == expected.dtype
        assert bits_equal(to_numpy(got), to_numpy(expected))


def test_compiled_memo_lookup_gives_what_the_python_steps_give(xp: ModuleType) -> None:
    """``family_find`` (C) returns, for every call of every form, the very memo that
    ``lookup(signature(...))`` returns, ``None`` where that gives ``None``, and
    nothing once the backend that decided is no longer the registry's.
    """
    find = _family_memo._family_find
    if find is None:
        pytest.skip("built without arrayselect._dispatch._fastcall")
    from arrayselect._dispatch import registry as _registry

    def compiled(kind: str, operands: tuple[Any, ...]) -> Any:
        return find(
            kind,
            operands,
            _registry.portable_forced(),
            _family_memo._layouts,
            _registry.tracing_checks,
            _family_memo._memos,
            _registry._backends,
        )

    seen: list[tuple[str, tuple[Any, ...]]] = []
    real = _family_memo.find

    def spy(kind: str, operands: Any) -> Any:
        seen.append((kind, tuple(operands)))
        return real(kind, operands)

    _family_memo.clear()
    calls = _apply_where_calls(xp)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_family_memo, "find", spy)
        for _ in range(2):
            for _name, args, kwargs in calls:
                _outcome(lambda: asel.apply_where(*args, **kwargs))  # noqa: B023
            x = from_numpy(xp, np.array([1.0, -2.0, 3.0]))
            asel.select_cases([x > 0, x < -1], [x, -x], 0.0)
            asel.select_n(from_numpy(xp, np.array([0, 1, 0])), x, -x)
    assert len(seen) > 2 * len(calls)
    found = 0
    for kind, operands in seen:
        expected = _family_memo.lookup(_family_memo.signature(kind, operands))
        got = compiled(kind, operands)
        # NotImplemented: no layout for these operand types (mixed signers, such as
        # NumPy's 0-d scalars beside arrays), where find() takes the Python steps
        assert got is expected or got is NotImplemented, kind
        found += got is not None and got is not NotImplemented
    assert found >= len(calls) - 2  # warm calls found their decisions in C
    # a decision whose backend the registry no longer holds is not used
    kind, operands = next((k, o) for k, o in seen if compiled(k, o) not in (None, NotImplemented))
    memo = compiled(kind, operands)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(_registry._backends, memo.registered_as, object())
        assert compiled(kind, operands) is None
        assert _family_memo.lookup(_family_memo.signature(kind, operands)) is None


# --------------------------------------------------------------------------- select_cases, select_n


def test_select_cases_and_select_n_cold_and_warm_match_the_oracles(xp: ModuleType) -> None:
    rng = np.random.default_rng(12)
    f = lambda a: from_numpy(xp, np.asarray(a))  # noqa: E731
    n = 1000
    conds = [rng.random(n) < 0.25 for _ in range(4)]
    choices = [rng.random(n).astype(np.float32) for _ in range(4)]
    default = rng.random(n).astype(np.float32)
    which = rng.integers(0, 4, n, dtype=np.int32)
    int_conds = [c.astype(np.int16) * rng.integers(1, 9, n, dtype=np.int16) for c in conds]
    rows: list[tuple[Callable[[], Any], np.ndarray]] = [
        (
            lambda: asel.select_cases([f(c) for c in conds], [f(c) for c in choices], f(default)),
            oracle_select_cases(conds, choices, default),
        ),
        (
            lambda: asel.select_cases([f(c) for c in int_conds], [f(c) for c in choices], 0.5),
            oracle_select_cases([c != 0 for c in int_conds], choices, np.full(n, 0.5, np.float32)),
        ),
        (
            lambda: asel.select_cases(  # broadcast operands
                [f(conds[0].reshape(10, 100))], [f(choices[0][:100])], f(default[0])
            ),
            oracle_select_cases(
                [conds[0].reshape(10, 100)],
                [np.broadcast_to(choices[0][:100], (10, 100))],
                np.broadcast_to(default[0], (10, 100)),
            ),
        ),
        (
            lambda: asel.select_n(f(which), *[f(c) for c in choices]),
            oracle_select_n(which, choices),
        ),
        (
            lambda: asel.select_n(f(which.astype(np.uint8)), *[f(c) for c in choices]),
            oracle_select_n(which, choices),
        ),
        (
            lambda: asel.select_n(f(which.reshape(10, 100)), f(choices[0][:100]), 2.5, -1.0, 0.0),
            oracle_select_n(
                which.reshape(10, 100),
                [
                    np.broadcast_to(choices[0][:100], (10, 100)),
                    *[np.full((10, 100), v, np.float32) for v in (2.5, -1.0, 0.0)],
                ],
            ),
        ),
    ]
    if backend_kind(xp) == "numpy":  # byte orders other libraries do not have
        swapped = which.astype(">i4")
        rows.append(
            (
                lambda: asel.select_n(swapped, *choices),
                oracle_select_n(which, choices),
            )
        )
        swapped_conds = [c.astype(">i2") for c in int_conds]
        rows.append(
            (
                lambda: asel.select_cases(swapped_conds, choices, default),
                oracle_select_cases([c != 0 for c in int_conds], choices, default),
            )
        )
    for k, (call, expected) in enumerate(rows):
        for result in _cold_then_warm(call):
            assert bits_equal(to_numpy(result), expected), k


def test_select_n_index_out_of_range_warm(xp: ModuleType) -> None:
    """Warm (the fast route), a bad index is the core's error, on eager libraries."""
    if not _eager(xp):
        pytest.skip("JAX clamps indices (lax.select_n)")
    f = lambda a: from_numpy(xp, np.asarray(a))  # noqa: E731
    cases = [f(np.arange(1000, dtype=np.float32) * k) for k in range(3)]
    bad_np = np.full(1000, 1, np.int32)
    bad_np[500] = 3
    good, bad = f(np.zeros(1000, np.int32)), f(bad_np)
    asel.select_n(good, *cases)
    asel.select_n(good, *cases)
    with pytest.raises(asel.SelectValueError, match="which holds 3, but select_n has 3 cases"):
        to_numpy(asel.select_n(bad, *cases))  # Dask: when computed


# --------------------------------------------------------------------------- NumPy's kernel


def _usable_isas() -> list[str]:
    family = pytest.importorskip("arrayselect.backends.shared.numpy_family")
    if not family.HAVE_KERNEL:
        return []
    from arrayselect.backends.shared import kernel

    return list(kernel.isa_info()["usable"])


@pytest.fixture(params=_usable_isas())
def isa(request: pytest.FixtureRequest) -> Any:
    """Each instruction set the kernel's loops can use here, in turn."""
    from arrayselect.backends.shared import kernel

    previous = kernel.isa_info()["current"]
    kernel.set_isa(request.param)
    yield request.param
    kernel.set_isa(previous)


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "float16", "int32", "float32", "float64", "complex128", ">f8"]
)
@pytest.mark.parametrize("density", [0.0, 0.03, 0.5, 0.97, 1.0])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 1000), (2, 3, 5), (130,), (4099,)])
def test_kernel_apply_take_and_put_match_boolean_indexing(
    dtype: str, density: float, shape: tuple[int, ...], isa: str
) -> None:
    from arrayselect.backends.shared.kernel_cases import (
        kernel_apply_put,
        kernel_apply_take,
    )

    rng = np.random.default_rng(len(shape) * 100 + int(density * 10))
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize)
    x = raw.astype(np.uint8).view(dtype).reshape(shape)
    if dtype == "bool":
        x = rng.random(shape) < 0.5
    mask = rng.random(shape) < density
    taken = kernel_apply_take(mask, x)
    assert taken.dtype == x.dtype and bits_equal(taken, x[mask])
    fill = x.reshape(-1)[:1].copy().reshape(()) if x.size else np.zeros((), x.dtype)
    expected = np.empty(shape, x.dtype)
    expected[...] = fill
    expected[mask] = taken
    got = kernel_apply_put(mask, taken, fill)
    assert got.flags.c_contiguous and bits_equal(got, expected)
    other = x[~mask][::-1].copy()
    expected[~mask] = other
    assert bits_equal(kernel_apply_put(mask, taken, other), expected)


def test_kernel_apply_take_and_put_decline_what_they_do_not_read() -> None:
    """NotImplemented (NumPy's route then) for layouts and lengths they do not take."""
    family = pytest.importorskip("arrayselect.backends.shared.numpy_family")
    if not family.HAVE_KERNEL:
        pytest.skip("a build without the kernel")
    from arrayselect.backends.shared.kernel_cases import (
        kernel_apply_put,
        kernel_apply_take,
    )

    x = np.arange(12.0).reshape(3, 4)
    mask = x % 3 == 0
    assert kernel_apply_take(mask, x.T) is NotImplemented  # not C-contiguous
    assert kernel_apply_take(mask.T, x.T.copy()) is NotImplemented  # cond not C-contiguous
    assert kernel_apply_take(mask.reshape(4, 3), x) is NotImplemented  # another shape
    assert kernel_apply_take(mask.astype(np.int8), x) is NotImplemented  # not bool
    assert kernel_apply_take(mask, x.astype(object)) is NotImplemented  # references
    assert kernel_apply_take(mask, np.zeros((3, 4), "S3")) is NotImplemented  # 3-byte items
    taken = x[mask]
    fill = np.zeros(())
    assert kernel_apply_put(mask, taken[:-1], fill) is NotImplemented  # not the count
    assert kernel_apply_put(mask, taken, np.zeros(3)) is NotImplemented  # not the count
    assert kernel_apply_put(mask, taken, np.zeros((), np.float32)) is NotImplemented
    assert kernel_apply_put(mask, taken[::-1], fill) is NotImplemented  # not C-contiguous
    assert kernel_apply_put(mask.T, taken, fill) is NotImplemented  # cond not C-contiguous
