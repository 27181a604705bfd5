"""Record one CI matrix job's outcome as JSON, for the platform table in the docs.

Usage (from any job script)::

    python3 scripts/ci/record.py JOB --python 3.14 --cpu x86_64 --deps newest \
        --status run --junit junit.xml --seconds 312 --note "numpy, jax, dask"

writes ``$ARRAYSELECT_MATRIX_DIR/JOB.json`` (default ``.ci-matrix/``) with the job's
interpreter, CPU, dependency set, status (``run``, ``compiled``, ``skipped``: not run,
outside CI only; ``opted-out``: left out by ARRAYSELECT_SKIP_JOBS; or ``failed``), the pytest counts read from the JUnit XML file (when given), its wall time and
a note, and prints one line ``matrix JOB: STATUS (N passed, ...) in S s``. It needs only
the standard library, so any interpreter of a job can run it.
"""

from __future__ import annotations

import argparse
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path


def junit_counts(path: str) -> dict[str, int]:
    """Return the passed/failed/skipped/errors counts of a pytest JUnit XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key, 0))
    failed = totals["failures"]
    return {
        "passed": totals["tests"] - failed - totals["errors"] - totals["skipped"],
        "failed": failed,
        "errors": totals["errors"],
        "skipped": totals["skipped"],
    }


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, write the job's JSON record, print its summary line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("job")
    parser.add_argument("--python", required=True, help="interpreter, e.g. 3.14 or 3.14t")
    parser.add_argument("--cpu", required=True, help="e.g. x86_64, aarch64 (qemu), s390x (qemu)")
    parser.add_argument("--deps", required=True, help="dependency set, e.g. oldest, newest")
    parser.add_argument(
        "--status", required=True, choices=["run", "compiled", "skipped", "opted-out", "failed"]
    )
    parser.add_argument("--junit", help="pytest's --junitxml file, for the counts")
    parser.add_argument("--seconds", type=float, default=0.0)
    parser.add_argument("--note", default="")
    args = parser.parse_args(argv)
    record: dict[str, object] = {
        "job": args.job,
        "python": args.python,
        "cpu": args.cpu,
        "deps": args.deps,
        "status": args.status,
        "seconds": round(args.seconds),
        "note": args.note,
    }
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    if args.junit and Path(args.junit).is_file():
        counts = junit_counts(args.junit)
    record.update(counts)
    if args.status == "run" and (counts["failed"] or counts["errors"]):
        record["status"] = "failed"
    if args.status == "run" and not counts["passed"]:
        # the table never shows a job as passed that ran no test
        record["status"] = "failed"
        record["note"] = f"ran no test; {args.note}"
    out = Path(os.environ.get("ARRAYSELECT_MATRIX_DIR", ".ci-matrix"))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.job}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(
        f"matrix {args.job}: {record['status']} ({counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['skipped']} skipped) in {record['seconds']} s"
        + (f"; {args.note}" if args.note else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
