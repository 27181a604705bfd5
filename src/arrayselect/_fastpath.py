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

__all__ = ["Run", "SignatureCache"]

#: ``run(cond, then, else_, decision, out)``: run a validated call. ``then`` and
#: ``else_`` are arrays of the backend's types or Python scalars already
#: converted as the decision's range says (:meth:`ScalarRange.prepare`).
Run = Callable[[Any, Any, Any, Decision, Any], Any]


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
    run : callable
        ``run(cond, then, else_, decision, out)``, see :data:`Run`.
    maxsize : int, optional
        Most signatures kept; the oldest is dropped first.

    Examples
    --------
    A backend returns it from :meth:`Backend.fast_path`::

        def fast_path(self):
            return SignatureCache(self, (mylib.Array,), self.run).fast_path()
    """

    def __init__(
        self, backend: Backend, array_types: tuple[type, ...], run: Run, maxsize: int = 1024
    ) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.backend = backend
        self.array_types = frozenset(array_types)
        self.run = run
        self.maxsize = maxsize
        self._cache: dict[Hashable, Decision] = {}
        self._lock = threading.Lock()
        # Backends that keep every array on one device need no device check.
        self._devices = type(backend).device_of is not Backend.device_of
        self._signature = backend.signature

    def fast_path(self) -> FastPath:
        """This cache as the :class:`FastPath` a backend returns."""
        return FastPath(tuple(self.array_types), self)

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
        types = self.array_types
        if (
            type(cond) not in types
            or type(auto_broadcast) is not str
            or type(axis) is not int
            or type(cond_broadcast) is not str
        ):
            return NotImplemented
        then_array = type(then) in types
        else_array = type(else_) in types
        if not (then_array or type(then) in PYTHON_SCALARS) or not (
            else_array or type(else_) in PYTHON_SCALARS
        ):
            return NotImplemented
        if not (then_array or else_array):
            return NotImplemented  # two Python scalars: library defaults, general path
        if out is not None and type(out) not in types:
            return NotImplemented
        signature = self._signature
        key = (
            type(cond),
            signature(cond),
            (type(then), signature(then)) if then_array else type(then),
            (type(else_), signature(else_)) if else_array else type(else_),
            None if out is None else (type(out), signature(out)),
            auto_broadcast,
            axis,
            cond_broadcast,
        )
        decision = self._cache.get(key)
        if decision is None:
            return self._miss(key, cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
        then_range = decision.then_range
        else_range = decision.else_range
        if (then_range is not None and not then_range.admits(then)) or (
            else_range is not None and not else_range.admits(else_)
        ):
            return self._general(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
        if self._devices or out is not None:
            try:
                if self._devices:
                    named = [("cond", cond)]
                    if then_array:
                        named.append(("then", then))
                    if else_array:
                        named.append(("else", else_))
                    if out is not None:
                        named.append(("out", out))
                    check_devices(self.backend, named)
                if out is not None:
                    check_out_layout(self.backend, out)
            except SelectError:
                return self._general(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
        if then_range is not None:
            then = then_range.prepare(then)
        if else_range is not None:
            else_ = else_range.prepare(else_)
        return self.run(cond, then, else_, decision, out)

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
            with self._lock:
                while len(self._cache) >= self.maxsize:
                    del self._cache[next(iter(self._cache))]
                self._cache[key] = decision
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
