"""The CuPy backend (NVIDIA GPUs).

Select runs as one of a few kernels that move raw bits (see
:mod:`.kernels` for the plan, which is pure Python and needs no GPU;
:mod:`.backend` launches it):

* ``then``, ``else`` and ``out`` are viewed as the unsigned integer of their item
  size (``complex128`` stays ``complex128``, which CUDA only copies); ``cond`` is
  viewed as the unsigned integer of *its* item size and tested with ``!= 0``, so
  bool and every integer dtype work without a cast pass. Same-item-size views
  work for any strides, so every dtype CuPy has (``bfloat16`` included, where
  CuPy has it through ``ml_dtypes``) shares one kernel per item-size pair.
* Broadcasting and strides are done by ``cupy.ElementwiseKernel``'s own
  indexing on the aligned views the core's plan asks for.
* Large C-contiguous same-shape inputs use a ``cupy.RawKernel`` that moves
  16-byte words (:func:`.kernels.vector_eligible`).
* Python scalars reach the kernel by value (no host-to-device copy) on the fast
  path; on the general path they become 0-d arrays filled on the device.
* ``select_n`` and ``select_cases`` run as one generated ``ElementwiseKernel``
  per case count (:func:`.kernels.select_n_spec`,
  :func:`.kernels.select_cases_spec`); an index out of range is flagged on the
  device in the same pass and raised after it (the one host synchronization).
* Kernels are created once (module-level caches guarded by a lock; CuPy compiles
  each once per device and keeps the binary on disk), launched on the current
  stream of the inputs' device, and nothing else here synchronizes with the host.

GPU status: the code paths that launch kernels have not been run in the session
that wrote them (no GPU there); ``scripts/gpu_check.sh`` runs the GPU tests and
benchmarks on a machine that has one.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["create"]


def create(xp: ModuleType) -> Any:
    """Entry-point factory: the CuPy backend (imports CuPy; :mod:`.kernels` does not)."""
    from .backend import create as create_backend

    return create_backend(xp)
