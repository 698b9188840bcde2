/* The jit wrapper's per-dispatch work in C: see runtime_guard/hotpath.py.

   It must record exactly what the Python path of GuardedJit._call_py records (guard.py), with the
   argument-shape hash of compat.make_arg_shapes; tests/guard/test_hotpath.py checks both. Reads
   the caller's frame through the C API, which raises no audit events (sys._getframe and
   frame.f_code do, and an audit hook makes each cost ~0.5 us). Anything unusual hands the call to
   the Python path. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <stdint.h>
#include <stddef.h>
#include <structmember.h>

#if PY_VERSION_HEX < 0x030B0000
#error "needs CPython 3.11+ (PyFrame_GetLasti)"
#endif

typedef struct {
    PyObject_HEAD
    PyObject *sites;     /* dict: (id(code) << 32 | lasti) -> (site, line) */
    PyObject *names;     /* dict: key -> name */
    PyObject *rec;       /* the Recorder */
    PyObject *acquire, *release, *fold, *locked;
    /* Offsets of the recorder's `seq`, `now` and `settled` slots (its __slots__' member
       descriptors), read and written directly: an attribute lookup costs ~150 instructions, three
       or four per call. 0: not a slot (a recorder of another layout), through getattr. */
    Py_ssize_t off_seq, off_now, off_settled;
    PyObject *arr_type, *nd_type;
    PyObject *dtype_codes; /* dict: id(dtype) -> (dtype, code), compat.DTYPE_CODES */
    Py_buffer view;
    Py_ssize_t base;
    uint64_t ring_mask, fold_mask;
    int have_view;
    char fast;           /* Guard._fast: GuardedJit's hot path applies */
    /* Recorded cross-process calls in flight, every thread (see `enter`): the thread of the
       oldest, its record; calls that overlapped one of another thread and were kept, the first
       one's record. Read and written with the GIL held, by C only (Python goes through
       enter()/leave()), so no update is lost. */
    unsigned long busy_thread;
    int busy_n;
    long long busy_seq, overlaps, overlap_seq, overlap_with;
    /* Direct-mapped copies of hits in `sites` and `names`, read without making Python ints. Both
       stay true: `names` only grows, and a cached site's code object is kept alive by the
       recorder's site table, so its address is never another code's (`sites` itself may be
       cleared: what it said of a (code, offset) still holds). */
    struct { void *code; int lasti; long site, line; } site_tab[1024];
    uint64_t known_tab[1024];
    struct { PyObject *dt; long long code; } dtype_tab[64];  /* holds its dtypes: their addresses stay theirs */
    /* An array's abstract value -> (hash of its shape, its dtype's code). A cached jit returns
       the same aval object for each call's outputs, so a step fed its own outputs meets the same
       few avals every call: their shape and dtype (two lookups, a tuple hash) are read once.
       Holds its avals (JAX never changes one: they are hashed, and compared by value). */
    struct { PyObject *aval; Py_hash_t hs; long long code; } aval_tab[64];
} HotPath;

static PyTypeObject HotPathType;
static PyObject *s_seq, *s_now, *s_aval, *s_shape, *s_dtype, *s_32, *s_settled, *s_call_py, *s_bound_key, *s_settle;

static void hp_dealloc(HotPath *self) {
    if (self->have_view) PyBuffer_Release(&self->view);
    Py_XDECREF(self->sites); Py_XDECREF(self->names); Py_XDECREF(self->rec);
    Py_XDECREF(self->acquire); Py_XDECREF(self->release); Py_XDECREF(self->fold); Py_XDECREF(self->locked);
    Py_XDECREF(self->arr_type); Py_XDECREF(self->nd_type); Py_XDECREF(self->dtype_codes);
    for (int i = 0; i < 64; i++) { Py_XDECREF(self->dtype_tab[i].dt); Py_XDECREF(self->aval_tab[i].aval); }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The offset of `obj`'s slot `name` when its type defines it as a writable object slot (a
   `__slots__` entry), else 0. */
static Py_ssize_t slot_offset(PyObject *obj, const char *name) {
    PyObject *d = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), name);
    if (!d) { PyErr_Clear(); return 0; }
    Py_ssize_t off = 0;
    if (Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READONLY) && m->offset > 0) off = m->offset;
    }
    Py_DECREF(d);
    return off;
}

