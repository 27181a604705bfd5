"""Imports go one way, down the layers: read from the source, not from a running import.

Every ``import`` statement of ``src/arrayselect`` and ``backends/`` counts, the ones
inside functions too (an import moved into a function to dodge a cycle is still a
cycle), and so does ``importlib.import_module`` with a literal name; only imports
under ``if TYPE_CHECKING:`` are left out (they never run).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "src" / "arrayselect"
BACKENDS = ROOT / "backends"

#: The core's layers, bottom first. Each is a package of ``src/arrayselect`` except the
#: top one, ``api``: the package's own modules (what users and backend authors import)
#: and the ``_tools`` package. A core module imports modules of its own layer or of the
#: layers below it.
LAYERS: tuple[str, ...] = ("_base", "_rules", "_validation", "_dispatch", "_operations", "api")

#: The top layer's modules outside ``_tools``: a new module at the top fails the test
#: until it is named here (or, better, placed in its layer's package).
API_MODULES = ("arrayselect", "arrayselect.plugin", "arrayselect.adapters", "arrayselect.__main__")


#: Imports against the rules for backends, each with why it is still there: issue 38
#: wants them gone (what backends share lives in ``backends/shared/``, which every
#: backend may import). The test fails when one disappears, so that this list only
#: shrinks.
KNOWN_BACKEND_IMPORTS: dict[tuple[str, str], str] = {
    ("backends.dask_backend", "arrayselect"): (
        "Dask composes: each block runs the public select, select_n, select_cases, apply_where"
    ),
}


def _module_name(path: Path) -> str:
    """``arrayselect._operations.select`` for the core's files, ``backends.x`` for the backends'."""
    if path.is_relative_to(BACKENDS):
        parts = ["backends", *path.relative_to(BACKENDS).with_suffix("").parts]
    else:
        parts = ["arrayselect", *path.relative_to(CORE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    """Whether ``name`` is a module of the tree: a file, a package, or a compiled
    extension (known by its ``.pyi`` stub or its built file)."""
    head, *rest = name.split(".")
    base = BACKENDS if head == "backends" else CORE
    if head == "arrayselect" and rest[:1] == ["backends"]:
        base, rest = BACKENDS, rest[1:]
    path = base.joinpath(*rest)
    return (
        path.with_suffix(".py").exists()
        or (path / "__init__.py").exists()
        or path.with_suffix(".pyi").exists()
        or any(path.parent.glob(path.name + ".*.so"))
    )


def _canonical(name: str) -> str:
    """``arrayselect.backends.x`` and ``backends.x`` are one module."""
    return (
        "backends" + name[len("arrayselect.backends") :]
        if name.startswith("arrayselect.backends")
        else name
    )


def _imports(path: Path) -> set[str]:
    """Every module of the tree that ``path`` imports at run time."""
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str, names: list[str]) -> None:
        target = _canonical(target)
        if not target.startswith(("arrayselect", "backends")):
            return
        submodules = [f"{target}.{n}" for n in names if _is_module(f"{target}.{n}")]
        found.update(submodules or [target])

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for branch in child.orelse:
                    visit(branch)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name, [])
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                add(target, [alias.name for alias in child.names])
            elif (
                isinstance(child, ast.Call)
                and ast.unparse(child.func).endswith("import_module")
                and child.args
                and isinstance(child.args[0], ast.Constant)
                and isinstance(child.args[0].value, str)
            ):
                add(child.args[0].value, [])
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found.discard(me)
    return found


def _graph() -> dict[str, set[str]]:
    files = sorted(CORE.rglob("*.py")) + sorted(BACKENDS.rglob("*.py"))
    return {_module_name(path): _imports(path) for path in files}


GRAPH = _graph()


def _layer_of(module: str) -> int:
    """The index in ``LAYERS`` of a core module's layer: its package's."""
    package = module.split(".")[1] if module.count(".") else ""
    if module in API_MODULES or package == "_tools":
        return LAYERS.index("api")
    if package in LAYERS:
        return LAYERS.index(package)
    raise AssertionError(f"{module} is in no layer: move it into one of {LAYERS}")


def _cycle() -> list[str] | None:
    """One import cycle of the tree, or ``None``."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def walk(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(GRAPH.get(module, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := walk(target)):
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(GRAPH):
        if module not in state and (found := walk(module)):
            return found
    return None


