"""asv benchmarks of the JAX backend: eager dispatch overhead and traced cost.

The overhead target (per-call time of ``arrayselect.select`` at size 1 within
1.5x of ``jax.jit(lax.select)`` called directly) is measured by
``asv_benchmarks/jax_overhead.py``, which alternates the two in each round;
``JaxEagerSelect.track_speed_ratio`` records the same ratio in asv.
"""

from __future__ import annotations

import statistics
from typing import Any, ClassVar

try:
    import jax
    import jax.numpy as jnp
    from jax import lax
except ImportError:  # asv skips a benchmark whose setup raises NotImplementedError
    jax = None

import arrayselect as asel
from arrayselect._tools import bench_stats  # not time_interleaved: asv runs time_* names


def _require_jax() -> None:
    if jax is None:
        raise NotImplementedError("JAX is not installed")


def _inputs(size: int, scalar_else: bool) -> tuple[Any, Any, Any]:
    cond = jnp.arange(size) % 3 == 0
    then = jnp.arange(size, dtype=jnp.float32)
    else_: Any = 0.5 if scalar_else else -then
    return cond, then, else_


class JaxEagerSelect:
    """Eager calls on concrete arrays: arrayselect (fast path, portable) vs jax.jit(lax.select)."""

    params = (["jit_lax_select", "arrayselect", "arrayselect_portable"], [1, 10_000, 1_000_000])
    param_names: ClassVar[list[str]] = ["implementation", "size"]

    def setup(self, implementation: str, size: int) -> None:
        _require_jax()
        cond, then, else_ = _inputs(size, scalar_else=False)
        if implementation == "jit_lax_select":
            jitted = jax.jit(lax.select)
            self.call = lambda: jitted(cond, then, else_)
        elif implementation == "arrayselect":
            self.call = lambda: asel.select(cond, then, else_)
        else:

            def portable() -> Any:
                with asel.force_portable():
                    return asel.select(cond, then, else_)

            self.call = portable
        for _ in range(3):
            self.call().block_until_ready()

    def time_select(self, implementation: str, size: int) -> None:
        self.call().block_until_ready()

    def track_speed_ratio(self, implementation: str, size: int) -> float:
        """jax.jit(lax.select)'s per-call time over this implementation's, same inputs
        (median of 7 rounds; above 1: faster), the ratio every page uses."""
        cond, then, else_ = _inputs(size, scalar_else=False)
        jitted = jax.jit(lax.select)
        baseline = lambda: jitted(cond, then, else_)  # noqa: E731
        theirs, ours = bench_stats.time_interleaved(
            [lambda: baseline().block_until_ready(), lambda: self.call().block_until_ready()],
            7,
            number=300,
        )
        return statistics.median(t / o for t, o in zip(theirs, ours, strict=True))

    track_speed_ratio.unit = "ratio"  # type: ignore[attr-defined]


class JaxEagerScalarElse:
    """Eager calls with a Python float for ``else``: the scalar is passed, not materialized."""

    params = ([1, 1_000_000],)
    param_names: ClassVar[list[str]] = ["size"]

    def setup(self, size: int) -> None:
        _require_jax()
        self.cond, self.then, _ = _inputs(size, scalar_else=True)
        asel.select(self.cond, self.then, 0.5).block_until_ready()

    def time_select_scalar(self, size: int) -> None:
        asel.select(self.cond, self.then, 0.5).block_until_ready()


class JaxTraced:
    """Inside jax.jit: arrayselect adds nothing to the compiled program."""

    params = (["lax_select", "arrayselect"], ["same", "broadcast"])
    param_names: ClassVar[list[str]] = ["implementation", "shapes"]

    def setup(self, implementation: str, shapes: str) -> None:
        _require_jax()
        self.cond = jnp.arange(1024) % 2 == 0
        self.then = jnp.ones((256, 1024), jnp.float32)
        self.else_ = jnp.zeros((256, 1024), jnp.float32) if shapes == "same" else jnp.zeros(1024)
        if implementation == "lax_select":

            def fn(c: Any, t: Any, e: Any) -> Any:
                c = jnp.broadcast_to(c, t.shape)
                return lax.select(c, t, jnp.broadcast_to(e, t.shape))
        else:
            fn = asel.select
        self.fn = jax.jit(fn)
        self.fn(self.cond, self.then, self.else_).block_until_ready()

    def time_jitted(self, implementation: str, shapes: str) -> None:
        self.fn(self.cond, self.then, self.else_).block_until_ready()

    def time_trace_and_lower(self, implementation: str, shapes: str) -> None:
        self.fn.lower(self.cond, self.then, self.else_)
