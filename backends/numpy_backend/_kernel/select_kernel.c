/*
 * arrayselect.backends._select_kernel: the compiled Select kernel for NumPy.
 *
 *     out[i] = cond[i] ? then[i] : else[i]
 *
 * Values are moved as raw bits, so one loop per item size (1, 2, 4, 8, 16 and
 * 32 bytes; any other size through a generic byte loop) serves every dtype:
 * bool, integers, floats, complex, long double, and the ml_dtypes extension
 * types (bfloat16, float8_*, int4, ...). cond is tested as "nonzero is true"
 * at its own width (1, 2, 4 or 8 bytes), so boolean and integer masks need no
 * conversion pass.
 *
 * Layout handling follows the ufunc machinery: inputs broadcast by NumPy
 * rules onto the output shape; axes are put in memory order (like
 * NPY_KEEPORDER), size-1 axes dropped and compatible axes coalesced, so that
 * the innermost loop is as long and as contiguous as the layouts allow. The
 * inner loop is picked once per call from the inner strides:
 *
 *   - every operand contiguous (or then/else a broadcast scalar): branchless
 *     loops the compiler vectorizes (restrict pointers, no aliasing);
 *   - out is then (or else) itself: in-place variants of the same loops;
 *   - cond broadcast along the inner axis: a block copy of the chosen row;
 *   - anything else: a branchless strided loop.
 *
 * Large outputs are split across a persistent pthread pool; the GIL is
 * released around the loops.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#if !defined(_WIN32)
#include <pthread.h>
#define SK_HAVE_THREADS 1
#else
#define SK_HAVE_THREADS 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SK_RESTRICT __restrict__
#define SK_HAVE_VECTOR_EXT 1
#elif defined(_MSC_VER)
#define SK_RESTRICT __restrict
#define SK_HAVE_VECTOR_EXT 0
#else
#define SK_RESTRICT
#define SK_HAVE_VECTOR_EXT 0
#endif

#define SK_MAXDIMS NPY_MAXDIMS

/* ------------------------------------------------------------------------ */
/* Inner loops                                                              */
/* ------------------------------------------------------------------------ */

/* Every inner loop has this signature; contiguous loops ignore the strides. */
typedef void (*sk_loop)(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as,
                        const char *b, npy_intp bs, char *o, npy_intp os, npy_intp isz);

/*
 * Branchless select of one element. For item sizes <= 4 with conds <= 4 bytes
 * the ternary on preloaded values vectorizes best (SSE2 compares); for wider
 * operands the mask form keeps the compiler from emitting a branch where the
 * baseline ISA has no 64-bit compare.
 */
#define SK_SEL(CT, VT, cv, x, y)                                                  \
    ((sizeof(CT) <= 4 && sizeof(VT) <= 4)                                         \
         ? ((cv) != 0 ? (x) : (y))                                                \
         : (VT)(((x) & ((VT)0 - (VT)((cv) != 0))) | ((y) & ((VT)((cv) != 0) - (VT)1))))

