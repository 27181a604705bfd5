/*
 * sk_loops_typed.h: the loops for one cond type and one value type, compiled
 * for one instruction set. A template: sk_loops_isa.h includes it once per
 * pair with
 *
 *     CT, SK_CN    the cond type (uint8_t .. uint64_t) and its name (c1 .. c8);
 *     SK_CV        the value name of the cond's size (v1 .. v8: its gather loop)
 *     VT, SK_VN    the value type (uint8_t .. uint64_t) and its name (v1 .. v8)
 *
 * defined, and undefines them afterwards. SK_NAME(kind) gives this pair's
 * function of a kind, e.g. cc_c1_v4_avx2.
 *
 * Every loop is branchless: the value is chosen with a compare and a blend
 * (or a mask), so a random mask costs nothing.
 */

#define SK_NAME(kind) SK_CAT(SK_CAT(SK_CAT(kind, SK_CN), SK_VN), SK_ISA)

/*
 * One element. For item sizes <= 4 with conds <= 4 bytes the ternary on
 * loaded values vectorizes best (SSE2 compares); for wider operands the mask
 * form keeps the compiler from emitting a branch where the baseline ISA has no
 * 64-bit compare (a branch mispredicts on every other element of a random mask).
 */
static SK_TARGET inline VT
SK_NAME(sel)(CT c, VT x, VT y)
{
    if (sizeof(CT) <= 4 && sizeof(VT) <= 4) {
        return c != 0 ? x : y;
    }
    const VT m = (VT)0 - (VT)(c != 0);
    return (VT)((x & m) | (y & (VT)~m));
}

/* then, else contiguous. */
static SK_TARGET void
SK_NAME(cc)(npy_intp n, const char *c_, npy_intp cs, const char *a_, npy_intp as,
            const char *b_, npy_intp bs, char *o_, npy_intp os, npy_intp isz)
{
    const CT *SK_RESTRICT c = (const CT *)c_;
    const VT *SK_RESTRICT a = (const VT *)a_;
    const VT *SK_RESTRICT b = (const VT *)b_;
    VT *SK_RESTRICT o = (VT *)o_;
    (void)cs, (void)as, (void)bs, (void)os, (void)isz;
    SK_ALIGNED_FOR(i, n, o, o[i] = SK_NAME(sel)(c[i], a[i], b[i]);)
}

/* then a broadcast scalar, else contiguous. */
static SK_TARGET void
SK_NAME(sc)(npy_intp n, const char *c_, npy_intp cs, const char *a_, npy_intp as,
            const char *b_, npy_intp bs, char *o_, npy_intp os, npy_intp isz)
{
    const CT *SK_RESTRICT c = (const CT *)c_;
    const VT x = *(const VT *)a_;
    const VT *SK_RESTRICT b = (const VT *)b_;
    VT *SK_RESTRICT o = (VT *)o_;
    (void)cs, (void)as, (void)bs, (void)os, (void)isz;
    SK_ALIGNED_FOR(i, n, o, o[i] = SK_NAME(sel)(c[i], x, b[i]);)
}

/* then contiguous, else a broadcast scalar. */
static SK_TARGET void
SK_NAME(cs)(npy_intp n, const char *c_, npy_intp cs, const char *a_, npy_intp as,
            const char *b_, npy_intp bs, char *o_, npy_intp os, npy_intp isz)
{
    const CT *SK_RESTRICT c = (const CT *)c_;
    const VT *SK_RESTRICT a = (const VT *)a_;
    const VT y = *(const VT *)b_;
    VT *SK_RESTRICT o = (VT *)o_;
    (void)cs, (void)as, (void)bs, (void)os, (void)isz;
    SK_ALIGNED_FOR(i, n, o, o[i] = SK_NAME(sel)(c[i], a[i], y);)
}

/* then and else broadcast scalars. */
static SK_TARGET void
SK_NAME(ss)(npy_intp n, const char *c_, npy_intp cs, const char *a_, npy_intp as,
            const char *b_, npy_intp bs, char *o_, npy_intp os, npy_intp isz)
{
    const CT *SK_RESTRICT c = (const CT *)c_;
    const VT x = *(const VT *)a_, y = *(const VT *)b_;
    VT *SK_RESTRICT o = (VT *)o_;
    (void)cs, (void)as, (void)bs, (void)os, (void)isz;
    SK_ALIGNED_FOR(i, n, o, o[i] = SK_NAME(sel)(c[i], x, y);)
}

