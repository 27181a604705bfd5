"""The PyTorch backend: torch ops where PyTorch must see them, the compiled kernel elsewhere.

Each validated call takes one of two routes:

* **torch ops**: each input viewed with the plan's aligned shape (``reshape``
  of a view), an integer ``cond`` compared with 0, one ``torch.where``. This is
  ``torch.where``'s own autograd (``then``/``else`` receive the mask, summed
  over their broadcast dimensions; ``cond`` none), ``torch.func`` transforms,
  ``torch.compile`` and ``torch.export`` (a traced call emits ``aten.reshape``
  and ``aten.where``, nothing of arrayselect's), every device and the ``meta``
  device. It is taken whenever PyTorch has to see the computation: under
  ``torch.compile``/``export``, a dispatch or function mode (``make_fx``,
  ``FakeTensorMode``), a ``torch.func`` transform, JIT tracing, or when an
  autograd graph has to be recorded; and for CUDA and meta tensors, conjugate
  or negative views, and outputs below :attr:`TorchBackend.kernel_min_size`
  elements, where ``torch.where`` is faster than any round trip.
* **the kernel**: plain eager calls on CPU tensors with nothing to record go to
  the NumPy backend's compiled kernel on the tensors' own memory (NumPy views,
  no copy; dtypes NumPy lacks, bfloat16 and the float8 types among them, are
  viewed as the unsigned integer of their size, since the kernel moves raw
  bits). It runs on at most ``torch.get_num_threads()`` threads unless the user
  chose arrayselect's thread count, so that the two libraries' thread pools do
  not oversubscribe the cores torch was told it has. In a build without the
  kernel (``arrayselect.show_runtime()`` says) every call takes the torch-ops
  route: ``torch.where`` is faster than ``numpy.where`` on the same memory.

Validation is the core's, on the general path and on the fast path
(:class:`~arrayselect.plugin.SignatureCache`, keyed by shape, dtype, device and
layout, with a check of the last two signatures in front of it:
:mod:`.recent`). Large kernel calls are split on the
threads of the OpenMP runtime torch itself runs on (see ``docs/torch.md``). Under
``torch.compile`` the fast path steps aside: a call on three tensors is one call in
Dynamo's graph, which it does not trace into, and any other call takes the general
path, which it traces without a graph break (:mod:`.dynamo`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NamedTuple

import array_api_compat.torch as _compat_torch
import numpy as np
import torch
from arrayselect.backends.shared.kernel import KERNEL_MISSING, kernel_select, set_openmp
from arrayselect.backends.shared.numpy_family import positions as numpy_positions
from arrayselect.backends.shared.numpy_family import put_at as numpy_put_at
from arrayselect.backends.shared.numpy_family import select_cases as numpy_select_cases
from arrayselect.backends.shared.numpy_family import select_n as numpy_select_n
from arrayselect.backends.shared.numpy_family import take_at as numpy_take_at

from arrayselect.plugin import (
    Backend,
    BoundedCache,
    Decision,
    DtypeKind,
    FastPath,
    OutLayout,
    SelectPlan,
    Shape,
    SignatureCache,
    generic,
    on_import,
    settings,
)

from ..shared import torch_unsupported_layout
from . import layout as torch_layout
from . import native as torch_native
from . import recent as torch_recent
from .dynamo import allow_in_graph, trace_as, traced_fast_path

#: Python scalar operands (exact types), as the core defines them.
PYTHON_SCALARS = Backend.PYTHON_SCALARS

__all__ = [
    "KERNEL_MIN_SIZE",
    "OPENMP",
    "OPENMP_MISSING",
    "RECENT_CHECK",
    "RECENT_CHECKED_DTYPES",
    "RECENT_CHECKS",
    "TorchBackend",
    "create",
    "unsupported_layout",
]

#: Smallest output (elements) sent to the kernel. Below it ``torch.where`` on the
#: tensors is faster than viewing them as NumPy arrays and back (the crossover
#: measured on a 2-core x86-64 VM with a random mask; see docs/torch.md).
KERNEL_MIN_SIZE = 8192

_KINDS: dict[torch.dtype, DtypeKind] = {torch.bool: "bool"}
for _name in ("int8", "int16", "int32", "int64"):
    _KINDS[getattr(torch, _name)] = "int"
for _name in ("uint8", "uint16", "uint32", "uint64"):
    _KINDS[getattr(torch, _name)] = "uint"
for _name in (
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
):
    if hasattr(torch, _name):
        _KINDS[getattr(torch, _name)] = "float"
# bcomplex32 (two bfloat16s): torch >= 2.14 promotes complex with bfloat16 to it
for _name in ("complex32", "bcomplex32", "complex64", "complex128"):
    if hasattr(torch, _name):
        _KINDS[getattr(torch, _name)] = "complex"

# The NumPy dtype the kernel sees for each torch dtype: the dtype itself where
# NumPy has it, else the unsigned integer of its size (raw bits).
_RAW: dict[int, torch.dtype] = {
    1: torch.uint8,
    2: torch.uint16,
    4: torch.uint32,
    8: torch.uint64,
    16: torch.complex128,
}
_NUMPY_NATIVE = frozenset(
    {torch.bool, torch.int8, torch.int16, torch.int32, torch.int64}
    | {torch.uint8, torch.uint16, torch.uint32, torch.uint64}
    | {torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128}
)
# The standard's dtypes that PyTorch promotes with one another (it promotes
# uint16/32/64 with no other dtype): where a 0-d tensor promotes as any tensor.
_STANDARD_DTYPES = frozenset(
    {torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8}
    | {torch.float32, torch.float64, torch.complex64, torch.complex128}
)
_DEFAULTS: dict[type, torch.dtype] = {bool: torch.bool, int: torch.int64}
_ARRAY_TYPES: tuple[type, ...] = (torch.Tensor, torch.nn.Parameter)

# Typed handles on torch internals that tell whether PyTorch is watching.
_C: Any = torch._C
_is_compiling: Callable[[], bool] = torch.compiler.is_compiling
# What Dynamo answers True for while it traces (a constant to it) and eager code
# answers False for in one Python call: the test in front of the recent-call check.
_is_dynamo_compiling: Callable[[], bool] = torch.compiler.is_dynamo_compiling


#: What makes a tensor unfit for Select (sparse, mkldnn, quantized, nested), and how to
#: convert it; the portable backend asks this too.
unsupported_layout = torch_unsupported_layout


#: The address of ``GOMP_parallel`` of the OpenMP runtime torch's CPU ops run on (0:
#: none), and why none. Large kernel calls are split on that runtime's threads: after
#: each torch op they spin for a while, and a split on the kernel's own threads would
#: compete with them for the cores (see docs/torch.md).
OPENMP, OPENMP_MISSING = torch_native.openmp_parallel()
# GNU libgomp's threads do not survive fork: a forked child's next parallel region
# waits for them forever. The kernel must not be what leaves such threads behind, so
# it splits on them only where they can be let go before a fork (_guard_forks).
_RELEASE_OPENMP = torch_native.openmp_release() if OPENMP else None
if OPENMP and (_RELEASE_OPENMP is None or not hasattr(os, "register_at_fork")):
    OPENMP, OPENMP_MISSING = 0, "its OpenMP runtime has no omp_pause_resource_all (fork guard)"
set_openmp(OPENMP)
_fork_guarded = [False]


def _guard_forks() -> None:
    """At the first kernel call (which may start torch's OpenMP threads): from now on,
    let the forking thread's OpenMP threads go before each ``os.fork``, so that a
    child has none to wait for. Nothing is registered before then: importing
    arrayselect, or calling it on ``torch.where``'s route only, changes nothing.
    """
    _fork_guarded[0] = True
    if _RELEASE_OPENMP is not None:
        os.register_at_fork(before=_RELEASE_OPENMP)


# Dynamo is imported by torch.compile (a second of imports): registered then.
on_import("torch._dynamo", allow_in_graph)

#: The dtypes the recent-call checks are verified on (every dtype the backend serves).
RECENT_CHECKED_DTYPES = tuple(_KINDS)
#: The recent-call check's designs, verified on this torch (see
#: :mod:`.recent`): design -> (maker, None) or (None, why not).
RECENT_CHECKS = torch_recent.load_designs(RECENT_CHECKED_DTYPES)
#: The design a new backend's fast path uses: the first verified, or ``None`` (the
#: signature cache alone).
RECENT_CHECK = next((name for name, (make, _) in RECENT_CHECKS.items() if make), None)


def _torch_is_watching() -> bool:
    """Whether PyTorch must see the ops: compiling, exporting, a dispatch or function
    mode (make_fx, FakeTensorMode), a torch.func transform, or JIT tracing.
    """
    return bool(
        _is_compiling()
        or _C._len_torch_dispatch_stack()
        or _C._is_torch_function_mode_enabled()
        or _C._are_functorch_transforms_active()
        or _C._get_tracing_state() is not None
    )


def _where_lacks(dtype: torch.dtype) -> bool:
    """Whether this torch's CPU ``torch.where`` has no kernel for ``dtype`` (torch 2.6-2.9
    for uint16/32/64, on 2.6 for the float8 dtypes too: ``"where_cpu" not
    implemented``)."""
    try:
        with warnings.catch_warnings():
            # complex32 (and bcomplex32 from torch 2.14) warn "experimental" when made;
            # this probe is ours, the user did not ask for one.
            warnings.simplefilter("ignore", UserWarning)
            x = torch.zeros(1, dtype=dtype)
            torch.where(torch.ones(1, dtype=torch.bool), x, x)
    except (RuntimeError, TypeError):
        return True
    return False


#: The dtypes torch.where lacks here, each with the signed integer of its size: Select
#: moves bits, so the where runs on those views (a working fallback, not torch's error).
_WHERE_AS: dict[torch.dtype, torch.dtype] = {
    dtype: {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[
        torch.empty(0, dtype=dtype).element_size()
    ]
    for dtype in _KINDS
    if dtype.itemsize <= 8 and _where_lacks(dtype)
}


def _where_bits(cond: Any, then: Any, else_: Any) -> Any:
    """``torch.where`` for a dtype of :data:`_WHERE_AS`: on same-size integer views."""
    dtype = then.dtype if isinstance(then, torch.Tensor) else else_.dtype
    raw = _WHERE_AS[dtype]
    device = cond.device
    then, else_ = (
        (x if isinstance(x, torch.Tensor) else torch.tensor(x, dtype=dtype, device=device))
        .to(dtype)
        .view(raw)
        for x in (then, else_)
    )
    return torch.where(cond, then, else_).view(dtype)


def _view(x: Any, dtype: Any) -> Any:
    """``x`` (a tensor or ``None``) viewed as ``dtype``, a dtype of its element size."""
    return None if x is None else x.view(dtype)


def _dtype_of(then: Any, else_: Any) -> Any:
    return then.dtype if isinstance(then, torch.Tensor) else getattr(else_, "dtype", None)


def _compose(
    cond: Any, then: Any, else_: Any, aligned: Any, cond_bool: bool, out: Any = None
) -> Any:
    """The call as torch ops: reshaped views, one ``torch.where``."""
    c_shape, t_shape, e_shape = aligned
    if c_shape is not None:
        cond = cond.reshape(c_shape)
    if t_shape is not None and type(then) not in PYTHON_SCALARS:
        then = then.reshape(t_shape)
    if e_shape is not None and type(else_) not in PYTHON_SCALARS:
        else_ = else_.reshape(e_shape)
    if not cond_bool:
        cond = cond != 0
    if _WHERE_AS and _dtype_of(then, else_) in _WHERE_AS:
        result = _where_bits(cond, then, else_)
    else:
        result = torch.where(cond, then, else_)
    if out is None:
        return result
    out.copy_(result)  # then the result is out's, wherever out aliases an input
    return out


# The NumPy type string the kernel sees each torch dtype as (raw bits where NumPy
# lacks the dtype).
_TYPESTR: dict[Any, str] = {}
for _dtype in _KINDS:
    _size = _dtype.itemsize
    _np_of = _dtype if _dtype in _NUMPY_NATIVE else _RAW[_size]
    _TYPESTR[_dtype] = np.dtype(str(_np_of).removeprefix("torch.")).str


class _Memory:
    """A tensor's memory as NumPy reads it (``__array_interface__``), holding the
    tensor. ``Tensor.numpy()`` would mark the tensor's storage as no longer
    resizable, for good: a program could tell a tensor select had read."""

    __slots__ = ("__array_interface__", "tensor")

    def __init__(self, x: Any) -> None:
        size = x.element_size()
        self.tensor = x
        self.__array_interface__ = {
            "data": (x.data_ptr(), False),
            "shape": tuple(x.shape),
            "strides": tuple(s * size for s in x.stride()),
            "typestr": _TYPESTR[x.dtype],
            "version": 3,
        }


def _kernel_view(x: Any) -> np.ndarray:
    """A NumPy view of a CPU tensor's memory (raw bits for dtypes NumPy lacks)."""
    return np.asarray(_Memory(x))


