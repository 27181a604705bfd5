/*
 * sk_plan.c: how a select is iterated.
 *
 * Layout handling follows the ufunc machinery: inputs broadcast by NumPy
 * rules onto the output shape (placed where the core's plan says); axes are
 * put in memory order (like NPY_KEEPORDER), size-1 axes dropped and
 * compatible axes coalesced, so that the innermost loop is as long and as
 * contiguous as the layouts allow. The inner loop is picked once per call
 * from the inner strides:
 *
 *   - every operand contiguous (or then/else a broadcast scalar): branchless
 *     loops the compiler vectorizes (restrict pointers, no aliasing);
 *   - out is then (or else) itself: in-place variants of the same loops;
 *   - cond broadcast along the inner axis: a block copy of the chosen row;
 *   - cond, then and else on one step of 2, 3 or 4 elements, out contiguous:
 *     one pass that reads the step directly (the ISA's deinterleaving shuffles);
 *   - anything else (other steps, reversed or transposed views): blocks gathered
 *     into L1 buffers, the contiguous loop on them, the output scattered back
 *     (or, for short rows and 16/32-byte items, an element-by-element loop);
 *     operands whose fast axis is not the iteration's inner one are visited
 *     in tiles.
 */
#include "sk_kernel.h"

/* Strided rows shorter than this run element by element (no buffers). */
#define SK_BUFFERED_MIN 16
/* Columns per tile of a transposed iteration (a few KiB of each operand per row). */
#define SK_TILE_W 256

#ifndef SK_STANDALONE /* the harness has no Python objects */
int
sk_parse_shape(PyObject *tuple, const char *what, int *nd, npy_intp *dims)
{
    if (!PyTuple_Check(tuple)) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of ints", what);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    if (n > SK_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "%s has %zd dimensions, more than %d", what, n,
                     SK_MAXDIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        npy_intp d = PyLong_AsSsize_t(PyTuple_GET_ITEM(tuple, i));
        if (d == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (d < 0) {
            PyErr_Format(PyExc_ValueError, "%s has a negative dimension", what);
            return -1;
        }
        dims[i] = d;
    }
    *nd = (int)n;
    return 0;
}

/* Parse a plan's dims tuple (or None: right-aligned) for input `name`. */
int
sk_parse_dims(PyObject *obj, const char *name, int out_nd, sk_dims *D)
{
    npy_intp map[SK_MAXDIMS];
    if (obj == Py_None) {
        D->kept = -1;
        return 0;
    }
    if (sk_parse_shape(obj, name, &D->kept, map) < 0) {
        return -1;
    }
    for (int k = 0; k < D->kept; k++) {
        if (map[k] >= out_nd || (k > 0 && map[k] <= map[k - 1])) {
            PyErr_Format(PyExc_ValueError, "internal error: bad dims for %s", name);
            return -1;
        }
        D->map[k] = (int)map[k];
    }
    return 0;
}

/*
 * Strides per output dimension of an input (nd, dims, strides) placed as D
 * says: 0 where it broadcasts. Only the placement's consistency is checked
 * (the core validated the shapes); a mismatch is an internal error.
 */
int
sk_place(int nd, const npy_intp *dims, const npy_intp *strides, const sk_dims *D, int out_nd,
         const npy_intp *out_dims, const char *name, npy_intp *placed)
{
    const int kept = D->kept < 0 ? nd : D->kept;
    if (kept > nd || (D->kept < 0 && nd > out_nd)) {
        goto mismatch;
    }
    for (int d = 0; d < out_nd; d++) {
        placed[d] = 0;
    }
    for (int k = 0; k < kept; k++) {
        const int d = D->kept < 0 ? out_nd - nd + k : D->map[k];
        if (dims[k] == 1) {
            continue;
        }
        if (dims[k] != out_dims[d]) {
            goto mismatch;
        }
        placed[d] = strides[k];
    }
    for (int k = kept; k < nd; k++) {
        if (dims[k] != 1) {
            goto mismatch;
        }
    }
    return 0;
mismatch:
    PyErr_Format(PyExc_ValueError,
                 "internal error: %s does not fit the output shape as the plan places it", name);
    return -1;
}
#endif /* !SK_STANDALONE */

