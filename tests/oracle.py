"""An independent oracle for Select: SPEC §3 shape rules and element-by-element selection.

Nothing here imports :mod:`arrayselect`; the rules are re-implemented from
SPEC.md §3 (and the OpenVINO broadcast-rules text it cites) in the plainest
way possible, so that the library is never compared against itself.

* :func:`oracle_shape` returns the output shape or raises
  :class:`OracleShapeError`.
* :func:`oracle_select_n` and :func:`oracle_select_cases` do the same for the
  select family (``lax.select_n``'s and ``np.select``'s meaning, all operands
  broadcast together by NumPy rules).
* :func:`oracle_select` computes every output element by explicit index
  arithmetic (one Python loop over the output indices), copying raw bytes so
  that NaN payloads, signed zeros and subnormals are carried over exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "OracleShapeError",
    "bits_equal",
    "oracle_broadcast",
    "oracle_index_maps",
    "oracle_select",
    "oracle_select_cases",
    "oracle_select_n",
    "oracle_shape",
]

Shape = tuple[int, ...]
IndexMap = Callable[[Shape], Shape]


class OracleShapeError(Exception):
    """The shapes are invalid under the mode (SPEC §3 says: error)."""


# --------------------------------------------------------------------------- shapes


def _numpy_two(a: Shape, b: Shape) -> Shape:
    """NumPy broadcast of two shapes: right-align, pad with 1s, equal or 1."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + a
    b = (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a, b, strict=True):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise OracleShapeError(f"numpy broadcast: {x} vs {y}")
    return tuple(out)


def _one_way(src: Shape, target: Shape) -> None:
    """``src`` broadcasts one way into ``target`` (right-aligned, equal or 1)."""
    if len(src) > len(target):
        raise OracleShapeError("one-way: rank too high")
    offset = len(target) - len(src)
    for k, d in enumerate(src):
        if d != 1 and d != target[offset + k]:
            raise OracleShapeError(f"one-way: dim {k} is {d}, target {target[offset + k]}")


def _pdpd_placement(src: Shape, then_rank: int, axis: int) -> tuple[int, int]:
    """Start ``a`` and trimmed length ``t`` of ``src`` fitted onto ``then`` (pdpd).

    SPEC §3 pdpd: rank(src) <= rank(then); trailing 1s are ignored when fitting;
    a = axis, or a = rank(then) - rank(src) for axis == -1 (rank of the
    untrimmed src, as in OpenVINO's broadcast rules: ``axis = rank(A) - rank(B)``);
    axis < -1 is an error; a + len(trimmed src) <= rank(then).
    """
    if len(src) > then_rank:
        raise OracleShapeError("pdpd: rank too high")
    if axis < -1:
        raise OracleShapeError("pdpd: axis < -1")
    t = len(src)
    while t > 0 and src[t - 1] == 1:
        t -= 1
    a = then_rank - len(src) if axis == -1 else axis
    if a + t > then_rank:
        raise OracleShapeError("pdpd: does not fit")
    return a, t


def _pdpd_fit(src: Shape, then: Shape, axis: int) -> None:
    a, t = _pdpd_placement(src, len(then), axis)
    for k in range(t):
        if src[k] != 1 and src[k] != then[a + k]:
            raise OracleShapeError(f"pdpd: dim {k} is {src[k]}, then has {then[a + k]}")


def oracle_shape(
    cond: Sequence[int],
    then: Sequence[int],
    else_: Sequence[int],
    *,
    auto_broadcast: str = "numpy",
    axis: int = -1,
    cond_broadcast: str = "unidirectional",
) -> Shape:
    """Output shape of Select under SPEC §3, or :class:`OracleShapeError`.

    Only the shape rules live here; option validation (unknown modes, axis
    with a non-pdpd mode, ...) is tested separately against SPEC §7.
    """
    c, t, e = tuple(cond), tuple(then), tuple(else_)
    if auto_broadcast == "none":
        if not c == t == e:
            raise OracleShapeError("none: shapes differ")
        return t
    if auto_broadcast == "numpy":
        s = _numpy_two(t, e)
        if cond_broadcast == "unidirectional":
            _one_way(c, s)
            return s
        if cond_broadcast == "multidirectional":
            return _numpy_two(c, s)
        raise AssertionError(cond_broadcast)
    if auto_broadcast == "pdpd":
        _pdpd_fit(e, t, axis)
        _pdpd_fit(c, t, axis)
        return t
    raise AssertionError(auto_broadcast)


# --------------------------------------------------------------------------- values


def _right_aligned_map(src: Shape, out_rank: int) -> IndexMap:
    offset = out_rank - len(src)

    def index(out_index: Shape) -> Shape:
        return tuple(0 if d == 1 else out_index[offset + k] for k, d in enumerate(src))

    return index


def _pdpd_map(src: Shape, then_rank: int, axis: int) -> IndexMap:
    a, t = _pdpd_placement(src, then_rank, axis)

    def index(out_index: Shape) -> Shape:
        # Trimmed trailing 1s (k >= t) and size-1 dims always read index 0.
        return tuple(0 if (k >= t or d == 1) else out_index[a + k] for k, d in enumerate(src))

    return index


