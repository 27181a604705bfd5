"""Conformance of :func:`arrayselect.select` with the real runtimes.

The seeded cases of :mod:`tests.conformance_cases` (every mode, ranks 0-6,
zero-size dimensions, every value dtype, integer conditions) run through

* **OpenVINO** ``Select`` (opset1; the newest opset still has Select-1): built
  with ``NodeFactory`` (the only Python way to set the pdpd ``axis``), then
  (a) compiled on the CPU plugin and inferred, and (b) evaluated by the
  reference implementation through ``Node.evaluate`` (``ov::op::v1::Select::
  evaluate`` -> ``ov::reference::select``);
* **ONNX Runtime** ``Where`` (a one-node ONNX graph, CPU execution provider)
  for the ``numpy`` cases (ONNX has no other broadcasting mode);
* **PaddlePaddle**: ``paddle.where`` for the ``numpy`` cases, and the axis
  broadcasting of Paddle's elementwise operators (``elementwise_add`` with
  ``axis``, the rule OpenVINO's ``pdpd`` mode is named after) for the ``pdpd``
  cases.

Each runtime answer is compared with ``arrayselect`` on acceptance, output
shape and output bytes. Where a runtime disagrees, the disagreement must be one
of the named entries of :data:`DEVIATIONS`: the comparison then runs against
``arrayselect`` under the option that reproduces the runtime (e.g.
``cond_broadcast="multidirectional"``) or against an exact model of the
classified behaviour. Nothing is skipped silently: a runtime call that cannot
be made safely (the OpenVINO reference evaluation writes out of bounds for some
shapes) is a classified deviation too, and every deviation must be observed by
the seeded cases or a pinned example (``test_*_deviations_all_observed``).

Each runtime's tests skip with a reason when it is not installed: install the
``conformance`` extra (``pip install -e '.[conformance]'``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from conformance_cases import (
    Case,
    Outcome,
    generate_cases,
    make_inputs,
    quiet_signaling_nans,
    spec_outcome,
    value_dtype,
)

# --------------------------------------------------------------------------- deviations


@dataclasses.dataclass(frozen=True)
class Deviation:
    """A named place where a runtime and ``arrayselect`` are known to disagree.

    ``kind`` says whose rule differs: ``"runtime bug"`` (the runtime deviates from
    its own specification or documentation), ``"runtime rule"`` (the runtime's own
    specification differs from the Select specifications) or ``"extension"``
    (``arrayselect`` accepts more than the runtime, by SPEC.md).
    """

    name: str
    runtime: str
    kind: str
    description: str
    source: str


_OV = "https://github.com/openvinotoolkit/openvino/blob/master/"
_ORT = "https://github.com/microsoft/onnxruntime/blob/main/"
_PD = "https://github.com/PaddlePaddle/Paddle/blob/develop/"

DEVIATIONS: dict[str, Deviation] = {
    d.name: d
    for d in (
        Deviation(
            "ov_numpy_cond_multidirectional",
            "openvino",
            "runtime bug",
            "numpy mode: cond is broadcast multidirectionally (may enlarge the output), "
            "the Select-1 specification says one way; = cond_broadcast='multidirectional'",
            _OV + "src/core/shape_inference/include/select_shape_inference.hpp "
            "(shape_infer: broadcast_merge_into of then and then cond into else)",
        ),
        Deviation(
            "ov_pdpd_trailing_ones_not_trimmed",
            "openvino",
            "runtime bug",
            "pdpd, explicit axis: shape inference does not ignore trailing 1s of else/cond, "
            "so a source that fits once they are trimmed is rejected when axis + rank "
            "exceeds then's rank (the broadcast-rules document trims them)",
            _OV + "src/core/src/partial_shape.cpp (PartialShape::broadcast_merge_into, PDPD)",
        ),
        Deviation(
            "ov_pdpd_one_onto_zero",
            "openvino",
            "runtime bug",
            "pdpd: a size-1 dimension of else/cond is rejected against a size-0 dimension "
            "of then ('src > dst' check), although 1 broadcasts to any size",
            _OV + "src/core/src/partial_shape.cpp (PartialShape::broadcast_merge_into, PDPD: "
            "src[i] > dst[axis + i])",
        ),
        Deviation(
            "ov_pdpd_zero_onto_one",
            "openvino",
            "runtime bug",
            "pdpd: a size-0 dimension of else/cond meeting a size-1 dimension of then is "
            "accepted and shrinks the output to size 0 there, so the output is not then's "
            "shape (Select-1: the output has then's shape)",
            _OV + "src/core/src/partial_shape.cpp (PartialShape::broadcast_merge_into, PDPD: "
            "Dimension::broadcast_merge into dst)",
        ),
        Deviation(
            "ov_integer_cond_rejected",
            "openvino",
            "extension",
            "cond must be boolean ('Argument 0 must have boolean element type'); "
            "arrayselect also takes integer conds, nonzero is true (DirectML, SPEC.md §4)",
            _OV + "src/core/src/op/select.cpp (Select::validate_and_infer_types)",
        ),
        Deviation(
            "ov_f16_via_f32",
            "openvino",
            "runtime bug",
            "float16 (reference evaluation and CPU plugin): values go through float32 and "
            "back, which sets the quiet bit of signalling NaNs (payload kept)",
            _OV + "src/core/src/op/select.cpp (Select::evaluate: IF_TYPE_OF_CONVERT_TENSORS, "
            "f16/bf16 not in the list); CPU: src/plugins/intel_cpu/src/nodes/eltwise.cpp",
        ),
        Deviation(
            "ov_pdpd_cond_axis_from_else",
            "openvino",
            "runtime bug",
            "pdpd with axis=-1, reference evaluation and the CPU plugin's Eltwise node: cond "
            "is placed at rank(then) - rank(else) (the axis computed for else) instead of "
            "rank(then) - rank(cond), so the values differ from shape inference's placement "
            "when the ranks of cond and else differ (values are garbage where that misplaced "
            "cond does not fit then)",
            _OV + "src/core/reference/include/openvino/reference/autobroadcast_binop.hpp "
            "(autobroadcast_select, PDPD: axis = arg1_shape.size() - arg2_shape.size())",
        ),
        Deviation(
            "ov_cpu_snippets_pdpd_axis_rejected",
            "openvino-cpu",
            "runtime bug",
            "CPU plugin, dtypes compiled by snippets (bool, int8, uint8, f16, bf16, f32, "
            "f64): pdpd with an explicit axis fails to compile ('Unsupported auto broadcast "
            "specification')",
            _OV + "src/common/snippets/src/shape_inference/shape_infer_instances.cpp "
            "(SelectShapeInfer)",
        ),
        Deviation(
            "ov_cpu_bf16_flushes_subnormals",
            "openvino-cpu",
            "runtime bug",
            "CPU plugin, bfloat16: computed through float32 with denormals flushed: "
            "signalling NaNs are quieted and subnormals become zero",
            _OV + "src/plugins/intel_cpu/src/nodes/subgraph.cpp (snippets run bf16 via f32; "
            "the plugin sets FTZ/DAZ)",
        ),
        Deviation(
            "ov_reference_out_of_bounds",
            "openvino-reference",
            "runtime bug",
            "the reference loops over max(dims) (numpy) or then's shape (pdpd), not the "
            "inferred output shape: with zero-size broadcasting, or a cond misplaced by "
            "ov_pdpd_cond_axis_from_else, it reads or writes out of bounds "
            "('free(): invalid pointer'); such calls are not made",
            _OV + "src/core/reference/include/openvino/reference/autobroadcast_binop.hpp "
            "(autobroadcast_select: output_shape.push_back(std::max(...)))",
        ),
        Deviation(
            "ov_cpu_f64_as_f32",
            "openvino-cpu",
            "runtime bug",
            "CPU plugin: float64 is converted to float32 and back (rounded, values beyond "
            "float32 and infinities saturated to its largest value, NaN payload truncated)",
            _OV + "src/plugins/intel_cpu/src/transformations/transformation_pipeline.cpp "
            "(precisions map f64 -> f32)",
        ),
        Deviation(
            "ov_cpu_i64_as_i32",
            "openvino-cpu",
            "runtime bug",
            "CPU plugin: int64 and uint64 are converted to int32 and back (upper 32 bits "
            "replaced by the sign extension of bit 31)",
            _OV + "src/plugins/intel_cpu/src/transformations/transformation_pipeline.cpp "
            "(precisions map i64/u64 -> i32)",
        ),
        Deviation(
            "onnx_where_multidirectional",
            "onnxruntime",
            "runtime rule",
            "ONNX Where broadcasts all three inputs (cond may enlarge the output); "
            "= cond_broadcast='multidirectional'",
            "https://onnx.ai/onnx/operators/onnx__Where.html",
        ),
        Deviation(
            "ort_where_dtype_subset",
            "onnxruntime",
            "runtime bug",
            "the CPU kernel exists for a subset of ONNX Where's types only; bool, int16, "
            "uint16, uint64 and bfloat16 are NOT_IMPLEMENTED",
            _ORT + "onnxruntime/core/providers/cpu/tensor/where_op.cc (WHERE_TYPED_KERNEL list)",
        ),
        Deviation(
            "ort_where_negative_zero",
            "onnxruntime",
            "runtime bug",
            "where cond is true and then is -0.0 the output is +0.0: the kernel merges "
            "'cond ? X : 0' and '!cond ? Y : 0' with 'x != 0 ? x : y'",
            _ORT + "onnxruntime/core/providers/cpu/tensor/where_op.cc "
            "(Where<T>::Compute, MergeBroadcastFuncs)",
        ),
        Deviation(
            "ort_where_f16_nan_bits",
            "onnxruntime",
            "runtime bug",
            "float16: NaNs are not copied bit for bit; depending on the broadcast path a "
            "signalling NaN is quieted or the payload is dropped (sign kept); compared as "
            "'a NaN of the same sign' there, bit for bit everywhere else",
            _ORT + "onnxruntime/core/providers/cpu/tensor/where_op.cc (Where<MLFloat16>: "
            "selection and merge compare and copy through float)",
        ),
        Deviation(
            "onnx_where_bool_cond_only",
            "onnxruntime",
            "extension",
            "ONNX Where's condition is tensor(bool); arrayselect also takes integer conds",
            "https://onnx.ai/onnx/operators/onnx__Where.html",
        ),
        Deviation(
            "paddle_where_multidirectional",
            "paddle",
            "runtime rule",
            "paddle.where broadcasts all three inputs; = cond_broadcast='multidirectional'",
            _PD + "python/paddle/tensor/search.py (where: broadcast_shape of all three)",
        ),
        Deviation(
            "paddle_where_dtype_subset",
            "paddle",
            "runtime rule",
            "the CPU where kernel is registered for bool, int32, int64, float32, float64 "
            "(and complex) only; Paddle has no uint16/uint32/uint64 tensors at all",
            _PD + "paddle/phi/kernels/cpu/where_kernel.cc (PD_REGISTER_KERNEL)",
        ),
        Deviation(
            "paddle_elementwise_bidirectional",
            "paddle",
            "runtime rule",
            "elementwise axis broadcasting is two-way: a size-1 dimension of the first "
            "operand grows to the second's, and a higher-rank second operand swaps the roles, "
            "so the output can be larger than then (pdpd fits else/cond one way onto then)",
            _PD + "paddle/phi/kernels/funcs/common_shape.h (GetBroadcastDimsArrays)",
        ),
        Deviation(
            "paddle_elementwise_equal_rank_axis",
            "paddle",
            "runtime rule",
            "operands of equal rank and different shapes need axis -1 or 0 ('axis should "
            "be -1 or 0 while the dimension of tensor X is equal to ...'); pdpd allows any "
            "axis at which the trimmed source fits",
            _PD + "paddle/phi/infermeta/binary.cc (ElementwiseRawInferMeta)",
        ),
        Deviation(
            "paddle_elementwise_same_shape_ignores_axis",
            "paddle",
            "runtime rule",
            "operands of the same shape are added elementwise whatever the axis; pdpd "
            "rejects an axis at which the source does not fit",
            _PD + "paddle/phi/infermeta/binary.cc (ElementwiseRawInferMeta: same dims)",
        ),
        Deviation(
            "paddle_elementwise_axis_range",
            "paddle",
            "runtime rule",
            "axis must be below the larger rank ('The axis range must be [-r, r)'); pdpd "
            "also allows axis == rank(then) for a source whose trimmed shape is empty",
            _PD + "paddle/phi/infermeta/binary.cc (ElementwiseRawInferMeta: axis range check)",
        ),
        Deviation(
            "paddle_elementwise_out_of_bounds",
            "paddle",
            "runtime bug",
            "an explicit axis with axis + rank(second) > rank(first) and unequal ranks "
            "(e.g. trailing 1s "
            "that only fit once trimmed) copies the second operand's dims past the end of "
            "the dims array: heap corruption (glibc 'malloc assertion failure', or a hang); "
            "such calls are not made",
            _PD + "paddle/phi/kernels/funcs/common_shape.h (GetBroadcastDimsArrays: "
            "std::copy of x_dims at x_dims_array + axis)",
        ),
        Deviation(
            "paddle_where_bool_cond_only",
            "paddle",
            "extension",
            "paddle.where wants a boolean condition; arrayselect also takes integer conds",
            _PD + "python/paddle/tensor/search.py (where: condition dtype check)",
        ),
    )
}


# ------------------------------------------------------------------------- comparison


@dataclasses.dataclass
class Expectation:
    """What a runtime should answer for a case, and which deviations made it so."""

    outcome: Outcome
    applied: list[str] = dataclasses.field(default_factory=list)
    run: bool = True  # False: the call is not made (see ov_reference_out_of_bounds)
    #: True: float16 NaNs need only be NaNs of the same sign (ort_where_f16_nan_bits).
    nan_sign_only: bool = False

    def deviate(self, name: str, outcome: Outcome | None = None) -> None:
        """Record ``name`` (which must be classified) and, optionally, a new outcome."""
        assert name in DEVIATIONS, f"unclassified deviation {name!r}"
        self.applied.append(name)
        if outcome is not None:
            self.outcome = outcome


def _with_data(outcome: Outcome, data: bytes) -> Outcome:
    return dataclasses.replace(outcome, data=data)


def check_cases(
    cases: Sequence[Case],
    expect: Callable[[Case, tuple[np.ndarray, ...]], Expectation],
    run: Callable[[Case, tuple[np.ndarray, ...]], Outcome],
    seen: Counter[str],
) -> None:
    """Run every case through ``run`` and compare with ``expect``; fail with all mismatches."""
    failures: list[str] = []
    for case in cases:
        arrays = make_inputs(case)
        expected = expect(case, arrays)
        seen.update(expected.applied)
        if not expected.run:
            continue
        got = run(case, arrays)
        if expected.nan_sign_only and got.accepted and got.shape == expected.outcome.shape:
            got = _f16_nans_to(got, expected.outcome)
        if not got.same_as(expected.outcome) or (
            got.accepted and got.dtype != expected.outcome.dtype
        ):
            failures.append(
                f"{case}\n    runtime:  {got}\n    expected: {expected.outcome}"
                f" (deviations applied: {expected.applied or 'none'})"
                + _diff(got, expected.outcome, case.dtype)
            )
    assert not failures, f"{len(failures)} of {len(cases)} cases differ:\n" + "\n".join(
        failures[:15]
    )


def _f16_nans_to(got: Outcome, want: Outcome) -> Outcome:
    """``got`` with each float16 NaN replaced by ``want``'s bits where that is a NaN of
    the same sign (the only freedom ort_where_f16_nan_bits grants)."""
    assert got.data is not None and want.data is not None
    a = np.frombuffer(got.data, np.uint16).copy()
    b = np.frombuffer(want.data, np.uint16)
    nan_a = (a & 0x7C00) == 0x7C00
    nan_a &= (a & 0x03FF) != 0
    nan_b = (b & 0x7C00) == 0x7C00
    nan_b &= (b & 0x03FF) != 0
    same = nan_a & nan_b & ((a & 0x8000) == (b & 0x8000))
    a[same] = b[same]
    return _with_data(got, a.tobytes())


def _diff(got: Outcome, want: Outcome, dtype: str) -> str:
    if not (got.accepted and want.accepted and got.data and want.data):
        return ""
    if len(got.data) != len(want.data):
        return ""
    size = value_dtype(dtype).itemsize
    a = np.frombuffer(got.data, f"u{size}" if size > 1 else "u1")
    b = np.frombuffer(want.data, f"u{size}" if size > 1 else "u1")
    bad = np.flatnonzero(a != b)[:4]
    return "\n    first differing elements (runtime, expected bits): " + ", ".join(
        f"[{i}] {a[i]:#x} vs {b[i]:#x}" for i in bad
    )


#: Cases added to the seeded ones so that every deviation is met whatever the seed
#: draws (each names the deviation it pins).
PINNED = (
    Case(1000, (), (1, 3), (0, 3), "pdpd", dtype="float32"),  # ov_pdpd_zero_onto_one
    Case(1001, (2, 1), (0, 3), (3,), "pdpd", axis=0, dtype="int32"),  # ov_pdpd_one_onto_zero
    Case(1002, (4, 1), (2, 4), (2, 4), "pdpd", axis=1, dtype="int32"),  # ...trailing_ones...
    Case(1003, (16,), (4, 16), (4, 16), "numpy", dtype="float32"),  # ort_where_negative_zero
    Case(1004, (), (2, 3), (2, 3), "pdpd", axis=1, dtype="int32"),  # paddle same shape
    Case(1005, (), (2, 3), (3, 1), "pdpd", axis=1, dtype="int32"),  # paddle equal rank
    Case(1006, (3,), (2, 3), (2, 3), "pdpd", dtype="int32"),  # ov_pdpd_cond_axis_from_else
)
CASES = generate_cases() + list(PINNED)
NUMPY_CASES = [c for c in CASES if c.mode == "numpy"]
PDPD_CASES = [c for c in CASES if c.mode == "pdpd"]


# ============================================================================ OpenVINO


@functools.cache
def _ov_types(ov: ModuleType) -> dict[str, Any]:
    t = ov.Type
    return {
        "bool": t.boolean,
        "int8": t.i8,
        "int16": t.i16,
        "int32": t.i32,
        "int64": t.i64,
        "uint8": t.u8,
        "uint16": t.u16,
        "uint32": t.u32,
        "uint64": t.u64,
        "float16": t.f16,
        "bfloat16": t.bf16,
        "float32": t.f32,
        "float64": t.f64,
    }


@pytest.fixture(scope="module")
def ov() -> ModuleType:
    """The ``openvino`` module, or a skip."""
    return pytest.importorskip("openvino", reason="openvino is not installed (extra 'conformance')")


def _ov_tensor(ov: ModuleType, array: np.ndarray, name: str) -> Any:
    """An OpenVINO tensor holding exactly the bits of ``array``.

    Written through a raw view: ``ov.Tensor`` cannot wrap ``ml_dtypes.bfloat16``.
    """
    tensor = ov.Tensor(_ov_types(ov)[name], ov.Shape(list(array.shape)))
    if array.size:
        view = tensor.data.reshape(-1).view(np.uint8)
        view[:] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    return tensor


def _ov_outcome(tensor: Any, dtype: str) -> Outcome:
    data = np.asarray(tensor.data).tobytes(order="C")
    return Outcome(True, tuple(tensor.shape), str(value_dtype(dtype)), data)


def _ov_select(ov: ModuleType, case: Case) -> tuple[Any, list[Any]]:
    """Build the Select node of ``case``; raises what OpenVINO's validation raises."""
    from openvino.utils.node_factory import NodeFactory

    types = _ov_types(ov)
    params = [
        ov.opset1.parameter(list(shape), types[dtype])
        for shape, dtype in zip(case.shapes, (case.cond_dtype, case.dtype, case.dtype), strict=True)
    ]
    attrs: dict[str, Any] = {"auto_broadcast": case.mode.upper()}
    if case.mode == "pdpd":
        # The string form ("pdpd") leaves the axis at AutoBroadcastSpec's default, 0.
        attrs["auto_broadcast.auto_broadcast_axis"] = case.axis
    node = NodeFactory("opset1").create("Select", [p.output(0) for p in params], attrs)
    return node, params


