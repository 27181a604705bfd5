/*
 * sk_loops_stream.h: the contiguous loop with streaming (non-temporal) stores,
 * for jobs too large for the caches (sk_prepare picks it from sk_stream_min
 * bytes moved). Included by sk_loops.c on x86-64 with GCC or Clang only
 * (SK_X86_DISPATCH 1): elsewhere sk_stream_loop() finds none and the plain
 * contiguous loop runs.
 *
 * Why: a plain store first reads the output's cache line from memory (the
 * read for ownership), so a select of float32 with a bool cond moves 17 bytes
 * per element, not 13; a streaming store writes the line without reading it.
 * Measured on the 2-core AMD EPYC VM, 10^7 float32 on two threads: about 22%
 * less time (docs/numpy_kernel.md). Below the threshold the output stays in
 * the cache for whatever reads it next, so plain stores are better there.
 *
 * These are the kernel's only intrinsics: no compiler's vectorizer emits
 * streaming stores from plain C. They exist for a bool (1-byte) cond and item
 * sizes 1, 2, 4 and 8 with then, else and out contiguous, and for the block
 * loop's row copies (a cond broadcast along rows: any item size). The output
 * is peeled up to the vector width, the loads are unaligned, and each call
 * ends with a store fence, so its stores are visible before the pool reports
 * the chunk done.
 */
#if SK_X86_DISPATCH == 1
#include <immintrin.h>

/* The elements before the aligned output and after the last whole vector. */
#define SK_STREAM_SCALAR(T, from, to)                                                         \
    for (npy_intp i_ = (from); i_ < (to); i_++) {                                             \
        o[i_] = c[i_] != 0 ? a[i_] : b[i_];                                                   \
    }

/*
 * One loop: W elements per vector; BODY computes the vector r of elements
 * [i, i + W) and STORE streams it to o + i.
 */
#define SK_STREAM_LOOP(NAME, TARGET, T, W, ALIGN, BODY, STORE)                                \
    static TARGET void NAME(npy_intp n, const char *c_, npy_intp cs, const char *a_,          \
                            npy_intp as, const char *b_, npy_intp bs, char *o_, npy_intp os,  \
                            npy_intp isz)                                                     \
    {                                                                                         \
        const uint8_t *SK_RESTRICT c = (const uint8_t *)c_;                                   \
        const T *SK_RESTRICT a = (const T *)a_;                                               \
        const T *SK_RESTRICT b = (const T *)b_;                                               \
        T *SK_RESTRICT o = (T *)o_;                                                           \
        (void)cs, (void)as, (void)bs, (void)os, (void)isz;                                    \
        const npy_intp head = sk_head(o, n, sizeof(T), ALIGN);                                \
        npy_intp i = head;                                                                    \
        SK_STREAM_SCALAR(T, 0, head)                                                          \
        for (; i + (W) <= n; i += (W)) {                                                      \
            BODY;                                                                             \
            STORE;                                                                            \
        }                                                                                     \
        SK_STREAM_SCALAR(T, i, n)                                                             \
        _mm_sfence();                                                                         \
    }

#if defined(__clang__)
#define SK_STREAM_512                                                                         \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512cd"), min_vector_width(512)))
#else
#define SK_STREAM_512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512cd")))
#endif
#define SK_STREAM_256 __attribute__((target("avx2")))

/* AVX-512: the cond bytes' nonzero test is the blend's mask. */
#define SK_ST512 _mm512_stream_si512((void *)(o + i), r)
#define SK_AB512 __m512i x = _mm512_loadu_si512(a + i), y = _mm512_loadu_si512(b + i)
SK_STREAM_LOOP(sk_stream_v1_avx512, SK_STREAM_512, uint8_t, 64, 64,
               const __m512i cv = _mm512_loadu_si512(c + i);
               SK_AB512; const __m512i r = _mm512_mask_blend_epi8(
                   _mm512_test_epi8_mask(cv, cv), y, x),
               SK_ST512)
SK_STREAM_LOOP(sk_stream_v2_avx512, SK_STREAM_512, uint16_t, 32, 64,
               const __m256i cv = _mm256_loadu_si256((const __m256i *)(c + i));
               SK_AB512; const __m512i r = _mm512_mask_blend_epi16(
                   _mm256_test_epi8_mask(cv, cv), y, x),
               SK_ST512)
SK_STREAM_LOOP(sk_stream_v4_avx512, SK_STREAM_512, uint32_t, 16, 64,
               const __m128i cv = _mm_loadu_si128((const __m128i *)(c + i));
               SK_AB512; const __m512i r = _mm512_mask_blend_epi32(
                   _mm_test_epi8_mask(cv, cv), y, x),
               SK_ST512)
SK_STREAM_LOOP(sk_stream_v8_avx512, SK_STREAM_512, uint64_t, 8, 64,
               const __m128i cv = _mm_loadl_epi64((const __m128i *)(c + i));
               SK_AB512; const __m512i r = _mm512_mask_blend_epi64(
                   (__mmask8)_mm_test_epi8_mask(cv, cv), y, x),
               SK_ST512)

/*
 * AVX2: a cond byte of zero becomes an all-ones lane of the item's width
 * (compare, then sign extension), which picks else in the byte blend.
 */
