"""Memory layouts (strided, transposed, negative strides), 0-d / zero-size arrays, ``out=``."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from oracle import bits_equal, oracle_select
from xp_helpers import Backend, backend_kind, from_numpy, supports_out, to_numpy

import arrayselect as asel

# ------------------------------------------------------------------ layouts


def _base(shape, dtype="float64", seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(dtype)


def _views(xp: ModuleType):
    """(name, numpy view, library view) pairs: the same non-contiguous values.

    The library view is made by the library's own slicing/transposition, so it
    is really non-contiguous where the library has strides.
    """
    kind = backend_kind(xp)
    a = _base((6, 8))
    b = _base((8, 6), seed=1)
    xa, xb = from_numpy(xp, a), from_numpy(xp, b)
    views = [
        ("step2-rows", a[::2], xa[::2, ...]),
        ("step2-cols", a[:, 1::2], xa[:, 1::2]),
        ("transpose", b.T, xp.permute_dims(xb, (1, 0)) if hasattr(xp, "permute_dims") else xb.T),
    ]
    if kind in ("numpy", "cupy", "array_api_strict", "dask", "jax"):
        views.append(("negative-stride", a[::-1, ::-2], xa[::-1, ::-2]))
    elif kind == "torch":
        # PyTorch has no negative strides: flip() copies, so this only checks values.
        views.append(("flip(copy)", a[::-1, ::-2], xp.flip(xa, dims=(0, 1))[:, ::2]))
    return views


def test_views_are_what_we_think(xp: ModuleType):
    for name, view, xview in _views(xp):
        assert bits_equal(to_numpy(xview), view), name
    if backend_kind(xp) == "numpy":
        for _, _view, xview in _views(xp):
            assert not xview.flags.c_contiguous
    if backend_kind(xp) == "torch":
        for name, _, xview in _views(xp):
            if name != "flip(copy)":
                assert not xview.is_contiguous()


@pytest.mark.parametrize("role", ["cond", "then", "else", "all"])
def test_non_contiguous_inputs(xp: ModuleType, role: str):
    for name, view, xview in _views(xp):
        shape = view.shape
        rng = np.random.default_rng(3)
        cond = rng.integers(0, 2, size=shape).astype(bool)
        then = _base(shape, seed=4)
        else_ = _base(shape, seed=5)
        arrays = {"cond": cond, "then": then, "else": else_}
        xarrays = {k: from_numpy(xp, v) for k, v in arrays.items()}
        targets = ("cond", "then", "else") if role == "all" else (role,)
        for target in targets:
            if target == "cond":
                arrays["cond"] = view > 0
                xarrays["cond"] = xview > 0
            else:
                arrays[target] = view
                xarrays[target] = xview
        result = asel.select(xarrays["cond"], xarrays["then"], xarrays["else"])
        expected = oracle_select(arrays["cond"], arrays["then"], arrays["else"])
        assert bits_equal(to_numpy(result), expected), name


def test_numpy_zero_stride_and_negative_stride_broadcast(library, xp: ModuleType):
    if backend_kind(xp) not in ("numpy", "cupy"):
        pytest.skip(f"{library}: broadcast_to views with zero strides are a NumPy/CuPy layout")
    a = np.arange(12.0).reshape(3, 4)[::-1]  # negative row stride
    zero = np.broadcast_to(np.array([1.0, 2.0, 3.0, 4.0]), (3, 4))  # zero row stride
    cond = np.broadcast_to(np.array([[True], [False], [True]]), (3, 4))[::-1]
    xa, xz, xc = (xp.asarray(v) for v in (a, zero, cond))
    for opts in ({}, {"auto_broadcast": "none"}, {"auto_broadcast": "pdpd"}):
        got = to_numpy(asel.select(xc, xa, xz, **opts))
        assert bits_equal(got, oracle_select(cond, a, zero, **opts))


# ------------------------------------------------------------------ 0-d, zero-size

EMPTY_CASES = [
    # (cond, then, else, options)
    ((), (), (), {"auto_broadcast": "none"}),
    ((0,), (0,), (0,), {"auto_broadcast": "none"}),
    ((2, 0, 3), (2, 0, 3), (2, 0, 3), {"auto_broadcast": "none"}),
    ((), (), (), {}),
    ((), (0, 3), (1,), {}),
    ((0, 1), (3,), (0, 3), {}),
    ((1,), (0,), (), {}),
    ((0, 1), (3,), (), {"cond_broadcast": "multidirectional"}),
    ((2, 1, 1), (0,), (1, 1), {"cond_broadcast": "multidirectional"}),
    ((), (), (), {"cond_broadcast": "multidirectional"}),
    ((), (), (), {"auto_broadcast": "pdpd"}),
    ((1,), (2, 0), (0,), {"auto_broadcast": "pdpd"}),
    ((), (0, 3), (3,), {"auto_broadcast": "pdpd", "axis": 1}),
    ((0,), (0, 3), (1, 1), {"auto_broadcast": "pdpd", "axis": 0}),
    ((0, 1), (0, 3), (), {"auto_broadcast": "pdpd", "axis": 0}),
]
EMPTY_EXPECTED = [
    (),
    (0,),
    (2, 0, 3),
    (),
    (0, 3),
    (0, 3),
    (0,),  # cond (1,) broadcasts one way onto S = (0,)
    (0, 3),
    (2, 1, 0),
    (),
    (),
    (2, 0),
    (0, 3),
    (0, 3),
    (0, 3),
]


@pytest.mark.parametrize(
    ("shapes", "expected"),
    [
        pytest.param(case[:3], (case[3], exp), id=f"{case[:3]}-{case[3]}")
        for case, exp in zip(EMPTY_CASES, EMPTY_EXPECTED, strict=True)
    ],
)
def test_zero_d_and_zero_size(xp: ModuleType, shapes, expected):
    options, out_shape = expected
    cond = np.ones(shapes[0], dtype=bool)
    then = np.full(shapes[1], 1.5)
    else_ = np.full(shapes[2], -2.5)
    assert asel.select_shape(*shapes, **options) == out_shape
    result = asel.select(*(from_numpy(xp, a) for a in (cond, then, else_)), **options)
    got = to_numpy(result)
    assert got.shape == out_shape
    assert bits_equal(got, oracle_select(cond, then, else_, **options))


def test_zero_d_result_is_array(xp: ModuleType):
    result = asel.select(from_numpy(xp, np.array(False)), from_numpy(xp, np.array(3)), 4)
    assert tuple(result.shape) == ()
    assert to_numpy(result).item() == 4


# ------------------------------------------------------------------ out=


def _out_inputs(xp):
    cond = np.array([[True, False, True], [False, False, True]])
    then = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    else_ = np.array([-1.0, -2.0, -3.0])
    expected = np.array([[1.0, -2.0, 3.0], [-1.0, -2.0, 6.0]])
    return (cond, then, else_, expected), tuple(from_numpy(xp, a) for a in (cond, then, else_))


def test_out_written_and_returned(xp: ModuleType):
    (_, then, else_, expected), (xc, xt, xe) = _out_inputs(xp)
    if not supports_out(xp):
        out = from_numpy(xp, np.zeros((2, 3)))
        with pytest.raises(asel.SelectTypeError, match="out") as info:
            asel.select(xc, xt, xe, out=out)
        msg = str(info.value)
        assert "immutable" in msg or "lazy" in msg or "cannot be written" in msg, msg
        assert bits_equal(to_numpy(out), np.zeros((2, 3)))
        return
    out = from_numpy(xp, np.zeros((2, 3)))
    result = asel.select(xc, xt, xe, out=out)
    assert result is out
    assert bits_equal(to_numpy(out), expected)
    assert bits_equal(to_numpy(xt), then)
    assert bits_equal(to_numpy(xe), else_)


NO_OUT = "immutable/lazy arrays have no out= (refusal tested in test_out_written_and_returned)"
_NO_OUT_MARKS = (
    pytest.mark.skip_xp_backend(Backend.JAX, reason=f"jax: {NO_OUT}"),
    pytest.mark.skip_xp_backend(Backend.DASK, reason=f"dask: {NO_OUT}"),
    pytest.mark.skip_xp_backend(Backend.ARRAY_API_STRICT, reason=f"array_api_strict: {NO_OUT}"),
)


def only_mutable(func):
    """Skip the test for the libraries whose arrays cannot receive ``out=``."""
    for mark in _NO_OUT_MARKS:
        func = mark(func)
    return func


@only_mutable
def test_out_is_then(xp: ModuleType):
    (_, _, _, expected), (xc, xt, xe) = _out_inputs(xp)
    result = asel.select(xc, xt, xe, out=xt)
    assert result is xt
    assert bits_equal(to_numpy(xt), expected)


@only_mutable
def test_out_is_else(xp: ModuleType):
    cond = np.array([[True, False, True], [False, False, True]])
    then = np.array([10.0, 20.0, 30.0])  # broadcast
    else_ = np.array([[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0]])
    expected = np.array([[10.0, -2.0, 30.0], [-4.0, -5.0, 30.0]])
    xc, xt, xe = (from_numpy(xp, a) for a in (cond, then, else_))
    result = asel.select(xc, xt, xe, out=xe)
    assert result is xe
    assert bits_equal(to_numpy(xe), expected)


@only_mutable
def test_out_pdpd_and_scalar(xp: ModuleType):
    cond = np.array([True, False])  # pdpd axis 0 onto (2, 3)
    then = np.arange(6, dtype=np.int16).reshape(2, 3)
    expected = np.array([[0, 1, 2], [-7, -7, -7]], dtype=np.int16)
    xc, xt = from_numpy(xp, cond), from_numpy(xp, then)
    out = from_numpy(xp, np.zeros((2, 3), dtype=np.int16))
    result = asel.select(xc, xt, -7, auto_broadcast="pdpd", axis=0, out=out)
    assert result is out
    assert bits_equal(to_numpy(out), expected)


@only_mutable
def test_out_non_contiguous_view(xp: ModuleType):
    (_, _, _, expected), (xc, xt, xe) = _out_inputs(xp)
    big = from_numpy(xp, np.full((4, 6), 9.0))
    view = big[::2, ::2]
    result = asel.select(xc, xt, xe, out=view)
    assert result is view
    want = np.full((4, 6), 9.0)
    want[::2, ::2] = expected
    assert bits_equal(to_numpy(big), want)
