"""Shared harness of the arrayselect asv suite.

The model is SciPy's ``XPBenchmark``: every benchmark class takes a ``backend``
parameter naming a library *and* a device; ``setup`` raises
``SkipNotImplemented`` when this machine cannot run that combination (library
not installed, no GPU, a dtype the library does not have), so the parameter
lists are the same everywhere and results from different machines line up.

Backends (the ``backend`` parameter):

============  ==============================================  ==================
name          what ``time_select`` runs                       ``time_peer`` runs
============  ==============================================  ==================
numpy         ``arrayselect.select`` on NumPy arrays           ``np.where``
np.where      ``np.where`` itself (the baseline)               (skipped)
portable      ``select`` under ``force_portable()`` on NumPy   ``np.where``
jax-cpu       ``jit(select)`` on JAX CPU arrays                ``jit(jnp.where)``
jax-gpu       ``jit(select)`` on JAX GPU arrays                ``jit(jnp.where)``
cupy          ``select`` on CuPy arrays                        ``cupy.where``
torch-cpu     ``select`` on PyTorch CPU tensors                ``torch.where``
torch-cuda    ``select`` on PyTorch CUDA tensors               ``torch.where``
dask          ``select(...).compute()`` on Dask arrays         ``da.where(...).compute()``
============  ==============================================  ==================

Whatever backend ``arrayselect`` itself picks for those arrays is what gets
timed; the suite only uses the public API (``select``, ``force_portable``,
``backend_for``, and :mod:`arrayselect.adapters` for moving data to each
library and device, synchronising, the peer and the copy bandwidth). Device
work is synchronised inside the timed call (``block_until_ready``, stream
synchronisation, ``compute``); ``setup`` builds the inputs on the device,
compiles (JAX) and makes one warm-up call, so neither compilation nor
first-call costs are timed. The peer gets the same device
arrays, reshaped (views) the way ``select``'s mode would align them.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

try:
    from asv_runner.benchmarks.mark import SkipNotImplemented
except ImportError:  # asv < 0.6 or running a module by hand

    class SkipNotImplemented(NotImplementedError):  # type: ignore[no-redef]
        """Raised by ``setup`` to skip a parameter combination."""


import arrayselect as asel
from arrayselect import adapters
from arrayselect._tools.bench_stats import compare_interleaved

# Imported at module level on purpose: asv's forkserver imports the suite once
# and forks a process per benchmark, so every child inherits these modules
# instead of paying seconds of import time. Importing initialises no device.
# (The adapters import them again, from sys.modules, when a benchmark needs one.)
for _module in ("ml_dtypes", "torch", "jax", "jax.numpy", "cupy", "dask.array"):
    # not installed, or broken: the backends using it are skipped
    with contextlib.suppress(Exception):
        importlib.import_module(_module)

BACKENDS = [
    "numpy",
    "np.where",
    "portable",
    "jax-cpu",
    "jax-gpu",
    "cupy",
    "torch-cpu",
    "torch-cuda",
    "dask",
]
GPU_BACKENDS = frozenset({"jax-gpu", "cupy", "torch-cuda"})
SIZES = [1, 10**3, 10**5, 10**7, 2**28]
#: Sizes only worth running (and only fitting) on a GPU.
GPU_ONLY_SIZES = frozenset({2**28})
DTYPES = ["bool", "int8", "float16", "bfloat16", "float32", "float64", "complex128"]
PATTERNS = [
    "same-shape",
    "cond-row",
    "cond-column",
    "outer",
    "pdpd",
    "transposed",
    "scalar-else",
]
MODES = ["none", "numpy", "numpy-multidirectional", "pdpd", "pdpd-axis0"]
#: Output shape of the broadcast-pattern and mode benchmarks (10**6 elements).
GRID = (1000, 1000)
SEED = 20240611

#: Arrays larger than this are built on the device from tiled NumPy blocks.
_BLOCK = 2**24
_COPY_BYTES = {"cpu": 2**27, "gpu": 2**30}


# --------------------------------------------------------------------------- inputs


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The NumPy dtype called ``name`` (bfloat16 from ``ml_dtypes``, else a skip)."""
    try:
        return adapters.numpy_dtype(name)
    except adapters.DtypeUnavailableError as exc:
        raise SkipNotImplemented(str(exc)) from exc


