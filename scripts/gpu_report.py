"""Print the results table of ``scripts/gpu_check.sh`` (standard library only).

Reads pytest's JUnit XML and ``asv_benchmarks/gpu_bench.py``'s JSON; prints test
counts per module and backend, the benchmark table, and the issue's targets as
MET / MISSED / NOT MEASURED. Exit status 0 when the tests passed and the
benchmarks ran on a GPU.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _tag(name: str) -> str:
    """The array library a test ran on, from its parameter id."""
    params = name.partition("[")[2]
    for tag in ("cupy", "jax"):
        if tag in params:
            return tag
    return "-"


def test_table(junits: list[Path]) -> tuple[list[str], dict[str, int]]:
    """Lines of the test table, and how many cupy / jax tests actually ran."""
    ran = {"cupy": 0, "jax": 0}
    missing = [j for j in junits if not j.exists()]
    if missing:
        return [f"tests: no JUnit report at {missing[0]} (pytest did not run)"], ran
    counts: dict[tuple[str, str], collections.Counter[str]] = collections.defaultdict(
        collections.Counter
    )
    reasons: collections.Counter[str] = collections.Counter()
    cases = [c for j in junits for c in ET.parse(j).getroot().iter("testcase")]
    for case in cases:
        module = case.get("classname", "?").split(".")[-1] or "?"
        tag = _tag(case.get("name", ""))
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                if child.tag == "skipped":
                    reasons[(child.get("message") or "")[:110]] += 1
        counts[(module, tag)][outcome] += 1
    lines = [f"{'test module':34} {'on':5} {'passed':>7} {'failed':>7} {'error':>6} {'skipped':>8}"]
    lines.append("-" * len(lines[0]))
    for (module, tag), c in sorted(counts.items()):
        lines.append(
            f"{module[:34]:34} {tag:5} {c['passed']:>7} {c['failed']:>7} {c['error']:>6} "
            f"{c['skipped']:>8}"
        )
        library = "cupy" if module == "test_cupy_backend" else tag
        if library in ran:
            ran[library] += c["passed"] + c["failed"]
    for reason, n in reasons.most_common(4):
        lines.append(f"  skipped x{n}: {reason}")
    return lines, ran


def _worst_ratio(rows: list[dict[str, Any]], limit: float, target: str) -> str:
    """``target``'s verdict: the largest ``ratio_to_where`` (select's time over the
    peer's) among ``rows`` against ``limit``, reported the docs' way round: the peer's
    time over select's, above 1 when select is faster."""
    rows = [r for r in rows if "ratio_to_where" in r and "seconds" in r]
    if not rows:
        return f"{target}: NOT MEASURED"
    worst = max(rows, key=lambda r: r["ratio_to_where"])
    verdict = "MET" if worst["ratio_to_where"] <= limit else "MISSED"
    return (
        f"{target}: slowest peer/select {1 / worst['ratio_to_where']:.3f} "
        f"({worst['name'].split(':')[0]}) {verdict} (at least {1 / limit:.3f})"
    )


def targets(bench: dict[str, Any]) -> list[str]:
    """The issue's benchmark targets, judged from the benchmark rows."""
    if not bench.get("measured"):
        return ["all GPU targets: NOT MEASURED (" + bench.get("reason", "no GPU") + ")"]
    rows = bench["rows"]

    def find(prefix: str) -> list[dict[str, Any]]:
        return [r for r in rows if r["name"].startswith(prefix)]

    lines = []
    big = [r for r in find("select 2^") if r["name"].endswith("float32 same shape: arrayselect")]
    if big and "fraction_of_copy" in big[0]:
        frac = big[0]["fraction_of_copy"]
        verdict = "MET" if frac >= 0.90 else "MISSED"
        lines.append(f">= 90% of copy bandwidth at 2^28 float32 (13 B/elem): {frac:.1%} {verdict}")
    else:
        lines.append(">= 90% of copy bandwidth: NOT MEASURED")
    lines.append(
        _worst_ratio(find("pattern "), 1.03, "never slower than cupy.where on the asv patterns")
    )
    lines.append(
        _worst_ratio(find("sweep 2^"), 1.03, "never slower than cupy.where, 2^10..2^28 float32")
    )
    cases = [r for r in find("select_cases x4") if "speedup" in r]
    if cases:
        worst = min(cases, key=lambda r: r["speedup"])
        best = max(cases, key=lambda r: r["speedup"])
        verdict = "MET" if worst["speedup"] >= 3 else "MISSED"
        lines.append(
            f"select_cases x4 >= 3x cupy.select: {worst['speedup']:.2f}x (worst, "
            f"{worst['name'].split(':')[0]}) .. {best['speedup']:.2f}x (best) {verdict}"
        )
    else:
        lines.append("select_cases x4 >= 3x cupy.select: NOT MEASURED")
    jax_rows = [r for r in find("jax ") if "arrayselect (jit)" in r["name"]]
    lines.append(_worst_ratio(jax_rows, 1.05, "jax.jit(select) within 5% of jax.jit(jnp.where)"))
    bits = [r["name"] for r in rows if "BITS DIFFER" in r.get("note", "")]
    if bits:
        lines.append("bit differences from cupy.where in: " + "; ".join(bits))
    return lines


