/*
 * The hit path of arrayselect's fast-path protocol (arrayselect._operations.fastpath).
 *
 * One key for every cache it reads, for any number of operands: call_key
 * builds (*head, types, signatures), where the head is what is not an
 * operand. Two front ends use it:
 *
 * - SignatureCall, what SignatureCache installs as a backend's fast path for
 *   select: call(cond, then, else_, auto_broadcast, axis, cond_broadcast, out),
 *   head (auto_broadcast, axis, cond_broadcast), operands (cond, then, else_,
 *   out). It looks the key up in the cache's dict (filled by the Python miss
 *   handler after the core's validation), and on a hit re-checks what depends on
 *   values through the core's own Python checks: a Python scalar's
 *   ScalarRange.admits and .prepare, check_devices, check_out_layout. Entries of
 *   the cache dict are tuples (decision, prepared, then_range, else_range): the
 *   Decision, what `run` receives, and the ScalarRange of a Python-scalar operand
 *   or None.
 * - family_find, the select family's memo (arrayselect._dispatch.memo): head
 *   (kind, force_portable), operands as the family's front end lists them; the
 *   key, the dict lookup, whether the memo holds (its value checks are the
 *   family's, in Python).
 *
 * Any doubt goes to the general path, which raises the error. Nothing here is
 * a rule: it is the caches' bookkeeping, in C because a backend's whole call
 * can take a few microseconds and this bookkeeping is most of what is
 * arrayselect's own. arrayselect._dispatch.fastcall_py does the same steps in
 * Python, for builds without a C compiler.
 *
 * Threads: a SignatureCall's fields never change after construction, and the
 * entry is taken from the dict as a strong reference (PyDict_GetItemRef), so
 * on a free-threaded build another thread evicting it (the miss handler, under
 * SignatureCache's lock) cannot free it under this call. Entries are tuples:
 * read-only once made. family_find reads its dicts the same way.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_vectorcall_type.h"

typedef struct {
    PyObject_HEAD
    PyObject *types;          /* frozenset of exact array types */
    PyObject *signature;      /* signature(x) -> hashable, or a tuple of attribute names */
    PyObject *cache;          /* dict: key -> (decision, prepared, then_range, else_range) */
    PyObject *miss;           /* miss(key, cond, then, else_, ab, axis, cb, out) */
    PyObject *general;        /* general(cond, then, else_, ab, axis, cb, out) */
    PyObject *run;            /* run(cond, then, else_, prepared, out), or None */
    PyObject *backend;
    PyObject *check_devices;  /* check_devices(backend, named), or None: not needed */
    PyObject *check_out;      /* check_out_layout(backend, out) */
    PyObject *error;          /* SelectError */
    int run_checks_devices;   /* any exception from running goes to the general path */
    vectorcallfunc vectorcall;
} SignatureCall;

static PyObject *s_admits, *s_prepare;

/* cache[key] as a new reference: 1 found, 0 not found, -1 error. */
static int
cache_get(PyObject *cache, PyObject *key, PyObject **entry)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyDict_GetItemRef(cache, key, entry);
#else
    /* with the GIL, nothing runs between the lookup and the incref */
    *entry = PyDict_GetItemWithError(cache, key);
    if (*entry == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_INCREF(*entry);
    return 1;
#endif
}

static int
is_scalar_type(PyTypeObject *t)
{
    return t == &PyBool_Type || t == &PyLong_Type || t == &PyFloat_Type ||
           t == &PyComplex_Type;
}

/* A backend's signature of array x: signature(x), or the tuple of x's attributes
 * when the signature is a tuple of attribute names (Backend.signature). */
