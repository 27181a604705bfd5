"""Measure the select family, through the public API, against its peers in one run.

    python asv_benchmarks/family_ratios.py [--repeats 21] [--threads N] [--quick | --small]

Four conditions (each true with probability 1/4, independently) and four
float32 choices plus a float32 default, or an int32 ``which`` in [0, 4) and
four float32 cases. Every arrayselect row calls the public functions
(``asel.select_cases``, ``asel.select_n``, ``asel.apply_where``), validation
included. The contenders of one size run on the same inputs in a new random
order each repeat, ``--repeats`` times, each repeat a batch of consecutive calls
lasting about 20 ms (``compare_shuffled``); the table shows the medians per
call. Each result is checked against its peer's, bit for bit, before timing.

Targets (the issue):
  * select_cases, 10^6, NumPy: >= 15x ``np.select``, >= 1.5x ``jax.jit(jnp.select)``
  * select_cases, 10^7, NumPy: within 1.3x of the copy floor (printed as the floor's
    time over select_cases', >= 0.77, as every ratio: above 1 is faster), the time to move
    its bytes (the four conds and five float32 arrays read once, the output
    written once) at ``np.copyto``'s bandwidth (read + write bytes, the better
    of one thread and one thread per core, as ``kernel_ratios.py``)
  * select_n, 4 cases, 10^6, NumPy: >= 1.5x ``jax.jit(lax.select_n)``
  * select_n, 4 cases, 10^6, PyTorch CPU tensors: >= 5x a chain of ``torch.where``
  * apply_where(x > 0, x, log, fill_value=0.0), NumPy, 10^3 and 10^6: no slower
    than ``array_api_extra.apply_where`` (ratio >= 1)
  * small calls (issue 28), NumPy, 10^3: ``apply_where(cond, x, np.log,
    fill_value=np.nan)`` float64 no slower than the hand-written
    ``np.where(cond, np.log(np.where(cond, x, 1)), np.nan)`` (ratio >= 1; the
    ``array_api_extra`` row beside it is information); ``select_cases`` with four
    conditions and ``select_n`` with four cases within 1.2x of one ``np.where``
    per case (a chain of four ``np.where`` that gives the same result, the masks
    of ``which == k`` made beforehand for ``select_n``: ratio >= 1/1.2 = 0.83)

Information rows: the same at 10^3 and 10^7 (at 10^3 the per-call cost of
validation and dispatch decides), the kernel entry points called directly (what
validation and dispatch add), a chain of four ``arrayselect.select(..., out=r)`` calls
(the best one could do with two-way selects), ``np.choose``, select_n with
``out=`` given (JAX reuses its buffers; a fresh NumPy output below the
kernel's output-pool size is page-faulted on every call), and arrayselect on
JAX arrays against the same jitted peers (there arrayselect *is* ``jnp.select``
/ ``lax.select_n`` under ``jit``, so 1x is the ceiling and the gap is the
per-call cost of validation). ``--threads 1`` (with
``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false`` for JAX) compares one thread
with one thread, which a loaded machine disturbs less. Rows of a library that
is not installed are skipped.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from arrayselect.backends.shared import kernel as numpy_kernel
from arrayselect.backends.shared.kernel_cases import (
    kernel_select_cases,
    kernel_select_n,
)
from kernel_ratios import SAMPLE_SECONDS, copy_bandwidth

import arrayselect as asel
from arrayselect._tools.bench_stats import (
    compare_interleaved,
    format_load,
    load_average,
    machine,
)

CASES = 4
Fns = dict[str, Callable[[], Any]]


def compare_shuffled(fns: list[Callable[[], Any]], repeats: int) -> list[float]:
    """Median seconds per call of each function, interleaved in a new random order
    each repeat (:func:`arrayselect._tools.bench_stats.compare_interleaved`)."""
    return compare_interleaved(fns, repeats, SAMPLE_SECONDS)


def inputs(n: int) -> dict[str, Any]:
    rng = np.random.default_rng(20261125)
    return {
        "conds": [rng.random(n) < 0.25 for _ in range(CASES)],
        "choices": [rng.random(n, dtype=np.float32) for _ in range(CASES)],
        "default": rng.random(n, dtype=np.float32),
        "which": rng.integers(0, CASES, n, dtype=np.int32),
        "out": np.empty(n, np.float32),
        "x": rng.standard_normal(n),
    }


def _same(got: Any, expected: Any) -> None:
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected), strict=True)


def numpy_contenders(d: dict[str, Any]) -> Fns:
    """arrayselect on NumPy arrays, the kernel called directly, and NumPy's functions."""
    conds, choices, default, which, out = (
        d[k] for k in ("conds", "choices", "default", "which", "out")
    )
    shape = default.shape  # every operand's: the output shape

    def chain() -> None:
        asel.select(conds[-1], choices[-1], default, out=out)
        for k in range(CASES - 2, -1, -1):
            asel.select(conds[k], choices[k], out, out=out)

    masks = [which == k for k in range(CASES)]

    def where_per_condition() -> Any:
        result = default
        for k in range(CASES - 1, -1, -1):
            result = np.where(conds[k], choices[k], result)
        return result

    def where_per_case() -> Any:
        result = choices[-1]
        for k in range(CASES - 1, -1, -1):  # four: the last one keeps which's shape
            result = np.where(masks[k], choices[k], result)
        return result

    fns: Fns = {
        "np.where per condition": where_per_condition,
        "np.where per case": where_per_case,
        "select_cases": lambda: asel.select_cases(conds, choices, default),
        # the output shape given, as the backend gives the core's
        "kernel select_cases": lambda: kernel_select_cases(conds, choices, default, None, shape),
        "kernel select_cases out=": lambda: kernel_select_cases(
            conds, choices, default, out, shape
        ),
        "np.select": lambda: np.select(conds, choices, default),
        "chain of 4 select(out=)": chain,
        "select_n": lambda: asel.select_n(which, *choices),
        "select_n out=": lambda: asel.select_n(which, *choices, out=out),
        "kernel select_n": lambda: kernel_select_n(which, choices, None, shape),
        "np.choose": lambda: np.choose(which, choices),
    }
    _same(fns["select_cases"](), fns["np.select"]())
    _same(fns["select_n"](), fns["np.choose"]())
    _same(fns["select_cases"](), where_per_condition())
    _same(fns["select_n"](), where_per_case())
    return fns


