/* stress.h: many processes building (and, given a GPU, launching) a set of
 * modules against one cache directory; shared by tests/test_concurrency.c
 * (compile only, in `make test`) and tests/test_gpu_faults.c (with
 * launches, on the GPU machine).
 *
 * Each of `procs` processes runs `rounds` rounds. A round picks a module
 * (every process visits all of them, in its own order, so the same and
 * different modules are built at once), opens a fresh cache object on the
 * directory (so the bundle is read from disk, not memory), builds the module
 * and checks it: the build succeeds, its key is the module's, the cache saw
 * no corrupt file (a torn read would be one). With a GPU it launches the
 * module's kernel and checks every output element (y = x + the module's
 * constant), so a wrong kernel cannot pass. Every tenth round a process
 * first deletes the module's bundle, so writers publish the same key while
 * others read it. The parent then checks the final cache: one valid bundle
 * per module, no temporary file, and a warm build of each compiles nothing. */
#ifndef TILEC_TESTS_STRESS_H
#define TILEC_TESTS_STRESS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tilec/cache.h"
#include "tilec/program.h"
#include "tilec/runtime.h"

#define STRESS_MODULES 6
#define STRESS_N 4099 /* elements per launch: not a multiple of the tile */

typedef struct stress_totals {
    long rounds, builds_ok, cache_hits, compiles, corrupt, launches_ok, failures;
    char first_failure[512];
} stress_totals;

static inline void stress_source(int mod, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "/// module %d of the cache stress test\n"
             "kernel stress%d(x: *f32, y: *f32, n: i32) grid (cdiv(n, B)) hints { B = 256 }\n"
             "{ let i = pid(0) * B + range(B); store(y + i, load(x + i, i < n) + %d.0, i < n); }\n",
             mod, mod, mod + 1);
}

/* One process's rounds; the counts go to `out` as one line. 0 when every
 * round passed. */
static inline int stress_worker(const char *dir, int proc, int rounds, int gpu, FILE *out)
{
    stress_totals t;
    memset(&t, 0, sizeof t);
    char keys[STRESS_MODULES][65];
    memset(keys, 0, sizeof keys);
    tilec_rt *rt = NULL;
    uint64_t dx = 0, dy = 0;
    float *hx = NULL, *hy = NULL;
#define STRESS_FAIL(...)                                                                                               \
    do {                                                                                                               \
        if (!t.failures++)                                                                                             \
            snprintf(t.first_failure, sizeof t.first_failure, __VA_ARGS__);                                          \
    } while (0)
    if (gpu) {
        hx = malloc(STRESS_N * sizeof *hx);
        hy = malloc(STRESS_N * sizeof *hy);
        if (!hx || !hy || tilec_rt_open(0, &rt) != TILEC_RT_OK ||
            tilec_rt_malloc(rt, STRESS_N * sizeof(float), &dx) != TILEC_RT_OK ||
            tilec_rt_malloc(rt, STRESS_N * sizeof(float), &dy) != TILEC_RT_OK) {
            STRESS_FAIL("process %d: cannot open the GPU: %s", proc, rt ? tilec_rt_last_error(rt) : "no memory");
            rounds = 0;
        } else {
            for (int i = 0; i < STRESS_N; i++)
                hx[i] = (float)(i % 1000) * 0.5f;
            tilec_rt_memcpy_htod(rt, dx, hx, STRESS_N * sizeof(float));
        }
    }
    for (int r = 0; r < rounds; r++) {
        int mod = (proc * 5 + r * (1 + 2 * (proc % 3))) % STRESS_MODULES;
        t.rounds++;
        char src[512], path[512], name[32];
        stress_source(mod, src, sizeof src);
        snprintf(name, sizeof name, "stress%d", mod);
        if (r % 10 == proc % 10 && keys[mod][0]) {
            snprintf(path, sizeof path, "%s/%s.tilecbundle", dir, keys[mod]);
            unlink(path);
        }
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_cache *cache = NULL;
        tilec_program *p = NULL;
        if (!ctx || tilec_parse_string(ctx, "stress.tile", src, strlen(src), &m) != TILEC_OK ||
            tilec_cache_open(dir, &cache) != TILEC_RT_OK || !tilec_cache_dir(cache)) {
            STRESS_FAIL("process %d round %d: setup failed (%s)", proc, r,
                        cache ? tilec_cache_last_error(cache) : "parse");
        } else {
            tilec_build_options o = {.arch = gpu ? NULL : "sm_90", .threads = 1, .cache = cache};
            if (tilec_program_build(ctx, rt, m, &o, &p) != TILEC_OK) {
                const tilec_diag *d = tilec_ctx_diag(ctx, 0);
                STRESS_FAIL("process %d round %d: build of module %d failed: %s", proc, r, mod,
                            d ? d->message : "?");
            } else {
                t.builds_ok++;
                tilec_program_stats ps;
                tilec_program_get_stats(p, &ps);
                t.cache_hits += ps.cache_hit;
                t.compiles += ps.nvrtc_compiles;
                if (!keys[mod][0])
                    memcpy(keys[mod], ps.key, sizeof keys[mod]);
                else if (strcmp(keys[mod], ps.key) != 0)
                    STRESS_FAIL("process %d round %d: module %d changed key", proc, r, mod);
                tilec_cache_stats cs;
                tilec_cache_get_stats(cache, &cs);
                if (cs.corrupt) {
                    t.corrupt += (long)cs.corrupt;
                    STRESS_FAIL("process %d round %d: %s", proc, r, tilec_cache_last_error(cache));
                }
                if (gpu) {
                    tilec_rt_arg a[3] = {{.ptr = dx}, {.ptr = dy}, {.i32 = STRESS_N}};
                    tilec_rt_memset_d32(rt, dy, 0x7fc00000u, STRESS_N); /* NaN */
                    if (tilec_program_launch(p, name, 0, a, 3, NULL) != TILEC_RT_OK ||
                        tilec_rt_memcpy_dtoh(rt, hy, dy, STRESS_N * sizeof(float)) != TILEC_RT_OK) {
                        STRESS_FAIL("process %d round %d: launch of %s failed: %s", proc, r, name,
                                    tilec_rt_last_error(rt));
                    } else {
                        int bad = -1;
                        for (int i = 0; i < STRESS_N && bad < 0; i++)
                            if (hy[i] != hx[i] + (float)(mod + 1))
                                bad = i;
                        if (bad >= 0)
                            STRESS_FAIL("process %d round %d: %s gave y[%d] = %g, not %g", proc, r, name, bad,
                                        (double)hy[bad], (double)(hx[bad] + (float)(mod + 1)));
                        else
                            t.launches_ok++;
                    }
                }
            }
        }
        tilec_program_free(p);
        tilec_cache_close(cache);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
    if (rt) {
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, dy);
        tilec_rt_close(rt);
    }
    free(hx);
    free(hy);
    fprintf(out, "%ld %ld %ld %ld %ld %ld %ld %s\n", t.rounds, t.builds_ok, t.cache_hits, t.compiles, t.corrupt,
            t.launches_ok, t.failures, t.failures ? t.first_failure : "-");
    fflush(out);
    return t.failures ? 1 : 0;
#undef STRESS_FAIL
}

