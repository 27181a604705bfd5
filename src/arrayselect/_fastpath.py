"""The fast-path protocol: cache what validation decided for a call signature.

:class:`SignatureCache` is the one fast path of the native backends (the NumPy
kernel keeps the same protocol in C, for its sub-microsecond calls). The first
call with a given *signature* (the exact types, shapes and dtypes of the
operands or the types of Python scalars, the options, ``out``'s shape and
dtype) runs the core's full validation (:func:`arrayselect._select.validate`),
which raises exactly the errors of the general path; when it passes, the
backend runs the call and the :class:`~arrayselect._validate.Decision` is kept.
Later calls with that signature re-check only what the signature does not fix,
with the core's own checks or data the core derived:

* a Python scalar's value against its :class:`~arrayselect._validate.ScalarRange`;
* devices, with :func:`~arrayselect._validate.check_devices`;
* ``out``'s memory, with :func:`~arrayselect._validate.check_out_layout`.

Any doubt sends the call to the general path, which raises the error in the
general path's order. So a cache can never change an answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

from arrayselect._backend import Backend
from arrayselect._errors import SelectError
from arrayselect._registry import FastPath
from arrayselect._select import select_general, validate
from arrayselect._validate import PYTHON_SCALARS, Decision, check_devices, check_out_layout

__all__ = ["Prepare", "Run", "SignatureCache"]

#: ``run(cond, then, else_, prepared, out)``: run a validated call. ``then`` and
#: ``else_`` are arrays of the backend's types or Python scalars already checked
#: and converted as the decision's ranges say (:meth:`ScalarRange.prepare`);
#: ``prepared`` is the :class:`~arrayselect.plugin.Decision`, or what the cache's
#: ``prepare`` made of it.
Run = Callable[[Any, Any, Any, Any, Any], Any]
#: ``prepare(decision)`` with ``run=None``: a function ``call(cond, then, else_)``
#: that runs the call (``call(cond, then, else_, out)`` when ``out`` is given): one
#: indirection less, for backends whose calls take microseconds.
Prepare = Callable[[Decision], Any]

_SCALAR_TYPES = frozenset(PYTHON_SCALARS)


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
        devices are checked with the core's :func:`check_devices` on every call.
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
        # (decision, what run receives) per signature
        self._cache: dict[Hashable, tuple[Decision, Any]] = {}
        self._lock = threading.Lock()
        # Backends that keep every array on one device need no device check.
        self._check_devices = (
            type(backend).device_of is not Backend.device_of and not devices_checked_by_run
        )
        self._run_checks_devices = devices_checked_by_run
        self._signature = backend.signature
        # One array type: its signature alone tells arrays apart.
        self._typed = len(self.array_types) > 1
        self._call = self._make_call()

    def fast_path(self) -> FastPath:
        """This cache as the :class:`FastPath` a backend returns."""
        return FastPath(tuple(self.array_types), self._call)

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        """Forget every cached signature."""
        with self._lock:
            self._cache.clear()

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

    def _make_call(self) -> Callable[..., Any]:
        """The fast path as a closure: every call is a few microseconds of Python at
        most, so what it reads is bound once, here, rather than looked up per call.
        """
        types = self.array_types
        signature = self._signature
        typed = self._typed
        lookup = self._cache.get
        miss = self._miss
        general = self._general
        run = self.run
        backend = self.backend
        devices = self._check_devices
        run_checks_devices = self._run_checks_devices
        scalars = _SCALAR_TYPES

        def call(
            cond: Any,
            then: Any,
            else_: Any,
            auto_broadcast: Any,
            axis: Any,
            cond_broadcast: Any,
            out: Any,
        ) -> Any:
            cond_type = type(cond)
            if (
                cond_type not in types
                or type(auto_broadcast) is not str
                or type(axis) is not int
                or type(cond_broadcast) is not str
            ):
                return NotImplemented
            then_type = type(then)
            else_type = type(else_)
            then_array = then_type in types
            else_array = else_type in types
            if then_array:
                then_key: Hashable = (then_type, signature(then)) if typed else signature(then)
            elif else_array and then_type in scalars:
                then_key = then_type
            else:
                return NotImplemented  # not an array, or two Python scalars (library defaults)
            if else_array:
                else_key: Hashable = (else_type, signature(else_)) if typed else signature(else_)
            elif else_type in scalars:
                else_key = else_type
            else:
                return NotImplemented
            if out is None:
                out_key: Hashable = None
            elif type(out) in types:
                out_key = (type(out), signature(out))
            else:
                return NotImplemented
            key = (
                (cond_type, signature(cond)) if typed else signature(cond),
                then_key,
                else_key,
                out_key,
                auto_broadcast,
                axis,
                cond_broadcast,
            )
            entry = lookup(key)
            if entry is None:
                return miss(key, cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
            decision, prepared = entry
            then_range = decision.then_range
            else_range = decision.else_range
            if then_range is not None:
                if not then_range.admits(then):
                    return general(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
                then = then_range.prepare(then)
            elif else_range is not None:
                if not else_range.admits(else_):
                    return general(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
                else_ = else_range.prepare(else_)
            if devices or out is not None:
                try:
                    if devices:
                        named = [("cond", cond)]
                        if then_array:
                            named.append(("then", then))
                        if else_array:
                            named.append(("else", else_))
                        if out is not None:
                            named.append(("out", out))
                        check_devices(backend, named)
                    if out is not None:
                        check_out_layout(backend, out)
                except SelectError:
                    return general(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
            if not run_checks_devices:
                if run is not None:
                    return run(cond, then, else_, prepared, out)
                return (
                    prepared(cond, then, else_) if out is None else prepared(cond, then, else_, out)
                )
            try:
                if run is not None:
                    return run(cond, then, else_, prepared, out)
                return (
                    prepared(cond, then, else_) if out is None else prepared(cond, then, else_, out)
                )
            except Exception:
                # e.g. arrays on different devices: the general path raises the core's
                # error (or the library's own, if it is not about the inputs)
                return general(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)

        return call

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
        result = backend.select(cond, then_v, else_v, decision.plan, out)
        if backend is self.backend:
            prepared = decision if self.prepare is None else self.prepare(decision)
            with self._lock:
                while len(self._cache) >= self.maxsize:
                    del self._cache[next(iter(self._cache))]
                self._cache[key] = (decision, prepared)
        return result

    @staticmethod
    def _general(
        cond: Any,
        then: Any,
        else_: Any,
        auto_broadcast: Any,
        axis: Any,
        cond_broadcast: Any,
        out: Any,
    ) -> Any:
        return select_general(
            cond,
            then,
            else_,
            auto_broadcast=auto_broadcast,
            axis=axis,
            cond_broadcast=cond_broadcast,
            out=out,
        )
