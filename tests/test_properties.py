"""Hypothesis property tests: ``select`` and ``select_shape`` against the oracle.

Shapes have ranks 0-6 with dims drawn from {0, 1, n} (n in {2, 3}); all
three modes, both ``cond_broadcast`` values, random pdpd ``axis``, random
bool or integer ``cond``; ``then``/``else`` values are random bit patterns
(NaNs with payloads included), so every comparison is bit-exact.
"""

from __future__ import annotations

import itertools
from types import ModuleType

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import OracleShapeError, bits_equal, oracle_select, oracle_shape
from xp_helpers import backend_kind, from_numpy, to_numpy

import arrayselect as asel

# Per backend; Dask and PyTorch are slow per call and CI has 2 cores.
ARRAY_EXAMPLES = 50
SHAPE_EXAMPLES = 400
UNKNOWN_EXAMPLES = 250

ARRAY_SETTINGS = settings(
    max_examples=ARRAY_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SHAPE_SETTINGS = settings(max_examples=SHAPE_EXAMPLES, deadline=None, derandomize=True)
UNKNOWN_SETTINGS = settings(max_examples=UNKNOWN_EXAMPLES, deadline=None, derandomize=True)

MAX_RANK = 6
VALUE_DTYPES = ("float32", "float64", "int8", "uint16", "complex64", "bool")
COND_DTYPES = ("bool", "bool", "int8", "uint8", "int64")


def _shape(draw, dim, max_rank=MAX_RANK):
    rank = draw(st.integers(0, max_rank))
    return tuple(draw(dim) for _ in range(rank))


def _with_ones(draw, shape):
    """``shape`` with some dims replaced by 1 (still broadcastable)."""
    return tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in shape)


@st.composite
def select_cases(draw):
    """(cond_shape, then_shape, else_shape, options): a mix of valid and invalid."""
    n = draw(st.sampled_from((2, 3)))
    dim = st.sampled_from((0, 1, 1, 1, n, n, n, n, n, n, n, n))
    mode = draw(st.sampled_from(("none", "numpy", "pdpd")))
    options: dict[str, object] = {"auto_broadcast": mode}
    base = _shape(draw, dim)
    rank = len(base)
    if mode == "numpy":
        options["cond_broadcast"] = draw(st.sampled_from(("unidirectional", "multidirectional")))
    axis = -1
    if mode == "pdpd":
        axis = draw(st.sampled_from((-1, -1, *range(rank + 1))))
        options["axis"] = axis

    def derive(role: str):
        if draw(st.integers(0, 3)) == 0:
            return _shape(draw, dim)  # unrelated: mostly invalid
        if mode == "none":
            return base
        if mode == "numpy":
            k = draw(st.integers(0, rank))
            return _with_ones(draw, base[rank - k :])
        # pdpd
        if role == "then":
            return base
        start = axis if axis != -1 else None
        if start is None:
            k = draw(st.integers(0, rank))
            return _with_ones(draw, base[rank - k :])
        length = draw(st.integers(0, max(0, rank - start)))
        trailing = draw(st.integers(0, 2))
        src = _with_ones(draw, base[start : start + length]) + (1,) * trailing
        return src[:MAX_RANK]

    then = base if mode != "numpy" or draw(st.booleans()) else derive("then")
    else_ = derive("else")
    cond = derive("cond")
    if mode == "numpy" and options["cond_broadcast"] == "multidirectional" and draw(st.booleans()):
        # cond may enlarge the output: let it carry the base shape.
        cond, then = base, derive("then")
    return cond, then, else_, options


def _random_values(rng, shape, dtype):
    dt = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    raw = rng.integers(0, 256, size=size * dt.itemsize, dtype=np.uint8)
    return raw.view(dt).reshape(shape)


