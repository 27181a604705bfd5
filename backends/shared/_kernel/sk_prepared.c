/*
 * sk_prepared.c: the NumPy backend's two compiled parts of the core's hit path.
 *
 * The core keeps what its validation decided per call signature in one kind of
 * cache (arrayselect.plugin.SignatureCache), whose hit path is
 * arrayselect._dispatch._fastcall: it builds the call's key, looks it up, re-checks
 * a Python scalar against the range the core derived, and runs what the cache's
 * `prepare` made of the decision. The NumPy backend gives it two things, here,
 * and keeps no cache of its own:
 *
 * - The raw signature of an array (the capsule RAW_SIGNATURE, read by the hit
 *   path; signature(x) is its Python face, Backend.signature): what a decision
 *   and the core's check of `out` depend on about a NumPy array, as the bytes of
 *   (type number, ndim, writeable flag, dims, strides). The hit path writes
 *   them straight into the call's key, instead of calling a Python function and
 *   building an object per operand. A decision reads the shape and dtype; the
 *   core's check_out_layout(backend, out) reads NumpyBackend.shape and
 *   .out_layout alone, that is out's shape, writeable flag, strides and item
 *   size: so equal signatures of `out` get the core's verdict on it again, and
 *   the backend says so (NumpyBackend.signature_holds_out_layout), sparing a hit
 *   the check. An array whose dtype is not its type number's own descriptor
 *   (PyArray_DescrFromType: every native built-in dtype and ml_dtypes' are; a
 *   byte-swapped one, one with metadata, 'U5', 'M8[s]' are not) has no raw form:
 *   signature(x) is then the tuple (shape, dtype, strides, writeable). Bytes
 *   never equal a tuple, and two raw signatures are equal only for one type
 *   number (so one dtype) and one layout. (Equal dtypes under two type numbers,
 *   'q' and 'l' where both are 64 bits, get two keys: a decision made again,
 *   never a wrong one.) The bytes are self-delimiting (their length follows from
 *   ndim), so the hit path may join several into one key.
 * - Prepared: what the cache's `prepare` makes of a select decision, its plan
 *   and output dtype, called as prepared(cond, then, else_[, out]) with the
 *   arrays, or one Python scalar the hit path has checked and converted
 *   (ScalarRange.admits and .prepare). It places the inputs on the output shape
 *   as the plan says, packs the scalar into the output dtype, and runs the
 *   kernel. Operands it does not take as they are (a cond of an odd item size,
 *   which the backend converts) go to the backend's own run with the decision.
 *
 * Threads: a Prepared never changes after construction, and the raw signature
 * reads only the array it is given, so both are safe without the GIL.
 */

#include "sk_kernel.h"

#include <stddef.h> /* offsetof */

/* ------------------------------------------------------------------------ */
/* The raw signature                                                        */
/* ------------------------------------------------------------------------ */

/* The built-in type numbers' own descriptors (NumPy keeps them for good), read at
 * import: asking PyArray_DescrFromType on every call was a tenth of a small call's key. */
static PyArray_Descr *sk_builtin_descr[NPY_NTYPES_LEGACY];

/* Whether `descr` is its type number's own descriptor. */
static int
sk_own_descr(PyArray_Descr *descr)
{
    const int tn = descr->type_num;
    if (tn >= 0 && tn < NPY_NTYPES_LEGACY && sk_builtin_descr[tn] != NULL) {
        return sk_builtin_descr[tn] == descr;
    }
    PyArray_Descr *own = PyArray_DescrFromType(tn);
    if (own == NULL) {
        PyErr_Clear(); /* a type number without a descriptor of its own */
        return 0;
    }
    Py_DECREF(own); /* only its identity is compared */
    return own == descr;
}

