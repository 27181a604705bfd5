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

Outputs of 1 MiB or more are allocated through a small pool: when such an
output is freed its memory is kept (at most 8 blocks and ``ARRAYSELECT_POOL_MB``
MiB in all, default 256) for the next output of exactly the same size, which so
skips the page faults of fresh memory. :func:`release_memory` frees the pool;
``ARRAYSELECT_POOL_MB=0`` or :func:`set_pool_limit` turn it off.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from arrayselect import _threads

from . import _select_kernel as _k

__all__ = [
    "ENV_POOL_MB",
    "explain",
    "get_parallel_threshold",
    "kernel_select",
    "kernel_stats",
    "pool_info",
    "release_memory",
    "set_parallel_threshold",
    "set_pool_limit",
]

#: Environment variable: most MiB of freed large outputs kept for reuse (0: none).
ENV_POOL_MB = "ARRAYSELECT_POOL_MB"
_DEFAULT_POOL_MB = 256

#: ``kernel_select(cond, then, else_, out, out_shape, cond_aligned, then_aligned,
#: else_aligned)``: the compiled entry point (see the C source for the contract).
kernel_select: Any = _k.select

#: ``explain(...)`` with the arguments of :data:`kernel_select`: how the kernel
#: would run the call (coalesced shape, strides, inner loop, threads), without
#: running it. For tests and benchmarks.
explain: Any = _k.explain


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
        machine) and ``temporary_calls`` (those computed into a temporary
        because ``out`` partially overlapped an input).
    """
    stats: dict[str, int] = _k.stats()
    return stats


def set_pool_limit(n_bytes: int) -> None:
    """Set the most bytes of freed large outputs kept for reuse.

    Parameters
    ----------
    n_bytes : int
        0 turns the pool off. Cached blocks are freed either way.
    """
    _k.set_pool_limit(int(n_bytes))


def release_memory() -> None:
    """Free every output block the pool keeps (outputs in use are not touched)."""
    _k.release_pool()


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


def _pool_mb_from_env() -> int:
    raw = os.environ.get(ENV_POOL_MB, "").strip()
    if not raw:
        return _DEFAULT_POOL_MB
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        warnings.warn(
            f"ignoring {ENV_POOL_MB}={raw!r}: expected a non-negative integer (MiB); "
            f"using {_DEFAULT_POOL_MB}",
            RuntimeWarning,
            stacklevel=2,
        )
        return _DEFAULT_POOL_MB
    return value


set_pool_limit(_pool_mb_from_env() << 20)
_threads.on_change(_k.set_num_threads)
