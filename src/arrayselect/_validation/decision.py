"""What validation decided for a call: the one decision type every cache keeps.

A :class:`Decision` is made once per call *signature* (what the checks read: types,
shapes, dtypes, the options) by the operation's front end, after the checks of
:mod:`arrayselect._operations.pipeline` passed. Every decision cache keeps one:
``select``'s fast paths (:class:`arrayselect.plugin.SignatureCache`, the torch
recent-call check), the family's memo
(:mod:`arrayselect._dispatch.memo`) and ``where``'s promotions. A later call with the
same signature reuses it and re-checks only what the signature does not fix: a Python
scalar's value against its :class:`~arrayselect._validation.checks.ScalarRange`,
devices where the signature does not hold them, and ``out``'s memory.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, NamedTuple

from arrayselect._rules.backend import Backend
from arrayselect._rules.shapes import SelectPlan, Shape
from arrayselect._validation.checks import ScalarRange

__all__ = ["Decision", "ScalarPlan"]


class ScalarPlan(NamedTuple):
    """How a Python scalar operand becomes a value of the result dtype.

    Attributes
    ----------
    lift
        The type it is converted to first, or ``None``: a bool beside integers is
        ``int(value)`` (``np.select``'s 0 or 1), the lower of two scalars in ``where``
        takes the higher's type.
    rng
        The range its value must lie in, checked on every call; ``None`` where the
        library's own conversion decides (``where`` hands the scalar to ``select``,
        which checks it).
    """

    lift: type | None
    rng: ScalarRange | None


class Decision(NamedTuple):
    """What validation decided for one call signature; every decision cache keeps one.

    Attributes
    ----------
    backend
        The backend serving the call.
    registered_as
        The registry's key of ``backend``, where a cache keeps the decision only while
        the registry still serves the library by it (the family's memo); else ``None``.
    dtype_mode
        The backend's :meth:`~arrayselect.plugin.Backend.dtype_mode` when the call was
        validated: which dtypes the library held as they are then. A cache reuses the
        decision only while the mode is the same.
    dtype
        The output dtype (``None`` for ``apply_where``: its functions' results decide).
    shape
        The output shape (``None`` for ``where``, which ``select`` then decides).
    operands
        Per value operand (``then`` and ``else``; the cases; the conditions, choices
        and default; ``apply_where``'s operands), what is done to it: ``None``, passed
        as it is; ``True``, an array cast to ``dtype`` (for ``apply_where``: broadcast
        to ``shape``); a :class:`ScalarPlan`, a Python scalar converted.
    plan
        ``select``'s plan of the shapes: where each input's dimensions go.
    cond_bool
        Whether ``select``'s ``cond`` is boolean (else integer: nonzero is true).
    with_out
        Whether the call writes into ``out``.
    devices
        Positions of the operands whose devices the core compared, where the
        signature does not hold devices (empty: nothing to compare again).
    like
        Position of the array a Python scalar is placed like (its device).

    Examples
    --------
    What validation decided for ``select`` of a float64 ``then`` and a Python float
    ``else`` (whose value a cache checks against ``else_range`` on every call):

    >>> import numpy as np
    >>> from arrayselect.plugin import validate
    >>> c, x = np.array([True, False]), np.array([1.0, 2.0])
    >>> d = validate(c, x, 0.5, "numpy", -1, "unidirectional", None).decision
    >>> d.dtype, d.shape, d.then_range, d.else_range.high
    (dtype('float64'), (2,), None, 1.7976931348623157e+308)
    """

    backend: Backend
    registered_as: tuple[str, bool] | None
    dtype_mode: Hashable
    dtype: Any
    shape: Shape | None
    operands: tuple[Any, ...]
    plan: SelectPlan | None = None
    cond_bool: bool = True
    with_out: bool = False
    devices: tuple[int, ...] = ()
    like: int = 0

    @classmethod
    def of(
        cls, backend: Backend, dtype: Any, shape: Shape | None, operands: Any, **rest: Any
    ) -> Decision:
        """A decision ``backend`` just made, in its current dtype mode; a cache that keeps
        it sets ``registered_as`` (``rest``: the other fields, by name)."""
        return cls(backend, None, backend.dtype_mode(), dtype, shape, tuple(operands), **rest)

    @property
    def then_range(self) -> ScalarRange | None:
        """For a ``then`` that is a Python scalar, the range its value must lie in
        (re-checked on every call, since the value is not part of the signature);
        ``None`` for an array."""
        return _range(self.operands[0])

    @property
    def else_range(self) -> ScalarRange | None:
        """:attr:`then_range` of ``else``."""
        return _range(self.operands[1])

    @property
    def ranges(self) -> list[ScalarRange | None]:
        """Per value operand, the range of a Python scalar's value, else ``None``."""
        return [_range(plan) for plan in self.operands]


def _range(plan: Any) -> ScalarRange | None:
    return plan.rng if type(plan) is ScalarPlan else None
