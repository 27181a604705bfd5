/*
 * arrayselect.backends.shared._select_kernel: the compiled Select
 * kernel for NumPy,
 *
 *     out[i] = cond[i] ? then[i] : else[i]
 *
 * on raw bits, for every dtype (see sk_loops.c), every layout (sk_plan.c),
 * on a thread pool (sk_pool.c), with large outputs from a pool of freed blocks
 * (sk_memory.c) and what the core's hit path runs for it (sk_prepared.c). This file is
 * the module: the entry points select() and explain(), settings, statistics
 * and initialisation. sk_kernel.h says which file holds what.
 */
#define SK_IMPORT_ARRAY
#include "sk_kernel.h"

#include <stdlib.h>
#include <string.h>

/* A fresh output array of `descr` with the memory order of the inputs. */
static PyArrayObject *
sk_new_output(PyArray_Descr *descr, int nd, const npy_intp *dims,
              npy_intp in_strides[4][SK_MAXDIMS])
{
    static const int prio[3] = {OP_A, OP_B, OP_C};
    int perm[SK_MAXDIMS];
    npy_intp strides[SK_MAXDIMS];
    int c_order = 1;

    sk_axis_order(nd, in_strides, prio, 3, perm);
    for (int i = 0; i < nd; i++) {
        if (perm[i] != i) {
            c_order = 0;
            break;
        }
    }
    Py_INCREF(descr);
    if (c_order) {
        return (PyArrayObject *)sk_alloc_array(descr, nd, dims, NULL);
    }
    npy_intp s = descr->elsize;
    for (int i = nd - 1; i >= 0; i--) {
        strides[perm[i]] = s;
        s *= dims[perm[i]] > 0 ? dims[perm[i]] : 1;
    }
    return (PyArrayObject *)sk_alloc_array(descr, nd, dims, strides);
}

