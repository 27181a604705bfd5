"""Every cache is a BoundedCache, registered: found by reading the source.

A dict (or list) kept by a module or an object and written to after import is either a
:class:`arrayselect._base.caches.BoundedCache`, written through ``put``, or one of the
registries below, which grow per library or per setting, never per call. A new one
fails :func:`test_no_container_outside_a_bounded_cache_is_written_after_import`; the
cache-bounds tests of ``tests/test_concurrency.py`` then see every cache through
:func:`arrayselect._base.caches.cache_sizes`, since a BoundedCache registers itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from arrayselect._base.caches import BoundedCache, cache_sizes

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    [*(ROOT / "src" / "arrayselect").rglob("*.py"), *(ROOT / "backends").rglob("*.py")]
)

#: Containers written after import that are not caches: (file, name) and why.
NOT_CACHES: dict[tuple[str, str], str] = {
    ("src/arrayselect/_dispatch/registry.py", "_factories"): "one factory per library key",
    ("src/arrayselect/_dispatch/registry.py", "_backends"): "one backend per library (and forced)",
    (
        "src/arrayselect/_dispatch/registry.py",
        "fast_paths",
    ): "one fast path per array type of a backend",
    ("src/arrayselect/_dispatch/registry.py", "_installed_fast_paths"): "as fast_paths",
    ("src/arrayselect/_dispatch/registry.py", "_fast_path_library"): "as fast_paths",
    (
        "src/arrayselect/_dispatch/registry.py",
        "tracing_checks",
    ): "one check per array type of a backend",
    ("src/arrayselect/_base/caches.py", "_reports"): "one report per named cache",
    ("src/arrayselect/_dispatch/registry.py", "forcing"): "a counter of open force_portable blocks",
    ("src/arrayselect/_base/settings.py", "_listeners"): "one subscription per compiled kernel",
    ("src/arrayselect/_base/import_hook.py", "_finder.watched"): "one list per watched library",
    ("src/arrayselect/_tools/bench.py", "self.seconds"): "the samples of one benchmark row",
    ("backends/torch_backend/__init__.py", "_fork_guarded"): "a flag, set once",
    ("backends/torch_backend/dynamo.py", "ALLOWED"): "a flag, set once",
    ("backends/torch_backend/recent.py", "self._slots"): (
        "two fixed slots, the last two signatures, in front of the signature cache "
        "(docs/plugins.md allows such a check): a list that never grows"
    ),
}


def _module_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.ImportFrom):  # another module's container, written here
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def _written(path: Path) -> set[str]:
    """Module-level or ``self.`` containers written inside functions of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _module_names(tree)
    found = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            bases = []
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bases += [
                    s.value for t in targets for s in ast.walk(t) if isinstance(s, ast.Subscript)
                ]
            writes = ("setdefault", "update", "__setitem__", "append", "extend")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in writes
            ):
                bases.append(node.func.value)
            for base in bases:
                while isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute):
                    base = base.func.value  # d.setdefault(k, []).append(v) writes d
                name = ast.unparse(base)
                head = name.split(".")[0]
                if head in module or (head == "self" and name.count(".") == 1):
                    found.add(name)
    return found


def test_no_container_outside_a_bounded_cache_is_written_after_import() -> None:
    written = {(str(p.relative_to(ROOT)), name) for p in SOURCES for name in _written(p)}
    unexplained = sorted(written - NOT_CACHES.keys())
    assert not unexplained, (
        "make these arrayselect._base.caches.BoundedCache (written with put), or say why "
        f"they are not caches in NOT_CACHES: {unexplained}"
    )
    gone = sorted(NOT_CACHES.keys() - written)
    assert not gone, f"take them out of NOT_CACHES: {gone}"


def test_a_bounded_cache_empties_when_full_and_reports_itself() -> None:
    cache: BoundedCache[int, str] = BoundedCache("test.example", 3)
    for i in range(3):
        assert cache.put(i, str(i)) == str(i)
    assert cache.data == {0: "0", 1: "1", 2: "2"}
    cache.put(1, "one")  # a key it holds: nothing goes
    assert len(cache) == 3 and cache_sizes()["test.example"] == (3, 3)
    cache.put(3, "3")  # full: emptied first
    assert cache.data == {3: "3"} and cache_sizes()["test.example"] == (1, 3)
    with pytest.raises(ValueError, match="maxsize must be at least 1"):
        BoundedCache("test.empty", 0)
