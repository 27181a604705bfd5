"""A CPU stand-in for the slice of CuPy's API that ``cupy_backend`` uses.

It is *not* CuPy: it lets the CPU tests run the backend's Python logic (views,
reshapes, kernel choice, launch arguments, ``out`` aliasing and temporaries,
devices, the fast path) without a GPU. What it emulates, and how strictly:

* ``ndarray``: a NumPy subclass with ``.data.ptr`` and ``.data.device_id``;
  arrays are "on" the device that was current when they were made (views
  inherit it). ``empty`` allocates on the current device.
* ``cuda.runtime.getDevice``/``deviceGetAttribute`` and ``cuda.Device(i)`` as a
  context manager that switches the current device.
* ``ElementwiseKernel``: parses its parameter list and, like CuPy with fixed
  parameter types, refuses arguments whose dtype differs (so the backend must
  pass exact raw views: no casts); array arguments must be on the current
  device; the output shape must be the broadcast shape. ``select``'s body is
  computed with ``numpy.where(c != 0, x, y)`` (its C operation is run separately
  by ``test_cupy_kernels``). Any other operation (the select family's) is *run*:
  compiled with the host C++ compiler inside a loop that binds each parameter
  the way CuPy does (``const T &x`` per element, ``raw`` parameters as
  pointers, the flat index ``i``, ``atomicMin`` done serially) over the operands
  broadcast to the output shape in C order.
* ``RawKernel``: compiles the *real* kernel source with the host C++ compiler
  (see ``_kernel_harness``) and runs every thread of the launch, with CUDA's
  limits on the block size checked.

Every launch is recorded in ``LAUNCHES`` as ``(kind, name, device, z, grid, block)``.
"""

from __future__ import annotations

import ctypes
import re
import types
from pathlib import Path
from typing import Any, ClassVar

import _kernel_harness as kh
import numpy as np

LAUNCHES: list[tuple[str, str, int, Any, Any, Any]] = []
SM_COUNT = 3
THREADS_PER_SM = 512


class _State:
    current = 0
    build_dir: Path | None = None
    elementwise_created = 0


_state = _State()


class _MemoryPointer:
    def __init__(self, ptr: int, device_id: int) -> None:
        self.ptr = ptr
        self.device_id = device_id


class ndarray(np.ndarray):
    """A NumPy array that knows which (fake) GPU it is on."""

    _device: int

    def __array_finalize__(self, obj: Any) -> None:
        self._device = getattr(obj, "_device", _state.current)

    @property  # type: ignore[override]
    def data(self) -> _MemoryPointer:
        return _MemoryPointer(int(self.ctypes.data), self._device)

    @property
    def _c_contiguous(self) -> bool:  # CuPy's flag, read without a flags object
        return bool(self.flags.c_contiguous)