/* Fork procs workers on dir, wait for all, sum their lines into *t. 0 when
 * every process exited 0 and reported. */
static inline int stress_run(const char *dir, int procs, int rounds, int gpu, stress_totals *t)
{
    memset(t, 0, sizeof *t);
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    int bad = 0;
    for (int i = 0; i < procs; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            bad++;
            continue;
        }
        if (pid == 0) {
            close(fds[0]);
            FILE *out = fdopen(fds[1], "w");
            _exit(out ? stress_worker(dir, i, rounds, gpu, out) : 3);
        }
    }
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    char line[1024];
    int reported = 0;
    while (in && fgets(line, sizeof line, in)) {
        long v[7];
        int off = 0;
        if (sscanf(line, "%ld %ld %ld %ld %ld %ld %ld %n", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &off) != 7)
            continue;
        reported++;
        t->rounds += v[0];
        t->builds_ok += v[1];
        t->cache_hits += v[2];
        t->compiles += v[3];
        t->corrupt += v[4];
        t->launches_ok += v[5];
        if (v[6] && !t->failures) {
            snprintf(t->first_failure, sizeof t->first_failure, "%s", line + off);
            t->first_failure[strcspn(t->first_failure, "\n")] = 0;
        }
        t->failures += v[6];
    }
    if (in)
        fclose(in);
    int status;
    while (wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad++;
    if (reported != procs && !t->failures) {
        t->failures += procs - reported;
        snprintf(t->first_failure, sizeof t->first_failure, "%d of %d processes did not report", procs - reported,
                 procs);
    }
    return bad || t->failures ? 1 : 0;
}

/* The final cache: one valid bundle per module, no temporary file, warm
 * builds for arch (the rounds' own: "sm_90", or the device's) that compile
 * nothing. 0, or 1 with why. */
static inline int stress_check_cache(const char *dir, const char *arch, char *why, size_t cap)
{
    int bundles = 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(why, cap, "cannot read the cache directory");
        return 1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strstr(e->d_name, ".tmp.")) {
            snprintf(why, cap, "a temporary file stayed: %.200s", e->d_name);
            closedir(d);
            return 1;
        }
        if (strstr(e->d_name, ".tilecbundle"))
            bundles++;
    }
    closedir(d);
    for (int mod = 0; mod < STRESS_MODULES; mod++) {
        char src[512];
        stress_source(mod, src, sizeof src);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_cache *cache = NULL;
        tilec_program *prog = NULL;
        int ok = 0;
        tilec_program_stats ps;
        memset(&ps, 0, sizeof ps);
        if (ctx && tilec_parse_string(ctx, "stress.tile", src, strlen(src), &m) == TILEC_OK &&
            tilec_cache_open(dir, &cache) == TILEC_RT_OK) {
            tilec_build_options o = {.arch = arch, .threads = 1, .cache = cache};
            if (tilec_program_build(ctx, NULL, m, &o, &prog) == TILEC_OK) {
                tilec_program_get_stats(prog, &ps);
                tilec_cache_stats cs;
                tilec_cache_get_stats(cache, &cs);
                ok = ps.cache_hit && !ps.nvrtc_compiles && !cs.corrupt;
            }
        }
        tilec_program_free(prog);
        tilec_cache_close(cache);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        if (!ok) {
            snprintf(why, cap, "module %d: the final cache does not serve it (hit %d, %u compiles)", mod,
                     ps.cache_hit, ps.nvrtc_compiles);
            return 1;
        }
    }
    if (bundles != STRESS_MODULES) {
        snprintf(why, cap, "%d bundles in the final cache, not %d", bundles, STRESS_MODULES);
        return 1;
    }
    return 0;
}

#endif
