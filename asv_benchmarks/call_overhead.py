"""Per-call CPU time of ``select`` against its peer, for comparing two builds.

Run it alternately with each build's Python, so that both see the same machine::

    for i in 1 2 3 4 5; do
        /path/to/before/.venv/bin/python asv_benchmarks/call_overhead.py numpy
        .venv/bin/python asv_benchmarks/call_overhead.py numpy
    done

``numpy``: ``select`` and ``np.where`` at 1, 100 and 1000 float32 elements (and
``select`` with a Python scalar ``else``, and ``select`` writing into ``out=``,
whose ``out_ratio`` is its time over the same call without ``out``); ``jax``:
eager ``select`` on 1-element arrays and ``jax.jit(lax.select)``, each followed
by ``block_until_ready``. It prints one JSON line: the median over ``--repeats``
rounds of the per-call thread CPU time in ns, and each ``select`` time over its
peer's (the ratio to compare between builds: the absolute times move with the
machine).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import arrayselect as asel
from arrayselect._tools.bench_stats import compare_interleaved


def _medians(fns: dict[str, Callable[[], Any]], calls: int, repeats: int) -> dict[str, float]:
    """Nanoseconds of the calling thread's CPU time per call, medians of interleaved
    batches of ``calls``."""
    for fn in fns.values():  # warm every cache first
        for _ in range(1000):
            fn()
    seconds = compare_interleaved(list(fns.values()), repeats, number=calls, clock=time.thread_time)
    return {name: round(s * 1e9, 1) for name, s in zip(fns, seconds, strict=True)}


def _numpy_size(size: int, calls: int, repeats: int) -> dict[str, float]:
    rng = np.random.default_rng(size)
    c = rng.random(size) < 0.5
    a = rng.random(size, dtype=np.float32)
    b = -a
    o = np.empty_like(a)
    medians = _medians(
        {
            f"select_{size}": lambda: asel.select(c, a, b),
            f"np.where_{size}": lambda: np.where(c, a, b),
            f"select_scalar_{size}": lambda: asel.select(c, a, 0.5),
            f"select_out_{size}": lambda: asel.select(c, a, b, out=o),
        },
        calls,
        repeats,
    )
    medians[f"ratio_{size}"] = round(medians[f"select_{size}"] / medians[f"np.where_{size}"], 3)
    medians[f"out_ratio_{size}"] = round(
        medians[f"select_out_{size}"] / medians[f"select_{size}"], 3
    )
    return medians


def numpy_cases(calls: int, repeats: int) -> dict[str, float]:
    """``select`` and ``np.where`` at 1, 100 and 1000 elements."""
    medians: dict[str, float] = {}
    for size in (1, 100, 1000):
        medians.update(_numpy_size(size, calls, repeats))
    return medians


def jax_cases(calls: int, repeats: int) -> dict[str, float]:
    """Eager ``select`` and ``jax.jit(lax.select)`` at 1 element."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    c, a, b = jnp.array([True]), jnp.ones(1, jnp.float32), jnp.zeros(1, jnp.float32)
    jitted = jax.jit(lax.select)
    medians = _medians(
        {
            "select": lambda: asel.select(c, a, b).block_until_ready(),
            "jit(lax.select)": lambda: jitted(c, a, b).block_until_ready(),
        },
        calls // 10,
        repeats,
    )
    medians["ratio"] = round(medians["select"] / medians["jit(lax.select)"], 3)
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", choices=("numpy", "jax"))
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    cases = numpy_cases if args.library == "numpy" else jax_cases
    print(json.dumps(cases(args.calls, args.repeats)))


if __name__ == "__main__":
    main()