/* The recorder's attribute: a new reference, or NULL with an exception set. */
static PyObject *rec_get(HotPath *self, Py_ssize_t off, PyObject *name) {
    if (off) {
        PyObject *v = *(PyObject **)((char *)self->rec + off);
        if (v) { Py_INCREF(v); return v; }
    }
    return PyObject_GetAttr(self->rec, name);
}

/* Set the recorder's attribute (a new reference to v is taken): 0, or -1 with an exception set.
   Through the slot, the old value's release runs no Python code (an int or a float). */
static int rec_set(HotPath *self, Py_ssize_t off, PyObject *name, PyObject *v) {
    if (off) {
        Py_INCREF(v);
        Py_XSETREF(*(PyObject **)((char *)self->rec + off), v);
        return 0;
    }
    return PyObject_SetAttr(self->rec, name, v);
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
    PyObject *lock = PyObject_GetAttrString(rec, "lock");
    self->locked = lock ? PyObject_GetAttrString(lock, "locked") : NULL;
    Py_XDECREF(lock);
    if (!self->acquire || !self->release || !self->fold || !self->locked) return -1;
    self->off_seq = slot_offset(rec, "seq");
    self->off_now = slot_offset(rec, "now");
    self->off_settled = slot_offset(rec, "settled");
    if (PyErr_Occurred()) return -1;
    self->base = base; self->ring_mask = ring_mask; self->fold_mask = fold_mask;
    return 0;
}

/* The code compat.dtype_code gave this dtype object, or -1 when it has none yet (the Python path
   then computes it: this call is handed back). */
static long long dtype_code(HotPath *self, PyObject *dt) {
    size_t di = ((uintptr_t)dt >> 4) & 63;
    if (self->dtype_tab[di].dt == dt) return self->dtype_tab[di].code;
    PyObject *k = PyLong_FromVoidPtr((void *)dt);
    if (!k) return -2;
    PyObject *hit = PyDict_GetItemWithError(self->dtype_codes, k);
    Py_DECREF(k);
    if (!hit) return PyErr_Occurred() ? -2 : -1;
    if (!PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 2 || PyTuple_GET_ITEM(hit, 0) != dt) return -1;
    long long code = PyLong_AsLongLong(PyTuple_GET_ITEM(hit, 1));
    if (code < 0) return PyErr_Occurred() ? -2 : -1;
    self->dtype_tab[di].code = code;  /* before the swap: releasing the old dtype may run code */
    Py_INCREF(dt);
    Py_XSETREF(self->dtype_tab[di].dt, dt);
    return code;
}

/* Fold one argument's shape and dtype into *h, as compat.make_arg_shapes does. Returns 0, 1 when
   the Python path must handle the call, -1 with an exception set. */
