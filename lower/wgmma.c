/* wgmma.c: the sm_90a twin of a variant whose dot loop is a matrix
 * product: operands staged by the tensor memory accelerator (TMA) into
 * swizzled shared memory (A's rows of a stage's K depth in the 32-, 64-
 * or 128-byte swizzle its width gives, B's in 128-byte rows; K tiles of
 * 16 and 32 several loop iterations a stage of 64 where that is the same
 * sum, wg_stage_iters), an mbarrier
 * ring of stages, one producer warp group issuing the copies and BM / 16
 * consumer warps (one warp group per 64 rows, whatever the `warps` hint
 * says) multiplying with wgmma.mma_async into f32 registers laid out as
 * the mma.sync accumulator fragments, so the statements after the loop
 * (bias, activation, casts, the masked store) lower as they do for the
 * variant itself.
 *
 * The regular pass notes a candidate loop (lower_wg_note); the twin pass
 * (lw.tw.on set, lower.c) lowers the kernel again and emits the loop here
 * (lower_wg_loop): for a persistent grid (lower_wg_persist) twice, the
 * producer's body and the consumers', each walking the block's tiles in
 * one branch of a single if/else of roles; lower_wg_finish wraps the twin in
 * #if defined(__CUDA_ARCH_FEAT_SM90_ALL), so an sm_90 or sm_80 compile
 * never sees it, and fills the launch metadata (tilec/tma.h).
 * docs/lowering.md ("wgmma and TMA") says which loops qualify. */
#include <stdlib.h>
#include <string.h>

#include "lower/lower_internal.h"

enum { WG_GROUP = 8, WG_ROW_BYTES = 128, WG_PRODUCER = 128, WG_RING_MAX = 192 * 1024, WG_MAX_STAGES = 6 };
/* the stages of a small K tile: as deep in K as WG_MAX_STAGES of 64
 * (WG_K_DEPTH), at most WG_STAGES_CAP */
enum { WG_K_DEPTH = WG_MAX_STAGES * 64, WG_STAGES_CAP = 16 };
/* the most k-steps of a resident B (persist_plan): 64 of 64 halves, K = 4096; the fewest its slots keep
 * where A takes more stages (res_stages): a 3x3 filter's nine taps, one k-step each (ResNet's 3x3 C64) */
enum { WG_RES_SLOTS = 64, WG_RES_TAPS = 9 };

/* The consumer warps of an M tile: one warp group (4 warps, 16 rows each)
 * per m64 row of wgmma; 0 when the twin takes no such tile (two groups
 * at most: their 232 registers a thread and the producer's 40 fill the
 * register file). */
static int wg_warps(int64_t M) { return M == 64 || M == 128 ? (int)(M / 16) : 0; }

/* Bytes of one swizzled row of a K-major box whose K tile is `bytes`
 * wide: the tile itself when it is 32 or 64 bytes (the 32- and 64-byte
 * swizzles), else 128 (several boxes); 0 when no swizzle fits. */
static int wg_row_bytes(int64_t bytes)
{
    return bytes == 32 || bytes == 64 ? (int)bytes : bytes > 0 && bytes % WG_ROW_BYTES == 0 ? WG_ROW_BYTES : 0;
}

/* The descriptor's layout type of a swizzle of `row` bytes (PTX ISA,
 * "Matrix Descriptor Format": 1 128-byte, 2 64-byte, 3 32-byte). */
static int wg_layout_type(int row) { return row == 128 ? 1 : row == 64 ? 2 : 3; }

/* ---- recognising the loads ---- */

/* x[:, None] (axis 0) or x[None, :] (axis 1) of a 1-D name: the name. */
static const tilec_expr *bcast_of(const tilec_expr *e, int axis)
{
    if (e->kind != TILEC_EX_INDEX || e->nargs != 3 || e->args[0]->kind != TILEC_EX_NAME)
        return NULL;
    const tilec_expr *a = e->args[1 + axis], *b = e->args[2 - axis];
    return a->kind == TILEC_EX_SLICE && !a->nargs && b->kind == TILEC_EX_NONE ? e->args[0] : NULL;
}

/* A pointer tile the analysis reads as P + R[:, None] * S + C[None, :]
 * [+ pid(2) * c [* X [* Y]]] (or a head's pid(1): lower_ptr_map: through lets, pointer and
 * scalar lets, broadcasts and products in any order) under a mask that is
 * exactly R < rows && C < cols along the same axes (lower_mask_bounds), of
 * elements dt: the map (box box_rows x one 128-byte row), with R (the
 * map's rows, stride S) and C (its columns, unit stride); *cax the tile's
 * axis C runs along (1, or 0 for a tile built with its unit stride along
 * axis 0). */
static int match_ptr(lw *L, const tilec_expr *ptr, const tilec_expr *mk, tilec_dtype dt, int64_t box_rows,
                     tilec_tma_map *m, const tilec_expr **R, const tilec_expr **C, const tilec_expr **Z,
                     const tilec_expr **Ra, const tilec_expr **Ca, int *cax)
{
    unsigned line = ptr ? ptr->loc.line : 0;
    lower_ptraff pa;
    int bound[2];
    int64_t s0;
    *R = *C = *Z = *Ra = *Ca = NULL;
    /* the unit-stride axis as the analysis knows it, even where no map describes the pointer (the cp.async twin
     * reads it) */
    *cax = ptr && !(lower_stride(L, ptr, 1, &s0) && s0 == 1) && lower_stride(L, ptr, 0, &s0) && s0 == 1 ? 0 : 1;
    if (!mk)
        return lower_miss(L, line, "the load has no mask (TMA's box needs the bounds of both axes)");
    if (!lower_ptr_map(L, ptr, mk, &pa, bound))
        return lower_miss(L, line, "%s", pa.why);
    *cax = pa.stride[1] < 0 ? 1 : 0;
    int rax = 1 - *cax;
    *R = pa.idx[rax];
    *C = pa.idx[*cax];
    *Ra = pa.add[rax];
    *Ca = pa.add[*cax];
    unsigned size = tilec_dtype_size(dt);
    if (dt != TILEC_DT_F16 && dt != TILEC_DT_BF16 && dt != TILEC_DT_F32)
        return lower_miss(L, line, "elements of %s (TMA here takes f16, bf16, f32)", tilec_dtype_name(dt));
    memset(m, 0, sizeof *m);
    m->ptr = (uint32_t)pa.base;
    m->rows = (uint32_t)bound[rax];
    m->cols = (uint32_t)bound[*cax];
    m->stride = (uint32_t)pa.stride[rax];
    m->box_rows = (uint32_t)box_rows;
    m->box_cols = WG_ROW_BYTES / size;
    m->elem_bytes = size;
    m->bf16 = dt == TILEC_DT_BF16;
    lower_map_batch(m, &pa);
    if (pa.z)
        *Z = pa.z;
    if (L->k->params[pa.base].type.dtype != dt)
        return lower_miss(L, line, "pointer %s's elements are not the loaded type", L->k->params[pa.base].name);
    return 1;
}

int lower_wg_match(lw *L, const tilec_expr *ptr, const tilec_expr *mk, tilec_dtype dt, int64_t box_rows,
                   tilec_tma_map *m, const tilec_expr **R, const tilec_expr **C, const tilec_expr **Z,
                   const tilec_expr **Ra, const tilec_expr **Ca)
{
    int cax;
    if (!match_ptr(L, ptr, mk, dt, box_rows, m, R, C, Z, Ra, Ca, &cax))
        return 0;
    if (cax != 1) /* the tile stored as its rows lie (a store's staging) */
        return lower_miss(L, ptr->loc.line, "the pointer's unit stride is along axis 0 (C[:, None] + R[None, :] * S)");
    return 1;
}

/* load(P + R[:, None] * S + C[None, :], R[:, None] < rows && C[None, :] <
 * cols, 0) of f16 or bf16, or its axes the other way round: the map, with
 * R and C; *cax the load's axis C runs along (the map's columns). */
static int match_load(lw *L, const tilec_expr *ld, tilec_tma_map *m, const tilec_expr **R, const tilec_expr **C,
                      const tilec_expr **Z, const tilec_expr **Ra, const tilec_expr **Ca, int *cax)
{
    const tilec_type *ty = lower_ty(L, ld);
    if (ty->dtype == TILEC_DT_F32)
        return lower_miss(L, ld->loc.line, "f32 operands (the twin multiplies f16 and bf16)");
    if (!match_ptr(L, ld->args[0], ld->nargs >= 2 ? ld->args[1] : NULL, ty->dtype, 0, m, R, C, Z, Ra, Ca, cax))
        return 0;
    m->box_rows = (uint32_t)ty->dims[1 - *cax];
    /* a tile narrower than 128 bytes: boxes as wide as it, in the swizzle of that width */
    m->box_cols = (uint32_t)(wg_row_bytes(ty->dims[*cax] * m->elem_bytes) / m->elem_bytes);
    return 1;
}

/* The terms of a chain of + without looking through names. */
static int plain_terms(const tilec_expr *e, const tilec_expr **t, int n, int max)
{
    if (e->kind == TILEC_EX_BINARY && e->op == TILEC_OP_ADD) {
        n = plain_terms(e->args[0], t, n, max);
        return n < 0 ? n : plain_terms(e->args[1], t, n, max);
    }
    if (n >= max)
        return -1;
    t[n] = e;
    return n + 1;
}

/* A 1-D name of a virtual index tile with unit stride: start + range(n). */
static int unit_name(lw *L, const tilec_expr *x)
{
    val *v = x->kind == TILEC_EX_NAME ? lower_lookup(L, x->name) : NULL;
    int64_t s;
    return v && v->kind == VK_VIRT && lower_ty(L, x)->rank == 1 && lower_stride(L, x, 0, &s) && s == 1;
}

int lower_wg_match_rows(lw *L, const tilec_expr *ld, tilec_tma_map *m, const tilec_expr **X, const tilec_expr **c,
                        int *bound, const tilec_expr **C)
{
    const tilec_type *ty = lower_ty(L, ld);
    const tilec_expr *mk = ld->nargs >= 2 ? ld->args[1] : NULL, *x[8];
    lower_ptraff pa;
    if (!mk || ty->rank != 2 || (ty->dtype != TILEC_DT_F16 && ty->dtype != TILEC_DT_BF16))
        return 0;
    /* the analysis's map: P + X[:, None] * S + C[None, :], no batch, nothing added to the columns */
    if (!lower_ptr_affine(L, ld->args[0], &pa) || pa.stride[0] < 0 || pa.stride[1] >= 0 || pa.z || pa.add[0] ||
        pa.add[1] || L->k->params[pa.base].type.dtype != ty->dtype)
        return 0;
    *X = pa.idx[0];
    *C = pa.idx[1];
    *c = NULL;
    if (!unit_name(L, *C))
        return 0;
    /* X: one unit-stride index tile c (a name) plus scalars */
    const tilec_expr *xe = *X;
    if (xe->kind == TILEC_EX_NAME && !unit_name(L, xe))
        xe = lower_look(L, xe);
    int nx = plain_terms(xe, x, 0, 8);
    if (nx < 1)
        return 0;
    for (int i = 0; i < nx; i++) {
        int rk = lower_ty(L, x[i])->rank;
        if (rk == 1 && !*c && unit_name(L, x[i]))
            *c = x[i];
        else if (rk != 0)
            return 0;
    }
    if (!*c)
        return 0;
    /* the mask bounds c (not X: the tap's rows are proven in range at run time) and C */
    lower_ptraff pc = pa;
    pc.idx[0] = *c;
    int b[2];
    if (!lower_mask_bounds(L, mk, &pc, b))
        return 0;
    *bound = b[0];
    unsigned size = tilec_dtype_size(ty->dtype);
    memset(m, 0, sizeof *m);
    m->ptr = (uint32_t)pa.base;
    m->rows = TILEC_TMA_NONE; /* the rows the kernel reads, proven in range at run time */
    m->cols = (uint32_t)b[1];
    m->stride = (uint32_t)pa.stride[0];
    m->box_rows = (uint32_t)ty->dims[0];
    m->box_cols = WG_ROW_BYTES / size;
    m->elem_bytes = size;
    m->bf16 = ty->dtype == TILEC_DT_BF16;
    m->bs[0] = m->bs[1] = TILEC_TMA_NONE;
    return 1;
}

/* ", z" for a batched map's third coordinate, "" for a 2-D one. */
const char *lower_wg_batch(lw *L, const wg_plan *w, int i)
{
    if (!w->Z[i])
        return "";
    return lower_fmt(L, ", %s", lower_walk(L, w->Z[i], NULL, 0, NULL, EMIT));
}

/* ---- which loops qualify ---- */

