"""The select family: ``select_n``, ``select_cases`` and ``apply_where``.

Each function validates its call here, once, with the rules ``select`` uses
(the same library resolution, dtype kinds, Python-scalar rule, NumPy
broadcasting, device and ``out`` checks, from :mod:`arrayselect._validation.checks` and
:mod:`arrayselect._rules.shapes`), and then hands arrays that are known to be valid
to the backend's own :attr:`~arrayselect.plugin.Backend.select_n`,
:attr:`~arrayselect.plugin.Backend.select_cases` or
:attr:`~arrayselect.plugin.Backend.apply_where`, or to the core's generic
algorithm (:mod:`arrayselect._operations.generic`) where it has none. Only what depends on values
is left to the backend: an index out of range in ``select_n``, which an eager
backend finds in its pass over the data and reports with
:func:`~arrayselect.plugin.errors.index_error`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from arrayselect._base.errors import SelectTypeError, SelectValueError
from arrayselect._dispatch import memo as _memo
from arrayselect._operations import generic as _generic
from arrayselect._operations.pipeline import APPLY_WHERE, SELECT_CASES, SELECT_N, check_operands
from arrayselect._operations.select import record_kinds, select_multidirectional
from arrayselect._rules.backend import Backend
from arrayselect._rules.shapes import Shape
from arrayselect._validation.checks import (
    PYTHON_SCALARS,
    check_out_layout,
    check_scalar,
    checked_scalars,
    scalar_fits_kind,
    scalar_range,
    value_kind,
)
from arrayselect._validation.decision import Decision, ScalarPlan

__all__ = ["apply_where", "select_cases", "select_n"]

_LIFT: Final[dict[str, type]] = {"int": int, "uint": int, "float": float, "complex": complex}


def select_n(which: Any, *cases: Any, out: Any = None) -> Any:
    """Element-wise ``cases[which]``: ``jax.lax.select_n`` for every array library.

    Parameters
    ----------
    which : array
        Boolean (then exactly two cases: ``False`` picks ``cases[0]``, ``True``
        ``cases[1]``) or integer: the index of the case to take.
    *cases : array or Python scalar
        At least one. Arrays share one dtype, the output dtype (no promotion); a
        Python scalar takes it (two or more scalars alone: the library's default
        dtype for their type), as in :func:`select`. ``which`` and the cases
        broadcast together by NumPy rules.
    out : array, optional
        Array to receive the result (NumPy, CuPy, PyTorch), of the output shape
        and dtype.

    Returns
    -------
    array
        The result, in the inputs' namespace and on their device (``out`` when
        given).

    Raises
    ------
    SelectValueError
        For an index outside ``[0, len(cases))`` on an eager library (nothing is
        written); inside ``jax.jit`` indices are clamped, as ``lax.select_n``
        does. Also for a boolean ``which`` with other than two cases, and inputs
        on different devices.
    SelectTypeError
        For a ``which`` that is not boolean or integer, cases of different
        dtypes, a Python scalar of the wrong kind, non-array inputs, no case.
    SelectShapeError
        If the shapes do not broadcast together, or ``out`` has the wrong shape.

    Examples
    --------
    >>> import numpy as np, arrayselect as asel
    >>> which = np.array([0, 2, 1, 2], dtype=np.int8)
    >>> asel.select_n(which, np.arange(4), 10 * np.arange(4), -1)
    array([ 0, -1, 20, -1])
    >>> asel.select_n(np.array([True, False]), 0.0, np.array([1.5, 2.5]))
    array([1.5, 0. ])
    """
    if len(cases) == 2:
        # A boolean which over two cases is select(which, cases[1], cases[0]) with
        # everything broadcast together, by the same rules (select_n's dtype rule is
        # select's): select's fast path, where it serves the call.
        result = select_multidirectional(which, cases[1], cases[0], out)
        if result is not NotImplemented:
            return result
    if cases:
        operands = (which, *cases) if out is None else (which, *cases, out)
        kind = "select_n" if out is None else "select_n out"
        memo = _memo.find(kind, operands)
        if memo is not None and (not memo.devices or _memo.one_device(memo, operands)):
            if out is not None:  # what the signature does not fix: out's memory
                check_out_layout(memo.backend, out)
            return _select_n_decided(memo, which, cases, out)
    if not cases:
        raise SelectTypeError("select_n takes at least one case after which")
    named_cases = [(f"cases[{i}]", x) for i, x in enumerate(cases)]
    backend, named, dtype, ranges, values, shape, _ = check_operands(
        SELECT_N, [("which", which)], named_cases, out
    )
    record_kinds(backend, [which])
    # The position of the first array case, else of which. A plain loop: torch 2.8's
    # Dynamo cannot trace next() with a default.
    like = 0
    for i, rng in enumerate(ranges):
        if rng is None:
            like = i + 1
            break
    make = backend.scalar_array if like else backend.default_scalar_array
    ready = tuple(
        x if rng is None else make(x, dtype, (which, *cases)[like])
        for x, rng in zip(values, ranges, strict=True)
    )
    operands = (which, *cases) if out is None else (which, *cases, out)
    plans = [None if rng is None else ScalarPlan(None, rng) for rng in ranges]
    decision = Decision.of(backend, dtype, shape, plans, with_out=out is not None, like=like)
    kind = "select_n" if out is None else "select_n out"
    _memo.remember(kind, decision, operands, cases, [x for _, x in named])
    return _run_select_n(backend, which, ready, shape, out)


def _run_select_n(
    backend: Backend, which: Any, cases: tuple[Any, ...], shape: Shape, out: Any
) -> Any:
    """The backend's own ``select_n`` on validated inputs, or the generic one."""
    own = backend.select_n
    if own is None:
        return _generic.select_n(backend, which, cases, shape, out)
    return own(which, cases, shape, out)


