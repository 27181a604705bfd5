"""How steady are the kernel's timings while another process keeps a core busy?

    python asv_benchmarks/steady_timings.py [--repeats 21] [--no-busy]
        [--module NAME=PATH ...]

Starts a competing busy process (``python -c "while True: pass"``, pinned to
the last core where affinity masks exist) and times the kernel's ``select`` at
10^6 and 10^7 float32 elements (random bool cond, contiguous, fresh output):
``--repeats`` repeats per contender, each a batch of consecutive calls (40 at
10^6, 4 at 10^7), with the contenders interleaved in a shuffled order every
round. Prints, per contender, the median and interquartile range of the
per-repeat time per call, per-call percentiles, and how many calls ran on
several threads and how often consecutive calls of one batch switched between
one and several threads (the flip-flopping of a run-time back-off).

Contenders: the installed kernel on every core and on one thread, plus any
``--module NAME=PATH``: another build of the kernel (a shared object whose
module name is the file name's first part), for before/after comparisons. To
build the kernel of an older commit under another name::

    git show OLD:backends/shared/_kernel/select_kernel.c > before.c
    sed -i 's/"_select_kernel"/"_sk_before"/; s/PyInit__select_kernel/PyInit__sk_before/' before.c
    PY_INC=$(python -c "import sysconfig; print(sysconfig.get_paths()['include'])")
    NP_INC=$(python -c "import numpy; print(numpy.get_include())")
    SUFFIX=$(python -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
    gcc -O3 -fwrapv -fno-strict-aliasing -std=gnu11 -pthread -fPIC -shared \\
        -I$PY_INC -I$NP_INC before.c -o _sk_before$SUFFIX
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import itertools
import os
import subprocess
import sys
import time
from types import ModuleType

import numpy as np
from arrayselect.backends.shared import _select_kernel

import arrayselect as asel
from arrayselect._tools.bench_stats import (
    Spread,
    format_load,
    load_average,
    machine,
    time_interleaved,
)


def _load(spec: str) -> tuple[str, ModuleType]:
    name, _, path = spec.partition("=")
    modname = os.path.basename(path).split(".")[0]
    found = importlib.util.spec_from_file_location(modname, path)
    if found is None or found.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return name, module


def _one_size(
    rng: np.random.Generator,
    n: int,
    number: int,
    contenders: list[tuple[str, ModuleType, int]],
    repeats: int,
) -> None:
    """Time and print every contender at ``n`` elements, ``number`` calls a batch."""
    c = rng.random(n) < 0.5
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    expected = np.where(c, a, b)
    # per contender, per call: its time, and 1 if it ran on several threads
    per_call: dict[str, list[float]] = {name: [] for name, _, _ in contenders}
    modes: dict[str, list[int]] = {name: [] for name, _, _ in contenders}

    def call(name: str, module: ModuleType) -> None:
        before = module.stats()["threaded_calls"]
        start = time.perf_counter()
        module.select(c, a, b, None, (n,), None, None, None)
        per_call[name].append(time.perf_counter() - start)
        modes[name].append(module.stats()["threaded_calls"] - before)

    def ready(module: ModuleType, nthreads: int) -> None:
        module.set_num_threads(nthreads)
        got = module.select(c, a, b, None, (n,), None, None, None)
        assert np.array_equal(got, expected)
        time.sleep(0.005)

    # The batches' own times include reading the counters: each call's time is read
    # around the call alone, and a repeat's figure is the mean of its calls.
    time_interleaved(
        [functools.partial(call, name, module) for name, module, _ in contenders],
        repeats,
        number=number,
        setup=[functools.partial(ready, module, k) for _, module, k in contenders],
    )
    print(f"\n{n:.0e} float32, {number} calls per repeat")
    print(
        f"  {'contender':<30} {'median':>8} {'IQR':>20} {'IQR/med':>8} | per call:"
        f" {'p25':>7} {'p50':>7} {'p75':>7} {'p90':>7} (ms) | threaded  switches"
    )
    for name, _, _ in contenders:
        times = per_call[name]
        spread = Spread.of(
            [sum(times[i : i + number]) / number for i in range(0, len(times), number)]
        )
        p = [float(x) for x in np.percentile(times, (25, 50, 75, 90))]
        md = modes[name]
        batches = [md[i : i + number] for i in range(0, len(md), number)]
        switches = sum(sum(1 for x, y in itertools.pairwise(batch) if x != y) for batch in batches)
        print(
            f"  {name:<30} {spread.median * 1e3:8.3f} [{spread.q1 * 1e3:8.3f}, "
            f"{spread.q3 * 1e3:8.3f}] {spread.relative_iqr:8.2f} |          "
            + " ".join(f"{x * 1e3:7.3f}" for x in p)
            + f"      | {sum(md):4d}/{len(md):<4d} {switches:4d}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--no-busy", action="store_true", help="no competing process")
    parser.add_argument("--module", action="append", default=[], metavar="NAME=PATH")
    args = parser.parse_args()
    threads = asel.get_num_threads()
    kernels: list[tuple[str, ModuleType]] = [_load(m) for m in args.module]
    kernels.append(("this kernel", _select_kernel))
    contenders: list[tuple[str, ModuleType, int]] = []
    for name, module in kernels:
        contenders.append((f"{name}, {threads} threads", module, threads))
    for name, module in kernels:
        contenders.append((f"  {name}, 1 thread", module, 1))

    competitor = None
    if not args.no_busy:
        competitor = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        if hasattr(os, "sched_setaffinity"):
            cores = sorted(os.sched_getaffinity(0))
            os.sched_setaffinity(competitor.pid, {cores[-1]})
    try:
        time.sleep(0.5)
        load_before = load_average()
        print(
            f"# {machine().describe()}; repeats={args.repeats}, competitor: "
            f"{'python -c while True: pass on the last core' if competitor else 'none'}, "
            f"threads={threads}",
            flush=True,
        )
        rng = np.random.default_rng(0)
        for n, number in ((10**6, 40), (10**7, 4)):
            _one_size(rng, n, number, contenders, args.repeats)
        for name, module in kernels:
            print(f"# {name}: stats {module.stats()}")
        print(f"# {format_load(load_before, load_average())}")
    finally:
        if competitor is not None:
            competitor.kill()
            competitor.wait()
        for _, module in kernels:
            module.set_num_threads(threads)


if __name__ == "__main__":
    main()
