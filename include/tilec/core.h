/* core.h: the small public core below the parser: the version, statuses,
 * source locations, contexts and their diagnostics, and sinks. The dsl
 * layer (dsl/diag.c, dsl/core.c) implements it; tilec/tilec.h includes it,
 * so code that includes tilec.h sees these as before. */
#ifndef TILEC_CORE_H
#define TILEC_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TILEC_VERSION_MAJOR 0
#define TILEC_VERSION_MINOR 1
#define TILEC_VERSION_PATCH 0
#define TILEC_VERSION_STRING "0.1.0"

/* Library version as a string ("0.1.0"); may differ from the header's. */
const char *tilec_version(void);

/* A place in a .tile file. */
typedef struct tilec_loc {
    const char *file;
    uint32_t line, col; /* 1-based; col counts bytes */
} tilec_loc;

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

#ifdef __cplusplus
}
#endif
#endif
