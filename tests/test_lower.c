/* test_lower.c: every variant of every kernel that passes the checker (the
 * examples and the golden inputs) lowers to CUDA C that NVRTC compiles for
 * sm_90 (no GPU needed), with the launch metadata and readable source the
 * lowering promises. */
#include <criterion/criterion.h>
#include <glob.h>

#include "helpers.h"
#include "tilec/lower.h"
#include "tilec/runtime.h"

Test(lower, every_checked_variant_compiles_for_sm_90, .timeout = 600)
{
    glob_t g;
    cr_assert_eq(glob("examples/*.tile", 0, NULL, &g), 0);
    cr_assert_eq(glob("tests/golden/ok/*.tile", GLOB_APPEND, NULL, &g), 0);
    cr_assert_eq(glob("tests/golden/ir/*.tile", GLOB_APPEND, NULL, &g), 0);
    cr_assert_eq(glob("tests/gpu/*.tile", GLOB_APPEND, NULL, &g), 0); /* the GPU suite's own kernels */
    int compiled = 0;
    for (size_t f = 0; f < g.gl_pathc; f++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        cr_assert_eq(tilec_parse_file(ctx, g.gl_pathv[f], &m), TILEC_OK, "%s", g.gl_pathv[f]);
        for (size_t i = 0; i < tilec_module_kernel_count(m); i++) {
            const tilec_kernel *k = tilec_module_kernel(m, i);
            for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++) {
                tilec_kernel_code code;
                cr_assert_eq(tilec_lower_kernel(ctx, m, k, (int)v, &code), TILEC_OK, "%s: %s variant %u", g.gl_pathv[f],
                             k->name, v);
                char want[256];
                snprintf(want, sizeof want, "%s_v%u", k->name, v);
                cr_expect_str_eq(code.name, want);
                cr_expect_eq(code.threads, 32 * tilec_kernel_hint(k, (int)v, "warps", 4));
                cr_expect_eq(code.nparams, k->nparams);
                snprintf(want, sizeof want, "// %s:", g.gl_pathv[f]);
                cr_expect(strstr(code.source, want), "no source-line comments in %s", code.name);
                void *cubin = NULL;
                size_t size = 0;
                char *log = NULL;
                tilec_rt_status st = tilec_nvrtc_compile(code.source, code.name, "sm_90", NULL, 0, &cubin, &size, &log);
                cr_expect_eq(st, TILEC_RT_OK, "%s does not compile:\n%s\n%s", code.name, log ? log : "", code.source);
                if (st == TILEC_RT_OK) {
                    cr_expect(size > 4 && memcmp(cubin, "\177ELF", 4) == 0, "%s: not a CUBIN", code.name);
                    compiled++;
                }
                free(cubin);
                free(log);
                tilec_kernel_code_free(&code);
            }
        }
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
    globfree(&g);
    cr_expect_geq(compiled, 40);
}

Test(lower, grid_follows_the_variant)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, "examples/matmul.tile", &m), TILEC_OK);
    const tilec_kernel *k = tilec_module_find_kernel(m, "matmul");
    int64_t args[6] = {0, 0, 0, 1000, 300, 64};
    uint32_t grid[3];
    cr_assert_eq(tilec_kernel_grid(k, 0, args, grid), TILEC_OK);
    cr_expect_eq(grid[0], 16); /* BM = 64 */
    cr_expect_eq(grid[1], 5);  /* BN = 64 */
    cr_expect_eq(grid[2], 1);
    cr_assert_eq(tilec_kernel_grid(k, 2, args, grid), TILEC_OK);
    cr_expect_eq(grid[0], 8); /* BM = 128 */
    cr_expect_eq(grid[1], 3);
    cr_expect_eq(tilec_kernel_grid(k, 3, args, grid), TILEC_ERR_ARG);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* A grid-stride kernel's grid min(cdiv(n, BLOCK), sms * PER_SM), PER_SM a
 * hint max(1, 16 / warps): evaluated at each launch and per variant
 * (tests/golden/ok/grid_min_max.tile). Before, min in a grid was an error. */
