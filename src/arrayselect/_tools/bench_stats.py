"""What makes a measured figure trustworthy: its spread, the machine, the load, and
the interleaved timing the measuring scripts share.

Pure functions and small records that can be tested without timing anything (the
spread of a set of timing rounds, the rule that marks a row's ratio unreliable, the
description of the machine: CPU model, cores, load average, printed with every
table), and :func:`time_interleaved`, the one loop that times contenders against
each other in one run (:func:`compare_interleaved`: its medians).
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "LOAD_NOTE",
    "NOISE_LIMIT",
    "Machine",
    "Spread",
    "busy",
    "compare_interleaved",
    "flag_reasons",
    "format_load",
    "load_average",
    "machine",
    "rule_text",
    "time_interleaved",
    "usable_cores",
]

#: A row is "noisy" when the interquartile range of a figure it is read from
#: exceeds this fraction of that figure's median.
NOISE_LIMIT = 0.25

LOAD_NOTE = "the 1-minute load average exceeded the usable cores while the row ran"


@dataclass(frozen=True)
class Spread:
    """Median and quartiles of the rounds one figure was measured in.

    Attributes
    ----------
    median, q1, q3
        The median and the first and third quartiles (inclusive method: with
        five rounds, the 2nd and 4th smallest).
    rounds
        How many rounds the figure is made of.
    """

    median: float
    q1: float
    q3: float
    rounds: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Spread:
        """The spread of ``samples`` (at least one).

        Raises
        ------
        ValueError
            If ``samples`` is empty.
        """
        if not samples:
            raise ValueError("a spread needs at least one sample")
        if len(samples) == 1:
            return cls(samples[0], samples[0], samples[0], 1)
        q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
        return cls(statistics.median(samples), q1, q3, len(samples))

    @property
    def relative_iqr(self) -> float:
        """The interquartile range over the median (0 for a zero median)."""
        return (self.q3 - self.q1) / self.median if self.median else 0.0

    def percent(self) -> str:
        """The relative interquartile range as printed in the table, e.g. ``"12%"``."""
        return f"{self.relative_iqr:.0%}"


def flag_reasons(spreads: Sequence[Spread | None], load: float | None, cores: int) -> list[str]:
    """Why a row's ratio cannot be trusted; empty when it can.

    Parameters
    ----------
    spreads : sequence of Spread or None
        The figures the ratio is read from (ours, the peer's, the ratio's own);
        ``None`` for one not measured.
    load : float or None
        The highest 1-minute load average seen while the row ran; ``None``
        where the platform has none.
    cores : int
        The cores this process may run on.

    Returns
    -------
    list of str
        ``"noisy"`` when any spread's interquartile range exceeds
        :data:`NOISE_LIMIT` of its median; ``"loaded"`` when ``load`` exceeds
        ``cores`` (threads were waiting for a core, so the timings include
        time spent not running).
    """
    reasons = []
    if any(s is not None and s.relative_iqr > NOISE_LIMIT for s in spreads):
        reasons.append("noisy")
    if load is not None and load > cores:
        reasons.append("loaded")
    return reasons


def rule_text(cores: int) -> str:
    """The marking rule, printed under the table."""
    return (
        f"unreliable: noisy = the interquartile range of our time, the peer's time or "
        f"peer/ours over the timing rounds exceeds {NOISE_LIMIT:.0%} of its median; "
        f"loaded = {LOAD_NOTE} ({cores}). Do not read a marked row's ratio as a measurement."
    )


def load_average() -> float | None:
    """The 1-minute load average, or ``None`` where the platform has none (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where there is one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Machine:
    """The machine a report was measured on."""

    cpu: str
    cores: int
    usable: int
    date: str

    def describe(self) -> str:
        """One line, e.g. ``"AMD EPYC, 2 cores (2 usable), 2026-11-27 15:50 UTC"``."""
        return f"{self.cpu}, {self.cores} cores ({self.usable} usable), {self.date}"


def machine() -> Machine:
    """This machine, now."""
    now = datetime.datetime.now(datetime.UTC)
    return Machine(_cpu_model(), os.cpu_count() or 1, usable_cores(), f"{now:%Y-%m-%d %H:%M} UTC")


def format_load(before: float | None, after: float | None) -> str:
    """The run's load averages, e.g. ``"load average 0.42 before, 1.90 after (1-minute)"``."""
    if before is None or after is None:
        return "load average: not available on this platform"
    return f"load average {before:.2f} before, {after:.2f} after (1-minute)"


def busy(seconds: float) -> None:
    """Keep this thread busy for ``seconds`` (a program doing other work between
    calls: unlike a sleep, the core stays awake and the caches are disturbed)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def time_interleaved(
    fns: Sequence[Callable[[], object]],
    repeats: int,
    sample_seconds: float = 0.02,
    *,
    number: int | Sequence[int | None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    setup: Sequence[Callable[[], object] | None] | None = None,
) -> list[list[float]]:
    """Seconds per call of each function in each repeat, their batches run in a new
    random order each repeat: the one timing loop of the measuring scripts.

    Each batch is ``number`` consecutive calls (with no call before them: a single
    call may be timed cold), or by default as many as last about ``sample_seconds``
    (each function is called twice first, to warm it and to size its batch);
    ``number`` may also give each function its own count (``None``: sized).
    ``setup[k]``, where given, runs untimed before each of ``fns[k]``'s batches (set
    a thread count, sleep, warm up). ``clock`` reads the time: ``time.thread_time``
    counts only the calling thread's CPU time, which a busy machine's preemptions do
    not inflate (only for calls that run on that thread). A fixed order would make
    each function always follow the same one; one that leaves the allocator in a
    state that taxes the next call's fresh output (NumPy's temporaries, JAX's
    buffers) would then tax the same contender every repeat.

    Returns
    -------
    list of list of float
        Per function, its ``repeats`` samples (:meth:`Spread.of` summarises them).
    """
    prepare = list(setup) if setup is not None else [None] * len(fns)
    counts = list(number) if isinstance(number, Sequence) else [number] * len(fns)
    numbers = []
    for fn, before, count in zip(fns, prepare, counts, strict=True):
        if count is not None:  # as given: no call before the timed ones
            numbers.append(count)
            continue
        if before is not None:
            before()
        fn()
        start = clock()
        fn()
        numbers.append(max(1, math.ceil(sample_seconds / max(clock() - start, 1e-9))))
    times: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    shuffle = random.Random(20261125).shuffle
    for _ in range(repeats):
        shuffle(order)
        for k in order:
            before = prepare[k]
            if before is not None:
                before()
            fn, calls = fns[k], numbers[k]
            start = clock()
            for _ in range(calls):
                fn()
            times[k].append((clock() - start) / calls)
    return times


def compare_interleaved(
    fns: Sequence[Callable[[], object]],
    repeats: int,
    sample_seconds: float = 0.02,
    *,
    number: int | Sequence[int | None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    setup: Sequence[Callable[[], object] | None] | None = None,
) -> list[float]:
    """Median seconds per call of each function: :func:`time_interleaved`'s medians."""
    samples = time_interleaved(
        fns, repeats, sample_seconds, number=number, clock=clock, setup=setup
    )
    return [statistics.median(t) for t in samples]
