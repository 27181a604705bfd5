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

import os
import warnings
from typing import Any

import numpy as np

from arrayselect.plugin import SelectPlan

from .kernel import KERNEL_MISSING

__all__ = ["KernelMissingWarning", "numpy_select", "warn_kernel_missing"]


class KernelMissingWarning(RuntimeWarning):
    """arrayselect runs without its compiled NumPy kernel: same answers, slower."""


# Measured on 2026-11-27 on the project's shared 2-core x86-64 VM (AMD EPYC, load
# average 10.8, the minimum of 15 timing rounds; float32, same-shape operands): a
# build without the compiled modules against the normal build, with np.where in
# the same processes.
_COST = (
    "measured on a 2-core x86-64 machine, select of float32 arrays took 4.1 µs at "
    "10^3 elements (numpy.where 1.8 µs, the kernel 0.9 µs) and 5.5 ms at 10^6 "
    "(numpy.where 4.8 ms, the kernel 0.21 ms)"
)

_warned = False


def warn_kernel_missing() -> None:
    """Warn, once per process, that a NumPy select runs without the kernel.

    Called where a select would have run the kernel; does nothing after the
    first call, with the kernel present, or with ``ARRAYSELECT_KERNEL_WARNING=0``.
    """
    global _warned
    if _warned or KERNEL_MISSING is None:
        return
    _warned = True
    if os.environ.get("ARRAYSELECT_KERNEL_WARNING", "1") == "0":
        return
    warnings.warn(
        f"arrayselect runs without its compiled NumPy kernel ({KERNEL_MISSING}). "
        "NumPy selects give the same results through numpy.where and Python, but "
        f"slower: {_COST}. To get the kernel, install a C compiler (Linux: gcc and the "
        "Python headers, e.g. `apt install gcc python3-dev`; macOS: `xcode-select "
        "--install`; Windows: Visual Studio Build Tools' C++ workload) and reinstall "
        "arrayselect (`pip install --force-reinstall --no-deps arrayselect`); "
        "`arrayselect.show_runtime()` says what is present. Silence this warning with "
        "ARRAYSELECT_KERNEL_WARNING=0 or "
        "warnings.filterwarnings('ignore', message='arrayselect runs without').",
        KernelMissingWarning,
        stacklevel=2,
    )


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
