/* _native.c: the optional CPython extension of the tilec package, built
 * with the stable ABI (Py_LIMITED_API 3.11: one tilec_native.abi3.so for
 * Python 3.11 and later) by the Makefile beside libtilec.so. It packs a
 * call's values straight from Python objects into tilec_rt_arg slots and
 * calls the runtime: tilec_plan_run for a graph, tilec_program_launch or
 * _launch_best for a kernel, saving the struct.pack and the ctypes
 * argument conversion of the ctypes path (python/tilec/_library.py). The
 * runtime's entry points come from the already loaded libtilec through
 * init() (addresses ctypes found), so this file links against nothing.
 * The package works without it (ctypes); TILEC_NO_NATIVE=1 turns it off. */
#define Py_LIMITED_API 0x030b0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <structmember.h>

/* The runtime's own declarations (the Makefile builds this file with
 * -Iinclude): a kernel argument is tilec_rt_arg, and the entry points'
 * types are their prototypes', so a change of either fails this build
 * rather than a call. */
#include "tilec/plan.h"

typedef tilec_rt_arg arg;

typedef tilec_rt_status (*plan_run_fn)(tilec_plan *plan, const tilec_rt_arg *slots, uint32_t n, void *stream);
typedef tilec_rt_status (*launch_fn)(const tilec_program *prog, const char *name, int variant,
                                     const tilec_rt_arg *args, uint32_t n, void *stream);
typedef tilec_rt_status (*launch_best_fn)(tilec_program *prog, const char *name, const tilec_rt_arg *args,
                                          uint32_t n, void *stream, int *chosen);

static plan_run_fn plan_run;
static launch_fn launch;
static launch_best_fn launch_best;

enum { MAX_VALUES = 1024 };

/* Built with -DTILEC_NATIVE_PROF (x86-64; bench/binding/profile_call.py
 * --phases builds it): rcall counts the TSC cycles of each phase of a call
 * into prof_t, which prof() returns and clears. Off in the package's build:
 * PROF_START and PROF_AT are then nothing. */
#if defined(TILEC_NATIVE_PROF) && defined(__x86_64__)
#include <x86intrin.h>
enum { P_KEY, P_LOOKUP, P_STREAM, P_STATIC, P_GETDEV, P_ALLOC, P_DPTR, P_SLOTS, P_PLAN, P_END, P_N };
static uint64_t prof_t[P_N], prof_last, prof_calls;
#define PROF_START() (prof_last = __rdtsc(), prof_calls++)
#define PROF_AT(i)                                                                                                     \
    do {                                                                                                              \
        uint64_t t_ = __rdtsc();                                                                                      \
        prof_t[i] += t_ - prof_last;                                                                                  \
        prof_last = t_;                                                                                               \
    } while (0)
#else
#define PROF_START() ((void)0)
#define PROF_AT(i) ((void)0)
#endif

/* Attribute and method names, interned once (PyInit): no string made per call. */
static PyObject *s_dtype, *s_is_cuda, *s_is_contiguous, *s_shape, *s_get_device, *s_data_ptr, *s_ptr, *s_fast,
    *s_graph, *s_fail, *s_static, *s_clone, *s_copies;

