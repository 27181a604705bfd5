"""The NumPy kernel's run-time CPU dispatch.

The typed loops are compiled for the baseline of the build and, on x86-64 with
GCC or Clang, for AVX2 and AVX-512; one is chosen at import. The correctness
tests of ``test_numpy_kernel.py`` run on every usable instruction set (its
``isa`` fixture); here: what is reported, the environment variable, a build
with dispatch disabled, and that no x86-only code escapes its guards.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy as np
import pytest
from arrayselect.backends.shared import kernel as numpy_kernel

import arrayselect as asel

ROOT = Path(__file__).resolve().parents[1]
KERNEL_DIR = ROOT / "backends" / "shared" / "_kernel"
X86_64_GCC = platform.machine().lower() in ("x86_64", "amd64") and sys.platform != "win32"


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ARRAYSELECT_")}
    full_env.update(env)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done


def test_isa_info_is_consistent() -> None:
    info = numpy_kernel.isa_info()
    assert info["compiled"][0] == "baseline"
    assert set(info["usable"]) <= set(info["compiled"])
    assert info["current"] in info["usable"]
    assert info["best"] == info["usable"][-1]
    if X86_64_GCC:
        assert info["compiled"] == ["baseline", "avx2", "avx512"]


def test_explain_reports_the_instruction_set() -> None:
    c = np.ones(64, bool)
    a = np.ones(64, np.float32)
    previous = numpy_kernel.isa_info()["current"]
    try:
        for isa in numpy_kernel.isa_info()["usable"]:
            numpy_kernel.set_isa(isa)
            assert numpy_kernel.explain(c, a, a, None, (64,), None, None, None)["isa"] == isa
            assert numpy_kernel.isa_info()["current"] == isa
    finally:
        numpy_kernel.set_isa(previous)


def test_set_isa_rejects_unknown_and_unsupported() -> None:
    with pytest.raises(ValueError, match="unknown, not compiled in or not supported"):
        numpy_kernel.set_isa("sse9")
    unusable = set(numpy_kernel.isa_info()["compiled"]) - set(numpy_kernel.isa_info()["usable"])
    for name in unusable:
        with pytest.raises(ValueError):
            numpy_kernel.set_isa(name)


CHECK_ALL_LAYOUTS = """
    import numpy as np
    rng = np.random.default_rng(5)

    def as_bytes(x, shape):
        x = np.ascontiguousarray(np.broadcast_to(x, shape))
        return x.view(np.uint8).reshape(*shape, x.dtype.itemsize)

    def check(select, dtypes=("u1", "f2", "f4", "f8", "c16", "clongdouble")):
        for dt in dtypes:
            dt = np.dtype(dt)
            a = rng.integers(0, 256, size=(301, 257 * dt.itemsize), dtype=np.uint8).view(dt)
            b = rng.integers(0, 256, size=(301, 257 * dt.itemsize), dtype=np.uint8).view(dt)
            c = rng.random(a.shape) < 0.5
            for cc, aa, bb in [
                (c, a, b), (c.T, a.T, b.T), (c[:, ::2], a[:, ::2], b[:, ::2]),
                (c[::-1, ::-3], a[::-1, ::-3], b[::-1, ::-3]), (c, a.T.copy().T, b),
                (c[:, :1], a, b), (c, a[:1], b[:, :1]),
            ]:
                shape = np.broadcast_shapes(cc.shape, aa.shape, bb.shape)
                expected = np.where(np.broadcast_to(cc, shape)[..., None],
                                    as_bytes(aa, shape), as_bytes(bb, shape))
                got = as_bytes(select(cc, aa, bb), shape)
                assert np.array_equal(got, expected), (dt, cc.strides, aa.strides)
