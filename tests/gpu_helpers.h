/* gpu_helpers.h: load a .tile kernel variant on the GPU for tests and
 * benchmarks: parse, lower, NVRTC, load, launch. */
#ifndef TILEC_TESTS_GPU_HELPERS_H
#define TILEC_TESTS_GPU_HELPERS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tilec/lower.h"
#include "tilec/program.h"
#include "tilec/runtime.h"
#include "tilec/tensor.h"
#include "tilec/tilec.h"

typedef struct gk {
    tilec_ctx *ctx;
    tilec_module *m;
    const tilec_kernel *k;
    tilec_kernel_code code;
    tilec_rt_module *mod;
    tilec_rt_kernel *kern;
    int variant;
    char err[4096];
} gk;


static inline void gk_free(gk *g)
{
    tilec_rt_module_unload(g->mod);
    tilec_kernel_code_free(&g->code);
    tilec_module_free(g->m);
    tilec_ctx_free(g->ctx);
    memset(g, 0, sizeof *g);
}

/* Returns 0, or -1 with g->err saying why. */
static inline int gk_load(tilec_rt *rt, const char *arch, const char *file, const char *kernel, int variant, gk *g)
{
    memset(g, 0, sizeof *g);
    g->ctx = tilec_ctx_new();
    g->variant = variant;
    if (tilec_parse_file(g->ctx, file, &g->m) != TILEC_OK) {
        snprintf(g->err, sizeof g->err, "%s does not parse", file);
        return -1;
    }
    g->k = tilec_module_find_kernel(g->m, kernel);
    if (!g->k || tilec_lower_kernel(g->ctx, g->m, g->k, variant, &g->code) != TILEC_OK) {
        const tilec_diag *d = tilec_ctx_diag(g->ctx, 0);
        snprintf(g->err, sizeof g->err, "%s: cannot lower %s: %s", file, kernel, d ? d->message : "no such kernel");
        return -1;
    }
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    if (tilec_nvrtc_compile(g->code.source, g->code.name, arch, NULL, 0, &cubin, &size, &log) != TILEC_RT_OK) {
        snprintf(g->err, sizeof g->err, "NVRTC failed for %s:\n%s", g->code.name, log ? log : "");
        free(log);
        return -1;
    }
    free(log);
    tilec_rt_status st = tilec_rt_module_load(rt, cubin, size, &g->mod);
    free(cubin);
    if (st != TILEC_RT_OK) {
        snprintf(g->err, sizeof g->err, "module load: %s", tilec_rt_last_error(rt));
        return -1;
    }
    tilec_rt_param_kind kinds[64];
    for (uint32_t i = 0; i < g->code.nparams && i < 64; i++)
        if (tilec_rt_param_kind_of(g->code.params[i], &kinds[i])) {
            snprintf(g->err, sizeof g->err, "unsupported parameter kind");
            return -1;
        }
    tilec_rt_launch_meta meta = {g->code.threads, g->code.smem_bytes, g->code.nparams, kinds};
    if (tilec_rt_kernel_get(g->mod, g->code.name, &meta, &g->kern) != TILEC_RT_OK) {
        snprintf(g->err, sizeof g->err, "kernel_get: %s", tilec_rt_last_error(rt));
        return -1;
    }
    return 0;
}

/* Launch with the grid computed from the scalar arguments. */
static inline tilec_rt_status gk_launch(gk *g, const tilec_rt_arg *args, void *stream)
{
    int64_t scal[64] = {0};
    for (uint32_t i = 0; i < g->code.nparams && i < 64; i++)
        scal[i] = g->code.params[i] == TILEC_ARG_I64 ? args[i].i64 : args[i].i32;
    uint32_t grid[3];
    if (tilec_kernel_grid(g->k, g->variant, scal, grid) != TILEC_OK)
        return TILEC_RT_INVALID_ARG;
    if (!grid[0] || !grid[1] || !grid[2])
        return TILEC_RT_OK;
    return tilec_rt_launch(g->kern, grid, args, stream);
}

/* ---- host data ---- */

static inline unsigned long long gk_seed(void)
{
    static unsigned long long s;
    if (!s) {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(&s, sizeof s, 1, f) != 1)
            s = 88172645463325252ULL;
        if (f)
            fclose(f);
        s |= 1;
    }
    return s;
}

