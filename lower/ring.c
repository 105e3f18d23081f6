/* ring.c: cp.async rings for the loaded dot operands of any loop.
 *
 * In a loop that is not a plain dot loop (pipeline.c), every `let x = load(...)` whose one reader is a dot's B
 * operand on tensor cores (attention's K and V tiles) is copied by
 * cp.async into a ring of stages (lower_stages) shared-memory buffers, stages-1
 * iterations ahead: the copies of the next tiles are in flight while the
 * current iteration computes, and never pass through registers. The dot
 * reads its fragments from the ring with ldmatrix (dot.c). One
 * __syncthreads per iteration, at the top, after the wait for this
 * iteration's tiles; it also stands between every dot's last reads and
 * the next writes of its buffers, so the dots stage without barriers
 * before (lower_plan_loop). */
#include <string.h>

#include "lower/lower_internal.h"

/* e is `name`, or trans(...) of it (the dot reads the ring transposed). */
static int ring_operand_is(const tilec_expr *e, const char *name)
{
    while (tilec_is_builtin(e, BI_TRANS) && e->nargs == 1)
        e = e->args[0];
    return e->kind == TILEC_EX_NAME && !strcmp(e->name, name);
}

/* Reads of `name` in e: *asb counts those as a tensor-core dot's B
 * operand (dot(a, name) or dot(a, trans(name)) with a of type ad), the
 * return value all others. */
static int ring_reads(lw *L, const tilec_expr *e, const char *name, tilec_dtype ld, int *asb)
{
    if (!e)
        return 0;
    if (e->kind == TILEC_EX_NAME)
        return !strcmp(e->name, name);
    int n = 0;
    for (uint32_t i = 0; i < e->nargs; i++) {
        const tilec_expr *x = e->args[i];
        if (tilec_is_builtin(e, BI_DOT) && i == 1 && ring_operand_is(x, name)) {
            const tilec_type *at = lower_ty(L, e->args[0]), *t = lower_ty(L, e);
            lay y;
            if (at->dtype == ld && lower_dot_layout(L, at, t->dims[0], t->dims[1], &y) && y.kind == LY_MMA) {
                ++*asb;
                continue;
            }
        }
        n += ring_reads(L, x, name, ld, asb);
    }
    return n;
}

/* Reads of `name` in a block (nested blocks too); stores anywhere make it
 * -1: a copy issued ahead could read memory the loop writes. */
static int ring_block_reads(lw *L, const tilec_block *b, const char *name, tilec_dtype ld, int *asb)
{
    int n = 0;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_DOC)
            continue;
        const tilec_expr *v = s->value;
        if (v && (tilec_is_builtin(v, BI_STORE) || tilec_is_builtin(v, BI_ATOMIC_ADD)))
            return -1;
        if (s->kind == TILEC_ST_FOR) {
            n += ring_reads(L, s->lo, name, ld, asb) + ring_reads(L, s->hi, name, ld, asb) +
                 ring_reads(L, s->step, name, ld, asb);
        } else {
            n += ring_reads(L, v, name, ld, asb);
        }
        int in = ring_block_reads(L, &s->body, name, ld, asb), el = ring_block_reads(L, &s->orelse, name, ld, asb);
        if (in < 0 || el < 0)
            return -1;
        n += in + el;
    }
    return n;
}

/* The let of `name` among the loop body's statements, or NULL. */
static const tilec_stmt *body_let(const tilec_block *b, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts; i++)
        if (b->stmts[i]->kind == TILEC_ST_LET && !strcmp(b->stmts[i]->names[0], name))
            return b->stmts[i];
    return NULL;
}

/* The let of `let y = trans(x)` in the loop body (y never re-assigned),
 * or NULL: y reads x's ring transposed. */
static const tilec_stmt *ring_alias(lw *L, const tilec_block *b, const char *x)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_LET && tilec_is_builtin(s->value, BI_TRANS) &&
            s->value->nargs == 1 && s->value->args[0]->kind == TILEC_EX_NAME && !strcmp(s->value->args[0]->name, x) &&
            !lower_in_list(L->assigned, L->nassigned, s->names[0]))
            return s;
    }
    return NULL;
}

/* May e be computed for a later iteration at the top of this one? The
 * loop variable, the body's virtual index tiles built from such names, and
 * names from outside the loop that nothing assigns. */
