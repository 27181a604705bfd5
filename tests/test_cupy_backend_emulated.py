"""The CuPy backend's Python logic, run on the CPU against ``_fake_cupy``.

``backends/cupy_backend/backend.py`` is loaded under a private module name with a CPU
stand-in for CuPy (see ``_fake_cupy``: NumPy arrays with fake device ids, an
element-wise kernel that refuses any dtype but the exact raw view, and a
RawKernel that runs the real vectorized kernel source compiled for the CPU).
``select`` calls go through the real core (validation, plans, the cached fast
path). Nothing here says anything about GPU performance or CuPy itself; the
GPU tests are ``test_cupy_backend.py``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import _fake_cupy
import arrayselect.backends
import numpy as np
import oracle
import pytest
from arrayselect.backends.cupy_backend import kernels as ck
from xp_helpers import ALL_DTYPES, numpy_dtype

import arrayselect as asel
from arrayselect._base.errors import index_error
from arrayselect._dispatch import registry as _registry
from arrayselect._validation.checks import check_devices

# The backend modules, wherever the package was installed from.
BACKENDS = Path(arrayselect.backends.__file__).resolve().parent
RNG = np.random.default_rng(7)
DTYPES = ALL_DTYPES
_dtype = numpy_dtype


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    fake = _fake_cupy.make(tmp_path_factory.mktemp("rawkernels"))
    saved = sys.modules.get("cupy")
    sys.modules["cupy"] = fake
    try:
        spec = importlib.util.spec_from_file_location(
            "arrayselect.backends.cupy_backend._backend_emulated",
            BACKENDS / "cupy_backend" / "backend.py",
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del sys.modules["cupy"]
        else:
            sys.modules["cupy"] = saved
    return SimpleNamespace(cupy=fake, module=module)


@pytest.fixture
def cp(emu: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The fake cupy, with a fresh backend wired into the registry and fast-path table."""
    fake = emu.cupy
    backend = emu.module.CupyBackend()
    real_library_of = _registry.library_of

    def library_of(x: object) -> str | None:
        return "cupy" if type(x) is fake.ndarray else real_library_of(x)

    monkeypatch.setattr(_registry, "library_of", library_of)
    monkeypatch.setitem(_registry._backends, ("cupy", False), backend)
    fast = backend._fast
    monkeypatch.setitem(_registry.fast_paths, fake.ndarray, backend.fast_path().call)
    fake.LAUNCHES.clear()
    fake.state.current = 0
    fake.backend = backend
    fake.fast = fast
    return fake  # type: ignore[no-any-return]


def _bits(n: int, dtype: np.dtype[Any]) -> np.ndarray:
    raw = RNG.integers(0, 256, size=n * dtype.itemsize, dtype=np.uint8)
    raw[: 4 * dtype.itemsize] = 0xFF  # NaN payloads
    return raw.view(dtype)


def _same_bits(got: Any, expected: np.ndarray) -> None:
    got = np.ascontiguousarray(np.asarray(got))
    expected = np.ascontiguousarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


def _on(cp: ModuleType, a: np.ndarray) -> Any:
    return cp.asarray(a)


@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_bit_exact(cp: ModuleType, name: str):
    dtype = _dtype(name)
    c = RNG.integers(0, 2, 100).astype(bool)
    t, e = _bits(100, dtype), _bits(100, dtype)
    expected = np.where(c, t, e)
    for _ in range(2):  # general path, then the cached fast path
        _same_bits(asel.select(_on(cp, c), _on(cp, t), _on(cp, e)), expected)
    # every size takes the 16-byte-word kernel where one exists (1-8 byte values)
    vectorized = dtype.itemsize in (1, 2, 4, 8)
    kinds = {launch[0] for launch in cp.LAUNCHES}
    assert kinds == ({"raw"} if vectorized else {"elementwise"})
    names = {launch[1] for launch in cp.LAUNCHES}
    name = "select_vec_v" if vectorized else "select_c1_v"
    assert names == {f"arrayselect_{name}{dtype.itemsize}"}


