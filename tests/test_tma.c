/* test_tma.c: the runtime's side of the sm_90a twins (runtime/tma.c)
 * against the fake driver (libfakecuda.so beside this binary, a 9.0
 * device): a program built for the device (sm_90a, NVRTC for real)
 * resolves kernel tw's twin; a launch on operands TMA can read makes one
 * tensor map per operand from the arguments (base, extents, row stride in
 * bytes, box, the swizzle its row width gives: 128 bytes, or 32 and 64
 * for A at K tiles of 16 and 32 halves), passes them after the arguments, then the
 * program's grid, and launches the twin's persistent grid (at most one
 * block per multiprocessor; one per tile past 8 tiles a multiprocessor,
 * unless TILEC_TMA_PERSIST says); the same buffers again make no new maps (the cache);
 * a base off 16 bytes or a row stride that is not a multiple of 16 bytes
 * launches the variant's own kernel and makes no map; TILEC_DISABLE_TMA=1
 * and a driver without cuTensorMapEncodeTiled leave the variant alone; a
 * build that finds its bundle in the kernel cache still has the twin. An
 * ahead-of-time entry of a convolution (cv) with an im2col map: the
 * arguments cuTensorMapEncodeIm2col gets, the images it cannot read taking
 * the variant, no twin without that encoder or with unsound metadata. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "fake_load.h"
#include "fs_helpers.h"
#include "mm_tile.h"
#include "tilec/cache.h"
#include "tilec/program.h"


static char fake_path[4096];
static fake_cuda_state *fake;

static void setup(void)
{
    fake_cuda_path(fake_path, sizeof fake_path);
    fake = fake_cuda_load(fake_path, NULL);
    unsetenv("FAKE_CUDA_MODE");
    unsetenv("TILEC_DISABLE_TMA");
    unsetenv("TILEC_TMA_PAIR");
    unsetenv("TILEC_TMA_PERSIST");
}

TestSuite(tma, .init = setup);

typedef struct env {
    tilec_rt *rt;
    tilec_ctx *ctx;
    tilec_module *m;
    tilec_program *p;
    tilec_cache *cache;
    uint64_t a, b, c;
} env;

/* Build kernel `name` of MM_TILE_FMT with A's mask `amask` on the fake
 * device, its text edited by the pairs of `edits` (n pairs); with a cache
 * in dir when dir is not NULL. */
static void env_build_edits(env *e, const char *dir, const char *name, const char *amask, const char *const *edits,
                            int n)
{
    memset(e, 0, sizeof *e);
    cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &e->rt), TILEC_RT_OK);
    tilec_rt_device_props props;
    cr_assert_eq(tilec_rt_device_info(e->rt, &props), TILEC_RT_OK);
    cr_assert_str_eq(props.arch, "sm_90a");
    e->ctx = tilec_ctx_new();
    char src[2048];
    snprintf(src, sizeof src, MM_TILE_FMT, name, amask);
    for (int i = 0; i < n; i++)
        edit_src(src, sizeof src, edits[2 * i], edits[2 * i + 1]);
    cr_assert_eq(tilec_parse_string(e->ctx, "tw.tile", src, strlen(src), &e->m), TILEC_OK);
    if (dir)
        cr_assert_eq(tilec_cache_open(dir, &e->cache), TILEC_RT_OK);
    tilec_build_options o = {.threads = 1, .cache = e->cache}; /* arch: the device's own */
    tilec_status st = tilec_program_build(e->ctx, e->rt, e->m, &o, &e->p);
    const tilec_diag *d = tilec_ctx_diag(e->ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s", d ? d->message : "");
    cr_assert_eq(tilec_rt_malloc(e->rt, 1 << 20, &e->a), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(e->rt, 1 << 20, &e->b), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(e->rt, 1 << 20, &e->c), TILEC_RT_OK);
}

static void env_build_hints(env *e, const char *dir, const char *name, const char *amask, const char *hints)
{
    const char *edits[2] = {"BM = 128, BN = 128, BK = 64, warps = 8", hints};
    env_build_edits(e, dir, name, amask, edits, hints ? 1 : 0);
}

static void env_build_mm(env *e, const char *dir, const char *name, const char *amask)
{
    env_build_hints(e, dir, name, amask, NULL);
}

static void env_build_in(env *e, const char *dir) { env_build_mm(e, dir, "tw", MM_TILE_MASK); }

static void env_build(env *e) { env_build_in(e, NULL); }

static void env_free(env *e)
{
    tilec_rt_free(e->rt, e->a);
    tilec_rt_free(e->rt, e->b);
    tilec_rt_free(e->rt, e->c);
    tilec_program_free(e->p);
    tilec_module_free(e->m);
    tilec_ctx_free(e->ctx);
    tilec_cache_close(e->cache);
    tilec_rt_close(e->rt);
}

static tilec_rt_status launch(env *e, uint64_t a, int M, int N, int K)
{
    tilec_rt_arg args[6] = {{.ptr = a}, {.ptr = e->b}, {.ptr = e->c}, {.i32 = M}, {.i32 = N}, {.i32 = K}};
    return tilec_program_launch(e->p, "tw", 0, args, 6, NULL);
}