/* Loops over elements made of one unsigned integer (item sizes 1, 2, 4, 8). */
#define SK_SCALAR_LOOPS(CN, CT, VN, VT)                                                           \
    static void cc_##CN##_##VN(npy_intp n, const char *c_, npy_intp cs, const char *a_,           \
                               npy_intp as, const char *b_, npy_intp bs, char *o_, npy_intp os,   \
                               npy_intp isz)                                                      \
    {                                                                                             \
        const CT *SK_RESTRICT c = (const CT *)c_;                                                 \
        const VT *SK_RESTRICT a = (const VT *)a_;                                                 \
        const VT *SK_RESTRICT b = (const VT *)b_;                                                 \
        VT *SK_RESTRICT o = (VT *)o_;                                                             \
        (void)cs; (void)as; (void)bs; (void)os; (void)isz;                                        \
        for (npy_intp i = 0; i < n; i++) {                                                        \
            const VT x = a[i], y = b[i];                                                          \
            o[i] = SK_SEL(CT, VT, c[i], x, y);                                                    \
        }                                                                                         \
    }                                                                                             \
    static void sc_##CN##_##VN(npy_intp n, const char *c_, npy_intp cs, const char *a_,           \
                               npy_intp as, const char *b_, npy_intp bs, char *o_, npy_intp os,   \
                               npy_intp isz)                                                      \
    {                                                                                             \
        const CT *SK_RESTRICT c = (const CT *)c_;                                                 \
        const VT x = *(const VT *)a_;                                                             \
        const VT *SK_RESTRICT b = (const VT *)b_;                                                 \
        VT *SK_RESTRICT o = (VT *)o_;                                                             \
        (void)cs; (void)as; (void)bs; (void)os; (void)isz;                                        \
        for (npy_intp i = 0; i < n; i++) {                                                        \
            const VT y = b[i];                                                                    \
            o[i] = SK_SEL(CT, VT, c[i], x, y);                                                    \
        }                                                                                         \
    }                                                                                             \
    static void cs_##CN##_##VN(npy_intp n, const char *c_, npy_intp cs, const char *a_,           \
                               npy_intp as, const char *b_, npy_intp bs, char *o_, npy_intp os,   \
                               npy_intp isz)                                                      \
    {                                                                                             \
        const CT *SK_RESTRICT c = (const CT *)c_;                                                 \
        const VT *SK_RESTRICT a = (const VT *)a_;                                                 \
        const VT y = *(const VT *)b_;                                                             \
        VT *SK_RESTRICT o = (VT *)o_;                                                             \
        (void)cs; (void)as; (void)bs; (void)os; (void)isz;                                        \
        for (npy_intp i = 0; i < n; i++) {                                                        \
            const VT x = a[i];                                                                    \
            o[i] = SK_SEL(CT, VT, c[i], x, y);                                                    \
        }                                                                                         \
    }                                                                                             \
    static void ss_##CN##_##VN(npy_intp n, const char *c_, npy_intp cs, const char *a_,           \
                               npy_intp as, const char *b_, npy_intp bs, char *o_, npy_intp os,   \
                               npy_intp isz)                                                      \
    {                                                                                             \
        const CT *SK_RESTRICT c = (const CT *)c_;                                                 \
        const VT x = *(const VT *)a_;                                                             \
        const VT y = *(const VT *)b_;                                                             \
        VT *SK_RESTRICT o = (VT *)o_;                                                             \
        (void)cs; (void)as; (void)bs; (void)os; (void)isz;                                        \
        for (npy_intp i = 0; i < n; i++) {                                                        \
            o[i] = SK_SEL(CT, VT, c[i], x, y);                                                    \
        }                                                                                         \
    }                                                                                             \
    /* out is then: o[i] = c ? o[i] : b[i] (b contiguous, or a scalar when bs == 0) */             \
    static void ia_##CN##_##VN(npy_intp n, const char *c_, npy_intp cs, const char *a_,           \
                               npy_intp as, const char *b_, npy_intp bs, char *o_, npy_intp os,   \
                               npy_intp isz)                                                      \
    {                                                                                             \
        const CT *SK_RESTRICT c = (const CT *)c_;                                                 \
        VT *SK_RESTRICT o = (VT *)o_;                                                             \
        (void)cs; (void)as; (void)a_; (void)os; (void)isz;                                        \
        if (bs == 0) {                                                                            \
            const VT y = *(const VT *)b_;                                                         \
            for (npy_intp i = 0; i < n; i++) {                                                    \
                const VT x = o[i];                                                                \
                o[i] = SK_SEL(CT, VT, c[i], x, y);                                                \
            }                                                                                     \
        }                                                                                         \
        else {                                                                                    \
            const VT *SK_RESTRICT b = (const VT *)b_;                                             \
            for (npy_intp i = 0; i < n; i++) {                                                    \
                const VT x = o[i], y = b[i];                                                      \
                o[i] = SK_SEL(CT, VT, c[i], x, y);                                                \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    /* out is else: o[i] = c ? a[i] : o[i] */                                                     \
    static void ib_##CN##_##VN(npy_intp n, const char *c_, npy_intp cs, const char *a_,           \
                               npy_intp as, const char *b_, npy_intp bs, char *o_, npy_intp os,   \
                               npy_intp isz)                                                      \
    {                                                                                             \
        const CT *SK_RESTRICT c = (const CT *)c_;                                                 \
        VT *SK_RESTRICT o = (VT *)o_;                                                             \
        (void)cs; (void)bs; (void)b_; (void)os; (void)isz;                                        \
        if (as == 0) {                                                                            \
            const VT x = *(const VT *)a_;                                                         \
            for (npy_intp i = 0; i < n; i++) {                                                    \
                const VT y = o[i];                                                                \
                o[i] = SK_SEL(CT, VT, c[i], x, y);                                                \
            }                                                                                     \
        }                                                                                         \
        else {                                                                                    \
            const VT *SK_RESTRICT a = (const VT *)a_;                                             \
            for (npy_intp i = 0; i < n; i++) {                                                    \
                const VT x = a[i], y = o[i];                                                      \
                o[i] = SK_SEL(CT, VT, c[i], x, y);                                                \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    /* Any strides, any aliasing (no restrict): read both, select, write. */                      \
    static void st_##CN##_##VN(npy_intp n, const char *c, npy_intp cs, const char *a,             \
                               npy_intp as, const char *b, npy_intp bs, char *o, npy_intp os,     \
                               npy_intp isz)                                                      \
    {                                                                                             \
        (void)isz;                                                                                \
        for (npy_intp i = 0; i < n; i++) {                                                        \
            const VT x = *(const VT *)a, y = *(const VT *)b;                                      \
            const CT cv = *(const CT *)c;                                                         \
            *(VT *)o = (VT)((x & ((VT)0 - (VT)(cv != 0))) | (y & ((VT)(cv != 0) - (VT)1)));       \
            c += cs; a += as; b += bs; o += os;                                                   \
        }                                                                                         \
    }

/*
 * Loops over elements of L 8-byte lanes (item sizes 16 and 32): every lane of
 * an element takes the same mask. With GCC/Clang vector extensions one
 * element is one or two 16-byte vector operations.
 */
#if SK_HAVE_VECTOR_EXT
typedef uint64_t sk_v2 __attribute__((vector_size(16)));
#define SK_WIDE_ELEM(CT, L, cv, ap, bp, op)                                       \
    do {                                                                          \
        const uint64_t mm_ = (uint64_t)0 - (uint64_t)((cv) != 0);                 \
        const sk_v2 m_ = {mm_, mm_};                                              \
        for (int l_ = 0; l_ < (L) / 2; l_++) {                                    \
            sk_v2 x_, y_, r_;                                                     \
            memcpy(&x_, (ap) + 16 * l_, 16);                                      \
            memcpy(&y_, (bp) + 16 * l_, 16);                                      \
            r_ = (x_ & m_) | (y_ & ~m_);                                          \
            memcpy((op) + 16 * l_, &r_, 16);                                      \
        }                                                                         \
    } while (0)
#else
#define SK_WIDE_ELEM(CT, L, cv, ap, bp, op)                                       \
    do {                                                                          \
        const uint64_t mm_ = (uint64_t)0 - (uint64_t)((cv) != 0);                 \
        for (int l_ = 0; l_ < (L); l_++) {                                        \
            uint64_t x_, y_, r_;                                                  \
            memcpy(&x_, (ap) + 8 * l_, 8);                                        \
            memcpy(&y_, (bp) + 8 * l_, 8);                                        \
            r_ = (x_ & mm_) | (y_ & ~mm_);                                        \
            memcpy((op) + 8 * l_, &r_, 8);                                        \
        }                                                                         \
    } while (0)
#endif

#define SK_WIDE_LOOPS(CN, CT, VN, L)                                                              \
    static void cc_##CN##_##VN(npy_intp n, const char *c_, npy_intp cs, const char *a,            \
                               npy_intp as, const char *b, npy_intp bs, char *o, npy_intp os,     \
                               npy_intp isz)                                                      \
    {                                                                                             \
        const CT *SK_RESTRICT c = (const CT *)c_;                                                 \
        (void)cs; (void)isz;                                                                      \
        /* as/bs are 0 (broadcast scalar) or the item size: one loop serves sc/cs/ss too */       \
        for (npy_intp i = 0; i < n; i++) {                                                        \
            SK_WIDE_ELEM(CT, L, c[i], a + i * as, b + i * bs, o + i * os);                        \
        }                                                                                         \
    }                                                                                             \
    static void st_##CN##_##VN(npy_intp n, const char *c, npy_intp cs, const char *a,             \
                               npy_intp as, const char *b, npy_intp bs, char *o, npy_intp os,     \
                               npy_intp isz)                                                      \
    {                                                                                             \
        (void)isz;                                                                                \
        for (npy_intp i = 0; i < n; i++) {                                                        \
            SK_WIDE_ELEM(CT, L, *(const CT *)c, a, b, o);                                         \
            c += cs; a += as; b += bs; o += os;                                                   \
        }                                                                                         \
    }

#define SK_FOR_CONDS(MACRO, VN, VT)    \
    MACRO(c1, uint8_t, VN, VT)         \
    MACRO(c2, uint16_t, VN, VT)        \
    MACRO(c4, uint32_t, VN, VT)        \
    MACRO(c8, uint64_t, VN, VT)

SK_FOR_CONDS(SK_SCALAR_LOOPS, v1, uint8_t)
SK_FOR_CONDS(SK_SCALAR_LOOPS, v2, uint16_t)
SK_FOR_CONDS(SK_SCALAR_LOOPS, v4, uint32_t)
SK_FOR_CONDS(SK_SCALAR_LOOPS, v8, uint64_t)
SK_FOR_CONDS(SK_WIDE_LOOPS, v16, 2)
SK_FOR_CONDS(SK_WIDE_LOOPS, v32, 4)

/* "nonzero" of one cond element of size csz (1, 2, 4 or 8), any alignment. */
static inline int
sk_nonzero(const char *c, int csz)
{
    switch (csz) {
        case 1: return c[0] != 0;
        case 2: { uint16_t v; memcpy(&v, c, 2); return v != 0; }
        case 4: { uint32_t v; memcpy(&v, c, 4); return v != 0; }
        default: { uint64_t v; memcpy(&v, c, 8); return v != 0; }
    }
}

/* Branchless pointer select: nz ? a : b without a jump. */
static inline const char *
sk_psel(int nz, const char *a, const char *b)
{
    const uintptr_t m = (uintptr_t)0 - (uintptr_t)(nz != 0);
    return (const char *)(((uintptr_t)a & m) | ((uintptr_t)b & ~m));
}

/*
 * Generic loop: any item size, any alignment, any strides, any aliasing.
 * The cond size travels in the upper bits of isz (see sk_pick_loop).
 */
static void
generic_loop(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as,
             const char *b, npy_intp bs, char *o, npy_intp os, npy_intp packed)
{
    const npy_intp isz = packed >> 4;
    const int csz = (int)(packed & 15);
    for (npy_intp i = 0; i < n; i++) {
        const char *src = sk_psel(sk_nonzero(c, csz), a, b);
        if (src != o) {
            memmove(o, src, (size_t)isz);
        }
        c += cs; a += as; b += bs; o += os;
    }
}

/* Copy n elements (block copy for a cond broadcast along the inner axis). */
static void
sk_copy(npy_intp n, const char *src, npy_intp ss, char *o, npy_intp os, npy_intp isz)
{
    if (src == o && ss == os) {
        return; /* in place: nothing to do */
    }
    if (ss == isz && os == isz) {
        memmove(o, src, (size_t)(n * isz));
        return;
    }
    switch (isz) {
#define SK_COPY_CASE(SZ, T)                                          \
        case SZ:                                                     \
            if ((((uintptr_t)src | (uintptr_t)o | (uintptr_t)ss |    \
                  (uintptr_t)os) & (SZ - 1)) == 0) {                 \
                for (npy_intp i = 0; i < n; i++) {                   \
                    *(T *)o = *(const T *)src;                       \
                    src += ss; o += os;                              \
                }                                                    \
                return;                                              \
            }                                                        \
            break;
        SK_COPY_CASE(1, uint8_t)
        SK_COPY_CASE(2, uint16_t)
        SK_COPY_CASE(4, uint32_t)
        SK_COPY_CASE(8, uint64_t)
#undef SK_COPY_CASE
        default:
            break;
    }
    for (npy_intp i = 0; i < n; i++) {
        memmove(o, src, (size_t)isz);
        src += ss; o += os;
    }
}

/* cond stride 0 along the inner axis: one test, then a row copy. */
static void
block_loop(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as,
           const char *b, npy_intp bs, char *o, npy_intp os, npy_intp packed)
{
    const npy_intp isz = packed >> 4;
    const int csz = (int)(packed & 15);
    const int nz = sk_nonzero(c, csz);
    (void)cs;
    sk_copy(n, nz ? a : b, nz ? as : bs, o, os, isz);
}

enum { SK_CC, SK_SC, SK_CS, SK_SS, SK_IA, SK_IB, SK_ST, SK_NKINDS };
static const char *const sk_kind_names[SK_NKINDS] = {
    "contiguous", "contiguous-then-scalar", "contiguous-else-scalar", "contiguous-both-scalar",
    "in-place-then", "in-place-else", "strided",
};

/* [value size index][cond size index][kind] */
static const sk_loop sk_loops[6][4][SK_NKINDS] = {
#define SK_ROW(CN, VN) {cc_##CN##_##VN, sc_##CN##_##VN, cs_##CN##_##VN, ss_##CN##_##VN, \
                        ia_##CN##_##VN, ib_##CN##_##VN, st_##CN##_##VN}
#define SK_WROW(CN, VN) {cc_##CN##_##VN, cc_##CN##_##VN, cc_##CN##_##VN, cc_##CN##_##VN, \
                         NULL, NULL, st_##CN##_##VN}
    {SK_ROW(c1, v1), SK_ROW(c2, v1), SK_ROW(c4, v1), SK_ROW(c8, v1)},
    {SK_ROW(c1, v2), SK_ROW(c2, v2), SK_ROW(c4, v2), SK_ROW(c8, v2)},
    {SK_ROW(c1, v4), SK_ROW(c2, v4), SK_ROW(c4, v4), SK_ROW(c8, v4)},
    {SK_ROW(c1, v8), SK_ROW(c2, v8), SK_ROW(c4, v8), SK_ROW(c8, v8)},
    {SK_WROW(c1, v16), SK_WROW(c2, v16), SK_WROW(c4, v16), SK_WROW(c8, v16)},
    {SK_WROW(c1, v32), SK_WROW(c2, v32), SK_WROW(c4, v32), SK_WROW(c8, v32)},
#undef SK_ROW
#undef SK_WROW
};

static int
sk_size_index(npy_intp size)
{
    switch (size) {
        case 1: return 0;
        case 2: return 1;
        case 4: return 2;
        case 8: return 3;
        case 16: return 4;
        case 32: return 5;
        default: return -1;
    }
}

/* ------------------------------------------------------------------------ */
/* Jobs: coalesced nd iteration over a flat index range                     */
/* ------------------------------------------------------------------------ */

typedef struct {
    int nd;                         /* >= 1 */
    npy_intp shape[SK_MAXDIMS];     /* memory order: outermost first */
    npy_intp strides[4][SK_MAXDIMS];/* cond, then, else, out */
    char *data[4];
    npy_intp total;
    npy_intp isz;
    npy_intp loop_arg;              /* last argument of the inner loop */
    sk_loop loop;
    const char *loop_name;          /* for explain() */
    int max_threads;                /* the caller's cap on threads; 0: none */
} sk_job;

enum { OP_C = 0, OP_A = 1, OP_B = 2, OP_O = 3 };

/* Run the flat iteration range [start, end) of a job. */
static void
sk_run_range(const sk_job *J, npy_intp start, npy_intp end)
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

/* ------------------------------------------------------------------------ */
/* Thread pool                                                              */
/* ------------------------------------------------------------------------ */

/*
 * Work is split across threads only when the output has at least this many
 * elements. Measured on the 2-core x86-64 KVM guest (Xeon @ 2.5 GHz) with the
 * machine otherwise quiet (load average < 1): float32, random bool cond,
 * contiguous, one fresh process per point, median of 301 calls, threshold forced
 * to 1 thread vs 2 threads:
 *     32768 elements: 19.4 us vs 15.4 us      65536: 34.0 us vs 25.0 us
 *    131072:          82.0 us vs 48.7 us     262144: 171 us vs 99 us
 * and 10^5..4*10^6 elements: 2 threads 1.9-2.2x faster. So threads pay from
 * about 2^15 elements; the default is 2^16 for margin. Since idle workers spin
 * for SK_WORKER_SPIN_SECONDS before sleeping, back-to-back calls pay from 2^15
 * (asv_benchmarks/thread_threshold.py: 32768 elements 16.6 vs 11.2 us, 65536
 * 33.1 vs 18.8 us). Single calls after a 2 ms pause (--pause-ms 2) gain
 * nothing from a second thread below ~3*10^6 elements on that VM (0.74-1.0x:
 * after idling it serves even cached operands at a rate one thread saturates);
 * the back-off below catches that. On a busy machine (load
 * average 3.5-10, other jobs on both cores) asv_benchmarks/thread_threshold.py
 * found threads paying only from ~2^22 elements: the back-off below detects
 * that case at run time and falls back to one thread.
 */
#ifndef SK_DEFAULT_PARALLEL_MIN
#define SK_DEFAULT_PARALLEL_MIN 65536
#endif
/* Below this many elements the GIL is kept (releasing it costs more than it saves). */
#define SK_NOGIL_MIN 4096
/* Work is claimed in chunks of at least this many elements ... */
#define SK_MIN_CHUNK 16384
/* ... about this many per thread, so a late or preempted thread costs little. */
#define SK_CHUNKS_PER_THREAD 4
/* How long the caller busy-waits for the last workers before sleeping. */
#define SK_SPIN_SECONDS 200e-6
/* How long an idle worker busy-waits for the next job before sleeping. */
#ifndef SK_WORKER_SPIN_SECONDS
#define SK_WORKER_SPIN_SECONDS 200e-6
#endif
#define SK_MAX_THREADS 256

static npy_intp sk_parallel_min = SK_DEFAULT_PARALLEL_MIN;
static int sk_num_threads = 1;
static unsigned long long sk_calls = 0, sk_threaded_calls = 0, sk_temp_calls = 0;

#if SK_HAVE_THREADS

/*
 * One job at a time (the `busy` lock; a second concurrent caller runs its job
 * serially). The output is cut into chunks that the caller and the workers
 * claim with an atomic counter, so a worker the OS has not scheduled yet costs
 * nothing: the caller takes its chunks. When the caller runs out of chunks it
 * closes the job (late workers skip it) and waits only for the workers that
 * are inside it.
 */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t work_cv;
    pthread_cond_t done_cv;
    pthread_mutex_t busy;      /* held by the thread that owns the pool for one job */
    int nworkers;              /* worker threads started */
    unsigned long generation;  /* bumped for every job */
    const sk_job *job;         /* the open job, or NULL */
    int nparts;                /* workers with id < nparts may join it */
    npy_intp chunk;
    npy_intp next;             /* next flat index to claim (atomic) */
    int active;                /* workers inside the open job */
} sk_pool_t;

static sk_pool_t sk_pool = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, 0, 0, NULL, 0, 0, 0, 0,
};

