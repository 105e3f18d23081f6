/* program.c: a program's kernels as the runtime holds them: made from
 * kernel metadata (assemble.h), their CUBINs loaded and kernels resolved
 * once, found by name and variant, launched statically with the grid their
 * metadata computes; the program's lifetime, multi-kernel state included. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/program_internal.h"
#include "runtime/rt_internal.h"

static int env_int(const char *name, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 1 << 20)
        return -1;
    *out = (int)x;
    return 1;
}

/* TILEC_MULTI_KERNEL, read once when the program is made: -1 unset, -2 invalid. */
static int mk_forced_from_env(void)
{
    int v;
    int r = env_int("TILEC_MULTI_KERNEL", &v);
    return r < 0 ? -2 : r == 0 ? -1 : v;
}

tilec_rt_status rt_program_new(tilec_rt *rt, uint32_t n, const char *cache_dir, tilec_program **out)
{
    *out = NULL;
    tilec_program *p = calloc(1, sizeof *p);
    if (!p)
        return TILEC_RT_NOMEM;
    p->rt = rt;
    pthread_mutex_init(&p->mk_mu, NULL);
    pthread_mutex_init(&p->mk_tune, NULL);
    pthread_mutex_init(&p->ws_mu, NULL);
    p->mk_forced = mk_forced_from_env();
    const char *nt = getenv("TILEC_DISABLE_TMA");
    p->no_tma = nt && !strcmp(nt, "1");
    if (cache_dir)
        snprintf(p->cache_dir, sizeof p->cache_dir, "%s", cache_dir);
    p->mk_store.dir = p->cache_dir;
    p->n = n;
    p->st.kernels = n;
    p->ks = calloc(n ? n : 1, sizeof *p->ks);
    if (!p->ks) {
        tilec_program_free(p);
        return TILEC_RT_NOMEM;
    }
    *out = p;
    return TILEC_RT_OK;
}

tilec_rt_status rt_program_set(tilec_program *p, uint32_t i, const rt_kernel_desc *rd)
{
    pkernel *pk = &p->ks[i];
    const tilec_kernel_desc *d = &rd->d;
    if (d->nparams > TILEC_RT_MAX_PARAMS || (d->split_k > 1 && (d->nparams + 2 > TILEC_RT_MAX_PARAMS || !d->split_bytes)))
        return TILEC_RT_INVALID_ARG;
    pk->d = *d;
    pk->d.image = NULL;
    pk->d.size = 0;
    pk->d.tma = NULL;
    pk->grid = rd->grid;
    pk->grid_data = rd->grid_data;
    if (d->nparams && d->kinds)
        memcpy(pk->kinds, d->kinds, d->nparams * sizeof pk->kinds[0]);
    pk->d.kinds = pk->kinds;
    if (d->split_k > 1)
        pk->kinds[d->nparams] = pk->kinds[d->nparams + 1] = TILEC_RT_PARAM_POINTER;
    else
        pk->d.split_k = pk->d.split_bytes = 0;
    pk->d.name = pk->name_own = strdup(d->name);
    if (!pk->name_own)
        return TILEC_RT_NOMEM;
    return rt_tma_set(pk, rd->tma);
}

tilec_rt_status rt_program_load_module(tilec_program *p, uint32_t i, const void *image, size_t size)
{
    return tilec_rt_module_load(p->rt, image, size, &p->ks[i].mod);
}

tilec_rt_status rt_program_resolve(tilec_program *p, uint32_t i)
{
    pkernel *pk = &p->ks[i];
    tilec_rt_launch_meta meta = {pk->d.threads, pk->d.smem_bytes, pk->d.nparams + (pk->d.split_k ? 2u : 0u), pk->d.kinds};
    tilec_rt_status st = tilec_rt_kernel_get(pk->mod, pk->d.name, &meta, &pk->kern);
    if (st == TILEC_RT_OK)
        rt_tma_resolve(p->rt, pk, p->no_tma);
    return st;
}

tilec_program_stats *rt_program_stats(tilec_program *p) { return &p->st; }

