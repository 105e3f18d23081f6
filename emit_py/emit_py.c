/* emit_py.c: the "py" emitter. Each graph becomes NAME.py, a module over
 * the tilec Python package (python/tilec): the .tile source embedded as a
 * bytes literal; the graph's launch plan as data (tensor slots with their
 * dtypes and shapes, size and scalar slots, the kernel, extern and fill
 * steps);
 * load() builds the kernels and the plan (tilec.Graph) once per device;
 * call(...) checks its arguments (torch or CuPy tensors, or tilec.Buffer)
 * with the messages of the C wrapper before it touches the GPU, allocates
 * the outputs and one workspace for the intermediates (torch's caching
 * allocator for torch inputs; intermediates share memory as planning
 * says), and runs the plan with one native call on the caller's stream
 * (torch's current one by default); `python3 -m NAME R=4096 C=1024` times
 * it on random inputs.
 *
 * Nothing from the .tile file reaches the output unescaped: the source,
 * file name and extern symbols are string literals with every quote,
 * backslash and control byte escaped; doc comments are # comments or
 * docstring text with the same escapes (util/escape.h); names go through
 * util/mangle.h: parameters and buffers keep their name unless it is a
 * keyword, a builtin or the wrapper's (then NAME_), size symbols, argument
 * infos and addresses are _NAME_s, _NAME_info and _NAME_p. Slot names in
 * the plan are string literals: a buffer's name, "$" and a size text or a
 * scalar parameter's name. A graph with for loops (py_loop.c) has its
 * steps cut into parts by loop markers, which call() runs from Python
 * loops. */
#include <stdlib.h>
#include <string.h>

#include "emit_py/emit_py.h"
#include "emit_py/py_internal.h"
#include "parser/module.h"
#include "tilec/emitter.h"
#include "util/escape.h"
#include "util/mangle.h"
#include "util/strbuf.h"
#include "util/strset.h"

/* ---- escaping ---- */

/* # comment lines, one per line of text. */
static void py_comment(strbuf *b, const char *indent, const char *text)
{
    strbuf cont;
    sb_init(&cont);
    sb_printf(&cont, "\n%s# ", indent);
    sb_printf(b, "%s# ", indent);
    esc_py_text(b, text, 0, sb_str(&cont));
    sb_putc(b, '\n');
    sb_free(&cont);
}


/* The check, in call()'s argument checks, that tensor `name` of line l
 * has no negative dimension and fits 63 bits of bytes. */
static void py_check_tensor(pystate *s, const tilec_wir_line *l, const char *name)
{
    strbuf shape;
    sb_init(&shape);
    py_shape(&shape, s->g, l);
    int inl = 0; /* its shape names a loop variable: checked in every iteration */
    for (uint32_t d = 0; l->size_exprs && d < l->rank; d++)
        inl |= py_in_loop(s, l->size_exprs[d]);
    if (inl) {
        strbuf c;
        sb_init(&c);
        sb_printf(&c, "    tilec.check_tensor(\"%s\", \"%s\", %s, \"%s\")\n", s->g->name, name, sb_str(&shape),
                  tilec_dtype_name(l->dtype));
        py_code(s, sb_str(&c));
        s->failed |= shape.failed | c.failed;
        sb_free(&c);
        sb_free(&shape);
        return;
    }
    strbuf key;
    sb_init(&key);
    sb_printf(&key, "%s %s", tilec_dtype_name(l->dtype), sb_str(&shape));
    int fresh = strset_add(&s->checked, sb_str(&key)); /* one check per dtype and shape */
    s->failed |= key.failed | s->checked.failed;
    sb_free(&key);
    if (fresh)
        sb_printf(&s->checks, "    tilec.check_tensor(\"%s\", \"%s\", %s, \"%s\")\n", s->g->name, name, sb_str(&shape),
                  tilec_dtype_name(l->dtype));
    s->failed |= shape.failed;
    sb_free(&shape);
}


/* ---- buffers ---- */

/* Record buffer l (root: -1 for a root of its own, else the buffer whose
 * memory it takes, `off` bytes in). */
static void buf_add(pystate *s, const tilec_wir_line *l, int input, const char *from, int at_offset, int given)
{
    if (s->nbufs == s->capbufs) {
        size_t cap = s->capbufs ? 2 * s->capbufs : 16;
        pybuf *b = realloc(s->bufs, cap * sizeof *b);
        if (!b) {
            s->failed = 1;
            return;
        }
        s->bufs = b;
        s->capbufs = cap;
    }
    pybuf *b = &s->bufs[s->nbufs];
    memset(b, 0, sizeof *b);
    b->l = l;
    b->input = input;
    b->given = given;
    b->root = (int)s->nbufs;
    int f = from ? buf_find(s, from) : -1;
    strbuf o;
    sb_init(&o);
    if (from && f < 0) {
        s->failed = 1;
    } else if (f >= 0) {
        b->root = s->bufs[f].root;
        sb_puts(&o, s->bufs[f].off);
        if (at_offset && l->offset && strcmp(l->offset, "0")) {
            sb_puts(&o, o.n ? " + " : "");
            sb_puts(&o, "(");
            py_size(&o, s->g, l->offset_expr);
            sb_printf(&o, ") * %u", tilec_dtype_size(l->dtype));
        }
    }
    b->off = strdup(sb_str(&o));
    s->failed |= o.failed || !b->off;
    sb_free(&o);
    s->nbufs++;
    if (s->depth) { /* made in a loop's body: its size slots are made here, its address set per iteration */
        strbuf dims;
        sb_init(&dims);
        for (uint32_t d = 0; d < l->rank; d++)
            py_size_ref(s, &dims, l->sizes[d], l->size_exprs ? l->size_exprs[d] : NULL, "int");
        s->failed |= dims.failed;
        sb_free(&dims);
        py_loop_buf(s, s->nbufs - 1);
    }
}


/* ---- the hooks ---- */

static int h_comment(void *u, const tilec_wir_line *l)
{
    py_comment(&((pystate *)u)->steps, "    ", l->text);
    return 0;
}