typedef struct {
    int id;                    /* 1 .. nworkers (the caller is part 0) */
    unsigned long seen;        /* the generation when the worker was started */
} sk_worker_arg;

static inline void
sk_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static double
sk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Claim and run chunks of a job until none is left; returns the elements it ran. */
static npy_intp
sk_drain(const sk_job *J, npy_intp chunk)
{
    npy_intp done = 0;
    for (;;) {
        const npy_intp start = __atomic_fetch_add(&sk_pool.next, chunk, __ATOMIC_RELAXED);
        if (start >= J->total) {
            return done;
        }
        const npy_intp end = J->total - start > chunk ? start + chunk : J->total;
        sk_run_range(J, start, end);
        done += end - start;
    }
}

static void *
sk_worker(void *arg_)
{
    const int id = ((sk_worker_arg *)arg_)->id;
    /* Jobs posted after this worker was started (possibly before it runs) are its own. */
    unsigned long seen = ((sk_worker_arg *)arg_)->seen;
    free(arg_);
    pthread_mutex_lock(&sk_pool.mu);
    for (;;) {
        if (sk_pool.generation == seen && SK_WORKER_SPIN_SECONDS > 0) {
            /*
             * Busy-wait a little for the next job before sleeping: waking a
             * sleeping thread cost 5-20 us on the 2-core VM, a large part of
             * a 2^16-element job (~17 us per thread), and selects often come
             * in runs (a loop, a model's layers).
             */
            pthread_mutex_unlock(&sk_pool.mu);
            const double until = sk_now() + SK_WORKER_SPIN_SECONDS;
            for (unsigned spin = 1;
                 __atomic_load_n(&sk_pool.generation, __ATOMIC_ACQUIRE) == seen; spin++) {
                sk_cpu_relax();
                if ((spin & 255) == 0 && sk_now() > until) {
                    break;
                }
            }
            pthread_mutex_lock(&sk_pool.mu);
        }
        while (sk_pool.generation == seen) {
            pthread_cond_wait(&sk_pool.work_cv, &sk_pool.mu);
        }
        seen = sk_pool.generation;
        if (sk_pool.job == NULL || id >= sk_pool.nparts) {
            continue; /* closed already, or not needed */
        }
        const sk_job *job = sk_pool.job;
        const npy_intp chunk = sk_pool.chunk;
        __atomic_add_fetch(&sk_pool.active, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&sk_pool.mu);

        sk_drain(job, chunk);

        pthread_mutex_lock(&sk_pool.mu);
        if (__atomic_sub_fetch(&sk_pool.active, 1, __ATOMIC_RELEASE) == 0) {
            pthread_cond_signal(&sk_pool.done_cv);
        }
    }
    return NULL;
}

/* Start workers until there are `want`; returns how many exist. Called with mu held. */
static int
sk_pool_grow(int want)
{
    while (sk_pool.nworkers < want) {
        pthread_t tid;
        pthread_attr_t attr;
        sk_worker_arg *arg = (sk_worker_arg *)malloc(sizeof(sk_worker_arg));
        if (arg == NULL) {
            break;
        }
        arg->id = sk_pool.nworkers + 1;
        arg->seen = sk_pool.generation;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&tid, &attr, sk_worker, arg);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            free(arg);
            break;
        }
        sk_pool.nworkers++;
    }
    return sk_pool.nworkers;
}

/* In a forked child the workers do not exist: start from an empty pool. */
static void
sk_atfork_child(void)
{
    pthread_mutex_init(&sk_pool.mu, NULL);
    pthread_mutex_init(&sk_pool.busy, NULL);
    pthread_cond_init(&sk_pool.work_cv, NULL);
    pthread_cond_init(&sk_pool.done_cv, NULL);
    sk_pool.nworkers = 0;
    sk_pool.job = NULL;
    sk_pool.nparts = 0;
    sk_pool.active = 0;
}

static void sk_mem_atfork_child(void);

/*
 * Back-off when threads do not pay. On an oversubscribed machine the woken
 * worker can preempt the caller on its own core, or be preempted inside its
 * chunk while the caller waits: the parallel run then takes longer than the
 * caller alone would have. After each parallel run the caller compares its
 * wall time with a serial estimate (its own elements per second over the whole
 * job); when threads did not win by 10%, the next `sk_backoff` parallel-sized
 * jobs run on the calling thread alone (1, 2, 4, ... up to SK_BACKOFF_MAX while
 * it keeps happening); a run that pays resets the back-off. Only the pool owner
 * (holding `busy`) updates it.
 */
#define SK_BACKOFF_MAX 64
static int sk_backoff = 0, sk_backoff_next = 1, sk_adaptive = 1;
static unsigned long long sk_backoff_jobs = 0;
/* Diagnostics (pool owner only): seconds the caller worked, and the runs' wall time. */
static double sk_worked_s = 0.0, sk_wall_s = 0.0;

static void
sk_adapt(const sk_job *J, npy_intp mine, double worked, double wall)
{
    sk_worked_s += worked;
    sk_wall_s += wall;
    /* The caller's rate, scaled to the whole job; no work of its own: it did not run. */
    const int pays = mine > 0 && wall < 0.9 * worked * ((double)J->total / (double)mine);
    if (sk_adaptive && !pays) {
        __atomic_store_n(&sk_backoff, sk_backoff_next, __ATOMIC_RELAXED);
        sk_backoff_next = sk_backoff_next < SK_BACKOFF_MAX ? 2 * sk_backoff_next
                                                           : SK_BACKOFF_MAX;
    }
    else {
        sk_backoff_next = 1;
    }
}

