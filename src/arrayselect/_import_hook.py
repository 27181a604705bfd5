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
import importlib
import importlib.abc
import importlib.util
import sys
import threading
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["create_on_import", "on_import"]


class _Loader(importlib.abc.Loader):
    """The library's own loader, with ``then`` called once the module has run."""

    def __init__(self, loader: Any, then: list[Callable[[], object]]) -> None:
        self._loader = loader
        self._then = then

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        for then in self._then:
            with contextlib.suppress(Exception):  # never break the user's import
                then()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of the libraries it watches."""

    def __init__(self) -> None:
        self.watched: dict[str, list[Callable[[], object]]] = {}
        self._busy = threading.local()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        then = self.watched.get(fullname)
        if then is None or getattr(self._busy, "name", None) == fullname:
            return None
        self._busy.name = fullname  # find_spec below asks the finders again
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.name = None
        if spec is None or spec.loader is None:
            return None
        del self.watched[fullname]  # once
        spec.loader = _Loader(spec.loader, then)
        return spec


_finder = _Finder()


def create_on_import(library: str, create: Callable[[], object]) -> None:
    """Call ``create()`` once ``library`` is imported: now if it is, else after its import.

    Parameters
    ----------
    library : str
        A module name (``"torch"``, or a submodule: ``"torch._dynamo"``).
    create : callable
        Creates the backend (or whatever must follow the import); its errors are
        swallowed (the backend is then created when arrays arrive, as for every
        other library).
    """
    if library in sys.modules:
        with contextlib.suppress(Exception):
            create()
        return
    _finder.watched.setdefault(library, []).append(create)
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


#: What a plugin calls (:func:`arrayselect.plugin.on_import`): the same, by a name
#: that does not speak of backends.
on_import = create_on_import
