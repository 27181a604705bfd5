"""How many threads compiled kernels may use (the NumPy backend's, today).

The setting lives here, in the core, so that it exists before any backend is
loaded; kernels subscribe with :func:`on_change` and are told the current value
at once and after every change. The default is ``ARRAYSELECT_NUM_THREADS`` when
set, else the number of cores this process may run on.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable

__all__ = [
    "ENV_NUM_THREADS",
    "MAX_THREADS",
    "default_num_threads",
    "get_num_threads",
    "on_change",
    "set_num_threads",
]

#: Environment variable read at import time for the default thread count.
ENV_NUM_THREADS = "ARRAYSELECT_NUM_THREADS"
#: Largest thread count accepted.
MAX_THREADS = 256

_lock = threading.Lock()
_listeners: list[Callable[[int], object]] = []


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


def _from_env() -> int:
    raw = os.environ.get(ENV_NUM_THREADS, "").strip()
    if not raw:
        return default_num_threads()
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_THREADS:
        fallback = default_num_threads()
        warnings.warn(
            f"ignoring {ENV_NUM_THREADS}={raw!r}: expected an integer in [1, {MAX_THREADS}]; "
            f"using {fallback} threads",
            RuntimeWarning,
            stacklevel=3,
        )
        return fallback
    return value


_num_threads = _from_env()


def set_num_threads(n: int) -> None:
    """Set how many threads arrayselect's compiled kernels may use.

    Large NumPy outputs are split across this many threads (a persistent pool);
    small ones always run on the calling thread.

    Parameters
    ----------
    n : int
        Between 1 and 256. 1 runs everything on the calling thread.

    Raises
    ------
    TypeError
        If ``n`` is not an int.
    ValueError
        If ``n`` is out of range.

    Examples
    --------
    >>> import arrayselect as asel
    >>> previous = asel.get_num_threads()
    >>> asel.set_num_threads(1)
    >>> asel.get_num_threads()
    1
    >>> asel.set_num_threads(previous)
    """
    global _num_threads
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"the number of threads must be an int, got {type(n).__name__}")
    if not 1 <= n <= MAX_THREADS:
        raise ValueError(f"the number of threads must be in [1, {MAX_THREADS}], got {n}")
    with _lock:
        _num_threads = n
        for listener in _listeners:
            listener(n)


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


def on_change(listener: Callable[[int], object]) -> None:
    """Call ``listener(n)`` now and whenever the thread count changes."""
    with _lock:
        _listeners.append(listener)
        listener(_num_threads)