/* Calls that are pure functions of indices and scalars. */
static int pure(const tilec_expr *e)
{
    static const tilec_builtin ok[] = {BI_RANGE, BI_ZEROS, BI_FULL, BI_PID, BI_NUM_PROGRAMS, BI_CAST, BI_CDIV, BI_MIN, BI_MAX,
                                       BI_MAXIMUM, BI_MINIMUM, BI_WHERE};
    if (e->kind == TILEC_EX_CALL) {
        size_t i = 0;
        while (i < sizeof ok / sizeof ok[0] && (int)ok[i] != e->builtin)
            i++;
        if (i == sizeof ok / sizeof ok[0])
            return 0;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!pure(e->args[i]))
            return 0;
    return 1;
}

/* The loop is a statement of the kernel's body, after lets of indices,
 * scalars and the zeroed accumulator only: the producer warps run them
 * too before they part from the others. */
static int top_level(const lw *L, const tilec_stmt *loop)
{
    const tilec_block *b = &L->k->body;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s == loop)
            return 1;
        if (s->kind != TILEC_ST_DOC && (s->kind != TILEC_ST_LET || !pure(s->value)))
            return 0;
    }
    return 0;
}

/* A return anywhere in b. */
static int has_return(const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_RETURN || has_return(&s->body) || has_return(&s->orelse))
            return 1;
    }
    return 0;
}

/* The statements after the loop may run once per tile of a persistent
 * grid: none returns (which would end the block's later tiles too). */
static int after_loop_ok(const lw *L, const tilec_stmt *loop)
{
    const tilec_block *b = &L->k->body;
    int after = 0;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (after && (s->kind == TILEC_ST_RETURN || has_return(&s->body) || has_return(&s->orelse)))
            return 0;
        after |= s == loop;
    }
    return 1;
}

/* ---- the epilogue's loads, issued before the loop ---- */

/* a consumer thread's accumulator and early tiles, in 4-byte registers, at most: of the 232 a consumer
 * thread is given (setmaxnreg), 40 left for indices, addresses and the wgmma descriptors (a paired
 * gemm_dw: 128 + 2 x 32, no local memory) */
enum { WG_EARLY_REGS = 192 };

static int early_names(lw *L, const tilec_expr *e, uint32_t at, uint32_t li, int depth);

/* name, read by statement `at` of the kernel's body (li: the twin's loop):
 * a parameter, a hint, a let before the loop (top_level: indices and
 * scalars), or a let after it of indices and scalars (pure) whose names
 * qualify too; never a name assigned anywhere (the accumulator). */
static int early_name(lw *L, const char *name, uint32_t at, uint32_t li, int depth)
{
    if (depth > 16 || lower_in_list(L->assigned, L->nassigned, name))
        return 0;
    const tilec_block *b = &L->k->body;
    for (uint32_t i = at; i-- > 0;) {
        const tilec_stmt *s = b->stmts[i];
        for (uint32_t j = 0; s->kind == TILEC_ST_LET && j < s->nnames; j++)
            if (!strcmp(s->names[j], name))
                return s->nnames == 1 && (i < li || (pure(s->value) && early_names(L, s->value, i, li, depth + 1)));
    }
    for (uint32_t i = 0; i < L->k->nparams; i++)
        if (!strcmp(L->k->params[i].name, name))
            return 1;
    int64_t h;
    return lower_hint_value(L, name, &h);
}

static int early_names(lw *L, const tilec_expr *e, uint32_t at, uint32_t li, int depth)
{
    if (e->kind == TILEC_EX_NAME && !early_name(L, e->name, at, li, depth))
        return 0;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!early_names(L, e->args[i], at, li, depth))
            return 0;
    return 1;
}

/* The tile loads in e (of statement `at`) whose pointer, mask and other
 * are indices and scalars known before the loop, into ld[n..max). */
static int early_find(lw *L, const tilec_expr *e, uint32_t at, uint32_t li, const tilec_expr **ld, int n, int max)
{
    if (!e)
        return n;
    if (tilec_is_builtin(e, BI_LOAD)) {
        int ok = n < max && lower_ty(L, e)->rank > 0;
        for (uint32_t i = 0; ok && i < e->nargs; i++)
            ok = pure(e->args[i]) && early_names(L, e->args[i], at, li, 0);
        if (ok)
            ld[n++] = e;
        return n;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        n = early_find(L, e->args[i], at, li, ld, n, max);
    return n;
}

/* A store or an atomic_add anywhere in b. */
static int block_writes(const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        const tilec_expr *x[] = {s->value, s->lo, s->hi, s->step};
        for (size_t j = 0; j < sizeof x / sizeof x[0]; j++)
            if (lower_calls(x[j], BI_STORE) || lower_calls(x[j], BI_ATOMIC_ADD))
                return 1;
        if (block_writes(&s->body) || block_writes(&s->orelse))
            return 1;
    }
    return 0;
}

/* The loads of the statements after the twin's loop that its consumers
 * may issue before it (ld, at most max; the count): the loop writes no
 * memory, and the statements from the loop to each load are lets or the
 * expression statement that holds it, none of them writing before it
 * (the first store ends the search: a load after it may read what it
 * wrote), its pointer, mask and other indices and scalars known before
 * the loop; and the accumulator's and the tiles' registers a consumer
 * thread stay within WG_EARLY_REGS. The dW += G^T h epilogue of
 * examples/llm.tile's gemm_dw: its load of dW waited for memory after the
 * last wgmma with the tensor cores idle; issued first, its latency is
 * the loop's. */
static int early_loads(lw *L, const tilec_stmt *loop, const tilec_expr **ld, int max)
{
    const tilec_block *b = &L->k->body;
    uint32_t li = 0;
    while (li < b->nstmts && b->stmts[li] != loop)
        li++;
    if (li == b->nstmts || block_writes(&loop->body))
        return 0;
    int n = 0;
    for (uint32_t i = li + 1; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_DOC)
            continue;
        if (s->kind != TILEC_ST_LET && s->kind != TILEC_ST_EXPR)
            break;
        n = early_find(L, s->value, i, li, ld, n, max);
        if (s->kind != TILEC_ST_LET || lower_calls(s->value, BI_ATOMIC_ADD))
            break;
    }
    int64_t regs = L->tw.plan.M * lower_wg_n(&L->tw.plan) / L->nt; /* the f32 accumulator (both of a pair) */
    int k = 0;
    for (int i = 0; i < n; i++) {
        const tilec_type *t = lower_ty(L, ld[i]);
        int64_t el = 1;
        for (int d = 0; d < t->rank; d++)
            el *= t->dims[d];
        /* a pair's consumers hold the tile of each of its two N tiles */
        int64_t r = (el * tilec_dtype_size(t->dtype) / L->nt + 3) / 4 * (L->tw.plan.pair ? 2 : 1);
        if (regs + r <= WG_EARLY_REGS) {
            regs += r;
            ld[k++] = ld[i];
        }
    }
    return k;
}

/* e reads ld at the element it computes: ld itself, or an operator or a
 * cast of tiles of ld's shape over it (no broadcast, no transpose). */
static int elementwise_of(lw *L, const tilec_expr *e, const tilec_expr *ld)
{
    if (e == ld)
        return 1;
    if (!lower_same_shape(lower_ty(L, e), lower_ty(L, ld)) ||
        (e->kind != TILEC_EX_BINARY && e->kind != TILEC_EX_UNARY && !tilec_is_builtin(e, BI_CAST)))
        return 0;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (elementwise_of(L, e->args[i], ld))
            return 1;
    return 0;
}

/* The early load ld read by TMA into the store's staging instead of the
 * consumers' registers: a one-tile persistent twin whose store goes out by
 * TMA (wgstore.c) from a staging of the whole tile (one part, a 2-D map),
 * ld the tile that store writes, read element by element where the store
 * writes it (the value reads it through operators and casts of the tile's
 * shape: elementwise_of), decided by meaning, not spelling: its pointer
 * and mask read by the analysis behind the store's map (lower_ptr_map) as
 * the same tile (lower_same_tile: parameter, strides, first coordinates
 * as linear forms, through lets, either order of terms) under the same
 * bounds (either order of the conjuncts), the mask maybe with one scalar
 * conjunct more (*cond: no copy where it is false, the epilogue adds 0),
 * and its other 0 (the copy engine fills what lies past the bounds with
 * 0). gemm_dw's dW += G^T h read (examples/llm.tile): the staging is free
 * from the previous tile's store on, so the read runs under the loop on
 * the copy engine, no register or load instruction of the consumers'
 * (docs/lowering.md, "The epilogue"). Where such a twin reads a tile of
 * the store's shape that does not qualify, plan.early_no says why (the
 * remark: lower/target.c). */
static int staged_load(lw *L, const tilec_expr *ld, const tilec_expr **cond)
{
    const wg_plan *w = &L->tw.plan;
    const tilec_expr *st = w->store ? w->store->value : NULL;
    char *no = L->tw.plan.early_no;
    size_t nno = sizeof L->tw.plan.early_no;
    *cond = NULL;
    no[0] = '\0';
    if (!st || w->vstore || w->nmaps != 3 || w->pair || !w->persist || st->nargs != 3)
        return 0; /* no staging to read into */
    const tilec_type *lt = lower_ty(L, ld), *pt = lower_ty(L, st->args[0]);
    if (!lower_same_shape(lt, pt))
        return 0; /* not a tile of the store's shape */
    const tilec_expr *o = ld->nargs == 3 ? ld->args[2] : NULL;
    lower_ptraff pl, ps;
    int bl[2], bs[2];
    if (!lower_ptr_map(L, st->args[0], st->args[2], &ps, bs))
        return 0; /* the store's map came from this analysis (ws_match): not reached */
    const char *why = NULL;
    if (!elementwise_of(L, st->args[1], ld))
        why = "the stored value does not read it inline element by element (a let of the load, a broadcast, a "
              "transpose)";
    else if (ld->nargs != 3)
        why = "it has no mask (the copy takes the store's bounds)";
    else if (!lower_ptr_map_cond(L, ld->args[0], ld->args[1], &pl, bl, cond))
        why = lower_fmt(L, "it is no tensor map's tile (%s, or more than one scalar condition)",
                        pl.why ? pl.why : "the mask is not the bounds of both axes");
    else if (pl.base != ps.base)
        why = lower_fmt(L, "it reads %s, the store writes %s", L->k->params[pl.base].name, L->k->params[ps.base].name);
    else if (lt->dtype != pt->dtype)
        why = lower_fmt(L, "it reads %s, the store writes %s", tilec_dtype_name(lt->dtype), tilec_dtype_name(pt->dtype));
    else if (!lower_same_tile(L, &pl, &ps))
        why = lower_fmt(L, "it reads another tile of %s than the store writes (its offsets)", L->k->params[pl.base].name);
    else if (bl[0] != bs[0] || bl[1] != bs[1])
        why = "its mask bounds other sizes than the store's";
    else if ((o->kind != TILEC_EX_INT || o->ival) && (o->kind != TILEC_EX_FLOAT || o->fval != 0.0))
        why = "its other is not 0 (the copy fills what lies past the bounds with 0)";
    else if (w->Z[2])
        why = "the store's map is batched (3-D)";
    else if (w->mpair)
        why = "two M tiles a block share the staging";
    else if (w->epi_parts > 1)
        why = "the store stages its tile in parts";
    if (!why)
        return 1;
    snprintf(no, nno, "%s", why);
    *cond = NULL;
    return 0;
}

/* staged_load's copy, issued by consumer thread 0 once the previous
 * tile's store has read the staging (its own cp.async.bulk group), on the
 * mbarrier after the ring's (tl_full0 + 16 S: lower_wg_block's 1024 bytes
 * of alignment room hold it, the base being 16-aligned); where cond is
 * false a plain arrival completes the phase. */
static void staged_issue(lw *L, const tilec_expr *ld, const tilec_expr *cond)
{
    const wg_plan *w = &L->tw.plan;
    const tilec_tma_map *m = &w->maps[2];
    const char *col, *row;
    lower_wg_coords(L, w, 2, &col, &row);
    const char *c = "true";
    if (cond) {
        lower_walk(L, cond, NULL, 0, NULL, PREP);
        c = lower_walk(L, cond, NULL, 0, NULL, EMIT);
    }
    int nb = (int)(w->N * m->elem_bytes / WG_ROW_BYTES);
    const char *bar = lower_fmt(L, "tl_full0 + %d", 16 * lower_wg_nbar(w));
    lower_line(L, "// the epilogue's load at line %u, by TMA into the store's staging (its map, layout and swizzle), "
                  "issued before the dot loop", ld->loc.line);
    lower_line(L, "const bool tl_sc = %s;", c);
    lower_line(L, "if (tl_tid == 0) {");
    lower_line(L, "    tl_bulk_wait_read(); /* the previous tile's store has read the staging */");
    lower_line(L, "    if (tl_sc) {");
    lower_line(L, "        tl_mbar_expect(%s, %lld);", bar, (long long)(w->M * w->N * m->elem_bytes));
    for (int b = 0; b < nb; b++)
        lower_line(L, "        tl_tma_2d(tl_ring0 + %lld, &tl_tm2, %s + %u, %s, %s);",
                   (long long)(w->epi_off + b * w->M * WG_ROW_BYTES), col, b * m->box_cols, row, bar);
    lower_line(L, "    } else {");
    lower_line(L, "        tl_mbar_arrive(%s); /* nothing read: the epilogue adds 0 */", bar);
    lower_line(L, "    }");
    lower_line(L, "}");
}

