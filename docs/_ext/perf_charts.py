"""Figures of the performance page: one question per figure, the same look in all.

Used by ``perf_data.py``, which reads the numbers (asv results or a build-time
measurement) into rows and writes the page. Every speed-up is peer time /
select time on a log axis with a line at 1x (above or right of it, shaded
green: ``select`` is faster); every backend has one colour in every figure;
legends sit outside the axes; figures are drawn at the width the docs theme
shows them.

Rows are dicts with ``class``, ``names`` (parameter names), ``params``
(parameter values as strings) and either ``speedup`` (plus ``select``,
``peer``: seconds) or ``value`` (a ``track_`` result).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

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
_UNKNOWN_STYLES = ("#555555", "#888888", "#333333", "#AAAAAA")


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


def backend_order(backends: Iterable[str]) -> list[str]:
    """The distinct ``backends`` in the order of :data:`STYLES`, unknown ones last."""
    known = list(STYLES)
    return sorted(set(backends), key=lambda b: (known.index(b) if b in known else len(known), b))


def param(row: Row, name: str, default: str = "") -> str:
    """The value of parameter ``name`` in ``row``, or ``default`` if it has none."""
    names = row.get("names") or PARAM_NAMES.get(row["class"], ())
    return str(dict(zip(names, row["params"], strict=False)).get(name, default))


# --------------------------------------------------------------------------- formatting


def fmt_speedup(x: float) -> str:
    """A speed-up with three significant digits and the multiplication sign (1.25, 12.5)."""
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


def dtype_groups(rows: Sequence[Row]) -> list[tuple[str, list[str]]]:
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
    groups = dtype_groups(rows)
    backends = backend_order(param(r, "backend") for r in rows)
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
    backends = backend_order(b.backend for b in bars)
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
                fmt_speedup(v),
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
    backends = backend_order(param(r, "backend") for r in rows)
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