/*
 * Write x's raw signature into buf (of `size` bytes) if it fits; return its
 * length in bytes (a buffer too small is left untouched: call again with one of
 * that length), or 0 when x has none (signature(x) is then a tuple). Never
 * raises. A 64-bit word (type number << 16 | ndim << 1 | writeable), then the
 * dims and the strides.
 */
static Py_ssize_t
sk_raw_signature(PyObject *x, char *buf, Py_ssize_t size)
{
    if (!PyArray_Check(x)) {
        return 0;
    }
    PyArrayObject *a = (PyArrayObject *)x;
    PyArray_Descr *descr = PyArray_DESCR(a);
    if (!sk_own_descr(descr)) {
        return 0;
    }
    const int nd = PyArray_NDIM(a);
    const Py_ssize_t length = (Py_ssize_t)(sizeof(int64_t) + 2 * sizeof(npy_intp) * (size_t)nd);
    if (length > size) {
        return length;
    }
    const int64_t head = ((int64_t)descr->type_num << 16) | ((int64_t)nd << 1) |
                         (PyArray_ISWRITEABLE(a) ? 1 : 0);
    memcpy(buf, &head, sizeof(head));
    buf += sizeof(head);
    const npy_intp *dims = PyArray_DIMS(a), *strides = PyArray_STRIDES(a);
    for (int d = 0; d < nd; d++) { /* a word at a time (few): no library call */
        memcpy(buf + sizeof(npy_intp) * (size_t)d, dims + d, sizeof(npy_intp));
        memcpy(buf + sizeof(npy_intp) * (size_t)(nd + d), strides + d, sizeof(npy_intp));
    }
    return length;
}

/* signature(x): the raw signature as bytes, else (shape, dtype, strides, writeable). */
static PyObject *
sk_signature(PyObject *NPY_UNUSED(self), PyObject *x)
{
    npy_intp words[1 + 2 * NPY_MAXDIMS];
    const Py_ssize_t length = sk_raw_signature(x, (char *)words, (Py_ssize_t)sizeof(words));
    if (length > 0) {
        return PyBytes_FromStringAndSize((const char *)words, length);
    }
    if (PyArray_Check(x)) {
        PyArrayObject *a = (PyArrayObject *)x;
        PyObject *shape = PyArray_IntTupleFromIntp(PyArray_NDIM(a), PyArray_DIMS(a));
        PyObject *strides = PyArray_IntTupleFromIntp(PyArray_NDIM(a), PyArray_STRIDES(a));
        PyObject *sig = shape && strides ? Py_BuildValue("(OOOO)", shape, PyArray_DESCR(a), strides,
                                                         PyArray_ISWRITEABLE(a) ? Py_True : Py_False)
                                         : NULL;
        Py_XDECREF(shape);
        Py_XDECREF(strides);
        return sig;
    }
    /* not an ndarray (a signature is asked only of arrays): what the core reads */
    PyObject *shape = PyObject_GetAttrString(x, "shape");
    PyObject *dtype = shape ? PyObject_GetAttrString(x, "dtype") : NULL;
    PyObject *sig = dtype ? PyTuple_Pack(2, shape, dtype) : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    return sig;
}

/* ------------------------------------------------------------------------ */
/* Prepared                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * A Prepared holds the plan compactly (a cache may keep a thousand of them): the
 * output's dims, then per input the output dims its kept dims go to, each
 * ob_size (the output's ndim) long.
 */
typedef struct {
    PyObject_VAR_HEAD     /* ob_size: the output's ndim */
    PyArray_Descr *descr; /* the output dtype */
    PyObject *run;        /* run(cond, then, else_, decision, out): the backend's own */
    PyObject *decision;
    vectorcallfunc vectorcall;
    int kept[3];          /* sk_dims.kept of cond, then, else */
    npy_intp dims[1];     /* out dims [nd], then the maps of cond, then, else [3][nd] */
} sk_prepared;

/* Pack a Python scalar into `buf` as `descr` (what np.asarray(value, dtype) does). */
typedef union {
    long double ld[4];
    uint64_t u[8];
    char bytes[64];
} sk_scalar_buf;