static PyObject *
sign_one(PyObject *sign, PyObject *x)
{
    if (!PyTuple_CheckExact(sign)) {
        return PyObject_CallOneArg(sign, x);
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(sign);
    PyObject *sig = PyTuple_New(n);
    if (sig == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyObject_GetAttr(x, PyTuple_GET_ITEM(sign, i));
        if (value == NULL) {
            Py_DECREF(sig);
            return NULL;
        }
        PyTuple_SET_ITEM(sig, i, value);
    }
    return sig;
}

/* The exact types of n operands, as a tuple. */
static PyObject *
types_of(PyObject *const *ops, Py_ssize_t n)
{
    PyObject *types = PyTuple_New(n);
    if (types == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(types, i, Py_NewRef((PyObject *)Py_TYPE(ops[i])));
    }
    return types;
}

/*
 * The one key of this hit path, for any number of operands (call_key in
 * fastcall_py.py builds the same): (*head, types, signatures). The nh items of
 * `head` are what is not an operand (select's options; the family's kind and
 * force_portable; every key of one cache has as many), `types` is types_of the n
 * operands (a Python scalar, or None for no out, stands for its type), and
 * `signatures` the tuple of sign_one of each operand whose mask byte is set, in
 * order. Equal keys mean equal heads, equal types and equal signatures of the
 * arrays: everything a kept decision read.
 */
static PyObject *
call_key(PyObject *const *head, Py_ssize_t nh, PyObject *types, PyObject *const *ops,
         Py_ssize_t n, const char *mask, PyObject *sign)
{
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        m += mask[i] != 0;
    }
    PyObject *key = PyTuple_New(nh + 2), *signs = PyTuple_New(m);
    if (key == NULL || signs == NULL) {
        Py_XDECREF(key);
        Py_XDECREF(signs);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nh; i++) {
        PyTuple_SET_ITEM(key, i, Py_NewRef(head[i]));
    }
    PyTuple_SET_ITEM(key, nh, Py_NewRef(types));
    PyTuple_SET_ITEM(key, nh + 1, signs); /* filled below: the key is not shared yet */
    for (Py_ssize_t i = 0, j = 0; i < n; i++) {
        if (mask[i]) {
            PyObject *sig = sign_one(sign, ops[i]);
            if (sig == NULL) {
                Py_DECREF(key);
                return NULL;
            }
            PyTuple_SET_ITEM(signs, j++, sig);
        }
    }
    return key;
}

static PyObject *
call_general(SignatureCall *self, PyObject *const *args)
{
    return PyObject_Vectorcall(self->general, args, 7, NULL);
}

/* ScalarRange.admits(value), then .prepare(value): a new reference, NULL with no
 * error set when the value is not admitted, NULL with an error on failure. */
static PyObject *
admitted(PyObject *range, PyObject *value)
{
    PyObject *ok = PyObject_CallMethodOneArg(range, s_admits, value);
    if (ok == NULL) {
        return NULL;
    }
    int yes = PyObject_IsTrue(ok);
    Py_DECREF(ok);
    if (yes <= 0) {
        return NULL;
    }
    return PyObject_CallMethodOneArg(range, s_prepare, value);
}

/* 1: the value-dependent checks passed, 0: a SelectError (cleared), -1: other error. */
static int
recheck(SignatureCall *self, PyObject *cond, PyObject *then, int then_array, PyObject *else_,
        int else_array, PyObject *out)
{
    if (self->check_devices != Py_None) {
        PyObject *named = PyList_New(0);
        if (named == NULL) {
            return -1;
        }
        const char *names[4] = {"cond", "then", "else", "out"};
        PyObject *xs[4] = {cond, then_array ? then : NULL, else_array ? else_ : NULL,
                           out == Py_None ? NULL : out};
        for (int k = 0; k < 4; k++) {
            if (xs[k] == NULL) {
                continue;
            }
            PyObject *pair = Py_BuildValue("(sO)", names[k], xs[k]);
            if (pair == NULL || PyList_Append(named, pair) < 0) {
                Py_XDECREF(pair);
                Py_DECREF(named);
                return -1;
            }
            Py_DECREF(pair);
        }
        PyObject *r = PyObject_CallFunctionObjArgs(self->check_devices, self->backend, named, NULL);
        Py_DECREF(named);
        if (r == NULL) {
            goto failed;
        }
        Py_DECREF(r);
    }
    if (out != Py_None) {
        PyObject *r = PyObject_CallFunctionObjArgs(self->check_out, self->backend, out, NULL);
        if (r == NULL) {
            goto failed;
        }
        Py_DECREF(r);
    }
    return 1;
failed:
    if (PyErr_ExceptionMatches(self->error)) {
        PyErr_Clear(); /* the general path raises it again, in its order */
        return 0;
    }
    return -1;
}

