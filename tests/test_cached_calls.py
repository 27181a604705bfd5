"""Every cached call gives what the uncached path gives: cold, warm, and with each part
of its key flipped.

One parametrized test for every cache the library keeps: a call of each form runs with
no cache holding anything (every :class:`arrayselect._base.caches.BoundedCache` emptied and
the backend made afresh, so its signature cache and recent-call check are new too), and
that answer (a result's bits, or an error's type and message) is the reference. Then,
from empty caches again, the call runs three times (a miss that fills the caches, then
hits), a call with one part of the key flipped (a value dtype, a shape, the Python
scalar's type, an option, the options as other objects of equal values, ``out``'s
layout, a read-only ``out``) twice, and the first call once more: each must give its
reference.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from xp_helpers import from_numpy, supports_out, to_numpy

import arrayselect as asel
from arrayselect._base import caches as _caches
from arrayselect._dispatch import registry as _registry
from arrayselect._validation.decision import Decision

Call = Callable[[], Any]
FLIPS = [
    "none", "dtype", "shape", "scalar type", "option", "option objects", "out layout",
    "read-only out",
]  # fmt: skip


def _forms(xp: ModuleType, flip: str) -> dict[str, Call | None]:
    """Each form's call, with ``flip`` applied (``None`` where the flip does not apply)."""
    rng = np.random.default_rng(38)
    dtype = np.float64 if flip == "dtype" else np.float32
    shape = (2, 3) if flip == "shape" else (6,)
    scalar: float | int = 2 if flip == "scalar type" else 0.5

    def put(a: np.ndarray) -> Any:
        return from_numpy(xp, a)

    def vals(k: int = 1, kind: Any = dtype) -> list[Any]:
        return [put(rng.standard_normal(shape).astype(kind)) for _ in range(k)]

    c = put(rng.random(shape) < 0.5)
    x, y, z = vals(3)
    small = vals(1, np.int8)[0]
    which3, which2 = put(rng.integers(0, 3, shape)), put(rng.integers(0, 2, shape))
    forms: dict[str, Call | None] = {
        "select": lambda: asel.select(c, x, y),
        "select scalar": lambda: asel.select(c, x, scalar),
        "where scalar": lambda: asel.where(c, scalar, y),
        "where promoted": lambda: asel.where(c, small, y),
        "select_n": lambda: asel.select_n(which3, x, y, z),
        # select's fast path, for a select_n and a where that are a select
        "select_n bool": lambda: asel.select_n(c, x, y),
        "where": lambda: asel.where(c, x, y),
        "select_cases": lambda: asel.select_cases([c, x > 0], [x, y], -scalar),
        "apply_where": lambda: asel.apply_where(c, x, lambda v: v * 2, fill_value=scalar),
    }
    if flip == "option":  # only select has options; same shapes take every mode
        forms = {"select": lambda: asel.select(c, x, y, auto_broadcast="none")}
    if flip == "option objects":  # equal options, not the objects the cache saw
        mode, direction = "".join(["num", "py"]), "".join(["uni", "directional"])
        forms = {
            "select": lambda: asel.select(c, x, y, auto_broadcast=mode, cond_broadcast=direction)
        }
    if supports_out(xp):
        out = put(np.zeros((12, *shape[1:]) if flip == "out layout" else shape, dtype))
        view = out[::2] if flip == "out layout" else out  # other strides
        if flip == "read-only out" and isinstance(view, np.ndarray):
            view.flags.writeable = False
        forms["select out"] = lambda: asel.select(c, x, y, out=view)
        forms["select_n out"] = lambda: asel.select_n(which2, x, y, out=view)
        forms["select_n bool out"] = lambda: asel.select_n(c, x, y, out=view)
    return forms


def _uncached() -> None:
    """No cache holds anything: every BoundedCache emptied, every backend made afresh."""
    _caches.clear_all()
    for library in {key[0] for key in list(_registry._backends)}:
        asel.register_backend(library, None)


def _outcome(call: Call) -> tuple[str, Any]:
    try:
        result = call()
    except asel.SelectError as exc:
        return type(exc).__name__, str(exc)
    got = to_numpy(result)
    return str(got.dtype), (got.shape, got.tobytes())


@pytest.mark.parametrize("flip", FLIPS[1:])
def test_cached_calls_give_the_uncached_answer(xp: ModuleType, flip: str) -> None:
    # Each form's calls draw the same values: the generator is made again per build.
    base, flipped = _forms(xp, "none"), _forms(xp, flip)
    for form, changed in flipped.items():
        call = base[form]
        assert call is not None and changed is not None
        _uncached()
        reference = _outcome(call)
        _uncached()
        reference_flipped = _outcome(changed)
        _uncached()
        # cold (a miss), two hits; the flipped key twice; the first key again
        got = [_outcome(call) for _ in range(3)]
        got += [_outcome(changed) for _ in range(2)] + [_outcome(call)]
        assert got[:3] == [reference] * 3, (form, "warm")
        assert got[3:5] == [reference_flipped] * 2, (form, flip)
        assert got[5] == reference, (form, "back")


def test_every_decision_cache_keeps_one_decision_type(xp: ModuleType) -> None:
    """``select``'s signature caches, the family's memo and ``where``'s promotions all
    keep :class:`arrayselect._validation.decision.Decision`, made by the operation's
    validation: one type of decision, whichever call made it."""
    _uncached()
    for call in _forms(xp, "none").values():
        assert call is not None
        for _ in range(2):
            # array_api_strict promotes no int8 with float32: nothing is decided then
            with contextlib.suppress(asel.SelectError):
                call()
    kept: dict[str, list[Any]] = {}
    for cache in list(_caches._instances):
        if cache.name in ("memo.family_signatures", "where.promotions"):
            kept[cache.name] = list(cache.data.values())
        elif cache.name.endswith(".signatures"):  # SignatureCache: (decision, prepared, ...)
            kept[cache.name] = [entry[0] for entry in cache.data.values()]
    assert kept["memo.family_signatures"] and kept["where.promotions"]
    for name, decisions in kept.items():
        assert all(type(d) is Decision for d in decisions), name
