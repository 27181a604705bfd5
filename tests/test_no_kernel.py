"""arrayselect without its compiled modules: a build on a machine with no C compiler.

* The suite's conformance, bad-input and ``out=`` tests, run in a child process
  in which ``arrayselect._dispatch._fastcall``, the NumPy kernel and the torch backend's
  recent-call check cannot be imported (a meta-path finder raises ``ImportError``
  for exactly those names, as a missing or broken build does), pass as they do with
  them.
* ``CC=false pip install`` of the sdist succeeds with one warning, and the
  installed package imports, says what is missing and selects.
* ``ARRAYSELECT_REQUIRE_KERNEL=1`` turns the failed build into an error.
* The compiled modules of this build are stripped.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import warnings
from pathlib import Path

import pytest

import arrayselect as asel

ROOT = Path(__file__).resolve().parent.parent
COMPILED = (
    "arrayselect._dispatch._fastcall",
    "arrayselect.backends.shared._select_kernel",
    "arrayselect.backends.torch_backend._fields",
)
WARNING = "WARNING: arrayselect is installed without"

# Run first in the child: the compiled modules become unimportable, as in a
# build whose C compiler failed.
BLOCK_COMPILED = f"""
import sys

class _NoCompiled:
    def find_spec(self, name, path=None, target=None):
        if name in {COMPILED!r}:
            raise ImportError(f"No module named {{name!r}} (blocked by the test)")
        return None

sys.meta_path.insert(0, _NoCompiled())
"""


def _child(code: str, *, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    return output


def test_blocked_build_reports_what_is_missing() -> None:
    code = BLOCK_COMPILED + textwrap.dedent("""
        import numpy as np
        import arrayselect as asel
        info = asel.runtime_info()
        assert not info["kernel"]["built"] and "blocked" in info["kernel"]["missing"], info
        assert not info["fastcall"] and "blocked" in info["fastcall_missing"], info
        assert info["kernel"]["isa"] == "none"
        cond = np.array([[True], [False]])
        for _ in range(3):  # general path, then the pure-Python fast path's hits
            r = asel.select(cond, np.arange(6, dtype=np.int16).reshape(2, 3), np.int16(-1))
            assert r.dtype == np.int16 and r.tolist() == [[0, 1, 2], [-1, -1, -1]], r
        asel.show_runtime()
        # the kernel's module, as docs/platforms.md says: the knobs do nothing, the
        # reports are empty, what would run or describe the kernel raises
        from arrayselect.backends.shared import kernel as k
        assert k.KERNEL_MISSING and k.isa_info()["current"] == "none"
        assert k.get_parallel_threshold() == 0 and k.get_stream_threshold() == 0
        k.set_parallel_threshold(1), k.set_stream_threshold(1), k.set_load_guard(False)
        k.shutdown_pool()
        for call in (lambda: k.explain(cond), lambda: k.set_isa("baseline")):
            try:
                call()
            except RuntimeError:
                pass
            else:
                raise AssertionError("no RuntimeError without the kernel")
        try:
            import torch
        except ImportError:
            sys.exit(0)
        r = asel.select(torch.tensor([True, False]), torch.arange(2.0), -1.0)
        assert r.tolist() == [0.0, -1.0], r
        why = asel.runtime_info()["torch"]["recent_checks"]["fields"]
        # on a torch the design was not verified on (the oldest set's), that refusal
        # comes before the blocked import
        from arrayselect.backends.torch_backend import recent
        version = ".".join(torch.__version__.split("+")[0].split(".")[:2])
        verified = version in recent.FIELDS_VERIFIED_ON
        assert ("blocked" if verified else "is not one of") in why, why
        asel.show_runtime()
    """)
    output = _child(code, cwd=ROOT)
    assert "numpy kernel: MISSING (ImportError" in output
    assert "fast-path hit path: Python" in output
    if "torch backend:" in output:  # torch installed: the C design is missing, said so
        # (or, on a torch it was not verified on, that first)
        assert "not used: fields: ImportError" in output or "is not one of" in output, output


WARN_ONCE = BLOCK_COMPILED + textwrap.dedent("""
    import warnings
    import numpy as np
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import arrayselect as asel
        from arrayselect.backends.numpy_backend.numpy_route import KernelMissingWarning
        assert caught == [], [str(w.message) for w in caught]  # importing says nothing
        c = np.array([True, False])
        for _ in range(3):
            asel.select(c, np.arange(2.0), 0.5)
        asel.where(c, np.arange(2), 0.5)
        asel.select_n(np.array([0, 1]), np.zeros(2), np.ones(2))
        asel.select_cases([c], [np.ones(2)], 0.0)
    mine = [w for w in caught if issubclass(w.category, KernelMissingWarning)]
    assert issubclass(KernelMissingWarning, RuntimeWarning)
    print("WARNINGS", len(mine), len(caught))
    for w in mine:
        print("MESSAGE", w.message)
""")


def test_a_build_without_the_kernel_warns_once_at_the_first_select() -> None:
    """A plain ``pip install`` hides the build's warning, so the first select says it."""
    output = _child(WARN_ONCE, cwd=ROOT)
    assert "WARNINGS 1 1" in output, output
    message = output.split("MESSAGE ", 1)[1]
    assert "without its compiled NumPy kernel (ImportError" in message  # what is missing
    assert "slower: large selects cost what numpy.where costs" in message  # the cost
    assert "docs/platforms.md, 'How much slower'" in message  # where its figures are
    assert "apt install gcc python3-dev" in message and "reinstall" in message  # the remedy
    assert "ARRAYSELECT_KERNEL_WARNING=0" in message  # how to silence it


