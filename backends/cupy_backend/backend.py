"""The CuPy backend: queries, launches and the fast path (see the package docstring)."""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

import cupy
import numpy as np

from arrayselect.plugin import (
    Backend,
    Decision,
    FastPath,
    NumpyDtypes,
    OutLayout,
    SelectPlan,
    Shape,
    SignatureCache,
    register_cache,
)

from . import kernels as ck

__all__ = ["CupyBackend", "create"]

_VALUE_RAW: dict[int, np.dtype[Any]] = {k: np.dtype(v) for k, v in ck.VALUE_RAW_DTYPES.items()}
_COND_RAW: dict[int, np.dtype[Any]] = {k: np.dtype(v) for k, v in ck.COND_RAW_DTYPES.items()}

_lock = threading.Lock()
_elementwise_kernels: dict[tuple[int, int], Any] = {}
_vector_kernels: dict[int, Any] = {}
_device_limits: dict[int, tuple[int, int]] = {}


def elementwise_kernel(cond_itemsize: int, value_itemsize: int) -> Any:
    """The ``cupy.ElementwiseKernel`` for these item sizes (created once, then cached)."""
    key = (cond_itemsize, value_itemsize)
    kernel = _elementwise_kernels.get(key)
    if kernel is None:
        with _lock:
            kernel = _elementwise_kernels.get(key)
            if kernel is None:
                spec = ck.elementwise_spec(
                    np.dtype(ck.COND_RAW_DTYPES[cond_itemsize]),
                    np.dtype(ck.VALUE_RAW_DTYPES[value_itemsize]),
                )
                kernel = cupy.ElementwiseKernel(
                    spec.in_params, spec.out_params, spec.operation, name=spec.name
                )
                _elementwise_kernels[key] = kernel
    return kernel


def vector_kernel(spec: ck.VectorSpec) -> Any:
    """The ``cupy.RawKernel`` of a vectorized kernel's spec (created once, then cached).

    ``spec`` is a :class:`~arrayselect.backends.cupy_backend.kernels.VectorSpec`.
    """
    kernel = _vector_kernels.get(spec.value_itemsize)
    if kernel is None:
        with _lock:
            kernel = _vector_kernels.get(spec.value_itemsize)
            if kernel is None:
                kernel = cupy.RawKernel(spec.source, spec.name)
                _vector_kernels[spec.value_itemsize] = kernel
    return kernel


def _limits(device: int) -> tuple[int, int]:
    """``(SM count, max resident threads per SM)`` of a device (queried once)."""
    limits = _device_limits.get(device)
    if limits is None:
        rt = cupy.cuda.runtime
        limits = (
            int(rt.deviceGetAttribute(rt.cudaDevAttrMultiProcessorCount, device)),
            int(rt.deviceGetAttribute(rt.cudaDevAttrMaxThreadsPerMultiProcessor, device)),
        )
        _device_limits[device] = limits
    return limits


def _layout(x: Any) -> ck.ArrayLayout:
    return ck.ArrayLayout(int(x.data.ptr), tuple(x.shape), tuple(x.strides), int(x.itemsize))


