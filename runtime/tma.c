/* tma.c: the sm_90a twins of kernel variants (tilec/tma.h). A twin is
 * resolved beside its variant's kernel when the module has it (a CUBIN
 * for sm_90a) and the driver has cuTensorMapEncodeTiled (and
 * cuTensorMapEncodeIm2col for a twin with an im2col map); each launch
 * builds its tensor maps from the arguments, kept in a small cache per
 * kernel (by base pointer, extents and strides), and launches the twin
 * with them after the variant's own arguments. An operand the tensor
 * memory accelerator cannot read (a base not 16-byte aligned, a row
 * stride not a multiple of 16 bytes or narrower than a row, an empty or
 * too large extent) or a map the driver refuses sends the launch to the
 * variant's own kernel: never a wrong answer. A batched map (a product
 * per pid(2), or per head in pid(1)) is 3-D: its matrix stride its
 * constant times the arguments it names, its batch extent the grid's z
 * (or y). An im2col map (a convolution's NHWC image) is 4-D, C, W, H,
 * N, its pixel box bounded by the padding and the filter's extent (or
 * the output's: kind 2) and walked at the convolution's stride
 * (tilec/tma.h). A persistent twin takes the program's grid as three
 * more parameters and is launched with one block per multiprocessor (fewer
 * for fewer tiles; one per tile past TMA_PERSIST_WAVES tiles a
 * multiprocessor, unless each tile's dot loop is at most
 * TMA_PERSIST_KSTEPS trips). With TILEC_LOGS=tma (read when the kernel is
 * resolved) each twin says on stderr whether it was resolved, or why not,
 * and each launch of its variant which kernel ran, and why when not the
 * twin, and whether a persistent twin walks its units, and why. Metadata
 * only, no AST. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel_internal.h"
#include "runtime/program_internal.h"
#include "runtime/twin_check.h"
#include "tilec/log.h"

enum { TMA_CACHE = 4, TMA_WORDS = 10, TMA_KEY = TMA_WORDS * TILEC_TMA_MAX_MAPS };
/* A persistent twin walks its tiles with one block per multiprocessor up
 * to this many tiles per multiprocessor; past it, one block per tile (the
 * same kernel, each block then taking one tile), which the hardware hands
 * out as multiprocessors free up. Measured on the H200 (docs/lowering.md,
 * the ladder): 4 tiles a multiprocessor (4096^3, the batched 16 x 1024^3 at
 * 128 x 256) gain 2-12% on the persistent grid; 16 (8192^3 at 128 x 256)
 * lost 6-9%. */
enum { TMA_PERSIST_WAVES = 8 };
/* ... unless each tile's dot loop runs at most this many trips (the
 * twin's tilec_tma_meta.kbound, kfrom, kper): then the block's fixed cost
 * a tile (the accumulator's zeroing, the epilogue's loads, conversion and
 * store, the ring's first fill) weighs against a short loop, and walking
 * the tiles hides it under the next tile's loads however many tiles there
 * are. Measured on the H100 (docs/performance.md, "llm: a persistent
 * launch weighed by K steps"): the fused linear cross-entropy's gemm_dw,
 * 243 tiles a multiprocessor, 16 trips (C = 1024) and 8 (C = 512) of 64,
 * 13-17% faster walking; 8192^3 at 128 trips lost 6-9% walking. */
enum { TMA_PERSIST_KSTEPS = 32 };
/* A paired twin's unit (two tiles along y or z, lower/wgpair.c) takes this
 * many hundredths of one tile's time: measured on the H100 at 4096^3 in
 * 128 x 128 tiles (docs/lowering.md, "Two N tiles a block"), 0.185
 * against 0.203 ms, 2 x 0.91. The launch takes the one-tile twin where
 * its rounds of tiles cost less, as when pairs would leave
 * multiprocessors idle (1024^3: 32 pairs of 128 x 128). */
enum { TMA_PAIR_COST = 182 };
/* ... and where the one-tile twin reads its epilogue's tile by TMA into
 * its store's staging (tilec_tma_meta.one_tma: gemm_dw's dW += ..., which
 * the pairs' consumer threads load into registers), the one-tile twin
 * where each tile's dot loop runs at most this many trips. Measured on
 * the H200 (bench/results/flce_s48_merged.jsonl, flce_parts.py --sweep):
 * gemm_dw at K = 256, 512, 1024 (4, 8, 16 trips of 64) one tile 0.790,
 * 1.171, 2.027 ms against the pair's 1.099, 1.316, 2.181; at 2048 (32)
 * the pair 3.624 against 3.799. Without the flag the pairs keep short
 * loops: without its read the pair is the faster twin at every K from 4
 * to 32 trips (bench/results/flce_s47.md). */
