"""The compiled Select kernel of the NumPy backend: diagnostics and tuning knobs.

The kernel (``arrayselect.backends.shared._select_kernel``, built from
``backends/shared/_kernel/`` by the package's own build) selects on raw
bits per item size, so every NumPy and ``ml_dtypes`` dtype goes through it.

The kernel is optional: a build without a C compiler, or an extension that does
not load, leaves :data:`KERNEL_MISSING` saying why, and the backend then runs
every call through NumPy's own functions (:mod:`.numpy_route`) with the same
answers. This module stays importable then: the settings it subscribes to have
nothing to act on, :func:`isa_info`, :func:`pool_info` and :func:`kernel_stats`
report an empty kernel, the tuning knobs do nothing, and :data:`kernel_select`,
:data:`explain` and :func:`set_isa` raise ``RuntimeError`` (there is no kernel to
run or describe). ``arrayselect.show_runtime()`` says which build this is.

Its loops are compiled for several instruction sets and the best one this CPU
supports runs (:func:`isa_info`). Jobs that move enough bytes are split
across a persistent pool of threads, as many as
:func:`arrayselect.set_num_threads` allows and the other processes on the
machine leave room for. Large outputs may come from a bounded pool of freed
blocks (:func:`arrayselect.set_pool_limit`, :func:`arrayselect.release_memory`).
Those user settings live in the core (:func:`arrayselect.plugin.settings.on_change`);
this module subscribes the kernel to them and offers what tests and benchmarks
look at.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
import warnings
from typing import Any

from arrayselect.plugin import settings

try:
    _k: Any = importlib.import_module("arrayselect.backends.shared._select_kernel")
except ImportError as _exc:
    _k = None
    #: Why the compiled kernel is missing (``None`` when it is loaded).
    KERNEL_MISSING: str | None = f"{type(_exc).__name__}: {_exc}"
else:
    KERNEL_MISSING = None

__all__ = [
    "KERNEL_MISSING",
    "KernelMissingWarning",
    "explain",
    "get_parallel_threshold",
    "get_stream_threshold",
    "isa_info",
    "kernel_prepared",
    "kernel_raw_signature",
    "kernel_select",
    "kernel_signature",
    "kernel_stats",
    "pool_info",
    "register_threadpoolctl",
    "set_isa",
    "set_load_guard",
    "set_openmp",
    "set_parallel_threshold",
    "set_stream_threshold",
    "shutdown_pool",
    "warn_kernel_missing",
]

#: ``kernel_select(cond, then, else_, out, out_shape, cond_dims, then_dims,
#: else_dims[, max_threads[, on_openmp]])``: the compiled entry point; ``*_dims`` are
#: the plan's :attr:`~arrayselect.plugin.SelectPlan.dims` (see the C source for the
#: contract); a true ``on_openmp`` splits the call on the runtime of :func:`set_openmp`.
kernel_select: Any

#: ``explain(...)`` with the arguments of :data:`kernel_select`: how the kernel
#: would run the call (coalesced shape, strides, inner loop and the instruction
#: set it was compiled for, whether it streams its stores past the caches
#: (:func:`get_stream_threshold`), tiles, the threads its cost earns while the workers
#: are awake and the machine has room, and the output elements per chunk they
#: claim), without running it. For tests and benchmarks.
explain: Any

#: ``kernel_signature(x)``: a NumPy array's dtype, shape, strides and writeable flag
#: as one small hashable key (see ``sk_prepared.c``), the NumPy backend's
#: :meth:`~arrayselect.plugin.Backend.signature`; ``None`` in a build without the
#: kernel, where the backend reads the attributes.
kernel_signature: Any

#: The same signature in C, the NumPy backend's
#: :attr:`~arrayselect.plugin.Backend.raw_signature` (``None`` without the kernel).
kernel_raw_signature: Any

#: ``kernel_prepared(out_shape, cond_dims, then_dims, else_dims, dtype, run, decision)``:
#: a validated select made one compiled callable, ``call(cond, then, else_[, out])``,
#: for the core's :class:`~arrayselect.plugin.SignatureCache` (see ``sk_prepared.c``);
#: ``None`` without the kernel.
kernel_prepared: Any


def _no_kernel(*args: Any) -> Any:
    """What the kernel's entry points do in a build without it."""
    raise RuntimeError(
        f"arrayselect's compiled NumPy kernel is not available ({KERNEL_MISSING}); "
        "NumPy selects run through numpy.where (see docs/platforms.md)"
    )


if _k is None:
    kernel_select = explain = _no_kernel
    kernel_signature = kernel_raw_signature = kernel_prepared = None
else:
    kernel_select = _k.select
    explain = _k.explain
    kernel_signature = _k.signature
    kernel_raw_signature = _k.RAW_SIGNATURE
    kernel_prepared = _k.Prepared


