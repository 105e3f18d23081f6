/* tune.c: the tuning pass (docs/tuning.md). For each kernel with a tune
 * space, every configuration the checker let through (parser/check_tune.c)
 * is lowered as a variant; one whose lowering fails, or which cannot fit
 * an H100 (shared memory, registers, no block per multiprocessor), or which
 * lowers to the same code for the target as an earlier one, is pruned with
 * the reason. The rest are ranked by a cost model of the target (its path:
 * wgmma, mma.sync or FMA, occupancy, waves, bytes moved; for a row kernel,
 * rows a block, passes, latency a wave) per shape class, and the best
 * `keep` of each class stay the kernel's variants, the
 * candidates the multi-kernel chooser times per shape key
 * (runtime/multikernel.c). The report (`--emit tune`, TILEC_LOGS=tune)
 * says what happened to every configuration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_internal.h"
#include "lower/tune.h"
#include "parser/ast_ix.h"
#include "tilec/limits.h"
#include "parser/module.h"
#include "parser/tune.h"
#include "util/strbuf.h"

/* The target: an H100 SXM (sm_90a). */
enum {
    T_SMS = 132,
    T_SMEM_BLOCK = 232448, /* 227 KiB: the most one block may have */
    T_SMEM_SM = 233472,    /* 228 KiB a multiprocessor */
    T_REGS_SM = 65536,
    T_THREADS_SM = 2048,
    T_BLOCKS_SM = 32,
    T_REGS_THREAD = 255,
    T_REGS_OVERHEAD = 32, /* addresses, indices, operand fragments */
};
static const double T_PEAK_WGMMA = 660e12, T_PEAK_MMA = 330e12, T_PEAK_FMA = 51e12; /* flop/s, f16/bf16 */
static const double T_BW = 12e12; /* bytes/s from L2 to the multiprocessors */
static const double T_HBM = 3e12; /* bytes/s of device memory */
/* A row kernel's latencies (s): a round trip to memory, a reduction across
 * the warps of a block (shared memory and a barrier; within a warp, a tenth
 * of it), a block's start and end. Calibrated on the one-row softmax
 * at 65536 x 128 (0.18x of the multi-row form on the H100, issue 31). */
static const double T_LAT_MEM = 1e-6, T_LAT_RED = 0.5e-6, T_LAT_BLOCK = 0.5e-6;
static const double T_CLOCK = 1.7e9, T_LANES = 132.0 * 128 * 1.7e9; /* Hz; lane operations/s */
static const double T_CYCLES_ELEM = 16; /* a thread's cycles an element of its tile, a step */

typedef enum { P_NONE, P_FMA, P_MMA, P_WGMMA } path_kind;
static const char *const path_names[] = {"no dot", "FMA", "mma.sync", "wgmma + TMA"};

typedef struct cand_info {
    path_kind path;
    uint32_t threads, smem, regs, occ;
    uint32_t split;
    const char *missed; /* the lowering's remark when not on wgmma + TMA */
    char *code;         /* the code that runs on the target, normalized */
} cand_info;

/* What the cost model knows of a row kernel (docs/tuning.md "The cost
 * model"): the parameter its grid counts rows by, its passes over a row
 * (for loops: the most on any path) and its reductions (the same). */
typedef struct row_shape {
    tilec_tune_kind kind;
    int rows_param; /* -1: not a row kernel the model understands */
    uint32_t loops, reds;
} row_shape;

static int is_int_param(const tilec_param *p)
{
    char c = tilec_dtype_class(p->type.dtype);
    return p->type.kind == TILEC_TE_SCALAR && (c == 's' || c == 'u');
}

static uint32_t expr_reds(const tilec_expr *e)
{
    uint32_t n = 0;
    if (!e)
        return 0;
    if (e->kind == TILEC_EX_CALL)
        n += (uint32_t)chk_tune_reduction(e->name);
    for (uint32_t i = 0; i < e->nargs; i++)
        n += expr_reds(e->args[i]);
    return n;
}

/* loops and reductions along the longest path of a block */
static void block_counts(const tilec_block *b, uint32_t *loops, uint32_t *reds)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        uint32_t l1 = 0, r1 = 0, l2 = 0, r2 = 0;
        block_counts(&s->body, &l1, &r1);
        block_counts(&s->orelse, &l2, &r2);
        *loops += (s->kind == TILEC_ST_FOR) + (l1 > l2 ? l1 : l2);
        *reds += expr_reds(s->value) + (r1 > r2 ? r1 : r2);
    }
}

static row_shape row_shape_of(const tilec_kernel *k)
{
    row_shape r = {chk_tune_kind(k), -1, 0, 0};
    if (r.kind != TILEC_TUNE_ROW)
        return r;
    for (uint32_t p = 0; p < k->nparams && p < 64 && r.rows_param < 0; p++)
        if (is_int_param(&k->params[p]) && chk_tune_expr_uses(k->grid[0], NULL, k->params[p].name))
            r.rows_param = (int)p;
    block_counts(&k->body, &r.loops, &r.reds);
    return r;
}