static int
sk_check_array(PyObject *obj, const char *name)
{
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a numpy.ndarray, got %s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

int
sk_check_dtypes(PyArray_Descr *descr, PyArray_Descr *cdescr)
{
    if (PyDataType_REFCHK(descr) || descr->elsize <= 0) {
        PyErr_Format(PyExc_TypeError, "the select kernel does not handle dtype %R",
                     (PyObject *)descr);
        return -1;
    }
    const npy_intp csz = cdescr->elsize;
    if (PyDataType_REFCHK(cdescr) || !(csz == 1 || csz == 2 || csz == 4 || csz == 8)) {
        PyErr_Format(PyExc_TypeError,
                     "the select kernel needs a cond of 1, 2, 4 or 8 bytes, got %R",
                     (PyObject *)cdescr);
        return -1;
    }
    return 0;
}

/* What explain() reports about a prepared job instead of running it. */
static PyObject *
sk_describe(const sk_job *J, int temporary)
{
    PyObject *shape = PyTuple_New(J->nd);
    PyObject *strides = PyTuple_New(4);
    if (shape == NULL || strides == NULL) {
        Py_XDECREF(shape);
        Py_XDECREF(strides);
        return NULL;
    }
    for (int d = 0; d < J->nd; d++) {
        PyObject *n = PyLong_FromSsize_t(J->shape[d]);
        if (n == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(shape, d, n);
    }
    for (int k = 0; k < 4; k++) {
        PyObject *t = PyTuple_New(J->nd);
        if (t == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(strides, k, t); /* the tuple owns it, filled or not */
        for (int d = 0; d < J->nd; d++) {
            PyObject *n = PyLong_FromSsize_t(J->strides[k][d]);
            if (n == NULL) {
                goto fail;
            }
            PyTuple_SET_ITEM(t, d, n);
        }
    }
    const int parts = sk_parts_for(J);
    return Py_BuildValue("{s:N,s:N,s:s,s:s,s:s,s:(nn),s:i,s:n,s:O}", "shape", shape,
                         "strides", strides, "loop", J->loop_name, "isa", J->isa, "stores",
                         J->stream ? "streaming" : "cached", "tile",
                         (Py_ssize_t)J->tile_r, (Py_ssize_t)J->tile_w, "threads", parts,
                         "chunk", (Py_ssize_t)(parts > 1 ? sk_chunk_for(J, parts) : J->total),
                         "temporary", temporary ? Py_True : Py_False);
fail: /* tuples free the items they hold and skip the slots still empty */
    Py_DECREF(shape);
    Py_DECREF(strides);
    return NULL;
}

/*
 * The kernel proper: out = select(cond, then, else) for operands given by
 * their strides per output dimension (0 where they broadcast) and data
 * pointers (a Python scalar is a 0-d operand over a buffer). `out_arr` is NULL
 * (allocate, in the inputs' memory order) or an array of the output shape and
 * item size. Returns a new reference.
 */
PyObject *
sk_core(PyArray_Descr *descr, npy_intp csz, npy_intp strides[4][SK_MAXDIMS], char *in_data[3],
        PyArrayObject *out_arr, int nd, const npy_intp *out_dims, int explain, int max_threads,
        int on_openmp)
{
    char *data[4];
    const npy_intp isz = descr->elsize;
    npy_intp total = 1;

    for (int d = 0; d < nd; d++) {
        if (out_dims[d] != 0 && total > NPY_MAX_INTP / out_dims[d]) {
            PyErr_SetString(PyExc_ValueError, "output shape is too large");
            return NULL;
        }
        total *= out_dims[d];
    }
    for (int k = 0; k < 3; k++) {
        data[k] = in_data[k];
    }

    PyArrayObject *out;
    int alias[3] = {0, 0, 0};
    int need_temp = 0;
    if (out_arr == NULL) {
        out = sk_new_output(descr, nd, out_dims, strides);
        if (out == NULL) {
            return NULL;
        }
    }
    else {
        out = out_arr;
        if (PyArray_NDIM(out) != nd) {
            goto bad_out_shape;
        }
        for (int d = 0; d < nd; d++) {
            if (PyArray_DIMS(out)[d] != out_dims[d]) {
                goto bad_out_shape;
            }
        }
        if (PyDataType_REFCHK(PyArray_DESCR(out))) {
            PyErr_SetString(PyExc_TypeError, "the select kernel cannot write into an out of references");
            return NULL;
        }
        if (PyArray_ITEMSIZE(out) != isz) {
            PyErr_SetString(PyExc_TypeError, "internal error: out has the wrong item size");
            return NULL;
        }
        if (PyArray_FailUnlessWriteable(out, "out") < 0) {
            return NULL;
        }
        Py_INCREF(out);
    }
    if (total == 0) {
        if (explain) {
            Py_DECREF(out);
            return Py_BuildValue("{s:O}", "loop", Py_None);
        }
        return (PyObject *)out;
    }
    for (int d = 0; d < nd; d++) {
        strides[OP_O][d] = out_dims[d] == 1 ? 0 : PyArray_STRIDES(out)[d];
    }
    data[OP_O] = PyArray_BYTES(out);
    if (out_arr != NULL) {
        const npy_intp in_isz[3] = {csz, isz, isz};
        for (int k = 0; k < 3; k++) {
            int rel = sk_overlap(data[k], strides[k], in_isz[k], data[OP_O], strides[OP_O], isz,
                                 nd, out_dims);
            if (rel == 2) {
                need_temp = 1;
            }
            alias[k] = rel == 1;
        }
    }

    sk_job job;
    if (!need_temp) {
        sk_prepare(&job, nd, out_dims, strides, data, isz, csz, alias[1], alias[2], alias[0]);
        job.max_threads = max_threads;
        job.on_openmp = on_openmp;
        if (explain) {
            Py_DECREF(out);
            return sk_describe(&job, 0);
        }
        sk_execute(&job);
        return (PyObject *)out;
    }

    /* out partially overlaps an input: compute into a temporary, then copy. */
    Py_INCREF(descr);
    PyArrayObject *tmp =
        (PyArrayObject *)PyArray_NewLikeArray(out, NPY_KEEPORDER, descr, 0);
    if (tmp == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    for (int d = 0; d < nd; d++) {
        strides[OP_O][d] = out_dims[d] == 1 ? 0 : PyArray_STRIDES(tmp)[d];
    }
    data[OP_O] = PyArray_BYTES(tmp);
    sk_prepare(&job, nd, out_dims, strides, data, isz, csz, 0, 0, 0);
    job.max_threads = max_threads;
    job.on_openmp = on_openmp;
    if (explain) {
        Py_DECREF(tmp);
        Py_DECREF(out);
        return sk_describe(&job, 1);
    }
    sk_execute(&job);
    sk_atomic_inc_u64(&sk_temp_calls);
    if (PyArray_CopyInto(out, tmp) < 0) {
        Py_DECREF(tmp);
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(tmp);
    return (PyObject *)out;

bad_out_shape:
    PyErr_SetString(PyExc_ValueError, "internal error: out does not have the output shape");
    return NULL;
}

/*
 * select(cond, then, else_, out, out_shape, cond_dims, then_dims, else_dims[, max_threads[,
 *        on_openmp]])
 *
 * The core has validated everything and made the plan (out_shape and, per
 * input, SelectPlan.dims or None for right-aligned); this checks again only
 * what would make the loops unsafe. max_threads (default 0: none) caps the
 * threads of this one call, and a true on_openmp (default false) splits it on
 * the OpenMP runtime set by set_openmp, where one is (the PyTorch backend
 * passes torch's thread count and true: see sk_pool.c).
 */
static PyObject *
sk_select_impl(PyObject *const *args, Py_ssize_t nargs, int explain)
{
    static const char *names[3] = {"cond", "then", "else"};
    npy_intp strides[4][SK_MAXDIMS];
    char *data[3];
    npy_intp out_dims[SK_MAXDIMS];
    int nd;

    int max_threads = 0, on_openmp = 0;
    if (nargs < 8 || nargs > 10) {
        PyErr_SetString(PyExc_TypeError, "select() takes 8 to 10 arguments");
        return NULL;
    }
    if (nargs == 10) {
        on_openmp = PyObject_IsTrue(args[9]);
        if (on_openmp < 0) {
            return NULL;
        }
    }
    if (nargs >= 9) {
        long cap = PyLong_AsLong(args[8]);
        if (cap == -1 && PyErr_Occurred()) {
            return NULL;
        }
        max_threads = cap < 0 ? 0 : cap > SK_MAX_THREADS ? SK_MAX_THREADS : (int)cap;
    }
    for (int k = 0; k < 3; k++) {
        if (sk_check_array(args[k], names[k]) < 0) {
            return NULL;
        }
    }
    if (args[3] != Py_None && sk_check_array(args[3], "out") < 0) {
        return NULL;
    }
    PyArray_Descr *descr = PyArray_DESCR((PyArrayObject *)args[1]);
    if (PyArray_ITEMSIZE((PyArrayObject *)args[2]) != descr->elsize) {
        PyErr_SetString(PyExc_TypeError, "internal error: then and else differ in item size");
        return NULL;
    }
    if (sk_check_dtypes(descr, PyArray_DESCR((PyArrayObject *)args[0])) < 0) {
        return NULL;
    }
    if (sk_parse_shape(args[4], "out_shape", &nd, out_dims) < 0) {
        return NULL;
    }
    for (int k = 0; k < 3; k++) {
        sk_dims D;
        PyArrayObject *arr = (PyArrayObject *)args[k];
        if (sk_parse_dims(args[5 + k], names[k], nd, &D) < 0 ||
            sk_place(PyArray_NDIM(arr), PyArray_DIMS(arr), PyArray_STRIDES(arr), &D, nd,
                     out_dims, names[k], strides[k]) < 0) {
            return NULL;
        }
        data[k] = PyArray_BYTES(arr);
    }
    return sk_core(descr, PyArray_ITEMSIZE((PyArrayObject *)args[0]), strides, data,
                   args[3] == Py_None ? NULL : (PyArrayObject *)args[3], nd, out_dims, explain,
                   max_threads, on_openmp);
}

static PyObject *
sk_select(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    return sk_select_impl(args, nargs, 0);
}

/* explain(...): the arguments of select(); how it would run (nothing is written). */
static PyObject *
sk_explain(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    return sk_select_impl(args, nargs, 1);
}

/* ------------------------------------------------------------------------ */
/* Settings and statistics                                                  */
/* ------------------------------------------------------------------------ */

static PyObject *
sk_set_num_threads(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 1 || n > SK_MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "the number of threads must be in [1, %d], got %ld",
                     SK_MAX_THREADS, n);
        return NULL;
    }
#if SK_HAVE_THREADS
    SK_STORE(sk_num_threads, (int)n);
#else
    SK_STORE(sk_num_threads, 1);
#endif
    Py_RETURN_NONE;
}

static PyObject *
sk_get_num_threads(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyLong_FromLong(SK_LOAD(sk_num_threads));
}

/* A threshold argument: an int >= 0 into *n; -1 with an exception otherwise. */
static int
sk_threshold_arg(PyObject *arg, npy_intp *n)
{
    const Py_ssize_t v = PyLong_AsSsize_t(arg);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v < 0) {
        PyErr_SetString(PyExc_ValueError, "the threshold must be >= 0");
        return -1;
    }
    *n = (npy_intp)v;
    return 0;
}

static PyObject *
sk_set_parallel_min(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    npy_intp n;
    if (sk_threshold_arg(arg, &n) < 0) {
        return NULL;
    }
    SK_STORE(sk_parallel_min, n);
    Py_RETURN_NONE;
}

/* set_stream_min(n): bytes a job moves from which it streams its output (sk_plan.c). */
static PyObject *
sk_set_stream_min(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    npy_intp n;
    if (sk_threshold_arg(arg, &n) < 0) {
        return NULL;
    }
    SK_STORE(sk_stream_min, n);
    Py_RETURN_NONE;
}

static PyObject *
sk_get_stream_min(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyLong_FromSsize_t(SK_LOAD(sk_stream_min));
}

/* set_load_guard(on): whether the room on the machine limits the threads. */
static PyObject *
sk_set_load_guard(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    const int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    sk_pool_configure(on, -1, -1);
    Py_RETURN_NONE;
}

/* set_spin_us(worker, caller): how long idle workers and the waiting caller spin. */
static PyObject *
sk_set_spin_us(PyObject *NPY_UNUSED(self), PyObject *args)
{
    double worker, caller;
    if (!PyArg_ParseTuple(args, "dd", &worker, &caller)) {
        return NULL;
    }
    if (!(worker >= 0 && worker <= 1e6 && caller >= 0 && caller <= 1e6)) {
        PyErr_SetString(PyExc_ValueError, "spins must be in [0, 10^6] microseconds");
        return NULL;
    }
    sk_pool_configure(-1, worker * 1e-6, caller * 1e-6);
    Py_RETURN_NONE;
}

/*
 * set_openmp(address): the address of an OpenMP runtime's GOMP_parallel (an
 * int; 0: none), on whose threads calls with a true on_openmp are split. The
 * PyTorch backend passes the one torch runs on (sk_pool.c says why).
 */
static PyObject *
sk_set_openmp(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    void *address = PyLong_AsVoidPtr(arg);
    if (address == NULL && PyErr_Occurred()) {
        return NULL;
    }
    /* A data address to a function pointer: what dlsym's users do on every POSIX
     * system and Windows (memcpy keeps -Wpedantic quiet). */
    void (*gomp_parallel)(void (*)(void *), void *, unsigned, unsigned);
    memcpy(&gomp_parallel, &address, sizeof(gomp_parallel));
    sk_pool_set_openmp(gomp_parallel);
    Py_RETURN_NONE;
}

/* shutdown_pool(): stop and join the worker threads (the next parallel call restarts them). */
static PyObject *
sk_shutdown_pool(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    Py_BEGIN_ALLOW_THREADS
    sk_pool_shutdown();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *
sk_pool_workers_count(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyLong_FromLong(sk_pool_workers());
}

static PyObject *
sk_get_parallel_min(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return PyLong_FromSsize_t(SK_LOAD(sk_parallel_min));
}

static PyObject *
sk_stats(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    return sk_pool_stats();
}

/* set_isa(name): use the loops of "baseline", "avx2" or "avx512" from the next call on. */
static PyObject *
sk_set_isa(PyObject *NPY_UNUSED(self), PyObject *arg)
{
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (name == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "set_isa() takes a str, got %s", Py_TYPE(arg)->tp_name);
        }
        return NULL;
    }
    const int isa = sk_isa_from_name(name);
    if (isa < 0 || sk_isa_use(isa) < 0) {
        PyErr_Format(PyExc_ValueError,
                     "instruction set %R is unknown, not compiled in or not supported by this "
                     "CPU (the best here: %s)",
                     arg, sk_isa_name(sk_isa_supported()));
        return NULL;
    }
    Py_RETURN_NONE;
}

/* isa_info(): the instruction set in use, the best one here, and those compiled in. */
static PyObject *
sk_isa_info(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    const int best = sk_isa_supported();
    PyObject *compiled = PyList_New(0), *usable = PyList_New(0);
    if (compiled == NULL || usable == NULL) {
        goto fail;
    }
    for (int i = 0; i < SK_ISA_COUNT; i++) {
        if (sk_loops_compiled(i) == NULL) {
            continue;
        }
        PyObject *name = PyUnicode_FromString(sk_isa_name(i));
        if (name == NULL || PyList_Append(compiled, name) < 0 ||
            (i <= best && PyList_Append(usable, name) < 0)) {
            Py_XDECREF(name);
            goto fail;
        }
        Py_DECREF(name);
    }
    return Py_BuildValue("{s:s,s:s,s:N,s:N}", "current", sk_isa_name(sk_isa_current()), "best",
                         sk_isa_name(best), "usable", usable, "compiled", compiled);
fail:
    Py_XDECREF(compiled);
    Py_XDECREF(usable);
    return NULL;
}

/* At import: the best instruction set, or the one ARRAYSELECT_CPU asks for. */
static int
sk_isa_init(void)
{
    const int best = sk_isa_supported();
    sk_isa_use(best);
    const char *want = getenv("ARRAYSELECT_CPU");
    if (want == NULL || want[0] == 0) {
        return 0;
    }
    const int isa = sk_isa_from_name(want);
    if (isa >= 0 && sk_isa_use(isa) == 0) {
        return 0;
    }
    return PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                            "ignoring ARRAYSELECT_CPU=%s: expected baseline, avx2 or avx512, "
                            "at most %s here; using %s",
                            want, sk_isa_name(best), sk_isa_name(best));
}