enum { TMA_ONE_TMA_KSTEPS = 16 };
/* A persistent gather twin (tilec_tma_meta.persistent 5: A by TMA's im2col
 * mode, lower/wgmma.c) walks its tiles where they are more than this many
 * a multiprocessor, else its one-tile twin NAME_1 runs on the program's
 * grid. Measured on the H200 (bench/results/conv_s46.md): with at most
 * 1.5 tiles a multiprocessor (3x3 14x14 C256 and 28x28 C128, 1x1 14x14
 * C1024, ResNet-50 at N 32) the persistent twin, whose blocks then take
 * one tile each, ran 4-13% slower than the one-tile twin; at 5.9 and 11.9
 * it ran 1.07-1.27x faster. Between 1.5 and 5.9 not measured. */
enum { TMA_GATHER_WALK = 2 };

typedef struct tma_entry {
    int valid;
    uint64_t key[TMA_KEY];
    CUtensorMap maps[TILEC_TMA_MAX_MAPS];
} tma_entry;

struct rt_tma {
    tilec_tma_meta meta;
    CUfunction fn;
    CUfunction fn1;     /* persistent 2, 4: the one-tile twin NAME_1 beside the paired one; 5: the one-tile
                         * (not persistent) twin beside a gather twin; or NULL */
    int pair_mode;      /* TILEC_TMA_PAIR: 1 always the pairs, 0 always the one-tile twin, -1 the cost */
    int persist_mode;   /* TILEC_TMA_PERSIST: 1 always min(units, SMs) blocks, 0 always a block a unit, -1 the rule */
    PFN_cuTensorMapEncodeTiled_v12000 encode;
    PFN_cuTensorMapEncodeIm2col_v12000 encode_im2col; /* NULL: the driver has none (no im2col map then) */
    PFN_cuLaunchKernel_v4000 launch;
    uint32_t sms;       /* the device's multiprocessors */
    uint32_t per_sm;    /* the twin's blocks resident on one multiprocessor (cuOccupancyMaxActiveBlocksPerMultiprocessor;
                           1 where the driver cannot say): a walking grid takes min(units, sms * per_sm) blocks */
    int log;            /* TILEC_LOGS=tma when resolved */
    pthread_mutex_t mu; /* guards the cache */
    tma_entry cache[TMA_CACHE];
    unsigned next;
};

/* The swizzle of boxes whose rows are `bytes` wide (a box row is one
 * swizzle span: 32, 64 or 128 bytes); 0 for any other width. */
static CUtensorMapSwizzle swizzle_of(uint32_t bytes)
{
    return bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
           : bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
           : bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                         : CU_TENSOR_MAP_SWIZZLE_NONE;
}

tilec_rt_status rt_tma_set(pkernel *pk, const tilec_tma_meta *m)
{
    /* no maps: a twin fed by cp.async (the loop of dots on rings whose loads no map describes, lower/wgattn.c; a
     * gathered operand, lower/wggather.c) */
    if (!m || !m->name || rt_twin_why(m, pk->d.nparams)) /* parameters it cannot name: no twin */
        return TILEC_RT_OK;
    for (uint32_t i = 0; i < m->nmaps; i++) {
        const tilec_tma_map *t = &m->maps[i];
        if (pk->d.kinds[t->ptr] != TILEC_RT_PARAM_POINTER || (t->elem_bytes != 2 && t->elem_bytes != 4) ||
            (t->elem_bytes == 4 && t->bf16) || !t->box_rows || t->box_rows > 256 ||
            !swizzle_of(t->box_cols * t->elem_bytes))
            return TILEC_RT_OK; /* metadata we cannot honour: no twin */
    }
    rt_tma *t = calloc(1, sizeof *t);
    char *name = t ? strdup(m->name) : NULL;
    if (!name) {
        free(t);
        return TILEC_RT_NOMEM;
    }
    t->meta = *m;
    t->meta.name = name;
    pthread_mutex_init(&t->mu, NULL);
    pk->tma = t;
    return TILEC_RT_OK;
}

void rt_tma_free(pkernel *pk)
{
    if (!pk->tma)
        return;
    pthread_mutex_destroy(&pk->tma->mu);
    free(pk->tma->meta.name);
    free(pk->tma);
    pk->tma = NULL;
}

/* Why twin t of pk cannot launch on rt (NULL: it can, *fn is its
 * function, its dynamic shared memory raised). */