/* v as kind k (see pack) into *out. -1 with a Python error set. */
static int pack_value(PyObject *v, char k, arg *out)
{
    out->u64 = 0;
    switch (k) {
    case 'p':
    case 'Q': out->u64 = PyLong_AsUnsignedLongLong(v); break;
    case 'q': out->i64 = PyLong_AsLongLong(v); break;
    case 'i': out->i32 = (int32_t)PyLong_AsLong(v); break;
    case 'I': out->u32 = (uint32_t)PyLong_AsUnsignedLong(v); break;
    case 'd': out->f64 = PyFloat_AsDouble(v); break;
    case 'f': out->f32 = (float)PyFloat_AsDouble(v); break;
    default: PyErr_Format(PyExc_ValueError, "unknown value kind %c", k); return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* values[i] as kinds[i] says: 'p' address, 'q' int64, 'd' double, 'i'
 * int32, 'I' uint32, 'Q' uint64, 'f' float. -1 with a Python error set. */
static int pack(PyObject *values, const char *kinds, Py_ssize_t n, arg *out)
{
    if (!PyTuple_Check(values) || PyTuple_Size(values) != n) {
        PyErr_Format(PyExc_TypeError, "expected a tuple of %zd values", n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (pack_value(PyTuple_GetItem(values, i), kinds[i], &out[i]))
            return -1;
    return 0;
}

static void *stream_of(PyObject *s) { return s == Py_None ? NULL : PyLong_AsVoidPtr(s); }

static PyObject *n_init(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *a, *b, *c;
    if (!PyArg_ParseTuple(args, "OOO", &a, &b, &c))
        return NULL;
    plan_run = (plan_run_fn)PyLong_AsVoidPtr(a);
    launch = (launch_fn)PyLong_AsVoidPtr(b);
    launch_best = (launch_best_fn)PyLong_AsVoidPtr(c);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

/* plan_run(plan, kinds, values, stream) -> status */
static PyObject *n_plan_run(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *plan, *values, *stream;
    const char *kinds;
    Py_ssize_t n;
    arg slots[MAX_VALUES];
    if (!PyArg_ParseTuple(args, "Oy#OO", &plan, &kinds, &n, &values, &stream))
        return NULL;
    if (n > MAX_VALUES || !plan_run)
        return PyErr_Format(PyExc_ValueError, "%zd slots (at most %d), or init() not called", n, MAX_VALUES);
    if (pack(values, kinds, n, slots))
        return NULL;
    void *s = stream_of(stream), *p = PyLong_AsVoidPtr(plan);
    if (PyErr_Occurred())
        return NULL;
    return PyLong_FromLong(plan_run(p, slots, (uint32_t)n, s));
}

/* launch(prog, name, variant, kinds, values, stream) -> (status, chosen); variant < 0: the fastest */
static PyObject *n_launch(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *prog, *values, *stream;
    const char *name, *kinds;
    Py_ssize_t n;
    int variant, chosen = -1;
    arg a[64];
    if (!PyArg_ParseTuple(args, "Oyiy#OO", &prog, &name, &variant, &kinds, &n, &values, &stream))
        return NULL;
    if (n > 64 || !launch)
        return PyErr_Format(PyExc_ValueError, "%zd arguments (at most 64), or init() not called", n);
    if (pack(values, kinds, n, a))
        return NULL;
    void *s = stream_of(stream), *p = PyLong_AsVoidPtr(prog);
    if (PyErr_Occurred())
        return NULL;
    int st = variant < 0 ? launch_best(p, name, a, (uint32_t)n, s, &chosen)
                         : launch(p, name, variant, a, (uint32_t)n, s);
    return Py_BuildValue("(ii)", st, variant < 0 ? chosen : variant);
}

/* ---- a Kernel call's checks in C (kcompile, kcall) ----
 * kcompile(spec) -> capsule; spec: (prog, name, variant, kinds, dtypes,
 * sizes, device, tensor_type, raw_stream): kinds as for pack(); dtypes
 * the torch dtype each pointer parameter wants (None for scalars), sizes
 * its element size in bytes; tensor_type torch.Tensor and raw_stream
 * torch's current-stream getter (torch._C._cuda_getCurrentRawStream),
 * read once into C data. kcall(capsule, args, stream) checks and
 * launches: an argument the fast checks do not accept, whatever the
 * reason, makes it return None without launching: the Python checks then
 * run, and raise the error that names it. */

/* The address of torch tensor t if it is a contiguous tensor of dtype on
 * CUDA device dev, aligned to size; 0 otherwise (or a Python error set). */
static uint64_t k_tensor(PyObject *t, PyObject *dtype, long dev, long size)
{
    uint64_t ptr = 0;
    PyObject *dt = PyObject_GetAttr(t, s_dtype);
    if (dt != dtype) {
        Py_XDECREF(dt);
        return 0;
    }
    Py_DECREF(dt);
    PyObject *d = PyObject_CallMethodObjArgs(t, s_get_device, NULL);
    long di = d ? PyLong_AsLong(d) : -1;
    Py_XDECREF(d);
    if (di != dev)
        return 0;
    PyObject *c = PyObject_CallMethodObjArgs(t, s_is_contiguous, NULL);
    int contiguous = c == Py_True;
    Py_XDECREF(c);
    if (!contiguous)
        return 0;
    PyObject *p = PyObject_CallMethodObjArgs(t, s_data_ptr, NULL);
    if (p)
        ptr = PyLong_AsUnsignedLongLong(p);
    Py_XDECREF(p);
    if (PyErr_Occurred())
        return 0;
    return ptr % (uint64_t)size ? 0 : ptr;
}

/* Scalar v as kind k into *out; 0 when it is not an exact int or float in range. */
static int k_scalar(PyObject *v, char k, arg *out)
{
    out->u64 = 0;
    if (k == 'f' || k == 'd') {
        if (!PyFloat_CheckExact(v) && !PyLong_CheckExact(v))
            return 0;
        double x = PyFloat_AsDouble(v);
        if (PyErr_Occurred() || (k == 'f' && x == x && (x > 3.4028234663852886e38 || x < -3.4028234663852886e38) &&
                                 x - x == 0))
            return 0;
        if (k == 'f')
            out->f32 = (float)x;
        else
            out->f64 = x;
        return 1;
    }
    if (!PyLong_CheckExact(v))
        return 0;
    int over = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &over);
    if (over || PyErr_Occurred())
        return 0;
    switch (k) {
    case 'i': if (x < INT32_MIN || x > INT32_MAX) return 0; out->i32 = (int32_t)x; return 1;
    case 'I': if (x < 0 || x > (long long)UINT32_MAX) return 0; out->u32 = (uint32_t)x; return 1;
    case 'Q': if (x < 0) return 0; out->u64 = (uint64_t)x; return 1;
    case 'q': out->i64 = x; return 1;
    default: return 0;
    }
}

typedef struct kspec {
    void *prog;
    char *name;
    int variant;
    long dev;
    Py_ssize_t n;
    char kinds[64];
    char sizes[64];
    PyObject *dtypes[64]; /* strong; NULL for scalars */
    PyObject *ttype, *raw, *raw_args;
} kspec;

static const char K_CAPSULE[] = "tilec.kspec";

static void k_free(PyObject *cap)
{
    kspec *k = PyCapsule_GetPointer(cap, K_CAPSULE);
    if (!k)
        return;
    for (Py_ssize_t i = 0; i < k->n; i++)
        Py_XDECREF(k->dtypes[i]);
    Py_XDECREF(k->ttype);
    Py_XDECREF(k->raw);
    Py_XDECREF(k->raw_args);
    PyMem_Free(k->name);
    PyMem_Free(k);
}

/* kcompile(spec) -> capsule: see above */
static PyObject *n_kcompile(PyObject *self, PyObject *argv)
{
    (void)self;
    PyObject *prog, *dtypes, *ttype, *raw;
    const char *name, *kinds, *sizes;
    Py_ssize_t nk, ns, nn;
    int variant;
    long dev;
    if (!PyArg_ParseTuple(argv, "(Oy#iy#O!y#lOO)", &prog, &name, &nn, &variant, &kinds, &nk, &PyTuple_Type, &dtypes,
                          &sizes, &ns, &dev, &ttype, &raw))
        return NULL;
    if (nk > 64 || ns != nk || PyTuple_Size(dtypes) != nk || !PyType_Check(ttype) || !PyCallable_Check(raw))
        return PyErr_Format(PyExc_ValueError, "kcompile: %zd kinds (at most 64), %zd sizes, %zd dtypes, a type and a "
                                              "stream getter",
                            nk, ns, PyTuple_Size(dtypes));
    kspec *k = PyMem_Calloc(1, sizeof *k);
    char *nm = PyMem_Malloc((size_t)nn + 1);
    PyObject *cap = k && nm ? PyCapsule_New(k, K_CAPSULE, k_free) : NULL;
    if (!cap) {
        PyMem_Free(k);
        PyMem_Free(nm);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    memcpy(nm, name, (size_t)nn);
    nm[nn] = 0;
    k->name = nm; /* from here the capsule owns k: k_free undoes whatever was set */
    k->prog = PyLong_AsVoidPtr(prog);
    k->variant = variant;
    k->dev = dev;
    k->n = nk;
    memcpy(k->kinds, kinds, (size_t)nk);
    memcpy(k->sizes, sizes, (size_t)nk);
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *d = PyTuple_GetItem(dtypes, i);
        if (kinds[i] == 'p' && d != Py_None) {
            Py_INCREF(d);
            k->dtypes[i] = d;
        }
    }
    Py_INCREF(ttype);
    Py_INCREF(raw);
    k->ttype = ttype;
    k->raw = raw;
    k->raw_args = Py_BuildValue("(l)", dev);
    if (PyErr_Occurred() || !k->raw_args) {
        Py_DECREF(cap);
        return NULL;
    }
    return cap;
}

/* kcall(capsule, args, stream) -> the variant launched, (status, variant)
 * for a launch the runtime failed, or None: see above (METH_FASTCALL) */
static PyObject *n_kcall(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError, "kcall takes 3 arguments; got %zd", nargs);
    kspec *k = PyCapsule_GetPointer(argv[0], K_CAPSULE);
    if (!k)
        return NULL;
    PyObject *args = argv[1], *stream = argv[2];
    arg a[64];
    if (!PyTuple_Check(args) || PyTuple_Size(args) != k->n || !launch)
        Py_RETURN_NONE;
    int torch = 0;
    for (Py_ssize_t i = 0; i < k->n; i++) {
        PyObject *v = PyTuple_GetItem(args, i);
        if (k->kinds[i] == 'p') {
            if (!k->dtypes[i] || !PyType_IsSubtype(Py_TYPE(v), (PyTypeObject *)k->ttype) ||
                !(a[i].u64 = k_tensor(v, k->dtypes[i], k->dev, k->sizes[i]))) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            torch = 1;
        } else if (!k_scalar(v, k->kinds[i], &a[i])) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }
    void *s = NULL;
    if (stream != Py_None)
        s = PyLong_AsVoidPtr(stream);
    else if (torch) {
        PyObject *h = PyObject_Call(k->raw, k->raw_args, NULL);
        s = h ? PyLong_AsVoidPtr(h) : NULL;
        Py_XDECREF(h);
    }
    if (PyErr_Occurred())
        return NULL;
    int chosen = k->variant;
    int st = k->variant < 0 ? launch_best(k->prog, k->name, a, (uint32_t)k->n, s, &chosen)
                            : launch(k->prog, k->name, k->variant, a, (uint32_t)k->n, s);
    return st ? Py_BuildValue("(ii)", st, chosen) : PyLong_FromLong(chosen);
}

/* The address attribute or method `name` of item j of seq, plus off; 0
 * with a Python error set on failure. */
static uint64_t r_addr(PyObject *seq, Py_ssize_t j, PyObject *name, int call, long long off)
{
    PyObject *o = PySequence_GetItem(seq, j);
    if (!o)
        return 0;
    PyObject *p = call ? PyObject_CallMethodObjArgs(o, name, NULL) : PyObject_GetAttr(o, name);
    Py_DECREF(o);
    uint64_t v = p ? PyLong_AsUnsignedLongLong(p) : 0;
    Py_XDECREF(p);
    return v + (uint64_t)off;
}

/* recipe_run(plan, kinds, template, infos, outs, ws, stream) -> status: a
 * graph.Recipe's call. template holds three values per slot: (0, i, off)
 * input i's address (TensorInfo .ptr) + off, (1, j, off) output j's
 * (torch .data_ptr()) + off, (2, 0, off) the workspace's + off, (3, 0, v)
 * the constant v (read as kinds says). */
static PyObject *n_recipe_run(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *plan, *tmpl, *infos, *outs, *ws, *stream;
    const char *kinds;
    Py_ssize_t n;
    arg slots[MAX_VALUES];
    if (!PyArg_ParseTuple(args, "Oy#OOOOO", &plan, &kinds, &n, &tmpl, &infos, &outs, &ws, &stream))
        return NULL;
    if (n > MAX_VALUES || !plan_run || !PyTuple_Check(tmpl) || PyTuple_Size(tmpl) != 3 * n)
        return PyErr_Format(PyExc_ValueError, "recipe_run: %zd slots, or a template of another length", n);
    uint64_t wsp = PyLong_AsUnsignedLongLong(ws);
    for (Py_ssize_t i = 0; i < n && !PyErr_Occurred(); i++) {
        long src = PyLong_AsLong(PyTuple_GetItem(tmpl, 3 * i));
        PyObject *idx = PyTuple_GetItem(tmpl, 3 * i + 1), *v = PyTuple_GetItem(tmpl, 3 * i + 2);
        if (src == 3) {
            if (pack_value(v, kinds[i], &slots[i]))
                return NULL;
            continue;
        }
        long long off = PyLong_AsLongLong(v);
        Py_ssize_t j = PyLong_AsSsize_t(idx);
        if (src == 2)
            slots[i].u64 = wsp + (uint64_t)off;
        else if (src == 0)
            slots[i].u64 = r_addr(infos, j, s_ptr, 0, off);
        else
            slots[i].u64 = r_addr(outs, j, s_data_ptr, 1, off);
    }
    void *s = stream_of(stream), *p = PyLong_AsVoidPtr(plan);
    if (PyErr_Occurred())
        return NULL;
    return PyLong_FromLong(plan_run(p, slots, (uint32_t)n, s));
}

/* ---- a graph.Recipe run from the wrapper's first line (rcall) ----
 * rcall_init(tensor_type, names): torch.Tensor and the dict of torch
 * dtypes to tilec names that tensor_info fills. rcompile(fast): a Recipe's
 * run turned once into C data (a capsule, the Recipe's `fast`): the plan,
 * each slot as an input's or output's address plus an offset, the
 * workspace's, or a constant already packed, and the output allocations.
 * rcall(recipes, tensors, tail): the key tensor_info and the wrapper would
 * make for these torch tensors (each (name, shape, None, True, device,
 * True)) followed by the tail (the scalars), looked up in recipes; found,
 * its compiled recipe is run here (outputs, slots, plan) and the outputs
 * returned. None whenever anything differs from that path (another kind of
 * argument, a non-contiguous or host tensor, an unknown key, a workspace
 * too small): the wrapper's own code then runs, checks and all. */
static PyObject *r_ttype, *r_names;

static PyObject *n_rcall_init(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *t, *names;
    if (!PyArg_ParseTuple(args, "OO", &t, &names))
        return NULL;
    if (!PyType_Check(t))
        return PyErr_Format(PyExc_TypeError, "rcall_init: the tensor type must be a type");
    Py_XDECREF(r_ttype);
    Py_XDECREF(r_names);
    Py_INCREF(t);
    Py_INCREF(names);
    r_ttype = t;
    r_names = names;
    Py_RETURN_NONE;
}

/* What a key holds of tensor t, read in one pass (one read of each
 * attribute: dtype, is_cuda, is_contiguous(), shape, get_device(),
 * data_ptr()): its dtype's tilec name (borrowed from r_names), its shape
 * and device (new references) and its address. 0 (no Python error) when t
 * is not a contiguous CUDA tensor of a known dtype. */
static int r_read(PyObject *t, PyObject **name, PyObject **shape, PyObject **dev, uint64_t *ptr)
{
    PyObject *dt = PyObject_GetAttr(t, s_dtype);
    *name = dt ? PyDict_GetItemWithError(r_names, dt) : NULL;
    Py_XDECREF(dt);
    PyObject *cuda = *name && *name != Py_None ? PyObject_GetAttr(t, s_is_cuda) : NULL;
    int ok = cuda == Py_True;
    Py_XDECREF(cuda);
    PyObject *c = ok ? PyObject_CallMethodObjArgs(t, s_is_contiguous, NULL) : NULL;
    ok = c == Py_True;
    Py_XDECREF(c);
    *shape = ok ? PyObject_GetAttr(t, s_shape) : NULL;
    *dev = *shape ? PyObject_CallMethodObjArgs(t, s_get_device, NULL) : NULL;
    PyObject *p = *dev ? PyObject_CallMethodObjArgs(t, s_data_ptr, NULL) : NULL;
    *ptr = p ? PyLong_AsUnsignedLongLong(p) : 0;
    Py_XDECREF(p);
    if (p && !PyErr_Occurred())
        return 1;
    Py_CLEAR(*shape);
    Py_CLEAR(*dev);
    PyErr_Clear();
    return 0;
}

/* t's part of the key, or NULL (no Python error) when t does not fit the
 * path (r_read); its address into *ptr. */
static PyObject *r_key(PyObject *t, uint64_t *ptr)
{
    PyObject *name, *shape, *dev;
    if (!r_read(t, &name, &shape, &dev, ptr))
        return NULL;
    PyObject *key = PyTuple_Pack(6, name, shape, Py_None, Py_True, dev, Py_True);
    Py_DECREF(shape);
    Py_DECREF(dev);
    if (!key)
        PyErr_Clear();
    return key;
}

enum { R_INPUT, R_OUTPUT, R_WORKSPACE, R_CONST, R_MAX_TENSORS = 64 };

typedef struct rslot {
    int src;      /* R_INPUT ... R_CONST */
    uint32_t idx; /* the input's or output's index */
    arg v;        /* the offset (i64), or the packed constant */
} rslot;

/* A compiled Recipe (the capsule rcompile returns). */
typedef struct recipe {
    void *plan;
    uint32_t n, nout;
    int single;
    long long ws_bytes;
    PyObject *raw, *raw_args, *wss;   /* the stream getter, (index,), the graph's workspaces by stream */
    PyObject *opts;                   /* the graph's options: opts["static"] is True for static outputs */
    PyObject **alloc;                 /* 3 per output: callable, args, kwargs */
    PyObject *falloc, *getdev;        /* torch's lean allocator for the current device and its getter, or NULL;
                                         getdev NULL with falloc: one visible device, always the current one */
    PyObject *fargs;                  /* per output: the lean allocator's (size, stride, dtype) */
    long index;                       /* the graph's device: falloc serves when it is the current one */
    PyObject *held;                   /* static outputs: the tuple of outputs every call returns, or NULL */
    void *held_stream;                /* the stream they were allocated on */
    uint64_t held_ptr[R_MAX_TENSORS]; /* and their addresses */
    uint64_t in_bytes[R_MAX_TENSORS]; /* each input's extent from its address (fixed by the key) */
    uint64_t out_bytes[R_MAX_TENSORS]; /* each output's */
    uint32_t nin;
    int retired;                      /* taken out of its wrapper's recipes (rretire): no Entry runs it again */
    rslot slots[];
} recipe;

static const char R_CAPSULE[] = "tilec.recipe";

static void r_free(PyObject *cap)
{
    recipe *r = PyCapsule_GetPointer(cap, R_CAPSULE);
    if (!r)
        return;
    Py_XDECREF(r->raw);
    Py_XDECREF(r->raw_args);
    Py_XDECREF(r->wss);
    Py_XDECREF(r->opts);
    Py_XDECREF(r->held);
    Py_XDECREF(r->falloc);
    Py_XDECREF(r->getdev);
    Py_XDECREF(r->fargs);
    for (uint32_t i = 0; r->alloc && i < 3 * r->nout; i++)
        Py_XDECREF(r->alloc[i]);
    PyMem_Free(r->alloc);
    PyMem_Free(r);
}

/* The template's slots into r->slots: -1 with a Python error set. */
static int r_compile_slots(recipe *r, PyObject *tmpl, const char *kinds, Py_ssize_t ntens)
{
    for (uint32_t i = 0; i < r->n; i++) {
        rslot *sl = &r->slots[i];
        sl->src = (int)PyLong_AsLong(PyTuple_GetItem(tmpl, 3 * i));
        Py_ssize_t j = PyLong_AsSsize_t(PyTuple_GetItem(tmpl, 3 * i + 1));
        PyObject *v = PyTuple_GetItem(tmpl, 3 * i + 2);
        if (PyErr_Occurred())
            return -1;
        if (sl->src < R_INPUT || sl->src > R_CONST || j < 0 ||
            (sl->src == R_INPUT && j >= ntens) || (sl->src == R_OUTPUT && j >= (Py_ssize_t)r->nout)) {
            PyErr_Format(PyExc_ValueError, "rcompile: slot %u names no input, output or constant", i);
            return -1;
        }
        sl->idx = (uint32_t)j;
        if (sl->src == R_CONST ? pack_value(v, kinds[i], &sl->v) : (sl->v.i64 = PyLong_AsLongLong(v), 0))
            return -1;
        if (PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* rcompile(fast) -> capsule; fast: (plan, kinds, template, outs, ws_bytes,
 * workspaces, raw, index, ntensors, single, opts, falloc, getdev, fargs,
 * extents), extents the byte extent of each input (ntensors) then of each
 * output (see r_unalias),
 * outs a tuple of (callable, args, kwargs) that allocate each output, opts
 * the graph's options dict (opts["static"] True: static outputs, see
 * r_outputs); falloc (or None) an allocator called as falloc(*fargs[j])
 * that allocates output j on the current CUDA device, which getdev() reads
 * (None: the process sees one CUDA device, so the graph's is the current one):
 * used instead of outs[j] while that is the graph's device `index`. */
static PyObject *n_rcompile(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *plan, *tmpl, *outs, *wss, *raw, *index, *opts, *falloc, *getdev, *fargs, *ext;
    const char *kinds;
    Py_ssize_t n, ntens;
    long long ws_bytes;
    int single;
    if (!PyArg_ParseTuple(args, "(Oy#O!O!LO!OOnpO!OOOO!)", &plan, &kinds, &n, &PyTuple_Type, &tmpl, &PyTuple_Type,
                          &outs, &ws_bytes, &PyDict_Type, &wss, &raw, &index, &ntens, &single, &PyDict_Type, &opts,
                          &falloc, &getdev, &fargs, &PyTuple_Type, &ext))
        return NULL;
    Py_ssize_t nout = PyTuple_Size(outs);
    if (falloc != Py_None && (!PyCallable_Check(falloc) || (getdev != Py_None && !PyCallable_Check(getdev)) ||
                              !PyTuple_Check(fargs) ||
                              PyTuple_Size(fargs) != nout))
        return PyErr_Format(PyExc_ValueError, "rcompile: the lean allocator needs a getter and one argument tuple "
                                              "per output");
    if (n > MAX_VALUES || nout < 1 || nout > R_MAX_TENSORS || ntens < 0 || ntens > R_MAX_TENSORS ||
        PyTuple_Size(tmpl) != 3 * n || PyTuple_Size(ext) != ntens + nout)
        return PyErr_Format(PyExc_ValueError, "rcompile: %zd slots, %zd outputs, %zd inputs, %zd extents", n, nout,
                            ntens, PyTuple_Size(ext));
    recipe *r = PyMem_Calloc(1, sizeof *r + (size_t)n * sizeof(rslot));
    PyObject **alloc = PyMem_Calloc(3 * (size_t)nout, sizeof *alloc);
    PyObject *cap = r && alloc ? PyCapsule_New(r, R_CAPSULE, r_free) : NULL;
    if (!cap) {
        PyMem_Free(r);
        PyMem_Free(alloc);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    r->alloc = alloc; /* from here the capsule owns r: r_free undoes whatever was set */
    r->n = (uint32_t)n;
    r->nout = (uint32_t)nout;
    r->single = single;
    r->ws_bytes = ws_bytes;
    r->plan = PyLong_AsVoidPtr(plan);
    r->raw_args = PyTuple_Pack(1, index);
    Py_INCREF(raw);
    Py_INCREF(wss);
    Py_INCREF(opts);
    r->raw = raw;
    r->wss = wss;
    r->opts = opts;
    r->index = PyLong_AsLong(index);
    r->nin = (uint32_t)ntens;
    for (Py_ssize_t j = 0; j < ntens + nout && !PyErr_Occurred(); j++) {
        uint64_t b = PyLong_AsUnsignedLongLong(PyTuple_GetItem(ext, j));
        if (j < ntens)
            r->in_bytes[j] = b;
        else
            r->out_bytes[j - ntens] = b;
    }
    if (falloc != Py_None) {
        Py_INCREF(falloc);
        Py_INCREF(fargs);
        r->falloc = falloc;
        r->fargs = fargs;
        if (getdev != Py_None) {
            Py_INCREF(getdev);
            r->getdev = getdev;
        }
    }
    for (Py_ssize_t j = 0; j < nout && !PyErr_Occurred(); j++) {
        PyObject *o = PyTuple_GetItem(outs, j), *f, *a, *kw;
        if (!PyArg_ParseTuple(o, "OO!O!", &f, &PyTuple_Type, &a, &PyDict_Type, &kw))
            break;
        Py_INCREF(f);
        Py_INCREF(a);
        Py_INCREF(kw);
        alloc[3 * j] = f;
        alloc[3 * j + 1] = a;
        alloc[3 * j + 2] = kw;
    }
    if (PyErr_Occurred() || !r->raw_args || r_compile_slots(r, tmpl, kinds, ntens)) {
        Py_DECREF(cap);
        return NULL;
    }
    return cap;
}

/* The outputs of one run on stream s (a new tuple, NULL on error), their
 * addresses into ptr. Fresh ones from torch's allocator (torch's lean
 * allocator where it has one and the graph's device is the current one,
 * else the outputs' callables: torch.empty_strided) unless the graph has static outputs on: then the recipe keeps
 * the tuple it allocated first on this stream and every call returns it
 * again, so the next call overwrites what the last one returned (the
 * contract torch.compile's "reduce-overhead" and torch.cuda.graph have;
 * opt-in, Graph.capture(static_outputs=True)). A held output whose
 * address moved (resize_, set_) is given up for fresh ones. */
static PyObject *r_outputs(recipe *r, void *s, uint64_t *ptr)
{
    PyObject *st = PyDict_GetItemWithError(r->opts, s_static); /* borrowed */
    int keep = st == Py_True;
    if (!st && PyErr_Occurred())
        return NULL;
    if (r->held && keep && r->held_stream == s) {
        int same = 1;
        for (uint32_t j = 0; same && j < r->nout; j++) {
            PyObject *p = PyObject_CallMethodObjArgs(PyTuple_GetItem(r->held, j), s_data_ptr, NULL);
            ptr[j] = p ? PyLong_AsUnsignedLongLong(p) : 0;
            Py_XDECREF(p);
            if (PyErr_Occurred())
                return NULL;
            same = ptr[j] == r->held_ptr[j];
        }
        if (same) {
            Py_INCREF(r->held);
            return r->held;
        }
    }
    Py_CLEAR(r->held); /* off, another stream, or moved: given back to torch (stream order keeps that safe) */
    PROF_AT(P_STATIC);
    int lean = 0;
    if (r->falloc && !r->getdev) { /* one device: the current one */
        lean = 1;
    } else if (r->falloc) { /* torch's lean allocator serves the current device only */
        PyObject *d = PyObject_CallNoArgs(r->getdev);
        lean = d && PyLong_Check(d) && PyLong_AsLong(d) == r->index;
        Py_XDECREF(d);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            lean = 0;
        }
    }
    PROF_AT(P_GETDEV);
    PyObject *res = PyTuple_New(r->nout);
    for (uint32_t j = 0; res && j < r->nout; j++) {
        PyObject *t = lean ? PyObject_Call(r->falloc, PyTuple_GetItem(r->fargs, j), NULL)
                           : PyObject_Call(r->alloc[3 * j], r->alloc[3 * j + 1], r->alloc[3 * j + 2]);
        PROF_AT(P_ALLOC);
        PyObject *p = t ? PyObject_CallMethodObjArgs(t, s_data_ptr, NULL) : NULL;
        PROF_AT(P_DPTR);
        ptr[j] = p ? PyLong_AsUnsignedLongLong(p) : 0;
        Py_XDECREF(p);
        if (!t || !p || PyErr_Occurred()) {
            Py_XDECREF(t);
            Py_CLEAR(res);
            break;
        }
        PyTuple_SetItem(res, j, t);
    }
    if (res && keep) {
        Py_INCREF(res);
        r->held = res;
        r->held_stream = s;
        memcpy(r->held_ptr, ptr, r->nout * sizeof *ptr);
    }
    return res;
}

/* Inputs that share a byte with an output of this run: the run writes its
 * outputs, so such an input (with static outputs: the last call's output
 * fed back, g2(z1, y1), or a view into one at any offset) would be read
 * after a step overwrote it. Each is copied to a private buffer first, as
 * torch's CUDA-graph replays copy inputs into buffers of their own: its
 * clone(), on torch's current stream, the stream the run uses, so stream
 * order puts the copy before the plan. copies[i] holds the clone (NULL for
 * an input left alone) and in[i] its address; the graph's
 * opts["static_input_copies"] counts them (Graph.stats()). Fresh outputs
 * never overlap a live input, so only held ones can trigger it. 0, or -1
 * with a Python error set. */
static int r_unalias(recipe *r, PyObject *const *t, uint64_t *in, Py_ssize_t nin, const uint64_t *out,
                     PyObject **copies)
{
    long long n = 0;
    for (Py_ssize_t i = 0; i < nin && i < (Py_ssize_t)r->nin; i++) {
        copies[i] = NULL;
        int alias = 0;
        for (uint32_t j = 0; !alias && j < r->nout; j++)
            alias = r->in_bytes[i] && r->out_bytes[j] && in[i] < out[j] + r->out_bytes[j] &&
                    out[j] < in[i] + r->in_bytes[i];
        if (!alias)
            continue;
        PyObject *c = PyObject_CallMethodObjArgs(t[i], s_clone, NULL);
        PyObject *p = c ? PyObject_CallMethodObjArgs(c, s_data_ptr, NULL) : NULL;
        uint64_t a = p ? PyLong_AsUnsignedLongLong(p) : 0;
        Py_XDECREF(p);
        if (!p || PyErr_Occurred()) {
            Py_XDECREF(c);
            return -1;
        }
        copies[i] = c;
        in[i] = a;
        n++;
    }
    if (!n)
        return 0;
    PyObject *old = PyDict_GetItemWithError(r->opts, s_copies); /* borrowed */
    long long before = old ? PyLong_AsLongLong(old) : 0;
    PyObject *v = PyErr_Occurred() ? NULL : PyLong_FromLongLong(before + n);
    int st = v ? PyDict_SetItem(r->opts, s_copies, v) : -1;
    Py_XDECREF(v);
    return st;
}

/* Release r_unalias's copies. */
static void r_drop(PyObject **copies, Py_ssize_t nin)
{
    for (Py_ssize_t i = 0; i < nin && i < R_MAX_TENSORS; i++)
        Py_CLEAR(copies[i]);
}

/* Run compiled recipe r for tensors t[0..nin) at addresses in[0..nin): the
 * outputs (one, or a tuple), None when the stream's workspace is too small,
 * NULL on error. rec is the Recipe (its graph's _fail() raises a failed
 * run's error). An input overlapping an output is copied first (r_unalias):
 * in[i] then becomes its copy's address. */
static PyObject *r_run(recipe *r, PyObject *rec, PyObject *const *t, uint64_t *in, Py_ssize_t nin)
{
    PyObject *h = PyObject_Call(r->raw, r->raw_args, NULL);
    if (!h)
        return NULL;
    void *s = PyLong_AsVoidPtr(h);
    uint64_t wsp = 0;
    if (r->ws_bytes) { /* the stream's workspace: the Python path makes one when there is none this big */
        PyObject *w = PyDict_GetItemWithError(r->wss, s ? h : Py_None);
        if (!w || !PyTuple_Check(w) || PyTuple_Size(w) < 2 || PyLong_AsLongLong(PyTuple_GetItem(w, 1)) < r->ws_bytes) {
            Py_DECREF(h);
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        wsp = PyLong_AsUnsignedLongLong(PyTuple_GetItem(w, 0));
    }
    Py_DECREF(h);
    PROF_AT(P_STREAM);
    uint64_t out[R_MAX_TENSORS];
    PyObject *res = PyErr_Occurred() ? NULL : r_outputs(r, s, out);
    if (!res)
        return NULL;
    PyObject *copies[R_MAX_TENSORS] = {NULL};
    if (r_unalias(r, t, in, nin, out, copies)) {
        r_drop(copies, nin);
        Py_DECREF(res);
        return NULL;
    }
    arg slots[MAX_VALUES];
    for (uint32_t i = 0; i < r->n; i++) {
        const rslot *sl = &r->slots[i];
        if (sl->src == R_CONST) {
            slots[i] = sl->v;
        } else if (sl->src == R_WORKSPACE) {
            slots[i].u64 = wsp + (uint64_t)sl->v.i64;
        } else if (sl->src == R_OUTPUT) {
            slots[i].u64 = out[sl->idx] + (uint64_t)sl->v.i64;
        } else if (sl->idx < nin) {
            slots[i].u64 = in[sl->idx] + (uint64_t)sl->v.i64;
        } else {
            r_drop(copies, nin);
            Py_DECREF(res);
            return PyErr_Format(PyExc_ValueError, "rcall: input %u missing", sl->idx);
        }
    }
    PROF_AT(P_SLOTS);
    int failed = plan_run(r->plan, slots, r->n, s) != 0;
    PROF_AT(P_PLAN);
    r_drop(copies, nin); /* enqueued: torch's stream order keeps their memory until the run used it */
    if (failed) {
        PyObject *g = PyObject_GetAttr(rec, s_graph);
        PyObject *f = g ? PyObject_CallMethodObjArgs(g, s_fail, NULL) : NULL;
        Py_XDECREF(g);
        Py_XDECREF(f);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "rcall: the plan run failed");
        Py_DECREF(res);
        return NULL;
    }
    if (!r->single)
        return res;
    PyObject *one = PyTuple_GetItem(res, 0);
    Py_INCREF(one);
    Py_DECREF(res);
    return one;
}

/* rrelease(capsule): a compiled recipe gives its static outputs back (Graph.trim(), eager()). */
static PyObject *n_rrelease(PyObject *self, PyObject *cap)
{
    (void)self;
    recipe *r = PyCapsule_GetPointer(cap, R_CAPSULE);
    if (!r)
        return NULL;
    Py_CLEAR(r->held);
    Py_RETURN_NONE;
}

/* rretire(capsule): a recipe taken out of its wrapper's recipes (Graph.close(), a full dict):
 * no Entry's memo runs it again; its static outputs go back (rrelease). */
static PyObject *n_rretire(PyObject *self, PyObject *cap)
{
    recipe *r = PyCapsule_GetPointer(cap, R_CAPSULE);
    if (!r)
        return NULL;
    r->retired = 1;
    return n_rrelease(self, cap);
}

/* The key of rcall's tensors t[0..nt) and tail, the tensors' addresses
 * into ptr; NULL (no Python error) when one tensor does not fit the path. */
static PyObject *r_make_key(PyObject *const *t, Py_ssize_t nt, PyObject *tail, uint64_t *ptr)
{
    Py_ssize_t ns = PyTuple_Size(tail);
    PyObject *key = nt <= R_MAX_TENSORS ? PyTuple_New(nt + ns) : NULL;
    for (Py_ssize_t i = 0; key && i < nt + ns; i++) {
        PyObject *v = i < nt ? t[i] : PyTuple_GetItem(tail, i - nt);
        PyObject *k = NULL;
        if (i >= nt) {
            Py_INCREF(v);
            k = v;
        } else if (PyType_IsSubtype(Py_TYPE(v), (PyTypeObject *)r_ttype)) {
            k = r_key(v, &ptr[i]);
        }
        if (!k)
            Py_CLEAR(key);
        else
            PyTuple_SetItem(key, i, k);
    }
    PyErr_Clear();
    return key;
}

/* The outputs of the recipe recipes holds for tensors t[0..nt) and tail,
 * or None (see rcall); NULL on error. found (or NULL): when a recipe ran,
 * its key and the Recipe, new references. */
static PyObject *r_call(PyObject *recipes, PyObject *const *t, Py_ssize_t nt, PyObject *tail, PyObject *found[2])
{
    uint64_t in[R_MAX_TENSORS];
    PROF_START();
    PyObject *key = r_make_key(t, nt, tail, in);
    PROF_AT(P_KEY);
    if (!key)
        Py_RETURN_NONE;
    PyObject *rec = PyDict_GetItemWithError(recipes, key); /* borrowed */
    PyObject *fast = rec && rec != Py_None ? PyObject_GetAttr(rec, s_fast) : NULL;
    recipe *r = fast ? PyCapsule_GetPointer(fast, R_CAPSULE) : NULL;
    if (!r) {
        Py_DECREF(key);
        Py_XDECREF(fast);
        PyErr_Clear(); /* an unhashable scalar: the wrapper's checks say what is wrong */
        Py_RETURN_NONE;
    }
    Py_INCREF(rec); /* the run may call back into Python, which may drop the dict's entry */
    PROF_AT(P_LOOKUP);
    PyObject *out = r_run(r, rec, t, in, nt);
    if (found && out && out != Py_None) {
        Py_INCREF(rec);
        found[0] = key;
        found[1] = rec;
    } else {
        Py_DECREF(key);
    }
    Py_DECREF(rec);
    Py_DECREF(fast);
    PROF_AT(P_END);
    return out;
}

/* rcall(recipes, tensors, tail) -> the outputs, or None: see above (METH_FASTCALL) */
static PyObject *n_rcall(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError, "rcall takes 3 arguments; got %zd", nargs);
    PyObject *recipes = argv[0], *tensors = argv[1], *tail = argv[2];
    if (!r_ttype || !PyDict_Check(recipes) || !PyTuple_Check(tensors) || !PyTuple_Check(tail))
        Py_RETURN_NONE;
    Py_ssize_t nt = PyTuple_Size(tensors);
    PyObject *t[R_MAX_TENSORS];
    if (nt > R_MAX_TENSORS)
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < nt; i++)
        t[i] = PyTuple_GetItem(tensors, i);
    return r_call(recipes, t, nt, tail, NULL);
}

/* ---- a wrapper's call() as one C call (Entry) ----
 * Entry(fallback, recipes, kinds): what a generated wrapper's load() puts
 * in front of its call() (tilec.fast_entry). Called with positional
 * arguments only, as many as kinds has letters ('t' a tensor, 'i' an
 * integer scalar, 'f' a float one), it makes the key the wrapper's first
 * line makes (the tensors, then each scalar with its type, and a float's
 * str() as well) and runs the known key's recipe, with no Python frame;
 * anything else (a keyword such as stream=, another count, an unknown
 * key, a tensor the recipes do not take) calls fallback, the wrapper's
 * call(), with the same arguments. Its __dict__ carries __doc__,
 * __wrapped__ and the rest (functools.update_wrapper), so help() and
 * inspect.signature() show call()'s. */
typedef struct entry {
    PyObject_HEAD
    PyObject *fallback, *recipes, *dict;
    Py_ssize_t n, nt;
    char kinds[R_MAX_TENSORS + 1];
    /* the memo: the key of the last call that ran a recipe, and that
     * Recipe (strong references, NULL when empty); a call whose tensors and
     * tail match the key runs the recipe without making a key or looking it
     * up, until the recipe is retired */
    PyObject *m_key, *m_rec;
} entry;

static PyObject *e_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    PyObject *fallback, *recipes;
    const char *kinds;
    Py_ssize_t n;
    if (kw && PyDict_Size(kw))
        return PyErr_Format(PyExc_TypeError, "Entry takes no keyword arguments");
    if (!PyArg_ParseTuple(args, "OO!s#", &fallback, &PyDict_Type, &recipes, &kinds, &n))
        return NULL;
    if (!PyCallable_Check(fallback) || n > R_MAX_TENSORS)
        return PyErr_Format(PyExc_ValueError, "Entry(fallback, recipes, kinds): a callable, a dict and at most %d "
                                              "kinds",
                            R_MAX_TENSORS);
    Py_ssize_t nt = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (kinds[i] != 't' && kinds[i] != 'i' && kinds[i] != 'f')
            return PyErr_Format(PyExc_ValueError, "Entry: kind %c is none of t, i, f", kinds[i]);
        nt += kinds[i] == 't';
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    entry *e = (entry *)alloc(type, 0);
    if (!e)
        return NULL;
    Py_INCREF(fallback);
    Py_INCREF(recipes);
    e->fallback = fallback;
    e->recipes = recipes;
    e->n = n;
    e->nt = nt;
    memcpy(e->kinds, kinds, (size_t)n);
    e->kinds[n] = 0;
    return (PyObject *)e;
}

static int e_traverse(PyObject *self, visitproc visit, void *data)
{
    entry *e = (entry *)self;
    /* a heap type's instances hold the type as well */
    PyObject *held[] = {e->fallback, e->recipes, e->dict, (PyObject *)Py_TYPE(self), e->m_key, e->m_rec};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) {
        int r = held[i] ? visit(held[i], data) : 0;
        if (r)
            return r;
    }
    return 0;
}

static int e_clear(PyObject *self)
{
    entry *e = (entry *)self;
    Py_CLEAR(e->fallback);
    Py_CLEAR(e->recipes);
    Py_CLEAR(e->dict);
    Py_CLEAR(e->m_key);
    Py_CLEAR(e->m_rec);
    return 0;
}

static void e_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    e_clear(self);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp);
}

