/* test_numerics.c: issue 35's numeric defects, as text and as values.
 * A cast gives a value of its type wherever it stands (cast(cast(v, bf16),
 * f32) was v unrounded; u8 arithmetic was computed, and compared, in int)
 * and an untyped float literal is spelt in the float type it meets (0.9
 * beside an f64 was (double)(0.9f), 1e-50 was 0 and 1e300 did not compile).
 * The values are computed on this machine: the CUDA C that tilec generates
 * for tests/gpu/numerics.tile is compiled by the host C++ compiler with
 * CUDA's own half-precision headers (tests/host_cuda.h) and run with a host
 * thread per CUDA thread (barriers and shuffles emulated); tests/test_gpu_kernels.c runs the same kernels on a GPU. */
#define _DEFAULT_SOURCE 1
#include <math.h>
#include <criterion/criterion.h>
#include <unistd.h>

#include "fs_helpers.h"
#include "gpu_helpers.h"
#include "numerics_ref.h"
#include "util/strbuf.h"

#define FILE_ "tests/gpu/numerics.tile"

/* The CUDA C (or with `layouts`, the --emit layouts report) of kernel
 * (variant 0) of file; free() it. */
static char *lowered(const char *file, const char *kernel, int layouts, uint32_t *threads)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, file, &m), TILEC_OK);
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_find_kernel(m, kernel), 0, &code), TILEC_OK, "%s", kernel);
    char *src = strdup(layouts ? code.layouts : code.source);
    if (threads)
        *threads = code.threads;
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return src;
}

static char *cuda_of(const char *kernel, uint32_t *threads) { return lowered(FILE_, kernel, 0, threads); }

/* Build kernel's CUDA C with the host C++ compiler and run `body` (C++
 * that calls kernel_v0 through LAUNCH(blocks, args...) and prints values
 * with printf); its standard output, which the caller frees. */
static char *host_run_in(const char *file, const char *kernel, const char *body)
{
    uint32_t threads = 0;
    char *src = lowered(file, kernel, 0, &threads);
    char inc[1024];
    cr_assert_eq(tilec_nvrtc_include_dir(inc, sizeof inc), TILEC_RT_OK);
    cr_assert(inc[0], "no CUDA include directory (cuda_fp16.h)");
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    write_in(dir, "kernel.cu", src);
    size_t cap = strlen(body) + 1024;
    char *main_ = malloc(cap);
    cr_assert(main_);
    int len = snprintf(main_, cap,
                       "#include <cstdio>\n#include \"kernel.cu\"\n"
                       "#define LAUNCH(blocks, ...) tl_host_launch((blocks), %u, [&] { %s_v0(__VA_ARGS__); })\n"
                       "int main(void) {\n%s\nreturn 0;\n}\n",
                       threads, kernel, body);
    cr_assert(len > 0 && (size_t)len < cap);
    write_in(dir, "main.cpp", main_);
    char *out, cwd[2048];
    cr_assert(getcwd(cwd, sizeof cwd));
    int st = sh(&out, "c++ -std=c++17 -O1 -w -pthread -include '%s/tests/host_cuda.h' -I'%s' -o %s/run %s/main.cpp", cwd, inc, dir, dir);
    cr_assert_eq(st, 0, "the host C++ compiler rejects the CUDA C of %s:\n%s", kernel, out);
    free(out);
    st = sh(&out, "%s/run", dir);
    cr_assert_eq(st, 0, "%s on the host: %s", kernel, out);
    rm_dir(dir);
    free(main_);
    free(src);
    return out;
}

static char *host_run(const char *kernel, const char *body) { return host_run_in(FILE_, kernel, body); }

/* The next number of text (strtod), advancing *s. */
static double next_num(const char **s)
{
    char *end;
    double v = strtod(*s, &end);
    cr_assert(end != *s, "expected a number at '%.20s'", *s);
    *s = end;
    return v;
}


#define N 300
static const float special[] = {1.00390625f, 1.01171875f, 1.00400627f, -2.71828f, 3.14159265f, 65519.0f, 65520.0f,
                                1e-6f,       -1e-7f,      0.1f,        0.0f,      -0.0f,       3e38f,    1.0f};

Test(numerics, cast_rounds_wherever_it_stands)
{
    char body[4096];
    int n = snprintf(body, sizeof body, "static float x[%d], w[%d], out[6 * %d];\nstatic const float sp[] = {", N, N, N);
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        n += snprintf(body + n, sizeof body - (size_t)n, "%a, ", (double)special[i]);
    snprintf(body + n, sizeof body - (size_t)n,
             "};\nunsigned long long s = 88172645463325252ull;\n"
             "for (int i = 0; i < %d; i++) { s ^= s << 13; s ^= s >> 7; s ^= s << 17;\n"
             "  x[i] = i < (int)(sizeof sp / sizeof sp[0]) ? sp[i] : (float)((double)(s >> 11) / 9007199254740992.0 * 8 - 4);\n"
             "  w[i] = (float)((double)(s >> 20) / 17592186044416.0); }\n"
             "LAUNCH(3, x, w, out, %d);\n"
             "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)x[i]);\n"
             "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)w[i]);\n"
             "for (int i = 0; i < 6 * %d; i++) printf(\"%%a \", (double)out[i]);\n",
             N, N, N, N, N);
    char *out = host_run("rounding", body);
    const char *s = out;
    float x[N], w[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)next_num(&s);
    for (int i = 0; i < N; i++)
        w[i] = (float)next_num(&s);
    cr_expect_eq(ref_bf16(1.00390625f), 1.0f); /* the reference rounds ties to even */
    cr_expect_eq(ref_f16(65520.0f), INFINITY);
    static const char *const what[] = {"cast(cast(v, bf16), f32)", "cast(cast(v, f16), f32)", "in where",
                                       "through a let",            "w * cast(v, bf16)",       "from f64, and i < v"};
    for (int k = 0; k < 6; k++)
        for (int i = 0; i < N; i++) {
            float v = x[i], want;
            switch (k) {
            case 0: case 3: want = ref_bf16(v); break;
            case 1: want = ref_f16(v); break;
            case 2: want = v > 0.0f ? ref_bf16(v) : ref_f16(v); break;
            case 4: want = w[i] * ref_bf16(v); break;
            default: want = ref_bf16(v) + (float)((float)(i % 128) < v * 128.0f); break;
            }
            float got = (float)next_num(&s);
            cr_expect(memcmp(&got, &want, 4) == 0, "%s: v = %a gives %a, want %a", what[k], (double)v, (double)got,
                      (double)want);
        }
    free(out);
}

