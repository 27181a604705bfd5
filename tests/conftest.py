"""Shared fixtures: every test that takes ``xp`` runs once per array library.

Modelled on data-apis/array-api-extra's ``tests/conftest.py``: a
:class:`Backend` enum, a ``library`` fixture parametrized over it (honouring
``@pytest.mark.skip_xp_backend(Backend.X, reason=...)``), and an ``xp``
fixture that imports the library or skips with a reason.

``numpy_portable`` runs NumPy arrays inside :func:`arrayselect.force_portable`,
so the portable Array API backend is exercised on NumPy as well.

Helpers :func:`from_numpy` and :func:`to_numpy` convert between NumPy and each
library keeping the dtype (and the bits) exactly.
"""

from __future__ import annotations

import enum
from collections import Counter, defaultdict
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import arrayselect

__all__ = [
    "ALL_DTYPES",
    "Backend",
    "dtype_skip_reason",
    "from_numpy",
    "numpy_dtype",
    "supports_out",
    "to_numpy",
]


class Backend(enum.Enum):
    """An array library (or library + mode) the suite runs against."""

    NUMPY = "numpy"
    NUMPY_PORTABLE = "numpy_portable"
    ARRAY_API_STRICT = "array_api_strict"
    TORCH = "torch"
    DASK = "dask.array"
    JAX = "jax.numpy"
    CUPY = "cupy"

    def __str__(self) -> str:
        return self.value

    @property
    def modname(self) -> str:
        """Module to import for this backend."""
        return "numpy" if self is Backend.NUMPY_PORTABLE else self.value


# Filled while the session runs; printed by pytest_terminal_summary.
_SKIPPED_BACKENDS: dict[Backend, str] = {}
_OUTCOMES: dict[str, Counter[str]] = defaultdict(Counter)


def _import_backend(library: Backend) -> ModuleType:
    """Import the library of ``library`` or skip the test with a reason."""
    if library in _SKIPPED_BACKENDS:
        pytest.skip(_SKIPPED_BACKENDS[library])
    try:
        if library is Backend.CUPY:
            try:
                import cupy
            except Exception as exc:  # ImportError, or a broken CUDA install
                raise _BackendMissing(f"no CUDA GPU (cupy not importable: {exc})") from exc
            try:
                count = cupy.cuda.runtime.getDeviceCount()
            except Exception as exc:
                raise _BackendMissing(f"no CUDA GPU ({exc})") from exc
            if count < 1:
                raise _BackendMissing("no CUDA GPU (device count is 0)")
            return cupy
        module = pytest.importorskip(library.modname, reason=f"{library.modname} is not installed")
        if library is Backend.JAX:
            import jax

            # Before any JAX array is made: 64-bit dtypes exist only with x64.
            jax.config.update("jax_enable_x64", True)
        return module
    except _BackendMissing as exc:
        _SKIPPED_BACKENDS[library] = str(exc)
        pytest.skip(str(exc))
    except pytest.skip.Exception as exc:
        _SKIPPED_BACKENDS[library] = str(exc.msg)
        raise


class _BackendMissing(Exception):
    pass


@pytest.fixture(params=tuple(Backend), ids=str)
def library(request: pytest.FixtureRequest) -> Backend:
    """The backend under test; honours ``skip_xp_backend`` markers."""
    elem: Backend = request.param
    for marker in request.node.iter_markers("skip_xp_backend"):
        skipped = marker.kwargs.get("library") or marker.args[0]
        if skipped == elem:
            reason = marker.kwargs.get("reason") or f"skip for {elem}"
            pytest.skip(reason)
    return elem


@pytest.fixture
def xp(library: Backend) -> Iterator[ModuleType]:
    """The array library module under test (``numpy`` for numpy_portable).

    For ``numpy_portable`` the whole test runs inside
    :func:`arrayselect.force_portable`.
    """
    module = _import_backend(library)
    if library is Backend.NUMPY_PORTABLE:
        with arrayselect.force_portable():
            yield module
    else:
        yield module


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "skip_xp_backend(library, /, *, reason=None): skip the test for one Backend",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "library" in callspec.params:
        report.user_properties.append(("xp_backend", str(callspec.params["library"])))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    backend = dict(report.user_properties).get("xp_backend")
    if backend is None:
        backend = "(no xp)"
    if report.when == "call" or (report.when == "setup" and not report.passed):
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        _OUTCOMES[backend][outcome] += 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    tr = terminalreporter
    tr.section("arrayselect backends")
    for library in Backend:
        counts = _OUTCOMES.get(str(library), Counter())
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no tests"
        if library in _SKIPPED_BACKENDS:
            tr.write_line(f"{library!s:18} SKIPPED: {_SKIPPED_BACKENDS[library]} ({summary})")
        elif counts.get("passed") or counts.get("failed"):
            tr.write_line(f"{library!s:18} ran: {summary}")
        else:
            tr.write_line(f"{library!s:18} not used ({summary})")
    other = _OUTCOMES.get("(no xp)")
    if other:
        summary = ", ".join(f"{n} {k}" for k, n in sorted(other.items()))
        tr.write_line(f"{'(backend-free)':18} {summary}")


