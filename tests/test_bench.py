"""``python -m arrayselect bench``: the table, the NumPy check, the chart."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from xp_helpers import run_without

from arrayselect import adapters
from arrayselect.__main__ import main
from arrayselect._tools import bench as _bench
from arrayselect._tools import bench_stats as _bench_stats
from arrayselect._tools.bench_stats import Spread

TINY = (_bench.BenchCase("same", 100), _bench.BenchCase("outer", 64, "int8"))
COLUMNS = list(_bench.COLUMNS)


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
    assert table[0].startswith("machine: ")
    header = [cell.strip() for cell in table[2].strip("|").split("|")]
    assert header == [*COLUMNS[:13], "check", "unreliable"]
    assert set(table[3]) <= set("|-:")
    body = [line for line in table[4:] if line.startswith("|")]
    assert len(body) == 4
    checks = [[c.strip() for c in line.strip("|").split("|")][13] for line in body]
    assert checks == ["ok"] * 4
    assert "cpu" in report.copy_bandwidth and report.copy_bandwidth["cpu"].median > 0


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
        from arrayselect._tools import bench as _bench

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
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[4:]]
    rows = [(c[0], c[2], c[13]) for c in cells if len(c) == len(COLUMNS)]
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


# --------------------------------------------------------------- trustworthiness


def test_spread_is_median_and_quartiles() -> None:
    spread = Spread.of([4.0, 1.0, 100.0, 3.0, 2.0])  # order does not matter
    assert (spread.median, spread.q1, spread.q3, spread.rounds) == (3.0, 2.0, 4.0, 5)
    assert spread.relative_iqr == pytest.approx(2 / 3)
    assert spread.percent() == "67%"
    assert Spread.of([2.0]) == Spread(2.0, 2.0, 2.0, 1)
    assert Spread.of([2.0]).relative_iqr == 0
    with pytest.raises(ValueError, match="at least one"):
        Spread.of([])


def test_flag_rule_marks_noise_and_load() -> None:
    calm = Spread(1.0, 0.95, 1.05, 5)
    noisy = Spread(1.0, 0.8, 1.0 + _bench_stats.NOISE_LIMIT, 5)  # IQR just above the limit
    assert _bench_stats.flag_reasons([calm, calm, None], 0.5, 2) == []
    assert _bench_stats.flag_reasons([calm, noisy], 0.5, 2) == ["noisy"]
    assert _bench_stats.flag_reasons([calm], 2.0, 2) == []  # load equal to the cores: fine
    assert _bench_stats.flag_reasons([calm], 2.01, 2) == ["loaded"]
    assert _bench_stats.flag_reasons([noisy], 9.0, 2) == ["noisy", "loaded"]
    assert _bench_stats.flag_reasons([calm], None, 2) == []  # no load average (Windows)


def test_rounds_are_paired_for_the_ratio_and_the_floor() -> None:
    row = _bench.BenchRow("t", "cpu", "numpy", "c", "np.where", nbytes=1000)
    ours, peer, copies = [1.0, 2.0, 4.0], [2.0, 2.0, 2.0], [1000.0, 2000.0, 4000.0]
    _bench._summarise(row, ours, peer, copies)
    assert row.seconds == 2.0 and row.peer_seconds == 2.0
    assert row.ratio_spread == Spread.of([2.0, 1.0, 0.5])  # round by round, not medians
    assert row.copy_bandwidth == 2000.0
    assert row.floor_spread == Spread.of([1.0, 0.25, 0.0625])


def _report(load: float) -> _bench.BenchReport:
    machine = _bench_stats.Machine("Test CPU", 4, 2, "2026-01-02 03:04 UTC")
    report = _bench.BenchReport(machine=machine, load_before=0.5, load_after=load)
    report.copy_bandwidth["cpu"] = Spread(2e10, 1.9e10, 2.1e10, 10)
    for target, flags in (("numpy", []), ("numpy (portable)", ["noisy", "loaded"])):
        row = _bench.BenchRow(target, "cpu", "numpy", "same 1e3 float32", "np.where", nbytes=9000)
        _bench._summarise(row, [1e-6, 2e-6, 3e-6], [2e-6, 2e-6, 2e-6], [2e10, 2e10, 2e10])
        row.flags = flags
        report.rows.append(row)
    bad = _bench.BenchRow("numpy (portable)", "cpu", "-", "same 1e6 bfloat16", "np.where")
    bad.status, bad.detail = "unsupported", "no bfloat16"
    report.rows.append(bad)
    return report


def test_table_states_machine_load_spread_and_rule() -> None:
    text = _bench.format_table(_report(3.0))
    lines = text.splitlines()
    assert lines[0] == (
        "machine: Test CPU, 4 cores (2 usable), 2026-01-02 03:04 UTC; "
        "load average 0.50 before, 3.00 after (1-minute)"
    )
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[4:7]]
    assert rows[0][3:5] == ["2 µs", "50%"]  # quartiles 1.5 and 2.5 µs over a median of 2
    assert rows[0][8:10] == ["1.00", "67%"]  # peer/ours round by round: 2, 1, 0.667
    assert rows[0][-1] == "" and rows[1][-1] == "noisy, loaded"
    assert rows[2][3] == "-" and rows[2][4] == "-"  # no figure, no spread
    assert f"exceeds {_bench_stats.NOISE_LIMIT:.0%} of its median" in text
    assert "usable cores while the row ran (2)" in text
    assert "marked unreliable: 1 of 2 measured rows" in text
    assert "cpu 20.0 GB/s (IQR 10% over 10 copies)" in text
    assert "data sat in cache" in text


def test_copy_is_timed_after_every_round(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bench_stats, "load_average", lambda: 1000.0)
    report = _bench.run_bench(
        TINY, quick=True, targets=numpy_targets(), progress=None, timing=(0.0001, 3)
    )
    assert report.copy_bandwidth["cpu"].rounds == 3 * len(report.rows)
    for row in report.rows:
        assert row.floor_spread is not None and row.floor_spread.rounds == 3
        assert row.copy_bandwidth is not None and row.load == 1000.0
        assert "loaded" in row.flags  # far above any machine's cores
    assert report.load_before == report.load_after == 1000.0


def test_chart_labels_bars_marks_gaps_and_keeps_the_legend_off_the_data() -> None:
    pytest.importorskip("matplotlib")
    from arrayselect._tools import bench_chart as _bench_chart

    fig = _bench_chart.draw(_report(3.0))
    try:
        top, bottom = fig.axes
        top_texts = [t.get_text() for t in top.texts]
        assert "1" in top_texts and "n/a" in top_texts  # the ratio on its bar, the gap
        assert "n/a" in [t.get_text() for t in bottom.texts]
        hatches = [p.get_hatch() for p in top.patches]
        assert hatches.count("///") == 1  # the one row marked unreliable
        assert "above 1: the data sat in cache" in bottom.get_title()
        words = " ".join(t.get_text() for t in fig.texts)
        assert "Test CPU" in words and "2026-01-02" in words and "3.00 after" in words
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legend = fig.legends[0].get_window_extent(renderer)
        for ax in fig.axes:
            assert not legend.overlaps(ax.get_window_extent(renderer))
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_compare_interleaved_counts_its_calls_and_reads_the_given_clock() -> None:
    """``number`` calls per batch and no call before them (a single call can be timed
    cold); by default two calls first (warm-up, batch size); the clock is the one given."""
    calls = {"a": 0, "b": 0}
    ticks = iter(range(10**6))

    def clock() -> float:
        return float(next(ticks))

    def count(name: str) -> None:
        calls[name] += 1

    fns = [lambda: count("a"), lambda: count("b")]
    medians = _bench_stats.compare_interleaved(fns, 4, number=3, clock=clock)
    assert calls == {"a": 12, "b": 12}
    assert medians == [1 / 3, 1 / 3]  # each batch spans one tick of the fake clock
    calls.update(a=0, b=0)
    _bench_stats.compare_interleaved(fns, 4, sample_seconds=5.0, clock=clock)
    assert calls == {"a": 2 + 4 * 5, "b": 2 + 4 * 5}  # one call takes one tick: 5 a batch
