/* test_tune.c: tune spaces (docs/tuning.md): the grammar and the checker
 * through the API, the candidates the tuning pass keeps for a few kernels
 * (exact lists), its errors, TILEC_LOGS=tune, and every kept candidate
 * compiled by NVRTC for sm_90 and sm_90a (no GPU needed). The report's
 * exact text is golden: tests/golden/tune. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_helpers.h"
#include "helpers.h"
#include "tilec/lower.h"
#include "tilec/program.h"

/* One line of a tune space: each axis NAME=value under variant v, or (v <
 * 0) NAME=v1|v2|... its values. */
static void tune_line(membuf *b, const tilec_kernel *k, int v)
{
    char line[512];
    int n = 0;
    for (uint32_t i = 0; i < k->ntune; i++) {
        n += snprintf(line + n, sizeof line - (size_t)n, "%s%s=", i ? " " : "", k->tune[i].name);
        for (uint32_t j = 0; j < (v < 0 ? k->tune[i].nvalues : 1); j++)
            n += snprintf(line + n, sizeof line - (size_t)n, "%s%lld", j ? "|" : "",
                          (long long)(v < 0 ? k->tune[i].values[j] : tilec_kernel_hint(k, v, k->tune[i].name, -1)));
    }
    membuf_write(b, line, (size_t)n);
}

/* The kept candidates of kernel `name`, "BM=64 BN=128 ..." each, one a line. */
static char *kept(const tilec_module *m, const char *name)
{
    const tilec_kernel *k = tilec_module_find_kernel(m, name);
    cr_assert_not_null(k);
    membuf b = {0};
    for (uint32_t v = 0; v < k->nvariants; v++) {
        tune_line(&b, k, (int)v);
        membuf_write(&b, "\n", 1);
    }
    return b.s ? b.s : strdup("");
}

/* The axes of a tune space, "NAME=v1|v2 ..." each. */
static char *axes(const tilec_kernel *k)
{
    membuf b = {0};
    tune_line(&b, k, -1);
    return b.s ? b.s : strdup("");
}

/* The kept of shape class cl of kernel `name`, the best first (rank 1 ..
 * keep), "BM=64 BN=128 ..." each, one a line. */
static char *kept_in_class(const tilec_module *m, const char *name, uint32_t cl)
{
    const tilec_kernel *k = tilec_module_find_kernel(m, name);
    cr_assert_not_null(k);
    uint32_t keep = k->tune_keep ? k->tune_keep : 4;
    membuf b = {0};
    for (uint32_t r = 1; r <= keep; r++)
        for (uint32_t i = 0; i < k->ntune_cands; i++) {
            const tilec_tune_cand *c = &k->tune_cands[i];
            if (c->why || c->rank[cl] != r)
                continue;
            cr_expect_geq(c->variant, 0, "rank %u of class %u is kept", r, cl);
            tune_line(&b, k, c->variant);
            membuf_write(&b, "\n", 1);
        }
    return b.s ? b.s : strdup("");
}

/* The benchmark's f16 product without hints: the default space, 108
 * configurations; the kept are wgmma candidates, stages alone makes none
 * (the twin picks its own depth) and neither does warps (the twin arranges
 * its own warp groups) but at BM = 64, where 8 warps run two M tiles a
 * block (lower/wgpair.c: BM=64 BN=256 BK=32 warps=8 is kept where BK=64
 * warps=4 was, the cost model ranking them alike), K tiles of 32 and 64
 * both take the twin. Its shape
 * classes are found by the parameters' roles (M, N from the grid, K from
 * the dot loop; a batch from the grid's third axis): square products keep
 * the large tiles, skinny M (16, 64) the 64 x 64 tiles that split N over
 * the machine, a narrow or short output (8192 x 256, 256 x 8192) 64 x 256
 * and 128 x 128 tiles; before the classes by role there were only the
 * square ones, and the skinny M = 16 product was timed on their 8. */
