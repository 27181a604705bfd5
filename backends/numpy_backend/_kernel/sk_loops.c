/*
 * sk_loops.c: the inner loops of the Select kernel.
 *
 * Values are moved as raw bits, so one loop per item size (1, 2, 4, 8, 16 and
 * 32 bytes; any other size through a generic byte loop) serves every dtype.
 * cond is tested as "nonzero is true" at its own width (1, 2, 4 or 8 bytes),
 * inside the loop: an integer mask costs no conversion pass. Every loop is
 * branchless, so a random mask costs nothing.
 */
#include "sk_kernel.h"

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
void
sk_generic_loop(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as,
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
void
sk_block_loop(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as,
           const char *b, npy_intp bs, char *o, npy_intp os, npy_intp packed)
{
    const npy_intp isz = packed >> 4;
    const int csz = (int)(packed & 15);
    const int nz = sk_nonzero(c, csz);
    (void)cs;
    sk_copy(n, nz ? a : b, nz ? as : bs, o, os, isz);
}

const char *const sk_kind_names[SK_NKINDS] = {
    "contiguous", "contiguous-then-scalar", "contiguous-else-scalar", "contiguous-both-scalar",
    "in-place-then", "in-place-else", "strided",
};

/* [value size index][cond size index][kind] */
const sk_loop sk_loops[6][4][SK_NKINDS] = {
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

int
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
