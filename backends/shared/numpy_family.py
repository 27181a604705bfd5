"""The select family on NumPy arrays: ``select_n``, ``select_cases``, ``apply_where``.

The core has validated the call; these functions only run it. The compiled
kernel (:mod:`.kernel_cases`: one threaded pass over all the operands, every
dtype as raw bits) gets the operands broadcast to the output shape (views,
stride 0 where broadcast). In a build without the kernel NumPy's own functions
do the work: ``np.choose`` (which
finds an index out of range in its own pass) for ``select_n``, and
``np.select``'s algorithm (one masked ``np.copyto`` per condition, from the last
to the first) for ``select_cases``. ``apply_where`` is the eager algorithm of
the core's generic ``apply_where`` (:mod:`arrayselect._operations.generic`) with NumPy's own
calls (the generic one reaches NumPy through ``array_api_compat``, which costs a
small call more than the work), reading and writing the mask's elements by flat
position.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Final

import numpy as np

from arrayselect.plugin import Backend, BoundedCache, Shape, errors, generic

from . import scalar_key
from .kernel import KERNEL_MISSING, warn_kernel_missing

#: Python scalar operands (exact types), as the core defines them.
PYTHON_SCALARS = Backend.PYTHON_SCALARS

__all__ = [
    "HAVE_KERNEL",
    "apply_where",
    "positions",
    "put_at",
    "select_cases",
    "select_n",
    "take_at",
]

_kernel_select_n: Any = None
_kernel_select_cases: Any = None
_kernel_apply_take: Any = None
_kernel_apply_put: Any = None
if KERNEL_MISSING is None:  # a build without the kernel runs NumPy's functions below
    from . import _select_kernel as _k
    from .kernel_cases import kernel_apply_put as _kernel_apply_put
    from .kernel_cases import kernel_apply_take as _kernel_apply_take
    from .kernel_cases import kernel_select_cases as _kernel_select_cases
    from .kernel_cases import kernel_select_n as _kernel_select_n

#: Whether the compiled kernel runs the family (else NumPy's functions do).
HAVE_KERNEL: Final = KERNEL_MISSING is None


# np.choose takes at most this many choices (NumPy's NPY_MAXARGS).
_CHOOSE_MAX: Final = 64


def _first_bad(which: np.ndarray, n: int) -> int:
    """The first index of ``which`` (in C order) outside ``[0, n)``, or -1 if none.

    Called to name the value on the error path (and for a byte-swapped ``which``).
    """
    if which.size == 0:
        return -1
    bad = which < 0 if which.dtype.kind == "i" else np.zeros(which.shape, bool)
    bad |= which >= n
    found = np.flatnonzero(bad)
    return int(which.reshape(-1)[found[0]]) if found.size else -1


def _any_out_of_range(which: np.ndarray, n: int) -> bool:
    """Whether an integer ``which`` holds an index outside ``[0, n)``: one ``max``
    over its bits read as unsigned (a negative index reads as a huge one), no
    temporaries.
    """
    if which.size == 0:
        return False
    if not which.dtype.isnative:
        return _first_bad(which, n) != -1
    return int(which.view(np.dtype(f"u{which.dtype.itemsize}")).max()) >= n


def _as_index(which: np.ndarray) -> np.ndarray:
    """``which`` as np.choose takes it (it refuses uint64: cast, the error path looks
    at the original values).
    """
    return which.astype(np.intp) if which.dtype == np.uint64 else which


def select_n(
    which: Any, cases: tuple[Any, ...], shape: Shape, out: Any, scratch: bool = False
) -> Any:
    """``cases[which]`` for validated NumPy operands; an index out of range raises
    :func:`~arrayselect.plugin.errors.index_error` and leaves ``out`` untouched, unless
    ``scratch`` (``out`` is a fresh array the caller drops on error: no check first).
    """
    out_shape: tuple[int, ...] = shape  # type: ignore[assignment]  # NumPy: no unknown sizes
    if HAVE_KERNEL:
        # The kernel places the operands in the core's output shape itself (stride 0
        # where broadcast): a Python scalar's 0-d case is never made full size, and the
        # usual small call pays no conversions (np.broadcast_to costs more than the
        # kernel's pass at 10^3).
        n = len(cases)
        # an index out of range is found before the kernel may write part of out
        if (
            out is not None
            and not scratch
            and which.dtype != np.bool_
            and _any_out_of_range(which, n)
        ):
            raise errors.index_error(_first_bad(which, n), n)
        try:
            result = _k.select_n(which, cases, out, out_shape)
            if result is NotImplemented:  # not ndarrays, or a byte-swapped which
                result = _kernel_select_n(
                    np.asarray(which), [np.asarray(c) for c in cases], out, out_shape
                )
            return result
        except IndexError as exc:
            raise errors.index_error(int(exc.args[0]), n) from None
    which = np.asarray(which)
    cases = tuple(np.asarray(c) for c in cases)
    n = len(cases)
    warn_kernel_missing()
    if which.dtype == np.bool_:
        chosen = np.where(which, cases[1], cases[0])  # new memory: out may alias a case
        if out is None:
            return chosen
        np.copyto(out, chosen)
        return out
    if n > _CHOOSE_MAX:
        if _any_out_of_range(which, n):
            raise errors.index_error(_first_bad(which, n), n)
        index = np.broadcast_to(which, out_shape)
        result = np.empty(out_shape, cases[0].dtype) if out is None else out
        for k, case in enumerate(cases):
            np.copyto(result, case, where=index == k)
        return result
    try:
        # mode="raise" buffers out, so a bad index leaves it untouched.
        return np.choose(_as_index(which), cases, out=out, mode="raise")
    except ValueError:
        raise errors.index_error(_first_bad(which, n), n) from None


def select_cases(
    conds: tuple[Any, ...],
    choices: tuple[Any, ...],
    default: Any,
    shape: Shape,
    out: Any = None,
) -> Any:
    """The choice of the first true condition, ``default`` where none is, for validated
    NumPy operands of one dtype, into ``out`` (an array of ``shape`` and that dtype)
    where given.
    """
    out_shape: tuple[int, ...] = shape  # type: ignore[assignment]
    if HAVE_KERNEL:
        # The kernel places the operands itself (see select_n) and takes ndarrays as
        # they are; anything else (a condition that is not a bool or an integer, an
        # operand that is not an ndarray) it answers NotImplemented, and the wrapper
        # converts it.
        result = _k.select_cases(conds, choices, default, out, out_shape)
        if result is NotImplemented:
            result = _kernel_select_cases(
                tuple(np.asarray(c) for c in conds),
                tuple(np.asarray(c) for c in choices),
                np.asarray(default),
                out,
                out_shape,
            )
        return result
    warn_kernel_missing()
    result = np.empty(out_shape, np.asarray(default).dtype) if out is None else out
    np.copyto(result, default)
    for cond, choice in zip(reversed(conds), reversed(choices), strict=True):
        np.copyto(result, choice, where=cond if cond.dtype == np.bool_ else cond != 0)
    return result


# apply_where's mask reads and writes: flat positions (C order), then a take and an
# assignment at them. Boolean indexing with a random mask branches on every
# element: at 10^6 float64, x[mask] and out[mask] = v took 4.5 ms each on the
# development VM; np.flatnonzero 0.45 ms, np.take 0.32 ms, the assignment through
# a flat view 0.53 ms (np.put: 1.5 ms, used where there is no flat view). The
# methods are called directly: at 10^3 elements np.flatnonzero's and np.take's
# Python wrappers cost as much as the work (0.8 us of 1.5 us).


def positions(mask: np.ndarray) -> np.ndarray:
    """The flat positions (C order) of ``mask``'s true elements (``np.flatnonzero``)."""
    return mask.ravel().nonzero()[0]


