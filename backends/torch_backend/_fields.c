/*
 * The torch backend's recent-call check, reading tensor fields below torch's
 * Python layer (see backends/torch_recent.py, which verifies every reading
 * against torch's Python attributes before it lets this module be used).
 *
 * Why: on a one-element call torch.where takes about 1.2-1.5 us, and reading
 * shape, dtype, device and layout of three tensors through torch's Python
 * getters takes about 0.6 us of it again (each getter sets up torch's error
 * and warning handling). libtorch exports, for AOTInductor, stable C functions
 * that read those fields in a few nanoseconds each (aoti_torch_get_dtype,
 * ..._get_sizes, ...: extern "C", error codes instead of C++ exceptions).
 * They take an AtenTensorHandle, which is an at::Tensor*: the at::Tensor a
 * torch.Tensor object holds right after its PyObject header. No libtorch
 * header or link is needed: Python hands over the functions' addresses and the
 * offset, and nothing here is used before Python has checked both.
 *
 * RecentCalls(tensor_type, offset, readers) holds the last two signatures of
 * calls on three tensors, or on two tensors and one Python scalar (then or else),
 * each with the options (compared by identity) and what the signature cache runs
 * for it. A call whose tensors are of exactly tensor_type and read the same
 * dtype, device type and index, layout and sizes as a held signature, with a
 * Python scalar of the same exact type where it held one, runs that; anything
 * else, or any failed read (a nested tensor has no sizes), answers NotImplemented
 * and the caller takes the signature cache. A scalar's value is checked as the
 * signature cache checks it: the ScalarRange the core's validation derived for
 * it says whether it admits the value (no: NotImplemented, and the cache's path
 * decides) and prepares it. Nothing here is a rule: it is a memo of what the
 * core's validation decided for one signature.
 *
 * Its fast_path method is the backend's whole fast path (the registry calls it
 * with the protocol's 7 arguments): a held signature runs at once, anything
 * else goes to `fallback`, the backend's Python fast path. Dynamo cannot follow
 * C: the backend registers a Python stand-in for that method with Dynamo.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_vectorcall_type.h" /* src/arrayselect/_dispatch/ */

/* libtorch's AOTI shim signatures (torch/csrc/inductor/aoti_torch/c/shim.h):
 * AOTITorchError is int32_t, 0 on success. */
typedef int32_t (*read_i32)(void *, int32_t *);
typedef int32_t (*read_i64)(void *, int64_t *);
typedef int32_t (*read_sizes)(void *, int64_t **);

/* The slots are read and swapped in a critical section on the object (free-threaded
 * builds; nothing with the GIL, and on Pythons before 3.13, which have no such build). */
#ifndef Py_BEGIN_CRITICAL_SECTION
#define Py_BEGIN_CRITICAL_SECTION(op) {
#define Py_END_CRITICAL_SECTION() }
#endif

/* Signatures of more dimensions than this are not held (they go to the cache). */
#define MAX_DIMS 16

typedef struct {
    int32_t dtype, device_type, device_index, layout;
    int64_t dim;
    int64_t sizes[MAX_DIMS];
} Fields;

/* An operand as a signature holds it: a tensor's fields, or a Python scalar's
 * exact type (bool, int, float, complex: static types, held without a reference). */
typedef struct {
    Fields fields;
    PyTypeObject *scalar; /* NULL: a tensor */
} Operand;

typedef struct {
    PyObject *options[3]; /* auto_broadcast, axis, cond_broadcast; NULL: empty slot */
    PyObject *run;        /* run(cond, then, else_) */
    PyObject *range;      /* the Python scalar's ScalarRange, or NULL */
    int scalar_at;        /* which operand is that scalar (1: then, 2: else), or 0 */
    Operand operands[3];
} Slot;

