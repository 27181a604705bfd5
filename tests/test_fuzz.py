"""Fuzz harness: ``select_shape`` and ``select`` on arbitrary input, against the oracle.

Inputs are *arbitrary*, not only valid: shapes of any rank (with zero, one,
unknown, negative, bool, float, huge and non-int dims), every mode and
``cond_broadcast`` plus junk option values, ``axis`` of any sign and type,
every dtype, Python scalars of every kind and size (NaN, inf, out-of-range),
non-array objects and ``out`` arrays of the right or a wrong shape/dtype.

For every example, either

* the contract (:mod:`contract`, :mod:`oracle`) says "error", and the library
  raises one of the documented exceptions that the contract allows for this
  input (never anything else, never nothing), or
* the result equals the oracle's bit for bit (dtype and shape included), and
  no input was modified.

Budget. ``HYPOTHESIS_PROFILE=ci`` (the default) is derandomized and bounded to
about a minute for the whole module on 2 cores; ``HYPOTHESIS_PROFILE=long``
explores 100x more examples with fresh randomness each run (see
docs/hardening.md). Profiles are registered as ``arrayselect-ci`` and
``arrayselect-long`` so Hypothesis' own ``ci`` profile is left alone.
"""

from __future__ import annotations

import itertools
import math
import os
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from contract import (
    DOCUMENTED,
    axis_value,
    dtype_kind,
    option_errors,
    scalar_error,
    shape_arg_errors,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from oracle import OracleShapeError, bits_equal, oracle_select, oracle_shape
from xp_helpers import (
    ALL_DTYPES,
    backend_kind,
    dtype_skip_reason,
    from_numpy,
    numpy_dtype,
    to_numpy,
)

import arrayselect as asel

# --------------------------------------------------------------------------- budget

_HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "arrayselect-ci",
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=_HEALTH,
)
settings.register_profile(
    "arrayselect-long",
    max_examples=40_000,
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=_HEALTH,
)
_PROFILE_NAME = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if not _PROFILE_NAME.startswith("arrayselect-"):
    _PROFILE_NAME = f"arrayselect-{_PROFILE_NAME}"
if _PROFILE_NAME not in ("arrayselect-ci", "arrayselect-long"):
    _PROFILE_NAME = "arrayselect-ci"  # another project-wide profile: keep the fuzz bounded
PROFILE = settings.get_profile(_PROFILE_NAME)


def budget(weight: float) -> settings:
    """The profile with ``weight`` x its examples (per test, per backend)."""
    return settings(PROFILE, max_examples=max(10, int(PROFILE.max_examples * weight)))


# Share of the profile per test and backend: NumPy is fast, PyTorch/JAX/Dask
# pay per-call overheads (Dask builds a graph and computes it).
SELECT_WEIGHT = {
    "numpy": 1.0,
    "numpy_portable": 0.5,
    "array_api_strict": 0.3,
    "torch": 0.3,
    "jax.numpy": 0.12,
    "dask.array": 0.1,
    "cupy": 0.3,
}

# --------------------------------------------------------------------------- strategies

JUNK_OPTION = st.sampled_from(["NUMPY", "", "pdpd ", None, 0, b"numpy", 1.5, ("numpy",)])
MODE = st.one_of(st.sampled_from(("numpy", "none", "pdpd")), JUNK_OPTION, st.just(np.str_("pdpd")))
CB = st.one_of(st.sampled_from(("unidirectional", "multidirectional")), JUNK_OPTION)
AXIS = st.one_of(
    st.just(-1),
    *[st.integers(0, 4)] * 4,
    st.integers(-3, 7),
    st.sampled_from([np.int64(1), np.int8(-1), np.uint8(0), 2**70, -(2**70)]),
    st.sampled_from([1.0, "1", None, True, False, np.bool_(False), np.array([1]), 1j, [0]]),
)


def rare(percent: int) -> st.SearchStrategy[bool]:
    """True ``percent``% of the time; False is the simplest value (what shrinking aims at)."""
    return st.integers(0, 99).map(lambda i: i >= 100 - percent)