static int shape_hash(HotPath *self, PyObject *a, uint64_t *h) {
    PyObject *shape, *dt, *aval = NULL;
    size_t ai = 0;
    if (Py_TYPE(a) == (PyTypeObject *)self->arr_type) {
        aval = PyObject_GetAttr(a, s_aval);
        if (!aval) return -1;
        ai = ((uintptr_t)aval >> 4) & 63;
        if (self->aval_tab[ai].aval == aval) {
            Py_DECREF(aval);
            *h = (*h * 1000003ULL) ^ (uint64_t)self->aval_tab[ai].hs ^ (uint64_t)self->aval_tab[ai].code;
            return 0;
        }
        shape = PyObject_GetAttr(aval, s_shape);
        dt = shape ? PyObject_GetAttr(aval, s_dtype) : NULL;
    } else if (Py_TYPE(a) == (PyTypeObject *)self->nd_type) {
        shape = PyObject_GetAttr(a, s_shape);
        dt = shape ? PyObject_GetAttr(a, s_dtype) : NULL;
    } else {
        return 0;
    }
    if (!dt) { Py_XDECREF(shape); Py_XDECREF(aval); return -1; }
    long long code = dtype_code(self, dt);
    Py_DECREF(dt);
    if (code < 0) { Py_DECREF(shape); Py_XDECREF(aval); return code == -1 ? 1 : -1; }
    Py_hash_t hs = PyObject_Hash(shape);
    Py_DECREF(shape);
    if (hs == -1 && PyErr_Occurred()) { Py_XDECREF(aval); return -1; }
    *h = (*h * 1000003ULL) ^ (uint64_t)hs ^ (uint64_t)code;
    if (aval) {  /* the table takes this reference; releasing the old aval may run code: last */
        self->aval_tab[ai].hs = hs; self->aval_tab[ai].code = code;
        Py_XSETREF(self->aval_tab[ai].aval, aval);
    }
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

typedef struct { long long seq; long site, line; uint64_t key; PyObject *pseq; } Recorded;

static int site_lookup(HotPath *self, PyCodeObject *code, int lasti, long *site, long *line);
static int record_locked(HotPath *self, uint64_t key, long site, long line, Recorded *out);
static void write_record(HotPath *self, long long seq, uint64_t key, long site, long line, double now);

/* Record a call of key0 with these positional arguments made from `caller`: 1 (recorded, *out
   filled), 0 (the Python path must handle this call: a call site or argument-shape variant seen
   for the first time), -1 (error). */
static int record_at(HotPath *self, uint64_t key0, PyObject *args, PyFrameObject *caller, Recorded *out) {
    PyCodeObject *code = PyFrame_GetCode(caller);
    int lasti = PyFrame_GetLasti(caller);
    Py_DECREF(code);  /* the recorder's site table keeps cached code objects alive */
    long site, line;
    size_t si = (((uintptr_t)code >> 4) ^ ((uintptr_t)lasti * 0x9E3779B1u)) & 1023;
    if (self->site_tab[si].code == (void *)code && self->site_tab[si].lasti == lasti) {
        site = self->site_tab[si].site; line = self->site_tab[si].line;
    } else {
        int r = site_lookup(self, code, lasti, &site, &line);
        if (r <= 0) return r;
        self->site_tab[si].code = (void *)code; self->site_tab[si].lasti = lasti;
        self->site_tab[si].site = site; self->site_tab[si].line = line;
    }
    uint64_t h = 0;
    int shaped = arg_shapes(self, args, &h);
    if (shaped != 0) return shaped < 0 ? -1 : 0;
    uint64_t key = key0 ^ h;
    size_t ki = (size_t)(key ^ (key >> 29)) & 1023;
    if (key == 0 || self->known_tab[ki] != key) {
        PyObject *pkey = PyLong_FromUnsignedLongLong(key);
        if (!pkey) return -1;
        int known = PyDict_Contains(self->names, pkey);
        Py_DECREF(pkey);
        if (known <= 0) return known;
        self->known_tab[ki] = key;
    }
    /* The record is written under the recorder's lock, which Python code (the Python path, the
       exchange thread's folds) holds across calls that may release the GIL. When nobody holds
       it, this section needs no lock of its own: it runs no Python code and does not release the
       GIL, so no other thread can run a line of its own critical section meanwhile (a thread
       that takes the lock now, released from a wait, must first take the GIL). A fold is due
       every `_FOLD_EVERY` records: numpy may release the GIL inside it, so that one takes the lock. */
    PyObject *lk = PyObject_CallNoArgs(self->locked);
    if (!lk) return -1;
    int held = PyObject_IsTrue(lk);
    Py_DECREF(lk);
    if (held < 0) return -1;
    PyObject *pseq = rec_get(self, self->off_seq, s_seq);
    if (!pseq) return -1;
    long long seq = PyLong_AsLongLong(pseq) + 1;
    Py_DECREF(pseq);
    if (seq == 0 && PyErr_Occurred()) return -1;
    if (held || !((uint64_t)seq & self->fold_mask) || !self->off_seq || !self->off_now)
        return record_locked(self, key, site, line, out);
    PyObject *pnow = rec_get(self, self->off_now, s_now);
    if (!pnow) return -1;
    double now = PyFloat_AsDouble(pnow);
    Py_DECREF(pnow);
    if (now == -1.0 && PyErr_Occurred()) return -1;
    PyObject *nseq = PyLong_FromLongLong(seq);
    if (!nseq) return -1;
    if (rec_set(self, self->off_seq, s_seq, nseq) < 0) { Py_DECREF(nseq); return -1; }
    write_record(self, seq, key, site, line, now);
    out->seq = seq; out->site = site; out->line = line; out->key = key; out->pseq = nseq;
    return 1;
}

static void write_record(HotPath *self, long long seq, uint64_t key, long site, long line, double now) {
    unsigned char *p = (unsigned char *)self->view.buf + self->base + ((uint64_t)seq & self->ring_mask) * 48;
    uint64_t nb; memcpy(&nb, &now, 8);
    put64(p, (uint64_t)seq); put64(p + 8, key); put64(p + 16, 0); put64(p + 24, 0);
    put32(p + 32, (uint32_t)site); put32(p + 36, (uint32_t)line); put64(p + 40, nb);
}

/* record_at's section under the recorder's lock (taken, then released whatever happens). */
static int record_locked(HotPath *self, uint64_t key, long site, long line, Recorded *out) {
    PyObject *r = PyObject_CallNoArgs(self->acquire);
    if (!r) return -1;
    Py_DECREF(r);
    int result = -1;
    PyObject *pnow = rec_get(self, self->off_now, s_now);
    PyObject *pseq = pnow ? rec_get(self, self->off_seq, s_seq) : NULL;
    if (pseq) {
        long long seq = PyLong_AsLongLong(pseq) + 1;
        double now = PyFloat_AsDouble(pnow);
        PyObject *nseq = PyErr_Occurred() ? NULL : PyLong_FromLongLong(seq);
        if (nseq && rec_set(self, self->off_seq, s_seq, nseq) == 0) {
            write_record(self, seq, key, site, line, now);
            int ok = 1;
            if (!((uint64_t)seq & self->fold_mask)) {
                PyObject *fr = PyObject_CallNoArgs(self->fold);
                if (!fr) ok = 0; else Py_DECREF(fr);
            }
            if (ok) {
                out->seq = seq; out->site = site; out->line = line; out->key = key; out->pseq = nseq;
                nseq = NULL;
                result = 1;
            }
        }
        Py_XDECREF(nseq);
    }
    Py_XDECREF(pseq); Py_XDECREF(pnow);
    /* Release whatever happened: keep the pending exception across the call. */
    PyObject *et, *ev, *tb; PyErr_Fetch(&et, &ev, &tb);
    PyObject *rr = PyObject_CallNoArgs(self->release);
    Py_XDECREF(rr);
    if (et) PyErr_Restore(et, ev, tb);
    else if (!rr) { if (result == 1) Py_DECREF(out->pseq); return -1; }
    return result;
}

/* The call site cached in `sites` for (code, lasti): 1 (found), 0 (not cached), -1 (error). */
static int site_lookup(HotPath *self, PyCodeObject *code, int lasti, long *site, long *line) {
    /* (id(code) << 32) | lasti, the key Python computes (an int wider than 64 bits) */
    PyObject *a = PyLong_FromVoidPtr((void *)code);
    if (!a) return -1;
    PyObject *b = PyNumber_Lshift(a, s_32);
    Py_DECREF(a);
    if (!b) return -1;
    PyObject *l = PyLong_FromLong(lasti);
    if (!l) { Py_DECREF(b); return -1; }
    PyObject *sk = PyNumber_Or(b, l);
    Py_DECREF(b); Py_DECREF(l);
    if (!sk) return -1;
    PyObject *hit = PyDict_GetItemWithError(self->sites, sk);
    Py_DECREF(sk);
    if (!hit) return PyErr_Occurred() ? -1 : 0;
    *site = PyLong_AsLong(PyTuple_GET_ITEM(hit, 0));
    *line = PyLong_AsLong(PyTuple_GET_ITEM(hit, 1));
    return PyErr_Occurred() ? -1 : 1;
}

/* record(key0, args) -> (seq, site, line, key), or None when the Python path must handle this call.
   The call site is the caller of the Python function that called this (GuardedJit._call_py). */
static PyObject *hp_record(HotPath *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(argv[1])) { PyErr_SetString(PyExc_TypeError, "record(key0, args)"); return NULL; }
    uint64_t key0 = PyLong_AsUnsignedLongLong(argv[0]);
    if (key0 == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    PyFrameObject *f = PyEval_GetFrame();
    if (!f) Py_RETURN_NONE;
    PyFrameObject *caller = PyFrame_GetBack(f);
    if (!caller) Py_RETURN_NONE;
    Recorded o;
    int r = record_at(self, key0, argv[1], caller, &o);
    Py_DECREF(caller);
    if (r < 0) return NULL;
    if (r == 0) Py_RETURN_NONE;
    Py_DECREF(o.pseq);
    return Py_BuildValue("(LllK)", o.seq, o.site, o.line, (unsigned long long)o.key);
}

/* A recorded cross-process call starts on this thread: returns 1 when a call of another thread is
   in flight (an overlap, counted by `leave` if the call's record is kept). */
static int busy_enter(HotPath *hp, long long seq, long long *with) {
    unsigned long me = PyThread_get_thread_ident();
    int other = hp->busy_n > 0 && hp->busy_thread != me;
    if (hp->busy_n == 0) { hp->busy_thread = me; hp->busy_seq = seq; }
    *with = other ? hp->busy_seq : 0;
    hp->busy_n++;
    return other;
}

static void busy_leave(HotPath *hp, int overlapped, int kept, long long seq, long long with) {
    if (hp->busy_n > 0) hp->busy_n--;
    if (overlapped && kept) {
        if (!hp->overlaps) { hp->overlap_seq = seq; hp->overlap_with = with; }
        hp->overlaps++;
    }
}

/* enter(seq) -> token | None: busy_enter for the Python paths; token for leave(). */
static PyObject *hp_enter(HotPath *self, PyObject *arg) {
    long long seq = PyLong_AsLongLong(arg);
    if (seq == -1 && PyErr_Occurred()) return NULL;
    long long with;
    if (!busy_enter(self, seq, &with)) Py_RETURN_NONE;
    return PyLong_FromLongLong(with);
}

/* leave(token, kept, seq): busy_leave for the Python paths. */
static PyObject *hp_leave(HotPath *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "leave(token, kept, seq)"); return NULL; }
    int overlapped = argv[0] != Py_None;
    long long with = overlapped ? PyLong_AsLongLong(argv[0]) : 0;
    int kept = PyObject_IsTrue(argv[1]);
    long long seq = PyLong_AsLongLong(argv[2]);
    if (PyErr_Occurred()) return NULL;
    busy_leave(self, overlapped, kept > 0, seq, with);
    Py_RETURN_NONE;
}

