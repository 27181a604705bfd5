"""The JAX backend under JAX's transformations, export, dtypes and sharding.

Expected values come from NumPy (``np.where`` on shapes aligned by the rules of
SPEC §3, written out here) or from the analytic derivative of Select, never
from arrayselect itself.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is not installed")
jax.config.update("jax_enable_x64", True)

# jax.export is a submodule `import jax` loads only on newer JAX (not on 0.5); JAX <
# 0.6.2 imports absl in it without requiring it (the test extra has absl-py)
import jax.export  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import arrayselect as asel  # noqa: E402
from arrayselect._dispatch import registry as _registry  # noqa: E402
from arrayselect._operations.select import select_general  # noqa: E402
from arrayselect._rules.shapes import make_plan  # noqa: E402

jb = pytest.importorskip("arrayselect.backends.jax_backend")

RNG = np.random.default_rng(20240531)

# --- the SPEC §3 shape examples, with an independent oracle -------------------

VALID = [
    # (cond, then, else, options, output shape)
    ((4, 5), (2, 3, 4, 5), (2, 3, 4, 5), {}, (2, 3, 4, 5)),
    ((3, 1, 5), (2, 3, 4, 5), (2, 3, 4, 5), {}, (2, 3, 4, 5)),
    ((), (2, 1, 5), (3, 1), {}, (2, 3, 5)),
    ((0,), (2, 0), (1, 0), {}, (2, 0)),
    ((), (), (), {}, ()),
    (
        (1, 1, 3),
        (1, 3, 1),
        (3, 1, 1),
        {"cond_broadcast": "multidirectional"},
        (3, 3, 3),
    ),
    ((3, 4), (2, 3, 4, 5), (3, 4), {"auto_broadcast": "pdpd", "axis": 1}, (2, 3, 4, 5)),
    ((3, 1), (2, 3, 4, 5), (3, 1), {"auto_broadcast": "pdpd", "axis": 1}, (2, 3, 4, 5)),
    ((4, 5), (2, 3, 4, 5), (4, 5), {"auto_broadcast": "pdpd"}, (2, 3, 4, 5)),
    ((1, 3), (2, 3, 4, 5), (1, 3), {"auto_broadcast": "pdpd", "axis": 0}, (2, 3, 4, 5)),
    ((), (2, 3, 4, 5), (), {"auto_broadcast": "pdpd"}, (2, 3, 4, 5)),
    ((5,), (2, 3, 4, 5), (5,), {"auto_broadcast": "pdpd"}, (2, 3, 4, 5)),
    ((3, 1), (2, 3), (3, 1), {"auto_broadcast": "pdpd", "axis": 1}, (2, 3)),
    ((3, 2), (3, 2), (3, 2), {"auto_broadcast": "none"}, (3, 2)),
]

INVALID = [
    ((3, 5), (2, 3, 4, 5), (2, 3, 4, 5), {}),
    ((2, 1, 1, 1, 1), (2, 3, 4, 5), (2, 3, 4, 5), {}),
    ((1, 1, 3), (1, 3, 1), (3, 1, 1), {}),
    ((3,), (2, 3, 4, 5), (3,), {"auto_broadcast": "pdpd"}),
    ((3, 2), (3, 2), (3, 1), {"auto_broadcast": "none"}),
]


def _pdpd_aligned(src: tuple[int, ...], rank: int, axis: int) -> tuple[int, ...]:
    """SPEC §3 pdpd: trim trailing 1s; start at axis, or at rank(then) - rank(src)."""
    trimmed = list(src)
    while trimmed and trimmed[-1] == 1:
        trimmed.pop()
    start = rank - len(src) if axis == -1 else axis
    return (1,) * start + tuple(trimmed) + (1,) * (rank - start - len(trimmed))


def oracle(cond: Any, then: Any, else_: Any, **options: Any) -> np.ndarray:
    """``np.where`` on the inputs aligned by SPEC §3 (NumPy-rule broadcasting after)."""
    cond, then, else_ = (np.asarray(a) for a in (cond, then, else_))
    if options.get("auto_broadcast") == "pdpd":
        axis = options.get("axis", -1)
        cond = cond.reshape(_pdpd_aligned(cond.shape, then.ndim, axis))
        else_ = else_.reshape(_pdpd_aligned(else_.shape, then.ndim, axis))
    return np.where(cond != 0, then, else_)


def _inputs(
    shapes: tuple[tuple[int, ...], ...], dtype: Any = np.float64, cond_dtype: Any = bool
) -> tuple[Any, Any, Any]:
    c_shape, t_shape, e_shape = shapes
    cond = RNG.integers(0, 3, size=c_shape).astype(cond_dtype)
    then = RNG.standard_normal(t_shape).astype(dtype)
    else_ = RNG.standard_normal(e_shape).astype(dtype)
    return jnp.asarray(cond), jnp.asarray(then), jnp.asarray(else_)


def _jit_select(**options: Any) -> Any:
    return jax.jit(lambda c, t, e: asel.select(c, t, e, **options))


@pytest.mark.parametrize(("c", "t", "e", "options", "out_shape"), VALID)
@pytest.mark.parametrize("cond_dtype", [bool, np.uint8])
def test_jit_shape_examples(
    c: Any, t: Any, e: Any, options: dict[str, Any], out_shape: Any, cond_dtype: Any
) -> None:
    cond, then, else_ = _inputs((c, t, e), cond_dtype=cond_dtype)
    expected = oracle(cond, then, else_, **options)
    assert expected.shape == out_shape
    for result in (
        asel.select(cond, then, else_, **options),
        _jit_select(**options)(cond, then, else_),
    ):
        assert result.shape == out_shape
        assert result.dtype == then.dtype
        np.testing.assert_array_equal(np.asarray(result), expected)


@pytest.mark.parametrize(("c", "t", "e", "options"), INVALID)
def test_jit_shape_errors(c: Any, t: Any, e: Any, options: dict[str, Any]) -> None:
    cond, then, else_ = _inputs((c, t, e))
    with pytest.raises(asel.SelectShapeError):
        _jit_select(**options)(cond, then, else_)
    with pytest.raises(asel.SelectShapeError):
        asel.select(cond, then, else_, **options)


def test_seed_value_example_under_jit() -> None:
    cond = jnp.array([[False, False], [True, False], [True, True]])
    then = jnp.array([[-1, 0], [1, 2], [3, 4]])
    else_ = jnp.array([[11, 10], [9, 8], [7, 6]])
    expected = [[11, 10], [1, 8], [3, 4]]
    assert jax.jit(asel.select)(cond, then, else_).tolist() == expected
    assert asel.select(cond, then, else_).tolist() == expected
    directml = jnp.array([[1, 0], [1, 1]], dtype=jnp.uint8)
    result = jax.jit(asel.select)(
        directml, jnp.array([[1, 2], [3, 4]]), jnp.array([[9, 8], [7, 6]])
    )
    assert result.tolist() == [[1, 8], [3, 4]]


# --- the jaxpr: nothing beyond lax.select -------------------------------------


def _primitives(fn: Any, *args: Any) -> list[str]:
    return [eqn.primitive.name for eqn in jax.make_jaxpr(fn)(*args).jaxpr.eqns]


def test_jaxpr_same_shape_is_one_select_n() -> None:
    cond, then, else_ = _inputs(((3, 4), (3, 4), (3, 4)), dtype=np.float32)
    assert _primitives(asel.select, cond, then, else_) == ["select_n"]
    assert _primitives(
        lambda c, t, e: asel.select(c, t, e, auto_broadcast="none"), cond, then, else_
    ) == ["select_n"]


def test_jaxpr_broadcasts_without_conversions() -> None:
    cond, then, else_ = _inputs(((3, 1), (2, 3, 4), (4,)), dtype=np.float16)
    prims = _primitives(asel.select, cond, then, else_)
    assert prims.count("select_n") == 1
    assert set(prims) <= {"broadcast_in_dim", "select_n"}
    cond_u8 = cond.astype(jnp.uint8)
    prims = _primitives(asel.select, cond_u8, then, else_)
    assert prims.count("ne") == 1 and "convert_element_type" not in prims
    prims = _primitives(lambda c, t: asel.select(c, t, 1.0), cond, then)
    assert "convert_element_type" not in prims and prims.count("select_n") == 1
    pdpd = _primitives(
        lambda c, t, e: asel.select(c, t, e, auto_broadcast="pdpd", axis=1),
        jnp.ones((3, 1), bool),
        jnp.ones((2, 3, 4)),
        jnp.ones((3, 4)),
    )
    assert set(pdpd) <= {"broadcast_in_dim", "squeeze", "reshape", "select_n"}


def test_jaxpr_scalar_cond_stays_scalar() -> None:
    prims = _primitives(asel.select, jnp.array(True), jnp.ones((2, 3)), jnp.zeros((2, 3)))
    assert prims == ["select_n"]


# --- differentiation ------------------------------------------------------------

GRAD_CASES = [
    # (cond, then, else, options)
    ((3, 4), (3, 4), (3, 4), {}),
    ((4, 1), (3, 1, 5), (4, 5), {}),
    ((), (2, 3), (1,), {}),
    ((3, 1), (2, 3, 4), (3, 1), {"auto_broadcast": "pdpd", "axis": 1}),
    ((1, 3), (3, 1), (1,), {"cond_broadcast": "multidirectional"}),
]


def _reduce_to(grad_out: np.ndarray, shape: tuple[int, ...], aligned: tuple[int, ...]) -> Any:
    """Sum a gradient of the output shape back onto an input (the transpose of broadcasting)."""
    lead = grad_out.ndim - len(aligned)
    g = grad_out.sum(axis=tuple(range(lead))) if lead else grad_out
    axes = tuple(i for i, d in enumerate(aligned) if d == 1 and g.shape[i] != 1)
    g = g.sum(axis=axes, keepdims=True) if axes else g
    return g.reshape(shape)


def _aligned(shape: tuple[int, ...], then_rank: int, options: dict[str, Any]) -> Any:
    if options.get("auto_broadcast") == "pdpd":
        return _pdpd_aligned(shape, then_rank, options.get("axis", -1))
    return shape


@pytest.mark.parametrize(("c", "t", "e", "options"), GRAD_CASES)
def test_grad_matches_analytic_mask(c: Any, t: Any, e: Any, options: dict[str, Any]) -> None:
    cond, then, else_ = _inputs((c, t, e), cond_dtype=np.int32)
    out = oracle(cond, then, else_, **options)
    weights = jnp.asarray(RNG.standard_normal(out.shape))

    def loss(t_: Any, e_: Any) -> Any:
        return jnp.sum(weights * asel.select(cond, t_, e_, **options))

    grad_t, grad_e = jax.grad(loss, argnums=(0, 1))(then, else_)
    mask = np.broadcast_to(
        np.asarray(cond).reshape(_aligned(cond.shape, then.ndim, options)) != 0, out.shape
    )
    w = np.asarray(weights)
    expected_t = _reduce_to(w * mask, then.shape, then.shape)
    expected_e = _reduce_to(w * ~mask, else_.shape, _aligned(else_.shape, then.ndim, options))
    np.testing.assert_allclose(np.asarray(grad_t), expected_t, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(grad_e), expected_e, rtol=1e-12, atol=1e-12)
    # jit(grad) and grad(jit) agree with the eager gradient.
    jit_grads = jax.jit(jax.grad(loss, argnums=(0, 1)))(then, else_)
    np.testing.assert_allclose(np.asarray(jit_grads[0]), expected_t, rtol=1e-12, atol=1e-12)


def test_cond_gets_no_gradient() -> None:
    cond = jnp.array([1.0, 0.0, 2.0])
    then = jnp.array([1.0, 2.0, 3.0])

    def f(c: Any, t: Any) -> Any:
        return jnp.sum(asel.select(c.astype(jnp.int32), t, 0.0))

    grad_c, grad_t = jax.grad(f, argnums=(0, 1))(cond, then)
    assert grad_c.tolist() == [0.0, 0.0, 0.0]
    assert grad_t.tolist() == [1.0, 0.0, 1.0]


@pytest.mark.parametrize(("c", "t", "e", "options"), GRAD_CASES)
def test_jvp_is_masked_tangent(c: Any, t: Any, e: Any, options: dict[str, Any]) -> None:
    cond, then, else_ = _inputs((c, t, e))
    t_dot = jnp.asarray(RNG.standard_normal(then.shape))
    e_dot = jnp.asarray(RNG.standard_normal(else_.shape))
    primal, tangent = jax.jvp(
        lambda t_, e_: asel.select(cond, t_, e_, **options), (then, else_), (t_dot, e_dot)
    )
    np.testing.assert_array_equal(np.asarray(primal), oracle(cond, then, else_, **options))
    np.testing.assert_array_equal(np.asarray(tangent), oracle(cond, t_dot, e_dot, **options))


def test_vjp_and_jacobians() -> None:
    cond = jnp.array([True, False, True, True, False])
    then = jnp.arange(5.0)
    else_ = -jnp.arange(5.0)
    out, pullback = jax.vjp(lambda t, e: asel.select(cond, t, e), then, else_)
    assert out.tolist() == [0.0, -1.0, 2.0, 3.0, -4.0]
    ct = jnp.arange(1.0, 6.0)
    grad_t, grad_e = pullback(ct)
    mask = np.asarray(cond)
    assert grad_t.tolist() == np.where(mask, np.arange(1.0, 6.0), 0.0).tolist()
    assert grad_e.tolist() == np.where(mask, 0.0, np.arange(1.0, 6.0)).tolist()
    for jac in (jax.jacfwd, jax.jacrev):
        np.testing.assert_array_equal(
            np.asarray(jac(lambda t: asel.select(cond, t, else_))(then)), np.diag(mask * 1.0)
        )
        # then broadcast from (1,): the Jacobian column is the mask.
        column = jac(lambda t: asel.select(cond, t, else_))(jnp.ones((1,)))
        np.testing.assert_array_equal(np.asarray(column), (mask * 1.0)[:, None])
    # Second derivatives pass through as well.
    hess = jax.hessian(lambda t: jnp.sum(asel.select(cond, t, else_) ** 2))(then)
    np.testing.assert_array_equal(np.asarray(hess), np.diag(mask * 2.0))


# --- vmap ----------------------------------------------------------------------

VMAP_CASES = [
    # (cond shape, then shape, else shape, in_axes, options); shapes include the batch axis.
    ((5, 3, 4), (5, 3, 4), (5, 3, 4), (0, 0, 0), {}),
    ((3, 4), (5, 3, 4), (5, 3, 4), (None, 0, 0), {}),
    ((4, 5), (3, 4), (5, 3, 4), (1, None, 0), {}),
    ((5, 4), (3, 5, 4), (4,), (0, 1, None), {}),
    ((5,), (5, 2, 3), (5, 1), (0, 0, 0), {}),
    ((3, 1, 5), (2, 3, 4, 5), (5, 3, 4), (2, None, 0), {"auto_broadcast": "pdpd", "axis": 1}),
    ((5, 1, 3), (5, 3, 1), (3, 1, 1), (0, 0, None), {"cond_broadcast": "multidirectional"}),
]


@pytest.mark.parametrize(("c", "t", "e", "in_axes", "options"), VMAP_CASES)
def test_vmap_matches_python_loop(
    c: Any, t: Any, e: Any, in_axes: tuple[Any, ...], options: dict[str, Any]
) -> None:
    args = _inputs((c, t, e))
    size = next(a.shape[ax] for a, ax in zip(args, in_axes, strict=True) if ax is not None)
    mapped = jax.vmap(lambda c_, t_, e_: asel.select(c_, t_, e_, **options), in_axes=in_axes)
    result = np.asarray(mapped(*args))
    for i in range(size):
        example = [
            a if ax is None else jnp.take(a, i, axis=ax)
            for a, ax in zip(args, in_axes, strict=True)
        ]
        np.testing.assert_array_equal(result[i], oracle(*example, **options))
        np.testing.assert_array_equal(result[i], np.asarray(asel.select(*example, **options)))
    np.testing.assert_array_equal(np.asarray(jax.jit(mapped)(*args)), result)


def test_vmap_validates_per_example_shapes() -> None:
    cond = jnp.ones((7, 3), bool)
    then = jnp.ones((7, 4))
    with pytest.raises(asel.SelectShapeError) as info:
        jax.vmap(asel.select)(cond, then, then)
    message = str(info.value)
    assert "(3,)" in message and "(4,)" in message and "7" not in message


def test_vmap_of_grad_and_scan_and_checkpoint() -> None:
    conds = jnp.asarray(RNG.integers(0, 2, size=(6, 4)).astype(bool))
    xs = jnp.asarray(RNG.standard_normal((6, 4)))

    # per-example gradients
    def loss(t: Any, c: Any) -> Any:
        return jnp.sum(asel.select(c, t, 0.0) ** 2)

    grads = jax.vmap(jax.grad(loss))(xs, conds)
    np.testing.assert_allclose(np.asarray(grads), np.where(conds, 2 * xs, 0.0))

    # lax.scan: keep the running value where cond is false
    def body(carry: Any, inp: Any) -> tuple[Any, Any]:
        c, x = inp
        new = asel.select(c, x, carry)
        return new, new

    final, history = lax.scan(body, jnp.zeros(4), (conds, xs))
    carry = np.zeros(4)
    for i in range(6):
        carry = np.where(np.asarray(conds[i]), np.asarray(xs[i]), carry)
        np.testing.assert_array_equal(np.asarray(history[i]), carry)
    np.testing.assert_array_equal(np.asarray(final), carry)

    # jax.checkpoint (remat) gives the same gradient
    def f(t: Any) -> Any:
        return jnp.sum(jnp.sin(asel.select(conds[0], t, 1.0)))

    np.testing.assert_allclose(
        np.asarray(jax.grad(jax.checkpoint(f))(xs[0])), np.asarray(jax.grad(f)(xs[0]))
    )


# --- jax.export with symbolic shapes --------------------------------------------


def _spec(scope: Any, shape: str, dtype: Any) -> Any:
    return jax.ShapeDtypeStruct(jax.export.symbolic_shape(shape, scope=scope), dtype)


def test_export_round_trip_with_symbolic_batch() -> None:
    pytest.importorskip("flatbuffers", reason="jax.export serialization needs flatbuffers")
    scope = jax.export.SymbolicScope()
    exported = jax.export.export(jax.jit(asel.select))(
        _spec(scope, "b, 4", jnp.bool_),
        _spec(scope, "b, 4", jnp.float32),
        _spec(scope, "4", jnp.float32),
    )
    assert str(exported.out_avals[0].shape) == "(b, 4)"
    restored = jax.export.deserialize(exported.serialize())
    for b in (1, 3, 7):
        cond = jnp.asarray(RNG.integers(0, 2, size=(b, 4)).astype(bool))
        then = jnp.asarray(RNG.standard_normal((b, 4)).astype(np.float32))
        else_ = jnp.asarray(RNG.standard_normal(4).astype(np.float32))
        result = restored.call(cond, then, else_)
        assert result.shape == (b, 4)
        np.testing.assert_array_equal(np.asarray(result), oracle(cond, then, else_))


def test_export_pdpd_and_scalar_with_symbolic_dims() -> None:
    scope = jax.export.SymbolicScope()

    def f(c: Any, t: Any, e: Any) -> Any:
        return asel.select(c, t, e, auto_broadcast="pdpd", axis=1) + asel.select(
            c, t, 0.5, auto_broadcast="pdpd", axis=1
        )

    exported = jax.export.export(jax.jit(f))(
        _spec(scope, "n, 1", jnp.bool_),
        _spec(scope, "b, n, 3", jnp.float32),
        _spec(scope, "n", jnp.float32),
    )
    cond = jnp.array([[True], [False]])
    then = jnp.arange(12.0, dtype=jnp.float32).reshape(2, 2, 3)
    else_ = jnp.array([-1.0, -2.0], dtype=jnp.float32)
    opts = {"auto_broadcast": "pdpd", "axis": 1}
    expected = oracle(cond, then, else_, **opts) + oracle(cond, then, np.float32(0.5), **opts)
    np.testing.assert_array_equal(np.asarray(exported.call(cond, then, else_)), expected)


@pytest.mark.parametrize(
    ("shapes", "options"),
    [
        (("b, 4", "b, 4", "b, 3"), {}),  # 4 vs 3: certain
        (("2*b", "2*b+2", "2*b+2"), {}),  # both at least 2 and never equal
        (("b, 3", "b, 4", "b, 4"), {}),
        (("b", "b", "b+1"), {"auto_broadcast": "none"}),
        (("b, 3", "b, 4, 3", "b, 4, 3"), {"auto_broadcast": "pdpd", "axis": 1}),
    ],
)
def test_export_certain_mismatch_raises(shapes: tuple[str, ...], options: dict[str, Any]) -> None:
    scope = jax.export.SymbolicScope()
    specs = [_spec(scope, s, jnp.float32) for s in shapes]
    specs[0] = jax.ShapeDtypeStruct(specs[0].shape, jnp.bool_)
    with pytest.raises(asel.SelectShapeError):
        jax.export.export(jax.jit(lambda c, t, e: asel.select(c, t, e, **options)))(*specs)


def test_symbolic_dims_in_the_shape_core() -> None:
    b, c = jax.export.symbolic_shape("b, c")
    # b against 3 is not certain (b may be 3 or 1): the plan picks the constant.
    assert make_plan((b,), (3,), (3,), "numpy", -1, "unidirectional").out_shape == (3,)
    assert make_plan((b, 4), (b, 4), (4,), "numpy", -1, "unidirectional").out_shape == (b, 4)
    assert make_plan((1,), (b,), (1,), "numpy", -1, "unidirectional").out_shape == (b,)
    assert make_plan((b,), (b,), (b,), "none", -1, "unidirectional").out_shape == (b,)
    assert make_plan((3,), (b,), (b,), "none", -1, "unidirectional").out_shape == (3,)
    plan = make_plan((c, 1), (2, c, 5), (c,), "pdpd", 1, "unidirectional")
    assert plan.out_shape == (2, c, 5)
    # undecidable results are None, as for unknown dims
    assert make_plan((), (b,), (c,), "numpy", -1, "unidirectional").out_shape == (None,)
    with pytest.raises(asel.SelectShapeError):
        make_plan((2 * b,), (2 * b + 2,), (1,), "numpy", -1, "unidirectional")
    with pytest.raises(asel.SelectShapeError):
        make_plan((b,), (b + 1,), (b + 1,), "none", -1, "unidirectional")


def test_undecidable_symbolic_broadcast_is_a_shape_error() -> None:
    scope = jax.export.SymbolicScope()
    specs = [
        _spec(scope, "b", jnp.bool_),
        _spec(scope, "b", jnp.float32),
        _spec(scope, "4", jnp.float32),
    ]
    with pytest.raises(asel.SelectShapeError, match="tracing"):
        jax.export.export(jax.jit(asel.select))(*specs)


# --- dtypes and scalars -----------------------------------------------------------

ALL_DTYPES = [
    name
    for name in (
        "bool",
        "int2",
        "int4",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint2",
        "uint4",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float4_e2m1fn",
        "float8_e3m4",
        "float8_e4m3",
        "float8_e4m3b11fnuz",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "bfloat16",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
    if name == "bool" or hasattr(jnp, name)
]


def _dtype(name: str) -> np.dtype[Any]:
    return np.dtype(jnp.bool_ if name == "bool" else getattr(jnp, name))


def _bits(x: Any) -> list[int]:
    return np.ascontiguousarray(np.asarray(x)).view(np.uint8).tolist()  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_every_dtype_bit_exact(name: str) -> None:
    dtype = _dtype(name)
    if name == "bool":
        then_np = np.array([True, False, True, False, True, False])
    else:
        values = (
            [0.0, -0.0, 1.0, -1.0, np.nan, np.inf]
            if dtype.kind not in "iu"
            else [0, 1, -1, 1, 0, 1]
        )
        then_np = np.array(values, dtype=np.float64).astype(dtype)
    else_np = then_np[::-1].copy()
    cond = jnp.array([True, False, True, True, False, False])
    expected = np.where(np.asarray(cond), then_np, else_np)
    then, else_ = jnp.asarray(then_np), jnp.asarray(else_np)
    for result in (asel.select(cond, then, else_), jax.jit(asel.select)(cond, then, else_)):
        assert result.dtype == dtype
        assert _bits(result) == _bits(expected)
    scalar = True if name == "bool" else 1
    assert asel.select(cond, then, scalar).dtype == dtype
    assert jax.jit(lambda c, t: asel.select(c, scalar, t))(cond, then).dtype == dtype


FLOAT_DTYPES = [n for n in ALL_DTYPES if n.startswith(("float", "bfloat"))]


def _all_bit_patterns(dtype: np.dtype[Any]) -> np.ndarray:
    """Every pattern of a 1-byte float (4-bit ones: the low nibble); NaN payloads otherwise."""
    if dtype.itemsize == 1:
        count = 16 if dtype.name.startswith("float4") else 256
        return np.arange(count, dtype=np.uint8).view(dtype)
    unsigned = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    bits = dtype.itemsize * 8
    top = (1 << bits) - 1
    patterns = [0, 1 << (bits - 1), 1, top, top >> 1, (top >> 1) - 1]
    patterns += [(top >> 1) ^ (1 << k) for k in range(bits - 12)]  # NaNs, payloads
    return np.array(patterns, dtype=unsigned).view(dtype)


@pytest.mark.parametrize("name", FLOAT_DTYPES)
def test_nan_payloads_and_signed_zeros_are_copied_bit_for_bit(name: str) -> None:
    patterns = _all_bit_patterns(_dtype(name))
    then = jnp.asarray(patterns)
    else_ = jnp.asarray(patterns[::-1].copy())
    cond = jnp.asarray(np.arange(len(patterns)) % 3 == 0)
    expected = np.where(np.asarray(cond), patterns, patterns[::-1])
    for result in (
        asel.select(cond, then, else_),
        jax.jit(asel.select)(cond, then, else_),
        # broadcast else: a 0-d operand made from NumPy, not by indexing a JAX array
        # (on JAX 0.5 that indexing canonicalizes bfloat16/float8 NaNs before select runs)
        asel.select(cond[:, None], then[:, None], jnp.asarray(patterns[-1])),
    ):
        assert _bits(result.reshape(-1)) == _bits(
            expected if result.ndim == 1 else np.where(np.asarray(cond), patterns, patterns[-1])
        )


@pytest.mark.parametrize("name", ["bfloat16", "float8_e5m2", "float16"])
def test_narrow_floats_differentiate_and_batch(name: str) -> None:
    dtype = _dtype(name)
    cond = jnp.array([True, False, True, False])
    then = jnp.arange(4).astype(dtype)
    else_ = (-jnp.arange(4)).astype(dtype)

    def loss(t: Any, e: Any) -> Any:
        return jnp.sum(asel.select(cond, t, e).astype(jnp.float32))

    grad_t, grad_e = jax.grad(loss, argnums=(0, 1))(then, else_)
    assert grad_t.dtype == dtype
    assert grad_t.astype(jnp.float32).tolist() == [1.0, 0.0, 1.0, 0.0]
    assert grad_e.astype(jnp.float32).tolist() == [0.0, 1.0, 0.0, 1.0]
    batched = jax.vmap(asel.select, in_axes=(0, 0, None))(cond[:, None], then[:, None], else_)
    assert batched.shape == (4, 4)
    primal, tangent = jax.jvp(lambda t: asel.select(cond, t, else_), (then,), (jnp.ones(4, dtype),))
    assert tangent.astype(jnp.float32).tolist() == [1.0, 0.0, 1.0, 0.0]
    assert _bits(primal) == _bits(np.where(np.asarray(cond), np.asarray(then), np.asarray(else_)))


@pytest.mark.parametrize("name", ["bfloat16", "float16", "float32", "float64", "complex64"])
def test_weak_typed_scalars_keep_the_array_dtype(name: str) -> None:
    dtype = _dtype(name)
    x = jnp.arange(4).astype(dtype)
    cond = jnp.array([True, False, True, False])
    for value in (1.0, 0.1, -0.0, float("inf")):
        for result in (
            asel.select(cond, x, value),
            asel.select(cond, value, x),
            jax.jit(lambda c, t, v=value: asel.select(c, t, v))(cond, x),
        ):
            assert result.dtype == dtype, (value, result.dtype)
            assert not result.weak_type
    # the scalar is rounded once, from the exact Python value
    got = asel.select(jnp.array([False]), jnp.zeros(1, dtype), 0.1)
    assert _bits(got) == _bits(np.array([0.1]).astype(dtype))


def test_two_python_scalars_give_weak_default_dtype() -> None:
    cond = jnp.array([True, False])
    options = {"cond_broadcast": "multidirectional"}
    result = asel.select(cond, 1.0, 2.0, **options)
    reference = jnp.where(cond, 1.0, 2.0)
    assert result.dtype == reference.dtype and result.weak_type == reference.weak_type
    assert result.tolist() == [1.0, 2.0]
    assert asel.select(cond, True, False, **options).dtype == jnp.bool_
    # a weak-typed array partner keeps the result weak, as jnp.where does
    weak = jnp.asarray(3.0) * jnp.ones(2, dtype=jnp.asarray(3.0).dtype)
    for _ in range(2):
        out = asel.select(cond, jnp.full(2, 3.0), 0.5)
        assert out.weak_type == jnp.where(cond, jnp.full(2, 3.0), 0.5).weak_type
    del weak


def test_scalar_range_errors_on_every_path() -> None:
    x = jnp.zeros(3, jnp.uint8)
    cond = jnp.array([True, False, True])
    for _ in range(2):  # general path, then the cached fast path
        assert asel.select(cond, x, 255).tolist() == [0, 255, 0]
        with pytest.raises(asel.ScalarOverflowError):
            asel.select(cond, x, 256)
        with pytest.raises(asel.ScalarOverflowError):
            jax.jit(lambda c, t: asel.select(c, t, -1))(cond, x)
        with pytest.raises(asel.SelectTypeError):
            asel.select(cond, x, 0.5)
    big = 2**63 + 5
    assert asel.select(cond, jnp.zeros(3, jnp.uint64), big).tolist() == [0, big, 0]


def test_out_is_refused_because_jax_arrays_are_immutable() -> None:
    cond = jnp.array([True])
    x = jnp.ones(1)
    with pytest.raises(asel.SelectTypeError, match="immutable"):
        asel.select(cond, x, x, out=x)
    with pytest.raises(TypeError, match="JAX arrays are immutable"):
        jax.jit(lambda c, t: asel.select(c, t, t, out=t))(cond, x)


def test_numpy_arrays_join_jax_arrays() -> None:
    cond = jnp.array([True, False])
    result = asel.select(cond, np.array([1.0, 2.0]), jnp.array([3.0, 4.0]))
    assert isinstance(result, jax.Array) and result.tolist() == [1.0, 4.0]
    result = asel.select(np.array([False, True]), jnp.array([1, 2]), np.array([3, 4]))
    assert isinstance(result, jax.Array) and result.tolist() == [3, 2]
    assert asel.backend_for(np.array([True]), jnp.ones(1), 0.0).name == "jax"


def test_errors_match_between_fast_and_general_paths() -> None:
    cond = jnp.ones((3,), bool)
    cases = [
        ((cond, jnp.ones(4), jnp.ones(4)), {}),
        ((cond, jnp.ones(3), jnp.ones(3, jnp.float32)), {}),
        ((jnp.ones(3), jnp.ones(3), jnp.ones(3)), {}),
        ((cond, 1, 2.0), {}),
        ((cond, jnp.ones(3), jnp.ones(3)), {"auto_broadcast": "bogus"}),
        ((cond, jnp.ones(3), jnp.ones(3)), {"axis": 1}),
    ]
    f16 = jnp.ones(3, jnp.float16)
    c64 = jnp.ones(3, jnp.complex64)
    i8 = jnp.ones(3, jnp.int8)
    cases.append(((jnp.ones(3), i8, 0.5), {}))  # the cond error comes first
    cases.append(((cond, i8, 0.5), {"axis": 2}))  # the option error comes first
    for value in (1e5, -1e5, 70000, 1j, 1e39 + 0j, complex(0, 1e39), 128, -129, 0.5, True):
        for target in (f16, c64, i8):
            cases.append(((cond, target, value), {}))
            cases.append(((cond, value, target), {}))
    for args, options in cases:
        try:
            asel.select(*args, **options)  # some of these are valid
        except asel.SelectError:
            pass
        else:
            assert _bits(asel.select(*args, **options)) == _bits(select_general(*args, **options))
            continue
        with pytest.raises(asel.SelectError) as fast:
            asel.select(*args, **options)
        with pytest.raises(asel.SelectError) as general:
            select_general(*args, **options)
        assert type(fast.value) is type(general.value)
        assert str(fast.value) == str(general.value)


# --- the eager cache ---------------------------------------------------------------


@contextlib.contextmanager
def _count_compiles() -> Iterator[list[str]]:
    """Collect JAX's backend-compile events while the block runs."""
    events: list[str] = []

    def listener(event: str, duration: float, **kwargs: Any) -> None:
        if event.endswith("backend_compile_duration"):
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        # public from JAX 0.8.1; before it, the same function under a private name
        unregister = getattr(jax.monitoring, "unregister_event_duration_listener", None)
        if unregister is None:
            from jax._src import monitoring

            unregister = monitoring._unregister_event_duration_listener_by_callback
        unregister(listener)


