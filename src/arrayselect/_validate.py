"""Dtype, Python-scalar and ``out=`` validation, shared by every backend."""

from __future__ import annotations

import math
from typing import Any

from arrayselect._backend import Backend, DtypeKind
from arrayselect._errors import (
    ScalarOverflowError,
    SelectShapeError,
    SelectTypeError,
)
from arrayselect._shapes import Shape

__all__ = ["check_cond_dtype", "check_out", "materialize_scalars"]

PyScalar = bool | int | float | complex

_SCALAR_KIND: dict[type, str] = {bool: "bool", int: "int", float: "float", complex: "complex"}
# Which dtype kinds a Python scalar of each type may take (SPEC §4).
_SCALAR_FITS: dict[str, frozenset[DtypeKind]] = {
    "bool": frozenset({"bool"}),
    "int": frozenset({"int", "uint", "float", "complex"}),
    "float": frozenset({"float", "complex"}),
    "complex": frozenset({"complex"}),
}


def check_cond_dtype(backend: Backend, cond: Any) -> None:
    """``cond`` must be boolean or integer (nonzero is true)."""
    if backend.dtype_kind(cond.dtype) not in ("bool", "int", "uint"):
        raise SelectTypeError(
            f"cond must have a boolean or integer dtype (integers mean nonzero is true), "
            f"got {cond.dtype}"
        )


def _check_value_dtype(backend: Backend, name: str, dtype: Any) -> DtypeKind:
    kind = backend.dtype_kind(dtype)
    if kind is None:
        raise SelectTypeError(
            f"{name} has dtype {dtype}, which Select does not support; expected a boolean, "
            "integer, floating or complex dtype"
        )
    return kind


def _scalar_fitting(
    backend: Backend, name: str, value: PyScalar, dtype: Any, kind: DtypeKind, other: str
) -> PyScalar:
    """Raise unless Python scalar ``value`` may take ``dtype`` (kind and range).

    Returns the value to convert: a Python int taking a floating dtype is passed
    on as a Python float (what NumPy does with it anyway), because some array
    libraries (ml_dtypes' bfloat16) cannot convert ints beyond int64.
    """
    scalar_kind = _SCALAR_KIND[type(value)]
    if kind not in _SCALAR_FITS[scalar_kind]:
        raise SelectTypeError(
            f"{name} is a Python {scalar_kind} ({value!r}) and cannot take the dtype {dtype} "
            f"of {other}; a Python {scalar_kind} fits only "
            + " or ".join(sorted(_SCALAR_FITS[scalar_kind]))
            + " dtypes"
        )
    if kind in ("int", "uint"):
        low, high = backend.int_range(dtype)
        if not low <= value <= high:  # type: ignore[operator]
            raise ScalarOverflowError(
                f"{name}={value!r} is out of the range [{low}, {high}] of {other}'s dtype {dtype}"
            )
    elif kind in ("float", "complex"):
        limit = backend.float_max(dtype)
        parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
        for part in parts:
            finite = isinstance(part, int) or math.isfinite(part)
            if finite and abs(part) > limit:
                raise ScalarOverflowError(
                    f"{name}={value!r} is finite but out of the range of {other}'s dtype {dtype} "
                    f"(largest magnitude {limit:g}); pass inf explicitly if that is what you mean"
                )
        if type(value) is int:
            return float(value)
    return value


def materialize_scalars(backend: Backend, cond: Any, then: Any, else_: Any) -> tuple[Any, Any]:
    """Check ``then``/``else`` dtypes; turn Python scalars into 0-d arrays.

    Returns
    -------
    then, else_
        Arrays of one dtype, the output dtype.
    """
    then_scalar = type(then) in _SCALAR_KIND
    else_scalar = type(else_) in _SCALAR_KIND
    if then_scalar and else_scalar:
        if type(then) is not type(else_):
            raise SelectTypeError(
                f"then is a Python {type(then).__name__} and else a Python "
                f"{type(else_).__name__}; Select does not promote, so pass scalars of one type "
                "or arrays of one dtype"
            )
        # Both take the namespace's default dtype for their kind, which must hold them.
        dtype = backend.scalar_array(type(then)(0), None, cond).dtype
        kind = _check_value_dtype(backend, "then", dtype)
        then = _scalar_fitting(backend, "then", then, dtype, kind, "the namespace default")
        else_ = _scalar_fitting(backend, "else", else_, dtype, kind, "the namespace default")
        return backend.scalar_array(then, dtype, cond), backend.scalar_array(else_, dtype, cond)
    if then_scalar:
        kind = _check_value_dtype(backend, "else", else_.dtype)
        then = _scalar_fitting(backend, "then", then, else_.dtype, kind, "else")
        return backend.scalar_array(then, else_.dtype, else_), else_
    if else_scalar:
        kind = _check_value_dtype(backend, "then", then.dtype)
        else_ = _scalar_fitting(backend, "else", else_, then.dtype, kind, "then")
        return then, backend.scalar_array(else_, then.dtype, then)
    _check_value_dtype(backend, "then", then.dtype)
    _check_value_dtype(backend, "else", else_.dtype)
    if then.dtype != else_.dtype:
        raise SelectTypeError(
            f"then and else must have the same dtype (Select does not promote), got then "
            f"{then.dtype} and else {else_.dtype}"
        )
    return then, else_


def check_out(backend: Backend, out: Any, out_shape: Shape, dtype: Any) -> None:
    """``out`` must be writable and match the output shape and dtype exactly."""
    if not backend.supports_out:
        raise SelectTypeError(
            f"out= is not supported for {backend.name} arrays: {backend.out_refusal}"
        )
    shape = backend.shape(out)
    if shape != out_shape:
        raise SelectShapeError(f"out has shape {shape}, but the output shape is {out_shape}")
    if out.dtype != dtype:
        raise SelectTypeError(f"out has dtype {out.dtype}, but the output dtype is {dtype}")
    backend.check_out(out)