static PyMethodDef hp_methods[] = {
    {"enter", (PyCFunction)hp_enter, METH_O, "enter(seq) -> token | None (a call of another thread is in flight)"},
    {"leave", (PyCFunction)(void (*)(void))hp_leave, METH_FASTCALL, "leave(token, kept, seq)"},
    {"record", (PyCFunction)(void (*)(void))hp_record, METH_FASTCALL, "record(key0, args) -> (seq, site, line, key) | None"},
    {NULL}
};

static PyMemberDef hp_members[] = {
    {"fast", T_BOOL, offsetof(HotPath, fast), 0, "Guard._fast: the hot path applies"},
    {"busy_n", T_INT, offsetof(HotPath, busy_n), READONLY, "recorded cross-process calls in flight"},
    {"overlaps", T_LONGLONG, offsetof(HotPath, overlaps), READONLY, "kept calls that overlapped another thread's"},
    {"overlap_seq", T_LONGLONG, offsetof(HotPath, overlap_seq), READONLY, "record of the first such call"},
    {"overlap_with", T_LONGLONG, offsetof(HotPath, overlap_with), READONLY, "record of the call it overlapped"},
    {NULL}
};

/* ---- JitBase: GuardedJit's C base; its tp_call is the hot path --------------------------------

   GuardedJit (guard.py) subclasses it and keeps everything else in Python. A call of a function
   known to run across every process, in fast mode, is recorded and forwarded to JAX here without
   a Python frame; any other call goes to GuardedJit._call_py, the Python path. The call in
   progress is kept in a per-thread list of C stack nodes for the hooks on JAX's Python path
   (`current()`, guard._current_call), which find it by its caller's frame. */

