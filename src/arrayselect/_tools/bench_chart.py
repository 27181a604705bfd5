"""``bench --png``: the report as a chart (needs matplotlib).

Two panels sharing the cases on the x axis: the headline, peer/ours, as bars
that grow up from 1 (``select`` faster) or down (slower) on a log axis with the
value written on each bar and the rounds' interquartile range as an error bar;
below, the fraction of the copy bandwidth reached, where above 1 means the data
sat in cache. Cells with no figure say why (``n/a``), rows marked unreliable are
hatched, and the machine, date and load are printed on the figure.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from arrayselect._tools import bench_stats as _bench_stats

if TYPE_CHECKING:
    from arrayselect._tools.bench import BenchReport, BenchRow

__all__ = ["draw", "pyplot", "write_png"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display).

    Raises
    ------
    ImportError
        If matplotlib is not installed, saying how to get it.
    """
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError as exc:
        raise ImportError(
            "writing a PNG needs matplotlib, which is not installed: "
            "pip install 'arrayselect[plot]' (or pip install matplotlib)"
        ) from exc
    matplotlib.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def _na_reason(row: BenchRow | None) -> str:
    """The short label of a cell without a figure: ``"n/a"`` or the row's status."""
    if row is None or row.status in ("unsupported", "not installed"):
        return "n/a"
    return row.status


def write_png(report: BenchReport, path: str) -> None:
    """Draw ``report`` into the PNG file ``path``.

    Raises
    ------
    ImportError
        If matplotlib is not installed (``pip install 'arrayselect[plot]'``).
    """
    plt = pyplot()
    fig = draw(report)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def draw(report: BenchReport) -> Any:
    """The chart of ``report`` as a matplotlib figure (the caller closes it).

    Raises
    ------
    ImportError
        If matplotlib is not installed.
    """
    plt = pyplot()
    cases = list(dict.fromkeys(row.case for row in report.rows))
    targets = list(dict.fromkeys(row.target for row in report.rows))
    cells = {(row.target, row.case): row for row in report.rows}
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(max(10.0, 1.5 * len(cases) + 2), 10), sharex=True
    )
    patches = importlib.import_module("matplotlib.patches")
    handles: list[Any] = []
    width = 0.84 / max(len(targets), 1)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    # Room beyond every error bar for the value written past its end (log axis).
    ends = [1.0]
    for r in report.rows:
        if r.ratio:
            ends.append(r.ratio)
        if r.ratio_spread:
            ends += [r.ratio_spread.q1, r.ratio_spread.q3]
    y_low, y_high = min(ends) / 6, max(ends) * 6
    for i, target in enumerate(targets):
        colour = colours[i % len(colours)]
        for c, case in enumerate(cases):
            x = c + (i - (len(targets) - 1) / 2) * width
            row = cells.get((target, case))
            _ratio_bar(top, x, width, row, colour, y_low)
            _floor_bar(bottom, x, width, row, colour)
        handles.append(patches.Patch(color=colour, label=target))
    top.set_yscale("log")
    top.set_ylim(y_low, y_high)
    top.axhline(1.0, color="black", linewidth=0.9)
    top.set_ylabel("peer time / select time (log scale)")
    top.set_title(
        "arrayselect vs each library's own where: bars start at 1 (the peer's speed); "
        "up: select is faster, down: slower.\nValue: the median over the rounds; "
        "error bar: their interquartile range",
        fontsize="medium",
    )
    fractions = [r.floor_fraction for r in report.rows if r.floor_fraction]
    bottom.set_ylim(0, max([1.0, *fractions]) * 1.2)  # room for the values above the bars
    bottom.axhline(1.0, color="black", linewidth=0.9)
    bottom.set_ylabel("fraction of copy bandwidth")
    bottom.set_title(
        "bytes select moves per second over the device's copy bandwidth (timed between "
        "the rounds).\n1 (the line): as fast as a copy from memory; above 1: the data "
        "sat in cache, which the large copy cannot use",
        fontsize="medium",
    )
    bottom.set_xticks(range(len(cases)))
    bottom.set_xticklabels(cases, rotation=25, ha="right", fontsize="small")
    for ax in (top, bottom):
        ax.set_xlim(-0.5, len(cases) - 0.5)
        for c in range(1, len(cases)):
            ax.axvline(c - 0.5, color="0.85", linewidth=0.8, zorder=0)
    fig.legend(
        handles=handles,
        loc="upper center", ncol=min(len(targets), 4), fontsize="small", frameon=False,
        bbox_to_anchor=(0.5, 1.0),
    )  # fmt: skip
    load = _bench_stats.format_load(report.load_before, report.load_after)
    fig.text(
        0.01,
        0.005,
        f"{report.machine.describe()}; {load}\n"
        "hatched: marked unreliable (noisy rounds or load above the cores; see the table's "
        "notes); n/a: the library lacks the dtype or select refuses it",
        fontsize="small",
        va="bottom",
    )
    rows_of_legend = -(-len(targets) // 4)
    fig.tight_layout(rect=(0, 0.05, 1, 1 - 0.03 * rows_of_legend))
    return fig


def _hatch(row: BenchRow) -> str | None:
    return "///" if row.flags else None


def _na(ax: Any, x: float, y: float, row: BenchRow | None) -> None:
    """A cell without a figure: its reason, written where the bar would start."""
    ax.text(x, y, _na_reason(row), ha="center", va="bottom", fontsize=7, rotation=90, color="0.3")


def _ratio_bar(
    ax: Any, x: float, width: float, row: BenchRow | None, colour: str, y_low: float
) -> None:
    """One peer/ours bar from 1 to the ratio, its value, its interquartile range."""
    if row is None or row.ratio is None:
        _na(ax, x, 1.05, row)
        return
    ratio = row.ratio
    ax.bar(x, ratio - 1.0, width, bottom=1.0, color=colour, hatch=_hatch(row), edgecolor="white")
    if row.ratio_spread is not None:
        spread = row.ratio_spread
        ax.errorbar(
            x,
            ratio,
            yerr=[[max(ratio - spread.q1, 0.0)], [max(spread.q3 - ratio, 0.0)]],
            fmt="none",
            ecolor="black",
            elinewidth=0.7,
            capsize=1.5,
        )
    # The value goes beyond the error bar's end, so that neither hides the other.
    up = ratio >= 1.0
    end = row.ratio_spread.q3 if up and row.ratio_spread else ratio
    if not up and row.ratio_spread:
        end = row.ratio_spread.q1
    label_y = end * (1.1 if up else 1 / 1.1)
    ax.text(
        x,
        max(label_y, y_low * 1.05),
        f"{ratio:.3g}",
        ha="center",
        va="bottom" if up else "top",
        fontsize=7,
        rotation=90,
    )


def _floor_bar(ax: Any, x: float, width: float, row: BenchRow | None, colour: str) -> None:
    """One fraction-of-copy-bandwidth bar with its value."""
    fraction = None if row is None else row.floor_fraction
    if row is None or fraction is None:
        _na(ax, x, 0.02, row)
        return
    ax.bar(x, fraction, width, color=colour, hatch=_hatch(row), edgecolor="white")
    ax.text(x, fraction, f" {fraction:.2g}", ha="center", va="bottom", fontsize=7, rotation=90)
