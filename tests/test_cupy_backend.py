"""GPU tests of the CuPy backend: skipped ("no CUDA GPU") without CuPy and a device.

References are ``cupy.where`` on raw-bit views (so any bit difference shows) and,
for the broadcasting modes, the NumPy backend on host copies. Run them with
``bash scripts/gpu_check.sh`` on a machine with an NVIDIA GPU.

Status: written in sessions without a GPU; not run yet (the select family's
tests at the end included).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import oracle
import pytest
from xp_helpers import ALL_DTYPES, numpy_dtype

import arrayselect as asel


def _gpu() -> tuple[Any, str]:
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install
        return None, f"no CUDA GPU (cupy not importable: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return None, f"no CUDA GPU ({exc})"
    if count < 1:
        return None, "no CUDA GPU (device count is 0)"
    return cupy, ""


cp, _REASON = _gpu()
pytestmark = pytest.mark.skipif(cp is None, reason=_REASON or "no CUDA GPU")

DTYPES = ALL_DTYPES
COND_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
RNG = np.random.default_rng(1234)


_np_dtype = numpy_dtype


def _device_bits(shape: tuple[int, ...], name: str) -> Any:
    """Random bits of dtype ``name`` on the GPU (NaN payloads and zeros included)."""
    dtype = _np_dtype(name)
    n = int(np.prod(shape, dtype=np.int64))
    raw = RNG.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    raw[: 8 * dtype.itemsize] = 0xFF
    raw[8 * dtype.itemsize : 16 * dtype.itemsize] = 0
    try:
        return cp.asarray(raw).view(dtype).reshape(shape)
    except Exception as exc:  # a CuPy without this dtype
        pytest.skip(f"this CuPy cannot hold {name} arrays ({exc})")


def _conds(shape: tuple[int, ...], name: str) -> Any:
    """Cond values; integer ones have true values with only the top bit set."""
    if name == "bool":
        return cp.asarray(RNG.integers(0, 2, size=shape).astype(bool))
    dtype = np.dtype(name)
    values = RNG.integers(0, 3, size=shape).astype(np.uint64)
    values = np.where(values == 2, np.uint64(1) << np.uint64(8 * dtype.itemsize - 1), values)
    return cp.asarray(values.astype(f"u{dtype.itemsize}").view(dtype))


def _host_bytes(a: Any) -> np.ndarray:
    a = cp.ascontiguousarray(a)
    return cp.asnumpy(a.reshape(-1).view(cp.uint8)).reshape((*a.shape, a.dtype.itemsize))


def _where_bits(c: Any, t: Any, e: Any) -> np.ndarray:
    """``cupy.where`` on raw-bit views, as host bytes: the reference."""
    size = t.dtype.itemsize
    c = c != 0
    if size <= 8:
        raw = np.dtype(f"u{size}")
        return _host_bytes(cp.where(c, t.view(raw), e.view(raw)))

    def pairs(x: Any) -> Any:  # complex128: two uint64 per element
        x = cp.ascontiguousarray(x)
        return x.reshape(-1).view(cp.uint64).reshape((*x.shape, 2))

    ref = cp.where(c[..., None], pairs(t), pairs(e))
    return cp.asnumpy(cp.ascontiguousarray(ref).reshape(-1).view(cp.uint8)).reshape(
        (*ref.shape[:-1], 16)
    )


def _assert_same_bits(got: Any, expected_bytes: np.ndarray) -> None:
    assert isinstance(got, cp.ndarray)
    np.testing.assert_array_equal(_host_bytes(got), expected_bytes)


def _host(a: Any) -> np.ndarray:
    """A host copy with the same dtype (moved as bytes: no CuPy dtype support needed)."""
    return _host_bytes(a).reshape(-1).view(a.dtype).reshape(a.shape)


def _np_bytes(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(np.uint8).reshape((*a.shape, a.dtype.itemsize))


@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_bit_exact_against_cupy_where(name: str):
    c = _conds((1000,), "bool")
    t, e = _device_bits((1000,), name), _device_bits((1000,), name)
    for _ in range(2):  # general path, then the cached fast path
        got = asel.select(c, t, e)
        assert got.dtype == t.dtype and got.shape == (1000,)
        _assert_same_bits(got, _where_bits(c, t, e))


@pytest.mark.parametrize("cond", COND_DTYPES)
def test_integer_conds_nonzero_is_true(cond: str):
    c = _conds((513,), cond)
    t, e = _device_bits((513,), "float32"), _device_bits((513,), "float32")
    _assert_same_bits(asel.select(c, t, e), _where_bits(c, t, e))


@pytest.mark.parametrize("name", ["uint8", "float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("cond", ["bool", "int8", "uint8"])
def test_large_contiguous_same_shape(name: str, cond: str):
    """Sizes where the 16-byte-word kernel is used (with a tail), aligned or not."""
    from arrayselect.backends.cupy_backend import backend as cupy_backend

    n = (1 << 20) + 13  # many waves of the grid-stride loop, and a tail
    c = _conds((n,), cond)
    t, e = _device_bits((n,), name), _device_bits((n,), name)
    for _ in range(2):
        _assert_same_bits(asel.select(c, t, e), _where_bits(c, t, e))
    assert t.dtype.itemsize in cupy_backend._vector_kernels.data
    # then shifted by one element: misaligned for 16-byte words, element-wise kernel
    t1 = _device_bits((n + 1,), name)[1:]
    _assert_same_bits(asel.select(c, t1, e), _where_bits(c, t1, e))
    # in place
    expected = _where_bits(c, t, e)
    assert asel.select(c, t, e, out=t) is t
    _assert_same_bits(t, expected)


def test_strides_and_broadcasts():
    n, m = 300, 200
    base = _device_bits((n, m), "float32")
    other = _device_bits((n, m), "float32")
    cases = [
        (_conds((n, m), "bool"), base, other),
        (_conds((n, m), "bool").T, base.T, other.T),  # transposed
        (_conds((n, m), "uint8")[::2, ::2], base[::2, ::2], other[1::2, 1::2]),  # step 2
        (_conds((n, m), "bool"), base[::-1], other[:, ::-1]),  # negative strides
        (_conds((n, 1), "bool"), base, other),  # cond row
        (_conds((n, m), "bool"), base[:, :1], other[:1, :]),  # outer product
        (_conds((n, m), "bool"), base, cp.asarray(np.float32(7))),  # 0-d else
        (_conds((), "bool"), base, other),  # 0-d cond
    ]
    for c, t, e in cases:
        for _ in range(2):
            _assert_same_bits(asel.select(c, t, e), _where_bits(c, t, e))
    empty = asel.select(cp.zeros((0, 3), bool), cp.zeros((0, 3)), 1.0)
    assert empty.shape == (0, 3)


def test_modes_match_the_numpy_backend():
    then = _device_bits((2, 3, 4, 5), "float64")
    cases = [
        (
            _conds((3, 4), "bool"),
            then,
            _device_bits((3, 1), "float64"),
            dict(auto_broadcast="pdpd", axis=1),
        ),
        (_conds((4, 5), "int32"), then, _device_bits((5,), "float64"), dict(auto_broadcast="pdpd")),
        (_conds((2, 1, 1, 1, 1), "bool"), then, 0.5, dict(cond_broadcast="multidirectional")),
        (
            _conds((2, 3, 4, 5), "bool"),
            then,
            _device_bits((2, 3, 4, 5), "float64"),
            dict(auto_broadcast="none"),
        ),
    ]
    for c, t, e, opts in cases:
        host_e = e if isinstance(e, float) else _host(e)
        expected = asel.select(_host(c), _host(t), host_e, **opts)
        for _ in range(2):
            got = asel.select(c, t, e, **opts)
            np.testing.assert_array_equal(_host_bytes(got), _np_bytes(expected))


@pytest.mark.parametrize(
    ("name", "scalar"),
    [
        ("float32", -0.0),
        ("float16", 1e-7),
        ("bfloat16", 3.14159),
        ("int8", -128),
        ("uint64", 2**64 - 1),
        ("complex128", 1.5 - 2j),
        ("bool", True),
    ],
)
def test_python_scalars_match_the_numpy_backend(name: str, scalar: Any):
    c = _conds((64,), "bool")
    t = _device_bits((64,), name)
    for _ in range(2):
        got = asel.select(c, t, scalar)
        expected = asel.select(_host(c), _host(t), scalar)
        np.testing.assert_array_equal(_host_bytes(got), _np_bytes(expected))
        got = asel.select(c, scalar, t)
        expected = asel.select(_host(c), scalar, _host(t))
        np.testing.assert_array_equal(_host_bytes(got), _np_bytes(expected))
    with pytest.raises(asel.ScalarOverflowError):
        asel.select(c, _device_bits((64,), "int8"), 300)


def test_out_aliasing_and_overlap():
    n = 4096
    c = _conds((n,), "bool")
    t, e = _device_bits((n,), "float64"), _device_bits((n,), "float64")
    expected = _where_bits(c, t, e)
    out = cp.empty(n, cp.float64)
    assert asel.select(c, t, e, out=out) is out
    _assert_same_bits(out, expected)
    tt, ee = t.copy(), e.copy()
    assert asel.select(c, tt, e, out=tt) is tt
    _assert_same_bits(tt, expected)
    assert asel.select(c, t, ee, out=ee) is ee
    _assert_same_bits(ee, expected)
    # partial overlap: then is out shifted by one element
    buf = cp.concatenate([t, t[-1:]])
    then_view, out_view = buf[1:], buf[:-1]
    expected_shifted = _where_bits(c, then_view.copy(), e)
    assert asel.select(c, then_view, e, out=out_view) is out_view
    _assert_same_bits(out_view, expected_shifted)
    # broadcast row read while written: cond (n, n) with then = out's first row
    sq = _device_bits((64, 64), "float32")
    row = sq[:1]
    c2 = _conds((64, 64), "bool")
    expected_sq = _where_bits(c2, row.copy(), sq.copy())
    asel.select(c2, row, sq, out=sq)
    _assert_same_bits(sq, expected_sq)
    # strided out
    big = cp.zeros(2 * n)
    asel.select(c, t, e, out=big[::2])
    _assert_same_bits(big[::2], expected)
    assert not big[1::2].any()
    with pytest.raises(asel.SelectTypeError):
        asel.select(c, t, e, out=cp.empty(n, cp.float32))
    repeating = cp.lib.stride_tricks.as_strided(cp.empty(1), (1, 3), (8, 0))
    with pytest.raises(asel.SelectValueError, match="stride 0"):
        asel.select(cp.ones((1, 3), bool), 1.0, cp.zeros((1, 3)), out=repeating)


def test_output_on_the_inputs_device():
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs 2 GPUs")
    with cp.cuda.Device(1):
        c, t, e = _conds((100,), "bool"), _device_bits((100,), "float32"), 0.0
    assert cp.cuda.Device().id == 0
    got = asel.select(c, t, e)
    assert got.device.id == 1
    with cp.cuda.Device(1):
        _assert_same_bits(got, _where_bits(c, t, cp.zeros((), cp.float32)))


def test_two_gpus_are_a_value_error():
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs 2 GPUs")
    c0 = _conds((10,), "bool")
    t0 = _device_bits((10,), "float32")
    with cp.cuda.Device(1):
        t1 = _device_bits((10,), "float32")
    for _ in range(2):
        with pytest.raises(ValueError, match=r"GPU 0 .* GPU 1|GPU 1 .* GPU 0"):
            asel.select(c0, t0, t1)
        with pytest.raises(ValueError):
            asel.select(c0, t0, t0, out=t1)


_SPIN = r"""
extern "C" __global__ void arrayselect_test_spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


