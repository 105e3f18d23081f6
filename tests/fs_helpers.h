/* fs_helpers.h: temporary directories, files, shell commands and checked
 * parses for the Criterion suites that run the tilec command or write
 * output trees. */
#ifndef TILEC_TESTS_FS_HELPERS_H
#define TILEC_TESTS_FS_HELPERS_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "helpers.h"
#include "tilec/lower.h"

static inline void make_tmpdir(char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/tilec_test_XXXXXX");
    cr_assert(mkdtemp(dir), "mkdtemp");
}

/* The names in dir, sorted, each followed by '\n' ("" when empty). */
static inline char *list_dir(const char *dir)
{
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort);
    cr_assert_geq(n, 0, "cannot read %s", dir);
    membuf mb = {0};
    for (int i = 0; i < n; i++) {
        if (strcmp(ents[i]->d_name, ".") && strcmp(ents[i]->d_name, "..") && strcmp(ents[i]->d_name, "__pycache__")) {
            membuf_write(&mb, ents[i]->d_name, strlen(ents[i]->d_name));
            membuf_write(&mb, "\n", 1);
        }
        free(ents[i]);
    }
    free(ents);
    return mb.s ? mb.s : calloc(1, 1);
}

/* Remove dir and everything in it. */
static inline void rm_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0, "cannot remove %s", dir);
}

static inline char *read_in(const char *dir, const char *file)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return read_file(path, NULL);
}

/* Write text to dir/file (the test fails when it cannot). */
static inline void write_in(const char *dir, const char *file, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert(fputs(text, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
}

/* Run a shell command line; its exit status, stdout+stderr in *out. */
static inline int sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int sh(char **out, const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    cr_assert(n > 0 && (size_t)n < sizeof cmd - 8);
    strcat(cmd, " 2>&1");
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    membuf mb = {0};
    char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, p)) > 0)
        membuf_write(&mb, buf, k);
    int st = pclose(p);
    *out = mb.s ? mb.s : calloc(1, 1);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Parse a .tile file that must check; its diagnostics in the failure. */
static inline tilec_module *parse(tilec_ctx *ctx, const char *path)
{
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_file(ctx, path, &m);
    membuf d = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&d));
    cr_assert_eq(st, TILEC_OK, "%s does not check:\n%s", path, d.s ? d.s : "");
    free(d.s);
    return m;
}

/* Variant v of `kernel` of m lowered into code; it must lower. */
static inline void lower_variant(tilec_ctx *ctx, tilec_module *m, const char *kernel, int v, tilec_kernel_code *code)
{
    const tilec_kernel *k = tilec_module_find_kernel(m, kernel);
    cr_assert_not_null(k, "no kernel %s", kernel);
    cr_assert_eq(tilec_lower_kernel(ctx, m, k, v, code), TILEC_OK, "%s variant %d does not lower", kernel, v);
}

/* The CUDA C of variant v of `kernel` of file (its sm_90a twin with it); free() it. */
static inline char *lowered_source(const char *file, const char *kernel, int v)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, file);
    tilec_kernel_code code;
    lower_variant(ctx, m, kernel, v, &code);
    size_t n = strlen(code.source);
    char *src = malloc(n + 1);
    cr_assert_not_null(src);
    memcpy(src, code.source, n + 1);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return src;
}

#endif
