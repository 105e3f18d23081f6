/* stmt.c: statements and control flow: let, assignment, store and other
 * calls, for and if, with the .tile line marker before each statement;
 * and the scans of a kernel body the lowering needs first (names assigned
 * somewhere, accumulators updated by a dot). */
#include <string.h>

#include "lower/marker.h"
#include "lower/lower_internal.h"
#include "util/escape.h"

int lower_in_list(const char **v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i], name))
            return 1;
    return 0;
}

/* x = x + dot(a, b) or x = dot(a, b) + x: returns the dot */
const tilec_expr *lower_dot_update(const tilec_stmt *s)
{
    if (s->kind != TILEC_ST_ASSIGN || s->value->kind != TILEC_EX_BINARY || s->value->op != TILEC_OP_ADD)
        return NULL;
    for (int i = 0; i < 2; i++) {
        const tilec_expr *x = s->value->args[i], *d = s->value->args[1 - i];
        if (x->kind == TILEC_EX_NAME && !strcmp(x->name, s->names[0]) && d->kind == TILEC_EX_CALL &&
            d->builtin == BI_DOT)
            return d;
    }
    return NULL;
}

void lower_scan_assigned(lw *L, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_ASSIGN) {
            const char **v = ar_array(&L->ar, (size_t)L->nassigned + 1, sizeof *v);
            if (!v) {
                L->failed = 1;
                return;
            }
            if (L->nassigned)
                memcpy(v, L->assigned, (size_t)L->nassigned * sizeof *v);
            v[L->nassigned++] = s->names[0];
            L->assigned = v;
            if (lower_dot_update(s)) {
                const char **d = ar_array(&L->ar, (size_t)L->ndotacc + 1, sizeof *d);
                if (!d) {
                    L->failed = 1;
                    return;
                }
                if (L->ndotacc)
                    memcpy(d, L->dotacc, (size_t)L->ndotacc * sizeof *d);
                d[L->ndotacc++] = s->names[0];
                L->dotacc = d;
            }
        }
        lower_scan_assigned(L, &s->body);
        lower_scan_assigned(L, &s->orelse);
    }
}

/* the dot that updates name (for its layout), or NULL */
static const tilec_expr *find_dot_for(const tilec_block *b, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        const tilec_expr *d = lower_dot_update(s);
        if (d && !strcmp(s->names[0], name))
            return d;
        if ((d = find_dot_for(&s->body, name)) || (d = find_dot_for(&s->orelse, name)))
            return d;
    }
    return NULL;
}

void lower_comment_loc(lw *L, const tilec_loc *loc)
{
    /* the file name escaped so the comment stays one comment line
     * (lower_loc_marker; compile.c finds the .tile line by it) */
    strbuf f;
    sb_init(&f);
    lower_loc_marker(&f, L->m->src.name);
    lower_line(L, "%s%u", sb_str(&f), loc->line);
    L->failed |= f.failed;
    sb_free(&f);
}

/* A /// doc comment, kept as a // comment. */
static void stmt_doc(lw *L, const tilec_stmt *s)
{
    strbuf b;
    sb_init(&b);
    esc_c_comment(&b, s->text);
    lower_line(L, "// %s", sb_str(&b));
    L->failed |= b.failed;
    sb_free(&b);
}

/* let: a scalar, a virtual tile bound to its expression, or registers (in the
 * layout of the dot that updates it, for an accumulator). */
/* A variable index64.c made 64-bit (assigned a 64-bit value somewhere)
 * whose first value is read from memory as a 32-bit one (x): declared
 * 64-bit as c and converted, so no later value is cut. */
static val *let_widen(lw *L, const val *x, const char *c)
{
    tilec_type t = x->ty;
    t.dtype = TILEC_DT_I64;
    val *v = lower_newval(L, x->kind, &t, c);
    if (x->kind == VK_SCALAR) {
        lower_line(L, "long long %s = %s;", c, x->c);
        return v;
    }
    v->ly = x->ly;
    lower_line(L, "long long %s[%d];", c, x->ly.E);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) %s[tl_j] = %s[tl_j];", x->ly.E, c, x->c);
    return v;
}

