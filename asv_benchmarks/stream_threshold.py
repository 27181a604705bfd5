"""Measure where streaming stores start to pay, and what they cost whoever reads the output.

    python asv_benchmarks/stream_threshold.py [--repeats 15] [--rounds 3]

For float32 outputs from 10^6 to 10^7 elements (random bool cond, then and
else contiguous, ``out=`` given), times ``arrayselect.select`` with plain
stores (stream threshold set out of reach) and with streaming stores
(threshold 0), single calls interleaved in a new random order each of ``--repeats``
times ``--rounds`` rounds, and the same call followed
by ``out.sum()``: a program that reads the result next pays for an output that
is no longer in the cache. Prints the medians per size, the bytes the call
moves, and the default threshold (the last-level cache's size), which is what
``get_stream_threshold()`` starts from.
"""

from __future__ import annotations

import argparse
import functools

import numpy as np
from arrayselect.backends.shared import kernel as numpy_kernel

import arrayselect as asel
from arrayselect._tools.bench_stats import compare_interleaved, format_load, load_average, machine

SIZES = [10**6, 2 * 10**6, 3 * 10**6, 4 * 10**6, 6 * 10**6, 10**7]
NEVER = 1 << 62


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    default = numpy_kernel.get_stream_threshold()
    load_before = load_average()
    print(
        f"# {machine().describe()}; {numpy_kernel.isa_info()['current']} loops, "
        f"{asel.get_num_threads()} threads, "
        f"default stream threshold {default / 2**20:.0f} MiB moved"
    )
    head = f"{'plain':>9} {'stream':>9}   {'+sum plain':>10} {'+sum stream':>11}"
    print(f"{'elements':>10} {'moved':>9}   {head}")
    try:
        for n in SIZES:
            c = rng.random(n) < 0.5
            a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
            out = np.empty(n, np.float32)

            def call(
                c: np.ndarray = c, a: np.ndarray = a, b: np.ndarray = b, out: np.ndarray = out
            ) -> None:
                asel.select(c, a, b, out=out)

            def call_then_sum(out: np.ndarray = out) -> None:
                call()
                out.sum()

            plain = functools.partial(numpy_kernel.set_stream_threshold, NEVER)
            stream = functools.partial(numpy_kernel.set_stream_threshold, 0)
            seconds = compare_interleaved(
                [call, call, call_then_sum, call_then_sum],
                args.repeats * args.rounds,
                number=1,
                setup=[plain, stream, plain, stream],
            )
            ms = {k: t * 1e3 for k, t in zip(("p", "s", "ps", "ss"), seconds, strict=True)}
            print(
                f"{n:>10} {13 * n / 2**20:>5.1f} MiB   {ms['p']:>6.3f} ms {ms['s']:>6.3f} ms"
                f"   {ms['ps']:>7.3f} ms {ms['ss']:>8.3f} ms"
            )
    finally:
        numpy_kernel.set_stream_threshold(None)
    print(f"# {format_load(load_before, load_average())}")


if __name__ == "__main__":
    main()