static const char *resolve_why(tilec_rt *rt, const pkernel *pk, const rt_tma *t, int disabled, CUfunction *fn)
{
    rt_driver *d = &rt->drv;
    int max_threads = 0;
    if (disabled)
        return "TILEC_DISABLE_TMA=1";
    if (!d->TensorMapEncodeTiled)
        return "the driver has no cuTensorMapEncodeTiled";
    for (uint32_t i = 0; i < t->meta.nmaps; i++)
        if (t->meta.maps[i].im2col && !d->TensorMapEncodeIm2col)
            return "the driver has no cuTensorMapEncodeIm2col (an im2col map)";
    if (!pk->mod || d->ModuleGetFunction(fn, rt_module_cu(pk->mod), t->meta.name) != CUDA_SUCCESS)
        return "not in the module (its CUBIN was not compiled for sm_90a)";
    if (d->FuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, *fn) != CUDA_SUCCESS ||
        (uint32_t)max_threads < t->meta.threads)
        return "its block is larger than the device allows";
    if (t->meta.smem_bytes > rt->props.smem_per_block_optin ||
        d->FuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)t->meta.smem_bytes) !=
            CUDA_SUCCESS)
        return "its dynamic shared memory is more than the device allows";
    return NULL;
}

void rt_tma_resolve(tilec_rt *rt, pkernel *pk, int disabled)
{
    rt_tma *t = pk->tma;
    if (!t)
        return;
    CUfunction fn = NULL;
    const char *why = resolve_why(rt, pk, t, disabled, &fn);
    int log = tilec_log_enabled(TILEC_LOG_TMA);
    if (log)
        fprintf(stderr,
                "tilec tma: %s variant %d: sm_90a twin %s %s%s (%u threads, %u bytes of dynamic shared memory)\n",
                pk->d.kernel, pk->d.variant, t->meta.name, why ? "not used: " : "resolved", why ? why : "", t->meta.threads,
                t->meta.smem_bytes);
    if (why) {
        rt_tma_free(pk); /* the variant alone */
        return;
    }
    t->fn = fn;
    t->fn1 = NULL;
    const char *pm = getenv("TILEC_TMA_PAIR");
    t->pair_mode = pm && !strcmp(pm, "1") ? 1 : pm && !strcmp(pm, "0") ? 0 : -1;
    if (log && pm && t->pair_mode < 0)
        fprintf(stderr, "tilec tma: TILEC_TMA_PAIR=%.32s is neither 0 nor 1: the launch chooses\n", pm);
    const char *pp = getenv("TILEC_TMA_PERSIST");
    t->persist_mode = pp && !strcmp(pp, "1") ? 1 : pp && !strcmp(pp, "0") ? 0 : -1;
    if (log && pp && t->persist_mode < 0)
        fprintf(stderr, "tilec tma: TILEC_TMA_PERSIST=%.32s is neither 0 nor 1: the launch chooses\n", pp);
    /* pairs (2 along y, 4 along z): its one-tile twin, when the module has it (lower/target.c, single_twin);
     * a gather twin (5): its twin of one tile a block (gather_single) */
    if (t->meta.persistent == 2 || t->meta.persistent == 4 || t->meta.persistent == 5) {
        size_t n = strlen(t->meta.name);
        char one[256];
        CUfunction f1 = NULL;
        if (n + 3 <= sizeof one) {
            memcpy(one, t->meta.name, n);
            memcpy(one + n, "_1", 3);
            if (rt->drv.ModuleGetFunction(&f1, rt_module_cu(pk->mod), one) == CUDA_SUCCESS &&
                rt->drv.FuncSetAttribute(f1, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)t->meta.smem_bytes) ==
                    CUDA_SUCCESS)
                t->fn1 = f1;
        }
    }
    t->sms = rt->props.multiprocessors > 0 ? (uint32_t)rt->props.multiprocessors : 1;
    /* a twin built for two blocks a multiprocessor (lower/wgattn.c, wga_blocks: one consumer warp group whose
     * registers and shared memory fit twice) walks on twice the blocks: every resident slot takes units */
    int per = 0;
    if (!rt->drv.OccupancyMaxActiveBlocksPerMultiprocessor ||
        rt->drv.OccupancyMaxActiveBlocksPerMultiprocessor(&per, fn, (int)t->meta.threads, t->meta.smem_bytes) !=
            CUDA_SUCCESS)
        per = 1;
    t->per_sm = per < 1 ? 1 : per > 8 ? 8 : (uint32_t)per;
    t->encode = rt->drv.TensorMapEncodeTiled;
    t->encode_im2col = rt->drv.TensorMapEncodeIm2col;
    t->launch = rt->drv.LaunchKernel;
    t->log = log;
}