Test(lower, grid_takes_min_and_max)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, "tests/golden/ok/grid_min_max.tile", &m), TILEC_OK);
    const tilec_kernel *k = tilec_module_find_kernel(m, "swiglu_gs");
    cr_assert(k);
    cr_expect_eq(tilec_kernel_hint(k, 0, "PER_SM", 0), 2);
    cr_expect_eq(tilec_kernel_hint(k, 1, "PER_SM", 0), 1); /* warps = 16 */
    int64_t args[5] = {0, 0, 0, INT64_C(8192) * 14336, 132};
    uint32_t grid[3];
    cr_assert_eq(tilec_kernel_grid(k, 0, args, grid), TILEC_OK);
    cr_expect_eq(grid[0], 264); /* min(28672, 132 * 2) */
    cr_assert_eq(tilec_kernel_grid(k, 1, args, grid), TILEC_OK);
    cr_expect_eq(grid[0], 132); /* min(57344, 132 * 1) */
    args[3] = 5000;
    cr_assert_eq(tilec_kernel_grid(k, 0, args, grid), TILEC_OK);
    cr_expect_eq(grid[0], 2); /* min(cdiv(5000, 4096), 264) */
    args[3] = 0;
    cr_assert_eq(tilec_kernel_grid(k, 0, args, grid), TILEC_OK);
    cr_expect_eq(grid[0], 0); /* nothing to launch */
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The CUDA of the module in file `path` (the caller frees it). */
static char *cuda_of(const char *path)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, path, &m), TILEC_OK);
    membuf out = {0};
    cr_assert_eq(tilec_module_emit_cuda(ctx, m, membuf_sink(&out)), TILEC_OK);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return out.s;
}

/* let x: T = e (tests/golden/ok/let_types.tile): an untyped literal
 * becomes a value of T in the CUDA (the double 1e-50, the float 1, the
 * integer 1 / 2 as a float), and a typed value keeps its type. Before,
 * `let x: T` was a syntax error. */
Test(lower, let_with_a_type_binds_a_value_of_that_type)
{
    char *cu = cuda_of("tests/golden/ok/let_types.tile");
    cr_expect(strstr(cu, "const double v_eps = 1e-50;"), "%s", cu);
    cr_expect(strstr(cu, "const float v_one = ((float)(1));"));
    cr_expect(strstr(cu, "const float v_half = ((float)((1 / 2)));"));
    free(cu);
}

Test(lower, cuda_of_the_module)
{
    char *cu = cuda_of("examples/matmul.tile");
    cr_expect(strstr(cu, "__global__ void __launch_bounds__(128) matmul_v0("));
    cr_expect(strstr(cu, "__global__ void __launch_bounds__(256) matmul_v1("));
    cr_expect(strstr(cu, "__global__ void __launch_bounds__(256) matmul_v2("));
    cr_expect(strstr(cu, "tl_mma_f16("), "f16 dot must use tensor cores");
    /* one translation unit: the prelude once */
    const char *first = strstr(cu, "tl_ldsm_x4(unsigned");
    cr_expect(first && !strstr(first + 1, "tl_ldsm_x4(unsigned"));
    free(cu);
}

/* Issue 14 item 7: the file name reaches CUDA in the header comment and
 * the line markers, and doc comments reach it too. Crafted ones (newlines,
 * a comment end, quotes, backslashes, a trailing backslash that would
 * splice the next line) stay comments: the #error they carry never
 * reaches NVRTC. */
Test(lower, crafted_file_names_stay_comments, .timeout = 120)
{
    static const char *const names[] = {"a\n#error injected\n.tile", "b */ #error injected /* .tile",
                                        "c\"\\'\\\n#error injected\n\\", "d\r#error injected\\"};
    static const char src[] = "/// doc \\\n"
                              "kernel k(x: *f32, n: i32) grid (cdiv(n, 128)) hints { warps = 4 } {\n"
                              "    /// a doc */ #error injected /* \\\n"
                              "    let i = pid(0) * 128 + range(128);\n"
                              "    store(x + i, 1.0, i < n);\n"
                              "}\n";
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        cr_assert_eq(tilec_parse_string(ctx, names[f], src, strlen(src), &m), TILEC_OK, "%zu", f);
        membuf all = {0};
        cr_assert_eq(tilec_module_emit_cuda(ctx, m, membuf_sink(&all)), TILEC_OK);
        tilec_kernel_code code;
        cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_kernel(m, 0), 0, &code), TILEC_OK);
        const char *srcs[] = {all.s, code.source};
        for (int s = 0; s < 2; s++) {
            void *cubin = NULL;
            size_t size = 0;
            char *log = NULL;
            tilec_rt_status st = tilec_nvrtc_compile(srcs[s], "k_v0", "sm_90", NULL, 0, &cubin, &size, &log);
            cr_expect_eq(st, TILEC_RT_OK, "file %zu, %s:\n%s\n%s", f, s ? "kernel" : "--emit cuda", log ? log : "",
                         srcs[s]);
            free(cubin);
            free(log);
        }
        tilec_kernel_code_free(&code);
        free(all.s);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* Grids from scalar arguments are computed with overflow checks: a grid
 * that cannot be computed is an error, never a wrapped value or a trap. */
