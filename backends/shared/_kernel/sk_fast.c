/*
 * sk_fast.c: the plan cache behind fast_select, the lean call path for NumPy inputs.
 *
 * fast_select(cond, then, else_, auto_broadcast, axis, cond_broadcast, out) is
 * the NumPy backend's fast path (arrayselect.plugin.FastPath), the C edition of
 * the core's SignatureCache: it looks the call's signature up in a cache of
 * what the core's validation decided (arrayselect.plugin.Decision), keyed on
 * (which of then/else is a Python scalar, shapes, dtypes or scalar types,
 * auto_broadcast, axis, cond_broadcast, out's shape and dtype). Entries are
 * stored only by `remember`, which the Python miss handler calls after the
 * core's validation has passed. On a hit only what depends on values is
 * checked again, with what the core handed over: a Python scalar against the
 * range the core derived (ScalarRange.admits: low <= value <= high, each part
 * of a complex), and `out`'s memory: the core's verdict on it, cached (see
 * "out's verdict" below), else the core's check_out_layout. Any doubt goes to
 * the general path, which raises the error. Calls this path does
 * not know (subclasses, NumPy scalars, options of other types, two Python
 * scalars) return NotImplemented. The cache is a direct-mapped table.
 *
 * Threads. With the GIL, the GIL guards the table. A free-threaded build
 * (Py_GIL_DISABLED) guards it with sk_cache_mu, a PyMutex (which lets the
 * waiting thread detach, so a stop-the-world pause cannot deadlock on it):
 * under it a call compares its key with the slot's and copies what it needs
 * (taking references to the objects the entry owns); everything that may run
 * Python code (a scalar's range check, check_out, the miss and general paths,
 * the kernel) runs on the copy, after the lock is released. `remember`,
 * `clear_cache` and `configure` swap entries and callables under the lock
 * and release the old references after it. The table's and the callables'
 * state is the same in both builds.
 */

#include "sk_kernel.h"

#define SK_CACHE_SLOTS 1024
#define SK_CACHE_MAXDIM 16

enum { SK_ARRAYS = 0, SK_THEN_SCALAR = 1, SK_ELSE_SCALAR = 2 };

typedef struct {
    int nd;
    npy_intp dims[SK_CACHE_MAXDIM];
} sk_shape;

typedef struct {
    /* key */
    int combo;
    int has_out;
    Py_hash_t hash;
    PyObject *ab, *cb;            /* exact str */
    Py_ssize_t axis;
    PyObject *ckey, *tkey, *ekey; /* dtypes, or Python scalar types (borrowed in a probe) */
    PyObject *okey;               /* out's dtype, or NULL */
    sk_shape shape[4];            /* cond, then, else (0-d for a scalar), out */
} sk_key;

/* A ScalarRange of the core: the values a scalar operand certainly may take. */
typedef struct {
    PyObject *low, *high; /* owned; exact ints or floats */
    int as_float;         /* convert a Python int through a Python float */
} sk_range;

/*
 * out's verdict. The core's check_out_layout(backend, out) raises or passes
 * according to backend.shape(out) and backend.out_layout(out) alone: the
 * writeable flag, the strides and the item size (its docstring and body). For
 * the NumPy backend those are out.shape, out.flags.writeable, out.strides and
 * out.itemsize (NumpyBackend.out_layout and .shape), so the verdict is a
 * function of (shape, itemsize, strides, writeable). An entry's key fixes
 * out's shape and dtype, hence its item size; the entry keeps the strides of
 * an out the core accepted (writeable, since it accepted it), set by
 * `remember` right after the core's validation passed with that out, or after
 * check_out_layout passed on a hit. A later out of this entry that is
 * writeable and has those strides gives the same four inputs, so the same
 * verdict: pass, with no call. Anything else (read-only, other strides, a
 * backend whose out_layout is not NumpyBackend's: `configure` says) asks
 * check_out_layout, whose error the general path raises. What can change
 * between two calls with the same key is exactly what is compared: strides and
 * the writeable flag. Overlap of out with the inputs is not part of this
 * verdict: sk_core looks at the addresses on every call. (Another thread
 * setting out.strides, deprecated since NumPy 2.4, while a call is between the
 * check and the kernel races the general path the same way.)
 */