/* The tail of the key: each scalar, its type, and a float's str(); NULL on error. */
static PyObject *e_tail(const entry *e, PyObject *args)
{
    Py_ssize_t ns = 0;
    for (Py_ssize_t i = 0; i < e->n; i++)
        ns += e->kinds[i] == 'i' ? 2 : e->kinds[i] == 'f' ? 3 : 0;
    PyObject *tail = PyTuple_New(ns);
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; tail && i < e->n; i++) {
        if (e->kinds[i] == 't')
            continue;
        PyObject *v = PyTuple_GetItem(args, i);
        PyObject *ty = (PyObject *)Py_TYPE(v);
        Py_INCREF(v);
        Py_INCREF(ty);
        PyTuple_SetItem(tail, j++, v);
        PyTuple_SetItem(tail, j++, ty);
        if (e->kinds[i] == 'f') {
            PyObject *str = PyObject_Str(v);
            if (!str) {
                Py_CLEAR(tail);
                break;
            }
            PyTuple_SetItem(tail, j++, str);
        }
    }
    return tail;
}

/* The memo's recipe run for tensors t and tail: the outputs, None (the
 * memo does not match, or the run declined), NULL on error. A tensor
 * matches its part of the key when r_read gives the same dtype name, shape
 * and device; the tail matches the key's last items. */
