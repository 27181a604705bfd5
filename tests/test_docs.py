"""Every code example of the documentation runs: the pages in ``docs/`` and the docstrings.

Pages (``docs/*.md``): each fenced block is run in order, in one namespace per page
(a later block may use what an earlier one defined):

* a ``pycon`` block, or a ``python`` block that starts with ``>>>``, is a doctest:
  its output must match;
* any other ``python`` block is run as a script (it must not raise);
* ``console``, ``text``, ``toml`` and other blocks are not Python and are not run.

A block that imports an array library that is not installed is skipped (the pages
show PyTorch, JAX, Dask and array-api-strict; CuPy needs a GPU). Pages may make
examples big to show scale; :data:`SHRINK` scales such a page down for the test.

Docstrings: every module of ``arrayselect`` (backends included) that imports here
has its ``>>>`` examples run with :mod:`doctest`.
"""

from __future__ import annotations

import contextlib
import doctest
import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import arrayselect
from arrayselect import adapters

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md") if p.name != "README.md")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

#: Per page, text replacements applied before running it: sizes chosen to show scale
#: (10**8 elements, a 2-worker cluster) are shrunk so the test stays quick.
SHRINK: dict[str, list[tuple[str, str]]] = {
    "scaling.md": [("10**8", "10**5"), ("5 * 10**6", "10**4")],
}

#: Libraries an example may need that are optional here.
OPTIONAL = ("torch", "jax", "dask", "cupy", "array_api_strict", "ml_dtypes", "flatbuffers")

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_IMPORT = re.compile(r"^\s*(?:>>>\s*|\.\.\.\s*)?(?:import|from)\s+([\w.]+)", re.MULTILINE)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    language: str
    text: str
    line: int  # 1-based line of the first line of code


