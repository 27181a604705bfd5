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
 *   values: a Python scalar against the ScalarRange the core derived (its admits
 *   and prepare, applied in C on its fields: admit below; any doubt, the general
 *   path), and through the core's own Python checks check_devices and
 *   check_out_layout (neither where the backend's signature fixes it). Entries of
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
#include <math.h>   /* isfinite */
#include <stdint.h>

#include "_vectorcall_type.h"

/*
 * A backend's raw signature (Backend.raw_signature: a capsule named
 * "arrayselect.raw_signature" holding this function): write x's signature,
 * the bytes signature(x) returns, into buf if it fits in `size` bytes, and return
 * its length (a larger length than `size`: call again with a buffer that large),
 * or 0 where signature(x) is not bytes. It never raises, and its bytes are
 * self-delimiting, so that several joined are one key.
 */
typedef Py_ssize_t (*raw_signature)(PyObject *x, char *buf, Py_ssize_t size);

/* The function in a raw_signature capsule; NULL for None; NULL with an error otherwise. */
static raw_signature
raw_of(PyObject *capsule)
{
    if (capsule == Py_None) {
        return NULL;
    }
    void *fn = PyCapsule_GetPointer(capsule, "arrayselect.raw_signature");
    if (fn == NULL && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_TypeError, "raw_signature: an empty capsule");
    }
    raw_signature raw;
    memcpy(&raw, &fn, sizeof(raw)); /* a data pointer to a function pointer (see sk_prepared.c) */
    return raw;
}

typedef struct {
    PyObject_HEAD
    PyObject *types;          /* frozenset of exact array types */
    PyObject *single;         /* its one type, if it has one (borrowed), else NULL */
    PyObject *signature;      /* signature(x) -> hashable, or a tuple of attribute names */
    PyObject *raw_capsule;    /* the backend's raw_signature, or None */
    raw_signature raw;        /* its function, or NULL */
    PyObject *cache;          /* dict: key -> (decision, prepared, then_range, else_range) */
    PyObject *miss;           /* miss(key, cond, then, else_, ab, axis, cb, out) */
    PyObject *general;        /* general(cond, then, else_, ab, axis, cb, out) */
    PyObject *run;            /* run(cond, then, else_, prepared, out), or None */
    PyObject *backend;
    PyObject *check_devices;  /* check_devices(backend, named), or None: not needed */
    PyObject *check_out;      /* check_out_layout(backend, out), or None: the signature fixes it */
    PyObject *error;          /* SelectError */
    int run_checks_devices;   /* any exception from running goes to the general path */
#ifndef Py_GIL_DISABLED
    /* The last head's objects (owned, so that no other object takes their addresses)
     * and their encoding for a RawKey (keybuf_head): a call passes select's default
     * options, the same objects every time, so it need not write them again. */
    PyObject *head_seen[3];
    Py_ssize_t head_length;
    char head_bytes[128];
#endif
    vectorcallfunc vectorcall;
} SignatureCall;


/*
 * ScalarRange.admits(value), then .prepare(value), in C, on a ScalarRange's
 * fields (it is a tuple: low, high, as_float): low <= value <= high, each part of
 * a complex, or a non-finite float; then an int as a float where as_float.
 * Comparisons of an int with anything go through Python's own (exact for ints of
 * any size); a float with float bounds compares as C doubles, as Python does.
 * Returns 1 (admitted: *prepared is a new reference), 0 (not admitted, or a case it
 * does not read: the general path decides), or -1 (an error).
 */
/* An exact int of magnitude at most 2**53 into *v (1), else 0 (no error). */
static int
small_int(PyObject *x, long long *v)
{
    if (!PyLong_CheckExact(x)) {
        return 0;
    }
    int overflow;
    *v = PyLong_AsLongLongAndOverflow(x, &overflow);
    const long long limit = 1LL << 53;
    return !overflow && -limit <= *v && *v <= limit; /* -1 is never an error here */
}

/* Not inlined: kept out of the arrays' hot path (inlined, it slowed calls with no
 * scalar by 7%: registers spilled in signature_call). */
