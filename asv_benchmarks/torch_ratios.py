"""Measure the PyTorch backend's targets in one run and print the ratios.

    python asv_benchmarks/torch_ratios.py [--repeats 21]

Each case times ``arrayselect.select`` and ``torch.where`` on the same CPU
tensors (float32, a random bool mask), interleaved
(:func:`arrayselect._tools.bench_stats.compare_interleaved`), ``--repeats`` times; each
repeat times a batch of consecutive calls lasting about 20 ms and reports the
time per call; the table shows the medians and the ratio, torch.where's time over
select's (above 1: select is faster). The compiled case
compiles ``f(c, a, b) = select(c, a * 2, b) + 1`` and the same function with
``torch.where`` with ``torch.compile(fullgraph=True)`` and times both.

Targets (issue 21):
  * eager per call at 1, 100 and 1000 elements: select <= 1.3x torch.where's time
    (the ratio >= 0.77)
  * 10^6 float32: select >= 7x faster than torch.where alone, and >= 5x when the
    two alternate in batches of 5 calls (the "alternating" row: 5 timed calls of
    select, then 5 of torch.where, over and over; each side's time per call)
  * under torch.compile at 10^3: select <= 1.05x torch.where's time compiled the same
    way (the ratio >= 0.95)
  * graphs traced under torch.compile (a counting backend): no more than torch.where's
    for a repeated call, under dynamic=True over sizes 2 to 33, and over broadcasts

Rows without a target: the eager rows again with each other design of the fast path's
recent-call check that is verified here (``torch_backend.RECENT_CHECKS``: libtorch's C
readers, "fields", used by default; Dynamo's TensorGuards) and with none (the
signature cache alone, as in a torch where neither is verified); calls cycling through
2 and through 5 signatures (1 to 5 elements; the check holds the last 2); 10^7
elements; the kernel alone on the tensors' memory (NumPy views, no validation, no
backend, on the kernel's own threads), the most the eager path could reach before the
torch backend split its calls on torch's OpenMP threads; torch.compile at 10^6.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

import torch
from arrayselect.backends import torch_backend
from arrayselect.backends.shared.kernel import kernel_select
from arrayselect.backends.torch_backend.counting import CountingBackend

import arrayselect as asel
from arrayselect._tools.bench_stats import compare_interleaved, format_load, load_average, machine


def _interleaved(
    ours: Callable[[], Any], peer: Callable[[], Any], repeats: int
) -> tuple[float, float]:
    """Per-call medians of batches of about 20 ms, interleaved."""
    t_ours, t_peer = compare_interleaved([ours, peer], repeats)
    return t_ours, t_peer


def _alternating(
    ours: Callable[[], Any], peer: Callable[[], Any], repeats: int, batch: int = 5
) -> tuple[float, float]:
    """Per-call medians when the two run in turns of ``batch`` calls, as a program
    that mixes select with other torch ops does (each turn timed on its own).
    """
    ours(), peer()
    t_ours, t_peer = compare_interleaved([ours, peer], 20 * repeats, number=batch)
    return t_ours, t_peer


def _inputs(n: int) -> tuple[Any, Any, Any]:
    g = torch.Generator().manual_seed(20261123)
    return torch.rand(n, generator=g) < 0.5, torch.rand(n, generator=g), torch.rand(n, generator=g)


def _select(c: Any, a: Any, b: Any) -> Any:
    return asel.select(c, a * 2, b) + 1


def _where(c: Any, a: Any, b: Any) -> Any:
    return torch.where(c, a * 2, b) + 1


def _with_check(design: str | None) -> Callable[[Any], Any]:
    """A backend factory whose fast path uses the recent-call check ``design``."""

    def factory(xp: Any) -> Any:
        backend = torch_backend.TorchBackend()
        backend.recent_calls = design
        return backend

    return factory


def _signature_rows(repeats: int) -> list[tuple[str, float, float, str]]:
    """Per-call rows of the fast path's other recent-call checks and of none, and over
    many signatures."""
    rows = []
    verified = [name for name, (make, _) in torch_backend.RECENT_CHECKS.items() if make]
    for design in [name for name in verified if name != torch_backend.RECENT_CHECK] + [None]:
        asel.register_backend("torch", _with_check(design))
        try:
            for n in (1, 100, 1000):
                c, a, b = _inputs(n)
                ours, peer = _interleaved(
                    functools.partial(asel.select, c, a, b),
                    functools.partial(torch.where, c, a, b),
                    repeats,
                )
                label = f"{design} check" if design else "cache only"
                rows.append((f"{n:>8} elements, {label}", ours, peer, "info"))
        finally:
            asel.register_backend("torch", None)
    for count in (2, 5):
        calls = [_inputs(n) for n in range(1, count + 1)]

        def cycle(fn: Callable[..., Any], calls: list[Any] = calls) -> None:
            for call in calls:
                fn(*call)

        ours, peer = _interleaved(
            functools.partial(cycle, asel.select), functools.partial(cycle, torch.where), repeats
        )
        rows.append((f"{count} signatures in turn, x{count}", ours, peer, "info"))
    return rows


def _graph_counts() -> list[tuple[str, int, int]]:
    """Graphs Dynamo hands a counting backend, for select and for torch.where."""
    sizes = (2, 3, 5, 7, 9, 17, 33)
    cases = [
        ("the same call 3 times", [_inputs(8)] * 3, {}),
        ("dynamic=True, sizes 2 to 33", [_inputs(n) for n in sizes], {"dynamic": True}),
        (
            "6 broadcasts over 3 sizes",
            [
                (torch.rand(n, 1) < 0.5, torch.rand(n, m), torch.rand(m))
                for n in (2, 3, 4)
                for m in (5, 6)
            ],
            {},
        ),
    ]
    counts = []
    for label, calls, options in cases:
        graphs = []
        for fn in (asel.select, torch.where):
            torch._dynamo.reset()
            counter = CountingBackend()
            compiled = torch.compile(lambda c, a, b, fn=fn: fn(c, a, b), backend=counter, **options)
            for call in calls:
                compiled(*call)
            graphs.append(counter.graphs)
        counts.append((label, graphs[0], graphs[1]))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument(
        "--per-call",
        action="store_true",
        help="only the eager rows at 1, 100 and 1000 elements (to compare torch releases)",
    )
    args = parser.parse_args()
    load_before = load_average()
    print(
        f"# {machine().describe()}; torch {torch.__version__}, torch threads "
        f"{torch.get_num_threads()}, arrayselect threads {asel.get_num_threads()}, "
        f"recent-call check {torch_backend.RECENT_CHECK}, {args.repeats} repeats, medians"
    )
    rows = []
    # targets as torch.where's time over select's (above 1: select is faster); the
    # small calls' ">= 0.77" is "at most 1.3 times torch.where's time"
    sizes = [(1, ">= 0.77"), (100, ">= 0.77"), (1000, ">= 0.77"), (10**6, ">= 7"), (10**7, "info")]
    for n, target in sizes[:3] if args.per_call else sizes:
        c, a, b = _inputs(n)
        ours, peer = _interleaved(
            functools.partial(asel.select, c, a, b),
            functools.partial(torch.where, c, a, b),
            args.repeats,
        )
        rows.append((f"{n:>8} elements, eager", ours, peer, target))
        if n == 10**6:
            ours, peer = _alternating(
                functools.partial(asel.select, c, a, b),
                functools.partial(torch.where, c, a, b),
                args.repeats,
            )
            rows.append((f"{n:>8} elements, alternating", ours, peer, ">= 5"))
            # what the backend can reach: the kernel alone on the same memory
            views = [x.numpy() for x in (c, a, b)]
            ours, peer = _interleaved(
                functools.partial(kernel_select, *views, None, (n,), None, None, None, 0),
                functools.partial(torch.where, c, a, b),
                args.repeats,
            )
            rows.append((" the kernel alone, own pool", ours, peer, "info"))
    if not args.per_call:
        rows += _signature_rows(args.repeats)
    for n, target in () if args.per_call else ((10**3, ">= 0.95"), (10**6, "info")):
        c, a, b = _inputs(n)
        compiled_ours = torch.compile(_select, fullgraph=True)
        compiled_peer = torch.compile(_where, fullgraph=True)
        ours, peer = _interleaved(
            functools.partial(compiled_ours, c, a, b),
            functools.partial(compiled_peer, c, a, b),
            args.repeats,
        )
        rows.append((f"{n:>8} elements, torch.compile", ours, peer, target))
    print(f"{'case':30} {'select':>11} {'torch.where':>12}  torch.where / select")
    for label, ours, peer, target in rows:
        times = f"{ours * 1e6:9.2f}us {peer * 1e6:10.2f}us"
        print(f"{label:30} {times}  {peer / ours:.2f} (target {target})")
    print(f"# {format_load(load_before, load_average())}")
    if args.per_call:
        return
    print(f"\n{'graphs traced under torch.compile':30} {'select':>11} {'torch.where':>12}")
    for label, ours_graphs, peer_graphs in _graph_counts():
        print(f"{label:30} {ours_graphs:11} {peer_graphs:12}")


if __name__ == "__main__":
    main()
