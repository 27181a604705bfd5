"""Ratio of ``arrayselect.select`` to ``dask.array.where`` on Dask arrays, in one run.

Workload (the same as ``benchmarks/dask_backend.py``): 10^8 float32 elements in
blocks of 5*10^6; ``then`` uniform, ``else`` normal, ``cond = then > 0.5``, all
generated lazily block by block; ``select(cond, then, else).sum()`` against
``da.where(cond, then, else).sum()``, so memory stays bounded and only a scalar
comes back. Timed: graph construction plus the whole computation.

Schedulers: the threaded scheduler, and a ``dask.distributed`` LocalCluster of
two single-threaded worker processes on 127.0.0.1.

A second workload, ``inputs in memory``, persists the three inputs first (in
the process, or on the workers) and times only select/where plus the sum, so
the per-block cost of select is not hidden behind random-number generation.

Each figure is the median of ``--repeats`` (>= 5) runs; select and where
alternate in a new random order each round (``arrayselect._tools.bench_stats``,
the measuring scripts' one timing loop) after one untimed warm-up run of each.

Usage::

    .venv/bin/python asv_benchmarks/dask_ratio.py [--n 100000000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Callable
from typing import Any

import numpy as np

from arrayselect._tools.bench_stats import (
    Spread,
    format_load,
    load_average,
    machine,
    time_interleaved,
)


def _inputs(n: int, chunk: int) -> tuple[Any, Any, Any]:
    import dask.array as da

    rng = da.random.default_rng(0)
    then = rng.random((n,), chunks=chunk, dtype=np.float32)
    else_ = rng.standard_normal((n,), chunks=chunk, dtype=np.float32)
    return then > np.float32(0.5), then, else_


def _compare(
    run: Callable[[Any], Any], inputs: Callable[[], tuple[Any, Any, Any]], repeats: int
) -> tuple[list[float], list[float], Any, Any]:
    """Median-ready timings of select and where; also their results (to check them)."""
    import dask.array as da

    import arrayselect

    def select() -> Any:
        cond, then, else_ = inputs()
        return run(arrayselect.select(cond, then, else_).sum())

    def where() -> Any:
        cond, then, else_ = inputs()
        return run(da.where(cond, then, else_).sum())

    got, want = select(), where()  # warm-up: imports on the workers, page faults
    t_select, t_where = time_interleaved([select, where], repeats, number=1)
    return t_select, t_where, got, want


def _report(label: str, t_select: list[float], t_where: list[float], got: Any, want: Any) -> None:
    ms, mw = Spread.of(t_select).median, Spread.of(t_where).median
    same = "yes" if np.asarray(got).tobytes() == np.asarray(want).tobytes() else "NO"
    print(f"{label:<40} {ms:>9.3f} {mw:>9.3f} {ms / mw:>8.3f}   {same}")
    print(f"{'':<40} select runs: {' '.join(f'{t:.3f}' for t in t_select)}")
    print(f"{'':<40} where runs:  {' '.join(f'{t:.3f}' for t in t_where)}")


def main() -> None:
    """Measure and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**8)
    parser.add_argument("--chunk", type=int, default=5 * 10**6)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-cluster", action="store_true")
    args = parser.parse_args()
    if args.repeats < 5:
        parser.error("--repeats must be at least 5")

    import dask
    import dask.array as da
    import distributed

    import arrayselect

    n, chunk = args.n, args.chunk
    block = np.ones(4, np.float32)
    print(
        f"arrayselect.select vs dask.array.where: n={n} float32, blocks of {chunk} "
        f"({-(-n // chunk)} blocks), .sum() of the result; median of {args.repeats} runs"
    )
    load_before = load_average()
    print(
        f"{machine().describe()}; python {platform.python_version()}, numpy {np.__version__}, "
        f"dask {dask.__version__}, distributed {distributed.__version__}; Dask arrays -> backend "
        f"{arrayselect.backend_for(da.ones(4) > 0, da.ones(4), 0.0).name}, NumPy blocks -> "
        f"backend {arrayselect.backend_for(block > 0, block, block).name}"
    )
    print(f"{'scheduler / workload':<40} {'select s':>9} {'where s':>9} {'ratio':>8}   same sum")

    def lazy() -> tuple[Any, Any, Any]:
        return _inputs(n, chunk)

    threads: Callable[[Any], Any] = lambda x: x.compute(scheduler="threads")  # noqa: E731
    _report("threads / generated lazily", *_compare(threads, lazy, args.repeats))
    held = dask.persist(*_inputs(n, chunk), scheduler="threads")
    _report("threads / inputs in memory", *_compare(threads, lambda: held, args.repeats))

    if not args.no_cluster:
        with (
            distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=40,
            ) as cluster,
            distributed.Client(cluster, set_as_default=False) as client,
        ):

            def on_cluster(x: Any) -> Any:
                return client.compute(x, sync=True)

            _report(
                "LocalCluster(2 workers) / generated lazily",
                *_compare(on_cluster, lazy, args.repeats),
            )
            persisted = client.persist(list(_inputs(n, chunk)))
            with client.as_current():
                distributed.wait(persisted)
            cluster_held = (persisted[0], persisted[1], persisted[2])
            _report(
                "LocalCluster(2 workers) / inputs in memory",
                *_compare(on_cluster, lambda: cluster_held, args.repeats),
            )
    print(format_load(load_before, load_average()))


if __name__ == "__main__":
    main()
