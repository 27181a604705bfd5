"""The compiled NumPy kernel: really used, bit-exact for every item size and layout.

The oracle is ``np.where`` on *bit views* (unsigned integers of the item size,
or uint64 lanes for 16/32-byte items): it is independent of the kernel and
compares bits, so NaN payloads and padding count. The tests that run loops
run once per instruction set the kernel's loops were compiled for and this
CPU supports (the ``isa`` fixture: baseline, and AVX2 and AVX-512 on x86-64).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from arrayselect.backends.shared import _select_kernel as K
from arrayselect.backends.shared import kernel as numpy_kernel

import arrayselect as asel
from arrayselect._base.caches import clear_all as forget_decisions
from arrayselect._operations import fastpath as _fastpath

ml_dtypes = pytest.importorskip("ml_dtypes")

RNG = np.random.default_rng(20240607)


def _dtypes() -> list[np.dtype[Any]]:
    names = [
        "bool",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "float16",
        "int32",
        "uint32",
        "float32",
        "int64",
        "uint64",
        "float64",
        "complex64",
        "complex128",
        "longdouble",
        "clongdouble",
    ]
    out = [np.dtype(n) for n in names]
    for name in (
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
        "int4",
        "uint4",
        "int2",
        "float4_e2m1fn",
    ):
        if hasattr(ml_dtypes, name):
            out.append(np.dtype(getattr(ml_dtypes, name)))
    return out


DTYPES = _dtypes()
COND_DTYPES = [
    np.dtype(n)
    for n in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
]


_REAL_WHERE = np.where  # the no_where fixture patches np.where; the oracle keeps this


def bits(x: np.ndarray) -> np.ndarray:
    """``x``'s bits: uintN of its item size, or uint64 lanes on an extra last axis."""
    size = x.dtype.itemsize
    if size in (1, 2, 4, 8):
        return x.view(np.dtype(f"u{size}"))
    return np.array(x, order="C").reshape((*x.shape, 1)).view(np.uint64)