def random_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Seeded values of ``dtype``: random bits for bool/int8, N(0, 1) for floats."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "int8":
        return rng.integers(-128, 128, size=shape, dtype=np.int8)
    if dtype == "complex128":
        values = np.empty(shape, dtype=np.complex128)
        values.real = rng.standard_normal(shape)
        values.imag = rng.standard_normal(shape)
        return values
    return rng.standard_normal(shape, dtype=np.float32).astype(numpy_dtype(dtype))


def random_mask(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """A seeded boolean mask, true about half the time (no branch is predictable)."""
    return rng.random(shape) < 0.5


def zero_scalar(dtype: str) -> bool | int | float | complex:
    """A Python scalar of the kind ``select`` accepts for ``dtype``."""
    if dtype == "bool":
        return False
    if dtype == "int8":
        return 0
    if dtype == "complex128":
        return 0j
    return 0.0


@dataclass(frozen=True)
class Tiled:
    """A 1-D operand of ``size`` elements that repeats a seeded NumPy ``block``.

    Used above :data:`_BLOCK` elements on GPUs: the block is moved to the
    device once and tiled there, so no multi-GB array is built on the host.
    """

    block: np.ndarray
    size: int

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.size,)

    @property
    def itemsize(self) -> int:
        return int(self.block.itemsize)

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize


Operand = np.ndarray | Tiled | bool | int | float | complex


def _is_data(x: Any) -> bool:
    return isinstance(x, (np.ndarray, Tiled))


@dataclass
class Case:
    """One Select call, as NumPy inputs.

    ``then_transposed`` means ``then`` holds the *transpose* of the operand:
    each backend transposes it on its device (a strided view, or inside
    ``jit`` for JAX). ``peer_shapes`` are the shapes the peer ``where``
    reshapes each input to (``None``: as it is) so that plain broadcasting
    matches ``select``'s mode.
    """

    cond: np.ndarray | Tiled
    then: Operand
    else_: Operand
    kwargs: dict[str, Any] = field(default_factory=dict)
    peer_shapes: tuple[tuple[int, ...] | None, ...] = (None, None, None)
    then_transposed: bool = False

    def nbytes(self) -> int:
        """Bytes Select must at least read and write (inputs once, output once)."""
        out = math.prod(self.out_shape())
        itemsize = next(x.itemsize for x in (self.then, self.else_) if _is_data(x))
        inputs = sum(x.nbytes for x in (self.cond, self.then, self.else_) if _is_data(x))
        return int(inputs + out * itemsize)

    def reference(self) -> np.ndarray:
        """The expected result: ``np.where`` on the NumPy inputs, aligned for the peer."""
        then = self.then.T if self.then_transposed else self.then  # type: ignore[union-attr]
        arrays = [self.cond, then, self.else_]
        dtype = next(x.dtype for x in arrays[1:] if isinstance(x, np.ndarray))
        arrays = [x if isinstance(x, np.ndarray) else np.asarray(x, dtype=dtype) for x in arrays]
        aligned = [
            x if s is None else x.reshape(s) for x, s in zip(arrays, self.peer_shapes, strict=True)
        ]
        return np.where(*aligned)

    def out_shape(self) -> tuple[int, ...]:
        """Shape of the result."""
        then_shape = self.then.shape[::-1] if self.then_transposed else np.shape(self.then)
        shape = asel.select_shape(
            np.shape(self.cond), tuple(then_shape), tuple(np.shape(self.else_)), **self.kwargs
        )
        return tuple(int(d) for d in shape)


