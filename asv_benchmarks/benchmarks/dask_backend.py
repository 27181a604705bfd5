"""``arrayselect.select`` on Dask arrays against ``dask.array.where``.

10^8 float32 elements, generated lazily block by block (``then`` uniform,
``else`` normal, ``cond = then > 0.5``), selected, then reduced with ``.sum()``
so that memory stays bounded: what is timed is graph construction plus the
whole computation (generation, select, reduction), on the threaded scheduler
and on a ``dask.distributed`` LocalCluster of two single-threaded worker
processes. ``time_select`` and ``time_where`` share their parameters, so asv
shows them side by side; ``asv_benchmarks/dask_ratio.py`` prints the ratio
measured in one run.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

N = 10**8
CHUNK = 5 * 10**6  # 20 blocks of 20 MB


def _inputs(n: int, chunk: int = CHUNK) -> tuple[Any, Any, Any]:
    import dask.array as da

    rng = da.random.default_rng(0)
    then = rng.random((n,), chunks=chunk, dtype=np.float32)
    else_ = rng.standard_normal((n,), chunks=chunk, dtype=np.float32)
    return then > np.float32(0.5), then, else_


class DaskSelect:
    """select vs da.where, 10^8 float32, threaded scheduler and a 2-worker LocalCluster."""

    params: ClassVar[list[list[str]]] = [["threads", "local-cluster-2"]]
    param_names: ClassVar[list[str]] = ["scheduler"]
    timeout = 600
    number = 1
    repeat = (3, 7, 120.0)
    warmup_time = 0.0

    def setup(self, scheduler: str) -> None:
        try:
            import dask.array  # noqa: F401
        except ImportError as exc:  # asv skips a benchmark whose setup raises this
            raise NotImplementedError("dask is not installed") from exc
        self.cluster: Any = None
        self.client: Any = None
        if scheduler == "local-cluster-2":
            from dask.distributed import Client, LocalCluster

            self.cluster = LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=40,
            )
            self.client = Client(self.cluster, set_as_default=False)
        # Warm up: load the backends here and on the workers, outside the timing.
        import arrayselect

        cond, then, else_ = _inputs(8000, chunk=1000)
        self._run(arrayselect.select(cond, then, else_).sum())

    def teardown(self, scheduler: str) -> None:
        if self.client is not None:
            self.client.close()
            self.cluster.close()

    def _run(self, total: Any) -> None:
        if self.client is not None:
            self.client.compute(total, sync=True)
        else:
            total.compute(scheduler="threads")

    def time_select(self, scheduler: str) -> None:
        import arrayselect

        cond, then, else_ = _inputs(N)
        self._run(arrayselect.select(cond, then, else_).sum())

    def time_where(self, scheduler: str) -> None:
        import dask.array as da

        cond, then, else_ = _inputs(N)
        self._run(da.where(cond, then, else_).sum())


class DaskGraph:
    """Cost of the ``select`` call itself: building the graph (no compute)."""

    params: ClassVar[list[list[int]]] = [[20, 2000]]
    param_names: ClassVar[list[str]] = ["blocks"]

    def setup(self, blocks: int) -> None:
        try:
            import dask.array  # noqa: F401
        except ImportError as exc:
            raise NotImplementedError("dask is not installed") from exc
        import dask.array as da

        self.then = da.ones((blocks * 1000,), chunks=1000, dtype=np.float32)
        self.cond = self.then > 0
        self.else_ = da.zeros_like(self.then)
        import arrayselect

        arrayselect.select(self.cond, self.then, self.else_)  # load the backend untimed

    def time_select_graph(self, blocks: int) -> None:
        import arrayselect

        arrayselect.select(self.cond, self.then, self.else_)

    def time_where_graph(self, blocks: int) -> None:
        import dask.array as da

        da.where(self.cond, self.then, self.else_)
