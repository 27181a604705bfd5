"""What each installed array library can do with :func:`arrayselect.select`, found by trying.

Documentation tooling, not part of the package: ``asel_docs.py`` (the Sphinx
extension next to this file) writes the capability tables of ``backends.md``
with it when the docs are built; ``tests/test_capabilities.py`` tests it.

:func:`capability_table` imports every array library it knows that is installed
and *probes* it: for each dtype of the specification it runs ``select`` on small
arrays holding awkward bit patterns (NaN payloads, ``-0.0``, infinities,
subnormals, integer extremes) and compares the result's bits with ``np.where``
on NumPy copies; for each feature (``out=``, an integer ``cond``,
differentiation, ``vmap``, ``jit``, export, laziness, devices) it makes the
calls a user would make and checks what comes back. Nothing in the table is
typed in: the documentation's capability tables are generated from it when the
docs are built, on the build machine, with the libraries installed there.

Examples
--------
>>> from capabilities import capability_table
>>> (numpy_row,) = capability_table(["numpy"], portable=False)
>>> numpy_row.backend
'numpy'
>>> numpy_row.dtypes["float32"].status, numpy_row.features["out="].status
('yes', 'yes')
"""

from __future__ import annotations

import contextlib
import importlib
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import array_api_compat as compat
import numpy as np

from arrayselect import (
    SelectError,
    SelectTypeError,
    SelectValueError,
    adapters,
    backend_for,
    force_portable,
    select,
)

__all__ = [
    "DTYPES",
    "FEATURES",
    "LIBRARIES",
    "BackendCapabilities",
    "Cell",
    "capability_table",
    "dtype_markdown",
    "feature_markdown",
]

Status = Literal["yes", "partial", "no", "absent", "n/a", "error"]

#: The dtypes of the specification (docs/semantics.md, "Types"), in table order.
DTYPES: tuple[str, ...] = adapters.DTYPES

#: The features probed, in table order.
FEATURES: tuple[str, ...] = (
    "integer cond",
    "out=",
    "grad",
    "vmap",
    "jit",
    "export",
    "lazy",
    "devices",
)

#: The array libraries probed: the key used in the table and the module to import.
#: Each is probed on its default device, through the adapter of :data:`_ADAPTERS`.
LIBRARIES: tuple[tuple[str, str], ...] = (
    ("numpy", "numpy"),
    ("jax", "jax.numpy"),
    ("cupy", "cupy"),
    ("torch", "torch"),
    ("dask", "dask.array"),
    ("array_api_strict", "array_api_strict"),
)

#: The :mod:`arrayselect.adapters` key of each library (JAX: its default device).
_ADAPTERS: dict[str, str] = {
    "numpy": "numpy",
    "jax": "jax",
    "cupy": "cupy",
    "torch": "torch-cpu",
    "dask": "dask",
    "array_api_strict": "array_api_strict",
}

_SYMBOL: dict[Status, str] = {
    "yes": "✅",
    "partial": "⚠️",
    "no": "❌",
    "absent": "—",
    "n/a": "n/a",
    "error": "💥",
}

_N = 8  # elements per probe array


@dataclass(frozen=True)
class Cell:
    """One probe's outcome.

    Attributes
    ----------
    status
        ``"yes"`` (works, checked), ``"partial"`` (works with a restriction the
        note names), ``"no"`` (refused by design, with the error the note
        quotes), ``"absent"`` (the array library has no such dtype or
        feature), ``"n/a"`` (the notion does not apply to the library) or
        ``"error"`` (an unexpected failure, quoted in the note).
    note
        What was found, in a few words.
    """

    status: Status
    note: str = ""

    def markdown(self) -> str:
        """The cell as it appears in the documentation's tables."""
        symbol = _SYMBOL[self.status]
        return f"{symbol} {self.note}".strip() if self.note else symbol


