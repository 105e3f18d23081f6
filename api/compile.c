/* compile.c: a lowered kernel variant through NVRTC to a CUBIN
 * (tilec_compile_kernel). A failed compile is reported at the .tile line
 * the generated CUDA C came from (the lowering marks every statement with a
 * `// file.tile:LINE` comment, lower/marker.h), naming the kernel and
 * carrying the NVRTC log. Before NVRTC, an architecture older than the
 * lowering says the kernel needs (tilec_kernel_code.min_sm) is an error of
 * its own (cmp_check_arch). The kernel description of lowered code
 * (cmp_describe). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/compile.h"
#include "dsl/diag.h"
#include "lower/marker.h"
#include "parser/parse.h"
#include "tilec/log.h"
#include "tilec/lower.h"
#include "tilec/runtime.h"

/* The .tile line of CUDA line `cline` of src: the last marker at or above it. */
static uint32_t tile_line(const char *src, const char *file, long cline)
{
    strbuf mark;
    sb_init(&mark);
    lower_loc_marker(&mark, file);
    const char *m = sb_str(&mark);
    size_t mlen = strlen(m);
    uint32_t found = 0;
    long n = 1;
    for (const char *p = src; *p && n <= cline; n++) {
        const char *e = strchr(p, '\n');
        const char *q = p;
        while (*q == ' ')
            q++;
        if (!mark.failed && !strncmp(q, m, mlen))
            found = (uint32_t)strtoul(q + mlen, NULL, 10);
        if (!e)
            break;
        p = e + 1;
    }
    sb_free(&mark);
    return found;
}

/* The first line of log that reports an error: "NAME(LINE): error ...",
 * "error: ...", ptxas's "... error   : ..." or a "fatal" one, never a
 * warning or a note before it; NULL when none does. */
static const char *first_error_line(const char *log)
{
    for (const char *p = log; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        for (size_t i = 0; i + 5 <= n; i++)
            if ((!strncmp(p + i, "error", 5) || !strncmp(p + i, "fatal", 5)) &&
                (i == 0 || p[i - 1] == ' ' || p[i - 1] == '\t') &&
                (i + 5 == n || p[i + 5] == ' ' || p[i + 5] == ':' || p[i + 5] == '\t'))
                return p;
        p = eol ? eol + 1 : NULL;
    }
    return NULL;
}

void cmp_report_failure(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, const tilec_kernel_code *code,
                        const char *arch, const char *log, const char *fallback)
{
    /* the first error line of the log: "<name>(<line>): error: <text>" is
     * placed at its .tile line; any other error line is quoted as it is */
    tilec_loc loc = k->loc;
    const char *line = log ? first_error_line(log) : NULL;
    const char *text = line ? line : log ? log : fallback;
    const char *eol = strchr(text, '\n');
    const char *err = line ? strstr(line, "): error") : NULL;
    if (err && (!eol || err < eol)) {
        const char *open = err;
        while (open > line && open[-1] != '(')
            open--;
        uint32_t tl = tile_line(code->source, m->src.name, strtol(open, NULL, 10));
        if (tl) {
            loc.line = tl;
            loc.col = 1;
        }
        text = err + 3;
    }
    while (*text == ' ')
        text++;
    diag_at(ctx, &m->src, &loc, TILEC_SEV_ERROR, "kernel '%s': NVRTC could not compile %s for %s: %.*s", k->name,
            code->name, arch, (int)(eol ? eol - text : (long)strlen(text)), text);
    if (log)
        diag_at(ctx, &m->src, NULL, TILEC_SEV_NOTE, "the NVRTC log of %s:\n%s", code->name, log);
}

/* The number of an architecture: 75 for "sm_75", 90 for "sm_90a" or
 * "compute_90"; 0 when arch is not spelled so (NVRTC then judges it). */
static uint32_t arch_number(const char *arch)
{
    const char *d = !strncmp(arch, "sm_", 3) ? arch + 3 : !strncmp(arch, "compute_", 8) ? arch + 8 : NULL;
    if (!d || *d < '1' || *d > '9')
        return 0;
    char *end;
    unsigned long n = strtoul(d, &end, 10);
    return n < 1000 ? (uint32_t)n : 0;
}

