/*
 * sk_cases.c: the select family in one pass,
 *
 *     select_n(which, cases, out):              out[i] = cases[which[i]][i]
 *     select_cases(conds, choices, default, out): out[i] = choices[k][i] for the
 *                                                first k with conds[k][i] != 0,
 *                                                default[i] where there is none
 *
 * on raw bits, for any number of cases, on the thread pool.
 *
 * One pass: the output is cut into blocks of up to SK_FAM_BLOCK_MAX elements
 * (SK_FAM_BLOCK_BYTES of output) that stay in L1 while every case is applied
 * to them, the last case first, so that the first true condition (the
 * matching index) is the one written last:
 *
 *     select_cases: ob = default;  ob = conds[k] ? choices[k] : ob,   k = n-1 .. 0
 *     select_n:     ob = cases[m-1]; ob = (which == k) ? cases[k] : ob, k = m-2 .. 0
 *
 * Every input element is read once from memory and each output element
 * written once. Cases go four at a time through a group loop that reads
 * their streams together (bool conds and contiguous rows; see "Fused
 * groups"); any other layout (a broadcast scalar, strided rows, wider conds,
 * odd item sizes, misaligned data) goes case by case through the select
 * kernel's own loops (sk_loop_table: branchless, one copy per instruction
 * set), each picked for that case's operands as a select picks its loop.
 *
 * select_n range-checks a block's indices first (their max, taken as they are
 * narrowed to uint8 for the group loops), so an index outside [0, n) is
 * found in the same pass, and no block that holds one is written.
 *
 * Threads: the whole call is one sk_job of one flat dimension whose loop is
 * sk_fam_loop (see sk_fam_run), so the pool's decision (cost, room, loops),
 * chunking and GIL handling are select's own.
 *
 * The callers (kernel_family.py, the core) have broadcast every operand to the
 * output shape and checked the dtypes; this file checks again only what would
 * make the loops unsafe.
 */
#include "sk_kernel.h"

/* Output bytes per block, and the most elements per block (the mask buffer). */
#define SK_FAM_BLOCK_BYTES 8192
#define SK_FAM_BLOCK_MAX 2048

/* No out-of-range index found (select_n). */
#define SK_FAM_NO_BAD NPY_MAX_INTP

typedef struct sk_fam_group_table sk_fam_group_table; /* the group loops, below */

/* One call, coalesced. Operands: the conds (select_n: which), the values, out. */
typedef struct {
    int is_n;            /* select_n (1) or select_cases (0) */
    int n;               /* select_cases: conditions; select_n: cases */
    int reach;           /* select_n: the cases an index of which's type can reach */
    int which_bool;      /* select_n with a bool which: one select, which ? cases[1] : cases[0] */
    int which_signed;
    int nconds, nvals, nops;
    int nd;
    npy_intp shape[SK_MAXDIMS];
    npy_intp total, isz, block;
    char **data;         /* [nops] */
    npy_intp *strides;   /* [nops][nd], memory order */
    npy_intp *csz;       /* [nconds] */
    npy_intp *bstrides;  /* [nops][bnd]: each operand's strides on the output's axes,
                            0 where it is broadcast (sk_fam_place) */
    int bnd;             /* the output's number of axes */
    int generic;         /* odd item size or misaligned data: the generic loop */
    int grouped;         /* item size 1, 2, 4 or 8, aligned: the group loops */
    const sk_loop_table *table;
    const sk_fam_group_table *groups;
    npy_intp bad;        /* select_n: a flat index of an out-of-range index, or SK_FAM_NO_BAD */
} sk_fam;

/* ------------------------------------------------------------------------ */
/* select_n: which's range and the per-case masks                            */
/* ------------------------------------------------------------------------ */

/*
 * For each width of `which`: the largest value of a block seen as unsigned
 * (a negative signed index is then larger than any n a signed index can
 * reach), the position of the first value >= lim, and the byte mask
 * which == k. Loads go through memcpy: `which` may be misaligned.
 */
#define SK_FAM_WIDTH(UT, NAME)                                                                \
    static uint64_t NAME##_max(npy_intp m, const char *w, npy_intp ws)                       \
    {                                                                                         \
        UT mx = 0;                                                                            \
        if (ws == (npy_intp)sizeof(UT)) {                                                     \
            for (npy_intp i = 0; i < m; i++) {                                                \
                UT v;                                                                         \
                memcpy(&v, w + i * (npy_intp)sizeof(UT), sizeof(UT));                         \
                mx = v > mx ? v : mx;                                                         \
            }                                                                                 \
        }                                                                                     \
        else {                                                                                \
            for (npy_intp i = 0; i < m; i++) {                                                \
                UT v;                                                                         \
                memcpy(&v, w + i * ws, sizeof(UT));                                           \
                mx = v > mx ? v : mx;                                                         \
            }                                                                                 \
        }                                                                                     \
        return (uint64_t)mx;                                                                  \
    }                                                                                         \
    static npy_intp NAME##_first(npy_intp m, const char *w, npy_intp ws, uint64_t lim)       \
    {                                                                                         \
        for (npy_intp i = 0; i < m; i++) {                                                    \
            UT v;                                                                             \
            memcpy(&v, w + i * ws, sizeof(UT));                                               \
            if ((uint64_t)v >= lim) {                                                         \
                return i;                                                                     \
            }                                                                                 \
        }                                                                                     \
        return m;                                                                             \
    }                                                                                         \
    static void NAME##_mask(npy_intp m, const char *w, npy_intp ws, uint64_t k,              \
                            uint8_t *SK_FAM_RESTRICT mb)                                      \
    {                                                                                         \
        const UT kk = (UT)k;                                                                  \
        if (ws == (npy_intp)sizeof(UT)) {                                                     \
            for (npy_intp i = 0; i < m; i++) {                                                \
                UT v;                                                                         \
                memcpy(&v, w + i * (npy_intp)sizeof(UT), sizeof(UT));                         \
                mb[i] = (uint8_t)(v == kk);                                                   \
            }                                                                                 \
        }                                                                                     \
        else {                                                                                \
            for (npy_intp i = 0; i < m; i++) {                                                \
                UT v;                                                                         \
                memcpy(&v, w + i * ws, sizeof(UT));                                           \
                mb[i] = (uint8_t)(v == kk);                                                   \
            }                                                                                 \
        }                                                                                     \
    }

#if defined(__GNUC__) || defined(__clang__)
#define SK_FAM_RESTRICT __restrict__
#else
#define SK_FAM_RESTRICT
#endif

SK_FAM_WIDTH(uint8_t, sk_fam_w1)
SK_FAM_WIDTH(uint16_t, sk_fam_w2)
SK_FAM_WIDTH(uint32_t, sk_fam_w4)
SK_FAM_WIDTH(uint64_t, sk_fam_w8)
#undef SK_FAM_WIDTH

static uint64_t
sk_fam_max(npy_intp wsz, npy_intp m, const char *w, npy_intp ws)
{
    switch (wsz) {
        case 1: return sk_fam_w1_max(m, w, ws);
        case 2: return sk_fam_w2_max(m, w, ws);
        case 4: return sk_fam_w4_max(m, w, ws);
        default: return sk_fam_w8_max(m, w, ws);
    }
}

static npy_intp
sk_fam_first(npy_intp wsz, npy_intp m, const char *w, npy_intp ws, uint64_t lim)
{
    switch (wsz) {
        case 1: return sk_fam_w1_first(m, w, ws, lim);
        case 2: return sk_fam_w2_first(m, w, ws, lim);
        case 4: return sk_fam_w4_first(m, w, ws, lim);
        default: return sk_fam_w8_first(m, w, ws, lim);
    }
}

static void
sk_fam_mask(npy_intp wsz, npy_intp m, const char *w, npy_intp ws, uint64_t k, uint8_t *mb)
{
    switch (wsz) {
        case 1: sk_fam_w1_mask(m, w, ws, k, mb); break;
        case 2: sk_fam_w2_mask(m, w, ws, k, mb); break;
        case 4: sk_fam_w4_mask(m, w, ws, k, mb); break;
        default: sk_fam_w8_mask(m, w, ws, k, mb); break;
    }
}

/* ------------------------------------------------------------------------ */
/* Fused groups: up to four cases in one loop                                */
/* ------------------------------------------------------------------------ */

