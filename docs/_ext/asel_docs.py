"""Sphinx extension: generate the pages' tables and figures from the code at build time.

On ``builder-inited`` it writes into ``docs/_generated/`` (ignored by git, and
excluded as source documents; the pages pull the files in with MyST's
``{include}`` directive and ``![...](...)`` images):

=====================================  =================================================
file                                   made from
=====================================  =================================================
``capabilities_dtypes.md``,            ``capabilities.py``: every installed array library,
``capabilities_features.md``,          probed through :mod:`arrayselect.adapters`
``capabilities_versions.md``
``backends_registry.md``               ``arrayselect._dispatch.registry``: built-in backends and
                                       installed entry points
``spec_examples.md``                   :data:`arrayselect._tools.selfcheck.EXAMPLES` run through
                                       :func:`arrayselect.select_shape` and ``select``
``mode_*.png``, ``shapes_*.png``       ``mode_diagrams.py`` (the core's plans)
``api.md``                             ``arrayselect.__all__``
``perf.md``, ``perf*.png``             ``perf_data.py``: asv results when present, else a
                                       short measurement made during the build, drawn
                                       by ``perf_charts.py``
``where_speed.md``, ``torch_speed.md``  ``speed_tables.py``: ``where`` against each
                                       library's ``where``, the PyTorch backend against
                                       ``torch.where``, measured in the build
``gpu_perf.md``                        ``gpu_results.py``: the GPU figures recorded in
                                       ``docs/_data/gpu_results.json``
=====================================  =================================================
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import capabilities
import gpu_results
import mode_diagrams
import numpy as np
import perf_data
import speed_tables

import arrayselect
from arrayselect._dispatch import registry as _registry
from arrayselect._tools.selfcheck import EXAMPLES

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent
GENERATED = DOCS / "_generated"


def _write(name: str, text: str) -> None:
    path = GENERATED / name
    # Rewrite only on change, so Sphinx's incremental build sees real changes only.
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def write_capabilities() -> None:
    """The dtype x backend and feature x backend tables, probed now."""
    started = time.perf_counter()
    rows = capabilities.capability_table()
    seconds = time.perf_counter() - started
    _write("capabilities_dtypes.md", capabilities.dtype_markdown(rows))
    _write("capabilities_features.md", capabilities.feature_markdown(rows))
    libs: dict[str, str] = {}
    for row in rows:
        libs.setdefault(row.library, row.version)
    missing = [key for key, _ in capabilities.LIBRARIES if key not in libs]
    lines = [
        "| library | version | backends probed |",
        "| --- | --- | --- |",
    ]
    for key, version in libs.items():
        names = ", ".join(f"`{r.backend}`" for r in rows if r.library == key)
        lines.append(f"| {key} | {version} | {names} |")
    text = "\n".join(lines) + "\n\n"
    text += (
        f"Probed in {seconds:.1f} s while these pages were built, with arrayselect "
        f"{arrayselect.__version__} and NumPy {np.__version__}."
    )
    if missing:
        text += (
            " Not installed (or no device) on the build machine, so not in the tables: "
            + ", ".join(missing)
            + "."
        )
    _write("capabilities_versions.md", text + "\n")


def write_registry() -> None:
    """Built-in backends and the installed plugins of the entry-point group."""
    lines = ["| library key | factory | source |", "| --- | --- | --- |"]
    for key, spec in _registry._BUILTIN.items():
        lines.append(f"| `{key}` | `{spec}` | built in |")
    for ep in entry_points(group=_registry.ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "?"
        lines.append(f"| `{ep.name}` | `{ep.value}` | entry point of `{dist}` |")
    _write("backends_registry.md", "\n".join(lines) + "\n")


def _shape_of(spec: Any) -> tuple[int, ...]:
    if isinstance(spec, tuple) and spec[0] in ("mask", "ones", "zeros"):
        return tuple(spec[1])
    if isinstance(spec, tuple) and spec[0] == "uint8":
        return np.asarray(spec[1]).shape
    return np.asarray(spec).shape


def write_spec_examples() -> None:
    """Every specification example, with what ``select_shape``/``select`` answer now."""
    lines = [
        "| example | cond | then | else | options | result |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for ex in EXAMPLES:
        shapes = [_shape_of(s) for s in (ex.cond, ex.then, ex.else_)]
        opts = ", ".join(f"`{k}={v!r}`" for k, v in ex.options.items()) or "defaults"
        try:
            out = arrayselect.select_shape(*shapes, **ex.options)
            result = f"`{out}`"
            if isinstance(ex.expected, list):
                cond = np.asarray(
                    ex.cond[1] if isinstance(ex.cond, tuple) else ex.cond,
                    dtype=np.uint8 if isinstance(ex.cond, tuple) else bool,
                )
                values = arrayselect.select(
                    cond, np.asarray(ex.then), np.asarray(ex.else_), **ex.options
                )
                result = f"`{values.tolist()}`"
        except arrayselect.SelectShapeError as exc:
            result = f"`SelectShapeError`: {exc}".replace("|", "\\|")
        cells = [ex.source.strip()] + [f"`{s}`" for s in shapes] + [opts, result]
        lines.append("| " + " | ".join(cells) + " |")
    _write("spec_examples.md", "\n".join(lines) + "\n")


def write_api() -> None:
    """One autodoc directive per public name, in the order of ``__all__``."""
    parts = []
    for name in sorted(arrayselect.__all__, key=lambda n: (n.startswith("_"), n.lower())):
        obj = getattr(arrayselect, name)
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            directive = "autoexception"
        elif inspect.isclass(obj):
            directive = "autoclass"
        elif callable(obj):
            directive = "autofunction"
        else:
            continue  # data: documented in the text of the page
        # autodoc emits reST, so the directive goes in an eval-rst block (MyST would
        # otherwise parse the generated reST as Markdown).
        parts.append(f"```{{eval-rst}}\n.. {directive}:: arrayselect.{name}\n```\n")
    _write("api.md", "\n".join(parts))


#: Page order of the site. Pages other branches own (``numpy_kernel``, ``jax``,
#: ``scaling``, ``gpu``, ``hardening``) are listed when their file exists; any other page found in
#: ``docs/`` is added before the API reference, so none is left out of the toctree.
PAGE_ORDER = (
    "getting_started",
    "platforms",
    "semantics",
    "where",
    "select_family",
    "backends",
    "numpy_kernel",
    "torch",
    "jax",
    "scaling",
    "gpu",
    "plugins",
    "architecture",
    "performance",
    "differences",
    "hardening",
)
LAST_PAGES = ("api",)


def write_toctree() -> None:
    """The site's toctree, from the pages that exist."""
    present = {p.stem for p in DOCS.iterdir() if p.suffix in (".md", ".rst")}
    present -= {"index", "README"}
    pages = [p for p in PAGE_ORDER if p in present]
    pages += sorted(present - set(PAGE_ORDER) - set(LAST_PAGES))
    pages += [p for p in LAST_PAGES if p in present]
    body = "\n".join(pages)
    _write("toctree.md", f"```{{toctree}}\n:maxdepth: 2\n\n{body}\n```\n")


