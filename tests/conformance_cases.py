"""Seeded random cases for the conformance tests against real runtimes.

:mod:`tests.test_conformance_runtimes` runs every case produced here through
OpenVINO, ONNX Runtime and PaddlePaddle and compares each runtime with
:func:`arrayselect.select` / :func:`arrayselect.select_shape`. This module
holds what does not depend on any runtime: the case generator (shapes per mode,
dtypes, condition dtypes), the input data (random bits with the special values
that show whether a runtime copies bits), and the *specification outcome* of a
case, i.e. what ``arrayselect`` answers.

Everything is derived from one fixed seed (:data:`SEED`), so a failure names a
case that reproduces exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np

import arrayselect as asel
from arrayselect.adapters import DTYPES

__all__ = [
    "COND_INT_DTYPES",
    "SEED",
    "VALUE_DTYPES",
    "Case",
    "Outcome",
    "generate_cases",
    "make_inputs",
    "quiet_signaling_nans",
    "spec_outcome",
    "value_dtype",
]

#: The one seed every case and every input array derives from.
SEED = 20261121

#: Value dtypes the cases cycle through: the specification's, but complex (none of
#: the three runtimes has a complex Select).
VALUE_DTYPES = tuple(name for name in DTYPES if not name.startswith("complex"))

#: Integer condition dtypes (DirectML's ``uint8`` and the others SPEC.md §4 allows).
COND_INT_DTYPES = ("uint8", "int8", "int32", "int64", "uint64")

Mode = Literal["none", "numpy", "pdpd"]
Shape = tuple[int, ...]


def value_dtype(name: str) -> np.dtype[Any]:
    """The NumPy dtype of a dtype name (bfloat16 from ``ml_dtypes``)."""
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


@dataclasses.dataclass(frozen=True)
class Case:
    """One Select call: three shapes, the mode's options and the dtypes."""

    index: int
    cond_shape: Shape
    then_shape: Shape
    else_shape: Shape
    mode: Mode
    axis: int = -1
    cond_broadcast: Literal["unidirectional", "multidirectional"] = "unidirectional"
    dtype: str = "float32"
    cond_dtype: str = "bool"

    @property
    def options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`arrayselect.select` for this case."""
        opts: dict[str, Any] = {"auto_broadcast": self.mode}
        if self.mode == "pdpd":
            opts["axis"] = self.axis
        if self.mode == "numpy":
            opts["cond_broadcast"] = self.cond_broadcast
        return opts

    @property
    def shapes(self) -> tuple[Shape, Shape, Shape]:
        """``(cond_shape, then_shape, else_shape)``."""
        return self.cond_shape, self.then_shape, self.else_shape

    def __str__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return (
            f"case {self.index}: select(cond {self.cond_shape} {self.cond_dtype}, "
            f"then {self.then_shape} {self.dtype}, else {self.else_shape}, {opts})"
        )


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a call gave: a rejection, or an output shape, dtype and its raw bytes.

    ``data`` is ``None`` when the values were not computed (a shape-only check).
    """

    accepted: bool
    shape: Shape | None = None
    dtype: str | None = None
    data: bytes | None = None
    error: str = ""

    @classmethod
    def rejected(cls, error: str) -> Outcome:
        """A rejected call, with the error text for the failure message."""
        return cls(accepted=False, error=error)

    @classmethod
    def of(cls, array: Any) -> Outcome:
        """The outcome of a call that returned ``array`` (anything NumPy can read)."""
        # Not np.ascontiguousarray: it turns a 0-d array into shape (1,).
        arr = np.asarray(array)
        return cls(True, tuple(arr.shape), str(arr.dtype), arr.tobytes(order="C"))

    def same_as(self, other: Outcome) -> bool:
        """Equal acceptance, shape and, where both have them, bytes (errors may differ)."""
        if self.accepted != other.accepted:
            return False
        if not self.accepted:
            return True
        if self.shape != other.shape:
            return False
        if self.data is None or other.data is None:
            return True
        return self.data == other.data

    def __str__(self) -> str:
        if not self.accepted:
            return f"rejected ({self.error[:200]})"
        return f"shape {self.shape} {self.dtype}" + ("" if self.data is None else " with values")


# ----------------------------------------------------------------------------- shapes


def _dim(rng: np.random.Generator) -> int:
    # Mostly 2 and 3 so that broadcasting is visible, some 1s, and zero-size
    # dimensions often enough that every mode meets them.
    return int(rng.choice([0, 1, 2, 3], p=[0.08, 0.22, 0.4, 0.3]))


def _ones_out(rng: np.random.Generator, dims: Shape, p: float = 0.3) -> Shape:
    """``dims`` with some dimensions replaced by 1 (legal broadcasting)."""
    return tuple(1 if rng.random() < p else d for d in dims)


def _perturb(rng: np.random.Generator, dims: Shape) -> Shape:
    """One dimension changed to another small size, or a dimension added/removed."""
    dims = list(dims)
    what = rng.integers(0, 3)
    if what == 0 and dims:
        dims[int(rng.integers(0, len(dims)))] = int(rng.integers(0, 5))
    elif what == 1:
        dims.insert(int(rng.integers(0, len(dims) + 1)), int(rng.integers(1, 4)))
    elif dims:
        del dims[int(rng.integers(0, len(dims)))]
    return tuple(dims)


