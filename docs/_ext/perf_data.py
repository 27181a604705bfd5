"""Performance figures for the docs: asv results when present, else a short build-time run.

:func:`make_report` writes one PNG and returns the Markdown that goes with it
(a caption saying where the numbers come from, and a table). No number on the
performance page is typed in:

* if asv result files exist under ``asv_benchmarks/.asv/results/<machine>/``
  (``asv run`` writes them), the newest file of each machine is read and every
  benchmark class with a ``time_select``/``time_peer`` pair is summarised as the
  ratio select / peer per parameter combination;
* otherwise a measurement of a few seconds runs in the build process: NumPy
  arrays of 10**2 .. 10**6 float32 elements, ``arrayselect.select`` (the NumPy
  backend, and the portable backend) against ``np.where``, interleaved rounds,
  medians. The page says that it was measured on the build machine.
"""

from __future__ import annotations

import datetime
import itertools
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

import arrayselect as asel

SIZES = (10**2, 10**3, 10**4, 10**5, 10**6)
ROUNDS = 7
BATCH_SECONDS = 0.004


# --------------------------------------------------------------------------- asv results


def find_asv_results(repo: Path) -> list[Path]:
    """The newest asv result file of each machine, if any."""
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


def asv_ratios(path: Path) -> list[dict[str, Any]]:
    """Rows ``{class, params, select, peer, ratio}`` from one asv result file (format 2)."""
    data = _load(path)
    columns = data.get("result_columns", ["result", "params"])
    results = data.get("results", {})
    rows = []
    for name, entry in sorted(results.items()):
        if not name.endswith(".time_select"):
            continue
        peer_entry = results.get(name[: -len("time_select")] + "time_peer")
        if peer_entry is None:
            continue
        ours = dict(zip(columns, entry, strict=False))
        peer = dict(zip(columns, peer_entry, strict=False))
        # One value per combination of the parameters (itertools.product order, as asv
        # stores them); a benchmark without parameters has one combination, ().
        combos = list(itertools.product(*(ours.get("params") or [])))
        values = zip(combos, ours.get("result") or [], peer.get("result") or [], strict=False)
        for combo, t_ours, t_peer in values:
            if not _finite(t_ours) or not _finite(t_peer):
                continue
            rows.append(
                {
                    "class": name.split(".")[-2],
                    "params": tuple(str(p).strip("'") for p in combo),
                    "select": float(t_ours),
                    "peer": float(t_peer),
                    "ratio": float(t_ours) / float(t_peer),
                }
            )
    return rows


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def _asv_report(files: list[Path], png: Path) -> str:
    sections = []
    all_rows: list[tuple[str, dict[str, Any]]] = []
    for f in files:
        data = _load(f)
        machine = f.parent.name
        commit = str(data.get("commit_hash", "?"))[:10]
        date = datetime.datetime.fromtimestamp(data.get("date", 0) / 1000, tz=datetime.UTC)
        sections.append(f"`{machine}`, commit `{commit}`, {date:%Y-%m-%d} (`{f.name}`)")
        all_rows += [(machine, r) for r in asv_ratios(f)]
    if not all_rows:
        return ""
    classes = sorted({r["class"] for _, r in all_rows})
    fig, axes = plt.subplots(len(classes), 1, figsize=(9, 2.8 * len(classes)), squeeze=False)
    for ax, cls in zip(axes[:, 0], classes, strict=True):
        rows = [(m, r) for m, r in all_rows if r["class"] == cls]
        labels = [f"{m}: " * (len(files) > 1) + " ".join(r["params"]) for m, r in rows]
        ax.barh(range(len(rows)), [r["ratio"] for _, r in rows], color="#4c9be8")
        ax.axvline(1.0, color="k", linewidth=0.8)
        ax.set_yticks(range(len(rows)), labels, fontsize=6)
        ax.set_xscale("log")
        ax.set_title(f"{cls}: time_select / time_peer (below 1: select is faster)", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)
    lines = [
        "These figures come from the asv results of "
        + "; ".join(sections)
        + ": the newest result file of each machine in `asv_benchmarks/.asv/results/`.",
        "",
        "![asv ratios](_generated/perf.png)",
        "",
        "| benchmark | parameters | select | peer | select / peer |",
        "| --- | --- | --- | --- | --- |",
    ]
    for machine, r in all_rows:
        params = " ".join(r["params"]) + (f" ({machine})" if len(files) > 1 else "")
        lines.append(
            f"| {r['class']} | {params} | {_fmt(r['select'])} | {_fmt(r['peer'])} "
            f"| {r['ratio']:.2f} |"
        )
    return "\n".join(lines) + "\n"


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


