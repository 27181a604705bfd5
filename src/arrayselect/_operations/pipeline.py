"""One validation pipeline: every operation's operands, checked in one documented order.

An operation is described once, as an :class:`Operation`: what its masks may be, which
rule gives its result dtype, how its operands broadcast. :func:`check_operands` runs
the checks of :mod:`arrayselect._validation.checks` on any call of it, always in this
order, which is part of the contract (the first failing check gives the error):

1. array types and libraries (:func:`~arrayselect._dispatch.registry.resolve_inputs`);
2. layouts the library's arrays may have that Select cannot read;
3. the masks' dtypes;
4. the operation's own rule on its operands, if any (``select_n``: a boolean ``which``
   takes exactly two cases);
5. the value dtypes, by the operation's dtype rule, then the dtypes the library holds;
6. the Python scalars' values, against the result dtype;
7. the shapes;
8. devices;
9. ``out``.

``select``, ``select_n``, ``select_cases`` and ``apply_where`` are front ends over it:
each checks its options (the mode, the lists' lengths, the functions) first, then hands
its operands here, and keeps what was decided for its call signature. ``where`` is a
front end over ``select``: it promotes, then calls ``select``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from arrayselect._base.errors import SelectTypeError, SelectValueError
from arrayselect._dispatch.registry import resolve_inputs
from arrayselect._rules.backend import Backend
from arrayselect._rules.shapes import SelectPlan, Shape, broadcast_together
from arrayselect._validation.checks import (
    PYTHON_SCALARS,
    SCALAR_ZEROS,
    ScalarRange,
    check_devices,
    check_held_dtypes,
    check_layouts,
    check_mask,
    check_out,
    checked_scalars,
    value_kind,
    values_dtype,
)

__all__ = ["APPLY_WHERE", "SELECT", "SELECT_CASES", "SELECT_N", "Checked", "Operation"]

Named = list[tuple[str, Any]]


@dataclass(frozen=True)
class Operation:
    """How one operation's operands are validated.

    Attributes
    ----------
    integer_masks
        What an integer mask means, in the error for a mask of another dtype;
        ``""`` where a mask must be boolean.
    dtype_rule
        ``"same"``: the value arrays share one dtype, the result's, which Python
        scalars take (Select never promotes). ``"promote"``: the library promotes
        the values (``np.select``'s rule); Python scalars count by their type.
        ``"kinds"``: the result dtype is decided later (``apply_where``: by what its
        functions return); a value array only needs a dtype of a kind Select takes.
    broadcast
        What the error says when the masks and value arrays do not broadcast
        together; ``""`` where the front end plans the shapes itself (``select``'s
        modes).
    check
        The operation's own rule on its operands, run after the masks' dtypes.
    """

    integer_masks: str
    dtype_rule: Literal["same", "promote", "kinds"]
    broadcast: str = ""
    check: Callable[[Backend, Named, Named], None] | None = None


class Checked(NamedTuple):
    """What :func:`check_operands` decided for a call.

    Attributes
    ----------
    backend
        The backend serving the inputs' library.
    named
        The array inputs with their names, ``out`` last: what a decision cache compares.
    dtype
        The result dtype (``None`` under the ``"kinds"`` rule).
    ranges
        Per value operand, the range of a Python scalar under the ``"same"`` rule, else
        ``None``.
    values
        The value operands, each Python scalar as it is to be converted.
    shape
        The output shape.
    plan
        The front end's plan of the shapes, where it makes one (``select``'s modes).
    """

    backend: Backend
    named: Named
    dtype: Any
    ranges: list[ScalarRange | None]
    values: list[Any]
    shape: Shape
    plan: SelectPlan | None


def _select_n_check(backend: Backend, masks: Named, values: Named) -> None:
    """``select_n``'s own rule: a boolean ``which`` picks between exactly two cases."""
    if backend.dtype_kind(masks[0][1].dtype) == "bool" and len(values) != 2:
        raise SelectValueError(
            f"which is boolean, so select_n takes exactly 2 cases (False picks cases[0], "
            f"True cases[1]), got {len(values)}; pass an integer which for n-way selection"
        )


