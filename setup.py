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


_KERNEL = "backends/numpy_backend/_kernel/"
# MSVC has no target attribute: there the kernel's AVX2 and AVX-512 loops are
# translation units of their own, each compiled with its /arch flag (see
# sk_loops_base.h). Other compilers build those copies inside sk_loops.c, and
# these two files compile to nothing.
_MSVC_ISA_FLAGS = {
    _KERNEL + "sk_loops_avx2.c": "/arch:AVX2",
    _KERNEL + "sk_loops_avx512.c": "/arch:AVX512",
}


class BuildExt(build_ext):  # type: ignore[misc]
    """Pick compiler flags by compiler family."""

    def build_extensions(self) -> None:
        msvc = self.compiler.compiler_type == "msvc"
        for ext in self.extensions:
            ext.extra_compile_args = list(_MSVC_FLAGS if msvc else _UNIX_FLAGS)
            ext.extra_link_args = [] if msvc else ["-pthread"]
            if msvc:
                self._compile_isa_units(ext)
        super().build_extensions()

    def _compile_isa_units(self, ext: Extension) -> None:
        """Compile ``ext``'s per-ISA sources with their own flags, as extra objects."""
        for source, flag in _MSVC_ISA_FLAGS.items():
            if source in ext.sources:
                ext.sources.remove(source)
                ext.extra_objects = [
                    *ext.extra_objects,
                    *self.compiler.compile(
                        [source],
                        output_dir=self.build_temp,
                        macros=ext.define_macros,
                        include_dirs=ext.include_dirs,
                        extra_postargs=[*ext.extra_compile_args, flag],
                        depends=ext.depends,
                    ),
                ]


# ARRAYSELECT_KERNEL_DISPATCH=0 builds the baseline loops only (no AVX2/AVX-512 copies).
_KERNEL_MACROS = (
    [("SK_NO_DISPATCH", "1")] if os.environ.get("ARRAYSELECT_KERNEL_DISPATCH") == "0" else []
)
_KERNEL_SOURCES = ["select_kernel.c", "sk_loops.c", "sk_plan.c", "sk_pool.c", "sk_memory.c"]
_KERNEL_SOURCES += ["sk_fast.c"]
# The OS layer (sk_os.h): each file compiles to nothing on the other OS.
_KERNEL_SOURCES += ["sk_os_posix.c", "sk_os_win32.c", "sk_os_cpu.c"]
_KERNEL_SOURCES += ["sk_loops_avx2.c", "sk_loops_avx512.c"]
_KERNEL_HEADERS = ["sk_kernel.h", "sk_loops_isa.h", "sk_loops_typed.h"]
_KERNEL_HEADERS += ["sk_os.h", "sk_loops_base.h"]

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