static int ring_ahead(lw *L, const tilec_stmt *loop, const tilec_expr *e, int depth)
{
    if (!e || depth > 32)
        return !e;
    if (e->kind == TILEC_EX_NAME) {
        if (!strcmp(e->name, loop->names[0]))
            return 1;
        if (lower_in_list(L->assigned, L->nassigned, e->name))
            return 0;
        const tilec_stmt *s = body_let(&loop->body, e->name);
        if (!s)
            return 1;
        val *v = lower_lookup(L, e->name);
        return v && v->kind == VK_VIRT && v->expr == s->value && ring_ahead(L, loop, s->value, depth + 1);
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!ring_ahead(L, loop, e->args[i], depth + 1))
            return 0;
    return 1;
}

/* Does `let x = load(...)` qualify for a ring? Statements that are not
 * loads are skipped silently; a load that does not qualify records why. */
static int ring_candidate(lw *L, const tilec_stmt *loop, const tilec_stmt *s, ring_op *op)
{
    const tilec_expr *ld = s->value;
    if (s->kind != TILEC_ST_LET || !tilec_is_builtin(ld, BI_LOAD))
        return 0;
    unsigned line = s->loc.line;
    const char *x = s->names[0];
    if (lower_in_list(L->assigned, L->nassigned, x))
        return lower_miss(L, line, "%s is re-assigned", x);
    const tilec_type *t = lower_ty(L, ld);
    if (t->rank != 2 || (t->dtype != TILEC_DT_F16 && t->dtype != TILEC_DT_BF16))
        return lower_miss(L, line, "%s is not a 2-D f16 or bf16 tile", x);
    for (uint32_t j = 0; j < ld->nargs; j++)
        if (!lower_is_virtual(L, ld->args[j]) || !ring_ahead(L, loop, ld->args[j], 0))
            return lower_miss(L, line, "the %s of load %s cannot be computed an iteration ahead (it reads loaded data "
                                       "or a name the loop re-assigns)",
                              j == 0 ? "pointer" : j == 1 ? "mask" : "`other`", x);
    if (ld->nargs > 2 && !lower_is_zero(L, ld->args[2]))
        return lower_miss(L, line, "the `other` of load %s is not zero (cp.async fills with zeros)", x);
    int64_t s0 = 0, s1 = 0;
    if (lower_stride(L, ld->args[0], 1, &s1) && s1 == 1)
        op->trans = 0;
    else if (lower_stride(L, ld->args[0], 0, &s0) && s0 == 1)
        op->trans = 1;
    else
        return lower_miss(L, line, "load %s is contiguous along neither axis", x);
    if ((op->trans ? t->dims[0] : t->dims[1]) % 8)
        return lower_miss(L, line, "the contiguous axis of load %s is not whole 16-byte chunks", x);
    /* read once, as a dot's B: x itself, or y of `let y = trans(x)` */
    int asb = 0, other = ring_block_reads(L, &loop->body, x, t->dtype, &asb);
    op->alias = ring_alias(L, &loop->body, x);
    if (op->alias && other > 0) {
        int o = ring_block_reads(L, &loop->body, op->alias->names[0], t->dtype, &asb);
        other = o < 0 ? -1 : other - 1 + o; /* the alias's own read of x */
    }
    if (other != 0 || asb != 1)
        return lower_miss(L, line, "%s is read other than as one tensor-core dot's B operand, or the loop stores", x);
    op->let = s;
    op->ld = (int)(op->trans ? t->dims[0] : t->dims[1]) + 8;
    op->bytes = (op->trans ? t->dims[1] : t->dims[0]) * op->ld * (int64_t)tilec_dtype_size(t->dtype);
    return 1;
}

static int ring_check(lw *L, const tilec_stmt *loop, ring_plan *rp)
{
    memset(rp, 0, sizeof *rp);
    int64_t stage = 0;
    for (uint32_t i = 0; i < loop->body.nstmts && rp->n < RING_MAX; i++)
        if (ring_candidate(L, loop, loop->body.stmts[i], &rp->op[rp->n]))
            stage += rp->op[rp->n++].bytes;
    if (!rp->n)
        return lower_miss(L, loop->loc.line, "no load in the loop is a dot's B operand alone");
    rp->S = lower_stages(L, stage);
    if (rp->S < 2)
        return lower_miss(L, loop->loc.line, tilec_kernel_hint(L->k, L->variant, "stages", 0)
                                                 ? "the `stages` hint is 1"
                                                 : "no two stages of its rings (%lld bytes a stage) fit in shared "
                                                   "memory with what the rest of the kernel takes",
                          (long long)stage);
    return 1;
}

