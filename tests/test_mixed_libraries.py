"""Operands from two libraries never lose bits: each result is exact or a SelectError.

NumPy arrays may join JAX arrays; every other pair of libraries is refused. The
matrix runs every dtype through every position a NumPy operand (or a Python
scalar) can take beside JAX arrays, with JAX's 64-bit mode on and off, on the
JAX backend and the portable backend, cold and after a warm cache (warmed with
64-bit mode on, the mode in which a 64-bit signature is valid). What JAX holds
in each mode is written here from JAX's documentation, not asked of the code
under test; results are compared bit for bit with the oracle.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from oracle import bits_equal, oracle_select
from xp_helpers import jax_x64, numpy_dtype, select_after_warming, to_numpy

import arrayselect as asel
from arrayselect._dispatch import registry as _registry

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

#: Every dtype a NumPy operand can bring (bfloat16 from ml_dtypes, as JAX uses it).
DTYPES = [
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
    "longdouble",
]
#: What JAX narrows to 32 bits unless 64-bit mode is on (JAX's "current gotchas").
NARROWED_WITHOUT_X64 = {"int64", "uint64", "float64", "complex128"}

# Where NumPy operands (N), JAX arrays (J) and Python scalars (S) stand, as
# (cond, then, else). cond is a JAX bool array unless it is N (then of the dtype
# under test, integer or bool, nonzero is true).
LAYOUTS = ["JNJ", "JJN", "JNN", "JNS", "JSN", "NJJ", "NJS"]


def _dtype(name: str) -> np.dtype[Any]:
    if name == "longdouble":
        dtype = np.dtype(np.longdouble)
        if dtype.itemsize <= 8:
            pytest.skip("longdouble is float64 on this platform")
        return dtype
    return numpy_dtype(name)


def _held(name: str, x64: bool) -> bool:
    """Whether JAX holds arrays of this dtype as they are, in this mode."""
    return name != "longdouble" and (x64 or name not in NARROWED_WITHOUT_X64)


def _values(dtype: np.dtype[Any], shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random bit patterns (NaN payloads, subnormals, signed zeros); 0/1 for bool."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    raw = rng.integers(0, 256, (*shape, dtype.itemsize), dtype=np.uint8)
    return raw.view(dtype).reshape(shape).copy()


def _scalar(dtype: np.dtype[Any]) -> bool | int | float | complex:
    """A Python scalar of the dtype's kind, as large as the dtype allows (beyond 32 bits)."""
    if dtype == np.bool_:
        return True
    if dtype.kind == "i":
        return -(2**40) if dtype.itemsize == 8 else -7
    if dtype.kind == "u":
        return 2**63 + 5 if dtype.itemsize == 8 else 7
    big = dtype.itemsize >= 8 and dtype != np.complex64
    if dtype.kind == "c":
        return complex(1e300, -2.5) if big else complex(1.5, -2.5)
    return 1e300 if big else 1.5


@contextlib.contextmanager
def _x64(enabled: bool) -> Iterator[None]:
    with jax_x64(jax, enabled):
        yield


def _case(layout: str, name: str) -> tuple[Any, ...]:
    """The arguments of one case."""
    dtype = _dtype(name)
    shapes = [(3,), (2, 3), (3,)]
    if layout[0] == "N" and dtype.kind not in "biu":
        pytest.skip("cond must be boolean or integer")
    value_dtype = dtype if layout[0] == "J" else np.dtype(np.float32)
    args: list[Any] = []
    for k, (kind, shape) in enumerate(zip(layout, shapes, strict=True)):
        this = np.dtype(np.bool_) if k == 0 and kind == "J" else (dtype if k == 0 else value_dtype)
        if kind == "S":
            args.append(_scalar(this))
            continue
        values = _values(this, shape, seed=k)
        if kind == "N":
            args.append(values)
            continue
        if this == np.longdouble:
            pytest.skip("JAX has no arrays of longdouble")
        with _x64(True):  # a JAX array of a 64-bit dtype exists only in 64-bit mode
            args.append(jnp.asarray(values))
    return tuple(args)


def _expected(args: tuple[Any, ...]) -> np.ndarray:
    """The oracle's result on NumPy copies (a Python scalar as a 0-d array of the dtype)."""
    arrays = [a for a in args[1:] if not isinstance(a, (bool, int, float, complex))]
    dtype = to_numpy(arrays[0]).dtype
    cond, then, else_ = (
        np.asarray(a, dtype=dtype) if isinstance(a, (bool, int, float, complex)) else to_numpy(a)
        for a in args
    )
    return oracle_select(cond, then, else_)