def _spin(ms: float) -> None:
    """Keep the current stream busy for about ``ms`` milliseconds (one thread)."""
    kernel = cp.RawKernel(_SPIN, "arrayselect_test_spin")
    rt = cp.cuda.runtime
    khz = rt.deviceGetAttribute(rt.cudaDevAttrClockRate, cp.cuda.Device().id)
    kernel((1,), (1,), (np.int64(khz * ms),))


def _warm_up(c: Any, t: Any, e: Any) -> None:
    """Compile every kernel the timed calls use."""
    asel.select(c, t, e)
    asel.select(c, t, 0.0)
    asel.select(c, t, e, out=cp.empty_like(t))
    _spin(0.01)
    cp.cuda.Device().synchronize()


def test_current_stream_is_used():
    for n, step in ((1000, -1), ((1 << 20) + 5, 1)):  # element-wise (reversed else), 16-byte
        c = cp.zeros(n, bool)
        t, e = cp.ones(n, cp.float32), cp.zeros(n, cp.float32)[::step]
        _warm_up(c, t, e)
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            _spin(100)
            c.fill(True)  # ordered after the spin on `stream` only
            got = asel.select(c, t, e)  # must run after the fill: all ones
        stream.synchronize()
        assert bool(got.all()), "select did not run on the current stream"