Test(lower, grid_arithmetic_cannot_overflow)
{
    static const char src[] = "kernel k(x: *f32, n: i64, m: i64) grid (GRID) hints { warps = 4 } {\n"
                              "    let i = range(128);\n"
                              "    store(x + i, 1.0, i < 1);\n"
                              "}\n";
    static const struct {
        const char *grid;
        int64_t n, m;
        tilec_status st;
        uint32_t g0;
    } cases[] = {
        {"cdiv(n, m)", INT64_MAX, INT64_MAX, TILEC_OK, 1}, /* n + m - 1 would wrap to a grid of 0 */
        {"cdiv(n, m)", INT64_MAX - 5, 4611686018427387904, TILEC_OK, 2},
        /* cdiv is the ceiling for any n and m > 0 (tilec/iexpr.h): a negative n gives a
         * negative grid, an error like any other, where the grid once clamped it to 0 */
        {"cdiv(n, m)", -5, 4, TILEC_ERR_ARG, 0},
        {"cdiv(n, m) + 2", -5, 4, TILEC_OK, 1},
        {"cdiv(n, m)", 0, 4, TILEC_OK, 0},
        {"cdiv(n, m)", 5, 0, TILEC_ERR_ARG, 0},
        {"cdiv(n, m)", 5, -1, TILEC_ERR_ARG, 0},
        {"n % m", INT64_MIN, -1, TILEC_OK, 0}, /* the remainder exists: 0 */
        {"(n & m) | 1", 12, 10, TILEC_OK, 9},
        {"n / m", INT64_MIN, -1, TILEC_ERR_ARG, 0}, /* a trap (SIGFPE) in C */
        {"-n", INT64_MIN, 1, TILEC_ERR_ARG, 0},
        {"n << m", -1, 2, TILEC_ERR_ARG, 0},
        {"n << m", 4611686018427387904, 2, TILEC_ERR_ARG, 0},
        {"n << m", 3, 2, TILEC_OK, 12},
        {"n >> m", -8, 1, TILEC_ERR_ARG, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[512];
        const char *at = strstr(src, "GRID");
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - src), src, cases[c].grid, at + 4);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        cr_assert_eq(tilec_parse_string(ctx, "g.tile", text, strlen(text), &m), TILEC_OK, "%s", text);
        const tilec_kernel *k = tilec_module_find_kernel(m, "k");
        int64_t args[3] = {0, cases[c].n, cases[c].m};
        uint32_t grid[3] = {0};
        cr_expect_eq(tilec_kernel_grid(k, 0, args, grid), cases[c].st, "grid (%s) with n = %lld, m = %lld",
                     cases[c].grid, (long long)cases[c].n, (long long)cases[c].m);
        if (cases[c].st == TILEC_OK)
            cr_expect_eq(grid[0], cases[c].g0, "grid (%s): %u", cases[c].grid, grid[0]);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* Constants follow the one integer arithmetic (docs/language.md 7.7): a
 * negative dividend of cdiv is fine, a divisor that is not positive is an
 * error naming both operands, an overflow is an error. */
Test(lower, constant_cdiv_follows_the_one_rule)
{
    static const struct {
        const char *hint, *error;
        int64_t value;
    } cases[] = {
        {"cdiv(-7, 2)", NULL, -3},
        {"cdiv(-8, 2)", NULL, -4},
        {"cdiv(7, 2) * 2", NULL, 8},
        {"(-9223372036854775807 - 1) % -1", NULL, 0}, /* INT64_MIN % -1: the remainder exists */
        {"(-9223372036854775807 - 1) / -1", "a hint value overflows a 64-bit integer", 0},
        {"cdiv(7, 0)", "cdiv in a hint value needs b > 0, got cdiv(7, 0)", 0},
        {"cdiv(7, -2)", "cdiv in a hint value needs b > 0, got cdiv(7, -2)", 0},
        {"7 / (3 - 3)", "division by zero in a hint value", 0},
        {"4611686018427387904 * 2", "a hint value overflows a 64-bit integer", 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[512];
        snprintf(text, sizeof text, "kernel k(x: *f32) grid (1) hints { warps = 4, A = %s } { store(x, 1.0); }\n",
                 cases[c].hint);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_status st = tilec_parse_string(ctx, "c.tile", text, strlen(text), &m);
        if (!cases[c].error) {
            cr_expect_eq(st, TILEC_OK, "%s", cases[c].hint);
            if (m)
                cr_expect_eq(tilec_kernel_hint(tilec_module_find_kernel(m, "k"), -1, "A", 99), cases[c].value, "%s",
                             cases[c].hint);
        } else {
            cr_expect_eq(st, TILEC_ERR_INPUT, "%s", cases[c].hint);
            cr_expect(tilec_ctx_diag_count(ctx) >= 1 && !strcmp(tilec_ctx_diag(ctx, 0)->message, cases[c].error),
                      "%s: %s", cases[c].hint, tilec_ctx_diag_count(ctx) ? tilec_ctx_diag(ctx, 0)->message : "(none)");
        }
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* The source of kernel `name`'s variant 0 lowered from `text` (freed by the caller). */
static char *lower_one(const char *text, const char *name)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "r.tile", text, strlen(text), &m), TILEC_OK, "%s", text);
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_find_kernel(m, name), 0, &code), TILEC_OK);
    char *src = strdup(code.source);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return src;
}

