/* sass_helpers.h: the SASS of lowered kernels on a machine with no GPU
 * (cuobjdump from ../shared/tools/sass, unpacked into /tmp/sass-tools),
 * for tests that check which instructions a kernel compiles to. */
#ifndef TILEC_TESTS_SASS_HELPERS_H
#define TILEC_TESTS_SASS_HELPERS_H
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE 1
#endif
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_helpers.h"
#include "tilec/lower.h"
#include "tilec/program.h"

/* cuobjdump: $SASS_TOOLS/bin, /tmp/sass-tools/bin (where ../shared/tools/sass
 * unpacks it), the CUDA toolkit, the PATH; NULL when there is none. */
static inline const char *cuobjdump(void)
{
    static char path[4096];
    const char *t = getenv("SASS_TOOLS");
    const char *dirs[] = {t, "/tmp/sass-tools", "/usr/local/cuda"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i])
            continue;
        snprintf(path, sizeof path, "%s/bin/cuobjdump", dirs[i]);
        if (access(path, X_OK) == 0)
            return path;
    }
    char *out;
    int st = sh(&out, "command -v cuobjdump");
    if (st == 0 && out[0] == '/') {
        snprintf(path, sizeof path, "%.*s", (int)strcspn(out, "\n"), out);
        free(out);
        return path;
    }
    free(out);
    return NULL;
}

/* The SASS (or resource usage, with -res-usage) of variant v of a kernel
 * of `file` for arch. */
static inline char *disassemble_file(const char *tool, const char *opt, const char *path, const char *kernel, int v,
                              const char *arch)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, path);
    tilec_kernel_code code;
    void *cubin = NULL;
    size_t size = 0;
    cr_assert_eq(tilec_compile_kernel(ctx, m, tilec_module_find_kernel(m, kernel), v, arch, &code, &cubin, &size),
                 TILEC_OK, "%s variant %d does not compile for %s", kernel, v, arch);
    char dir[256];
    make_tmpdir(dir, sizeof dir);
    char file[512];
    snprintf(file, sizeof file, "%s/k.cubin", dir);
    FILE *f = fopen(file, "wb");
    cr_assert(f && fwrite(cubin, 1, size, f) == size && fclose(f) == 0);
    char *out;
    int st = sh(&out, "'%s' %s '%s'", tool, opt, file);
    cr_assert_eq(st, 0, "cuobjdump failed:\n%s", out);
    rm_dir(dir);
    free(cubin);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return out;
}

/* The SASS of function `name` ("Function : NAME", its newline included
 * where a longer name shares its start) of variant v of a kernel of
 * `file` for sm_90a, up to the next function (a copy); the test is
 * skipped without cuobjdump. */
static inline char *sass_function(const char *file, const char *kernel, int v, const char *name)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    char *sass = disassemble_file(tool, "-sass", file, kernel, v, "sm_90a");
    const char *at = strstr(sass, name);
    cr_assert_not_null(at, "the sm_90a cubin has %s:\n%.2000s", name, sass);
    const char *next = strstr(at + 1, "Function : ");
    char *t = strndup(at, next ? (size_t)(next - at) : strlen(at));
    free(sass);
    return t;
}

#endif
