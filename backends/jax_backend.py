"""The JAX backend (CPU, GPU, TPU): squeezes and broadcasts, then one ``lax.select_n``.

Inside a trace (``jax.jit``, ``grad``, ``vmap``, ``scan``, ``checkpoint``,
``jax.export``, ...) :meth:`JaxBackend.select` emits only ``squeeze`` and
``broadcast_in_dim`` for the inputs whose shapes differ from the output's (the
plan's :attr:`~arrayselect.plugin.SelectPlan.dims` are ``broadcast_in_dim``'s
dimensions), an ``ne`` for an integer ``cond``, and one ``select_n``, so
transformations treat Select exactly like ``lax.select``. ``then`` and ``else``
are never converted. Validation reads static shapes and dtypes only, so it works
on tracers and on symbolic (``jax.export``) shapes.

Eager calls on concrete arrays take the core's fast path
(:class:`~arrayselect.plugin.SignatureCache`): the first call of a signature is
validated by the core, later ones re-check only Python scalars' values and
devices. Each plan runs as a ``jax.jit``-compiled function kept in a bounded cache
(:class:`~arrayselect.plugin.BoundedCache`, the core's one cache type). Eager
``apply_where`` compiles its double where too, from the second call with the same
functions on (:meth:`JaxBackend._fused_apply_where`).
"""

from __future__ import annotations

import functools
import operator
import warnings
from collections.abc import Callable, Hashable, Sequence
from types import ModuleType
from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from arrayselect.plugin import (
    Backend,
    BoundedCache,
    Decision,
    DtypeKind,
    FastPath,
    SelectPlan,
    Shape,
    SignatureCache,
    errors,
    generic,
    same_dim,
)

from .shared import jax_wider_dtypes_hint, jax_x64_enabled, scalar_key

__all__ = ["DEFAULT_CACHE_SIZE", "CacheInfo", "JaxBackend", "create", "emit", "x64_enabled"]

#: Default number of compiled eager Select functions (and of cached signatures) kept.
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