/* sigmoid (tl_sigmoid) against a double reference over the sweep: within
 * SIGMOID_ULPS in f32 and 2 ulp in f64, 0 at -inf, 1 at +inf, NaN at NaN,
 * 1/2 at -0, and its subnormals (x < -87.3) kept, not flushed to 0 (the
 * CPU's division stands for the GPU's reciprocal: tests/test_gpu_kernels.c
 * checks the same bound there). */
Test(numerics, sigmoid_within_its_bound)
{
    float x[SIGMOID_N];
    int n = sigmoid_sweep(x);
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "static float x[%d], out[%d];\nstatic double xd[%d], outd[%d];\nstatic const unsigned bits[] = {", n, n,
              n, n);
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        sb_printf(&b, "%#xu, ", u);
    }
    sb_printf(&b, "};\nfor (int i = 0; i < %d; i++) { memcpy(&x[i], &bits[i], 4); xd[i] = x[i]; }\n"
                  "LAUNCH(%d, x, xd, out, outd, %d);\n"
                  "for (int i = 0; i < %d; i++) printf(\"%%a %%a \", (double)out[i], outd[i]);\n",
              n, (n + 127) / 128, n, n);
    cr_assert(!b.failed);
    char *out = host_run("sigmoids", sb_str(&b));
    sb_free(&b);
    const char *s = out;
    double worst = 0, worst_d = 0;
    for (int i = 0; i < n; i++) {
        float got = (float)next_num(&s);
        double gotd = next_num(&s);
        double u = sigmoid_ulps(x[i], got), ud = sigmoid_ulps_f64(x[i], gotd);
        cr_expect(u <= SIGMOID_ULPS, "sigmoid(%a) = %a (f32): %g ulp from the double reference", (double)x[i],
                  (double)got, u);
        cr_expect(ud <= 2.0, "sigmoid(%a) = %a (f64): %g ulp", (double)x[i], gotd, ud);
        worst = u > worst ? u : worst;
        worst_d = ud > worst_d ? ud : worst_d;
        if (isinf(x[i]))
            cr_expect(got == (x[i] > 0 ? 1.0f : 0.0f) && gotd == (x[i] > 0 ? 1.0 : 0.0), "sigmoid(%g) = %a, %a",
                      (double)x[i], (double)got, gotd);
        if (isnan(x[i]))
            cr_expect(isnan(got) && isnan(gotd), "sigmoid(NaN) = %a, %a", (double)got, gotd);
        if (x[i] == -88.0f)
            cr_expect(got > 0.0f && gotd > 0.0, "sigmoid(-88) = %a is a subnormal, not 0", (double)got);
    }
    cr_log_info("sigmoid: worst %g ulp (f32), %g ulp (f64) over %d values", worst, worst_d, n);
    free(out);
}

Test(numerics, narrow_integers_wrap)
{
    static const int a[] = {0, 1, 11, 127, 128, 200, 255, 256, 300, -1, -128, -129, 1000, 2147483647, -2147483647 - 1};
    static const float f[] = {3.7f, -3.7f, 0.5f, -0.5f, 100.9f, -100.9f, 0.0f, 2147483520.0f, -2147483648.0f, 1e-3f,
                              7.0f, -7.0f, 65535.5f, 1.5f, -1.5f};
    const int n = (int)(sizeof a / sizeof a[0]);
    char body[2048];
    int k = snprintf(body, sizeof body, "static int a[] = {");
    for (int i = 0; i < n; i++)
        k += snprintf(body + k, sizeof body - (size_t)k, "%d, ", a[i]);
    k += snprintf(body + k, sizeof body - (size_t)k, "};\nstatic float f[] = {");
    for (int i = 0; i < n; i++)
        k += snprintf(body + k, sizeof body - (size_t)k, "%a, ", (double)f[i]);
    snprintf(body + k, sizeof body - (size_t)k,
             "};\nstatic int out[5 * %d];\nLAUNCH(1, a, f, out, %d);\n"
             "for (int i = 0; i < 5 * %d; i++) printf(\"%%d \", out[i]);\n",
             n, n, n);
    char *out = host_run("narrow", body);
    const char *s = out;
    static const char *const what[] = {"u + u (u8)", "u * u > 100 (u8)", "i64 to i32", "f32 to i32", "abs(-i8) (i8)"};
    for (int j = 0; j < 5; j++)
        for (int i = 0; i < n; i++) {
            uint8_t u = (uint8_t)a[i];
            int8_t c = (int8_t)a[i], ng = (int8_t)-c;
            long want = j == 0   ? (uint8_t)(u + u)
                        : j == 1 ? (uint8_t)(u * u) > 100
                        : j == 2 ? a[i]
                        : j == 3 ? (long)truncf(f[i])
                                 : (int8_t)(ng < 0 ? -ng : ng);
            long got = (long)next_num(&s);
            cr_expect_eq(got, want, "%s: a = %d, f = %a gives %ld, want %ld", what[j], a[i], (double)f[i], got, want);
        }
    free(out);
}

