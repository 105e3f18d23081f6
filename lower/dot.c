/* dot.c: dot products. Operands are staged in shared memory; f16/bf16
 * accumulate with ldmatrix and mma.sync m16n8k16 into fragments, f32 with
 * fmaf into a register block per thread, anything else with a generic
 * (slow, correct) loop. */
#include <string.h>

#include "lower/lower_internal.h"

/* A register tile's runs, contiguous in shared memory too (along the last
 * axis, or along axis 0 when stored transposed): one 4-, 8- or 16-byte
 * store per run. */
static int stage_vector(lw *L, const val *v, const lay *y, uint32_t off, int ld, int trans, tilec_dtype d)
{
    int ax, run = lower_lay_run(L, y, &ax);
    unsigned size = tilec_dtype_size(d);
    while (run > 1 && run * size > 16)
        run /= 2;
    if (v->ty.dtype != d || run < 2 || run * size < 4 || ax != (trans ? 0 : 1) || lower_lay_guard(L, y))
        return 0;
    const char *vt = run * size == 16 ? "uint4" : run * size == 8 ? "uint2" : "unsigned";
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_c = 0; tl_c < %d; tl_c += %d) {", y->E, run);
    L->ind++;
    lower_line(L, "const int tl_j = tl_c;");
    lower_emit_index(L, y, "tl_j");
    lower_line(L, "*(%s *)((%s *)(tl_smem + %u) + %s) = *(const %s *)&%s[tl_j];", vt, lower_ctype(d), off,
               trans ? lower_fmt(L, "tl_i1 * %d + tl_i0", ld) : lower_fmt(L, "tl_i0 * %d + tl_i1", ld), vt, v->c);
    L->ind--;
    lower_line(L, "}");
    return 1;
}

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
    if (mv && stage_vector(L, mv, &y, off, ld, trans, d))
        return;
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

/* The A fragments of k step tl_k from registers: x [M, K] in the mma
 * accumulator layout, whole rows per warp. The accumulators of two n8
 * tiles are the A fragment of one k16 step (FlashAttention-2's P @ V), so
 * only a conversion to f16x2/bf16x2 pairs is left. */
void lower_frag_a_regs(lw *L, const val *x, int mt, tilec_dtype d, const char *to)
{
    int nt8 = x->ly.wtn / 8;
    const char *t2 = d == TILEC_DT_BF16 ? "__nv_bfloat162" : "__half2";
    const char *pack = d == TILEC_DT_BF16 ? "__floats2bfloat162_rn" : "__floats2half2_rn";
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", mt);
    lower_line(L, "    #pragma unroll");
    lower_line(L, "    for (int tl_q = 0; tl_q < 4; ++tl_q) {");
    lower_line(L, "        const int tl_jq = (tl_m * %d + (tl_k >> 3) + (tl_q >> 1)) * 4 + (tl_q & 1) * 2;", nt8);
    if (x->ty.dtype == d) { /* already f16/bf16: the pair as it is */
        lower_line(L, "        %s[tl_q] = *(const unsigned *)&%s[tl_jq];", to, x->c);
    } else {
        lower_line(L, "        const %s tl_h2 = %s(%s, %s);", t2, pack, lower_ld_elem(L, lower_fmt(L, "%s[tl_jq]", x->c), x->ty.dtype),
                   lower_ld_elem(L, lower_fmt(L, "%s[tl_jq + 1]", x->c), x->ty.dtype));
        lower_line(L, "        %s[tl_q] = *(const unsigned *)&tl_h2;", to);
    }
    lower_line(L, "    }");
}

/* tf32 B fragments from B [K][N] f32 in shared memory (ldmatrix cannot
 * transpose 4-byte elements): b0 = B[k + lane % 4][n + lane / 4], b1 four
 * k further; rows padded by 8 floats keep the four k rows on distinct banks. */
