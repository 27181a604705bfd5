"""CI's run of the asv suite: every benchmark once, on one small parameter combination.

``asv check`` only imports the suite; it let the suite stop running for good (a
benchmark child hung in ``torch.where``) without anyone noticing. This runs the
suite for real with ``asv run --quick`` (one call of each benchmark, no
statistics) against the current environment, bounded by :data:`SUBSET`: for each
benchmark class, one cheap combination of its parameters (with a ``backend``
parameter: NumPy and PyTorch on the CPU, the two backends every CI machine
has), so the run takes a few minutes instead of the full suite's much longer.

The exit status is asv's: 2 when any selected benchmark failed, 0 otherwise
(combinations the machine cannot run, a GPU backend say, are skipped by the
suite itself); 124, as ``timeout`` says it, when the run took longer than
``ARRAYSELECT_ASV_TIMEOUT`` seconds (default 600): a hung benchmark then fails CI
instead of stalling it, and every process asv started is killed (its benchmark
server runs in a session of its own, which a plain ``timeout`` of this script
would leave running). Run it from anywhere::

    python asv_benchmarks/ci_run.py            # uses the Python that runs it

``tests/test_asv_suite.py`` checks that :data:`SUBSET` names every benchmark
class of the suite and that each entry selects at least one combination.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Benchmark class -> the parameters to run it with: a regular expression matched
#: against asv's ``name(param, ...)`` (each value as ``repr`` writes it), as
#: ``asv run --bench`` does.
SUBSET: dict[str, str] = {
    "select.SameShape": r"'(numpy|torch-cpu)', 1000, 'float32'",
    "select.BroadcastPattern": r"'(numpy|torch-cpu)', 'cond-row'",
    "select.Mode": r"'(numpy|torch-cpu)', 'pdpd'",
    "select.Throughput": r"'(numpy|torch-cpu)', 1000",
    "select.NumpyPeakMemory": r"'numpy', 1000",
    "select.ImportTime": "",
    "select_family.ApplyWhere": r"'(numpy|torch-cpu)', 1000",
    "select_family.SelectCases": r"'(numpy|torch-cpu)', 1000",
    "select_family.SelectN": r"'(numpy|torch-cpu)', 1000",
    "where.Where": r"'(numpy|torch-cpu)', 'int8,float32', 1000",
    "idioms.Idioms": r"'(numpy|torch-cpu)', 'select_cases\(4 conds\)', 1000",
    "numpy_kernel.CallOverhead": r"100, 'arrays'",
    "numpy_kernel.Family": r"1000000",
    "numpy_kernel.FamilyJax": r"1000000",
    "numpy_kernel.InstructionSets": r"'baseline', 'contiguous', 1000000",
    "numpy_kernel.Out": r"1000000, 'float32'",
    "numpy_kernel.Patterns": r"'contiguous', 1000000, 'float32'",
    "numpy_kernel.Strided": r"'step2_columns'",
    "numpy_kernel.StridedJax": r"'step2_columns'",
    "numpy_kernel.Threads": r"100000, 0",
    "jax_backend.JaxEagerScalarElse": r"1",
    "jax_backend.JaxEagerSelect": r"'arrayselect', 10000",
    "jax_backend.JaxTraced": r"'arrayselect', 'broadcast'",
    "dask_backend.DaskGraph": r"20",
    "dask_backend.DaskSelect": r"'threads'",
    "cupy_backend.CupySelect": r"'same shape', 1024, 'float32', 'arrayselect'",
    "cupy_backend.CupySelectLarge": r"'arrayselect'",
    "torch_backend.TorchRoutes": r"'(eager|portable)', 1000000",
}


def bench_regexes() -> list[str]:
    """One ``--bench`` expression per class of :data:`SUBSET`, anchored at both ends."""
    out = []
    for cls, params in SUBSET.items():
        name = cls.replace(".", r"\.") + r"\.\w+"
        out.append(f"^{name}$" if not params else f"^{name}\\({params}\\)$")
    return out


def _descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (Linux ``/proc``; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            # "pid (name) state ppid ...": the name may hold spaces, so split after ")".
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _run_bounded(command: list[str], seconds: float) -> int:
    """``command``'s exit status, or 124 after killing it and all its processes."""
    proc = subprocess.Popen(command, cwd=HERE, env=os.environ)
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        for pid in [*_descendants(proc.pid), proc.pid]:
            with contextlib.suppress(ProcessLookupError):  # ended on its own meanwhile
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        print(f"asv subset: still running after {seconds:.0f} s: killed", file=sys.stderr)
        return 124


def main() -> int:
    """Run the subset with asv against this interpreter; asv's exit status."""
    asv = [sys.executable, "-m", "asv"]
    # Records this machine for asv (once; the answers are its defaults).
    subprocess.run([*asv, "machine", "--yes"], cwd=HERE, check=True, capture_output=True)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=HERE, check=True, capture_output=True, text=True
    ).stdout.strip()
    command = [*asv, "run", "-E", f"existing:{sys.executable}", "--quick", "--show-stderr"]
    command += ["--set-commit-hash", commit]
    for regex in bench_regexes():
        command += ["--bench", regex]
    started = time.perf_counter()
    status = _run_bounded(command, float(os.environ.get("ARRAYSELECT_ASV_TIMEOUT", "600")))
    seconds = time.perf_counter() - started
    verdict = "passed" if status == 0 else f"FAILED (exit status {status})"
    print(f"asv subset ({len(SUBSET)} classes, --quick): {verdict} in {seconds:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