static int h_kernel_def(void *u, const tilec_wir_line *l)
{
    (void)u;
    (void)l; /* the plan resolves its kernels by name */
    return 0;
}

/* zeros, ones and full (docs/language.md): a fill step of the plan where
 * the buffer is allocated, in stream order before the next launch:
 * ("fill", tensor, bit pattern) */
static void py_fill(pystate *s, const tilec_wir_line *l)
{
    if (!l->fill)
        return;
    s->nsteps++;
    sb_puts(&s->steps, "    (\"fill\", ");
    py_str(&s->steps, l->name);
    sb_printf(&s->steps, ", 0x%llx),  # %s\n", (unsigned long long)l->fill_bits, l->fill);
}

static int h_allocate(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    py_check_tensor(s, l, l->name);
    buf_add(s, l, 0, NULL, 0, 0);
    py_fill(s, l);
    return 0;
}

static int h_reuse(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    py_check_tensor(s, l, l->name);
    buf_add(s, l, 0, l->from, 0, 0);
    py_fill(s, l);
    return 0;
}

static int h_free(void *u, const tilec_wir_line *l)
{
    (void)u;
    (void)l; /* the workspace lives for the call */
    return 0;
}

static int late_list(pystate *s, const char *name);

static int h_reinterpret(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    if (l->nargs == 1 && l->args[0].kind == TILEC_WIR_ARG_ITEM) { /* view(xs[i], ...): the caller's tensor */
        const char *t = l->args[0].text, *br = t ? strchr(t, '[') : NULL;
        if (!br || !l->bytes_expr)
            return 1;
        py_check_tensor(s, l, l->name);
        strbuf c, h, ty;
        sb_init(&c);
        sb_init(&h);
        sb_init(&ty);
        mg_py_helper(&h, t, (size_t)(br - t), "list");
        sb_printf(&ty, "%s[", tilec_dtype_name(l->dtype));
        for (uint32_t d = 0; d < l->rank; d++)
            sb_printf(&ty, "%s%s", d ? ", " : "", l->sizes[d]);
        sb_putc(&ty, ']');
        sb_puts(&c, "    ");
        mg_py_helper(&c, l->name, strlen(l->name), "p");
        sb_printf(&c, " = %s.view_item(\"%s\", \"line %u: %s\", \"line %u: view %s of %s\", \"%.*s\", ", sb_str(&h),
                  s->g->name, l->loc.line, t, l->loc.line, l->name, t, (int)(br - t), t);
        py_size(&c, s->g, l->args[0].expr);
        sb_puts(&c, ", ");
        py_size(&c, s->g, l->bytes_expr);
        sb_printf(&c, ", \"%s\", %u)\n", sb_str(&ty), tilec_dtype_size(l->dtype));
        char *list = strndup(t, (size_t)(br - t));
        int late = list && late_list(s, list); /* a list of the graph's tensors: made after the allocations */
        s->failed |= !list;
        free(list);
        s->late_items |= late;
        if (s->depth || late)
            py_code(s, sb_str(&c));
        else
            sb_add(&s->checks, sb_str(&c), c.n);
        s->failed |= c.failed | h.failed | ty.failed;
        sb_free(&c);
        sb_free(&h);
        sb_free(&ty);
        buf_add(s, l, 0, NULL, 0, 1);
        if (late && s->loops && !s->depth) { /* its address set where it stands, as a loop's are */
            strbuf a;
            sb_init(&a);
            sb_printf(&a, "    _ptrs[%zu] = ", s->nbufs - 1);
            mg_py_helper(&a, l->name, strlen(l->name), "p");
            sb_puts(&a, "\n");
            py_code(s, sb_str(&a));
            s->bufs[s->nbufs - 1].inloop = -1;
            s->failed |= a.failed;
            sb_free(&a);
        }
        return 0;
    }
    if (l->nargs != 3) {
        py_check_tensor(s, l, l->name);
    } else { /* a slice: 0 <= start <= stop <= rows, checked before anything runs (it says what a
              * tensor check of its shape would) */
        strbuf v[3];
        for (int i = 0; i < 3; i++) {
            sb_init(&v[i]);
            py_size(&v[i], s->g, l->args[i].expr);
        }
        strbuf c, t[2]; /* c: in a loop's body: at every iteration, before the steps that follow it run; t: the
                         * bounds as written (T % 128 ...), inside the message's % format */
        sb_init(&c);
        for (int i = 0; i < 2; i++) {
            sb_init(&t[i]);
            esc_py_format(&t[i], l->args[i].text);
        }
        sb_printf(&c, "    if not (0 <= %s <= %s <= %s):\n        raise ValueError(\"%s: line %u: slice %s = %s[%s:%s] "
                  "is out of bounds: start %%d, stop %%d, and '%s' has %%d rows\" %% (%s, %s, %s))\n",
                  sb_str(&v[0]), sb_str(&v[1]), sb_str(&v[2]), s->g->name, l->loc.line, l->name, l->from,
                  sb_str(&t[0]), sb_str(&t[1]), l->from, sb_str(&v[0]), sb_str(&v[1]), sb_str(&v[2]));
        c.failed |= t[0].failed | t[1].failed;
        sb_free(&t[0]);
        sb_free(&t[1]);
        if (s->depth)
            py_code(s, sb_str(&c));
        else
            sb_add(&s->checks, sb_str(&c), c.n);
        s->failed |= c.failed;
        sb_free(&c);
        for (int i = 0; i < 3; i++) {
            s->failed |= v[i].failed;
            sb_free(&v[i]);
        }
    }
    if (l->offset && strcmp(l->offset, "0")) {
        strbuf off;
        sb_init(&off);
        py_size(&off, s->g, l->offset_expr);
        strbuf c;
        sb_init(&c);
        sb_printf(&c, "    tilec.check_fits(\"%s\", \"the byte offset of view %s\", (%s) * %u)\n", s->g->name,
                  l->name, sb_str(&off), tilec_dtype_size(l->dtype));
        if (py_in_loop(s, l->offset_expr))
            py_code(s, sb_str(&c));
        else
            sb_add(&s->checks, sb_str(&c), c.n);
        s->failed |= off.failed | c.failed;
        sb_free(&c);
        sb_free(&off);
    }
    buf_add(s, l, 0, l->from, 1, 0);
    return 0;
}

