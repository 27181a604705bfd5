"""What the select family's validation decided, kept per call signature.

The first call of :func:`~arrayselect.select_n`,
:func:`~arrayselect.select_cases` or :func:`~arrayselect.apply_where` with a
given *signature* runs the core's whole validation (:mod:`arrayselect._operations.family`);
when it passes, what it decided (the backend, the output shape and dtype, which
operands are cast or broadcast, each Python scalar's range) is kept here.
``apply_where`` keeps no dtype: its result dtype is the promotion of what its
functions return, which the backend does on every call. A later call of the
same signature reuses it and re-checks only what the signature does not fix:

* a Python scalar's value, with :func:`~arrayselect._validation.checks.check_scalar` and
  the range the validation derived;
* devices, where the backend's signature does not hold them (JAX): operands on
  two devices send the call to the general path, which raises its error;
* ``out``'s memory (writable, no overlapping elements), with
  :func:`~arrayselect._validation.checks.check_out_layout`, by the caller.

The signature is everything the validation reads: the number of operands, each
array's exact type and :meth:`~arrayselect.plugin.Backend.signature` by the
backend serving it with the current :func:`~arrayselect.force_portable` setting
(shape, dtype and weak type; the JAX backend's holds the whole abstract value,
PyTorch's device and layout), each Python scalar's
type, whether :func:`~arrayselect.force_portable` is on, and the backend's
:meth:`~arrayselect.plugin.Backend.dtype_mode` (JAX's 64-bit mode). A decision
is used only while its backend is still the registry's for that library, and
never while a compiler traces (``torch.compile``). Calls whose values are all
Python scalars (whose dtype is a library default that may change) or whose
result dtype is not one of the arrays' (a Python scalar promoted them: a
library default again) are not kept. So a kept decision can
never change an answer, an error included: a call it does not cover is
validated in full.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final

from arrayselect._base import settings as _settings
from arrayselect._base.caches import BoundedCache
from arrayselect._dispatch import registry as _registry
from arrayselect._dispatch.fastcall_py import call_key
from arrayselect._rules.backend import devices_fixed_by_signature
from arrayselect._validation.checks import PYTHON_SCALARS
from arrayselect._validation.decision import Decision

# The compiled memo lookup (find), or None in a build without a C compiler, where
# signature() and lookup() do it in Python.
_family_find: Callable[..., Any] | None = None
try:
    from arrayselect._dispatch._fastcall import family_find
except ImportError:
    pass
else:
    _family_find = family_find

__all__ = ["clear", "find", "lookup", "one_device", "remember", "signature"]

_CACHE_SIZE: Final = 1024
# What find hands the C lookup for the registry's tracing checks once it has asked them
_NO_TRACING_CHECKS: Final[dict[type, Callable[[], bool]]] = {}


_MEMOS = BoundedCache[Hashable, Decision]("memo.family_signatures", _CACHE_SIZE)
_memos = _MEMOS.data  # read on every call (by the C lookup too)
# Per array type and force_portable setting: the signature (``Backend.signature``,
# with its ``raw_signature``) of the backend that serves it then (the native and the
# portable backend read different things: a key made by one backend's signer would
# lack what the other's decision reads, such as JAX's weak type). Set on each valid
# call, so a newly registered backend's signature replaces the old one's at its first
# decision.
_SIGNERS = BoundedCache[tuple[type, bool], Any]("memo.family_signers", 256)
# Per (operand types, force_portable): which operands are arrays (a byte each), their
# one signature and raw signature, and their distinct types (to ask whether a
# compiler traces). Derived from ``_SIGNERS``, so cleared whenever a signature changes.
_Layout = tuple[bytes, Any, Any, tuple[type, ...]]
_LAYOUTS = BoundedCache[tuple[tuple[type, ...], bool], _Layout]("memo.family_layouts", _CACHE_SIZE)
_layouts = _LAYOUTS.data  # read on every call (by the C lookup too)


def signature(kind: str, operands: Sequence[Any]) -> Hashable | None:
    """The memo key of a call, or ``None`` when no decision may be kept for it.

    :func:`~arrayselect._dispatch.fastcall_py.call_key` with head ``(kind,
    force_portable)``: the operands' types and the arrays' signatures, as the
    compiled lookup builds it. The first call with some operand types finds
    which operands are arrays, their signature (one backend serves them all, or
    no decision is kept) and the array types to ask whether a compiler traces;
    later calls with those types read them from ``_layouts``.
    """
    portable = _settings.portable_forced()
    types = tuple(map(type, operands))
    layout: _Layout | None
    try:
        layout = _layouts[types, portable]  # not .get(): see arrayselect._base.caches
    except KeyError:
        layout = _layout(types, portable)
    if layout is None:
        return None
    mask, sign, raw, traced_types = layout
    checks = _registry.tracing_checks  # asked on every call: registered at any time
    for t in traced_types:
        tracing = checks.get(t)
        if tracing is not None and tracing():
            return None  # a compiler traces: no memo (it would guard on what it read)
    return call_key((kind, portable), operands, mask, sign, raw)


def _layout(types: tuple[type, ...], portable: bool) -> _Layout | None:
    """The layout of calls with these operand types, kept; ``None`` (nothing kept)
    while a compiler traces, or when an array type has no signature yet or two have
    different ones."""
    at: list[int] = []
    signers: tuple[Any, Any] | None = None
    for i, t in enumerate(types):
        if t in PYTHON_SCALARS:
            continue  # a Python scalar stands for its type, which the key holds
        tracing = _registry.tracing_checks.get(t)
        if tracing is not None and tracing():
            # a compiler traces: no memo (it would guard on what it read), and
            # nothing below for it to follow (torch.compile cannot trace bytes())
            return None
        this = _SIGNERS.data.get((t, portable))
        if this is None or (at and this != signers):
            return None
        at.append(i)
        signers = this
    if signers is None:
        return None
    mask = bytes(i in at for i in range(len(types)))
    traced_types = tuple(dict.fromkeys(types[i] for i in at))
    sign, raw = signers
    layout = (mask, sign, raw, traced_types)
    _LAYOUTS.put((types, portable), layout)
    return layout


def find(kind: str, operands: Sequence[Any]) -> Decision | None:
    """The decision kept for a call's signature if it still holds, else ``None``
    (:func:`lookup` of :func:`signature`, in one call).

    For operand types with a layout, the compiled ``family_find`` builds the key,
    reads the memo and checks it holds (the same steps as :func:`signature` and
    :func:`lookup`: in Python they cost a call of 10^3 elements as much as its
    work); :func:`signature` makes the layout on the first call.
    """
    if _family_find is not None:
        for tracing in _registry.tracing_functions:
            if tracing():
                # a compiler traces: torch.compile's Dynamo cannot follow a C function
                # (and the Python steps keep no memo then anyway)
                break
        else:
            # every registered check has just said no: the C lookup need not ask again
            memo = _family_find(
                kind,
                operands,
                _settings.portable_forced(),
                _layouts,
                _NO_TRACING_CHECKS,
                _memos,
                _registry._backends,
            )
            if memo is not NotImplemented:
                return memo  # type: ignore[no-any-return]
    return lookup(signature(kind, operands))


def lookup(key: Hashable | None) -> Decision | None:
    """The decision kept for ``key`` if it still holds, else ``None``."""
    if key is None:
        return None
    try:
        memo = _memos[key]  # not .get(): see arrayselect._base.caches
    except KeyError:
        return None
    return _holding(memo)


def _holding(memo: Decision) -> Decision | None:
    """``memo`` while its backend still serves its library in its dtype mode, else ``None``."""
    backend, key = memo.backend, memo.registered_as
    if (
        key is None
        or _registry._backends.get(key) is not backend
        or memo.dtype_mode != backend.dtype_mode()
    ):
        return None
    return memo


def one_device(memo: Decision, operands: Sequence[Any]) -> bool:
    """Whether the operands the core compares are on one device (where known)."""
    device_of = memo.backend.device_of
    first: Hashable = None
    for i in memo.devices:
        device = device_of(operands[i])
        if device is None:
            continue
        if first is None:
            first = device
        elif device != first:
            return False
    return True


def remember(
    kind: str | None,
    decision: Decision,
    operands: Sequence[Any],
    values: Sequence[Any],
    compared: Sequence[Any],
) -> None:
    """Keep ``decision``, what validation decided for a call of ``kind`` (``None``: not
    kept) on ``operands``.

    ``values`` are the operands that make the result (cases, choices, default), and
    ``compared`` the arrays whose devices the core compared. The decision is kept
    with its backend's registry key and, where the backend's signature does not
    hold devices, the positions of the operands whose devices are compared again.
    """
    backend, dtype = decision.backend, decision.dtype
    if kind is None or backend.tracing():
        return  # a tracing compiler follows this call: the core keeps no memo (Backend.tracing)
    if dtype is not None and all(type(x) in PYTHON_SCALARS or x.dtype != dtype for x in values):
        return  # the result dtype is a library default (of a Python scalar): not kept
    arrays = [x for x in operands if type(x) not in PYTHON_SCALARS]
    if len(compared) != len(arrays):
        return  # NumPy arrays joining JAX arrays: their signatures are not JAX's
    where = next((k for k, b in list(_registry._backends.items()) if b is backend), None)
    if where is None:
        return
    ids = {id(x) for x in compared}
    devices = (
        ()
        if devices_fixed_by_signature(backend)
        else tuple(i for i, x in enumerate(operands) if id(x) in ids)
    )
    portable = _settings.portable_forced()
    spec = (backend.signature, backend.raw_signature)
    for x in arrays:
        if _SIGNERS.data.get((type(x), portable)) != spec:
            _SIGNERS.put((type(x), portable), spec)
            _LAYOUTS.clear()
    key = signature(kind, operands)
    if key is None:
        return
    _MEMOS.put(key, decision._replace(registered_as=where, devices=devices))


def clear() -> None:
    """Forget every kept decision (tests compare warm answers with cold ones)."""
    _memos.clear()
    _layouts.clear()