/* A paired twin's consumers (wgpair.c) load the second N tile's early
 * tiles too: the text of the lets before the loop (body..pre) and of the
 * early loads (at..) again, in a block where tl_pid<a> is pid(a) + 1, a
 * the pair's axis (w->pax: 1, or 2 for a head's product) (as
 * lower_wg_pair_epilogue runs the statements after the loop), each
 * register array copied out to NAME_n1 (as 32-bit words where its
 * elements are 2 bytes: lower_wg_early_words), which the second tile's
 * epilogue copies back (no register moves once compiled). A second tile
 * past the program's grid loads nothing. */
static void early_pair(lw *L, size_t at)
{
    const char *s = L->out.s ? L->out.s : "";
    const char *lets = lower_fmt(L, "%.*s", (int)(L->tw.pre - L->tw.body), s + L->tw.body);
    const char *early = lower_fmt(L, "%.*s", (int)(L->out.n - at), s + at);
    int a = L->tw.plan.pax; /* the pair's axis: pid(1), or pid(2) for a head's product (wgpair.c) */
    for (int i = 0; i < L->tw.nearly; i++) {
        const val *v = L->tw.early[i].v;
        lower_line(L, "%s%s %s_n1[%d]; /* the second N tile's (pid(%d) + 1) */",
                   lower_wg_early_words(v) ? "__align__(4) " : "", lower_vctype(L, &v->ty), v->c, v->ly.E, a);
    }
    lower_wg_pair_open(&L->out, lower_fmt(L, "%*s", 4 * L->ind, ""), a, "the second N tile's early loads");
    sb_puts(&L->out, lets);
    sb_puts(&L->out, early);
    for (int i = 0; i < L->tw.nearly; i++) {
        const val *v = L->tw.early[i].v;
        lower_wg_early_copy(&L->out, lower_fmt(L, "%*s", 4 * L->ind, ""), v, lower_fmt(L, "%s_n1", v->c), v->c);
    }
    lower_line(L, "}");
    lower_line(L, "}");
}

/* A persistent twin's consumers (role 2; the producer's pass, role 1,
 * materializes the same and drops the text, so that both passes count
 * the same shared memory) (paired: the second N tile's early tiles too,
 * early_pair; not where two M tiles a block
 * are planned (mpair_ok; mpair is only set with it): each warp group's
 * epilogue runs at its own pid(0), after the lets before the loop
 * again, and early registers hold the block's first tile; not a gather twin: its consumers'
 * registers are planned) load the epilogue's tiles that early_loads
 * finds before the loop, into registers that lower_find_mat gives the
 * statements after it (a tile of acc's shape in acc's layout), the lets
 * after the loop that the loads read bound for the while. */
static void early_issue(lw *L, const tilec_stmt *loop, const val *acc)
{
    const wg_plan *w = &L->tw.plan;
    const tilec_expr *ld[WG_MAX_EARLY];
    L->tw.plan.early_no[0] = '\0';
    int n = L->tw.role && !w->mpair_ok && !w->gather ? early_loads(L, loop, ld, WG_MAX_EARLY) : 0;
    if (!n)
        return;
    const tilec_block *b = &L->k->body;
    uint32_t i = 0;
    while (b->stmts[i] != loop)
        i++;
    L->depth++;
    for (i++; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind != TILEC_ST_LET)
            break;
        if (s->nnames == 1 && pure(s->value) && !lower_in_list(L->assigned, L->nassigned, s->names[0]) &&
            lower_is_virtual(L, s->value)) {
            val *v = lower_newval(L, VK_VIRT, lower_ty(L, s->value), lower_cname(L, s->names[0]));
            v->expr = s->value;
            lower_bind(L, s->names[0], v);
        }
    }
    size_t at = L->out.n; /* the producer's pass: the same values and shared memory, no text */
    int nsync = L->nsync;
    const tilec_expr *cond;
    if (n == 1 && staged_load(L, ld[0], &cond)) {
        staged_issue(L, ld[0], cond);
        L->tw.sload = ld[0];
        L->tw.scond = cond;
        L->tw.plan.early_tma = 1;
        n = 0;
    }
    for (int j = 0; j < n && !L->failed; j++) {
        lower_line(L, "// the epilogue's load at line %u, issued before the dot loop (its latency under the loop's)",
                   ld[j]->loc.line);
        /* a tile of the accumulator's shape in its layout: the epilogue reads its registers as they are,
         * no conversion through shared memory */
        const lay *want = lower_same_shape(lower_ty(L, ld[j]), &acc->ty) ? &acc->ly : NULL;
        L->tw.early[L->tw.nearly++] = (matnode){ld[j], lower_materialize(L, ld[j], NULL, want)};
    }
    lower_leave(L);
    if (w->pair && L->tw.role == 2 && !L->failed)
        early_pair(L, at);
    if (L->tw.role == 1) {
        L->out.n = at;
        if (L->out.s)
            L->out.s[at] = 0;
        L->nsync = nsync;
    }
    L->tw.plan.early_line = ld[0]->loc.line;
}

int lower_wg_layout(const lw *L, int64_t M, int64_t N, lay *y)
{
    int cw = wg_warps(M);
    if (!cw || (L->tw.on && cw != L->nwarps) || N % 64 || N > 256)
        return 0;
    lower_mma_grid(M, N, cw, 1, y); /* a 16 x N warp tile: wgmma's fragments */
    return 1;
}

/* Why the twin cannot run a dot of A [M, K] by B [K, N] in dtype d with
 * accumulator acc: 0 with the reason recorded, or 1. */
static int wg_shape_ok(lw *L, unsigned line, tilec_dtype ad, tilec_dtype bd, const val *acc, int64_t M, int64_t K,
                       int64_t N)
{
    if (ad != TILEC_DT_F16 && ad != TILEC_DT_BF16)
        return lower_miss(L, line, "%s operands (the twin multiplies f16 and bf16)", tilec_dtype_name(ad));
    if (bd != ad)
        return lower_miss(L, line, "operands of two types (%s, %s)", tilec_dtype_name(ad), tilec_dtype_name(bd));
    int64_t kb = K * (int64_t)tilec_dtype_size(ad);
    if (K % 16 || !wg_row_bytes(kb) || K > 256)
        return lower_miss(L, line,
                          "K tile %lld is not 16, 32 or a multiple of 64 up to 256 (rows of a 32-, 64- or 128-byte "
                          "swizzle)",
                          (long long)K);
    if (acc->ty.dtype != TILEC_DT_F32)
        return lower_miss(L, line, "the accumulator is %s, not f32", tilec_dtype_name(acc->ty.dtype));
    if (!wg_warps(M))
        return lower_miss(L, line, "M tile %lld is not 64 or 128 (one or two m64 warp groups)", (long long)M);
    if (N % 64 || N > 256)
        return lower_miss(L, line, "N tile %lld is not a multiple of 64 up to 256", (long long)N);
    return 1;
}

/* The first element of index expression e (a scalar, or a 1-D index
 * tile through broadcasts, casts and names let to it) as a * var + b, var
 * the loop variable: *a, and *rest set when b may be other than 0; 0 when
 * e is not of that form (var times a variable, another call). */
static int k_affine(lw *L, const tilec_expr *e, const char *var, int64_t *a, int *rest)
{
    e = lower_look(L, e);
    int64_t c, a1;
    int r1;
    *a = 0;
    *rest = 0;
    switch (e->kind) {
    case TILEC_EX_INT:
        *rest = e->ival != 0;
        return 1;
    case TILEC_EX_NAME:
        if (!strcmp(e->name, var)) {
            *a = 1;
            return 1;
        }
        /* not let in the loop (lower_look follows those): loop-invariant */
        *rest = lower_const_int(L, e, &c) || c != 0;
        return 1;
    case TILEC_EX_BINARY:
        if (e->op == TILEC_OP_ADD || e->op == TILEC_OP_SUB) {
            if (!k_affine(L, e->args[0], var, a, rest) || !k_affine(L, e->args[1], var, &a1, &r1))
                return 0;
            *a = e->op == TILEC_OP_ADD ? *a + a1 : *a - a1;
            *rest |= r1;
            return 1;
        }
        if (e->op != TILEC_OP_MUL)
            return 0;
        for (int i = 0; i < 2; i++)
            if (!lower_const_int(L, e->args[i], &c)) {
                if (!k_affine(L, e->args[1 - i], var, a, rest))
                    return 0;
                *a *= c;
                *rest &= c != 0;
                return 1;
            }
        /* a product of two variables: loop-invariant only if neither reads var */
        if (!k_affine(L, e->args[0], var, a, rest) || !k_affine(L, e->args[1], var, &a1, &r1) || *a || a1)
            return 0;
        *rest = *rest && r1;
        return 1;
    case TILEC_EX_CALL:
        if (e->builtin == BI_RANGE && e->nargs == 1)
            return 1; /* its first element is 0 */
        if (e->builtin == BI_CAST && e->nargs >= 1)
            return k_affine(L, e->args[0], var, a, rest);
        return 0;
    case TILEC_EX_INDEX:
        return (bcast_of(e, 0) || bcast_of(e, 1)) && k_affine(L, e->args[0], var, a, rest);
    default:
        return 0;
    }
}

/* The arrivals a stage's full barrier waits for: a gather twin's producer
 * threads twice each (wggather.c), plus the expect_tx of the thread that
 * issues its TMA boxes (A's im2col, B's tiles) where there are any; else
 * (the TMA twin, or a gather twin whose ring is all TMA: lower_wg_gather_one)
 * the one producer thread's. */
static int wg_full_arrivals(const wg_plan *w)
{
    return w->gather && !lower_wg_gather_one(w) ? 2 * w->producers + (w->btma || w->atma) : 1;
}

/* Is operand i (0: A, 1: B) of plan w K-major (K its unit-stride axis,
 * the map's columns)? Else MN-major: K the map's rows. */
static int wg_kmajor(const wg_plan *w, int i) { return i ? w->bk : !w->amn; }

/* Loop iterations a stage of plan w (its loads matched, the loop's scope
 * bound): 1 for a K tile of 64 halves or more; for a smaller one (16, 32
 * halves), the iterations that make a stage of 64 (4 or 2), when merging
 * them is the same sum: iteration i's K coordinate is a * (lo + i * step)
 * with a * step the K tile (consecutive iterations read consecutive K
 * tiles, so a box of 64 at the first one's coordinate holds them all),
 * and the loop's end bounds what its iterations read by the K extent of
 * the masks (hi is that extent, or cdiv of it by a): the iterations of
 * the last stage past the loop's end read only K coordinates past the
 * extent, which TMA fills with zeros as the masks (and `other` 0,
 * pipeline.c) say, so they add nothing. Otherwise 1, *why saying why. */
static int wg_stage_iters(lw *L, const tilec_stmt *loop, const wg_plan *w, const char **why)
{
    int64_t kb = w->kt * (int64_t)w->maps[0].elem_bytes, st, a, c;
    *why = NULL;
    if (kb >= WG_ROW_BYTES)
        return 1;
    const char *var = loop->names[0];
    if (!loop->step)
        st = 1;
    else if (lower_const_int(L, loop->step, &st))
        return *why = "the loop's step is not a constant", 1;
    /* the K index of A and of B (the map's columns of a K-major operand, its rows of an MN-major one), and
     * the masks' K extents */
    const tilec_expr *kx[2] = {wg_kmajor(w, 0) ? w->C[0] : w->R[0], wg_kmajor(w, 1) ? w->C[1] : w->R[1]};
    const tilec_expr *kadd[2] = {wg_kmajor(w, 0) ? w->Ca[0] : w->Ra[0], wg_kmajor(w, 1) ? w->Ca[1] : w->Ra[1]};
    uint32_t ext[2] = {wg_kmajor(w, 0) ? w->maps[0].cols : w->maps[0].rows,
                       wg_kmajor(w, 1) ? w->maps[1].cols : w->maps[1].rows};
    int64_t a0 = 0;
    for (int i = 0; i < 2; i++) {
        int rest, rest1 = 0;
        int64_t a1 = 0;
        int ok = k_affine(L, kx[i], var, &a, &rest) && (!kadd[i] || k_affine(L, kadd[i], var, &a1, &rest1));
        a += a1; /* the K coordinate: the index's first element plus the pointer's scalar (lower_ptraff.add) */
        rest |= rest1;
        if (!ok || rest || a <= 0 || a * st != w->kt || (i && a != a0))
            return *why = lower_fmt(L, "%c's K index is not the loop variable (times a constant) plus range(%lld), "
                                       "one K tile an iteration",
                                    i ? 'B' : 'A', (long long)w->kt),
                   1;
        a0 = a;
        if (ext[i] != ext[0])
            return *why = "A's and B's masks bound K by different parameters", 1;
    }
    const tilec_expr *hi = lower_look(L, loop->hi), *d = hi;
    if (tilec_is_builtin(hi, BI_CDIV) && hi->nargs == 2 && !lower_const_int(L, hi->args[1], &c) &&
        c == a0)
        d = lower_look(L, hi->args[0]); /* a * cdiv(K, a) >= K */
    int p = lower_param_of(L, d, 0, 0);
    if (p < 0 || (uint32_t)p != ext[0])
        return *why = lower_fmt(L, "the loop's end is not %s, the masks' K extent (a merged stage's iterations "
                                   "past the end would add what they read)",
                                L->k->params[ext[0]].name),
               1;
    return (int)(WG_ROW_BYTES / kb);
}