def empty(shape: Any, dtype: Any = float) -> ndarray:
    """Uninitialized array on the current device (16-byte aligned, like a pool block)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    buf = np.empty(n * dtype.itemsize + 256, np.uint8)
    offset = (-buf.ctypes.data) % 256
    out = buf[offset : offset + n * dtype.itemsize].view(dtype).reshape(shape).view(ndarray)
    out._device = _state.current
    return out


def asarray(a: Any, dtype: Any = None) -> ndarray:
    """Copy ``a`` to a new array on the current device."""
    host = np.asarray(a, dtype=dtype)
    out = empty(host.shape, host.dtype)
    np.copyto(out, host)
    return out


class _Runtime:
    cudaDevAttrMultiProcessorCount = 16
    cudaDevAttrMaxThreadsPerMultiProcessor = 39

    @staticmethod
    def getDevice() -> int:
        return _state.current

    @staticmethod
    def deviceGetAttribute(attr: int, device: int) -> int:
        return {16: SM_COUNT, 39: THREADS_PER_SM}[attr]


class Device:
    """``with Device(i):`` makes ``i`` the current device."""

    def __init__(self, device: int | None = None) -> None:
        self.id = _state.current if device is None else device
        self._saved: list[int] = []

    def __enter__(self) -> Device:
        self._saved.append(_state.current)
        _state.current = self.id
        return self

    def __exit__(self, *exc: object) -> None:
        _state.current = self._saved.pop()


def _check_on_current_device(args: tuple[Any, ...]) -> None:
    for a in args:
        if isinstance(a, ndarray) and a._device != _state.current:
            raise ValueError(
                f"array on device {a._device} used by a kernel on device {_state.current}"
            )


_SELECT_OPERATION = "z = (c != 0) ? x : y;"
_C_TYPES = {
    "int8": "signed char",
    "int16": "short",
    "int32": "int",
    "int64": "long long",
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned int",
    "uint64": "unsigned long long",
    "complex128": "thrust::complex<double>",
}


class ElementwiseKernel:
    """Fixed-type element-wise kernel: select's ``z = (c != 0) ? x : y``, or any other
    operation run as C++ on the host (see the module docstring)."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel"):
        self.n_in = len(in_params.split(", "))
        params = [p.split() for p in (in_params + ", " + out_params).split(", ")]
        # (dtype, name, raw)
        self.params = [(p[-2], p[-1], p[0] == "raw") for p in params]
        self.operation = operation
        if operation == _SELECT_OPERATION:
            assert [p[1] for p in self.params] == ["c", "x", "y", "z"], self.params
        self.name = name
        _state.elementwise_created += 1

    def __call__(self, *args: Any) -> Any:
        if self.operation != _SELECT_OPERATION:
            return self._run(args)
        if len(args) != 4:
            raise TypeError(f"{self.name} takes 4 arguments, got {len(args)}")
        for (dtype, pname, _), a in zip(self.params, args, strict=True):
            if type(a) in (bool, int, float, complex):
                raise TypeError(f"{pname}: Python scalar {a!r} would be converted")
            if a.dtype != np.dtype(dtype):
                raise TypeError(f"Type is mismatched. {pname} {a.dtype} {dtype}")
        _check_on_current_device(args)
        c, x, y, z = args
        if not isinstance(z, ndarray):
            raise TypeError("output must be an array")
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        if shape != z.shape:
            raise ValueError(f"Out shape is mismatched: {shape} vs {z.shape}")
        np.asarray(z)[...] = np.where(np.asarray(c) != 0, np.asarray(x), np.asarray(y))
        LAUNCHES.append(("elementwise", self.name, _state.current, z, None, None))
        return z

    _libs: ClassVar[dict[str, Any]] = {}

    def _source(self) -> str:
        lines = []
        for k, (dtype, pname, raw) in enumerate(self.params):
            ctype = _C_TYPES[dtype]
            if raw:
                lines.append(f"{ctype}* {pname} = ({ctype}*)p[{k}];")
            else:
                const = "const " if k < self.n_in else ""
                lines.append(f"{const}{ctype} &{pname} = (({const}{ctype}*)p[{k}])[i];")
        body = "\n        ".join(lines)
        return f"""
inline unsigned long long atomicMin(unsigned long long* a, unsigned long long v) {{
    const unsigned long long old = *a;  /* one thread at a time here */
    if (v < old) *a = v;
    return old;
}}
extern "C" void run(void** p, long long size) {{
    for (long long i = 0; i < size; ++i) {{
        {body}
        {self.operation}
    }}
}}
"""

    def _run(self, args: tuple[Any, ...]) -> Any:
        if len(args) != len(self.params):
            raise TypeError(f"{self.name} takes {len(self.params)} arguments, got {len(args)}")
        for (dtype, pname, _), a in zip(self.params, args, strict=True):
            if not isinstance(a, ndarray):
                raise TypeError(f"{pname}: {type(a).__name__} is not a (fake) cupy array")
            if a.dtype != np.dtype(dtype):
                raise TypeError(f"Type is mismatched. {pname} {a.dtype} {dtype}")
        _check_on_current_device(args)
        loop = [(p, a) for p, a in zip(self.params, args, strict=True) if not p[2]]
        shape = np.broadcast_shapes(*(a.shape for _, a in loop))
        outs = [
            a
            for k, (p, a) in enumerate(zip(self.params, args, strict=True))
            if k >= self.n_in and not p[2]
        ]
        for z in outs:
            if z.shape != shape:
                raise ValueError(f"Out shape is mismatched: {shape} vs {z.shape}")
        buffers = []
        for (_, _, raw), a in zip(self.params, args, strict=True):
            if raw:
                assert a.flags.c_contiguous
                buffers.append(np.asarray(a))
            else:  # outputs start from their current contents: unwritten elements stay
                buffers.append(np.ascontiguousarray(np.broadcast_to(np.asarray(a), shape)).copy())
        source = kh.PRELUDE + self._source()
        lib = self._libs.get(source)
        if lib is None:
            assert _state.build_dir is not None
            directory = _state.build_dir / f"e{len(self._libs)}"
            directory.mkdir()
            lib = self._libs[source] = kh.build(directory, source)
        pointers = (ctypes.c_void_p * len(buffers))(*(b.ctypes.data for b in buffers))
        lib.run(pointers, ctypes.c_longlong(int(np.prod(shape, dtype=np.int64))))
        for k, ((_, _, raw), a) in enumerate(zip(self.params, args, strict=True)):
            if k >= self.n_in and not raw:
                np.asarray(a)[...] = buffers[k]
        LAUNCHES.append(
            ("elementwise", self.name, _state.current, outs[0] if outs else None, None, None)
        )
        return outs[0] if outs else None