static void stmt_let(lw *L, const tilec_stmt *s)
{
    const tilec_type *t = lower_ty(L, s->value);
    const char *c = lower_cname(L, s->names[0]);
    if (!t->ptr && t->dtype == TILEC_DT_I32 && lower_ix_wide_name(L, s->names[0])) {
        val *x = lower_materialize(L, s->value, lower_newtmp(L, "w"), NULL);
        lower_bind(L, s->names[0], let_widen(L, x, c));
        return;
    }
    int assigned = lower_in_list(L->assigned, L->nassigned, s->names[0]);
    const val *r = lower_lookup(L, s->names[0]);
    if (r && r->kind == VK_RING && r->rlet == s) {
        lower_line(L, "// %s: in its cp.async ring at byte %s", c, r->c);
        return;
    }
    if (r && r->kind == VK_VIRT && r->rlet == s) {
        lower_line(L, "// %s: true on this tile", c);
        return;
    }
    if (t->rank == 0) {
        if (lower_is_materializing(s->value)) {
            val *v = lower_materialize(L, s->value, c, NULL);
            lower_bind(L, s->names[0], v);
            return;
        }
        lower_walk(L, s->value, NULL, 0, NULL, PREP);
        val *v = lower_newval(L, VK_SCALAR, t, c);
        v->ty.dtype = lower_compute_dt(t->dtype);
        /* a pointer stays writable through: `T *const p`, never `const T *p` */
        const char *decl = t->ptr ? lower_fmt(L, "%s *%s", lower_ctype(t->dtype), assigned ? "" : "const ")
                                  : lower_fmt(L, "%s%s", assigned ? "" : "const ", lower_cctype(t->dtype));
        lower_line(L, "%s %s = %s;", decl, c, lower_round(L, lower_walk(L, s->value, NULL, 0, NULL, EMIT), t->ptr ? TILEC_DT_I64 : t->dtype));
        lower_bind(L, s->names[0], v);
        return;
    }
    if (!assigned && lower_is_virtual(L, s->value)) {
        val *v = lower_newval(L, VK_VIRT, t, c);
        v->expr = s->value;
        lower_bind(L, s->names[0], v);
        lower_line(L, "// %s: %s tile computed where it is used", c, t->ptr ? "pointer" : "index");
        return;
    }
    lay want, *wp = NULL;
    if (lower_in_list(L->dotacc, L->ndotacc, s->names[0])) {
        const tilec_expr *d = find_dot_for(&L->k->body, s->names[0]);
        if (d && lower_dot_layout(L, lower_ty(L, d->args[0]), t->dims[0], t->dims[1], &want))
            wp = &want;
    } else if (lower_pick_let(L, s->names[0], s->value, &want)) {
        wp = &want;
    }
    /* what the analysis knows of the value, before the name hides it */
    const lower_axinfo *ax = lower_axinfo_let(L, s->names[0], s->value);
    matnode *early = lower_find_mat(L, s->value); /* a load the twin issued before its loop (wgmma.c, early_issue) */
    val *v = early ? early->v : lower_materialize(L, s->value, c, wp);
    if (early)
        lower_line(L, "// %s: loaded before the dot loop into %s", c, v->c);
    v->ax = ax;
    lower_bind(L, s->names[0], v);
}

/* Reads of name in e. */
static int stmt_reads(const tilec_expr *e, const char *name)
{
    if (!e)
        return 0;
    int n = e->kind == TILEC_EX_NAME && !strcmp(e->name, name);
    for (uint32_t i = 0; i < e->nargs; i++)
        n += stmt_reads(e->args[i], name);
    return n;
}

/* x = x * e + dot(a, b) (terms in either order, e * x too; e not reading
 * x), x in the dot's accumulator layout (the online softmax's rescaled
 * accumulator): x is scaled in place and the dot accumulates into it, no
 * temporary of x's size. 1 if emitted. */