/* Whether a parallel-sized job should run serially now (and count it). */
static int
sk_backing_off(void)
{
    int left = __atomic_load_n(&sk_backoff, __ATOMIC_RELAXED);
    while (left > 0) {
        if (__atomic_compare_exchange_n(&sk_backoff, &left, left - 1, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            __atomic_add_fetch(&sk_backoff_jobs, 1, __ATOMIC_RELAXED);
            return 1;
        }
    }
    return 0;
}

/* Run a job on up to `parts` threads (the caller included). Returns 0 if it could not. */
static int
sk_run_parallel(const sk_job *J, int parts)
{
    if (pthread_mutex_trylock(&sk_pool.busy) != 0) {
        return 0; /* another thread owns the pool: run this job serially */
    }
    pthread_mutex_lock(&sk_pool.mu);
    int have = sk_pool_grow(parts - 1);
    if (have + 1 < parts) {
        parts = have + 1;
    }
    if (parts < 2) {
        pthread_mutex_unlock(&sk_pool.mu);
        pthread_mutex_unlock(&sk_pool.busy);
        return 0;
    }
    /* About SK_CHUNKS_PER_THREAD chunks per thread, whole cache lines of output. */
    npy_intp chunk = (J->total + (npy_intp)parts * SK_CHUNKS_PER_THREAD - 1) /
                     ((npy_intp)parts * SK_CHUNKS_PER_THREAD);
    if (chunk < SK_MIN_CHUNK) {
        chunk = SK_MIN_CHUNK;
    }
    chunk = (chunk + 63) & ~(npy_intp)63;
    sk_pool.job = J;
    sk_pool.nparts = parts;
    sk_pool.chunk = chunk;
    __atomic_store_n(&sk_pool.next, 0, __ATOMIC_RELAXED);
    sk_pool.active = 0;
    const double t_start = sk_now();
    __atomic_add_fetch(&sk_pool.generation, 1, __ATOMIC_RELEASE); /* read by spinning workers */
    pthread_cond_broadcast(&sk_pool.work_cv);
    pthread_mutex_unlock(&sk_pool.mu);

    const double t0 = sk_now();
    const npy_intp mine = sk_drain(J, chunk);
    const double t1 = sk_now();

    pthread_mutex_lock(&sk_pool.mu);
    sk_pool.job = NULL; /* closed: workers that wake up now skip it */
    if (sk_pool.active > 0) {
        /*
         * Wait for the workers still inside. Busy-wait a little first: sleeping
         * on the condition variable (or sched_yield) gives the core away, and on
         * a busy machine getting it back costs a scheduler time slice
         * (milliseconds), far more than the rest of a chunk.
         */
        pthread_mutex_unlock(&sk_pool.mu);
        const double spin_until = t1 + SK_SPIN_SECONDS;
        for (unsigned spin = 1; __atomic_load_n(&sk_pool.active, __ATOMIC_ACQUIRE) > 0; spin++) {
            sk_cpu_relax();
            if ((spin & 255) == 0 && sk_now() > spin_until) {
                break;
            }
        }
        pthread_mutex_lock(&sk_pool.mu);
        while (sk_pool.active > 0) {
            pthread_cond_wait(&sk_pool.done_cv, &sk_pool.mu);
        }
    }
    pthread_mutex_unlock(&sk_pool.mu);
    sk_adapt(J, mine, t1 - t0, sk_now() - t_start);
    pthread_mutex_unlock(&sk_pool.busy);
    return 1;
}

#endif /* SK_HAVE_THREADS */

/* Number of threads a job of `total` elements gets. */
static int
sk_parts_for(npy_intp total, int max_threads)
{
    int threads = sk_num_threads;
    if (max_threads > 0 && max_threads < threads) {
        threads = max_threads;
    }
    if (threads < 2 || total < sk_parallel_min) {
        return 1;
    }
    npy_intp by_size = total / SK_MIN_CHUNK;
    if (by_size < threads) {
        threads = (int)(by_size < 1 ? 1 : by_size);
    }
    return threads;
}

/* Run a job, releasing the GIL for large ones. Called with the GIL held. */
static void
sk_execute(const sk_job *J)
{
    int parts = sk_parts_for(J->total, J->max_threads);
    int threaded = 0;
    sk_calls++;
    if (J->total < SK_NOGIL_MIN) {
        sk_run_range(J, 0, J->total);
        return;
    }
    Py_BEGIN_ALLOW_THREADS
#if SK_HAVE_THREADS
    if (parts > 1 && !sk_backing_off()) {
        threaded = sk_run_parallel(J, parts);
    }
#endif
    if (!threaded) {
        sk_run_range(J, 0, J->total);
    }
    Py_END_ALLOW_THREADS
    if (threaded) {
        sk_threaded_calls++;
    }
}

/* ------------------------------------------------------------------------ */
/* Output memory pool                                                       */
/* ------------------------------------------------------------------------ */

/*
 * A fresh multi-megabyte output costs a page fault per page (the kernel zeroes
 * every page before the select writes it): measured on the 2-core VM, about as
 * long as the select itself at 10^7 float32. Outputs of at least SK_POOL_MIN
 * bytes are therefore allocated through a NumPy memory handler (NEP 49) whose
 * free() keeps up to SK_POOL_SLOTS blocks (sk_pool_limit bytes in all) for
 * reuse by an output of exactly the same size, as a caching allocator does.
 * New blocks are 2 MiB aligned and advised for transparent huge pages.
 * ARRAYSELECT_POOL_MB (read by the Python side) sets the limit; 0 disables it.
 */
#define SK_POOL_MIN ((size_t)1 << 20)
#define SK_POOL_SLOTS 8
#define SK_HUGE ((size_t)2 << 20)

#if !defined(_WIN32)
#include <sys/mman.h>
#endif

typedef struct {
    void *ptr;
    size_t size;
} sk_block;

static struct {
    sk_block blocks[SK_POOL_SLOTS]; /* oldest first */
    int count;
    size_t bytes;
    unsigned long long hits, misses;
} sk_mem = {{{NULL, 0}}, 0, 0, 0, 0};
static size_t sk_pool_limit = (size_t)256 << 20;
static PyObject *sk_handler_capsule = NULL;

#if SK_HAVE_THREADS
static pthread_mutex_t sk_mem_mu = PTHREAD_MUTEX_INITIALIZER;
#define SK_MEM_LOCK() pthread_mutex_lock(&sk_mem_mu)
#define SK_MEM_UNLOCK() pthread_mutex_unlock(&sk_mem_mu)
#else
#define SK_MEM_LOCK() ((void)0)
#define SK_MEM_UNLOCK() ((void)0)
#endif

#if SK_HAVE_THREADS
static void
sk_mem_atfork_child(void)
{
    pthread_mutex_init(&sk_mem_mu, NULL);
}
#endif

static void *
sk_fresh_block(size_t size)
{
#if !defined(_WIN32)
    void *p = NULL;
    if (size >= 2 * SK_HUGE) {
        if (posix_memalign(&p, SK_HUGE, size) != 0) {
            return NULL;
        }
#ifdef MADV_HUGEPAGE
        madvise(p, size - size % SK_HUGE, MADV_HUGEPAGE);
#endif
        return p;
    }
#endif
    return malloc(size);
}

static void *
sk_mem_malloc(void *ctx, size_t size)
{
    (void)ctx;
    if (size >= SK_POOL_MIN) {
        SK_MEM_LOCK();
        for (int i = sk_mem.count - 1; i >= 0; i--) {
            if (sk_mem.blocks[i].size == size) {
                void *p = sk_mem.blocks[i].ptr;
                memmove(&sk_mem.blocks[i], &sk_mem.blocks[i + 1],
                        sizeof(sk_block) * (size_t)(sk_mem.count - i - 1));
                sk_mem.count--;
                sk_mem.bytes -= size;
                sk_mem.hits++;
                SK_MEM_UNLOCK();
                return p;
            }
        }
        sk_mem.misses++;
        SK_MEM_UNLOCK();
    }
    return sk_fresh_block(size ? size : 1);
}

static void *
sk_mem_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    return calloc(nelem, elsize);
}

static void *
sk_mem_realloc(void *ctx, void *ptr, size_t new_size)
{
    (void)ctx;
    return realloc(ptr, new_size);
}

static void
sk_mem_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    void *evicted[SK_POOL_SLOTS];
    int nevicted = 0;
    if (ptr == NULL) {
        return;
    }
    if (size >= SK_POOL_MIN && size <= sk_pool_limit) {
        SK_MEM_LOCK();
        /* Make room: drop the oldest blocks until this one fits. */
        while (sk_mem.count > 0 &&
               (sk_mem.count == SK_POOL_SLOTS || sk_mem.bytes + size > sk_pool_limit)) {
            evicted[nevicted++] = sk_mem.blocks[0].ptr;
            sk_mem.bytes -= sk_mem.blocks[0].size;
            memmove(&sk_mem.blocks[0], &sk_mem.blocks[1],
                    sizeof(sk_block) * (size_t)(sk_mem.count - 1));
            sk_mem.count--;
        }
        sk_mem.blocks[sk_mem.count].ptr = ptr;
        sk_mem.blocks[sk_mem.count].size = size;
        sk_mem.count++;
        sk_mem.bytes += size;
        ptr = NULL;
        SK_MEM_UNLOCK();
    }
    for (int i = 0; i < nevicted; i++) {
        free(evicted[i]);
    }
    free(ptr);
}