#: C parameter types of the kernels' by-value scalars: (ctypes type, NumPy type the
#: backend must pass, as CuPy packs a NumPy scalar by its own type).
_SCALAR_PARAMS: dict[str, tuple[Any, Any]] = {
    "long long": (ctypes.c_longlong, np.int64),
    "unsigned char": (ctypes.c_ubyte, np.uint8),
    "unsigned short": (ctypes.c_ushort, np.uint16),
    "unsigned int": (ctypes.c_uint, np.uint32),
    "unsigned long long": (ctypes.c_ulonglong, np.uint64),
}


class RawKernel:
    """Compiles the real source with the host compiler; runs every thread of a launch.

    Any ``extern "C"`` kernel whose parameters are pointers (passed as arrays) or
    the scalars of ``_SCALAR_PARAMS`` (passed as NumPy scalars of exactly that type).
    """

    _libs: ClassVar[dict[str, Any]] = {}

    def __init__(self, code: str, name: str) -> None:
        self.code = code
        self.name = name
        match = re.search(rf"void {name}\(([^)]*)\)", code)
        assert match, "unexpected kernel signature"
        self.params: list[tuple[str, str]] = []  # (C type, name)
        for param in match.group(1).split(","):
            ctype, _, pname = " ".join(param.split()).rpartition(" ")
            self.params.append((ctype.removeprefix("const "), pname))

    def _lib(self) -> Any:
        lib = self._libs.get(self.code)
        if lib is None:
            decls = ", ".join(f"{t} {n}" for t, n in self.params)
            names = ", ".join(n for _, n in self.params)
            driver = f"""
extern "C" void run({decls}, unsigned grid, unsigned block) {{
    gridDim.x = grid; blockDim.x = block;
    for (unsigned b = 0; b < grid; ++b)
        for (unsigned t = 0; t < block; ++t) {{
            blockIdx.x = b; threadIdx.x = t;
            {self.name}({names});
        }}
}}
"""
            assert _state.build_dir is not None
            directory = _state.build_dir / f"k{len(self._libs)}"
            directory.mkdir()
            lib = kh.build(directory, kh.PRELUDE + self.code + driver)
            self._libs[self.code] = lib
        return lib

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...]):
        (g,) = grid
        (b,) = block
        if not (1 <= b <= 1024 and 1 <= g < 2**31):
            raise ValueError(f"invalid launch: grid {grid}, block {block}")
        if len(args) != len(self.params):
            raise TypeError(f"{self.name} takes {len(self.params)} arguments, got {len(args)}")
        c_args: list[Any] = []
        arrays = []
        for (ctype, pname), arg in zip(self.params, args, strict=True):
            if ctype.endswith("*"):
                if not isinstance(arg, ndarray):
                    raise TypeError(f"{pname}: an array expected, got {type(arg)}")
                arrays.append(arg)
                c_args.append(kh.ptr(arg))
            else:
                c_type, np_type = _SCALAR_PARAMS[ctype]
                if type(arg) is not np_type:
                    raise TypeError(f"{pname}: {np_type.__name__} expected, got {type(arg)}")
                c_args.append(c_type(arg.item()))
        _check_on_current_device(tuple(arrays))
        self._lib().run(*c_args, g, b)
        z = args[[pname for _, pname in self.params].index("z")]
        LAUNCHES.append(("raw", self.name, _state.current, z, g, b))


def make(build_dir: Path) -> types.ModuleType:
    """A fresh module object named ``cupy`` exposing the fakes."""
    _state.build_dir = build_dir
    _state.current = 0
    module = types.ModuleType("cupy")
    module.ndarray = ndarray  # type: ignore[attr-defined]
    module.empty = empty  # type: ignore[attr-defined]
    module.asarray = asarray  # type: ignore[attr-defined]
    module.ElementwiseKernel = ElementwiseKernel  # type: ignore[attr-defined]
    module.RawKernel = RawKernel  # type: ignore[attr-defined]
    module.cuda = types.SimpleNamespace(runtime=_Runtime, Device=Device)  # type: ignore[attr-defined]
    module.LAUNCHES = LAUNCHES  # type: ignore[attr-defined]
    module.state = _state  # type: ignore[attr-defined]
    return module
