/* test_gpu_im2col.c: the runtime's im2col tensor map (tilec/tma.h,
 * runtime/tma.c) on a real 9.0 GPU, before any lowering writes a kernel
 * that reads one: a hand-written twin copies, for each block of 64
 * consecutive output pixels, filter tap (r, s) and 64 channels, one box
 * by `cp.async.bulk.tensor.4d ... im2col` (the block's first pixel's
 * corner coordinates, the tap as the offsets) and writes the rows out;
 * the result must equal the CPU's im2col of a random NHWC f16 image
 * (zeros in the padding) for strides 1 and 2, paddings 0 to 2, 3 x 3,
 * 1 x 1, 3 x 1, 1 x 3 and 5 x 5 filters and odd image sizes. The variant
 * beside the twin marks its output 0xffff, so a launch that did not take
 * the twin fails the comparison. The twin and variant are loaded as an
 * ahead-of-time table entry (tilec_program_load) with the map's metadata,
 * so the runtime encodes the map from the launch's arguments
 * (cuTensorMapEncodeIm2col). Without a GPU it prints one line "SKIP: no
 * GPU (...)"; on another device than 9.0 the test is skipped. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/aot.h"
#include "tilec/program.h"
#include "tilec/runtime.h"

/* x, out, N, H, W, C, R, S, stride, pad, OH, OW; the twin takes x's map after them. out[(p * R * S + tap) *
 * C + c] is channel c of output pixel p's tap (r, s) = (tap / S, tap % S). Blocks: 64 pixels along x, the
 * taps along y, 64 channels along z. */
static const char ic_src[] =
    "struct __align__(64) tmap { unsigned long long v[16]; };\n"
    "extern \"C\" __global__ void ic_v0(const unsigned short *x, unsigned short *out, int N, int H, int W, int C,\n"
    "                                   int R, int S, int st, int pad, int OH, int OW)\n"
    "{\n"
    "    int P = N * OH * OW, tap = blockIdx.y, c0 = blockIdx.z * 64;\n"
    "    for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) {\n"
    "        int p = blockIdx.x * 64 + i / 64;\n"
    "        if (p < P)\n"
    "            out[((long long)p * R * S + tap) * C + c0 + i % 64] = 0xffff;\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(128) ic_v0_tma(const unsigned short *x, unsigned short *out,\n"
    "    int N, int H, int W, int C, int R, int S, int st, int pad, int OH, int OW, const __grid_constant__ tmap m)\n"
    "{\n"
    "    extern __shared__ unsigned char dyn[];\n"
    "    __shared__ __align__(8) unsigned long long bar;\n"
    "    int P = N * OH * OW, p0 = blockIdx.x * 64, tap = blockIdx.y, r = tap / S, s = tap % S, c0 = blockIdx.z * 64;\n"
    "    int n = p0 / (OH * OW), oh = p0 / OW % OH, ow = p0 % OW;\n"
    "    unsigned base = (unsigned)__cvta_generic_to_shared(dyn), dst = (base + 1023u) & ~1023u;\n"
    "    const unsigned char *box = dyn + (dst - base);\n"
    "    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);\n"
    "    if (threadIdx.x == 0) {\n"
    "        asm volatile(\"mbarrier.init.shared::cta.b64 [%0], 1;\" :: \"r\"(b) : \"memory\");\n"
    "        asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
    "    }\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0) {\n"
    "        asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(b), \"r\"(64 * 128) : \"memory\");\n"
    "        asm volatile(\"cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes\"\n"
    "                     \" [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\"\n"
    "                     :: \"r\"(dst), \"l\"((unsigned long long)&m), \"r\"(c0), \"r\"(ow * st - pad), \"r\"(oh * st - pad),\n"
    "                        \"r\"(n), \"r\"(b), \"h\"((unsigned short)s), \"h\"((unsigned short)r) : \"memory\");\n"
    "    }\n"
    "    unsigned ok = 0;\n"
    "    do {\n"
    "        asm volatile(\"{ .reg .pred q; mbarrier.try_wait.parity.shared::cta.b64 q, [%1], 0; selp.u32 %0, 1, 0, q; }\"\n"
    "                     : \"=r\"(ok) : \"r\"(b) : \"memory\");\n"
    "    } while (!ok);\n"
    "    for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) {\n"
    "        int row = i / 64, col = i % 64, p = p0 + row;\n"
    "        if (p >= P)\n"
    "            continue;\n"
    "        /* 128-byte swizzle: row's 16-byte chunk j at j ^ (row % 8) */\n"
    "        const unsigned short *e = (const unsigned short *)(box + row * 128 + ((col / 8) ^ (row & 7)) * 16) + col % 8;\n"
    "        out[((long long)p * R * S + tap) * C + c0 + col] = *e;\n"
    "    }\n"
    "}\n";