#define SK_ST256 _mm256_stream_si256((__m256i *)(o + i), r)
#define SK_AB256                                                                              \
    const __m256i x = _mm256_loadu_si256((const __m256i *)(a + i));                           \
    const __m256i y = _mm256_loadu_si256((const __m256i *)(b + i))
SK_STREAM_LOOP(sk_stream_v1_avx2, SK_STREAM_256, uint8_t, 32, 32,
               const __m256i cv = _mm256_loadu_si256((const __m256i *)(c + i));
               SK_AB256; const __m256i r = _mm256_blendv_epi8(
                   x, y, _mm256_cmpeq_epi8(cv, _mm256_setzero_si256())),
               SK_ST256)
SK_STREAM_LOOP(sk_stream_v2_avx2, SK_STREAM_256, uint16_t, 16, 32,
               const __m128i cv = _mm_loadu_si128((const __m128i *)(c + i));
               SK_AB256; const __m256i r = _mm256_blendv_epi8(
                   x, y, _mm256_cvtepi8_epi16(_mm_cmpeq_epi8(cv, _mm_setzero_si128()))),
               SK_ST256)
SK_STREAM_LOOP(sk_stream_v4_avx2, SK_STREAM_256, uint32_t, 8, 32,
               const __m128i cv = _mm_loadl_epi64((const __m128i *)(c + i));
               SK_AB256; const __m256i r = _mm256_blendv_epi8(
                   x, y, _mm256_cvtepi8_epi32(_mm_cmpeq_epi8(cv, _mm_setzero_si128()))),
               SK_ST256)
SK_STREAM_LOOP(sk_stream_v8_avx2, SK_STREAM_256, uint64_t, 4, 32,
               uint32_t c4; memcpy(&c4, c + i, 4);
               const __m128i cv = _mm_cvtsi32_si128((int)c4);
               SK_AB256; const __m256i r = _mm256_blendv_epi8(
                   x, y, _mm256_cvtepi8_epi64(_mm_cmpeq_epi8(cv, _mm_setzero_si128()))),
               SK_ST256)

#undef SK_ST512
#undef SK_AB512
#undef SK_ST256
#undef SK_AB256
#undef SK_STREAM_LOOP
#undef SK_STREAM_SCALAR

/*
 * The block loop's row copy (cond broadcast along the row, then or else
 * contiguous, out contiguous): whole vectors streamed from the first aligned
 * output byte, the ends copied plainly. Rows of other strides take the plain
 * block loop's copy. loop_arg as sk_block_loop's: (isz << 4) | cond size.
 */
#define SK_STREAM_BLOCK(NAME, TARGET, V, LOADU, STREAM)                                       \
    static TARGET void NAME(npy_intp n, const char *c, npy_intp cs, const char *a,            \
                            npy_intp as, const char *b, npy_intp bs, char *o, npy_intp os,    \
                            npy_intp packed)                                                  \
    {                                                                                         \
        const npy_intp isz = packed >> 4;                                                     \
        const int nz = sk_nonzero(c, (int)(packed & 15));                                     \
        const char *s = nz ? a : b;                                                           \
        if ((nz ? as : bs) != isz || os != isz) {                                             \
            sk_block_loop(n, c, cs, a, as, b, bs, o, os, packed);                             \
            return;                                                                           \
        }                                                                                     \
        size_t bytes = (size_t)(n * isz);                                                     \
        size_t head = (size_t)(((uintptr_t)0 - (uintptr_t)o) & (sizeof(V) - 1));              \
        head = head < bytes ? head : bytes;                                                   \
        memcpy(o, s, head);                                                                   \
        o += head, s += head, bytes -= head;                                                  \
        for (; bytes >= sizeof(V); bytes -= sizeof(V), o += sizeof(V), s += sizeof(V)) {      \
            STREAM((void *)o, LOADU((const void *)s));                                        \
        }                                                                                     \
        memcpy(o, s, bytes);                                                                  \
        _mm_sfence();                                                                         \
    }

static inline __attribute__((target("avx2"))) __m256i
sk_loadu256(const void *p)
{
    return _mm256_loadu_si256((const __m256i *)p);
}

SK_STREAM_BLOCK(sk_stream_block_avx512, SK_STREAM_512, __m512i, _mm512_loadu_si512,
                _mm512_stream_si512)
SK_STREAM_BLOCK(sk_stream_block_avx2, SK_STREAM_256, __m256i, sk_loadu256, _mm256_stream_si256)
#undef SK_STREAM_BLOCK

#undef SK_STREAM_512
#undef SK_STREAM_256

static const sk_loop sk_stream_block_loops[2] = {sk_stream_block_avx2, sk_stream_block_avx512};

/* [instruction set - 1][value size index]: AVX2, then AVX-512; item sizes 1, 2, 4, 8. */
static const sk_loop sk_stream_loops[2][4] = {
    {sk_stream_v1_avx2, sk_stream_v2_avx2, sk_stream_v4_avx2, sk_stream_v8_avx2},
    {sk_stream_v1_avx512, sk_stream_v2_avx512, sk_stream_v4_avx512, sk_stream_v8_avx512},
};
#endif /* SK_X86_DISPATCH == 1 */
