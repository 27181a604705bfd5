"""The kernel's streaming-store loops (outputs larger than the caches) against ``np.where``.

A contiguous job (bool or 1-byte cond, items of 1, 2, 4 or 8 bytes, rows of
4 KiB or more), or a cond broadcast along rows of 4 KiB or more (whole rows
copied), that moves at least :func:`get_stream_threshold` bytes writes its
output with non-temporal stores on AVX2 and AVX-512. The threshold is set
to 0 here so that small arrays take those loops. Every usable instruction set
(the ``isa`` fixture forces each copy in turn) is checked against ``np.where``
on bit views, at lengths around the vector widths, with outputs that start off
the vector boundary (the loop peels up to it), split over threads, and beside
the jobs that must keep plain stores.
"""

from __future__ import annotations

import os
import sys
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

pytestmark = pytest.mark.usefixtures("isa", "_restore_settings")

#: One dtype per item size the streaming loops have, and a 16-byte one that has none.
STREAM_DTYPES = [np.dtype(n) for n in ("u1", "f2", "f4", "c8")]
#: 1-byte conds take the loops (any nonzero byte is true); wider ones do not.
STREAM_CONDS = [np.dtype(n) for n in ("bool", "i1")]
#: Rows long enough (4 KiB) for every item size, plus tails around the vector widths.
LENGTHS = [4096, 4097, 4096 + 15, 4096 + 31, 4096 + 63, 10_007]


def _explain(c: Any, a: Any, b: Any, out: Any = None) -> Any:
    shape = np.broadcast_shapes(c.shape, a.shape, b.shape)
    return numpy_kernel.explain(c, a, b, out, shape, None, None, None)


def _stores(c: Any, a: Any, b: Any, out: Any = None) -> str:
    return str(_explain(c, a, b, out)["stores"])


def _streams() -> bool:
    """Whether this build has streaming loops for the instruction set in use."""
    x86_gcc_or_clang = sys.platform != "win32" or "GCC" in sys.version
    return numpy_kernel.isa_info()["current"] in ("avx2", "avx512") and x86_gcc_or_clang


@pytest.mark.parametrize("dtype", STREAM_DTYPES, ids=str)
def test_streaming_loop_matches_where(dtype: np.dtype[Any]) -> None:
    numpy_kernel.set_stream_threshold(0)
    for cdtype in STREAM_CONDS:
        for n in LENGTHS:
            for shift in (0, 1, 3):  # elements the output starts past a 64-byte boundary
                c, a, b = (
                    random_cond((n,), cdtype),
                    random_array((n,), dtype),
                    random_array((n,), dtype),
                )
                buffer = np.zeros(n + 64, dtype)
                out = buffer[shift : shift + n]
                want = "streaming" if _streams() else "cached"
                assert _stores(c, a, b, out) == want, (cdtype, n, shift)
                before = buffer.copy()
                result = asel.select(c, a, b, out=out)
                assert result is out
                assert_bits_equal(out, oracle(c, a, b))
                # nothing outside out was written
                assert_bits_equal(buffer[:shift], before[:shift].view(buffer.dtype))
                assert_bits_equal(buffer[shift + n :], before[shift + n :].view(buffer.dtype))


#: Every item size the row copy moves: the streaming loops' four, 16 and (x86-64) 32 bytes.
ROW_DTYPES = [*STREAM_DTYPES, np.dtype("c16"), np.dtype(np.clongdouble)]


@pytest.mark.parametrize("dtype", ROW_DTYPES, ids=str)
def test_streamed_row_copies_match_where(dtype: np.dtype[Any]) -> None:
    """A cond (N, 1) copies whole rows of then or else: streamed for any item and cond size."""
    numpy_kernel.set_stream_threshold(0)
    rows = 7
    for cdtype in (np.dtype(bool), np.dtype("i8")):
        for m in (4096, 4096 + 5, 9001):
            for shift in (0, 1, 3):
                c = random_cond((rows, 1), cdtype)
                a, b = random_array((rows, m), dtype), random_array((rows, m), dtype)
                buffer = np.zeros(rows * m + 64, dtype)
                out = buffer[shift : shift + rows * m].reshape(rows, m)
                assert _explain(c, a, b, out)["loop"] == "block"
                assert _stores(c, a, b, out) == ("streaming" if _streams() else "cached")
                before = buffer.copy()
                asel.select(c, a, b, out=out)
                assert_bits_equal(out, oracle(c, a, b))
                assert buffer[:shift].tobytes() == before[:shift].tobytes()
                assert buffer[shift + rows * m :].tobytes() == before[shift + rows * m :].tobytes()
    # rows of then that are strided keep the plain copy inside the streaming loop
    c = random_cond((rows, 1))
    a, b = random_array((rows, 2 * 4096), dtype)[:, ::2], random_array((rows, 4096), dtype)
    assert_bits_equal(asel.select(c, a, b), oracle(c, a, b))