static int scaled_dot_update(lw *L, const tilec_stmt *s, val *v)
{
    const tilec_expr *e = s->value;
    if (e->kind != TILEC_EX_BINARY || e->op != TILEC_OP_ADD || v->kind != VK_MAT || v->ly.kind != LY_MMA)
        return 0;
    for (int i = 0; i < 2; i++) {
        const tilec_expr *m = e->args[i], *d = e->args[1 - i];
        if (!tilec_is_builtin(d, BI_DOT) || m->kind != TILEC_EX_BINARY || m->op != TILEC_OP_MUL)
            continue;
        int xi = m->args[0]->kind == TILEC_EX_NAME && !strcmp(m->args[0]->name, s->names[0]) ? 0 : 1;
        const tilec_expr *x = m->args[xi];
        lay y;
        if (x->kind != TILEC_EX_NAME || strcmp(x->name, s->names[0]) || stmt_reads(m->args[1 - xi], s->names[0]) ||
            stmt_reads(d, s->names[0]) || !lower_same_shape(lower_ty(L, m), &v->ty) ||
            !lower_same_shape(lower_ty(L, d), &v->ty) ||
            !lower_dot_layout(L, lower_ty(L, d->args[0]), v->ty.dims[0], v->ty.dims[1], &y) ||
            !lower_same_layout(L, &y, &v->ly))
            continue;
        lower_walk(L, m, lower_idx, 1, &v->ly, PREP);
        lower_loop_begin(L, &v->ly);
        lower_line(L, "%s[tl_j] = %s;", v->c,
                   lower_st_elem(L, lower_conv(L, lower_walk(L, m, lower_idx, 1, &v->ly, EMIT), lower_ty(L, m)->dtype, v->ty.dtype), v->ty.dtype));
        lower_loop_end(L);
        L->curdot = d;
        lower_emit_dot_into(L, d->args[0], d->args[1], v);
        lower_note(L, "  line %u: %s scaled in place, the dot accumulating into it", L->line, v->c);
        return 1;
    }
    return 0;
}

/* x = value: a scalar, a dot accumulation, or a register tile recomputed
 * through a temporary. */
static void stmt_assign(lw *L, const tilec_stmt *s)
{
    val *v = lower_lookup(L, s->names[0]);
    if (!v) {
        lower_fail(L, &s->loc, "internal error: assignment to unbound '%s'", s->names[0]);
        return;
    }
    if (v->kind == VK_SCALAR) {
        lower_walk(L, s->value, NULL, 0, NULL, PREP);
        const char *x = lower_walk(L, s->value, NULL, 0, NULL, EMIT);
        if (!v->ty.ptr) /* b = b + x for b: bf16 rounds; a pointer is assigned as it is */
            x = lower_round(L, lower_conv(L, x, lower_ty(L, s->value)->dtype, v->ty.dtype), v->held);
        lower_line(L, "%s = %s;", v->c, x);
        return;
    }
    const tilec_expr *d = lower_dot_update(s);
    if (d) {
        L->curdot = d;
        lower_emit_dot_into(L, d->args[0], d->args[1], v);
        return;
    }
    if (scaled_dot_update(L, s, v))
        return;
    lower_walk(L, s->value, lower_idx, 1, &v->ly, PREP);
    const char *tmp = lower_newtmp(L, "n");
    lower_line(L, "%s %s[%d];", lower_vctype(L, &v->ty), tmp, v->ly.E);
    lower_loop_begin(L, &v->ly);
    lower_line(L, "%s[tl_j] = %s;", tmp,
         lower_st_val(L, lower_conv(L, lower_walk(L, s->value, lower_idx, 1, &v->ly, EMIT), lower_ty(L, s->value)->dtype, v->ty.dtype), &v->ty));
    lower_loop_end(L);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) %s[tl_j] = %s[tl_j];", v->ly.E, v->c, tmp);
}

/* A call for its effects: store and atomic_add over the value's layout. */
static void stmt_expr(lw *L, const tilec_stmt *s)
{
    const tilec_expr *e = s->value;
    if (tilec_is_builtin(e, BI_STORE) || tilec_is_builtin(e, BI_ATOMIC_ADD)) {
        const tilec_type *pt = lower_ty(L, e->args[0]);
        lay y = lower_pick_for(L, e->args[1]);
        if (!lower_same_shape(lower_ty(L, e->args[1]), pt))
            y = lower_pick(L, pt);
        const tilec_expr *value = e->args[1];
        if (value->kind == TILEC_EX_NAME) {
            val *v = lower_lookup(L, value->name);
            if (v && v->kind == VK_MAT && lower_same_shape(&v->ty, pt))
                y = v->ly;
        }
        if (L->tg->store && L->tg->store(L, s, &y)) /* the target's own (the sm_90a twin's epilogue by TMA) */
            return;
        if (L->tg->note_store) /* the twin decision: whether the twin may (wgstore.c) */
            L->tg->note_store(L, s);
        lower_emit_store(L, e, &y, NULL);
        return;
    }
    /* any other call: evaluate for its effects */
    lower_walk(L, e, NULL, 0, NULL, PREP);
}

