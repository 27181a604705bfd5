/*
 * sk_loops_isa.h: every typed loop, compiled for one instruction set, and
 * their table. A template: sk_loops.c includes it once per instruction set
 * with
 *
 *     SK_ISA       the suffix of this copy's names (baseline, avx2, avx512)
 *     SK_TARGET    the function attribute that selects the instruction set
 *                  (empty for the baseline: the file's own flags)
 *     SK_ALIGN     the output alignment the contiguous loops peel up to
 *                  (the vector width; 0 for the baseline)
 *     SK_TABLE_EXTERN  (optional) the table has external linkage: its copy
 *                  is a translation unit of its own (sk_loops_base.h)
 *
 * defined. No intrinsics: the compiler's vectorizer writes every copy from
 * the same C, so all copies compute the same bits.
 */

/*
 * Gather n elements of type T at byte stride s into the contiguous dst, and
 * scatter them back. Common strides get loops with a compile-time stride
 * (step-2 and step-3/4 slices, reversed views), which the compiler turns into
 * vector loads and shuffles; any other stride moves one element at a time.
 */
#define SK_GATHER_SCATTER(VN, T)                                                              \
    static SK_TARGET void SK_CAT(SK_CAT(gather, VN), SK_ISA)(                                 \
        npy_intp n, const char *src, npy_intp s, T *SK_RESTRICT dst)                          \
    {                                                                                         \
        const T *p = (const T *)src;                                                          \
        const npy_intp t = (npy_intp)sizeof(T);                                               \
        if (s == 2 * t) {                                                                     \
            for (npy_intp i = 0; i < n; i++) dst[i] = p[2 * i];                               \
        }                                                                                     \
        else if (s == -t) {                                                                   \
            for (npy_intp i = 0; i < n; i++) dst[i] = p[-i];                                  \
        }                                                                                     \
        else if (s == 3 * t) {                                                                \
            for (npy_intp i = 0; i < n; i++) dst[i] = p[3 * i];                               \
        }                                                                                     \
        else if (s == 4 * t) {                                                                \
            for (npy_intp i = 0; i < n; i++) dst[i] = p[4 * i];                               \
        }                                                                                     \
        else {                                                                                \
            for (npy_intp i = 0; i < n; i++) dst[i] = *(const T *)(src + i * s);              \
        }                                                                                     \
    }                                                                                         \
    static SK_TARGET void SK_CAT(SK_CAT(gather2, VN), SK_ISA)(                                \
        npy_intp n, const char *src1, const char *src2, npy_intp s, T *SK_RESTRICT dst1,      \
        T *SK_RESTRICT dst2)                                                                  \
    {                                                                                         \
        const T *p = (const T *)src1, *q = (const T *)src2;                                   \
        const npy_intp t = (npy_intp)sizeof(T);                                               \
        if (s == 2 * t) {                                                                     \
            for (npy_intp i = 0; i < n; i++) dst1[i] = p[2 * i], dst2[i] = q[2 * i];          \
        }                                                                                     \
        else if (s == -t) {                                                                   \
            for (npy_intp i = 0; i < n; i++) dst1[i] = p[-i], dst2[i] = q[-i];                \
        }                                                                                     \
        else {                                                                                \
            for (npy_intp i = 0; i < n; i++)                                                  \
                dst1[i] = *(const T *)(src1 + i * s), dst2[i] = *(const T *)(src2 + i * s);   \
        }                                                                                     \
    }                                                                                         \
    static SK_TARGET void SK_CAT(SK_CAT(scatter, VN), SK_ISA)(                                \
        npy_intp n, const T *SK_RESTRICT src, char *dst, npy_intp s)                          \
    {                                                                                         \
        T *p = (T *)dst;                                                                      \
        const npy_intp t = (npy_intp)sizeof(T);                                               \
        if (s == t) {                                                                         \
            memcpy(dst, src, (size_t)n * sizeof(T));                                          \
        }                                                                                     \
        else if (s == 2 * t) {                                                                \
            for (npy_intp i = 0; i < n; i++) p[2 * i] = src[i];                               \
        }                                                                                     \
        else if (s == -t) {                                                                   \
            for (npy_intp i = 0; i < n; i++) p[-i] = src[i];                                  \
        }                                                                                     \
        else {                                                                                \
            for (npy_intp i = 0; i < n; i++) *(T *)(dst + i * s) = src[i];                    \
        }                                                                                     \
    }

SK_GATHER_SCATTER(v1, uint8_t)
SK_GATHER_SCATTER(v2, uint16_t)
SK_GATHER_SCATTER(v4, uint32_t)
SK_GATHER_SCATTER(v8, uint64_t)
#undef SK_GATHER_SCATTER