def jax_contenders(d: dict[str, Any]) -> Fns:
    """jax.jit(jnp.select) and jax.jit(lax.select_n), and arrayselect on the same JAX arrays."""
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
    fns: Fns = {
        "jax.jit(jnp.select)": lambda: select(conds, choices, default).block_until_ready(),
        "jax.jit(lax.select_n)": lambda: select_n(which, choices).block_until_ready(),
        "select_cases on JAX": lambda: asel.select_cases(
            conds, choices, default
        ).block_until_ready(),
        "select_n on JAX": lambda: asel.select_n(which, *choices).block_until_ready(),
    }
    expected_cases = np.select(d["conds"], d["choices"], d["default"])
    _same(fns["jax.jit(jnp.select)"](), expected_cases)
    _same(fns["select_cases on JAX"](), expected_cases)
    _same(fns["select_n on JAX"](), fns["jax.jit(lax.select_n)"]())
    return fns


def torch_contenders(d: dict[str, Any]) -> Fns:
    """arrayselect's select_n on CPU tensors against a chain of torch.where, or nothing."""
    try:
        import torch
    except ImportError:
        return {}
    which = torch.from_numpy(d["which"])
    cases = [torch.from_numpy(c) for c in d["choices"]]

    def chain() -> Any:
        result = cases[-1]
        for k in range(CASES - 2, -1, -1):
            result = torch.where(which == k, cases[k], result)
        return result

    fns: Fns = {
        "select_n on torch": lambda: asel.select_n(which, *cases),
        "chain of torch.where": chain,
    }
    _same(fns["select_n on torch"](), chain())
    return fns


def apply_where_contenders(d: dict[str, Any]) -> Fns:
    """apply_where(x > 0, x, np.log, fill_value=0.0) here and in array-api-extra, or nothing."""
    try:
        import array_api_extra as xpx
    except ImportError:
        return {}
    x = d["x"]
    cond = x > 0
    nan = np.nan
    fns: Fns = {
        "apply_where": lambda: asel.apply_where(cond, x, np.log, fill_value=0.0),
        "xpx.apply_where": lambda: xpx.apply_where(cond, x, np.log, fill_value=0.0),
        "apply_where nan": lambda: asel.apply_where(cond, x, np.log, fill_value=nan),
        "xpx.apply_where nan": lambda: xpx.apply_where(cond, x, np.log, fill_value=nan),
        "hand-written np.where": lambda: np.where(cond, np.log(np.where(cond, x, 1)), nan),
    }
    _same(fns["apply_where"](), fns["xpx.apply_where"]())
    _same(fns["apply_where nan"](), fns["hand-written np.where"]())
    _same(fns["apply_where nan"](), fns["xpx.apply_where nan"]())
    return fns


