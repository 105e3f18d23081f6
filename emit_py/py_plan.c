/* py_plan.c: the launch plan of a graph's Python wrapper as data
 * (_TENSORS, _SCALARS, _STEPS, _INPUTS), the workspace that backs its
 * intermediates, and the body of call() that allocates and runs the plan
 * with one native call (emit_py.c collects the buffers and slots). */
#include <stdlib.h>
#include <string.h>

#include "emit_py/py_internal.h"
#include "tilec/types.h"
#include "util/mangle.h"

/* ---- the plan and the body of call() ---- */

/* _TENSORS, _SCALARS, _STEPS and _INPUTS: the launch plan as data */
void py_plan(strbuf *c, pystate *s)
{
    strbuf tensors;
    sb_init(&tensors);
    for (size_t i = 0; i < s->nbufs; i++) {
        const tilec_wir_line *l = s->bufs[i].l;
        sb_puts(&tensors, "    (");
        py_str(&tensors, l->name);
        sb_printf(&tensors, ", \"%s\", (", tilec_dtype_name(l->dtype));
        for (uint32_t d = 0; d < l->rank; d++) {
            sb_puts(&tensors, d ? ", " : "");
            py_size_ref(s, &tensors, l->sizes[d], l->size_exprs ? l->size_exprs[d] : NULL, "int");
        }
        sb_puts(&tensors, l->rank == 1 ? ",)),\n" : ")),\n");
    }
    sb_puts(c, "# The launch plan, made once by load() (tilec.Graph): tensor slots (name,\n"
               "# dtype, shape), size and scalar slots (\"$NAME\" in the steps), and the\n"
               "# steps, kernel launches (name, variant or -1 for the fastest per shape,\n"
               "# arguments), extern calls (symbol, inputs, outputs) and fills (tensor,\n"
               "# element bit pattern: zeros, ones, full).\n_TENSORS = (\n");
    sb_add(c, sb_str(&tensors), tensors.n);
    sb_puts(c, ")\n_SCALARS = (\n");
    sb_add(c, sb_str(&s->scalars), s->scalars.n);
    sb_puts(c, ")\n_STEPS = (\n");
    sb_add(c, sb_str(&s->steps), s->steps.n);
    sb_puts(c, ")\n_INPUTS = (");
    int n = 0;
    for (size_t i = 0; i < s->nbufs; i++)
        if (s->bufs[i].input) {
            sb_puts(c, n++ ? ", " : "");
            py_str(c, s->bufs[i].l->name);
        }
    sb_puts(c, n == 1 ? ",)\n\n" : ")\n\n");
    s->failed |= tensors.failed;
    sb_free(&tensors);
}

/* The memory of the roots that back no output: one workspace, each root
 * at the sum of the (aligned) sizes before it; sizes spelled once each. */
static void py_workspace(strbuf *c, pystate *s)
{
    const char *texts[64];
    size_t counts[64], nt = 0, nroots = 0;
    strbuf total, lines;
    sb_init(&total);
    sb_init(&lines);
    for (size_t i = 0; i < s->nbufs; i++) {
        const pybuf *b = &s->bufs[i];
        if (b->input || b->root != (int)i || b->standalone || b->inloop || b->given)
            continue; /* a loop's body takes its own per iteration (py_loop.c) */
        const char *bytes = b->l->bytes ? b->l->bytes : "0";
        size_t k = 0;
        while (k < nt && strcmp(texts[k], bytes))
            k++;
        if (k == nt) {
            if (nt == 64) {
                s->failed = 1;
                break;
            }
            texts[nt] = bytes;
            counts[nt++] = 0;
            sb_printf(c, "    _ws%zu = tilec.aligned(", k);
            if (b->l->bytes)
                py_size(c, s->g, b->l->bytes_expr);
            else
                sb_puts(c, "0");
            sb_puts(c, ")\n");
        }
        sb_puts(&lines, "    ");
        mg_py_helper(&lines, b->l->name, strlen(b->l->name), "p");
        sb_puts(&lines, " = _wsp");
        for (size_t j = 0; j < nt; j++)
            if (counts[j])
                sb_printf(&lines, counts[j] > 1 ? " + %zu * _ws%zu" : " + _ws%zu", counts[j] > 1 ? counts[j] : j, j);
        sb_putc(&lines, '\n');
        counts[k]++;
        nroots++;
    }
    if (nroots) {
        for (size_t j = 0; j < nt; j++)
            sb_printf(&total, counts[j] > 1 ? "%s%zu * _ws%zu" : "%s_ws%zu", j ? " + " : "",
                      counts[j] > 1 ? counts[j] : j, j);
        sb_printf(c, "    _ws, _wsp = _c.workspace(%s)  # the intermediates\n", sb_str(&total));
        sb_add(c, sb_str(&lines), lines.n);
    }
    s->failed |= total.failed | lines.failed;
    sb_free(&total);
    sb_free(&lines);
}

