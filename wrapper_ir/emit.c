/* emit.c: the emitter registry, plugins, and the emit driver: every graph
 * lowered to wrapper IR, planned, and walked once through an emitter's
 * hooks (query.c) into the named outputs of an emit session (session.c),
 * written only when all succeeded. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "tilec/emitter.h"
#include "util/strbuf.h"
#include "wrapper_ir/session.h"
#include "wrapper_ir/wir.h"

/* ---- the built-in emitters ---- */

extern const tilec_emitter wir_ir_emitter; /* print.c */
extern const tilec_emitter tilec_emit_c_emitter;
extern const tilec_emitter tilec_emit_py_emitter;

static const tilec_emitter *builtin(const char *name)
{
    if (!strcmp(name, "ir"))
        return &wir_ir_emitter;
    if (!strcmp(name, "c"))
        return &tilec_emit_c_emitter;
    if (!strcmp(name, "py"))
        return &tilec_emit_py_emitter;
    return NULL;
}

/* ---- the registry ---- */

/* The ABI handshake: abi and size sit first in every layout, so they can
 * be read before anything else; nothing else is read on a mismatch. */
static int abi_ok(tilec_ctx *ctx, const tilec_emitter *em)
{
    if (em->abi == TILEC_EMITTER_ABI && em->size == sizeof(tilec_emitter))
        return 1;
    dsl_source src = {ctx->loading_plugin ? ctx->loading_plugin : "tilec_register_emitter", "", 0};
    diag_at(ctx, &src, NULL, TILEC_SEV_ERROR,
            "%s an emitter built for emitter ABI %u (tilec_emitter of %u bytes); this tilec has ABI %u "
            "(%zu bytes): rebuild it against this tilec's include/tilec/emitter.h",
            ctx->loading_plugin ? "the plugin registers" : "refused", em->abi, em->size, TILEC_EMITTER_ABI,
            sizeof(tilec_emitter));
    ctx->plugin_refused = 1;
    return 0;
}

tilec_status tilec_register_emitter(tilec_ctx *ctx, const tilec_emitter *em)
{
    if (!ctx || !em || !abi_ok(ctx, em) || !em->name || !em->name[0])
        return TILEC_ERR_ARG;
    for (size_t i = 0; i < ctx->nemitters; i++)
        if (!strcmp(ctx->emitters[i]->name, em->name)) {
            ctx->emitters[i] = em;
            return TILEC_OK;
        }
    const tilec_emitter **v = realloc(ctx->emitters, (ctx->nemitters + 1) * sizeof *v);
    if (!v)
        return TILEC_ERR_NOMEM;
    v[ctx->nemitters++] = em;
    ctx->emitters = (const struct tilec_emitter **)v;
    return TILEC_OK;
}

const tilec_emitter *tilec_find_emitter(tilec_ctx *ctx, const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; ctx && i < ctx->nemitters; i++)
        if (!strcmp(ctx->emitters[i]->name, name))
            return ctx->emitters[i];
    return builtin(name);
}

size_t tilec_emitter_names(tilec_ctx *ctx, const char **names, size_t cap)
{
    static const char *const built[] = {"ir", "c", "py"};
    size_t n = 0;
    if (!names)
        return 0;
    for (size_t i = 0; i < sizeof built / sizeof built[0]; i++)
        if (n < cap)
            names[n++] = built[i];
    for (size_t i = 0; ctx && i < ctx->nemitters; i++)
        if (!builtin(ctx->emitters[i]->name) && n < cap)
            names[n++] = ctx->emitters[i]->name;
    return n;
}

