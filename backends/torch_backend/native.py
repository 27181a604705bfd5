"""libtorch's native entry points the torch backend uses, found at run time.

Neither needs libtorch's headers nor a link to it: the addresses come from the
libraries torch has loaded, through ``ctypes``.

* :func:`aoti_readers`: the C functions libtorch exports for AOTInductor that read
  a tensor's dtype, device, layout and sizes (``aoti_torch_get_*``), for the
  recent-call check (:mod:`.recent`, which verifies them).
* :func:`openmp_parallel`: ``GOMP_parallel`` of the OpenMP runtime torch's CPU ops
  run on, for the kernel (:func:`~arrayselect.backends.shared.kernel.set_openmp`).
* :func:`openmp_release`: that runtime's ``omp_pause_resource_all``, which lets the
  calling thread's OpenMP threads go, for the fork guard.

Looking these up runs nothing of the runtime: no OpenMP region, no thread.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
from collections.abc import Callable

import torch

__all__ = ["AOTI_READERS", "aoti_readers", "libtorch_cpu", "openmp_parallel", "openmp_release"]

#: The AOTI readers, in the order :func:`aoti_readers` returns them.
AOTI_READERS = ("dtype", "device_type", "device_index", "layout", "dim", "sizes")


def libtorch_cpu() -> ctypes.CDLL:
    """libtorch's CPU library, as torch loaded it.

    Raises
    ------
    OSError
        If torch's ``lib`` folder has none (a build laid out otherwise).
    """
    lib_dir = os.path.join(os.path.dirname(torch.__file__), "lib")
    names = ("libtorch_cpu.so", "libtorch_cpu.dylib", "torch_cpu.dll")
    paths = [path for name in names for path in glob.glob(os.path.join(lib_dir, name))]
    if not paths:
        raise OSError(f"no libtorch_cpu in {lib_dir}")
    return ctypes.CDLL(paths[0])


def _address(lib: ctypes.CDLL, name: str) -> int:
    """The address of C function ``name`` in ``lib`` or its dependencies.

    Raises AttributeError if there is none.
    """
    return int(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0)


def aoti_readers() -> tuple[int, ...]:
    """The addresses of libtorch's ``aoti_torch_get_<name>`` for each of :data:`AOTI_READERS`.

    Raises
    ------
    OSError, AttributeError
        If libtorch or one of the functions is missing.
    """
    lib = libtorch_cpu()
    return tuple(_address(lib, f"aoti_torch_get_{name}") for name in AOTI_READERS)


def openmp_parallel() -> tuple[int, str | None]:
    """``GOMP_parallel`` of the OpenMP runtime libtorch runs on: its address and
    ``None``, or 0 and why there is none to use.

    The symbol is looked up from libtorch's CPU library, so the dynamic loader
    finds the runtime that library itself calls (GNU libgomp on Linux; LLVM's
    libomp, which provides the same entry point, on macOS), not another one loaded
    in the process.
    """
    if not torch.backends.openmp.is_available():  # type: ignore[no-untyped-call]
        return 0, "this torch was built without OpenMP"
    try:
        return _address(libtorch_cpu(), "GOMP_parallel"), None
    except (OSError, AttributeError) as exc:
        return 0, f"{type(exc).__name__}: {exc}"


#: ``omp_pause_soft`` of OpenMP 5.0's ``omp_pause_resource_t``.
_OMP_PAUSE_SOFT = 1


def openmp_release() -> Callable[[], int] | None:
    """A call that lets the calling thread's OpenMP threads go (the runtime starts them
    again at its next parallel region), or ``None`` where torch's runtime has none.

    It is OpenMP 5.0's ``omp_pause_resource_all(omp_pause_soft)``, looked up from
    libtorch's CPU library as :func:`openmp_parallel` is. GNU libgomp joins the
    threads of the caller's pool and forgets the pool; a process forked right after
    then has no pool whose threads it would wait for.
    """
    if not torch.backends.openmp.is_available():  # type: ignore[no-untyped-call]
        return None
    try:
        pause = libtorch_cpu().omp_pause_resource_all
    except (OSError, AttributeError):
        return None
    pause.argtypes = [ctypes.c_int]
    pause.restype = ctypes.c_int
    release: Callable[[], int] = functools.partial(pause, _OMP_PAUSE_SOFT)
    return release