@dataclass
class BackendCapabilities:
    """The probes of one array library on one backend.

    Attributes
    ----------
    library
        Key of the array library (``"numpy"``, ``"jax"``, ``"torch"``, ...).
    version
        The library's ``__version__``.
    backend
        Name of the arrayselect backend that served the calls
        (:attr:`arrayselect._rules.backend.Backend.name`).
    forced_portable
        Whether the calls ran inside :func:`arrayselect.force_portable`.
    dtypes
        One :class:`Cell` per name of :data:`DTYPES`.
    features
        One :class:`Cell` per name of :data:`FEATURES`.
    """

    library: str
    version: str
    backend: str
    forced_portable: bool
    dtypes: dict[str, Cell] = field(default_factory=dict)
    features: dict[str, Cell] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Column heading: the backend, with the library where the name lacks it."""
        if self.library in self.backend:
            return self.backend
        return f"{self.backend} ({self.library})"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short(exc: BaseException, limit: int = 90) -> str:
    return _clip(f"{type(exc).__name__}: {exc}", limit)


def _device_name(device: Any) -> str:
    text = str(device)
    match = re.fullmatch(r"[\w.]*Device\('?(.*?)'?\)", text)
    return match.group(1) if match else text


# --------------------------------------------------------------------------- values


def _numpy_dtype(name: str) -> np.dtype[Any] | None:
    """NumPy's dtype for ``name``, or ``None`` (bfloat16 without ``ml_dtypes``)."""
    try:
        return adapters.numpy_dtype(name)
    except adapters.DtypeUnavailableError:
        return None


# Awkward bit patterns per float width: quiet NaNs with payloads (both signs), -0.0,
# +inf, -inf, the smallest subnormal, 1.0 and the largest finite value.
_FLOAT_BITS: dict[str, tuple[int, ...]] = {
    "float16": (0x7E01, 0xFE23, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x3C00, 0x7BFF),
    "bfloat16": (0x7FC1, 0xFFC3, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x3F80, 0x7F7F),
    "float32": (
        0x7FC00001,
        0xFFC00123,
        0x80000000,
        0x7F800000,
        0xFF800000,
        0x00000001,
        0x3F800000,
        0x7F7FFFFF,
    ),
    "float64": (
        0x7FF8000000000001,
        0xFFF8000000000123,
        0x8000000000000000,
        0x7FF0000000000000,
        0xFFF0000000000000,
        0x0000000000000001,
        0x3FF0000000000000,
        0x7FEFFFFFFFFFFFFF,
    ),
}