def test_no_host_synchronization():
    n = (1 << 20) + 5
    c = _conds((n,), "bool")
    t, e = _device_bits((n,), "float32"), _device_bits((n,), "float32")
    expected = _where_bits(c, t, e)

    def calls() -> list[Any]:
        return [
            asel.select(c, t, e),  # 16-byte words
            asel.select(c[: n // 2], t[: n // 2], e[n // 2 - 1 :: -1]),  # strided
            asel.select(c, t, 0.0),  # Python scalar
            asel.select(c, t, e, out=cp.empty_like(t)),
            asel.select(c, t, 2.5, cond_broadcast="multidirectional"),
        ]

    # Every kernel compiled and loaded first (loading a module may synchronize), the
    # signatures cached: the timed calls are what a program's steady state makes.
    for _ in range(2):
        calls()
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        _spin(500)
        start = time.perf_counter()
        results = [*calls(), asel.select(c[:-1], t[:-1], e[:-1])]  # the last: a new signature
        elapsed = time.perf_counter() - start
        busy = not stream.done
    stream.synchronize()
    assert busy and elapsed < 0.25, f"select waited for the GPU ({elapsed:.3f} s)"
    _assert_same_bits(results[0], expected)
    _assert_same_bits(results[3], expected)


# ------------------------------------------------------------------ the select family


def _host(a: Any) -> np.ndarray:
    return cp.asnumpy(a)  # type: ignore[no-any-return]


def _same_as_oracle(got: Any, expected: np.ndarray) -> None:
    assert got.shape == expected.shape and got.dtype == expected.dtype
    raw = np.ascontiguousarray(expected).reshape(-1).view(np.uint8)
    np.testing.assert_array_equal(_host_bytes(got).reshape(-1), raw)


@pytest.mark.parametrize("name", DTYPES)
def test_select_n_every_dtype_against_the_oracle(name: str):
    which = cp.asarray(RNG.integers(0, 3, (64, 1)).astype(np.int8))
    cases = [_device_bits((64, 33), name), _device_bits((33,), name), _device_bits((), name)]
    got = asel.select_n(which, *cases)
    expected = oracle.oracle_select_n(cp.asnumpy(which), [_host(c) for c in cases])
    _same_as_oracle(got, expected)


@pytest.mark.parametrize("index", COND_DTYPES)
def test_select_n_index_dtypes_and_out(index: str):
    n = 2 if index == "bool" else 5
    which = cp.asarray(RNG.integers(0, n, (300, 7)).astype(index))
    cases = [_device_bits((300, 7), "float32") for _ in range(n)]
    expected = oracle.oracle_select_n(cp.asnumpy(which), [_host(c) for c in cases])
    out = cp.zeros((300, 7), cp.float32)
    assert asel.select_n(which, *cases, out=out) is out
    _same_as_oracle(out, expected)


def test_select_n_out_of_range_on_the_gpu():
    from arrayselect._base.errors import index_error

    which = cp.asarray(np.array([[1], [-3]], np.int32))
    cases = [cp.arange(8.0).reshape(2, 4) + 10 * k for k in range(3)]
    with pytest.raises(asel.SelectValueError) as info:
        asel.select_n(which, *cases)
    assert str(info.value) == str(index_error(-3, 3))
    out = cp.full((2, 4), 7.5)
    with pytest.raises(asel.SelectValueError):
        asel.select_n(which, *cases, out=out)
    assert bool((out == 7.5).all())  # untouched


@pytest.mark.parametrize("name", DTYPES)
def test_select_cases_every_dtype_against_the_oracle(name: str):
    conds = [_conds(s, c) for s, c in [((50, 1), "bool"), ((1, 9), "int16"), ((50, 9), "uint64")]]
    choices = [_device_bits((9,), name), _device_bits((50, 9), name), _device_bits((50, 1), name)]
    default = _device_bits((), name)
    got = asel.select_cases(conds, choices, default)
    expected = oracle.oracle_select_cases(
        [cp.asnumpy(c) for c in conds], [_host(c) for c in choices], _host(default)
    )
    _same_as_oracle(got, expected)
