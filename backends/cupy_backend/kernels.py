"""Pure-Python planning for the CuPy backend: kernel specs, CUDA sources, launch shapes.

Nothing here imports CuPy or needs a GPU, so all of it is unit-tested on the CPU.
:mod:`arrayselect.backends.cupy_backend.backend` turns these plans into launches.

The kernels work on raw bits. Every value dtype is viewed as the unsigned integer
of its item size (``float32`` and ``int32`` both as ``uint32``, ``bfloat16`` and
``float16`` as ``uint16``, ...), so a handful of kernels serve every dtype and no
floating-point instruction ever touches a value: NaN payloads, signed zeros and
subnormals come out as they went in. The one 16-byte dtype CuPy has,
``complex128``, has no unsigned integer of its size; its kernel is typed
``complex128`` (``thrust::complex<double>`` in CUDA), which only moves the two
doubles, bit for bit. The condition is viewed as the unsigned integer of *its*
item size and tested with ``c != 0``: booleans and every integer dtype alike,
"nonzero is true", with no cast pass.

Two kinds of kernel:

* :class:`ElementwiseSpec` -- a ``cupy.ElementwiseKernel``; CuPy's own indexing
  does broadcasting and strides on the aligned views. One per (cond item size,
  value item size): at most 4 x 5 = 20, each compiled on first use.
* :class:`VectorSpec` -- a ``cupy.RawKernel`` for large C-contiguous inputs that
  all have the output's shape: every thread moves 16-byte words (``uint4``) of
  ``then``/``else``/``out`` and the matching 2-16 bytes of a 1-byte ``cond``, in a
  grid-stride loop, with a scalar tail. Used only when :func:`vector_eligible`
  says so.

The select family adds :class:`FamilySpec` objects (one ``ElementwiseKernel`` each,
generated per case count): :func:`select_n_spec` (a ``switch`` on ``which``, bound with its own
integer type, that flags an index out of range with ``atomicMin`` on a
one-element array), :func:`index_check_spec` (the same check alone, run before
a ``select_n`` that writes into ``out``) and :func:`select_cases_spec` (an
``if``/``else`` chain over the conditions, each viewed as the unsigned integer
of its item size). Values are raw bits, as above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "CASES_VECTOR_MIN_SIZE",
    "COND_RAW_DTYPES",
    "C_TYPES",
    "MAX_GRID",
    "NO_BAD_INDEX",
    "SELECT_CASES_MAX_CONDS",
    "SELECT_N_MAX_CASES",
    "STRIDED_MAX_SIZE",
    "VALUE_RAW_DTYPES",
    "VECTOR_BLOCK",
    "VECTOR_MIN_SIZE",
    "ArrayLayout",
    "CasesVectorSpec",
    "ElementwiseSpec",
    "FamilySpec",
    "StridedSpec",
    "VectorSpec",
    "byte_bounds",
    "cases_vector_eligible",
    "elementwise_spec",
    "index_check_spec",
    "is_c_contiguous",
    "overlap",
    "select_cases_spec",
    "select_n_spec",
    "strided_params",
    "strided_spec",
    "vector_eligible",
    "vector_launch",
    "vector_spec",
]

#: Raw dtype (a NumPy/CuPy dtype name) that values of each item size are viewed as.
VALUE_RAW_DTYPES: Final[dict[int, str]] = {
    1: "uint8",
    2: "uint16",
    4: "uint32",
    8: "uint64",
    16: "complex128",
}
#: Raw dtype that a boolean or integer ``cond`` of each item size is viewed as.
COND_RAW_DTYPES: Final[dict[int, str]] = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}
#: CUDA C type CuPy uses for each raw dtype (what ``ElementwiseKernel`` declares).
C_TYPES: Final[dict[str, str]] = {
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned int",
    "uint64": "unsigned long long",
    "complex128": "thrust::complex<double>",
}

#: Threads per block of the vectorized kernel.
VECTOR_BLOCK: Final = 256
#: Smallest element count for which the vectorized kernel is used: every size.
#: Besides moving 16-byte words, its launch (a ``RawKernel`` given the operands'
#: pointers) costs the host less than an ``ElementwiseKernel``'s, which is what a
#: small call's time is (``asv_benchmarks/gpu_bench.py`` compares the two kernels).
VECTOR_MIN_SIZE: Final = 1
#: Most blocks in a grid's x dimension (CUDA's limit from compute capability 3.0).
MAX_GRID: Final = (1 << 31) - 1

_COND_KINDS: Final = ("b", "i", "u")

# The vectorized kernel: one 16-byte word of values, and the cond bytes of the same
# elements, per step. Keyed by lanes (elements per 16-byte word): cond word C type.
_COND_WORD_CTYPES: Final[dict[int, str]] = {
    2: "unsigned short",
    4: "unsigned int",
    8: "unsigned long long",
    16: "uint4",
}


def _kind_and_itemsize(dtype: Any) -> tuple[str, int]:
    """``(kind, itemsize)`` of a NumPy/CuPy dtype (anything with those attributes)."""
    return str(dtype.kind), int(dtype.itemsize)


@dataclass(frozen=True, slots=True)
class ElementwiseSpec:
    """One ``cupy.ElementwiseKernel``: what to pass to its constructor.

    Attributes
    ----------
    cond_dtype, value_dtype
        Raw dtype names that ``cond`` and the values are viewed as before the
        launch (the kernel's parameter types are fixed to them, so CuPy never
        casts).
    cond_ctype, value_ctype
        The CUDA C types CuPy declares for them.
    name
        Kernel name (shown by profilers).
    in_params, out_params, operation
        The ``ElementwiseKernel`` strings.
    """

    cond_dtype: str
    value_dtype: str
    cond_ctype: str
    value_ctype: str
    name: str
    in_params: str
    out_params: str
    operation: str


def elementwise_spec(cond_dtype: Any, value_dtype: Any) -> ElementwiseSpec:
    """The element-wise kernel for a ``cond`` dtype and a value (output) dtype.

    Parameters
    ----------
    cond_dtype
        Boolean or integer dtype of ``cond`` (NumPy dtype or anything with
        ``kind`` and ``itemsize``).
    value_dtype
        Dtype of ``then``/``else``/``out``: any dtype of item size 1, 2, 4, 8 or 16.

    Returns
    -------
    ElementwiseSpec
        The same spec for every pair of dtypes with the same item sizes.

    Raises
    ------
    ValueError
        For a ``cond`` that is not boolean or integer, or an item size without a
        raw type.
    """
    cond_kind, cond_size = _kind_and_itemsize(cond_dtype)
    value_size = int(value_dtype.itemsize)
    if cond_kind not in _COND_KINDS or cond_size not in COND_RAW_DTYPES:
        raise ValueError(f"cond dtype {cond_dtype} is not a boolean or integer dtype")
    if value_size not in VALUE_RAW_DTYPES:
        raise ValueError(f"no raw type for the {value_size}-byte dtype {value_dtype}")
    return _elementwise_spec(cond_size, value_size)


def _elementwise_spec(cond_size: int, value_size: int) -> ElementwiseSpec:
    cond_raw = COND_RAW_DTYPES[cond_size]
    value_raw = VALUE_RAW_DTYPES[value_size]
    return ElementwiseSpec(
        cond_dtype=cond_raw,
        value_dtype=value_raw,
        cond_ctype=C_TYPES[cond_raw],
        value_ctype=C_TYPES[value_raw],
        name=f"arrayselect_select_c{cond_size}_v{value_size}",
        in_params=f"{cond_raw} c, {value_raw} x, {value_raw} y",
        out_params=f"{value_raw} z",
        # CuPy binds c, x, y as const references, so only the chosen value is
        # loaded; `!= 0` makes every integer cond "nonzero is true".
        operation="z = (c != 0) ? x : y;",
    )


@dataclass(frozen=True, slots=True)
class VectorSpec:
    """The vectorized ``cupy.RawKernel`` for one value item size (``cond`` of 1 byte).

    Attributes
    ----------
    value_itemsize
        1, 2, 4 or 8 bytes.
    lanes
        Elements per 16-byte word: ``16 // value_itemsize``.
    value_ctype
        Unsigned C type of one element.
    cond_word_ctype
        C type of ``lanes`` cond bytes, loaded at once.
    name
        Kernel name (``extern "C"``, so RawKernel finds it).
    """

    value_itemsize: int
    lanes: int
    value_ctype: str
    cond_word_ctype: str
    name: str

    @property
    def source(self) -> str:
        """CUDA source of the kernel (self-contained; NVRTC has ``uint4`` built in).

        Signature: ``(const cond_word* c, const uint4* x, const uint4* y, uint4* z,
        long long n)`` with ``n`` the element count. The word pointers must be
        aligned (16 bytes for the values, ``lanes`` bytes for ``cond``). ``z`` may
        be ``x`` or ``y`` exactly: each word is read before it is written, by the
        same thread, and no pointer is ``__restrict__``.
        """
        lanes = self.lanes
        v = self.value_ctype
        cw = self.cond_word_ctype
        return f"""\
