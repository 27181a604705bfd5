"""``arrayselect.select`` against ``torch.where`` on the same inputs: every property a
program can read off a result, on both routes (below the kernel's threshold, where
the backend calls ``torch.where``, and above it, where the compiled kernel runs).

The oracle is ``torch.where`` itself on the inputs aligned by hand (numpy broadcasting
here: same or trailing dimensions, so the inputs need no alignment). Each property is
one test function, parametrized over the layouts of :data:`CASES` and the two sizes,
so that the pass count per property reads off ``pytest -v``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from arrayselect.backends import torch_backend  # noqa: E402
from arrayselect.backends.shared import kernel  # noqa: E402

import arrayselect as asel  # noqa: E402

#: Output shapes (rows, cols): below and above the kernel's threshold.
SIZES = {"small": (8, 12), "kernel": (128, 160)}
assert 8 * 12 < torch_backend.KERNEL_MIN_SIZE <= 128 * 160


def _rand(shape: tuple[int, ...], seed: int, dtype: Any = torch.float32) -> Any:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def _mask(shape: tuple[int, ...], seed: int) -> Any:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) < 0.5


# Each case: (cond, then, else_) for an output of (rows, cols), with every input
# already of a shape numpy broadcasting takes as it is.
Case = Callable[[int, int], tuple[Any, Any, Any]]
CL = torch.channels_last
F64, BF16, I16 = torch.float64, torch.bfloat16, torch.int16
CASES: dict[str, Case] = {
    "contiguous": lambda r, c: (_mask((r, c), 0), _rand((r, c), 1), _rand((r, c), 2)),
    "then-transposed": lambda r, c: (_mask((r, c), 0), _rand((c, r), 1).t(), _rand((r, c), 2)),
    "all-transposed": lambda r, c: (
        _mask((c, r), 0).t(),
        _rand((c, r), 1).t(),
        _rand((c, r), 2).t(),
    ),
    "cond-row-broadcast": lambda r, c: (_mask((c,), 0), _rand((r, c), 1), _rand((r, c), 2)),
    "column-then": lambda r, c: (_mask((r, c), 0), _rand((r, 1), 1), _rand((r, c), 2)),
    "scalar-else": lambda r, c: (_mask((r, c), 0), _rand((c, r), 1).t(), -1.5),
    "int-cond": lambda r, c: (torch.randint(0, 3, (c, r)).t(), _rand((r, c), 1), _rand((r, c), 2)),
    "sliced": lambda r, c: (
        _mask((r, 2 * c), 0)[:, ::2],
        _rand((r, c + 3), 1)[:, 3:],
        _rand((r, c), 2),
    ),
    "expanded": lambda r, c: (_mask((r, c), 0), _rand((1, c), 1).expand(r, c), _rand((r, c), 2)),
    "float64": lambda r, c: (_mask((r, c), 0), _rand((r, c), 1, F64), _rand((r, c), 2, F64)),
    "bfloat16": lambda r, c: (_mask((r, c), 0), _rand((r, c), 1, BF16), _rand((r, c), 2, BF16)),
    "int16-channels-last": lambda r, c: (
        _mask((2, 4, r // 4, c // 2), 0).to(memory_format=CL),
        _rand((2, 4, r // 4, c // 2), 1, I16).to(memory_format=CL),
        _rand((2, 4, r // 4, c // 2), 2, I16).to(memory_format=CL),
    ),
}

PARAMS = [pytest.param(name, size, id=f"{name}-{size}") for name in CASES for size in SIZES]


def _inputs(name: str, size: str) -> tuple[Any, Any, Any]:
    return CASES[name](*SIZES[size])


def _where(cond: Any, then: Any, else_: Any, **kw: Any) -> Any:
    """The oracle: torch.where as a program would call it (an int cond compared with 0)."""
    if cond.dtype != torch.bool:
        cond = cond != 0
    return torch.where(cond, then, else_, **kw)


def _select(cond: Any, then: Any, else_: Any, size: str, **kw: Any) -> Any:
    """``asel.select``, checking that the kernel ran exactly where the size says."""
    before = kernel.kernel_stats()["calls"]
    result = asel.select(cond, then, else_, **kw)
    ran = kernel.kernel_stats()["calls"] - before
    if kernel.KERNEL_MISSING is None:
        assert ran == (size == "kernel"), f"the kernel ran {ran} times"
    return result


def _bits(x: Any) -> Any:
    x = x.detach().contiguous()
    return x.view(
        {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
    )


@pytest.mark.parametrize(("name", "size"), PARAMS)
def test_values_bitwise(name: str, size: str) -> None:
    c, t, e = _inputs(name, size)
    assert torch.equal(_bits(_select(c, t, e, size)), _bits(_where(c, t, e)))


@pytest.mark.parametrize(("name", "size"), PARAMS)
def test_dtype_device_shape(name: str, size: str) -> None:
    c, t, e = _inputs(name, size)
    r, w = _select(c, t, e, size), _where(c, t, e)
    assert (r.dtype, r.device, r.shape) == (w.dtype, w.device, w.shape)


@pytest.mark.parametrize(("name", "size"), PARAMS)
def test_strides(name: str, size: str) -> None:
    c, t, e = _inputs(name, size)
    assert _select(c, t, e, size).stride() == _where(c, t, e).stride()


@pytest.mark.parametrize(("name", "size"), PARAMS)
def test_requires_grad_and_grad_fn(name: str, size: str) -> None:
    c, t, e = _inputs(name, size)
    t = t.detach().requires_grad_(t.is_floating_point())
    with torch.no_grad():  # nothing to record: the kernel route at the kernel size
        r, w = _select(c, t, e, size), _where(c, t, e)
    assert (r.requires_grad, r.grad_fn is None) == (w.requires_grad, w.grad_fn is None)
    r, w = asel.select(c, t, e), _where(c, t, e)  # grad mode: recorded on both
    assert (r.requires_grad, type(r.grad_fn)) == (w.requires_grad, type(w.grad_fn))


@pytest.mark.parametrize(("name", "size"), PARAMS)
def test_forward_ad_tangent(name: str, size: str) -> None:
    fwad: Any = torch.autograd.forward_ad

    c, t, e = _inputs(name, size)
    if not t.is_floating_point():
        pytest.skip("no tangent for an integer tensor")
    if name == "expanded":  # make_dual refuses a primal whose elements overlap
        t = t.clone()
    with fwad.dual_level():
        dual = fwad.make_dual(t, torch.ones_like(t))
        r = asel.select(c, dual, e)  # a dual level is open: torch.where's route
        w = _where(c, dual, e)
        rt, wt = fwad.unpack_dual(r).tangent, fwad.unpack_dual(w).tangent
    assert wt is not None and rt is not None
    assert torch.equal(rt, wt)


@pytest.mark.parametrize(("name", "size"), PARAMS)
def test_out_bumps_the_version_counter(name: str, size: str) -> None:
    c, t, e = _inputs(name, size)
    w = _where(c, t, e)
    out_r, out_w = torch.zeros_like(w), torch.zeros_like(w)
    vr, vw = out_r._version, out_w._version
    _select(c, t, e, size, out=out_r)
    if not isinstance(e, torch.Tensor):  # torch.where(out=) takes tensors only
        e = torch.tensor(e, dtype=t.dtype)
    _where(c, t, e, out=out_w)
    assert out_r._version - vr == out_w._version - vw >= 1
    assert torch.equal(_bits(out_r), _bits(out_w))


@pytest.mark.parametrize("size", SIZES)
def test_out_write_fails_backward_as_torch_where(size: str) -> None:
    # A graph that saved x, then x overwritten through out=: backward refuses.
    writers: list[Callable[[Any, Any, Any, Any], Any]] = [
        lambda c, t, e, x: _select(c, t, e, size, out=x),
        lambda c, t, e, x: _where(c, t, e, out=x),
    ]
    for write in writers:
        c, t, e = _inputs("contiguous", size)
        w = torch.ones_like(t, requires_grad=True)
        x = torch.zeros_like(t)
        loss = (w * x).sum()
        with torch.no_grad():
            write(c, t, e, x)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


@pytest.mark.parametrize(("name", "size"), PARAMS)
def test_storage_resizable_and_inputs_untouched(name: str, size: str) -> None:
    c, t, e = _inputs(name, size)
    r, w = _select(c, t, e, size), _where(c, t, e)
    assert r.untyped_storage().resizable() == w.untyped_storage().resizable() is True
    for x in (c, t, e):  # reading an input leaves its storage as it was
        assert not isinstance(x, torch.Tensor) or x.untyped_storage().resizable()
    r.resize_(2 * r.numel())


@pytest.mark.parametrize(("name", "size"), PARAMS)
def test_data_ptr_alignment(name: str, size: str) -> None:
    c, t, e = _inputs(name, size)
    r, w = _select(c, t, e, size), _where(c, t, e)
    assert r.data_ptr() % 64 == 0 and w.data_ptr() % 64 == 0


@pytest.mark.parametrize(("name", "size"), PARAMS)
def test_profiler_event(name: str, size: str) -> None:
    c, t, e = _inputs(name, size)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        _select(c, t, e, size)
    names = {event.name for event in prof.events()}
    expected = "arrayselect::select" if size == "kernel" else "aten::where"
    assert expected in names, names


@pytest.mark.parametrize("size", SIZES)
def test_zero_tensor_as_torch_where(size: str) -> None:
    c, _, e = _inputs("contiguous", size)
    z = torch._efficientzerotensor(SIZES[size])
    r = asel.select(c, z, e)  # no memory to read: torch.where's route
    assert torch.equal(r, _where(c, z, e)) and r.stride() == _where(c, z, e).stride()


# -- select_n and select_cases: the kernel route against the torch-ops route (their
# oracle: torch.where chained by hand)


@pytest.mark.parametrize("size", SIZES)
def test_family_forward_ad_version_and_storage(size: str) -> None:
    fwad: Any = torch.autograd.forward_ad

    c, t, e = _inputs("contiguous", size)
    which = c.to(torch.int64)
    expected = torch.where(c, e, t)
    with fwad.dual_level():
        dual = fwad.make_dual(t, torch.ones_like(t))
        tangents = [
            fwad.unpack_dual(asel.select_n(which, dual, e)).tangent,
            fwad.unpack_dual(asel.select_cases([~c], [dual], e)).tangent,
            fwad.unpack_dual(torch.where(c, e, dual)).tangent,
        ]
    assert all(x is not None and torch.equal(x, tangents[2]) for x in tangents)
    for r in (asel.select_n(which, t, e), asel.select_cases([~c], [t], e)):
        assert torch.equal(r, expected) and r.stride() == expected.stride()
        assert r.untyped_storage().resizable() and r.data_ptr() % 64 == 0
    out = torch.zeros_like(t)
    version = out._version
    asel.select_n(which, t, e, out=out)
    assert out._version == version + 1 and torch.equal(out, expected)


def _random_layout(g: Any, shape: tuple[int, ...], dtype: Any = torch.float32) -> Any:
    """A tensor of ``shape`` (or with some dimensions 1 or dropped, for broadcasting)
    in a random layout: permuted, sliced, expanded."""
    import random

    rnd = random.Random(int(torch.randint(0, 2**31, (1,), generator=g)))
    shape = tuple(1 if rnd.random() < 0.2 else s for s in shape)
    shape = shape[rnd.randrange(len(shape) + 1) :] if rnd.random() < 0.2 else shape
    perm = list(range(len(shape)))
    rnd.shuffle(perm)
    steps = [rnd.choice((1, 1, 2)) for _ in shape]
    inverse = sorted(range(len(perm)), key=perm.__getitem__)
    base = torch.zeros([shape[p] * steps[p] for p in perm], dtype=dtype).permute(inverse)
    x = base[tuple(slice(None, None, s) for s in steps)]
    if shape and rnd.random() < 0.2:
        d = rnd.randrange(len(shape))
        x = x.narrow(d, 0, 1).expand(shape)
    return x


def test_layout_rule_matches_torch_where_on_random_layouts() -> None:
    from arrayselect.backends.torch_backend import layout as torch_layout

    g = torch.Generator().manual_seed(0)
    shapes = [(3, 4, 5), (2, 1, 3), (4, 4), (1, 5, 1, 2), (2, 3, 2, 2)]
    for i in range(300):
        shape = shapes[i % len(shapes)]
        c = _random_layout(g, shape, torch.bool)
        t, e = _random_layout(g, shape), _random_layout(g, shape)
        expected = torch.where(c, t, e)
        got = torch_layout.iterator_strides(tuple(expected.shape), [c, t, e])
        assert got == expected.stride(), (
            c.stride(),
            t.stride(),
            e.stride(),
            c.shape,
            t.shape,
            e.shape,
        )
        scalar = torch.where(c, t, 0.0)
        assert (
            torch_layout.iterator_strides(tuple(scalar.shape), [c, t], scalar=True)
            == scalar.stride()
        )