int rt_tma_ready(const pkernel *pk) { return pk->tma && pk->tma->fn; }

static int64_t int_arg(const pkernel *pk, const tilec_rt_arg *args, uint32_t i)
{
    switch (pk->d.kinds[i]) {
    case TILEC_RT_PARAM_I32: return args[i].i32;
    case TILEC_RT_PARAM_U32: return args[i].u32;
    case TILEC_RT_PARAM_I64: return args[i].i64;
    case TILEC_RT_PARAM_U64: return args[i].u64 > INT64_MAX ? -1 : (int64_t)args[i].u64;
    default: return -1;
    }
}

/* Whether a twin's dot loop bounded by integer argument i, advancing by
 * kper, could wrap its int variable: the bound is past 2^31 - kper. A u64
 * past 2^63 - 1 is (int_arg reads it as -1), and so is any u64 or u32
 * where kper is past 2^31. */
static int bound_wraps(const pkernel *pk, const tilec_rt_arg *args, uint32_t i, uint32_t kper)
{
    int64_t lim = (int64_t)INT32_MAX - kper + 1;
    if (pk->d.kinds[i] == TILEC_RT_PARAM_U64)
        return lim < 0 || args[i].u64 > (uint64_t)lim;
    return int_arg(pk, args, i) > lim;
}

/* A map's rows, cols or stride: its constant (TILEC_TMA_CONST), or the
 * integer argument it names. */
static int64_t extent_arg(const pkernel *pk, const tilec_rt_arg *args, uint32_t f)
{
    return TILEC_TMA_IS_CONST(f) ? (int64_t)(f & ~TILEC_TMA_CONST) : int_arg(pk, args, f);
}

/* A batched map's matrix stride in elements (its constant times its
 * parameters), -1 when it is negative or too large for a tensor map. */
static int64_t batch_stride(const pkernel *pk, const tilec_tma_map *m, const tilec_rt_arg *args)
{
    int64_t lim = (INT64_C(1) << 39) / m->elem_bytes, s = m->bscale;
    for (int i = 0; i < 2; i++) {
        int64_t a = m->bs[i] == TILEC_TMA_NONE ? 1 : int_arg(pk, args, m->bs[i]);
        if (a < 0 || s > lim || (a && s > lim / a))
            return -1;
        s *= a;
    }
    return s > lim ? -1 : s;
}

/* An im2col map's fr, fs, pad or cstride: as extent_arg, TILEC_TMA_NONE
 * its default `none`. */
static int64_t conv_arg(const pkernel *pk, const tilec_rt_arg *args, uint32_t f, int64_t none)
{
    return f == TILEC_TMA_NONE ? none : extent_arg(pk, args, f);
}

/* The key of im2col map m (base, images, channels, pixel stride, height,
 * width, filter rows and columns (kind 2: the output's height and width),
 * padding, stride), 0 when the image is
 * not one the im2col mode reads: a base off 16 bytes, a pixel stride
 * narrower than a pixel or not a multiple of 16 bytes, an image stride of
 * 2^40 bytes or more, a padding past 127 or a filter extent past the
 * padding by more than 129 (a 4-D map's box corners are 8-bit), a
 * convolution stride outside 1..8, or a padded image smaller than the
 * filter (no output pixel); kind 2: an upper corner outside -128..127. */
static int im2col_key(const pkernel *pk, const tilec_tma_map *m, const tilec_rt_arg *args, uint64_t key[TMA_WORDS])
{
    uint64_t base = args[m->ptr].ptr;
    int64_t n = extent_arg(pk, args, m->rows), c = extent_arg(pk, args, m->cols), ps = extent_arg(pk, args, m->stride);
    int64_t h = extent_arg(pk, args, m->ih), w = extent_arg(pk, args, m->iw);
    int64_t r = conv_arg(pk, args, m->fr, 1), s = conv_arg(pk, args, m->fs, 1);
    int64_t pad = conv_arg(pk, args, m->pad, 0), cs = conv_arg(pk, args, m->cstride, 1);
    int64_t lim = (INT64_C(1) << 40) / m->elem_bytes; /* a stride's elements */
    if (!base || base % 16 || n < 1 || c < 1 || h < 1 || w < 1 || n > INT32_MAX || c > INT32_MAX || h > INT32_MAX ||
        w > INT32_MAX || ps < c || (ps * m->elem_bytes) % 16 || ps >= lim || w >= lim / ps || h >= lim / (w * ps))
        return 0;
    if (m->im2col == TILEC_TMA_IM2COL_OUT) { /* r, s: the output's height and width; the upper corners in 8 bits */
        if (r < 1 || s < 1 || r > INT32_MAX || s > INT32_MAX || pad < 0 || pad > 127 || cs < 1 || cs > 8 ||
            (r - 1) * cs - pad - (h - 1) < -128 || (r - 1) * cs - pad - (h - 1) > 127 ||
            (s - 1) * cs - pad - (w - 1) < -128 || (s - 1) * cs - pad - (w - 1) > 127)
            return 0;
    } else if (r < 1 || s < 1 || pad < 0 || pad > 127 || r - 1 > pad + 128 || s - 1 > pad + 128 || cs < 1 || cs > 8 ||
               h + 2 * pad < r || w + 2 * pad < s)
        return 0;
    const int64_t v[TMA_WORDS] = {(int64_t)base, n, c, ps, h, w, r, s, pad, cs};
    for (int i = 0; i < TMA_WORDS; i++)
        key[i] = (uint64_t)v[i];
    return 1;
}

