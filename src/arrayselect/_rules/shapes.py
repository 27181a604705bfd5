"""Shape inference and validation for Select: the one place that knows the modes.

Every mode is turned into a :class:`SelectPlan`: the output shape, plus for
each input the output dimensions its dimensions go to (and, equivalently, the
*aligned* shape it may be reshaped to: a view, only size-1 dimensions added or
dropped) so that plain NumPy-rule broadcasting of the three placed inputs gives
the output. Backends never see the modes.

Dimensions are ``int`` or ``None`` (unknown). With unknown dimensions an error
is raised only when every possible value of the unknowns would fail, and an
output dimension is ``None`` only when it cannot be deduced.

Backends may also pass *symbolic* dimensions (JAX's ``jax.export`` shape
polynomials such as ``b`` or ``2*b``): hashable objects that support ``==``,
``-`` and ordering against ints, where an ordering that cannot be decided
raises. Every comparison goes through :func:`same_dim`, which answers "certainly
equal", "certainly different" or "cannot tell"; a symbolic dimension that
cannot be told apart from another is treated like an unknown one that is
constrained (``b`` against ``3`` is not an error: ``b`` may be 3 or 1).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import numpy as np

from arrayselect._base.caches import BoundedCache
from arrayselect._base.errors import SelectShapeError, SelectTypeError, SelectValueError

__all__ = [
    "COND_BROADCASTS",
    "MODES",
    "Dim",
    "SelectPlan",
    "Shape",
    "broadcast_together",
    "check_options",
    "make_plan",
    "normalize_shape",
    "same_dim",
    "select_shape",
]

Dim = int | None
Shape = tuple[Dim, ...]

MODES: Final = ("none", "numpy", "pdpd")
COND_BROADCASTS: Final = ("unidirectional", "multidirectional")
_PLAN_CACHE_SIZE: Final = 4096
_ENLARGE_HINT: Final = (
    "; cond may not enlarge the output unless cond_broadcast='multidirectional' "
    "(numpy.where behaviour)"
)


@dataclass(frozen=True, slots=True)
class SelectPlan:
    """What a backend needs to run one Select: the output shape and where each
    input's dimensions go.

    Attributes
    ----------
    out_shape
        Shape of the result.
    dims
        For ``cond``, ``then`` and ``else``: the output dimension each of the
        input's leading ``len(dims[k])`` dimensions lines up with, in increasing
        order (as XLA's ``broadcast_in_dim`` takes them). The input's remaining
        trailing dimensions are *dropped*: they are size 1 in every valid call
        (``"pdpd"`` trims trailing 1s). A dimension of size 1 broadcasts; any
        other size equals the output's there. Output dimensions no input
        dimension goes to are broadcast.
    aligned
        The same placement as a shape: for each input, the shape to reshape it
        to (the output's rank, the input's kept dimensions at ``dims``, 1
        elsewhere) before NumPy-rule broadcasting, or ``None`` when the input
        broadcasts by NumPy rules as it is (right-aligned, nothing dropped).
        Backends that reshape use it; backends that map dimensions use
        ``dims``.
    """

    out_shape: Shape
    dims: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    aligned: tuple[Shape | None, Shape | None, Shape | None]
    # Plans key backends' caches of compiled functions: hash once, not per lookup,
    # and only when asked (a plan traced by torch.compile is never hashed, so its
    # symbolic sizes are not specialised).
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        value = self._hash
        if value is None:
            value = hash((self.out_shape, self.dims, self.aligned))  # raises for SymInts
            object.__setattr__(self, "_hash", value)
        return value


def _right_aligned(rank: int, src: Shape) -> tuple[int, ...]:
    """Output dims of an input of shape ``src`` right-aligned in an output of ``rank``."""
    return tuple(range(rank - len(src), rank))


def _aligned_shape(rank: int, src: Shape, dims: tuple[int, ...]) -> Shape | None:
    """``src`` reshaped to put its kept dims at ``dims`` (``None``: no reshape needed)."""
    if dims == _right_aligned(rank, src):
        return None
    aligned: list[Dim] = [1] * rank
    for k, d in enumerate(dims):
        aligned[d] = src[k]
    return tuple(aligned)


def _make(
    out: Shape, cond: Shape, then: Shape, else_: Shape, placed: dict[int, tuple[int, ...]]
) -> SelectPlan:
    """A plan whose inputs are right-aligned unless ``placed`` says otherwise."""
    rank = len(out)
    shapes = (cond, then, else_)
    dims = tuple(placed.get(k, _right_aligned(rank, src)) for k, src in enumerate(shapes))
    aligned = tuple(_aligned_shape(rank, src, d) for src, d in zip(shapes, dims, strict=True))
    return SelectPlan(out, dims, aligned)  # type: ignore[arg-type]


def _mode_text(mode: str, axis: int, cond_broadcast: str) -> str:
    if mode == "pdpd":
        return f"auto_broadcast='pdpd', axis={axis}"
    if mode == "numpy":
        return f"auto_broadcast='numpy', cond_broadcast={cond_broadcast!r}"
    return "auto_broadcast='none'"


def _as_index(x: object) -> int | None:
    """``x`` as an int if it is one (NumPy integers and other ``__index__`` types
    included, ``bool`` excluded), else ``None``.

    ``operator.index`` can raise anything a foreign ``__index__`` raises (NumPy
    arrays of size > 1: ``TypeError``); all of that means "not an int" here.
    """
    if type(x) is int:
        return x
    # NumPy's bool scalar is an index on NumPy 2.2 (deprecated: np.True_ is 1) but not
    # on 2.4: refused on every version, like Python's bool
    if isinstance(x, (bool, np.bool_)) or not hasattr(type(x), "__index__"):
        return None
    try:
        return operator.index(x)  # type: ignore[arg-type]
    except Exception:
        return None


def check_options(
    auto_broadcast: object, axis: object, cond_broadcast: object
) -> tuple[str, int, str]:
    """Validate the keyword options of ``select``; return them in canonical form.

    Returns
    -------
    auto_broadcast, axis, cond_broadcast : str, int, str
        Plain ``str`` and ``int`` (a ``numpy.str_`` or ``numpy.int64`` given by
        the user becomes one), so that plans are memoised under plain keys.

    Raises
    ------
    SelectValueError
        For an unknown ``auto_broadcast`` or ``cond_broadcast``, ``axis < -1``,
        or an option given for a mode it does not apply to.
    SelectTypeError
        For an ``axis`` that is not an integer.
    """
    # str subclasses (numpy.str_) are strings; anything else is an unknown value.
    if not isinstance(auto_broadcast, str) or auto_broadcast not in MODES:
        raise SelectValueError(
            f"unknown auto_broadcast={auto_broadcast!r}; expected one of "
            + ", ".join(repr(m) for m in MODES)
        )
    if not isinstance(cond_broadcast, str) or cond_broadcast not in COND_BROADCASTS:
        raise SelectValueError(
            f"unknown cond_broadcast={cond_broadcast!r}; expected one of "
            + ", ".join(repr(m) for m in COND_BROADCASTS)
        )
    axis_int = _as_index(axis)
    if axis_int is None:
        raise SelectTypeError(
            f"axis must be an int (-1 or a non-negative int), got {type(axis).__name__} {axis!r}"
        )
    if axis_int < -1:
        raise SelectValueError(
            f"axis={axis_int} is not allowed; expected -1 (align to the right) or a "
            "non-negative int"
        )
    if axis_int != -1 and auto_broadcast != "pdpd":
        raise SelectValueError(
            f"axis={axis_int} applies only to auto_broadcast='pdpd', not to "
            f"auto_broadcast={auto_broadcast!r}; leave axis at its default -1"
        )
    if cond_broadcast != "unidirectional" and auto_broadcast != "numpy":
        raise SelectValueError(
            f"cond_broadcast={cond_broadcast!r} applies only to auto_broadcast='numpy', not to "
            f"auto_broadcast={auto_broadcast!r}; allowed here: 'unidirectional' (the default)"
        )
    return (
        MODES[MODES.index(auto_broadcast)],
        axis_int,
        COND_BROADCASTS[COND_BROADCASTS.index(cond_broadcast)],
    )


def normalize_shape(name: str, shape: object) -> Shape:
    """Check a user-given shape (a sequence of non-negative ints or ``None``)."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise SelectTypeError(
            f"{name} must be a tuple of ints (None for an unknown dimension), "
            f"got {type(shape).__name__} {shape!r}"
        )
    dims: list[Dim] = []
    for i, d in enumerate(shape):
        if d is None:
            dims.append(None)
            continue
        value = _as_index(d)
        if value is None:
            raise SelectTypeError(
                f"{name} {tuple(shape)!r}: dimension {i} must be an int or None, "
                f"got {type(d).__name__} {d!r}"
            )
        if value < 0:
            raise SelectValueError(f"{name} {tuple(shape)!r}: dimension {i} is negative ({value})")
        dims.append(value)
    return tuple(dims)