/* v < hi, so hi - v is exact in unsigned arithmetic (1 .. 2^32 - 1 for
 * an int); v + st < hi exactly when it exceeds st, and then v + st cannot
 * wrap. Otherwise v becomes hi and the loop ends, as it would have. A
 * run-time step must be positive (docs/language.md, "for"); one that is
 * not is a large unsigned value, so the loop ends after its first trip
 * unless hi - v is larger still (v negative, hi positive). */
int lower_loop_wide(lw *L, const tilec_stmt *s)
{
    for (int i = 0; i < 2; i++) {
        tilec_dtype d = lower_ty(L, i ? s->hi : s->lo)->dtype;
        if (d == TILEC_DT_I64 || d == TILEC_DT_U64 || d == TILEC_DT_U32)
            return 1;
    }
    return 0;
}

const char *lower_loop_next(lw *L, const tilec_stmt *s, const char *v, const char *hi, const char *st, int mult)
{
    int wide = s && lower_loop_wide(L, s);
    if (s && mult == 1 && lower_ix_loop_safe(L, s, wide))
        return lower_fmt(L, "%s += %s", v, st);
    /* a 64-bit step (num_programs(0) * BLOCK may pass 2^31) is compared whole */
    int wide_st = wide || (s && s->step && lower_ty(L, s->step)->dtype == TILEC_DT_I64);
    const char *u = wide_st ? "unsigned long long" : "unsigned";
    return lower_fmt(L, "%s = (%s)(%s) - (%s)%s > (%s)(%s) ? %s + (%s) : (%s)", v, u, hi, u, v, u, st, v, st, hi);
}

/* for v in lo .. hi step s: a cp.async pipeline when it qualifies. */
static void stmt_for(lw *L, const tilec_stmt *s)
{
    int sync0 = L->nsync;
    unsigned line = s->loc.line;
    lower_miss_reset(L); /* the remarks give the first reason a check refused */
    if (lower_pipelined_loop(L, s)) {
        lower_note(L, "  loop at line %u: %d __syncthreads per iteration (cp.async pipeline)", line, L->nsync - sync0);
        if (L->split && s == L->split_loop && L->split_acc)
            lower_split_reduce(L, L->split_acc);
        return;
    }
    const char *v = lower_cname(L, s->names[0]);
    if (lower_ring_loop(L, s)) {
        lower_note(L, "  loop at line %u: %d __syncthreads per iteration (cp.async ring)", line, L->nsync - sync0);
        return;
    }
    if (lower_block_dots(&s->body))
        lower_remark_dot(L, s, "its loads through registers (no cp.async pipeline)", "a cp.async pipeline");
    lower_plan_loop(L, s, 2);
    lower_walk(L, s->lo, NULL, 0, NULL, PREP);
    lower_walk(L, s->hi, NULL, 0, NULL, PREP);
    if (s->step)
        lower_walk(L, s->step, NULL, 0, NULL, PREP);
    const char *lo = lower_walk(L, s->lo, NULL, 0, NULL, EMIT), *hi = lower_walk(L, s->hi, NULL, 0, NULL, EMIT);
    const char *st = s->step ? lower_walk(L, s->step, NULL, 0, NULL, EMIT) : "1";
    const char *ty = lower_loop_wide(L, s) ? "long long" : "int";
    lower_line(L, "for (%s %s = %s; %s < %s; %s) {", ty, v, lo, v, hi, lower_loop_next(L, s, v, hi, st, 1));
    L->ind++;
    L->depth++;
    tilec_type it = {.kind = TILEC_TY_VALUE, .dtype = ty[0] == 'l' ? TILEC_DT_I64 : TILEC_DT_I32};
    lower_bind(L, s->names[0], lower_newval(L, VK_SCALAR, &it, v));
    lower_emit_block(L, &s->body);
    lower_leave(L);
    L->ind--;
    lower_line(L, "}");
    lower_note(L, "  loop at line %u: %d __syncthreads per iteration", line, L->nsync - sync0);
}

/* A block one level in, its names in a scope of their own. */
static void scoped_block(lw *L, const tilec_block *b)
{
    L->ind++;
    L->depth++;
    lower_emit_block(L, b);
    lower_leave(L);
    L->ind--;
}

/* if / else, each block a scope. */
static void stmt_if(lw *L, const tilec_stmt *s)
{
    lower_walk(L, s->value, NULL, 0, NULL, PREP);
    lower_line(L, "if (%s) {", lower_walk(L, s->value, NULL, 0, NULL, EMIT));
    scoped_block(L, &s->body);
    if (s->has_else) {
        lower_line(L, "} else {");
        scoped_block(L, &s->orelse);
    }
    lower_line(L, "}");
}

