"""Performance figures for the docs: asv results when present, else a short build-time run.

:func:`make_report` writes the figures (``png`` and PNGs named after it) and
returns the Markdown that goes with them: a caption saying where the numbers
come from, one figure per question, and compact tables. No number on the
performance page is typed in:

* if asv result files exist under ``asv_benchmarks/.asv/results/<machine>/``
  (``asv run`` writes them), the newest file of each machine is read. Every
  benchmark class with a ``time_select``/``time_peer`` pair gives a speed-up,
  peer time / select time, per parameter combination, and ``Throughput``'s
  ``track_`` values give the fraction of the copy bandwidth reached. Figures:
  same-shape speed-up against size, one panel per dtype size and one line per
  backend (``png`` itself); speed-up per broadcast pattern and per
  broadcasting mode (bars); throughput against size; bars for any other class
  with a pair;
* otherwise a measurement of a few seconds runs in the build process: NumPy
  arrays of 10**2 .. 10**6 elements of a 1-, a 4- and an 8-byte dtype,
  ``arrayselect.select`` (the NumPy backend, and the portable backend) against
  ``np.where``, interleaved rounds, medians. It is drawn like the asv
  same-shape figure, and the page says that it was measured on the build
  machine.

The drawing is ``perf_charts.py``'s.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import itertools
import json
import math
import platform
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from perf_charts import (
    PARAM_NAMES,
    TIMES,
    Bar,
    Row,
    backend_order,
    dtype_groups,
    fmt_speedup,
    param,
    plot_same_shape,
    plot_speedup_bars,
    plot_throughput,
    size_text,
)

import arrayselect as asel
from arrayselect._tools.bench_stats import load_average, time_interleaved, usable_cores

#: The build-time measurement: sizes, dtypes (a 1-, a 4- and an 8-byte one: three
#: panels like the asv figure's, in a few seconds), rounds, and the least
#: duration of one timed batch of calls.
SIZES = (10**2, 10**3, 10**4, 10**5, 10**6)
DTYPES = ("int8", "float32", "float64")
ROUNDS = 5
BATCH_SECONDS = 0.004

#: Where the page finds the figures, relative to the page that includes the Markdown.
IMAGE_DIR = "_generated"


# --------------------------------------------------------------------------- asv results


def find_asv_results(repo: Path) -> list[Path]:
    """The newest asv result file of each machine, if any.

    Parameters
    ----------
    repo : Path
        The repository root; results are read from ``asv_benchmarks/.asv/results``.

    Returns
    -------
    list of Path
        One result file per machine folder (by the ``date`` it records), sorted
        by machine name; empty without results.
    """
    root = repo / "asv_benchmarks" / ".asv" / "results"
    if not root.is_dir():
        return []
    newest = []
    for machine in sorted(p for p in root.iterdir() if p.is_dir()):
        files = [f for f in machine.glob("*.json") if f.name != "machine.json"]
        if files:
            newest.append(max(files, key=lambda f: _load(f).get("date", 0)))
    return newest


def _load(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data


def _param_names(path: Path, benchmark: str, count: int) -> tuple[str, ...]:
    """Names of the parameters of ``benchmark`` (``select.SameShape.time_select``).

    From asv's ``benchmarks.json`` next to the machine folders when it lists the
    benchmark, else from :data:`PARAM_NAMES`, else ``param0``, ``param1``, ...
    """
    described = _load(path.parent.parent / "benchmarks.json").get(benchmark, {})
    names = described.get("param_names") if isinstance(described, dict) else None
    if not names or len(names) != count:
        # A result file of this suite, or of an older one with fewer parameters.
        names = PARAM_NAMES.get(benchmark.split(".")[-2], ())[:count]
    if len(names) != count:
        names = [f"param{i}" for i in range(count)]
    return tuple(str(n) for n in names)


def _combinations(entry: dict[str, Any]) -> list[tuple[str, ...]]:
    """Parameter combinations of one result entry, in the order asv stores the values."""
    # asv stores one value per combination of the parameters, in itertools.product
    # order; a benchmark without parameters has one combination, ().
    return [
        tuple(str(p).strip("'") for p in combo)
        for combo in itertools.product(*(entry.get("params") or []))
    ]


def _entries(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    columns = data.get("result_columns", ["result", "params"])
    return {
        name: dict(zip(columns, entry, strict=False))
        for name, entry in data.get("results", {}).items()
    }


def asv_ratios(path: Path) -> list[Row]:
    """Select and peer timings of one asv result file (format 2), paired.

    Parameters
    ----------
    path : Path
        An asv result file.

    Returns
    -------
    list of dict
        One row per parameter combination of each ``time_select`` that has a
        ``time_peer`` twin: ``class``, ``params`` (strings), ``names`` (of the
        parameters), ``select`` and ``peer`` (seconds), ``ratio`` (select / peer)
        and ``speedup`` (peer / select: above 1, select is faster). Combinations
        with a missing or failed value on either side (``null``/NaN) are left out.
    """
    entries = _entries(_load(path))
    rows = []
    for name, ours in sorted(entries.items()):
        if not name.endswith(".time_select"):
            continue
        peer = entries.get(name[: -len("time_select")] + "time_peer")
        if peer is None:
            continue
        combos = _combinations(ours)
        names = _param_names(path, name, len(ours.get("params") or []))
        values = zip(combos, ours.get("result") or [], peer.get("result") or [], strict=False)
        for combo, t_ours, t_peer in values:
            if _finite(t_ours) and _finite(t_peer):
                rows.append(_timing_row(name.split(".")[-2], names, combo, t_ours, t_peer))
    return rows


def _timing_row(
    cls: str, names: tuple[str, ...], params: tuple[str, ...], select: float, peer: float
) -> Row:
    return {
        "class": cls,
        "names": names,
        "params": params,
        "select": float(select),
        "peer": float(peer),
        "ratio": float(select) / float(peer),
        "speedup": float(peer) / float(select),
    }


def asv_tracks(path: Path, benchmark: str) -> list[Row]:
    """The values of one ``track_`` benchmark of an asv result file.

    Parameters
    ----------
    path : Path
        An asv result file.
    benchmark : str
        Its full name, e.g. ``select.Throughput.track_gbps``.

    Returns
    -------
    list of dict
        Rows ``class``, ``names``, ``params``, ``value``, one per parameter
        combination with a finite positive value; empty if the file lacks it.
    """
    entry = _entries(_load(path)).get(benchmark)
    if entry is None:
        return []
    names = _param_names(path, benchmark, len(entry.get("params") or []))
    combos = _combinations(entry)
    return [
        {"class": benchmark.split(".")[-2], "names": names, "params": combo, "value": value}
        for combo, value in zip(combos, entry.get("result") or [], strict=False)
        if _finite(value)
    ]


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


# --------------------------------------------------------------------------- formatting


def _fmt(seconds: float) -> str:
    """A duration with three significant digits and a unit people read (µs, ms, s)."""
    units = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
    unit, scale = next((u for u in units if seconds >= u[1]), units[-1])
    return f"{seconds / scale:.3g} {unit}"


def _table(header: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return lines


# --------------------------------------------------------------------------- tables


def same_shape_table(rows: Sequence[Row]) -> list[str]:
    """A Markdown table of same-shape speed-ups: backend x dtype rows, size columns.

    Parameters
    ----------
    rows : sequence of dict
        Rows as :func:`plot_same_shape` takes them.

    Returns
    -------
    list of str
        The table's lines; each cell the speed-up and ``select``'s time per call,
        empty where that combination did not run.
    """
    sizes = sorted({int(param(r, "size")) for r in rows})
    dtypes = [d for _, group in dtype_groups(rows) for d in group]
    cell = {(param(r, "backend"), param(r, "dtype"), int(param(r, "size"))): r for r in rows}
    body = []
    for backend in backend_order(param(r, "backend") for r in rows):
        for dtype in dtypes:
            found = [cell.get((backend, dtype, s)) for s in sizes]
            if any(found):
                body.append(
                    [backend, dtype or "?"]
                    + [
                        f"{fmt_speedup(r['speedup'])} ({_fmt(r['select'])})" if r else ""
                        for r in found
                    ]
                )
    return _table(["backend", "dtype", *(size_text(s) for s in sizes)], body)


def category_table(bars: Sequence[Bar], select_times: dict[tuple[str, str], float]) -> list[str]:
    """A Markdown table of the speed-ups of a bar chart: category rows, backend columns.

    Parameters
    ----------
    bars : sequence of Bar
        The speed-ups.
    select_times : dict
        ``select``'s seconds per call by ``(category, backend)``.

    Returns
    -------
    list of str
        The table's lines; each cell the speed-up and ``select``'s time per call.
    """
    backends = backend_order(b.backend for b in bars)
    value = {(b.category, b.backend): b.speedup for b in bars}
    body = []
    for category in dict.fromkeys(b.category for b in bars):
        cells = [
            f"{fmt_speedup(value[k])} ({_fmt(select_times[k])})" if k in value else ""
            for k in ((category, b) for b in backends)
        ]
        body.append([category, *cells])
    return _table(["", *backends], body)


def throughput_table(fractions: Sequence[Row], gbps: Sequence[Row]) -> list[str]:
    """A Markdown table of throughput: backend rows, size columns.

    Parameters
    ----------
    fractions, gbps : sequence of dict
        Rows of :func:`asv_tracks` for the share of the copy bandwidth and GB/s.

    Returns
    -------
    list of str
        The table's lines; each cell GB/s and the share of the copy bandwidth.
    """
    both = [*fractions, *gbps]
    sizes = sorted({int(param(r, "size")) for r in both})
    rate = {(param(r, "backend"), int(param(r, "size"))): r["value"] for r in gbps}
    share = {(param(r, "backend"), int(param(r, "size"))): r["value"] for r in fractions}
    body = []
    for backend in backend_order(param(r, "backend") for r in both):
        cells = []
        for size in sizes:
            key = (backend, size)
            text = f"{rate[key]:.3g} GB/s" if key in rate else ""
            text += f" ({share[key]:.0%})" if key in share else ""
            cells.append(text.strip())
        body.append([backend, *cells])
    return _table(["backend", *(size_text(s) for s in sizes)], body)


# --------------------------------------------------------------------------- asv report


class _Figures:
    """Paths of the figures: ``png`` for the first, ``<stem>_<n>_<kind>.png`` after it."""

    def __init__(self, png: Path) -> None:
        self.png = png
        self.count = 0

    def next(self, kind: str) -> Path:
        self.count += 1
        if self.count == 1:
            return self.png
        return self.png.with_name(f"{self.png.stem}_{self.count}_{kind}.png")


def _image(path: Path, alt: str) -> list[str]:
    return [f"![{alt}]({IMAGE_DIR}/{path.name})", ""]


def _is_same_shape(row: Row) -> bool:
    """A row the same-shape figure can draw: class ``SameShape`` with a backend and a size."""
    return (
        row["class"] == "SameShape" and param(row, "size").isdigit() and bool(param(row, "backend"))
    )


def _same_shape_section(rows: list[Row], figures: _Figures, heading: str) -> list[str]:
    mine = [r for r in rows if _is_same_shape(r)]
    if not mine:
        return []
    png = figures.next("same_shape")
    plot_same_shape(mine, png, "How much faster than each library's own where?")
    return [
        f"{heading} Same-shape operands, by size and dtype",
        "",
        "Three 1-D operands of the same size (`SameShape`), `cond` random and true about "
        "half the time, so that no branch is predictable. One panel per dtype size, one "
        f"line per backend; above the 1{TIMES} line `select` is faster than the library's "
        "own `where` on the same arrays, below it slower.",
        "",
        *_image(png, "speed-up of select over each library's where against size"),
        "Speed-up (and `select`'s time per call):",
        "",
        *same_shape_table(mine),
        "",
    ]


@dataclass(frozen=True)
class BarFigure:
    """A benchmark class drawn as speed-up bars: one group of bars per value of ``key``."""

    cls: str
    key: str
    heading: str
    title: str
    explanation: str


BAR_FIGURES = (
    BarFigure(
        "BroadcastPattern",
        "pattern",
        "Broadcast patterns",
        "How much faster than each library's own where, per broadcast pattern?",
        f"float32, 1000 {TIMES} 1000 output (`BroadcastPattern`); the operands broadcast as "
        "each row names it: all the same shape, a `cond` row or column, an outer product "
        "(`then` a column, `else` a row), pdpd at axis 0, a transposed view, a scalar "
        f"`else`. Right of the 1{TIMES} line `select` is faster.",
    ),
    BarFigure(
        "Mode",
        "mode",
        "Broadcasting modes",
        "How much faster than each library's own where, per broadcasting mode?",
        f"float32, 1000 {TIMES} 1000 output, one call per `auto_broadcast`/`cond_broadcast` "
        f"mode (`Mode`). Right of the 1{TIMES} line `select` is faster.",
    ),
)


def _bars_section(rows: list[Row], spec: BarFigure, figures: _Figures, heading: str) -> list[str]:
    mine = [r for r in rows if r["class"] == spec.cls]
    if not mine:
        return []
    bars = [Bar(param(r, spec.key), param(r, "backend"), r["speedup"]) for r in mine]
    times = {(param(r, spec.key), param(r, "backend")): r["select"] for r in mine}
    png = figures.next(spec.cls.lower())
    plot_speedup_bars(bars, png, spec.title)
    return [
        f"{heading} {spec.heading}",
        "",
        spec.explanation,
        "",
        *_image(png, spec.title),
        "Speed-up (and `select`'s time per call):",
        "",
        *category_table(bars, times),
        "",
    ]


def _other_section(rows: list[Row], figures: _Figures, heading: str) -> list[str]:
    """Classes with a select/peer pair that no other figure draws (a suite that grew)."""
    drawn = {spec.cls for spec in BAR_FIGURES}
    mine = [r for r in rows if r["class"] not in drawn and not _is_same_shape(r)]
    if not mine:
        return []
    bars = []
    times = {}
    for r in mine:
        label = " ".join(
            f"{n}={p}" for n, p in zip(r["names"], r["params"], strict=False) if n != "backend"
        )
        category = f"{r['class']} {label}".strip()
        backend = param(r, "backend")
        bars.append(Bar(category, backend, r["speedup"]))
        times[(category, backend)] = r["select"]
    png = figures.next("other")
    title = "How much faster than the library's own where, in the other benchmarks?"
    plot_speedup_bars(bars, png, title)
    return [
        f"{heading} Other benchmarks",
        "",
        *_image(png, title),
        *category_table(bars, times),
        "",
    ]


def _throughput_section(path: Path, figures: _Figures, heading: str) -> list[str]:
    fractions = asv_tracks(path, "select.Throughput.track_fraction_of_copy_bandwidth")
    gbps = asv_tracks(path, "select.Throughput.track_gbps")
    if not fractions and not gbps:
        return []
    lines = [
        f"{heading} Throughput: how close to a memory copy?",
        "",
        "Bytes `select` must move at least (each input read once, the output written once; "
        "float32, same shape) per second, as a share of the bandwidth of one large copy on "
        "the same device (a single-threaded `np.copyto` of 128 MiB for the CPU backends). "
        "Arrays that fit in a cache, and a kernel that runs on several threads, can go past "
        "100 %.",
        "",
    ]
    if fractions:
        png = figures.next("throughput")
        plot_throughput(
            fractions, png, "How close to the copy bandwidth does select get? (float32)"
        )
        lines += _image(png, "share of the copy bandwidth against size")
    return [*lines, *throughput_table(fractions, gbps), ""]


def single_call_classes(path: Path) -> list[str]:
    """Classes whose ``time_select``/``time_peer`` timings are each one call (``--quick``)."""
    entries = _entries(_load(path))
    classes = []
    for name in sorted(entries):
        if not name.endswith(".time_select"):
            continue
        pair = [entries.get(name[: -len("select")] + kind) for kind in ("select", "peer")]
        counts = [
            n
            for entry in pair
            for key in ("stats_number", "stats_repeat")
            for n in (entry or {}).get(key) or []
            if n is not None
        ]
        if None not in pair and counts and all(n == 1 for n in counts):
            classes.append(name.split(".")[-2])
    return classes


def _source(path: Path) -> str:
    data = _load(path)
    commit = str(data.get("commit_hash", "?"))[:10]
    date = datetime.datetime.fromtimestamp(data.get("date", 0) / 1000, tz=datetime.UTC)
    return f"`{path.parent.name}`, commit `{commit}`, {date:%Y-%m-%d} (`{path.name}`)"


def _machine_sections(path: Path, figures: _Figures, heading: str) -> list[str]:
    rows = asv_ratios(path)
    return [
        *_same_shape_section(rows, figures, heading),
        *(line for spec in BAR_FIGURES for line in _bars_section(rows, spec, figures, heading)),
        *_throughput_section(path, figures, heading),
        *_other_section(rows, figures, heading),
    ]


def _asv_report(files: list[Path], png: Path) -> str:
    figures = _Figures(png)
    several = len(files) > 1
    body: list[str] = []
    for path in files:
        sections = _machine_sections(path, figures, "####" if several else "###")
        if sections and several:
            body += [f"### Machine `{path.parent.name}`", "", *sections]
        else:
            body += sections
    if not body:
        return ""
    intro = [
        "These figures come from the asv results of "
        + "; ".join(_source(f) for f in files)
        + ": the newest result file of each machine in `asv_benchmarks/.asv/results/`. "
        "Each speed-up is the library's own `where` time divided by `select`'s, same "
        "arrays, same device, same run.",
        "",
    ]
    quick = [(f, single_call_classes(f)) for f in files]
    quick = [(f, classes) for f, classes in quick if classes]
    if quick:
        intro += [
            ":::{warning}",
            "These results time each benchmark by a single call (`asv run --quick`): "
            + "; ".join(
                f"`{f.parent.name}`: " + ", ".join(f"`{c}`" for c in classes)
                for f, classes in quick
            )
            + ". Such a call is cold, and at small sizes its time is mostly that, not "
            "`select`'s or the peer's: read those ratios as noise. Run asv without "
            "`--quick` for figures.",
            ":::",
            "",
        ]
    return "\n".join(intro + body) + "\n"


# --------------------------------------------------------------------------- build-time run


def _routing(portable: bool) -> contextlib.AbstractContextManager[None]:
    """``force_portable()`` for the portable rows; for the native backend no block at
    all, so that its calls run exactly as a user's do (fast path included).
    """
    return asel.force_portable() if portable else contextlib.nullcontext()


def _inputs(rng: np.random.Generator, size: int, dtype: str) -> tuple[np.ndarray, ...]:
    cond = rng.random(size) < 0.5
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        pair = [rng.integers(info.min, info.max, size, dtype=dtype, endpoint=True) for _ in "te"]
    else:
        pair = [rng.standard_normal(size).astype(dtype) for _ in "te"]
    return cond, pair[0], pair[1]


def measure(
    sizes: Sequence[int] = SIZES, dtypes: Sequence[str] = DTYPES, rounds: int = ROUNDS
) -> list[Row]:
    """Time ``select`` against ``np.where`` on same-shape NumPy arrays, here and now.

    Per size and dtype: ``select`` (NumPy backend), ``np.where`` and ``select``
    under ``force_portable()`` run in interleaved rounds
    (:func:`arrayselect._tools.bench_stats.time_interleaved`: a new order every
    round, so that a change of load hits all three). Each result is checked
    against ``np.where`` first.

    Parameters
    ----------
    sizes : sequence of int
        Elements per operand.
    dtypes : sequence of str
        NumPy dtype names (integer or floating).
    rounds : int
        Interleaved rounds per size and dtype.

    Returns
    -------
    list of dict
        Rows like :func:`asv_ratios`'s, class ``SameShape``, backends ``numpy``
        and ``portable``: ``select``/``peer`` are median seconds per call,
        ``speedup`` the median of the per-round speed-ups.
    """
    rng = np.random.default_rng(20240611)
    names = ("backend", "size", "dtype")
    # The portable calls run inside one force_portable() block, entered before their
    # batch and left before the next contender's: outside the timing.
    block = contextlib.ExitStack()

    def as_native() -> None:
        block.close()

    def as_portable() -> None:
        block.close()
        block.enter_context(asel.force_portable())

    rows = []
    for size, dtype in itertools.product(sizes, dtypes):
        cond, then, else_ = _inputs(rng, size, dtype)
        expected = np.where(cond, then, else_)
        for portable in (False, True):
            with _routing(portable):
                assert np.array_equal(asel.select(cond, then, else_), expected)
        select = functools.partial(asel.select, cond, then, else_)
        with block:
            samples = time_interleaved(
                [select, functools.partial(np.where, cond, then, else_), select],
                rounds,
                BATCH_SECONDS,
                setup=[as_native, as_native, as_portable],
            )
        times = dict(zip(("numpy", "np.where", "portable"), samples, strict=True))
        for backend in ("numpy", "portable"):
            row = _timing_row(
                "SameShape",
                names,
                (backend, str(size), dtype),
                statistics.median(times[backend]),
                statistics.median(times["np.where"]),
            )
            row["speedup"] = statistics.median(
                w / s for s, w in zip(times[backend], times["np.where"], strict=True)
            )
            row["ratio"] = 1 / row["speedup"]
            rows.append(row)
    return rows


def _measured_report(png: Path) -> str:
    started = time.perf_counter()
    rows = measure()
    seconds = time.perf_counter() - started
    plot_same_shape(rows, png, "How much faster than NumPy's own where? (this build machine)")
    cpus = usable_cores()
    load_now = load_average()
    load = "" if load_now is None else f", load average {load_now:.1f}"
    lines = [
        ":::{note}",
        "No asv results were found in `asv_benchmarks/.asv/results/`, so these numbers were "
        f"**measured while this page was built**, on the build machine ({platform.machine()}, "
        f"{cpus} CPUs available{load}; Python {platform.python_version()}, NumPy "
        f"{np.__version__}), in {seconds:.1f} s: {ROUNDS} interleaved rounds per size and "
        f"dtype, each call repeated for at least {BATCH_SECONDS * 1e3:.0f} ms. They describe "
        "that machine at that moment; run the asv suite for numbers worth comparing.",
        ":::",
        "",
        "`select` on NumPy arrays (its compiled `numpy` backend, and the `portable` backend "
        "under `force_portable()`) against `np.where`, same-shape 1-D operands. Above the "
        f"1{TIMES} line `select` is faster, below it slower.",
        "",
        *_image(png, "speed-up of select over np.where against size"),
        "Speed-up (and `select`'s time per call):",
        "",
        *same_shape_table(rows),
    ]
    return "\n".join(lines) + "\n"


def make_report(png: Path, repo: Path) -> str:
    """Write the figures of the performance page and return its Markdown.

    Parameters
    ----------
    png : Path
        The first figure (the same-shape one); further figures are written
        beside it, named after it.
    repo : Path
        The repository root, where asv results are looked for.

    Returns
    -------
    str
        MyST Markdown: where the numbers come from, the figures, the tables.
    """
    # Figures of an earlier build that this one may not redraw (fewer classes, or
    # no asv results any more) would linger in the folder: remove them first.
    for stale in png.parent.glob(f"{png.stem}_[0-9]*_*.png"):
        stale.unlink()
    files = find_asv_results(repo)
    if files:
        text = _asv_report(files, png)
        if text:
            return text
    return _measured_report(png)
