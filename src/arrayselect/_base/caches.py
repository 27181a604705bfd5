"""Every cache the library keeps: one type, one eviction rule, each registered.

A cache holds what the core decided for a key (a call signature, a dtype, a type) and
is a :class:`BoundedCache`: a ``dict`` of at most ``maxsize`` entries, registered
under its name when made, so that :func:`cache_sizes` reports every one. The rule:
a write that would pass the bound first empties the cache. What it held is cheap to
decide again, and a hit stays one plain dict lookup, with no bookkeeping per hit (an
LRU order would cost a write on every hit, and a lock under free threading). The
concurrency tests check that no cache exceeds its bound however many distinct shapes
and dtypes go through :func:`arrayselect.select`, and ``tests/test_caches.py`` reads
the source for any other dict that is written to after import.

The hot paths read their caches as ``cache[key]`` (a miss is a ``KeyError``), not
``cache.get(key)``: on free-threaded CPython 3.13 (3.13.5t measured), ``dict.get``
called from a thread that did not create the dict, with a key equal to the stored
one but not the same object (a tuple holding a type or a dtype, built anew on each
call), took about 20 µs instead of 0.15; ``d[key]`` and ``key in d`` did not. A
call of ``where`` in a worker thread took 24 µs instead of 2.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["BoundedCache", "cache_sizes", "clear_all", "register_cache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: ``report() -> (current size, bound)``
CacheReport = Callable[[], tuple[int, int]]

_reports: dict[str, CacheReport] = {}
_lock = threading.Lock()
# Every BoundedCache alive, for clear_all (a backend's caches go with the backend).
_instances: weakref.WeakSet[BoundedCache[Any, Any]] = weakref.WeakSet()


def register_cache(name: str, report: CacheReport) -> None:
    """Make cache ``name`` visible to :func:`cache_sizes` (re-registering replaces).

    ``report()`` returns the cache's size and bound; the cache-bounds test calls every
    registered one after a storm of distinct calls.

    Examples
    --------
    >>> from arrayselect._base.caches import register_cache
    >>> register_cache("mylib.layouts", lambda: (0, 64))
    """
    with _lock:
        _reports[name] = report


def cache_sizes() -> dict[str, tuple[int, int]]:
    """``{name: (size, bound)}`` for every registered cache."""
    with _lock:
        reports = list(_reports.items())
    return {name: report() for name, report in reports}


def clear_all() -> None:
    """Empty every :class:`BoundedCache` (tests compare warm answers with cold ones)."""
    with _lock:
        caches = list(_instances)
    for cache in caches:
        cache.clear()


class BoundedCache(Generic[K, V]):
    """A cache of at most ``maxsize`` entries, registered as ``name``.

    Read ``cache.data``, a plain ``dict`` (``data[key]``; a miss is a ``KeyError``):
    C hit paths and tracing compilers read it like any dict, and a module may bind it
    to a name once, since it stays the same object. Write with :meth:`put`: a new key
    in a full cache first empties it, the one eviction rule of the library.

    Examples
    --------
    >>> from arrayselect.plugin import BoundedCache
    >>> kinds = BoundedCache("mylib.kinds", 2)
    >>> kinds.put("a", 1), kinds.put("b", 2), kinds.put("c", 3)
    (1, 2, 3)
    >>> kinds.data, kinds.report()
    ({'c': 3}, (1, 2))
    """

    __slots__ = ("__weakref__", "data", "maxsize", "name")

    def __init__(self, name: str, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.name = name
        self.maxsize = maxsize
        self.data: dict[K, V] = {}
        register_cache(name, self.report)
        with _lock:
            _instances.add(self)

    def put(self, key: K, value: V) -> V:
        """Store ``value`` under ``key`` (emptying a full cache first); return ``value``.

        No lock (tracing compilers follow plain dict operations): a lost race between
        threads costs only deciding again. Trimmed after inserting, so that each thread
        leaves the cache within its bound, with or without a GIL.
        """
        data = self.data
        data[key] = value
        if len(data) > self.maxsize:
            data.clear()  # cheap to decide again
            data[key] = value
        return value

    def clear(self) -> None:
        """Forget every entry."""
        self.data.clear()

    def __len__(self) -> int:
        return len(self.data)

    def report(self) -> tuple[int, int]:
        """``(size, bound)``, what :func:`cache_sizes` shows."""
        return len(self.data), self.maxsize
