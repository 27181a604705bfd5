"""Speed tables measured while the pages are built (a few seconds each).

* :func:`where_table` ("Coming from where"): ``arrayselect.where`` against each
  library's own ``where`` for every library present among NumPy, PyTorch (CPU) and
  JAX (CPU, both under ``jax.jit``), in three cases (operands of one dtype; a
  float32 array and a Python float; an int8 and a float32 array, promoted), at
  10^3, 10^5 and 10^6 elements; every result checked against the library's own,
  bit for bit.
* :func:`torch_table` (the PyTorch page): ``select`` against ``torch.where`` at 1,
  10^6 and 10^7 elements, and compiled with ``torch.compile`` at 10^6.

In both, a random boolean mask; the two contenders alternate in rounds of batches
of calls and the tables give the median time per call and the ratio.
"""

from __future__ import annotations

import datetime
import os
import platform
from collections.abc import Callable
from typing import Any

import numpy as np

import arrayselect as asel
from arrayselect import adapters
from arrayselect._tools.bench_stats import compare_interleaved, load_average, machine

SIZES = (10**3, 10**5, 10**6)
ROUNDS = 5
BATCH_SECONDS = 0.003
CASES = ("float32, float32", "float32, Python float", "int8, float32")


def _operands(case: str, size: int, rng: np.random.Generator) -> tuple[Any, Any, Any]:
    cond = rng.random(size) < 0.5
    x1 = rng.standard_normal(size).astype(np.int8 if case.startswith("int8") else np.float32)
    x2: Any = 0.5 if case.endswith("float") else rng.standard_normal(size).astype(np.float32)
    return cond, x1, x2


def _caption(what: str) -> str:
    load = load_average()
    return (
        f"{what} Measured while these pages were built, on {platform.machine()} "
        f"({machine().cpu}, {os.cpu_count()} cores, load average "
        f"{'not available' if load is None else f'{load:.2f}'}) on "
        f"{datetime.date.today().isoformat()}: median of {ROUNDS} interleaved rounds, a "
        "random boolean mask. A build machine is often busy: read the ratios, not the times."
    )


def _time(seconds: float) -> str:
    for unit, scale in (("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _measure(lib: adapters.Library) -> list[list[str]]:
    rows = []
    rng = np.random.default_rng(20261123)
    for case in CASES:
        for size in SIZES:
            cond, x1, x2 = _operands(case, size, rng)
            args = [lib.from_numpy(cond), lib.from_numpy(x1)]
            args.append(x2 if isinstance(x2, float) else lib.from_numpy(x2))
            ours_fn, peer_fn = lib.compile(asel.where), lib.compile(lib.peer)

            def ours(f: Any = ours_fn, a: list[Any] = args) -> Any:
                return lib.sync(f(*a))

            def peer(f: Any = peer_fn, a: list[Any] = args) -> Any:
                return lib.sync(f(*a))

            got, expected = lib.to_numpy(ours()), lib.to_numpy(peer())
            same = got.dtype == expected.dtype and np.array_equal(
                got.view(np.uint8), expected.view(np.uint8)
            )
            t_ours, t_peer = compare_interleaved([ours, peer], ROUNDS, BATCH_SECONDS)
            peer_name = f"{lib.compiler}({lib.peer_name})" if lib.compiler else lib.peer_name
            rows.append(
                [
                    lib.label,
                    case,
                    f"10^{len(str(size)) - 1}",
                    _time(t_ours),
                    peer_name,
                    _time(t_peer),
                    f"{t_peer / t_ours:.2f}",
                    "yes" if same else "NO",
                ]
            )
    return rows


def where_table() -> str:
    """The Markdown table and its caption."""
    found = adapters.discover(("numpy", "torch-cpu", "jax-cpu"))
    header = ["library", "x1, x2", "size", "where", "peer", "peer time", "peer/where", "same bits"]
    rows: list[list[str]] = []
    for lib in found.present:
        rows += _measure(lib)
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        _caption("peer/where above 1: `arrayselect.where` was faster."),
    ]
    return "\n".join(lines) + "\n"


def torch_table() -> str:
    """``select`` against ``torch.where`` on CPU tensors, eager and compiled."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed where these pages were built.\n"
    g = torch.Generator().manual_seed(20261123)
    rows = []

    def inputs(n: int) -> tuple[Any, Any, Any]:
        return (
            torch.rand(n, generator=g) < 0.5,
            torch.rand(n, generator=g),
            torch.rand(n, generator=g),
        )

    def timed(label: str, ours: Callable[[], Any], peer: Callable[[], Any]) -> None:
        t_ours, t_peer = compare_interleaved([ours, peer], ROUNDS, BATCH_SECONDS)
        rows.append([label, _time(t_ours), _time(t_peer), f"{t_peer / t_ours:.2f}"])

    for n, label in ((1, "1 element"), (10**6, "10^6"), (10**7, "10^7")):
        c, a, b = inputs(n)
        timed(
            f"{label}, eager",
            lambda c=c, a=a, b=b: asel.select(c, a, b),
            lambda c=c, a=a, b=b: torch.where(c, a, b),
        )
    c, a, b = inputs(10**6)
    ours_fn = torch.compile(lambda c, a, b: asel.select(c, a * 2, b) + 1, fullgraph=True)
    peer_fn = torch.compile(lambda c, a, b: torch.where(c, a * 2, b) + 1, fullgraph=True)
    timed("10^6, torch.compile", lambda: ours_fn(c, a, b), lambda: peer_fn(c, a, b))
    header = ["float32", "select", "torch.where", "torch.where / select"]
    lines = [
        "| " + " | ".join(header) + " |",
        "|---|--:|--:|--:|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        _caption(
            f"Above 1: select was faster. torch {torch.__version__}, "
            f"{torch.get_num_threads()} torch threads. The compiled rows compile "
            "`select(c, a * 2, b) + 1` and the same with `torch.where`: one graph, so equal "
            "up to noise."
        ),
    ]
    return "\n".join(lines) + "\n"