void tilec_program_free(tilec_program *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; p->ks && i < p->n; i++) {
        tilec_rt_module_unload(p->ks[i].mod);
        free(p->ks[i].name_own);
        rt_tma_free(&p->ks[i]);
    }
    free(p->ks);
    mk_choice *c, *tmp;
    HASH_ITER(hh, p->choices, c, tmp)
    {
        HASH_DEL(p->choices, c);
        free(c);
    }
    for (uint32_t i = 0; i < p->nws; i++) {
        tilec_rt_free(p->rt, p->ws[i].part);
        tilec_rt_free(p->rt, p->ws[i].cnt);
    }
    for (uint32_t i = 0; i < p->nretired; i++)
        tilec_rt_free(p->rt, p->retired[i]);
    free(p->ws);
    free(p->retired);
    pthread_mutex_destroy(&p->ws_mu);
    choice_store_close(&p->mk_store);
    pthread_mutex_destroy(&p->mk_mu);
    pthread_mutex_destroy(&p->mk_tune);
    free(p);
}

int rt_program_find(const tilec_program *p, const char *name, int variant)
{
    for (uint32_t i = 0; i < p->n; i++)
        if (p->ks[i].d.variant == variant && !strcmp(p->ks[i].d.kernel, name))
            return (int)i;
    return -1;
}

static const pkernel *find(const tilec_program *p, const char *name, int variant)
{
    int i = rt_program_find(p, name, variant);
    return i < 0 ? NULL : &p->ks[i];
}

const tilec_rt_kernel *tilec_program_kernel(const tilec_program *p, const char *name, int variant)
{
    const pkernel *pk = p && name ? find(p, name, variant) : NULL;
    return pk ? pk->kern : NULL;
}

int tilec_program_has_twin(const tilec_program *p, const char *name, int variant)
{
    const pkernel *pk = p && name ? find(p, name, variant) : NULL;
    return pk && rt_tma_ready(pk);
}

static size_t grow_to(size_t need)
{
    size_t n = 1 << 16;
    while (n < need && n < SIZE_MAX / 2)
        n *= 2;
    return n < need ? need : n;
}

static int retire(tilec_program *p, uint64_t ptr)
{
    if (!ptr)
        return 0;
    uint64_t *r = realloc(p->retired, (p->nretired + 1) * sizeof *r);
    if (!r)
        return -1;
    p->retired = r;
    p->retired[p->nretired++] = ptr;
    return 0;
}

/* One buffer of w at least `need` bytes: a new one (zeroed on the stream
 * when `zero`) replaces a smaller one, which stays allocated until the
 * program is freed (a launch already enqueued may still use it). */
static tilec_rt_status ws_grow(tilec_program *p, void *stream, uint64_t *ptr, size_t *bytes, size_t need, int zero)
{
    if (*bytes >= need)
        return TILEC_RT_OK;
    size_t n = grow_to(need);
    uint64_t d = 0;
    tilec_rt_status st = tilec_rt_malloc(p->rt, n, &d);
    if (st != TILEC_RT_OK)
        return st;
    if (zero)
        st = tilec_rt_fill_async(p->rt, d, 0, 4, n / 4, stream);
    if (st == TILEC_RT_OK && retire(p, *ptr) != 0)
        st = TILEC_RT_NOMEM;
    if (st != TILEC_RT_OK) {
        tilec_rt_free(p->rt, d);
        return st;
    }
    *ptr = d;
    *bytes = n;
    return TILEC_RT_OK;
}

/* The entry of `key` (a stream, or an owner when `owned`), made when
 * missing (ws_mu held); NULL: no memory. */
static rt_split_ws *ws_of(tilec_program *p, const void *key, int owned)
{
    for (uint32_t i = 0; i < p->nws; i++)
        if (p->ws[i].key == key && p->ws[i].owned == owned)
            return &p->ws[i];
    rt_split_ws *v = realloc(p->ws, (p->nws + 1) * sizeof *v);
    if (!v)
        return NULL;
    p->ws = v;
    rt_split_ws *w = &p->ws[p->nws++];
    memset(w, 0, sizeof *w);
    w->key = key;
    w->owned = owned;
    return w;
}

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* The split-K scratch for a launch of nblocks blocks of pk on stream:
 * nblocks partials of split_bytes, nblocks / split_k counters. Kept per
 * stream, so launches on two streams never share one; launches on one
 * stream run in order, and each leaves the counters it used at zero. With
 * an owner, the owner's pair, never grown here (a capture may not
 * allocate): too small, *skip is set and the need noted for
 * rt_program_split_fit. */