/* out is then: o[i] = c[i] ? o[i] : b[i] (b contiguous, or a scalar when bs == 0). */
static SK_TARGET void
SK_NAME(ia)(npy_intp n, const char *c_, npy_intp cs, const char *a_, npy_intp as,
            const char *b_, npy_intp bs, char *o_, npy_intp os, npy_intp isz)
{
    const CT *SK_RESTRICT c = (const CT *)c_;
    VT *SK_RESTRICT o = (VT *)o_;
    (void)cs, (void)a_, (void)as, (void)os, (void)isz;
    if (bs == 0) {
        const VT y = *(const VT *)b_;
        SK_ALIGNED_FOR(i, n, o, o[i] = SK_NAME(sel)(c[i], o[i], y);)
    }
    else {
        const VT *SK_RESTRICT b = (const VT *)b_;
        SK_ALIGNED_FOR(i, n, o, o[i] = SK_NAME(sel)(c[i], o[i], b[i]);)
    }
}

/* out is else: o[i] = c[i] ? a[i] : o[i] (a contiguous, or a scalar when as == 0). */
static SK_TARGET void
SK_NAME(ib)(npy_intp n, const char *c_, npy_intp cs, const char *a_, npy_intp as,
            const char *b_, npy_intp bs, char *o_, npy_intp os, npy_intp isz)
{
    const CT *SK_RESTRICT c = (const CT *)c_;
    VT *SK_RESTRICT o = (VT *)o_;
    (void)cs, (void)b_, (void)bs, (void)os, (void)isz;
    if (as == 0) {
        const VT x = *(const VT *)a_;
        SK_ALIGNED_FOR(i, n, o, o[i] = SK_NAME(sel)(c[i], x, o[i]);)
    }
    else {
        const VT *SK_RESTRICT a = (const VT *)a_;
        SK_ALIGNED_FOR(i, n, o, o[i] = SK_NAME(sel)(c[i], a[i], o[i]);)
    }
}

/* Any strides, any aliasing (no restrict): one element at a time. */
static SK_TARGET void
SK_NAME(st)(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as,
            const char *b, npy_intp bs, char *o, npy_intp os, npy_intp isz)
{
    (void)isz;
    for (npy_intp i = 0; i < n; i++) {
        const VT x = *(const VT *)a, y = *(const VT *)b;
        const VT m = (VT)0 - (VT)(*(const CT *)c != 0);
        *(VT *)o = (VT)((x & m) | (y & (VT)~m));
        c += cs, a += as, b += bs, o += os;
    }
}

/*
 * One pass over cond, then and else that share a small step k (2, 3 or 4
 * elements, cond at its own width) into a contiguous out: a loop per k with the
 * step known at compile time, which the vectorizer turns into wide loads and
 * the instruction set's deinterleaving permutes (vpermt2 on AVX-512, shuffles
 * and packs on AVX2 and SSE2, plain loads and stores where it has no vectors),
 * so no element goes through a buffer. sk_pick_loop picks it for those strides
 * only; any others (the C harness tries them) take the element loop.
 */
#define SK_STEP_BODY(K) SK_ALIGNED_FOR(i, n, o, o[i] = SK_NAME(sel)(c[K * i], a[K * i], b[K * i]);)
static SK_TARGET void
SK_NAME(sk)(npy_intp n, const char *c_, npy_intp cs, const char *a_, npy_intp as,
            const char *b_, npy_intp bs, char *o_, npy_intp os, npy_intp isz)
{
    const npy_intp csz = (npy_intp)sizeof(CT), vsz = (npy_intp)sizeof(VT), k = as / vsz;
    if (os == vsz && bs == as && as == k * vsz && cs == k * csz && k >= 2 && k <= 4) {
        const CT *SK_RESTRICT c = (const CT *)c_;
        const VT *SK_RESTRICT a = (const VT *)a_;
        const VT *SK_RESTRICT b = (const VT *)b_;
        VT *SK_RESTRICT o = (VT *)o_;
        if (k == 2) {
            SK_STEP_BODY(2)
        }
        else if (k == 3) {
            SK_STEP_BODY(3)
        }
        else {
            SK_STEP_BODY(4)
        }
        return;
    }
    SK_NAME(st)(n, c_, cs, a_, as, b_, bs, o_, os, isz);
}
#undef SK_STEP_BODY

/*
 * Gather n elements of cond, then and else that share one step (in elements,
 * 2 or more; a reversed mixed-type loop does not vectorize, so step -1 goes
 * through the single-type gathers).
 */
