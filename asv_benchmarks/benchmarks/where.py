"""``arrayselect.where`` against each library's own ``where``.

:class:`Where` -- backend x operands x size: the same mask, ``x1`` and ``x2`` of one
dtype (float32), a float32 array and a Python float, or an int8 and a float32
array (promoted). ``time_where`` has a ``time_peer`` twin timing the library's own
``where`` (``np.where``, ``torch.where``, ``jit(jnp.where)``, ...) on the same
device arrays. Compilation and the first call are not timed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import arrayselect as asel

from .common import SEED, SkipNotImplemented, random_mask, target

#: The libraries whose own ``where`` is a peer (one device each: the CPU).
WHERE_BACKENDS = ["numpy", "torch-cpu", "jax-cpu", "dask"]
OPERANDS = ["float32,float32", "float32,python-float", "int8,float32"]
WHERE_SIZES = [10**3, 10**5, 10**6]


class Where:
    """``where`` with promotion and Python scalars, against the library's where."""

    params = [WHERE_BACKENDS, OPERANDS, WHERE_SIZES]
    param_names = ["backend", "operands", "size"]
    timeout = 120

    def setup(self, backend: str, operands: str, size: int) -> None:
        t = target(backend)
        lib = t.adapter
        rng = np.random.default_rng(SEED)
        first, second = operands.split(",")
        x1 = rng.standard_normal(size).astype(first)
        x2: Any = 0.5 if second == "python-float" else rng.standard_normal(size).astype(second)
        args = [lib.from_numpy(random_mask(rng, (size,))), lib.from_numpy(x1)]
        args.append(x2 if isinstance(x2, float) else lib.from_numpy(x2))
        ours, peer = lib.compile(asel.where), lib.compile(lib.peer)
        self.ours = lambda: lib.sync(ours(*args))
        self.peer = lambda: lib.sync(peer(*args))
        got, expected = lib.to_numpy(self.ours()), lib.to_numpy(self.peer())
        if got.dtype != expected.dtype or not np.array_equal(
            got.view(np.uint8), expected.view(np.uint8)
        ):
            raise SkipNotImplemented(f"{backend}: where differs from the library's where")

    def time_where(self, backend: str, operands: str, size: int) -> None:
        self.ours()

    def time_peer(self, backend: str, operands: str, size: int) -> None:
        self.peer()