Py_NO_INLINE static int
admit(PyObject *range, PyObject *value, PyObject **prepared)
{
    if (!PyTuple_Check(range) || PyTuple_GET_SIZE(range) != 3) {
        return 0; /* not a ScalarRange: never made by SignatureCache */
    }
    PyObject *low = PyTuple_GET_ITEM(range, 0), *high = PyTuple_GET_ITEM(range, 1);
    long long v, lo, hi;
    const int float_bounds = PyFloat_CheckExact(low) && PyFloat_CheckExact(high);
    int ok;
    if (PyComplex_CheckExact(value)) {
        if (!float_bounds) {
            return 0; /* a complex takes only complex dtypes, whose bounds are floats */
        }
        const double flo = PyFloat_AS_DOUBLE(low), fhi = PyFloat_AS_DOUBLE(high);
        const Py_complex z = PyComplex_AsCComplex(value);
        ok = flo <= z.real && z.real <= fhi && flo <= z.imag && z.imag <= fhi;
    }
    else if (PyFloat_CheckExact(value) && !isfinite(PyFloat_AS_DOUBLE(value))) {
        ok = 1;
    }
    else if (PyFloat_CheckExact(value) && float_bounds) {
        const double x = PyFloat_AS_DOUBLE(value);
        ok = PyFloat_AS_DOUBLE(low) <= x && x <= PyFloat_AS_DOUBLE(high);
    }
    else if (PyLong_CheckExact(value) && small_int(value, &v) &&
             (float_bounds || (small_int(low, &lo) && small_int(high, &hi)))) {
        /* |v| <= 2**53: as a double it is exact, so either comparison is Python's */
        ok = float_bounds ? PyFloat_AS_DOUBLE(low) <= (double)v && (double)v <= PyFloat_AS_DOUBLE(high)
                          : lo <= v && v <= hi;
    }
    else {
        ok = PyObject_RichCompareBool(low, value, Py_LE);
        if (ok == 1) {
            ok = PyObject_RichCompareBool(value, high, Py_LE);
        }
        if (ok < 0) {
            return -1;
        }
    }
    if (!ok) {
        return 0;
    }
    const int as_float = PyObject_IsTrue(PyTuple_GET_ITEM(range, 2));
    if (as_float < 0) {
        return -1;
    }
    if (as_float && PyLong_CheckExact(value)) {
        *prepared = small_int(value, &v) ? PyFloat_FromDouble((double)v) : PyNumber_Float(value);
        return *prepared == NULL ? -1 : 1;
    }
    *prepared = Py_NewRef(value);
    return 1;
}

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
 * RawKey: the key of a call whose arrays all have raw signatures, as one buffer:
 * the operands' types (their addresses; the key owns a reference to each, so no
 * other type can take an address while it lives: equal addresses are the same
 * types, as a tuple of types compares), the head (keybuf_head: a tag per item,
 * then each str's UTF-8 bytes and each int's 64 bits), then the raw signatures,
 * joined (each is self-delimiting). Its hash is a
 * multiply-xor over the buffer, computed once; two RawKeys are equal when their
 * buffers are the same bytes. It exists because a key of Python objects (a tuple of the
 * head, the types and one bytes object per array) costs a call of one element
 * more than the kernel's whole work: allocating, hashing (siphash) and comparing
 * it item by item. RawKey(head, types, signatures) makes one from Python (the
 * Python twin's call_key), equal to the one call_key builds here.
 */
typedef struct {
    PyObject_VAR_HEAD  /* ob_size: the buffer's length in bytes */
    Py_hash_t hash;
    Py_ssize_t ntypes; /* the buffer begins with these type addresses, owned */
    char data[1];
} RawKey;

static PyTypeObject RawKeyType;

/* A growable byte buffer, on the stack until it outgrows it. */
typedef struct {
    char *buf;
    Py_ssize_t size, used;
    char stack[1024];
} keybuf;

static void
keybuf_init(keybuf *b)
{
    b->buf = b->stack;
    b->size = (Py_ssize_t)sizeof(b->stack);
    b->used = 0;
}

#ifndef Py_GIL_DISABLED
/*
 * With the GIL, one probe serves the lookups: a RawKey whose buffer a call fills
 * in place and looks up, and which is never stored (a miss copies it into a key
 * of its own first), so that a hit allocates nothing. Between filling it and the
 * lookup no Python code runs (the raw signature, the head's encoding and
 * RawKey's comparison are C), so no other call can fill it meanwhile. A
 * free-threaded build makes a key per call instead.
 */
#define PROBE_CAPACITY 1024
static RawKey *probe = NULL;
#endif

static int
keybuf_on_heap(const keybuf *b)
{
#ifndef Py_GIL_DISABLED
    if (probe != NULL && b->buf == probe->data) {
        return 0;
    }
#endif
    return b->buf != b->stack;
}

static void
keybuf_free(keybuf *b)
{
    if (keybuf_on_heap(b)) {
        PyMem_Free(b->buf);
    }
}

/* Grow the buffer to hold `more` bytes past the used ones: 0, or -1 with MemoryError. */
static int
keybuf_grow(keybuf *b, Py_ssize_t more)
{
    const Py_ssize_t bigger = 2 * (b->used + more);
    char *grown = PyMem_Malloc((size_t)bigger);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(grown, b->buf, (size_t)b->used);
    keybuf_free(b);
    b->buf = grown;
    b->size = bigger;
    return 0;
}

/* Room for `more` bytes past the used ones: 0, or -1 with MemoryError. */
static inline int
keybuf_reserve(keybuf *b, Py_ssize_t more)
{
    return b->used + more <= b->size ? 0 : keybuf_grow(b, more);
}

static int
keybuf_put(keybuf *b, const void *bytes, Py_ssize_t n)
{
    if (keybuf_reserve(b, n) < 0) {
        return -1;
    }
    memcpy(b->buf + b->used, bytes, (size_t)n);
    b->used += n;
    return 0;
}

/*
 * Write the head's items: 1 written, 0 an item it does not write (no RawKey), -1
 * error. A word of tags, one byte per item (a str's length, below 200; TAG_TRUE or
 * TAG_FALSE for a bool; TAG_INT for an int, all above 200, so that no tag means two
 * things), then each str's UTF-8 bytes and each int's 64 bits, every part padded to
 * 8 bytes (the hash reads whole words).
 */
enum { TAG_TRUE = 250, TAG_FALSE = 251, TAG_INT = 252 };

static int
keybuf_head(keybuf *b, PyObject *const *head, Py_ssize_t nh)
{
    uint64_t tags = 0;
    if (nh > 8) {
        return 0;
    }
    const Py_ssize_t at = b->used;
    if (keybuf_put(b, &tags, 8) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < nh; i++) {
        PyObject *x = head[i];
        unsigned char tag;
        if (PyUnicode_CheckExact(x)) {
            Py_ssize_t n;
            const char *utf8;
            if (PyUnicode_IS_COMPACT_ASCII(x)) { /* the options: no call, no conversion */
                utf8 = (const char *)PyUnicode_DATA(x);
                n = PyUnicode_GET_LENGTH(x);
            }
            else if ((utf8 = PyUnicode_AsUTF8AndSize(x, &n)) == NULL) {
                return -1;
            }
            if (n >= 200) {
                return 0;
            }
            tag = (unsigned char)n;
            const Py_ssize_t padded = (n + 7) & ~(Py_ssize_t)7;
            if (keybuf_reserve(b, padded) < 0) {
                return -1;
            }
            char *to = b->buf + b->used;
            Py_ssize_t k = 0;
            for (; k + 8 <= n; k += 8) {
                memcpy(to + k, utf8 + k, 8); /* a word at a time: inlined */
            }
            if (k < n) { /* the last bytes, zero-padded to a word */
                char tail[8] = {0};
                for (Py_ssize_t j = 0; k + j < n; j++) {
                    tail[j] = utf8[k + j];
                }
                memcpy(to + k, tail, 8);
            }
            b->used += padded;
        }
        else if (PyBool_Check(x)) {
            tag = x == Py_True ? TAG_TRUE : TAG_FALSE;
        }
        else if (PyLong_CheckExact(x)) {
            int overflow;
            const int64_t v = (int64_t)PyLong_AsLongLongAndOverflow(x, &overflow);
            if (overflow) {
                return 0;
            }
            if (v == -1 && PyErr_Occurred()) {
                return -1;
            }
            tag = TAG_INT;
            if (keybuf_put(b, &v, 8) < 0) {
                return -1;
            }
        }
        else {
            return 0;
        }
        tags |= (uint64_t)tag << (8 * i);
    }
    memcpy(b->buf + at, &tags, 8);
    return 1;
}

/* Multiply-xor in four lanes over whole words, then the tail, mixed by MurmurHash3's
 * finalizer (every bit of the buffer reaches the low bits a dict indexes by). */
static Py_hash_t
raw_key_hash_of(const char *data, Py_ssize_t n)
{
    uint64_t h[4] = {0x9e3779b97f4a7c15u ^ (uint64_t)n, 0xc2b2ae3d27d4eb4fu, 0x165667b19e3779f9u,
                     0x27d4eb2f165667c5u};
    Py_ssize_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, data + i + 8 * k, 8);
            h[k] = (h[k] ^ w) * 0x100000001b3u;
        }
    }
    for (int k = 0; i + 8 <= n; i += 8, k++) {
        uint64_t w;
        memcpy(&w, data + i, 8);
        h[k] = (h[k] ^ w) * 0x100000001b3u;
    }
    for (; i < n; i++) {
        h[0] = (h[0] ^ (unsigned char)data[i]) * 0x100000001b3u;
    }
    uint64_t x = h[0] ^ (h[1] * 0x9e3779b97f4a7c15u) ^ (h[2] * 0xc2b2ae3d27d4eb4fu) ^
                 (h[3] * 0x165667b19e3779f9u);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdu;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53u;
    x ^= x >> 33;
    const Py_hash_t r = (Py_hash_t)x;
    return r == -1 ? -2 : r;
}

