/* session.c: the emit session: the accessors an emitter reads its graph,
 * module and options through (tilec_emit_*), the named outputs it writes
 * (tilec_emit_write, tilec_emit_printf), and their writing to a directory,
 * all temporary files first and then the renames. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dsl/diag.h"
#include "wrapper_ir/session.h"
#include "wrapper_ir/wir.h"

tilec_ctx *tilec_emit_ctx(tilec_emit *e) { return e ? e->ctx : NULL; }
const tilec_module *tilec_emit_module(const tilec_emit *e) { return e ? e->m : NULL; }
const tilec_wir *tilec_emit_wir(const tilec_emit *e) { return e ? e->w : NULL; }
const tilec_graph *tilec_emit_graph(const tilec_emit *e) { return e ? tilec_wir_graph(e->w) : NULL; }
wir_compile_fn emit_session_compile(const tilec_emit *e) { return e ? e->compile : NULL; }
const void *emit_session_build(const tilec_emit *e) { return e && e->o ? e->o->build : NULL; }

const char *tilec_emit_option(const tilec_emit *e, const char *key)
{
    for (size_t i = 0; e && e->o && key && i < e->o->noptions; i++)
        if (e->o->keys[i] && !strcmp(e->o->keys[i], key))
            return e->o->values[i];
    return NULL;
}

static emit_out *output(tilec_emit *e, const char *file)
{
    if (!file || !file[0] || file[0] == '.' || strchr(file, '/')) {
        if (!e->has_bad)
            snprintf(e->bad, sizeof e->bad, "%s", file ? file : "(null)");
        e->has_bad = 1;
        return NULL;
    }
    for (size_t i = 0; i < e->nouts; i++)
        if (!strcmp(e->outs[i].file, file))
            return &e->outs[i];
    if (e->nouts == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 4;
        emit_out *v = realloc(e->outs, cap * sizeof *v);
        if (!v)
            return NULL;
        e->outs = v;
        e->cap = cap;
    }
    emit_out *o = &e->outs[e->nouts];
    o->file = strdup(file);
    o->tmp = NULL;
    if (!o->file)
        return NULL;
    sb_init(&o->b);
    e->nouts++;
    return o;
}

/* The output `file` that a write goes to; NULL, and e failed, when the
 * write's own arguments are bad (ok == 0) or the name is. */
static emit_out *written(tilec_emit *e, const char *file, int ok)
{
    emit_out *o = ok ? output(e, file) : NULL;
    if (!o)
        e->failed = 1;
    return o;
}

int tilec_emit_write(tilec_emit *e, const char *file, const char *data, size_t len)
{
    emit_out *o = e ? written(e, file, data || !len) : NULL;
    if (!o)
        return -1;
    sb_add(&o->b, data, len);
    return o->b.failed ? -1 : 0;
}

int tilec_emit_vprintf(tilec_emit *e, const char *file, const char *fmt, va_list ap)
{
    emit_out *o = e ? written(e, file, fmt != NULL) : NULL;
    if (!o)
        return -1;
    sb_vprintf(&o->b, fmt, ap);
    return o->b.failed ? -1 : 0;
}

int tilec_emit_printf(tilec_emit *e, const char *file, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = tilec_emit_vprintf(e, file, fmt, ap);
    va_end(ap);
    return r;
}

/* Write b to a new temporary file beside dir/file; its name goes to
 * *tmp_out. A directory in the way of dir/file is an error here, before
 * anything is renamed. errno tells why on failure. */
static int write_temp(const char *dir, const char *file, const strbuf *b, char **tmp_out)
{
    size_t n = strlen(dir) + strlen(file) + 32;
    char *path = malloc(n), *tmp = malloc(n + 8);
    if (!path || !tmp) {
        free(path);
        free(tmp);
        errno = ENOMEM;
        return -1;
    }
    snprintf(path, n, "%s/%s", dir, file);
    snprintf(tmp, n + 8, "%s.XXXXXX", path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        free(path);
        free(tmp);
        errno = EISDIR;
        return -1;
    }
    int fd = mkstemp(tmp), bad = fd < 0;
    if (!bad)
        bad = fchmod(fd, 0644) != 0; /* mkstemp makes 0600; generated code is for reading */
    if (!bad) {
        const char *p = b->s ? b->s : "";
        size_t left = b->n;
        while (left && !bad) {
            ssize_t k = write(fd, p, left);
            if (k < 0 && errno == EINTR)
                continue;
            bad = k <= 0;
            if (k == 0)
                errno = ENOSPC;
            if (!bad) {
                p += k;
                left -= (size_t)k;
            }
        }
        int saved = errno;
        bad |= close(fd) != 0;
        if (bad) {
            unlink(tmp);
            errno = saved;
        }
    }
    free(path);
    if (bad) {
        free(tmp);
        return -1;
    }
    *tmp_out = tmp;
    return 0;
}

tilec_status emit_session_write_dir(tilec_ctx *ctx, tilec_emit *e, const char *dir)
{
    dsl_source src = {dir, "", 0};
    for (size_t i = 0; i < e->nouts; i++) {
        if (write_temp(dir, e->outs[i].file, &e->outs[i].b, &e->outs[i].tmp)) {
            diag_at(ctx, &src, NULL, TILEC_SEV_ERROR, "cannot write %s: %s", e->outs[i].file, strerror(errno));
            for (size_t k = 0; k < i; k++) {
                unlink(e->outs[k].tmp);
                free(e->outs[k].tmp);
                e->outs[k].tmp = NULL;
            }
            return TILEC_ERR_IO;
        }
    }
    tilec_status st = TILEC_OK;
    for (size_t i = 0; i < e->nouts; i++) {
        size_t n = strlen(dir) + strlen(e->outs[i].file) + 2;
        char *path = malloc(n);
        if (path)
            snprintf(path, n, "%s/%s", dir, e->outs[i].file);
        if (st != TILEC_OK || !path || rename(e->outs[i].tmp, path) != 0) {
            if (st == TILEC_OK)
                diag_at(ctx, &src, NULL, TILEC_SEV_ERROR, "cannot write %s: %s", e->outs[i].file,
                        path ? strerror(errno) : "out of memory");
            unlink(e->outs[i].tmp);
            st = TILEC_ERR_IO;
        }
        free(path);
        free(e->outs[i].tmp);
        e->outs[i].tmp = NULL;
    }
    return st;
}

void emit_session_free(tilec_emit *e)
{
    for (size_t i = 0; i < e->nouts; i++) {
        free(e->outs[i].file);
        sb_free(&e->outs[i].b);
    }
    free(e->outs);
}
