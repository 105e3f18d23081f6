/* memory.c: memory operations: load, store and atomic_add of tiles over a
 * layout, as vector accesses where a run is contiguous (axinfo.c), in
 * bounds and aligned, element by element under the mask otherwise. A
 * mask true on a prefix of the run's axis is decided by the run's last
 * element. An f32 atomic_add whose old values go unused is a vector
 * atomic over such a run (2 or 4 elements: the prelude's
 * tl_atomic_add2/4, one RED.F32x4 on sm_90). */
#include <string.h>

#include "lower/lower_internal.h"

static const char *vec_type(int bytes)
{
    return bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : bytes == 4 ? "unsigned int" : bytes == 2 ? "unsigned short" : NULL;
}

/* Elements per vector access for a run of `run` registers and an element
 * size (0: none). */
static int vec_width(int run, unsigned size)
{
    int w = run;
    while (w > 1 && (unsigned)w * size > 16)
        w /= 2;
    if (w < 2 || !vec_type(w * (int)size))
        return 0;
    return w;
}

/* The vector width of an access of pointer tile ptr over layout y whose
 * registers run `run` elements along axis vax of the rank-`rank` tile
 * moved (0: element by element), and, when that is below 16 bytes, why
 * in *why: the layout's run, or the analysis's facts on the pointer
 * (lower_contiguous_why) that refused the run. */
static int vec_plan(lw *L, const tilec_expr *ptr, const lay *y, int rank, int run, int vax, unsigned size, const char **why)
{
    static const char *const kinds[] = {"canonical", "mma", "fma", "blocked"};
    *why = NULL;
    int w = rank ? vec_width(run, size) : 0;
    if (rank && (w ? w : 1) * size < 16) {
        if (y->kind == LY_CANON && (y->repl || run >= y->E)) { /* a thread's whole share is one run: the tile is small */
            *why = lower_fmt(L, "the %s tile over %d threads is %d element%s a thread%s", lower_dims_text(L, y->dims, y->rank), L->nt,
                             y->E, y->E == 1 ? "" : "s", y->repl ? " (replicated)" : "");
        } else {
            *why = lower_fmt(L, "its %s layout gives each thread runs of %d element%s along axis %d", kinds[y->kind], run,
                             run == 1 ? "" : "s", vax);
            const char *chunk = NULL; /* the layout plan's reason for a canonical layout's chunks (layplan.c) */
            tilec_type t = {.kind = TILEC_TY_VALUE, .rank = y->rank};
            memcpy(t.dims, y->dims, sizeof t.dims);
            if (y->kind == LY_CANON && y->rank && run == y->dims[y->rank - 1])
                *why = lower_fmt(L, "the tile's last axis is %d element%s", run, run == 1 ? "" : "s");
            else if (y->kind == LY_CANON && (lower_chunk_elems_why(L, &t, &chunk), chunk))
                *why = lower_fmt(L, "%s: %s", *why, chunk);
        }
    }
    if (w && !lower_contiguous_why(L, ptr, vax - (rank - lower_ty(L, ptr)->rank), w, vax, why))
        w = 0;
    return w;
}

