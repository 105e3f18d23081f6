/* c_inputs.c: the arguments of NAME_run and the checks of its inputs:
 * the parameter list, and per ASSERT_SHAPE line the checks of an input
 * descriptor (dtype, rank, sizes, contiguity) that bind its size symbols. */
#include <string.h>

#include "emit_c/c_internal.h"
#include "util/escape.h"

/* ", const tilec_tensor *t_x, float p_eps" */
void c_params(strbuf *b, const tilec_graph *g)
{
    for (uint32_t i = 0; i < g->nparams; i++) {
        const tilec_param *p = &g->params[i];
        if (p->type.kind == TILEC_TE_LIST) { /* the runtime's form: n tensors, their addresses, their counts */
            sb_puts(b, ", const tilec_rt_list *");
            mg_c(b, MG_C_LIST, p->name, strlen(p->name));
            continue;
        }
        int tensor = p->type.kind == TILEC_TE_TENSOR;
        sb_printf(b, ", %s%s", tensor ? "const tilec_tensor *" : c_scalar_type(p->type.dtype), tensor ? "" : " ");
        mg_c(b, tensor ? MG_C_TENSOR : MG_C_SCALAR, p->name, strlen(p->name));
    }
}

int c_line_assert_shape(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    strbuf *b = &s->body, t;
    sb_init(&t); /* the parameter: spelled once, cn() spells others meanwhile */
    mg_c(&t, MG_C_TENSOR, l->name, strlen(l->name));
    const char *T = sb_str(&t), *G = s->g->name;
    /* an input no kernel reads is still checked: not a warning */
    sb_printf(&s->decls, "    tilec_tensor %s __attribute__((unused)) = {0};\n", B(l->name));
    sb_printf(b, "    if (!%s || %s->dtype != %s || %s->rank != %u)\n", T, T, dt_enum(l->dtype), T, l->rank);
    sb_printf(b, "        return tl_fail(err, errlen, \"%s: %s must be a %s tensor of rank %u\");\n", G, l->name,
              tilec_dtype_name(l->dtype), l->rank);
    sb_printf(b, "    if (tl_bytes(%s->dtype, %u, %s->sizes, NULL))\n"
                 "        return tl_fail(err, errlen, \"%s: %s has a negative dimension or more than 2^63 - 1 bytes\");\n",
              T, l->rank, T, G, l->name);
    for (uint32_t d = 0; d < l->rank; d++) {
        if (l->binds && l->binds[d]) {
            sb_printf(b, "    const int64_t %s __attribute__((unused)) = %s->sizes[%u];\n",
                      cn(s, MG_C_SYMBOL, l->sizes[d]), T, d);
        } else {
            sb_printf(b, "    if (%s->sizes[%u] != (", T, d);
            c_dim(b, s->g, l->size_exprs[d]);
            sb_printf(b, "))\n        return tl_fail(err, errlen, \"%s: dimension %u of %s is %%lld, but %s is %%lld\", "
                         "(long long)%s->sizes[%u], (long long)(",
                      G, d, l->name, l->sizes[d], T, d);
            c_dim(b, s->g, l->size_exprs[d]);
            sb_puts(b, "));\n");
        }
    }
    sb_printf(b, "    if (!tl_contiguous(%s))\n        return tl_fail(err, errlen, \"%s: %s must be contiguous (row-major)\");\n",
              T, G, l->name);
    sb_printf(b, "    %s = *%s;\n", B(l->name), T); /* only once checked: it may be NULL */
    s->failed |= t.failed;
    sb_free(&t);
    s->inputs_end = b->n;
    return 0;
}

/* ASSERT_LIST: a tensor list parameter, the caller's tilec_rt_list: not
 * NULL, and each tensor a count >= 0 at an address aligned to its element
 * (not NULL where it has elements). Lists passed to one kernel must have
 * as many tensors: the launch checks that (tilec_program_launch). */
