"""One adapter per array library and device: NumPy data in and out, bit for bit.

Code that runs :func:`arrayselect.select` on many array libraries needs the same
few things of each of them: put a NumPy array onto the library's device with its
dtype and every bit kept (bfloat16 included, through ``ml_dtypes``), bring an
array back to NumPy, wait for the device (or compute a lazy array), call the
library's own ``where`` (the *peer* that ``select`` is compared with), compile a
function (``jax.jit``) and time a same-device copy (the *memory floor*). An
adapter, a :class:`Library`, does these for one library on one device. The test
suite (``tests/xp_helpers.py``), ``arrayselect bench``, the asv suite
(``asv_benchmarks/benchmarks/common.py``) and the documentation's capability
probe (``docs/_ext/capabilities.py``) all use them.

Importing this module imports no array library but NumPy; each adapter imports
its library when it is made, and raises :class:`LibraryUnavailableError` (with
the reason) when the library is not installed or the device is absent.

====================  ==================================  ============================  ======
key                   arrays                              peer                          device
====================  ==================================  ============================  ======
``numpy``             NumPy                               ``np.where``                  cpu
``array_api_strict``  array-api-strict                    ``array_api_strict.where``    cpu
``torch-cpu``         PyTorch tensors on the CPU          ``torch.where``               cpu
``torch-cuda``        PyTorch tensors on CUDA             ``torch.where``               gpu
``jax-cpu``           JAX arrays on the CPU               ``jnp.where``                 cpu
``jax-gpu``           JAX arrays on the GPU               ``jnp.where``                 gpu
``jax``               JAX arrays on JAX's default device  ``jnp.where``                 either
``dask``              Dask arrays of NumPy blocks         ``da.where``                  cpu
``cupy``              CuPy arrays (NVIDIA GPU)            ``cupy.where``                gpu
====================  ==================================  ============================  ======

Examples
--------
>>> import numpy as np
>>> from arrayselect import adapters
>>> lib = adapters.get("numpy")
>>> lib.label, lib.device_kind, lib.peer_name
('numpy', 'cpu', 'np.where')
>>> then = lib.from_numpy(np.array([-0.0, 1.5], dtype=np.float32))
>>> lib.to_numpy(lib.sync(lib.peer(np.array([True, False]), then, 2.0)))
array([-0.,  2.], dtype=float32)
>>> found = adapters.discover(["numpy"])
>>> [a.key for a in found.present], found.missing
(['numpy'], {})
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from arrayselect._rules import dtypes as _dtypes

__all__ = [
    "DTYPES",
    "KEYS",
    "ArrayApiStrictAdapter",
    "CupyAdapter",
    "DaskAdapter",
    "DaskChunking",
    "Discovery",
    "DtypeUnavailableError",
    "JaxAdapter",
    "Library",
    "LibraryUnavailableError",
    "NumpyAdapter",
    "TorchAdapter",
    "discover",
    "for_array",
    "get",
    "numpy_dtype",
]

#: The dtype names of the specification, in table order.
DTYPES: tuple[str, ...] = _dtypes.SPEC_DTYPES

#: The keys :func:`discover` tries by default, in the order it lists them.
KEYS: tuple[str, ...] = (
    "numpy",
    "torch-cpu",
    "torch-cuda",
    "jax-cpu",
    "jax-gpu",
    "dask",
    "cupy",
    "array_api_strict",
)

#: How :class:`DaskAdapter` cuts arrays into chunks (see there).
DaskChunking = Literal["halves", "rows"]

_NO_ML_DTYPES = "bfloat16 needs ml_dtypes, which is not installed (pip install ml_dtypes)"


class LibraryUnavailableError(RuntimeError):
    """An array library is not installed (or does not import), or its device is absent."""


class DtypeUnavailableError(TypeError):
    """A dtype cannot be made here: the library lacks it, or NumPy does (no ``ml_dtypes``)."""


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The NumPy dtype called ``name``; ``"bfloat16"`` comes from ``ml_dtypes``.

    Parameters
    ----------
    name : str
        A NumPy dtype name, or ``"bfloat16"``.

    Returns
    -------
    numpy.dtype
        The dtype.

    Raises
    ------
    DtypeUnavailableError
        For ``"bfloat16"`` when ``ml_dtypes`` is not installed.
    """
    try:
        return _dtypes.numpy_dtype(name)
    except ImportError as exc:
        raise DtypeUnavailableError(_NO_ML_DTYPES) from exc


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if exc.name in (name, name.partition(".")[0]):  # the library itself, not a dependency
            raise LibraryUnavailableError(f"{name} is not installed") from exc
        raise LibraryUnavailableError(f"{name} does not import: {exc}") from exc
    except Exception as exc:  # a broken install
        raise LibraryUnavailableError(f"{name} does not import: {exc}") from exc