/* A RawKey of the buffer, which begins with `ntypes` type addresses: a new
 * reference (owning a reference to each type), NULL with an error. */
static PyObject *
raw_key_new_from(const char *data, Py_ssize_t n, Py_ssize_t ntypes)
{
    RawKey *key = PyObject_NewVar(RawKey, &RawKeyType, n);
    if (key == NULL) {
        return NULL;
    }
    memcpy(key->data, data, (size_t)n);
    key->ntypes = ntypes;
    for (Py_ssize_t k = 0; k < ntypes; k++) {
        PyObject *t;
        memcpy(&t, data + k * (Py_ssize_t)sizeof(t), sizeof(t));
        Py_INCREF(t);
    }
    key->hash = raw_key_hash_of(data, n);
    return (PyObject *)key;
}

/* Write the types of n operands (their addresses): 0, or -1 with an error. */
static int
keybuf_types(keybuf *b, PyObject *const *ops, Py_ssize_t n)
{
    if (keybuf_reserve(b, n * (Py_ssize_t)sizeof(PyObject *)) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = (PyObject *)Py_TYPE(ops[i]);
        memcpy(b->buf + b->used, &t, sizeof(t));
        b->used += (Py_ssize_t)sizeof(t);
    }
    return 0;
}

/*
 * The RawKey of a call (see call_key): a new reference (the probe, where `probe_ok`
 * and there is one: to be looked up at once, and copied before anything else runs);
 * NULL with no error where a head item is not a str, bool or int of 64 bits, or an
 * array has no raw signature; NULL with an error on failure.
 */
