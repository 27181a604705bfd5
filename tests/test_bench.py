"""``python -m arrayselect bench``: the table, the NumPy check, the chart."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from xp_helpers import run_without

from arrayselect import _bench, adapters
from arrayselect.__main__ import main

TINY = (_bench.BenchCase("same", 100), _bench.BenchCase("outer", 64, "int8"))
COLUMNS = ["library", "backend", "case", "time", "peer", "peer time", "peer/ours", "GB/s"]


def numpy_targets() -> list[_bench.Target]:
    """NumPy and NumPy forced onto the portable backend: always present, fast."""
    return _bench._targets_of(adapters.get("numpy"))


def wrong_select(cond: object, then: object, else_: object, **kwargs: object) -> object:
    """A broken backend: the branches swapped."""
    return np.where(cond, else_, then)  # type: ignore[call-overload]


def test_table_has_a_row_per_case_and_target() -> None:
    report = _bench.run_bench(TINY, quick=True, targets=numpy_targets(), progress=None)
    assert [(r.target, r.case) for r in report.rows] == [
        ("numpy", "same 1e2 float32"),
        ("numpy (portable)", "same 1e2 float32"),
        ("numpy", "outer 64 int8"),
        ("numpy (portable)", "outer 64 int8"),
    ]
    assert report.ok
    for row in report.rows:
        assert row.status == "ok", row.detail
        assert row.seconds is not None and row.seconds > 0
        assert row.peer_seconds is not None and row.peer_seconds > 0
        assert row.ratio is not None and row.gbps is not None and row.floor_fraction is not None
        assert row.peer_name == "np.where"
    assert report.rows[1].backend.startswith("portable")
    table = _bench.format_table(report).splitlines()
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    assert header == [*COLUMNS, "of floor", "check"]
    assert set(table[1]) <= set("|-:")
    body = [line for line in table[2:] if line.startswith("|")]
    assert len(body) == 4
    assert all(line.rstrip(" |").endswith("ok") for line in body)
    assert "cpu" in report.copy_bandwidth and report.copy_bandwidth["cpu"] > 0


def test_every_present_backend_runs_and_matches_numpy() -> None:
    report = _bench.run_bench(TINY, quick=True, progress=None, timing=(0.001, 1))
    assert {r.target for r in report.rows} >= {"numpy", "numpy (portable)"}
    for row in report.rows:
        assert row.status in ("ok", "unsupported"), f"{row.target} {row.case}: {row.detail}"


def test_a_wrong_result_is_a_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bench, "select", wrong_select)
    report = _bench.run_bench(TINY[:1], quick=True, targets=numpy_targets(), progress=None)
    assert not report.ok
    assert {r.status for r in report.rows} == {"MISMATCH"}
    assert "bytes differ" in report.rows[0].detail
    assert "MISMATCH: numpy same 1e2 float32" in _bench.format_table(report)


def test_command_exits_nonzero_on_a_mismatch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_bench, "QUICK_CASES", TINY)
    monkeypatch.setattr(_bench, "available_targets", lambda: (numpy_targets(), []))
    assert main(["bench", "--quick"]) == 0
    assert "bench passed" in capsys.readouterr().out
    monkeypatch.setattr(_bench, "select", wrong_select)
    assert main(["bench", "--quick"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and "bench FAILED" in out


def test_png_without_matplotlib_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    called = []
    monkeypatch.setattr(_bench, "run_bench", lambda **kw: called.append(kw))
    assert main(["bench", "--quick", "--png", "chart.png"]) == 2
    out = capsys.readouterr().out
    assert "matplotlib" in out and "arrayselect[plot]" in out
    assert called == []  # nothing was timed


def test_png_is_written_with_matplotlib(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pytest.TempPathFactory
) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(_bench, "QUICK_CASES", TINY)
    monkeypatch.setattr(_bench, "available_targets", lambda: (numpy_targets(), []))
    path = f"{tmp_path}/chart.png"
    assert main(["bench", "--quick", "--png", path]) == 0
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_progress_goes_to_the_given_stream() -> None:
    stream = io.StringIO()
    _bench.run_bench(TINY, quick=True, targets=numpy_targets(), progress=stream)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("bench [0/5]")  # not a terminal: a line per case
    assert any("outer 64 int8" in line for line in lines)


def test_case_labels() -> None:
    assert _bench.BenchCase("same", 10**7).label == "same 1e7 float32"
    assert _bench.BenchCase("cond-row", 10**6, "bfloat16").label == "cond-row 1e6 bfloat16"
    with pytest.raises(ValueError, match="unknown pattern"):
        _bench.make_inputs(_bench.BenchCase("diagonal", 4))


def test_bench_without_ml_dtypes_reports_bfloat16_not_installed() -> None:
    """A plain ``pip install .`` has no ml_dtypes: bfloat16 is reported, the rest runs."""
    proc = run_without(
        "ml_dtypes",
        """
        from arrayselect import _bench

        _bench.QUICK_CASES = (
            _bench.BenchCase("same", 100, "bfloat16"),
            _bench.BenchCase("same", 100),
        )
        status = _bench.main(quick=True)
        assert "ml_dtypes" not in sys.modules
        sys.exit(status)
        """,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    rows = [(c[0], c[2], c[-1]) for c in cells if len(c) == len(COLUMNS) + 2]
    bfloat16 = {lib: check for lib, case, check in rows if "bfloat16" in case}
    assert {"numpy", "numpy (portable)"} <= set(bfloat16)
    assert set(bfloat16.values()) == {"not installed"}
    assert {check for _, case, check in rows if "float32" in case} == {"ok"}
    notes = [line for line in lines if line.startswith("not installed: same 1e2 bfloat16")]
    assert len(notes) == 1 and "ml_dtypes" in notes[0], proc.stdout
    assert "bench passed" in proc.stdout


def test_torch_compile_target_compiles_each_case_afresh() -> None:
    """More cases than torch's recompile limit (8): every row compiles and matches."""
    pytest.importorskip("torch")
    target = _bench.Target(adapters.get("torch-cpu"), torch_compile=True)
    cases = [_bench.BenchCase("same", size) for size in range(10, 20)]
    report = _bench.run_bench(
        cases, quick=True, targets=[target], progress=None, timing=(0.0001, 1)
    )
    details = [row.detail for row in report.rows]
    assert [row.status for row in report.rows] == ["ok"] * len(cases), details


def test_select_family_rows_match_numpy_and_time_a_where_chain() -> None:
    cases = (
        _bench.BenchCase("same", 100, "float32", "select_n"),
        _bench.BenchCase("same", 100, "int8", "select_cases"),
    )
    report = _bench.run_bench(cases, quick=True, targets=numpy_targets(), progress=None)
    assert [r.case for r in report.rows] == ["select_n 1e2 float32 x4"] * 2 + [
        "select_cases 1e2 int8 x4"
    ] * 2
    for row in report.rows:
        assert row.status == "ok", row.detail
        assert row.peer_name == "np.where chain"