def measure(sizes: tuple[int, ...] = SIZES, rounds: int = ROUNDS) -> list[dict[str, Any]]:
    """Per size: median per-call seconds of three calls, and median per-round ratios."""
    rng = np.random.default_rng(20240611)
    rows = []
    for size in sizes:
        cond = rng.random(size) < 0.5
        then = rng.standard_normal(size, dtype=np.float32)
        else_ = rng.standard_normal(size, dtype=np.float32)
        expected = np.where(cond, then, else_)
        for portable in (False, True):
            with asel.force_portable(portable):
                assert np.array_equal(asel.select(cond, then, else_), expected)
        calls: dict[str, tuple[Callable[[], Any], bool]] = {
            "select": (lambda c=cond, t=then, e=else_: asel.select(c, t, e), False),
            "np.where": (lambda c=cond, t=then, e=else_: np.where(c, t, e), False),
            "portable": (lambda c=cond, t=then, e=else_: asel.select(c, t, e), True),
        }
        counts = {k: _calibrate(*call) for k, call in calls.items()}
        times: dict[str, list[float]] = {k: [] for k in calls}
        for r in range(rounds):
            order = list(calls) if r % 2 == 0 else list(reversed(calls))
            for k in order:
                times[k].append(_batch(calls[k][0], counts[k], calls[k][1]))
        ratios = [s / w for s, w in zip(times["select"], times["np.where"], strict=True)]
        ratios_p = [s / w for s, w in zip(times["portable"], times["np.where"], strict=True)]
        rows.append(
            {
                "size": size,
                **{k: statistics.median(v) for k, v in times.items()},
                "ratio": statistics.median(ratios),
                "ratio_portable": statistics.median(ratios_p),
            }
        )
    return rows


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _measured_report(png: Path) -> str:
    started = time.perf_counter()
    rows = measure()
    seconds = time.perf_counter() - started
    backend = asel.backend_for(np.array([True]), np.zeros(1), np.zeros(1)).name
    sizes = [r["size"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for key, colour in (("select", "#4c9be8"), ("np.where", "#444444"), ("portable", "#f0a04b")):
        label = {
            "select": f"arrayselect.select ({backend} backend)",
            "portable": "select in force_portable()",
        }.get(key, key)
        left.plot(sizes, [r[key] * 1e6 for r in rows], "o-", color=colour, label=label)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("elements (float32, same shape)")
    left.set_ylabel("µs per call (median)")
    left.legend(fontsize=8)
    right.plot(sizes, [r["ratio"] for r in rows], "o-", color="#4c9be8", label="select / np.where")
    right.plot(
        sizes,
        [r["ratio_portable"] for r in rows],
        "o-",
        color="#f0a04b",
        label="portable / np.where",
    )
    right.axhline(1.0, color="k", linewidth=0.8)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("elements")
    right.set_ylabel("ratio (median of rounds)")
    right.legend(fontsize=8)
    fig.suptitle("Measured while this page was built, on the build machine", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    lines = [
        ":::{note}",
        "No asv results were found in `asv_benchmarks/.asv/results/`, so these numbers were "
        f"**measured while this page was built**, on the build machine ({platform.machine()}, "
        f"{cpus} CPUs available{load}; Python {platform.python_version()}, NumPy "
        f"{np.__version__}), in {seconds:.1f} s: {ROUNDS} interleaved rounds per size, each "
        f"call repeated for at least {BATCH_SECONDS * 1e3:.0f} ms. They describe that machine "
        "at that moment; run the asv suite for numbers worth comparing.",
        ":::",
        "",
        "![build-time measurement](_generated/perf.png)",
        "",
        f"| elements | select ({backend}) | np.where | portable | select / np.where "
        "| portable / np.where |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']:,} | {_fmt(r['select'])} | {_fmt(r['np.where'])} | "
            f"{_fmt(r['portable'])} | {r['ratio']:.2f} | {r['ratio_portable']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def make_report(png: Path, repo: Path) -> str:
    """Write ``png``; return the Markdown (caption, image, table) for the performance page."""
    files = find_asv_results(repo)
    if files:
        text = _asv_report(files, png)
        if text:
            return text
    return _measured_report(png)