def same_dim(a: Dim, b: Dim) -> bool | None:
    """``True`` if dims ``a`` and ``b`` are certainly equal, ``False`` if certainly not.

    The one comparison of dimensions: backends with symbolic shapes use it too.

    ``None`` when it cannot be told: one is unknown, or they are symbolic
    dimensions whose difference is not known to be zero or nonzero.

    Examples
    --------
    >>> from arrayselect.plugin import same_dim
    >>> same_dim(3, 3), same_dim(3, 4), same_dim(None, 3)
    (True, False, None)
    """
    if type(a) is int and type(b) is int:
        return a == b
    if a is None or b is None:
        return None
    try:
        if a == b:  # symbolic dims: True only when provably equal
            return True
        diff = a - b
    except Exception:  # a foreign dim type that cannot be compared: cannot tell
        return None
    try:
        if diff >= 1:
            return False
    except Exception:  # e.g. jax's InconclusiveDimensionOperation
        pass
    try:
        if diff <= -1:
            return False
    except Exception:
        pass
    return None


def _merge(a: Dim, b: Dim) -> Dim | bool:
    """Broadcast two dims by NumPy rules; ``False`` when they certainly clash."""
    equal = same_dim(a, b)
    if equal:
        return a
    a_one = same_dim(a, 1)
    b_one = same_dim(b, 1)
    if a_one:
        return b
    if b_one:
        return a
    if a_one is False:
        # a is not 1, so in a valid call b is a or 1: the result is a (or b when
        # that is a concrete size). A certain clash when b is certainly neither.
        if equal is False and b_one is False:
            return False
        return b if b_one is False and type(b) is int else a
    if b_one is False:
        return b  # the unknown a must be b (or 1): the result is b either way
    return None  # both may be 1: the result cannot be deduced