def _ov_run_cpu(ov: ModuleType, case: Case, arrays: tuple[np.ndarray, ...]) -> Outcome:
    try:
        node, params = _ov_select(ov, case)
        model = ov.Model([node], params)
        # f32 inference precision: the CPU plugin may otherwise run f32 in bf16.
        compiled = _ov_core(ov).compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    except RuntimeError as exc:
        return Outcome.rejected(" ".join(str(exc).split()))
    request = compiled.create_infer_request()
    names = (case.cond_dtype, case.dtype, case.dtype)
    request.infer([_ov_tensor(ov, a, n) for a, n in zip(arrays, names, strict=True)])
    return _ov_outcome(request.get_output_tensor(0), case.dtype)


def _ov_run_reference(ov: ModuleType, case: Case, arrays: tuple[np.ndarray, ...]) -> Outcome:
    try:
        node, _ = _ov_select(ov, case)
    except RuntimeError as exc:
        return Outcome.rejected(" ".join(str(exc).split()))
    out = ov.Tensor(_ov_types(ov)[case.dtype], ov.Shape([]))
    names = (case.cond_dtype, case.dtype, case.dtype)
    inputs = [_ov_tensor(ov, a, n) for a, n in zip(arrays, names, strict=True)]
    assert node.evaluate([out], inputs), "Select::evaluate returned false"
    return _ov_outcome(out, case.dtype)


