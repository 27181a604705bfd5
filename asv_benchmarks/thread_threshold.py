"""Measure where splitting a select across threads starts to pay.

    python asv_benchmarks/thread_threshold.py [--threads 2] [--repeats 31]
        [--pause-ms P | --busy-gap-ms G]

For output sizes from 2^12 to 2^23 float32 elements in steps of sqrt(2) (random bool cond,
contiguous, fresh output), times ``arrayselect.select`` on 1 thread and on
``--threads`` threads with the parallel threshold forced to 0, alternately,
and prints the medians, their ratio, and the smallest size from which the
threaded run is faster at that size and every larger one. That size is what
``SK_DEFAULT_PARALLEL_MIN`` in ``backends/shared/_kernel/sk_kernel.h`` is set from.

By default calls run back to back (batches, timeit style). ``--pause-ms P``
instead times single calls, each after sleeping P ms, so that the pool's
workers have gone to sleep: the cost of an isolated call in an idle program.
``--busy-gap-ms G`` times single calls each after G ms of Python busy-work: an
isolated call in a program that does something else in between. Either way
every job is split (threshold 0), so this measures what the kernel's decision
(``sk_pool.c``) avoids or uses.
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np
from arrayselect.backends.shared import kernel as numpy_kernel

import arrayselect as asel
from arrayselect._tools.bench_stats import (
    busy,
    compare_interleaved,
    format_load,
    load_average,
    machine,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument(
        "--pause-ms",
        type=float,
        default=0.0,
        help="sleep this long before each (single) timed call",
    )
    parser.add_argument(
        "--busy-gap-ms",
        type=float,
        default=0.0,
        help="busy-wait this long in Python before each (single) timed call",
    )
    args = parser.parse_args()
    pause = args.pause_ms / 1e3
    busy_gap = args.busy_gap_ms / 1e3
    rng = np.random.default_rng(0)
    saved_threads = asel.get_num_threads()
    numpy_kernel.set_parallel_threshold(0)
    numpy_kernel.set_load_guard(False)  # measure threads as they are
    mode = (
        f"single calls after a {args.pause_ms:g} ms pause"
        if pause
        else f"single calls after {args.busy_gap_ms:g} ms of Python busy-work"
        if busy_gap
        else "back to back"
    )
    load_before = load_average()
    print(f"# {machine().describe()}")
    print(f"# threads={args.threads}, repeats={args.repeats}, float32, {mode}, median per call")
    print(f"{'elements':>10}  {'1 thread':>11}  {args.threads} threads  {'speedup':>8}")
    faster: list[tuple[int, bool]] = []

    def before(threads: int) -> None:  # untimed, before each batch
        asel.set_num_threads(threads)
        if pause:
            time.sleep(pause)
        if busy_gap:
            busy(busy_gap)

    try:
        for half_exp in range(24, 47):
            n = round(2 ** (half_exp / 2)) // 64 * 64
            c = rng.random(n) < 0.5
            a = rng.random(n, dtype=np.float32)
            b = rng.random(n, dtype=np.float32)
            number = 1 if pause or busy_gap else max(1, 2**16 // n * 4)
            for threads in (1, args.threads):
                asel.set_num_threads(threads)
                asel.select(c, a, b)

            t1, tn = compare_interleaved(
                [functools.partial(asel.select, c, a, b)] * 2,
                args.repeats,
                number=number,
                setup=[functools.partial(before, 1), functools.partial(before, args.threads)],
            )
            faster.append((n, tn < t1))
            print(
                f"{n:>10}  {t1 * 1e6:>8.1f} us  {tn * 1e6:>8.1f} us  {t1 / tn:>7.2f}x", flush=True
            )
    finally:
        asel.set_num_threads(saved_threads)
        numpy_kernel.set_parallel_threshold(None)
        numpy_kernel.set_load_guard(True)
    threshold = None
    for i, (n, _) in enumerate(faster):
        if all(ok for _, ok in faster[i:]):
            threshold = n
            break
    print(f"threads pay from {threshold} elements on" if threshold else "threads never pay")
    print(f"stats: {numpy_kernel.kernel_stats()}")
    print(f"# {format_load(load_before, load_average())}")


if __name__ == "__main__":
    main()