def _on_kernel(x: Any) -> bool:
    # Plain CPU memory only: not a conjugate or negative view (bits the kernel would
    # copy unresolved), not a ZeroTensor (no memory: torch.where materialises it).
    return (
        type(x) in _ARRAY_TYPES
        and x.is_cpu
        and not (x.is_complex() and x.is_conj())
        and not x.is_neg()
        and not x._is_zerotensor()
    )


# A dual level of torch.autograd.forward_ad is open (tangents exist only inside one):
# the level's counter, -1 outside any. Where this torch has no such counter, every
# call is taken as possibly carrying tangents (torch.where's route).
_forward_ad: Any = torch.autograd.forward_ad
_profiler_enabled: Callable[[], bool] = _C._autograd._profiler_enabled
_increment_version: Callable[[Any], None] = torch.autograd.graph.increment_version


def _dual_level_open() -> bool:
    return bool(getattr(_forward_ad, "_current_level", 0) >= 0)


# Result layouts of recent kernel calls: (sizes and strides of each operand, scalar,
# int cond) -> the strides torch.where's result would have (torch_layout).
_LAYOUTS = BoundedCache[Any, tuple[int, ...]]("torch_backend.result_layouts", 256)


def _result_strides(
    cond: Any, then: Any, else_: Any, plan: SelectPlan, cond_bool: bool
) -> tuple[int, ...]:
    """The strides of ``torch.where``'s result for the torch-ops route's operands
    (:func:`_compose`: aligned views, ``cond != 0`` for an integer ``cond``)."""
    operands = []
    scalar = False
    for x, aligned in zip((cond, then, else_), plan.aligned, strict=True):
        if type(x) in PYTHON_SCALARS:
            scalar = True
            continue
        operands.append(x if aligned is None else x.reshape(aligned))
    key = (tuple((tuple(x.shape), tuple(x.stride())) for x in operands), scalar, cond_bool)
    found = _LAYOUTS.data.get(key)
    if found is not None:
        return found
    if not cond_bool:  # cond != 0: an iterator of its own, with a scalar
        c = operands[0]
        strides = torch_layout.iterator_strides(tuple(c.shape), [c], scalar=True)
        operands[0] = torch.empty_strided(c.shape, strides, dtype=torch.bool, device="meta")
    found = torch_layout.iterator_strides(tuple(plan.out_shape), operands, scalar)  # type: ignore[arg-type]
    return _LAYOUTS.put(key, found)