static int
sk_is_scalar(PyObject *x)
{
    PyTypeObject *t = Py_TYPE(x);
    return t == &PyBool_Type || t == &PyLong_Type || t == &PyFloat_Type ||
           t == &PyComplex_Type;
}

static PyObject *
sk_prepared_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    static const char *names[3] = {"cond", "then", "else"};
    sk_prepared *self = (sk_prepared *)callable;
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((nargs != 3 && nargs != 4) || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "a Prepared takes (cond, then, else_[, out])");
        return NULL;
    }
    PyObject *cond = args[0], *out = nargs == 4 ? args[3] : Py_None;
    PyArray_Descr *descr = self->descr;
    const int nd = (int)Py_SIZE(self);
    npy_intp strides[4][SK_MAXDIMS];
    char *data[3];
    sk_scalar_buf buf;
    int scalars = 0;
    if (!PyArray_CheckExact(cond) || (out != Py_None && !PyArray_CheckExact(out))) {
        goto fallback;
    }
    const npy_intp csz = PyArray_ITEMSIZE((PyArrayObject *)cond);
    if (csz != 1 && csz != 2 && csz != 4 && csz != 8) {
        goto fallback; /* the backend converts such a cond */
    }
    for (int k = 0; k < 3; k++) {
        PyObject *x = args[k];
        if (PyArray_CheckExact(x)) {
            PyArrayObject *arr = (PyArrayObject *)x;
            if (k > 0 && PyArray_ITEMSIZE(arr) != descr->elsize) {
                PyErr_Format(PyExc_TypeError, "internal error: %s's item size is not the output's",
                             names[k]);
                return NULL;
            }
            sk_dims place;
            place.kept = self->kept[k];
            const npy_intp *map = self->dims + (k + 1) * nd;
            for (int i = 0; i < place.kept; i++) {
                place.map[i] = (int)map[i];
            }
            if (sk_place(PyArray_NDIM(arr), PyArray_DIMS(arr), PyArray_STRIDES(arr), &place, nd,
                         self->dims, names[k], strides[k]) < 0) {
                return NULL;
            }
            data[k] = PyArray_BYTES(arr);
            continue;
        }
        if (k == 0 || scalars++ || !sk_is_scalar(x) ||
            descr->elsize > (npy_intp)sizeof(sk_scalar_buf)) {
            goto fallback;
        }
        memset(buf.bytes, 0, sizeof(sk_scalar_buf));
        if (PyArray_Pack(descr, buf.bytes, x) < 0) {
            return NULL;
        }
        for (int d = 0; d < nd; d++) {
            strides[k][d] = 0;
        }
        data[k] = buf.bytes;
    }
    if (sk_check_dtypes(descr, PyArray_DESCR((PyArrayObject *)cond)) < 0) {
        return NULL;
    }
    return sk_core(descr, csz, strides, data, out == Py_None ? NULL : (PyArrayObject *)out, nd,
                   self->dims, 0, 0, 0);
fallback:;
    PyObject *rargs[5] = {args[0], args[1], args[2], self->decision, out};
    return PyObject_Vectorcall(self->run, rargs, 5, NULL);
}