static void tf32_b_reads(lw *L, const lay *y, const char *sb, int ldb)
{
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_n = 0; tl_n < %d; ++tl_n) {", y->wtn / 8);
    lower_line(L, "    const float *tl_q = (const float *)(tl_smem + %s) + (tl_k + (tl_lane & 3)) * %d + (tl_warp %% %d) * %d + tl_n * 8 + (tl_lane >> 2);",
               sb, ldb, y->wn, y->wtn);
    lower_line(L, "    tl_fb[tl_n][0] = __float_as_uint(tl_q[0]);");
    lower_line(L, "    tl_fb[tl_n][1] = __float_as_uint(tl_q[%d]);", 4 * ldb);
    lower_line(L, "}");
}

/* f32 fragments rounded to tf32 (cvt.rna: to nearest, ties away from 0). */
static void tf32_round(lw *L, const char *f, int n, int per)
{
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_r = 0; tl_r < %d; ++tl_r)", n * per);
    lower_line(L, "    asm(\"cvt.rna.tf32.f32 %%0, %%1;\" : \"=r\"(%s[tl_r / %d][tl_r %% %d]) : \"f\"(__uint_as_float(%s[tl_r / %d][tl_r %% %d])));",
               f, per, per, f, per, per);
}

/* The tensor-core inner loop: acc += A @ B with A [M, K] at byte offset
 * `sa` (row stride lda halves), or in registers `ra`, and B [K, N] at
 * `sb` (row stride ldb; stored transposed, [N][K], when `bt`) in shared
 * memory; sa and sb are C expressions. */
static void mma_kloop(lw *L, val *acc, const val *ra, const char *sa, const char *sb, int bt, int lda, int ldb, int64_t K,
                      tilec_dtype d)
{
    const lay *y = &acc->ly;
    int mt = y->wtm / 16, nt8 = y->wtn / 8;
    int tf = d == TILEC_DT_F32; /* tf32: k8 steps of 4-byte elements, same byte layout */
    int es = tf ? 4 : 2, h = 16 / es;
    const char *kind = d == TILEC_DT_BF16 ? "bf16" : "f16";
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_k = 0; tl_k < %lld; tl_k += %d) {", (long long)K, 2 * h);
    L->ind++;
    lower_line(L, "unsigned tl_fa[%d][4], tl_fb[%d][2];", mt, nt8);
    if (ra) {
        lower_frag_a_regs(L, ra, mt, d, "tl_fa[tl_m]");
    } else {
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", mt);
        lower_line(L, "    tl_ldsm_x4(tl_fa[tl_m], tl_smem + %s + (((tl_warp / %d) * %d + tl_m * 16 + (tl_lane & 15)) * %d + tl_k + (tl_lane >> 4) * %d) * %d);",
                   sa, y->wn, y->wtm, lda, h, es);
    }
    if (bt) { /* B^T [N][K] in shared memory: plain ldmatrix gives B's fragments */
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_n = 0; tl_n < %d; tl_n += 2)", nt8);
        lower_line(L, "    tl_ldsm_x4_nt(tl_fb[tl_n], tl_fb[tl_n + 1], tl_smem + %s + (((tl_warp %% %d) * %d + tl_n * 8 + (tl_lane & 7) + ((tl_lane >> 4) & 1) * 8) * %d + tl_k + ((tl_lane >> 3) & 1) * %d) * %d);",
                   sb, y->wn, y->wtn, ldb, h, es);
    } else if (tf) {
        tf32_b_reads(L, y, sb, ldb);
    } else {
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_n = 0; tl_n < %d; tl_n += 2)", nt8);
        lower_line(L, "    tl_ldsm_x4_t(tl_fb[tl_n], tl_fb[tl_n + 1], tl_smem + %s + ((tl_k + (tl_lane & 15)) * %d + (tl_warp %% %d) * %d + tl_n * 8 + (tl_lane >> 4) * 8) * 2);",
                   sb, ldb, y->wn, y->wtn);
    }
    if (tf) {
        tf32_round(L, "tl_fa", mt, 4);
        tf32_round(L, "tl_fb", nt8, 2);
    }
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", mt);
    lower_line(L, "    #pragma unroll");
    lower_line(L, "    for (int tl_n = 0; tl_n < %d; ++tl_n)", nt8);
    if (tf) {
        lower_line(L, "    {");
        lower_line(L, "        float *tl_c = %s + (tl_m * %d + tl_n) * 4;", acc->c, nt8);
        lower_line(L, "        asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%%0, %%1, %%2, %%3}, {%%4, %%5, %%6, %%7}, {%%8, %%9}, {%%0, %%1, %%2, %%3};\\n\"");
        lower_line(L, "                     : \"+f\"(tl_c[0]), \"+f\"(tl_c[1]), \"+f\"(tl_c[2]), \"+f\"(tl_c[3])");
        lower_line(L, "                     : \"r\"(tl_fa[tl_m][0]), \"r\"(tl_fa[tl_m][1]), \"r\"(tl_fa[tl_m][2]), \"r\"(tl_fa[tl_m][3]), \"r\"(tl_fb[tl_n][0]), \"r\"(tl_fb[tl_n][1]));");
        lower_line(L, "    }");
    } else {
        lower_line(L, "        tl_mma_%s(%s + (tl_m * %d + tl_n) * 4, tl_fa[tl_m], tl_fb[tl_n]);", kind, acc->c, nt8);
    }
    L->ind--;
    lower_line(L, "}");
}

