"""The fast-path protocol: cache what validation decided for a call signature.

:class:`SignatureCache` is the one fast path of the native backends. The first
call with a given *signature* (the exact types, shapes and dtypes of the
operands or the types of Python scalars, the options, ``out``'s shape and
dtype) runs the core's full validation (:func:`arrayselect._operations.select.validate`),
which raises exactly the errors of the general path; when it passes, the
backend runs the call and the :class:`~arrayselect._validation.decision.Decision` is kept.
Later calls with that signature re-check only what the signature does not fix,
with the core's own checks or data the core derived:

* a Python scalar's value against its :class:`~arrayselect._validation.checks.ScalarRange`;
* devices, with :func:`~arrayselect._validation.checks.check_devices`;
* ``out``'s memory, with :func:`~arrayselect._validation.checks.check_out_layout`,
  unless the backend's signature fixes it
  (:attr:`~arrayselect.plugin.Backend.signature_holds_out_layout`).

Any doubt sends the call to the general path, which raises the error in the
general path's order. So a cache can never change an answer. The hit path is
C (``_fastcall.c``): for a backend whose whole call takes microseconds, the
cache's bookkeeping in Python would be most of arrayselect's cost; the checks
it calls are these Python functions. The NumPy backend gives it a raw signature
(written into the key by C) and a compiled ``prepare``, so that a warm NumPy call
runs no Python code from the hit path to the kernel. A build without a C compiler
runs the same steps in Python (:mod:`arrayselect._dispatch.fastcall_py`), with the
same answers.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from arrayselect._base.caches import BoundedCache
from arrayselect._base.errors import SelectError
from arrayselect._dispatch.fastcall_py import SignatureCall as _PySignatureCall
from arrayselect._dispatch.registry import FastPath
from arrayselect._operations.select import select_positional, validate
from arrayselect._rules.backend import Backend, devices_fixed_by_signature
from arrayselect._validation.checks import check_devices, check_out_layout
from arrayselect._validation.decision import Decision

try:
    from arrayselect._dispatch._fastcall import SignatureCall
except ImportError as exc:  # built without a C compiler: the same hit path in Python
    from arrayselect._dispatch.fastcall_py import SignatureCall  # type: ignore[assignment]

    #: Why the compiled hit path is missing (``None`` when it is there).
    FASTCALL_MISSING: str | None = f"{type(exc).__name__}: {exc}"
else:
    FASTCALL_MISSING = None

__all__ = ["FASTCALL_MISSING", "Prepare", "Run", "SignatureCache"]

#: ``run(cond, then, else_, prepared, out)``: run a validated call. ``then`` and
#: ``else_`` are arrays of the backend's types or Python scalars already checked
#: and converted as the decision's ranges say (:meth:`ScalarRange.prepare`);
#: ``prepared`` is the :class:`~arrayselect.plugin.Decision`, or what the cache's
#: ``prepare`` made of it.
Run = Callable[[Any, Any, Any, Any, Any], Any]
#: ``prepare(decision)`` with ``run=None``: a function ``call(cond, then, else_)``
#: that runs the call (``call(cond, then, else_, out)`` when ``out`` is given): one
#: indirection less, for backends whose calls take microseconds (the NumPy
#: kernel's ``Prepared``).
Prepare = Callable[[Decision], Any]


class SignatureCache:
    """A backend's fast path: a bounded cache of decisions keyed by call signature.

    Parameters
    ----------
    backend : Backend
        The backend it serves; :meth:`Backend.signature` keys the cache.
    array_types : tuple of type
        The exact array types handled; calls with other operand types (or two
        Python scalars, whose dtype is a library default that may change) go
        to the general path.
    run : callable or None
        ``run(cond, then, else_, prepared, out)``, see :data:`Run`; ``None``
        when ``prepare`` makes each signature its own function.
    prepare : callable, optional
        ``prepare(decision)``, called once per signature: what ``run`` receives
        instead of the decision (a compiled function for its plan, say), or
        with ``run=None`` the function ``call(cond, then, else_[, out])`` itself.
    devices_checked_by_run : bool, optional
        The library itself refuses inputs on different devices when ``run``
        runs them (JAX's ``jit`` does); any exception from ``run`` then sends
        the call to the general path, which raises the core's error. Otherwise
        devices are checked with the core's :func:`check_devices` on every call,
        unless the backend's signature fixes them
        (:attr:`~arrayselect.plugin.Backend.signature_holds_device`).
    maxsize : int, optional
        Most signatures kept; the oldest is dropped first.

    Examples
    --------
    A backend returns it from :meth:`Backend.fast_path`::

        def fast_path(self):
            return SignatureCache(self, (mylib.Array,), self.run).fast_path()
    """

    def __init__(
        self,
        backend: Backend,
        array_types: tuple[type, ...],
        run: Run | None,
        *,
        prepare: Prepare | None = None,
        devices_checked_by_run: bool = False,
        maxsize: int = 1024,
    ) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        if run is None and prepare is None:
            raise ValueError("a SignatureCache needs run, or prepare with run=None")
        self.backend = backend
        self.array_types = frozenset(array_types)
        self.run = run
        self.prepare = prepare
        self.maxsize = maxsize
        # per signature: (decision, what run receives, then's range, else's range)
        self._entries = BoundedCache[Hashable, tuple[Decision, Any, Any, Any]](
            f"{type(backend).__module__}.{type(backend).__name__}.signatures", maxsize
        )
        self._cache = self._entries.data  # the C hit path reads it
        self._check_devices = not (devices_checked_by_run or devices_fixed_by_signature(backend))
        # The hit path, in C (_fastcall.c): key, lookup, the core's value checks, run.
        args = (
            self.array_types,
            backend.signature,
            backend.raw_signature,
            self._cache,
            self._miss,
            select_positional,
            run,
            backend,
            check_devices if self._check_devices else None,
            None if backend.signature_holds_out_layout else check_out_layout,
            SelectError,
            devices_checked_by_run,
        )
        self._call = SignatureCall(*args)
        # The same keys, built in Python, for lookup().
        self._keys = _PySignatureCall(*args)

    def lookup(
        self,
        cond: Any,
        then: Any,
        else_: Any,
        auto_broadcast: Any,
        axis: Any,
        cond_broadcast: Any,
        out: Any,
    ) -> tuple[Decision, Any] | None:
        """The decision cached for this call's signature and what ``run`` receives for
        it (see ``prepare``), or ``None`` when no entry has the signature.

        The key is built as on the hit path, in Python (microseconds): for a backend
        that keeps a faster check of its own in front of the cache, called when that
        check misses, not on every call.
        """
        key = self._keys.key(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
        try:
            entry = self._cache[key]  # not .get(): see arrayselect._base.caches
        except KeyError:
            return None
        return entry[0], entry[1]

    def fast_path(self) -> FastPath:
        """This cache as the :class:`FastPath` a backend returns."""
        return FastPath(tuple(self.array_types), self._call)

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        """Forget every cached signature."""
        self._entries.clear()

    def __call__(
        self,
        cond: Any,
        then: Any,
        else_: Any,
        auto_broadcast: Any,
        axis: Any,
        cond_broadcast: Any,
        out: Any,
    ) -> Any:
        """The fast path: the result, or ``NotImplemented`` for the general path."""
        return self._call(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)

    def _miss(
        self,
        key: Hashable,
        cond: Any,
        then: Any,
        else_: Any,
        auto_broadcast: str,
        axis: int,
        cond_broadcast: str,
        out: Any,
    ) -> Any:
        backend, decision, then_v, else_v = validate(
            cond, then, else_, auto_broadcast, axis, cond_broadcast, out
        )
        assert decision.plan is not None  # select's decisions hold their plan
        result = backend.select(cond, then_v, else_v, decision.plan, out)
        if backend is self.backend:
            prepared = decision if self.prepare is None else self.prepare(decision)
            entry = (decision, prepared, decision.then_range, decision.else_range)
            self._entries.put(key, entry)
        return result
