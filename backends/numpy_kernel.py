"""The compiled Select kernel of the NumPy backend.

The kernel (``arrayselect.backends._select_kernel``, built from
``backends/_kernel/select_kernel.c`` by the package's own build) selects on raw
bits per item size, so every NumPy and ``ml_dtypes`` dtype goes through it.
There is deliberately no pure-Python fallback: if the extension is missing,
importing this module (and so ``arrayselect``) fails loudly instead of quietly
running ``np.where``.

Outputs of at least :func:`get_parallel_threshold` elements are split across a
persistent pool of threads, as many as :func:`arrayselect.set_num_threads`
allows (default: ``ARRAYSELECT_NUM_THREADS``, else the cores this process may
use).
"""

from __future__ import annotations

from typing import Any

from arrayselect import _threads

from . import _select_kernel as _k

__all__ = [
    "get_parallel_threshold",
    "kernel_select",
    "kernel_stats",
    "set_parallel_threshold",
]

#: ``kernel_select(cond, then, else_, out, out_shape, cond_aligned, then_aligned,
#: else_aligned)``: the compiled entry point (see the C source for the contract).
kernel_select: Any = _k.select


def get_parallel_threshold() -> int:
    """Output size (in elements) from which the kernel splits work across threads.

    Returns
    -------
    int
        The measured default unless :func:`set_parallel_threshold` changed it.
    """
    return int(_k.get_parallel_min())


def set_parallel_threshold(n: int | None) -> None:
    """Set the output size (in elements) from which work is split across threads.

    Parameters
    ----------
    n : int or None
        A non-negative element count; ``None`` restores the measured default.
        Meant for benchmarks that measure the threshold.
    """
    _k.set_parallel_min(int(_k.DEFAULT_PARALLEL_MIN) if n is None else int(n))


def kernel_stats() -> dict[str, int]:
    """Counters of the compiled kernel since import.

    Returns
    -------
    dict
        ``calls`` (selects run by the kernel), ``threaded_calls`` (those split
        across threads) and ``temporary_calls`` (those computed into a temporary
        because ``out`` partially overlapped an input).
    """
    stats: dict[str, int] = _k.stats()
    return stats


_threads.on_change(_k.set_num_threads)