void lower_emit_mma_kloop(lw *L, val *acc, const char *sa, const char *sb, int bt, int lda, int ldb, int64_t K,
                          tilec_dtype d)
{
    mma_kloop(L, acc, NULL, sa, sb, bt, lda, ldb, K, d);
}

/* The register tile an A operand (x or cast(x, f16/bf16)) already is, in
 * the accumulator layout with whole rows per warp and acc's rows; NULL
 * when it must go through shared memory. */
static const val *a_in_regs(lw *L, const tilec_expr *a, const val *acc)
{
    const tilec_expr *x = a;
    if (tilec_is_builtin(x, BI_CAST))
        x = x->args[0];
    if (x->kind != TILEC_EX_NAME)
        return NULL;
    const val *v = lower_lookup(L, x->name);
    if (!v || v->kind != VK_MAT || v->ly.kind != LY_MMA || v->ly.wn != 1 || acc->ly.wn != 1 || v->ly.wm != acc->ly.wm ||
        v->ly.wtm != acc->ly.wtm || v->ly.wtn % 16)
        return NULL;
    tilec_dtype xd = v->ty.dtype;
    return xd == TILEC_DT_F32 || xd == TILEC_DT_F16 || xd == TILEC_DT_BF16 ? v : NULL;
}

/* The operands into shared memory (a may be NULL: in registers; b NULL:
 * in a cp.async ring; b transposed when transb), then a barrier; the barrier before is left out
 * where another dot's barrier in the same loop body separates these
 * buffers' last reads from these writes (lower_dot_barrier_free). */
static void stage_operands(lw *L, const tilec_expr *a, uint32_t sa, int lda, int transa, const tilec_expr *b,
                           uint32_t sb, int ldb, int transb, tilec_dtype d)
{
    if (!a && !b)
        return;
    if (!lower_dot_barrier_free(L))
        lower_line(L, "__syncthreads();");
    if (a)
        stage(L, a, sa, lda, transa, d);
    if (b)
        stage(L, b, sb, ldb, transb, d);
    lower_line(L, "__syncthreads();");
}

/* Is b a register tile whose runs go along K (axis 0), as a transposed
 * load leaves it? Then it is staged as B^T, each run one store. */