static inline npy_intp
sk_abs(npy_intp x)
{
    return x < 0 ? -x : x;
}

/*
 * Axis order for iteration (outermost first), like NPY_KEEPORDER: axis x goes
 * outside axis y when the first operand (in priority order) with nonzero
 * strides on both has the larger |stride| on x. Stable: C order on ties.
 */
void
sk_axis_order(int nd, npy_intp strides[4][SK_MAXDIMS], const int *prio, int nprio, int *perm)
{
    for (int i = 0; i < nd; i++) {
        perm[i] = i;
    }
    for (int i = 1; i < nd; i++) {
        const int ax = perm[i];
        int pos = i;
        while (pos > 0) {
            const int other = perm[pos - 1];
            int swap = 0;
            for (int k = 0; k < nprio; k++) {
                const npy_intp s1 = sk_abs(strides[prio[k]][ax]);
                const npy_intp s0 = sk_abs(strides[prio[k]][other]);
                if (s1 != 0 && s0 != 0) {
                    swap = s1 > s0;
                    break;
                }
            }
            if (!swap) {
                break;
            }
            perm[pos] = other;
            pos--;
        }
        perm[pos] = ax;
    }
}

/* Byte extent [lo, hi) an operand touches. */
static void
sk_extent(const char *data, int nd, const npy_intp *dims, const npy_intp *strides,
          npy_intp isz, const char **lo, const char **hi)
{
    npy_intp low = 0, high = isz;
    for (int d = 0; d < nd; d++) {
        const npy_intp span = strides[d] * (dims[d] - 1);
        if (span < 0) {
            low += span;
        }
        else {
            high += span;
        }
    }
    *lo = data + low;
    *hi = data + high;
}

/*
 * How `out` relates to an input: 0 no overlap, 1 the very same elements
 * (same address, item size and strides: element-wise safe), 2 a partial
 * overlap (needs a temporary).
 */
int
sk_overlap(const char *in_data, const npy_intp *in_strides, npy_intp in_isz,
           const char *out_data, const npy_intp *out_strides, npy_intp out_isz, int nd,
           const npy_intp *dims)
{
    const char *ilo, *ihi, *olo, *ohi;
    sk_extent(in_data, nd, dims, in_strides, in_isz, &ilo, &ihi);
    sk_extent(out_data, nd, dims, out_strides, out_isz, &olo, &ohi);
    if (ihi <= olo || ohi <= ilo) {
        return 0;
    }
    if (in_data != out_data || in_isz != out_isz) {
        return 2;
    }
    for (int d = 0; d < nd; d++) {
        if (dims[d] > 1 && in_strides[d] != out_strides[d]) {
            return 2;
        }
    }
    return 1;
}

