/* The CPython boilerplate of a garbage-collected type whose instances are called
 * through vectorcall, written once for arrayselect._dispatch._fastcall (SignatureCall) and the
 * torch backend's recent-call check (RecentCalls).
 *
 * A type PREFIX with instance struct STRUCT (which has a `vectorcallfunc vectorcall`
 * member) defines PREFIX_new, PREFIX_traverse and PREFIX_clear itself; then
 * AS_GC_DEALLOC(PREFIX, STRUCT) defines PREFIX_dealloc, and its PyTypeObject begins
 * with AS_VECTORCALL_TYPE(PREFIX, STRUCT) followed by its tp_name, tp_doc and any
 * other slots. as_add_type adds the type to a module at its initialisation.
 */
#ifndef ARRAYSELECT_VECTORCALL_TYPE_H
#define ARRAYSELECT_VECTORCALL_TYPE_H

#include <Python.h>
#include <stddef.h> /* offsetof */

/* Untracks the object (so the collector never sees it half cleared), clears it, frees it. */
#define AS_GC_DEALLOC(PREFIX, STRUCT)              \
    static void PREFIX##_dealloc(STRUCT *self)     \
    {                                              \
        PyObject_GC_UnTrack(self);                 \
        PREFIX##_clear(self);                      \
        Py_TYPE(self)->tp_free((PyObject *)self);  \
    }

/* The slots every such type fills alike: size, flags, construction, GC, the call. */
#define AS_VECTORCALL_TYPE(PREFIX, STRUCT)                                              \
    PyVarObject_HEAD_INIT(NULL, 0)                                                      \
    .tp_basicsize = sizeof(STRUCT),                                                     \
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,   \
    .tp_new = PREFIX##_new, .tp_dealloc = (destructor)PREFIX##_dealloc,                 \
    .tp_traverse = (traverseproc)PREFIX##_traverse, .tp_clear = (inquiry)PREFIX##_clear, \
    .tp_call = PyVectorcall_Call, .tp_vectorcall_offset = offsetof(STRUCT, vectorcall)

/* Readies `type` and adds it to module `m` as `name`: 0, or -1 with an exception set
 * (`m` is the caller's to release). */
static inline int
as_add_type(PyObject *m, const char *name, PyTypeObject *type)
{
    if (PyType_Ready(type) < 0) {
        return -1;
    }
    Py_INCREF(type);
    if (PyModule_AddObject(m, name, (PyObject *)type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

#endif /* ARRAYSELECT_VECTORCALL_TYPE_H */