def test_the_reader_sees_the_imports_it_must() -> None:
    """The reader itself: function-level, relative, extension and by-name imports."""
    assert "arrayselect._operations.where" in GRAPH["arrayselect._operations.generic"]
    assert "backends.shared._select_kernel" in GRAPH["backends.shared.kernel"]
    assert "backends.shared.kernel" in GRAPH["backends.numpy_backend"]
    assert "backends.numpy_backend" in GRAPH["arrayselect"]  # import_module("...")
    assert "arrayselect._tools.bench" in GRAPH["arrayselect.__main__"]  # inside a function


def test_no_import_cycle() -> None:
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_every_core_module_is_in_a_layer() -> None:
    core = [m for m in GRAPH if not m.startswith("backends")]
    for module in core:
        _layer_of(module)
    packages = {p.name for p in CORE.iterdir() if (p / "__init__.py").exists()}
    assert packages == {*LAYERS[:-1], "_tools"}, "the core's packages are its layers"


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if not m.startswith("backends")))
def test_core_imports_go_down(module: str) -> None:
    """A core module imports its own layer or those below; only the package's
    ``__init__`` loads a backend (NumPy's, which comes with the package)."""
    mine = _layer_of(module)
    for target in sorted(GRAPH[module]):
        if target.startswith("backends"):
            assert (module, target) == ("arrayselect", "backends.numpy_backend"), (
                f"{module} imports the backend {target}: the core finds backends by name "
                "(arrayselect._dispatch.registry)"
            )
            continue
        assert _layer_of(target) <= mine, (
            f"{module} ({LAYERS[mine]}) imports {target} "
            f"({LAYERS[_layer_of(target)]}), a layer above it"
        )


def test_backends_import_only_the_plugin_module_and_their_own_package() -> None:
    wrong = set()
    for module, targets in GRAPH.items():
        if not module.startswith("backends"):
            continue
        own = ".".join(module.split(".")[:2])
        for target in targets:
            if target == "arrayselect.plugin" or target.split(".")[:2] == ["backends", "shared"]:
                continue
            if target == own or target.startswith(own + "."):
                continue
            wrong.add((module, target))
    unexplained = sorted(wrong - KNOWN_BACKEND_IMPORTS.keys())
    assert not unexplained, f"backends import past arrayselect.plugin: {unexplained}"
    gone = sorted(KNOWN_BACKEND_IMPORTS.keys() - wrong)
    assert not gone, f"fixed, so take them out of KNOWN_BACKEND_IMPORTS: {gone}"


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _modules_in(layer: str) -> tuple[str, ...]:
    """The modules of a layer as the architecture page names them: ``_rules.shapes``."""
    if layer == "api":
        top = tuple(m.removeprefix("arrayselect.") for m in API_MODULES)
        return top + tuple(sorted(m.removeprefix("arrayselect.") for m in GRAPH if "._tools." in m))
    found = {m.removeprefix("arrayselect.") for m in GRAPH if m.startswith(f"arrayselect.{layer}.")}
    found |= {f"{layer}.{p.name.split('.')[0]}" for p in (CORE / layer).glob("*.pyi")}
    return tuple(sorted(found))


def test_the_architecture_page_shows_these_layers() -> None:
    """docs/architecture.md's layer table is ``LAYERS``, row by row, each row naming
    every module of its layer's package."""
    rows = {}
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and (layer := cells[0].strip("`").rstrip("/")) in LAYERS:
            rows[layer] = tuple(sorted(re.findall(r"`([^`]+)`", cells[1])))
    assert list(rows) == list(LAYERS)
    for layer in LAYERS:
        assert rows[layer] == tuple(sorted(_modules_in(layer))), layer


def test_what_the_architecture_page_names_exists() -> None:
    """Every file and every core module (and its attribute) the page names."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    names = set(re.findall(r"`([^`\s]+)`", text))
    checked = 0
    for name in sorted(names):
        if "/" in name and not name.startswith("arrayselect"):
            assert (ROOT / name.rstrip("/")).exists() or (CORE / name.rstrip("/")).exists(), (
                f"docs/architecture.md names {name}"
            )
            checked += 1
        elif match := re.fullmatch(r"(_[a-z]+)\.(\w+)(?:\.(\w+))?", name):
            package, module, attribute = match.groups()
            assert _is_module(f"arrayselect.{package}.{module}"), (
                f"docs/architecture.md names {name}"
            )
            if attribute is not None:
                imported = importlib.import_module(f"arrayselect.{package}.{module}")
                assert hasattr(imported, attribute), f"docs/architecture.md names {name}"
            checked += 1
    assert checked > 30  # the reader found the names