@functools.cache
def _ov_core(ov: ModuleType) -> Any:
    return ov.Core()


def _trim(shape: tuple[int, ...]) -> tuple[int, ...]:
    while shape and shape[-1] == 1:
        shape = shape[:-1]
    return shape


def _ov_pdpd_merge(dst: list[int], src: tuple[int, ...], axis: int) -> bool:
    """OpenVINO's ``PartialShape::broadcast_merge_into`` for PDPD, on static shapes.

    A transcription of the C++ (see ``ov_pdpd_*`` in :data:`DEVIATIONS`): no
    trimming of trailing 1s, ``src > dst`` rejected, and a 0 in src merged into a
    1 of dst.
    """
    if len(src) > len(dst) or axis < -1:
        return False
    start = len(dst) - len(src) if axis == -1 else axis
    if start + len(src) > len(dst):
        return False
    for i, s in enumerate(src):
        d = dst[start + i]
        if s > d:
            return False
        if d == s or s == 1:
            continue
        if d == 1:  # Dimension::broadcast_merge(1, s) gives s (here s == 0)
            dst[start + i] = s
            continue
        return False
    return True


def _ov_pdpd_shape(case: Case) -> tuple[int, ...] | None:
    """The output shape OpenVINO's shape inference gives a pdpd case (None: rejected)."""
    out = list(case.then_shape)
    for src in (case.else_shape, case.cond_shape):
        if not _ov_pdpd_merge(out, src, case.axis):
            return None
    return tuple(out)