/*
 * A chain of two-way steps reads each case's block alone, a few KiB of one
 * stream, then moves on: from DRAM that is a latency-bound pattern (measured:
 * half the bandwidth of a chain of whole-array selects). A group loop reads up
 * to SK_FAM_GROUP cases' streams (bool conds, contiguous values) and the
 * running output in the same loop, so they all stream together:
 *
 *     v = init[i]; v = c[g-1][i] ? a[g-1][i] : v; ... v = c[0][i] ? a[0][i] : v; o[i] = v
 *
 * select_n's groups test an index buffer (uint8, idx[i] == kb + j) instead of
 * bool conds. `init` is another array, or o itself (in place: its own loop,
 * so the compiler needs no run-time alias check).
 */
#define SK_FAM_GROUP 4

/* c ? x : y with both loaded first (a conditional load does not vectorize): the ternary
 * for items of up to 4 bytes, a mask for wider ones (as the select loops do). */
#define SK_FAM_SEL(VT, c, x, y) sk_fam_sel_##VT((c) != 0, (x), (y))
#define SK_FAM_SEL_FN(VT)                                                                     \
    static inline VT sk_fam_sel_##VT(int c, VT x, VT y)                                       \
    {                                                                                         \
        if (sizeof(VT) <= 4) {                                                                \
            return c ? x : y;                                                                 \
        }                                                                                     \
        const VT mk = (VT)0 - (VT)c;                                                          \
        return (VT)((x & mk) | (y & (VT)~mk));                                                \
    }
SK_FAM_SEL_FN(uint8_t)
SK_FAM_SEL_FN(uint16_t)
SK_FAM_SEL_FN(uint32_t)
SK_FAM_SEL_FN(uint64_t)
#undef SK_FAM_SEL_FN

/* One loop body for g = 1 .. 4 cases; COND(j) is case j's test at element i. */
#define SK_FAM_GROUP_BODY(VT, COND, INIT)                                                     \
    switch (g) {                                                                              \
        case 4:                                                                               \
            for (npy_intp i = 0; i < m; i++) {                                                \
                VT v = INIT;                                                                  \
                v = SK_FAM_SEL(VT, COND(3), (VT)a3[i], v);                                        \
                v = SK_FAM_SEL(VT, COND(2), (VT)a2[i], v);                                        \
                v = SK_FAM_SEL(VT, COND(1), (VT)a1[i], v);                                        \
                o[i] = SK_FAM_SEL(VT, COND(0), (VT)a0[i], v);                                     \
            }                                                                                 \
            break;                                                                            \
        case 3:                                                                               \
            for (npy_intp i = 0; i < m; i++) {                                                \
                VT v = INIT;                                                                  \
                v = SK_FAM_SEL(VT, COND(2), (VT)a2[i], v);                                        \
                v = SK_FAM_SEL(VT, COND(1), (VT)a1[i], v);                                        \
                o[i] = SK_FAM_SEL(VT, COND(0), (VT)a0[i], v);                                     \
            }                                                                                 \
            break;                                                                            \
        case 2:                                                                               \
            for (npy_intp i = 0; i < m; i++) {                                                \
                VT v = INIT;                                                                  \
                v = SK_FAM_SEL(VT, COND(1), (VT)a1[i], v);                                        \
                o[i] = SK_FAM_SEL(VT, COND(0), (VT)a0[i], v);                                     \
            }                                                                                 \
            break;                                                                            \
        default:                                                                              \
            for (npy_intp i = 0; i < m; i++) {                                                \
                VT v = INIT;                                                                  \
                o[i] = SK_FAM_SEL(VT, COND(0), (VT)a0[i], v);                                     \
            }                                                                                 \
    }

#define SK_FAM_COND_CASES(j) c##j[i]
#define SK_FAM_COND_N(j) (idx[i] == (uint8_t)(kb + (j)))

#define SK_FAM_GROUP_LOOPS(VT, VN, ISA, TARGET)                                               \
    static TARGET void sk_fam_cases_##VN##_##ISA(npy_intp m, int g, const char *const *c_,    \
                                  const char *const *a_, const char *init_, char *o_)         \
    {                                                                                         \
        const uint8_t *SK_FAM_RESTRICT c0 = (const uint8_t *)c_[0];                           \
        const uint8_t *SK_FAM_RESTRICT c1 = (const uint8_t *)c_[g > 1 ? 1 : 0];               \
        const uint8_t *SK_FAM_RESTRICT c2 = (const uint8_t *)c_[g > 2 ? 2 : 0];               \
        const uint8_t *SK_FAM_RESTRICT c3 = (const uint8_t *)c_[g > 3 ? 3 : 0];               \
        const VT *SK_FAM_RESTRICT a0 = (const VT *)a_[0];                                     \
        const VT *SK_FAM_RESTRICT a1 = (const VT *)a_[g > 1 ? 1 : 0];                         \
        const VT *SK_FAM_RESTRICT a2 = (const VT *)a_[g > 2 ? 2 : 0];                         \
        const VT *SK_FAM_RESTRICT a3 = (const VT *)a_[g > 3 ? 3 : 0];                         \
        VT *SK_FAM_RESTRICT o = (VT *)o_;                                                     \
        if (init_ == o_) {                                                                    \
            SK_FAM_GROUP_BODY(VT, SK_FAM_COND_CASES, o[i])                                    \
        }                                                                                     \
        else {                                                                                \
            const VT *SK_FAM_RESTRICT init = (const VT *)init_;                               \
            SK_FAM_GROUP_BODY(VT, SK_FAM_COND_CASES, init[i])                                 \
        }                                                                                     \
    }                                                                                         \
    static TARGET void sk_fam_n_##VN##_##ISA(npy_intp m, int g,                               \
                                             const uint8_t *SK_FAM_RESTRICT idx, int kb,      \
                              const char *const *a_, const char *init_, char *o_)             \
    {                                                                                         \
        const VT *SK_FAM_RESTRICT a0 = (const VT *)a_[0];                                     \
        const VT *SK_FAM_RESTRICT a1 = (const VT *)a_[g > 1 ? 1 : 0];                         \
        const VT *SK_FAM_RESTRICT a2 = (const VT *)a_[g > 2 ? 2 : 0];                         \
        const VT *SK_FAM_RESTRICT a3 = (const VT *)a_[g > 3 ? 3 : 0];                         \
        VT *SK_FAM_RESTRICT o = (VT *)o_;                                                     \
        if (init_ == o_) {                                                                    \
            SK_FAM_GROUP_BODY(VT, SK_FAM_COND_N, o[i])                                        \
        }                                                                                     \
        else {                                                                                \
            const VT *SK_FAM_RESTRICT init = (const VT *)init_;                               \
            SK_FAM_GROUP_BODY(VT, SK_FAM_COND_N, init[i])                                     \
        }                                                                                     \
    }

typedef void (*sk_fam_cases_fn)(npy_intp, int, const char *const *, const char *const *,
                                const char *, char *);
typedef void (*sk_fam_n_fn)(npy_intp, int, const uint8_t *, int, const char *const *,
                            const char *, char *);
/* The group loops of one instruction set, by value size index (1, 2, 4, 8 bytes). */
typedef uint64_t (*sk_fam_narrow_fn)(npy_intp, const char *, npy_intp, uint8_t *);
struct sk_fam_group_table {
    sk_fam_cases_fn cases[4]; /* by value size index */
    sk_fam_n_fn n[4];         /* by value size index */
    sk_fam_narrow_fn narrow[4]; /* by which's size index */
};

/* which's values as uint8 (meaningful when all are in [0, 256)), and their maximum. */
#define SK_FAM_NARROW(UT, WN, ISA, TARGET)                                                    \
    static TARGET uint64_t sk_fam_narrow_##WN##_##ISA(npy_intp m, const char *w, npy_intp ws, \
                                                     uint8_t *SK_FAM_RESTRICT ib)             \
    {                                                                                         \
        UT mx = 0;                                                                            \
        if (ws == (npy_intp)sizeof(UT)) {                                                     \
            for (npy_intp i = 0; i < m; i++) {                                                \
                UT v;                                                                         \
                memcpy(&v, w + i * (npy_intp)sizeof(UT), sizeof(UT));                         \
                mx = v > mx ? v : mx;                                                         \
                ib[i] = (uint8_t)v;                                                           \
            }                                                                                 \
        }                                                                                     \
        else {                                                                                \
            for (npy_intp i = 0; i < m; i++) {                                                \
                UT v;                                                                         \
                memcpy(&v, w + i * ws, sizeof(UT));                                           \
                mx = v > mx ? v : mx;                                                         \
                ib[i] = (uint8_t)v;                                                           \
            }                                                                                 \
        }                                                                                     \
        return (uint64_t)mx;                                                                  \
    }

