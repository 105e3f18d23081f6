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
#include <string.h>

typedef union arg {
    uint64_t ptr;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    uint32_t u32;
    uint64_t u64;
} arg;

typedef int (*plan_run_fn)(void *plan, const arg *slots, uint32_t n, void *stream);
typedef int (*launch_fn)(void *prog, const char *name, int variant, const arg *args, uint32_t n, void *stream);
typedef int (*launch_best_fn)(void *prog, const char *name, const arg *args, uint32_t n, void *stream, int *chosen);

static plan_run_fn plan_run;
static launch_fn launch;
static launch_best_fn launch_best;

enum { MAX_VALUES = 1024 };

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

/* ---- a Kernel call's checks in C (kcall) ----
 * spec: (prog, name, variant, kinds, dtypes, sizes, device, tensor_type,
 * raw_stream): kinds as for pack(); dtypes the torch dtype each pointer
 * parameter wants (None for scalars), sizes its element size in bytes;
 * tensor_type torch.Tensor and raw_stream torch's current-stream getter
 * (torch._C._cuda_getCurrentRawStream). An argument the fast checks do not
 * accept, whatever the reason, makes kcall return None without launching:
 * the Python checks then run, and raise the error that names it. */

/* The address of torch tensor t if it is a contiguous tensor of dtype on
 * CUDA device dev, aligned to size; 0 otherwise (or a Python error set). */
static uint64_t k_tensor(PyObject *t, PyObject *dtype, long dev, long size)
{
    uint64_t ptr = 0;
    PyObject *dt = PyObject_GetAttrString(t, "dtype");
    if (dt != dtype) {
        Py_XDECREF(dt);
        return 0;
    }
    Py_DECREF(dt);
    PyObject *d = PyObject_CallMethod(t, "get_device", NULL);
    long di = d ? PyLong_AsLong(d) : -1;
    Py_XDECREF(d);
    if (di != dev)
        return 0;
    PyObject *c = PyObject_CallMethod(t, "is_contiguous", NULL);
    int contiguous = c == Py_True;
    Py_XDECREF(c);
    if (!contiguous)
        return 0;
    PyObject *p = PyObject_CallMethod(t, "data_ptr", NULL);
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

/* kcall(spec, args, stream) -> (status, chosen), or None: see above */
static PyObject *n_kcall(PyObject *self, PyObject *argv)
{
    (void)self;
    PyObject *prog, *dtypes, *ttype, *raw, *args, *stream;
    const char *name, *kinds, *sizes;
    Py_ssize_t nk, ns;
    int variant;
    long dev;
    arg a[64];
    if (!PyArg_ParseTuple(argv, "(Oyiy#Oy#lOO)OO", &prog, &name, &variant, &kinds, &nk, &dtypes, &sizes, &ns, &dev,
                          &ttype, &raw, &args, &stream))
        return NULL;
    if (!PyTuple_Check(args) || PyTuple_Size(args) != nk || nk > 64 || ns != nk || !launch)
        Py_RETURN_NONE;
    int torch = 0;
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *v = PyTuple_GetItem(args, i);
        if (kinds[i] == 'p') {
            if (ttype == Py_None || PyObject_IsInstance(v, ttype) != 1 ||
                !(a[i].u64 = k_tensor(v, PyTuple_GetItem(dtypes, i), dev, sizes[i]))) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            torch = 1;
        } else if (!k_scalar(v, kinds[i], &a[i])) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }
    void *s = NULL;
    if (stream != Py_None)
        s = PyLong_AsVoidPtr(stream);
    else if (torch && raw != Py_None) {
        PyObject *h = PyObject_CallFunction(raw, "l", dev);
        s = h ? PyLong_AsVoidPtr(h) : NULL;
        Py_XDECREF(h);
    }
    void *p = PyLong_AsVoidPtr(prog);
    if (PyErr_Occurred())
        return NULL;
    int chosen = -1;
    int st = variant < 0 ? launch_best(p, name, a, (uint32_t)nk, s, &chosen) : launch(p, name, variant, a, (uint32_t)nk, s);
    return Py_BuildValue("(ii)", st, variant < 0 ? chosen : variant);
}

/* The address attribute or method `name` of item j of seq, plus off; 0
 * with a Python error set on failure. */