def _explain_ov_pdpd(case: Case, expected: Expectation, spec_ok: bool) -> None:
    """Name the deviations that make OpenVINO's pdpd shape answer differ from the spec."""
    then = case.then_shape
    for src in (case.else_shape, case.cond_shape):
        start = len(then) - len(src) if case.axis == -1 else case.axis
        if case.axis != -1 and start + len(src) > len(then) >= start + len(_trim(src)):
            expected.deviate("ov_pdpd_trailing_ones_not_trimmed")
        if start >= 0 and start + len(src) <= len(then):
            pairs = [(s, then[start + i]) for i, s in enumerate(src)]
            if (1, 0) in pairs:
                expected.deviate("ov_pdpd_one_onto_zero")
            if (0, 1) in pairs:
                expected.deviate("ov_pdpd_zero_onto_one")
    assert expected.applied, (
        f"{case}: OpenVINO's pdpd shape rule and arrayselect disagree "
        f"(spec {'accepts' if spec_ok else 'rejects'}) for no classified reason"
    )


def _ov_reference_cond_shape(case: Case) -> tuple[int, ...]:
    """Where the reference puts cond in pdpd mode, as a full-rank shape (see the C++)."""
    rank = len(case.then_shape)
    axis = rank - len(case.else_shape) if case.axis == -1 else case.axis
    trimmed = _trim(case.cond_shape)
    lead = min(axis, rank - len(trimmed))
    return (1,) * lead + trimmed + (1,) * (rank - lead - len(trimmed))