static long code_slot(pystate *s, const char *name, const char *kind);

/* xs[i] (an ITEM argument of the kernel call at `line`): a "ptr" slot, the
 * address TensorList.item gives after its bounds check; its value among
 * run()'s in a straight-line graph (after the lists, s->code), else set by
 * call()'s code where the call stands (a graph with for loops). */
static void py_item(pystate *s, const tilec_wir_arg *a, unsigned line)
{
    const char *br = a->text ? strchr(a->text, '[') : NULL;
    if (!br || !a->expr) {
        s->failed = 1;
        return;
    }
    strbuf key, h, v, list;
    sb_init(&key);
    sb_init(&h);
    sb_init(&v);
    sb_init(&list);
    sb_add(&list, a->text, (size_t)(br - a->text));
    s->late_items |= late_list(s, sb_str(&list)); /* its address is this call's: no Recipes */
    sb_printf(&key, "$%s", a->text);
    py_str(&s->steps, sb_str(&key));
    mg_py_helper(&h, sb_str(&list), list.n, "list");
    sb_printf(&v, "%s.item(\"%s\", \"line %u: %s\", \"%s\", ", sb_str(&h), s->g->name, line, a->text, sb_str(&list));
    py_size(&v, s->g, a->expr);
    sb_puts(&v, ")");
    if (!s->loops) {
        if (strset_add(&s->slots, sb_str(&key))) {
            sb_puts(&s->scalars, "    (");
            py_str(&s->scalars, a->text);
            sb_puts(&s->scalars, ", \"ptr\"),\n");
            sb_printf(&s->values, ", %s", sb_str(&v));
        }
    } else {
        long j = code_slot(s, a->text, "ptr");
        if (j >= 0) {
            strbuf t;
            sb_init(&t);
            sb_printf(&t, "    _vals[%ld] = %s\n", j, sb_str(&v));
            py_code(s, sb_str(&t));
            s->failed |= t.failed;
            sb_free(&t);
        }
    }
    s->failed |= key.failed | h.failed | v.failed | list.failed;
    sb_free(&key);
    sb_free(&h);
    sb_free(&v);
    sb_free(&list);
}

/* A constant or slot argument of a kernel step. */
static void py_arg(pystate *s, const tilec_wir_arg *a)
{
    const char *t = a->text;
    strbuf *b = &s->steps;
    if (a->kind == TILEC_WIR_ARG_BUFFER)
        py_str(b, t);
    else if (a->kind == TILEC_WIR_ARG_LIST) /* a "list" slot: the address of the call's tilec_rt_list */
        py_size_ref(s, b, t, NULL, "list");
    else if (a->kind == TILEC_WIR_ARG_SIZE)
        py_size_ref(s, b, t, a->expr, "int");
    else if (!strcmp(t, "true") || !strcmp(t, "false"))
        sb_puts(b, t[0] == 't' ? "True" : "False");
    else if (strstr(t, "inf"))
        sb_printf(b, "float(\"%sinf\")", t[0] == '-' ? "-" : "");
    else if (py_is_ident(t[0]))
        py_size_ref(s, b, t, a->expr, py_scalar_is_float(s->g, t) ? "float" : "int");
    else
        sb_puts(b, t); /* a number */
}

static int h_kernel_call(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    const tilec_kernel *k = l->kernel;
    if (!k || l->nargs != k->nparams)
        return -1;
    /* sizes are Python ints: call() checks first that they fit the parameter's type */
    for (uint32_t i = 0; i < l->nargs; i++) {
        const tilec_param *p = &k->params[i];
        const tilec_wir_arg *a = &l->args[i];
        tilec_dtype dt = p->type.dtype;
        const char *ty = dt == TILEC_DT_I32 ? "i32" : dt == TILEC_DT_U32 ? "u32" : dt == TILEC_DT_U64 ? "u64" : "i64";
        if (p->type.kind == TILEC_TE_POINTER || p->type.kind == TILEC_TE_LIST || a->kind == TILEC_WIR_ARG_SCALAR || dt == TILEC_DT_F32 ||
            dt == TILEC_DT_F64)
            continue;
        strbuf key; /* each size once per call: sizes do not change within one (but in a loop's iterations) */
        sb_init(&key);
        sb_printf(&key, "%s %s", ty, a->text);
        /* a literal of 9 digits fits any of them */
        int literal = a->expr && a->expr->op == TILEC_IX_INT && a->expr->value >= 0 && a->expr->value <= 999999999;
        int inl = py_in_loop(s, a->expr);
        int fresh = inl || (strset_add(&s->checked, sb_str(&key)) && !literal);
        s->failed |= key.failed;
        sb_free(&key);
        if (!fresh)
            continue;
        strbuf v;
        sb_init(&v);
        py_size(&v, s->g, a->expr);
        strbuf t;
        sb_init(&t);
        sb_printf(&t, "argument '%s' of %s (%s)", p->name, k->name, a->text);
        strbuf c;
        sb_init(&c);
        sb_printf(&c, "    tilec.check_fits(\"%s\", ", s->g->name);
        py_str(&c, sb_str(&t));
        sb_printf(&c, ", %s, \"%s\")\n", sb_str(&v), ty);
        if (inl)
            py_code(s, sb_str(&c));
        else
            sb_add(&s->checks, sb_str(&c), c.n);
        s->failed |= v.failed | t.failed | c.failed;
        sb_free(&c);
        sb_free(&v);
        sb_free(&t);
    }
    s->nsteps++;
    sb_puts(&s->steps, "    (\"kernel\", ");
    py_str(&s->steps, k->name);
    sb_printf(&s->steps, ", %d, (", l->nvariants > 1 ? -1 : 0);
    for (uint32_t i = 0; i < l->nargs; i++) {
        sb_puts(&s->steps, i ? ", " : "");
        if (l->args[i].kind == TILEC_WIR_ARG_ITEM)
            py_item(s, &l->args[i], l->loc.line);
        else
            py_arg(s, &l->args[i]);
    }
    sb_puts(&s->steps, l->nargs == 1 ? ",)),\n" : ")),\n");
    return 0;
}