/* The condition under which every 16-byte chunk of load e is in bounds
 * and aligned: its mask true on the whole tile, its first element 16-byte
 * aligned and the stride across rows a multiple of 16 bytes; NULL when
 * that is not known, and why in *why (for the remark). */
static const char *ring_whole(lw *L, const tilec_expr *e, int trans, const char **why, const char **first)
{
    const tilec_type *t = lower_ty(L, e);
    int64_t st;
    if (!lower_stride(L, e->args[0], trans ? 1 : 0, &st) || (st * (int64_t)tilec_dtype_size(t->dtype)) % 16) {
        *why = lower_fmt(L, "the stride along axis %d is not a known multiple of 16 bytes", trans ? 1 : 0);
        return NULL;
    }
    const char *in = e->nargs > 1 ? lower_all_true(L, e->args[1]) : "true";
    if (!in) {
        *why = "no condition on the tile's corners tells that its mask holds on all of it";
        return NULL;
    }
    const char *zero[TILEC_MAX_RANK] = {"0", "0"}, *sub[TILEC_MAX_RANK];
    lower_map_bcast(lower_ty(L, e->args[0]), 2, zero, sub);
    lower_walk(L, e->args[0], sub, 0, NULL, PREP);
    *first = lower_walk(L, e->args[0], sub, 0, NULL, EMIT);
    return lower_fmt(L, "%s && ((unsigned long long)(%s) & 15) == 0", in, *first);
}

/* The stride in elements along each axis of load e's pointer tile when
 * it is affine (unit stride along its contiguous axis, a known constant
 * along the other) and every offset within the tile fits an int; 0
 * otherwise. */
static int ring_affine(lw *L, const tilec_expr *e, int trans, int64_t s[2])
{
    const tilec_type *t = lower_ty(L, e);
    if (!lower_stride(L, e->args[0], 0, &s[0]) || !lower_stride(L, e->args[0], 1, &s[1]) || s[trans ? 0 : 1] != 1)
        return 0;
    int64_t far = 0;
    for (int a = 0; a < 2; a++)
        far += (t->dims[a] - 1) * (s[a] < 0 ? -s[a] : s[a]);
    return far < INT32_MAX / 2;
}

/* The copies of a whole tile, every chunk one cp.async (thread tl_tid's
 * q-th chunk the (q * nt + tl_tid)-th of the tile, row-major along its
 * contiguous axis). Where the pointer tile is affine (ring_affine) and a
 * step of q is whole rows (nt chunks span rows exactly) that keep the
 * buffer's layout (the swizzle's row phase: 8-row multiples), chunk q's
 * addresses are the thread's first chunk's plus q constant steps, both
 * for global and shared memory, so each copy takes its addresses as
 * constant offsets of two registers and nothing is held across
 * iterations. Otherwise each address is the load's own expression at the
 * chunk's indices, which the compiler hoists out of the loop: in the
 * producer warp group of the d = 128 attention twin, 16 of them a stage
 * against 56 registers, 20 `LDL` an iteration and 64 `LEA`. */