typedef struct {
    int known;                          /* strides below hold an accepted out's */
    npy_intp strides[SK_CACHE_MAXDIM];  /* out's strides (out's nd: the key's) */
} sk_out_verdict;

typedef struct {
    int used;
    sk_key key;           /* owns references to ab, cb, ckey, tkey, ekey, okey */
    sk_shape out;
    sk_dims dims[3];
    PyArray_Descr *odt;   /* output dtype (owned) */
    sk_range range;       /* of the scalar operand, if any */
    sk_out_verdict out_ok;
} sk_entry;

static sk_entry sk_cache[SK_CACHE_SLOTS];
static PyObject *sk_miss = NULL, *sk_general = NULL, *sk_check_out = NULL;
/* configure(): the backend's out_layout is NumpyBackend's, so verdicts may be cached */
static int sk_cache_out_verdict = 0;
/* counters, under the lock (hits, misses) or atomic (out_checks) */
static unsigned long long sk_out_checks = 0;
static unsigned long long sk_fast_hits = 0, sk_fast_misses = 0;

/* Everything above is read and written under this lock (see "Threads"). */
#ifdef Py_GIL_DISABLED
static PyMutex sk_cache_mu = {0};
#define SK_CACHE_LOCK() PyMutex_Lock(&sk_cache_mu)
#define SK_CACHE_UNLOCK() PyMutex_Unlock(&sk_cache_mu)
#else
#define SK_CACHE_LOCK() ((void)0) /* the GIL */
#define SK_CACHE_UNLOCK() ((void)0)
#endif

/* A new reference to one of the configured callables (NULL before configure). */
static PyObject *
sk_callable(PyObject *const *slot)
{
    SK_CACHE_LOCK();
    PyObject *fn = *slot;
    Py_XINCREF(fn);
    SK_CACHE_UNLOCK();
    return fn;
}

static inline Py_hash_t
sk_mix(Py_hash_t h, Py_hash_t v)
{
    return (Py_hash_t)(((size_t)h ^ (size_t)v) * (size_t)1000003u + 0x9e3779b9u);
}

static int
sk_scalar_type(PyObject *x)
{
    PyTypeObject *t = Py_TYPE(x);
    return t == &PyBool_Type || t == &PyLong_Type || t == &PyFloat_Type ||
           t == &PyComplex_Type;
}

/* Add an exact ndarray's shape to a key; 0 if it has too many dimensions. */
static int
sk_key_shape(PyArrayObject *x, sk_shape *S, Py_hash_t *h)
{
    const int nd = PyArray_NDIM(x);
    if (nd > SK_CACHE_MAXDIM) {
        return 0;
    }
    S->nd = nd;
    for (int d = 0; d < nd; d++) {
        S->dims[d] = PyArray_DIMS(x)[d];
        *h = sk_mix(*h, (Py_hash_t)S->dims[d]);
    }
    return 1;
}

/*
 * signature(x): what a validation decision depends on about a NumPy array (the
 * NumPy backend's Backend.signature: its shape and dtype), read from the array
 * itself. An array whose dtype is its type number's own descriptor
 * (PyArray_DescrFromType: every native built-in dtype, ml_dtypes' too) gets the
 * bytes of (type number, ndim, dims): one small object, cheap to hash and
 * compare. Any other (a byte-swapped dtype, one with metadata, 'U5', 'M8[s]', not
 * an ndarray) gets (x.shape, x.dtype). Bytes never equal a tuple, and two bytes
 * are equal only for one type number (so one dtype) and one shape: a key equal
 * to another means the same shape and dtype. (Equal dtypes under two type numbers,
 * 'q' and 'l' where both are 64 bits, get two keys: a decision made again, never a
 * wrong one.) The family's memo keys its decisions with it
 * (arrayselect._dispatch.memo), where signing every operand was most of a small
 * call's lookup.
 */
typedef struct {
    int type_num;
    int nd;
    npy_intp dims[SK_CACHE_MAXDIM];
} sk_signature_bits;

