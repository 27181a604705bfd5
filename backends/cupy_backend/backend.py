"""The CuPy backend: queries, launches and the fast path (see the package docstring)."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Hashable
from types import ModuleType
from typing import Any

import cupy
import numpy as np

from arrayselect.plugin import (
    Backend,
    BoundedCache,
    Decision,
    FastPath,
    NumpyDtypes,
    OutLayout,
    SelectPlan,
    Shape,
    SignatureCache,
    errors,
    generic,
)

from . import kernels as ck

#: Python scalar operands (exact types), as the core defines them.
PYTHON_SCALARS = Backend.PYTHON_SCALARS

__all__ = ["CupyBackend", "create"]

_VALUE_RAW: dict[int, np.dtype[Any]] = {k: np.dtype(v) for k, v in ck.VALUE_RAW_DTYPES.items()}
_COND_RAW: dict[int, np.dtype[Any]] = {k: np.dtype(v) for k, v in ck.COND_RAW_DTYPES.items()}

_lock = threading.Lock()
_elementwise_kernels = BoundedCache[tuple[int, int], Any]("cupy_backend.elementwise_kernels", 256)
_vector_kernels = BoundedCache[int, Any]("cupy_backend.vector_kernels", 256)
_family_kernels = BoundedCache[ck.FamilySpec, Any]("cupy_backend.family_kernels", 256)
_cases_kernels = BoundedCache[tuple[tuple[int, ...], int], Any]("cupy_backend.cases_kernels", 256)
_strided_kernels = BoundedCache[ck.StridedSpec, Any]("cupy_backend.strided_kernels", 256)
_cases_vector_kernels = BoundedCache[ck.CasesVectorSpec, Any](
    "cupy_backend.cases_vector_kernels", 256
)


def elementwise_kernel(cond_itemsize: int, value_itemsize: int) -> Any:
    """The ``cupy.ElementwiseKernel`` for these item sizes (created once, then cached)."""
    key = (cond_itemsize, value_itemsize)
    kernel = _elementwise_kernels.data.get(key)
    if kernel is None:
        with _lock:
            kernel = _elementwise_kernels.data.get(key)
            if kernel is None:
                spec = ck.elementwise_spec(
                    np.dtype(ck.COND_RAW_DTYPES[cond_itemsize]),
                    np.dtype(ck.VALUE_RAW_DTYPES[value_itemsize]),
                )
                kernel = cupy.ElementwiseKernel(
                    spec.in_params, spec.out_params, spec.operation, name=spec.name
                )
                _elementwise_kernels.put(key, kernel)
    return kernel


def vector_kernel(spec: ck.VectorSpec) -> Any:
    """The ``cupy.RawKernel`` of a vectorized kernel's spec (created once, then cached).

    ``spec`` is a :class:`~arrayselect.backends.cupy_backend.kernels.VectorSpec`.
    """
    kernel = _vector_kernels.data.get(spec.value_itemsize)
    if kernel is None:
        with _lock:
            kernel = _vector_kernels.data.get(spec.value_itemsize)
            if kernel is None:
                kernel = cupy.RawKernel(spec.source, spec.name)
                _vector_kernels.put(spec.value_itemsize, kernel)
    return kernel


def family_kernel(spec: ck.FamilySpec) -> Any:
    """The ``cupy.ElementwiseKernel`` of a select-family spec (created once, then cached).

    ``spec`` is a :class:`~arrayselect.backends.cupy_backend.kernels.FamilySpec`.
    """
    kernel = _family_kernels.data.get(spec)
    if kernel is None:
        with _lock:
            kernel = _family_kernels.data.get(spec)
            if kernel is None:
                kernel = cupy.ElementwiseKernel(
                    spec.in_params, spec.out_params, spec.operation, name=spec.name
                )
                _family_kernels.put(spec, kernel)
    return kernel


def _layout(x: Any) -> ck.ArrayLayout:
    return ck.ArrayLayout(int(x.data.ptr), tuple(x.shape), tuple(x.strides), int(x.itemsize))


class CupyBackend(NumpyDtypes, Backend):
    """Select for CuPy arrays on NVIDIA GPUs.

    Attributes
    ----------
    vector_min_size
        Smallest output size for the 16-byte-word kernel; set it above any size
        to always use the element-wise kernel (the GPU benchmark compares both).
    cases_vector_min_size
        Smallest output size for ``select_cases``'s word kernel.
    """

    name = "cupy"
    supports_out = True
    device_hint = "move them explicitly with cupy.asarray under cupy.cuda.Device(n)"

    def __init__(self) -> None:
        self.vector_min_size: int = ck.VECTOR_MIN_SIZE
        self.cases_vector_min_size: int = ck.CASES_VECTOR_MIN_SIZE
        # The device is part of the signature, so a cached call needs no device check.
        self._fast = SignatureCache(self, (cupy.ndarray,), None, prepare=self._prepare)

    # ------------------------------------------------------------- queries
    signature_holds_device = True

    def signature(self, x: Any) -> Hashable:
        """Shape, dtype and device id: what a decision depends on, and where it runs."""
        return (x.shape, x.dtype, x.data.device_id)

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
        with cupy.cuda.Device(self.device_of(like)):
            if dtype.itemsize == 16:
                return _device_scalar(value, dtype)
            array = cupy.empty((), dtype=dtype)
            # A fill kernel on the current stream: no host-to-device copy, no sync.
            array.view(raw).fill(np.asarray(value, dtype=dtype).view(raw)[()])
        return array

    def fast_path(self) -> FastPath:
        return self._fast.fast_path()

    def _prepare(self, decision: Decision) -> Callable[..., Any]:
        """The function a cached signature runs: ``call(cond, then, else_[, out])``.

        What a small call costs is this function's host time, so a call without
        ``out`` on the current device launches a ``RawKernel`` on the operands as
        they are (it reads only their pointers: no raw views, no layout objects),
        with launch shapes made once:

        * the 16-byte-word kernel when all three are C-contiguous arrays of the
          output's shape, ``cond`` of 1 byte, values 16-byte aligned;
        * else the strided kernel (:class:`~.kernels.StridedSpec`) when the
          operands broadcast to at most two merged dimensions
          (:func:`~.kernels.strided_params`, cached per combination of strides).

        Everything else, and a call failing one of those checks, runs
        :meth:`execute` (``ElementwiseKernel``).
        """
        plan, dtype = decision.plan, decision.dtype
        assert plan is not None  # select's decisions hold their plan
        execute = self.execute

        def general(cond: Any, then: Any, else_: Any, out: Any = None) -> Any:
            return execute(cond, then, else_, plan, dtype, out)

        itemsize = int(dtype.itemsize)
        if (
            decision.with_out
            or itemsize not in (1, 2, 4, 8)
            or any(aligned is not None for aligned in plan.aligned)
        ):
            return general
        shape: tuple[int, ...] = plan.out_shape  # type: ignore[assignment]  # CuPy: sizes known
        n = math.prod(shape)
        if n == 0:
            return general
        then_array = decision.then_range is None
        else_array = decision.else_range is None
        vspec = ck.vector_spec(1, itemsize) if then_array and else_array else None
        vkernel: Any = None if vspec is None else vector_kernel(vspec)
        vlaunch: Any = None if vspec is None else _launch_shape(ck.vector_launch(n, vspec.lanes))
        vmask = 0 if vspec is None else vspec.lanes - 1
        # one thread per element: the word kernel's launch with one lane per word
        slaunch = _launch_shape(ck.vector_launch(n, 1))
        size = np.int64(n)
        to_raw = _raw_scalar_converter(dtype)
        get_device = cupy.cuda.runtime.getDevice
        # the constructor itself: cupy.empty is a Python function around it
        empty = cupy.ndarray
        backend = self
        # What the signature (shapes, dtypes, devices: fixed here) allows, decided at
        # the first call, which has the arrays: (word kernel?, strided kernel or None).
        state: list[tuple[bool, Any]] = []
        plans: dict[tuple[Any, ...], tuple[np.int64, ...] | None] = {}

        def first(cond: Any, then: Any, else_: Any) -> tuple[bool, Any]:
            words = vkernel is not None and cond.itemsize == 1
            words = words and cond.shape == then.shape == else_.shape == shape
            sspec = ck.strided_spec(
                cond.itemsize,
                itemsize,
                "array" if then_array else "scalar",
                "array" if else_array else "scalar",
            )
            if sspec is None or n > ck.STRIDED_MAX_SIZE:
                return words, None
            return words, strided_kernel(sspec)

        def call(cond: Any, then: Any, else_: Any, out: Any = None) -> Any:
            if (
                out is not None
                or n < backend.vector_min_size
                or cond.data.device_id != get_device()
            ):
                return general(cond, then, else_, out)
            if not state:
                state.append(first(cond, then, else_))
            words, skernel = state[0]
            if (
                words
                and cond._c_contiguous
                and then._c_contiguous
                and else_._c_contiguous
                and not (then.data.ptr | else_.data.ptr) & 15
                and not cond.data.ptr & vmask
            ):
                z = empty(shape, dtype)
                vkernel(*vlaunch, (cond, then, else_, z, size))
                return z
            if skernel is None:
                return general(cond, then, else_, out)
            key = (
                cond.strides,
                then.strides if then_array else None,
                else_.strides if else_array else None,
            )
            try:
                params = plans[key]
            except KeyError:
                params = _strided_params(
                    shape, cond, then if then_array else None, else_ if else_array else None
                )
                if len(plans) < 64:
                    plans[key] = params
            if params is None or (
                cond.data.ptr % cond.itemsize
                or (then_array and then.data.ptr % itemsize)
                or (else_array and else_.data.ptr % itemsize)
            ):
                return general(cond, then, else_, out)
            x = then if then_array else to_raw(then)
            y = else_ if else_array else to_raw(else_)
            z = empty(shape, dtype)
            skernel(*slaunch, (cond, x, y, z, size, *params))
            return z

        return call

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
        return _on_device(device, self._execute, cond, then, else_, plan, dtype, out)

    def _execute(
        self,
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
        c = _raw_view(cond, _COND_RAW[cond.dtype.itemsize])
        t = _raw_operand(then, then_shape, dtype, raw)
        e = _raw_operand(else_, else_shape, dtype, raw)
        return _into(plan.out_shape, dtype, out, (c, t, e), lambda z: self._launch(c, t, e, z))

    def _launch(self, c: Any, t: Any, e: Any, z: Any) -> None:
        """Launch the select kernel on raw views; ``z`` has the output shape."""
        if z.size >= self.vector_min_size and type(t) is cupy.ndarray and type(e) is cupy.ndarray:
            spec = ck.vector_eligible(
                _layout(c), _layout(t), _layout(e), _layout(z), self.vector_min_size
            )
            if spec is not None:
                grid, block = ck.vector_launch(z.size, spec.lanes)
                vector_kernel(spec)((grid,), (block,), (c, t, e, z, np.int64(z.size)))
                return
        elementwise_kernel(c.dtype.itemsize, z.dtype.itemsize)(c, t, e, z)

    # ------------------------------------------------------------- the select family
    def select_n(self, which: Any, cases: tuple[Any, ...], shape: Shape, out: Any) -> Any:
        """``cases[which]`` in one kernel for this case count (see :mod:`.kernels`).

        An index out of range lowers a 1-element device flag in the same pass; the
        host reads it after the pass (one 8-byte copy, which waits for the kernel)
        and raises :func:`~arrayselect.plugin.errors.index_error` naming the first bad
        index in C order. The new result is then dropped; with ``out`` the indices
        are checked by a kernel that reads ``which`` alone before anything is
        written, so ``out`` is left untouched.
        """
        if len(cases) > ck.SELECT_N_MAX_CASES:
            return generic.select_n(self, which, cases, shape, out)
        return _on_device(int(which.data.device_id), self._select_n, which, cases, shape, out)

    def _select_n(self, which: Any, cases: tuple[Any, ...], shape: Shape, out: Any) -> Any:
        n = len(cases)
        dtype = cases[0].dtype
        raw = _VALUE_RAW[dtype.itemsize]
        xs = tuple(_raw_view(c, raw) for c in cases)
        w = which.view(_COND_RAW[1]) if which.dtype == np.bool_ else which
        spec = ck.select_n_spec(which.dtype, n, dtype.itemsize)
        kernel = family_kernel(spec)
        if not spec.checked:
            return _into(shape, dtype, out, (w, *xs), lambda z: kernel(w, *xs, z))
        first = cupy.empty((1,), dtype=np.uint64)
        first.fill(np.uint64(ck.NO_BAD_INDEX))
        if out is not None and which.size:
            family_kernel(ck.index_check_spec(which.dtype, n))(w, first)
            _raise_bad_index(which, which.shape, first, n)  # positions in which itself
        result = _into(shape, dtype, out, (w, *xs), lambda z: kernel(w, *xs, z, first))
        if out is None:
            _raise_bad_index(which, shape, first, n)
        return result

    def select_cases(
        self, conds: tuple[Any, ...], choices: tuple[Any, ...], default: Any, shape: Shape
    ) -> Any:
        """The first true condition's choice, ``default`` where none is, in one kernel
        for this condition count and these condition item sizes (see :mod:`.kernels`).
        """
        if len(conds) > ck.SELECT_CASES_MAX_CONDS:
            return generic.select_cases(self, conds, choices, default, shape)
        device = int(default.data.device_id)
        return _on_device(device, self._select_cases, conds, choices, default, shape)

    def _select_cases(
        self, conds: tuple[Any, ...], choices: tuple[Any, ...], default: Any, shape: Shape
    ) -> Any:
        dtype = default.dtype
        raw = _VALUE_RAW[dtype.itemsize]
        cs = tuple(_raw_view(c, _COND_RAW[c.itemsize]) for c in conds)
        xs = tuple(_raw_view(x, raw) for x in (*choices, default))
        result = cupy.ndarray(shape, dtype=dtype)
        if result.size == 0:
            return result
        z = _raw_view(result, raw)
        if self.cases_vector_min_size <= result.size:
            spec = ck.cases_vector_eligible(
                [_layout(c) for c in cs], [_layout(x) for x in xs[:-1]], _layout(xs[-1]), _layout(z)
            )
            if spec is not None:
                # the word kernel reads pointers only: the operands go as they are
                grid, block = ck.vector_launch(result.size, spec.lanes)
                cases_vector_kernel(spec)(
                    (grid,), (block,), (*conds, *choices, default, result, np.int64(result.size))
                )
                return result
        _cases_kernel(tuple(c.itemsize for c in cs), dtype.itemsize)(*cs, *xs, z)
        return result


def _raw_kernel(cache: BoundedCache[Any, Any], spec: ck.CasesVectorSpec | ck.StridedSpec) -> Any:
    """The ``cupy.RawKernel`` of ``spec`` (``source`` and ``name``), created once into
    ``cache``."""
    kernel = cache.data.get(spec)
    if kernel is None:
        with _lock:
            kernel = cache.data.get(spec)
            if kernel is None:
                kernel = cache.put(spec, cupy.RawKernel(spec.source, spec.name))
    return kernel


def cases_vector_kernel(spec: ck.CasesVectorSpec) -> Any:
    """The ``cupy.RawKernel`` of a ``select_cases`` word-kernel spec (created once)."""
    return _raw_kernel(_cases_vector_kernels, spec)


def strided_kernel(spec: ck.StridedSpec) -> Any:
    """The ``cupy.RawKernel`` of a strided kernel's spec (created once, then cached)."""
    return _raw_kernel(_strided_kernels, spec)