/* Whether p (in s) is where a `constexpr T NAME = ...;` line declares NAME,
 * n its length: a twin's kernels each declare the hints (a paired twin and
 * its one-tile twin, lower/wgpair.c). */
static int declared_at(const char *s, const char *p, size_t n)
{
    const char *l = p;
    while (l > s && l[-1] != '\n')
        l--;
    while (*l == ' ' || *l == '\t')
        l++;
    return !strncmp(l, "constexpr ", 10) && !strncmp(p + n, " = ", 3);
}

/* Whether the identifier at [id, id + n) occurs in [s, end) as a whole
 * word other than where it is declared. */
static int used_again(const char *s, const char *id, size_t n)
{
    for (const char *p = strstr(s, "v_"); p; p = strstr(p + 1, "v_")) {
        char before = p > s ? p[-1] : ' ', after = p[n];
        if (!strncmp(p, id, n) && !(before == '_' || (before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z') ||
                                    (before >= '0' && before <= '9')) &&
            !(after == '_' || (after >= 'a' && after <= 'z') || (after >= 'A' && after <= 'Z') ||
              (after >= '0' && after <= '9')) && !declared_at(s, p, n))
            return 1;
    }
    return 0;
}

/* A hint's constant that the code never reads ("constexpr int v_stages =
 * 2;" in a twin that picks its own depth). */
static int unused_constant(const char *sec, const char *line, size_t len)
{
    const char *p = line;
    while (p < line + len && (*p == ' ' || *p == '\t'))
        p++;
    if (strncmp(p, "constexpr ", 10))
        return 0;
    const char *id = strstr(p, " v_");
    if (!id || id >= line + len)
        return 0;
    id++;
    size_t n = 0;
    while (id[n] == '_' || (id[n] >= 'a' && id[n] <= 'z') || (id[n] >= 'A' && id[n] <= 'Z') || (id[n] >= '0' && id[n] <= '9'))
        n++;
    return !used_again(sec, id, n);
}

/* The code that runs on the target: the sm_90a twin's when there is one,
 * else the whole source; without the candidate's comment line and with its
 * function names as K and T, so two candidates that lower alike compare
 * equal. NULL when out of memory. */
static char *target_code(const tilec_kernel_code *code)
{
    const char *s = code->source;
    if (code->tma.name) {
        const char *t = strstr(s, code->tma.name);
        while (t && t > s && t[-1] != '\n')
            t--;
        /* back over the comment line before the twin */
        if (t && t > s) {
            const char *c = t - 1;
            while (c > s && c[-1] != '\n')
                c--;
            s = c;
        }
    }
    const char *sec = s;
    strbuf b;
    sb_init(&b);
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s + 1) : strlen(s);
        const char *q = strstr(s, ", tune candidate ");
        if (!(len > 3 && !strncmp(s, "/* ", 3) && q && q < s + len) && !unused_constant(sec, s, len)) {
            for (size_t i = 0; i < len;) {
                size_t nl = strlen(code->name), tl = code->tma.name ? strlen(code->tma.name) : 0;
                if (tl && i + tl <= len && !strncmp(s + i, code->tma.name, tl)) {
                    sb_putc(&b, 'T');
                    i += tl;
                } else if (i + nl <= len && !strncmp(s + i, code->name, nl)) {
                    sb_putc(&b, 'K');
                    i += nl;
                } else {
                    sb_putc(&b, s[i++]);
                }
            }
        }
        s += len;
    }
    if (b.failed) {
        sb_free(&b);
        return NULL;
    }
    return sb_take(&b);
}

static const char *dup(arena *ar, const char *s) { return ar_strdup(ar, s); }

static void cand_name(strbuf *b, const tilec_kernel *k, const tilec_tune_cand *c)
{
    for (uint32_t i = 0; i < k->ntune; i++)
        sb_printf(b, "%s%s=%lld", i ? " " : "", k->tune[i].name, (long long)c->values[i]);
}