static tilec_rt_status split_ws(tilec_program *p, const pkernel *pk, uint64_t nblocks, void *stream,
                                const void *owner, uint64_t *part, uint64_t *cnt, int *skip)
{
    if (nblocks > SIZE_MAX / 2 / pk->d.split_bytes)
        return TILEC_RT_INVALID_ARG;
    size_t need_part = (size_t)nblocks * pk->d.split_bytes, need_cnt = (size_t)(nblocks / pk->d.split_k + 1) * 4;
    pthread_mutex_lock(&p->ws_mu);
    rt_split_ws *w = owner ? ws_of(p, owner, 1) : ws_of(p, stream, 0);
    tilec_rt_status st = w ? TILEC_RT_OK : TILEC_RT_NOMEM;
    if (st == TILEC_RT_OK && owner && (w->part_bytes < need_part || w->cnt_bytes < need_cnt)) {
        w->want_part = max_size(max_size(w->want_part, need_part), w->part_bytes);
        w->want_cnt = max_size(max_size(w->want_cnt, need_cnt), w->cnt_bytes);
        *skip = 1;
    } else if (st == TILEC_RT_OK) {
        st = ws_grow(p, stream, &w->part, &w->part_bytes, need_part, 0);
        if (st == TILEC_RT_OK)
            st = ws_grow(p, stream, &w->cnt, &w->cnt_bytes, need_cnt, 1);
    }
    if (st == TILEC_RT_OK) {
        *part = w->part;
        *cnt = w->cnt;
    }
    pthread_mutex_unlock(&p->ws_mu);
    return st;
}

/* The entry of owner, or NULL (ws_mu held). */
static rt_split_ws *owned_ws(tilec_program *p, const void *owner)
{
    for (uint32_t i = 0; i < p->nws; i++)
        if (p->ws[i].key == owner && p->ws[i].owned)
            return &p->ws[i];
    return NULL;
}

int rt_program_split_short(tilec_program *p, const void *owner)
{
    pthread_mutex_lock(&p->ws_mu);
    const rt_split_ws *w = owned_ws(p, owner);
    int s = w && (w->want_part > w->part_bytes || w->want_cnt > w->cnt_bytes);
    pthread_mutex_unlock(&p->ws_mu);
    return s;
}

tilec_rt_status rt_program_split_fit(tilec_program *p, const void *owner, void *stream)
{
    pthread_mutex_lock(&p->ws_mu);
    rt_split_ws *w = owned_ws(p, owner);
    tilec_rt_status st = TILEC_RT_OK;
    int grown = w && (w->want_part > w->part_bytes || w->want_cnt > w->cnt_bytes);
    if (grown) {
        st = ws_grow(p, stream, &w->part, &w->part_bytes, w->want_part, 0);
        if (st == TILEC_RT_OK)
            st = ws_grow(p, stream, &w->cnt, &w->cnt_bytes, w->want_cnt, 1);
        if (st == TILEC_RT_OK)
            w->want_part = w->want_cnt = 0;
    }
    pthread_mutex_unlock(&p->ws_mu);
    /* the counters' zeroing done before any replay, whatever its stream */
    return st == TILEC_RT_OK && grown ? tilec_rt_stream_synchronize(p->rt, stream) : st;
}

void rt_program_split_drop(tilec_program *p, const void *owner)
{
    pthread_mutex_lock(&p->ws_mu);
    rt_split_ws *w = owned_ws(p, owner);
    if (w) {
        tilec_rt_free(p->rt, w->part);
        tilec_rt_free(p->rt, w->cnt);
        *w = p->ws[--p->nws];
    }
    pthread_mutex_unlock(&p->ws_mu);
}

/* The grid memo (rt_grid_memo): 1 and *grid when it holds the grid for
 * scal[0..n); 0 when it holds another or one launch is writing it. */
static int memo_get(rt_grid_memo *m, const int64_t *scal, uint32_t n, uint32_t grid[3])
{
    uint32_t s = atomic_load_explicit(&m->seq, memory_order_acquire);
    if (!s || (s & 1))
        return 0;
    for (uint32_t a = 0; a < n; a++)
        if (atomic_load_explicit(&m->args[a], memory_order_relaxed) != scal[a])
            return 0;
    for (int d = 0; d < 3; d++)
        grid[d] = atomic_load_explicit(&m->grid[d], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&m->seq, memory_order_relaxed) == s;
}