@st.composite
def options(draw) -> dict[str, Any]:
    """Keyword options: mostly valid, mostly consistent with each other, sometimes junk."""
    opts: dict[str, Any] = {}
    if draw(rare(10)):
        opts["auto_broadcast"] = draw(MODE)
    else:
        opts["auto_broadcast"] = draw(st.sampled_from(("numpy", "none", "pdpd")))
    mode = opts["auto_broadcast"]
    if (mode == "pdpd" or draw(rare(10))) and draw(st.booleans()):
        opts["axis"] = draw(AXIS)
    if (mode == "numpy" or draw(rare(10))) and draw(st.booleans()):
        opts["cond_broadcast"] = draw(CB if draw(rare(10)) else CB.filter(str.__instancecheck__))
    return opts


DIM = st.sampled_from((0, 1, 1, 2, 2, 3, 3))


@st.composite
def related_shapes(draw, opts: dict[str, Any], max_rank: int = 5) -> tuple[tuple[int, ...], ...]:
    """(cond, then, else) for the mode in ``opts``: mostly valid, sometimes not.

    Each input is derived from one base shape the way the mode allows (identical
    for "none", a suffix with some dims set to 1 for "numpy", a slice at the
    axis with trailing 1s for "pdpd") or, one time in five, drawn unrelated.
    """
    base = tuple(draw(DIM) for _ in range(draw(st.integers(0, max_rank))))
    mode = opts.get("auto_broadcast", "numpy")
    axis = axis_value(opts.get("axis", -1))

    def ones(src: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(1 if draw(rare(25)) else d for d in src)

    def derive(role: str) -> tuple[int, ...]:
        if draw(rare(15)):  # unrelated: mostly invalid
            return tuple(draw(DIM) for _ in range(draw(st.integers(0, max_rank))))
        if mode == "none":
            return base
        if mode == "pdpd" and role != "then":
            start = axis if axis is not None and axis >= 0 else None
            if start is None or start > len(base):
                k = draw(st.integers(0, len(base)))
                return ones(base[len(base) - k :])
            k = draw(st.integers(0, len(base) - start))
            return ones(base[start : start + k]) + (1,) * draw(st.integers(0, 2))
        if mode == "pdpd":
            return base
        k = draw(st.integers(0, len(base)))
        return ones(base[len(base) - k :])

    then = base if draw(st.booleans()) else derive("then")
    cond = derive("cond")
    if opts.get("cond_broadcast") == "multidirectional" and draw(st.booleans()):
        cond, then = base, derive("then")  # cond may enlarge the output
    return cond, then, derive("else")


@st.composite
def shapes_and_options(draw, max_rank: int = 5):
    opts = draw(options())
    return draw(related_shapes(opts, max_rank)), opts


WEIRD_DIM = st.one_of(
    st.none(),
    st.integers(-3, -1),
    st.sampled_from([True, 1.0, "2", np.int64(2), np.uint8(1), 2**70, [1], np.array([1, 2])]),
)


@st.composite
def any_shape_arg(draw, shape: tuple[int, ...]) -> Any:
    """``shape`` as a select_shape argument: tuple, list, range, or junk; weird dims."""
    dims: list[Any] = list(shape)
    if dims and draw(rare(25)):
        for _ in range(draw(st.integers(1, min(3, len(dims))))):
            dims[draw(st.integers(0, len(dims) - 1))] = draw(WEIRD_DIM)
    how = draw(st.integers(0, 19))
    if how == 19:
        return draw(st.sampled_from(["(2, 3)", 3, None, {2: 3}, np.array(shape), iter(dims)]))
    if how == 18:
        return list(dims)
    return tuple(dims)


# --------------------------------------------------------------------------- select_shape


MAX_UNKNOWNS = 3


def _completions(shapes: list[tuple[Any, ...]]) -> list[list[tuple[int, ...]]]:
    """Every way to fill the unknown dims that matters (0, 1, each known dim, a fresh one)."""
    known = {d for s in shapes for d in s if d is not None}
    values = sorted({0, 1, *known, max(known | {1}) + 1})
    slots = [(i, k) for i, s in enumerate(shapes) for k, d in enumerate(s) if d is None]
    out = []
    for fill in itertools.product(values, repeat=len(slots)):
        full = [list(s) for s in shapes]
        for (i, k), v in zip(slots, fill, strict=True):
            full[i][k] = v
        out.append([tuple(s) for s in full])
    return out


def _oracle_or_none(shapes: list[tuple[int, ...]], opts: dict[str, Any]) -> tuple[int, ...] | None:
    try:
        return oracle_shape(*shapes, **_oracle_options(opts))
    except OracleShapeError:
        return None


def _oracle_options(opts: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in opts.items() if k != "axis"}
    if "axis" in opts:
        out["axis"] = axis_value(opts["axis"])
    return out


@budget(2.0)
@given(case=shapes_and_options(), data=st.data())
def test_fuzz_select_shape(case, data):
    shapes, opts = case
    check_select_shape([data.draw(any_shape_arg(s)) for s in shapes], opts)


def _no_note(text: str) -> None:
    return None


def check_select_shape(args: list[Any], opts: dict[str, Any], note=event) -> None:
    """``select_shape(*args, **opts)`` agrees with the contract and the oracle."""
    expected: set[type[Exception]] = set(
        option_errors(
            opts.get("auto_broadcast", "numpy"),
            opts.get("axis", -1),
            opts.get("cond_broadcast", "unidirectional"),
        )
    )
    for a in args:
        expected |= shape_arg_errors(a)
    try:
        result = asel.select_shape(*args, **opts)
    except DOCUMENTED as exc:
        error: BaseException | None = exc
    except Exception as exc:  # anything else is a defect
        raise AssertionError(f"undocumented {type(exc).__name__}: {exc}") from exc
    else:
        error = None
    note("select_shape: " + ("contract error" if expected else "shape rules"))
    if expected:
        assert error is not None, f"no error; contract says {expected}: {args} {opts}"
        assert type(error) in expected, f"{type(error).__name__} not in {expected}: {error}"
        return
    # Valid arguments: the shape rules decide, over every completion of unknown dims.
    norm = [tuple(None if d is None else int(d) for d in a) for a in args]
    if sum(d is None for s in norm for d in s) > MAX_UNKNOWNS:
        note("select_shape: too many unknown dims to enumerate")
        return
    outcomes = [_oracle_or_none(full, opts) for full in _completions(norm)]
    successes = [o for o in outcomes if o is not None]
    if error is not None:
        assert type(error) is asel.SelectShapeError, f"{type(error).__name__}: {error}"
        assert not successes, f"error although {successes[0]} is possible: {norm} {opts}"
        msg = str(error)
        assert any(name in msg for name in ("cond", "then", "else")), msg
        return
    assert successes, f"{result} although every completion fails: {norm} {opts}"
    for out in successes:
        assert len(result) == len(out)
        for known, actual in zip(result, out, strict=True):
            assert known is None or known == actual, (norm, opts, result, out)
    for k, known in enumerate(result):
        if known is None:
            assert len({o[k] for o in successes}) > 1, (norm, opts, result, k)


# --------------------------------------------------------------------------- select


class _Fake:
    shape = (2, 3)
    dtype = np.dtype(np.float32)


NON_ARRAYS = st.sampled_from([None, [True, False], "abc", _Fake(), {1: 2}, b"\x00"])

SCALAR = st.one_of(
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63, -(2**63) - 1, 2**64, 2**64 - 1, 255, 256, -129, 65504, 65505]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, -math.nan, -0.0, 65519.0, 65520.0, 3.5e38, 1e300, 5e-324]),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
)