def test_eager_calls_reuse_one_executable() -> None:
    backend = asel.backend_for(jnp.ones(1, bool), jnp.ones(1), jnp.ones(1))
    assert isinstance(backend, jb.JaxBackend)
    cond = jnp.array([[True, False, True]])
    xs = [jnp.full((2, 3), i + 0.25) for i in range(20)]  # a shape no other test uses
    minus = jnp.zeros((2, 3))
    asel.select(cond, xs[0], minus)
    asel.select(cond, xs[0], minus)  # the first call went through the general path
    before = backend.cache_info()
    with _count_compiles() as compiles:
        for x in xs:
            out = asel.select(cond, x, minus)
    assert compiles == []
    after = backend.cache_info()
    assert after.traces == before.traces
    assert after.executables == before.executables
    np.testing.assert_array_equal(
        np.asarray(out), np.where(np.asarray(cond), np.asarray(xs[-1]), 0.0)
    )
    # a new shape compiles once, then is reused
    y = jnp.ones((4, 3))
    with _count_compiles() as compiles:
        asel.select(cond, y, y)
        asel.select(cond, y, y)
        asel.select(cond, y, y)
    assert len(compiles) == 1
    assert backend.cache_info().traces == after.traces + 1


def test_eager_cache_is_bounded() -> None:
    def factory(xp: Any) -> Any:
        return jb.JaxBackend(cache_size=3)  # the registry installs its fast path

    asel.register_backend("jax", factory)
    try:
        cond = jnp.array([True])
        backend = asel.backend_for(cond, jnp.ones(1), jnp.ones(1))
        assert backend.cache_info().maxsize == 3
        for n in range(1, 9):
            x = jnp.ones((n,))
            for _ in range(2):
                assert asel.select(cond, x, x).shape == (n,)
            for options in ({"auto_broadcast": "none"}, {"cond_broadcast": "multidirectional"}):
                asel.select(jnp.ones((n,), bool), x, x, **options)
            info = backend.cache_info()
            assert info.functions <= 3
            assert info.executables <= 3 * 3
    finally:
        asel.register_backend("jax", jb.create)
    assert asel.select(jnp.array([True]), jnp.ones(1), jnp.zeros(1)).tolist() == [1.0]


