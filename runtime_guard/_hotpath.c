/* The jit wrapper's per-dispatch work in C: see runtime_guard/hotpath.py.

   It must record exactly what the Python path of GuardedJit.__call__ records (guard.py), with the
   argument-shape hash of compat.make_arg_shapes; tests/guard/test_hotpath.py checks both. Reads
   the caller's frame through the C API, which raises no audit events (sys._getframe and
   frame.f_code do, and an audit hook makes each cost ~0.5 us). Anything unusual returns None and
   the Python path handles that call. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <stdint.h>

#if PY_VERSION_HEX < 0x030B0000
#error "needs CPython 3.11+ (PyFrame_GetLasti)"
#endif

typedef struct {
    PyObject_HEAD
    PyObject *sites;     /* dict: (id(code) << 32 | lasti) -> (site, line) */
    PyObject *names;     /* dict: key -> name */
    PyObject *rec;       /* the Recorder */
    PyObject *acquire, *release, *fold;
    PyObject *arr_type, *nd_type;
    PyObject *dtype_codes; /* dict: id(dtype) -> (dtype, code), compat.DTYPE_CODES */
    Py_buffer view;
    Py_ssize_t base;
    uint64_t ring_mask, fold_mask;
    int have_view;
} HotPath;

static PyObject *s_seq, *s_now, *s_aval, *s_shape, *s_dtype, *s_32;

static void hp_dealloc(HotPath *self) {
    if (self->have_view) PyBuffer_Release(&self->view);
    Py_XDECREF(self->sites); Py_XDECREF(self->names); Py_XDECREF(self->rec);
    Py_XDECREF(self->acquire); Py_XDECREF(self->release); Py_XDECREF(self->fold);
    Py_XDECREF(self->arr_type); Py_XDECREF(self->nd_type); Py_XDECREF(self->dtype_codes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int hp_init(HotPath *self, PyObject *args, PyObject *kw) {
    PyObject *sites, *names, *rec, *buf, *arr, *nd, *codes;
    Py_ssize_t base; unsigned long long ring_mask, fold_mask;
    if (!PyArg_ParseTuple(args, "O!O!OOnKKOOO!", &PyDict_Type, &sites, &PyDict_Type, &names, &rec, &buf, &base,
                          &ring_mask, &fold_mask, &arr, &nd, &PyDict_Type, &codes))
        return -1;
    if (PyObject_GetBuffer(buf, &self->view, PyBUF_WRITABLE) < 0) return -1;
    self->have_view = 1;
    Py_INCREF(sites); self->sites = sites;
    Py_INCREF(names); self->names = names;
    Py_INCREF(rec); self->rec = rec;
    Py_INCREF(arr); self->arr_type = arr;
    Py_INCREF(nd); self->nd_type = nd;
    Py_INCREF(codes); self->dtype_codes = codes;
    self->acquire = PyObject_GetAttrString(rec, "_acquire");
    self->release = PyObject_GetAttrString(rec, "_release");
    self->fold = PyObject_GetAttrString(rec, "_fold");
    if (!self->acquire || !self->release || !self->fold) return -1;
    self->base = base; self->ring_mask = ring_mask; self->fold_mask = fold_mask;
    return 0;
}

/* The code compat.dtype_code gave this dtype object, or -1 when it has none yet (the Python path
   then computes it: this call is handed back). */
static long long dtype_code(HotPath *self, PyObject *dt) {
    PyObject *k = PyLong_FromVoidPtr((void *)dt);
    if (!k) return -2;
    PyObject *hit = PyDict_GetItemWithError(self->dtype_codes, k);
    Py_DECREF(k);
    if (!hit) return PyErr_Occurred() ? -2 : -1;
    if (!PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 2 || PyTuple_GET_ITEM(hit, 0) != dt) return -1;
    return PyLong_AsLongLong(PyTuple_GET_ITEM(hit, 1));
}

/* Fold one argument's shape and dtype into *h, as compat.make_arg_shapes does. Returns 0, 1 when
   the Python path must handle the call, -1 with an exception set. */
static int shape_hash(HotPath *self, PyObject *a, uint64_t *h) {
    PyObject *shape, *dt;
    if (Py_TYPE(a) == (PyTypeObject *)self->arr_type) {
        PyObject *aval = PyObject_GetAttr(a, s_aval);
        if (!aval) return -1;
        shape = PyObject_GetAttr(aval, s_shape);
        dt = shape ? PyObject_GetAttr(aval, s_dtype) : NULL;
        Py_DECREF(aval);
    } else if (Py_TYPE(a) == (PyTypeObject *)self->nd_type) {
        shape = PyObject_GetAttr(a, s_shape);
        dt = shape ? PyObject_GetAttr(a, s_dtype) : NULL;
    } else {
        return 0;
    }
    if (!dt) { Py_XDECREF(shape); return -1; }
    long long code = dtype_code(self, dt);
    Py_DECREF(dt);
    if (code < 0) { Py_DECREF(shape); return code == -1 ? 1 : -1; }
    Py_hash_t hs = PyObject_Hash(shape);
    Py_DECREF(shape);
    if (hs == -1 && PyErr_Occurred()) return -1;
    *h = (*h * 1000003ULL) ^ (uint64_t)hs ^ (uint64_t)code;
    return 0;
}

/* compat.make_arg_shapes over the positional arguments: 0, 1 (hand the call to Python), -1 (error).
   Items of a dict or list are held while they are looked at: an attribute lookup may allocate,
   and a finalizer run by the garbage collector could change the container meanwhile. */
static int arg_shapes(HotPath *self, PyObject *args, uint64_t *h) {
    int r;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        PyTypeObject *t = Py_TYPE(a);
        if (t == (PyTypeObject *)self->arr_type || t == (PyTypeObject *)self->nd_type) {
            if ((r = shape_hash(self, a, h)) != 0) return r;
        } else if ((t == &PyDict_Type && PyDict_GET_SIZE(a) <= 8) || (t == &PyList_Type && PyList_GET_SIZE(a) <= 8)) {
            PyObject *items = t == &PyDict_Type ? PyDict_Values(a) : PyList_GetSlice(a, 0, PY_SSIZE_T_MAX);
            if (!items) return -1;
            r = 0;
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(items) && r == 0; j++)
                r = shape_hash(self, PyList_GET_ITEM(items, j), h);
            Py_DECREF(items);
            if (r != 0) return r;
        } else if (t == &PyTuple_Type && PyTuple_GET_SIZE(a) <= 8) {
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(a); j++)  /* immutable, and held by args */
                if ((r = shape_hash(self, PyTuple_GET_ITEM(a, j), h)) != 0) return r;
        }
    }
    return 0;
}