def _select_n_decided(memo: Decision, which: Any, cases: tuple[Any, ...], out: Any) -> Any:
    """``select_n`` for a call whose signature validation has passed before."""
    if any(memo.operands):  # Python scalars: their values are checked as validation does
        named = [(f"cases[{i}]", x) for i, x in enumerate(cases)]
        ranges = memo.ranges
        values = checked_scalars(named, memo.dtype, ranges)
        like = (which, *cases)[memo.like]
        make = memo.backend.scalar_array
        cases = tuple(
            x if rng is None else make(x, memo.dtype, like)
            for x, rng in zip(values, ranges, strict=True)
        )
    # inline, not _run_select_n: one Python frame less on the warm path
    shape = memo.shape
    assert shape is not None  # the family's decisions hold their output shape
    own = memo.backend.select_n
    if own is None:
        return _generic.select_n(memo.backend, which, cases, shape, out)
    return own(which, cases, shape, out)


def select_cases(condlist: Any, choicelist: Any, default: Any = 0, /) -> Any:
    """The choice of the first true condition, ``default`` where none is (``np.select``).

    Parameters
    ----------
    condlist : list or tuple of arrays
        Boolean conditions (integer arrays: nonzero is true). The first one that
        is true at a position picks the choice there.
    choicelist : list or tuple of arrays or Python scalars
        As many as conditions.
    default : array or Python scalar, optional
        Taken where no condition is true (``0``).

    Returns
    -------
    array
        The conditions, choices and default broadcast together (NumPy rules);
        the dtype is the library's own ``select``'s (NumPy, JAX, CuPy: their
        ``select``'s, bit for bit) or the standard's ``result_type`` of the
        choices and default; Python scalars count by their type.

    Raises
    ------
    SelectTypeError
        For lists that are not lists, a condition that is not boolean or
        integer, choices the library does not promote, non-array inputs.
    SelectValueError
        For lists of different lengths or no condition, inputs on different
        devices.
    SelectShapeError
        If the shapes do not broadcast together.
    ScalarOverflowError
        If a Python scalar does not fit the result dtype.

    Examples
    --------
    >>> import numpy as np, arrayselect as asel
    >>> x = np.array([-2.0, 0.5, 3.0, np.nan])
    >>> asel.select_cases([x < 0, x < 1, x < 10], [-x, x, 10 * x], np.inf)
    array([ 2. ,  0.5, 30. ,  inf])
    """
    for name, seq in (("condlist", condlist), ("choicelist", choicelist)):
        if not isinstance(seq, (list, tuple)):
            raise SelectTypeError(
                f"{name} must be a list or tuple of arrays, got {type(seq).__name__}"
            )
    if len(condlist) != len(choicelist):
        raise SelectValueError(
            f"condlist and choicelist must have the same length, got {len(condlist)} "
            f"conditions and {len(choicelist)} choices"
        )
    if not condlist:
        raise SelectValueError("select_cases takes at least one condition; condlist is empty")
    operands = (*condlist, *choicelist, default)
    memo = _memo.find("select_cases", operands)
    if memo is not None and (not memo.devices or _memo.one_device(memo, operands)):
        return _select_cases_decided(memo, operands, len(condlist))
    conds = [(f"condlist[{i}]", c) for i, c in enumerate(condlist)]
    values = [(f"choicelist[{i}]", c) for i, c in enumerate(choicelist)]
    values.append(("default", default))
    backend, named, dtype, _, _, shape, _ = check_operands(SELECT_CASES, conds, values)
    kind = value_kind(backend, "the result", dtype)  # checked: only read here
    arrays = [(name, x) for name, x in values if type(x) not in PYTHON_SCALARS]
    like = arrays[0][1] if arrays else conds[0][1]
    plans: list[Any] = [None] * len(conds)  # conditions are passed as they are
    for _, x in values:
        if type(x) in PYTHON_SCALARS:
            lift = None if scalar_fits_kind(type(x), kind) else _LIFT[kind]
            # a bool beside integers is 0 or 1, as in np.select
            plans.append(ScalarPlan(lift, scalar_range(backend, lift or type(x), dtype, kind)))
        else:
            plans.append(x.dtype != dtype)
    like_at = next(i for i, x in enumerate(operands) if x is like)
    decided = Decision.of(backend, dtype, shape, plans, like=like_at)
    values_at = operands[len(conds) :]
    _memo.remember("select_cases", decided, operands, values_at, [x for _, x in named])
    return _select_cases_decided(decided, operands, len(conds))


