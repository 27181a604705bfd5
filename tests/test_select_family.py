"""The select family (``select_n``, ``select_cases``, ``apply_where``) on every backend.

Each test runs once per library through the ``xp`` fixture and checks the
result against an independent reference: the index-arithmetic oracle of
``oracle.py`` (raw bytes, so NaN payloads and signed zeros count), the
libraries' own ``np.select``/``jnp.select``/``lax.select_n``, or
``array_api_extra.apply_where``; never arrayselect itself. The bad-input
contract (a ``SelectError`` naming the argument, inputs and ``out`` untouched,
cold and after warm calls of the same signature) has its own table here.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import array_api_compat as compat
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import bits_equal, oracle_select_cases, oracle_select_n
from xp_helpers import (
    ALL_DTYPES,
    Backend,
    backend_kind,
    from_numpy,
    fullgraph,
    jax_x64,
    numpy_dtype,
    skip_dtype,
    supports_out,
    to_numpy,
)

import arrayselect as asel

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# XLA's CPU select goes through float32 for these: NaN payloads are canonicalised.
_XLA_CANONICAL_NANS = frozenset({"bfloat16"})
SHAPE_SETS = (
    ((5,), [(5,), (5,), (5,)]),
    ((2, 3), [(3,), (2, 1), ()]),
    ((), [(2, 3), (1, 3), (2, 1)]),
    ((4, 1), [(1, 5), (4, 5), (5,)]),
    ((0, 3), [(3,), (1, 3), (0, 1)]),
)


def _random(dtype: np.dtype[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """Random bits of ``dtype`` (NaN payloads, -0.0, subnormals), valid bools."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    raw = rng.integers(0, 256, size=math.prod(shape) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _same(got: Any, expected: np.ndarray, xp: ModuleType, dtype: str) -> bool:
    got = to_numpy(got)
    if backend_kind(xp) == "jax" and dtype in _XLA_CANONICAL_NANS:
        g, e = got.astype(np.float64), expected.astype(np.float64)
        nan = np.isnan(g) & np.isnan(e)
        return got.shape == expected.shape and bits_equal(got[~nan], expected[~nan])
    return bits_equal(got, expected)


def _traced(xp: ModuleType) -> bool:
    return backend_kind(xp) == "jax"


# --------------------------------------------------------------------------- select_n


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shapes", SHAPE_SETS, ids=str)
def test_select_n_matches_the_oracle(xp: ModuleType, dtype: str, shapes: Any) -> None:
    rng = np.random.default_rng(7)
    which_shape, case_shapes = shapes
    which = rng.integers(0, 3, which_shape).astype(np.int8)
    cases = [_random(numpy_dtype(dtype), s, rng) for s in case_shapes]
    got = asel.select_n(from_numpy(xp, which), *(from_numpy(xp, c) for c in cases))
    assert _same(got, oracle_select_n(which, cases), xp, dtype)


@pytest.mark.parametrize("index_dtype", ["bool", "uint8", "int16", "int32", "int64", "uint64"])
def test_select_n_index_dtypes(xp: ModuleType, index_dtype: str) -> None:
    rng = np.random.default_rng(3)
    n = 2 if index_dtype == "bool" else 4
    which = rng.integers(0, n, (3, 4)).astype(index_dtype)
    cases = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(n)]
    got = asel.select_n(from_numpy(xp, which), *(from_numpy(xp, c) for c in cases))
    assert bits_equal(to_numpy(got), oracle_select_n(which, cases))


def test_select_n_python_scalars(xp: ModuleType) -> None:
    which = np.array([[0, 1, 2], [2, 1, 0]], np.int32)
    case = np.array([1.5, -0.0, 3.25], np.float32)
    got = asel.select_n(from_numpy(xp, which), 7, from_numpy(xp, case), -1.0)
    expected = oracle_select_n(
        which, [np.float32(7)[()] * np.ones(1, np.float32), case, np.full(1, -1, np.float32)]
    )
    assert bits_equal(to_numpy(got), expected)
    # Scalars alone take the library's default dtype for their type.
    only = to_numpy(asel.select_n(from_numpy(xp, which), 0, 1, 2))
    np.testing.assert_array_equal(only, which)
    assert only.dtype.kind == "i"


