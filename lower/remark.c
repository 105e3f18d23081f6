/* remark.c: remarks on dot loops and memory accesses, as clang's -Rpass
 * and -Rpass-missed give: the path each dot loop took (wgmma + TMA,
 * cp.async pipeline or ring + mma.sync, FMA; its stages) and, where that
 * is not the target's best, the first reason the better path's check
 * refused, with its .tile line; the path each load, store and atomic_add
 * took (ld / st / red, cp.async into a ring, the sm_90a twin's TMA), its
 * vector width and, below 16 bytes, why, in the words of the decision
 * that chose it (memory.c, pipeline.c, ring.c; the facts from axinfo.c).
 * The checks (pipeline.c, ring.c, wgmma.c) record every refusal through
 * lower_miss; stmt.c and pipeline.c record each loop's path; lower.c
 * renders them into the kernel's `remarks` (tilec/lower.h), which `--emit
 * layouts` prints and TILEC_LOGS=remarks writes to stderr. */
#include <stdarg.h>
#include <stdlib.h>
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

const char *lower_expr_text(lw *L, const tilec_expr *e)
{
    enum { MAXTEXT = 60 };
    strbuf b;
    sb_init(&b);
    dump_expr_text(&b, e);
    const char *r = b.failed ? "?" : b.n > MAXTEXT ? lower_fmt(L, "%.*s...", MAXTEXT - 3, sb_str(&b)) : lower_fmt(L, "%s", sb_str(&b));
    sb_free(&b);
    return r;
}

const char *lower_dims_text(lw *L, const int64_t *dims, int rank)
{
    strbuf d;
    sb_init(&d);
    for (int k = 0; k < rank; k++)
        sb_printf(&d, "%s%lld", k ? ", " : "", (long long)dims[k]);
    const char *r = lower_fmt(L, "[%s]", d.failed ? "?" : sb_str(&d));
    sb_free(&d);
    return r;
}

const char *lower_remark_width(lw *L, int w, unsigned size, const char *unit)
{
    if (w <= 1)
        return lower_fmt(L, "one element (%u bytes) at a time", size);
    return lower_fmt(L, "%d elements (%u bytes) a %s", w, w * size, unit);
}

const char *lower_remark_mask(lw *L, const tilec_expr *mask, int mono)
{
    if (!mask)
        return "";
    return mono ? ", mask on a prefix" : lower_fmt(L, ", mask `%s` per element", lower_expr_text(L, mask));
}

/* The name the pointer of access e is written with: the pointer operand
 * of its sums, a slice's base, else the whole expression. */
static const char *ptr_name(lw *L, const tilec_expr *p)
{
    const tilec_expr *e = p;
    for (int depth = 0; e && depth < 64; depth++) {
        if (e->kind == TILEC_EX_NAME)
            return e->name;
        const tilec_expr *next = NULL;
        if (e->kind == TILEC_EX_INDEX)
            next = e->args[0];
        else if (e->kind == TILEC_EX_BINARY || e->kind == TILEC_EX_CALL)
            for (uint32_t i = 0; i < e->nargs && !next; i++)
                if (e->args[i]->kind != TILEC_EX_DTYPE && lower_ty(L, e->args[i])->ptr)
                    next = e->args[i];
        e = next;
    }
    return lower_expr_text(L, p);
}

lower_mem_remark *lower_remark_mem(lw *L, const tilec_expr *e, const char *how, const char *why)
{
    if (!L->tg->remarks || L->failed) /* the twin's own passes remark nothing */
        return NULL;
    for (lower_mem_remark *r = L->mrem; r; r = r->next)
        if (r->e == e)
            return NULL;
    lower_mem_remark *r = ar_alloc(&L->ar, sizeof *r);
    if (!r) {
        L->failed = 1;
        return NULL;
    }
    const tilec_type *t = lower_ty(L, e->args[0]);
    memset(r, 0, sizeof *r);
    r->e = e;
    r->what = lower_fmt(L, "%s `%s` %s%s%s", tilec_is_builtin(e, BI_LOAD) ? "load" : tilec_is_builtin(e, BI_STORE) ? "store" : "atomic_add",
                        ptr_name(L, e->args[0]), t->rank ? lower_dims_text(L, t->dims, t->rank) : "", t->rank ? " " : "",
                        tilec_dtype_name(t->dtype));
    r->how = how;
    r->why = why;
    if (!L->mrem_end)
        L->mrem_end = &L->mrem;
    *L->mrem_end = r;
    L->mrem_end = &r->next;
    return r;
}

/* Source order: by line, then column, the order lowered among equals. */
static int mem_before(const lower_mem_remark *a, const lower_mem_remark *b)
{
    return a->e->loc.line != b->e->loc.line ? a->e->loc.line < b->e->loc.line : a->e->loc.col < b->e->loc.col;
}

