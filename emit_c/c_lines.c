/* c_lines.c: the statements of NAME_run, one handler per wrapper IR line
 * kind: allocations, reuses and views, frees, kernel launches (with the
 * debug printer), extern calls. Sizes go through the size block (c_sizes.c). */
#include <string.h>

#include "dsl/diag.h"
#include "emit_c/c_internal.h"
#include "parser/module.h"
#include "util/escape.h"

/* "{s_R, tl_z0}": the sizes of line l's tensor, its bytes checked in the size block */
static void c_dims(cstate *s, strbuf *b, const tilec_wir_line *l)
{
    csz_tensor(&s->sz, b, l->name, dt_enum(l->dtype), l->dtype, l->rank, l->sizes, l->size_exprs);
}

/* tl_alloc(M, &b_NAME, "NAME", dtype, rank, {sizes}) */
static void c_alloc(cstate *s, const tilec_wir_line *l)
{
    sb_printf(&s->body, "    if (tl_alloc(M, &%s, \"%s\", %s, %u, (const int64_t[])", B(l->name), l->name,
              dt_enum(l->dtype), l->rank);
    c_dims(s, &s->body, l);
    sb_puts(&s->body, ", &tl_live, err, errlen))\n        goto tl_out;\n");
    sb_printf(&s->decls, "    tilec_tensor %s = {0};\n", B(l->name));
}

int c_line_comment(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    c_comment(&s->body, "    ", l->text);
    return 0;
}

int c_line_kernel_def(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    sb_printf(&s->body, "    /* kernel %s: %u variant%s, built by %s_load */\n", l->name, l->nvariants,
              l->nvariants == 1 ? "" : "s", sb_str(&s->graph));
    return 0;
}

/* zeros, ones, full: the value after the allocation or reuse */
static void c_fill(cstate *s, const tilec_wir_line *l)
{
    if (!l->fill)
        return;
    cg_fill(s, l->name, B(l->name), l->dtype, l->rank, l->fill_bits);
    sb_printf(&s->body, "if (tl_fill(M, &%s, 0x%llxULL, %u, \"%s\", err, errlen)) /* %s */\n        goto tl_out;\n",
              B(l->name), (unsigned long long)l->fill_bits, tilec_dtype_size(l->dtype), l->name, l->fill);
}

int c_line_allocate(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    sb_printf(&s->body, "    /* alloc %s: %s, ", l->name, tilec_dtype_name(l->dtype));
    esc_c_comment(&s->body, l->bytes);
    sb_puts(&s->body, " bytes */\n");
    c_alloc(s, l);
    c_fill(s, l);
    return 0;
}

int c_line_reuse(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    sb_printf(&s->decls, "    tilec_tensor %s = {0};\n", B(l->name));
    sb_printf(&s->body, "    /* reuse: %s takes the storage of %s */\n", l->name, l->from);
    sb_printf(&s->body, "    tl_shape(&%s, %s.data, %s, %u, (const int64_t[])", B(l->name), B(l->from), dt_enum(l->dtype),
              l->rank);
    c_dims(s, &s->body, l);
    sb_puts(&s->body, ");\n");
    c_fill(s, l);
    return 0;
}

int c_line_free(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    if (tilec_wir_is_output(s->w, l->name))
        return 0;
    sb_printf(&s->body, "    tl_release(M, &tl_live, %s.data); /* %s */\n", B(l->name), l->name);
    return 0;
}

/* A slice (a REINTERPRET with start, stop and rows: issue 35) is checked
 * 0 <= start <= stop <= rows before its view is made, with an error naming
 * the graph, the line and the values. */
