"""Importing arrayselect, and calling it, leaves a process that forks as torch alone would.

GNU libgomp's threads do not survive ``fork``: a forked child whose parent had started
them waits forever in its next parallel region (``gomp_team_barrier_wait_end``). So
importing arrayselect must start none (no OpenMP region, no thread, no CUDA context),
and a select on the kernel, which may split on torch's OpenMP threads, must not leave
a child waiting for them. Each scenario runs in a fresh interpreter with a timeout: a
hang fails the test instead of blocking the suite. The oracle is the child finishing
with ``torch.where``'s answer (computed in the child), not arrayselect's word.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")

#: Seconds a scenario may take; a hang takes this long, then fails.
TIMEOUT = 120

# The parent's preamble: torch ops in the child that run on OpenMP threads (10^6
# elements: above torch's grain size, so split where torch has 2 or more threads).
_PARENT = """
import os, sys
import numpy as np, torch
torch.set_num_threads(2)  # a parallel op opens an OpenMP region even on one core
def threads():
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
def child_ops():
    a = torch.from_numpy(np.random.default_rng(0).random(10**6))
    m = a.reshape(1000, 1000)
    s = float((a + a).sum())
    p = m @ m
    w = torch.where(a > 0.5, a, 0.0)
    import arrayselect as asel
    r = asel.select(a > 0.5, a, 0.0)
    assert torch.equal(r, w) and s > 0 and p.shape == (1000, 1000)
    return 0
"""


def _run(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PARENT + code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


_FORK = """
pid = os.fork()
if pid == 0:
    os._exit(child_ops())
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


def test_import_starts_no_thread_and_no_cuda_context() -> None:
    out = _run(
        """
before = threads()
import arrayselect as asel
asel.select(torch.tensor([True, False]), torch.zeros(2), torch.ones(2))  # backend made
print(threads() - before, torch.cuda.is_initialized())
"""
    )
    assert out == ["0", "False"]


def test_fork_after_import() -> None:
    assert _run("import arrayselect\n" + _FORK) == ["0"]


def test_fork_after_a_kernel_select() -> None:
    # The kernel's split on torch's OpenMP threads (forced: no load guard, 2 threads,
    # no size threshold), then a fork: the child must not wait for those threads.
    out = _run(
        """
import arrayselect as asel
from arrayselect.backends import torch_backend
from arrayselect.backends.shared import kernel
kernel.set_parallel_threshold(0)
kernel.set_load_guard(False)
asel.set_num_threads(2)
a = torch.rand(10**6)
asel.select(a > 0.5, a, 0.0)
print(kernel.kernel_stats()["openmp_calls"] >= (1 if torch_backend.OPENMP else 0))
"""
        + _FORK
    )
    assert out == ["True", "0"]


def test_fork_after_a_parallel_torch_op_and_a_kernel_select() -> None:
    # torch alone hangs such a child (its own OpenMP threads are gone there); after a
    # kernel call, the fork guard lets them go before the fork, so the child runs.
    out = _run(
        """
import arrayselect as asel
from arrayselect.backends.shared import kernel
kernel.set_load_guard(False)
(torch.ones(10**6) + 1).sum()
a = torch.rand(10**6)
asel.select(a > 0.5, a, 0.0)
"""
        + _FORK
    )
    assert out == ["0"]


def test_fork_after_a_parallel_torch_op_with_one_thread_in_the_child() -> None:
    # After a parallel torch op the parent's OpenMP threads exist and a child's next
    # parallel op waits for them, arrayselect or not; DataLoader workers therefore run
    # torch on one thread. With arrayselect imported that still works.
    out = _run(
        """
(torch.ones(10**6) + 1).sum()
import arrayselect
pid = os.fork()
if pid == 0:
    torch.set_num_threads(1)
    os._exit(child_ops())
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""
    )
    assert out == ["0"]


@pytest.mark.parametrize("kernel_call", [False, True], ids=["import", "kernel-call"])
def test_fork_start_pool(kernel_call: bool) -> None:
    out = _run(
        f"""
import multiprocessing
import arrayselect as asel
if {kernel_call}:
    a = torch.rand(10**6)
    asel.select(a > 0.5, a, 0.0)
def work(i):
    return child_ops() + i
with multiprocessing.get_context("fork").Pool(2) as pool:
    print(sum(pool.map(work, range(4))))
"""
    )
    assert out == ["6"]


def test_first_calls_warn_nothing() -> None:
    """The torch backend's first-call probes (a ``torch.where`` per dtype, tensors of
    every dtype) make complex32 and, from torch 2.14, bcomplex32 tensors, which warn
    "experimental": the user asked for none, so none may reach them.
    """
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "always",  # not "error": the probes catch RuntimeError, which hid the warning
            "-c",
            "import torch, arrayselect as asel\n"
            "c = torch.tensor([True, False])\n"
            "r = asel.select(c, torch.ones(2), torch.zeros(2))\n"
            "n = asel.select_n(torch.tensor([0, 1]), torch.ones(2), torch.zeros(2))\n"
            "assert r.tolist() == [1.0, 0.0] and n.tolist() == [1.0, 0.0]\n",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