static int b_runs_along_k(lw *L, const tilec_expr *b, tilec_dtype d)
{
    if (b->kind != TILEC_EX_NAME)
        return 0;
    const val *v = lower_lookup(L, b->name);
    int ax;
    return v && v->kind == VK_MAT && v->ty.dtype == d && lower_lay_run(L, &v->ly, &ax) >= 2 && ax == 0 &&
           !lower_lay_guard(L, &v->ly);
}

/* e without the trans(...) around it; *flip the parity of those passed. */
static const tilec_expr *peel_trans(const tilec_expr *e, int *flip)
{
    *flip = 0;
    for (; tilec_is_builtin(e, BI_TRANS) && e->nargs == 1; e = e->args[0])
        *flip ^= 1;
    return e;
}

/* Tensor cores: operand rows padded by 8 halves (ldmatrix without bank
 * conflicts); an A operand already in accumulator registers stays there. */
static void dot_mma(lw *L, const tilec_expr *a, const tilec_expr *b, val *acc, int64_t M, int64_t K, int64_t N)
{
    tilec_dtype d = lower_ty(L, a)->dtype;
    int es = (int)tilec_dtype_size(d); /* 4: f32 operands on tf32 tensor cores */
    const val *ra = es == 4 ? NULL : a_in_regs(L, a, acc);
    /* B in a cp.async ring (ring.c), maybe read transposed: trans(x) */
    int flip;
    const tilec_expr *bx = peel_trans(b, &flip);
    const val *rb = bx->kind == TILEC_EX_NAME ? lower_lookup(L, bx->name) : NULL;
    if (rb && rb->kind != VK_RING)
        rb = NULL;
    int bt = rb ? rb->rbt ^ flip : es == 2 && b_runs_along_k(L, b, d); /* tf32: B staged [K][N] */
    if (rb && L->tg->ring_dot && L->tg->ring_dot(L, acc, ra, rb, bt, K, N, d)) /* the target's own (the attention twin: wgmma) */
        return;
    int lda = (int)K + 16 / es, ldb = rb ? rb->rld : bt ? (int)K + 16 / es : (int)N + 8;
    uint32_t sa = ra ? 0 : lower_alloc_smem(L, M * lda * es), sb = rb ? 0 : lower_alloc_smem(L, (bt ? N : K) * ldb * es);
    if (ra)
        lower_note(L, "  line %u: dot operand %s read from its mma registers", L->line, ra->c);
    if (rb)
        lower_note(L, "  line %u: dot operand %s read from its cp.async ring%s", L->line, lower_cname(L, rb->rlet->names[0]), bt ? " (B^T, plain ldmatrix)" : "");
    else if (bt)
        lower_note(L, "  line %u: dot operand %s staged transposed (B^T, plain ldmatrix)", L->line, b->name);
    stage_operands(L, ra ? NULL : a, sa, lda, 0, rb ? NULL : b, sb, ldb, bt, d);
    mma_kloop(L, acc, ra, lower_fmt(L, "%u", sa), rb ? rb->c : lower_fmt(L, "%u", sb), bt, lda, ldb, K, d);
}

/* The swizzle of a ring filled by whole-line 4-byte copies (pipeline.c,
 * lower_at_open): the element of row k, column c lies at column
 * c ^ s(k), s(k) = ((k / 8) % (4 / u)) * u, u the swizzle unit (1 or 2),
 * so a 16-byte read of columns 4j .. 4j + 3 brings them in the order
 * t ^ s(k): with tl_k unrolled, the index into the registers is a
 * constant. */
static const char *fma_sw(lw *L, int u) { return lower_fmt(L, "(((tl_k / 8) %% %d) * %d)", 4 / u, u); }

/* The B reads of step tl_k of the FMA loop into tl_rb: the thread's
 * columns, in runs of y->run (one 16-byte read each when 4). */
