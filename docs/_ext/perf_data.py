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
"""

from __future__ import annotations

import datetime
import functools
import itertools
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

import arrayselect as asel

#: The build-time measurement: sizes, dtypes (a 1-, a 4- and an 8-byte one: three
#: panels like the asv figure's, in a few seconds), rounds, and the least
#: duration of one timed batch of calls.
SIZES = (10**2, 10**3, 10**4, 10**5, 10**6)
DTYPES = ("int8", "float32", "float64")
ROUNDS = 5
BATCH_SECONDS = 0.004

#: Where the page finds the figures, relative to the page that includes the Markdown.
IMAGE_DIR = "_generated"
#: Figures are drawn at the width the docs theme shows them (about 800 px), so
#: that their text is as large on the page as it is here.
DPI = 100
WIDTH = 8.0

#: Dtype groups of the same-shape figure, one panel each. Select moves bytes and
#: does no arithmetic, so dtypes of one item size behave alike.
DTYPE_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("1-byte", ("bool", "int8")),
    ("2-byte", ("float16", "bfloat16")),
    ("4-byte", ("float32",)),
    ("8/16-byte", ("float64", "complex128")),
)
#: Line styles of the dtypes of one group, and how a panel title names them.
LINESTYLES = (("-", "solid"), ("--", "dashed"), (":", "dotted"))

#: Parameter names of the suite's classes, for result files that come without
#: asv's ``benchmarks.json``.
PARAM_NAMES = {
    "SameShape": ("backend", "size", "dtype"),
    "BroadcastPattern": ("backend", "pattern"),
    "Mode": ("backend", "mode"),
    "Throughput": ("backend", "size"),
}

Row = dict[str, Any]

#: The multiplication sign of speed-ups ("2x" with the proper sign; ruff flags the literal).
TIMES = "\N{MULTIPLICATION SIGN}"


@dataclass(frozen=True)
class Style:
    """How one backend is drawn in every figure, and the ``where`` it is compared with."""

    colour: str
    marker: str
    peer: str


#: One colour per backend, the same in every figure (the Okabe-Ito palette,
#: distinguishable with the common colour-vision deficiencies; darker shades for
#: the GPU twin of a CPU backend), and squares for GPU backends.
STYLES = {
    "numpy": Style("#0072B2", "o", "np.where"),
    "portable": Style("#E69F00", "o", "np.where"),
    "jax-cpu": Style("#009E73", "o", "jnp.where"),
    "jax-gpu": Style("#00513B", "s", "jnp.where"),
    "torch-cpu": Style("#D55E00", "o", "torch.where"),
    "torch-cuda": Style("#7F2F00", "s", "torch.where"),
    "cupy": Style("#CC79A7", "s", "cupy.where"),
    "dask": Style("#56B4E9", "o", "da.where"),
    "np.where": Style("#444444", "D", ""),  # the baseline of Throughput: no peer
}
_UNKNOWN_STYLES = ("#555555", "#999999", "#000000", "#777777")


def style(backend: str) -> Style:
    """The :class:`Style` of ``backend``; a grey one (stable per name) if it is new."""
    if backend in STYLES:
        return STYLES[backend]
    colour = _UNKNOWN_STYLES[sum(map(ord, backend)) % len(_UNKNOWN_STYLES)]
    return Style(colour, "^", "its library's where")


def backend_label(backend: str) -> str:
    """Legend entry: the backend and the ``where`` its speed-up is measured against."""
    if not backend:  # a benchmark class without a backend parameter
        return "select (vs its peer)"
    peer = style(backend).peer
    return f"{backend} (vs {peer})" if peer else f"{backend} (baseline)"


def _backend_order(backends: Iterable[str]) -> list[str]:
    known = list(STYLES)
    return sorted(set(backends), key=lambda b: (known.index(b) if b in known else len(known), b))


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


def param(row: Row, name: str, default: str = "") -> str:
    """The value of parameter ``name`` in ``row``, or ``default`` if it has none."""
    names = row.get("names") or PARAM_NAMES.get(row["class"], ())
    return str(dict(zip(names, row["params"], strict=False)).get(name, default))


# --------------------------------------------------------------------------- formatting


def _fmt(seconds: float) -> str:
    """A duration with three significant digits and a unit people read (µs, ms, s)."""
    units = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
    unit, scale = next((u for u in units if seconds >= u[1]), units[-1])
    return f"{seconds / scale:.3g} {unit}"


def _fmt_speedup(x: float) -> str:
    return (f"{x:.0f}" if x >= 1000 else f"{x:.3g}") + TIMES


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _power(size: int) -> tuple[int, int] | None:
    """``(base, exponent)`` if ``size`` is a power of 10 or of 2 above 8, else None."""
    for base in (10, 2):
        exponent = round(math.log(size, base)) if size > 0 else 0
        if exponent > 0 and base**exponent == size and (base == 10 or size > 8):
            return base, exponent
    return None


def size_text(size: int) -> str:
    """``size`` for a table: ``10⁵``, ``2²⁸`` or ``1,000`` (Unicode superscripts)."""
    power = _power(size)
    if power is None:
        return f"{size:,}"
    return f"{power[0]}{str(power[1]).translate(_SUPERSCRIPT)}"


def size_tex(size: int) -> str:
    """``size`` for a tick label: ``$10^{5}$``, ``$2^{28}$`` or ``1,000`` (mathtext)."""
    power = _power(size)
    return f"{size:,}" if power is None else f"${power[0]}^{{{power[1]}}}$"


def _table(header: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return lines


# --------------------------------------------------------------------------- chart parts


def _speedup_ticks(low: float, high: float) -> list[float]:
    """Tick values between ``low`` and ``high``: 1-2-5 per decade, 1-3 or decades if many."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    decades = math.log10(high / low)
    steps = (1, 2, 5) if decades <= 2.5 else (1, 3) if decades <= 4.5 else (1,)
    ticks = [m * 10.0**e for e in range(first, last + 1) for m in steps]
    return [t for t in ticks if low <= t <= high]