/* Keeps grid for scal[0..n), unless another launch is writing the memo. */
static void memo_put(rt_grid_memo *m, const int64_t *scal, uint32_t n, const uint32_t grid[3])
{
    uint32_t s = atomic_load_explicit(&m->seq, memory_order_relaxed);
    if ((s & 1) ||
        !atomic_compare_exchange_strong_explicit(&m->seq, &s, s + 1, memory_order_relaxed, memory_order_relaxed))
        return;
    atomic_thread_fence(memory_order_release);
    for (uint32_t a = 0; a < n; a++)
        atomic_store_explicit(&m->args[a], scal[a], memory_order_relaxed);
    for (int d = 0; d < 3; d++)
        atomic_store_explicit(&m->grid[d], grid[d], memory_order_relaxed);
    atomic_store_explicit(&m->seq, s + 2 ? s + 2 : 2, memory_order_release);
}

/* One launch of kernel i, its tensor lists (if any) packed: args[a].ptr
 * is the address of list a's table, whose count the grid reads as len. */
static tilec_rt_status launch_one(tilec_program *p, uint32_t i, const tilec_rt_arg *args, void *stream,
                                  const void *ws_owner)
{
    pkernel *pk = &p->ks[i];
    int64_t scal[64];
    for (uint32_t a = 0; a < pk->d.nparams; a++) {
        switch (pk->d.kinds[a]) {
        case TILEC_RT_PARAM_LIST: memcpy(&scal[a], (const void *)(uintptr_t)args[a].ptr, sizeof scal[a]); break;
        case TILEC_RT_PARAM_I32: scal[a] = args[a].i32; break;
        case TILEC_RT_PARAM_U32: scal[a] = args[a].u32; break;
        case TILEC_RT_PARAM_I64: scal[a] = args[a].i64; break;
        case TILEC_RT_PARAM_U64: scal[a] = (int64_t)args[a].u64; break;
        default: scal[a] = 0; break;
        }
    }
    uint32_t grid[3];
    if (!memo_get(&pk->gm, scal, pk->d.nparams, grid)) { /* the grid's expressions: ~100 ns, the memo ~10 */
        if (pk->grid ? pk->grid(pk->grid_data, pk->d.variant, scal, grid) != 0 : pk->d.grid(scal, grid) != 0)
            return TILEC_RT_INVALID_ARG;
        memo_put(&pk->gm, scal, pk->d.nparams, grid);
    }
    if (!grid[0] || !grid[1] || !grid[2])
        return TILEC_RT_OK; /* nothing to do */
    tilec_rt_status st;
    if (pk->d.split_k) { /* no twin: the workspace and counters after the kernel's own parameters */
        tilec_rt_arg all[TILEC_RT_MAX_PARAMS];
        if (pk->d.nparams)
            memcpy(all, args, pk->d.nparams * sizeof *args);
        int skip = 0;
        st = split_ws(p, pk, (uint64_t)grid[0] * grid[1] * grid[2], stream, ws_owner, &all[pk->d.nparams].ptr,
                      &all[pk->d.nparams + 1].ptr, &skip);
        return st != TILEC_RT_OK || skip ? st : tilec_rt_launch(pk->kern, grid, all, stream);
    }
    if (rt_tma_launch(pk, grid, args, stream, &st))
        return st;
    return tilec_rt_launch(pk->kern, grid, args, stream);
}

/* The tensor lists of a launch of kernel pk (docs/language.md §4.3): each
 * list argument's count, the same for all, into *n; else a message. */