def test_select_n_many_cases(xp: ModuleType) -> None:
    n = 70  # more than np.choose takes
    which = (np.arange(140) * 37 % n).astype(np.int16).reshape(2, 70)
    cases = [np.full((70,), k, np.int32) for k in range(n)]
    got = asel.select_n(from_numpy(xp, which), *(from_numpy(xp, c) for c in cases))
    assert bits_equal(to_numpy(got), oracle_select_n(which, cases))


def test_select_n_out(xp: ModuleType) -> None:
    which = np.array([2, 0, 1, 1], np.uint8)
    cases = [np.arange(4, dtype=np.int64) + 10 * k for k in range(3)]
    args = [from_numpy(xp, c) for c in cases]
    if not supports_out(xp):
        with pytest.raises(asel.SelectTypeError, match="out= is not supported"):
            asel.select_n(from_numpy(xp, which), *args, out=from_numpy(xp, cases[0]))
        return
    out = from_numpy(xp, np.zeros(4, np.int64))
    got = asel.select_n(from_numpy(xp, which), *args, out=out)
    assert got is out
    assert bits_equal(to_numpy(out), oracle_select_n(which, cases))


@pytest.mark.parametrize(
    ("bad", "index_dtype"), [(-1, "int16"), (3, "int16"), (200, "int16"), (200, "uint64")]
)
def test_select_n_index_out_of_range(xp: ModuleType, bad: int, index_dtype: str) -> None:
    which = np.array([0, 1, bad, 2], index_dtype)
    cases = [np.full(4, k, np.float64) for k in range(3)]
    args = [from_numpy(xp, c) for c in cases]
    if _traced(xp):
        # lax.select_n clamps: documented in docs/select_family.md.
        got = to_numpy(asel.select_n(from_numpy(xp, which), *args))
        np.testing.assert_array_equal(got, np.clip(which, 0, 2).astype(np.float64))
        return
    out = from_numpy(xp, np.full(4, 9.0)) if supports_out(xp) else None
    with pytest.raises(asel.SelectValueError, match=rf"which holds {bad}, .* \[0, 3\)"):
        to_numpy(asel.select_n(from_numpy(xp, which), *args, out=out))  # Dask: at compute
    if out is not None:
        np.testing.assert_array_equal(to_numpy(out), np.full(4, 9.0))


def test_select_n_under_jax_transforms() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    which = jnp.array([0, 2, 1, 2])
    a, b, c = (jnp.arange(4.0) + 10 * k for k in range(3))
    jitted = jax.jit(lambda w, x, y, z: asel.select_n(w, x, y, z))
    assert bits_equal(
        np.asarray(jitted(which, a, b, c)), np.asarray(jax.lax.select_n(which, a, b, c))
    )
    grad = jax.grad(lambda x: asel.select_n(which, x, 2 * x, 3 * x).sum())(a)
    np.testing.assert_array_equal(np.asarray(grad), [1.0, 3.0, 2.0, 3.0])
    batched = jax.vmap(lambda w, x: asel.select_n(w, x, -x))(which[:, None] % 2, a[:, None])
    np.testing.assert_array_equal(np.asarray(batched)[:, 0], [0.0, 1.0, -2.0, 3.0])


def test_select_n_torch_autograd_and_compile() -> None:
    torch = pytest.importorskip("torch")
    which = torch.tensor([0, 2, 1, 2])
    x = torch.arange(4.0, requires_grad=True)
    asel.select_n(which, x, 2 * x, 3 * x).sum().backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 3.0, 2.0, 3.0])
    compiled = torch.compile(lambda w, a, b: asel.select_n(w, a, b), fullgraph=False)
    got = compiled(which % 2, torch.zeros(4), torch.ones(4))
    np.testing.assert_array_equal(got.numpy(), [0.0, 0.0, 1.0, 0.0])