static PyObject *
signature_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    SignatureCall *self = (SignatureCall *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 7 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "a fast path takes exactly 7 positional arguments");
        return NULL;
    }
    PyObject *cond = args[0], *then = args[1], *else_ = args[2], *out = args[6];
    if (!PyUnicode_CheckExact(args[3]) || !PyLong_CheckExact(args[4]) ||
        !PyUnicode_CheckExact(args[5])) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    int r = PySet_Contains(self->types, (PyObject *)Py_TYPE(cond));
    if (r <= 0) {
        if (r < 0) {
            return NULL;
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    const int then_array = PySet_Contains(self->types, (PyObject *)Py_TYPE(then));
    const int else_array = PySet_Contains(self->types, (PyObject *)Py_TYPE(else_));
    const int out_array = out != Py_None ? PySet_Contains(self->types, (PyObject *)Py_TYPE(out)) : 0;
    if (then_array < 0 || else_array < 0 || out_array < 0) {
        return NULL;
    }
    /* Arrays of the backend's types, or one Python scalar beside an array; two
     * scalars (library defaults) and anything else go to the general path. */
    if ((!then_array && !(else_array && is_scalar_type(Py_TYPE(then)))) ||
        (!else_array && !is_scalar_type(Py_TYPE(else_))) || (out != Py_None && !out_array)) {
        Py_RETURN_NOTIMPLEMENTED;
    }

    /* head: the options; operands: cond, then, else, out (None: its type) */
    PyObject *ops[4] = {cond, then, else_, out};
    const char mask[4] = {1, (char)then_array, (char)else_array, (char)out_array};
    PyObject *types = types_of(ops, 4);
    PyObject *key = types ? call_key(args + 3, 3, types, ops, 4, mask, self->signature) : NULL;
    Py_XDECREF(types);
    if (key == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return NULL;
        }
        /* no signature (e.g. a tensor whose sizes cannot be read): the general
         * path says why */
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }

    PyObject *entry;
    r = cache_get(self->cache, key, &entry); /* owned: the checks below run Python
                                                code, which may evict it */
    if (r <= 0) {
        if (r < 0) {
            Py_DECREF(key);
            return NULL;
        }
        PyObject *margs[8] = {key, cond, then, else_, args[3], args[4], args[5], out};
        PyObject *result = PyObject_Vectorcall(self->miss, margs, 8, NULL);
        Py_DECREF(key);
        return result;
    }
    Py_DECREF(key);
    PyObject *prepared = PyTuple_GET_ITEM(entry, 1);
    PyObject *then_range = PyTuple_GET_ITEM(entry, 2);
    PyObject *else_range = PyTuple_GET_ITEM(entry, 3);
    PyObject *result = NULL;
    PyObject *then_v = then, *else_v = else_;
    Py_INCREF(then_v);
    Py_INCREF(else_v);

    PyObject *range = then_range != Py_None ? then_range : else_range;
    if (range != Py_None) {
        PyObject **slot = then_range != Py_None ? &then_v : &else_v;
        PyObject *value = admitted(range, *slot);
        if (value == NULL) {
            if (!PyErr_Occurred()) {
                result = call_general(self, args);
            }
            goto done;
        }
        Py_SETREF(*slot, value);
    }
    if (self->check_devices != Py_None || out != Py_None) {
        r = recheck(self, cond, then, then_array, else_, else_array, out);
        if (r <= 0) {
            if (r == 0) {
                result = call_general(self, args);
            }
            goto done;
        }
    }
    if (self->run != Py_None) {
        PyObject *rargs[5] = {cond, then_v, else_v, prepared, out};
        result = PyObject_Vectorcall(self->run, rargs, 5, NULL);
    }
    else {
        PyObject *rargs[4] = {cond, then_v, else_v, out};
        result = PyObject_Vectorcall(prepared, rargs, out == Py_None ? 3 : 4, NULL);
    }
    if (result == NULL && self->run_checks_devices && PyErr_ExceptionMatches(PyExc_Exception)) {
        /* e.g. arrays on different devices: the general path raises the core's
         * error (or the library's own, if it is not about the inputs) */
        PyErr_Clear();
        result = call_general(self, args);
    }
done:
    Py_DECREF(then_v);
    Py_DECREF(else_v);
    Py_DECREF(entry);
    return result;
}

