/* test_gpu_faults.c: faults on a real GPU. A kernel that traps and a tile
 * kernel that reads an illegal address: the status (TILEC_RT_KERNEL_FAULT)
 * names the kernel, every later call (a launch too, a new runtime too)
 * says the context is lost and the process must restart. 16 processes x 50 rounds building
 * and launching 6 modules against one cache directory (tests/stress.h),
 * every output element checked. Out of memory inside a graph is in
 * tests/test_gpu_wrapper.c. Without a GPU: one SKIP line. */
#include <criterion/criterion.h>

#include "fs_helpers.h"
#include "gpu_helpers.h"
#include "stress.h"

static tilec_rt *open_gpu(void)
{
    tilec_rt *rt = NULL;
    cr_assert_eq(tilec_rt_open(0, &rt), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    return rt;
}

static const char TRAP_SRC[] = "extern \"C\" __global__ void trapper(float *x) {\n"
                               "    if (threadIdx.x == 3) __trap();\n"
                               "    x[threadIdx.x] = 1.0f;\n"
                               "}\n"
                               "extern \"C\" __global__ void fill(float *x) { x[threadIdx.x] = 2.0f; }\n";

static tilec_rt_module *load_trap_module(tilec_rt *rt)
{
    tilec_rt_device_props p;
    cr_assert_eq(tilec_rt_device_info(rt, &p), TILEC_RT_OK);
    void *bin = NULL;
    size_t size = 0;
    char *log = NULL;
    cr_assert_eq(tilec_nvrtc_compile(TRAP_SRC, "trap.cu", p.arch, NULL, 0, &bin, &size, &log), TILEC_RT_OK, "%s",
                 log ? log : "");
    free(log);
    tilec_rt_module *m = NULL;
    cr_assert_eq(tilec_rt_module_load(rt, bin, size, &m), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    free(bin);
    return m;
}

static const tilec_rt_param_kind PTR[] = {TILEC_RT_PARAM_POINTER};

Test(gpu_faults, trapping_kernel_is_named_and_the_context_is_lost, .timeout = 120)
{
    tilec_rt *rt = open_gpu();
    tilec_rt_module *m = load_trap_module(rt);
    tilec_rt_launch_meta meta = {.block_x = 32, .nparams = 1, .kinds = PTR};
    tilec_rt_kernel *trapper = NULL, *fill = NULL;
    cr_assert_eq(tilec_rt_kernel_get(m, "trapper", &meta, &trapper), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_kernel_get(m, "fill", &meta, &fill), TILEC_RT_OK);
    uint64_t x = 0;
    cr_assert_eq(tilec_rt_malloc(rt, 32 * sizeof(float), &x), TILEC_RT_OK);
    tilec_rt_arg a[1] = {{.ptr = x}};
    uint32_t grid[3] = {1, 1, 1};
    cr_assert_eq(tilec_rt_launch(fill, grid, a, NULL), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_synchronize(rt), TILEC_RT_OK);

    tilec_rt_status st = tilec_rt_launch(trapper, grid, a, NULL);
    if (st == TILEC_RT_OK) /* the trap surfaces at the next synchronizing call */
        st = tilec_rt_synchronize(rt);
    cr_expect_eq(st, TILEC_RT_KERNEL_FAULT, "%s", tilec_rt_last_error(rt));
    const char *e = tilec_rt_last_error(rt);
    fprintf(stderr, "trap: %s\n", e);
    cr_expect(strstr(e, "'trapper'") && strstr(e, "context is lost"), "%s", e);

    cr_expect_eq(tilec_rt_launch(fill, grid, a, NULL), TILEC_RT_KERNEL_FAULT, "a launch after the context is lost");
    e = tilec_rt_last_error(rt);
    fprintf(stderr, "launch after: %s\n", e);
    cr_expect(strstr(e, "kernel 'fill'") && strstr(e, "'trapper'") && strstr(e, "context is lost"), "%s", e);
    float h[32];
    cr_expect_eq(tilec_rt_memcpy_dtoh(rt, h, x, sizeof h), TILEC_RT_KERNEL_FAULT);
    cr_expect_eq(tilec_rt_synchronize(rt), TILEC_RT_KERNEL_FAULT);
    tilec_rt_free(rt, x);
    tilec_rt_module_unload(m);
    tilec_rt_close(rt);

    /* CUDA cannot recover in the process: a new runtime says so clearly
     * (the next test, a new process, has a working device again) */
    rt = NULL;
    cr_expect_eq(tilec_rt_open(0, &rt), TILEC_RT_KERNEL_FAULT, "%s", tilec_rt_last_error(rt));
    e = tilec_rt_last_error(rt);
    fprintf(stderr, "open after: %s\n", e);
    cr_expect(strstr(e, "earlier in this process") && strstr(e, "restart the process"), "%s", e);
    tilec_rt_close(rt);
}

/* A tile kernel given a pointer to nowhere: the fault names it. */
Test(gpu_faults, illegal_address_in_a_tile_kernel, .timeout = 120)
{
    tilec_rt *rt = open_gpu();
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *mod = parse(ctx, "examples/add_relu.tile");
    tilec_build_options o = {.threads = 1};
    tilec_program *p = NULL;
    cr_assert_eq(tilec_program_build(ctx, rt, mod, &o, &p), TILEC_OK);
    uint64_t out = 0;
    const int n = 1 << 20;
    cr_assert_eq(tilec_rt_malloc(rt, (size_t)n * 4, &out), TILEC_RT_OK);
    tilec_rt_arg a[4] = {{.ptr = 0x1000}, {.ptr = 0x1000}, {.ptr = out}, {.i32 = n}};
    tilec_rt_status st = tilec_program_launch(p, "add_relu", 0, a, 4, NULL);
    if (st == TILEC_RT_OK)
        st = tilec_rt_synchronize(rt);
    cr_expect_eq(st, TILEC_RT_KERNEL_FAULT, "%s", tilec_rt_last_error(rt));
    fprintf(stderr, "illegal address: %s\n", tilec_rt_last_error(rt));
    cr_expect(strstr(tilec_rt_last_error(rt), "add_relu"), "%s", tilec_rt_last_error(rt));
    tilec_rt_free(rt, out);
    tilec_program_free(p);
    tilec_module_free(mod);
    tilec_ctx_free(ctx);
    tilec_rt_close(rt);
}

Test(gpu_faults, processes_16_x_rounds_50_one_cache_with_launches, .timeout = 600)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    stress_totals t;
    int rc = stress_run(dir, 16, 50, 1, &t);
    fprintf(stderr,
            "GPU concurrency: 16 processes x 50 rounds: %ld builds, %ld launches checked, %ld cache hits, %ld compiles, "
            "%ld corrupt reads, %ld failures\n",
            t.builds_ok, t.launches_ok, t.cache_hits, t.compiles, t.corrupt, t.failures);
    cr_expect_eq(rc, 0, "%ld failures; first: %s", t.failures, t.first_failure);
    cr_expect_eq(t.rounds, 16 * 50);
    cr_expect_eq(t.builds_ok, 16 * 50);
    cr_expect_eq(t.launches_ok, 16 * 50);
    cr_expect_eq(t.corrupt, 0);
    char why[256] = "";
    /* the rounds built for the device's own target (sm_90a on a 9.0 device) */
    tilec_rt *rt = NULL;
    tilec_rt_device_props props;
    cr_assert_eq(tilec_rt_open(0, &rt), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_device_info(rt, &props), TILEC_RT_OK);
    tilec_rt_close(rt);
    cr_expect_eq(stress_check_cache(dir, props.arch, why, sizeof why), 0, "%s", why);
    rm_dir(dir);
}

int main(int argc, char *argv[]) { return gpu_suite_main(argc, argv, "GPU fault tests"); }
