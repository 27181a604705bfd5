"""The core's fast-path protocol (:class:`arrayselect.plugin.SignatureCache`).

Driven with NumPy arrays through a backend that records what it runs and can
put arrays on fake devices, so that every branch runs without a GPU: results
and errors of the cached path are those of the general path, on a miss and on
every hit; what a signature does not fix (scalar values, devices, ``out``'s
memory) is checked again on every call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from arrayselect.backends.numpy_backend import NumpyBackend
from numpy.lib.stride_tricks import as_strided

import arrayselect as asel
from arrayselect._dispatch.fastcall_py import _RawKey as RawKey
from arrayselect._operations.select import select_general
from arrayselect.plugin import Decision, SignatureCache, register_backend


class _TracingBackend(NumpyBackend):
    """The NumPy backend, with fake devices and a count of the cached runs."""

    name = "tracing"

    def __init__(self) -> None:
        self.devices: dict[int, int] = {}
        self.executed = 0
        self.cache = SignatureCache(self, (np.ndarray,), self.run, maxsize=8)

    def device_of(self, x: Any) -> int:
        return self.devices.get(id(x), 0)

    def run(self, cond: Any, then: Any, else_: Any, decision: Decision, out: Any) -> Any:
        self.executed += 1
        then = np.asarray(then, dtype=decision.dtype)
        else_ = np.asarray(else_, dtype=decision.dtype)
        return self.select(cond, then, else_, decision.plan, out)

    def fast_path(self) -> Any:
        return self.cache.fast_path()


@pytest.fixture(params=["compiled", "python"])
def traced(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[_TracingBackend, SignatureCache]]:
    if request.param == "python":  # the hit path of a build without _fastcall
        from arrayselect._dispatch import fastcall_py as _fastcall_py
        from arrayselect._operations import fastpath as _fastpath

        monkeypatch.setattr(_fastpath, "SignatureCall", _fastcall_py.SignatureCall)
    backend = _TracingBackend()
    register_backend("numpy", lambda xp: backend)
    try:
        yield backend, backend.cache
    finally:
        from arrayselect.backends import numpy_backend

        register_backend("numpy", numpy_backend.create)


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        result = fn(*args, **kwargs)
    except Exception as exc:
        return (type(exc), str(exc))
    return ("ok", result.dtype, result.shape, result.tobytes())


def _general(
    cond: Any,
    then: Any,
    else_: Any,
    ab: str = "numpy",
    axis: int = -1,
    cb: str = "unidirectional",
    out: Any = None,
) -> Any:
    return select_general(
        cond, then, else_, auto_broadcast=ab, axis=axis, cond_broadcast=cb, out=out
    )


def test_cached_path_matches_general_path(traced: tuple[_TracingBackend, SignatureCache]):
    backend, fast = traced
    c = np.array([[True, False, True]])
    cases: list[tuple[Any, ...]] = [
        (c, np.arange(3.0), -1.0),
        (c, np.arange(3.0), 1e300 * 10),  # inf: allowed
        (c, np.arange(3.0), float("nan")),  # nan: allowed (outside the range, by the rule)
        (c, np.arange(3, dtype=np.float16), 1e10),  # finite overflow
        (c, np.arange(3, dtype=np.float16), 2**70),  # an int into a float: through a float
        (c, np.arange(3, dtype=np.int8), 300),  # int overflow
        (c, 7, np.arange(3, dtype=np.uint8)),
        (c, -7, np.arange(3, dtype=np.uint8)),  # negative into uint
        (c.astype(np.int16) * 256, np.arange(3, dtype=np.int32), np.full(3, 5, np.int32)),
        (c, np.arange(3.0), np.arange(3, dtype=np.float32)),  # dtype mismatch
        (c, np.zeros((2, 1)), np.ones((1, 3))),
        (np.ones((2, 2), bool), np.zeros((2, 3)), 1.0),  # shape error
        (c, 1.5j, np.zeros(3, np.complex64)),
        (c, complex(1e39, 0), np.zeros(3, np.complex64)),  # a complex part out of range
        (c, True, np.zeros(3, bool)),
        (c, 1, np.zeros(3, bool)),  # int into bool: type error
    ]
    for args in cases:
        for _ in range(3):  # miss, then hits
            assert _outcome(fast, *args, "numpy", -1, "unidirectional", None) == _outcome(
                _general, *args
            ), args
    assert backend.executed > 0
    # pdpd and multidirectional plans are cached too
    then = np.arange(24.0).reshape(2, 3, 4)
    for _ in range(2):
        got = fast(np.array([True, False, True]), then, 0.0, "pdpd", 1, "unidirectional", None)
        np.testing.assert_array_equal(
            got, _general(np.array([True, False, True]), then, 0.0, "pdpd", 1)
        )
        got = fast(np.ones((2, 1, 1, 1), bool), then, 0.0, "numpy", -1, "multidirectional", None)
        assert got.shape == (2, 2, 3, 4)


def test_cached_path_rechecks_what_the_signature_does_not_fix(
    traced: tuple[_TracingBackend, SignatureCache],
):
    backend, fast = traced
    c = np.array([True, False, True])
    t = np.arange(3, dtype=np.int8)
    assert _outcome(fast, c, t, 100, "numpy", -1, "unidirectional", None)[0] == "ok"
    executed = backend.executed
    # Same signature, out-of-range value: the general path's exact error.
    assert _outcome(fast, c, t, 1000, "numpy", -1, "unidirectional", None) == _outcome(
        _general, c, t, 1000
    )
    assert _outcome(fast, c, t, 99, "numpy", -1, "unidirectional", None)[0] == "ok"
    assert backend.executed == executed + 1
    # Devices: same shapes, but then on another device.
    e = np.zeros(3, np.int8)
    assert _outcome(fast, c, t, e, "numpy", -1, "unidirectional", None)[0] == "ok"
    t2 = t.copy()
    backend.devices[id(t2)] = 1
    err = _outcome(fast, c, t2, e, "numpy", -1, "unidirectional", None)
    assert err == _outcome(_general, c, t2, e) and err[0] is asel.SelectValueError
    # out= : same signature; a read-only or self-overlapping out is refused exactly
    # as the general path refuses it.
    out = np.empty(3, np.int8)
    assert fast(c, t, e, "numpy", -1, "unidirectional", out) is out
    ro = np.empty(3, np.int8)
    ro.flags.writeable = False
    assert _outcome(fast, c, t, e, "numpy", -1, "unidirectional", ro) == _outcome(
        _general, c, t, e, out=ro
    )
    zero = as_strided(np.zeros(1, np.int8), (3,), (0,), writeable=True)
    err = _outcome(fast, c, t, e, "numpy", -1, "unidirectional", zero)
    assert err == _outcome(_general, c, t, e, out=zero) and err[0] is asel.SelectValueError


def test_cached_path_steps_aside(traced: tuple[_TracingBackend, SignatureCache]):
    _, fast = traced
    c = np.array([True, False])
    t = np.zeros(2)
    # Options of unusual types (unhashable too) and non-array values go to the general path.
    assert fast(c, t, 1.0, "numpy", [1], "unidirectional", None) is NotImplemented
    assert fast(c, t, 1.0, "numpy", True, "unidirectional", None) is NotImplemented
    assert fast(c, t, 1.0, "numpy", np.int64(-1), "unidirectional", None) is NotImplemented
    assert fast(c, t, [1.0, 2.0], "numpy", -1, "unidirectional", None) is NotImplemented
    assert fast(c, 1.0, 2.0, "numpy", -1, "unidirectional", None) is NotImplemented
    assert fast(c, t, 1.0, "numpy", -1, "unidirectional", [0.0]) is NotImplemented
    assert fast(c.tolist(), t, 1.0, "numpy", -1, "unidirectional", None) is NotImplemented
    assert len(fast) == 0


def test_registry_routes_to_the_installed_fast_path(
    traced: tuple[_TracingBackend, SignatureCache],
):
    backend, fast = traced
    c, t = np.array([True, False]), np.arange(2.0)
    # The first call creates the backend (and installs its fast path), the second
    # is a miss (validated, then cached), the third and fourth are hits.
    for _ in range(4):
        asel.select(c, t, -1.0)
    assert (backend.executed, len(fast)) == (2, 1)
    with asel.force_portable():  # steps around every fast path
        asel.select(c, t, -1.0)
    assert backend.executed == 2


def test_cache_is_bounded(traced: tuple[_TracingBackend, SignatureCache]):
    _, fast = traced
    sizes = []
    for n in range(1, 30):
        fast(np.ones(n, bool), np.zeros(n), 1.0, "numpy", -1, "unidirectional", None)
        sizes.append(len(fast))
    # the one eviction rule (arrayselect._base.caches.BoundedCache): full, it empties first
    assert sizes == [(n - 1) % fast.maxsize + 1 for n in range(1, 30)]
    fast.clear()
    assert len(fast) == 0
    with pytest.raises(ValueError):
        SignatureCache(NumpyBackend(), (np.ndarray,), lambda *a: None, maxsize=0)


def test_lookup_finds_what_the_hit_path_cached(traced: tuple[_TracingBackend, SignatureCache]):
    _, fast = traced
    c, t = np.array([True, False]), np.arange(2.0)
    args = (c, t, -1.0, "numpy", -1, "unidirectional", None)
    assert fast.lookup(*args) is None  # not seen yet
    fast(*args)  # a miss: validated, then cached by the compiled (or Python) hit path
    found = fast.lookup(*args)
    assert found is not None
    decision, prepared = found
    assert decision.plan.out_shape == (2,) and decision.dtype == np.float64
    assert prepared is decision  # no prepare: run receives the decision itself
    # the key fixes the signature: another dtype, shape or option is another entry
    assert fast.lookup(c, t.astype(np.float32), -1.0, *args[3:]) is None
    assert fast.lookup(c[:1], t[:1], -1.0, *args[3:]) is None
    assert fast.lookup(c, t, -1.0, "none", -1, "unidirectional", None) is None
    assert fast.lookup(c, t, [1.0], *args[3:]) is None  # not a call it serves


def test_hit_path_and_python_twin_build_one_key(traced: tuple[_TracingBackend, SignatureCache]):
    """The key the hit path (compiled, or its Python twin) files an entry under is
    the twin's ``call_key``: the options, then every operand's type, then the
    arrays' signatures, as a tuple, or with the backend's raw signature (the NumPy
    kernel's) as one ``RawKey`` of them all; so :meth:`SignatureCache.lookup` finds
    every entry."""
    backend, _ = traced
    c, t = np.array([True, False, True]), np.arange(3.0)
    out = np.empty(3)
    calls: list[tuple[Any, ...]] = [
        (c, t, -1.0, "numpy", -1, "unidirectional", None),
        (c, 2, t, "numpy", -1, "unidirectional", None),
        (c, t, t, "numpy", -1, "unidirectional", out),
        (c[:, None], True, t > 1, "numpy", -1, "multidirectional", None),
        (c, t.reshape(1, 3, 1), 0.0, "pdpd", 1, "unidirectional", None),
    ]
    raw = backend.raw_signature  # the kernel's, which this backend inherits (or None)
    for with_raw in (True, False) if raw is not None and RawKey is not None else (False,):
        backend.raw_signature = raw if with_raw else None
        fast = SignatureCache(backend, (np.ndarray,), backend.run)
        for args in calls:
            fast.clear()
            fast(*args)
            (key,) = fast._cache
            operands = (*args[:3], args[6])
            types = tuple(map(type, operands))
            signs = tuple(backend.signature(x) for x in operands if type(x) is np.ndarray)
            if with_raw:
                assert RawKey is not None
                assert key == RawKey(args[3:6], types, b"".join(signs))
                assert key != RawKey(args[3:6], types, b"".join(signs[:-1]))
            else:
                assert key == (*args[3:6], types, signs)
            assert key == fast._keys.key(*args)
            assert fast.lookup(*args) is not None
    del backend.raw_signature  # the class's again


def test_raw_key_is_equal_exactly_when_its_parts_are() -> None:
    """``RawKey``: equal for equal heads, the same types and equal signature bytes;
    any part flipped (an option, a type, a bool, an int, a byte) gives another key."""
    if RawKey is None:
        pytest.skip("built without a C compiler: no RawKey, and no raw signatures to use it")
    base = (("numpy", -1, "unidirectional"), (np.ndarray, float, type(None)), b"\x01" * 24)
    key = RawKey(*base)
    assert key == RawKey(*base) and hash(key) == hash(RawKey(*base))
    others = [
        (("numpy", -2, "unidirectional"), *base[1:]),
        (("none", -1, "unidirectional"), *base[1:]),
        (("numpy", -1, "unidirectionaL"), *base[1:]),
        (("numpy", -1), *base[1:]),
        (base[0], (np.ndarray, int, type(None)), base[2]),
        (base[0], (np.ndarray, float), base[2]),
        (*base[:2], b"\x01" * 23 + b"\x02"),
        (*base[:2], b"\x01" * 25),
        (("numpy", True), *base[1:]),
        (("numpy", False), *base[1:]),
        (("numpy", 1), *base[1:]),
    ]
    keys = [RawKey(*parts) for parts in others]
    for k in keys:
        assert k != key
    assert len(set(keys)) == len(keys)
    assert key != (*base[0], base[1], base[2])  # never equal to a tuple key
    # a str's length tag never reads as an int's or a bool's: the bytes after an int
    # written as the str's would otherwise make the two heads one key
    word = int.from_bytes(b"a" * 8, "little")
    assert RawKey(("a" * 105,), (), b"") != RawKey((word,), (), b"a" * 97 + bytes(7))
    assert RawKey(("a" * 70,), (), b"") != RawKey((False,), (), b"a" * 70 + bytes(2))
    with pytest.raises(TypeError):
        RawKey(("x" * 300,), (), b"")  # a head it cannot write: the tuple key instead
    with pytest.raises(TypeError):
        RawKey((2**70,), (), b"")
