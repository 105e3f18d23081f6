/* registry.c: the emitter registry (registry.h): emitters by name, the
 * ABI handshake that refuses one built against another emitter.h, and
 * the plugins (shared objects) that register emitters. */
#include "wrapper_ir/registry.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"

wir_registry *wir_registry_new(const tilec_emitter *const *builtins, size_t n)
{
    wir_registry *reg = calloc(1, sizeof *reg);
    if (reg) {
        reg->builtins = builtins;
        reg->nbuiltins = n;
    }
    return reg;
}

void wir_registry_free(void *p)
{
    wir_registry *reg = p;
    if (!reg)
        return;
    free(reg->emitters);
    for (size_t i = 0; i < reg->nplugins; i++)
        dlclose(reg->plugins[i]);
    free(reg->plugins);
    free(reg);
}

/* The ABI handshake: abi and size sit first in every layout, so they can
 * be read before anything else; nothing else is read on a mismatch. */
static int abi_ok(tilec_ctx *ctx, wir_registry *reg, const tilec_emitter *em)
{
    if (em->abi == TILEC_EMITTER_ABI && em->size == sizeof(tilec_emitter))
        return 1;
    dsl_source src = {reg->loading_plugin ? reg->loading_plugin : "tilec_register_emitter", "", 0};
    diag_at(ctx, &src, NULL, TILEC_SEV_ERROR,
            "%s an emitter built for emitter ABI %u (tilec_emitter of %u bytes); this tilec has ABI %u "
            "(%zu bytes): rebuild it against this tilec's include/tilec/emitter.h",
            reg->loading_plugin ? "the plugin registers" : "refused", em->abi, em->size, TILEC_EMITTER_ABI,
            sizeof(tilec_emitter));
    reg->refused = 1;
    return 0;
}

tilec_status wir_registry_add(tilec_ctx *ctx, wir_registry *reg, const tilec_emitter *em)
{
    if (!reg || !em || !abi_ok(ctx, reg, em) || !em->name || !em->name[0])
        return TILEC_ERR_ARG;
    for (size_t i = 0; i < reg->nemitters; i++)
        if (!strcmp(reg->emitters[i]->name, em->name)) {
            reg->emitters[i] = em;
            return TILEC_OK;
        }
    const tilec_emitter **v = realloc(reg->emitters, (reg->nemitters + 1) * sizeof *v);
    if (!v)
        return TILEC_ERR_NOMEM;
    v[reg->nemitters++] = em;
    reg->emitters = v;
    return TILEC_OK;
}

static const tilec_emitter *builtin(const wir_registry *reg, const char *name)
{
    for (size_t i = 0; i < reg->nbuiltins; i++)
        if (!strcmp(reg->builtins[i]->name, name))
            return reg->builtins[i];
    return NULL;
}

const tilec_emitter *wir_registry_find(const wir_registry *reg, const char *name)
{
    if (!reg || !name)
        return NULL;
    for (size_t i = 0; i < reg->nemitters; i++)
        if (!strcmp(reg->emitters[i]->name, name))
            return reg->emitters[i];
    return builtin(reg, name);
}

size_t wir_registry_names(const wir_registry *reg, const char **names, size_t cap)
{
    size_t n = 0;
    if (!reg || !names)
        return 0;
    for (size_t i = 0; i < reg->nbuiltins; i++)
        if (n < cap)
            names[n++] = reg->builtins[i]->name;
    for (size_t i = 0; i < reg->nemitters; i++)
        if (!builtin(reg, reg->emitters[i]->name) && n < cap)
            names[n++] = reg->emitters[i]->name;
    return n;
}

tilec_status wir_registry_load_plugin(tilec_ctx *ctx, wir_registry *reg, const char *path)
{
    dsl_source src = {path, "", 0};
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        diag_at(ctx, &src, NULL, TILEC_SEV_ERROR, "cannot load the plugin: %s", why ? why : "dlopen failed");
        return TILEC_ERR_IO;
    }
    tilec_plugin_register_fn fn;
    *(void **)&fn = dlsym(h, TILEC_PLUGIN_SYMBOL);
    if (!fn) {
        diag_at(ctx, &src, NULL, TILEC_SEV_ERROR, "the plugin has no %s function", TILEC_PLUGIN_SYMBOL);
        dlclose(h);
        return TILEC_ERR_INPUT;
    }
    void **v = realloc(reg->plugins, (reg->nplugins + 1) * sizeof *v);
    if (!v) {
        dlclose(h);
        return TILEC_ERR_NOMEM;
    }
    reg->plugins = v;
    reg->plugins[reg->nplugins++] = h; /* closed with the registry */
    reg->loading_plugin = path;
    reg->refused = 0;
    int rc = fn(ctx);
    reg->loading_plugin = NULL;
    if (reg->refused) { /* the diagnostic is given; whatever it returned */
        reg->refused = 0;
        return TILEC_ERR_INPUT;
    }
    if (rc != 0) {
        diag_at(ctx, &src, NULL, TILEC_SEV_ERROR, "the plugin's %s failed", TILEC_PLUGIN_SYMBOL);
        return TILEC_ERR_INPUT;
    }
    return TILEC_OK;
}