def _launch_shape(grid_block: tuple[int, int]) -> tuple[tuple[int], tuple[int]]:
    grid, block = grid_block
    return (grid,), (block,)


def _strided_params(
    shape: tuple[int, ...], cond: Any, then: Any, else_: Any
) -> tuple[np.int64, ...] | None:
    """:func:`~.kernels.strided_params` for these arrays (``None``: a scalar), as the
    ``long long`` kernel arguments."""
    layouts = [
        None if x is None else (tuple(x.shape), tuple(x.strides), int(x.itemsize))
        for x in (cond, then, else_)
    ]
    params = ck.strided_params(shape, layouts)
    return None if params is None else tuple(np.int64(p) for p in params)


def _raw_scalar_converter(dtype: np.dtype[Any]) -> Callable[[Any], Any]:
    """``value -> its bits`` as the NumPy scalar of the raw unsigned type of ``dtype``'s
    size (how a kernel takes a scalar by value). NumPy's own scalar types convert
    directly (the quick way); others (``ml_dtypes``) through a 0-d array."""
    raw = _VALUE_RAW[dtype.itemsize]
    scalar_type = dtype.type
    if scalar_type.__module__ == "numpy":
        return lambda value: scalar_type(value).view(raw)
    return lambda value: np.asarray(value, dtype=dtype).view(raw)[()]