#define SK_FAM_ISA_LOOPS(ISA, TARGET)                                                         \
    SK_FAM_NARROW(uint8_t, w1, ISA, TARGET)                                                   \
    SK_FAM_NARROW(uint16_t, w2, ISA, TARGET)                                                  \
    SK_FAM_NARROW(uint32_t, w4, ISA, TARGET)                                                  \
    SK_FAM_NARROW(uint64_t, w8, ISA, TARGET)                                                  \
    SK_FAM_GROUP_LOOPS(uint8_t, v1, ISA, TARGET)                                              \
    SK_FAM_GROUP_LOOPS(uint16_t, v2, ISA, TARGET)                                             \
    SK_FAM_GROUP_LOOPS(uint32_t, v4, ISA, TARGET)                                             \
    SK_FAM_GROUP_LOOPS(uint64_t, v8, ISA, TARGET)                                             \
    static const sk_fam_group_table sk_fam_groups_##ISA = {                                   \
        {sk_fam_cases_v1_##ISA, sk_fam_cases_v2_##ISA, sk_fam_cases_v4_##ISA,                 \
         sk_fam_cases_v8_##ISA},                                                              \
        {sk_fam_n_v1_##ISA, sk_fam_n_v2_##ISA, sk_fam_n_v4_##ISA, sk_fam_n_v8_##ISA},         \
        {sk_fam_narrow_w1_##ISA, sk_fam_narrow_w2_##ISA, sk_fam_narrow_w4_##ISA,              \
         sk_fam_narrow_w8_##ISA},                                                             \
    };

/*
 * Compiled for the instruction sets the select loops may use; the copy a
 * call runs is the one of the select loops' current set (sk_isa_current(),
 * which ARRAYSELECT_CPU and set_isa() move), so the two always agree. The
 * AVX-512 copy matters most here: a bool cond becomes a mask register in one
 * instruction, where SSE2 needs a chain of unpacks per value width.
 */
SK_FAM_ISA_LOOPS(baseline, )
#if defined(__x86_64__) && !defined(_MSC_VER) && (defined(__GNUC__) || defined(__clang__))
#define SK_FAM_HAVE_X86_COPIES 1
SK_FAM_ISA_LOOPS(avx2, __attribute__((target("avx2"))))
#if defined(__clang__)
SK_FAM_ISA_LOOPS(avx512, __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512cd"),
                                        min_vector_width(512))))
#else
SK_FAM_ISA_LOOPS(avx512, __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512cd,"
                                               "prefer-vector-width=512"))))
#endif
#else
#define SK_FAM_HAVE_X86_COPIES 0
#endif
#undef SK_FAM_ISA_LOOPS
#undef SK_FAM_NARROW
#undef SK_FAM_GROUP_LOOPS

/* The group loops of the instruction set select uses now. */
static const sk_fam_group_table *
sk_fam_groups_current(void)
{
#if SK_FAM_HAVE_X86_COPIES
    switch (sk_isa_current()) {
        case SK_ISA_AVX512: return &sk_fam_groups_avx512;
        case SK_ISA_AVX2: return &sk_fam_groups_avx2;
        default: break;
    }
#endif
    return &sk_fam_groups_baseline;
}

/* ------------------------------------------------------------------------ */
/* One block                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * ob[i] = c[i] ? a[i] : b[i] for m elements into the contiguous block ob,
 * where b is either an input (its stride bs) or ob itself (in place), with
 * the loop a select with these operands would use.
 */
static void
sk_fam_step(const sk_fam *F, npy_intp m, const char *c, npy_intp cs, npy_intp csz,
            const char *a, npy_intp as, const char *b, npy_intp bs, char *ob)
{
    const npy_intp isz = F->isz;
    const npy_intp packed = (isz << 4) | csz;
    if (F->generic) {
        sk_generic_loop(m, c, cs, a, as, b, bs, ob, isz, packed);
        return;
    }
    if (cs == 0) {
        sk_block_loop(m, c, 0, a, as, b, bs, ob, isz, packed);
        return;
    }
    const sk_loop *row = F->table->loops[sk_size_index(isz)][sk_size_index(csz)];
    const int in_place = b == ob;
    const int a_ok = as == isz || as == 0, b_ok = bs == isz || bs == 0;
    if (cs == csz && a_ok && b_ok) {
        if (!in_place) {
            const int kind = as == 0 ? (bs == 0 ? SK_SS : SK_SC) : (bs == 0 ? SK_CS : SK_CC);
            row[kind](m, c, cs, a, as, b, bs, ob, isz, isz);
            return;
        }
        if (row[SK_IB] != NULL) {
            row[SK_IB](m, c, cs, a, as, b, bs, ob, isz, isz);
            return;
        }
    }
    /* strided operands (or in place for the wide sizes): the loops that allow b == ob */
    const int kind = sk_size_index(isz) <= 3 && m >= 16 ? SK_BST : SK_ST;
    row[kind](m, c, cs, a, as, b, bs, ob, isz, isz);
}

/* Scatter m elements from the contiguous buffer to a strided out. */
static void
sk_fam_scatter(npy_intp m, const char *src, char *o, npy_intp os, npy_intp isz)
{
    switch (isz) {
#define SK_FAM_SCATTER(SZ)                                                                    \
        case SZ:                                                                              \
            for (npy_intp i = 0; i < m; i++) {                                                \
                memcpy(o + i * os, src + i * SZ, SZ);                                         \
            }                                                                                 \
            return;
        SK_FAM_SCATTER(1)
        SK_FAM_SCATTER(2)
        SK_FAM_SCATTER(4)
        SK_FAM_SCATTER(8)
        SK_FAM_SCATTER(16)
#undef SK_FAM_SCATTER
        default:
            for (npy_intp i = 0; i < m; i++) {
                memcpy(o + i * os, src + i * isz, (size_t)isz);
            }
    }
}

/* Operand k's element at outer index idx[0 .. nd-2], inner index j. */
static inline char *
sk_fam_at(const sk_fam *F, int k, const npy_intp *idx, npy_intp j)
{
    const npy_intp *s = F->strides + (npy_intp)k * F->nd;
    char *p = F->data[k] + j * s[F->nd - 1];
    for (int d = 0; d < F->nd - 1; d++) {
        p += idx[d] * s[d];
    }
    return p;
}

static inline npy_intp
sk_fam_inner(const sk_fam *F, int k)
{
    return F->strides[(npy_intp)k * F->nd + F->nd - 1];
}

/* Whether operand k's rows are contiguous at `size` bytes per element. */
static inline int
sk_fam_contig(const sk_fam *F, int k, npy_intp size)
{
    return sk_fam_inner(F, k) == size;
}

/*
 * select_n's block once its indices are known to be in range: `idx` holds
 * them as uint8 (reach <= 256), `mask` is scratch for the steps. Cases are
 * applied from the last, in groups where their rows are contiguous.
 */
static void
sk_fam_block_n(const sk_fam *F, const npy_intp *idx, npy_intp j, npy_intp m,
               const uint8_t *ib, uint8_t *mask, char *ob)
{
    const int v0 = F->nconds, r = F->reach, vi = sk_size_index(F->isz);
    const char *ptrs[SK_FAM_GROUP];
    const char *init;
    npy_intp init_s;
    int k = r - 2;
    init = sk_fam_at(F, v0 + r - 1, idx, j);
    init_s = sk_fam_inner(F, v0 + r - 1);
    if (!sk_fam_contig(F, v0 + r - 1, F->isz)) { /* a scalar or strided last case */
        sk_fam_step(F, m, (const char *)ib, 1, 1, init, init_s, init, init_s, ob);
        init = ob;
        init_s = F->isz;
    }
    while (k >= 0) {
        const int g0 = k - SK_FAM_GROUP + 1 > 0 ? k - SK_FAM_GROUP + 1 : 0, g = k - g0 + 1;
        int fused = 1;
        for (int t = 0; t < g; t++) {
            ptrs[t] = sk_fam_at(F, v0 + g0 + t, idx, j);
            fused &= sk_fam_contig(F, v0 + g0 + t, F->isz);
        }
        if (fused) {
            F->groups->n[vi](m, g, ib, g0, ptrs, init, ob);
        }
        else {
            for (int t = g - 1; t >= 0; t--) {
                sk_fam_w1_mask(m, (const char *)ib, 1, (uint64_t)(g0 + t), mask);
                sk_fam_step(F, m, (const char *)mask, 1, 1, ptrs[t],
                            sk_fam_inner(F, v0 + g0 + t), init, init_s, ob);
                init = ob;
                init_s = F->isz;
            }
        }
        init = ob;
        init_s = F->isz;
        k = g0 - 1;
    }
    if (init != ob) { /* one case: copy it */
        sk_fam_step(F, m, (const char *)ib, 1, 1, init, init_s, init, init_s, ob);
    }
}

