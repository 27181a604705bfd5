"""The compiled NumPy kernel against ``np.where`` (asv).

Each class times ``arrayselect.select`` (``time_select``) and ``np.where`` on
the same inputs (``time_where``), so ``asv compare`` / the published graphs
show the ratio per pattern. Patterns are those of the kernel's targets:
contiguous with a random cond at 10^6 and 10^7 float32, and at 10^7 output
elements: a cond broadcast along the inner axis, then/else broadcast from
(N, 1) and (1, M), all inputs transposed, all inputs step-2 slices. Plus the
call overhead at 1 and 100 elements, ``out=`` and 1 vs all threads; strided
layouts (step-2 columns, reversed rows, transposes that do not merge) against
``np.where`` and ``jax.jit(jnp.where)`` with the slicing inside the jitted
function; each instruction set the kernel's loops were compiled for; and the
one-pass ``select_cases``/``select_n`` (4 cases) against ``np.select``,
``np.choose``, a chain of four selects and their ``jax.jit`` peers.

``kernel_ratios.py`` and ``family_ratios.py`` next to this folder measure all
targets in one run and print the ratios; these classes are for tracking them over commits.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

import arrayselect as asel

try:
    from asv_runner.benchmarks.mark import SkipNotImplemented
except ImportError:  # asv < 0.6 or running a module by hand

    class SkipNotImplemented(NotImplementedError):  # type: ignore[no-redef]
        """Raised by ``setup`` to skip a parameter combination."""


_RNG_SEED = 20240607


def _inputs(pattern: str, n: int, dtype: str) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(_RNG_SEED)
    rows = 2500 if n == 10**7 else max(1, round(n**0.5))
    cols = n // rows

    def values(shape: tuple[int, ...]) -> Any:
        return rng.random(shape).astype(dtype)

    def cond(shape: tuple[int, ...]) -> Any:
        return rng.random(shape) < 0.5

    if pattern == "contiguous":
        return cond((n,)), values((n,)), values((n,))
    if pattern == "cond_N1":
        return cond((rows, 1)), values((rows, cols)), values((rows, cols))
    if pattern == "then_N1_else_1M":
        return cond((rows, cols)), values((rows, 1)), values((1, cols))
    if pattern == "transposed":
        return cond((cols, rows)).T, values((cols, rows)).T, values((cols, rows)).T
    if pattern == "step2":
        return cond((2 * n,))[::2], values((2 * n,))[::2], values((2 * n,))[::2]
    raise ValueError(pattern)


class Patterns:
    """select vs np.where per layout pattern, fresh output."""

    params: ClassVar[tuple[list[Any], ...]] = (
        ["contiguous", "cond_N1", "then_N1_else_1M", "transposed", "step2"],
        [10**6, 10**7],
        ["float32", "float64", "uint8"],
    )
    param_names: ClassVar[list[str]] = ["pattern", "n", "dtype"]
    timeout = 300

    def setup(self, pattern: str, n: int, dtype: str) -> None:
        self.cond, self.then, self.else_ = _inputs(pattern, n, dtype)
        asel.select(self.cond, self.then, self.else_)  # cache the plan

    def time_select(self, pattern: str, n: int, dtype: str) -> None:
        asel.select(self.cond, self.then, self.else_)

    def time_where(self, pattern: str, n: int, dtype: str) -> None:
        np.where(self.cond, self.then, self.else_)


class Out:
    """select with out= (no allocation) vs np.copyto of the same output size."""

    params: ClassVar[tuple[list[Any], ...]] = ([10**6, 10**7], ["float32"])
    param_names: ClassVar[list[str]] = ["n", "dtype"]

    def setup(self, n: int, dtype: str) -> None:
        self.cond, self.then, self.else_ = _inputs("contiguous", n, dtype)
        self.out = np.empty_like(self.then)
        asel.select(self.cond, self.then, self.else_, out=self.out)

    def time_select_out(self, n: int, dtype: str) -> None:
        asel.select(self.cond, self.then, self.else_, out=self.out)

    def time_select_in_place(self, n: int, dtype: str) -> None:
        asel.select(self.cond, self.out, self.else_, out=self.out)

    def time_copyto(self, n: int, dtype: str) -> None:
        np.copyto(self.out, self.then)


class CallOverhead:
    """Whole select() (validation included) vs np.where at tiny sizes."""

    params: ClassVar[tuple[list[Any], ...]] = ([1, 100], ["arrays", "python_scalar", "out"])
    param_names: ClassVar[list[str]] = ["n", "kind"]

    def setup(self, n: int, kind: str) -> None:
        self.cond, self.then, self.else_ = _inputs("contiguous", n, "float64")
        self.out = np.empty_like(self.then)
        self.time_select(n, kind)

    def time_select(self, n: int, kind: str) -> None:
        if kind == "arrays":
            asel.select(self.cond, self.then, self.else_)
        elif kind == "python_scalar":
            asel.select(self.cond, self.then, 0.5)
        else:
            asel.select(self.cond, self.then, self.else_, out=self.out)

    def time_where(self, n: int, kind: str) -> None:
        if kind == "arrays":
            np.where(self.cond, self.then, self.else_)
        elif kind == "python_scalar":
            np.where(self.cond, self.then, 0.5)
        else:
            np.copyto(self.out, np.where(self.cond, self.then, self.else_))


class Threads:
    """One thread vs every core the process may use, 10^5..10^7 float32."""

    params: ClassVar[tuple[list[Any], ...]] = ([10**5, 10**6, 10**7], [1, 0])
    param_names: ClassVar[list[str]] = ["n", "threads (0 = all)"]

    def setup(self, n: int, threads: int) -> None:
        self.cond, self.then, self.else_ = _inputs("contiguous", n, "float32")
        self.saved = asel.get_num_threads()
        from arrayselect._base.settings import default_num_threads

        asel.set_num_threads(threads or default_num_threads())
        asel.select(self.cond, self.then, self.else_)

    def teardown(self, n: int, threads: int) -> None:
        asel.set_num_threads(self.saved)

    def time_select(self, n: int, threads: int) -> None:
        asel.select(self.cond, self.then, self.else_)


STRIDED_LAYOUTS = ["step2_columns", "reversed_rows", "then_transposed"]


def _strided(layout: str) -> tuple[tuple[Any, ...], Any]:
    """Full 1000 x 2000 arrays and the function that takes the views of a layout."""
    rng = np.random.default_rng(_RNG_SEED)
    c = rng.random((1000, 2000)) < 0.5
    a = rng.random((1000, 2000), dtype=np.float32)
    b = rng.random((1000, 2000), dtype=np.float32)
    if layout == "step2_columns":
        return (c, a, b), lambda c, a, b: (c[:, ::2], a[:, ::2], b[:, ::2])
    if layout == "reversed_rows":
        return (c, a, b), lambda c, a, b: (c[:, ::-1], a[:, ::-1], b[:, ::-1])
    if layout == "then_transposed":
        at = rng.random((2000, 1000), dtype=np.float32)
        return (c, at, b), lambda c, a, b: (c, a.T, b)
    raise ValueError(layout)


class Strided:
    """Strided views of 1000 x 2000 float32: select vs np.where (StridedJax: the JAX peer)."""

    params: ClassVar[tuple[list[Any], ...]] = (STRIDED_LAYOUTS,)
    param_names: ClassVar[list[str]] = ["layout"]

    def setup(self, layout: str) -> None:
        full, views = _strided(layout)
        self.views = views(*full)
        asel.select(*self.views)

    def time_select(self, layout: str) -> None:
        asel.select(*self.views)

    def time_where(self, layout: str) -> None:
        np.where(*self.views)


class StridedJax:
    """The same views for jax.jit(jnp.where), the slicing inside the jitted function."""

    params: ClassVar[tuple[list[Any], ...]] = (STRIDED_LAYOUTS,)
    param_names: ClassVar[list[str]] = ["layout"]

    def setup(self, layout: str) -> None:
        try:
            import jax
            import jax.numpy as jnp
        except ImportError as exc:
            raise SkipNotImplemented("JAX is not installed") from exc
        full, views = _strided(layout)
        self.jitted = jax.jit(lambda c, a, b: jnp.where(*views(c, a, b)))
        self.on_device = [jax.device_put(x) for x in full]
        self.jitted(*self.on_device).block_until_ready()

    def time_jax_jit(self, layout: str) -> None:
        self.jitted(*self.on_device).block_until_ready()


class InstructionSets:
    """The kernel's loops per instruction set (skipped where not compiled in or supported)."""

    params: ClassVar[tuple[list[Any], ...]] = (
        ["baseline", "avx2", "avx512"],
        ["contiguous", "step2"],
        [10**6, 10**7],
    )
    param_names: ClassVar[list[str]] = ["isa", "pattern", "n"]

    def setup(self, isa: str, pattern: str, n: int) -> None:
        from arrayselect.backends.shared import kernel

        if isa not in kernel.isa_info()["usable"]:
            raise SkipNotImplemented(f"{isa} loops not usable here")
        self.kernel = kernel
        self.previous = kernel.isa_info()["current"]
        kernel.set_isa(isa)
        self.cond, self.then, self.else_ = _inputs(pattern, n, "float32")
        self.out = np.empty(n, np.float32)
        asel.select(self.cond, self.then, self.else_, out=self.out)

    def teardown(self, isa: str, pattern: str, n: int) -> None:
        self.kernel.set_isa(self.previous)

    def time_select_out(self, isa: str, pattern: str, n: int) -> None:
        asel.select(self.cond, self.then, self.else_, out=self.out)