static PyDataMem_Handler sk_mem_handler = {
    "arrayselect_output_pool",
    1,
    {NULL, sk_mem_malloc, sk_mem_calloc, sk_mem_realloc, sk_mem_free},
};

/* Free every cached block. */
static void
sk_pool_release(void)
{
    void *blocks[SK_POOL_SLOTS];
    int n;
    SK_MEM_LOCK();
    n = sk_mem.count;
    for (int i = 0; i < n; i++) {
        blocks[i] = sk_mem.blocks[i].ptr;
    }
    sk_mem.count = 0;
    sk_mem.bytes = 0;
    SK_MEM_UNLOCK();
    for (int i = 0; i < n; i++) {
        free(blocks[i]);
    }
}

/* A new array; large ones through the pool handler. */
static PyObject *
sk_alloc_array(PyArray_Descr *descr, int nd, const npy_intp *dims, const npy_intp *strides)
{
    npy_intp nbytes = descr->elsize;
    for (int d = 0; d < nd; d++) {
        if (dims[d] != 0 && nbytes > NPY_MAX_INTP / dims[d]) {
            nbytes = 0; /* too large: let NumPy report it */
            break;
        }
        nbytes *= dims[d];
    }
    if (sk_pool_limit == 0 || (size_t)nbytes < SK_POOL_MIN || sk_handler_capsule == NULL) {
        return PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, (npy_intp *)strides, NULL, 0,
                                    NULL);
    }
    PyObject *old = PyDataMem_SetHandler(sk_handler_capsule);
    if (old == NULL) {
        Py_DECREF(descr);
        return NULL;
    }
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, (npy_intp *)strides,
                                         NULL, 0, NULL);
    PyObject *mine = PyDataMem_SetHandler(old);
    Py_DECREF(old);
    if (mine == NULL) {
        Py_XDECREF(arr);
        return NULL;
    }
    Py_DECREF(mine);
    return arr;
}

static PyObject *
sk_set_pool_limit(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "the pool limit must be >= 0 bytes");
        return NULL;
    }
    SK_MEM_LOCK();
    sk_pool_limit = (size_t)n;
    SK_MEM_UNLOCK();
    sk_pool_release();
    Py_RETURN_NONE;
}

static PyObject *
sk_pool_info(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    SK_MEM_LOCK();
    PyObject *r = Py_BuildValue("{s:n,s:n,s:i,s:K,s:K}", "limit", (Py_ssize_t)sk_pool_limit,
                                "cached_bytes", (Py_ssize_t)sk_mem.bytes, "cached_blocks",
                                sk_mem.count, "hits", sk_mem.hits, "misses", sk_mem.misses);
    SK_MEM_UNLOCK();
    return r;
}

static PyObject *
sk_release_pool(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    sk_pool_release();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------ */
/* Setting up a call                                                        */
/* ------------------------------------------------------------------------ */

/*
 * Where an input's dimensions go, as the core's plan says (SelectPlan.dims):
 * its leading `kept` dimensions line up with the output dimensions `map[]`
 * (increasing); its remaining trailing dimensions are size 1 and dropped.
 * kept < 0: right-aligned, every dimension kept (NumPy broadcasting).
 */
typedef struct {
    int kept;
    int map[SK_MAXDIMS];
} sk_dims;

static int
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
static int
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
static int
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
static void
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
static int
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

    if (cs == 0) {
        J->loop = block_loop;
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
        J->loop = generic_loop;
        J->loop_name = "generic";
        J->loop_arg = packed;
        return;
    }
    const sk_loop *row = sk_loops[vi][ci];
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
    J->loop = row[SK_ST];
    J->loop_name = sk_kind_names[SK_ST];
}

/*
 * Fill a job for out = select(c, a, b) where every operand's strides are given
 * per output dimension (broadcast dims have stride 0): memory-order the axes,
 * drop size-1 axes, coalesce, pick the loop.
 */
static void
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
}

/* A fresh output array of `descr` with the memory order of the inputs. */
static PyArrayObject *
sk_new_output(PyArray_Descr *descr, int nd, const npy_intp *dims,
              npy_intp in_strides[4][SK_MAXDIMS])
{
    static const int prio[3] = {OP_A, OP_B, OP_C};
    int perm[SK_MAXDIMS];
    npy_intp strides[SK_MAXDIMS];
    int c_order = 1;

    sk_axis_order(nd, in_strides, prio, 3, perm);
    for (int i = 0; i < nd; i++) {
        if (perm[i] != i) {
            c_order = 0;
            break;
        }
    }
    Py_INCREF(descr);
    if (c_order) {
        return (PyArrayObject *)sk_alloc_array(descr, nd, dims, NULL);
    }
    npy_intp s = descr->elsize;
    for (int i = nd - 1; i >= 0; i--) {
        strides[perm[i]] = s;
        s *= dims[perm[i]] > 0 ? dims[perm[i]] : 1;
    }
    return (PyArrayObject *)sk_alloc_array(descr, nd, dims, strides);
}