COND_DTYPES = ("bool",) * 6 + ("int8", "uint8", "int32", "uint64", "float32", "complex64")


def fitting_scalar(kind: str | None) -> st.SearchStrategy[Any]:
    """A Python scalar of a type that may take a dtype of ``kind`` (range not guaranteed)."""
    if kind == "bool":
        return st.booleans()
    if kind in ("int", "uint"):
        return st.one_of(st.integers(-5, 300), st.integers(-(2**64), 2**64))
    if kind == "float":
        return st.one_of(st.integers(-100, 100), st.floats(width=16), st.floats())
    return st.one_of(st.floats(), st.complex_numbers(max_magnitude=1e30))


def _random_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any]):
    size = math.prod(shape)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    raw = rng.integers(0, 256, size=size * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _random_cond(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any]):
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.choice(np.array([0, 0, 1, 2, 255], dtype=np.uint8), size=shape).astype(dtype)


def _dtype_names(xp: ModuleType) -> list[str]:
    return [d for d in ALL_DTYPES if dtype_skip_reason(xp, d) is None]


def _default_dtype(xp: ModuleType, kind: type) -> np.dtype[Any]:
    """The namespace's default dtype for a Python scalar type, asked of the library itself."""
    return np.dtype(str(xp.asarray(kind(0)).dtype).rpartition(".")[2])