/* An attention-like kernel: HINTS added to its hints, EXTRA at the end of
 * its loop body. */
#define RING_KERNEL(HINTS, EXTRA)                                                          \
    "kernel a(q: *f16, k: *f16, v: *f16, o: *f16, S: i32, causal: i32)\n"                  \
    "    grid (cdiv(S, 64)) hints { BM = 64, BN = 64, D = 64, warps = 4" HINTS " }\n"      \
    "{\n"                                                                                  \
    "    let rm = pid(0) * BM + range(BM);\n"                                              \
    "    let rd = range(D);\n"                                                             \
    "    let tq = load(q + rm[:, None] * D + rd[None, :], rm[:, None] < S, 0.0);\n"        \
    "    let acc = zeros(f32, BM, D);\n"                                                   \
    "    let lim = S;\n"                                                                   \
    "    for n0 in 0 .. S step BN {\n"                                                     \
    "        let rn = n0 + range(BN);\n"                                                   \
    "        let tk = load(k + rn[None, :] * D + rd[:, None], rn[None, :] < S, 0.0);\n"    \
    "        let ok = rn[None, :] < lim && (causal == 0 || rm[:, None] >= rn[None, :]);\n" \
    "        let p = where(ok, dot(tq, tk), 0.0);\n"                                       \
    "        let tv = load(v + rn[:, None] * D + rd[None, :], rn[:, None] < S, 0.0);\n"    \
    "        acc = acc * 0.5 + dot(cast(p, f16), tv);\n" EXTRA "    }\n"                   \
    "    store(o + rm[:, None] * D + rd[None, :], cast(acc, f16), rm[:, None] < S);\n"     \
    "}\n"

/* Issue 16 item 4: with `stages`, the loads read only as a dot's B operand
 * go to cp.async rings; the body gets an unmasked copy where the mask is
 * decidable at the top of the iteration; neither where that would be wrong. */