@pytest.mark.parametrize("cond_name", ["int8", "int16", "int32", "int64", "uint16", "uint64"])
def test_integer_conds_nonzero_is_true_without_a_cast(cp: ModuleType, cond_name: str):
    cdt = np.dtype(cond_name)
    raw = RNG.integers(0, 3, 64).astype(np.uint64)
    raw = np.where(raw == 2, np.uint64(1) << np.uint64(8 * cdt.itemsize - 1), raw)  # top bit only
    c = raw.astype(f"u{cdt.itemsize}").view(cdt)
    t, e = np.arange(64, dtype=np.float32), -np.arange(64, dtype=np.float32)
    _same_bits(asel.select(_on(cp, c), _on(cp, t), _on(cp, e)), np.where(c != 0, t, e))
    # a 1-byte cond takes the 16-byte-word kernel, which tests the bytes with != 0 too
    name = "select_vec_v4" if cdt.itemsize == 1 else f"select_c{cdt.itemsize}_v4"
    assert cp.LAUNCHES[-1][1] == f"arrayselect_{name}"


def test_python_scalars_match_the_numpy_backend(cp: ModuleType):
    c = np.array([True, False, True, False])
    for dtype, scalar in [
        ("float32", -0.0),
        ("float16", 1e-7),
        ("int8", -128),
        ("uint64", 2**64 - 1),
        ("complex64", 1.5 - 2j),
        ("bool", True),
        ("bfloat16", 3.14159),
    ]:
        t = _bits(4, _dtype(dtype))
        expected = asel.select(c, t, scalar)
        for _ in range(2):
            _same_bits(asel.select(_on(cp, c), _on(cp, t), scalar), expected)
            _same_bits(asel.select(_on(cp, c), scalar, _on(cp, t)), asel.select(c, scalar, t))
    # two Python scalars: default dtypes, general path (0-d arrays filled on the device)
    multi = {"cond_broadcast": "multidirectional"}
    _same_bits(asel.select(_on(cp, c), 1, 2, **multi), asel.select(c, 1, 2, **multi))
    _same_bits(asel.select(_on(cp, c), 1.5, -0.0, **multi), asel.select(c, 1.5, -0.0, **multi))
    # an out-of-range scalar on a cached signature: the general path's error
    t8 = _on(cp, np.zeros(4, np.int8))
    asel.select(_on(cp, c), t8, 5)
    with pytest.raises(asel.ScalarOverflowError, match=r"else=300 is out of the range"):
        asel.select(_on(cp, c), t8, 300)


def test_strides_broadcasts_and_modes(cp: ModuleType):
    base = _bits(6 * 8, np.dtype("float32")).reshape(6, 8)
    cb = RNG.integers(0, 2, (6, 8)).astype(bool)
    gb, cgb = _on(cp, base), _on(cp, cb)
    cases = [
        (cgb, gb.T.T, gb[::-1], cb, base, base[::-1]),
        (cgb[:, :1], gb[::2].repeat(2, 0), gb, cb[:, :1], base[::2].repeat(2, 0), base),
        (cgb.T, gb.T, gb.T[:, ::-1], cb.T, base.T, base.T[:, ::-1]),
        (
            cgb[::2, ::2],
            gb[::2, ::2],
            gb[1::2, 1::2],
            cb[::2, ::2],
            base[::2, ::2],
            base[1::2, 1::2],
        ),
        (cgb[:, :1], gb[:, :1], gb[:1, :], cb[:, :1], base[:, :1], base[:1, :]),
    ]
    for c, t, e, hc, ht, he in cases:
        for _ in range(2):
            _same_bits(asel.select(c, t, e), np.where(hc, ht, he))
    # pdpd: cond (3,) fitted at axis 1 of then (2, 3, 4); else (3, 1) likewise
    then = np.arange(24.0).reshape(2, 3, 4)
    c3 = np.array([True, False, True])
    else_ = np.array([[10.0], [20.0], [30.0]])
    expected = asel.select(c3, then, else_, auto_broadcast="pdpd", axis=1)
    for _ in range(2):
        got = asel.select(_on(cp, c3), _on(cp, then), _on(cp, else_), auto_broadcast="pdpd", axis=1)
        _same_bits(got, expected)
    # multidirectional: cond enlarges the output
    c4 = np.ones((2, 1, 1, 1), bool)
    got = asel.select(_on(cp, c4), _on(cp, then), 0.0, cond_broadcast="multidirectional")
    assert got.shape == (2, 2, 3, 4)
    # 0-d and zero-size
    _same_bits(asel.select(_on(cp, np.array(True)), _on(cp, np.array(1.5)), 2.5), np.array(1.5))
    n_launches = len(cp.LAUNCHES)
    z = asel.select(_on(cp, np.zeros((0, 3), bool)), _on(cp, np.zeros((0, 3))), 1.0)
    assert z.shape == (0, 3) and len(cp.LAUNCHES) == n_launches  # nothing launched