def same_shape_case(size: int, dtype: str, seed: int = SEED) -> Case:
    """Three 1-D operands of ``size`` elements (tiled from a block above ``_BLOCK``)."""
    rng = np.random.default_rng(seed)
    if size > _BLOCK:
        block = (_BLOCK,)
        return Case(
            Tiled(random_mask(rng, block), size),
            Tiled(random_values(rng, block, dtype), size),
            Tiled(random_values(rng, block, dtype), size),
        )
    shape = (size,)
    return Case(
        random_mask(rng, shape), random_values(rng, shape, dtype), random_values(rng, shape, dtype)
    )


def pattern_case(pattern: str, dtype: str = "float32", shape: tuple[int, int] = GRID) -> Case:
    """A 2-D Select with output ``shape`` whose operands broadcast as ``pattern`` says."""
    rows, cols = shape
    rng = np.random.default_rng(SEED)

    def values(s: tuple[int, ...]) -> np.ndarray:
        return random_values(rng, s, dtype)

    if pattern == "same-shape":
        return Case(random_mask(rng, shape), values(shape), values(shape))
    if pattern == "cond-row":  # one mask row for every row
        return Case(random_mask(rng, (cols,)), values(shape), values(shape))
    if pattern == "cond-column":  # one mask value per row
        return Case(random_mask(rng, (rows, 1)), values(shape), values(shape))
    if pattern == "outer":  # then a column, else a row: output is their outer "product"
        return Case(random_mask(rng, shape), values((rows, 1)), values((1, cols)))
    if pattern == "pdpd":  # else and cond fitted at axis 0, PaddlePaddle style
        return Case(
            random_mask(rng, (rows,)),
            values(shape),
            values((rows,)),
            {"auto_broadcast": "pdpd", "axis": 0},
            ((rows, 1), None, (rows, 1)),
        )
    if pattern == "transposed":  # then is a transposed (column-major) view
        return Case(
            random_mask(rng, shape), values((cols, rows)), values(shape), then_transposed=True
        )
    if pattern == "scalar-else":
        return Case(random_mask(rng, shape), values(shape), zero_scalar(dtype))
    raise ValueError(f"unknown pattern {pattern!r}")


def mode_case(mode: str, shape: tuple[int, int] = GRID) -> Case:
    """A float32 Select exercising one ``auto_broadcast``/``cond_broadcast`` mode."""
    rows, cols = shape
    rng = np.random.default_rng(SEED)

    def values(s: tuple[int, ...]) -> np.ndarray:
        return random_values(rng, s, "float32")

    if mode == "none":
        return Case(
            random_mask(rng, shape), values(shape), values(shape), {"auto_broadcast": "none"}
        )
    if mode == "numpy":
        return Case(random_mask(rng, (cols,)), values(shape), values((1, cols)))
    if mode == "numpy-multidirectional":  # cond enlarges the output
        return Case(
            random_mask(rng, (rows, 1)),
            values((cols,)),
            values((1, cols)),
            {"cond_broadcast": "multidirectional"},
        )
    if mode == "pdpd":  # axis -1: each input right-aligned onto then, one way
        return Case(
            random_mask(rng, (cols,)),
            values(shape),
            values((rows, 1)),
            {"auto_broadcast": "pdpd"},
        )
    if mode == "pdpd-axis0":
        return Case(
            random_mask(rng, (rows,)),
            values(shape),
            values((rows,)),
            {"auto_broadcast": "pdpd", "axis": 0},
            ((rows, 1), None, (rows, 1)),
        )
    raise ValueError(f"unknown mode {mode!r}")


# --------------------------------------------------------------------------- backends