/* Lower candidate variant v; 0 with *info filled, else the reason in *why. */
static int lower_cand(const tilec_module *m, const tilec_kernel *k, int v, arena *ar, cand_info *info,
                      const char **why)
{
    tilec_ctx *sctx = tilec_ctx_new();
    if (!sctx)
        return -1;
    tilec_kernel_code code;
    memset(&code, 0, sizeof code);
    tilec_status st = tilec_lower_kernel(sctx, m, k, v, &code);
    if (st != TILEC_OK) {
        const tilec_diag *d = tilec_ctx_diag_count(sctx) ? tilec_ctx_diag(sctx, 0) : NULL;
        strbuf b;
        sb_init(&b);
        sb_printf(&b, "the lowering: %s", d ? d->message : tilec_status_string(st));
        if (d && d->line)
            sb_printf(&b, " (line %u)", d->line);
        *why = dup(ar, sb_str(&b));
        sb_free(&b);
        tilec_ctx_free(sctx);
        return st == TILEC_ERR_NOMEM ? -1 : 1;
    }
    info->threads = code.tma.name ? code.tma.threads : code.threads;
    info->smem = code.tma.name ? code.tma.smem_bytes : code.smem_bytes;
    info->split = code.split_k > 1 ? code.split_k : 1;
    const char *r = code.remarks ? code.remarks : "";
    info->path = code.tma.name && strstr(r, "wgmma + TMA (the sm_90a twin") ? P_WGMMA
                 : strstr(r, "mma.sync")                                      ? P_MMA
                 : strstr(r, "dot loop")                                      ? P_FMA
                                                                              : P_NONE;
    info->missed = NULL;
    if (!(info->code = target_code(&code))) {
        tilec_kernel_code_free(&code);
        tilec_ctx_free(sctx);
        return -1;
    }
    const char *nl = strstr(r, " not on ");
    if (nl) {
        const char *s = nl, *e = strchr(nl, '\n');
        while (s > r && s[-1] != '\n')
            s--;
        info->missed = ar_strndup(ar, s, e ? (size_t)(e - s) : strlen(s));
    }
    tilec_kernel_code_free(&code);
    tilec_ctx_free(sctx);
    return 0;
}

/* What cannot fit the target, or NULL. */
static const char *fit(arena *ar, const tilec_tune_cand *c, cand_info *info, uint32_t live)
{
    char buf[256];
    info->regs = (uint32_t)(c->tile_regs * live + T_REGS_OVERHEAD);
    if (info->smem > T_SMEM_BLOCK) {
        snprintf(buf, sizeof buf, "shared memory: %u bytes, more than the %d a block may have", info->smem,
                 T_SMEM_BLOCK);
        return dup(ar, buf);
    }
    if (info->regs > T_REGS_THREAD) {
        snprintf(buf, sizeof buf,
                 "registers: about %u a thread (its largest tile %lld%s + %d), more than %d: it would spill",
                 info->regs, (long long)c->tile_regs, live > 1 ? " three times" : "", T_REGS_OVERHEAD, T_REGS_THREAD);
        return dup(ar, buf);
    }
    uint32_t regs = (info->regs + 7) / 8 * 8, t = info->threads ? info->threads : 128;
    uint32_t occ = T_THREADS_SM / t;
    if (T_REGS_SM / (regs * t) < occ)
        occ = T_REGS_SM / (regs * t);
    if (info->smem && T_SMEM_SM / (info->smem + 1024) < occ)
        occ = T_SMEM_SM / (info->smem + 1024);
    if (occ > T_BLOCKS_SM)
        occ = T_BLOCKS_SM;
    info->occ = occ;
    if (!occ) {
        snprintf(buf, sizeof buf, "occupancy: no block fits a multiprocessor (%u threads, %u registers, %u bytes)", t,
                 regs, info->smem);
        return dup(ar, buf);
    }
    return NULL;
}

/* The innermost for loop whose body calls dot, or NULL. */
static const tilec_stmt *dot_loop(const tilec_block *b, int *has_dot)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        int inner = 0;
        const tilec_stmt *l = dot_loop(&s->body, &inner);
        if (!l && !inner)
            l = dot_loop(&s->orelse, &inner);
        if (l)
            return l;
        if (inner && s->kind == TILEC_ST_FOR)
            return s;
        if (inner || lower_calls(s->value, BI_DOT)) {
            *has_dot = 1;
            return NULL;
        }
    }
    return NULL;
}

/* The dot loop's trip length (hi - lo) in a class, or 0 when unknown. */
static int64_t loop_length(const tilec_kernel *k, const tilec_stmt *loop, int v, const int64_t *args)
{
    if (!loop)
        return 0;
    arena a;
    ar_init(&a);
    aix_why why = {0};
    const tilec_ix *lo = ast_to_ix(&a, loop->lo, 1, &why), *hi = ast_to_ix(&a, loop->hi, 1, &why);
    int64_t l = 0, h = 0;
    int ok = !lower_kernel_ix_eval(k, v, args, lo, &l) && !lower_kernel_ix_eval(k, v, args, hi, &h) && h > l;
    ar_free(&a);
    return ok ? h - l : 0;
}

/* The cost model's time (ms) of candidate c in a class (args: the kernel's
 * arguments there): whole waves of blocks, each as long as its tensor-core
 * work or its operand traffic, slowed when neither resident blocks nor
 * stages hide load latency. */
/* A row kernel: rows of `len` elements, ROWS of them a block (the rows
 * over the grid), its largest tile's columns a step; a row that does not
 * fit the tile takes `loops` passes of len / columns steps. The largest of
 * the time to move the rows through device memory (read and written once,
 * 8 bytes an element), to read them again from L2 on further passes, to
 * issue the tile's lanes (masked ones too, 8 operations each) and the
 * waves' latency (each block: a memory round trip and its threads' share
 * of the tile a step, its reductions, its start), plus a twentieth of the others: among candidates bound by
 * bandwidth, the one with the least latency and wasted lanes ranks first. */