static PyObject *
sk_prepared_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static const char *names[3] = {"cond", "then", "else"};
    PyObject *out_shape, *dims[3], *dtype, *run, *decision;
    npy_intp out_dims[SK_MAXDIMS];
    sk_dims place[3];
    int nd;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "Prepared() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOOOO!OO:Prepared", &out_shape, &dims[0], &dims[1], &dims[2],
                          &PyArrayDescr_Type, &dtype, &run, &decision)) {
        return NULL;
    }
    if (!PyCallable_Check(run)) {
        PyErr_SetString(PyExc_TypeError, "Prepared(): run must be callable");
        return NULL;
    }
    if (sk_parse_shape(out_shape, "out_shape", &nd, out_dims) < 0) {
        return NULL;
    }
    for (int k = 0; k < 3; k++) {
        if (sk_parse_dims(dims[k], names[k], nd, &place[k]) < 0) {
            return NULL;
        }
    }
    sk_prepared *self = (sk_prepared *)type->tp_alloc(type, nd);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = sk_prepared_call;
    memcpy(self->dims, out_dims, sizeof(npy_intp) * (size_t)nd);
    for (int k = 0; k < 3; k++) {
        self->kept[k] = place[k].kept;
        for (int i = 0; i < place[k].kept; i++) {
            self->dims[(k + 1) * nd + i] = place[k].map[i];
        }
    }
    self->descr = (PyArray_Descr *)Py_NewRef(dtype);
    self->run = Py_NewRef(run);
    self->decision = Py_NewRef(decision);
    return (PyObject *)self;
}

static int
sk_prepared_traverse(sk_prepared *self, visitproc visit, void *arg)
{
    Py_VISIT(self->descr);
    Py_VISIT(self->run);
    Py_VISIT(self->decision);
    return 0;
}

static int
sk_prepared_clear(sk_prepared *self)
{
    Py_CLEAR(self->descr);
    Py_CLEAR(self->run);
    Py_CLEAR(self->decision);
    return 0;
}

static void
sk_prepared_dealloc(sk_prepared *self)
{
    PyObject_GC_UnTrack(self); /* so the collector never sees it half cleared */
    sk_prepared_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Garbage-collected, called through vectorcall, of a variable size (4 words per output
 * dimension). */
static PyTypeObject sk_prepared_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "arrayselect.backends.shared._select_kernel.Prepared",
    .tp_basicsize = offsetof(sk_prepared, dims),
    .tp_itemsize = 4 * sizeof(npy_intp),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = sk_prepared_new,
    .tp_dealloc = (destructor)sk_prepared_dealloc,
    .tp_traverse = (traverseproc)sk_prepared_traverse,
    .tp_clear = (inquiry)sk_prepared_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(sk_prepared, vectorcall),
    .tp_doc = "Prepared(out_shape, cond_dims, then_dims, else_dims, dtype, run, decision)\n--\n\n"
              "A validated select's plan and output dtype: call it with (cond, then, else_[, "
              "out]), arrays or one checked Python scalar, to run the kernel; other operands go "
              "to run(cond, then, else_, decision, out).",
};

static PyMethodDef sk_signature_def = {
    "signature", sk_signature, METH_O,
    "signature(x)\n--\n\n"
    "What a decision and the core's check of out depend on about a NumPy array, as a key:\n"
    "the bytes of (type number, ndim, writeable, dims, strides), or (shape, dtype, strides,\n"
    "writeable) for a dtype that is not its type number's own."};

int
sk_prepared_init(PyObject *m)
{
    for (int tn = 0; tn < NPY_NTYPES_LEGACY; tn++) {
        sk_builtin_descr[tn] = PyArray_DescrFromType(tn); /* kept: NumPy keeps them too */
        if (sk_builtin_descr[tn] == NULL) {
            PyErr_Clear();
        }
    }
    PyObject *signature = PyCFunction_New(&sk_signature_def, NULL);
    PyObject *raw = PyCapsule_New((void *)sk_raw_signature, "arrayselect.raw_signature", NULL);
    int r = signature == NULL || raw == NULL || PyModule_AddObjectRef(m, "signature", signature) < 0 ||
            PyModule_AddObjectRef(m, "RAW_SIGNATURE", raw) < 0 ||
            PyType_Ready(&sk_prepared_type) < 0 ||
            PyModule_AddObjectRef(m, "Prepared", (PyObject *)&sk_prepared_type) < 0;
    Py_XDECREF(signature);
    Py_XDECREF(raw);
    return r ? -1 : 0;
}