# --------------------------------------------------------------------------- dtypes

ALL_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


def numpy_dtype(name: str) -> np.dtype[Any]:
    """NumPy dtype for a dtype name; bfloat16 comes from ml_dtypes."""
    if name == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _lib_name(xp: ModuleType) -> str:
    return xp.__name__


def dtype_skip_reason(xp: ModuleType, name: str) -> str | None:
    """Why ``xp`` cannot hold dtype ``name`` (``None`` when it can)."""
    lib = _lib_name(xp)
    if lib == "array_api_strict" and name in ("float16", "bfloat16"):
        return f"array_api_strict has no {name} (only the standard's dtypes)"
    if lib == "dask.array" and name == "bfloat16":
        return (
            "dask has no bfloat16 of its own (array_api_compat's dask isdtype rejects "
            "ml_dtypes dtypes)"
        )
    if lib == "cupy" and name == "bfloat16":
        return "cupy has no bfloat16 dtype"
    if lib == "numpy" and name == "bfloat16" and arrayselect_is_portable():
        return (
            "bfloat16 is not an Array API standard dtype: the portable backend classifies "
            "dtypes with xp.isdtype, which rejects ml_dtypes dtypes"
        )
    return None


def arrayselect_is_portable() -> bool:
    """Whether :func:`arrayselect.force_portable` is in effect here."""
    from arrayselect import _registry

    return _registry.portable_forced()


def skip_dtype(xp: ModuleType, name: str) -> None:
    """Skip the running test when ``xp`` lacks dtype ``name``."""
    reason = dtype_skip_reason(xp, name)
    if reason is not None:
        pytest.skip(reason)


def supports_out(xp: ModuleType) -> bool:
    """Whether SPEC §6 says ``out=`` works for this library (mutable arrays)."""
    return _lib_name(xp) in ("numpy", "torch", "cupy")


# --------------------------------------------------------------------------- conversion


def _dask_chunks(shape: tuple[int, ...]) -> tuple[int, ...]:
    # Two chunks along each dimension of size >= 2, so Dask really splits.
    return tuple(max(1, (d + 1) // 2) for d in shape)


def from_numpy(xp: ModuleType, a: Any) -> Any:
    """An array of library ``xp`` with the values, dtype and bits of NumPy array ``a``.

    Skips the test when the library has no such dtype.
    """
    a = np.asarray(a)
    lib = _lib_name(xp)
    name = "bfloat16" if a.dtype.name == "bfloat16" else a.dtype.name
    skip_dtype(xp, name)
    a = np.array(a, copy=True, order="C")
    if lib == "numpy":
        return a
    if lib == "array_api_strict":
        return xp.asarray(a)
    if lib == "torch":
        if name == "bfloat16":
            return xp.from_numpy(a.view(np.int16)).view(xp.bfloat16)
        return xp.from_numpy(a)
    if lib == "dask.array":
        return xp.from_array(a, chunks=_dask_chunks(a.shape))
    if lib == "jax.numpy":
        out = xp.asarray(a)
        assert out.dtype == a.dtype, (out.dtype, a.dtype)
        return out
    if lib == "cupy":
        return xp.asarray(a)
    raise AssertionError(lib)


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of array ``x`` of any library, bits preserved."""
    module = type(x).__module__
    if module.startswith("torch"):
        x = x.detach().cpu()
        import torch

        if x.dtype == torch.bfloat16:
            import ml_dtypes

            return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
        return x.numpy().copy()
    if module.startswith("dask"):
        return np.asarray(x.compute()).copy()
    if module.startswith("cupy"):
        return x.get()
    if module.startswith("array_api_strict"):
        try:
            return np.asarray(x).copy()
        except Exception:
            return np.from_dlpack(x).copy()
    return np.asarray(x).copy()


def backend_kind(xp: ModuleType) -> str:
    """Short library name of ``xp``: numpy, torch, dask, jax, cupy, array_api_strict."""
    return {"dask.array": "dask", "jax.numpy": "jax"}.get(_lib_name(xp), _lib_name(xp))