# Typed handles on untyped JAX functions (mypy --strict).
_iinfo: Callable[[Any], Any] = jnp.iinfo
_finfo: Callable[[Any], Any] = jnp.finfo
_PartitionSpec: Callable[..., Any] = jax.sharding.PartitionSpec

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
        Times a plan's function was traced (and then compiled): cache misses.
    functions
        Compiled plan functions kept.
    executables
        Compiled executables those functions hold (one per dtypes, weak types
        and shardings seen with the plan).
    maxsize
        The bound of the cache.
    """

    traces: int
    functions: int
    executables: int
    maxsize: int


def _is_one(d: Any) -> bool:
    return same_dim(d, 1) is True


def _inconclusive(name: str, shape: Any, out_shape: Any, detail: str) -> errors.SelectShapeError:
    return errors.SelectShapeError(
        f"{name} shape {tuple(shape)} cannot be broadcast onto the output shape "
        f"{tuple(out_shape)} when tracing with JAX: {detail}; JAX must know while tracing "
        "that each dimension equals the output's or is 1 (for symbolic shapes, use one "
        "symbol for dimensions that are equal, or a constant)"
    )


def _placed(name: str, x: Any, dims: tuple[int, ...], out_shape: Shape) -> Any:
    """``x`` without the trailing dims the plan drops (size 1 in every valid call)."""
    if len(dims) < x.ndim:
        try:
            x = lax.squeeze(x, tuple(range(len(dims), x.ndim)))
        except Exception as exc:  # symbolic sizes JAX cannot prove to be 1
            raise _inconclusive(name, x.shape, out_shape, str(exc)) from None
    return x


def _check_dims(name: str, x: Any, dims: tuple[int, ...], out_shape: Shape) -> None:
    """Each dim must provably equal its output dim or be 1 (only symbolic dims can fail)."""
    for k, d in enumerate(x.shape):
        target = out_shape[dims[k]]
        if same_dim(d, target) is not True and not _is_one(d):
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
        Output shape and where each input's dimensions go, from the core.
    cond, then, else_ : jax.Array, tracer or numpy.ndarray
        Validated inputs; ``then`` and ``else_`` share the output dtype.

    Returns
    -------
    jax.Array
        ``select_n(cond, else_, then)`` of the output shape.

    Raises
    ------
    errors.SelectShapeError
        When symbolic dimensions make a broadcast undecidable while tracing.
    """
    out_shape = tuple(plan.out_shape)
    rank = len(out_shape)
    if cond.dtype != np.bool_:
        cond = cond != 0  # DirectML: nonzero is true (one compare, fused by XLA)
    names = ("cond", "then", "else")
    placed = [
        (_placed(name, x, dims, out_shape), dims)
        for name, x, dims in zip(names, (cond, then, else_), plan.dims, strict=True)
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


#: Whether JAX's 64-bit mode is on in this thread (the flag or a ``jax.enable_x64`` block).
x64_enabled = jax_x64_enabled


class _ModeChanged(Exception):
    """A cached decision met another dtype mode; the general path decides the call."""


def _in_mode(
    fn: Callable[..., Any], mode: Hashable, current: Callable[[], Hashable]
) -> Callable[..., Any]:
    """``fn``, run only while ``current()`` is ``mode``."""

    def run_in_mode(cond: Any, then: Any, else_: Any) -> Any:
        if current() != mode:
            raise _ModeChanged
        return fn(cond, then, else_)

    return run_in_mode


def _compiled(plan: SelectPlan) -> Callable[..., Any]:
    """A ``jax.jit`` function running one validated plan on concrete inputs."""

    def arrayselect_select(cond: Any, then: Any, else_: Any) -> Any:
        return emit(plan, cond, then, else_)

    return cast(Callable[..., Any], jax.jit(arrayselect_select))


class JaxBackend(Backend):
    """Select for JAX arrays and tracers: ``squeeze``/``broadcast_in_dim`` and ``select_n``.

    Parameters
    ----------
    cache_size : int, optional
        Bound of the eager caches: signatures and compiled plan functions kept.
    """

    name = "jax"
    supports_out = False
    out_refusal = (
        "JAX arrays are immutable, so the result cannot be written into an existing array; "
        "use the returned array (x.at[...].set(...) is JAX's functional update)"
    )
    device_hint = "move them explicitly with jax.device_put"

    # The hint names only what this JAX has: jax.enable_x64 (the block) is missing from
    # older releases we support (JAX 0.5 has only jax.experimental.enable_x64).
    wider_dtypes_hint = jax_wider_dtypes_hint()

    def __init__(self, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        self._kinds = BoundedCache[Any, DtypeKind | None]("jax_backend.dtype_kinds", 256)
        self._held = BoundedCache[tuple[Any, bool], Any]("jax_backend.held_dtypes", 256)
        self._int_ranges = BoundedCache[Any, tuple[int, int]]("jax_backend.int_ranges", 256)
        self._float_maxes = BoundedCache[Any, float]("jax_backend.float_maxes", 256)
        self._plan_fns = BoundedCache[SelectPlan, Any]("jax_backend.plan_functions", cache_size)
        # apply_where's compiled double where, per (f1, f2, number of args, fill): made
        # on the second eager call with the same functions (a lambda made anew on each
        # call never compiles), None where f1 or f2 cannot be traced.
        self._fused = BoundedCache[Hashable, _Fused | None](
            "jax_backend.apply_where_functions", 256
        )
        self._fused_seen = BoundedCache[Hashable, bool]("jax_backend.apply_where_seen", 256)
        # A Python scalar's 0-d constant on the default device, per (bits, dtype, x64):
        # a NumPy constant passed to a compiled function is copied to the device on
        # every call, which cost eager calls of 10^3 elements about half their time.
        self._constants = BoundedCache[Hashable, Any]("jax_backend.scalar_constants", 256)
        self._plan_fn_data = self._plan_fns.data
        self._cache_size = cache_size
        self._trace_count = 0
        # jax.jit refuses committed inputs on different devices: on a cached
        # call that failure sends the call to the general path and its error.
        self._fast = SignatureCache(
            self,
            (_ArrayImpl,),
            None,
            prepare=self._prepare,
            devices_checked_by_run=True,
            maxsize=cache_size,
        )

    # -- queries used by the core's validation ---------------------------------

    def dtype_kind(self, dtype: Any) -> DtypeKind | None:
        try:
            return self._kinds.data[dtype]
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
        return self._kinds.put(dtype, kind)

    def held_dtype(self, dtype: Any) -> Any:
        # What JAX makes of a NumPy (or earlier 64-bit) array now: int64 becomes
        # int32 with 64-bit mode off, float128 is refused. Asked of JAX, per mode.
        key = (dtype, x64_enabled())
        try:
            return self._held.data[key]
        except KeyError:
            pass
        except TypeError:  # unhashable: not a dtype
            return None
        try:
            with warnings.catch_warnings(), jax.ensure_compile_time_eval():
                warnings.simplefilter("ignore")  # JAX warns that it truncates
                held: Any = jnp.zeros((), dtype).dtype
        except (TypeError, ValueError):
            held = None
        return self._held.put(key, held)

    def result_type(self, x1: Any, x2: Any) -> Any:
        # JAX's own promotion, for NumPy operands too: what jnp.where gives them
        # (int64 NumPy arrays become int32 while 64-bit mode is off).
        return jnp.result_type(x1, x2)

    def library_scalar(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        if isinstance(like, jax.Array):
            return super().library_scalar(value, dtype, like)
        # Beside a NumPy operand: as jnp.where converts it (JAX refuses an int out of
        # range where NumPy would wrap it around).
        return jnp.where(True, value, jnp.zeros((), dtype))

    def dtype_mode(self) -> Hashable:
        return x64_enabled()

    def int_range(self, dtype: Any) -> tuple[int, int]:
        found = self._int_ranges.data.get(dtype)
        if found is None:
            info = _iinfo(dtype)
            found = self._int_ranges.put(dtype, (int(info.min), int(info.max)))
        return found

    def float_max(self, dtype: Any) -> float:
        found = self._float_maxes.data.get(dtype)
        if found is None:
            found = self._float_maxes.put(dtype, float(_finfo(dtype).max))
        return found

    def default_dtype(self, scalar_type: type, like: Any) -> Any:
        # int64/float64/complex128 with x64 enabled, 32-bit otherwise.
        return jnp.asarray(scalar_type(0)).dtype

    def shape(self, x: Any) -> Shape:
        # Symbolic dims (jax.export) are kept: the shape core compares them soundly.
        return cast(Shape, tuple(x.shape))

    #: The abstract value: shape, dtype, weak type (a weak-typed partner makes a
    #: scalar operand weak too, as jnp.where does) and sharding, in one C-level lookup.
    signature = operator.attrgetter("aval")  # type: ignore[assignment]

    def device_of(self, x: Any) -> Hashable | None:
        if type(x) is _ArrayImpl:  # the usual array: half the time of the checks below
            array: Any = x  # (mypy narrows x to object)
            return cast(Hashable, array.sharding.device_set) if array.committed else None
        # Tracers, NumPy arrays and uncommitted arrays go wherever the others are.
        if isinstance(x, _Tracer) or not isinstance(x, jax.Array) or not x.committed:
            return None
        return cast(Hashable, x.sharding.device_set)

    def device_text(self, device: Hashable) -> str:
        listed = sorted(cast(Any, device), key=lambda d: d.id)
        return ", ".join(str(d) for d in listed) if len(listed) > 1 else str(listed[0])

    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        """A 0-d constant for a Python scalar; never placed next to (or made from) ``like``.

        Converted once from the Python value through NumPy, weak-typed like ``like`` when
        that is weak (as ``jnp.where`` does); else an uncommitted array on the default
        device (JAX moves it to the other operands' device), kept per value's bits and
        dtype, made outside any trace.
        """
        if getattr(like, "weak_type", False):
            return lax.full_like(like, np.asarray(value, dtype=dtype), shape=())
        key = (scalar_key(value), dtype, x64_enabled())
        try:
            return self._constants.data[key]
        except KeyError:
            pass
        with jax.ensure_compile_time_eval():
            constant = jnp.asarray(np.asarray(value, dtype=dtype))
        return self._constants.put(key, constant)

    def default_scalar_array(
        self, value: bool | int | float | complex, dtype: Any, like: Any
    ) -> Any:
        # Weak-typed, as jnp.where types two Python scalars.
        return jnp.asarray(value)

    # -- running -------------------------------------------------------------------

    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        if isinstance(cond, _Tracer) or isinstance(then, _Tracer) or isinstance(else_, _Tracer):
            return emit(plan, cond, then, else_)  # inside a trace: just the ops
        fn = self._plan_fn(plan)
        # A new signature may compile a new executable (one per dtypes, weak types
        # and shardings): bound them by starting the function afresh.
        if getattr(fn, "_cache_size", lambda: 0)() >= self._cache_size:
            self._plan_fn_data.pop(plan, None)
            fn = self._plan_fn(plan)
        return fn(cond, then, else_)

    def _plan_fn(self, plan: SelectPlan) -> Callable[..., Any]:
        fn: Callable[..., Any] | None = self._plan_fn_data.get(plan)
        if fn is None:
            self._trace_count += 1
            fn = _compiled(plan)
            self._plan_fns.put(plan, fn)
        return fn

    def _prepare(self, decision: Decision) -> Callable[..., Any]:
        """The function a cached signature runs: the plan's compiled function, with a
        Python-scalar operand turned into a constant first.
        """
        assert decision.plan is not None  # select's decisions hold their plan
        fn = self._plan_fn(decision.plan)
        if decision.dtype_mode:
            # Validated with 64-bit mode on: its dtypes may be ones JAX narrows once
            # the mode is off. Then the call fails here and the fast path hands it to
            # the general path, which refuses what JAX would narrow. (A decision made
            # with the mode off holds 32-bit dtypes only, which JAX holds in both.)
            fn = _in_mode(fn, decision.dtype_mode, self.dtype_mode)
        dtype = decision.dtype
        scalar_array = self.scalar_array
        if decision.then_range is not None:

            def run_then_scalar(cond: Any, then: Any, else_: Any) -> Any:
                return fn(cond, scalar_array(then, dtype, else_), else_)

            return run_then_scalar
        if decision.else_range is not None:

            def run_else_scalar(cond: Any, then: Any, else_: Any) -> Any:
                return fn(cond, then, scalar_array(else_, dtype, then))

            return run_else_scalar
        return fn  # out= is refused for JAX: cached calls never have one

    def fast_path(self) -> FastPath:
        return self._fast.fast_path()

    def cache_info(self) -> CacheInfo:
        """Traces and size of the eager caches.

        Returns
        -------
        CacheInfo
            ``traces``: plan functions created (each is traced and compiled on
            first use); ``functions``: plan functions kept; ``executables``:
            executables those functions hold; ``maxsize``.
        """
        executables = sum(
            getattr(fn, "_cache_size", lambda: 0)() for fn in list(self._plan_fn_data.values())
        )
        return CacheInfo(self._trace_count, len(self._plan_fns), executables, self._cache_size)

    def cache_clear(self) -> None:
        """Drop every cached signature and compiled function, and reset the counters."""
        self._plan_fns.clear()
        self._fast.clear()
        self._trace_count = 0

    # -- the select family ------------------------------------------------------------

    def promote(self, values: Sequence[Any]) -> Any:
        return jnp.result_type(*values)  # jnp.select's promote_dtypes (weak scalars)

    def broadcast_to(self, x: Any, shape: Shape) -> Any:
        return jnp.broadcast_to(x, shape)

    def select_n(self, which: Any, cases: tuple[Any, ...], shape: Shape, out: Any) -> Any:
        # lax.select_n itself (every transformation); it clamps an index out of range.
        return _select_n(which, *cases, shape=shape)

    def select_cases(
        self, conds: tuple[Any, ...], choices: tuple[Any, ...], default: Any, shape: Shape
    ) -> Any:
        return _select_cases(conds, choices, default)

    def apply_where(
        self,
        cond: Any,
        args: tuple[Any, ...],
        f1: Callable[..., Any],
        f2: Callable[..., Any] | None,
        fill_value: Any,
    ) -> Any:
        # The core's double where on jnp, joined by jnp.where itself (arrayselect.where
        # would validate the two sides again on every eager call).
        if type(cond) is _ArrayImpl and all(type(a) is _ArrayImpl for a in args):
            key, fused = self._fused_apply_where(args, f1, f2, fill_value)
            if fused is not None:
                try:
                    return fused.fn(cond, args, None if fused.scalar_fill else fill_value)
                except errors.SelectCallbackError as exc:
                    if not isinstance(exc.__cause__, jax.errors.JAXTypeError):
                        raise
                    # f1 or f2 reads values (Python control flow): it runs eagerly
                    self._fused.put(key, None)
        return _double_where(self, cond, args, f1, f2, fill_value)

    def _fused_apply_where(
        self,
        args: tuple[Any, ...],
        f1: Callable[..., Any],
        f2: Callable[..., Any] | None,
        fill_value: Any,
    ) -> tuple[Hashable, _Fused | None]:
        """The key of eager calls with these functions, and their compiled double where
        (``None``: not compiled).

        Eager, each of its operations is a dispatch of its own (``ones_like``
        alone costs hundreds of microseconds); compiled, the call is one dispatch, as
        ``jax.jit`` of the idiom is. The key holds the user's functions (the core's
        checked wrappers of them are made anew on each call), the number of args and a
        Python-scalar fill by its type and bits (it is checked and converted while
        tracing, as the eager path does; two nans of other bits, or 0.0 and -0.0,
        differ). It is compiled on the key's second call only, so functions or fills
        made anew on every call run eagerly instead of tracing every time.
        """
        scalar_fill = f2 is None and type(fill_value) in self.PYTHON_SCALARS
        key = (
            generic.user_function(f1),
            None if f2 is None else generic.user_function(f2),
            len(args),
            scalar_key(fill_value) if scalar_fill else f2 is None,
        )
        try:
            return key, self._fused.data[key]
        except KeyError:
            pass
        if key not in self._fused_seen.data:
            self._fused_seen.put(key, True)
            return key, None
        fill = fill_value if scalar_fill else None

        def joined(cond: Any, args: tuple[Any, ...], array_fill: Any) -> Any:
            return _double_where(self, cond, args, f1, f2, fill if scalar_fill else array_fill)

        return key, self._fused.put(key, _Fused(jax.jit(joined), scalar_fill))


class _Fused(NamedTuple):
    """``apply_where``'s double where compiled for one key."""

    fn: Callable[..., Any]
    #: The fill is a Python scalar, a constant of the compiled function.
    scalar_fill: bool


def _double_where(
    backend: JaxBackend,
    cond: Any,
    args: tuple[Any, ...],
    f1: Callable[..., Any],
    f2: Callable[..., Any] | None,
    fill_value: Any,
) -> Any:
    """``apply_where`` as the core's double where on ``jnp``, joined by ``jnp.where``."""
    return jnp.where(cond, *generic.double_where(jnp, backend, cond, args, f1, f2, fill_value))


@functools.partial(jax.jit, static_argnames="shape")
def _select_n(which: Any, *cases: Any, shape: Shape) -> Any:
    """``lax.select_n`` on operands broadcast to ``shape`` (it takes no broadcasting)."""
    return lax.select_n(
        jnp.broadcast_to(which, shape), *(jnp.broadcast_to(c, shape) for c in cases)
    )


@jax.jit
def _select_cases(conds: Any, choices: Any, default: Any) -> Any:
    """``jnp.select``'s answer as a chain of ``jnp.where`` from the last condition to
    the first (conditions made boolean: nonzero is true). The operands have the result
    dtype already, so nothing is promoted. ``jnp.select`` stacks the conditions and takes
    an ``argmax`` over them: more work than the chain, which is what a JAX user writes
    (the ``Idioms`` benchmark's idiom)."""
    result = default
    for cond, choice in zip(reversed(conds), reversed(choices), strict=True):
        result = jnp.where(cond if cond.dtype == jnp.bool_ else cond != 0, choice, result)
    return result


def create(xp: ModuleType) -> JaxBackend:
    """Entry-point factory: the JAX backend."""
    return JaxBackend()
