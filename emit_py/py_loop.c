/* py_loop.c: a graph's for loops in the Python wrapper (issue 35 item 4).
 * The plan's steps are cut into parts at ("loop", VAR) and ("end_loop",
 * VAR) markers (tilec.Graph makes one native plan per part); call() runs
 * them from Python for loops over the loop's range, as the C wrapper does:
 * every size that names a loop variable is computed at the top of the
 * innermost loop whose variable it names, the checks that name one (a
 * slice's bounds, a kernel argument's range, a tensor's shape) are made at
 * their line in every iteration, before the part that follows them runs,
 * and the buffers the body allocates are taken at their line and given
 * back at the end of each iteration (tilec's CallContext.temp and free),
 * so the memory of n iterations is that of one. */
#include <stdlib.h>
#include <string.h>

#include "emit_py/py_internal.h"
#include "util/mangle.h"

/* text's lines, each indented `levels` more */
static void indent_into(strbuf *b, const char *text, uint32_t levels)
{
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        for (uint32_t i = 0; i < levels && n; i++)
            sb_puts(b, "    ");
        sb_add(b, p, n);
        p += n;
        if (*p == '\n') {
            sb_putc(b, '\n');
            p++;
        }
    }
}

void py_code(pystate *s, const char *text) { indent_into(&s->code, text, s->depth); }

static int ix_names(const tilec_ix *e, const char *name)
{
    if (!e)
        return 0;
    if (e->op == TILEC_IX_SYM)
        return !strcmp(e->name, name);
    return ix_names(e->a, name) || ix_names(e->b, name);
}

/* The innermost open loop whose variable e names, or -1 */
static int loop_of(const pystate *s, const tilec_ix *e)
{
    for (uint32_t k = s->depth; k-- > 0;)
        if (ix_names(e, s->loopvars[k]))
            return (int)k;
    return -1;
}

int py_in_loop(const pystate *s, const tilec_ix *e) { return s->depth && loop_of(s, e) >= 0; }

int py_loop_slot(pystate *s, size_t j, const tilec_ix *e)
{
    int k = s->depth ? loop_of(s, e) : -1;
    if (k < 0)
        return 0;
    char key[64];
    snprintf(key, sizeof key, "%zu %u", j, s->loopid[k]);
    if (!strset_add(&s->assigned, key))
        return 1;
    strbuf line, in;
    sb_init(&line);
    sb_init(&in);
    sb_printf(&line, "    _vals[%zu] = ", j);
    py_size(&line, s->g, e);
    sb_puts(&line, "\n");
    indent_into(&in, sb_str(&line), (uint32_t)k + 1);
    /* at the top of loop k's body: the loops inside it move down */
    size_t at = s->loop_at[k];
    strbuf rest;
    sb_init(&rest);
    sb_add(&rest, s->code.s + at, s->code.n - at);
    s->code.n = at;
    s->code.s[at] = 0;
    sb_add(&s->code, sb_str(&in), in.n);
    sb_add(&s->code, sb_str(&rest), rest.n);
    for (uint32_t m = (uint32_t)k + 1; m < s->depth; m++)
        s->loop_at[m] += in.n;
    s->failed |= line.failed | in.failed | rest.failed | s->assigned.failed;
    sb_free(&line);
    sb_free(&in);
    sb_free(&rest);
    return 1;
}

void py_loop_buf(pystate *s, size_t i)
{
    pybuf *b = &s->bufs[i];
    b->inloop = (int)s->depth;
    strbuf t;
    sb_init(&t);
    if (b->root == (int)i && !b->given) { /* memory of its own, this iteration's */
        sb_puts(&t, "    ");
        py_name(&t, b->l->name);
        sb_puts(&t, ", ");
        mg_py_helper(&t, b->l->name, strlen(b->l->name), "p");
        sb_puts(&t, " = _c.temp(");
        if (b->l->bytes)
            py_size(&t, s->g, b->l->bytes_expr);
        else
            sb_puts(&t, "0");
        sb_puts(&t, ")\n");
    }
    sb_printf(&t, "    _ptrs[%zu] = ", i);
    py_buf_ptr(s, i, &t);
    sb_puts(&t, "\n");
    py_code(s, sb_str(&t));
    s->failed |= t.failed;
    sb_free(&t);
}

/* The run of the current part where it has steps; the next part begins. */
static void run_part(pystate *s)
{
    if (s->nsteps > s->part_first) {
        strbuf t;
        sb_init(&t);
        sb_printf(&t, "    _g.run_part(%u, (*_ptrs, *_vals), _c.stream)\n", s->part);
        py_code(s, sb_str(&t));
        s->failed |= t.failed;
        sb_free(&t);
    }
    s->part++;
    s->part_first = s->nsteps;
}