def test_streaming_on_threads_and_broadcast_rows() -> None:
    """Split over two threads, and a cond (1, M) whose rows stream one by one."""
    numpy_kernel.set_stream_threshold(0)
    numpy_kernel.set_parallel_threshold(0)
    numpy_kernel.set_load_guard(False)
    asel.set_num_threads(2)
    c, a, b = (
        random_cond((300_001,)),
        random_array((300_001,), np.dtype("f4")),
        random_array((300_001,), np.dtype("f4")),
    )
    assert_bits_equal(asel.select(c, a, b), oracle(c, a, b))
    c2 = random_cond((1, 1031 * 4))
    a2, b2 = (
        random_array((37, 1031 * 4), np.dtype("f8")),
        random_array((37, 1031 * 4), np.dtype("f8")),
    )
    if _streams():
        assert _stores(c2, a2, b2) == "streaming"
    assert_bits_equal(asel.select(c2, a2, b2), oracle(c2, a2, b2))


def test_jobs_that_keep_plain_stores() -> None:
    numpy_kernel.set_stream_threshold(0)
    f4 = np.dtype("f4")
    n = 8192
    c, a, b = random_cond((n,)), random_array((n,), f4), random_array((n,), f4)
    cases = {
        "a 2-byte cond": (random_cond((n,), np.dtype("u2")), a, b),
        "16-byte items": (
            c,
            random_array((n,), np.dtype("c16")),
            random_array((n,), np.dtype("c16")),
        ),
        "rows under 4 KiB": (  # the cond (1, M) keeps the rows apart
            random_cond((1, 512)),
            random_array((64, 512), f4),
            random_array((64, 512), f4),
        ),
        "a strided operand": (c[::2], a[::2], b[::2]),
        "then a 0-d array": (c, np.asarray(np.float32(2)), b),
    }
    for name, (cc, aa, bb) in cases.items():
        assert _stores(cc, aa, bb) == "cached", name
        assert_bits_equal(asel.select(cc, aa, bb), oracle(*np.broadcast_arrays(cc, aa, bb)))
    # in place (out is then): plain stores, the loop reads out
    out = a.copy()
    assert _stores(c, out, b, out) == "cached"
    want = oracle(c, out, b)
    asel.select(c, out, b, out=out)
    assert_bits_equal(out, want)


def test_threshold_counts_the_bytes_the_job_moves() -> None:
    n = 8192
    c, a, b = (
        random_cond((n,)),
        random_array((n,), np.dtype("f4")),
        random_array((n,), np.dtype("f4")),
    )
    moved = n * (1 + 4 + 4 + 4)  # cond, then, else and out
    numpy_kernel.set_stream_threshold(moved)
    assert _stores(c, a, b) == ("streaming" if _streams() else "cached")
    numpy_kernel.set_stream_threshold(moved + 1)
    assert _stores(c, a, b) == "cached"


def test_threshold_setting() -> None:
    default = numpy_kernel.get_stream_threshold()
    assert default > 0
    numpy_kernel.set_stream_threshold(12345)
    assert numpy_kernel.get_stream_threshold() == 12345
    with pytest.raises(ValueError, match=">= 0"):
        numpy_kernel.set_stream_threshold(-1)
    assert numpy_kernel.get_stream_threshold() == 12345
    numpy_kernel.set_stream_threshold(None)
    assert numpy_kernel.get_stream_threshold() == default


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's sysfs")
def test_default_threshold_is_the_last_level_cache() -> None:
    sizes = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        path = os.path.join(base, entry, "size")
        if entry.startswith("index") and os.path.exists(path):
            with open(path) as f:
                text = f.read().strip()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            sizes.append(int(text.rstrip("KMG")) * scale)
    numpy_kernel.set_stream_threshold(None)
    assert numpy_kernel.get_stream_threshold() == (max(sizes) if sizes else 32 << 20)