def fenced_blocks(text: str) -> list[Block]:
    """Fenced code blocks of a Markdown page, with their indentation removed."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence = match["indent"], match["fence"]
        language = match["info"].strip().split(" ")[0].strip("{}") if match["info"] else ""
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                break
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        blocks.append(Block(language, "\n".join(body) + "\n", i + 2))
        i = j + 1
    return blocks


def _kind(block: Block) -> str | None:
    first = next((ln for ln in block.text.splitlines() if ln.strip()), "")
    if block.language in ("pycon", "doctest") or (
        block.language in ("python", "py", "python3") and first.lstrip().startswith(">>>")
    ):
        return "doctest"
    if block.language in ("python", "py", "python3"):
        return "script"
    return None


def _missing_library(code: str) -> str | None:
    for name in _IMPORT.findall(code):
        root = name.partition(".")[0]
        if root in OPTIONAL and importlib.util.find_spec(root) is None:
            return root
    if "cupy" in code and _no_gpu():
        return "cupy (with a CUDA GPU)"
    return None


def _no_gpu() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() < 1)
    except Exception:
        return True


@contextlib.contextmanager
def _jax_defaults(text: str) -> Iterator[None]:
    """Run a page with JAX's default configuration (64-bit types off).

    The pages are written for a fresh interpreter; the test suite enables
    ``jax_enable_x64`` for its own JAX tests, so it is switched back for the page.
    """
    if "jax" not in text or importlib.util.find_spec("jax") is None:
        yield
        return
    with adapters.get("jax").x64(False):
        yield


def run_page(page: Path) -> list[str]:
    """Run the examples of ``page``; return notes about skipped blocks.

    Raises
    ------
    AssertionError
        With the doctest report or the traceback of the first failing block.
    """
    text = page.read_text(encoding="utf-8")
    with _jax_defaults(text):
        return _run_blocks(page, text)


def _run_blocks(page: Path, text: str) -> list[str]:
    for old, new in SHRINK.get(page.name, []):
        text = text.replace(old, new)
    # As a script the reader runs: blocks guarded by ``if __name__ == "__main__":`` run.
    globs: dict[str, object] = {"__name__": "__main__"}
    skipped: list[str] = []
    parser = doctest.DocTestParser()
    for block in fenced_blocks(text):
        kind = _kind(block)
        if kind is None:
            continue
        missing = _missing_library(block.text)
        if missing is not None:
            skipped.append(f"{page.name}:{block.line}: needs {missing}")
            continue
        if kind == "script":
            code = compile(block.text, f"{page}:{block.line}", "exec")
            exec(code, globs)
            continue
        test = parser.get_doctest(block.text, globs, page.name, str(page), block.line - 1)
        output: list[str] = []
        runner = doctest.DocTestRunner(optionflags=FLAGS)
        runner.run(test, out=output.append, clear_globs=False)
        globs.update(test.globs)
        if runner.failures:
            raise AssertionError("".join(output))
    return skipped


def test_pages_exist() -> None:
    """The pages the documentation promises are there (owned by this branch)."""
    names = {p.stem for p in PAGES}
    for page in (
        "index",
        "getting_started",
        "semantics",
        "backends",
        "plugins",
        "performance",
        "differences",
        "api",
    ):
        assert page in names, page


def test_fenced_blocks_parser() -> None:
    text = "x\n```pycon\n>>> 1 + 1\n2\n```\n\n  ```python\n  y = 3\n  ```\n```text\n>>> no\n```\n"
    blocks = fenced_blocks(text)
    assert [(b.language, b.text, b.line) for b in blocks] == [
        ("pycon", ">>> 1 + 1\n2\n", 3),
        ("python", "y = 3\n", 8),
        ("text", ">>> no\n", 11),
    ]
    assert [_kind(b) for b in blocks] == ["doctest", "script", None]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_examples(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pages are written for a reader at the top of a checkout (backends.md imports
    # docs/_ext/capabilities.py from there); what a page adds to sys.path is undone.
    monkeypatch.chdir(DOCS.parent)
    monkeypatch.setattr(sys, "path", list(sys.path))
    skipped = run_page(page)
    if skipped:
        pytest.skip("ran the rest; " + "; ".join(skipped))


def test_page_examples_use_the_package_and_say_what_they_need() -> None:
    """A reader copies an example into a fresh interpreter anywhere: it imports the
    package, never a documentation helper by a path relative to a checkout, and an
    example that needs a package JAX does not install imports it first (an ImportError
    naming it, rather than one from deep inside jax.export)."""
    for page in PAGES:
        for block in fenced_blocks(page.read_text()):
            if block.language not in ("python", "pycon"):
                continue
            where = f"{page.name}:{block.line}"
            assert "sys.path" not in block.text, where
            assert "docs/_ext" not in block.text, where
            if ".serialize()" in block.text:
                assert "import flatbuffers" in block.text, where


def _modules() -> list[str]:
    import arrayselect.backends  # the built-in backends live in their own package

    names = ["arrayselect", "arrayselect.backends"]
    for package in (arrayselect, arrayselect.backends):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            names.append(info.name)
    return sorted(set(names))


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # e.g. the CuPy backend without CuPy
        pytest.skip(f"{name} does not import here: {exc}")
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    output: list[str] = []
    for test in finder.find(module, name, globs={"__name__": name}):
        if test.examples:
            runner.run(test, out=output.append)
    assert not runner.failures, "".join(output)


# --------------------------------------------------------------------------- build tools


def _ext(name: str) -> Any:
    """A module of ``docs/_ext`` (they need matplotlib, from the docs extra)."""
    pytest.importorskip("matplotlib", reason="matplotlib is in the docs extra")
    path = str(DOCS / "_ext")
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module(name)


def test_perf_reads_asv_results(tmp_path: Path) -> None:
    """The performance page's plots read asv's result files (format 2)."""
    import json

    perf_data = _ext("perf_data")
    machine = tmp_path / "asv_benchmarks" / ".asv" / "results" / "box"
    machine.mkdir(parents=True)
    (machine / "machine.json").write_text("{}")
    columns = ["result", "params", "version", "started_at", "duration"]
    params = [["'numpy'", "'dask'"], ["1000", "100000"]]
    result = {
        "commit_hash": "0123456789abcdef",
        "env_name": "existing-py",
        "date": 1700000000000,
        "params": {"machine": "box"},
        "python": "3.11",
        "requirements": {},
        "env_vars": {},
        "result_columns": columns,
        "results": {
            "select.SameShape.time_select": [[1.0, 2.0, None, 8.0], params, "v"],
            "select.SameShape.time_peer": [[2.0, 2.0, 1.0, 4.0], params, "v"],
            "select.ImportTime.timeraw_import_arrayselect": [[0.1], [], "v"],
            "select.Plain.time_select": [[3.0], [], "v"],
            "select.Plain.time_peer": [[6.0], [], "v"],
        },
        "durations": {},
        "version": 2,
    }
    (machine / "0123abcd-existing-py.json").write_text(json.dumps(result))
    (files,) = [perf_data.find_asv_results(tmp_path)]
    assert [f.name for f in files] == ["0123abcd-existing-py.json"]
    rows = perf_data.asv_ratios(files[0])
    got = {(r["class"], r["params"]): r["ratio"] for r in rows}
    assert got == {
        ("Plain", ()): 0.5,
        ("SameShape", ("numpy", "1000")): 0.5,
        ("SameShape", ("numpy", "100000")): 1.0,
        ("SameShape", ("dask", "100000")): 2.0,
    }
    text = perf_data.make_report(tmp_path / "perf.png", tmp_path)
    assert "asv results" in text and "`box`" in text and (tmp_path / "perf.png").exists()


def test_mode_diagrams_follow_the_core(tmp_path: Path) -> None:
    """The figures' aligned shapes broadcast to select's output, and every file is written."""
    import numpy as np

    mode_diagrams = _ext("mode_diagrams")
    for ex in mode_diagrams.grid_examples():
        out, aligned = mode_diagrams.aligned_shapes(ex)
        result = arrayselect.select(ex.cond, ex.then, ex.else_, **ex.options)
        assert result.shape == out
        inputs = (ex.cond, ex.then, ex.else_)
        wide = [np.broadcast_to(x.reshape(a), out) for x, a in zip(inputs, aligned, strict=True)]
        assert np.array_equal(result, np.where(wide[0], wide[1], wide[2]))
    written = mode_diagrams.write_all(tmp_path)
    assert {p.name for p in written} >= {"mode_numpy.png", "mode_pdpd.png", "shapes_pdpd.png"}
    assert all(p.stat().st_size > 1000 for p in written)


def test_perf_measures_the_native_backend_outside_force_portable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The build-time measurement times the native backend as a user calls it: no
    force_portable block (not even force_portable(False)) around those calls."""
    import contextlib

    import arrayselect as asel

    perf_data = _ext("perf_data")
    blocks: list[bool] = []
    real = asel.force_portable

    @contextlib.contextmanager
    def recorded(enabled: bool = True) -> Any:
        blocks.append(enabled)
        with real(enabled):
            yield

    monkeypatch.setattr(asel, "force_portable", recorded)
    rows = perf_data.measure(sizes=[100], dtypes=["float64"], rounds=1)
    assert {r["params"][0] for r in rows} == {"numpy", "portable"}
    assert blocks and all(blocks), f"force_portable({blocks}) around native calls"