def _broadcast_two(a_name: str, a: Shape, b_name: str, b: Shape, mode_text: str) -> Shape:
    rank = max(len(a), len(b))
    a_full = (1,) * (rank - len(a)) + a
    b_full = (1,) * (rank - len(b)) + b
    out: list[Dim] = []
    for i, (da, db) in enumerate(zip(a_full, b_full, strict=True)):
        merged = _merge(da, db)
        if merged is False:
            raise SelectShapeError(
                f"{a_name} shape {a} and {b_name} shape {b} cannot be broadcast together "
                f"({mode_text}): dimension {i - rank} is {da} in {a_name} and {db} in "
                f"{b_name}, expected equal sizes or 1"
            )
        out.append(merged)
    return tuple(out)


def broadcast_together(named: Sequence[tuple[str, Shape]], text: str) -> Shape:
    """Broadcast named shapes all together by NumPy rules (the ``where`` of the
    standard); ``text`` says who broadcasts, for messages.

    Raises
    ------
    SelectShapeError
        Naming the first two shapes that clash and the dimension.
    """
    name, out = named[0]
    for other_name, other in named[1:]:
        out = _broadcast_two(name, out, other_name, other, text)
        name = f"the broadcast of {name} and {other_name}"
    return out


def _cond_one_way(cond: Shape, target: Shape, mode_text: str) -> Shape:
    """Check ``cond`` broadcasts one way onto ``target``; refine unknown dims."""
    if len(cond) > len(target):
        raise SelectShapeError(
            f"cond shape {cond} cannot be broadcast one way onto {target} ({mode_text}): "
            f"cond has rank {len(cond)}, more than the {len(target)} of the broadcast of "
            f"then and else{_ENLARGE_HINT}"
        )
    out = list(target)
    offset = len(target) - len(cond)
    for i, dc in enumerate(cond):
        dt = target[offset + i]
        equal = same_dim(dc, dt)
        cond_one = same_dim(dc, 1)
        if equal is None and cond_one is False and (dt is None or type(dc) is int):
            out[offset + i] = dc  # cond's dim is not 1: a valid call has this size here
        if equal is not False or cond_one is not False:
            continue
        raise SelectShapeError(
            f"cond shape {cond} cannot be broadcast one way onto {target} ({mode_text}): "
            f"dimension {i - len(cond)} is {dc}, expected "
            + ("1" + _ENLARGE_HINT if dt == 1 else f"{dt} or 1")
        )
    return tuple(out)