def write_cli() -> None:
    """``python -m arrayselect --help`` and each subcommand's help, as this build has them."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, COLUMNS="88")
        return subprocess.run(
            [sys.executable, "-m", "arrayselect", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    top = run("--help")
    parts = [
        "`python -m arrayselect` (also installed as the `arrayselect` command). Its help, "
        "as this build's version prints it:",
        "",
        "```text",
        top.stdout.rstrip(),
        "```",
    ]
    commands = re.search(r"\{([\w,-]+)\}", top.stdout)
    names = commands.group(1).split(",") if commands else []
    bench = (
        "```text\n" + run("bench", "--help").stdout.rstrip() + "\n```\n"
        if "bench" in names
        else "*This build of arrayselect has no `bench` command.*\n"
    )
    _write("cli_bench.md", bench)
    for command in names:
        sub = run(command, "--help")
        if sub.returncode == 0:
            parts += [
                "",
                f"`python -m arrayselect {command} --help`:",
                "",
                "```text",
                sub.stdout.rstrip(),
                "```",
            ]
    _write("cli.md", "\n".join(parts) + "\n")


def generate(app: Any) -> None:
    GENERATED.mkdir(exist_ok=True)
    write_toctree()
    write_api()
    write_cli()
    write_registry()
    write_spec_examples()
    mode_diagrams.write_all(GENERATED)
    write_capabilities()
    report = perf_data.make_report(GENERATED / "perf.png", DOCS.parent)
    _write("perf.md", report)
    _write("where_speed.md", speed_tables.where_table())
    _write("torch_speed.md", speed_tables.torch_table())
    _write("gpu_perf.md", gpu_results.section())


def optdoc_role(
    name: str,
    rawtext: str,
    text: str,
    lineno: int,
    inliner: Any,
    options: Any = None,
    content: Any = None,
) -> tuple[list[Any], list[Any]]:
    """``{optdoc}`page``` or ``{optdoc}`title <page>```: a link to ``page`` if it exists.

    Pages other branches own may not have landed yet; without the page the
    title is shown as plain text (``{doc}`` would make the strict build fail).
    """
    from docutils import nodes
    from sphinx import addnodes

    env = inliner.document.settings.env
    match = re.fullmatch(r"\s*(.*?)\s*<(.+)>\s*", text)
    title, target = (match.group(1), match.group(2)) if match else (None, text.strip())
    if target in env.found_docs:
        node = addnodes.pending_xref(
            rawtext,
            refdomain="std",
            reftype="doc",
            reftarget=target,
            refexplicit=title is not None,
            refdoc=env.docname,
            refwarn=True,
        )
        node += nodes.inline(rawtext, title or target, classes=["xref", "std", "std-doc"])
        return [node], []
    return [nodes.emphasis(rawtext, title or f"{target} (page not included in this build)")], []


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", generate)
    app.add_role("optdoc", optdoc_role)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
