"""The Dask backend: Select as one lazy, chunk-wise ``blockwise`` layer.

``select`` on Dask arrays builds a graph and returns at once: it reads only
``shape``, ``dtype``, ``chunks`` and ``_meta`` of its inputs, so nothing is
computed or persisted during the call, and unknown chunk sizes (NaN) are
accepted wherever Dask's own elementwise operations accept them.

How the graph is built
----------------------
* The core has validated the call and made a :class:`~arrayselect.plugin.SelectPlan`.
  Each input gets a Dask index: its dimensions name the output dimensions the
  plan's ``dims`` say they go to (dropped trailing dimensions get indices of
  their own, contracted away). No ``reshape`` or ``expand_dims`` layer is
  added, so unknown sizes survive.
* ``then`` and ``else`` are unified the way Dask unifies elementwise operands
  (:func:`dask.array.core.unify_chunks`); ``cond``, when its chunks differ, is
  rechunked to theirs, so the output keeps the chunking of ``then``/``else``
  rather than a refinement imposed by the mask.
* One :func:`dask.array.blockwise` layer (``align_arrays=True``) calls
  :func:`_select_block` on every block. It places each block's dimensions where
  the plan says (a view) and calls :func:`arrayselect.select` on the blocks, so
  NumPy blocks go to the NumPy backend (the compiled kernel) and CuPy blocks to
  the CuPy backend.
* Python scalars become 0-d arrays of the *block* library (NumPy for NumPy
  chunks, CuPy for CuPy chunks) and travel in the graph as literals.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import array_api_compat as compat
import dask.array as da
from dask.array import core as _da_core
from dask.array import utils as _da_utils

import arrayselect
from arrayselect.plugin import (
    Backend,
    NumpyDtypes,
    SelectPlan,
    SelectShapeError,
    Shape,
)

__all__ = ["DaskBackend", "create"]

# Dask's functions are untyped; name them once as Any for mypy --strict.
_blockwise: Any = da.blockwise
_unify_chunks: Any = _da_core.unify_chunks
_meta_from_array: Any = _da_utils.meta_from_array


def _chunk_library(x: Any) -> str:
    """Top-level module of the block type of Dask array ``x`` (``numpy``, ``cupy``, ...)."""
    return type(x._meta).__module__.partition(".")[0]


def _align_block(x: Any, dims: tuple[int, ...], rank: int, name: str) -> Any:
    """Block ``x`` with its dimensions placed at ``dims`` of ``rank`` (a view).

    Trailing dimensions beyond ``len(dims)`` are dropped: the plan says they are
    size 1, which is checked here when their size was unknown at graph time.
    """
    shape = tuple(x.shape)
    kept = shape[: len(dims)]
    if math.prod(shape[len(dims) :]) != 1:
        raise SelectShapeError(
            f"{name} has trailing dimensions {shape[len(dims) :]} that were unknown when the "
            "graph was built and had to be 1 (auto_broadcast='pdpd' trims trailing 1s), "
            "but they are not"
        )
    placed = [1] * rank
    for size, d in zip(kept, dims, strict=True):
        placed[d] = size
    return x if tuple(placed) == shape else x.reshape(tuple(placed))


def _select_block(cond: Any, then: Any, else_: Any, *, dims: Any, rank: int) -> Any:
    """Select on one block of each input (the function of the blockwise layer).

    Parameters
    ----------
    cond, then, else_ : array
        Blocks (NumPy, CuPy, ...) or 0-d arrays standing for Python scalars.
    dims : tuple of tuple of int
        The plan's ``dims``: where each input's dimensions go among the output's.
    rank : int
        The output's rank.

    Returns
    -------
    array
        The output block, from :func:`arrayselect.select` on the placed blocks.

    Raises
    ------
    SelectShapeError
        When sizes that were unknown while the graph was built turn out not to
        line up.
    """
    blocks = [
        _align_block(x, d, rank, name) if x.ndim else x
        for x, d, name in zip((cond, then, else_), dims, ("cond", "then", "else"), strict=True)
    ]
    try:
        # Placed at full rank, the blocks broadcast together by NumPy rules.
        return arrayselect.select(*blocks, cond_broadcast="multidirectional")
    except SelectShapeError:
        listing = ", ".join(
            f"{name} block {tuple(x.shape)}"
            for name, x in zip(("cond", "then", "else"), blocks, strict=True)
        )
        raise SelectShapeError(
            f"at compute time the blocks do not line up ({listing}, each placed at the output's "
            "rank): sizes that were unknown when the graph was built turned out to differ "
            "where the call's broadcasting needs them equal or 1"
        ) from None


class DaskBackend(NumpyDtypes, Backend):
    """Select for Dask arrays: one lazy ``blockwise`` layer over the blocks.

    Dtype queries are those of NumPy (Dask arrays carry NumPy dtypes, whatever
    their block type, and follow NumPy's default dtypes).
    """

    name = "dask"
    supports_out = False
    out_refusal = (
        "Dask arrays are lazy, so the result cannot be written into an existing array; "
        "use the returned array (or write it out with dask.array.store)"
    )
    device_hint = "convert the blocks explicitly, e.g. x.map_blocks(cupy.asarray)"

    def shape(self, x: Any) -> Shape:
        # Dask marks unknown sizes with NaN; the shape core uses None.
        return tuple(None if d is None or d != d else int(d) for d in x.shape)

    def device_of(self, x: Any) -> str:
        """The library of ``x``'s blocks (NumPy blocks live on the host, CuPy on a GPU)."""
        return _chunk_library(x)

    def device_text(self, device: Any) -> str:
        return f"{device} blocks"

    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        """A 0-d array of ``like``'s *block* library (it is passed to every block)."""
        meta = like._meta if isinstance(like, da.Array) else like
        block_xp = compat.array_namespace(meta)
        return block_xp.asarray(value, dtype=dtype)

    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        rank = len(plan.out_shape)
        indices: list[tuple[int, ...] | None] = []
        fresh = rank  # index names for dropped dimensions (contracted by blockwise)
        for x, dims in zip((cond, then, else_), plan.dims, strict=True):
            if isinstance(x, da.Array):
                drop = x.ndim - len(dims)
                indices.append(tuple(dims) + tuple(range(fresh, fresh + drop)))
                fresh += drop
            else:
                indices.append(None)  # a 0-d block-library array: a literal in the graph

        meta = _meta_from_array(then, ndim=rank, dtype=then.dtype)
        try:
            then, else_, cond = _follow_values(
                then, indices[1], else_, indices[2], cond, indices[0]
            )
            args: list[Any] = []
            for x, index in zip((cond, then, else_), indices, strict=True):
                args += [x, index]
            return _blockwise(
                _select_block,
                tuple(range(rank)),
                *args,
                dtype=then.dtype,
                meta=meta,
                align_arrays=True,
                concatenate=True,
                token="select",
                dims=plan.dims,
                rank=rank,
            )
        except ValueError as exc:
            # Dask refuses to line up unknown chunk sizes with known ones (as da.where does).
            raise SelectShapeError(
                f"Dask cannot line up the chunks of cond {cond.chunks}, then "
                f"{getattr(then, 'chunks', '(scalar)')} and else "
                f"{getattr(else_, 'chunks', '(scalar)')}: {exc}"
            ) from exc


def _follow_values(
    then: Any,
    then_index: tuple[int, ...] | None,
    else_: Any,
    else_index: tuple[int, ...] | None,
    cond: Any,
    cond_index: tuple[int, ...] | None,
) -> tuple[Any, Any, Any]:
    """Unify ``then``/``else`` chunks as Dask does; rechunk ``cond`` to follow them.

    Returns ``then``, ``else_`` and ``cond``, rechunked where needed (lazily).
    Where ``cond`` has unknown sizes, or is the only input spanning a dimension,
    its chunks are left alone and ``blockwise`` unifies as Dask does.
    """
    pairs: list[Any] = []
    for x, index in ((then, then_index), (else_, else_index)):
        if index is not None:
            pairs += [x, index]
    if not pairs:
        return then, else_, cond
    chunkss, unified = _unify_chunks(*pairs, warn=False)
    it = iter(unified)
    then = next(it) if then_index is not None else then
    else_ = next(it) if else_index is not None else else_
    if cond_index is None:
        return then, else_, cond
    target = list(cond.chunks)
    for n, j in enumerate(cond_index):
        size = cond.shape[n]
        chunks = chunkss.get(j)
        if chunks is None or not size > 1 or any(c != c for c in chunks):
            continue  # broadcast, dropped, unknown, or spanned by cond alone
        if any(c != c for c in cond.chunks[n]) or sum(chunks) != size:
            continue
        target[n] = tuple(chunks)
    if tuple(target) != cond.chunks:
        cond = cond.rechunk(tuple(target))
    return then, else_, cond


def create(xp: ModuleType) -> DaskBackend:
    """Entry-point factory: the Dask backend (``xp``, Dask's namespace, is not needed)."""
    return DaskBackend()
