"""Build the package's two C extensions.

* ``arrayselect._fastcall``: the hit path of the core's fast-path protocol;
* ``arrayselect.backends.numpy_backend._select_kernel``: the NumPy backend's kernel.

Everything else about the package is declared in ``pyproject.toml``; this file
only adds the C extensions, built by the ordinary setuptools build backend for
``pip install .``, ``pip install -e .`` and the sdist alike.
"""

from __future__ import annotations

import os

import numpy as np
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Portable flags only: no -march=native, so a wheel runs on any x86-64/aarch64.
# -fvisibility=hidden: the kernel's files share sk_* symbols that must not
# leave the shared object (only the module's init function is exported).
_UNIX_FLAGS = ["-O3", "-fno-strict-aliasing", "-std=gnu11", "-pthread", "-fvisibility=hidden"]
_MSVC_FLAGS = ["/O2"]


class BuildExt(build_ext):  # type: ignore[misc]
    """Pick compiler flags by compiler family."""

    def build_extensions(self) -> None:
        msvc = self.compiler.compiler_type == "msvc"
        for ext in self.extensions:
            ext.extra_compile_args = list(_MSVC_FLAGS if msvc else _UNIX_FLAGS)
            ext.extra_link_args = [] if msvc else ["-pthread"]
        super().build_extensions()


_KERNEL = "backends/numpy_backend/_kernel/"
# ARRAYSELECT_KERNEL_DISPATCH=0 builds the baseline loops only (no AVX2/AVX-512 copies).
_KERNEL_MACROS = (
    [("SK_NO_DISPATCH", "1")] if os.environ.get("ARRAYSELECT_KERNEL_DISPATCH") == "0" else []
)
_KERNEL_SOURCES = ["select_kernel.c", "sk_loops.c", "sk_plan.c", "sk_pool.c", "sk_memory.c"]
_KERNEL_SOURCES += ["sk_fast.c", "sk_family.c"]
_KERNEL_HEADERS = ["sk_kernel.h", "sk_loops_isa.h", "sk_loops_typed.h"]

setup(
    ext_modules=[
        Extension("arrayselect._fastcall", sources=["src/arrayselect/_fastcall.c"]),
        Extension(
            "arrayselect.backends.numpy_backend._select_kernel",
            sources=[_KERNEL + name for name in _KERNEL_SOURCES],
            depends=[_KERNEL + name for name in _KERNEL_HEADERS],
            include_dirs=[np.get_include(), _KERNEL],
            define_macros=_KERNEL_MACROS,
        ),
    ],
    cmdclass={"build_ext": BuildExt},
)