/* load(ptr, mask?, other?) into array `name` of layout y. */
void lower_emit_load(lw *L, const tilec_expr *e, val *v)
{
    const lay *y = &v->ly;
    const tilec_type *t = lower_ty(L, e);
    const tilec_expr *ptr = e->args[0], *mask = e->nargs > 1 ? e->args[1] : NULL, *other = e->nargs > 2 ? e->args[2] : NULL;
    for (uint32_t i = 0; i < e->nargs; i++) {
        const char *sub[TILEC_MAX_RANK];
        lower_map_bcast(lower_ty(L, e->args[i]), t->rank, lower_idx, sub);
        lower_walk(L, e->args[i], sub, lower_same_shape(lower_ty(L, e->args[i]), t), y, PREP);
    }
    unsigned size = tilec_dtype_size(t->dtype);
    int vax; /* the axis consecutive registers run along */
    int run = lower_lay_run(L, y, &vax);
    /* the layout's run, if the analysis (axinfo.c) finds its addresses consecutive */
    const char *why;
    int w = vec_plan(L, ptr, y, t->rank, run, vax, size, &why);
    lower_axinfo_trace(L, "load", ptr, mask, vax, w);
    int mono = mask && w && lower_monotone_mask(L, mask, t->rank, vax);
    lower_remark_mem(L, e, lower_fmt(L, "ld, %s%s", lower_remark_width(L, w, size, "vector"), w ? lower_remark_mask(L, mask, mono) : ""),
                     why);
    lower_line(L, "%s %s[%d];", lower_ctype(t->dtype), v->c, y->E);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_c = 0; tl_c < %d; tl_c += %d) {", y->E, w ? w : 1);
    L->ind++;
    lower_line(L, "const int tl_j = tl_c;");
    lower_emit_index(L, y, "tl_j");
    lower_line(L, "const %s *tl_p = %s;", lower_ctype(t->dtype), lower_walk_at(L, ptr, t, lower_idx, y));
    const char *otherc = "0";
    if (other) {
        otherc = lower_st_elem(L, lower_conv(L, lower_walk_at(L, other, t, lower_idx, y), lower_ty(L, other)->dtype, t->dtype), t->dtype);
    } else if (t->dtype == TILEC_DT_F16 || t->dtype == TILEC_DT_BF16) {
        otherc = lower_st_elem(L, "0.0f", t->dtype);
    }
    if (!w) {
        if (mask) {
            lower_line(L, "%s[tl_j] = (%s) ? *tl_p : %s;", v->c, lower_walk_at(L, mask, t, lower_idx, y),
                 other ? otherc : lower_fmt(L, "(%s)%s", lower_ctype(t->dtype), otherc));
        } else {
            lower_line(L, "%s[tl_j] = *tl_p;", v->c);
        }
    } else {
        /* a contiguous run: one vector access when every element is in
         * bounds and the address is aligned, element by element otherwise */
        const char *vt = vec_type(w * (int)size);
        strbuf all;
        sb_init(&all);
        if (mask) {
            for (int q = 0; q < w; q++) {
                lower_line(L, "const bool tl_m%d = %s;", q, lower_run_mask(L, mask, t, vax, q, LOWER_RUN_REGS, y));
                if (!mono || q == w - 1)
                    sb_printf(&all, "tl_m%d && ", q);
            }
        }
        lower_line(L, "if (%s((unsigned long long)tl_p & %u) == 0) {", sb_str(&all), w * size - 1);
        lower_line(L, "    *(%s *)&%s[tl_j] = *(const %s *)tl_p;", vt, v->c, vt);
        lower_line(L, "} else {");
        for (int q = 0; q < w; q++) {
            if (mask)
                lower_line(L, "    %s[tl_j + %d] = tl_m%d ? tl_p[%d] : %s;", v->c, q, q, q,
                     other ? otherc : lower_fmt(L, "(%s)%s", lower_ctype(t->dtype), otherc));
            else
                lower_line(L, "    %s[tl_j + %d] = tl_p[%d];", v->c, q, q);
        }
        lower_line(L, "}");
        sb_free(&all);
    }
    L->ind--;
    lower_line(L, "}");
}