/*
 * Value sizes 1, 2, 4 and 8: one unsigned integer per element. SK_CV names
 * the value type of the cond's size (its gather loop).
 */
#define CT uint8_t
#define SK_CN c1
#define SK_CV v1
#define VT uint8_t
#define SK_VN v1
#include "sk_loops_typed.h"
#define CT uint16_t
#define SK_CN c2
#define SK_CV v2
#define VT uint8_t
#define SK_VN v1
#include "sk_loops_typed.h"
#define CT uint32_t
#define SK_CN c4
#define SK_CV v4
#define VT uint8_t
#define SK_VN v1
#include "sk_loops_typed.h"
#define CT uint64_t
#define SK_CN c8
#define SK_CV v8
#define VT uint8_t
#define SK_VN v1
#include "sk_loops_typed.h"

#define CT uint8_t
#define SK_CN c1
#define SK_CV v1
#define VT uint16_t
#define SK_VN v2
#include "sk_loops_typed.h"
#define CT uint16_t
#define SK_CN c2
#define SK_CV v2
#define VT uint16_t
#define SK_VN v2
#include "sk_loops_typed.h"
#define CT uint32_t
#define SK_CN c4
#define SK_CV v4
#define VT uint16_t
#define SK_VN v2
#include "sk_loops_typed.h"
#define CT uint64_t
#define SK_CN c8
#define SK_CV v8
#define VT uint16_t
#define SK_VN v2
#include "sk_loops_typed.h"

#define CT uint8_t
#define SK_CN c1
#define SK_CV v1
#define VT uint32_t
#define SK_VN v4
#include "sk_loops_typed.h"
#define CT uint16_t
#define SK_CN c2
#define SK_CV v2
#define VT uint32_t
#define SK_VN v4
#include "sk_loops_typed.h"
#define CT uint32_t
#define SK_CN c4
#define SK_CV v4
#define VT uint32_t
#define SK_VN v4
#include "sk_loops_typed.h"
#define CT uint64_t
#define SK_CN c8
#define SK_CV v8
#define VT uint32_t
#define SK_VN v4
#include "sk_loops_typed.h"

#define CT uint8_t
#define SK_CN c1
#define SK_CV v1
#define VT uint64_t
#define SK_VN v8
#include "sk_loops_typed.h"
#define CT uint16_t
#define SK_CN c2
#define SK_CV v2
#define VT uint64_t
#define SK_VN v8
#include "sk_loops_typed.h"
#define CT uint32_t
#define SK_CN c4
#define SK_CV v4
#define VT uint64_t
#define SK_VN v8
#include "sk_loops_typed.h"
#define CT uint64_t
#define SK_CN c8
#define SK_CV v8
#define VT uint64_t
#define SK_VN v8
#include "sk_loops_typed.h"

/*
 * The one-pass loop of step K for items of L 8-byte lanes (see SK_NAME(sk) in
 * sk_loops_typed.h): every lane of an element under its cond's mask.
 */
#define SK_WIDE_STEP_BODY(L, K)                                                               \
    for (npy_intp i = 0; i < n; i++) {                                                        \
        const uint64_t m = (uint64_t)0 - (uint64_t)(c[K * i] != 0);                           \
        for (int l = 0; l < L; l++) {                                                         \
            o[L * i + l] = (a[K * L * i + l] & m) | (b[K * L * i + l] & ~m);                  \
        }                                                                                     \
    }

/*
 * Value sizes 16 and 32 (complex128, long double, ...): L 8-byte lanes per
 * element, every lane under the same mask, moved with 16-byte vector
 * operations where the compiler has vector extensions. Contiguous operands
 * and broadcast scalars share one loop (as and bs are the item size or 0).
 */