def _best_seconds(fn: Callable[[], object], repeat: int = 5) -> float:
    """Shortest of ``repeat`` timed calls of ``fn``, after one untimed call."""
    fn()
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


class Library:
    """An array library on one device, seen from NumPy.

    Subclasses set the class attributes and override what their library does
    differently; make instances with :func:`get` (cached) or the subclass.

    Attributes
    ----------
    key : str
        The key :func:`get` knows the adapter by, e.g. ``"torch-cuda"``.
    library : str
        The library: ``"numpy"``, ``"torch"``, ``"jax"``, ``"dask"``, ``"cupy"``
        or ``"array_api_strict"``.
    label : str
        Library and device for tables, e.g. ``"torch cuda"``.
    device_kind : str
        ``"cpu"`` or ``"gpu"``.
    peer_name : str
        What :attr:`peer` is called in tables, e.g. ``"torch.where"``.
    compiler : str or None
        What :meth:`compile` wraps functions with (``"jit"``), ``None`` for nothing.
    xp : module
        The library's array namespace (``jax.numpy``, ``dask.array``, ...).

    Raises
    ------
    LibraryUnavailableError
        When made without the library installed or without the device.
    """

    library: ClassVar[str] = ""
    module_name: ClassVar[str] = ""
    peer_name: ClassVar[str] = ""
    compiler: ClassVar[str | None] = None

    def __init__(self) -> None:
        self.key: str = self.library
        self.label: str = self.library
        self.device_kind: str = "cpu"
        self.xp: Any = self._load()

    def _load(self) -> Any:
        """Import the library (and check for its device); raise LibraryUnavailableError."""
        return _import(self.module_name)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key}>"

    @property
    def device_name(self) -> str:
        """The device: ``"cpu"``, or the GPU's name, e.g. ``"cuda:NVIDIA H100"``."""
        return "cpu"

    @property
    def version(self) -> str:
        """The library's version (of its top-level package)."""
        root = importlib.import_module(self.module_name.partition(".")[0])
        return str(getattr(root, "__version__", "?"))

    # ------------------------------------------------------------------ dtypes

    def missing_dtype_reason(self, name: str) -> str | None:
        """Why arrays of dtype ``name`` cannot be made here; ``None`` when they can.

        Parameters
        ----------
        name : str
            A dtype name (:data:`DTYPES`, or any NumPy name; names the adapter
            does not know are left to the library to accept or refuse).

        Returns
        -------
        str or None
            The reason, e.g. ``"cupy has no bfloat16 dtype"``.
        """
        if name == "bfloat16":
            try:
                numpy_dtype(name)
            except DtypeUnavailableError as exc:
                return str(exc)
        return self._missing_dtype(name)

    def _missing_dtype(self, name: str) -> str | None:
        return None

    def has_dtype(self, name: str) -> bool:
        """Whether arrays of dtype ``name`` can be made here (see :meth:`missing_dtype_reason`)."""
        return self.missing_dtype_reason(name) is None

    # ------------------------------------------------------------------ data

    def from_numpy(self, a: Any) -> Any:
        """An array of this library on this device with the dtype and bits of ``a``.

        The result may share memory with ``a`` where the library can (NumPy,
        PyTorch on the CPU, Dask, array-api-strict); copy ``a`` first for an
        independent array.

        Parameters
        ----------
        a : array_like
            A NumPy array (or what :func:`numpy.asarray` makes one of).

        Returns
        -------
        array
            The library's array.

        Raises
        ------
        DtypeUnavailableError
            When the library has no such dtype.
        """
        array = np.asarray(a)
        reason = self.missing_dtype_reason(array.dtype.name)
        if reason is not None:
            raise DtypeUnavailableError(reason)
        return self._put(array)

    def _put(self, a: np.ndarray) -> Any:
        return self.xp.asarray(a)

    def to_numpy(self, x: Any) -> np.ndarray:
        """A NumPy array with the dtype and bits of ``x`` (which may be computed first).

        It may share memory with ``x`` (NumPy, PyTorch on the CPU); copy it for
        an independent array.
        """
        return np.asarray(x)

    def sync(self, x: Any) -> Any:
        """Wait for the device's work on ``x`` (compute a lazy ``x``); return the result."""
        return x

    @property
    def peer(self) -> Callable[..., Any]:
        """The library's own ``where(cond, then, else_)``."""
        where: Callable[..., Any] = self.xp.where
        return where

    def compile(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` (a function of this library's arrays) compiled as users run it: ``jax.jit``."""
        return fn

    def copy_seconds(self, nbytes: int) -> float:
        """Best seconds of a copy of ``nbytes`` bytes within the device: the memory floor.

        On the CPU every adapter times NumPy's ``np.copyto`` into an existing
        buffer (the arrays of every CPU library live in the same memory); on a
        GPU the library's own device copy.
        """
        return _best_seconds(self.copy_call(nbytes))

    def copy_call(self, nbytes: int) -> Callable[[], object]:
        """One synchronised copy of ``nbytes`` bytes within the device, buffers made once.

        What :meth:`copy_seconds` times; ``bench`` times it between its rounds,
        so that the memory floor is measured under the same load as the rows.
        """
        src = np.ones(nbytes // 4, dtype=np.float32)
        dst = np.empty_like(src)
        return lambda: np.copyto(dst, src)

    # ------------------------------------------------------------------ arrays on the device

    def concat(self, parts: Sequence[Any]) -> Any:
        """1-D arrays of this library joined end to end (on the device)."""
        return self.xp.concat(list(parts))

    def transpose(self, x: Any) -> Any:
        """``x`` with its axes reversed, as a view where the library has views."""
        return x.T

    def reshape(self, x: Any, shape: tuple[int, ...]) -> Any:
        """``x`` reshaped to ``shape``, as a view where the library has views."""
        return self.xp.reshape(x, shape)


class NumpyAdapter(Library):
    """NumPy arrays (``ml_dtypes`` dtypes included)."""

    library = "numpy"
    module_name = "numpy"
    peer_name = "np.where"

    def _put(self, a: np.ndarray) -> Any:
        return a

    def concat(self, parts: Sequence[Any]) -> Any:
        return np.concatenate(list(parts))


class ArrayApiStrictAdapter(Library):
    """array-api-strict arrays: only the standard's dtypes (no float16, no bfloat16)."""

    library = "array_api_strict"
    module_name = "array_api_strict"
    peer_name = "array_api_strict.where"

    def _missing_dtype(self, name: str) -> str | None:
        if name in DTYPES and getattr(self.xp, name, None) is None:
            return f"array_api_strict has no {name} (only the standard's dtypes)"
        return None

    def to_numpy(self, x: Any) -> np.ndarray:
        try:
            return np.asarray(x)
        except Exception:
            return np.from_dlpack(x)


class TorchAdapter(Library):
    """PyTorch tensors on ``device`` (``"cpu"`` or ``"cuda"``); bfloat16 moves as raw bits.

    Parameters
    ----------
    device : {"cpu", "cuda"}
        Where the tensors live.
    """

    library = "torch"
    module_name = "torch"
    peer_name = "torch.where"

    def __init__(self, device: Literal["cpu", "cuda"] = "cpu") -> None:
        super().__init__()
        if device == "cuda" and not self.xp.cuda.is_available():
            raise LibraryUnavailableError("no CUDA device for torch")
        self.device = device
        self.key = f"torch-{device}"
        self.label = f"torch {device}"
        self.device_kind = "gpu" if device == "cuda" else "cpu"

    @property
    def device_name(self) -> str:
        if self.device == "cpu":
            return "cpu"
        return "cuda:" + str(self.xp.cuda.get_device_name())

    def _missing_dtype(self, name: str) -> str | None:
        torch = self.xp
        if name in DTYPES and not isinstance(getattr(torch, name, None), torch.dtype):
            return f"torch has no {name} dtype"
        return None

    def _put(self, a: np.ndarray) -> Any:
        torch = self.xp
        if not a.flags.c_contiguous:  # (np.ascontiguousarray would make 0-d arrays 1-d)
            a = a.copy(order="C")
        if a.dtype.name == "bfloat16":
            tensor = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        else:
            tensor = torch.from_numpy(a)
        return tensor if self.device == "cpu" else tensor.to(self.device)

    def to_numpy(self, x: Any) -> np.ndarray:
        torch = self.xp
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16:
            return np.asarray(x.view(torch.int16).numpy().view(numpy_dtype("bfloat16")))
        if x.dtype in (torch.complex32, getattr(torch, "bcomplex32", None)):
            # NumPy has no complex of two 16-bit floats (torch >= 2.14 promotes to them):
            # widened to complex64, which holds every value exactly
            x = x.to(torch.complex64)
        return np.asarray(x.numpy())

    def sync(self, x: Any) -> Any:
        if self.device == "cuda":
            self.xp.cuda.synchronize()
        return x

    def copy_call(self, nbytes: int) -> Callable[[], object]:
        if self.device == "cpu":
            return super().copy_call(nbytes)
        torch = self.xp
        src = torch.ones(nbytes // 4, dtype=torch.float32, device=self.device)
        dst = torch.empty_like(src)
        return lambda: self.sync(dst.copy_(src))

    def concat(self, parts: Sequence[Any]) -> Any:
        return self.xp.cat(list(parts))

    def transpose(self, x: Any) -> Any:
        return x.mT if x.ndim >= 2 else x


class JaxAdapter(Library):
    """JAX arrays on one platform's first device, or on JAX's default device.

    64-bit dtypes exist in JAX only with ``jax_enable_x64``: :meth:`from_numpy`
    switches it on when it is asked for one (JAX would otherwise make 32-bit
    arrays of 64-bit data), and refuses any array whose dtype JAX changed.

    Parameters
    ----------
    platform : {"cpu", "gpu"} or None
        The platform; ``None`` for JAX's default device (whatever
        ``jnp.asarray`` uses).
    """

    library = "jax"
    module_name = "jax.numpy"
    peer_name = "jnp.where"
    compiler = "jit"

    def __init__(self, platform: Literal["cpu", "gpu"] | None = None) -> None:
        super().__init__()
        self.jax: Any = importlib.import_module("jax")
        self.device: Any = None
        if platform is None:
            self.key = self.label = "jax"
            kind = self.jax.devices()[0].platform
        else:
            try:
                self.device = self.jax.devices(platform)[0]
            except Exception as exc:  # RuntimeError: no such platform
                raise LibraryUnavailableError(f"no JAX {platform} device") from exc
            kind = self.device.platform
            self.key = f"jax-{platform}"
            self.label = f"jax {kind}"
        self.device_kind = "cpu" if kind == "cpu" else "gpu"

    @property
    def device_name(self) -> str:
        if self.device_kind == "cpu":
            return "cpu"
        device = self.device if self.device is not None else self.jax.devices()[0]
        return f"{device.platform}:{device.device_kind}"

    @contextlib.contextmanager
    def x64(self, enabled: bool = True) -> Iterator[None]:
        """A block run with ``jax_enable_x64`` set to ``enabled``, restored afterwards."""
        config = self.jax.config
        previous = config.jax_enable_x64
        config.update("jax_enable_x64", enabled)
        try:
            yield
        finally:
            config.update("jax_enable_x64", previous)

    def _put(self, a: np.ndarray) -> Any:
        wide = a.dtype.kind == "c" and a.dtype.itemsize == 16
        wide |= a.dtype.kind in "iuf" and a.dtype.itemsize == 8
        if wide and not self.jax.config.jax_enable_x64:
            self.jax.config.update("jax_enable_x64", True)
        out = self.jax.device_put(a, self.device)
        if out.dtype != a.dtype:
            raise DtypeUnavailableError(f"jax made {out.dtype} of {a.dtype}")
        return out

    def sync(self, x: Any) -> Any:
        return x.block_until_ready()

    def compile(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        jitted: Callable[..., Any] = self.jax.jit(fn)
        return jitted

    def copy_call(self, nbytes: int) -> Callable[[], object]:
        if self.device_kind == "cpu":
            return super().copy_call(nbytes)
        src = self._put(np.ones(nbytes // 4, dtype=np.float32))
        copy = self.jax.jit(self.xp.copy)
        return lambda: copy(src).block_until_ready()

    def concat(self, parts: Sequence[Any]) -> Any:
        return self.xp.concatenate(list(parts))


class DaskAdapter(Library):
    """Dask arrays of NumPy blocks (every NumPy dtype, bfloat16 included).

    Parameters
    ----------
    chunking : {"halves", "rows"}
        ``"halves"``: two chunks along every dimension of size 2 or more, so
        that Dask really splits every dimension (what the test suite wants).
        ``"rows"``: up to 8 blocks along the first dimension, persisted, so the
        blocks are in memory before anything is timed (what the benchmarks want).
    """

    library = "dask"
    module_name = "dask.array"
    peer_name = "da.where"

    def __init__(self, chunking: DaskChunking = "halves") -> None:
        super().__init__()
        if chunking not in ("halves", "rows"):
            raise ValueError(f"unknown chunking {chunking!r}; expected 'halves' or 'rows'")
        self.chunking = chunking

    def _put(self, a: np.ndarray) -> Any:
        if self.chunking == "halves":
            return self.xp.from_array(a, chunks=tuple(max(1, (d + 1) // 2) for d in a.shape))
        if a.ndim == 0:
            return self.xp.from_array(a).persist()
        pieces = max(1, min(8, a.shape[0]))
        chunks = (-(-a.shape[0] // pieces), *a.shape[1:])
        return self.xp.from_array(a, chunks=chunks).persist()

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x.compute() if isinstance(x, self.xp.Array) else x)

    def sync(self, x: Any) -> Any:
        return x.compute()

    def concat(self, parts: Sequence[Any]) -> Any:
        return self.xp.concatenate(list(parts))


class CupyAdapter(Library):
    """CuPy arrays on the current CUDA device."""

    library = "cupy"
    module_name = "cupy"
    peer_name = "cupy.where"

    def __init__(self) -> None:
        super().__init__()
        self.device_kind = "gpu"

    def _load(self) -> Any:
        try:
            cupy = importlib.import_module("cupy")
        except Exception as exc:  # ImportError, or a broken CUDA install
            raise LibraryUnavailableError(f"no CUDA GPU (cupy not importable: {exc})") from exc
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # CUDARuntimeError without a driver
            raise LibraryUnavailableError(f"no CUDA GPU ({exc})") from exc
        if count < 1:
            raise LibraryUnavailableError("no CUDA GPU (device count is 0)")
        return cupy

    @property
    def device_name(self) -> str:
        name = self.xp.cuda.runtime.getDeviceProperties(0)["name"]
        return "cuda:" + (name.decode() if isinstance(name, bytes) else str(name))

    def _missing_dtype(self, name: str) -> str | None:
        if name == "bfloat16" and getattr(self.xp, name, None) is None:
            return "cupy has no bfloat16 dtype"
        return None

    def _put(self, a: np.ndarray) -> Any:
        try:
            return self.xp.asarray(a)
        except (TypeError, ValueError) as exc:
            raise DtypeUnavailableError(f"cupy has no {a.dtype} arrays ({exc})") from exc

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x.get())

    def sync(self, x: Any) -> Any:
        self.xp.cuda.get_current_stream().synchronize()
        return x

    def copy_call(self, nbytes: int) -> Callable[[], object]:
        cupy = self.xp
        src = cupy.ones(nbytes // 4, dtype=cupy.float32)
        dst = cupy.empty_like(src)
        return lambda: self.sync(cupy.copyto(dst, src))

    def concat(self, parts: Sequence[Any]) -> Any:
        return self.xp.concatenate(list(parts))


_FACTORIES: dict[str, Callable[[], Library]] = {
    "numpy": NumpyAdapter,
    "array_api_strict": ArrayApiStrictAdapter,
    "torch-cpu": lambda: TorchAdapter("cpu"),
    "torch-cuda": lambda: TorchAdapter("cuda"),
    "jax": lambda: JaxAdapter(None),
    "jax-cpu": lambda: JaxAdapter("cpu"),
    "jax-gpu": lambda: JaxAdapter("gpu"),
    "dask": DaskAdapter,
    "cupy": CupyAdapter,
}


@functools.lru_cache(maxsize=64)  # bounded like every cache here: at most 10 entries
def _get(key: str, dask_chunking: DaskChunking) -> Library | LibraryUnavailableError:
    if key not in _FACTORIES:
        raise ValueError(f"unknown adapter {key!r}; expected one of {', '.join(_FACTORIES)}")
    try:
        return DaskAdapter(dask_chunking) if key == "dask" else _FACTORIES[key]()
    except LibraryUnavailableError as exc:
        return exc


def get(key: str, *, dask_chunking: DaskChunking = "halves") -> Library:
    """The adapter called ``key`` (see the table above); made once, then cached.

    Parameters
    ----------
    key : str
        ``"numpy"``, ``"array_api_strict"``, ``"torch-cpu"``, ``"torch-cuda"``,
        ``"jax"``, ``"jax-cpu"``, ``"jax-gpu"``, ``"dask"`` or ``"cupy"``.
    dask_chunking : {"halves", "rows"}
        For ``"dask"``: the :class:`DaskAdapter`'s chunking.

    Returns
    -------
    Library
        The adapter.

    Raises
    ------
    LibraryUnavailableError
        When the library is not installed or the device is absent.
    ValueError
        For an unknown key.
    """
    found = _get(key, dask_chunking if key == "dask" else "halves")
    if isinstance(found, LibraryUnavailableError):
        raise LibraryUnavailableError(*found.args)
    return found


@dataclass(frozen=True)
class Discovery:
    """What :func:`discover` found.

    Attributes
    ----------
    present : list of Library
        The adapters that work here, in the order asked for.
    missing : dict of str to str
        Key of each adapter that does not, and why.
    """

    present: list[Library] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)


def discover(
    keys: Iterable[str] | None = None, *, dask_chunking: DaskChunking = "halves"
) -> Discovery:
    """Which libraries and devices are present here, and why the others are not.

    Parameters
    ----------
    keys : iterable of str, optional
        The adapters to try (keys of :func:`get`); :data:`KEYS` by default.
    dask_chunking : {"halves", "rows"}
        The chunking of the Dask adapter.

    Returns
    -------
    Discovery
        The adapters present and the reasons for the missing ones.
    """
    found = Discovery()
    for key in KEYS if keys is None else keys:
        try:
            found.present.append(get(key, dask_chunking=dask_chunking))
        except LibraryUnavailableError as exc:
            found.missing[key] = str(exc)
    return found


_ARRAY_MODULES: tuple[tuple[str, str], ...] = (
    ("torch", "torch-cpu"),
    ("jax", "jax"),
    ("dask", "dask"),
    ("cupy", "cupy"),
    ("array_api_strict", "array_api_strict"),
)


def for_array(x: Any) -> Library:
    """The adapter of the library of array ``x``, to read it back with :meth:`~Library.to_numpy`.

    Anything that is not a PyTorch, JAX, Dask, CuPy or array-api-strict array
    gets the NumPy adapter (which reads it with :func:`numpy.asarray`).
    """
    module = type(x).__module__
    for prefix, key in _ARRAY_MODULES:
        if module.startswith(prefix):
            return get(key)
    return get("numpy")
