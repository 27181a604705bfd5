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

import operator
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final

from arrayselect._base import settings as _settings
from arrayselect._base.caches import BoundedCache
from arrayselect._dispatch import registry as _registry
from arrayselect._rules.backend import Backend, devices_fixed_by_signature
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
# Per array type and force_portable setting: the signature of an array by the backend
# that serves it then (the native and the portable backend read different things: a
# key made by one backend's signer would lack what the other's decision reads, such
# as JAX's weak type). Set on each valid call, so a newly registered backend's
# signer replaces the old one's at its first decision.
_SIGNERS = BoundedCache[tuple[type, bool], Callable[[Any], Hashable]]("memo.family_signers", 256)
# The ``backend.signature`` each signer was made from (a signer is made again only
# when it changes, which invalidates the layouts below).
_SIGNER_SPECS = BoundedCache[tuple[type, bool], Any]("memo.family_signer_specs", 256)
# Per (operand types, force_portable): where the arrays are among the operands, their
# one signer, and their distinct types (to ask whether a compiler traces). Derived
# from ``_signers``, so cleared whenever a signer changes.
_Pick = Callable[[Sequence[Any]], tuple[Any, ...]]
_Layout = tuple[_Pick, Callable[[Any], Hashable], tuple[type, ...]]
_LAYOUTS = BoundedCache[tuple[tuple[type, ...], bool], _Layout]("memo.family_layouts", _CACHE_SIZE)
_layouts = _LAYOUTS.data  # read on every call (by the C lookup too)


def signature(kind: str, operands: Sequence[Any]) -> Hashable | None:
    """The memo key of a call, or ``None`` when no decision may be kept for it.

    ``(kind, force_portable, the operands' types, the arrays' signatures)``. The
    first call with some operand types finds each array's signer (and the
    array types to ask whether a compiler traces) one operand at a time; later
    calls with those types read them from ``_layouts`` and sign the arrays in one
    ``map`` (a call of ten operands pays microseconds for the loop otherwise).
    """
    portable = _settings.portable_forced()
    types = tuple(map(type, operands))
    try:
        layout = _layouts[types, portable]  # not .get(): see arrayselect._base.caches
    except KeyError:
        return _first_signature(kind, operands, types, portable)
    pick, sign, traced_types = layout
    checks = _registry.tracing_checks  # asked on every call: registered at any time
    for t in traced_types:
        tracing = checks.get(t)
        if tracing is not None and tracing():
            return None  # a compiler traces: no memo (it would guard on what it read)
    return (kind, portable, types, tuple(map(sign, pick(operands))))


def _first_signature(
    kind: str, operands: Sequence[Any], types: tuple[type, ...], portable: bool
) -> Hashable | None:
    """:func:`signature` for operand types it has no layout for; keeps the layout
    when every array has the same signer (one backend serves them).
    """
    at: list[int] = []
    signs: list[Callable[[Any], Hashable]] = []
    for i, t in enumerate(types):
        if t in PYTHON_SCALARS:
            continue  # a Python scalar stands for its type, which ``types`` holds
        sign = _SIGNERS.data.get((t, portable))
        if sign is None:
            return None
        tracing = _registry.tracing_checks.get(t)
        if tracing is not None and tracing():
            return None  # a compiler traces: no memo (it would guard on what it read)
        at.append(i)
        signs.append(sign)
    if not at:
        return None
    if all(s is signs[0] for s in signs):
        pick = operator.itemgetter(*at) if len(at) > 1 else _one(at[0])
        traced_types = tuple(dict.fromkeys(types[i] for i in at))
        _LAYOUTS.put((types, portable), (pick, signs[0], traced_types))
    return (kind, portable, types, tuple(s(operands[i]) for s, i in zip(signs, at, strict=True)))


def _one(i: int) -> Callable[[Sequence[Any]], tuple[Any]]:
    """``operator.itemgetter(i)``, but the item in a 1-tuple (as for several positions)."""
    return lambda operands: (operands[i],)


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


def _signer(backend: Backend) -> Callable[[Any], Hashable]:
    sign = backend.signature
    if isinstance(sign, tuple):  # attribute names (Backend.signature)
        return operator.attrgetter(*sign)
    return sign


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
    spec = backend.signature
    for x in arrays:
        if _SIGNER_SPECS.data.get((type(x), portable)) != spec:
            _SIGNER_SPECS.put((type(x), portable), spec)
            _SIGNERS.put((type(x), portable), _signer(backend))
            _LAYOUTS.clear()
    key = signature(kind, operands)
    if key is None:
        return
    _MEMOS.put(key, decision._replace(registered_as=where, devices=devices))


def clear() -> None:
    """Forget every kept decision (tests compare warm answers with cold ones)."""
    _memos.clear()
    _layouts.clear()
