"""The NumPy kernel's C harness, built and run natively (so that it cannot rot).

``tests/kernel_harness.c`` checks the kernel's loops, plans, thread pool and OS
layer without Python, against its own reference; ``scripts/cross_check.sh``
runs the same harness for Windows under Wine and for aarch64 under qemu. Here it
runs on this machine: as setup.py builds the kernel with GCC or Clang (the wide
loops through target attributes), with the wide loops as translation units of
their own (how MSVC builds them, here with GCC's per-ISA flags); and the whole
kernel compiles warning-free without threads.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import _c_harness
import numpy as np
import pytest

X86_64 = platform.machine().lower() in ("x86_64", "amd64")

pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or shutil.which("cc") is None,
    reason="needs a POSIX C compiler named cc (the harness is built by tests/_c_harness.py)",
)


def _build_and_run(tmp_path: Path, *extra: str, isa_units: bool = False) -> str:
    exe = tmp_path / "kernel_harness"
    _c_harness.build(["cc", "-pthread", *extra], exe, isa_units=isa_units)
    # 2**18-element jobs: every chunking and the pool, in a few seconds on a busy machine
    done = subprocess.run([str(exe), "18"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("kernel harness: ok (0 failures)"), done.stdout
    return done.stdout


def _threads_used(out: str) -> int:
    match = re.search(r"threads used at most (\d+)", out)
    assert match, out
    return int(match.group(1))


def test_harness_passes_as_setup_py_builds_the_kernel(tmp_path: Path) -> None:
    out = _build_and_run(tmp_path)
    assert re.search(r"loops: \d+ cases on baseline", out), out
    assert "== single-threaded byte for byte" in out
    if (os.cpu_count() or 1) >= 2:  # one core: the caller may finish before a worker runs
        assert _threads_used(out) >= 2, out
    if X86_64:
        # built by GCC, the harness also fails if GCC's __builtin_cpu_supports disagrees
        assert "os: cpu features:" in out
    if sys.platform.startswith("linux"):
        assert "machine load: read" in out


@pytest.mark.skipif(not X86_64, reason="the wide loops exist on x86-64 only")
def test_harness_passes_with_the_wide_loops_as_their_own_units(tmp_path: Path) -> None:
    """The MSVC construction (SK_ISA_UNITS, per-file ISA flags) with GCC's flags."""
    out = _build_and_run(tmp_path, isa_units=True)
    # the same instruction sets as the attribute build: both come from the same CPU check
    usable = re.search(r"loops: \d+ cases on ([a-z0-9 ]+):", out)
    assert usable and usable.group(1).startswith("baseline"), out


def test_kernel_compiles_without_threads_warning_free(tmp_path: Path) -> None:
    """-DSK_NO_THREADS: every kernel file, against Python and NumPy, with -Werror."""
    includes = [f"-I{np.get_include()}", f"-I{sysconfig.get_paths()['include']}"]
    for source in sorted(_c_harness.KERNEL.glob("*.c")):
        cmd = ["cc", "-std=gnu11", "-O2", "-fPIC", *_c_harness.WARNINGS, "-DSK_NO_THREADS"]
        cmd += [*includes, f"-I{_c_harness.KERNEL}", "-c", str(source)]
        done = subprocess.run([*cmd, "-o", str(tmp_path / "x.o")], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
