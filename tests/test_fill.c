/* test_fill.c: the runtime's one fill (tilec_rt_fill_async, runtime/fill.c)
 * and the launch plan's fill step, against the fake driver ("device"
 * memory on the host; its memsets and its fill kernel really write). Every
 * element width and pattern comes out exactly, with nothing written past
 * the end, through the narrowest memset or, for an 8-byte pattern whose
 * halves differ, the fill kernel (loaded once per handle); bad widths and
 * misaligned addresses are refused; a plan's fill steps run in order with
 * its launches, and a CUDA graph records them and refills on replay. */
#include <criterion/criterion.h>
#include <string.h>

#include "fake_load.h"
#include "plan_helpers.h"
#include "tilec/plan.h"
#include "tilec/program.h"

static const char src[] = "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 128)) hints { warps = 4 } {\n"
                          "    let i = pid(0) * 128 + range(128);\n"
                          "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                          "}\n";

enum { N = 300, GUARD = 16 };

static fake_cuda_state *fake;
static tilec_rt *rt;
static uint64_t mem; /* N * 8 bytes and a guard */

static void setup(void)
{
    char path[4096];
    fake_cuda_path(path, sizeof path);
    fake = fake_cuda_load(path, NULL);
    cr_assert_eq(tilec_rt_open_driver(path, 0, &rt), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, N * 8 + GUARD, &mem), TILEC_RT_OK);
}

static void teardown(void)
{
    tilec_rt_free(rt, mem);
    tilec_rt_close(rt);
}

TestSuite(fill, .init = setup, .fini = teardown);

/* fill count elements of es bytes with bits over poisoned memory; every
 * element must be the pattern and the guard after it untouched */
static void check_fill(unsigned es, uint64_t bits, size_t count, int memsets, int kernels)
{
    unsigned char host[N * 8 + GUARD], want[8];
    memset(host, 0xab, sizeof host);
    cr_assert_eq(tilec_rt_memcpy_htod(rt, mem, host, sizeof host), TILEC_RT_OK);
    int m0 = fake->memsets, k0 = fake->fill_launches;
    cr_assert_eq(tilec_rt_fill_async(rt, mem, bits, es, count, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_assert_eq(fake->memsets - m0, memsets, "es %u bits 0x%llx: memsets", es, (unsigned long long)bits);
    cr_assert_eq(fake->fill_launches - k0, kernels, "es %u bits 0x%llx: fill kernels", es, (unsigned long long)bits);
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, host, mem, sizeof host), TILEC_RT_OK);
    memcpy(want, &bits, 8); /* little-endian: the low es bytes */
    for (size_t i = 0; i < count; i++)
        cr_assert_eq(memcmp(host + i * es, want, es), 0, "es %u: element %zu", es, i);
    for (size_t i = count * es; i < count * es + GUARD; i++)
        cr_assert_eq(host[i], 0xab, "es %u: byte %zu past the end was written", es, i);
}

Test(fill, every_width_and_pattern_exactly)
{
    check_fill(1, 0xfd, 5, 1, 0);                  /* i8 -3 */
    check_fill(2, 0xc100, 7, 1, 0);                /* f16 -2.5: a D16 memset */
    check_fill(2, 0x0101, 7, 1, 0);                /* equal bytes: a D8 memset */
    check_fill(4, 0x3fc00000, 3, 1, 0);            /* f32 1.5 */
    check_fill(1, 0x1, N, 1, 0);                   /* bool true */
    check_fill(8, 0x3fb999999999999aull, 7, 0, 1); /* f64 0.1: halves differ, the kernel */
    check_fill(8, 0x3fb999999999999aull, N, 0, 1);
    check_fill(8, 0, 9, 1, 0);                     /* f64 0: one memset */
    check_fill(8, 0x0000000300000003ull, 9, 1, 0); /* equal halves: D32 */
    check_fill(8, UINT64_MAX, 9, 1, 0);            /* i64 -1: D8 */
    check_fill(4, 0x7fc00000, 0, 0, 0);            /* no elements: nothing */
}