static PyObject *
raw_key(PyObject *const *head, Py_ssize_t nh, PyObject *const *ops, Py_ssize_t n,
        const char *mask, raw_signature raw, int probe_ok, const char *head_bytes,
        Py_ssize_t head_length)
{
    keybuf b;
    keybuf_init(&b);
#ifndef Py_GIL_DISABLED
    if (probe_ok && probe != NULL) { /* written straight into the probe */
        b.buf = probe->data;
        b.size = PROBE_CAPACITY;
    }
#else
    (void)probe_ok;
#endif
    PyObject *key = NULL;
    int r = keybuf_types(&b, ops, n) < 0                             ? -1
            : head_bytes != NULL ? (keybuf_put(&b, head_bytes, head_length) < 0 ? -1 : 1)
                                 : keybuf_head(&b, head, nh);
    if (r <= 0) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!mask[i]) {
            continue;
        }
        Py_ssize_t length = raw(ops[i], b.buf + b.used, b.size - b.used);
        if (length > b.size - b.used) { /* grow, and write it again */
            if (keybuf_reserve(&b, length) < 0) {
                goto done;
            }
            length = raw(ops[i], b.buf + b.used, b.size - b.used);
        }
        if (length <= 0) {
            goto done; /* no raw form: the tuple key */
        }
        b.used += length;
    }
#ifndef Py_GIL_DISABLED
    if (probe != NULL && b.buf == probe->data) {
        Py_SET_SIZE(probe, b.used);
        probe->ntypes = n;
        probe->hash = raw_key_hash_of(b.buf, b.used);
        return Py_NewRef((PyObject *)probe);
    }