/* 0.9, 1e-50, 1e300 and 0.1 beside an f64 are doubles (7.1). */
Test(numerics, f64_literals_are_doubles)
{
    char *out = host_run("literals", "static double out[16];\n"
                                     "LAUNCH(1, 1.0, 0.0, out);\nLAUNCH(1, 1.0, 0.1, out + 8);\n"
                                     "for (int i = 0; i < 16; i++) printf(\"%a \", out[i]);\n");
    volatile double tenth = 0.1; /* 0.1 + 2.0 in double, as the kernel adds */
    const double want[16] = {0.9, 1e-50, 1e300, 0.1, 0.1, 0.0, 1e-300, 1e-300,
                             0.9, 0.1, 1e300, 0.1, 0.1, 0.0, tenth + 2.0, tenth + 2.0};
    const char *s = out;
    for (int i = 0; i < 16; i++) {
        double got = next_num(&s);
        cr_expect(got == want[i], "out[%d] = %.17g, want %.17g (s = 1, t = %s)", i, got, want[i], i < 8 ? "0" : "0.1");
    }
    free(out);
    char *src = cuda_of("literals", NULL);
    cr_expect(strstr(src, "(v_s * 0.90000000000000002)") && strstr(src, "(v_t + 1e-50)") &&
                  strstr(src, "(v_s * 1.0000000000000001e+300)") && !strstr(src, "0.9f") && !strstr(src, "(double)(0.1f)"),
              "the f64 literals are not spelt as doubles:\n%s", src);
    free(src);
}

/* The spelling of a cast's rounding in each place a cast can stand, and of
 * literals of f16 (the literal rounded to f16 once, 0.1 -> 0.0999755859). */
Test(numerics, golden_text)
{
    char *src = cuda_of("rounding", NULL);
    cr_expect(strstr(src, "const float tl_v0 = __bfloat162float(__float2bfloat16_rn(v_v[tl_j]));"), "%s", src);
    cr_expect(strstr(src, "const float tl_v0 = __half2float(__float2half_rn(v_v[tl_j]));"), "%s", src);
    cr_expect(strstr(src, "__bfloat162float(__double2bfloat16(((double)(v_v[tl_j]))))"), "%s", src);
    cr_expect(strstr(src, "(((float)(tl_i0)) < (v_v[tl_j] * 128.0f))"), "i < v compares in f32:\n%s", src);
    free(src);
    src = cuda_of("rounding_sum", NULL);
    cr_expect(strstr(src, "= __bfloat162float(__float2bfloat16_rn("), "the reduction's operand:\n%s", src);
    free(src);
    src = cuda_of("half_literal", NULL);
    cr_expect(strstr(src, "* 0.0999755859f)"), "0.1 beside an f16 is the f16 0.1:\n%s", src);
    free(src);
    src = cuda_of("narrow", NULL);
    cr_expect(strstr(src, "((unsigned char)(v_u[tl_j] + v_u[tl_j]))"), "%s", src);
    free(src);
}

/* A scalar f16/bf16 let, its re-assignments (a loop-carried scalar) and a
 * virtual tile bound by a let hold values of their type, as a tile let's
 * registers of the type do: before, `let b = cast(s, bf16) * 3.0` held the
 * float product, `acc = acc + b` summed in float, and full(bf16, s, n) held
 * s itself. */
Test(numerics, scalar_lets_round)
{
    static const float ss[] = {1.01171875f, 0.1f, -2.71828f, 3.14159265f, 1000.7f, 1e-3f, 7.0f, 21845.3f};
    enum { NS = sizeof ss / sizeof ss[0] };
    char body[2048];
    int k = snprintf(body, sizeof body, "static const float ss[] = {");
    for (int i = 0; i < NS; i++)
        k += snprintf(body + k, sizeof body - (size_t)k, "%a, ", (double)ss[i]);
    snprintf(body + k, sizeof body - (size_t)k,
             "};\nstatic float out[24];\n"
             "for (int i = 0; i < %d; i++) { LAUNCH(1, ss[i], out); for (int j = 0; j < 24; j++) printf(\"%%a \", (double)out[j]); }\n",
             NS);
    char *out = host_run("scalar_round", body);
    const char *s = out;
    for (int i = 0; i < NS; i++) {
        float want[SCALAR_ROUND_N], got[24];
        scalar_round_want(ss[i], want);
        for (int j = 0; j < 24; j++)
            got[j] = (float)next_num(&s);
        for (int j = 0; j < SCALAR_ROUND_N; j++)
            cr_expect(memcmp(&got[j], &want[j], 4) == 0, "%s: s = %a gives %a, want %a", scalar_round_what[j],
                      (double)ss[i], (double)got[j], (double)want[j]);
        for (int j = 8; j < 24; j++)
            cr_expect(memcmp(&got[j], &want[0], 4) == 0, "full(bf16, s, 16) * 3.0 through a let: s = %a gives %a, want %a",
                      (double)ss[i], (double)got[j], (double)want[0]);
    }
    free(out);
}

/* b started with the C++ of `static float x[512] = {...};` holding x. */
static void floats_decl(strbuf *b, const float *x)
{
    sb_init(b);
    sb_printf(b, "static float x[512] = {");
    for (int i = 0; i < 512; i++)
        sb_printf(b, "%a, ", (double)x[i]);
    sb_printf(b, "};\n");
}

/* prod along a register axis (shuffles), along the axis the warps split
 * (shared memory), to a scalar and of a replicated tile; integer products
 * wrap to their type (item 6 of issue 35). */
Test(numerics, prod_reduces)
{
    float x[512];
    int32_t y[512], oi[32];
    double want[53];
    prods_inputs(x, y, 88172645463325252ull);
    prods_want(x, y, want, oi);
    strbuf b;
    floats_decl(&b, x);
    sb_printf(&b, "static int y[512] = {");
    for (int i = 0; i < 512; i++)
        sb_printf(&b, "%d, ", y[i]);
    sb_printf(&b, "};\nstatic float out[53];\nstatic int oi[32];\nLAUNCH(1, x, y, out, oi);\n"
                  "for (int i = 0; i < 53; i++) printf(\"%%a \", (double)out[i]);\n"
                  "for (int i = 0; i < 32; i++) printf(\"%%d \", oi[i]);\n");
    cr_assert(!b.failed);
    char *out = host_run("prods", sb_str(&b));
    sb_free(&b);
    const char *s = out;
    for (int i = 0; i < 53; i++) {
        double got = next_num(&s);
        cr_expect(fabs(got - want[i]) <= 1e-5 * fabs(want[i]), "prod out[%d] = %.9g, want %.9g", i, got, want[i]);
    }
    for (int i = 0; i < 32; i++) {
        long got = (long)next_num(&s);
        cr_expect_eq(got, (long)oi[i], "prod oi[%d] (%s) = %ld, want %d", i, i < 16 ? "i32" : "u8", got, oi[i]);
    }
    free(out);
    char *src = cuda_of("prods", NULL);
    cr_expect(strstr(src, "tl_r[tl_j] = ((float)1);") && strstr(src, "tl_a = ((float)1);") &&
                  strstr(src, "tl_r[tl_j] = tl_r[tl_j] * tl_x;"),
              "prod's identity and step:\n%s", src);
    free(src);
}

