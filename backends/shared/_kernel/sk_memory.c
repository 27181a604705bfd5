/*
 * sk_memory.c: the output memory handler.
 */
#include "sk_kernel.h"

#include <stdlib.h>

/*
 * A fresh output costs a page fault per page, and the OS zeroes every page
 * before the select writes it: a large share of the time of a select, which
 * only moves each byte once. Allocators reuse freed memory for most sizes, but
 * glibc's malloc maps every block of 32 MiB or more afresh (its mmap threshold
 * grows with the blocks freed, up to that size), so a loop of large selects
 * page-faults its whole output on every call, as np.where does.
 *
 * Outputs of at least SK_POOL_MIN bytes are therefore allocated through a
 * NumPy memory handler (NEP 49) whose free() keeps up to SK_POOL_SLOTS blocks,
 * sk_pool_limit bytes in all, for an output of exactly the same size, as a
 * caching allocator does. A loop that replaces its result needs one kept
 * block; the limit (arrayselect.set_pool_limit, ARRAYSELECT_POOL_MB; 0 turns
 * the pool off) bounds what stays allocated after it, until
 * arrayselect.release_memory(). Below SK_POOL_MIN the pool would only hold
 * memory the allocator reuses anyway. New blocks are 2 MiB aligned and
 * advised for transparent huge pages (512 times fewer faults).
 */
#define SK_POOL_MIN ((size_t)32 << 20)
#define SK_POOL_SLOTS 8
#define SK_HUGE ((size_t)2 << 20)

#if !defined(_WIN32)
#include <sys/mman.h>
#endif

typedef struct {
    void *ptr;
    size_t size;
} sk_block;

static struct {
    sk_block blocks[SK_POOL_SLOTS]; /* oldest first */
    int count;
    size_t bytes;
    unsigned long long hits, misses;
} sk_mem = {{{NULL, 0}}, 0, 0, 0, 0};
static size_t sk_pool_limit = 0; /* set by the settings at import */
static PyObject *sk_handler_capsule = NULL;

#if SK_HAVE_THREADS
static sk_mutex sk_mem_mu = SK_MUTEX_INIT;
#define SK_MEM_LOCK() sk_mutex_lock(&sk_mem_mu)
#define SK_MEM_UNLOCK() sk_mutex_unlock(&sk_mem_mu)
#else
#define SK_MEM_LOCK() ((void)0)
#define SK_MEM_UNLOCK() ((void)0)
#endif

void
sk_memory_atfork_child(void)
{
#if SK_HAVE_THREADS
    sk_mutex_init(&sk_mem_mu);
#endif
}

static void *
sk_fresh_block(size_t size)
{
#if !defined(_WIN32)
    void *p = NULL;
    if (size >= 2 * SK_HUGE) {
        if (posix_memalign(&p, SK_HUGE, size) != 0) {
            return NULL;
        }
#ifdef MADV_HUGEPAGE
        madvise(p, size - size % SK_HUGE, MADV_HUGEPAGE);
#endif
        return p;
    }
#endif
    return malloc(size);
}

static void *
sk_mem_malloc(void *ctx, size_t size)
{
    (void)ctx;
    if (size >= SK_POOL_MIN) {
        SK_MEM_LOCK();
        for (int i = sk_mem.count - 1; i >= 0; i--) {
            if (sk_mem.blocks[i].size == size) {
                void *p = sk_mem.blocks[i].ptr;
                memmove(&sk_mem.blocks[i], &sk_mem.blocks[i + 1],
                        sizeof(sk_block) * (size_t)(sk_mem.count - i - 1));
                sk_mem.count--;
                sk_mem.bytes -= size;
                sk_mem.hits++;
                SK_MEM_UNLOCK();
                return p;
            }
        }
        sk_mem.misses++;
        SK_MEM_UNLOCK();
    }
    return sk_fresh_block(size ? size : 1);
}

static void *
sk_mem_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    return calloc(nelem, elsize);
}

static void *
sk_mem_realloc(void *ctx, void *ptr, size_t new_size)
{
    (void)ctx;
    return realloc(ptr, new_size);
}