int c_line_assert_list(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    strbuf *b = &s->body, t;
    sb_init(&t);
    mg_c(&t, MG_C_LIST, l->name, strlen(l->name));
    const char *T = sb_str(&t), *G = s->g->name;
    unsigned es = tilec_dtype_size(l->dtype);
    sb_printf(b, "    if (!%s || (%s->n && (!%s->ptrs || !%s->numels)))\n"
                 "        return tl_fail(err, errlen, \"%s: %s must be a tensor list of %s: a tilec_rt_list of n tensors, "
                 "their addresses and element counts\");\n",
              T, T, T, T, G, l->name, tilec_dtype_name(l->dtype));
    sb_printf(b, "    for (uint32_t tl_i = 0; tl_i < %s->n; tl_i++)\n"
                 "        if (%s->numels[tl_i] < 0 || (%s->numels[tl_i] && !%s->ptrs[tl_i]) || %s->ptrs[tl_i] %% %u)\n"
                 "            return tl_fail(err, errlen, \"%s: tensor %%u of list %s has %%lld elements at address 0x%%llx "
                 "(a count >= 0, at an address aligned to %u bytes)\", tl_i, (long long)%s->numels[tl_i], "
                 "(unsigned long long)%s->ptrs[tl_i]);\n",
              T, T, T, T, T, es, G, l->name, es, T, T);
    s->failed |= t.failed;
    sb_free(&t);
    s->inputs_end = b->n;
    return 0;
}

/* MAKE_LIST: a sub-list from[a:b] of a tensor list of the graph, a
 * tilec_rt_list of NAME_run's own (declared at its top, so that graph mode,
 * which runs the plan at the end of the call, still reads it there)
 * pointing into the arrays of `from` (the caller's, or a list NAME_run
 * made), checked 0 <= a <= b <= from->n where the line stands. In a for
 * loop kept as a loop every iteration makes it anew: graph mode queues a
 * copy of the list with each step (c_graph_seq.c, tl_q_list). */
int c_line_make_list(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    if (l->nargs < 1 || l->nargs > 2 || !l->from)
        return 1;
    strbuf L, F, v[2];
    sb_init(&L);
    sb_init(&F);
    mg_c(&L, MG_C_LIST, l->name, strlen(l->name));
    mg_c(&F, MG_C_LIST, l->from, strlen(l->from));
    const char *Ln = sb_str(&L), *Fn = sb_str(&F);
    sb_printf(&s->decls, "    tilec_rt_list %s_v = {0}; /* sub-list %s[%s:%s] */\n"
                         "    const tilec_rt_list *%s = &%s_v;\n",
              Ln, l->from, l->args[0].text, l->nargs > 1 ? l->args[1].text : "", Ln, Ln);
    static const char *const what[] = {"the start of a sub-list", "the stop of a sub-list"};
    strbuf E[2]; /* the bounds as written, inside the message's format */
    for (uint32_t i = 0; i < 2; i++) {
        sb_init(&E[i]);
        if (i < l->nargs)
            esc_c_format(&E[i], l->args[i].text);
        sb_init(&v[i]);
        if (i < l->nargs)
            csz_use(&s->sz, &v[i], l->args[i].text, l->args[i].expr, what[i]);
        else
            sb_printf(&v[i], "(int64_t)%s->n", Fn);
    }
    sb_printf(&s->body,
              "    { /* sub-list %s = %s[%s:%s], line %u */\n"
              "        const int64_t tl_a = %s, tl_b = %s;\n"
              "        if (tl_a < 0 || tl_b < tl_a || tl_b > (int64_t)%s->n) {\n"
              "            tl_fail(err, errlen, \"%s: line %u: sub-list %s[%s:%s] is out of bounds: start %%lld, stop %%lld, "
              "and '%s' has %%u tensors\", (long long)tl_a, (long long)tl_b, %s->n);\n"
              "            goto tl_out;\n        }\n"
              "        %s_v.n = (uint32_t)(tl_b - tl_a);\n"
              "        %s_v.ptrs = %s->ptrs ? %s->ptrs + tl_a : NULL;\n"
              "        %s_v.numels = %s->numels ? %s->numels + tl_a : NULL;\n    }\n",
              l->name, l->from, l->args[0].text, l->nargs > 1 ? l->args[1].text : "", l->loc.line, sb_str(&v[0]),
              sb_str(&v[1]), Fn, s->g->name, l->loc.line, l->from, sb_str(&E[0]), sb_str(&E[1]), l->from, Fn, Ln, Ln,
              Fn, Fn, Ln, Fn, Fn);
    s->failed |= L.failed | F.failed | v[0].failed | v[1].failed | E[0].failed | E[1].failed;
    sb_free(&E[0]);
    sb_free(&E[1]);
    sb_free(&L);
    sb_free(&F);
    sb_free(&v[0]);
    sb_free(&v[1]);
    return 0;
}

