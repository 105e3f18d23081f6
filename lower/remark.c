/* remark.c: remarks on dot loops, as clang's -Rpass and -Rpass-missed
 * give: the path each dot loop took (wgmma + TMA, cp.async pipeline or
 * ring + mma.sync, FMA; its stages) and, where that is not the target's
 * best, the first reason the better path's check refused, with its .tile
 * line. The checks (pipeline.c, ring.c, wgmma.c) record every refusal
 * through lower_miss; stmt.c and pipeline.c record each loop's path;
 * lower.c renders them into the kernel's `remarks` (tilec/lower.h), which
 * `--emit layouts` prints and TILEC_LOGS=remarks writes to stderr. */
#include <stdarg.h>
#include <string.h>

#include "lower/lower_internal.h"

void lower_miss_reset(lw *L)
{
    L->miss = NULL;
    L->miss_line = 0;
}

int lower_miss(lw *L, unsigned line, const char *f, ...)
{
    if (L->miss)
        return 0;
    strbuf s;
    sb_init(&s);
    va_list ap;
    va_start(ap, f);
    sb_vprintf(&s, f, ap);
    va_end(ap);
    L->miss = s.failed ? "(out of memory)" : lower_fmt(L, "%s", sb_str(&s));
    L->miss_line = line;
    sb_free(&s);
    return 0;
}

lower_dot_remark *lower_remark_dot(lw *L, const tilec_stmt *loop, const char *path, const char *missed)
{
    if (!L->tg->remarks || L->nrem >= LP_MAX) /* the twin's own passes remark nothing */
        return NULL;
    lower_dot_remark *r = &L->rem[L->nrem++];
    memset(r, 0, sizeof *r);
    r->loop = loop;
    r->path = path;
    r->missed = missed;
    /* the sm_90a twin took this loop (whichever path the variant's own took: pipeline.c's twin_only) */
    r->wg = L->tw.loop == loop;
    r->wg_bk = r->wg && L->tw.plan.bk;
    if (missed) {
        r->why = L->miss ? L->miss : "(no reason recorded)";
        r->why_line = L->miss_line;
    }
    return r;
}

static int expr_dots(const tilec_expr *e)
{
    if (!e)
        return 0;
    int n = tilec_is_builtin(e, BI_DOT);
    for (uint32_t i = 0; i < e->nargs; i++)
        n += expr_dots(e->args[i]);
    return n;
}

int lower_block_dots(const tilec_block *b)
{
    int n = 0;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_DOC || s->kind == TILEC_ST_FOR) /* an inner loop has its own remark */
            continue;
        n += expr_dots(s->value) + lower_block_dots(&s->body) + lower_block_dots(&s->orelse);
    }
    return n;
}

void lower_remarks_render(lw *L, int twin, strbuf *out)
{
    for (int i = 0; i < L->nrem; i++) {
        const lower_dot_remark *r = &L->rem[i];
        unsigned line = r->loop->loc.line;
        if (r->wg && twin)
            sb_printf(out, "line %u: dot loop: %s (the sm_90a twin%s%s); elsewhere %s\n", line,
                      r->wg_path ? r->wg_path : L->tw.plan.gather ? "wgmma + cp.async" : "wgmma + TMA", r->wg_bk ? ", B K-major: trans of its [N, K] load" : "",
                      L->tw.plan.how ? L->tw.plan.how : "", r->path);
        else
            sb_printf(out, "line %u: dot loop: %s\n", line, r->path);
        if (r->wg && !twin)
            sb_printf(out, "line %u: dot loop not on %s: its sm_90a twin did not lower (%s)\n", line,
                      r->wg_path ? "wgmma" : "wgmma + TMA",
                      r->wg_path ? "a dot's A operand not in wgmma fragments, or shared memory" : "shared memory");
        else if (r->missed)
            sb_printf(out, "line %u: dot loop at line %u not on %s: %s\n", r->why_line ? r->why_line : line, line,
                      r->missed, r->why);
    }
}