#endif
    key = raw_key_new_from(b.buf, b.used, n);
done:
    keybuf_free(&b);
    return key;
}

/* `key` itself, or a key of its own where it is the probe (a new reference both
 * ways; the caller's reference is taken over). NULL with an error. */
static PyObject *
key_to_keep(PyObject *key)
{
#ifndef Py_GIL_DISABLED
    if (key == (PyObject *)probe) {
        PyObject *own = raw_key_new_from(probe->data, Py_SIZE(probe), probe->ntypes);
        Py_DECREF(key);
        return own;
    }
#endif
    return key;
}

static PyObject *
raw_key_py_new(PyTypeObject *Py_UNUSED(type), PyObject *args, PyObject *kwds)
{
    PyObject *head, *types, *signs;
    if ((kwds != NULL && PyDict_GET_SIZE(kwds) != 0) ||
        !PyArg_ParseTuple(args, "O!O!O!:RawKey", &PyTuple_Type, &head, &PyTuple_Type, &types,
                          &PyBytes_Type, &signs)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "RawKey() takes no keyword arguments");
        }
        return NULL;
    }
    keybuf b;
    keybuf_init(&b);
    PyObject *key = NULL;
    const Py_ssize_t ntypes = PyTuple_GET_SIZE(types);
    int r = 1;
    for (Py_ssize_t k = 0; k < ntypes && r > 0; k++) {
        PyObject *t = PyTuple_GET_ITEM(types, k);
        if (!PyType_Check(t)) {
            PyErr_SetString(PyExc_TypeError, "RawKey(): types must be a tuple of types");
            r = -1;
        }
        else if (keybuf_put(&b, &t, (Py_ssize_t)sizeof(t)) < 0) {
            r = -1;
        }
    }
    if (r > 0) {
        r = keybuf_head(&b, &PyTuple_GET_ITEM(head, 0), PyTuple_GET_SIZE(head));
    }
    if (r == 0) {
        PyErr_SetString(PyExc_TypeError, "RawKey(): a head item is not a str, bool or int64");
    }
    if (r > 0 && keybuf_put(&b, PyBytes_AS_STRING(signs), PyBytes_GET_SIZE(signs)) == 0) {
        key = raw_key_new_from(b.buf, b.used, ntypes);
    }
    keybuf_free(&b);
    return key;
}

static Py_hash_t
raw_key_hash(RawKey *self)
{
    return self->hash;
}

static PyObject *
raw_key_richcompare(PyObject *a, PyObject *b, int op)
{
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(b) != &RawKeyType) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    const RawKey *x = (RawKey *)a, *y = (RawKey *)b;
    const int equal = x->hash == y->hash && Py_SIZE(x) == Py_SIZE(y) &&
                      x->ntypes == y->ntypes &&
                      memcmp(x->data, y->data, (size_t)Py_SIZE(x)) == 0;
    return PyBool_FromLong(op == Py_EQ ? equal : !equal);
}

static PyObject *
raw_key_repr(RawKey *self)
{
    return PyUnicode_FromFormat("<RawKey of %zd operands, %zd bytes>", self->ntypes, Py_SIZE(self));
}

static void
raw_key_dealloc(RawKey *self)
{
    for (Py_ssize_t k = 0; k < self->ntypes; k++) {
        PyObject *t;
        memcpy(&t, self->data + k * (Py_ssize_t)sizeof(t), sizeof(t));
        Py_DECREF(t);
    }
    PyObject_Free(self);
}

static PyTypeObject RawKeyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "arrayselect._dispatch._fastcall.RawKey",
    .tp_doc = "RawKey(head, types, signatures)\n--\n\n"
              "The key of a call whose arrays have raw signatures (see call_key).",
    .tp_basicsize = offsetof(RawKey, data),
    .tp_itemsize = 1,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = raw_key_py_new,
    .tp_dealloc = (destructor)raw_key_dealloc,
    .tp_hash = (hashfunc)raw_key_hash,
    .tp_richcompare = raw_key_richcompare,
    .tp_repr = (reprfunc)raw_key_repr,
};