/* externs: inputs are the argument buffers; outputs the given list */
static void py_extern(pystate *s, const tilec_wir_line *l, const char *const *outs, uint32_t nouts)
{
    s->externs = 1;
    s->nsteps++;
    sb_puts(&s->steps, "    (\"extern\", ");
    py_str(&s->steps, l->symbol);
    sb_puts(&s->steps, ", (");
    for (uint32_t i = 0; i < l->nargs; i++) {
        sb_puts(&s->steps, i ? ", " : "");
        py_str(&s->steps, l->args[i].text);
    }
    sb_puts(&s->steps, l->nargs == 1 ? ",), (" : "), (");
    for (uint32_t i = 0; i < nouts; i++) {
        sb_puts(&s->steps, i ? ", " : "");
        py_str(&s->steps, outs[i]);
    }
    sb_puts(&s->steps, nouts == 1 ? ",)),\n" : ")),\n");
}

static int h_extern_call(void *u, const tilec_wir_line *l)
{
    py_extern(u, l, l->outs, l->nouts);
    return 0;
}

static int h_extern_alloc(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    const tilec_wir_line *res[64]; /* the result, or each of a tuple */
    const char *outs[64];
    size_t n = tilec_wir_extern_results(s->w, l, res, 64);
    if (!n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        py_check_tensor(s, res[i], res[i]->name);
        buf_add(s, res[i], 0, NULL, 0, 0);
        outs[i] = res[i]->name;
    }
    py_extern(s, l, outs, (uint32_t)n);
    return 0;
}

/* A collective: its result allocated, then an extern step of the line's
 * symbol, which set_comm registered on externs() (tilec.Comm.register,
 * with its wait's symbol: it runs on the communication stream, and its
 * wait line, an extern step like any other, joins it): eager and graph
 * mode run both as any extern. */
static int h_collective(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    char what[512];
    tilec_wir_coll_where(s->w, l, what, sizeof what);
    sb_puts(&s->colls, "    comm.register(externs(), ");
    py_str(&s->colls, l->symbol);
    sb_printf(&s->colls, ", \"%s\", \"%s\", %u, %lld, ", tilec_coll_name(l->coll), tilec_redop_name(l->redop), l->index,
              (long long)l->root);
    py_str(&s->colls, what);
    if (l->wait) { /* on the communication stream; its wait line joins it */
        sb_puts(&s->colls, ", wait=");
        py_str(&s->colls, l->wait);
    }
    sb_puts(&s->colls, ")\n");
    py_check_tensor(s, l, l->name);
    buf_add(s, l, 0, NULL, 0, 0);
    tilec_wir_arg in = {.kind = TILEC_WIR_ARG_BUFFER, .text = l->from};
    tilec_wir_line x = *l;
    x.nargs = 1;
    x.args = &in;
    py_extern(s, &x, &l->name, 1);
    return 0;
}

static int h_multi_output(void *u, const tilec_wir_line *l)
{
    (void)u;
    (void)l; /* allocated with its EXTERN_ALLOC */
    return 0;
}

static int h_assert_shape(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    strbuf *b = &s->checks, i;
    sb_init(&i);
    mg_py_helper(&i, l->name, strlen(l->name), "info");
    const char *I = sb_str(&i), *dt = tilec_dtype_name(l->dtype);
    sb_printf(b, "    if %s is None or %s.dtype != \"%s\" or len(%s.shape) != %u:\n", I, I, dt, I, l->rank);
    sb_printf(b, "        raise ValueError(\"%s: %s must be a %s tensor of rank %u\")\n", s->g->name, l->name, dt,
              l->rank);
    uint32_t nbind = 0;
    for (uint32_t d = 0; d < l->rank; d++)
        nbind += l->binds && l->binds[d];
    if (nbind == l->rank && l->rank > 1) { /* binds every dimension: unpack */
        sb_puts(b, "    ");
        for (uint32_t d = 0; d < l->rank; d++) {
            sb_puts(b, d ? ", " : "");
            py_sym(b, l->sizes[d]);
        }
        sb_printf(b, " = %s.shape\n", I);
    }
    for (uint32_t d = 0; d < l->rank; d++) {
        if (l->binds && l->binds[d]) {
            if (nbind != l->rank || l->rank == 1) {
                sb_puts(b, "    ");
                py_sym(b, l->sizes[d]);
                sb_printf(b, " = %s.shape[%u]\n", I, d);
            }
            continue;
        }
        strbuf v, t;
        sb_init(&v);
        sb_init(&t);
        py_size(&v, s->g, l->size_exprs ? l->size_exprs[d] : NULL);
        sb_printf(b, "    if %s.shape[%u] != %s:\n        raise ValueError(f\"", I, d, sb_str(&v));
        sb_printf(&t, "%s: dimension %u of %s is ", s->g->name, d, l->name);
        esc_py_str(b, sb_str(&t), 1);
        sb_printf(b, "{%s.shape[%u]}, but ", I, d);
        sb_free(&t);
        sb_init(&t);
        sb_printf(&t, "%s is ", l->sizes[d]);
        esc_py_str(b, sb_str(&t), 1);
        sb_printf(b, "{%s}\")\n", sb_str(&v));
        s->failed |= v.failed | t.failed;
        sb_free(&v);
        sb_free(&t);
    }
    sb_printf(b, "    if not %s.contiguous:\n        raise ValueError(\"%s: %s must be contiguous (row-major)\")\n", I,
              s->g->name, l->name);
    sb_printf(b, "    if not %s.on_device:\n        raise ValueError(\"%s: %s must be in device memory\")\n", I,
              s->g->name, l->name);
    buf_add(s, l, 1, NULL, 0, 0);
    s->failed |= i.failed;
    sb_free(&i);
    return 0;
}

