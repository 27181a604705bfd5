"""The PyTorch backend: the kernel route on CPU memory, the torch-ops route, autograd,
``torch.func``, ``torch.compile``, ``torch.export``, devices and layouts.

Expected values come from ``torch.where`` on tensors aligned by hand (SPEC §3) or
from the analytic derivative of Select, never from arrayselect.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import warnings
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from arrayselect.backends import torch_backend  # noqa: E402
from arrayselect.backends.shared import kernel  # noqa: E402
from arrayselect.backends.torch_backend.counting import CountingBackend  # noqa: E402

import arrayselect as asel  # noqa: E402
from arrayselect._operations import select as _select  # noqa: E402

#: Why the CUDA tests skip here (the project's GPU machine has no torch).
NO_CUDA = "no CUDA device for torch (scripts/gpu_check.sh runs the CuPy and JAX tests only)"
BIG = torch_backend.KERNEL_MIN_SIZE * 2  # outputs at least this large take the kernel
KERNEL_DTYPES = [
    torch.bool, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.uint8, torch.uint16, torch.uint32, torch.uint64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
    torch.float8_e4m3fn, torch.float8_e5m2, torch.complex32, torch.complex64, torch.complex128,
]  # fmt: skip


def _bits(x: Any) -> Any:
    """The raw bits of a tensor, for bit-exact comparisons (NaN payloads included)."""
    x = x.detach().contiguous()
    raw = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    if x.element_size() == 16:
        return x.view(torch.float64).view(torch.int64)
    return x.view(raw[x.element_size()])


def _random(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> Any:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    size = int(np.prod(shape)) * torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (size,), dtype=torch.uint8, generator=g)
    return raw.view(dtype).reshape(shape)


def _kernel_calls() -> int:
    return kernel.kernel_stats()["calls"]


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=str)
def test_every_dtype_through_the_kernel_bit_exact(dtype: Any) -> None:
    cond = _random((BIG,), torch.bool, 1)
    then, else_ = _random((BIG,), dtype, 2), _random((BIG,), dtype, 3)
    before = _kernel_calls()
    got = asel.select(cond, then, else_)
    assert _kernel_calls() == before + 1
    assert got.dtype == dtype and got.shape == (BIG,)
    # the oracle on integer views (torch < 2.7 has no where for uint16/32/64 and float8);
    # complex128's view has two integers an element
    if then.element_size() == 16:
        expected = _bits(torch.where(cond, then, else_))
    else:
        expected = torch.where(cond, _bits(then), _bits(else_))
    assert torch.equal(_bits(got), expected)


def _count_numpy_positions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count apply_where's calls of the NumPy gather/scatter route (flat positions)."""
    calls = [0]
    real = torch_backend.numpy_positions

    def counted(mask: Any) -> Any:
        calls[0] += 1
        return real(mask)

    monkeypatch.setattr(torch_backend, "numpy_positions", counted)
    return calls


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=str)
def test_apply_where_gathers_and_scatters_every_dtype_bit_exact(
    dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # f1 and f2 hand back what they were given: the result is where(cond, x, y) bit for
    # bit only if every element was taken from and put back at its own position; x is a
    # transposed view and y a step-2 slice, so C order is not memory order
    routed = _count_numpy_positions(monkeypatch)
    cond = _random((128, BIG // 128), torch.bool, 5)
    x = _random((BIG // 128, 128), dtype, 6).T
    y = _random((128, BIG // 64), dtype, 7)[:, ::2]
    got = asel.apply_where(cond, (x, y), lambda a, b: a, lambda a, b: b)
    assert routed[0] == 2  # cond's positions, and its inverse's
    if dtype in (torch.complex32, torch.complex64, torch.complex128):
        expected = _bits(torch.where(cond, x, y))
    else:
        expected = torch.where(cond, _bits(x), _bits(y))
    assert got.dtype == dtype and torch.equal(_bits(got), expected)


def test_apply_where_large_calls_keep_fill_values_and_gradients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    routed = _count_numpy_positions(monkeypatch)
    cond = _random((BIG,), torch.bool, 8)
    x = torch.randn(BIG, dtype=torch.float64)
    got = asel.apply_where(cond, (x,), torch.exp, fill_value=-0.5)
    assert routed[0] == 1
    assert torch.equal(got, torch.where(cond, torch.exp(x), -0.5))
    fill = torch.randn(BIG, dtype=torch.float32)
    got = asel.apply_where(cond, (x,), torch.exp, fill_value=fill)
    assert got.dtype == torch.float64 and torch.equal(got, torch.where(cond, torch.exp(x), fill))
    # a tensor that records gradients: torch indexes it with the mask, so autograd sees
    # the gather and the scatter (the positions still come from NumPy)
    leaf = x.clone().requires_grad_(True)
    asel.apply_where(cond, (leaf,), torch.exp, fill_value=0.0).sum().backward()
    assert leaf.grad is not None
    assert torch.equal(leaf.grad, torch.where(cond, torch.exp(x), 0.0))


@pytest.mark.parametrize("cond_dtype", [torch.int8, torch.uint8, torch.int32, torch.int64])
def test_integer_conds_on_both_routes(cond_dtype: Any) -> None:
    for n in (7, BIG):
        cond = torch.randint(-2, 3, (n,)).to(cond_dtype)
        then, else_ = torch.arange(n, dtype=torch.float32), -torch.ones(n)
        assert torch.equal(asel.select(cond, then, else_), torch.where(cond != 0, then, else_))


def test_strided_inputs_and_broadcasting_through_the_kernel() -> None:
    base = torch.rand(256, 1024)
    cond = torch.rand(512, 256) < 0.5
    then, else_ = base[:, ::2].T, base.T[::2].flip(0)  # a transposed slice, a flipped copy
    before = _kernel_calls()
    assert torch.equal(asel.select(cond, then, else_), torch.where(cond, then, else_))
    row = torch.rand(256)
    assert torch.equal(asel.select(cond, then, row), torch.where(cond, then, row))
    # pdpd: else fitted at axis 0
    col = torch.rand(512)
    got = asel.select(cond, then, col, auto_broadcast="pdpd", axis=0)
    assert torch.equal(got, torch.where(cond, then, col[:, None]))
    assert _kernel_calls() == before + 3


def test_out_in_place_including_then_and_else() -> None:
    cond = _random((BIG,), torch.bool, 4)
    then, else_ = torch.rand(BIG), torch.rand(BIG)
    expected = torch.where(cond, then, else_)
    out = torch.empty(BIG)
    assert asel.select(cond, then, else_, out=out) is out and torch.equal(out, expected)
    t, e = then.clone(), else_.clone()
    assert asel.select(cond, t, e, out=t) is t and torch.equal(t, expected)
    t, e = then.clone(), else_.clone()
    assert asel.select(cond, t, e, out=e) is e and torch.equal(e, expected)
    # out overlapping then partially: computed through a temporary
    buf = torch.arange(BIG + 1, dtype=torch.float32)
    shifted = buf[1:].clone()
    got = asel.select(cond, buf[:-1], -shifted, out=buf[1:])
    assert torch.equal(got, torch.where(cond, torch.arange(BIG, dtype=torch.float32), -shifted))


def test_small_out_cold_and_warm_whatever_it_aliases() -> None:
    """A small call with out runs torch.where's own out= when torch takes it, and the
    route (a temporary, then a copy) when torch refuses: a partial overlap, autograd."""
    cond = torch.tensor([True, False, True, False, True])
    for _ in range(3):  # cold, then warm
        then, else_ = torch.arange(5.0), -torch.arange(5.0)
        expected = torch.where(cond, then, else_)
        assert asel.select(cond, then, else_, out=then) is then
        assert torch.equal(then, expected)
        then, else_ = torch.arange(5.0), -torch.arange(5.0)
        assert asel.select(cond, then, else_, out=else_) is else_
        assert torch.equal(else_, expected)
        # out is a shifted view of then's memory (torch.where(out=) refuses it)
        buf = torch.arange(6.0)
        expected = torch.where(cond, buf[:-1].clone(), 7.0)
        assert torch.equal(asel.select(cond, buf[:-1], 7.0, out=buf[1:]), expected)
        assert torch.equal(buf[1:], expected)
        # then broadcasts from out's first element
        row = torch.arange(5.0)
        expected = torch.where(cond, row[:1].clone(), -row)
        got = asel.select(cond, row[:1], -row, out=row)
        assert got is row and torch.equal(row, expected)
        # autograd records the copy into out (torch.where(out=) refuses), with a
        # tensor and with a Python scalar beside x
        for other in (torch.zeros(5), 0.0):
            x = torch.rand(5, requires_grad=True)
            out = torch.zeros(5)
            asel.select(cond, x, other, out=out)
            assert out.requires_grad
            out.sum().backward()
            assert torch.equal(x.grad, cond.float())


def test_family_namespace_is_compat_torch_with_torch_where() -> None:
    """The generic family algorithms' namespace: array_api_compat's torch namespace,
    its inspection API included, with torch.where itself as where."""
    import array_api_compat.torch as compat_torch

    x = torch.ones(3)
    xp = asel.backend_for(x, x, x).namespace(x)
    assert xp.where is torch.where
    assert xp.__array_api_version__ == compat_torch.__array_api_version__
    info = xp.__array_namespace_info__()
    assert info.capabilities() == compat_torch.__array_namespace_info__().capabilities()
    for name, value in vars(compat_torch).items():  # (array-api-compat 1.11 has no __all__)
        if name != "where" and not name.startswith("_"):
            assert getattr(xp, name) is value, name


def test_python_scalars_on_both_routes() -> None:
    for n in (5, BIG):
        cond = _random((n,), torch.bool, 5)
        then = torch.rand(n, dtype=torch.float16)
        assert torch.equal(asel.select(cond, then, 0.1), torch.where(cond, then, 0.1))
        assert torch.equal(asel.select(cond, 3, then), torch.where(cond, 3, then))
    with pytest.raises(asel.ScalarOverflowError):
        asel.select(torch.tensor([True]), torch.ones(1, dtype=torch.float16), 1e10)


# --------------------------------------------------------------------------- autograd


def test_gradients_are_torch_where_s() -> None:
    cond = torch.tensor([[True, False, True]])
    then = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
    else_ = torch.rand(3, dtype=torch.float64, requires_grad=True)  # broadcast over rows
    asel.select(cond, then, else_).sum().backward()
    assert torch.equal(then.grad, cond.expand(2, 3).double())
    assert torch.equal(else_.grad, 2 * (~cond[0]).double())
    assert torch.autograd.gradcheck(
        lambda t, e: asel.select(cond, t, e, auto_broadcast="numpy"),
        (then.detach().requires_grad_(), else_.detach().requires_grad_()),
    )
    assert torch.autograd.gradgradcheck(
        lambda t, e: asel.select(cond, t, e), (then.detach().requires_grad_(), else_)
    )


def test_large_inputs_that_require_grad_take_torch_ops() -> None:
    cond = _random((BIG,), torch.bool, 6)
    then = torch.rand(BIG, requires_grad=True)
    before = _kernel_calls()
    asel.select(cond, then, 0.0).sum().backward()
    assert _kernel_calls() == before  # an autograd graph had to be recorded
    assert torch.equal(then.grad, cond.float())
    with torch.no_grad():
        asel.select(cond, then, 0.0)
    assert _kernel_calls() == before + 1


def test_torch_func_transforms() -> None:
    cond = torch.tensor([True, False, True])
    x = torch.tensor([1.0, 2.0, 3.0])
    grad = torch.func.grad(lambda t: asel.select(cond, t, 0.0).sum())(x)
    assert torch.equal(grad, cond.float())
    batched = torch.func.vmap(lambda c, t: asel.select(c, t, -1.0))(
        torch.tensor([[True, False], [False, True]]), torch.arange(4.0).reshape(2, 2)
    )
    assert torch.equal(batched, torch.tensor([[0.0, -1.0], [-1.0, 3.0]]))
    jac = torch.func.jacrev(lambda t: asel.select(cond, t, t * 2))(x)
    assert torch.equal(jac, torch.diag(torch.tensor([1.0, 2.0, 1.0])))
    jac_fwd = torch.func.jacfwd(lambda t: asel.select(cond, t, t * 2))(x)
    assert torch.equal(jac_fwd, jac)


# --------------------------------------------------------------------------- compilers


def _f(c: Any, a: Any, b: Any) -> Any:
    return asel.select(c, a * 2, b) + 1


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_torch_compile_fullgraph_without_graph_breaks_or_warnings(dynamic: bool) -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_f, fullgraph=True, dynamic=dynamic, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for rows in (5, 7):
            c, a, b = torch.rand(rows, 4) < 0.5, torch.rand(rows, 4), torch.rand(4)
            assert torch.equal(compiled(c, a, b), torch.where(c, a * 2, b) + 1)
    # Dynamo reports what it traced by the traced file's path in the message.
    ours = [
        w
        for w in caught
        if any(
            name in f"{w.filename} {w.message}"
            for name in ("arrayselect", "array_api_compat", "_helpers.py")
        )
    ]
    assert ours == [], [str(w.message) for w in ours]


def test_torch_compile_inductor_matches_torch_where() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_f, fullgraph=True)
    c, a, b = torch.rand(64, 8) < 0.5, torch.rand(64, 8), torch.rand(8)
    assert torch.equal(compiled(c, a, b), torch.where(c, a * 2, b) + 1)


def test_torch_export_and_run() -> None:
    class Pdpd(torch.nn.Module):
        def forward(self, c: Any, a: Any, b: Any) -> Any:
            return asel.select(c, a, b, auto_broadcast="pdpd", axis=0)

    args = (torch.rand(5) < 0.5, torch.rand(5, 3), torch.rand(5))
    program = torch.export.export(Pdpd(), args)
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert targets <= {"aten.reshape.default", "aten.where.self"}, targets
    c, a, b = torch.rand(5) < 0.5, torch.rand(5, 3), torch.rand(5)
    assert torch.equal(program.module()(c, a, b), torch.where(c[:, None], a, b[:, None]))


def test_make_fx_records_torch_ops_not_the_kernel() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    c, a = _random((BIG,), torch.bool, 7), torch.rand(BIG)
    graph = make_fx(lambda c, a: asel.select(c, a, 0.0))(c, a)
    assert "where" in graph.code
    assert torch.equal(graph(c, a), torch.where(c, a, 0.0))


def _graphs(fn: Any, calls: list[tuple[Any, ...]], between: Any = None, **options: Any) -> int:
    torch._dynamo.reset()
    counter = CountingBackend()
    compiled = torch.compile(fn, backend=counter, **options)
    for args in calls:
        compiled(*args)
        if between is not None:
            between(*args)  # eager calls in between must not invalidate the trace
    return counter.graphs


def _select3(c: Any, a: Any, b: Any) -> Any:
    return asel.select(c, a, b)


def _where3(c: Any, a: Any, b: Any) -> Any:
    return asel.where(c, a, b)


def _torch_where3(c: Any, a: Any, b: Any) -> Any:
    return torch.where(c, a, b)


def _same_call_three_times() -> list[tuple[Any, ...]]:
    return [(torch.rand(8) < 0.5, torch.rand(8), torch.rand(8))] * 3


@pytest.mark.parametrize("fn", [_select3, _where3], ids=["select", "where"])
def test_compile_traces_a_repeated_call_once(fn: Any) -> None:
    calls = _same_call_three_times()
    assert _graphs(_torch_where3, calls) == 1
    assert _graphs(fn, calls) == 1
    between = asel.select if fn is _select3 else asel.where
    assert _graphs(fn, calls, between=between) == 1  # eager calls fill the memos


@pytest.mark.parametrize("fn", [_select3, _where3], ids=["select", "where"])
def test_compile_dynamic_traces_no_more_than_torch_where(fn: Any) -> None:
    calls = [(torch.rand(n) < 0.5, torch.rand(n), torch.rand(n)) for n in (2, 3, 5, 7, 9, 17, 33)]
    assert _graphs(fn, calls, dynamic=True) <= _graphs(_torch_where3, calls, dynamic=True) == 1


def test_compile_broadcasts_trace_no_more_than_torch_where() -> None:
    calls = [
        (torch.rand(n, 1) < 0.5, torch.rand(n, m), torch.rand(m)) for n in (2, 3, 4) for m in (5, 6)
    ]
    assert _graphs(_select3, calls) <= _graphs(_torch_where3, calls)


def test_errors_inside_compile_are_the_eager_errors() -> None:
    """Dynamo runs a frame that raised while tracing eagerly, so the user meets the
    core's error itself (with ``fullgraph=True`` Dynamo reports it as a graph break)."""
    c, a = torch.rand(4) < 0.5, torch.rand(4)
    compiled = torch.compile(_select3, backend="eager")
    for other in (torch.rand(5), torch.rand(4, dtype=torch.float64), 1 + 2j):
        with pytest.raises(asel.SelectError) as eager:
            asel.select(c, a, other)
        with pytest.raises(type(eager.value)) as traced:
            compiled(c, a, other)
        assert type(traced.value) is type(eager.value)
        assert str(traced.value) == str(eager.value)


def test_fullgraph_errors_carry_the_core_s_error() -> None:
    """With ``fullgraph=True`` Dynamo raises its own ``Unsupported``; the core's error
    (the same class and message as eagerly) is in its chain of causes."""
    c, a = torch.rand(4) < 0.5, torch.rand(4)
    torch._dynamo.reset()
    compiled = torch.compile(_select3, fullgraph=True, backend="eager")
    for other in (torch.rand(5), torch.rand(4, dtype=torch.float64)):
        with pytest.raises(asel.SelectError) as eager:
            asel.select(c, a, other)
        with pytest.raises(Exception) as traced:
            compiled(c, a, other)
        chain = [traced.value]
        while chain[-1].__cause__ is not None:
            chain.append(chain[-1].__cause__)
        ours = [e for e in chain if type(e) is type(eager.value)]
        assert ours and str(ours[0]) == str(eager.value), chain


def test_dynamo_puts_one_call_in_its_graph() -> None:
    """Dynamo does not trace the core (its guards would be checked before every run):
    the graph it hands the backend holds one call of ``select_in_graph``."""
    from arrayselect.backends.torch_backend import dynamo as torch_dynamo

    torch._dynamo.reset()
    assert torch_dynamo.ALLOWED[0]  # torch._dynamo is imported: registered
    targets: list[Any] = []

    def backend(gm: Any, example_inputs: Any) -> Any:
        targets.extend(n.target for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    compiled = torch.compile(_select3, fullgraph=True, backend=backend)
    c, a, b = torch.rand(4) < 0.5, torch.rand(4), torch.rand(4)
    assert torch.equal(compiled(c, a, b), torch.where(c, a, b))
    assert targets == [torch_dynamo.select_in_graph]


def test_traceable_promotion_is_torch_s_own() -> None:
    """The promotion ``where`` uses under torch.compile, built from parts every
    supported torch's Dynamo traces, equals torch's elementwise_dtypes, for every pair of
    dtypes, ranks 0 and 1, and Python scalars."""
    from arrayselect.backends.torch_backend import traceable_result_type
    from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

    dtypes = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
              torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
              torch.complex128]  # fmt: skip
    operands: list[Any] = [torch.zeros(shape, dtype=d) for d in dtypes for shape in ((), (2,))]
    operands += [False, 0, 0.0, 0j]
    checked = 0
    for x1 in operands:
        for x2 in operands:
            if not isinstance(x1, torch.Tensor) and not isinstance(x2, torch.Tensor):
                continue
            want = elementwise_dtypes(
                x1, x2, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT
            )[1]
            assert traceable_result_type(x1, x2) == want, (x1, x2)
            checked += 1
    assert checked == 24 * 24 + 2 * 24 * 4
    # select_cases promotes its choices and default together
    rng = np.random.default_rng(0)
    for _ in range(300):
        picked = [operands[i] for i in rng.integers(0, len(operands), 4)]
        if not any(isinstance(x, torch.Tensor) for x in picked):
            continue
        kind = ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT
        want = elementwise_dtypes(*picked, type_promotion_kind=kind)[1]
        assert traceable_result_type(*picked) == want, picked


def test_apply_where_under_compile_gives_untaken_elements_an_exact_zero_gradient() -> None:
    """Traced, apply_where takes the double where (no boolean indexing in a graph):
    log sees ones where x <= 0, so no NaN or inf reaches the gradient."""
    x = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    f = torch.compile(
        lambda x: asel.apply_where(x > 0, (x,), torch.log, fill_value=0.0),
        fullgraph=True,
        backend="eager",
    )
    f(x).sum().backward()
    assert x.grad is not None and x.grad.tolist() == [0.0, 0.0, 0.5]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_python_floats_inside_compile(dynamic: bool) -> None:
    c, a = torch.rand(4) < 0.5, torch.rand(4)
    torch._dynamo.reset()
    compiled = torch.compile(_select3, fullgraph=True, dynamic=dynamic, backend="eager")
    for value in (0.5, 1.5, -2.25, 3):
        assert torch.equal(compiled(c, a, value), torch.where(c, a, value))


# How a program comes to torch. Each order's code ends with torch imported.
FIRST_IMPORTS = {
    "arrayselect first": "import arrayselect as asel\nimport torch",
    "torch first": "import torch\nimport arrayselect as asel",
    # asking whether torch is installed (as many libraries do) must not disarm the watch
    "find_spec first": "import importlib.util\nimport arrayselect as asel\n"
    "assert importlib.util.find_spec('torch') is not None\n"
    "assert importlib.util.find_spec('torch') is not None\nimport torch",
    "runtime_info first": "import arrayselect as asel\nasel.runtime_info()\n"
    "import importlib.util\nimportlib.util.find_spec('torch')\nimport torch",
    "import_module": "import importlib\nimport arrayselect as asel\n"
    "torch = importlib.import_module('torch')",
    "in a thread": "import threading\nimport arrayselect as asel\n"
    "t = threading.Thread(target=__import__, args=('torch',))\nt.start()\nt.join()\n"
    "import torch",
}


@pytest.mark.parametrize("order", list(FIRST_IMPORTS))
def test_compile_as_the_first_call_in_a_process(order: str) -> None:
    """The backend exists before the first trace (it is created when torch is
    imported, however it is imported), so the first call of every function inside
    torch.compile(fullgraph=True) neither breaks nor warns; and its call is registered
    with Dynamo when torch.compile imports it."""
    code = (
        FIRST_IMPORTS[order]
        + """
import warnings
warnings.simplefilter("error")  # any warning, from us or from tracing us, fails
assert asel.runtime_info()["libraries"]["torch"] == "backend loaded", asel.runtime_info()
c, a = torch.tensor([True, False]), torch.tensor([1.0, 2.0])
w = torch.tensor([1, 0], dtype=torch.int32)
calls = {
    "select": (lambda c, a: asel.select(c, a, 0.0), [1.0, 0.0]),
    "where": (lambda c, a: asel.where(c, a, -a), [1.0, -2.0]),
    "select_n": (lambda c, a: asel.select_n(w, a, -a), [-1.0, 2.0]),
    "select_cases": (lambda c, a: asel.select_cases([c], [a], 0.0), [1.0, 0.0]),
    "apply_where": (lambda c, a: asel.apply_where(c, (a,), torch.exp, fill_value=0.0),
                    [2.718281828459045, 0.0]),
}
for name, (fn, want) in calls.items():
    f = torch.compile(fn, fullgraph=True, backend="eager")
    got = f(c, a).tolist()
    assert all(abs(g - x) < 1e-6 for g, x in zip(got, want)), (name, got)
from arrayselect.backends.torch_backend import dynamo as torch_dynamo
assert torch_dynamo.ALLOWED[0]  # registered when torch.compile imported torch._dynamo
"""
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


# --------------------------------------------------------------------------- devices, layouts


def test_meta_tensors_give_shape_and_dtype() -> None:
    c = torch.empty(3, 1, dtype=torch.bool, device="meta")
    t = torch.empty(3, 4, dtype=torch.bfloat16, device="meta")
    got = asel.select(c, t, 0.5)
    assert got.device.type == "meta" and got.shape == (3, 4) and got.dtype == torch.bfloat16


def test_cpu_and_meta_mixed_is_a_value_error() -> None:
    with pytest.raises(asel.SelectValueError, match="then is on meta"):
        asel.select(torch.tensor([True]), torch.ones(1, device="meta"), torch.ones(1))


@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr", "quantized", "nested"])
def test_unsupported_layouts_are_type_errors(layout: str) -> None:
    dense = torch.eye(3)
    x: Any
    if layout == "sparse_coo":
        x = dense.to_sparse()
    elif layout == "sparse_csr":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = dense.to_sparse_csr()
    elif layout == "quantized":
        x = torch.quantize_per_tensor(dense, 0.1, 0, torch.qint8)
    else:
        x = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    word = {"quantized": "quantized", "nested": "nested"}.get(layout, layout)
    with pytest.raises(asel.SelectTypeError, match=rf"then is .*{word}"):
        asel.select(torch.ones(3, 3, dtype=torch.bool), x, dense)


def test_cuda_tensors_take_torch_where() -> None:
    if not torch.cuda.is_available():
        pytest.skip(NO_CUDA)
    c = torch.rand(BIG, device="cuda") < 0.5
    a, b = torch.rand(BIG, device="cuda"), torch.rand(BIG, device="cuda")
    before = _kernel_calls()
    assert torch.equal(asel.select(c, a, b), torch.where(c, a, b))
    assert _kernel_calls() == before
    with pytest.raises(asel.SelectValueError, match="device"):
        asel.select(c, a, b.cpu())


def test_force_portable_routes_torch_to_the_portable_backend() -> None:
    c, a = torch.tensor([True, False]), torch.tensor([1.0, 2.0])
    assert asel.backend_for(c, a, a).name == "torch"
    with asel.force_portable():
        assert asel.backend_for(c, a, a).name == "portable[torch]"
        assert asel.select(c, a, -a).tolist() == [1.0, -2.0]


# --------------------------------------------------------------------------- threads


def test_kernel_threads_capped_at_torch_s_unless_chosen() -> None:
    code = """
import torch, numpy as np, arrayselect as asel
from arrayselect.backends.shared import kernel
kernel.set_parallel_threshold(0)
torch.set_num_threads(1)
c, a = torch.rand(300000) < 0.5, torch.rand(300000)
before = kernel.kernel_stats()["threaded_calls"]
asel.select(c, a, 0.0)
capped = kernel.kernel_stats()["threaded_calls"] - before
asel.set_num_threads(2)  # the user's choice wins
before = kernel.kernel_stats()["threaded_calls"]
asel.select(c, a, 0.0)
chosen = kernel.kernel_stats()["threaded_calls"] - before
print(capped, chosen)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "1"], done.stdout


def test_kernel_splits_on_torch_s_openmp_threads() -> None:
    # A split torch call runs on the OpenMP runtime torch runs on (its spinning
    # threads take the work), a NumPy call on the kernel's own pool; a torch without
    # OpenMP, or a build without the kernel, says why not.
    if torch_backend.OPENMP == 0:
        assert torch_backend.OPENMP_MISSING or kernel.KERNEL_MISSING
        pytest.skip(f"no OpenMP runtime to split on: {torch_backend.OPENMP_MISSING}")
    if kernel.KERNEL_MISSING is not None:
        pytest.skip(f"no kernel: {kernel.KERNEL_MISSING}")
    code = """
import torch, numpy as np, arrayselect as asel
from arrayselect.backends.shared import kernel
kernel.set_parallel_threshold(0)
kernel.set_load_guard(False)
asel.set_num_threads(2)
g = torch.Generator().manual_seed(5)
c, a, b = torch.rand(300000, generator=g) < 0.5, torch.rand(300000, generator=g), torch.rand(300000)
counts = []
for x in ((c, a, b), (c.numpy(), a.numpy(), b.numpy())):
    stats = kernel.kernel_stats()
    r = asel.select(*x)
    assert np.array_equal(np.asarray(r), np.where(c.numpy(), a.numpy(), b.numpy()))
    after = kernel.kernel_stats()
    counts += [after[k] - stats[k] for k in ("threaded_calls", "openmp_calls")]
print(*counts)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # torch: split, on OpenMP; NumPy: split, on the kernel's pool
    assert done.stdout.split() == ["1", "1", "1", "0"], done.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_forked_child_splits_on_the_kernel_s_pool() -> None:
    # GNU libgomp's threads do not survive a fork: a parallel region in the child waits
    # for them forever (torch's own ops there too). The child's kernel forgets the
    # OpenMP runtime and splits on its own pool.
    if torch_backend.OPENMP == 0 or kernel.KERNEL_MISSING is not None:
        why = torch_backend.OPENMP_MISSING or kernel.KERNEL_MISSING
        pytest.skip(f"no OpenMP split here: {why}")
    code = """
import os, numpy as np, torch, arrayselect as asel
from arrayselect.backends.shared import kernel
kernel.set_parallel_threshold(0)
kernel.set_load_guard(False)
asel.set_num_threads(2)
c, a, b = torch.rand(10**6) < 0.5, torch.rand(10**6), torch.rand(10**6)
asel.select(c, a, b)
assert kernel.kernel_stats()["openmp_calls"] == 1
pid = os.fork()
if pid == 0:
    before = kernel.kernel_stats()
    r = asel.select(c, a, b)
    after = kernel.kernel_stats()
    ok = np.array_equal(r.numpy(), np.where(c.numpy(), a.numpy(), b.numpy()))
    split = after["threaded_calls"] - before["threaded_calls"]
    os._exit(0 if ok and split == 1 and after["openmp_calls"] == before["openmp_calls"] else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0"], done.stdout


# -- the recent-call check of the fast path (libtorch's C readers or Dynamo's
# TensorGuards, verified at import)


def _outcome(fn: Any, *args: Any) -> Any:
    """A call's result (dtype, shape, device, flags, bits) or its error (type, message)."""
    try:
        r = fn(*args)
    except Exception as exc:
        return (type(exc), str(exc))
    bits = _bits(r.resolve_conj().resolve_neg()).tolist() if r.device.type == "cpu" else None
    return ("ok", r.dtype, tuple(r.shape), r.device, r.requires_grad, bits)


class _Refusing(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise RuntimeError(f"_Refusing refuses {func}")


def _nested() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "nested tensors are a prototype"
        return torch.nested.nested_tensor([torch.zeros(3), torch.zeros(3)])


def _recent_check_cases() -> list[tuple[Any, ...]]:
    """Calls (cond, then, else, auto_broadcast, axis, cond_broadcast) that differ in
    exactly one thing a cached signature must tell apart."""
    c = torch.tensor([True, False, True])
    a, b = torch.arange(3.0), torch.arange(3.0) + 10
    m = torch.empty(3, device="meta")
    grid = torch.arange(6.0).reshape(2, 3)
    z = torch.tensor([1 + 2j, 3 - 1j, 0j], dtype=torch.complex64)
    plain = ("numpy", -1, "unidirectional")
    return [
        (c, a, b, *plain),
        (c, a.double(), b.double(), *plain),  # dtype
        (c, a, b.double(), *plain),  # dtype mismatch: an error
        (c.to(torch.uint8) * 2, a, b, *plain),  # integer cond
        (c, grid.t()[:, 0], b, *plain),  # a view: same shape, other strides
        (c, a.requires_grad_(False).clone().requires_grad_(), b, *plain),
        (c, torch.nn.Parameter(a.clone()), b, *plain),
        (c, z.conj(), z, *plain),  # a conjugate view
        (c.to("meta"), m, m.clone(), *plain),  # device
        (c.to("meta"), torch.tensor(1.0), m, *plain),  # a 0-d CPU tensor with meta ones
        (c, a.to("meta"), b, *plain),  # devices mixed: an error
        (c, a.to_sparse(), b, *plain),  # layout: an error
        (c, a, _nested(), *plain),  # a nested tensor (its strides cannot be read): an error
        (c, a, b.as_subclass(_Refusing), *plain),  # a subclass that refuses every function
        (_nested(), a, b, *plain),
        (c, a[:1], b, *plain),  # shape: broadcast
        (c, a, b, "none", -1, "unidirectional"),  # options
        (c, a[:1], b, "none", -1, "unidirectional"),  # options: an error
        (c, a, b, "pdpd", 0, "unidirectional"),
        (c, a, a, *plain),  # one object twice
        (c, a, 2.5, *plain),  # a Python scalar
        (c, a, 2, *plain),  # of another type: an int, converted through a float
        (c, 2.5, b, *plain),  # in then's place
        (c, a, 2.5 + 1j, *plain),  # of a kind the dtype cannot take: an error
        (c, a.to(torch.int8), 5, *plain),
        (c, a.to(torch.int8), 300, *plain),  # a scalar out of range, after one in range
        (c, a.to(torch.int8), True, *plain),
        (c, a.half(), 1e10, *plain),  # too large for float16: an error
        (c, a.half(), float("inf"), *plain),  # inf is taken as it is
        (c, 2.5, 1.5, *plain),  # two scalars
    ]


@pytest.mark.parametrize("design", [*torch_backend.RECENT_CHECKS, None])
def test_recent_call_check_never_changes_an_answer(design: str | None) -> None:
    # The registered backend (what validation caches for); a fast path of its own.
    backend = asel.backend_for(torch.tensor([True]), torch.zeros(1), torch.zeros(1))
    if design is not None and torch_backend.RECENT_CHECKS[design][0] is None:
        pytest.skip(f"{design} not used here: {torch_backend.RECENT_CHECKS[design][1]}")
    saved = backend.recent_calls
    backend.recent_calls = design
    try:
        fast = backend.fast_path().call
        recent = backend._recent
    finally:
        backend.recent_calls = saved

    def through_fast(c: Any, t: Any, e: Any, ab: str, axis: int, cb: str) -> Any:
        result = fast(c, t, e, ab, axis, cb, None)
        if result is NotImplemented:
            return _general(c, t, e, ab, axis, cb)
        return result

    cases = _recent_check_cases()
    for _ in range(2):  # each signature many times, right after every other one
        for args in cases:
            for _ in range(5):
                assert _outcome(through_fast, *args) == _outcome(_general, *args), args
    assert (recent is None) == (design is None)
    if recent is not None:
        assert recent.held() == 2
        if design == "fields":  # holds a Python scalar's signature, and checks its value
            c, i8 = torch.tensor([True, False]), torch.tensor([1, 2], dtype=torch.int8)
            for _ in range(64):  # held by the 64th miss at the latest
                got = through_fast(c, i8, 7, "numpy", -1, "unidirectional")
            assert torch.equal(got, i8.new_tensor([1, 7]))
            assert recent(c, i8, 9, "numpy", -1, "unidirectional").tolist() == [1, 9]
            assert recent(c, i8, 300, "numpy", -1, "unidirectional") is NotImplemented
            assert recent(c, i8, 9.5, "numpy", -1, "unidirectional") is NotImplemented
        recent.forget()
        assert recent.held() == 0
        c = torch.tensor([True, False, True])
        assert recent(c, c, c, "numpy", -1, "unidirectional") is NotImplemented


def _general(c: Any, t: Any, e: Any, ab: str, axis: int, cb: str) -> Any:
    return _select.select_general(c, t, e, auto_broadcast=ab, axis=axis, cond_broadcast=cb)


def _why_not(design: str) -> str | None:
    from arrayselect.backends.torch_backend import recent as torch_recent

    return torch_recent.load_designs(torch_backend.RECENT_CHECKED_DTYPES)[design][1]


def test_recent_checks_verified_or_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from arrayselect.backends.torch_backend import native as torch_native
    from arrayselect.backends.torch_backend import recent as torch_recent

    version = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    for design, verified_on in (
        ("fields", torch_recent.FIELDS_VERIFIED_ON),
        ("tensor-guards", torch_recent.GUARDS_VERIFIED_ON),
    ):
        assert (_why_not(design) is None) == (version in verified_on), _why_not(design)
    # a torch version it was not checked on
    monkeypatch.setattr(torch_recent, "FIELDS_VERIFIED_ON", ())
    monkeypatch.setattr(torch_recent, "GUARDS_VERIFIED_ON", ())
    for design in ("fields", "tensor-guards"):
        assert "is not one of" in str(_why_not(design))
    monkeypatch.setattr(torch_recent, "FIELDS_VERIFIED_ON", (version,))
    monkeypatch.setattr(torch_recent, "GUARDS_VERIFIED_ON", (version,))
    # "fields" reads the layout of torch 2.13-2.15's tensor object (the PyObject header,
    # the at::Tensor, two hook pointers); torch 2.6-2.9's has another size, which the
    # design refuses before reading anything, so its later checks cannot be reached
    word = ctypes.sizeof(ctypes.c_void_p)
    if torch._C.TensorBase.__basicsize__ != object.__basicsize__ + 3 * word:
        assert "bytes, not the" in str(_why_not("fields"))
        fields: tuple[str, ...] = ()
    else:
        fields = ("fields",)
    # answers that disagree with torch's attributes on a probe pair
    monkeypatch.setattr(torch_recent, "same_key", lambda x, y: x is y)
    monkeypatch.setattr(torch_recent, "same_guarded", lambda x, y: x is y)
    for design in (*fields, "tensor-guards"):
        assert "disagrees" in str(_why_not(design))
    monkeypatch.undo()
    monkeypatch.setattr(torch_recent, "FIELDS_VERIFIED_ON", (version,))
    monkeypatch.setattr(torch_recent, "GUARDS_VERIFIED_ON", (version,))
    # libtorch readers that misread: the dtype read as the device index (every probe
    # still reads, but dtypes collide)
    if fields:
        readers = torch_native.aoti_readers()
        misread = (readers[2], *readers[1:])
        monkeypatch.setattr(torch_native, "aoti_readers", lambda: misread)
        assert "disagrees" in str(_why_not("fields"))
        # no libtorch_cpu to read through
        monkeypatch.setattr(torch_native, "aoti_readers", _raise_os_error)
        assert "OSError" in str(_why_not("fields"))
    # TensorGuards not importable
    import torch._C._dynamo.guards as dynamo_guards

    monkeypatch.delattr(dynamo_guards, "TensorGuards")
    assert "ImportError" in str(_why_not("tensor-guards"))


def _raise_os_error() -> Any:
    raise OSError("no libtorch_cpu here")


def test_fields_verified_on_cuda_tensors() -> None:
    # At import the readers are checked on CPU and meta tensors only (a CUDA tensor
    # there would create a CUDA context in every process); here, on CUDA ones too.
    from arrayselect.backends.torch_backend import recent as torch_recent

    if not torch.cuda.is_available():
        pytest.skip(NO_CUDA)
    make = torch_backend.RECENT_CHECKS["fields"][0]
    if make is None:
        pytest.skip(f"fields not used here: {torch_backend.RECENT_CHECKS['fields'][1]}")
    devices = ["cpu", "meta"] + [f"cuda:{k}" for k in range(torch.cuda.device_count())]
    probes = torch_recent.probe_tensors(torch_backend.RECENT_CHECKED_DTYPES, devices)
    probes.append(torch.zeros((), device="cuda"))
    assert torch_recent._verify_fields(make(None), probes) is None


def test_fields_read_what_torch_says() -> None:
    make = torch_backend.RECENT_CHECKS["fields"][0]
    if make is None:
        pytest.skip(f"fields not used here: {torch_backend.RECENT_CHECKS['fields'][1]}")
    check: Any = make(None)
    x = torch.zeros((4, 5, 6), dtype=torch.float64)[1:, ::2]
    dtype, device_type, device_index, layout, sizes = check.read(x)
    assert sizes == (3, 3, 6)
    assert check.read(x.float())[0] != dtype
    assert check.read(x.to("meta"))[1:3] != (device_type, device_index)
    assert check.read(x.to_sparse())[3] != layout
    assert check.read(torch.nn.Parameter(x)) is None  # not exactly torch.Tensor
    assert check.read(_nested()) is None  # torch refuses a nested tensor's sizes
    assert check.read(np.zeros(3)) is None


def test_signature_tells_tensors_apart_as_their_attributes_do() -> None:
    """The backend's signature (the fields check's reading where it is verified) is
    equal for two tensors exactly when their shape, dtype, device and layout are; what
    it cannot read (a Parameter, a nested tensor) it signs by those attributes, and a
    reading never equals such a signature (a nested tensor has no shape to sign: the
    general path says so)."""
    from arrayselect.backends.torch_backend import recent as torch_recent

    backend = torch_backend.TorchBackend()
    sign = backend.signature
    if isinstance(sign, tuple):
        pytest.skip(f"fields not used here: {torch_backend.RECENT_CHECKS['fields'][1]}")
    with pytest.raises(RuntimeError, match="sizes"):
        sign(_nested())
    probes = torch_recent.probe_tensors(torch_backend.RECENT_CHECKED_DTYPES)
    probes.append(torch.nn.Parameter(torch.zeros((2, 3))))
    signs = [sign(x) for x in probes]
    for x, sx in zip(probes, signs, strict=True):
        if type(x) is not torch.Tensor or x.dim() > 16:
            assert sx == (x.shape, x.dtype, x.device, x.layout)
        for y, sy in zip(probes, signs, strict=True):
            same = type(x) is type(y) and torch_recent.same_key(x, y)
            read_both = type(sx[0]) is type(sy[0])
            assert (sx == sy) == (same and read_both), (x, y)


def test_family_on_meta_tensors_computes_no_values() -> None:
    """Meta tensors have a shape and dtype but no values (the backend's ``data_free``):
    ``apply_where`` takes the double where, which needs none, and every call gives a
    meta result of the right shape and dtype."""
    x = torch.empty((2, 3), device="meta")
    c = torch.empty((2, 3), dtype=torch.bool, device="meta")
    w = torch.empty((3,), dtype=torch.int32, device="meta")
    for result, dtype in (
        (asel.apply_where(c, x, torch.log, fill_value=0.0), torch.float32),
        (asel.apply_where(c, x, torch.log, torch.neg), torch.float32),
        (asel.select_n(c, x, x), torch.float32),
        (asel.select_n(w, x, x, x), torch.float32),
        (asel.select_cases([c], [x], 0.0), torch.float32),
    ):
        assert result.device.type == "meta"
        assert result.shape == (2, 3)
        assert result.dtype == dtype


def test_scalar_arrays_have_torch_tensors_bits() -> None:
    """The backend's 0-d tensor for a Python scalar (``torch.scalar_tensor``) has the bits
    ``torch.tensor`` gives, for every dtype the backend serves and values up to the ends
    of its range: what the core admits."""
    backend = torch_backend.TorchBackend()
    like = torch.zeros(1)
    for dtype in torch_backend.RECENT_CHECKED_DTYPES:
        if dtype == torch.bool:
            values: list[Any] = [True, False]
        elif not (dtype.is_floating_point or dtype.is_complex):
            info = torch.iinfo(dtype)
            values = [int(info.min), int(info.max), 0, 1, int(info.max) // 3]
        else:
            real = torch.finfo(dtype if not dtype.is_complex else dtype.to_real())
            edges = [float(real.max), -float(real.max), float(real.tiny), 0.1, 1 / 3, -0.0]
            values = [*edges, float("inf"), float("-inf"), float("nan"), 7, True]
            if dtype.is_complex:
                values += [complex(a, b) for a in edges[:3] for b in edges[3:]]
        for value in values:
            got = backend.scalar_array(value, dtype, like)
            want = torch.tensor(value, dtype=dtype)
            assert got.dtype == dtype and got.shape == ()
            assert bytes(got.reshape(1).view(torch.uint8)) == bytes(
                want.reshape(1).view(torch.uint8)
            ), (dtype, value)