/* Element picks: constant and run-time indices (clamped: -5 and 99 pick
 * the first and the last), of a register tile, a virtual tile and a row
 * statistic (item 6 of issue 35). */
Test(numerics, picks)
{
    static const int ij[][2] = {{0, 0}, {7, 13}, {15, 31}, {-5, 99}, {99, -5}, {4, 31}};
    enum { NP = sizeof ij / sizeof ij[0] };
    float x[512];
    int32_t y[512];
    prods_inputs(x, y, 1234567ull);
    strbuf b;
    floats_decl(&b, x);
    sb_printf(&b, "static const int ij[][2] = {");
    for (int i = 0; i < NP; i++)
        sb_printf(&b, "{%d, %d}, ", ij[i][0], ij[i][1]);
    sb_printf(&b, "};\nstatic float out[20];\nfor (int k = 0; k < %d; k++) {\n"
                  "LAUNCH(1, x, out, ij[k][0], ij[k][1]);\nfor (int i = 0; i < 20; i++) printf(\"%%a \", (double)out[i]); }\n",
              NP);
    cr_assert(!b.failed);
    char *out = host_run("picks", sb_str(&b));
    sb_free(&b);
    const char *s = out;
    for (int k = 0; k < NP; k++) {
        float want[20];
        picks_want(x, ij[k][0], ij[k][1], want);
        for (int i = 0; i < 20; i++) {
            float got = (float)next_num(&s);
            cr_expect(memcmp(&got, &want[i], 4) == 0, "picks(i = %d, j = %d) out[%d] = %a, want %a", ij[k][0], ij[k][1], i,
                      (double)got, (double)want[i]);
        }
    }
    free(out);
}

/* Slices of a register tile (constant bounds and steps, mixed with a pick
 * and None), of a virtual tile, a row statistic and a pointer tile, and a
 * run-time row of a sliced product (item 6 of issue 35). */
Test(numerics, slices)
{
    static const int rows[] = {0, 3, 7, -2, 40};
    enum { NR = sizeof rows / sizeof rows[0] };
    float x[512];
    int32_t y[512];
    prods_inputs(x, y, 7654321ull);
    strbuf b;
    floats_decl(&b, x);
    sb_printf(&b, "static const int rows[] = {");
    for (int i = 0; i < NR; i++)
        sb_printf(&b, "%d, ", rows[i]);
    sb_printf(&b, "};\nstatic float out[336];\nfor (int k = 0; k < %d; k++) {\n"
                  "LAUNCH(1, x, out, rows[k]);\nfor (int i = 0; i < 336; i++) printf(\"%%a \", (double)out[i]); }\n",
              NR);
    cr_assert(!b.failed);
    char *out = host_run("slices", sb_str(&b));
    sb_free(&b);
    const char *s = out;
    for (int k = 0; k < NR; k++) {
        float want[336];
        slices_want(x, rows[k], want);
        for (int i = 0; i < 336; i++) {
            float got = (float)next_num(&s);
            cr_expect(memcmp(&got, &want[i], 4) == 0, "slices(i = %d) out[%d] = %a, want %a", rows[k], i, (double)got,
                      (double)want[i]);
        }
    }
    free(out);
}

/* RoPE: rows of cos and sin broadcast against [16, 32] halves (item 7 of
 * issue 35). The broadcast rows are loaded in the slice of the halves'
 * layout, so the kernel has no shared memory and no __syncthreads (it had
 * 8 and 256 bytes when the rows were loaded in their own layout), and its
 * values match the CPU's for a ragged row count. */
Test(numerics, rope_broadcast_in_registers)
{
    char *src = cuda_of("rope", NULL);
    cr_expect(!strstr(src, "__syncthreads"), "the RoPE kernel synchronizes:\n%s", src);
    cr_expect(!strstr(src, "tl_smem +"), "the RoPE kernel uses shared memory:\n%s", src);
    free(src);
    static float x[48 * 64], cs[32], sn[32], want[48 * 64];
    rope_inputs(x, cs, sn, 99ull);
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "static float x[%d] = {", 48 * 64);
    for (int i = 0; i < 48 * 64; i++)
        sb_printf(&b, "%a, ", (double)x[i]);
    sb_printf(&b, "};\nstatic float cs[32] = {");
    for (int i = 0; i < 32; i++)
        sb_printf(&b, "%a, ", (double)cs[i]);
    sb_printf(&b, "};\nstatic float sn[32] = {");
    for (int i = 0; i < 32; i++)
        sb_printf(&b, "%a, ", (double)sn[i]);
    sb_printf(&b, "};\nstatic float out[%d];\nLAUNCH(3, x, cs, sn, out, 40);\n"
                  "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)out[i]);\n",
              48 * 64, 48 * 64);
    cr_assert(!b.failed);
    char *out = host_run("rope", sb_str(&b));
    sb_free(&b);
    rope_want(x, cs, sn, 40, want);
    const char *s = out;
    for (int i = 0; i < 48 * 64; i++) {
        float got = (float)next_num(&s), w = i < 40 * 64 ? want[i] : 0.0f;
        cr_expect(fabsf(got - w) <= 1e-5f * (1.0f + fabsf(w)), "rope out[%d] = %a, want %a", i, (double)got, (double)w);
    }
    free(out);
}

/* Reshapes of a register tile (to 2-D, 1-D and 3-D shapes, through size-1
 * axes, before a reduction), of a pointer tile (stored through and loaded
 * from) and of a virtual tile, in row-major order (item 6 of issue 35). */
