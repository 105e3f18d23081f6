/* multikernel.c: a kernel with variants, launched with the variant that is
 * fastest for the shape at hand. The first launch with a new shape key (the
 * kernel's integer scalar arguments) times every variant with device events
 * on scratch copies of the buffers the kernel writes (the bitmask that
 * lowering's analysis gives, tilec_kernel_written_params), so the visible
 * outputs are written once, by the chosen variant. The choice is kept in
 * memory (uthash, by kernel and shape key) and, with a cache directory, in a
 * small file written atomically; later launches cost one hash lookup.
 *
 * Each timed launch starts with the device's L2 cleared (a write of a
 * flush buffer of twice its size, not timed), as the benchmark times
 * (bench/harness/README.md): a kernel whose inputs fit in L2 would
 * otherwise be timed reading what the launch before left there, and the
 * ranking of such timings is not the ranking of calls in a program
 * (docs/tuning.md, "What is timed when").
 *
 * TILEC_MULTI_KERNEL=k forces variant k; TILEC_DISABLE_MULTI_KERNEL_CACHE=1
 * skips the files; TILEC_LOGS=multi_kernel logs every choice with its
 * timings. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/choice_entry.h"
#include "runtime/program_internal.h"
#include "runtime/rt_internal.h"
#include "tilec/cache.h"
#include "tilec/log.h"
#include "tilec/types.h"

enum { MK_ROUNDS = 15 };
#define MK_PRUNE 2.0f
/* The flush buffer is this many times the L2 (the benchmark's is 512 MiB,
 * over 2x an H100's 50 MiB): a write of one L2's worth leaves lines of the
 * inputs where the cache's replacement did not reach. */
enum { MK_FLUSH_L2S = 2 };

/* The choice's key (choice_entry.h): the program's bundle key (every
 * variant's source), the kernel's name and variant count, the device
 * model and driver, and the shape key; 40 hex digits. */
static void choice_hash(const tilec_program *p, const char *kernel, uint32_t nv, const int64_t *key, uint32_t nkey,
                        char hash[41])
{
    tilec_rt_device_props dev;
    memset(&dev, 0, sizeof dev);
    (void)tilec_rt_device_info(p->rt, &dev); /* no device: no launch to choose for either */
    tilec_hasher h;
    tilec_hasher_init(&h);
    tilec_hasher_update_str(&h, "tilec multi-kernel choice 2");
    tilec_hasher_update_str(&h, p->st.key);
    tilec_hasher_update_str(&h, kernel);
    tilec_hasher_update(&h, &nv, sizeof nv);
    tilec_hasher_update_str(&h, dev.name);
    tilec_hasher_update(&h, &dev.driver_version, sizeof dev.driver_version);
    tilec_hasher_update(&h, &nkey, sizeof nkey);
    tilec_hasher_update(&h, key, nkey * sizeof *key);
    char hex[65];
    tilec_hasher_final(&h, hex);
    snprintf(hash, 41, "%.40s", hex);
}

/* The index of kernel name's variant 0, or p->n (name NULL too). */
static uint32_t kernel_first(const tilec_program *p, const char *name)
{
    uint32_t first = 0;
    while (name && first < p->n && strcmp(p->ks[first].d.kernel, name))
        first++;
    return name ? first : p->n;
}

static int int_kind(tilec_rt_param_kind kd)
{
    return kd == TILEC_RT_PARAM_I32 || kd == TILEC_RT_PARAM_U32 || kd == TILEC_RT_PARAM_I64 ||
           kd == TILEC_RT_PARAM_U64;
}

/* "tilec CHANNEL: KERNEL shape (16, 8192, 8192)": the shape key's
 * scalars, for the log. */
static void log_shape(const char *channel, const char *kernel, const int64_t *key, uint32_t nkey)
{
    fprintf(stderr, "tilec %s: %s shape (", channel, kernel);
    for (uint32_t i = 0; i < nkey; i++)
        fprintf(stderr, "%s%lld", i ? ", " : "", (long long)key[i]);
    fprintf(stderr, ")");
}

/* How a shape's variant was had, for the log. */
typedef enum { MK_TIMED, MK_STORED, MK_UNTIMED, MK_AHEAD } mk_how;