def _suffix(rng: np.random.Generator, dims: Shape) -> Shape:
    return dims[int(rng.integers(0, len(dims) + 1)) :]


def _numpy_shapes(rng: np.random.Generator, multidirectional: bool) -> tuple[Shape, Shape, Shape]:
    out = tuple(_dim(rng) for _ in range(int(rng.integers(0, 7))))
    then = _ones_out(rng, _suffix(rng, out) if rng.random() < 0.5 else out)
    else_ = _ones_out(rng, _suffix(rng, out) if rng.random() < 0.5 else out)
    cond = _ones_out(rng, _suffix(rng, out), 0.4)
    if multidirectional and rng.random() < 0.5:
        # cond carries the dimensions that then/else broadcast: cond enlarges the output.
        cond = out
        then, else_ = _ones_out(rng, then, 0.6), _ones_out(rng, else_, 0.6)
    elif rng.random() < 0.15:
        cond = (int(rng.integers(1, 3)), *cond)  # rank above the output's
    shapes = [cond, then, else_]
    if rng.random() < 0.25:
        k = int(rng.integers(0, 3))
        shapes[k] = _perturb(rng, shapes[k])
    return shapes[0], shapes[1], shapes[2]


def _pdpd_src(rng: np.random.Generator, then: Shape, axis: int) -> Shape:
    """A source that fits ``then`` at ``axis`` (``-1``: right-aligned), usually."""
    rank = len(then)
    if axis == -1:
        src = _ones_out(rng, _suffix(rng, then))
    else:
        length = int(rng.integers(0, rank - axis + 1))
        src = _ones_out(rng, then[axis : axis + length])
    if rng.random() < 0.3:
        src = src + (1,) * int(rng.integers(1, 3))  # trailing 1s, which pdpd ignores
    return src


def _pdpd_shapes(rng: np.random.Generator, axis: int) -> tuple[Shape, Shape, Shape]:
    rank = int(rng.integers(max(axis, 0), 7))
    then = tuple(_dim(rng) for _ in range(rank))
    shapes = [_pdpd_src(rng, then, axis), then, _pdpd_src(rng, then, axis)]
    if rng.random() < 0.25:
        k = int(rng.choice([0, 2]))
        shapes[k] = _perturb(rng, shapes[k])
    return shapes[0], shapes[1], shapes[2]


def _none_shapes(rng: np.random.Generator) -> tuple[Shape, Shape, Shape]:
    shape = tuple(_dim(rng) for _ in range(int(rng.integers(0, 7))))
    shapes = [shape, shape, shape]
    if rng.random() < 0.3:
        k = int(rng.integers(0, 3))
        shapes[k] = _perturb(rng, shapes[k])
    return shapes[0], shapes[1], shapes[2]


#: The mode variants every runtime is asked about, with how many cases each gets.
#: ``pdpd`` with an explicit axis draws the axis per case (0 to 3).
VARIANTS: tuple[tuple[str, int], ...] = (
    ("none", 30),
    ("numpy-unidirectional", 60),
    ("numpy-multidirectional", 60),
    ("pdpd-axis-1", 50),
    ("pdpd-explicit-axis", 50),
)


