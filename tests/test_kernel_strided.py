"""The kernel's one-pass strided loops (``strided-step``) against ``np.where``.

cond, then and else on one step of 2, 3 or 4 elements with a contiguous output
(``x[:, ::2]`` slices) take a loop that reads the step directly, with the
instruction set's deinterleaving permutes. Every item size (1, 2, 4, 8, 16 and
32 bytes), every cond width and every usable instruction set (the ``isa``
fixture of test_numpy_kernel: each copy of the loops is forced in turn) is
checked against ``np.where`` on bit views, at lengths around the vector widths
(tails), at offsets that misalign the first element against the vector width,
and beside the strides that do not take the loop (negative steps, other steps,
a strided output), whose results must not change either.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from arrayselect.backends.shared import kernel as numpy_kernel
from test_numpy_kernel import (  # noqa: F401  (isa and _restore_settings are fixtures)
    _restore_settings,
    assert_bits_equal,
    isa,
    oracle,
    random_array,
    random_cond,
)

import arrayselect as asel

# each test once per usable instruction set, the kernel's settings restored after
pytestmark = pytest.mark.usefixtures("isa", "_restore_settings")

#: One dtype per item size the loops have: 1, 2, 4, 8, 16 and (where NumPy has it) 32.
VALUE_DTYPES = [np.dtype(n) for n in ("u1", "f2", "f4", "f8", "c16")]
if np.dtype(np.clongdouble).itemsize == 32:
    VALUE_DTYPES.append(np.dtype(np.clongdouble))
COND_DTYPES = [np.dtype(n) for n in ("bool", "u2", "i4", "i8")]
#: Around every vector width (16, 32, 64 bytes of 1..8-byte items) and the unroll.
LENGTHS = [0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1031]


def _explain(cond: np.ndarray, then: np.ndarray, else_: np.ndarray, out: Any = None) -> Any:
    shape = np.broadcast_shapes(cond.shape, then.shape, else_.shape)
    return numpy_kernel.explain(cond, then, else_, out, shape, None, None, None)


def _views(n: int, step: int, offset: int, dtype: np.dtype[Any], cdtype: np.dtype[Any]) -> Any:
    """cond, then and else of n elements on `step`, starting `offset` elements in."""
    size = offset + abs(step) * max(n, 1) + 3
    c = random_cond((size,), cdtype)
    a, b = random_array((size,), dtype), random_array((size,), dtype)
    sl = slice(size - 1 - offset, None, step) if step < 0 else slice(offset, None, step)
    return c[sl][:n], a[sl][:n], b[sl][:n]


@pytest.mark.parametrize("step", [2, 3, 4])
@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=str)
def test_step_loop_matches_where(dtype: np.dtype[Any], step: int) -> None:
    for cdtype in COND_DTYPES:
        for n in LENGTHS:
            for offset in (0, 1, 5):
                c, a, b = _views(n, step, offset, dtype, cdtype)
                if n >= 2:  # one element drops its axis
                    assert _explain(c, a, b)["loop"] == "strided-step", (cdtype, n)
                result = asel.select(c, a, b)
                assert result.flags.c_contiguous
                assert_bits_equal(result, oracle(c, a, b))


@pytest.mark.parametrize("step", [-1, -2, -3, 5, 8])
@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=str)
def test_other_steps_unchanged(dtype: np.dtype[Any], step: int) -> None:
    """Negative and larger steps keep their loops (buffered or element by element)."""
    for cdtype in (np.dtype(bool), np.dtype("i8")):
        for n in (1, 17, 65, 1031):
            for offset in (0, 3):
                c, a, b = _views(n, step, offset, dtype, cdtype)
                assert _explain(c, a, b)["loop"] != "strided-step"
                assert_bits_equal(asel.select(c, a, b), oracle(c, a, b))


@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=str)
def test_mixed_and_strided_out(dtype: np.dtype[Any]) -> None:
    """Steps that differ between operands, broadcast scalars and a strided out."""
    c = random_cond((64, 200))
    a, b = random_array((64, 200), dtype), random_array((64, 200), dtype)
    s2 = (slice(None), slice(0, 130, 2))  # 65 columns on step 2
    s3 = (slice(None), slice(1, 196, 3))  # 65 columns on step 3
    cases = [
        (c[s2], a[s2], b[s3]),  # else on another step
        (c[s2], a[:, :65], b[s2]),  # then contiguous
        (c[s2], a[s2], b[:1, :1]),  # else a broadcast element
        (c[s2].copy(), a[s2], b[s2]),  # cond contiguous
    ]
    for cv, av, bv in cases:
        assert _explain(cv, av, bv)["loop"] != "strided-step"
        assert_bits_equal(asel.select(cv, av, bv), oracle(cv, av, bv))
    # out strided: the inputs' step is read, out is written on its own step
    out_base = random_array((64, 130), dtype)
    out = out_base[:, ::2]
    before = out_base[:, 1::2].copy()
    asel.select(c[s2], a[s2], b[s2], out=out)
    assert_bits_equal(out, oracle(c[s2], a[s2], b[s2]))
    assert_bits_equal(out_base[:, 1::2], bits_of(before))


def bits_of(x: np.ndarray) -> np.ndarray:
    """The oracle's bit view of x (so untouched elements compare bit for bit)."""
    return oracle(np.ones(x.shape, bool), x, x)


@pytest.mark.parametrize("dtype", [np.dtype("f4"), np.dtype("f8"), np.dtype("c16")], ids=str)
def test_step_loop_on_threads_and_rows(dtype: np.dtype[Any]) -> None:
    """2-D step-2 slices of odd rows, split across threads inside rows."""
    asel.set_num_threads(2)
    numpy_kernel.set_parallel_threshold(1000)
    numpy_kernel.set_load_guard(False)
    c = random_cond((301, 2 * 257 + 1))
    a, b = random_array(c.shape, dtype), random_array(c.shape, dtype)
    for sl in ((slice(None), slice(None, None, 2)), (slice(1, None, 3), slice(1, None, 2))):
        cv, av, bv = c[sl], a[sl], b[sl]
        info = _explain(cv, av, bv)
        assert info["loop"] == "strided-step"
        assert_bits_equal(asel.select(cv, av, bv), oracle(cv, av, bv))
