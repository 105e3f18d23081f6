/* diag.c: contexts, diagnostics and their rendering with a caret. */
#include "dsl/diag.h"

#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

enum { DIAG_WINDOW = 160 }; /* bytes of a long source line kept either side of the caret */

tilec_ctx *tilec_ctx_new(void)
{
    tilec_ctx *c = calloc(1, sizeof *c);
    if (c)
        c->max_errors = TILEC_DEFAULT_MAX_ERRORS;
    return c;
}

static void free_diag(tilec_diag *d)
{
    free((char *)d->file);
    free((char *)d->message);
    free((char *)d->source_line);
}

void tilec_ctx_clear_diags(tilec_ctx *ctx)
{
    if (!ctx)
        return;
    for (size_t i = 0; i < ctx->ndiags; i++)
        free_diag(&ctx->diags[i]);
    ctx->ndiags = 0;
    ctx->nerrors = 0;
    ctx->stopped = 0;
    ctx->nomem = 0;
}

void tilec_ctx_free(tilec_ctx *ctx)
{
    if (!ctx)
        return;
    tilec_ctx_clear_diags(ctx);
    free(ctx->diags);
    if (ctx->registry_free)
        ctx->registry_free(ctx->registry);
    free(ctx);
}

void tilec_ctx_set_diag_callback(tilec_ctx *ctx, tilec_diag_fn fn, void *user)
{
    if (!ctx)
        return;
    ctx->fn = fn;
    ctx->user = user;
}

void tilec_ctx_set_max_errors(tilec_ctx *ctx, unsigned max_errors)
{
    if (!ctx)
        return;
    ctx->max_errors = max_errors ? max_errors : TILEC_DEFAULT_MAX_ERRORS;
}

size_t tilec_ctx_diag_count(const tilec_ctx *ctx) { return ctx ? ctx->ndiags : 0; }
size_t tilec_ctx_error_count(const tilec_ctx *ctx) { return ctx ? ctx->nerrors : 0; }
const tilec_diag *tilec_ctx_diag(const tilec_ctx *ctx, size_t i)
{
    return ctx && i < ctx->ndiags ? &ctx->diags[i] : NULL;
}

int diag_stopped(const tilec_ctx *ctx) { return ctx->stopped; }

/* Copy the line holding loc, or a window of it around the column, with
 * control bytes replaced so a terminal shows what is there. */
static char *source_window(const dsl_source *src, const tilec_loc *loc, uint32_t *caret)
{
    const char *p = src->text, *end = src->text + src->len;
    for (uint32_t l = 1; l < loc->line && p < end; p++)
        if (*p == '\n')
            l++;
    const char *eol = p;
    while (eol < end && *eol != '\n')
        eol++;
    if (eol > p && eol[-1] == '\r')
        eol--;
    size_t col = loc->col ? loc->col - 1 : 0;
    size_t linelen = (size_t)(eol - p);
    if (col > linelen)
        col = linelen;
    size_t from = col > DIAG_WINDOW ? col - DIAG_WINDOW : 0;
    size_t to = linelen - col > DIAG_WINDOW ? col + DIAG_WINDOW : linelen;
    char *s = malloc(to - from + 1);
    if (!s)
        return NULL;
    for (size_t i = from; i < to; i++) {
        unsigned char c = (unsigned char)p[i];
        s[i - from] = (c < 0x20 && c != '\t') || c == 0x7f ? '?' : (char)c;
    }
    s[to - from] = 0;
    *caret = (uint32_t)(col - from + 1);
    return s;
}

