"""The torch backend's recent-call check: the last two signatures, checked first.

On a small call ``torch.where`` itself takes about a microsecond, and reading the
signature cache's key (shape, dtype, device and layout of three tensors) through
torch's Python getters costs about half as much again. So the fast path first asks a
check that holds the last two signatures it served, each with what the cache runs for
it, and reads the three tensors faster than the getters can. Two designs, the first
that :func:`load_designs` verifies is used:

``"fields"``
    :class:`arrayselect.backends.torch_backend._fields.RecentCalls` (C) reads each tensor
    through the C functions libtorch exports for AOTInductor
    (``aoti_torch_get_dtype``, ``..._get_device_type``, ``..._get_device_index``,
    ``..._get_layout``, ``..._get_dim``, ``..._get_sizes``: ``extern "C"``, a few
    nanoseconds each), given the address of the ``at::Tensor`` inside the Python
    object. That address is a layout of torch's private ``THPVariable`` struct,
    which no stability promise covers: the design is used only on a torch version it
    was checked on (:data:`FIELDS_VERIFIED_ON`), only if the object's size is the
    struct's, and only if, at import, on probe tensors (every dtype on the CPU and
    meta devices, 0-d, views, sparse and mkldnn layouts, a ``Parameter``, a nested
    tensor), its readings tell apart exactly the tensors whose Python ``shape``,
    ``dtype``, ``device`` and ``layout`` differ.
``"tensor-guards"``
    Dynamo's ``TensorGuards`` (private too, checked the same way, on
    :data:`GUARDS_VERIFIED_ON`): one C call per held signature, which reads more than
    the key (strides, ``requires_grad``) and so only misses more often.

Neither decides an answer: a hit runs what the signature cache decided for that
signature, and anything a check cannot read goes to the cache.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import torch

from . import native as torch_native

#: Dtypes whose tensors warn "experimental" when created: complex32, and bcomplex32
#: from torch 2.14 on.
_EXPERIMENTAL = frozenset(
    dtype for dtype in (torch.complex32, getattr(torch, "bcomplex32", None)) if dtype is not None
)

__all__ = [
    "FIELDS_VERIFIED_ON",
    "GUARDS_VERIFIED_ON",
    "Designs",
    "GuardsRecentCalls",
    "RecentCallCheck",
    "load_designs",
    "make_check",
    "probe_tensors",
    "same_guarded",
    "same_key",
]

#: Torch versions (major.minor) on which each design may be used; on any other it is
#: not, whatever the probes say.
FIELDS_VERIFIED_ON = ("2.13", "2.14", "2.15")
GUARDS_VERIFIED_ON = ("2.13", "2.14", "2.15")


FastPathCall = Callable[[Any, Any, Any, Any, Any, Any, Any], Any]


class RecentCallCheck(Protocol):
    """What the fast path asks: call it with ``(cond, then, else_, auto_broadcast,
    axis, cond_broadcast)`` for what a held signature runs, or ``NotImplemented``."""

    def __call__(self, cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any) -> Any: ...

    def remember(
        self,
        cond: Any,
        then: Any,
        else_: Any,
        ab: Any,
        axis: Any,
        cb: Any,
        run: Any,
        then_range: Any = None,
        else_range: Any = None,
        /,
    ) -> bool: ...

    def held(self) -> int: ...

    def forget(self) -> None: ...


#: Makes a fresh, empty check; ``fallback`` is what the ``"fields"`` check's
#: ``fast_path`` calls on a miss (the other design has no ``fast_path``).
Maker = Callable[[FastPathCall | None], RecentCallCheck]
#: What :func:`load_designs` returns: design -> (maker, None) or (None, why not).
Designs = dict[str, tuple[Maker | None, str | None]]


def _torch_version() -> str:
    return ".".join(torch.__version__.split("+")[0].split(".")[:2])


def _nested_probe() -> Any:
    """A nested tensor of two rows (2 and 3 elements), or ``None`` where this torch
    cannot make one without running a CPU op.

    A view of a buffer, made without computing anything: ``torch.nested.nested_tensor``
    copies its rows with a parallel op, which would start torch's OpenMP threads at
    import, and GNU libgomp's threads do not survive ``fork`` (a child's next parallel
    op waits for them forever).
    """
    make = getattr(torch, "_nested_view_from_buffer", None)
    if make is None:
        return None
    sizes, strides = torch.tensor([[2], [3]]), torch.tensor([[1], [1]])
    return make(torch.zeros(5), sizes, strides, torch.tensor([0, 2]))


def probe_tensors(dtypes: Iterable[Any], devices: Iterable[str] = ("cpu", "meta")) -> list[Any]:
    """Tensors that differ from one another in exactly what a signature must tell
    apart: each of ``dtypes`` on each of ``devices``, 0-d, views with other strides or
    offsets, conjugate and negative views, requires_grad, a Parameter, 17 dimensions,
    sparse and mkldnn layouts.

    The import-time check uses the CPU and meta devices only: a CUDA tensor would
    create a CUDA context (seconds, and device memory) in every process that imports
    torch. ``tests/test_torch_backend.py`` checks CUDA tensors on a GPU machine.
    """
    probes: list[Any] = []
    for dtype in dtypes:
        if dtype in _EXPERIMENTAL:  # creating one warns "experimental"
            continue
        for device in devices:
            probes.append(torch.zeros((2, 3), dtype=dtype, device=device))
    base = torch.zeros((2, 3))
    probes += [
        torch.zeros(()),
        torch.zeros((1,)),
        torch.zeros((3, 2)),
        torch.zeros((6,)),
        torch.zeros((1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)),  # 17 dimensions
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


def same_key(x: Any, y: Any) -> bool:
    """Whether tensors ``x`` and ``y`` have one signature-cache key, from torch's
    Python attributes (what the ``"fields"`` design must answer)."""
    return bool(
        type(x) is type(y)
        and x.layout == y.layout
        and x.shape == y.shape
        and x.dtype == y.dtype
        and x.device == y.device
    )


def same_guarded(x: Any, y: Any) -> bool:
    """What the ``"tensor-guards"`` design must answer: the key, and strides,
    ``requires_grad`` and the conjugate and negative bits."""
    if not same_key(x, y):
        return False
    strided = x.layout == torch.strided
    return bool(
        x.requires_grad == y.requires_grad
        and x.is_conj() == y.is_conj()
        and x.is_neg() == y.is_neg()
        and (not strided or x.stride() == y.stride())
    )


# -- "fields": libtorch's C readers --------------------------------------------------


def _verify_fields(check: Any, probes: list[Any]) -> str | None:
    """``None`` if ``check.read`` answers as torch's attributes on every probe, else
    what it got wrong."""
    readings = [check.read(x) for x in probes]
    for x, reading in zip(probes, readings, strict=True):
        exact = type(x) is torch.Tensor
        if not exact or x.dim() > 16:
            if reading is not None:
                return f"it reads {x!r}, which it must refuse"
        elif reading is None or reading[4] != tuple(x.shape):
            return f"it reads {reading} for a tensor of shape {tuple(x.shape)}"
    for x, rx in zip(probes, readings, strict=True):
        for y, ry in zip(probes, readings, strict=True):
            if rx is not None and ry is not None and (rx == ry) != same_key(x, y):
                return f"it disagrees with torch on {x!r} and {y!r}"
    nested = _nested_probe()
    if nested is None:
        return "this torch has no torch._nested_view_from_buffer to make a nested probe with"
    if check.read(nested) is not None:
        return "it reads a nested tensor (whose sizes torch refuses)"
    return None


def _handle_mismatch(offset: int, probes: list[Any]) -> str | None:
    """``None`` if, in every plain probe tensor, the word at ``offset`` is the address
    of its ``TensorImpl`` as torch itself reports it (``Tensor._cdata``): there is
    the ``at::Tensor`` the readers are given (its one member is that pointer), else
    what was found instead.

    The word lies inside the object (its size was checked), so reading it cannot
    fault; nothing read is followed as a pointer until it has matched on every
    probe, so an unknown torch that moved its fields is refused, not crashed.
    """
    for x in probes:
        if type(x) is not torch.Tensor:
            continue
        word = ctypes.c_void_p.from_address(id(x) + offset).value or 0
        if word != x._cdata:
            return (
                f"the word at offset {offset} of a tensor object is {word:#x}, "
                f"not its TensorImpl's address {x._cdata:#x}"
            )
    return None


def _load_fields(probes: list[Any]) -> tuple[Maker | None, str | None]:
    """A maker of the ``"fields"`` check, or ``None`` and why it is not used."""
    if _torch_version() not in FIELDS_VERIFIED_ON:
        return None, f"torch {torch.__version__} is not one of {FIELDS_VERIFIED_ON}"
    # THPVariable: the PyObject header, then the at::Tensor, then two hook pointers.
    offset = object.__basicsize__
    expected = offset + 3 * ctypes.sizeof(ctypes.c_void_p)
    if torch._C.TensorBase.__basicsize__ != expected:
        return None, (
            f"torch's tensor object is {torch._C.TensorBase.__basicsize__} bytes, "
            f"not the {expected} of the layout it was checked on"
        )
    why = _handle_mismatch(offset, probes)
    if why is not None:  # no reader has been given a handle yet
        return None, why
    try:
        from ._fields import RecentCalls

        readers = torch_native.aoti_readers()

        def make(fallback: FastPathCall | None = None) -> RecentCallCheck:
            check: RecentCallCheck = RecentCalls(torch.Tensor, offset, readers, fallback)
            return check

        why = _verify_fields(make(None), probes)
    except Exception as exc:  # any failure: the next design, as without this one
        return None, f"{type(exc).__name__}: {exc}"
    return (None, why) if why is not None else (make, None)


# -- "tensor-guards": Dynamo's TensorGuards ------------------------------------------


def _guard(guards: Any, *tensors: Any) -> Any:
    """A ``guards`` (``TensorGuards``) with every size and stride of ``tensors`` static."""
    return guards(
        *tensors,
        dynamic_dims_sizes=[list(t.shape) for t in tensors],
        dynamic_dims_strides=[list(t.stride()) for t in tensors],
    )


class GuardsRecentCalls:
    """The recent-call check through Dynamo's ``TensorGuards``: one C call per held
    signature, which reads type, dispatch keys (device type, layout, conjugate and
    negative bits), dtype, device index, ``requires_grad``, sizes and strides.
    """

    _NEVER = object()  # no call's option is this object: an empty slot never matches

    def __init__(self, guards: Any) -> None:
        self._guards = guards
        empty = (self._NEVER, self._NEVER, self._NEVER, None, None)
        # [0]: the last signature, [1]: the one before; each (ab, axis, cb, check, run)
        self._slots: list[tuple[Any, Any, Any, Any, Any]] = [empty, empty]

    def __call__(self, cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any) -> Any:
        try:
            # TensorGuards reads the strides of every tensor it is given, and a
            # nested tensor's abort the process (a C++ error it does not catch):
            # those never reach it.
            if cond.is_nested or then.is_nested or else_.is_nested:
                return NotImplemented
        except Exception:  # a Python scalar, a subclass's own answer: the cache
            return NotImplemented
        for a, x, c, check, run in self._slots:
            if ab is a and axis is x and cb is c and check(cond, then, else_):
                return run(cond, then, else_)
        return NotImplemented

    def remember(
        self,
        cond: Any,
        then: Any,
        else_: Any,
        ab: Any,
        axis: Any,
        cb: Any,
        run: Any,
        then_range: Any = None,
        else_range: Any = None,
    ) -> bool:
        # Three tensors only: a Python scalar (a range given) goes to the cache.
        if then_range is not None or else_range is not None:
            return False
        if cond.is_nested or then.is_nested or else_.is_nested:
            return False
        check = _guard(self._guards, cond, then, else_).check
        self._slots[1], self._slots[0] = self._slots[0], (ab, axis, cb, check, run)
        return True

    def held(self) -> int:
        return sum(slot[3] is not None for slot in self._slots)

    def forget(self) -> None:
        self.__init__(self._guards)  # type: ignore[misc]


def _load_tensor_guards(probes: list[Any]) -> tuple[Maker | None, str | None]:
    """A maker of the ``"tensor-guards"`` check, or ``None`` and why it is not used.

    On probe tensors, for every pair, ``TensorGuards`` must answer what torch's
    Python attributes say (:func:`same_guarded`).
    """
    if _torch_version() not in GUARDS_VERIFIED_ON:
        return None, f"torch {torch.__version__} is not one of {GUARDS_VERIFIED_ON}"
    try:
        from torch._C._dynamo.guards import TensorGuards

        for x in probes:
            if x.layout != torch.strided:
                continue
            guard = _guard(TensorGuards, x)
            for y in probes:
                if bool(guard.check(y)) != same_guarded(x, y):
                    return None, f"TensorGuards disagrees with torch on {x!r} and {y!r}"
        # Three tensors, each checked against its own position (distinct objects:
        # TensorGuards answers False when one object is passed twice).
        a, b, c = probes[0], torch.nn.Parameter(torch.zeros(2)), probes[0].clone()
        three = _guard(TensorGuards, a, b, c)
        if not three.check(c, b, a) or three.check(b, a, c) or three.check(a, b, probes[1]):
            return None, "TensorGuards misreads a call of three tensors"
    except Exception as exc:  # any failure: the cache alone, as without it
        return None, f"{type(exc).__name__}: {exc}"

    def make(fallback: FastPathCall | None = None) -> RecentCallCheck:
        return GuardsRecentCalls(TensorGuards)

    return make, None


def load_designs(dtypes: Iterable[Any]) -> Designs:
    """Each design, in the order of preference: a maker of a fresh, empty check and
    ``None``, or ``None`` and why the design is not used here (verified on probes of
    ``dtypes``, the dtypes the backend serves)."""
    probes = probe_tensors(dtypes)
    return {"fields": _load_fields(probes), "tensor-guards": _load_tensor_guards(probes)}


def make_check(
    designs: Designs, design: str | None, fallback: FastPathCall | None = None
) -> RecentCallCheck | None:
    """A fresh, empty check of ``design`` from ``designs`` (``None``: no check), whose
    ``fast_path`` (where it has one) calls ``fallback`` on a miss.

    Raises
    ------
    ValueError
        If ``design`` is not one of ``designs`` or is not verified here.
    """
    if design is None:
        return None
    if design not in designs:
        raise ValueError(f"design must be one of {list(designs)} or None, not {design!r}")
    make, why = designs[design]
    if make is None:
        raise ValueError(f"the {design!r} recent-call check is not used here: {why}")
    return make(fallback)
