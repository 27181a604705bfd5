"""The kernel's select family (``select_n``, ``select_cases``): bit-exact, every layout.

The oracle is index arithmetic on raw bytes: for every output element (flat, C
order, over ``np.broadcast_to`` views materialised by NumPy) it computes which
input is taken -- ``which``'s value, or the first condition that is nonzero --
and takes that input's bytes at the same index. It shares nothing with the
kernel, and comparing bytes makes NaN payloads and padding count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from arrayselect.backends.shared import _select_kernel as K
from arrayselect.backends.shared import kernel as numpy_kernel
from arrayselect.backends.shared.kernel_cases import (
    kernel_select_cases,
    kernel_select_n,
)

import arrayselect as asel

ml_dtypes = pytest.importorskip("ml_dtypes")

RNG = np.random.default_rng(20261125)

#: One dtype per item size (and kind of bits): 1, 2, 4, 8, 16, 32 bytes and odd sizes.
DTYPES = [
    np.dtype(np.bool_),
    np.dtype(ml_dtypes.int4),
    np.dtype(np.int8),
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(np.float16),
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.complex128),
    np.dtype(np.clongdouble),
    np.dtype("V3"),
    np.dtype("V12"),
]
COND_DTYPES = [np.dtype(n) for n in ("bool", "int8", "uint16", "int32", "uint64", "int64")]
INDEX_DTYPES = [
    np.dtype(n) for n in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
]
NS = [1, 2, 3, 4, 7, 64]

Array = np.ndarray


# --------------------------------------------------------------------------- oracle


def raw(x: Array) -> Array:
    """The bytes of every element of ``x``, flat in C order: shape (size, itemsize)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    return flat.view(np.uint8).reshape(flat.size, x.dtype.itemsize)


def take_bytes(chosen: Array, values: Sequence[Array]) -> Array:
    """Element i from values[chosen[i]], as bytes."""
    stacked = np.stack([raw(v) for v in values])
    return stacked[chosen, np.arange(chosen.size)]  # type: ignore[no-any-return]


def oracle_select_n(which: Array, cases: Sequence[Array]) -> Array:
    chosen = np.ascontiguousarray(which).reshape(-1).astype(np.int64)
    return take_bytes(chosen, cases)


def oracle_select_cases(conds: Sequence[Array], choices: Sequence[Array], default: Array) -> Array:
    size = default.size
    chosen = np.full(size, len(conds), dtype=np.int64)
    for k in reversed(range(len(conds))):  # the first true condition is written last
        chosen[np.ascontiguousarray(conds[k]).reshape(-1) != 0] = k
    return take_bytes(chosen, [*choices, default])


def assert_bytes(result: Array, expected: Array) -> None:
    np.testing.assert_array_equal(raw(result), expected)


# --------------------------------------------------------------------------- inputs