/* select_cases' block: groups where bool conds and values are contiguous, else steps. */
static void
sk_fam_block_cases(const sk_fam *F, const npy_intp *idx, npy_intp j, npy_intp m, char *ob)
{
    const int n = F->n, v0 = F->nconds, vi = sk_size_index(F->isz);
    const char *cp[SK_FAM_GROUP], *ap[SK_FAM_GROUP];
    const char *init = sk_fam_at(F, v0 + n, idx, j);
    npy_intp init_s = sk_fam_inner(F, v0 + n);
    int k = n - 1;
    if (!F->grouped || !sk_fam_contig(F, v0 + n, F->isz)) { /* a scalar or strided default */
        sk_fam_step(F, m, sk_fam_at(F, k, idx, j), sk_fam_inner(F, k), F->csz[k],
                    sk_fam_at(F, v0 + k, idx, j), sk_fam_inner(F, v0 + k), init, init_s, ob);
        init = ob;
        init_s = F->isz;
        k--;
    }
    while (k >= 0) {
        const int g0 = k - SK_FAM_GROUP + 1 > 0 ? k - SK_FAM_GROUP + 1 : 0, g = k - g0 + 1;
        int fused = F->grouped;
        for (int t = 0; t < g; t++) {
            cp[t] = sk_fam_at(F, g0 + t, idx, j);
            ap[t] = sk_fam_at(F, v0 + g0 + t, idx, j);
            fused &= F->csz[g0 + t] == 1 && sk_fam_contig(F, g0 + t, 1) &&
                     sk_fam_contig(F, v0 + g0 + t, F->isz);
        }
        if (fused) {
            F->groups->cases[vi](m, g, cp, ap, init, ob);
        }
        else {
            for (int t = g - 1; t >= 0; t--) {
                sk_fam_step(F, m, cp[t], sk_fam_inner(F, g0 + t), F->csz[g0 + t], ap[t],
                            sk_fam_inner(F, v0 + g0 + t), init, init_s, ob);
                init = ob;
                init_s = F->isz;
            }
        }
        init = ob;
        init_s = F->isz;
        k = g0 - 1;
    }
}

/* The m elements of the block at (idx, j), whose first element has flat index `flat`. */
static void
sk_fam_block(sk_fam *F, const npy_intp *idx, npy_intp j, npy_intp m, npy_intp flat,
             uint8_t *mbuf, uint8_t *ibuf, char *obuf)
{
    const int out = F->nops - 1, v0 = F->nconds;
    const npy_intp isz = F->isz;
    char *op = sk_fam_at(F, out, idx, j);
    const npy_intp os = sk_fam_inner(F, out);
    /* a strided out is built in obuf, then scattered; a one-element block (items larger
     * than obuf come one per block) is written in place whatever its stride */
    char *ob = os == isz || m == 1 ? op : obuf;
#define SK_FAM_VAL(k) sk_fam_at(F, v0 + (k), idx, j), sk_fam_inner(F, v0 + (k))

    if (!F->is_n) {
        sk_fam_block_cases(F, idx, j, m, ob);
    }
    else {
        const char *w = sk_fam_at(F, 0, idx, j);
        const npy_intp ws = sk_fam_inner(F, 0), wsz = F->csz[0];
        if (F->which_bool) {
            sk_fam_step(F, m, w, ws, wsz, SK_FAM_VAL(1), SK_FAM_VAL(0), ob);
        }
        else {
            if (SK_LOAD(F->bad) != SK_FAM_NO_BAD) {
                return; /* another block has failed: the call raises */
            }
            const uint64_t lim = (uint64_t)F->reach;
            const int narrow = F->grouped && F->reach <= 256;
            const uint64_t mx = narrow ? F->groups->narrow[sk_size_index(wsz)](m, w, ws, ibuf)
                                       : sk_fam_max(wsz, m, w, ws);
            if (mx >= lim) {
                const npy_intp at = flat + sk_fam_first(wsz, m, w, ws, lim);
                if (at < SK_LOAD(F->bad)) {
                    SK_STORE(F->bad, at); /* a race keeps one of the bad positions */
                }
                return;
            }
            const int r = F->reach;
            if (narrow) {
                sk_fam_block_n(F, idx, j, m, ibuf, mbuf, ob);
            }
            else if (r == 1) {
                sk_fam_step(F, m, w, ws, wsz, SK_FAM_VAL(0), SK_FAM_VAL(0), ob);
            }
            else {
                sk_fam_mask(wsz, m, w, ws, (uint64_t)(r - 2), mbuf);
                sk_fam_step(F, m, (const char *)mbuf, 1, 1, SK_FAM_VAL(r - 2),
                            SK_FAM_VAL(r - 1), ob);
                for (int k = r - 3; k >= 0; k--) {
                    sk_fam_mask(wsz, m, w, ws, (uint64_t)k, mbuf);
                    sk_fam_step(F, m, (const char *)mbuf, 1, 1, SK_FAM_VAL(k), ob, isz, ob);
                }
            }
        }
    }
#undef SK_FAM_VAL
    if (ob != op) {
        sk_fam_scatter(m, ob, op, os, isz);
    }
}

/*
 * The job's loop. The job is one flat dimension of F->total elements whose
 * cond "pointer" is (char *)F + flat index (stride 1) and whose loop_arg is
 * F: sk_run_rows hands each thread its range [start, start + count) that way,
 * through the pool's ordinary interface.
 */
