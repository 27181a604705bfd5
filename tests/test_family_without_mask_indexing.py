"""The select family on arrays without boolean indexing or data-dependent shapes.

array-api-strict can switch both capabilities off (``ArrayAPIStrictFlags``), the
way array-api-extra's own tests stand for JAX-like libraries; PyTorch ``meta``
tensors have shapes and dtypes but no values. ``apply_where`` then takes
array-api-extra's route (``where`` of both sides), and ``select_n`` reads no
mask-indexed values. The oracle is ``array_api_extra.apply_where`` (run under the
same flags), NumPy, and ``torch.where`` for meta shapes and dtypes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from oracle import bits_equal, oracle_select_cases, oracle_select_n

import arrayselect as asel

xps = pytest.importorskip("array_api_strict")
xpx = pytest.importorskip("array_api_extra")

_FLAGS = [
    {"boolean_indexing": False},
    {"data_dependent_shapes": False},
    {"boolean_indexing": False, "data_dependent_shapes": False},
]


@pytest.fixture(params=_FLAGS, ids=lambda f: "+".join(f))
def strict(request: pytest.FixtureRequest) -> Iterator[None]:
    with xps.ArrayAPIStrictFlags(**request.param):
        yield


def _np(x: Any) -> np.ndarray:
    return np.asarray(x._array)  # array-api-strict's NumPy array (no __array__ there)


def _forms() -> list[tuple[str, Any]]:
    rng = np.random.default_rng(7)
    x = xps.asarray(rng.standard_normal((3, 4)))
    y = xps.asarray(rng.standard_normal(4).astype(np.float32))
    cond = x > 0
    return [
        ("fill", ((cond, x, xps.sqrt), {"fill_value": -1.5})),
        ("int fill", ((cond, x, xps.sqrt), {"fill_value": 2})),
        ("f2", ((cond, x, xps.sqrt, lambda a: a * 2), {})),
        ("two args", ((cond, (x, y), lambda a, b: a * b, lambda a, b: a - b), {})),
        ("array fill", ((cond, x, xps.sqrt), {"fill_value": y})),
    ]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # sqrt of the negatives, as in xpx
@pytest.mark.parametrize("form", [name for name, _ in _forms()])
def test_apply_where_without_mask_indexing_matches_array_api_extra(strict: None, form: str) -> None:
    args, kwargs = dict(_forms())[form]
    got = asel.apply_where(*args, **kwargs)
    want = xpx.apply_where(*args, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert bits_equal(_np(got), _np(want))


@pytest.mark.parametrize(("dtype", "fill"), [("uint8", 300), ("int8", -129), ("float32", 1e300)])
def test_apply_where_fill_value_out_of_range_without_mask_indexing(
    strict: None, dtype: str, fill: Any
) -> None:
    """The fill value's range is checked on this route too (``where`` would convert it)."""
    x = xps.asarray(np.array([1, 2, 3], dtype))
    with pytest.raises(asel.ScalarOverflowError, match="fill_value="):
        asel.apply_where(x > 1, x, lambda a: a, fill_value=fill)


def test_select_n_and_select_cases_without_mask_indexing(strict: None) -> None:
    which_np = np.array([0, 2, 1, 2, 0], dtype=np.int8)
    cases_np = [np.arange(5.0) * k for k in (1, 10, 100)]
    which, cases = xps.asarray(which_np), [xps.asarray(c) for c in cases_np]
    assert bits_equal(_np(asel.select_n(which, *cases)), oracle_select_n(which_np, cases_np))
    conds_np = [which_np == 1, which_np == 2]
    got = asel.select_cases([xps.asarray(c) for c in conds_np], cases[:2], -1.0)
    assert bits_equal(_np(got), oracle_select_cases(conds_np, cases_np[:2], np.float64(-1.0)))


@pytest.mark.parametrize("bad", [3, -1])
def test_select_n_index_error_without_mask_indexing(strict: None, bad: int) -> None:
    which = xps.asarray([0, 1, bad, 1], dtype=xps.int8)
    x = xps.asarray([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(asel.SelectValueError, match=f"which holds {bad}, but select_n has 2"):
        asel.select_n(which, x, x)


# --------------------------------------------------------------------------- torch meta


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


def _meta(torch: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    return torch.empty(shape, dtype=dtype, device="meta")


@pytest.mark.parametrize("portable", [False, True], ids=["native", "portable"])
def test_family_on_torch_meta_tensors(torch: Any, portable: bool) -> None:
    x = _meta(torch, (2, 3), torch.float32)
    y = _meta(torch, (3,), torch.float64)
    cond = _meta(torch, (2, 1), torch.bool)
    which = _meta(torch, (2, 3), torch.int64)
    with asel.force_portable(portable):
        results = {
            "apply_where fill": (
                asel.apply_where(cond, x, torch.exp, fill_value=0.0),
                xpx.apply_where(cond, x, torch.exp, fill_value=0.0),
            ),
            "apply_where f2": (
                asel.apply_where(cond, (x, y), torch.add, torch.sub),
                xpx.apply_where(cond, (x, y), torch.add, torch.sub),
            ),
            "apply_where array fill": (
                asel.apply_where(cond, x, torch.exp, fill_value=y),
                xpx.apply_where(cond, x, torch.exp, fill_value=y),
            ),
            "select_n int": (asel.select_n(which, x, x + 1), torch.where(cond, x, x)),
            "select_n bool": (asel.select_n(cond, x, x + 1), torch.where(cond, x, x)),
            "select_cases": (asel.select_cases([cond], [x], 0.0), torch.where(cond, x, 0.0)),
            "where": (asel.where(cond, x, y), torch.where(cond, x, y)),
        }
    for name, (got, want) in results.items():
        assert got.device.type == "meta", name
        assert (got.shape, got.dtype) == (want.shape, want.dtype), name
