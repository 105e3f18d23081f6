/* c_inputs.c: the arguments of NAME_run and the checks of its inputs:
 * the parameter list, and per ASSERT_SHAPE line the checks of an input
 * descriptor (dtype, rank, sizes, contiguity) that bind its size symbols. */
#include <string.h>

#include "emit_c/c_internal.h"

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
