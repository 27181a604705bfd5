/*
 * sk_loops_base.h: what every copy of the typed loops shares (sk_loops.c and,
 * where the wide loops are their own translation units, sk_loops_avx2.c and
 * sk_loops_avx512.c): the restrict and vector-extension spellings, the
 * aligned-head peeling, the 16/32-byte element select, and how the x86-64
 * wide copies are built.
 */
#ifndef SK_LOOPS_BASE_H
#define SK_LOOPS_BASE_H

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
 * The AVX2 and AVX-512 copies of the loops (x86-64 only; SK_NO_DISPATCH: none):
 *
 *   SK_X86_DISPATCH 1  GCC and Clang: compiled in sk_loops.c itself, each
 *                      function with __attribute__((target)), as NumPy's own
 *                      dispatch does; no per-file flag.
 *   SK_X86_DISPATCH 2  MSVC (and clang-cl), which has no target attribute, or
 *                      SK_ISA_UNITS: each copy is its own translation unit,
 *                      sk_loops_avx2.c and sk_loops_avx512.c, compiled with
 *                      the compiler's per-ISA flag (/arch:AVX2, /arch:AVX512;
 *                      setup.py), as NumPy's dispatch sources are. Those
 *                      files hold loops and their table only, so no code of
 *                      theirs runs before the CPU check picks them.
 */
#if defined(SK_NO_DISPATCH) || !(defined(__x86_64__) || defined(_M_X64))
#define SK_X86_DISPATCH 0
#elif defined(SK_ISA_UNITS) || defined(_MSC_VER)
#define SK_X86_DISPATCH 2
#elif defined(__GNUC__) || defined(__clang__)
#define SK_X86_DISPATCH 1
#else
#define SK_X86_DISPATCH 0
#endif

#define SK_CAT_(a, b) a##_##b
#define SK_CAT(a, b) SK_CAT_(a, b)
#define SK_STR_(x) #x
#define SK_STR(x) SK_STR_(x)

/*
 * The elements a contiguous loop runs one by one before the output reaches an
 * `align`-byte boundary. With 32- and 64-byte vectors, an output 16 bytes past
 * a cache line (where malloc puts NumPy's large arrays) splits every other
 * vector store across two lines; peeling to the boundary first pays while the
 * operands are in cache and costs nothing when they stream from memory
 * (docs/numpy_kernel.md). The baseline's 16-byte vectors do not need it.
 */
static inline npy_intp
sk_head(const void *o, npy_intp n, size_t size, size_t align)
{
    if (align == 0) {
        return 0;
    }
    const npy_intp head = (npy_intp)((((uintptr_t)0 - (uintptr_t)o) & (align - 1)) / size);
    return head < n ? head : n;
}

/*
 * Bytes per buffer of the buffered strided loops: four buffers (cond, then,
 * else, out) stay in a 32 KiB L1 data cache.
 */
#ifndef SK_BUFFER_BYTES
#define SK_BUFFER_BYTES 8192
#endif

/* for (i = 0; i < n; i++) BODY, in two runs: up to the aligned output, then the rest. */
#define SK_ALIGNED_FOR(i, n, o, ...)                                                          \
    {                                                                                         \
        npy_intp i = 0;                                                                       \
        const npy_intp head_ = sk_head((o), (n), sizeof(*(o)), SK_ALIGN);                     \
        for (; i < head_; i++) {                                                              \
            __VA_ARGS__                                                                       \
        }                                                                                     \
        for (; i < (n); i++) {                                                                \
            __VA_ARGS__                                                                       \
        }                                                                                     \
    }

/* One element of L 8-byte lanes (item sizes 16 and 32): out = nz ? a : b. */
static inline void
sk_wide_select(int L, int nz, const char *a, const char *b, char *o)
{
    const uint64_t m = (uint64_t)0 - (uint64_t)(nz != 0);
#if SK_HAVE_VECTOR_EXT
    typedef uint64_t sk_v2 __attribute__((vector_size(16)));
    /* A header that defines __attribute__ away (mingw's _mingw.h does for clang
     * in MSVC mode) would make this 8 bytes and the memcpy below overflow. */
    _Static_assert(sizeof(sk_v2) == 16, "sk_v2 must be 16 bytes");
    const sk_v2 mv = {m, m};
    for (int l = 0; l < L / 2; l++) {
        sk_v2 x, y, r;
        memcpy(&x, a + 16 * l, 16);
        memcpy(&y, b + 16 * l, 16);
        r = (x & mv) | (y & ~mv);
        memcpy(o + 16 * l, &r, 16);
    }
#else
    for (int l = 0; l < L; l++) {
        uint64_t x, y, r;
        memcpy(&x, a + 8 * l, 8);
        memcpy(&y, b + 8 * l, 8);
        r = (x & m) | (y & ~m);
        memcpy(o + 8 * l, &r, 8);
    }
#endif
}

#endif /* SK_LOOPS_BASE_H */
