"""The NumPy kernel's thread pool as a citizen of the process.

When a job is split (a cost model of its size and layout, and the room other
processes leave on the machine; never the timings of earlier calls), worker
threads and signals, fork, threadpoolctl, the bounded idle spin, shutdown.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import numpy as np
import pytest
from arrayselect.backends.shared import _select_kernel as K
from arrayselect.backends.shared import kernel as numpy_kernel

import arrayselect as asel

pytestmark = pytest.mark.skipif(not K.HAVE_THREADS, reason="the kernel has no threads here")

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    threads = asel.get_num_threads()
    yield
    asel.set_num_threads(threads)
    numpy_kernel.set_parallel_threshold(None)
    numpy_kernel.set_load_guard(True)


# The start of a child process whose kernel has one worker thread running.
WORKER_RUNNING = """
        import os, numpy as np, arrayselect as asel
        from arrayselect.backends.shared import kernel
        asel.set_num_threads(2)
        kernel.set_parallel_threshold(0)
        kernel.set_load_guard(False)
        c = np.random.rand(10**6) < 0.5
        a = np.random.rand(10**6).astype(np.float32)
        # the threads before the worker (an emulator such as qemu-user runs one of its own)
        tasks = f"/proc/{os.getpid()}/task"
        threads_before = {int(t) for t in os.listdir(tasks)} if os.path.isdir(tasks) else set()
        asel.select(c, a, a)                       # starts the worker
        assert kernel._k.pool_workers() == 1
