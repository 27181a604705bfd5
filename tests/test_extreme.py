"""Large and extreme inputs, and NumPy memory layouts.

* Rank 64 (NumPy 2's limit) in every mode, on every backend that allows it.
* Zero-size dimensions in every position and every mode (``out=`` included).
* Outputs of more than 2**31 elements on NumPy (int64 indexing), sampled at
  the first and last element and around 2**31. ``@pytest.mark.slow`` but in
  the default run; skipped when less than 12 GiB is available or when
  ``ARRAYSELECT_SKIP_HUGE=1``.
* ``out`` overlapping an input with an offset (``out = buf[1:]``,
  ``then = buf[:-1]`` and friends): the right result (the oracle on copies) or
  a ``SelectValueError``, never silent corruption.
* NumPy read-only, Fortran-order, unaligned and byte-swapped arrays, also
  through the portable backend.
"""

from __future__ import annotations

import os
import time
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from oracle import OracleShapeError, bits_equal, oracle_index_maps, oracle_select, oracle_shape
from xp_helpers import (
    ALL_DTYPES,
    Backend,
    backend_kind,
    from_numpy,
    numpy_dtype,
    skip_dtype,
    to_numpy,
)

import arrayselect as asel

MAX_RANK = 64  # NumPy 2: "maximum supported dimension for an ndarray is currently 64"


# --------------------------------------------------------------------------- rank 64


