"""``where``: the Python Array API standard's ``where``, on Select's backends.

``where(condition, x1, x2)`` is what ``np.where``, ``torch.where`` and
``jnp.where`` compute: the three broadcast together, and ``x1``/``x2`` are
promoted to one dtype. The promotion is the array library's own
(``result_type`` of its Array API namespace), so that the result is the
library's ``where``'s bit for bit: the standard's rules where it has them,
and where it leaves mixed kinds (an integer array with a float array or a
Python float) to the library, the library's. The operands are then made
equal in dtype (one cast of an array whose dtype differs; a Python scalar
takes the result dtype) and handed to :func:`arrayselect.select` with
``cond_broadcast="multidirectional"``, so every backend and fast path of
``select`` serves ``where`` too.

The dtype decisions depend only on the operands' types, dtypes, (for the
libraries whose promotion looks at it) whether an array is 0-d or weakly
typed, whether :func:`~arrayselect.force_portable` is on, and the library's
dtype mode (JAX's 64-bit mode), so they are kept in a small bounded cache
keyed by all of these: a call whose operands
already agree (a Python scalar of the array's kind included) pays a
dictionary lookup and no pass over the data.

Such a call (a boolean ``condition``; values of one dtype, or an array and a
Python scalar of its kind) has nothing to promote, so once the dtypes' kinds are
known it goes straight to ``select``'s fast path, as ``select`` itself would;
anything that path does not serve, or refuses, takes the whole way, whose errors
name ``where``'s arguments.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Final, cast

from arrayselect._base import settings as _settings
from arrayselect._base.caches import BoundedCache
from arrayselect._base.errors import (
    ScalarOverflowError,
    SelectError,
    SelectShapeError,
    SelectTypeError,
)
from arrayselect._dispatch import registry as _registry
from arrayselect._dispatch.registry import resolve
from arrayselect._operations.select import record_kinds, select, select_multidirectional
from arrayselect._rules.shapes import broadcast_together
from arrayselect._validation.checks import (
    PYTHON_SCALARS,
    SCALAR_ZEROS,
    check_devices,
    scalar_fits_kind,
    value_kind,
)
from arrayselect._validation.decision import Decision, ScalarPlan

__all__ = ["where"]

_NAMES: Final = ("condition", "x1", "x2")


# What where does with operands of one kind, decided once per kind: a Decision whose
# ``operands`` say, per value, ``True`` (an array of another dtype: cast once), a
# ScalarPlan (a Python scalar of a lower kind than the result's, a bool beside a
# numeric array or the lower of two scalars: lifted to the number it equals, the kind
# select takes there) or ``None``. Python scalars go to select as they are: it
# converts them as the library does and checks their range; a value out of range is
# converted by the library instead, as the library's own where would (inf for a float
# too large for float16, say).
_PROMOTIONS = BoundedCache[Hashable, Decision]("where.promotions", 1024)
_promotions = _PROMOTIONS.data  # read on every call
_tracing_checks = _registry.tracing_checks
_portable_forced = _settings.portable_forced


# Per array type: whether its arrays may carry a weak type (JAX), filled as types
# arrive. A JAX tracer has no ``weak_type`` on its class: it forwards the attribute
# to its abstract value through ``__getattr__``, so a type with a ``__getattr__`` is
# asked on every array (a key without the weak type once mixed up ``jnp.int32(300)``
# with a weak ``300`` under ``jax.jit``).
_WEAK_TYPED = BoundedCache[type, bool]("where.weak_typed", 256)


def _operand_key(x: Any) -> Hashable:
    """What the promotion of ``x`` may depend on (never its values): its type, dtype,
    whether it is 0-d (PyTorch promotes 0-d tensors like scalars) and its weak type
    (JAX promotes a weakly typed array like a Python scalar).
    """
    t = type(x)
    if t in PYTHON_SCALARS:
        return cast(Hashable, t)
    weak = _WEAK_TYPED.data.get(t)
    if weak is None:
        weak = _WEAK_TYPED.put(t, hasattr(t, "weak_type") or hasattr(t, "__getattr__"))
    return (t, x.dtype, x.ndim == 0, weak and bool(getattr(x, "weak_type", False)))


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """Elements of ``x1`` where ``condition`` is true, of ``x2`` elsewhere (Array API).

    The Python Array API standard's ``where`` (2024.12): ``condition``, ``x1``
    and ``x2`` broadcast together, and ``x1``/``x2`` are promoted to one dtype.
    Unlike :func:`select`, which never promotes and broadcasts ``cond`` one way,
    ``where`` is a drop-in for ``np.where``, ``torch.where`` and ``jnp.where``
    with three arguments, on the same backends and fast paths as ``select``.

    Parameters
    ----------
    condition : array
        A boolean array.
    x1, x2 : array or Python scalar
        Values taken where ``condition`` is true / false. Promoted by the array
        library's own rules (its ``result_type``):
        the standard's type promotion, and the library's choice where the
        standard leaves mixed kinds undefined (NumPy and JAX make an ``int8``
        array and a Python float ``float64`` with 64-bit types, PyTorch its
        default float dtype). A Python scalar takes the result dtype; two Python
        scalars (which the standard leaves out) give the library's default dtype
        of the higher kind, as its own ``where`` does.

    Returns
    -------
    array
        The result, in the inputs' namespace and on their device.

    Raises
    ------
    SelectTypeError
        For a ``condition`` that is not a boolean array, operands that are not
        arrays or Python scalars, or dtypes the library does not promote.
    SelectShapeError
        If the three shapes cannot be broadcast together.
    SelectValueError
        For inputs on different devices.

    Examples
    --------
    >>> import numpy as np, arrayselect as asel
    >>> c = np.array([True, False, True])
    >>> asel.where(c, np.array([1, 2, 3], np.int8), 0.5)
    array([1. , 0.5, 3. ])
    >>> asel.where(c[:, None], np.arange(3), -1)
    array([[ 0,  1,  2],
           [-1, -1, -1],
           [ 0,  1,  2]])
    """
    # No promotion to do (the values share a dtype, or a Python scalar fits the array's
    # kind): where is select with multidirectional broadcasting, so the call goes
    # straight to select's fast path. Anything else, and any error (raised in select's
    # words), goes the whole way below.
    result = select_multidirectional(condition, x1, x2, None, _no_promotion)
    if result is not NotImplemented:
        return result
    tracing = _tracing_checks.get(type(condition))
    if tracing is not None and tracing():
        # A compiler traces: no memo (the trace would be guarded on what it read).
        key: Hashable | None = None
        promotion: Decision | None = None
    else:
        try:
            key = (
                type(condition),
                condition.dtype,
                _operand_key(x1),
                _operand_key(x2),
                _portable_forced(),  # the portable backend promotes with the namespace's rules
            )
            promotion = _promotions[key]  # not .get(): see arrayselect._base.caches
        except KeyError:
            promotion = None
        except AttributeError:  # not an array: _decide raises the error
            key = promotion = None
    # A decision holds in the dtype mode it was made in (JAX promotes to 32 bits without x64).
    if promotion is None or (
        promotion.dtype_mode is not None and promotion.dtype_mode != promotion.backend.dtype_mode()
    ):
        promotion = _decide(key, condition, x1, x2)
    backend, dtype, (plan1, plan2) = promotion.backend, promotion.dtype, promotion.operands
    if plan1 is True:
        x1 = backend.astype(x1, dtype)
    elif plan1 is not None:
        x1 = plan1.lift(x1)
    if plan2 is True:
        x2 = backend.astype(x2, dtype)
    elif plan2 is not None:
        x2 = plan2.lift(x2)
    try:
        return select(condition, x1, x2, cond_broadcast="multidirectional")
    except ScalarOverflowError:
        # Out of select's range: the library's own conversion decides, as in its where.
        if type(x1) in PYTHON_SCALARS:
            x1 = backend.library_scalar(x1, dtype, x2)
        else:
            x2 = backend.library_scalar(x2, dtype, x1)
        return select(condition, x1, x2, cond_broadcast="multidirectional")
    except SelectError as exc:
        _explain(condition, x1, x2, shapes=isinstance(exc, SelectShapeError))
        raise


def _no_promotion(x1: Any, x2: Any, array_type: Any, kinds: dict[Any, Any]) -> bool:
    """Whether ``where``'s promotion leaves both values as they are: arrays of one
    type and dtype, or an array and a Python scalar of a kind its dtype takes
    (promotion is by type: the scalar takes the array's dtype, as in select).

    Raises ``KeyError`` for a dtype whose kind :func:`_decide` has not recorded yet.
    """
    if type(x1) is array_type:
        if type(x2) is array_type:
            return bool(x1.dtype == x2.dtype)
        return type(x2) in PYTHON_SCALARS and scalar_fits_kind(
            type(x2), kinds[array_type, x1.dtype]
        )
    return (
        type(x2) is array_type
        and type(x1) in PYTHON_SCALARS
        and scalar_fits_kind(type(x1), kinds[array_type, x2.dtype])
    )


def _decide(key: Hashable | None, condition: Any, x1: Any, x2: Any) -> Decision:
    """Check what ``where`` requires and decide the promotion with the library's own
    ``result_type``; remember it for operands of the same kind.
    """
    backend, _ = resolve(condition, x1, x2, None, _NAMES)  # non-arrays, mixed libraries
    kind = backend.dtype_kind(condition.dtype)
    if kind != "bool":
        hint = (
            " (arrayselect.select takes integer masks: nonzero is true)"
            if kind in ("int", "uint")
            else ""
        )
        raise SelectTypeError(f"condition must have a boolean dtype, got {condition.dtype}{hint}")
    scalar1, scalar2 = type(x1) in PYTHON_SCALARS, type(x2) in PYTHON_SCALARS
    if scalar1 and scalar2:
        # The standard leaves two scalars out; NumPy, PyTorch and JAX take them and
        # give the library's default dtype of the higher kind (bool < int < float <
        # complex), which select gives two scalars of that kind.
        higher = max(type(x1), type(x2), key=PYTHON_SCALARS.index)
        lift = ScalarPlan(higher, None)  # 1 beside 2.5 is 1.0
        return Decision.of(
            backend,
            backend.default_dtype(higher, condition),
            None,  # where's decision is the dtype: select decides the shape
            (None if type(x1) is higher else lift, None if type(x2) is higher else lift),
        )
    try:
        # Promotion by type, never by value (the decision is cached by type): a
        # scalar is asked about as the zero of its type; its own value is checked
        # when the call runs.
        dtype = backend.result_type(SCALAR_ZEROS.get(type(x1), x1), SCALAR_ZEROS.get(type(x2), x2))
    except Exception as exc:  # the library does not promote these
        described = [
            f"Python {type(x).__name__}" if type(x) in PYTHON_SCALARS else f"dtype {x.dtype}"
            for x in (x1, x2)
        ]
        raise SelectTypeError(
            f"x1 ({described[0]}) and x2 ({described[1]}) cannot be promoted to one dtype "
            f"by {backend.name}: {type(exc).__name__}: {exc}"
        ) from None
    for name, x in (("x1", x1), ("x2", x2)):
        if type(x) not in PYTHON_SCALARS:
            value_kind(backend, name, x.dtype)
    result_kind = value_kind(backend, "the result", dtype)
    plans: list[ScalarPlan | bool | None] = []
    for x, scalar in ((x1, scalar1), (x2, scalar2)):
        if scalar:
            plans.append(None if scalar_fits_kind(type(x), result_kind) else _LIFT_TO_INT)
        else:
            plans.append(True if x.dtype != dtype else None)
    promotion = Decision.of(backend, dtype, None, plans)
    if key is not None:
        # No lock (tracing compilers follow plain dictionary operations): a lost
        # race only costs deciding again. Trimmed after inserting, so that each
        # thread leaves it within its bound, with or without a GIL.
        _PROMOTIONS.put(key, promotion)
        record_kinds(backend, [x for x in (condition, x1, x2) if type(x) not in PYTHON_SCALARS])
    return promotion


# A Python scalar of a kind the result's dtype does not take beside an array (a bool
# beside a numeric array) is passed on as the int it equals.
_LIFT_TO_INT: Final = ScalarPlan(int, None)


def _explain(condition: Any, x1: Any, x2: Any, *, shapes: bool) -> None:
    """Raise ``select``'s error again in ``where``'s words (its argument names, the
    broadcast of all three), where those would mislead; else return.
    """
    backend, named = resolve(condition, x1, x2, None, _NAMES)
    if shapes:  # x1 with x2 first, then condition: the order the message reads best in
        order = sorted(named, key=lambda pair: _NAMES[1:].count(pair[0]) == 0)
        broadcast_together(
            [(name, backend.shape(x)) for name, x in order],
            "where broadcasts condition, x1 and x2 together",
        )
    check_devices(backend, named)