extern "C" __global__ void {self.name}(
    const {cw}* c, const uint4* x, const uint4* y, uint4* z, long long n)
{{
    union value_word {{ uint4 w; {v} e[{lanes}]; }};
    union cond_word {{ {cw} w; unsigned char b[{lanes}]; }};
    const long long n_words = n / {lanes};
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = start; i < n_words; i += step) {{
        cond_word cb;
        value_word a, b, r;
        cb.w = c[i];
        a.w = x[i];
        b.w = y[i];
#pragma unroll
        for (int k = 0; k < {lanes}; ++k) {{
            r.e[k] = cb.b[k] != 0 ? a.e[k] : b.e[k];
        }}
        z[i] = r.w;
    }}
    /* The last n % {lanes} elements: one per thread of the first block. */
    const long long tail = n - n_words * {lanes};
    if (start < tail) {{
        const long long j = n_words * {lanes} + start;
        const unsigned char* cs = (const unsigned char*)c;
        const {v}* xs = (const {v}*)x;
        const {v}* ys = (const {v}*)y;
        {v}* zs = ({v}*)z;
        zs[j] = cs[j] != 0 ? xs[j] : ys[j];
    }}
}}
"""


def vector_spec(cond_itemsize: int, value_itemsize: int) -> VectorSpec | None:
    """The vectorized kernel for these item sizes, or ``None`` when there is none.

    Only a 1-byte ``cond`` (bool, int8, uint8) and values of 1, 2, 4 or 8 bytes
    qualify: a 16-byte value already moves a whole word per element, and a wider
    ``cond`` would need more than one cond word per value word.
    """
    if cond_itemsize != 1 or value_itemsize not in (1, 2, 4, 8):
        return None
    lanes = 16 // value_itemsize
    return VectorSpec(
        value_itemsize=value_itemsize,
        lanes=lanes,
        value_ctype=C_TYPES[VALUE_RAW_DTYPES[value_itemsize]],
        cond_word_ctype=_COND_WORD_CTYPES[lanes],
        name=f"arrayselect_select_vec_v{value_itemsize}",
    )


def vector_launch(n: int, lanes: int, block: int = VECTOR_BLOCK) -> tuple[int, int]:
    """Grid and block size for the vectorized kernel over ``n`` elements.

    One thread per 16-byte word: measured on an H200 at 2**28 float32, this moved
    more bytes per second than any grid capped at 1, 2 or 4 waves of resident
    blocks (with the kernel's grid-stride loop) or unrolled variants
    (``asv_benchmarks/gpu_bench.py``'s tuning rows; ``docs/gpu.md``). The
    kernel keeps its grid-stride loop, so a grid capped at CUDA's limit
    (:data:`MAX_GRID`) still covers any size. The tail (fewer than ``lanes``
    elements) is handled by the first block's first threads.

    Returns
    -------
    grid, block
        Both at least 1; ``block >= lanes``.
    """
    if n < 0 or lanes < 1 or block < 16 or block < lanes:
        raise ValueError(f"bad launch request: n={n}, lanes={lanes}, block={block}")
    words = n // lanes
    return min(MAX_GRID, max(1, -(-words // block))), block


@dataclass(frozen=True, slots=True)
class ArrayLayout:
    """Where an array's bytes are: enough to reason about alignment and overlap.

    Attributes
    ----------
    ptr
        Address of element ``(0, ..., 0)``.
    shape, strides
        In elements and bytes, as NumPy/CuPy report them.
    itemsize
        Bytes per element.
    """

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    itemsize: int

    @property
    def size(self) -> int:
        """Number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n


def is_c_contiguous(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> bool:
    """Whether an array with this layout is C-contiguous (dims of size 1 may have any stride)."""
    expected = itemsize
    for d, s in zip(reversed(shape), reversed(strides), strict=True):
        if d == 0:
            return True
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


def byte_bounds(a: ArrayLayout) -> tuple[int, int]:
    """Smallest and one-past-largest byte address the array touches (``(p, p)`` if empty)."""
    if a.size == 0:
        return a.ptr, a.ptr
    low = high = a.ptr
    for d, s in zip(a.shape, a.strides, strict=True):
        if s < 0:
            low += s * (d - 1)
        else:
            high += s * (d - 1)
    return low, high + a.itemsize


def _effective_strides(a: ArrayLayout, out_shape: Sequence[int]) -> tuple[int, ...] | None:
    """Strides of ``a`` broadcast to ``out_shape`` (0 where broadcast), or ``None`` if it cannot."""
    pad = len(out_shape) - len(a.shape)
    if pad < 0:
        return None
    result: list[int] = []
    for i, d_out in enumerate(out_shape):
        if i < pad:
            result.append(0)
            continue
        d = a.shape[i - pad]
        if d == d_out:
            result.append(a.strides[i - pad] if d != 1 else 0)
        elif d == 1:
            result.append(0)
        else:
            return None
    return tuple(result)


def overlap(src: ArrayLayout, out: ArrayLayout) -> Literal["none", "exact", "partial"]:
    """How an input's memory relates to ``out``'s, for an element-wise kernel.

    ``"exact"``: every output element is read from exactly its own address (same
    pointer and item size, the input broadcast to ``out``'s shape has ``out``'s
    strides), so one thread reads then writes each element: safe. ``"none"``: the
    byte ranges are disjoint. ``"partial"``: anything else that may overlap;
    the result must go through a temporary.
    """
    if src.size == 0 or out.size == 0:
        return "none"
    s_low, s_high = byte_bounds(src)
    o_low, o_high = byte_bounds(out)
    if s_high <= o_low or o_high <= s_low:
        return "none"
    if src.ptr == out.ptr and src.itemsize == out.itemsize:
        strides = _effective_strides(src, out.shape)
        if strides is not None and all(
            s == t or d == 1 for s, t, d in zip(strides, out.strides, out.shape, strict=True)
        ):
            return "exact"
    return "partial"


def vector_eligible(
    cond: ArrayLayout,
    then: ArrayLayout,
    else_: ArrayLayout,
    out: ArrayLayout,
    min_size: int = VECTOR_MIN_SIZE,
) -> VectorSpec | None:
    """The vectorized kernel to use, or ``None`` to use the element-wise one.

    Eligible when all of these hold:

    * ``out`` has at least ``min_size`` elements;
    * a :func:`vector_spec` exists for the item sizes (1-byte ``cond``; values of
      1, 2, 4 or 8 bytes; ``then``/``else``/``out`` of one item size);
    * all four arrays have ``out``'s shape (no broadcasting) and are C-contiguous;
    * the values' pointers are 16-byte aligned and ``cond``'s is ``lanes``-aligned;
    * no input overlaps ``out`` other than exactly.
    """
    n = out.size
    if n < min_size or n == 0:
        return None
    if not then.itemsize == else_.itemsize == out.itemsize:
        return None
    spec = vector_spec(cond.itemsize, out.itemsize)
    if spec is None:
        return None
    for a in (cond, then, else_, out):
        if a.shape != out.shape or not is_c_contiguous(a.shape, a.strides, a.itemsize):
            return None
    if any(a.ptr % 16 for a in (then, else_, out)) or cond.ptr % spec.lanes:
        return None
    if any(overlap(a, out) == "partial" for a in (cond, then, else_)):
        return None
    return spec


# ------------------------------------------------------------------ the select family

#: Most cases one ``select_n`` kernel takes, and most conditions one ``select_cases``
#: kernel takes. Every operand is a kernel parameter (a ``CArray``: pointer, size,
#: shape and strides, 96 bytes at 5 dimensions), and CUDA bounds a kernel's
#: parameters (32764 bytes from CUDA 12.1 on Volta and newer, 4 KiB before). Beyond
#: these counts the backend falls back to the core's chain of ``where``.
SELECT_N_MAX_CASES: Final = 64
SELECT_CASES_MAX_CONDS: Final = 32
#: What the ``first`` flag of a ``select_n`` kernel holds when every index was in range.
NO_BAD_INDEX: Final = (1 << 64) - 1

_INDEX_DTYPES: Final = frozenset(
    ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
)


@dataclass(frozen=True, slots=True)
class FamilySpec:
    """One ``cupy.ElementwiseKernel`` of the select family: its constructor's arguments.

    Attributes
    ----------
    name
        Kernel name (shown by profilers; unique per case count and operand types).
    in_params, out_params, operation
        The ``ElementwiseKernel`` strings. Parameter types are fixed, so CuPy
        never casts: the backend passes raw views (and ``which`` as it is).
    checked
        Whether the kernel takes the ``raw uint64 first`` output: a 1-element
        array, :data:`NO_BAD_INDEX` before the launch, that the kernel lowers
        (``atomicMin``) to the flat C-order position of each index out of range.
    """

    name: str
    in_params: str
    out_params: str
    operation: str
    checked: bool


def _which_param(which_dtype: Any, n: int) -> tuple[str, bool]:
    """``which``'s parameter type and whether its indices need a range check.

    Every integer dtype can hold an index out of range for at most
    :data:`SELECT_N_MAX_CASES` cases (``uint8`` holds 255), so only a boolean
    ``which`` goes unchecked.
    """
    if which_dtype.kind == "b":
        if n != 2:
            raise ValueError(f"a boolean which takes exactly 2 cases, got {n}")
        return COND_RAW_DTYPES[1], False
    name = str(which_dtype)
    if name not in _INDEX_DTYPES:
        raise ValueError(f"which dtype {which_dtype} is not a boolean or integer dtype")
    return name, True


def _value_raw(value_itemsize: int) -> str:
    if value_itemsize not in VALUE_RAW_DTYPES:
        raise ValueError(f"no raw type for the {value_itemsize}-byte values")
    return VALUE_RAW_DTYPES[value_itemsize]


# An index out of range writes nothing (the backend discards the result, or has
# checked the indices before writing into out) and lowers `first` to the element's
# flat position, so the backend names the first bad index in C order, as NumPy does.
_FLAG_BAD = "default: atomicMin(&first[0], (unsigned long long)i);"


def select_n_spec(which_dtype: Any, n: int, value_itemsize: int) -> FamilySpec:
    """The ``select_n`` kernel for ``n`` cases (``1 <= n <= SELECT_N_MAX_CASES``).

    ``which`` is bound with its own integer type (so ``switch`` compares the true
    index, negative ones included; no cast pass) or, when boolean, as ``uint8``
    tested with ``!= 0``. The cases and the output are the raw unsigned view of
    ``value_itemsize`` bytes. CuPy binds the cases as const references, so only
    the chosen case is loaded.

    Raises
    ------
    ValueError
        For a ``which`` that is not boolean or integer, a boolean ``which`` with
        other than 2 cases, an unsupported case count or item size.
    """
    if not 1 <= n <= SELECT_N_MAX_CASES:
        raise ValueError(f"select_n kernels take 1 to {SELECT_N_MAX_CASES} cases, got {n}")
    which, checked = _which_param(which_dtype, n)
    raw = _value_raw(value_itemsize)
    cases = ", ".join(f"{raw} x{k}" for k in range(n))
    if checked:
        lines = [f"case {k}: z = x{k}; break;" for k in range(n)]
        operation = "switch (w) {\n" + "\n".join([*lines, _FLAG_BAD]) + "\n}"
    else:
        operation = "z = (w != 0) ? x1 : x0;"
    label = which if checked else "bool"
    return FamilySpec(
        name=f"arrayselect_select_n{n}_{label}_v{value_itemsize}",
        in_params=f"{which} w, {cases}",
        out_params=f"{raw} z, raw uint64 first" if checked else f"{raw} z",
        operation=operation,
        checked=checked,
    )


def index_check_spec(which_dtype: Any, n: int) -> FamilySpec:
    """The kernel that only checks ``which`` against ``[0, n)`` (flagging like
    :func:`select_n_spec`'s): run before a ``select_n`` that writes into ``out``,
    so that a bad index leaves ``out`` untouched. It reads ``which`` alone.
    """
    which, checked = _which_param(which_dtype, n)
    if not checked:
        raise ValueError("a boolean which needs no index check")
    low = "w < 0 || " if which_dtype.kind == "i" else ""
    return FamilySpec(
        name=f"arrayselect_index_check{n}_{which}",
        in_params=f"{which} w",
        out_params="raw uint64 first",
        operation=f"if ({low}w >= {n}) atomicMin(&first[0], (unsigned long long)i);",
        checked=True,
    )


def select_cases_spec(cond_itemsizes: Sequence[int], value_itemsize: int) -> FamilySpec:
    """The ``select_cases`` kernel for conditions of these item sizes, in order.

    Each condition is viewed as the unsigned integer of its item size and tested
    with ``!= 0`` (booleans and every integer dtype, no cast pass); the choices,
    the default and the output as the raw unsigned view of ``value_itemsize``
    bytes. The first true condition's choice is stored, the default where none
    is: every condition is read (all loads issued at once), then an
    ``if``/``else`` chain picks one value, the only one loaded.

    Raises
    ------
    ValueError
        For no condition, more than :data:`SELECT_CASES_MAX_CONDS`, or an item size
        without a raw type.
    """
    n = len(cond_itemsizes)
    if not 1 <= n <= SELECT_CASES_MAX_CONDS:
        raise ValueError(
            f"select_cases kernels take 1 to {SELECT_CASES_MAX_CONDS} conditions, got {n}"
        )
    if any(size not in COND_RAW_DTYPES for size in cond_itemsizes):
        raise ValueError(f"no raw type for the condition item sizes {tuple(cond_itemsizes)}")
    raw = _value_raw(value_itemsize)
    conds = ", ".join(f"{COND_RAW_DTYPES[s]} c{k}" for k, s in enumerate(cond_itemsizes))
    choices = ", ".join(f"{raw} x{k}" for k in range(n))
    # Every condition is loaded first, unconditionally, so the loads are independent
    # and can go out together; then one value is loaded: the chosen one. (On an H200,
    # 4 conditions of 2**26 ran at 39% of the copy bandwidth this way or as a chain of
    # dependent loads alike; large same-shape calls take CasesVectorSpec's kernel.)
    tests = [f"const bool b{k} = c{k} != 0;" for k in range(n)]
    chain = [f"if (b{k}) z = x{k};" for k in range(n)]
    operation = "\n".join(tests) + "\n" + "\nelse ".join([*chain, "z = d;"])
    sizes = "".join(str(s) for s in cond_itemsizes)
    return FamilySpec(
        name=f"arrayselect_select_cases{n}_c{sizes}_v{value_itemsize}",
        in_params=f"{conds}, {choices}, {raw} d",
        out_params=f"{raw} z",
        operation=operation,
        checked=False,
    )


# ------------------------------------------------------------------ the strided kernel

#: Largest output for which the backend's cached calls use the strided kernel. Its
#: launch costs the host less than an ``ElementwiseKernel``'s, which decides a small
#: call; but its per-element index arithmetic made it slower on the GPU at 2**26
#: elements (an H200: 1.08x to 1.23x ``cupy.where`` on the broadcast patterns,
#: where the element-wise kernel was 1.02x to 1.10x), so larger outputs keep the
#: element-wise kernel (``docs/gpu.md``).
STRIDED_MAX_SIZE: Final = 1 << 22

#: ``then``/``else`` of a :class:`StridedSpec`: an array (read through strides) or a
#: scalar passed by value.
OperandKind = Literal["array", "scalar"]


@dataclass(frozen=True, slots=True)
class StridedSpec:
    """A ``cupy.RawKernel`` for broadcast and strided operands of at most two
    dimensions (after merging), written into a new C-contiguous output.

    Its launch costs the host less than an ``ElementwiseKernel``'s (no argument
    inspection, no indexer), which is what a small call's time is. Each thread
    finds its output element's row and column and reads ``cond[r * cs0 + k * cs1]``
    and then the chosen value (strides in elements, 0 where an operand broadcasts).

    Attributes
    ----------
    cond_itemsize, value_itemsize
        1, 2, 4 or 8 bytes (16-byte values use the element-wise kernel).
    then_kind, else_kind
        Whether each value operand is an array or a scalar passed by value (its
        raw bits, as the unsigned integer of ``value_itemsize``).
    """

    cond_itemsize: int
    value_itemsize: int
    then_kind: OperandKind
    else_kind: OperandKind

    @property
    def name(self) -> str:
        """Kernel name (``extern "C"``)."""
        kinds = "".join(k[0] for k in (self.then_kind, self.else_kind))
        return f"arrayselect_select_strided_c{self.cond_itemsize}_v{self.value_itemsize}_{kinds}"

    @property
    def source(self) -> str:
        """CUDA source. Signature: ``(c, x, y, z, n, cols, cs0, cs1, xs0, xs1, ys0, ys1)``
        with ``x``/``y`` pointers or values, ``n`` the element count, ``cols`` the
        inner extent and the strides in elements (``long long``); ``z`` is
        C-contiguous and overlaps no input.
        """
        ct = C_TYPES[COND_RAW_DTYPES[self.cond_itemsize]]
        vt = C_TYPES[VALUE_RAW_DTYPES[self.value_itemsize]]

        def operand(name: str, kind: OperandKind) -> tuple[str, str]:
            if kind == "scalar":
                return f"const {vt} {name}", name
            return f"const {vt}* {name}", f"{name}[r * {name}s0 + k * {name}s1]"

        x_decl, x_val = operand("x", self.then_kind)
        y_decl, y_val = operand("y", self.else_kind)
        return f"""\
extern "C" __global__ void {self.name}(
    const {ct}* c, {x_decl}, {y_decl}, {vt}* z, long long n, long long cols,
    long long cs0, long long cs1, long long xs0, long long xs1, long long ys0, long long ys1)
{{
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{
        long long r, k;
        if (n <= 0xFFFFFFFFLL) {{  /* 32-bit division where it suffices: far cheaper */
            const unsigned int ui = (unsigned int)i, uc = (unsigned int)cols;
            r = ui / uc;
            k = ui - (unsigned int)r * uc;
        }} else {{
            r = i / cols;
            k = i - r * cols;
        }}
        z[i] = c[r * cs0 + k * cs1] != 0 ? {x_val} : {y_val};
    }}
}}
"""


def strided_spec(
    cond_itemsize: int, value_itemsize: int, then_kind: OperandKind, else_kind: OperandKind
) -> StridedSpec | None:
    """The strided kernel for these operands, or ``None`` (16-byte values, both values
    scalars, or an item size without a raw type)."""
    if cond_itemsize not in COND_RAW_DTYPES or value_itemsize not in (1, 2, 4, 8):
        return None
    if then_kind == else_kind == "scalar":
        return None
    return StridedSpec(cond_itemsize, value_itemsize, then_kind, else_kind)


#: An operand's layout for :func:`strided_params`: ``(shape, strides in bytes,
#: itemsize)``, or ``None`` for a scalar.
Operand = tuple[tuple[int, ...], tuple[int, ...], int] | None


def strided_params(out_shape: Sequence[int], operands: Sequence[Operand]) -> tuple[int, ...] | None:
    """``(cols, cs0, cs1, xs0, xs1, ys0, ys1)`` for the strided kernel, or ``None``.

    ``operands`` are ``cond``, ``then``, ``else`` broadcasting to ``out_shape``
    by NumPy rules (right-aligned). Each one's strides are taken in elements
    (0 where it broadcasts, 0 throughout for a scalar); output dimensions of
    size 1 are dropped and neighbours merged where every operand steps through
    them as through one. ``None`` when more than two dimensions remain, a
    stride is not a multiple of the item size, or an operand does not broadcast.
    """
    ndim = len(out_shape)
    per_operand: list[list[int]] = []
    for op in operands:
        if op is None:
            per_operand.append([0] * ndim)
            continue
        shape, strides, itemsize = op
        pad = ndim - len(shape)
        if pad < 0:
            return None
        row = [0] * ndim
        for i in range(pad, ndim):
            size, stride = shape[i - pad], strides[i - pad]
            if size == 1:
                continue
            if size != out_shape[i] or stride % itemsize:
                return None
            row[i] = stride // itemsize
        per_operand.append(row)
    dims: list[tuple[int, list[int]]] = []
    for i, size in enumerate(out_shape):
        if size == 1:
            continue
        steps = [row[i] for row in per_operand]
        if dims and all(p == s * size for p, s in zip(dims[-1][1], steps, strict=True)):
            dims[-1] = (dims[-1][0] * size, steps)
        else:
            dims.append((size, steps))
    if len(dims) > 2:
        return None
    while len(dims) < 2:
        dims.insert(0, (1, [0] * len(per_operand)))
    (_, outer), (cols, inner) = dims
    return (cols, *(s for pair in zip(outer, inner, strict=True) for s in pair))


# ------------------------------------------------------------------ select_cases in words


@dataclass(frozen=True, slots=True)
class CasesVectorSpec:
    """A ``cupy.RawKernel`` for ``select_cases`` on C-contiguous operands of the
    output's shape: 1-byte conditions, values of 1, 2, 4 or 8 bytes, a one-element
    default. Each thread takes one 16-byte word of every choice it needs and of the
    output, and the matching word of every condition (all loaded first).

    Attributes
    ----------
    n_conds
        Number of conditions (and choices).
    value_itemsize
        1, 2, 4 or 8.
    """

    n_conds: int
    value_itemsize: int

    @property
    def lanes(self) -> int:
        """Elements per 16-byte word."""
        return 16 // self.value_itemsize

    @property
    def name(self) -> str:
        """Kernel name (``extern "C"``)."""
        return f"arrayselect_select_cases_vec{self.n_conds}_v{self.value_itemsize}"

    @property
    def source(self) -> str:
        """CUDA source. Signature: ``(c0 .. c{N-1}, x0 .. x{N-1}, d, z, n)``: condition
        words, choice words (``uint4``), the default's element, the output words,
        the element count. A choice's word is loaded only if one of its lanes is
        taken from it."""
        n, lanes = self.n_conds, self.lanes
        vt = C_TYPES[VALUE_RAW_DTYPES[self.value_itemsize]]
        cw = _COND_WORD_CTYPES[lanes]
        conds = ", ".join(f"const {cw}* c{k}" for k in range(n))
        choices = ", ".join(f"const uint4* x{k}" for k in range(n))
        load_conds = "\n".join(f"        cb[{k}].w = c{k}[i];" for k in range(n))
        tail_conds = "\n".join(  # the last assignment wins: the first true condition
            f"        if (((const unsigned char*)c{k})[j] != 0) z_tail = ((const {vt}*)x{k})[j];"
            for k in reversed(range(n))
        )
        return f"""\
extern "C" __global__ void {self.name}(
    {conds},
    {choices},
    const {vt}* d, uint4* z, long long n)
{{
    union value_word {{ uint4 w; {vt} e[{lanes}]; }};
    union cond_word {{ {cw} w; unsigned char b[{lanes}]; }};
    const {vt} dv = d[0];
    const long long n_words = n / {lanes};
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = start; i < n_words; i += step) {{
        cond_word cb[{n}];
{load_conds}
        /* which choice each lane takes: the first true condition, {n} for none */
        int pick[{lanes}];
#pragma unroll
        for (int e = 0; e < {lanes}; ++e) {{
            pick[e] = {n};
#pragma unroll
            for (int k = {n} - 1; k >= 0; --k) {{
                if (cb[k].b[e] != 0) pick[e] = k;
            }}
        }}
        value_word r;
#pragma unroll
        for (int e = 0; e < {lanes}; ++e) r.e[e] = dv;
        const uint4* xs[{n}] = {{{", ".join(f"x{k}" for k in range(n))}}};
#pragma unroll
        for (int k = 0; k < {n}; ++k) {{
            bool used = false;
#pragma unroll
            for (int e = 0; e < {lanes}; ++e) used |= pick[e] == k;
            if (used) {{
                value_word v;
                v.w = xs[k][i];
#pragma unroll
                for (int e = 0; e < {lanes}; ++e) {{
                    if (pick[e] == k) r.e[e] = v.e[e];
                }}
            }}
        }}
        z[i] = r.w;
    }}
    /* The last n % {lanes} elements: one per thread of the first block. */
    const long long tail = n - n_words * {lanes};
    if (start < tail) {{
        const long long j = n_words * {lanes} + start;
        {vt} z_tail = dv;
{tail_conds}
        (({vt}*)z)[j] = z_tail;
    }}
}}
"""


#: Smallest output for which ``select_cases`` uses its word kernel. Deciding it (a
#: layout per operand) and launching it cost the host about 85 µs more than the
#: element-wise kernel's launch (an H200: 4 conditions, 2**16 elements, 137 µs
#: against 50 µs a call), which the faster kernel repays from about 2**23 elements
#: (2**24: 177 µs against 267 µs; 2**26: 404 µs against 976 µs).
CASES_VECTOR_MIN_SIZE: Final = 1 << 24


def cases_vector_eligible(
    conds: Sequence[ArrayLayout],
    choices: Sequence[ArrayLayout],
    default: ArrayLayout,
    out: ArrayLayout,
) -> CasesVectorSpec | None:
    """The word kernel for this ``select_cases``, or ``None`` (use the element-wise one).

    Eligible when the conditions are 1-byte, the values (choices, default, output)
    of one item size of 1, 2, 4 or 8 bytes, the default has one element, every
    condition and choice and the output is C-contiguous with the output's shape,
    the values' pointers are 16-byte aligned and the conditions' aligned to their
    word, and the output (new, from the backend) overlaps nothing.
    """
    size = out.itemsize
    if out.size == 0 or size not in (1, 2, 4, 8) or default.size != 1:
        return None
    if default.itemsize != size or not 1 <= len(conds) == len(choices) <= SELECT_CASES_MAX_CONDS:
        return None
    lanes = 16 // size
    for a in (*conds, *choices):
        if a.shape != out.shape or not is_c_contiguous(a.shape, a.strides, a.itemsize):
            return None
    if any(c.itemsize != 1 or c.ptr % lanes for c in conds):
        return None
    if any(x.itemsize != size or x.ptr % 16 for x in choices) or out.ptr % 16:
        return None
    return CasesVectorSpec(len(conds), size)