def take_at(x: np.ndarray, where: np.ndarray) -> np.ndarray:
    """The elements of ``x`` at the flat positions ``where``, 1-D (``np.take``)."""
    return x.take(where)


def put_at(result: np.ndarray, where: np.ndarray, values: Any) -> None:
    """Write ``values`` into ``result`` at the flat positions ``where``."""
    if result.flags.c_contiguous:
        result.reshape(-1)[where] = values  # a view: written in place
    else:
        np.put(result, where, values)


def apply_where(
    backend: Any,
    cond: np.ndarray,
    args: tuple[np.ndarray, ...],
    f1: Callable[..., Any],
    f2: Callable[..., Any] | None,
    fill_value: Any,
) -> np.ndarray:
    """``f1(*args)`` where ``cond`` is true, ``f2(*args)`` or ``fill_value`` elsewhere,
    for validated NumPy operands of one shape: each function gets only its own
    elements, 1-D in C order; the result dtype is ``backend.result_type`` of both
    sides (kept per pair of dtypes, see :func:`_promote`), filled as
    ``np.full_like`` fills.

    The kernel's ``apply_take`` and ``apply_put`` (one branchless pass each) read
    and write the elements where the operands are C-contiguous ndarrays; any
    other operand (or a build without the kernel) goes through flat positions.
    """
    where: list[Any] = []  # the positions of cond's true elements, once needed
    got = _kernel_apply_take(cond, args[0]) if HAVE_KERNEL and len(args) == 1 else None
    if got is not None and got is not NotImplemented:  # the usual call, in one step
        taken = f1(got)
    else:
        taken = f1(*[_take(cond, a, where) for a in args])
    if f2 is None:
        if type(fill_value) not in PYTHON_SCALARS:
            dtype = _promote(backend, taken, fill_value)
            filled: np.ndarray = fill_value.astype(dtype, copy=True)
            put_at(filled, where[0] if where else positions(cond), taken)
            return filled
        dtype, base = _scalar_fill(backend, taken, fill_value)
        other = None
    else:
        inverse = np.logical_not(cond)
        other = f2(*[_take(inverse, a, []) for a in args])
        dtype = _promote(backend, taken, other)
        base = other = _as_dtype(other, dtype)
    if HAVE_KERNEL:
        result = _kernel_apply_put(cond, _as_dtype(taken, dtype), base)
        if result is not NotImplemented:
            return result  # type: ignore[no-any-return]
    result = np.empty_like(cond, dtype)
    if other is None:
        result[...] = base
    else:
        put_at(result, positions(np.logical_not(cond)), other)
    put_at(result, where[0] if where else positions(cond), taken)
    return result


