/* emit_c.c: the "c" emitter. Each graph becomes NAME.h and NAME.c, which
 * compile with `cc -std=c11 -Wall -Werror -Iinclude` and link with
 * -ltilec. The .tile source is embedded as a string: NAME_load builds its
 * kernels through the runtime (the kernel cache makes that a file read
 * once warm); with the option "aot" (`--aot sm_90`) the CUBINs compiled
 * now are embedded instead, with their launch metadata and grids as C,
 * and NAME_load only loads them (tilec_program_load); NAME_run checks the input descriptors, allocates, launches
 * (variants through the multi-kernel), calls externs, and hands back the
 * outputs. TILEC_DEBUG_PRINT (read by NAME_load) turns on the debug
 * printer around every launch. Built with -DTILEC_BENCH_MAIN the .c file is a benchmark:
 * `./NAME R=4096 C=1024` runs the graph on random inputs and times it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "emit_c/c_internal.h"
#include "emit_c/emit_c.h"
#include "tilec/lower.h"
#include "util/escape.h"

static int c_begin(tilec_emit *e, void **state)
{
    cstate *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    s->e = e;
    s->w = tilec_emit_wir(e);
    s->g = tilec_emit_graph(e);
    sb_init(&s->body);
    sb_init(&s->decls);
    sb_init(&s->graph);
    sb_init(&s->gtypes);
    sb_init(&s->gnames);
    sb_init(&s->gsteps);
    sb_init(&s->gxt);
    sb_init(&s->granges);
    sb_init(&s->coll);
    for (size_t i = 0; i < tilec_wir_line_count(s->w); i++) /* a kept loop: graph mode queues the steps */
        s->loops |= tilec_wir_line_at(s->w, i)->kind == TILEC_WIR_LOOP;
    for (int i = 0; i < 8; i++)
        sb_init(&s->names[i]);
    mg_c_graph(&s->graph, s->g->name);
    csz_init(&s->sz, s->g);
    if (tilec_wir_has_collectives(s->w)) { /* world: the communicator's size, bound first */
        const char *G = s->g->name, *n = sb_str(&s->graph);
        sb_printf(&s->body,
                  "    if (!M->comm)\n        return tl_fail(err, errlen, \"%s: the graph has collectives: give the module a \"\n"
                  "                                        \"communicator with %s_set_comm first\");\n",
                  G, n);
        sb_printf(&s->body, "    const int64_t %s __attribute__((unused)) = tilec_comm_world(M->comm);\n",
                  cn(s, MG_C_SYMBOL, "world"));
        s->inputs_end = s->body.n;
    }
    *state = s;
    return 0;
}

/* NAME_run: the declarations, the input checks, the size block, the
 * statements, and the outputs handed over (a copy where an output is an
 * input); on failure all its memory goes back. */
static void c_run(cstate *s, strbuf *c, const char *params)
{
    const tilec_graph *g = s->g;
    const char *n = sb_str(&s->graph);
    size_t nout = tilec_wir_output_count(s->w);
    sb_printf(c, "int %s_run(%s_module *M%s", n, n, params);
    for (size_t i = 0; i < nout; i++)
        sb_printf(c, ", tilec_tensor *%s", cn(s, MG_C_OUTPUT, tilec_wir_output(s->w, i)));
    sb_puts(c, ", char *err, size_t errlen)\n{\n    int tl_rc = 1;\n    tl_mem tl_live = {.n = 0};\n");
    cg_decls(s, c);
    sb_add(c, sb_str(&s->decls), s->decls.n);
    for (uint32_t i = 0; i < g->nparams; i++) /* a scalar no kernel takes is not a warning */
        if (g->params[i].type.kind != TILEC_TE_TENSOR)
            sb_printf(c, "    (void)%s;\n", cn(s, g->params[i].type.kind == TILEC_TE_LIST ? MG_C_LIST : MG_C_SCALAR,
                                             g->params[i].name));
    sb_add(c, sb_str(&s->body), s->inputs_end);
    sb_add(c, sb_str(&s->sz.checks), s->sz.checks.n);
    sb_add(c, sb_str(&s->body) + s->inputs_end, s->body.n - s->inputs_end);
    cg_run(s, c);
    for (size_t i = 0; i < nout; i++) {
        const char *o = tilec_wir_output(s->w, i);
        if (tilec_wir_is_input(s->w, o)) /* the caller owns its input: it gets a copy it may free */
            sb_printf(c,
                      "    { /* %s is an input: the output is a copy */\n"
                      "        const tilec_tensor tl_in = %s;\n"
                      "        if (tl_alloc(M, &%s, \"%s\", tl_in.dtype, tl_in.rank, tl_in.sizes, &tl_live, err, errlen))\n"
                      "            goto tl_out;\n"
                      "        uint64_t tl_n = 0; /* checked with the inputs */\n"
                      "        (void)tl_bytes(tl_in.dtype, tl_in.rank, tl_in.sizes, &tl_n);\n"
                      "        if (tl_n && tilec_rt_memcpy_dtod(M->rt, %s.data, tl_in.data, tl_n) != TILEC_RT_OK) {\n"
                      "            tl_fail(err, errlen, \"%s: cannot copy %s: %%s\", tilec_rt_last_error(M->rt));\n"
                      "            goto tl_out;\n        }\n    }\n",
                      o, B(o), B(o), o, B(o), g->name, o);
        sb_printf(c, "    *%s = %s;\n", cn(s, MG_C_OUTPUT, o), B(o));
    }
    sb_puts(c, "    tl_live.n = 0; /* the outputs now belong to the caller */\n    tl_rc = 0;\ntl_out:\n");
    cg_seq_out(s, c);
    sb_puts(c, "    if (tl_rc) { /* a failed call gives all its memory back, and the spares */\n"
               "        tilec_rt_synchronize(M->rt);\n"
               "        for (int i = 0; i < tl_live.n; i++)\n            tilec_rt_free(M->rt, tl_live.p[i]);\n"
               "        tl_trim(M);\n    }\n"
               "    return tl_rc;\n}\n");
}