/*
 * For threadpoolctl, which finds thread pools by walking the shared objects
 * loaded in the process and matching file names and symbols: these two
 * exported C functions mark this module as a pool it can control (see
 * kernel.py's controller, which sets the count through arrayselect's settings
 * so that they agree). They read and write the kernel's thread count.
 */
/* Windows first: mingw-w64's GCC needs dllexport too (visibility is ELF/Mach-O only). */
#if defined(_WIN32)
#define SK_EXPORT __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define SK_EXPORT __attribute__((visibility("default")))
#else
#define SK_EXPORT
#endif

SK_EXPORT int arrayselect_get_num_threads(void);
SK_EXPORT void arrayselect_set_num_threads(int n);

SK_EXPORT int
arrayselect_get_num_threads(void)
{
    return SK_LOAD(sk_num_threads);
}

SK_EXPORT void
arrayselect_set_num_threads(int n)
{
#if SK_HAVE_THREADS
    SK_STORE(sk_num_threads, n < 1 ? 1 : n > SK_MAX_THREADS ? SK_MAX_THREADS : n);
#else
    (void)n;
#endif
}

static PyMethodDef sk_methods[] = {
    {"select", (PyCFunction)(void (*)(void))sk_select, METH_FASTCALL,
     "select(cond, then, else_, out, out_shape, cond_dims, then_dims, else_dims)\n"
     "--\n\n"
     "out = cond ? then : else on raw bits. Inputs are ndarrays; each *_dims is None\n"
     "(right-aligned) or the plan's SelectPlan.dims for that input: the output dims\n"
     "its leading dims go to (the rest are size 1 and dropped). out is None (a new\n"
     "array in the inputs' memory order) or an array of out_shape and then's item\n"
     "size. Returns the output."},
    {"explain", (PyCFunction)(void (*)(void))sk_explain, METH_FASTCALL,
     "explain(<the arguments of select>): the coalesced iteration shape, strides\n"
     "(cond, then, else, out), inner loop, thread count and whether a temporary\n"
     "is needed, without running anything."},
    {"set_pool_limit", sk_set_pool_limit, METH_O,
     "Most bytes of freed large outputs kept for reuse (0 disables the pool)."},
    {"pool_info", sk_pool_info, METH_NOARGS,
     "The output pool: limit, cached bytes and blocks, hits, misses."},
    {"release_pool", sk_release_pool, METH_NOARGS, "Free every cached output block."},
    {"set_num_threads", sk_set_num_threads, METH_O, "Set the number of threads (>= 1)."},
    {"get_num_threads", sk_get_num_threads, METH_NOARGS, "The number of threads."},
    {"set_parallel_min", sk_set_parallel_min, METH_O,
     "Set the output size (elements) from which work is split across threads."},
    {"set_stream_min", sk_set_stream_min, METH_O,
     "Set the bytes a contiguous job moves from which it streams its output."},
    {"get_stream_min", sk_get_stream_min, METH_NOARGS,
     "The bytes a contiguous job moves from which it streams its output."},
    {"set_load_guard", sk_set_load_guard, METH_O,
     "Whether the cores other processes keep busy limit the threads (default on)."},
    {"set_spin_us", sk_set_spin_us, METH_VARARGS,
     "set_spin_us(worker, caller): microseconds an idle worker spins for the next job,\n"
     "and the caller for the last workers, before sleeping (benchmarks)."},
    {"set_openmp", sk_set_openmp, METH_O,
     "set_openmp(address): split calls marked on_openmp on the OpenMP runtime whose\n"
     "GOMP_parallel is at this address (an int; 0: none)."},
    {"shutdown_pool", sk_shutdown_pool, METH_NOARGS,
     "Stop and join the worker threads; the next parallel call starts them again."},
    {"pool_workers", sk_pool_workers_count, METH_NOARGS, "Worker threads running now."},
    {"get_parallel_min", sk_get_parallel_min, METH_NOARGS,
     "The output size (elements) from which work is split across threads."},
    {"select_n", (PyCFunction)(void (*)(void))sk_select_n, METH_FASTCALL,
     "select_n(which, cases, out, shape)\n"
     "--\n\n"
     "out[i] = cases[which[i]][i] in one pass. which: bool (two cases) or an integer\n"
     "ndarray; cases: a tuple of ndarrays of one item size; each placed in the output\n"
     "shape `shape` as NumPy broadcasts (stride 0 where it is broadcast); out: an array\n"
     "of that shape, or None (a new C-ordered array).\n"
     "An index outside [0, n) raises IndexError(value); out may then be partly written.\n"
     "NotImplemented for operands it does not read as they are (not ndarrays, which\n"
     "in the other byte order)."},
    {"select_cases", (PyCFunction)(void (*)(void))sk_select_cases, METH_FASTCALL,
     "select_cases(conds, choices, default, out, shape)\n"
     "--\n\n"
     "out[i] = choices[k][i] for the first k with conds[k][i] nonzero, else default[i],\n"
     "in one pass. conds: ndarrays of NumPy's bool or integer types; choices and default:\n"
     "ndarrays of one item size; shape and out as for select_n. NotImplemented for\n"
     "operands it does not read as they are (not ndarrays, other conds)."},
    {"apply_take", (PyCFunction)(void (*)(void))sk_apply_take, METH_FASTCALL,
     "apply_take(cond, x)\n--\n\nx's elements where cond is nonzero, 1-D in C order, or\n"
     "NotImplemented for operands other than C-contiguous ndarrays of one shape."},
    {"apply_put", (PyCFunction)(void (*)(void))sk_apply_put, METH_FASTCALL,
     "apply_put(cond, taken, base)\n--\n\nA new array of cond's shape: taken's elements\n"
     "where cond is nonzero, base's (0-d: its value) elsewhere, or NotImplemented."},
    {"set_isa", sk_set_isa, METH_O,
     "Use the loops of this instruction set (baseline, avx2, avx512) from the next call on."},
    {"isa_info", sk_isa_info, METH_NOARGS,
     "The instruction set in use ('current'), the best one this CPU supports, those\n"
     "usable here and those compiled in."},
    {"stats", sk_stats, METH_NOARGS,
     "Counters (kernel calls, calls run on several threads, calls given fewer threads\n"
     "because other processes kept the cores busy, calls through a temporary) and the\n"
     "state of the room guard."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef sk_module = {
    PyModuleDef_HEAD_INIT, "_select_kernel",
    "The compiled Select kernel of arrayselect's NumPy backend.", -1, sk_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__select_kernel(void)
{
    import_array();
#if SK_HAVE_THREADS
    static int atfork_done = 0;
    if (!atfork_done) {
        sk_os_atfork_child(sk_pool_atfork_child);
        sk_os_atfork_child(sk_memory_atfork_child);
        atfork_done = 1;
    }
#endif
    PyObject *m = PyModule_Create(&sk_module);
    if (m == NULL) {
        return NULL;
    }
#ifdef Py_GIL_DISABLED
    /* Safe without the GIL: Prepared is immutable (sk_prepared.c), the output
     * pool its own lock (sk_memory.c), the thread pool its locks and atomics
     * (sk_pool.c), and counters and settings are atomic. */
    /* Single-phase init: this call is what the Py_mod_gil slot declares for a
       multi-phase module; the free-threaded CI job checks the GIL stays off. */
    PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
    sk_stream_init();
    if (sk_memory_init() < 0 || sk_isa_init() < 0 || sk_prepared_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *stream_min = PyLong_FromSsize_t(sk_stream_default());
    const int added = PyModule_AddObjectRef(m, "DEFAULT_STREAM_MIN", stream_min);
    Py_XDECREF(stream_min);
    if (added < 0 || PyModule_AddIntConstant(m, "HAVE_THREADS", SK_HAVE_THREADS) < 0 ||
        PyModule_AddIntConstant(m, "DEFAULT_PARALLEL_MIN", SK_DEFAULT_PARALLEL_MIN) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