def test_counts(junits: list[Path]) -> dict[str, dict[str, int]]:
    """Passed / failed / error / skipped test counts per array library (``-`` for none)."""
    counts: dict[str, dict[str, int]] = {}
    for junit in junits:
        if not junit.exists():
            continue
        for case in ET.parse(junit).getroot().iter("testcase"):
            outcome = "passed"
            for child in case:
                if child.tag in ("failure", "error", "skipped"):
                    outcome = {"failure": "failed"}.get(child.tag, child.tag)
            library = _tag(case.get("name", ""))
            if (case.get("classname") or "").endswith("test_cupy_backend"):
                library = "cupy"
            row = counts.setdefault(library, dict(passed=0, failed=0, error=0, skipped=0))
            row[outcome] += 1
    return counts


def save(path: Path, bench: dict[str, Any], junits: list[Path], test_rc: int) -> None:
    """Write the run's record for the docs (``docs/_data/gpu_results.json``): the
    machine, the test counts, the benchmark rows and the targets' verdicts."""
    record = {
        "about": "scripts/gpu_check.sh on a GPU machine; read by docs/_ext/gpu_results.py",
        "env": bench.get("env", {}),
        "device": bench.get("device"),
        "tests": {"exit_status": test_rc, "by_library": test_counts(junits)},
        "targets": targets(bench),
        "rows": bench.get("rows", []),
    }
    path.write_text(json.dumps(record, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--junit", type=Path, action="append", required=True, help="JUnit XML (repeatable)"
    )
    parser.add_argument("--bench", type=Path, required=True)
    parser.add_argument("--test-rc", type=int, default=0)
    parser.add_argument("--bench-rc", type=int, default=0)
    parser.add_argument("--jax-backend", default="unknown", help="jax.default_backend()")
    parser.add_argument("--save", type=Path, help="also write the record the docs read here")
    args = parser.parse_args(argv)

    print("\n================ arrayselect GPU check: results ================")
    lines, ran = test_table(args.junit)
    print("\n".join(lines))
    if args.bench.exists():
        bench = json.loads(args.bench.read_text())
    else:
        bench = {"measured": False, "reason": f"gpu_bench.py wrote nothing (exit {args.bench_rc})"}
    sys.path.insert(0, str(ROOT / "asv_benchmarks"))
    from gpu_bench import format_table

    print()
    env = bench.get("env", {})
    if env:
        print("machine: " + ", ".join(f"{k} {v}" for k, v in env.items() if k != "nvidia_smi"))
    print(format_table(bench))
    print()
    tests_ok = args.test_rc == 0
    print(
        f"tests: {'PASSED' if tests_ok else f'FAILED (pytest exit {args.test_rc})'}; "
        f"not skipped: {ran['cupy']} on cupy (GPU), {ran['jax']} on jax "
        f"(JAX default backend: {args.jax_backend})"
    )
    for line in targets(bench):
        print(line)
    if args.save:
        save(args.save, bench, args.junit, args.test_rc)
    return 0 if tests_ok and bench.get("measured") and args.bench_rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