def _identical(cond: Shape, then: Shape, else_: Shape) -> Shape:
    named = (("cond", cond), ("then", then), ("else", else_))
    rank = len(then)
    for name, shape in named:
        if len(shape) != rank:
            raise SelectShapeError(
                f"auto_broadcast='none' needs identical shapes, but {name} shape {shape} has "
                f"rank {len(shape)} and then shape {then} has rank {rank}"
            )
    out: list[Dim] = []
    for i in range(rank):
        seen: list[tuple[str, Dim]] = []
        for name, shape in named:
            d = shape[i]
            if d is None:
                continue
            for seen_name, seen_d in reversed(seen):
                if same_dim(d, seen_d) is False:
                    raise SelectShapeError(
                        f"auto_broadcast='none' needs identical shapes: cond {cond}, then "
                        f"{then}, else {else_} differ at dimension {i}: {name} has {d}, "
                        f"{seen_name} has {seen_d}"
                    )
            seen.append((name, d))
        # Prefer a concrete size over a symbolic one that may equal it.
        ints = [d for _, d in seen if type(d) is int]
        out.append(ints[-1] if ints else seen[-1][1] if seen else None)
    return tuple(out)


def _trim_candidates(src: Shape) -> list[int]:
    """Possible lengths of ``src`` once its trailing 1s are trimmed.

    One length for known shapes; several when trailing dims are unknown
    (an unknown dim may be 1 and so be trimmed too).
    """
    ends: list[int] = []
    j = len(src)
    while True:
        if j == 0:
            ends.append(0)
            return ends
        one = same_dim(src[j - 1], 1)
        if one is not True:
            ends.append(j)
        if one is False:
            return ends
        j -= 1


def _pdpd_start(rank: int, src: Shape, axis: int) -> int:
    """Dimension of ``then`` (of rank ``rank``) where the fitted dims of ``src`` start.

    SPEC §3 pdpd: for ``axis=-1`` the start is ``rank(then) - rank(src)`` with the
    *untrimmed* rank (OpenVINO: "axis = rank(A) - rank(B)"), so trimming trailing
    1s never moves it.
    """
    return rank - len(src) if axis == -1 else axis