Test(lower, ring_loop_rules, .timeout = 60)
{
    char *s = lower_one(RING_KERNEL(", stages = 2, blocks = 3", ""), "a");
    cr_expect(strstr(s, "__launch_bounds__(128, 3)"), "%s", s);
    cr_expect(strstr(s, "2-stage cp.async ring: v_tk, v_tv"), "%s", s);
    cr_expect(strstr(s, "the masks hold on the whole tile"), "%s", s);
    cr_expect(strstr(s, "v_ok: true on this tile"), "%s", s);
    cr_expect(strstr(s, "{ /* v_acc += dot"), "acc * e + dot accumulates into acc:\n%s", s);
    free(s);
    /* stages = 1: K and V through registers and staging, as before */
    s = lower_one(RING_KERNEL(", stages = 1", ""), "a");
    cr_expect(!strstr(s, "cp.async ring") && !strstr(s, "tl_cp16(tl_d"), "%s", s);
    free(s);
    /* no hint: the deepest ring of 2..4 stages that fits (lower_stages) */
    s = lower_one(RING_KERNEL("", ""), "a");
    cr_expect(strstr(s, "4-stage cp.async ring: v_tk, v_tv"), "%s", s);
    free(s);
    /* a store in the loop: no copy may be issued ahead of it */
    s = lower_one(RING_KERNEL(", stages = 2",
                              "        store(o + rm[:, None] * D + rd[None, :], cast(acc, f16), rm[:, None] < S);\n"),
                  "a");
    cr_expect(!strstr(s, "cp.async ring"), "%s", s);
    free(s);
    /* the mask reads a scalar the body assigns: the ring stays, the unmasked copy goes */
    s = lower_one(RING_KERNEL(", stages = 2", "        lim = lim / 2;\n"), "a");
    cr_expect(strstr(s, "2-stage cp.async ring"), "%s", s);
    cr_expect(!strstr(s, "the masks hold"), "%s", s);
    free(s);
    /* ... unless the assignment is a step by an invariant: lim is then S - n0 / BN, let at the top of each
     * iteration (lower/ivstep.c), and the mask is decided there */
    s = lower_one(RING_KERNEL(", stages = 2", "        lim = lim - 1;\n"), "a");
    cr_expect(strstr(s, "2-stage cp.async ring"), "%s", s);
    cr_expect(strstr(s, "const long long v_lim = (((long long)(v_lim_at0)) - ((long long)((v_n0 / v_BN))));"), "%s", s);
    cr_expect(strstr(s, "the masks hold"), "%s", s);
    free(s);
}

/* Issue 35 (the embedding scatter-add): an f32 atomic_add's chunk is 16
 * bytes of f32 whatever narrower element a load at its shape moves (f16,
 * bf16, u8), so a warp's RED.F32x4 lie side by side (lane l at bytes 16 l
 * .. 16 l + 15 of the run, each 32-byte sector filled by one request);
 * before, the chunk was 8 elements of the bf16 load and each RED filled half
 * a sector. The load then reads 4 of its elements a thread. A store beside
 * a narrow load keeps the load's 16 bytes (no atomic: unchanged), and so
 * does an atomic whose shape nothing narrower reaches. */
Test(lower, an_atomic_chunk_is_16_bytes_of_its_own_element)
{
    static const struct {
        const char *in, *vec; /* the loaded element; its 4-element access */
    } t[] = {{"bf16", "*(uint2 *)&"}, {"f16", "*(uint2 *)&"}, {"u8", "*(unsigned int *)&"}, {"f32", "*(uint4 *)&"}};
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++)
        for (int rank = 1; rank <= 2; rank++) {
            char src[1024];
            snprintf(src, sizeof src,
                     "kernel s(x: *%s, ids: *i32, y: *f32, n: i32) grid (1) hints { warps = 8 } {\n"
                     "    let c = %s;\n"
                     "    let id = %s;\n"
                     "    atomic_add(y + id * 4096 + c, cast(load(x + %s + c), f32));\n"
                     "}\n",
                     t[k].in, rank == 1 ? "range(4096)" : "range(4096)[None, :]",
                     rank == 1 ? "load(ids)" : "load(ids + range(4))[:, None]", rank == 1 ? "0" : "range(4)[:, None] * 4096");
            char *cu = lower_one(src, "s");
            cr_expect(strstr(cu, "tl_atomic_add4(tl_p, tl_v0, tl_v1, tl_v2, tl_v3);"), "%s: no vector atomic:\n%s", t[k].in, cu);
            cr_expect(strstr(cu, "const int tl_l = ((tl_j / 4) * 256 + tl_tid) * 4 + (tl_j % 4);"),
                      "%s, rank %d: the atomic's run is not 4 f32 on consecutive lanes:\n%s", t[k].in, rank, cu);
            cr_expect(!strstr(cu, "(tl_j / 8)") && !strstr(cu, "(tl_j / 16)"), "%s, rank %d: a wider chunk:\n%s", t[k].in,
                      rank, cu);
            cr_expect(strstr(cu, t[k].vec), "%s, rank %d: the load is not 4 elements at once:\n%s", t[k].in, rank, cu);
            free(cu);
        }
    char *st = lower_one("kernel c(x: *bf16, y: *f32) grid (1) hints { warps = 8 } {\n"
                         "    store(y + range(4096), cast(load(x + range(4096)), f32));\n}\n",
                         "c");
    cr_expect(strstr(st, "*(uint4 *)&") && strstr(st, "(tl_j / 8)"), "a store beside a bf16 load keeps 8:\n%s", st);
    free(st);
}

