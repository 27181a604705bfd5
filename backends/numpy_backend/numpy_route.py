"""Select through NumPy's own functions: the NumPy backend of a build without its kernel.

When ``_select_kernel`` was not compiled (no C compiler at install time) or does
not load, every call runs here instead: each input viewed with the plan's
aligned shape (:attr:`arrayselect.plugin.SelectPlan.aligned`, a reshape of a
view), an integer ``cond`` compared with 0, one ``np.where``, and for ``out=``
one ``np.copyto``. The core has validated the call exactly as for the kernel,
so the answers (values, dtypes, errors, ``out``) are the same; only the speed
differs (``np.where`` is single-threaded and allocates; see docs/platforms.md).

``pip install`` shows the build's own warning only with ``-v``, so the first
select that would have used the kernel warns once per process
(:class:`KernelMissingWarning`, a ``RuntimeWarning``) with what is missing, what
it costs and how to get the kernel; ``ARRAYSELECT_KERNEL_WARNING=0`` or a
``warnings`` filter silences it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arrayselect.plugin import SelectPlan

from ..shared.kernel import KernelMissingWarning, warn_kernel_missing

__all__ = ["KernelMissingWarning", "numpy_select"]


def numpy_select(cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
    """A validated select on NumPy arrays (0-d arrays for scalars), as the kernel answers it.

    The result has ``then``'s dtype (the kernel copies raw bits, so a byte-swapped
    dtype stays as it is); with ``out`` it is written there, also when ``out``
    overlaps an input (``np.where`` computes into a fresh array first).
    """
    warn_kernel_missing()
    shapes = plan.aligned
    if shapes[0] is not None:
        cond = cond.reshape(shapes[0])
    if shapes[1] is not None:
        then = then.reshape(shapes[1])
    if shapes[2] is not None:
        else_ = else_.reshape(shapes[2])
    if cond.dtype != np.bool_:
        cond = cond != 0
    result = np.where(cond, then, else_)
    if out is not None:
        # out's dtype is the output dtype (the core checked it): a plain copy.
        np.copyto(out, result, casting="unsafe")
        return out
    if result.dtype != then.dtype:
        result = result.astype(then.dtype)
    return result