def _cases_kernel(cond_itemsizes: tuple[int, ...], value_itemsize: int) -> Any:
    """The ``select_cases`` kernel for these item sizes, its spec made once (its source
    strings cost a small call more than the launch)."""
    key = (cond_itemsizes, value_itemsize)
    kernel = _cases_kernels.data.get(key)
    if kernel is None:
        kernel = family_kernel(ck.select_cases_spec(cond_itemsizes, value_itemsize))
        with _lock:
            _cases_kernels.put(key, kernel)
    return kernel


def _on_device(device: int, run: Callable[..., Any], *args: Any) -> Any:
    """``run(*args)`` with ``device`` current (kernels launch on the current device)."""
    if cupy.cuda.runtime.getDevice() != device:
        with cupy.cuda.Device(device):
            return run(*args)
    return run(*args)


def _raw_view(x: Any, raw: np.dtype[Any]) -> Any:
    """``x`` viewed as ``raw`` (same item size): any strides, no copy."""
    return x if x.dtype == raw else x.view(raw)


def _raise_bad_index(which: Any, shape: Shape, first: Any, n: int) -> None:
    """Raise :func:`~arrayselect.plugin.errors.index_error` if a kernel flagged a bad index.

    ``first`` holds the flat C-order position (in ``shape``, the kernel's loop
    shape: the broadcast shape, or ``which``'s own for the check kernel) of the
    first bad index; reading it waits for the kernel. The value is read
    from ``which`` at that position (broadcast dimensions at 0).
    """
    position = int(first[0])
    if position == ck.NO_BAD_INDEX:
        return
    dims: tuple[int, ...] = shape  # type: ignore[assignment]  # CuPy: no unknown sizes
    index = np.unravel_index(position, dims)
    pad = len(index) - which.ndim
    at = tuple(0 if d == 1 else int(index[pad + k]) for k, d in enumerate(which.shape))
    raise errors.index_error(int(which[at]), n)


