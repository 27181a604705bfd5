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
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
from arrayselect.backends.shared import _select_kernel
from machine_state import load_average

import arrayselect as asel


def _load(spec: str) -> tuple[str, ModuleType]:
    name, _, path = spec.partition("=")
    modname = os.path.basename(path).split(".")[0]
    found = importlib.util.spec_from_file_location(modname, path)
    if found is None or found.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return name, module


def _percentiles(values: list[float], qs: tuple[float, ...]) -> list[float]:
    return [float(v) for v in np.percentile(values, qs)]


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

    busy = None
    if not args.no_busy:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        if hasattr(os, "sched_setaffinity"):
            cores = sorted(os.sched_getaffinity(0))
            os.sched_setaffinity(busy.pid, {cores[-1]})
    try:
        time.sleep(0.5)
        competitor = "python -c 'while True: pass' on the last core" if busy else "none"
        print(
            f"# repeats={args.repeats}, competitor: {competitor}, threads={threads}, "
            f"load average {load_average()}",
            flush=True,
        )
        rng = np.random.default_rng(0)
        for n, number in ((10**6, 40), (10**7, 4)):
            c = rng.random(n) < 0.5
            a = rng.random(n, dtype=np.float32)
            b = rng.random(n, dtype=np.float32)
            expected = np.where(c, a, b)
            per_repeat: dict[str, list[float]] = {name: [] for name, _, _ in contenders}
            per_call: dict[str, list[float]] = {name: [] for name, _, _ in contenders}
            # per repeat, per call: 1 if the call ran on several threads
            modes: dict[str, list[list[int]]] = {name: [] for name, _, _ in contenders}
            order = list(contenders)
            shuffler = np.random.default_rng(7)
            for _ in range(args.repeats):
                shuffler.shuffle(order)  # type: ignore[arg-type]
                for name, module, nthreads in order:
                    module.set_num_threads(nthreads)
                    run: Callable[[], Any] = functools.partial(
                        module.select, c, a, b, None, (n,), None, None, None
                    )
                    assert np.array_equal(run(), expected)
                    time.sleep(0.005)
                    times, threaded = [], []
                    for _ in range(number):
                        before = module.stats()["threaded_calls"]
                        start = time.perf_counter()
                        run()
                        times.append(time.perf_counter() - start)
                        threaded.append(module.stats()["threaded_calls"] - before)
                    modes[name].append(threaded)
                    per_repeat[name].append(sum(times) / number)
                    per_call[name] += times
            print(f"\n{n:.0e} float32, {number} calls per repeat, load average {load_average()}")
            print(
                f"  {'contender':<30} {'median':>8} {'IQR':>20} {'IQR/med':>8} | per call:"
                f" {'p25':>7} {'p50':>7} {'p75':>7} {'p90':>7} (ms) | threaded  switches"
            )
            for name, _, _ in contenders:
                v = per_repeat[name]
                med = statistics.median(v)
                q25, q75 = _percentiles(v, (25, 75))
                p = _percentiles(per_call[name], (25, 50, 75, 90))
                md = [x for batch in modes[name] for x in batch]
                switches = sum(
                    sum(1 for x, y in itertools.pairwise(batch) if x != y) for batch in modes[name]
                )
                print(
                    f"  {name:<30} {med * 1e3:8.3f} [{q25 * 1e3:8.3f}, {q75 * 1e3:8.3f}]"
                    f" {(q75 - q25) / med:8.2f} |          "
                    + " ".join(f"{x * 1e3:7.3f}" for x in p)
                    + f"      | {sum(md):4d}/{len(md):<4d} {switches:4d}"
                )
        for name, module in kernels:
            print(f"# {name}: stats {module.stats()}")
        print(f"# load average at the end {load_average()}")
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        for _, module in kernels:
            module.set_num_threads(threads)


if __name__ == "__main__":
    main()
