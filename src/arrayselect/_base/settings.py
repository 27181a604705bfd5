"""The settings of arrayselect's compiled kernels, in one place.

Users call them from the package (``arrayselect.set_num_threads``, ...). They
live in the core so that they exist before any backend is loaded; a kernel
subscribes with :func:`on_change` and is told the current values at once and
after every change.

* the number of threads a kernel may split a large select across
  (``ARRAYSELECT_NUM_THREADS``, else the cores this process may run on);
* the most bytes of freed large outputs a kernel keeps for reuse
  (``ARRAYSELECT_POOL_MB``), and :func:`release_memory` to free them now;
* whether :func:`arrayselect.force_portable` routes this thread's or task's calls to
  the portable backend (:func:`portable_forced`; the registry opens the blocks).

In a build without the NumPy kernel (``arrayselect.show_runtime()`` says) no
kernel subscribes: the functions still check, record and return their values,
but nothing uses them.

For example:

A backend reaches this module as ``arrayselect.plugin.settings``; a kernel
subscribes with ``settings.on_change(num_threads, pool_limit, release)`` and is told
the values at once and after every change. A backend that splits work on its own
threads asks:

>>> from arrayselect.plugin import settings
>>> 1 <= settings.get_num_threads() <= settings.MAX_THREADS
True
"""

from __future__ import annotations

import contextvars
import os
import threading
import warnings
from collections.abc import Callable
from typing import Final

from arrayselect._base.errors import SelectTypeError, SelectValueError

__all__ = [
    "ENV_NUM_THREADS",
    "ENV_POOL_MB",
    "MAX_THREADS",
    "default_num_threads",
    "get_num_threads",
    "get_pool_limit",
    "num_threads_chosen",
    "on_change",
    "portable_forced",
    "release_memory",
    "set_num_threads",
    "set_pool_limit",
]

#: Environment variable read at import time for the default thread count.
ENV_NUM_THREADS: Final = "ARRAYSELECT_NUM_THREADS"
#: Environment variable read at import time: most MiB of freed outputs kept (0: none).
ENV_POOL_MB: Final = "ARRAYSELECT_POOL_MB"
#: Largest thread count accepted.
MAX_THREADS: Final = 256
# Enough for a loop of selects at 10^7 float64 (80 MB outputs) to reuse its
# output's memory; measured in docs/numpy_kernel.md.
_DEFAULT_POOL_MB: Final = 128

#: A kernel's subscription: ``num_threads(n)``, ``pool_limit(n_bytes)``, ``release()``.
Listener = tuple[Callable[[int], object], Callable[[int], object], Callable[[], object]]

_lock = threading.Lock()
_listeners: list[Listener] = []

# force_portable's setting, per thread and asyncio task.
force_portable_var: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "arrayselect_force_portable", default=False
)
# How many force_portable(True) blocks are open, in any thread or task. While it
# is 0 no context can be forced, so nothing reads the context variable (cheaper,
# and a plain int is something torch.compile can trace). A force_portable(False)
# block forces nothing and does not count.
forcing = [0]


def portable_forced() -> bool:
    """Whether :func:`arrayselect.force_portable` is in effect in this thread or task.

    Examples
    --------
    >>> import arrayselect as asel
    >>> from arrayselect.plugin import settings
    >>> with asel.force_portable():
    ...     settings.portable_forced()
    True
    >>> settings.portable_forced()
    False
    """
    return bool(forcing[0]) and force_portable_var.get()