/* One choice on the channels that report it: multi_kernel (the variant
 * and each time) and tune (docs/tuning.md: the variants timed, each time,
 * and the winner). ms: nv times when timed (-1: it did not launch). */
static void log_choice(const char *kernel, const int64_t *key, uint32_t nkey, int v, mk_how how, const char *from,
                       const double *ms, uint32_t nv, int flushed)
{
    const char *l2 = flushed ? "L2 cleared before each" : "L2 not cleared: no flush buffer";
    char why[160] = "";
    if (how == MK_STORED)
        snprintf(why, sizeof why, "choice from cache (%s), not timed", from ? from : "disk");
    else if (how == MK_UNTIMED)
        snprintf(why, sizeof why, "not timed: no memory for scratch copies of its outputs");
    else if (how == MK_AHEAD)
        snprintf(why, sizeof why, "chosen ahead of time, not timed");
    if (tilec_log_enabled("multi_kernel")) {
        log_shape("multi_kernel", kernel, key, nkey);
        fprintf(stderr, ": variant %d", v);
        if (how == MK_TIMED) {
            fprintf(stderr, " of");
            for (uint32_t i = 0; i < nv; i++)
                fprintf(stderr, " %.4f", ms[i]);
            fprintf(stderr, " ms (%s)\n", l2);
        } else {
            fprintf(stderr, " (%s)\n", why);
        }
    }
    if (tilec_log_enabled("tune")) {
        log_shape("tune", kernel, key, nkey);
        if (how == MK_TIMED) {
            fprintf(stderr, ": timed %u variants (", nv);
            for (uint32_t i = 0; i < nv; i++) {
                if (ms[i] < 0)
                    fprintf(stderr, "%s%u: did not launch", i ? ", " : "", i);
                else
                    fprintf(stderr, "%s%u: %.4f ms", i ? ", " : "", i, ms[i]);
            }
            fprintf(stderr, "; %s); winner variant %d\n", l2, v);
        } else {
            fprintf(stderr, ": winner variant %d (%s)\n", v, why);
        }
    }
}

tilec_rt_status tilec_program_use_choices(tilec_program *p, const tilec_aot_choice *cs, uint32_t n)
{
    if (!p || (n && !cs))
        return TILEC_RT_INVALID_ARG;
    tilec_rt_device_props dev;
    memset(&dev, 0, sizeof dev);
    tilec_rt_status st = tilec_rt_device_info(p->rt, &dev);
    if (st != TILEC_RT_OK)
        return st;
    /* every choice checked before one is taken */
    for (uint32_t i = 0; i < n; i++) {
        const tilec_aot_choice *c = &cs[i];
        uint32_t first = kernel_first(p, c->kernel), nint = 0;
        if (!c->device || first == p->n)
            return rt_fail(p->rt, TILEC_RT_INVALID_ARG, "choice %u: %s%s, which the program does not have", i,
                           c->kernel ? "kernel " : "no kernel", c->kernel ? c->kernel : "or no device");
        const pkernel *k = &p->ks[first];
        for (uint32_t a = 0; a < k->d.nparams; a++)
            nint += (uint32_t)int_kind(k->d.kinds[a]);
        if (c->variant < 0 || (uint32_t)c->variant >= k->d.nvariants)
            return rt_fail(p->rt, TILEC_RT_INVALID_ARG, "choice %u: kernel %s has no variant %d (it has %u)", i,
                           c->kernel, c->variant, k->d.nvariants);
        if (c->nkey != nint || (nint && !c->key))
            return rt_fail(p->rt, TILEC_RT_INVALID_ARG,
                           "choice %u: kernel %s's shape key is its %u integer arguments, not %u", i, c->kernel, nint,
                           c->nkey);
    }
    for (uint32_t i = 0; i < n; i++) {
        const tilec_aot_choice *c = &cs[i];
        if (strcmp(c->device, dev.name))
            continue; /* tuned on another device model: its shapes are timed here */
        mk_choice *m = calloc(1, sizeof *m);
        if (!m)
            return TILEC_RT_NOMEM;
        m->key[0] = kernel_first(p, c->kernel);
        if (c->nkey)
            memcpy(m->key + 1, c->key, c->nkey * sizeof *c->key);
        m->variant = c->variant;
        m->ahead = 1;
        size_t keylen = (c->nkey + 1) * sizeof m->key[0];
        mk_choice *other = NULL;
        pthread_mutex_lock(&p->mk_mu);
        HASH_FIND(hh, p->choices, m->key, keylen, other);
        if (!other)
            HASH_ADD(hh, p->choices, key, keylen, m);
        pthread_mutex_unlock(&p->mk_mu);
        if (other)
            free(m); /* the first for a shape stands */
    }
    return TILEC_RT_OK;
}