def _select_cases_decided(memo: Decision, operands: tuple[Any, ...], n: int) -> Any:
    """``select_cases`` for validated operands (conditions, choices, default), as ``memo``
    says: arrays of another dtype cast, Python scalars checked and made arrays.
    """
    backend, dtype = memo.backend, memo.dtype
    ready = list(operands)
    for i in range(n, len(operands)):
        plan = memo.operands[i]
        if plan is True:
            ready[i] = backend.astype(operands[i], dtype)
        elif plan:
            x = operands[i] if plan.lift is None else plan.lift(operands[i])
            name = f"choicelist[{i - n}]" if i < len(operands) - 1 else "default"
            x = check_scalar(plan.rng, name, x, dtype, "the result")
            ready[i] = backend.scalar_array(x, dtype, operands[memo.like])
    conds, choices, default = tuple(ready[:n]), tuple(ready[n:-1]), ready[-1]
    shape = memo.shape
    assert shape is not None  # the family's decisions hold their output shape
    own = backend.select_cases
    if own is None:
        return _generic.select_cases(backend, conds, choices, default, shape)
    return own(conds, choices, default, shape)


def apply_where(
    cond: Any,
    args: Any,
    f1: Callable[..., Any],
    f2: Callable[..., Any] | None = None,
    /,
    *,
    fill_value: Any = None,
) -> Any:
    """``f1(*args)`` where ``cond`` is true, ``f2(*args)`` (or ``fill_value``) elsewhere.

    ``array_api_extra.apply_where``, with its result bit for bit, fused into the
    backends: on eager libraries ``f1`` and ``f2`` see only their own elements (no
    warning from ``log`` of the negatives it would not take); on JAX and under
    PyTorch autograd the gradient through the untaken branch is exactly zero, never
    NaN; on Dask and inside ``jax.jit`` it stays lazy.

    Parameters
    ----------
    cond : array
        Boolean.
    args : array or tuple of arrays
        Broadcast together with ``cond`` (and an array ``fill_value``).
    f1, f2 : callable
        Element-wise functions of ``len(args)`` arrays; give ``f2`` or
        ``fill_value``, not both.
    fill_value : array or Python scalar, optional
        The value where ``cond`` is false, when ``f2`` is not given.

    Returns
    -------
    array
        The result; its dtype is the library's promotion of both sides' dtypes.

    Raises
    ------
    SelectTypeError
        For both or neither of ``f2`` and ``fill_value``, functions that are not
        callable, a ``cond`` that is not boolean, non-array inputs.
    SelectShapeError
        If the shapes do not broadcast together.
    SelectValueError
        For inputs on different devices.
    SelectCallbackError
        If ``f1`` or ``f2`` raises (chained as ``__cause__``), or returns something
        other than an array of its arguments' library and shape with a boolean or
        numeric dtype; the message names the function.

    Examples
    --------
    >>> import numpy as np, arrayselect as asel
    >>> x = np.array([-1.0, 0.0, np.e])
    >>> asel.apply_where(x > 0, x, np.log, fill_value=np.nan)
    array([nan, nan,  1.])
    >>> asel.apply_where(x > 0, (x, 2.0 * x), lambda a, b: a + b, lambda a, b: a - b)
    array([1.        , 0.        , 8.15484549])
    """
    if (f2 is None) == (fill_value is None):
        given = "neither" if f2 is None else "both"
        raise SelectTypeError(f"apply_where takes exactly one of f2 and fill_value, got {given}")
    if not callable(f1) or (f2 is not None and not callable(f2)):
        name, f = ("f2", f2) if callable(f1) else ("f1", f1)
        raise SelectTypeError(f"{name} must be callable, got {type(f).__name__}")
    tupled = isinstance(args, tuple)
    ready = args if tupled else (args,)
    filled = f2 is None
    operands = (cond, *ready, fill_value) if filled else (cond, *ready)
    kind = _APPLY_KINDS[tupled, filled]
    memo = _memo.find(kind, operands)
    if memo is None or (memo.devices and not _memo.one_device(memo, operands)):
        memo = _validate_apply_where(kind, operands, tupled, filled)
    backend = memo.backend
    if any(memo.operands):  # operands of another shape: broadcast to the output's
        shape = memo.shape
        assert shape is not None  # the family's decisions hold their output shape
        cond, *broadcast = (
            backend.broadcast_to(x, shape) if plan else x
            for x, plan in zip(operands, memo.operands, strict=True)
        )
        ready = tuple(broadcast[: len(ready)])
        if filled:
            fill_value = broadcast[-1]
    checked1 = _generic.checked_callback("f1", f1, backend)
    checked2 = None if f2 is None else _generic.checked_callback("f2", f2, backend)
    own = backend.apply_where
    if own is None:
        return _generic.apply_where(backend, cond, tuple(ready), checked1, checked2, fill_value)
    return own(cond, tuple(ready), checked1, checked2, fill_value)