def _take(cond: np.ndarray, x: np.ndarray, where: list[Any]) -> np.ndarray:
    """``x``'s elements where ``cond`` is true, 1-D in C order; ``where`` keeps the
    positions of the true elements once they were needed (for the next operand).
    """
    if HAVE_KERNEL:
        got: np.ndarray = _kernel_apply_take(cond, x)
        if got is not NotImplemented:
            return got
    if not where:
        where.append(positions(cond))
    return take_at(x, where[0])


# What the backend's result_type gave, per (its function, the taken side's dtype, the
# other side's dtype or Python scalar type). NumPy 2 promotes a Python scalar by its
# type, never its value (NEP 50), so these are all it depends on; the lookup costs a
# third of np.result_type's call, which a call of 10^3 elements notices.
_PROMOTED = BoundedCache[tuple[Any, Any, Any], Any]("shared.numpy_family.promotions", 256)
_promoted = _PROMOTED.data  # read on every call


def _promote(backend: Any, taken: Any, other: Any) -> Any:
    """``backend.result_type(taken, other)``, kept per kind of operands."""
    key = (
        type(backend).result_type,
        taken.dtype,
        type(other) if type(other) in PYTHON_SCALARS else other.dtype,
    )
    try:
        return _promoted[key]  # not .get(): see arrayselect._base.caches
    except KeyError:
        return _PROMOTED.put(key, backend.result_type(taken, other))


# Per Python scalar fill_value: the backend, the taken side's dtype, the result dtype
# _promote gave and the read-only 0-d array of it made from the value by the core's
# rule. Each entry is kept under two keys: the value object's id, the cheapest lookup
# (the entry holds the object, so that the id stays its own: np.nan, a module constant
# or a literal in the caller's code is one object from call to call), and the value's
# type and bits (scalar_key: 0.0 and -0.0 are equal but differ in sign, and nan equals
# nothing, so equality cannot key it), which serves a fill made anew on every call
# (fill_value=float("nan")). A call of 10^3 elements notices the promotion, the range
# check and the conversion (about 1.5 us of its 5), and even the bits key in place of
# the id (about 0.1 us).
_FILLS = BoundedCache[Hashable, tuple[Any, Any, Any, Any, np.ndarray]](
    "shared.numpy_family.apply_where_fills", 256
)
_fills = _FILLS.data  # read on every call


def _scalar_fill(backend: Any, taken: Any, fill_value: Any) -> tuple[Any, np.ndarray]:
    """The result dtype and ``fill_value`` as a 0-d array of it (read-only), checked by
    the core's :func:`~arrayselect.plugin.generic.fill_scalar`, kept per value."""
    ident, bits = id(fill_value), None
    try:
        # `in` first: a fill made anew misses by id on every call, and a raised
        # KeyError costs more than the test (a KeyError still means a miss: another
        # thread may empty the cache between the test and the read)
        if ident in _fills:
            value, owner, taken_dtype, dtype, base = _fills[ident]
            if value is fill_value and owner is backend and taken_dtype is taken.dtype:
                return dtype, base
        bits = scalar_key(fill_value)
        _, owner, taken_dtype, dtype, base = _fills[bits]
        if owner is backend and taken_dtype is taken.dtype:
            return dtype, base
    except KeyError:
        pass
    if bits is None:
        bits = scalar_key(fill_value)
    dtype = _promote(backend, taken, fill_value)
    # the core's range check; then np.full_like's conversion without its Python
    # wrapper: for a Python scalar, np.array(v, dtype) converts as ndarray.fill does
    base = np.array(generic.fill_scalar(backend, fill_value, dtype), dtype)
    base.flags.writeable = False
    entry = (fill_value, backend, taken.dtype, dtype, base)
    _FILLS.put(id(fill_value), entry)
    _FILLS.put(bits, entry)
    return dtype, base


def _as_dtype(x: Any, dtype: Any) -> Any:
    """``x`` with ``dtype`` (the result's, which promotion makes a safe cast)."""
    return x if x.dtype is dtype or x.dtype == dtype else x.astype(dtype)