def _empty(shape: Shape, strides: tuple[int, ...] | None, dtype: Any) -> Any:
    """A result for the kernel to fill: torch's own allocation (resizable storage,
    torch's alignment), C order where ``strides`` is ``None``."""
    if strides is None:
        return torch.empty(shape, dtype=dtype)  # type: ignore[arg-type]
    return torch.empty_strided(shape, strides, dtype=dtype)  # type: ignore[arg-type]


# The namespace of the core's generic algorithms: array_api_compat's, whose ``where``
# is torch.where itself. They call it on operands of one dtype (the core has made them
# so), where compat's promotion fix (for a 0-d tensor beside another dtype) changes
# nothing and costs 0.65 us of a 2.3 us call at 1 element.
# Everything else is compat's own, its inspection API (__array_namespace_info__,
# which mask_indexing asks) included; only the module's identity is not copied.
_MODULE_IDENTITY = frozenset(
    ("__name__", "__doc__", "__package__", "__loader__", "__spec__", "__path__", "__file__",
     "__cached__", "__builtins__")
)  # fmt: skip
_FAMILY_NAMESPACE = ModuleType(_compat_torch.__name__, _compat_torch.__doc__)
_FAMILY_NAMESPACE.__dict__.update(
    (k, v) for k, v in vars(_compat_torch).items() if k not in _MODULE_IDENTITY
)
_FAMILY_NAMESPACE.where = torch.where  # type: ignore[attr-defined]