static void c_slice_check(cstate *s, const tilec_wir_line *l)
{
    if (l->nargs != 3)
        return;
    strbuf v[3];
    static const char *const what[] = {"the start of a slice", "the stop of a slice", "the rows of a sliced tensor"};
    for (int i = 0; i < 3; i++) {
        sb_init(&v[i]);
        csz_use(&s->sz, &v[i], l->args[i].text, l->args[i].expr, what[i]);
    }
    const char *a = sb_str(&v[0]), *b = sb_str(&v[1]), *n = sb_str(&v[2]);
    strbuf t[2]; /* the bounds as written (T % 128 ...), inside the message's format */
    for (int i = 0; i < 2; i++) {
        sb_init(&t[i]);
        esc_c_format(&t[i], l->args[i].text);
    }
    sb_printf(&s->body, "    if (%s < 0 || %s < %s || %s < %s) {\n", a, b, a, n, b);
    sb_printf(&s->body,
              "        tl_fail(err, errlen, \"%s: line %u: slice %s = %s[%s:%s] is out of bounds: start %%lld, stop "
              "%%lld, and '%s' has %%lld rows\", (long long)%s, (long long)%s, (long long)%s);\n        goto tl_out;\n    }\n",
              s->g->name, l->loc.line, l->name, l->from, sb_str(&t[0]), sb_str(&t[1]), l->from, a, b, n);
    for (int i = 0; i < 3; i++) {
        s->failed |= v[i].failed | (i < 2 && t[i].failed);
        sb_free(&v[i]);
        if (i < 2)
            sb_free(&t[i]);
    }
}

/* A view of one tensor of a list, view(xs[i], T[...]) (a REINTERPRET whose
 * one ITEM arg is xs[i]): checked 0 <= i < xs->n and that tensor i has the
 * view's bytes (its elements times its list's element size), then a tensor
 * at its address. */
static int c_item_view(cstate *s, const tilec_wir_line *l)
{
    const tilec_wir_arg *a = &l->args[0];
    const char *br = a->text ? strchr(a->text, '[') : NULL;
    if (!br || !l->bytes_expr || !l->from)
        return 1;
    strbuf L, n, ty, E;
    sb_init(&L);
    sb_init(&n);
    sb_init(&ty);
    sb_printf(&ty, "%s[", tilec_dtype_name(l->dtype)); /* ty and E: inside the messages' formats */
    for (uint32_t d = 0; d < l->rank; d++) {
        sb_puts(&ty, d ? ", " : "");
        esc_c_format(&ty, l->sizes[d]);
    }
    sb_putc(&ty, ']');
    sb_init(&E);
    esc_c_format(&E, a->text);
    mg_c(&L, MG_C_LIST, a->text, (size_t)(br - a->text));
    sb_printf(&s->decls, "    tilec_tensor %s = {0};\n", B(l->name));
    sb_printf(&s->body, "    { /* view: %s of %s */\n", l->name, a->text);
    if (c_item_check(s, a, 0, l->loc.line)) {
        sb_free(&L);
        sb_free(&n);
        sb_free(&ty);
        sb_free(&E);
        return 1;
    }
    char what[300];
    snprintf(what, sizeof what, "the bytes of view %.250s", l->name);
    csz_use(&s->sz, &n, l->bytes, l->bytes_expr, what);
    unsigned es = 0;
    for (size_t i = 0; i < tilec_wir_line_count(s->w) && !es; i++) { /* the list's element size */
        const tilec_wir_line *x = tilec_wir_line_at(s->w, i);
        if ((x->kind == TILEC_WIR_ASSERT_LIST || x->kind == TILEC_WIR_MAKE_LIST || x->kind == TILEC_WIR_LIST_OF) &&
            x->name && strlen(x->name) == (size_t)(br - a->text) && !strncmp(x->name, a->text, (size_t)(br - a->text)))
            es = tilec_dtype_size(x->dtype);
    }
    if (!es) {
        sb_free(&L);
        sb_free(&n);
        sb_free(&ty);
        sb_free(&E);
        return 1;
    }
    sb_printf(&s->body,
              "        if (%s->numels[tl_i0] > INT64_MAX / %u || %s->numels[tl_i0] * %u != %s) {\n"
              "            tl_fail(err, errlen, \"%s: line %u: view %s of %s (%%lld elements, %%lld bytes) as %s (%%lld "
              "bytes) changes its size\", (long long)%s->numels[tl_i0], (long long)(%s->numels[tl_i0] * %u), "
              "(long long)%s);\n"
              "            goto tl_out;\n        }\n",
              sb_str(&L), es, sb_str(&L), es, sb_str(&n), s->g->name, l->loc.line, l->name, sb_str(&E),
              sb_str(&ty), sb_str(&L), sb_str(&L), es, sb_str(&n));
    if (tilec_dtype_size(l->dtype) > es) /* a wider element than the list's */
        sb_printf(&s->body,
                  "        if (tl_item0 %% %u) {\n"
                  "            tl_fail(err, errlen, \"%s: line %u: view %s of %s at address 0x%%llx is not aligned to %u bytes "
                  "(%s)\", (unsigned long long)tl_item0);\n"
                  "            goto tl_out;\n        }\n",
                  tilec_dtype_size(l->dtype), s->g->name, l->loc.line, l->name, sb_str(&E), tilec_dtype_size(l->dtype),
                  sb_str(&ty));
    sb_printf(&s->body, "        tl_shape(&%s, tl_item0, %s, %u, (const int64_t[])", B(l->name), dt_enum(l->dtype), l->rank);
    c_dims(s, &s->body, l);
    sb_puts(&s->body, ");\n    }\n");
    s->failed |= L.failed | n.failed | ty.failed | E.failed;
    sb_free(&L);
    sb_free(&n);
    sb_free(&ty);
    sb_free(&E);
    return 0;
}