def oracle_index_maps(
    cond: Shape,
    then: Shape,
    else_: Shape,
    *,
    auto_broadcast: str = "numpy",
    axis: int = -1,
    cond_broadcast: str = "unidirectional",
) -> tuple[Shape, IndexMap, IndexMap, IndexMap]:
    """Output shape and, per input, the map from an output index to its index."""
    out = oracle_shape(
        cond,
        then,
        else_,
        auto_broadcast=auto_broadcast,
        axis=axis,
        cond_broadcast=cond_broadcast,
    )
    if auto_broadcast == "pdpd":
        return (
            out,
            _pdpd_map(cond, len(out), axis),
            lambda i: i,
            _pdpd_map(else_, len(out), axis),
        )
    # "none" is a special case of right alignment (all shapes equal).
    return (
        out,
        _right_aligned_map(cond, len(out)),
        _right_aligned_map(then, len(out)),
        _right_aligned_map(else_, len(out)),
    )


def _as_bytes(a: np.ndarray) -> np.ndarray:
    """``a`` as an array of shape ``a.shape + (itemsize,)`` of raw bytes."""
    flat = np.ascontiguousarray(a).reshape(-1)
    return flat.view(np.uint8).reshape((*a.shape, a.dtype.itemsize))


def oracle_select(
    cond: np.ndarray,
    then: np.ndarray,
    else_: np.ndarray,
    *,
    auto_broadcast: str = "numpy",
    axis: int = -1,
    cond_broadcast: str = "unidirectional",
) -> np.ndarray:
    """Select computed one output element at a time, copying raw bytes.

    ``then`` and ``else_`` must be NumPy arrays of one dtype; ``cond`` a
    NumPy array of bool or integer dtype (nonzero is true).
    """
    if then.dtype != else_.dtype:
        raise AssertionError("oracle_select needs one dtype")
    out_shape, cmap, tmap, emap = oracle_index_maps(
        cond.shape,
        then.shape,
        else_.shape,
        auto_broadcast=auto_broadcast,
        axis=axis,
        cond_broadcast=cond_broadcast,
    )
    itemsize = then.dtype.itemsize
    tb, eb = _as_bytes(then), _as_bytes(else_)
    out = np.zeros((*out_shape, itemsize), dtype=np.uint8)
    for idx in np.ndindex(*out_shape):
        truth = cond[cmap(idx)].item() != 0
        out[idx] = tb[tmap(idx)] if truth else eb[emap(idx)]
    return out.reshape(-1).view(then.dtype).reshape(out_shape)


def bits_equal(actual: np.ndarray, expected: np.ndarray) -> bool:
    """Same dtype, same shape, and identical bytes element by element."""
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return False
    return bool(np.array_equal(_as_bytes(actual), _as_bytes(expected)))


# --------------------------------------------------------------------------- the select family


def oracle_broadcast(*shapes: Shape) -> Shape:
    """NumPy broadcast of any number of shapes (raises :class:`OracleShapeError`)."""
    out: Shape = ()
    for s in shapes:
        out = _numpy_two(out, s)
    return out


def oracle_select_n(which: np.ndarray, cases: Sequence[np.ndarray]) -> np.ndarray:
    """``cases[which]`` one output element at a time (raw bytes); all broadcast together.

    A boolean ``which`` picks ``cases[1]`` where true. An index outside the cases
    raises ``IndexError``.
    """
    out_shape = oracle_broadcast(which.shape, *(c.shape for c in cases))
    maps = [_right_aligned_map(s, len(out_shape)) for s in (which.shape, *(c.shape for c in cases))]
    dtype = cases[0].dtype
    raw = [_as_bytes(c) for c in cases]
    out = np.zeros((*out_shape, dtype.itemsize), dtype=np.uint8)
    for idx in np.ndindex(*out_shape):
        k = int(which[maps[0](idx)].item())
        if not 0 <= k < len(cases):
            raise IndexError(k)
        out[idx] = raw[k][maps[k + 1](idx)]
    return out.reshape(-1).view(dtype).reshape(out_shape)


def oracle_select_cases(
    conds: Sequence[np.ndarray], choices: Sequence[np.ndarray], default: np.ndarray
) -> np.ndarray:
    """The first choice whose condition is nonzero, else ``default``, element by element
    (raw bytes; choices and default of one dtype).
    """
    shapes = [c.shape for c in (*conds, *choices, default)]
    out_shape = oracle_broadcast(*shapes)
    maps = [_right_aligned_map(s, len(out_shape)) for s in shapes]
    n = len(conds)
    dtype = default.dtype
    raw = [_as_bytes(c) for c in (*choices, default)]
    out = np.zeros((*out_shape, dtype.itemsize), dtype=np.uint8)
    for idx in np.ndindex(*out_shape):
        k = next((i for i in range(n) if conds[i][maps[i](idx)].item() != 0), n)
        out[idx] = raw[k][maps[n + k](idx)]
    return out.reshape(-1).view(dtype).reshape(out_shape)
