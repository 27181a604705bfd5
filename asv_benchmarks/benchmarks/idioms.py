"""The calls people write, each against the idiom it replaces (issue 39).

Every form is timed through the public API on every backend that has it, beside the
library's own way of writing the same thing: its ``where`` for two-way selects, a
chain of ``where`` for ``select_cases`` and ``select_n`` (what a user writes without
arrayselect, and faster than ``np.select``/``np.choose``), the double ``where`` for
``apply_where``. On JAX the idiom is the fused call a JAX user writes,
``jax.jit`` of it: ``jax-eager`` times arrayselect outside ``jit`` against it,
``jax-jit`` times ``jax.jit`` of arrayselect's call. Results are checked against
the idiom's, bit for bit, in ``setup``.

``cd asv_benchmarks && python -m benchmarks.idioms`` prints the whole table as ratios
(the idiom's time over arrayselect's: above 1 is faster) from one run, the contenders
interleaved (:func:`arrayselect._tools.bench_stats.compare_interleaved`), with the machine
and its load (``--quick``: 10^3 elements, 5 repeats; ``--backends numpy,torch-cpu``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

import numpy as np

import arrayselect as asel

from .common import SEED, SkipNotImplemented, target

IDIOM_BACKENDS = ["numpy", "torch-cpu", "jax-eager", "jax-jit", "dask", "cupy"]
IDIOM_SIZES = [1, 10**3, 10**6]
#: form -> what the idiom is (the table's second column).
FORMS: dict[str, str] = {
    "where(c, x, 0.5)": "where(c, x, 0.5)",
    "where(c, 0.5, x)": "where(c, 0.5, x)",
    "where(c, x, 0-d)": "where(c, x, 0-d)",
    "where(row, X, Y)": "where(row, X, Y)",
    "select(c, x, 0.5)": "where(c, x, 0.5)",
    "select(c, x, y, out=)": "where(c, x, y)",
    "select_cases(4 conds)": "4 chained where",
    "select_cases(4, default=-1)": "4 chained where",
    "select_cases(4, default=array)": "4 chained where",
    "select_n(bool, a, b)": "where(w, b, a)",
    "select_n(int32, 2 cases)": "where(w == 1, ...)",
    "select_n(int32, 8 cases)": "7 chained where",
    "select_n(int32, 8, out=)": "7 chained where",
    "apply_where(fill_value=nan)": "double where",
    "apply_where(f2=neg)": "double where",
}
_ADAPTER = {"jax-eager": "jax-cpu", "jax-jit": "jax-cpu"}


def _chain(where: Callable[..., Any], conds: list[Any], choices: list[Any], default: Any) -> Any:
    """The first true condition's choice, ``default`` where none is: ``where`` chained."""
    result = default
    for cond, choice in zip(reversed(conds), reversed(choices), strict=True):
        result = where(cond, choice, result)
    return result