SELECT = Operation("integers mean nonzero is true", "same")
SELECT_N = Operation(
    "an integer is the index of the case to take",
    "same",
    "select_n broadcasts which and the cases together",
    _select_n_check,
)
SELECT_CASES = Operation(
    "integers mean nonzero is true",
    "promote",
    "select_cases broadcasts the conditions, choices and default",
)
APPLY_WHERE = Operation("", "kinds", "apply_where broadcasts cond, args and fill_value together")


def check_operands(
    op: Operation,
    masks: Named,
    values: Named,
    out: Any = None,
    *,
    args: Sequence[tuple[str, Any]] = (),
    plan: Callable[[Backend, list[ScalarRange | None]], SelectPlan] | None = None,
) -> Checked:
    """Every check of a call of ``op``, in the pipeline's order; raises the first error.

    Parameters
    ----------
    op
        The operation.
    masks, values
        Its mask and value operands, each with the name its errors use. A value may
        be a Python scalar.
    out
        The ``out`` array, or ``None``.
    args
        Arrays the operation passes to functions (``apply_where``'s): they are
        resolved, broadcast and placed like the others, and their dtypes are the
        functions' business.
    plan
        For ``op.broadcast == ""``: the front end's shape plan, given the backend and
        the values' scalar ranges.
    """
    inputs = [*masks, *args, *values] if out is None else [*masks, *args, *values, ("out", out)]
    backend, named = resolve_inputs(inputs, [name for name, _ in values])
    check_layouts(backend, named)
    for name, mask in masks:
        check_mask(backend, name, mask, op.integer_masks)
    if op.check is not None:
        op.check(backend, masks, values)
    arrays = [(name, x) for name, x in values if type(x) not in PYTHON_SCALARS]
    ranges: list[ScalarRange | None] = [None] * len(values)
    checked = [x for _, x in values]
    if op.dtype_rule == "same":
        dtype, ranges = values_dtype(backend, masks[0][1], values)
        check_held_dtypes(backend, [*masks, *values])
        checked = checked_scalars(values, dtype, ranges)
    elif op.dtype_rule == "promote":
        dtype = _promote(backend, masks, values, arrays)
    else:
        dtype = None
        for name, x in arrays:
            value_kind(backend, name, x.dtype)
    planned = None
    if op.broadcast:
        shape = broadcast_together(
            [(name, backend.shape(x)) for name, x in [*masks, *args, *arrays]], op.broadcast
        )
    else:
        assert plan is not None, "an operation without a broadcast rule plans its shapes"
        planned = plan(backend, ranges)
        shape = planned.out_shape
    check_devices(backend, named)
    if out is not None:
        check_out(backend, out, shape, dtype)
    return Checked(backend, named, dtype, ranges, checked, shape, planned)


def _promote(backend: Backend, masks: Named, values: Named, arrays: Named) -> Any:
    """The library's promotion of the values: ``select_cases``'s result dtype."""
    for name, x in arrays:
        value_kind(backend, name, x.dtype)
    promoted: list[Any] = [SCALAR_ZEROS.get(type(x), x) for _, x in values]
    if not arrays:
        # Only Python scalars: the library's default dtype of the highest kind among
        # them (what np.select, jnp.select and torch give); the masks name the library,
        # whose namespace needs an array to promote.
        top: type = max((type(x) for x in promoted), key=PYTHON_SCALARS.index)
        promoted = [backend.namespace(*[m for _, m in masks]).asarray(top(0))]
    try:
        dtype = backend.promote(promoted)
    except Exception as exc:  # the library does not promote these
        raise SelectTypeError(  # only select_cases promotes
            f"choicelist and default cannot be promoted to one dtype by {backend.name}: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    value_kind(backend, "the result", dtype)
    return dtype