tilec_status tilec_load_plugin(tilec_ctx *ctx, const char *path)
{
    if (!ctx || !path)
        return TILEC_ERR_ARG;
    dsl_source src = {path, "", 0};
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        diag_at(ctx, &src, NULL, TILEC_SEV_ERROR, "cannot load the plugin: %s", why ? why : "dlopen failed");
        return TILEC_ERR_IO;
    }
    tilec_plugin_register_fn reg;
    *(void **)&reg = dlsym(h, TILEC_PLUGIN_SYMBOL);
    if (!reg) {
        diag_at(ctx, &src, NULL, TILEC_SEV_ERROR, "the plugin has no %s function", TILEC_PLUGIN_SYMBOL);
        dlclose(h);
        return TILEC_ERR_INPUT;
    }
    void **v = realloc(ctx->plugins, (ctx->nplugins + 1) * sizeof *v);
    if (!v) {
        dlclose(h);
        return TILEC_ERR_NOMEM;
    }
    ctx->plugins = v;
    ctx->plugins[ctx->nplugins++] = h; /* closed with the context */
    ctx->loading_plugin = path;
    ctx->plugin_refused = 0;
    int rc = reg(ctx);
    ctx->loading_plugin = NULL;
    if (ctx->plugin_refused) { /* the diagnostic is given; whatever it returned */
        ctx->plugin_refused = 0;
        return TILEC_ERR_INPUT;
    }
    if (rc != 0) {
        diag_at(ctx, &src, NULL, TILEC_SEV_ERROR, "the plugin's %s failed", TILEC_PLUGIN_SYMBOL);
        return TILEC_ERR_INPUT;
    }
    return TILEC_OK;
}

tilec_status tilec_module_emit(tilec_ctx *ctx, const tilec_module *m, const char *name, const tilec_emit_options *o,
                               tilec_sink sink)
{
    if (!ctx || !m || !name)
        return TILEC_ERR_ARG;
    if (o && o->dir && !o->dir[0]) { /* "" is no directory: never "/" + file */
        diag_at(ctx, &m->src, NULL, TILEC_SEV_ERROR,
                "the output directory is an empty string (use \".\" for the current directory)");
        return TILEC_ERR_ARG;
    }
    if ((!(o && o->dir) && !sink.write) || (o && o->noptions && (!o->keys || !o->values)))
        return TILEC_ERR_ARG;
    const tilec_emitter *em = tilec_find_emitter(ctx, name);
    if (!em) {
        const char *names[64];
        size_t n = tilec_emitter_names(ctx, names, 64);
        strbuf known;
        sb_init(&known);
        for (size_t i = 0; i < n; i++)
            sb_printf(&known, "%s%s", i ? ", " : "", names[i]);
        diag_at(ctx, &m->src, NULL, TILEC_SEV_ERROR, "no emitter called '%s' (known: %s)", name,
                known.failed || !known.s ? "?" : known.s);
        sb_free(&known);
        return TILEC_ERR_ARG;
    }
    tilec_emit e = {.ctx = ctx, .m = m, .o = o};
    tilec_status st = TILEC_OK;
    for (size_t i = 0; i < tilec_module_graph_count(m) && st == TILEC_OK; i++) {
        tilec_wir *w = NULL;
        st = tilec_wir_lower(ctx, m, tilec_module_graph(m, i), &w);
        if (st == TILEC_OK && (!o || o->plan))
            st = tilec_wir_plan(ctx, w);
        e.w = w;
        void *state = NULL;
        if (st == TILEC_OK && em->begin && em->begin(&e, &state)) {
            diag_at(ctx, &m->src, &tilec_wir_graph(w)->loc, TILEC_SEV_ERROR, "emitter '%s' failed to begin graph '%s'",
                    em->name, tilec_wir_graph(w)->name);
            st = TILEC_ERR_IO;
        } else if (st == TILEC_OK) {
            st = tilec_wir_dispatch(ctx, w, &em->hooks, em->name, state);
            if (em->end && em->end(&e, state) && st == TILEC_OK) {
                diag_at(ctx, &m->src, &tilec_wir_graph(w)->loc, TILEC_SEV_ERROR,
                        "emitter '%s' failed to finish graph '%s'", em->name, tilec_wir_graph(w)->name);
                st = TILEC_ERR_IO;
            }
        }
        tilec_wir_free(w);
        e.w = NULL;
    }
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
    for (size_t i = 0; st == TILEC_OK && !(o && o->dir) && i < e.nouts; i++)
        if (e.outs[i].b.n && sink.write(sink.user, e.outs[i].b.s, e.outs[i].b.n))
            st = TILEC_ERR_IO;
    emit_session_free(&e);
    return st;
}
