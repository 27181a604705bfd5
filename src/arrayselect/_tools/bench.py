"""``python -m arrayselect bench``: a compact comparison on every backend present.

For each array library (and device) installed, a few Select calls are timed
against the library's own ``where`` (the *peer*) on the same device arrays;
each result is checked bit for bit against ``np.where`` on NumPy copies of the
inputs (``select_n`` and ``select_cases`` rows: against a chain of the library's
``where``, checked against ``np.choose``/``np.select``); achieved throughput is
compared with the device's copy bandwidth (the *memory floor*: no elementwise
operation can move its bytes faster than a copy does). The asv suite in
``asv_benchmarks/`` is the full version.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from arrayselect import adapters
from arrayselect._base.errors import SelectTypeError
from arrayselect._dispatch.registry import force_portable
from arrayselect._operations.family import select_cases, select_n
from arrayselect._operations.select import backend_for, select
from arrayselect._operations.where import where
from arrayselect._tools import bench_chart as _bench_chart
from arrayselect._tools import bench_stats as _bench_stats
from arrayselect._tools.bench_stats import Spread, time_interleaved

__all__ = [
    "CASES",
    "QUICK_CASES",
    "BenchCase",
    "BenchReport",
    "BenchRow",
    "Target",
    "available_targets",
    "format_table",
    "run_bench",
]


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class BenchCase:
    """One Select (or ``where``) call to time.

    Attributes
    ----------
    pattern
        ``"same"`` (three 1-D operands of ``size``), ``"cond-row"`` (2-D
        output, ``cond`` one row broadcast down the rows) or ``"outer"``
        (``then`` a column, ``else`` a row).
    size
        Number of output elements (2-D patterns use the nearest square).
    dtype
        ``then``/``else`` dtype: a NumPy name, or ``"bfloat16"``.
    function
        ``"select"``, ``"where"`` (:func:`arrayselect.where`, which promotes), or
        ``"select_n"``/``"select_cases"`` with :data:`FAMILY_WAYS` cases (the peer is
        then a chain of the library's ``where``, last case first).
    else_dtype
        For ``where``: the dtype of ``else`` when it differs from ``dtype`` (the
        result is promoted), or ``"scalar"`` for a Python float.
    """

    pattern: str
    size: int
    dtype: str = "float32"
    function: str = "select"
    else_dtype: str | None = None

    @property
    def label(self) -> str:
        """Short name for tables, e.g. ``"same 1e5 float32"``, ``"where 1e6 int8+float32"``."""
        exponent = math.log10(self.size)
        size = f"1e{round(exponent)}" if exponent == round(exponent) else str(self.size)
        if self.function == "where":
            other = f"+{self.else_dtype}" if self.else_dtype else ""
            return f"where {size} {self.dtype}{other}"
        if self.function in _FAMILY:
            return f"{self.function} {size} {self.dtype} x{FAMILY_WAYS}"
        return f"{self.pattern} {size} {self.dtype}"


#: What ``bench`` runs: scaling with size, two broadcast patterns, two narrow dtypes.
CASES: tuple[BenchCase, ...] = (
    BenchCase("same", 10**3),
    BenchCase("same", 10**5),
    BenchCase("same", 10**7),
    BenchCase("cond-row", 10**6),
    BenchCase("outer", 10**6),
    BenchCase("same", 10**6, "bfloat16"),
    BenchCase("same", 10**6, "int8"),
    BenchCase("same", 10**3, "float32", "where", "scalar"),
    BenchCase("same", 10**6, "int8", "where", "float32"),
    BenchCase("same", 10**6, "float32", "select_n"),
    BenchCase("same", 10**6, "float32", "select_cases"),
)
#: ``bench --quick``: the same, with 10**6 for the largest same-shape case.
QUICK_CASES: tuple[BenchCase, ...] = (
    BenchCase("same", 10**3),
    BenchCase("same", 10**5),
    BenchCase("same", 10**6),
    BenchCase("cond-row", 10**6),
    BenchCase("outer", 10**6),
    BenchCase("same", 10**6, "bfloat16"),
    BenchCase("same", 10**6, "int8"),
    BenchCase("same", 10**3, "float32", "where", "scalar"),
    BenchCase("same", 10**6, "int8", "where", "float32"),
    BenchCase("same", 10**6, "float32", "select_n"),
    BenchCase("same", 10**6, "float32", "select_cases"),
)
#: How many cases (conditions) the select family rows choose among.
FAMILY_WAYS = 4
_FAMILY = ("select_n", "select_cases")

_SEED = 20240611


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Any:
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if adapters.numpy_dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype)
    if dtype.startswith("complex"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape, dtype=np.float32).astype(adapters.numpy_dtype(dtype))


def make_inputs(case: BenchCase) -> tuple[Any, ...]:
    """Seeded NumPy ``(cond, then, else_)`` for ``case``; for the select family
    ``(which, *cases)`` (int8 indices) or ``(*conds, *choices, default)``.

    Raises
    ------
    arrayselect.adapters.DtypeUnavailableError
        When NumPy cannot make the dtype here (bfloat16 without ``ml_dtypes``).
    """
    rng = np.random.default_rng(_SEED)
    if case.function == "select_n":
        which = rng.integers(0, FAMILY_WAYS, case.size).astype(np.int8)
        return (which, *(_values(rng, (case.size,), case.dtype) for _ in range(FAMILY_WAYS)))
    if case.function == "select_cases":
        conds = [rng.random(case.size) < 0.2 for _ in range(FAMILY_WAYS)]
        values = [_values(rng, (case.size,), case.dtype) for _ in range(FAMILY_WAYS + 1)]
        return (*conds, *values)
    if case.pattern == "same":
        shape: tuple[int, ...] = (case.size,)
        else_dtype = case.else_dtype or case.dtype
        return (
            rng.random(shape) < 0.5,
            _values(rng, shape, case.dtype),
            0.5 if else_dtype == "scalar" else _values(rng, shape, else_dtype),
        )
    side = max(1, math.isqrt(case.size))
    if case.pattern == "cond-row":
        return (
            rng.random((side,)) < 0.5,
            _values(rng, (side, side), case.dtype),
            _values(rng, (side, side), case.dtype),
        )
    if case.pattern == "outer":
        return (
            rng.random((side, side)) < 0.5,
            _values(rng, (side, 1), case.dtype),
            _values(rng, (1, side), case.dtype),
        )
    raise ValueError(f"unknown pattern {case.pattern!r}; expected same, cond-row or outer")


# --------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    """One array library on one device, as ``bench`` times it.

    Attributes
    ----------
    adapter
        The library and device (:mod:`arrayselect.adapters`): how inputs get
        there, how the device is waited for, the peer, the compiler, the copy.
    portable
        Run ``select`` under :func:`~arrayselect.force_portable`.
    """

    adapter: adapters.Library
    portable: bool = False
    torch_compile: bool = False

    @property
    def label(self) -> str:
        """Library and device as shown in the table, e.g. ``"jax cpu (jit)"``."""
        label = self.adapter.label + (" (portable)" if self.portable else "")
        compiler = "torch.compile" if self.torch_compile else self.adapter.compiler
        return f"{label} ({compiler})" if compiler else label

    def compile(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` compiled as this target runs it (both ours and the peer)."""
        if self.torch_compile:
            import torch

            return torch.compile(fn, fullgraph=True)
        return self.adapter.compile(fn)

    def reset_compiler(self) -> None:
        """Forget what earlier cases compiled, so that each case compiles as a fresh program.

        Dynamo keys its cache on the code object, and every case compiles the same
        closure: from the ninth case on, ``fullgraph=True`` would fail with
        torch's recompile limit (8), which no program compiling one function meets.
        """
        if self.torch_compile:
            import torch

            torch.compiler.reset()

    @property
    def device(self) -> str:
        """``"cpu"``, or the GPU's name (the key of its memory floor)."""
        return self.adapter.device_name

    @property
    def peer_name(self) -> str:
        """What the peer column times, e.g. ``"jit(jnp.where)"``."""
        compiler = "torch.compile" if self.torch_compile else self.adapter.compiler
        peer = self.adapter.peer_name
        return f"{compiler}({peer})" if compiler else peer


#: The adapters ``bench`` runs on, in table order, and the libraries it reports missing.
_ADAPTERS = ("numpy", "torch-cpu", "torch-cuda", "jax-cpu", "jax-gpu", "dask", "cupy")
_LIBRARIES = ("numpy", "torch", "jax", "dask", "cupy")


def _targets_of(adapter: adapters.Library) -> list[Target]:
    """The rows a library gets: NumPy and PyTorch on the CPU also through the portable
    backend (what they ran on before their native backends), PyTorch also compiled."""
    if adapter.key == "numpy":
        return [Target(adapter), Target(adapter, portable=True)]
    if adapter.key == "torch-cpu":
        return [
            Target(adapter),
            Target(adapter, portable=True),
            Target(adapter, torch_compile=True),
        ]
    return [Target(adapter)]


def available_targets() -> tuple[list[Target], list[str]]:
    """Every library and device present; also the libraries that are missing."""
    found = adapters.discover(_ADAPTERS, dask_chunking="rows")
    targets: list[Target] = []
    for adapter in found.present:
        targets += _targets_of(adapter)
    present = {adapter.library for adapter in found.present}
    return targets, [library for library in _LIBRARIES if library not in present]


# --------------------------------------------------------------------------- measuring


@dataclass
class BenchRow:
    """One line of the table: one case on one target.

    Times are median seconds per call over the timing rounds; ``None`` where
    not measured; the ``*_spread`` attributes hold the quartiles of each figure
    over the same rounds (the peer/ours and floor ones paired round by round).
    ``flags`` says why the ratio is unreliable (:func:`_bench_stats.flag_reasons`);
    ``load`` is the highest 1-minute load average seen while the row ran. ``status``
    is ``"ok"``, ``"MISMATCH"``, ``"unsupported"`` (``select`` refused the dtype
    for this library, or the library has no such dtype), ``"not installed"``
    (NumPy cannot make the dtype here: bfloat16 without ``ml_dtypes``) or
    ``"ERROR"``; ``detail`` says why when not ``"ok"``.
    """

    target: str
    device: str
    backend: str
    case: str
    peer_name: str
    seconds: float | None = None
    peer_seconds: float | None = None
    nbytes: int = 0
    copy_bandwidth: float | None = None
    status: str = "ok"
    detail: str = ""
    ours_spread: Spread | None = None
    peer_spread: Spread | None = None
    ratio_spread: Spread | None = None
    floor_spread: Spread | None = None
    load: float | None = None
    flags: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        """Peer time over ours: above 1, ``select`` is faster than the peer."""
        if self.seconds is None or self.peer_seconds is None:
            return None
        return self.peer_seconds / self.seconds

    @property
    def gbps(self) -> float | None:
        """Achieved GB/s: the bytes Select must move over our time."""
        return None if self.seconds is None else self.nbytes / self.seconds / 1e9

    @property
    def floor_fraction(self) -> float | None:
        """Fraction of the memory floor: achieved bandwidth over copy bandwidth."""
        if self.seconds is None or not self.copy_bandwidth:
            return None
        return self.nbytes / self.seconds / self.copy_bandwidth


#: Row statuses that do not fail the run: measured, or not measurable here by design.
_FINE = ("ok", "unsupported", "not installed")


@dataclass
class BenchReport:
    """Everything ``bench`` measured, and on what.

    ``copy_bandwidth`` holds each device's copy bandwidth (bytes per second)
    over every round of every row on it, ``load_before``/``load_after`` the
    1-minute load average when the run started and ended.
    """

    rows: list[BenchRow] = field(default_factory=list)
    copy_bandwidth: dict[str, Spread] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    machine: _bench_stats.Machine = field(default_factory=_bench_stats.machine)
    load_before: float | None = None
    load_after: float | None = None

    @property
    def ok(self) -> bool:
        """No result differed from NumPy and nothing failed."""
        return all(row.status in _FINE for row in self.rows)


@dataclass
class _CopyProbe:
    """A device's memory floor, timed between the rounds of the rows it normalises.

    Timing the copy once at the start would compare every row with the machine
    as it was then; timed round by round, the floor sees the load the row saw.
    """

    nbytes: int
    call: Callable[[], object]
    seconds: list[float] = field(default_factory=list)

    def record(self, seconds: Sequence[float]) -> list[float]:
        """Keep the times of copies; their bandwidths in bytes per second (read and write)."""
        self.seconds.extend(seconds)
        return [2 * self.nbytes / s for s in seconds]

    def bandwidth(self) -> Spread:
        """The bandwidth over every copy timed so far."""
        return Spread.of([2 * self.nbytes / s for s in self.seconds])


def _bits(x: Any) -> Any:
    return np.ascontiguousarray(x).reshape(-1).view(np.uint8)


def _same_bits(result: Any, expected: Any) -> str:
    """``""`` when ``result`` equals ``expected`` bit for bit, else what differs."""
    if result.shape != expected.shape:
        return f"shape {result.shape}, expected {expected.shape}"
    if str(result.dtype) != str(expected.dtype):
        return f"dtype {result.dtype}, expected {expected.dtype}"
    bad = int(np.count_nonzero(_bits(result) != _bits(expected)))
    return f"{bad} bytes differ" if bad else ""


def _expected(case: BenchCase, inputs: tuple[Any, ...]) -> Any:
    """The result ``case`` must give, computed by NumPy on the NumPy inputs."""
    k = FAMILY_WAYS
    if case.function == "select_n":
        return np.choose(inputs[0], inputs[1:])
    if case.function == "select_cases":
        return np.select(list(inputs[:k]), list(inputs[k : 2 * k]), inputs[-1])
    return np.where(*inputs)


def _calls(case: BenchCase, where_: Callable[..., Any]) -> tuple[Callable[..., Any], Any]:
    """What ``case`` times with arrayselect, and its peer made of the library's
    ``where_`` (``None``: the library's ``where`` itself).
    """
    k = FAMILY_WAYS
    if case.function == "select_n":

        def chain_n(which: Any, *cases: Any) -> Any:
            result = cases[-1]
            for i in reversed(range(k - 1)):
                result = where_(which == i, cases[i], result)
            return result

        return select_n, chain_n
    if case.function == "select_cases":

        def ours_cases(*a: Any) -> Any:
            return select_cases(list(a[:k]), list(a[k : 2 * k]), a[-1])

        def chain_cases(*a: Any) -> Any:
            result = a[-1]
            for i in reversed(range(k)):
                result = where_(a[i], a[k + i], result)
            return result

        return ours_cases, chain_cases
    return (where if case.function == "where" else select), None


def _measure(
    target: Target,
    case: BenchCase,
    inputs: tuple[Any, ...],
    timing: tuple[float, int],
    probe: _CopyProbe | None,
) -> BenchRow:
    min_time, repeat = timing
    expected = _expected(case, inputs)
    family = case.function in _FAMILY
    peer_name = f"{target.peer_name} chain" if family else target.peer_name
    row = BenchRow(target.label, target.device, "?", case.label, peer_name)
    row.nbytes = int(sum(getattr(x, "nbytes", 0) for x in inputs) + expected.nbytes)
    lib = target.adapter
    try:
        args = [x if isinstance(x, float) else lib.from_numpy(x) for x in inputs]
    except adapters.DtypeUnavailableError as exc:  # the library has no such dtype
        row.status, row.detail = "unsupported", str(exc)
        return row
    function, chain = _calls(case, lib.peer)

    def ours_fn(*a: Any) -> Any:
        if target.portable:
            with force_portable():
                return function(*a)
        return function(*a)

    with force_portable(target.portable):
        row.backend = backend_for(*args[:3]).name
    target.reset_compiler()
    ours_compiled = target.compile(ours_fn)
    peer_compiled = target.compile(lib.peer if chain is None else chain)

    def ours() -> Any:
        return lib.sync(ours_compiled(*args))

    def peer() -> Any:
        return lib.sync(peer_compiled(*args))

    try:
        result = ours()  # compiles (JAX) and warms up: not timed
    except SelectTypeError as exc:
        row.status, row.detail = "unsupported", str(exc)
        return row
    problem = _same_bits(lib.to_numpy(result), expected)
    if problem:
        row.status, row.detail = "MISMATCH", problem
    peer()
    # interleaved, so all three see the same machine noise; the copy once a round
    fns = [ours, peer] if probe is None else [ours, peer, probe.call]
    times = time_interleaved(fns, repeat, min_time, number=[None, None, 1][: len(fns)])
    copies = [] if probe is None else probe.record(times[2])
    _summarise(row, times[0], times[1], copies)
    return row


def _summarise(
    row: BenchRow, ours: Sequence[float], peer: Sequence[float], copies: Sequence[float]
) -> None:
    """Fill ``row``'s figures and their spreads from its timing rounds.

    ``copies`` are the copy bandwidths timed after each round (empty without a
    probe); the ratio's and the floor fraction's spreads pair the rounds.
    """
    row.ours_spread, row.peer_spread = Spread.of(ours), Spread.of(peer)
    row.seconds, row.peer_seconds = row.ours_spread.median, row.peer_spread.median
    row.ratio_spread = Spread.of([p / o for o, p in zip(ours, peer, strict=True)])
    if copies:
        row.copy_bandwidth = statistics.median(copies)
        fractions = [row.nbytes / o / c for o, c in zip(ours, copies, strict=True)]
        row.floor_spread = Spread.of(fractions)


class _Progress:
    """Progress on stderr without a dependency.

    On a terminal: one bar redrawn in place with ``\r``. Elsewhere (CI logs):
    a plain line whenever a new case starts.
    """

    def __init__(self, total: int, stream: TextIO | None, width: int = 24) -> None:
        self.total, self.done, self.stream, self.width = max(total, 1), 0, stream, width
        self.tty = stream is not None and stream.isatty()
        self.last_case = ""

    def show(self, case: str, target: str = "") -> None:
        if self.stream is None:
            return
        if self.tty:
            filled = self.width * self.done // self.total
            bar = "#" * filled + "." * (self.width - filled)
            line = f"[{bar}] {self.done}/{self.total} {case}" + (f" on {target}" if target else "")
            self.stream.write("\r" + line[:100].ljust(100))
        elif case != self.last_case:
            self.stream.write(f"bench [{self.done}/{self.total}] {case}\n")
        self.last_case = case
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not None and self.tty:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()


def run_bench(
    cases: Sequence[BenchCase] | None = None,
    *,
    quick: bool = False,
    targets: Iterable[Target] | None = None,
    progress: TextIO | None = sys.stderr,
    timing: tuple[float, int] | None = None,
) -> BenchReport:
    """Time every case on every target and check each result against NumPy.

    Parameters
    ----------
    cases : sequence of BenchCase, optional
        Defaults to :data:`CASES` (:data:`QUICK_CASES` with ``quick``).
    quick : bool, optional
        Fewer, shorter timing rounds and a smaller largest case.
    targets : iterable of Target, optional
        Defaults to every library and device present (:func:`available_targets`).
    progress : file, optional
        Where the progress bar goes; ``None`` for none.
    timing : (float, int), optional
        Seconds each timing round lasts at least, and the number of rounds;
        by default (0.01, 5) with ``quick`` and (0.05, 9) without. After each
        round a copy is timed on the row's device (the memory floor).

    Returns
    -------
    BenchReport
        One row per case and target, the copy bandwidths, the missing
        libraries, the machine and its load.
    """
    if cases is None:
        cases = QUICK_CASES if quick else CASES
    missing: list[str] = []
    if targets is None:
        found, missing = available_targets()
    else:
        found = list(targets)
    if timing is None:
        timing = (0.01, 5) if quick else (0.05, 9)
    report = BenchReport(missing=missing, load_before=_bench_stats.load_average())
    cores = report.machine.usable
    bar = _Progress(len(found) * len(cases) + 1, progress)
    bar.show("memory floor (copy bandwidth)")
    probes = _copy_probes(found, quick)
    bar.done += 1
    for case in cases:
        try:
            inputs: tuple[Any, ...] | None = make_inputs(case)
            absent = ""
        except adapters.DtypeUnavailableError as exc:  # bfloat16 without ml_dtypes
            inputs, absent = None, str(exc)
        for target in found:
            bar.show(case.label, target.label)
            try:
                if inputs is None:
                    row = BenchRow(target.label, target.device, "-", case.label, target.peer_name)
                    row.status, row.detail = "not installed", absent
                else:
                    load = _bench_stats.load_average()
                    row = _measure(target, case, inputs, timing, probes.get(target.device))
                    after = _bench_stats.load_average()
                    row.load = None if load is None or after is None else max(load, after)
                    if row.status == "ok":
                        spreads = (row.ours_spread, row.peer_spread, row.ratio_spread)
                        row.flags = _bench_stats.flag_reasons(spreads, row.load, cores)
            except Exception as exc:  # report in the table, go on with the rest
                row = BenchRow(target.label, target.device, "?", case.label, target.peer_name)
                row.status, row.detail = "ERROR", f"{type(exc).__name__}: {exc}"
            report.rows.append(row)
            bar.done += 1
    bar.close()
    report.copy_bandwidth = {d: p.bandwidth() for d, p in probes.items() if p.seconds}
    report.load_after = _bench_stats.load_average()
    return report


def _copy_probes(found: Sequence[Target], quick: bool) -> dict[str, _CopyProbe]:
    """One copy probe per device the targets run on, warmed up (not yet timed)."""
    # Larger than the last-level caches of current CPUs, so the copy goes to DRAM.
    cpu_bytes = 2**27 if quick else 2**28
    probes: dict[str, _CopyProbe] = {}
    for target in found:
        if target.device not in probes:
            gpu = target.adapter.device_kind == "gpu"
            nbytes = 2**30 if gpu else cpu_bytes
            adapter = target.adapter if gpu else adapters.get("numpy")
            probes[target.device] = _CopyProbe(nbytes, adapter.copy_call(nbytes))
            probes[target.device].call()  # first touch of the pages: not a copy's speed
    return probes


# --------------------------------------------------------------------------- output


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _iqr(spread: Spread | None) -> str:
    return "-" if spread is None else spread.percent()


#: The table's columns; "IQR" is the spread of the figure to its left.
COLUMNS = (
    "library", "backend", "case", "time", "IQR", "peer", "peer time", "IQR", "peer/ours",
    "IQR", "GB/s", "of floor", "IQR", "check", "unreliable",
)  # fmt: skip
_RIGHT = frozenset({3, 4, 6, 7, 8, 9, 10, 11, 12})


def _cells(row: BenchRow) -> tuple[str, ...]:
    return (
        row.target,
        row.backend,
        row.case,
        _time(row.seconds),
        _iqr(row.ours_spread),
        row.peer_name,
        _time(row.peer_seconds),
        _iqr(row.peer_spread),
        _num(row.ratio, ".2f"),
        _iqr(row.ratio_spread),
        _num(row.gbps, ".2f"),
        _num(row.floor_fraction, ".0%"),
        _iqr(row.floor_spread),
        row.status,
        ", ".join(row.flags),
    )


def _markdown(lines: Sequence[Sequence[str]], right: frozenset[int]) -> list[str]:
    """``lines`` (the header first) as a Markdown table, columns in ``right`` right-aligned."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]

    def fmt(line: Sequence[str]) -> str:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        ]
        return "| " + " | ".join(cells) + " |"

    rule = "|".join(
        "-" * (w + 1) + ":" if i in right else "-" * (w + 2) for i, w in enumerate(widths)
    )
    return [fmt(lines[0]), f"|{rule}|", *(fmt(line) for line in lines[1:])]


def format_header(report: BenchReport) -> str:
    """What the table was measured on: the machine, the date, the load before and after."""
    load = _bench_stats.format_load(report.load_before, report.load_after)
    return f"machine: {report.machine.describe()}; {load}"


def format_table(report: BenchReport) -> str:
    """The report as a Markdown table, with the machine above it and notes below.

    The notes define every column, give each device's copy bandwidth with its
    spread, state the rule that marks a row unreliable and count the marked rows,
    and explain every row that is not ``ok``.
    """
    out = [format_header(report), ""]
    out += _markdown([COLUMNS, *(_cells(row) for row in report.rows)], _RIGHT)
    out.append("")
    floors = ", ".join(
        f"{device} {bw.median / 1e9:.1f} GB/s (IQR {bw.percent()} over {bw.rounds} copies)"
        for device, bw in report.copy_bandwidth.items()
    )
    rounds = max((r.ours_spread.rounds for r in report.rows if r.ours_spread), default=0)
    out.append(
        f"time: median per call over {rounds} rounds; IQR: the interquartile range of the "
        "figure to its left over those rounds, as a fraction of its median (peer/ours and "
        "of floor: round by round); peer/ours > 1: select is faster; GB/s: bytes Select "
        "must move (inputs read once, output written once) per second (its IQR is the "
        "time's); of floor: that over the device's copy bandwidth, timed after every round "
        f"({floors}); above 100%: the data sat in cache, which a copy larger than the "
        "cache cannot use."
    )
    out.append(_bench_stats.rule_text(report.machine.usable))
    measured = [row for row in report.rows if row.status == "ok"]
    marked = [row for row in measured if row.flags]
    out.append(f"marked unreliable: {len(marked)} of {len(measured)} measured rows")
    not_installed = set()
    for row in report.rows:
        if row.status == "not installed":  # the same for every library: one line per case
            if row.case not in not_installed:
                out.append(f"not installed: {row.case}: {row.detail}")
            not_installed.add(row.case)
        elif row.status != "ok":
            out.append(f"{row.status}: {row.target} {row.case}: {row.detail}")
    if report.missing:
        out.append("not installed or no device: " + ", ".join(report.missing))
    return "\n".join(out)


def print_kernel_info(echo: Callable[[str], None] = print) -> None:
    """Say what this installation has: the NumPy kernel's instruction set and threads, ..."""
    from arrayselect._tools.runtime import show_runtime

    show_runtime(echo)


def main(quick: bool = False, png: str | None = None, echo: Callable[[str], None] = print) -> int:
    """Run the comparison, print the table, optionally write the chart; the exit status.

    Returns 0 when every result matched NumPy, 1 when one did not (or a call
    failed), 2 when ``png`` is asked for without matplotlib (before any timing).
    """
    if png is not None:
        try:
            _bench_chart.pyplot()
        except ImportError as exc:
            echo(f"error: {exc}")
            return 2
    started = time.perf_counter()
    report = run_bench(quick=quick)
    echo(format_table(report))
    print_kernel_info(echo)
    echo(f"bench{' --quick' if quick else ''}: {time.perf_counter() - started:.0f} s")
    if png is not None:
        _bench_chart.write_png(report, png)
        echo(f"chart written to {png}")
    echo("bench " + ("passed: every result matches NumPy" if report.ok else "FAILED"))
    return 0 if report.ok else 1