def random_values(shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    """Random bits viewed as ``dtype`` (bool: 0/1 bytes, as NumPy keeps them)."""
    if dtype == np.bool_:
        return np.asarray(RNG.random(shape) < 0.5)
    data = RNG.integers(0, 256, size=(*shape, dtype.itemsize), dtype=np.uint8)
    return data.view(dtype).reshape(shape)


def random_cond(shape: tuple[int, ...], dtype: np.dtype[Any], p: float = 0.3) -> Array:
    """Zeros, and nonzero values whose low byte may be zero or that are negative."""
    if dtype == np.bool_:
        return np.asarray(RNG.random(shape) < p)
    info = np.iinfo(dtype)
    nonzero = np.array([1, info.max, 256 if info.bits > 8 else 2, info.min or 3], dtype=dtype)
    picks = nonzero[RNG.integers(0, len(nonzero), size=shape)]
    return np.where(RNG.random(shape) < p, picks, np.zeros((), dtype))


def random_which(shape: tuple[int, ...], n: int, dtype: np.dtype[Any]) -> Array:
    top = min(n, int(np.iinfo(dtype).max) + 1)  # the indices the dtype can hold
    return np.asarray(RNG.integers(0, top, size=shape)).astype(dtype)


#: name -> (the shape to make, how to view it as an operand of the output shape)
Layout = tuple[tuple[int, ...], Callable[[Array], Array]]
OUT_SHAPE = (12, 37)
LAYOUTS: dict[str, Layout] = {
    "contiguous": (OUT_SHAPE, lambda a: a),
    "reversed": (OUT_SHAPE, lambda a: a[::-1, ::-1]),
    "step-3": ((12, 111), lambda a: a[:, ::3]),
    "transposed": ((37, 12), lambda a: a.T),
    "row-broadcast": ((37,), lambda a: np.broadcast_to(a, OUT_SHAPE)),
    "column-broadcast": ((12, 1), lambda a: np.broadcast_to(a, OUT_SHAPE)),
    "scalar-broadcast": ((), lambda a: np.broadcast_to(a, OUT_SHAPE)),
}


def operand(layout: str, make: Callable[[tuple[int, ...]], Array]) -> Array:
    shape, view = LAYOUTS[layout]
    result = view(make(shape))
    assert result.shape == OUT_SHAPE
    return result


def pick_layouts(count: int) -> list[str]:
    names = list(LAYOUTS)
    return [names[i] for i in RNG.integers(0, len(names), size=count)]


@pytest.fixture(autouse=True)
def _restore_settings() -> Iterator[None]:
    threads = asel.get_num_threads()
    threshold = numpy_kernel.get_parallel_threshold()
    yield
    asel.set_num_threads(threads)
    numpy_kernel.set_parallel_threshold(threshold)
    numpy_kernel.set_load_guard(True)


@pytest.fixture(params=numpy_kernel.isa_info()["usable"])
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with the loops of each usable instruction set."""
    previous = numpy_kernel.isa_info()["current"]
    numpy_kernel.set_isa(request.param)
    yield request.param
    numpy_kernel.set_isa(previous)


# --------------------------------------------------------------------------- select_cases


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", NS)
def test_select_cases_every_item_size(dtype: np.dtype[Any], n: int) -> None:
    shape = (3, 701)  # several blocks, and a tail
    conds = [random_cond(shape, np.dtype(np.bool_), p=0.6 / n) for _ in range(n)]
    choices = [random_values(shape, dtype) for _ in range(n)]
    default = random_values(shape, dtype)
    result = kernel_select_cases(conds, choices, default, None)
    assert result.dtype == dtype and result.shape == shape and result.flags.c_contiguous
    assert_bytes(result, oracle_select_cases(conds, choices, default))


@pytest.mark.parametrize("cond_dtype", COND_DTYPES, ids=str)
@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64", "complex128"])
def test_select_cases_cond_widths_nonzero_is_true(cond_dtype: np.dtype[Any], dtype: str) -> None:
    shape = (4099,)
    conds = [random_cond(shape, cond_dtype) for _ in range(3)]
    conds.append(random_cond(shape, np.dtype(np.bool_)))  # mixed widths in one call
    choices = [random_values(shape, np.dtype(dtype)) for _ in range(4)]
    default = random_values(shape, np.dtype(dtype))
    result = kernel_select_cases(conds, choices, default, None)
    assert_bytes(result, oracle_select_cases(conds, choices, default))


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64", "clongdouble", "V3"])
@pytest.mark.parametrize("n", [1, 3, 4, 7])
@pytest.mark.parametrize("seed", range(6))
def test_select_cases_layouts(dtype: str, n: int, seed: int) -> None:
    dt = np.dtype(dtype)
    lays = pick_layouts(2 * n + 1)
    cond_dtype = COND_DTYPES[seed % len(COND_DTYPES)]
    conds = [operand(lays[k], lambda s: random_cond(s, cond_dtype)) for k in range(n)]
    choices = [operand(lays[n + k], lambda s: random_values(s, dt)) for k in range(n)]
    default = operand(lays[2 * n], lambda s: random_values(s, dt))
    expected = oracle_select_cases(conds, choices, default)
    assert_bytes(kernel_select_cases(conds, choices, default, None), expected)
    for out in (
        np.empty(OUT_SHAPE, dt),
        np.empty(OUT_SHAPE[::-1], dt).T,
        np.empty((12, 74), dt)[:, ::2],
    ):
        assert kernel_select_cases(conds, choices, default, out) is out
        assert_bytes(out, expected)


@pytest.mark.parametrize("shape", [(), (0,), (5, 0), (1,), (1, 1, 1), (2, 1, 3)])
def test_select_cases_edge_shapes(shape: tuple[int, ...]) -> None:
    conds = [random_cond(shape, np.dtype(np.bool_)) for _ in range(2)]
    choices = [random_values(shape, np.dtype(np.float32)) for _ in range(2)]
    default = random_values(shape, np.dtype(np.float32))
    result = kernel_select_cases(conds, choices, default, None)
    assert result.shape == shape
    assert_bytes(result, oracle_select_cases(conds, choices, default))
    out = np.full(shape, 5, np.float32)
    assert kernel_select_cases(conds, choices, default, out) is out
    assert_bytes(out, oracle_select_cases(conds, choices, default))


def test_select_cases_out_is_an_input() -> None:
    shape = (5000,)
    conds = [random_cond(shape, np.dtype(np.bool_), 0.4) for _ in range(4)]
    choices = [random_values(shape, np.dtype(np.float32)) for _ in range(4)]
    default = random_values(shape, np.dtype(np.float32))
    expected = oracle_select_cases(conds, choices, default)
    for k in range(4):
        inputs = [c.copy() for c in choices]
        assert kernel_select_cases(conds, inputs, default, inputs[k]) is inputs[k]
        assert_bytes(inputs[k], expected)
    d = default.copy()
    assert kernel_select_cases(conds, choices, d, d) is d
    assert_bytes(d, expected)
    # a shifted view of the same bytes: computed aside, then copied
    buf = random_values((5001,), np.dtype(np.float32))
    shifted = [buf[1:], *choices[1:]]
    expected = oracle_select_cases(conds, shifted, default)
    assert kernel_select_cases(conds, shifted, default, buf[:-1]) is not None
    assert_bytes(buf[:-1], expected)


def test_select_cases_misaligned() -> None:
    shape = (3001,)
    buf = np.zeros(4 * 3001 * 3 + 8, np.uint8)
    choices = [buf[1 + 4 * 3001 * k : 1 + 4 * 3001 * (k + 1)].view(np.float32) for k in range(3)]
    for c in choices:
        c[...] = random_values(shape, np.dtype(np.float32))
    cbuf = np.zeros(2 * 3001 + 1, np.uint8)
    cond16 = cbuf[1:].view(np.int16)
    cond16[...] = random_cond(shape, np.dtype(np.int16))
    conds = [cond16, random_cond(shape, np.dtype(np.bool_))]
    result = kernel_select_cases(conds, choices[:2], choices[2], None)
    assert_bytes(result, oracle_select_cases(conds, choices[:2], choices[2]))


def test_select_cases_wrapper_converts_other_conds() -> None:
    x = np.array([-1.5, 0.0, np.nan, 2.0])
    conds = [x, x > 1]  # a float condition: nonzero (NaN included) is true
    result = kernel_select_cases(conds, [np.ones(4), np.full(4, 2.0)], np.zeros(4), None)
    np.testing.assert_array_equal(result, [1.0, 0.0, 1.0, 1.0])
    # the kernel reads bool and integer conditions as they are, and leaves the rest to
    # the wrapper (as it does operands that are not ndarrays)
    assert K.select_cases((np.zeros(1, "V3"),), (x[:1],), x[:1], None, (1,)) is NotImplemented
    assert K.select_cases((x,), (x,), x, None, (4,)) is NotImplemented
    assert K.select_cases((x > 0,), [[1.0] * 4], x, None, (4,)) is NotImplemented
    assert K.select_cases((x > 0,), (x,), 0.0, None, (4,)) is NotImplemented


# --------------------------------------------------------------------------- select_n


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", NS)
def test_select_n_every_item_size(dtype: np.dtype[Any], n: int) -> None:
    shape = (3, 701)
    which = random_which(shape, n, np.dtype(np.int32))
    cases = [random_values(shape, dtype) for _ in range(n)]
    result = kernel_select_n(which, cases, None)
    assert result.dtype == dtype and result.shape == shape and result.flags.c_contiguous
    assert_bytes(result, oracle_select_n(which, cases))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=str)
@pytest.mark.parametrize("n", [1, 2, 4, 64])
def test_select_n_index_widths(index_dtype: np.dtype[Any], n: int) -> None:
    shape = (4099,)
    which = random_which(shape, n, index_dtype)
    cases = [random_values(shape, np.dtype(np.float64)) for _ in range(n)]
    assert_bytes(kernel_select_n(which, cases, None), oracle_select_n(which, cases))
    swapped = which.astype(index_dtype.newbyteorder(">" if index_dtype.isnative else "<"))
    assert_bytes(kernel_select_n(swapped, cases, None), oracle_select_n(which, cases))


@pytest.mark.parametrize("index_dtype", ["uint8", "int16", "int64"])
def test_select_n_more_cases_than_uint8_holds(index_dtype: str) -> None:
    """300 cases: indices past 255 take the per-case masks; uint8 can reach only 256 cases."""
    shape = (2, 1500)
    which = random_which(shape, 300, np.dtype(index_dtype))
    which[0, :300] = np.arange(300).astype(index_dtype)  # every reachable case at least once
    cases = [random_values(shape, np.dtype(np.float32)) for _ in range(300)]
    cases[7] = np.broadcast_to(random_values((), np.dtype(np.float32)), shape)
    assert_bytes(kernel_select_n(which, cases, None), oracle_select_n(which, cases))


def test_select_n_bool_which() -> None:
    shape = (3000,)
    which = random_cond(shape, np.dtype(np.bool_), 0.5)
    cases = [random_values(shape, np.dtype(np.float32)) for _ in range(2)]
    assert_bytes(kernel_select_n(which, cases, None), oracle_select_n(which, cases))
    with pytest.raises(ValueError, match="exactly 2 cases, got 3"):
        kernel_select_n(which, [*cases, cases[0]], None)


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64", "clongdouble", "V3"])
@pytest.mark.parametrize("n", [1, 2, 4, 7])
@pytest.mark.parametrize("seed", range(6))
def test_select_n_layouts(dtype: str, n: int, seed: int) -> None:
    dt = np.dtype(dtype)
    lays = pick_layouts(n + 1)
    index_dtype = INDEX_DTYPES[seed % len(INDEX_DTYPES)]
    which = operand(lays[0], lambda s: random_which(s, n, index_dtype))
    cases = [operand(lays[1 + k], lambda s: random_values(s, dt)) for k in range(n)]
    expected = oracle_select_n(which, cases)
    assert_bytes(kernel_select_n(which, cases, None), expected)
    for out in (
        np.empty(OUT_SHAPE, dt),
        np.empty(OUT_SHAPE[::-1], dt).T,
        np.empty((12, 74), dt)[:, ::2],
    ):
        assert kernel_select_n(which, cases, out) is out
        assert_bytes(out, expected)


def test_select_n_edge_shapes_and_out_is_a_case() -> None:
    for shape in [(), (0,), (4, 0), (1, 1)]:
        which = random_which(shape, 3, np.dtype(np.int64))
        cases = [random_values(shape, np.dtype(np.int16)) for _ in range(3)]
        result = kernel_select_n(which, cases, None)
        assert result.shape == shape
        assert_bytes(result, oracle_select_n(which, cases))
    which = random_which((5000,), 4, np.dtype(np.uint8))
    cases = [random_values((5000,), np.dtype(np.float32)) for _ in range(4)]
    expected = oracle_select_n(which, cases)
    for k in range(4):
        inputs = [c.copy() for c in cases]
        assert kernel_select_n(which, inputs, inputs[k]) is inputs[k]
        assert_bytes(inputs[k], expected)


@pytest.mark.parametrize(
    ("index_dtype", "n", "bad"),
    [
        ("int8", 3, 3),
        ("int8", 3, -1),
        ("int8", 200, -128),
        ("uint8", 4, 255),
        ("int16", 7, 7),
        ("uint16", 64, 64),
        ("int32", 2, -(2**31)),
        ("uint32", 4, 2**32 - 1),
        ("int64", 4, 2**62),
        ("int64", 1, -5),
        ("uint64", 3, 2**64 - 1),
    ],
)
def test_select_n_out_of_range(index_dtype: str, n: int, bad: int) -> None:
    shape = (3, 5000)
    which = random_which(shape, n, np.dtype(index_dtype))
    which[1, 4321] = bad
    cases = [random_values(shape, np.dtype(np.float32)) for _ in range(n)]
    before = [c.copy() for c in cases]
    with pytest.raises(IndexError) as info:
        kernel_select_n(which, cases, None)
    assert info.value.args == (bad,)
    with pytest.raises(IndexError) as info:
        kernel_select_n(which, cases, np.empty(shape, np.float32))
    assert info.value.args == (bad,)
    for c, b in zip(cases, before, strict=True):
        np.testing.assert_array_equal(c, b)  # inputs untouched


def test_select_n_out_of_range_is_the_first_in_iteration_order() -> None:
    asel.set_num_threads(1)
    which = np.zeros(100_000, np.int32)
    which[[70_000, 3, 90_000]] = [9, 5, 7]
    with pytest.raises(IndexError) as info:
        kernel_select_n(which, [np.ones(100_000, np.float32)] * 5, None)
    assert info.value.args == (5,)


#: Operand shapes the kernel places itself in OUT_SHAPE (as NumPy broadcasts, stride 0),
#: given as they are: a Python scalar's 0-d array is never made full size.
AS_IS_SHAPES = [(), (1,), (37,), (1, 37), (12, 1), (1, 1), OUT_SHAPE]


def full(x: Array) -> Array:
    """``x`` broadcast to the output shape, for the oracle."""
    return np.broadcast_to(x, OUT_SHAPE)


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("dtype", ["bool", "int16", "float64", "V3"])
@pytest.mark.parametrize("seed", range(8))
def test_operands_broadcast_by_the_kernel(dtype: str, seed: int) -> None:
    dt, n = np.dtype(dtype), 1 + seed % 4
    shapes = [AS_IS_SHAPES[i] for i in RNG.integers(0, len(AS_IS_SHAPES), size=2 * n + 2)]
    shapes[seed % (2 * n + 1)] = OUT_SHAPE  # select_cases: the operands broadcast to it
    conds = [random_cond(shapes[k], np.dtype(np.int8), p=0.6 / n) for k in range(n)]
    choices = [random_values(shapes[n + k], dt) for k in range(n)]
    default = random_values(shapes[2 * n], dt)
    expected = oracle_select_cases(
        [full(c) for c in conds], [full(c) for c in choices], full(default)
    )
    for out in (None, np.empty(OUT_SHAPE, dt)):
        result = K.select_cases(tuple(conds), tuple(choices), default, out, OUT_SHAPE)
        assert result.shape == OUT_SHAPE and (out is None or result is out)
        assert_bytes(result, expected)
    which = random_which(shapes[-1], n + 1, np.dtype(np.uint8))
    cases = [*choices, default]
    shape = np.broadcast_shapes(which.shape, *(c.shape for c in cases))
    expected = oracle_select_n(
        np.broadcast_to(which, shape), [np.broadcast_to(c, shape) for c in cases]
    )
    result = K.select_n(which, tuple(cases), None, shape)
    assert result.shape == shape
    assert_bytes(result, expected)


def test_operands_that_do_not_fit_the_shape_are_refused() -> None:
    """The kernel places operands in the shape it is given and says when one does not
    fit (the core's validation makes that impossible: an internal error)."""
    a, b = np.zeros(3, np.float32), np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="an operand does not fit the output shape"):
        K.select_cases((a > 0,), (a,), b, None, (3,))
    with pytest.raises(ValueError, match="an operand does not fit the output shape"):
        K.select_n(np.zeros(4, np.int8), (a,), None, (4,))
    with pytest.raises(ValueError, match="an operand does not fit the output shape"):
        K.select_n(np.zeros((2, 3), np.int8), (a,), None, (3,))
    with pytest.raises(ValueError, match="out does not have the output shape"):
        K.select_cases((a > 0,), (a,), a[:1], np.zeros(4, np.float32), (3,))
    with pytest.raises(TypeError, match="takes 5 arguments"):
        K.select_cases((a > 0,), (a,), a, None)


def test_bad_arguments() -> None:
    a = np.zeros(3, np.float32)
    with pytest.raises(TypeError, match="which must be bool or an integer dtype"):
        K.select_n(a, (a,), None, (3,))
    # operands it does not read as they are: the wrapper converts them
    assert K.select_n(np.zeros(3, np.int8), (a, [1, 2, 3]), None, (3,)) is NotImplemented
    assert K.select_n([0, 0, 0], (a,), None, (3,)) is NotImplemented
    with pytest.raises(ValueError, match="at least one array"):
        K.select_n(np.zeros(3, np.int8), (), None, (3,))
    # the byte order this CPU does not use (">" is native on big-endian s390x)
    assert (
        K.select_n(np.zeros(3, np.dtype(np.int32).newbyteorder()), (a,), None, (3,))
        is NotImplemented
    )
    with pytest.raises(ValueError, match="as many choices as conds"):
        K.select_cases((a > 0, a > 1), (a,), a, None, (3,))
    with pytest.raises(TypeError, match="does not handle dtype"):
        K.select_cases((a > 0,), (a.astype(object),), a.astype(object), None, (3,))
    with pytest.raises(ValueError, match="read-only"):
        K.select_cases((a > 0,), (a,), a, np.broadcast_to(a, (3,)), (3,))


# --------------------------------------------------------------------------- threads


@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64", "complex128", "V3"])
def test_threaded_equals_single_threaded(dtype: str) -> None:
    """The same bytes on one thread and on the pool, for chunks that cut rows and blocks."""
    dt = np.dtype(dtype)
    shape = (7, 50_001)
    conds = [random_cond(shape, np.dtype(np.bool_), 0.2) for _ in range(4)]
    conds[1] = np.broadcast_to(random_cond((shape[1],), np.dtype(np.int32)), shape)
    choices = [random_values(shape, dt) for _ in range(4)]
    choices[2] = choices[2][::-1]
    default = np.broadcast_to(random_values((), dt), shape)
    which = random_which(shape, 5, np.dtype(np.int16))
    cases = [*choices, default]

    asel.set_num_threads(1)
    one_cases = kernel_select_cases(conds, choices, default, None)
    one_n = kernel_select_n(which, cases, None)
    numpy_kernel.set_parallel_threshold(0)
    numpy_kernel.set_load_guard(False)
    asel.set_num_threads(2)
    before = numpy_kernel.kernel_stats()["threaded_calls"]
    two_cases = kernel_select_cases(conds, choices, default, None)
    two_n = kernel_select_n(which, cases, None)
    if K.HAVE_THREADS:
        assert numpy_kernel.kernel_stats()["threaded_calls"] == before + 2
    assert raw(one_cases).tobytes() == raw(two_cases).tobytes()
    assert raw(one_n).tobytes() == raw(two_n).tobytes()
    assert_bytes(two_cases, oracle_select_cases(conds, choices, default))
    assert_bytes(two_n, oracle_select_n(which, cases))


def test_threaded_out_of_range_raises() -> None:
    numpy_kernel.set_parallel_threshold(0)
    numpy_kernel.set_load_guard(False)
    asel.set_num_threads(2)
    which = random_which((400_000,), 4, np.dtype(np.int64))
    which[[10, 399_990]] = [4, -1]
    with pytest.raises(IndexError) as info:
        kernel_select_n(which, [np.ones(400_000, np.float32)] * 4, None)
    assert info.value.args in ((4,), (-1,))