def get_parallel_threshold() -> int:
    """Size from which the kernel splits a job across threads.

    Returns
    -------
    int
        In float32 elements with a bool cond (13 bytes moved each); a job is
        split when its loops move at least as many bytes, whatever its dtypes
        and layout. The measured default unless :func:`set_parallel_threshold`
        changed it; 0 without the kernel.
    """
    return 0 if _k is None else int(_k.get_parallel_min())


def set_parallel_threshold(n: int | None) -> None:
    """Set the size from which jobs are split across threads.

    Parameters
    ----------
    n : int or None
        Float32 elements with a bool cond (see :func:`get_parallel_threshold`);
        ``None`` restores the measured default. Meant for benchmarks and tests.
    """
    if _k is not None:
        _k.set_parallel_min(int(_k.DEFAULT_PARALLEL_MIN) if n is None else int(n))


def get_stream_threshold() -> int:
    """Bytes a job moves from which the kernel streams its output past the caches.

    Returns
    -------
    int
        A contiguous job (then, else and out contiguous or broadcast along
        rows of 4 KiB or more, a bool cond, items of 1 to 8 bytes) whose loops
        move at least this many bytes (cond, then, else and out together) writes
        its output with non-temporal stores on AVX2 and AVX-512, which skip
        reading each output line from memory first. The default is the size of
        the CPU's last-level cache (32 MiB where the OS does not say) unless
        :func:`set_stream_threshold` changed it; ``explain()["stores"]`` says
        which stores a call would use. 0 without the kernel.
    """
    return 0 if _k is None else int(_k.get_stream_min())


def set_stream_threshold(n: int | None) -> None:
    """Set the bytes moved from which outputs are streamed past the caches.

    Parameters
    ----------
    n : int or None
        Bytes (see :func:`get_stream_threshold`); ``None`` restores the
        default. 0 streams every contiguous job that can; a very large value
        never streams. Meant for benchmarks and tests.
    """
    if _k is not None:
        _k.set_stream_min(int(_k.DEFAULT_STREAM_MIN) if n is None else int(n))


def set_load_guard(on: bool) -> None:
    """Whether the cores other processes keep busy limit the kernel's threads.

    On by default (where ``/proc/stat`` exists): a job is given no more threads
    than there are cores the rest of the machine leaves free, with hysteresis.
    Benchmarks and tests that must see threads turn it off. Without the kernel
    this does nothing.
    """
    if _k is not None:
        _k.set_load_guard(bool(on))


def set_openmp(address: int) -> None:
    """Split calls marked ``on_openmp`` on an OpenMP runtime's threads.

    Parameters
    ----------
    address : int
        The address of the runtime's ``GOMP_parallel`` (GNU libgomp's entry point,
        which LLVM's libomp provides too); 0 for none: every call on the kernel's
        own pool. The PyTorch backend passes the runtime torch's CPU ops run on, so
        that a select between torch ops runs on the threads those ops left spinning
        instead of competing with them for the cores (``docs/torch.md``). Without the
        kernel this does nothing.
    """
    if _k is not None:
        _k.set_openmp(int(address))


def shutdown_pool() -> None:
    """Stop and join the kernel's worker threads; the next large select starts them again.

    Called automatically before ``os.fork()``, so that a process that forks
    is single-threaded as far as the kernel is concerned. Without the kernel
    this does nothing.
    """
    if _k is not None:
        _k.shutdown_pool()


def isa_info() -> dict[str, Any]:
    """The instruction sets of the kernel's loops.

    The loops are compiled for the baseline of the build and, on x86-64 with
    GCC or Clang, for AVX2 and AVX-512; the best one this CPU supports is used
    unless ``ARRAYSELECT_CPU`` (``baseline``, ``avx2`` or ``avx512``, read at
    import) or :func:`set_isa` asks for a lower one.

    Returns
    -------
    dict
        ``current`` (the instruction set in use), ``best`` (the best one this
        CPU supports), ``usable`` and ``compiled`` (lists of names). Without
        the kernel: ``current`` and ``best`` are ``"none"``, the lists empty.
    """
    if _k is None:
        return {"current": "none", "best": "none", "usable": [], "compiled": []}
    info: dict[str, Any] = _k.isa_info()
    return info


def set_isa(name: str) -> None:
    """Use the loops compiled for ``name`` from the next call on (tests, benchmarks).

    Parameters
    ----------
    name : str
        ``"baseline"``, ``"avx2"`` or ``"avx512"``: one of ``isa_info()["usable"]``.

    Raises
    ------
    ValueError
        If ``name`` is unknown, not compiled in, or not supported by this CPU.
    RuntimeError
        Without the kernel.
    """
    if _k is None:
        _no_kernel(name)
    _k.set_isa(name)


