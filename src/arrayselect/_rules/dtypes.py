"""NumPy dtypes: their kinds and limits, and the dtype names of the specification.

NumPy is the one array library the core depends on, and several backends carry
NumPy dtypes (NumPy, CuPy, Dask), including the ``ml_dtypes`` extension dtypes
(bfloat16, the float8 family, int4, ...) that NumPy's own queries do not
classify. The answers are written here once; backends delegate to them.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from arrayselect._base.caches import BoundedCache
from arrayselect._rules.backend import PYTHON_SCALARS, DtypeKind

__all__ = [
    "NUMPY_DEFAULT_DTYPES",
    "SPEC_DTYPES",
    "NumpyDtypes",
    "numpy_dtype",
    "numpy_dtype_kind",
    "numpy_float_max",
    "numpy_int_range",
]

#: The dtypes of the specification (SPEC §4), in table order.
SPEC_DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)

#: What NumPy makes of each Python scalar type (``np.asarray(0)`` and kin):
#: the default dtypes of NumPy and of the libraries that follow it (CuPy, Dask).
NUMPY_DEFAULT_DTYPES: Final[dict[type, np.dtype[Any]]] = {
    t: np.asarray(t(0)).dtype for t in PYTHON_SCALARS
}

_NUMPY_KINDS: Final[dict[str, DtypeKind]] = {
    "b": "bool",
    "i": "int",
    "u": "uint",
    "f": "float",
    "c": "complex",
}
_KINDS = BoundedCache[np.dtype[Any], DtypeKind | None]("dtypes.numpy_dtype_kind", 256)
_kinds = _KINDS.data  # read on every dtype question


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The NumPy dtype called ``name``; ``"bfloat16"`` comes from ``ml_dtypes``.

    Raises
    ------
    ImportError
        For ``"bfloat16"`` when ``ml_dtypes`` is not installed.
    """
    if name == "bfloat16":
        import ml_dtypes

        bfloat16: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
        return bfloat16
    return np.dtype(name)


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


def numpy_dtype_kind(dtype: Any) -> DtypeKind | None:
    """Kind of a NumPy dtype (``ml_dtypes`` included), or ``None`` when Select does
    not support it (object, string, datetime, structured, void dtypes).
    """
    try:
        return _kinds[dtype]
    except KeyError:
        pass
    except TypeError:  # unhashable: not a dtype
        return None
    if not isinstance(dtype, np.dtype):
        return None
    kind = _NUMPY_KINDS.get(dtype.kind) or _ml_dtypes_kind(dtype)
    return _KINDS.put(dtype, kind)


def numpy_int_range(dtype: np.dtype[Any]) -> tuple[int, int]:
    """Smallest and largest value of an integer NumPy (or ``ml_dtypes``) dtype."""
    info: Any = (
        np.iinfo(dtype) if dtype.kind in ("i", "u", "b") else _ml_dtypes_info("iinfo", dtype)
    )
    return int(info.min), int(info.max)


def numpy_float_max(dtype: np.dtype[Any]) -> float:
    """Largest finite value of a floating NumPy (or ``ml_dtypes``) dtype, per component."""
    if dtype.kind in ("f", "c"):
        return float(np.finfo(dtype).max)
    return float(_ml_dtypes_info("finfo", dtype).max)


class NumpyDtypes:
    """The dtype queries of a :class:`~arrayselect.plugin.Backend` whose arrays carry
    NumPy dtypes (NumPy, CuPy, Dask): answered by the functions above, once.

    Examples
    --------
    >>> import numpy as np
    >>> from arrayselect.plugin import NumpyDtypes
    >>> NumpyDtypes().dtype_kind(np.dtype(np.uint8)), NumpyDtypes().int_range(np.dtype(np.int8))
    ('uint', (-128, 127))
    """

    #: Kind of a NumPy dtype, ``None`` when Select does not support it (the function
    #: itself: apply_where asks it of every result, and a method around it costs a call).
    dtype_kind = staticmethod(numpy_dtype_kind)

    def int_range(self, dtype: Any) -> tuple[int, int]:
        """Smallest and largest value of an integer dtype."""
        return numpy_int_range(dtype)

    def float_max(self, dtype: Any) -> float:
        """Largest finite value of a floating dtype, per component."""
        return numpy_float_max(dtype)

    def default_dtype(self, scalar_type: type, like: Any) -> Any:
        """NumPy's dtype for a Python scalar type (the library follows NumPy's)."""
        return NUMPY_DEFAULT_DTYPES[scalar_type]