static const pkernel *variant_of(const tilec_program *p, uint32_t first, int v) { return &p->ks[first + (uint32_t)v]; }

/* Time every variant on scratch copies of the written buffers. -1: no
 * variant could run; -2: no scratch copy could be made (no timing). */
static int choose(tilec_program *p, uint32_t first, uint32_t nv, const tilec_rt_arg *args, uint32_t nargs,
                  void *stream, double *ms, int *flushed)
{
    if (nv > TILEC_MAX_VARIANTS) /* the checker refuses more; before any allocation */
        return -1;
    tilec_rt *rt = p->rt;
    const char *kname = p->ks[first].d.kernel;
    /* the lowering's analysis, at build or (ahead of time) at emit time */
    uint64_t written = p->ks[first].d.written;
    tilec_rt_arg scratch[64];
    uint64_t bases[64] = {0};
    memcpy(scratch, args, nargs * sizeof *args);
    for (uint32_t i = 0; i < nargs; i++) {
        if (p->ks[first].d.kinds[i] != TILEC_RT_PARAM_POINTER || !(written >> i & 1) || !args[i].ptr)
            continue;
        uint64_t base;
        size_t size;
        if (tilec_rt_mem_range(rt, args[i].ptr, &base, &size) != TILEC_RT_OK ||
            tilec_rt_malloc(rt, size, &bases[i]) != TILEC_RT_OK) {
            /* timing on the real buffer would run the kernel ~16 extra times
             * on it: wrong for kernels that read what they write
             * (atomic_add, in-place updates). Do not time at all. */
            for (uint32_t j = 0; j < i; j++)
                if (bases[j])
                    tilec_rt_free(rt, bases[j]);
            return -2;
        }
        tilec_rt_memcpy_dtod(rt, bases[i], base, size);
        scratch[i].ptr = bases[i] + (args[i].ptr - base);
    }
    /* the flush buffer: none when the device says no L2 or there is no
     * memory for it (then timed with what L2 holds, and the log says so) */
    tilec_rt_device_props dev;
    memset(&dev, 0, sizeof dev);
    uint64_t flush = 0;
    size_t flush_words = 0;
    if (tilec_rt_device_info(rt, &dev) == TILEC_RT_OK && dev.l2_bytes > 0 &&
        tilec_rt_malloc(rt, (size_t)dev.l2_bytes * MK_FLUSH_L2S, &flush) == TILEC_RT_OK)
        flush_words = (size_t)dev.l2_bytes * MK_FLUSH_L2S / 4;
    else
        flush = 0;
    *flushed = flush != 0;
    void *ev[2] = {NULL, NULL};
    tilec_rt_event_create(rt, &ev[0]);
    tilec_rt_event_create(rt, &ev[1]);
    /* the rounds go round the variants (variant 0, 1, ..., then again), so
     * a clock that drifts while the GPU warms up weighs on every variant
     * alike; a variant MK_PRUNE times slower than the fastest in the first
     * round is timed no further (it cannot win by noise, and a slow tile
     * shape at a large size would cost the first launch seconds) */
    float tv[TILEC_MAX_VARIANTS][MK_ROUNDS];
    int alive[TILEC_MAX_VARIANTS];
    for (uint32_t v = 0; v < nv; v++) {
        ms[v] = -1;
        /* warm-up; a variant that cannot launch is never chosen */
        alive[v] = tilec_program_launch(p, kname, variant_of(p, first, (int)v)->d.variant, scratch, nargs, stream) ==
                   TILEC_RT_OK;
    }
    for (int r = 0; r < MK_ROUNDS; r++) {
        float fastest = -1;
        for (uint32_t v = 0; v < nv; v++) {
            if (!alive[v])
                continue;
            float x = 0;
            /* a value of its own each time: no write is one a cache could skip */
            if (flush && tilec_rt_memset_d32_async(rt, flush, (unsigned)(r * TILEC_MAX_VARIANTS + v + 1), flush_words,
                                                   stream) != TILEC_RT_OK) {
                tilec_rt_free(rt, flush);
                flush = 0;
                *flushed = 0;
            }
            alive[v] = tilec_rt_event_record(rt, ev[0], stream) == TILEC_RT_OK &&
                       tilec_program_launch(p, kname, variant_of(p, first, (int)v)->d.variant, scratch, nargs,
                                            stream) == TILEC_RT_OK &&
                       tilec_rt_event_record(rt, ev[1], stream) == TILEC_RT_OK &&
                       tilec_rt_event_synchronize(rt, ev[1]) == TILEC_RT_OK &&
                       tilec_rt_event_elapsed_ms(rt, ev[0], ev[1], &x) == TILEC_RT_OK;
            tv[v][r] = x;
            if (alive[v] && (fastest < 0 || x < fastest))
                fastest = x;
        }
        if (r == 0)
            for (uint32_t v = 0; v < nv; v++)
                if (alive[v] && tv[v][0] > MK_PRUNE * fastest) {
                    ms[v] = (double)tv[v][0]; /* its one round: never the best */
                    alive[v] = 0;
                }
    }
    int best = 0;
    for (uint32_t v = 0; v < nv; v++) {
        if (!alive[v])
            continue;
        float *x = tv[v];
        for (int a = 0; a < MK_ROUNDS; a++) /* median of the rounds */
            for (int b = a + 1; b < MK_ROUNDS; b++)
                if (x[b] < x[a]) {
                    float y = x[a];
                    x[a] = x[b];
                    x[b] = y;
                }
        ms[v] = (double)x[MK_ROUNDS / 2];
        if (!alive[best] || ms[v] < ms[best])
            best = (int)v;
    }
    tilec_rt_event_destroy(rt, ev[0]);
    tilec_rt_event_destroy(rt, ev[1]);
    if (flush)
        tilec_rt_free(rt, flush);
    for (uint32_t i = 0; i < nargs; i++)
        if (bases[i])
            tilec_rt_free(rt, bases[i]);
    return alive[best] ? best : -1;
}

