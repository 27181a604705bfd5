"""``pdpd_placement``: where a pdpd-fitted input goes when sizes may be unknown."""

from __future__ import annotations

import pytest

from arrayselect import SelectShapeError
from arrayselect._shapes import make_plan, pdpd_placement


@pytest.mark.parametrize(
    ("src", "then", "axis", "expected"),
    [
        ((3, 4), (2, 3, 4, 5), 1, (1, 2)),
        ((3, 1), (2, 3, 4, 5), 1, (1, 1)),  # the trailing 1 is trimmed and dropped
        ((4, 5), (2, 3, 4, 5), -1, (2, 2)),
        ((4, 1), (2, 3, 4, 5), -1, (2, 1)),  # right-aligned untrimmed; the 1 is dropped
        ((), (2, 3), -1, (2, 0)),
        ((3, 1), (2, 3), 1, (1, 1)),  # trimmed: no room for the 1 after axis 1
        ((3, None), (3, 4), -1, (0, 2)),  # the unknown may be 4: it is kept
        ((3, None), (2, 3), 1, (1, 1)),  # only a size of 1 fits after axis 1: dropped
        ((None,), (2, 3), -1, (1, 1)),
        ((None, 3), (2, None, 3), -1, (1, 2)),
        ((1, None), (2, 3), -1, (0, 2)),  # if None is 1 all of src is 1: no ambiguity
        ((3, None), (2, 3, 3), 1, (1, 2)),  # explicit axis: never ambiguous
    ],
)
def test_placement(
    src: tuple[int | None, ...],
    then: tuple[int | None, ...],
    axis: int,
    expected: tuple[int, int],
) -> None:
    make_plan(src, then, (), "pdpd", axis, "unidirectional")  # the shapes are valid
    assert pdpd_placement("cond", src, then, axis) == expected


def test_unknown_trailing_sizes_do_not_move_the_start() -> None:
    # (3, n) onto (2, 3, 3): at dimension 1 whether or not n is 1 (the untrimmed rank counts).
    make_plan((3, None), (2, 3, 3), (), "pdpd", -1, "unidirectional")
    assert pdpd_placement("cond", (3, None), (2, 3, 3), -1) == (1, 2)
    assert pdpd_placement("cond", (3, 1), (2, 3, 3), -1) == (1, 1)


def test_plan_records_mode_and_axis() -> None:
    plan = make_plan((3,), (2, 3), (3,), "pdpd", 1, "unidirectional")
    assert (plan.mode, plan.axis) == ("pdpd", 1)
    assert make_plan((3,), (2, 3), (3,), "numpy", -1, "unidirectional").mode == "numpy"


def test_invalid_shapes_raise_the_plan_error() -> None:
    with pytest.raises(SelectShapeError, match="dimension 0 of else is 5"):
        pdpd_placement("else", (5,), (2, 3), -1)