#define SK_WIDE_LOOPS(CN, CT_, VN, L)                                                         \
    static SK_TARGET void SK_CAT(SK_CAT(SK_CAT(cc, CN), VN), SK_ISA)(                         \
        npy_intp n, const char *c_, npy_intp cs, const char *a, npy_intp as, const char *b,   \
        npy_intp bs, char *o, npy_intp os, npy_intp isz)                                      \
    {                                                                                         \
        const CT_ *SK_RESTRICT c = (const CT_ *)c_;                                           \
        (void)cs, (void)isz;                                                                  \
        for (npy_intp i = 0; i < n; i++) {                                                    \
            sk_wide_select(L, c[i] != 0, a + i * as, b + i * bs, o + i * os);                 \
        }                                                                                     \
    }                                                                                         \
    static SK_TARGET void SK_CAT(SK_CAT(SK_CAT(st, CN), VN), SK_ISA)(                         \
        npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as, const char *b,    \
        npy_intp bs, char *o, npy_intp os, npy_intp isz)                                      \
    {                                                                                         \
        (void)isz;                                                                            \
        for (npy_intp i = 0; i < n; i++) {                                                    \
            sk_wide_select(L, *(const CT_ *)c != 0, a, b, o);                                 \
            c += cs, a += as, b += bs, o += os;                                               \
        }                                                                                     \
    }                                                                                         \
    static SK_TARGET void SK_CAT(SK_CAT(SK_CAT(sk, CN), VN), SK_ISA)(                         \
        npy_intp n, const char *c_, npy_intp cs, const char *a_, npy_intp as, const char *b_, \
        npy_intp bs, char *o_, npy_intp os, npy_intp isz)                                     \
    {                                                                                         \
        const npy_intp csz = (npy_intp)sizeof(CT_), vsz = 8 * L, k = as / vsz;                \
        if (os == vsz && bs == as && as == k * vsz && cs == k * csz && k >= 2 && k <= 4) {    \
            const CT_ *SK_RESTRICT c = (const CT_ *)c_;                                       \
            const uint64_t *SK_RESTRICT a = (const uint64_t *)a_;                             \
            const uint64_t *SK_RESTRICT b = (const uint64_t *)b_;                             \
            uint64_t *SK_RESTRICT o = (uint64_t *)o_;                                         \
            if (k == 2) {                                                                     \
                SK_WIDE_STEP_BODY(L, 2)                                                       \
            }                                                                                 \
            else if (k == 3) {                                                                \
                SK_WIDE_STEP_BODY(L, 3)                                                       \
            }                                                                                 \
            else {                                                                            \
                SK_WIDE_STEP_BODY(L, 4)                                                       \
            }                                                                                 \
            return;                                                                           \
        }                                                                                     \
        SK_CAT(SK_CAT(SK_CAT(st, CN), VN), SK_ISA)(n, c_, cs, a_, as, b_, bs, o_, os, isz);   \
    }

SK_WIDE_LOOPS(c1, uint8_t, v16, 2)
SK_WIDE_LOOPS(c2, uint16_t, v16, 2)
SK_WIDE_LOOPS(c4, uint32_t, v16, 2)
SK_WIDE_LOOPS(c8, uint64_t, v16, 2)
SK_WIDE_LOOPS(c1, uint8_t, v32, 4)
SK_WIDE_LOOPS(c2, uint16_t, v32, 4)
SK_WIDE_LOOPS(c4, uint32_t, v32, 4)
SK_WIDE_LOOPS(c8, uint64_t, v32, 4)
#undef SK_WIDE_LOOPS
#undef SK_WIDE_STEP_BODY

/* The table: [value size index][cond size index][kind]; NULL where a kind does not exist. */
#define SK_F(kind, CN, VN) SK_CAT(SK_CAT(SK_CAT(kind, CN), VN), SK_ISA)
#define SK_ROW(CN, VN)                                                                        \
    {SK_F(cc, CN, VN), SK_F(sc, CN, VN), SK_F(cs, CN, VN), SK_F(ss, CN, VN),                  \
     SK_F(ia, CN, VN), SK_F(ib, CN, VN), SK_F(st, CN, VN), SK_F(bst, CN, VN),                 \
     SK_F(sk, CN, VN)}
#define SK_WIDE_ROW(CN, VN)                                                                   \
    {SK_F(cc, CN, VN), SK_F(cc, CN, VN), SK_F(cc, CN, VN), SK_F(cc, CN, VN), NULL, NULL,      \
     SK_F(st, CN, VN), SK_F(st, CN, VN), SK_F(sk, CN, VN)}
#define SK_ROWS(VN) {SK_ROW(c1, VN), SK_ROW(c2, VN), SK_ROW(c4, VN), SK_ROW(c8, VN)}
#define SK_WIDE_ROWS(VN)                                                                      \
    {SK_WIDE_ROW(c1, VN), SK_WIDE_ROW(c2, VN), SK_WIDE_ROW(c4, VN), SK_WIDE_ROW(c8, VN)}

#ifdef SK_TABLE_EXTERN
extern const sk_loop_table SK_CAT(sk_table, SK_ISA);
const sk_loop_table SK_CAT(sk_table, SK_ISA) = {
#else
static const sk_loop_table SK_CAT(sk_table, SK_ISA) = {
#endif
    SK_STR(SK_ISA),
    {SK_ROWS(v1), SK_ROWS(v2), SK_ROWS(v4), SK_ROWS(v8), SK_WIDE_ROWS(v16), SK_WIDE_ROWS(v32)},
};

#undef SK_F
#undef SK_ROW
#undef SK_WIDE_ROW
#undef SK_ROWS
#undef SK_WIDE_ROWS