def _first_unheld(args: tuple[Any, ...], x64: bool) -> tuple[str, str] | None:
    """The first operand (name, dtype) that JAX cannot hold in this mode."""
    for name, a in zip(("cond", "then", "else"), args, strict=True):
        if isinstance(a, (bool, int, float, complex)):
            continue
        dtype = np.dtype(a.dtype).name
        dtype_name = "longdouble" if np.dtype(a.dtype) == np.longdouble else dtype
        if not _held(dtype_name, x64):
            return name, dtype
    return None


def _check(outcome: Any, args: tuple[Any, ...], x64: bool) -> None:
    unheld = _first_unheld(args, x64)
    if unheld is not None:
        name, dtype = unheld
        assert isinstance(outcome, asel.SelectTypeError), outcome
        message = str(outcome)
        assert message.startswith(f"{name} has dtype {dtype}"), message
        if dtype != np.dtype(np.longdouble).name:
            assert "jax_enable_x64" in message and f"{name}.astype(" in message, message
        return
    assert not isinstance(outcome, BaseException), outcome
    assert isinstance(outcome, jax.Array)
    assert bits_equal(to_numpy(outcome), _expected(args))


def _snapshot(args: tuple[Any, ...]) -> list[bytes | None]:
    return [a.tobytes() if isinstance(a, np.ndarray) else None for a in args]


def _run(call: Callable[..., Any], *args: Any) -> Any:
    try:
        return call(*args)
    except Exception as exc:
        return exc


def _forgetting(portable: bool) -> contextlib.AbstractContextManager[None]:
    backend = _registry.active_backend("jax")
    if backend is not None and hasattr(backend, "cache_clear"):
        backend.cache_clear()  # cold: no decision cached for any signature
    return asel.force_portable() if portable else contextlib.nullcontext()