static void
sk_mem_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    void *evicted[SK_POOL_SLOTS];
    int nevicted = 0;
    if (ptr == NULL) {
        return;
    }
    if (size >= SK_POOL_MIN && size <= SK_LOAD(sk_pool_limit)) {
        SK_MEM_LOCK();
        /* The limit again under the lock: a free without the GIL may race set_pool_limit. */
        if (size <= sk_pool_limit) {
            /* Make room: drop the oldest blocks until this one fits. */
            while (sk_mem.count > 0 &&
                   (sk_mem.count == SK_POOL_SLOTS || sk_mem.bytes + size > sk_pool_limit)) {
                evicted[nevicted++] = sk_mem.blocks[0].ptr;
                sk_mem.bytes -= sk_mem.blocks[0].size;
                memmove(&sk_mem.blocks[0], &sk_mem.blocks[1],
                        sizeof(sk_block) * (size_t)(sk_mem.count - 1));
                sk_mem.count--;
            }
            sk_mem.blocks[sk_mem.count].ptr = ptr;
            sk_mem.blocks[sk_mem.count].size = size;
            sk_mem.count++;
            sk_mem.bytes += size;
            ptr = NULL;
        }
        SK_MEM_UNLOCK();
    }
    for (int i = 0; i < nevicted; i++) {
        free(evicted[i]);
    }
    free(ptr);
}

static PyDataMem_Handler sk_mem_handler = {
    "arrayselect_output_pool",
    1,
    {NULL, sk_mem_malloc, sk_mem_calloc, sk_mem_realloc, sk_mem_free},
};

/* Free every cached block. */
static void
sk_pool_release(void)
{
    void *blocks[SK_POOL_SLOTS];
    int n;
    SK_MEM_LOCK();
    n = sk_mem.count;
    for (int i = 0; i < n; i++) {
        blocks[i] = sk_mem.blocks[i].ptr;
    }
    sk_mem.count = 0;
    sk_mem.bytes = 0;
    SK_MEM_UNLOCK();
    for (int i = 0; i < n; i++) {
        free(blocks[i]);
    }
}

PyObject *
sk_alloc_array(PyArray_Descr *descr, int nd, const npy_intp *dims, const npy_intp *strides)
{
    npy_intp nbytes = descr->elsize;
    for (int d = 0; d < nd; d++) {
        if (dims[d] != 0 && nbytes > NPY_MAX_INTP / dims[d]) {
            nbytes = 0; /* too large: let NumPy report it */
            break;
        }
        nbytes *= dims[d];
    }
    if (sk_pool_limit == 0 || (size_t)nbytes < SK_POOL_MIN || sk_handler_capsule == NULL) {
        return PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, (npy_intp *)strides, NULL, 0,
                                    NULL);
    }
    PyObject *old = PyDataMem_SetHandler(sk_handler_capsule);
    if (old == NULL) {
        Py_DECREF(descr);
        return NULL;
    }
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, (npy_intp *)strides,
                                         NULL, 0, NULL);
    PyObject *mine = PyDataMem_SetHandler(old);
    Py_DECREF(old);
    if (mine == NULL) {
        Py_XDECREF(arr);
        return NULL;
    }
    Py_DECREF(mine);
    return arr;
}

PyObject *
sk_set_pool_limit(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "the pool limit must be >= 0 bytes");
        return NULL;
    }
    SK_MEM_LOCK();
    SK_STORE(sk_pool_limit, (size_t)n);
    SK_MEM_UNLOCK();
    sk_pool_release();
    Py_RETURN_NONE;
}

PyObject *
sk_pool_info(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    SK_MEM_LOCK();
    const size_t limit = sk_pool_limit, bytes = sk_mem.bytes;
    const int count = sk_mem.count;
    const unsigned long long hits = sk_mem.hits, misses = sk_mem.misses;
    SK_MEM_UNLOCK();
    /* no Python calls under the lock: an allocation may run the GC, which frees pooled blocks */
    return Py_BuildValue("{s:n,s:n,s:n,s:i,s:K,s:K}", "limit", (Py_ssize_t)limit, "min_block",
                         (Py_ssize_t)SK_POOL_MIN, "cached_bytes", (Py_ssize_t)bytes,
                         "cached_blocks", count, "hits", hits, "misses", misses);
}

PyObject *
sk_release_pool(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    sk_pool_release();
    Py_RETURN_NONE;
}

int
sk_memory_init(void)
{
    if (sk_handler_capsule == NULL) {
        sk_handler_capsule = PyCapsule_New(&sk_mem_handler, "mem_handler", NULL);
        if (sk_handler_capsule == NULL) {
            return -1;
        }
    }
    return 0;
}
