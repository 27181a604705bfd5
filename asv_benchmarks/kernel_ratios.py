"""Measure every target of the NumPy kernel in one run and print the ratios.

    python asv_benchmarks/kernel_ratios.py [--repeats 21]

For each case ``np.where`` and ``arrayselect.select`` run on the same inputs,
alternately, ``--repeats`` times; the table shows the medians and their ratio.
Each repeat times a batch of consecutive calls of one function (timeit and asv
style: the batch is sized to last about 20 ms, asv's samples last 10 ms) and
reports the time per call, so both functions are measured in their steady
state. Large cases use the wall clock (the kernel may use several threads).
The call-overhead cases (batches of 2000 calls) run on one thread, so they are
timed with the thread's CPU clock, which a busy machine's preemptions do not
inflate.

For the contiguous 10^7 and 10^6 cases an extra row, marked "cold", times
single calls, each right after an ``np.where`` call on the same inputs: there
the operands come from main memory rather than the caches, and the pool's
workers may have gone to sleep. It has no target (the issue's 10^6 figure is
"in cache") and is printed so that nobody mistakes one figure for the other.

Targets (the issue):
  * 10^7 float32, random cond, contiguous: select >= 6x faster than np.where
  * 10^6 float32, same: >= 8x
  * 10^7 output elements, >= 3x each: cond (N, 1) with then/else (N, M);
    then (N, 1) with else (1, M); all inputs transposed; all inputs step-2 slices
  * bandwidth of select at 10^7 float32 (out= given; counting 1 + 2s bytes read
    and s written per element of item size s) >= 70% of the copy bandwidth
    (np.copyto into an existing array, read + write bytes; the larger of one
    thread and one thread per core on halves)
  * call overhead: the whole select() at 1 and 100 elements <= 1.5x np.where's time
    (printed as np.where's time over select's, >= 0.67, as every ratio: above 1 is faster)
  * step-2 slices (x[:, ::2] of 1000 x 2000 float32, bool cond; 10^6 output
    elements): select >= 1.5x faster than jax.jit(jnp.where) with the slicing
    inside the jitted function, and >= 5x faster than np.where (skipped without
    JAX); more strided layouts as information

Per layout, an "of floor" row: select's bandwidth as a fraction of the copy
floor's. The floor is a copy of the output by the kernel itself
(``select(True, src, src, out=dst)`` with a 0-d cond: its block loop, a row copy
split over the kernel's own threads, with streaming stores from the same size
on as select's), so both sides use the same threads and the same kind of
stores, and the ratio is about memory, not threads. Bandwidth counts the bytes each side
must move per output element: the copy 2s (read s, write s; item size s),
select the cond's item, then, else and out (a broadcast operand counts nothing
per element); select writes into an ``out`` laid out as its own result would be.
In these rows the first time column is the copy's. ``--only floor`` (or
``--only step2``) runs those rows alone.

Information rows: 10^7 with the output pool off and on one thread, and per
instruction set the kernel's loops were compiled for and this CPU supports:
10^6 float32 contiguous (in cache), 10^7 float32 contiguous (memory bound) and
the step-2 case, each relative to the baseline loops.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import platform
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from arrayselect.backends.shared import kernel as numpy_kernel

import arrayselect as asel
from arrayselect._tools.bench_stats import (
    Spread,
    compare_interleaved,
    format_load,
    load_average,
    machine,
    time_interleaved,
)

N7 = 10**7
ROWS, COLS = 2500, 4000  # 10^7 output elements for the 2-D patterns


SAMPLE_SECONDS = 0.02


def compare(
    where: Callable[[], Any],
    select: Callable[[], Any],
    repeats: int,
    number: int | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float, float]:
    """Median seconds per call of ``where`` and ``select``, their batches interleaved."""
    tw, ts = compare_interleaved(
        [where, select], repeats, SAMPLE_SECONDS, number=number, clock=clock
    )
    return tw, ts


def compare_cold(
    where: Callable[[], Any], select: Callable[[], Any], repeats: int
) -> tuple[float, float]:
    """Median seconds of single calls of ``where`` and ``select``, each right after the
    other: a fixed order, unlike :func:`compare_interleaved`'s, since "cold" here means
    right after ``np.where`` has run on the same inputs."""
    where()
    select()
    tw: list[float] = []
    ts: list[float] = []
    for _ in range(repeats):
        tw += time_interleaved([where], 1, number=1)[0]
        ts += time_interleaved([select], 1, number=1)[0]
    return Spread.of(tw).median, Spread.of(ts).median


def copy_bandwidth(repeats: int) -> tuple[float, float]:
    """Copy bandwidth (read + write bytes per second): one thread, and one per core."""
    src = np.random.default_rng(1).random(N7, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    (one,) = compare_interleaved([lambda: np.copyto(dst, src)], repeats, number=1)
    cores = asel.get_num_threads()
    bounds = [N7 * i // cores for i in range(cores + 1)]
    parts = [(dst[a:b], src[a:b]) for a, b in itertools.pairwise(bounds)]
    with ThreadPoolExecutor(cores) as pool:

        def threaded() -> None:
            list(pool.map(lambda p: np.copyto(*p), parts))

        threaded()
        (many,) = compare_interleaved([threaded], repeats, number=1)
    nbytes = 2 * src.nbytes
    return nbytes / one, nbytes / many


def _jax() -> Any:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    return jax, jnp


def strided_rows(
    rows: list[tuple[str, float, float, str, bool]],
    repeats: int,
    mask: Callable[..., Any],
    f32: Callable[..., Any],
) -> None:
    """Step-2 slices against np.where and jax.jit(jnp.where) (slicing inside), one run."""
    jax, jnp = _jax()
    c, a, b = mask(1000, 2000), f32(1000, 2000), f32(1000, 2000)
    at, c_t, b_t = f32(2000, 1000), mask(2000, 1000), f32(2000, 1000)
    cases: list[tuple[str, tuple[Any, ...], Callable[..., tuple[Any, Any, Any]], bool]] = [
        (
            "step-2 slices x[:, ::2], 10^6",
            (c, a, b),
            lambda c, a, b: (c[:, ::2], a[:, ::2], b[:, ::2]),
            True,
        ),
        (
            "  reversed x[:, ::-1], 2*10^6",
            (c, a, b),
            lambda c, a, b: (c[:, ::-1], a[:, ::-1], b[:, ::-1]),
            False,
        ),
        ("  then transposed (a.T), 2*10^6", (c, at, b), lambda c, a, b: (c, a.T, b), False),
        ("  cond, else transposed, 2*10^6", (c_t, a, b_t), lambda c, a, b: (c.T, a, b.T), False),
    ]
    for name, full, views, target in cases:
        cv, av, bv = views(*full)
        fns: list[Callable[[], Any]] = [
            lambda cv=cv, av=av, bv=bv: np.where(cv, av, bv),
            lambda cv=cv, av=av, bv=bv: asel.select(cv, av, bv),
        ]
        if jax is not None:
            jitted = jax.jit(lambda c, a, b, views=views: jnp.where(*views(c, a, b)))
            on_device = [jax.device_put(x) for x in full]
            expected = np.where(cv, av, bv)
            assert np.array_equal(np.asarray(jitted(*on_device)), expected)
            assert np.array_equal(asel.select(cv, av, bv), expected)
            fns.append(lambda j=jitted, d=on_device: j(*d).block_until_ready())
        times = compare_interleaved(fns, repeats)
        tw, ts = times[0], times[1]
        if jax is None:
            rows.append(
                (name, tw, ts, f"{tw / ts:.2f}x np.where (jax.jit: JAX not installed)", True)
            )
            continue
        tj = times[2]
        text = f"{tw / ts:.2f}x np.where, {tj / ts:.2f}x jax.jit ({tj * 1e3:.3f} ms)"
        if target:
            ok = tw / ts >= 5 and tj / ts >= 1.5
            rows.append((name, tw, ts, text + " (target >= 5x, >= 1.5x)", ok))
        else:
            rows.append((name, tw, ts, text + " (info)", True))


def kernel_copy(src: Any, dst: Any) -> Callable[[], Any]:
    """The copy floor: dst = src by the kernel's block loop on the kernel's own threads."""
    true = np.ones((), dtype=bool)
    return lambda: asel.select(true, src, src, out=dst)


def _line_factor(x: Any) -> float:
    """Bytes of cache line an element of x drags in per byte used: its step, up to a line."""
    if x.ndim == 0 or x.size <= 1:
        return 1.0
    inner = abs(x.strides[-1])
    if inner <= x.itemsize or inner > min(abs(t) for t in x.strides if t != 0):
        return 1.0  # contiguous rows, or a transpose (tiled: whole lines are used)
    return min(inner, 64) / x.itemsize


def floor_rows(
    rows: list[tuple[str, float, float, str, bool]],
    repeats: int,
    mask: Callable[..., Any],
    rand: Callable[..., Any],
) -> None:
    """Per layout: select's bandwidth as a fraction of the copy floor's, same threads."""
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    c2, a2, b2 = mask(1000, 2000), rand(f32, 1000, 2000), rand(f32, 1000, 2000)
    layouts: list[tuple[str, Any, Any, Any]] = [
        ("step-2 slices [:, ::2], f32 10^6", c2[:, ::2], a2[:, ::2], b2[:, ::2]),
        (
            "transposed (all 3), f32 10^7",
            mask(COLS, ROWS).T,
            rand(f32, COLS, ROWS).T,
            rand(f32, COLS, ROWS).T,
        ),
        (
            "cond (1,M), then/else (N,M), f32 10^7",
            mask(1, COLS),
            rand(f32, ROWS, COLS),
            rand(f32, ROWS, COLS),
        ),
        (
            "cond (N,1), then/else (N,M), f32 10^7",
            mask(ROWS, 1),
            rand(f32, ROWS, COLS),
            rand(f32, ROWS, COLS),
        ),
        ("f64 10^6 contiguous", mask(10**6), rand(f64, 10**6), rand(f64, 10**6)),
        ("f32 10^6 contiguous", mask(10**6), rand(f32, 10**6), rand(f32, 10**6)),
        ("f32 10^7 contiguous", mask(N7), rand(f32, N7), rand(f32, N7)),
    ]
    for name, c, a, b in layouts:
        shape = np.broadcast_shapes(c.shape, a.shape, b.shape)
        out = asel.select(c, a, b)  # laid out as select lays out its result (transposes too)
        src, dst = rand(a.dtype, *shape), np.empty(shape, a.dtype)
        size, s = out.size, a.dtype.itemsize
        # bytes per output element each side must move (a broadcast operand: ~0)
        moved = sum(x.itemsize * x.size / size for x in (c, a, b)) + s
        touched = sum(x.itemsize * x.size * _line_factor(x) / size for x in (c, a, b)) + s
        t_copy, t_sel = compare_interleaved(
            [kernel_copy(src, dst), lambda c=c, a=a, b=b, out=out: asel.select(c, a, b, out=out)],
            repeats,
        )
        frac = (moved / t_sel) / (2 * s / t_copy)
        info = numpy_kernel.explain(c, a, b, out, shape, None, None, None)
        rows.append(
            (
                f"of floor: {name}",
                t_copy,
                t_sel,
                f"{frac:.2f} of floor ({moved:.1f} vs {2 * s} B/element"
                + (f", {touched:.1f} B in the cache lines read" if touched != moved else "")
                + f"; time {t_copy / t_sel:.2f} of the copy's; loop {info['loop']}, "
                f"{info['stores']} stores, {info['threads']} threads) (target >= 0.9)",
                frac >= 0.9,
            )
        )


def isa_rows(
    rows: list[tuple[str, float, float, str, bool]],
    repeats: int,
    in_cache: tuple[Any, Any, Any],
    in_memory: tuple[Any, Any, Any],
) -> None:
    """Each usable instruction set's loops relative to the baseline's, one run."""
    info = numpy_kernel.isa_info()
    if len(info["usable"]) < 2:
        rows.append(("  instruction sets", 0.0, 0.0, f"only {info['usable']} here (info)", True))
        return
    big = np.random.default_rng(5).random(2 * 10**6, dtype=np.float32)
    bigc = np.random.default_rng(6).random(2 * 10**6) < 0.5
    step2 = (bigc[::2], big[::2], big[1::2])
    for label, (c, a, b) in (
        ("10^6 contiguous", in_cache),
        ("10^7 contiguous", in_memory),
        ("10^6 step-2", step2),
    ):

        def run(isa: str, c: Any = c, a: Any = a, b: Any = b) -> Any:
            numpy_kernel.set_isa(isa)
            return asel.select(c, a, b)

        fns = [functools.partial(run, isa) for isa in info["usable"]]
        times = compare_interleaved(fns, repeats)
        numpy_kernel.set_isa(info["current"])
        base = times[0]
        for isa, t in zip(info["usable"][1:], times[1:], strict=True):
            rows.append(
                (
                    f"  {label}, {isa} loops",
                    base,
                    t,
                    f"{base / t:.2f}x the baseline loops (info)",
                    True,
                )
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument(
        "--only", choices=("all", "floor", "step2"), default="all", help="run these rows alone"
    )
    args = parser.parse_args()
    repeats = max(15, args.repeats)
    rng = np.random.default_rng(20240607)

    def f32(*shape: int) -> Any:
        return rng.random(shape, dtype=np.float32)

    def mask(*shape: int) -> Any:
        return rng.random(shape) < 0.5

    def rand(dtype: np.dtype[Any], *shape: int) -> Any:
        return rng.random(shape).astype(dtype)

    rows: list[tuple[str, float, float, str, bool]] = []

    def ratio_case(name: str, c: Any, a: Any, b: Any, target: float, cold: bool = False) -> None:
        def where() -> Any:
            return np.where(c, a, b)

        def select() -> Any:
            return asel.select(c, a, b)

        tw, ts = compare(where, select, repeats)
        ratio = tw / ts
        rows.append((name, tw, ts, f"{ratio:.2f}x faster (target >= {target:g}x)", ratio >= target))
        if cold:
            tw, ts = compare_cold(where, select, repeats)
            rows.append(
                (
                    "  same, cold: one call after each np.where",
                    tw,
                    ts,
                    f"{tw / ts:.2f}x faster (info)",
                    True,
                )
            )

    load_before = load_average()
    print(
        f"# {machine().describe()}; arrayselect {asel.__version__}, NumPy {np.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}, "
        f"select threads={asel.get_num_threads()}, "
        f"parallel threshold={numpy_kernel.get_parallel_threshold()} elements, "
        f"loops {numpy_kernel.isa_info()['current']} (usable: "
        f"{', '.join(numpy_kernel.isa_info()['usable'])}), load guard "
        f"{'on' if numpy_kernel.kernel_stats()['load_guard'] else 'off'}, "
        f"repeats={repeats}",
        flush=True,
    )

    if args.only == "floor":
        floor_rows(rows, repeats, mask, rand)
    elif args.only == "step2":
        strided_rows(rows, repeats, mask, f32)
    else:
        all_rows(rows, repeats, rng, (mask, f32, rand), ratio_case)
    print_rows(rows, load_before)


def all_rows(
    rows: list[tuple[str, float, float, str, bool]],
    repeats: int,
    rng: np.random.Generator,
    makers: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]],
    ratio_case: Callable[..., None],
) -> None:
    """Every row: the targets, the floor, the strided layouts, the information rows."""
    mask, f32, rand = makers
    c7, a7, b7 = mask(N7), f32(N7), f32(N7)
    ratio_case("10^7 float32 contiguous", c7, a7, b7, 6, cold=True)
    c6, a6, b6 = c7[: 10**6].copy(), a7[: 10**6].copy(), b7[: 10**6].copy()
    ratio_case("10^6 float32 contiguous", c6, a6, b6, 8, cold=True)
    ratio_case("cond (N,1), then/else (N,M)", mask(ROWS, 1), f32(ROWS, COLS), f32(ROWS, COLS), 3)
    ratio_case("then (N,1), else (1,M)", mask(ROWS, COLS), f32(ROWS, 1), f32(1, COLS), 3)
    ratio_case("all inputs transposed", mask(COLS, ROWS).T, f32(COLS, ROWS).T, f32(COLS, ROWS).T, 3)
    c2, a2, b2 = mask(2 * N7), f32(2 * N7), f32(2 * N7)
    ratio_case("all inputs step-2 slices", c2[::2], a2[::2], b2[::2], 3)
    del c2, a2, b2

    # Bandwidth: select into an existing array vs copying into an existing array.
    out = np.empty_like(a7)
    bw_one, bw_many = copy_bandwidth(repeats)
    copy_bw = max(bw_one, bw_many)
    _, t_out = compare(
        lambda: np.copyto(out, a7), lambda: asel.select(c7, a7, b7, out=out), repeats
    )
    s = a7.itemsize
    select_bw = N7 * (1 + 2 * s + s) / t_out
    rows.append(
        (
            "bandwidth 10^7 float32, out=",
            0.0,
            t_out,
            f"{select_bw / 1e9:.1f} GB/s = {select_bw / copy_bw:.0%} of copy "
            f"{copy_bw / 1e9:.1f} GB/s (target >= 70%)",
            select_bw >= 0.7 * copy_bw,
        )
    )

    # Call overhead of the whole select() (validation included).
    for n in (1, 100):
        c, a, b = mask(n), rng.random(n), rng.random(n)
        number = 2000
        tw, ts = compare(
            lambda c=c, a=a, b=b: np.where(c, a, b),
            lambda c=c, a=a, b=b: asel.select(c, a, b),
            repeats,
            number,
            time.thread_time,
        )
        rows.append(
            (
                f"call overhead (CPU time), {n} element{'s' * (n > 1)}",
                tw,
                ts,
                f"np.where / select = {tw / ts:.2f} (target >= 0.67)",
                ts <= 1.5 * tw,
            )
        )
        tw, ts = compare(
            lambda c=c, a=a: np.where(c, a, 0.5),
            lambda c=c, a=a: asel.select(c, a, 0.5),
            repeats,
            number,
            time.thread_time,
        )
        rows.append(
            (
                f"  same, Python scalar else, {n}",
                tw,
                ts,
                f"np.where / select = {tw / ts:.2f} (no target)",
                True,
            )
        )

    floor_rows(rows, repeats, mask, rand)
    strided_rows(rows, repeats, mask, f32)
    isa_rows(rows, repeats, (c6, a6, b6), (c7, a7, b7))

    # For transparency: the 10^7 case with the output pool off, and on one thread.
    pool_limit = asel.get_pool_limit()
    asel.set_pool_limit(0)
    tw, ts = compare(lambda: np.where(c7, a7, b7), lambda: asel.select(c7, a7, b7), repeats)
    rows.append(("  10^7 contiguous, pool off", tw, ts, f"{tw / ts:.2f}x faster (info)", True))
    asel.set_pool_limit(pool_limit)
    threads = asel.get_num_threads()
    asel.set_num_threads(1)
    tw, ts = compare(lambda: np.where(c7, a7, b7), lambda: asel.select(c7, a7, b7), repeats)
    rows.append(("  10^7 contiguous, 1 thread", tw, ts, f"{tw / ts:.2f}x faster (info)", True))
    tw, ts = compare(lambda: np.where(c6, a6, b6), lambda: asel.select(c6, a6, b6), repeats)
    rows.append(("  10^6 contiguous, 1 thread", tw, ts, f"{tw / ts:.2f}x faster (info)", True))
    asel.set_num_threads(threads)
    rows.append(
        (
            "  copy bandwidth 1 thread / all",
            0.0,
            0.0,
            f"{bw_one / 1e9:.1f} / {bw_many / 1e9:.1f} GB/s (info)",
            True,
        )
    )


def print_rows(rows: list[tuple[str, float, float, str, bool]], load_before: float | None) -> None:
    """The table, and the kernel's counters."""
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'np.where':>11}  {'select':>11}  result")
    print(f"{'':<{width}}  {'(baseline)':>11}  {'':>11}  (for the instruction-set rows)")
    for name, tw, ts, text, ok in rows:

        def fmt(t: float) -> str:
            if t == 0.0:
                return "-"
            return f"{t * 1e3:.3f} ms" if t >= 1e-4 else f"{t * 1e9:.0f} ns"

        mark = "" if "(info)" in text or "(no target)" in text else ("  OK" if ok else "  MISSED")
        print(f"{name:<{width}}  {fmt(tw):>11}  {fmt(ts):>11}  {text}{mark}")
    stats = numpy_kernel.kernel_stats()
    print(
        f"# {format_load(load_before, load_average())}; kernel: {stats['threaded_calls']} of "
        f"{stats['calls']} calls threaded, {stats['guarded_calls']} given fewer threads by the "
        f"load guard (others busy: {stats['others_busy_cores']:.2f} cores)"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
