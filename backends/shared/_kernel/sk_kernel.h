/*
 * sk_kernel.h: the private header of arrayselect's NumPy Select kernel.
 *
 * The kernel is one extension module built from several C files, one per
 * subsystem:
 *
 *   sk_loops.c      the inner loops (one per item size, cond width and layout),
 *                   compiled once per instruction set from the templates
 *                   sk_loops_isa.h and sk_loops_typed.h, and the choice among them
 *                   (sk_loops_avx2.c, sk_loops_avx512.c: those copies as units
 *                   of their own where the compiler has no target attribute)
 *   sk_plan.c       iteration: placing the inputs on the output shape,
 *                   memory-ordering and coalescing axes, picking the loop, tiles,
 *                   the job's cost, running a flat range of a job
 *   sk_pool.c       the thread pool and when to use it
 *   sk_memory.c     the output memory handler (a pool of freed blocks)
 *   sk_prepared.c   what the core's hit path runs: the raw signature, Prepared
 *   sk_cases.c     select_n and select_cases in one pass, on select's loops and pool
 *   select_kernel.c the module: select/explain, settings, statistics, init
 *   sk_os_*.c       the OS layer (sk_os.h): threads, locks, atomics, clocks,
 *                   machine load, CPU features, fork; POSIX and Win32
 *
 * Everything shared between the files is declared here; everything else is
 * static to its file. Every symbol starts with sk_ (setup.py builds with
 * -fvisibility=hidden, so none leaks out of the shared object but the
 * module's init function and the two threadpoolctl entry points).
 */
#ifndef SK_KERNEL_H
#define SK_KERNEL_H

#ifndef SK_STANDALONE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* One NumPy C-API table for all the files; select_kernel.c imports it. */
#define PY_ARRAY_UNIQUE_SYMBOL arrayselect_select_kernel_ARRAY_API
#ifndef SK_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#include <numpy/arrayobject.h>
#else
/*
 * SK_STANDALONE: the loops, the plans and the pool without Python, for the
 * kernel's C harness (tests/kernel_harness.c), which runs where no Python
 * does (Wine, qemu). Only the parts that take Python objects are left out.
 */
#include <stddef.h>
typedef ptrdiff_t npy_intp;
#define NPY_MAXDIMS 64
#define Py_BEGIN_ALLOW_THREADS {
#define Py_END_ALLOW_THREADS }
#endif

#include <stdint.h>
#include <string.h>

/* Threads, locks, atomics (SK_LOAD, SK_STORE), clocks, machine load, CPU features. */
#include "sk_os.h"
SK_STATIC_ASSERT(sizeof(npy_intp) == sizeof(sk_os_intp), npy_intp_is_ptrdiff_t);

/* The thread pool exists on every OS; -DSK_NO_THREADS builds without it. */
#ifndef SK_NO_THREADS
#define SK_HAVE_THREADS 1
#else
#define SK_HAVE_THREADS 0
#endif

#define SK_MAXDIMS NPY_MAXDIMS
#define SK_MAX_THREADS 256

/* ------------------------------------------------------------------------ */
/* Loops (sk_loops.c)                                                       */
/* ------------------------------------------------------------------------ */

/* Every inner loop has this signature; contiguous loops ignore the strides. */
typedef void (*sk_loop)(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as,
                        const char *b, npy_intp bs, char *o, npy_intp os, npy_intp isz);

/*
 * Loop kinds: contiguous (then/else arrays or broadcast scalars), in place (out
 * is then or else), strided element by element, strided through buffers,
 * strided in one pass (a small step shared by the inputs, out contiguous).
 */
enum { SK_CC, SK_SC, SK_CS, SK_SS, SK_IA, SK_IB, SK_ST, SK_BST, SK_SK, SK_NKINDS };
extern const char *const sk_kind_names[SK_NKINDS];

/* The typed loops compiled for one instruction set. */
typedef struct {
    const char *name;
    /* [value size index][cond size index][kind]; NULL where a kind does not exist */
    sk_loop loops[6][4][SK_NKINDS];
} sk_loop_table;

/* Instruction sets the loops may be compiled for, in increasing order. */
enum { SK_ISA_BASELINE = 0, SK_ISA_AVX2 = 1, SK_ISA_AVX512 = 2, SK_ISA_COUNT = 3 };