def generate_cases(seed: int = SEED, int_cond_every: int = 7) -> list[Case]:
    """All cases, reproducibly from ``seed``.

    Parameters
    ----------
    seed
        Seed of the generator; the tests use :data:`SEED`.
    int_cond_every
        Every ``int_cond_every``-th case gets an integer ``cond`` (one of
        :data:`COND_INT_DTYPES`) instead of a boolean one.

    Returns
    -------
    list of Case
        ``sum(n for _, n in VARIANTS)`` cases; value dtypes cycle through
        :data:`VALUE_DTYPES` so that every dtype meets every mode.
    """
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    for variant, count in VARIANTS:
        for _ in range(count):
            index = len(cases)
            dtype = VALUE_DTYPES[index % len(VALUE_DTYPES)]
            cond_dtype = "bool"
            if index % int_cond_every == int_cond_every - 1:
                cond_dtype = COND_INT_DTYPES[(index // int_cond_every) % len(COND_INT_DTYPES)]
            common = {"index": index, "dtype": dtype, "cond_dtype": cond_dtype}
            if variant == "none":
                c, t, e = _none_shapes(rng)
                cases.append(Case(index, c, t, e, "none", dtype=dtype, cond_dtype=cond_dtype))
            elif variant.startswith("numpy"):
                multi = variant.endswith("multidirectional")
                c, t, e = _numpy_shapes(rng, multi)
                how = "multidirectional" if multi else "unidirectional"
                cases.append(
                    Case(
                        cond_shape=c,
                        then_shape=t,
                        else_shape=e,
                        mode="numpy",
                        cond_broadcast=how,
                        **common,
                    )
                )
            else:
                axis = -1 if variant == "pdpd-axis-1" else int(rng.integers(0, 4))
                c, t, e = _pdpd_shapes(rng, axis)
                cases.append(
                    Case(cond_shape=c, then_shape=t, else_shape=e, mode="pdpd", axis=axis, **common)
                )
    return cases


# ------------------------------------------------------------------------------- data

#: Bit patterns that a runtime which does not copy bits would change: NaNs with
#: payloads (quiet and signalling, both signs), -0.0, infinities, subnormals.
_SPECIAL_BITS: dict[int, tuple[int, ...]] = {
    # float32 and float64; the 16-bit formats have their own tables below.
    4: (
        0x7FC00001,
        0xFFC12345,
        0x7F800001,
        0xFFA00000,
        0x80000000,
        0x7F800000,
        0xFF800000,
        0x00000001,
    ),
    8: (
        0x7FF8000000000001,
        0xFFF8DEADBEEF0000,
        0x7FF0000000000001,
        0x8000000000000000,
        0xFFF0000000000000,
        0x7FF0000000000000,
        0x0000000000000001,
    ),
}
_SPECIAL_F16 = (0x7E01, 0xFE42, 0x7C01, 0x7D00, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x8001)
_SPECIAL_BF16 = (0x7FC1, 0xFFC3, 0x7F81, 0x7FA0, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x8001)


def _values(rng: np.random.Generator, shape: Shape, dtype: str) -> np.ndarray:
    dt = value_dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    if dt == np.bool_:
        return rng.integers(0, 2, size).astype(np.bool_).reshape(shape)
    raw = rng.integers(0, 256, size * dt.itemsize, dtype=np.uint8)
    arr = raw.view(dt).reshape(shape).copy()
    if dt.kind == "f" or dtype == "bfloat16":
        specials = {
            "float16": _SPECIAL_F16,
            "bfloat16": _SPECIAL_BF16,
        }.get(dtype) or _SPECIAL_BITS[dt.itemsize]
        flat = arr.reshape(-1).view(f"u{dt.itemsize}")
        # About a quarter of the elements become special values.
        hit = rng.random(size) < 0.25
        flat[hit] = rng.choice(np.array(specials, dtype=f"u{dt.itemsize}"), int(hit.sum()))
    return arr


def _cond(rng: np.random.Generator, shape: Shape, dtype: str) -> np.ndarray:
    size = int(np.prod(shape, dtype=np.int64))
    if dtype == "bool":
        return rng.integers(0, 2, size).astype(np.bool_).reshape(shape)
    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    # Half zeros; the rest extreme and ordinary nonzero values (negative ones
    # for signed dtypes), so "nonzero is true" is checked, not "== 1".
    choices = np.array([0, 0, 0, 1, 2, info.max, info.min or 7], dtype=dt)
    return rng.choice(choices, size).reshape(shape)


def make_inputs(case: Case) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cond, then and else arrays of ``case``, from a generator seeded by the case."""
    rng = np.random.default_rng([SEED, case.index])
    return (
        _cond(rng, case.cond_shape, case.cond_dtype),
        _values(rng, case.then_shape, case.dtype),
        _values(rng, case.else_shape, case.dtype),
    )


def quiet_signaling_nans(data: bytes, dtype: str) -> bytes:
    """``data`` with the quiet bit set in every signalling NaN of a float dtype.

    That is what converting a value to another float format and back does on
    x86 (and what IEEE 754 prescribes for the conversion); the payload stays.
    """
    dt = value_dtype(dtype)
    exp, quiet = {
        "float16": (0x7C00, 0x0200),
        "bfloat16": (0x7F80, 0x0040),
        "float32": (0x7F800000, 0x00400000),
        "float64": (0x7FF0000000000000, 0x0008000000000000),
    }[dtype]
    bits = np.frombuffer(data, dtype=f"u{dt.itemsize}").copy()
    mant = quiet - 1 | quiet  # all mantissa bits below and including the quiet bit
    signaling = ((bits & exp) == exp) & ((bits & mant) != 0) & ((bits & quiet) == 0)
    bits[signaling] |= quiet
    return bits.tobytes()


# ------------------------------------------------------------------------ the spec


def spec_outcome(
    case: Case, arrays: tuple[np.ndarray, ...] | None = None, **override: Any
) -> Outcome:
    """What ``arrayselect`` answers for ``case`` (options may be overridden).

    With ``arrays``, :func:`arrayselect.select` runs and the outcome has the
    output bytes; without, :func:`arrayselect.select_shape` answers for the
    shapes only. A :class:`arrayselect.SelectError` is a rejection; anything
    else propagates (the contract allows no other exception).
    """
    options = {**case.options, **override}
    try:
        if arrays is None:
            shape = asel.select_shape(*case.shapes, **options)
            return Outcome(accepted=True, shape=tuple(shape), dtype=str(value_dtype(case.dtype)))
        return Outcome.of(asel.select(*arrays, **options))
    except asel.SelectError as exc:
        return Outcome.rejected(f"{type(exc).__name__}: {exc}")


def iter_cases(mode: str | None = None) -> Iterator[Case]:
    """The cases of :func:`generate_cases`, optionally of one mode only."""
    for case in generate_cases():
        if mode is None or case.mode == mode:
            yield case