/* A tensor list parameter: a TensorList made (or taken) and checked by
 * tilec.TensorList.for_graph among call()'s checks; its slot is made by
 * the first kernel step that takes it (py_arg). */
static int h_assert_list(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    strbuf h;
    sb_init(&h);
    mg_py_helper(&h, l->name, strlen(l->name), "list");
    sb_printf(&s->checks, "    %s = tilec.TensorList.for_graph(\"%s\", \"%s\", %u, \"%s\", ", sb_str(&h), s->g->name,
              l->name, l->index, tilec_dtype_name(l->dtype));
    py_name(&s->checks, l->name);
    sb_puts(&s->checks, ")\n");
    sb_printf(&s->lists, "(\"%s\", %s), ", l->name, sb_str(&h));
    if (!s->first_list)
        s->first_list = l->name;
    s->failed |= h.failed;
    sb_free(&h);
    return 0;
}

/* Is `name` a list made after the allocations (a LIST_OF's, or a sub-list
 * of one: s->late)? */
static int late_list(pystate *s, const char *name)
{
    const char *t = sb_str(&s->late);
    size_t n = strlen(name);
    for (const char *p = t; (p = strstr(p, name)); p += n)
        if ((p == t || p[-1] == '\n') && p[n] == '\n')
            return 1;
    return 0;
}

/* The statement `t` that makes list l where it must run: among call()'s
 * checks when it needs only the parameters; else (in a for loop kept as a
 * loop, or when it reads the graph's own tensors: s->late) after the
 * allocations, in the code of call() (py_code): in a graph with for loops
 * with a slot of its own, 0 until that code sets it, and the TensorList
 * kept for the call (the parts of a graph-mode call run at its end). */
static void list_stmt(pystate *s, const tilec_wir_line *l, strbuf *t, const char *h, int late)
{
    if (!s->depth && !late) {
        sb_add(&s->checks, sb_str(t), t->n);
        return;
    }
    if (late)
        sb_printf(&s->late, "%s\n", l->name);
    if (!s->loops) { /* straight-line: after the allocations, before the run */
        py_code(s, sb_str(t));
        return;
    }
    long j = code_slot(s, l->name, "list");
    if (j < 0)
        s->failed = 1;
    else
        sb_printf(t, "    _vals[%ld] = %s.address\n    _kept.append(%s)\n", j, h, h);
    if (!s->kept) {
        sb_puts(&s->checks, "    _kept = []  # the lists made after the checks, alive until the call's end\n");
        s->kept = 1;
    }
    py_code(s, sb_str(t));
}

/* A slot ("$NAME", kind) of a graph with for loops that call()'s code sets
 * (its value 0 among _vals until then): its index among the sizes and
 * scalars; the index it has when made already; -1 when out of memory. */
static long code_slot(pystate *s, const char *name, const char *kind)
{
    strbuf key;
    sb_init(&key);
    sb_printf(&key, "$%s", name);
    long j = -1;
    for (size_t i = 0; i < s->nslotkeys && j < 0; i++)
        if (!strcmp(s->slotkeys[i], sb_str(&key)))
            j = (long)i;
    char **k = j >= 0 || s->nslotkeys < s->capslotkeys
                   ? s->slotkeys
                   : realloc(s->slotkeys, (s->capslotkeys = s->capslotkeys ? 2 * s->capslotkeys : 16) * sizeof *k);
    char *kc = j >= 0 ? NULL : strdup(sb_str(&key));
    if (j < 0 && (!k || !kc || !strset_add(&s->slots, sb_str(&key)))) {
        free(kc);
        s->slotkeys = k ? k : s->slotkeys;
        s->failed = 1;
    } else if (j < 0) {
        s->slotkeys = k;
        sb_puts(&s->scalars, "    (");
        py_str(&s->scalars, name);
        sb_printf(&s->scalars, ", \"%s\"),\n", kind);
        sb_puts(&s->values, ", 0");
        j = (long)s->nslotkeys;
        s->slotkeys[s->nslotkeys++] = kc;
    }
    s->failed |= key.failed;
    sb_free(&key);
    return j;
}

/* A sub-list from[a:b] (MAKE_LIST): a TensorList sharing the arrays of
 * `from` (TensorList.sub, which checks 0 <= a <= b <= len(from) with the C
 * wrapper's words); its slot ("$NAME", "list") is made by the kernel step
 * that takes it (py_arg), or by list_stmt. */
static int h_make_list(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    if (l->nargs < 1 || l->nargs > 2 || !l->from)
        return 1;
    strbuf t, h, f;
    sb_init(&t);
    sb_init(&h);
    sb_init(&f);
    mg_py_helper(&h, l->name, strlen(l->name), "list");
    mg_py_helper(&f, l->from, strlen(l->from), "list");
    sb_printf(&t, "    %s = %s.sub(\"%s\", \"line %u: sub-list %s[%s:%s]\", \"%s\", ", sb_str(&h), sb_str(&f), s->g->name,
              l->loc.line, l->from, l->args[0].text, l->nargs > 1 ? l->args[1].text : "", l->from);
    py_size(&t, s->g, l->args[0].expr);
    if (l->nargs > 1) {
        sb_puts(&t, ", ");
        py_size(&t, s->g, l->args[1].expr);
    }
    sb_puts(&t, ")\n");
    list_stmt(s, l, &t, sb_str(&h), late_list(s, l->from));
    s->failed |= t.failed | h.failed | f.failed;
    sb_free(&t);
    sb_free(&h);
    sb_free(&f);
    return 0;
}

/* A list [a, b] of the graph's tensors (LIST_OF): a TensorList of their
 * addresses and element counts (TensorList.of_buffers), made after the
 * allocations (list_stmt), where the line stands. */