/* uniform in [-1, 1), never all zeros */
static inline void fill_random(float *x, size_t n, unsigned long long *state)
{
    for (size_t i = 0; i < n; i++) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        x[i] = (float)((double)(*state >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
    }
}

static inline uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, x;
    if (exp == 0) {
        if (!mant)
            x = sign;
        else {
            exp = 127 - 15 + 1;
            while (!(mant & 0x400u)) {
                mant <<= 1;
                exp--;
            }
            x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31)
        x = sign | 0x7f800000u | (mant << 13);
    else
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* bf16: round to nearest even (finite values), and back */
static inline uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static inline float bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* a [M, K] @ b [K, N] in double precision (row-major; free() it) */
static inline double *gk_ref_matmul(const float *a, const float *b, int M, int N, int K)
{
    double *c = calloc((size_t)M * N + 1, sizeof *c);
    for (int i = 0; c && i < M; i++)
        for (int k = 0; k < K; k++) {
            double aik = a[(size_t)i * K + k];
            for (int j = 0; j < N; j++)
                c[(size_t)i * N + j] += aik * b[(size_t)k * N + j];
        }
    return c;
}

/* ||got - want|| / ||want||; NaN anywhere gives INFINITY. */
static inline double rel_l2(const float *got, const double *want, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]))
            return INFINITY;
        double d = (double)got[i] - want[i];
        num += d * d;
        den += want[i] * want[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

#ifdef CRITERION_H_
/* Assert a runtime call succeeded on handle rt, naming the call and why. */
#define GK_CHECK_RT(rt, call)                                                                           \
    do {                                                                                                \
        tilec_rt_status st_ = (call);                                                                   \
        cr_assert_eq(st_, TILEC_RT_OK, "%s: %s: %s", #call, tilec_rt_status_string(st_), tilec_rt_last_error(rt)); \
    } while (0)

/* A runtime call of a GPU test that must succeed. */
#define GPU_CHECK(rt, call)                                                                                    \
    do {                                                                                                       \
        tilec_rt_status st_ = (call);                                                                          \
        cr_assert_eq(st_, TILEC_RT_OK, "%s: %s: %s", #call, tilec_rt_status_string(st_), tilec_rt_last_error(rt)); \
    } while (0)

/* Criterion runs each test in a fresh worker process: a suite's .init
 * opens the device there, names its architecture ("sm_90") and seeds the
 * random inputs. */
static inline void gpu_open(tilec_rt **rt, char arch[16], unsigned long long *rng)
{
    tilec_rt_status st = tilec_rt_open(0, rt);
    cr_assert_eq(st, TILEC_RT_OK, "%s: %s", tilec_rt_status_string(st), tilec_rt_last_error(*rt));
    tilec_rt_device_props p;
    cr_assert_eq(tilec_rt_device_info(*rt, &p), TILEC_RT_OK, "%s", tilec_rt_last_error(*rt));
    snprintf(arch, 16, "sm_%d%d", p.sm_major, p.sm_minor);
    *rng = gk_seed();
    cr_log_info("%s (%s), seed %llu", p.name, arch, *rng);
}

/* n floats at device address dev within relative L2 error tol of want
 * (a NaN anywhere fails: outputs are poisoned before each launch). */
static inline void gpu_expect_close(tilec_rt *rt, uint64_t dev, const double *want, size_t n, double tol,
                                    const char *what)
{
    float *got = malloc((n ? n : 1) * sizeof *got);
    GPU_CHECK(rt, tilec_rt_synchronize(rt));
    GPU_CHECK(rt, tilec_rt_memcpy_dtoh(rt, got, dev, n * 4));
    double err = rel_l2(got, want, n);
    cr_expect_leq(err, tol, "%s: relative L2 error %g > %g", what, err, tol);
    free(got);
}

/* A variant's sm_90a twin as the lowering describes it
 * (tilec_kernel_code.tma): its __global__ name, persistent kind (tilec/tma.h)
 * and tensor maps. */
typedef struct gk_twin {
    char name[96];
    uint32_t persistent, nmaps;
} gk_twin;

/* Variant v of k's twin into *tw; the lowering must write one. */
static inline void gk_twin_of(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, uint32_t v, gk_twin *tw)
{
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, k, (int)v, &code), TILEC_OK, "%s variant %u", tilec_kernel_name(k), v);
    cr_assert_not_null(code.tma.name, "%s variant %u: the lowering wrote no sm_90a twin", tilec_kernel_name(k), v);
    snprintf(tw->name, sizeof tw->name, "%s", code.tma.name);
    tw->persistent = code.tma.persistent;
    tw->nmaps = code.tma.nmaps;
    tilec_kernel_code_free(&code);
}

/* What the runtime writes on stderr while it is captured (TILEC_LOGS=tma's
 * lines: docs/runtime.md): fd 2 into a temporary file, read back after
 * each launch, so that a test can name the kernel a launch ran. */
typedef struct tma_log {
    int saved;
    FILE *rd;
    char path[64];
} tma_log;

static inline void tma_log_start(tma_log *l)
{
    snprintf(l->path, sizeof l->path, "/tmp/tilec_tma_log_XXXXXX");
    int fd = mkstemp(l->path);
    cr_assert_geq(fd, 0, "mkstemp");
    fflush(stderr);
    l->saved = dup(2);
    cr_assert(l->saved >= 0 && dup2(fd, 2) >= 0, "cannot capture stderr");
    close(fd);
    l->rd = fopen(l->path, "r");
    cr_assert_not_null(l->rd);
}

/* Everything written since the last call (free() it). */
static inline char *tma_log_take(tma_log *l)
{
    fflush(stderr);
    clearerr(l->rd);
    size_t cap = 4096, n = 0, got;
    char *s = malloc(cap);
    while (s && (got = fread(s + n, 1, cap - 1 - n, l->rd)) > 0)
        if ((n += got) + 1 == cap)
            s = realloc(s, cap *= 2);
    cr_assert_not_null(s);
    s[n] = 0;
    return s;
}

static inline void tma_log_stop(tma_log *l)
{
    fflush(stderr);
    dup2(l->saved, 2);
    close(l->saved);
    fclose(l->rd);
    unlink(l->path);
}

/* In one launch's TILEC_LOGS=tma text: 1 where it launched twin tw itself
 * ("launched sm_90a twin NAME, grid ..."), 2 its one-tile twin ("NAME_1
 * (one tile a unit: WHY)"), 0 neither (the variant's own kernel: "launched
 * NAME_vV, not its twin: WHY", or no line). */
static inline int tma_log_launched(const char *text, const gk_twin *tw)
{
    char whole[sizeof tw->name + 64], one[sizeof tw->name + 64];
    int nl = (int)sizeof tw->name - 1; /* a name fills its array at most */
    snprintf(whole, sizeof whole, "launched sm_90a twin %.*s,", nl, tw->name);
    snprintf(one, sizeof one, "launched sm_90a twin %.*s_1 (one tile a unit: ", nl, tw->name);
    return strstr(text, whole) ? 1 : strstr(text, one) ? 2 : 0;
}

static inline void gpu_close(tilec_rt **rt)
{
    tilec_rt_close(*rt);
    *rt = NULL;
}

/* bytes of h in new device memory (4 spare bytes after them) */
static inline uint64_t gpu_upload(tilec_rt *rt, const void *h, size_t bytes)
{
    uint64_t d = 0;
    GPU_CHECK(rt, tilec_rt_malloc(rt, bytes + 4, &d));
    GPU_CHECK(rt, tilec_rt_memcpy_htod(rt, d, h, bytes));
    return d;
}

/* A row-major tensor of dtype dt at data: [a] when b is 0, else [a, b]. */
static inline tilec_tensor gpu_tensor(uint64_t data, tilec_dtype dt, int64_t a, int64_t b)
{
    tilec_tensor t = {.data = data, .dtype = dt, .rank = b ? 2u : 1u};
    t.sizes[0] = a;
    t.strides[0] = b ? b : 1;
    if (b) {
        t.sizes[1] = b;
        t.strides[1] = 1;
    }
    return t;
}

/* main() of a GPU suite: one SKIP line and success where there is no GPU,
 * otherwise the device on one line and the Criterion tests. */
static inline int gpu_suite_main(int argc, char *argv[], const char *what)
{
    tilec_rt *probe = NULL;
    tilec_rt_status st = tilec_rt_open(0, &probe);
    if (st != TILEC_RT_OK) {
        printf("SKIP: %s: %s\n", what, tilec_rt_status_string(st));
        tilec_rt_close(probe); /* a failed open still hands back a handle */
        return 0;
    }
    tilec_rt_device_props p;
    if (tilec_rt_device_info(probe, &p) == TILEC_RT_OK)
        printf("%s on %s (sm_%d%d)\n", what, p.name, p.sm_major, p.sm_minor);
    tilec_rt_close(probe);
    struct criterion_test_set *tests = criterion_initialize();
    int ok = 1;
    if (criterion_handle_args(argc, argv, true))
        ok = criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return ok ? 0 : 1;
}
#endif

#endif
