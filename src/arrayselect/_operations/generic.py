"""The select family's generic algorithms, for any backend, from the standard's functions.

A backend that has no ``select_n``, ``select_cases`` or ``apply_where`` of its own
(:class:`~arrayselect.plugin.Backend` leaves them ``None``) is served by these,
written once: chained ``xp.where`` for ``select_n`` and ``select_cases``; for
``apply_where``, boolean indexing through the backend's gather and scatter
(:meth:`~arrayselect.plugin.Backend.take_at`, ``put_at``) where its arrays take
it, and the double where where they do not (traced, data-free or lazy arrays).
A backend that fuses some cases calls these for the rest (CuPy, PyTorch).

They run on inputs the front ends of :mod:`arrayselect._operations.family` have validated.
:func:`fill_scalar`, the core's check of a Python-scalar ``fill_value`` for the
result dtype, is here too, for a backend's own ``apply_where``.

For example:

A backend's ``select_n`` that fuses two cases and leaves the rest to the core:

>>> import numpy as np
>>> from arrayselect.plugin import generic
>>> def select_n(backend, which, cases, shape, out):
...     if len(cases) != 2:
...         return generic.select_n(backend, which, cases, shape, out)
...     return np.where(which.astype(bool), cases[1], cases[0])
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, Final, cast

from arrayselect._base.errors import SelectCallbackError, index_error
from arrayselect._dispatch.registry import library_of
from arrayselect._operations.where import where
from arrayselect._rules.backend import Backend
from arrayselect._rules.shapes import Shape
from arrayselect._validation.checks import PYTHON_SCALARS, fill_scalar

__all__ = [
    "apply_where",
    "checked_callback",
    "checked_fill",
    "double_where",
    "fill_scalar",
    "select_cases",
    "select_n",
    "user_function",
]


def select_n(backend: Backend, which: Any, cases: tuple[Any, ...], shape: Shape, out: Any) -> Any:
    """``cases[which]`` element by element, by chained ``xp.where``.

    ``which`` is boolean (then exactly two cases) or integer; the cases are arrays
    of one dtype; all broadcast to ``shape``. An index outside ``[0, len(cases))``
    raises :func:`~arrayselect.plugin.errors.index_error` before anything is written;
    traced or data-free indices, which have no values to check, are clamped (as
    ``lax.select_n`` does).
    """
    xp = backend.namespace(which, *cases)
    n = len(cases)
    if backend.dtype_kind(which.dtype) == "bool":
        result = xp.where(which, cases[1], cases[0])
    else:
        low, high = backend.int_range(which.dtype)
        # No values to check (a trace, a meta tensor): indices are clamped.
        traced = backend.traced(which) or backend.data_free(which)
        if traced:  # clamped by where: torch 2.8's Dynamo cannot trace compat's clip
            which = xp.where(which < 0, xp.zeros_like(which), which)
            which = xp.where(which > n - 1, xp.full_like(which, n - 1), which)
        # Only ==: some libraries cannot order every integer dtype (PyTorch uint64).
        # Indices beyond the dtype's range cannot occur: those cases are unreachable.
        reach = min(n, high + 1)
        # the last reachable case is taken where no mask is true: its own mask is made
        # only to name a bad index (a small call notices one more comparison)
        masks = [which == k for k in range(reach - 1)]
        if not traced and (low < 0 or n <= high) and 0 not in which.shape:
            _check_indices(backend, xp, which, masks, low, high, n)
        result = cases[reach - 1]
        for k in reversed(range(reach - 1)):
            result = xp.where(masks[k], cases[k], result)
        if reach == 1:
            result = xp.where(which == 0, result, result)  # broadcast with which
    return backend.write_out(result, out)


def _check_indices(
    backend: Backend, xp: ModuleType, which: Any, masks: list[Any], low: int, high: int, n: int
) -> None:
    """Raise :func:`index_error` for the first index of ``which`` outside ``[0, n)``;
    ``masks`` are ``which == k`` for every reachable case but the last (its own is made
    here, where it is needed: when the reductions cannot run, and to name the index)."""
    hit = None
    try:  # one reduction over the indices, compared in Python; the masks name the bad value
        bad = (low < 0 and int(xp.min(which)) < 0) or (n <= high and int(xp.max(which)) >= n)
    except (RuntimeError, TypeError, NotImplementedError):
        # no reductions for this dtype (PyTorch uint64): ask the masks
        hit = _any(xp, [*masks, which == len(masks)])
        bad = not bool(xp.all(hit))
    if not bad:
        return
    if not backend.mask_indexing(which):
        # No boolean indexing: name the extreme index instead of the first.
        low_bad = low < 0 and bool(xp.min(which) < 0)
        raise index_error(int(xp.min(which) if low_bad else xp.max(which)), n)
    if hit is None:
        hit = _any(xp, [*masks, which == len(masks)])
    miss = xp.logical_not(hit)
    try:
        found = which[miss]
    except (RuntimeError, TypeError, NotImplementedError):
        # no boolean indexing for this dtype (uint64 on PyTorch 2.6 and 2.8, at
        # least): the first miss by its flattened position
        flat = xp.reshape(miss, (-1,))
        first = int(xp.argmax(xp.astype(flat, xp.int8)))
        found = xp.reshape(which, (-1,))[first : first + 1]
    if found.shape[0]:
        raise index_error(int(found[0]), n)


def _any(xp: ModuleType, masks: list[Any]) -> Any:
    """Where any of ``masks`` is true."""
    hit = masks[0]
    for mask in masks[1:]:
        hit = xp.logical_or(hit, mask)
    return hit


def select_cases(
    backend: Backend,
    conds: tuple[Any, ...],
    choices: tuple[Any, ...],
    default: Any,
    shape: Shape,
) -> Any:
    """The choice of the first true condition, ``default`` where none is: ``xp.where``
    chained from the last condition to the first.

    ``conds`` are boolean or integer (nonzero is true); the choices and the default
    are arrays of the output dtype; all broadcast to ``shape``.
    """
    xp = backend.namespace(*conds, *choices, default)
    result = default
    for cond, choice in zip(reversed(conds), reversed(choices), strict=True):
        if backend.dtype_kind(cond.dtype) != "bool":
            cond = cond != 0
        result = xp.where(cond, choice, result)
    return result


def apply_where(
    backend: Backend,
    cond: Any,
    args: tuple[Any, ...],
    f1: Callable[..., Any],
    f2: Callable[..., Any] | None,
    fill_value: Any,
) -> Any:
    """``f1`` on the elements of ``args`` where ``cond`` is true, ``f2`` (or
    ``fill_value``) on the rest; the inputs are validated and of one shape.

    Where the arrays take boolean indexing
    (:meth:`~arrayselect.plugin.Backend.mask_indexing`), array-api-extra's eager
    algorithm: each function sees only its own elements (the backend's
    ``positions``, ``take_at`` and ``put_at``), and the result dtype is the
    library's promotion of the two sides. Elsewhere (traced, data-free, or a library
    without it), the double where, as JAX's backend does: both sides computed on
    every element, ones where not taken, joined by :func:`arrayselect.where`.
    """
    xp = backend.namespace(cond, *args)
    if not backend.mask_indexing(cond):
        return where(cond, *double_where(xp, backend, cond, args, f1, f2, fill_value))
    taken_at = backend.positions(cond)
    taken = f1(*(backend.take_at(a, taken_at) for a in args))
    if f2 is None:
        if type(fill_value) in PYTHON_SCALARS:
            value, dtype = checked_fill(backend, taken, fill_value)
            result = xp.full_like(cond, value, dtype=dtype)
        else:
            dtype = backend.result_type(taken, fill_value)
            result = xp.astype(fill_value, dtype, copy=True)
    else:
        elsewhere = backend.positions(xp.logical_not(cond))
        other = f2(*(backend.take_at(a, elsewhere) for a in args))
        result = xp.empty_like(cond, dtype=backend.result_type(taken, other))
        backend.put_at(result, elsewhere, _cast(xp, other, result.dtype))
    # cast first: PyTorch's index_put refuses values of another dtype
    backend.put_at(result, taken_at, _cast(xp, taken, result.dtype))
    return result


def double_where(
    xp: ModuleType,
    backend: Backend,
    cond: Any,
    args: tuple[Any, ...],
    f1: Callable[..., Any],
    f2: Callable[..., Any] | None,
    fill_value: Any,
) -> tuple[Any, Any]:
    """``apply_where``'s two sides computed on every element, for the double where:
    ``f1``'s values and ``f2``'s (or ``fill_value``, a Python scalar checked for the
    result dtype), which the caller joins with its ``where``.

    Each function sees ones where it is not taken, so its values there (inf, NaN)
    never reach the result, and the inner where gives the untaken elements an exact
    zero gradient. ``xp`` is the namespace whose ``where`` and ``ones_like`` it uses.
    """
    ones = [xp.ones_like(a) for a in args]
    values = f1(*(xp.where(cond, a, one) for a, one in zip(args, ones, strict=True)))
    if f2 is not None:
        return values, f2(*(xp.where(cond, one, a) for a, one in zip(args, ones, strict=True)))
    if type(fill_value) in PYTHON_SCALARS:
        return values, checked_fill(backend, values, fill_value)[0]
    return values, fill_value


def checked_fill(backend: Backend, taken: Any, value: bool | int | float | complex) -> Any:
    """A Python-scalar ``fill_value`` checked by the core's rule for the result dtype
    (:func:`~arrayselect.plugin.generic.fill_scalar`), and that dtype, as a pair.

    A Python scalar promotes by its type (the standard's rule), so a zero of it
    gives the dtype: array-api-strict's ``result_type`` raises its own
    ``OverflowError`` for a value out of range, where ``fill_scalar`` says why.
    """
    dtype = backend.result_type(taken, type(value)(0))
    return fill_scalar(backend, value, dtype), dtype


def _cast(xp: ModuleType, x: Any, dtype: Any) -> Any:
    """``x`` with ``dtype`` (a promotion's result: a safe cast), itself if it has it."""
    return x if x.dtype == dtype else xp.astype(x, dtype)


def checked_callback(name: str, f: Callable[..., Any], backend: Backend) -> Callable[..., Any]:
    """``f`` as the backend calls it, its failures and wrong results a
    :class:`SelectCallbackError` naming it (the library's own error would name
    neither ``f1`` nor ``f2``, and come from wherever the result was used).

    ``apply_where`` hands a backend these wrappers, made anew on each call;
    :func:`user_function` gives back ``f``.
    """

    def call(*args: Any) -> Any:
        try:
            result = f(*args)
        except SelectCallbackError:
            raise  # from a nested apply_where (Dask runs it block by block): named there
        except Exception as exc:
            raise SelectCallbackError(
                f"apply_where's {name} raised {type(exc).__name__}: {exc}"
            ) from exc
        like = args[0]
        # The usual result (an array of the arguments' own type and shape) costs two
        # comparisons; anything else is looked at closely.
        if type(result) is not type(like) or result.shape != like.shape:
            _check_result(name, result, like, backend)
        if backend.dtype_kind(result.dtype) is None:
            raise SelectCallbackError(
                f"apply_where's {name} must return a boolean, integer, floating or complex "
                f"array, got dtype {result.dtype}"
            )
        return result

    return call


def _check_result(name: str, result: Any, like: Any, backend: Backend) -> None:
    """Raise unless ``result`` is an array of ``like``'s library and shape."""
    if library_of(result) != library_of(like):
        raise SelectCallbackError(
            f"apply_where's {name} must return an array of its arguments' library "
            f"({type(like).__name__}), got {type(result).__name__}"
        )
    if backend.shape(result) != backend.shape(like):
        raise SelectCallbackError(
            f"apply_where's {name} must return an array of its arguments' shape "
            f"{tuple(backend.shape(like))} (it is applied element-wise), got shape "
            f"{tuple(backend.shape(result))}"
        )


# The code object of checked_callback's wrappers, to tell them from other functions.
_CHECKED_CODE: Final = checked_callback("f1", len, cast(Backend, None)).__code__


def user_function(f: Callable[..., Any]) -> Callable[..., Any]:
    """The user's function that ``f`` checks, where ``f`` is a wrapper of
    :func:`checked_callback`; else ``f`` itself. A key for a backend that keeps work per
    user function (JAX compiles ``apply_where`` per pair of functions).

    Read from the wrapper's closure: an attribute set on every new wrapper would cost
    each ``apply_where`` call a dictionary (0.1 us, which a call of 10^3 notices).

    >>> from arrayselect.plugin import generic
    >>> import math
    >>> generic.user_function(generic.checked_callback("f1", math.log, None)) is math.log
    True
    """
    if getattr(f, "__code__", None) is not _CHECKED_CODE:
        return f
    cells = cast(Any, f).__closure__
    return cast(Callable[..., Any], cells[_CHECKED_CODE.co_freevars.index("f")].cell_contents)