Test(numerics, reshapes)
{
    float x[512], want[3200];
    int32_t y[512];
    prods_inputs(x, y, 7654321ull);
    strbuf b;
    floats_decl(&b, x);
    sb_printf(&b, "static float out[3200];\nLAUNCH(1, x, out);\nfor (int i = 0; i < 3200; i++) printf(\"%%a \", "
                  "(double)out[i]);\n");
    cr_assert(!b.failed);
    char *out = host_run("reshapes", sb_str(&b));
    sb_free(&b);
    const char *s = out;
    reshapes_want(x, want);
    for (int i = 0; i < 3200; i++) {
        float got = (float)next_num(&s);
        cr_expect(memcmp(&got, &want[i], 4) == 0, "reshapes out[%d] = %a, want %a", i, (double)got, (double)want[i]);
    }
    free(out);
    /* --emit layouts says where a register tile goes through shared memory */
    char *lay = lowered(FILE_, "reshapes", 1, NULL);
    cr_expect(strstr(lay, "a reshape of a register tile (read from shared memory)"), "%s", lay);
    free(lay);
}

/* A dot operand read through a reshaped pointer tile whose last axis
 * keeps its operand's stride is pipelined with cp.async (its values:
 * gpu::reshape_matmul_pipe); on sm_90a its twin copies it by cp.async too
 * (no tensor map: lower/wggather.c), the variant itself is the pipeline
 * ("elsewhere ..."). */
Test(numerics, reshaped_dot_operand_pipelines)
{
    char *lay = lowered("tests/gpu/reshape_matmul.tile", "reshape_matmul_pipe", 1, NULL);
    cr_expect(strstr(lay, "dot loop: wgmma + cp.async (the sm_90a twin") &&
                  strstr(lay, "); elsewhere cp.async pipeline + mma.sync"),
              "%s", lay);
    free(lay);
}

/* Every kernel of the file compiles in NVRTC (s * 1e300 with s: f64 was
 * "floating constant is out of range": 1e+300f). */
Test(numerics, nvrtc_compiles_every_kernel)
{
    static const char *const kernels[] = {"rounding",     "narrow",       "literals", "rounding_sum",
                                          "half_literal", "scalar_round", "prods",    "picks",
                                          "slices",       "rope",         "reshapes"};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        char *src = cuda_of(kernels[i], NULL);
        void *cubin = NULL;
        size_t size = 0;
        char *log = NULL;
        tilec_rt_status st = tilec_nvrtc_compile(src, kernels[i], "sm_90", NULL, 0, &cubin, &size, &log);
        cr_expect_eq(st, TILEC_RT_OK, "NVRTC rejects %s:\n%s", kernels[i], log ? log : "");
        free(cubin);
        free(log);
        free(src);
    }
}

/* Each instance of a generic kernel is its own NVRTC program and CUDA name
 * (docs/language.md §4.2): examples/softmax_generic.tile's six compile for
 * sm_90, each holding only its own dtype's loads and stores. */
Test(numerics, nvrtc_compiles_every_generic_instance)
{
    static const char *const kernels[] = {"row_softmax", "rmsnorm"};
    static const char *const dts[] = {"f16", "bf16", "f32"};
    static const char *const ctype[] = {"__half", "__nv_bfloat16", "float"};
    for (size_t k = 0; k < 2; k++)
        for (size_t d = 0; d < 3; d++) {
            char name[64], want[128];
            snprintf(name, sizeof name, "%s__%s", kernels[k], dts[d]);
            char *src = lowered("examples/softmax_generic.tile", name, 0, NULL);
            snprintf(want, sizeof want, "__global__ void __launch_bounds__(%d) %s_v0(%s *v_x", k ? 256 : 128, name,
                     ctype[d]);
            cr_expect(strstr(src, want), "%s: no '%s' in\n%s", name, want, src);
            for (size_t o = 0; o < 3; o++)
                if (o != d && o != 2) /* f32 is the arithmetic of every instance */
                    cr_expect(!strstr(src, ctype[o]), "%s mentions %s", name, ctype[o]);
            void *cubin = NULL;
            size_t size = 0;
            char *log = NULL;
            tilec_rt_status st = tilec_nvrtc_compile(src, name, "sm_90", NULL, 0, &cubin, &size, &log);
            cr_expect_eq(st, TILEC_RT_OK, "NVRTC rejects %s:\n%s", name, log ? log : "");
            cr_expect(size > 0);
            free(cubin);
            free(log);
            free(src);
        }
}

/* Issue 35 item 3: examples/softmax_generic.tile's row_softmax is one source for
 * f16, bf16 and f32 (docs/language.md §4.2). Each instance, run on the host
 * with inputs of its dtype, gives the softmax of its rows (one pass, and the
 * three-pass loop) to within one unit in the last place of its dtype: the
 * arithmetic in f32 as written, the quotient rounded to the dtype. */
Test(numerics, generic_softmax_per_dtype)
{
    static const char *const dts[] = {"f16", "bf16", "f32"};
    static const char *const ctype[] = {"__half", "__nv_bfloat16", "float"};
    static const char *const to[] = {"__float2half_rn", "__float2bfloat16_rn", "(float)"};
    static const double ulp[] = {0x1p-10, 0x1p-7, 0x1p-22};
    enum { ROWS = 3, COLS = 3000 };
    for (int d = 0; d < 3; d++) {
        for (int cols = 1000; cols <= COLS; cols += COLS - 1000) { /* one pass, and three over BLOCK = 1024 */
            char kernel[32], body[2048];
            snprintf(kernel, sizeof kernel, "row_softmax__%s", dts[d]);
            snprintf(body, sizeof body,
                     "static %s x[%d], y[%d];\n"
                     "for (int i = 0; i < %d; i++) x[i] = %s((float)((i * 37) %% 101) / 50.0f - 1.0f);\n"
                     "LAUNCH(%d, x, y, %d, %d);\n"
                     "for (int i = 0; i < %d; i++) printf(\"%%a %%a \", (double)(float)x[i], (double)(float)y[i]);\n",
                     ctype[d], ROWS * cols, ROWS * cols, ROWS * cols, to[d], ROWS, ROWS, cols, ROWS * cols);
            char *out = host_run_in("examples/softmax_generic.tile", kernel, body);
            const char *s = out;
            static double x[ROWS * COLS], y[ROWS * COLS];
            for (int i = 0; i < ROWS * cols; i++) {
                x[i] = next_num(&s);
                y[i] = next_num(&s);
            }
            for (int r = 0; r < ROWS; r++) {
                double mx = -INFINITY, sum = 0;
                for (int c = 0; c < cols; c++)
                    mx = fmax(mx, x[r * cols + c]);
                for (int c = 0; c < cols; c++)
                    sum += exp(x[r * cols + c] - mx);
                for (int c = 0; c < cols; c++) {
                    double want = exp(x[r * cols + c] - mx) / sum, got = y[r * cols + c];
                    cr_expect(fabs(got - want) <= ulp[d] * want, "%s, %d columns: y[%d][%d] = %a, want %a", kernel,
                              cols, r, c, got, want);
                }
            }
            free(out);
        }
    }
}

