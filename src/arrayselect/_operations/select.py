"""``select``: validate once in the core, then hand over to the backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, cast

from arrayselect._base.caches import BoundedCache
from arrayselect._base.errors import SelectError
from arrayselect._dispatch import registry as _registry
from arrayselect._dispatch.registry import resolve
from arrayselect._operations.pipeline import SELECT, check_operands
from arrayselect._rules.backend import Backend
from arrayselect._rules.shapes import SelectPlan, check_options, make_plan
from arrayselect._validation.checks import ScalarRange
from arrayselect._validation.decision import Decision, ScalarPlan

__all__ = [
    "Validated",
    "backend_for",
    "record_kinds",
    "select",
    "select_general",
    "select_multidirectional",
    "validate",
]

# Bound by assignment, not by import: CPython 3.11 compiles ``name.method(...)`` on an
# imported name as an attribute load plus call (for modules), which costs a bound
# method per call; on a plain global it is a method call.
_fast_paths = _registry.fast_paths
_tracing_checks = _registry.tracing_checks

# The dtype kind of each (array type, dtype) a validated call has shown: what the front
# ends that reduce to select (where, select_n) read to know that no promotion is to be
# done, without asking a backend.
_KINDS = BoundedCache[tuple[type, Any], Any]("select.dtype_kinds", 256)
_kinds = _KINDS.data  # read on every such call
# Per array type, the boolean dtype object its validated masks have shown: a mask is
# known boolean when its dtype is that very object (an identity test: 0.04 us, where the
# kinds lookup hashes the dtype; an equal dtype that is another object is asked about
# the whole way).
_BOOL_DTYPES = BoundedCache[type, Any]("select.bool_dtypes", 64)
_bool_dtypes = _BOOL_DTYPES.data


def select(
    cond: Any,
    then: Any,
    else_: Any,
    /,
    *,
    auto_broadcast: str = "numpy",
    axis: int = -1,
    cond_broadcast: str = "unidirectional",
    out: Any = None,
) -> Any:
    """Elementwise ``cond ? then : else`` with OpenVINO/oneDNN/DirectML broadcasting.

    Parameters
    ----------
    cond : array
        Boolean mask, or an integer array where nonzero means true.
    then, else_ : array or Python scalar
        Values taken where ``cond`` is true / false. Arrays must share one dtype,
        which is the output dtype (no promotion). A Python scalar takes the
        other operand's dtype; two scalars of one type give the namespace's
        default dtype for that kind.
    auto_broadcast : {"numpy", "none", "pdpd"}, optional
        ``"none"``: all shapes identical. ``"numpy"``: ``then`` and ``else``
        broadcast to each other, then ``cond`` broadcasts onto the result.
        ``"pdpd"``: ``else`` and ``cond`` are each fitted onto ``then``
        (PaddlePaddle style); the output has ``then``'s shape.
    axis : int, optional
        For ``"pdpd"`` only: the dimension of ``then`` where the fitted
        dimensions start; ``-1`` (default) aligns them to the right.
    cond_broadcast : {"unidirectional", "multidirectional"}, optional
        For ``"numpy"`` only. ``"unidirectional"`` (default, the specification):
        ``cond`` must broadcast one way onto the broadcast of ``then`` and
        ``else``. ``"multidirectional"``: all three broadcast together, so
        ``cond`` may enlarge the output (OpenVINO runtime, ONNX ``Where``).
    out : array, optional
        Array to receive the result (NumPy, CuPy, PyTorch). Its shape and dtype
        must equal the output's; it may be ``then`` or ``else_`` itself.

    Returns
    -------
    array
        The result, in the inputs' namespace and on their device (``out`` when
        given).

    Raises
    ------
    SelectShapeError
        If the shapes do not fit the mode, or ``out`` has the wrong shape.
    SelectTypeError
        For a bad dtype, a non-array input, arrays of two libraries, a scalar of
        the wrong kind, or ``out=`` on an immutable array library.
    ScalarOverflowError
        If a Python scalar is out of the range of the dtype it must take.
    SelectValueError
        For unknown option values, a misplaced ``axis``/``cond_broadcast``, or
        inputs on different devices.

    Examples
    --------
    >>> import numpy as np, arrayselect as asel
    >>> cond = np.array([[False, False], [True, False], [True, True]])
    >>> then = np.array([[-1, 0], [1, 2], [3, 4]])
    >>> else_ = np.array([[11, 10], [9, 8], [7, 6]])
    >>> asel.select(cond, then, else_)
    array([[11, 10],
           [ 1,  8],
           [ 3,  4]])
    >>> asel.select(np.array([1, 0, 2], dtype=np.uint8), np.arange(3.0), -1.0)
    array([ 0., -1.,  2.])
    """
    fast = _fast_paths.get(type(cond))  # steps aside where force_portable() is on
    if fast is not None:
        result = fast(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
        if result is not NotImplemented:
            return result
    return select_positional(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)


class Validated(NamedTuple):
    """A call that passed validation: who runs it, what was decided, and the operands.

    Attributes
    ----------
    backend
        The backend serving the inputs' library.
    decision
        What validation decided for the call's signature (a fast path may cache it).
    then, else_
        The operands as arrays of the output dtype (Python scalars converted).
    """

    backend: Backend
    decision: Decision
    then: Any
    else_: Any


def validate(
    cond: Any,
    then: Any,
    else_: Any,
    auto_broadcast: Any,
    axis: Any,
    cond_broadcast: Any,
    out: Any,
) -> Validated:
    """Every check of :func:`select`, in its order; raises what ``select`` raises.

    The options first, then the operands in the one order of
    :mod:`arrayselect._operations.pipeline` (part of the contract): array types and
    layouts, ``cond``'s dtype, ``then``/``else`` dtypes, dtypes the library holds, scalar
    values, shapes, devices, ``out``.
    """
    mode, axis_int, cb = check_options(auto_broadcast, axis, cond_broadcast)

    def plan(backend: Backend, ranges: list[ScalarRange | None]) -> SelectPlan:
        # A trace must not be guarded on what the plan cache read: plan afresh.
        return (make_plan.__wrapped__ if backend.tracing() else make_plan)(
            backend.shape(cond),
            () if ranges[0] is not None else backend.shape(then),
            () if ranges[1] is not None else backend.shape(else_),
            mode,
            axis_int,
            cb,
        )

    checked = check_operands(
        SELECT, [("cond", cond)], [("then", then), ("else", else_)], out, plan=plan
    )
    backend, dtype, (then_range, else_range) = checked.backend, checked.dtype, checked.ranges
    then_value, else_value = checked.values
    if then_range is not None and else_range is not None:
        then = backend.default_scalar_array(then_value, dtype, cond)
        else_ = backend.default_scalar_array(else_value, dtype, cond)
    elif then_range is not None:
        then = backend.scalar_array(then_value, dtype, else_)
    elif else_range is not None:
        else_ = backend.scalar_array(else_value, dtype, then)
    shapes = cast(SelectPlan, checked.plan)
    decision = Decision.of(
        backend,
        dtype,
        shapes.out_shape,
        [None if rng is None else ScalarPlan(None, rng) for rng in (then_range, else_range)],
        plan=shapes,
        cond_bool=backend.dtype_kind(cond.dtype) == "bool",
        with_out=out is not None,
    )
    return Validated(backend, decision, then, else_)


def select_general(
    cond: Any,
    then: Any,
    else_: Any,
    /,
    *,
    auto_broadcast: Any = "numpy",
    axis: Any = -1,
    cond_broadcast: Any = "unidirectional",
    out: Any = None,
) -> Any:
    """:func:`select` without fast paths: full validation, then the backend."""
    return select_positional(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)


def select_positional(
    cond: Any,
    then: Any,
    else_: Any,
    auto_broadcast: Any,
    axis: Any,
    cond_broadcast: Any,
    out: Any,
    /,
) -> Any:
    """:func:`select_general` in the argument order of a fast path.

    A fast path is called with the seven arguments by position; this is what it hands a
    call it does not serve, with no keyword packing on the way.

    Examples
    --------
    >>> import numpy as np
    >>> from arrayselect.plugin import select_positional
    >>> c = np.array([True, False])
    >>> select_positional(c, np.array([1, 2]), 0, "numpy", -1, "unidirectional", None)
    array([1, 0])
    """
    backend, decision, then, else_ = validate(
        cond, then, else_, auto_broadcast, axis, cond_broadcast, out
    )
    assert decision.plan is not None  # select's decisions hold their plan
    return backend.select(cond, then, else_, decision.plan, out)


def record_kinds(backend: Backend, arrays: list[Any]) -> None:
    """Keep the dtype kind of each of ``arrays`` (validated, served by ``backend``) for
    :func:`select_multidirectional`."""
    for x in arrays:
        kind = _KINDS.put((type(x), x.dtype), backend.dtype_kind(x.dtype))
        if kind == "bool":
            _BOOL_DTYPES.put(type(x), x.dtype)


def select_multidirectional(
    cond: Any,
    then: Any,
    else_: Any,
    out: Any,
    agree: Callable[[Any, Any, type, dict[tuple[type, Any], Any]], bool] | None = None,
) -> Any:
    """``select(cond, then, else_, cond_broadcast="multidirectional", out=out)`` by
    select's fast path, for a front end whose call is exactly that select; else
    ``NotImplemented``.

    A front end calls it for a call that means this select once ``cond`` is boolean
    (``where`` with nothing to promote, ``select_n`` with a boolean ``which`` and two
    cases): no trace running, ``cond``'s dtype the boolean dtype :func:`record_kinds`
    has seen for its type, and ``agree(then, else_, type(cond), kinds)`` where given. A
    call the fast path does not serve, or refuses (any :class:`SelectError`, in select's
    words), answers ``NotImplemented``: the front end's whole way then validates it and
    raises in its own words. Nothing is written before a refusal.
    """
    array_type = type(cond)
    fast = _fast_paths.get(array_type)
    if fast is None:
        return NotImplemented
    tracing = _tracing_checks.get(array_type)
    if tracing is not None and tracing():
        return NotImplemented  # a compiler traces: no cache is read (it would guard on it)
    try:
        if cond.dtype is not _bool_dtypes.get(array_type) or (
            agree is not None and not agree(then, else_, array_type, _kinds)
        ):
            return NotImplemented
        return fast(cond, then, else_, "numpy", -1, "multidirectional", out)
    except (KeyError, AttributeError, SelectError):
        return NotImplemented


def backend_for(cond: Any, then: Any, else_: Any, out: Any = None) -> Backend:
    """The backend :func:`select` would use for these inputs.

    Examples
    --------
    >>> import numpy as np, arrayselect as asel
    >>> asel.backend_for(np.array([True]), np.array([1.0]), 0.0).name
    'numpy'
    """
    return resolve(cond, then, else_, out)[0]
