"""The package as users install and extend it: a plugin package with an entry
point, type checking against an installed (editable) arrayselect, the command
line's ``--version``.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import arrayselect as asel

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _docs_backend() -> str:
    """The complete backend of docs/plugins.md: its python block that defines ``create``."""
    text = (DOCS / "plugins.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)
    found = [b for b in blocks if "\ndef create(" in b]
    assert len(found) == 1, "docs/plugins.md has one complete backend"
    return found[0]


PLUGIN_MODULE = _docs_backend()

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "asel-toy-plugin"
version = "1.0"

[project.entry-points."arrayselect.backends"]
array_api_strict = "strict_backend:create"

[tool.setuptools]
py-modules = ["strict_backend"]
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


def test_the_plugin_module_has_twenty_names_each_shown_in_an_example() -> None:
    """At most 20 names; each appears in a doctest line (``>>>``/``...``) of its own
    docstring, the module's, or docs/plugins.md, or in the page's complete backend."""
    from arrayselect import plugin

    assert len(plugin.__all__) <= 20, plugin.__all__
    page = (DOCS / "plugins.md").read_text(encoding="utf-8")
    shown = [ln for ln in page.splitlines() if ln.lstrip().startswith((">>>", "..."))]
    shown.append(PLUGIN_MODULE)
    for name in plugin.__all__:
        for doc in (plugin.__doc__, getattr(plugin, name).__doc__):
            shown += [
                ln for ln in (doc or "").splitlines() if ln.lstrip().startswith((">>>", "..."))
            ]
    missing = [n for n in plugin.__all__ if not any(re.search(rf"\b{n}\b", s) for s in shown)]
    assert not missing, f"no example uses {missing}"


def test_the_docs_backend_is_a_short_module_of_public_names() -> None:
    """Under 80 lines, importing nothing of arrayselect but arrayselect.plugin."""
    assert len(PLUGIN_MODULE.splitlines()) < 80
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
    (source / "strict_backend.py").write_text(PLUGIN_MODULE)
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
        "<StrictBackend 'strict'> 1 [0, -1, 2, 3, -1, 5]",
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
    "src/arrayselect/_dispatch/_fastcall.c",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "backends/shared/_kernel").glob("*.c")),
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


MODES = [
    ("numpy", -1, "unidirectional", (3, 1), (2, 3, 4), (4,)),
    ("numpy", -1, "multidirectional", (2, 1, 4), (3, 1), (1,)),
    ("pdpd", 1, "unidirectional", (3,), (2, 3, 4), (3, 4)),
    ("none", -1, "unidirectional", (2, 3), (2, 3), (2, 3)),
]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: f"{m[0]}-{m[2]}")
def test_the_docs_backend_gives_the_oracles_answers(mode: tuple[Any, ...]) -> None:
    """The page's backend, imported from its block, against the independent oracle:
    every mode, cold and warm (its signature cache), an integer cond, out=, a scalar,
    and the family the core gives it."""
    xp = pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    from oracle import oracle_select, oracle_select_n
    from xp_helpers import to_numpy

    module: dict[str, Any] = {"__name__": "strict_backend"}
    exec(compile(PLUGIN_MODULE, "docs/plugins.md", "exec"), module)
    ab, axis, cb, c_shape, t_shape, e_shape = mode
    rng = np.random.default_rng(7)
    c = rng.integers(0, 3, c_shape).astype(np.uint8)
    t = rng.standard_normal(t_shape).astype(np.float32)
    e = rng.standard_normal(e_shape).astype(np.float32)
    expected = oracle_select(c != 0, t, e, auto_broadcast=ab, axis=axis, cond_broadcast=cb)
    asel.register_backend("array_api_strict", module["create"])
    try:
        args = (xp.asarray(c), xp.asarray(t), xp.asarray(e))
        options = {"auto_broadcast": ab, "axis": axis, "cond_broadcast": cb}
        for _ in range(2):  # cold, then warm
            got = asel.select(*args, **options)
            np.testing.assert_array_equal(to_numpy(got), expected)
        out = xp.zeros(expected.shape, dtype=xp.float32)
        assert asel.select(*args, **options, out=out) is out
        np.testing.assert_array_equal(to_numpy(out), expected)
        if ab == "none":  # a scalar has another shape: an error in this mode
            return
        half = oracle_select(c != 0, t, np.float32(0.5), auto_broadcast=ab, axis=axis,
                             cond_broadcast=cb)  # fmt: skip
        for _ in range(2):
            got = asel.select(args[0], args[1], 0.5, **options)
            np.testing.assert_array_equal(to_numpy(got), half)
        backend = asel.backend_for(*args)
        assert type(backend).__name__ == "StrictBackend"
        assert backend.calls == 5, backend.calls  # every select above ran its select
        which = rng.integers(0, 3, (5,))
        cases = [rng.standard_normal(5) for _ in range(3)]
        got = asel.select_n(xp.asarray(which), *(xp.asarray(x) for x in cases))
        np.testing.assert_array_equal(to_numpy(got), oracle_select_n(which, cases))
        with pytest.raises(asel.ScalarOverflowError, match="else=300"):
            asel.select(xp.asarray(c != 0), xp.asarray(t.astype(np.uint8)), 300, **options)
    finally:
        asel.register_backend("array_api_strict", None)