static SK_TARGET void
SK_NAME(gather3)(npy_intp n, npy_intp step, const char *c, const char *a, const char *b,
                 CT *SK_RESTRICT cd, VT *SK_RESTRICT ad, VT *SK_RESTRICT bd)
{
    const CT *pc = (const CT *)c;
    const VT *pa = (const VT *)a, *pb = (const VT *)b;
    if (step == 2) {
        for (npy_intp i = 0; i < n; i++) {
            cd[i] = pc[2 * i], ad[i] = pa[2 * i], bd[i] = pb[2 * i];
        }
    }
    else {
        for (npy_intp i = 0; i < n; i++) {
            cd[i] = pc[i * step], ad[i] = pa[i * step], bd[i] = pb[i * step];
        }
    }
}

/*
 * Any strides, through L1-sized buffers: per block of elements, every strided
 * operand is gathered into a buffer (a broadcast then/else, stride 0, stays a
 * scalar), the vectorized contiguous loop runs on them, and a strided out is
 * scattered from its buffer. Operands that share a step are gathered in one
 * loop: their memory streams then stay in flight together, which is what
 * bounds the speed once they come from DRAM. A block's inputs are all read
 * before its output is written, and out is only ever the very same elements
 * as an input (a partial overlap goes through a temporary before this), so
 * the order is safe.
 */
static SK_TARGET void
SK_NAME(bst)(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as, const char *b,
             npy_intp bs, char *o, npy_intp os, npy_intp isz)
{
    enum { B = SK_BUFFER_BYTES / (sizeof(VT) > sizeof(CT) ? sizeof(VT) : sizeof(CT)) };
    CT cbuf[B];
    VT abuf[B], bbuf[B], obuf[B];
    const npy_intp csz = (npy_intp)sizeof(CT), vsz = (npy_intp)sizeof(VT);
    const int gc = cs != csz, ga = as != 0 && as != vsz, gb = bs != 0 && bs != vsz;
    const int all3 = gc && ga && gb && as == bs && as % vsz == 0 && as / vsz >= 2 &&
                     cs == as / vsz * csz;
    const int both = !all3 && ga && gb && as == bs;
    (void)isz;
    for (npy_intp start = 0; start < n; start += B) {
        const npy_intp m = n - start < B ? n - start : B;
        const char *cp = c + start * cs, *ap = a + start * as, *bp = b + start * bs;
        char *op = o + start * os;
        if (all3) {
            SK_NAME(gather3)(m, as / vsz, cp, ap, bp, cbuf, abuf, bbuf);
        }
        else {
            if (gc) {
                SK_CAT(SK_CAT(gather, SK_CV), SK_ISA)(m, cp, cs, (void *)cbuf);
            }
            if (both) {
                SK_CAT(SK_CAT(gather2, SK_VN), SK_ISA)(m, ap, bp, as, abuf, bbuf);
            }
            else {
                if (ga) {
                    SK_CAT(SK_CAT(gather, SK_VN), SK_ISA)(m, ap, as, abuf);
                }
                if (gb) {
                    SK_CAT(SK_CAT(gather, SK_VN), SK_ISA)(m, bp, bs, bbuf);
                }
            }
        }
        cp = gc ? (const char *)cbuf : cp;
        ap = ga ? (const char *)abuf : ap;
        bp = gb ? (const char *)bbuf : bp;
        /* the contiguous loops take restrict pointers: out in place goes through obuf */
        char *dst = os == vsz && op != ap && op != bp && op != cp ? op : (char *)obuf;
        if (as == 0) {
            if (bs == 0) {
                SK_NAME(ss)(m, cp, 0, ap, 0, bp, 0, dst, 0, 0);
            }
            else {
                SK_NAME(sc)(m, cp, 0, ap, 0, bp, 0, dst, 0, 0);
            }
        }
        else if (bs == 0) {
            SK_NAME(cs)(m, cp, 0, ap, 0, bp, 0, dst, 0, 0);
        }
        else {
            SK_NAME(cc)(m, cp, 0, ap, 0, bp, 0, dst, 0, 0);
        }
        if (dst != op) {
            SK_CAT(SK_CAT(scatter, SK_VN), SK_ISA)(m, obuf, op, os);
        }
    }
}

#undef SK_NAME
#undef CT
#undef SK_CV
#undef SK_CN
#undef VT
#undef SK_VN