def _spec_cond_shape(case: Case) -> tuple[int, ...]:
    rank = len(case.then_shape)
    axis = rank - len(case.cond_shape) if case.axis == -1 else case.axis
    trimmed = _trim(case.cond_shape)
    return (1,) * axis + trimmed + (1,) * (rank - axis - len(trimmed))


def expect_openvino(case: Case, arrays: tuple[np.ndarray, ...], engine: str) -> Expectation:
    """What OpenVINO (``engine`` "cpu" or "reference") answers, as classified."""
    spec = spec_outcome(case, arrays)
    expected = Expectation(spec)
    if case.cond_dtype != "bool":
        if spec.accepted:
            expected.deviate("ov_integer_cond_rejected", Outcome.rejected("boolean cond"))
        return expected
    if case.mode == "numpy":
        multi = spec_outcome(case, arrays, cond_broadcast="multidirectional")
        if not multi.same_as(spec):
            expected.deviate("ov_numpy_cond_multidirectional", multi)
    elif case.mode == "pdpd":
        shape = _ov_pdpd_shape(case)
        if (shape is not None) != spec.accepted or (shape is not None and shape != spec.shape):
            _explain_ov_pdpd(case, expected, spec.accepted)
            if shape is None:
                expected.outcome = Outcome.rejected("OpenVINO pdpd shape rule")
            else:
                assert 0 in shape, f"{case}: OpenVINO accepts with a nonzero shape {shape}"
                expected.outcome = Outcome(
                    True, shape, spec.dtype or str(value_dtype(case.dtype)), b""
                )
    out = expected.outcome
    if not out.accepted:
        return expected
    if engine == "cpu" and case.mode == "pdpd" and case.dtype in _OV_CPU_SNIPPETS_DTYPES:
        # A zero-size output is never tokenized, so it compiles.
        if case.axis != -1 and 0 not in case.then_shape:
            expected.deviate("ov_cpu_snippets_pdpd_axis_rejected", Outcome.rejected("snippets"))
            return expected
    elif case.mode == "pdpd" and out.shape == case.then_shape:
        _expect_ov_misplaced_cond(case, arrays, expected, engine)
    if engine == "reference" and expected.run:
        _expect_ov_reference_bounds(case, expected)
    if expected.run and expected.outcome.data:
        _expect_ov_value_conversions(case, expected, engine)
    return expected


