"""The lean call path for NumPy inputs: exact-type checks and cached plans.

``select`` hands every call whose ``cond`` is exactly an ``np.ndarray`` to the
compiled ``fast_select`` first (see the C source). It accepts only exact types
it knows (``np.ndarray`` operands, Python scalars, ``str``/``int`` options)
and looks the call up in a bounded cache of plans keyed on (shapes, dtypes or
scalar types, mode, axis, cond_broadcast). On a miss it calls :func:`_miss`
here, which runs the general path (:func:`arrayselect._select.select_general`:
full validation, so errors are exactly the usual ones) and stores the plan
that validation produced. On a hit only what depends on values is checked
again (a Python scalar's range, ``out``); a failure goes back to the general
path, which raises. Calls the fast path does not know, ``force_portable`` and
a plugin that replaced the NumPy backend all fall through to the general path.
No shape rule lives here: plans come from :func:`arrayselect._shapes.make_plan`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arrayselect import _registry
from arrayselect._backend import Backend
from arrayselect._select import register_fast_path, select_general
from arrayselect._shapes import make_plan

from . import _select_kernel as _k

__all__ = ["clear_cache", "fast_stats", "install"]

_SCALARS = (bool, int, float, complex)

# A scalar range check as the kernel takes it: None, ("int", low, high) or
# ("float", largest finite value).
_Check = tuple[str, float] | tuple[str, int, int] | None


def _scalar_check(backend: Backend, dtype: np.dtype[Any]) -> _Check:
    kind = backend.dtype_kind(dtype)
    if kind in ("int", "uint"):
        low, high = backend.int_range(dtype)
        return ("int", low, high)
    if kind in ("float", "complex"):
        return ("float", float(backend.float_max(dtype)))
    return None


def _general(
    cond: Any, then: Any, else_: Any, auto_broadcast: Any, axis: Any, cb: Any, out: Any
) -> Any:
    return select_general(
        cond, then, else_, auto_broadcast=auto_broadcast, axis=axis, cond_broadcast=cb, out=out
    )


def _make_miss(backend: Backend) -> Any:
    def miss(
        cond: Any, then: Any, else_: Any, auto_broadcast: Any, axis: Any, cb: Any, out: Any
    ) -> Any:
        """Run the general path; on success, give the kernel the plan to cache."""
        result = _general(cond, then, else_, auto_broadcast, axis, cb, out)
        if cond.itemsize not in (1, 2, 4, 8):
            return result  # the backend converts such conds: keep them on the general path
        then_array = type(then) is np.ndarray
        else_array = type(else_) is np.ndarray
        plan = make_plan(
            cond.shape,
            then.shape if then_array else (),
            else_.shape if else_array else (),
            auto_broadcast,
            axis,
            cb,
        )
        if then_array and else_array:
            dtype, check = then.dtype, None
        else:
            dtype = result.dtype
            check = _scalar_check(backend, dtype)
        _k.remember(
            cond, then, else_, auto_broadcast, axis, cb, plan.out_shape, *plan.aligned, dtype, check
        )
        return result

    return miss


def install(backend: Backend) -> None:
    """Register the compiled fast path for ``np.ndarray`` conds, serving ``backend``.

    Parameters
    ----------
    backend : Backend
        The NumPy backend. The fast path acts only while the registry routes
        NumPy arrays to this very object (``force_portable`` off, no plugin
        replacing it).
    """
    _k.configure(
        backend,
        _registry._backends,
        _registry._force_portable,
        ("numpy", False),
        _make_miss(backend),
        _general,
    )
    register_fast_path(np.ndarray, _k.fast_select)


def clear_cache() -> None:
    """Forget every cached plan (the next call of each kind takes the general path)."""
    _k.clear_cache()


def fast_stats() -> dict[str, int]:
    """Counters of the fast path since import.

    Returns
    -------
    dict
        ``hits`` (calls served from a cached plan) and ``misses`` (calls that
        went through the general path and were then cached).
    """
    stats: dict[str, int] = _k.fast_stats()
    return stats