static PyObject *e_memo_run(entry *e, PyObject *const *t, PyObject *tail)
{
    PROF_START();
    PyObject *fast = PyObject_GetAttr(e->m_rec, s_fast);
    recipe *r = fast ? PyCapsule_GetPointer(fast, R_CAPSULE) : NULL;
    Py_ssize_t ns = PyTuple_Size(tail);
    int ok = r && !r->retired && PyTuple_Size(e->m_key) == e->nt + ns;
    for (Py_ssize_t j = 0; ok && j < ns; j++)
        ok = PyObject_RichCompareBool(PyTuple_GetItem(tail, j), PyTuple_GetItem(e->m_key, e->nt + j), Py_EQ) == 1;
    uint64_t in[R_MAX_TENSORS];
    for (Py_ssize_t i = 0; ok && i < e->nt; i++) {
        PyObject *k = PyTuple_GetItem(e->m_key, i), *name, *shape, *dev;
        ok = PyType_IsSubtype(Py_TYPE(t[i]), (PyTypeObject *)r_ttype) && r_read(t[i], &name, &shape, &dev, &in[i]);
        if (!ok)
            break;
        ok = name == PyTuple_GetItem(k, 0) && PyObject_RichCompareBool(shape, PyTuple_GetItem(k, 1), Py_EQ) == 1 &&
             PyObject_RichCompareBool(dev, PyTuple_GetItem(k, 4), Py_EQ) == 1;
        Py_DECREF(shape);
        Py_DECREF(dev);
    }
    PyObject *out = NULL;
    PROF_AT(P_KEY); /* the key's reads, compared with the memo's: no lookup */
    if (ok) {
        PyObject *rec = e->m_rec;
        Py_INCREF(rec); /* the run may call back into Python, which may call this entry again */
        out = r_run(r, rec, t, in, e->nt);
        Py_DECREF(rec);
        PROF_AT(P_END);
    } else {
        PyErr_Clear();
        out = Py_NewRef(Py_None);
    }
    Py_XDECREF(fast);
    return out;
}