def probe_values(name: str) -> tuple[np.ndarray, np.ndarray] | None:
    """NumPy ``then``/``else`` arrays of dtype ``name`` with awkward values.

    ``None`` when NumPy cannot make the dtype (bfloat16 without ``ml_dtypes``).
    """
    dtype = _numpy_dtype(name)
    if dtype is None:
        return None
    if name == "bool":
        a = np.array([True, False] * (_N // 2))
        return a, ~a
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        ints = [info.min, info.max, 0, 1, info.max - 1, info.min + 1, 7, info.max // 2]
        a = np.array(ints, dtype=dtype)
        return a, a[::-1].copy()
    if dtype.kind == "c":
        part = "float32" if dtype.itemsize == 8 else "float64"
        real = np.array(_FLOAT_BITS[part], dtype=f"u{dtype.itemsize // 2}")
        pairs = np.stack([real, real[::-1]], axis=-1).copy()
        a = pairs.view(dtype).reshape(_N)
        return a, a[::-1].copy()
    bits = np.array(_FLOAT_BITS[name], dtype=f"u{dtype.itemsize}")
    a = bits.view(dtype)
    return a, a[::-1].copy()


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return a.view(np.uint8)
    if a.dtype.itemsize == 16:
        return a.view(np.uint64)
    return a.view(f"u{a.dtype.itemsize}")


# --------------------------------------------------------------------------- libraries


class _Library:
    """The probes of one library that differ between libraries; data moves by its adapter."""

    key = ""

    def __init__(self, adapter: adapters.Library) -> None:
        self.adapter = adapter
        self.module: Any = adapter.xp
        self.version = adapter.version
        self.has_dtype = adapter.has_dtype
        self.from_numpy = adapter.from_numpy
        self.to_numpy = adapter.to_numpy

    def context(self) -> contextlib.AbstractContextManager[None]:
        """Where the probes run (e.g. JAX with 64-bit types enabled)."""
        return contextlib.nullcontext()

    def devices(self) -> list[Any]:
        info = self.namespace().__array_namespace_info__()
        return list(info.devices())

    def namespace(self) -> Any:
        return compat.array_namespace(self.from_numpy(np.zeros(1, np.float32)))

    def grad(self) -> Cell:
        return Cell("n/a", "no autodiff")

    def vmap(self) -> Cell:
        return Cell("n/a", "no vmap")

    def jit(self) -> Cell:
        return Cell("n/a", "no compiler")

    def export(self) -> Cell:
        return Cell("n/a", "no export")

    def lazy(self) -> Cell:
        c, t, e = _inputs(self)
        result = select(c, t, e)
        if type(result) is type(t) and self.to_numpy(result).shape == (_N,):
            return Cell("no", "eager")
        return Cell("error", f"unexpected result type {type(result).__name__}")


class _Numpy(_Library):
    key = "numpy"


class _Jax(_Library):
    key = "jax"

    def __init__(self, adapter: adapters.Library) -> None:
        super().__init__(adapter)
        assert isinstance(adapter, adapters.JaxAdapter)
        self.jax_adapter = adapter
        self.jax: Any = adapter.jax

    def context(self) -> contextlib.AbstractContextManager[None]:
        # 64-bit dtypes exist in JAX only with x64 enabled; enable it for the probes only.
        return self.jax_adapter.x64(True)

    def grad(self) -> Cell:
        jax, jnp = self.jax, self.module
        c = jnp.asarray([True, False, True])
        t = jnp.asarray([1.0, 2.0, 3.0])
        g = jax.grad(lambda t: jnp.sum(select(c, t, jnp.zeros(3)) * 2.0))(t)
        # the else side, broadcast from 0-d, gets the sum over what it filled
        ge = jax.grad(lambda e: jnp.sum(select(c, t, e)))(jnp.asarray(0.0))
        if np.asarray(g).tolist() == [2.0, 0.0, 2.0] and float(ge) == 1.0:
            return Cell("yes", "jax.grad")
        return Cell("error", f"wrong gradient {np.asarray(g).tolist()}, {float(ge)}")

    def vmap(self) -> Cell:
        jax, jnp = self.jax, self.module
        c = jnp.asarray([[True, False], [False, True], [True, True]])
        t = jnp.arange(6.0).reshape(3, 2)
        r = jax.vmap(lambda c, t: select(c, t, -1.0))(c, t)
        if np.asarray(r).tolist() == [[0.0, -1.0], [-1.0, 3.0], [4.0, 5.0]]:
            return Cell("yes", "jax.vmap")
        return Cell("error", f"wrong result {np.asarray(r).tolist()}")

    def jit(self) -> Cell:
        jax, jnp = self.jax, self.module
        c, t, e = jnp.asarray([True, False]), jnp.asarray([1, 2]), jnp.asarray([3, 4])
        r = jax.jit(lambda c, t, e: select(c, t, e))(c, t, e)
        if np.asarray(r).tolist() == [1, 4]:
            return Cell("yes", "jax.jit")
        return Cell("error", f"wrong result {np.asarray(r).tolist()}")

    def export(self) -> Cell:
        jax, jnp = self.jax, self.module
        export = importlib.import_module("jax.export")
        scope = export.SymbolicScope()

        def spec(shape: str, dtype: Any) -> Any:
            return jax.ShapeDtypeStruct(export.symbolic_shape(shape, scope=scope), dtype)

        exp = export.export(jax.jit(lambda c, t, e: select(c, t, e)))(
            spec("b, 4", jnp.bool_), spec("b, 4", jnp.float32), spec("4", jnp.float32)
        )
        c = jnp.asarray([[True, False, True, False]] * 3)
        r = exp.call(c, jnp.ones((3, 4), jnp.float32), jnp.zeros(4, jnp.float32))
        if np.asarray(r).tolist() == [[1.0, 0.0, 1.0, 0.0]] * 3:
            return Cell("yes", "jax.export, symbolic shapes")
        return Cell("error", f"wrong result {np.asarray(r).tolist()}")


class _Torch(_Library):
    key = "torch"

    def grad(self) -> Cell:
        torch = self.module
        c = torch.tensor([True, False, True])
        t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        e = torch.tensor(0.0, requires_grad=True)
        (select(c, t, e) * 2.0).sum().backward()
        assert t.grad is not None and e.grad is not None
        if t.grad.tolist() == [2.0, 0.0, 2.0] and e.grad.item() == 2.0:
            return Cell("yes", "autograd")
        return Cell("error", f"wrong gradient {t.grad.tolist()}, {e.grad.item()}")

    def vmap(self) -> Cell:
        torch = self.module
        c = torch.tensor([[True, False], [False, True], [True, True]])
        t = torch.arange(6.0).reshape(3, 2)
        r = torch.func.vmap(lambda c, t: select(c, t, -1.0))(c, t)
        if r.tolist() == [[0.0, -1.0], [-1.0, 3.0], [4.0, 5.0]]:
            return Cell("yes", "torch.func.vmap")
        return Cell("error", f"wrong result {r.tolist()}")

    def jit(self) -> Cell:
        torch = self.module
        c, t, e = torch.tensor([True, False]), torch.tensor([1, 2]), torch.tensor([3, 4])

        def fn(c: Any, t: Any, e: Any) -> Any:
            return select(c, t, e)

        # backend="eager": Dynamo's tracing without Inductor's code generation.
        try:
            r = torch.compile(fn, backend="eager", fullgraph=True)(c, t, e)
            how = "torch.compile(fullgraph=True)"
            status: Status = "yes"
        except Exception as exc:
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
            first = lines[0] if lines else ""
            why = next((ln for ln in lines if ln.startswith("Explanation:")), first)
            r = torch.compile(fn, backend="eager")(c, t, e)
            how = "torch.compile with graph breaks: " + _clip(why.removeprefix("Explanation: "), 80)
            status = "partial"
        if r.tolist() == [1, 4]:
            return Cell(status, how)
        return Cell("error", f"wrong result {r.tolist()}")

    def export(self) -> Cell:
        torch = self.module

        class Select(torch.nn.Module):  # type: ignore[misc, name-defined]
            def forward(self, c: Any, t: Any, e: Any) -> Any:
                return select(c, t, e)

        c, t = torch.tensor([True, False, True]), torch.tensor([1.0, 2.0, 3.0])
        program = torch.export.export(Select(), (c, t, torch.zeros(3)))
        r = program.module()(~c, t, torch.full((3,), 7.0))
        if r.tolist() == [7.0, 2.0, 7.0]:
            return Cell("yes", "torch.export")
        return Cell("error", f"wrong result {r.tolist()}")


class _Dask(_Library):
    key = "dask"

    def devices(self) -> list[Any]:
        return ["cpu"]

    def lazy(self) -> Cell:
        import dask

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("select computed something")

        c, t, e = _inputs(self)
        with dask.config.set(scheduler=refuse):
            result = select(c, t, e)
        if not isinstance(result, self.module.Array):
            return Cell("error", f"select returned {type(result).__name__}")
        return Cell("yes", "a dask array; nothing computed in the call")


class _Cupy(_Library):
    key = "cupy"

    def devices(self) -> list[Any]:
        cupy = self.module
        return [cupy.cuda.Device(i) for i in range(cupy.cuda.runtime.getDeviceCount())]


class _Strict(_Library):
    key = "array_api_strict"


_PROBES: dict[str, type[_Library]] = {
    "numpy": _Numpy,
    "jax": _Jax,
    "cupy": _Cupy,
    "torch": _Torch,
    "dask": _Dask,
    "array_api_strict": _Strict,
}


def _load(key: str) -> _Library | None:
    try:
        adapter = adapters.get(_ADAPTERS[key])
    except adapters.LibraryUnavailableError:
        return None
    return _PROBES[key](adapter)


# --------------------------------------------------------------------------- probes


def _inputs(lib: _Library) -> tuple[Any, Any, Any]:
    then, else_ = probe_values("int32") or (np.zeros(0), np.zeros(0))
    cond = np.array([True, False] * (_N // 2))
    return lib.from_numpy(cond), lib.from_numpy(then), lib.from_numpy(else_)


def _probe_dtype(lib: _Library, name: str) -> Cell:
    values = probe_values(name)
    if values is None:
        return Cell("absent", "needs ml_dtypes")
    then_np, else_np = values
    if not lib.has_dtype(name):
        return Cell("absent")
    try:
        then, else_ = lib.from_numpy(then_np), lib.from_numpy(else_np)
    except Exception:
        return Cell("absent")
    cond_np = np.array([True, True, False, True, False, False, True, False])
    cond = lib.from_numpy(cond_np)
    try:
        result = lib.to_numpy(select(cond, then, else_))
    except SelectTypeError as exc:
        return Cell("no", _short(exc))
    except Exception as exc:
        return Cell("error", _short(exc))
    expected = np.where(cond_np, then_np, else_np)
    if result.dtype != expected.dtype:
        return Cell("error", f"result dtype {result.dtype}")
    if np.array_equal(_bits(result), _bits(expected)):
        return Cell("yes")
    if expected.dtype.kind in "fcV" or name == "bfloat16":
        same_values = np.array_equal(
            result.astype(np.complex128 if expected.dtype.kind == "c" else np.float64),
            expected.astype(np.complex128 if expected.dtype.kind == "c" else np.float64),
            equal_nan=True,
        )
        if same_values:
            return Cell("partial", "values right, NaN payloads not kept")
    return Cell("error", "wrong values")


def _probe_integer_cond(lib: _Library) -> Cell:
    _, t, e = _inputs(lib)
    cond_np = np.array([3, 0, 255, 0, 1, 0, 0, 8], dtype=np.uint8)
    result = lib.to_numpy(select(lib.from_numpy(cond_np), t, e))
    expected = np.where(cond_np != 0, lib.to_numpy(t), lib.to_numpy(e))
    if np.array_equal(result, expected):
        return Cell("yes", "nonzero is true")
    return Cell("error", "wrong values")


def _probe_out(lib: _Library) -> Cell:
    c, t, e = _inputs(lib)
    backend = backend_for(c, t, e)
    expected = np.where(lib.to_numpy(c), lib.to_numpy(t), lib.to_numpy(e))
    if not backend.supports_out:
        try:
            select(c, t, e, out=lib.from_numpy(np.zeros(_N, np.int32)))
        except SelectTypeError:
            return Cell("no", "immutable or lazy arrays (SelectTypeError)")
        return Cell("error", "out= accepted although supports_out is False")
    out = lib.from_numpy(np.zeros(_N, np.int32))
    returned = select(c, t, e, out=out)
    if returned is not out or not np.array_equal(lib.to_numpy(out), expected):
        return Cell("error", "out= did not receive the result")
    # ``out`` may be ``then`` itself
    aliased = lib.from_numpy(lib.to_numpy(t).copy())
    if select(c, aliased, e, out=aliased) is not aliased or not np.array_equal(
        lib.to_numpy(aliased), expected
    ):
        return Cell("error", "out=then gave a wrong result")
    return Cell("yes", "out may be then or else")


def _probe_devices(lib: _Library) -> Cell:
    # ``None`` stands for "the default device" in some libraries' device lists (JAX).
    devices = [d for d in lib.devices() if d is not None]
    names: list[str] = []
    xp = lib.namespace()
    for device in devices:
        c = xp.asarray([True, False], device=device)
        t = xp.asarray([1.0, 2.0], device=device)
        result = select(c, t, 0.0)
        if compat.device(result) != compat.device(t):
            return Cell("error", f"result on {compat.device(result)}, inputs on {device}")
        names.append(_device_name(device))
    note = "result on the inputs' device: " + ", ".join(names)
    if len(devices) >= 2:
        c = xp.asarray([True, False], device=devices[0])
        t = xp.asarray([1.0, 2.0], device=devices[1])
        try:
            select(c, t, t)
        except SelectValueError:
            note += "; mixed devices refused"
        else:
            return Cell("error", "inputs on two devices were accepted")
    return Cell("yes", note)


def _guard(probe: Callable[[], Cell]) -> Cell:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return probe()
    except SelectError as exc:
        return Cell("no", _short(exc))
    except Exception as exc:
        return Cell("error", _short(exc))


def _probe_library(lib: _Library, portable: bool) -> BackendCapabilities:
    ctx = force_portable() if portable else contextlib.nullcontext()
    with lib.context(), ctx:
        c, t, e = _inputs(lib)
        report = BackendCapabilities(
            library=lib.key,
            version=lib.version,
            backend=backend_for(c, t, e).name,
            forced_portable=portable,
        )
        for name in DTYPES:
            report.dtypes[name] = _guard(lambda name=name: _probe_dtype(lib, name))  # type: ignore[misc]
        probes: dict[str, Callable[[], Cell]] = {
            "integer cond": lambda: _probe_integer_cond(lib),
            "out=": lambda: _probe_out(lib),
            "grad": lib.grad,
            "vmap": lib.vmap,
            "jit": lib.jit,
            "export": lib.export,
            "lazy": lib.lazy,
            "devices": lambda: _probe_devices(lib),
        }
        for feature in FEATURES:
            report.features[feature] = _guard(probes[feature])
    return report


def capability_table(
    libraries: Sequence[str] | None = None, *, portable: bool = True
) -> list[BackendCapabilities]:
    """Probe every installed array library; one row per (library, backend).

    Parameters
    ----------
    libraries : sequence of str, optional
        Keys of :data:`LIBRARIES` to probe; all of them by default. Libraries
        that are not installed (CuPy without a GPU) are left out.
    portable : bool, optional
        Also probe the portable backend (inside
        :func:`arrayselect.force_portable`) for every library whose default
        backend is a native one.

    Returns
    -------
    list of BackendCapabilities
        In the order of :data:`LIBRARIES`, each native backend followed by
        the portable one.
    """
    wanted = [key for key, _ in LIBRARIES] if libraries is None else list(libraries)
    known = dict(LIBRARIES)
    rows: list[BackendCapabilities] = []
    for key in wanted:
        if key not in known:
            raise ValueError(f"unknown library {key!r}; expected one of {', '.join(known)}")
        lib = _load(key)
        if lib is None:
            continue
        row = _probe_library(lib, portable=False)
        rows.append(row)
        if portable and not row.backend.startswith("portable"):
            rows.append(_probe_library(lib, portable=True))
    return rows


# --------------------------------------------------------------------------- tables


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(rows: list[BackendCapabilities], names: Sequence[str], kind: str) -> str:
    header = "| " + kind + " | " + " | ".join(f"`{r.label}`" for r in rows) + " |"
    lines = [header, "| " + " | ".join(["---"] * (len(rows) + 1)) + " |"]
    for name in names:
        cells = [
            _escape((r.dtypes if kind == "dtype" else r.features)[name].markdown()) for r in rows
        ]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def dtype_markdown(rows: list[BackendCapabilities]) -> str:
    """A Markdown table: one row per dtype of :data:`DTYPES`, one column per backend."""
    return _markdown(rows, DTYPES, "dtype")


def feature_markdown(rows: list[BackendCapabilities]) -> str:
    """A Markdown table: one row per feature of :data:`FEATURES`, one column per backend."""
    return _markdown(rows, FEATURES, "feature")