/* Is b its root's memory with the root's dtype and shape (a reuse)? */
static int same_as_root(pystate *s, const pybuf *b)
{
    const pybuf *r = &s->bufs[b->root];
    if (b->off[0] || r->input || b->l->dtype != r->l->dtype)
        return 0;
    strbuf x, y;
    sb_init(&x);
    sb_init(&y);
    py_shape(&x, s->g, b->l);
    py_shape(&y, s->g, r->l);
    int same = !strcmp(sb_str(&x), sb_str(&y));
    s->failed |= x.failed | y.failed;
    sb_free(&x);
    sb_free(&y);
    return same;
}

/* Is every output a root of its own (not an input, a view or another
 * output's memory)? Then a call's allocations are its outputs, in order. */
static int py_outputs_are_roots(pystate *s)
{
    size_t nout = tilec_wir_output_count(s->w);
    for (size_t i = 0; i < nout; i++) {
        const char *o = tilec_wir_output(s->w, i);
        int b = buf_find(s, o);
        if (b < 0 || tilec_wir_is_input(s->w, o) || s->bufs[b].input ||
            !(s->bufs[b].root == b || same_as_root(s, &s->bufs[b])))
            return 0;
        for (size_t j = 0; j < i; j++) {
            int bj = buf_find(s, tilec_wir_output(s->w, j));
            if (bj >= 0 && s->bufs[bj].root == s->bufs[b].root)
                return 0;
        }
    }
    return nout > 0;
}

int py_call_cacheable(pystate *s)
{
    size_t nout = tilec_wir_output_count(s->w);
    /* a root that backs an output is allocated apart: the output is it, or a view of it */
    for (size_t i = 0; i < nout; i++) {
        int b = buf_find(s, tilec_wir_output(s->w, i));
        if (b >= 0 && !s->bufs[s->bufs[b].root].input)
            s->bufs[s->bufs[b].root].standalone = 1;
    }
    int inputs = 0;
    for (size_t i = 0; i < s->nbufs; i++)
        inputs |= s->bufs[i].input;
    /* a Recipe is one run of one plan, keyed by its tensors' shapes: none of a tensor list's */
    s->cacheable = inputs && !s->loops && !s->first_list && !s->late_items && py_outputs_are_roots(s);
    return s->cacheable;
}

void py_call_kinds(strbuf *c, const pystate *s)
{
    for (uint32_t i = 0; i < s->g->nparams; i++) {
        const tilec_tyexpr *t = &s->g->params[i].type;
        sb_putc(c, t->kind == TILEC_TE_TENSOR ? 't' : tilec_dtype_class(t->dtype) == 'f' ? 'f' : 'i');
    }
}