int c_line_reinterpret(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    if (l->nargs == 1 && l->args[0].kind == TILEC_WIR_ARG_ITEM) /* view(xs[i], ...) */
        return c_item_view(s, l);
    sb_printf(&s->decls, "    tilec_tensor %s = {0};\n", B(l->name));
    sb_printf(&s->body, "    /* view: %s of %s */\n", l->name, l->from);
    c_slice_check(s, l);
    sb_printf(&s->body, "    tl_shape(&%s, %s.data + (uint64_t)", B(l->name), B(l->from));
    csz_offset(&s->sz, &s->body, l->name, l->offset, l->offset_expr, tilec_dtype_size(l->dtype));
    sb_printf(&s->body, ", %s, %u, (const int64_t[])", dt_enum(l->dtype), l->rank);
    if (l->nargs == 3) { /* a slice's bytes are within its base's: its bounds check says what is wrong */
        for (uint32_t d = 0; d < l->rank; d++) {
            char what[300];
            snprintf(what, sizeof what, "dimension %u of %.250s", d, l->name);
            sb_puts(&s->body, d ? ", " : "{");
            csz_use(&s->sz, &s->body, l->sizes[d], l->size_exprs[d], what);
        }
        sb_puts(&s->body, "}");
    } else {
        c_dims(s, &s->body, l);
    }
    sb_puts(&s->body, ");\n");
    return 0;
}