static PyObject *e_call(PyObject *self, PyObject *args, PyObject *kw)
{
    entry *e = (entry *)self;
    if (r_ttype && (!kw || !PyDict_Size(kw)) && PyTuple_Size(args) == e->n) {
        PyObject *t[R_MAX_TENSORS];
        Py_ssize_t nt = 0;
        for (Py_ssize_t i = 0; i < e->n; i++)
            if (e->kinds[i] == 't')
                t[nt++] = PyTuple_GetItem(args, i);
        PyObject *tail = e_tail(e, args);
        if (tail) {
            PyObject *out = e->m_rec ? e_memo_run(e, t, tail) : Py_NewRef(Py_None);
            if (out == Py_None) { /* not the memo's key: make it and look it up */
                Py_DECREF(out);
                PyObject *found[2] = {NULL, NULL}; /* the key and the Recipe: the memo's now */
                out = r_call(e->recipes, t, nt, tail, found);
                if (found[0]) { /* set before the old ones go: their release may run Python */
                    PyObject *old[2] = {e->m_key, e->m_rec};
                    e->m_key = found[0];
                    e->m_rec = found[1];
                    Py_XDECREF(old[0]);
                    Py_XDECREF(old[1]);
                }
            }
            Py_DECREF(tail);
            if (out != Py_None)
                return out; /* the outputs, or NULL with the run's error */
            Py_DECREF(out);
        } else {
            PyErr_Clear(); /* a scalar whose str() fails: the wrapper's checks say what is wrong */
        }
    }
    return PyObject_Call(e->fallback, args, kw);
}