class CupyBackend(NumpyDtypes, Backend):
    """Select for CuPy arrays on NVIDIA GPUs.

    Attributes
    ----------
    vector_min_size
        Smallest output size for the 16-byte-word kernel; set it above any size
        to always use the element-wise kernel (the GPU benchmark compares both).
    """

    name = "cupy"
    supports_out = True
    device_hint = "move them explicitly with cupy.asarray under cupy.cuda.Device(n)"

    def __init__(self) -> None:
        self.vector_min_size: int = ck.VECTOR_MIN_SIZE
        self._fast = SignatureCache(self, (cupy.ndarray,), self._run)
        register_cache("cupy_backend.fast_path", lambda: (len(self._fast), self._fast.maxsize))

    # ------------------------------------------------------------- queries
    def shape(self, x: Any) -> Shape:
        return x.shape  # type: ignore[no-any-return]

    def device_of(self, x: Any) -> int:
        """Id of the GPU holding ``x``."""
        return int(x.data.device_id)

    def device_text(self, device: Any) -> str:
        return f"GPU {device}"

    def out_layout(self, out: Any) -> OutLayout:
        return OutLayout(True, "", tuple(out.strides), int(out.itemsize))

    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        dtype = np.dtype(dtype)
        raw = _VALUE_RAW[dtype.itemsize]
        bits = np.asarray(value, dtype=dtype).view(raw)[()]
        with cupy.cuda.Device(self.device_of(like)):
            array = cupy.empty((), dtype=dtype)
            # A fill kernel on the current stream: no host-to-device copy, no sync.
            array.view(raw).fill(bits)
        return array

    def fast_path(self) -> FastPath:
        return self._fast.fast_path()

    def _run(self, cond: Any, then: Any, else_: Any, decision: Decision, out: Any) -> Any:
        return self.execute(cond, then, else_, decision.plan, decision.dtype, out)

    # ------------------------------------------------------------- running
    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        return self.execute(cond, then, else_, plan, then.dtype, out)

    def execute(
        self, cond: Any, then: Any, else_: Any, plan: SelectPlan, dtype: Any, out: Any
    ) -> Any:
        """Run a validated Select on ``cond``'s device and that device's current stream.

        ``then``/``else_`` are CuPy arrays of ``dtype`` or Python scalars that fit it.
        """
        device = int(cond.data.device_id)
        if cupy.cuda.runtime.getDevice() != device:
            with cupy.cuda.Device(device):
                return self._execute(device, cond, then, else_, plan, dtype, out)
        return self._execute(device, cond, then, else_, plan, dtype, out)

    def _execute(
        self,
        device: int,
        cond: Any,
        then: Any,
        else_: Any,
        plan: SelectPlan,
        dtype: Any,
        out: Any,
    ) -> Any:
        raw = _VALUE_RAW[dtype.itemsize]
        cond_shape, then_shape, else_shape = plan.aligned
        if cond_shape is not None:
            cond = cond.reshape(cond_shape)
        cond_raw = _COND_RAW[cond.dtype.itemsize]
        c = cond if cond.dtype == cond_raw else cond.view(cond_raw)
        t = _raw_operand(then, then_shape, dtype, raw)
        e = _raw_operand(else_, else_shape, dtype, raw)
        result = cupy.empty(plan.out_shape, dtype=dtype) if out is None else out
        if result.size == 0:
            return result
        z = result if result.dtype == raw else result.view(raw)
        if out is not None:
            z_layout = _layout(z)
            if any(
                type(x) is cupy.ndarray and ck.overlap(_layout(x), z_layout) == "partial"
                for x in (c, t, e)
            ):
                # An input overlaps out other than element for element: a kernel
                # writing out in place could read already-written elements.
                tmp = cupy.empty(plan.out_shape, dtype=raw)
                self._launch(device, c, t, e, tmp)
                z[...] = tmp
                return result
        self._launch(device, c, t, e, z)
        return result

    def _launch(self, device: int, c: Any, t: Any, e: Any, z: Any) -> None:
        """Launch the select kernel on raw views; ``z`` has the output shape."""
        if z.size >= self.vector_min_size and type(t) is cupy.ndarray and type(e) is cupy.ndarray:
            spec = ck.vector_eligible(
                _layout(c), _layout(t), _layout(e), _layout(z), self.vector_min_size
            )
            if spec is not None:
                sm_count, threads_per_sm = _limits(device)
                grid, block = ck.vector_launch(z.size, spec.lanes, sm_count, threads_per_sm)
                vector_kernel(spec)((grid,), (block,), (c, t, e, z, np.int64(z.size)))
                return
        elementwise_kernel(c.dtype.itemsize, z.dtype.itemsize)(c, t, e, z)


def _raw_operand(x: Any, aligned: Shape | None, dtype: Any, raw: np.dtype[Any]) -> Any:
    """``x`` as its raw view (CuPy array) or raw NumPy scalar (Python scalar)."""
    if type(x) in (bool, int, float, complex):
        return np.asarray(x, dtype=dtype).view(raw)[()]
    if aligned is not None:
        x = x.reshape(aligned)
    return x if x.dtype == raw else x.view(raw)


def create(xp: ModuleType) -> CupyBackend:
    """Entry-point factory: the CuPy backend (``xp``, CuPy's namespace, is not needed)."""
    return CupyBackend()