/* The integer parameter P that bounds e from above whatever else holds,
 * as ceil(P / *per) (*per 1, or the product of cdiv's constant divisors),
 * or -1: P itself (never assigned), cdiv(x, c) of such an x, minimum(a, b)
 * where a or b is so bounded, where(c, a, b) where both are by the same,
 * or a name every definition of which in the kernel (a let or an
 * assignment, wherever it stands; a loop variable or a tuple's name is
 * none) is: attention's `hi = S`, then `if causal != 0 { hi = minimum(S,
 * (pid(0) + 1) * BM) }`, or `nblk = cdiv(S, BN)` then `nblk =
 * minimum(nblk, ...)`. *below is set where e may be less than the bound
 * (a minimum's, one side of a where); self: the name whose definition e
 * is (TRIP_SELF where e is at most its previous value), or NULL. */
static int trip_bound(lw *L, const tilec_expr *e, const char *self, int depth, int64_t *per, int *below);

/* A name's definition that reads the name itself (`nblk = minimum(nblk,
 * ...)`, fa_d64_exp2): trip_bound's answer for that name within it, bounded
 * by whatever its other definitions are. */
enum { TRIP_SELF = -3 };

/* Every definition of `name` in b bounded into *p and *per: -2 none met
 * yet, -1 one is not bounded (or by another parameter or divisor); a
 * definition bounded by the name's previous value (TRIP_SELF) by the
 * others. */
static void trip_defs(lw *L, const tilec_block *b, const char *name, int depth, int *p, int64_t *per, int *below)
{
    for (uint32_t i = 0; i < b->nstmts && *p != -1; i++) {
        const tilec_stmt *s = b->stmts[i];
        for (uint32_t j = 0; j < s->nnames && *p != -1; j++) {
            if (!s->names[j] || strcmp(s->names[j], name))
                continue;
            int64_t c = 1;
            int q = (s->kind == TILEC_ST_LET || s->kind == TILEC_ST_ASSIGN) && s->nnames == 1
                        ? trip_bound(L, s->value, name, depth + 1, &c, below)
                        : -1;
            if (q == TRIP_SELF)
                continue;
            *p = q < 0 || (*p >= 0 && (*p != q || *per != c)) ? -1 : q;
            *per = c;
        }
        trip_defs(L, &s->body, name, depth, p, per, below);
        trip_defs(L, &s->orelse, name, depth, p, per, below);
    }
}

static int trip_bound(lw *L, const tilec_expr *e, const char *self, int depth, int64_t *per, int *below)
{
    int64_t c, c2 = 1;
    *per = 1;
    if (!e || depth > 16)
        return -1;
    int p = lower_param_of(L, e, 2, 1); /* a u32 or u64 too: the launch reads it whole (runtime/tma.c) */
    if (p >= 0)
        return p;
    e = lower_look(L, e);
    if (e->kind == TILEC_EX_NAME && self && !strcmp(e->name, self))
        return TRIP_SELF;
    if (tilec_is_builtin(e, BI_CDIV) && e->nargs == 2) { /* ceil(ceil(P / c) / k) = ceil(P / (c k)) */
        if (lower_const_int(L, e->args[1], &c) || c <= 0 ||
            (p = trip_bound(L, e->args[0], NULL, depth + 1, per, below)) < 0 || *per > UINT32_MAX / c)
            return -1;
        *per *= c;
        return p;
    }
    if (tilec_is_builtin(e, BI_MINIMUM) && e->nargs == 2) { /* at most either side */
        *below = 1;
        p = trip_bound(L, e->args[0], self, depth + 1, per, below);
        return p >= 0 || p == TRIP_SELF ? p : trip_bound(L, e->args[1], self, depth + 1, per, below);
    }
    if (tilec_is_builtin(e, BI_WHERE) && e->nargs == 3) { /* either value: both bounded alike */
        p = trip_bound(L, e->args[1], self, depth + 1, per, below);
        int q = trip_bound(L, e->args[2], self, depth + 1, &c2, below);
        if (p == TRIP_SELF || q == TRIP_SELF) { /* the name's previous value on one side */
            *per = p == TRIP_SELF ? c2 : *per;
            return p == TRIP_SELF ? q : p;
        }
        return p >= 0 && q == p && c2 == *per ? p : -1;
    }
    if (e->kind != TILEC_EX_NAME)
        return -1;
    for (uint32_t i = 0; i < L->k->nparams; i++)
        if (!strcmp(L->k->params[i].name, e->name))
            return -1; /* a parameter lower_param_of did not take (assigned, not an integer) */
    p = -2;
    trip_defs(L, &L->k->body, e->name, depth, &p, per, below);
    return p < 0 ? -1 : p;
}

void lower_wg_trips(lw *L, const tilec_stmt *loop, int below_ok, wg_plan *w)
{
    int64_t st = 1, lo, c = 1;
    int below = 0;
    w->kbound = TILEC_TMA_NONE;
    w->kfrom = w->kper = 0;
    if ((loop->step && lower_const_int(L, loop->step, &st)) || st <= 0 || lower_const_int(L, loop->lo, &lo) || lo < 0 ||
        lo > UINT32_MAX)
        return;
    int p = trip_bound(L, loop->hi, NULL, 0, &c, &below);
    if (p < 0 || (below && !below_ok) || (c > 1 && lo != 0) || c > UINT32_MAX / st)
        return; /* not bounded, a bound below P not asked for, or ceil((ceil(P / c) - F) / S) */
    w->kbound = (uint32_t)p;
    w->kfrom = (uint32_t)lo;
    w->kper = (uint32_t)(c * st);
}

/* Stages one iteration of plan w's K tile K makes: 1, or for a tile
 * wider than one 128-byte swizzled row (K tiles of 128, 192, 256 halves;
 * wg_shape_ok took only whole rows) one per row, each the K tile's next 64
 * halves: the same sum in the same order, whatever the loop. A stage of
 * 64 is the reference's (4 k16 steps, (BM + BN) x 64 a stage), so the
 * ring holds as many stages, and as much K in flight, as it does; a whole
 * K tile of 128 a stage at 128 x 128 (64 KiB) left 3 stages one tile a
 * block and 2 paired (96 KiB), not enough to pair: 0.85x of cuBLAS at
 * 4096 (bench/results/forms_s40.md). Not a gather twin (wggather.c: its
 * copies are the loads' own). */
static int wg_kparts(const wg_plan *w, int64_t K)
{
    int64_t kb = K * (int64_t)w->maps[0].elem_bytes;
    return w->gather || kb <= WG_ROW_BYTES ? 1 : (int)(kb / WG_ROW_BYTES);
}

/* The most stages of plan w: a small K tile gets more of them, as deep
 * in K as WG_MAX_STAGES tiles of 64. */
static int wg_max_stages(const wg_plan *w)
{
    int64_t s = WG_K_DEPTH / w->K;
    return s > WG_STAGES_CAP ? WG_STAGES_CAP : s < 2 ? 2 : (int)s;
}

int lower_wg_ring_stages(const wg_plan *w, int64_t stage_bytes)
{
    int64_t s = WG_RING_MAX / (w->blocks > 1 ? w->blocks : 1) / stage_bytes; /* the SM's ring shared by its blocks */
    return lower_wg_fit(w, s > wg_max_stages(w) ? wg_max_stages(w) : (int)s, stage_bytes, 0);
}

int64_t lower_wg_block(int S, int64_t stage_bytes, int64_t staging) { return S * stage_bytes + staging + 16 * S + 1024; }

int lower_wg_fit(const wg_plan *w, int S, int64_t stage_bytes, int64_t staging)
{
    while (S >= 2 && lower_wg_block(S, stage_bytes, staging) + w->other > SMEM_LIMIT)
        S--;
    return S;
}

int lower_wg_one_replan(wg_plan *w, int64_t other)
{
    w->other = other;
    w->S = lower_wg_fit(w, w->S, w->stage_bytes, 0);
    /* a store by TMA stages its tile in the ring (wgstore.c) */
    return w->S >= 2 && lower_wg_store_bytes(w) <= w->S * w->stage_bytes;
}

int64_t lower_wg_rest(const lw *L)
{
    const wg_plan *w = &L->tw.plan;
    if (!L->tw.done)
        return -1;
    int64_t block = w->attn ? lower_wg_block(w->S, w->stage_bytes, w->sa_bytes)
                            : lower_wg_block(w->S, w->stage_bytes, lower_wg_staging(w));
    return L->smem_need - block;
}

int64_t lower_wg_over(const lw *L) { return L->smem <= SMEM_LIMIT ? -1 : lower_wg_rest(L); }

/* What the twin chose where the hints did not say it, for the remark
 * (remark.c): the swizzle of a K tile other than 64 halves, the consumer
 * warps when they are not the `warps` hint's. */
static const char *wg_how(lw *L, const wg_plan *w, int say_warps)
{
    const char *k = "", *wp = "";
    static const char *const times[] = {"", "one", "two", "three", "four"};
    int64_t kb = w->K * (int64_t)w->maps[0].elem_bytes;
    const char *kop = w->amn ? (w->bk ? "B" : NULL) : "A"; /* the operand whose rows run along K */
    /* A MN-major: in boxes of K rows by 64 along M, as an MN-major B's */
    const char *a = w->amn ? lower_fmt(L, ", A MN-major: boxes of %lld x 64 along M, the transpose bit", (long long)w->K)
                           : "";
    if (w->iters > 1)
        k = lower_fmt(L, ", K tile %lld: stages of %lld (%s iterations a stage)", (long long)w->kt, (long long)w->K,
                      times[w->iters]);
    else if (w->kparts > 1)
        k = lower_fmt(L, ", K tile %lld: stages of %lld (%s stages an iteration)", (long long)w->kt, (long long)w->K,
                      times[w->kparts]);
    else if (kb < WG_ROW_BYTES && !kop) /* no operand in rows of K: all in 128-byte rows along M and N */
        k = lower_fmt(L, ", K tile %lld: one iteration a stage (%s)", (long long)w->K, w->one_why ? w->one_why : "");
    else if (kb != WG_ROW_BYTES && kop)
        k = kb > WG_ROW_BYTES ? lower_fmt(L, ", K tile %lld: %s in %lld boxes of 128-byte swizzled rows a stage",
                                          (long long)w->K, kop, (long long)(kb / WG_ROW_BYTES))
                              : lower_fmt(L, ", K tile %lld: %s in %d-byte swizzled rows, one iteration a stage (%s)",
                                          (long long)w->K, kop, w->arow, w->one_why ? w->one_why : "");
    if (w->warps != L->nwarps && say_warps)
        wp = lower_fmt(L, ", %d consumer warps (%s for BM = %lld) where the `warps` hint says %d", w->warps,
                       w->warps == 8 ? "two m64 warp groups" : "one m64 warp group", (long long)w->M, L->nwarps);
    return lower_fmt(L, "%s%s%s", a, k, wp);
}

/* Whether a persistent gather twin (A by the im2col copy) may keep B
 * resident (persist_plan): B by TMA (its copy one thread's, into whole
 * boxes), and B's load and the loop's bounds the same for every tile the
 * block walks: free of pid(0) (the tiles' own axis), and of pid(1) and
 * pid(2) or else tested at run time for a grid of one tile along them
 * (w->bres_axes). Sets w->bres_ok, or w->bres_no. */
static void b_fixed(lw *L, const tilec_stmt *loop, const tilec_expr *bld, wg_plan *w)
{
    const tilec_expr *e[5] = {bld->nargs > 0 ? bld->args[0] : NULL, bld->nargs > 1 ? bld->args[1] : NULL, loop->lo,
                              loop->hi, loop->step};
    w->bres_ok = w->bres_axes = 0;
    w->bres_no = NULL;
    if (!w->btma) {
        w->bres_no = "B is copied by cp.async (no tensor map of its rows)";
        return;
    }
    for (int ax = 0; ax < 3; ax++)
        for (int i = 0; i < 5; i++)
            if (!lower_wg_pid_free(L, e[i], loop, ax)) {
                if (!ax) {
                    w->bres_no = "B's tile or the loop's bounds vary with pid(0), the axis of the tiles a block walks";
                    return;
                }
                w->bres_axes |= 1 << (ax - 1);
            }
    w->bres_ok = 1;
}