static void fma_b_reads(lw *L, const lay *y, int ldb, int swb)
{
    lower_line(L, "float tl_rb[%d];", y->tn);
    lower_line(L, "#pragma unroll");
    if (swb && y->run != FMA_QUAD) { /* a swizzled ring (fma_sw) read a column at a time: the swizzle in the address */
        lower_line(L, "for (int tl_n = 0; tl_n < %d; ++tl_n)", y->tn);
        lower_line(L, "    tl_rb[tl_n] = tl_sb[tl_k * %d + ((((tl_tid %% %d) * %d + (tl_n / %d) * %d + tl_n %% %d) ^ %s) - (tl_tid %% %d) * %d)];",
                   ldb, y->tx, y->run, y->run, y->run * y->tx, y->run, fma_sw(L, swb), y->tx, y->run);
    } else if (y->run == FMA_QUAD) {
        lower_line(L, "for (int tl_n = 0; tl_n < %d; tl_n += 4)", y->tn);
        lower_line(L, "    *(float4 *)&tl_rb[tl_n] = *(const float4 *)&tl_sb[tl_k * %d + (tl_n / 4) * %d];", ldb, 4 * y->tx);
    } else {
        lower_line(L, "for (int tl_n = 0; tl_n < %d; ++tl_n)", y->tn);
        lower_line(L, "    tl_rb[tl_n] = tl_sb[tl_k * %d + (tl_n / %d) * %d + tl_n %% %d];", ldb, y->run, y->run * y->tx,
                   y->run);
    }
}

static void fma_update(lw *L, const val *acc, const char *ra, const char *rb)
{
    const lay *y = &acc->ly;
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", y->tm);
    lower_line(L, "    #pragma unroll");
    lower_line(L, "    for (int tl_n = 0; tl_n < %d; ++tl_n)", y->tn);
    lower_line(L, "        %s[tl_m * %d + tl_n] = fmaf(%s, %s, %s[tl_m * %d + tl_n]);", acc->c, y->tn, ra, rb, acc->c,
               y->tn);
}

static void fma_b_base(lw *L, const lay *y, const char *sb)
{
    lower_line(L, "const float *tl_sb = (const float *)(tl_smem + %s) + (tl_tid %% %d) * %d;", sb, y->tx, y->run);
}

/* f32: both operands K-major in shared memory, A as [K][M] and B as
 * [K][N] (an operand written trans(x) is x stored the other way round,
 * never converted first), each thread its TM x TN block. */
static void dot_fma(lw *L, const tilec_expr *a, const tilec_expr *b, val *acc, int64_t M, int64_t K, int64_t N)
{
    const lay *y = &acc->ly;
    int lda = (int)M + 4, ldb = (int)N + 4, fa, fb;
    uint32_t sa = lower_alloc_smem(L, K * lda * 4), sb = lower_alloc_smem(L, K * ldb * 4);
    a = peel_trans(a, &fa);
    b = peel_trans(b, &fb);
    stage_operands(L, a, sa, lda, !fa, b, sb, ldb, fb, TILEC_DT_F32);
    lower_line(L, "const float *tl_sa = (const float *)(tl_smem + %u) + (tl_tid / %d) * %d;", sa, y->tx, y->tm);
    fma_b_base(L, y, lower_fmt(L, "%u", sb));
    lower_line(L, "#pragma unroll 4");
    lower_line(L, "for (int tl_k = 0; tl_k < %lld; ++tl_k) {", (long long)K);
    L->ind++;
    lower_line(L, "float tl_ra[%d];", y->tm);
    lower_line(L, "#pragma unroll");
    if (y->tm % 4 == 0 && lda % 4 == 0)
        lower_line(L, "for (int tl_m = 0; tl_m < %d; tl_m += 4) *(float4 *)&tl_ra[tl_m] = *(const float4 *)&tl_sa[tl_k * %d + tl_m];",
                   y->tm, lda);
    else
        lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m) tl_ra[tl_m] = tl_sa[tl_k * %d + tl_m];", y->tm, lda);
    fma_b_reads(L, y, ldb, 0);
    fma_update(L, acc, "tl_ra[tl_m]", "tl_rb[tl_n]");
    L->ind--;
    lower_line(L, "}");
}

