"""The interface every backend implements.

The core validates everything (options, shapes, dtypes, scalars, ``out``)
through the small queries below, then calls :meth:`Backend.select` with a
:class:`~arrayselect._shapes.SelectPlan`. A backend therefore only reshapes,
broadcasts by NumPy rules and selects.
"""

from __future__ import annotations

import abc
from typing import Any, Literal

from arrayselect._shapes import SelectPlan, Shape

__all__ = ["Backend", "DtypeKind"]

DtypeKind = Literal["bool", "int", "uint", "float", "complex"]


class Backend(abc.ABC):
    """One array library's implementation of Select.

    Attributes
    ----------
    name
        Short name shown in messages and benchmark tables.
    supports_out
        Whether ``out=`` can receive the result.
    out_refusal
        Why ``out=`` is refused, when it is.
    """

    name: str = "backend"
    supports_out: bool = False
    out_refusal: str = "this array library's arrays cannot be written in place"

    @abc.abstractmethod
    def dtype_kind(self, dtype: Any) -> DtypeKind | None:
        """Kind of ``dtype``, or ``None`` when Select does not support it."""

    @abc.abstractmethod
    def shape(self, x: Any) -> Shape:
        """Shape of ``x`` as a tuple; unknown sizes (e.g. Dask NaN) are ``None``."""

    @abc.abstractmethod
    def int_range(self, dtype: Any) -> tuple[int, int]:
        """Smallest and largest value of an integer ``dtype``."""

    @abc.abstractmethod
    def float_max(self, dtype: Any) -> float:
        """Largest finite value of a real or complex floating ``dtype`` (per component)."""

    @abc.abstractmethod
    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        """A 0-d array holding ``value`` on ``like``'s device.

        ``dtype=None`` means the namespace's default dtype for the scalar's kind.
        The value has been checked to fit ``dtype``.
        """

    def check_devices(self, named: list[tuple[str, Any]]) -> None:
        """Raise :class:`~arrayselect.SelectValueError` if the arrays are on different devices."""
        return None

    def check_out(self, out: Any) -> None:
        """Raise if ``out`` cannot be written (e.g. a read-only NumPy array)."""
        return None

    @abc.abstractmethod
    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        """Run Select on validated inputs.

        ``then`` and ``else_`` are arrays of the output dtype; ``cond`` is boolean
        or integer (nonzero is true). Each input is reshaped to ``plan.aligned``
        where that is not ``None``; the three then broadcast by NumPy rules to
        ``plan.out_shape``. When ``out`` is not ``None`` the result is written into
        it and ``out`` is returned.
        """
