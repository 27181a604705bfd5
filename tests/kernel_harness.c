/*
 * kernel_harness.c: the NumPy kernel's C code without Python, checked against
 * a reference written here (byte copies by index arithmetic), so that it runs
 * wherever a C program does: natively (tests/test_numpy_kernel_harness.py),
 * under Wine for Windows and under qemu for aarch64 (scripts/cross_check.sh).
 * Built by tests/_c_harness.py with the kernel's files compiled with
 * -DSK_STANDALONE.
 *
 *   loops   every inner loop of every instruction set compiled in and usable
 *           here (the streaming-store ones too), every item size, cond width
 *           and loop kind, lengths around
 *           the vector widths and buffer sizes, output alignments, strides
 *           (the gather/scatter specialisations: 2, 3, 4, -1, and others)
 *   plans   jobs planned by sk_prepare (contiguous, broadcast cond, scalars,
 *           transposed/tiled, step-2, in place, generic item sizes), each run
 *           in chunks of every size listed and compared with the reference
 *   pool    the same jobs through sk_execute on 2, 3, 4 and 8 threads:
 *           threaded result == single-threaded result byte for byte; prints
 *           how many threads took part
 *   os      CPU features (cpuid/xgetbv == GCC's __builtin_cpu_supports on x86),
 *           clocks, the machine-load source
 *
 * Prints one line per part and "kernel harness: ok"; exit status 1 on any
 * mismatch.
 */
#include "sk_kernel.h"

#include <stdio.h>
#include <stdlib.h>

static int failures = 0;

#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            if (failures++ < 20) {                                                            \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                          \
                fprintf(stderr, __VA_ARGS__);                                                 \
                fprintf(stderr, "\n");                                                        \
            }                                                                                 \
        }                                                                                     \
    } while (0)

/* xorshift64: the same bytes on every platform. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t
rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Random bytes: copied from a block made once (making them per case is slow under qemu). */
#define POOL_BYTES ((size_t)1 << 20)
static char *random_pool;

static void
fill_random(char *p, size_t n)
{
    if (random_pool == NULL) {
        random_pool = malloc(POOL_BYTES);
        for (size_t i = 0; i < POOL_BYTES; i += 8) {
            const uint64_t r = rnd();
            memcpy(random_pool + i, &r, 8);
        }
    }
    while (n > 0) {
        const size_t start = (size_t)(rnd() % (POOL_BYTES / 2));
        const size_t k = n < POOL_BYTES / 2 ? n : POOL_BYTES / 2;
        memcpy(p, random_pool + start, k);
        p += k, n -= k;
    }
}

/* A cond element of csz bytes: zero half the time; a nonzero one sometimes has
 * only its top byte set (the loops test "nonzero" at the cond's own width). */
static void
fill_cond(char *c, npy_intp n, npy_intp stride, int csz)
{
    for (npy_intp i = 0; i < n; i++) {
        char *e = c + i * stride;
        const uint64_t r = rnd();
        memset(e, 0, (size_t)csz);
        if (r & 1) {
            if (r & 2) {
                e[csz - 1] = (char)(1 + ((r >> 8) % 255));
            }
            else {
                e[(r >> 16) % (uint64_t)csz] = (char)(1 + ((r >> 24) % 255));
            }
        }
    }
}