def random_array(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """Random bits (NaN payloads, subnormals, ...) viewed as ``dtype``."""
    raw = RNG.integers(0, 256, size=(*shape, dtype.itemsize), dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def random_cond(shape: tuple[int, ...], dtype: np.dtype[Any] | None = None) -> np.ndarray:
    if dtype is None or dtype == np.bool_:
        return RNG.random(shape) < 0.5
    info = np.iinfo(dtype)
    # Zeros, and nonzero values whose low byte is zero (256) or that are negative.
    choices = np.array(
        [0, 0, 1, info.max, 256 if info.bits > 8 else 2, info.min if info.min < 0 else 3],
        dtype=dtype,
    )
    return choices[RNG.integers(0, len(choices), size=shape)]


def oracle(cond: np.ndarray, then: np.ndarray, else_: np.ndarray) -> np.ndarray:
    """np.where on bit views (broadcast by NumPy rules)."""
    mask = cond != 0
    if then.dtype.itemsize > 8:
        mask = mask[..., None]
    return _REAL_WHERE(mask, bits(then), bits(else_))  # type: ignore[no-any-return]


def assert_bits_equal(result: np.ndarray, expected_bits: np.ndarray) -> None:
    np.testing.assert_array_equal(bits(result), expected_bits)


@pytest.fixture(autouse=True)
def _restore_settings() -> Iterator[None]:
    threads = asel.get_num_threads()
    threshold = numpy_kernel.get_parallel_threshold()
    stream = numpy_kernel.get_stream_threshold()
    yield
    asel.set_num_threads(threads)
    numpy_kernel.set_parallel_threshold(threshold)
    numpy_kernel.set_stream_threshold(stream)
    numpy_kernel.set_load_guard(True)


#: Instruction sets the loops were compiled for and this CPU supports.
ISAS: list[str] = numpy_kernel.isa_info()["usable"]


@pytest.fixture(params=ISAS)
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with the loops of each usable instruction set."""
    previous = numpy_kernel.isa_info()["current"]
    numpy_kernel.set_isa(request.param)
    yield request.param
    numpy_kernel.set_isa(previous)


@pytest.fixture
def no_where(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make np.where raise: the NumPy backend must not need it."""

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("np.where was called")

    monkeypatch.setattr(np, "where", boom)


# --------------------------------------------------------------------------
# The kernel is really used
# --------------------------------------------------------------------------


def test_kernel_counts_every_numpy_select() -> None:
    cond = random_cond((5, 7))
    then = random_array((5, 7), np.dtype(np.float32))
    before = numpy_kernel.kernel_stats()["calls"]
    asel.select(cond, then, then[::-1])
    asel.select(cond, then, 1.5)
    asel.select(cond[0], then, then, auto_broadcast="pdpd")
    asel.select(cond, then, then, out=np.empty_like(then))
    assert numpy_kernel.kernel_stats()["calls"] == before + 4


def test_numpy_backend_never_calls_np_where(no_where: None) -> None:
    cond = random_cond((4, 6))
    then = np.arange(24.0).reshape(4, 6)
    for call in (
        lambda: asel.select(cond, then, -then),
        lambda: asel.select(cond, then, 0.0),
        lambda: asel.select(cond, 1, 2, cond_broadcast="multidirectional"),
        lambda: asel.select(cond[:, :1], then, -then),
        lambda: asel.select(cond.T, then.T, -then.T),
        lambda: asel.select(cond[0], then, -then[0], auto_broadcast="pdpd"),
        lambda: asel.select(cond, then, -then, out=np.empty_like(then)),
    ):
        result = call()
        assert isinstance(result, np.ndarray)
    assert asel.backend_for(cond, then, then).name == "numpy"


def _counting_validate(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Count the core's validations on the fast path's misses (a hit makes none)."""
    calls: list[Any] = []
    validate = _fastpath.validate

    def counted(*args: Any) -> Any:
        calls.append(args)
        return validate(*args)

    monkeypatch.setattr(_fastpath, "validate", counted)
    return calls


def test_fast_path_serves_repeated_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The core's cache serves NumPy calls through the kernel's compiled parts: one
    validation per signature, then hits that run the kernel (its call counter moves)."""
    cond = random_cond((3, 4))
    then = np.ones((3, 4), np.float32)
    asel.select(cond, then, -then)  # the process's first select installs the fast path
    forget_decisions()
    validations = _counting_validate(monkeypatch)
    calls = numpy_kernel.kernel_stats()["calls"]
    for value in (-then, 2.0, 3):
        expected = oracle(cond, then, np.asarray(value, np.float32))
        for _ in range(5):
            assert_bits_equal(asel.select(cond, then, value), expected)
    assert numpy_kernel.kernel_stats()["calls"] == calls + 15
    assert len(validations) == 3  # one per signature: arrays, a float, an int


def test_import_loads_kernel_but_no_other_array_library() -> None:
    code = textwrap.dedent(
        """
        import sys
        import arrayselect
        assert "arrayselect.backends.shared._select_kernel" in sys.modules
        loaded = [m for m in ("jax", "torch", "dask", "cupy") if m in sys.modules]
        assert not loaded, loaded
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------
# Every item size, every cond width
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [0, 1, 7, 33, 1000])
@pytest.mark.usefixtures("isa")
def test_every_dtype_bit_exact(dtype: np.dtype[Any], n: int, no_where: None) -> None:
    cond = random_cond((n,))
    then, else_ = random_array((n,), dtype), random_array((n,), dtype)
    for _ in range(2):  # general path, then the cached fast path
        result = asel.select(cond, then, else_)
        assert result.dtype == dtype and result.shape == (n,)
        assert_bits_equal(result, oracle(cond, then, else_))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.usefixtures("isa")
def test_every_dtype_2d_layouts(dtype: np.dtype[Any]) -> None:
    then, else_ = random_array((9, 13), dtype), random_array((9, 13), dtype)
    cond = random_cond((9, 13))
    for c, t, e in [
        (cond, then, else_),
        (cond.T, then.T, else_.T),
        (cond[::2, ::3], then[::2, ::3], else_[::2, ::3]),
        (cond[::-1, ::-1], then[::-1, ::-1], else_[::-1, ::-1]),
        (cond[:, :1], then, else_),
        (cond, then[:, :1], else_[:1]),
    ]:
        result = asel.select(c, t, e)
        assert_bits_equal(result, oracle(c, t, e))


@pytest.mark.parametrize("cond_dtype", COND_DTYPES, ids=str)
@pytest.mark.parametrize(
    "dtype", ["uint8", "float16", "float32", "float64", "complex128", "clongdouble"]
)
@pytest.mark.usefixtures("isa")
def test_integer_conds_nonzero_is_true(cond_dtype: np.dtype[Any], dtype: str) -> None:
    cond = random_cond((257,), cond_dtype)
    then, else_ = random_array((257,), np.dtype(dtype)), random_array((257,), np.dtype(dtype))
    assert_bits_equal(asel.select(cond, then, else_), oracle(cond, then, else_))
    # strided and broadcast conds of every width too
    assert_bits_equal(
        asel.select(cond[::-2], then[::2], else_[::2]), oracle(cond[::-2], then[::2], else_[::2])
    )


def test_cond_nonzero_only_in_high_bytes() -> None:
    cond = np.array([256, 0, 1 << 16, 1 << 40, -(1 << 62)], dtype=np.int64)
    then, else_ = np.arange(5.0), -np.arange(5.0) - 1
    np.testing.assert_array_equal(asel.select(cond, then, else_), [0.0, -2.0, 2.0, 3.0, 4.0])
    cond16 = np.array([256, 0, 512], dtype=np.uint16)
    np.testing.assert_array_equal(asel.select(cond16, then[:3], else_[:3]), [0.0, -2.0, 2.0])


def test_int4_cond() -> None:
    cond = np.array([0, 1, -1, 7, -8, 0], dtype=ml_dtypes.int4)
    then, else_ = np.arange(6), -np.arange(6) - 1
    np.testing.assert_array_equal(asel.select(cond, then, else_), [-1, 1, 2, 3, 4, -6])


# --------------------------------------------------------------------------
# Layouts and the loop that runs them
# --------------------------------------------------------------------------


def _explain(cond: np.ndarray, then: np.ndarray, else_: np.ndarray, out: Any = None) -> Any:
    shape = np.broadcast_shapes(cond.shape, then.shape, else_.shape)
    return numpy_kernel.explain(cond, then, else_, out, shape, None, None, None)


def test_loop_choice() -> None:
    c = random_cond((40, 50))
    a = random_array((40, 50), np.dtype(np.float32))
    assert _explain(c, a, a)["loop"] == "contiguous"
    assert _explain(c, a, a)["shape"] == (2000,)  # coalesced
    assert _explain(c.T, a.T, a.T)["loop"] == "contiguous"  # memory order
    assert _explain(c[:, :1], a, a)["loop"] == "block"  # cond broadcast on the inner axis
    assert _explain(c, a[:, :1], a[:1])["loop"] == "contiguous-then-scalar"
    assert _explain(c, a, a[:1, :1])["loop"] == "contiguous-else-scalar"
    assert _explain(c[::2, ::2], a[::2, ::2], a[::2, ::2])["loop"] == "strided-step"
    assert _explain(c[::2, ::5], a[::2, ::5], a[::2, ::5])["loop"] == "strided"  # rows of 10
    b = a.copy()
    assert _explain(c, a, b, out=a)["loop"] == "in-place-then"
    assert _explain(c, a, b, out=b)["loop"] == "in-place-else"
    # out in F order, inputs in C order: out's order wins, the inputs are strided
    f_out = np.empty((50, 40), "f4").T
    assert _explain(c, a, b, out=f_out)["strides"][3] == (160, 4)  # outermost first
    # misaligned float32 data: the generic byte loop
    raw = np.zeros(2000 * 4 + 1, np.uint8)
    mis = raw[1:].view(np.float32).reshape(40, 50)
    assert not mis.flags.aligned
    assert _explain(c, mis, a)["loop"] == "generic"


def test_transposed_output_keeps_memory_order() -> None:
    c = random_cond((30, 20))
    a, b = random_array((30, 20), np.dtype("f8")), random_array((30, 20), np.dtype("f8"))
    result = asel.select(c.T, a.T, b.T)
    assert result.flags.f_contiguous
    assert_bits_equal(result, oracle(c.T, a.T, b.T))


@pytest.mark.usefixtures("isa")
def test_misaligned_and_odd_layouts() -> None:
    raw = RNG.integers(0, 256, 8 * 301 + 3, dtype=np.uint8)
    a = raw[1 : 1 + 8 * 300].view(np.float64)
    b = raw[3 : 3 + 8 * 300].view(np.float64)
    c = random_cond((300,), np.dtype(np.int32))
    assert_bits_equal(asel.select(c, a, b), oracle(c, a, b))
    # a structured-free odd item size through the generic loop (S3 bytes)
    s = random_array((300,), np.dtype("V3"))
    result = K.select(c, s, s[::-1], None, (300,), None, None, None)
    as_bytes = s.view(np.uint8).reshape(300, 3)
    expected = np.where((c != 0)[:, None], as_bytes, as_bytes[::-1])
    np.testing.assert_array_equal(result.view(np.uint8).reshape(300, 3), expected)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1,), (1, 1, 1), (2, 1, 3, 1, 4)])
@pytest.mark.usefixtures("isa")
def test_edge_shapes(shape: tuple[int, ...]) -> None:
    c = random_cond(shape)
    a, b = random_array(shape, np.dtype("i2")), random_array(shape, np.dtype("i2"))
    result = asel.select(c, a, b)
    assert result.shape == shape
    assert_bits_equal(result, oracle(c, a, b))


@pytest.mark.usefixtures("isa")
def test_many_dimensions() -> None:
    shape = (2,) * 20  # many dimensions: the hit path's key grows past its stack buffer
    c = random_cond(shape)
    a, b = random_array(shape, np.dtype("f4")), random_array(shape, np.dtype("f4"))
    for _ in range(2):
        assert_bits_equal(asel.select(c, a, b), oracle(c, a, b))
    axes = tuple(range(20))[::-1]
    ct, at, bt = c.transpose(axes), a.transpose(axes), b.transpose(axes)
    assert_bits_equal(asel.select(ct, at, bt), oracle(ct, at, bt))


@pytest.mark.usefixtures("isa")
def test_pdpd_aligned_views() -> None:
    then = random_array((2, 3, 4, 5), np.dtype("f4"))
    else_ = random_array((3, 1), np.dtype("f4"))
    cond = random_cond((3, 4), np.dtype("u2"))
    for _ in range(2):
        result = asel.select(cond, then, else_, auto_broadcast="pdpd", axis=1)
        expected = oracle(cond.reshape(1, 3, 4, 1), then, else_.reshape(1, 3, 1, 1))
        assert_bits_equal(result, expected)


# --------------------------------------------------------------------------
# Strided layouts: buffered blocks, tiles
# --------------------------------------------------------------------------


def _view(x: np.ndarray, how: str) -> np.ndarray:
    """A (rows, cols) view of a differently laid out base array."""
    rows, cols = x.shape
    if how == "contiguous":
        return x
    if how == "step2":
        base = np.zeros((rows, 2 * cols), x.dtype)
        base[:, ::2] = x
        return base[:, ::2]
    if how == "step3-reversed":
        base = np.zeros((rows, 3 * cols), x.dtype)
        base[:, ::-3] = x
        return base[:, ::-3]
    if how == "reversed":
        return x[::-1, ::-1].copy()[::-1, ::-1]
    if how == "transposed":
        return x.T.copy().T
    if how == "step2-transposed":
        base = np.zeros((cols, 2 * rows), x.dtype)
        base[:, ::2] = x.T
        return base[:, ::2].T
    raise ValueError(how)


LAYOUTS = ["contiguous", "step2", "step3-reversed", "reversed", "transposed", "step2-transposed"]


@pytest.mark.parametrize("dtype", ["u1", "u2", "f4", "f8", "c16"])
@pytest.mark.usefixtures("isa")
def test_strided_layouts_bit_exact(dtype: str) -> None:
    """Every combination of layouts of cond, then, else and out, on one and two threads."""
    rows, cols = 37, 601  # rows longer than a tile, not a multiple of anything
    dt = np.dtype(dtype)
    c0 = random_cond((rows, cols), np.dtype("u2") if dtype == "u1" else None)
    a0, b0 = random_array((rows, cols), dt), random_array((rows, cols), dt)
    expected = oracle(c0, a0, b0)
    rng = np.random.default_rng(3)
    same = [(layout,) * 4 for layout in LAYOUTS]  # one gather loop for cond, then and else
    pairs = [("contiguous", layout, layout, "contiguous") for layout in LAYOUTS]  # then+else
    for lc, la, lb, lo in same + pairs + [tuple(rng.choice(LAYOUTS, 4)) for _ in range(25)]:
        c, a, b = _view(c0, lc), _view(a0, la), _view(b0, lb)
        out = _view(np.zeros((rows, cols), dt), lo)
        numpy_kernel.set_load_guard(False)
        for threads in (1, 2):
            asel.set_num_threads(threads)
            numpy_kernel.set_parallel_threshold(0 if threads > 1 else None)
            assert_bits_equal(asel.select(c, a, b), expected)
            assert asel.select(c, a, b, out=out) is out
            assert_bits_equal(out, expected)


@pytest.mark.usefixtures("isa")
def test_strided_out_aliasing_an_input() -> None:
    """out is a strided then, else or cond itself: blocks are read before written."""
    c0 = random_cond((50, 300))
    a0, b0 = random_array((50, 300), np.dtype("f4")), random_array((50, 300), np.dtype("f4"))
    expected = oracle(c0, a0, b0)
    for which in ("then", "else"):
        base = np.zeros((50, 600), np.float32)
        view = base[:, ::2]
        view[...] = a0 if which == "then" else b0
        args = (c0, view, b0) if which == "then" else (c0, a0, view)
        assert asel.select(*args, out=view) is view
        assert_bits_equal(view, expected)
    # out is a strided cond (bool values, bool cond): every element depends on itself only
    base = np.zeros((50, 600), bool)
    cv = base[:, ::2]
    cv[...] = c0
    t, e = random_cond((50, 300)), random_cond((50, 300))
    want = np.where(c0, t, e)
    asel.select(cv, t, e, out=cv)
    np.testing.assert_array_equal(cv, want)


def test_strided_loop_choice_and_tiles() -> None:
    c = random_cond((600, 700))
    a = random_array((600, 700), np.dtype("f4"))
    step2 = _explain(c[:, ::2], a[:, ::2], a[:, ::2])
    assert step2["loop"] == "strided-step" and step2["tile"] == (0, 0)  # one pass
    rev = _explain(c[::-1, ::-1], a[::-1, ::-1], a[::-1, ::-1])
    assert rev["loop"] == "strided-buffered"  # a fresh output has positive strides
    assert rev["strides"][1] == (-4,)  # coalesced to one reversed axis
    mixed = _explain(c, a[:, ::-1], a)
    assert mixed["loop"] == "strided-buffered"
    # then transposed against cond/else: the transposed operands are visited in tiles
    at = random_array((700, 600), np.dtype("f4")).T
    tiled = _explain(c, at, a)
    assert tiled["loop"] == "strided-buffered"
    assert tiled["tile"][0] >= 2 and tiled["tile"][1] > 0
    assert _explain(c, a, a)["tile"] == (0, 0)
    # 16-byte items: the one-pass step loop; other strides element by element
    w = random_array((600, 700), np.dtype("c16"))
    assert _explain(c[:, ::2], w[:, ::2], w[:, ::2])["loop"] == "strided-step"
    assert _explain(c[:, ::5], w[:, ::5], w[:, ::5])["loop"] == "strided"


# --------------------------------------------------------------------------
# Python scalars: packed exactly as np.asarray(value, dtype) would
# --------------------------------------------------------------------------

SCALAR_CASES = [
    (1, "int8"),
    (-128, "int8"),
    (127, "int8"),
    (255, "uint8"),
    (2**63 - 1, "int64"),
    (2**64 - 1, "uint64"),
    (-(2**63), "int64"),
    (3, "float16"),
    (65504, "float16"),
    (2**24 + 1, "float32"),
    (2**60 + 1, "float64"),
    (0.1, "float16"),
    (0.1, "float32"),
    (-0.0, "float32"),
    (float("nan"), "float64"),
    (float("inf"), "float16"),
    (1e-45, "float32"),
    (1 + 2j, "complex64"),
    (0.1 - 0.3j, "complex128"),
    (True, "bool"),
    (5, "complex128"),
    (0.1, "longdouble"),
    (7, "clongdouble"),
]


@pytest.mark.parametrize(("value", "dtype"), SCALAR_CASES, ids=str)
@pytest.mark.usefixtures("isa")
def test_scalar_packing_matches_asarray(value: Any, dtype: str) -> None:
    cond = np.array([True, False, True])
    other = random_array((3,), np.dtype(dtype))
    expected = np.asarray(value, dtype=dtype).reshape(1)
    # long double has padding bytes that np.asarray leaves uninitialised: compare values
    check = (
        (lambda r: np.testing.assert_array_equal(r, expected))
        if np.dtype(dtype) in (np.dtype(np.longdouble), np.dtype(np.clongdouble))
        else (lambda r: assert_bits_equal(r, bits(expected)))
    )
    for _ in range(3):  # miss, then hits
        check(asel.select(cond, value, other)[:1])
        check(asel.select(cond, other, value)[1:2])


@pytest.mark.parametrize(
    ("value", "dtype"), [(0.1, "bfloat16"), (3, "bfloat16"), (448.0, "float8_e4m3fn"), (-2, "int4")]
)
def test_scalar_packing_ml_dtypes(value: Any, dtype: str) -> None:
    dt = np.dtype(getattr(ml_dtypes, dtype))
    cond = np.array([True, False])
    other = random_array((2,), dt)
    for _ in range(3):
        result = asel.select(cond, value, other)
        assert_bits_equal(result[:1], bits(np.asarray(value, dtype=dt).reshape(1)))


_SCALAR_PROBES: list[Any] = [
    0, 1, -1, 127, 128, -129, 255, 256, 2**53, 2**53 + 1, -(2**53) - 1, 2**63 - 1, 2**63,
    2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 0.5, -0.0, 65504.0, 65520.0, 3.4028235e38,
    3.5e38, 1e308, float("inf"), float("-inf"), float("nan"), True, False, 1 + 2j,
    complex(float("inf"), 0), complex(float("nan"), 0), 1e39 + 0j,
]  # fmt: skip


@pytest.mark.parametrize(
    "dtype", ["int8", "uint8", "int64", "uint64", "float16", "float32", "float64", "complex64",
              "bool"]
)  # fmt: skip
def test_scalar_hits_agree_with_cold_calls(dtype: str) -> None:
    """The hit path's check of a Python scalar (ScalarRange.admits and .prepare, in C
    on the range's fields) gives every value what a cold call gives: the same bits,
    or the same error and message."""
    cond = np.array([True, False])
    other = np.array([1, 0], dtype)

    def outcome(value: Any) -> tuple[str, str]:
        try:
            result = asel.select(cond, value, other)
        except Exception as exc:
            return type(exc).__name__, str(exc)
        return "result", bits(result).tobytes().hex()

    for value in _SCALAR_PROBES:
        forget_decisions()
        cold = outcome(value)
        forget_decisions()
        outcome(type(value)(0))  # warm this scalar type's entry (when it may take dtype)
        assert outcome(value) == cold, (dtype, value)


def test_scalar_range_errors_identical_on_hits() -> None:
    cond = np.array([True, False])
    then = np.array([1, 2], np.int8)
    asel.select(cond, then, 5)  # cache the plan
    with pytest.raises(asel.ScalarOverflowError) as hit:
        asel.select(cond, then, 300)
    forget_decisions()
    with pytest.raises(asel.ScalarOverflowError) as miss:
        asel.select(cond, then, 300)
    assert str(hit.value) == str(miss.value)
    half = np.array([1, 2], np.float16)
    asel.select(cond, 1.0, half)
    with pytest.raises(asel.ScalarOverflowError):
        asel.select(cond, 1e10, half)
    with pytest.raises(asel.ScalarOverflowError):
        asel.select(cond, 70000, half)
    np.testing.assert_array_equal(asel.select(cond, float("inf"), half), [np.inf, 2])


# --------------------------------------------------------------------------
# out=
# --------------------------------------------------------------------------


@pytest.mark.usefixtures("isa")
def test_out_layouts() -> None:
    c = random_cond((20, 30))
    a, b = random_array((20, 30), np.dtype("f4")), random_array((20, 30), np.dtype("f4"))
    expected = oracle(c, a, b)
    for out in (
        np.empty((20, 30), "f4"),
        np.empty((30, 20), "f4").T,
        np.empty((40, 60), "f4")[::2, ::-2],
    ):
        result = asel.select(c, a, b, out=out)
        assert result is out
        assert_bits_equal(out, expected)


@pytest.mark.parametrize("dtype", ["u1", "f4", "c16", "clongdouble"])
@pytest.mark.usefixtures("isa")
def test_out_is_then_or_else(dtype: str) -> None:
    c = random_cond((50, 40))
    a, b = random_array((50, 40), np.dtype(dtype)), random_array((50, 40), np.dtype(dtype))
    expected = oracle(c, a, b)
    temps = numpy_kernel.kernel_stats()["temporary_calls"]
    x = a.copy()
    assert asel.select(c, x, b, out=x) is x
    assert_bits_equal(x, expected)
    y = b.copy()
    assert asel.select(c, a, y, out=y) is y
    assert_bits_equal(y, expected)
    xt = a.T.copy().T  # F-ordered in place
    assert asel.select(c, xt, b, out=xt) is xt
    assert_bits_equal(xt, expected)
    assert numpy_kernel.kernel_stats()["temporary_calls"] == temps  # no temporary needed


@pytest.mark.usefixtures("isa")
def test_out_is_cond() -> None:
    c = random_cond((100,))
    a, b = random_cond((100,)), random_cond((100,))
    expected = np.where(c, a, b)
    x = c.copy()
    asel.select(x, a, b, out=x)
    np.testing.assert_array_equal(x, expected)


@pytest.mark.usefixtures("isa")
def test_out_partial_overlap_uses_a_temporary() -> None:
    base = random_array((1001,), np.dtype("f8"))
    cond = random_cond((1000,))
    for then_sl, else_sl, out_sl in [
        (slice(1, None), slice(None, -1), slice(None, -1)),
        (slice(None, -1), slice(1, None), slice(1, None)),
        (slice(1, None), slice(1, None), slice(None, -1)),
    ]:
        data = base.copy()
        expected = oracle(cond, data[then_sl].copy(), data[else_sl].copy())
        temps = numpy_kernel.kernel_stats()["temporary_calls"]
        asel.select(cond, data[then_sl], data[else_sl], out=data[out_sl])
        assert_bits_equal(data[out_sl], expected)
        assert numpy_kernel.kernel_stats()["temporary_calls"] == temps + 1
    # reversed view of the same memory
    data = base[:1000].copy()
    expected = oracle(cond, data[::-1].copy(), data.copy())
    asel.select(cond, data[::-1], data.copy(), out=data)
    assert_bits_equal(data, expected)
    # cond overlapping out through a different item size
    raw = RNG.integers(0, 2, 4000, dtype=np.uint8)
    c8 = raw[:1000]
    out = raw.view(np.int32)
    a = np.arange(1000, dtype=np.int32)
    expected_i = np.where(c8.copy() != 0, a, -a)
    asel.select(c8, a, -a, out=out)
    np.testing.assert_array_equal(out, expected_i)


def test_raw_entry_refuses_an_out_of_references() -> None:
    """The kernel writes raw bits: an object-dtype ``out`` of the right item size would
    get integers for pointers (a crash at its deallocation). The public API refuses it
    by dtype before; the raw entry checks it too, as it checks all that the loops need."""
    values = np.full(4, 0x4141, np.int64)
    out = np.full(4, None, object)
    with pytest.raises(TypeError, match="references"):
        K.select(np.ones(4, bool), values, values, out, (4,), None, None, None)
    assert all(x is None for x in out)


def test_out_errors_identical_on_hits() -> None:
    c = random_cond((4,))
    a = np.arange(4.0)
    asel.select(c, a, a, out=np.empty(4))
    for bad, error in [
        (np.empty(5), asel.SelectShapeError),
        (np.empty(4, "f4"), asel.SelectTypeError),
    ]:
        with pytest.raises(error) as hit:
            asel.select(c, a, a, out=bad)
        forget_decisions()
        with pytest.raises(error) as miss:
            asel.select(c, a, a, out=bad)
        assert str(hit.value) == str(miss.value)
    ro = np.empty(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        asel.select(c, a, a, out=ro)


def _out_layouts() -> dict[str, np.ndarray]:
    """Float64 ``out`` arrays of shape (4, 3), one per layout, fresh on each call:
    accepted ones (C, F, reversed, strided, interleaved but disjoint) and refused
    ones (read-only, a zero stride, elements sharing bytes)."""
    as_strided = np.lib.stride_tricks.as_strided
    read_only = np.empty((4, 3))
    read_only.flags.writeable = False
    read_only_f = np.empty((3, 4)).T
    read_only_f.flags.writeable = False
    return {
        "C": np.empty((4, 3)),
        "F": np.empty((3, 4)).T,
        "reversed": np.empty((4, 3))[::-1, ::-1],
        "strided": np.empty((8, 6))[::2, ::2],
        # offsets 0, 16, 32 | 8, 24, 40 | ...: rows interleave, elements disjoint
        "interleaved": as_strided(np.empty(13), (4, 3), (8, 32), writeable=True),
        "read-only": read_only,
        "read-only F": read_only_f,
        "zero stride": as_strided(np.empty(3), (4, 3), (0, 8), writeable=True),
        "shared bytes": as_strided(np.empty(16), (4, 3), (24, 4), writeable=True),
    }


def _outcome(c: np.ndarray, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> tuple[str, str]:
    """What ``select(c, a, b, out=out)`` did: its exception's type and message, or
    the bits it wrote."""
    try:
        result = asel.select(c, a, b, out=out)
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "result", bits(np.array(result)).tobytes().hex()


def test_out_verdict_cached_per_layout_same_as_cold() -> None:
    """C keeps the core's verdict on ``out`` per signature (the strides of an
    accepted writeable ``out``); every layout, after a warm cache of every other
    layout, gets exactly what it gets cold: same result or same error and message,
    inputs and ``out`` untouched."""
    c = random_cond((4, 3))
    a, b = random_array((4, 3), np.dtype("f8")), random_array((4, 3), np.dtype("f8"))
    a0, b0, c0 = a.copy(), b.copy(), c.copy()
    names = list(_out_layouts())
    cold = {}
    for name in names:
        forget_decisions()
        cold[name] = _outcome(c, a, b, _out_layouts()[name])
    expected = oracle(c, a, b)
    for name in ("C", "F", "reversed", "strided", "interleaved"):
        assert cold[name] == ("result", expected.tobytes().hex()), name
    for name in ("read-only", "read-only F", "zero stride", "shared bytes"):
        assert cold[name][0] == "SelectValueError", name
    for warm in ("C", "F", "reversed", "strided", "interleaved"):
        for probe in names:
            forget_decisions()
            for _ in range(2):  # a miss, then a hit: the verdict is cached
                asel.select(c, a, b, out=_out_layouts()[warm])
            out = _out_layouts()[probe]
            before = bits(out).copy()
            got = _outcome(c, a, b, out)
            assert got == cold[probe], (warm, probe)
            if got[0] != "result":
                np.testing.assert_array_equal(bits(out), before)
            for x, x0 in ((a, a0), (b, b0), (c, c0)):
                np.testing.assert_array_equal(bits(x), bits(x0))


def test_out_verdict_rechecks_what_can_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hit with an ``out`` of the cached layout validates nothing (the kernel's
    signature of ``out`` holds its strides and writeable flag, all the core's check
    reads); an ``out`` made read-only after the cache was warmed (the same object)
    is another signature, refused with the cold message and left as it was;
    writeable again, it is accepted again."""
    forget_decisions()
    c = random_cond((6,))
    a, b = random_array((6,), np.dtype("f4")), random_array((6,), np.dtype("f4"))
    out = np.zeros(6, np.float32)
    asel.select(c, a, b, out=out)
    validations = _counting_validate(monkeypatch)
    for _ in range(3):
        assert asel.select(c, a, b, out=out) is out
    assert not validations  # hits: the signature fixed the core's verdict on out
    assert_bits_equal(out, oracle(c, a, b))
    out[:] = 0
    out.flags.writeable = False
    with pytest.raises(asel.SelectValueError) as warm:
        asel.select(c, a, b, out=out)
    assert not out.any()
    assert len(validations) == 1  # another signature: validated, and refused
    forget_decisions()
    with pytest.raises(asel.SelectValueError) as cold:
        asel.select(c, a, b, out=out)
    assert str(warm.value) == str(cold.value)
    out.flags.writeable = True
    asel.select(c, a, b, out=np.empty(6, np.float32))  # warm again, another out
    assert asel.select(c, a, b, out=out) is out
    assert_bits_equal(out, oracle(c, a, b))


@pytest.mark.usefixtures("isa")
def test_out_overlapping_inputs_after_a_warm_cache() -> None:
    """Overlap of ``out`` with the inputs is not part of the cached verdict: on hits
    ``out`` may still be ``then`` or ``else`` (in place), and a partial overlap still
    goes through a temporary, with the same bits as cold."""
    base = random_array((1001,), np.dtype("f8"))
    cond = random_cond((1000,))
    forget_decisions()
    for _ in range(2):
        asel.select(cond, base[1:], base[:-1], out=np.empty(1000))
    data = base.copy()
    expected = oracle(cond, data[1:].copy(), data[:-1].copy())
    temps = numpy_kernel.kernel_stats()["temporary_calls"]
    asel.select(cond, data[1:], data[:-1], out=data[:-1])
    assert_bits_equal(data[:-1], expected)
    assert numpy_kernel.kernel_stats()["temporary_calls"] == temps + 1
    x, y = base[:1000].copy(), base[1:].copy()
    expected = oracle(cond, x, y)
    assert asel.select(cond, x, y, out=x) is x
    assert_bits_equal(x, expected)
    assert numpy_kernel.kernel_stats()["temporary_calls"] == temps + 1


def test_out_verdict_not_cached_for_another_out_layout() -> None:
    """Only NumPy's own ``shape`` and ``out_layout`` read what the kernel's signature
    holds: a subclass that reads them another way is not sure of the core's verdict
    on ``out``, so its cache checks ``out`` on every hit."""
    from arrayselect.backends.numpy_backend import NumpyBackend

    class OwnLayout(NumpyBackend):
        def out_layout(self, out: Any) -> Any:
            return super().out_layout(out)

    class OwnShape(NumpyBackend):
        def shape(self, x: Any) -> Any:
            return super().shape(x)

    class SameReads(NumpyBackend):
        name = "numpy-same"

    assert NumpyBackend.signature_holds_out_layout is (numpy_kernel.KERNEL_MISSING is None)
    assert not OwnLayout.signature_holds_out_layout
    assert not OwnShape.signature_holds_out_layout
    assert SameReads.signature_holds_out_layout is NumpyBackend.signature_holds_out_layout


# --------------------------------------------------------------------------
# Threads
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        "contig",
        "transposed",
        "strided",
        "block",
        "scalar",
        "broadcast",
        "inplace",
        "c16",
        "generic",
        "3d",
    ],
)
@pytest.mark.usefixtures("isa")
def test_threaded_equals_single_threaded(case: str) -> None:
    n, m = 517, 389
    c = random_cond((n, m))
    a, b = random_array((n, m), np.dtype("f4")), random_array((n, m), np.dtype("f4"))
    args: tuple[Any, ...]
    if case == "contig":
        args = (c, a, b)
    elif case == "transposed":
        args = (c.T, a.T, b.T)
    elif case == "strided":
        args = (c[::2, ::-3], a[::2, ::-3], b[::2, ::-3])
    elif case == "block":
        args = (c[:, :1], a, b)
    elif case == "scalar":
        args = (c, a, 2.5)
    elif case == "broadcast":
        args = (c, a[:, :1], b[:1])
    elif case == "c16":
        args = (c, random_array((n, m), np.dtype("c16")), random_array((n, m), np.dtype("c16")))
    elif case == "generic":
        raw = np.zeros(n * m * 4 + 1, np.uint8)
        mis = raw[1:].view(np.float32).reshape(n, m)
        mis[...] = a
        args = (c, mis, b)
    elif case == "3d":
        c3 = random_cond((7, 1, 3001))
        args = (
            c3,
            random_array((7, 11, 3001), np.dtype("i2")),
            random_array((3001,), np.dtype("i2")),
        )
    else:  # inplace
        args = (c, a, b)
    asel.set_num_threads(1)
    single = asel.select(*args)
    numpy_kernel.set_parallel_threshold(0)
    numpy_kernel.set_load_guard(False)  # threads even when other processes use the cores
    for threads in (2, 3, 5):
        asel.set_num_threads(threads)
        before = numpy_kernel.kernel_stats()["threaded_calls"]
        if case == "inplace":
            x = a.copy()
            multi = asel.select(c, x, b, out=x)
        else:
            multi = asel.select(*args)
        assert_bits_equal(multi, bits(single))
        if K.HAVE_THREADS:
            assert numpy_kernel.kernel_stats()["threaded_calls"] == before + 1


def test_concurrent_callers() -> None:
    asel.set_num_threads(2)
    numpy_kernel.set_parallel_threshold(0)
    c = random_cond((300_000,))
    a, b = random_array((300_000,), np.dtype("f8")), random_array((300_000,), np.dtype("f8"))
    expected = oracle(c, a, b)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                assert_bits_equal(asel.select(c, a, b), expected)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_set_num_threads_validation() -> None:
    asel.set_num_threads(3)
    assert asel.get_num_threads() == 3
    assert K.get_num_threads() == (3 if K.HAVE_THREADS else 1)
    for bad, error in [(0, ValueError), (257, ValueError), (1.5, TypeError), (True, TypeError)]:
        with pytest.raises(error):
            asel.set_num_threads(bad)  # type: ignore[arg-type]
    assert asel.get_num_threads() == 3


def _run(code: str, **env: str) -> str:
    full_env = {k: v for k, v in os.environ.items() if k != "ARRAYSELECT_NUM_THREADS"}
    full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip() + proc.stderr.strip()


def test_thread_count_from_environment() -> None:
    code = """
        import arrayselect, arrayselect.backends.shared._select_kernel as K
        print(arrayselect.get_num_threads(), K.get_num_threads())
    """
    out = _run(code, ARRAYSELECT_NUM_THREADS="3")
    assert out.split()[0] == "3"
    assert out.split()[1] == ("3" if K.HAVE_THREADS else "1")
    default = _run(code)
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert default.split()[0] == str(expected)
    bad = _run(code, ARRAYSELECT_NUM_THREADS="lots")
    assert "ignoring ARRAYSELECT_NUM_THREADS" in bad
    assert bad.split()[0] == str(expected)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs affinity masks")
def test_default_follows_affinity() -> None:
    code = """
        import os
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        import arrayselect
        print(arrayselect.get_num_threads())
    """
    assert _run(code) == "1"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_threads_work_after_fork() -> None:
    code = """
        import os, numpy as np, arrayselect as asel
        from arrayselect.backends.shared import kernel as numpy_kernel
        asel.set_num_threads(2)
        numpy_kernel.set_parallel_threshold(0)
        c = np.random.rand(200000) < 0.5
        a = np.random.rand(200000)
        expected = asel.select(c, a, -a)     # starts the pool in the parent
        pid = os.fork()
        if pid == 0:
            ok = np.array_equal(asel.select(c, a, -a), expected)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """
    assert _run(code) == "0"


# --------------------------------------------------------------------------
# Output pool and registry interplay
# --------------------------------------------------------------------------


def test_output_pool_reuses_large_blocks() -> None:
    asel.release_memory()
    n = numpy_kernel.pool_info()["min_block"] // 4 + 1000  # just above the smallest kept block
    c = random_cond((n,))
    a, b = random_array((n,), np.dtype("f4")), random_array((n,), np.dtype("f4"))
    expected = oracle(c, a, b)
    hits = numpy_kernel.pool_info()["hits"]
    for _ in range(3):
        result = asel.select(c, a, b)
        assert result.flags.owndata
        assert_bits_equal(result, expected)
        del result
    assert numpy_kernel.pool_info()["hits"] >= hits + 2
    asel.release_memory()
    assert numpy_kernel.pool_info()["cached_bytes"] == 0
    small = random_array((1000,), np.dtype("f4"))
    misses = numpy_kernel.pool_info()["misses"]
    asel.select(c[:1000], small, small)  # small outputs do not go through the pool at all
    assert numpy_kernel.pool_info()["misses"] == misses


def test_pool_can_be_disabled() -> None:
    out = _run(
        """
        import numpy as np, arrayselect as asel
        from arrayselect.backends.shared import kernel as numpy_kernel
        c = np.ones(5 * 10**6, bool); a = np.ones(5 * 10**6)
        for _ in range(3):
            r = asel.select(c, a, a); del r
        info = numpy_kernel.pool_info()
        print(info["limit"], info["hits"], info["cached_bytes"])
        """,
        ARRAYSELECT_POOL_MB="0",
    )
    assert out == "0 0 0"


def test_force_portable_bypasses_fast_path_and_kernel() -> None:
    c = random_cond((10,))
    a = np.arange(10.0)
    asel.select(c, a, -a)
    before = numpy_kernel.kernel_stats()["calls"]
    with asel.force_portable():
        assert asel.backend_for(c, a, a).name.startswith("portable")
        np.testing.assert_array_equal(asel.select(c, a, -a), np.where(c, a, -a))
    assert numpy_kernel.kernel_stats()["calls"] == before


class _Sub(np.ndarray):  # type: ignore[type-arg]
    pass


def test_subclasses_and_numpy_scalars_take_the_general_path() -> None:
    c = np.array([True, False])
    result = asel.select(c, np.float64(3.0), np.array([1.0, 2.0]))
    np.testing.assert_array_equal(result, [3.0, 2.0])
    sub = np.array([1.0, 2.0]).view(_Sub)
    before = numpy_kernel.kernel_stats()["calls"]
    result = asel.select(c.view(_Sub), sub, sub * 0)
    np.testing.assert_array_equal(np.asarray(result), [1.0, 0.0])
    assert numpy_kernel.kernel_stats()["calls"] == before + 1


def _layout(x: np.ndarray) -> tuple[Any, ...]:
    return (x.shape, x.dtype, x.strides, x.flags.writeable)


def test_signature_tells_arrays_apart_as_their_layouts_do() -> None:
    """The NumPy backend's signature (the kernel's reader) is equal for two arrays only
    when their shapes, dtypes, strides and writeable flags are, and for two views of
    one array always; what it cannot read as a type number's own dtype it signs as
    that tuple. Its raw form (the C hit path's) gives the same bytes."""
    x = np.zeros(1)
    backend = asel.backend_for(x > 0, x, x)
    sign = backend.signature
    assert sign is numpy_kernel.kernel_signature
    assert backend.raw_signature is numpy_kernel.kernel_raw_signature
    dtypes = [*_dtypes(), np.dtype(">f4"), np.dtype("U5"), np.dtype("M8[s]"), np.dtype("V3")]
    dtypes.append(np.dtype(np.float64, metadata={"unit": "m"}))
    probes = [np.zeros(s, d) for d in dtypes for s in [(), (1,), (3,), (1, 3), (3, 1), (2, 3)]]
    probes += [np.zeros((2, 3))[:, ::2], np.zeros((2, 3)).T, np.zeros((1,) * 40), _Sub((2,))]
    read_only = np.zeros((2, 3))
    read_only.flags.writeable = False
    probes += [read_only, np.zeros((3, 2))[::-1]]
    signs = [sign(x) for x in probes]
    for x, sx in zip(probes, signs, strict=True):
        read = type(sx) is bytes
        assert read == (x.dtype is np.dtype(x.dtype.type))
        if not read:
            assert sx == _layout(x)
        assert sign(x.view()) == sx
        for y, sy in zip(probes, signs, strict=True):
            if sx == sy:
                assert _layout(x) == _layout(y), (x, y)