def _written(out: Any) -> Any:
    """``out`` after the kernel wrote it: its version counter bumped, as an in-place
    torch op's (autograd then refuses a graph that saved the old values)."""
    _increment_version(out)
    return out


# torch's complex dtype of each real floating dtype: torch._prims_common's own map, which
# changes between releases (bfloat16's is complex64 up to 2.14, bcomplex32 in 2.15)
try:
    from torch._prims_common import _real_to_complex_dtype_map as _TO_COMPLEX
except ImportError:  # pragma: no cover - every supported torch has it
    _TO_COMPLEX = {torch.float16: torch.complex32, torch.bfloat16: torch.complex64,
                   torch.float32: torch.complex64, torch.float64: torch.complex128}  # fmt: skip


def _combine_categories(higher: Any, lower: Any) -> Any:
    """c10's ``combine_categories``: a lower-priority group's dtype counts only when its
    category (bool < integer < floating < complex) is above the higher group's."""
    if higher is None:
        return lower
    if lower is None or higher.is_complex:
        return higher
    if lower.is_complex:
        return _TO_COMPLEX[higher] if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher == torch.bool or lower.is_floating_point:
        return torch.promote_types(higher, lower)
    return higher


def traceable_result_type(*values: Any) -> Any:
    """PyTorch's own elementwise promotion (what
    ``torch._prims_common.elementwise_dtypes`` gives) of tensors and Python scalars,
    from parts every supported torch's Dynamo traces as constants (torch
    2.8's cannot trace ``elementwise_dtypes``: "torch.* op returned non-Tensor").

    Three groups, as c10's ``ResultTypeState``: dimensioned tensors, 0-d tensors, Python
    scalars (bool, int64, the default floating dtype, its complex). Each group promotes
    within itself; a lower group adds only a higher category.
    """
    dims, zeros, scalars = None, None, None
    for x in values:
        if type(x) in PYTHON_SCALARS:
            dtype = _scalar_default_dtype(type(x))
            scalars = dtype if scalars is None else torch.promote_types(scalars, dtype)
        elif x.ndim == 0:
            zeros = x.dtype if zeros is None else torch.promote_types(zeros, x.dtype)
        else:
            dims = x.dtype if dims is None else torch.promote_types(dims, x.dtype)
    return _combine_categories(dims, _combine_categories(zeros, scalars))


