"""The asv suite's setups run and check their results (NumPy backends, small sizes).

``asv check`` (in CI's checks job, ``scripts/ci/job_checks.sh``) only checks that the
suite is well formed; this runs ``setup`` and each benchmark method once, so a change in
``select``'s semantics that makes a benchmark compute something else fails here.
"""

from __future__ import annotations

import importlib
import itertools
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "asv_benchmarks"))
common: Any = pytest.importorskip("benchmarks.common")
suite: Any = pytest.importorskip("benchmarks.select")

CPU_NUMPY = ("numpy", "np.where", "portable")
CLASSES = ("SameShape", "BroadcastPattern", "Mode", "Throughput", "NumpyPeakMemory")
METHOD_PREFIXES = ("time_", "track_", "peakmem_")


def combos(cls: Any) -> list[tuple[Any, ...]]:
    """NumPy-path parameter combinations of ``cls`` small enough for a unit test."""
    out = []
    for params in itertools.product(*cls.params):
        named = dict(zip(cls.param_names, params, strict=True))
        if named["backend"] in CPU_NUMPY and named.get("size", 0) <= 10**5:
            out.append(params)
    return out


@pytest.mark.parametrize("name", CLASSES)
def test_setup_and_methods_run(name: str) -> None:
    cls = getattr(suite, name)
    methods = [m for m in dir(cls) if m.startswith(METHOD_PREFIXES)]
    ran = 0
    for params in combos(cls):
        bench = cls()
        try:
            bench.setup(*params)
        except common.SkipNotImplemented:
            continue
        for method in methods:
            try:
                value = getattr(bench, method)(*params)
            except common.SkipNotImplemented:
                continue
            if method.startswith("track_"):
                assert value > 0
            ran += 1
    assert ran > 0


def test_params_are_the_same_without_optional_libraries() -> None:
    # Parameters are plain lists, never computed from what is installed.
    assert suite.SameShape.params == [common.BACKENDS, common.SIZES, common.DTYPES]
    assert "cupy" in common.BACKENDS and "torch-cuda" in common.BACKENDS
    assert 2**28 in common.SIZES


def test_gpu_only_size_is_skipped_on_cpu() -> None:
    with pytest.raises(common.SkipNotImplemented, match="GPU"):
        suite.SameShape().setup("numpy", 2**28, "float32")


def test_a_wrong_result_fails_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    def swapped(cond: Any, then: Any, else_: Any, **kwargs: Any) -> Any:
        return np.where(cond, else_, then)

    monkeypatch.setattr(common.asel, "select", swapped)
    with pytest.raises(AssertionError, match=r"differs from np\.where"):
        suite.BroadcastPattern().setup("numpy", "cond-row")


def test_timeraw_code_runs() -> None:
    bench = suite.ImportTime()
    for method in ("timeraw_import_arrayselect", "timeraw_import_and_first_numpy_select"):
        exec(getattr(bench, method)(), {})


def test_importing_the_suite_leaves_jax_config_alone() -> None:
    # asv's forkserver imports every benchmark module into one process: a
    # global jax_enable_x64 there changed other modules' default dtypes.
    pytest.importorskip("jax")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import benchmarks.select, jax; "
        "assert not jax.config.jax_enable_x64, 'x64 switched on at import'"
    )
    root = Path(__file__).resolve().parents[1] / "asv_benchmarks"
    subprocess.run([sys.executable, "-c", code, str(root)], check=True)


@pytest.mark.parametrize("name", ["SelectN", "SelectCases", "ApplyWhere"])
def test_select_family_rows_run_and_match_their_peers(name: str) -> None:
    family: Any = pytest.importorskip("benchmarks.select_family")
    bench = getattr(family, name)()
    bench.setup("numpy", 10**3)  # raises SkipNotImplemented when the bits differ
    bench.time_ours("numpy", 10**3)
    bench.time_peer("numpy", 10**3)


def test_ci_subset_runs_every_benchmark_class() -> None:
    """CI runs asv_benchmarks/ci_run.py: each benchmark class of the suite must be in
    its subset, and each entry must select at least one parameter combination the way
    ``asv run --bench`` selects (a regular expression on ``name(param, ...)``)."""
    discovery: Any = pytest.importorskip("asv_runner.discovery")
    ci_run: Any = importlib.import_module("ci_run")  # asv_benchmarks/ (on sys.path above)
    root = Path(__file__).resolve().parents[1] / "asv_benchmarks"
    benchmarks = list(discovery.disc_benchmarks(str(root / "benchmarks")))
    classes = {b.name.rsplit(".", 1)[0] for b in benchmarks}
    assert classes == set(ci_run.SUBSET)
    regexes = ci_run.bench_regexes()
    for cls in classes:
        names = []
        for b in benchmarks:
            if b.name.rsplit(".", 1)[0] == cls:
                combos = itertools.product(*b.params) if b.params else [None]
                names += [b.name if p is None else f"{b.name}({', '.join(p)})" for p in combos]
        selected = [n for n in names if any(re.search(r, n) for r in regexes)]
        assert selected, f"{cls}: the subset selects none of {names[:3]}..."
        assert len(selected) < len(names) or len(names) <= 2, cls  # a subset, not all


@pytest.mark.skipif(sys.platform != "linux", reason="finds the processes in /proc")
def test_ci_run_kills_a_hung_run_and_everything_it_started(tmp_path: Path) -> None:
    """A hang (a benchmark server in a session of its own that never answers) ends
    with exit status 124 and no process left behind."""
    ci_run: Any = importlib.import_module("ci_run")  # asv_benchmarks/ (on sys.path above)
    pid_file = tmp_path / "hung-child-pid"
    code = (
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], "
        "start_new_session=True); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(300)"
    )
    assert ci_run._run_bounded([sys.executable, "-c", code], 3.0) == 124
    state = Path(f"/proc/{int(pid_file.read_text())}/stat")

    def gone() -> bool:
        try:
            return state.read_text().rsplit(")", 1)[1].split()[0] in "ZX"
        except OSError:  # reaped
            return True

    # SIGKILL is delivered asynchronously: allow the kernel a moment to end it.
    for _ in range(100):
        if gone():
            break
        time.sleep(0.05)
    assert gone()


def test_the_idiom_table_and_its_profile_print(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.idioms``: the table's rows, then one cell's profile."""
    idioms = importlib.import_module("benchmarks.idioms")
    assert idioms.main(["--quick", "--backends", "numpy", "--repeats", "1"]) == 0
    table = capsys.readouterr().out
    assert "| numpy | `where(c, x, 0.5)` | where(c, x, 0.5) |" in table
    assert re.search(r"# load average|not available", table)
    assert idioms.main(["--profile", "numpy", "select(c, x, 0.5)", "1000"]) == 0
    profile = capsys.readouterr().out
    assert "numpy `select(c, x, 0.5)` at 1000 elements" in profile
    assert "tottime" in profile and "select" in profile
