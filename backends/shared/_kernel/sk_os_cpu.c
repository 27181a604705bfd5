/*
 * sk_os_cpu.c: which wide instruction sets this CPU and its OS support (the
 * CPU-feature part of the OS layer, sk_os.h).
 *
 * One answer for every compiler: cpuid and xgetbv, read directly (MSVC's
 * __cpuidex/_xgetbv, GCC's and Clang's <cpuid.h> and the xgetbv opcode).
 * GCC's __builtin_cpu_supports checks the same bits, but needs the runtime's
 * CPU model (libgcc's; zig's compiler-rt for musl answered "none" in the
 * cross check), and MSVC has no such builtin. The kernel's C harness checks,
 * where GCC builds it, that the two answers agree.
 */
#include "sk_os.h"

#if SK_OS_X86

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#include <immintrin.h>
static void
sk_os_cpuid(int leaf, int sub, int r[4])
{
    __cpuidex(r, leaf, sub);
}
static unsigned long long
sk_os_xcr0(void)
{
    return _xgetbv(0);
}
#else
#include <cpuid.h>
static void
sk_os_cpuid(int leaf, int sub, int r[4])
{
    unsigned a, b, c, d;
    __cpuid_count((unsigned)leaf, (unsigned)sub, a, b, c, d);
    r[0] = (int)a, r[1] = (int)b, r[2] = (int)c, r[3] = (int)d;
}
static unsigned long long
sk_os_xcr0(void) /* xgetbv without -mxsave */
{
    unsigned lo, hi;
    __asm__ __volatile__(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

int
sk_os_cpu_features_cpuid(void)
{
    int r[4];
    sk_os_cpuid(0, 0, r);
    const int max_leaf = r[0];
    sk_os_cpuid(1, 0, r);
    /* OSXSAVE (the OS uses XSAVE, so xgetbv works) and AVX */
    if (max_leaf < 7 || !(r[2] & (1 << 27)) || !(r[2] & (1 << 28))) {
        return 0;
    }
    const unsigned long long xcr0 = sk_os_xcr0();
    if ((xcr0 & 0x6) != 0x6) { /* the OS saves SSE and AVX (YMM) state */
        return 0;
    }
    sk_os_cpuid(7, 0, r);
    const unsigned ebx = (unsigned)r[1];
    int features = 0;
    if (ebx & (1u << 5)) {
        features |= SK_CPU_AVX2;
    }
    /* F (16), DQ (17), CD (28), BW (30), VL (31); opmask, ZMM 0-15 upper and 16-31 state */
    const unsigned avx512 = (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);
    if ((ebx & avx512) == avx512 && (xcr0 & 0xE0) == 0xE0) {
        features |= SK_CPU_AVX512;
    }
    return features;
}
#endif /* SK_OS_X86 */

int
sk_os_cpu_features(void)
{
#if SK_OS_X86
    static int features = -1; /* asked once; a race stores the same answer */
    if (SK_LOAD(features) < 0) {
        SK_STORE(features, sk_os_cpu_features_cpuid());
    }
    return SK_LOAD(features);
#else
    return 0; /* no x86 wide loops elsewhere */
#endif
}
