/* test_runtime.c: the runtime's first layer without a GPU: statuses, the
 * no-driver path, launch metadata checks, NVRTC compiles for sm_90, and the
 * whole driver layer against a fake driver (libfakecuda.so, built from
 * fake_cuda.c beside this binary) that keeps "device" memory on the host. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_load.h"
#include "rt_calls.h"
#include "tilec/runtime.h"

/* ---- statuses ---- */

Test(rt_status, every_status_has_its_own_string)
{
    for (int a = 0; a < TILEC_RT_STATUS_COUNT; a++) {
        const char *s = tilec_rt_status_string((tilec_rt_status)a);
        cr_assert(s && *s, "status %d", a);
        cr_expect(strcmp(s, "unknown tilec runtime status") != 0, "status %d has no string", a);
        for (int b = 0; b < a; b++)
            cr_expect_str_neq(s, tilec_rt_status_string((tilec_rt_status)b), "statuses %d and %d", a, b);
    }
    cr_expect_str_eq(tilec_rt_status_string(TILEC_RT_OK), "success");
    cr_expect_str_eq(tilec_rt_status_string(TILEC_RT_NO_DRIVER), "no CUDA driver found (libcuda.so.1 could not be loaded)");
    cr_expect(strncmp(tilec_rt_status_string(TILEC_RT_NO_DEVICE), "no CUDA device", 14) == 0);
    cr_expect_str_eq(tilec_rt_status_string(TILEC_RT_STATUS_COUNT), "unknown tilec runtime status");
    cr_expect_str_eq(tilec_rt_status_string((tilec_rt_status)-1), "unknown tilec runtime status");
}

/* ---- no driver ---- */

/* 1 when this machine has a CUDA driver (the GPU machine). */
static int have_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h)
        dlclose(h);
    return h != NULL;
}

Test(rt_open, no_driver_here)
{
    if (have_driver())
        cr_skip_test("this machine has libcuda.so.1");
    tilec_rt *rt = NULL;
    cr_assert_eq(tilec_rt_open(0, &rt), TILEC_RT_NO_DRIVER);
    cr_assert_not_null(rt, "a failed open still gives a handle for its message");
    const char *e = tilec_rt_last_error(rt);
    cr_expect(strncmp(e, "no CUDA driver found (libcuda.so.1 could not be loaded: ", 56) == 0, "%s", e);
    cr_expect(strstr(e, "libcuda.so.1: cannot open shared object file"), "%s", e);
    expect_all_calls_fail(rt, TILEC_RT_NO_DRIVER);
    tilec_rt_close(rt);
}

Test(rt_open, missing_library)
{
    tilec_rt *rt = NULL;
    cr_assert_eq(tilec_rt_open_driver("/nonexistent/libcuda.so.1", 0, &rt), TILEC_RT_NO_DRIVER);
    cr_expect_str_eq(tilec_rt_last_error(rt),
                     "no CUDA driver found (/nonexistent/libcuda.so.1 could not be loaded: /nonexistent/libcuda.so.1: "
                     "cannot open shared object file: No such file or directory)");
    tilec_rt_close(rt);
}

Test(rt_open, library_without_cuGetProcAddress)
{
    tilec_rt *rt = NULL;
    cr_assert_eq(tilec_rt_open_driver("libm.so.6", 0, &rt), TILEC_RT_DRIVER_TOO_OLD);
    cr_expect_str_eq(tilec_rt_last_error(rt), "the CUDA driver libm.so.6 is too old: it has neither "
                                              "cuGetProcAddress_v2 nor cuGetProcAddress (CUDA 11.3 or newer needed)");
    expect_all_calls_fail(rt, TILEC_RT_DRIVER_TOO_OLD);
    tilec_rt_close(rt);
}