def _scalar_default_dtype(kind: type) -> Any:
    """The dtype torch gives a Python scalar of type ``kind`` on its own."""
    if kind is bool:
        return torch.bool
    if kind is int:
        return torch.int64
    real = torch.get_default_dtype()
    return real if kind is float else _TO_COMPLEX[real]


class TorchBackend(Backend):
    """Select for ``torch.Tensor``: torch ops, or the compiled kernel on CPU memory.

    Attributes
    ----------
    kernel_min_size
        Smallest output (elements) that goes to the kernel; set it above any
        size to keep every call on ``torch.where`` (its value without the
        kernel, where no call can go to it).
    """

    name = "torch"
    supports_out = True
    device_hint = "move them explicitly with x.to(device)"
    #: The fast path reads these attributes itself (C-level): what a decision
    #: depends on, the device included (so a cached signature is one accepted
    #: combination of devices). Where the fields check is verified, an instance reads
    #: them below torch's Python layer instead (``RecentCalls.signature``).
    signature = ("shape", "dtype", "device", "layout")  # type: ignore[assignment]
    signature_holds_device = True

    def __init__(self) -> None:
        self.kernel_min_size = KERNEL_MIN_SIZE if KERNEL_MISSING is None else sys.maxsize
        #: The recent-call check the fast path asks first (a design of
        #: :data:`RECENT_CHECKS`, or ``None``: the signature cache alone), read when
        #: the fast path is made.
        self.recent_calls: str | None = RECENT_CHECK
        make_fields = RECENT_CHECKS.get("fields", (None, None))[0]
        if make_fields is not None:
            # The fields check's reading (C): equal exactly when shape, dtype, device
            # and layout are, as verified at import; a third of the getters' time
            # (0.15 against 0.32 us a tensor with the hash, ad hoc timeit, load 0.5).
            self.signature = make_fields(None).signature  # type: ignore[attr-defined]
        self._fast = SignatureCache(self, _ARRAY_TYPES, None, prepare=self._prepare)

    # -- queries used by the core's validation ---------------------------------

    def tracing(self) -> bool:
        return _is_compiling()

    def dtype_kind(self, dtype: Any) -> DtypeKind | None:
        return _KINDS.get(dtype)

    def int_range(self, dtype: Any) -> tuple[int, int]:
        info = torch.iinfo(dtype)
        return int(info.min), int(info.max)

    def float_max(self, dtype: Any) -> float:
        return float(torch.finfo(dtype).max)

    def default_dtype(self, scalar_type: type, like: Any) -> Any:
        found = _DEFAULTS.get(scalar_type)
        if found is not None:
            return found
        real = torch.get_default_dtype()
        if scalar_type is float:
            return real
        return torch.complex128 if real == torch.float64 else torch.complex64

    def shape(self, x: Any) -> Shape:
        # Symbolic sizes (SymInt, under torch.compile(dynamic=True)) are kept.
        return tuple(x.shape)

    def unsupported_layout(self, x: Any) -> tuple[str, str] | None:
        return unsupported_layout(x)

    def device_of(self, x: Any) -> Any:
        return x.device

    def out_layout(self, out: Any) -> OutLayout:
        itemsize = out.element_size()
        strides = tuple([s * itemsize for s in out.stride()])  # a list: faster than a generator
        if out.requires_grad and out.is_leaf and torch.is_grad_enabled():
            return OutLayout(False, "a leaf tensor that requires grad", strides, itemsize)
        if not _is_compiling() and out.is_inference() and not torch.is_inference_mode_enabled():
            return OutLayout(False, "an inference tensor outside inference mode", strides, itemsize)
        return OutLayout(True, "", strides, itemsize)

    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        # scalar_tensor: torch.tensor's bits for every value the core admits for dtype
        # (they differ only out of range: uint64 from a negative int, complex32 beyond
        # its range), in half its time (1.3 against 2.6 us)
        return torch.scalar_tensor(value, dtype=dtype, device=like.device)

    def result_type(self, x1: Any, x2: Any) -> Any:
        # The standard's promotion, as PyTorch's Array API namespace
        # (array_api_compat.torch) has it: a 0-d tensor promotes like any other
        # tensor where the standard's table has its pair of dtypes (torch.where
        # would let the other tensor's dtype win: int8 with a 0-d int16 is int8).
        if not _is_compiling():
            # that namespace itself: the base class finds it with array_namespace,
            # which costs a 1-element apply_where a microsecond
            return _compat_torch.result_type(x1, x2)
        # Dynamo cannot trace torch.result_type: the same rule from traceable parts.
        if (
            type(x1) not in PYTHON_SCALARS
            and type(x2) not in PYTHON_SCALARS
            and (x1.ndim == 0 or x2.ndim == 0)
            and x1.dtype in _STANDARD_DTYPES
            and x2.dtype in _STANDARD_DTYPES
        ):
            return torch.promote_types(x1.dtype, x2.dtype)
        return traceable_result_type(x1, x2)

    def astype(self, x: Any, dtype: Any) -> Any:
        return x.to(dtype)

    def library_scalar(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        # torch.where's own conversion (it refuses values out of the dtype's range)
        zero = torch.zeros((), dtype=dtype, device=like.device)
        return torch.where(torch.tensor(True, device=like.device), value, zero)

    # -- running -------------------------------------------------------------------

    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        return self._run(cond, then, else_, plan, then.dtype, cond.dtype == torch.bool, out)

    def _run(
        self,
        cond: Any,
        then: Any,
        else_: Any,
        plan: SelectPlan,
        dtype: Any,
        cond_bool: bool,
        out: Any,
    ) -> Any:
        """A validated call, by the route the module docstring describes: torch ops,
        or the kernel on the tensors' memory, into ``out`` or a tensor torch allocates
        with ``torch.where``'s layout."""
        if not self._kernel_eligible(math.prod(plan.out_shape), (cond, then, else_, out)):  # type: ignore[arg-type]
            return _compose(cond, then, else_, plan.aligned, cond_bool, out)
        result = out
        if out is None:
            strides = _result_strides(cond, then, else_, plan, cond_bool)
            result = _empty(plan.out_shape, strides, dtype)
        values = [
            _kernel_view(torch.tensor(x, dtype=dtype) if type(x) in PYTHON_SCALARS else x)
            for x in (then, else_)
        ]
        if not _fork_guarded[0]:
            _guard_forks()
        threads = settings.get_num_threads()
        if not settings.num_threads_chosen():
            threads = min(threads, torch.get_num_threads())
        with self._profiled("arrayselect::select"):
            kernel_select(
                _kernel_view(cond),
                values[0],
                values[1],
                _kernel_view(result),
                plan.out_shape,
                *plan.dims,
                threads,
                True,  # on torch's OpenMP threads, where OPENMP has them
            )
        return result if out is None else _written(out)

    def _kernel_eligible(self, size: int, operands: tuple[Any, ...]) -> bool:
        """Whether a call of ``size`` elements on ``operands`` (``None`` and Python
        scalars ignored) may run on the compiled kernel: large enough, PyTorch not
        watching, no gradient to record, every tensor plain CPU memory.
        """
        return (
            # a plain int first (a traced size, a SymInt, must not be compared): a
            # small call then costs one comparison, not the five calls below
            type(size) is int
            and size >= self.kernel_min_size
            and not _torch_is_watching()
            and KERNEL_MISSING is None
            and not _dual_level_open()  # forward-mode AD: tangents are torch's to carry
            and not (
                torch.is_grad_enabled()
                and any(getattr(x, "requires_grad", False) for x in operands)
            )
            and all(
                _on_kernel(x) for x in operands if x is not None and type(x) not in PYTHON_SCALARS
            )
        )

    # -- the fast path -----------------------------------------------------------

    def _prepare(self, decision: Decision) -> Callable[..., Any]:
        """What a cached signature runs: ``torch.where`` itself where nothing else is
        needed (a small, same-shape call with a boolean cond and no out), else the
        route of :meth:`_run`.
        """
        plan = decision.plan
        assert plan is not None  # select's decisions hold their plan
        small = math.prod(plan.out_shape) < self.kernel_min_size  # type: ignore[arg-type]
        plain = decision.cond_bool and plan.aligned == (None,) * 3
        dtype, cond_bool = decision.dtype, decision.cond_bool

        def run(cond: Any, then: Any, else_: Any, out: Any = None) -> Any:
            return self._run(cond, then, else_, plan, dtype, cond_bool, out)

        if not (small and plain and dtype not in _WHERE_AS):
            return run
        if not decision.with_out:
            return torch.where
        if decision.then_range is not None or decision.else_range is not None:
            return run  # torch.where's out= takes tensors only

        def run_into(cond: Any, then: Any, else_: Any, out: Any) -> Any:
            # torch.where's own out= (one op, where the route writes a new tensor and
            # copies it: 2.5 against 1.2 us at 1 element). torch refuses it, before
            # writing, where out partly overlaps an input or autograd records an
            # input or out: then the route, which copies.
            if not _torch_is_watching():
                try:
                    return torch.where(cond, then, else_, out=out)
                except RuntimeError:
                    pass
            return run(cond, then, else_, out)

        return run_into

    def fast_path(self) -> FastPath:
        cached = self._fast.fast_path().call
        lookup = self._fast.lookup
        misses = [0]
        recent: torch_recent.RecentCallCheck | None = None

        def remember(cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any) -> None:
            # On the 1st, 2nd, 4th, 8th... miss, and every 64th: looking the entry up
            # and reading the signature cost a few microseconds, which calls cycling
            # through many signatures would otherwise pay on every call (calls that
            # hit count no misses: a new signature waits for at most 64 of its calls).
            misses[0] += 1
            m = misses[0]
            if (m & (m - 1) and m & 63) or recent is None:
                return
            found = lookup(cond, then, else_, ab, axis, cb, None)
            if found is not None:  # the check refuses what it cannot hold
                decision = found[0]
                recent.remember(
                    cond,
                    then,
                    else_,
                    ab,
                    axis,
                    cb,
                    found[1],
                    decision.then_range,
                    decision.else_range,
                )

        def after_recent(
            cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any, out: Any
        ) -> Any:
            """The fast path after the recent-call check missed (or without one)."""
            if _is_compiling():  # exporting (non-strict): the general path
                return NotImplemented
            result = cached(cond, then, else_, ab, axis, cb, out)
            if recent is not None and out is None and result is not NotImplemented:
                remember(cond, then, else_, ab, axis, cb)
            return result

        recent = torch_recent.make_check(RECENT_CHECKS, self.recent_calls, after_recent)
        self._recent = recent  # for tests: what the check holds
        traced = traced_fast_path(_ARRAY_TYPES)  # what Dynamo follows instead
        c_fast_path = getattr(recent, "fast_path", None)
        if c_fast_path is not None:
            # The whole fast path in C: a held signature runs from there, anything
            # else goes on to after_recent.
            on_import("torch._dynamo", functools.partial(trace_as, c_fast_path, traced))
            return FastPath(_ARRAY_TYPES, c_fast_path)

        def fast(cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any, out: Any) -> Any:
            # Dynamo reads this as a constant True: it follows `traced` (the check and
            # the cached path are C, which it cannot follow).
            if _is_dynamo_compiling():
                return traced(cond, then, else_, ab, axis, cb, out)
            if out is None and recent is not None:
                result = recent(cond, then, else_, ab, axis, cb)
                if result is not NotImplemented:
                    return result
            return after_recent(cond, then, else_, ab, axis, cb, out)

        return FastPath(_ARRAY_TYPES, fast)

    # -- the select family: the core's generic algorithms, on array_api_compat's torch
    # namespace (torch functions: autograd and torch.compile follow them).

    def namespace(self, *arrays: Any) -> ModuleType:
        return _FAMILY_NAMESPACE

    def traced(self, x: Any) -> bool:
        return _is_compiling()

    def data_free(self, x: Any) -> bool:
        # the base's question, without making a torch.device (0.07 against 0.33 us)
        return bool(x.is_meta)

    def promote(self, values: Sequence[Any]) -> Any:
        if _is_compiling():  # Dynamo cannot trace torch.result_type
            return traceable_result_type(*values)
        return super().promote(values)

    def select_n(self, which: Any, cases: tuple[Any, ...], shape: Shape, out: Any) -> Any:
        # Plain eager CPU calls run on the NumPy backend's select_n (the compiled
        # kernel's, once it has one) on the tensors' memory, as select does.
        operands = (which, *cases) if out is None else (which, *cases, out)
        if not self._kernel_eligible(math.prod(shape), operands):  # type: ignore[arg-type]
            raw = _WHERE_AS.get(cases[0].dtype)
            if raw is None:
                return generic.select_n(self, which, cases, shape, out)
            # no where kernel for the dtype here: the same selection on the bits
            bits = generic.select_n(
                self, which, tuple(c.view(raw) for c in cases), shape, _view(out, raw)
            )
            return bits.view(cases[0].dtype) if out is None else out
        result = _empty(shape, None, cases[0].dtype) if out is None else out
        with self._profiled("arrayselect::select_n"):
            numpy_select_n(
                _kernel_view(which),
                tuple(_kernel_view(c) for c in cases),
                shape,
                _kernel_view(result),
                scratch=out is None,
            )
        return result if out is None else _written(out)

    def select_cases(
        self, conds: tuple[Any, ...], choices: tuple[Any, ...], default: Any, shape: Shape
    ) -> Any:
        # Plain eager CPU calls run on the NumPy backend's select_cases (the kernel's
        # one pass) on the tensors' memory; the rest chain torch.where.
        if not self._kernel_eligible(math.prod(shape), (*conds, *choices, default)):  # type: ignore[arg-type]
            raw = _WHERE_AS.get(default.dtype)
            if raw is None:
                return generic.select_cases(self, conds, choices, default, shape)
            # no where kernel for the dtype here: the same selection on the bits
            views = tuple(c.view(raw) for c in choices)
            views_default = default.view(raw)
            return generic.select_cases(self, conds, views, views_default, shape).view(
                default.dtype
            )
        result = _empty(shape, None, default.dtype)
        with self._profiled("arrayselect::select_cases"):
            numpy_select_cases(
                tuple(_kernel_view(c) for c in conds),
                tuple(_kernel_view(c) for c in choices),
                _kernel_view(default),
                shape,
                _kernel_view(result),
            )
        return result

    # apply_where's gather and scatter (the core's generic algorithm): torch's boolean
    # indexing of a random mask takes about 3 ms each way at 10^6 float32, NumPy's flat
    # positions, take and assignment on the same memory about a third of the time
    # (measured: AMD EPYC 2 cores, load 0.6, 2026-11-29, ad hoc timeit: sin where
    # x < 0.5, else 0.0, at 10^6: 6.44 ms through torch, 1.84 ms through NumPy; at
    # 8192: 61 and 30 us; at 10^3: 17 and 16 us). So plain eager CPU calls of the
    # kernel route's size go through NumPy; anything else (autograd, a trace, small
    # calls) indexes with the mask, as torch does.

    def positions(self, mask: Any) -> Any:
        if not self._kernel_eligible(mask.numel(), (mask,)):
            return mask
        return _FlatPositions(mask, numpy_positions(_kernel_view(mask)))

    # Below the kernel route's size, torch's masked_select and masked_scatter_ are the
    # mask's gather and scatter: the same elements in the same order as x[mask] and
    # result[mask] = values, without advanced indexing's nonzero and index machinery
    # (measured: AMD EPYC 2 cores, load 0.5, 2026-11-29, ad hoc timeit at 10^3 float32,
    # half true: 4.9 against 6.3 us to gather, 1.6 against 6.5 us to scatter).

    def take_at(self, x: Any, where: Any) -> Any:
        if type(where) is not _FlatPositions:
            return torch.masked_select(x, where)
        if not self._numpy_may_read(x):
            return torch.masked_select(x, where.mask)
        taken = torch.from_numpy(numpy_take_at(_kernel_view(x), where.flat))
        return taken if taken.dtype == x.dtype else taken.view(x.dtype)  # raw bits

    def put_at(self, result: Any, where: Any, values: Any) -> None:
        if type(where) is not _FlatPositions:
            result.masked_scatter_(where, values)
        elif not self._numpy_may_read(result, values):
            result.masked_scatter_(where.mask, values)
        else:
            numpy_put_at(_kernel_view(result), where.flat, _kernel_view(values))
            _written(result)

    def _numpy_may_read(self, *tensors: Any) -> bool:
        """Whether NumPy may read and write ``tensors``' memory: the kernel route's
        rule, whose size :meth:`positions` checked."""
        return self._kernel_eligible(self.kernel_min_size, tensors)

    @staticmethod
    def _profiled(name: str) -> Any:
        """A ``record_function`` range named ``name`` while the profiler runs, else
        nothing (a range costs microseconds)."""
        if _profiler_enabled():
            return torch.profiler.record_function(name)
        return contextlib.nullcontext()


class _FlatPositions(NamedTuple):
    """A mask's true elements as :meth:`TorchBackend.positions` gives them for the
    NumPy route: the mask, and the flat positions (C order) in a NumPy array."""

    mask: Any
    flat: np.ndarray


def create(xp: ModuleType) -> TorchBackend:
    """Entry-point factory: the PyTorch backend (``xp``, its namespace, is not needed)."""
    return TorchBackend()