static void issue_loads(lw *L, const tilec_block *b, uint32_t i);

static void emit_stmt(lw *L, const tilec_block *b, uint32_t i)
{
    const tilec_stmt *s = b->stmts[i];
    L->nmats = 0;
    L->nspilled = 0;
    L->line = s->loc.line;
    if (s->kind != TILEC_ST_DOC)
        lower_comment_loc(L, &s->loc);
    if (s->kind == TILEC_ST_LET)
        issue_loads(L, b, i);
    else if (s->kind != TILEC_ST_DOC)
        L->npre = 0;
    switch (s->kind) {
    case TILEC_ST_DOC: stmt_doc(L, s); return;
    case TILEC_ST_LET: stmt_let(L, s); return;
    case TILEC_ST_ASSIGN: stmt_assign(L, s); return;
    case TILEC_ST_EXPR: stmt_expr(L, s); return;
    case TILEC_ST_FOR: stmt_for(L, s); return;
    case TILEC_ST_IF: stmt_if(L, s); return;
    default:
        lower_fail(L, &s->loc, "internal error: statement not allowed in a kernel");
        return;
    }
}

/* The loads first in a run of lets (issue_loads): what a let's value may
 * hold for its loads to be issued ahead or across it: elementwise work on
 * loads and index tiles, nothing that writes, stages or reduces. */