static const tilec_rt_param_kind ic_kinds[12] = {
    TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_I32, TILEC_RT_PARAM_I32,
    TILEC_RT_PARAM_I32,     TILEC_RT_PARAM_I32,     TILEC_RT_PARAM_I32, TILEC_RT_PARAM_I32,
    TILEC_RT_PARAM_I32,     TILEC_RT_PARAM_I32,     TILEC_RT_PARAM_I32, TILEC_RT_PARAM_I32};
static char ic_twin[] = "ic_v0_tma";
/* x's map: N images (parameter 2) of H x W pixels (3, 4) of C channels (5), a pixel every C; filter R x S
 * (6, 7), stride 8, padding 9; boxes of 64 pixels of 64 halves */
static const tilec_tma_meta ic_meta = {ic_twin, 128, 64 * 128 + 1024, 1, 0, {
    {0, 2, 5, 5, 64, 64, 2, 0, 0, {TILEC_TMA_NONE, TILEC_TMA_NONE}, 0, 0, 1, 3, 4, 6, 7, 9, 8}}, 0, 0, 0, 0};

static int ic_grid(const int64_t *a, uint32_t g[3])
{
    int64_t p = a[2] * a[10] * a[11];
    g[0] = (uint32_t)((p + 63) / 64);
    g[1] = (uint32_t)(a[6] * a[7]);
    g[2] = (uint32_t)(a[5] / 64);
    return 0;
}

static uint32_t rng = 12345u;

static uint16_t rnd_half(void) /* a finite f16: sign, exponent 1..30, any mantissa */
{
    rng = rng * 1664525u + 1013904223u;
    uint32_t v = rng >> 8;
    return (uint16_t)((v & 0x83ffu) | ((1u + (v >> 10) % 30u) << 10));
}

