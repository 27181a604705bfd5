"""The Dask backend: Select as one lazy, chunk-wise ``blockwise`` layer.

``select`` on Dask arrays builds a graph and returns at once: it reads only
``shape``, ``dtype``, ``chunks`` and ``_meta`` of its inputs, so nothing is
computed or persisted during the call, and unknown chunk sizes (NaN) are
accepted wherever Dask's own elementwise operations accept them.

How the graph is built
----------------------
* The core has validated the call and made a :class:`~arrayselect._shapes.SelectPlan`.
  Each input gets a Dask index: its dimensions name the output dimensions they
  line up with (right-aligned for ``"numpy"``/``"none"``; for ``"pdpd"`` where
  :func:`~arrayselect._shapes.pdpd_placement` puts them). No ``reshape`` or
  ``expand_dims`` layer is added, so unknown sizes survive.
* ``then`` and ``else`` are unified the way Dask unifies elementwise operands
  (:func:`dask.array.core.unify_chunks`); ``cond``, when its chunks differ, is
  rechunked to theirs, so the output keeps the chunking of ``then``/``else``
  rather than a refinement imposed by the mask.
* One :func:`dask.array.blockwise` layer (``align_arrays=True``) calls
  :func:`_select_block` on every block. It adds the size-1 dimensions the plan
  asks for (a view) and calls :func:`arrayselect.select` on the blocks, so NumPy
  blocks go to the NumPy backend (the compiled kernel when present) and CuPy
  blocks to the CuPy backend.
* Python scalars become 0-d arrays of the *block* library (NumPy for NumPy
  chunks, CuPy for CuPy chunks) and travel in the graph as literals.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import array_api_compat as compat
import dask.array as da
import numpy as np
from dask.array import core as _da_core
from dask.array import utils as _da_utils

import arrayselect
from arrayselect._backend import Backend, DtypeKind
from arrayselect._errors import ScalarOverflowError, SelectShapeError, SelectValueError
from arrayselect._shapes import SelectPlan, Shape, pdpd_placement

from .numpy_backend import NumpyBackend

__all__ = ["DaskBackend", "create"]

# Dask's functions are untyped; name them once as Any for mypy --strict.
_blockwise: Any = da.blockwise
_unify_chunks: Any = _da_core.unify_chunks
_meta_from_array: Any = _da_utils.meta_from_array

#: Per input: (size-1 dimensions to append to a block, trailing dimensions to drop).
_Layout = tuple[tuple[int, int], tuple[int, int], tuple[int, int]]

# What a Python scalar becomes when both then and else are scalars: Dask follows
# NumPy's default dtypes.
_DEFAULT_DTYPES: dict[type, np.dtype[Any]] = {
    bool: np.dtype(np.bool_),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


def _chunk_library(x: Any) -> str:
    """Top-level module of the block type of Dask array ``x`` (``numpy``, ``cupy``, ...)."""
    return type(x._meta).__module__.partition(".")[0]


def _align_block(x: Any, pad: int, drop: int, name: str) -> Any:
    """Drop ``drop`` trailing size-1 dimensions of block ``x``, then append ``pad`` ones."""
    if not pad and not drop:
        return x
    shape = tuple(x.shape)
    kept = shape[: len(shape) - drop]
    if math.prod(shape[len(kept) :]) != 1:
        raise SelectShapeError(
            f"{name} has trailing dimensions {shape[len(kept) :]} that were unknown when the "
            "graph was built and had to be 1 (auto_broadcast='pdpd' trims trailing 1s), "
            "but they are not"
        )
    return x.reshape(kept + (1,) * pad)


def _select_block(cond: Any, then: Any, else_: Any, *, layout: _Layout) -> Any:
    """Select on one block of each input (the function of the blockwise layer).

    Parameters
    ----------
    cond, then, else_ : array
        Blocks (NumPy, CuPy, ...) or 0-d arrays standing for Python scalars.
    layout : tuple of (int, int)
        Per input: how many size-1 dimensions to append, and how many trailing
        size-1 dimensions to drop, so that plain NumPy-rule broadcasting of the
        three blocks gives the output block.

    Returns
    -------
    array
        The output block, from :func:`arrayselect.select` on the blocks.
    """
    blocks = [
        _align_block(x, pad, drop, name)
        for x, (pad, drop), name in zip(
            (cond, then, else_), layout, ("cond", "then", "else"), strict=True
        )
    ]
    return arrayselect.select(*blocks, cond_broadcast="multidirectional")


class DaskBackend(Backend):
    """Select for Dask arrays: one lazy ``blockwise`` layer over the blocks.

    Dtype queries are those of NumPy (Dask arrays carry NumPy dtypes, whatever
    their block type).
    """

    def __init__(self) -> None:
        self.name = "dask"
        self.supports_out = False
        self.out_refusal = (
            "Dask arrays are lazy, so the result cannot be written into an existing array; "
            "use the returned array (or write it out with dask.array.store)"
        )
        self._dtypes = NumpyBackend()

    def dtype_kind(self, dtype: Any) -> DtypeKind | None:
        try:
            numpy_dtype = np.dtype(dtype)
        except TypeError:  # blocks of a library whose dtypes NumPy does not know
            return None
        return self._dtypes.dtype_kind(numpy_dtype)

    def shape(self, x: Any) -> Shape:
        # Dask marks unknown sizes with NaN; the shape core uses None.
        return tuple(None if d is None or d != d else int(d) for d in x.shape)

    def int_range(self, dtype: Any) -> tuple[int, int]:
        return self._dtypes.int_range(np.dtype(dtype))

    def float_max(self, dtype: Any) -> float:
        return self._dtypes.float_max(np.dtype(dtype))

    def scalar_array(self, value: bool | int | float | complex, dtype: Any, like: Any) -> Any:
        """A 0-d array of ``like``'s *block* library (it is passed to every block)."""
        if dtype is None:
            dtype = _DEFAULT_DTYPES[type(value)]
            if type(value) is int:
                low, high = self.int_range(dtype)
                if not low <= value <= high:
                    raise ScalarOverflowError(
                        f"the Python int {value!r} is out of the range [{low}, {high}] of "
                        f"{dtype}, the default integer dtype it would take"
                    )
        meta = like._meta if isinstance(like, da.Array) else like
        block_xp = compat.array_namespace(meta)
        return block_xp.asarray(value, dtype=dtype)

    def check_devices(self, named: list[tuple[str, Any]]) -> None:
        first_name, first = named[0]
        first_library = _chunk_library(first)
        for name, x in named[1:]:
            library = _chunk_library(x)
            if library != first_library:
                raise SelectValueError(
                    f"inputs must have blocks of one array library (one device), but "
                    f"{first_name} has {first_library} blocks and {name} has {library} "
                    "blocks; convert them explicitly, e.g. x.map_blocks(cupy.asarray) "
                    "(no implicit transfer happens)"
                )

    def select(self, cond: Any, then: Any, else_: Any, plan: SelectPlan, out: Any) -> Any:
        rank = len(plan.out_shape)
        inputs = (("cond", cond), ("then", then), ("else", else_))
        indices: list[tuple[int, ...] | None] = []
        layout: list[tuple[int, int]] = []
        fresh = rank  # index names for dropped dimensions (contracted by blockwise)
        for name, x in inputs:
            src = self.shape(x)
            if plan.mode == "pdpd" and name != "then":
                start, kept = pdpd_placement(name, src, plan.out_shape, plan.axis)
            else:
                start, kept = rank - len(src), len(src)
            drop = len(src) - kept
            layout.append((rank - start - kept, drop))
            if isinstance(x, da.Array):
                indices.append(
                    tuple(range(start, start + kept)) + tuple(range(fresh, fresh + drop))
                )
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
                layout=tuple(layout),
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