# The memo's kind of an apply_where call, per (args is a tuple, fill_value given):
# the operands are (cond, *args[, fill_value]).
_APPLY_KINDS: Final = {
    (True, True): "apply_where args fill_value",
    (True, False): "apply_where args f2",
    (False, True): "apply_where arg fill_value",
    (False, False): "apply_where arg f2",
}


def _validate_apply_where(
    kind: str, operands: tuple[Any, ...], tupled: bool, filled: bool
) -> Decision:
    """Validate the operands of an ``apply_where`` call (``cond``, the arguments, and
    ``fill_value`` when ``filled``); what was decided, kept for the call's signature.

    The decision is the backend, the output shape and, per operand, whether it
    must be broadcast to it (the result dtype depends on what ``f1`` and ``f2``
    return: the backend promotes on each call).
    """
    n = len(operands) - 1 - filled
    names = [f"args[{i}]" for i in range(n)] if tupled else ["args"]
    backend, named, _, _, _, shape, _ = check_operands(
        APPLY_WHERE,
        [("cond", operands[0])],
        [("fill_value", operands[-1])] if filled else [],
        args=list(zip(names, operands[1 : n + 1], strict=True)),
    )
    # Broadcasting costs microseconds a call even to the same shape, which small
    # calls notice: only operands of another shape are.
    # the result dtype is what f1 and f2 return: the backend promotes on each call
    plans = [type(x) not in PYTHON_SCALARS and backend.shape(x) != shape for x in operands]
    decided = Decision.of(backend, None, shape, plans)
    _memo.remember(kind, decided, operands, (), [x for _, x in named])
    return decided
