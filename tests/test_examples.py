"""Every example of the seed specifications and of SPEC §3, typed from the documents.

Shapes are checked through ``select_shape`` and through ``select`` on real
arrays of every backend; values of the two worked examples (OpenVINO 3x2,
DirectML 2x2 with a uint8 cond) are typed from the documents.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from oracle import bits_equal, oracle_select
from xp_helpers import from_numpy, numpy_dtype, to_numpy

import arrayselect as asel

S = (2, 3, 4, 5)

# (cond, then, else, options, expected shape or None for "error"), from SPEC §3
# and the oneDNN seeds (000, 003): "cond={4, 5}, dst_shape={2, 3, 4, 5} => ...".
NUMPY_EXAMPLES = [
    pytest.param((4, 5), S, S, {}, S, id="onednn-cond(4,5)"),
    pytest.param((3, 1, 5), S, S, {}, S, id="onednn-cond(3,1,5)"),
    pytest.param((3, 5), S, S, {}, None, id="onednn-cond(3,5)-invalid"),
    pytest.param((2, 1, 1, 1, 1), S, S, {}, None, id="spec-cond-rank-too-high"),
    pytest.param((1, 1, 3), (1, 3, 1), (3, 1, 1), {}, None, id="spec-cond-enlarges-uni"),
    pytest.param(
        (1, 1, 3),
        (1, 3, 1),
        (3, 1, 1),
        {"cond_broadcast": "multidirectional"},
        (3, 3, 3),
        id="spec-cond-enlarges-multi",
    ),
    # Step 1 alone: then and else broadcast to each other by NumPy rules.
    pytest.param((), (2, 1), (3,), {}, (2, 3), id="then-else-numpy"),
    pytest.param((4, 5), (3, 1, 5), (2, 1, 4, 1), {}, S, id="then-else-to-S"),
    pytest.param((), (2, 3), (4, 3), {}, None, id="then-else-clash"),
]

# pdpd, SPEC §3: "Examples with then (2,3,4,5): ...". Each src is tried as else
# (cond = ()) and as cond (else = ()).
PDPD_EXAMPLES = [
    pytest.param((3, 4), 1, S, True, id="(3,4)-axis1"),
    pytest.param((3, 1), 1, S, True, id="(3,1)-axis1"),
    pytest.param((4, 5), -1, S, True, id="(4,5)-axis-1"),
    pytest.param((4, 5), 2, S, True, id="(4,5)-axis2"),
    pytest.param((1, 3), 0, S, True, id="(1,3)-axis0"),
    pytest.param((), -1, S, True, id="()"),
    pytest.param((5,), -1, S, True, id="(5,)"),
    pytest.param((3,), -1, S, False, id="(3,)-axis-1-invalid"),
    pytest.param((3, 1), 1, (2, 3), True, id="then(2,3)-(3,1)-axis1-trailing-1"),
]


def _arrays(xp: ModuleType, cond_shape, then_shape, else_shape, dtype="int32"):
    rng = np.random.default_rng(0)
    c = rng.integers(0, 2, size=cond_shape).astype(bool)
    t = rng.integers(-100, 100, size=then_shape).astype(dtype)
    e = rng.integers(-100, 100, size=else_shape).astype(dtype)
    return (c, t, e), (from_numpy(xp, c), from_numpy(xp, t), from_numpy(xp, e))


def _check(xp, shapes, options, expected):
    (c, t, e), (xc, xt, xe) = _arrays(xp, *shapes)
    if expected is None:
        with pytest.raises(asel.SelectShapeError):
            asel.select(xc, xt, xe, **options)
        return
    result = asel.select(xc, xt, xe, **options)
    got = to_numpy(result)
    assert got.shape == expected
    assert bits_equal(got, oracle_select(c, t, e, **options))


@pytest.mark.parametrize(("cond", "then", "else_", "options", "expected"), NUMPY_EXAMPLES)
def test_numpy_examples_shape(cond, then, else_, options, expected):
    if expected is None:
        with pytest.raises(asel.SelectShapeError):
            asel.select_shape(cond, then, else_, **options)
    else:
        assert asel.select_shape(cond, then, else_, **options) == expected


@pytest.mark.parametrize(("cond", "then", "else_", "options", "expected"), NUMPY_EXAMPLES)
def test_numpy_examples_arrays(xp, cond, then, else_, options, expected):
    _check(xp, (cond, then, else_), options, expected)


def test_spec_cond_rank_too_high_message():
    with pytest.raises(asel.SelectShapeError, match=r"cond") as info:
        asel.select_shape((2, 1, 1, 1, 1), S, S)
    assert "(2, 1, 1, 1, 1)" in str(info.value)


def test_spec_error_message_example():
    # SPEC §7: "cond shape (3, 5) cannot be broadcast one way onto (2, 3, 4, 5):
    # dimension -2 is 3, expected 4 or 1"
    with pytest.raises(asel.SelectShapeError) as info:
        asel.select_shape((3, 5), S, S)
    msg = str(info.value)
    for part in ("cond", "(3, 5)", "(2, 3, 4, 5)", "-2", "3", "4 or 1", "numpy"):
        assert part in msg, (part, msg)


@pytest.mark.parametrize(("src", "axis", "then", "ok"), PDPD_EXAMPLES)
@pytest.mark.parametrize("role", ["else", "cond"])
def test_pdpd_examples_shape(src, axis, then, ok, role):
    shapes = (src, then, ()) if role == "cond" else ((), then, src)
    if ok:
        assert asel.select_shape(*shapes, auto_broadcast="pdpd", axis=axis) == then
    else:
        with pytest.raises(asel.SelectShapeError, match=role):
            asel.select_shape(*shapes, auto_broadcast="pdpd", axis=axis)


@pytest.mark.parametrize(("src", "axis", "then", "ok"), PDPD_EXAMPLES)
@pytest.mark.parametrize("role", ["else", "cond", "both"])
def test_pdpd_examples_arrays(xp, src, axis, then, ok, role):
    shapes = {"else": ((), then, src), "cond": (src, then, ()), "both": (src, then, src)}[role]
    _check(xp, shapes, {"auto_broadcast": "pdpd", "axis": axis}, then if ok else None)


def test_pdpd_axis_minus_one_uses_untrimmed_rank():
    # SPEC §3 pdpd step 3: a = rank(then) - rank(src) for axis -1, with the
    # rank of src itself (OpenVINO broadcast rules: "axis = rank(A) - rank(B)").
    # then (2, 3), src (3, 1): a = 0, trimmed src (3,) meets then's 2 -> error;
    # with axis=1 the same src fits (the SPEC's trailing-1 example).
    with pytest.raises(asel.SelectShapeError, match="else"):
        asel.select_shape((), (2, 3), (3, 1), auto_broadcast="pdpd")
    assert asel.select_shape((), (2, 3), (3, 1), auto_broadcast="pdpd", axis=1) == (2, 3)
    # then (2, 3, 4, 5), src (5, 1): a = 2 -> (5,) meets then's 4 -> error.
    with pytest.raises(asel.SelectShapeError, match="cond"):
        asel.select_shape((5, 1), S, (), auto_broadcast="pdpd")
    # ... while (4, 1) at a = 2 fits (trailing 1 meets 5).
    assert asel.select_shape((4, 1), S, (), auto_broadcast="pdpd") == S


NONE_EXAMPLES = [
    pytest.param((3, 2), (3, 2), (3, 2), (3, 2), id="identical"),
    pytest.param((), (), (), (), id="0-d"),
    pytest.param((0, 2), (0, 2), (0, 2), (0, 2), id="zero-size"),
    pytest.param((3, 1), (3, 2), (3, 2), None, id="cond-differs"),
    pytest.param((3, 2), (2,), (3, 2), None, id="then-rank"),
    pytest.param((3, 2), (3, 2), (1, 3, 2), None, id="else-rank"),
]


@pytest.mark.parametrize(("cond", "then", "else_", "expected"), NONE_EXAMPLES)
def test_none_examples(xp, cond, then, else_, expected):
    if expected is None:
        with pytest.raises(asel.SelectShapeError):
            asel.select_shape(cond, then, else_, auto_broadcast="none")
    else:
        assert asel.select_shape(cond, then, else_, auto_broadcast="none") == expected
    _check(xp, (cond, then, else_), {"auto_broadcast": "none"}, expected)


def test_docstring_examples_of_select_shape():
    # SPEC §2/§3 consequences: unknown dims are None.
    assert asel.select_shape((3, 1, 5), S, S) == S
    assert asel.select_shape((3, 1), S, (3, 4), auto_broadcast="pdpd", axis=1) == S
    assert asel.select_shape((None, 5), (2, 3, 1, 5), (4, 1)) == S


# ----------------------------------------------------------------------- values

OPENVINO_DTYPES = ["int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("dtype", OPENVINO_DTYPES)
@pytest.mark.parametrize("mode", ["numpy", "none", "pdpd"])
def test_openvino_3x2_example(xp, dtype, mode):
    """Seeds 001/004: the XML example, values typed from the document."""
    dt = numpy_dtype(dtype)
    cond = np.array([[False, False], [True, False], [True, True]])
    then = np.array([[-1, 0], [1, 2], [3, 4]]).astype(dt)
    else_ = np.array([[11, 10], [9, 8], [7, 6]]).astype(dt)
    expected = np.array([[11, 10], [1, 8], [3, 4]]).astype(dt)
    result = asel.select(
        from_numpy(xp, cond), from_numpy(xp, then), from_numpy(xp, else_), auto_broadcast=mode
    )
    got = to_numpy(result)
    assert got.shape == (3, 2)
    assert bits_equal(got, expected)


DIRECTML_DTYPES = [
    "float64",
    "float32",
    "float16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint64",
    "uint32",
    "uint16",
    "uint8",
]


@pytest.mark.parametrize("dtype", DIRECTML_DTYPES)
def test_directml_2x2_example(xp, dtype):
    """Seed 002: uint8 ConditionTensor, nonzero selects ATensor."""
    dt = numpy_dtype(dtype)
    cond = np.array([[1, 0], [1, 1]], dtype=np.uint8)
    a = np.array([[1, 2], [3, 4]]).astype(dt)
    b = np.array([[9, 8], [7, 6]]).astype(dt)
    expected = np.array([[1, 8], [3, 4]]).astype(dt)
    result = asel.select(from_numpy(xp, cond), from_numpy(xp, a), from_numpy(xp, b))
    assert bits_equal(to_numpy(result), expected)


def test_docstring_value_examples(xp):
    # The select() docstring's second example, typed: uint8 cond, scalar else.
    cond = from_numpy(xp, np.array([1, 0, 2], dtype=np.uint8))
    then = from_numpy(xp, np.array([0.0, 1.0, 2.0]))
    got = to_numpy(asel.select(cond, then, -1.0))
    assert bits_equal(got, np.array([0.0, -1.0, 2.0]))