/* The registers NVRTC's ptxas gives kernel `name` of the CUDA C src (sm_90,
 * no GPU needed): `--ptxas-options=-v` puts "Used N registers" in the log. */
static int registers_of(const char *src, const char *name)
{
    const char *opt[] = {"--ptxas-options=-v"};
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    cr_assert_eq(tilec_nvrtc_compile(src, name, "sm_90", opt, 1, &cubin, &size, &log), TILEC_RT_OK, "%s\n%s",
                 log ? log : "", src);
    const char *u = log ? strstr(log, "Used ") : NULL;
    int regs = u ? atoi(u + 5) : -1;
    free(cubin);
    free(log);
    cr_assert_gt(regs, 0, "no register count in the ptxas log");
    return regs;
}

/* A layernorm of ROWS rows a program in the 2-D [ROWS, BLOCK] form of
 * bench/harness/rows_tuned.tile (the default row space's candidates). */
#define ROWS_LN(GRID, HINTS, R, CMP)                                                                        \
    "kernel ln(x: *f32, w: *f32, b: *f32, y: *f32, rows: i32, cols: i32, eps: f32)\n"                         \
    "    grid (" GRID ") hints { " HINTS ", BLOCK = 1024, warps = 4 }\n"                                      \
    "{\n"                                                                                                     \
    "    let r = " R ";\n"                                                                                    \
    "    let base = r[:, None] * cols;\n"                                                                     \
    "    let rm = " CMP ";\n"                                                                                 \
    "    let n = cast(cols, f32);\n"                                                                          \
    "    if cols <= BLOCK {\n"                                                                                \
    "        let c = range(BLOCK);\n"                                                                         \
    "        let m = rm && c[None, :] < cols;\n"                                                              \
    "        let v = load(x + base + c[None, :], m, 0.0);\n"                                                  \
    "        let mean = sum(v, 1) / n;\n"                                                                     \
    "        let d = where(m, v - mean[:, None], 0.0);\n"                                                     \
    "        let rstd = rsqrt(sum(d * d, 1) / n + eps);\n"                                                    \
    "        store(y + base + c[None, :], d * rstd[:, None] * load(w + c, c < cols, 0.0)[None, :]\n"          \
    "              + load(b + c, c < cols, 0.0)[None, :], m);\n"                                              \
    "    } else {\n"                                                                                          \
    "        let acc = zeros(f32, ROWS, BLOCK);\n"                                                            \
    "        for c0 in 0 .. cols step BLOCK {\n"                                                              \
    "            let c = c0 + range(BLOCK);\n"                                                                \
    "            acc = acc + load(x + base + c[None, :], rm && c[None, :] < cols, 0.0);\n"                    \
    "        }\n"                                                                                             \
    "        let mean = (sum(acc, 1) / n)[:, None];\n"                                                        \
    "        let sq = zeros(f32, ROWS, BLOCK);\n"                                                             \
    "        for c0 in 0 .. cols step BLOCK {\n"                                                              \
    "            let c = c0 + range(BLOCK);\n"                                                                \
    "            let m = rm && c[None, :] < cols;\n"                                                          \
    "            let d = where(m, load(x + base + c[None, :], m, 0.0) - mean, 0.0);\n"                        \
    "            sq = sq + d * d;\n"                                                                          \
    "        }\n"                                                                                             \
    "        let rstd = rsqrt(sum(sq, 1) / n + eps)[:, None];\n"                                              \
    "        for c0 in 0 .. cols step BLOCK {\n"                                                              \
    "            let c = c0 + range(BLOCK);\n"                                                                \
    "            let m = rm && c[None, :] < cols;\n"                                                          \
    "            let v = (load(x + base + c[None, :], m, 0.0) - mean) * rstd;\n"                              \
    "            store(y + base + c[None, :], v * load(w + c, c < cols, 0.0)[None, :]\n"                       \
    "                  + load(b + c, c < cols, 0.0)[None, :], m);\n"                                            \
    "        }\n"                                                                                             \
    "    }\n"                                                                                                 \
    "}\n"