def _as_array(value: Any, dtype: np.dtype[Any]) -> np.ndarray:
    """A Python scalar that fits, converted as NumPy converts it (ints via float)."""
    if type(value) is int and dtype_kind(dtype) in ("float", "complex"):
        value = float(value)
    return np.asarray(value, dtype=dtype)


SCALAR_TYPES = (bool, int, float, complex)


def _expected(xp, cond, then, else_, opts, out_np, out_role):
    """(errors the contract allows, (cond, then, else) as NumPy arrays when valid)."""
    errors = set(
        option_errors(
            opts.get("auto_broadcast", "numpy"),
            opts.get("axis", -1),
            opts.get("cond_broadcast", "unidirectional"),
        )
    )
    if not isinstance(cond, np.ndarray) or dtype_kind(cond.dtype) not in ("bool", "int", "uint"):
        errors.add(asel.SelectTypeError)
    for v in (then, else_):
        if not isinstance(v, np.ndarray) and type(v) not in SCALAR_TYPES:
            errors.add(asel.SelectTypeError)
    if out_role == "junk":
        errors.add(asel.SelectTypeError)
    if errors:
        return errors, None
    t_scalar, e_scalar = type(then) in SCALAR_TYPES, type(else_) in SCALAR_TYPES
    if t_scalar and e_scalar:
        if type(then) is not type(else_):
            return {asel.SelectTypeError}, None
        dtype = _default_dtype(xp, type(then))
        for v in (then, else_):
            err = scalar_error(v, dtype)
            if err:
                errors.add(err)
        if errors:
            return errors, None
        then, else_ = _as_array(then, dtype), _as_array(else_, dtype)
    elif t_scalar or e_scalar:
        value, other = (then, else_) if t_scalar else (else_, then)
        err = scalar_error(value, other.dtype)
        if err:
            return {err}, None
        if t_scalar:
            then = _as_array(then, else_.dtype)
        else:
            else_ = _as_array(else_, then.dtype)
    elif then.dtype != else_.dtype:
        return {asel.SelectTypeError}, None
    try:
        shape = oracle_shape(cond.shape, then.shape, else_.shape, **_oracle_options(opts))
    except OracleShapeError:
        return {asel.SelectShapeError}, None
    if out_np is not None:
        if backend_kind(xp) not in ("numpy", "torch", "cupy"):
            return {asel.SelectTypeError}, None
        if out_np.shape != shape:
            errors.add(asel.SelectShapeError)
        if out_np.dtype != then.dtype:
            errors.add(asel.SelectTypeError)
        if errors:
            return errors, None
    return set(), (cond, then, else_)


