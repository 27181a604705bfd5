"""The NumPy backend (CPU).

Besides NumPy's own dtypes it handles the ``ml_dtypes`` extension dtypes
(bfloat16, the float8 family, int4, ...), which NumPy's dtype queries do not
classify. Every select runs through the compiled kernel
(:mod:`arrayselect.backends.numpy_kernel`), never ``np.where``; calls whose
``cond`` is exactly an ``np.ndarray`` take the lean path of
:mod:`arrayselect.backends.numpy_fast`, registered when this module is imported
(which ``import arrayselect`` does).
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

import numpy as np

from arrayselect._backend import DtypeKind
from arrayselect._caches import register_cache
from arrayselect._errors import SelectValueError
from arrayselect._shapes import SelectPlan, Shape

from .numpy_kernel import kernel_select
from .portable import PortableBackend, check_no_zero_stride

__all__ = ["BACKEND", "NumpyBackend", "create"]

_KINDS_CACHE_SIZE = 256
_NUMPY_KINDS: dict[str, DtypeKind] = {
    "b": "bool",
    "i": "int",
    "u": "uint",
    "f": "float",
    "c": "complex",
}


def _ml_dtypes_info(kind: str, dtype: np.dtype[Any]) -> Any:
    """``ml_dtypes.finfo``/``iinfo`` (``kind``) of an ml_dtypes dtype (untyped there)."""
    import ml_dtypes

    return getattr(ml_dtypes, kind)(dtype)


def _ml_dtypes_kind(dtype: np.dtype[Any]) -> DtypeKind | None:
    if not dtype.type.__module__.startswith("ml_dtypes"):
        return None
    try:
        _ml_dtypes_info("finfo", dtype)
        return "float"
    except (TypeError, ValueError):
        pass
    try:
        return "int" if _ml_dtypes_info("iinfo", dtype).min < 0 else "uint"
    except (TypeError, ValueError):
        return None


class NumpyBackend(PortableBackend):
    """Select for NumPy arrays (``ml_dtypes`` included)."""

    def __init__(self) -> None:
        super().__init__(np)
        self.name = "numpy"
        self.supports_out = True
        self._kinds: dict[np.dtype[Any], DtypeKind | None] = {}
        self._kinds_lock = threading.Lock()
        register_cache("numpy_backend.dtype_kind", lambda: (len(self._kinds), _KINDS_CACHE_SIZE))

    def dtype_kind(self, dtype: Any) -> DtypeKind | None:
        try:
            return self._kinds[dtype]
        except KeyError:
            pass
        kind = _NUMPY_KINDS.get(dtype.kind) or _ml_dtypes_kind(dtype)
        with self._kinds_lock:  # a miss is rare; the lock keeps the bound exact
            if len(self._kinds) < _KINDS_CACHE_SIZE:  # dtypes are few; bound it anyway
                self._kinds[dtype] = kind
        return kind

    def shape(self, x: Any) -> Shape:
        return x.shape  # type: ignore[no-any-return]

    def int_range(self, dtype: Any) -> tuple[int, int]:
        info: Any = (
            _ml_dtypes_info("iinfo", dtype)
            if _NUMPY_KINDS.get(dtype.kind) is None
            else np.iinfo(dtype)
        )
        return int(info.min), int(info.max)

    def float_max(self, dtype: Any) -> float:
        if _NUMPY_KINDS.get(dtype.kind) is None:
            return float(_ml_dtypes_info("finfo", dtype).max)
        return float(np.finfo(dtype).max)

    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        return np.asarray(value, dtype=dtype)

    def check_devices(self, named: list[tuple[str, Any]]) -> None:
        return None  # NumPy arrays all live on the CPU

    def check_out(self, out: Any) -> None:
        if not out.flags.writeable:
            raise SelectValueError("out is read-only (out.flags.writeable is False)")
        check_no_zero_stride(out.shape, out.strides)

    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        cond, then, else_ = as_kernel_operands(cond, then, else_)
        return kernel_select(cond, then, else_, out, plan.out_shape, *plan.aligned)


def as_kernel_operands(cond: Any, then: Any, else_: Any) -> tuple[Any, Any, Any]:
    """NumPy scalars (``np.float32(1)``) as 0-d arrays; a cond of an odd item size as bool.

    The kernel takes ``np.ndarray`` operands and conds of 1, 2, 4 or 8 bytes.
    """
    if type(cond) is not np.ndarray:
        cond = np.asarray(cond)
    if cond.itemsize not in (1, 2, 4, 8):
        cond = cond != 0
    if type(then) is not np.ndarray:
        then = np.asarray(then)
    if type(else_) is not np.ndarray:
        else_ = np.asarray(else_)
    return cond, then, else_


#: The one NumPy backend: the registry's factory and the fast path share it.
BACKEND = NumpyBackend()


def create(xp: ModuleType) -> NumpyBackend:
    """Entry-point factory: the NumPy backend (``xp`` is not needed)."""
    return BACKEND


def _install_fast_path() -> None:
    from .numpy_fast import install

    install(BACKEND)


_install_fast_path()