/* A canonical chunk is one 16-byte access of the narrowest element moved at
 * its shape (docs/lowering.md, "Layouts"): a bf16 row of examples/llm.tile's
 * rmsnorm_fwd is read and written 8 elements (uint4) a thread at a time, as
 * its f32 instance is 4 (before, a chunk was 4 elements whatever the type:
 * 8-byte uint2 accesses for f16/bf16, half the width the GPU coalesces); a
 * shape only ever moved as f32 (col_sum's partials) keeps chunks of 4. */
Test(numerics, half_tiles_move_in_16_byte_chunks)
{
    char *bf = lowered("examples/llm.tile", "rmsnorm_fwd__bf16", 0, NULL);
    cr_expect(strstr(bf, "*(uint4 *)&tl_t0[tl_j] = *(const uint4 *)tl_p;"), "bf16 load not 16 bytes:\n%s", bf);
    cr_expect(strstr(bf, "*(uint4 *)tl_p = tl_vec;"), "bf16 store not 16 bytes:\n%s", bf);
    cr_expect(!strstr(bf, "uint2"), "an 8-byte access left:\n%s", bf);
    cr_expect(strstr(bf, "for (int tl_c = 0; tl_c < 16; tl_c += 8)"), "%s", bf);
    char *f = lowered("examples/llm.tile", "rmsnorm_fwd__f32", 0, NULL);
    cr_expect(strstr(f, "*(uint4 *)&tl_t0[tl_j] = *(const uint4 *)tl_p;"), "%s", f);
    cr_expect(strstr(f, "for (int tl_c = 0; tl_c < 16; tl_c += 4)"), "%s", f);
    char *cs = lowered("examples/llm.tile", "col_sum__bf16", 0, NULL);
    cr_expect(strstr(cs, "const int tl_l = ((tl_j / 4) * 128 + tl_tid) * 4 + (tl_j % 4);"), "%s", cs);
    free(bf);
    free(f);
    free(cs);
}

/* Rows picked by loaded ids (examples/llm.tile's embedding gather and
 * scatter-add: `table + id[:, None] * D + c`) run contiguously along the
 * row whatever the ids hold, so the gather reads 16 bytes a thread at a
 * time and the scatter-add's f32 atomics go 4 at a time (tl_atomic_add4:
 * one RED.E.ADD.F32x4 on sm_90); before, the loaded ids hid the stride and
 * every element was its own 2-byte load and 4-byte atomic. The scatter-add
 * then adds right on the host: rows of D = 4096 (every run aligned: the
 * vector path) and D = 4093 (runs misaligned and the row's tail masked:
 * the element path), ids repeating. */
Test(numerics, picked_rows_move_in_16_byte_chunks)
{
    char *g = lowered("examples/llm.tile", "embed_gather__bf16", 0, NULL);
    cr_expect(strstr(g, "const __nv_bfloat16 *tl_p = ((v_table + ") && strstr(g, "*(uint4 *)&tl_t1[tl_j] = *(const uint4 *)tl_p;"),
              "the gathered rows are not read 16 bytes at a time:\n%s", g);
    char *sa = lowered("examples/llm.tile", "embed_scatter_add__bf16", 0, NULL);
    cr_expect(strstr(sa, "tl_atomic_add4(tl_p, tl_v0, tl_v1, tl_v2, tl_v3);"), "no vector atomic:\n%s", sa);
    cr_expect(strstr(sa, "for (int tl_c = 0; tl_c < 64; tl_c += 4)"), "%s", sa);
    free(g);
    free(sa);
    for (int D = 4093; D <= 4096; D += 3) {
        char body[2048];
        snprintf(body, sizeof body,
                 "const int n = 7, D = %d, V = 5;\n"
                 "static float dout[7 * %d], dt[5 * %d], want[5 * %d];\n"
                 "static int ids[] = {3, 0, 3, 4, 3, 1, 0};\n"
                 "for (int i = 0; i < n * D; i++) dout[i] = (float)((i * 37) %% 101 - 50) / 8;\n"
                 "for (int i = 0; i < n; i++) for (int c = 0; c < D; c++) want[ids[i] * D + c] += dout[i * D + c];\n"
                 "LAUNCH(2, dout, ids, dt, n, D);\n"
                 "int bad = 0;\n"
                 "for (int i = 0; i < V * D; i++) bad += dt[i] != want[i];\n"
                 "printf(\"bad %%d\", bad);\n",
                 D, D, D, D);
        char *out = host_run_in("examples/llm.tile", "embed_scatter_add__f32", body);
        cr_expect_str_eq(out, "bad 0", "D = %d", D);
        free(out);
    }
}

/* Every kernel of examples/llm.tile (issue 35's LLM set: each generic
 * kernel's f16, bf16 and f32 instances, every variant, with the sm_90a
 * twins of the GEMMs) compiles in NVRTC; bench.py --family llm and
 * tests/python/test_gpu_llm.py run them. */
