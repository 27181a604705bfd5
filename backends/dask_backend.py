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
from arrayselect.plugin import Backend, NumpyDtypes, SelectPlan, Shape, errors

#: Python scalar operands (exact types), as the core defines them.
PYTHON_SCALARS = Backend.PYTHON_SCALARS

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
        raise errors.SelectShapeError(
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
    errors.SelectShapeError
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
    except errors.SelectShapeError:
        listing = ", ".join(
            f"{name} block {tuple(x.shape)}"
            for name, x in zip(("cond", "then", "else"), blocks, strict=True)
        )
        raise errors.SelectShapeError(
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

    # -- the select family: one blockwise layer each, the NumPy (CuPy) backend per block;
    # an index out of range in select_n raises when the blocks are computed.

    def broadcast_to(self, x: Any, shape: Shape) -> Any:
        return x  # the layer broadcasts the blocks (unknown sizes stay unknown)

    def select_n(self, which: Any, cases: tuple[Any, ...], shape: Shape, out: Any) -> Any:
        dtype = next(c.dtype for c in cases if hasattr(c, "dtype"))
        return _family_layer(_select_n_block, [which, *cases], dtype, "select_n")

    def select_cases(
        self, conds: tuple[Any, ...], choices: tuple[Any, ...], default: Any, shape: Shape
    ) -> Any:
        return _family_layer(
            _select_cases_block,
            [*conds, *choices, default],
            default.dtype,
            "select_cases",
            n=len(conds),
        )

    def apply_where(
        self,
        cond: Any,
        args: tuple[Any, ...],
        f1: Any,
        f2: Any,
        fill_value: Any,
    ) -> Any:
        scalar = fill_value is None or type(fill_value) in PYTHON_SCALARS
        operands = [cond, *args] if scalar else [cond, *args, fill_value]
        return _family_layer(
            _apply_where_block,
            operands,
            None,
            "apply_where",
            f1=f1,
            f2=f2,
            fill=fill_value if scalar else None,
            fill_block=not scalar,
        )

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
            raise errors.SelectShapeError(
                f"Dask cannot line up the chunks of cond {cond.chunks}, then "
                f"{getattr(then, 'chunks', '(scalar)')} and else "
                f"{getattr(else_, 'chunks', '(scalar)')}: {exc}"
            ) from exc


def _select_n_block(which: Any, *cases: Any) -> Any:
    return arrayselect.select_n(which, *cases)


def _select_cases_block(*blocks: Any, n: int) -> Any:
    return arrayselect.select_cases(list(blocks[:n]), list(blocks[n:-1]), blocks[-1])


def _apply_where_block(
    cond: Any, *blocks: Any, f1: Any, f2: Any, fill: Any, fill_block: bool
) -> Any:
    if fill_block:  # an array fill_value: the last block
        fill, blocks = blocks[-1], blocks[:-1]
    if f2 is not None:
        return arrayselect.apply_where(cond, blocks, f1, f2)
    return arrayselect.apply_where(cond, blocks, f1, fill_value=fill)


def _family_layer(fn: Any, operands: list[Any], dtype: Any, name: str, **kwargs: Any) -> Any:
    """One ``blockwise`` layer calling ``fn`` on the blocks of ``operands``.

    The core has checked that the operands broadcast together (NumPy rules): they
    are right-aligned, and Dask lines up their chunks (size-1 dimensions are
    broadcast, unknown sizes kept); 0-d block-library arrays travel as literals.
    ``dtype=None`` lets Dask find it by calling ``fn`` on empty blocks.
    """
    arrays = [x for x in operands if isinstance(x, da.Array)]
    rank = max(x.ndim for x in arrays)
    args: list[Any] = []
    for x in operands:
        args += [x, tuple(range(rank - x.ndim, rank)) if isinstance(x, da.Array) else None]
    if dtype is None:  # what fn makes of empty blocks
        empty = [_meta_from_array(x) if isinstance(x, da.Array) else x for x in operands]
        meta = fn(*empty, **kwargs)
        dtype = meta.dtype
    else:
        meta = _meta_from_array(arrays[0], ndim=rank, dtype=dtype)
    try:
        return _blockwise(
            fn,
            tuple(range(rank)),
            *args,
            dtype=dtype,
            meta=meta,
            align_arrays=True,
            concatenate=True,
            token=name,
            **kwargs,
        )
    except ValueError as exc:
        chunks = ", ".join(str(x.chunks) for x in arrays)
        raise errors.SelectShapeError(
            f"Dask cannot line up the chunks {chunks} for {name}: {exc}"
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
