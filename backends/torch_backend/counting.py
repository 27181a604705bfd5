"""A ``torch.compile`` backend that counts the graphs it is handed (each one a trace).

The tests and ``asv_benchmarks/torch_ratios.py`` count with it how often a compiled
function that calls ``select`` is traced, against the same function with
``torch.where``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CountingBackend"]


class CountingBackend:
    """Pass to ``torch.compile(backend=...)``; :attr:`graphs` counts the graphs, each
    run as Dynamo traced it (``gm.forward``, no further compilation)."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        self.graphs += 1
        return gm.forward