Test(tma, maps_built_cached_and_passed, .timeout = 120)
{
    env e;
    env_build(&e);
    cr_assert(tilec_program_has_twin(e.p, "tw", 0));
    cr_assert_eq(launch(&e, e.a, 300, 264, 200), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
    cr_expect_eq(fake->tma_launches, 1, "the twin ran");
    cr_expect_eq(fake->tma_encodes, 3, "one map per operand and one for the stored output");
    /* A: 300 x 200 halves, row stride 400 bytes, boxes of 128 rows x 64 */
    cr_expect_eq(fake->tma_maps[0].base, e.a);
    cr_expect(fake->tma_maps[0].dims[0] == 200 && fake->tma_maps[0].dims[1] == 300);
    cr_expect_eq(fake->tma_maps[0].stride, 400);
    cr_expect(fake->tma_maps[0].box[0] == 64 && fake->tma_maps[0].box[1] == 128);
    cr_expect_eq(fake->tma_maps[0].swizzle, 3, "CU_TENSOR_MAP_SWIZZLE_128B");
    cr_expect_eq(fake->tma_maps[0].dtype, 6, "CU_TENSOR_MAP_DATA_TYPE_FLOAT16");
    /* B: 200 x 264, stride 528 bytes, boxes of 64 x 64 */
    cr_expect_eq(fake->tma_maps[1].base, e.b);
    cr_expect(fake->tma_maps[1].dims[0] == 264 && fake->tma_maps[1].dims[1] == 200);
    cr_expect_eq(fake->tma_maps[1].stride, 528);
    cr_expect(fake->tma_maps[1].box[0] == 64 && fake->tma_maps[1].box[1] == 64);
    /* C, written by the epilogue: 300 x 264 halves, boxes of 128 rows x 64 */
    cr_expect_eq(fake->tma_maps[2].base, e.c);
    cr_expect(fake->tma_maps[2].dims[0] == 264 && fake->tma_maps[2].dims[1] == 300);
    cr_expect_eq(fake->tma_maps[2].stride, 528);
    cr_expect(fake->tma_maps[2].box[0] == 64 && fake->tma_maps[2].box[1] == 128);
    cr_expect_eq(fake->tma_maps[2].swizzle, 3, "CU_TENSOR_MAP_SWIZZLE_128B");
    cr_expect(fake->tma_args[0] == e.a && fake->tma_args[1] == e.b && fake->tma_args[2] == e.c,
              "the maps follow the arguments");
    /* a persistent grid: the program's 3 x 3 tiles as parameters; 3 x 2 pairs of tiles along y
     * (lower/wgpair.c) would be one round as long as 1.82 tiles, so the one-tile twin, one block a tile */
    cr_expect(fake->tma_grid[0] == 3 && fake->tma_grid[1] == 3 && fake->tma_grid[2] == 1, "grid %d x %d x %d",
              fake->tma_grid[0], fake->tma_grid[1], fake->tma_grid[2]);
    cr_expect(fake->grid[0] == 9 && fake->grid[1] == 1 && fake->grid[2] == 1, "%u blocks", fake->grid[0]);
    cr_expect_eq(fake->tma_one_launches, 1, "the one-tile twin");
    /* the same buffers and sizes: the cached maps */
    cr_assert_eq(launch(&e, e.a, 300, 264, 200), TILEC_RT_OK);
    cr_expect_eq(fake->tma_launches, 2);
    cr_expect_eq(fake->tma_encodes, 3, "no new map for the same operands");
    /* another shape: new maps; more tiles than multiprocessors: 132 blocks */
    cr_assert_eq(launch(&e, e.a, 4096, 2048, 256), TILEC_RT_OK);
    cr_expect_eq(fake->tma_launches, 3);
    cr_expect_eq(fake->tma_encodes, 6);
    cr_expect(fake->tma_grid[0] == 32 && fake->tma_grid[1] == 16 && fake->grid[0] == 132 && fake->grid[1] == 1);
    /* 256 pairs in 2 rounds (3.64 tiles' time) against 512 tiles in 4: the pairs */
    cr_expect_eq(fake->tma_one_launches, 2, "%d", fake->tma_one_launches);
    /* more than 8 pairs a multiprocessor, each tile's loop 128 trips of 64 (K 8192): one block per pair */
    cr_assert_eq(launch(&e, e.a, 8192, 8192, 8192), TILEC_RT_OK);
    cr_expect_eq(fake->tma_encodes, 9);
    cr_expect(fake->tma_grid[0] == 64 && fake->tma_grid[1] == 64 && fake->grid[0] == 2048 && fake->grid[1] == 1);
    cr_expect_eq(fake->tma_one_launches, 2, "the pairs again");
    env_free(&e);
}

/* MM_TILE_FMT as a head's product: the batch in pid(1), the N tiles in pid(2) */
static const char *const head_edits[] = {
    "grid (cdiv(M, BM), cdiv(N, BN))", "grid (cdiv(M, BM), 2, cdiv(N, BN))",
    "let rn = pid(1) * BN", "let rn = pid(2) * BN",
    "load(a + rm", "load(a + pid(1) * M * K + rm",
    "load(b + rk", "load(b + pid(1) * 65536 + rk",
    "store(c + rm", "store(c + cast(pid(1), i64) * M * N + rm",
};

/* Batched maps (3-D): a head in pid(1), the batch extent the grid's y
 * (2, where z is 3),
 * its stride the parameters it names or a constant (B: 65536 elements);
 * matrices that would overlap (K * N past the constant) take the variant. */
Test(tma, a_head_in_pid1_and_a_constant_stride, .timeout = 120)
{
    env e;
    env_build_edits(&e, NULL, "tw", MM_TILE_MASK, head_edits, 5);
    cr_assert(tilec_program_has_twin(e.p, "tw", 0));
    cr_assert_eq(launch(&e, e.a, 300, 264, 200), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
    cr_expect_eq(fake->tma_launches, 1, "the twin ran");
    cr_expect_eq(fake->tma_encodes, 3);
    static const unsigned long long bstride[3] = {300 * 200 * 2, 65536 * 2, 300 * 264 * 2};
    for (int i = 0; i < 3; i++)
        cr_expect(fake->tma_maps[i].rank == 3 && fake->tma_maps[i].dims[2] == 2 &&
                      fake->tma_maps[i].bstride == bstride[i],
                  "map %d: rank %u, %llu matrices %llu bytes apart", i, fake->tma_maps[i].rank,
                  fake->tma_maps[i].dims[2], fake->tma_maps[i].bstride);
    cr_expect(fake->tma_grid[0] == 3 && fake->tma_grid[1] == 2 && fake->tma_grid[2] == 3, "grid %d x %d x %d",
              fake->tma_grid[0], fake->tma_grid[1], fake->tma_grid[2]);
    /* K * N = 300 * 264 > 65536: B's matrices would overlap, no map */
    cr_assert_eq(launch(&e, e.a, 300, 264, 300), TILEC_RT_OK);
    cr_expect_eq(fake->tma_launches, 1, "the variant ran");
    env_free(&e);
}

/* A head's product (the batch in pid(1), its N tiles in pid(2)) pairs its N
 * tiles along z (lower/wgpair.c, tilec_tma_meta.persistent 4): with the
 * pairs forced and a block a unit, 3 x 2 x 3 tiles are 3 * 2 * ceil(3 / 2)
 * = 12 units (not 18 tiles, nor the 9 of pairs along y); the one-tile
 * twin beside it, forced, takes 18. */
Test(tma, a_head_s_n_tiles_pair_along_z, .timeout = 120)
{
    static const struct {
        const char *pair;
        unsigned blocks;
        int one;
    } cases[] = {{"1", 12, 0}, {"0", 18, 1}};
    setenv("TILEC_TMA_PERSIST", "0", 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("TILEC_TMA_PAIR", cases[i].pair, 1);
        env e;
        env_build_edits(&e, NULL, "tw", MM_TILE_MASK, head_edits, 5);
        cr_assert(tilec_program_has_twin(e.p, "tw", 0));
        int before = fake->tma_launches, one = fake->tma_one_launches;
        cr_assert_eq(launch(&e, e.a, 300, 264, 200), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
        cr_expect(fake->tma_launches == before + 1 && fake->tma_one_launches == one + cases[i].one,
                  "TILEC_TMA_PAIR=%s: %d launches, %d one-tile", cases[i].pair, fake->tma_launches - before,
                  fake->tma_one_launches - one);
        cr_expect(fake->tma_grid[0] == 3 && fake->tma_grid[1] == 2 && fake->tma_grid[2] == 3, "grid %d x %d x %d",
                  fake->tma_grid[0], fake->tma_grid[1], fake->tma_grid[2]);
        cr_expect(fake->grid[0] == cases[i].blocks && fake->grid[1] == 1, "TILEC_TMA_PAIR=%s: %u blocks, not %u",
                  cases[i].pair, fake->grid[0], cases[i].blocks);
        env_free(&e);
    }
    unsetenv("TILEC_TMA_PAIR");
    unsetenv("TILEC_TMA_PERSIST");
}

/* The attention twin's K and V by TMA (lower/wgattn.c, kernel `at` of
 * tests/aot_attn.tile): two 3-D maps of the [bh, S, D] tensors whose
 * columns and row stride are the hint D (TILEC_TMA_CONST), rows the
 * argument S, heads the grid's y, boxes of BN rows x 64 halves; passed
 * after the eight arguments. */

Test(tma, attention_k_and_v_by_constant_extent_maps, .timeout = 120)
{
    env e;
    memset(&e, 0, sizeof e);
    cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &e.rt), TILEC_RT_OK);
    e.ctx = tilec_ctx_new();
    cr_assert_eq(tilec_parse_file(e.ctx, "tests/aot_attn.tile", &e.m), TILEC_OK);
    tilec_build_options o = {.threads = 1};
    tilec_status st = tilec_program_build(e.ctx, e.rt, e.m, &o, &e.p);
    const tilec_diag *d = tilec_ctx_diag(e.ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s", d ? d->message : "");
    cr_assert(tilec_program_has_twin(e.p, "at", 0));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tilec_rt_malloc(e.rt, 1 << 20, i == 0 ? &e.a : i == 1 ? &e.b : &e.c), TILEC_RT_OK);
    tilec_rt_arg args[8] = {{.ptr = e.a}, {.ptr = e.b}, {.ptr = e.c}, {.ptr = e.a}, {.i32 = 300}, {.i32 = 3},
                            {.i32 = 0}, {.f32 = 0.125f}};
    cr_assert_eq(tilec_program_launch(e.p, "at", 0, args, 8, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
    cr_expect_eq(fake->tma_launches, 1, "the twin ran");
    cr_expect_eq(fake->tma_encodes, 2, "K's map and V's");
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(fake->tma_maps[i].base, i ? e.c : e.b);
        cr_expect(fake->tma_maps[i].rank == 3 && fake->tma_maps[i].dims[0] == 64 && fake->tma_maps[i].dims[1] == 300 &&
                      fake->tma_maps[i].dims[2] == 3,
                  "map %d: %u-D, %llu x %llu x %llu", i, fake->tma_maps[i].rank, fake->tma_maps[i].dims[0],
                  fake->tma_maps[i].dims[1], fake->tma_maps[i].dims[2]);
        cr_expect(fake->tma_maps[i].stride == 128 && fake->tma_maps[i].bstride == 300 * 64 * 2,
                  "map %d: rows 128 bytes apart, heads %llu", i, fake->tma_maps[i].bstride);
        cr_expect(fake->tma_maps[i].box[0] == 64 && fake->tma_maps[i].box[1] == 64 && fake->tma_maps[i].swizzle == 3);
    }
    cr_expect(fake->tma_args[0] == e.b && fake->tma_args[1] == e.c, "the maps follow the arguments");
    env_free(&e);
}

/* Launch kernel's variant 0 with its nargs args, stderr going to a file;
 * return what was written. */
static char *stderr_of_launch(env *e, const char *kernel, tilec_rt_arg *args, uint32_t nargs)
{
    char log[] = "/tmp/test_tma_stderr_XXXXXX";
    int fd = mkstemp(log);
    cr_assert_geq(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    close(fd);
    tilec_rt_status st = tilec_program_launch(e->p, kernel, 0, args, nargs, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    cr_assert_eq(st, TILEC_RT_OK, "%s", tilec_rt_last_error(e->rt));
    size_t n;
    char *text = read_file(log, &n);
    unlink(log);
    cr_assert_not_null(text);
    return text;
}

/* launch_at's: tests/aot_attn.tile's `at` with its 8 arguments. */
static char *stderr_of(env *e, tilec_rt_arg *args) { return stderr_of_launch(e, "at", args, 8); }

/* Build tests/aot_attn.tile's `at` on the fake device (with TILEC_LOGS=tma,
 * read as the twin is resolved), BN set to `bn` ("64": as written), the
 * fake driver answering `per_sm` blocks a multiprocessor (0: 1), and three
 * 1 MiB buffers; the caller unsets TILEC_LOGS and frees. */
static void env_attn(env *e, const char *bn, int per_sm)
{
    memset(e, 0, sizeof *e);
    cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &e->rt), TILEC_RT_OK);
    fake->per_sm = per_sm;
    e->ctx = tilec_ctx_new();
    size_t n;
    char *src = read_file("tests/aot_attn.tile", &n);
    cr_assert_not_null(src);
    char text[8192];
    cr_assert_lt(n, sizeof text);
    memcpy(text, src, n + 1);
    free(src);
    char to[32];
    snprintf(to, sizeof to, "BN = %s", bn);
    edit_src(text, sizeof text, "BN = 64", to);
    setenv("TILEC_LOGS", "tma", 1);
    cr_assert_eq(tilec_parse_string(e->ctx, "at.tile", text, strlen(text), &e->m), TILEC_OK);
    tilec_build_options o = {.threads = 1};
    tilec_status st = tilec_program_build(e->ctx, e->rt, e->m, &o, &e->p);
    const tilec_diag *d = tilec_ctx_diag(e->ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s", d ? d->message : "");
    cr_assert(tilec_program_has_twin(e->p, "at", 0));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tilec_rt_malloc(e->rt, 1 << 20, i == 0 ? &e->a : i == 1 ? &e->b : &e->c), TILEC_RT_OK);
}

/* The attention twin at 128 keys a step (tests/aot_attn.tile with BN =
 * 128: a persistent twin) carries its loop's trips, `for n0 in 0 .. S
 * step BN`: S (parameter 4) over 128 (lower/wgattn.c wga_trips), which
 * the launch weighs past 8 units a multiprocessor as the GEMM twins' (at
 * most 32 trips walk): S 4096 at 64 heads, 2048 query tiles of 32 trips,
 * walks them on 132 blocks; S 4224 (33 trips, 2112 tiles) takes a block a
 * tile; 1024 at 4 heads (32 tiles) walks whatever the trips. The
 * TILEC_LOGS=tma line says why (the build's stderr not kept). */
Test(tma, attention_twin_weighs_its_loop_s_trips, .timeout = 120)
{
    env e;
    env_attn(&e, "128", 0);
    static const struct {
        int S, bh;
        unsigned blocks;
        const char *why;
    } cases[] = {
        {4096, 64, 132, "walking its units: 2048 units, more than 8 a multiprocessor, 32 trips a unit by the loop's "
                        "bound (at most 32)\n"},
        {4224, 64, 2112, "a block a unit: 2112 units, more than 8 a multiprocessor, 33 trips a unit by the loop's "
                         "bound (more than 32)\n"},
        {1024, 4, 32, "walking its units: 32 units, at most 8 a multiprocessor\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_rt_arg args[8] = {{.ptr = e.a},         {.ptr = e.b},          {.ptr = e.c}, {.ptr = e.a},
                                {.i32 = cases[i].S}, {.i32 = cases[i].bh}, {.i32 = 0},   {.f32 = 0.125f}};
        int before = fake->tma_launches;
        char *log = stderr_of(&e, args);
        cr_expect(fake->tma_launches == before + 1 && fake->grid[0] == cases[i].blocks, "S %d: %u blocks",
                  cases[i].S, fake->grid[0]);
        cr_expect(strstr(log, cases[i].why), "S %d: %s", cases[i].S, log);
        free(log);
    }
    unsetenv("TILEC_LOGS");
    env_free(&e);
}

/* A twin's dot loop advances `v += step` (docs/lowering.md "Loop headers"):
 * with its bound within one step of 2^31 the variant's own kernel, whose
 * loops cannot wrap, runs instead, and the log says why. */
Test(tma, twin_yields_where_its_loop_could_wrap, .timeout = 120)
{
    env e;
    env_attn(&e, "64", 0);
    static const struct {
        int S, twin;
    } cases[] = {{INT32_MAX - 63, 1}, {INT32_MAX - 62, 0}, {INT32_MAX, 0}, {4096, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_rt_arg args[8] = {{.ptr = e.a},         {.ptr = e.b}, {.ptr = e.c}, {.ptr = e.a},
                                {.i32 = cases[i].S}, {.i32 = 1},   {.i32 = 0},   {.f32 = 0.125f}};
        int before = fake->tma_launches;
        char *log = stderr_of(&e, args);
        cr_expect_eq(fake->tma_launches, before + cases[i].twin, "S %d: %s", cases[i].S, log);
        if (!cases[i].twin)
            cr_expect(strstr(log, "not its twin: its loop's bound") && strstr(log, "within one step (64) of 2^31"),
                      "S %d: %s", cases[i].S, log);
        free(log);
    }
    unsetenv("TILEC_LOGS");
    env_free(&e);
}

/* ... and where the bound is a u64 argument past 2^63 - 1, which reads as
 * -1 as a signed integer: the GEMM twin's loop `for k in 0 .. KB step BK`,
 * KB: u64 (metadata kbound KB, kper 64; tests/fake_cuda.c's uw), yields
 * past 2^31 - 64 whatever the u64's top bit, and the log prints the bound
 * as given. */
Test(tma, twin_yields_where_a_u64_bound_could_wrap, .timeout = 120)
{
    setenv("TILEC_LOGS", "tma", 1);
    env e;
    const char *edits[4] = {"K: i32)", "K: i32, KB: u64)", "for k in 0 .. K step", "for k in 0 .. KB step"};
    env_build_edits(&e, NULL, "uw", MM_TILE_MASK, edits, 2);
    cr_assert(tilec_program_has_twin(e.p, "uw", 0));
    static const struct {
        uint64_t kb;
        int twin;
        const char *shown;
    } cases[] = {{4096, 1, NULL},
                 {INT32_MAX - 63, 1, NULL},
                 {INT32_MAX - 62, 0, "bound 2147483585 is"},
                 {(uint64_t)1 << 63, 0, "bound 9223372036854775808 is"},
                 {UINT64_MAX, 0, "bound 18446744073709551615 is"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_rt_arg args[7] = {{.ptr = e.a}, {.ptr = e.b},  {.ptr = e.c},          {.i32 = 256},
                                {.i32 = 256}, {.i32 = 256}, {.u64 = cases[i].kb}};
        int before = fake->tma_launches;
        char *text = stderr_of_launch(&e, "uw", args, 7); /* the launch asserted TILEC_RT_OK */
        cr_expect_eq(fake->tma_launches, before + cases[i].twin, "KB %llu: %s", (unsigned long long)cases[i].kb, text);
        if (cases[i].shown)
            cr_expect(strstr(text, "not its twin: its loop's") && strstr(text, cases[i].shown) &&
                          strstr(text, "within one step (64) of 2^31"),
                      "KB %llu: %s", (unsigned long long)cases[i].kb, text);
        free(text);
    }
    unsetenv("TILEC_LOGS");
    env_free(&e);
}

/* A twin whose registers and shared memory fit twice on a multiprocessor
 * (lower/wgattn.c wga_blocks: the docs' BM = 64 attention) walks on every
 * resident slot: min(units, SMs x blocks a multiprocessor) blocks, as
 * cuOccupancyMaxActiveBlocksPerMultiprocessor says; the log says so. */
Test(tma, walking_grid_fills_every_resident_block, .timeout = 120)
{
    env e;
    env_attn(&e, "128", 2);
    static const struct {
        int S, bh;
        unsigned blocks;
        const char *why;
    } cases[] = {
        {4096, 64, 264, "walking its units: 2048 units, more than 8 a multiprocessor, 32 trips a unit by the loop's "
                        "bound (at most 32); 2 blocks a multiprocessor\n"},
        {4224, 64, 2112, "a block a unit: 2112 units, more than 8 a multiprocessor, 33 trips a unit by the loop's "
                         "bound (more than 32)\n"},
        {1024, 4, 32, "walking its units: 32 units, at most 8 a multiprocessor\n"},
        {1024, 20, 160, "walking its units: 160 units, at most 8 a multiprocessor; 2 blocks a multiprocessor\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_rt_arg args[8] = {{.ptr = e.a},         {.ptr = e.b},          {.ptr = e.c}, {.ptr = e.a},
                                {.i32 = cases[i].S}, {.i32 = cases[i].bh}, {.i32 = 0},   {.f32 = 0.125f}};
        int before = fake->tma_launches;
        char *log = stderr_of(&e, args);
        cr_expect(fake->tma_launches == before + 1 && fake->grid[0] == cases[i].blocks, "S %d bh %d: %u blocks",
                  cases[i].S, cases[i].bh, fake->grid[0]);
        cr_expect(strstr(log, cases[i].why), "S %d bh %d: %s", cases[i].S, cases[i].bh, log);
        free(log);
    }
    unsetenv("TILEC_LOGS");
    env_free(&e);
}

/* A twin of two M tiles a block (BM = 64 with 8 warps, lower/wgpair.c:
 * tilec_tma_meta.persistent 3) counts its units as pairs of tiles along
 * x: ceil(x / 2) * y * z blocks at most, A's box both tiles' 128 rows. */
Test(tma, two_m_tiles_a_block_count_pairs_along_x, .timeout = 120)
{
    env e;
    env_build_hints(&e, NULL, "tw", MM_TILE_MASK, "BM = 64, BN = 256, BK = 64, warps = 8");
    cr_assert(tilec_program_has_twin(e.p, "tw", 0));
    /* 300 x 264: 5 x 2 tiles of 64 x 256, 3 x 2 units */
    cr_assert_eq(launch(&e, e.a, 300, 264, 200), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
    cr_expect_eq(fake->tma_launches, 1, "the twin ran");
    cr_expect(fake->tma_maps[0].box[0] == 64 && fake->tma_maps[0].box[1] == 128, "A's box %u x %u",
              fake->tma_maps[0].box[1], fake->tma_maps[0].box[0]);
    cr_expect(fake->tma_maps[2].box[0] == 64 && fake->tma_maps[2].box[1] == 64, "C's box: one tile's 64 rows");
    cr_expect(fake->tma_grid[0] == 5 && fake->tma_grid[1] == 2 && fake->tma_grid[2] == 1, "grid %d x %d x %d",
              fake->tma_grid[0], fake->tma_grid[1], fake->tma_grid[2]);
    cr_expect(fake->grid[0] == 6 && fake->grid[1] == 1, "%u blocks: a unit each", fake->grid[0]);
    cr_expect_eq(fake->tma_one_launches, 0, "no one-tile twin");
    /* 8192 x 8192: 128 x 32 tiles, 2048 units, more than 8 an SM, 128 trips a tile: a block a unit */
    cr_assert_eq(launch(&e, e.a, 8192, 8192, 8192), TILEC_RT_OK);
    cr_expect(fake->grid[0] == 2048 && fake->grid[1] == 1, "%u blocks", fake->grid[0]);
    env_free(&e);
}

/* A gather twin (A's mask bounds its rows only: A by cp.async,
 * lower/wggather.c) passes one map, B's: rows unbounded (INT32_MAX, the
 * kernel takes a box only where its rows are all below K), columns N,
 * row stride N, boxes of BK rows x 64; a B whose row stride is no
 * multiple of 16 bytes launches the variant's own kernel. */
Test(tma, a_gather_twin_passes_b_s_map, .timeout = 120)
{
    env e;
    env_build_mm(&e, NULL, "gw", "rm[:, None] < M");
    cr_assert(tilec_program_has_twin(e.p, "gw", 0));
    tilec_rt_arg args[6] = {{.ptr = e.a}, {.ptr = e.b}, {.ptr = e.c}, {.i32 = 300}, {.i32 = 264}, {.i32 = 200}};
    cr_assert_eq(tilec_program_launch(e.p, "gw", 0, args, 6, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
    cr_expect_eq(fake->tma_launches, 1, "the twin ran");
    cr_expect_eq(fake->tma_encodes, 1, "one map: B's");
    cr_expect_eq(fake->tma_maps[0].base, e.b);
    cr_expect(fake->tma_maps[0].dims[0] == 264 && fake->tma_maps[0].dims[1] == 2147483647, "dims %llu x %llu",
              fake->tma_maps[0].dims[0], fake->tma_maps[0].dims[1]);
    cr_expect_eq(fake->tma_maps[0].stride, 528);
    cr_expect(fake->tma_maps[0].box[0] == 64 && fake->tma_maps[0].box[1] == 64);
    cr_expect_eq(fake->tma_maps[0].swizzle, 3, "CU_TENSOR_MAP_SWIZZLE_128B");
    cr_expect_eq(fake->tma_args[0], e.b, "B's map after the arguments");
    args[4].i32 = 263; /* a row of 526 bytes: no map, the variant */
    cr_assert_eq(tilec_program_launch(e.p, "gw", 0, args, 6, NULL), TILEC_RT_OK);
    cr_expect_eq(fake->tma_launches, 1, "the variant ran");
    cr_expect_eq(fake->tma_encodes, 1);
    env_free(&e);
}

/* TILEC_TMA_PAIR overrides the launch's choice between a paired twin
 * (lower/wgpair.c) and its one-tile twin: 1 the pairs even where the
 * cost model takes one tile a block (3 x 3 tiles), 0 one tile where it
 * takes the pairs (32 x 16 tiles). */
Test(tma, pair_mode_from_the_environment, .timeout = 120)
{
    env e;
    setenv("TILEC_TMA_PAIR", "1", 1);
    env_build(&e);
    cr_assert_eq(launch(&e, e.a, 300, 264, 200), TILEC_RT_OK);
    cr_expect(fake->tma_launches == 1 && fake->tma_one_launches == 0 && fake->grid[0] == 6, "%d %d %u",
              fake->tma_launches, fake->tma_one_launches, fake->grid[0]);
    env_free(&e);
    setenv("TILEC_TMA_PAIR", "0", 1);
    env_build(&e);
    cr_assert_eq(launch(&e, e.a, 4096, 2048, 256), TILEC_RT_OK);
    cr_expect(fake->tma_one_launches == 1 && fake->grid[0] == 132, "%d %u", fake->tma_one_launches, fake->grid[0]);
    env_free(&e);
    unsetenv("TILEC_TMA_PAIR");
}

/* TILEC_TMA_PERSIST overrides the rule: 1 walks 2048 pairs (16 a
 * multiprocessor, 128 trips a tile) on 132 blocks, where the launch takes
 * a block a pair; 0 a block a pair where it walks 256 on 132 blocks;
 * another value: the rule. */
Test(tma, persist_mode_from_the_environment, .timeout = 120)
{
    static const struct {
        const char *mode;
        int M, N, K;
        unsigned blocks;
    } cases[] = {{"1", 8192, 8192, 8192, 132}, {"0", 4096, 2048, 256, 256}, {"2", 8192, 8192, 8192, 2048},
                 {"0", 8192, 8192, 256, 2048}, {"1", 300, 264, 256, 9}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        env e;
        setenv("TILEC_TMA_PERSIST", cases[i].mode, 1);
        env_build(&e);
        int before = fake->tma_launches;
        cr_assert_eq(launch(&e, e.a, cases[i].M, cases[i].N, cases[i].K), TILEC_RT_OK);
        cr_expect(fake->tma_launches == before + 1 && fake->grid[0] == cases[i].blocks, "TILEC_TMA_PERSIST=%s, %d x %d: %u blocks",
                  cases[i].mode, cases[i].M, cases[i].N, fake->grid[0]);
        env_free(&e);
    }
    unsetenv("TILEC_TMA_PERSIST");
}

/* The launch rule weighs each tile's dot loop trips (the twin's kbound,
 * kfrom, kper: K over 64 for tw): past 8 units a multiprocessor (8192 x
 * 8192: 2048 pairs) it walks them on 132 blocks where a tile's loop is at
 * most 32 trips (K 256: 4; 2048: 32; 8: 1), and takes a block a pair
 * where it is more (2056: 33; 8192: 128). */
Test(tma, persist_rule_weighs_the_loop_s_trips, .timeout = 120)
{
    static const struct {
        int K;
        unsigned blocks;
    } cases[] = {{256, 132}, {2048, 132}, {2056, 2048}, {8192, 2048}, {8, 132}, {64, 132}};
    env e;
    env_build(&e);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int before = fake->tma_launches;
        cr_assert_eq(launch(&e, e.a, 8192, 8192, cases[i].K), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
        cr_expect(fake->tma_launches == before + 1 && fake->grid[0] == cases[i].blocks, "K %d: %u blocks",
                  cases[i].K, fake->grid[0]);
    }
    /* few units: walked whatever the trips */
    cr_assert_eq(launch(&e, e.a, 4096, 2048, 8192), TILEC_RT_OK);
    cr_expect_eq(fake->grid[0], 132);
    env_free(&e);
}

/* MM_TILE_FMT's product added to the c it stores (gemm_dw's dW += G^T h:
 * the epilogue reads the tile it writes), whose paired twin's one-tile
 * twin reads that tile by TMA into its store's staging (one_tma). */
static const char *const acc_edits[] = {
    "store(c + rm[:, None] * N + rn[None, :], cast(acc, f16), rm[:, None] < M && rn[None, :] < N);",
    "let mc = rm[:, None] < M && rn[None, :] < N;\n    let at = c + rm[:, None] * N + rn[None, :];\n"
    "    store(at, cast(acc + cast(load(at, mc, 0.0), f32), f16), mc);",
};

/* A paired twin whose one-tile twin reads its epilogue's tile by TMA
 * (tilec_tma_meta.one_tma) launches that twin where each tile's loop runs
 * at most 16 trips (TMA_ONE_TMA_KSTEPS, K over 64), though the rounds
 * favour the pairs (4096 x 2048: 256 pairs in 2 rounds, 512 tiles in 4):
 * K 1024 (16 trips) and 520 (9) one tile a unit on 132 blocks, 1088 (17)
 * and 2048 (32) the pairs; 8192 x 8192 at K 512 (gemm_dw at C = 512, 8
 * trips) walks 4096 tiles on 132 blocks. TILEC_TMA_PAIR=1 keeps the
 * pairs. tw, whose twins read no tile in the epilogue, keeps its pairs at
 * K 1024 (before: every paired twin there). */
Test(tma, a_one_tile_twin_reading_by_tma_takes_short_loops, .timeout = 120)
{
    static const struct {
        int M, N, K;
        int one;
        unsigned blocks;
    } cases[] = {{4096, 2048, 1024, 1, 132}, {4096, 2048, 520, 1, 132}, {4096, 2048, 1088, 0, 132},
                 {4096, 2048, 2048, 0, 132}, {8192, 8192, 512, 1, 132}, {300, 264, 200, 1, 9}};
    env e;
    env_build_edits(&e, NULL, "tw", MM_TILE_MASK, acc_edits, 1);
    cr_assert(tilec_program_has_twin(e.p, "tw", 0));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int before = fake->tma_launches, one = fake->tma_one_launches;
        cr_assert_eq(launch(&e, e.a, cases[i].M, cases[i].N, cases[i].K), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
        cr_expect(fake->tma_launches == before + 1 && fake->tma_one_launches == one + cases[i].one &&
                      fake->grid[0] == cases[i].blocks,
                  "%d x %d x %d: %d twin launches, %d one-tile, %u blocks", cases[i].M, cases[i].N, cases[i].K,
                  fake->tma_launches - before, fake->tma_one_launches - one, fake->grid[0]);
    }
    env_free(&e);
    setenv("TILEC_TMA_PAIR", "1", 1);
    env_build_edits(&e, NULL, "tw", MM_TILE_MASK, acc_edits, 1);
    int launches = fake->tma_launches, one = fake->tma_one_launches;
    cr_assert_eq(launch(&e, e.a, 8192, 8192, 512), TILEC_RT_OK);
    cr_expect(fake->tma_launches == launches + 1 && fake->tma_one_launches == one && fake->grid[0] == 132,
              "TILEC_TMA_PAIR=1: %d one-tile launches", fake->tma_one_launches - one);
    env_free(&e);
    unsetenv("TILEC_TMA_PAIR");
    env_build(&e);
    launches = fake->tma_launches, one = fake->tma_one_launches;
    cr_assert_eq(launch(&e, e.a, 4096, 2048, 1024), TILEC_RT_OK);
    cr_assert_eq(launch(&e, e.a, 8192, 8192, 512), TILEC_RT_OK);
    cr_expect(fake->tma_launches == launches + 2 && fake->tma_one_launches == one,
              "tw: the pairs, not %d one-tile launches", fake->tma_one_launches - one);
    env_free(&e);
}

Test(tma, unfit_operands_take_the_variant, .timeout = 120)
{
    env e;
    env_build(&e);
    int before = fake->launches;
    cr_assert_eq(launch(&e, e.a + 2, 256, 256, 256), TILEC_RT_OK); /* A's base off 16 bytes */
    cr_assert_eq(launch(&e, e.a, 256, 129, 256), TILEC_RT_OK);     /* B's rows 258 bytes apart */
    cr_assert_eq(launch(&e, e.a, 256, 256, 100), TILEC_RT_OK);     /* A's rows 200 bytes apart */
    cr_expect_eq(fake->tma_launches, 0, "the twin never ran");
    cr_expect_eq(fake->tma_encodes, 0, "no map made");
    cr_expect_eq(fake->launches - before, 3, "the variant's own kernel ran each time");
    env_free(&e);
}

/* Build tw under the environment variable name=value: no twin, and a
 * launch runs the variant. */
static void expect_no_twin(const char *name, const char *value)
{
    env e;
    setenv(name, value, 1);
    env_build(&e);
    cr_expect(!tilec_program_has_twin(e.p, "tw", 0), "%s=%s", name, value);
    cr_assert_eq(launch(&e, e.a, 256, 256, 256), TILEC_RT_OK);
    cr_expect_eq(fake->tma_launches, 0);
    env_free(&e);
    unsetenv(name);
}

Test(tma, disabled_or_no_encoder_means_no_twin, .timeout = 120)
{
    expect_no_twin("TILEC_DISABLE_TMA", "1");
    expect_no_twin("FAKE_CUDA_MODE", "notma"); /* a driver without cuTensorMapEncodeTiled */
}

/* The cached bundle holds the twin and its metadata (docs/runtime.md, "The
 * bundle format"): a warm build launches it as a cold one does, its loop's
 * trips included (8192 x 8192: walked at K 256, a block a pair at 8192). */
Test(tma, a_cache_hit_keeps_the_twin, .timeout = 120)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    env e;
    env_build_in(&e, dir);
    tilec_program_stats st;
    tilec_program_get_stats(e.p, &st);
    cr_expect(!st.cache_hit);
    env_free(&e);
    env_build_in(&e, dir);
    tilec_program_get_stats(e.p, &st);
    cr_expect(st.cache_hit, "the second build finds the bundle");
    cr_expect(tilec_program_has_twin(e.p, "tw", 0), "and still has the twin");
    cr_assert_eq(launch(&e, e.a, 256, 256, 256), TILEC_RT_OK);
    cr_expect_eq(fake->tma_launches, 1);
    cr_assert_eq(launch(&e, e.a, 8192, 8192, 256), TILEC_RT_OK);
    cr_expect(fake->tma_launches == 2 && fake->grid[0] == 132, "%u blocks", fake->grid[0]);
    cr_assert_eq(launch(&e, e.a, 8192, 8192, 8192), TILEC_RT_OK);
    cr_expect(fake->tma_launches == 3 && fake->grid[0] == 2048, "%u blocks", fake->grid[0]);
    env_free(&e);
    rm_dir(dir);
}

/* ---- an ahead-of-time table (tilec_aot_kernel.tma, runtime/aot.c) ---- */

static int tw_grid(const int64_t *a, uint32_t g[3])
{
    g[0] = (uint32_t)((a[3] + 127) / 128);
    g[1] = (uint32_t)((a[4] + 127) / 128);
    g[2] = 1;
    return 0;
}

static const tilec_rt_param_kind tw_kinds[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER,
                                               TILEC_RT_PARAM_I32,     TILEC_RT_PARAM_I32,     TILEC_RT_PARAM_I32};
static char tw_twin[] = "tw_v0_tma";
/* what `--emit c --aot sm_90a` writes for tw (tests/test_wrapper_run.c) */
static const tilec_tma_meta tw_meta = {tw_twin, 384, 230496, 3, 1, {
    {0, 3, 5, 5, 128, 64, 2, 0, 0, {TILEC_TMA_NONE, TILEC_TMA_NONE}, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {1, 5, 4, 4, 64, 64, 2, 0, 0, {TILEC_TMA_NONE, TILEC_TMA_NONE}, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {2, 3, 4, 4, 128, 64, 2, 0, 0, {TILEC_TMA_NONE, TILEC_TMA_NONE}, 0, 0, 0, 0, 0, 0, 0, 0, 0}}, 5, 0, 64, 0};
static const char tw_image[] = "// fake module\n";

/* A table of one entry loaded on the fake device, with three 1 MiB buffers. */
typedef struct aot_env {
    tilec_rt *rt;
    tilec_program *p;
    uint64_t buf[3];
} aot_env;

static void aot_open(aot_env *e, const tilec_aot_kernel *k)
{
    e->rt = NULL;
    e->p = NULL;
    cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &e->rt), TILEC_RT_OK);
    cr_assert_eq(tilec_program_load(e->rt, k, 1, &e->p), TILEC_RT_OK, "%s", tilec_rt_last_error(e->rt));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tilec_rt_malloc(e->rt, 1 << 20, &e->buf[i]), TILEC_RT_OK);
}

static void aot_close(aot_env *e)
{
    for (int i = 0; i < 3; i++)
        tilec_rt_free(e->rt, e->buf[i]);
    tilec_program_free(e->p);
    tilec_rt_close(e->rt);
}

/* Load one entry for tw with twin metadata m (NULL: none) and launch it on
 * an M x N x K product: the blocks its twin ran on (0: the twin did not
 * run); *maps_ok 1 when it ran with its three maps after the arguments, B's
 * row stride N halves and the twin's shared memory. */
static unsigned aot_run(const tilec_tma_meta *m, int M, int N, int K, int *has_twin, int *maps_ok)
{
    const tilec_aot_kernel k = {"tw", 0, 1, "tw_v0", tw_image, sizeof tw_image, 256, 107520, 6, tw_kinds, 0x4, tw_grid,
                                0, 0, m};
    aot_env e;
    aot_open(&e, &k);
    *has_twin = tilec_program_has_twin(e.p, "tw", 0);
    uint64_t a = e.buf[0], b = e.buf[1], c = e.buf[2];
    int launches = fake->tma_launches, encodes = fake->tma_encodes;
    tilec_rt_arg args[6] = {{.ptr = a}, {.ptr = b}, {.ptr = c}, {.i32 = M}, {.i32 = N}, {.i32 = K}};
    cr_assert_eq(tilec_program_launch(e.p, "tw", 0, args, 6, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
    unsigned blocks = fake->tma_launches - launches == 1 ? fake->grid[0] : 0;
    *maps_ok = fake->tma_encodes - encodes == 3 && fake->tma_args[0] == a && fake->tma_args[1] == b &&
               fake->tma_args[2] == c && fake->tma_maps[1].stride == 2 * (uint64_t)N && fake->smem == 230496;
    aot_close(&e);
    return blocks;
}

/* 1 when the twin of an AOT entry with metadata m ran on 300 x 264 x 200
 * as a built program's does: its three maps, 9 blocks. */
static int aot_twin_ran(const tilec_tma_meta *m, int *has_twin)
{
    int maps_ok = 0;
    return aot_run(m, 300, 264, 200, has_twin, &maps_ok) == 9 && maps_ok;
}

/* The blocks the twin of an AOT entry for tw with metadata m ran on for
 * an M x N x K product (0: the twin did not run). */
static unsigned aot_blocks(const tilec_tma_meta *m, int M, int N, int K)
{
    int has = 0, maps_ok = 0;
    return aot_run(m, M, N, K, &has, &maps_ok);
}

/* A table entry that names its twin loads it beside the variant and its
 * launches take it (maps from the arguments, the twin's shared memory, the
 * persistent grid), as a built program's; without metadata, or with
 * metadata the runtime cannot honour (a map's pointer parameter out of
 * range), the variant alone. */
Test(tma, an_aot_table_entry_launches_its_twin, .timeout = 60)
{
    int has = 0;
    cr_expect(aot_twin_ran(&tw_meta, &has), "the twin did not run as built programs run it");
    cr_expect(has);
    cr_expect(!aot_twin_ran(NULL, &has));
    cr_expect(!has);
    tilec_tma_meta bad = tw_meta;
    bad.maps[1].ptr = 6;
    cr_expect(!aot_twin_ran(&bad, &has));
    cr_expect(!has, "metadata naming parameter 6 of 6");
    bad = tw_meta; /* one_tma 1 names a one-tile twin beside pairs, which a twin of one tile a unit has not */
    bad.one_tma = 1;
    cr_expect(!aot_twin_ran(&bad, &has));
    cr_expect(!has, "one_tma on a twin of one tile a unit");
}


/* An AOT table's twin carries its loop's trips to the launch rule: 8192 x
 * 8192 (4096 tiles, 31 a multiprocessor) at K 256 walks on 132 blocks with
 * the trips (4 of 64), takes a block a tile at K 8192 (128 trips) and
 * without them (kper 0: a table of the layout before, or a loop end that
 * is not a parameter), and where kbound names a pointer parameter; a
 * kbound past the parameters is metadata the runtime cannot honour: no
 * twin. */
Test(tma, an_aot_table_s_trips_reach_the_rule, .timeout = 60)
{
    cr_expect_eq(aot_blocks(&tw_meta, 8192, 8192, 256), 132);
    cr_expect_eq(aot_blocks(&tw_meta, 8192, 8192, 8192), 4096);
    tilec_tma_meta m = tw_meta;
    m.kper = 0;
    cr_expect_eq(aot_blocks(&m, 8192, 8192, 256), 4096, "trips not known");
    m = tw_meta;
    m.kbound = 0;
    cr_expect_eq(aot_blocks(&m, 8192, 8192, 256), 4096, "the bound a pointer");
    m = tw_meta;
    m.kfrom = 192;
    cr_expect_eq(aot_blocks(&m, 8192, 8192, 2240), 132, "(2240 - 192) / 64: 32 trips");
    cr_expect_eq(aot_blocks(&m, 8192, 8192, 2248), 4096, "(2248 - 192) / 64: 33 trips");
    m = tw_meta;
    m.kbound = 6;
    cr_expect_eq(aot_blocks(&m, 8192, 8192, 256), 0, "kbound 6 of 6 parameters: no twin");
}

/* A wrapper for several architectures (`--aot sm_80,sm_90a`): the fake
 * 9.0 device loads its own target's table (sm_90a, with the twin), else
 * the newest one of its major version it runs (sm_90; never an sm_80,
 * sm_86 or sm_91a table); none it runs is an error naming the device and
 * the tables. */
Test(tma, a_multi_architecture_wrapper_loads_the_device_s_table, .timeout = 60)
{
    tilec_rt *rt = NULL;
    cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &rt), TILEC_RT_OK);
    const tilec_aot_kernel plain[] = {
        {"tw", 0, 1, "tw_v0", tw_image, sizeof tw_image, 256, 107520, 6, tw_kinds, 0x4, tw_grid, 0, 0, NULL},
    };
    const tilec_aot_kernel twin[] = {
        {"tw", 0, 1, "tw_v0", tw_image, sizeof tw_image, 256, 107520, 6, tw_kinds, 0x4, tw_grid, 0, 0, &tw_meta},
    };
    static const struct {
        const char *archs[3];
        const char *want; /* NULL: none runs */
    } cases[] = {
        {{"sm_80", "sm_90a", NULL}, "sm_90a"}, {{"sm_90a", "sm_80", NULL}, "sm_90a"},
        {{"sm_80", "sm_90", NULL}, "sm_90"},   {{"sm_90", "sm_90a", "sm_80"}, "sm_90a"},
        {{"sm_80", "sm_86", NULL}, NULL},      {{"sm_91a", "sm_100", NULL}, NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tilec_aot_table t[3];
        uint32_t n = 0;
        for (; n < 3 && cases[c].archs[n]; n++)
            t[n] = (tilec_aot_table){cases[c].archs[n], strcmp(cases[c].archs[n], "sm_90a") ? plain : twin, 1, NULL, 0};
        tilec_program *p = (tilec_program *)0x1;
        const char *got = "unset";
        tilec_rt_status st = tilec_program_load_for_device(rt, t, n, &p, &got);
        if (!cases[c].want) {
            cr_expect_eq(st, TILEC_RT_MODULE_ERROR, "case %zu", c);
            cr_expect_null(p);
            cr_expect_null(got);
            char want[160];
            snprintf(want, sizeof want,
                     "no table of this wrapper runs on device 0 (Fake CUDA Device, sm_90a): it "
                     "was compiled for %s, %s",
                     cases[c].archs[0], cases[c].archs[1]);
            cr_expect(strstr(tilec_rt_last_error(rt), want), "%s", tilec_rt_last_error(rt));
            continue;
        }
        cr_assert_eq(st, TILEC_RT_OK, "case %zu: %s", c, tilec_rt_last_error(rt));
        cr_expect_str_eq(got, cases[c].want, "case %zu", c);
        cr_expect_eq(tilec_program_has_twin(p, "tw", 0), !strcmp(cases[c].want, "sm_90a"), "case %zu", c);
        tilec_program_free(p);
    }
    tilec_program *p = (tilec_program *)0x1;
    cr_expect_eq(tilec_program_load_for_device(rt, NULL, 0, &p, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_null(p);
    cr_expect_eq(tilec_program_load_for_device(rt, NULL, 1, NULL, NULL), TILEC_RT_INVALID_ARG);
    tilec_rt_close(rt);
}

/* The maps' boxes and swizzles follow a stage's K depth (docs/lowering.md,
 * "wgmma and TMA"): K tiles of 16 and 32 in stages of 64 (several loop
 * iterations a stage) and of 128 (two stages of 64 a loop iteration,
 * whatever the loop's end) are boxes of 128 bytes of K, swizzled
 * 128 bytes wide (CU_TENSOR_MAP_SWIZZLE_128B); a K tile of 16 or 32 one
 * iteration a stage (the loop stops a K tile short of K, so merging
 * would not be the same sum) is A's boxes as wide as the tile, swizzled
 * that wide (16 halves: 32 bytes, _32B; 32: 64 bytes, _64B). B's boxes
 * are the stage's K rows of 128 bytes, swizzled 128 bytes wide (a K tile
 * of 128: 64 rows, a stage's; before, 128 rows, a stage of the whole K
 * tile). */
Test(tma, swizzle_follows_the_k_tile, .timeout = 120)
{
    static const struct {
        unsigned bk, kdepth, swizzle;
        const char *end; /* the loop's end */
    } tiles[] = {{16, 64, 3, "K"},      {32, 64, 3, "K"},      {128, 64, 3, "K"},
                 {128, 64, 3, "K - BK"}, {16, 16, 1, "K - BK"}, {32, 32, 2, "K - BK"}};
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        env e;
        memset(&e, 0, sizeof e);
        cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &e.rt), TILEC_RT_OK);
        e.ctx = tilec_ctx_new();
        char src[2048], hint[32];
        snprintf(src, sizeof src, MM_TILE_FMT, "tw", MM_TILE_MASK);
        char *bk = strstr(src, "BK = 64,");
        cr_assert_not_null(bk);
        snprintf(hint, sizeof hint, "BK = %u,", tiles[i].bk);
        memmove(bk + strlen(hint), bk + strlen("BK = 64,"), strlen(bk + strlen("BK = 64,")) + 1);
        memcpy(bk, hint, strlen(hint));
        char *end = strstr(src, "0 .. K step");
        cr_assert_not_null(end);
        char tail[1024];
        cr_assert_lt(strlen(end), sizeof tail);
        snprintf(tail, sizeof tail, "%s", end + strlen("0 .. K"));
        snprintf(end, sizeof src - (size_t)(end - src), "0 .. %s%s", tiles[i].end, tail);
        cr_assert_eq(tilec_parse_string(e.ctx, "tw.tile", src, strlen(src), &e.m), TILEC_OK);
        tilec_build_options o = {.threads = 1};
        tilec_status st = tilec_program_build(e.ctx, e.rt, e.m, &o, &e.p);
        const tilec_diag *d = tilec_ctx_diag(e.ctx, 0);
        cr_assert_eq(st, TILEC_OK, "BK = %u: %s", tiles[i].bk, d ? d->message : "");
        cr_assert(tilec_program_has_twin(e.p, "tw", 0), "BK = %u has a twin", tiles[i].bk);
        cr_assert_eq(tilec_rt_malloc(e.rt, 1 << 20, &e.a), TILEC_RT_OK);
        cr_assert_eq(tilec_rt_malloc(e.rt, 1 << 20, &e.b), TILEC_RT_OK);
        cr_assert_eq(tilec_rt_malloc(e.rt, 1 << 20, &e.c), TILEC_RT_OK);
        int before = fake->tma_launches;
        cr_assert_eq(launch(&e, e.a, 300, 264, 200), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
        cr_expect_eq(fake->tma_launches, before + 1, "BK = %u: the twin ran", tiles[i].bk);
        unsigned acols = tiles[i].kdepth < 64 ? tiles[i].kdepth : 64, kt = tiles[i].bk;
        const char *to = tiles[i].end;
        cr_expect(fake->tma_maps[0].box[0] == acols && fake->tma_maps[0].box[1] == 128,
                  "BK = %u to %s: A's box %u x %u", kt, to, fake->tma_maps[0].box[1], fake->tma_maps[0].box[0]);
        cr_expect_eq(fake->tma_maps[0].swizzle, tiles[i].swizzle, "BK = %u to %s: A's swizzle %u", kt, to,
                     fake->tma_maps[0].swizzle);
        cr_expect(fake->tma_maps[1].box[0] == 64 && fake->tma_maps[1].box[1] == tiles[i].kdepth,
                  "BK = %u to %s: B's box %u x %u", kt, to, fake->tma_maps[1].box[1], fake->tma_maps[1].box[0]);
        cr_expect_eq(fake->tma_maps[1].swizzle, 3, "BK = %u to %s: B in 128-byte rows", kt, to);
        env_free(&e);
    }
}

/* ---- an im2col map: a convolution's NHWC image (tilec/tma.h, runtime/tma.c) ---- */

static int cv_grid(const int64_t *a, uint32_t g[3])
{
    (void)a;
    g[0] = g[1] = g[2] = 1;
    return 0;
}

static const tilec_rt_param_kind cv_kinds[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER,
                                               TILEC_RT_PARAM_I32,     TILEC_RT_PARAM_I32,     TILEC_RT_PARAM_I32,
                                               TILEC_RT_PARAM_I32,     TILEC_RT_PARAM_I32,     TILEC_RT_PARAM_I32,
                                               TILEC_RT_PARAM_I32};
static char cv_twin[] = "cv_v0_tma";
/* cv(x, w, y, N, H, W, C, K, stride, pad): x's map N images (3) of H x W (4, 5) pixels of C channels (6), a
 * pixel every C; a 3 x 3 filter (constants), the stride and padding parameters 8 and 9; boxes of 128 pixels
 * of 64 halves */
static const tilec_tma_meta cv_meta = {cv_twin, 384, 100000, 1, 0, {
    {0, 3, 6, 6, 128, 64, 2, 0, 0, {TILEC_TMA_NONE, TILEC_TMA_NONE}, 0, 0, 1, 4, 5, TILEC_TMA_CONST | 3u,
     TILEC_TMA_CONST | 3u, 9, 8}}, 0, 0, 0, 0};

/* Load cv with twin metadata m (NULL: none) and launch it on x + off:
 * 1 when the twin ran with x's map after the arguments, 0 when the
 * variant's own kernel ran; *has_twin whether the program has the twin. */
static int cv_run(const tilec_tma_meta *m, uint64_t off, int n, int h, int w, int c, int stride, int pad,
                  int *has_twin)
{
    const tilec_aot_kernel k = {"cv", 0, 1, "cv_v0", tw_image, sizeof tw_image, 256, 0, 10, cv_kinds, 0x4, cv_grid,
                                0, 0, m};
    aot_env e;
    aot_open(&e, &k);
    *has_twin = tilec_program_has_twin(e.p, "cv", 0);
    uint64_t x = e.buf[0] + off;
    int launches = fake->tma_launches, plain = fake->launches;
    tilec_rt_arg args[10] = {{.ptr = x},  {.ptr = e.buf[1]}, {.ptr = e.buf[2]}, {.i32 = n},      {.i32 = h},
                             {.i32 = w},  {.i32 = c},        {.i32 = 64},       {.i32 = stride}, {.i32 = pad}};
    cr_assert_eq(tilec_program_launch(e.p, "cv", 0, args, 10, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
    int ran = fake->tma_launches - launches == 1 && fake->tma_args[0] == x;
    cr_expect_eq(fake->launches - plain, 1, "one kernel ran");
    aot_close(&e);
    return ran;
}

/* An im2col map is encoded by cuTensorMapEncodeIm2col from the arguments:
 * 4-D (C, W, H, N), strides a pixel, a row, an image in bytes, the pixel
 * box's corners -pad and pad - (filter - 1) along W and H, the box's
 * channels and pixels, the convolution's stride along W and H, the swizzle
 * of a box row of 128 bytes and zeros out of the image; a 1 x 1 filter
 * without padding or stride (TILEC_TMA_NONE) has both corners 0 and a
 * stride of 1; a bf16 image its type. */
Test(tma, an_im2col_map_s_encode_arguments, .timeout = 60)
{
    int has = 0, encodes = fake->im2col_encodes;
    cr_assert(cv_run(&cv_meta, 0, 2, 17, 13, 72, 2, 1, &has), "the twin ran");
    cr_expect(has);
    cr_expect_eq(fake->im2col_encodes - encodes, 1);
    cr_expect_eq(fake->tma_args[0], fake->im2col.base, "the map is the twin's last parameter");
    cr_expect(fake->im2col.dims[0] == 72 && fake->im2col.dims[1] == 13 && fake->im2col.dims[2] == 17 &&
                  fake->im2col.dims[3] == 2,
              "dims %llu %llu %llu %llu", fake->im2col.dims[0], fake->im2col.dims[1], fake->im2col.dims[2],
              fake->im2col.dims[3]);
    cr_expect(fake->im2col.strides[0] == 144 && fake->im2col.strides[1] == 13 * 144 &&
                  fake->im2col.strides[2] == 17 * 13 * 144,
              "strides %llu %llu %llu", fake->im2col.strides[0], fake->im2col.strides[1], fake->im2col.strides[2]);
    cr_expect(fake->im2col.lower[0] == -1 && fake->im2col.lower[1] == -1 && fake->im2col.upper[0] == -1 &&
                  fake->im2col.upper[1] == -1,
              "corners %d %d, %d %d", fake->im2col.lower[0], fake->im2col.lower[1], fake->im2col.upper[0],
              fake->im2col.upper[1]);
    cr_expect(fake->im2col.cpp == 64 && fake->im2col.ppc == 128, "box %u channels x %u pixels", fake->im2col.cpp,
              fake->im2col.ppc);
    cr_expect(fake->im2col.estr[0] == 1 && fake->im2col.estr[1] == 2 && fake->im2col.estr[2] == 2 &&
                  fake->im2col.estr[3] == 1,
              "element strides");
    cr_expect_eq(fake->im2col.swizzle, 3, "CU_TENSOR_MAP_SWIZZLE_128B");
    cr_expect_eq(fake->im2col.dtype, 6, "CU_TENSOR_MAP_DATA_TYPE_FLOAT16");
    cr_expect_eq(fake->im2col.fill, 0, "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros");
    /* padding 4 with a 3 x 3 filter: corners -4 and 2 */
    cr_assert(cv_run(&cv_meta, 0, 1, 8, 8, 64, 1, 4, &has));
    cr_expect(fake->im2col.lower[0] == -4 && fake->im2col.upper[0] == 2 && fake->im2col.upper[1] == 2);
    tilec_tma_meta m = cv_meta;
    m.maps[0].fr = m.maps[0].fs = m.maps[0].pad = m.maps[0].cstride = TILEC_TMA_NONE; /* 1 x 1, no padding */
    m.maps[0].bf16 = 1;
    m.maps[0].box_cols = 32; /* 64 bytes a box row */
    cr_assert(cv_run(&m, 0, 3, 5, 7, 40, 2, 1, &has)); /* stride and padding arguments not read */
    cr_expect(fake->im2col.lower[0] == 0 && fake->im2col.lower[1] == 0 && fake->im2col.upper[0] == 0 &&
              fake->im2col.upper[1] == 0);
    cr_expect(fake->im2col.estr[1] == 1 && fake->im2col.estr[2] == 1);
    cr_expect_eq(fake->im2col.dtype, 9, "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16");
    cr_expect_eq(fake->im2col.swizzle, 2, "CU_TENSOR_MAP_SWIZZLE_64B");
    cr_expect(fake->im2col.cpp == 32 && fake->im2col.dims[0] == 40 && fake->im2col.strides[0] == 80);
}

/* An im2col map of the output's extents (kind 2, lower/wgim2col.c): fr
 * and fs are OH and OW, the upper corners where the last output pixel of
 * a column and a row starts, (out - 1) * stride - pad - (extent - 1), so
 * the walk wraps after exactly OW pixels whatever the filter; an output
 * whose corner does not fit in 8 bits takes the variant. */
Test(tma, an_im2col_map_of_the_output_s_extents, .timeout = 60)
{
    int has = 0;
    tilec_tma_meta m = cv_meta;
    m.maps[0].im2col = TILEC_TMA_IM2COL_OUT;
    m.maps[0].fr = TILEC_TMA_CONST | 9u; /* H 17, stride 2, pad 1, a 3 x 3 filter: OH 9, OW 7 */
    m.maps[0].fs = TILEC_TMA_CONST | 7u;
    cr_assert(cv_run(&m, 0, 2, 17, 13, 72, 2, 1, &has), "the twin ran");
    cr_expect(fake->im2col.lower[0] == -1 && fake->im2col.lower[1] == -1 && fake->im2col.upper[0] == -1 &&
                  fake->im2col.upper[1] == -1,
              "corners %d %d, %d %d (as the filter's)", fake->im2col.lower[0], fake->im2col.lower[1],
              fake->im2col.upper[0], fake->im2col.upper[1]);
    m.maps[0].fr = TILEC_TMA_CONST | 4u; /* fewer output pixels than the filter allows: the walk wraps sooner */
    m.maps[0].fs = TILEC_TMA_CONST | 5u;
    cr_assert(cv_run(&m, 0, 2, 17, 13, 72, 2, 1, &has));
    cr_expect(fake->im2col.upper[0] == 4 * 2 - 1 - 12 && fake->im2col.upper[1] == 3 * 2 - 1 - 16, "corners %d, %d",
              fake->im2col.upper[0], fake->im2col.upper[1]);
    m.maps[0].fs = TILEC_TMA_CONST | 80u; /* (80 - 1) * 2 - 1 - 12 = 145: past 8 bits */
    cr_expect(!cv_run(&m, 0, 2, 17, 13, 72, 2, 1, &has), "the variant ran");
}

/* cv's program grid for the persistent twin: n M tiles (its argument 3) by 2 N tiles */
static int cvp_grid(const int64_t *a, uint32_t g[3])
{
    g[0] = (uint32_t)a[3];
    g[1] = 2;
    g[2] = 1;
    return 0;
}

/* The blocks a persistent cv twin (metadata m) is launched on with n x 2 tiles. */
static unsigned cvp_blocks(const tilec_tma_meta *m, int n)
{
    const tilec_aot_kernel k = {"cv", 0, 1, "cv_v0", tw_image, sizeof tw_image, 256, 0, 10, cv_kinds, 0x4, cvp_grid,
                                0, 0, m};
    aot_env e;
    aot_open(&e, &k);
    int launches = fake->tma_launches;
    tilec_rt_arg args[10] = {{.ptr = e.buf[0]}, {.ptr = e.buf[1]}, {.ptr = e.buf[2]}, {.i32 = n},     {.i32 = 8},
                             {.i32 = 8},        {.i32 = 64},       {.i32 = 64},       {.i32 = 1},     {.i32 = 1}};
    cr_assert_eq(tilec_program_launch(e.p, "cv", 0, args, 10, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(e.rt));
    unsigned blocks = fake->tma_launches - launches == 1 ? fake->grid[0] : 0;
    aot_close(&e);
    return blocks;
}

/* A persistent twin whose A is read by the im2col mode (a convolution's
 * rows kernel, lower/wgim2col.c) walks its tiles on 132 blocks however
 * many there are (784 x 2: 11.9 a multiprocessor, past the 8 where a twin
 * whose trips the metadata does not name takes a block a tile), and where
 * the metadata names its trips, the rule weighs them as for a product. */
Test(tma, an_im2col_twin_walks_its_tiles, .timeout = 60)
{
    tilec_tma_meta m = cv_meta;
    m.maps[0].im2col = TILEC_TMA_IM2COL_OUT;
    m.maps[0].fr = m.maps[0].fs = TILEC_TMA_CONST | 8u; /* H = W = 8, a 3 x 3 filter, pad 1: OH = OW = 8 */
    m.persistent = 1;
    cr_expect_eq(cvp_blocks(&m, 400), 132, "800 tiles");
    cr_expect_eq(cvp_blocks(&m, 784), 132, "1568 tiles, the trips not named: walked");
    m.kbound = 7; /* K = 64 over 1: 64 trips, more than 32 */
    m.kper = 1;
    cr_expect_eq(cvp_blocks(&m, 784), 1568, "1568 tiles of 64 trips: a block a tile");
}

/* A persistent gather twin with its one-tile twin beside it
 * (tilec_tma_meta.persistent 5, lower/target.c): at most 2 tiles a
 * multiprocessor (264 on the fake's 132) run the one-tile twin cv_v0_tma_1
 * on the program's grid, more walk on the persistent one;
 * TILEC_TMA_PERSIST=1 always walks, 0 always takes the one-tile twin. */
Test(tma, a_gather_twin_takes_its_one_tile_twin_for_few_tiles, .timeout = 60)
{
    tilec_tma_meta m = cv_meta;
    m.maps[0].im2col = TILEC_TMA_IM2COL_OUT;
    m.maps[0].fr = m.maps[0].fs = TILEC_TMA_CONST | 8u;
    m.persistent = 5;
    static const struct {
        const char *mode;
        int n;
        unsigned blocks, y;
        int one;
    } cases[] = {{NULL, 132, 132, 2, 1}, {NULL, 133, 132, 1, 0}, {NULL, 49, 49, 2, 1}, {NULL, 784, 132, 1, 0},
                 {"1", 49, 98, 1, 0},    {"0", 784, 784, 2, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].mode)
            setenv("TILEC_TMA_PERSIST", cases[i].mode, 1);
        int one = fake->tma_one_launches;
        cr_expect_eq(cvp_blocks(&m, cases[i].n), cases[i].blocks, "%s n %d", cases[i].mode ? cases[i].mode : "-",
                     cases[i].n);
        cr_expect(fake->grid[1] == cases[i].y && fake->tma_one_launches - one == cases[i].one,
                  "n %d: grid y %u, one-tile launches %d", cases[i].n, fake->grid[1], fake->tma_one_launches - one);
        unsetenv("TILEC_TMA_PERSIST");
    }
}

/* An image the im2col mode cannot read launches the variant's own kernel
 * and makes no map: a base off 16 bytes, a pixel of 72 bytes (36
 * halves), a padding of 128 (a 4-D map's corners are 8-bit), a stride of
 * 9 (at most 8), a padded image smaller than the filter (no output
 * pixel), a negative padding. */
Test(tma, an_image_im2col_cannot_read_takes_the_variant, .timeout = 60)
{
    static const struct {
        uint64_t off;
        int n, h, w, c, stride, pad;
        const char *what;
    } bad[] = {{8, 1, 8, 8, 64, 1, 1, "a base off 16 bytes"},  {0, 1, 8, 8, 36, 1, 1, "a pixel of 72 bytes"},
               {0, 1, 8, 8, 64, 1, 128, "a padding of 128"},    {0, 1, 8, 8, 64, 9, 1, "a stride of 9"},
               {0, 1, 1, 8, 64, 1, 0, "1 row, 3 taps, no pad"}, {0, 1, 8, 8, 64, 1, -1, "a padding of -1"},
               {0, 0, 8, 8, 64, 1, 1, "no image"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int has = 0, encodes = fake->im2col_encodes;
        cr_expect(!cv_run(&cv_meta, bad[i].off, bad[i].n, bad[i].h, bad[i].w, bad[i].c, bad[i].stride, bad[i].pad,
                          &has),
                  "%s: the twin ran", bad[i].what);
        cr_expect(has);
        cr_expect_eq(fake->im2col_encodes, encodes, "%s: a map made", bad[i].what);
    }
    int has = 0;
    cr_expect(cv_run(&cv_meta, 0, 1, 1, 8, 64, 1, 1, &has), "1 row padded by 1: one row of output pixels");
    cr_expect(cv_run(&cv_meta, 0, 1, 8, 8, 64, 8, 127, &has), "stride 8, padding 127: the largest");
}

/* A driver without cuTensorMapEncodeIm2col leaves a twin with an im2col
 * map out (the variant alone); metadata the runtime cannot honour (an
 * im2col map batched, of kind 3, without its image count, or naming a
 * parameter past the ten; a tiled map with im2col words; kind 2 without
 * the output's width) is no twin. */
Test(tma, an_im2col_twin_needs_the_encoder_and_sound_metadata, .timeout = 60)
{
    int has = 0;
    setenv("FAKE_CUDA_MODE", "noim2col", 1);
    cr_expect(!cv_run(&cv_meta, 0, 1, 8, 8, 64, 1, 1, &has));
    cr_expect(!has, "no cuTensorMapEncodeIm2col: no twin");
    unsetenv("FAKE_CUDA_MODE");
    tilec_tma_meta m[7];
    for (int i = 0; i < 7; i++)
        m[i] = cv_meta;
    m[0].maps[0].batched = 1, m[0].maps[0].bgrid = 2, m[0].maps[0].bscale = 1;
    m[1].maps[0].im2col = 3;
    m[2].maps[0].rows = TILEC_TMA_NONE;
    m[3].maps[0].pad = 10;
    m[4].maps[0].ih = TILEC_TMA_NONE;
    m[5].maps[0].im2col = 0; /* a tiled map with the im2col words */
    m[6].maps[0].im2col = TILEC_TMA_IM2COL_OUT, m[6].maps[0].fs = TILEC_TMA_NONE;
    for (int i = 0; i < 7; i++) {
        cr_expect(!cv_run(&m[i], 0, 1, 8, 8, 64, 1, 1, &has), "metadata %d: the twin ran", i);
        cr_expect(!has, "metadata %d: a twin", i);
    }
}