/* The loops of an instruction set, or NULL when they were not compiled in. */
const sk_loop_table *sk_loops_compiled(int isa);
/* The best instruction set this CPU and OS support among those compiled in. */
int sk_isa_supported(void);
int sk_isa_from_name(const char *name); /* -1 if unknown */
const char *sk_isa_name(int isa);
/* The loops new calls use, and their instruction set. */
const sk_loop_table *sk_loops_current(void);
int sk_isa_current(void);
/* Use `isa` from the next call on; -1 if not compiled in or not supported. */
int sk_isa_use(int isa);

/*
 * The contiguous loop with streaming stores (sk_loops_stream.h) for an
 * instruction set, item size and cond size, or NULL where there is none
 * (only AVX2 and AVX-512 with GCC or Clang, a 1-byte cond, items of 1-8 bytes).
 */
sk_loop sk_stream_loop(int isa, npy_intp isz, npy_intp csz);
/* The block loop (same loop_arg) with streamed row copies, or NULL where there is none. */
sk_loop sk_stream_block_loop(int isa);

/* Index of an item size in sk_loops (1, 2, 4, 8, 16, 32), else -1. */
int sk_size_index(npy_intp size);

/* Any item size, alignment, strides and aliasing; loop_arg is (isz << 4) | cond size. */
void sk_generic_loop(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as,
                     const char *b, npy_intp bs, char *o, npy_intp os, npy_intp packed);
/* cond broadcast along the inner axis (stride 0): one test, a row copy. Same loop_arg. */
void sk_block_loop(npy_intp n, const char *c, npy_intp cs, const char *a, npy_intp as,
                   const char *b, npy_intp bs, char *o, npy_intp os, npy_intp packed);

/* ------------------------------------------------------------------------ */
/* Jobs and iteration (sk_plan.c)                                           */
/* ------------------------------------------------------------------------ */

enum { OP_C = 0, OP_A = 1, OP_B = 2, OP_O = 3 };

/* One select, coalesced: nd iteration over a flat index range. */
typedef struct {
    int nd;                         /* >= 1 */
    npy_intp shape[SK_MAXDIMS];     /* memory order: outermost first */
    npy_intp strides[4][SK_MAXDIMS];/* cond, then, else, out */
    char *data[4];
    npy_intp total;
    npy_intp isz;
    npy_intp loop_arg;              /* last argument of the inner loop */
    sk_loop loop;
    const char *loop_name;          /* for explain() */
    const char *isa;                /* the instruction set of the loops (explain()) */
    npy_intp tile_r, tile_w;        /* tiled iteration (transposes): rows x columns; 0: rows */
    npy_intp bpe;                   /* bytes the loops move per element (the cost model) */
    int stream;                     /* the loop stores past the caches (sk_stream_min) */
    int max_threads;                /* the caller's cap on threads; 0: none */
    int on_openmp;                  /* split on the OpenMP runtime set by sk_pool_set_openmp */
} sk_job;

/*
 * Where an input's dimensions go, as the core's plan says (SelectPlan.dims):
 * its leading `kept` dimensions line up with the output dimensions `map[]`
 * (increasing); its remaining trailing dimensions are size 1 and dropped.
 * kept < 0: right-aligned, every dimension kept (NumPy broadcasting).
 */
typedef struct {
    int kept;
    int map[SK_MAXDIMS];
} sk_dims;

#ifndef SK_STANDALONE
int sk_parse_shape(PyObject *tuple, const char *what, int *nd, npy_intp *dims);
int sk_parse_dims(PyObject *obj, const char *name, int out_nd, sk_dims *D);
int sk_place(int nd, const npy_intp *dims, const npy_intp *strides, const sk_dims *D,
             int out_nd, const npy_intp *out_dims, const char *name, npy_intp *placed);
#endif
void sk_axis_order(int nd, npy_intp strides[4][SK_MAXDIMS], const int *prio, int nprio,
                   int *perm);
int sk_overlap(const char *in_data, const npy_intp *in_strides, npy_intp in_isz,
               const char *out_data, const npy_intp *out_strides, npy_intp out_isz, int nd,
               const npy_intp *dims);
void sk_prepare(sk_job *J, int nd, const npy_intp *dims, npy_intp strides[4][SK_MAXDIMS],
                char *data[4], npy_intp isz, npy_intp csz, int alias_a, int alias_b,
                int alias_c);
