"""The CI matrix's own rules (scripts/ci/matrix.sh, _job.sh, system_setup.sh, record.py),
checked with fake jobs and a fake apt-get:

* on CI a job that cannot run fails, saying why; outside CI it is recorded as not run;
* a job that exits non-zero, or records nothing, is recorded as failed;
* a job left out by ARRAYSELECT_SKIP_JOBS is recorded as opted out, and the table says so;
* a job that ran no test is never shown as passed;
* jobs of one group never run at once;
* only the setup step installs system packages: it updates apt's lists once, retries a
  failed apt-get with its own output shown, and fails on CI; no job script calls apt-get;
* jobs select tests by marker, never by file name.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / "scripts" / "ci"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the CI scripts are bash")


def _matrix(tmp_path: Path, jobs: dict[str, str], *, ci: bool, env: dict[str, str] | None = None
            ) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, object]]]:  # fmt: skip
    """Run matrix.sh on fake job scripts {name: body}; return its run and the records."""
    scripts = tmp_path / "jobs"
    scripts.mkdir(exist_ok=True)
    lines = []
    for name, body in jobs.items():
        group = name.split(":")[1] if ":" in name else name
        name = name.split(":")[0]
        (scripts / f"{name}.sh").write_text(
            f"source {CI / '_job.sh'}\njob_init {name} 3.11 x86_64 fake\n{body}\n"
        )
        lines.append(f"{name}|{name}.sh|{group}|-|3.11|x86_64|fake")
    matrix_dir = tmp_path / "matrix"
    run_env = {
        **os.environ,
        "ARRAYSELECT_MATRIX_DIR": str(matrix_dir),
        "ARRAYSELECT_MATRIX_SCRIPTS": str(scripts),
        "ARRAYSELECT_MATRIX_JOBS": "\n".join(lines),
        "ARRAYSELECT_CI_CACHE": str(tmp_path / "cache"),
        "CI": "true" if ci else "",
        "ARRAYSELECT_CI_PYTHON": sys.executable,  # a root may have no python3 on PATH
        **(env or {}),
    }
    done = subprocess.run(
        ["bash", str(CI / "matrix.sh")], cwd=ROOT, env=run_env, capture_output=True, text=True
    )
    records = {p.stem: json.loads(p.read_text()) for p in matrix_dir.glob("*.json")}
    return done, records


def test_a_job_that_cannot_run_fails_on_ci_with_the_reason(tmp_path: Path) -> None:
    body = "job_need no-such-tool-anywhere\njob_record run ok"
    done, records = _matrix(tmp_path, {"needy": body, "fine": "job_record compiled ok"}, ci=True)
    assert done.returncode == 1, done.stdout
    assert records["needy"]["status"] == "failed"
    assert "no-such-tool-anywhere is missing" in str(records["needy"]["note"])
    assert "FAILED: cannot run: no-such-tool-anywhere is missing" in done.stdout
    assert "matrix: failed: needy" in done.stdout
    assert records["fine"]["status"] == "compiled"


def test_outside_ci_a_job_that_cannot_run_is_recorded_as_not_run(tmp_path: Path) -> None:
    done, records = _matrix(tmp_path, {"needy": "job_need no-such-tool-anywhere"}, ci=False)
    assert done.returncode == 0, done.stdout
    assert records["needy"]["status"] == "skipped"
    sys.path.insert(0, str(CI))
    try:
        import render_matrix
    finally:
        sys.path.remove(str(CI))
    assert render_matrix.cell(records["needy"]).startswith("not run: no-such-tool-anywhere")


def test_a_failing_command_or_a_silent_job_is_recorded_as_failed(tmp_path: Path) -> None:
    jobs = {"broken": "echo its own error >&2; false\njob_record run never", "silent": "true"}
    done, records = _matrix(tmp_path, jobs, ci=True)
    assert done.returncode == 1
    assert records["broken"]["status"] == "failed"
    assert "exit status 1" in str(records["broken"]["note"])
    assert "broken| its own error" in done.stdout  # the job's own output, whole
    assert records["silent"]["status"] == "failed"
    assert records["silent"]["note"] == "the job recorded no result"


def test_an_opted_out_job_is_recorded_and_shown_as_such(tmp_path: Path) -> None:
    done, records = _matrix(
        tmp_path,
        {"wanted": "job_record compiled ok", "unwanted": "exit 1"},
        ci=True,
        env={"ARRAYSELECT_SKIP_JOBS": "other,unwanted"},
    )
    assert done.returncode == 0, done.stdout
    assert records["unwanted"]["status"] == "opted-out"
    assert "matrix unwanted: not run: opted out by ARRAYSELECT_SKIP_JOBS" in done.stdout
    sys.path.insert(0, str(CI))
    try:
        import render_matrix
    finally:
        sys.path.remove(str(CI))
    table = render_matrix.render(list(records.values()))
    assert "not run: opted out by ARRAYSELECT_SKIP_JOBS" in table


def test_a_job_that_ran_no_test_is_not_shown_as_passed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.xml"
    empty.write_text('<testsuites><testsuite tests="0" failures="0" errors="0" skipped="0"/>'
                     "</testsuites>")  # fmt: skip
    done, records = _matrix(tmp_path, {"idle": f"job_record run ok {empty}"}, ci=True)
    assert records["idle"]["status"] == "failed", records
    assert str(records["idle"]["note"]).startswith("ran no test")
    assert done.returncode == 0  # the job itself said nothing failed; its row does


def test_jobs_of_one_group_never_run_at_once(tmp_path: Path) -> None:
    stamp = tmp_path / "stamps"
    body = (
        f'echo "start $JOB_NAME $(date +%s%N)" >> {stamp}; sleep 0.3; '
        f'echo "end $JOB_NAME $(date +%s%N)" >> {stamp}; job_record compiled ok'
    )
    done, _ = _matrix(tmp_path, {"a:shared": body, "b:shared": body, "c": body}, ci=True)
    assert done.returncode == 0, done.stdout
    events = [line.split() for line in stamp.read_text().splitlines()]
    times = {(kind, job): int(t) for kind, job, t in events}
    first, second = sorted("ab", key=lambda j: times[("start", j)])
    assert times[("end", first)] <= times[("start", second)], events


def test_no_job_script_installs_system_packages() -> None:
    scripts = [*CI.glob("job_*.sh"), CI / "_job.sh", CI / "matrix.sh"]
    scripts.append(ROOT / "scripts" / "cross_check.sh")
    for script in scripts:
        text = "\n".join(
            line for line in script.read_text().splitlines() if not line.lstrip().startswith("#")
        )
        assert not re.search(r"\bapt(-get)?\b|\bdpkg -i\b", text), script.name


def test_jobs_select_tests_by_marker_never_by_file() -> None:
    """Every job but the main one (the whole suite) runs ``tests`` with a marker
    expression (tests/conftest.py: GROUPS and ASPECTS), so a new module joins the jobs
    its markers name; no job names a test file."""
    for script in CI.glob("job_*.sh"):
        text = "\n".join(
            line for line in script.read_text().splitlines() if not line.lstrip().startswith("#")
        )
        assert not re.search(r"tests/test_\w*", text), script.name
        if "pytest" in text and script.name != "job_main.sh":  # main: the whole suite
            assert re.search(r"\btests -m ", text), script.name


def _fake_apt(tmp_path: Path, fail_first: int) -> tuple[Path, Path]:
    """A PATH folder with a fake apt-get (it fails its first ``fail_first`` calls with the
    lists-lock error), dpkg-query (nothing installed), mount and update-binfmts."""
    bin_dir, log = tmp_path / "bin", tmp_path / "apt.log"
    bin_dir.mkdir()
    counter = tmp_path / "calls"
    counter.write_text("0")
    (bin_dir / "apt-get").write_text(
        "#!/bin/sh\n"
        f'n=$(cat {counter}); echo $((n + 1)) > {counter}; echo "$*" >> {log}\n'
        f'if [ "$n" -lt {fail_first} ]; then\n'
        '  echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 9803" >&2\n'
        "  exit 100\nfi\n"
    )
    (bin_dir / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    for name in ("mount", "update-binfmts", "id"):
        (bin_dir / name).write_text('#!/bin/sh\n[ "$1" = -u ] && echo 0\nexit 0\n')
    for path in bin_dir.iterdir():
        path.chmod(0o755)
    return bin_dir, log


def _setup(tmp_path: Path, bin_dir: Path, *, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CI": "true" if ci else "",
        "ARRAYSELECT_APT_RETRY_SECONDS": "0",
        "ARRAYSELECT_SETUP_RECORD": str(tmp_path / "installed"),
    }
    return subprocess.run(["bash", str(CI / "system_setup.sh")], env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def test_the_setup_step_updates_once_and_retries_with_apt_s_own_error(tmp_path: Path) -> None:
    bin_dir, log = _fake_apt(tmp_path, fail_first=1)
    done = _setup(tmp_path, bin_dir, ci=True)
    assert "Could not get lock /var/lib/apt/lists/lock" in done.stderr  # apt's own words
    calls = log.read_text().splitlines()
    assert [c.split()[-1] for c in calls[:2]] == ["update", "update"]  # the retry
    assert sum(c.endswith("update") for c in calls) == 2
    assert len(calls) == 3 and " install " in f" {calls[2]} "
    listed = subprocess.run(["bash", str(CI / "system_setup.sh"), "--list"],
                            capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert all(pkg in calls[2].split() for pkg in listed)  # one install, every package


def test_the_setup_step_fails_on_ci_when_apt_keeps_failing(tmp_path: Path) -> None:
    bin_dir, _ = _fake_apt(tmp_path, fail_first=99)
    done = _setup(tmp_path, bin_dir, ci=True)
    assert done.returncode == 1
    assert "system setup: FAILED: apt-get update failed" in done.stderr
    assert done.stderr.count("Could not get lock") == 3
    elsewhere = _setup(tmp_path, bin_dir, ci=False)
    assert elsewhere.returncode == 0
    assert "not done: apt-get update failed" in elsewhere.stdout