def test_out_aliasing(cp: ModuleType):
    c = RNG.integers(0, 2, 50).astype(bool)
    t, e = _bits(50, np.dtype("float64")), _bits(50, np.dtype("float64"))
    expected = np.where(c, t, e)
    # out is then exactly: written in place, no temporary
    gt = _on(cp, t)
    assert asel.select(_on(cp, c), gt, _on(cp, e), out=gt) is gt
    _same_bits(gt, expected)
    assert np.shares_memory(cp.LAUNCHES[-1][3], gt)
    # out is else, through the cached signature too
    for _ in range(2):
        ge = _on(cp, e)
        assert asel.select(_on(cp, c), _on(cp, t), ge, out=ge) is ge
        _same_bits(ge, expected)
    # partial overlap: then shifted by one element against out -> via a temporary
    buf = _on(cp, np.concatenate([t, t[-1:]]))
    then_view, out_view = buf[1:], buf[:-1]
    host_then = np.asarray(then_view).copy()
    assert asel.select(_on(cp, c), then_view, _on(cp, e), out=out_view) is out_view
    _same_bits(out_view, np.where(c, host_then, e))
    assert not np.shares_memory(cp.LAUNCHES[-1][3], buf)
    # strided out
    big = _on(cp, np.zeros(100))
    asel.select(_on(cp, c), _on(cp, t), _on(cp, e), out=big[::2])
    _same_bits(big[::2], expected)
    _same_bits(big[1::2], np.zeros(50))
    # an out that repeats elements is refused
    rep = _on(cp, np.zeros((1, 50))).repeat(1, 0)
    bad = np.lib.stride_tricks.as_strided(rep, shape=(3, 50), strides=(0, 8), subok=True)
    with pytest.raises(asel.SelectValueError, match="stride 0 along dimension 0"):
        asel.select(_on(cp, np.ones((3, 50), bool)), 1.0, _on(cp, np.zeros((3, 50))), out=bad)
    # wrong dtype / shape: the core's errors
    with pytest.raises(asel.SelectTypeError, match="out has dtype"):
        asel.select(_on(cp, c), _on(cp, t), _on(cp, e), out=_on(cp, np.zeros(50, np.float32)))
    with pytest.raises(asel.SelectShapeError, match="out has shape"):
        asel.select(_on(cp, c), _on(cp, t), _on(cp, e), out=_on(cp, np.zeros(51)))


@pytest.mark.parametrize("value", ["uint8", "float16", "float32", "float64", "complex64"])
@pytest.mark.parametrize("cond", ["bool", "int8", "uint8"])
def test_vectorized_path_dispatch(cp: ModuleType, value: str, cond: str):
    cp.backend.vector_min_size = 256
    n = 1000 + 3  # a tail for every lane count
    dtype = np.dtype(value)
    c = (RNG.integers(0, 2, n) * 3).astype(cond)
    t, e = _bits(n, dtype), _bits(n, dtype)
    expected = np.where(c != 0, t, e)
    for _ in range(2):
        _same_bits(asel.select(_on(cp, c), _on(cp, t), _on(cp, e)), expected)
        kind, name, _, _, grid, block = cp.LAUNCHES[-1]
        assert kind == "raw" and name == f"arrayselect_select_vec_v{dtype.itemsize}"
        lanes = 16 // dtype.itemsize
        assert (grid, block) == ck.vector_launch(n, lanes)
    # in place (out is then exactly) stays vectorized
    gt = _on(cp, t)
    asel.select(_on(cp, c), gt, _on(cp, e), out=gt)
    _same_bits(gt, expected)
    assert cp.LAUNCHES[-1][0] == "raw"
    # misaligned then (offset by one element), a broadcast, a strided input: not the
    # word kernel; the strided one once the signature is cached (the first call of a
    # new signature runs the general path's element-wise kernel)
    strided = f"arrayselect_select_strided_c{np.dtype(cond).itemsize}_v{dtype.itemsize}_aa"
    for tt, ee in [
        (_on(cp, np.concatenate([t[:1], t]))[1:], _on(cp, e)),
        (_on(cp, t), _on(cp, e[:1])),
        (_on(cp, np.repeat(t, 2))[::2], _on(cp, e)),
    ]:
        for _ in range(2):
            got = asel.select(_on(cp, c), tt, ee)
            _same_bits(got, np.where(c != 0, np.asarray(tt), np.asarray(ee)))
            assert cp.LAUNCHES[-1][1] in (strided, f"arrayselect_select_c1_v{dtype.itemsize}")
        if dtype.itemsize < 16:
            assert cp.LAUNCHES[-1][1] == strided
    # below the threshold: element-wise
    asel.select(_on(cp, c[:255]), _on(cp, t[:255]), _on(cp, e[:255]))
    assert cp.LAUNCHES[-1][0] == "elementwise"