static double estimate_rows(const tilec_kernel *k, const cand_info *info, const row_shape *rs, int64_t tile_regs,
                            double blocks, double waves, const int64_t *args)
{
    double rows = (double)args[rs->rows_param], len = 1;
    for (uint32_t p = 0; p < k->nparams && p < 64; p++)
        if ((int)p != rs->rows_param && is_int_param(&k->params[p])) {
            len = (double)args[p];
            break;
        }
    double rpb = fmax(1.0, ceil(rows / blocks)), tile = (double)tile_regs * info->threads;
    double cols = fmax(1.0, tile / rpb);
    double steps = len <= cols ? 1 : fmax(1.0, rs->loops) * ceil(len / cols);
    double t[4];
    t[0] = rows * len * 8 / T_HBM;
    t[1] = len > cols && rs->loops > 1 ? rows * len * 4 * (rs->loops - 1) / T_BW : 0;
    t[2] = blocks * steps * rpb * cols * 8 / T_LANES;
    /* the lowering gives a row kernel without dot shared memory only for
     * reductions across its warps */
    double step = T_LAT_MEM + (double)tile_regs * T_CYCLES_ELEM / T_CLOCK;
    t[3] = waves * (steps * step + rs->reds * T_LAT_RED * (info->smem ? 1 : 0.1) + T_LAT_BLOCK);
    double most = 0, all = 0;
    for (int i = 0; i < 4; i++) {
        most = fmax(most, t[i]);
        all += t[i];
    }
    return 1e3 * (most + (all - most) / 20);
}

static double estimate(const tilec_kernel *k, const tilec_tune_cand *c, const cand_info *info, int v,
                       const int64_t *args, const tilec_stmt *loop, const row_shape *rs, const int *role)
{
    uint32_t grid[3] = {1, 1, 1};
    if (tilec_kernel_grid(k, v, args, grid) != TILEC_OK)
        return HUGE_VAL;
    double blocks = (double)grid[0] * grid[1] * grid[2]; /* with split_k's slices (tilec_kernel_grid) */
    double slots = (double)T_SMS * info->occ;
    double waves = ceil(blocks / slots);
    if (!c->dot_m && rs->rows_param >= 0)
        return estimate_rows(k, info, rs, c->tile_regs, blocks, waves, args);
    if (!c->dot_m) {
        /* no dot: memory-bound; each block moves its largest tile in and
         * out, and too few threads in flight cannot fill the bandwidth */
        double elems = (double)c->tile_regs * info->threads;
        double resident = fmin(blocks, slots) * info->threads;
        double util = fmin(1.0, resident / (T_SMS * 1024.0));
        double tail = blocks > slots ? waves * slots / blocks : 1.0; /* a last wave part full */
        return 1e3 * blocks * elems * 8 / T_HBM / util * tail;
    }
    double esize = c->dot_dtype == TILEC_DT_F32 ? 4 : 2;
    int64_t len = loop_length(k, loop, v, args);
    /* the K a block runs through: the dot loop's length (its share of it
     * under split_k), else the dot's own K */
    double kdepth = len ? (double)len / info->split : (double)c->dot_k;
    double flops = 2.0 * (double)c->dot_m * (double)c->dot_n * kdepth;
    /* a tile past M (N) moves no rows (columns): the loads are masked */
    double m = (double)c->dot_m, n = (double)c->dot_n;
    if (role[0] >= 0)
        m = fmin(m, (double)args[role[0]]);
    if (role[1] >= 0)
        n = fmin(n, (double)args[role[1]]);
    double bytes = (m + n) * kdepth * esize + m * n * 4;
    double peak = info->path == P_WGMMA ? T_PEAK_WGMMA : info->path == P_MMA ? T_PEAK_MMA : T_PEAK_FMA;
    if (c->dot_dtype == TILEC_DT_F32 && info->path != P_FMA)
        peak /= 2; /* tf32 */
    double per_block = fmax(flops * slots / peak, bytes * slots / T_BW);
    /* the ring's depth: the hint; without one a tensor-core loop is
     * pipelined anyway (2..4 stages), and the sm_90a twin picks its own */
    int64_t stages = tilec_kernel_hint(k, v, "stages", 0);
    if (info->path == P_WGMMA || (info->path == P_MMA && stages <= 0))
        stages = 3;
    double hide = fmin(1.0, (double)info->occ * (double)(stages > 0 ? stages : 1) / 2.0);
    return 1e3 * waves * per_block / hide;
}