static void ring_copy_whole(lw *L, const tilec_expr *e, const char *dst, int ld, int trans, const char *first)
{
    const tilec_type *t = lower_ty(L, e);
    int64_t R = t->dims[0], C = t->dims[1], run = trans ? R : C, s[2];
    int chunks = (int)(R * C / 8), per = (chunks + L->nt - 1) / L->nt;
    const char *ct = lower_ctype(t->dtype), *ri = trans ? "tl_i1" : "tl_i0", *ci = trans ? "tl_i0" : "tl_i1";
    int64_t rows = (L->nt * 8) % run == 0 ? L->nt * 8 / run : 0; /* rows a step of q */
    if (rows && (!L->swz_rows || rows % 8 == 0) && ring_affine(L, e, trans, s)) {
        lower_line(L, "{ /* affine: the thread's first chunk, then constant steps */");
        L->ind++;
        lower_line(L, "const int %s = tl_tid * 8 / %lld, %s = tl_tid * 8 %% %lld;", ri, (long long)run, ci,
                   (long long)run);
        lower_line(L, "const %s *tl_g = %s + (tl_i0 * %lld + tl_i1 * %lld);", ct, first, (long long)s[0],
                   (long long)s[1]);
        lower_line(L, "const int tl_d = %s;", lower_smem_at(L, trans, ld));
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_q = 0; tl_q < %d; ++tl_q) {", per);
        if (per * L->nt != chunks)
            lower_line(L, "    if (tl_q * %d + tl_tid >= %d) break;", L->nt, chunks);
        lower_line(L, "    tl_cp16((%s *)(tl_smem + %s) + tl_d + tl_q * %lld, tl_g + tl_q * %lldLL, 16);", ct, dst,
                   (long long)(rows * (L->swz_rows ? 64 : ld)), (long long)(rows * s[trans ? 1 : 0]));
        lower_line(L, "}");
        L->ind--;
        lower_line(L, "}");
        return;
    }
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_q = 0; tl_q < %d; ++tl_q) {", per);
    L->ind++;
    lower_line(L, "const int tl_l = (tl_q * %d + tl_tid) * 8;", L->nt);
    if (per * L->nt != chunks)
        lower_line(L, "if (tl_l >= %d) break;", chunks * 8);
    lower_line(L, "const int %s = tl_l / %lld, %s = tl_l %% %lld;", ri, (long long)run, ci, (long long)run);
    const char *sub[TILEC_MAX_RANK];
    lower_map_bcast(lower_ty(L, e->args[0]), 2, lower_idx, sub);
    lower_line(L, "tl_cp16((%s *)(tl_smem + %s) + %s, %s, 16);", ct, dst, lower_smem_at(L, trans, ld),
               lower_walk(L, e->args[0], sub, 0, NULL, EMIT));
    L->ind--;
    lower_line(L, "}");
}

/* One iteration's copies of every ring into slot `slot`: a whole tile
 * with one cp.async per chunk, any other with the checks of
 * lower_emit_async_load. */
void lower_ring_issue(lw *L, const void *ctx, const char *slot)
{
    const ring_plan *rp = ctx;
    for (int i = 0; i < rp->n; i++) {
        const ring_op *o = &rp->op[i];
        const char *dst = lower_fmt(L, "%s%u + %s * %lld", rp->base ? rp->base : "", o->off, slot, (long long)o->bytes);
        const tilec_type *t = lower_ty(L, o->let->value);
        L->swz_rows = rp->wg ? t->dims[o->trans ? 1 : 0] : 0; /* the attention twin: rows of the swizzle */
        const char *partial = NULL, *first = NULL;
        const char *whole = ring_whole(L, o->let->value, o->trans, &partial, &first);
        const tilec_expr *ld = o->let->value, *mask = ld->nargs > 1 ? ld->args[1] : NULL;
        lower_mem_remark *rm = lower_remark_mem(
            L, ld,
            lower_fmt(L, "cp.async into a ring (%d stages), %s%s%s%s", rp->S, lower_remark_width(L, 8, tilec_dtype_size(t->dtype), "chunk"),
                      whole ? ", a whole tile without checks where it is in bounds" : ", each chunk checked (",
                      whole ? "" : lower_fmt(L, "%s)", partial),
                      lower_remark_mask(L, mask, mask && lower_monotone_mask(L, mask, 2, o->trans ? 0 : 1))),
            NULL);
        if (rm) /* the twin's producer: TMA where maps describe the rings (wgattn.c), else cp.async */
            rm->twin = rp->twin ? (L->tw.plan.nmaps ? 1 : 2) : 0;
        if (whole) {
            lower_line(L, "if (%s) {", whole);
            L->ind++;
            ring_copy_whole(L, o->let->value, dst, o->ld, o->trans, first);
            L->ind--;
            lower_line(L, "} else {");
            L->ind++;
        }
        lower_emit_async_load(L, o->let->value, dst, o->ld, o->trans);
        if (whole) {
            L->ind--;
            lower_line(L, "}");
        }
        L->swz_rows = 0;
    }
}

const char *lower_smem_at(lw *L, int trans, int ld)
{
    const char *r = trans ? "tl_i1" : "tl_i0", *c = trans ? "tl_i0" : "tl_i1";
    if (L->swz_rows) /* row r's 16-byte chunk k at chunk k ^ (r % 8), 64 columns a box of swz_rows rows */
        return lower_fmt(L, "((%s >> 6) * %lld + %s * 64 + ((((%s >> 3) & 7) ^ (%s & 7)) << 3) + (%s & 7))", c,
                         (long long)(L->swz_rows * 64), r, c, r, c);
    return lower_fmt(L, "%s * %d + %s", r, ld, c);
}