/* Pick the inner loop of a prepared job. */
static void
sk_pick_loop(sk_job *J, npy_intp csz, int alias_a, int alias_b, int alias_c)
{
    const int nd = J->nd;
    const npy_intp isz = J->isz;
    const npy_intp cs = J->strides[OP_C][nd - 1], as = J->strides[OP_A][nd - 1];
    const npy_intp bs = J->strides[OP_B][nd - 1], os = J->strides[OP_O][nd - 1];
    const int vi = sk_size_index(isz), ci = sk_size_index(csz);
    const npy_intp packed = (isz << 4) | csz;
    const sk_loop_table *table = sk_loops_current();

    J->isa = table->name;

    if (cs == 0) {
        J->loop = sk_block_loop;
        J->loop_name = "block";
        J->loop_arg = packed;
        return;
    }
    J->loop_arg = isz;
    /* Typed loops need every element naturally aligned (8 bytes for wider ones). */
    uintptr_t valign = (uintptr_t)(isz > 8 ? 8 : isz) - 1, calign = (uintptr_t)csz - 1;
    uintptr_t vbits = 0, cbits = (uintptr_t)J->data[OP_C];
    for (int k = OP_A; k <= OP_O; k++) {
        vbits |= (uintptr_t)J->data[k];
        for (int d = 0; d < nd; d++) {
            vbits |= (uintptr_t)J->strides[k][d];
        }
    }
    for (int d = 0; d < nd; d++) {
        cbits |= (uintptr_t)J->strides[OP_C][d];
    }
    if (vi < 0 || ci < 0 || ci > 3 || (vbits & valign) != 0 || (cbits & calign) != 0) {
        J->loop = sk_generic_loop;
        J->loop_name = "generic";
        J->loop_arg = packed;
        return;
    }
    const sk_loop *row = table->loops[vi][ci];
    const int a_ok = as == isz || as == 0, b_ok = bs == isz || bs == 0;
    const int contig = cs == csz && os == isz && a_ok && b_ok;
    if (contig && !alias_c) {
        if (!alias_a && !alias_b) {
            const int kind = as == 0 ? (bs == 0 ? SK_SS : SK_SC) : (bs == 0 ? SK_CS : SK_CC);
            J->loop = row[kind];
            J->loop_name = sk_kind_names[kind];
            return;
        }
        if (alias_a && !alias_b && row[SK_IA] != NULL) {
            J->loop = row[SK_IA];
            J->loop_name = sk_kind_names[SK_IA];
            return;
        }
        if (alias_b && !alias_a && row[SK_IB] != NULL) {
            J->loop = row[SK_IB];
            J->loop_name = sk_kind_names[SK_IB];
            return;
        }
    }
    /*
     * cond, then and else on one small step (2, 3 or 4 elements: x[:, ::2]
     * slices, every other field of a record), out contiguous: one pass that
     * reads the step directly, every item size.
     */
    if (os == isz && as == bs && as % isz == 0 && as / isz >= 2 && as / isz <= 4 &&
        cs == as / isz * csz && row[SK_SK] != NULL) {
        J->loop = row[SK_SK];
        J->loop_name = sk_kind_names[SK_SK];
        return;
    }
    /*
     * Strided: gather blocks into L1 buffers and run the vectorized loop on
     * them, unless the rows are too short for blocks to pay (the wide item
     * sizes move 16 or 32 bytes per element already: no buffers).
     */
    const int kind = vi <= 3 && J->shape[nd - 1] >= SK_BUFFERED_MIN ? SK_BST : SK_ST;
    J->loop = row[kind];
    J->loop_name = sk_kind_names[kind];
}

/*
 * Tiles for transposes that do not merge. When an operand's inner stride is a
 * cache line or more and its stride along the next axis is smaller (its fast
 * axis is the outer one), walking whole rows touches a new line, often a new
 * page, per element, and the next row comes back to those lines only after
 * `inner` elements, when long rows have pushed them out of L1 and the TLB.
 * Tiles of tile_r rows by tile_w columns use each such line tile_r times while
 * it is hot: tile_r is a cache line of the narrowest such operand.
 */
static void
sk_plan_tiles(sk_job *J, npy_intp csz)
{
    const int nd = J->nd;
    const npy_intp size[4] = {csz, J->isz, J->isz, J->isz};
    npy_intp narrowest = 0;
    J->tile_r = 0;
    J->tile_w = 0;
    if (nd < 2 || J->shape[nd - 1] <= SK_TILE_W ||
        (J->loop_name != sk_kind_names[SK_ST] && J->loop_name != sk_kind_names[SK_BST])) {
        return; /* rows that are contiguous or short need no tiles */
    }
    for (int k = 0; k < 4; k++) {
        const npy_intp inner = sk_abs(J->strides[k][nd - 1]);
        const npy_intp outer = sk_abs(J->strides[k][nd - 2]);
        if (inner >= 64 && outer != 0 && outer < inner &&
            (narrowest == 0 || size[k] < narrowest)) {
            narrowest = size[k];
        }
    }
    if (narrowest == 0) {
        return;
    }
    J->tile_r = 64 / narrowest < 2 ? 2 : 64 / narrowest;
    J->tile_w = SK_TILE_W;
}

/*
 * Bytes per element the job's loops move, what the decision to use threads
 * weighs (sk_pool.c): per operand, nothing when it is broadcast along the
 * inner axis, its item size when contiguous, and the bytes of cache line each
 * element drags in when strided; the block loop moves one input row and the
 * output.
 */
static npy_intp
sk_job_bytes(const sk_job *J, npy_intp csz)
{
    const int nd = J->nd;
    const npy_intp size[4] = {csz, J->isz, J->isz, J->isz};
    npy_intp bytes = 0;
    if (J->loop == sk_block_loop) {
        return 2 * J->isz;
    }
    for (int k = 0; k < 4; k++) {
        const npy_intp s = sk_abs(J->strides[k][nd - 1]);
        bytes += s == 0 ? 0 : s <= size[k] ? size[k] : s < 64 ? s : 64;
    }
    return bytes;
}