# --------------------------------------------------------------------------- select_cases


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_select_cases_matches_the_oracle(xp: ModuleType, dtype: str) -> None:
    rng = np.random.default_rng(11)
    conds = [rng.random((3, 4)) < 0.3, (rng.integers(0, 3, (4,)) == 0), rng.random((3, 1)) < 0.5]
    conds[1] = conds[1].astype(np.int8)  # integers: nonzero is true
    choices = [_random(numpy_dtype(dtype), s, rng) for s in [(3, 4), (1, 4), ()]]
    default = _random(numpy_dtype(dtype), (4,), rng)
    got = asel.select_cases(
        [from_numpy(xp, c) for c in conds],
        [from_numpy(xp, c) for c in choices],
        from_numpy(xp, default),
    )
    assert _same(got, oracle_select_cases(conds, choices, default), xp, dtype)


def test_select_cases_promotes_like_the_library(xp: ModuleType) -> None:
    c = np.array([True, False, True, False])
    d = np.array([False, True, True, False])
    cases: list[tuple[list[Any], Any]] = [
        ([np.arange(4, dtype=np.int8), 3], 0),
        ([np.arange(4, dtype=np.int8), np.ones(4, np.float32)], 0.5),
        ([np.arange(4, dtype=np.uint8), np.ones(4, np.uint8)], True),
        ([np.arange(4, dtype=np.int16), np.arange(4, dtype=np.int32)], 0),
    ]
    kind = backend_kind(xp)
    for choices, default in cases:
        operands = [from_numpy(xp, x) if isinstance(x, np.ndarray) else x for x in choices]
        ref_dtype: Any
        if kind == "jax":
            import jax.numpy as jnp

            ref_dtype = jnp.select([c, d], operands, default).dtype
        elif kind in ("numpy", "dask", "cupy"):
            ref_dtype = np.select([c, d], choices, default).dtype
        else:  # the standard's result_type
            try:
                ref_dtype = compat.array_namespace(*operands[:1]).result_type(*operands, default)
            except Exception:
                with pytest.raises(asel.SelectTypeError, match="cannot be promoted"):
                    asel.select_cases([from_numpy(xp, c), from_numpy(xp, d)], operands, default)
                continue
        got = asel.select_cases([from_numpy(xp, c), from_numpy(xp, d)], operands, default)
        assert got.dtype == ref_dtype, (choices, default)
        expected = np.where(c, _np(choices[0]), np.where(d, _np(choices[1]), default))
        np.testing.assert_array_equal(to_numpy(got), expected.astype(to_numpy(got).dtype))


@pytest.mark.parametrize(
    ("choices", "default"),
    [([False, True], False), ([1, 2], 0), ([1.5, 2], 0), ([True, 2], False), ([1j, 0.5], 0)],
)
def test_select_cases_of_python_scalars_only(
    xp: ModuleType, choices: list[Any], default: Any
) -> None:
    # Only Python scalars: the library's default dtype of their highest kind, as
    # np.select and jnp.select give (a standard namespace cannot promote scalars alone).
    c = np.array([True, False, False])
    d = np.array([False, True, False])
    top = max((type(x) for x in [*choices, default]), key=[bool, int, float, complex].index)
    got = asel.select_cases([from_numpy(xp, c), from_numpy(xp, d)], choices, default)
    assert got.dtype == xp.asarray(top(0)).dtype
    expected = np.select([c, d], choices, default)
    np.testing.assert_array_equal(to_numpy(got), expected.astype(to_numpy(got).dtype))


def _np(x: Any) -> Any:
    return x if isinstance(x, np.ndarray) else np.asarray(x)


@SETTINGS
@given(n=st.integers(1, 5), seed=st.integers(0, 2**32 - 1), size=st.sampled_from([0, 1, 7]))
def test_select_cases_property_against_np_select(n: int, seed: int, size: int) -> None:
    rng = np.random.default_rng(seed)
    conds = [rng.random(size) < 0.4 for _ in range(n)]
    choices = [rng.standard_normal(size) for _ in range(n)]
    default = rng.standard_normal(())
    got = asel.select_cases(conds, choices, default)
    assert bits_equal(got, np.select(conds, choices, default))


