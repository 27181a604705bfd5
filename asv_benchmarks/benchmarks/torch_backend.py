"""asv benchmarks of the PyTorch backend's routes (CPU tensors, float32, random mask).

:class:`TorchRoutes` -- how ``select`` runs on tensors: ``eager`` (the native
backend: ``torch.where`` for small outputs and whatever PyTorch must see, the
compiled kernel otherwise), ``portable`` (under ``force_portable()``), ``compile``
(``torch.compile(fullgraph=True)`` of ``select(c, a * 2, b) + 1`` against the same
function written with ``torch.where``, compiled the same way). ``time_peer`` is
``torch.where`` (compiled for the ``compile`` route). The targets are measured in
one run by ``asv_benchmarks/torch_ratios.py``.
"""

from __future__ import annotations

from typing import Any

try:
    import torch
except ImportError:  # asv skips a benchmark whose setup raises NotImplementedError
    torch = None

import arrayselect as asel

ROUTES = ["eager", "portable", "compile"]
SIZES = [1, 10**6, 10**7]


def _where_twice(c: Any, a: Any, b: Any) -> Any:
    return torch.where(c, a * 2, b) + 1


def _select_twice(c: Any, a: Any, b: Any) -> Any:
    return asel.select(c, a * 2, b) + 1


class TorchRoutes:
    """select on CPU tensors, by route, against torch.where."""

    params = [ROUTES, SIZES]
    param_names = ["route", "size"]
    timeout = 300

    def setup(self, route: str, size: int) -> None:
        if torch is None:
            raise NotImplementedError("torch is not installed")
        g = torch.Generator().manual_seed(20240611)
        c = torch.rand(size, generator=g) < 0.5
        a, b = torch.rand(size, generator=g), torch.rand(size, generator=g)
        if route == "compile":
            ours, peer = (
                torch.compile(_select_twice, fullgraph=True),
                torch.compile(_where_twice, fullgraph=True),
            )
        elif route == "portable":

            def ours(c: Any, a: Any, b: Any) -> Any:
                with asel.force_portable():
                    return asel.select(c, a, b)

            peer = torch.where
        else:
            ours, peer = asel.select, torch.where
        self.ours = lambda: ours(c, a, b)
        self.peer = lambda: peer(c, a, b)
        if not torch.equal(self.ours(), self.peer()):
            raise AssertionError(f"{route}: select differs from torch.where")

    def time_select(self, route: str, size: int) -> None:
        self.ours()

    def time_peer(self, route: str, size: int) -> None:
        self.peer()
