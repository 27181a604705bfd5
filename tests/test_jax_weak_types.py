"""``where`` and ``select_cases`` on weakly and strongly typed JAX operands.

JAX promotes a Python scalar, and an array it typed from one (``jnp.asarray(3)``,
a Python scalar passed into ``jax.jit``), *weakly*: such an operand takes the
other operand's dtype, where a strongly typed one of the same dtype promotes it.
So every cache of a dtype decision must tell them apart (and 64-bit mode on and
off). These properties draw weak and strong, 0-d and n-d operands and Python
scalars, call ``where``/``select_cases`` on a sequence of them in random order,
eagerly and under one ``jax.jit`` function kept across calls, and compare values
and dtypes with ``jnp.where``/``jnp.select`` (the oracle), each call on the JAX
backend or inside ``force_portable()`` on the portable one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is not installed")
hypothesis = pytest.importorskip("hypothesis")

import jax.numpy as jnp  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import arrayselect as asel  # noqa: E402

# Values every drawn dtype holds (int8 and uint8 included): no call overflows.
_VALUES = st.integers(0, 100)
_DTYPES_32 = ("bool", "int8", "uint8", "int16", "int32", "uint32", "float16", "float32")
_DTYPES_64 = (*_DTYPES_32, "int64", "uint64", "float64", "complex64")

# One jitted function each, kept across examples: a decision one example leaves
# in a cache meets the next example's operands.
_jit_where = jax.jit(asel.where)
_jit_select_cases = jax.jit(asel.select_cases)
_jnp_where = jax.jit(jnp.where)
_jnp_select = jax.jit(jnp.select)

# An operand spec: (form, python type, dtype, value). Forms: a Python scalar, a
# weakly typed 0-d or 2-element array, a strongly typed 0-d or 2-element array.
_FORMS = ("python", "weak0", "weakn", "strong0", "strongn")


@st.composite
def _operand(draw: Any, dtypes: tuple[str, ...]) -> tuple[str, type, str, int]:
    form = draw(st.sampled_from(_FORMS))
    kind = draw(st.sampled_from((bool, int, float)))
    return form, kind, draw(st.sampled_from(dtypes)), draw(_VALUES)


def _make(spec: tuple[str, type, str, int]) -> Any:
    form, kind, dtype, value = spec
    if form == "python":
        return kind(value)
    if form.startswith("weak"):
        # typed from a Python scalar: weak (JAX has no weak bool)
        weak = jnp.asarray((int if kind is bool else kind)(value))
        assert weak.weak_type
        return weak if form == "weak0" else jnp.broadcast_to(weak, (2,))
    strong = jnp.asarray(value, dtype=dtype)
    assert not strong.weak_type
    return strong if form == "strong0" else jnp.stack([strong, jnp.zeros((), dtype)])


def _same(got: Any, want: Any) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _calls(dtypes: tuple[str, ...]) -> Any:
    # Each call on the JAX backend or, inside force_portable(), the portable one: a
    # decision one keeps must not serve the other.
    call = st.tuples(_operand(dtypes), _operand(dtypes), st.booleans())
    return st.lists(call, min_size=2, max_size=6)


def _check_where(calls: list[Any]) -> None:
    cond = jnp.asarray([True, False])
    for spec1, spec2, portable in calls:
        x1, x2 = _make(spec1), _make(spec2)
        with asel.force_portable(portable):
            _same(asel.where(cond, x1, x2), jnp.where(cond, x1, x2))
            # Under jit a Python scalar arrives as a weakly typed tracer.
            _same(_jit_where(cond, x1, x2), _jnp_where(cond, x1, x2))


def _check_select_cases(calls: list[Any]) -> None:
    conds = [jnp.asarray([True, False]), jnp.asarray([False, False])]
    for spec1, spec2, portable in calls:
        choice, default = _make(spec1), _make(spec2)
        choices = [choice, choice]
        want = jnp.select(conds, choices, default)
        with asel.force_portable(portable):
            _same(asel.select_cases(conds, choices, default), want)
            _same(_jit_select_cases(conds, choices, default), _jnp_select(conds, choices, default))


@settings(max_examples=30, deadline=None)
@given(calls=_calls(_DTYPES_32))
def test_where_weak_and_strong_without_x64(calls: list[Any]) -> None:
    with jax.enable_x64(False):
        _check_where(calls)


@settings(max_examples=30, deadline=None)
@given(calls=_calls(_DTYPES_64))
def test_where_weak_and_strong_with_x64(calls: list[Any]) -> None:
    with jax.enable_x64(True):
        _check_where(calls)


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype:UserWarning")
@settings(max_examples=20, deadline=None)
@given(calls=_calls(_DTYPES_64), x64=st.lists(st.booleans(), min_size=1, max_size=3))
def test_where_across_x64_modes(calls: list[Any], x64: list[bool]) -> None:
    """The same operands with 64-bit mode switched between calls."""
    for enabled in x64:
        with jax.enable_x64(enabled):
            _check_where(calls)


@settings(max_examples=30, deadline=None)
@given(calls=_calls(_DTYPES_32), enabled=st.booleans())
def test_select_cases_weak_and_strong(calls: list[Any], enabled: bool) -> None:
    with jax.enable_x64(enabled):
        _check_select_cases(calls)


@pytest.mark.parametrize("first_weak", [True, False])
def test_issue_example_either_order(first_weak: bool) -> None:
    """The reported case: a weak 3 and a strong ``int32(300)`` beside uint8, under jit."""
    f = jax.jit(asel.where)
    cond = jnp.asarray([True, False])
    y = jnp.asarray([1, 2], jnp.uint8)
    operands = [3, jnp.int32(300)] if first_weak else [jnp.int32(300), 3]
    for x in operands:
        _same(f(cond, x, y), jnp.where(cond, x, y))


def test_select_cases_portable_then_native() -> None:
    """A decision the portable backend kept (its signature of a JAX array) must not
    serve the JAX backend, nor lack the weak type itself."""
    conds = [jnp.asarray([True, False])]
    strong = jnp.asarray([300, 5], jnp.int32)
    weak = jnp.broadcast_to(jnp.asarray(300), (2,))
    default = jnp.asarray([1, 2], jnp.uint8)
    for portable in (True, False):
        with asel.force_portable(portable):
            for choice in (weak, strong):
                want = jnp.select(conds, [choice], default)
                _same(asel.select_cases(conds, [choice], default), want)
