/* c_loop.c: a graph's for loops in the generated C (issue 35 item 4; a
 * slice's bounds check is c_lines.c's, with its view). LOOP opens a C for
 * loop whose variable is the size symbol s_NAME; every size of the lines
 * up to its END_LOOP that names the variable is computed, checked for
 * overflow and for the kernel parameter it feeds, once per iteration at
 * the top of the body (the size block runs before anything and cannot see
 * the variable). Graph mode queues the steps an iteration reaches
 * (c_graph_seq.c); a loop of a constant count within TILEC_MAX_UNROLL never gets here:
 * lowering unrolls it (docs/wrapper-ir.md, "Unrolled loops"). */
#include <string.h>

#include "emit_c/c_internal.h"

/* Compute size (text, e) at the top of the body when it names the loop
 * just opened (z->loopvars[z->nloops - 1]) and no loop opened inside it
 * (inner[0 .. ninner)), whose body computes it instead. */
static void top_size(cstate *s, const char *const *inner, uint32_t ninner, const char *text, const tilec_ix *e,
                     const char *what, tilec_dtype dt, const char *param, const char *kernel)
{
    csz *z = &s->sz;
    if (!e || !csz_in_loop(z, e, z->nloops - 1))
        return;
    csz probe = *z; /* names any of the inner loops' variables? */
    probe.nloops = 0;
    for (uint32_t i = 0; i < ninner && probe.nloops < 64; i++)
        probe.loopvars[probe.nloops++] = inner[i];
    if (csz_in_loop(&probe, e, 0))
        return;
    csz_loop_use(z, &s->body, "    ", text, e, what, dt, param, kernel);
}

static void top_sizes(cstate *s, const tilec_wir_line *from)
{
    const tilec_wir_line *first = tilec_wir_line_at(s->w, 0);
    size_t n = tilec_wir_line_count(s->w);
    const char *inner[64];
    uint32_t ninner = 0, depth = 0;
    char what[300];
    for (size_t i = (size_t)(from - first) + 1; i < n; i++) {
        const tilec_wir_line *l = tilec_wir_line_at(s->w, i);
        if (l->kind == TILEC_WIR_END_LOOP) {
            if (!depth--)
                break;
            ninner--;
            continue;
        }
        for (uint32_t d = 0; l->size_exprs && l->kind != TILEC_WIR_ASSERT_SHAPE && d < l->rank; d++) {
            snprintf(what, sizeof what, "dimension %u of %.250s", d, l->name);
            top_size(s, inner, ninner, l->sizes[d], l->size_exprs[d], what, TILEC_DT_COUNT, NULL, NULL);
        }
        if (l->kind == TILEC_WIR_REINTERPRET && l->nargs == 1 && l->args[0].kind == TILEC_WIR_ARG_ITEM &&
            l->bytes_expr) { /* view(xs[i], ...): its bytes, checked against tensor i's */
            snprintf(what, sizeof what, "the bytes of view %.250s", l->name);
            top_size(s, inner, ninner, l->bytes, l->bytes_expr, what, TILEC_DT_COUNT, NULL, NULL);
        }
        if (l->kind == TILEC_WIR_REINTERPRET && l->offset_expr) {
            strbuf t;
            sb_init(&t);
            uint32_t elem = tilec_dtype_size(l->dtype);
            csz_offset_text(&t, l->offset, elem);
            const tilec_ix size = {.op = TILEC_IX_INT, .value = elem};
            const tilec_ix times = {.op = TILEC_IX_MUL, .a = l->offset_expr, .b = &size};
            snprintf(what, sizeof what, "the offset of view %.250s", l->name);
            top_size(s, inner, ninner, sb_str(&t), &times, what, TILEC_DT_COUNT, NULL, NULL);
            s->failed |= t.failed;
            sb_free(&t);
        }
        for (uint32_t a = 0; a < l->nargs; a++) {
            const tilec_wir_arg *x = &l->args[a];
            if (x->kind == TILEC_WIR_ARG_ITEM) { /* xs[i]: its index */
                strbuf t;
                sb_init(&t);
                c_item_index(x, &t);
                snprintf(what, sizeof what, "the index of %.250s", x->text);
                top_size(s, inner, ninner, sb_str(&t), x->expr, what, TILEC_DT_COUNT, NULL, NULL);
                s->failed |= t.failed;
                sb_free(&t);
                continue;
            }
            if (x->kind != TILEC_WIR_ARG_SIZE)
                continue;
            const tilec_param *p = l->kind == TILEC_WIR_KERNEL_CALL && l->kernel && a < l->kernel->nparams
                                       ? &l->kernel->params[a]
                                       : NULL;
            snprintf(what, sizeof what, "%s %u of %.250s", p ? "argument" : "bound", a, l->name);
            top_size(s, inner, ninner, x->text, x->expr, what, p ? p->type.dtype : TILEC_DT_COUNT,
                     p ? p->name : NULL, p ? l->kernel->name : NULL);
        }
        if (l->kind == TILEC_WIR_LOOP) {
            depth++;
            if (ninner < 64)
                inner[ninner++] = l->name;
        }
    }
}

int c_line_loop(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    if (l->nargs != 3 || s->sz.nloops == 64)
        return -1;
    strbuf v, b[3];
    sb_init(&v);
    csz_symbol(&v, s->g, l->name, strlen(l->name));
    for (int i = 0; i < 3; i++) {
        sb_init(&b[i]);
        csz_use(&s->sz, &b[i], l->args[i].text, l->args[i].expr, i == 0 ? "the start of a for loop" : i == 1 ? "the end of a for loop" : "the step of a for loop");
    }
    sb_printf(&s->body, "    /* for %s in %s .. %s step %s, line %u */\n", l->name, l->args[0].text, l->args[1].text,
              l->args[2].text, l->loc.line);
    sb_printf(&s->body, "    for (int64_t %s = %s; %s < %s; %s += %s) {\n", sb_str(&v), sb_str(&b[0]), sb_str(&v),
              sb_str(&b[1]), sb_str(&v), sb_str(&b[2]));
    s->failed |= v.failed | b[0].failed | b[1].failed | b[2].failed;
    sb_free(&v);
    for (int i = 0; i < 3; i++)
        sb_free(&b[i]);
    s->sz.loop_at[s->sz.nloops] = s->body.n;
    s->sz.loopvars[s->sz.nloops++] = l->name;
    top_sizes(s, l);
    return 0;
}

int c_line_end_loop(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    if (!s->sz.nloops)
        return -1;
    /* the body, one level deeper */
    size_t at = s->sz.loop_at[s->sz.nloops - 1];
    strbuf in;
    sb_init(&in);
    for (size_t i = at; i < s->body.n; i++) {
        if (i == at || s->body.s[i - 1] == '\n')
            sb_puts(&in, "    ");
        sb_putc(&in, s->body.s[i]);
    }
    s->body.n = at;
    s->body.s[at] = 0;
    sb_add(&s->body, sb_str(&in), in.n);
    s->failed |= in.failed;
    sb_free(&in);
    csz_loop_end(&s->sz);
    sb_printf(&s->body, "    } /* for %s */\n", l->name);
    return 0;
}
