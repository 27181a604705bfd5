"""A bounded per-signature cache in front of :func:`arrayselect._select.select_general`.

A native backend registers a :class:`CachedFastPath` for its array type with
:func:`arrayselect._select.register_fast_path`. The first call with a given
signature (shapes, dtypes, Python-scalar types, options, ``out`` shape/dtype)
goes through :func:`~arrayselect._select.select_general`, which validates
everything and raises the library's errors; when it succeeds, the plan is
cached. Later calls with that signature only re-check what the signature does
not fix -- devices, the values of Python scalars, ``out``'s layout -- and on any
doubt call ``select_general`` again, so errors are always exactly the general
path's.

It is generic over the array type (the CuPy backend uses it; the CPU tests drive
it with NumPy arrays) and needs from the backend only :class:`FastBackend`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from arrayselect import _registry
from arrayselect._backend import Backend, DtypeKind
from arrayselect._errors import SelectError
from arrayselect._select import select_general
from arrayselect._shapes import SelectPlan, check_options, make_plan

__all__ = ["CachedFastPath", "FastBackend"]

_SCALARS = (bool, int, float, complex)


class FastBackend(Protocol):
    """What :class:`CachedFastPath` needs from a backend besides :class:`Backend`."""

    def device_of(self, x: Any) -> Hashable:
        """An id of the device ``x`` lives on (equal ids: same device)."""
        ...

    def execute(
        self, cond: Any, then: Any, else_: Any, plan: SelectPlan, dtype: Any, out: Any
    ) -> Any:
        """Run a validated Select; ``then``/``else_`` may be Python scalars of ``dtype``."""
        ...


@dataclass(frozen=True, slots=True)
class _ScalarCheck:
    """The range test of ``_validate._scalar_fitting``, with the dtype's limits cached.

    The scalar's type and the dtype are part of the signature, so the kind already
    fits; only the value can fail. A failing value goes to the general path, which
    raises the exact error.
    """

    kind: DtypeKind
    low: int = 0
    high: int = 0
    limit: float = 0.0

    def fits(self, value: Any) -> bool:
        if self.kind in ("int", "uint"):
            return bool(self.low <= value <= self.high)
        if self.kind in ("float", "complex"):
            parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
            for part in parts:
                finite = isinstance(part, int) or math.isfinite(part)
                if finite and abs(part) > self.limit:
                    return False
        return True


@dataclass(frozen=True, slots=True)
class _Entry:
    plan: SelectPlan
    dtype: Any
    then_check: _ScalarCheck | None
    else_check: _ScalarCheck | None


class CachedFastPath:
    """``fast(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)`` for one array type.

    Parameters
    ----------
    backend
        The backend that serves ``library``; it must implement :class:`FastBackend`.
    array_type
        The exact array type handled (``cupy.ndarray``); other types of
        ``then``/``else_``/``out`` go to the general path.
    library
        The registry key of the library (``"cupy"``). While another backend is
        registered for it, or :func:`arrayselect.force_portable` is active, the
        fast path steps aside.
    maxsize
        Most signatures kept; the oldest is dropped first.
    """

    def __init__(self, backend: Backend, array_type: type, library: str, maxsize: int = 1024):
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.backend = backend
        self.array_type: Any = array_type
        self.library = library
        self.maxsize = maxsize
        self._cache: dict[Hashable, _Entry] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._cache)

    def clear(self) -> None:
        """Forget every cached signature."""
        with self._lock:
            self._cache.clear()

    def _value_key(self, x: Any) -> Any:
        t = type(x)
        if t is self.array_type:
            return (x.shape, x.dtype)
        if t in _SCALARS:
            return t
        return None

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
        backend = self.backend
        if _registry._backends.get((self.library, _registry._force_portable.get())) is not backend:
            return NotImplemented
        if (
            type(cond) is not self.array_type
            or type(auto_broadcast) is not str
            or type(axis) is not int
            or type(cond_broadcast) is not str
        ):
            return NotImplemented
        then_key = self._value_key(then)
        else_key = self._value_key(else_)
        if then_key is None or else_key is None:
            return NotImplemented
        if type(then) is not self.array_type and type(else_) is not self.array_type:
            return NotImplemented  # two Python scalars: rare, default dtypes; general path
        if out is None:
            out_key: Hashable = None
        elif type(out) is self.array_type:
            out_key = (out.shape, out.dtype)
        else:
            return NotImplemented
        key = (
            cond.shape,
            cond.dtype,
            then_key,
            else_key,
            out_key,
            auto_broadcast,
            axis,
            cond_broadcast,
        )
        entry = self._cache.get(key)
        if entry is None:
            result = self._general(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
            self._store(key, cond, then, else_, auto_broadcast, axis, cond_broadcast)
            return result
        if not self._recheck(entry, cond, then, else_, out):
            return self._general(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
        return backend.execute(cond, then, else_, entry.plan, entry.dtype, out)  # type: ignore[attr-defined]

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

    def _recheck(self, entry: _Entry, cond: Any, then: Any, else_: Any, out: Any) -> bool:
        """What the signature does not fix: scalar values, devices, ``out``'s layout."""
        backend = self.backend
        if entry.then_check is not None and not entry.then_check.fits(then):
            return False
        if entry.else_check is not None and not entry.else_check.fits(else_):
            return False
        device_of = backend.device_of  # type: ignore[attr-defined]
        device = device_of(cond)
        for x in (then, else_, out):
            if type(x) is self.array_type and device_of(x) != device:
                return False
        if out is not None:
            try:
                backend.check_out(out)
            except SelectError:
                return False
        return True

    def _store(
        self,
        key: Hashable,
        cond: Any,
        then: Any,
        else_: Any,
        auto_broadcast: str,
        axis: int,
        cond_broadcast: str,
    ) -> None:
        backend = self.backend
        then_is_array = type(then) is self.array_type
        dtype = then.dtype if then_is_array else else_.dtype
        kind = backend.dtype_kind(dtype)
        if kind is None:  # pragma: no cover - the general path has rejected it
            return
        if kind in ("int", "uint"):
            low, high = backend.int_range(dtype)
            check = _ScalarCheck(kind, low=low, high=high)
        elif kind in ("float", "complex"):
            check = _ScalarCheck(kind, limit=backend.float_max(dtype))
        else:
            check = _ScalarCheck(kind)
        then_check = None if then_is_array else check
        else_check = None if type(else_) is self.array_type else check
        plan = make_plan(
            tuple(cond.shape),
            tuple(then.shape) if then_is_array else (),
            tuple(else_.shape) if else_check is None else (),
            auto_broadcast,
            check_options(auto_broadcast, axis, cond_broadcast),
            cond_broadcast,
        )
        with self._lock:
            while len(self._cache) >= self.maxsize:
                del self._cache[next(iter(self._cache))]
            self._cache[key] = _Entry(plan, dtype, then_check, else_check)
