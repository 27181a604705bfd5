"""The select family against each library's own n-way selection.

:class:`SelectN` -- ``select_n`` with 4 float32 cases and an int8 index (int32 on
JAX) against ``np.choose``, a chain of ``torch.where``, ``jit(lax.select_n)`` and
``cupy.choose``. :class:`SelectCases` -- ``select_cases`` with 4 conditions against
``np.select``, a chain of ``torch.where``, ``jit(jnp.select)`` and ``cupy.select``
(with its default as a scalar, the only default CuPy takes). The CuPy rows skip
without a GPU. :class:`ApplyWhere` --
``apply_where(x > 0, x, log, fill_value=0.0)`` against
``array_api_extra.apply_where``. Every ``setup`` checks that both compute the same
bits; the first call is not timed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import arrayselect as asel

from .common import SEED, SkipNotImplemented, target

FAMILY_BACKENDS = ["numpy", "torch-cpu", "jax-cpu", "cupy"]
FAMILY_SIZES = [10**3, 10**6]
CASES = 4


def _torch_chain(which: Any, cases: list[Any]) -> Any:
    import torch

    result = cases[-1]
    for k in reversed(range(len(cases) - 1)):
        result = torch.where(which == k, cases[k], result)
    return result


def _torch_first_match(conds: list[Any], choices: list[Any], default: Any) -> Any:
    import torch

    result = default
    for cond, choice in zip(reversed(conds), reversed(choices), strict=True):
        result = torch.where(cond, choice, result)
    return result


def _peers(library: str) -> dict[str, Any]:
    if library == "numpy":
        return {"select_n": lambda w, *c: np.choose(w, c), "select_cases": np.select}
    if library == "torch":
        return {
            "select_n": lambda w, *c: _torch_chain(w, list(c)),
            "select_cases": _torch_first_match,
        }
    if library == "cupy":
        import cupy

        return {
            "select_n": lambda w, *c: cupy.choose(w, c),
            "select_cases": lambda c, ch, d: cupy.select(c, ch, 0.0),
        }
    import jax

    return {
        "select_n": jax.jit(jax.lax.select_n),
        "select_cases": jax.jit(lambda c, ch, d: jax.numpy.select(c, ch, d)),
    }


class _Family:
    params = [FAMILY_BACKENDS, FAMILY_SIZES]
    param_names = ["backend", "size"]
    timeout = 120

    def _check(self, backend: str) -> None:
        lib = self.lib
        got, expected = lib.to_numpy(self.ours()), lib.to_numpy(self.peer())
        if got.dtype != expected.dtype or not np.array_equal(
            got.view(np.uint8), expected.view(np.uint8)
        ):
            raise SkipNotImplemented(f"{backend}: {type(self).__name__} differs from its peer")

    def time_ours(self, backend: str, size: int) -> None:
        self.ours()

    def time_peer(self, backend: str, size: int) -> None:
        self.peer()


class SelectN(_Family):
    """``select_n`` with four cases against the library's n-way selection."""

    def setup(self, backend: str, size: int) -> None:
        t = target(backend)
        self.lib = lib = t.adapter
        rng = np.random.default_rng(SEED)
        index = np.int32 if lib.library == "jax" else np.int8
        which = lib.from_numpy(rng.integers(0, CASES, size).astype(index))
        cases = [lib.from_numpy(rng.standard_normal(size).astype(np.float32)) for _ in range(CASES)]
        peer = _peers(lib.library)["select_n"]
        self.ours = lambda: lib.sync(asel.select_n(which, *cases))
        self.peer = lambda: lib.sync(peer(which, *cases))
        self._check(backend)


class SelectCases(_Family):
    """``select_cases`` with four conditions against ``np.select`` and its peers."""

    def setup(self, backend: str, size: int) -> None:
        t = target(backend)
        self.lib = lib = t.adapter
        rng = np.random.default_rng(SEED)
        conds = [lib.from_numpy(rng.random(size) < 0.2) for _ in range(CASES)]
        choices = [
            lib.from_numpy(rng.standard_normal(size).astype(np.float32)) for _ in range(CASES)
        ]
        default = lib.from_numpy(np.zeros(size, np.float32))
        peer = _peers(lib.library)["select_cases"]
        self.ours = lambda: lib.sync(asel.select_cases(conds, choices, default))
        self.peer = lambda: lib.sync(peer(conds, choices, default))
        self._check(backend)


class ApplyWhere(_Family):
    """``apply_where(x > 0, x, log, fill_value=0.0)`` against array-api-extra's."""

    def setup(self, backend: str, size: int) -> None:
        try:
            import array_api_extra as xpx
        except ImportError as exc:
            raise SkipNotImplemented("array_api_extra is not installed") from exc
        t = target(backend)
        self.lib = lib = t.adapter
        x = lib.from_numpy(np.random.default_rng(SEED).standard_normal(size))
        log = lib.xp.log
        self.ours = lambda: lib.sync(asel.apply_where(x > 0, x, log, fill_value=0.0))
        self.peer = lambda: lib.sync(xpx.apply_where(x > 0, x, log, fill_value=0.0))
        self._check(backend)
