"""The input contract of SPEC §4-§7, re-stated independently of :mod:`arrayselect`.

:mod:`oracle` answers "which shape, which values"; this module answers "is this
input acceptable, and if not, which documented exception". It is used by the
bad-input table and the fuzz harness. Only the exception *classes* come from
:mod:`arrayselect`; every decision is made here from the SPEC text.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

import arrayselect as asel

__all__ = [
    "COND_BROADCASTS",
    "DOCUMENTED",
    "MODES",
    "axis_value",
    "dtype_kind",
    "float_max",
    "int_range",
    "option_errors",
    "scalar_error",
    "shape_arg_errors",
]

#: Every exception :func:`arrayselect.select` may raise on bad input.
DOCUMENTED = (
    asel.SelectShapeError,
    asel.SelectTypeError,
    asel.SelectValueError,
    asel.ScalarOverflowError,
)

MODES = ("none", "numpy", "pdpd")
COND_BROADCASTS = ("unidirectional", "multidirectional")

# SPEC §4: which dtype kinds a Python scalar of each type may take.
SCALAR_FITS: dict[type, frozenset[str]] = {
    bool: frozenset({"bool"}),
    int: frozenset({"int", "uint", "float", "complex"}),
    float: frozenset({"float", "complex"}),
    complex: frozenset({"complex"}),
}


def _ml_dtypes_info(kind: str, dtype: np.dtype[Any]) -> Any:
    import ml_dtypes

    return getattr(ml_dtypes, kind)(dtype)


def dtype_kind(dtype: Any) -> str | None:
    """``bool``/``int``/``uint``/``float``/``complex`` for a NumPy dtype, else ``None``."""
    dtype = np.dtype(dtype)
    kind = {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}.get(dtype.kind)
    if kind is not None:
        return kind
    if dtype.type.__module__.startswith("ml_dtypes"):
        try:
            _ml_dtypes_info("finfo", dtype)
            return "float"
        except (TypeError, ValueError):
            info = _ml_dtypes_info("iinfo", dtype)
            return "int" if info.min < 0 else "uint"
    return None


def int_range(dtype: Any) -> tuple[int, int]:
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype) if dtype.kind in "iu" else _ml_dtypes_info("iinfo", dtype)
    return int(info.min), int(info.max)


def float_max(dtype: Any) -> float:
    """Largest finite magnitude of a real or complex floating dtype (per component)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return float(np.finfo(dtype).max)
    return float(_ml_dtypes_info("finfo", dtype).max)


def scalar_error(value: Any, dtype: Any) -> type[Exception] | None:
    """The error a Python scalar ``value`` standing for then/else of ``dtype`` must give.

    ``None`` when it is accepted (SPEC §4: kind fits, int in range, finite floats
    no larger than the dtype's largest finite value; inf and NaN always fit a
    floating dtype).
    """
    kind = dtype_kind(dtype)
    if kind is None or kind not in SCALAR_FITS[type(value)]:
        return asel.SelectTypeError
    if kind in ("int", "uint"):
        low, high = int_range(dtype)
        return None if low <= value <= high else asel.ScalarOverflowError
    if kind in ("float", "complex"):
        limit = float_max(dtype)
        parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
        for part in parts:
            if (isinstance(part, int) or math.isfinite(part)) and abs(part) > limit:
                return asel.ScalarOverflowError
    return None


def axis_value(axis: Any) -> int | None:
    """``axis`` as an int when it is one (``__index__`` types, not bool), else ``None``."""
    if isinstance(axis, (bool, np.bool_)):
        return None
    try:
        return operator.index(axis)
    except Exception:
        return None


def option_errors(auto_broadcast: Any, axis: Any, cond_broadcast: Any) -> set[type[Exception]]:
    """Every error the options alone call for (SPEC §2, §7); empty when they are fine."""
    errors: set[type[Exception]] = set()
    mode_ok = isinstance(auto_broadcast, str) and auto_broadcast in MODES
    cb_ok = isinstance(cond_broadcast, str) and cond_broadcast in COND_BROADCASTS
    if not mode_ok or not cb_ok:
        errors.add(asel.SelectValueError)
    value = axis_value(axis)
    if value is None:
        errors.add(asel.SelectTypeError)
    elif value < -1 or (value != -1 and mode_ok and auto_broadcast != "pdpd"):
        errors.add(asel.SelectValueError)
    if cb_ok and mode_ok and cond_broadcast != "unidirectional" and auto_broadcast != "numpy":
        errors.add(asel.SelectValueError)
    return errors


def shape_arg_errors(shape: Any) -> set[type[Exception]]:
    """Errors a ``select_shape`` shape argument calls for: a sequence of ints >= 0 or None."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        return {asel.SelectTypeError}  # NumPy arrays, dicts, sets, iterators: not sequences
    errors: set[type[Exception]] = set()
    for d in shape:
        if d is None:
            continue
        value = axis_value(d)
        if value is None:
            errors.add(asel.SelectTypeError)
        elif value < 0:
            errors.add(asel.SelectValueError)
    return errors