Test(tune, default_space_of_a_dot_kernel, .timeout = 60)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/tune/dot_default.tile");
    const tilec_kernel *k = tilec_module_find_kernel(m, "gemm");
    cr_expect(k->tune_default);
    cr_expect_eq(k->ntune, 5);
    cr_expect_eq(k->ntune_cands, 108);
    char *got = kept(m, "gemm");
    cr_expect_str_eq(got, "BM=64 BN=64 BK=32 warps=4 stages=2\n"
                          "BM=64 BN=64 BK=64 warps=4 stages=2\n"
                          "BM=64 BN=128 BK=32 warps=4 stages=2\n"
                          "BM=64 BN=128 BK=64 warps=4 stages=2\n"
                          "BM=64 BN=256 BK=32 warps=4 stages=2\n"
                          "BM=64 BN=256 BK=32 warps=8 stages=2\n"
                          "BM=128 BN=64 BK=32 warps=4 stages=2\n"
                          "BM=128 BN=64 BK=64 warps=4 stages=2\n"
                          "BM=128 BN=128 BK=32 warps=4 stages=2\n"
                          "BM=128 BN=128 BK=64 warps=4 stages=2\n"
                          "BM=128 BN=256 BK=32 warps=8 stages=2\n"
                          "BM=128 BN=256 BK=64 warps=8 stages=2\n");
    free(got);
    uint32_t pruned = 0;
    for (uint32_t i = 0; i < k->ntune_cands; i++)
        pruned += k->tune_cands[i].why != NULL;
    cr_expect_eq(pruned, 76); /* 78 before BM = 64 with 8 warps made a twin of its own */
    cr_expect(strstr(k->tune_report, "(the best 4 of each shape class: M=1024 N=1024 K=1024; M=4096 N=4096 K=4096; "
                                     "M=8192 N=8192 K=8192; M=16 N=8192 K=8192; M=64 N=8192 K=8192; "
                                     "M=8192 N=256 K=8192; M=256 N=8192 K=8192)\n"),
              "%s", k->tune_report);
    static const char *const want[] = {
        /* 1024 */
        "BM=64 BN=128 BK=32 warps=4 stages=2\nBM=64 BN=128 BK=64 warps=4 stages=2\n"
        "BM=128 BN=64 BK=32 warps=4 stages=2\nBM=128 BN=64 BK=64 warps=4 stages=2\n",
        /* 4096, 8192 */
        "BM=128 BN=128 BK=32 warps=4 stages=2\nBM=128 BN=128 BK=64 warps=4 stages=2\n"
        "BM=128 BN=256 BK=32 warps=8 stages=2\nBM=128 BN=256 BK=64 warps=8 stages=2\n",
        NULL,
        /* M = 16 */
        "BM=64 BN=64 BK=32 warps=4 stages=2\nBM=64 BN=64 BK=64 warps=4 stages=2\n"
        "BM=64 BN=128 BK=32 warps=4 stages=2\nBM=64 BN=128 BK=64 warps=4 stages=2\n",
        /* M = 64: a tile of 128 rows moves no more than one of 64 */
        "BM=64 BN=64 BK=32 warps=4 stages=2\nBM=64 BN=64 BK=64 warps=4 stages=2\n"
        "BM=128 BN=64 BK=32 warps=4 stages=2\nBM=128 BN=64 BK=64 warps=4 stages=2\n",
        /* 8192 x 256 and 256 x 8192 */
        "BM=128 BN=128 BK=32 warps=4 stages=2\nBM=128 BN=128 BK=64 warps=4 stages=2\n"
        "BM=64 BN=256 BK=32 warps=4 stages=2\nBM=64 BN=256 BK=32 warps=8 stages=2\n",
        NULL,
    };
    for (uint32_t cl = 0; cl < 7; cl++) {
        const char *w = want[cl] ? want[cl] : want[cl - 1];
        got = kept_in_class(m, "gemm", cl);
        cr_expect_str_eq(got, w, "class %u", cl);
        free(got);
    }
    /* the batched product: its roles found by use, not by name or order;
     * the batched class (16 of 1024^3) keeps what the square 4096 class does */
    k = tilec_module_find_kernel(m, "bmm");
    cr_expect(strstr(k->tune_report, "; batch=1 rows=16 cols=8192 depth=8192; ") &&
                  strstr(k->tune_report, "; batch=16 rows=1024 cols=1024 depth=1024)\n"),
              "%s", k->tune_report);
    got = kept_in_class(m, "bmm", 7);
    cr_expect_str_eq(got, want[1]);
    free(got);
    got = kept_in_class(m, "bmm", 3);
    cr_expect_str_eq(got, want[3]);
    free(got);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The kind of a kernel written without tile hints, by analysis of its
 * body: a row kernel (a reduction, a grid over rows) gets ROWS, BLOCK and
 * warps (ROWS only when it names it: one row a program otherwise, with a
 * note), an elementwise one BLOCK and warps; a reduction under a 2-D grid
 * is none of them and keeps the checker's error, as does a kernel with
 * hints. Before the default spaces of rows and
 * elementwise kernels each of these kernels failed with "undefined name". */