typedef struct {
    PyObject_HEAD
    PyTypeObject *tensor_type;
    PyObject *fallback; /* fallback(cond, then, else_, ab, axis, cb, out), or NULL */
    Py_ssize_t offset;
    read_i32 get_dtype, get_device_type, get_device_index, get_layout;
    read_i64 get_dim;
    read_sizes get_sizes;
    Slot slots[2]; /* slots[0]: the last signature held */
    vectorcallfunc vectorcall;
} RecentCalls;

/* Read x's fields into *f: 0, or -1 if x is not exactly the tensor type or any
 * read fails (no Python error is set either way). */
static int
read_fields(RecentCalls *self, PyObject *x, Fields *f)
{
    if (Py_TYPE(x) != self->tensor_type) {
        return -1;
    }
    void *handle = (char *)x + self->offset;
    int64_t *sizes;
    if (self->get_dim(handle, &f->dim) || f->dim < 0 || f->dim > MAX_DIMS ||
        self->get_dtype(handle, &f->dtype) || self->get_device_type(handle, &f->device_type) ||
        self->get_device_index(handle, &f->device_index) ||
        self->get_layout(handle, &f->layout) || self->get_sizes(handle, &sizes)) {
        return -1;
    }
    memcpy(f->sizes, sizes, (size_t)f->dim * sizeof(int64_t));
    return 0;
}

static int
same_fields(const Fields *a, const Fields *b)
{
    return a->dtype == b->dtype && a->device_type == b->device_type &&
           a->device_index == b->device_index && a->layout == b->layout && a->dim == b->dim &&
           memcmp(a->sizes, b->sizes, (size_t)a->dim * sizeof(int64_t)) == 0;
}

static int
is_python_scalar(PyTypeObject *t)
{
    return t == &PyFloat_Type || t == &PyLong_Type || t == &PyBool_Type || t == &PyComplex_Type;
}

/* Read the three operands: 0, or -1 for anything a signature cannot hold (a scalar
 * cond, two scalars, a failed read). *scalar_at: which of then and else is a scalar. */
static int
read_operands(RecentCalls *self, PyObject *const *args, Operand *ops, int *scalar_at)
{
    *scalar_at = 0;
    for (int k = 0; k < 3; k++) {
        ops[k].scalar = NULL;
        if (k > 0 && *scalar_at == 0 && is_python_scalar(Py_TYPE(args[k]))) {
            ops[k].scalar = Py_TYPE(args[k]);
            *scalar_at = k;
        }
        else if (read_fields(self, args[k], &ops[k].fields)) {
            return -1;
        }
    }
    return 0;
}

static int
same_operands(const Operand *a, const Operand *b)
{
    for (int k = 0; k < 3; k++) {
        if (a[k].scalar != b[k].scalar ||
            (a[k].scalar == NULL && !same_fields(&a[k].fields, &b[k].fields))) {
            return 0;
        }
    }
    return 1;
}

static PyObject *s_admits, *s_prepare;

static PyObject *
recent_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    RecentCalls *self = (RecentCalls *)callable;
    if (PyVectorcall_NARGS(nargsf) != 6 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "RecentCalls takes (cond, then, else_, auto_broadcast, axis, "
                        "cond_broadcast)");
        return NULL;
    }
    Operand ops[3];
    int scalar_at;
    if (read_operands(self, args, ops, &scalar_at)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *run = NULL, *range = NULL;
    Py_BEGIN_CRITICAL_SECTION(self);
    for (int s = 0; s < 2 && run == NULL; s++) {
        Slot *slot = &self->slots[s];
        if (slot->run != NULL && slot->options[0] == args[3] && slot->options[1] == args[4] &&
            slot->options[2] == args[5] && same_operands(ops, slot->operands)) {
            /* run may drop the slot (a remember from another thread): hold it */
            run = slot->run;
            Py_INCREF(run);
            range = slot->range;
            Py_XINCREF(range);
        }
    }
    Py_END_CRITICAL_SECTION();
    if (run == NULL) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *call[3] = {args[0], args[1], args[2]};
    PyObject *prepared = NULL;
    if (range != NULL) {
        /* As the signature cache's hit path: a value the range does not admit goes
         * on to the cache (NotImplemented), whose general path decides. */
        PyObject *ok = PyObject_CallMethodOneArg(range, s_admits, args[scalar_at]);
        int admits = ok == NULL ? -1 : PyObject_IsTrue(ok);
        Py_XDECREF(ok);
        if (admits == 1) {
            prepared = PyObject_CallMethodOneArg(range, s_prepare, args[scalar_at]);
        }
        Py_DECREF(range);
        if (admits == 0) {
            Py_DECREF(run);
            Py_RETURN_NOTIMPLEMENTED;
        }
        if (prepared == NULL) {
            Py_DECREF(run);
            return NULL;
        }
        call[scalar_at] = prepared;
    }
    PyObject *result = PyObject_Vectorcall(run, call, 3, NULL);
    Py_XDECREF(prepared);
    Py_DECREF(run);
    return result;
}