def style_speedup_axis(ax: Axes, values: Sequence[float], axis: str = "y") -> None:
    """Make one axis of ``ax`` a log speed-up axis with a line at 1.

    The sides of the line at 1 are shaded faintly (green: select faster, red:
    slower), so which side is good needs no reading.

    Parameters
    ----------
    ax : Axes
        The axes to style.
    values : sequence of float
        The speed-ups drawn: the limits enclose them and 1, with a margin.
    axis : {"y", "x"}
        Which axis holds the speed-ups.
    """
    low = min([1.0, *values]) / 1.4
    high = max([1.0, *values]) * 1.4
    set_scale, set_lim, line, span = (
        (ax.set_yscale, ax.set_ylim, ax.axhline, ax.axhspan)
        if axis == "y"
        else (ax.set_xscale, ax.set_xlim, ax.axvline, ax.axvspan)
    )
    set_scale("log")
    set_lim(low, high)
    which = ax.yaxis if axis == "y" else ax.xaxis
    which.set_major_locator(FixedLocator(_speedup_ticks(low, high)))
    which.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}{TIMES}"))
    which.set_minor_locator(NullLocator())
    which.set_minor_formatter(NullFormatter())
    ax.set_axisbelow(True)  # grid under the data and the 1x line
    line(1.0, color="black", linewidth=1.0, zorder=1.9)
    span(1.0, high, color="#2ca02c", alpha=0.07, linewidth=0, zorder=0)
    span(low, 1.0, color="#d62728", alpha=0.06, linewidth=0, zorder=0)