/* The body's masks (virtual boolean tiles bound by let) and the C
 * condition under which all of them hold on the whole tile; 0: none. */
static int ring_masks(lw *L, const tilec_stmt *loop, const tilec_stmt **mk, const char **cond)
{
    int n = 0;
    strbuf c;
    sb_init(&c);
    lower_bind_loop_scope(L, loop);
    for (uint32_t i = 0; i < loop->body.nstmts && n < RING_MAX; i++) {
        const tilec_stmt *s = loop->body.stmts[i];
        if (s->kind != TILEC_ST_LET || lower_ty(L, s->value)->rank == 0 || lower_ty(L, s->value)->dtype != TILEC_DT_BOOL ||
            lower_in_list(L->assigned, L->nassigned, s->names[0]) || !lower_is_virtual(L, s->value) ||
            !ring_ahead(L, loop, s->value, 0)) /* decided at the top: nothing the body assigns */
            continue;
        const char *t = lower_all_true(L, s->value);
        if (!t)
            continue;
        sb_printf(&c, "%s%s", n ? " && " : "", t);
        mk[n++] = s;
    }
    lower_leave(L);
    *cond = n ? lower_fmt(L, "%s", sb_str(&c)) : NULL;
    L->failed |= c.failed;
    sb_free(&c);
    return n;
}

/* The body with each ring's tile bound to this iteration's buffer; where
 * the body's masks hold on the whole tile (every tile but the last, and
 * the diagonal ones of a causal mask), a copy of it with them bound to
 * true, so the compiler drops the index arithmetic and selects. */
void lower_ring_body(lw *L, const tilec_stmt *loop, const ring_plan *rp, int wide)
{
    L->depth++;
    tilec_type it = {.kind = TILEC_TY_VALUE, .dtype = wide ? TILEC_DT_I64 : TILEC_DT_I32};
    lower_bind(L, loop->names[0], lower_newval(L, VK_SCALAR, &it, lower_cname(L, loop->names[0])));
    lower_line(L, "const int tl_rs = tl_it %% %d;", rp->S);
    for (int i = 0; i < rp->n; i++) {
        const ring_op *o = &rp->op[i];
        val *v = lower_newval(L, VK_RING, lower_ty(L, o->let->value),
                              lower_fmt(L, "(%s%u + tl_rs * %lld)", rp->base ? rp->base : "", o->off, (long long)o->bytes));
        v->rlet = o->let;
        v->rld = o->ld;
        v->rbt = o->trans;
        v->rwg = rp->wg;
        lower_bind(L, o->let->names[0], v);
        if (o->alias) { /* y = trans(x): the same buffer, read the other way */
            val *y = lower_newval(L, VK_RING, lower_ty(L, o->alias->value), v->c);
            y->rlet = o->alias;
            y->rld = o->ld;
            y->rbt = !o->trans;
            y->rwg = rp->wg;
            lower_bind(L, o->alias->names[0], y);
        }
    }
    const tilec_stmt *mk[RING_MAX];
    const char *cond;
    int nm = ring_masks(L, loop, mk, &cond);
    tilec_block fb;
    const char *fc = NULL;
    int fold = lower_fold_scale(L, &loop->body, &fb, &fc);
    if (nm || fold) {
        if (fold)
            lower_line(L, "if (%s%s%s) { /* %sthe scale folded into the exponent */", nm ? cond : "", nm ? " && " : "", fc,
                       nm ? "the masks hold on the whole tile, " : "");
        else
            lower_line(L, "if (%s) { /* the masks hold on the whole tile */", cond);
        L->ind++;
        L->depth++;
        for (int i = 0; i < nm; i++) {
            tilec_expr *t = ar_alloc(&L->ar, sizeof *t);
            if (!t) {
                L->failed = 1;
                return;
            }
            memset(t, 0, sizeof *t);
            t->kind = TILEC_EX_BOOL;
            t->ival = 1;
            t->type = *lower_ty(L, mk[i]->value);
            t->loc = mk[i]->loc;
            val *v = lower_newval(L, VK_VIRT, &t->type, lower_cname(L, mk[i]->names[0]));
            v->expr = t;
            v->rlet = mk[i];
            lower_bind(L, mk[i]->names[0], v);
            lower_note(L, "  line %u: mask %s dropped on tiles where it holds everywhere", mk[i]->loc.line,
                       lower_cname(L, mk[i]->names[0]));
        }
        if (fold)
            lower_note(L, "  line %u: the scale folded into the exponent where it is positive (max before scaling, one FFMA)",
                       loop->loc.line);
        lower_emit_block(L, fold ? &fb : &loop->body);
        lower_leave(L);
        L->ind--;
        lower_line(L, "} else {");
        L->ind++;
    }
    /* the general copy: its notes would repeat the first's */
    size_t notes = L->notes.n;
    lower_emit_block(L, &loop->body);
    if ((nm || fold) && L->notes.n > notes) {
        L->notes.n = notes;
        L->notes.s[notes] = 0;
    }
    if (nm || fold) {
        L->ind--;
        lower_line(L, "}");
    }
    lower_leave(L);
}