PyObject *
sk_signature(PyObject *NPY_UNUSED(self), PyObject *x)
{
    if (PyArray_Check(x) && PyArray_NDIM((PyArrayObject *)x) <= SK_CACHE_MAXDIM) {
        PyArrayObject *a = (PyArrayObject *)x;
        PyArray_Descr *descr = PyArray_DESCR(a);
        PyArray_Descr *own = PyArray_DescrFromType(descr->type_num);
        const int canonical = own == descr;
        Py_XDECREF(own);
        if (own == NULL) {
            PyErr_Clear(); /* a type number without a descriptor of its own */
        }
        if (canonical) {
            sk_signature_bits bits;
            memset(&bits, 0, sizeof bits);
            bits.type_num = descr->type_num;
            bits.nd = PyArray_NDIM(a);
            for (int d = 0; d < bits.nd; d++) {
                bits.dims[d] = PyArray_DIMS(a)[d];
            }
            const size_t used = offsetof(sk_signature_bits, dims) + sizeof(npy_intp) * (size_t)bits.nd;
            return PyBytes_FromStringAndSize((const char *)&bits, (Py_ssize_t)used);
        }
    }
    PyObject *shape = PyObject_GetAttrString(x, "shape");
    if (shape == NULL) {
        return NULL;
    }
    PyObject *dtype = PyObject_GetAttrString(x, "dtype");
    if (dtype == NULL) {
        Py_DECREF(shape);
        return NULL;
    }
    PyObject *sig = PyTuple_Pack(2, shape, dtype);
    Py_DECREF(shape);
    Py_DECREF(dtype);
    return sig;
}

/*
 * Fill a probe key from the call's objects (borrowed references). Returns 1 on
 * success, 0 when the call is not for this path, -1 on error.
 */