static uint64_t r_addr(PyObject *seq, Py_ssize_t j, const char *name, int call, long long off)
{
    PyObject *o = PySequence_GetItem(seq, j);
    if (!o)
        return 0;
    PyObject *p = call ? PyObject_CallMethod(o, name, NULL) : PyObject_GetAttrString(o, name);
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
            slots[i].u64 = r_addr(infos, j, "ptr", 0, off);
        else
            slots[i].u64 = r_addr(outs, j, "data_ptr", 1, off);
    }
    void *s = stream_of(stream), *p = PyLong_AsVoidPtr(plan);
    if (PyErr_Occurred())
        return NULL;
    return PyLong_FromLong(plan_run(p, slots, (uint32_t)n, s));
}

/* ---- a graph.Recipe run from the wrapper's first line (rcall) ----
 * rcall_init(tensor_type, names): torch.Tensor and the dict of torch
 * dtypes to tilec names that tensor_info fills. rcall(recipes, tensors,
 * tail): the key tensor_info and the wrapper would make for these torch
 * tensors (each (name, shape, None, True, device, True)) followed by the
 * tail (the scalars), looked up in recipes; found, its Recipe's `fast`
 * tuple is run here (outputs, slots, plan) and the outputs returned. None
 * whenever anything differs from that path (another kind of argument, a
 * non-contiguous or host tensor, an unknown key, a workspace too small):
 * the wrapper's own code then runs, checks and all. */
static PyObject *r_ttype, *r_names;

static PyObject *n_rcall_init(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *t, *names;
    if (!PyArg_ParseTuple(args, "OO", &t, &names))
        return NULL;
    Py_XDECREF(r_ttype);
    Py_XDECREF(r_names);
    Py_INCREF(t);
    Py_INCREF(names);
    r_ttype = t;
    r_names = names;
    Py_RETURN_NONE;
}

/* t's part of the key, or NULL (no Python error) when t is not a
 * contiguous CUDA tensor of a known dtype. */
static PyObject *r_key(PyObject *t)
{
    PyObject *dt = PyObject_GetAttrString(t, "dtype");
    PyObject *name = dt ? PyDict_GetItemWithError(r_names, dt) : NULL;
    Py_XDECREF(dt);
    PyObject *cuda = name && name != Py_None ? PyObject_GetAttrString(t, "is_cuda") : NULL;
    int ok = cuda == Py_True;
    Py_XDECREF(cuda);
    PyObject *c = ok ? PyObject_CallMethod(t, "is_contiguous", NULL) : NULL;
    ok = c == Py_True;
    Py_XDECREF(c);
    PyObject *shape = ok ? PyObject_GetAttrString(t, "shape") : NULL;
    PyObject *dev = shape ? PyObject_CallMethod(t, "get_device", NULL) : NULL;
    PyObject *key = dev ? PyTuple_Pack(6, name, shape, Py_None, Py_True, dev, Py_True) : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(dev);
    if (!key)
        PyErr_Clear();
    return key;
}

/* Recipe.fast: (plan, kinds, template, outs, ws_bytes, workspaces, raw, index, graph, single),
 * outs a tuple of (callable, args, kwargs) that allocate each output. */