static tilec_rt_status list_count(tilec_program *p, const pkernel *pk, const tilec_rt_arg *args, uint32_t *n)
{
    int first = -1;
    for (uint32_t a = 0; a < pk->d.nparams; a++) {
        if (pk->d.kinds[a] != TILEC_RT_PARAM_LIST)
            continue;
        const tilec_rt_list *l = args[a].list;
        if (!l)
            return rt_fail(p->rt, TILEC_RT_INVALID_ARG, "kernel '%s': argument %u is a tensor list, but NULL was passed",
                           pk->d.kernel, a + 1);
        if (l->n && (!l->ptrs || !l->numels))
            return rt_fail(p->rt, TILEC_RT_INVALID_ARG,
                           "kernel '%s': tensor list argument %u has %u tensors but no addresses or element counts",
                           pk->d.kernel, a + 1, l->n);
        for (uint32_t t = 0; t < l->n; t++)
            if (l->numels[t] < 0)
                return rt_fail(p->rt, TILEC_RT_INVALID_ARG,
                               "kernel '%s': tensor %u of list argument %u has %lld elements", pk->d.kernel, t, a + 1,
                               (long long)l->numels[t]);
        if (first < 0) {
            first = (int)a;
            *n = l->n;
        } else if (l->n != *n) {
            return rt_fail(p->rt, TILEC_RT_INVALID_ARG,
                           "kernel '%s': tensor list arguments %d and %u have %u and %u tensors; every list of a "
                           "launch must have as many",
                           pk->d.kernel, first + 1, a + 1, *n, l->n);
        }
    }
    return TILEC_RT_OK;
}

/* A launch of kernel i with tensor lists: each list packed into its table
 * of cap tensors in the kernel's parameters (tilec/param_kind.h), one
 * launch per cap tensors (one with a count of 0 for empty lists). */
static tilec_rt_status launch_lists(tilec_program *p, uint32_t i, const tilec_rt_arg *args, void *stream,
                                    const void *ws_owner)
{
    const pkernel *pk = &p->ks[i];
    uint32_t n = 0, cap = tilec_rt_list_cap_of(pk->d.kinds, pk->d.nparams);
    tilec_rt_status st = list_count(p, pk, args, &n);
    if (st != TILEC_RT_OK)
        return st;
    if (!cap)
        return rt_fail(p->rt, TILEC_RT_INVALID_ARG, "kernel '%s': its tensor lists leave no room in its parameters",
                       pk->d.kernel);
    uint64_t tables[TILEC_RT_LIST_PARAM_BYTES / 8]; /* every list's table: they fit in the parameters */
    tilec_rt_arg all[TILEC_RT_MAX_PARAMS];
    memcpy(all, args, pk->d.nparams * sizeof *args);
    uint32_t words = tilec_rt_list_bytes(cap) / 8;
    for (uint32_t off = 0; off < n || (off == 0 && n == 0); off += cap) {
        uint32_t m = n - off < cap ? n - off : cap;
        uint64_t *t = tables;
        for (uint32_t a = 0; a < pk->d.nparams; a++) {
            if (pk->d.kinds[a] != TILEC_RT_PARAM_LIST)
                continue;
            const tilec_rt_list *l = args[a].list;
            memset(t, 0, words * sizeof *t);
            t[0] = m;
            if (m) {
                memcpy(t + 1, l->ptrs + off, m * sizeof *t);
                memcpy(t + 1 + cap, l->numels + off, m * sizeof *t);
            }
            all[a].ptr = (uint64_t)(uintptr_t)t;
            t += words;
        }
        st = launch_one(p, i, all, stream, ws_owner);
        if (st != TILEC_RT_OK || !n)
            return st;
    }
    return TILEC_RT_OK;
}

tilec_rt_status rt_program_launch_at(const tilec_program *cp, uint32_t i, const tilec_rt_arg *args, void *stream,
                                     const void *ws_owner)
{
    tilec_program *p = (tilec_program *)cp; /* the split-K scratch and the grid memo are the program's */
    for (uint32_t a = 0; a < p->ks[i].d.nparams; a++)
        if (p->ks[i].d.kinds[a] == TILEC_RT_PARAM_LIST)
            return launch_lists(p, i, args, stream, ws_owner);
    return launch_one(p, i, args, stream, ws_owner);
}

tilec_rt_status tilec_program_launch(const tilec_program *p, const char *name, int variant, const tilec_rt_arg *args,
                                     uint32_t nargs, void *stream)
{
    const pkernel *pk = p && name ? find(p, name, variant) : NULL;
    if (!pk || !pk->kern || nargs != pk->d.nparams || (nargs && !args))
        return TILEC_RT_INVALID_ARG;
    return rt_program_launch_at(p, (uint32_t)(pk - p->ks), args, stream, NULL);
}

void tilec_program_get_stats(const tilec_program *p, tilec_program_stats *s)
{
    if (p && s) {
        *s = p->st;
        s->choices_timed = atomic_load(&p->mk_timed);
        s->choices_stored = atomic_load(&p->mk_stored);
    }
}