def default_num_threads() -> int:
    """Number of cores this process may run on (``os.sched_getaffinity``).

    Returns
    -------
    int
        At least 1. Falls back to ``os.cpu_count()`` where affinity masks are
        not available (macOS, Windows).
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _env_int(name: str, low: int, high: int, fallback: int, unit: str) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return fallback
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        warnings.warn(
            f"ignoring {name}={raw!r}: expected an integer in [{low}, {high}] ({unit}); "
            f"using {fallback}",
            RuntimeWarning,
            stacklevel=4,
        )
        return fallback
    return value


_num_threads = _env_int(ENV_NUM_THREADS, 1, MAX_THREADS, default_num_threads(), "threads")
# Whether the user chose the thread count (the environment or set_num_threads).
_num_threads_chosen = bool(os.environ.get(ENV_NUM_THREADS, "").strip())
_pool_limit = _env_int(ENV_POOL_MB, 0, 1 << 20, _DEFAULT_POOL_MB, "MiB") << 20


def set_num_threads(n: int) -> None:
    """Set how many threads arrayselect's compiled kernels may use.

    Large outputs are split across this many threads (a persistent pool);
    small ones always run on the calling thread.

    Parameters
    ----------
    n : int
        Between 1 and 256. 1 runs everything on the calling thread.

    Raises
    ------
    SelectTypeError
        If ``n`` is not an int (a :class:`TypeError`, like every ``SelectTypeError``).
    SelectValueError
        If ``n`` is out of range (a :class:`ValueError`).

    Examples
    --------
    >>> import arrayselect as asel
    >>> previous = asel.get_num_threads()
    >>> asel.set_num_threads(1)
    >>> asel.get_num_threads()
    1
    >>> asel.set_num_threads(previous)
    """
    global _num_threads, _num_threads_chosen
    if isinstance(n, bool) or not isinstance(n, int):
        raise SelectTypeError(f"the number of threads must be an int, got {type(n).__name__}")
    if not 1 <= n <= MAX_THREADS:
        raise SelectValueError(f"the number of threads must be in [1, {MAX_THREADS}], got {n}")
    with _lock:
        _num_threads = n
        _num_threads_chosen = True
        for threads, _, _ in _listeners:
            threads(n)


def get_num_threads() -> int:
    """How many threads arrayselect's compiled kernels may use.

    Returns
    -------
    int
        The value of the last :func:`set_num_threads`, else
        ``ARRAYSELECT_NUM_THREADS`` (read at import), else the number of cores
        this process may run on.
    """
    return _num_threads


def num_threads_chosen() -> bool:
    """Whether the user chose the thread count (``ARRAYSELECT_NUM_THREADS`` or
    :func:`set_num_threads`) rather than taking the default.

    A backend for a library with threads of its own (PyTorch) then caps the
    kernel at that library's count only when the user did not choose.
    """
    return _num_threads_chosen


def set_pool_limit(n_bytes: int) -> None:
    """Set the most bytes of freed large outputs the kernels keep for reuse.

    A kept block serves the next output of exactly its size without the page
    faults of fresh memory (the NumPy kernel keeps outputs of 32 MiB or more,
    the sizes glibc's malloc maps afresh every time). The default is
    ``ARRAYSELECT_POOL_MB`` (MiB, read at import), else 128 MiB; kept blocks
    stay allocated until :func:`release_memory` or a lower limit frees them.

    Parameters
    ----------
    n_bytes : int
        0 turns the pool off; blocks kept beyond the new limit are freed.

    Raises
    ------
    SelectTypeError
        If ``n_bytes`` is not an int (a :class:`TypeError`).
    SelectValueError
        If ``n_bytes`` is negative (a :class:`ValueError`).
    """
    global _pool_limit
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, int):
        raise SelectTypeError(
            f"the pool limit must be an int (bytes), got {type(n_bytes).__name__}"
        )
    if n_bytes < 0:
        raise SelectValueError(f"the pool limit must be >= 0 bytes, got {n_bytes}")
    with _lock:
        _pool_limit = n_bytes
        for _, pool_limit, _ in _listeners:
            pool_limit(n_bytes)


def get_pool_limit() -> int:
    """The most bytes of freed large outputs the kernels keep for reuse (0: none)."""
    return _pool_limit


def release_memory() -> None:
    """Free every output block the kernels keep for reuse (outputs in use are untouched).

    Call it after a phase of large selects, to return the memory the pool
    holds (at most :func:`get_pool_limit` bytes) to the system.

    Examples
    --------
    >>> import arrayselect as asel
    >>> asel.release_memory()
    """
    with _lock:
        for _, _, release in _listeners:
            release()


def on_change(
    num_threads: Callable[[int], object],
    pool_limit: Callable[[int], object],
    release: Callable[[], object],
) -> None:
    """Subscribe a kernel: it is told the current values now and every change later."""
    with _lock:
        _listeners.append((num_threads, pool_limit, release))
        num_threads(_num_threads)
        pool_limit(_pool_limit)