static int
sk_make_key(PyObject *cond, PyObject *then, PyObject *else_, PyObject *ab, PyObject *axis,
            PyObject *cb, PyObject *out, sk_key *K)
{
    if (!PyArray_CheckExact(cond) || !PyUnicode_CheckExact(ab) || !PyUnicode_CheckExact(cb) ||
        !PyLong_CheckExact(axis) || (out != Py_None && !PyArray_CheckExact(out))) {
        return 0;
    }
    const int t_arr = PyArray_CheckExact(then), e_arr = PyArray_CheckExact(else_);
    if (t_arr && e_arr) {
        K->combo = SK_ARRAYS;
    }
    else if (e_arr && sk_scalar_type(then)) {
        K->combo = SK_THEN_SCALAR;
    }
    else if (t_arr && sk_scalar_type(else_)) {
        K->combo = SK_ELSE_SCALAR;
    }
    else {
        return 0; /* two Python scalars (default dtypes) and anything else: general path */
    }
    int overflow = 0;
    K->axis = (Py_ssize_t)PyLong_AsLongLongAndOverflow(axis, &overflow);
    if (overflow || (K->axis == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    K->has_out = out != Py_None;
    PyObject *ops[4] = {cond, then, else_, out};
    PyObject **keys[4] = {&K->ckey, &K->tkey, &K->ekey, &K->okey};
    /* unsigned arithmetic: wraps instead of overflowing for a huge axis */
    Py_hash_t h = (Py_hash_t)((Py_uhash_t)K->combo * 31u + (Py_uhash_t)K->axis * 7u +
                              (Py_uhash_t)K->has_out);
    Py_hash_t hs;
    for (int k = 0; k < 4; k++) {
        PyObject *x = ops[k];
        PyObject *keyobj;
        sk_shape *S = &K->shape[k];
        if (k == 3 && !K->has_out) {
            S->nd = 0;
            K->okey = NULL;
            continue;
        }
        if (PyArray_CheckExact(x)) {
            if (!sk_key_shape((PyArrayObject *)x, S, &h)) {
                return 0;
            }
            keyobj = (PyObject *)PyArray_DESCR((PyArrayObject *)x);
        }
        else {
            S->nd = 0;
            keyobj = (PyObject *)Py_TYPE(x);
        }
        h = sk_mix(h, (Py_hash_t)(S->nd + 101 * k));
        if ((hs = PyObject_Hash(keyobj)) == -1) {
            return -1;
        }
        h = sk_mix(h, hs);
        *keys[k] = keyobj;
    }
    if ((hs = PyObject_Hash(ab)) == -1) {
        return -1;
    }
    h = sk_mix(h, hs);
    if ((hs = PyObject_Hash(cb)) == -1) {
        return -1;
    }
    h = sk_mix(h, hs);
    K->hash = h == -1 ? -2 : h;
    K->ab = ab;
    K->cb = cb;
    return 1;
}

/* Equality of two keys' objects: identity, else value equality (dtypes, str). */
static int
sk_same(PyObject *x, PyObject *y)
{
    if (x == y) {
        return 1;
    }
    if (x == NULL || y == NULL || PyType_Check(x) || PyType_Check(y)) {
        return 0; /* Python scalar types compare by identity only */
    }
    return PyObject_RichCompareBool(x, y, Py_EQ);
}

/* 1: same key, 0: different, -1: error. */
static int
sk_key_equal(const sk_key *A, const sk_key *B)
{
    if (A->hash != B->hash || A->combo != B->combo || A->axis != B->axis ||
        A->has_out != B->has_out) {
        return 0;
    }
    for (int k = 0; k < 4; k++) {
        if (A->shape[k].nd != B->shape[k].nd) {
            return 0;
        }
        for (int d = 0; d < A->shape[k].nd; d++) {
            if (A->shape[k].dims[d] != B->shape[k].dims[d]) {
                return 0;
            }
        }
    }
    PyObject *as[6] = {A->ckey, A->tkey, A->ekey, A->okey, A->ab, A->cb};
    PyObject *bs[6] = {B->ckey, B->tkey, B->ekey, B->okey, B->ab, B->cb};
    for (int i = 0; i < 6; i++) {
        int r = sk_same(as[i], bs[i]);
        if (r != 1) {
            return r;
        }
    }
    return 1;
}

static void
sk_entry_clear(sk_entry *E)
{
    if (!E->used) {
        return;
    }
    E->used = 0;
    Py_CLEAR(E->key.ab);
    Py_CLEAR(E->key.cb);
    Py_CLEAR(E->key.ckey);
    Py_CLEAR(E->key.tkey);
    Py_CLEAR(E->key.ekey);
    Py_CLEAR(E->key.okey);
    Py_CLEAR(E->odt);
    Py_CLEAR(E->range.low);
    Py_CLEAR(E->range.high);
}

/*
 * ScalarRange.admits of the core, on the range it derived: low <= v <= high
 * (each part of a complex). 0 sends the call to the general path, which
 * applies the full rule (inf and nan fit floating dtypes, for example).
 */
static int
sk_admits(const sk_range *R, PyObject *v)
{
    if (PyComplex_CheckExact(v) && PyFloat_CheckExact(R->low) && PyFloat_CheckExact(R->high)) {
        const double lo = PyFloat_AS_DOUBLE(R->low), hi = PyFloat_AS_DOUBLE(R->high);
        const Py_complex z = PyComplex_AsCComplex(v);
        return lo <= z.real && z.real <= hi && lo <= z.imag && z.imag <= hi;
    }
    if (PyFloat_CheckExact(v) && PyFloat_CheckExact(R->low) && PyFloat_CheckExact(R->high)) {
        const double x = PyFloat_AS_DOUBLE(v);
        return PyFloat_AS_DOUBLE(R->low) <= x && x <= PyFloat_AS_DOUBLE(R->high);
    }
    if (PyComplex_CheckExact(v)) {
        return 0;
    }
    int r = PyObject_RichCompareBool(R->low, v, Py_LE); /* exact int/float comparison */
    if (r == 1) {
        r = PyObject_RichCompareBool(v, R->high, Py_LE);
    }
    if (r < 0) {
        PyErr_Clear();
        return 0;
    }
    return r;
}

/* Record `out` (of E's key) as one the core accepted, if verdicts may be cached. */
static void
sk_out_accepted(sk_entry *E, PyObject *out)
{
    if (out == Py_None || !sk_cache_out_verdict) {
        return;
    }
    PyArrayObject *o = (PyArrayObject *)out;
    memcpy(E->out_ok.strides, PyArray_STRIDES(o), sizeof(npy_intp) * (size_t)PyArray_NDIM(o));
    E->out_ok.known = PyArray_ISWRITEABLE(o); /* always, for an out the core accepted */
}

/* 1: out gets the verdict the core gave the entry's recorded out (pass), 0: ask the core. */
static int
sk_out_known(const sk_out_verdict *V, PyArrayObject *out)
{
    if (!V->known || !PyArray_ISWRITEABLE(out)) {
        return 0;
    }
    const npy_intp *st = PyArray_STRIDES(out);
    for (int d = 0; d < PyArray_NDIM(out); d++) {
        if (st[d] != V->strides[d]) {
            return 0;
        }
    }
    return 1;
}

static int
sk_shape_from_tuple(PyObject *t, sk_shape *S)
{
    npy_intp dims[SK_MAXDIMS];
    int nd;
    if (sk_parse_shape(t, "shape", &nd, dims) < 0) {
        return -1;
    }
    if (nd > SK_CACHE_MAXDIM) {
        return 0;
    }
    S->nd = nd;
    memcpy(S->dims, dims, sizeof(npy_intp) * (size_t)nd);
    return 1;
}

/*
 * remember(cond, then, else_, auto_broadcast, axis, cond_broadcast, out,
 *          out_shape, cond_dims, then_dims, else_dims, out_dtype, scalar_range)
 *
 * Store what the core decided for a call it has just validated: the plan
 * (out_shape, each input's dims), the output dtype and, when then or else is a
 * Python scalar, its range as (low, high, as_float). Returns whether it was
 * stored.
 */
PyObject *
sk_remember(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    static const char *names[3] = {"cond", "then", "else"};
    sk_key K;
    sk_entry E;
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "remember() takes exactly 13 arguments");
        return NULL;
    }
    int r = sk_make_key(args[0], args[1], args[2], args[3], args[4], args[5], args[6], &K);
    if (r <= 0) {
        if (r == 0) {
            Py_RETURN_FALSE;
        }
        return NULL;
    }
    if (!PyArray_DescrCheck(args[11])) {
        PyErr_SetString(PyExc_TypeError, "out_dtype must be a numpy.dtype");
        return NULL;
    }
    memset(&E, 0, sizeof(E));
    E.key = K;
    if ((r = sk_shape_from_tuple(args[7], &E.out)) <= 0) {
        if (r == 0) {
            Py_RETURN_FALSE;
        }
        return NULL;
    }
    for (int k = 0; k < 3; k++) {
        if (args[8 + k] == Py_None ||
            sk_parse_dims(args[8 + k], names[k], E.out.nd, &E.dims[k]) < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "remember(): dims must be tuples");
            }
            return NULL;
        }
    }
    PyObject *range = args[12];
    if ((K.combo == SK_ARRAYS) != (range == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "remember(): a scalar operand needs its range");
        return NULL;
    }
    if (range != Py_None) {
        if (!PyTuple_Check(range) || PyTuple_GET_SIZE(range) != 3) {
            PyErr_SetString(PyExc_TypeError, "remember(): range must be (low, high, as_float)");
            return NULL;
        }
        int as_float = PyObject_IsTrue(PyTuple_GET_ITEM(range, 2));
        if (as_float < 0) {
            return NULL;
        }
        E.range.low = PyTuple_GET_ITEM(range, 0);
        E.range.high = PyTuple_GET_ITEM(range, 1);
        E.range.as_float = as_float;
    }
    /* Own every reference the entry keeps. */
    Py_INCREF(K.ab);
    Py_INCREF(K.cb);
    Py_INCREF(K.ckey);
    Py_INCREF(K.tkey);
    Py_INCREF(K.ekey);
    Py_XINCREF(K.okey);
    Py_XINCREF(E.range.low);
    Py_XINCREF(E.range.high);
    E.odt = (PyArray_Descr *)args[11];
    Py_INCREF(E.odt);
    E.used = 1;
    SK_CACHE_LOCK();
    /* The core has just accepted this out (remember runs after its validation). */
    sk_out_accepted(&E, args[6]);
    sk_entry *slot = &sk_cache[(size_t)K.hash % SK_CACHE_SLOTS];
    sk_entry old = *slot;
    *slot = E;
    SK_CACHE_UNLOCK();
    sk_entry_clear(&old); /* after the slot is consistent: decrefs may run code */
    Py_RETURN_TRUE;
}