void lower_wg_note(lw *L, const tilec_stmt *loop, const lower_pipe_plan *pp)
{
    if (L->tw.on)
        return;
    if (L->tw.seen++) { /* one dot loop per kernel */
        for (int i = 0; i < L->nrem; i++)
            if (L->rem[i].wg) {
                L->rem[i].wg = 0;
                L->rem[i].missed = "wgmma + TMA";
                L->rem[i].why = lower_fmt(L, "the kernel has another dot loop (line %u; the twin takes one)", loop->loc.line);
                L->rem[i].why_line = 0;
            }
        L->tw.loop = NULL;
        lower_miss(L, 0, "the kernel has more than one dot loop (the twin takes one)");
        return;
    }
    /* the operands as the dot reads them: A [M, K] or trans of a [K, M] load, B [K, N] or trans of a [N, K] one */
    const tilec_type *at = lower_ty(L, pp->load[0]), *bt = lower_ty(L, pp->load[1]);
    int64_t M = at->dims[pp->tr[0] ? 1 : 0], K = at->dims[pp->tr[0] ? 0 : 1], N = bt->dims[pp->tr[1] ? 0 : 1];
    lay y;
    if (!wg_shape_ok(L, pp->update->loc.line, at->dtype, bt->dtype, pp->acc, M, K, N))
        return;
    if (!lower_wg_layout(L, M, N, &y))
        return (void)lower_miss(L, pp->update->loc.line, "no wgmma accumulator layout for %lld x %lld", (long long)M,
                                (long long)N);
    if (!top_level(L, loop))
        return (void)lower_miss(L, 0, "the loop is not a statement of the kernel's body after lets of indices and "
                                      "scalars only (the producer warps run those too)");
    wg_plan *w = &L->tw.plan;
    memset(w, 0, sizeof *w);
    lower_bind_loop_scope(L, loop);
    /* each operand K-major when the axis its load's unit stride runs along is the dot's K (the K axis of
     * load 0 is 1 unless A is trans of its load; of load 1, 0 unless B is), else MN-major */
    int cax[2] = {1, 1};
    int ok = match_load(L, pp->load[0], &w->maps[0], &w->R[0], &w->C[0], &w->Z[0], &w->Ra[0], &w->Ca[0], &cax[0]) &&
             match_load(L, pp->load[1], &w->maps[1], &w->R[1], &w->C[1], &w->Z[1], &w->Ra[1], &w->Ca[1], &cax[1]);
    if (!ok && !pp->twin_only) /* an operand TMA cannot read: both by cp.async (wggather.c; A [M, K] only) */
        ok = lower_wg_gather_note(L, pp, w);
    w->amn = cax[0] != (pp->tr[0] ? 0 : 1);
    w->bk = cax[1] == (pp->tr[1] ? 1 : 0);
    w->kt = K;
    w->iters = ok && !w->gather ? wg_stage_iters(L, loop, w, &w->one_why) : 1;
    lower_wg_trips(L, loop, 0, w);
    if (ok && w->gather && w->atma)
        b_fixed(L, loop, pp->load[1], w);
    lower_leave(L);
    if (!ok)
        return;
    if (w->iters > 1) { /* stages of 64 halves: boxes 64 wide along K (in the 128-byte swizzle), or 64 rows */
        K *= w->iters;
        for (int i = 0; i < 2; i++)
            *(wg_kmajor(w, i) ? &w->maps[i].box_cols : &w->maps[i].box_rows) = (uint32_t)K;
    }
    w->kparts = wg_kparts(w, K);
    if (w->kparts > 1) { /* an iteration in stages of 64 halves: boxes 64 wide along K, or 64 rows */
        K /= w->kparts;
        for (int i = 0; i < 2; i++)
            if (!wg_kmajor(w, i))
                w->maps[i].box_rows = (uint32_t)K;
    }
    w->M = M;
    w->N = N;
    w->K = K;
    w->arow = wg_row_bytes(K * (int64_t)w->maps[0].elem_bytes);
    w->warps = wg_warps(M);
    w->stage_bytes = (M + N) * K * (int64_t)w->maps[0].elem_bytes;
    w->S = lower_wg_ring_stages(w, w->stage_bytes);
    w->how = w->gather ? lower_fmt(L, "%s%s", wg_how(L, w, 1), w->how) : wg_how(L, w, 1);
    if (w->S < 2)
        return (void)lower_miss(L, 0, "fewer than two TMA stages fit");
    w->nmaps = w->gather ? w->atma + w->btma : 2; /* a gather twin: A's im2col map, B's map, both, or none */
    /* a gather twin walks tiles where one producer thread issues A's im2col box (wggather.c): its
     * consumers' epilogue under the next tile's copies */
    w->persist_ok = after_loop_ok(L, loop) && (!w->gather || (w->atma && w->blocks == 1));
    if (w->gather && !w->persist_ok)
        w->persist_no = !w->atma ? "A is gathered by cp.async (the persistent gather twin takes A by TMA's im2col mode)"
                        : w->blocks > 1 ? "two blocks an SM share it"
                                        : "a statement after the loop can return";
    if (!w->gather) {
        size_t h0 = strlen(w->how);
        lower_wg_pair_note(L, loop, pp->update->names[0], w); /* two N tiles a block (wgpair.c) */
        /* or two M tiles (wgpair.c): its words say what the `warps` hint got */
        const char *mp = lower_wg_mpair_note(L, loop, pp->update->names[0], w);
        if (mp)
            w->how = lower_fmt(L, "%s%s%s", wg_how(L, w, 0), w->how + h0, mp);
    }
    L->tw.loop = loop;
}

/* A persistent twin's store staging past the ring, in bytes (one part). */
static int persist_plan(wg_plan *w);

/* Bytes of B's slot in a stage (a gather twin's: no pair) */
static int64_t b_slot_of(const wg_plan *w) { return w->N * w->K * (int64_t)w->maps[w->gather ? w->atma : 1].elem_bytes; }

int64_t lower_wg_store_bytes(const wg_plan *w)
{
    return w->nmaps == 3 || w->vstore ? w->M * w->N * (int64_t)w->maps[2].elem_bytes : 0;
}

/* The barriers of A's resident-mode stages past the ring's S, in bytes (res_stages). */
static int64_t res_bars(const wg_plan *w) { return w->bres && w->bres_sa > w->S ? 16 * (w->bres_sa - w->S) : 0; }

int64_t lower_wg_staging(const wg_plan *w)
{
    /* two M tiles a block: a staging each; B's resident slots past the ring's ahead of it (persist_plan), the
     * resident mode's extra barriers after it */
    return w->persist ? (w->mpair ? 2 : 1) * lower_wg_store_bytes(w) / w->epi_parts + (w->bres ? w->bres_extra : 0) +
                            res_bars(w)
                      : 0;
}

int lower_wg_nbar(const wg_plan *w) { return w->bres && w->bres_sa > w->S ? w->bres_sa : w->S; }

int64_t lower_wg_bar_off(const wg_plan *w) { return w->S * w->stage_bytes + lower_wg_staging(w) - res_bars(w); }

const char *lower_wg_ring_of(lw *L, const wg_plan *w, const char *x, const char *op)
{
    if (lower_wg_nbar(w) == w->S)
        return lower_fmt(L, "%s %s %d", x, op, w->S);
    return lower_fmt(L, "tl_res ? %s %s %d : %s %s %d", x, op, w->bres_sa, x, op, w->S);
}

/* A's rows in a stage: the M tile's, or two M tiles' (wgpair.c). */
static int64_t a_rows(const wg_plan *w) { return w->mpair ? 2 * w->M : w->M; }

/* Bytes of A's slot in a stage, its rows as the producer copies them. */
static int64_t a_slot(const wg_plan *w) { return a_rows(w) * w->K * (int64_t)w->maps[0].elem_bytes; }

/* B's offset in a stage's ring: past A's S slots (or, B resident, past A's
 * bres_sa). */
const char *lower_wg_b_base(lw *L, const wg_plan *w)
{
    if (lower_wg_nbar(w) == w->S)
        return lower_fmt(L, "%lld", (long long)(w->S * a_slot(w)));
    return lower_fmt(L, "(tl_res ? %lldu : %lldu)", (long long)(w->bres_sa * a_slot(w)),
                     (long long)(w->S * a_slot(w)));
}

/* The persistent schedule for plan w (wgmma.c's twin of a variant that
 * qualified): the ring and a separate staging of the stored tile, since
 * the producer fills the ring with the next tile's operands while the
 * consumers store this one. 0 when fewer than 2 stages fit. */
int lower_wg_persist(wg_plan *w)
{
    wg_plan p = *w;
    if (p.pair_ok) { /* two N tiles a block (wgpair.c): its stages */
        p.pair = 1;
        p.stage_bytes = p.pair_stage_bytes;
        p.S = p.pair_S;
        if (persist_plan(&p)) {
            *w = p;
            return 1;
        }
    }
    if (w->mpair_ok) { /* two M tiles a block (wgpair.c): A's box of both tiles' rows, its stages */
        p = *w;
        p.mpair = 1;
        p.stage_bytes = p.mpair_stage_bytes;
        p.S = p.mpair_S;
        if (!p.amn)
            p.maps[0].box_rows = (uint32_t)(2 * p.M);
        if (persist_plan(&p)) {
            *w = p;
            return 1;
        }
    }
    return persist_plan(w);
}

/* A's stages where B is resident (persist_plan): B's ring slots are idle
 * then, so A takes the room, as many stages as leave B at least
 * WG_RES_TAPS resident slots, at most twice the ring's S (and
 * WG_STAGES_CAP), each new stage's barrier pair in the room past the ring
 * too; else the ring's S. room: the bytes past the ring mode's block.
 * The steps in flight grow with them where the copies' latency, not
 * their rate, bounds the twin (docs/lowering.md, "What limits the rows
 * twin"). */
static void res_stages(wg_plan *w, int64_t room)
{
    int64_t a = a_slot(w), b = b_slot_of(w), ring = w->S * (a + b);
    int top = 2 * w->S < WG_STAGES_CAP ? 2 * w->S : WG_STAGES_CAP;
    for (int s = top; s > w->S; s--) {
        int64_t cap = (ring + room - 16 * (s - w->S) - s * a) / b; /* B's slots past A's s */
        if (cap > WG_RES_SLOTS)
            cap = WG_RES_SLOTS;
        if (cap >= WG_RES_TAPS) {
            int64_t extra = s * a + cap * b - ring;
            w->bres_sa = s;
            w->bres_cap = (int)cap;
            w->bres_extra = extra > 0 ? extra : 0;
            return;
        }
    }
}

/* lower_wg_persist for plan w as it stands. */
static int persist_plan(wg_plan *w)
{
    /* the staging in parts of whole boxes, as few as keep the stages of the
     * one-tile schedule (a 128 x 256 f16 tile: two halves of 32 KiB, four
     * stages of 48 KiB) */
    int64_t tile = lower_wg_store_bytes(w);
    int64_t boxes = tile / (w->M * WG_ROW_BYTES);
    tile *= w->mpair ? 2 : 1; /* two M tiles a block: a staging each */
    int parts = 1, S = lower_wg_fit(w, wg_max_stages(w), w->stage_bytes, tile);
    for (int p = 2; S < w->S && p <= boxes && boxes % p == 0; p *= 2) { /* more parts only where they gain a stage */
        int s = lower_wg_fit(w, wg_max_stages(w), w->stage_bytes, tile / p);
        if (s > S)
            S = s, parts = p;
    }
    if (!w->persist_ok || S < 2 || ((w->pair || w->mpair) && !lower_wg_pair_deep(w, S)))
        return 0;
    w->S = S;
    w->persist = 1;
    w->epi_parts = parts;
    w->bres = 0;
    if (w->bres_ok) { /* B's region: S slots, and as many more as fit beside the staging */
        int64_t bslot = b_slot_of(w), room = SMEM_LIMIT - w->other - lower_wg_block(S, w->stage_bytes, tile / parts);
        int64_t more = room > 0 ? room / bslot : 0;
        if (S + more > WG_RES_SLOTS)
            more = WG_RES_SLOTS > S ? WG_RES_SLOTS - S : 0;
        w->bres = 1;
        w->bres_cap = (int)(S + more);
        w->bres_extra = more * bslot;
        w->bres_sa = S;
        res_stages(w, room);
    }
    w->epi_off = w->S * w->stage_bytes + (w->bres ? w->bres_extra : 0);
    return 1;
}

/* ---- the twin's loop ---- */

/* pid(0), pid(1) of the twin: the blocks in launch order walk WG_GROUP
 * tiles down axis 0 before the next column of tiles along axis 1, so the
 * blocks resident at once share their A rows and B columns in L2. A
 * bijection of the grid: every (pid(0), pid(1)) runs once. */
