"""Build the package's three C extensions.

* ``arrayselect._dispatch._fastcall``: the hit path of the core's fast-path protocol;
* ``arrayselect.backends.shared._select_kernel``: the CPU kernel the NumPy and PyTorch backends run;
* ``arrayselect.backends.torch_backend._fields``: the torch backend's recent-call check
  (it reads tensors through libtorch's C functions, found at run time: it needs
  neither torch nor its headers to build).

Everything else about the package is declared in ``pyproject.toml``; this file
only adds the C extensions, built by the ordinary setuptools build backend for
``pip install .``, ``pip install -e .`` and the sdist alike.

All three extensions are optional: if one fails to build (no C compiler, say), the
install goes on without it and prints one warning (:data:`_MISSING_WARNING`);
the package then runs the same calls through NumPy and Python. With
``ARRAYSELECT_REQUIRE_KERNEL=1`` (set by CI, ``scripts/`` and wheel builds) a
failed build is an error. The extensions are linked without debug information
or symbol tables (``ARRAYSELECT_STRIP=0`` keeps them, for debugging).
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

# Portable flags only: no -march=native, so a wheel runs on any x86-64/aarch64.
# -fvisibility=hidden: the kernel's files share sk_* symbols that must not
# leave the shared object (only the module's init function is exported).
_UNIX_FLAGS = ["-O3", "-fno-strict-aliasing", "-std=gnu11", "-pthread", "-fvisibility=hidden"]
_MSVC_FLAGS = ["/O2"]


# Unix: no debug information in the objects (Python's CFLAGS carry -g), and a
# linked module without a symbol table (the dynamic symbols it exports stay).
# The kernel is 3.19 MB with them, 0.93 MB without (measured, docs/platforms.md).
_STRIP = os.environ.get("ARRAYSELECT_STRIP", "1") != "0"
_UNIX_STRIP_COMPILE = ["-g0"]
_UNIX_STRIP_LINK = ["-Wl,-S,-x"] if sys.platform == "darwin" else ["-s"]

# What makes a build of an extension fail without a bug of ours: no compiler, a
# compiler that fails, a platform setuptools cannot compile for.
_BUILD_ERRORS = (CCompilerError, ExecError, PlatformError, OSError)

_MISSING_WARNING = """\
WARNING: arrayselect is installed without {missing}: {why}.
  Nothing changes but speed: every select gives the same results and errors,
  through NumPy's own functions and Python. But NumPy selects are slower: large ones
  cost what numpy.where costs, small ones some microseconds more, and the kernel is
  usually several times faster than both (measured figures: docs/platforms.md, "How
  much slower").
  To get the compiled code, install a C compiler (Linux: gcc, e.g. `apt install
  gcc python3-dev`; macOS: `xcode-select --install`; Windows: the "Desktop
  development with C++" workload of Visual Studio Build Tools), or a wheel for your
  platform, then reinstall arrayselect. `python -c "import arrayselect;
  arrayselect.show_runtime()"` shows what is present. Set ARRAYSELECT_REQUIRE_KERNEL=1
  to make a failed build an error instead."""

_EXT_NAMES = {
    "arrayselect._dispatch._fastcall": "the compiled fast path (arrayselect._dispatch._fastcall)",
    "arrayselect.backends.shared._select_kernel": (
        "the compiled NumPy kernel (arrayselect.backends.shared._select_kernel)"
    ),
    "arrayselect.backends.torch_backend._fields": (
        "the compiled recent-call check of the torch backend "
        "(arrayselect.backends.torch_backend._fields)"
    ),
}

_KERNEL = "backends/shared/_kernel/"
# MSVC has no target attribute: there the kernel's AVX2 and AVX-512 loops are
# translation units of their own, each compiled with its /arch flag (see
# sk_loops_base.h). Other compilers build those copies inside sk_loops.c, and
# these two files compile to nothing.
_MSVC_ISA_FLAGS = {
    _KERNEL + "sk_loops_avx2.c": "/arch:AVX2",
    _KERNEL + "sk_loops_avx512.c": "/arch:AVX512",
}


class BuildExt(build_ext):  # type: ignore[misc]
    """Pick compiler flags by compiler family; build what can be built.

    A failed extension is recorded and reported once at the end (unless
    ``ARRAYSELECT_REQUIRE_KERNEL=1``), so that a machine without a C compiler
    still gets a working install.
    """

    def initialize_options(self) -> None:
        super().initialize_options()
        self._failed: dict[str, str] = {}  # extension name -> why its build failed

    def run(self) -> None:
        try:
            super().run()
        except _BUILD_ERRORS as exc:  # e.g. no compiler at all (MSVC missing)
            if _required():
                raise
            for ext in self.extensions:
                self._failed.setdefault(ext.name, _why(exc))
        if self._failed:
            names = [_EXT_NAMES.get(name, name) for name in self._failed]
            missing = " and ".join([", ".join(names[:-1]), names[-1]] if names[1:] else names)
            why = "; ".join(dict.fromkeys(self._failed.values()))
            message = _MISSING_WARNING.format(missing=missing, why=why)
            print("\n" + message + "\n", file=sys.stderr, flush=True)

    def build_extension(self, ext: Extension) -> None:
        if self.compiler.compiler_type != "msvc" and _STRIP:
            ext.extra_compile_args = [*ext.extra_compile_args, *_UNIX_STRIP_COMPILE]
            ext.extra_link_args = [*ext.extra_link_args, *_UNIX_STRIP_LINK]
        try:
            super().build_extension(ext)
        except _BUILD_ERRORS as exc:
            if _required():
                raise
            self._failed[ext.name] = _why(exc)

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


def _required() -> bool:
    """``ARRAYSELECT_REQUIRE_KERNEL=1``: a failed build of any extension is an error."""
    return os.environ.get("ARRAYSELECT_REQUIRE_KERNEL", "") not in ("", "0")


def _why(exc: BaseException) -> str:
    """Why a build failed, in a few words (the compiler's own output is above the warning)."""
    text = (str(exc).strip().splitlines() or ["no message"])[0]
    if isinstance(exc, PlatformError):
        return f"no usable C compiler ({text})"
    if "No such file or directory" in text or isinstance(exc, FileNotFoundError):
        return f"no C compiler found ({text})"
    command = re.match(r"""Command '\['([^']+)'""", text)
    if command:  # setuptools' spawn: "Command '['gcc', ...]' returned non-zero exit status 1."
        return f"the C compiler `{command.group(1)}` failed (its output is above)"
    return f"the C build failed ({type(exc).__name__}: {text[:200]})"


# ARRAYSELECT_KERNEL_DISPATCH=0 builds the baseline loops only (no AVX2/AVX-512 copies).
_KERNEL_MACROS = (
    [("SK_NO_DISPATCH", "1")] if os.environ.get("ARRAYSELECT_KERNEL_DISPATCH") == "0" else []
)
_KERNEL_SOURCES = ["select_kernel.c", "sk_loops.c", "sk_plan.c", "sk_pool.c", "sk_memory.c"]
_KERNEL_SOURCES += ["sk_prepared.c", "sk_cases.c"]
# The OS layer (sk_os.h): each file compiles to nothing on the other OS.
_KERNEL_SOURCES += ["sk_os_posix.c", "sk_os_win32.c", "sk_os_cpu.c"]
_KERNEL_SOURCES += ["sk_loops_avx2.c", "sk_loops_avx512.c"]
_KERNEL_HEADERS = ["sk_kernel.h", "sk_loops_isa.h", "sk_loops_typed.h"]
_KERNEL_HEADERS += ["sk_os.h", "sk_loops_base.h", "sk_loops_stream.h"]


def extensions(numpy_include: str) -> list[Extension]:
    """The three extensions, against the NumPy headers in ``numpy_include``.

    ``scripts/ci/cross_wheel.py`` reads them (and ``_UNIX_FLAGS``) from here to
    cross-compile the same sources with the same flags for aarch64 and s390x.
    """
    return [
        Extension(
            "arrayselect._dispatch._fastcall", sources=["src/arrayselect/_dispatch/_fastcall.c"]
        ),
        Extension(
            "arrayselect.backends.shared._select_kernel",
            sources=[_KERNEL + name for name in _KERNEL_SOURCES],
            depends=[_KERNEL + name for name in _KERNEL_HEADERS],
            include_dirs=[numpy_include, _KERNEL],
            define_macros=_KERNEL_MACROS,
        ),
        Extension(
            "arrayselect.backends.torch_backend._fields",
            sources=["backends/torch_backend/_fields.c"],
            include_dirs=["src/arrayselect/_dispatch"],  # _vectorcall_type.h
        ),
    ]


# setuptools' build backend runs this file as __main__; cross_wheel.py imports it
if __name__ == "__main__":
    setup(ext_modules=extensions(np.get_include()), cmdclass={"build_ext": BuildExt})
