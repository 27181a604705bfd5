"""The Dask backend is lazy: one blockwise layer, no compute during the call.

Every ``select`` call here runs under a scheduler that raises if anything is
computed or persisted; results are computed afterwards with the synchronous
scheduler and compared with ``numpy.where`` on the computed inputs.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dask is not installed")
dask = pytest.importorskip("dask")

import arrayselect as asel  # noqa: E402
from arrayselect import SelectShapeError, SelectTypeError  # noqa: E402


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("select computed or persisted a Dask graph during the call")


@contextlib.contextmanager
def no_compute() -> Iterator[None]:
    """Any compute/persist inside the block raises."""
    with dask.config.set(scheduler=_refuse):
        yield


def compute(x: Any) -> np.ndarray:
    return np.asarray(x.compute(scheduler="sync"))


def layers(*arrays: Any) -> set[str]:
    names: set[str] = set()
    for x in arrays:
        if isinstance(x, da.Array):
            names |= set(x.dask.layers)
    return names


def assert_bits_equal(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes()


@pytest.fixture
def rng() -> Any:
    return da.random.default_rng(1234)


def test_import_does_not_import_dask() -> None:
    code = "import sys, arrayselect; sys.exit('dask' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_backend_is_dask(rng: Any) -> None:
    x = rng.random((10,), chunks=4)
    assert asel.backend_for(x > 0.5, x, 0.0).name == "dask"
    with asel.force_portable():
        assert asel.backend_for(x > 0.5, x, 0.0).name == "portable[dask]"


def test_one_blockwise_layer_no_compute(rng: Any) -> None:
    x = rng.random((30, 20), chunks=(7, 6))
    cond = x > 0.5
    then = x * 2
    else_ = -x
    with no_compute():
        out = asel.select(cond, then, else_)
    assert isinstance(out, da.Array)
    assert len(out.dask.layers) == len(layers(cond, then, else_)) + 1
    new = set(out.dask.layers) - layers(cond, then, else_)
    (name,) = new
    assert name.startswith("select-")
    assert out.chunks == then.chunks
    assert out.dtype == then.dtype
    assert type(out._meta) is np.ndarray
    xn = compute(x)
    assert_bits_equal(compute(out), np.where(xn > 0.5, xn * 2, -xn))


def test_graph_is_deterministic(rng: Any) -> None:
    x = rng.random((12,), chunks=5)
    with no_compute():
        a = asel.select(x > 0.5, x, 1.0)
        b = asel.select(x > 0.5, x, 1.0)
        c = asel.select(x > 0.5, x, 2.0)
    assert a.name == b.name
    assert a.name != c.name


def test_then_else_chunking_kept_when_cond_differs(rng: Any) -> None:
    x = rng.random((30, 20), chunks=(10, 5))
    cond = rng.random((30, 20), chunks=(7, 20)) > 0.5
    with no_compute():
        out = asel.select(cond, x, x + 1)
        reference = da.where(cond, x, x + 1)
    assert out.chunks == x.chunks  # the mask follows the data
    assert reference.chunks != x.chunks  # Dask's own unification refines instead
    # cond's rechunk plus the blockwise layer
    assert len(out.dask.layers) == len(layers(cond, x, x + 1)) + 2
    xn, cn = compute(x), compute(cond)
    assert_bits_equal(compute(out), np.where(cn, xn, xn + 1))


def test_then_else_unified_like_dask(rng: Any) -> None:
    then = rng.random((24,), chunks=(5,))
    else_ = rng.random((24,), chunks=(8,))
    cond = then > else_
    with no_compute():
        out = asel.select(cond, then, else_)
    chunkss, _ = da.core.unify_chunks(then, "i", else_, "i")
    assert out.chunks == (chunkss["i"],)
    tn, en = compute(then), compute(else_)
    assert_bits_equal(compute(out), np.where(tn > en, tn, en))


@pytest.mark.parametrize(
    ("cond_shape", "then_shape", "else_shape", "cond_broadcast"),
    [
        ((4, 5), (2, 3, 4, 5), (2, 3, 4, 5), "unidirectional"),
        ((3, 1, 5), (2, 3, 4, 5), (1, 5), "unidirectional"),
        ((), (6, 4), (4,), "unidirectional"),
        ((1, 1, 3), (1, 3, 1), (3, 1, 1), "multidirectional"),
        ((7, 1), (1,), (6,), "multidirectional"),
        ((0, 3), (0, 3), (3,), "unidirectional"),
    ],
)
def test_numpy_mode_broadcasting(
    rng: Any,
    cond_shape: tuple[int, ...],
    then_shape: tuple[int, ...],
    else_shape: tuple[int, ...],
    cond_broadcast: str,
) -> None:
    cond = rng.random(cond_shape, chunks=2) > 0.5
    then = rng.random(then_shape, chunks=3)
    else_ = rng.random(else_shape, chunks=2)
    with no_compute():
        out = asel.select(cond, then, else_, cond_broadcast=cond_broadcast)
    expected = np.where(compute(cond), compute(then), compute(else_))
    assert out.shape == expected.shape
    assert_bits_equal(compute(out), expected)


@pytest.mark.parametrize(
    ("cond_shape", "then_shape", "else_shape", "axis"),
    [
        ((3, 4), (2, 3, 4, 5), (3, 1), 1),
        ((3, 1), (2, 3, 4, 5), (3, 4, 5), 1),  # trailing 1 of cond is trimmed
        ((1, 3), (2, 3, 4, 5), (2,), 0),
        ((), (2, 3, 4, 5), (), -1),
        ((5,), (2, 3, 4, 5), (4, 1), -1),  # else (4, 1) -> (4,) at dimension 2
        ((3, 1), (2, 3), (3,), 1),  # rank-2 cond fits rank-2 then once trimmed
    ],
)
def test_pdpd(
    rng: Any,
    cond_shape: tuple[int, ...],
    then_shape: tuple[int, ...],
    else_shape: tuple[int, ...],
    axis: int,
) -> None:
    cond = rng.random(cond_shape, chunks=2) > 0.5
    then = rng.random(then_shape, chunks=2)
    else_ = rng.random(else_shape, chunks=2)
    with no_compute():
        out = asel.select(cond, then, else_, auto_broadcast="pdpd", axis=axis)
    plan_shapes = asel.select_shape(
        cond_shape, then_shape, else_shape, auto_broadcast="pdpd", axis=axis
    )
    assert out.shape == plan_shapes == then_shape
    assert out.chunks == then.chunks
    expected = asel.select(
        compute(cond), compute(then), compute(else_), auto_broadcast="pdpd", axis=axis
    )
    assert_bits_equal(compute(out), expected)


def _unknown(rng: Any, n: int = 60, chunks: int = 15) -> tuple[Any, np.ndarray]:
    """A float64 Dask array of unknown length (boolean indexing) and its values."""
    x = rng.random((n,), chunks=chunks)
    u = x[x > 0.4]
    xn = compute(x)
    return u, xn[xn > 0.4]


@pytest.mark.parametrize("mode", ["numpy", "none"])
def test_unknown_chunks(rng: Any, mode: str) -> None:
    u, un = _unknown(rng)
    assert np.isnan(u.shape[0])
    with no_compute():
        out = asel.select(u > 0.7, u, u * 2, auto_broadcast=mode)
    assert np.isnan(out.shape[0])
    assert out.chunks == u.chunks
    assert_bits_equal(compute(out), np.where(un > 0.7, un, un * 2))


def test_unknown_chunks_broadcast_and_scalars(rng: Any) -> None:
    u, un = _unknown(rng)
    col = u[:, None]
    row = rng.random((1, 3), chunks=(1, 2))
    with no_compute():
        out = asel.select(col > 0.7, col, row)
        scalar = asel.select(u > 0.7, u, -1.0)
        both = asel.select(u > 0.7, 1, 0, cond_broadcast="multidirectional")
    assert out.chunks[1] == (2, 1)
    assert_bits_equal(compute(out), np.where(un[:, None] > 0.7, un[:, None], compute(row)))
    assert_bits_equal(compute(scalar), np.where(un > 0.7, un, -1.0))
    assert_bits_equal(compute(both), np.where(un > 0.7, 1, 0).astype(np.int64))


def test_unknown_chunks_pdpd(rng: Any) -> None:
    u, un = _unknown(rng)
    then = u[:, None] * np.arange(1.0, 4.0)  # (nan, 3)
    cond = u > 0.7  # (nan,) fitted at axis 0
    else_ = rng.random((1, 3), chunks=(1, 2))  # fitted at axis 0 too
    row = rng.random((3,), chunks=2)  # right-aligned with axis=-1
    with no_compute():
        out = asel.select(cond, then, else_, auto_broadcast="pdpd", axis=0)
        right = asel.select(then > 1.0, then, row, auto_broadcast="pdpd")
    tn, en, rn = un[:, None] * np.arange(1.0, 4.0), compute(else_), compute(row)
    assert_bits_equal(compute(out), np.where((un > 0.7)[:, None], tn, en))
    assert_bits_equal(compute(right), np.where(tn > 1.0, tn, rn))


def test_unknown_trailing_dim_dropped_pdpd(rng: Any) -> None:
    # cond (3, nan) at axis 1 of then (2, 3): only a trailing 1 fits, so that dimension
    # is dropped and its size checked block by block when computed.
    then = rng.random((2, 3), chunks=(1, 2))
    vals = rng.random((3, 4), chunks=(2, 4))
    keep_one = da.from_array(np.array([False, True, False, False]), chunks=2)
    cond = (vals > 0.5)[:, keep_one]
    assert np.isnan(cond.shape[1])
    with no_compute():
        out = asel.select(cond, then, 0.0, auto_broadcast="pdpd", axis=1)
    cn = compute(vals)[:, 1] > 0.5
    assert_bits_equal(compute(out), np.where(cn, compute(then), 0.0))
    keep_two = da.from_array(np.array([True, True, False, False]), chunks=2)
    with no_compute():
        bad = asel.select((vals > 0.5)[:, keep_two], then, 0.0, auto_broadcast="pdpd", axis=1)
    with pytest.raises(SelectShapeError, match="had to be 1"):
        compute(bad)


def test_unknown_against_known_is_a_shape_error(rng: Any) -> None:
    u, _ = _unknown(rng)
    known = rng.random((20,), chunks=5)
    with no_compute(), pytest.raises(SelectShapeError, match="chunk"):
        asel.select(u > 0.5, known, known, auto_broadcast="none")


@pytest.mark.parametrize(
    ("then", "else_", "dtype"),
    [
        ("array", 2.5, np.float32),
        (-1, "array", np.int16),
        (True, "array", np.bool_),
        (1.5, -2.5, np.float64),
        (3, 4, np.int64),
        (1j, 2j, np.complex128),
        (False, True, np.bool_),
    ],
)
def test_python_scalars(rng: Any, then: Any, else_: Any, dtype: Any) -> None:
    cond = rng.random((9, 4), chunks=(4, 3)) > 0.5
    arr = (rng.random((9, 4), chunks=(4, 3)) * 100).astype(dtype)
    t = arr if isinstance(then, str) else then
    e = arr if isinstance(else_, str) else else_
    with no_compute():
        out = asel.select(cond, t, e, cond_broadcast="multidirectional")
    assert out.dtype == np.dtype(dtype)
    assert out.chunks == cond.chunks
    new = set(out.dask.layers) - layers(cond, t, e)
    assert len(new) == 1  # scalars travel as literals: no extra layer
    cn = compute(cond)
    tn = compute(t) if isinstance(t, da.Array) else np.asarray(t, dtype=dtype)
    en = compute(e) if isinstance(e, da.Array) else np.asarray(e, dtype=dtype)
    assert_bits_equal(compute(out), np.where(cn, tn, en).astype(dtype))


def test_scalar_errors(rng: Any) -> None:
    cond = rng.random((5,), chunks=2) > 0.5
    small = da.zeros((5,), dtype=np.uint8, chunks=2)
    with no_compute():
        with pytest.raises(asel.ScalarOverflowError):
            asel.select(cond, small, 256)
        with pytest.raises(asel.ScalarOverflowError):
            asel.select(cond, 2**64, 1, cond_broadcast="multidirectional")
        with pytest.raises(SelectTypeError):
            asel.select(cond, small, 1.5)
        with pytest.raises(SelectTypeError):
            asel.select(cond, 1, 2.5)


def test_zero_d(rng: Any) -> None:
    c = da.asarray(np.bool_(True))
    t = da.asarray(np.float32(1.0))
    e = da.asarray(np.float32(2.0))
    with no_compute():
        out = asel.select(c, t, e)
        vec = asel.select(rng.random((5,), chunks=2) > 2.0, t, e, cond_broadcast="multidirectional")
    assert out.shape == ()
    assert compute(out) == np.float32(1.0)
    assert_bits_equal(compute(vec), np.full(5, 2.0, dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, np.uint64])
def test_integer_cond(rng: Any, dtype: Any) -> None:
    cond = (rng.random((11,), chunks=4) * 3).astype(dtype)
    then = rng.random((11,), chunks=4)
    with no_compute():
        out = asel.select(cond, then, -then)
    cn, tn = compute(cond), compute(then)
    assert_bits_equal(compute(out), np.where(cn != 0, tn, -tn))


def test_bits_are_copied() -> None:
    bits = np.array([0x7FC00001, 0xFFC12345, 0x80000000, 0x00000001, 0x7F800000], np.uint32)
    values = bits.view(np.float32)
    then = da.from_array(values, chunks=2)
    else_ = da.from_array(values[::-1].copy(), chunks=3)
    cond = da.from_array(np.array([True, False, True, False, True]), chunks=2)
    with no_compute():
        out = asel.select(cond, then, else_)
    expected = np.where(compute(cond), values, values[::-1])
    assert compute(out).view(np.uint32).tolist() == expected.view(np.uint32).tolist()


def test_errors_without_compute(rng: Any) -> None:
    x = rng.random((4, 5), chunks=2)
    with no_compute():
        with pytest.raises(SelectShapeError, match=r"dimension -2 is 3"):
            asel.select(rng.random((3, 5), chunks=2) > 0.5, x, x)
        with pytest.raises(SelectTypeError, match="lazy"):
            asel.select(x > 0.5, x, x, out=x)
        with pytest.raises(SelectTypeError, match="same dtype"):
            asel.select(x > 0.5, x, x.astype(np.float32))
        with pytest.raises(SelectTypeError, match="boolean or integer"):
            asel.select(x, x, x)
        with pytest.raises(SelectTypeError, match="different libraries"):
            asel.select(x > 0.5, compute(x), x)


class _ForeignBlock(np.ndarray):
    """Stands for the block type of another library (e.g. CuPy) without a GPU."""


_ForeignBlock.__module__ = "foreignlib.core"


def test_mixed_block_libraries_are_refused_at_call_time() -> None:
    x = da.ones((6,), chunks=3)
    foreign = x.map_blocks(lambda b: b.view(_ForeignBlock), meta=np.empty(0).view(_ForeignBlock))
    with no_compute(), pytest.raises(asel.SelectValueError, match=r"numpy blocks.*foreignlib"):
        asel.select(x > 0, foreign, foreign)


def test_block_dtype_numpy_does_not_know_is_a_type_error() -> None:
    torch = pytest.importorskip("torch", reason="needs torch for a foreign dtype")
    x = da.ones((6,), chunks=3)
    tensors = x.map_blocks(torch.as_tensor, meta=torch.empty(0, dtype=torch.float64))
    with no_compute(), pytest.raises(SelectTypeError, match="does not support"):
        asel.select(x > 0, tensors, tensors)


def test_blocks_go_through_arrayselect_select(rng: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block is handed to ``arrayselect.select``, i.e. to its own library's backend."""
    seen: list[str] = []
    real: Callable[..., Any] = asel.select

    def spy(cond: Any, then: Any, else_: Any, **kwargs: Any) -> Any:
        seen.append(asel.backend_for(cond, then, else_).name)
        return real(cond, then, else_, **kwargs)

    x = rng.random((10, 10), chunks=5)
    with no_compute():
        out = asel.select(x > 0.5, x, 0.0)
    monkeypatch.setattr(asel, "select", spy)
    compute(out)
    assert seen == ["numpy"] * 4


