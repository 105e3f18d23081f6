/* dot.c: dot products. Operands are staged in shared memory; f16/bf16
 * accumulate with ldmatrix and mma.sync m16n8k16 into fragments, f32 with
 * fmaf into a register block per thread, anything else with a generic
 * (slow, correct) loop. */
#include <string.h>

#include "lower/lower_internal.h"

/* Stage a [R, C] tile expression into shared memory at `off` with row
 * stride `ld` elements (transposed when `trans`). */
static void stage(lw *L, const tilec_expr *e, uint32_t off, int ld, int trans, tilec_dtype d)
{
    lay y = lower_pick_for(L, e);
    val *mv = NULL;
    if (e->kind == TILEC_EX_NAME) {
        val *v = lower_lookup(L, e->name);
        if (v && v->kind == VK_MAT) {
            mv = v;
            y = v->ly;
        }
    }
    if (!mv)
        lower_walk(L, e, lower_idx, 1, &y, PREP);
    lower_loop_begin(L, &y);
    const char *x = mv ? lower_fmt(L, "%s[tl_j]", mv->c) : lower_st_elem(L, lower_walk(L, e, lower_idx, 1, &y, EMIT), d);
    if (mv && mv->ty.dtype != d)
        x = lower_st_elem(L, lower_conv(L, lower_ld_elem(L, x, mv->ty.dtype), mv->ty.dtype, d), d);
    const char *g = lower_lay_guard(L, &y);
    if (g)
        lower_line(L, "if (%s)", g);
    if (trans)
        lower_line(L, "((%s *)(tl_smem + %u))[tl_i1 * %d + tl_i0] = %s;", lower_ctype(d), off, ld, x);
    else
        lower_line(L, "((%s *)(tl_smem + %u))[tl_i0 * %d + tl_i1] = %s;", lower_ctype(d), off, ld, x);
    lower_loop_end(L);
}

/* The tensor-core inner loop: acc += A @ B with A [M, K] at byte offset
 * `sa` (row stride lda halves) and B [K, N] at `sb` (row stride ldb) in
 * shared memory; sa and sb are C expressions. */
void lower_emit_mma_kloop(lw *L, val *acc, const char *sa, const char *sb, int lda, int ldb, int64_t K, tilec_dtype d)
{
    const lay *y = &acc->ly;
    int mt = y->wtm / 16, nt8 = y->wtn / 8;
    const char *kind = d == TILEC_DT_BF16 ? "bf16" : "f16";
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_k = 0; tl_k < %lld; tl_k += 16) {", (long long)K);
    L->ind++;
    lower_line(L, "unsigned tl_fa[%d][4], tl_fb[%d][2];", mt, nt8);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", mt);
    lower_line(L, "    tl_ldsm_x4(tl_fa[tl_m], tl_smem + %s + (((tl_warp / %d) * %d + tl_m * 16 + (tl_lane & 15)) * %d + tl_k + (tl_lane >> 4) * 8) * 2);",
         sa, y->wn, y->wtm, lda);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_n = 0; tl_n < %d; tl_n += 2)", nt8);
    lower_line(L, "    tl_ldsm_x4_t(tl_fb[tl_n], tl_fb[tl_n + 1], tl_smem + %s + ((tl_k + (tl_lane & 15)) * %d + (tl_warp %% %d) * %d + tl_n * 8 + (tl_lane >> 4) * 8) * 2);",
         sb, ldb, y->wn, y->wtn);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", mt);
    lower_line(L, "    #pragma unroll");
    lower_line(L, "    for (int tl_n = 0; tl_n < %d; ++tl_n)", nt8);
    lower_line(L, "        tl_mma_%s(%s + (tl_m * %d + tl_n) * 4, tl_fa[tl_m], tl_fb[tl_n]);", kind, acc->c, nt8);
    L->ind--;
    lower_line(L, "}");
}

/* Both operands into shared memory, between barriers. */
static void stage_operands(lw *L, const tilec_expr *a, uint32_t sa, int lda, int transa, const tilec_expr *b,
                           uint32_t sb, int ldb, tilec_dtype d)
{
    lower_line(L, "__syncthreads();");
    stage(L, a, sa, lda, transa, d);
    stage(L, b, sb, ldb, 0, d);
    lower_line(L, "__syncthreads();");
}

/* Tensor cores: operand rows padded by 8 halves (ldmatrix without bank
 * conflicts). */
