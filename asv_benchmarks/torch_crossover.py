"""Where ``select`` and ``where`` on PyTorch CPU tensors overtake ``torch.where``.

    python asv_benchmarks/torch_crossover.py [--sizes 3000 8191 8192 ...] [--repeats 15]

For each size (float32 operands, a random bool mask), times ``arrayselect.where``,
``arrayselect.select`` and ``torch.where`` on the same tensors, alternating the
order from round to round, ``--repeats`` rounds of 200 calls each, and prints the
median time per call and ``torch.where``'s time over each. Below the backend's
``KERNEL_MIN_SIZE`` both call ``torch.where`` after validation; from it on, the
compiled kernel.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from arrayselect.backends.torch_backend import KERNEL_MIN_SIZE

import arrayselect as asel


def _per_call(fn: Callable[[], Any], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[3000, 8191, 8192, 10**4, 3 * 10**4, 10**5]
    )
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    print(
        f"torch {torch.__version__}, KERNEL_MIN_SIZE {KERNEL_MIN_SIZE}, "
        f"load average {os.getloadavg()[0]:.2f}, {args.repeats} rounds of 200 calls, medians"
    )
    print(f"{'size':>8} {'where':>10} {'select':>10} {'torch.where':>12}  torch.where/where")
    for n in args.sizes:
        g = torch.Generator().manual_seed(n)
        c, a, b = torch.rand(n, generator=g) < 0.5, torch.rand(n, generator=g), torch.rand(n)
        contenders = {
            "where": functools.partial(asel.where, c, a, b),
            "select": functools.partial(asel.select, c, a, b),
            "torch.where": functools.partial(torch.where, c, a, b),
        }
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for fn in contenders.values():
            fn()
        for i in range(args.repeats):
            order = list(contenders.items())
            for name, fn in order if i % 2 else order[::-1]:
                times[name].append(_per_call(fn, 200))
        med = {name: statistics.median(values) * 1e6 for name, values in times.items()}
        print(
            f"{n:>8} {med['where']:8.2f}us {med['select']:8.2f}us {med['torch.where']:10.2f}us"
            f"  {med['torch.where'] / med['where']:.2f}"
        )


if __name__ == "__main__":
    main()