def test_the_missing_kernel_warning_can_be_silenced_by_environment() -> None:
    env = {**os.environ, "ARRAYSELECT_KERNEL_WARNING": "0"}
    assert "WARNINGS 0 0" in _child(WARN_ONCE, cwd=ROOT, env=env)


def test_a_build_with_the_kernel_does_not_warn() -> None:
    from arrayselect.backends.numpy_backend import numpy_route

    if not asel.runtime_info()["kernel"]["built"]:
        pytest.skip("this build has no kernel")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        numpy_route.warn_kernel_missing()


@pytest.mark.slow
def test_suite_passes_without_compiled_modules() -> None:
    """Conformance (dtypes, layouts, out=), bad inputs cold and warm, the fast-path
    protocol: the NumPy and PyTorch backends without the kernel and ``_fastcall``."""
    files = [
        "tests/test_bad_input.py",
        "tests/test_layout.py",
        "tests/test_dtypes.py",
        "tests/test_signature_cache.py",
        "tests/test_where.py",
    ]
    args = [*files, "-q", "-x", "-p", "no:cacheprovider", "-k", "numpy or torch"]
    code = BLOCK_COMPILED + textwrap.dedent(f"""
        import arrayselect, pytest
        assert not arrayselect.runtime_info()["kernel"]["built"]
        sys.exit(pytest.main({args!r}))
    """)
    output = _child(code, cwd=ROOT)
    assert " passed" in output and " failed" not in output, output[-3000:]


def _sdist(tmp_path: Path) -> Path:
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), "."],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=300,
    )
    (sdist,) = out.glob("arrayselect-*.tar.gz")
    return sdist


def _pip_install(sdist: Path, target: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``pip install`` of the sdist into ``target``, offline, with this environment's
    setuptools and NumPy as build requirements."""
    return subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "-v", "--no-build-isolation"),
            *("--no-deps", "--no-index", "--target", str(target), str(sdist)),
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


@pytest.mark.slow
def test_sdist_installs_without_a_compiler(tmp_path: Path) -> None:
    # build.__main__, not build: a setuptools build/ folder in the working directory
    # imports as an empty namespace package named build (seen under qemu, tests run from
    # the source tree)
    pytest.importorskip("build.__main__", reason="the sdist is made with `python -m build`")
    sdist = _sdist(tmp_path)
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert "LICENSE" in names
    assert "backends/shared/_kernel/select_kernel.c" in names
    assert "src/arrayselect/_dispatch/_fastcall.c" in names
    assert not any(name.startswith("tests/") for name in names), "the sdist ships no tests"

    target = tmp_path / "site"
    done = _pip_install(sdist, target, CC="false", ARRAYSELECT_REQUIRE_KERNEL="0")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert output.count(WARNING) == 1, output[-6000:]
    assert "the C compiler `false` failed" in output
    assert "ARRAYSELECT_REQUIRE_KERNEL=1" in output
    assert not list(target.rglob("*.so")) and not list(target.rglob("*.pyd"))
    (licence,) = target.glob("arrayselect-*.dist-info/licenses/LICENSE")
    assert licence.read_text() == (ROOT / "LICENSE").read_text()

    code = textwrap.dedent(f"""
        import numpy as np
        import arrayselect as asel
        assert asel.__file__.startswith({str(target)!r}), asel.__file__
        info = asel.runtime_info()
        assert not info["kernel"]["built"] and not info["fastcall"], info
        out = np.zeros((2, 3), np.float32)
        ones = np.ones((2, 3), np.float32)
        asel.select(np.array([True, False, True]), np.float32(7), ones, out=out)
        assert out.tolist() == [[7, 1, 7], [7, 1, 7]], out
    """)
    _child(code, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(target)})

    failed = _pip_install(sdist, tmp_path / "site2", CC="false", ARRAYSELECT_REQUIRE_KERNEL="1")
    assert failed.returncode != 0
    assert WARNING not in failed.stdout + failed.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="reads ELF section headers")
@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs binutils' readelf")
@pytest.mark.parametrize("module", COMPILED)
def test_compiled_modules_are_stripped(module: str) -> None:
    """No debug information and no symbol table beyond the dynamic one (the build's
    -g0 and -s); the exported entry points stay."""
    if not asel.runtime_info()["kernel"]["built"]:
        pytest.skip("this build has no compiled modules")
    # The file is found without importing it: the torch extension's package imports
    # torch, which an interpreter without torch lacks (the readelf check needs no torch).
    *package, name = module.split(".")
    spec = importlib.util.find_spec(".".join(package[:2]))
    assert spec is not None and spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations))).joinpath(*package[2:])
    found = [p for p in folder.glob(f"{name}.*") if p.suffix in (".so", ".pyd")]
    assert len(found) == 1, (folder, found)
    path = found[0]
    sections = subprocess.run(
        ["readelf", "-S", "-W", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert ".debug_info" not in sections and ".symtab" not in sections, sections
    exported = subprocess.run(
        ["readelf", "--dyn-syms", "-W", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert "PyInit_" in exported