tilec_rt_status tilec_program_launch_best(tilec_program *p, const char *name, const tilec_rt_arg *args,
                                          uint32_t nargs, void *stream, int *chosen)
{
    if (!p || !name || !p->rt || nargs > 64)
        return TILEC_RT_INVALID_ARG;
    uint32_t first = kernel_first(p, name);
    if (first == p->n)
        return TILEC_RT_NOT_FOUND;
    return rt_program_launch_best_at(p, first, args, nargs, stream, NULL, chosen);
}

tilec_rt_status rt_program_launch_best_at(tilec_program *p, uint32_t first, const tilec_rt_arg *args, uint32_t nargs,
                                          void *stream, const void *ws_owner, int *chosen)
{
    const char *name = p->ks[first].d.kernel;
    uint32_t nv = p->ks[first].d.nvariants;
    if (nargs != p->ks[first].d.nparams || first + nv > p->n)
        return TILEC_RT_INVALID_ARG;
    if (nv > 1 && tilec_rt_list_cap_of(p->ks[first].d.kinds, nargs)) /* the checker refuses it; a table may not */
        return rt_fail(p->rt, TILEC_RT_INVALID_ARG,
                       "kernel %s takes tensor lists and has %u variants: the runtime times variants on copies of "
                       "the buffers they write, which it does not make for tensor lists", name, nv);
    if (p->mk_forced == -2)
        return rt_fail(p->rt, TILEC_RT_INVALID_ARG,
                       "TILEC_MULTI_KERNEL is not a variant number (when the program was built)");
    if (p->mk_forced >= 0 && (uint32_t)p->mk_forced >= nv)
        return rt_fail(p->rt, TILEC_RT_INVALID_ARG, "TILEC_MULTI_KERNEL=%d, but kernel %s has %u variant%s (0 to %u)",
                       p->mk_forced, name, nv, nv == 1 ? "" : "s", nv - 1);
    int v = 0;
    if (p->mk_forced >= 0) {
        v = p->mk_forced;
    } else if (nv > 1) {
        /* the shape key: kernel index, then every integer scalar argument */
        mk_choice probe;
        uint32_t nkey = 1;
        probe.key[0] = first;
        for (uint32_t i = 0; i < nargs; i++) {
            tilec_rt_param_kind kd = p->ks[first].d.kinds[i];
            if (kd == TILEC_RT_PARAM_I32 || kd == TILEC_RT_PARAM_U32)
                probe.key[nkey++] = kd == TILEC_RT_PARAM_I32 ? (int64_t)args[i].i32 : (int64_t)args[i].u32;
            else if (int_kind(kd))
                probe.key[nkey++] = args[i].i64;
        }
        mk_choice *c = NULL;
        int ahead = 0;
        pthread_mutex_lock(&p->mk_mu);
        size_t keylen = nkey * sizeof probe.key[0]; /* fixed per kernel: its parameters */
        HASH_FIND(hh, p->choices, probe.key, keylen, c);
        if (c) {
            v = c->variant;
            ahead = c->ahead == 1; /* its first launch: said once */
            if (ahead)
                c->ahead = 2;
        }
        pthread_mutex_unlock(&p->mk_mu);
        if (ahead)
            log_choice(name, probe.key + 1, nkey - 1, v, MK_AHEAD, NULL, NULL, 0, 0);
        if (!c) {
            /* A new shape: one thread times it while the others wait, then
             * they find its choice (timing at once would also skew it). */
            pthread_mutex_lock(&p->mk_tune);
            pthread_mutex_lock(&p->mk_mu);
            HASH_FIND(hh, p->choices, probe.key, keylen, c);
            if (c)
                v = c->variant;
            pthread_mutex_unlock(&p->mk_mu);
            if (c) /* chosen by the thread this one waited for */
                pthread_mutex_unlock(&p->mk_tune);
        }
        if (!c) { /* this thread holds mk_tune: time the shape */
            const char *off = getenv("TILEC_DISABLE_MULTI_KERNEL_CACHE");
            int stored = p->cache_dir[0] && !(off && !strcmp(off, "1"));
            char hash[41], refused[PATH_MAX + 256] = "";
            const char *from = NULL;
            v = -1;
            if (stored) {
                choice_hash(p, name, nv, probe.key + 1, nkey - 1, hash);
                v = choice_get(&p->mk_store, hash, nv, &from, refused, sizeof refused);
            }
            double ms[TILEC_MAX_VARIANTS];
            int timed = v < 0, untimed = 0, flushed = 0;
            if (timed)
                v = choose(p, first, nv, args, nargs, stream, ms, &flushed);
            if (v == -2) { /* no scratch memory: variant 0, for this process only */
                v = 0;
                timed = 0;
                untimed = 1;
            }
            if (v < 0) {
                pthread_mutex_unlock(&p->mk_tune);
                return TILEC_RT_LAUNCH_ERROR; /* no variant could run: the launch below would say why */
            }
            if (timed)
                atomic_fetch_add(&p->mk_timed, 1);
            else if (!untimed)
                atomic_fetch_add(&p->mk_stored, 1);
            if (refused[0] && tilec_log_enabled("multi_kernel"))
                fprintf(stderr, "tilec multi_kernel: refused the stored choice %s; timing again\n", refused);
            log_choice(name, probe.key + 1, nkey - 1, v, timed ? MK_TIMED : untimed ? MK_UNTIMED : MK_STORED, from,
                       ms, nv, flushed);
            if (timed && stored)
                choice_put(&p->mk_store, hash, v);
            c = calloc(1, sizeof *c);
            if (c) {
                memcpy(c->key, probe.key, sizeof c->key);
                c->variant = v;
                pthread_mutex_lock(&p->mk_mu);
                mk_choice *other = NULL;
                HASH_FIND(hh, p->choices, c->key, keylen, other);
                if (!other)
                    HASH_ADD(hh, p->choices, key, keylen, c);
                else
                    free(c);
                pthread_mutex_unlock(&p->mk_mu);
            }
            pthread_mutex_unlock(&p->mk_tune);
        }
    }
    if (chosen)
        *chosen = v;
    if (!p->ks[first + (uint32_t)v].kern)
        return TILEC_RT_INVALID_ARG;
    return rt_program_launch_at(p, first + (uint32_t)v, args, stream, ws_owner);
}