Test(fill, the_kernel_loads_once_per_handle)
{
    int modules = fake->live_modules;
    cr_assert_eq(tilec_rt_fill_async(rt, mem, 0x4000000000000000ull, 8, 4, NULL), TILEC_RT_OK);
    cr_assert_eq(fake->live_modules, modules + 1);
    cr_assert_eq(tilec_rt_fill_async(rt, mem, 0x4008000000000000ull, 8, 4, NULL), TILEC_RT_OK);
    cr_assert_eq(fake->live_modules, modules + 1, "loaded once");
    tilec_rt_free(rt, mem);
    mem = 0;
    tilec_rt_close(rt);
    rt = NULL;
    cr_assert_eq(fake->live_modules, modules, "unloaded when the handle closes");
}

Test(fill, bad_widths_and_addresses_are_refused)
{
    cr_assert_eq(tilec_rt_fill_async(rt, mem, 0, 3, 4, NULL), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(tilec_rt_last_error(rt), "tilec_rt_fill_async: elements of 3 bytes (1, 2, 4 or 8)");
    cr_assert_eq(tilec_rt_fill_async(rt, mem + 2, 0, 4, 4, NULL), TILEC_RT_INVALID_ARG);
    char want[128];
    snprintf(want, sizeof want, "tilec_rt_fill_async: 0x%llx is not aligned to its 4-byte elements",
             (unsigned long long)(mem + 2));
    cr_assert_str_eq(tilec_rt_last_error(rt), want);
    cr_assert_eq(tilec_rt_fill_async(NULL, mem, 0, 4, 4, NULL), TILEC_RT_INVALID_ARG);
    cr_assert_eq(fake->memsets, 0, "nothing was written");
}

/* ---- the plan's fill step ---- */

static tilec_ctx *ctx;
static tilec_module *mod;
static tilec_program *prog;
static uint64_t t, y, d;

static void setup_plan(void)
{
    setup();
    ctx = tilec_ctx_new();
    cr_assert_eq(tilec_parse_string(ctx, "p.tile", src, strlen(src), &mod), TILEC_OK);
    tilec_build_options o = {.arch = "sm_90", .threads = 1};
    cr_assert_eq(tilec_program_build(ctx, rt, mod, &o, &prog), TILEC_OK);
    cr_assert_eq(tilec_rt_malloc(rt, N * 4, &t), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, N * 4, &y), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, N * 8, &d), TILEC_RT_OK);
}

static void teardown_plan(void)
{
    tilec_rt_free(rt, t);
    tilec_rt_free(rt, y);
    tilec_rt_free(rt, d);
    tilec_program_free(prog);
    tilec_module_free(mod);
    tilec_ctx_free(ctx);
    teardown();
}

TestSuite(plan_fill, .init = setup_plan, .fini = teardown_plan);

enum { ST, SY, SD, SN, NSLOTS };

/* t = full(f32, [N], 1.5); y = scale2(t); d = full(f64, [N], 0.1) */
static tilec_plan *filled(void)
{
    tilec_plan *p = tilec_plan_new(prog, NULL, "fills", NSLOTS);
    cr_assert_not_null(p);
    cr_assert_eq(tilec_plan_set_slot(p, ST, TILEC_PLAN_PTR, "t"), TILEC_RT_OK);
    cr_assert_eq(tilec_plan_set_slot(p, SY, TILEC_PLAN_PTR, "y"), TILEC_RT_OK);
    cr_assert_eq(tilec_plan_set_slot(p, SD, TILEC_PLAN_PTR, "d"), TILEC_RT_OK);
    cr_assert_eq(tilec_plan_set_slot(p, SN, TILEC_PLAN_INT, "N"), TILEC_RT_OK);
    tilec_plan_tensor tt = {.data_slot = ST, .dtype = TILEC_DT_F32, .rank = 1, .sizes = {slot(SN)}};
    tilec_plan_tensor dt = {.data_slot = SD, .dtype = TILEC_DT_F64, .rank = 2, .sizes = {slot(SN), slot(-1)}};
    dt.sizes[1].value.i64 = 1;
    cr_assert_eq(tilec_plan_add_fill(p, &tt, 0x3fc00000), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    tilec_plan_value a[3] = {slot(ST), slot(SY), slot(SN)};
    cr_assert_eq(tilec_plan_add_kernel(p, "scale2", 0, a, 3), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(tilec_plan_add_fill(p, &dt, 0x3fb999999999999aull), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    return p;
}

static tilec_rt_status run(tilec_plan *p, int64_t n)
{
    tilec_rt_arg s[NSLOTS];
    s[ST].ptr = t, s[SY].ptr = y, s[SD].ptr = d, s[SN].i64 = n;
    return tilec_plan_run(p, s, NSLOTS, NULL);
}

static void poison(void)
{
    cr_assert_eq(tilec_rt_memset_d32(rt, t, 0xffffffffu, N), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memset_d32(rt, y, 0xffffffffu, N), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memset_d32(rt, d, 0xffffffffu, 2 * N), TILEC_RT_OK);
}

static void expect_filled(int n)
{
    float ht[N], hy[N];
    double hd[N];
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, ht, t, sizeof ht), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, hy, y, sizeof hy), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, hd, d, sizeof hd), TILEC_RT_OK);
    for (int i = 0; i < n; i++) {
        cr_assert(ht[i] == 1.5f, "t[%d] = %g", i, (double)ht[i]);
        cr_assert(hy[i] == 3.0f, "y[%d] = %g: the kernel ran after the fill", i, (double)hy[i]);
        cr_assert(hd[i] == 0.1, "d[%d] = %g", i, hd[i]);
    }
}