def _rank_cases(
    rank: int,
) -> list[tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...], dict]]:
    """(id, cond, then, else, options) at ``rank``; a few dims of 2, the rest 1 (8 elements)."""
    full = [1] * rank
    for k in (0, rank // 2, rank - 1):
        full[k] = 2
    s = tuple(full)
    ones = (1,) * rank
    return [
        ("none", s, s, s, {"auto_broadcast": "none"}),
        ("numpy-low-rank-cond", s[-3:], s, ones, {}),
        ("numpy-full", s, ones, s, {}),
        ("numpy-then-else-broadcast", (2,), s[: rank // 2 + 1] + ones[rank // 2 + 1 :], s, {}),
        (
            "multidirectional-cond-enlarges",
            s,
            (2,),
            ones[1:],
            {"cond_broadcast": "multidirectional"},
        ),
        ("multidirectional-scalars", s, (), (), {"cond_broadcast": "multidirectional"}),
        ("pdpd-axis-minus-1", s[-1:], s, s[-2:], {"auto_broadcast": "pdpd"}),
        ("pdpd-axis-mid", (2, 1, 1), s, (2,), {"auto_broadcast": "pdpd", "axis": rank // 2}),
        (
            "pdpd-axis-0-trailing-ones",
            s[:3] + (1,) * 5,
            s,
            (2,),
            {"auto_broadcast": "pdpd", "axis": 0},
        ),
        ("pdpd-full", s, s, s, {"auto_broadcast": "pdpd", "axis": 0}),
    ]


RANK_CASES = _rank_cases(MAX_RANK)


def _oracle_rank64(cond, then, else_, **options) -> np.ndarray:
    """The oracle's index maps, element by element (``oracle_select`` adds a byte axis,
    which a rank-64 output has no room for)."""
    out_shape, cmap, tmap, emap = oracle_index_maps(cond.shape, then.shape, else_.shape, **options)
    out = np.empty(out_shape, then.dtype)
    for idx in np.ndindex(*out_shape):
        out[idx] = then[tmap(idx)] if cond[cmap(idx)] else else_[emap(idx)]
    return out


@pytest.mark.parametrize(
    ("cid", "cshape", "tshape", "eshape", "options"), RANK_CASES, ids=[c[0] for c in RANK_CASES]
)
def test_rank_64_every_mode(xp: ModuleType, cid, cshape, tshape, eshape, options):
    rng = np.random.default_rng(64)
    cond = rng.integers(0, 2, size=cshape).astype(bool)
    then = rng.integers(-(2**31), 2**31, size=tshape, dtype=np.int32)
    else_ = rng.integers(-(2**31), 2**31, size=eshape, dtype=np.int32)
    expected = _oracle_rank64(cond, then, else_, **options)
    assert expected.ndim == MAX_RANK
    assert asel.select_shape(cshape, tshape, eshape, **options) == expected.shape
    result = to_numpy(asel.select(*(from_numpy(xp, a) for a in (cond, then, else_)), **options))
    # int32 values: equality is bit equality (bits_equal adds a byte axis: rank 65).
    assert result.dtype == expected.dtype and result.shape == expected.shape
    assert np.array_equal(result, expected)


def test_rank_beyond_numpy_in_select_shape():
    """select_shape has no rank limit of its own (it never makes arrays)."""
    for rank in (65, 200, 1000):
        s = (1,) * (rank - 1) + (3,)
        assert asel.select_shape(s, s, (3,)) == s
        assert asel.select_shape((3,), s, s, auto_broadcast="pdpd") == s
        assert asel.select_shape(s, (), (), cond_broadcast="multidirectional") == s
        with pytest.raises(asel.SelectShapeError):
            asel.select_shape(s, (3,), (3,))


# --------------------------------------------------------------------------- zero-size

# (cond, then, else, options): zero-size in each position, each mode, valid.
ZERO_CASES = [
    ((0,), (0,), (0,), {"auto_broadcast": "none"}),
    ((3, 0), (3, 0), (3, 0), {"auto_broadcast": "none"}),
    ((0, 0, 2), (0, 0, 2), (0, 0, 2), {"auto_broadcast": "none"}),
    # numpy, zero in cond / then / else, against 1 and 0
    ((0, 1), (1, 3), (0, 3), {}),
    ((1,), (0,), (1,), {}),
    ((), (0, 4), (4,), {}),
    ((0, 4), (1, 4), (0, 1), {}),
    ((4,), (0, 4), (1, 4), {}),
    ((1, 0), (2, 1), (2, 0), {}),
    ((2, 0), (2, 0), (), {}),
    # multidirectional: cond brings the zero
    ((0, 1), (3,), (1, 3), {"cond_broadcast": "multidirectional"}),
    ((0,), (), (), {"cond_broadcast": "multidirectional"}),
    ((2, 1, 0), (1, 3, 1), (3, 1), {"cond_broadcast": "multidirectional"}),
    # pdpd: zero in then (the output), in else/cond fitted at the axis
    ((), (0, 3), (3,), {"auto_broadcast": "pdpd"}),
    ((0,), (0, 3), (), {"auto_broadcast": "pdpd", "axis": 0}),
    ((0, 1), (0, 3), (0, 3), {"auto_broadcast": "pdpd"}),
    ((3, 1), (2, 3, 0), (3, 0), {"auto_broadcast": "pdpd", "axis": 1}),
    ((1,), (2, 0), (1, 0), {"auto_broadcast": "pdpd"}),
]


@pytest.mark.parametrize(
    ("cshape", "tshape", "eshape", "options"),
    ZERO_CASES,
    ids=[f"{c}-{t}-{e}-{'-'.join(map(str, o.values())) or 'numpy'}" for c, t, e, o in ZERO_CASES],
)
@pytest.mark.parametrize("with_out", [False, True], ids=["no-out", "out"])
def test_zero_size_everywhere(xp: ModuleType, cshape, tshape, eshape, options, with_out: bool):
    cond = np.ones(cshape, dtype=bool)
    then = np.full(tshape, 1.5)
    else_ = np.full(eshape, -2.5)
    out_shape = oracle_shape(cshape, tshape, eshape, **options)
    assert 0 in out_shape
    assert asel.select_shape(cshape, tshape, eshape, **options) == out_shape
    args = [from_numpy(xp, a) for a in (cond, then, else_)]
    kwargs = dict(options)
    if with_out:
        if backend_kind(xp) not in ("numpy", "torch", "cupy"):
            pytest.skip(f"{backend_kind(xp)}: no out= (immutable or lazy arrays)")
        kwargs["out"] = from_numpy(xp, np.empty(out_shape))
    result = asel.select(*args, **kwargs)
    if with_out:
        assert result is kwargs["out"]
    got = to_numpy(result)
    assert got.shape == out_shape and got.dtype == np.float64
    # A Python scalar for else with zero-size arrays, too.
    try:
        scalar_shape = oracle_shape(cshape, tshape, (), **options)
    except OracleShapeError:
        with pytest.raises(asel.SelectShapeError):
            asel.select(args[0], args[1], -2.5, **options)
    else:
        got = to_numpy(asel.select(args[0], args[1], -2.5, **options))
        assert got.shape == scalar_shape


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zero_size_every_dtype(xp: ModuleType, dtype: str):
    skip_dtype(xp, dtype)
    dt = numpy_dtype(dtype)
    cond, then, else_ = np.zeros((0, 3), bool), np.zeros((2, 0, 3), dt), np.zeros((3,), dt)
    got = to_numpy(asel.select(*(from_numpy(xp, a) for a in (cond, then, else_))))
    assert got.shape == (2, 0, 3) and got.dtype == dt


# --------------------------------------------------------------------------- > 2**31 elements

HUGE = 2**31 + 2**12 + 3  # elements: past int32 indexing, not a round number


def _available_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def _huge_skip_reason(needed_gib: float) -> str | None:
    if os.environ.get("ARRAYSELECT_SKIP_HUGE") == "1":
        return "ARRAYSELECT_SKIP_HUGE=1"
    available = _available_bytes()
    if available < needed_gib * 2**30:
        return f"needs ~{needed_gib:g} GiB of available memory, {available / 2**30:.1f} GiB here"
    return None


def _sample_positions(n: int) -> np.ndarray:
    rng = np.random.default_rng(31)
    fixed = [0, 1, 2**31 - 2, 2**31 - 1, 2**31, 2**31 + 1, 2**32 % n, n - 2, n - 1]
    return np.unique(np.array(fixed + list(rng.integers(0, n, size=40)), dtype=np.int64))


@pytest.mark.slow
@pytest.mark.parametrize("library", [Backend.NUMPY], ids=str)
def test_output_over_2_31_elements_broadcast(xp: ModuleType):
    """(K, 1) cond x (1, M) then -> (K, M) int8 with K*M > 2**31: 2.2 GB, inputs tiny."""
    reason = _huge_skip_reason(12)
    if reason:
        pytest.skip(reason)
    m = 65_537  # prime-ish columns, so rows do not line up with 2**31
    k = -(-HUGE // m)
    cond = (np.arange(k) % 3 == 0).reshape(k, 1)
    then = (np.arange(m) % 101).astype(np.int8).reshape(1, m)
    start = time.perf_counter()
    out = asel.select(cond, then, -1, cond_broadcast="multidirectional")
    elapsed = time.perf_counter() - start
    try:
        assert out.shape == (k, m) and out.dtype == np.int8 and out.size > 2**31
        flat = out.reshape(-1)
        pos = _sample_positions(out.size)
        rows, cols = pos // m, pos % m
        expected = np.where(rows % 3 == 0, cols % 101, -1).astype(np.int8)
        assert np.array_equal(flat[pos], expected), pos[flat[pos] != expected][:5]
    finally:
        del out
    assert elapsed < 120, f"{elapsed:.1f} s"


@pytest.mark.slow
@pytest.mark.parametrize("library", [Backend.NUMPY], ids=str)
def test_output_over_2_31_elements_1d_out(xp: ModuleType):
    """1-D: cond of 2**31+ bools, out= of 2**31+ int8, a 0-d then and a scalar else."""
    reason = _huge_skip_reason(12)
    if reason:
        pytest.skip(reason)
    n = HUGE
    pos = _sample_positions(n)
    truth = (pos % 7 == 0) | (pos == 2**31)
    cond = np.zeros(n, dtype=bool)  # calloc: untouched pages cost nothing to make
    cond[pos] = truth
    out = np.empty(n, dtype=np.int8)
    try:
        five = np.array(5, dtype=np.int8)
        result = asel.select(cond, five, -3, cond_broadcast="multidirectional", out=out)
        assert result is out
        expected = np.where(truth, 5, -3).astype(np.int8)
        assert np.array_equal(out[pos], expected), pos[out[pos] != expected][:5]
        near = np.setdiff1d(np.clip(pos + 1, 0, n - 1), pos)  # cond False there
        assert np.all(out[near] == -3)
    finally:
        del cond, out


# --------------------------------------------------------------------------- out overlaps an input


def _overlap_cases(xp: ModuleType):
    """(id, build) with build() -> (buffer, cond, then, else, out) views of one buffer."""

    def shifted(direction: int, role: str):
        def build():
            buf = from_numpy(xp, np.arange(12, dtype=np.float64))
            cond = from_numpy(xp, np.array([i % 3 != 1 for i in range(11)]))
            ahead, behind = buf[1:], buf[:-1]
            out, src = (ahead, behind) if direction > 0 else (behind, ahead)
            other = from_numpy(xp, -np.arange(11, dtype=np.float64))
            then, else_ = (src, other) if role == "then" else (other, src)
            if role == "both":
                then, else_ = src, src
            return buf, cond, then, else_, out

        return build

    def cond_overlap():
        buf = from_numpy(xp, np.array([True, False, True, True, False, False, True, False]))
        then = from_numpy(xp, np.zeros(7, dtype=bool))
        else_ = from_numpy(xp, np.ones(7, dtype=bool))
        return buf, buf[:-1], then, else_, buf[1:]

    def broadcast_source():
        buf = from_numpy(xp, np.arange(8, dtype=np.float64))
        cond = from_numpy(xp, np.array([[True, False, True], [False, True, True]]))
        then = buf[:3]  # broadcast along rows, overlapping out's first row
        out = xp.reshape(buf[2:8], (2, 3)) if hasattr(xp, "reshape") else buf[2:8].reshape(2, 3)
        return buf, cond, then, 7.5, out

    cases = [
        ("out-ahead-of-then", shifted(+1, "then")),
        ("out-behind-then", shifted(-1, "then")),
        ("out-ahead-of-else", shifted(+1, "else")),
        ("out-behind-else", shifted(-1, "else")),
        ("out-ahead-of-both", shifted(+1, "both")),
        ("out-ahead-of-cond", cond_overlap),
        ("broadcast-then-overlaps-out", broadcast_source),
    ]
    if backend_kind(xp) == "numpy":

        def reversed_view():
            buf = np.arange(10, dtype=np.float64)
            cond = np.array([True, False] * 5)
            return buf, cond, buf, -buf[::-1].copy(), buf[::-1]

        def transposed():
            buf = np.arange(16, dtype=np.float64).reshape(4, 4)
            cond = np.triu(np.ones((4, 4), bool))
            return buf, cond, buf, 0.0, buf.T

        cases += [("out-reversed-then", reversed_view), ("out-transposed-then", transposed)]
    return cases


@pytest.mark.skip_xp_backend(Backend.JAX, reason="jax: no out= (immutable arrays)")
@pytest.mark.skip_xp_backend(Backend.DASK, reason="dask: no out= (lazy arrays)")
@pytest.mark.skip_xp_backend(Backend.ARRAY_API_STRICT, reason="array_api_strict: no out=")
def test_out_overlapping_an_input(xp: ModuleType):
    for cid, build in _overlap_cases(xp):
        _buf, cond, then, else_, out = build()
        copies = [
            to_numpy(v) if not isinstance(v, float) else np.asarray(v) for v in (cond, then, else_)
        ]
        multi = {"cond_broadcast": "multidirectional"}  # cond may carry the output shape
        expected = oracle_select(*copies, **multi)
        try:
            result = asel.select(cond, then, else_, out=out, **multi)
        except asel.SelectValueError as exc:  # allowed: a clear refusal
            assert "out" in str(exc), (cid, str(exc))
            continue
        assert result is out, cid
        assert bits_equal(to_numpy(out), expected), (cid, to_numpy(out), expected)


# --------------------------------------------------------------------------- NumPy layouts


def _values(dtype: np.dtype[Any], n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=n).astype(bool)
    raw = rng.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype)


def _unaligned(a: np.ndarray, writeable: bool = True) -> np.ndarray:
    """A copy of ``a`` at an odd address (itemsize > 1: really unaligned)."""
    raw = bytearray(a.nbytes + 1) if writeable else None
    if raw is None:
        buf = b"\0" + a.tobytes()
        out = np.frombuffer(buf, dtype=a.dtype, offset=1, count=a.size)
    else:
        out = np.frombuffer(raw, dtype=a.dtype, offset=1, count=a.size)
        out[...] = a.reshape(-1)
    return out.reshape(a.shape)


def _layouts(a: np.ndarray) -> dict[str, np.ndarray]:
    ro = a.copy()
    ro.flags.writeable = False
    return {
        "read-only": ro,
        "fortran": np.asfortranarray(a),
        "unaligned": _unaligned(a),
        "unaligned-read-only": _unaligned(a, writeable=False),
        "fortran-read-only": np.asfortranarray(ro),
    }


# NumPy memory layouts (flags, byte order, alignment): NumPy and NumPy through
# the portable backend only.
numpy_layouts = pytest.mark.parametrize("library", [Backend.NUMPY, Backend.NUMPY_PORTABLE], ids=str)


@numpy_layouts
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize(
    "layout", ["read-only", "fortran", "unaligned", "unaligned-read-only", "fortran-read-only"]
)
def test_numpy_layouts(xp: ModuleType, dtype: str, layout: str):
    skip_dtype(xp, dtype)
    dt = numpy_dtype(dtype)
    cond = _values(np.dtype(bool), 24, 1).reshape(2, 3, 4)
    then = _values(dt, 24, 2).reshape(2, 3, 4)
    else_ = _values(dt, 24, 3).reshape(2, 3, 4)
    expected = oracle_select(cond, then, else_)
    variants = {
        name: _layouts(a)[layout] for name, a in (("cond", cond), ("then", then), ("else", else_))
    }
    if layout.startswith("unaligned") and dt.itemsize > 1:
        assert not variants["then"].flags.aligned
    for role in ("cond", "then", "else", "all"):
        args = {"cond": cond, "then": then, "else": else_}
        for name in ("cond", "then", "else") if role == "all" else (role,):
            args[name] = variants[name]
        before = {k: v.copy() for k, v in args.items()}
        got = asel.select(args["cond"], args["then"], args["else"])
        assert got.dtype == dt
        assert bits_equal(got, expected), (role, layout)
        for k, v in args.items():
            assert bits_equal(v, before[k]), f"{k} was modified"
    # Broadcast and pdpd with the same layouts.
    row = variants["else"][0, 0]
    got = asel.select(variants["cond"], variants["then"], row)
    assert bits_equal(got, oracle_select(cond, then, else_[0, 0].copy()))
    pdpd = {"auto_broadcast": "pdpd", "axis": 0}
    got = asel.select(variants["cond"][:, :, 0], variants["then"], row[0:1], **pdpd)
    want = oracle_select(cond[:, :, 0].copy(), then, else_[0, 0, 0:1].copy(), **pdpd)
    assert bits_equal(got, want)


@numpy_layouts
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_numpy_unaligned_and_fortran_out(xp: ModuleType, dtype: str):
    skip_dtype(xp, dtype)
    dt = numpy_dtype(dtype)
    cond = _values(np.dtype(bool), 12, 4).reshape(3, 4)
    then = _values(dt, 12, 5).reshape(3, 4)
    else_ = _values(dt, 4, 6)
    expected = oracle_select(cond, then, else_)
    for out in (_unaligned(np.zeros((3, 4), dt)), np.zeros((3, 4), dt, order="F")):
        result = asel.select(cond, then, else_, out=out)
        assert result is out and bits_equal(out, expected)


SWAPPABLE = [d for d in ALL_DTYPES if np.dtype(numpy_dtype(d)).itemsize > 1 and d != "bfloat16"]


@numpy_layouts
@pytest.mark.parametrize("dtype", SWAPPABLE)
def test_numpy_byte_swapped(xp: ModuleType, dtype: str):
    """Non-native byte order: the output dtype is the inputs' (swapped) dtype."""
    dt = np.dtype(dtype)
    swapped = dt.newbyteorder()
    cond = _values(np.dtype(bool), 24, 7).reshape(4, 6)
    then = _values(dt, 24, 8).reshape(4, 6)
    else_ = _values(dt, 6, 9)
    expected = oracle_select(cond, then, else_)
    st, se = then.astype(swapped), else_.astype(swapped)
    got = asel.select(cond, st, se)
    assert got.dtype == swapped
    assert bits_equal(got.astype(dt), expected)
    # With a Python scalar, an integer cond of swapped order, unaligned, and out=.
    scalar = {"i": 3, "u": 3, "f": 0.5, "c": 0.5 - 1j}[dt.kind]
    got = asel.select(cond, st, scalar)
    assert got.dtype == swapped
    assert bits_equal(got.astype(dt), oracle_select(cond, then, np.asarray(scalar, dt)))
    int_cond = cond.astype(">i4" if np.little_endian else "<i4")
    assert bits_equal(asel.select(int_cond, st, se).astype(dt), expected)
    assert bits_equal(asel.select(cond, _unaligned(st), _unaligned(se)).astype(dt), expected)
    out = np.zeros((4, 6), swapped)
    assert asel.select(cond, st, se, out=out) is out
    assert bits_equal(out.astype(dt), expected)
    # Native and swapped operands are different NumPy dtypes: no promotion (SPEC §4).
    with pytest.raises(asel.SelectTypeError, match="then"):
        asel.select(cond, st, else_)
    with pytest.raises(asel.SelectTypeError, match="out"):
        asel.select(cond, then, else_, out=np.zeros((4, 6), swapped))