#: Value dtypes that the CPU plugin compiles with snippets (measured with OpenVINO
#: 2026.4: these fail ov_cpu_snippets_pdpd_axis_rejected, and place cond as the
#: specification does); the others run through its Eltwise node.
_OV_CPU_SNIPPETS_DTYPES = frozenset(
    {"bool", "int8", "uint8", "float16", "bfloat16", "float32", "float64"}
)


def _expect_ov_misplaced_cond(
    case: Case, arrays: tuple[np.ndarray, ...], expected: Expectation, engine: str
) -> None:
    placed = _ov_reference_cond_shape(case)
    if placed == _spec_cond_shape(case):
        return
    expected.deviate("ov_pdpd_cond_axis_from_else")
    size = int(np.prod(case.then_shape, dtype=np.int64))
    fits = all(c in (1, t) for c, t in zip(placed, case.then_shape, strict=True))
    if fits:
        cond = arrays[0].reshape(placed)
        expected.outcome = spec_outcome(case, (cond, *arrays[1:]))
    elif engine == "reference" and size:
        # Offsets computed from a misplaced cond run past its buffer.
        expected.deviate("ov_reference_out_of_bounds")
        expected.run = False
    else:
        # The CPU reads cond with the misplaced shape: the shape is right, the values
        # are whatever lies there; only the shape is compared.
        expected.outcome = dataclasses.replace(expected.outcome, data=None)


def _expect_ov_reference_bounds(case: Case, expected: Expectation) -> None:
    out = expected.outcome
    size = int(np.prod(out.shape or (), dtype=np.int64))
    if case.mode == "numpy":
        rank = max(len(s) for s in case.shapes)
        padded = [(1,) * (rank - len(s)) + s for s in case.shapes]
        loop = int(np.prod([max(d) for d in zip(*padded, strict=True)] or [1], dtype=np.int64))
    elif case.mode == "pdpd":
        loop = int(np.prod(case.then_shape, dtype=np.int64))
    else:
        loop = size
    if loop != size:
        expected.deviate("ov_reference_out_of_bounds")
        expected.run = False


def _expect_ov_value_conversions(case: Case, expected: Expectation, engine: str) -> None:
    out = expected.outcome
    assert out.data is not None
    data = out.data
    if case.dtype == "float16":
        data = quiet_signaling_nans(data, case.dtype)
        name = "ov_f16_via_f32"
    elif engine == "cpu" and case.dtype == "bfloat16":
        bits = np.frombuffer(quiet_signaling_nans(data, case.dtype), np.uint16)
        subnormal = ((bits & 0x7F80) == 0) & ((bits & 0x007F) != 0)
        data = np.where(subnormal, bits & 0x8000, bits).astype(np.uint16).tobytes()
        name = "ov_cpu_bf16_flushes_subnormals"
    elif engine == "cpu" and case.dtype == "float64":
        wide = np.frombuffer(data, np.float64)
        big = np.finfo(np.float32).max
        # Values beyond float32, infinities included, saturate; NaN passes.
        clipped = np.where(np.isnan(wide), wide, np.clip(wide, -big, big))
        with np.errstate(invalid="ignore"):  # NaN casts keep their (truncated) payload
            data = clipped.astype(np.float32).astype(np.float64).tobytes()
        name = "ov_cpu_f64_as_f32"
    elif engine == "cpu" and case.dtype in ("int64", "uint64"):
        wide = np.frombuffer(data, np.int64).astype(np.int32).astype(np.int64)
        data = wide.tobytes()
        name = "ov_cpu_i64_as_i32"
    else:
        return
    if data != out.data:
        expected.deviate(name, _with_data(out, data))


_OV_SEEN: dict[str, Counter[str]] = {"cpu": Counter(), "reference": Counter()}


@pytest.mark.parametrize("engine", ["cpu", "reference"])
def test_openvino_seeded_cases(ov: ModuleType, engine: str) -> None:
    """Every seeded case through OpenVINO's CPU plugin / reference evaluation."""
    runner = _ov_run_cpu if engine == "cpu" else _ov_run_reference
    check_cases(
        CASES,
        lambda c, a: expect_openvino(c, a, engine),
        lambda c, a: runner(ov, c, a),
        _OV_SEEN[engine],
    )


# ======================================================================== ONNX Runtime

#: Value dtypes whose ONNX Runtime CPU ``Where`` kernel exists (ort_where_dtype_subset).
_ORT_DTYPES = frozenset(
    {"int8", "int32", "int64", "uint8", "uint32", "float16", "float32", "float64"}
)


@pytest.fixture(scope="module")
def ort() -> ModuleType:
    """The ``onnxruntime`` module (with ``onnx``), or a skip."""
    pytest.importorskip("onnx", reason="onnx is not installed (extra 'conformance')")
    return pytest.importorskip(
        "onnxruntime", reason="onnxruntime is not installed (extra 'conformance')"
    )


