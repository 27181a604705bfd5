"""The hit path of the fast-path protocol in Python, for builds without ``_fastcall``.

:func:`call_key` builds the one key of every cache the hit path reads, as the
compiled ``call_key`` does, for any number of operands: ``(*head, types,
signatures)``. :class:`SignatureCall` does what the compiled
``arrayselect._dispatch._fastcall.SignatureCall`` does, step for step (see
``_fastcall.c``): build the call's key, look it up in the cache's dict, and on a
hit re-check what depends on values through the core's own checks; any doubt goes
to the general path. The family's memo (:mod:`arrayselect._dispatch.memo`) keys
its calls with :func:`call_key` too. It is only the caches' bookkeeping, so a
build whose C compiler failed gives the same answers and the same errors, a few
microseconds later per call.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import compress
from typing import Any

_RawKey: Callable[[tuple[Any, ...], tuple[type, ...], bytes], Hashable] | None
try:  # the compiled key of calls whose arrays have raw signatures (see call_key)
    from arrayselect._dispatch._fastcall import RawKey as _RawKey
except ImportError:  # built without a C compiler: no raw signatures either
    _RawKey = None

__all__ = ["SignatureCall", "call_key", "sign_one"]

_SCALAR_TYPES = frozenset({bool, int, float, complex})
_NAMES = ("cond", "then", "else", "out")


def sign_one(sign: Any, x: Any) -> Hashable:
    """A backend's signature of array ``x``: ``sign(x)``, or the tuple of ``x``'s
    attributes when ``sign`` is a tuple of attribute names (``Backend.signature``)."""
    if type(sign) is tuple:
        return tuple(getattr(x, name) for name in sign)
    return sign(x)  # type: ignore[no-any-return]


def call_key(
    head: tuple[Any, ...], operands: Sequence[Any], mask: bytes, sign: Any, raw: Any
) -> Hashable:
    """The key of a call: ``(*head, the operands' types, the signatures of the
    operands whose byte in mask is set)``.

    ``head`` is what is not an operand (select's options; the family's kind and
    :func:`~arrayselect.force_portable`); every key of one cache has a head of one
    length. A Python scalar, or ``None`` for no ``out``, stands for its type. Where
    the backend has a raw signature (``raw``, :attr:`Backend.raw_signature`, not
    ``None``) and every signature is bytes, the key is the compiled ``RawKey`` of
    the head, the types and those bytes joined, which the compiled twin writes
    straight into one object. Equal keys mean equal heads, equal types and equal
    signatures of the arrays: everything a kept decision read.
    """
    signs = tuple(sign_one(sign, x) for x in compress(operands, mask))
    types = tuple(map(type, operands))
    if raw is not None and _RawKey is not None and all(type(s) is bytes for s in signs):
        try:
            return _RawKey(head, types, b"".join(signs))  # type: ignore[arg-type]
        except TypeError:
            pass  # a head item it cannot write (an int beyond 64 bits): the tuple
    return (*head, types, signs)


class SignatureCall:
    """``SignatureCall(types, signature, raw_signature, cache, miss, general, run,
    backend, check_devices, check_out, error, run_checks_devices)``: call it with the
    7 arguments of a fast path; the arguments are those of the compiled class."""

    def __init__(
        self,
        types: frozenset[type],
        signature: Any,
        raw_signature: Any,
        cache: dict[Any, Any],
        miss: Callable[..., Any],
        general: Callable[..., Any],
        run: Callable[..., Any] | None,
        backend: Any,
        check_devices: Callable[..., Any] | None,
        check_out: Callable[..., Any] | None,
        error: type[BaseException],
        run_checks_devices: bool,
        /,
    ) -> None:
        if not isinstance(types, frozenset):
            raise TypeError("types must be a frozenset")
        self._types = types
        self._signature = signature
        self._raw = raw_signature
        self._cache = cache
        self._miss = miss
        self._general = general
        self._run = run
        self._backend = backend
        self._check_devices = check_devices
        self._check_out = check_out
        self._error = error
        self._run_checks_devices = run_checks_devices

    def _rechecks_pass(
        self, cond: Any, then: Any, then_array: bool, else_: Any, else_array: bool, out: Any
    ) -> bool:
        """The value-dependent checks; ``False`` on a SelectError (the general path raises it)."""
        try:
            if self._check_devices is not None:
                xs = (cond, then if then_array else None, else_ if else_array else None, out)
                named = [(n, x) for n, x in zip(_NAMES, xs, strict=True) if x is not None]
                self._check_devices(self._backend, named)
            if out is not None and self._check_out is not None:
                self._check_out(self._backend, out)
        except self._error:
            return False
        return True

    def key(
        self,
        cond: Any,
        then: Any,
        else_: Any,
        auto_broadcast: Any,
        axis: Any,
        cond_broadcast: Any,
        out: Any,
        /,
    ) -> Hashable | None:
        """The call's key in the cache (the compiled class builds the same), or
        ``None`` for a call the fast path does not serve."""
        if (
            type(auto_broadcast) is not str
            or type(axis) is not int
            or type(cond_broadcast) is not str
            or type(cond) not in self._types
        ):
            return None
        types = self._types
        then_array = type(then) in types
        else_array = type(else_) in types
        out_array = out is not None and type(out) in types
        # Arrays of the backend's types, or one Python scalar beside an array.
        if (
            (not then_array and not (else_array and type(then) in _SCALAR_TYPES))
            or (not else_array and type(else_) not in _SCALAR_TYPES)
            or (out is not None and not out_array)
        ):
            return None
        mask = bytes((1, then_array, else_array, out_array))
        try:
            return call_key(
                (auto_broadcast, axis, cond_broadcast),
                (cond, then, else_, out),
                mask,
                self._signature,
                self._raw,
            )
        except Exception:
            # no signature (e.g. a tensor whose sizes cannot be read): the general
            # path says why
            return None

    def __call__(
        self,
        cond: Any,
        then: Any,
        else_: Any,
        auto_broadcast: Any,
        axis: Any,
        cond_broadcast: Any,
        out: Any,
        /,
    ) -> Any:
        """The result, or ``NotImplemented`` for the general path."""
        args = (cond, then, else_, auto_broadcast, axis, cond_broadcast, out)
        key = self.key(*args)
        if key is None:
            return NotImplemented
        try:
            entry = self._cache[key]  # not .get(): see arrayselect._base.caches
        except KeyError:
            return self._miss(key, *args)
        _, prepared, then_range, else_range = entry
        then_array = type(then) in self._types
        else_array = type(else_) in self._types
        then_v, else_v = then, else_
        scalar_range = then_range if then_range is not None else else_range
        if scalar_range is not None:
            value = then if then_range is not None else else_
            if not scalar_range.admits(value):
                return self._general(*args)
            if then_range is not None:
                then_v = scalar_range.prepare(value)
            else:
                else_v = scalar_range.prepare(value)
        rechecks = self._check_devices is not None or (
            out is not None and self._check_out is not None
        )
        if rechecks and not self._rechecks_pass(cond, then, then_array, else_, else_array, out):
            return self._general(*args)
        try:
            if self._run is not None:
                return self._run(cond, then_v, else_v, prepared, out)
            if out is None:
                return prepared(cond, then_v, else_v)
            return prepared(cond, then_v, else_v, out)
        except Exception:
            if not self._run_checks_devices:
                raise
        # e.g. arrays on different devices: the general path raises the core's error
        return self._general(*args)