int cmp_check_arch(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, const tilec_kernel_code *code,
                   const char *arch)
{
    uint32_t have = arch_number(arch);
    if (!have || !code->min_sm || have >= code->min_sm)
        return 0;
    char line[32] = "";
    if (code->min_sm_line)
        snprintf(line, sizeof line, " (line %u)", code->min_sm_line);
    diag_at(ctx, &m->src, &k->loc, TILEC_SEV_ERROR,
            "kernel '%s' (variant %d, %s) needs sm_%u or newer: it %s%s; --arch %s cannot run it", k->name,
            code->variant, code->name, code->min_sm, code->min_sm_why ? code->min_sm_why : "uses its features", line,
            arch);
    return -1;
}

void cmp_log_remarks(const tilec_module *m, const tilec_kernel_code *code)
{
    if (!code->remarks || !*code->remarks || !tilec_log_enabled(TILEC_LOG_REMARKS))
        return;
    const char *file = m->src.name ? m->src.name : "<module>";
    for (const char *p = code->remarks; *p;) {
        size_t n = strcspn(p, "\n");
        /* "line N: ..." (a dot loop) or "line N:C: ..." (a load or store): FILE:N[:C]: remark: */
        unsigned line = 0, col = 0;
        int skip = 0;
        if (sscanf(p, "line %u:%u: %n", &line, &col, &skip) < 2 || skip <= 0 || (size_t)skip > n) {
            col = 0;
            skip = 0;
            if (sscanf(p, "line %u: %n", &line, &skip) < 1 || skip <= 0 || (size_t)skip > n)
                skip = 0;
        }
        char at[16] = "";
        if (col)
            snprintf(at, sizeof at, ":%u", col);
        fprintf(stderr, "%s:%u%s: remark: %s: %.*s\n", file, line, at, code->name ? code->name : "?", (int)(n - (size_t)skip),
                p + skip);
        p += n + (p[n] == '\n');
    }
}

tilec_status tilec_compile_kernel(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, int variant,
                                  const char *arch, tilec_kernel_code *code, void **cubin, size_t *size)
{
    if (!ctx || !m || !k || !arch || !code || !cubin || !size)
        return TILEC_ERR_ARG;
    *cubin = NULL;
    *size = 0;
    tilec_status st = tilec_lower_kernel(ctx, m, k, variant, code);
    if (st != TILEC_OK)
        return st;
    cmp_log_remarks(m, code);
    if (cmp_check_arch(ctx, m, k, code, arch) != 0) {
        tilec_kernel_code_free(code);
        return TILEC_ERR_INPUT;
    }
    char *log = NULL;
    tilec_rt_status rs = tilec_nvrtc_compile(code->source, code->name, arch, NULL, 0, cubin, size, &log);
    if (rs == TILEC_RT_OK) {
        free(log);
        return TILEC_OK;
    }
    cmp_report_failure(ctx, m, k, code, arch, log, tilec_rt_status_string(rs));
    free(log);
    tilec_kernel_code_free(code);
    return TILEC_ERR_INPUT;
}

tilec_kernel_desc cmp_describe(const tilec_kernel *k, int variant, const tilec_kernel_code *code, const void *image,
                               size_t size, const tilec_rt_param_kind *kinds)
{
    return (tilec_kernel_desc){
        .kernel = k->name,
        .variant = variant,
        .nvariants = tilec_kernel_variant_count(k),
        .name = code->name,
        .image = image,
        .size = size,
        .threads = code->threads,
        .smem_bytes = code->smem_bytes,
        .nparams = code->nparams,
        .kinds = kinds,
        .written = tilec_kernel_written_params(k), /* also when code came from a record, which keeps no mask */
        .grid = NULL,
        .split_k = code->split_k,
        .split_bytes = code->split_bytes,
        .tma = code->tma.name ? &code->tma : NULL,
    };
}
