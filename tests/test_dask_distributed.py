"""Select on a real ``dask.distributed`` cluster: two worker processes on 127.0.0.1.

The 10^8-element inputs are generated lazily on the workers and reduced there;
the client only ever receives scalars. The cluster is started once for the
module and closed after it. Marked ``slow`` (it still runs in CI: the test
script deselects nothing); it takes a few tens of seconds on two cores.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dask is not installed")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")

import arrayselect as asel  # noqa: E402

pytestmark = pytest.mark.slow

N = 10**8
CHUNK = 5 * 10**6  # 20 blocks of 20 MB (float32)

# Picklable by reference on the workers (test modules are not importable there).
_as_bits = operator.methodcaller("view", np.uint32)


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("select computed or persisted a Dask graph during the call")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A 2-process LocalCluster (one thread each, no dashboard) and its client."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=40,  # logging.ERROR
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as c,
    ):
        yield c


def _checksum(x: Any) -> Any:
    """Sum of the float32 bit patterns as uint64: exact, whatever the reduction order."""
    return x.map_blocks(_as_bits, dtype=np.uint32).sum(dtype=np.uint64)


def _inputs(seed: int) -> tuple[Any, Any, Any]:
    rng = da.random.default_rng(seed)
    a = rng.random((N,), chunks=CHUNK, dtype=np.float32)
    b = rng.standard_normal((N,), chunks=CHUNK, dtype=np.float32)
    return a > np.float32(0.5), a, b


def test_select_1e8_on_cluster_matches_where(client: Any) -> None:
    cond, then, else_ = _inputs(20240607)
    with dask.config.set(scheduler=_refuse):  # building the graph computes nothing
        out = asel.select(cond, then, else_)
    assert out.shape == (N,)
    assert out.chunks == then.chunks
    assert out.dtype == np.float32
    reference = da.where(cond, then, else_)

    got_bits, want_bits = _checksum(out), _checksum(reference)
    got_sum, want_sum = out.sum(dtype=np.float64), reference.sum(dtype=np.float64)
    # Only 0-d reductions leave the workers: the client never holds a 10^8 array.
    for r in (got_bits, want_bits, got_sum, want_sum):
        assert r.shape == ()

    with distributed.get_task_stream(client) as stream:
        futures = client.compute([got_bits, want_bits, got_sum, want_sum])
        results = client.gather(futures)
    for r in results:
        assert np.ndim(r) == 0
    got_bits_v, want_bits_v, got_sum_v, want_sum_v = (r.item() for r in results)
    assert got_bits_v == want_bits_v
    assert got_sum_v == pytest.approx(want_sum_v, rel=1e-12)
    # Both worker processes did the work.
    workers = {task["worker"] for task in stream.data}
    assert len(workers) == 2, workers


def test_modes_scalars_and_unknown_chunks_on_cluster(client: Any) -> None:
    rng = da.random.default_rng(7)
    x = rng.random((4000, 30), chunks=(1000, 10), dtype=np.float32)
    row = rng.random((30,), chunks=10, dtype=np.float32)
    col = rng.random((4000,), chunks=1000) > 0.5
    flat = x[:, 0]
    unknown = flat[flat > 0.25]
    with dask.config.set(scheduler=_refuse):
        results = {
            "numpy": asel.select(x > 0.5, x, row),
            "scalar": asel.select(x > 0.5, 1.0, x),
            "pdpd": asel.select(col, x, row[:1], auto_broadcast="pdpd", axis=0),
            "none": asel.select(x > 0.5, x, x * 2, auto_broadcast="none"),
            "unknown": asel.select(unknown > 0.5, unknown, -1.0),
            "int_cond": asel.select((x * 3).astype(np.uint8), x, row),
        }
    xn, rn, cn = client.compute([x, row, col], sync=True)
    fn = xn[:, 0]
    un = fn[fn > 0.25]
    expected = {
        "numpy": np.where(xn > 0.5, xn, rn),
        "scalar": np.where(xn > 0.5, np.float32(1.0), xn),
        "pdpd": np.where(cn[:, None], xn, rn[:1]),
        "none": np.where(xn > 0.5, xn, xn * 2),
        "unknown": np.where(un > 0.5, un, np.float32(-1.0)),
        "int_cond": np.where((xn * 3).astype(np.uint8) != 0, xn, rn),
    }
    computed = dict(zip(results, client.compute(list(results.values()), sync=True), strict=True))
    for name, want in expected.items():
        got = np.asarray(computed[name])
        assert got.dtype == want.dtype, name
        assert got.tobytes() == want.tobytes(), name