/* Pipelined f32 with B [N][K] in its ring (pipeline.c, fma_bnk_ok: B
 * contiguous along K, copied as it lies) and A [K][M]: per four k, A's TM
 * rows at each k in TM / 4 16-byte reads (as below), then for each of the
 * thread's TN columns n one 16-byte read of its four k, at (n * K + k4) ^
 * g(n), g(n) = ((n / 4) % 8) * 4 (lower_fma_bnk_at), and its 4 * TM FMAs.
 * The thread's first column nb is a multiple of 4, so nb * K has none of
 * the bits g flips (K a multiple of 8): the index is nb * K plus x ^ g, x
 * = (n - nb) * K + k4 a constant of the unrolled loop, split as
 * (x / 32) * 32 + ((x % 32) ^ g): one XOR per distinct x % 32, the rest
 * the read's immediate offset. Every accumulator still sums its k in
 * order, one fmaf each: the same results as x @ W's loop. */
static void fma_bnk_kloop(lw *L, const val *acc, const char *sa, const char *sb, int lda, int64_t K, int swa)
{
    const lay *y = &acc->ly;
    int cs = y->run * y->tx; /* columns between a thread's runs */
    lower_line(L, "const float *tl_sa = (const float *)(tl_smem + %s) + (tl_tid / %d) * %d;", sa, y->tx, y->tm);
    lower_line(L, "const float *tl_sbn = (const float *)(tl_smem + %s) + (tl_tid %% %d) * %lld;", sb, y->tx,
               (long long)(y->run * K));
    /* g of the thread's run r: its column / 4 is tl_tid % tx + r * tx; with tx a multiple of 8 one g a thread */
    const char *g = y->tx % 8 == 0 ? "tl_g" : lower_fmt(L, "((((tl_tid %% %d) + (tl_n / %d) * %d) %% 8) * 4)", y->tx, y->run, y->tx);
    if (y->tx % 8 == 0)
        lower_line(L, "const int tl_g = ((tl_tid %% %d) %% 8) * 4;", y->tx);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_k4 = 0; tl_k4 < %lld; tl_k4 += 4) {", (long long)K);
    L->ind++;
    lower_line(L, "float tl_ra[4][%d];", y->tm);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_kk = 0; tl_kk < 4; ++tl_kk) {");
    L->ind++;
    lower_line(L, "const int tl_k = tl_k4 + tl_kk;");
    lower_line(L, "#pragma unroll");
    if (y->tm % 4 == 0 && lda % 4 == 0)
        lower_line(L, "for (int tl_m = 0; tl_m < %d; tl_m += 4) *(float4 *)&tl_ra[tl_kk][tl_m] = *(const float4 *)&tl_sa[tl_k * %d + tl_m];",
                   y->tm, lda);
    else
        lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m) tl_ra[tl_kk][tl_m] = tl_sa[tl_k * %d + tl_m];", y->tm, lda);
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_n = 0; tl_n < %d; ++tl_n) {", y->tn);
    L->ind++;
    lower_line(L, "const int tl_x = ((tl_n / %d) * %d + tl_n %% %d) * %lld + tl_k4;", y->run, cs, y->run, (long long)K);
    lower_line(L, "const float4 tl_b = *(const float4 *)&tl_sbn[(tl_x / 32) * 32 + ((tl_x %% 32) ^ %s)];", g);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_kk = 0; tl_kk < 4; ++tl_kk) {");
    L->ind++;
    lower_line(L, "const int tl_k = tl_k4 + tl_kk;");
    lower_line(L, "(void)tl_k;");
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", y->tm);
    lower_line(L, "    %s[tl_m * %d + tl_n] = fmaf(%s, ((const float *)&tl_b)[tl_kk], %s[tl_m * %d + tl_n]);", acc->c, y->tn,
               swa ? lower_fmt(L, "tl_ra[tl_kk][tl_m ^ %s]", fma_sw(L, swa)) : "tl_ra[tl_kk][tl_m]", acc->c, y->tn);
    L->ind--;
    lower_line(L, "}");
    L->ind--;
    lower_line(L, "}");
    L->ind--;
    lower_line(L, "}");
}