/* The shape classes: tune ... for { ... } (the product of its sizes, the
 * parameters it does not name at 4096); else by the kernel's kind: a row
 * kernel's rows of 128, 512, 1024, 4096, 16384, 32768 and 131072 elements
 * (a vocabulary's row), 2^24 elements in all and at least 1024 rows (the
 * grid's parameter the rows, its other integer parameters the row length); an elementwise kernel with one integer parameter at 2^16,
 * 2^20 and 2^24; a dot kernel whose parameters M, N, K (and a batch) are
 * known by their roles (dot_roles) the products of dot_shapes; any other
 * every integer parameter at 1024, 4096, 8192 (square). args[c * 64 + i]
 * is parameter i in class c. */
typedef struct classes {
    uint32_t n;
    bool square;
    int64_t args[TILEC_MAX_TUNE_CLASSES * 64];
    char label[TILEC_MAX_TUNE_CLASSES][96];
} classes;

/* Class c's label: every integer parameter NAME=value. */
static void label_class(const tilec_kernel *k, classes *cl, uint32_t c)
{
    const int64_t *a = &cl->args[c * 64];
    int at = 0;
    cl->label[c][0] = 0;
    for (uint32_t p = 0; p < k->nparams && p < 64 && at < (int)sizeof cl->label[c]; p++)
        if (is_int_param(&k->params[p]))
            at += snprintf(cl->label[c] + at, sizeof cl->label[c] - (size_t)at, "%s%s=%lld", at ? " " : "",
                           k->params[p].name, (long long)a[p]);
}

/* A class of its kind: every integer parameter `size`, the row parameter
 * (when rows >= 0) `rows`; its label names them. */
static void kind_class(const tilec_kernel *k, classes *cl, uint32_t c, int rows_param, int64_t rows, int64_t size)
{
    int64_t *a = &cl->args[c * 64];
    for (uint32_t p = 0; p < 64; p++)
        a[p] = (int)p == rows_param ? rows : size;
    label_class(k, cl, c);
}

/* The integer parameter an expression uses (the first in the parameter
 * list) other than those in `not` (n of them), or -1. */
static int param_used(const tilec_kernel *k, const tilec_expr *e, const int *not, int n)
{
    for (uint32_t p = 0; e && p < k->nparams && p < 64; p++) {
        int taken = 0;
        for (int i = 0; i < n; i++)
            taken |= not[i] == (int)p;
        if (!taken && is_int_param(&k->params[p]) && chk_tune_expr_uses(e, NULL, k->params[p].name))
            return (int)p;
    }
    return -1;
}

/* A dot kernel's roles: K the parameter of its dot loop's bound, M the
 * grid's first axis's, N its second's, a batch its third's (-1 when there
 * is none); 0 when M, N or K is not found. */
static int dot_roles(const tilec_kernel *k, const tilec_stmt *loop, int role[4])
{
    role[0] = role[1] = role[2] = role[3] = -1;
    if (!loop || k->ngrid < 2)
        return 0;
    role[2] = param_used(k, loop->hi, NULL, 0);
    role[0] = role[2] >= 0 ? param_used(k, k->grid[0], &role[2], 1) : -1;
    int not[2] = {role[2], role[0]};
    role[1] = role[0] >= 0 ? param_used(k, k->grid[1], not, 2) : -1;
    if (k->ngrid >= 3 && role[1] >= 0) {
        int not3[3] = {role[2], role[0], role[1]};
        role[3] = param_used(k, k->grid[2], not3, 3);
    }
    return role[0] >= 0 && role[1] >= 0 && role[2] >= 0;
}

/* A dot kernel's classes (M, N, K, batch; docs/tuning.md "The cost
 * model"): square products, skinny M (decode), tall and wide products,
 * (a narrow or a short output), and, with a batch parameter, a batched
 * product of square matrices; the batch is 1 in the others. */
static const int64_t dot_shapes[][4] = {
    {1024, 1024, 1024, 1}, {4096, 4096, 4096, 1}, {8192, 8192, 8192, 1}, /* square */
    {16, 8192, 8192, 1},   {64, 8192, 8192, 1},                          /* skinny M */
    {8192, 256, 8192, 1},  {256, 8192, 8192, 1},                         /* tall, wide */
    {1024, 1024, 1024, 16},                                              /* batched */
};