#define KIND_MULTI 2  /* guard._MULTI */

typedef struct {
    PyObject_HEAD
    PyObject *jitted, *guard, *key_obj, *hp, *statics;
    uint64_t key;
    int key_ok;   /* key_obj is an int in [0, 2**64) */
    int kind;
} JitBase;

typedef struct Node {
    struct Node *prev;
    PyObject *wrapper;
    PyFrameObject *caller;  /* borrowed: the frame is executing the call */
    Recorded rec;
} Node;

static _Thread_local Node *tl_top = NULL;

static int jb_traverse(JitBase *self, visitproc visit, void *arg) {
    Py_VISIT(self->jitted); Py_VISIT(self->guard); Py_VISIT(self->key_obj); Py_VISIT(self->hp); Py_VISIT(self->statics);
    return 0;
}

static int jb_clear(JitBase *self) {
    Py_CLEAR(self->jitted); Py_CLEAR(self->guard); Py_CLEAR(self->key_obj); Py_CLEAR(self->hp); Py_CLEAR(self->statics);
    return 0;
}

static void jb_dealloc(JitBase *self) {
    PyObject_GC_UnTrack(self);
    jb_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *jb_get_key(JitBase *self, void *c) {
    if (!self->key_obj) { PyErr_SetString(PyExc_AttributeError, "_key"); return NULL; }
    Py_INCREF(self->key_obj);
    return self->key_obj;
}

static int jb_set_key(JitBase *self, PyObject *v, void *c) {
    if (!v) { PyErr_SetString(PyExc_AttributeError, "cannot delete _key"); return -1; }
    self->key_ok = 0;
    if (PyLong_Check(v)) {
        unsigned long long k = PyLong_AsUnsignedLongLong(v);
        if (k == (unsigned long long)-1 && PyErr_Occurred()) PyErr_Clear();
        else { self->key = k; self->key_ok = 1; }
    }
    Py_INCREF(v);
    Py_XSETREF(self->key_obj, v);
    return 0;
}

static PyGetSetDef jb_getset[] = {
    {"_key", (getter)jb_get_key, (setter)jb_set_key, "the function's identity (stable hash)", NULL},
    {NULL}
};

static PyMemberDef jb_members[] = {
    {"_jitted", T_OBJECT_EX, offsetof(JitBase, jitted), 0, "the jax.jit object"},
    {"_guard", T_OBJECT_EX, offsetof(JitBase, guard), 0, "the Guard"},
    {"_hp", T_OBJECT, offsetof(JitBase, hp), 0, "the guard's HotPath, or None"},
    {"_statics", T_OBJECT, offsetof(JitBase, statics), 0, "(static_argnums, static_argnames) or None"},
    {"_kind", T_INT, offsetof(JitBase, kind), 0, "what it has been seen to run (guard._MULTI, ...)"},
    {NULL}
};

static PyObject *jb_fallback(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *m = PyObject_GetAttr(self, s_call_py);
    if (!m) return NULL;
    PyObject *out = PyObject_Call(m, args, kwargs);
    Py_DECREF(m);
    return out;
}

/* compat.concrete_result's twin: is the result (a train step's (params, opt_state, loss) by its
   last or first element, a dict by its first value) a concrete jax.Array, i.e. did the call
   dispatch? 0 means "look closer" (GuardedJit._settle). */
static int concrete(HotPath *hp, PyObject *out) {
    PyTypeObject *arr = (PyTypeObject *)hp->arr_type;
    PyTypeObject *t = Py_TYPE(out);
    if (t == arr) return 1;
    if (t == &PyTuple_Type) {
        Py_ssize_t n = PyTuple_GET_SIZE(out);
        return n && (Py_TYPE(PyTuple_GET_ITEM(out, n - 1)) == arr || Py_TYPE(PyTuple_GET_ITEM(out, 0)) == arr);
    }
    if (t == &PyList_Type) {
        Py_ssize_t n = PyList_GET_SIZE(out);
        return n && (Py_TYPE(PyList_GET_ITEM(out, n - 1)) == arr || Py_TYPE(PyList_GET_ITEM(out, 0)) == arr);
    }
    if (t == &PyDict_Type) {
        Py_ssize_t pos = 0; PyObject *k, *v;
        return PyDict_Next(out, &pos, &k, &v) && Py_TYPE(v) == arr;
    }
    return 0;
}

static PyObject *jb_call(JitBase *self, PyObject *args, PyObject *kwargs) {
    HotPath *hp = (HotPath *)self->hp;
    if (!hp || Py_TYPE(hp) != &HotPathType || !hp->fast || self->kind != KIND_MULTI || !self->key_ok || !self->jitted)
        return jb_fallback((PyObject *)self, args, kwargs);
    /* Held for the call: Python code run from here (`_bound_key`, JAX itself) may reassign the
       wrapper's fields, which a Python caller's stack would have kept alive. */
    PyObject *jitted = self->jitted;
    Py_INCREF(jitted); Py_INCREF(hp);
    PyObject *out = NULL;
    int has_kw = kwargs && PyDict_GET_SIZE(kwargs);
    uint64_t key0 = self->key;
    if (has_kw || (self->statics && self->statics != Py_None)) {
        /* keyword arrays, static argument values: GuardedJit._bound_key, in Python */
        PyObject *kw = has_kw ? kwargs : PyDict_New();
        if (!kw) goto done;
        PyObject *bk = PyObject_CallMethodObjArgs((PyObject *)self, s_bound_key, args, kw, NULL);
        if (!has_kw) Py_DECREF(kw);
        if (!bk) goto done;
        unsigned long long b = PyLong_AsUnsignedLongLong(bk);
        Py_DECREF(bk);
        if (b == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); goto fallback; }
        key0 ^= b;
    }
    PyFrameObject *caller = PyEval_GetFrame();  /* the call site: no Python frame of ours in between */
    if (!caller) goto fallback;
    Node node;
    int r = record_at(hp, key0, args, caller, &node.rec);
    if (r < 0) goto done;
    if (r == 0) goto fallback;
    node.prev = tl_top; node.wrapper = (PyObject *)self; node.caller = caller;
    tl_top = &node;
    long long with;
    int overlapped = busy_enter(hp, node.rec.seq, &with);
    out = PyObject_Call(jitted, args, has_kw ? kwargs : NULL);
    tl_top = node.prev;
    PyObject *pseq = node.rec.pseq;
    int kept = 0;
    if (out) {
        PyObject *settled;
        if (concrete(hp, out)) {
            /* dispatched: settled unless a hook took it back (it ran locally, or over a subset) */
            PyObject *cur = rec_get(hp, hp->off_seq, s_seq);
            int ge = cur ? (cur == pseq ? 1 : PyObject_RichCompareBool(cur, pseq, Py_GE)) : -1;
            Py_XDECREF(cur);
            kept = ge > 0;
            settled = ge < 0 ? NULL : (ge ? (rec_set(hp, hp->off_settled, s_settled, pseq) < 0 ? NULL : Py_None) : Py_None);
            Py_XINCREF(settled);
        } else {
            settled = PyObject_CallMethodObjArgs((PyObject *)self, s_settle, out, pseq, NULL);  /* traced? */
        }
        if (settled) Py_DECREF(settled); else Py_CLEAR(out);
    }
    busy_leave(hp, overlapped, kept, node.rec.seq, with);
    Py_DECREF(pseq);
    goto done;
fallback:
    out = jb_fallback((PyObject *)self, args, kwargs);
done:
    Py_DECREF(jitted); Py_DECREF(hp);
    return out;
}

