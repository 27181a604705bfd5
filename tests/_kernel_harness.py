"""Run the CUDA kernels' C code on the CPU (helpers shared by the CuPy tests).

The kernel sources are compiled with the host C++ compiler behind a prelude that
stands in for CUDA's built-ins (``uint4``, ``blockIdx``/``threadIdx``/...,
``__global__``, CuPy's ``thrust::complex``); a driver function then runs every
(block, thread) of a launch in turn. The kernels use no shared memory and no
barriers, so any serial order of the threads is a valid schedule.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from arrayselect.backends.cupy_backend import kernels as ck

PRELUDE = """\
#include <cstddef>
#include <cstdint>
namespace thrust {  // stand-in for CuPy's complex: two Ts, copied member-wise
template <class T> struct alignas(2 * sizeof(T)) complex { T re, im; };
}
struct alignas(16) uint4 { unsigned int x, y, z, w; };
struct cuda_dim3 { unsigned int x, y, z; };
[[maybe_unused]] static cuda_dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
"""


def cxx() -> str:
    """Path of a C++ compiler, or skip the test."""
    for name in ("g++", "c++", "clang++"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no C++ compiler (g++, c++ or clang++) to run the kernels' C code on the CPU")


def build(tmp: Path, source: str) -> ctypes.CDLL:
    """Compile ``source`` (C++) into a shared library under ``tmp`` and load it."""
    src = tmp / "harness.cpp"
    lib = tmp / "harness.so"
    src.write_text(source)
    cmd = [
        cxx(),
        "-std=c++17",
        "-O1",
        "-shared",
        "-fPIC",
        "-Wall",
        "-Werror",
        "-Wno-unknown-pragmas",
        "-o",
        str(lib),
        str(src),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}\n--- source ---\n{source}"
    return ctypes.CDLL(str(lib))


def vector_driver(spec: ck.VectorSpec) -> str:
    """``run_<name>(c, x, y, z, n, grid, block)``: every thread of a launch, in turn."""
    cw = spec.cond_word_ctype
    return textwrap.dedent(f"""
        static_assert(sizeof({cw}) == {spec.lanes}, "cond word size");
        static_assert(sizeof({spec.value_ctype}) == {spec.value_itemsize}, "value size");
        extern "C" void run_{spec.name}(const {cw}* c, const uint4* x, const uint4* y,
                                         uint4* z, long long n, unsigned grid,
                                         unsigned block) {{
            gridDim.x = grid; blockDim.x = block;
            for (unsigned b = 0; b < grid; ++b)
                for (unsigned t = 0; t < block; ++t) {{
                    blockIdx.x = b; threadIdx.x = t;
                    {spec.name}(c, x, y, z, n);
                }}
        }}
        """)


def vector_harness(specs: list[ck.VectorSpec]) -> str:
    """Prelude, the kernels' sources and their drivers."""
    return "\n".join([PRELUDE, *(s.source + vector_driver(s) for s in specs)])


def ptr(a: Any) -> ctypes.c_void_p:
    """Address of a NumPy array's first element."""
    return ctypes.c_void_p(np.asarray(a).ctypes.data)


def aligned_empty(n: int, dtype: np.dtype[Any], align: int = 64) -> np.ndarray:
    """An uninitialized 1-d array whose data is ``align``-byte aligned."""
    buf = np.empty(n * dtype.itemsize + align, np.uint8)
    offset = (-buf.ctypes.data) % align
    return buf[offset : offset + n * dtype.itemsize].view(dtype)