int lower_ring_loop(lw *L, const tilec_stmt *loop)
{
    ring_plan rp;
    lower_bind_loop_scope(L, loop);
    int ok = ring_check(L, loop, &rp);
    lower_leave(L);
    if (!ok)
        return 0;
    int own = L->tg->ring_loop ? L->tg->ring_loop(L, loop, &rp) : -1;
    if (own >= 0) /* the target's own (the sm_90a twin of this loop, wgattn.c) */
        return own;
    strbuf names;
    sb_init(&names);
    for (int i = 0; i < rp.n; i++) {
        ring_op *o = &rp.op[i];
        o->off = lower_alloc_smem(L, o->bytes * rp.S);
        sb_printf(&names, "%s%s", i ? ", " : "", lower_cname(L, o->let->names[0]));
        lower_note(L, "  line %u: %s copied by cp.async into a %d-stage ring (%lld bytes a stage%s)", o->let->loc.line,
                   lower_cname(L, o->let->names[0]), rp.S, (long long)o->bytes, o->trans ? ", stored transposed" : "");
    }
    /* a loop of one dot could have been a pipelined dot loop: the first
     * reason it is not is the plain pipeline's (stmt.c tried it first) */
    const char *path = lower_fmt(L, "cp.async rings of %d stages for %s (dot B operands) + mma.sync", rp.S, sb_str(&names));
    const char *miss = L->miss;
    unsigned miss_line = L->miss_line;
    lower_miss_reset(L); /* the first reason the attention twin refuses, unless a plain dot loop was the better path */
    if (L->tw.loop != loop && L->tg->note_ring_loop && L->tg->note_ring_loop(L, loop, &rp)) { /* the twin decision (wgattn.c); not one the TMA twin took (pipeline.c) */
        rp.twin = 1;
        lower_dot_remark *r = lower_remark_dot(L, loop, path, NULL);
        if (r) {
            r->wg = 1;
            r->wg_path = L->tw.plan.nmaps ? "wgmma, its rings filled by TMA through mbarriers"
                                          : "wgmma, its rings filled by a cp.async producer warp group through mbarriers";
        }
    } else if (lower_block_dots(&loop->body) == 1) {
        L->miss = miss;
        L->miss_line = miss_line;
        lower_remark_dot(L, loop, path, "a pipelined dot loop (both operands by cp.async; wgmma + TMA on sm_90a)");
    } else {
        lower_remark_dot(L, loop, path, "wgmma (the sm_90a twin)");
    }
    lower_plan_loop(L, loop, 1);
    const char *v = lower_cname(L, loop->names[0]);
    lower_line(L, "{ /* %d-stage cp.async ring: %s */", rp.S, sb_str(&names));
    L->failed |= names.failed;
    sb_free(&names);
    L->ind++;
    lower_cp_bounds(L, loop);
    lower_bind_loop_scope(L, loop);
    lower_cp_prologue(L, rp.S, v, lower_ring_issue, &rp);
    lower_leave(L);
    int wide = lower_loop_wide(L, loop);
    lower_line(L, "int tl_it = 0;");
    lower_comment_loc(L, &loop->loc);
    lower_line(L, "for (tl_ix %s = tl_lo; %s < tl_hi; %s, ++tl_it) {", v, v, lower_loop_next(L, loop, v, "tl_hi", "tl_st", 1));
    L->ind++;
    lower_bind_loop_scope(L, loop);
    lower_cp_advance(L, rp.S, v, lower_ring_issue, &rp);
    lower_leave(L);
    lower_ring_body(L, loop, &rp, wide);
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "tl_cp_wait<0>();");
    L->ind--;
    lower_line(L, "}");
    return 1;
}