/* The key of map i (base, rows, cols, stride, and for a batched map its
 * matrix stride and the grid's third extent; an im2col map's, im2col_key),
 * 0 when the operand does not qualify for the tensor memory accelerator. */
static int map_key(const pkernel *pk, const tilec_tma_map *m, const tilec_rt_arg *args, const uint32_t grid[3],
                   uint64_t key[TMA_WORDS])
{
    if (m->im2col)
        return im2col_key(pk, m, args, key);
    uint64_t base = args[m->ptr].ptr;
    /* rows TILEC_TMA_NONE: every row a coordinate can name (the kernel proves the rows it reads, lower/wggather.c) */
    int64_t rows = m->rows == TILEC_TMA_NONE ? INT32_MAX : extent_arg(pk, args, m->rows);
    int64_t cols = extent_arg(pk, args, m->cols), stride = extent_arg(pk, args, m->stride);
    if (!base || base % 16 || rows < 1 || cols < 1 || stride < cols || rows > INT32_MAX || cols > INT32_MAX ||
        (stride * m->elem_bytes) % 16 || stride > (INT64_C(1) << 39) / m->elem_bytes)
        return 0;
    int64_t bstride = m->batched ? batch_stride(pk, m, args) : 0;
    /* matrices one after another, each at a 16-byte multiple: no overlap, as TMA needs */
    uint32_t nz = m->batched ? grid[m->bgrid] : 0; /* the batch index pid(bgrid) takes these values */
    if (m->batched && (bstride < rows * stride || (bstride * m->elem_bytes) % 16 || !nz || nz > INT32_MAX))
        return 0;
    key[0] = base;
    key[1] = (uint64_t)rows;
    key[2] = (uint64_t)cols;
    key[3] = (uint64_t)stride;
    key[4] = m->batched ? (uint64_t)bstride : 0;
    key[5] = nz;
    return 1;
}

/* Im2col map m for its key (im2col_key): 4-D, C, W, H, N; the pixel box
 * from -pad to pad - (extent - 1) along W and H (the corners in W, H
 * order, as the dimensions), or of kind 2 to (out - 1) * stride - pad -
 * (extent - 1), where the last output pixel of a row (column) starts, so
 * the walk wraps after exactly `out` pixels; walked at the convolution's
 * stride along W and H; box_cols channels a pixel, box_rows pixels a box;
 * out of the image, zeros. */
