"""Many threads at once: the answers of one thread, on a GIL build and a free-threaded one.

8 threads call :func:`~arrayselect.select`, :func:`~arrayselect.where`,
:func:`~arrayselect.select_n`, :func:`~arrayselect.select_cases` and
:func:`~arrayselect.apply_where` on NumPy arrays, on signatures all threads share
and on signatures of their own, ``out=`` included (each thread its own ``out``),
small calls (the core's signature cache and the kernel's prepared calls) and large
ones (the kernel's thread pool and output pool), while another thread keeps
replacing and clearing the caches (the signature caches, the family's memo). Every
result is compared with an oracle computed before the threads start (tests/oracle.py:
element by element, raw bytes; NumPy's own ``result_type`` for ``where``'s
promotion), and nothing may raise.

On a free-threaded CPython (``Py_GIL_DISABLED``) every compiled extension of
arrayselect must also leave the GIL off once imported (each declares
``Py_mod_gil``); :func:`test_extensions_keep_gil_off` checks that in a fresh
interpreter. On a GIL build the same threads run with the GIL's switching.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from oracle import bits_equal, oracle_select, oracle_select_cases, oracle_select_n

import arrayselect as asel
from arrayselect._base.caches import clear_all as forget_decisions
from arrayselect._dispatch import memo as _family_memo

THREADS = 8
ROUNDS = 40
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))

#: A case: ``run(out)`` makes one call (``out`` is the thread's own array, or None)
#: and the expected result, from the oracle.
Case = tuple[str, Callable[[Any], Any], np.ndarray, bool]


def _cases(seed: int, n: int, large: bool) -> list[Case]:
    """The calls one signature set makes: shapes depend on ``n`` (1 element to 8x10^4)."""
    rng = np.random.default_rng(seed)
    shape = (n // 4, 4) if n >= 4 else (n,)
    cond = rng.random(shape) < 0.5
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape[-1:]).astype(np.float32)  # broadcasts along rows
    i32 = rng.integers(-100, 100, size=shape, dtype=np.int32)
    which = rng.integers(0, 3, size=shape, dtype=np.int8)
    c2 = rng.random(shape) < 0.3
    bb = np.broadcast_to(b, shape)
    prom = np.result_type(np.int32, np.float32)
    two = np.full(shape, 2.5, dtype=np.float32)
    cases: list[Case] = [
        ("select", lambda out: asel.select(cond, a, b, out=out), oracle_select(cond, a, b), True),
        (
            "select scalar",
            lambda out: asel.select(cond, 2.5, a, out=out),
            oracle_select(cond, two, a),
            True,
        ),
        (
            "where",
            lambda out: asel.where(cond, i32, a),
            oracle_select(cond, i32.astype(prom), a.astype(prom)),
            False,
        ),
        (
            "select_n",
            lambda out: asel.select_n(which, a, bb, two, out=out),
            oracle_select_n(which, [a, bb, two]),
            True,
        ),
        (
            "select_cases",
            lambda out: asel.select_cases([cond, c2], [a, bb], two),
            oracle_select_cases([cond, c2], [a, bb], two),
            False,
        ),
        (
            "apply_where",
            lambda out: asel.apply_where(cond, (a,), lambda x: x * 2, lambda x: x - 1),
            oracle_select(cond, a * np.float32(2), a - np.float32(1)),
            False,
        ),
    ]
    return cases if not large else cases[:2] + cases[3:4]


def _churn(stop: threading.Event, errors: list[str]) -> None:
    """Replace and forget cached decisions while the callers run."""
    k = 0
    try:
        while not stop.is_set():
            k += 1
            x = np.arange(3 + k % 997, dtype=np.int16)  # distinct signatures evict slots
            got = asel.select(x > 7, x, np.int16(-1) * x)
            if not bits_equal(got, np.where(x > 7, x, -x)):
                errors.append(f"churn: wrong select at {x.shape}")
            if k % 50 == 0:
                forget_decisions()
                _family_memo.clear()
    except BaseException as exc:  # reported by the test
        errors.append(f"churn: {type(exc).__name__}: {exc}")


def _run_threads(case_sets: list[list[Case]]) -> tuple[list[str], int]:
    """Run thread ``t`` on ``case_sets[t % len]`` for ROUNDS rounds; (errors, calls)."""
    errors: list[str] = []
    calls = [0] * THREADS
    barrier = threading.Barrier(THREADS + 1)
    stop = threading.Event()

    def worker(t: int) -> None:
        cases = case_sets[t % len(case_sets)]
        outs = {name: np.empty_like(want) for name, _, want, with_out in cases if with_out}
        barrier.wait()
        try:
            for r in range(ROUNDS):
                for name, run, want, with_out in cases:
                    out = outs[name] if with_out and (r + t) % 2 else None
                    if out is not None:
                        out.fill(0)
                    got = run(out)
                    calls[t] += 1
                    if out is not None and got is not out:
                        errors.append(f"thread {t} {name}: out= not returned")
                    if not bits_equal(np.asarray(got), want):
                        errors.append(f"thread {t} {name}: wrong result (round {r})")
        except BaseException as exc:  # reported by the test
            errors.append(f"thread {t}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    churn = threading.Thread(target=_churn, args=(stop, errors))
    for th in threads:
        th.start()
    churn.start()
    barrier.wait()
    for th in threads:
        th.join()
    stop.set()
    churn.join()
    return errors, sum(calls)


def test_shared_signatures_small() -> None:
    """All threads on the same small signatures: one cached plan each, hit by all."""
    errors, calls = _run_threads([_cases(1, 8, large=False)])
    assert errors == [], errors[:5]
    assert calls == THREADS * ROUNDS * 6


def test_distinct_signatures_small() -> None:
    """Each thread on signatures of its own (other shapes): slots filled concurrently."""
    errors, _ = _run_threads([_cases(10 + t, 4 * (t + 1), large=False) for t in range(THREADS)])
    assert errors == [], errors[:5]


def test_one_element_calls() -> None:
    """1-element calls: the shortest hit path, most contended."""
    errors, _ = _run_threads([_cases(3, 1, large=False), _cases(4, 2, large=False)])
    assert errors == [], errors[:5]


def test_large_calls_use_the_pools() -> None:
    """Calls above the kernel's thread-pool threshold (8x10^4 elements), 2 kernel threads:
    jobs of several callers meet in the thread pool and in the output pool."""
    previous = asel.get_num_threads()
    asel.set_num_threads(2)
    try:
        errors, _ = _run_threads([_cases(5, 80_000, large=True), _cases(6, 80_000, large=True)])
    finally:
        asel.set_num_threads(previous)
    assert errors == [], errors[:5]


def test_settings_change_while_calling() -> None:
    """set_num_threads and set_pool_limit from one thread while others select."""
    stop = threading.Event()
    previous = (asel.get_num_threads(), asel.get_pool_limit())

    def toggle() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            asel.set_num_threads(1 + k % 2)
            asel.set_pool_limit((k % 3) << 20)

    th = threading.Thread(target=toggle)
    th.start()
    try:
        errors, _ = _run_threads([_cases(7, 80_000, large=True), _cases(8, 16, large=False)])
    finally:
        stop.set()
        th.join()
        asel.set_num_threads(previous[0])
        asel.set_pool_limit(previous[1])
    assert errors == [], errors[:5]


@pytest.mark.skipif(not FREE_THREADED, reason="a GIL build of CPython (no Py_GIL_DISABLED)")
def test_extensions_keep_gil_off() -> None:
    """Importing arrayselect and each of its compiled extensions leaves the GIL off."""
    # Every compiled module in the installed package, found by file name: importing
    # a package to look for one (find_spec) could import torch on the way.
    code = (
        "import importlib, pathlib, sys, sysconfig\n"
        "import arrayselect, numpy as np\n"
        "root = pathlib.Path(arrayselect.__file__).parent\n"
        "suffix = sysconfig.get_config_var('EXT_SUFFIX')\n"
        "done = []\n"
        "for path in sorted(root.rglob('*' + suffix)):\n"
        "    rel = path.relative_to(root.parent).as_posix()[: -len(suffix)]\n"
        "    name = rel.replace('/', '.')\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as exc:  # a package that needs torch, absent here\n"
        "        if 'torch' not in str(exc):\n"
        "            raise\n"
        "        continue\n"
        "    done.append(name)\n"
        "arrayselect.select(np.array([True]), np.array([1.0]), 2.0)\n"
        "print(','.join(done), sys._is_gil_enabled())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    imported, gil = done.stdout.split()
    assert "arrayselect._dispatch._fastcall" in imported.split(","), done.stdout
    assert "arrayselect.backends.shared._select_kernel" in imported.split(","), done.stdout
    assert gil == "False", (imported, done.stderr)