@SETTINGS
@given(n=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_select_n_property_against_lax_select_n(n: int, seed: int) -> None:
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(seed)
    which = rng.integers(0, n, 9).astype(np.int32)
    cases = [rng.standard_normal(9).astype(np.float32) for _ in range(n)]
    ref = np.asarray(jax.lax.select_n(which, *cases))
    assert bits_equal(asel.select_n(which, *cases), ref)
    assert bits_equal(np.asarray(asel.select_n(jax.numpy.asarray(which), *cases)), ref)


# --------------------------------------------------------------------------- apply_where


def _xpx_apply_where(*args: Any, **kwargs: Any) -> Any:
    xpx = pytest.importorskip("array_api_extra")
    return xpx.apply_where(*args, **kwargs)


@pytest.mark.parametrize("layout", ["c", "transposed"])
@pytest.mark.parametrize("form", ["fill", "f2", "two-args", "array-fill"])
def test_apply_where_matches_array_api_extra(xp: ModuleType, form: str, layout: str) -> None:
    rng = np.random.default_rng(5)
    x_np = rng.standard_normal((3, 4))
    x = from_numpy(xp, x_np)
    y = from_numpy(xp, rng.standard_normal(4).astype(np.float32))
    if layout == "transposed":  # operands (and so the output) not in C order
        x = from_numpy(xp, x_np.T.copy()).T
    cond = x > 0
    log = xp.log
    if form == "fill":
        call: tuple[Any, ...] = (cond, x, log)
        kw: dict[str, Any] = {"fill_value": -1.5}
    elif form == "f2":
        call, kw = (cond, x, log, lambda a: a * 2), {}
    elif form == "two-args":
        call, kw = (cond, (x, y), lambda a, b: a * b, lambda a, b: a - b), {}
    else:
        call, kw = (cond, x, log), {"fill_value": y}
    got = to_numpy(asel.apply_where(*call, **kw))
    ref = to_numpy(_xpx_apply_where(*call, **kw))
    assert bits_equal(got, ref)


def test_apply_where_functions_see_only_their_elements(xp: ModuleType) -> None:
    if _traced(xp):
        pytest.skip("JAX evaluates both sides everywhere (it cannot index by a mask in jit)")
    seen: list[Any] = []

    def f1(a: Any) -> Any:
        seen.append(to_numpy(a))
        return xp.log(a)

    x = from_numpy(xp, np.array([-1.0, 0.0, 4.0, -3.0, 1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = to_numpy(asel.apply_where(x > 0, x, f1, fill_value=0.0))
    np.testing.assert_array_equal(got, [0.0, 0.0, math.log(4.0), 0.0, 0.0])
    assert all((s > 0).all() for s in seen if s.size)


@pytest.mark.parametrize(
    ("dtype", "fill", "bound"),
    [
        ("uint8", 300, "[0, 255]"),
        ("uint8", -1, "[0, 255]"),
        ("int8", 128, "[-128, 127]"),
        ("int16", 2**70, "[-32768, 32767]"),
        ("float32", 1e300, "largest magnitude"),
        ("float32", complex(1.0, 1e300), "largest magnitude"),
    ],
)
def test_apply_where_fill_value_out_of_range_is_refused(
    xp: ModuleType, dtype: str, fill: Any, bound: str
) -> None:
    """A Python scalar ``fill_value`` outside the result dtype's range is refused as
    ``select`` refuses its scalars (NumPy raised OverflowError, JAX and PyTorch
    wrapped 300 to 44 or -1 to 255); the inputs are left as they were.
    """
    skip_dtype(xp, dtype)
    values = np.array([1, 2, 3], dtype)
    x = from_numpy(xp, values)
    cond = from_numpy(xp, np.array([True, False, True]))
    with pytest.raises(asel.ScalarOverflowError, match=r"fill_value=.*" + re.escape(bound)):
        to_numpy(asel.apply_where(cond, x, lambda a: a, fill_value=fill))  # Dask: when computed
    np.testing.assert_array_equal(to_numpy(x), values)


@pytest.mark.parametrize(
    ("dtype", "fill"),
    [
        ("uint8", 255),
        ("uint8", 0),
        ("int8", -128),
        ("float32", math.inf),
        ("float32", -math.inf),
        ("float32", math.nan),
        ("float32", 3.0e38),
        ("float32", 7),
    ],
)
def test_apply_where_fill_value_in_range_is_taken(xp: ModuleType, dtype: str, fill: Any) -> None:
    """Values at the bounds and non-finite floats are taken as they are."""
    skip_dtype(xp, dtype)
    values = np.array([1, 2, 3], dtype)
    got = to_numpy(
        asel.apply_where(
            from_numpy(xp, np.array([True, False, True])),
            from_numpy(xp, values),
            lambda a: a,
            fill_value=fill,
        )
    )
    expected = values.copy()
    expected[1] = fill  # NumPy's conversion: each value fits
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, expected)


def test_apply_where_jax_gradient_is_exactly_zero_where_untaken() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = jnp.array([-2.0, 0.0, 0.5, 4.0])

    def f(v: Any) -> Any:
        return asel.apply_where(v > 0, v, jnp.log, fill_value=0.0).sum()

    for fn in (jax.grad(f), jax.jit(jax.grad(f))):
        g = np.asarray(fn(x))
        assert not np.isnan(g).any()
        np.testing.assert_array_equal(g, [0.0, 0.0, 2.0, 0.25])
    # Lazy under jit: the function is traced, not run on values.
    lowered = jax.jit(lambda v: asel.apply_where(v > 0, v, jnp.log, jnp.exp)).lower(x)
    assert "log" in lowered.as_text()


def test_apply_where_torch_gradient_is_exactly_zero_where_untaken() -> None:
    torch = pytest.importorskip("torch")
    x = torch.tensor([-2.0, 0.0, 0.5, 4.0], requires_grad=True)
    asel.apply_where(x > 0, x, torch.log, fill_value=0.0).sum().backward()
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 2.0, 0.25])


def test_family_is_lazy_on_dask() -> None:
    da = pytest.importorskip("dask.array")
    calls: list[int] = []

    def f1(a: Any) -> Any:
        calls.append(a.size)
        return np.log(a)

    x = da.from_array(np.array([-1.0, 2.0, 4.0, 8.0]), chunks=2)
    before = len(calls)
    lazy = asel.apply_where(x > 0, x, f1, fill_value=0.0)
    sel = asel.select_n(da.from_array(np.array([0, 1, 1, 0]), chunks=2), x, -x)
    cases = asel.select_cases([x > 3], [x], -1.0)
    assert all(isinstance(r, da.Array) for r in (lazy, sel, cases))
    assert all(size == 0 for size in calls[before:])  # only Dask's empty meta blocks
    np.testing.assert_array_equal(sel.compute(), [-1.0, -2.0, -4.0, 8.0])
    np.testing.assert_array_equal(cases.compute(), [-1.0, -1.0, 4.0, 8.0])
    np.testing.assert_allclose(lazy.compute(), [0.0, math.log(2), math.log(4), math.log(8)])


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), size=st.sampled_from([0, 1, 6]))
def test_apply_where_property_against_array_api_extra(seed: int, size: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(size)
    y = rng.standard_normal(size).astype(np.float32)
    cond = rng.random(size) < 0.5
    with np.errstate(all="ignore"):
        for args, f1, f2, fill in (
            ((x,), np.log, None, 0.0),
            ((x, y), np.multiply, np.subtract, None),
            ((y,), np.sqrt, None, np.int8(3)),
        ):
            kw = {} if fill is None else {"fill_value": fill}
            pos = (cond, args, f1) if f2 is None else (cond, args, f1, f2)
            assert bits_equal(asel.apply_where(*pos, **kw), _xpx_apply_where(*pos, **kw))


# --------------------------------------------------------------------------- bad input


def _bad_cases(
    xp: ModuleType,
) -> list[tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any], type, str]]:
    """(id, function, args, kwargs, error class, message pattern) per bad call."""
    f = lambda a: from_numpy(xp, np.asarray(a))  # noqa: E731
    w = f(np.array([0, 1, 1], np.int8))
    a, b = f(np.zeros(3, np.float32)), f(np.ones(3, np.float32))
    c = f(np.array([True, False, True]))
    rows = [
        ("n-no-case", asel.select_n, (w,), {}, asel.SelectTypeError, "at least one case"),
        (
            "n-float-which",
            asel.select_n,
            (a, a, b),
            {},
            asel.SelectTypeError,
            r"which must have a boolean or integer dtype \(an integer is the index .*float32",
        ),
        ("n-bool-three", asel.select_n, (c, a, b, a), {}, asel.SelectValueError, "exactly 2 cases"),
        (
            "n-list",
            asel.select_n,
            (w, a, [1.0, 2.0, 3.0]),
            {},
            asel.SelectTypeError,
            r"cases\[1\] must be an array or a Python scalar",
        ),
        (
            "n-scalar-kind",
            asel.select_n,
            (w, f(np.zeros(3, np.int8)), 1.5),
            {},
            asel.SelectTypeError,
            r"cases\[1\] is a Python float",
        ),
        (
            "cases-lengths",
            asel.select_cases,
            ([c], [a, b]),
            {},
            asel.SelectValueError,
            "same length",
        ),
        (
            "cases-empty",
            asel.select_cases,
            ([], []),
            {},
            asel.SelectValueError,
            "condlist is empty",
        ),
        (
            "cases-not-list",
            asel.select_cases,
            (c, [a]),
            {},
            asel.SelectTypeError,
            "condlist must be a list or tuple",
        ),
        (
            "cases-float-cond",
            asel.select_cases,
            ([a], [b]),
            {},
            asel.SelectTypeError,
            r"condlist\[0\] must have a boolean or integer dtype",
        ),
        (
            "cases-shape",
            asel.select_cases,
            ([c], [f(np.ones((2, 4)))]),
            {},
            asel.SelectShapeError,
            r"condlist\[0\] shape \(3,\)",
        ),
        (
            "cases-overflow",
            asel.select_cases,
            ([c], [f(np.zeros(3, np.int8))], 1000),
            {},
            asel.ScalarOverflowError,
            "default=1000 is out of the range",
        ),
        (
            "aw-both",
            asel.apply_where,
            (c, a, np.negative, np.negative),
            {"fill_value": 0.0},
            asel.SelectTypeError,
            "exactly one of f2 and fill_value, got both",
        ),
        (
            "aw-neither",
            asel.apply_where,
            (c, a, np.negative),
            {},
            asel.SelectTypeError,
            "got neither",
        ),
        (
            "aw-int-cond",
            asel.apply_where,
            (w, a, np.negative),
            {"fill_value": 0.0},
            asel.SelectTypeError,
            "cond must have a boolean dtype, got .*int8",
        ),
        (
            "aw-shape",
            asel.apply_where,
            (c, f(np.ones(4)), np.negative),
            {"fill_value": 0.0},
            asel.SelectShapeError,
            r"args shape \(4,\)",
        ),
        (
            "aw-not-callable",
            asel.apply_where,
            (c, a, 3),
            {"fill_value": 0.0},
            asel.SelectTypeError,
            "f1 must be callable",
        ),
    ]
    # An integer which, and a boolean one over two cases, which takes select's fast path
    # where it can: its refusals are select_n's, in select_n's words, cold and warm.
    for tag, which in (("n", w), ("n-bool", c)):
        rows += [
            (
                f"{tag}-dtypes",
                asel.select_n,
                (which, a, f(np.ones(3, np.float64))),
                {},
                asel.SelectTypeError,
                r"cases\[0\] and cases\[1\] must have the same dtype",
            ),
            (
                f"{tag}-shape",
                asel.select_n,
                (which, a, f(np.ones(4, np.float32))),
                {},
                asel.SelectShapeError,
                r"cases\[1\] shape \(4,\)",
            ),
            (
                f"{tag}-overflow",
                asel.select_n,
                (which, f(np.zeros(3, np.int8)), 300),
                {},
                asel.ScalarOverflowError,
                r"cases\[1\]=300 is out of the range",
            ),
        ]
        if supports_out(xp):
            rows += [
                (
                    f"{tag}-out-shape",
                    asel.select_n,
                    (which, a, b),
                    {"out": f(np.zeros(4, np.float32))},
                    asel.SelectShapeError,
                    r"out has shape \(4,\)",
                ),
                (
                    f"{tag}-out-dtype",
                    asel.select_n,
                    (which, a, b),
                    {"out": f(np.zeros(3, np.float64))},
                    asel.SelectTypeError,
                    "out has dtype",
                ),
            ]
    return rows