int py_h_loop(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    if (l->nargs != 3 || s->depth == 64)
        return -1;
    run_part(s);
    sb_puts(&s->steps, "    (\"loop\", ");
    py_str(&s->steps, l->name);
    sb_puts(&s->steps, "),\n");
    strbuf t;
    sb_init(&t);
    sb_printf(&t, "    # for %s in %s .. %s step %s, line %u\n    for ", l->name, l->args[0].text, l->args[1].text,
              l->args[2].text, l->loc.line);
    mg_py_helper(&t, l->name, strlen(l->name), "s");
    sb_puts(&t, " in range(");
    for (int i = 0; i < 3; i++) {
        sb_puts(&t, i ? ", " : "");
        py_size(&t, s->g, l->args[i].expr);
    }
    sb_puts(&t, "):\n");
    py_code(s, sb_str(&t));
    s->failed |= t.failed;
    sb_free(&t);
    s->loopvars[s->depth] = l->name;
    s->loopid[s->depth] = s->nloops++;
    s->loop_at[s->depth++] = s->code.n;
    return 0;
}

int py_h_end_loop(void *u, const tilec_wir_line *l)
{
    pystate *s = u;
    if (!s->depth)
        return -1;
    run_part(s);
    /* the body's own buffers go back: the next iteration takes them again;
     * the names are dropped too, so that the next iteration's temp() does
     * not allocate while this one's tensors are still referenced (torch's
     * allocator frees a tensor when its last reference goes: without the
     * del, a loop's peak held two iterations' buffers) */
    strbuf t, names;
    sb_init(&t);
    sb_init(&names);
    for (size_t i = 0; i < s->nbufs; i++) {
        pybuf *b = &s->bufs[i];
        if (b->inloop != (int)s->depth || b->root != (int)i)
            continue;
        b->inloop = -1;
        if (b->given) /* a caller's tensor: nothing to give back */
            continue;
        sb_puts(&names, names.n ? ", " : "");
        py_name(&names, b->l->name);
    }
    if (names.n) {
        sb_puts(&t, "    _c.free(");
        sb_puts(&t, sb_str(&names));
        sb_puts(&t, ")\n    del ");
        sb_puts(&t, sb_str(&names));
        sb_puts(&t, "\n");
    }
    t.failed |= names.failed;
    sb_free(&names);
    if (s->code.n == s->loop_at[s->depth - 1])
        sb_puts(&t, t.n ? "" : "    pass\n");
    py_code(s, sb_str(&t));
    s->failed |= t.failed;
    sb_free(&t);
    s->depth--;
    sb_puts(&s->steps, "    (\"end_loop\", ");
    py_str(&s->steps, l->name);
    sb_puts(&s->steps, "),\n");
    return 0;
}

void py_loop_run(strbuf *c, pystate *s)
{
    run_part(s);
    sb_puts(c, "    _ptrs = [");
    for (size_t i = 0; i < s->nbufs; i++) {
        sb_puts(c, i ? ", " : "");
        if (s->bufs[i].inloop)
            sb_puts(c, "0");
        else
            py_buf_ptr(s, i, c);
    }
    sb_printf(c, "]  # the tensors' addresses (0: set in a loop)\n    _vals = [%s]  # sizes and scalars\n",
              s->values.n ? sb_str(&s->values) + 2 : "");
    sb_add(c, sb_str(&s->code), s->code.n);
}
/* A plan value for size t (text) with expression e: an integer constant,
 * or the slot "$t" (made on first use, its value e as Python; a scalar
 * parameter by name where there is no expression). */
void py_size_ref(pystate *s, strbuf *b, const char *t, const tilec_ix *e, const char *kind)
{
    size_t nd = strspn(t, "0123456789");
    if (nd && nd == strlen(t) && nd <= 18) {
        sb_puts(b, t);
        return;
    }
    strbuf name;
    sb_init(&name);
    sb_printf(&name, "$%s", t);
    py_str(b, sb_str(&name));
    int inl = s->loops && e && py_in_loop(s, e); /* set in the loop's body */
    if (strset_add(&s->slots, sb_str(&name))) {
        sb_puts(&s->scalars, "    (");
        py_str(&s->scalars, t);
        sb_printf(&s->scalars, ", \"%s\"),\n", kind);
        sb_puts(&s->values, ", ");
        if (inl)
            sb_puts(&s->values, "0");
        else if (!strcmp(kind, "list")) { /* its TensorList's tilec_rt_list (py_assert_list) */
            mg_py_helper(&s->values, t, strlen(t), "list");
            sb_puts(&s->values, ".address");
        } else if (!strcmp(kind, "float") || !e)
            py_name(&s->values, t);
        else
            py_size(&s->values, s->g, e);
        if (s->loops) { /* the slot's index, for py_loop_slot */
            char **k = s->nslotkeys == s->capslotkeys
                           ? realloc(s->slotkeys, (s->capslotkeys = s->capslotkeys ? 2 * s->capslotkeys : 16) *
                                                      sizeof *k)
                           : s->slotkeys;
            char *key = strdup(sb_str(&name));
            if (!k || !key) {
                free(key);
                s->failed = 1;
            } else {
                s->slotkeys = k;
                s->slotkeys[s->nslotkeys++] = key;
            }
        }
    }
    for (size_t j = s->nslotkeys; inl && j-- > 0;)
        if (!strcmp(s->slotkeys[j], sb_str(&name))) {
            py_loop_slot(s, j, e);
            break;
        }
    s->failed |= name.failed || s->slots.failed;
    sb_free(&name);
}
