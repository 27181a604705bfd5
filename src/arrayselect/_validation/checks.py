"""The dtype, Python-scalar, device and ``out`` rules of Select: each written once, here.

Backends answer questions (a dtype's kind, an integer range, a device, ``out``'s
strides); the rules that turn the answers into accept-or-raise live only in
this module. A fast path that caches what :func:`validate` decided for a call
signature re-checks on a hit only what depends on values, through the same
functions (:func:`check_devices`, :func:`check_out_layout`) or through data
derived here (:class:`ScalarRange`), never through a copy of a rule.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from typing import Any, Final, NamedTuple

from arrayselect._base.caches import BoundedCache
from arrayselect._base.errors import (
    ScalarOverflowError,
    SelectShapeError,
    SelectTypeError,
    SelectValueError,
)
from arrayselect._rules.backend import PYTHON_SCALARS, Backend, DtypeKind
from arrayselect._rules.shapes import Shape

__all__ = [
    "PYTHON_SCALARS",
    "SCALAR_ZEROS",
    "ScalarRange",
    "check_devices",
    "check_held_dtypes",
    "check_layouts",
    "check_mask",
    "check_out",
    "check_out_layout",
    "check_scalar",
    "checked_scalars",
    "fill_scalar",
    "scalar_fits_kind",
    "scalar_range",
    "value_kind",
    "values_dtype",
]

PyScalar = bool | int | float | complex


#: A Python scalar in promotion stands for its type, never its value (NEP 50): the
#: zero of its type is what a library's ``result_type`` is asked about.
SCALAR_ZEROS: Final[dict[type, Any]] = {bool: False, int: 0, float: 0.0, complex: 0j}
_SCALAR_KIND: Final[dict[type, str]] = {
    bool: "bool",
    int: "int",
    float: "float",
    complex: "complex",
}
# Which dtype kinds a Python scalar of each type may take (SPEC §4).
_SCALAR_FITS: Final[dict[type, frozenset[DtypeKind]]] = {
    bool: frozenset({"bool"}),
    int: frozenset({"int", "uint", "float", "complex"}),
    float: frozenset({"float", "complex"}),
    complex: frozenset({"complex"}),
}
# What ``other`` is when both operands are Python scalars (see _dtype_of).
_DEFAULT: Final = "two Python scalars"
_MASK_KINDS: Final = ("bool", "int", "uint")
# Elements beyond which an interleaved ``out`` layout is not enumerated to prove
# that its elements are disjoint (such layouts only come from as_strided).
_OVERLAP_ENUMERATION_LIMIT: Final = 1 << 22


# --------------------------------------------------------------------------- dtypes


def check_layouts(backend: Backend, named: list[tuple[str, Any]]) -> None:
    """Every array must have a layout Select can read (dense, not quantized or nested).

    Raises
    ------
    SelectTypeError
        Naming the argument and its layout.
    """
    for name, x in named:
        found = backend.unsupported_layout(x)
        if found is not None:
            what, how = found
            raise SelectTypeError(
                f"{name} is {what}, which Select does not take (it reads dense, strided "
                f"arrays); {how}"
            )


def check_mask(backend: Backend, name: str, x: Any, integers: str = "") -> None:
    """A mask must be boolean, or integer where ``integers`` says what integers mean.

    Raises
    ------
    SelectTypeError
        Naming the mask, the dtypes it may have and the one it has.
    """
    kinds = _MASK_KINDS if integers else ("bool",)
    if backend.dtype_kind(x.dtype) not in kinds:
        also = f" or integer dtype ({integers})" if integers else " dtype"
        raise SelectTypeError(f"{name} must have a boolean{also}, got {x.dtype}")


def value_kind(backend: Backend, name: str, dtype: Any) -> DtypeKind:
    """The kind of a value dtype (of ``then``, ``else``, the result); raise if unsupported."""
    kind = backend.dtype_kind(dtype)
    if kind is None:
        raise SelectTypeError(f"{name} has dtype {dtype}, {backend.dtype_refusal(dtype)}")
    return kind


def check_held_dtypes(backend: Backend, named: Iterable[tuple[str, Any]]) -> None:
    """Every input array's dtype must be one the result's library holds as it is, now.

    The rule behind "no promotion, values copied bit for bit" when operands come
    from two libraries (NumPy arrays beside JAX arrays): an operand the library
    would narrow (int64 under JAX's default 32-bit mode) or cannot take at all
    is refused, never converted. ``named`` are the operands with the names messages
    call them (``select``'s ``cond``/``then``/``else``, ``select_n``'s ``which`` and
    cases). Python scalars are checked against the output dtype by
    :func:`check_scalar`; ``out`` is left to :func:`check_out`.

    Raises
    ------
    SelectTypeError
        Naming the operand, its dtype, what the library would make of it, the
        cast to write and the library's setting for wider dtypes.
    """
    for name, x in named:
        if type(x) in _SCALAR_KIND:
            continue
        dtype = x.dtype
        held = backend.held_dtype(dtype)
        if held is None:
            raise SelectTypeError(
                f"{name} has dtype {dtype}, which the arrays of the {backend.name} backend "
                "cannot hold; convert it to a dtype that library supports first"
            )
        if held != dtype:
            hint = f", or {backend.wider_dtypes_hint}" if backend.wider_dtypes_hint else ""
            raise SelectTypeError(
                f"{name} has dtype {dtype}, which the arrays of the {backend.name} backend "
                f"cannot hold now (they would turn it into {held}, which can change its "
                "values, and Select never changes a value's dtype or bits); cast it yourself "
                f"where its values fit ({name}.astype({str(held)!r})){hint}"
            )


# --------------------------------------------------------------------------- Python scalars


class ScalarRange(NamedTuple):
    """The values a Python scalar of one type may take for one dtype.

    Derived once per (scalar type, dtype) by :func:`scalar_range`. A value whose
    parts (real and imaginary for a complex) all lie in ``[low, high]`` fits; so
    does a non-finite float (``inf`` and ``nan`` are taken as they are), which
    :meth:`admits` says too. A fast path may test :meth:`admits` (or a stricter
    copy of it: the kernel's C test sends non-finite floats on) and send anything
    else to the general path, where :func:`check_scalar` decides.

    Attributes
    ----------
    low, high
        Bounds, exact: ints for integer dtypes, floats (the dtype's largest
        finite magnitude) for floating ones.
    as_float
        Whether a Python int is converted through a Python float (an int taking
        a floating dtype: what NumPy does with it anyway, and some libraries,
        ml_dtypes' bfloat16 among them, cannot convert ints beyond int64).

    A tuple, so that the compiled hit path reads its fields directly and applies
    :meth:`admits` and :meth:`prepare` in C (``admit`` in ``_fastcall.c``;
    ``tests/test_numpy_kernel.py`` checks its warm answers against cold calls for
    every kind of value).
    """

    low: int | float
    high: int | float
    as_float: bool = False

    def admits(self, value: PyScalar) -> bool:
        """Whether ``value`` certainly fits (``False``: ask :func:`check_scalar`): inside
        the bounds, or a non-finite float (``nan``, apply_where's usual fill, included).
        """
        if isinstance(value, complex):
            return bool(self.low <= value.real <= self.high and self.low <= value.imag <= self.high)
        return bool(self.low <= value <= self.high) or (
            type(value) is float and not math.isfinite(value)
        )

    def prepare(self, value: PyScalar) -> PyScalar:
        """``value`` as it is converted to the dtype (an int as a float where ``as_float``)."""
        return float(value) if self.as_float and type(value) is int else value


def scalar_fits_kind(scalar_type: type, kind: DtypeKind) -> bool:
    """Whether a Python scalar of ``scalar_type`` may take a dtype of ``kind`` (SPEC §4)."""
    return kind in _SCALAR_FITS[scalar_type]


def _dtype_of(other: str, dtype: Any) -> str:
    """How a message names the dtype a Python scalar must take: ``other``'s (an operand)."""
    if other == _DEFAULT:
        return f"the library's default dtype {dtype}, which two Python scalars of one type take"
    return f"{other}'s dtype {dtype}"


def _check_scalar_kind(name: str, value: PyScalar, dtype: Any, kind: DtypeKind, other: str) -> None:
    """A Python scalar of ``value``'s type must be able to take a dtype of ``kind``."""
    fits = _SCALAR_FITS[type(value)]
    if kind not in fits:
        scalar_kind = _SCALAR_KIND[type(value)]
        raise SelectTypeError(
            f"{name} is a Python {scalar_kind} ({value!r}) and cannot take "
            f"{_dtype_of(other, dtype)}; a Python {scalar_kind} fits only "
            + " or ".join(sorted(fits))
            + " dtypes"
        )


def scalar_range(backend: Backend, scalar_type: type, dtype: Any, kind: DtypeKind) -> ScalarRange:
    """The :class:`ScalarRange` of a Python scalar of ``scalar_type`` taking ``dtype``
    (of ``kind``, which such a scalar may take).
    """
    if kind in ("int", "uint"):
        low, high = backend.int_range(dtype)
        return ScalarRange(low, high)
    if kind in ("float", "complex"):
        limit = float(backend.float_max(dtype))
        return ScalarRange(-limit, limit, as_float=scalar_type is int)
    return ScalarRange(False, True)


def check_scalar(rng: ScalarRange, name: str, value: PyScalar, dtype: Any, other: str) -> PyScalar:
    """Raise unless ``value`` fits ``dtype``; return it as it is to be converted.

    Raises
    ------
    ScalarOverflowError
        If ``value`` (or a finite part of it) is out of the dtype's range.
    """
    if rng.admits(value):
        return rng.prepare(value)
    parts: tuple[int | float, ...] = (
        (value.real, value.imag) if isinstance(value, complex) else (value,)
    )
    for part in parts:
        inside = rng.low <= part <= rng.high
        if inside or (type(part) is float and not math.isfinite(part)):
            continue
        if type(rng.high) is int:
            raise ScalarOverflowError(
                f"{name}={value!r} is out of the range [{rng.low}, {rng.high}] of "
                f"{_dtype_of(other, dtype)}"
            )
        raise ScalarOverflowError(
            f"{name}={value!r} is finite but out of the range of {_dtype_of(other, dtype)} "
            f"(largest magnitude {rng.high:g}); pass inf explicitly if that is what you mean"
        )
    return rng.prepare(value)


# apply_where's Python-scalar fill_value: the range it must fit, per (backend, the
# scalar's type, the result dtype the backend promoted to). A range depends on these
# alone; bounded, cheap to derive again.
_FILL_RANGES = BoundedCache[tuple[Backend, type, Any], ScalarRange | None](
    "apply_where.fill_ranges", 256
)


def fill_scalar(backend: Backend, value: PyScalar, dtype: Any) -> PyScalar:
    """``apply_where``'s Python-scalar ``fill_value``, checked and as it is to be
    converted to ``dtype`` (the result's, which the backend's promotion chose).

    The rule of :func:`check_scalar` for ``select``'s scalars: a value outside the
    dtype's range raises instead of wrapping around (``300`` as ``uint8``) or
    overflowing to ``inf``. Every backend's ``apply_where`` calls it before it
    converts the value.

    Raises
    ------
    ScalarOverflowError
        If ``value`` (or a finite part of it) is out of ``dtype``'s range.
    """
    if type(value) is float and value != value:
        # nan, apply_where's usual fill: a float takes only floating or complex dtypes,
        # and check_scalar takes non-finite floats as they are, so nothing to look up
        return value
    if backend.tracing():  # no memo read or written while a compiler traces (Backend.tracing)
        rng = _fill_range(backend, type(value), dtype)
    else:
        key = (backend, type(value), dtype)
        try:
            rng = _FILL_RANGES.data[key]
        except KeyError:
            rng = _FILL_RANGES.put(key, _fill_range(backend, type(value), dtype))
    if rng is None:  # not a kind this scalar takes: the library's conversion decides
        return value
    if rng.admits(value):
        return rng.prepare(value)
    return check_scalar(rng, "fill_value", value, dtype, "the result")


def _fill_range(backend: Backend, scalar_type: type, dtype: Any) -> ScalarRange | None:
    """The range of :func:`fill_scalar`, or ``None`` for a dtype of a kind the scalar
    does not take (the promotion gave another: nothing to check against).
    """
    kind = backend.dtype_kind(dtype)
    if kind is None or not scalar_fits_kind(scalar_type, kind):
        return None
    return scalar_range(backend, scalar_type, dtype, kind)


def values_dtype(
    backend: Backend, like: Any, named: list[tuple[str, Any]]
) -> tuple[Any, list[ScalarRange | None]]:
    """The output dtype of named value operands that Select does not promote.

    The arrays must share one dtype, which Python scalars take; when all are
    Python scalars, of one type, they take the namespace's default dtype for it
    (asked with ``like``, the condition).

    Raises
    ------
    SelectTypeError
        For an unsupported dtype, two dtypes (Select does not promote), two
        scalars of different types, or a scalar of a kind the dtype cannot take.

    Returns
    -------
    dtype, ranges
        The output dtype, and per operand the range of a Python scalar (``None``
        for an array).
    """
    arrays = [(name, x) for name, x in named if type(x) not in _SCALAR_KIND]
    if not arrays:
        first_name, first = named[0]
        for name, x in named[1:]:
            if type(x) is not type(first):
                raise SelectTypeError(
                    f"{first_name} is a Python {type(first).__name__} and {name} a Python "
                    f"{type(x).__name__}; Select does not promote, so pass scalars of one type "
                    "or arrays of one dtype"
                )
        dtype = backend.default_dtype(type(first), like)
        kind = value_kind(backend, first_name, dtype)
        _check_scalar_kind(first_name, first, dtype, kind, _DEFAULT)
        rng = scalar_range(backend, type(first), dtype, kind)
        return dtype, [rng] * len(named)
    for name, x in arrays:
        value_kind(backend, name, x.dtype)
    first_name, first = arrays[0]
    dtype = first.dtype
    for name, x in arrays[1:]:
        if x.dtype != dtype:
            raise SelectTypeError(
                f"{first_name} and {name} must have the same dtype (Select does not promote), "
                f"got {first_name} {dtype} and {name} {x.dtype}"
            )
    kind = value_kind(backend, first_name, dtype)
    ranges: list[ScalarRange | None] = []
    for name, x in named:
        if type(x) in _SCALAR_KIND:
            _check_scalar_kind(name, x, dtype, kind, first_name)
            ranges.append(scalar_range(backend, type(x), dtype, kind))
        else:
            ranges.append(None)
    return dtype, ranges


def checked_scalars(
    named: list[tuple[str, Any]], dtype: Any, ranges: list[ScalarRange | None]
) -> list[Any]:
    """Check the values of the Python-scalar operands, with :func:`values_dtype`'s ranges.

    Returns the operands, each Python scalar as it is to be converted.

    Raises
    ------
    ScalarOverflowError
        If a scalar is out of its range.
    """
    others = [name for (name, _), rng in zip(named, ranges, strict=True) if rng is None]
    other = others[0] if others else _DEFAULT
    return [
        x if rng is None else check_scalar(rng, name, x, dtype, other)
        for (name, x), rng in zip(named, ranges, strict=True)
    ]


# --------------------------------------------------------------------------- devices


def check_devices(backend: Backend, named: list[tuple[str, Any]]) -> None:
    """All inputs (and ``out``) whose device is known must be on one device.

    Raises
    ------
    SelectValueError
        Naming the first two arguments on different devices.
    """
    first: tuple[str, Hashable] | None = None
    for name, x in named:
        device = backend.device_of(x)
        if device is None:
            continue
        if first is None:
            first = (name, device)
        elif device != first[1]:
            raise SelectValueError(
                f"inputs must be on one device, but {first[0]} is on "
                f"{backend.device_text(first[1])} and {name} is on {backend.device_text(device)}; "
                f"{backend.device_hint} (no implicit transfer happens)"
            )


# --------------------------------------------------------------------------- out


def check_out(backend: Backend, out: Any, out_shape: Shape, dtype: Any) -> None:
    """``out`` must be writable, match the output shape and dtype exactly, and hold
    one element per position (no overlapping elements).
    """
    if not backend.supports_out:
        raise SelectTypeError(
            f"out= is not supported for {backend.name} arrays: {backend.out_refusal}"
        )
    shape = backend.shape(out)
    if shape != out_shape:
        raise SelectShapeError(f"out has shape {shape}, but the output shape is {out_shape}")
    if out.dtype != dtype:
        raise SelectTypeError(f"out has dtype {out.dtype}, but the output dtype is {dtype}")
    check_out_layout(backend, out)


def check_out_layout(backend: Backend, out: Any) -> None:
    """The part of :func:`check_out` that depends on ``out``'s memory, not its signature.

    Raises
    ------
    SelectValueError
        If ``out`` is read-only or its elements overlap (a zero stride, or
        strides that make two positions share bytes).

    Examples
    --------
    A fast path that cached the decision for ``out``'s shape and dtype still asks
    this of every new ``out``:

    >>> import numpy as np
    >>> import arrayselect as asel
    >>> from arrayselect.plugin import check_out_layout
    >>> backend = asel.backend_for(np.ones(3), np.ones(3), np.ones(3))
    >>> check_out_layout(backend, np.broadcast_to(np.zeros(1), (3,)))
    Traceback (most recent call last):
        ...
    arrayselect.SelectValueError: out is read-only (out.flags.writeable is False)
    """
    layout = backend.out_layout(out)
    if not layout.writeable:
        raise SelectValueError(f"out is read-only ({layout.why_not})")
    if layout.strides is not None:
        _check_disjoint(tuple(backend.shape(out)), layout.strides, layout.itemsize)  # type: ignore[arg-type]


def _check_disjoint(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> None:
    """Raise if two positions of an array of this layout share bytes."""
    if 0 in shape:
        return
    # The usual out first: C order (each axis steps over the ones after it), which no
    # two positions share. A plain loop: the proof below sorts, in a microsecond.
    extent = itemsize
    for d, s in zip(reversed(shape), reversed(strides), strict=True):
        if d > 1 and s != extent:
            break
        extent *= d
    else:
        return
    axes = sorted(
        (abs(s), d, i) for i, (d, s) in enumerate(zip(shape, strides, strict=True)) if d > 1
    )
    for s, d, i in axes:
        if s == 0:
            raise SelectValueError(
                f"out has overlapping elements: stride 0 along dimension {i} of size {d} "
                f"(shape {shape}, strides {strides}), so it cannot hold the result; pass an "
                "array with its own memory for each element"
            )
    # Sorted by stride, each axis must step over everything the smaller ones span:
    # that proves the elements disjoint for every layout NumPy and the others make.
    extent = itemsize
    for s, d, _ in axes:
        if s < extent:
            break
        extent += s * (d - 1)
    else:
        return
    # Interleaved strides (only as_strided makes them): enumerate the offsets.
    size = math.prod(shape)
    if size <= _OVERLAP_ENUMERATION_LIMIT:
        import numpy as np

        offsets = np.zeros(1, dtype=np.int64)
        for s, d, _ in axes:
            offsets = (offsets[:, None] + np.arange(d, dtype=np.int64) * s).ravel()
        offsets.sort()
        if offsets.size < 2 or int(np.diff(offsets).min()) >= itemsize:
            return
    raise SelectValueError(
        f"out has overlapping elements: with strides {strides} and {itemsize}-byte items, "
        f"positions of shape {shape} share memory"
        + ("" if size <= _OVERLAP_ENUMERATION_LIMIT else " (or cannot be shown not to)")
        + ", so it cannot hold the result; pass an array with its own memory for each element"
    )