/* Issue 31: a one-row program's row check, r < rows with
 * r = pid(0) * ROWS + range(ROWS) under grid (cdiv(rows, ROWS)), ROWS = 1,
 * holds in every program the grid launches; kept, it made the 2-D layernorm
 * 53 registers against the one-row kernel's 40 (9 blocks a multiprocessor
 * against 12). Any bound check K * pid(a) + t < n, t <= 0, under grid
 * axis a = cdiv(n, G) with K <= G (or n itself) goes; a check that can
 * fail stays: two rows a program, an offset past the program's first row,
 * K > G, a grid of another bound. */
Test(lower, a_bound_check_the_grid_proves_costs_nothing, .timeout = 120)
{
    static const struct {
        const char *src;
        int kept; /* the row check stays in the CUDA C */
    } t[] = {
        {ROWS_LN("cdiv(rows, ROWS)", "ROWS = 1", "pid(0) * ROWS + range(ROWS)", "r[:, None] < rows"), 0},
        {ROWS_LN("cdiv(rows, ROWS)", "ROWS = 1", "pid(0) * ROWS + range(ROWS)", "rows > r[:, None]"), 0},
        {ROWS_LN("rows", "ROWS = 1", "pid(0) + range(ROWS)", "r[:, None] < rows"), 0},
        {ROWS_LN("cdiv(rows, 4)", "ROWS = 1", "pid(0) * 2 + range(ROWS)", "r[:, None] < rows"), 0},
        {ROWS_LN("cdiv(rows, ROWS)", "ROWS = 2", "pid(0) * ROWS + range(ROWS)", "r[:, None] < rows"), 1},
        {ROWS_LN("cdiv(rows, ROWS)", "ROWS = 1", "pid(0) * ROWS + range(ROWS) + 1", "r[:, None] < rows"), 1},
        {ROWS_LN("cdiv(rows, 2)", "ROWS = 1", "pid(0) * 4 + range(ROWS)", "r[:, None] < rows"), 1},
        {ROWS_LN("cdiv(cols, ROWS)", "ROWS = 1", "pid(0) * ROWS + range(ROWS)", "r[:, None] < rows"), 1},
        {ROWS_LN("cdiv(rows, ROWS)", "ROWS = 1", "pid(0) * ROWS + range(ROWS)", "r[:, None] <= rows"), 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char *cu = lower_one(t[i].src, "ln");
        const char *body = strstr(cu, "__global__");
        body = body ? strchr(body, '{') : NULL; /* after the parameters */
        int kept = body && strstr(body, "v_rows");
        cr_expect_eq(kept, t[i].kept, "case %zu: the row check %s:\n%s", i, kept ? "stays" : "is gone", cu);
        free(cu);
    }
    /* what it costs: the one-row kernel's registers (examples/layernorm.tile,
     * BLOCK = 1024, warps = 4), give or take two */
    char *two = lower_one(t[0].src, "ln");
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, "examples/layernorm.tile", &m), TILEC_OK);
    tilec_kernel_code one;
    cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_find_kernel(m, "layernorm"), 0, &one), TILEC_OK);
    int r2 = registers_of(two, "ln_v0"), r1 = registers_of(one.source, "layernorm_v0");
    cr_expect_leq(r2, r1 + 2, "the 2-D one-row layernorm takes %d registers, the one-row kernel %d", r2, r1);
    tilec_kernel_code_free(&one);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    free(two);
}

/* Variant 0 of kernel `r` in text: its CUDA source, then its remarks (freed by the caller). */
static char *lower_with_remarks(const char *text)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "o.tile", text, strlen(text), &m), TILEC_OK, "%s", text);
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_find_kernel(m, "r"), 0, &code), TILEC_OK, "%s", text);
    size_t a = strlen(code.source), b = strlen(code.remarks);
    char *s = malloc(a + b + 1);
    memcpy(s, code.source, a);
    memcpy(s + a, code.remarks, b + 1);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return s;
}