static int c_end(tilec_emit *e, void *state)
{
    cstate *s = state;
    const tilec_graph *g = s->g;
    const tilec_module *m = tilec_emit_module(e);
    const char *n = sb_str(&s->graph), *file = tilec_module_file(m);
    char hname[300], cname[300];
    snprintf(hname, sizeof hname, "%.250s.h", n);
    snprintf(cname, sizeof cname, "%.250s.c", n);
    const char *aot = tilec_emit_option(e, "aot");

    /* ---- NAME.h ---- */
    strbuf h, params;
    sb_init(&h);
    sb_init(&params);
    c_params(&params, g);
    c_header(s, &h, file, aot, sb_str(&params));

    /* ---- NAME.c ---- */
    strbuf c;
    sb_init(&c);
    sb_printf(&c, "/* Generated by tilec %s from ", tilec_version());
    esc_c_comment(&c, file);
    sb_putc(&c, '\n');
    sb_printf(&c, "   graph %s: do not edit. */\n#include \"%s\"\n#include \"tilec/plan.h\"\n\n", n, hname);
    sb_puts(&c, c_prologue);
    sb_puts(&c, csz_prelude);
    sb_puts(&c, c_debug_prelude);
    strbuf fileq; /* the file name as a C string literal: it may hold any bytes */
    sb_init(&fileq);
    esc_c_string(&fileq, file, strlen(file));
    int aot_bad = 0;
    if (!aot && tilec_emit_option(e, "choices")) {
        diag_at(tilec_emit_ctx(e), NULL, NULL, TILEC_SEV_ERROR,
                "the option choices (--choices) embeds tuned choices in an --aot wrapper: it needs the option aot");
        aot_bad = 1;
    } else if (aot) {
        aot_bad = c_aot_kernels(e, &c, aot, &s->aot_choices);
    } else {
        sb_puts(&c, "/* the .tile module, built at load time */\nstatic const char tl_source[] =\n    ");
        size_t srclen = 0;
        const char *src = tilec_module_source(m, &srclen);
        esc_c_string(&c, src, srclen);
        sb_puts(&c, ";\n\n");
    }
    c_module_funcs(s, &c, aot, sb_str(&fileq));
    c_comm_funcs(s, &c);
    strbuf run;
    sb_init(&run);
    c_run(s, &run, sb_str(&params)); /* first: it may find the graph has no graph mode */
    cg_funcs(s, &c);
    sb_add(&c, sb_str(&run), run.n);

    c_bench_main(&c, s);
    int bad = aot_bad || run.failed || s->gtypes.failed || s->gnames.failed || s->gsteps.failed || s->gxt.failed || s->granges.failed || s->coll.failed || s->failed || s->sz.failed || s->sz.checks.failed || h.failed || c.failed || fileq.failed || s->body.failed || s->decls.failed ||
              tilec_emit_write(e, hname, sb_str(&h), h.n) || tilec_emit_write(e, cname, sb_str(&c), c.n);
    sb_free(&h);
    sb_free(&c);
    sb_free(&params);
    sb_free(&fileq);
    sb_free(&run);
    sb_free(&s->gtypes);
    sb_free(&s->gnames);
    sb_free(&s->gsteps);
    sb_free(&s->gxt);
    sb_free(&s->granges);
    sb_free(&s->coll);
    sb_free(&s->body);
    csz_free(&s->sz);
    sb_free(&s->decls);
    sb_free(&s->graph);
    for (int i = 0; i < 8; i++)
        sb_free(&s->names[i]);
    free(s);
    return bad ? -1 : 0;
}

const tilec_emitter tilec_emit_c_emitter = {
    TILEC_EMITTER_HEADER,
    .name = "c",
    .description = "a C wrapper per graph (NAME.c, NAME.h) over libtilec",
    .begin = c_begin,
    .hooks =
        {
            {
                {
                    .comment = c_line_comment,
                    .kernel_def = c_line_kernel_def,
                    .allocate = c_line_allocate,
                    .reuse = c_line_reuse,
                    .free_if_not_reused = c_line_free,
                    .free = c_line_free,
                    .reinterpret = c_line_reinterpret,
                    .kernel_call = c_line_kernel_call,
                    .extern_call = c_line_extern_call,
                    .extern_alloc = c_line_extern_alloc,
                    .multi_output = c_line_multi_output,
                    .assert_shape = c_line_assert_shape,
                    .assert_list = c_line_assert_list,
                    .make_list = c_line_make_list,
                    .list_of = c_line_list_of,
                    .collective = c_line_collective,
                    .loop = c_line_loop,
                    .end_loop = c_line_end_loop,
                },
            },
        },
    .end = c_end,
};