def _into(
    shape: Shape, dtype: Any, out: Any, inputs: tuple[Any, ...], launch: Callable[[Any], None]
) -> Any:
    """The result of ``launch(z)``, a kernel writing the raw view ``z`` of ``shape``:
    into ``out`` (returned) when given, else into a new array of ``dtype``.

    An input that overlaps ``out`` other than element for element sends the result
    through a temporary: a kernel writing ``out`` in place could read elements it
    has already written.
    """
    raw = _VALUE_RAW[np.dtype(dtype).itemsize]
    result = cupy.empty(shape, dtype=dtype) if out is None else out
    if result.size == 0:
        return result
    z = result if result.dtype == raw else result.view(raw)
    if out is not None:
        z_layout = _layout(z)
        if any(
            type(x) is cupy.ndarray and ck.overlap(_layout(x), z_layout) == "partial"
            for x in inputs
        ):
            tmp = cupy.empty(shape, dtype=raw)
            launch(tmp)
            z[...] = tmp
            return result
    launch(z)
    return result


def _raw_operand(x: Any, aligned: Shape | None, dtype: Any, raw: np.dtype[Any]) -> Any:
    """``x`` as its raw view (CuPy array) or raw NumPy scalar (Python scalar)."""
    if type(x) in PYTHON_SCALARS:
        if raw.itemsize == 16:
            return _device_scalar(x, dtype)
        return np.asarray(x, dtype=dtype).view(raw)[()]
    if aligned is not None:
        x = x.reshape(aligned)
    return _raw_view(x, raw)


def _device_scalar(value: Any, dtype: np.dtype[Any]) -> Any:
    """A 0-d array of the 16-byte ``dtype`` holding ``value``, on the current device.

    Its two 8-byte halves are filled as ``uint64`` (fill kernels on the current
    stream: no host-to-device copy, no sync). CuPy passes a ``complex128``
    scalar to a kernel as a number, and on an H200 (CuPy 14.2) that lost the
    sign of a zero (``-0.0`` arrived as ``0.0``); integers keep every bit.
    """
    halves = np.asarray(value, dtype=dtype).reshape(1).view(np.uint64)
    words = cupy.empty((len(halves),), dtype=np.uint64)
    for k, half in enumerate(halves):
        words[k : k + 1].fill(half)
    return words.view(dtype).reshape(())


def create(xp: ModuleType) -> CupyBackend:
    """Entry-point factory: the CuPy backend (``xp``, CuPy's namespace, is not needed)."""
    return CupyBackend()