/* Forget every entry (tests, and a kernel whose decisions must be re-made). */
PyObject *
sk_clear_cache(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    for (int i = 0; i < SK_CACHE_SLOTS; i++) {
        SK_CACHE_LOCK();
        sk_entry old = sk_cache[i];
        sk_cache[i].used = 0;
        SK_CACHE_UNLOCK();
        sk_entry_clear(&old); /* outside the lock: decrefs may run code */
    }
    Py_RETURN_NONE;
}

/*
 * configure(miss, general, check_out, cache_out_verdict)
 *
 * miss and general take the 7 arguments of fast_select (miss validates, runs
 * and remembers; general runs the general path); check_out(out) is the core's
 * check of out's memory (raises when out is read-only or overlaps itself);
 * cache_out_verdict: the backend's out_layout is NumpyBackend's, so the
 * verdict of check_out depends on out's shape, dtype, strides and writeable
 * flag alone and may be cached (see "out's verdict").
 */
PyObject *
sk_configure(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "configure() takes exactly 4 arguments");
        return NULL;
    }
    const int cache_verdict = PyObject_IsTrue(args[3]);
    if (cache_verdict < 0) {
        return NULL;
    }
    PyObject **slots[3] = {&sk_miss, &sk_general, &sk_check_out};
    for (int i = 0; i < 3; i++) {
        if (!PyCallable_Check(args[i])) {
            PyErr_SetString(PyExc_TypeError, "configure(): arguments must be callables");
            return NULL;
        }
    }
    PyObject *old[3];
    SK_CACHE_LOCK();
    for (int i = 0; i < 3; i++) {
        old[i] = *slots[i];
        Py_INCREF(args[i]);
        *slots[i] = args[i];
    }
    sk_cache_out_verdict = cache_verdict;
    /* verdicts recorded under another configuration must not be trusted */
    for (int i = 0; i < SK_CACHE_SLOTS; i++) {
        sk_cache[i].out_ok.known = 0;
    }
    SK_CACHE_UNLOCK();
    for (int i = 0; i < 3; i++) {
        Py_XDECREF(old[i]); /* outside the lock: may run code */
    }
    Py_RETURN_NONE;
}

