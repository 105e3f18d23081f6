/* emit.c: the graph pipeline (each graph lowered to wrapper IR, planned,
 * handed on: wir_each_graph, which `--emit ir` shares) and the emit
 * driver on it: the emitter looked up by name in the registry it is
 * given, each graph walked once through the emitter's hooks (query.c)
 * into the named outputs of an emit session (session.c), written only
 * when all succeeded. */
#include "wrapper_ir/emit.h"

#include <string.h>

#include "dsl/diag.h"
#include "util/strbuf.h"
#include "wrapper_ir/wir.h"

tilec_status wir_each_graph(tilec_ctx *ctx, const tilec_module *m, int plan, wir_graph_fn before, wir_graph_fn fn,
                            void *user)
{
    tilec_status st = TILEC_OK;
    for (size_t i = 0; i < tilec_module_graph_count(m) && st == TILEC_OK; i++) {
        tilec_wir *w = NULL;
        st = tilec_wir_lower(ctx, m, tilec_module_graph(m, i), &w);
        if (st == TILEC_OK && before)
            st = before(user, w, i);
        if (st == TILEC_OK && plan)
            st = tilec_wir_plan(ctx, w);
        if (st == TILEC_OK)
            st = fn(user, w, i);
        tilec_wir_free(w);
    }
    return st;
}

/* One graph through the emitter: begin, its hooks, end. */
typedef struct emit_pass {
    tilec_emit *e;
    const tilec_emitter *em;
} emit_pass;

static tilec_status emit_graph(void *user, tilec_wir *w, size_t index)
{
    (void)index;
    emit_pass *p = user;
    tilec_emit *e = p->e;
    const tilec_emitter *em = p->em;
    tilec_status st = TILEC_OK;
    e->w = w;
    void *state = NULL;
    if (em->begin && em->begin(e, &state)) {
        diag_at(e->ctx, &e->m->src, &tilec_wir_graph(w)->loc, TILEC_SEV_ERROR,
                "emitter '%s' failed to begin graph '%s'", em->name, tilec_wir_graph(w)->name);
        st = TILEC_ERR_IO;
    } else {
        st = tilec_wir_dispatch(e->ctx, w, &em->hooks, em->name, state);
        if (em->end && em->end(e, state) && st == TILEC_OK) {
            diag_at(e->ctx, &e->m->src, &tilec_wir_graph(w)->loc, TILEC_SEV_ERROR,
                    "emitter '%s' failed to finish graph '%s'", em->name, tilec_wir_graph(w)->name);
            st = TILEC_ERR_IO;
        }
    }
    e->w = NULL;
    return st;
}

tilec_status wir_emit_module(tilec_ctx *ctx, const wir_registry *reg, wir_compile_fn compile, const tilec_module *m,
                             const char *name, const tilec_emit_options *o, tilec_sink sink, tilec_emit_output_fn fn,
                             void *user)
{
    if (!ctx || !m || !name)
        return TILEC_ERR_ARG;
    if (o && o->dir && !o->dir[0]) { /* "" is no directory: never "/" + file */
        diag_at(ctx, &m->src, NULL, TILEC_SEV_ERROR,
                "the output directory is an empty string (use \".\" for the current directory)");
        return TILEC_ERR_ARG;
    }
    if ((!(o && o->dir) && !sink.write && !fn) || (o && o->noptions && (!o->keys || !o->values)))
        return TILEC_ERR_ARG;
    const tilec_emitter *em = wir_registry_find(reg, name);
    if (!em) {
        const char *names[64];
        size_t n = wir_registry_names(reg, names, 64);
        strbuf known;
        sb_init(&known);
        for (size_t i = 0; i < n; i++)
            sb_printf(&known, "%s%s", i ? ", " : "", names[i]);
        diag_at(ctx, &m->src, NULL, TILEC_SEV_ERROR, "no emitter called '%s' (known: %s)", name,
                known.failed || !known.s ? "?" : known.s);
        sb_free(&known);
        return TILEC_ERR_ARG;
    }
    tilec_emit e = {.ctx = ctx, .m = m, .o = o, .compile = compile};
    emit_pass pass = {&e, em};
    tilec_status st = wir_each_graph(ctx, m, !o || o->plan, NULL, emit_graph, &pass);
    if (st == TILEC_OK && e.failed) {
        if (e.has_bad)
            diag_at(ctx, &m->src, NULL, TILEC_SEV_ERROR,
                    "emitter '%s' wrote to a bad output name '%s' (a plain file name: no '/', not starting with '.')",
                    em->name, e.bad);
        else
            diag_at(ctx, &m->src, NULL, TILEC_SEV_ERROR, "emitter '%s' ran out of memory", em->name);
        st = TILEC_ERR_IO;
    }
    for (size_t i = 0; st == TILEC_OK && i < e.nouts; i++)
        if (e.outs[i].b.failed)
            st = TILEC_ERR_NOMEM;
    if (st == TILEC_OK && o && o->dir)
        st = emit_session_write_dir(ctx, &e, o->dir);
    for (size_t i = 0; st == TILEC_OK && !(o && o->dir) && fn && i < e.nouts; i++)
        if (fn(user, e.outs[i].file, e.outs[i].b.s ? e.outs[i].b.s : "", e.outs[i].b.n))
            st = TILEC_ERR_IO;
    for (size_t i = 0; st == TILEC_OK && !(o && o->dir) && !fn && i < e.nouts; i++)
        if (e.outs[i].b.n && sink.write(sink.user, e.outs[i].b.s, e.outs[i].b.n))
            st = TILEC_ERR_IO;
    emit_session_free(&e);
    return st;
}