def _calls(
    form: str, lib: Any, size: int, rng: np.random.Generator
) -> tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]:
    """``(ours, idiom, args)``: both take ``args``, arrays on ``lib``'s device."""
    put, where, xp = lib.from_numpy, lib.peer, lib.xp

    def vec(dtype: Any = np.float32) -> Any:
        return put(rng.standard_normal(size).astype(dtype))

    def mask(p: float = 0.5) -> Any:
        return put(rng.random(size) < p)

    if form.startswith("where(c, x, 0.5)"):
        return (
            (lambda c, x: asel.where(c, x, 0.5)),
            (lambda c, x: where(c, x, 0.5)),
            (mask(), vec()),
        )
    if form.startswith("where(c, 0.5, x)"):
        return (
            (lambda c, x: asel.where(c, 0.5, x)),
            (lambda c, x: where(c, 0.5, x)),
            (mask(), vec()),
        )
    if form.startswith("where(c, x, 0-d)"):
        zero = put(np.asarray(0.5, np.float32))
        return (
            (lambda c, x: asel.where(c, x, zero)),
            (lambda c, x: where(c, x, zero)),
            (mask(), vec()),
        )
    if form.startswith("where(row"):
        cols = max(1, math.isqrt(size))
        rows = max(1, size // cols)
        row = put(rng.random(cols) < 0.5)
        grid = [put(rng.standard_normal((rows, cols)).astype(np.float32)) for _ in range(2)]
        return asel.where, where, (row, *grid)
    if form.startswith("select(c, x, 0.5)"):
        return (
            (lambda c, x: asel.select(c, x, 0.5)),
            (lambda c, x: where(c, x, 0.5)),
            (mask(), vec()),
        )
    if form.startswith("select(c, x, y, out=)"):
        if lib.library in ("jax", "dask"):
            raise SkipNotImplemented(f"{lib.library} arrays take no out=")
        out = vec()
        return (
            (lambda c, x, y: asel.select(c, x, y, out=out)),
            where,
            (mask(), vec(), vec()),
        )
    if form.startswith("select_cases"):
        conds, choices = [mask(0.25) for _ in range(4)], [vec() for _ in range(4)]
        if "default=-1" in form:
            default, fill = -1.0, -1.0
        elif "default=array" in form:
            default = fill = vec()
        else:
            default, fill = None, 0.0

        def ours(*a: Any) -> Any:
            if default is None:
                return asel.select_cases(list(a[:4]), list(a[4:]))
            return asel.select_cases(list(a[:4]), list(a[4:]), default)

        return ours, (lambda *a: _chain(where, list(a[:4]), list(a[4:]), fill)), (*conds, *choices)
    if form.startswith("select_n(bool"):
        return asel.select_n, (lambda w, a, b: where(w, b, a)), (mask(), vec(), vec())
    if form.startswith("select_n(int32"):
        n = 2 if "2 cases" in form else 8
        which = put(rng.integers(0, n, size).astype(np.int32))
        cases = [vec() for _ in range(n)]
        out = None
        if "out=" in form:
            if lib.library in ("jax", "dask"):
                raise SkipNotImplemented(f"{lib.library} arrays take no out=")
            out = vec()

        def idiom(w: Any, *c: Any) -> Any:
            return _chain(where, [w == k for k in range(n - 1)], list(c[:-1]), c[-1])

        if out is None:
            return asel.select_n, idiom, (which, *cases)
        return (lambda w, *c: asel.select_n(w, *c, out=out)), idiom, (which, *cases)
    if form.startswith("apply_where"):
        x = put(np.abs(rng.standard_normal(size)).astype(np.float32) - 0.25)
        c = x > 0
        log, neg = xp.log, xp.negative
        if "fill_value" in form:
            return (
                (lambda c, x: asel.apply_where(c, x, log, fill_value=float("nan"))),
                (lambda c, x: where(c, log(where(c, x, 1)), float("nan"))),
                (c, x),
            )
        return (
            (lambda c, x: asel.apply_where(c, x, log, neg)),
            (lambda c, x: where(c, log(where(c, x, 1)), neg(where(c, 1, x)))),
            (c, x),
        )
    raise ValueError(form)


class Idioms:
    """``time_arrayselect`` and ``time_idiom`` of each form, backend and size."""

    params = [IDIOM_BACKENDS, list(FORMS), IDIOM_SIZES]
    param_names = ["backend", "form", "size"]
    timeout = 120

    def setup(self, backend: str, form: str, size: int) -> None:
        lib = target(_ADAPTER.get(backend, backend)).adapter
        ours, idiom, args = _calls(form, lib, size, np.random.default_rng(SEED))
        if lib.library == "jax":
            idiom = lib.compile(idiom)  # what a JAX user writes: the fused call
            if backend == "jax-jit":
                ours = lib.compile(ours)
        sync = lib.sync
        self.ours = lambda: sync(ours(*args))
        self.idiom = lambda: sync(idiom(*args))
        got, expected = lib.to_numpy(self.ours()), lib.to_numpy(self.idiom())
        if got.dtype != expected.dtype or got.tobytes() != expected.tobytes():
            raise AssertionError(f"{backend} {form} {size}: not the idiom's bits")

    def time_arrayselect(self, backend: str, form: str, size: int) -> None:
        self.ours()

    def time_idiom(self, backend: str, form: str, size: int) -> None:
        self.idiom()


def main(argv: list[str] | None = None) -> int:
    """Print the idiom table: ratios from one run, interleaved, with machine and load."""
    from arrayselect._tools.bench_stats import (
        compare_interleaved,
        format_load,
        load_average,
        machine,
    )

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^3 elements, 5 repeats")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--backends", default=",".join(IDIOM_BACKENDS))
    parser.add_argument(
        "--profile",
        nargs=3,
        metavar=("BACKEND", "FORM", "SIZE"),
        help="instead of the table: where one cell's arrayselect call spends its time "
        "(cProfile over warm calls, the 12 functions of most own time)",
    )
    args = parser.parse_args(argv)
    if args.profile:
        return _profile(*args.profile)
    sizes = [10**3] if args.quick else IDIOM_SIZES
    repeats = 5 if args.quick else args.repeats
    before = load_average()
    print(f"# {machine().describe()}; {repeats} interleaved repeats of each cell's two calls")
    print("# ratio = the idiom's time / arrayselect's (above 1: arrayselect is faster)")
    print("| backend | call | idiom | " + " | ".join(f"{s:g}" for s in sizes) + " |")
    print("|---|---|---|" + "---:|" * len(sizes))
    for backend in args.backends.split(","):
        for form, idiom_text in FORMS.items():
            cells = []
            for size in sizes:
                bench = Idioms()
                try:
                    bench.setup(backend, form, size)
                except SkipNotImplemented:
                    cells.append("—")
                    continue
                ours, idiom = compare_interleaved([bench.ours, bench.idiom], repeats)
                cells.append(f"{idiom / ours:.2f}x")
            if any(c != "—" for c in cells):
                print(f"| {backend} | `{form}` | {idiom_text} | " + " | ".join(cells) + " |")
    print(f"# {format_load(before, load_average())}")
    return 0


def _profile(backend: str, form: str, size: str, seconds: float = 0.5) -> int:
    """Print cProfile's view of about ``seconds`` of one cell's warm arrayselect calls."""
    import cProfile
    import pstats
    import time

    from arrayselect._tools.bench_stats import format_load, load_average, machine

    bench = Idioms()
    bench.setup(backend, form, int(float(size)))
    start = time.perf_counter()
    bench.ours()
    calls = max(10, int(seconds / max(time.perf_counter() - start, 1e-7)))
    before = load_average()
    profile = cProfile.Profile()
    profile.runcall(lambda: [bench.ours() for _ in range(calls)])
    print(f"# {machine().describe()}; {backend} `{form}` at {size} elements, {calls} warm calls")
    pstats.Stats(profile).sort_stats("tottime").print_stats(12)
    print(f"# {format_load(before, load_average())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