npy_intp sk_stream_min = SK_STREAM_FALLBACK;

/*
 * Streaming stores (sk_loops_stream.h) for a contiguous or block job (cond
 * broadcast along rows) with no input aliasing out that moves at least
 * sk_stream_min bytes, by default as many as the last-level cache holds:
 * its output could not stay in the cache anyway. Measured on the 2-core AMD
 * EPYC VM (32 MiB L3), float32 on two threads: from 25 MiB moved on, streaming
 * was faster even counting a sum of the output after the call; at 12 MiB it was
 * twice as slow (docs/numpy_kernel.md). Untiled jobs only, with rows of a few
 * KiB at least, so that the stores fill whole cache lines.
 */
npy_intp
sk_stream_default(void)
{
    const size_t bytes = sk_os_cache_bytes();
    return bytes > 0 && bytes < ((size_t)1 << 40) ? (npy_intp)bytes : SK_STREAM_FALLBACK;
}

void
sk_stream_init(void)
{
    SK_STORE(sk_stream_min, sk_stream_default());
}

#define SK_STREAM_ROW_BYTES 4096

static void
sk_pick_stores(sk_job *J, npy_intp csz, int aliased)
{
    J->stream = 0;
    const int block = J->loop == sk_block_loop;
    if ((J->loop_name != sk_kind_names[SK_CC] && !block) || aliased || J->tile_r != 0 ||
        J->shape[J->nd - 1] * J->isz < SK_STREAM_ROW_BYTES ||
        J->bpe * J->total < SK_LOAD(sk_stream_min)) {
        return;
    }
    const int isa = sk_isa_from_name(J->isa);
    const sk_loop loop = block ? sk_stream_block_loop(isa) : sk_stream_loop(isa, J->isz, csz);
    if (loop != NULL) {
        J->loop = loop;
        J->stream = 1;
    }
}

/*
 * Fill a job for out = select(c, a, b) where every operand's strides are given
 * per output dimension (broadcast dims have stride 0): memory-order the axes,
 * drop size-1 axes, coalesce, pick the loop.
 */
void
sk_prepare(sk_job *J, int nd, const npy_intp *dims, npy_intp strides[4][SK_MAXDIMS],
           char *data[4], npy_intp isz, npy_intp csz, int alias_a, int alias_b, int alias_c)
{
    static const int prio[4] = {OP_O, OP_A, OP_B, OP_C};
    int perm[SK_MAXDIMS];
    npy_intp total = 1;

    for (int d = 0; d < nd; d++) {
        total *= dims[d];
    }
    sk_axis_order(nd, strides, prio, 4, perm);
    J->isz = isz;
    J->total = total;
    for (int k = 0; k < 4; k++) {
        J->data[k] = data[k];
    }
    int m = 0;
    for (int i = 0; i < nd; i++) {
        const int ax = perm[i];
        if (dims[ax] == 1) {
            continue;
        }
        if (m > 0) {
            int merge = 1;
            for (int k = 0; k < 4; k++) {
                if (J->strides[k][m - 1] != strides[k][ax] * dims[ax]) {
                    merge = 0;
                    break;
                }
            }
            if (merge) {
                J->shape[m - 1] *= dims[ax];
                for (int k = 0; k < 4; k++) {
                    J->strides[k][m - 1] = strides[k][ax];
                }
                continue;
            }
        }
        J->shape[m] = dims[ax];
        for (int k = 0; k < 4; k++) {
            J->strides[k][m] = strides[k][ax];
        }
        m++;
    }
    if (m == 0) {
        J->shape[0] = 1;
        for (int k = 0; k < 4; k++) {
            J->strides[k][0] = 0;
        }
        m = 1;
    }
    J->nd = m;
    sk_pick_loop(J, csz, alias_a, alias_b, alias_c);
    sk_plan_tiles(J, csz);
    J->bpe = sk_job_bytes(J, csz);
    sk_pick_stores(J, csz, alias_a || alias_b || alias_c);
}


