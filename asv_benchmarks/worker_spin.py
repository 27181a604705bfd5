"""How long should the kernel's idle workers spin for the next job?

    python asv_benchmarks/worker_spin.py [--repeats 15] [--gaps-us 0,30,100,300]

Calls of ``select`` (float32, random bool cond, ``out=`` given) at 2^15, 2^16 and
2^17 elements, back to back with a gap of Python busy-work between them (the
program doing something else), on one thread and on two threads with the
workers' idle spin at 0, 50 and 200 us (threshold 0 and the load guard off, so
every call is split). Contenders are interleaved in a shuffled order every
round. Prints the median wall time per call (minus the gap), its interquartile
range, the process CPU time per call (minus the gap: what the spin burns, from
a separate run of at least 2000 calls) and the speed relative to one thread.
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np
from arrayselect.backends.shared import _select_kernel as kernel

from arrayselect._tools.bench_stats import (
    Spread,
    busy,
    format_load,
    load_average,
    machine,
    time_interleaved,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--gaps-us", default="0,30,100,300")
    args = parser.parse_args()
    gaps = [float(g) * 1e-6 for g in args.gaps_us.split(",")]
    stats = kernel.stats()
    saved_spin = (stats["worker_spin_s"] * 1e6, stats["caller_spin_s"] * 1e6)
    saved = (kernel.get_num_threads(), kernel.get_parallel_min())
    kernel.set_load_guard(False)
    kernel.set_parallel_min(0)
    rng = np.random.default_rng(0)
    contenders = [("1 thread", 1, 50.0), ("spin 0", 2, 0.0), ("spin 50", 2, 50.0)]
    contenders.append(("spin 200", 2, 200.0))
    load_before = load_average()
    print(f"# {machine().describe()}; repeats={args.repeats}, loops {kernel.isa_info()['current']}")
    print(
        f"{'gap us':>6} {'elements':>8} {'contender':>10} {'median us':>10} {'IQR us':>18}"
        f" {'CPU us/call':>11} {'vs 1 thread':>11}"
    )
    try:
        for gap in gaps:
            for n in (2**15, 2**16, 2**17):
                c = rng.random(n) < 0.5
                a = rng.random(n, dtype=np.float32)
                b = rng.random(n, dtype=np.float32)
                out = np.empty(n, np.float32)

                def run(
                    c: object = c,
                    a: object = a,
                    b: object = b,
                    out: object = out,
                    n: int = n,
                    gap: float = gap,
                ) -> None:
                    kernel.select(c, a, b, out, (n,), None, None, None)
                    if gap:
                        busy(gap)

                def contender(threads: int, spin: float) -> None:
                    kernel.set_num_threads(threads)
                    kernel.set_spin_us(spin, saved_spin[1])
                    for _ in range(3):
                        run()

                def settle(threads: int, spin: float) -> None:
                    time.sleep(0.001)
                    contender(threads, spin)

                number = max(200, int(10e-3 / (n * 0.3e-9 + gap)))
                samples = time_interleaved(
                    [run] * len(contenders),
                    args.repeats,
                    number=number,
                    setup=[
                        functools.partial(settle, threads, spin) for _, threads, spin in contenders
                    ],
                )
                spreads = {
                    name: Spread.of([t - gap for t in times])
                    for (name, _, _), times in zip(contenders, samples, strict=True)
                }
                cpu: dict[str, float] = {}
                for name, threads, spin in contenders:
                    calls = max(2000, int(0.3 / (n * 0.3e-9 + gap)))
                    (per_call,) = time_interleaved(
                        [run],
                        1,
                        number=calls,
                        clock=time.process_time,
                        setup=[functools.partial(contender, threads, spin)],
                    )
                    cpu[name] = per_call[0] - gap
                one = spreads["1 thread"].median
                for name, _, _ in contenders:
                    spread = spreads[name]
                    print(
                        f"{gap * 1e6:6g} {n:>8} {name:>10} {spread.median * 1e6:10.1f} "
                        f"[{spread.q1 * 1e6:7.1f}, {spread.q3 * 1e6:7.1f}] {cpu[name] * 1e6:11.1f} "
                        f"{one / spread.median:10.2f}x",
                        flush=True,
                    )
    finally:
        kernel.set_spin_us(*saved_spin)
        kernel.set_num_threads(saved[0])
        kernel.set_parallel_min(saved[1])
        kernel.set_load_guard(True)
    print(f"# {format_load(load_before, load_average())}")


if __name__ == "__main__":
    main()