/* A loop over keys whose bound is set by DEFS and spelt HI, from LO. */
#define ORDER_KERNEL(DEFS, LO, HI)                                                                 \
    "kernel r(x: *f32, y: *f32, S: i32, causal: i32)\n"                                            \
    "    grid (cdiv(S, BM)) hints { BM = 64, warps = 4 }\n"                                        \
    "{\n"                                                                                          \
    "    let rm = pid(0) * BM + range(BM);\n"                                                      \
    "    let acc = zeros(f32, BM);\n" DEFS "    for n0 in " LO " .. " HI " {\n"                    \
    "        acc = acc + load(x + n0 + rm, rm < S, 0.0);\n"                                        \
    "    }\n"                                                                                      \
    "    store(y + rm, acc, rm < S);\n"                                                            \
    "}\n"

/* Issue 30 (attention at S = 1024 and 4096): where every loop's trip count
 * is a nondecreasing function of pid(0) and one's grows (causal attention's
 * `hi = minimum(S, (pid(0) + 1) * BM)`), pid(0) is read in reverse so the
 * blocks with the most steps start first (lower/order.c); decided from what
 * the bound does as pid(0) grows, however it is spelt, and not where a
 * bound may shrink, may move either way, or is set under (or picked by a
 * `where` of) a test of pid(0). */
Test(lower, launch_order_reverses_where_the_loops_grow_with_pid0)
{
    static const struct {
        const char *defs, *lo, *hi;
        int rev;
    } cases[] = {
        {"    let hi = S;\n    if causal != 0 {\n        hi = minimum(S, (pid(0) + 1) * BM);\n    }\n", "0", "hi", 1},
        {"    let end = BM + BM * pid(0);\n", "0", "minimum(end, S)", 1},
        {"    let lo = 0 - pid(0);\n", "lo", "S", 1},                  /* the start falls: more steps */
        {"", "0", "S", 0},                                                /* every block the same */
        {"", "pid(0) * BM", "S", 0},                                      /* fewer steps as pid(0) grows */
        {"    let hi = (pid(0) % 2) * BM;\n", "0", "hi", 0},             /* either way */
        {"    let hi = S;\n    if pid(0) > 2 {\n        hi = (pid(0) + 1) * BM;\n    }\n", "0", "hi", 0}, /* under a test of pid(0) */
        {"    let hi = S;\n    hi = hi - pid(0);\n", "0", "minimum(hi, (pid(0) + 1) * BM)", 0}, /* a part shrinks */
        /* a scalar where: a test pid(0) does not move picks one side throughout (fa_d64_lets) */
        {"    let on = causal != 0;\n    let hi = where(on, minimum((pid(0) + 1) * BM, S), S);\n", "0", "hi", 1},
        {"", "0", "where(causal != 0, S, S - pid(0))", 0},                      /* one side shrinks */
        {"", "0", "where(pid(0) > 2, S, (pid(0) + 1) * BM)", 0},                 /* the test moves */
        /* a definition reading the name itself: its previous value (fa_d64_exp2's `nblk`) */
        {"    let nb = cdiv(S, BM);\n    if causal != 0 {\n        nb = minimum(nb, pid(0) + 1);\n    }\n", "0", "nb", 1},
        {"    let nb = S;\n    nb = nb - pid(0);\n", "0", "nb", 0}, /* falls */
        {"    let nb = S;\n    nb = minimum(nb, pid(0));\n    nb = nb - pid(0);\n", "0", "nb", 0}, /* either way */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text, ORDER_KERNEL("%s", "%s", "%s"), cases[i].defs, cases[i].lo, cases[i].hi);
        char *s = lower_with_remarks(text);
        int rev = strstr(s, "((int)gridDim.x - 1 - (int)blockIdx.x)") != NULL;
        cr_expect_eq(rev, cases[i].rev, "case %zu:\n%s\n%s", i, text, s);
        cr_expect_eq(strstr(s, "launch order: pid(0) reversed") != NULL, cases[i].rev, "case %zu:\n%s", i, s);
        cr_expect_eq(strstr(s, "blockIdx.x") != NULL, 1, "case %zu", i);
        free(s);
    }
}