int c_line_kernel_call(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    const tilec_kernel *k = l->kernel;
    if (!k || l->nargs != k->nparams || l->nargs > 64)
        return -1;
    sb_printf(&s->body, "    { /* %s, line %u */\n", k->name, l->loc.line);
    /* sizes must fit the parameter's type: checked in the size block */
    for (uint32_t i = 0; i < l->nargs; i++)
        if (k->params[i].type.kind != TILEC_TE_POINTER && l->args[i].kind == TILEC_WIR_ARG_SIZE)
            csz_fits(&s->sz, l->args[i].text, l->args[i].expr, k->params[i].type.dtype, k->params[i].name, k->name);
    for (uint32_t i = 0; i < l->nargs; i++) /* xs[i]: checked 0 <= i < len(xs) before the launch */
        if (l->args[i].kind == TILEC_WIR_ARG_ITEM && c_item_check(s, &l->args[i], i, l->loc.line))
            return -1;
    sb_printf(&s->body, "        tilec_rt_arg a[%u] = {", l->nargs ? l->nargs : 1);
    for (uint32_t i = 0; i < l->nargs; i++) {
        const tilec_param *p = &k->params[i];
        const tilec_wir_arg *a = &l->args[i];
        sb_puts(&s->body, i ? ", " : "");
        if (p->type.kind == TILEC_TE_POINTER && a->kind == TILEC_WIR_ARG_ITEM) { /* its address, checked above */
            sb_printf(&s->body, "{.ptr = tl_item%u}", i);
            continue;
        }
        if (p->type.kind == TILEC_TE_POINTER) {
            sb_printf(&s->body, "{.ptr = %s.data}", B(a->text));
            continue;
        }
        if (p->type.kind == TILEC_TE_LIST) { /* the caller's list: the launch packs it (and splits a long one) */
            sb_printf(&s->body, "{.list = %s}", cn(s, MG_C_LIST, a->text));
            continue;
        }
        const char *f = c_arg_field(p->type.dtype);
        sb_printf(&s->body, "{.%s = (%s)(", f, c_scalar_type(p->type.dtype));
        if (a->kind == TILEC_WIR_ARG_SCALAR) {
            const char *t = a->text;
            if (!strcmp(t, "true") || !strcmp(t, "false"))
                sb_puts(&s->body, t[0] == 't' ? "1" : "0");
            else if (strstr(t, "inf"))
                sb_printf(&s->body, "%sINFINITY", t[0] == '-' ? "-" : "");
            else if ((t[0] >= 'a' && t[0] <= 'z') || (t[0] >= 'A' && t[0] <= 'Z') || t[0] == '_')
                sb_puts(&s->body, cn(s, MG_C_SCALAR, t));
            else
                sb_puts(&s->body, t);
        } else {
            strbuf what;
            sb_init(&what);
            sb_printf(&what, "argument '%s' of %s", p->name, k->name);
            csz_use(&s->sz, &s->body, a->text, a->expr, sb_str(&what));
            s->failed |= what.failed;
            sb_free(&what);
        }
        sb_puts(&s->body, ")}");
    }
    sb_puts(&s->body, "};\n");
    /* the debug printer: one branch when off */
    uint32_t nt = 0;
    for (uint32_t i = 0; i < l->nargs; i++) /* the buffers the call names (a list's tensor, xs[i], is the caller's) */
        nt += k->params[i].type.kind == TILEC_TE_POINTER && l->args[i].kind == TILEC_WIR_ARG_BUFFER;
    sb_puts(&s->body, "        tilec_rt_status st;\n");
    cg_kernel(s, k, l->nargs, l->nvariants > 1);
    sb_puts(&s->body, "if (M->dbg.level) {\n");
    sb_printf(&s->body, "            const tl_dbg_arg da[%u] = {", nt ? nt : 1);
    for (uint32_t i = 0, j = 0; i < l->nargs; i++) {
        if (k->params[i].type.kind != TILEC_TE_POINTER || l->args[i].kind != TILEC_WIR_ARG_BUFFER)
            continue;
        sb_puts(&s->body, j++ ? ", {" : "{");
        esc_c_string(&s->body, k->params[i].name, strlen(k->params[i].name));
        sb_puts(&s->body, ", ");
        esc_c_string(&s->body, l->args[i].text, strlen(l->args[i].text));
        sb_printf(&s->body, ", &%s}", B(l->args[i].text));
    }
    sb_printf(&s->body, "%s};\n            st = tl_dbg_launch(&M->dbg, M->rt, M->prog, ", nt ? "" : "{0}");
    esc_c_string(&s->body, s->g->name, strlen(s->g->name));
    sb_puts(&s->body, ", ");
    esc_c_string(&s->body, k->name, strlen(k->name));
    sb_puts(&s->body, ", ");
    esc_c_string(&s->body, l->grid ? l->grid : "", l->grid ? strlen(l->grid) : 0);
    sb_printf(&s->body, ", %d, a, %u, da, %u);\n        } else\n", l->nvariants > 1, l->nargs, nt);
    if (l->nvariants > 1)
        sb_printf(&s->body, "            st = tilec_program_launch_best(M->prog, \"%s\", a, %u, NULL, NULL);\n",
                  k->name, l->nargs);
    else
        sb_printf(&s->body, "            st = tilec_program_launch(M->prog, \"%s\", 0, a, %u, NULL);\n",
                  k->name, l->nargs);
    sb_printf(&s->body,
              "        if (st != TILEC_RT_OK) {\n"
              "            tl_fail(err, errlen, \"%s: launch of %s failed: %%s\", tilec_rt_last_error(M->rt));\n"
              "            goto tl_out;\n"
              "        }\n    }\n",
              s->g->name, k->name);
    return 0;
}

