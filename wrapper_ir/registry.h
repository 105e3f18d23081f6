/* registry.h: the emitter registry (registry.c): the emitters a context
 * knows by name, built-in and registered, and the plugins that registered
 * some. The API owns one per context and fills in the built-ins
 * (api/emitters.c); the emit driver (emit.c) only looks names up in it. */
#ifndef TILEC_WRAPPER_IR_REGISTRY_H
#define TILEC_WRAPPER_IR_REGISTRY_H

#include "tilec/emitter.h"

typedef struct wir_registry {
    const tilec_emitter *const *builtins; /* what the API gives: never freed here */
    size_t nbuiltins;
    const tilec_emitter **emitters; /* registered, in order; a name once */
    size_t nemitters;
    void **plugins; /* dlopen handles, closed with the registry */
    size_t nplugins;
    const char *loading_plugin; /* the plugin file whose register call runs, or NULL */
    int refused;                /* that call registered an emitter of another ABI */
} wir_registry;

/* The built-in "ir" emitter (print.c): the wrapper IR as text. */
extern const tilec_emitter wir_ir_emitter;

/* A registry knowing the n built-ins (which outlive it), or NULL. */
wir_registry *wir_registry_new(const tilec_emitter *const *builtins, size_t n);
/* The registry, its plugins closed (takes void *: the context's destructor). */
void wir_registry_free(void *reg);
/* Register em (replacing one of its name); the ABI check's diagnostic goes to ctx. */
tilec_status wir_registry_add(tilec_ctx *ctx, wir_registry *reg, const tilec_emitter *em);
/* The emitter called name: registered ones first, then the built-ins. */
const tilec_emitter *wir_registry_find(const wir_registry *reg, const char *name);
/* Up to cap names, built-ins first; the count written. */
size_t wir_registry_names(const wir_registry *reg, const char **names, size_t cap);
/* dlopen path and call its register function, which registers on ctx
 * (whose registry must be reg). */
tilec_status wir_registry_load_plugin(tilec_ctx *ctx, wir_registry *reg, const char *path);

#endif
