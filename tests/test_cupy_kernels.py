"""CPU-side tests of the CuPy backend: everything that needs no GPU (most, no CuPy).

* the dtype -> kernel mapping for every NumPy / ml_dtypes dtype and cond dtype;
* the kernels' C code, *executed* on the CPU: the element-wise operation and the
  whole vectorized RawKernel are compiled with the host C++ compiler behind a
  small harness that stands in for CUDA's built-ins (``uint4``, ``blockIdx``, ...)
  and runs every (block, thread) in turn, then compared bit for bit with NumPy;
* where ``nvcc`` is installed: the vectorized kernels, and (with CuPy importable)
  the exact source CuPy generates for each element-wise kernel, compiled to PTX
  for sm_90 and checked for 16-byte loads and the absence of floating-point work;
* with CuPy and NVRTC installed (no GPU): every kernel variant CuPy can generate,
  compiled by NVRTC as CuPy does for sm_80 and sm_90 (a canonical set; all of
  them with ``ARRAYSELECT_CUPY_SWEEP=full``): select's kernels and the select
  family's (``select_n`` per case count and ``which`` dtype, its index check,
  ``select_cases`` per condition mix; their C operations are *run* on the CPU by
  ``test_cupy_backend_emulated``);
* launch parameters, the eligibility rule, overlap analysis;
* the registry entry, and that ``import arrayselect`` does not import CuPy.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import re
import shutil
import subprocess
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _kernel_harness as kh
import arrayselect.backends
import numpy as np
import pytest
from arrayselect.backends.cupy_backend import kernels as ck
from xp_helpers import ALL_DTYPES, run_without

from arrayselect._dispatch import registry as _registry

# The backend modules, wherever the package was installed from.
BACKENDS = Path(arrayselect.backends.__file__).resolve().parent
COND_DTYPES = [np.dtype(n) for n in ("bool", "int8", "int16", "int32", "int64")] + [
    np.dtype(n) for n in ("uint8", "uint16", "uint32", "uint64")
]
# NumPy-native names; bfloat16 comes with the ml_dtypes names below.
VALUE_NAMES = [n for n in ALL_DTYPES if n != "bfloat16"]
ML_NAMES = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "uint4"]


def _value_dtypes() -> list[np.dtype[Any]]:
    dtypes = [np.dtype(n) for n in VALUE_NAMES]
    try:
        import ml_dtypes
    except ImportError:
        return dtypes
    return dtypes + [np.dtype(getattr(ml_dtypes, n)) for n in ML_NAMES if hasattr(ml_dtypes, n)]


VALUE_DTYPES = _value_dtypes()
RNG = np.random.default_rng(20240607)


def _random_bits(n: int, itemsize: int) -> np.ndarray:
    """``n`` random elements as raw bytes, including NaN-like and zero patterns."""
    raw = RNG.integers(0, 256, size=(n, itemsize), dtype=np.uint8)
    raw[::7] = 0xFF  # all-ones: a NaN with a full payload for every float width
    raw[3::11] = 0
    return raw


def _conds(n: int, dtype: np.dtype[Any]) -> np.ndarray:
    """Condition values with true bits only in high bytes (catch a narrowing view)."""
    if dtype == np.bool_:
        return RNG.integers(0, 2, size=n).astype(bool)
    size = dtype.itemsize
    values = RNG.integers(0, 3, size=n).astype(np.uint64)
    high = np.uint64(1) << np.uint64(8 * size - 1)  # only the top bit set: nonzero
    values = np.where(values == 2, high, values)
    return values.astype(f"u{size}").view(dtype)


# ------------------------------------------------------------------ dtype mapping


@pytest.mark.parametrize("cond_dtype", COND_DTYPES, ids=str)
@pytest.mark.parametrize("value_dtype", VALUE_DTYPES, ids=str)
def test_elementwise_spec_every_dtype(cond_dtype: np.dtype[Any], value_dtype: np.dtype[Any]):
    spec = ck.elementwise_spec(cond_dtype, value_dtype)
    cond_raw = np.dtype(spec.cond_dtype)
    value_raw = np.dtype(spec.value_dtype)
    assert cond_raw.kind == "u" and cond_raw.itemsize == cond_dtype.itemsize
    assert value_raw.itemsize == value_dtype.itemsize
    assert value_raw.kind == ("c" if value_dtype.itemsize == 16 else "u")
    assert spec.cond_ctype == ck.C_TYPES[spec.cond_dtype]
    assert spec.value_ctype == ck.C_TYPES[spec.value_dtype]
    assert spec.in_params == f"{spec.cond_dtype} c, {spec.value_dtype} x, {spec.value_dtype} y"
    assert spec.out_params == f"{spec.value_dtype} z"
    assert spec.name == f"arrayselect_select_c{cond_dtype.itemsize}_v{value_dtype.itemsize}"
    # NumPy can take the views the backend takes (same item size, any strides).
    np.zeros(3, value_dtype)[::2].view(value_raw)
    np.zeros(3, cond_dtype)[::2].view(cond_raw)


def test_specs_are_shared_by_item_size():
    specs = {ck.elementwise_spec(c, v) for c in COND_DTYPES for v in VALUE_DTYPES}
    assert len(specs) == len({(c.itemsize, v.itemsize) for c in COND_DTYPES for v in VALUE_DTYPES})
    assert len(specs) <= 4 * 5
    f32 = ck.elementwise_spec(np.dtype(bool), np.dtype("float32"))
    assert f32 == ck.elementwise_spec(np.dtype("uint8"), np.dtype("int32"))
    assert f32 == ck.elementwise_spec(np.dtype("int8"), np.dtype("uint32"))
    assert f32 != ck.elementwise_spec(np.dtype("int16"), np.dtype("float32"))


@pytest.mark.parametrize("bad", ["float32", "float16", "complex64", "V4", "U1"])
def test_elementwise_spec_rejects_non_integer_cond(bad: str):
    with pytest.raises(ValueError, match="cond dtype"):
        ck.elementwise_spec(np.dtype(bad), np.dtype("float32"))


@pytest.mark.parametrize("bad", ["V3", "V32", "S5", "S12"])
def test_elementwise_spec_rejects_odd_item_sizes(bad: str):
    with pytest.raises(ValueError, match="no raw type"):
        ck.elementwise_spec(np.dtype(bool), np.dtype(bad))


def test_vector_spec_mapping():
    for value_size in (1, 2, 4, 8):
        spec = ck.vector_spec(1, value_size)
        assert spec is not None
        assert spec.lanes * value_size == 16
        assert spec.value_ctype == ck.C_TYPES[ck.VALUE_RAW_DTYPES[value_size]]
        assert spec.name == f"arrayselect_select_vec_v{value_size}"
        assert f"void {spec.name}(" in spec.source
    assert ck.vector_spec(1, 16) is None
    for cond_size in (2, 4, 8):
        assert ck.vector_spec(cond_size, 4) is None


# ------------------------------------------------------------------ the C code, run on the CPU


def _elementwise_harness() -> str:
    """One C function per spec, running its operation the way CuPy binds the params."""
    parts = [kh.PRELUDE]
    for cond_size, value_size in itertools.product(ck.COND_RAW_DTYPES, ck.VALUE_RAW_DTYPES):
        spec = ck._elementwise_spec(cond_size, value_size)
        c, v = spec.cond_ctype, spec.value_ctype
        parts.append(
            textwrap.dedent(f"""
            static_assert(sizeof({c}) == {cond_size}, "cond C type size");
            static_assert(sizeof({v}) == {value_size}, "value C type size");
            extern "C" void {spec.name}(const {c}* _raw_c, const {v}* _raw_x,
                                         const {v}* _raw_y, {v}* _raw_z, long long n) {{
                for (long long i = 0; i < n; ++i) {{
                    const {c} &c = _raw_c[i];
                    const {v} &x = _raw_x[i];
                    const {v} &y = _raw_y[i];
                    {v} &z = _raw_z[i];
                    {spec.operation}
                }}
            }}
            """)
        )
    return "\n".join(parts)


@pytest.fixture(scope="module")
def elementwise_lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    return kh.build(tmp_path_factory.mktemp("elementwise"), _elementwise_harness())


@pytest.mark.parametrize("cond_dtype", COND_DTYPES, ids=str)
@pytest.mark.parametrize(
    "value_name", ["bool", "uint8", "float16", "float32", "float64", "complex64", "complex128"]
)
def test_elementwise_operation_runs_bit_exact(
    elementwise_lib: ctypes.CDLL, cond_dtype: np.dtype[Any], value_name: str
):
    n = 1000
    value_dtype = np.dtype(value_name)
    spec = ck.elementwise_spec(cond_dtype, value_dtype)
    size = value_dtype.itemsize
    x = _random_bits(n, size).view(value_dtype).reshape(n)
    y = _random_bits(n, size).view(value_dtype).reshape(n)
    cond = _conds(n, cond_dtype)
    c_raw = cond.view(spec.cond_dtype)
    x_raw, y_raw = x.view(spec.value_dtype), y.view(spec.value_dtype)
    z_raw = np.empty_like(x_raw)
    getattr(elementwise_lib, spec.name)(
        kh.ptr(c_raw), kh.ptr(x_raw), kh.ptr(y_raw), kh.ptr(z_raw), ctypes.c_longlong(n)
    )
    expected = np.where(
        cond != 0, x.view(np.uint8).reshape(n, size).T, y.view(np.uint8).reshape(n, size).T
    ).T
    np.testing.assert_array_equal(z_raw.view(np.uint8).reshape(n, size), expected)
    # Out aliasing then exactly: each element read before it is written.
    x_copy = x_raw.copy()
    getattr(elementwise_lib, spec.name)(
        kh.ptr(c_raw), kh.ptr(x_copy), kh.ptr(y_raw), kh.ptr(x_copy), ctypes.c_longlong(n)
    )
    np.testing.assert_array_equal(x_copy.view(np.uint8), z_raw.view(np.uint8))


@pytest.fixture(scope="module")
def vector_lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    specs = [ck.vector_spec(1, v) for v in (1, 2, 4, 8)]
    harness = kh.vector_harness([s for s in specs if s is not None])
    return kh.build(tmp_path_factory.mktemp("vector"), harness)


@pytest.mark.parametrize("value_size", [1, 2, 4, 8])
@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 33, 1000, 4099])
@pytest.mark.parametrize("launch", [(1, 16), (3, 32), "derived"])
def test_vector_kernel_runs_bit_exact(
    vector_lib: ctypes.CDLL, value_size: int, n: int, launch: Any
):
    spec = ck.vector_spec(1, value_size)
    assert spec is not None
    raw = np.dtype(ck.VALUE_RAW_DTYPES[value_size])
    grid, block = ck.vector_launch(n, spec.lanes) if launch == "derived" else launch
    for cond_name in ("bool", "int8", "uint8"):
        cond = kh.aligned_empty(n, np.dtype(cond_name))
        cond[...] = _conds(n, np.dtype(cond_name))
        x, y, z = (kh.aligned_empty(n, raw) for _ in range(3))
        x[...] = _random_bits(n, value_size).view(raw).reshape(n)
        y[...] = _random_bits(n, value_size).view(raw).reshape(n)
        z[...] = 0
        run = getattr(vector_lib, f"run_{spec.name}")
        args = (ctypes.c_longlong(n), ctypes.c_uint(grid), ctypes.c_uint(block))
        run(kh.ptr(cond), kh.ptr(x), kh.ptr(y), kh.ptr(z), *args)
        expected = np.where(cond.view(np.uint8) != 0, x, y)
        np.testing.assert_array_equal(z, expected)
        # out aliasing else exactly
        run(kh.ptr(cond), kh.ptr(x), kh.ptr(y), kh.ptr(y), *args)
        np.testing.assert_array_equal(y, expected)


# ------------------------------------------------------------------ nvcc: the real CUDA compiler


def _nvcc() -> str:
    path = shutil.which("nvcc")
    if path is None:
        pytest.skip("nvcc is not installed (compile check of the CUDA sources)")
    return path


def _ptx(tmp: Path, source: str, options: list[str]) -> str:
    cu = tmp / "kernels.cu"
    cu.write_text(source)
    out = tmp / "kernels.ptx"
    cmd = [_nvcc(), "--ptx", "-arch=sm_90", "-o", str(out), *options, str(cu)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return out.read_text()


def _entries(ptx: str) -> dict[str, str]:
    """PTX text of each ``.entry``."""
    pieces = re.split(r"\.visible \.entry (\w+)\(", ptx)
    return dict(zip(pieces[1::2], pieces[2::2], strict=True))


_FLOAT_WORK = re.compile(
    r"\b(add|sub|mul|div|fma|mad|cvt|setp|min|max|neg|abs|rcp|sqrt)\.\S*f(16|32|64)\b"
)


def test_vector_kernels_compile_with_nvcc_to_16_byte_moves(tmp_path: Path):
    specs = [ck.vector_spec(1, v) for v in (1, 2, 4, 8)]
    ptx = _ptx(tmp_path, "\n".join(s.source for s in specs if s is not None), [])
    entries = _entries(ptx)
    for spec in specs:
        assert spec is not None
        body = entries[spec.name]
        assert body.count("ld.global.v4.u32") >= 2, f"{spec.name}: no 16-byte loads"
        assert "st.global.v4.u32" in body, f"{spec.name}: no 16-byte stores"
        assert not _FLOAT_WORK.search(body), f"{spec.name}: floating-point instruction"


def test_strided_kernels_compile_with_nvcc_without_float_work(tmp_path: Path):
    kinds = [("array", "array"), ("array", "scalar"), ("scalar", "array")]
    specs = [
        ck.strided_spec(c, v, t, e) for c in (1, 2, 4, 8) for v in (1, 2, 4, 8) for t, e in kinds
    ]
    assert None not in specs and ck.strided_spec(1, 16, "array", "array") is None
    assert ck.strided_spec(1, 4, "scalar", "scalar") is None
    ptx = _ptx(tmp_path, "\n".join(s.source for s in specs if s is not None), [])
    entries = _entries(ptx)
    for spec in specs:
        assert spec is not None
        assert not _FLOAT_WORK.search(entries[spec.name]), f"{spec.name}: floating point"


def test_select_cases_word_kernels_compile_with_nvcc_to_16_byte_moves(tmp_path: Path):
    specs = [ck.CasesVectorSpec(n, v) for n in (1, 4, 32) for v in (1, 2, 4, 8)]
    ptx = _ptx(tmp_path, "\n".join(s.source for s in specs), [])
    entries = _entries(ptx)
    for spec in specs:
        body = entries[spec.name]
        assert re.search(r"ld\.global\.v(4\.u32|2\.u64)", body), f"{spec.name}: no 16-byte loads"
        assert re.search(r"st\.global\.v(4\.u32|2\.u64)", body), f"{spec.name}: no 16-byte stores"
        assert ".local" not in body, f"{spec.name}: local memory"
        assert not _FLOAT_WORK.search(body), f"{spec.name}: floating point"


def test_select_cases_word_kernel_eligibility():
    def lay(shape: tuple[int, ...], itemsize: int, ptr: int = 4096) -> ck.ArrayLayout:
        strides = tuple(int(np.prod(shape[k + 1 :])) * itemsize for k in range(len(shape)))
        return ck.ArrayLayout(ptr, shape, strides, itemsize)

    out = lay((10, 20), 4)
    conds, choices = [lay((10, 20), 1)] * 3, [lay((10, 20), 4)] * 3
    spec = ck.cases_vector_eligible(conds, choices, lay((), 4), out)
    assert spec == ck.CasesVectorSpec(3, 4) and spec.lanes == 4
    for bad in [
        dict(conds=[lay((1, 20), 1), *conds[1:]]),  # broadcast
        dict(conds=[lay((10, 20), 2)] * 3),  # 2-byte conditions
        dict(choices=[lay((10, 20), 4, ptr=4100)] * 3),  # misaligned
        dict(default=lay((10, 20), 4)),  # an array default
        dict(out=lay((10, 20), 16), choices=[lay((10, 20), 16)] * 3, default=lay((), 16)),
    ]:
        args: dict[str, Any] = dict(conds=conds, choices=choices, default=lay((), 4), out=out)
        assert ck.cases_vector_eligible(**(args | bad)) is None, bad


@dataclass(frozen=True)
class Variant:
    """One element-wise kernel as CuPy generates it for a launch of the backend.

    CuPy compiles one kernel per spec (cond and value item sizes) and per
    argument signature: the arrays' dimension count (after CuPy merges
    contiguous dimensions), C-contiguity and 32- or 64-bit indexing, and which
    operands are scalars (the backend passes a Python-scalar ``then`` or
    ``else`` as a raw NumPy scalar; ``cond`` and ``out`` are always arrays).
    """

    cond_size: int
    value_size: int
    ndim: int
    index_32: bool
    contiguous: bool
    operands: str  # "arrays", "then scalar" or "else scalar"

    def __str__(self) -> str:
        bits = 32 if self.index_32 else 64
        layout = "contiguous" if self.contiguous else "strided"
        return (
            f"c{self.cond_size}_v{self.value_size} {self.ndim}-d {bits}-bit {layout} "
            f"{self.operands}"
        )


VARIANT_DIMS = (0, 1, 2, 3, 5)
VARIANT_OPERANDS = ("arrays", "then scalar", "else scalar")
SPECS = list(itertools.product(ck.COND_RAW_DTYPES, ck.VALUE_RAW_DTYPES))


def _all_variants() -> list[Variant]:
    """Every variant: 20 specs x dims x indexing x contiguity x operands. CuPy's
    0-d arrays are always contiguous (its ``CArray`` has no strided 0-d form)."""
    return [
        Variant(c, v, nd, i32, contiguous, operands)
        for (c, v), nd, i32, contiguous, operands in itertools.product(
            SPECS, VARIANT_DIMS, (True, False), (True, False), VARIANT_OPERANDS
        )
        if nd > 0 or contiguous
    ]


def _canonical_variants() -> list[Variant]:
    """A subset that still covers each axis: every spec in the commonest form
    (1-d, 32-bit, contiguous, all arrays: what CuPy makes of contiguous inputs),
    and each other value of each axis once per value size, with the cond size
    rotating."""
    base = {"ndim": 1, "index_32": True, "contiguous": True, "operands": "arrays"}
    others: list[dict[str, Any]] = [{"ndim": nd} for nd in VARIANT_DIMS if nd != 1]
    others += [{"index_32": False}, {"contiguous": False}]
    others += [{"operands": o} for o in VARIANT_OPERANDS if o != "arrays"]
    variants = [Variant(c, v, **base) for c, v in SPECS]
    conds = list(ck.COND_RAW_DTYPES)
    for k, change in enumerate(others):
        for j, v in enumerate(ck.VALUE_RAW_DTYPES):
            variants.append(Variant(conds[(k + j) % len(conds)], v, **(base | change)))
    return variants


SWEEP_ENV = "ARRAYSELECT_CUPY_SWEEP"


def _sweep() -> list[Variant]:
    """The canonical variants, or all of them with ``ARRAYSELECT_CUPY_SWEEP=full``."""
    return _all_variants() if os.environ.get(SWEEP_ENV) == "full" else _canonical_variants()


def _cupy_kernel_source(
    in_params: str,
    out_params: str,
    operation: str,
    name: str,
    layout: tuple[int, bool, bool],
    scalar: int = -1,
) -> str:
    """The source CuPy generates for an ``ElementwiseKernel`` launch (without the
    headers it prepends): every non-raw array argument has ``layout``'s dimension
    count, contiguity and indexing (CuPy broadcasts them to one shape), the
    argument at position ``scalar`` is a NumPy scalar, ``raw`` arguments are
    1-d contiguous arrays (the family's flag).
    """
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    from cupy._core import _carray, _kernel, _scalar

    nd, i32, contiguous = layout
    ins = _kernel._get_param_info(in_params, True)
    outs = _kernel._get_param_info(out_params, False)
    dtypes = [np.dtype(p.split()[-2]) for p in f"{in_params}, {out_params}".split(", ")]
    # Fixed parameter types accept exactly these dtypes: CuPy adds no cast.
    in_types, out_types, type_map = _kernel._decide_params_type(
        ins, outs, tuple(dtypes[: len(ins)]), tuple(dtypes[len(ins) :])
    )
    assert list(in_types) + list(out_types) == dtypes
    for p, d in zip(ins + outs, dtypes, strict=True):
        assert p.ctype == _scalar.get_typename(d)
    params = ins + outs + (_kernel.ParameterInfo("CIndexer _ind", False),)
    arginfos = tuple(
        _kernel._ArgInfo(3, _scalar.CScalar, d, 0, True, True)  # a CScalar
        if k == scalar
        else _kernel._ArgInfo(1, cupy.ndarray, d, 1, True, i32)  # a raw array
        if p.raw
        else _kernel._ArgInfo(1, cupy.ndarray, d, nd, contiguous, i32)  # an ndarray
        for k, (p, d) in enumerate(zip(ins + outs, dtypes, strict=True))
    )
    arginfos += (_kernel._ArgInfo(2, _carray.Indexer, None, nd, True, i32),)
    return str(
        _kernel._get_elementwise_kernel_code(arginfos, type_map, params, operation, name, "")
    )


def _cupy_elementwise_source(variant: Variant) -> str:
    """The source CuPy generates for this variant of select's kernel."""
    spec = ck._elementwise_spec(variant.cond_size, variant.value_size)
    ctypes_ = [spec.cond_ctype] + [spec.value_ctype] * 3
    assert [ck.C_TYPES[d] for d in [spec.cond_dtype] + [spec.value_dtype] * 3] == ctypes_
    scalar = {"arrays": -1, "then scalar": 1, "else scalar": 2}[variant.operands]
    layout = (variant.ndim, variant.index_32, variant.contiguous)
    return _cupy_kernel_source(
        spec.in_params, spec.out_params, spec.operation, spec.name, layout, scalar
    )


def test_cupy_generated_elementwise_kernels_compile_with_nvcc(tmp_path: Path):
    """The exact source CuPy generates for each spec (needs CuPy importable, no GPU)."""
    nvcc = _nvcc()
    pytest.importorskip("cupy", reason="cupy is not installed")
    from cupy._core import core

    sources = [_cupy_elementwise_source(Variant(c, v, 2, True, False, "arrays")) for c, v in SPECS]
    headers = "".join(f"#include <{h}>\n" for h in core._cupy_header_list)
    options = list(core.assemble_cupy_compiler_options(()))
    assert nvcc
    entries = _entries(_ptx(tmp_path, headers + "\n".join(sources), options))
    for cond_size, value_size in SPECS:
        spec = ck._elementwise_spec(cond_size, value_size)
        body = entries[spec.name]
        assert not _FLOAT_WORK.search(body), f"{spec.name}: floating-point instruction"
        assert f"ld.global.u{8 * cond_size}" in body, f"{spec.name}: cond not read whole"


# ------------------------------------------------------------------ NVRTC, as CuPy compiles

NVRTC_ARCHS = ("80", "90")


@pytest.fixture(scope="module")
def nvrtc() -> Callable[..., bytes]:
    """``compile(source, arch, cupy_headers)``: NVRTC as CuPy calls it, for ``sm_<arch>``.

    CuPy asks the GPU for the architecture; here it is given. The options are
    CuPy's own, assembled as for a launch (``assemble_cupy_compiler_options``,
    ``-ftz=true``, ``--device-as-default-execution-space``, ``--pch`` where CuPy
    adds it), and the program is CuPy's NVRTC wrapper: no device is touched.
    """
    pytest.importorskip("cupy", reason="cupy is not installed")
    from cupy._core import core
    from cupy.cuda import compiler

    try:
        version = compiler._get_nvrtc_version()
    except Exception as exc:  # no NVRTC library, or one CuPy cannot load
        pytest.skip(f"NVRTC cannot be loaded ({type(exc).__name__}: {exc})")
    headers = "".join(f"#include <{h}>\n" for h in core._cupy_header_list)
    method = "ptx" if compiler._use_ptx else "cubin"
    pch = ("--pch",) if compiler._use_pch and version >= (12, 8) else ()

    def compile_(source: str, arch: str, cupy_headers: bool) -> bytes:
        options = tuple(core.assemble_cupy_compiler_options(()))
        options += ("-ftz=true", f"-arch={'compute' if method == 'ptx' else 'sm'}_{arch}")
        options += ("--device-as-default-execution-space", *pch)
        prog = compiler._NVRTCProgram(
            (headers if cupy_headers else "") + source, "kern.cu", method=method
        )
        binary, _ = prog.compile(options)
        return bytes(binary)

    return compile_


@pytest.mark.parametrize("arch", NVRTC_ARCHS)
@pytest.mark.parametrize(("cond_size", "value_size"), SPECS)
def test_every_elementwise_variant_compiles_with_nvrtc(
    nvrtc: Callable[..., bytes], arch: str, cond_size: int, value_size: int
):
    """Each variant of this spec in the sweep (canonical, or all with
    ``ARRAYSELECT_CUPY_SWEEP=full``), compiled by NVRTC as CuPy would."""
    variants = [v for v in _sweep() if (v.cond_size, v.value_size) == (cond_size, value_size)]
    assert variants
    name = ck._elementwise_spec(cond_size, value_size).name.encode()
    for variant in variants:
        binary = nvrtc(_cupy_elementwise_source(variant), arch, True)
        assert name in binary, f"{variant}: no kernel {name!r} in the sm_{arch} binary"


@pytest.mark.parametrize("arch", NVRTC_ARCHS)
@pytest.mark.parametrize("value_size", [1, 2, 4, 8])
def test_vector_kernels_compile_with_nvrtc(nvrtc: Callable[..., bytes], arch: str, value_size: int):
    """The 16-byte kernels as ``cupy.RawKernel`` compiles them (no CuPy headers)."""
    spec = ck.vector_spec(1, value_size)
    assert spec is not None
    assert spec.name.encode() in nvrtc(spec.source, arch, False)


# ------------------------------------------------------------------ the select family's kernels

INDEX_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
VALUE_SIZES = tuple(ck.VALUE_RAW_DTYPES)
_N_MAX, _CONDS_MAX = ck.SELECT_N_MAX_CASES, ck.SELECT_CASES_MAX_CONDS
CASE_CONDS = ((1,), (1, 1, 1), (1, 2, 4, 8), (8, 1), (1,) * _CONDS_MAX)


@dataclass(frozen=True)
class FamilyVariant:
    """One select-family kernel as CuPy generates it for a launch.

    ``kind`` is ``"select_n"`` (``which`` dtype ``index``, ``n`` cases),
    ``"check"`` (the index check ``select_n`` runs before writing into ``out``) or
    ``"select_cases"`` (conditions of item sizes ``conds``). Every non-raw operand
    has the launch's dimension count, contiguity and indexing (the core turns
    Python scalars into 0-d arrays, and CuPy broadcasts all arrays to one shape).
    """

    kind: str
    index: str
    n: int
    conds: tuple[int, ...]
    value_size: int
    ndim: int
    index_32: bool
    contiguous: bool

    @property
    def spec(self) -> ck.FamilySpec:
        if self.kind == "select_n":
            return ck.select_n_spec(np.dtype(self.index), self.n, self.value_size)
        if self.kind == "check":
            return ck.index_check_spec(np.dtype(self.index), self.n)
        return ck.select_cases_spec(self.conds, self.value_size)

    def __str__(self) -> str:
        bits = 32 if self.index_32 else 64
        layout = "contiguous" if self.contiguous else "strided"
        return f"{self.spec.name} {self.ndim}-d {bits}-bit {layout}"


_COMMON = {"ndim": 1, "index_32": True, "contiguous": True}
_OTHER_LAYOUTS: list[dict[str, Any]] = [{"ndim": nd} for nd in VARIANT_DIMS if nd != 1]
_OTHER_LAYOUTS += [{"index_32": False}, {"contiguous": False}]


def _family_specs(full: bool) -> list[dict[str, Any]]:
    """The family specs swept: in the canonical set every which dtype, value size,
    condition item-size mix and the extreme counts once; all combinations when full."""
    n_of = {"bool": (2,)} | {d: (1, 3, _N_MAX) for d in INDEX_DTYPES[1:]}
    specs: list[dict[str, Any]] = []
    for index in INDEX_DTYPES:
        for n in n_of[index]:
            for v in VALUE_SIZES:
                if (
                    full
                    or (n in (2, 3) and v == 4)
                    or (index == "int8" and n == 3)
                    or (index == "int32" and n != 3 and v == 16)
                ):
                    specs.append({"kind": "select_n", "index": index, "n": n, "value_size": v})
        if index != "bool":
            specs.append({"kind": "check", "index": index, "n": 3})
    for conds in CASE_CONDS:
        for v in VALUE_SIZES:
            if full or v == 4 or conds == (1, 1, 1):
                specs.append({"kind": "select_cases", "conds": conds, "value_size": v})
    return specs


def _family_variant(spec: dict[str, Any], layout: dict[str, Any]) -> FamilyVariant:
    fields = {"index": "", "n": len(spec.get("conds", ())), "conds": (), "value_size": 0}
    fields |= spec | layout
    return FamilyVariant(**fields)


def _family_variants(full: bool) -> list[FamilyVariant]:
    """Canonical: every spec in the commonest layout, and each other layout value
    for the largest kernels (64 cases, 32 conditions: the most parameter space)
    and the check. Full: every spec in every layout."""
    specs = _family_specs(full)
    variants = [_family_variant(spec, _COMMON) for spec in specs]
    if full:
        layouts = [
            {"ndim": nd, "index_32": i32, "contiguous": c}
            for nd, i32, c in itertools.product(VARIANT_DIMS, (True, False), (True, False))
            if (nd, i32, c) != (1, True, True) and (nd > 0 or c)
        ]
        return variants + [_family_variant(s, lay) for s in specs for lay in layouts]
    biggest = [
        {"kind": "select_n", "index": "int32", "n": _N_MAX, "value_size": 16},
        {"kind": "select_cases", "conds": (1,) * _CONDS_MAX, "value_size": 4},
        {"kind": "check", "index": "uint64", "n": 3},
    ]
    return variants + [
        _family_variant(s, _COMMON | change) for s in biggest for change in _OTHER_LAYOUTS
    ]


def _family_source(variant: FamilyVariant) -> str:
    spec = variant.spec
    layout = (variant.ndim, variant.index_32, variant.contiguous)
    return _cupy_kernel_source(spec.in_params, spec.out_params, spec.operation, spec.name, layout)


FAMILY_KINDS = ("select_n", "check", "select_cases")


def test_family_specs():
    """Names, parameter types and refusals of the family's kernel specs."""
    spec = ck.select_n_spec(np.dtype("int16"), 3, 2)
    assert spec.name == "arrayselect_select_n3_int16_v2" and spec.checked
    assert spec.in_params == "int16 w, uint16 x0, uint16 x1, uint16 x2"
    assert spec.out_params == "uint16 z, raw uint64 first"
    boolean = ck.select_n_spec(np.dtype(bool), 2, 16)
    assert boolean.name == "arrayselect_select_n2_bool_v16" and not boolean.checked
    assert boolean.in_params.startswith("uint8 w, complex128 x0")
    assert ck.select_n_spec(np.dtype("uint8"), 2, 4).checked  # uint8 can hold 2..255
    check = ck.index_check_spec(np.dtype("uint32"), 5)
    assert check.operation == "if (w >= 5) atomicMin(&first[0], (unsigned long long)i);"
    assert "w < 0 ||" in ck.index_check_spec(np.dtype("int8"), 5).operation
    cases = ck.select_cases_spec([2, 1], 8)
    assert cases.name == "arrayselect_select_cases2_c21_v8"
    assert cases.in_params == "uint16 c0, uint8 c1, uint64 x0, uint64 x1, uint64 d"
    for bad in [
        lambda: ck.select_n_spec(np.dtype(bool), 3, 4),
        lambda: ck.select_n_spec(np.dtype("float32"), 3, 4),
        lambda: ck.select_n_spec(np.dtype("int8"), 0, 4),
        lambda: ck.select_n_spec(np.dtype("int8"), ck.SELECT_N_MAX_CASES + 1, 4),
        lambda: ck.select_n_spec(np.dtype("int8"), 3, 3),
        lambda: ck.index_check_spec(np.dtype(bool), 2),
        lambda: ck.select_cases_spec([], 4),
        lambda: ck.select_cases_spec([1] * (ck.SELECT_CASES_MAX_CONDS + 1), 4),
        lambda: ck.select_cases_spec([3], 4),
    ]:
        with pytest.raises(ValueError):
            bad()


@pytest.mark.parametrize("arch", NVRTC_ARCHS)
@pytest.mark.parametrize("kind", FAMILY_KINDS)
def test_every_family_variant_compiles_with_nvrtc(
    nvrtc: Callable[..., bytes], arch: str, kind: str
):
    """Each select-family variant of this kind in the sweep (canonical, or all with
    ``ARRAYSELECT_CUPY_SWEEP=full``), compiled by NVRTC as CuPy would: the 64-case
    and 32-condition kernels included, whose parameters pass 4 KiB."""
    full = os.environ.get(SWEEP_ENV) == "full"
    variants = [v for v in _family_variants(full) if v.kind == kind]
    assert variants
    for variant in variants:
        binary = nvrtc(_family_source(variant), arch, True)
        assert variant.spec.name.encode() in binary, f"{variant}: not in the sm_{arch} binary"


def test_family_sweep_covers_each_axis():
    """The canonical family set has every which dtype, value size, condition mix and
    kind, and every layout value for each kind; the full set is every spec in every
    layout."""
    canonical, full = _family_variants(False), _family_variants(True)
    assert set(canonical) <= set(full) and len(set(canonical)) == len(canonical)
    assert len(full) == len(_family_specs(True)) * (1 + 4 * 2) * 2
    names = {v.spec.name for v in canonical}
    assert len(names) == len(_family_specs(False))
    n_specs = [v for v in canonical if v.kind == "select_n"]
    assert {v.index for v in n_specs} == set(INDEX_DTYPES)
    assert {v.value_size for v in n_specs} == set(VALUE_SIZES)
    assert {v.n for v in n_specs} == {1, 2, 3, _N_MAX}
    assert {v.index for v in canonical if v.kind == "check"} == set(INDEX_DTYPES[1:])
    case_specs = [v for v in canonical if v.kind == "select_cases"]
    assert {v.conds for v in case_specs} == set(CASE_CONDS)
    assert {v.value_size for v in case_specs} == set(VALUE_SIZES)
    for kind in FAMILY_KINDS:
        ours = [v for v in canonical if v.kind == kind]
        assert {v.ndim for v in ours} == set(VARIANT_DIMS), kind
        assert {v.index_32 for v in ours} == {True, False}, kind
        assert {v.contiguous for v in ours} == {True, False}, kind


def test_sweep_covers_each_axis():
    """The canonical set has every spec, and every value of every axis."""
    canonical, full = _canonical_variants(), _all_variants()
    assert set(canonical) <= set(full) and len(set(canonical)) == len(canonical)
    assert len(full) == 20 * (1 + 4 * 2) * 2 * 3
    assert {(v.cond_size, v.value_size) for v in canonical} == set(SPECS)
    for axis, values in [
        ("ndim", VARIANT_DIMS),
        ("index_32", (True, False)),
        ("contiguous", (True, False)),
        ("operands", VARIANT_OPERANDS),
    ]:
        assert {getattr(v, axis) for v in canonical} == set(values), axis
        for value in values:
            sizes = {v.value_size for v in canonical if getattr(v, axis) == value}
            assert sizes == set(ck.VALUE_RAW_DTYPES), (axis, value)


# ------------------------------------------------------------------ launch parameters


def test_vector_launch_parameters():
    # One thread per 16-byte word, 256-thread blocks (2**28 float32: 2**26 words).
    assert ck.vector_launch(1 << 28, 4) == ((1 << 26) // 256, 256)
    assert ck.vector_launch(1 << 28, 4, block=1024) == ((1 << 26) // 1024, 1024)
    assert ck.vector_launch(4096, 4) == (4, 256)
    assert ck.vector_launch(4099, 4) == (4, 256)  # 1024 words + a tail
    assert ck.vector_launch(4100, 4) == (5, 256)
    assert ck.vector_launch(0, 4) == (1, 256)
    assert ck.vector_launch(3, 16) == (1, 256)
    assert ck.vector_launch(1 << 45, 1) == (ck.MAX_GRID, 256)  # capped: the loop covers it
    for bad in [dict(n=-1), dict(lanes=0), dict(block=8), dict(lanes=32)]:
        args: dict[str, Any] = dict(n=10, lanes=4, block=16) | bad
        with pytest.raises(ValueError):
            ck.vector_launch(args.pop("n"), args.pop("lanes"), **args)


@pytest.mark.parametrize("lanes", [2, 4, 8, 16])
@pytest.mark.parametrize("n", [0, 1, 17, 255, 4096, 100_003])
@pytest.mark.parametrize("block", [16, 256])
def test_vector_launch_covers_every_element_once(lanes: int, n: int, block: int):
    """Emulate the kernel's index arithmetic: each element written exactly once."""
    if block < lanes:
        pytest.skip("a block holds at least one word's lanes")
    grid, block = ck.vector_launch(n, lanes, block=block)
    hits = np.zeros(n, np.int64)
    n_words = n // lanes
    threads = np.arange(grid * block)
    for i0 in range(0, max(n_words, 1), grid * block):
        words = i0 + threads
        words = words[words < n_words]
        for k in range(lanes):
            np.add.at(hits, words * lanes + k, 1)
    tail = n - n_words * lanes
    tail_threads = threads[threads < tail]
    np.add.at(hits, n_words * lanes + tail_threads, 1)
    assert (hits == 1).all()


# ------------------------------------------------------------------ layouts, overlap, eligibility


def _layout(a: np.ndarray) -> ck.ArrayLayout:
    return ck.ArrayLayout(a.ctypes.data, a.shape, a.strides, a.itemsize)


def _views(base: np.ndarray) -> list[np.ndarray]:
    return [
        base,
        base.T,
        base[::2],
        base[:, ::-1],
        base[1:],
        base[:, 1:3],
        base[::-1, ::-2],
        base[2:3],
        base[:0],
        base.reshape(-1),
        base[:, :1],
        np.broadcast_to(base[:1], base.shape),
    ]


def test_is_c_contiguous_matches_numpy():
    base = np.zeros((6, 5), np.float32)
    odd = [
        np.zeros((1, 3)),
        np.zeros((3, 1))[::2],
        np.zeros(()),
        base[0],
        base[::2][:1],
        base[:1, ::2],
    ]
    for v in _views(base) + odd:
        assert ck.is_c_contiguous(v.shape, v.strides, v.itemsize) == v.flags.c_contiguous, (
            v.shape,
            v.strides,
        )


def test_byte_bounds_and_overlap_none_match_numpy():
    base = np.zeros((6, 5), np.float32)
    views = _views(base)
    for a, b in itertools.product(views, repeat=2):
        kind = ck.overlap(_layout(a), _layout(b))
        assert (kind != "none") == (np.may_share_memory(a, b) and a.size > 0 and b.size > 0)
    for v in views:
        low, high = ck.byte_bounds(_layout(v))
        if v.size:
            offsets = (
                np.array(np.unravel_index(np.arange(v.size), v.shape)).T @ np.array(v.strides)
                if v.ndim
                else np.zeros(1, np.int64)
            )
            assert low == v.ctypes.data + offsets.min()
            assert high == v.ctypes.data + offsets.max() + v.itemsize


def test_overlap_kinds():
    base = np.zeros((6, 5), np.float32)
    other = np.zeros((6, 5), np.float32)
    L = _layout
    assert ck.overlap(L(other), L(base)) == "none"
    assert ck.overlap(L(base), L(base)) == "exact"
    assert ck.overlap(L(base[:, ::2]), L(base[:, ::2])) == "exact"
    assert ck.overlap(L(base.T), L(base.T)) == "exact"
    assert ck.overlap(L(base[1:]), L(base[:-1])) == "partial"  # shifted by a row
    assert ck.overlap(L(base.T), L(base.reshape(5, 6))) == "partial"  # same bytes, other order
    assert ck.overlap(L(base[:1]), L(base)) == "partial"  # broadcast row read while written
    assert ck.overlap(L(base.view(np.uint8)[:, ::4]), L(base)) == "partial"  # other itemsize
    assert ck.overlap(L(base[:, :1]), L(base[:, :1])) == "exact"
    # An input with fewer dims, broadcast against out's size-1 dims: exact.
    col = base[:, 0]
    assert ck.overlap(L(col[:, None]), L(col[None, :, None])) == "exact"
    assert ck.overlap(L(col[None, :]), L(col[:, None])) == "partial"  # (1, 6) vs (6, 1)
    assert ck.overlap(L(base[:0]), L(base)) == "none"


def _eligible_set(n: int, value: str = "float32", cond: str = "bool") -> dict[str, np.ndarray]:
    dtype = np.dtype(value)
    return {
        "cond": kh.aligned_empty(n, np.dtype(cond)),
        "then": kh.aligned_empty(n, dtype),
        "else_": kh.aligned_empty(n, dtype),
        "out": kh.aligned_empty(n, dtype),
    }


def _eligible(arrays: dict[str, np.ndarray], min_size: int = 64) -> ck.VectorSpec | None:
    return ck.vector_eligible(
        *(_layout(arrays[k]) for k in ("cond", "then", "else_", "out")), min_size=min_size
    )


def test_vector_eligibility():
    n = 1024
    arrays = _eligible_set(n)
    spec = _eligible(arrays)
    assert spec is not None and spec.lanes == 4
    assert _eligible(arrays, min_size=n + 1) is None  # too small
    assert _eligible(_eligible_set(n, "float64")) == ck.vector_spec(1, 8)
    assert _eligible(_eligible_set(n, "uint8", "int8")) == ck.vector_spec(1, 1)
    assert _eligible(_eligible_set(n, "complex128")) is None  # 16-byte values
    assert _eligible(_eligible_set(n, "float32", "int32")) is None  # 4-byte cond
    assert _eligible(_eligible_set(0)) is None
    # Shapes and layouts
    two_d = {k: v.reshape(32, 32) for k, v in arrays.items()}
    assert _eligible(two_d) is not None
    assert _eligible(two_d | {"then": two_d["then"].T}) is None  # transposed
    assert _eligible(two_d | {"cond": two_d["cond"][:1]}) is None  # broadcast cond
    big = kh.aligned_empty(2 * n, np.dtype("float32"))
    assert _eligible(arrays | {"else_": big[::2]}) is None  # strided
    # Alignment
    shifted = kh.aligned_empty(n + 4, np.dtype("float32"))[1 : n + 1]
    assert _eligible(arrays | {"then": shifted}) is None
    assert _eligible(arrays | {"out": shifted}) is None
    cond_shift = kh.aligned_empty(n + 4, np.dtype(bool))
    assert _eligible(arrays | {"cond": cond_shift[4 : n + 4]}) is not None  # 4-aligned: ok
    assert _eligible(arrays | {"cond": cond_shift[2 : n + 2]}) is None
    # Overlap: exact aliasing is fine, partial is not
    assert _eligible(arrays | {"out": arrays["then"]}) is not None
    overlapping = kh.aligned_empty(n + 4, np.dtype("float32"))
    assert _eligible(arrays | {"then": overlapping[:n], "out": overlapping[4 : n + 4]}) is None


# ------------------------------------------------------------------ registry and imports


def test_registry_maps_cupy_to_the_backend_factory():
    assert _registry._BUILTIN["cupy"] == "arrayselect.backends.cupy_backend:create"
    source = (BACKENDS / "cupy_backend" / "backend.py").read_text()
    assert re.search(r"^def create\(xp: ModuleType\) -> CupyBackend:", source, re.M)
    assert re.search(r"SignatureCache\(\s*self,\s*\(cupy\.ndarray,\)", source)


def test_import_arrayselect_does_not_import_cupy():
    proc = run_without(
        "cupy",
        """
        import numpy as np
        import arrayselect as asel
        import arrayselect.backends.cupy_backend.kernels
        import arrayselect.plugin
        asel.select(np.array([True, False]), np.arange(2), 0)
        assert "cupy" not in sys.modules
        print("ok")
        """,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# ------------------------------------------------------------------ with CuPy importable (no GPU)


def test_cupy_typenames_match_the_spec_c_types():
    pytest.importorskip("cupy", reason="cupy is not installed")
    from cupy._core import _scalar

    for raw, ctype in ck.C_TYPES.items():
        assert _scalar.get_typename(np.dtype(raw)) == ctype


def test_cupy_backend_queries_without_a_gpu():
    pytest.importorskip("cupy", reason="cupy is not installed")
    from arrayselect.backends.cupy_backend import backend as cupy_backend

    backend = cupy_backend.CupyBackend()
    assert backend.supports_out and backend.name == "cupy"
    assert backend.dtype_kind(np.dtype("int16")) == "int"
    assert backend.dtype_kind(np.dtype("complex64")) == "complex"
    assert backend.int_range(np.dtype("uint8")) == (0, 255)
    assert backend.float_max(np.dtype("float16")) == 65504.0
    assert backend.default_dtype(int, None) == np.int64
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert backend.dtype_kind(np.dtype(ml_dtypes.bfloat16)) == "float"