/* Returns self: an Entry is a routine to inspect and pydoc (help() documents it as call()). */
static PyObject *e_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)obj;
    (void)type;
    Py_INCREF(self);
    return self;
}

static PyMemberDef e_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(entry, dict), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef e_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot e_slots[] = {
    {Py_tp_getset, e_getset},
    {Py_tp_new, (void *)e_new},
    {Py_tp_call, (void *)e_call},
    {Py_tp_dealloc, (void *)e_dealloc},
    {Py_tp_traverse, (void *)e_traverse},
    {Py_tp_clear, (void *)e_clear},
    {Py_tp_descr_get, (void *)e_get},
    {Py_tp_members, e_members},
    {Py_tp_doc, (void *)"a generated wrapper's call() in C (tilec.fast_entry)"},
    {0, NULL},
};

static PyType_Spec e_spec = {"tilec_native.Entry", sizeof(entry), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
                             e_slots};

#if defined(TILEC_NATIVE_PROF) && defined(__x86_64__)
/* prof() -> (calls, (cycles per phase ...), names, tsc): what rcall counted since the last prof(),
 * cleared, and the TSC now (two prof() calls around a timed sleep give its rate). */
static PyObject *n_prof(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    static const char *names[P_N] = {"key", "lookup", "stream", "static", "getdev",
                                     "alloc", "data_ptr", "slots", "plan_run", "return"};
    PyObject *t = PyTuple_New(P_N), *n = PyTuple_New(P_N);
    for (int i = 0; t && n && i < P_N; i++) {
        PyTuple_SetItem(t, i, PyLong_FromUnsignedLongLong(prof_t[i]));
        PyTuple_SetItem(n, i, PyUnicode_FromString(names[i]));
    }
    PyObject *res = t && n ? Py_BuildValue("(KOOK)", (unsigned long long)prof_calls, t, n,
                                           (unsigned long long)__rdtsc())
                           : NULL;
    Py_XDECREF(t);
    Py_XDECREF(n);
    memset(prof_t, 0, sizeof prof_t);
    prof_calls = 0;
    return res;
}
#endif