PyDoc_STRVAR(fast_path_doc,
             "fast_path(cond, then, else_, auto_broadcast, axis, cond_broadcast, out)\n--\n\n"
             "What a held signature runs (a call without out), else fallback(...) with "
             "the same arguments\n(NotImplemented without a fallback).");

static PyObject *
recent_fast_path(RecentCalls *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "fast_path takes 7 arguments");
        return NULL;
    }
    if (args[6] == Py_None) {
        PyObject *result = recent_call((PyObject *)self, args, 6, NULL);
        if (result != Py_NotImplemented) {
            return result; /* the run's result, or its error */
        }
        Py_DECREF(result);
    }
    if (self->fallback == NULL) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    return PyObject_Vectorcall(self->fallback, args, 7, NULL);
}

static void
clear_slot(Slot *slot)
{
    for (int k = 0; k < 3; k++) {
        Py_CLEAR(slot->options[k]);
    }
    Py_CLEAR(slot->run);
    Py_CLEAR(slot->range);
}

PyDoc_STRVAR(remember_doc,
             "remember(cond, then, else_, auto_broadcast, axis, cond_broadcast, run, "
             "then_range=None, else_range=None)\n--\n\n"
             "Hold this call's signature as the last one, with what runs it and the "
             "ScalarRange of its Python scalar;\nthe last but one is dropped. Returns "
             "False (holding nothing new) if a tensor cannot be read, or a\nscalar comes "
             "without its range.");

static PyObject *
recent_remember(RecentCalls *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 && nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "remember takes 7 or 9 arguments");
        return NULL;
    }
    Slot fresh;
    if (read_operands(self, args, fresh.operands, &fresh.scalar_at)) {
        Py_RETURN_FALSE;
    }
    fresh.range = NULL;
    if (fresh.scalar_at != 0) {
        PyObject *range = nargs == 9 ? args[6 + fresh.scalar_at] : Py_None;
        if (range == Py_None) {
            Py_RETURN_FALSE;
        }
        Py_INCREF(range);
        fresh.range = range;
    }
    for (int k = 0; k < 3; k++) {
        Py_INCREF(args[3 + k]);
        fresh.options[k] = args[3 + k];
    }
    Py_INCREF(args[6]);
    fresh.run = args[6];
    Slot dropped;
    Py_BEGIN_CRITICAL_SECTION(self);
    dropped = self->slots[1];
    self->slots[1] = self->slots[0];
    self->slots[0] = fresh;
    Py_END_CRITICAL_SECTION();
    clear_slot(&dropped); /* last: its decrefs may run Python code */
    Py_RETURN_TRUE;
}

PyDoc_STRVAR(read_doc,
             "read(x)\n--\n\n"
             "The fields a signature holds for tensor x, as (dtype, device_type, "
             "device_index, layout, sizes)\nin libtorch's codes, or None if x is not "
             "exactly the tensor type or a read fails.");