/* Pipelined f32 (pipeline.c). B is [K][N] in its ring, whichever way it
 * lies in memory (x @ W and x @ W.T alike). With `at`, A is [K][M]: each k
 * step reads the thread's TM rows of A in TM / 4 16-byte vectors and its
 * TN columns of B in TN / 4, for TM * TN FMAs; the A values of one k sit in
 * consecutive registers (as B's do), which lets ptxas keep the FMAs' fresh
 * operands in different register banks (the SASS of the A-row-major loop
 * below had a third more FFMAs with two same-bank register reads). Without
 * it A stays row-major, rows padded by 4 floats, and one 16-byte read
 * brings four k of an A row: a step of four k reads TM + TN vectors. */
void lower_emit_fma_kloop(lw *L, val *acc, const char *sa, const char *sb, int lda, int ldb, int64_t K, int at, int swa, int swb,
                          int bnk)
{
    const lay *y = &acc->ly;
    const char *rb = swb && y->run == FMA_QUAD ? lower_fmt(L, "tl_rb[tl_n ^ %s]", fma_sw(L, swb)) : "tl_rb[tl_n]";
    if (at && bnk) {
        fma_bnk_kloop(L, acc, sa, sb, lda, K, swa);
        return;
    }
    if (at) {
        lower_line(L, "const float *tl_sa = (const float *)(tl_smem + %s) + (tl_tid / %d) * %d;", sa, y->tx, y->tm);
        fma_b_base(L, y, sb);
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_k = 0; tl_k < %lld; ++tl_k) {", (long long)K);
        L->ind++;
        lower_line(L, "float tl_ra[%d];", y->tm);
        lower_line(L, "#pragma unroll");
        if (y->tm % 4 == 0 && lda % 4 == 0)
            lower_line(L, "for (int tl_m = 0; tl_m < %d; tl_m += 4) *(float4 *)&tl_ra[tl_m] = *(const float4 *)&tl_sa[tl_k * %d + tl_m];",
                       y->tm, lda);
        else /* A^T copied as loaded, a thread's rows not whole vectors */
            lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m) tl_ra[tl_m] = tl_sa[tl_k * %d + tl_m];", y->tm, lda);
        fma_b_reads(L, y, ldb, swb);
        fma_update(L, acc, swa ? lower_fmt(L, "tl_ra[tl_m ^ %s]", fma_sw(L, swa)) : "tl_ra[tl_m]", rb);
        L->ind--;
        lower_line(L, "}");
        return;
    }
    lower_line(L, "const float *tl_sa = (const float *)(tl_smem + %s) + (tl_tid / %d) * %d;", sa, y->tx, y->tm * lda);
    fma_b_base(L, y, sb);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_k4 = 0; tl_k4 < %lld; tl_k4 += 4) {", (long long)K);
    L->ind++;
    lower_line(L, "float4 tl_ra[%d];", y->tm);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m) tl_ra[tl_m] = *(const float4 *)&tl_sa[tl_m * %d + tl_k4];", y->tm,
               lda);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_kk = 0; tl_kk < 4; ++tl_kk) {");
    L->ind++;
    lower_line(L, "const int tl_k = tl_k4 + tl_kk;");
    fma_b_reads(L, y, ldb, swb);
    fma_update(L, acc, "((const float *)&tl_ra[tl_m])[tl_kk]", rb);
    L->ind--;
    lower_line(L, "}");
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
    stage_operands(L, a, sa, (int)K, 0, b, sb, (int)N, 0, sd);
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