/* externs: inputs are the argument buffers; outputs the given list */
static void c_extern(cstate *s, const tilec_wir_line *l, const char *const *outs, uint32_t nouts)
{
    if (tilec_wir_is_wait(l)) /* the graph's stream waits for a collective's end */
        sb_printf(&s->body, "    { /* wait for collective %s (of %s)%s%s, line %u */\n", l->name, l->from,
                  *l->text ? ", overlapped with: " : "", l->text, l->loc.line);
    else {
        sb_printf(&s->body, "    { /* extern %s \"", l->name);
        esc_c_comment(&s->body, l->symbol); /* the parser allows [A-Za-z0-9_.] only: escaped all the same */
        sb_printf(&s->body, "\", line %u */\n", l->loc.line);
    }
    sb_printf(&s->body, "        const tilec_tensor in[%u] = {", l->nargs ? l->nargs : 1);
    for (uint32_t i = 0; i < l->nargs; i++)
        sb_printf(&s->body, "%s%s", i ? ", " : "", B(l->args[i].text));
    sb_printf(&s->body, "%s};\n", l->nargs ? "" : "{0}");
    sb_printf(&s->body, "        tilec_tensor out[%u] = {", nouts ? nouts : 1);
    for (uint32_t i = 0; i < nouts; i++)
        sb_printf(&s->body, "%s%s", i ? ", " : "", B(outs[i]));
    sb_printf(&s->body, "%s};\n", nouts ? "" : "{0}");
    cg_extern(s, l, outs, nouts);
    sb_puts(&s->body, "if (tilec_externs_call(M->ext, ");
    esc_c_string(&s->body, l->symbol, strlen(l->symbol));
    sb_printf(&s->body, ", M->rt, NULL, in, %u, out, %u) != TILEC_RT_OK) {\n", l->nargs, nouts);
    sb_printf(&s->body, "            tl_fail(err, errlen, \"%s: %%s\", tilec_externs_last_error(M->ext));\n"
                        "            goto tl_out;\n        }\n    }\n",
              s->g->name);
}

int c_line_extern_call(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    c_extern(s, l, l->outs, l->nouts);
    return 0;
}

int c_line_extern_alloc(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    const tilec_wir_line *res[64]; /* the result, or each of a tuple */
    const char *outs[64];
    size_t n = tilec_wir_extern_results(s->w, l, res, 64);
    if (!n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        c_alloc(s, res[i]);
        outs[i] = res[i]->name;
    }
    c_extern(s, l, outs, (uint32_t)n);
    return 0;
}

int c_line_multi_output(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    sb_printf(&s->body, "    /* %s is result %u of %s */\n", l->name, l->index, l->from);
    return 0;
}

/* A collective: its result allocated, then an extern call of the line's
 * symbol ("tilec:coll:NAME"), which NAME_set_comm registered on the
 * module's registry (tilec_comm_register_async, with its wait's symbol:
 * the collective runs on the communication stream, and its wait line, an
 * extern call like any other, joins it): eager and graph mode call both as
 * they call any extern. The registration is remembered for NAME_set_comm. */
int c_line_collective(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    char what[512];
    tilec_wir_coll_where(s->w, l, what, sizeof what);
    c_comment(&s->body, "    ", what);
    sb_puts(&s->coll, l->wait ? "    if (tilec_comm_register_async(comm, M->ext, " : "    if (tilec_comm_register(comm, M->ext, ");
    esc_c_string(&s->coll, l->symbol, strlen(l->symbol));
    if (l->wait) { /* on the communication stream; its wait line joins it */
        sb_puts(&s->coll, ", ");
        esc_c_string(&s->coll, l->wait, strlen(l->wait));
    }
    static const char *const colls[] = {
#define TILEC_X(e, t) "TILEC_COLL_" #e,
        TILEC_COLLECTIVES(TILEC_X)
#undef TILEC_X
    };
    static const char *const ops[] = {
#define TILEC_X(e, t) "TILEC_REDOP_" #e,
        TILEC_REDOPS(TILEC_X)
#undef TILEC_X
    };
    sb_printf(&s->coll, ", %s, %s, %u, %lldLL, ", colls[(unsigned)l->coll % TILEC_COLL_COUNT],
              ops[(unsigned)l->redop % TILEC_REDOP_COUNT], l->index, (long long)l->root);
    esc_c_string(&s->coll, what, strlen(what));
    sb_puts(&s->coll, ", err, errlen) != TILEC_RT_OK)\n        return 1;\n");
    /* the input as the extern call's one argument, the result its output */
    tilec_wir_arg in = {.kind = TILEC_WIR_ARG_BUFFER, .text = l->from};
    tilec_wir_line x = *l;
    x.nargs = 1;
    x.args = &in;
    x.ext = NULL;
    c_alloc(s, l);
    c_extern(s, &x, &l->name, 1);
    return 0;
}