static int
nonzero(const char *e, int csz)
{
    for (int k = 0; k < csz; k++) {
        if (e[k] != 0) {
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Loops                                                                    */
/* ------------------------------------------------------------------------ */

/* Guard bytes on both sides of what a case touches. */
#define PAD 256
/* Elements of the longest row: more than one block of the buffered loops
 * (SK_BUFFER_BYTES of each operand) for every item size. */
#define NMAX (8192 + 37)

static npy_intp
abs_intp(npy_intp x)
{
    return x < 0 ? -x : x;
}

static long
check_loops(int isa)
{
    static const npy_intp lengths[] = {0,  1,  2,  3,   5,   8,   15,  16,   17, 31,
                                       33, 63, 64, 65, 127, 129, 255, 1000, -1};
    /* stride multipliers (cond, then, else, out) for the strided kinds */
    static const int strided[][4] = {{1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}, {4, 4, 4, 4},
                                     {-1, -1, -1, -1}, {5, 2, 3, 7}, {1, -1, 4, 2},
                                     /* the one-pass steps: out contiguous */
                                     {2, 2, 2, 1}, {3, 3, 3, 1}, {4, 4, 4, 1}};
    const sk_loop_table *table = sk_loops_compiled(isa);
    long cases = 0;
    const size_t cap = (size_t)NMAX * 32 * 7 + 2 * PAD + 64;
    char *c = malloc(cap), *a = malloc(cap), *b = malloc(cap), *o = malloc(cap);
    char *want = malloc(cap), *a0 = malloc(cap), *b0 = malloc(cap);
    if (!c || !a || !b || !o || !want || !a0 || !b0) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (int vi = 0; vi < 6; vi++) {
        const npy_intp isz = (npy_intp)1 << vi, nat = isz > 8 ? 8 : isz;
        for (int ci = 0; ci < 4; ci++) {
            const int csz = 1 << ci;
            /* kind SK_NKINDS: the streaming-store loop, a contiguous one (sk_stream_loop) */
            for (int k = 0; k <= SK_NKINDS; k++) {
                const int kind = k == SK_NKINDS ? SK_CC : k;
                const sk_loop loop = k == SK_NKINDS ? (vi <= 3 ? sk_stream_loop(isa, isz, csz) : NULL)
                                                    : table->loops[vi][ci][kind];
                if (loop == NULL) {
                    continue;
                }
                const int nstr = kind == SK_ST || kind == SK_BST || kind == SK_SK ? 10 : 1;
                for (int si = 0; si < nstr; si++) {
                    for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++) {
                        /* -1: past one block of the buffered loops */
                        const npy_intp n = lengths[li] >= 0 ? lengths[li] : 8192 / isz + 37;
                        for (int off = 0; off < 4; off += 3) {
                            const int *m = strided[si];
                            npy_intp cs = csz, as = isz, bs = isz, os = isz;
                            if (nstr > 1) {
                                cs *= m[0], as *= m[1], bs *= m[2], os *= m[3];
                            }
                            if (kind == SK_SC || kind == SK_SS) {
                                as = 0;
                            }
                            if (kind == SK_CS || kind == SK_SS) {
                                bs = 0;
                            }
                            npy_intp widest = abs_intp(cs);
                            widest = abs_intp(as) > widest ? abs_intp(as) : widest;
                            widest = abs_intp(bs) > widest ? abs_intp(bs) : widest;
                            widest = abs_intp(os) > widest ? abs_intp(os) : widest;
                            const size_t bytes = (size_t)(n * widest + 2 * PAD + 4 * nat + isz);
                            const npy_intp last = n > 0 ? n - 1 : 0;
                            /* first elements: negative strides start at the end */
                            char *cp = c + PAD + (cs < 0 ? -cs * last : 0);
                            char *ap = a + PAD + (as < 0 ? -as * last : 0);
                            char *bp = b + PAD + (bs < 0 ? -bs * last : 0);
                            char *op = o + PAD + off * nat + (os < 0 ? -os * last : 0);
                            fill_random(a, bytes);
                            fill_random(b, bytes);
                            fill_random(o, bytes);
                            fill_cond(cp, n, cs, csz);
                            if (kind == SK_IA) {
                                op = ap;
                            }
                            if (kind == SK_IB) {
                                op = bp;
                            }
                            memcpy(a0, a, bytes);
                            memcpy(b0, b, bytes);
                            char *base = kind == SK_IA ? a : kind == SK_IB ? b : o;
                            memcpy(want, base, bytes);
                            char *wp = want + (op - base);
                            for (npy_intp i = 0; i < n; i++) {
                                const char *src = nonzero(cp + i * cs, csz)
                                                      ? a0 + (ap - a) + i * as
                                                      : b0 + (bp - b) + i * bs;
                                memcpy(wp + i * os, src, (size_t)isz);
                            }
                            loop(n, cp, cs, ap, as, bp, bs, op, os, isz);
                            cases++;
                            CHECK(memcmp(base, want, bytes) == 0,
                                  "loop %s isz=%ld csz=%d kind=%s n=%ld strides=%d off=%d",
                                  table->name, (long)isz, csz,
                                  k == SK_NKINDS ? "stream" : sk_kind_names[kind], (long)n, si,
                                  off);
                        }
                    }
                }
            }
        }
    }
    free(c), free(a), free(b), free(o), free(want), free(a0), free(b0);
    return cases;
}

/* ------------------------------------------------------------------------ */
/* Plans and the pool                                                       */
/* ------------------------------------------------------------------------ */

typedef struct {
    const char *name;
    int nd;
    npy_intp dims[2];
    npy_intp isz, csz;
    /* element strides of cond, then, else, out per output dim, in units of the
     * operand's item size; the operands' buffers are sized from them */
    npy_intp es[4][2];
    int alias; /* 0, or 1: out is then (in place) */
} layout;

/* Counting the threads that run a job's rows: the job's loop is wrapped. */
static sk_loop real_loop;
static int run_id = 0;        /* bumped before each run (by the calling thread) */
static int threads_in_run = 0; /* threads that ran a part of the current run */
static __thread int thread_run = -1;

static void
counting_loop(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as,
              const char *b, npy_intp bs, char *o, npy_intp os, npy_intp arg)
{
    const int id = SK_LOAD(run_id);
    if (thread_run != id) {
        thread_run = id;
        sk_atomic_add_int(&threads_in_run, 1);
    }
    real_loop(n, c, cs, a, as, b, bs, o, os, arg);
}

/* Bytes an operand spans (its strides are >= 0 or exactly -1 element, dims <= 2). */
static npy_intp
span(const layout *L, int k, npy_intp isz)
{
    npy_intp s = 0;
    for (int d = 0; d < L->nd; d++) {
        const npy_intp e = L->es[k][d] < 0 ? -L->es[k][d] : L->es[k][d];
        s += e * (L->dims[d] - 1);
    }
    return (s + 1) * isz;
}

static int
check_job(const layout *L, const int *threads, int nthreads, int *max_used, long *threaded_runs)
{
    const npy_intp isz = L->isz, csz = L->csz;
    const npy_intp sz[4] = {csz, isz, isz, isz};
    char *buf[4], *ptr[4], *ref, *init;
    npy_intp strides[4][SK_MAXDIMS], bytes[4];
    for (int k = 0; k < 4; k++) {
        bytes[k] = span(L, k, sz[k]);
        buf[k] = malloc((size_t)bytes[k] + 64);
        ptr[k] = buf[k];
        for (int d = 0; d < L->nd; d++) {
            strides[k][d] = L->es[k][d] * sz[k];
            if (L->es[k][d] < 0) {
                ptr[k] -= strides[k][d] * (L->dims[d] - 1);
            }
        }
    }
    npy_intp total = 1;
    for (int d = 0; d < L->nd; d++) {
        total *= L->dims[d];
    }
    fill_random(buf[1], (size_t)bytes[1]);
    fill_random(buf[2], (size_t)bytes[2]);
    fill_random(buf[3], (size_t)bytes[3]);
    fill_cond(buf[0], bytes[0] / csz, csz, (int)csz);
    if (L->alias) {
        free(buf[3]);
        buf[3] = buf[1], ptr[3] = ptr[1], bytes[3] = bytes[1];
    }
    /* the reference, by index arithmetic on the original strides */
    init = malloc((size_t)bytes[3]);
    ref = malloc((size_t)bytes[3]);
    const char *a0 = L->alias ? init : buf[1];
    memcpy(init, buf[3], (size_t)bytes[3]);
    memcpy(ref, init, (size_t)bytes[3]);
    for (npy_intp f = 0; f < total; f++) {
        npy_intp idx[2] = {L->nd == 2 ? f / L->dims[1] : f, L->nd == 2 ? f % L->dims[1] : 0};
        npy_intp off[4] = {0, 0, 0, 0};
        for (int k = 0; k < 4; k++) {
            for (int d = 0; d < L->nd; d++) {
                off[k] += idx[d] * strides[k][d];
            }
        }
        const char *src = nonzero(ptr[0] + off[0], (int)csz)
                              ? a0 + (ptr[1] - buf[1]) + off[1]
                              : buf[2] + (ptr[2] - buf[2]) + off[2];
        memcpy(ref + (ptr[3] - buf[3]) + off[3], src, (size_t)isz);
    }

    sk_job J;
    memset(&J, 0, sizeof(J));
    char *data[4] = {ptr[0], ptr[1], ptr[2], ptr[3]};
    sk_prepare(&J, L->nd, L->dims, strides, data, isz, csz, L->alias, 0, 0);
    real_loop = J.loop;
    J.loop = counting_loop;
    int ok = 1;

    /* every chunking: consecutive ranges of each size, on this thread */
    const npy_intp chunks[] = {1, 7, 64, 1000, 4096, total / 3 + 1, total};
    for (size_t ci = 0; ci < sizeof(chunks) / sizeof(chunks[0]); ci++) {
        const npy_intp ch = chunks[ci];
        if (ch < 64 && total > 200000) {
            continue; /* element-sized chunks of a large job: slow, nothing new */
        }
        memcpy(buf[3], init, (size_t)bytes[3]);
        for (npy_intp s = 0; s < total; s += ch) {
            sk_run_range(&J, s, s + ch < total ? s + ch : total);
        }
        const int same = memcmp(buf[3], ref, (size_t)bytes[3]) == 0;
        CHECK(same, "plan %s (loop %s): chunks of %ld differ from the reference", L->name,
              J.loop_name, (long)ch);
        ok &= same;
    }

    /* the pool: sk_execute on T threads, several runs (the first of a loop may run
     * on the caller), each == the single-threaded result byte for byte */
    for (int ti = 0; ti < nthreads; ti++) {
        sk_num_threads = threads[ti];
        for (int rep = 0; rep < 6; rep++) {
            memcpy(buf[3], init, (size_t)bytes[3]);
            /* no worker is inside a job between runs */
            SK_STORE(run_id, run_id + 1);
            SK_STORE(threads_in_run, 0);
            const unsigned long long before = sk_threaded_calls;
            sk_execute(&J);
            const int used = sk_atomic_load_int(&threads_in_run);
            *max_used = used > *max_used ? used : *max_used;
            *threaded_runs += sk_threaded_calls != before;
            const int same = memcmp(buf[3], ref, (size_t)bytes[3]) == 0;
            CHECK(same, "plan %s (loop %s): %d threads (%d used) differ from one thread",
                  L->name, J.loop_name, threads[ti], used);
            ok &= same;
        }
    }
    sk_num_threads = 1;
    printf("  %-16s %-24s %-9s %-9s %9ld elements: %s\n", L->name, J.loop_name, J.isa,
           J.stream ? "streaming" : "", (long)total, ok ? "ok" : "MISMATCH");
    for (int k = 0; k < 4; k++) {
        if (!(L->alias && k == 3)) {
            free(buf[k]);
        }
    }
    free(init), free(ref);
    return ok;
}

static void
check_pool(int log2n)
{
    /* N elements for 1-d jobs, R x C for 2-d ones (about N/2) */
    const npy_intp N = (npy_intp)1 << log2n, R = N >> 10, C = 512 + 37;
    const layout layouts[] = {
        {"contiguous f32", 1, {N, 1}, 4, 1, {{1}, {1}, {1}, {1}}, 0},
        {"contiguous c8 f64", 1, {N / 2, 1}, 8, 8, {{1}, {1}, {1}, {1}}, 0},
        {"then scalar", 1, {N, 1}, 4, 1, {{1}, {0}, {1}, {1}}, 0},
        {"cond (R,1)", 2, {R, C}, 4, 1, {{1, 0}, {C, 1}, {C, 1}, {C, 1}}, 0},
        /* rows of 8 KiB and more: streamed row copies */
        {"cond (R,1) long", 2, {R / 4, 4 * C}, 4, 1, {{1, 0}, {4 * C, 1}, {4 * C, 1}, {4 * C, 1}}, 0},
        {"transposed", 2, {R, C}, 4, 1, {{1, R}, {1, R}, {1, R}, {C, 1}}, 0},
        {"step-2", 2, {R, C}, 4, 1, {{2 * C, 2}, {2 * C, 2}, {2 * C, 2}, {C, 1}}, 0},
        {"reversed", 1, {N, 1}, 2, 1, {{-1}, {-1}, {1}, {1}}, 0},
        {"in place", 1, {N, 1}, 4, 4, {{1}, {1}, {1}, {1}}, 1},
        {"16-byte items", 1, {N / 8, 1}, 16, 1, {{1}, {1}, {1}, {1}}, 0},
        {"3-byte items", 2, {R, C}, 3, 2, {{C, 1}, {C, 1}, {C, 1}, {C, 1}}, 0},
    };
    const int threads[] = {2, 3, 4, 8};
    const int nlayouts = (int)(sizeof(layouts) / sizeof(layouts[0]));
    int max_used = 0, ok = 1;
    long threaded_runs = 0;
    sk_parallel_min = 1024;           /* every job here is worth splitting */
    sk_stream_min = 0;                /* and streams its stores where it can */
    sk_pool_configure(0, -1.0, -1.0); /* no room guard: the harness shares no machine */
    for (int i = 0; i < nlayouts; i++) {
        ok &= check_job(&layouts[i], threads, 4, &max_used, &threaded_runs);
    }
    printf("pool: %d layouts, every chunking and %s threads: %s; threaded runs %ld, "
           "threads used at most %d, workers started %d\n",
           nlayouts, SK_HAVE_THREADS ? "2, 3, 4 and 8" : "no (built without)",
           ok ? "== single-threaded byte for byte" : "MISMATCH", threaded_runs, max_used,
           sk_pool_workers());
#if SK_HAVE_THREADS
    CHECK(threaded_runs > 0 && max_used >= 2, "the pool never ran a job on two threads");
    sk_pool_shutdown();
    CHECK(sk_pool_workers() == 0, "workers left after shutdown");
#endif
}

/* ------------------------------------------------------------------------ */
/* The OS layer                                                             */
/* ------------------------------------------------------------------------ */

static void
check_os(void)
{
    const int f = sk_os_cpu_features();
    printf("os: cpu features:%s%s", f & SK_CPU_AVX2 ? " avx2" : "",
           f & SK_CPU_AVX512 ? " avx512" : "");
#if SK_OS_X86 && defined(__GNUC__) && !defined(__clang__)
    /* GCC's own answer (libgcc's CPU model) must agree with the kernel's cpuid/xgetbv */
    int g = 0;
    __builtin_cpu_init();
    g |= __builtin_cpu_supports("avx2") ? SK_CPU_AVX2 : 0;
    g |= __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512cd")
             ? SK_CPU_AVX512
             : 0;
    printf(" (gcc's __builtin_cpu_supports:%s%s)", g & SK_CPU_AVX2 ? " avx2" : "",
           g & SK_CPU_AVX512 ? " avx512" : "");
    CHECK(f == g, "cpu features: cpuid/xgetbv %d, gcc's %d", f, g);
#endif
    const double t0 = sk_os_now(), c0 = sk_os_cpu_seconds();
    volatile double x = 0;
    for (long i = 0; i < 20000000 && sk_os_cpu_seconds() - c0 < 0.02; i++) {
        x += 1.0;
    }
    (void)x; /* read once: GCC 16 counts a volatile only written as unused (-Werror) */
    const double t1 = sk_os_now(), c1 = sk_os_cpu_seconds();
    CHECK(t1 > t0 && c1 > c0, "clocks: wall %g -> %g, cpu %g -> %g", t0, t1, c0, c1);
    double busy = 0;
    const int load = sk_os_busy_seconds(&busy);
    printf("; wall clock +%.3f s, process cpu +%.3f s; machine load: %s (%.0f busy cpu s), "
           "%d cpus\n",
           t1 - t0, c1 - c0, load == 0 ? "read" : "not available", busy, sk_os_ncpu());
}

/* argv[1]: log2 of the pool's job size (default 20; emulators: less). */
int
main(int argc, char **argv)
{
    const int log2n = argc > 1 ? atoi(argv[1]) : 20;
    long cases = 0;
    char names[64] = "";
    for (int isa = 0; isa < SK_ISA_COUNT; isa++) {
        if (sk_loops_compiled(isa) != NULL && isa <= sk_isa_supported()) {
            cases += check_loops(isa);
            strcat(names, " ");
            strcat(names, sk_isa_name(isa));
        }
    }
    printf("loops: %ld cases on%s: %s\n", cases, names, failures ? "MISMATCH" : "ok");
    sk_isa_use(sk_isa_supported());
    check_pool(log2n < 12 ? 12 : log2n > 26 ? 26 : log2n);
    check_os();
    printf("kernel harness: %s (%d failures)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
}