static void dot_mma(lw *L, const tilec_expr *a, const tilec_expr *b, val *acc, int64_t M, int64_t K, int64_t N)
{
    tilec_dtype d = lower_ty(L, a)->dtype;
    int lda = (int)K + 8, ldb = (int)N + 8;
    uint32_t sa = lower_alloc_smem(L, M * lda * 2), sb = lower_alloc_smem(L, K * ldb * 2);
    stage_operands(L, a, sa, lda, 0, b, sb, ldb, d);
    lower_emit_mma_kloop(L, acc, lower_fmt(L, "%u", sa), lower_fmt(L, "%u", sb), lda, ldb, K, d);
}

/* f32: A transposed in shared memory, each thread its TM x TN block. */
static void dot_fma(lw *L, const tilec_expr *a, const tilec_expr *b, val *acc, int64_t M, int64_t K, int64_t N)
{
    const lay *y = &acc->ly;
    int lda = (int)M + 4, ldb = (int)N + 4;
    uint32_t sa = lower_alloc_smem(L, K * lda * 4), sb = lower_alloc_smem(L, K * ldb * 4);
    stage_operands(L, a, sa, lda, 1, b, sb, ldb, TILEC_DT_F32);
    lower_line(L, "const float *tl_sa = (const float *)(tl_smem + %u) + (tl_tid / %d) * %d;", sa, y->tx, y->tm);
    lower_line(L, "const float *tl_sb = (const float *)(tl_smem + %u) + (tl_tid %% %d) * %d;", sb, y->tx, y->tn);
    lower_line(L, "#pragma unroll 4");
    lower_line(L, "for (int tl_k = 0; tl_k < %lld; ++tl_k) {", (long long)K);
    L->ind++;
    lower_line(L, "float tl_ra[%d], tl_rb[%d];", y->tm, y->tn);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m) tl_ra[tl_m] = tl_sa[tl_k * %d + tl_m];", y->tm, lda);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_n = 0; tl_n < %d; ++tl_n) tl_rb[tl_n] = tl_sb[tl_k * %d + tl_n];", y->tn, ldb);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", y->tm);
    lower_line(L, "    #pragma unroll");
    lower_line(L, "    for (int tl_n = 0; tl_n < %d; ++tl_n)", y->tn);
    lower_line(L, "        %s[tl_m * %d + tl_n] = fmaf(tl_ra[tl_m], tl_rb[tl_n], %s[tl_m * %d + tl_n]);", acc->c, y->tn,
         acc->c, y->tn);
    L->ind--;
    lower_line(L, "}");
}

/* Any layout: every element sums its row of a times its column of b. */
static void dot_generic(lw *L, const tilec_expr *a, const tilec_expr *b, val *acc, int64_t M, int64_t K, int64_t N)
{
    tilec_dtype d = lower_ty(L, a)->dtype;
    tilec_dtype sd = d == TILEC_DT_F32 ? TILEC_DT_F32 : d;
    unsigned es = tilec_dtype_size(sd);
    uint32_t sa = lower_alloc_smem(L, M * K * es), sb = lower_alloc_smem(L, K * N * es);
    stage_operands(L, a, sa, (int)K, 0, b, sb, (int)N, sd);
    lower_loop_begin(L, &acc->ly);
    lower_line(L, "float tl_s = 0.0f;");
    lower_line(L, "for (int tl_k = 0; tl_k < %lld; ++tl_k)", (long long)K);
    lower_line(L, "    tl_s += %s * %s;",
         lower_ld_elem(L, lower_fmt(L, "((const %s *)(tl_smem + %u))[tl_i0 * %lld + tl_k]", lower_ctype(sd), sa, (long long)K), sd),
         lower_ld_elem(L, lower_fmt(L, "((const %s *)(tl_smem + %u))[tl_k * %lld + tl_i1]", lower_ctype(sd), sb, (long long)N), sd));
    lower_line(L, "%s[tl_j] += tl_s;", acc->c);
    lower_loop_end(L);
}

/* acc += a @ b, acc materialized in an MMA, FMA or canonical layout. */
void lower_emit_dot_into(lw *L, const tilec_expr *a, const tilec_expr *b, val *acc)
{
    const tilec_type *at = lower_ty(L, a), *bt = lower_ty(L, b);
    int64_t M = at->dims[0], K = at->dims[1], N = bt->dims[1];
    lower_line(L, "{ /* %s += dot: [%lld, %lld] @ [%lld, %lld] */", acc->c, (long long)M, (long long)K, (long long)K,
         (long long)N);
    L->ind++;
    if (acc->ly.kind == LY_MMA)
        dot_mma(L, a, b, acc, M, K, N);
    else if (acc->ly.kind == LY_FMA)
        dot_fma(L, a, b, acc, M, K, N);
    else
        dot_generic(L, a, b, acc, M, K, N);
    L->ind--;
    lower_line(L, "}");
}