static int h_list_of(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    if (!l->nargs)
        return 1;
    strbuf t, h;
    sb_init(&t);
    sb_init(&h);
    mg_py_helper(&h, l->name, strlen(l->name), "list");
    sb_printf(&t, "    %s = tilec.TensorList.of_buffers(\"%s\", _g.device_index, (", sb_str(&h),
              tilec_dtype_name(l->dtype));
    for (uint32_t i = 0; i < l->nargs; i++) {
        int bi = buf_find(s, l->args[i].text);
        if (bi < 0) {
            s->failed = 1;
            break;
        }
        const tilec_wir_line *b = s->bufs[bi].l;
        sb_puts(&t, "(");
        py_buf_ptr(s, (size_t)bi, &t);
        sb_puts(&t, ", ");
        for (uint32_t d = 0; d < b->rank; d++) {
            sb_puts(&t, d ? " * " : "");
            py_size(&t, s->g, b->size_exprs[d]);
        }
        sb_printf(&t, "%s), ", b->rank ? "" : "1");
    }
    sb_puts(&t, "))\n");
    list_stmt(s, l, &t, sb_str(&h), 1);
    s->failed |= t.failed | h.failed;
    sb_free(&t);
    sb_free(&h);
    return 0;
}

/* ---- the module ---- */

static int py_begin(tilec_emit *e, void **state)
{
    pystate *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    s->w = tilec_emit_wir(e);
    s->g = tilec_emit_graph(e);
    sb_init(&s->checks);
    sb_init(&s->colls);
    sb_init(&s->steps);
    sb_init(&s->scalars);
    sb_init(&s->values);
    sb_init(&s->code);
    sb_init(&s->late);
    sb_init(&s->lists);
    for (size_t i = 0; i < tilec_wir_line_count(s->w); i++)
        s->loops |= tilec_wir_line_at(s->w, i)->kind == TILEC_WIR_LOOP;
    if (tilec_wir_has_collectives(s->w)) { /* world: the communicator's size, bound first */
        sb_puts(&s->checks, "    if _comm is None:\n        raise RuntimeError(");
        strbuf m;
        sb_init(&m);
        sb_printf(&m, "%s: the graph has collectives: give the module a communicator with "
                      "set_comm(tilec.Comm(rank, world, unique_id)) first", s->g->name);
        py_str(&s->checks, sb_str(&m));
        sb_free(&m);
        sb_puts(&s->checks, ")\n    ");
        py_sym(&s->checks, "world");
        sb_puts(&s->checks, " = _comm.world\n");
    }
    *state = s;
    return 0;
}

/* "x, y, eps" */
static void py_params(strbuf *b, const tilec_graph *g)
{
    for (uint32_t i = 0; i < g->nparams; i++) {
        sb_puts(b, i ? ", " : "");
        py_name(b, g->params[i].name);
    }
}

/* "y: f32[R, C]" of a tensor parameter or result; "eps: f32" of a scalar */
static void py_param_doc(strbuf *b, const tilec_param *p, const tilec_wir *w, int result)
{
    int list = p->type.kind == TILEC_TE_LIST;
    sb_printf(b, "%s%s: %s%s%s", p->out ? "out " : "", p->name ? p->name : "?", list ? "[*" : "",
              tilec_dtype_name(p->type.dtype), list ? "]" : "");
    if (p->type.kind != TILEC_TE_TENSOR)
        return;
    /* the shape as the IR spells it */
    for (size_t k = 0; k < tilec_wir_line_count(w); k++) {
        const tilec_wir_line *l = tilec_wir_line_at(w, k);
        int match = p->name && l->name && !strcmp(l->name, p->name) &&
                    (result ? l->kind != TILEC_WIR_ASSERT_SHAPE && l->kind != TILEC_WIR_COMMENT &&
                                  l->kind != TILEC_WIR_KERNEL_DEF && l->kind != TILEC_WIR_FREE &&
                                  l->kind != TILEC_WIR_FREE_IF_NOT_REUSED
                            : l->kind == TILEC_WIR_ASSERT_SHAPE);
        if (!match)
            continue;
        sb_putc(b, '[');
        for (uint32_t d = 0; d < l->rank; d++)
            sb_printf(b, "%s%s", d ? ", " : "", l->sizes[d]);
        sb_putc(b, ']');
        return;
    }
}