static PyObject *r_run(PyObject *fast, PyObject *tensors)
{
    PyObject *plan, *tmpl, *outs, *wss, *raw, *graph;
    const char *kinds;
    Py_ssize_t n;
    long long ws_bytes;
    long index;
    int single;
    if (!PyArg_ParseTuple(fast, "Oy#OOLOOlOp", &plan, &kinds, &n, &tmpl, &outs, &ws_bytes, &wss, &raw, &index, &graph,
                          &single))
        return NULL;
    Py_ssize_t nout = PyTuple_Size(outs);
    if (n > MAX_VALUES || nout < 1 || nout > 64 || PyTuple_Size(tmpl) != 3 * n)
        Py_RETURN_NONE;
    PyObject *h = PyObject_CallFunction(raw, "l", index);
    if (!h)
        return NULL;
    void *s = PyLong_AsVoidPtr(h);
    uint64_t wsp = 0;
    if (ws_bytes) { /* the stream's workspace: the Python path makes one when there is none this big */
        PyObject *w = PyDict_GetItemWithError(wss, s ? h : Py_None);
        if (!w || PyLong_AsLongLong(PyTuple_GetItem(w, 1)) < ws_bytes) {
            Py_DECREF(h);
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        wsp = PyLong_AsUnsignedLongLong(PyTuple_GetItem(w, 0));
    }
    Py_DECREF(h);
    PyObject *res = PyTuple_New(nout);
    for (Py_ssize_t j = 0; res && j < nout; j++) {
        PyObject *o = PyTuple_GetItem(outs, j);
        PyObject *t = PyObject_Call(PyTuple_GetItem(o, 0), PyTuple_GetItem(o, 1), PyTuple_GetItem(o, 2));
        if (!t) {
            Py_DECREF(res);
            return NULL;
        }
        PyTuple_SetItem(res, j, t);
    }
    if (!res)
        return NULL;
    arg slots[MAX_VALUES];
    for (Py_ssize_t i = 0; i < n && !PyErr_Occurred(); i++) {
        long src = PyLong_AsLong(PyTuple_GetItem(tmpl, 3 * i));
        Py_ssize_t j = PyLong_AsSsize_t(PyTuple_GetItem(tmpl, 3 * i + 1));
        PyObject *v = PyTuple_GetItem(tmpl, 3 * i + 2);
        if (src == 3)
            pack_value(v, kinds[i], &slots[i]);
        else if (src == 2)
            slots[i].u64 = wsp + (uint64_t)PyLong_AsLongLong(v);
        else
            slots[i].u64 = r_addr(src ? res : tensors, j, "data_ptr", 1, PyLong_AsLongLong(v));
    }
    void *p = PyLong_AsVoidPtr(plan);
    if (PyErr_Occurred() || (plan_run(p, slots, (uint32_t)n, s) && !PyObject_CallMethod(graph, "_fail", NULL))) {
        Py_DECREF(res);
        return NULL;
    }
    if (!single)
        return res;
    PyObject *one = PyTuple_GetItem(res, 0);
    Py_INCREF(one);
    Py_DECREF(res);
    return one;
}

static PyObject *n_rcall(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *recipes, *tensors, *tail;
    if (!PyArg_ParseTuple(args, "OOO", &recipes, &tensors, &tail))
        return NULL;
    if (!r_ttype || !PyTuple_Check(tensors) || !PyTuple_Check(tail))
        Py_RETURN_NONE;
    Py_ssize_t nt = PyTuple_Size(tensors), ns = PyTuple_Size(tail);
    PyObject *key = PyTuple_New(nt + ns);
    for (Py_ssize_t i = 0; key && i < nt + ns; i++) {
        PyObject *v = i < nt ? PyTuple_GetItem(tensors, i) : PyTuple_GetItem(tail, i - nt);
        PyObject *k = NULL;
        if (i >= nt) {
            Py_INCREF(v);
            k = v;
        } else if (PyObject_IsInstance(v, r_ttype) == 1) {
            k = r_key(v);
        }
        if (!k) {
            Py_DECREF(key);
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        PyTuple_SetItem(key, i, k);
    }
    if (!key)
        return NULL;
    PyObject *r = PyDict_GetItemWithError(recipes, key); /* borrowed */
    Py_DECREF(key);
    PyObject *fast = r && r != Py_None ? PyObject_GetAttrString(r, "fast") : NULL;
    if (!fast || fast == Py_None) {
        Py_XDECREF(fast);
        PyErr_Clear(); /* an unhashable scalar: the wrapper's checks say what is wrong */
        Py_RETURN_NONE;
    }
    PyObject *out = r_run(fast, tensors);
    Py_DECREF(fast);
    return out;
}

static PyMethodDef methods[] = {
    {"rcall_init", n_rcall_init, METH_VARARGS, "rcall_init(tensor_type, names): what rcall compares against"},
    {"rcall", n_rcall, METH_VARARGS, "rcall(recipes, tensors, tail) -> the outputs, or None for the wrapper's path"},
    {"recipe_run", n_recipe_run, METH_VARARGS, "recipe_run(plan, kinds, template, infos, outs, ws, stream) -> status"},
    {"kcall", n_kcall, METH_VARARGS, "kcall(spec, args, stream) -> (status, chosen), or None for the Python checks"},
    {"init", n_init, METH_VARARGS, "init(plan_run, launch, launch_best): the runtime's entry points"},
    {"plan_run", n_plan_run, METH_VARARGS, "plan_run(plan, kinds, values, stream) -> status"},
    {"launch", n_launch, METH_VARARGS, "launch(prog, name, variant, kinds, values, stream) -> (status, chosen)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tilec_native", "tilec's optional fast path", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_tilec_native(void);
PyMODINIT_FUNC PyInit_tilec_native(void) { return PyModule_Create(&module); }