/* (dtype, device_type, device_index, layout, sizes) of fields read. */
static PyObject *
fields_tuple(const Fields *f)
{
    PyObject *sizes = PyTuple_New((Py_ssize_t)f->dim);
    if (sizes == NULL) {
        return NULL;
    }
    for (int64_t d = 0; d < f->dim; d++) {
        PyObject *size = PyLong_FromLongLong(f->sizes[d]);
        if (size == NULL) {
            Py_DECREF(sizes);
            return NULL;
        }
        PyTuple_SET_ITEM(sizes, (Py_ssize_t)d, size);
    }
    return Py_BuildValue("(iiiiN)", f->dtype, f->device_type, f->device_index, f->layout, sizes);
}

static PyObject *
recent_read(RecentCalls *self, PyObject *x)
{
    Fields f;
    if (read_fields(self, x, &f)) {
        Py_RETURN_NONE;
    }
    return fields_tuple(&f);
}

PyDoc_STRVAR(signature_doc,
             "signature(x)\n--\n\n"
             "x's signature for the backend's caches: read(x) where it reads, else the\n"
             "tuple (x.shape, x.dtype, x.device, x.layout). The two forms never compare\n"
             "equal (an int is never a torch.Size); readings are equal exactly when those\n"
             "attributes are (what the import-time check verified).");

static PyObject *s_attrs[4];

static PyObject *
recent_signature(RecentCalls *self, PyObject *x)
{
    Fields f;
    if (!read_fields(self, x, &f)) {
        return fields_tuple(&f);
    }
    PyObject *sig = PyTuple_New(4);
    if (sig == NULL) {
        return NULL;
    }
    for (Py_ssize_t k = 0; k < 4; k++) {
        PyObject *value = PyObject_GetAttr(x, s_attrs[k]);
        if (value == NULL) {
            Py_DECREF(sig);
            return NULL;
        }
        PyTuple_SET_ITEM(sig, k, value);
    }
    return sig;
}

PyDoc_STRVAR(held_doc, "held()\n--\n\nHow many signatures are held (0, 1 or 2).");

static PyObject *
recent_held(RecentCalls *self, PyObject *Py_UNUSED(ignored))
{
    long held;
    Py_BEGIN_CRITICAL_SECTION(self);
    held = (self->slots[0].run != NULL) + (self->slots[1].run != NULL);
    Py_END_CRITICAL_SECTION();
    return PyLong_FromLong(held);
}

PyDoc_STRVAR(forget_doc, "forget()\n--\n\nDrop the held signatures.");

static PyObject *
recent_forget(RecentCalls *self, PyObject *Py_UNUSED(ignored))
{
    Slot dropped[2];
    Py_BEGIN_CRITICAL_SECTION(self);
    dropped[0] = self->slots[0];
    dropped[1] = self->slots[1];
    memset(self->slots, 0, sizeof(self->slots));
    Py_END_CRITICAL_SECTION();
    clear_slot(&dropped[0]);
    clear_slot(&dropped[1]);
    Py_RETURN_NONE;
}

static PyMethodDef recent_methods[] = {
    {"fast_path", (PyCFunction)(void (*)(void))recent_fast_path, METH_FASTCALL, fast_path_doc},
    {"remember", (PyCFunction)(void (*)(void))recent_remember, METH_FASTCALL, remember_doc},
    {"read", (PyCFunction)recent_read, METH_O, read_doc},
    {"signature", (PyCFunction)recent_signature, METH_O, signature_doc},
    {"held", (PyCFunction)recent_held, METH_NOARGS, held_doc},
    {"forget", (PyCFunction)recent_forget, METH_NOARGS, forget_doc},
    {NULL, NULL, 0, NULL},
};

static int
address(PyObject *readers, Py_ssize_t k, void **fn)
{
    *fn = PyLong_AsVoidPtr(PyTuple_GET_ITEM(readers, k));
    if (*fn == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "a reader's address is 0");
        }
        return -1;
    }
    return 0;
}

