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

static PyMethodDef methods[] = {
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
