/* diag.h: the context and its diagnostics (internal side). */
#ifndef TILEC_DSL_DIAG_H
#define TILEC_DSL_DIAG_H

#include <stdarg.h>
#include <stddef.h>

#include "tilec/core.h"

/* The text being compiled; locations point into it by line and column. */
typedef struct dsl_source {
    const char *name;
    const char *text; /* NUL-terminated; len excludes the terminator */
    size_t len;
} dsl_source;

struct tilec_ctx {
    tilec_diag *diags;
    size_t ndiags, cap;
    size_t nerrors;
    unsigned max_errors;
    int stopped; /* the error limit was reached: record nothing more */
    int nomem;   /* a diagnostic could not be stored */
    tilec_diag_fn fn;
    void *user;
    /* the context's emitter registry (wrapper_ir/registry.h), opaque here:
     * the API makes it on first use (api/emitters.c) and sets its destructor */
    void *registry;
    void (*registry_free)(void *registry);
};

/* Record a diagnostic at loc (loc may be NULL: no location). */
void diag_at(tilec_ctx *ctx, const dsl_source *src, const tilec_loc *loc, tilec_severity sev,
             const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void diag_vat(tilec_ctx *ctx, const dsl_source *src, const tilec_loc *loc, tilec_severity sev,
              const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));
/* Nonzero once the error limit stopped the run. */
int diag_stopped(const tilec_ctx *ctx);

#endif