static PyObject *
signature_call_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"types", "signature", "cache", "miss", "general", "run",
                             "backend", "check_devices", "check_out", "error",
                             "run_checks_devices", NULL};
    PyObject *o[10];
    int run_checks_devices;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!OOOOOOOp", kwlist, &o[0], &o[1],
                                     &PyDict_Type, &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                                     &o[8], &o[9], &run_checks_devices)) {
        return NULL;
    }
    if (!PyFrozenSet_Check(o[0])) {
        PyErr_SetString(PyExc_TypeError, "types must be a frozenset");
        return NULL;
    }
    SignatureCall *self = (SignatureCall *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    PyObject **slots[10] = {&self->types, &self->signature, &self->cache, &self->miss,
                            &self->general, &self->run, &self->backend, &self->check_devices,
                            &self->check_out, &self->error};
    for (int k = 0; k < 10; k++) {
        Py_INCREF(o[k]);
        *slots[k] = o[k];
    }
    self->run_checks_devices = run_checks_devices;
    self->vectorcall = signature_call;
    return (PyObject *)self;
}

static int
signature_call_traverse(SignatureCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->types);
    Py_VISIT(self->signature);
    Py_VISIT(self->cache);
    Py_VISIT(self->miss);
    Py_VISIT(self->general);
    Py_VISIT(self->run);
    Py_VISIT(self->backend);
    Py_VISIT(self->check_devices);
    Py_VISIT(self->check_out);
    Py_VISIT(self->error);
    return 0;
}

static int
signature_call_clear(SignatureCall *self)
{
    Py_CLEAR(self->types);
    Py_CLEAR(self->signature);
    Py_CLEAR(self->cache);
    Py_CLEAR(self->miss);
    Py_CLEAR(self->general);
    Py_CLEAR(self->run);
    Py_CLEAR(self->backend);
    Py_CLEAR(self->check_devices);
    Py_CLEAR(self->check_out);
    Py_CLEAR(self->error);
    return 0;
}

AS_GC_DEALLOC(signature_call, SignatureCall)

static PyTypeObject SignatureCallType = {
    AS_VECTORCALL_TYPE(signature_call, SignatureCall),
    .tp_name = "arrayselect._dispatch._fastcall.SignatureCall",
    .tp_doc = "SignatureCall(types, signature, cache, miss, general, run, backend, "
              "check_devices, check_out, error, run_checks_devices)\n--\n\n"
              "The hit path of a SignatureCache: call it with the 7 arguments of a fast path.",
};

/*
 * family_find(kind, operands, portable, layouts, checks, memos, backends): the
 * select family's memo lookup (arrayselect._dispatch.memo.find) for operand types
 * it has a layout for, the same steps as its Python `signature` and `lookup`: the
 * key (call_key with the head kind, portable), memos.get(key), and whether that
 * memo still holds. Returns the memo, None (no memo, one that no longer holds, or
 * a compiler traces), or NotImplemented when there is no layout for these types
 * (the Python path makes one). `layouts` values are read-only tuples (mask, sign,
 * traced_types): which operands are arrays (one byte each), the backend's
 * signature, the array types to ask whether a compiler traces. Every dict is read
 * with a strong reference.
 */
static PyObject *s_dtype_mode;

/* memo._holding: 1 when the registry still serves the decision's library by its
 * backend (backends[decision.registered_as] is decision.backend) in its dtype mode
 * (decision.dtype_mode == backend.dtype_mode()), 0 when not, -1 on error. A
 * Decision's first three fields are these (arrayselect._validation.decision). */
static int
memo_holds(PyObject *memo, PyObject *backends)
{
    if (!PyTuple_Check(memo) || PyTuple_GET_SIZE(memo) < 3) {
        PyErr_SetString(PyExc_TypeError, "family_find: a memo is a Decision");
        return -1;
    }
    PyObject *backend = PyTuple_GET_ITEM(memo, 0), *serving;
    int r = cache_get(backends, PyTuple_GET_ITEM(memo, 1), &serving);
    if (r <= 0) {
        return r;
    }
    Py_DECREF(serving); /* only its identity is compared */
    if (serving != backend) {
        return 0;
    }
    PyObject *mode = PyObject_CallMethodNoArgs(backend, s_dtype_mode);
    if (mode == NULL) {
        return -1;
    }
    r = PyObject_RichCompareBool(PyTuple_GET_ITEM(memo, 2), mode, Py_EQ);
    Py_DECREF(mode);
    return r;
}