"""


def test_environment_variable_forces_the_baseline_loops() -> None:
    code = (
        CHECK_ALL_LAYOUTS
        + """
    import arrayselect as asel
    from arrayselect.backends.shared import kernel
    check(asel.select)
    c = np.ones(100, bool)
    print(kernel.isa_info()["current"],
          kernel.explain(c, c, c, None, (100,), None, None, None)["isa"])
    """
    )
    assert _run(code, ARRAYSELECT_CPU="baseline").stdout.split() == ["baseline", "baseline"]


def test_environment_variable_unknown_warns_and_uses_the_best() -> None:
    code = """
        import warnings
        warnings.simplefilter("always")
        import arrayselect
        from arrayselect.backends.shared import kernel
        info = kernel.isa_info()
        print(info["current"] == info["best"])
    """
    done = _run(code, ARRAYSELECT_CPU="pentium")
    assert done.stdout.strip() == "True"
    assert "ignoring ARRAYSELECT_CPU=pentium" in done.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="builds with a Unix C compiler")
def test_builds_and_runs_with_dispatch_disabled(tmp_path: Path) -> None:
    """SK_NO_DISPATCH (what ARRAYSELECT_KERNEL_DISPATCH=0 sets in setup.py): baseline only."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None or not KERNEL_DIR.is_dir():
        pytest.skip("no C compiler or not a source checkout")
    target = tmp_path / f"_select_kernel{sysconfig.get_config_var('EXT_SUFFIX')}"
    sources = sorted(str(p) for p in KERNEL_DIR.glob("*.c"))
    subprocess.run(
        [compiler, "-O2", "-std=gnu11", "-pthread", "-fPIC", "-shared", "-fvisibility=hidden",
         "-fno-strict-aliasing", "-DSK_NO_DISPATCH=1", f"-I{np.get_include()}",
         f"-I{sysconfig.get_paths()['include']}", f"-I{KERNEL_DIR}", *sources,
         "-o", str(target)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    code = (
        CHECK_ALL_LAYOUTS
        + f"""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_select_kernel", {str(target)!r})
    K = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(K)
    K.set_num_threads(2)
    K.set_parallel_min(0)
    check(lambda c, a, b: K.select(c, a, b, None, np.broadcast_shapes(c.shape, a.shape, b.shape),
                                   None, None, None), ("u1", "f4", "f8", "c16", "V3"))
    print(K.isa_info())
    """
    )
    info = _run(code).stdout.strip()
    assert "'compiled': ['baseline']" in info and "'current': 'baseline'" in info, info


@pytest.mark.parametrize(
    "source", sorted(p.name for p in KERNEL_DIR.glob("*.c")) if KERNEL_DIR.is_dir() else []
)
@pytest.mark.parametrize("compiler_name", ["aarch64-linux-gnu-gcc", "clang"])
def test_compiles_for_aarch64_and_with_clang_without_warnings(
    source: str, compiler_name: str, tmp_path: Path
) -> None:
    """Another architecture builds the baseline loops only, and Clang takes the x86
    dispatch's attributes (where installed: Debian's gcc-aarch64-linux-gnu, clang; this
    platform's Python and NumPy headers serve the cross compiler, both being LP64)."""
    compiler = shutil.which(compiler_name)
    if compiler is None:
        pytest.skip(f"no {compiler_name}")
    obj = tmp_path / "out.o"
    done = subprocess.run(
        [compiler, "-O3", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-pthread", "-fPIC",
         "-fno-strict-aliasing", f"-I{np.get_include()}",
         f"-I{sysconfig.get_paths()['include']}", f"-I{KERNEL_DIR}", "-c",
         str(KERNEL_DIR / source), "-o", str(obj)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    if compiler_name.startswith("aarch64") and shutil.which("aarch64-linux-gnu-nm"):
        symbols = subprocess.run(
            ["aarch64-linux-gnu-nm", str(obj)], capture_output=True, text=True
        ).stdout
        assert "avx" not in symbols


X86_ONLY = re.compile(
    r"__builtin_ia32_|__builtin_cpu_|\b_mm\d*_|__m(128|256|512)|immintrin|x86intrin|cpuid\.h|"
    r"target\(\"|__asm__"
)
X86_GUARD = re.compile(r"__x86_64__|__i386__|SK_X86_DISPATCH|SK_OS_X86|_M_X64|_M_IX86")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


@pytest.mark.parametrize(
    "source", sorted(p.name for p in KERNEL_DIR.glob("*.[ch]")) if KERNEL_DIR.is_dir() else []
)
def test_x86_only_code_is_guarded(source: str) -> None:
    """Every x86 intrinsic, builtin or target attribute sits inside an x86 #if, so other
    architectures build the baseline loops (aarch64's `yield` sits in its own #elif)."""
    stack: list[str] = []
    for number, line in enumerate(_strip_comments((KERNEL_DIR / source).read_text()).split("\n")):
        directive = line.strip()
        if directive.startswith("#if"):
            stack.append(directive)
        elif directive.startswith("#elif"):
            stack[-1] = directive
        elif directive.startswith("#else"):
            stack[-1] = "#else of " + stack[-1]
        elif directive.startswith("#endif"):
            stack.pop()
        elif X86_ONLY.search(line):
            guarded = any(X86_GUARD.search(c) and not c.startswith("#else") for c in stack)
            aarch64 = "__asm__" in line and "yield" in line and "__aarch64__" in stack[-1]
            assert guarded or aarch64, f"{source}:{number + 1}: {line.strip()}"


def test_bench_prints_the_instruction_set() -> None:
    from arrayselect._tools import bench as _bench

    lines: list[str] = []
    _bench.print_kernel_info(lines.append)
    text = "\n".join(lines)
    assert numpy_kernel.isa_info()["current"] in text
    assert f"{asel.get_num_threads()} thread" in text