static int
sk_check_array(PyObject *obj, const char *name)
{
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a numpy.ndarray, got %s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

static int
sk_check_dtypes(PyArray_Descr *descr, PyArray_Descr *cdescr)
{
    if (PyDataType_REFCHK(descr) || descr->elsize <= 0) {
        PyErr_Format(PyExc_TypeError, "the select kernel does not handle dtype %R",
                     (PyObject *)descr);
        return -1;
    }
    const npy_intp csz = cdescr->elsize;
    if (PyDataType_REFCHK(cdescr) || !(csz == 1 || csz == 2 || csz == 4 || csz == 8)) {
        PyErr_Format(PyExc_TypeError,
                     "the select kernel needs a cond of 1, 2, 4 or 8 bytes, got %R",
                     (PyObject *)cdescr);
        return -1;
    }
    return 0;
}

/*
 * The kernel proper: out = select(cond, then, else) for operands given by
 * their aligned layouts and data pointers (a Python scalar is a 0-d layout over
 * a buffer). `out_arr` is NULL (allocate, in the inputs' memory order) or an
 * array of the output shape and item size. Returns a new reference.
 */
/* What explain() reports about a prepared job instead of running it. */
static PyObject *
sk_describe(const sk_job *J, int temporary)
{
    PyObject *shape = PyTuple_New(J->nd);
    PyObject *strides = PyTuple_New(4);
    if (shape == NULL || strides == NULL) {
        Py_XDECREF(shape);
        Py_XDECREF(strides);
        return NULL;
    }
    for (int d = 0; d < J->nd; d++) {
        PyTuple_SET_ITEM(shape, d, PyLong_FromSsize_t(J->shape[d]));
    }
    for (int k = 0; k < 4; k++) {
        PyObject *t = PyTuple_New(J->nd);
        if (t == NULL) {
            Py_DECREF(shape);
            Py_DECREF(strides);
            return NULL;
        }
        for (int d = 0; d < J->nd; d++) {
            PyTuple_SET_ITEM(t, d, PyLong_FromSsize_t(J->strides[k][d]));
        }
        PyTuple_SET_ITEM(strides, k, t);
    }
    return Py_BuildValue("{s:N,s:N,s:s,s:i,s:O}", "shape", shape, "strides", strides, "loop",
                         J->loop_name, "threads", sk_parts_for(J->total, J->max_threads), "temporary",
                         temporary ? Py_True : Py_False);
}

static PyObject *
sk_core(PyArray_Descr *descr, npy_intp csz, npy_intp strides[4][SK_MAXDIMS], char *in_data[3],
        PyArrayObject *out_arr, int nd, const npy_intp *out_dims, int explain, int max_threads)
{
    char *data[4];
    const npy_intp isz = descr->elsize;
    npy_intp total = 1;

    for (int d = 0; d < nd; d++) {
        if (out_dims[d] != 0 && total > NPY_MAX_INTP / out_dims[d]) {
            PyErr_SetString(PyExc_ValueError, "output shape is too large");
            return NULL;
        }
        total *= out_dims[d];
    }
    for (int k = 0; k < 3; k++) {
        data[k] = in_data[k];
    }

    PyArrayObject *out;
    int alias[3] = {0, 0, 0};
    int need_temp = 0;
    if (out_arr == NULL) {
        out = sk_new_output(descr, nd, out_dims, strides);
        if (out == NULL) {
            return NULL;
        }
    }
    else {
        out = out_arr;
        if (PyArray_NDIM(out) != nd) {
            goto bad_out_shape;
        }
        for (int d = 0; d < nd; d++) {
            if (PyArray_DIMS(out)[d] != out_dims[d]) {
                goto bad_out_shape;
            }
        }
        if (PyArray_ITEMSIZE(out) != isz) {
            PyErr_SetString(PyExc_TypeError, "internal error: out has the wrong item size");
            return NULL;
        }
        if (PyArray_FailUnlessWriteable(out, "out") < 0) {
            return NULL;
        }
        Py_INCREF(out);
    }
    if (total == 0) {
        if (explain) {
            Py_DECREF(out);
            return Py_BuildValue("{s:O}", "loop", Py_None);
        }
        return (PyObject *)out;
    }
    for (int d = 0; d < nd; d++) {
        strides[OP_O][d] = out_dims[d] == 1 ? 0 : PyArray_STRIDES(out)[d];
    }
    data[OP_O] = PyArray_BYTES(out);
    if (out_arr != NULL) {
        const npy_intp in_isz[3] = {csz, isz, isz};
        for (int k = 0; k < 3; k++) {
            int rel = sk_overlap(data[k], strides[k], in_isz[k], data[OP_O], strides[OP_O], isz,
                                 nd, out_dims);
            if (rel == 2) {
                need_temp = 1;
            }
            alias[k] = rel == 1;
        }
    }

    sk_job job;
    if (!need_temp) {
        sk_prepare(&job, nd, out_dims, strides, data, isz, csz, alias[1], alias[2], alias[0]);
        job.max_threads = max_threads;
        if (explain) {
            Py_DECREF(out);
            return sk_describe(&job, 0);
        }
        sk_execute(&job);
        return (PyObject *)out;
    }

    /* out partially overlaps an input: compute into a temporary, then copy. */
    Py_INCREF(descr);
    PyArrayObject *tmp =
        (PyArrayObject *)PyArray_NewLikeArray(out, NPY_KEEPORDER, descr, 0);
    if (tmp == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    for (int d = 0; d < nd; d++) {
        strides[OP_O][d] = out_dims[d] == 1 ? 0 : PyArray_STRIDES(tmp)[d];
    }
    data[OP_O] = PyArray_BYTES(tmp);
    sk_prepare(&job, nd, out_dims, strides, data, isz, csz, 0, 0, 0);
    job.max_threads = max_threads;
    if (explain) {
        Py_DECREF(tmp);
        Py_DECREF(out);
        return sk_describe(&job, 1);
    }
    sk_execute(&job);
    sk_temp_calls++;
    if (PyArray_CopyInto(out, tmp) < 0) {
        Py_DECREF(tmp);
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(tmp);
    return (PyObject *)out;

bad_out_shape:
    PyErr_SetString(PyExc_ValueError, "internal error: out does not have the output shape");
    return NULL;
}

/*
 * select(cond, then, else_, out, out_shape, cond_dims, then_dims, else_dims[, max_threads])
 *
 * The core has validated everything and made the plan (out_shape and, per
 * input, SelectPlan.dims or None for right-aligned); this checks again only
 * what would make the loops unsafe. max_threads (default 0: none) caps the
 * threads of this one call (the PyTorch backend passes torch's thread count).
 */
static PyObject *
sk_select_impl(PyObject *const *args, Py_ssize_t nargs, int explain)
{
    static const char *names[3] = {"cond", "then", "else"};
    npy_intp strides[4][SK_MAXDIMS];
    char *data[3];
    npy_intp out_dims[SK_MAXDIMS];
    int nd;

    int max_threads = 0;
    if (nargs != 8 && nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "select() takes 8 or 9 arguments");
        return NULL;
    }
    if (nargs == 9) {
        long cap = PyLong_AsLong(args[8]);
        if (cap == -1 && PyErr_Occurred()) {
            return NULL;
        }
        max_threads = cap < 0 ? 0 : cap > SK_MAX_THREADS ? SK_MAX_THREADS : (int)cap;
    }
    for (int k = 0; k < 3; k++) {
        if (sk_check_array(args[k], names[k]) < 0) {
            return NULL;
        }
    }
    if (args[3] != Py_None && sk_check_array(args[3], "out") < 0) {
        return NULL;
    }
    PyArray_Descr *descr = PyArray_DESCR((PyArrayObject *)args[1]);
    if (PyArray_ITEMSIZE((PyArrayObject *)args[2]) != descr->elsize) {
        PyErr_SetString(PyExc_TypeError, "internal error: then and else differ in item size");
        return NULL;
    }
    if (sk_check_dtypes(descr, PyArray_DESCR((PyArrayObject *)args[0])) < 0) {
        return NULL;
    }
    if (sk_parse_shape(args[4], "out_shape", &nd, out_dims) < 0) {
        return NULL;
    }
    for (int k = 0; k < 3; k++) {
        sk_dims D;
        PyArrayObject *arr = (PyArrayObject *)args[k];
        if (sk_parse_dims(args[5 + k], names[k], nd, &D) < 0 ||
            sk_place(PyArray_NDIM(arr), PyArray_DIMS(arr), PyArray_STRIDES(arr), &D, nd,
                     out_dims, names[k], strides[k]) < 0) {
            return NULL;
        }
        data[k] = PyArray_BYTES(arr);
    }
    return sk_core(descr, PyArray_ITEMSIZE((PyArrayObject *)args[0]), strides, data,
                   args[3] == Py_None ? NULL : (PyArrayObject *)args[3], nd, out_dims, explain,
                   max_threads);
}

static PyObject *
sk_select(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    return sk_select_impl(args, nargs, 0);
}

/* explain(...): the arguments of select(); how it would run (nothing is written). */
static PyObject *
sk_explain(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    return sk_select_impl(args, nargs, 1);
}

/* ------------------------------------------------------------------------ */
/* The lean call path for NumPy inputs                                      */
/* ------------------------------------------------------------------------ */

/*
 * fast_select(cond, then, else_, auto_broadcast, axis, cond_broadcast, out) is
 * the NumPy backend's fast path (arrayselect.plugin.FastPath), the C edition of
 * the core's SignatureCache: it looks the call's signature up in a cache of
 * what the core's validation decided (arrayselect.plugin.Decision), keyed on
 * (which of then/else is a Python scalar, shapes, dtypes or scalar types,
 * auto_broadcast, axis, cond_broadcast, out's shape and dtype). Entries are
 * stored only by `remember`, which the Python miss handler calls after the
 * core's validation has passed. On a hit only what depends on values is
 * checked again, with what the core handed over: a Python scalar against the
 * range the core derived (ScalarRange.admits: low <= value <= high, each part
 * of a complex), and `out`'s memory through the core's check_out_layout. Any
 * doubt goes to the general path, which raises the error. Calls this path does
 * not know (subclasses, NumPy scalars, options of other types, two Python
 * scalars) return NotImplemented. The cache is a direct-mapped table used with
 * the GIL held.
 */

#define SK_CACHE_SLOTS 1024
#define SK_CACHE_MAXDIM 16

enum { SK_ARRAYS = 0, SK_THEN_SCALAR = 1, SK_ELSE_SCALAR = 2 };

typedef struct {
    int nd;
    npy_intp dims[SK_CACHE_MAXDIM];
} sk_shape;

typedef struct {
    /* key */
    int combo;
    int has_out;
    Py_hash_t hash;
    PyObject *ab, *cb;            /* exact str */
    Py_ssize_t axis;
    PyObject *ckey, *tkey, *ekey; /* dtypes, or Python scalar types (borrowed in a probe) */
    PyObject *okey;               /* out's dtype, or NULL */
    sk_shape shape[4];            /* cond, then, else (0-d for a scalar), out */
} sk_key;

/* A ScalarRange of the core: the values a scalar operand certainly may take. */
typedef struct {
    PyObject *low, *high; /* owned; exact ints or floats */
    int as_float;         /* convert a Python int through a Python float */
} sk_range;

typedef struct {
    int used;
    sk_key key;           /* owns references to ab, cb, ckey, tkey, ekey, okey */
    sk_shape out;
    sk_dims dims[3];
    PyArray_Descr *odt;   /* output dtype (owned) */
    sk_range range;       /* of the scalar operand, if any */
} sk_entry;

static sk_entry sk_cache[SK_CACHE_SLOTS];
static PyObject *sk_miss = NULL, *sk_general = NULL, *sk_check_out = NULL;
static unsigned long long sk_fast_hits = 0, sk_fast_misses = 0;

static inline Py_hash_t
sk_mix(Py_hash_t h, Py_hash_t v)
{
    return (Py_hash_t)(((size_t)h ^ (size_t)v) * (size_t)1000003u + 0x9e3779b9u);
}

static int
sk_scalar_type(PyObject *x)
{
    PyTypeObject *t = Py_TYPE(x);
    return t == &PyBool_Type || t == &PyLong_Type || t == &PyFloat_Type ||
           t == &PyComplex_Type;
}

/* Add an exact ndarray's shape to a key; 0 if it has too many dimensions. */
static int
sk_key_shape(PyArrayObject *x, sk_shape *S, Py_hash_t *h)
{
    const int nd = PyArray_NDIM(x);
    if (nd > SK_CACHE_MAXDIM) {
        return 0;
    }
    S->nd = nd;
    for (int d = 0; d < nd; d++) {
        S->dims[d] = PyArray_DIMS(x)[d];
        *h = sk_mix(*h, (Py_hash_t)S->dims[d]);
    }
    return 1;
}

/*
 * Fill a probe key from the call's objects (borrowed references). Returns 1 on
 * success, 0 when the call is not for this path, -1 on error.
 */
static int
sk_make_key(PyObject *cond, PyObject *then, PyObject *else_, PyObject *ab, PyObject *axis,
            PyObject *cb, PyObject *out, sk_key *K)
{
    if (!PyArray_CheckExact(cond) || !PyUnicode_CheckExact(ab) || !PyUnicode_CheckExact(cb) ||
        !PyLong_CheckExact(axis) || (out != Py_None && !PyArray_CheckExact(out))) {
        return 0;
    }
    const int t_arr = PyArray_CheckExact(then), e_arr = PyArray_CheckExact(else_);
    if (t_arr && e_arr) {
        K->combo = SK_ARRAYS;
    }
    else if (e_arr && sk_scalar_type(then)) {
        K->combo = SK_THEN_SCALAR;
    }
    else if (t_arr && sk_scalar_type(else_)) {
        K->combo = SK_ELSE_SCALAR;
    }
    else {
        return 0; /* two Python scalars (default dtypes) and anything else: general path */
    }
    int overflow = 0;
    K->axis = (Py_ssize_t)PyLong_AsLongLongAndOverflow(axis, &overflow);
    if (overflow || (K->axis == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    K->has_out = out != Py_None;
    PyObject *ops[4] = {cond, then, else_, out};
    PyObject **keys[4] = {&K->ckey, &K->tkey, &K->ekey, &K->okey};
    Py_hash_t h = (Py_hash_t)K->combo * 31 + (Py_hash_t)K->axis * 7 + K->has_out;
    Py_hash_t hs;
    for (int k = 0; k < 4; k++) {
        PyObject *x = ops[k];
        PyObject *keyobj;
        sk_shape *S = &K->shape[k];
        if (k == 3 && !K->has_out) {
            S->nd = 0;
            K->okey = NULL;
            continue;
        }
        if (PyArray_CheckExact(x)) {
            if (!sk_key_shape((PyArrayObject *)x, S, &h)) {
                return 0;
            }
            keyobj = (PyObject *)PyArray_DESCR((PyArrayObject *)x);
        }
        else {
            S->nd = 0;
            keyobj = (PyObject *)Py_TYPE(x);
        }
        h = sk_mix(h, (Py_hash_t)(S->nd + 101 * k));
        if ((hs = PyObject_Hash(keyobj)) == -1) {
            return -1;
        }
        h = sk_mix(h, hs);
        *keys[k] = keyobj;
    }
    if ((hs = PyObject_Hash(ab)) == -1) {
        return -1;
    }
    h = sk_mix(h, hs);
    if ((hs = PyObject_Hash(cb)) == -1) {
        return -1;
    }
    h = sk_mix(h, hs);
    K->hash = h == -1 ? -2 : h;
    K->ab = ab;
    K->cb = cb;
    return 1;
}

/* Equality of two keys' objects: identity, else value equality (dtypes, str). */
static int
sk_same(PyObject *x, PyObject *y)
{
    if (x == y) {
        return 1;
    }
    if (x == NULL || y == NULL || PyType_Check(x) || PyType_Check(y)) {
        return 0; /* Python scalar types compare by identity only */
    }
    return PyObject_RichCompareBool(x, y, Py_EQ);
}

/* 1: same key, 0: different, -1: error. */
static int
sk_key_equal(const sk_key *A, const sk_key *B)
{
    if (A->hash != B->hash || A->combo != B->combo || A->axis != B->axis ||
        A->has_out != B->has_out) {
        return 0;
    }
    for (int k = 0; k < 4; k++) {
        if (A->shape[k].nd != B->shape[k].nd) {
            return 0;
        }
        for (int d = 0; d < A->shape[k].nd; d++) {
            if (A->shape[k].dims[d] != B->shape[k].dims[d]) {
                return 0;
            }
        }
    }
    PyObject *as[6] = {A->ckey, A->tkey, A->ekey, A->okey, A->ab, A->cb};
    PyObject *bs[6] = {B->ckey, B->tkey, B->ekey, B->okey, B->ab, B->cb};
    for (int i = 0; i < 6; i++) {
        int r = sk_same(as[i], bs[i]);
        if (r != 1) {
            return r;
        }
    }
    return 1;
}

static void
sk_entry_clear(sk_entry *E)
{
    if (!E->used) {
        return;
    }
    E->used = 0;
    Py_CLEAR(E->key.ab);
    Py_CLEAR(E->key.cb);
    Py_CLEAR(E->key.ckey);
    Py_CLEAR(E->key.tkey);
    Py_CLEAR(E->key.ekey);
    Py_CLEAR(E->key.okey);
    Py_CLEAR(E->odt);
    Py_CLEAR(E->range.low);
    Py_CLEAR(E->range.high);
}

/*
 * ScalarRange.admits of the core, on the range it derived: low <= v <= high
 * (each part of a complex). 0 sends the call to the general path, which
 * applies the full rule (inf and nan fit floating dtypes, for example).
 */
static int
sk_admits(const sk_range *R, PyObject *v)
{
    if (PyComplex_CheckExact(v) && PyFloat_CheckExact(R->low) && PyFloat_CheckExact(R->high)) {
        const double lo = PyFloat_AS_DOUBLE(R->low), hi = PyFloat_AS_DOUBLE(R->high);
        const Py_complex z = PyComplex_AsCComplex(v);
        return lo <= z.real && z.real <= hi && lo <= z.imag && z.imag <= hi;
    }
    if (PyFloat_CheckExact(v) && PyFloat_CheckExact(R->low) && PyFloat_CheckExact(R->high)) {
        const double x = PyFloat_AS_DOUBLE(v);
        return PyFloat_AS_DOUBLE(R->low) <= x && x <= PyFloat_AS_DOUBLE(R->high);
    }
    if (PyComplex_CheckExact(v)) {
        return 0;
    }
    int r = PyObject_RichCompareBool(R->low, v, Py_LE); /* exact int/float comparison */
    if (r == 1) {
        r = PyObject_RichCompareBool(v, R->high, Py_LE);
    }
    if (r < 0) {
        PyErr_Clear();
        return 0;
    }
    return r;
}

static int
sk_shape_from_tuple(PyObject *t, sk_shape *S)
{
    npy_intp dims[SK_MAXDIMS];
    int nd;
    if (sk_parse_shape(t, "shape", &nd, dims) < 0) {
        return -1;
    }
    if (nd > SK_CACHE_MAXDIM) {
        return 0;
    }
    S->nd = nd;
    memcpy(S->dims, dims, sizeof(npy_intp) * (size_t)nd);
    return 1;
}

/*
 * remember(cond, then, else_, auto_broadcast, axis, cond_broadcast, out,
 *          out_shape, cond_dims, then_dims, else_dims, out_dtype, scalar_range)
 *
 * Store what the core decided for a call it has just validated: the plan
 * (out_shape, each input's dims), the output dtype and, when then or else is a
 * Python scalar, its range as (low, high, as_float). Returns whether it was
 * stored.
 */
static PyObject *
sk_remember(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    static const char *names[3] = {"cond", "then", "else"};
    sk_key K;
    sk_entry E;
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "remember() takes exactly 13 arguments");
        return NULL;
    }
    int r = sk_make_key(args[0], args[1], args[2], args[3], args[4], args[5], args[6], &K);
    if (r <= 0) {
        if (r == 0) {
            Py_RETURN_FALSE;
        }
        return NULL;
    }
    if (!PyArray_DescrCheck(args[11])) {
        PyErr_SetString(PyExc_TypeError, "out_dtype must be a numpy.dtype");
        return NULL;
    }
    memset(&E, 0, sizeof(E));
    E.key = K;
    if ((r = sk_shape_from_tuple(args[7], &E.out)) <= 0) {
        if (r == 0) {
            Py_RETURN_FALSE;
        }
        return NULL;
    }
    for (int k = 0; k < 3; k++) {
        if (args[8 + k] == Py_None ||
            sk_parse_dims(args[8 + k], names[k], E.out.nd, &E.dims[k]) < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "remember(): dims must be tuples");
            }
            return NULL;
        }
    }
    PyObject *range = args[12];
    if ((K.combo == SK_ARRAYS) != (range == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "remember(): a scalar operand needs its range");
        return NULL;
    }
    if (range != Py_None) {
        if (!PyTuple_Check(range) || PyTuple_GET_SIZE(range) != 3) {
            PyErr_SetString(PyExc_TypeError, "remember(): range must be (low, high, as_float)");
            return NULL;
        }
        int as_float = PyObject_IsTrue(PyTuple_GET_ITEM(range, 2));
        if (as_float < 0) {
            return NULL;
        }
        E.range.low = PyTuple_GET_ITEM(range, 0);
        E.range.high = PyTuple_GET_ITEM(range, 1);
        E.range.as_float = as_float;
    }
    /* Own every reference the entry keeps. */
    Py_INCREF(K.ab);
    Py_INCREF(K.cb);
    Py_INCREF(K.ckey);
    Py_INCREF(K.tkey);
    Py_INCREF(K.ekey);
    Py_XINCREF(K.okey);
    Py_XINCREF(E.range.low);
    Py_XINCREF(E.range.high);
    E.odt = (PyArray_Descr *)args[11];
    Py_INCREF(E.odt);
    E.used = 1;
    sk_entry *slot = &sk_cache[(size_t)K.hash % SK_CACHE_SLOTS];
    sk_entry old = *slot;
    *slot = E;
    sk_entry_clear(&old); /* after the slot is consistent: decrefs may run code */
    Py_RETURN_TRUE;
}

