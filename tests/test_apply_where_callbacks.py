"""``apply_where``'s ``f1``/``f2`` failing or returning the wrong thing.

A function that raises, or returns an array of the wrong shape, another
library's array or a non-numeric dtype, must give a ``SelectCallbackError`` (a
``SelectError``) that names the function and what was expected, with the
function's own exception chained; the inputs stay as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from xp_helpers import from_numpy, to_numpy

import arrayselect as asel


class _Boom(RuntimeError):
    pass


def _raise(*args: Any) -> Any:
    raise _Boom("the user's function failed")


def _first_two(a: Any, *rest: Any) -> Any:
    return a[:2] if a.shape[0] > 2 else a[:0]  # a shape the arguments never have


def _as_list(a: Any, *rest: Any) -> Any:
    return [1.0] * a.shape[0]


_BAD: dict[str, tuple[Callable[..., Any], str]] = {
    "raises": (_raise, r"raised _Boom: the user's function failed"),
    "wrong shape": (_first_two, r"must return an array of its arguments' shape \(\d+,\)"),
    "not an array": (_as_list, r"must return an array of its arguments' library .*got list"),
}


@pytest.mark.parametrize("bad", list(_BAD))
@pytest.mark.parametrize("which", ["f1", "f2"])
def test_bad_callback_is_a_select_error_naming_it(xp: ModuleType, which: str, bad: str) -> None:
    f, expected = _BAD[bad]
    x_np = np.array([-1.0, 2.0, 3.0, -4.0, 5.0])
    x = from_numpy(xp, x_np)
    cond = x > 0
    good = xp.abs
    f1, f2 = (f, good) if which == "f1" else (good, f)
    with pytest.raises(asel.SelectCallbackError, match=f"apply_where's {which} {expected}") as info:
        result = asel.apply_where(cond, x, f1, f2)
        if hasattr(result, "compute"):  # Dask runs the functions when computed
            result.compute()
    assert isinstance(info.value, asel.SelectError)
    if bad == "raises":
        assert isinstance(info.value.__cause__, _Boom)
    np.testing.assert_array_equal(to_numpy(x), x_np)  # inputs untouched


@pytest.mark.parametrize("which", ["f1", "f2"])
def test_bad_callback_with_fill_value_and_two_args(xp: ModuleType, which: str) -> None:
    x = from_numpy(xp, np.arange(6.0).reshape(2, 3))
    y = from_numpy(xp, np.ones(3))

    def wrong(a: Any, b: Any) -> Any:
        return xp.sum(a)  # a reduction: 0-d, not element-wise

    with pytest.raises(asel.SelectCallbackError, match=f"{which} must return an array of its"):
        if which == "f1":
            result = asel.apply_where(x > 2, (x, y), wrong, fill_value=0.0)
        else:
            result = asel.apply_where(x > 2, (x, y), lambda a, b: a + b, wrong)
        if hasattr(result, "compute"):
            result.compute()


def test_callback_of_non_numeric_dtype() -> None:
    x = np.array([1.0, -2.0])
    with pytest.raises(asel.SelectCallbackError, match="f1 must return a boolean, integer"):
        asel.apply_where(x > 0, x, lambda a: a.astype(str), fill_value=0.0)


def test_callback_error_under_jax_jit() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = jnp.arange(4.0)

    @jax.jit
    def f(v: Any) -> Any:
        return asel.apply_where(v > 1, v, lambda a: a[:2], fill_value=0.0)

    with pytest.raises(asel.SelectCallbackError, match=r"f1 must return .* shape \(4,\)"):
        f(x)


def test_user_function_reads_the_checked_wrapper() -> None:
    """``generic.user_function`` gives back the function a checked callback wraps (a
    backend's key per user function), and any other callable as it is."""
    from arrayselect.plugin import generic

    backend = asel.backend_for(np.ones(1) > 0, np.ones(1), np.ones(1))
    for f in (np.log, abs, lambda a: a, generic.user_function):
        wrapper = generic.checked_callback("f1", f, backend)
        assert wrapper is not f and generic.user_function(wrapper) is f
        assert generic.user_function(f) is f