static int ahead_ok(const tilec_expr *e)
{
    static const tilec_builtin ok[] = {BI_LOAD, BI_CAST, BI_RANGE, BI_PID, BI_NUM_PROGRAMS, BI_CDIV, BI_MIN, BI_MAX,
                                       BI_MAXIMUM, BI_MINIMUM, BI_WHERE, BI_FULL, BI_ZEROS};
    switch (e->kind) {
    case TILEC_EX_INT: case TILEC_EX_FLOAT: case TILEC_EX_BOOL: case TILEC_EX_INF: case TILEC_EX_NAME:
    case TILEC_EX_DTYPE: case TILEC_EX_NONE: case TILEC_EX_SLICE: case TILEC_EX_UNARY: case TILEC_EX_BINARY:
    case TILEC_EX_INDEX:
        break;
    case TILEC_EX_CALL: {
        size_t i = 0;
        while (i < sizeof ok / sizeof ok[0] && (int)ok[i] != e->builtin)
            i++;
        if (i == sizeof ok / sizeof ok[0])
            return 0;
        break;
    }
    default:
        return 0;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (e->args[i] && !ahead_ok(e->args[i]))
            return 0;
    return 1;
}

/* A tile load whose pointer and mask read only what is bound now (no
 * load inside them, no cp.async ring), none of the names in `after` (the
 * lets it is issued ahead of). */
static int load_ready(lw *L, const tilec_expr *e, const char *const *after, int nafter)
{
    if (e->kind == TILEC_EX_NAME) {
        int64_t h;
        val *v = lower_lookup(L, e->name);
        if (lower_in_list((const char **)after, nafter, e->name))
            return 0;
        return v ? v->kind != VK_RING : lower_hint_value(L, e->name, &h);
    }
    if (tilec_is_builtin(e, BI_LOAD) || lower_is_materializing(e))
        return 0;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (e->args[i] && !load_ready(L, e->args[i], after, nafter))
            return 0;
    return 1;
}

/* The tile loads of e (not inside another load), at most n. */
static int loads_of(lw *L, const tilec_expr *e, const tilec_expr **out, int k, int n)
{
    if (tilec_is_builtin(e, BI_LOAD)) {
        if (k < n && lower_ty(L, e)->rank > 0)
            out[k++] = e;
        return k;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (e->args[i])
            k = loads_of(L, e->args[i], out, k, n);
    return k;
}

/* A let whose value loads and computes on what it loaded (not a bare
 * load: that one is its own registers, in its let's layout), in registers
 * of the usual layout (no accumulator, no dot operand, no widening). */
static int ahead_let(lw *L, const tilec_stmt *s)
{
    lay y;
    const val *r;
    return s->kind == TILEC_ST_LET && s->nnames == 1 && !tilec_is_builtin(s->value, BI_LOAD) &&
           lower_ty(L, s->value)->rank > 0 && ahead_ok(s->value) &&
           !lower_in_list(L->assigned, L->nassigned, s->names[0]) && !lower_in_list(L->dotacc, L->ndotacc, s->names[0]) &&
           !lower_ix_wide_name(L, s->names[0]) && !lower_pick_let(L, s->names[0], s->value, &y) &&
           !((r = lower_lookup(L, s->names[0])) && r->rlet == s);
}

/* The loads first: in a run of lets each computing on its own loads
 * (x1 = cast(load(..)), x2 = cast(load(..)), ...), the first one's
 * statement issues the loads of the lets after it too, before its own
 * arithmetic: emitted in source order, each let's conversion stood
 * between its load and the next one's, and the compiler issued the later
 * loads only after the earlier ones had arrived (their alignment branches
 * keep it from moving them up). Each load is materialized as its let
 * would (its own layout, lower_pick_for) and found by lower_find_mat when
 * that let comes. A load is issued ahead only where its pointer and mask
 * read names bound before the run and no let between writes, stages or
 * reduces; the run ends at the first other statement (a store, a loop). */
static void issue_loads(lw *L, const tilec_block *b, uint32_t i)
{
    const tilec_expr *ld[LOWER_MAX_PRE];
    if (L->npre || L->tw.on || L->hoist || L->stepdiv || !ahead_let(L, b->stmts[i]) ||
        !loads_of(L, b->stmts[i]->value, ld, 0, LOWER_MAX_PRE))
        return;
    const tilec_stmt *of[LOWER_MAX_PRE];
    const char *after[64];
    int n = 0, nafter = 0, later = 0;
    for (uint32_t k = i; k < b->nstmts && n < LOWER_MAX_PRE && nafter < 64; k++) {
        const tilec_stmt *s = b->stmts[k];
        if (s->kind != TILEC_ST_LET || s->nnames != 1 || !ahead_ok(s->value))
            break;
        if (k > i && lower_lookup(L, s->names[0])) /* a name bound again: left in its order */
            break;
        if (ahead_let(L, s)) {
            const tilec_expr *e[LOWER_MAX_PRE];
            int m = loads_of(L, s->value, e, 0, LOWER_MAX_PRE);
            for (int j = 0; j < m && n < LOWER_MAX_PRE; j++)
                if (load_ready(L, e[j]->args[0], after, nafter) &&
                    (e[j]->nargs < 2 || load_ready(L, e[j]->args[1], after, nafter)) &&
                    (e[j]->nargs < 3 || load_ready(L, e[j]->args[2], after, nafter))) {
                    of[n] = s;
                    ld[n++] = e[j];
                    later |= k > i;
                }
        }
        after[nafter++] = s->names[0];
    }
    if (!later)
        return;
    unsigned line = L->line;
    for (int j = 0; j < n && !L->failed; j++) {
        L->line = of[j]->loc.line;
        if (of[j] != b->stmts[i])
            lower_line(L, "// line %u's load, issued here with line %u's (the loads before their arithmetic)",
                       of[j]->loc.line, line);
        L->pre[L->npre++] = (matnode){ld[j], lower_materialize(L, ld[j], NULL, NULL)};
    }
    L->line = line;
}

void lower_emit_block(lw *L, const tilec_block *b)
{
    L->npre = 0;
    for (uint32_t i = 0; i < b->nstmts && !L->failed; i++)
        emit_stmt(L, b, i);
    L->npre = 0;
}

int lower_mentions(const tilec_expr *e, const char *name)
{
    if (!e)
        return 0;
    if (e->kind == TILEC_EX_NAME && !strcmp(e->name, name))
        return 1;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (lower_mentions(e->args[i], name))
            return 1;
    return 0;
}

int lower_stmt_mentions(const tilec_stmt *s, const char *name)
{
    for (uint32_t j = 0; j < s->nnames; j++)
        if (!strcmp(s->names[j], name))
            return 1;
    if (lower_mentions(s->value, name) || lower_mentions(s->lo, name) || lower_mentions(s->hi, name) ||
        lower_mentions(s->step, name))
        return 1;
    for (uint32_t i = 0; i < s->body.nstmts; i++)
        if (lower_stmt_mentions(s->body.stmts[i], name))
            return 1;
    for (uint32_t i = 0; i < s->orelse.nstmts; i++)
        if (lower_stmt_mentions(s->orelse.stmts[i], name))
            return 1;
    return 0;
}