static void py_bench_main(strbuf *c, const pystate *s)
{
    const tilec_graph *g = s->g;
    const char *n = g->name;
    sb_puts(c, "\n\ndef main(argv):\n"
               "    \"\"\"`python3 -m ");
    py_name(c, n);
    strbuf syms;
    sb_init(&syms);
    for (size_t i = 0; i < tilec_wir_line_count(s->w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(s->w, i);
        if (l->kind != TILEC_WIR_ASSERT_SHAPE)
            continue;
        for (uint32_t d = 0; d < l->rank; d++)
            if (l->binds && l->binds[d]) {
                sb_printf(c, " %s=1024", l->sizes[d]);
                sb_puts(&syms, "    ");
                py_sym(&syms, l->sizes[d]);
                sb_printf(&syms, " = int(args.get(\"%s\", 1024))\n", l->sizes[d]);
            }
    }
    sb_printf(c, " [iters=50]`: the median time of call() on random inputs.\"\"\"\n"
                 "    args = dict(a.split(\"=\", 1) for a in argv if \"=\" in a)\n");
    sb_add(c, sb_str(&syms), syms.n);
    sb_free(&syms);
    sb_puts(c, "    iters = max(int(args.get(\"iters\", 50)), 1)\n"
               "    t0 = time.perf_counter()\n    module = load()\n");
    if (s->colls.n) { /* one rank: the collectives of a world of 1 */
        sb_puts(c, "    set_comm(tilec.Comm(0, 1, tilec.Comm.unique_id(), module.device))\n    ");
        py_sym(c, "world");
        sb_puts(c, " = 1\n");
    }
    sb_printf(c, "    print(f\"%s: load {(time.perf_counter() - t0) * 1e3:.2f} ms\")\n", n);
    uint32_t seed = 1;
    for (uint32_t i = 0; i < g->nparams; i++) {
        const tilec_param *p = &g->params[i];
        sb_puts(c, "    ");
        py_name(c, p->name);
        if (p->type.kind == TILEC_TE_LIST) { /* count= tensors of numel= elements */
            sb_printf(c, " = [tilec.random_buffer((int(args.get(\"numel\", 65536)),), \"%s\", seed=%u + j, "
                         "device_=module.device)\n        for j in range(int(args.get(\"count\", 4)))]\n",
                      tilec_dtype_name(p->type.dtype), 1000 * seed++);
            continue;
        }
        if (p->type.kind != TILEC_TE_TENSOR) {
            int fl = p->type.dtype == TILEC_DT_F32 || p->type.dtype == TILEC_DT_F64 || p->type.dtype == TILEC_DT_F16 ||
                     p->type.dtype == TILEC_DT_BF16;
            sb_printf(c, " = %s(args.get(\"%s\", 1))\n", fl ? "float" : "int", p->name);
            continue;
        }
        const tilec_wir_line *a = tilec_wir_input_shape(s->w, i);
        sb_puts(c, " = tilec.random_buffer(");
        if (a)
            py_shape(c, s->g, a);
        else
            sb_puts(c, "()");
        sb_printf(c, ", \"%s\", seed=%u, device_=module.device)\n", tilec_dtype_name(p->type.dtype), seed++);
    }
    sb_puts(c, "    times = []\n    for it in range(-3, iters):\n"
               "        module.device.synchronize()\n        t0 = time.perf_counter()\n        out = call(");
    py_params(c, g);
    sb_printf(c, ")\n        module.device.synchronize()\n        if it >= 0:\n"
                 "            times.append(time.perf_counter() - t0)\n        release(%sout)\n",
              tilec_wir_output_count(s->w) > 1 ? "*" : "");
    sb_printf(c, "    times.sort()\n"
                 "    print(f\"%s: {times[len(times) // 2] * 1e3:.4f} ms per call (median of {iters})\")\n"
                 "\n\nif __name__ == \"__main__\":\n    main(sys.argv[1:])\n",
              n);
}

/* call()'s checks of its scalar parameters against their declared types,
 * used by a kernel or not, before any size arithmetic reads them:
 * tilec.check_int (TypeError for what is not an integer, RangeError for a
 * value the dtype cannot hold) or tilec.check_float. */
static void py_scalar_checks(strbuf *c, pystate *s)
{
    for (uint32_t i = 0; i < s->g->nparams; i++) {
        const tilec_param *p = &s->g->params[i];
        if (p->type.kind == TILEC_TE_TENSOR || p->type.kind == TILEC_TE_LIST || !p->name)
            continue;
        sb_printf(c, "    tilec.check_%s(\"%s\", \"%s\", \"%s\", ",
                  tilec_dtype_class(p->type.dtype) == 'f' ? "float" : "int", s->g->name, p->name,
                  tilec_dtype_name(p->type.dtype));
        py_name(c, p->name);
        sb_puts(c, ")\n");
    }
}

static int py_end(tilec_emit *e, void *state)
{
    pystate *s = state;
    const tilec_graph *g = s->g;
    const tilec_module *m = tilec_emit_module(e);
    const char *n = g->name, *file = tilec_module_file(m);
    strbuf mod; /* the module's name: a graph named like a keyword or a module of Python's gets a '_' */
    sb_init(&mod);
    mg_py_module(&mod, n, strlen(n));
    char pyname[300];
    snprintf(pyname, sizeof pyname, "%.250s.py", sb_str(&mod));
    size_t nout = tilec_wir_output_count(s->w);
    strbuf c;
    sb_init(&c);

    /* the docstring */
    sb_printf(&c, "\"\"\"The graph %s of ", n);
    esc_py_text(&c, file, 1, " ");
    sb_puts(&c, ", in Python over the tilec package.\n\n");
    if (g->doc) {
        esc_py_text(&c, g->doc, 1, "\n");
        sb_puts(&c, "\n\n");
    }
    sb_printf(&c, "Generated by tilec %s: do not edit. load() builds the kernels once,\n"
                  "call() runs the graph, `python3 -m %s SIZE=N ...` times it.\n\"\"\"\n",
              tilec_version(), sb_str(&mod));
    sb_puts(&c, "import sys\nimport time\n\nimport tilec\n\n");
    sb_puts(&c, "TILE_FILE = ");
    py_str(&c, file);
    sb_puts(&c, "\n# the .tile module, built by load()\nTILE_SOURCE = (\n");
    size_t srclen = 0;
    const char *src = tilec_module_source(m, &srclen);
    esc_py_bytes(&c, src, srclen, "    ");
    sb_puts(&c, "\n)\n\n");
    py_plan(&c, s);
    int entry = py_call_cacheable(s);
    sb_puts(&c, "_graphs = {}  # device index: tilec.Graph\n_externs = None\n"
                "_recipes = {}  # what call() did per key of its inputs and scalars (tilec.Graph.begin)\n"
                "_fast = None  # the extension's run of a known key's recipe (tilec.fast_call), set by load()\n\n\n");

    /* load, externs, release */
    sb_printf(&c, "def load(device=None, cuda_graph=False):\n"
                  "    \"\"\"Build the kernels of %s for CUDA device `device` (an index; None: 0)\n"
                  "    and its launch plan, once per device (a warm kernel cache makes that a\n"
                  "    file read); returns the tilec.Graph. cuda_graph=True records the calls\n"
                  "    as CUDA graphs and replays them (Graph.capture()); TILEC_DEBUG_PRINT is\n"
                  "    read here.\"\"\"\n"
                  "    global _fast%s\n"
                  "    index = device or 0\n    graph = _graphs.get(index)\n    if graph is None:\n"
                  "        module = tilec.Module(path=TILE_FILE, source=TILE_SOURCE, device_=index)\n"
                  "        graph = tilec.Graph(module, ",
              n, entry ? ", call" : "");
    py_str(&c, n);
    sb_printf(&c, ", _TENSORS, _SCALARS, _STEPS, %s, _INPUTS)\n"
                  "        _graphs[index] = graph\n        _fast = tilec.fast_call()\n",
              s->externs ? "externs()" : "None");
    if (entry) { /* a known key's call without a Python frame (the checked call() behind it) */
        sb_puts(&c, "        call = tilec.fast_entry(_call, _recipes, \"");
        py_call_kinds(&c, s);
        sb_puts(&c, "\")\n");
    }
    sb_puts(&c, "    if cuda_graph:\n        graph.capture()\n"
                "    return graph\n\n\n");
    sb_puts(&c, "def externs():\n"
                "    \"\"\"The registry of extern kernels the graph calls (register your own on it).\"\"\"\n"
                "    global _externs\n    if _externs is None:\n        _externs = tilec.Externs()\n"
                "    return _externs\n\n\n");
    if (s->colls.n)
        sb_printf(&c, "_comm = None  # set_comm(): the collectives' tilec.Comm\n\n\n"
                      "def set_comm(comm):\n"
                      "    \"\"\"The communicator (a tilec.Comm) the collectives of %s run on; world is\n"
                      "    its size. Registers each collective on externs(); required before call().\"\"\"\n"
                      "    global _comm\n%s    _comm = comm\n    _recipes.clear()  # recipes hold sizes of the old world\n\n\n",
                  n, sb_str(&s->colls));
    sb_puts(&c, "def release(*buffers):\n"
                "    \"\"\"Give tilec.Buffer outputs back when done with them: their memory serves\n"
                "    the next call (torch tensors need nothing: torch's allocator has them).\"\"\"\n"
                "    for graph in _graphs.values():\n        graph.release(*buffers)\n\n\n");

    /* call */
    sb_puts(&c, "def call(");
    py_params(&c, g);
    sb_printf(&c, "%sstream=None):\n    \"\"\"Run graph %s.\n\n    Arguments:", g->nparams ? ", *, " : "*, ", n);
    strbuf t;
    sb_init(&t);
    for (uint32_t i = 0; i < g->nparams; i++) {
        sb_puts(&t, i ? ", " : "");
        py_param_doc(&t, &g->params[i], s->w, 0);
    }
    sb_puts(&t, ". Tensors are torch or CuPy tensors on one device, or tilec.Buffer, contiguous. Runs on "
                "`stream` (a CUstream, a torch or CuPy stream), else on torch's current stream for torch "
                "inputs, never synchronizing. Returns ");
    for (uint32_t i = 0; i < g->nresults; i++) {
        sb_puts(&t, i ? ", " : "");
        py_param_doc(&t, &g->results[i], s->w, 1);
    }
    sb_printf(&t, "%s. Raises ValueError (OverflowError for a size that does not fit) when an argument does not "
                  "fit, before any GPU work.",
              nout > 1 ? " (a tuple of torch tensors for torch inputs, else of tilec.Buffer)"
                       : " (a torch tensor for torch inputs, else a tilec.Buffer)");
    /* wrap at 79 columns */
    size_t col = 14; /* "    Arguments:" */
    for (const char *p = sb_str(&t); *p;) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " ");
        if (!w)
            break;
        if (col + 1 + w > 79) {
            sb_puts(&c, "\n    ");
            col = 4;
        } else {
            sb_putc(&c, ' ');
            col++;
        }
        strbuf word;
        sb_init(&word);
        sb_add(&word, p, w);
        esc_py_text(&c, sb_str(&word), 1, " ");
        sb_free(&word);
        col += w;
        p += w;
    }
    sb_free(&t);
    sb_puts(&c, "\n    \"\"\"\n");
    py_call_prologue(&c, s);
    py_scalar_checks(&c, s);
    sb_add(&c, sb_str(&s->checks), s->checks.n);
    py_call_body(&c, s);
    if (entry)
        sb_puts(&c, "\n\n_call = call  # the checked call(); load() puts tilec.fast_entry's Entry in front of it\n");
    py_bench_main(&c, s);
    int bad = s->failed || c.failed || mod.failed || s->steps.failed || s->checks.failed || s->scalars.failed ||
              s->values.failed || s->code.failed || s->late.failed ||
              tilec_emit_write(e, pyname, sb_str(&c), c.n);
    sb_free(&c);
    sb_free(&mod);
    sb_free(&s->steps);
    sb_free(&s->scalars);
    sb_free(&s->values);
    sb_free(&s->code);
    sb_free(&s->late);
    sb_free(&s->lists);
    for (size_t i = 0; i < s->nslotkeys; i++)
        free(s->slotkeys[i]);
    free(s->slotkeys);
    strset_free(&s->assigned);
    strset_free(&s->checked);
    strset_free(&s->slots);
    sb_free(&s->checks);
    sb_free(&s->colls);
    for (size_t i = 0; i < s->nbufs; i++)
        free(s->bufs[i].off);
    free(s->bufs);
    free(s);
    return bad ? -1 : 0;
}

const tilec_emitter tilec_emit_py_emitter = {
    TILEC_EMITTER_HEADER,
    .name = "py",
    .description = "a Python wrapper per graph (NAME.py) over the tilec package",
    .begin = py_begin,
    .hooks =
        {
            {
                {
                    .comment = h_comment,
                    .kernel_def = h_kernel_def,
                    .allocate = h_allocate,
                    .reuse = h_reuse,
                    .free_if_not_reused = h_free,
                    .free = h_free,
                    .reinterpret = h_reinterpret,
                    .kernel_call = h_kernel_call,
                    .extern_call = h_extern_call,
                    .extern_alloc = h_extern_alloc,
                    .multi_output = h_multi_output,
                    .assert_shape = h_assert_shape,
                    .assert_list = h_assert_list,
                    .make_list = h_make_list,
                    .list_of = h_list_of,
                    .collective = h_collective,
                    .loop = py_h_loop,
                    .end_loop = py_h_end_loop,
                },
            },
        },
    .end = py_end,
};