void py_call_prologue(strbuf *c, pystate *s)
{
    py_call_cacheable(s);
    strbuf infos, notnone, key, args, tail, lines;
    sb_init(&infos);
    sb_init(&notnone);
    sb_init(&key);
    sb_init(&args);
    sb_init(&tail);
    sb_init(&lines);
    for (size_t i = 0; i < s->nbufs; i++) {
        if (!s->bufs[i].input)
            continue;
        const char *n = s->bufs[i].l->name;
        sb_puts(&lines, "    ");
        mg_py_helper(&lines, n, strlen(n), "info");
        sb_puts(&lines, " = tilec.tensor_info(");
        py_name(&lines, n);
        sb_puts(&lines, ")\n");
        sb_puts(&args, args.n ? ", " : "");
        py_name(&args, n);
        sb_puts(&notnone, " and ");
        mg_py_helper(&notnone, n, strlen(n), "info");
        sb_puts(&notnone, " is not None");
        sb_puts(&infos, infos.n ? ", " : "");
        mg_py_helper(&infos, n, strlen(n), "info");
        sb_puts(&key, key.n ? ", " : "");
        mg_py_helper(&key, n, strlen(n), "info");
        sb_puts(&key, ".key");
    }
    int scalars = 0;
    for (uint32_t i = 0; i < s->g->nparams && s->cacheable; i++) { /* the scalars and their types */
        if (s->g->params[i].type.kind == TILEC_TE_TENSOR)
            continue;
        scalars = 1;
        sb_puts(&tail, ", ");
        py_name(&tail, s->g->params[i].name);
        sb_puts(&tail, ", type(");
        py_name(&tail, s->g->params[i].name);
        sb_puts(&tail, ")");
        if (tilec_dtype_class(s->g->params[i].type.dtype) == 'f') { /* -0.0 == 0.0, but not as a kernel's operand */
            sb_puts(&tail, ", str(");
            py_name(&tail, s->g->params[i].name);
            sb_puts(&tail, ")");
        }
    }
    sb_add(&key, sb_str(&tail), tail.n);
    if (s->cacheable) /* a known key's recipe run by the extension, before any Python work */
        sb_printf(c, "    if stream is None and _fast is not None:\n"
                     "        _o = _fast(_recipes, (%s,), (%s%s))\n"
                     "        if _o is not None:\n            return _o\n",
                  sb_str(&args), tail.n ? sb_str(&tail) + 2 : "", tail.n ? "," : "");
    sb_add(c, sb_str(&lines), lines.n);
    if (s->cacheable) {
        sb_printf(c, "    _key = None\n    if stream is None%s:  # the checks and sizes of a known key are done\n"
                     "        _key = (%s,)\n",
                  sb_str(&notnone), sb_str(&key));
        if (scalars)
            sb_puts(c, "        try:\n            _r = _recipes.get(_key)\n"
                       "        except TypeError:  # an unhashable scalar: the checks say what is wrong with it\n"
                       "            _r = _key = None\n");
        else
            sb_puts(c, "        _r = _recipes.get(_key)\n");
        sb_printf(c, "        if _r is not None:\n            return _r.run((%s,))\n", sb_str(&infos));
    }
    s->failed |= infos.failed | notnone.failed | key.failed | args.failed | tail.failed | lines.failed;
    sb_free(&infos);
    sb_free(&notnone);
    sb_free(&key);
    sb_free(&args);
    sb_free(&tail);
    sb_free(&lines);
}

/* call()'s work after its checks: the graph for the inputs' device, the
 * outputs and the workspace, one run of the plan, the outputs returned. */
