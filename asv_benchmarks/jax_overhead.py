"""Per-call overhead of ``arrayselect.select`` on JAX arrays versus ``jax.jit(lax.select)``.

Run from the repository root::

    python asv_benchmarks/jax_overhead.py [--calls 1000] [--repeats 15]

Every case times ``calls`` back-to-back calls (each followed by
``block_until_ready``) of the baseline and of arrayselect, alternating the two
in each of ``repeats`` rounds so that both see the same machine load. It prints
the median per-call time of each and their ratio (median of the per-round
ratios). Size-1 inputs make the time all dispatch overhead.
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

import arrayselect as asel
from arrayselect._tools.bench_stats import compare_interleaved


def compare(
    baseline: Callable[[], Any], candidate: Callable[[], Any], calls: int, repeats: int
) -> tuple[float, float, float]:
    """Median per-call seconds of ``baseline`` and ``candidate`` (batches of ``calls``,
    interleaved), and their ratio baseline / candidate (above 1: arrayselect is faster)."""
    for _ in range(3):  # compile and warm up both
        baseline().block_until_ready()
        candidate().block_until_ready()
    b, c = compare_interleaved(
        [lambda: baseline().block_until_ready(), lambda: candidate().block_until_ready()],
        repeats,
        number=calls,
    )
    return b, c, b / c


def cases() -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    """(label, baseline, arrayselect call) for each measured case, all of size 1."""
    cond = jnp.array([True])
    x = jnp.ones((1,), jnp.float32)
    y = jnp.zeros((1,), jnp.float32)
    cond_u8 = jnp.array([1], jnp.uint8)
    x2 = jnp.ones((1, 1), jnp.float32)
    jit_select = jax.jit(lax.select)
    jit_select_scalar = jax.jit(lambda c, a, s: lax.select(c, a, jnp.full_like(a, s)))
    jit_where = jax.jit(jnp.where)
    return [
        (
            "same shape (1,), bool cond",
            lambda: jit_select(cond, x, y),
            lambda: asel.select(cond, x, y),
        ),
        (
            "else a Python float",
            lambda: jit_select_scalar(cond, x, 0.0),
            lambda: asel.select(cond, x, 0.0),
        ),
        (
            "uint8 cond (1,), then (1, 1): broadcast",
            lambda: jit_where(cond_u8, x2, x2),
            lambda: asel.select(cond_u8, x2, x2),
        ),
    ]


def main() -> None:
    """Measure every case and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per timing round")
    parser.add_argument("--repeats", type=int, default=15, help="timing rounds")
    args = parser.parse_args()
    backend = asel.backend_for(jnp.array([True]), jnp.ones(1), jnp.ones(1))
    print(
        f"jax {jax.__version__} on {jax.devices()[0].platform}, backend {backend.name!r}, "
        f"python {platform.python_version()}, {args.calls} calls x {args.repeats} rounds"
    )
    print(f"{'case':44} {'baseline us':>12} {'arrayselect us':>15} {'base/ours':>9}  baseline")
    names = {
        0: "jax.jit(lax.select)",
        1: "jax.jit(lax.select(c, x, full_like(x, s)))",
        2: "jax.jit(jnp.where)",
    }
    for i, (label, baseline, candidate) in enumerate(cases()):
        base, cand, ratio = compare(baseline, candidate, args.calls, args.repeats)
        print(f"{label:44} {base * 1e6:12.2f} {cand * 1e6:15.2f} {ratio:9.2f}  {names[i]}")


if __name__ == "__main__":
    main()