def _ort_run(ort: ModuleType, case: Case, arrays: tuple[np.ndarray, ...]) -> Outcome:
    """``Where`` of ``case`` in a one-node ONNX graph with static shapes, on the CPU."""
    from onnx import TensorProto, helper
    from onnx.helper import np_dtype_to_tensor_dtype

    def io(name: str, array: np.ndarray, dtype: str) -> Any:
        elem = (
            TensorProto.BFLOAT16 if dtype == "bfloat16" else np_dtype_to_tensor_dtype(array.dtype)
        )
        return helper.make_tensor_value_info(name, elem, list(array.shape))

    names = ("c", "t", "e")
    dtypes = (case.cond_dtype, case.dtype, case.dtype)
    graph = helper.make_graph(
        [helper.make_node("Where", list(names), ["o"])],
        "select",
        [io(n, a, d) for n, a, d in zip(names, arrays, dtypes, strict=True)],
        [
            helper.make_tensor_value_info(
                "o", io("o", arrays[1], case.dtype).type.tensor_type.elem_type, None
            )
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        (out,) = session.run(None, dict(zip(names, arrays, strict=True)))
    except Exception as exc:  # ORT raises its own exception types (Fail, NotImplemented, ...)
        return Outcome.rejected(" ".join(str(exc).split()))
    return Outcome.of(out)


def expect_ort(case: Case, arrays: tuple[np.ndarray, ...]) -> Expectation:
    """What ONNX Runtime's ``Where`` answers for a ``numpy`` case, as classified."""
    expected = Expectation(spec_outcome(case, arrays))
    multi = spec_outcome(case, arrays, cond_broadcast="multidirectional")
    if not multi.same_as(expected.outcome):
        expected.deviate("onnx_where_multidirectional", multi)
    out = expected.outcome
    if not out.accepted:
        return expected
    if case.cond_dtype != "bool":
        expected.deviate("onnx_where_bool_cond_only", Outcome.rejected("bool cond"))
    elif case.dtype not in _ORT_DTYPES:
        expected.deviate("ort_where_dtype_subset", Outcome.rejected("no kernel"))
    elif case.dtype.startswith("float") and out.data:
        assert out.shape is not None
        then = np.broadcast_to(arrays[1], out.shape)
        cond = np.broadcast_to(arrays[0], out.shape)
        values = np.frombuffer(out.data, arrays[1].dtype).reshape(out.shape).copy()
        values[cond & (then == 0)] = 0  # -0.0 taken from then comes out as +0.0
        if values.tobytes() != out.data:
            expected.deviate("ort_where_negative_zero", _with_data(out, values.tobytes()))
        if case.dtype == "float16" and np.isnan(values).any():
            expected.deviate("ort_where_f16_nan_bits")
            expected.nan_sign_only = True
    return expected


def test_onnxruntime_seeded_cases(ort: ModuleType) -> None:
    """Every seeded ``numpy`` case through ONNX Runtime's ``Where``."""
    check_cases(NUMPY_CASES, expect_ort, lambda c, a: _ort_run(ort, c, a), Counter())


# ======================================================================== PaddlePaddle

#: Value dtypes with a CPU ``where`` kernel in Paddle (paddle_where_dtype_subset).
_PADDLE_DTYPES = frozenset({"bool", "int32", "int64", "float32", "float64"})


@pytest.fixture(scope="module")
def paddle() -> ModuleType:
    """The ``paddle`` module, or a skip."""
    return pytest.importorskip(
        "paddle", reason="paddlepaddle is not installed (extra 'conformance')"
    )


def _paddle_tensor(paddle: ModuleType, array: np.ndarray, dtype: str) -> Any:
    if dtype == "bfloat16":
        # Paddle reads uint16 arrays as bfloat16 bit patterns.
        return paddle.to_tensor(array.view(np.uint16))
    return paddle.to_tensor(array)


def _paddle_where(paddle: ModuleType, case: Case, arrays: tuple[np.ndarray, ...]) -> Outcome:
    try:
        tensors = [
            _paddle_tensor(paddle, a, d)
            for a, d in zip(arrays, (case.cond_dtype, case.dtype, case.dtype), strict=True)
        ]
        out = paddle.where(*tensors)
    except Exception as exc:  # Paddle raises ValueError, TypeError and its own C++ errors
        return Outcome.rejected(" ".join(str(exc).split()))
    return Outcome.of(out.numpy())


def expect_paddle_where(case: Case, arrays: tuple[np.ndarray, ...]) -> Expectation:
    """What ``paddle.where`` answers for a ``numpy`` case, as classified."""
    expected = Expectation(spec_outcome(case, arrays))
    multi = spec_outcome(case, arrays, cond_broadcast="multidirectional")
    if not multi.same_as(expected.outcome):
        expected.deviate("paddle_where_multidirectional", multi)
    if expected.outcome.accepted:
        if case.cond_dtype != "bool":
            expected.deviate("paddle_where_bool_cond_only", Outcome.rejected("bool cond"))
        elif case.dtype not in _PADDLE_DTYPES:
            expected.deviate("paddle_where_dtype_subset", Outcome.rejected("no kernel"))
    return expected


def test_paddle_where_seeded_cases(paddle: ModuleType) -> None:
    """Every seeded ``numpy`` case through ``paddle.where``."""
    check_cases(
        NUMPY_CASES, expect_paddle_where, lambda c, a: _paddle_where(paddle, c, a), Counter()
    )


def _pdpd_source_cases() -> list[Case]:
    """Each pdpd case split in two: else, and cond, fitted alone onto then.

    pdpd fits else and cond onto then independently by the same rule, which is the
    rule of Paddle's elementwise operators for their second operand. The source
    holds its own flat indices (int64), so the output shows where each element went.
    """
    out = []
    for case in PDPD_CASES:
        for src in (case.else_shape, case.cond_shape):
            out.append(
                dataclasses.replace(
                    case, cond_shape=(), else_shape=src, dtype="int64", cond_dtype="bool"
                )
            )
    return out


def _index_inputs(case: Case) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    size = int(np.prod(case.else_shape, dtype=np.int64))
    return (
        np.zeros((), np.bool_),
        np.full(case.then_shape, -1, np.int64),
        np.arange(size, dtype=np.int64).reshape(case.else_shape),
    )


def _paddle_elementwise(paddle: ModuleType, case: Case) -> Outcome:
    from paddle import _legacy_C_ops

    _, then, src = _index_inputs(case)
    try:
        # x + y with y broadcast at axis: then (-1 everywhere) + index gives index - 1.
        out = _legacy_C_ops.elementwise_add(
            paddle.to_tensor(then), paddle.to_tensor(src), "axis", case.axis
        )
    except Exception as exc:  # Paddle's C++ errors (InvalidArgument, ...)
        return Outcome.rejected(" ".join(str(exc).split()))
    return Outcome.of(out.numpy() + 1)


def expect_paddle_elementwise(case: Case, _: tuple[np.ndarray, ...]) -> Expectation:
    """The spec's placement of one pdpd source, and Paddle's classified differences."""
    _, then, src = _index_inputs(case)
    spec = spec_outcome(case, (np.zeros((), np.bool_), np.zeros_like(then), src))
    expected = Expectation(spec)
    rank, srank, axis = len(case.then_shape), len(case.else_shape), case.axis
    if axis != -1 and axis + srank > rank and srank != rank:
        expected.deviate("paddle_elementwise_out_of_bounds")
        expected.run = False
        return expected
    if spec.accepted:
        if srank == rank and axis not in (-1, 0) and case.else_shape != case.then_shape:
            expected.deviate("paddle_elementwise_equal_rank_axis", Outcome.rejected("axis"))
        elif axis >= max(rank, srank) and rank > 0:
            expected.deviate("paddle_elementwise_axis_range", Outcome.rejected("axis"))
        return expected
    if case.else_shape == case.then_shape:
        expected.deviate(
            "paddle_elementwise_same_shape_ignores_axis",
            spec_outcome(
                dataclasses.replace(case, axis=-1),
                (np.zeros((), np.bool_), np.zeros_like(then), src),
            ),
        )
        return expected
    two_way = _paddle_two_way_shape(case.then_shape, case.else_shape, axis)
    if two_way is not None:
        expected.deviate("paddle_elementwise_bidirectional", Outcome(True, two_way, "int64"))
    return expected


def _paddle_two_way_shape(
    x: tuple[int, ...], y: tuple[int, ...], axis: int
) -> tuple[int, ...] | None:
    """The output shape of Paddle's GetBroadcastDimsArrays (None: it raises)."""
    if len(y) > len(x):
        x, y = y, x
    start = len(x) - len(y) if axis == -1 else axis
    if start < 0 or start + len(_trim(y)) > len(x):
        return None
    yy = (1,) * start + _trim(y) + (1,) * (len(x) - start - len(_trim(y)))
    out = []
    for a, b in zip(x, yy, strict=True):
        if a != b and a != 1 and b != 1:
            return None
        out.append(b if a == 1 else a)
    return tuple(out)


def test_paddle_elementwise_axis_broadcasting(paddle: ModuleType) -> None:
    """Paddle's elementwise axis broadcasting against the pdpd fitting of each source."""
    check_cases(
        _pdpd_source_cases(),
        expect_paddle_elementwise,
        lambda c, _: _paddle_elementwise(paddle, c),
        Counter(),
    )


# ===================================================================== every deviation

#: Per runtime: the seeded cases and the expectation functions that apply to them.
_EXPECTATIONS: dict[str, list[tuple[Sequence[Case], Callable[..., Expectation]]]] = {
    "openvino": [
        (CASES, lambda c, a: expect_openvino(c, a, "cpu")),
        (CASES, lambda c, a: expect_openvino(c, a, "reference")),
    ],
    "onnxruntime": [(NUMPY_CASES, expect_ort)],
    "paddle": [
        (NUMPY_CASES, expect_paddle_where),
        (_pdpd_source_cases(), expect_paddle_elementwise),
    ],
}


def test_every_deviation_is_observed() -> None:
    """Each entry of DEVIATIONS is met by the seeded cases (no stale classification).

    Needs no runtime: it runs only the expectation models, which apply a deviation
    exactly where its condition holds; the runtime tests then check that the
    runtime really behaves so.
    """
    seen: Counter[str] = Counter()
    for pairs in _EXPECTATIONS.values():
        for cases, expect in pairs:
            for case in cases:
                seen.update(expect(case, make_inputs(case)).applied)
    missing = sorted(set(DEVIATIONS) - set(seen))
    assert not missing, f"classified but never met by the seeded cases: {missing}"
    print(dict(sorted(seen.items())))