static PyMethodDef methods[] = {
#if defined(TILEC_NATIVE_PROF) && defined(__x86_64__)
    {"prof", n_prof, METH_NOARGS, "prof() -> (calls, cycles per phase, phase names, tsc); cleared"},
#endif
    {"rcall_init", n_rcall_init, METH_VARARGS, "rcall_init(tensor_type, names): what rcall compares against"},
    {"rcall", (PyCFunction)(void (*)(void))n_rcall, METH_FASTCALL,
     "rcall(recipes, tensors, tail) -> the outputs, or None for the wrapper's path"},
    {"rcompile", n_rcompile, METH_VARARGS, "rcompile(fast) -> a Recipe's run as C data (a capsule) for rcall"},
    {"rrelease", n_rrelease, METH_O, "rrelease(capsule): a compiled recipe gives its static outputs back"},
    {"rretire", n_rretire, METH_O, "rretire(capsule): a recipe out of its wrapper's recipes: no Entry runs it"},
    {"recipe_run", n_recipe_run, METH_VARARGS, "recipe_run(plan, kinds, template, infos, outs, ws, stream) -> status"},
    {"kcompile", n_kcompile, METH_VARARGS, "kcompile(spec) -> a Kernel's launch checks as C data (a capsule)"},
    {"kcall", (PyCFunction)(void (*)(void))n_kcall, METH_FASTCALL,
     "kcall(capsule, args, stream) -> the variant launched, (status, variant) for a failed launch, or None for the "
     "Python checks"},
    {"init", n_init, METH_VARARGS, "init(plan_run, launch, launch_best): the runtime's entry points"},
    {"plan_run", n_plan_run, METH_VARARGS, "plan_run(plan, kinds, values, stream) -> status"},
    {"launch", n_launch, METH_VARARGS, "launch(prog, name, variant, kinds, values, stream) -> (status, chosen)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tilec_native", "tilec's optional fast path", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_tilec_native(void);
PyMODINIT_FUNC PyInit_tilec_native(void)
{
    static const struct {
        PyObject **at;
        const char *name;
    } names[] = {{&s_dtype, "dtype"},       {&s_is_cuda, "is_cuda"}, {&s_is_contiguous, "is_contiguous"},
                 {&s_shape, "shape"},       {&s_get_device, "get_device"}, {&s_data_ptr, "data_ptr"},
                 {&s_ptr, "ptr"},           {&s_fast, "fast"},       {&s_graph, "graph"},
                 {&s_fail, "_fail"},        {&s_static, "static"},   {&s_clone, "clone"},
                 {&s_copies, "static_input_copies"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!*names[i].at && !(*names[i].at = PyUnicode_InternFromString(names[i].name)))
            return NULL;
    PyObject *m = PyModule_Create(&module);
    PyObject *et = m ? PyType_FromSpec(&e_spec) : NULL;
    if (!et || PyModule_AddObject(m, "Entry", et)) {
        Py_XDECREF(et);
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