def _fit_pdpd(name: str, src: Shape, then: Shape, axis: int) -> tuple[int, ...]:
    """Fit ``src`` onto ``then`` PaddlePaddle-style; return the dims of ``then`` its
    kept dimensions go to (its trimmed trailing 1s are dropped).

    With unknown trailing sizes the longest fit is kept, so an unknown size that
    may be something else than 1 stays in place.
    """
    rank = len(then)
    if len(src) > rank:
        raise SelectShapeError(
            f"{name} shape {src} cannot be broadcast onto then shape {then} "
            f"(auto_broadcast='pdpd', axis={axis}): {name} has rank {len(src)}, more than "
            f"the {rank} of then"
        )
    start = _pdpd_start(rank, src, axis)
    first_error: SelectShapeError | None = None
    for j in _trim_candidates(src):  # longest first
        error = _pdpd_mismatch(name, src, src[:j], then, axis, start)
        if error is None:
            return tuple(range(start, start + j))
        first_error = first_error or error
    assert first_error is not None
    raise first_error


def _pdpd_mismatch(
    name: str, src: Shape, trimmed: Shape, then: Shape, axis: int, start: int
) -> SelectShapeError | None:
    rank = len(then)
    where = f"(auto_broadcast='pdpd', axis={axis})"
    if start + len(trimmed) > rank:
        return SelectShapeError(
            f"{name} shape {src} cannot be broadcast onto then shape {then} {where}: "
            f"with trailing 1s trimmed it is {trimmed}, which starting at dimension {start} "
            f"needs {start + len(trimmed)} dimensions, but then has {rank}"
        )
    for k, ds in enumerate(trimmed):
        dt = then[start + k]
        if same_dim(ds, dt) is not False or same_dim(ds, 1) is not False:
            continue
        return SelectShapeError(
            f"{name} shape {src} cannot be broadcast onto then shape {then} {where}: "
            f"dimension {k} of {name} is {ds}, expected {dt} (dimension {start + k} of then) "
            "or 1"
        )
    return None


def _refine_unknowns(then: Shape, src: Shape, dims: tuple[int, ...]) -> Shape:
    """``then`` with unknown dims fixed by the known non-1 dims of an input fitted at ``dims``.

    pdpd fits one way onto ``then``, so a known size other than 1 can only fit
    where ``then`` has that size.
    """
    out = list(then)
    for k, d in enumerate(dims):
        size = src[k]
        if out[d] is None and size is not None and size != 1:
            out[d] = size
    return tuple(out)


def _plan(
    cond: Shape, then: Shape, else_: Shape, mode: str, axis: int, cond_broadcast: str
) -> SelectPlan:
    """Infer the output shape and where each input's dimensions go.

    The options must already have passed :func:`check_options`.

    Raises
    ------
    SelectShapeError
        If the shapes cannot be broadcast under the mode.
    """
    if mode == "none":
        return _make(_identical(cond, then, else_), cond, then, else_, {})
    if mode == "pdpd":
        else_dims = _fit_pdpd("else", else_, then, axis)
        out = _refine_unknowns(then, else_, else_dims)
        cond_dims = _fit_pdpd("cond", cond, out, axis)
        out = _refine_unknowns(out, cond, cond_dims)
        return _make(out, cond, then, else_, {0: cond_dims, 2: else_dims})
    text = _mode_text(mode, axis, cond_broadcast)
    values = _broadcast_two("then", then, "else", else_, text)
    if cond_broadcast == "unidirectional":
        out = _cond_one_way(cond, values, text)
    else:
        out = _broadcast_two("cond", cond, "broadcast of then and else", values, text)
    return _make(out, cond, then, else_, {})


class CacheInfo(NamedTuple):
    """``functools.lru_cache``'s statistics, as far as :class:`PlanCache` keeps them."""

    currsize: int
    maxsize: int


