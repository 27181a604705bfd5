/*
 * sk_loops_avx2.c: the AVX2 copy of the typed loops as a translation unit
 * of its own, for compilers without a target attribute (MSVC, which setup.py
 * gives /arch:AVX2 for this file only; see sk_loops_base.h). With GCC and
 * Clang sk_loops.c compiles this copy itself and this file is empty.
 */
#include "sk_kernel.h"
#include "sk_loops_base.h"

#if SK_X86_DISPATCH == 2
#define SK_ISA avx2
#define SK_TARGET
#define SK_ALIGN 32
#define SK_TABLE_EXTERN 1 /* sk_loops.c refers to the table */
#include "sk_loops_isa.h"
#else
typedef int sk_loops_avx2_unused; /* ISO C: no empty translation unit */
#endif