@pytest.mark.parametrize("portable", [False, True], ids=["jax", "portable"])
@pytest.mark.parametrize("x64", [False, True], ids=["x64_off", "x64_on"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", DTYPES)
def test_numpy_beside_jax_is_exact_or_refused(
    name: str, layout: str, x64: bool, portable: bool
) -> None:
    args = _case(layout, name)
    before = _snapshot(args)
    with _forgetting(portable):
        with _x64(x64):
            cold = _run(lambda: asel.select(*args))
        _check(cold, args, x64)
        # Warm the signature where it is valid (64-bit mode on), then call again.
        with _x64(True):
            _run(lambda: asel.select(*args))
            _run(lambda: asel.select(*args))
        with _x64(x64):
            warm = _run(lambda: asel.select(*args))
            _, again = select_after_warming(args, {})
        _check(warm, args, x64)
        _check(again, args, x64)
    assert _snapshot(args) == before, "an input changed"


@pytest.mark.parametrize(
    "call",
    [
        lambda: asel.select(jnp.array([True, True]), np.array([2**40, 5]), 0),
        lambda: asel.select(jnp.array([False, False]), np.array([1, 2]), 2**40),
        lambda: asel.select(jnp.array([False]), np.array([1.0]), 1e300),
    ],
    ids=["int64_then", "int64_with_big_scalar", "float64_with_huge_scalar"],
)
def test_the_issues_repros_raise_without_x64_and_are_exact_with_it(
    call: Callable[[], Any],
) -> None:
    with _x64(False), pytest.raises(asel.SelectTypeError, match="jax_enable_x64"):
        call()
    with _x64(True):
        result = call()
    assert result.dtype in (np.int64, np.float64)
    assert result.tolist() in ([2**40, 5], [2**40, 2**40], [1e300])


@pytest.mark.parametrize("position", ["which", "cases"])
def test_select_n_refuses_what_jax_would_narrow_and_is_exact_with_x64(position: str) -> None:
    # select_n promises select's exactness: the same rule, through the same core check.
    if position == "which":
        which: Any = np.array([0, 1])  # int64
        cases: tuple[Any, ...] = (jnp.array([3, 4], jnp.int32), jnp.array([7, 8], jnp.int32))
        name, expected = "which", [3, 8]
    else:
        which = jnp.array([1, 0], jnp.int32)
        cases = (np.array([2**40, 5]), np.array([1, 2]))
        name, expected = "cases[0]", [1, 5]
    with (
        _x64(False),
        pytest.raises(asel.SelectTypeError, match=rf"^{re.escape(name)} has dtype int64"),
    ):
        asel.select_n(which, *cases)
    with _x64(True):
        result = asel.select_n(which, *cases)
    assert result.tolist() == expected


def test_a_jitted_function_refuses_what_jax_would_narrow() -> None:
    cond = jnp.array([True, False])
    with _x64(False):
        with pytest.raises(asel.SelectTypeError, match="then has dtype int64"):
            jax.jit(lambda c: asel.select(c, np.array([2**40, 5]), 0))(cond)
        kept = jax.jit(lambda c: asel.select(c, np.array([3, 5], np.int32), 0))(cond)
    assert kept.tolist() == [3, 0]


# --------------------------------------------------------------------------- other libraries


def _library(name: str) -> Any:
    module = pytest.importorskip(name)
    if name == "cupy":
        try:
            module.cuda.runtime.getDeviceCount()
        except Exception:
            pytest.skip("CuPy has no CUDA device here")
    return module


def _from_numpy(name: str, a: np.ndarray) -> Any:
    module = _library(name)
    if name == "torch":
        return module.from_numpy(a.copy())
    if name == "dask.array":
        return module.from_array(a.copy(), chunks=1)
    return module.asarray(a.copy())


OTHERS = ["dask.array", "array_api_strict", "torch", "cupy"]


@pytest.mark.parametrize("position", [0, 1, 2])
@pytest.mark.parametrize("library", OTHERS)
def test_numpy_arrays_do_not_join_other_libraries(library: str, position: int) -> None:
    values = [np.array([True, False]), np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    args = tuple(values[k] if k == position else _from_numpy(library, values[k]) for k in range(3))
    before = _snapshot(args)
    cold = _run(lambda: asel.select(*args))
    _, warm = select_after_warming(args, {})
    for outcome in (cold, warm):
        assert isinstance(outcome, asel.SelectTypeError), outcome
        assert "different libraries" in str(outcome)
    assert _snapshot(args) == before


@pytest.mark.parametrize("name", [d for d in DTYPES if d not in ("longdouble", "bfloat16")])
@pytest.mark.parametrize("library", OTHERS)
def test_python_scalars_beside_other_libraries_are_exact(library: str, name: str) -> None:
    dtype = _dtype(name)
    then = _values(dtype, (2, 3), seed=1)
    cond = _values(np.dtype(np.bool_), (2, 3), seed=0)
    scalar = _scalar(dtype)
    if library == "torch" and dtype.kind == "u" and dtype.itemsize > 1:
        pytest.skip("PyTorch's where has no uint16/32/64 kernels")
    try:
        args = (_from_numpy(library, cond), _from_numpy(library, then), scalar)
    except (TypeError, ValueError):
        pytest.skip(f"{library} has no {name}")
    expected = oracle_select(cond, then, np.asarray(scalar, dtype=dtype))
    for outcome in (_run(lambda: asel.select(*args)), select_after_warming(args, {})[1]):
        assert not isinstance(outcome, BaseException), outcome
        assert bits_equal(to_numpy(outcome), expected)


@pytest.mark.parametrize("x64", [False, True], ids=["x64_off", "x64_on"])
@pytest.mark.parametrize("name", [d for d in DTYPES if d != "longdouble"])
def test_where_beside_jax_does_what_jnp_where_does(name: str, x64: bool) -> None:
    dtype = _dtype(name)
    cond = jnp.asarray(_values(np.dtype(np.bool_), (3,), seed=0))
    x1, x2 = _values(dtype, (2, 3), seed=1), _values(dtype, (3,), seed=2)
    with _x64(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # JAX may warn that it narrows
        cases = [(cond, x1, x2), (cond, x1, _scalar(dtype)), (cond, _scalar(dtype), x2)]
        for args in cases:
            expected = _run(jnp.where, *args)
            for _ in range(2):  # cold, then warm
                result = _run(asel.where, *args)
                if isinstance(expected, Exception):
                    # JAX refuses a Python int beyond what it converts (beyond 32 bits
                    # without x64, beyond int64 even for uint64): where refuses it too,
                    # or takes it exactly where the result dtype holds it.
                    if not isinstance(result, Exception):
                        scalar = next(a for a in args[1:] if isinstance(a, int))
                        assert np.asarray(scalar, dtype=to_numpy(result).dtype) == scalar
                    continue
                assert result.dtype == expected.dtype
                assert bits_equal(to_numpy(result), to_numpy(expected))
