"""What this installation of arrayselect has: :func:`runtime_info` and :func:`show_runtime`.

In the spirit of ``numpy.show_runtime()``: which compiled pieces were built and
load (a build without a C compiler has neither, and runs the same calls through
NumPy and Python), the instruction set the NumPy kernel's loops use and the
best one this CPU runs, the threads and output pool the kernel may use, and
which array libraries are installed. Nothing here imports an array library
that is not loaded yet.
"""

from __future__ import annotations

import importlib.util
import platform
import sys
from collections.abc import Callable
from typing import TypedDict

import numpy as np

from arrayselect._base.settings import get_num_threads, get_pool_limit, num_threads_chosen
from arrayselect._base.version import __version__
from arrayselect._dispatch.registry import active_backend
from arrayselect._operations.fastpath import FASTCALL_MISSING

__all__ = ["KernelInfo", "RuntimeInfo", "TorchInfo", "runtime_info", "show_runtime"]

# The array libraries of the built-in backends (import name -> backend key).
_LIBRARIES = {"numpy": "numpy", "torch": "torch", "jax": "jax", "dask": "dask", "cupy": "cupy"}


class KernelInfo(TypedDict):
    """The NumPy backend's compiled kernel (see :func:`runtime_info`)."""

    built: bool
    missing: str | None
    isa: str
    isa_best: str
    isa_compiled: list[str]
    threads: int
    threads_chosen: bool
    pool_limit: int


class TorchInfo(TypedDict):
    """The torch backend's compiled and native pieces (see :func:`runtime_info`)."""

    recent_check: str | None
    recent_checks: dict[str, str | None]
    openmp: bool
    openmp_missing: str | None


class RuntimeInfo(TypedDict):
    """What :func:`runtime_info` returns."""

    arrayselect: str
    python: str
    platform: str
    numpy: str
    fastcall: bool
    fastcall_missing: str | None
    kernel: KernelInfo
    torch: TorchInfo | None
    libraries: dict[str, str]


def _library_state(module: str, key: str) -> str:
    if active_backend(key) is not None:
        return "backend loaded"
    if module in sys.modules:
        return "imported"
    return "installed" if importlib.util.find_spec(module) is not None else "not installed"


def _torch_info() -> TorchInfo | None:
    """The torch backend's pieces, if its module is loaded (torch is not imported here)."""
    backend = sys.modules.get("arrayselect.backends.torch_backend")
    if backend is None:
        return None
    return {
        "recent_check": backend.RECENT_CHECK,
        "recent_checks": {name: why for name, (_, why) in backend.RECENT_CHECKS.items()},
        "openmp": backend.OPENMP != 0,
        "openmp_missing": backend.OPENMP_MISSING,
    }


def runtime_info() -> RuntimeInfo:
    """What this installation has, as a dictionary.

    Returns
    -------
    dict
        ``arrayselect``, ``python``, ``platform`` and ``numpy`` (versions and
        the platform string); ``fastcall`` (whether the compiled fast-path hit
        path loaded) and ``fastcall_missing`` (why not, or ``None``);
        ``kernel``: ``built``, ``missing`` (why it did not load, or ``None``),
        ``isa`` (the instruction set its loops use: ``"baseline"``,
        ``"avx2"``, ``"avx512"``, or ``"none"`` without the kernel),
        ``isa_best`` (the best this CPU runs, as the kernel detects it),
        ``isa_compiled``, ``threads`` (:func:`arrayselect.get_num_threads`),
        ``threads_chosen`` (whether the user set it) and ``pool_limit``
        (:func:`arrayselect.get_pool_limit`, bytes); ``torch``, once the torch
        backend is loaded (else ``None``): ``recent_check`` (the design of the
        recent-call check its fast path uses, or ``None``), ``recent_checks`` (each
        design and ``None`` or why it is not used), ``openmp`` (whether large calls
        are split on torch's OpenMP threads) and ``openmp_missing``; ``libraries``: for each
        array library of a built-in backend, ``"backend loaded"``,
        ``"imported"``, ``"installed"`` or ``"not installed"``.

    Examples
    --------
    >>> import arrayselect as asel
    >>> info = asel.runtime_info()
    >>> sorted(info["libraries"])
    ['cupy', 'dask', 'jax', 'numpy', 'torch']
    >>> info["kernel"]["built"] == (info["kernel"]["missing"] is None)
    True
    """
    # The NumPy backend loads with the package; read, not imported: the core imports
    # no backend (they are found by name, as the registry finds them).
    kernel = sys.modules["arrayselect.backends.shared.kernel"]
    isa = kernel.isa_info()
    return {
        "arrayselect": __version__,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()} ({platform.platform()})",
        "numpy": np.__version__,
        "fastcall": FASTCALL_MISSING is None,
        "fastcall_missing": FASTCALL_MISSING,
        "kernel": {
            "built": kernel.KERNEL_MISSING is None,
            "missing": kernel.KERNEL_MISSING,
            "isa": str(isa["current"]),
            "isa_best": str(isa["best"]),
            "isa_compiled": [str(name) for name in isa["compiled"]],
            "threads": get_num_threads(),
            "threads_chosen": num_threads_chosen(),
            "pool_limit": get_pool_limit(),
        },
        "torch": _torch_info(),
        "libraries": {name: _library_state(name, key) for name, key in _LIBRARIES.items()},
    }


def show_runtime(echo: Callable[[str], None] = print) -> None:
    """Print what this installation has (:func:`runtime_info`, for people).

    Parameters
    ----------
    echo : callable, optional
        Called with each line (default :func:`print`).
    """
    info = runtime_info()
    k = info["kernel"]
    echo(f"arrayselect {info['arrayselect']}, Python {info['python']}, NumPy {info['numpy']}")
    echo(f"platform: {info['platform']}")
    if k["built"]:
        echo(
            f"numpy kernel: built; {k['isa']} loops (compiled: {', '.join(k['isa_compiled'])}; "
            f"best on this CPU: {k['isa_best']})"
        )
        chosen = "set by the user" if k["threads_chosen"] else "default"
        echo(
            f"  up to {k['threads']} threads ({chosen}); output pool limit {k['pool_limit']} bytes"
        )
    else:
        echo(f"numpy kernel: MISSING ({k['missing']})")
        echo("  NumPy selects run through numpy.where: same results, slower (docs/platforms.md)")
    if info["fastcall"]:
        echo("fast-path hit path: compiled (_fastcall)")
    else:
        echo(f"fast-path hit path: Python ({info['fastcall_missing']})")
    t = info["torch"]
    if t is not None:
        why_not = [f"{name}: {why}" for name, why in t["recent_checks"].items() if why]
        echo(
            f"torch backend: recent-call check {t['recent_check'] or 'none (signature cache)'}"
            + (f" (not used: {'; '.join(why_not)})" if why_not else "")
        )
        echo(
            "  large calls split on torch's OpenMP threads"
            if t["openmp"]
            else f"  large calls on the kernel's own threads ({t['openmp_missing']})"
        )
    echo("array libraries: " + ", ".join(f"{n} {s}" for n, s in info["libraries"].items()))