void py_call_body(strbuf *c, pystate *s)
{
    size_t nout = tilec_wir_output_count(s->w);
    strbuf infos;
    sb_init(&infos);
    const char *first = NULL;
    for (size_t i = 0; i < s->nbufs; i++)
        if (s->bufs[i].input) {
            first = first ? first : s->bufs[i].l->name;
            sb_puts(&infos, first != s->bufs[i].l->name ? ", " : "");
            mg_py_helper(&infos, s->bufs[i].l->name, strlen(s->bufs[i].l->name), "info");
        }
    if (first) {
        strbuf fi;
        sb_init(&fi);
        mg_py_helper(&fi, first, strlen(first), "info");
        sb_printf(c, "    _g = _graphs.get(%s.device or 0) or load(%s.device)\n", sb_str(&fi), sb_str(&fi));
        sb_free(&fi);
    } else if (s->first_list) { /* the device of the first list's tensors */
        strbuf fl;
        sb_init(&fl);
        mg_py_helper(&fl, s->first_list, strlen(s->first_list), "list");
        sb_printf(c, "    _g = _graphs.get(%s.device_index) or load(%s.device_index)\n", sb_str(&fl), sb_str(&fl));
        s->failed |= fl.failed;
        sb_free(&fl);
    } else {
        sb_puts(c, "    _g = _graphs.get(0) or load()\n");
    }
    sb_printf(c, "    _c = _g.begin((%s%s), stream%s", sb_str(&infos), first ? "," : "",
              s->cacheable ? ", _recipes, _key" : "");
    if (s->lists.n) /* on the graph's device; torch's stream and allocator for torch tensors */
        sb_printf(c, ", lists=(%s)", sb_str(&s->lists));
    sb_puts(c, ")\n");
    sb_free(&infos);
    for (size_t k = 0; k < nout; k++) { /* in the outputs' order (a Recipe's allocations are its outputs) */
        int o = buf_find(s, tilec_wir_output(s->w, k));
        int seen = o < 0 || !s->bufs[s->bufs[o].root].standalone;
        for (size_t j = 0; j < k && !seen; j++) {
            int oj = buf_find(s, tilec_wir_output(s->w, j));
            seen = oj >= 0 && s->bufs[oj].root == s->bufs[o].root;
        }
        if (seen)
            continue;
        const pybuf *b = &s->bufs[s->bufs[o].root];
        sb_puts(c, "    ");
        py_name(c, b->l->name);
        sb_puts(c, ", ");
        mg_py_helper(c, b->l->name, strlen(b->l->name), "p");
        sb_puts(c, " = _c.alloc(");
        py_shape(c, s->g, b->l);
        sb_printf(c, ", \"%s\")\n", tilec_dtype_name(b->l->dtype));
    }
    py_workspace(c, s);
    if (s->loops) { /* the plan in parts, from Python loops */
        py_loop_run(c, s);
    } else {
        sb_add(c, sb_str(&s->code), s->code.n); /* the lists of the graph's tensors (h_list_of) */
        sb_puts(c, "    _g.run((");
        for (size_t i = 0; i < s->nbufs; i++) {
            sb_puts(c, i ? ", " : "");
            py_buf_ptr(s, i, c);
        }
        sb_puts(c, s->nbufs ? sb_str(&s->values) : sb_str(&s->values) + (s->values.n ? 2 : 0));
        sb_puts(c, ",), _c.stream)\n");
    }
    sb_puts(c, "    _c.done()\n");
    /* the outputs: an input's copy, a root, or a view of one */
    strbuf ret;
    sb_init(&ret);
    for (size_t i = 0; i < nout; i++) {
        const char *o = tilec_wir_output(s->w, i);
        int bi = buf_find(s, o);
        sb_puts(&ret, i ? ", " : "");
        if (tilec_wir_is_input(s->w, o)) {
            sb_printf(c, "    # %s is an input: the output is a copy\n    ", o);
            mg_py_helper(c, o, strlen(o), "copy");
            sb_puts(c, " = _c.copy(");
            py_name(c, o);
            sb_puts(c, ", ");
            mg_py_helper(c, o, strlen(o), "info");
            sb_puts(c, ")\n");
            mg_py_helper(&ret, o, strlen(o), "copy");
        } else if (bi >= 0 && (s->bufs[bi].root == bi || same_as_root(s, &s->bufs[bi]))) {
            py_name(&ret, s->bufs[s->bufs[bi].root].l->name);
        } else if (bi >= 0) {
            const pybuf *b = &s->bufs[bi], *r = &s->bufs[b->root];
            sb_puts(&ret, "_c.view(");
            py_name(&ret, r->l->name);
            sb_printf(&ret, ", %s, ", b->off[0] ? b->off : "0");
            py_shape(&ret, s->g, b->l);
            sb_printf(&ret, ", \"%s\")", tilec_dtype_name(b->l->dtype));
        } else {
            s->failed = 1;
        }
    }
    sb_printf(c, "    return %s\n", sb_str(&ret));
    s->failed |= ret.failed;
    sb_free(&ret);
}
