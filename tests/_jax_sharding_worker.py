"""Sharding checks for the JAX backend, run in a subprocess by ``test_jax_transforms.py``.

``XLA_FLAGS=--xla_force_host_platform_device_count=4`` must be set before JAX
initializes, which is why this runs in its own process. It prints ``OK <n>``
(the number of checks) when every check passes and raises otherwise.
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import arrayselect as asel

COLLECTIVES = ("all-gather", "all-reduce", "all-to-all", "collective-permute", "reduce-scatter")


def _meshes() -> list[tuple[str, jax.sharding.Mesh, P]]:
    """Meshes to test, each with the row spec in the form JAX reports it back.

    JAX normalizes specs differently by mesh kind (``P('x')`` under automatic
    axes, ``P('x', None)`` under explicit ones), and ``Sharding.__eq__`` compares
    specs literally, so each input is placed with the normal form.
    """
    axis_type = getattr(jax.sharding, "AxisType", None)
    if axis_type is None:  # older JAX: one kind of mesh
        return [("default", jax.make_mesh((4,), ("x",)), P("x"))]
    return [
        ("Auto", jax.make_mesh((4,), ("x",), axis_types=(axis_type.Auto,)), P("x")),
        (
            "Explicit",
            jax.make_mesh((4,), ("x",), axis_types=(axis_type.Explicit,)),
            P("x", None),
        ),
    ]


def main() -> None:
    """Run the checks; exit non-zero on the first failure."""
    assert len(jax.devices()) == 4, jax.devices()
    checks = 0
    for label, mesh, row_spec in _meshes():
        rows = NamedSharding(mesh, row_spec)
        replicated = NamedSharding(mesh, P())
        x = jax.device_put(jnp.arange(32.0).reshape(8, 4), rows)
        y = jax.device_put(-jnp.arange(32.0).reshape(8, 4), rows)
        c = jax.device_put(jnp.arange(32).reshape(8, 4) % 3 == 0, rows)
        c_row = jax.device_put(jnp.array([[True, False, True, False]]), replicated)
        y_row = jax.device_put(jnp.arange(4.0), replicated)
        cases = {
            "all sharded": (c, x, y),
            "Python scalar else": (c, x, 0.5),
            "replicated cond (1, 4)": (c_row, x, y),
            "replicated else (4,)": (c, x, y_row),
            "uint8 cond": (c.astype(jnp.uint8), x, y),
        }
        for name, (cond, then, else_) in cases.items():
            expected = np.where(np.asarray(cond) != 0, np.asarray(then), np.asarray(else_))
            for mode in ("eager", "eager again", "jit"):
                if mode == "jit":
                    out = jax.jit(lambda a, b, e=else_: asel.select(a, b, e))(cond, then)
                else:
                    out = asel.select(cond, then, else_)
                where = f"{label} mesh, {name}, {mode}"
                assert out.sharding == x.sharding, f"{where}: {out.sharding} != {x.sharding}"
                assert out.sharding.is_equivalent_to(x.sharding, 2), where
                assert np.array_equal(np.asarray(out), expected), where
                checks += 1
            hlo = (
                jax.jit(lambda a, b, e=else_: asel.select(a, b, e)).lower(cond, then).compile()
            ).as_text()
            found = [op for op in COLLECTIVES if op in hlo]
            assert not found, f"{label} mesh, {name}: collectives in the program: {found}"
            checks += 1
    # Arrays committed to different devices: the documented error, not an implicit copy.
    d0, d1 = jax.devices()[:2]
    a = jax.device_put(jnp.ones(3), d0)
    b = jax.device_put(jnp.zeros(3), d1)
    mask = jax.device_put(jnp.array([True, False, True]), d0)
    for _ in range(2):  # general path, then the fast path
        try:
            asel.select(mask, a, b)
        except asel.SelectValueError as exc:
            assert "device" in str(exc), exc
            checks += 1
        else:
            raise AssertionError("arrays on different devices were accepted")
    out = asel.select(mask, a, a)
    assert out.sharding == a.sharding, out.sharding
    # The family's cached decisions compare committed operands' devices again: a call
    # of the same signature (shapes, dtypes, committed) on two devices is refused.
    b0 = jax.device_put(jnp.zeros(3), d0)
    loose = jnp.array([False, True, True])  # uncommitted: goes where the others are
    family = {
        "select_n": lambda u, v: asel.select_n(loose, u, v),
        "select_cases": lambda u, v: asel.select_cases([loose, mask], [u, v], 0.0),
        "apply_where": lambda u, v: asel.apply_where(mask, (u, v), jnp.add, fill_value=0.0),
    }
    for name, call in family.items():
        for _ in range(2):  # validated, then the cached decision
            got = call(a, b0)
            assert got.devices() == {d0}, (name, got.devices())
        try:
            call(a, b)
        except asel.SelectValueError as exc:
            assert "device" in str(exc), (name, exc)
            checks += 1
        else:
            raise AssertionError(f"{name}: arrays on different devices were accepted")
    on_d1 = asel.select(jax.device_put(mask, d1), b, b)
    assert on_d1.devices() == {d1}, on_d1.devices()
    checks += 2
    print(f"OK {checks}")


if __name__ == "__main__":
    main()
    sys.exit(0)
