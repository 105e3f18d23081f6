/* tilec.h: the public API of the tilec front end: contexts, diagnostics,
 * sinks, and parsing + checking a .tile file into a module.
 *
 * Arguments, for every function of include/tilec/: a NULL pointer where an
 * object is needed, an index, variant or kind out of range, or a sink
 * without a write function is never a crash. Calls that return a status
 * return TILEC_ERR_ARG (TILEC_RT_INVALID_ARG in the runtime); accessors
 * return NULL or 0 (tilec_kernel_hint: dflt); free and clear functions do
 * nothing. tests/test_api_args.c calls every one of them that way. */
#ifndef TILEC_TILEC_H
#define TILEC_TILEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tilec/ast.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TILEC_VERSION_MAJOR 0
#define TILEC_VERSION_MINOR 1
#define TILEC_VERSION_PATCH 0
#define TILEC_VERSION_STRING "0.1.0"

/* Library version as a string ("0.1.0"); may differ from the header's. */
const char *tilec_version(void);

typedef enum tilec_status {
    TILEC_OK = 0,
    TILEC_ERR_INPUT = 1, /* the .tile input has errors: see the diagnostics */
    TILEC_ERR_IO = 2,    /* a file could not be read or written */
    TILEC_ERR_NOMEM = 3, /* out of memory */
    TILEC_ERR_ARG = 4,   /* a bad argument to an API call */
} tilec_status;

/* A short English description of a status ("input has errors"). */
const char *tilec_status_string(tilec_status s);

typedef enum tilec_severity {
    TILEC_SEV_ERROR = 0,
    TILEC_SEV_WARNING = 1,
    TILEC_SEV_NOTE = 2,
} tilec_severity;

/* One diagnostic. Strings are owned by the context and stay valid until
 * tilec_ctx_clear_diags() or tilec_ctx_free(). line/col are 1-based
 * (col counts bytes); both are 0 for a diagnostic with no location. */
typedef struct tilec_diag {
    tilec_severity severity;
    const char *file;        /* file name as given, or "" */
    uint32_t line, col;
    const char *message;     /* no location prefix, no trailing newline */
    const char *source_line; /* the source line (or a window of a long one)
                              * without its newline, control bytes as '?';
                              * NULL when there is none */
    uint32_t source_col;     /* 1-based column of the caret in source_line */
} tilec_diag;

typedef void (*tilec_diag_fn)(void *user, const tilec_diag *d);

/* A context collects diagnostics and options. It holds no other state:
 * two contexts may be used from two threads at once. */
typedef struct tilec_ctx tilec_ctx;

tilec_ctx *tilec_ctx_new(void); /* NULL when out of memory */
void tilec_ctx_free(tilec_ctx *ctx);

/* Called once per diagnostic as it is recorded (in addition to storing it). */
void tilec_ctx_set_diag_callback(tilec_ctx *ctx, tilec_diag_fn fn, void *user);

/* Stop after this many errors (default TILEC_DEFAULT_MAX_ERRORS; 0 means
 * the default). One note says that the limit was reached. */
#define TILEC_DEFAULT_MAX_ERRORS 20
void tilec_ctx_set_max_errors(tilec_ctx *ctx, unsigned max_errors);

size_t tilec_ctx_diag_count(const tilec_ctx *ctx);
const tilec_diag *tilec_ctx_diag(const tilec_ctx *ctx, size_t i);
size_t tilec_ctx_error_count(const tilec_ctx *ctx);
void tilec_ctx_clear_diags(tilec_ctx *ctx);

/* A sink receives output bytes; it returns 0 on success, nonzero to stop. */
typedef struct tilec_sink {
    int (*write)(void *user, const char *data, size_t len);
    void *user;
} tilec_sink;

/* A sink writing to a stdio stream (NULL: a sink every call refuses). */
tilec_sink tilec_sink_file(FILE *f);

/* Write one diagnostic as "file:line:col: error: message", the source line
 * and a caret under the column. */
tilec_status tilec_diag_render(const tilec_diag *d, tilec_sink sink);
/* Render every diagnostic of the context in order. */
tilec_status tilec_ctx_render_diags(const tilec_ctx *ctx, tilec_sink sink);

/* Parse and check. On success *out is a module to free with
 * tilec_module_free(); on failure *out is NULL and the context holds the
 * diagnostics (TILEC_ERR_INPUT), or the status says what else failed.
 * `name` is the file name used in locations. */
tilec_status tilec_parse_file(tilec_ctx *ctx, const char *path, tilec_module **out);
tilec_status tilec_parse_string(tilec_ctx *ctx, const char *name, const char *text,
                                size_t len, tilec_module **out);
void tilec_module_free(tilec_module *m);

/* Walking a module. Items keep their source order. */
size_t tilec_module_item_count(const tilec_module *m);
const tilec_item *tilec_module_item(const tilec_module *m, size_t i);
size_t tilec_module_kernel_count(const tilec_module *m);
const tilec_kernel *tilec_module_kernel(const tilec_module *m, size_t i);
size_t tilec_module_extern_count(const tilec_module *m);
const tilec_extern *tilec_module_extern(const tilec_module *m, size_t i);
size_t tilec_module_graph_count(const tilec_module *m);
const tilec_graph *tilec_module_graph(const tilec_module *m, size_t i);
const tilec_kernel *tilec_module_find_kernel(const tilec_module *m, const char *name);
const tilec_extern *tilec_module_find_extern(const tilec_module *m, const char *name);
const tilec_graph *tilec_module_find_graph(const tilec_module *m, const char *name);
const char *tilec_module_file(const tilec_module *m);
/* The module's .tile text (len bytes, NUL-terminated). */
const char *tilec_module_source(const tilec_module *m, size_t *len);

/* The value of hint `name` for variant `variant` of kernel k (-1: the base
 * hints), after the variant's overrides; `dflt` when the hint is absent. */
int64_t tilec_kernel_hint(const tilec_kernel *k, int variant, const char *name, int64_t dflt);

/* Kernel k's parameters, for bindings that check arguments before a
 * launch: parameter i's name, whether it is a pointer, and its type (the
 * element type of a pointer). -1 when k is NULL or i out of range. */
size_t tilec_kernel_param_count(const tilec_kernel *k);
int tilec_kernel_param_info(const tilec_kernel *k, size_t i, const char **name, int *pointer, tilec_dtype *dtype);

/* Write a stable text dump of the module (kernels with their checked types,
 * externs, graphs): the form of `tilec FILE --emit ast`. */
tilec_status tilec_module_dump_ast(const tilec_module *m, tilec_sink sink);

#ifdef __cplusplus
}
#endif
#endif
