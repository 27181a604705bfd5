/*
 * sk_loops.c: the inner loops of the Select kernel, and the choice of the
 * instruction set they run with.
 *
 * Values are moved as raw bits, so one loop per item size (1, 2, 4, 8, 16 and
 * 32 bytes; any other size, or misaligned data, through a generic byte loop)
 * serves every dtype. cond is tested as "nonzero is true" at its own width
 * (1, 2, 4 or 8 bytes) inside the loop: an integer mask costs no conversion
 * pass.
 *
 * The typed loops (sk_loops_typed.h, gathered by sk_loops_isa.h) are compiled
 * several times: for the baseline instruction set of the build (SSE2 on
 * x86-64, NEON on aarch64) and, on x86-64, again for AVX2 and for AVX-512
 * (with GCC and Clang in this file, through __attribute__((target)); with
 * MSVC in sk_loops_avx2.c and sk_loops_avx512.c: see sk_loops_base.h). On
 * other architectures, or with SK_NO_DISPATCH, only the baseline copy exists.
 * The best copy the CPU and the OS support is chosen once, at import
 * (sk_os_cpu_features, which also checks that the OS saves the AVX/AVX-512
 * registers); ARRAYSELECT_CPU or set_isa() may lower it.
 */
#include "sk_kernel.h"
#include "sk_loops_base.h"

/* The baseline copy: the flags of the build. */
#define SK_ISA baseline
#define SK_TARGET
#define SK_ALIGN 0
#include "sk_loops_isa.h"
#undef SK_ISA
#undef SK_TARGET
#undef SK_ALIGN

#if SK_X86_DISPATCH == 1
#define SK_ISA avx2
#define SK_TARGET __attribute__((target("avx2")))
#define SK_ALIGN 32
#include "sk_loops_isa.h"
#undef SK_ISA
#undef SK_TARGET
#undef SK_ALIGN

/*
 * AVX-512 F/BW/VL/DQ/CD (x86-64-v4) with 512-bit vectors: GCC otherwise tunes
 * some AVX-512 CPUs for 256-bit ones. These loops are loads, blends and stores
 * only, the instructions that run at full width without lowering the clock.
 */
#define SK_ISA avx512
#if defined(__clang__)
#define SK_TARGET                                                                             \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512cd"), min_vector_width(512)))
#else
#define SK_TARGET                                                                             \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512cd,prefer-vector-width=512")))
#endif
#define SK_ALIGN 64
#include "sk_loops_isa.h"
#undef SK_ISA
#undef SK_TARGET
#undef SK_ALIGN
#elif SK_X86_DISPATCH == 2
extern const sk_loop_table sk_table_avx2, sk_table_avx512; /* sk_loops_avx2.c, sk_loops_avx512.c */
#endif /* SK_X86_DISPATCH */

static const char *const sk_isa_names[SK_ISA_COUNT] = {"baseline", "avx2", "avx512"};

const sk_loop_table *
sk_loops_compiled(int isa)
{
    switch (isa) {
        case SK_ISA_BASELINE: return &sk_table_baseline;
#if SK_X86_DISPATCH
        case SK_ISA_AVX2: return &sk_table_avx2;
        case SK_ISA_AVX512: return &sk_table_avx512;
#endif
        default: return NULL;
    }
}

int
sk_isa_supported(void)
{
#if SK_X86_DISPATCH
    const int features = sk_os_cpu_features();
    if (features & SK_CPU_AVX512) {
        return SK_ISA_AVX512;
    }
    if (features & SK_CPU_AVX2) {
        return SK_ISA_AVX2;
    }
#endif
    return SK_ISA_BASELINE;
}

int
sk_isa_from_name(const char *name)
{
    for (int i = 0; i < SK_ISA_COUNT; i++) {
        if (strcmp(name, sk_isa_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

const char *
sk_isa_name(int isa)
{
    return isa >= 0 && isa < SK_ISA_COUNT ? sk_isa_names[isa] : "?";
}

/* The loops new calls use; plans store no loops, so a change applies to the next call. */
static const sk_loop_table *sk_current = &sk_table_baseline;
static int sk_current_isa = SK_ISA_BASELINE;

const sk_loop_table *
sk_loops_current(void)
{
    return SK_LOAD(sk_current);
}

int
sk_isa_current(void)
{
    return SK_LOAD(sk_current_isa);
}

int
sk_isa_use(int isa)
{
    if (isa < 0 || isa > sk_isa_supported() || sk_loops_compiled(isa) == NULL) {
        return -1;
    }
    SK_STORE(sk_current_isa, isa);
    SK_STORE(sk_current, sk_loops_compiled(isa));
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Loops for any item size (one copy: they move bytes with memmove)         */
/* ------------------------------------------------------------------------ */

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
    "in-place-then", "in-place-else", "strided", "strided-buffered",
    "strided-step",
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

/* ------------------------------------------------------------------------ */
/* Streaming stores (x86-64 with GCC or Clang: sk_loops_stream.h)           */
/* ------------------------------------------------------------------------ */

#if SK_X86_DISPATCH == 1
#include "sk_loops_stream.h"
#endif

sk_loop
sk_stream_loop(int isa, npy_intp isz, npy_intp csz)
{
#if SK_X86_DISPATCH == 1
    const int vi = sk_size_index(isz);
    if (csz == 1 && vi >= 0 && vi <= 3 && (isa == SK_ISA_AVX2 || isa == SK_ISA_AVX512)) {
        return sk_stream_loops[isa - SK_ISA_AVX2][vi];
    }
#endif
    (void)isa, (void)isz, (void)csz;
    return NULL;
}

sk_loop
sk_stream_block_loop(int isa)
{
#if SK_X86_DISPATCH == 1
    if (isa == SK_ISA_AVX2 || isa == SK_ISA_AVX512) {
        return sk_stream_block_loops[isa - SK_ISA_AVX2];
    }
#endif
    (void)isa;
    return NULL;
}