static void make_classes(const tilec_kernel *k, const row_shape *rs, const tilec_stmt *loop, classes *cl)
{
    static const int64_t square[] = {1024, 4096, 8192}, lens[] = {128, 512, 1024, 4096, 16384, 32768, 131072},
                         sizes[] = {1 << 16, 1 << 20, 1 << 24};
    uint32_t nint = 0;
    int role[4];
    for (uint32_t p = 0; p < k->nparams; p++)
        nint += is_int_param(&k->params[p]);
    cl->square = false;
    if (!k->ntune_for && rs->rows_param >= 0) {
        cl->n = sizeof lens / sizeof lens[0];
        for (uint32_t c = 0; c < cl->n; c++)
            kind_class(k, cl, c, rs->rows_param, (1 << 24) / lens[c] > 1024 ? (1 << 24) / lens[c] : 1024, lens[c]);
        return;
    }
    if (!k->ntune_for && rs->kind == TILEC_TUNE_ELEMENTWISE && nint == 1) {
        cl->n = sizeof sizes / sizeof sizes[0];
        for (uint32_t c = 0; c < cl->n; c++)
            kind_class(k, cl, c, -1, 0, sizes[c]);
        return;
    }
    if (!k->ntune_for && dot_roles(k, loop, role)) {
        cl->n = 0;
        for (uint32_t s = 0; s < sizeof dot_shapes / sizeof dot_shapes[0]; s++) {
            if (dot_shapes[s][3] > 1 && role[3] < 0)
                continue;
            int64_t *a = &cl->args[cl->n * 64];
            for (uint32_t p = 0; p < 64; p++)
                a[p] = 4096;
            for (int r = 0; r < 4; r++)
                if (role[r] >= 0)
                    a[role[r]] = dot_shapes[s][r];
            label_class(k, cl, cl->n++);
        }
        return;
    }
    cl->n = 1;
    for (uint32_t i = 0; i < k->ntune_for; i++)
        cl->n *= k->tune_for[i].nvalues;
    if (!k->ntune_for) {
        cl->n = 3;
        cl->square = true;
    }
    for (uint32_t c = 0; c < cl->n; c++) {
        int64_t *a = &cl->args[c * 64];
        for (uint32_t i = 0; i < 64; i++)
            a[i] = k->ntune_for ? 4096 : square[c];
        if (!k->ntune_for) {
            snprintf(cl->label[c], sizeof cl->label[c], "%lld", (long long)square[c]);
            continue;
        }
        uint32_t rest = c;
        int at = 0;
        cl->label[c][0] = 0;
        for (uint32_t i = k->ntune_for; i-- > 0;) {
            const tilec_tune_axis *x = &k->tune_for[i];
            int64_t size = x->values[rest % x->nvalues];
            rest /= x->nvalues;
            for (uint32_t p = 0; p < k->nparams && p < 64; p++)
                if (!strcmp(k->params[p].name, x->name))
                    a[p] = size;
        }
        for (uint32_t i = 0; i < k->ntune_for; i++)
            for (uint32_t p = 0; p < k->nparams && p < 64; p++)
                if (!strcmp(k->params[p].name, k->tune_for[i].name) && at < (int)sizeof cl->label[c])
                    at += snprintf(cl->label[c] + at, sizeof cl->label[c] - (size_t)at, "%s%s=%lld", i ? " " : "",
                                   k->tune_for[i].name, (long long)a[p]);
    }
}

typedef struct rank_ent {
    double est;
    uint32_t i;
} rank_ent;

static int by_est(const void *a, const void *b)
{
    const rank_ent *x = a, *y = b;
    return x->est < y->est ? -1 : x->est > y->est ? 1 : x->i < y->i ? -1 : x->i > y->i;
}

/* A row kernel's candidates within T_TIE of the best of a class are ones
 * the model cannot tell apart (bound by bandwidth, they differ in what it
 * does not see: the real registers, the reductions' instructions); they
 * are ranked first the best of each count of elements a thread (the
 * largest tile's), then the others, each by the estimate, so that the kept
 * ones differ and the timing at run time decides. */
static const double T_TIE = 1.02;
/* Before those, the first half of a class's `keep` (rounded down) goes to
 * balanced candidates: T_BAL_ELEMS_LO to T_BAL_ELEMS_HI elements a thread
 * with at least T_BAL_WARPS warps a block, within T_NEAR of the class's
 * best, the best of each count of elements a thread. The model ranks more
 * elements a thread first (one round trip to memory for more of them),
 * but it does not see how a block of one or two warps hides the latency
 * of its loads and reductions: on the H100 the hand-tuned winners at rows
 * of 512 to 4096 elements are blocks of 4 to 16 warps at 8 to 16 elements
 * a thread (bench/results/rows_tuned.md), which the model put within a
 * few percent of its best yet behind a dozen candidates of 32 or 64. */
static const double T_NEAR = 1.05;
enum { T_BAL_ELEMS_LO = 4, T_BAL_ELEMS_HI = 16, T_BAL_WARPS = 4 };

static int balanced(const tilec_tune_cand *c, const cand_info *info)
{
    return c->tile_regs >= T_BAL_ELEMS_LO && c->tile_regs <= T_BAL_ELEMS_HI && info->threads >= 32u * T_BAL_WARPS;
}

