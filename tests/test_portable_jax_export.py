"""The portable backend on JAX under ``jax.export`` with symbolic shapes.

Symbolic dimensions reach the portable backend as they are (the shape core compares
them); shapes JAX can broadcast export and run, shapes it cannot prove compatible
are a ``SelectShapeError``, as on the native JAX backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import arrayselect as asel

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
export = pytest.importorskip("jax.export")


def _export(shapes: tuple[str, str, str], portable: bool) -> Any:
    scope = export.SymbolicScope()
    specs = [
        jax.ShapeDtypeStruct(export.symbolic_shape(s, scope=scope), dt)
        for s, dt in zip(shapes, (jnp.bool_, jnp.float32, jnp.float32), strict=True)
    ]
    with asel.force_portable(portable):
        return export.export(jax.jit(lambda c, t, e: asel.select(c, t, e)))(*specs)


@pytest.mark.parametrize("portable", [False, True], ids=["jax", "portable"])
@pytest.mark.parametrize(
    "shapes", [("b, 4", "b, 4", "4"), ("b, 4", "b, 1", "4"), ("1", "b", "b"), ("4", "b, 4", "1")]
)
def test_symbolic_shapes_export_and_run(shapes: tuple[str, str, str], portable: bool) -> None:
    exp = _export(shapes, portable)
    rng = np.random.default_rng(0)
    concrete = [tuple(3 if d == "b" else int(d) for d in s.split(", ")) for s in shapes]
    cond = rng.integers(0, 2, concrete[0]).astype(bool)
    then = rng.standard_normal(concrete[1]).astype(np.float32)
    else_ = rng.standard_normal(concrete[2]).astype(np.float32)
    result = np.asarray(exp.call(jnp.asarray(cond), jnp.asarray(then), jnp.asarray(else_)))
    np.testing.assert_array_equal(result, np.where(cond, then, else_))


@pytest.mark.parametrize("portable", [False, True], ids=["jax", "portable"])
@pytest.mark.parametrize("shapes", [("b", "c", "c"), ("b", "2*b", "2*b")])
def test_undecidable_symbolic_broadcasts_are_shape_errors(
    shapes: tuple[str, str, str], portable: bool
) -> None:
    with pytest.raises(asel.SelectShapeError, match="symbolic shapes"):
        _export(shapes, portable)
