"""The select family in the compiled NumPy kernel: ``select_n``, ``select_cases``, and
``apply_where``'s gather and scatter.

Both run in one pass over the data for any number of cases (the kernel's
``sk_cases.c``): the output is built in blocks that stay in L1 while every
case is applied to them, on the kernel's own loops and thread pool, moving
every dtype as raw bits (NumPy's and ``ml_dtypes``' alike).

The callers (the core's family functions) have validated the call and pass the
output shape the core decided; the kernel places each operand in it as NumPy
broadcasts (an operand of fewer dimensions, or of length 1 along an axis, is read
with stride 0: a Python scalar's 0-d array is never made full size; views of any
strides are fine); the values share one dtype and ``out``, when given, has that
dtype and the output shape. These wrappers only
convert what the kernel cannot read as it is: a condition that is not a bool
or integer of 1, 2, 4 or 8 bytes becomes ``cond != 0``, and an index array in
non-native byte order is byte-swapped (a value's byte order needs nothing: its
bits are copied).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from . import _select_kernel as _k

__all__ = ["kernel_apply_put", "kernel_apply_take", "kernel_select_cases", "kernel_select_n"]

#: ``kernel_apply_take(cond, x)``: ``x``'s elements where the bool ``cond`` (of
#: ``x``'s shape) is true, 1-D in C order, in one branchless pass; ``NotImplemented``
#: unless both are C-contiguous, aligned ``np.ndarray`` (exactly) of 1, 2, 4, 8 or
#: 16-byte items without object references.
#:
#: >>> import numpy as np
#: >>> kernel_apply_take(np.array([True, False, True]), np.array([1.0, 2.0, 3.0]))
#: array([1., 3.])
kernel_apply_take = _k.apply_take
#: ``kernel_apply_put(cond, taken, base)``: a new C-ordered array of ``cond``'s
#: shape and ``taken``'s dtype holding ``taken``'s elements where ``cond`` is true
#: (in C order) and ``base``'s elsewhere (a 0-d ``base``: its one value; a 1-D
#: ``base``: its elements in C order), in one branchless pass; ``NotImplemented``
#: for operands ``kernel_apply_take`` would refuse, ``taken`` and ``base`` of
#: different dtypes, or lengths other than the mask's counts.
#:
#: >>> kernel_apply_put(np.array([True, False, True]), np.array([1.0, 3.0]), np.array(0.0))
#: array([1., 0., 3.])
kernel_apply_put = _k.apply_put

Array = npt.NDArray[Any]


def _native(a: Array) -> Array:
    """``a`` with its dtype in native byte order (a copy only when it is not)."""
    if a.dtype.isnative:
        return a
    return a.astype(a.dtype.newbyteorder("="))


#: The condition dtypes the kernel tests as they are (nonzero is true): bool and
#: NumPy's integers of 1, 2, 4 or 8 bytes, in either byte order (nonzero either way).
KERNEL_CONDS: Final = frozenset(
    dtype
    for t in "?bBhHiIqQ"  # bool and the integers of 1, 2, 4 and 8 bytes
    for dtype in (np.dtype(t).newbyteorder("<"), np.dtype(t).newbyteorder(">"))
)


def _as_cond(c: Array) -> Array:
    """A condition the kernel tests as it is (nonzero is true), or ``c != 0``."""
    return c if c.dtype in KERNEL_CONDS else np.not_equal(c, 0)


def kernel_select_n(
    which: Array,
    cases: Sequence[Array],
    out: Array | None,
    shape: tuple[int, ...] | None = None,
) -> Array:
    """``out[i] = cases[which[i]][i]``, in one pass.

    Parameters
    ----------
    which : numpy.ndarray
        Bool (exactly two cases: ``False`` picks ``cases[0]``) or any integer
        dtype.
    cases : sequence of numpy.ndarray
        At least one array, all of one dtype; ``which`` and the cases broadcast
        together to the output shape.
    out : numpy.ndarray or None
        Where to write (the output shape and the cases' dtype), or ``None`` for
        a new C-ordered array.
    shape : tuple of int, optional
        The output shape, the core's decision; each operand is placed in it as NumPy
        broadcasts. ``None``: ``np.broadcast_shapes`` of the operands (callers
        without a decision: tests, benchmarks).

    Returns
    -------
    numpy.ndarray
        ``out``, or the new array.

    Raises
    ------
    IndexError
        With ``args == (value,)``: an index outside ``[0, len(cases))`` (the
        first one met, in the order the kernel walks the output). It is found
        in the same pass as the selection; ``out`` may then be partly written
        (blocks before the bad index hold their result, the rest what they
        held), and the inputs are untouched.

    Examples
    --------
    >>> import numpy as np
    >>> from arrayselect.backends.shared.kernel_cases import kernel_select_n
    >>> kernel_select_n(np.array([2, 0, 1]), (np.zeros(3), np.ones(3), np.full(3, 7.0)), None)
    array([7., 0., 1.])
    """
    if shape is None:
        shape = np.broadcast_shapes(which.shape, *(c.shape for c in cases))
    return _k.select_n(_native(which), tuple(cases), out, shape)  # type: ignore[no-any-return]


def kernel_select_cases(
    conds: Sequence[Array],
    choices: Sequence[Array],
    default: Array,
    out: Array | None,
    shape: tuple[int, ...] | None = None,
) -> Array:
    """``numpy.select`` in one pass: the first true condition's choice, else ``default``.

    Parameters
    ----------
    conds : sequence of numpy.ndarray
        At least one condition (nonzero is true); bool and integers are read as
        they are, any other dtype as ``c != 0``.
    choices : sequence of numpy.ndarray
        As many arrays as ``conds``, all of one dtype; the conditions, choices
        and ``default`` broadcast together to the output shape.
    default : numpy.ndarray
        Of the choices' dtype.
    out : numpy.ndarray or None
        Where to write (the output shape and the choices' dtype), or ``None``
        for a new C-ordered array.
    shape : tuple of int, optional
        The output shape, the core's decision; each operand is placed in it as NumPy
        broadcasts. ``None``: ``np.broadcast_shapes`` of the operands (callers
        without a decision: tests, benchmarks).

    Returns
    -------
    numpy.ndarray
        ``out``, or the new array.

    Examples
    --------
    >>> import numpy as np
    >>> from arrayselect.backends.shared.kernel_cases import kernel_select_cases
    >>> x = np.array([-2.0, 0.0, 3.0])
    >>> kernel_select_cases((x < 0, x > 0), (-x, x * 10), np.zeros(3), None)
    array([ 2.,  0., 30.])
    """
    if shape is None:
        shape = np.broadcast_shapes(*(x.shape for x in (*conds, *choices, default)))
    return _k.select_cases(  # type: ignore[no-any-return]
        tuple(_as_cond(c) for c in conds), tuple(choices), default, out, shape
    )
