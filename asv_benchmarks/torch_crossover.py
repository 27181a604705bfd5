"""Where ``select`` and ``where`` on PyTorch CPU tensors overtake ``torch.where``.

    python asv_benchmarks/torch_crossover.py [--sizes 3000 8191 8192 ...] [--repeats 15]

For each size (float32 operands, a random bool mask), times ``arrayselect.where``,
``arrayselect.select`` and ``torch.where`` on the same tensors, interleaved
(:func:`arrayselect._tools.bench_stats.compare_interleaved`, ``--repeats`` rounds), and
prints the median time per call and ``torch.where``'s time over ``where``'s. Below the backend's
``KERNEL_MIN_SIZE`` both call ``torch.where`` after validation; from it on, the
compiled kernel.
"""

from __future__ import annotations

import argparse
import functools

import torch
from arrayselect.backends.torch_backend import KERNEL_MIN_SIZE

import arrayselect as asel
from arrayselect._tools.bench_stats import compare_interleaved, format_load, load_average, machine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[3000, 8191, 8192, 10**4, 3 * 10**4, 10**5]
    )
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    print(
        f"# {machine().describe()}; torch {torch.__version__}, KERNEL_MIN_SIZE "
        f"{KERNEL_MIN_SIZE}, {args.repeats} interleaved rounds, medians"
    )
    before = load_average()
    print(f"{'size':>8} {'where':>10} {'select':>10} {'torch.where':>12}  torch.where/where")
    for n in args.sizes:
        g = torch.Generator().manual_seed(n)
        c, a, b = torch.rand(n, generator=g) < 0.5, torch.rand(n, generator=g), torch.rand(n)
        contenders = {
            "where": functools.partial(asel.where, c, a, b),
            "select": functools.partial(asel.select, c, a, b),
            "torch.where": functools.partial(torch.where, c, a, b),
        }
        seconds = compare_interleaved(list(contenders.values()), args.repeats)
        med = {name: s * 1e6 for name, s in zip(contenders, seconds, strict=True)}
        print(
            f"{n:>8} {med['where']:8.2f}us {med['select']:8.2f}us {med['torch.where']:10.2f}us"
            f"  {med['torch.where'] / med['where']:.2f}"
        )
    print(f"# {format_load(before, load_average())}")


if __name__ == "__main__":
    main()