def test_force_portable_bypasses_the_fast_path() -> None:
    cond = jnp.array([True, False])
    x = jnp.ones(2)
    asel.select(cond, x, x)
    with asel.force_portable():
        assert asel.backend_for(cond, x, x).name.startswith("portable")
        assert asel.select(cond, x, -x).tolist() == [1.0, -1.0]


def test_threads_share_the_cache() -> None:
    from concurrent.futures import ThreadPoolExecutor

    cond = jnp.array([True, False, True])

    def work(i: int) -> list[float]:
        x = jnp.full((3,), float(i))
        return asel.select(cond, x, -x).tolist()  # type: ignore[no-any-return]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(64)))
    assert results == [[float(i), -float(i), float(i)] for i in range(64)]


# --- NaN gradients: the documented double-where recipe -----------------------------


def test_double_where_recipe_from_the_docs() -> None:
    x = jnp.array([4.0, 0.0, -1.0])

    def naive(x: Any) -> Any:
        return jnp.sum(asel.select(x > 0, jnp.sqrt(x), 0.0))

    def double_where(x: Any) -> Any:
        safe = asel.select(x > 0, x, 1.0)
        return jnp.sum(asel.select(x > 0, jnp.sqrt(safe), 0.0))

    assert naive(x) == double_where(x) == 2.0
    assert np.isnan(np.asarray(jax.grad(naive)(x))).any()
    assert jax.grad(double_where)(x).tolist() == [0.25, 0.0, 0.0]