/* LIST_OF: a list [a, b, c] of the graph's tensors, a tilec_rt_list of
 * NAME_run's own with its arrays (declared at its top, as a sub-list's),
 * filled where the line stands from the tensors' addresses and element
 * counts (each tensor of the graph is contiguous, its sizes checked when it
 * was taken or made, so the product fits). */
int c_line_list_of(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    if (!l->nargs)
        return 1;
    strbuf L, t;
    sb_init(&L);
    sb_init(&t);
    mg_c(&L, MG_C_LIST, l->name, strlen(l->name));
    const char *Ln = sb_str(&L);
    for (uint32_t i = 0; i < l->nargs; i++)
        sb_printf(&t, "%s%s", i ? ", " : "", l->args[i].text);
    sb_printf(&s->decls, "    uint64_t %s_p[%u] = {0}; /* list %s = [%s] */\n"
                         "    int64_t %s_n[%u] = {0};\n"
                         "    const tilec_rt_list %s_v = {%u, %s_p, %s_n};\n"
                         "    const tilec_rt_list *%s = &%s_v;\n",
              Ln, l->nargs, l->name, sb_str(&t), Ln, l->nargs, Ln, l->nargs, Ln, Ln, Ln, Ln);
    sb_printf(&s->body, "    { /* list %s = [%s], line %u */\n        const tilec_tensor *tl_t[%u] = {", l->name,
              sb_str(&t), l->loc.line, l->nargs);
    for (uint32_t i = 0; i < l->nargs; i++)
        sb_printf(&s->body, "%s&%s", i ? ", " : "", B(l->args[i].text));
    sb_printf(&s->body, "};\n"
                        "        for (uint32_t tl_i = 0; tl_i < %u; tl_i++) {\n"
                        "            int64_t tl_e = 1;\n"
                        "            for (uint32_t tl_d = 0; tl_d < tl_t[tl_i]->rank; tl_d++)\n"
                        "                tl_e *= tl_t[tl_i]->sizes[tl_d];\n"
                        "            %s_p[tl_i] = tl_t[tl_i]->data;\n"
                        "            %s_n[tl_i] = tl_e;\n"
                        "        }\n    }\n",
              l->nargs, Ln, Ln);
    s->failed |= L.failed | t.failed;
    sb_free(&L);
    sb_free(&t);
    return 0;
}

void c_item_index(const tilec_wir_arg *a, strbuf *b)
{
    const char *br = a->text ? strchr(a->text, '[') : NULL;
    size_t n = br ? strlen(br + 1) : 0;
    if (n)
        sb_add(b, br + 1, n - 1);
}

/* An ITEM argument xs[i] (argument `argno` of a kernel call at `line`):
 * its address into tl_item<argno> after the check 0 <= i < xs->n, which
 * fails the call before the launch with the index and the length. 0, or
 * 1 when the argument is malformed. */
int c_item_check(cstate *s, const tilec_wir_arg *a, uint32_t argno, unsigned line)
{
    const char *br = a->text ? strchr(a->text, '[') : NULL;
    if (!br || !a->expr)
        return 1;
    strbuf L, v, what;
    sb_init(&L);
    sb_init(&v);
    sb_init(&what);
    mg_c(&L, MG_C_LIST, a->text, (size_t)(br - a->text));
    sb_printf(&what, "the index of %s", a->text);
    strbuf it;
    sb_init(&it);
    c_item_index(a, &it);
    csz_use(&s->sz, &v, sb_str(&it), a->expr, sb_str(&what));
    s->failed |= it.failed;
    sb_free(&it);
    strbuf E; /* xs[i % n] as written, inside the message's format */
    sb_init(&E);
    esc_c_format(&E, a->text);
    sb_printf(&s->body,
              "        const int64_t tl_i%u = %s;\n"
              "        if (tl_i%u < 0 || tl_i%u >= (int64_t)%s->n) {\n"
              "            tl_fail(err, errlen, \"%s: line %u: %s is out of bounds: index %%lld, and '%.*s' has %%u "
              "tensors\", (long long)tl_i%u, %s->n);\n"
              "            goto tl_out;\n        }\n"
              "        const uint64_t tl_item%u = %s->ptrs[tl_i%u];\n",
              argno, sb_str(&v), argno, argno, sb_str(&L), s->g->name, line, sb_str(&E), (int)(br - a->text), a->text,
              argno, sb_str(&L), argno, sb_str(&L), argno);
    s->failed |= L.failed | v.failed | what.failed | E.failed;
    sb_free(&E);
    sb_free(&L);
    sb_free(&v);
    sb_free(&what);
    return 0;
}
