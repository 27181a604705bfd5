"""The NumPy backend (CPU): every select runs through the compiled kernel.

Its fast path is the core's :class:`~arrayselect.plugin.SignatureCache`, given
two compiled parts of the kernel: the raw signature, which the core's hit path
writes into a call's key, and ``Prepared``, a validated call's plan and dtype
as one compiled callable. In a build without the kernel
(:data:`.kernel.KERNEL_MISSING` says why) every select runs through NumPy's own
functions instead (:mod:`.numpy_route`), with the same answers.

Besides NumPy's own dtypes it handles the ``ml_dtypes`` extension dtypes
(bfloat16, the float8 family, int4, ...): the kernel moves raw bits per item
size, so it never needs to know what a dtype means. :mod:`..shared.kernel` has
the kernel's diagnostics. ``import arrayselect`` imports this package.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from arrayselect.plugin import (
    Backend,
    Decision,
    FastPath,
    NumpyDtypes,
    OutLayout,
    SelectPlan,
    Shape,
    SignatureCache,
)

from ..shared import numpy_family as _family
from ..shared.kernel import (
    KERNEL_MISSING,
    kernel_prepared,
    kernel_raw_signature,
    kernel_select,
    kernel_signature,
)
from .numpy_route import numpy_select

__all__ = ["BACKEND", "NumpyBackend", "as_kernel_operands", "create"]

# NumpyBackend.signature: the kernel's reader, or the two attributes without it
_SIGNATURE: Any = ("shape", "dtype") if kernel_signature is None else staticmethod(kernel_signature)


class NumpyBackend(NumpyDtypes, Backend):
    """Select for NumPy arrays (``ml_dtypes`` included), on the compiled kernel."""

    name = "numpy"
    supports_out = True
    #: What a validation decision depends on about an array (no weak types in NumPy):
    #: its shape and dtype, and for the core's check of ``out`` its strides and
    #: writeable flag, which the kernel reads into one small key (a family call signs
    #: every operand: 0.65 us for nine arrays as attributes, a third of the lookup at
    #: 1 element); shape and dtype as attributes in a build without the kernel.
    signature = _SIGNATURE
    raw_signature = kernel_raw_signature
    #: The kernel's signature holds all that :meth:`shape` and :meth:`out_layout`
    #: report about ``out`` (a subclass that reads them another way is not so sure).
    signature_holds_out_layout = KERNEL_MISSING is None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.out_layout is not NumpyBackend.out_layout or cls.shape is not NumpyBackend.shape:
            cls.signature_holds_out_layout = False

    def shape(self, x: Any) -> Shape:
        return x.shape  # type: ignore[no-any-return]

    def out_layout(self, out: Any) -> OutLayout:
        writeable = bool(out.flags.writeable)
        why_not = "" if writeable else "out.flags.writeable is False"
        return OutLayout(writeable, why_not, out.strides, out.itemsize)

    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        return np.asarray(value, dtype=dtype)

    def result_type(self, x1: Any, x2: Any) -> Any:
        return np.result_type(x1, x2)  # NumPy 2: Python scalars are weak (NEP 50)

    def astype(self, x: Any, dtype: Any) -> Any:
        return x.astype(dtype)

    def library_scalar(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        return np.where(True, value, np.zeros((), dtype))  # np.where's own conversion

    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        cond, then, else_ = as_kernel_operands(cond, then, else_)
        if KERNEL_MISSING is not None:
            return numpy_select(cond, then, else_, plan, out)
        return kernel_select(cond, then, else_, out, plan.out_shape, *plan.dims)

    def fast_path(self) -> FastPath:
        if KERNEL_MISSING is None:
            return SignatureCache(self, (np.ndarray,), None, prepare=self._prepare).fast_path()
        return SignatureCache(self, (np.ndarray,), self._run).fast_path()

    def _prepare(self, decision: Decision) -> Any:
        """A validated call as the kernel's compiled callable (``Prepared``); operands
        it does not take as they are go to :meth:`_run` with the decision."""
        plan = decision.plan
        assert plan is not None  # select's decisions hold their plan
        return kernel_prepared(plan.out_shape, *plan.dims, decision.dtype, self._run, decision)

    def _run(self, cond: Any, then: Any, else_: Any, decision: Decision, out: Any) -> Any:
        """A cached signature's call without the kernel (Python scalars already checked)."""
        if type(then) is not np.ndarray:
            then = self.scalar_array(then, decision.dtype, else_)
        if type(else_) is not np.ndarray:
            else_ = self.scalar_array(else_, decision.dtype, then)
        assert decision.plan is not None  # select's decisions hold their plan
        return self.select(cond, then, else_, decision.plan, out)

    # -- the select family ---------------------------------------------------------

    def promote(self, values: Sequence[Any]) -> Any:
        return np.result_type(*values)  # np.select's own promotion (NEP 50 scalars)

    def broadcast_to(self, x: Any, shape: Shape) -> Any:
        return np.broadcast_to(x, shape)  # type: ignore[arg-type]

    # The functions themselves, not methods around them: a wrapper's frame costs a
    # warm call of 10^3 elements a few percent.
    select_n = staticmethod(_family.select_n)
    select_cases = staticmethod(_family.select_cases)

    def mask_indexing(self, x: Any) -> bool:
        return True  # NumPy always has it (and asking costs a microsecond a call)

    # the function itself (the backend is its first argument), as above
    apply_where = _family.apply_where

    def positions(self, mask: Any) -> Any:
        return _family.positions(mask)

    def take_at(self, x: Any, where: Any) -> Any:
        return _family.take_at(x, where)

    def put_at(self, result: Any, where: Any, values: Any) -> None:
        _family.put_at(result, where, values)


def as_kernel_operands(cond: Any, then: Any, else_: Any) -> tuple[Any, Any, Any]:
    """NumPy scalars (``np.float32(1)``) as 0-d arrays; a cond of an odd item size as bool.

    The kernel takes ``np.ndarray`` operands and conds of 1, 2, 4 or 8 bytes.
    """
    if type(cond) is not np.ndarray:
        cond = np.asarray(cond)
    if cond.itemsize not in (1, 2, 4, 8):
        cond = cond != 0
    if type(then) is not np.ndarray:
        then = np.asarray(then)
    if type(else_) is not np.ndarray:
        else_ = np.asarray(else_)
    return cond, then, else_


#: The one NumPy backend.
BACKEND = NumpyBackend()


def create(xp: ModuleType) -> NumpyBackend:
    """Entry-point factory: the NumPy backend (``xp`` is not needed)."""
    return BACKEND