void lower_wg_preamble(lw *L)
{
    if (L->tw.plan.persist)
        return; /* per tile, in the persistent loop (lower_wg_finish) */
    lower_line(L, "int tl_pid0, tl_pid1;");
    lower_line(L, "{ /* grouped order, %d tiles down axis 0 at a time */", WG_GROUP);
    L->ind++;
    lower_line(L, "const int tl_n0 = (int)gridDim.x, tl_n1 = (int)gridDim.y;");
    lower_line(L, "const int tl_lin = (int)blockIdx.x + (int)blockIdx.y * tl_n0, tl_gw = %d * tl_n1;", WG_GROUP);
    lower_line(L, "const int tl_first = (tl_lin / tl_gw) * %d, tl_rest = tl_n0 - tl_first;", WG_GROUP);
    lower_line(L, "const int tl_gs = tl_rest < %d ? tl_rest : %d, tl_r = tl_lin %% tl_gw;", WG_GROUP, WG_GROUP);
    if (L->order.rev) /* the heaviest blocks first (order.c) */
        lower_line(L, "tl_pid0 = tl_n0 - 1 - (tl_first + tl_r %% tl_gs);");
    else
        lower_line(L, "tl_pid0 = tl_first + tl_r %% tl_gs;");
    lower_line(L, "tl_pid1 = tl_r / tl_gs;");
    L->ind--;
    lower_line(L, "}");
}

/* Coordinates (column, row) of map i's box at its first element. */
void lower_wg_coords(lw *L, const wg_plan *w, int i, const char **col, const char **row)
{
    const char *z[1] = {"0"};
    lower_walk(L, w->C[i], z, 0, NULL, PREP);
    lower_walk(L, w->R[i], z, 0, NULL, PREP);
    *col = lower_walk(L, w->C[i], z, 0, NULL, EMIT);
    *row = lower_walk(L, w->R[i], z, 0, NULL, EMIT);
    /* a scalar the pointer adds to a coordinate (lower_ptraff.add) */
    if (w->Ca[i]) {
        lower_walk(L, w->Ca[i], NULL, 0, NULL, PREP);
        *col = lower_fmt(L, "(%s + (int)(%s))", *col, lower_walk(L, w->Ca[i], NULL, 0, NULL, EMIT));
    }
    if (w->Ra[i]) {
        lower_walk(L, w->Ra[i], NULL, 0, NULL, PREP);
        *row = lower_fmt(L, "(%s + (int)(%s))", *row, lower_walk(L, w->Ra[i], NULL, 0, NULL, EMIT));
    }
}

/* The suffix of the wgmma helper of A M-major (amn), B K-major (bk), a
 * pair of N tiles: "", "_at", "_bk", "_at_bk", each maybe with "_2"
 * (upper case for its include guard). */
static const char *wgmma_sfx(int amn, int bk, int pair, int upper)
{
    static const char *const s[2][8] = {{"", "_2", "_bk", "_bk_2", "_at", "_at_2", "_at_bk", "_at_bk_2"},
                                        {"", "_2", "_BK", "_BK_2", "_AT", "_AT_2", "_AT_BK", "_AT_BK_2"}};
    return s[upper][(amn ? 4 : 0) + (bk ? 2 : 0) + (pair ? 1 : 0)];
}

/* Bytes of B's slot in a stage (A's: a_slot, above). */
static int64_t b_slot(const wg_plan *w) { return lower_wg_n(w) * w->K * (int64_t)w->maps[1].elem_bytes; }

/* The TMA copies of one stage of a K-major operand (A, or a K-major B: map
 * i) of `rows` rows: `ka` boxes cut along K, each rows x arow bytes, at
 * `ring` in the stage's slot. */
static void kmajor_copies(lw *L, const wg_plan *w, int i, const char *ring, int64_t rows, int ka, const char *col,
                          const char *row, const char *z)
{
    for (int j = 0; j < ka; j++)
        lower_line(L, "tl_tma_%dd(%s%s, &tl_tm%d, %s%s, %s%s, tl_full + tl_s * 8);", z[0] ? 3 : 2, ring,
                   j ? lower_fmt(L, " + %lld", (long long)(j * rows * w->arow)) : "", i, col,
                   j ? lower_fmt(L, " + %u", j * w->maps[i].box_cols) : "", row, z);
}

/* The TMA copies of one stage of an MN-major operand (B [K, N], or A
 * given as [K, M]: map i): `nb` boxes of K rows x 128 bytes, side by side
 * along M or N, each K x 128 bytes after the last, at `ring`. */
static void mnmajor_copies(lw *L, const wg_plan *w, int i, const char *ring, int nb, const char *col, const char *row,
                           const char *z)
{
    for (int b = 0; b < nb; b++)
        lower_line(L, "tl_tma_%dd(%s + %lld, &tl_tm%d, %s + %d, %s%s, tl_full + tl_s * 8);", z[0] ? 3 : 2, ring,
                   (long long)(b * w->K * WG_ROW_BYTES), i, col, b * (int)w->maps[i].box_cols, row, z);
}

/* The wgmma descriptor of k16 step tl_q of an MN-major operand at shared
 * address `base`: its boxes of K rows x 128 bytes in the 128-byte swizzle
 * (leading byte offset: one box, the next 64 of M or N; stride: 8 rows),
 * a k16 step 16 rows down. */
static const char *mnmajor_desc(lw *L, const wg_plan *w, const char *base)
{
    return lower_fmt(L, "tl_wg_desc(%s + tl_q * %d, %lld, %d, 1)", base, 16 * WG_ROW_BYTES,
                     (long long)(w->K * WG_ROW_BYTES), 8 * WG_ROW_BYTES);
}

/* The wgmma descriptor of k16 step tl_q of a K-major operand of `rows`
 * rows at shared address `base`: 32 bytes a step along its swizzled rows,
 * the next box (rows x arow bytes) every arow / 32 steps. */
static const char *kmajor_desc(lw *L, const wg_plan *w, const char *base, int64_t rows)
{
    int qb = w->arow / 32; /* k16 steps a swizzled row */
    const char *at = w->K * (int64_t)w->maps[0].elem_bytes == w->arow
                         ? lower_fmt(L, "%s + tl_q * 32", base)
                         : lower_fmt(L, "%s + (tl_q / %d) * %lld + (tl_q %% %d) * 32", base, qb,
                                     (long long)(rows * w->arow), qb);
    return lower_fmt(L, "tl_wg_desc(%s, 16, %d, %d)", at, 8 * w->arow, wg_layout_type(w->arow));
}

/* The loop over plan w's stages, as the producer and the consumers walk
 * it, loop variable v, stage counter tl_it: the program's loop, one stage
 * (or several iterations, w->iters) a step, or each iteration's w->kparts
 * stages (tl_j, the part) in turn. stage_loop_end closes it. */
static void stage_loop(lw *L, const wg_plan *w, const char *v)
{
    if (w->kparts <= 1) {
        lower_line(L, "for (int %s = tl_lo; %s < tl_hi; %s += tl_st, ++tl_it) {", v, v, v);
        L->ind++;
        return;
    }
    lower_line(L, "for (int %s = tl_lo; %s < tl_hi; %s += tl_st) {", v, v, v);
    L->ind++;
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j, ++tl_it) { /* the K tile's 64-wide parts */", w->kparts);
    L->ind++;
}

static void stage_loop_end(lw *L, const wg_plan *w)
{
    for (int i = w->kparts > 1 ? 2 : 1; i > 0; i--) {
        L->ind--;
        lower_line(L, "}");
    }
}

/* Part tl_j of the K tile (w->kparts > 1): map i's K coordinate (its
 * column when K-major, else its row) that many stages of K on. */
static void kpart_coord(lw *L, const wg_plan *w, int i, const char **col, const char **row)
{
    if (w->kparts <= 1)
        return;
    const char **k = wg_kmajor(w, i) ? col : row;
    *k = lower_fmt(L, "%s + tl_j * %lld", *k, (long long)w->K);
}

/* One thread of the producer warp group: wait for a free slot, expect its
 * bytes, issue the copies of A (one box of M rows per 128 bytes of the K
 * tile, or one narrower box) and B (N/64 boxes of K rows x 64 columns). */
static void producer(lw *L, const wg_plan *w, const tilec_stmt *loop, const char *v)
{
    int S = w->S, nb = (int)(lower_wg_n(w) / w->maps[1].box_cols);
    int ka = w->amn ? (int)(a_rows(w) / w->maps[0].box_cols) : (int)(a_slot(w) / (a_rows(w) * w->arow)); /* A's boxes a stage */
    if (w->gather) {
        lower_wg_gather_producer(L, w, loop, v);
        return;
    }
    if (!w->persist) {
        lower_line(L, "if (tl_tid >= %d) {", L->nt);
        L->ind++;
        lower_line(L, "tl_setmaxnreg_dec<40>();");
        lower_line(L, "if (tl_tid == %d) {", L->nt);
        L->ind++;
    }
    lower_bind_loop_scope(L, loop);
    if (!w->persist)
        lower_line(L, "int tl_it = 0;");
    stage_loop(L, w, v);
    lower_line(L, "const int tl_s = tl_it %% %d;", S);
    lower_line(L, "if (tl_it >= %d)", S);
    lower_line(L, "    tl_mbar_wait(tl_empty + tl_s * 8, ((tl_it / %d) + 1) & 1);", S);
    lower_line(L, "tl_mbar_expect(tl_full + tl_s * 8, %lld);", (long long)w->stage_bytes);
    const char *col, *row, *z;
    lower_wg_coords(L, w, 0, &col, &row);
    kpart_coord(L, w, 0, &col, &row);
    z = lower_wg_batch(L, w, 0);
    const char *ra = lower_fmt(L, "tl_ring + tl_s * %lld", (long long)a_slot(w));
    if (w->amn) /* A MN-major: boxes of K rows along M, as an MN-major B's */
        mnmajor_copies(L, w, 0, ra, ka, col, row, z);
    else
        kmajor_copies(L, w, 0, ra, a_rows(w), ka, col, row, z);
    lower_wg_coords(L, w, 1, &col, &row);
    kpart_coord(L, w, 1, &col, &row);
    z = lower_wg_batch(L, w, 1);
    /* K-major B: boxes of N rows, as A's (paired: two, one per N tile, the second's rows after the first's,
     * so the tensor map is the one-tile twin's) */
    for (int h = 0; w->bk && h < (w->pair ? 2 : 1); h++)
        kmajor_copies(L, w, 1,
                      lower_fmt(L, "tl_ring + %lld + tl_s * %lld", (long long)(S * a_slot(w) + h * w->N * w->arow),
                                (long long)b_slot(w)),
                      lower_wg_n(w), ka, col, h ? lower_fmt(L, "%s + %lld", row, (long long)w->N) : row, z);
    if (!w->bk)
        mnmajor_copies(L, w, 1, lower_fmt(L, "tl_ring + %lld + tl_s * %lld", (long long)(S * a_slot(w)), (long long)b_slot(w)),
                       nb, col, row, z);
    stage_loop_end(L, w);
    lower_leave(L);
    if (w->persist)
        return; /* the producer's part of a persistent twin ends with its loop */
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "return;");
    L->ind--;
    lower_line(L, "}");
}

void lower_wg_res_test(lw *L, const wg_plan *w)
{
    lower_line(L, "const bool tl_res = tl_st > 0 && (tl_hi <= tl_lo || ((long long)tl_hi - tl_lo - 1) / tl_st < %d)%s%s; "
                  "/* B resident: its steps fit the %d slots%s */",
               w->bres_cap, w->bres_axes & 1 ? " && tl_grid1 == 1" : "", w->bres_axes & 2 ? " && tl_grid2 == 1" : "",
               w->bres_cap, w->bres_axes ? " and every tile has the same B" : "");
}

/* The consumer warp groups: wait for a slot, K/16 k16 steps of wgmma on
 * it, then wait for the previous slot's and hand that one back (one
 * group of wgmma in flight while the next slot is awaited; in the twins
 * of lower_wg_gather_one and the one-tile twins whose A is TMA's im2col
 * box, whose copies are the limit, each slot back as soon as its own
 * wgmma are done). A is K-major
 * in rows of w->arow bytes swizzled as wide (the descriptor's stride
 * byte offset: 8 such rows; its leading one unused), a k16 step 32 bytes
 * along a row, into the next box past 128 bytes; B is N-major in boxes
 * of K rows x 128 bytes (leading byte offset: one box, the next 64
 * columns; stride: 8 rows), a k16 step 16 rows down (PTX ISA, "Matrix
 * Descriptor Format" and the canonical layouts it names). */
