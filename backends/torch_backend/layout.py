"""The strides ``torch.where`` gives its result: TensorIterator's output layout.

The kernel route allocates its result with :func:`torch.empty_strided` and these
strides, so that a result is laid out as ``torch.where``'s would be for the same
operands, whatever their layouts (``r.view(-1)`` works or fails alike on both routes).
The rule is ATen's ``TensorIteratorBase`` (``compute_fast_setup_type``, then
``compute_strides``, ``reorder_dimensions`` and ``allocate_or_resize_outputs``), for
an iterator with one output to allocate and the given inputs in order; the torch
backend's tests compare it with ``torch.where`` on every layout they build.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["iterator_strides", "non_overlapping_and_dense"]

#: An operand as the iterator sees it: its sizes and strides (elements).
Operand = tuple[tuple[int, ...], tuple[int, ...]]


def non_overlapping_and_dense(sizes: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """c10's ``compute_non_overlapping_and_dense``: whether the elements fill their
    memory exactly once, in some order of the dimensions."""
    if len(sizes) == 1:
        return sizes[0] < 2 or strides[0] == 1
    perm = sorted(range(len(sizes)), key=lambda d: (sizes[d] < 2, strides[d]))
    required = 1
    for d in perm:
        if sizes[d] < 2:
            return True
        if strides[d] != required:
            return False
        required *= sizes[d]
    return True


def _contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _fast_setup(shape: tuple[int, ...], inputs: list[Any], scalar: bool) -> tuple[int, ...] | None:
    """The strides of ``compute_fast_setup_type``'s layouts, or ``None`` where it
    finds none (operands of other shapes, a 0-d scalar among them included, or dense
    in different orders)."""
    if (scalar and shape) or any(tuple(x.shape) != shape for x in inputs):
        return None
    if all(x.is_contiguous() for x in inputs):
        return _contiguous(shape)
    if all(x.is_contiguous(memory_format=torch.channels_last) for x in inputs):
        layout = torch.empty(shape, device="meta", memory_format=torch.channels_last)
        return tuple(layout.stride())
    if all(non_overlapping_and_dense(shape, tuple(x.stride())) for x in inputs):
        strides = {tuple(x.stride()) for x in inputs}
        return strides.pop() if len(strides) == 1 else None
    return None


def _should_swap(operands: list[tuple[int, ...]], shape: tuple[int, ...], d0: int, d1: int) -> int:
    """``reorder_dimensions``'s comparison: 1 if ``d0`` goes after ``d1``, -1 before, 0
    undecided (broadcast dimensions are skipped; equal strides: the larger size last)."""
    for strides in operands:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            continue
        if s0 < s1:
            return -1
        if s0 > s1:
            return 1
        if shape[d0] > shape[d1]:
            return 1
    return 0


def iterator_strides(
    shape: tuple[int, ...], inputs: list[Any], scalar: bool = False
) -> tuple[int, ...]:
    """The strides (elements) of the output TensorIterator allocates, of ``shape``,
    for ``inputs`` (tensors, in the iterator's order) and, if ``scalar``, a Python
    scalar among them (a 0-d tensor there: it rules out the fast setup of operands
    of one shape and orders no dimension)."""
    fast = _fast_setup(shape, inputs, scalar)
    if fast is not None:
        return fast
    ndim = len(shape)
    # Each input's strides on the output's dimensions: 0 where it is broadcast. The
    # element size scales every stride of an operand alike, so elements do here.
    operands = []
    for x in inputs:
        sizes, strides = tuple(x.shape), tuple(x.stride())
        offset = ndim - len(sizes)
        aligned = [0] * offset
        for i, (size, stride) in enumerate(zip(sizes, strides, strict=True)):
            aligned.append(0 if size == 1 and shape[offset + i] != 1 else stride)
        operands.append(tuple(aligned))
    # perm[0] is the fastest-moving dimension; start from C order and insertion-sort.
    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            comparison = _should_swap(operands, shape, perm[d0], perm[d1])
            if comparison > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif comparison < 0:
                break
    if perm == list(range(ndim - 1, -1, -1)):
        return _contiguous(shape)
    strides_out = [0] * ndim
    step = 1
    for d in perm:  # compatible_stride: no max(size, 1) here, as in ATen
        strides_out[d] = step
        step *= shape[d]
    return tuple(strides_out)