Test(tune, default_space_by_kind, .timeout = 120)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/tune/rows_default.tile");
    const tilec_kernel *k = tilec_module_find_kernel(m, "softmax");
    cr_expect(k->tune_default);
    char *got = axes(k);
    cr_expect_str_eq(got, "ROWS=1|2|4|8|16|32 BLOCK=128|256|512|1024|2048|4096|8192|16384 warps=1|2|4|8|16");
    free(got);
    cr_expect_eq(k->tune_keep, 4);
    cr_expect(strstr(k->tune_report, "(the default space of a row kernel)"), "%s", k->tune_report);
    cr_expect(strstr(k->tune_report, "rows=131072 cols=128; rows=32768 cols=512; rows=16384 cols=1024; rows=4096 "
                                     "cols=4096; rows=1024 cols=16384; rows=1024 cols=32768; rows=1024 cols=131072)"),
              "%s", k->tune_report);
    cr_expect_null(strstr(k->tune_report, "note: one row a program"));
    /* rows a program from the row length: the best of the 128 class puts
     * several rows in a program, with tiles as wide as the row; the best of
     * the 16384 class reads its row once (one tile of 16384) */
    for (uint32_t i = 0; i < k->ntune_cands; i++) {
        const tilec_tune_cand *c = &k->tune_cands[i];
        if (c->rank[0] == 1) {
            cr_expect_geq(c->values[0], 4, "ROWS at 128 columns");
            cr_expect_eq(c->values[1], 128, "BLOCK at 128 columns");
            cr_expect_geq(c->variant, 0);
        }
        if (c->rank[4] == 1) {
            cr_expect_eq(c->values[1], 16384, "BLOCK at 16384 columns");
            cr_expect_geq(c->variant, 0);
        }
    }
    k = tilec_module_find_kernel(m, "softmax_one_row");
    got = axes(k);
    cr_expect_str_eq(got, "BLOCK=128|256|512|1024|2048|4096|8192|16384 warps=1|2|4|8|16");
    free(got);
    cr_expect(strstr(k->tune_report, "  note: one row a program: kernel softmax_one_row names no ROWS"), "%s",
              k->tune_report);
    tilec_module_free(m);

    m = parse(ctx, "tests/golden/tune/elementwise_default.tile");
    k = tilec_module_find_kernel(m, "add_relu");
    got = axes(k);
    cr_expect_str_eq(got, "BLOCK=256|512|1024|2048|4096|8192 warps=1|2|4|8|16");
    free(got);
    cr_expect(strstr(k->tune_report, "(the default space of an elementwise kernel)"), "%s", k->tune_report);
    cr_expect(strstr(k->tune_report, "n=65536; n=1048576; n=16777216)"), "%s", k->tune_report);
    tilec_module_free(m);
    tilec_ctx_free(ctx);

    /* a reduction under a 2-D grid: no kind, the checker's error stays */
    const char *src = "kernel r(x: *f32, y: *f32, n: i32) grid (n, 2)\n"
                      "{ let c = range(BLOCK); store(y + pid(0), sum(load(x + c, c < n, 0.0), 0)); }\n";
    char *diags = NULL;
    cr_expect_eq(parse_text("t.tile", src, strlen(src), &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(diags && strstr(diags, "t.tile:2:17: error: undefined name 'BLOCK'"), "%s", diags ? diags : "");
    free(diags);
    /* a kernel with hints gets no default space: its undefined ROWS is an error */
    src = "kernel r(x: *f32, y: *f32, n: i32) grid (cdiv(n, ROWS)) hints { BLOCK = 128 }\n"
          "{ let c = range(BLOCK); store(y + pid(0), sum(load(x + c, c < n, 0.0), 0)); }\n";
    diags = NULL;
    cr_expect_eq(parse_text("t.tile", src, strlen(src), &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(diags && strstr(diags, "t.tile:1:50: error: undefined name 'ROWS'"), "%s", diags ? diags : "");
    free(diags);
}

/* The default row space per row length, the best first: the first two
 * of each class are balanced (4 to 16 elements a thread, 4 warps or more:
 * latency hidden by warps, not by one thread's many elements), then the
 * model's best of each count of elements a thread; at 16384 columns no
 * balanced candidate comes within 5% of the best (a tile that holds the row
 * has 32 elements a thread at 16 warps), so the model's order stands.
 * Before, the 128 to 4096 classes kept only blocks of 1 or 2 warps at 16
 * to 64 elements a thread (bench/results/rows_tuned.md: the hand-tuned
 * BLOCK = 1024, warps = 4 had no counterpart) and this failed. */
Test(tune, default_row_space_keeps_balanced_candidates, .timeout = 120)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/tune/rows_default.tile");
    static const char *const want[] = {
        "ROWS=16 BLOCK=128 warps=4\nROWS=8 BLOCK=128 warps=4\nROWS=8 BLOCK=128 warps=1\nROWS=16 BLOCK=128 warps=1\n",
        "ROWS=4 BLOCK=512 warps=4\nROWS=2 BLOCK=512 warps=4\nROWS=2 BLOCK=512 warps=1\nROWS=4 BLOCK=512 warps=1\n",
        "ROWS=2 BLOCK=1024 warps=4\nROWS=1 BLOCK=1024 warps=4\nROWS=1 BLOCK=1024 warps=1\nROWS=2 BLOCK=1024 warps=1\n",
        "ROWS=1 BLOCK=4096 warps=8\nROWS=1 BLOCK=4096 warps=16\nROWS=1 BLOCK=4096 warps=4\nROWS=1 BLOCK=4096 warps=2\n",
        "ROWS=1 BLOCK=16384 warps=16\nROWS=1 BLOCK=16384 warps=8\nROWS=1 BLOCK=2048 warps=2\nROWS=2 BLOCK=2048 warps=4\n",
        "ROWS=1 BLOCK=4096 warps=8\nROWS=1 BLOCK=2048 warps=2\nROWS=1 BLOCK=2048 warps=1\nROWS=2 BLOCK=2048 warps=4\n",
        "ROWS=1 BLOCK=4096 warps=8\nROWS=1 BLOCK=2048 warps=2\nROWS=1 BLOCK=2048 warps=1\nROWS=2 BLOCK=2048 warps=4\n",
    };
    for (uint32_t cl = 0; cl < 7; cl++) {
        char *got = kept_in_class(m, "softmax", cl);
        cr_expect_str_eq(got, want[cl], "class %u", cl);
        free(got);
    }
    /* the property, whatever the list: every class of 128 to 4096 columns
     * keeps a candidate of 4 to 16 elements a thread with 4 warps or more */
    const tilec_kernel *k = tilec_module_find_kernel(m, "softmax");
    for (uint32_t cl = 0; cl < 4; cl++) {
        int found = 0;
        for (uint32_t i = 0; i < k->ntune_cands; i++) {
            const tilec_tune_cand *c = &k->tune_cands[i];
            int64_t warps = c->values[2];
            if (!c->why && c->rank[cl] >= 1 && c->rank[cl] <= 4 && c->tile_regs >= 4 && c->tile_regs <= 16 &&
                warps >= 4)
                found = 1;
        }
        cr_expect(found, "class %u keeps no candidate of 4 to 16 elements a thread with 4 warps or more", cl);
    }
    cr_expect_eq(k->nvariants, 21); /* the 32768 and 131072 classes add ROWS=1 BLOCK=2048 warps=1 */
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* keep 2 over the dot classes; keep 1; a kernel without a dot. */
Test(tune, kept_candidates_per_kernel, .timeout = 60)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/tune/space.tile");
    char *got = kept(m, "mm");
    cr_expect_str_eq(got, "BM=16 BN=128 BK=64 warps=4 split_k=4\n"
                          "BM=16 BN=256 BK=64 warps=4 split_k=4\n"
                          "BM=64 BN=64 BK=32 warps=4 split_k=1\n"
                          "BM=64 BN=64 BK=64 warps=4 split_k=1\n"
                          "BM=64 BN=128 BK=32 warps=4 split_k=1\n"
                          "BM=64 BN=128 BK=64 warps=4 split_k=1\n"
                          "BM=128 BN=128 BK=32 warps=4 split_k=1\n"
                          "BM=128 BN=128 BK=64 warps=4 split_k=1\n");
    free(got);
    /* its space has split_k, and the dot classes by role (no `for`) have a
     * skinny M = 16 one: there split-K tiles of 16 rows on mma.sync rank
     * first; at M = 64 the 64 x 64 wgmma tiles */
    got = kept_in_class(m, "mm", 3);
    cr_expect_str_eq(got, "BM=16 BN=256 BK=64 warps=4 split_k=4\nBM=16 BN=128 BK=64 warps=4 split_k=4\n");
    free(got);
    got = kept_in_class(m, "mm", 4);
    cr_expect_str_eq(got, "BM=64 BN=64 BK=32 warps=4 split_k=1\nBM=64 BN=64 BK=64 warps=4 split_k=1\n");
    free(got);
    got = kept(m, "scale");
    /* an elementwise kernel with one integer parameter: classes n = 2^16, 2^20, 2^24 */
    cr_expect_str_eq(got, "BLOCK=256 warps=2\nBLOCK=256 warps=4\nBLOCK=256 warps=8\nBLOCK=1024 warps=2\n"
                          "BLOCK=1024 warps=4\nBLOCK=1024 warps=8\n");
    free(got);
    got = kept(m, "mm32");
    cr_expect_str_eq(got, "BM=32 BN=32 BK=8 stages=1\nBM=32 BN=64 BK=8 stages=1\nBM=64 BN=64 BK=8 stages=1\n");
    free(got);
    /* a derived hint follows each candidate's axis */
    const tilec_kernel *k = tilec_module_find_kernel(m, "mm");
    for (uint32_t v = 0; v < k->nvariants; v++)
        cr_expect_eq(tilec_kernel_hint(k, (int)v, "BK2", 0), 2 * tilec_kernel_hint(k, (int)v, "BK", 0));
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Shape classes of its own: the skinny class (M = 16) keeps split-K
 * candidates on mma.sync, the square one wgmma tiles. */
Test(tune, shape_classes_of_its_own, .timeout = 60)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/tune/skinny.tile");
    const tilec_kernel *k = tilec_module_find_kernel(m, "mm");
    cr_expect_eq(k->ntune_for, 3);
    char *got = kept(m, "mm");
    cr_expect_str_eq(got, "BM=16 BN=256 BK=64 warps=4 split_k=4 stages=4\n"
                          "BM=16 BN=256 BK=64 warps=4 split_k=4 stages=5\n"
                          "BM=128 BN=128 BK=64 warps=4 split_k=1 stages=3\n"
                          "BM=128 BN=256 BK=64 warps=8 split_k=1 stages=3\n");
    free(got);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Grammar and checker through the API: a range is half-open, the axes
 * come first among the hints, the base configuration is the first values. */
Test(tune, grammar_and_base_configuration)
{
    const char *src = "kernel s(x: *f32, n: i32) grid (cdiv(n, B)) hints { H = B / 2 }\n"
                      "    tune keep 3 { B = 128 | 512, warps = 1 .. 3, }\n"
                      "{ let o = pid(0) * B + range(B); store(x + o, load(x + o, o < n, 0.0) + cast(H, f32), o < n); }\n";
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "t.tile", src, strlen(src), &m), TILEC_OK);
    const tilec_kernel *k = tilec_module_find_kernel(m, "s");
    cr_expect_eq(k->tune_keep, 3);
    cr_expect_eq(k->ntune, 2);
    cr_expect_eq(k->tune[1].nvalues, 2, "1 .. 3 is 1, 2");
    cr_expect_eq(k->tune[1].values[1], 2);
    cr_expect_eq(k->ntune_hints, 2);
    cr_expect_str_eq(k->hints[0].name, "B");
    cr_expect_eq(k->hints[0].value, 128);
    cr_expect_eq(tilec_kernel_hint(k, -1, "H", 0), 64);
    cr_expect_eq(k->ntune_cands, 4);
    cr_expect_leq(k->nvariants, 4);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Nothing fits: an error at the tune line with the first reason, no module. */
Test(tune, nothing_fits_is_an_error)
{
    const char *src = "kernel g(a: *f16, c: *f32, M: i32)\n"
                      "    grid (cdiv(M, BM))\n"
                      "    tune { BM = 256, BN = 256, warps = 8 }\n"
                      "{ let acc = zeros(f32, BM, BN); let r = pid(0) * BM + range(BM);\n"
                      "  store(c + r[:, None] * BN + range(BN)[None, :], acc, r[:, None] < M); }\n";
    char *diags = NULL;
    cr_expect_eq(parse_text("t.tile", src, strlen(src), &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(diags && strstr(diags, "t.tile:3:5: error: no configuration of the tune space of kernel 'g' lowers and "
                                     "fits the target; the first: registers: about 288 a thread"),
              "%s", diags ? diags : "");
    free(diags);
}

/* TILEC_LOGS=tune: the report on stderr when the module is parsed. */
Test(tune, logs_on_stderr, .init = cr_redirect_stderr, .timeout = 60)
{
    setenv("TILEC_LOGS", "tune", 1);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/ok/tune.tile");
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    unsetenv("TILEC_LOGS");
    fflush(stderr);
    char buf[8192] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, cr_get_redirected_stderr());
    buf[n] = 0;
    cr_expect(strstr(buf, "kernel scale: tune at line 5: 4 configurations, 0 pruned, 2 kept"), "%s", buf);
    cr_expect(strstr(buf, "  BLOCK=256 warps=1: kept as variant 0: no dot, 32 threads"), "%s", buf);
}

/* Every kept candidate compiles with NVRTC for sm_90 (the portable
 * kernel) and sm_90a (with the wgmma + TMA twin). */
Test(tune, kept_candidates_compile_for_sm_90, .timeout = 600)
{
    static const char *const files[] = {"tests/golden/tune/dot_default.tile", "tests/golden/tune/space.tile",
                                        "tests/golden/tune/skinny.tile", "tests/golden/tune/rows_default.tile",
                                        "tests/golden/tune/elementwise_default.tile"};
    static const char *const archs[] = {"sm_90", "sm_90a"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = parse(ctx, files[f]);
        for (size_t i = 0; i < tilec_module_kernel_count(m); i++) {
            const tilec_kernel *k = tilec_module_kernel(m, i);
            for (uint32_t v = 0; v < k->nvariants; v++)
                for (size_t a = 0; a < 2; a++) {
                    tilec_kernel_code code;
                    void *cubin = NULL;
                    size_t size = 0;
                    tilec_status st = tilec_compile_kernel(ctx, m, k, (int)v, archs[a], &code, &cubin, &size);
                    membuf d = {0};
                    tilec_ctx_render_diags(ctx, membuf_sink(&d));
                    cr_expect_eq(st, TILEC_OK, "%s: %s variant %u for %s:\n%s", files[f], k->name, v, archs[a],
                                 d.s ? d.s : "");
                    cr_expect_gt(size, 0);
                    if (st == TILEC_OK)
                        tilec_kernel_code_free(&code);
                    free(cubin);
                    free(d.s);
                    tilec_ctx_clear_diags(ctx);
                }
        }
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}