/* What the sm_90a twin does instead, when it was emitted. */
static const char *mem_twin(const lw *L, const lower_mem_remark *r)
{
    const tilec_stmt *st = L->tw.plan.store;
    if (L->tw.loop && (r->e == L->tw_ld[0] || r->e == L->tw_ld[1]))
        return L->tw.plan.gather ? "; sm_90a twin: cp.async by its producer warps" : "; sm_90a twin: TMA";
    if (st && r->e == st->value) /* wgstore.c */
        return L->tw.plan.vstore ? "; sm_90a twin: staged in shared memory, 16-byte stores of whole rows"
                                 : "; sm_90a twin: TMA store";
    if (L->tw.plan.vstore_no && L->tw.plan.vstore_miss && r->e == L->tw.plan.vstore_miss->value)
        return L->tw.plan.vstore_no; /* wgstore.c: why a gather twin's store is not staged */
    return r->twin == 2 ? "; sm_90a twin: cp.async by its producer warps" : r->twin ? "; sm_90a twin: TMA" : "";
}

static void render_mem(lw *L, int twin, strbuf *out)
{
    int n = 0;
    for (lower_mem_remark *r = L->mrem; r; r = r->next)
        n++;
    if (!n)
        return;
    const lower_mem_remark **v = ar_array(&L->ar, (size_t)n, sizeof *v);
    if (!v) {
        out->failed = 1;
        return;
    }
    n = 0;
    for (lower_mem_remark *r = L->mrem; r; r = r->next) { /* insertion: stable */
        int i = n++;
        for (; i > 0 && mem_before(r, v[i - 1]); i--)
            v[i] = v[i - 1];
        v[i] = r;
    }
    for (int i = 0; i < n; i++)
        sb_printf(out, "line %u:%u: %s: %s%s%s%s\n", v[i]->e->loc.line, v[i]->e->loc.col, v[i]->what, v[i]->how,
                  v[i]->why ? "; below 16 bytes: " : "", v[i]->why ? v[i]->why : "", twin ? mem_twin(L, v[i]) : "");
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

/* The elements of type t (a scalar: 1). */
static int64_t ty_numel(const tilec_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i] > 0 ? t->dims[i] : 1;
    return n;
}

/* Each float tile division of e whose divisor is not a literal and has
 * at most an eighth of the quotient's values (a row broadcast, `acc /
 * l[:, None]`, or a scalar): every element is an IEEE division, where one
 * reciprocal per divisor value and a multiply would do, at another
 * rounding. Told in kernels with dot loops (attention's epilogue: 4-9% at
 * S = 1024, bench/results/merged_s51.md), where it is the block's tail;
 * a memory-bound row kernel's divisions hide under its loads. */
static void div_remarks(lw *L, const tilec_expr *e, strbuf *out, int depth)
{
    if (!e || depth > 64)
        return;
    if (e->kind == TILEC_EX_BINARY && e->op == TILEC_OP_DIV && e->nargs == 2) {
        const tilec_type *q = lower_ty(L, e), *d = lower_ty(L, e->args[1]);
        const tilec_expr *dv = lower_look(L, e->args[1]);
        int64_t nq = ty_numel(q), nd = ty_numel(d);
        if (q->rank && !q->ptr && tilec_dtype_class(q->dtype) == 'f' && dv->kind != TILEC_EX_FLOAT &&
            dv->kind != TILEC_EX_INT && nq >= 8 * nd)
            sb_printf(out,
                      "line %u:%u: `%s`: an IEEE division for each of its %lld elements, the divisor's %lld value%s "
                      "each used %lld times; the dividend times the divisor's reciprocal (`x * (1.0 / l)[:, None]`) "
                      "divides once a value (within 1.5 ulp of the quotient, not 0.5)\n",
                      e->loc.line, e->loc.col, lower_expr_text(L, e), (long long)nq, (long long)nd, nd == 1 ? "" : "s",
                      (long long)(nq / nd));
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        div_remarks(L, e->args[i], out, depth + 1);
}

static void div_remarks_block(lw *L, const tilec_block *b, strbuf *out)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_DOC)
            continue;
        div_remarks(L, s->value, out, 0);
        div_remarks(L, s->lo, out, 0);
        div_remarks(L, s->hi, out, 0);
        div_remarks(L, s->step, out, 0);
        div_remarks_block(L, &s->body, out);
        div_remarks_block(L, &s->orelse, out);
    }
}

void lower_remarks_render(lw *L, int twin, strbuf *out)
{
    lower_launch_order_remark(L, out);
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
    render_mem(L, twin, out);
    lower_exp_remarks(L, out);
    if (L->nrem)
        div_remarks_block(L, &L->k->body, out);
}