"""


def _run(code: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARRAYSELECT_")}
    # NumPy's BLAS starts threads of its own, which do not block signals
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, *args, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def _threads(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> int:
    shape = np.broadcast_shapes(c.shape, a.shape, b.shape)
    return int(numpy_kernel.explain(c, a, b, None, shape, None, None, None)["threads"])


def test_cost_model_weighs_bytes_not_elements() -> None:
    asel.set_num_threads(4)
    n = numpy_kernel.get_parallel_threshold()
    c = RNG.random(n) < 0.5
    f4 = RNG.random(n, dtype=np.float32)
    assert _threads(c, f4, f4) == 2  # exactly the threshold: two halves
    assert _threads(c[: n // 2], f4[: n // 2], f4[: n // 2]) == 1
    big = RNG.random(4 * n, dtype=np.float32)
    cb = RNG.random(4 * n) < 0.5
    assert _threads(cb, big, big) == 4
    u1 = big.view(np.uint8)[: 4 * n]  # as many elements, a quarter of the value bytes
    assert _threads(cb, u1, u1) == 2
    f8 = RNG.random(n)  # twice the bytes per element
    assert _threads(c, f8, f8) == 3
    # step-2 views drag whole cache lines: more bytes than the same elements contiguous
    f4_2 = RNG.random(2 * n, dtype=np.float32)
    c2 = RNG.random(2 * n) < 0.5
    assert _threads(c2[: n // 2 * 2 : 2], f4_2[: n // 2 * 2 : 2], f4_2[: n // 2 * 2 : 2]) == 1
    assert _threads(c2[::2], f4_2[::2], f4_2[::2]) >= 2
    numpy_kernel.set_parallel_threshold(0)
    assert _threads(c[:1000], f4[:1000], f4[:1000]) == 4


def test_same_call_same_decision() -> None:
    """No reaction to timings: every call of a parallel-sized job is split."""
    asel.set_num_threads(2)
    numpy_kernel.set_load_guard(False)
    n = 8 * numpy_kernel.get_parallel_threshold()  # enough to wake sleeping workers for
    c = RNG.random(n) < 0.5
    a = RNG.random(n, dtype=np.float32)
    before = numpy_kernel.kernel_stats()["threaded_calls"]
    for _ in range(50):
        asel.select(c, a, a)
    assert numpy_kernel.kernel_stats()["threaded_calls"] == before + 50


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the room guard reads /proc/stat")
def test_room_guard_gives_fewer_threads_while_other_processes_hold_every_core() -> None:
    code = """
        import os, subprocess, sys, time, numpy as np, arrayselect as asel
        from arrayselect.backends.shared import kernel
        cores = len(os.sched_getaffinity(0))
        asel.set_num_threads(cores)
        c = np.random.rand(4 * 10**6) < 0.5
        a = np.random.rand(4 * 10**6).astype(np.float32)
        asel.select(c, a, a)
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(cores)]
        try:
            end = time.monotonic() + 1.5
            while time.monotonic() < end:
                asel.select(c, a, a)
            s = kernel.kernel_stats()
        finally:
            for h in hogs:
                h.kill()
        print(cores, s["load_guard"], s["threads_allowed"], s["guarded_calls"] > 0,
              s["others_busy_cores"] > 0.5)
    """
    cores, guard, allowed, guarded, busy = _run(code).split()
    if guard == "0":
        pytest.skip("no /proc/stat to sample here")
    if cores == "1":
        pytest.skip("one core: nothing to limit")
    assert int(allowed) < int(cores) and guarded == "True" and busy == "True"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/task")
def test_workers_block_asynchronous_signals() -> None:
    """A process-directed signal that the main thread waits for with sigwait must reach it:
    a worker that did not block it would take the default action and end the process."""
    code = (
        WORKER_RUNNING
        + """
        import signal, time
        me = os.getpid()

        def masks():
            found = {}
            for tid in os.listdir(f"/proc/{me}/task"):
                with open(f"/proc/{me}/task/{tid}/status") as f:
                    line = next(x for x in f if x.startswith("SigBlk"))
                found[int(tid)] = int(line.split()[1], 16)
            return found

        # a thread that has not started running yet has every signal blocked (glibc): wait
        # until the worker runs
        everything = ~((1 << (signal.SIGKILL - 1)) | (1 << (signal.SIGSTOP - 1))) & (2**64 - 1)
        deadline = time.monotonic() + 5
        while True:
            found = masks()
            # the kernel's worker: the thread the first select started
            worker = next(m for t, m in found.items() if t not in threads_before)
            if worker != everything or time.monotonic() > deadline:
                break
            asel.select(c, a, a)
            time.sleep(0.01)
        masks = found
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGCHLD,
                    signal.SIGALRM):
            assert worker >> (sig - 1) & 1, sig
        for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT):
            assert not worker >> (sig - 1) & 1, sig
        assert masks[me] == 0
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        os.kill(me, signal.SIGUSR1)
        print(signal.sigwait({signal.SIGUSR1}) == signal.SIGUSR1)
    """
    )
    assert _run(code) == "True"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_context_children_run_large_selects_on_threads() -> None:
    code = """
        import multiprocessing as mp, numpy as np, arrayselect as asel
        from arrayselect.backends.shared import kernel

        def setup():
            asel.set_num_threads(2)
            kernel.set_parallel_threshold(0)
            kernel.set_load_guard(False)

        setup()
        n = 2 * 10**6
        c = np.random.rand(n) < 0.5
        a = np.random.rand(n).astype(np.float32)
        expected = np.where(c, a, -a)
        assert np.array_equal(asel.select(c, a, -a), expected)   # the parent's pool runs

        def child(_):
            before = kernel.kernel_stats()["threaded_calls"]
            ok = np.array_equal(asel.select(c, a, -a), expected)
            return ok, kernel.kernel_stats()["threaded_calls"] - before

        with mp.get_context("fork").Pool(2, initializer=setup) as pool:
            results = pool.map_async(child, range(6)).get(timeout=60)
        print(all(ok for ok, _ in results), all(t == 1 for _, t in results))
        assert np.array_equal(asel.select(c, a, -a), expected)   # and the parent's again
    """
    assert _run(code) == "True True"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_pool_stops_before_fork() -> None:
    """os.fork() finds the kernel's workers joined (Python >= 3.12 warns when a process with
    threads forks: -W error makes that a failure here), and both sides select afterwards."""
    code = (
        WORKER_RUNNING
        + """
        pid = os.fork()
        if pid == 0:
            ok = np.array_equal(asel.select(c, a, -a), np.where(c, a, -a))
            os._exit(0 if ok and kernel._k.pool_workers() == 1 else 1)
        workers_after_fork = kernel._k.pool_workers()
        _, status = os.waitpid(pid, 0)
        asel.select(c, a, a)
        print(workers_after_fork, os.waitstatus_to_exitcode(status), kernel._k.pool_workers())
    """
    )
    assert _run(code, "-W", "error::DeprecationWarning").split() == ["0", "0", "1"]


def test_isolated_calls_run_on_the_caller_loops_on_threads() -> None:
    """Between the threshold and 8x it, a call split only when it is part of a loop (the last
    call of that size ended less than the workers' spin ago): waking sleeping workers costs
    more than such a job saves. Larger jobs are split anyway."""
    asel.set_num_threads(2)
    numpy_kernel.set_load_guard(False)
    n = 2 * numpy_kernel.get_parallel_threshold()
    c = RNG.random(n) < 0.5
    a = RNG.random(n, dtype=np.float32)
    pause = 10 * K.stats()["worker_spin_s"] + 0.001
    for _ in range(3):
        time.sleep(pause)
        stats = numpy_kernel.kernel_stats()
        asel.select(c, a, a)
        after = numpy_kernel.kernel_stats()
        assert after["cold_calls"] == stats["cold_calls"] + 1
        assert after["threaded_calls"] == stats["threaded_calls"]
    stats = numpy_kernel.kernel_stats()
    for _ in range(20):
        asel.select(c, a, a)  # the first runs here, the rest are a loop
    # 19 when nothing interrupts the loop; a busy CI machine may deschedule this
    # process for longer than the spin between two calls, which makes one call cold.
    assert numpy_kernel.kernel_stats()["threaded_calls"] >= stats["threaded_calls"] + 15
    big = RNG.random(8 * numpy_kernel.get_parallel_threshold(), dtype=np.float32)
    cb = RNG.random(big.size) < 0.5
    time.sleep(pause)
    stats = numpy_kernel.kernel_stats()
    asel.select(cb, big, big)
    assert numpy_kernel.kernel_stats()["threaded_calls"] == stats["threaded_calls"] + 1


def test_shutdown_pool_and_restart() -> None:
    asel.set_num_threads(2)
    numpy_kernel.set_parallel_threshold(0)
    numpy_kernel.set_load_guard(False)
    c = RNG.random(10**6) < 0.5
    a = RNG.random(10**6, dtype=np.float32)
    asel.select(c, a, a)
    assert K.pool_workers() >= 1  # earlier tests may have started more
    numpy_kernel.shutdown_pool()
    assert K.pool_workers() == 0
    before = numpy_kernel.kernel_stats()["threaded_calls"]
    np.testing.assert_array_equal(asel.select(c, a, -a), np.where(c, a, -a))
    assert numpy_kernel.kernel_stats()["threaded_calls"] == before + 1
    assert K.pool_workers() == 1


def test_idle_workers_stop_spinning() -> None:
    """After a parallel call the worker spins for at most its bound, then sleeps: the
    process uses (almost) no CPU while the program is idle."""
    asel.set_num_threads(2)
    numpy_kernel.set_parallel_threshold(0)
    numpy_kernel.set_load_guard(False)
    c = RNG.random(10**6) < 0.5
    a = RNG.random(10**6, dtype=np.float32)
    spin = K.stats()["worker_spin_s"]
    assert 0 < spin <= 1e-3
    asel.select(c, a, a)
    time.sleep(0.01)
    cpu = time.process_time()
    time.sleep(0.3)
    assert time.process_time() - cpu < 0.03


def test_threadpoolctl_sees_and_limits_the_kernel() -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    numpy_kernel.register_threadpoolctl()
    asel.set_num_threads(2)
    infos = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "arrayselect"]
    assert len(infos) == 1 and infos[0]["num_threads"] == 2
    assert infos[0]["prefix"] == "_select_kernel"
    with threadpoolctl.threadpool_limits(limits=1):
        assert asel.get_num_threads() == 1 and K.get_num_threads() == 1
    assert asel.get_num_threads() == 2 and K.get_num_threads() == 2
    with threadpoolctl.threadpool_limits(limits=1, user_api="arrayselect"):
        assert K.get_num_threads() == 1
    assert K.get_num_threads() == 2


def test_items_larger_than_a_chunk_still_split() -> None:
    """A job whose every element moves more than the largest chunk (1 MiB) is split in
    chunks of whole elements, not of none (whose claiming never ended). Only the raw
    entry takes such dtypes; then/else overlap in one buffer, and nothing runs."""
    asel.set_num_threads(2)
    numpy_kernel.set_load_guard(False)
    size, n = 360_000, 4096
    base = np.arange(2 * size, dtype=np.uint8)
    view = np.ndarray((n,), np.dtype(f"V{size}"), buffer=base, strides=(1,))
    c = np.arange(n) % 2 == 0
    plan = numpy_kernel.explain(c, view, view, None, (n,), None, None, None)
    assert plan["threads"] == 2
    assert 1 <= plan["chunk"] < n


def test_chunks_of_an_ordinary_job() -> None:
    asel.set_num_threads(2)
    numpy_kernel.set_load_guard(False)
    n = 10**6
    c = RNG.random(n) < 0.5
    a = RNG.random(n, dtype=np.float32)
    plan = numpy_kernel.explain(c, a, a, None, (n,), None, None, None)
    # 8 chunks per thread, each of whole cache lines of output
    assert plan["threads"] == 2 and plan["chunk"] % 64 == 0
    assert n // 16 <= plan["chunk"] <= n // 16 + 64
    small = numpy_kernel.explain(c[:100], a[:100], a[:100], None, (100,), None, None, None)
    assert small["threads"] == 1 and small["chunk"] == 100


def test_pool_info_while_the_collector_frees_a_pooled_output() -> None:
    """pool_info() builds its dict after releasing the pool's lock: building it may run
    the garbage collector, which may free an output from the pool (a deadlock before)."""
    code = """
        import faulthandler, gc, numpy as np, arrayselect as asel
        from arrayselect.backends.shared import kernel
        faulthandler.dump_traceback_later(60, exit=True)
        n = (32 << 20) // 4  # the smallest output that comes from the pool
        out = asel.select(np.ones(n, bool), np.ones(n, np.float32), np.zeros(n, np.float32))
        gc.disable()
        cycle = [out]
        cycle.append(cycle)
        del out, cycle
        holder = [{} for _ in range(500)]  # no free dicts left: the next one is a GC allocation
        gc.set_threshold(1)
        gc.enable()
        print(kernel.pool_info()["limit"] > 0)
    """
    assert _run(code) == "True"