static PyObject *
family_find(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "family_find takes exactly 7 arguments");
        return NULL;
    }
    PyObject *kind = args[0], *operands = args[1], *portable = args[2];
    PyObject *layouts = args[3], *checks = args[4], *memos = args[5], *backends = args[6];
    if (!PyTuple_CheckExact(operands) || !PyDict_CheckExact(layouts) ||
        !PyDict_CheckExact(checks) || !PyDict_CheckExact(memos) ||
        !PyDict_CheckExact(backends)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(operands);
    PyObject *const *ops = &PyTuple_GET_ITEM(operands, 0);
    PyObject *types = types_of(ops, n);
    if (types == NULL) {
        return NULL;
    }
    PyObject *result = NULL, *layout = NULL, *key = NULL;
    PyObject *where = PyTuple_Pack(2, types, portable);
    if (where == NULL) {
        goto done;
    }
    int r = cache_get(layouts, where, &layout);
    Py_DECREF(where);
    if (r <= 0) {
        if (r == 0) {
            result = Py_NewRef(Py_NotImplemented);
        }
        goto done;
    }
    if (!PyTuple_CheckExact(layout) || PyTuple_GET_SIZE(layout) != 3 ||
        !PyBytes_CheckExact(PyTuple_GET_ITEM(layout, 0)) ||
        PyBytes_GET_SIZE(PyTuple_GET_ITEM(layout, 0)) != n ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(layout, 2))) {
        PyErr_SetString(PyExc_TypeError, "family_find: a layout is (mask, sign, traced_types)");
        goto done;
    }
    PyObject *traced = PyTuple_GET_ITEM(layout, 2);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(traced); i++) {
        PyObject *tracing;
        r = cache_get(checks, PyTuple_GET_ITEM(traced, i), &tracing);
        if (r < 0) {
            goto done;
        }
        if (r == 0) {
            continue;
        }
        PyObject *now = PyObject_CallNoArgs(tracing);
        Py_DECREF(tracing);
        if (now == NULL) {
            goto done;
        }
        int yes = PyObject_IsTrue(now);
        Py_DECREF(now);
        if (yes != 0) {
            if (yes > 0) { /* a compiler traces: no memo */
                result = Py_NewRef(Py_None);
            }
            goto done;
        }
    }
    PyObject *head[2] = {kind, portable};
    key = call_key(head, 2, types, ops, n, PyBytes_AS_STRING(PyTuple_GET_ITEM(layout, 0)),
                   PyTuple_GET_ITEM(layout, 1));
    if (key == NULL) {
        goto done;
    }
    PyObject *memo;
    r = cache_get(memos, key, &memo);
    if (r <= 0) {
        if (r == 0) {
            result = Py_NewRef(Py_None);
        }
        goto done;
    }
    r = memo_holds(memo, backends);
    if (r >= 0) {
        result = r ? Py_NewRef(memo) : Py_NewRef(Py_None);
    }
    Py_DECREF(memo);
done:
    Py_DECREF(types);
    Py_XDECREF(layout);
    Py_XDECREF(key);
    return result;
}

static PyMethodDef fastcall_methods[] = {
    {"family_find", (PyCFunction)(void (*)(void))family_find, METH_FASTCALL,
     "family_find(kind, operands, portable, layouts, checks, memos, backends)\n--\n\n"
     "The select family's memo for a call whose operand types have a layout (see "
     "arrayselect._dispatch.memo.find): the memo, None, or NotImplemented (no layout)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fastcall_module = {
    PyModuleDef_HEAD_INIT, "_fastcall",
    "The hit path of arrayselect's fast-path protocol, in C (see arrayselect._operations.fastpath).", -1,
    fastcall_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__fastcall(void)
{
    s_admits = PyUnicode_InternFromString("admits");
    s_prepare = PyUnicode_InternFromString("prepare");
    s_dtype_mode = PyUnicode_InternFromString("dtype_mode");
    if (s_admits == NULL || s_prepare == NULL || s_dtype_mode == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&fastcall_module);
    if (m == NULL) {
        return NULL;
    }
#ifdef Py_GIL_DISABLED
    /* Safe without the GIL: see "Threads" at the top. */
    /* Single-phase init: this call is what the Py_mod_gil slot declares for a
       multi-phase module; the free-threaded CI job checks the GIL stays off. */
    PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
    if (as_add_type(m, "SignatureCall", &SignatureCallType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
