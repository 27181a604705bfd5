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
layout, with a check of the last two signatures in front of it: one C call per
signature, see ``docs/torch.md``). Under ``torch.compile`` the fast path steps
aside and the general path runs, which Dynamo traces without a graph break.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import array_api_compat.torch as _compat_torch
import numpy as np
import torch
from arrayselect.backends.numpy_backend.family import select_n as numpy_select_n
from arrayselect.backends.numpy_backend.kernel import KERNEL_MISSING, kernel_select

from arrayselect.plugin import (
    PYTHON_SCALARS,
    Backend,
    Decision,
    DtypeKind,
    FastPath,
    OutLayout,
    SelectPlan,
    Shape,
    SignatureCache,
    get_num_threads,
    num_threads_chosen,
    register_cache,
)

__all__ = ["KERNEL_MIN_SIZE", "TorchBackend", "create", "unsupported_layout"]

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
for _name in ("complex32", "complex64", "complex128"):
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


def unsupported_layout(x: Any) -> tuple[str, str] | None:
    """What makes tensor ``x`` unfit for Select (sparse, mkldnn, quantized, nested).

    ``torch.where`` has no kernels for them; the portable backend asks this too.
    """
    if x.layout is not torch.strided:
        return f"a tensor of layout {x.layout}", "convert it with x.to_dense()"
    if x.is_quantized:
        return "a quantized tensor", "convert it with x.dequantize()"
    if x.is_nested:
        return "a nested tensor", "convert it with x.to_padded_tensor(0)"
    return None


#: Torch versions (major.minor) on which the recent-call check may use Dynamo's
#: ``TensorGuards``; on any other it is not used, whatever the probes say.
GUARDS_VERIFIED_ON = ("2.13",)


def _probe_tensors() -> list[Any]:
    """Tensors that differ from one another in exactly what a signature must tell
    apart: every dtype, the CPU and meta devices, 0-d, views with other strides or
    offsets, conjugate and negative views, requires_grad, a Parameter, a sparse tensor.
    """
    probes: list[Any] = []
    for dtype in _KINDS:
        if dtype == torch.complex32:  # "experimental": creating one warns
            continue
        for device in ("cpu", "meta"):
            probes.append(torch.zeros((2, 3), dtype=dtype, device=device))
    base = torch.zeros((2, 3))
    probes += [
        torch.zeros(()),
        torch.zeros((1,)),
        torch.zeros((3, 2)),
        torch.zeros((6,)),
        base.t(),
        base[:, :2],
        base[:, 1:],
        base[0],
        base.expand(2, 2, 3),
        torch.zeros((2, 3), requires_grad=True),
        torch.nn.Parameter(torch.zeros((2, 3))),
        torch.zeros((2, 3), dtype=torch.complex64).conj(),
        torch.zeros((2, 3))._neg_view(),
        torch.zeros((2, 3)).to_sparse(),
        torch.zeros((), device="meta"),
    ]
    if torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]
        probes.append(torch.zeros((2, 3)).to_mkldnn())
    return probes


def _same_signature(x: Any, y: Any) -> bool:
    """What the recent-call check must answer, from torch's Python attributes."""
    if type(x) is not type(y) or x.layout != y.layout:
        return False
    strided = x.layout == torch.strided
    return bool(
        x.shape == y.shape
        and x.dtype == y.dtype
        and x.device == y.device
        and x.requires_grad == y.requires_grad
        and x.is_conj() == y.is_conj()
        and x.is_neg() == y.is_neg()
        and (not strided or x.stride() == y.stride())
    )


def _guard(guards: Any, *tensors: Any) -> Any:
    """A ``guards`` (``TensorGuards``) with every size and stride of ``tensors`` static."""
    return guards(
        *tensors,
        dynamic_dims_sizes=[list(t.shape) for t in tensors],
        dynamic_dims_strides=[list(t.stride()) for t in tensors],
    )