Test(numerics, nvrtc_compiles_every_llm_kernel)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, "examples/llm.tile", &m), TILEC_OK);
    size_t n = tilec_module_kernel_count(m), compiled = 0;
    for (size_t i = 0; i < n; i++) {
        const tilec_kernel *k = tilec_module_kernel(m, i);
        for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++) {
            tilec_kernel_code code;
            cr_assert_eq(tilec_lower_kernel(ctx, m, k, (int)v, &code), TILEC_OK, "%s variant %u", k->name, v);
            const char *arch = strstr(code.source, "_tma(") ? "sm_90a" : "sm_90";
            void *cubin = NULL;
            size_t size = 0;
            char *log = NULL;
            tilec_rt_status st = tilec_nvrtc_compile(code.source, k->name, arch, NULL, 0, &cubin, &size, &log);
            cr_expect_eq(st, TILEC_RT_OK, "NVRTC (%s) rejects %s variant %u:\n%s", arch, k->name, v, log ? log : "");
            compiled += st == TILEC_RT_OK;
            free(cubin);
            free(log);
            tilec_kernel_code_free(&code);
        }
    }
    cr_expect_geq(compiled, 40, "%zu kernels compiled", compiled);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* examples/llm.tile's cross-entropy forward + backward in one pass, run on
 * the host (f32, in place: the gradient written over the logits, a vocab of
 * 5000 over a tile of 2048, the target the last column in one row): each
 * row's loss is logsumexp - x[t] and the row becomes scale * (softmax -
 * onehot(t)), to f32 rounding. Then rmsnorm_bwd (2 rows a program; 1000
 * columns of a 4096 tile, and 5000: two passes a row, its partials added in
 * memory, as any variant must do for any shape), its per-program partials of
 * dw added up, against the formula in double. */
Test(numerics, llm_cross_entropy_and_rmsnorm_backward_on_the_host)
{
    enum { R = 3, V = 5000 };
    char body[2048];
    snprintf(body, sizeof body,
             "static float x[%d], loss[%d]; static int t[%d] = {7, %d, 2047};\n"
             "for (int i = 0; i < %d; i++) x[i] = (float)((i * 37) %% 101) / 20.0f - 2.5f;\n"
             "LAUNCH(%d, x, t, loss, x, %d, %d, 1.0f / %d);\n"
             "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)loss[i]);\n"
             "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)x[i]);\n",
             R * V, R, R, V - 1, R * V, R, R, V, R, R, R * V);
    char *out = host_run_in("examples/llm.tile", "ce_fwd_bwd__f32", body);
    const char *s = out;
    static double loss[R], g[R * V];
    for (int i = 0; i < R; i++)
        loss[i] = next_num(&s);
    for (int i = 0; i < R * V; i++)
        g[i] = next_num(&s);
    const int tgt[R] = {7, V - 1, 2047};
    for (int r = 0; r < R; r++) {
        double mx = -INFINITY, sum = 0;
        for (int c = 0; c < V; c++)
            mx = fmax(mx, (double)(float)((float)(((r * V + c) * 37) % 101) / 20.0f - 2.5f));
        for (int c = 0; c < V; c++)
            sum += exp((double)(float)((float)(((r * V + c) * 37) % 101) / 20.0f - 2.5f) - mx);
        double lse = mx + log(sum);
        double xt = (double)(float)((float)(((r * V + tgt[r]) * 37) % 101) / 20.0f - 2.5f);
        cr_expect(fabs(loss[r] - (lse - xt)) <= 1e-5 * fabs(lse - xt), "loss[%d] = %a, want %a", r, loss[r], lse - xt);
        for (int c = 0; c < V; c++) {
            double xv = (double)(float)((float)(((r * V + c) * 37) % 101) / 20.0f - 2.5f);
            double want = (exp(xv - lse) - (c == tgt[r])) / R;
            cr_expect(fabs(g[r * V + c] - want) <= 1e-5 * fabs(want) + 1e-9, "dx[%d][%d] = %a, want %a", r, c,
                      g[r * V + c], want);
        }
    }
    free(out);

    enum { RR = 5, RPP = 2, G = 3, CMAX = 5000 };
    for (int C = 1000; C <= CMAX; C += CMAX - 1000) { /* one pass a row, and two over BLOCK = 4096 */
        snprintf(body, sizeof body,
                 "static float dy[%d], x[%d], w[%d], rs[%d], dx[%d], dwp[%d];\n"
                 "for (int i = 0; i < %d; i++) { dy[i] = (float)((i * 13) %% 29) / 7.0f - 2.0f; "
                 "x[i] = (float)((i * 17) %% 31) / 9.0f - 1.5f; }\n"
                 "for (int i = 0; i < %d; i++) w[i] = 0.5f + (float)(i %% 7) / 8.0f;\n"
                 "for (int r = 0; r < %d; r++) { double q = 0; for (int c = 0; c < %d; c++) q += (double)x[r * %d + c] * x[r * %d + c];"
                 " rs[r] = (float)(1.0 / sqrt(q / %d + 1e-6)); }\n"
                 "LAUNCH(%d, dy, x, w, rs, dx, dwp, %d, %d, %d);\n"
                 "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)dx[i]);\n"
                 "for (int i = 0; i < %d; i++) printf(\"%%a \", (double)dwp[i]);\n",
                 RR * C, RR * C, C, RR, RR * C, G * C, RR * C, C, RR, C, C, C, C, G, RR, C, RPP, RR * C, G * C);
        out = host_run_in("examples/llm.tile", "rmsnorm_bwd__f32", body);
        s = out;
        static double dx[RR * CMAX], dwp[G * CMAX], dw[CMAX];
        for (int i = 0; i < RR * C; i++)
            dx[i] = next_num(&s);
        for (int i = 0; i < G * C; i++)
            dwp[i] = next_num(&s);
        memset(dw, 0, sizeof dw);
        for (int r = 0; r < RR; r++) {
            static float xs[CMAX], dys[CMAX];
            double q = 0, k = 0;
            for (int c = 0; c < C; c++) {
                dys[c] = (float)(((r * C + c) * 13) % 29) / 7.0f - 2.0f;
                xs[c] = (float)(((r * C + c) * 17) % 31) / 9.0f - 1.5f;
                q += (double)xs[c] * xs[c];
            }
            double rs = (double)(float)(1.0 / sqrt(q / C + 1e-6));
            for (int c = 0; c < C; c++)
                k += dys[c] * (0.5 + (c % 7) / 8.0) * xs[c] * rs / C;
            for (int c = 0; c < C; c++) {
                double gw = dys[c] * (0.5 + (c % 7) / 8.0), want = rs * (gw - xs[c] * rs * k);
                cr_expect(fabs(dx[r * C + c] - want) <= 1e-4 * (fabs(want) + 1), "C=%d: dx[%d][%d] = %a, want %a", C,
                          r, c, dx[r * C + c], want);
                dw[c] += dys[c] * xs[c] * rs;
            }
        }
        for (int c = 0; c < C; c++) {
            double got = dwp[c] + dwp[C + c] + dwp[2 * C + c];
            cr_expect(fabs(got - dw[c]) <= 1e-4 * (fabs(dw[c]) + 1), "C=%d: dw[%d] = %a, want %a", C, c, got, dw[c]);
        }
        free(out);
    }
}