static void push(tilec_ctx *ctx, tilec_diag d)
{
    if (ctx->ndiags == ctx->cap) {
        size_t cap = ctx->cap ? ctx->cap * 2 : 8;
        tilec_diag *v = realloc(ctx->diags, cap * sizeof *v);
        if (!v) {
            free_diag(&d);
            ctx->nomem = 1;
            return;
        }
        ctx->diags = v;
        ctx->cap = cap;
    }
    ctx->diags[ctx->ndiags++] = d;
    if (ctx->fn)
        ctx->fn(ctx->user, &ctx->diags[ctx->ndiags - 1]);
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

void diag_vat(tilec_ctx *ctx, const dsl_source *src, const tilec_loc *loc, tilec_severity sev,
              const char *fmt, va_list ap)
{
    if (ctx->stopped)
        return;
    if (sev == TILEC_SEV_ERROR && ctx->nerrors >= ctx->max_errors) {
        ctx->stopped = 1;
        tilec_diag d = {.severity = TILEC_SEV_NOTE, .file = dupstr(src ? src->name : "")};
        strbuf b;
        sb_init(&b);
        sb_printf(&b, "too many errors (limit %u); stopping", ctx->max_errors);
        d.message = sb_take(&b);
        if (!d.file || !d.message) {
            free_diag(&d);
            ctx->nomem = 1;
            return;
        }
        push(ctx, d);
        return;
    }
    strbuf b;
    sb_init(&b);
    sb_vprintf(&b, fmt, ap);
    tilec_diag d = {.severity = sev};
    d.message = sb_take(&b);
    d.file = dupstr(loc && loc->file ? loc->file : src ? src->name : "");
    if (loc && loc->line) {
        d.line = loc->line;
        d.col = loc->col;
        if (src)
            d.source_line = source_window(src, loc, &d.source_col);
    }
    if (!d.message || !d.file || (src && loc && loc->line && !d.source_line)) {
        free_diag(&d);
        ctx->nomem = 1;
        return;
    }
    if (sev == TILEC_SEV_ERROR)
        ctx->nerrors++;
    push(ctx, d);
}

void diag_at(tilec_ctx *ctx, const dsl_source *src, const tilec_loc *loc, tilec_severity sev,
             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vat(ctx, src, loc, sev, fmt, ap);
    va_end(ap);
}

/* ---- rendering ---- */

static int file_write(void *user, const char *data, size_t len)
{
    return fwrite(data, 1, len, (FILE *)user) == len ? 0 : -1;
}

/* NULL: a sink with no write function, which every call refuses (TILEC_ERR_ARG) */
tilec_sink tilec_sink_file(FILE *f) { return (tilec_sink){f ? file_write : NULL, f}; }

static const char *const sev_names[] = {"error", "warning", "note"};

tilec_status tilec_diag_render(const tilec_diag *d, tilec_sink sink)
{
    if (!d || !sink.write)
        return TILEC_ERR_ARG;
    strbuf b;
    sb_init(&b);
    if (d->line)
        sb_printf(&b, "%s:%u:%u: ", d->file, d->line, d->col);
    else if (d->file && d->file[0])
        sb_printf(&b, "%s: ", d->file);
    sb_printf(&b, "%s: %s\n", sev_names[d->severity], d->message);
    if (d->source_line) {
        int w = snprintf(NULL, 0, "%u", d->line);
        sb_printf(&b, " %*u | %s\n %*s | ", w, d->line, d->source_line, w, "");
        /* keep tabs under tabs so the caret lines up */
        for (uint32_t i = 1; i < d->source_col && d->source_line[i - 1]; i++)
            sb_putc(&b, d->source_line[i - 1] == '\t' ? '\t' : ' ');
        sb_puts(&b, "^\n");
    }
    tilec_status st = TILEC_OK;
    if (b.failed)
        st = TILEC_ERR_NOMEM;
    else if (sink.write(sink.user, sb_str(&b), b.n))
        st = TILEC_ERR_IO;
    sb_free(&b);
    return st;
}

tilec_status tilec_ctx_render_diags(const tilec_ctx *ctx, tilec_sink sink)
{
    if (!ctx || !sink.write)
        return TILEC_ERR_ARG;
    for (size_t i = 0; i < ctx->ndiags; i++) {
        tilec_status st = tilec_diag_render(&ctx->diags[i], sink);
        if (st)
            return st;
    }
    return TILEC_OK;
}