static void spread(const tilec_kernel *k, const cand_info *info, const uint32_t *cand_of, rank_ent *ents, uint32_t ne,
                   uint32_t keep)
{
    uint32_t n = 0;
    while (n < ne && ents[n].est <= ents[0].est * T_TIE)
        n++;
    rank_ent tmp[TILEC_MAX_TUNE_CONFIGS];
    uint32_t at = 0;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t j = 0; j < n; j++) {
            int64_t e = k->tune_cands[cand_of[ents[j].i]].tile_regs;
            int first = 1;
            for (uint32_t i = 0; i < j && first; i++)
                first = k->tune_cands[cand_of[ents[i].i]].tile_regs != e;
            if (first == !pass)
                tmp[at++] = ents[j];
        }
    memcpy(ents, tmp, n * sizeof *ents);
    /* the balanced ones first: move each to the front, in order */
    uint32_t nb = 0;
    for (uint32_t j = 0; j < ne && nb < keep / 2 && ents[j].est <= ents[0].est * T_NEAR; j++) {
        const tilec_tune_cand *c = &k->tune_cands[cand_of[ents[j].i]];
        int first = balanced(c, &info[ents[j].i]);
        for (uint32_t i = 0; i < nb && first; i++)
            first = k->tune_cands[cand_of[ents[i].i]].tile_regs != c->tile_regs;
        if (!first)
            continue;
        rank_ent x = ents[j];
        memmove(&ents[nb + 1], &ents[nb], (j - nb) * sizeof *ents);
        ents[nb++] = x;
    }
}

