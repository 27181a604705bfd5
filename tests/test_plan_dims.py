"""``SelectPlan.dims``: where each input's dimensions go, in every mode.

Expected placements are written out by hand from SPEC §3 (never taken from
arrayselect): right-aligned for ``"numpy"``/``"none"``; for ``"pdpd"`` the
fitted input starts at ``axis`` (or at ``rank(then) - rank(src)`` for
``axis=-1``, untrimmed) and its trimmed trailing 1s are dropped.
"""

from __future__ import annotations

import pytest

from arrayselect import SelectShapeError
from arrayselect._rules.shapes import make_plan


@pytest.mark.parametrize(
    ("src", "then", "axis", "start", "kept"),
    [
        ((3, 4), (2, 3, 4, 5), 1, 1, 2),
        ((3, 1), (2, 3, 4, 5), 1, 1, 1),  # the trailing 1 is trimmed and dropped
        ((4, 5), (2, 3, 4, 5), -1, 2, 2),
        ((4, 1), (2, 3, 4, 5), -1, 2, 1),  # right-aligned untrimmed; the 1 is dropped
        ((), (2, 3), -1, 2, 0),
        ((3, 1), (2, 3), 1, 1, 1),  # trimmed: no room for the 1 after axis 1
        ((3, None), (3, 4), -1, 0, 2),  # the unknown may be 4: it is kept
        ((3, None), (2, 3), 1, 1, 1),  # only a size of 1 fits after axis 1: dropped
        ((None,), (2, 3), -1, 1, 1),
        ((None, 3), (2, None, 3), -1, 1, 2),
        ((1, None), (2, 3), -1, 0, 2),  # if None is 1 all of src is 1: no ambiguity
        ((3, None), (2, 3, 3), 1, 1, 2),  # explicit axis: never ambiguous
    ],
)
def test_pdpd_placement(
    src: tuple[int | None, ...], then: tuple[int | None, ...], axis: int, start: int, kept: int
) -> None:
    plan = make_plan(src, then, (), "pdpd", axis, "unidirectional")
    assert plan.dims[0] == tuple(range(start, start + kept))
    assert plan.dims[1] == tuple(range(len(then)))
    assert plan.dims[2] == ()


def test_unknown_trailing_sizes_do_not_move_the_start() -> None:
    # (3, n) onto (2, 3, 3): at dimension 1 whether or not n is 1 (the untrimmed rank counts).
    assert make_plan((3, None), (2, 3, 3), (), "pdpd", -1, "unidirectional").dims[0] == (1, 2)
    assert make_plan((3, 1), (2, 3, 3), (), "pdpd", -1, "unidirectional").dims[0] == (1,)


@pytest.mark.parametrize("mode", ["numpy", "none"])
def test_right_aligned_modes(mode: str) -> None:
    shapes = ((1, 5), (2, 3, 1, 5), (3, 4, 5)) if mode == "numpy" else ((2, 3),) * 3
    plan = make_plan(*shapes, mode, -1, "unidirectional")  # type: ignore[arg-type]
    rank = len(plan.out_shape)
    for src, dims, aligned in zip(shapes, plan.dims, plan.aligned, strict=True):
        assert dims == tuple(range(rank - len(src), rank))
        assert aligned is None  # NumPy-rule broadcasting as it is


def test_aligned_shapes_follow_dims() -> None:
    plan = make_plan((3, 1), (2, 3, 4, 5), (3, 4), "pdpd", 1, "unidirectional")
    assert plan.out_shape == (2, 3, 4, 5)
    assert plan.dims == ((1,), (0, 1, 2, 3), (1, 2))
    assert plan.aligned == ((1, 3, 1, 1), None, (1, 3, 4, 1))


def test_plans_do_not_record_the_mode() -> None:
    # Backends never branch on the mode: equal placements give equal plans.
    pdpd = make_plan((2, 3), (2, 3), (3,), "pdpd", -1, "unidirectional")
    numpy = make_plan((2, 3), (2, 3), (3,), "numpy", -1, "unidirectional")
    assert pdpd == numpy and hash(pdpd) == hash(numpy)


def test_invalid_shapes_raise_the_plan_error() -> None:
    with pytest.raises(SelectShapeError, match="dimension 0 of else is 5"):
        make_plan((), (2, 3), (5,), "pdpd", -1, "unidirectional")