def _load_tensor_guards() -> tuple[Any, str | None]:
    """Dynamo's ``TensorGuards`` (one C call reads type, dispatch keys (device type,
    layout, conjugate/negative bits), dtype, device index, requires_grad, sizes and
    strides of several tensors), or ``None`` and why it is not used.

    It is private to PyTorch, so it is used only on a torch version it was checked
    on, and only if, on probe tensors, it answers exactly as torch's Python attributes
    do for every pair (a cached signature then stands for what the core's key fixes).
    """
    version = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    if version not in GUARDS_VERIFIED_ON:
        return None, f"torch {torch.__version__} is not one of {GUARDS_VERIFIED_ON}"
    try:
        from torch._C._dynamo.guards import TensorGuards

        probes = _probe_tensors()
        for x in probes:
            guard = _guard(TensorGuards, x) if x.layout == torch.strided else None
            for y in probes:
                expected = _same_signature(x, y)
                if guard is None:
                    continue
                if bool(guard.check(y)) != expected:
                    return None, f"TensorGuards disagrees with torch on {x!r} and {y!r}"
        # Three tensors, each checked against its own position (distinct objects:
        # TensorGuards answers False when one object is passed twice).
        a, b, c = probes[0], torch.nn.Parameter(torch.zeros(2)), probes[0].clone()
        three = _guard(TensorGuards, a, b, c)
        if not three.check(c, b, a) or three.check(b, a, c) or three.check(a, b, probes[1]):
            return None, "TensorGuards misreads a call of three tensors"
    except Exception as exc:  # any failure: the cache alone, as without it
        return None, f"{type(exc).__name__}: {exc}"
    return TensorGuards, None


#: Dynamo's TensorGuards when verified (see :func:`_load_tensor_guards`), else
#: ``None``; and why not.
TENSOR_GUARDS, TENSOR_GUARDS_MISSING = _load_tensor_guards()


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
    result = torch.where(cond, then, else_)
    if out is None:
        return result
    out.copy_(result)  # then the result is out's, wherever out aliases an input
    return out


def _kernel_view(x: Any) -> np.ndarray:
    """A NumPy view of a CPU tensor's memory (raw bits for dtypes NumPy lacks)."""
    if x.dtype in _NUMPY_NATIVE:
        view: np.ndarray = x.detach().numpy()
    else:
        view = x.detach().view(_RAW[x.element_size()]).numpy()
    return view