/* Run the flat range [start, end) of a job row by row. */
static void
sk_run_rows(const sk_job *J, npy_intp start, npy_intp end)
{
    const int nd = J->nd;
    const npy_intp inner = J->shape[nd - 1];
    npy_intp idx[SK_MAXDIMS];
    char *p[4];
    npy_intp q = start / inner, r = start % inner;

    for (int k = 0; k < 4; k++) {
        p[k] = J->data[k];
    }
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = q % J->shape[d];
        q /= J->shape[d];
        for (int k = 0; k < 4; k++) {
            p[k] += idx[d] * J->strides[k][d];
        }
    }
    const npy_intp cs = J->strides[OP_C][nd - 1], as = J->strides[OP_A][nd - 1];
    const npy_intp bs = J->strides[OP_B][nd - 1], os = J->strides[OP_O][nd - 1];
    npy_intp remaining = end - start;
    while (remaining > 0) {
        npy_intp count = inner - r;
        if (count > remaining) {
            count = remaining;
        }
        J->loop(count, p[OP_C] + r * cs, cs, p[OP_A] + r * as, as, p[OP_B] + r * bs, bs,
                p[OP_O] + r * os, os, J->loop_arg);
        remaining -= count;
        r = 0;
        if (remaining <= 0) {
            break;
        }
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < J->shape[d]) {
                for (int k = 0; k < 4; k++) {
                    p[k] += J->strides[k][d];
                }
                break;
            }
            idx[d] = 0;
            for (int k = 0; k < 4; k++) {
                p[k] -= J->strides[k][d] * (J->shape[d] - 1);
            }
        }
    }
}

/* Run the whole rows [row0, row1) of a job (rows: the flat index / inner) in tiles. */
static void
sk_run_tiled(const sk_job *J, npy_intp row0, npy_intp row1)
{
    const int nd = J->nd;
    const npy_intp inner = J->shape[nd - 1], rows = J->shape[nd - 2];
    const npy_intp R = J->tile_r, W = J->tile_w;
    npy_intp s_in[4], s_row[4];
    for (int k = 0; k < 4; k++) {
        s_in[k] = J->strides[k][nd - 1];
        s_row[k] = J->strides[k][nd - 2];
    }
    for (npy_intp g = row0; g < row1;) {
        /* row g is row r of matrix q; its panel ends at the next multiple of R in the matrix */
        npy_intp q = g / rows;
        const npy_intp r = g % rows;
        npy_intp g1 = g + (R - r % R);
        if (g1 > g - r + rows) {
            g1 = g - r + rows;
        }
        if (g1 > row1) {
            g1 = row1;
        }
        char *p[4];
        for (int k = 0; k < 4; k++) {
            p[k] = J->data[k] + r * s_row[k];
        }
        for (int d = nd - 3; d >= 0; d--) {
            const npy_intp i = q % J->shape[d];
            q /= J->shape[d];
            for (int k = 0; k < 4; k++) {
                p[k] += i * J->strides[k][d];
            }
        }
        for (npy_intp w0 = 0; w0 < inner; w0 += W) {
            const npy_intp w = inner - w0 < W ? inner - w0 : W;
            for (npy_intp rr = 0; rr < g1 - g; rr++) {
                char *at[4];
                for (int k = 0; k < 4; k++) {
                    at[k] = p[k] + rr * s_row[k] + w0 * s_in[k];
                }
                J->loop(w, at[OP_C], s_in[OP_C], at[OP_A], s_in[OP_A], at[OP_B], s_in[OP_B],
                        at[OP_O], s_in[OP_O], J->loop_arg);
            }
        }
        g = g1;
    }
}

void
sk_run_range(const sk_job *J, npy_intp start, npy_intp end)
{
    if (J->tile_r > 1) {
        /* the whole rows inside the range in tiles, partial rows at its ends row by row */
        const npy_intp inner = J->shape[J->nd - 1];
        const npy_intp r0 = (start + inner - 1) / inner, r1 = end / inner;
        if (r0 < r1) {
            if (start < r0 * inner) {
                sk_run_rows(J, start, r0 * inner);
            }
            sk_run_tiled(J, r0, r1);
            if (r1 * inner < end) {
                sk_run_rows(J, r1 * inner, end);
            }
            return;
        }
    }
    sk_run_rows(J, start, end);
}