def kernel_stats() -> dict[str, int]:
    """Counters of the compiled kernel since import.

    Returns
    -------
    dict
        ``calls`` (selects run by the kernel), ``threaded_calls`` (those split
        across threads), ``guarded_calls`` (large enough to split, but given
        fewer threads because other processes kept the cores busy),
        ``cold_calls`` (large enough to split, but run on the calling thread
        because the workers were asleep and the job too small to repay waking
        them; the call wakes them for the next one),
        ``temporary_calls`` (computed into a temporary because ``out``
        partially overlapped an input), and the room guard's state: ``load_guard`` (1 if on and
        working here), ``others_busy_cores`` (smoothed), ``threads_allowed``,
        ``room_samples`` and ``room_changes``. Empty without the kernel.
    """
    if _k is None:
        return {}
    stats: dict[str, int] = _k.stats()
    return stats


def pool_info() -> dict[str, int]:
    """State of the output pool.

    Returns
    -------
    dict
        ``limit`` and ``cached_bytes`` (bytes), ``min_block`` (the smallest
        output that goes through the pool, bytes), ``cached_blocks``, and
        ``hits`` / ``misses`` (such outputs that did / did not reuse a block).
        Empty without the kernel (it keeps no blocks).
    """
    if _k is None:
        return {}
    info: dict[str, int] = _k.pool_info()
    return info


_threadpoolctl_registered = False


def register_threadpoolctl() -> None:
    """Let threadpoolctl see and limit the kernel's threads (``user_api="arrayselect"``).

    threadpoolctl finds thread pools by the shared objects loaded in the
    process and the controllers it knows; this registers one for the kernel.
    ``threadpool_limits(1)`` then also limits the kernel, through
    :func:`arrayselect.set_num_threads` (so :func:`arrayselect.get_num_threads`
    agrees, and the limit counts as the user's choice). Called at import when
    threadpoolctl is already imported; idempotent.

    Raises
    ------
    ImportError
        If threadpoolctl is not installed (it is optional).
    RuntimeError
        Without the kernel (there are no threads to limit).
    """
    global _threadpoolctl_registered
    if _k is None:
        _no_kernel()
    if _threadpoolctl_registered:
        return
    threadpoolctl = importlib.import_module("threadpoolctl")  # optional: not a dependency
    base: Any = threadpoolctl.LibController

    class ArraySelectController(base):  # type: ignore[misc]
        user_api = "arrayselect"
        internal_api = "arrayselect"
        filename_prefixes = ("_select_kernel",)
        check_symbols = ("arrayselect_get_num_threads", "arrayselect_set_num_threads")

        def get_num_threads(self) -> int:
            return int(self.dynlib.arrayselect_get_num_threads())

        def set_num_threads(self, num_threads: int) -> None:
            settings.set_num_threads(max(1, min(int(num_threads), settings.MAX_THREADS)))

        def get_version(self) -> str:
            return importlib.metadata.version("arrayselect")

    threadpoolctl.register(ArraySelectController)
    _threadpoolctl_registered = True


if _k is not None:
    settings.on_change(_k.set_num_threads, _k.set_pool_limit, _k.release_pool)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_k.shutdown_pool)
    if "threadpoolctl" in sys.modules:
        register_threadpoolctl()


class KernelMissingWarning(RuntimeWarning):
    """arrayselect runs without its compiled NumPy kernel: same answers, slower."""


# No figure here: a warning cannot say on which machine, at which load and when it was
# measured, so it points to the page whose figures say so.
_COST = (
    "large selects cost what numpy.where costs, small ones some microseconds more, and "
    "the kernel is usually several times faster than both (measured figures, with their "
    "machine and load: docs/platforms.md, 'How much slower')"
)

_warned = False


def warn_kernel_missing() -> None:
    """Warn, once per process, that a NumPy select runs without the kernel.

    Called where a select would have run the kernel; does nothing after the
    first call, with the kernel present, or with ``ARRAYSELECT_KERNEL_WARNING=0``.
    """
    global _warned
    if _warned or KERNEL_MISSING is None:
        return
    _warned = True
    if os.environ.get("ARRAYSELECT_KERNEL_WARNING", "1") == "0":
        return
    warnings.warn(
        f"arrayselect runs without its compiled NumPy kernel ({KERNEL_MISSING}). "
        "NumPy selects give the same results through numpy.where and Python, but "
        f"slower: {_COST}. To get the kernel, install a C compiler (Linux: gcc and the "
        "Python headers, e.g. `apt install gcc python3-dev`; macOS: `xcode-select "
        "--install`; Windows: Visual Studio Build Tools' C++ workload) and reinstall "
        "arrayselect (`pip install --force-reinstall --no-deps arrayselect`); "
        "`arrayselect.show_runtime()` says what is present. Silence this warning with "
        "ARRAYSELECT_KERNEL_WARNING=0 or "
        "warnings.filterwarnings('ignore', message='arrayselect runs without').",
        KernelMissingWarning,
        stacklevel=2,
    )