static void put64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }

/* record(key0, args) -> (seq, site, line, key), or None when the Python path must handle this call
   (a call site or argument-shape variant seen for the first time). */
static PyObject *hp_record(HotPath *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(argv[1])) { PyErr_SetString(PyExc_TypeError, "record(key0, args)"); return NULL; }
    uint64_t key0 = PyLong_AsUnsignedLongLong(argv[0]);
    if (key0 == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    /* The caller of the Python function that called us. */
    PyFrameObject *f = PyEval_GetFrame();
    if (!f) Py_RETURN_NONE;
    PyFrameObject *caller = PyFrame_GetBack(f);
    if (!caller) Py_RETURN_NONE;
    PyCodeObject *code = PyFrame_GetCode(caller);
    int lasti = PyFrame_GetLasti(caller);
    Py_DECREF(caller);
    /* (id(code) << 32) | lasti, the key Python computes (an int wider than 64 bits) */
    PyObject *a = PyLong_FromVoidPtr((void *)code);
    Py_DECREF(code);  /* the recorder's site table keeps cached code objects alive */
    if (!a) return NULL;
    PyObject *b = PyNumber_Lshift(a, s_32);
    Py_DECREF(a);
    if (!b) return NULL;
    PyObject *l = PyLong_FromLong(lasti);
    if (!l) { Py_DECREF(b); return NULL; }
    PyObject *sk = PyNumber_Or(b, l);
    Py_DECREF(b); Py_DECREF(l);
    if (!sk) return NULL;
    PyObject *hit = PyDict_GetItemWithError(self->sites, sk);
    Py_DECREF(sk);
    if (!hit) { if (PyErr_Occurred()) return NULL; Py_RETURN_NONE; }
    long site = PyLong_AsLong(PyTuple_GET_ITEM(hit, 0));
    long line = PyLong_AsLong(PyTuple_GET_ITEM(hit, 1));
    uint64_t h = 0;
    int shaped = arg_shapes(self, argv[1], &h);
    if (shaped < 0) return NULL;
    if (shaped > 0) Py_RETURN_NONE;
    uint64_t key = key0 ^ h;
    PyObject *pkey = PyLong_FromUnsignedLongLong(key);
    if (!pkey) return NULL;
    int known = PyDict_Contains(self->names, pkey);
    if (known <= 0) { Py_DECREF(pkey); if (known < 0) return NULL; Py_RETURN_NONE; }
    PyObject *r = PyObject_CallNoArgs(self->acquire);
    if (!r) { Py_DECREF(pkey); return NULL; }
    Py_DECREF(r);
    PyObject *result = NULL;
    PyObject *pseq = PyObject_GetAttr(self->rec, s_seq);
    PyObject *pnow = pseq ? PyObject_GetAttr(self->rec, s_now) : NULL;
    if (pnow) {
        long long seq = PyLong_AsLongLong(pseq) + 1;
        double now = PyFloat_AsDouble(pnow);
        PyObject *nseq = PyLong_FromLongLong(seq);
        if (nseq && PyObject_SetAttr(self->rec, s_seq, nseq) == 0) {
            unsigned char *p = (unsigned char *)self->view.buf + self->base + ((uint64_t)seq & self->ring_mask) * 48;
            uint64_t nb; memcpy(&nb, &now, 8);
            put64(p, (uint64_t)seq); put64(p + 8, key); put64(p + 16, 0); put64(p + 24, 0);
            put32(p + 32, (uint32_t)site); put32(p + 36, (uint32_t)line); put64(p + 40, nb);
            int ok = 1;
            if (!((uint64_t)seq & self->fold_mask)) {
                PyObject *fr = PyObject_CallNoArgs(self->fold);
                if (!fr) ok = 0; else Py_DECREF(fr);
            }
            if (ok) result = Py_BuildValue("(LllO)", seq, site, line, pkey);
        }
        Py_XDECREF(nseq);
    }
    Py_XDECREF(pseq); Py_XDECREF(pnow); Py_DECREF(pkey);
    /* Release whatever happened: keep the pending exception across the call. */
    PyObject *et, *ev, *tb; PyErr_Fetch(&et, &ev, &tb);
    PyObject *rr = PyObject_CallNoArgs(self->release);
    Py_XDECREF(rr);
    if (et) PyErr_Restore(et, ev, tb); else if (!rr) { Py_XDECREF(result); return NULL; }
    return result;
}

static PyMethodDef hp_methods[] = {
    {"record", (PyCFunction)(void (*)(void))hp_record, METH_FASTCALL, "record(key0, args) -> (seq, site, line, key) | None"},
    {NULL}
};

static PyTypeObject HotPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "runtime_guard._hotpath.HotPath",
    .tp_basicsize = sizeof(HotPath),
    .tp_dealloc = (destructor)hp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)hp_init,
    .tp_methods = hp_methods,
};

static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_hotpath", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__hotpath(void) {
    s_seq = PyUnicode_InternFromString("seq"); s_now = PyUnicode_InternFromString("now");
    s_aval = PyUnicode_InternFromString("aval"); s_shape = PyUnicode_InternFromString("shape");
    s_32 = PyLong_FromLong(32);
    s_dtype = PyUnicode_InternFromString("dtype");
    if (PyType_Ready(&HotPathType) < 0) return NULL;
    PyObject *m = PyModule_Create(&mod);
    if (!m) return NULL;
    Py_INCREF(&HotPathType);
    PyModule_AddObject(m, "HotPath", (PyObject *)&HotPathType);
    return m;
}