/* store(ptr, value, mask?) / atomic_add(ptr, value, mask?) over layout y. */
void lower_emit_store(lw *L, const tilec_expr *e, const lay *y, val *old)
{
    int atomic = e->name[0] == 'a';
    const tilec_type *pt = lower_ty(L, e->args[0]);
    tilec_dtype d = pt->dtype;
    for (uint32_t i = 0; i < e->nargs; i++) {
        const char *sub[TILEC_MAX_RANK];
        lower_map_bcast(lower_ty(L, e->args[i]), pt->rank, lower_idx, sub);
        lower_walk(L, e->args[i], sub, lower_same_shape(lower_ty(L, e->args[i]), pt), y, PREP);
    }
    const tilec_expr *ptr = e->args[0], *value = e->args[1], *mask = e->nargs > 2 ? e->args[2] : NULL;
    unsigned size = tilec_dtype_size(d);
    /* a store vectorizes any element type; an atomic add only f32 whose
     * old values nobody reads (the vector atomics return none here) */
    const char *why = NULL;
    int w = 0;
    if (!atomic || (!old && d == TILEC_DT_F32))
        w = vec_plan(L, ptr, y, pt->rank, y->run, pt->rank - 1, size, &why);
    else if (pt->rank)
        why = old ? "its old values are read (a vector atomic returns none)" : "vector atomic adds are f32 only";
    lower_axinfo_trace(L, atomic ? "atomic_add" : "store", ptr, mask, pt->rank - 1, w);
    int mono = mask && pt->rank && lower_monotone_mask(L, mask, pt->rank, pt->rank - 1);
    lower_remark_mem(L, e,
                     lower_fmt(L, "%s, %s%s", !atomic ? "st" : w ? "red (a vector atomic)" : "atomic",
                               lower_remark_width(L, w, size, "vector"), w ? lower_remark_mask(L, mask, mono) : ""),
                     why);
    if (old && pt->rank == 0) /* a scalar is a plain variable, in the compute type */
        lower_line(L, "%s %s;", lower_cctype(d), old->c);
    else if (old)
        lower_line(L, "%s %s[%d];", lower_ctype(d), old->c, y->E);
    if (pt->rank == 0) {
        lower_line(L, "{");
        L->ind++;
    } else {
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_c = 0; tl_c < %d; tl_c += %d) {", y->E, w ? w : 1);
        L->ind++;
        lower_line(L, "const int tl_j = tl_c;");
        lower_emit_index(L, y, "tl_j");
    }
    lower_line(L, "%s *tl_p = %s;", lower_ctype(d), lower_walk_at(L, ptr, pt, lower_idx, y));
    int nq = w ? w : 1;
    strbuf all;
    sb_init(&all);
    for (int q = 0; q < nq; q++) {
        const char *qidx[TILEC_MAX_RANK];
        /* element q of the run: register tiles of this layout at tl_j + q (mask.c) */
        lower_run_idx(L, pt, pt->rank - 1, q, LOWER_RUN_REGS, qidx);
        const char *vq = lower_walk_at(L, value, pt, qidx, y);
        lower_line(L, "const %s tl_v%d = %s;", lower_ctype(d), q, lower_st_elem(L, lower_conv(L, vq, lower_ty(L, value)->dtype, d), d));
        lower_line(L, "const bool tl_m%d = %s;", q, mask ? lower_walk_at(L, mask, pt, qidx, y) : "true");
        lower_run_done(L);
        if (!mono || q == nq - 1)
            sb_printf(&all, "tl_m%d && ", q);
    }
    const char *g = lower_lay_guard(L, y);
    const char *guard = g ? lower_fmt(L, "%s && ", g) : pt->rank == 0 ? "tl_tid == 0 && " : "";
    if (atomic && old && y->repl) {
        /* a replicated layout (a scalar, or fewer elements than threads):
         * one thread per element does the atomic; every replica reads the
         * old value back through shared memory */
        uint32_t off = lower_alloc_smem(L, y->numel * (int64_t)size);
        const char *slot = lower_fmt(L, "((%s *)(tl_smem + %u))[%s]", lower_ctype(d), off, pt->rank ? "tl_l" : "0");
        lower_line(L, "if (%stl_m0) %s = atomicAdd(tl_p, tl_v0);", guard, slot);
        lower_line(L, "__syncthreads();");
        lower_line(L, "%s%s = %s;", old->c, pt->rank ? "[0]" : "", pt->rank ? slot : lower_ld_elem(L, slot, d));
        lower_line(L, "__syncthreads();");
    } else if (atomic && !w) {
        lower_line(L, "if (%stl_m0) %satomicAdd(tl_p, tl_v0);", guard, old ? lower_fmt(L, "%s[tl_j] = ", old->c) : "");
    } else if (atomic) {
        strbuf args;
        sb_init(&args);
        for (int q = 0; q < w; q++)
            sb_printf(&args, ", tl_v%d", q);
        lower_line(L, "if (%s%s((unsigned long long)tl_p & %u) == 0) {", guard, sb_str(&all), w * size - 1);
        lower_line(L, "    tl_atomic_add%d(tl_p%s);", w, sb_str(&args));
        lower_line(L, "} else {");
        for (int q = 0; q < w; q++)
            lower_line(L, "    if (%stl_m%d) atomicAdd(tl_p + %d, tl_v%d);", guard, q, q, q);
        lower_line(L, "}");
        sb_free(&args);
    } else if (!w) {
        lower_line(L, "if (%stl_m0) *tl_p = tl_v0;", guard);
    } else {
        const char *vt = vec_type(w * (int)size);
        lower_line(L, "if (%s%s((unsigned long long)tl_p & %u) == 0) {", guard, sb_str(&all), w * size - 1);
        L->ind++;
        lower_line(L, "%s tl_vec;", vt);
        for (int q = 0; q < w; q++)
            lower_line(L, "((%s *)&tl_vec)[%d] = tl_v%d;", lower_ctype(d), q, q);
        lower_line(L, "*(%s *)tl_p = tl_vec;", vt);
        L->ind--;
        lower_line(L, "} else {");
        for (int q = 0; q < w; q++)
            lower_line(L, "    if (%stl_m%d) tl_p[%d] = tl_v%d;", guard, q, q, q);
        lower_line(L, "}");
    }
    sb_free(&all);
    L->ind--;
    lower_line(L, "}");
}