/* current() -> (caller frame, wrapper, site, line, seq, key) of this thread's innermost call on
   the C hot path, or None. */
static PyObject *hp_current(PyObject *mod, PyObject *unused) {
    Node *n = tl_top;
    if (!n) Py_RETURN_NONE;
    return Py_BuildValue("(OOllLK)", (PyObject *)n->caller, n->wrapper, n->rec.site, n->rec.line, n->rec.seq,
                         (unsigned long long)n->rec.key);
}

static PyTypeObject JitBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "runtime_guard._hotpath.JitBase",
    .tp_basicsize = sizeof(JitBase),
    .tp_dealloc = (destructor)jb_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)jb_traverse,
    .tp_clear = (inquiry)jb_clear,
    .tp_new = PyType_GenericNew,
    .tp_call = (ternaryfunc)jb_call,
    .tp_members = jb_members,
    .tp_getset = jb_getset,
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
    .tp_members = hp_members,
};

static PyMethodDef mod_methods[] = {
    {"current", hp_current, METH_NOARGS, "this thread's innermost call on the C hot path, or None"},
    {NULL}
};

static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_hotpath", NULL, -1, mod_methods};

PyMODINIT_FUNC PyInit__hotpath(void) {
    s_seq = PyUnicode_InternFromString("seq"); s_now = PyUnicode_InternFromString("now");
    s_aval = PyUnicode_InternFromString("aval"); s_shape = PyUnicode_InternFromString("shape");
    s_32 = PyLong_FromLong(32);
    s_dtype = PyUnicode_InternFromString("dtype");
    s_settled = PyUnicode_InternFromString("settled"); s_call_py = PyUnicode_InternFromString("_call_py");
    s_bound_key = PyUnicode_InternFromString("_bound_key"); s_settle = PyUnicode_InternFromString("_settle");
    if (PyType_Ready(&HotPathType) < 0 || PyType_Ready(&JitBaseType) < 0) return NULL;
    PyObject *m = PyModule_Create(&mod);
    if (!m) return NULL;
    Py_INCREF(&HotPathType);
    PyModule_AddObject(m, "HotPath", (PyObject *)&HotPathType);
    Py_INCREF(&JitBaseType);
    PyModule_AddObject(m, "JitBase", (PyObject *)&JitBaseType);
    return m;
}