/* Forget every entry (tests, and a kernel whose decisions must be re-made). */
static PyObject *
sk_clear_cache(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    for (int i = 0; i < SK_CACHE_SLOTS; i++) {
        sk_entry old = sk_cache[i];
        sk_cache[i].used = 0;
        sk_entry_clear(&old);
    }
    Py_RETURN_NONE;
}

/*
 * configure(miss, general, check_out)
 *
 * miss and general take the 7 arguments of fast_select (miss validates, runs
 * and remembers; general runs the general path); check_out(out) is the core's
 * check of out's memory (raises when out is read-only or overlaps itself).
 */
static PyObject *
sk_configure(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "configure() takes exactly 3 arguments");
        return NULL;
    }
    PyObject **slots[3] = {&sk_miss, &sk_general, &sk_check_out};
    for (int i = 0; i < 3; i++) {
        if (!PyCallable_Check(args[i])) {
            PyErr_SetString(PyExc_TypeError, "configure(): arguments must be callables");
            return NULL;
        }
    }
    for (int i = 0; i < 3; i++) {
        Py_INCREF(args[i]);
        Py_XSETREF(*slots[i], args[i]);
    }
    Py_RETURN_NONE;
}

static PyObject *
sk_call7(PyObject *fn, PyObject *const *args)
{
    return PyObject_Vectorcall(fn, args, 7, NULL);
}

/* Pack a Python scalar into `buf` as `descr` (what np.asarray(value, dtype) does). */
typedef union {
    long double ld[4];
    uint64_t u[8];
    char bytes[64];
} sk_scalar_buf;