def _on_kernel(x: Any) -> bool:
    return (
        type(x) in _ARRAY_TYPES
        and x.is_cpu
        and not (x.is_complex() and x.is_conj())
        and not x.is_neg()
    )


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
    #: combination of devices).
    signature = ("shape", "dtype", "device", "layout")  # type: ignore[assignment]

    def __init__(self) -> None:
        self.kernel_min_size = KERNEL_MIN_SIZE if KERNEL_MISSING is None else sys.maxsize
        #: Whether the fast path checks the last signatures first with one C call
        #: (Dynamo's TensorGuards, where :data:`TENSOR_GUARDS` has it), read when
        #: the fast path is made.
        self.recent_calls = TENSOR_GUARDS is not None
        self._fast = SignatureCache(
            self, _ARRAY_TYPES, None, prepare=self._prepare, devices_in_signature=True
        )
        register_cache("torch_backend.fast_path", lambda: (len(self._fast), self._fast.maxsize))

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
        strides = tuple(s * itemsize for s in out.stride())
        if out.requires_grad and out.is_leaf and torch.is_grad_enabled():
            return OutLayout(False, "a leaf tensor that requires grad", strides, itemsize)
        if not _is_compiling() and out.is_inference() and not torch.is_inference_mode_enabled():
            return OutLayout(False, "an inference tensor outside inference mode", strides, itemsize)
        return OutLayout(True, "", strides, itemsize)

    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        return torch.tensor(value, dtype=dtype, device=like.device)

    def result_type(self, x1: Any, x2: Any) -> Any:
        # The standard's promotion, as PyTorch's Array API namespace
        # (array_api_compat.torch) has it: a 0-d tensor promotes like any other
        # tensor where the standard's table has its pair of dtypes (torch.where
        # would let the other tensor's dtype win: int8 with a 0-d int16 is int8).
        if not _is_compiling():
            return super().result_type(x1, x2)
        # Dynamo cannot trace torch.result_type: the same rule from traceable parts.
        if (
            type(x1) not in PYTHON_SCALARS
            and type(x2) not in PYTHON_SCALARS
            and (x1.ndim == 0 or x2.ndim == 0)
            and x1.dtype in _STANDARD_DTYPES
            and x2.dtype in _STANDARD_DTYPES
        ):
            return torch.promote_types(x1.dtype, x2.dtype)
        from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

        return elementwise_dtypes(
            x1, x2, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT
        )[1]

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
        """A validated call, by the route the module docstring describes."""
        if self._kernel_eligible(math.prod(plan.out_shape), (cond, then, else_, out)):  # type: ignore[arg-type]
            return self._kernel(cond, then, else_, plan, dtype, out)
        return _compose(cond, then, else_, plan.aligned, cond_bool, out)

    def _kernel_eligible(self, size: int, operands: tuple[Any, ...]) -> bool:
        """Whether a call of ``size`` elements on ``operands`` (``None`` and Python
        scalars ignored) may run on the compiled kernel: large enough, PyTorch not
        watching, no gradient to record, every tensor plain CPU memory.
        """
        return (
            not _torch_is_watching()  # first: a traced size must not be compared
            and size >= self.kernel_min_size
            and KERNEL_MISSING is None
            and not (
                torch.is_grad_enabled()
                and any(getattr(x, "requires_grad", False) for x in operands)
            )
            and all(
                _on_kernel(x) for x in operands if x is not None and type(x) not in PYTHON_SCALARS
            )
        )

    def _kernel(
        self, cond: Any, then: Any, else_: Any, plan: SelectPlan, dtype: Any, out: Any
    ) -> Any:
        """The call on the compiled kernel, on the tensors' memory."""
        values = [
            _kernel_view(torch.tensor(x, dtype=dtype) if type(x) in PYTHON_SCALARS else x)
            for x in (then, else_)
        ]
        threads = get_num_threads()
        if not num_threads_chosen():
            threads = min(threads, torch.get_num_threads())
        result = kernel_select(
            _kernel_view(cond),
            values[0],
            values[1],
            None if out is None else _kernel_view(out),
            plan.out_shape,
            *plan.dims,
            threads,
        )
        if out is not None:
            return out
        tensor = torch.from_numpy(result)
        return tensor if tensor.dtype == dtype else tensor.view(dtype)

    # -- the fast path -----------------------------------------------------------

    def _prepare(self, decision: Decision) -> Callable[..., Any]:
        """What a cached signature runs: ``torch.where`` itself where nothing else is
        needed (a small, same-shape call with a boolean cond and no out), else the
        route of :meth:`_run`.
        """
        plan = decision.plan
        small = math.prod(plan.out_shape) < self.kernel_min_size  # type: ignore[arg-type]
        plain = decision.cond_bool and not decision.with_out and plan.aligned == (None,) * 3
        if small and plain:
            return torch.where
        dtype, cond_bool = decision.dtype, decision.cond_bool

        def run(cond: Any, then: Any, else_: Any, out: Any = None) -> Any:
            return self._run(cond, then, else_, plan, dtype, cond_bool, out)

        return run

    def fast_path(self) -> FastPath:
        cached = self._fast.fast_path().call
        lookup = self._fast.lookup
        guards = TENSOR_GUARDS if self.recent_calls else None
        # The recent-call check: the last two signatures of calls on three tensors
        # without out, each (auto_broadcast, axis, cond_broadcast, TensorGuards.check,
        # what the cache runs for it). One C call reads what the cache's key reads
        # (and strides and requires_grad, which only make it miss more often), so a
        # hit runs what the cache would have run, without building the cache's key.
        never = object()  # no call's option is this object: an empty slot never matches
        # recent[0]: the last signature, recent[1]: the one before
        recent: list[tuple[Any, Any, Any, Any, Any]] = [(never, never, never, None, None)] * 2
        misses = [0]
        self._recent = recent  # for tests: what the check holds

        def remember(cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any) -> None:
            # On the 1st, 2nd, 4th, 8th... miss, and every 64th: looking the entry up
            # and building a check cost about 5 us, which calls cycling through many
            # signatures would otherwise pay on every call (calls that hit count
            # no misses: a new signature waits for at most 64 of its calls).
            misses[0] += 1
            m = misses[0]
            if (m & (m - 1) and m & 63) or type(then) not in _ARRAY_TYPES:
                return
            if type(else_) not in _ARRAY_TYPES:
                return
            found = lookup(cond, then, else_, ab, axis, cb, None)
            if found is not None and found[0].then_range is None is found[0].else_range:
                check = _guard(guards, cond, then, else_).check
                recent[1], recent[0] = recent[0], (ab, axis, cb, check, found[1])

        def fast(cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any, out: Any) -> Any:
            # Under torch.compile the general path runs (Dynamo traces it, reading
            # this as a constant True); the checks and the cached path are C, which
            # Dynamo cannot follow.
            if _is_dynamo_compiling():
                return NotImplemented
            if out is None and guards is not None:
                try:
                    # TensorGuards reads the strides of every tensor it is given, and
                    # a nested tensor's abort the process (a C++ error it does not
                    # catch): those never reach it.
                    plain = not (cond.is_nested or then.is_nested or else_.is_nested)
                except Exception:  # a Python scalar, a subclass's own answer: the cache
                    plain = False
                if plain:
                    a, x, c, check, run = recent[0]
                    if ab is a and axis is x and cb is c and check(cond, then, else_):
                        return run(cond, then, else_)
                    a, x, c, check, run = recent[1]
                    if ab is a and axis is x and cb is c and check(cond, then, else_):
                        return run(cond, then, else_)
            if _is_compiling():  # exporting (non-strict): the general path too
                return NotImplemented
            result = cached(cond, then, else_, ab, axis, cb, out)
            if guards is not None and out is None and result is not NotImplemented:
                remember(cond, then, else_, ab, axis, cb)
            return result

        return FastPath(_ARRAY_TYPES, fast)

    # -- the select family: the core's portable defaults, on array_api_compat's torch
    # namespace (torch functions: autograd and torch.compile follow them).

    def namespace(self, *arrays: Any) -> ModuleType:
        return _compat_torch

    def traced(self, x: Any) -> bool:
        return _is_compiling()

    def promote(self, values: Sequence[Any]) -> Any:
        if _is_compiling():  # Dynamo cannot trace torch.result_type; this is its reference
            from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

            return elementwise_dtypes(
                *values, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT
            )[1]
        return super().promote(values)

    def select_n(self, which: Any, cases: tuple[Any, ...], shape: Shape, out: Any) -> Any:
        # Plain eager CPU calls run on the NumPy backend's select_n (the compiled
        # kernel's, once it has one) on the tensors' memory, as select does.
        operands = (which, *cases) if out is None else (which, *cases, out)
        if not self._kernel_eligible(math.prod(shape), operands):  # type: ignore[arg-type]
            return super().select_n(which, cases, shape, out)
        dtype = cases[0].dtype
        result = numpy_select_n(
            _kernel_view(which),
            tuple(_kernel_view(c) for c in cases),
            shape,
            None if out is None else _kernel_view(out),
        )
        if out is not None:
            return out
        tensor = torch.from_numpy(result)
        return tensor if tensor.dtype == dtype else tensor.view(dtype)


def create(xp: ModuleType) -> TorchBackend:
    """Entry-point factory: the PyTorch backend (``xp``, its namespace, is not needed)."""
    return TorchBackend()