/*
 * The one key of this hit path, for any number of operands (call_key in
 * fastcall_py.py builds the same): (*head, types, signatures). The nh items of
 * `head` are what is not an operand (select's options; the family's kind and
 * force_portable; every key of one cache has as many), `types` is types_of the n
 * operands (a Python scalar, or None for no out, stands for its type; the
 * caller's, or NULL to make it), and `signatures` the tuple of sign_one of each
 * operand whose mask byte is set, in order. With the backend's raw signature
 * (`raw`, or NULL), where every one of those arrays has one, the key is instead
 * RawKey(head, types, their raw signatures joined), written straight into one
 * object (the probe, with the GIL: the caller looks it up at once and keeps only
 * key_to_keep of it; a caller that has the head's encoding already passes it as
 * head_bytes, else NULL). Equal keys mean equal heads, equal types and equal
 * signatures of the arrays: everything a kept decision read.
 */
static PyObject *
call_key(PyObject *const *head, Py_ssize_t nh, PyObject *types, PyObject *const *ops,
         Py_ssize_t n, const char *mask, PyObject *sign, raw_signature raw,
         const char *head_bytes, Py_ssize_t head_length)
{
    if (raw != NULL) {
        PyObject *key = raw_key(head, nh, ops, n, mask, raw, 1, head_bytes, head_length);
        if (key != NULL || PyErr_Occurred()) {
            return key;
        }
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        m += mask[i] != 0;
    }
    types = types != NULL ? Py_NewRef(types) : types_of(ops, n);
    PyObject *key = PyTuple_New(nh + 2), *signs = PyTuple_New(m);
    if (key == NULL || signs == NULL || types == NULL) {
        Py_XDECREF(key);
        Py_XDECREF(signs);
        Py_XDECREF(types);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nh; i++) {
        PyTuple_SET_ITEM(key, i, Py_NewRef(head[i]));
    }
    PyTuple_SET_ITEM(key, nh, types);
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

/* Whether x is of one of the exact array types: 1, 0, or -1 with an error. */
static inline int
is_array(SignatureCall *self, PyObject *x)
{
    if (self->single != NULL) {
        return (PyObject *)Py_TYPE(x) == self->single;
    }
    return PySet_Contains(self->types, (PyObject *)Py_TYPE(x));
}

#ifndef Py_GIL_DISABLED
/*
 * The encoding of select's head (auto_broadcast, axis, cond_broadcast) for the raw
 * key: the one kept, when these are the objects it was made of, else a new one,
 * kept. 1 (*bytes, *length set), 0 (not kept: the key writes the head itself), -1
 * on error. With the GIL only: nothing else runs while it is read or written.
 */
static int
head_encoding(SignatureCall *self, PyObject *const *head, const char **bytes,
              Py_ssize_t *length)
{
    if (head[0] != self->head_seen[0] || head[1] != self->head_seen[1] ||
        head[2] != self->head_seen[2]) {
        keybuf b;
        keybuf_init(&b);
        const int r = keybuf_head(&b, head, 3);
        if (r <= 0 || b.used > (Py_ssize_t)sizeof(self->head_bytes)) {
            keybuf_free(&b);
            return r < 0 ? -1 : 0;
        }
        memcpy(self->head_bytes, b.buf, (size_t)b.used);
        self->head_length = b.used;
        keybuf_free(&b);
        for (int i = 0; i < 3; i++) {
            Py_XSETREF(self->head_seen[i], Py_NewRef(head[i])); /* str and int: no code runs */
        }
    }
    *bytes = self->head_bytes;
    *length = self->head_length;
    return 1;
}
#endif

static PyObject *
call_general(SignatureCall *self, PyObject *const *args)
{
    return PyObject_Vectorcall(self->general, args, 7, NULL);
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
    if (out != Py_None && self->check_out != Py_None) {
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
    int r = is_array(self, cond);
    if (r <= 0) {
        if (r < 0) {
            return NULL;
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    const int then_array = is_array(self, then);
    const int else_array = is_array(self, else_);
    const int out_array = out != Py_None ? is_array(self, out) : 0;
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
    const char *head_bytes = NULL;
    Py_ssize_t head_length = 0;
#ifndef Py_GIL_DISABLED
    if (self->raw != NULL && head_encoding(self, args + 3, &head_bytes, &head_length) < 0) {
        return NULL;
    }
#endif
    PyObject *key = call_key(args + 3, 3, NULL, ops, 4, mask, self->signature, self->raw,
                             head_bytes, head_length);
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
        if ((key = key_to_keep(key)) == NULL) {
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
        PyObject *value = NULL;
        if ((r = admit(range, *slot, &value)) <= 0) { /* 0: the general path decides */
            if (r == 0) {
                result = call_general(self, args);
            }
            goto done;
        }
        Py_SETREF(*slot, value);
    }
    if (self->check_devices != Py_None || (out != Py_None && self->check_out != Py_None)) {
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
    static char *kwlist[] = {"types", "signature", "raw_signature", "cache", "miss", "general",
                             "run", "backend", "check_devices", "check_out", "error",
                             "run_checks_devices", NULL};
    PyObject *o[11];
    int run_checks_devices;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO!OOOOOOOp", kwlist, &o[0], &o[1], &o[2],
                                     &PyDict_Type, &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                                     &o[9], &o[10], &run_checks_devices)) {
        return NULL;
    }
    if (!PyFrozenSet_Check(o[0])) {
        PyErr_SetString(PyExc_TypeError, "types must be a frozenset");
        return NULL;
    }
    raw_signature raw = raw_of(o[2]);
    if (raw == NULL && PyErr_Occurred()) {
        return NULL;
    }
    SignatureCall *self = (SignatureCall *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    PyObject **slots[11] = {&self->types, &self->signature, &self->raw_capsule, &self->cache,
                            &self->miss, &self->general, &self->run, &self->backend,
                            &self->check_devices, &self->check_out, &self->error};
    for (int k = 0; k < 11; k++) {
        Py_INCREF(o[k]);
        *slots[k] = o[k];
    }
    self->raw = raw;
    self->single = NULL;
#ifndef Py_GIL_DISABLED
    self->head_seen[0] = self->head_seen[1] = self->head_seen[2] = NULL;
    self->head_length = 0;
#endif
    if (PySet_GET_SIZE(self->types) == 1) {
        PyObject *it = PyObject_GetIter(self->types);
        PyObject *only = it != NULL ? PyIter_Next(it) : NULL;
        Py_XDECREF(it);
        if (only == NULL) {
            Py_DECREF(self);
            return NULL;
        }
        self->single = only; /* borrowed: the frozenset keeps it */
        Py_DECREF(only);
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
    Py_VISIT(self->raw_capsule);
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
    Py_CLEAR(self->raw_capsule);
#ifndef Py_GIL_DISABLED
    for (int i = 0; i < 3; i++) {
        Py_CLEAR(self->head_seen[i]);
    }
#endif
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
    .tp_doc = "SignatureCall(types, signature, raw_signature, cache, miss, general, run, backend, "
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
 * raw_signature, traced_types): which operands are arrays (one byte each), the
 * backend's signature and raw signature (Backend.raw_signature, or None), the
 * array types to ask whether a compiler traces. Every dict is read with a strong
 * reference.
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
    if (!PyTuple_CheckExact(layout) || PyTuple_GET_SIZE(layout) != 4 ||
        !PyBytes_CheckExact(PyTuple_GET_ITEM(layout, 0)) ||
        PyBytes_GET_SIZE(PyTuple_GET_ITEM(layout, 0)) != n ||
        !PyTuple_CheckExact(PyTuple_GET_ITEM(layout, 3))) {
        PyErr_SetString(PyExc_TypeError,
                        "family_find: a layout is (mask, sign, raw_signature, traced_types)");
        goto done;
    }
    raw_signature raw = raw_of(PyTuple_GET_ITEM(layout, 2));
    if (raw == NULL && PyErr_Occurred()) {
        goto done;
    }
    PyObject *traced = PyTuple_GET_ITEM(layout, 3);
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
                   PyTuple_GET_ITEM(layout, 1), raw, NULL, 0);
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
    s_dtype_mode = PyUnicode_InternFromString("dtype_mode");
    if (s_dtype_mode == NULL) {
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
    if (as_add_type(m, "SignatureCall", &SignatureCallType) < 0 ||
        as_add_type(m, "RawKey", &RawKeyType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#ifndef Py_GIL_DISABLED
    if (probe == NULL) { /* kept for the process's life */
        probe = PyObject_NewVar(RawKey, &RawKeyType, PROBE_CAPACITY);
        if (probe == NULL) {
            Py_DECREF(m);
            return NULL;
        }
        probe->ntypes = 0;
        probe->hash = 0;
    }
#endif
    return m;
}