static void
sk_fam_loop(npy_intp count, const char *c, npy_intp cs, const char *a, npy_intp as,
            const char *b, npy_intp bs, char *o, npy_intp os, npy_intp arg)
{
    sk_fam *F = (sk_fam *)(intptr_t)arg;
    const npy_intp start = (npy_intp)(c - (const char *)F);
    uint8_t mbuf[SK_FAM_BLOCK_MAX], ibuf[SK_FAM_BLOCK_MAX];
    union {
        char bytes[SK_FAM_BLOCK_BYTES];
        uint64_t align_[SK_FAM_BLOCK_BYTES / 8];
    } obuf;
    npy_intp idx[SK_MAXDIMS];
    (void)cs, (void)a, (void)as, (void)b, (void)bs, (void)o, (void)os;

    const int nd = F->nd;
    const npy_intp inner = F->shape[nd - 1], B = F->block;
    npy_intp q = start / inner, r = start % inner;
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = q % F->shape[d];
        q /= F->shape[d];
    }
    npy_intp flat = start, remaining = count;
    while (remaining > 0) {
        const npy_intp seg = inner - r < remaining ? inner - r : remaining;
        for (npy_intp j = r; j < r + seg; j += B) {
            const npy_intp m = r + seg - j < B ? r + seg - j : B;
            sk_fam_block(F, idx, j, m, flat, mbuf, ibuf, obuf.bytes);
            flat += m;
        }
        remaining -= seg;
        r = 0;
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < F->shape[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* The call                                                                  */
/* ------------------------------------------------------------------------ */

/* out has the output's shape (the core has checked it). */
static int
sk_fam_out_shape(PyArrayObject *out, int nd, const npy_intp *dims)
{
    int same = PyArray_NDIM(out) == nd;
    for (int d = 0; same && d < nd; d++) {
        same = PyArray_DIMS(out)[d] == dims[d];
    }
    if (!same) {
        PyErr_SetString(PyExc_ValueError,
                        "internal error: out does not have the output shape");
        return -1;
    }
    return 0;
}

/* Operand k's stride along output axis d (0 where it is broadcast). */
static inline npy_intp
sk_fam_stride(const sk_fam *F, int k, int d)
{
    return F->bstrides[(npy_intp)k * F->bnd + d];
}

/*
 * Each of ops[0 .. nin-1] placed in the output shape the core decided (nd, dims),
 * right-aligned as NumPy broadcasts, by the select kernel's own sk_place: its
 * strides on the output's axes into F->bstrides (allocated here, [nops][nd]), 0
 * where it is broadcast (a Python scalar's 0-d array is read again and again,
 * never made full size). out's row is filled by sk_fam_out_strides once out is
 * known.
 */
static int
sk_fam_place(sk_fam *F, PyArrayObject **ops, int nin, int nd, const npy_intp *dims)
{
    const sk_dims right = {.kept = -1};
    F->bnd = nd;
    F->bstrides = PyMem_Calloc((size_t)F->nops * (size_t)(nd > 0 ? nd : 1), sizeof(npy_intp));
    if (F->bstrides == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int k = 0; k < nin; k++) {
        if (sk_place(PyArray_NDIM(ops[k]), PyArray_DIMS(ops[k]), PyArray_STRIDES(ops[k]),
                     &right, nd, dims, "an operand", F->bstrides + (npy_intp)k * nd) < 0) {
            return -1;
        }
    }
    return 0;
}

/* out's row of F->bstrides (out has the output's shape). */
static void
sk_fam_out_strides(sk_fam *F, PyArrayObject *out, int nd, const npy_intp *dims)
{
    for (int d = 0; d < nd; d++) {
        F->bstrides[(npy_intp)(F->nops - 1) * nd + d] =
            dims[d] == 1 ? 0 : PyArray_STRIDES(out)[d];
    }
}

/*
 * Axes in the output's memory order (largest |stride| first, stable),
 * size-1 axes dropped, neighbours that every operand steps through as one
 * coalesced. Fills F->nd, F->shape, F->strides (allocated here).
 */
static int
sk_fam_layout(sk_fam *F, PyArrayObject **ops, int nd, const npy_intp *dims)
{
    int perm[SK_MAXDIMS], m = 0;
    PyArrayObject *out = ops[F->nops - 1];
    for (int d = 0; d < nd; d++) {
        if (dims[d] != 1) {
            perm[m++] = d;
        }
    }
    for (int i = 1; i < m; i++) { /* insertion sort: stable, nd is small */
        const int p = perm[i];
        const npy_intp s = PyArray_STRIDES(out)[p] < 0 ? -PyArray_STRIDES(out)[p]
                                                        : PyArray_STRIDES(out)[p];
        int j = i - 1;
        while (j >= 0) {
            npy_intp t = PyArray_STRIDES(out)[perm[j]];
            t = t < 0 ? -t : t;
            if (t >= s) {
                break;
            }
            perm[j + 1] = perm[j];
            j--;
        }
        perm[j + 1] = p;
    }
    const int snd = m > 0 ? m : 1;
    F->strides = PyMem_Malloc(sizeof(npy_intp) * (size_t)F->nops * (size_t)snd);
    if (F->strides == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (m == 0) { /* 0-d or all size 1: one element */
        F->nd = 1;
        F->shape[0] = 1;
        for (int k = 0; k < F->nops; k++) {
            F->strides[k] = 0;
        }
        return 0;
    }
    /* coalesce into the first axes of F->strides, laid out [k][m] for now */
    int out_nd = 0;
    for (int i = 0; i < m; i++) {
        const int d = perm[i];
        int merge = out_nd > 0;
        for (int k = 0; merge && k < F->nops; k++) {
            const npy_intp prev = F->strides[(npy_intp)k * m + out_nd - 1];
            merge = prev == sk_fam_stride(F, k, d) * dims[d];
        }
        if (merge) {
            F->shape[out_nd - 1] *= dims[d];
            for (int k = 0; k < F->nops; k++) {
                F->strides[(npy_intp)k * m + out_nd - 1] = sk_fam_stride(F, k, d);
            }
        }
        else {
            F->shape[out_nd] = dims[d];
            for (int k = 0; k < F->nops; k++) {
                F->strides[(npy_intp)k * m + out_nd] = sk_fam_stride(F, k, d);
            }
            out_nd++;
        }
    }
    /* compact to [k][out_nd] */
    for (int k = 0; k < F->nops; k++) {
        for (int d = 0; d < out_nd; d++) {
            F->strides[(npy_intp)k * out_nd + d] = F->strides[(npy_intp)k * m + d];
        }
    }
    F->nd = out_nd;
    return 0;
}

/* Typed loops need every value naturally aligned (8 bytes for wider ones), conds too. */
static int
sk_fam_needs_generic(const sk_fam *F)
{
    const int vi = sk_size_index(F->isz);
    if (vi < 0) {
        return 1;
    }
    const uintptr_t valign = (uintptr_t)(F->isz > 8 ? 8 : F->isz) - 1;
    for (int k = 0; k < F->nops; k++) {
        const uintptr_t align = k < F->nconds ? (uintptr_t)F->csz[k] - 1 : valign;
        uintptr_t bits = (uintptr_t)F->data[k];
        for (int d = 0; d < F->nd; d++) {
            bits |= (uintptr_t)F->strides[(npy_intp)k * F->nd + d];
        }
        if (F->is_n && k == 0 && !F->which_bool) {
            continue; /* which is read through memcpy */
        }
        if ((bits & align) != 0) {
            return 1;
        }
    }
    return 0;
}

/* The bytes the loops move per element (the pool's cost model). */
static npy_intp
sk_fam_bpe(const sk_fam *F)
{
    npy_intp bpe = 0;
    for (int k = 0; k < F->nops; k++) {
        int moves = 0;
        for (int d = 0; d < F->nd; d++) {
            moves |= F->strides[(npy_intp)k * F->nd + d] != 0;
        }
        if (moves) {
            bpe += k < F->nconds ? F->csz[k] : F->isz;
        }
    }
    return bpe > 0 ? bpe : 1;
}

/* Run F (laid out) on the pool. */
static void
sk_fam_run(sk_fam *F)
{
    sk_job J;
    memset(&J, 0, sizeof J);
    J.nd = 1;
    J.shape[0] = F->total;
    J.strides[OP_C][0] = 1; /* the flat index, see sk_fam_loop */
    for (int k = 0; k < 4; k++) {
        J.data[k] = (char *)F;
    }
    J.total = F->total;
    J.isz = F->isz;
    J.loop = sk_fam_loop;
    J.loop_arg = (npy_intp)(intptr_t)F;
    J.loop_name = F->is_n ? "select_n" : "select_cases";
    J.isa = F->table->name;
    J.bpe = sk_fam_bpe(F);
    J.max_threads = 0;
    J.on_openmp = 0;
    sk_execute(&J);
}

/* The value of which at flat index `at` (iteration order), as a Python int. */
static PyObject *
sk_fam_which_value(const sk_fam *F, PyArrayObject *which, npy_intp at)
{
    npy_intp idx[SK_MAXDIMS];
    const npy_intp inner = F->shape[F->nd - 1];
    npy_intp q = at / inner;
    for (int d = F->nd - 2; d >= 0; d--) {
        idx[d] = q % F->shape[d];
        q /= F->shape[d];
    }
    const char *p = sk_fam_at(F, 0, idx, at % inner);
    const int sgn = F->which_signed;
    switch (PyArray_ITEMSIZE(which)) {
#define SK_FAM_READ(SZ, ST, UT)                                                               \
        case SZ: {                                                                            \
            UT v;                                                                             \
            memcpy(&v, p, SZ);                                                                \
            return sgn ? PyLong_FromLongLong((long long)(ST)v)                                \
                       : PyLong_FromUnsignedLongLong((unsigned long long)v);                  \
        }
        SK_FAM_READ(1, int8_t, uint8_t)
        SK_FAM_READ(2, int16_t, uint16_t)
        SK_FAM_READ(4, int32_t, uint32_t)
        SK_FAM_READ(8, int64_t, uint64_t)
#undef SK_FAM_READ
        default: Py_RETURN_NONE;
    }
}

/*
 * The shared call: ops[0 .. nconds-1] the conds (or which), then nvals values,
 * then out (NULL: allocate). Returns a new reference to out, or NULL.
 */
static PyObject *
sk_fam_call(sk_fam *F, PyArrayObject **ops, PyArrayObject *out_arr, PyObject *shape)
{
    PyArrayObject *first = ops[F->nconds];
    PyArray_Descr *descr = PyArray_DESCR(first);
    int nd;
    npy_intp dims[SK_MAXDIMS];
    if (sk_parse_shape(shape, "shape", &nd, dims) < 0) {
        return NULL;
    }
    PyArrayObject *out = NULL, *target = NULL;
    PyObject *result = NULL;

    F->isz = descr->elsize;
    for (int k = 0; k < F->nconds; k++) {
        if (sk_check_dtypes(descr, PyArray_DESCR(ops[k])) < 0) {
            return NULL;
        }
        F->csz[k] = PyArray_ITEMSIZE(ops[k]);
    }
    if (sk_fam_place(F, ops, F->nconds + F->nvals, nd, dims) < 0) {
        return NULL;
    }
    for (int k = F->nconds; k < F->nconds + F->nvals; k++) {
        if (PyArray_ITEMSIZE(ops[k]) != F->isz) {
            PyErr_Format(PyExc_TypeError,
                         "internal error: the values differ in item size (%R and %R)",
                         (PyObject *)descr, (PyObject *)PyArray_DESCR(ops[k]));
            return NULL;
        }
    }
    if (out_arr != NULL) {
        if (sk_fam_out_shape(out_arr, nd, dims) < 0) {
            return NULL;
        }
        if (PyDataType_REFCHK(PyArray_DESCR(out_arr)) || PyArray_ITEMSIZE(out_arr) != F->isz) {
            PyErr_Format(PyExc_TypeError, "internal error: out has dtype %R, the values %R",
                         (PyObject *)PyArray_DESCR(out_arr), (PyObject *)descr);
            return NULL;
        }
        if (PyArray_FailUnlessWriteable(out_arr, "out") < 0) {
            return NULL;
        }
        Py_INCREF(out_arr);
        out = out_arr;
    }
    else {
        Py_INCREF(descr);
        out = (PyArrayObject *)sk_alloc_array(descr, nd, dims, NULL);
        if (out == NULL) {
            return NULL;
        }
    }
    npy_intp total = 1;
    for (int d = 0; d < nd; d++) {
        total *= dims[d];
    }
    if (total == 0) {
        return (PyObject *)out;
    }

    /*
     * out overlapping an input (even as the very same array: a later step
     * reads an input the earlier ones have overwritten): compute into a fresh
     * array, then copy.
     */
    target = out;
    int temp = 0;
    for (int k = 0; out_arr != NULL && !temp && k < F->nconds + F->nvals; k++) {
        npy_intp in_strides[SK_MAXDIMS], out_strides[SK_MAXDIMS];
        for (int d = 0; d < nd; d++) {
            in_strides[d] = dims[d] == 1 ? 0 : sk_fam_stride(F, k, d);
            out_strides[d] = dims[d] == 1 ? 0 : PyArray_STRIDES(out)[d];
        }
        temp = sk_overlap(PyArray_BYTES(ops[k]), in_strides, PyArray_ITEMSIZE(ops[k]),
                          PyArray_BYTES(out), out_strides, F->isz, nd, dims) != 0;
    }
    if (temp) {
        Py_INCREF(descr);
        target = (PyArrayObject *)sk_alloc_array(descr, nd, dims, NULL);
        if (target == NULL) {
            Py_DECREF(out);
            return NULL;
        }
    }
    ops[F->nops - 1] = target;
    sk_fam_out_strides(F, target, nd, dims);

    F->total = total;
    F->data = PyMem_Malloc(sizeof(char *) * (size_t)F->nops);
    if (F->data == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int k = 0; k < F->nops; k++) {
        F->data[k] = PyArray_BYTES(ops[k]);
    }
    if (sk_fam_layout(F, ops, nd, dims) < 0) {
        goto done;
    }
    F->table = sk_loops_current();
    F->groups = sk_fam_groups_current();
    F->generic = sk_fam_needs_generic(F);
    F->grouped = !F->generic && sk_size_index(F->isz) <= 3;
    {
        const npy_intp b = SK_FAM_BLOCK_BYTES / F->isz;
        F->block = b < 1 ? 1 : b > SK_FAM_BLOCK_MAX ? SK_FAM_BLOCK_MAX : b;
    }
    F->bad = SK_FAM_NO_BAD;
    sk_fam_run(F);
    if (F->bad != SK_FAM_NO_BAD) {
        PyObject *value = sk_fam_which_value(F, ops[0], F->bad);
        if (value != NULL) {
            PyErr_SetObject(PyExc_IndexError, value);
            Py_DECREF(value);
        }
        goto done;
    }
    if (target != out && PyArray_CopyInto(out, target) < 0) {
        goto done;
    }
    Py_INCREF(out);
    result = (PyObject *)out;
done:
    if (target != out) {
        Py_DECREF(target);
    }
    Py_DECREF(out);
    return result;
}

/* Whether select_cases reads x as it is: an ndarray (a condition: of NumPy's bool or
 * integer types, nonzero is true in either byte order; others, such as float or
 * ml_dtypes' int4, the caller converts). */
static int
sk_fam_plain(PyObject *x, int cond)
{
    if (!PyArray_Check(x)) {
        return 0;
    }
    const int t = PyArray_DESCR((PyArrayObject *)x)->type_num;
    return !cond || PyTypeNum_ISBOOL(t) || PyTypeNum_ISINTEGER(t);
}

/* A tuple (or list) of at least one operand. An item the kernel does not read as it
 * is (sk_fam_plain) is no error: *plain becomes 0, and the caller returns
 * NotImplemented. */
static PyObject *
sk_fam_seq(PyObject *obj, const char *name, int *plain, int conds)
{
    PyObject *seq = PySequence_Fast(obj, "");
    if (seq == NULL) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of numpy.ndarray, got %s", name,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > INT_MAX / 4) {
        PyErr_Format(PyExc_ValueError, "%s must hold at least one array, got %zd", name, n);
        Py_DECREF(seq);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!sk_fam_plain(PySequence_Fast_GET_ITEM(seq, i), conds)) {
            *plain = 0;
            break;
        }
    }
    return seq;
}

static int
sk_fam_out(PyObject *obj, PyArrayObject **out)
{
    if (obj == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "out must be a numpy.ndarray, got %s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = (PyArrayObject *)obj;
    return 0;
}

static void
sk_fam_free(sk_fam *F, PyArrayObject **ops)
{
    PyMem_Free(F->data);
    PyMem_Free(F->strides);
    PyMem_Free(F->csz);
    PyMem_Free(F->bstrides);
    PyMem_Free(ops);
}

PyObject *
sk_select_n(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "select_n() takes 4 arguments (which, cases, out, shape)");
        return NULL;
    }
    PyArrayObject *out_arr;
    if (!PyArray_Check(args[0])) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (sk_fam_out(args[2], &out_arr) < 0) {
        return NULL;
    }
    PyArrayObject *which = (PyArrayObject *)args[0];
    PyArray_Descr *wd = PyArray_DESCR(which);
    const int is_bool = wd->type_num == NPY_BOOL;
    if (!is_bool && !PyTypeNum_ISINTEGER(wd->type_num)) {
        PyErr_Format(PyExc_TypeError, "which must be bool or an integer dtype, got %R",
                     (PyObject *)wd);
        return NULL;
    }
    if (!is_bool && !PyArray_ISNBO(wd->byteorder)) {
        Py_RETURN_NOTIMPLEMENTED; /* the caller swaps it */
    }
    int plain = 1;
    PyObject *seq = sk_fam_seq(args[1], "cases", &plain, 0);
    if (seq == NULL) {
        return NULL;
    }
    if (!plain) {
        Py_DECREF(seq);
        Py_RETURN_NOTIMPLEMENTED;
    }
    const int n = (int)PySequence_Fast_GET_SIZE(seq);
    if (is_bool && n != 2) {
        PyErr_Format(PyExc_ValueError, "a bool which needs exactly 2 cases, got %d", n);
        Py_DECREF(seq);
        return NULL;
    }
    sk_fam F;
    memset(&F, 0, sizeof F);
    F.is_n = 1;
    F.n = n;
    F.which_bool = is_bool;
    F.which_signed = PyTypeNum_ISSIGNED(wd->type_num);
    F.nconds = 1;
    F.nvals = n;
    F.nops = n + 2;
    /* the indices which's type can hold: n, or fewer when n exceeds its range */
    const npy_intp wsz = PyArray_ITEMSIZE(which);
    const int bits = (int)(8 * wsz) - (F.which_signed ? 1 : 0);
    F.reach = bits >= 31 || ((npy_intp)1 << bits) >= n ? n : (int)((npy_intp)1 << bits);
    F.csz = PyMem_Malloc(sizeof(npy_intp));
    PyArrayObject **ops = PyMem_Malloc(sizeof(PyArrayObject *) * (size_t)F.nops);
    if (F.csz == NULL || ops == NULL) {
        sk_fam_free(&F, ops);
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    ops[0] = which;
    for (int k = 0; k < n; k++) {
        ops[1 + k] = (PyArrayObject *)PySequence_Fast_GET_ITEM(seq, k);
    }
    ops[n + 1] = NULL;
    PyObject *res = sk_fam_call(&F, ops, out_arr, args[3]);
    sk_fam_free(&F, ops);
    Py_DECREF(seq);
    return res;
}

PyObject *
sk_select_cases(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "select_cases() takes 5 arguments (conds, choices, default, out, shape)");
        return NULL;
    }
    PyArrayObject *out_arr;
    if (!sk_fam_plain(args[2], 0)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (sk_fam_out(args[3], &out_arr) < 0) {
        return NULL;
    }
    int plain = 1;
    PyObject *conds = sk_fam_seq(args[0], "conds", &plain, 1);
    if (conds == NULL) {
        return NULL;
    }
    PyObject *choices = plain ? sk_fam_seq(args[1], "choices", &plain, 0) : NULL;
    if (!plain) {
        Py_DECREF(conds);
        Py_XDECREF(choices);
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (choices == NULL) {
        Py_DECREF(conds);
        return NULL;
    }
    const int n = (int)PySequence_Fast_GET_SIZE(conds);
    if (PySequence_Fast_GET_SIZE(choices) != n) {
        PyErr_Format(PyExc_ValueError, "select_cases() needs as many choices as conds: %d, %zd",
                     n, PySequence_Fast_GET_SIZE(choices));
        Py_DECREF(conds);
        Py_DECREF(choices);
        return NULL;
    }
    sk_fam F;
    memset(&F, 0, sizeof F);
    F.n = n;
    F.nconds = n;
    F.nvals = n + 1;
    F.nops = 2 * n + 2;
    F.csz = PyMem_Malloc(sizeof(npy_intp) * (size_t)n);
    PyArrayObject **ops = PyMem_Malloc(sizeof(PyArrayObject *) * (size_t)F.nops);
    PyObject *res = NULL;
    if (F.csz == NULL || ops == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int k = 0; k < n; k++) {
        ops[k] = (PyArrayObject *)PySequence_Fast_GET_ITEM(conds, k);
        ops[n + k] = (PyArrayObject *)PySequence_Fast_GET_ITEM(choices, k);
    }
    ops[2 * n] = (PyArrayObject *)args[2];
    ops[2 * n + 1] = NULL;
    res = sk_fam_call(&F, ops, out_arr, args[4]);
done:
    sk_fam_free(&F, ops);
    Py_DECREF(conds);
    Py_DECREF(choices);
    return res;
}

/* ------------------------------------------------------------------------ */
/* apply_where's gather and scatter (family.py)                             */
/* ------------------------------------------------------------------------ */
/*
 *     apply_take(cond, x):        x's elements where cond is nonzero, 1-D, C order
 *     apply_put(cond, taken, base): a new array of cond's shape: taken's elements
 *                                  where cond is nonzero, in C order, and base's
 *                                  elsewhere (a 0-d base: that one value; a 1-D
 *                                  base: its elements in C order)
 *
 * what apply_where's f1 and f2 read and what their results are put into, in
 * one branchless pass each (np.flatnonzero, np.take and an assignment at the
 * positions are three passes, and boolean indexing branches on every element
 * of a random mask). Only C-contiguous, aligned, exact ndarrays of 1, 2, 4, 8
 * or 16-byte items without object references, a bool cond of the same shape:
 * anything else returns NotImplemented and family.py takes NumPy's route, with
 * the same result. Values move as raw bits (no dtype is interpreted).
 */

/* Whether `a` is an array these loops read as it is. */
static int
sk_apply_plain(PyObject *obj)
{
    if (!PyArray_CheckExact(obj)) {
        return 0;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    const npy_intp isz = PyArray_ITEMSIZE(a);
    return PyArray_IS_C_CONTIGUOUS(a) && PyArray_ISALIGNED(a) &&
           !PyDataType_REFCHK(PyArray_DESCR(a)) &&
           (isz == 1 || isz == 2 || isz == 4 || isz == 8 || isz == 16);
}

/* Whether `cond` is a C-contiguous bool array of `a`'s shape. */
static int
sk_apply_mask(PyObject *cond, PyArrayObject *a, int same_shape)
{
    if (!PyArray_CheckExact(cond)) {
        return 0;
    }
    PyArrayObject *c = (PyArrayObject *)cond;
    if (PyArray_TYPE(c) != NPY_BOOL || !PyArray_IS_C_CONTIGUOUS(c)) {
        return 0;
    }
    return !same_shape || (PyArray_NDIM(c) == PyArray_NDIM(a) &&
                           PyArray_CompareLists(PyArray_DIMS(c), PyArray_DIMS(a),
                                                PyArray_NDIM(a)));
}

/* The number of nonzero bytes of m[0:n]. */
static npy_intp
sk_apply_count(const npy_bool *m, npy_intp n)
{
    npy_intp count = 0;
    for (npy_intp i = 0; i < n; i++) {
        count += m[i] != 0;
    }
    return count;
}

typedef struct {
    uint64_t lo, hi;
} sk_apply_u128;

/* dst[k:count] = src[i] for each i >= i0 with m[i] != 0, from dst[k0]: the write is
 * unconditional and the index moves by the mask (no branch on the data),
 * stopping at count. */
#define SK_APPLY_TAKE(T)                                                                   \
    {                                                                                      \
        const T *s = (const T *)src;                                                       \
        T *d = (T *)dst;                                                                   \
        npy_intp k = k0;                                                                   \
        for (npy_intp i = i0; i < n && k < count; i++) {                                   \
            d[k] = s[i];                                                                   \
            k += m[i] != 0;                                                                \
        }                                                                                  \
    }

/* out[i] = m[i] ? t[k++] : (fill ? b[0] : b[j++]) for i >= i0, from t[k0], b[j0];
 * nt and nb are at least 1 here. With a fill value, up to the last true
 * element k < nt holds wherever t[k] is read (a true element is still ahead),
 * and after it every element is the fill. With two sides the reads are
 * clamped to the last element (the value read is used only where the index is
 * in range), so that neither loop branches on the data. */
#define SK_APPLY_PUT(T)                                                                    \
    {                                                                                      \
        const T *tv = (const T *)t;                                                        \
        const T *bv = (const T *)b;                                                        \
        T *o = (T *)out;                                                                   \
        npy_intp k = k0, j = j0, i = i0;                                                   \
        if (fill) {                                                                        \
            const T f = bv[0];                                                             \
            npy_intp last = n - 1;                                                         \
            while (last >= i && !m[last]) {                                                \
                last--;                                                                    \
            }                                                                              \
            for (; i <= last; i++) {                                                       \
                const npy_intp on = m[i] != 0;                                             \
                const T x = tv[k];                                                         \
                o[i] = on ? x : f;                                                         \
                k += on;                                                                   \
            }                                                                              \
            for (; i < n; i++) {                                                           \
                o[i] = f;                                                                  \
            }                                                                              \
        }                                                                                  \
        else {                                                                             \
            const npy_intp tl = nt - 1, bl = nb - 1;                                       \
            for (; i < n; i++) {                                                           \
                const npy_intp on = m[i] != 0;                                             \
                const T x = tv[k < tl ? k : tl];                                           \
                const T y = bv[j < bl ? j : bl];                                           \
                o[i] = on ? x : y;                                                         \
                k += on;                                                                   \
                j += 1 - on;                                                               \
            }                                                                              \
        }                                                                                  \
    }

/*
 * AVX-512 (where select's loops use it): 64 mask bytes become a mask register
 * in one test, and each vector of 4 or 8-byte items is compressed (take) or
 * expanded (put) in a register, then stored whole. The blocks run only while
 * a whole block's stores and loads stay inside the arrays (64 items of room
 * left in each); the scalar loops above finish from where they stopped. The
 * register forms, not the memory forms of compress and expand: those are
 * microcoded on some CPUs (AMD Zen 4).
 */
#if SK_FAM_HAVE_X86_COPIES && defined(__x86_64__) /* (implied: named for the guard check) */
#include <immintrin.h>
#define SK_APPLY_AVX512 __attribute__((target("avx512f,avx512bw")))

#define SK_APPLY_VECTOR_LOOPS(W, LANES, MT, EPI)                                           \
    SK_APPLY_AVX512 static void sk_apply_take##W##_avx512(                                 \
        const npy_bool *m, npy_intp n, const char *src, char *dst, npy_intp count,         \
        npy_intp *ip, npy_intp *kp)                                                        \
    {                                                                                      \
        npy_intp i = 0, k = 0;                                                             \
        for (; i + 64 <= n && count - k >= 64; i += 64) {                                  \
            const __m512i mv = _mm512_loadu_si512((const void *)(m + i));                  \
            const uint64_t bits = (uint64_t)_mm512_test_epi8_mask(mv, mv);                 \
            for (int g = 0; g < 64 / LANES; g++) {                                         \
                const MT km = (MT)(bits >> (g * LANES));                                   \
                const __m512i v =                                                          \
                    _mm512_loadu_si512((const void *)(src + (i + g * LANES) * W));         \
                _mm512_storeu_si512((void *)(dst + k * W),                                 \
                                    _mm512_maskz_compress_##EPI(km, v));                   \
                k += __builtin_popcount((unsigned)km);                                     \
            }                                                                              \
        }                                                                                  \
        *ip = i;                                                                           \
        *kp = k;                                                                           \
    }                                                                                      \
    SK_APPLY_AVX512 static void sk_apply_put##W##_avx512(                                  \
        const npy_bool *m, npy_intp n, const char *t, npy_intp nt, const char *b,          \
        npy_intp nb, int fill, char *out, npy_intp *ip, npy_intp *kp, npy_intp *jp)        \
    {                                                                                      \
        npy_intp i = 0, k = 0, j = 0;                                                      \
        const __m512i fv = _mm512_maskz_loadu_##EPI((MT)1, (const void *)b);               \
        const __m512i fills = _mm512_permutexvar_##EPI(_mm512_setzero_si512(), fv);        \
        for (; i + 64 <= n && nt - k >= 64 && (fill || nb - j >= 64); i += 64) {           \
            const __m512i mv = _mm512_loadu_si512((const void *)(m + i));                  \
            const uint64_t bits = (uint64_t)_mm512_test_epi8_mask(mv, mv);                 \
            for (int g = 0; g < 64 / LANES; g++) {                                         \
                const MT km = (MT)(bits >> (g * LANES));                                   \
                const int on = __builtin_popcount((unsigned)km);                           \
                const __m512i tv = _mm512_loadu_si512((const void *)(t + k * W));          \
                __m512i base = fills;                                                      \
                if (!fill) {                                                               \
                    const __m512i bv = _mm512_loadu_si512((const void *)(b + j * W));      \
                    base = _mm512_maskz_expand_##EPI((MT)~km, bv);                         \
                    j += LANES - on;                                                       \
                }                                                                          \
                _mm512_storeu_si512((void *)(out + (i + g * LANES) * W),                   \
                                    _mm512_mask_expand_##EPI(base, km, tv));               \
                k += on;                                                                   \
            }                                                                              \
        }                                                                                  \
        *ip = i;                                                                           \
        *kp = k;                                                                           \
        *jp = j;                                                                           \
    }

SK_APPLY_VECTOR_LOOPS(8, 8, __mmask8, epi64)
SK_APPLY_VECTOR_LOOPS(4, 16, __mmask16, epi32)
#undef SK_APPLY_VECTOR_LOOPS
#endif

#if SK_FAM_HAVE_X86_COPIES
/* Whether the AVX-512 blocks run for items of isz bytes (defined only where they exist:
 * elsewhere nothing calls it, and an unused static function fails -Werror builds). */
static int
sk_apply_vector(npy_intp isz)
{
    return (isz == 4 || isz == 8) && sk_isa_current() == SK_ISA_AVX512;
}
#endif

static void
sk_apply_take_loop(const npy_bool *m, npy_intp n, const char *src, char *dst, npy_intp count,
                   npy_intp isz)
{
    npy_intp i0 = 0, k0 = 0;
#if SK_FAM_HAVE_X86_COPIES
    if (sk_apply_vector(isz)) {
        if (isz == 8) {
            sk_apply_take8_avx512(m, n, src, dst, count, &i0, &k0);
        }
        else {
            sk_apply_take4_avx512(m, n, src, dst, count, &i0, &k0);
        }
    }
#endif
    switch (isz) {
    case 1: SK_APPLY_TAKE(uint8_t) break;
    case 2: SK_APPLY_TAKE(uint16_t) break;
    case 4: SK_APPLY_TAKE(uint32_t) break;
    case 8: SK_APPLY_TAKE(uint64_t) break;
    default: SK_APPLY_TAKE(sk_apply_u128) break;
    }
}

static void
sk_apply_put_loop(const npy_bool *m, npy_intp n, const char *t, npy_intp nt, const char *b,
                  npy_intp nb, int fill, char *out, npy_intp isz)
{
    npy_intp i0 = 0, k0 = 0, j0 = 0;
#if SK_FAM_HAVE_X86_COPIES
    if (sk_apply_vector(isz)) {
        if (isz == 8) {
            sk_apply_put8_avx512(m, n, t, nt, b, nb, fill, out, &i0, &k0, &j0);
        }
        else {
            sk_apply_put4_avx512(m, n, t, nt, b, nb, fill, out, &i0, &k0, &j0);
        }
    }
#endif
    switch (isz) {
    case 1: SK_APPLY_PUT(uint8_t) break;
    case 2: SK_APPLY_PUT(uint16_t) break;
    case 4: SK_APPLY_PUT(uint32_t) break;
    case 8: SK_APPLY_PUT(uint64_t) break;
    default: SK_APPLY_PUT(sk_apply_u128) break;
    }
}

/* Above this many elements the loops run without the GIL. */
#define SK_APPLY_NOGIL 32768

PyObject *
sk_apply_take(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "apply_take() takes 2 arguments (cond, x)");
        return NULL;
    }
    if (!sk_apply_plain(args[1]) || !sk_apply_mask(args[0], (PyArrayObject *)args[1], 1)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyArrayObject *c = (PyArrayObject *)args[0], *x = (PyArrayObject *)args[1];
    const npy_intp n = PyArray_SIZE(c);
    const npy_bool *m = (const npy_bool *)PyArray_DATA(c);
    npy_intp count = sk_apply_count(m, n);
    PyArray_Descr *d = PyArray_DESCR(x);
    Py_INCREF(d);
    PyObject *r = PyArray_NewFromDescr(&PyArray_Type, d, 1, &count, NULL, NULL, 0, NULL);
    if (r == NULL) {
        return NULL;
    }
    const char *src = PyArray_DATA(x);
    char *dst = PyArray_DATA((PyArrayObject *)r);
    const npy_intp isz = PyArray_ITEMSIZE(x);
    if (n > SK_APPLY_NOGIL) {
        Py_BEGIN_ALLOW_THREADS
        sk_apply_take_loop(m, n, src, dst, count, isz);
        Py_END_ALLOW_THREADS
    }
    else {
        sk_apply_take_loop(m, n, src, dst, count, isz);
    }
    return r;
}

PyObject *
sk_apply_put(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "apply_put() takes 3 arguments (cond, taken, base)");
        return NULL;
    }
    if (!sk_apply_plain(args[1]) || !sk_apply_plain(args[2]) ||
        !sk_apply_mask(args[0], NULL, 0)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyArrayObject *c = (PyArrayObject *)args[0];
    PyArrayObject *t = (PyArrayObject *)args[1], *b = (PyArrayObject *)args[2];
    const int one = PyArray_NDIM(b) == 0;
    if (PyArray_NDIM(t) != 1 || (!one && PyArray_NDIM(b) != 1) ||
        !PyArray_EquivTypes(PyArray_DESCR(t), PyArray_DESCR(b))) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    const npy_intp n = PyArray_SIZE(c);
    const npy_bool *m = (const npy_bool *)PyArray_DATA(c);
    const npy_intp nt = sk_apply_count(m, n);
    const npy_intp nb = one ? 1 : n - nt;
    if (PyArray_DIM(t, 0) != nt || (!one && PyArray_DIM(b, 0) != nb)) {
        Py_RETURN_NOTIMPLEMENTED; /* not the mask's counts: NumPy's route says why */
    }
    PyArray_Descr *d = PyArray_DESCR(t);
    Py_INCREF(d);
    PyObject *r = PyArray_NewFromDescr(&PyArray_Type, d, PyArray_NDIM(c), PyArray_DIMS(c), NULL,
                                       NULL, 0, NULL);
    if (r == NULL || n == 0) {
        return r;
    }
    char *out = PyArray_DATA((PyArrayObject *)r);
    const npy_intp isz = PyArray_ITEMSIZE(t);
    if (nt == 0 || nb == 0) { /* one side everywhere: nothing to clamp against */
        const char *src = nt == 0 ? PyArray_DATA(b) : PyArray_DATA(t);
        if (nt == 0 && one) {
            for (npy_intp i = 0; i < n; i++) {
                memcpy(out + i * isz, src, (size_t)isz);
            }
        }
        else {
            memcpy(out, src, (size_t)(n * isz));
        }
        return r;
    }
    if (n > SK_APPLY_NOGIL) {
        Py_BEGIN_ALLOW_THREADS
        sk_apply_put_loop(m, n, PyArray_DATA(t), nt, PyArray_DATA(b), nb, one, out, isz);
        Py_END_ALLOW_THREADS
    }
    else {
        sk_apply_put_loop(m, n, PyArray_DATA(t), nt, PyArray_DATA(b), nb, one, out, isz);
    }
    return r;
}
