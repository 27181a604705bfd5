"""The backend registry: which backend handles which array library.

Arrays are classified by library without importing any library (the
``array_api_compat.is_*_array`` helpers look at ``sys.modules``). Built-in
backends and third-party plugins (entry-point group ``arrayselect.backends``,
each entry named after the library key it serves and pointing at a factory
``factory(xp) -> Backend``) live in one table; backend objects are created once
per library and cached.

The registry also routes calls to fast paths: when it creates a backend, it
installs the backend's :meth:`~arrayselect.plugin.Backend.fast_path` for the
array types it names, and removes it when another backend is registered for the
library. While a :func:`force_portable` block is open anywhere, the table that
:func:`arrayselect.select` looks fast paths up in holds each fast path behind
a check of the calling thread's (or task's) setting, so a fast path never needs
to know how it was routed and the threads not in a block keep theirs.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Container, Iterator, Sequence
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, NamedTuple, NoReturn

import array_api_compat as compat

from arrayselect._base.caches import BoundedCache
from arrayselect._base.errors import SelectTypeError
from arrayselect._base.settings import force_portable_var, forcing, portable_forced
from arrayselect._rules.backend import PYTHON_SCALARS, Backend

__all__ = [
    "ENTRY_POINT_GROUP",
    "FastPath",
    "active_backend",
    "fast_path_for",
    "force_portable",
    "get_backend",
    "library_of",
    "register_backend",
    "resolve",
    "resolve_inputs",
]

ENTRY_POINT_GROUP = "arrayselect.backends"
PORTABLE = "portable"

BackendFactory = Callable[[ModuleType], Backend]


class FastPath(NamedTuple):
    """A backend's fast path: what :meth:`Backend.fast_path` returns.

    Attributes
    ----------
    array_types
        The exact types of ``cond`` the fast path serves.
    call
        ``call(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)``
        returns the result, or ``NotImplemented`` to let the general path
        handle the call. It must raise exactly what the general path raises
        (:class:`arrayselect.plugin.SignatureCache` does this for any backend).
    """

    array_types: tuple[type, ...]
    call: Callable[..., Any]


# Built-ins are named by "module:attribute" so that a backend's library is
# imported only when arrays of that library arrive.
_BUILTIN: dict[str, str] = {
    "numpy": "arrayselect.backends.numpy_backend:create",
    "jax": "arrayselect.backends.jax_backend:create",
    "dask": "arrayselect.backends.dask_backend:create",
    "cupy": "arrayselect.backends.cupy_backend:create",
    "torch": "arrayselect.backends.torch_backend:create",
    PORTABLE: "arrayselect.backends.portable:create",
}
_factories: dict[str, BackendFactory | str] = dict(_BUILTIN)
_backends: dict[tuple[str, bool], Backend] = {}
_plugins_loaded = False
_lock = threading.RLock()
# Fast paths by exact type of cond, and the library each serves.
_installed_fast_paths: dict[type, Callable[..., Any]] = {}
# Backend.tracing of the backends that override it, by exact array type: what
# where() asks before it reads its memo (a traced memo read would be guarded on).
tracing_checks: dict[type, Callable[[], bool]] = {}
# The distinct checks of tracing_checks (one per backend, however many array types it
# serves): what the family's memo asks before its compiled lookup, on every call.
tracing_functions: tuple[Callable[[], bool], ...] = ()
_fast_path_library: dict[type, str] = {}
# What select() looks up: the installed fast paths, each behind a check of the
# calling context's force_portable setting while any block forcing it is open
# (_unless_forced). A fast path never has to ask whether its call is forced, and
# select() pays one dict lookup; other threads keep their fast path meanwhile, at
# the cost of that check (a context variable read).
fast_paths: dict[type, Callable[..., Any]] = {}


def _unless_forced(call: Callable[..., Any]) -> Callable[..., Any]:
    """``call``, stepping aside (``NotImplemented``) where this context forces portable."""
    forced = force_portable_var.get

    def fast_unless_forced(
        cond: Any, then: Any, else_: Any, ab: Any, axis: Any, cb: Any, out: Any
    ) -> Any:
        if forced():
            return NotImplemented  # the general path routes the call to portable
        return call(cond, then, else_, ab, axis, cb, out)

    return fast_unless_forced


_LIBRARIES = BoundedCache[type, str | None]("registry.library_of", 256)
_library_by_type = _LIBRARIES.data  # read on every call


def library_of(x: object) -> str | None:
    """Key of the array library ``x`` belongs to, or ``None`` if it is no array.

    Decided by type, once per type (a plain dictionary: cheap, and followed by
    tracing compilers such as ``torch.compile`` without a warning).
    """
    t = type(x)
    try:
        return _library_by_type[t]
    except KeyError:
        pass
    library = _classify(x)
    return _LIBRARIES.put(t, library)


def _classify(x: object) -> str | None:
    if type(x).__module__.startswith("numpy.ma"):
        return None  # a masked array: Select would drop its mask (see _not_an_array)
    if compat.is_numpy_array(x):
        return "numpy"
    if compat.is_jax_array(x):
        return "jax"
    if compat.is_cupy_array(x):
        return "cupy"
    if compat.is_torch_array(x):
        return "torch"
    if compat.is_dask_array(x):
        return "dask"
    if hasattr(type(x), "__array_namespace__"):
        return type(x).__module__.partition(".")[0]
    return None


def register_backend(library: str, factory: BackendFactory | None) -> None:
    """Register ``factory(xp) -> Backend`` for arrays of ``library``.

    Parameters
    ----------
    library : str
        The key :func:`library_of` gives for the library's arrays: the top-level
        module name of the array type (``"numpy"``, ``"torch"``, ``"sparse"``, ...).
    factory : callable or None
        Called once with the library's Array API namespace; returns the backend.
        ``None`` undoes a registration: the built-in backend, an installed
        plugin's entry point, or the portable backend serves the library again.
    """
    global _plugins_loaded
    if not isinstance(library, str):
        raise TypeError(
            f"register_backend: library must be a str, the key of the array library "
            f"(such as 'numpy' or 'sparse'), got {_describe(library)} {library!r}"
        )
    if factory is not None and not callable(factory):
        raise TypeError(
            f"register_backend: factory must be a callable factory(xp) -> Backend, or None "
            f"to undo a registration, got {_describe(factory)} {factory!r}"
        )
    with _lock:
        if factory is not None:
            _factories[library] = factory
        else:
            _factories.pop(library, None)
            if library in _BUILTIN:
                _factories[library] = _BUILTIN[library]
            _plugins_loaded = False  # an entry point for the library may apply again
        _forget(library)


def _forget(library: str) -> None:
    """Drop the created backends of ``library`` and the fast paths they installed."""
    for key in [k for k in _backends if k[0] == library]:
        del _backends[key]
    for array_type in [t for t, lib in _fast_path_library.items() if lib == library]:
        del _fast_path_library[array_type]
        _installed_fast_paths.pop(array_type, None)
        fast_paths.pop(array_type, None)
        tracing_checks.pop(array_type, None)
    _distinct_tracing_functions()


def _distinct_tracing_functions() -> None:
    global tracing_functions
    tracing_functions = tuple(dict.fromkeys(tracing_checks.values()))


def _load_plugins() -> None:
    global _plugins_loaded
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        _factories.setdefault(ep.name, ep.value)
    _plugins_loaded = True


def _factory(spec: BackendFactory | str) -> BackendFactory:
    if isinstance(spec, str):
        module, _, attr = spec.partition(":")
        factory: BackendFactory = getattr(importlib.import_module(module), attr)
        return factory
    return spec


def get_backend(library: str, xp: ModuleType) -> Backend:
    """The backend for arrays of ``library`` (cached), honouring :func:`force_portable`.

    ``xp`` is the library's Array API namespace, passed to the factory when the
    backend is created.
    """
    portable = portable_forced()
    key = (library, portable)
    backend = _backends.get(key)
    if backend is not None:
        return backend
    with _lock:
        backend = _backends.get(key)
        if backend is None:
            if not _plugins_loaded and library not in _factories:
                _load_plugins()
            name = PORTABLE if portable or library not in _factories else library
            factory = _factory(_factories[name])
            backend = factory(xp)
            if not isinstance(backend, Backend):
                raise SelectTypeError(
                    f"the backend factory {factory!r} registered for {name!r} returned "
                    f"{_describe(backend)} {backend!r}, not an arrayselect.plugin.Backend; "
                    "a factory must return an instance of a Backend subclass"
                )
            _backends[key] = backend
            if name != PORTABLE:
                _install_fast_path(library, backend)
    return backend


def _install_fast_path(library: str, backend: Backend) -> None:
    fast = backend.fast_path()
    if fast is None:
        return
    for array_type in fast.array_types:
        with _lock:
            _installed_fast_paths[array_type] = fast.call
            fast_paths[array_type] = _unless_forced(fast.call) if forcing[0] else fast.call
        _fast_path_library[array_type] = library
        if type(backend).tracing is not Backend.tracing:
            tracing_checks[array_type] = backend.tracing
            _distinct_tracing_functions()
        # Known now: library_of need not classify these types later (inside a
        # torch.compile trace, say, where array_api_compat's helpers warn).
        _LIBRARIES.put(array_type, library)


def create_backend(library: str) -> None:
    """Create the (non-portable) backend of ``library`` now, with its fast path.

    For libraries whose backend must exist before a tracing compiler first meets
    their arrays (see :mod:`arrayselect._base.import_hook`).
    """
    xp = importlib.import_module(f"array_api_compat.{library}")
    previous = force_portable_var.set(False)
    try:
        get_backend(library, xp)
    finally:
        force_portable_var.reset(previous)


def active_backend(library: str) -> Backend | None:
    """The backend serving arrays of ``library`` here and now, if it was created.

    Honours :func:`force_portable`; creates nothing (``None`` when no call has
    needed the backend yet).
    """
    return _backends.get((library, portable_forced()))


def fast_path_for(array_type: type) -> Callable[..., Any] | None:
    """The fast path installed for ``cond`` arrays of exactly ``array_type``, if any."""
    return _installed_fast_paths.get(array_type)


@contextlib.contextmanager
def force_portable(enabled: bool = True) -> Iterator[None]:
    """Within the block, route every array library to the portable backend.

    The portable backend uses only functions of the Array API standard; forcing
    it is how benchmarks compare a native fast path against it. The setting is
    per thread and per asyncio task (a context variable), and lasts while the
    block is open: a task that inherits the setting and outlives the block is
    routed as usual again once the block has closed. Other threads and tasks keep
    their backends and fast paths; while a block forcing the portable backend is
    open, their fast paths cost one check of the setting more per call.
    ``force_portable(False)`` routes as usual, fast paths included (inside an
    outer ``force_portable()`` block it restores the usual routing).

    Examples
    --------
    >>> import numpy as np, arrayselect as asel
    >>> with asel.force_portable():
    ...     asel.select(np.array([True, False]), np.array([1, 2]), np.array([3, 4]))
    array([1, 4])
    """
    token = force_portable_var.set(enabled)
    if not enabled:  # forces nothing: no fast path needs to step aside
        try:
            yield
        finally:
            force_portable_var.reset(token)
        return
    with _lock:
        forcing[0] += 1
        if forcing[0] == 1:
            for array_type, call in _installed_fast_paths.items():
                fast_paths[array_type] = _unless_forced(call)
    try:
        yield
    finally:
        force_portable_var.reset(token)
        with _lock:
            forcing[0] -= 1
            if not forcing[0]:
                fast_paths.update(_installed_fast_paths)


def _describe(x: object) -> str:
    cls = type(x)
    return f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__name__


def resolve(
    cond: object,
    then: object,
    else_: object,
    out: object,
    names: tuple[str, str, str] = ("cond", "then", "else"),
) -> tuple[Backend, list[tuple[str, Any]]]:
    """Pick the backend for the inputs; return it with the named array inputs.

    ``names`` are what messages call the three inputs (``where`` calls them
    ``condition``, ``x1`` and ``x2``).

    Raises
    ------
    SelectTypeError
        For a non-array input (``then``/``else`` may be Python scalars) or
        arrays of two libraries (NumPy arrays with JAX arrays go to JAX).
    """
    inputs = [(names[0], cond), (names[1], then), (names[2], else_)]
    if out is not None:
        inputs.append(("out", out))
    return resolve_inputs(inputs, names[1:])


def resolve_inputs(
    inputs: Sequence[tuple[str, object]], scalars: Container[str] = ()
) -> tuple[Backend, list[tuple[str, Any]]]:
    """:func:`resolve` for any number of named inputs (the select family's).

    ``scalars`` names the inputs that may be Python scalars; the others must be
    arrays. Returns the backend and the named array inputs.

    Raises
    ------
    SelectTypeError
        For a non-array input or arrays of two libraries (NumPy arrays with JAX
        arrays go to JAX).
    """
    named: list[tuple[str, Any]] = []
    libraries: dict[str, str] = {}
    for name, x in inputs:
        if name in scalars and type(x) in PYTHON_SCALARS:
            continue
        library = library_of(x)
        if library is None:
            _not_an_array(name, x, name in scalars)
        libraries.setdefault(library, name)
        named.append((name, x))
    if not named:
        raise SelectTypeError(
            "at least one input must be an array (Python scalars alone have no library)"
        )
    if len(libraries) > 1:
        if set(libraries) == {"numpy", "jax"}:
            libraries = {"jax": libraries["jax"]}
            # NumPy arrays are host data JAX takes as it is: no device to compare.
            named = [(name, x) for name, x in named if not compat.is_numpy_array(x)]
        else:
            listing = ", ".join(f"{name} is {_describe(x)}" for name, x in named)
            raise SelectTypeError(
                f"arrays of different libraries cannot be mixed ({listing}); convert them "
                "to one library first (only NumPy arrays may join JAX arrays)"
            )
    (library,) = libraries
    portable = portable_forced()
    # Arrays of a library without a backend of its own are only known by their
    # __array_namespace__; the portable backend needs real Array API arrays.
    checked = library not in _KNOWN_LIBRARIES and (portable or not _has_factory(library))
    if checked:
        for name, x in named:
            _check_array_like(name, x)
    backend = _backends.get((library, portable))
    if backend is None:
        arrays = [x for _, x in named if library_of(x) == library]
        backend = get_backend(library, _namespace(libraries[library], arrays, checked))
    return backend, named


def _not_an_array(name: str, x: object, value: bool) -> NoReturn:
    """Raise the error for an input that is no array Select takes, with the way out."""
    module = type(x).__module__
    if module.startswith("numpy.ma"):
        raise SelectTypeError(
            f"{name} is a NumPy masked array ({_describe(x)}), whose mask Select would "
            "ignore; use numpy.ma.where for masked results, or pass the values you mean "
            "as a plain array (x.filled(fill_value))"
        )
    expected = "an array or a Python scalar" if value else "an array"
    if isinstance(x, (list, tuple)):
        hint = " (convert it with xp.asarray first)"
    elif module.partition(".")[0] in ("pandas", "polars"):
        hint = " (convert it with .to_numpy() first)"
    else:
        hint = ""
    raise SelectTypeError(
        f"{name} must be {expected} of an Array API library, got {_describe(x)}{hint}"
    )


def _has_factory(library: str) -> bool:
    if library not in _factories and not _plugins_loaded:
        with _lock:
            if not _plugins_loaded:
                _load_plugins()
    return library in _factories


# Libraries array_api_compat recognises by type; anything else is only known by
# its ``__array_namespace__`` and is checked before it is used.
_KNOWN_LIBRARIES = frozenset({"numpy", "jax", "cupy", "torch", "dask"})
_ARRAY_ATTRIBUTES = ("shape", "dtype", "device")


def _check_array_like(name: str, x: object) -> None:
    """An object with ``__array_namespace__`` must also look like an Array API array."""
    problems = [f"no .{a}" for a in _ARRAY_ATTRIBUTES if not hasattr(x, a)]
    if not callable(getattr(x, "__array_namespace__", None)):
        problems.append("an __array_namespace__ that is not a method")
    if problems:
        raise SelectTypeError(
            f"{name} is a {_describe(x)}, which has __array_namespace__ but "
            + " and ".join(problems)
            + "; it is not an Array API array"
        )


def _namespace(name: str, arrays: list[Any], portable: bool) -> ModuleType:
    """The Array API namespace of ``arrays``; a foreign failure is a SelectTypeError."""
    try:
        xp = compat.array_namespace(*arrays)
    except Exception as exc:
        raise SelectTypeError(
            f"{name} is a {_describe(arrays[0])}, whose Array API namespace cannot be "
            f"obtained: {type(exc).__name__}: {exc}"
        ) from exc
    if portable and not all(
        callable(getattr(xp, f, None)) for f in ("asarray", "reshape", "where")
    ):
        raise SelectTypeError(
            f"{name} is a {_describe(arrays[0])}, whose __array_namespace__() returned "
            f"{xp!r}, not an Array API namespace"
        )
    return xp