/* The bound checks of a vector's elements against the first element's
 * index less the offset, saturating (lower/mask.c, the mask rule): kernel
 * k of tests/gpu/run_bounds.tile run for every bound in ns[], the index of
 * stride 1 or 2 on either side, a row aligned (vector path) or not
 * (element by element); le[j]: section j compares with <= (>=), not <. */
static void check_run_bounds(const char *kernel, const long long *ns, int nn, const char *ntype, const int le[3])
{
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "static float x[260], y[3 * 128 + 1];\nfor (int i = 0; i < 260; i++) x[i] = (float)(i + 1);\n"
                  "static const %s ns[] = {", ntype);
    for (int i = 0; i < nn; i++)
        sb_printf(&b, "%s%lldLL", i ? ", " : "", ns[i]);
    sb_printf(&b, "};\nfor (int k = 0; k < %d; k++) for (int off = 0; off < 2; off++) {\n"
                  "  for (int i = 0; i < 3 * 128 + 1; i++) y[i] = 7.0f;\n"
                  "  LAUNCH(1, x, y, ns[k], off);\n"
                  "  for (int i = 0; i < 3 * 128 + 1; i++) printf(\"%%g \", (double)y[i]);\n}\n",
              nn);
    cr_assert(!b.failed);
    char *out = host_run_in("tests/gpu/run_bounds.tile", kernel, sb_str(&b));
    sb_free(&b);
    const char *s = out;
    for (int k = 0; k < nn; k++)
        for (int off = 0; off < 2; off++)
            for (int i = 0; i < 3 * 128 + 1; i++) {
                double got = next_num(&s), want;
                long long n = ns[k], c = i < 128 ? i : i < 256 ? 2LL * (i - 128) : i - 256 - off;
                int in = le[i < 128 ? 0 : i < 256 ? 1 : 2] ? c <= n : c < n;
                if (i < 128)
                    want = in ? off + i + 1 : -1.0;
                else if (i < 256)
                    want = in ? off + i - 128 + 1 : -2.0;
                else
                    want = c >= 0 && c < 128 && in ? c + 1 : 7.0;
                cr_expect_eq(got, want, "%s: n %lld off %d: y[%d] = %g, want %g", kernel, n, off, i, got, want);
            }
    free(out);
}

/* i32 bounds from the minimum to the maximum: `<` (run_bounds), `<=` and `>=` */
Test(numerics, run_bounds)
{
    const long long ns[] = {-2147483647LL - 1, -2147483645LL, -2147483641LL, -3, -1, 0, 1, 2, 3, 5, 61, 126, 127, 128, 255, 256, 1000, 2147483647LL};
    const int nn = (int)(sizeof ns / sizeof ns[0]), lt[3] = {0, 0, 0}, le[3] = {1, 1, 1};
    check_run_bounds("bounds", ns, nn, "int", lt);
    check_run_bounds("bounds_le", ns, nn, "int", le);
    char *src = lowered("tests/gpu/run_bounds.tile", "bounds", 0, NULL);
    cr_expect(strstr(src, "((v_n >= -2147483646 ? v_n - 2 : -2147483647 - 1) > (2 * tl_i0))"), "%s", src);
    free(src);
    src = lowered("tests/gpu/run_bounds.tile", "bounds_le", 0, NULL);
    cr_expect(strstr(src, "const bool tl_m1 = (tl_i0 < v_n);"), "i(1) <= n is i(0) < n:\n%s", src);
    cr_expect(strstr(src, "const bool tl_m3 = ((v_n >= -2147483643 ? v_n - 5 : -2147483647 - 1) > (2 * tl_i0));"), "%s", src);
    cr_expect(!strstr(src, "(tl_i0 + 3)"), "an element's own index compared:\n%s", src);
    free(src);
}

/* An i64 bound: the comparison in 64 bits, n - q saturating at the i64
 * minimum (before, a 64-bit comparison kept each element's own index:
 * llm.tile's swiglu and chunked kernels) */
Test(numerics, run_bounds_i64)
{
    const long long ns[] = {-9223372036854775807LL - 1, -9223372036854775805LL, -2147483647LL - 1, -3, 0, 1, 2, 3, 61, 127, 128,
                            255, 256, 2147483647LL, 4294967296LL, 9223372036854775807LL};
    const int nn = (int)(sizeof ns / sizeof ns[0]), le[3] = {0, 1, 1};
    check_run_bounds("bounds64", ns, nn, "long long", le);
    char *src = lowered("tests/gpu/run_bounds.tile", "bounds64", 0, NULL);
    cr_expect(strstr(src, "const bool tl_m3 = (((long long)(tl_i0)) < (v_n >= -9223372036854775805LL ? v_n - 3LL : "
                          "(-9223372036854775807LL - 1)));"),
              "%s", src);
    cr_expect(!strstr(src, "(tl_i0 + 3)"), "an element's own index compared:\n%s", src);
    free(src);
}