class PlanCache:
    """:func:`make_plan` with a bounded memo of its results (errors are not kept).

    A plain dictionary rather than ``functools.lru_cache``: a tracing compiler
    (``torch.compile``) follows dictionary lookups without a warning, and
    symbolic dimensions that are not hashable (PyTorch's ``SymInt``) simply skip
    the memo. The memo is a :class:`~arrayselect._base.caches.BoundedCache`. Thread-safe:
    each dictionary operation is atomic, and a lost race only costs a recomputation.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._plans = BoundedCache[tuple[Any, ...], SelectPlan]("shapes.make_plan", maxsize)
        self.__wrapped__ = _plan

    def __call__(
        self, cond: Shape, then: Shape, else_: Shape, mode: str, axis: int, cond_broadcast: str
    ) -> SelectPlan:
        key = (cond, then, else_, mode, axis, cond_broadcast)
        try:
            plan = self._plans.data.get(key)
        except TypeError:  # unhashable (symbolic) dims: no memo
            return _plan(*key)
        if plan is None:
            plan = self._plans.put(key, _plan(*key))
        return plan

    def cache_info(self) -> CacheInfo:
        """Plans kept and the bound."""
        return CacheInfo(len(self._plans), self.maxsize)

    def cache_parameters(self) -> dict[str, int]:
        """The bound, as ``functools.lru_cache`` reports it."""
        return {"maxsize": self.maxsize}

    def cache_clear(self) -> None:
        """Forget every plan."""
        self._plans.clear()


#: ``make_plan(cond, then, else_, mode, axis, cond_broadcast)``: the plan of a call
#: whose options passed :func:`check_options` (see :func:`_plan`), memoised.
make_plan = PlanCache(_PLAN_CACHE_SIZE)


def select_shape(
    cond_shape: Sequence[int | None],
    then_shape: Sequence[int | None],
    else_shape: Sequence[int | None],
    /,
    *,
    auto_broadcast: str = "numpy",
    axis: int = -1,
    cond_broadcast: str = "unidirectional",
) -> tuple[int | None, ...]:
    """Output shape of :func:`arrayselect.select` for inputs of these shapes.

    Parameters
    ----------
    cond_shape, then_shape, else_shape : tuple of int or None
        Shapes of the three inputs; ``None`` marks an unknown dimension.
        A Python scalar ``then`` or ``else`` has shape ``()``.
    auto_broadcast : {"numpy", "none", "pdpd"}, optional
        Broadcasting mode, as for :func:`arrayselect.select`.
    axis : int, optional
        Start axis for ``"pdpd"``; ``-1`` aligns to the right.
    cond_broadcast : {"unidirectional", "multidirectional"}, optional
        How ``cond`` broadcasts in ``"numpy"`` mode.

    Returns
    -------
    tuple of int or None
        The output shape, with ``None`` where it cannot be known.

    Raises
    ------
    SelectShapeError
        Exactly when :func:`arrayselect.select` would raise it for arrays of
        these shapes (for unknown dims: when every value of them fails).
    SelectValueError, SelectTypeError
        For bad options or shapes that are not sequences of ints.

    Examples
    --------
    >>> import arrayselect as asel
    >>> asel.select_shape((3, 1, 5), (2, 3, 4, 5), (2, 3, 4, 5))
    (2, 3, 4, 5)
    >>> asel.select_shape((3, 1), (2, 3, 4, 5), (3, 4), auto_broadcast="pdpd", axis=1)
    (2, 3, 4, 5)
    >>> asel.select_shape((None, 5), (2, 3, 1, 5), (4, 1))
    (2, 3, 4, 5)
    """
    mode, axis_int, cb = check_options(auto_broadcast, axis, cond_broadcast)
    plan = make_plan(
        normalize_shape("cond_shape", cond_shape),
        normalize_shape("then_shape", then_shape),
        normalize_shape("else_shape", else_shape),
        mode,
        axis_int,
        cb,
    )
    return plan.out_shape