class Target:
    """One ``backend`` parameter: a library on a device, and what ``time_select`` runs.

    The library and device are an :class:`arrayselect.adapters.Library`
    (``adapter``): it moves the inputs there bit for bit, synchronises,
    compiles (JAX), names the peer and times the device's copy.
    """

    def __init__(self, name: str, adapter: adapters.Library) -> None:
        self.name = name
        self.adapter = adapter
        self.library = adapter.library
        self.device = adapter.device_kind

    def put(self, x: np.ndarray) -> Any:
        """``x`` on this target's device; a skip when the library lacks its dtype."""
        try:
            return self.adapter.from_numpy(x)
        except adapters.DtypeUnavailableError as exc:
            raise SkipNotImplemented(f"{self.name}: {exc}") from exc

    def ours(self, kwargs: dict[str, Any]) -> Callable[..., Any]:
        """The function under test, ``f(cond, then, else_)``."""

        def run(cond: Any, then: Any, else_: Any) -> Any:
            return asel.select(cond, then, else_, **kwargs)

        return run

    def peer(self) -> Callable[..., Any] | None:
        """The library's own ``where``; ``None`` when the backend *is* the peer."""
        return self.adapter.peer


class NpWhereTarget(Target):
    def ours(self, kwargs: dict[str, Any]) -> Callable[..., Any]:
        return np.where  # fed the peer's pre-aligned inputs, see Prepared

    def peer(self) -> Callable[..., Any] | None:
        return None


class PortableTarget(Target):
    def ours(self, kwargs: dict[str, Any]) -> Callable[..., Any]:
        def run(cond: Any, then: Any, else_: Any) -> Any:
            with asel.force_portable():
                return asel.select(cond, then, else_, **kwargs)

        return run


#: ``backend`` parameter -> (Target class, adapter key). Dask blocks are rows,
#: persisted before timing (``dask_chunking="rows"``); the NumPy copy is Dask's
#: memory floor (its blocks are NumPy arrays in host memory, and a Dask "copy"
#: would time the scheduler rather than the memory).
_TARGETS: dict[str, tuple[type[Target], str]] = {
    "numpy": (Target, "numpy"),
    "np.where": (NpWhereTarget, "numpy"),
    "portable": (PortableTarget, "numpy"),
    "jax-cpu": (Target, "jax-cpu"),
    "jax-gpu": (Target, "jax-gpu"),
    "cupy": (Target, "cupy"),
    "torch-cpu": (Target, "torch-cpu"),
    "torch-cuda": (Target, "torch-cuda"),
    "dask": (Target, "dask"),
}


def require(backend: str, size: int | None = None) -> None:
    """Raise ``SkipNotImplemented`` unless ``backend`` (at ``size``) runs here.

    Call it first in ``setup``, before building inputs.
    """
    target(backend)
    if size in GPU_ONLY_SIZES and backend not in GPU_BACKENDS:
        raise SkipNotImplemented(f"size {size} is run on GPU backends only")


def target(backend: str) -> Target:
    """The :class:`Target` for a ``backend`` parameter, checked to be runnable here."""
    cls, key = _TARGETS[backend]
    try:
        adapter = adapters.get(key, dask_chunking="rows")
    except adapters.LibraryUnavailableError as exc:
        raise SkipNotImplemented(f"{backend}: {exc}") from exc
    return cls(backend, adapter)


# --------------------------------------------------------------------------- timing


def median_time(fn: Callable[[], Any], min_time: float = 0.02, repeat: int = 5) -> float:
    """Median seconds per call: ``repeat`` rounds of enough calls to last ``min_time``
    (:func:`arrayselect._tools.bench_stats.compare_interleaved`, the one timing loop)."""
    (seconds,) = compare_interleaved([fn], repeat, min_time)
    return seconds


def copy_bandwidth(backend: str) -> float:
    """Bytes per second (read + write) of a large copy on ``backend``'s device.

    A copy reads and writes each byte once: the least memory traffic any
    elementwise operation can have, so it is the floor Select is measured
    against. Every CPU backend shares one figure, NumPy's ``np.copyto`` into an
    existing buffer; a GPU backend uses its own library's device copy. Measured
    once per process and device.
    """
    return _copy_bandwidth("numpy" if target(backend).device == "cpu" else backend)


@functools.cache
def _copy_bandwidth(backend: str) -> float:
    t = target(backend)
    nbytes = _COPY_BYTES[t.device]
    return 2 * nbytes / t.adapter.copy_seconds(nbytes)


