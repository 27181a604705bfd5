"""The NumPy backend's fast path: the core's fast-path protocol, kept in C.

Every call whose ``cond`` is exactly an ``np.ndarray`` goes to the compiled
``fast_select`` first (see the C source). It keys a cache on the call's
signature exactly as :class:`arrayselect.plugin.SignatureCache` does and holds,
per signature, what the core's validation decided (the plan, the output dtype,
a scalar operand's :class:`~arrayselect._validation.checks.ScalarRange`). On a miss it calls
:func:`_miss` here: the core validates (raising the general path's errors), the
backend runs, and the decision is handed to the C cache. On a hit C re-checks
only what depends on values, with what the core handed over: the scalar range,
and ``out``'s memory. For ``out`` C keeps, per signature, the strides of an
``out`` that :func:`arrayselect.plugin.check_out_layout` accepted: that check
depends only on ``out``'s shape, item size, strides and writeable flag (what
``NumpyBackend.out_layout`` reports), the signature fixes the first two, so a
writeable ``out`` with the same strides gets the same verdict without the call;
any other ``out`` is checked by the core again (the proof is written in
``sk_fast.c``). No rule is written here or in C.

In a build without the kernel the backend's fast path is the core's
:class:`~arrayselect.plugin.SignatureCache` instead (see the backend).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from arrayselect.plugin import FastPath, check_out_layout, select_positional, validate

from ..shared.kernel import _k

__all__ = ["clear_cache", "fast_path"]


def _range(rng: Any) -> tuple[Any, Any, bool] | None:
    return None if rng is None else (rng.low, rng.high, rng.as_float)


def _make_miss(backend: Any) -> Callable[..., Any]:
    def miss(
        cond: Any, then: Any, else_: Any, auto_broadcast: Any, axis: Any, cb: Any, out: Any
    ) -> Any:
        """Validate and run; hand what the core decided to the C cache."""
        served_by, decision, then_v, else_v = validate(
            cond, then, else_, auto_broadcast, axis, cb, out
        )
        plan = decision.plan
        assert plan is not None  # select's decisions hold their plan
        result = served_by.select(cond, then_v, else_v, plan, out)
        # Conds of odd item sizes are converted by the backend: keep them on this path.
        if served_by is backend and cond.itemsize in (1, 2, 4, 8):
            rng = decision.then_range or decision.else_range
            _k.remember(
                cond, then, else_, auto_broadcast, axis, cb, out,
                plan.out_shape, *plan.dims, decision.dtype, _range(rng),
            )  # fmt: skip
        return result

    return miss


def fast_path(backend: Any, memory_layout: bool) -> FastPath:
    """The compiled fast path for ``np.ndarray`` conds, serving ``backend``.

    ``memory_layout`` says whether ``backend``'s ``shape`` and ``out_layout`` report
    ``out``'s own shape, writeable flag, strides and item size, which C reads
    directly: only then may C cache ``check_out``'s verdict.
    """
    check_out = functools.partial(check_out_layout, backend)
    _k.configure(_make_miss(backend), select_positional, check_out, memory_layout)
    return FastPath((np.ndarray,), _k.fast_select)


def clear_cache() -> None:
    """Forget every cached decision (the next call of each kind is validated again)."""
    _k.clear_cache()
