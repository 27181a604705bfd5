"""The package as users install and extend it: a plugin package with an entry
point, type checking against an installed (editable) arrayselect, the command
line's ``--version``.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import arrayselect as asel

PLUGIN_MODULE = '''
"""A tiny arrayselect backend plugin for array_api_strict arrays."""

from typing import Any

from arrayselect.plugin import Backend, DtypeKind, SelectPlan, Shape


class ToyBackend(Backend):
    name = "toy-plugin"

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        self.calls = 0

    def dtype_kind(self, dtype: Any) -> DtypeKind | None:
        for category, kind in (("bool", "bool"), ("signed integer", "int"),
                               ("unsigned integer", "uint"), ("real floating", "float"),
                               ("complex floating", "complex")):
            if self.xp.isdtype(dtype, category):
                return kind  # type: ignore[return-value]
        return None

    def int_range(self, dtype: Any) -> tuple[int, int]:
        info = self.xp.iinfo(dtype)
        return int(info.min), int(info.max)

    def float_max(self, dtype: Any) -> float:
        return float(self.xp.finfo(dtype).max)

    def default_dtype(self, scalar_type: type, like: Any) -> Any:
        return self.xp.asarray(scalar_type(0)).dtype

    def shape(self, x: Any) -> Shape:
        return tuple(x.shape)

    def scalar_array(self, value: Any, dtype: Any, like: Any) -> Any:
        return self.xp.asarray(value, dtype=dtype, device=like.device)

    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        self.calls += 1
        xs = [x if a is None else self.xp.reshape(x, a)
              for x, a in zip((cond, then, else_), plan.aligned)]
        if not self.xp.isdtype(xs[0].dtype, "bool"):
            xs[0] = xs[0] != 0
        return self.xp.where(*xs)


def create(xp: Any) -> ToyBackend:
    return ToyBackend(xp)
'''

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "asel-toy-plugin"
version = "1.0"

[project.entry-points."arrayselect.backends"]
array_api_strict = "asel_toy_plugin:create"

[tool.setuptools]
py-modules = ["asel_toy_plugin"]
"""

USE_IT = """
import array_api_strict as xp
import arrayselect as asel
c = xp.asarray([True, False, True])
t = xp.reshape(xp.arange(6), (2, 3))
r = asel.select(c, t, -1)
backend = asel.backend_for(c, t, -1)
print(repr(backend), backend.calls, [int(v) for v in xp.reshape(r, (6,))])
try:
    asel.select(c, t, 2**70)
except asel.ScalarOverflowError as exc:
    print("overflow:", "else" in str(exc))
"""


def test_plugin_module_uses_public_names_only() -> None:
    tree = ast.parse(PLUGIN_MODULE)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("arrayselect"):
            assert node.module == "arrayselect.plugin", node.module
            assert all(not alias.name.startswith("_") for alias in node.names)


def test_installed_plugin_package_is_found_by_its_entry_point(tmp_path: Path) -> None:
    pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    pytest.importorskip("setuptools", reason="building the plugin needs setuptools")
    source = tmp_path / "src"
    source.mkdir()
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "asel_toy_plugin.py").write_text(PLUGIN_MODULE)
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(source)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert any(p.name.endswith(".dist-info") for p in target.iterdir())
    env = dict(os.environ, PYTHONPATH=str(target))
    done = subprocess.run(
        [sys.executable, "-c", USE_IT], env=env, capture_output=True, text=True, check=True
    )
    lines = done.stdout.strip().splitlines()
    assert lines == [
        "<ToyBackend 'toy-plugin'> 1 [0, -1, 2, 3, -1, 5]",
        "overflow: True",
    ], done.stdout + done.stderr


def test_type_checkers_see_the_installed_package(tmp_path: Path) -> None:
    """mypy finds arrayselect where it is installed (an editable install included)."""
    if shutil.which("mypy", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("mypy is not installed (the dev extra)")
    user = tmp_path / "user.py"
    user.write_text(
        textwrap.dedent("""
            import numpy as np
            import arrayselect as asel
            reveal_type(asel.select)
            asel.select(np.array([True]), np.array([1.0]), 0.0, axis="1")
        """)
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull, str(user)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    out = done.stdout
    assert "Cannot find implementation or library stub" not in out, out
    assert 'Argument "axis" to "select" has incompatible type "str"' in out, out


def test_version_on_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "arrayselect", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"arrayselect {asel.__version__}"


ROOT = Path(__file__).resolve().parents[1]
C_SOURCES = [
    "src/arrayselect/_fastcall.c",
    *sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "backends/numpy_backend/_kernel").glob("*.c")
    ),
]


@pytest.mark.parametrize("source", C_SOURCES)
def test_c_sources_compile_without_warnings(source: str, tmp_path: Path) -> None:
    """The build's C compiles cleanly with -Wall -Wextra (gcc once warned of an
    uninitialised key in the plan cache)."""
    import sysconfig

    import numpy as np

    root = ROOT
    if not (root / source).is_file():
        pytest.skip("not a source checkout")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    done = subprocess.run(
        [compiler, "-O3", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-pthread", "-fPIC",
         "-fno-strict-aliasing", f"-I{np.get_include()}",
         f"-I{sysconfig.get_paths()['include']}", f"-I{root / Path(source).parent}",
         "-c", str(root / source), "-o", str(tmp_path / "out.o")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_cuda_packages_are_their_own_extra_which_ci_installs() -> None:
    """``arrayselect[test]`` must not pull CuPy and NVRTC (~340 MB) onto every Linux
    machine; the CUDA compile check keeps running in CI through ``cuda-check``."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]

    def names(extra: str) -> set[str]:
        return {req.split(";")[0].split(">")[0].split("<")[0].strip() for req in extras[extra]}

    cuda = {"cupy-cuda13x", "nvidia-cuda-nvrtc"}
    assert names("cuda-check") == cuda
    for extra in extras:
        if extra != "cuda-check":
            assert not names(extra) & cuda, extra
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    (line,) = [x for x in test_sh.splitlines() if x.startswith("ARRAYSELECT_EXTRAS=")]
    assert "cuda-check" in line.split("=", 1)[1].split(",")