Test(gpu_im2col, boxes_equal_the_cpu_s_im2col, .timeout = 120)
{
    tilec_rt *rt = NULL;
    tilec_rt_status st = tilec_rt_open(0, &rt);
    if (st == TILEC_RT_NO_DRIVER || st == TILEC_RT_NO_DEVICE) {
        fprintf(stderr, "SKIP: no GPU (%s)\n", tilec_rt_status_string(st));
        tilec_rt_close(rt);
        cr_skip_test("no GPU");
    }
    cr_assert_eq(st, TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    tilec_rt_device_props props;
    cr_assert_eq(tilec_rt_device_info(rt, &props), TILEC_RT_OK);
    if (props.sm_major != 9 || props.sm_minor != 0) {
        tilec_rt_close(rt);
        cr_skip_test("a %d.%d device: TMA's im2col mode is tested on 9.0", props.sm_major, props.sm_minor);
    }
    void *bin = NULL;
    size_t size = 0;
    char *log = NULL;
    st = tilec_nvrtc_compile(ic_src, "ic.cu", "sm_90a", NULL, 0, &bin, &size, &log);
    cr_assert_eq(st, TILEC_RT_OK, "%s: %s", tilec_rt_status_string(st), log ? log : "");
    free(log);
    const tilec_aot_kernel ks[] = {
        {"ic", 0, 1, "ic_v0", bin, size, 128, 0, 12, ic_kinds, 0x2, ic_grid, 0, 0, &ic_meta},
    };
    tilec_program *p = NULL;
    cr_assert_eq(tilec_program_load(rt, ks, 1, &p), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_assert(tilec_program_has_twin(p, "ic", 0), "the twin with an im2col map was not resolved");
    static const struct {
        int n, h, w, c, r, s, st, pad;
    } cases[] = {
        {2, 9, 7, 64, 3, 3, 1, 1},  {1, 13, 11, 128, 3, 3, 2, 1}, {3, 5, 6, 64, 1, 1, 1, 0}, {1, 7, 9, 64, 1, 1, 2, 0},
        {1, 10, 9, 64, 3, 1, 1, 1}, {2, 8, 12, 64, 1, 3, 2, 0},   {2, 7, 7, 64, 5, 5, 2, 2}, {1, 3, 3, 64, 3, 3, 1, 2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int N = cases[k].n, H = cases[k].h, W = cases[k].w, C = cases[k].c, R = cases[k].r, S = cases[k].s;
        int sd = cases[k].st, pad = cases[k].pad;
        int OH = (H + 2 * pad - R) / sd + 1, OW = (W + 2 * pad - S) / sd + 1, P = N * OH * OW;
        size_t nx = (size_t)N * H * W * C, no = (size_t)P * R * S * C;
        uint16_t *x = malloc(nx * 2), *got = malloc(no * 2), *want = malloc(no * 2);
        cr_assert(x && got && want);
        for (size_t i = 0; i < nx; i++)
            x[i] = rnd_half();
        for (int q = 0; q < P; q++) {
            int n = q / (OH * OW), oh = q / OW % OH, ow = q % OW;
            for (int t = 0; t < R * S; t++) {
                int ih = oh * sd - pad + t / S, iw = ow * sd - pad + t % S;
                for (int c = 0; c < C; c++)
                    want[((size_t)q * R * S + t) * C + c] =
                        ih < 0 || ih >= H || iw < 0 || iw >= W ? 0 : x[(((size_t)n * H + ih) * W + iw) * C + c];
            }
        }
        uint64_t dx, dout;
        cr_assert_eq(tilec_rt_malloc(rt, nx * 2, &dx), TILEC_RT_OK);
        cr_assert_eq(tilec_rt_malloc(rt, no * 2, &dout), TILEC_RT_OK);
        cr_assert_eq(tilec_rt_memcpy_htod(rt, dx, x, nx * 2), TILEC_RT_OK);
        tilec_rt_arg args[12] = {{.ptr = dx},   {.ptr = dout}, {.i32 = N},   {.i32 = H},   {.i32 = W},  {.i32 = C},
                                 {.i32 = R},    {.i32 = S},    {.i32 = sd},  {.i32 = pad}, {.i32 = OH}, {.i32 = OW}};
        cr_assert_eq(tilec_program_launch(p, "ic", 0, args, 12, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
        cr_assert_eq(tilec_rt_synchronize(rt), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
        cr_assert_eq(tilec_rt_memcpy_dtoh(rt, got, dout, no * 2), TILEC_RT_OK);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < no; i++)
            if (got[i] != want[i] && !bad++)
                first = i;
        fprintf(stderr, "im2col N %d H %d W %d C %d filter %dx%d stride %d pad %d: %zu of %zu elements differ\n", N,
                H, W, C, R, S, sd, pad, bad, no);
        cr_expect_eq(bad, 0, "N %d H %d W %d C %d %dx%d stride %d pad %d: %zu wrong, the first at pixel %zu tap %zu "
                             "channel %zu: %#x, not %#x",
                     N, H, W, C, R, S, sd, pad, bad, first / C / (size_t)(R * S), first / C % (size_t)(R * S),
                     first % C, got[first], want[first]);
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, dout);
        free(x);
        free(got);
        free(want);
    }
    tilec_program_free(p);
    free(bin);
    tilec_rt_close(rt);
}
