"""The JAX backend (CPU, GPU, TPU): reshapes and broadcasts, then one ``lax.select_n``.

Inside a trace (``jax.jit``, ``grad``, ``vmap``, ``scan``, ``checkpoint``,
``jax.export``, ...) :meth:`JaxBackend.select` emits only ``reshape`` and
``broadcast_in_dim`` for the inputs whose shapes differ from the output's, an
``ne`` for an integer ``cond``, and one ``select_n``, so transformations treat
Select exactly like ``lax.select``. ``then`` and ``else`` are never converted.
Validation reads static shapes and dtypes only, so it works on tracers and on
symbolic (``jax.export``) shapes.

Eager calls on concrete arrays run a ``jax.jit``-compiled function kept in a
bounded, thread-safe LRU cache keyed by shapes, dtypes and options. A fast path
registered for the concrete array type looks the key up first and skips
namespace inference and re-validation; on a miss it runs the general path
(identical validation and errors) and caches what that path validated.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable, Hashable
from types import ModuleType
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from arrayselect import _registry
from arrayselect._backend import Backend, DtypeKind
from arrayselect._errors import (
    ScalarOverflowError,
    SelectError,
    SelectShapeError,
    SelectValueError,
)
from arrayselect._select import register_fast_path, select_general
from arrayselect._shapes import SelectPlan, Shape, _same, check_options, make_plan
from arrayselect._validate import _scalar_fitting, check_cond_dtype, materialize_scalars

__all__ = ["DEFAULT_CACHE_SIZE", "CacheInfo", "JaxBackend", "create"]

#: Default number of compiled eager Select functions kept per cache.
DEFAULT_CACHE_SIZE = 512

_Tracer = jax.core.Tracer


def _concrete_array_type() -> type:
    """The type of concrete JAX arrays, even when this module is imported during a trace."""
    with jax.ensure_compile_time_eval():
        found: type = type(jnp.zeros(()))
    if issubclass(found, _Tracer):  # pragma: no cover - older JAX
        from jax._src.array import ArrayImpl

        found = ArrayImpl
    return found


#: The type of concrete (non-traced) JAX arrays; the fast path is keyed by it.
_ArrayImpl: type = _concrete_array_type()
_SCALAR_TYPES = (bool, int, float, complex)
_REGISTRY_KEY = ("jax", False)

# Typed handles on untyped JAX functions (mypy --strict).
_iinfo: Callable[[Any], Any] = jnp.iinfo
_finfo: Callable[[Any], Any] = jnp.finfo
_PartitionSpec: Callable[..., Any] = jax.sharding.PartitionSpec


_config_read: Callable[[str], Any] = jax.config.read


def _x64() -> bool:
    return bool(_config_read("jax_enable_x64"))


_KINDS: tuple[tuple[Any, DtypeKind], ...] = (
    (jnp.bool_, "bool"),
    (jnp.signedinteger, "int"),
    (jnp.unsignedinteger, "uint"),
    (jnp.floating, "float"),
    (jnp.complexfloating, "complex"),
)


class CacheInfo(NamedTuple):
    """Statistics of the eager cache of :class:`JaxBackend`.

    Attributes
    ----------
    traces
        Times a fast-path function was traced (and then compiled): cache misses.
    functions
        Fast-path functions kept (one per options and scalar kinds).
    executables
        Compiled executables those functions hold (one per shapes, dtypes,
        weak types and shardings seen).
    maxsize
        The bound of the cache.
    """

    traces: int
    functions: int
    executables: int
    maxsize: int


class _LRU:
    """A bounded least-recently-used mapping, safe to use from several threads.

    Lookups take no lock (single ``OrderedDict`` operations are atomic);
    insertions and evictions do.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: collections.OrderedDict[Hashable, Any] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value for ``key`` (now the most recently used), or ``None``."""
        value = self._data.get(key)
        if value is not None:
            with contextlib.suppress(KeyError):  # evicted by another thread meanwhile
                self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Store ``value``; evict the least recently used entries beyond the bound."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def pop(self, key: Hashable) -> None:
        """Drop ``key`` if present."""
        with self._lock:
            self._data.pop(key, None)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


def _is_one(d: Any) -> bool:
    return _same(d, 1) is True


def _inconclusive(name: str, shape: Any, out_shape: Any, detail: str) -> SelectShapeError:
    return SelectShapeError(
        f"{name} shape {tuple(shape)} cannot be broadcast onto the output shape "
        f"{tuple(out_shape)} when tracing with JAX: {detail}; JAX must know while tracing "
        "that each dimension equals the output's or is 1 (for symbolic shapes, use one "
        "symbol for dimensions that are equal, or a constant)"
    )


def _layout(
    name: str, x: Any, aligned: Shape | None, out_shape: Shape
) -> tuple[Any, tuple[int, ...]]:
    """``x`` without the size-1 dims its alignment trims, and the output dims its dims go to.

    The aligned shape is ``x``'s shape with trailing 1s trimmed (pdpd) and 1s
    added around it, so no reshape is needed: at most a ``squeeze`` of trimmed
    dims, then one ``broadcast_in_dim`` that maps the remaining dims.
    """
    shape = tuple(x.shape)
    rank = len(out_shape)
    if aligned is None:
        return x, tuple(range(rank - len(shape), rank))
    offset = rank - len(aligned)
    for kept in range(len(shape), -1, -1):
        for start in range(len(aligned) - kept + 1):
            outside = aligned[:start] + aligned[start + kept :]
            if aligned[start : start + kept] == shape[:kept] and all(map(_is_one, outside)):
                if kept < len(shape):
                    try:
                        x = lax.squeeze(x, tuple(range(kept, len(shape))))
                    except Exception as exc:  # symbolic sizes JAX cannot prove to be 1
                        raise _inconclusive(name, shape, out_shape, str(exc)) from None
                return x, tuple(range(offset + start, offset + start + kept))
    try:  # not reached for plans of make_plan; kept as a safe fallback
        x = lax.reshape(x, tuple(aligned))
    except Exception as exc:
        raise _inconclusive(name, shape, out_shape, str(exc)) from None
    return x, tuple(range(offset, rank))


def _check_dims(name: str, x: Any, dims: tuple[int, ...], out_shape: Shape) -> None:
    """Each dim must provably equal its output dim or be 1 (only symbolic dims can fail)."""
    for k, d in enumerate(x.shape):
        target = out_shape[dims[k]]
        if _same(d, target) is not True and not _is_one(d):
            raise _inconclusive(
                name, x.shape, out_shape, f"dimension {k} is {d} and the output's is {target}"
            )


def _explicit_sharding(placed: list[tuple[Any, tuple[int, ...]]], rank: int) -> Any:
    """Output sharding under explicit mesh axes (``None`` otherwise), as JAX broadcasts.

    A dim sharded in one operand and not size 1 there is sharded the same way in
    the output; conflicting shardings are left for ``select_n`` to report.
    """
    typeof = getattr(jax, "typeof", None)
    if typeof is None:
        return None
    spec: list[Any] = [None] * rank
    mesh = None
    for x, dims in placed:
        sharding: Any = getattr(typeof(x), "sharding", None)
        partitions = getattr(sharding, "spec", None)
        if partitions is None:
            continue
        for k, part in enumerate(partitions):
            if part is not None and k < len(dims) and not _is_one(x.shape[k]):
                spec[dims[k]] = spec[dims[k]] or part
                mesh = sharding.mesh
    if mesh is None:
        return None
    return jax.sharding.NamedSharding(mesh, _PartitionSpec(*spec))


def emit(plan: SelectPlan, cond: Any, then: Any, else_: Any) -> Any:
    """The Select ops for validated inputs: squeeze/broadcast where needed, one ``select_n``.

    Parameters
    ----------
    plan : SelectPlan
        Output shape and aligned input shapes, from :func:`arrayselect._shapes.make_plan`.
    cond, then, else_ : jax.Array, tracer or numpy.ndarray
        Validated inputs; ``then`` and ``else_`` share the output dtype.

    Returns
    -------
    jax.Array
        ``select_n(cond, else_, then)`` of the output shape.

    Raises
    ------
    SelectShapeError
        When symbolic dimensions make a broadcast undecidable while tracing.
    """
    out_shape = tuple(plan.out_shape)
    rank = len(out_shape)
    if cond.dtype != np.bool_:
        cond = cond != 0  # DirectML: nonzero is true (one compare, fused by XLA)
    names = ("cond", "then", "else")
    placed = [
        _layout(name, x, aligned, out_shape)
        for name, x, aligned in zip(names, (cond, then, else_), plan.aligned, strict=True)
    ]
    cond = placed[0][0]
    if cond.ndim and all(map(_is_one, cond.shape)):
        cond = lax.squeeze(cond, tuple(range(cond.ndim)))
    if cond.ndim == 0:
        placed = placed[1:]  # select_n takes a 0-d predicate as it is
    sharding = None
    results = []
    for name, (x, dims) in zip(names[3 - len(placed) :], placed, strict=True):
        if x.shape == out_shape:
            results.append(x)
            continue
        _check_dims(name, x, dims, out_shape)
        if sharding is None:
            sharding = _explicit_sharding(placed, rank) or False
        if sharding is False:
            results.append(lax.broadcast_in_dim(x, out_shape, dims))
        else:
            results.append(lax.broadcast_in_dim(x, out_shape, dims, out_sharding=sharding))
    if len(results) == 2:
        results.insert(0, cond)
    cond, then, else_ = results
    if then.dtype in _SELECT_ON_BITS:
        return _select_bits(cond, else_, then)
    return lax.select_n(cond, else_, then)


# XLA's CPU backend computes select on these dtypes through float32, which
# canonicalizes NaN payloads (found by selecting every bit pattern); select on
# their bit patterns instead. The bitcasts are free in XLA, and a custom JVP
# keeps the derivative of select_n. float16, the fnuz/fn float8 types (one NaN
# each) and float8_e8m0fnu, float4_e2m1fn come through select_n unchanged.
_SELECT_ON_BITS = frozenset(
    np.dtype(getattr(jnp, name))
    for name in ("bfloat16", "float8_e3m4", "float8_e4m3", "float8_e5m2")
    if hasattr(jnp, name)
)
_UNSIGNED: dict[int, Any] = {1: np.uint8, 2: np.uint16}


@jax.custom_jvp
def _select_bits(which: Any, on_false: Any, on_true: Any) -> Any:
    bits = _UNSIGNED[on_true.dtype.itemsize]
    chosen = lax.select_n(
        which,
        lax.bitcast_convert_type(on_false, bits),
        lax.bitcast_convert_type(on_true, bits),
    )
    return lax.bitcast_convert_type(chosen, on_true.dtype)


@_select_bits.defjvp
def _select_bits_jvp(primals: Any, tangents: Any) -> tuple[Any, Any]:
    which, on_false, on_true = primals
    _, false_dot, true_dot = tangents
    return _select_bits(which, on_false, on_true), lax.select_n(which, false_dot, true_dot)


def _compiled(plan: SelectPlan) -> Callable[..., Any]:
    """A ``jax.jit`` function running one validated plan (general path, concrete inputs)."""

    def arrayselect_select(cond: Any, then: Any, else_: Any) -> Any:
        return emit(plan, cond, then, else_)

    return cast(Callable[..., Any], jax.jit(arrayselect_select))


# A Python float (or complex) can go into a compiled function as it is (a
# weak-typed argument: cheaper than a host array) when converting it inside is a
# single correct rounding of the exact value: to float32/complex64 always (JAX
# rounds the Python float on the host), to float64/complex128 when x64 is on.
# An int can when it fits int32, the narrowest weak int. Everything else (float16,
# bfloat16, float8, big ints, ...) goes as a NumPy scalar converted on the host.
_DIRECT_ALWAYS = frozenset(np.dtype(t) for t in ("float32", "complex64"))
_DIRECT_X64 = frozenset(np.dtype(t) for t in ("float64", "complex128"))
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
#: Python scalars that stand for a scalar operand while a fast-path function is traced.
_PLACEHOLDERS: dict[type, bool | int | float | complex] = {
    bool: False,
    int: 0,
    float: 0.0,
    complex: 0j,
}


def _host_scalar(value: bool | int | float | complex, dtype: Any) -> Any:
    """A NumPy 0-d array of ``dtype`` holding ``value`` rounded once, correctly.

    NumPy and ml_dtypes convert a Python int through float64, which rounds a
    big int twice on its way to a narrower float (and ml_dtypes refuses ints
    beyond int64); round it to the target precision in integer arithmetic first.
    """
    if type(value) is int and abs(value) > 2**53 and np.dtype(dtype).kind not in "biu":
        mantissa = int(_finfo(dtype).nmant) + 1
        magnitude = abs(value)
        shift = magnitude.bit_length() - mantissa
        if shift > 0:
            quotient, remainder = divmod(magnitude, 1 << shift)
            half = 1 << (shift - 1)
            if remainder > half or (remainder == half and quotient & 1):
                quotient += 1
            magnitude = quotient << shift
        value = float(magnitude if value > 0 else -magnitude)  # exact now
    return np.asarray(value, dtype=dtype)


def _identity(value: Any) -> Any:
    return value


# Which dtype kinds a Python scalar of each type may take (as in _validate).
_SCALAR_FITS: dict[type, frozenset[str]] = {
    bool: frozenset({"bool"}),
    int: frozenset({"int", "uint", "float", "complex"}),
    float: frozenset({"float", "complex"}),
    complex: frozenset({"complex"}),
}

_force_portable = _registry._force_portable
_backends = _registry._backends

# Which operands of an eager call are Python scalars: None (an array) or the type.
_Kinds = tuple[type | None, type | None]
_ARRAYS: _Kinds = (None, None)


class JaxBackend(Backend):
    """Select for JAX arrays and tracers: ``broadcast_in_dim``/``squeeze`` and ``select_n``.

    Parameters
    ----------
    cache_size : int, optional
        Bound of the eager caches: compiled functions kept, and executables
        compiled per function before it is dropped and started afresh.
    """

    name = "jax"
    supports_out = False
    out_refusal = (
        "JAX arrays are immutable, so the result cannot be written into an existing array; "
        "use the returned array (x.at[...].set(...) is JAX's functional update)"
    )

    def __init__(self, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        self._kinds: dict[Any, DtypeKind | None] = {}
        self._int_ranges: dict[Any, tuple[int, int]] = {}
        self._float_maxes: dict[Any, float] = {}
        # Fast path: one jitted function per (options, scalar kinds); jax.jit keys
        # its executables by shapes, dtypes, weak types and shardings, and each
        # trace validates (as select_general does) before emitting.
        self._fns = _LRU(cache_size)
        self._fn_data = self._fns._data
        self._traces: dict[Hashable, int] = {}
        # General path on concrete inputs: one jitted function per plan.
        self._plan_fns = _LRU(cache_size)
        self._converters: dict[tuple[str, type, Any], Callable[[Any], Any]] = {}
        self._cache_size = cache_size
        self._trace_count = 0

    # -- queries used by the core's validation ---------------------------------

    def dtype_kind(self, dtype: Any) -> DtypeKind | None:
        try:
            return self._kinds[dtype]
        except KeyError:
            pass
        except TypeError:  # unhashable: not a dtype
            return None
        kind: DtypeKind | None = None
        for category, name in _KINDS:
            try:
                if jnp.issubdtype(dtype, category):
                    kind = name
                    break
            except (TypeError, ValueError):
                break
        if len(self._kinds) < 256:
            self._kinds[dtype] = kind
        return kind

    def shape(self, x: Any) -> Shape:
        # Symbolic dims (jax.export) are kept: the shape core compares them soundly.
        return cast(Shape, tuple(x.shape))

    def int_range(self, dtype: Any) -> tuple[int, int]:
        found = self._int_ranges.get(dtype)
        if found is None:
            info = _iinfo(dtype)
            found = self._int_ranges[dtype] = (int(info.min), int(info.max))
        return found

    def float_max(self, dtype: Any) -> float:
        found = self._float_maxes.get(dtype)
        if found is None:
            found = self._float_maxes[dtype] = float(_finfo(dtype).max)
        return found

    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        """A 0-d constant for a Python scalar; never placed next to (or made from) ``like``.

        With a dtype it is a NumPy array converted once from the exact Python
        value (weak-typed like ``like`` when that is weak, as ``jnp.where``
        does); without one it is JAX's weak-typed default for the scalar.
        """
        if dtype is None:
            try:
                return jnp.asarray(value)
            except OverflowError as exc:
                raise ScalarOverflowError(
                    f"Python int {value!r} does not fit JAX's default integer dtype ({exc})"
                ) from None
        constant = _host_scalar(value, dtype)
        if getattr(like, "weak_type", False):
            return lax.full_like(like, constant, shape=())
        return constant

    def check_devices(self, named: list[tuple[str, Any]]) -> None:
        first: tuple[str, Any] | None = None
        for name, x in named:
            # Tracers, NumPy arrays and uncommitted arrays go wherever the others are.
            if isinstance(x, _Tracer) or not isinstance(x, jax.Array) or not x.committed:
                continue
            devices = x.sharding.device_set
            if first is None:
                first = (name, devices)
            elif devices != first[1]:
                raise SelectValueError(
                    f"inputs must be on the same devices, but {first[0]} is on "
                    f"{_device_text(first[1])} and {name} is on {_device_text(devices)}; move "
                    "them explicitly with jax.device_put (no implicit transfer happens)"
                )

    # -- the general path --------------------------------------------------------

    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        if isinstance(cond, _Tracer) or isinstance(then, _Tracer) or isinstance(else_, _Tracer):
            return emit(plan, cond, then, else_)  # inside a trace: just the ops
        fn: Callable[..., Any] | None = self._plan_fns.get(plan)
        if fn is None:
            fn = _compiled(plan)
            self._plan_fns.put(plan, fn)
        return fn(cond, then, else_)

    # -- the eager fast path -------------------------------------------------------

    def fast(
        self,
        cond: Any,
        then: Any,
        else_: Any,
        auto_broadcast: Any,
        axis: Any,
        cond_broadcast: Any,
        out: Any,
    ) -> Any:
        """The eager fast path for a concrete JAX ``cond`` (see ``register_fast_path``).

        Returns
        -------
        jax.Array or NotImplemented
            The result, or ``NotImplemented`` for calls the general path must
            take (``out=``, tracers, NumPy arrays, odd option types, a forced
            portable backend, ...).
        """
        if (
            out is not None
            or type(axis) is not int
            or type(auto_broadcast) is not str
            or type(cond_broadcast) is not str
            or _force_portable.get()
            or _backends.get(_REGISTRY_KEY) is not self
        ):
            return NotImplemented
        then_type = type(then)
        else_type = type(else_)
        if then_type is _ArrayImpl and else_type is _ArrayImpl:
            kinds = _ARRAYS
            t, e = then, else_
        else:
            try:
                prepared = self._prepare_scalars(then, else_, then_type, else_type)
            except SelectError:
                prepared = None  # the general path raises it, after the checks it makes first
            if prepared is None:
                return NotImplemented
            kinds, t, e = prepared
        key = (auto_broadcast, axis, cond_broadcast, kinds)
        fn = self._fn_data.get(key)
        if fn is None:
            fn = self._new_fn(key)
        try:
            return fn(cond, t, e)
        except SelectError:
            raise  # raised while tracing, by the same checks as the general path
        except Exception:
            # E.g. arrays committed to different devices: the general path raises
            # the documented error (or JAX's own, if it is not about the inputs).
            return select_general(
                cond,
                then,
                else_,
                auto_broadcast=auto_broadcast,
                axis=axis,
                cond_broadcast=cond_broadcast,
            )

    def _prepare_scalars(
        self, then: Any, else_: Any, then_type: type, else_type: type
    ) -> tuple[_Kinds, Any, Any] | None:
        """Check Python-scalar operands; say how they go into the compiled function.

        ``None`` sends the call to the general path (NumPy arrays, tracers,
        weak-typed partners, non-arrays).
        """
        then_scalar = then_type in _SCALAR_TYPES
        else_scalar = else_type in _SCALAR_TYPES
        if then_scalar and else_scalar:
            # Two scalars: JAX's weak-typed defaults, as jnp.asarray gives them.
            return (then_type, else_type), then, else_
        if then_scalar and else_type is _ArrayImpl and not else_.weak_type:
            return (then_type, None), self._scalar_arg("then", then, else_.dtype), else_
        if else_scalar and then_type is _ArrayImpl and not then.weak_type:
            return (None, else_type), then, self._scalar_arg("else", else_, then.dtype)
        return None

    def _scalar_arg(self, name: str, value: Any, dtype: Any) -> Any:
        """``value`` checked against ``dtype``; as it is where exact, else a NumPy scalar."""
        key = (name, type(value), dtype)
        convert = self._converters.get(key)
        if convert is None:
            convert = self._converter(name, type(value), dtype)
            if len(self._converters) < 1024:
                self._converters[key] = convert
        return convert(value)

    def _converter(self, name: str, scalar_type: type, dtype: Any) -> Callable[[Any], Any]:
        """How a Python scalar of ``scalar_type`` goes into a function for ``dtype``.

        A quick range test accepts what :func:`_scalar_fitting` accepts; anything
        else goes through it, so that the same error is raised.
        """
        kind = self.dtype_kind(dtype)
        if kind is None:
            return _identity  # the trace raises the general path's error
        other = "else" if name == "then" else "then"

        def refuse(value: Any) -> None:
            _scalar_fitting(self, name, value, dtype, kind, other)

        if kind not in _SCALAR_FITS[scalar_type]:
            return refuse  # always raises, naming the value

        if scalar_type is bool:
            return _identity
        x64_target = dtype in _DIRECT_X64
        direct = kind in ("int", "uint") or dtype in _DIRECT_ALWAYS
        low: float
        high: float
        if kind in ("int", "uint"):
            low, high = self.int_range(dtype)
        else:
            limit = self.float_max(dtype)
            low, high = -limit, limit

        if scalar_type is int:

            def convert_int(value: Any) -> Any:
                if not low <= value <= high:
                    refuse(value)
                if _INT32_MIN <= value <= _INT32_MAX and (direct or (x64_target and _x64())):
                    return value
                return _host_scalar(value, dtype)

            return convert_int

        def convert_inexact(value: Any) -> Any:
            if scalar_type is complex:
                if not (low <= value.real <= high and low <= value.imag <= high):
                    refuse(value)
            elif not low <= value <= high:
                refuse(value)  # raises unless it is inf or nan
            if direct or (x64_target and _x64()):
                return value
            return _host_scalar(value, dtype)

        return convert_inexact

    def _new_fn(self, key: tuple[str, int, str, _Kinds]) -> Callable[..., Any]:
        auto_broadcast, axis, cond_broadcast, (then_kind, else_kind) = key

        def arrayselect_select(cond: Any, then: Any, else_: Any) -> Any:
            self._trace_count += 1
            traces = self._traces[key] = self._traces.get(key, 0) + 1
            if traces >= self._cache_size:
                # Bound the executables this function holds: start afresh next call.
                self._fns.pop(key)
                self._traces.pop(key, None)
            # Validate as select_general does, a Python scalar standing for each
            # scalar operand, so that errors are identical.
            axis_int = check_options(auto_broadcast, axis, cond_broadcast)
            check_cond_dtype(self, cond)
            then_v, else_v = materialize_scalars(
                self,
                cond,
                then if then_kind is None else _PLACEHOLDERS[then_kind],
                else_ if else_kind is None else _PLACEHOLDERS[else_kind],
            )
            plan = make_plan(
                self.shape(cond),
                self.shape(then_v),
                self.shape(else_v),
                auto_broadcast,
                axis_int,
                cond_broadcast,
            )
            if then_kind is not None and else_kind is None and then.dtype != then_v.dtype:
                then = lax.convert_element_type(then, then_v.dtype)
            if else_kind is not None and then_kind is None and else_.dtype != else_v.dtype:
                else_ = lax.convert_element_type(else_, else_v.dtype)
            return emit(plan, cond, then, else_)

        fn = cast(Callable[..., Any], jax.jit(arrayselect_select))
        self._fns.put(key, fn)
        return fn

    def cache_info(self) -> CacheInfo:
        """Traces and size of the eager caches.

        Returns
        -------
        CacheInfo
            ``traces``: fast-path functions traced (each trace is followed by
            one compilation); ``functions``: fast-path functions kept;
            ``executables``: executables those functions hold; ``maxsize``.
        """
        executables = sum(
            getattr(fn, "_cache_size", lambda: 0)() for fn in list(self._fn_data.values())
        )
        return CacheInfo(self._trace_count, len(self._fns), executables, self._cache_size)

    def cache_clear(self) -> None:
        """Drop every cached compiled function and reset the counters."""
        self._fns.clear()
        self._plan_fns.clear()
        self._traces.clear()
        self._trace_count = 0


def _device_text(devices: Any) -> str:
    listed = sorted(devices, key=lambda d: d.id)
    return ", ".join(str(d) for d in listed) if len(listed) > 1 else str(listed[0])


def create(xp: ModuleType) -> JaxBackend:
    """Entry-point factory: the JAX backend, with its eager fast path registered."""
    backend = JaxBackend()
    register_fast_path(_ArrayImpl, backend.fast)
    return backend