# --------------------------------------------------------------------------- prepared calls


class Prepared:
    """A :class:`Case` on a backend's device, with zero-argument timed callables.

    ``ours()`` and ``peer()`` run the function on the device arrays and wait
    for the device. Construction compiles (JAX) and warms both up.
    """

    def __init__(self, backend: str, case: Case) -> None:
        t = target(backend)
        self.target = t
        self.case = case
        arrays = [self._put(x) for x in (case.cond, case.then, case.else_)]
        transpose_inside = case.then_transposed and t.library == "jax"
        if case.then_transposed and not transpose_inside:
            arrays[1] = t.adapter.transpose(arrays[1])  # a strided view, as a user would have
        scalars = {i: x for i, x in enumerate(arrays) if not _is_array(x)}
        device_args = [x for x in arrays if _is_array(x)]

        def fill(args: tuple[Any, ...]) -> list[Any]:
            it = iter(args)
            full = [scalars[i] if i in scalars else next(it) for i in range(3)]
            if transpose_inside:
                full[1] = t.adapter.transpose(full[1])
            return full

        select_fn = t.ours(case.kwargs)
        aligned = backend == "np.where"  # the baseline gets the peer's aligned inputs

        def run_ours(*args: Any) -> Any:
            c, a, b = fill(args)
            if aligned:
                c, a, b = _align(t, (c, a, b), case.peer_shapes)
            return select_fn(c, a, b)

        lib = t.adapter
        ours = lib.compile(run_ours)
        self.ours: Callable[[], Any] = lambda: lib.sync(ours(*device_args))
        where = t.peer()
        self.peer: Callable[[], Any] | None = None
        if where is not None:

            def run_peer(*args: Any) -> Any:
                return where(*_align(t, fill(args), case.peer_shapes))

            peer = lib.compile(run_peer)
            self.peer = lambda: lib.sync(peer(*device_args))
        try:
            self.result = self.ours()
        except asel.SelectTypeError as exc:  # a dtype arrayselect refuses for this library
            raise SkipNotImplemented(f"{backend}: {exc}") from exc
        if self.peer is not None:
            self.peer()
        if backend != "np.where" and not any(isinstance(x, Tiled) for x in arrays_np(case)):
            self._check()

    def _check(self) -> None:
        """A benchmark of a wrong result is worthless: compare with NumPy bit for bit."""
        expected = self.case.reference()
        got = self.target.adapter.to_numpy(self.result)
        same = (
            got.shape == expected.shape
            and str(got.dtype) == str(expected.dtype)
            and np.array_equal(_bytes(got), _bytes(expected))
        )
        if not same:
            raise AssertionError(
                f"{self.target.name}: select returned {got.dtype}{got.shape}, which differs "
                f"from np.where's {expected.dtype}{expected.shape} for {self.case.kwargs}"
            )

    def _put(self, x: Any) -> Any:
        if isinstance(x, Tiled):
            block = self.target.put(x.block)
            reps = -(-x.size // x.block.size)
            return self.target.adapter.concat([block] * reps)[: x.size]
        if isinstance(x, np.ndarray):
            return self.target.put(x)
        return x

    def call_ours(self) -> None:
        self.ours()

    def call_peer(self) -> None:
        if self.peer is None:
            raise SkipNotImplemented(f"{self.target.name} is its own peer")
        self.peer()


def arrays_np(case: Case) -> list[Any]:
    """The operands of ``case`` that are arrays (NumPy or :class:`Tiled`)."""
    return [x for x in (case.cond, case.then, case.else_) if _is_data(x)]


def _bytes(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).reshape(-1).view(np.uint8)


def _is_array(x: Any) -> bool:
    return not isinstance(x, (bool, int, float, complex))


def _align(t: Target, arrays: Any, shapes: tuple[tuple[int, ...] | None, ...]) -> list[Any]:
    return [
        x if s is None or not _is_array(x) else t.adapter.reshape(x, s)
        for x, s in zip(arrays, shapes, strict=True)
    ]