# --- sharding (4 forced host devices, in a subprocess) --------------------------------


def test_sharding_is_preserved_on_four_host_devices() -> None:
    worker = Path(__file__).with_name("_jax_sharding_worker.py")
    env = dict(os.environ)
    env["XLA_FLAGS"] = (
        env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run(
        [sys.executable, str(worker)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().startswith("OK"), done.stdout


def test_backend_first_loaded_inside_a_trace() -> None:
    # The backend module is imported by the first JAX call; when that call is
    # traced, the fast path must still be keyed by the concrete array type.
    code = """
import jax, jax.numpy as jnp, arrayselect as asel
from arrayselect._dispatch import registry as _registry
jax.make_jaxpr(asel.select)(jnp.ones(2, bool), jnp.ones(2), jnp.ones(2))
# (np.ndarray's fast path is registered by import arrayselect itself)
keys = [k for k in _registry.fast_paths if k.__module__.partition(".")[0] != "numpy"]
assert len(keys) == 1 and not issubclass(keys[0], jax.core.Tracer), keys
prims = [e.primitive.name for e in jax.make_jaxpr(lambda c, t: asel.select(c, t, 0.0))(
    jnp.ones(2, bool), jnp.ones(2)).jaxpr.eqns]
assert prims == ["broadcast_in_dim", "select_n"], prims
assert asel.select(jnp.array([True, False]), 1.0, 2.0, cond_broadcast="multidirectional"
    ).tolist() == [1.0, 2.0]
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_import_does_not_import_jax() -> None:
    code = "import sys, arrayselect; assert 'jax' not in sys.modules, 'jax imported'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_eager_apply_where_compiles_repeated_functions_only() -> None:
    """Eager ``apply_where`` compiles its double where on the second call with the same
    functions and fill, with the eager answer's bits; functions made anew on every call
    never compile, and a function that reads values (Python control flow) keeps running
    eagerly, on every call."""
    backend = _registry.resolve(jnp.zeros(1), jnp.zeros(1), jnp.zeros(1), None)[0]
    backend._fused.clear()
    backend._fused_seen.clear()
    x = jnp.asarray(np.array([-1.0, 0.5, 4.0, -0.0], np.float32))
    c = x > 0
    nan, other_nan = float("nan"), float("inf") - float("inf")

    def log_fill(fill: float) -> bytes:
        return np.asarray(asel.apply_where(c, x, jnp.log, fill_value=fill)).tobytes()

    eager = [log_fill(nan), log_fill(other_nan)]  # each key's first call: eager
    assert not backend._fused.data
    assert [log_fill(nan), log_fill(other_nan)] * 2 == eager * 2  # compiled; nan bits kept
    assert len(backend._fused.data) == 2
    for k in range(3):  # a lambda made per call: a key of its own each time
        asel.apply_where(c, x, lambda v, k=k: v + k, fill_value=0.0)
    assert len(backend._fused.data) == 2

    def reads_values(v: Any) -> Any:
        return v if float(v[0]) > 100 else -v

    answers = {np.asarray(asel.apply_where(c, x, reads_values, jnp.abs)).tobytes()
               for _ in range(4)}  # fmt: skip
    assert answers == {np.asarray(jnp.where(c, -x, jnp.abs(x))).tobytes()}
    assert None in backend._fused.data.values()  # tried once, then eager