/*
 * Bytes a job's loops must move (bpe x elements) from which a contiguous job
 * stores its output with streaming stores, where sk_stream_loop has a loop.
 * The default is the last-level cache's size (SK_STREAM_FALLBACK where the OS
 * does not say), set by sk_stream_init.
 */
#ifndef SK_STREAM_FALLBACK
#define SK_STREAM_FALLBACK ((npy_intp)32 << 20)
#endif
extern npy_intp sk_stream_min;
npy_intp sk_stream_default(void);
void sk_stream_init(void);
/*
 * Run the flat iteration range [start, end) of a job (any thread, no GIL
 * needed). A tiled job runs best on ranges of whole panels (tile_r rows).
 */
void sk_run_range(const sk_job *J, npy_intp start, npy_intp end);

/* ------------------------------------------------------------------------ */
/* Threads (sk_pool.c)                                                      */
/* ------------------------------------------------------------------------ */

/* Float32 elements (with a bool cond) from which a job is split across threads. */
#ifndef SK_DEFAULT_PARALLEL_MIN
#define SK_DEFAULT_PARALLEL_MIN 65536
#endif

extern npy_intp sk_parallel_min;
extern int sk_num_threads;
extern unsigned long long sk_calls, sk_threaded_calls, sk_temp_calls;

/* Number of threads a job gets by its cost (what explain() reports). */
int sk_parts_for(const sk_job *J);
/* Output elements per chunk when the job is split `parts` ways (what explain() reports). */
npy_intp sk_chunk_for(const sk_job *J, int parts);
/* Run a job, releasing the GIL for large ones. Called with the GIL held. */
void sk_execute(const sk_job *J);
/* Stop and join the workers (without the GIL); the next parallel job restarts them. */
void sk_pool_shutdown(void);
void sk_pool_atfork_child(void);
int sk_pool_workers(void);
/* The OpenMP runtime whose threads run split jobs marked on_openmp: its
 * GOMP_parallel, or NULL (every job on the kernel's own pool). With the GIL. */
void sk_pool_set_openmp(void (*gomp_parallel)(void (*)(void *), void *, unsigned, unsigned));
/* The room guard on or off, the spins in seconds; a negative value keeps a setting. */
void sk_pool_configure(int load_guard, double worker_spin, double caller_spin);
#ifndef SK_STANDALONE
/* Counters and the state of the room guard, as a dict. */
PyObject *sk_pool_stats(void);

/* ------------------------------------------------------------------------ */
/* Output memory (sk_memory.c)                                              */
/* ------------------------------------------------------------------------ */

/* Set up the handler capsule (module init); -1 with an exception on failure. */
int sk_memory_init(void);
void sk_memory_atfork_child(void);
/* A new array (steals a reference to descr); large ones through the pool handler. */
PyObject *sk_alloc_array(PyArray_Descr *descr, int nd, const npy_intp *dims,
                         const npy_intp *strides);
PyObject *sk_set_pool_limit(PyObject *self, PyObject *arg);
PyObject *sk_pool_info(PyObject *self, PyObject *args);
PyObject *sk_release_pool(PyObject *self, PyObject *args);

/* ------------------------------------------------------------------------ */
/* The call (select_kernel.c) and the hit path's parts (sk_prepared.c)     */
/* ------------------------------------------------------------------------ */

int sk_check_dtypes(PyArray_Descr *descr, PyArray_Descr *cdescr);
/*
 * out = select(cond, then, else) for operands given by their strides per
 * output dimension and data pointers; out_arr NULL allocates. New reference.
 */
PyObject *sk_core(PyArray_Descr *descr, npy_intp csz, npy_intp strides[4][SK_MAXDIMS],
                  char *in_data[3], PyArrayObject *out_arr, int nd, const npy_intp *out_dims,
                  int explain, int max_threads, int on_openmp);

/* Adds signature, RAW_SIGNATURE and Prepared to the module: 0, or -1 with an error. */
int sk_prepared_init(PyObject *m);

/* ------------------------------------------------------------------------ */
/* The select family in one pass (sk_cases.c)                              */
/* ------------------------------------------------------------------------ */

/* select_n(which, cases, out) and select_cases(conds, choices, default, out). */
PyObject *sk_select_n(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *sk_select_cases(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* apply_where's gather and scatter: apply_take(cond, x), apply_put(cond, taken, base). */
PyObject *sk_apply_take(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *sk_apply_put(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
#endif /* !SK_STANDALONE */

#endif /* SK_KERNEL_H */