Test(rt_open, bad_arguments)
{
    tilec_rt *rt = (tilec_rt *)1;
    cr_expect_eq(tilec_rt_open(0, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_rt_open(-1, &rt), TILEC_RT_INVALID_ARG);
    cr_expect_null(rt);
    tilec_rt_close(NULL);
    cr_expect(strlen(tilec_rt_last_error(NULL)) > 0);
    cr_expect_eq(tilec_rt_malloc(NULL, 8, &(uint64_t){0}), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_rt_kernel_get(NULL, "k", NULL, NULL), TILEC_RT_INVALID_ARG);
    tilec_rt_module_unload(NULL);
}

/* ---- launch metadata, no device needed ---- */

static const tilec_rt_param_kind kinds7[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_I32, TILEC_RT_PARAM_I64,
                                             TILEC_RT_PARAM_F32,     TILEC_RT_PARAM_F64, TILEC_RT_PARAM_U32,
                                             TILEC_RT_PARAM_U64};

Test(rt_meta, checks)
{
    char why[256];
    tilec_rt_param_kind many[TILEC_RT_MAX_PARAMS + 1] = {0};
    tilec_rt_launch_meta m = {.block_x = 128, .nparams = 7, .kinds = kinds7};
    cr_expect_eq(tilec_rt_launch_meta_check(&m, why, sizeof why), TILEC_RT_OK);
    cr_expect_str_eq(why, "");
    m = (tilec_rt_launch_meta){.block_x = 128, .nparams = TILEC_RT_MAX_PARAMS, .kinds = many};
    cr_expect_eq(tilec_rt_launch_meta_check(&m, why, sizeof why), TILEC_RT_OK);
    m.nparams = TILEC_RT_MAX_PARAMS + 1;
    cr_expect_eq(tilec_rt_launch_meta_check(&m, why, sizeof why), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(why, "65 parameters; at most 64 are supported");
    m = (tilec_rt_launch_meta){.block_x = 0};
    cr_expect_eq(tilec_rt_launch_meta_check(&m, why, sizeof why), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(why, "block of 0 threads; it must be 1 to 1024");
    m.block_x = 1025;
    cr_expect_eq(tilec_rt_launch_meta_check(&m, NULL, 0), TILEC_RT_INVALID_ARG);
    m = (tilec_rt_launch_meta){.block_x = 1024, .nparams = 2, .kinds = NULL};
    cr_expect_eq(tilec_rt_launch_meta_check(&m, why, sizeof why), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(why, "2 parameters but no parameter kinds");
    tilec_rt_param_kind bad[] = {TILEC_RT_PARAM_F32, (tilec_rt_param_kind)42};
    m.kinds = bad;
    cr_expect_eq(tilec_rt_launch_meta_check(&m, why, sizeof why), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(why, "parameter 1 has unknown kind 42");
    cr_expect_eq(tilec_rt_launch_meta_check(NULL, why, sizeof why), TILEC_RT_INVALID_ARG);
}

Test(rt_meta, param_sizes)
{
    size_t want[] = {8, 4, 8, 4, 8, 4, 8};
    for (int i = 0; i < 7; i++)
        cr_expect_eq(tilec_rt_param_size(kinds7[i]), want[i], "kind %d", i);
    cr_expect_eq(tilec_rt_param_size(TILEC_RT_PARAM_KIND_COUNT), 0);
    cr_expect_eq(sizeof(tilec_rt_arg), 8);
}

/* ---- NVRTC, for sm_90, with no GPU ---- */

static const char fp16_mma_src[] =
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "#include <mma.h>\n"
    "using namespace nvcuda;\n"
    "extern \"C\" __global__ void hmma(const __half *a, const __half *b, float *c) {\n"
    "    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;\n"
    "    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;\n"
    "    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;\n"
    "    wmma::fill_fragment(fc, 0.0f);\n"
    "    wmma::load_matrix_sync(fa, a, 16);\n"
    "    wmma::load_matrix_sync(fb, b, 16);\n"
    "    wmma::mma_sync(fc, fa, fb, fc);\n"
    "    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);\n"
    "}\n"
    "extern \"C\" __global__ void hscale(__half *x, __nv_bfloat16 *y, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) { x[i] = __hmul(x[i], __float2half(2.0f)); y[i] = __float2bfloat16(__half2float(x[i])); }\n"
    "}\n";

static void expect_cubin(const unsigned char *bin, size_t size)
{
    cr_assert_geq(size, 64);
    cr_expect(memcmp(bin, "\177ELF", 4) == 0, "not an ELF image");
    cr_expect_eq(bin[4], 2, "not ELF64");
    cr_expect_eq(bin[0x12] | bin[0x13] << 8, 190, "e_machine is not EM_CUDA");
}

Test(nvrtc, version)
{
    int major = 0, minor = -1;
    cr_assert_eq(tilec_nvrtc_version(&major, &minor), TILEC_RT_OK);
    cr_expect_geq(major, 12);
    cr_expect_geq(minor, 0);
    cr_expect_eq(tilec_nvrtc_version(NULL, &minor), TILEC_RT_INVALID_ARG);
}

Test(nvrtc, include_dir_found)
{
    char dir[4096];
    cr_assert_eq(tilec_nvrtc_include_dir(dir, sizeof dir), TILEC_RT_OK);
    cr_expect(dir[0], "no CUDA include directory with cuda_fp16.h found");
    char small[1];
    cr_expect_eq(tilec_nvrtc_include_dir(small, 0), TILEC_RT_INVALID_ARG);
}

Test(nvrtc, fp16_bf16_mma_for_sm_90, .timeout = 120)
{
    void *bin = NULL;
    size_t size = 0;
    char *log = (char *)1;
    tilec_rt_status st = tilec_nvrtc_compile(fp16_mma_src, "hmma.cu", "sm_90", NULL, 0, &bin, &size, &log);
    cr_assert_eq(st, TILEC_RT_OK, "%s", log ? log : "(no log)");
    expect_cubin(bin, size);
    free(bin);
    free(log);
}

Test(nvrtc, extra_options_and_sm_90a, .timeout = 120)
{
    const char *opts[] = {"-DSCALE=3", "--use_fast_math"};
    const char src[] = "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] *= SCALE; }\n";
    void *bin = NULL;
    size_t size = 0;
    cr_assert_eq(tilec_nvrtc_compile(src, NULL, "sm_90a", opts, 2, &bin, &size, NULL), TILEC_RT_OK);
    expect_cubin(bin, size);
    free(bin);
}

Test(nvrtc, compile_error_log, .timeout = 120)
{
    const char src[] = "extern \"C\" __global__ void broken(float *x) {\n"
                       "    x[0] = undeclared_thing + 1;\n"
                       "}\n";
    void *bin = (void *)1;
    size_t size = 7;
    char *log = NULL;
    cr_assert_eq(tilec_nvrtc_compile(src, "broken.cu", "sm_90", NULL, 0, &bin, &size, &log), TILEC_RT_COMPILE_ERROR);
    cr_expect_null(bin);
    cr_expect_eq(size, 0);
    cr_assert_not_null(log);
    cr_expect(strstr(log, "broken.cu(2): error: identifier \"undeclared_thing\" is undefined"), "%s", log);
    free(log);
}

Test(nvrtc, bad_option_log, .timeout = 120)
{
    const char *opts[] = {"--no-such-option"};
    void *bin = NULL;
    size_t size = 0;
    char *log = NULL;
    cr_assert_eq(tilec_nvrtc_compile("__global__ void k() {}\n", "opt.cu", "sm_90", opts, 1, &bin, &size, &log),
                 TILEC_RT_COMPILE_ERROR);
    cr_assert_not_null(log);
    cr_expect(strncmp(log, "opt.cu: nvrtcCompileProgram: NVRTC_ERROR_INVALID_OPTION\n", 56) == 0, "%s", log);
    cr_expect(strstr(log, "--no-such-option"), "%s", log);
    free(log);
}

/* NVRTC is loaded at run time, not linked (each test runs in a process of
 * its own, so TILEC_NVRTC set here is what the first load sees). */
static void expect_no_nvrtc(const char *want)
{
    const char *why = tilec_nvrtc_load_error();
    cr_assert_not_null(why, "NVRTC loaded though TILEC_NVRTC=%s", getenv("TILEC_NVRTC"));
    cr_expect(strstr(why, want), "%s", why);
    int maj = -1, min = -1;
    cr_expect_eq(tilec_nvrtc_version(&maj, &min), TILEC_RT_COMPILE_ERROR);
    cr_expect_eq(tilec_nvrtc_arch_supported("sm_90", NULL, 0), TILEC_RT_COMPILE_ERROR);
    void *bin = NULL;
    size_t size = 0;
    char *log = NULL;
    cr_assert_eq(tilec_nvrtc_compile("__global__ void k() {}\n", "k.cu", "sm_90", NULL, 0, &bin, &size, &log),
                 TILEC_RT_COMPILE_ERROR);
    cr_expect_null(bin);
    cr_assert_not_null(log);
    cr_expect(strncmp(log, "k.cu: ", 6) == 0 && strstr(log, want) && strstr(log, "TILEC_NVRTC"), "%s", log);
    free(log);
    log = NULL;
    cr_assert_eq(tilec_nvrtc_compile_isolated("__global__ void k() {}\n", "k.cu", "sm_90", NULL, 0, &bin, &size, &log),
                 TILEC_RT_COMPILE_ERROR);
    cr_assert_not_null(log);
    cr_expect(strstr(log, want), "%s", log);
    free(log);
}

Test(nvrtc_load, a_missing_library_is_named)
{
    setenv("TILEC_NVRTC", "/nonexistent/libnvrtc.so.13", 1);
    expect_no_nvrtc("NVRTC could not be loaded from TILEC_NVRTC=/nonexistent/libnvrtc.so.13 (");
}

Test(nvrtc_load, a_library_that_is_not_nvrtc_is_refused)
{
    setenv("TILEC_NVRTC", "libm.so.6", 1);
    expect_no_nvrtc("libm.so.6 has no nvrtcGetErrorString (NVRTC 12 or newer needed)");
}

Test(nvrtc_load, found_without_a_run_path, .timeout = 120)
{
    unsetenv("TILEC_NVRTC");
    /* nothing links libnvrtc: it is found by the search (ld.so.cache or a
     * CUDA home), loaded on first use */
    void *pre = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_NOLOAD);
    cr_expect_null(pre, "libnvrtc is loaded before any NVRTC call: it is linked");
    if (pre)
        dlclose(pre);
    cr_assert_null(tilec_nvrtc_load_error(), "%s", tilec_nvrtc_load_error());
    int maj = 0, min = 0;
    cr_assert_eq(tilec_nvrtc_version(&maj, &min), TILEC_RT_OK);
    cr_expect_geq(maj, 12);
}

Test(nvrtc, bad_arguments)
{
    void *bin = NULL;
    size_t size = 0;
    char *log = NULL;
    const char *archs[] = {"sm90", "compute_90", "sm_9", "sm_9000", "sm_90x", ""};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        cr_expect_eq(tilec_nvrtc_compile("", "a.cu", archs[i], NULL, 0, &bin, &size, &log), TILEC_RT_INVALID_ARG,
                     "%s", archs[i]);
        cr_expect(log && strstr(log, "is not a real GPU architecture"), "%s", log);
        free(log);
    }
    cr_expect_eq(tilec_nvrtc_compile(NULL, "a.cu", "sm_90", NULL, 0, &bin, &size, &log), TILEC_RT_INVALID_ARG);
    free(log);
    cr_expect_eq(tilec_nvrtc_compile("", "a.cu", "sm_90", NULL, 1, &bin, &size, NULL), TILEC_RT_INVALID_ARG);
    const char *null_opt[] = {NULL};
    cr_expect_eq(tilec_nvrtc_compile("", "a.cu", "sm_90", null_opt, 1, &bin, &size, NULL), TILEC_RT_INVALID_ARG);
}

struct compile_job {
    int scale;
    tilec_rt_status st;
    size_t size;
};

static void *compile_thread(void *arg)
{
    struct compile_job *j = arg;
    char src[256], opt[32];
    snprintf(src, sizeof src, "extern \"C\" __global__ void k%d(float *x) { x[threadIdx.x] *= S; }\n", j->scale);
    snprintf(opt, sizeof opt, "-DS=%d", j->scale);
    const char *opts[] = {opt};
    void *bin = NULL;
    j->st = tilec_nvrtc_compile(src, "t.cu", "sm_90", opts, 1, &bin, &j->size, NULL);
    free(bin);
    return NULL;
}

Test(nvrtc, two_threads, .timeout = 120)
{
    pthread_t t[2];
    struct compile_job jobs[2] = {{.scale = 2}, {.scale = 3}};
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, compile_thread, &jobs[i]), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        cr_expect_eq(jobs[i].st, TILEC_RT_OK);
        cr_expect_gt(jobs[i].size, 0);
    }
}

/* ---- the driver layer against the fake driver ---- */

static char fake_path[4096];
static fake_cuda_state *fake;
static void (*fake_clear_current)(void);

/* libfakecuda.so beside this test binary. */
static void fake_setup(void)
{
    void *h = NULL;
    fake_cuda_path(fake_path, sizeof fake_path);
    fake = fake_cuda_load(fake_path, &h);
    fake_clear_current = (void (*)(void))dlsym(h, "fake_cuda_clear_current");
    cr_assert_not_null(fake_clear_current);
    unsetenv("FAKE_CUDA_MODE");
}

static tilec_rt *fake_open(void)
{
    tilec_rt *rt = NULL;
    tilec_rt_status st = tilec_rt_open_driver(fake_path, 0, &rt);
    cr_assert_eq(st, TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_expect_str_eq(tilec_rt_last_error(rt), "");
    return rt;
}

/* A PTX-like NUL-terminated text: the fake driver loads anything. */
static const char fake_image[] = "// fake module\n";

TestSuite(rt_fake, .init = fake_setup);

Test(rt_fake, open_and_device_info)
{
    tilec_rt *rt = fake_open();
    cr_expect_eq(fake->inits, 1);
    cr_expect_eq(fake->ctx_refs, 1);
    cr_expect_geq(fake->min_version_asked, 12000, "entry points asked for an ABI before CUDA 12.0");
    tilec_rt_device_props p;
    cr_assert_eq(tilec_rt_device_info(rt, &p), TILEC_RT_OK);
    cr_expect_str_eq(p.name, "Fake CUDA Device");
    cr_expect_str_eq(p.arch, "sm_90a"); /* Hopper: the arch-specific target (wgmma) */
    cr_expect_eq(p.sm_major, 9);
    cr_expect_eq(p.sm_minor, 0);
    cr_expect_eq(p.multiprocessors, 132);
    cr_expect_eq(p.l2_bytes, 50u << 20);
    cr_expect_eq(p.smem_per_block, 48u << 10);
    cr_expect_eq(p.smem_per_block_optin, FAKE_CUDA_OPTIN_SMEM);
    cr_expect_eq(p.total_mem, (uint64_t)80 << 30);
    cr_expect_eq(p.max_threads_per_block, 1024);
    cr_expect_eq(p.warp_size, 32);
    cr_expect_eq(p.driver_version, 12080);
    int n = 0;
    cr_expect_eq(tilec_rt_device_count(rt, &n), TILEC_RT_OK);
    cr_expect_eq(n, 1);
    cr_expect_eq(tilec_rt_synchronize(rt), TILEC_RT_OK);
    cr_expect_eq(tilec_rt_device_info(rt, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "tilec_rt_device_info: info is NULL");
    tilec_rt_close(rt);
    cr_expect_eq(fake->ctx_refs, 0, "the primary context was not released");
}

Test(rt_fake, no_device)
{
    tilec_rt *rt = NULL;
    setenv("FAKE_CUDA_MODE", "nodevice", 1);
    cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &rt), TILEC_RT_NO_DEVICE);
    char want[8192];
    snprintf(want, sizeof want,
             "no CUDA device: cuInit(0) in %s: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", fake_path);
    cr_expect_str_eq(tilec_rt_last_error(rt), want);
    expect_all_calls_fail(rt, TILEC_RT_NO_DEVICE);
    tilec_rt_close(rt);

    setenv("FAKE_CUDA_MODE", "zero", 1);
    cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &rt), TILEC_RT_NO_DEVICE);
    snprintf(want, sizeof want, "no CUDA device: the driver %s sees none", fake_path);
    cr_expect_str_eq(tilec_rt_last_error(rt), want);
    tilec_rt_close(rt);

    unsetenv("FAKE_CUDA_MODE");
    cr_assert_eq(tilec_rt_open_driver(fake_path, 3, &rt), TILEC_RT_NO_DEVICE);
    cr_expect_str_eq(tilec_rt_last_error(rt), "no CUDA device 3: the driver sees 1 (0 to 0)");
    tilec_rt_close(rt);
    cr_expect_eq(fake->ctx_refs, 0);
}