def style_size_axis(ax: Axes, sizes: Iterable[int]) -> None:
    """A log axis of element counts, ticks at the measured sizes (``10³``, ``2²⁸``)."""
    ticks = sorted(set(sizes))
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_tex(round(v))))
    ax.xaxis.set_minor_locator(NullLocator())
    if len(ticks) > 1:  # a margin of 4 % of the span, so edge markers are not clipped
        pad = (ticks[-1] / ticks[0]) ** 0.04
        ax.set_xlim(ticks[0] / pad, ticks[-1] * pad)


def _legend_below(
    fig: Figure,
    backends: Sequence[str],
    bars: bool = False,
    label: Callable[[str], str] = backend_label,
) -> None:
    """One entry per backend under the axes (outside them: it never covers data)."""
    handles: list[Artist] = [
        Patch(color=style(b).colour, label=label(b))
        if bars
        else Line2D([], [], color=style(b).colour, marker=style(b).marker, label=label(b))
        for b in backends
    ]
    ncol = min(len(backends), 3)
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False)


def _save(fig: Figure, png: Path) -> None:
    fig.savefig(png, dpi=DPI)
    plt.close(fig)


# --------------------------------------------------------------------------- figures


def _dtype_groups(rows: Sequence[Row]) -> list[tuple[str, list[str]]]:
    """The dtype groups present in ``rows``, each with its dtypes present, in suite order."""
    present = {param(r, "dtype") for r in rows}
    groups = [(label, [d for d in dtypes if d in present]) for label, dtypes in DTYPE_GROUPS]
    known = {d for _, dtypes in DTYPE_GROUPS for d in dtypes}
    groups += [(d or "dtype not recorded", [d]) for d in sorted(present - known)]
    return [(label, dtypes) for label, dtypes in groups if dtypes]


def _group_title(label: str, dtypes: Sequence[str]) -> str:
    if len(dtypes) == 1:
        return f"{label}: {dtypes[0]}" if dtypes[0] and dtypes[0] != label else label
    return f"{label}: " + ", ".join(
        f"{d} ({name})" for d, (_, name) in zip(dtypes, LINESTYLES, strict=False)
    )