def _family_inputs(n: int) -> dict[str, Any]:
    rng = np.random.default_rng(_RNG_SEED)
    return {
        "conds": [rng.random(n) < 0.25 for _ in range(4)],
        "choices": [rng.random(n, dtype=np.float32) for _ in range(4)],
        "default": rng.random(n, dtype=np.float32),
        "which": rng.integers(0, 4, n, dtype=np.int32),
        "out": np.empty(n, np.float32),
    }


class Family:
    """The kernel's one-pass select_cases and select_n (4 cases, float32) against NumPy.

    ``time_chain`` is the best two-way selects can do: four ``select(..., out=r)``.
    """

    params: ClassVar[tuple[list[Any], ...]] = ([10**6, 10**7],)
    param_names: ClassVar[list[str]] = ["n"]

    def setup(self, n: int) -> None:
        from arrayselect.backends.shared import kernel_cases

        self.family = kernel_cases
        self.d = _family_inputs(n)

    def time_select_cases(self, n: int) -> None:
        d = self.d
        shape = d["default"].shape  # the output shape, as the backend gives the core's
        self.family.kernel_select_cases(d["conds"], d["choices"], d["default"], None, shape)

    def time_select_cases_out(self, n: int) -> None:
        d = self.d
        shape = d["default"].shape
        self.family.kernel_select_cases(d["conds"], d["choices"], d["default"], d["out"], shape)

    def time_np_select(self, n: int) -> None:
        d = self.d
        np.select(d["conds"], d["choices"], d["default"])

    def time_chain(self, n: int) -> None:
        d = self.d
        out = d["out"]
        asel.select(d["conds"][3], d["choices"][3], d["default"], out=out)
        for k in (2, 1, 0):
            asel.select(d["conds"][k], d["choices"][k], out, out=out)

    def time_select_n(self, n: int) -> None:
        d = self.d
        self.family.kernel_select_n(d["which"], d["choices"], None, d["which"].shape)

    def time_np_choose(self, n: int) -> None:
        np.choose(self.d["which"], self.d["choices"])


class FamilyJax:
    """jax.jit(jnp.select) and jax.jit(lax.select_n) on the inputs of ``Family``."""

    params: ClassVar[tuple[list[Any], ...]] = ([10**6, 10**7],)
    param_names: ClassVar[list[str]] = ["n"]

    def setup(self, n: int) -> None:
        try:
            import jax
            import jax.numpy as jnp
        except ImportError as exc:
            raise SkipNotImplemented("JAX is not installed") from exc
        d = _family_inputs(n)
        self.conds = [jax.device_put(c) for c in d["conds"]]
        self.choices = [jax.device_put(c) for c in d["choices"]]
        self.default = jax.device_put(d["default"])
        self.which = jax.device_put(d["which"])
        self.select = jax.jit(lambda c, x, y: jnp.select(c, x, y))
        self.select_n = jax.jit(lambda w, x: jax.lax.select_n(w, *x))
        self.time_jax_select(n)
        self.time_jax_select_n(n)

    def time_jax_select(self, n: int) -> None:
        self.select(self.conds, self.choices, self.default).block_until_ready()

    def time_jax_select_n(self, n: int) -> None:
        self.select_n(self.which, self.choices).block_until_ready()
