/* helpers.h: small shared pieces of the Criterion suites. */
#ifndef TILEC_TESTS_HELPERS_H
#define TILEC_TESTS_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/tensor.h"
#include "tilec/tilec.h"

/* A memory sink: output collects into a malloc'd, NUL-terminated string. */
typedef struct membuf {
    char *s;
    size_t n;
} membuf;

static inline int membuf_write(void *user, const char *data, size_t len)
{
    membuf *m = user;
    char *s = realloc(m->s, m->n + len + 1);
    if (!s)
        return -1;
    memcpy(s + m->n, data, len);
    m->n += len;
    s[m->n] = 0;
    m->s = s;
    return 0;
}

static inline tilec_sink membuf_sink(membuf *m) { return (tilec_sink){membuf_write, m}; }

/* Read a whole file; NULL if it cannot be read. */
static inline char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        if (len)
            *len = n;
    }
    return buf;
}

/* Parse text; returns the status, fills *diags with the rendered
 * diagnostics (caller frees) and frees the module. */
static inline tilec_status parse_text(const char *name, const char *text, size_t len, char **diags,
                                      size_t *nerrors)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_string(ctx, name, text, len, &m);
    membuf mb = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&mb));
    if (nerrors)
        *nerrors = tilec_ctx_error_count(ctx);
    if (diags)
        *diags = mb.s ? mb.s : calloc(1, 1);
    else
        free(mb.s);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return st;
}

/* A row-major rows x cols tensor descriptor over device address data. */
static inline tilec_tensor matrix(tilec_dtype dt, int64_t rows, int64_t cols, uint64_t data)
{
    tilec_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dt;
    t.rank = 2;
    t.sizes[0] = rows;
    t.sizes[1] = cols;
    t.strides[0] = cols;
    t.strides[1] = 1;
    return t;
}

#endif
