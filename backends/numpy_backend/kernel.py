"""The compiled Select kernel of the NumPy backend: diagnostics and tuning knobs.

The kernel (``arrayselect.backends.numpy_backend._select_kernel``, built from
``backends/numpy_backend/_kernel/`` by the package's own build) selects on raw
bits per item size, so every NumPy and ``ml_dtypes`` dtype goes through it.
There is deliberately no pure-Python fallback: if the extension is missing,
importing this module (and so ``arrayselect``) fails loudly instead of quietly
running ``np.where``.

Outputs of at least :func:`get_parallel_threshold` elements are split across a
persistent pool of threads, as many as :func:`arrayselect.set_num_threads`
allows. Outputs of 1 MiB or more are allocated through a small pool of freed
blocks, bounded by :func:`arrayselect.set_pool_limit` and emptied by
:func:`arrayselect.release_memory`. Those user settings live in the core
(:func:`arrayselect.plugin.on_settings_change`); this module subscribes the kernel to them and
offers what tests and benchmarks look at.
"""

from __future__ import annotations

from typing import Any

from arrayselect.plugin import on_settings_change

from . import _select_kernel as _k

__all__ = [
    "explain",
    "get_parallel_threshold",
    "isa_info",
    "kernel_select",
    "kernel_stats",
    "pool_info",
    "set_isa",
    "set_parallel_threshold",
]

#: ``kernel_select(cond, then, else_, out, out_shape, cond_dims, then_dims,
#: else_dims)``: the compiled entry point; ``*_dims`` are the plan's
#: :attr:`~arrayselect.plugin.SelectPlan.dims` (see the C source for the contract).
kernel_select: Any = _k.select

#: ``explain(...)`` with the arguments of :data:`kernel_select`: how the kernel
#: would run the call (coalesced shape, strides, inner loop and the instruction
#: set it was compiled for, threads), without running it. For tests and benchmarks.
explain: Any = _k.explain


def isa_info() -> dict[str, Any]:
    """The instruction sets of the kernel's loops.

    The loops are compiled for the baseline of the build and, on x86-64 with
    GCC or Clang, for AVX2 and AVX-512; the best one this CPU supports is used
    unless ``ARRAYSELECT_CPU`` (``baseline``, ``avx2`` or ``avx512``, read at
    import) or :func:`set_isa` asks for a lower one.

    Returns
    -------
    dict
        ``current`` (the instruction set in use), ``best`` (the best one this
        CPU supports), ``usable`` and ``compiled`` (lists of names).
    """
    info: dict[str, Any] = _k.isa_info()
    return info


def set_isa(name: str) -> None:
    """Use the loops compiled for ``name`` from the next call on (tests, benchmarks).

    Parameters
    ----------
    name : str
        ``"baseline"``, ``"avx2"`` or ``"avx512"``: one of ``isa_info()["usable"]``.

    Raises
    ------
    ValueError
        If ``name`` is unknown, not compiled in, or not supported by this CPU.
    """
    _k.set_isa(name)


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
        across threads), ``backed_off_calls`` (large enough to split, but run on
        the calling thread because threads recently did not pay: a busy
        machine), ``temporary_calls`` (those computed into a temporary
        because ``out`` partially overlapped an input), and the fast path's
        ``hits`` and ``misses``.
    """
    stats: dict[str, int] = {**_k.stats(), **_k.fast_stats()}
    return stats


def pool_info() -> dict[str, int]:
    """State of the output pool.

    Returns
    -------
    dict
        ``limit`` and ``cached_bytes`` (bytes), ``cached_blocks``, and ``hits`` /
        ``misses`` (large outputs that did / did not reuse a block).
    """
    info: dict[str, int] = _k.pool_info()
    return info


on_settings_change(_k.set_num_threads, _k.set_pool_limit, _k.release_pool)