static int encode_im2col(const rt_tma *t, const tilec_tma_map *m, const uint64_t key[TMA_WORDS], CUtensorMap *out)
{
    uint64_t eb = m->elem_bytes, ps = key[3], h = key[4], w = key[5];
    cuuint64_t dims[4] = {key[2], w, h, key[1]}, strides[3] = {ps * eb, w * ps * eb, h * w * ps * eb};
    int pad = (int)key[8], lower[2] = {-pad, -pad}, upper[2] = {pad - (int)(key[7] - 1), pad - (int)(key[6] - 1)};
    if (m->im2col == TILEC_TMA_IM2COL_OUT) { /* the last output pixel's corner: (o - 1) * stride - pad, at the bound */
        int64_t cs = (int64_t)key[9];
        upper[0] = (int)(((int64_t)key[7] - 1) * cs - pad - ((int64_t)w - 1));
        upper[1] = (int)(((int64_t)key[6] - 1) * cs - pad - ((int64_t)h - 1));
    }
    cuuint32_t cs = (cuuint32_t)key[9], estr[4] = {1, cs, cs, 1};
    CUtensorMapDataType ty = m->elem_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                             : m->bf16          ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    return t->encode_im2col(out, ty, 4, (void *)(uintptr_t)key[0], dims, strides, lower, upper, m->box_cols,
                            m->box_rows, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_of(m->box_cols * m->elem_bytes),
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

static int encode(const rt_tma *t, const tilec_tma_map *m, const uint64_t key[TMA_WORDS], CUtensorMap *out)
{
    if (m->im2col)
        return encode_im2col(t, m, key, out);
    cuuint64_t dims[3] = {key[2], key[1], key[5]}, strides[2] = {key[3] * m->elem_bytes, key[4] * m->elem_bytes};
    cuuint32_t box[3] = {m->box_cols, m->box_rows, 1}, estr[3] = {1, 1, 1};
    CUtensorMapDataType ty = m->elem_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                             : m->bf16          ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    return t->encode(out, ty, m->batched ? 3 : 2, (void *)(uintptr_t)key[0], dims, strides, box, estr,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_of(m->box_cols * m->elem_bytes),
                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* The maps for these arguments into maps[]: from the cache, or built and
 * cached. 0: an operand does not qualify (*why says which and how). */
static int maps_for(rt_tma *t, const pkernel *pk, const tilec_rt_arg *args, const uint32_t grid[3], CUtensorMap *maps,
                    char *why, size_t whylen)
{
    uint64_t key[TMA_KEY] = {0};
    for (uint32_t i = 0; i < t->meta.nmaps; i++)
        if (!map_key(pk, &t->meta.maps[i], args, grid, key + TMA_WORDS * i)) {
            snprintf(why, whylen, "the tensor behind parameter %u is not one TMA reads (base, extents, row stride)",
                     t->meta.maps[i].ptr);
            return 0;
        }
    pthread_mutex_lock(&t->mu);
    for (int c = 0; c < TMA_CACHE; c++)
        if (t->cache[c].valid && !memcmp(t->cache[c].key, key, sizeof key)) {
            memcpy(maps, t->cache[c].maps, t->meta.nmaps * sizeof *maps);
            pthread_mutex_unlock(&t->mu);
            return 1;
        }
    pthread_mutex_unlock(&t->mu);
    for (uint32_t i = 0; i < t->meta.nmaps; i++)
        if (!encode(t, &t->meta.maps[i], key + TMA_WORDS * i, &maps[i])) {
            snprintf(why, whylen, "the driver refused the tensor map of parameter %u", t->meta.maps[i].ptr);
            return 0;
        }
    pthread_mutex_lock(&t->mu);
    tma_entry *e = &t->cache[t->next++ % TMA_CACHE];
    e->valid = 1;
    memcpy(e->key, key, sizeof key);
    memcpy(e->maps, maps, t->meta.nmaps * sizeof *maps);
    pthread_mutex_unlock(&t->mu);
    return 1;
}

/* The trips of twin t's dot loop a tile for these arguments (tilec/tma.h:
 * ceil((P - kfrom) / kper)), or -1 when the metadata does not say (kper
 * 0) or the bound is not an integer argument. */
static int64_t loop_trips(const pkernel *pk, const tilec_tma_meta *m, const tilec_rt_arg *args)
{
    if (!m->kper || m->kbound >= pk->d.nparams)
        return -1;
    int64_t p = int_arg(pk, args, m->kbound);
    if (p < 0 && pk->d.kinds[m->kbound] != TILEC_RT_PARAM_I32 && pk->d.kinds[m->kbound] != TILEC_RT_PARAM_I64)
        return -1; /* not an integer parameter (int_arg's -1), or a u64 past INT64_MAX */
    return p <= (int64_t)m->kfrom ? 0 : (p - (int64_t)m->kfrom - 1) / m->kper + 1;
}

/* Whether a persistent twin walks its `units` on min(units, sms) blocks
 * (1) or takes a block a unit (0): it walks up to TMA_PERSIST_WAVES units
 * a multiprocessor, and past that where each tile's dot loop runs at most
 * TMA_PERSIST_KSTEPS trips, or where the metadata names no trips and A is
 * read by TMA's im2col mode (a convolution's rows kernel: lower/wgim2col.c):
 * its trips, filter taps times channel steps, are no parameter the
 * metadata can name, and the layers with more than TMA_PERSIST_WAVES tiles
 * a multiprocessor are the large images of few channels, a few trips a
 * tile (ResNet-50's 1x1 56x56 C64: one), whose epilogue walking hides
 * (docs/lowering.md). An attention twin's trips are its key loop's most
 * a unit (lower/wgattn.c wga_trips: S over BN; a causal diagonal fewer,
 * in units its walk pairs heavy with light). Why, into why (n bytes). */
static int persist_walks(const pkernel *pk, const tilec_rt_arg *args, uint64_t units, uint32_t sms, char *why,
                         size_t n)
{
    if (units <= (uint64_t)TMA_PERSIST_WAVES * sms) {
        snprintf(why, n, "%llu units, at most %d a multiprocessor", (unsigned long long)units, TMA_PERSIST_WAVES);
        return 1;
    }
    int64_t trips = loop_trips(pk, &pk->tma->meta, args);
    if (trips < 0 && pk->tma->meta.nmaps && pk->tma->meta.maps[0].im2col) {
        snprintf(why, n, "%llu units, A by TMA's im2col mode", (unsigned long long)units);
        return 1; /* A by TMA's im2col mode: a convolution's rows (above) */
    }
    if (trips < 0)
        snprintf(why, n, "%llu units, more than %d a multiprocessor, the trips a unit not known",
                 (unsigned long long)units, TMA_PERSIST_WAVES);
    else
        snprintf(why, n, "%llu units, more than %d a multiprocessor, %lld trips a unit by the loop's bound (%s %d)",
                 (unsigned long long)units, TMA_PERSIST_WAVES, (long long)trips, trips <= TMA_PERSIST_KSTEPS ? "at most" : "more than", TMA_PERSIST_KSTEPS);
    return trips >= 0 && trips <= TMA_PERSIST_KSTEPS;
}

/* Whether a paired twin's launch of `tiles` in `units` pairs takes its
 * one-tile twin NAME_1, and why (for the log): TILEC_TMA_PAIR=0; the
 * one-tile twin's rounds of tiles cost less (TMA_PAIR_COST); or it reads
 * its epilogue's tile by TMA (one_tma) and each tile's dot loop runs at
 * most TMA_ONE_TMA_KSTEPS trips. NULL: the pairs. */
static const char *pair_yields(const pkernel *pk, const tilec_rt_arg *args, uint64_t tiles, uint64_t units,
                               char *buf, size_t n)
{
    const rt_tma *t = pk->tma;
    if (t->pair_mode >= 0)
        return t->pair_mode ? NULL : "TILEC_TMA_PAIR=0";
    if ((tiles + t->sms - 1) / t->sms * 100 < (units + t->sms - 1) / t->sms * TMA_PAIR_COST)
        return "its rounds of tiles cost less than the pairs'";
    int64_t trips = t->meta.one_tma ? loop_trips(pk, &t->meta, args) : -1;
    if (trips < 0 || trips > TMA_ONE_TMA_KSTEPS)
        return NULL;
    snprintf(buf, n, "it reads its epilogue's tile by TMA, %lld trips a tile (at most %d)", (long long)trips,
             TMA_ONE_TMA_KSTEPS);
    return buf;
}

int rt_tma_launch(const pkernel *pk, const uint32_t grid[3], const tilec_rt_arg *args, void *stream,
                  tilec_rt_status *st)
{
    rt_tma *t = pk->tma;
    if (!t || !t->fn)
        return 0;
    CUtensorMap maps[TILEC_TMA_MAX_MAPS];
    char why[160] = "";
    /* a twin's dot loop advances `v += step` (lower/wgmma.c, wgattn.c: the header that cannot wrap cost up
     * to 11% on the conv rows, docs/lowering.md "Loop headers"): where its bound is within one step of 2^31
     * the variant's own kernel, whose loops cannot wrap, runs instead */
    const tilec_tma_meta *km = &t->meta;
    if (km->kper && km->kbound < pk->d.nparams && bound_wraps(pk, args, km->kbound, km->kper)) {
        if (t->log) {
            char b[24];
            if (pk->d.kinds[km->kbound] == TILEC_RT_PARAM_U64)
                snprintf(b, sizeof b, "%llu", (unsigned long long)args[km->kbound].u64);
            else
                snprintf(b, sizeof b, "%lld", (long long)int_arg(pk, args, km->kbound));
            fprintf(stderr, "tilec tma: %s variant %d: launched %s, not its twin: its loop's bound %s is within one "
                            "step (%u) of 2^31\n",
                    pk->d.kernel, pk->d.variant, pk->d.name, b, km->kper);
        }
        return 0;
    }
    if (!maps_for(t, pk, args, grid, maps, why, sizeof why)) {
        if (t->log)
            fprintf(stderr, "tilec tma: %s variant %d: launched %s, not its twin: %s\n", pk->d.kernel, pk->d.variant,
                    pk->d.name, why);
        return 0;
    }
    void *params[64 + TILEC_TMA_MAX_MAPS + 3];
    for (uint32_t i = 0; i < pk->d.nparams; i++)
        params[i] = (void *)&args[i];
    for (uint32_t i = 0; i < t->meta.nmaps; i++)
        params[pk->d.nparams + i] = &maps[i];
    uint32_t blocks[3] = {grid[0], grid[1], grid[2]};
    CUfunction fn = t->fn;
    const char *one_why = NULL; /* why a paired twin's one-tile twin runs */
    char walk_why[160] = "";    /* a persistent twin: why it walks its units or takes a block a unit */
    int walk = 0;
    int32_t logical[3];
    if (t->meta.persistent) { /* the program's grid as parameters; one block per multiprocessor at most */
        uint64_t tiles = (uint64_t)grid[0] * grid[1] * grid[2];
        /* 2: the block's unit is a pair of tiles along y (lower/wgpair.c), 4: along z (a head's product, the
         * batch in y), unless the one-tile twin runs them faster (pair_yields); 3: a pair along x, one a
         * consumer warp group */
        uint64_t units = t->meta.persistent == 2   ? (uint64_t)grid[0] * ((grid[1] + 1) / 2) * grid[2]
                         : t->meta.persistent == 4 ? (uint64_t)grid[0] * grid[1] * ((grid[2] + 1) / 2)
                         : t->meta.persistent == 3 ? ((uint64_t)grid[0] + 1) / 2 * grid[1] * grid[2]
                                                   : tiles;
        if (units != tiles && t->fn1 && (one_why = pair_yields(pk, args, tiles, units, why, sizeof why))) {
            fn = t->fn1;
            units = tiles;
        }
        if (tiles > INT32_MAX) { /* the twin's tile counter is an int: the variant's own kernel */
            if (t->log)
                fprintf(stderr, "tilec tma: %s variant %d: launched %s, not its twin: more than 2^31 tiles\n",
                        pk->d.kernel, pk->d.variant, pk->d.name);
            return 0;
        }
        for (int i = 0; i < 3; i++) {
            logical[i] = (int32_t)grid[i];
            params[pk->d.nparams + t->meta.nmaps + (uint32_t)i] = &logical[i];
        }
        walk = t->persist_mode;
        if (walk < 0)
            walk = persist_walks(pk, args, units, t->sms, walk_why, sizeof walk_why);
        else
            snprintf(walk_why, sizeof walk_why, "TILEC_TMA_PERSIST=%d", walk);
        blocks[0] = walk && units > (uint64_t)t->sms * t->per_sm ? t->sms * t->per_sm : (uint32_t)units;
        if (walk && t->per_sm > 1 && units > t->sms) {
            size_t l = strlen(walk_why);
            snprintf(walk_why + l, sizeof walk_why - l, "; %u blocks a multiprocessor", t->per_sm);
        }
        blocks[1] = blocks[2] = 1;
        if (t->meta.persistent == 5 && t->fn1 &&
            (t->persist_mode == 0 || (t->persist_mode < 0 && tiles <= (uint64_t)TMA_GATHER_WALK * t->sms))) {
            fn = t->fn1; /* a block a tile on the program's grid; the kernel reads no grid parameters */
            snprintf(why, sizeof why, "%s", t->persist_mode == 0 ? "TILEC_TMA_PERSIST=0" : "few tiles a multiprocessor");
            one_why = why;
            walk_why[0] = 0; /* the program's grid: no walk */
            for (int i = 0; i < 3; i++)
                blocks[i] = grid[i];
        }
    }
    CUresult r = t->launch(fn, blocks[0], blocks[1], blocks[2], t->meta.threads, 1, 1, t->meta.smem_bytes,
                           (CUstream)stream, params, NULL);
    if (r == CUDA_SUCCESS) {
        if (t->log)
            fprintf(stderr, "tilec tma: %s variant %d: launched sm_90a twin %s%s%s%s, grid %ux%ux%u, %u tensor maps%s%s\n",
                    pk->d.kernel, pk->d.variant, t->meta.name, fn == t->fn ? "" : "_1 (one tile a unit: ",
                    fn == t->fn ? "" : one_why, fn == t->fn ? "" : ")", blocks[0], blocks[1], blocks[2], t->meta.nmaps,
                    !walk_why[0] ? "" : walk ? "; walking its units: " : "; a block a unit: ", walk_why);
        *st = TILEC_RT_OK;
        return 1;
    }
    *st = rt_cu_fail(pk->kern->rt, TILEC_RT_LAUNCH_ERROR, r,
                     "cuLaunchKernel(kernel '%s', grid %ux%ux%u, block %u, %u bytes of dynamic shared memory)",
                     t->meta.name, blocks[0], blocks[1], blocks[2], t->meta.threads, t->meta.smem_bytes);
    return 1;
}