Test(plan_fill, fills_run_in_order_with_the_launches)
{
    tilec_plan *p = filled();
    poison();
    cr_assert_eq(run(p, N), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    expect_filled(N);
    cr_assert_eq(fake->memsets, 1);
    cr_assert_eq(fake->fill_launches, 1);
    tilec_plan_stats st;
    tilec_plan_get_stats(p, &st);
    cr_assert_eq(st.steps, 3);
    tilec_plan_free(p);
}

Test(plan_fill, a_cuda_graph_records_the_fills_and_replays_them)
{
    tilec_plan *p = filled();
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 2), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    poison();
    cr_assert_eq(run(p, N), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    expect_filled(N);
    cr_assert_eq(fake->captured_memsets, 1, "the memset is recorded");
    cr_assert_eq(fake->captured_launches, 2, "so are scale2 and the fill kernel");
    poison();
    cr_assert_eq(run(p, N), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(fake->graph_launches, 1);
    expect_filled(N); /* replay refills: the same result as eager */
    tilec_plan_free(p);
}

Test(plan_fill, bad_fills_are_refused)
{
    tilec_plan *p = filled();
    tilec_plan_tensor bad = {.data_slot = SN, .dtype = TILEC_DT_F32, .rank = 1, .sizes = {slot(SN)}};
    cr_assert_eq(tilec_plan_add_fill(p, &bad, 0), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(tilec_plan_last_error(p), "fills: a tensor of a fill needs a pointer slot, not 3");
    bad.data_slot = ST;
    bad.dtype = TILEC_DT_F16;
    cr_assert_eq(tilec_plan_add_fill(p, &bad, 0x10000), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(tilec_plan_last_error(p), "fills: add_fill: the pattern 0x10000 of t is wider than a f16");
    bad.dtype = TILEC_DT_COUNT;
    cr_assert_eq(tilec_plan_add_fill(p, &bad, 0), TILEC_RT_INVALID_ARG);
    bad.dtype = TILEC_DT_F32;
    bad.sizes[0] = slot(SD);
    cr_assert_eq(tilec_plan_add_fill(p, &bad, 0), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(tilec_plan_last_error(p), "fills: dimension 0 of a tensor of a fill needs an integer slot");
    cr_assert_eq(tilec_plan_add_fill(p, NULL, 0), TILEC_RT_INVALID_ARG);
    tilec_plan_stats st;
    tilec_plan_get_stats(p, &st);
    cr_assert_eq(st.steps, 3, "a refused fill is not added");
    int launches = fake->launches;
    cr_assert_eq(run(p, -4), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(tilec_plan_last_error(p), "fills: step 1 (fill of t): dimension 0 is -4");
    cr_assert_eq(fake->launches, launches, "the run stopped at the fill");
    tilec_plan_free(p);
}