/* Call the configured callable in *slot with fast_select's 7 arguments. */
static PyObject *
sk_call7(PyObject *const *slot, PyObject *const *args)
{
    PyObject *fn = sk_callable(slot);
    if (fn == NULL) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *r = PyObject_Vectorcall(fn, args, 7, NULL);
    Py_DECREF(fn);
    return r;
}

/* Pack a Python scalar into `buf` as `descr` (what np.asarray(value, dtype) does). */
typedef union {
    long double ld[4];
    uint64_t u[8];
    char bytes[64];
} sk_scalar_buf;

PyObject *
sk_fast_select(PyObject *NPY_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    static const char *names[3] = {"cond", "then", "else"};
    sk_key K;
    npy_intp strides[4][SK_MAXDIMS];
    char *data[3];
    sk_scalar_buf buf;

    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "fast_select() takes exactly 7 arguments");
        return NULL;
    }
    PyObject *cond = args[0], *then = args[1], *else_ = args[2], *out = args[6];
    int r = sk_make_key(cond, then, else_, args[3], args[4], args[5], out, &K);
    if (r <= 0) {
        if (r == 0) {
            Py_RETURN_NOTIMPLEMENTED;
        }
        return NULL;
    }
    SK_CACHE_LOCK();
    if (sk_miss == NULL) {
        SK_CACHE_UNLOCK();
        Py_RETURN_NOTIMPLEMENTED;
    }
    sk_entry *E = &sk_cache[(size_t)K.hash % SK_CACHE_SLOTS];
    r = E->used ? sk_key_equal(&E->key, &K) : 0;
    if (r <= 0) {
        sk_fast_misses += r == 0;
        SK_CACHE_UNLOCK();
        return r < 0 ? NULL : sk_call7(&sk_miss, args);
    }
    sk_fast_hits++;
    /* A hit. Copy what the entry lends, owning its objects: from here on Python
     * code may run (packing a scalar, check_out), and another thread may replace
     * the entry. The copy stays right: it is what the core decided for this key. */
    PyArray_Descr *descr = E->odt;
    Py_INCREF(descr);
    const sk_shape out_shape = E->out;
    const sk_dims dims[3] = {E->dims[0], E->dims[1], E->dims[2]};
    sk_range range = E->range;
    Py_XINCREF(range.low);
    Py_XINCREF(range.high);
    sk_out_verdict verdict;
    verdict.known = 0;
    if (out != Py_None) {
        verdict = E->out_ok;
    }
    SK_CACHE_UNLOCK();
    const int as_float = range.as_float;
    PyObject *result = NULL;

    /* Re-check what depends on values, with what the core handed over. */
    PyObject *scalar = K.combo == SK_THEN_SCALAR ? then : K.combo == SK_ELSE_SCALAR ? else_ : NULL;
    if (scalar != NULL && !sk_admits(&range, scalar)) {
        result = sk_call7(&sk_general, args);
        goto done;
    }
    if (out != Py_None && !sk_out_known(&verdict, (PyArrayObject *)out)) {
        sk_atomic_inc_u64(&sk_out_checks);
        PyObject *check = sk_callable(&sk_check_out);
        PyObject *ok = check == NULL ? NULL : PyObject_CallOneArg(check, out);
        Py_XDECREF(check);
        if (ok == NULL) {
            PyErr_Clear(); /* the general path raises it again, in its order */
            result = sk_call7(&sk_general, args);
            goto done;
        }
        Py_DECREF(ok);
        /* the core has just accepted this out: record it, if the slot still holds
         * this key (the check ran Python code, which may have replaced it) */
        SK_CACHE_LOCK();
        if (E->used && sk_key_equal(&E->key, &K) == 1) {
            sk_out_accepted(E, out);
        }
        SK_CACHE_UNLOCK();
        PyErr_Clear();
    }

    PyObject *ops[3] = {cond, then, else_};
    for (int k = 0; k < 3; k++) {
        if (PyArray_CheckExact(ops[k])) {
            PyArrayObject *arr = (PyArrayObject *)ops[k];
            if (sk_place(PyArray_NDIM(arr), PyArray_DIMS(arr), PyArray_STRIDES(arr), &dims[k],
                         out_shape.nd, out_shape.dims, names[k], strides[k]) < 0) {
                goto done;
            }
            data[k] = PyArray_BYTES(arr);
            continue;
        }
        if (descr->elsize > (npy_intp)sizeof(sk_scalar_buf)) {
            result = sk_call7(&sk_general, args);
            goto done;
        }
        memset(buf.bytes, 0, sizeof(sk_scalar_buf));
        /* ScalarRange.prepare: an int taking a floating dtype goes through a float. */
        PyObject *value = ops[k];
        const int via_float = as_float && PyLong_CheckExact(value);
        if (via_float && (value = PyNumber_Float(value)) == NULL) {
            goto done;
        }
        const int packed = PyArray_Pack(descr, buf.bytes, value);
        if (via_float) {
            Py_DECREF(value);
        }
        if (packed < 0) {
            goto done;
        }
        for (int d = 0; d < out_shape.nd; d++) {
            strides[k][d] = 0;
        }
        data[k] = buf.bytes;
    }
    if (sk_check_dtypes(descr, PyArray_DESCR((PyArrayObject *)cond)) < 0) {
        goto done;
    }
    result = sk_core(descr, PyArray_ITEMSIZE((PyArrayObject *)cond), strides, data,
                     out == Py_None ? NULL : (PyArrayObject *)out, out_shape.nd, out_shape.dims,
                     0, 0, 0);
done:
    Py_DECREF(descr);
    Py_XDECREF(range.low);
    Py_XDECREF(range.high);
    return result;
}

PyObject *
sk_fast_stats(PyObject *NPY_UNUSED(self), PyObject *NPY_UNUSED(args))
{
    SK_CACHE_LOCK();
    const unsigned long long hits = sk_fast_hits, misses = sk_fast_misses;
    SK_CACHE_UNLOCK();
    return Py_BuildValue("{s:K,s:K,s:K}", "hits", hits, "misses", misses, "out_checks",
                         SK_LOAD(sk_out_checks));
}