def _valid(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A call of the same signature that is valid where only values could make it so."""
    return tuple(0 if type(x) is int and x > 100 else x for x in args)


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_family_bad_input(xp: ModuleType, library: Backend, warm: bool) -> None:
    for name, fn, args, kwargs, error, pattern in _bad_cases(xp):
        snapshot = [to_numpy(x) for x in (*args, *kwargs.values()) if hasattr(x, "shape")]
        if warm:
            for _ in range(2):
                try:
                    fn(*_valid(args), **kwargs)
                except asel.SelectError:
                    break
        with pytest.raises(error, match=pattern):
            fn(*args, **kwargs)
        after = [to_numpy(x) for x in (*args, *kwargs.values()) if hasattr(x, "shape")]
        assert all(bits_equal(p, q) for p, q in zip(after, snapshot, strict=True)), name


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool"])
def test_select_n_torch_large_calls_on_the_numpy_route(dtype: str) -> None:
    torch = pytest.importorskip("torch")
    from arrayselect.backends.torch_backend import KERNEL_MIN_SIZE

    rng = np.random.default_rng(2)
    size = 2 * KERNEL_MIN_SIZE
    which = rng.integers(0, 3, size).astype(np.int64)
    cases = [_random(numpy_dtype(dtype), (size,), rng) for _ in range(3)]
    tcases = [from_numpy(torch, c) for c in cases]
    got = asel.select_n(torch.from_numpy(which), *tcases)
    assert got.dtype == tcases[0].dtype
    assert bits_equal(to_numpy(got), oracle_select_n(which, cases))
    out = torch.zeros_like(tcases[0])
    which[size // 2] = 3
    with pytest.raises(asel.SelectValueError, match="which holds 3"):
        asel.select_n(torch.from_numpy(which), *tcases, out=out)
    assert not out.any()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8"])
def test_select_cases_torch_large_calls_on_the_numpy_route(dtype: str) -> None:
    torch = pytest.importorskip("torch")
    from arrayselect.backends.shared import kernel
    from arrayselect.backends.torch_backend import KERNEL_MIN_SIZE

    rng = np.random.default_rng(3)
    size = 2 * KERNEL_MIN_SIZE
    conds = [rng.random(size) < 0.3, rng.integers(0, 3, size).astype(np.uint8)]
    choices = [_random(numpy_dtype(dtype), (size,), rng) for _ in range(2)]
    default = _random(numpy_dtype(dtype), (size,), rng)
    tensors = [from_numpy(torch, x) for x in (*conds, *choices, default)]
    before = kernel.kernel_stats()["calls"]
    got = asel.select_cases(tensors[:2], tensors[2:4], tensors[4])
    assert kernel.KERNEL_MISSING or kernel.kernel_stats()["calls"] > before  # the kernel ran
    assert got.dtype == tensors[2].dtype
    assert bits_equal(to_numpy(got), oracle_select_cases(conds, choices, default))
    # grad to record: torch ops (and the same values)
    if tensors[2].is_floating_point():
        grad = tensors[2].detach().float().requires_grad_()
        chained = asel.select_cases(tensors[:2], [grad, tensors[3].float()], tensors[4].float())
        assert chained.requires_grad


def test_select_n_clamps_under_torch_compile() -> None:
    torch = pytest.importorskip("torch")
    compiled = torch.compile(
        lambda w, a, b, c: asel.select_n(w, a, b, c), fullgraph=fullgraph(torch)
    )
    which = torch.tensor([-1, 0, 1, 2, 5])
    got = compiled(which, torch.zeros(5), torch.ones(5), torch.full((5,), 2.0))
    np.testing.assert_array_equal(got.numpy(), [0.0, 0.0, 1.0, 2.0, 2.0])


# --------------------------------------------------------------------------- the memo


def _outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What a call gives: the error's class and message, or the result's dtype and bits."""
    try:
        got = fn(*args)
        bits = to_numpy(got)  # Dask raises an index out of range here
    except asel.SelectError as exc:
        return (type(exc), str(exc))
    return (str(got.dtype), bits.tobytes(), bits.shape)


def test_family_memo_cannot_change_an_answer(xp: ModuleType) -> None:
    """Each call gives, after every other call has run (twice: decisions kept), what it
    gives cold: calls that differ in a dtype, a shape, a Python scalar's type or value
    (in or out of range) or an index's value only.
    """
    from arrayselect._dispatch import memo as _family_memo

    def f(a: Any) -> Any:
        return from_numpy(xp, np.asarray(a))

    w, w_bad = f(np.array([0, 2, 1], np.int8)), f(np.array([0, 3, 1], np.int8))
    a32, b32 = f(np.arange(3, dtype=np.float32)), f(np.ones(3, np.float32))
    a8 = f(np.arange(3, dtype=np.int8))
    row, col = f(np.ones((1, 3), np.float32)), f(np.ones((2, 1), np.float32))
    c, c_int = f(np.array([True, False, True])), f(np.array([0, 2, 0], np.int16))
    calls: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
        (asel.select_n, (w, a32, b32, 2.5)),
        (asel.select_n, (w, a32, b32, 3.5)),
        (asel.select_n, (w, a8, a8, 7)),
        (asel.select_n, (w, a8, a8, 1000)),
        (asel.select_n, (w, a32, b32, a8)),
        (asel.select_n, (w, a32, row, col)),
        (asel.select_n, (w, a32, b32)),
        (asel.select_cases, ([c, c_int], [a32, b32], 2.0)),
        (asel.select_cases, ([c, c_int], [a8, a8], 7)),
        (asel.select_cases, ([c, c_int], [a8, a8], 1000)),
        (asel.select_cases, ([c, c_int], [a8, a8], True)),
        (asel.select_cases, ([c, c_int], [a8, a32], b32)),
        (asel.select_cases, ([c, c_int], [a32, row], col)),
        (asel.select_cases, ([c], [a32], a8)),
    ]
    if not _traced(xp):  # an index out of range: an error on eager libraries
        calls += [(asel.select_n, (w_bad, a32, b32, 2.5)), (asel.select_n, (w_bad, a32, b32, a32))]
    if supports_out(xp):
        out, out8 = f(np.zeros(3, np.float32)), f(np.zeros(3, np.int8))
        strided = f(np.zeros(6, np.float32))[::2]
        calls += [
            (lambda *a: asel.select_n(*a, out=out), (w, a32, b32, 2.5)),
            (lambda *a: asel.select_n(*a, out=out8), (w, a8, a8, 7)),
            (lambda *a: asel.select_n(*a, out=out), (w_bad, a32, b32, a32)),
            (lambda *a: asel.select_n(*a, out=strided), (w, a32, b32, 2.5)),
        ]
        if backend_kind(xp) == "numpy":
            frozen = np.zeros(3, np.float32)
            frozen.flags.writeable = False
            calls.append((lambda *a: asel.select_n(*a, out=frozen), (w, a32, b32, 2.5)))
    cold = []
    for fn, args in calls:
        _family_memo.clear()
        cold.append(_outcome(fn, args))
    for _ in range(2):
        warm = [_outcome(fn, args) for fn, args in calls]
        assert warm == cold


def test_family_memo_follows_jax_x64_mode() -> None:
    """A decision made with JAX's 64-bit mode on is not reused with it off, where JAX
    would narrow the 64-bit cases: the general path refuses them.
    """
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    with jax_x64(jax, True):
        which = jnp.array([0, 1, 0], jnp.int32)
        a = jnp.arange(3, dtype=jnp.float64)
        assert asel.select_n(which, a, a).dtype == jnp.float64
        assert asel.select_n(which, a, a).dtype == jnp.float64
        assert asel.select_cases([which == 0], [a], a).dtype == jnp.float64
    with jax_x64(jax, False), pytest.raises(asel.SelectTypeError, match="float64"):
        asel.select_n(which, a, a)