def test_fast_path_launches_without_layouts(
    cp: ModuleType, emu: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
):
    """A cached same-shape call launches the word kernel directly (no layout objects,
    no raw views); a call on another device than the current one, or with ``out``,
    takes the general path."""
    n = 301
    c = RNG.integers(0, 2, n).astype(bool)
    t, e = _bits(n, np.dtype(np.float32)), _bits(n, np.dtype(np.float32))
    expected = np.where(c, t, e)
    _same_bits(asel.select(_on(cp, c), _on(cp, t), _on(cp, e)), expected)  # caches

    def no_layouts(x: Any) -> None:
        raise AssertionError("the fast path built a layout")

    c2, t2, e2 = RNG.integers(0, 2, n).astype(bool), _bits(n, t.dtype), _bits(n, t.dtype)
    with monkeypatch.context() as patch:
        patch.setattr(emu.module, "_layout", no_layouts)
        cp.LAUNCHES.clear()
        got = asel.select(_on(cp, c2), _on(cp, t2), _on(cp, e2))
    _same_bits(got, np.where(c2, t2, e2))
    assert [launch[:3] for launch in cp.LAUNCHES] == [("raw", "arrayselect_select_vec_v4", 0)]
    with cp.cuda.Device(1):
        c1, t1, e1 = _on(cp, c), _on(cp, t), _on(cp, e)
    got = asel.select(c1, t1, e1)
    assert got.data.device_id == 1 and cp.LAUNCHES[-1][2] == 1
    _same_bits(got, expected)


