"""What the test modules share: the backends the suite runs on, dtypes, conversions.

The conversions are :mod:`arrayselect.adapters` (one adapter per library); this
module adds what is the test suite's own: the :class:`Backend` enum the ``xp``
fixture (``conftest.py``) is parametrized over, copies (a test may write into
what it converted), and skipping a test where a library lacks a dtype.

Import it from a test module as ``from xp_helpers import ...``.
"""

from __future__ import annotations

import enum
import subprocess
import sys
import textwrap
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from arrayselect import adapters

__all__ = [
    "ALL_DTYPES",
    "Backend",
    "adapter",
    "arrayselect_is_portable",
    "backend_kind",
    "dtype_skip_reason",
    "from_numpy",
    "numpy_dtype",
    "run_without",
    "skip_dtype",
    "supports_out",
    "to_numpy",
]

#: The dtypes of the specification.
ALL_DTYPES = adapters.DTYPES

#: Adapter key of each array namespace the suite runs on (JAX: its default device).
_ADAPTER_KEYS = {
    "numpy": "numpy",
    "array_api_strict": "array_api_strict",
    "torch": "torch-cpu",
    "dask.array": "dask",
    "jax.numpy": "jax",
    "cupy": "cupy",
}


class Backend(enum.Enum):
    """An array library (or library + mode) the suite runs against."""

    NUMPY = "numpy"
    NUMPY_PORTABLE = "numpy_portable"
    ARRAY_API_STRICT = "array_api_strict"
    TORCH = "torch"
    TORCH_PORTABLE = "torch_portable"
    DASK = "dask.array"
    JAX = "jax.numpy"
    CUPY = "cupy"

    def __str__(self) -> str:
        return self.value

    @property
    def modname(self) -> str:
        """Module to import for this backend."""
        return {"numpy_portable": "numpy", "torch_portable": "torch"}.get(self.value, self.value)

    @property
    def portable(self) -> bool:
        """Whether the backend's tests run inside :func:`arrayselect.force_portable`."""
        return self in (Backend.NUMPY_PORTABLE, Backend.TORCH_PORTABLE)


def adapter(library: Backend | ModuleType) -> adapters.Library:
    """The adapter of a backend, or of an array namespace the suite runs on.

    Raises :class:`arrayselect.adapters.LibraryUnavailableError` when the
    library is not installed (or has no device).
    """
    name = library.modname if isinstance(library, Backend) else library.__name__
    return adapters.get(_ADAPTER_KEYS[name])


# --------------------------------------------------------------------------- dtypes


def numpy_dtype(name: str) -> np.dtype[Any]:
    """NumPy dtype for a dtype name; bfloat16 comes from ml_dtypes (skips without it)."""
    try:
        return adapters.numpy_dtype(name)
    except adapters.DtypeUnavailableError:
        pytest.skip("ml_dtypes is not installed")


def arrayselect_is_portable() -> bool:
    """Whether :func:`arrayselect.force_portable` is in effect here."""
    from arrayselect._dispatch import registry as _registry

    return _registry.portable_forced()


def dtype_skip_reason(xp: ModuleType, name: str) -> str | None:
    """Why the tests do not run ``xp`` with dtype ``name`` (``None`` when they do).

    The library may lack the dtype (the adapter says so), or arrayselect refuses
    it on the backend the tests use.
    """
    reason = adapter(xp).missing_dtype_reason(name)
    if reason is not None:
        return reason
    if xp.__name__ == "dask.array" and name == "bfloat16":
        return (
            "dask has no bfloat16 of its own (array_api_compat's dask isdtype rejects "
            "ml_dtypes dtypes)"
        )
    if xp.__name__ == "torch" and arrayselect_is_portable() and _torch_where_lacks(xp, name):
        return (
            f"this torch ({xp.__version__}) has no where kernel for {name}: the portable "
            "backend raises SelectTypeError saying so (tests/test_dtypes.py checks it)"
        )
    if xp.__name__ == "numpy" and name == "bfloat16" and arrayselect_is_portable():
        return (
            "bfloat16 is not an Array API standard dtype: the portable backend classifies "
            "dtypes with xp.isdtype, which rejects ml_dtypes dtypes"
        )
    return None


def where_lacks(xp: ModuleType, name: str) -> bool:
    """Whether the library's own ``where`` has no kernel for dtype ``name`` (an old torch),
    so that there is no library result to compare arrayselect's with."""
    return xp.__name__ == "torch" and _torch_where_lacks(xp, name)


def _torch_where_lacks(torch: ModuleType, name: str) -> bool:
    """Whether ``torch.where`` has no CPU kernel for dtype ``name`` (torch 2.6 to 2.9:
    uint16/32/64, and on 2.6 the float8 dtypes)."""
    dtype = getattr(torch, name, None)
    if dtype is None:
        return False
    x = torch.zeros(1, dtype=dtype)
    try:
        torch.where(torch.ones(1, dtype=torch.bool), x, x)
    except RuntimeError:
        return True
    return False


