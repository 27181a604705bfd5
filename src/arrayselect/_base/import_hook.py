"""Create a library's backend as soon as the library is imported.

Backends are created when their arrays first arrive. For PyTorch that moment
can be inside ``torch.compile``, whose tracer (Dynamo) cannot create one
(importing modules, taking locks, registering the fast path are all outside
what it follows), so a function compiled with ``fullgraph=True`` would fail if
it were the first to select on tensors. For such libraries the backend is
created when the library has been imported instead: at once if it already is,
else right after its import, by a finder on ``sys.meta_path`` that wraps the
library's loader. Nothing is imported that the user did not import.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["on_import"]


class _Loader(importlib.abc.Loader):
    """The library's own loader; once the module has run, the watch on it fires."""

    def __init__(self, loader: Any, name: str, finder: _Finder) -> None:
        self._loader = loader
        self._name = name
        self._finder = finder

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        # popped only now, after the module ran: a spec that was found but never
        # loaded (importlib.util.find_spec, asked whether the library is installed)
        # leaves the watch armed; an import that raised leaves it for the next try
        for then in self._finder.watched.pop(self._name, []):
            with contextlib.suppress(Exception):  # never break the user's import
                then()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of the libraries it watches.

    ``find_spec`` is asked by every import and by every ``importlib.util.find_spec``
    (which many libraries call to test whether a library is installed). It only
    wraps the loader that the finders after it found; the watch stays armed until
    that loader has run the module.
    """

    def __init__(self) -> None:
        self.watched: dict[str, list[Callable[[], object]]] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in self.watched:
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or isinstance(spec.loader, _Loader):
            return spec
        spec.loader = _Loader(spec.loader, fullname, self)
        return spec


_finder = _Finder()


def on_import(library: str, create: Callable[[], object]) -> None:
    """Call ``create()`` once ``library`` is imported: now if it is, else after its import.

    Parameters
    ----------
    library : str
        A module name (``"torch"``, or a submodule: ``"torch._dynamo"``).
    create : callable
        Creates the backend (or whatever must follow the import); its errors are
        swallowed (the backend is then created when arrays arrive, as for every
        other library).

    Examples
    --------
    What the torch backend does for ``torch.compile``, without importing torch:

    >>> from arrayselect.plugin import on_import
    >>> seen = []
    >>> on_import("json", lambda: seen.append("json is imported"))
    >>> seen
    ['json is imported']
    """
    if library in sys.modules:
        with contextlib.suppress(Exception):
            create()
        return
    _finder.watched.setdefault(library, []).append(create)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
