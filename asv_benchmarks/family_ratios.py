"""Measure the NumPy kernel's select family against its peers in one run; print ratios.

    python asv_benchmarks/family_ratios.py [--repeats 21] [--threads N]

Four conditions (each true with probability 1/4, independently) and four
float32 choices plus a float32 default, or an int32 ``which`` in [0, 4) and
four float32 cases. The contenders run on the same inputs in rotating order,
``--repeats`` times, each repeat a batch of consecutive calls lasting about
20 ms (``kernel_ratios.compare_many``); the table shows the medians per call.

Targets (the issue):
  * select_cases, 10^6: >= 15x ``np.select``, >= 1.5x ``jax.jit(jnp.select)``
  * select_cases, 10^7, ``out=`` given: within 1.3x of the copy floor, the time
    to move its bytes (the four conds and five float32 arrays read once, the
    output written once) at ``np.copyto``'s bandwidth (read + write bytes, the
    better of one thread and one thread per core, as ``kernel_ratios.py``)
  * select_n, 4 cases, 10^6: >= 1.5x ``jax.jit(lax.select_n)``

Information rows: a chain of four ``arrayselect.select(..., out=r)`` calls (the
best one could do with two-way selects), ``np.choose`` for select_n, select_n
with ``out=`` given (JAX reuses its buffers; a fresh NumPy output below the
kernel's output-pool size is page-faulted on every call), and the same at 10^7.
``--threads 1`` (with ``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false`` for JAX)
compares one thread with one thread, which a loaded machine disturbs less. JAX
rows are skipped when JAX is not installed.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from arrayselect.backends.numpy_backend import kernel as numpy_kernel
from arrayselect.backends.numpy_backend.kernel_family import (
    kernel_select_cases,
    kernel_select_n,
)
from kernel_ratios import compare_many, copy_bandwidth
from machine_state import load_average

import arrayselect as asel

CASES = 4


def inputs(n: int) -> dict[str, Any]:
    rng = np.random.default_rng(20261125)
    return {
        "conds": [rng.random(n) < 0.25 for _ in range(CASES)],
        "choices": [rng.random(n, dtype=np.float32) for _ in range(CASES)],
        "default": rng.random(n, dtype=np.float32),
        "which": rng.integers(0, CASES, n, dtype=np.int32),
        "out": np.empty(n, np.float32),
    }


def jax_contenders(d: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """jax.jit(jnp.select) and jax.jit(lax.select_n) on the same data, or nothing."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    conds = [jax.device_put(c) for c in d["conds"]]
    choices = [jax.device_put(c) for c in d["choices"]]
    default = jax.device_put(d["default"])
    which = jax.device_put(d["which"])
    select = jax.jit(lambda c, x, y: jnp.select(c, x, y))
    select_n = jax.jit(lambda w, x: jax.lax.select_n(w, *x))
    np.testing.assert_array_equal(
        np.asarray(select(conds, choices, default)),
        np.select(d["conds"], d["choices"], d["default"]),
    )
    return {
        "jax.jit(jnp.select)": lambda: select(conds, choices, default).block_until_ready(),
        "jax.jit(lax.select_n)": lambda: select_n(which, choices).block_until_ready(),
    }


def contenders(d: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """Every contender on the inputs ``d`` (``inputs(n)``)."""
    conds, choices, default, which, out = (
        d["conds"],
        d["choices"],
        d["default"],
        d["which"],
        d["out"],
    )

    def chain() -> None:
        asel.select(conds[-1], choices[-1], default, out=out)
        for k in range(CASES - 2, -1, -1):
            asel.select(conds[k], choices[k], out, out=out)

    return {
        "select_cases": lambda: kernel_select_cases(conds, choices, default, None),
        "select_cases out=": lambda: kernel_select_cases(conds, choices, default, out),
        "np.select": lambda: np.select(conds, choices, default),
        "chain of 4 select(out=)": chain,
        "select_n": lambda: kernel_select_n(which, choices, None),
        "select_n out=": lambda: kernel_select_n(which, choices, out),
        "np.choose": lambda: np.choose(which, choices),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--threads", type=int, default=0, help="kernel threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        asel.set_num_threads(args.threads)
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"python {sys.version.split()[0]}, numpy {np.__version__}, "
        f"kernel threads {asel.get_num_threads()}, loops {numpy_kernel.isa_info()['current']}"
    )
    print(f"# load average at the start {load_average()}")
    rows: list[str] = []

    def row(name: str, ours: float, theirs: float, label: str, target: float | None) -> None:
        ratio = theirs / ours
        verdict = "" if target is None else ("  OK" if ratio >= target else "  MISSED")
        goal = "(info)" if target is None else f"(target >= {target:g}x)"
        rows.append(
            f"{name:<44} {ours * 1e3:9.3f} ms  {ratio:6.2f}x {label} "
            f"({theirs * 1e3:.3f} ms) {goal}{verdict}"
        )

    for n in (10**6, 10**7):
        d = inputs(n)
        fns = contenders(d)
        np.testing.assert_array_equal(fns["select_cases"](), fns["np.select"]())
        np.testing.assert_array_equal(fns["select_n"](), fns["np.choose"]())
        fns.update(jax_contenders(d))
        if n == 10**7:
            fns.pop("np.select")  # 10^7 np.select takes ~0.2 s a call: one row is enough
        t = dict(zip(fns, compare_many(list(fns.values()), args.repeats), strict=True))
        tag = f"10^{len(str(n)) - 1}"
        main_target = 15.0 if n == 10**6 else None
        if "np.select" in t:
            row(f"select_cases {tag}", t["select_cases"], t["np.select"], "np.select", main_target)
        if "jax.jit(jnp.select)" in t:
            row(
                f"select_cases {tag}",
                t["select_cases"],
                t["jax.jit(jnp.select)"],
                "jax.jit(jnp.select)",
                1.5 if n == 10**6 else None,
            )
        row(
            f"select_cases {tag} out=",
            t["select_cases out="],
            t["chain of 4 select(out=)"],
            "chain of 4 select(out=)",
            None,
        )
        if "jax.jit(lax.select_n)" in t:
            row(
                f"select_n {tag}",
                t["select_n"],
                t["jax.jit(lax.select_n)"],
                "jax.jit(lax.select_n)",
                1.5 if n == 10**6 else None,
            )
        if "jax.jit(lax.select_n)" in t:
            row(
                f"select_n {tag} out=",
                t["select_n out="],
                t["jax.jit(lax.select_n)"],
                "jax.jit(lax.select_n)",
                None,
            )
        row(f"select_n {tag}", t["select_n"], t["np.choose"], "np.choose", None)
        if n == 10**7:
            one, many = copy_bandwidth(args.repeats)
            nbytes = CASES * n + (CASES + 2) * 4 * n  # conds, choices, default, out
            floor = nbytes / max(one, many)
            ratio = t["select_cases out="] / floor
            verdict = "OK" if ratio <= 1.3 else "MISSED"
            rows.append(
                f"{'select_cases 10^7 out= vs the copy floor':<44} "
                f"{t['select_cases out='] * 1e3:9.3f} ms  {ratio:6.2f}x the floor "
                f"({floor * 1e3:.3f} ms: {nbytes / 1e6:.0f} MB at "
                f"{max(one, many) / 1e9:.1f} GB/s) (target <= 1.3x)  {verdict}"
            )
    print("\n".join(rows))
    print(f"# load average at the end {load_average()}; repeats {args.repeats}")


if __name__ == "__main__":
    main()