Test(rt_fake, init_failure_names_the_call)
{
    tilec_rt *rt = NULL;
    setenv("FAKE_CUDA_MODE", "initfail", 1);
    cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &rt), TILEC_RT_DRIVER_ERROR);
    char want[8192];
    snprintf(want, sizeof want, "cuInit(0) in %s: CUDA_ERROR_UNKNOWN (unknown error)", fake_path);
    cr_expect_str_eq(tilec_rt_last_error(rt), want);
    tilec_rt_close(rt);
}

Test(rt_fake, missing_entry_point)
{
    tilec_rt *rt = NULL;
    setenv("FAKE_CUDA_MODE", "nolaunch", 1);
    cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &rt), TILEC_RT_DRIVER_TOO_OLD);
    char want[8192];
    snprintf(want, sizeof want,
             "the CUDA driver %s (version 12.8) is too old: cuGetProcAddress(\"cuLaunchKernel\", 12000) returned "
             "CUDA_ERROR_NOT_FOUND (named symbol not found), CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND",
             fake_path);
    cr_expect_str_eq(tilec_rt_last_error(rt), want);
    tilec_rt_close(rt);
}

Test(rt_fake, memory_roundtrip)
{
    tilec_rt *rt = fake_open();
    enum { N = 1000 };
    uint64_t a = 0, b = 0;
    cr_assert_eq(tilec_rt_malloc(rt, N * 4, &a), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, N * 4, &b), TILEC_RT_OK);
    cr_expect_neq(a, 0);
    uint32_t host[N], back[N];
    cr_assert_eq(tilec_rt_memset_d32(rt, a, 0xC0FFEEu, N), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, back, a, sizeof back), TILEC_RT_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(back[i], 0xC0FFEEu, "word %d", i);
    for (int i = 0; i < N; i++)
        host[i] = (uint32_t)i * 2654435761u;
    cr_assert_eq(tilec_rt_memcpy_htod(rt, a, host, sizeof host), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_dtod(rt, b, a, sizeof host), TILEC_RT_OK);
    memset(back, 0, sizeof back);
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, back, b, sizeof back), TILEC_RT_OK);
    cr_expect(memcmp(host, back, sizeof host) == 0);

    void *s = NULL;
    cr_assert_eq(tilec_rt_stream_create(rt, TILEC_RT_STREAM_NON_BLOCKING, &s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memset_d32_async(rt, b, 5, N, s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_htod_async(rt, a, host, 8, s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_dtod_async(rt, a + 8, b, 8, s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_dtoh_async(rt, back, a, 16, s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_stream_synchronize(rt, s), TILEC_RT_OK);
    cr_expect_eq(back[0], host[0]);
    cr_expect_eq(back[1], host[1]);
    cr_expect_eq(back[2], 5);
    cr_expect_eq(back[3], 5);
    cr_expect_eq(tilec_rt_stream_destroy(rt, s), TILEC_RT_OK);
    cr_expect_eq(tilec_rt_stream_create(rt, 8, &s), TILEC_RT_INVALID_ARG);

    /* sizes of 0 do nothing; NULL host pointers with bytes are refused */
    uint64_t z = 1;
    cr_expect_eq(tilec_rt_malloc(rt, 0, &z), TILEC_RT_OK);
    cr_expect_eq(z, 0);
    cr_expect_eq(tilec_rt_free(rt, 0), TILEC_RT_OK);
    cr_expect_eq(tilec_rt_memcpy_htod(rt, a, NULL, 0), TILEC_RT_OK);
    cr_expect_eq(tilec_rt_memcpy_htod(rt, a, NULL, 4), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "tilec_rt_memcpy_htod: host pointer is NULL");

    cr_expect_eq(tilec_rt_free(rt, a), TILEC_RT_OK);
    cr_expect_eq(tilec_rt_free(rt, b), TILEC_RT_OK);
    cr_expect_eq(fake->live_allocs, 0);
    cr_expect_eq(fake->live_streams, 0);
    tilec_rt_close(rt);
}

Test(rt_fake, device_out_of_memory)
{
    tilec_rt *rt = fake_open();
    uint64_t p = 1;
    cr_expect_eq(tilec_rt_malloc(rt, (size_t)1 << 41, &p), TILEC_RT_DEVICE_NOMEM);
    cr_expect_eq(p, 0);
    cr_expect_str_eq(tilec_rt_last_error(rt),
                     "cuMemAlloc(2199023255552 bytes): CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
    tilec_rt_close(rt);
}

Test(rt_fake, events)
{
    tilec_rt *rt = fake_open();
    void *a = NULL, *b = NULL;
    cr_assert_eq(tilec_rt_event_create(rt, &a), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_event_create(rt, &b), TILEC_RT_OK);
    float ms = -1;
    cr_expect_eq(tilec_rt_event_elapsed_ms(rt, a, b, &ms), TILEC_RT_DRIVER_ERROR, "unrecorded events");
    cr_expect(strstr(tilec_rt_last_error(rt), "cuEventElapsedTime("), "%s", tilec_rt_last_error(rt));
    cr_expect(strstr(tilec_rt_last_error(rt), "): CUDA_ERROR_INVALID_VALUE (invalid argument)"), "%s",
              tilec_rt_last_error(rt));
    cr_assert_eq(tilec_rt_event_record(rt, a, NULL), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_event_record(rt, b, NULL), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_event_synchronize(rt, b), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_event_elapsed_ms(rt, a, b, &ms), TILEC_RT_OK);
    cr_expect_geq(ms, 0.0f);
    cr_expect_eq(tilec_rt_event_record(rt, NULL, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_rt_event_destroy(rt, a), TILEC_RT_OK);
    cr_expect_eq(tilec_rt_event_destroy(rt, b), TILEC_RT_OK);
    cr_expect_eq(fake->live_events, 0);
    tilec_rt_close(rt);
}

static const tilec_rt_param_kind scale2_kinds[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER,
                                                   TILEC_RT_PARAM_I32};

Test(rt_fake, launch_scale2)
{
    tilec_rt *rt = fake_open();
    tilec_rt_module *m = NULL;
    cr_assert_eq(tilec_rt_module_load(rt, fake_image, sizeof fake_image, &m), TILEC_RT_OK, "%s",
                 tilec_rt_last_error(rt));
    tilec_rt_launch_meta meta = {.block_x = 128, .nparams = 3, .kinds = scale2_kinds};
    tilec_rt_kernel *k = NULL;
    cr_assert_eq(tilec_rt_kernel_get(m, "scale2", &meta, &k), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_expect_str_eq(tilec_rt_kernel_name(k), "scale2");
    tilec_rt_launch_meta got = tilec_rt_kernel_meta(k);
    cr_expect_eq(got.block_x, 128);
    cr_expect_eq(got.nparams, 3);
    cr_expect_eq(got.kinds[2], TILEC_RT_PARAM_I32);
    cr_expect_neq(got.kinds, scale2_kinds, "the kinds are copied");
    cr_expect_eq(fake->dyn_smem_attr, -1, "no opt-in below 48 KiB");

    enum { N = 1000 };
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i + 1) * 0.37f;
    uint64_t dx, dy;
    cr_assert_eq(tilec_rt_malloc(rt, sizeof x, &dx), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, sizeof y, &dy), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_htod(rt, dx, x, sizeof x), TILEC_RT_OK);
    tilec_rt_arg args[3] = {{.ptr = dx}, {.ptr = dy}, {.i32 = N}};
    uint32_t grid[3] = {(N + 127) / 128, 1, 1};
    cr_assert_eq(tilec_rt_launch(k, grid, args, (void *)0x1234), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, y, dy, sizeof y), TILEC_RT_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(y[i], 2.0f * x[i], "y[%d]", i);
    cr_expect_eq(fake->grid[0], 8);
    cr_expect_eq(fake->grid[1], 1);
    cr_expect_eq(fake->block[0], 128);
    cr_expect_eq(fake->block[1], 1);
    cr_expect_eq(fake->smem, 0);
    cr_expect_eq(fake->stream, (void *)0x1234);
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dy);
    tilec_rt_module_unload(m);
    cr_expect_eq(fake->live_modules, 0);
    tilec_rt_close(rt);
}

Test(rt_fake, launch_packs_every_kind)
{
    tilec_rt *rt = fake_open();
    tilec_rt_module *m = NULL;
    cr_assert_eq(tilec_rt_module_load(rt, fake_image, sizeof fake_image, &m), TILEC_RT_OK);
    tilec_rt_launch_meta meta = {.block_x = 32, .dyn_smem_bytes = 100 << 10, .nparams = 7, .kinds = kinds7};
    tilec_rt_kernel *k = NULL;
    cr_assert_eq(tilec_rt_kernel_get(m, "args7", &meta, &k), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_expect_eq(fake->dyn_smem_attr, 100 << 10, "the opt-in attribute was not set above 48 KiB");
    tilec_rt_arg args[7] = {{.ptr = 0x1122334455667788ull}, {.i32 = -5},      {.i64 = -1234567890123ll},
                            {.f32 = 1.5f},                  {.f64 = -2.25},   {.u32 = 0xFFFFFFFEu},
                            {.u64 = 0xFEDCBA9876543210ull}};
    uint32_t grid[3] = {2, 3, 4};
    cr_assert_eq(tilec_rt_launch(k, grid, args, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    uint64_t p;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    uint32_t u32;
    uint64_t u64;
    memcpy(&p, fake->args[0], 8);
    memcpy(&i32, fake->args[1], 4);
    memcpy(&i64, fake->args[2], 8);
    memcpy(&f32, fake->args[3], 4);
    memcpy(&f64, fake->args[4], 8);
    memcpy(&u32, fake->args[5], 4);
    memcpy(&u64, fake->args[6], 8);
    cr_expect_eq(p, 0x1122334455667788ull);
    cr_expect_eq(i32, -5);
    cr_expect_eq(i64, -1234567890123ll);
    cr_expect_eq(f32, 1.5f);
    cr_expect_eq(f64, -2.25);
    cr_expect_eq(u32, 0xFFFFFFFEu);
    cr_expect_eq(u64, 0xFEDCBA9876543210ull);
    cr_expect_eq(fake->grid[0], 2);
    cr_expect_eq(fake->grid[1], 3);
    cr_expect_eq(fake->grid[2], 4);
    cr_expect_eq(fake->smem, 100u << 10);
    tilec_rt_module_unload(m);
    tilec_rt_close(rt);
}

Test(rt_fake, launch_error_names_the_kernel)
{
    tilec_rt *rt = fake_open();
    tilec_rt_module *m = NULL;
    cr_assert_eq(tilec_rt_module_load(rt, fake_image, sizeof fake_image, &m), TILEC_RT_OK);
    tilec_rt_launch_meta meta = {.block_x = 64};
    tilec_rt_kernel *k = NULL;
    cr_assert_eq(tilec_rt_kernel_get(m, "fail_launch", &meta, &k), TILEC_RT_OK);
    uint32_t grid[3] = {1, 1, 1};
    cr_expect_eq(tilec_rt_launch(k, grid, NULL, NULL), TILEC_RT_LAUNCH_ERROR);
    cr_expect_str_eq(tilec_rt_last_error(rt),
                     "cuLaunchKernel(kernel 'fail_launch', grid 1x1x1, block 64, 0 bytes of dynamic shared memory, "
                     "stream (nil)): CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested for launch)");
    uint32_t zero[3] = {0, 1, 1};
    cr_expect_eq(tilec_rt_launch(k, zero, NULL, NULL), TILEC_RT_LAUNCH_ERROR);
    cr_expect(strstr(tilec_rt_last_error(rt), "grid 0x1x1"), "%s", tilec_rt_last_error(rt));
    cr_expect_eq(fake->launches, 0);
    tilec_rt_module_unload(m);
    tilec_rt_close(rt);
}

/* A kernel that faults: the next call reports it with the kernel's name and
 * says that the context is lost; so does every later call (a launch too),
 * and a new runtime in the same process. */
Test(rt_fake, kernel_fault_names_the_kernel_and_loses_the_context)
{
    tilec_rt *rt = fake_open();
    tilec_rt_module *m = NULL;
    cr_assert_eq(tilec_rt_module_load(rt, fake_image, sizeof fake_image, &m), TILEC_RT_OK);
    tilec_rt_launch_meta meta = {.block_x = 64}, meta3 = {.block_x = 64, .nparams = 3, .kinds = scale2_kinds};
    tilec_rt_kernel *trap = NULL, *scale = NULL;
    cr_assert_eq(tilec_rt_kernel_get(m, "trap", &meta, &trap), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_kernel_get(m, "scale2", &meta3, &scale), TILEC_RT_OK);
    uint64_t x = 0, y = 0;
    cr_assert_eq(tilec_rt_malloc(rt, 64, &x), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, 64, &y), TILEC_RT_OK);
    tilec_rt_arg a[3] = {{.ptr = x}, {.ptr = y}, {.i32 = 16}};
    uint32_t grid[3] = {1, 1, 1};
    cr_assert_eq(tilec_rt_launch(scale, grid, a, NULL), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_launch(trap, grid, NULL, NULL), TILEC_RT_OK, "the fault shows up later, as on a GPU");
    cr_expect_eq(tilec_rt_synchronize(rt), TILEC_RT_KERNEL_FAULT);
    const char *e = tilec_rt_last_error(rt);
    cr_expect(strstr(e, "cuCtxSynchronize: CUDA_ERROR_LAUNCH_FAILED") && strstr(e, "'trap'") &&
                  strstr(e, "context is lost"),
              "%s", e);
    cr_expect_eq(tilec_rt_launch(scale, grid, a, NULL), TILEC_RT_KERNEL_FAULT, "a launch after the context is lost");
    e = tilec_rt_last_error(rt);
    cr_expect(strstr(e, "kernel 'scale2'") && strstr(e, "'trap'"), "%s", e);
    float h[16];
    cr_expect_eq(tilec_rt_memcpy_dtoh(rt, h, y, sizeof h), TILEC_RT_KERNEL_FAULT);
    tilec_rt_free(rt, x);
    tilec_rt_free(rt, y);
    tilec_rt_module_unload(m);
    tilec_rt_close(rt);
    cr_expect_eq(fake->ctx_refs, 0);

    /* as on a GPU, the fault is the process's: a new runtime says so */
    rt = NULL;
    cr_expect_eq(tilec_rt_open_driver(fake_path, 0, &rt), TILEC_RT_KERNEL_FAULT);
    e = tilec_rt_last_error(rt);
    cr_expect(strstr(e, "cuDevicePrimaryCtxRetain(device 0): CUDA_ERROR_LAUNCH_FAILED") &&
                  strstr(e, "a kernel faulted earlier in this process") && strstr(e, "restart the process"),
              "%s", e);
    tilec_rt_close(rt);
}

Test(rt_fake, kernel_get_checks)
{
    tilec_rt *rt = fake_open();
    tilec_rt_module *m = NULL;
    cr_assert_eq(tilec_rt_module_load(rt, fake_image, sizeof fake_image, &m), TILEC_RT_OK);
    tilec_rt_kernel *k = (tilec_rt_kernel *)1;
    tilec_rt_param_kind many[TILEC_RT_MAX_PARAMS + 1] = {0};
    tilec_rt_launch_meta meta = {.block_x = 128, .nparams = TILEC_RT_MAX_PARAMS + 1, .kinds = many};

    cr_expect_eq(tilec_rt_kernel_get(m, "scale2", &meta, &k), TILEC_RT_INVALID_ARG);
    cr_expect_null(k);
    cr_expect_str_eq(tilec_rt_last_error(rt),
                     "kernel 'scale2': bad launch metadata: 65 parameters; at most 64 are supported");

    meta = (tilec_rt_launch_meta){.block_x = 128, .nparams = 3, .kinds = scale2_kinds};
    cr_expect_eq(tilec_rt_kernel_get(m, "nope", &meta, &k), TILEC_RT_NOT_FOUND);
    cr_expect_str_eq(tilec_rt_last_error(rt),
                     "kernel 'nope' not found in the module (is it extern \"C\" __global__?): cuModuleGetFunction: "
                     "CUDA_ERROR_NOT_FOUND (named symbol not found)");

    meta.nparams = 2;
    cr_expect_eq(tilec_rt_kernel_get(m, "scale2", &meta, &k), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "kernel 'scale2' has more than the 2 parameters of its launch metadata");
    tilec_rt_param_kind four[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_I32,
                                  TILEC_RT_PARAM_I32};
    meta = (tilec_rt_launch_meta){.block_x = 128, .nparams = 4, .kinds = four};
    cr_expect_eq(tilec_rt_kernel_get(m, "scale2", &meta, &k), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "kernel 'scale2' has 3 parameters; its launch metadata lists 4");
    tilec_rt_param_kind wrong[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_I64};
    meta.nparams = 3;
    meta.kinds = wrong;
    cr_expect_eq(tilec_rt_kernel_get(m, "scale2", &meta, &k), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt),
                     "kernel 'scale2' parameter 2 is 4 bytes, but its launch metadata says i64 (8 bytes)");

    tilec_rt_param_kind ptr[] = {TILEC_RT_PARAM_POINTER};
    meta = (tilec_rt_launch_meta){.block_x = 512, .nparams = 1, .kinds = ptr};
    cr_expect_eq(tilec_rt_kernel_get(m, "heavy", &meta, &k), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "kernel 'heavy' runs at most 256 threads per block (its registers "
                                              "allow no more); its launch metadata asks for 512");
    meta.block_x = 256;
    cr_expect_eq(tilec_rt_kernel_get(m, "heavy", &meta, &k), TILEC_RT_OK);

    meta = (tilec_rt_launch_meta){.block_x = 32, .dyn_smem_bytes = 200 << 10};
    cr_expect_eq(tilec_rt_kernel_get(m, "static_smem", &meta, &k), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "kernel 'static_smem' needs 40960 bytes of static and 204800 of dynamic "
                                              "shared memory; device 0 (Fake CUDA Device) allows 232448 per block");
    /* 40 KiB static + 16 KiB dynamic is past 48 KiB: the opt-in is set */
    meta.dyn_smem_bytes = 16 << 10;
    cr_expect_eq(tilec_rt_kernel_get(m, "static_smem", &meta, &k), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_expect_eq(fake->dyn_smem_attr, 16 << 10);
    tilec_rt_module_unload(m);
    tilec_rt_close(rt);
}

Test(rt_fake, driver_before_12_4_skips_param_sizes)
{
    setenv("FAKE_CUDA_MODE", "noparaminfo", 1);
    tilec_rt *rt = fake_open();
    tilec_rt_module *m = NULL;
    cr_assert_eq(tilec_rt_module_load(rt, fake_image, sizeof fake_image, &m), TILEC_RT_OK);
    tilec_rt_param_kind wrong[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_I64};
    tilec_rt_launch_meta meta = {.block_x = 128, .nparams = 3, .kinds = wrong};
    tilec_rt_kernel *k = NULL;
    cr_expect_eq(tilec_rt_kernel_get(m, "scale2", &meta, &k), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    tilec_rt_module_unload(m);
    tilec_rt_close(rt);
}

Test(rt_fake, module_images, .timeout = 120)
{
    tilec_rt *rt = fake_open();
    tilec_rt_module *m = (tilec_rt_module *)1;
    cr_expect_eq(tilec_rt_module_load(rt, NULL, 0, &m), TILEC_RT_INVALID_ARG);
    cr_expect_null(m);
    const char no_nul[] = {'a', 'b', 'c'};
    cr_expect_eq(tilec_rt_module_load(rt, no_nul, sizeof no_nul, &m), TILEC_RT_MODULE_ERROR);
    cr_expect_str_eq(tilec_rt_last_error(rt),
                     "module image of 3 bytes rejected: neither a CUBIN (ELF), a fatbinary nor NUL-terminated PTX");
    const char bad[] = "BADIMAGE";
    cr_expect_eq(tilec_rt_module_load(rt, bad, sizeof bad, &m), TILEC_RT_MODULE_ERROR);
    cr_expect_str_eq(tilec_rt_last_error(rt),
                     "cuModuleLoadData(image of 9 bytes, device 0 is sm_90a, driver 12.8): CUDA_ERROR_NO_BINARY_FOR_GPU "
                     "(no kernel image is available for execution on the device)");
    cr_expect_eq(fake->live_modules, 0);

    /* a real CUBIN passes the checks; every truncation of it fails them */
    void *bin = NULL;
    size_t size = 0;
    char *log = NULL;
    const char src[] = "extern \"C\" __global__ void scale2(const float *x, float *y, int n) {\n"
                       "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "    if (i < n) y[i] = 2.0f * x[i];\n"
                       "}\n";
    cr_assert_eq(tilec_nvrtc_compile(src, "scale2.cu", "sm_90", NULL, 0, &bin, &size, &log), TILEC_RT_OK, "%s", log);
    cr_assert_eq(tilec_rt_module_load(rt, bin, size, &m), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    tilec_rt_module_unload(m);
    for (size_t cut = 1; cut < size; cut += 1 + cut / 16) {
        tilec_rt_status st = tilec_rt_module_load(rt, bin, size - cut, &m);
        cr_expect_eq(st, TILEC_RT_MODULE_ERROR, "cubin cut by %zu bytes of %zu was loaded", cut, size);
        if (st == TILEC_RT_OK)
            tilec_rt_module_unload(m);
    }
    unsigned char *copy = malloc(size);
    memcpy(copy, bin, size);
    copy[0x12] = 62; /* EM_X86_64 */
    cr_expect_eq(tilec_rt_module_load(rt, copy, size, &m), TILEC_RT_MODULE_ERROR);
    cr_expect(strstr(tilec_rt_last_error(rt), "not a CUBIN"), "%s", tilec_rt_last_error(rt));
    memcpy(copy, bin, size);
    copy[0x28 + 7] = 0x40; /* e_shoff far past the end */
    cr_expect_eq(tilec_rt_module_load(rt, copy, size, &m), TILEC_RT_MODULE_ERROR);
    cr_expect(strstr(tilec_rt_last_error(rt), "section headers lie outside the image"), "%s",
              tilec_rt_last_error(rt));
    /* headers intact, but the last section's size runs past the end */
    uint64_t shoff = 0, phoff = 0;
    uint16_t shentsize = 0, shnum = 0, phnum = 0;
    const unsigned char *img = bin;
    memcpy(&phoff, img + 0x20, 8); /* little-endian host, as the GPU machines */
    memcpy(&shoff, img + 0x28, 8);
    memcpy(&phnum, img + 0x38, 2);
    memcpy(&shentsize, img + 0x3A, 2);
    memcpy(&shnum, img + 0x3C, 2);
    cr_assert_gt(shnum, 1);
    memcpy(copy, bin, size);
    copy[shoff + (uint64_t)(shnum - 1) * shentsize + 0x20 + 5] = 0x10;
    cr_expect_eq(tilec_rt_module_load(rt, copy, size, &m), TILEC_RT_MODULE_ERROR);
    cr_expect(strstr(tilec_rt_last_error(rt), "a section lies outside the image"), "%s", tilec_rt_last_error(rt));
    if (phnum) {
        memcpy(copy, bin, size);
        copy[phoff + 8 + 5] = 0x10; /* the first segment's offset */
        cr_expect_eq(tilec_rt_module_load(rt, copy, size, &m), TILEC_RT_MODULE_ERROR);
        cr_expect(strstr(tilec_rt_last_error(rt), "a segment lies outside the image"), "%s", tilec_rt_last_error(rt));
    }
    free(copy);
    free(bin);
    cr_expect_eq(fake->live_modules, 0);
    tilec_rt_close(rt);
}

struct thread_launch {
    const tilec_rt_kernel *k;
    tilec_rt *rt;
    tilec_rt_status before, after;
};

static void *launch_thread(void *arg)
{
    struct thread_launch *t = arg;
    uint32_t grid[3] = {1, 1, 1};
    tilec_rt_arg args[3] = {{.ptr = 0}, {.ptr = 0}, {.i32 = 0}};
    t->before = tilec_rt_launch(t->k, grid, args, NULL); /* no context current in this thread yet */
    if (tilec_rt_make_current(t->rt) == TILEC_RT_OK)
        t->after = tilec_rt_launch(t->k, grid, args, NULL);
    return NULL;
}

Test(rt_fake, make_current_elsewhere)
{
    tilec_rt *rt = fake_open();
    tilec_rt_module *m = NULL;
    cr_assert_eq(tilec_rt_module_load(rt, fake_image, sizeof fake_image, &m), TILEC_RT_OK);
    tilec_rt_launch_meta meta = {.block_x = 32, .nparams = 3, .kinds = scale2_kinds};
    tilec_rt_kernel *k = NULL;
    cr_assert_eq(tilec_rt_kernel_get(m, "scale2", &meta, &k), TILEC_RT_OK);
    /* the fake's current context is process-wide: clear it to stand for a
     * thread that never had it */
    fake_clear_current();
    struct thread_launch t = {.k = k, .rt = rt, .before = TILEC_RT_OK, .after = TILEC_RT_LAUNCH_ERROR};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, launch_thread, &t), 0);
    pthread_join(th, NULL);
    cr_expect_eq(t.before, TILEC_RT_LAUNCH_ERROR);
    cr_expect(strstr(tilec_rt_last_error(rt), "see tilec_rt_make_current"), "%s", tilec_rt_last_error(rt));
    cr_expect_eq(t.after, TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    tilec_rt_module_unload(m);
    tilec_rt_close(rt);
}

/* ---- ahead-of-time programs (tilec --emit c --aot): loaded from a table, no NVRTC ---- */
#include "runtime/program_internal.h"
#include "tilec/program.h"

static int aot_grid(const int64_t *a, uint32_t g[3])
{
    if (a[2] < 0)
        return -1;
    g[0] = (uint32_t)((a[2] + 127) / 128);
    g[1] = g[2] = 1;
    return 0;
}

Test(rt_fake, aot_program_loads_and_launches)
{
    tilec_rt *rt = fake_open();
    const tilec_aot_kernel ks[] = {
        {"scale", 0, 1, "scale2", fake_image, sizeof fake_image, 128, 0, 3, scale2_kinds, 0x2, aot_grid, 0, 0, NULL},
    };
    tilec_program *p = NULL;
    cr_assert_eq(tilec_program_load(rt, ks, 1, &p), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_expect_eq(fake->live_modules, 1);
    cr_expect_not_null(tilec_program_kernel(p, "scale", 0));
    cr_expect_null(tilec_program_kernel(p, "scale", 1));
    enum { N = 300 };
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    uint64_t dx, dy;
    cr_assert_eq(tilec_rt_malloc(rt, sizeof x, &dx), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, sizeof y, &dy), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_htod(rt, dx, x, sizeof x), TILEC_RT_OK);
    tilec_rt_arg args[3] = {{.ptr = dx}, {.ptr = dy}, {.i32 = N}};
    int before = fake->launches;
    cr_assert_eq(tilec_program_launch(p, "scale", 0, args, 3, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_expect_eq(fake->grid[0], 3, "the grid comes from the table's function");
    cr_expect_eq(fake->block[0], 128);
    int chosen = -1;
    cr_assert_eq(tilec_program_launch_best(p, "scale", args, 3, NULL, &chosen), TILEC_RT_OK);
    cr_expect_eq(chosen, 0);
    cr_expect_eq(fake->launches, before + 2);
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, y, dy, sizeof y), TILEC_RT_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(y[i], 2.0f * x[i], "y[%d]", i);
    args[2].i32 = -1; /* the grid function refuses */
    cr_expect_eq(tilec_program_launch(p, "scale", 0, args, 3, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_program_launch(p, "nope", 0, args, 3, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_program_launch(p, "scale", 0, args, 2, NULL), TILEC_RT_INVALID_ARG);
    tilec_program_stats st;
    tilec_program_get_stats(p, &st);
    cr_expect_eq(st.kernels, 1);
    cr_expect_eq(st.nvrtc_compiles, 0);
    tilec_program_free(p);
    cr_expect_eq(fake->live_modules, 0);
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dy);
    tilec_rt_close(rt);
}

/* A launch with the scalars of the kernel's last launch reuses its grid
 * (the program's grid memo); other scalars evaluate the grid again, and a
 * grid the function refuses is never kept. */
static int counted_calls;

static int counted_grid(const int64_t *a, uint32_t g[3])
{
    counted_calls++;
    return aot_grid(a, g);
}

Test(rt_fake, launches_with_the_same_scalars_reuse_the_grid)
{
    tilec_rt *rt = fake_open();
    const tilec_aot_kernel ks[] = {
        {"scale", 0, 1, "scale2", fake_image, sizeof fake_image, 128, 0, 3, scale2_kinds, 0x2, counted_grid, 0, 0, NULL},
    };
    tilec_program *p = NULL;
    cr_assert_eq(tilec_program_load(rt, ks, 1, &p), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    uint64_t dx, dy;
    cr_assert_eq(tilec_rt_malloc(rt, 1024 * 4, &dx), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, 1024 * 4, &dy), TILEC_RT_OK);
    tilec_rt_arg args[3] = {{.ptr = dx}, {.ptr = dy}, {.i32 = 300}};
    counted_calls = 0;
    static const struct {
        int32_t n;
        int calls;  /* the grid function's calls so far */
        unsigned g; /* the launch's grid */
    } steps[] = {{300, 1, 3}, {300, 1, 3}, {300, 1, 3}, {1000, 2, 8}, {1000, 2, 8}, {300, 3, 3}, {0, 4, 0}, {0, 4, 0}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        args[2].i32 = steps[i].n;
        fake->grid[0] = 99;
        cr_assert_eq(tilec_program_launch(p, "scale", 0, args, 3, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
        cr_expect_eq(counted_calls, steps[i].calls, "launch %zu (n=%d): the grid function ran %d times", i,
                     steps[i].n, counted_calls);
        cr_expect_eq(fake->grid[0], steps[i].g ? steps[i].g : 99, "launch %zu (n=%d): grid %u", i, steps[i].n,
                     fake->grid[0]); /* an empty grid launches nothing */
    }
    args[2].i32 = -1; /* refused each time: nothing kept */
    cr_expect_eq(tilec_program_launch(p, "scale", 0, args, 3, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_program_launch(p, "scale", 0, args, 3, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_eq(counted_calls, 6);
    tilec_program_free(p);
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dy);
    tilec_rt_close(rt);
}

/* split-K (docs/runtime.md, "Split-K workspaces"): a variant with split_k
 * gets two hidden pointers after its own arguments, a pair per stream, its
 * counters zeroed once, grown when a launch needs more, all freed with the
 * program; an owner's pair (a plan's CUDA graph) is grown only by fit,
 * used by the owner's launches only, and freed when dropped. */
static const tilec_rt_param_kind sk_kinds[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_I32};

static int sk_grid(const int64_t *args, uint32_t grid[3])
{
    grid[0] = (uint32_t)args[1];
    grid[1] = 2;
    grid[2] = 4; /* split_k 4, as the lowering's grid gives it */
    return 0;
}

Test(rt_fake, split_k_workspace_per_stream)
{
    tilec_rt *rt = fake_open();
    int live0 = fake->live_allocs;
    const tilec_aot_kernel ks[] = {
        {"sk", 0, 1, "sk_v0", fake_image, sizeof fake_image, 128, 0, 2, sk_kinds, 0, sk_grid, 4, 4096, NULL},
    };
    tilec_program *p = NULL;
    cr_assert_eq(tilec_program_load(rt, ks, 1, &p), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    uint64_t dx;
    cr_assert_eq(tilec_rt_malloc(rt, 64, &dx), TILEC_RT_OK);
    tilec_rt_arg args[2] = {{.ptr = dx}, {.i32 = 3}};
    fake->split_dirty = 0;
    cr_assert_eq(tilec_program_launch(p, "sk", 0, args, 2, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_expect_eq(fake->split_launches, 1);
    cr_expect_eq(fake->grid[2], 4);
    unsigned long long part = fake->split_part, cnt = fake->split_cnt;
    cr_expect(part && cnt && part != cnt, "the hidden pointers: %llx %llx", part, cnt);
    cr_expect_eq(fake->split_dirty, 0, "the counters start at zero");
    int live1 = fake->live_allocs;
    cr_expect_eq(live1, live0 + 3, "x, the partials, the counters");
    cr_assert_eq(tilec_program_launch(p, "sk", 0, args, 2, NULL), TILEC_RT_OK);
    cr_expect(fake->split_part == part && fake->split_cnt == cnt, "the same stream keeps its pair");
    cr_expect_eq(fake->live_allocs, live1, "nothing allocated again");
    /* another stream: its own pair */
    void *s1 = NULL, *s2 = NULL;
    cr_assert_eq(tilec_rt_stream_create(rt, TILEC_RT_STREAM_NON_BLOCKING, &s1), TILEC_RT_OK);
    cr_assert_eq(tilec_program_launch(p, "sk", 0, args, 2, s1), TILEC_RT_OK);
    cr_expect(fake->split_part != part && fake->split_cnt != cnt, "two streams never share");
    unsigned long long part1 = fake->split_part;
    /* a launch of more blocks (3 x 2 x 4 = 24 fit in 64 KiB; 96 x 2 x 4 do not) grows the pair */
    args[1].i32 = 96;
    cr_assert_eq(tilec_program_launch(p, "sk", 0, args, 2, s1), TILEC_RT_OK);
    cr_expect_neq(fake->split_part, part1, "grown");
    cr_expect_eq(fake->split_dirty, 0);
    /* an owner's pair (a plan's CUDA graph): never grown by a launch (a
     * capture may not allocate); a launch that finds it too small launches
     * nothing and notes the need, which fit then allocates, zeroed */
    cr_assert_eq(tilec_rt_stream_create(rt, TILEC_RT_STREAM_NON_BLOCKING, &s2), TILEC_RT_OK);
    static const int owner = 0;
    int live2 = fake->live_allocs, launches = fake->split_launches;
    cr_assert_eq(rt_program_launch_at(p, 0, args, s2, &owner), TILEC_RT_OK);
    cr_expect_eq(fake->split_launches, launches, "too small: not launched");
    cr_expect_eq(fake->live_allocs, live2, "nothing allocated by the launch");
    cr_expect(rt_program_split_short(p, &owner));
    cr_assert_eq(rt_program_split_fit(p, &owner, s2), TILEC_RT_OK);
    cr_expect(!rt_program_split_short(p, &owner));
    cr_expect_eq(fake->live_allocs, live2 + 2, "the owner's partials and counters");
    cr_assert_eq(rt_program_launch_at(p, 0, args, s2, &owner), TILEC_RT_OK);
    cr_expect_eq(fake->split_launches, launches + 1);
    cr_expect(fake->split_part != part1 && fake->split_part != part, "the owner's pair is no stream's");
    cr_expect_eq(fake->split_dirty, 0);
    cr_assert_eq(tilec_program_launch(p, "sk", 0, args, 2, s2), TILEC_RT_OK);
    cr_expect_eq(fake->live_allocs, live2 + 4, "the stream s2 has a pair of its own");
    rt_program_split_drop(p, &owner);
    cr_expect_eq(fake->live_allocs, live2 + 2, "dropped: the owner's pair freed");
    cr_expect(!rt_program_split_short(p, &owner));
    cr_expect_eq(fake->allocs_in_capture, 0);
    tilec_program_free(p);
    cr_expect_eq(fake->live_allocs, live0 + 1, "every workspace freed with the program (x is left)");
    tilec_rt_free(rt, dx);
    tilec_rt_stream_destroy(rt, s1);
    tilec_rt_stream_destroy(rt, s2);
    tilec_rt_close(rt);
}

Test(rt_fake, aot_program_rejects_a_bad_table)
{
    tilec_rt *rt = fake_open();
    tilec_program *p = (tilec_program *)0x1;
    const tilec_aot_kernel good = {"scale", 0, 1, "scale2", fake_image, sizeof fake_image, 128, 0, 3,
                                   scale2_kinds, 0, aot_grid, 0, 0, NULL};
    tilec_aot_kernel bad[6];
    for (int i = 0; i < 6; i++)
        bad[i] = good;
    bad[0].image = NULL;
    bad[1].grid = NULL;
    bad[2].variant = 1; /* variant 1 of a kernel with one */
    bad[3].nvariants = 2; /* its variant 1 is missing */
    bad[4].nparams = 65;
    bad[5].kernel = NULL;
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(tilec_program_load(rt, &bad[i], 1, &p), TILEC_RT_INVALID_ARG, "entry %d", i);
        cr_expect_null(p);
    }
    tilec_aot_kernel missing = good;
    missing.name = "no_such_kernel";
    cr_expect_neq(tilec_program_load(rt, &missing, 1, &p), TILEC_RT_OK);
    cr_expect_null(p);
    cr_expect_eq(fake->live_modules, 0, "a failed load unloads what it loaded");
    cr_expect_eq(tilec_program_load(NULL, &good, 1, &p), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_program_load(rt, &good, 1, NULL), TILEC_RT_INVALID_ARG);
    tilec_rt_close(rt);
}

/* Tensor lists (docs/language.md §4.3, tilec/param_kind.h): a program's
 * launch packs each list into its table of tilec_rt_list_cap tensors (126
 * for lscale_v0's two lists and an f32) and splits a longer list into
 * launches of that many; the fake lscale_v0 computes y[t] = s * x[t] from
 * the tables it gets. Lists of different lengths, a NULL list and a
 * negative count are refused with the kernel and the argument named. */
static const tilec_rt_param_kind list_kinds[] = {TILEC_RT_PARAM_LIST, TILEC_RT_PARAM_LIST, TILEC_RT_PARAM_F32};

static int list_grid(const int64_t *a, uint32_t g[3])
{
    g[0] = (uint32_t)a[0]; /* len(x): the launch's tensors */
    g[1] = g[2] = 1;
    return 0;
}

Test(rt_fake, tensor_lists_are_packed_and_split)
{
    tilec_rt *rt = fake_open();
    const tilec_aot_kernel ks[] = {
        {"lscale", 0, 1, "lscale_v0", fake_image, sizeof fake_image, 128, 0, 3, list_kinds, 0x2, list_grid, 0, 0, NULL},
    };
    cr_expect_eq(tilec_rt_list_cap(3, 2), 126);
    cr_expect_eq(tilec_rt_list_bytes(126), 2024);
    tilec_program *p = NULL;
    cr_assert_eq(tilec_program_load(rt, ks, 1, &p), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    enum { T = 300 };
    static uint64_t xp[T], yp[T];
    static int64_t numel[T];
    for (int t = 0; t < T; t++) {
        numel[t] = t % 5; /* empty tensors too */
        float x[4] = {(float)t, (float)t + 1, (float)t + 2, (float)t + 3};
        cr_assert_eq(tilec_rt_malloc(rt, sizeof x, &xp[t]), TILEC_RT_OK);
        cr_assert_eq(tilec_rt_malloc(rt, sizeof x, &yp[t]), TILEC_RT_OK);
        cr_assert_eq(tilec_rt_memcpy_htod(rt, xp[t], x, sizeof x), TILEC_RT_OK);
    }
    tilec_rt_list xl = {T, xp, numel}, yl = {T, yp, numel};
    tilec_rt_arg args[3] = {{.list = &xl}, {.list = &yl}, {.f32 = 3.0f}};
    int before = fake->launches;
    fake->list_launches = 0;
    cr_assert_eq(tilec_program_launch(p, "lscale", 0, args, 3, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_expect_eq(fake->launches - before, 3);
    cr_expect_eq(fake->list_launches, 3);
    cr_expect_eq(fake->list_n[0], 126);
    cr_expect_eq(fake->list_n[1], 126);
    cr_expect_eq(fake->list_n[2], 48);
    for (int t = 0; t < T; t++) {
        float y[4] = {0};
        cr_assert_eq(tilec_rt_memcpy_dtoh(rt, y, yp[t], sizeof y), TILEC_RT_OK);
        for (int j = 0; j < numel[t]; j++)
            cr_assert_eq(y[j], 3.0f * (float)(t + j), "tensor %d element %d", t, j);
    }
    /* refused, nothing launched */
    before = fake->launches;
    tilec_rt_list shorter = {T - 1, yp, numel};
    args[1].list = &shorter;
    cr_expect_eq(tilec_program_launch(p, "lscale", 0, args, 3, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "kernel 'lscale': tensor list arguments 1 and 2 have 300 and 299 "
                                              "tensors; every list of a launch must have as many");
    args[1].list = NULL;
    cr_expect_eq(tilec_program_launch(p, "lscale", 0, args, 3, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "kernel 'lscale': argument 2 is a tensor list, but NULL was passed");
    numel[7] = -1;
    args[1].list = &yl;
    cr_expect_eq(tilec_program_launch(p, "lscale", 0, args, 3, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "kernel 'lscale': tensor 7 of list argument 1 has -1 elements");
    numel[7] = 2;
    tilec_rt_list nothing = {T, NULL, NULL};
    args[0].list = &nothing;
    cr_expect_eq(tilec_program_launch(p, "lscale", 0, args, 3, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "kernel 'lscale': tensor list argument 1 has 300 tensors but no "
                                              "addresses or element counts");
    cr_expect_eq(fake->launches, before);
    /* empty lists: one launch's grid of len 0, so nothing runs */
    tilec_rt_list empty = {0, NULL, NULL};
    args[0].list = args[1].list = &empty;
    cr_expect_eq(tilec_program_launch(p, "lscale", 0, args, 3, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_expect_eq(fake->launches, before);
    tilec_program_free(p);
    /* a table that gives a list kernel two variants: the multi-kernel refuses to time it */
    const tilec_aot_kernel two[] = {
        {"lscale", 0, 2, "lscale_v0", fake_image, sizeof fake_image, 128, 0, 3, list_kinds, 0x2, list_grid, 0, 0, NULL},
        {"lscale", 1, 2, "lscale_v0", fake_image, sizeof fake_image, 128, 0, 3, list_kinds, 0x2, list_grid, 0, 0, NULL},
    };
    cr_assert_eq(tilec_program_load(rt, two, 2, &p), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    args[0].list = args[1].list = &xl;
    int chosen = -1;
    cr_expect_eq(tilec_program_launch_best(p, "lscale", args, 3, NULL, &chosen), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_rt_last_error(rt), "kernel lscale takes tensor lists and has 2 variants: the runtime times "
                                              "variants on copies of the buffers they write, which it does not make for "
                                              "tensor lists");
    cr_expect_eq(fake->launches, before);
    tilec_program_free(p);
    for (int t = 0; t < T; t++) {
        tilec_rt_free(rt, xp[t]);
        tilec_rt_free(rt, yp[t]);
    }
    tilec_rt_close(rt);
}