static void consumer(lw *L, const wg_plan *w, const val *acc, tilec_dtype d)
{
    if (w->persist) { /* tl_it counts on across the block's tiles; this tile's first */
        lower_line(L, "const int tl_it0 = tl_it;");
        if (w->bres)
            lower_wg_res_test(L, w);
    } else {
        if (!w->gather || w->creg) /* a gather twin's producer needs registers for its addresses (wggather.c) */
            lower_line(L, "tl_setmaxnreg_inc<%d>();", w->gather ? w->creg : 232);
        lower_line(L, "int tl_it = 0;");
    }
    stage_loop(L, w, "tl_kv");
    lower_line(L, "const int tl_s = %s;", lower_wg_ring_of(L, w, "tl_it", "%"));
    lower_line(L, "tl_mbar_wait(tl_full + tl_s * 8, (%s) & 1);", lower_wg_ring_of(L, w, "tl_it", "/"));
    /* the producer's cp.async wrote the slot: generic proxy, wgmma reads through the async one; where one
     * producer thread arrives (lower_wg_gather_one) the writers fenced before it, and a step all TMA needs none */
    int one = lower_wg_gather_one(w);
    if (w->gather && !one)
        lower_line(L, "tl_fence_async_smem();");
    /* each consumer warp group its 64 rows of A (MN-major: its box of 64 along M) */
    lower_line(L, "const unsigned tl_a = tl_ring + tl_s * %lld + (tl_warp >> 2) * %lld;", (long long)a_slot(w),
               (long long)(w->amn ? w->K * WG_ROW_BYTES : 64 * w->arow));
    lower_line(L, "const unsigned tl_b = tl_ring + %s + %s * %lld;", lower_wg_b_base(L, w),
               w->bres ? "(tl_res ? tl_it - tl_it0 : tl_s)" : "tl_s", (long long)b_slot(w));
    lower_line(L, "tl_wg_fence();");
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_q = 0; tl_q < %d; ++tl_q)", (int)(w->K / 16));
    /* B MN-major (N / 64 boxes of K rows, the transpose bit) or K-major (rows of N, as A's) */
    const char *db = w->bk ? kmajor_desc(L, w, "tl_b", lower_wg_n(w)) : mnmajor_desc(L, w, "tl_b");
    const char *da = w->amn ? mnmajor_desc(L, w, "tl_a") : kmajor_desc(L, w, "tl_a", a_rows(w));
    lower_line(L, "    tl_wgmma_%s_n%lld%s(%s%s, %s, %s);", d == TILEC_DT_BF16 ? "bf16" : "f16", (long long)lower_wg_n(w),
               wgmma_sfx(w->amn, w->bk, w->pair, 0), acc->c, w->pair ? ", tl_acc1" : "", da, db);
    lower_line(L, "tl_wg_commit();");
    if (w->gather && w->atma && (one || !w->persist)) {
        /* the slot back as soon as its own wgmma are done, not when the next slot has landed: these twins'
         * consumers wait for their copies (not the tensor cores), so the ring keeps one more copy in flight.
         * The twins of lower_wg_gather_one (session 50) and, since session 51, the one-tile twins whose A is
         * the im2col box (3-7% on the layers of one or two tiles an SM, bench/results/conv_s51b.md); not the
         * persistent 128 x 128 ones: there ptxas spilled in the fused twin's epilogue (conv2d_nhwc_rows v0, two
         * LDL a tile) and 1x1 56x56 C64 K256 fused ran 17% slower */
        lower_line(L, "tl_wg_wait<0>();");
        lower_line(L, "if (tl_lane == 0)");
        lower_line(L, "    tl_mbar_arrive(tl_empty + tl_s * 8);");
        stage_loop_end(L, w);
        return;
    }
    /* one group in flight: the previous stage's wgmma are done, its slot free */
    lower_line(L, "tl_wg_wait<1>();");
    const char *prev = lower_wg_ring_of(L, w, "(tl_it - 1)", "%");
    lower_line(L, "if (tl_it > %s && tl_lane == 0)", w->persist ? "tl_it0" : "0");
    lower_line(L, "    tl_mbar_arrive(tl_empty + (%s) * 8);", prev);
    stage_loop_end(L, w);
    lower_line(L, "tl_wg_wait<0>();");
    if (w->persist) { /* the last stage back to the producer, for the next tile */
        lower_line(L, "if (tl_it > tl_it0 && tl_lane == 0)");
        lower_line(L, "    tl_mbar_arrive(tl_empty + (%s) * 8);", prev);
    }
}

int lower_wg_loop(lw *L, const tilec_stmt *loop)
{
    if (!L->tw.on || loop != L->tw.loop)
        return 0;
    lower_pipe_plan pp;
    const wg_plan *w = &L->tw.plan;
    if (!lower_pipeline_plan(L, loop, &pp))
        return 0;
    int S = w->S;
    int64_t epi = lower_wg_staging(w);
    L->tw.pre = L->out.n; /* the lets before the loop end here (wgpair.c lowers them again) */
    early_issue(L, loop, pp.acc);
    uint32_t base = lower_alloc_smem(L, lower_wg_block(S, w->stage_bytes, epi));
    L->tw.plan.ring_base = base; /* the epilogue's TMA store stages in the ring, or past it (wgstore.c) */
    const char *v = lower_cname(L, loop->names[0]);
    lower_walk(L, loop->lo, NULL, 0, NULL, PREP);
    lower_walk(L, loop->hi, NULL, 0, NULL, PREP);
    lower_wg_pair_acc(L, pp.acc->c);
    lower_line(L, "{ /* %s += dot: wgmma on %d %s stages, one producer warp group (sm_90a) */", pp.acc->c, S,
               w->gather ? "cp.async" : "TMA");
    L->ind++;
    const char *step = loop->step ? lower_walk(L, loop->step, NULL, 0, NULL, EMIT) : "1";
    if (w->iters > 1) /* a stage: this many iterations, K tiles side by side (wg_stage_iters) */
        step = lower_fmt(L, "(%s) * %d", step, w->iters);
    lower_line(L, "const int tl_lo = %s, tl_hi = %s, tl_st = %s;", lower_walk(L, loop->lo, NULL, 0, NULL, EMIT),
               lower_walk(L, loop->hi, NULL, 0, NULL, EMIT), step);
    lower_line(L, "const unsigned tl_ring = (tl_sa(tl_smem + %u) + 1023u) & ~1023u;", base);
    lower_line(L, "const unsigned tl_full = tl_ring + %lld, tl_empty = tl_full + %d;", (long long)lower_wg_bar_off(w),
               8 * lower_wg_nbar(w));
    if (w->persist) { /* the barriers are set up once, before the roles part (lower_wg_finish) */
        if (L->tw.role == 1)
            producer(L, w, loop, v);
        else
            consumer(L, w, pp.acc, lower_ty(L, pp.load[0])->dtype);
        L->ind--;
        lower_line(L, "}");
        L->tw.epi = L->out.n;
        L->tw.done = 1;
        return 1;
    }
    lower_line(L, "if (tl_tid == 0) {");
    lower_line(L, "    for (int tl_s = 0; tl_s < %d; ++tl_s) {", S);
    lower_line(L, "        tl_mbar_init(tl_full + tl_s * 8, %d);", wg_full_arrivals(w));
    lower_line(L, "        tl_mbar_init(tl_empty + tl_s * 8, %d);", L->nwarps);
    lower_line(L, "    }");
    lower_line(L, "    tl_mbar_fence_init();");
    lower_line(L, "}");
    lower_line(L, "__syncthreads();");
    producer(L, w, loop, v);
    consumer(L, w, pp.acc, lower_ty(L, pp.load[0])->dtype);
    L->ind--;
    lower_line(L, "}");
    L->tw.epi = L->out.n; /* from here on only the consumer warps run */
    L->tw.done = 1;
    return 1;
}

/* ---- the twin in the translation unit ---- */

static const char wg_helpers[] =
    "#ifndef TL_WG_HELPERS\n"
    "#define TL_WG_HELPERS\n"
    "/* sm_90a: tensor maps, mbarriers, TMA copies, wgmma (lower/wgmma.c) */\n"
    "struct __align__(64) tl_tmap { unsigned long long v[16]; };\n"
    "static __device__ __forceinline__ unsigned tl_sa(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }\n"
    "static __device__ __forceinline__ void tl_mbar_init(unsigned b, unsigned n)\n"
    "{ asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(b), \"r\"(n) : \"memory\"); }\n"
    "static __device__ __forceinline__ void tl_mbar_fence_init() { asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\"); }\n"
    "static __device__ __forceinline__ void tl_mbar_expect(unsigned b, unsigned bytes)\n"
    "{ asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(b), \"r\"(bytes) : \"memory\"); }\n"
    "static __device__ __forceinline__ void tl_mbar_arrive(unsigned b)\n"
    "{ asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"(b) : \"memory\"); }\n"
    "static __device__ __forceinline__ void tl_mbar_wait(unsigned b, unsigned ph)\n"
    "{\n"
    "    unsigned ok = 0;\n"
    "    do {\n"
    "        asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }\"\n"
    "                     : \"=r\"(ok) : \"r\"(b), \"r\"(ph) : \"memory\");\n"
    "    } while (!ok);\n"
    "}\n"
    "static __device__ __forceinline__ void tl_tma_2d(unsigned dst, const tl_tmap *m, int c0, int c1, unsigned bar)\n"
    "{\n"
    "    asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\"\n"
    "                 :: \"r\"(dst), \"l\"((unsigned long long)m), \"r\"(c0), \"r\"(c1), \"r\"(bar) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tl_tma_3d(unsigned dst, const tl_tmap *m, int c0, int c1, int c2, unsigned bar)\n"
    "{\n"
    "    asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\"\n"
    "                 :: \"r\"(dst), \"l\"((unsigned long long)m), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(bar) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tl_tma_store_3d(const tl_tmap *m, int c0, int c1, int c2, unsigned src)\n"
    "{\n"
    "    asm volatile(\"cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];\"\n"
    "                 :: \"l\"((unsigned long long)m), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(src) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tl_tma_store_2d(const tl_tmap *m, int c0, int c1, unsigned src)\n"
    "{\n"
    "    asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\"\n"
    "                 :: \"l\"((unsigned long long)m), \"r\"(c0), \"r\"(c1), \"r\"(src) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void tl_bulk_commit() { asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\"); }\n"
    "static __device__ __forceinline__ void tl_bulk_wait_read() { asm volatile(\"cp.async.bulk.wait_group.read 0;\" ::: \"memory\"); }\n"
    "static __device__ __forceinline__ void tl_fence_async_smem() { asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\"); }\n"
    "static __device__ __forceinline__ void tl_wg_fence() { asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\"); }\n"
    "static __device__ __forceinline__ void tl_wg_commit() { asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\"); }\n"
    "template <int N> static __device__ __forceinline__ void tl_wg_wait() { asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(N) : \"memory\"); }\n"
    "template <int N> static __device__ __forceinline__ void tl_setmaxnreg_inc() { asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %0;\" :: \"n\"(N)); }\n"
    "template <int N> static __device__ __forceinline__ void tl_setmaxnreg_dec() { asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %0;\" :: \"n\"(N)); }\n"
    "static __device__ __forceinline__ void tl_bar_consumers(int n) { asm volatile(\"bar.sync 1, %0;\" :: \"r\"(n) : \"memory\"); }\n"
    "/* a shared-memory matrix descriptor; layout: 1 128-byte, 2 64-byte, 3 32-byte swizzle */\n"
    "static __device__ __forceinline__ unsigned long long tl_wg_desc(unsigned a, unsigned lbo, unsigned sbo, unsigned layout)\n"
    "{\n"
    "    return (unsigned long long)((a & 0x3FFFF) >> 4) | (unsigned long long)(lbo >> 4) << 16 |\n"
    "           (unsigned long long)(sbo >> 4) << 32 | (unsigned long long)layout << 62;\n"
    "}\n"
    "#endif\n";

/* tl_wgmma_<t>_n<N>(acc, descA, descB): acc += A (K-major) @ B (N-major,
 * the transpose bit), m64nNk16; _at: A M-major (amn, A's transpose bit);
 * _bk: B K-major (bk, no transpose bit); with `pair`,
 * tl_wgmma_<t>_n<N>[_at][_bk]_2(d, e, ...): the first N / 4 registers in
 * d, the rest in e (two N / 2 tiles' fragments, wgpair.c); defined once
 * per translation unit. */
static void wgmma_fn(strbuf *tu, const char *t, int64_t N, int amn, int bk, int pair)
{
    const char *sfx = wgmma_sfx(amn, bk, pair, 0), *SFX = wgmma_sfx(amn, bk, pair, 1);
    sb_printf(tu, "#ifndef TL_WGMMA_%s_N%lld%s\n#define TL_WGMMA_%s_N%lld%s\n", t, (long long)N, SFX, t, (long long)N, SFX);
    sb_printf(tu, "static __device__ __forceinline__ void tl_wgmma_%s_n%lld%s(float *d, %sunsigned long long da, unsigned long long db)\n{\n",
              t, (long long)N, sfx, pair ? "float *e, " : "");
    sb_printf(tu, "    asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %%%lld, 0; "
                  "wgmma.mma_async.sync.aligned.m64n%lldk16.f32.%s.%s {",
              (long long)(N / 2 + 2), (long long)N, t, t);
    for (int64_t i = 0; i < N / 2; i++)
        sb_printf(tu, "%s%%%lld", i ? ", " : "", (long long)i);
    sb_printf(tu, "}, %%%lld, %%%lld, p, 1, 1, %d, %d; }\"\n        : ", (long long)(N / 2), (long long)(N / 2 + 1), amn, !bk);
    for (int64_t i = 0; i < N / 2; i++)
        sb_printf(tu, "%s\"+f\"(%c[%lld])", i ? ", " : "", pair && i >= N / 4 ? 'e' : 'd',
                  (long long)(pair && i >= N / 4 ? i - N / 4 : i));
    sb_printf(tu, "\n        : \"l\"(da), \"l\"(db), \"n\"(1) : \"memory\");\n}\n#endif\n");
}