@st.composite
def select_inputs(draw, dtypes: list[str]):
    opts = draw(options())
    cshape, tshape, eshape = draw(related_shapes(opts, max_rank=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = numpy_dtype(draw(st.sampled_from(dtypes)))

    def operand(shape: tuple[int, ...]) -> Any:
        how = draw(st.integers(0, 39))
        if how < 32:
            return _random_values(rng, shape, dtype)
        if how < 34:
            return draw(SCALAR)
        if how < 37:
            return draw(fitting_scalar(dtype_kind(dtype)))
        if how == 37:
            return draw(NON_ARRAYS)
        # another dtype: usually an error, sometimes the same
        return _random_values(rng, shape, numpy_dtype(draw(st.sampled_from(dtypes))))

    if draw(rare(2)):
        cond: Any = draw(st.one_of(NON_ARRAYS, st.booleans()))
    else:
        cond_dtype = numpy_dtype(draw(st.sampled_from(COND_DTYPES)))
        cond = _random_cond(rng, cshape, cond_dtype)
    then, else_ = operand(tshape), operand(eshape)
    out_role = draw(
        st.sampled_from(["none"] * 12 + ["right"] * 6 + ["then"] * 2 + ["shape", "dtype", "junk"])
    )
    return cond, then, else_, out_role, rng, opts


def _make_out(xp, role, cond, then, else_, opts, rng):
    """(library out, NumPy copy of it) for an out role; None for no out."""
    if role == "none":
        return None, None
    if role == "junk":
        return [[0.0]], None
    arrays = [a for a in (then, else_) if isinstance(a, np.ndarray)]
    dtype = arrays[0].dtype if arrays else np.dtype(np.float64)
    try:
        shape = oracle_shape(
            getattr(cond, "shape", ()),
            getattr(then, "shape", ()),
            getattr(else_, "shape", ()),
            **_oracle_options(opts),
        )
    except (OracleShapeError, AssertionError, TypeError):
        shape = (2,)
    if role == "shape":
        shape = (*shape, 2)
    if role == "dtype":
        dtype = np.dtype(np.int16) if dtype != np.int16 else np.dtype(np.uint16)
    if role == "then" and isinstance(then, np.ndarray):
        return "then", then
    out_np = _random_values(rng, shape, dtype)
    return from_numpy(xp, out_np), out_np


def _to_lib(xp, v):
    return from_numpy(xp, v) if isinstance(v, np.ndarray) else v


@pytest.fixture
def fuzz_budget(library) -> float:
    return SELECT_WEIGHT.get(str(library), 0.2)


def _run_select_case(xp, case, note=event):
    """``select`` on one generated case agrees with the contract and the oracle."""
    cond, then, else_, out_role, rng, opts = case
    x_cond, x_then, x_else = (_to_lib(xp, v) for v in (cond, then, else_))
    out, out_np = _make_out(xp, out_role, cond, then, else_, opts, rng)
    if isinstance(out, str):  # out is then itself
        out, out_np = x_then, then
    errors, arrays = _expected(xp, cond, then, else_, opts, out_np, out_role)
    kwargs = dict(opts)
    if out is not None:
        kwargs["out"] = out
    try:
        result = asel.select(x_cond, x_then, x_else, **kwargs)
    except DOCUMENTED as exc:
        error: BaseException | None = exc
    except Exception as exc:
        raise AssertionError(f"undocumented {type(exc).__name__}: {exc}") from exc
    else:
        error = None
    # Inputs are never modified (except out, and then when it is out).
    for x, v in ((x_cond, cond), (x_then, then), (x_else, else_)):
        if isinstance(v, np.ndarray) and not (x is out and error is None):
            assert bits_equal(to_numpy(x), v), "an input was modified"
    note("select: " + (f"error {sorted(e.__name__ for e in errors)}" if errors else "result"))
    if errors:
        assert error is not None, f"no error; contract says {errors}"
        assert type(error) in errors, f"{type(error).__name__} not in {errors}: {error}"
        return
    assert error is None, f"{type(error).__name__} on valid input: {error}"
    expected = oracle_select(*arrays, **_oracle_options(opts))
    got = to_numpy(result)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape)
    assert bits_equal(got, expected), f"values differ:\n{got!r}\n{expected!r}"
    if out is not None:
        assert result is out


def test_fuzz_select(xp: ModuleType, fuzz_budget: float):
    dtypes = _dtype_names(xp)

    @budget(fuzz_budget)
    @given(case=select_inputs(dtypes))
    def run(case):
        _run_select_case(xp, case)

    run()
