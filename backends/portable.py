"""The portable backend: only functions of the Python Array API standard.

It serves every array library without a native backend (PyTorch, Dask,
array-api-strict, ...), and any library when :func:`arrayselect.force_portable`
is in effect.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Hashable
from types import ModuleType
from typing import Any

import array_api_compat as compat

from arrayselect.plugin import (
    Backend,
    BoundedCache,
    DtypeKind,
    OutLayout,
    SelectPlan,
    Shape,
    errors,
    settings,
)

from .shared import jax_wider_dtypes_hint, jax_x64_enabled, torch_unsupported_layout

__all__ = ["PortableBackend", "create"]

# Namespaces whose arrays can be written in place through ``x[...] = y``.
# array-api-strict could, but the standard does not promise it, and Dask and
# JAX arrays cannot.
_MUTABLE = ("torch", "numpy", "cupy")

_KINDS: tuple[tuple[str, DtypeKind], ...] = (
    ("bool", "bool"),
    ("signed integer", "int"),
    ("unsigned integer", "uint"),
    ("real floating", "float"),
    ("complex floating", "complex"),
)


def _library(xp: ModuleType) -> str:
    name = xp.__name__.removeprefix("array_api_compat.")
    return name.partition(".")[0]


def _dim(d: Any) -> Any:
    """A dimension as the shape core takes it: an int, ``None`` when unknown, or symbolic."""
    if d is None or d != d:  # Dask marks unknown sizes with NaN
        return None
    try:
        return operator.index(d)
    except Exception:  # a symbolic dimension (jax.export): the shape core compares it
        return d


class PortableBackend(Backend):
    """Select built from ``xp.reshape`` and ``xp.where`` of the standard."""

    def __init__(self, xp: ModuleType) -> None:
        self.xp = xp
        library = _library(xp)
        self.library = library
        self.name = f"portable[{library}]"
        self.supports_out = library in _MUTABLE
        self.out_refusal = (
            f"{library} arrays are immutable or lazy, so the result cannot be written into "
            "an existing array; use the returned array instead"
        )
        self._held = BoundedCache[tuple[Any, Hashable], Any](f"{self.name}.held_dtypes", 256)
        # What the library's handling of dtypes depends on: JAX's 64-bit mode.
        self._mode: Callable[[], Hashable] | None = None
        if library == "jax":
            self._mode = jax_x64_enabled
            self.wider_dtypes_hint = jax_wider_dtypes_hint()

    def dtype_kind(self, dtype: Any) -> DtypeKind | None:
        for category, kind in _KINDS:
            try:
                if self.xp.isdtype(dtype, category):
                    return kind
            except (TypeError, ValueError):
                return None
        return None

    def dtype_refusal(self, dtype: Any) -> str:
        # Not "Select does not support it": the library's own backend may (NumPy
        # takes ml_dtypes' bfloat16); the standard's isdtype, which this backend has
        # only, does not class it.
        refusal = (
            f"which the portable backend cannot use: its Array API namespace "
            f"({self.xp.__name__}) does not class it as boolean, integer, floating or "
            "complex (isdtype)"
        )
        if settings.portable_forced():
            refusal += f"; outside force_portable() {self.library}'s own backend may take it"
        return refusal

    def held_dtype(self, dtype: Any) -> Any:
        # Asked of the library, once per dtype and mode: the dtype of a new array.
        key = (dtype, self.dtype_mode())
        try:
            return self._held.data[key]
        except KeyError:
            pass
        except TypeError:  # unhashable: not a dtype
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # JAX warns that it truncates
                held: Any = self.xp.zeros((), dtype=dtype).dtype
        except (TypeError, ValueError):
            held = None
        return self._held.put(key, held)

    def dtype_mode(self) -> Hashable:
        return None if self._mode is None else self._mode()

    def shape(self, x: Any) -> Shape:
        return tuple(_dim(d) for d in x.shape)

    def int_range(self, dtype: Any) -> tuple[int, int]:
        info = self.xp.iinfo(dtype)
        return int(info.min), int(info.max)

    def float_max(self, dtype: Any) -> float:
        return float(self.xp.finfo(dtype).max)

    def default_dtype(self, scalar_type: type, like: Any) -> Any:
        # The standard leaves defaults to the library: ask it, on cond's device.
        return self.xp.asarray(scalar_type(0), device=self._device(like)).dtype

    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        return self.xp.asarray(value, dtype=dtype, device=self._device(like))

    def _device(self, like: Any) -> Any:
        # A NumPy ``like`` that joined JAX arrays has no device of this library.
        if self.library != "numpy" and compat.is_numpy_array(like):
            return None
        return compat.device(like)

    def unsupported_layout(self, x: Any) -> tuple[str, str] | None:
        # PyTorch's where has no kernels for sparse, quantized or nested tensors;
        # the PyTorch backend knows which those are.
        if self.library != "torch":
            return None
        return torch_unsupported_layout(x)

    def device_of(self, x: Any) -> Any:
        # None (a JAX tracer inside jit or grad) is decided later by the library.
        return compat.device(x)

    def out_layout(self, out: Any) -> OutLayout:
        # The standard cannot ask whether an array is writable or how its elements
        # lie in memory; NumPy-like flags and strides, and PyTorch's stride(), can.
        if getattr(getattr(out, "flags", None), "writeable", True) is False:
            return OutLayout(False, "out.flags.writeable is False")
        strides = getattr(out, "strides", None)
        itemsize = getattr(out, "itemsize", None)
        if strides is None and callable(getattr(out, "stride", None)):
            itemsize = out.element_size()
            strides = tuple(s * itemsize for s in out.stride())
        if isinstance(strides, tuple) and isinstance(itemsize, int):
            return OutLayout(True, "", strides, itemsize)
        return OutLayout()

    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        try:
            return self._select(cond, then, else_, plan, out)
        except errors.SelectValueError:
            raise
        except Exception as exc:
            shapes = [
                (n, self.shape(x)) for n, x in (("cond", cond), ("then", then), ("else", else_))
            ]
            symbolic = [
                (name, shape)
                for name, shape in shapes
                if any(d is not None and not isinstance(d, int) for d in shape)
            ]
            if not symbolic:
                raise
            # Symbolic sizes (jax.export) the library cannot prove equal or 1.
            raise errors.SelectShapeError(
                "the shapes "
                + ", ".join(f"{name} {shape}" for name, shape in symbolic)
                + f" cannot be broadcast onto the output shape {tuple(plan.out_shape)} by "
                f"{self.library} while tracing ({type(exc).__name__}: {exc}); it must know "
                "that each dimension equals the output's or is 1 (for symbolic shapes, use "
                "one symbol for dimensions that are equal, or a constant)"
            ) from None

    def _select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        xp = self.xp
        cond_shape, then_shape, else_shape = plan.aligned
        if cond_shape is not None:
            cond = xp.reshape(cond, cond_shape)
        if then_shape is not None:
            then = xp.reshape(then, then_shape)
        if else_shape is not None:
            else_ = xp.reshape(else_, else_shape)
        if not xp.isdtype(cond.dtype, "bool"):
            cond = cond != 0
        try:
            result = xp.where(cond, then, else_)
        except RuntimeError as err:
            # an old library without a where kernel for this dtype (torch 2.6-2.9: uint16/
            # 32/64, on 2.6 float8 too; '"where_cpu" not implemented'): say so, not the
            # library's error
            if "not implemented" not in str(err):
                raise
            raise errors.SelectTypeError(
                f"then has dtype {then.dtype}, for which this {xp.__name__} has no where "
                f"kernel ({err}); upgrade it or cast then and else to a dtype it supports"
            ) from err
        if out is not None:
            return self.write_out(result, out)
        if result.dtype != then.dtype:
            result = xp.astype(result, then.dtype)  # NumPy byte-swapped inputs
        return result


def create(xp: ModuleType) -> Backend:
    """Entry-point factory: the portable backend for namespace ``xp``."""
    return PortableBackend(xp)