def _time(seconds: float) -> str:
    """A time per call in ms, or in us below 0.1 ms (the 10^3 rows)."""
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-4 else f"{seconds * 1e6:.2f} us"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--threads", type=int, default=0, help="kernel threads (0: default)")
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^6 rows only")
    parser.add_argument("--small", action="store_true", help="10^3 rows only (issue 28's)")
    args = parser.parse_args()
    if args.threads:
        asel.set_num_threads(args.threads)
    load_before = load_average()
    print(
        f"# {machine().describe()}; python {sys.version.split()[0]}, numpy {np.__version__}, "
        f"kernel threads {asel.get_num_threads()}, loops {numpy_kernel.isa_info()['current']}"
    )
    rows: list[str] = []

    def row(name: str, t: dict[str, float], ours: str, theirs: str, target: float | None) -> None:
        if ours not in t or theirs not in t:
            return
        ratio = t[theirs] / t[ours]
        verdict = "" if target is None else ("  OK" if ratio >= target else "  MISSED")
        goal = "(info)" if target is None else f"(target >= {target:g}x)"
        rows.append(
            f"{name:<34} {_time(t[ours]):>12}  {ratio:6.2f}x {theirs} "
            f"({_time(t[theirs])}) {goal}{verdict}"
        )

    sizes = (10**3, 10**6) if args.quick else (10**3, 10**6, 10**7)
    if args.small:
        sizes = (10**3,)
    for n in sizes:
        d = inputs(n)
        tag = f"10^{len(str(n)) - 1}"
        fns = {**numpy_contenders(d), **jax_contenders(d)}
        if n < 10**7:
            fns.update(apply_where_contenders(d))
        if n == 10**6:
            fns.update(torch_contenders(d))
        if n == 10**7:
            fns.pop("np.select")  # 10^7 np.select takes ~0.2 s a call: one row is enough
        t = dict(zip(fns, compare_shuffled(list(fns.values()), args.repeats), strict=True))
        top = n == 10**6
        row(f"select_cases {tag}", t, "select_cases", "np.select", 15.0 if top else None)
        row(f"select_cases {tag}", t, "select_cases", "jax.jit(jnp.select)", 1.5 if top else None)
        row(f"select_cases {tag}", t, "select_cases", "kernel select_cases", None)
        row(f"select_cases {tag}", t, "select_cases", "chain of 4 select(out=)", None)
        row(f"select_n {tag}", t, "select_n", "jax.jit(lax.select_n)", 1.5 if top else None)
        row(f"select_n {tag} out=", t, "select_n out=", "jax.jit(lax.select_n)", None)
        row(f"select_n {tag}", t, "select_n", "kernel select_n", None)
        row(f"select_n {tag}", t, "select_n", "np.choose", None)
        row(f"select_n {tag} torch", t, "select_n on torch", "chain of torch.where", 5.0)
        row(f"apply_where {tag}", t, "apply_where", "xpx.apply_where", 1.0)
        small = n == 10**3
        row(
            f"apply_where nan {tag}",
            t,
            "apply_where nan",
            "hand-written np.where",
            1.0 if small else None,
        )
        row(f"apply_where nan {tag}", t, "apply_where nan", "xpx.apply_where nan", None)
        row(
            f"select_cases {tag}",
            t,
            "select_cases",
            "np.where per condition",
            0.83 if small else None,
        )
        row(f"select_n {tag}", t, "select_n", "np.where per case", 0.83 if small else None)
        row(f"select_cases {tag} on JAX", t, "select_cases on JAX", "jax.jit(jnp.select)", None)
        row(f"select_n {tag} on JAX", t, "select_n on JAX", "jax.jit(lax.select_n)", None)
        if n == 10**7:
            one, many = copy_bandwidth(args.repeats)
            nbytes = CASES * n + (CASES + 2) * 4 * n  # conds, choices, default, out
            floor = nbytes / max(one, many)
            for name in ("select_cases", "kernel select_cases out="):
                # the floor's time over select_cases': the share of the copy's speed
                ratio = floor / t[name]
                verdict = "OK" if ratio >= 1 / 1.3 else "MISSED"
                rows.append(
                    f"{name + ' 10^7 vs the copy floor':<34} {t[name] * 1e3:9.3f} ms  "
                    f"{ratio:6.2f} of the floor's speed ({floor * 1e3:.3f} ms: "
                    f"{nbytes / 1e6:.0f} MB at {max(one, many) / 1e9:.1f} GB/s) "
                    + ("(target >= 0.77)  " + verdict if name == "select_cases" else "(info)")
                )
    print("\n".join(rows))
    print(f"# {format_load(load_before, load_average())}; repeats {args.repeats}")


if __name__ == "__main__":
    main()