def test_cupy_blocks(rng: Any) -> None:
    cupy = pytest.importorskip("cupy", reason="CuPy blocks need cupy and a CUDA GPU")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy blocks need a CUDA GPU (device count is 0)")
    except Exception as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"CuPy blocks need a CUDA GPU ({exc})")
    x = rng.random((20, 6), chunks=(5, 3)).map_blocks(cupy.asarray)
    with no_compute():
        out = asel.select(x > 0.5, x, -1.0)
        with pytest.raises(asel.SelectValueError, match="cupy"):
            asel.select(rng.random((20, 6), chunks=(5, 3)) > 0.5, x, x)
    assert type(out._meta) is cupy.ndarray
    got = out.compute(scheduler="sync")
    xn = cupy.asnumpy(x.compute(scheduler="sync"))
    assert_bits_equal(cupy.asnumpy(got), np.where(xn > 0.5, xn, -1.0))


def test_compute_time_shape_error_names_no_option_the_user_did_not_pass() -> None:
    """Unknown sizes that turn out to clash: the error says so, in the call's terms."""
    da = pytest.importorskip("dask.array", reason="dask not installed")

    def unknown(values: np.ndarray) -> Any:
        x = da.from_array(values, chunks=10)
        return x[x == x]  # boolean indexing: the size is NaN until computed

    a, b = unknown(np.arange(3.0)), unknown(np.arange(4.0))
    result = asel.select(a > 0, a, b)  # the default: cond_broadcast='unidirectional'
    with pytest.raises(asel.SelectShapeError) as info:
        result.compute()
    message = str(info.value)
    assert "multidirectional" not in message
    assert "then block (3,)" in message and "else block (4,)" in message