#: The first PyTorch whose Dynamo traces ``where`` and ``select_n`` whole
#: (``fullgraph=True``), as CI ran it: 2.13 to 2.15 do; 2.8 and 2.9 raise Dynamo's
#: ``Unsupported`` (on ``next(generator, default)`` and on ``elementwise_dtypes``) and
#: break the graph there instead; 2.10 to 2.12 were not run.
FULLGRAPH_SINCE = (2, 13)


def fullgraph(torch: ModuleType) -> bool:
    """Whether a test may ask ``torch.compile`` for one whole graph (``fullgraph=True``)
    on this PyTorch. Where it may not, Dynamo breaks the graph around what it cannot
    trace and the compiled call's results are checked the same."""
    major, minor = (int(part) for part in torch.__version__.split(".")[:2])
    return (major, minor) >= FULLGRAPH_SINCE


def skip_dtype(xp: ModuleType, name: str) -> None:
    """Skip the running test when ``xp`` lacks dtype ``name``."""
    reason = dtype_skip_reason(xp, name)
    if reason is not None:
        pytest.skip(reason)


def supports_out(xp: ModuleType) -> bool:
    """Whether SPEC §6 says ``out=`` works for this library (mutable arrays)."""
    return xp.__name__ in ("numpy", "torch", "cupy")


def backend_kind(xp: ModuleType) -> str:
    """Short library name of ``xp``: numpy, torch, dask, jax, cupy, array_api_strict."""
    return adapter(xp).library


# --------------------------------------------------------------------------- conversion


def from_numpy(xp: ModuleType, a: Any) -> Any:
    """A new array of library ``xp`` with the values, dtype and bits of NumPy array ``a``.

    Skips the test when the library has no such dtype. Dask arrays come in two
    chunks along every dimension, so that Dask really splits.
    """
    a = np.asarray(a)
    skip_dtype(xp, a.dtype.name)
    return adapter(xp).from_numpy(np.array(a, copy=True, order="C"))


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of array ``x`` of any library, bits preserved."""
    return adapters.for_array(x).to_numpy(x).copy()


# --------------------------------------------------------------------------- subprocesses


def jax_x64(jax: ModuleType, enabled: bool) -> Any:
    """JAX's thread-local 64-bit-mode block: ``jax.enable_x64``, or on the JAX releases
    that lack it (before 0.8; the lower bound is 0.5) ``jax.experimental.enable_x64``."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(enabled)
    import jax.experimental

    return jax.experimental.enable_x64(enabled)


def run_without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter in which ``module`` cannot be imported.

    An import of ``module`` (or of one of its submodules) raises ImportError, as
    it would where the package is not installed.
    """
    blocker = textwrap.dedent(f"""
        import sys

        class _Block:
            def find_spec(self, name, path=None, target=None):
                if name == {module!r} or name.startswith({module + "."!r}):
                    raise ImportError(f"No module named {{name!r}} (blocked by the test)")
                return None

        sys.meta_path.insert(0, _Block())
    """)
    program = blocker + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)


# --------------------------------------------------------------------------- warm caches

_FITTING = {bool: False, int: 0, float: 0.0, complex: 0j}


def _repaired(x: Any, like: Any) -> Any:
    """``x`` with what a call signature does not fix made valid: a Python scalar that
    fits any dtype of its kinds, an array on ``like``'s device.
    """
    if type(x) in _FITTING:
        return _FITTING[type(x)]
    library = type(x).__module__.partition(".")[0]
    try:
        if library == "torch" and x.device != like.device:
            return x.to(like.device)
        if library == "array_api_strict" and x.device != like.device:
            return type(x).__array_namespace__(x).asarray(x, device=like.device)
    except Exception:  # not an array, or no device to move to: the call stays invalid
        pass
    return x


def _fresh_out(out: Any) -> Any:
    """A writable array of ``out``'s library, shape, dtype and device, with its own memory."""
    try:
        return type(out).__array_namespace__(out).zeros_like(out)
    except Exception:  # not an array: the call stays invalid
        return out


def select_after_warming(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[bool, Any]:
    """Warm every cache with a valid call of the signature of ``select(*args, **kwargs)``,
    then make that call again.

    The valid call keeps the types, shapes, dtypes and options and changes only
    what a signature does not fix: Python scalars' values, devices, ``out``'s
    memory (a fresh writable array). Where no such call is valid (the error is
    about the signature itself) the caches hold whatever earlier calls left.

    Returns
    -------
    warmed, outcome
        Whether a valid call of the same signature ran (twice: a miss, then a
        hit); and the exception the repeated call raised, or its result.
    """
    import arrayselect as asel

    cond = args[0]
    valid_args = tuple(_repaired(x, cond) for x in args)
    valid_kwargs = dict(kwargs)
    if kwargs.get("out") is not None:
        valid_kwargs["out"] = _fresh_out(kwargs["out"])
    warmed = True
    for _ in range(2):
        try:
            asel.select(*valid_args, **valid_kwargs)
        except Exception:
            warmed = False
            break
    try:
        return warmed, asel.select(*args, **kwargs)
    except Exception as exc:
        return warmed, exc