def test_the_readme_example_runs_and_says_what_it_returns() -> None:
    """The README's Python block runs, and each ``# result`` comment is what the line gives."""
    text = (DOCS.parent / "README.md").read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    namespace: dict[str, object] = {}
    for line in block.splitlines():
        code, _, comment = line.partition("  # ")
        if not code.strip() or code.lstrip().startswith("#"):
            continue
        if comment and not code.lstrip().startswith(("import", "cond", "then", "else_")):
            got = eval(code, namespace)
            expected = comment.split(":")[-1].strip()
            if expected[:1] in "[(":  # a list or tuple literal: compare values
                values = got.tolist() if hasattr(got, "tolist") else got
                assert values == eval(expected), (code, got)
            else:  # a dtype's name
                assert str(got.dtype if hasattr(got, "dtype") else got) == expected, (code, got)
        else:
            exec(code, namespace)


def _plain_signature(obj: object) -> str:
    """``inspect.signature`` without annotations; a callable default by its name."""
    sig = inspect.signature(obj)  # type: ignore[arg-type]
    params = []
    for p in sig.parameters.values():
        p = p.replace(annotation=inspect.Parameter.empty)
        if p.default is not inspect.Parameter.empty and callable(p.default):
            p = p.replace(default=_Named(p.default.__name__))
        params.append(p)
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


class _Named:
    """A default shown by name (``print``, not ``<built-in function print>``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


def test_the_api_summary_lists_every_public_name_with_its_signature() -> None:
    import arrayselect

    text = (DOCS / "api.md").read_text()
    block = text.split("## Summary", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    listed: dict[str, str] = {}
    for line in block.splitlines():
        code = line.split("  #")[0].strip()
        if code.startswith("asel."):
            name, _, signature = code[len("asel.") :].partition("(")
            listed[name] = "(" + signature if signature else ""
    assert sorted(listed) == sorted(arrayselect.__all__)
    for name, signature in listed.items():
        obj = getattr(arrayselect, name)
        if inspect.isfunction(obj):
            assert signature == _plain_signature(obj), name
        else:
            assert signature == "", name


def test_the_gpu_page_shows_ratios_as_peer_over_select() -> None:
    """One direction on every page: the peer's time over select's (above 1: faster)."""
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import gpu_results
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    text = gpu_results.section()
    record = json.loads(gpu_results.DATA.read_text())
    sweep = [r for r in record["rows"] if r["name"].startswith("sweep 2^")]
    assert sweep
    for r in sweep:
        shown = f"| {1 / r['ratio_to_where']:.3f} |"
        assert shown in text, r["name"]
    assert "worst ratio" not in text and "below 1" not in text