static PyObject *
sk_fast_select(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    static const char *names[3] = {"cond", "then", "else"};
    sk_key K;
    npy_intp strides[4][SK_MAXDIMS];
    char *data[3];
    sk_scalar_buf buf;

    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "fast_select() takes exactly 7 arguments");
        return NULL;
    }
    if (sk_miss == NULL) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *cond = args[0], *then = args[1], *else_ = args[2], *out = args[6];
    int r = sk_make_key(cond, then, else_, args[3], args[4], args[5], out, &K);
    if (r <= 0) {
        if (r == 0) {
            Py_RETURN_NOTIMPLEMENTED;
        }
        return NULL;
    }
    sk_entry *E = &sk_cache[(size_t)K.hash % SK_CACHE_SLOTS];
    r = E->used ? sk_key_equal(&E->key, &K) : 0;
    if (r <= 0) {
        if (r < 0) {
            return NULL;
        }
        sk_fast_misses++;
        return sk_call7(sk_miss, args);
    }

    /* A hit: re-check what depends on values, with what the core handed over. */
    PyObject *scalar = K.combo == SK_THEN_SCALAR ? then : K.combo == SK_ELSE_SCALAR ? else_ : NULL;
    if (scalar != NULL && !sk_admits(&E->range, scalar)) {
        return sk_call7(sk_general, args);
    }
    if (out != Py_None) {
        PyObject *ok = PyObject_CallOneArg(sk_check_out, out);
        if (ok == NULL) {
            PyErr_Clear(); /* the general path raises it again, in its order */
            return sk_call7(sk_general, args);
        }
        Py_DECREF(ok);
        /* the check ran Python code: the slot may have been replaced meanwhile */
        if (!E->used || sk_key_equal(&E->key, &K) != 1) {
            PyErr_Clear();
            return sk_call7(sk_general, args);
        }
    }
    sk_fast_hits++;

    /* Keep what the entry lends alive: packing a scalar may run Python code. */
    PyArray_Descr *descr = E->odt;
    Py_INCREF(descr);
    const sk_shape out_shape = E->out;
    const sk_dims dims[3] = {E->dims[0], E->dims[1], E->dims[2]};
    const int as_float = E->range.as_float;
    PyObject *ops[3] = {cond, then, else_};
    PyObject *result = NULL;
    for (int k = 0; k < 3; k++) {
        if (PyArray_CheckExact(ops[k])) {
            PyArrayObject *arr = (PyArrayObject *)ops[k];
            if (sk_place(PyArray_NDIM(arr), PyArray_DIMS(arr), PyArray_STRIDES(arr), &dims[k],
                         out_shape.nd, out_shape.dims, names[k], strides[k]) < 0) {
                goto done;
            }
            data[k] = PyArray_BYTES(arr);
            continue;
        }
        if (descr->elsize > (npy_intp)sizeof(sk_scalar_buf)) {
            result = sk_call7(sk_general, args);
            goto done;
        }
        memset(buf.bytes, 0, sizeof(sk_scalar_buf));
        /* ScalarRange.prepare: an int taking a floating dtype goes through a float. */
        PyObject *value = ops[k];
        const int via_float = as_float && PyLong_CheckExact(value);
        if (via_float && (value = PyNumber_Float(value)) == NULL) {
            goto done;
        }
        const int packed = PyArray_Pack(descr, buf.bytes, value);
        if (via_float) {
            Py_DECREF(value);
        }
        if (packed < 0) {
            goto done;
        }
        for (int d = 0; d < out_shape.nd; d++) {
            strides[k][d] = 0;
        }
        data[k] = buf.bytes;
    }
    if (sk_check_dtypes(descr, PyArray_DESCR((PyArrayObject *)cond)) < 0) {
        goto done;
    }
    result = sk_core(descr, PyArray_ITEMSIZE((PyArrayObject *)cond), strides, data,
                     out == Py_None ? NULL : (PyArrayObject *)out, out_shape.nd, out_shape.dims,
                     0, 0);
done:
    Py_DECREF(descr);
    return result;
}

static PyObject *
sk_fast_stats(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return Py_BuildValue("{s:K,s:K}", "hits", sk_fast_hits, "misses", sk_fast_misses);
}

/* ------------------------------------------------------------------------ */
/* Settings and statistics                                                  */
/* ------------------------------------------------------------------------ */

static PyObject *
sk_set_num_threads(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 1 || n > SK_MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "the number of threads must be in [1, %d], got %ld",
                     SK_MAX_THREADS, n);
        return NULL;
    }
#if SK_HAVE_THREADS
    sk_num_threads = (int)n;
#else
    sk_num_threads = 1;
#endif
    Py_RETURN_NONE;
}

static PyObject *
sk_get_num_threads(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyLong_FromLong(sk_num_threads);
}

static PyObject *
sk_set_parallel_min(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "the threshold must be >= 0");
        return NULL;
    }
    sk_parallel_min = n;
    Py_RETURN_NONE;
}

static PyObject *
sk_set_adaptive(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
#if SK_HAVE_THREADS
    sk_adaptive = on;
    __atomic_store_n(&sk_backoff, 0, __ATOMIC_RELAXED);
    sk_backoff_next = 1;
#endif
    Py_RETURN_NONE;
}

static PyObject *
sk_get_parallel_min(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyLong_FromSsize_t(sk_parallel_min);
}

static PyObject *
sk_stats(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
#if SK_HAVE_THREADS
    const unsigned long long backoff = sk_backoff_jobs;
    const double worked = sk_worked_s, wall = sk_wall_s;
#else
    const unsigned long long backoff = 0;
    const double worked = 0.0, wall = 0.0;
#endif
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:d,s:d}", "calls", sk_calls, "threaded_calls",
                         sk_threaded_calls, "temporary_calls", sk_temp_calls,
                         "backed_off_calls", backoff, "caller_work_s", worked,
                         "threaded_wall_s", wall);
}

static PyMethodDef sk_methods[] = {
    {"select", (PyCFunction)(void (*)(void))sk_select, METH_FASTCALL,
     "select(cond, then, else_, out, out_shape, cond_dims, then_dims, else_dims)\n"
     "--\n\n"
     "out = cond ? then : else on raw bits. Inputs are ndarrays; each *_dims is None\n"
     "(right-aligned) or the plan's SelectPlan.dims for that input: the output dims\n"
     "its leading dims go to (the rest are size 1 and dropped). out is None (a new\n"
     "array in the inputs' memory order) or an array of out_shape and then's item\n"
     "size. Returns the output."},
    {"explain", (PyCFunction)(void (*)(void))sk_explain, METH_FASTCALL,
     "explain(<the arguments of select>): the coalesced iteration shape, strides\n"
     "(cond, then, else, out), inner loop, thread count and whether a temporary\n"
     "is needed, without running anything."},
    {"set_pool_limit", sk_set_pool_limit, METH_O,
     "Most bytes of freed large outputs kept for reuse (0 disables the pool)."},
    {"pool_info", sk_pool_info, METH_NOARGS,
     "The output pool: limit, cached bytes and blocks, hits, misses."},
    {"release_pool", sk_release_pool, METH_NOARGS, "Free every cached output block."},
    {"set_num_threads", sk_set_num_threads, METH_O, "Set the number of threads (>= 1)."},
    {"get_num_threads", sk_get_num_threads, METH_NOARGS, "The number of threads."},
    {"set_parallel_min", sk_set_parallel_min, METH_O,
     "Set the output size (elements) from which work is split across threads."},
    {"set_adaptive", sk_set_adaptive, METH_O,
     "Turn the back-off (serial runs after threads did not pay) on or off."},
    {"get_parallel_min", sk_get_parallel_min, METH_NOARGS,
     "The output size (elements) from which work is split across threads."},
    {"fast_select", (PyCFunction)(void (*)(void))sk_fast_select, METH_FASTCALL,
     "fast_select(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)\n"
     "--\n\n"
     "The lean path for np.ndarray conds: a cached plan, or NotImplemented."},
    {"remember", (PyCFunction)(void (*)(void))sk_remember, METH_FASTCALL,
     "Store what the core decided for a call it validated."},
    {"configure", (PyCFunction)(void (*)(void))sk_configure, METH_FASTCALL,
     "configure(miss, general, check_out)"},
    {"clear_cache", sk_clear_cache, METH_NOARGS, "Forget every cached plan."},
    {"fast_stats", sk_fast_stats, METH_NOARGS, "Counters of the fast path: hits, misses."},
    {"stats", sk_stats, METH_NOARGS,
     "Counters: kernel calls, calls run on several threads, calls through a temporary."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef sk_module = {
    PyModuleDef_HEAD_INIT, "_select_kernel",
    "The compiled Select kernel of arrayselect's NumPy backend.", -1, sk_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__select_kernel(void)
{
    import_array();
#if SK_HAVE_THREADS
    static int atfork_done = 0;
    if (!atfork_done) {
        pthread_atfork(NULL, NULL, sk_atfork_child);
        pthread_atfork(NULL, NULL, sk_mem_atfork_child);
        atfork_done = 1;
    }
#endif
    PyObject *m = PyModule_Create(&sk_module);
    if (m == NULL) {
        return NULL;
    }
    if (sk_handler_capsule == NULL) {
        sk_handler_capsule = PyCapsule_New(&sk_mem_handler, "mem_handler", NULL);
        if (sk_handler_capsule == NULL) {
            Py_DECREF(m);
            return NULL;
        }
    }
    if (PyModule_AddIntConstant(m, "HAVE_THREADS", SK_HAVE_THREADS) < 0 ||
        PyModule_AddIntConstant(m, "DEFAULT_PARALLEL_MIN", SK_DEFAULT_PARALLEL_MIN) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