def plot_same_shape(rows: Sequence[Row], png: Path, title: str) -> None:
    """Draw speed-up against size on log-log axes: a panel per dtype group, a line per backend.

    Within a panel the dtypes of the group are told apart by line style, which
    the panel title names. The panels share both axes, so they compare at a glance.

    Parameters
    ----------
    rows : sequence of dict
        Rows as :func:`asv_ratios` returns them, with parameters ``backend``,
        ``size`` and ``dtype``.
    png : Path
        Where to write the figure.
    title : str
        The question the figure answers.
    """
    groups = _dtype_groups(rows)
    backends = _backend_order(param(r, "backend") for r in rows)
    ncols = 2 if len(groups) in (2, 4) else min(len(groups), 3)
    nrows = math.ceil(len(groups) / ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(WIDTH, 1.2 + 2.6 * nrows + 0.25 * math.ceil(len(backends) / 3)),
        sharex=True,
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    speedups = [r["speedup"] for r in rows]
    sizes = [int(param(r, "size")) for r in rows]
    for ax, (label, dtypes) in zip(axes.flat, groups, strict=False):
        for backend in backends:
            for dtype, (linestyle, _) in zip(dtypes, LINESTYLES, strict=False):
                points = sorted(
                    (int(param(r, "size")), r["speedup"])
                    for r in rows
                    if param(r, "backend") == backend and param(r, "dtype") == dtype
                )
                if points:
                    s = style(backend)
                    xs, ys = zip(*points, strict=True)
                    ax.plot(xs, ys, linestyle, color=s.colour, marker=s.marker, markersize=4)
        ax.set_title(_group_title(label, dtypes), fontsize=10)
        ax.grid(True, which="major", color="#dddddd", linewidth=0.6)
        style_speedup_axis(ax, speedups)  # each panel: its own 1x line and shading
        style_size_axis(ax, sizes)
    for ax in axes.flat[len(groups) :]:
        ax.set_visible(False)
    for i, ax in enumerate(axes.flat[: len(groups)]):
        # The x label under each panel with none below it (a figure-wide label
        # would collide with the legend under the panels).
        if i + ncols >= len(groups):
            ax.xaxis.set_tick_params(labelbottom=True)
            ax.set_xlabel("elements per operand", fontsize=10)
    fig.supylabel(
        f"speed-up: where's time / select's time\nabove 1{TIMES}: select is faster", fontsize=10
    )
    fig.suptitle(title, fontsize=12, fontweight="bold")
    _legend_below(fig, backends)
    _save(fig, png)


@dataclass(frozen=True)
class Bar:
    """One bar of a speed-up bar chart: a category (a row of bars), a backend, a speed-up."""

    category: str
    backend: str
    speedup: float


def plot_speedup_bars(bars: Sequence[Bar], png: Path, title: str) -> None:
    """Draw horizontal bars growing from the line at 1: right, select faster; left, slower.

    One group of bars per category (top to bottom in the order given), one bar
    per backend in its colour, the value written at the end of each bar.

    Parameters
    ----------
    bars : sequence of Bar
        The speed-ups.
    png : Path
        Where to write the figure.
    title : str
        The question the figure answers.
    """
    categories = list(dict.fromkeys(b.category for b in bars))
    backends = _backend_order(b.backend for b in bars)
    step = 0.8 / len(backends)
    height = 1.1 + len(categories) * (0.13 * len(backends) + 0.2) + 0.25 * len(backends) / 3
    fig, ax = plt.subplots(figsize=(WIDTH, height), layout="constrained")
    for i, backend in enumerate(backends):
        mine = [b for b in bars if b.backend == backend]
        ys = [categories.index(b.category) - 0.4 + step * (i + 0.5) for b in mine]
        values = [b.speedup for b in mine]
        widths = [v - 1.0 for v in values]
        ax.barh(ys, widths, left=1.0, height=step * 0.9, color=style(backend).colour, zorder=2)
        for y, v in zip(ys, values, strict=True):
            ax.annotate(
                _fmt_speedup(v),
                (v, y),
                xytext=(3 if v >= 1 else -3, 0),
                textcoords="offset points",
                ha="left" if v >= 1 else "right",
                va="center",
                fontsize=7.5,
            )
    ax.set_yticks(range(len(categories)), categories, fontsize=9)
    ax.set_ylim(len(categories) - 0.5, -0.5)  # first category on top
    # Room for the value labels beyond the longest bars.
    style_speedup_axis(ax, [v for b in bars for v in (b.speedup * 1.6, b.speedup / 1.6)], "x")
    ax.set_xlabel(f"speed-up: where's time / select's time (right of 1{TIMES}: select is faster)")
    ax.grid(True, axis="x", color="#dddddd", linewidth=0.6, zorder=0)
    # Over the figure, not the axes: long category names must not push it off the edge.
    fig.suptitle(title, fontsize=12, fontweight="bold")
    _legend_below(fig, backends, bars=True)
    _save(fig, png)


def plot_throughput(rows: Sequence[Row], png: Path, title: str) -> None:
    """Draw the share of the copy bandwidth against size, one line per backend, log-log.

    Logarithmic in y too: the shares span from a fraction of a percent (one
    element per call) to several hundred (cache-resident arrays).

    Parameters
    ----------
    rows : sequence of dict
        Rows as :func:`asv_tracks` returns them, with parameters ``backend`` and
        ``size``, values as fractions (1.0: as fast as the copy).
    png : Path
        Where to write the figure.
    title : str
        The question the figure answers.
    """
    fig, ax = plt.subplots(figsize=(WIDTH, 4.4), layout="constrained")
    backends = _backend_order(param(r, "backend") for r in rows)
    for backend in backends:
        points = sorted(
            (int(param(r, "size")), r["value"]) for r in rows if param(r, "backend") == backend
        )
        s = style(backend)
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, "-", color=s.colour, marker=s.marker, markersize=4)
    ax.set_axisbelow(True)
    ax.axhline(1.0, color="black", linewidth=1.0, zorder=1.9)
    ax.annotate(
        "one large copy of as many bytes",
        (0.01, 1.0),
        xycoords=("axes fraction", "data"),
        xytext=(0, 3),
        textcoords="offset points",
        fontsize=8,
    )
    values = [r["value"] for r in rows]
    ax.set_yscale("log")
    ax.set_ylim(min([0.5, *values]) / 2, max([1.0, *values]) * 2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v * 100:g} %"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    style_size_axis(ax, (int(param(r, "size")) for r in rows))
    ax.set_xlabel("elements per operand")
    ax.set_ylabel("bandwidth reached, as a share\nof the device's large copy")
    ax.grid(True, which="major", color="#dddddd", linewidth=0.6)
    fig.suptitle(title, fontsize=12, fontweight="bold")
    # Absolute throughput, not a comparison: the legend names backends only.
    _legend_below(fig, backends, label=lambda b: b if style(b).peer else f"{b} (for comparison)")
    _save(fig, png)


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
    dtypes = [d for _, group in _dtype_groups(rows) for d in group]
    cell = {(param(r, "backend"), param(r, "dtype"), int(param(r, "size"))): r for r in rows}
    body = []
    for backend in _backend_order(param(r, "backend") for r in rows):
        for dtype in dtypes:
            found = [cell.get((backend, dtype, s)) for s in sizes]
            if any(found):
                body.append(
                    [backend, dtype or "?"]
                    + [
                        f"{_fmt_speedup(r['speedup'])} ({_fmt(r['select'])})" if r else ""
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
    backends = _backend_order(b.backend for b in bars)
    value = {(b.category, b.backend): b.speedup for b in bars}
    body = []
    for category in dict.fromkeys(b.category for b in bars):
        cells = [
            f"{_fmt_speedup(value[k])} ({_fmt(select_times[k])})" if k in value else ""
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
    for backend in _backend_order(param(r, "backend") for r in both):
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


def _calibrate(fn: Callable[[], Any], portable: bool) -> int:
    n = 1
    while True:
        if _batch(fn, n, portable) * n >= BATCH_SECONDS or n >= 10**5:
            return n
        n *= 4


def _batch(fn: Callable[[], Any], n: int, portable: bool) -> float:
    """Seconds per call of ``fn`` over ``n`` back-to-back calls.

    ``portable``: the calls run inside one :func:`arrayselect.force_portable`
    block, entered outside the timing.
    """
    with asel.force_portable(portable):
        fn()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - start) / n


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
    under ``force_portable()`` run in interleaved rounds (order reversed every
    other round, so that a change of load hits all three). Each result is
    checked against ``np.where`` first.

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
    rows = []
    for size, dtype in itertools.product(sizes, dtypes):
        cond, then, else_ = _inputs(rng, size, dtype)
        expected = np.where(cond, then, else_)
        for portable in (False, True):
            with asel.force_portable(portable):
                assert np.array_equal(asel.select(cond, then, else_), expected)
        calls: dict[str, tuple[Callable[[], Any], bool]] = {
            "numpy": (functools.partial(asel.select, cond, then, else_), False),
            "np.where": (functools.partial(np.where, cond, then, else_), False),
            "portable": (functools.partial(asel.select, cond, then, else_), True),
        }
        counts = {k: _calibrate(*call) for k, call in calls.items()}
        times: dict[str, list[float]] = {k: [] for k in calls}
        for r in range(rounds):
            for k in list(calls) if r % 2 == 0 else reversed(calls):
                times[k].append(_batch(calls[k][0], counts[k], calls[k][1]))
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
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
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