static tilec_status tune_kernel(tilec_ctx *ctx, const tilec_module *m, tilec_kernel *k, arena *ar)
{
    uint32_t n = k->nvariants, keep = k->tune_keep ? k->tune_keep : TILEC_TUNE_KEEP;
    cand_info *info = calloc(n ? n : 1, sizeof *info);
    classes *cls = NULL;
    uint32_t *cand_of = calloc(n ? n : 1, sizeof *cand_of), *kept = calloc(n ? n : 1, sizeof *kept);
    rank_ent *ents = calloc(n ? n : 1, sizeof *ents);
    tilec_status st = TILEC_OK;
    if (!info || !cand_of || !kept || !ents) {
        st = TILEC_ERR_NOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < k->ntune_cands; i++)
        if (k->tune_cands[i].variant >= 0)
            cand_of[k->tune_cands[i].variant] = i;
    row_shape rs = row_shape_of(k);
    for (uint32_t v = 0; v < n; v++) {
        tilec_tune_cand *c = &k->tune_cands[cand_of[v]];
        int r = lower_cand(m, k, (int)v, ar, &info[v], &c->why);
        if (r < 0) {
            st = TILEC_ERR_NOMEM;
            goto out;
        }
        if (!r)
            c->why = fit(ar, c, &info[v], rs.rows_param >= 0 ? 3 : 1);
        for (uint32_t w = 0; !c->why && w < v; w++)
            if (info[w].code && !k->tune_cands[cand_of[w]].why && !strcmp(info[w].code, info[v].code)) {
                strbuf b;
                sb_init(&b);
                sb_puts(&b, "the same code on the target as ");
                cand_name(&b, k, &k->tune_cands[cand_of[w]]);
                c->why = dup(ar, sb_str(&b));
                sb_free(&b);
            }
    }
    /* rank per class; keep the best `keep` of each */
    uint32_t nkept = 0;
    int has_dot = 0;
    const tilec_stmt *loop = dot_loop(&k->body, &has_dot);
    cls = malloc(sizeof *cls);
    if (!cls) {
        st = TILEC_ERR_NOMEM;
        goto out;
    }
    make_classes(k, &rs, loop, cls);
    int role[4];
    dot_roles(k, loop, role);
    for (uint32_t cl = 0; cl < cls->n; cl++) {
        uint32_t ne = 0;
        for (uint32_t v = 0; v < n; v++) {
            tilec_tune_cand *c = &k->tune_cands[cand_of[v]];
            if (c->why)
                continue;
            c->est[cl] = estimate(k, c, &info[v], (int)v, &cls->args[cl * 64], loop, &rs, role);
            ents[ne++] = (rank_ent){c->est[cl], v};
        }
        qsort(ents, ne, sizeof *ents, by_est);
        if (rs.rows_param >= 0)
            spread(k, info, cand_of, ents, ne, keep);
        for (uint32_t j = 0; j < ne; j++) {
            k->tune_cands[cand_of[ents[j].i]].rank[cl] = j + 1;
            if (j < keep) {
                uint32_t x = 0;
                while (x < nkept && kept[x] != ents[j].i)
                    x++;
                if (x == nkept && nkept < TILEC_MAX_VARIANTS)
                    kept[nkept++] = ents[j].i;
            }
        }
    }
    if (!nkept) {
        tilec_loc loc = k->tune_loc;
        diag_at(ctx, &m->src, &loc, TILEC_SEV_ERROR,
                "no configuration of the tune space of kernel '%s' lowers and fits the target; the first: %s",
                k->name, k->tune_cands[cand_of[0]].why ? k->tune_cands[cand_of[0]].why : "?");
        st = TILEC_ERR_INPUT;
        goto out;
    }
    /* ascending, as chk_tune_keep_variants needs */
    for (uint32_t i = 1; i < nkept; i++)
        for (uint32_t j = i; j > 0 && kept[j - 1] > kept[j]; j--) {
            uint32_t t = kept[j];
            kept[j] = kept[j - 1];
            kept[j - 1] = t;
        }
    /* the report, before the variants move */
    strbuf b;
    sb_init(&b);
    uint32_t pruned = 0;
    for (uint32_t i = 0; i < k->ntune_cands; i++)
        pruned += k->tune_cands[i].why != NULL;
    sb_printf(&b, "kernel %s: tune", k->name);
    if (k->tune_default)
        sb_printf(&b, " (the default space of %s kernel)", chk_tune_kind_name(rs.kind));
    sb_printf(&b, " at line %u: %u configurations, %u pruned, %u kept (the best %u of each shape class: ",
              k->tune_loc.line, k->ntune_cands, pruned, nkept, keep);
    if (!cls->square)
        for (uint32_t cl = 0; cl < cls->n; cl++)
            sb_printf(&b, "%s%s", cl ? "; " : "", cls->label[cl]);
    else
        sb_printf(&b, "every integer parameter = %s, %s, %s", cls->label[0], cls->label[1], cls->label[2]);
    sb_puts(&b, ")\n");
    if (k->tune_default && rs.kind == TILEC_TUNE_ROW && !tilec_kernel_hint(k, -1, "ROWS", 0))
        sb_printf(&b, "  note: one row a program: kernel %s names no ROWS, so a short row leaves most of a block "
                  "idle; write its tiles [ROWS, BLOCK] with grid (cdiv(rows, ROWS)) and the compiler chooses the "
                  "rows a program too (docs/tuning.md)\n", k->name);
    if (rs.kind == TILEC_TUNE_ROW && rs.rows_param < 0)
        sb_printf(&b, "  note: no integer parameter in the grid counts the rows, so the classes are square and the "
                  "model the elementwise one\n");
    for (uint32_t i = 0; i < k->ntune_cands; i++) {
        const tilec_tune_cand *c = &k->tune_cands[i];
        sb_puts(&b, "  ");
        cand_name(&b, k, c);
        if (c->why) {
            sb_printf(&b, ": pruned: %s\n", c->why);
            continue;
        }
        uint32_t v = (uint32_t)c->variant, x = 0;
        while (x < nkept && kept[x] != v)
            x++;
        const cand_info *f = &info[v];
        if (x < nkept)
            sb_printf(&b, ": kept as variant %u: ", x);
        else
            sb_puts(&b, ": not kept: ");
        sb_printf(&b, "%s, %u threads, %u bytes shared, ~%u registers, %u blocks/SM;", path_names[f->path],
                  f->threads, f->smem, f->regs, f->occ);
        for (uint32_t cl = 0; cl < cls->n; cl++)
            sb_printf(&b, " %s: #%u %.4g ms%s", cls->label[cl], c->rank[cl], c->est[cl], cl + 1 < cls->n ? "," : "");
        if (f->missed) /* the lowering's remark: why not the target's best path */
            sb_printf(&b, "; %s", f->missed);
        sb_putc(&b, '\n');
    }
    if (b.failed) {
        sb_free(&b);
        st = TILEC_ERR_NOMEM;
        goto out;
    }
    k->tune_report = dup(ar, sb_str(&b));
    sb_free(&b);
    if (!k->tune_report) {
        st = TILEC_ERR_NOMEM;
        goto out;
    }
    chk_tune_keep_variants(k, kept, nkept);
out:
    free(cls);
    for (uint32_t v = 0; info && v < n; v++)
        free(info[v].code);
    free(info);
    free(cand_of);
    free(kept);
    free(ents);
    return st;
}

tilec_status lower_tune_module(tilec_ctx *ctx, tilec_module *m, arena *ar)
{
    for (uint32_t i = 0; i < tilec_module_kernel_count(m); i++) {
        tilec_kernel *k = (tilec_kernel *)tilec_module_kernel(m, i);
        if (!k->ntune_hints || k->tune_report)
            continue;
        tilec_status st = tune_kernel(ctx, m, k, ar);
        if (st != TILEC_OK)
            return st;
    }
    return TILEC_OK;
}

tilec_status tilec_module_emit_tune(const tilec_module *m, tilec_sink sink)
{
    if (!m || !sink.write)
        return TILEC_ERR_ARG;
    for (uint32_t i = 0; i < tilec_module_kernel_count(m); i++) {
        const tilec_kernel *k = tilec_module_kernel(m, i);
        const char *r = k->tune_report ? k->tune_report : NULL;
        char line[512];
        if (!r) {
            snprintf(line, sizeof line, "kernel %s: no tune space\n", k->name);
            r = line;
        }
        if (sink.write(sink.user, r, strlen(r)))
            return TILEC_ERR_IO;
    }
    return TILEC_OK;
}