static PyObject *
recent_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"tensor_type", "offset", "readers", "fallback", NULL};
    PyTypeObject *tensor_type;
    Py_ssize_t offset;
    PyObject *readers, *fallback = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!nO!|O", kwlist, &PyType_Type, &tensor_type,
                                     &offset, &PyTuple_Type, &readers, &fallback)) {
        return NULL;
    }
    if (PyTuple_GET_SIZE(readers) != 6) {
        PyErr_SetString(PyExc_ValueError,
                        "readers: the addresses of get_dtype, get_device_type, "
                        "get_device_index, get_layout, get_dim, get_sizes");
        return NULL;
    }
    if (offset < (Py_ssize_t)sizeof(PyObject) ||
        offset + (Py_ssize_t)sizeof(void *) > tensor_type->tp_basicsize) {
        PyErr_Format(PyExc_ValueError, "offset %zd is not inside the tensor type's object",
                     offset);
        return NULL;
    }
    void *fns[6];
    for (Py_ssize_t k = 0; k < 6; k++) {
        if (address(readers, k, &fns[k])) {
            return NULL;
        }
    }
    RecentCalls *self = (RecentCalls *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(tensor_type);
    self->tensor_type = tensor_type;
    if (fallback != Py_None) {
        Py_INCREF(fallback);
        self->fallback = fallback;
    }
    self->offset = offset;
    self->get_dtype = (read_i32)fns[0];
    self->get_device_type = (read_i32)fns[1];
    self->get_device_index = (read_i32)fns[2];
    self->get_layout = (read_i32)fns[3];
    self->get_dim = (read_i64)fns[4];
    self->get_sizes = (read_sizes)fns[5];
    self->vectorcall = recent_call;
    return (PyObject *)self;
}

static int
recent_traverse(RecentCalls *self, visitproc visit, void *arg)
{
    Py_VISIT(self->tensor_type);
    Py_VISIT(self->fallback);
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < 3; k++) {
            Py_VISIT(self->slots[s].options[k]);
        }
        Py_VISIT(self->slots[s].run);
        Py_VISIT(self->slots[s].range);
    }
    return 0;
}

static int
recent_clear(RecentCalls *self)
{
    clear_slot(&self->slots[0]);
    clear_slot(&self->slots[1]);
    Py_CLEAR(self->tensor_type);
    Py_CLEAR(self->fallback);
    return 0;
}

AS_GC_DEALLOC(recent, RecentCalls)

static PyTypeObject RecentCallsType = {
    AS_VECTORCALL_TYPE(recent, RecentCalls),
    .tp_name = "arrayselect.backends.torch_backend._fields.RecentCalls",
    .tp_doc = "RecentCalls(tensor_type, offset, readers, fallback=None)\n--\n\n"
              "The last two signatures of calls on three tensors (or two and a Python "
              "scalar), read through libtorch's C functions;\ncall it with (cond, then, else_, auto_broadcast, axis, "
              "cond_broadcast): what a held signature runs, or NotImplemented.",
    .tp_methods = recent_methods,
};

static struct PyModuleDef torch_fields_module = {
    PyModuleDef_HEAD_INIT, "_fields",
    "The torch backend's recent-call check, reading tensor fields through libtorch's C "
    "functions.", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__fields(void)
{
    PyObject *m = PyModule_Create(&torch_fields_module);
    if (m == NULL) {
        return NULL;
    }
#ifdef Py_GIL_DISABLED
    /* Single-phase init: this call is what the Py_mod_gil slot declares for a
       multi-phase module; the free-threaded CI job checks the GIL stays off. */
    PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED); /* slots: critical sections */
#endif
    s_admits = PyUnicode_InternFromString("admits");
    s_prepare = PyUnicode_InternFromString("prepare");
    const char *attrs[4] = {"shape", "dtype", "device", "layout"}; /* the backend's signature */
    for (int k = 0; k < 4; k++) {
        s_attrs[k] = PyUnicode_InternFromString(attrs[k]);
        if (s_attrs[k] == NULL) {
            Py_DECREF(m);
            return NULL;
        }
    }
    if (s_admits == NULL || s_prepare == NULL ||
        as_add_type(m, "RecentCalls", &RecentCallsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