const char *lower_wg_helpers(void) { return wg_helpers; }

void lower_wg_ss_fn(strbuf *tu, const char *t, int64_t N, int bk) { wgmma_fn(tu, t, N, 0, bk, 0); }

int lower_wg_consumers(const lw *L) { return L->tw.plan.mpair ? 2 * L->nt : L->nt; }

/* body[from, to) into tu with every __syncthreads() after `epi` the
 * consumers' named barrier 1: the producer warps do not reach it. */
void lower_wg_add_consumers(strbuf *tu, const char *body, size_t from, size_t epi, size_t to, int nt)
{
    sb_add(tu, body + from, epi - from);
    const char *sync = "__syncthreads();", *p = body + epi, *end = body + to;
    for (const char *q; (q = strstr(p, sync)) != NULL && q < end; p = q + strlen(sync)) {
        sb_add(tu, p, (size_t)(q - p));
        sb_printf(tu, "tl_bar_consumers(%d);", nt);
    }
    sb_add(tu, p, (size_t)(end - p));
}

/* Does a map of plan w take its batch from pid(1) (a head: bgrid 1)? */
static int batch_in_y(const wg_plan *w)
{
    for (int i = 0; i < w->nmaps && i < 3; i++)
        if (w->Z[i] && w->maps[i].bgrid == 1)
            return 1;
    return 0;
}

/* tl_pid0..2 of tile tl_u of the logical grid tl_grid0..2: one of axes
 * 1 and 2 the slowest, then the grouped order of the 2-D grid as
 * lower_wg_preamble over pid(0) and the other, the N tiles' axis `in` (a
 * bijection: every tile once). `in` is the axis of the pairs of N tiles
 * (pax: wgpair.c) when paired, else 2 when the batch is pid(1) (yz), else
 * 1: the batch the slowest, M tiles grouped with the N tiles of its
 * product, so the blocks resident at once share A's row panels as the
 * plain product's do. */
static void persist_pids(strbuf *tu, int pax, int mpair, int yz, int rev)
{
    /* paired (wgpair.c): the order over pairs of tiles along axis `in` (tl_g1 of them), pid(in) the pair's
     * first; two M tiles a block: over pairs along axis 0 (tl_g0), pid(0) the pair's first */
    const char *g0 = mpair ? "tl_g0" : "tl_grid0";
    /* pid(0) in reverse where the loops grow with it (order.c): the last tile (pair) first */
    const char *p0 = rev ? (mpair ? "(tl_g0 - 1 - (" : "tl_grid0 - 1 - (") : mpair ? "(" : "";
    const char *s0 = rev ? (mpair ? ")) * 2" : ")") : mpair ? ") * 2" : "";
    if (mpair)
        sb_puts(tu, "        const int tl_g0 = (tl_grid0 + 1) / 2;\n");
    int in = pax ? pax : yz ? 2 : 1, sl = 3 - in;
    if (pax)
        sb_printf(tu, "        const int tl_g1 = (tl_grid%d + 1) / 2;\n", in);
    else
        sb_printf(tu, "        const int tl_g1 = tl_grid%d;\n", in);
    sb_printf(tu, "        const int tl_n01 = %s * tl_g1, tl_pid%d = tl_u / tl_n01, tl_lin = tl_u - tl_pid%d * tl_n01;\n"
                  "        const int tl_gw = %d * tl_g1, tl_first = (tl_lin / tl_gw) * %d, tl_rest = %s - tl_first;\n"
                  "        const int tl_gs = tl_rest < %d ? tl_rest : %d, tl_r = tl_lin %% tl_gw;\n"
                  "        const int tl_pid0 = %stl_first + tl_r %% tl_gs%s, tl_pid%d = (tl_r / tl_gs)%s;\n"
                  "        (void)tl_pid0; (void)tl_pid1; (void)tl_pid2;\n",
              g0, sl, sl, WG_GROUP, WG_GROUP, g0, WG_GROUP, WG_GROUP, p0, s0, in,
              pax ? " * 2" : "");
}

void lower_wg_unit_pids(strbuf *tu, const wg_plan *w, int rev) { persist_pids(tu, 0, 0, batch_in_y(w), rev); }

/* The persistent twin: the barriers set up once; the producer thread and
 * the consumer warps each walk the block's tiles (tl_u = blockIdx.x,
 * + gridDim.x, ...) in one if/else of roles (setmaxnreg needs that), the
 * producer running ahead into the next tile's stages while the consumers
 * finish this one (P: the producer's pass, C: the consumers'). */
static void persist_body(strbuf *tu, lw *P, lw *C)
{
    const wg_plan *w = &C->tw.plan;
    const char *pb = sb_str(&P->out), *cb = sb_str(&C->out);
    sb_add(tu, cb, C->tw.body);
    sb_printf(tu, "    { /* a persistent grid: each block walks tiles, %d stages (sm_90a) */\n", w->S);
    sb_printf(tu, "    const unsigned tl_ring0 = (tl_sa(tl_smem + %u) + 1023u) & ~1023u;\n", w->ring_base);
    sb_printf(tu, "    const unsigned tl_full0 = tl_ring0 + %lld, tl_empty0 = tl_full0 + %d;\n", (long long)lower_wg_bar_off(w),
              8 * lower_wg_nbar(w));
    sb_printf(tu, "    if (tl_tid == 0) {\n"
                  "        for (int tl_s = 0; tl_s < %d; ++tl_s) {\n"
                  "            tl_mbar_init(tl_full0 + tl_s * 8, %d);\n"
                  "            tl_mbar_init(tl_empty0 + tl_s * 8, %d);\n"
                  "        }\n"
                  "%s"
                  "        tl_mbar_fence_init();\n"
                  "    }\n"
                  "    __syncthreads();\n",
              lower_wg_nbar(w), wg_full_arrivals(w), C->nwarps * (w->mpair ? 2 : 1),
              w->early_tma ? lower_fmt(C, "        tl_mbar_init(tl_full0 + %d, 1); /* the epilogue's tile read by TMA "
                                          "(staged_issue) */\n", 16 * lower_wg_nbar(w)) : "");
    sb_printf(tu, "    const int tl_units = %s * %s * %s;\n", w->mpair ? "((tl_grid0 + 1) / 2)" : "tl_grid0",
              w->pair && w->pax == 1 ? "((tl_grid1 + 1) / 2)" : "tl_grid1",
              w->pair && w->pax == 2 ? "((tl_grid2 + 1) / 2)" : "tl_grid2");
    int nt = lower_wg_consumers(C); /* the consumer threads (two M tiles a block: two warp groups of C's) */
    if (w->gather) { /* a gather twin's producer warp group, all its threads (wggather.c): registers as planned */
        sb_printf(tu, "    if (tl_tid >= %d) {\n        {\n", nt);
        if (w->preg)
            sb_printf(tu, "        tl_setmaxnreg_dec<%d>();\n", w->preg);
    } else {
        sb_printf(tu, "    if (tl_tid >= %d) {\n        tl_setmaxnreg_dec<40>();\n        if (tl_tid == %d) {\n", nt,
                  nt);
    }
    sb_puts(tu, "        int tl_it = 0;\n        for (int tl_u = (int)blockIdx.x; tl_u < tl_units; tl_u += (int)gridDim.x) {\n");
    persist_pids(tu, w->pair ? w->pax : 0, w->mpair, batch_in_y(w), C->order.rev);
    sb_add(tu, pb + P->tw.body, P->tw.epi - P->tw.body);
    sb_puts(tu, "        }\n");
    if (w->gather)
        sb_puts(tu, "        asm volatile(\"cp.async.wait_all;\" ::: \"memory\"); /* no copy outlives its thread */\n");
    sb_puts(tu, "        }\n    } else {\n");
    if (!w->gather || w->creg)
        sb_printf(tu, "        tl_setmaxnreg_inc<%d>();\n", w->gather ? w->creg : 232);
    sb_puts(tu, "        int tl_it = 0;\n        for (int tl_u = (int)blockIdx.x; tl_u < tl_units; tl_u += (int)gridDim.x) {\n");
    persist_pids(tu, w->pair ? w->pax : 0, w->mpair, batch_in_y(w), C->order.rev);
    if (w->pair) { /* the loop once, the statements after it per N tile (wgpair.c) */
        lower_wg_add_consumers(tu, cb, C->tw.body, C->tw.epi, C->tw.epi, C->nt);
        lower_wg_pair_epilogue(tu, C);
    } else if (w->mpair) { /* the loop by both warp groups, the statements after it by each for its M tile */
        lower_wg_add_consumers(tu, cb, C->tw.body, C->tw.epi, C->tw.epi, C->nt);
        lower_wg_mpair_epilogue(tu, C);
    } else {
        lower_wg_add_consumers(tu, cb, C->tw.body, C->tw.epi, C->tw.end, C->nt);
    }
    sb_puts(tu, "        }\n");
    sb_printf(tu, "        if (%s == 0)\n"
                  "            tl_bulk_wait_read(); /* the last tile's staging stays until the copy engine has read it */\n",
              w->mpair ? "(tl_tid & 127)" : "tl_tid"); /* two M tiles a block: each warp group's storing thread */
    sb_puts(tu, "    }\n    }\n");
    sb_puts(tu, cb + C->tw.end);
}

int lower_wg_finish(lw *L, lw *P, strbuf *tu, tilec_tma_meta *meta, const char *fname)
{
    if (!L->tw.done || L->failed || L->out.failed || L->smem > SMEM_LIMIT)
        return 0;
    if (P && (!P->tw.done || P->failed || P->out.failed || P->smem != L->smem))
        return 0;
    const wg_plan *w = &L->tw.plan;
    if (w->mpair && !lower_wg_mpair_alone(L))
        return 0; /* the two warp groups would share the statements' shared memory (target.c plans again) */
    const char *body = sb_str(&L->out);
    sb_puts(tu, "\n#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n");
    sb_puts(tu, wg_helpers);
    if (w->mpair) /* each warp group of two M tiles a block at a named barrier of its own (wgpair.c) */
        sb_puts(tu, "#ifndef TL_BAR_GROUP\n#define TL_BAR_GROUP\n"
                    "static __device__ __forceinline__ void tl_bar_group(int g, int n)\n"
                    "{ asm volatile(\"bar.sync %0, %1;\" :: \"r\"(1 + g), \"r\"(n) : \"memory\"); }\n#endif\n");
    wgmma_fn(tu, w->maps[0].bf16 ? "bf16" : "f16", lower_wg_n(w), w->amn, w->bk, w->pair);
    if (P)
        persist_body(tu, P, L);
    else /* after the loop the producer warps are gone: the consumers meet at named barrier 1 */
        lower_wg_add_consumers(tu, body, 0, L->tw.epi, L->out.n, L->nt);
    sb_puts(tu, "#endif\n");
    memset(meta, 0, sizeof *meta);
    size_t n = strlen(fname) + 1;
    meta->name = malloc(n);
    if (!meta->name)
        return -1;
    memcpy(meta->name, fname, n);
    meta->threads = (uint32_t)(lower_wg_consumers(L) + (w->gather ? w->producers : WG_PRODUCER));
    meta->smem_bytes = L->smem;
    meta->nmaps = (uint32_t)w->nmaps;
    /* 2: pairs of tiles along y, 4: along z, 3: along x (wgpair.c) */
    meta->persistent = (uint32_t)(w->pair ? (w->pax == 2 ? 4 : 2) : w->mpair ? 3 : w->persist);
    memcpy(meta->maps, w->maps, sizeof w->maps);
    meta->kbound = w->kbound;
    meta->kfrom = w->kfrom;
    meta->kper = w->kper;
    return 1;
}

const char *lower_wg_params(lw *L)
{
    if (!L->tw.plan.nmaps) /* a gather twin: no tensor maps */
        return "";
    if (L->tw.plan.nmaps == 1) /* a gather twin's B, or its A (im2col: wgim2col.c) */
        return ", const __grid_constant__ tl_tmap tl_tm0";
    if (L->tw.plan.nmaps == 1 && L->tw.plan.persist) /* a persistent gather twin: the program's grid too */
        return ", const __grid_constant__ tl_tmap tl_tm0, int tl_grid0, int tl_grid1, int tl_grid2";
    const char *maps = L->tw.plan.nmaps == 3
                           ? ", const __grid_constant__ tl_tmap tl_tm0, const __grid_constant__ tl_tmap tl_tm1, "
                             "const __grid_constant__ tl_tmap tl_tm2"
                           : ", const __grid_constant__ tl_tmap tl_tm0, const __grid_constant__ tl_tmap tl_tm1";
    /* a persistent twin: the program's grid, which the launch's grid no longer is */
    return L->tw.plan.persist ? lower_fmt(L, "%s, int tl_grid0, int tl_grid1, int tl_grid2", maps) : maps;
}