def _random_cond(rng, shape, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith("u"):
        return rng.choice(np.array([0, 0, 1, 255], dtype=dtype), size=shape)
    return rng.choice(np.array([0, 0, 1, -1, -128, 7], dtype=dtype), size=shape)


def _oracle_shape_or_none(cond, then, else_, options):
    try:
        return oracle_shape(cond, then, else_, **options)
    except OracleShapeError:
        return None


@ARRAY_SETTINGS
@given(
    case=select_cases(),
    dtype=st.sampled_from(VALUE_DTYPES),
    cond_dtype=st.sampled_from(COND_DTYPES),
    seed=st.integers(0, 2**32 - 1),
)
def test_select_matches_oracle(xp: ModuleType, case, dtype, cond_dtype, seed):
    cond_shape, then_shape, else_shape, options = case
    rng = np.random.default_rng(seed)
    c = _random_cond(rng, cond_shape, cond_dtype)
    t = _random_values(rng, then_shape, dtype)
    e = _random_values(rng, else_shape, dtype)
    xc, xt, xe = from_numpy(xp, c), from_numpy(xp, t), from_numpy(xp, e)
    expected_shape = _oracle_shape_or_none(cond_shape, then_shape, else_shape, options)

    if expected_shape is None:
        with pytest.raises(asel.SelectShapeError):
            asel.select(xc, xt, xe, **options)
        with pytest.raises(asel.SelectShapeError):
            asel.select_shape(cond_shape, then_shape, else_shape, **options)
    else:
        assert asel.select_shape(cond_shape, then_shape, else_shape, **options) == expected_shape
        result = asel.select(xc, xt, xe, **options)
        assert backend_kind(xp) in type(result).__module__ or isinstance(result, np.ndarray)
        got = to_numpy(result)
        expected = oracle_select(c, t, e, **options)
        assert got.shape == expected_shape
        assert got.dtype == np.dtype(dtype)
        assert bits_equal(got, expected)
    # Inputs are never modified.
    assert bits_equal(to_numpy(xc), c)
    assert bits_equal(to_numpy(xt), t)
    assert bits_equal(to_numpy(xe), e)


@SHAPE_SETTINGS
@given(case=select_cases())
def test_select_shape_matches_oracle(case):
    cond, then, else_, options = case
    expected = _oracle_shape_or_none(cond, then, else_, options)
    if expected is None:
        with pytest.raises(asel.SelectShapeError) as info:
            asel.select_shape(cond, then, else_, **options)
        # The message names at least one argument and shows a shape.
        msg = str(info.value)
        assert any(name in msg for name in ("cond", "then", "else")), msg
        assert "(" in msg, msg
    else:
        assert asel.select_shape(cond, then, else_, **options) == expected


# -------------------------------------------------------------- unknown dims

# Dims in the cases are 0, 1 and n in {2, 3}; an unknown dim completed with
# each of 0..4 therefore meets every value that matters (0, 1, n and a value
# equal to nothing else), so the finite enumeration is exhaustive.
COMPLETION_VALUES = (0, 1, 2, 3, 4)
MAX_UNKNOWNS = 3


@st.composite
def unknown_cases(draw):
    cond, then, else_, options = draw(select_cases())
    shapes = [list(cond), list(then), list(else_)]
    slots = [(i, k) for i, s in enumerate(shapes) for k in range(len(s))]
    if slots:
        chosen = draw(
            st.lists(
                st.sampled_from(slots),
                min_size=1,
                max_size=min(MAX_UNKNOWNS, len(slots)),
                unique=True,
            )
        )
        for i, k in chosen:
            shapes[i][k] = None
    return tuple(tuple(s) for s in shapes), options


def _completions(shapes):
    slots = [(i, k) for i, s in enumerate(shapes) for k, d in enumerate(s) if d is None]
    for values in itertools.product(COMPLETION_VALUES, repeat=len(slots)):
        full = [list(s) for s in shapes]
        for (i, k), v in zip(slots, values, strict=True):
            full[i][k] = v
        yield tuple(tuple(s) for s in full)


@UNKNOWN_SETTINGS
@given(case=unknown_cases())
def test_select_shape_unknown_dims(case):
    shapes, options = case
    outcomes = [_oracle_shape_or_none(*full, options) for full in _completions(shapes)]
    successes = [o for o in outcomes if o is not None]
    try:
        result = asel.select_shape(*shapes, **options)
    except asel.SelectShapeError:
        # An error only when every completion fails.
        assert not successes, (shapes, options, successes[:3])
        return
    # ... and every completion failing means an error.
    assert successes, (shapes, options, result)
    for out in successes:
        assert len(result) == len(out), (shapes, options, result, out)
        for known, actual in zip(result, out, strict=True):
            assert known is None or known == actual, (shapes, options, result, out)


@UNKNOWN_SETTINGS
@given(case=unknown_cases())
def test_select_shape_unknown_only_when_unknowable(case):
    """A dim is ``None`` only when the completions that succeed disagree on it."""
    shapes, options = case
    successes = [
        o
        for o in (_oracle_shape_or_none(*full, options) for full in _completions(shapes))
        if o is not None
    ]
    if not successes:
        return
    result = asel.select_shape(*shapes, **options)
    for k, known in enumerate(result):
        if known is None:
            values = {out[k] for out in successes}
            assert len(values) > 1, (shapes, options, result, k, values)


@pytest.mark.parametrize(
    ("shapes", "options", "expected"),
    [
        # pdpd: else and cond each pin then's unknown dim; conflicting pins fail.
        (((2,), (None,), (0,)), {"auto_broadcast": "pdpd"}, None),
        (((2,), (None,), (3,)), {"auto_broadcast": "pdpd"}, None),
        (((2,), (None,), (1,)), {"auto_broadcast": "pdpd"}, (2,)),
        (((None,), (None, None), (3, 1)), {"auto_broadcast": "pdpd"}, (3, None)),
        (((3,), (2, None, None), ()), {"auto_broadcast": "pdpd", "axis": 1}, (2, 3, None)),
        # numpy: then/else pin each other, cond pins the rest.
        (((None, 5), (2, 3, 1, 5), (4, 1)), {}, (2, 3, 4, 5)),
        (((2,), (None,), (None,)), {}, (2,)),
        (((2,), (None,), (3,)), {}, None),
        (((2,), (None,), (1,)), {"cond_broadcast": "multidirectional"}, (2,)),
        # none: any known dim pins the others.
        (((None, 2), (3, None), (None, None)), {"auto_broadcast": "none"}, (3, 2)),
        (((None, 2), (3, None), (None, 4)), {"auto_broadcast": "none"}, None),
    ],
)
def test_select_shape_unknown_dims_examples(shapes, options, expected):
    # Expected values worked out by hand from SPEC §3, checked by enumeration.
    outcomes = {_oracle_shape_or_none(*full, options) for full in _completions(shapes)}
    if expected is None:
        assert outcomes == {None}
        with pytest.raises(asel.SelectShapeError):
            asel.select_shape(*shapes, **options)
    else:
        assert asel.select_shape(*shapes, **options) == expected