@pytest.mark.parametrize("value", ["bool", "uint8", "float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("cond", ["bool", "int16", "uint64"])
def test_strided_kernel_on_cached_broadcast_and_strided_calls(
    cp: ModuleType, value: str, cond: str
):
    """Cached calls whose operands broadcast or are strided run the strided kernel
    (at most two merged dimensions), Python-scalar operands passed by value as raw
    bits; more dimensions, and the first call of a signature, the element-wise one."""
    dtype = _dtype(value)
    n, m = 7, 5

    def bits(*shape: int) -> np.ndarray:
        return _bits(int(np.prod(shape)), dtype).reshape(shape)

    def conds(*shape: int) -> np.ndarray:
        return (RNG.integers(0, 3, shape) * 2).astype(cond)

    big, big_c = bits(2 * n, 2 * m), conds(2 * n, 2 * m)
    scalar = {"bool": True, "uint8": 200}.get(value, -0.0)
    same = (slice(None), slice(None))

    def T(x: Any) -> Any:
        return x.T

    # (host array or scalar, view taken on the "device": strides survive the transfer)
    cases: list[tuple[tuple[Any, Any], ...]] = [
        ((conds(n, 1), None), (bits(n, m), None), (bits(n, m), None)),  # cond column
        ((conds(m), None), (bits(n, m), None), (bits(n, m), None)),  # cond row
        ((conds(n, m), None), (bits(n, 1), None), (bits(1, m), None)),  # outer
        ((conds(m, n), T), (bits(m, n), T), (bits(m, n), T)),  # transposed
        (
            (big_c, (slice(None, None, 2),) * 2),
            (big, (slice(None, None, 2),) * 2),
            (big, (slice(1, None, 2),) * 2),
        ),  # step 2
        (
            (conds(n, m), (slice(None, None, -1),)),
            (bits(n, m), (slice(None), slice(None, None, -1))),
            (bits(n, m), same),
        ),  # negative strides
        ((conds(n, m), None), (bits(n, m), None), (scalar, None)),  # scalar else
        ((conds(n, m), None), (scalar, None), (bits(m, n), T)),  # scalar then
        ((conds(3, n, m), None), (bits(3, n, m), None), (bits(n, m), None)),  # dims that merge
    ]

    def place(x: Any, view: Any) -> tuple[Any, Any]:
        if not isinstance(x, np.ndarray):
            return x, np.asarray(x, dtype)
        host = x if view is None else (view(x) if callable(view) else x[view])
        device = _on(cp, x)
        device = device if view is None else (view(device) if callable(view) else device[view])
        return device, host

    for case in cases:
        (c, hc), (t, ht), (e, he) = (place(x, view) for x, view in case)
        expected = np.where(hc != 0, ht, he).astype(dtype)
        for _ in range(2):
            _same_bits(asel.select(c, t, e), expected)
        kind, name = cp.LAUNCHES[-1][:2]
        assert kind == "raw" and name.startswith("arrayselect_select_strided_"), (name, hc.shape)
    # three dimensions that do not merge: the element-wise kernel, correct
    c, t, e = conds(3, n, 1), bits(1, n, m), bits(3, 1, m)
    for _ in range(2):
        _same_bits(asel.select(_on(cp, c), _on(cp, t), _on(cp, e)), np.where(c != 0, t, e))
        assert cp.LAUNCHES[-1][0] == "elementwise"


def test_16_byte_scalars_reach_the_kernel_as_two_uint64_halves(cp: ModuleType):
    """A complex128 Python scalar becomes a 0-d device array filled as two uint64
    halves (CuPy passed a complex128 kernel scalar as a number and lost -0.0's sign
    on a GPU); its bits, signed zeros included, reach the output."""
    c = np.array([True, False, True, False])
    e = _bits(4, np.dtype(np.complex128))
    for value in (-0.0, complex(-0.0, -0.0), complex(1.5, -0.0)):
        expected = np.where(c, np.asarray(value, np.complex128), e)
        for _ in range(2):
            _same_bits(asel.select(_on(cp, c), value, _on(cp, e)), expected)
        scalar = cp.backend.scalar_array(value, np.complex128, _on(cp, c))
        assert scalar.shape == () and scalar.dtype == np.complex128
        _same_bits(scalar, np.asarray(value, np.complex128))


@pytest.mark.parametrize("value", ["uint8", "float16", "float32", "float64"])
@pytest.mark.parametrize("n_conds", [1, 3, 4])
def test_select_cases_word_kernel(cp: ModuleType, value: str, n_conds: int):
    """Same-shape C-contiguous operands with 1-byte conditions and a scalar default
    take the select_cases word kernel (a tail included); a broadcast condition the
    element-wise one. Against NumPy's select."""
    dtype = np.dtype(value)
    n = 1003
    cp.backend.cases_vector_min_size = 1000  # the default, 2**24, is too large to emulate
    conds = [RNG.integers(0, 3, n) == 0 for _ in range(n_conds)]
    choices = [_bits(n, dtype) for _ in range(n_conds)]
    default = 7 if dtype.kind == "u" else 7.5  # a Python scalar: the choices keep their dtype
    expected = np.select(conds, choices, np.asarray(default, dtype))
    got = asel.select_cases([_on(cp, c) for c in conds], [_on(cp, x) for x in choices], default)
    _same_bits(got, expected)
    assert cp.LAUNCHES[-1][:2] == (
        "raw",
        f"arrayselect_select_cases_vec{n_conds}_v{dtype.itemsize}",
    )
    cp.backend.cases_vector_min_size = 1004  # below the threshold: element-wise
    got = asel.select_cases([_on(cp, c) for c in conds], [_on(cp, x) for x in choices], default)
    _same_bits(got, expected)
    assert cp.LAUNCHES[-1][0] == "elementwise"
    cp.backend.cases_vector_min_size = 1000
    conds[0] = conds[0][:1]  # broadcast: the element-wise kernel
    expected = np.select(np.broadcast_arrays(*conds), choices, np.asarray(default, dtype))
    got = asel.select_cases([_on(cp, c) for c in conds], [_on(cp, x) for x in choices], default)
    _same_bits(got, expected)
    assert cp.LAUNCHES[-1][0] == "elementwise"


def test_no_vectorized_kernel_for_wide_conds_or_16_byte_values(cp: ModuleType):
    cp.backend.vector_min_size = 16
    n = 64
    for cond, value in [("int16", "float32"), ("bool", "complex128")]:
        c = RNG.integers(0, 2, n).astype(cond)
        t, e = _bits(n, np.dtype(value)), _bits(n, np.dtype(value))
        _same_bits(asel.select(_on(cp, c), _on(cp, t), _on(cp, e)), np.where(c != 0, t, e))
        assert cp.LAUNCHES[-1][0] == "elementwise"


def test_devices(cp: ModuleType):
    c = np.array([True, False, True])
    t = np.arange(3.0)
    with cp.cuda.Device(1):
        c1, t1 = _on(cp, c), _on(cp, t)
    assert c1.data.device_id == 1 and cp.cuda.runtime.getDevice() == 0
    for _ in range(2):
        got = asel.select(c1, t1, -1.0)
        assert got.data.device_id == 1  # the inputs' device, not the current one
        assert cp.LAUNCHES[-1][2] == 1
        assert cp.cuda.runtime.getDevice() == 0  # restored
        _same_bits(got, np.where(c, t, -1.0))
    got = asel.select(c1, 1.0, 2.0, cond_broadcast="multidirectional")  # made on cond's device
    assert got.data.device_id == 1
    t0 = _on(cp, t)
    for _ in range(2):  # general path, then the same signature on the fast path
        with pytest.raises(asel.SelectValueError, match="cond is on GPU 1 and then is on GPU 0"):
            asel.select(c1, t0, t1)
    with pytest.raises(asel.SelectValueError, match="on GPU 0"):
        asel.select(c1, t1, t1, out=_on(cp, np.zeros(3)))


def test_kernels_are_created_once(cp: ModuleType, emu: SimpleNamespace):
    cache = emu.module._elementwise_kernels.data
    c = _on(cp, np.array([True, False]))
    for name in DTYPES:
        if name == "bfloat16":
            continue
        a = _on(cp, np.zeros(2, name))
        asel.select(c, a, a)
    created = cp.state.elementwise_created
    for name in DTYPES:
        if name == "bfloat16":
            continue
        a = _on(cp, np.ones(2, name))
        asel.select(c, a, a)
    assert cp.state.elementwise_created == created  # all cached
    # one kernel per (cond, value) item-size pair at most, whatever earlier tests made
    # (the 1-8 byte values above take the word kernel; complex128 the element-wise one)
    assert set(cache) <= {(c, v) for c in (1, 2, 4, 8) for v in (1, 2, 4, 8, 16)}
    assert (1, 16) in cache


def test_scalar_array_and_queries(cp: ModuleType):
    backend = cp.backend
    with cp.cuda.Device(2):
        like = _on(cp, np.zeros(3))
    a = backend.scalar_array(-0.0, np.dtype("float32"), like)
    assert a.shape == () and a.dtype == np.float32 and a.data.device_id == 2
    assert np.asarray(a).view(np.uint32) == 0x80000000
    b = backend.scalar_array(7, backend.default_dtype(int, like), like)
    assert b.dtype == np.int64 and int(b) == 7
    assert backend.device_of(like) == 2
    check_devices(backend, [("cond", like), ("then", like)])
    with cp.cuda.Device(0):
        other = _on(cp, np.zeros(3))
    with pytest.raises(asel.SelectValueError, match="then is on GPU 0"):
        check_devices(backend, [("cond", like), ("then", other)])


# ------------------------------------------------------------------ the select family
# The family's kernels are *run* here: the fake compiles each one's real C operation
# with the host compiler (see _fake_cupy), so these check the CUDA code's logic
# against the index-arithmetic oracle, bit for bit.


def _family_launches(cp: ModuleType) -> list[str]:
    return [launch[1] for launch in cp.LAUNCHES]


@pytest.mark.parametrize("name", DTYPES)
def test_select_n_every_dtype_one_kernel(cp: ModuleType, name: str):
    dtype = _dtype(name)
    which = RNG.integers(0, 3, (4, 1)).astype(np.int8)
    cases = [_bits(24, dtype).reshape(4, 6), _bits(6, dtype), _bits(1, dtype).reshape(())]
    expected = oracle.oracle_select_n(which, cases)
    for _ in range(2):
        cp.LAUNCHES.clear()
        got = asel.select_n(_on(cp, which), *(_on(cp, c) for c in cases))
        assert type(got) is cp.ndarray
        _same_bits(got, expected)
        assert _family_launches(cp) == [f"arrayselect_select_n3_int8_v{dtype.itemsize}"]


@pytest.mark.parametrize(
    "index", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
)
def test_select_n_index_dtypes_without_a_cast(cp: ModuleType, index: str):
    n = 2 if index == "bool" else 5
    which = RNG.integers(0, n, (3, 7)).astype(index)
    cases = [_bits(21, np.dtype("float32")).reshape(3, 7) for _ in range(n)]
    cp.LAUNCHES.clear()
    got = asel.select_n(_on(cp, which), *(_on(cp, c) for c in cases))
    _same_bits(got, oracle.oracle_select_n(which, cases))
    assert _family_launches(cp) == [f"arrayselect_select_n{n}_{index}_v4"]
    # Python scalars take the cases' dtype, as in select
    got = asel.select_n(_on(cp, which), -0.0, *(_on(cp, c) for c in cases[1:]))
    scalar = np.array(-0.0, np.float32).reshape(1, 1)
    _same_bits(got, oracle.oracle_select_n(which, [scalar, *cases[1:]]))


@pytest.mark.parametrize(("index", "bad"), [("int16", -1), ("int64", 3), ("uint64", 2**64 - 1)])
def test_select_n_out_of_range_raises_after_the_pass(cp: ModuleType, index: str, bad: int):
    dtype = np.dtype(index)
    # which (2, 1) broadcast against cases (2, 4): the bad index at which[1, 0] is
    # output position 4 and later; another bad value further on is not the first.
    which = np.array([[1], [0]], dtype=dtype)
    which[1, 0] = np.array(bad).astype(dtype)
    cases = [_on(cp, np.arange(8.0).reshape(2, 4) + 10 * k) for k in range(3)]
    message = str(index_error(bad, 3))
    for _ in range(2):  # cold and warm
        cp.LAUNCHES.clear()
        with pytest.raises(asel.SelectValueError) as info:
            asel.select_n(_on(cp, which), *cases)
        assert str(info.value) == message
        # one pass: the select kernel itself found it
        assert _family_launches(cp) == [f"arrayselect_select_n3_{index}_v8"]
        out = _on(cp, np.full((2, 4), 7.5))
        cp.LAUNCHES.clear()
        with pytest.raises(asel.SelectValueError) as info:
            asel.select_n(_on(cp, which), *cases, out=out)
        assert str(info.value) == message
        _same_bits(out, np.full((2, 4), 7.5))  # out untouched: only the check ran
        assert _family_launches(cp) == [f"arrayselect_index_check3_{index}"]
    # the first bad index in C order is named
    many = np.array([[0, 9, -4, 2]], dtype=np.int8)
    with pytest.raises(asel.SelectValueError) as info:
        asel.select_n(_on(cp, many), *cases[:1], 1.0, 2.0)
    assert str(info.value) == str(index_error(9, 3))


def test_select_n_out(cp: ModuleType):
    which = RNG.integers(0, 3, 40).astype(np.uint8)
    host = [_bits(40, np.dtype("float64")) for _ in range(3)]
    expected = oracle.oracle_select_n(which, host)
    # a fresh out, a strided out, out that is a case exactly (in place)
    out = _on(cp, np.zeros(40))
    assert asel.select_n(_on(cp, which), *(_on(cp, c) for c in host), out=out) is out
    _same_bits(out, expected)
    big = _on(cp, np.zeros(80))
    asel.select_n(_on(cp, which), *(_on(cp, c) for c in host), out=big[::2])
    _same_bits(big[::2], expected)
    _same_bits(big[1::2], np.zeros(40))
    cases = [_on(cp, c) for c in host]
    assert asel.select_n(_on(cp, which), *cases, out=cases[1]) is cases[1]
    _same_bits(cases[1], expected)
    assert np.shares_memory(cp.LAUNCHES[-1][3], cases[1])
    # partial overlap: a case shifted by one element against out -> a temporary
    buf = _on(cp, np.concatenate([host[0], host[0][-1:]]))
    out_view = buf[:-1]
    cases = [buf[1:], _on(cp, host[1]), _on(cp, host[2])]
    shifted = [np.asarray(buf[1:]).copy(), host[1], host[2]]
    assert asel.select_n(_on(cp, which), *cases, out=out_view) is out_view
    _same_bits(out_view, oracle.oracle_select_n(which, shifted))
    assert not np.shares_memory(cp.LAUNCHES[-1][3], buf)


def test_select_n_shapes_and_many_cases(cp: ModuleType):
    # 0-d and zero-size
    cases = [_on(cp, np.float32(k)) for k in range(4)]
    got = asel.select_n(_on(cp, np.array(2, np.int32)), *cases)
    assert got.shape == () and float(got) == 2.0
    cp.LAUNCHES.clear()
    empty = asel.select_n(_on(cp, np.zeros((0, 3), np.int32)), *cases)
    assert empty.shape == (0, 3) and cp.LAUNCHES == []
    # the most cases one kernel takes, then the core's chain beyond it
    for n in (ck.SELECT_N_MAX_CASES, ck.SELECT_N_MAX_CASES + 1):
        which = RNG.integers(0, n, 50).astype(np.int16)
        host = [_bits(50, np.dtype("uint16")) for _ in range(n)]
        cp.LAUNCHES.clear()
        got = asel.select_n(_on(cp, which), *(_on(cp, c) for c in host))
        _same_bits(got, oracle.oracle_select_n(which, host))
        fused = [f"arrayselect_select_n{n}_int16_v2"] if n <= ck.SELECT_N_MAX_CASES else []
        assert _family_launches(cp) == fused


@pytest.mark.parametrize("name", DTYPES)
def test_select_cases_every_dtype_one_kernel(cp: ModuleType, name: str):
    dtype = _dtype(name)
    conds = [RNG.integers(0, 2, s).astype(bool) for s in [(5, 1), (1, 6), (5, 6)]]
    choices = [_bits(6, dtype), _bits(30, dtype).reshape(5, 6), _bits(5, dtype).reshape(5, 1)]
    default = _bits(1, dtype).reshape(())
    expected = oracle.oracle_select_cases(conds, choices, default)
    for _ in range(2):
        cp.LAUNCHES.clear()
        got = asel.select_cases(
            [_on(cp, c) for c in conds], [_on(cp, c) for c in choices], _on(cp, default)
        )
        _same_bits(got, expected)
        assert _family_launches(cp) == [f"arrayselect_select_cases3_c111_v{dtype.itemsize}"]


def test_select_cases_integer_conds_and_scalars(cp: ModuleType):
    conds = [
        _conds_top_bit(np.dtype("int16"), (4, 8)),
        _conds_top_bit(np.dtype("uint64"), (8,)),
        RNG.integers(0, 2, (4, 1)).astype(bool),
    ]
    choices = [_bits(32, np.dtype("int32")).reshape(4, 8), -7, _bits(4, np.dtype("int32"))[:1]]
    cp.LAUNCHES.clear()
    got = asel.select_cases(
        [_on(cp, c) for c in conds],
        [c if isinstance(c, int) else _on(cp, c) for c in choices],
        3,
    )
    host = [np.asarray(c, np.int32) for c in choices]
    expected = oracle.oracle_select_cases(conds, host, np.array(3, np.int32))
    _same_bits(got, expected)
    assert _family_launches(cp) == ["arrayselect_select_cases3_c281_v4"]
    # beyond the most conditions one kernel takes: the core's chain, same result
    n = ck.SELECT_CASES_MAX_CONDS + 1
    many = [RNG.integers(0, 2, 9).astype(bool) for _ in range(n)]
    values = [_bits(9, np.dtype("float32")) for _ in range(n)]
    cp.LAUNCHES.clear()
    got = asel.select_cases([_on(cp, c) for c in many], [_on(cp, v) for v in values], 0.5)
    expected = oracle.oracle_select_cases(many, values, np.array(0.5, np.float32))
    _same_bits(got, expected)
    assert cp.LAUNCHES == []


def _conds_top_bit(dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray:
    """Nonzero values with only the top bit set (a narrowing view would read 0)."""
    raw = RNG.integers(0, 2, shape).astype(np.uint64) << np.uint64(8 * dtype.itemsize - 1)
    return raw.astype(f"u{dtype.itemsize}").view(dtype)
