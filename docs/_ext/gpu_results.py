"""The GPU section of the performance page, from ``docs/_data/gpu_results.json``.

GPU figures cannot be measured while the pages are built (the build machines have
no GPU), so they come from the last run of ``scripts/gpu_check.sh`` on a machine
with one: ``scripts/gpu_report.py --save`` writes the record (machine, driver,
library versions, date, test counts, every benchmark row) and it is committed.
:func:`section` renders it as Markdown tables beside the CPU figures.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "_data" / "gpu_results.json"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.3f} ms"


def _table(header: list[str], body: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in body]


def _rows(record: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [r for r in record["rows"] if r["name"].startswith(prefix) and "seconds" in r]


def section(path: Path = DATA) -> str:
    """Markdown for the performance page: the machine, the targets, the tables."""
    if not path.exists():
        return "No GPU results are recorded in this tree (`docs/_data/gpu_results.json`).\n"
    record = json.loads(path.read_text())
    env = record["env"]
    versions = ", ".join(
        f"{name} {env[name]}"
        for name in ("cupy-cuda13x", "cupy-cuda12x", "jax", "jax-cuda13-plugin", "numpy")
        if name in env
    )
    tests = record["tests"]["by_library"]
    out = [
        f"Measured on **{env.get('device', '?')}** (compute capability "
        f"{env.get('compute_capability', '?')}, {env.get('sm_count', '?')} SMs, "
        f"{env.get('memory_gib', '?')} GiB), driver {env.get('driver', '?')}, CUDA runtime "
        f"{env.get('cuda_runtime', '?')}, Python {env.get('python', '?')}, {versions}, "
        f"on {env.get('date', '?')}, by `scripts/gpu_check.sh` (recorded, not measured "
        "during this build: the build machines have no GPU). Tests on that run: "
        + ", ".join(
            f"{lib if lib != '-' else 'no library'}: {c['passed']} passed, {c['failed']} "
            f"failed, {c['skipped']} skipped"
            for lib, c in sorted(tests.items())
        )
        + ". Times are medians of CUDA-event-timed batches of back-to-back calls "
        "(host time counts where it exceeds the kernel's); a ratio is the peer's time "
        "over `select`'s: above 1, `select` was faster.",
        "",
        "**Targets.**",
        "",
    ]
    out += [f"* {_peer_over_select(line)}" for line in record["targets"]]
    out += [
        "",
        "**Same shape, float32, against `cupy.where`** (bytes counted: 13 per element).",
        "",
    ]
    copy = _rows(record, "copy bandwidth: cupy.copyto")
    body = [
        [
            r["name"].split()[1],
            _ms(r["seconds"]),
            _ms(r["where_seconds"]),
            f"{1 / r['ratio_to_where']:.3f}",
            f"{r['gbps']:.0f}",
        ]
        for r in _rows(record, "sweep 2^")
    ]
    out += _table(["elements", "select", "cupy.where", "where / select", "select GB/s"], body)
    if copy:
        big = _rows(record, "select 2^28 float32 same shape: arrayselect")
        frac = f", select at 2^28 reaches {big[0]['fraction_of_copy']:.1%} of it" if big else ""
        out += ["", f"Device-to-device copy: {copy[0]['gbps']:.0f} GB/s (read + write){frac}."]
    out += ["", "**Broadcast patterns** (the asv suite's, n x n float32).", ""]
    body = [
        [
            r["name"].removeprefix("pattern "),
            _ms(r["seconds"]),
            _ms(r["where_seconds"]),
            f"{1 / r['ratio_to_where']:.3f}",
        ]
        for r in _rows(record, "pattern ")
    ]
    out += _table(["pattern", "select", "cupy.where", "where / select"], body)
    out += [
        "",
        "**`select_cases`, 4 conditions, float32, scalar default, against `cupy.select`.**",
        "",
    ]
    body = [
        [r["name"].split()[2], _ms(r["seconds"]), _ms(r["select_seconds"]), f"{r['speedup']:.2f}x"]
        for r in _rows(record, "select_cases x4")
    ]
    out += _table(["elements", "select_cases", "cupy.select", "speed-up"], body)
    out += ["", "**JAX on the GPU**: `jax.jit(select)` against `jax.jit(jnp.where)`.", ""]
    body = [
        [
            r["name"].split(":")[0].removeprefix("jax "),
            r["name"].split(": ")[1],
            _ms(r["seconds"]),
            f"{1 / r['ratio_to_where']:.3f}",
        ]
        for r in _rows(record, "jax ")
    ]
    out += _table(["size", "function", "time", "jnp.where / select"], body)
    return "\n".join(out) + "\n"


def _peer_over_select(target: str) -> str:
    """A target line of a record written before the reports turned their ratios round
    ("worst ratio 1.311 ... (limit 1.03)", select over peer), the docs' way round."""
    target = re.sub(
        r"worst ratio (\d+\.\d+)", lambda m: f"slowest peer/select {1 / float(m[1]):.3f}", target
    )
    return re.sub(r"\(limit (\d+\.?\d*)\)", lambda m: f"(at least {1 / float(m[1]):.3f})", target)


if __name__ == "__main__":
    print(section())
