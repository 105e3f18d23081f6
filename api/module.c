/* module.c: the library's front door. The pipeline of the front end reads
 * in order: read the text, lex + parse (parser/parse.c), check
 * (parser/check.c); the module then serves walks and dumps. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lower/tune.h"
#include "parser/parse.h"
#include "tilec/log.h"
#include "tilec/limits.h"

/* An error about a whole file: "what" then the reason. */
static tilec_status fail(tilec_ctx *ctx, tilec_status st, const char *name, const char *what, const char *why)
{
    dsl_source src = {name ? name : "", "", 0};
    diag_at(ctx, &src, NULL, TILEC_SEV_ERROR, "%s%s", what, why);
    return st;
}

tilec_status tilec_parse_string(tilec_ctx *ctx, const char *name, const char *text, size_t len,
                                tilec_module **out)
{
    if (!out)
        return TILEC_ERR_ARG;
    *out = NULL;
    if (!ctx || (!text && len))
        return TILEC_ERR_ARG;
    if (!name)
        name = "<string>";
    if (len > TILEC_MAX_SOURCE)
        return fail(ctx, TILEC_ERR_INPUT, name, "the source is larger than ",
                    TILEC_MAX_SOURCE_TEXT " (the largest .tile text tilec reads)");
    tilec_module *m = calloc(1, sizeof *m);
    if (!m)
        return TILEC_ERR_NOMEM;
    ar_init(&m->ar);
    char *copy = ar_alloc(&m->ar, len + 1);
    m->src.name = ar_strdup(&m->ar, name);
    if (!copy || !m->src.name) {
        tilec_module_free(m);
        return TILEC_ERR_NOMEM;
    }
    if (len)
        memcpy(copy, text, len);
    copy[len] = 0;
    m->src.text = copy;
    m->src.len = len;

    size_t errors = ctx->nerrors;
    int bad = prs_parse(ctx, m);
    if (!bad)
        bad = chk_module(ctx, m);
    if (!bad && ctx->nerrors == errors) {
        tilec_status ts = lower_tune_module(ctx, m, &m->ar);
        bad = ts != TILEC_OK;
        if (!bad && tilec_log_enabled(TILEC_LOG_TUNE))
            (void)tilec_module_emit_tune(m, tilec_sink_file(stderr));
    }
    if (bad || ctx->nerrors > errors || m->ar.failed) {
        int nomem = m->ar.failed || ctx->nomem;
        tilec_module_free(m);
        return nomem && ctx->nerrors == errors ? TILEC_ERR_NOMEM : TILEC_ERR_INPUT;
    }
    *out = m;
    return TILEC_OK;
}

tilec_status tilec_parse_file(tilec_ctx *ctx, const char *path, tilec_module **out)
{
    if (!out)
        return TILEC_ERR_ARG;
    *out = NULL;
    if (!ctx || !path)
        return TILEC_ERR_ARG;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(ctx, TILEC_ERR_IO, path, "cannot open: ", strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    tilec_status st = TILEC_OK;
    while (buf) {
        if (len > TILEC_MAX_SOURCE) { /* read no further than one buffer past the limit */
            st = fail(ctx, TILEC_ERR_INPUT, path, "the file is larger than ",
                      TILEC_MAX_SOURCE_TEXT " (the largest .tile file tilec reads)");
            break;
        }
        if (len == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                st = TILEC_ERR_NOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f))
                st = fail(ctx, TILEC_ERR_IO, path, "read error: ", strerror(errno));
            break;
        }
    }
    fclose(f);
    if (!buf)
        return TILEC_ERR_NOMEM;
    if (st == TILEC_OK)
        st = tilec_parse_string(ctx, path, buf, len, out);
    free(buf);
    return st;
}

tilec_status tilec_module_dump_ast(const tilec_module *m, tilec_sink sink)
{
    return m && sink.write ? dump_module(m, sink) : TILEC_ERR_ARG;
}
