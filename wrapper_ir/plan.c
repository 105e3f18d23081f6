/* plan.c: the memory planning pass over wrapper IR lines (FREE_IF_NOT_REUSED
 * + a later ALLOCATE of the same pool key -> REUSE, last freed first: one
 * stack per key, found by hash, so planning is linear in the lines; within
 * one loop body only: an allocation in a loop takes a buffer freed earlier
 * in the same iteration, never one from before the loop, and a buffer
 * freed in a loop is not taken after it, since the dropped free would
 * leak it in every iteration but the last), the
 * parsing of --sizes, and peak bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wrapper_ir/wir.h"

#define uthash_nonfatal_oom(e) (oom = 1)
#include "util/hashtable.h"

/* ---- planning ---- */

/* A buffer back in the pool, and the one freed before it with its key. */
typedef struct pkey pkey;
typedef struct pooled {
    const char *name;
    uint32_t line; /* its FREE_IF_NOT_REUSED */
    int32_t prev;  /* the pooled entry of the same key freed before, or -1 */
    uint32_t frame; /* the loop body (0: the graph's top) it was freed in */
    pkey *k;
} pooled;

/* The last freed buffer of one pool key (a stack through pooled.prev). */
struct pkey {
    const char *key;
    int32_t top; /* -1 when empty */
    UT_hash_handle hh;
};

tilec_status tilec_wir_plan(tilec_ctx *ctx, tilec_wir *w)
{
    if (!ctx || !w)
        return TILEC_ERR_ARG;
    if (!w->n)
        return TILEC_OK;
    pooled *pool = malloc(w->n * sizeof *pool);
    pkey *nodes = malloc(w->n * sizeof *nodes), *keys = NULL;
    uint8_t *drop = calloc(w->n, 1);
    /* the open loops: each one's frame and the pool's size at its start */
    uint32_t *frames = malloc((w->n + 1) * sizeof *frames), *starts = malloc((w->n + 1) * sizeof *starts);
    int oom = !pool || !nodes || !drop || !frames || !starts;
    uint32_t npool = 0, nkeys = 0, depth = 0, nframes = 0;
    if (!oom)
        frames[0] = 0;
    for (uint32_t i = 0; i < w->n && !oom; i++) {
        tilec_wir_line *l = &w->lines[i];
        if (l->kind == TILEC_WIR_LOOP) {
            starts[++depth] = npool;
            frames[depth] = ++nframes;
            continue;
        }
        if (l->kind == TILEC_WIR_END_LOOP && depth) {
            /* what the body freed and did not take back stays freed there */
            for (uint32_t j = npool; j-- > starts[depth];)
                if (pool[j].k->top == (int32_t)j)
                    pool[j].k->top = pool[j].prev;
            depth--;
            continue;
        }
        /* only lowering puts a key on the free of a buffer that is graph
         * allocated, not returned and not a view: nothing else enters */
        if (l->kind != TILEC_WIR_FREE_IF_NOT_REUSED && l->kind != TILEC_WIR_ALLOCATE)
            continue;
        if (!l->key)
            continue;
        pkey *k = NULL;
        HASH_FIND_STR(keys, l->key, k);
        if (l->kind == TILEC_WIR_FREE_IF_NOT_REUSED) {
            if (!k) {
                k = &nodes[nkeys++];
                *k = (pkey){.key = l->key, .top = -1};
                HASH_ADD_KEYPTR(hh, keys, k->key, strlen(k->key), k);
            }
            pool[npool] = (pooled){l->name, i, k->top, frames[depth], k};
            k->top = (int32_t)npool++;
        } else if (k && k->top >= 0 && pool[k->top].frame == frames[depth]) { /* the last freed of the key, reused */
            pooled *b = &pool[k->top];
            l->kind = TILEC_WIR_REUSE;
            l->from = b->name;
            drop[b->line] = 1;
            k->top = b->prev;
        }
    }
    HASH_CLEAR(hh, keys);
    if (!oom) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < w->n; i++)
            if (!drop[i])
                w->lines[n++] = w->lines[i];
        w->n = n;
    }
    free(pool);
    free(nodes);
    free(drop);
    free(frames);
    free(starts);
    return oom ? TILEC_ERR_NOMEM : TILEC_OK;
}

static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

tilec_status tilec_wir_parse_sizes(const char *spec, tilec_wir_size *out, size_t cap, size_t *n)
{
    if (!spec || !n || (!out && cap))
        return TILEC_ERR_ARG;
    *n = 0;
    size_t k = 0;
    const char *p = spec;
    while (*p) {
        const char *name = p;
        size_t len = 0;
        while (is_alpha(p[len]) || (len && is_digit(p[len])))
            len++;
        if (!len || len > 63 || p[len] != '=' || k == cap)
            return TILEC_ERR_ARG;
        p += len + 1;
        if (!is_digit(*p))
            return TILEC_ERR_ARG;
        errno = 0;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (errno || v <= 0 || (*end && *end != ','))
            return TILEC_ERR_ARG;
        for (size_t i = 0; i < k; i++)
            if (strlen(out[i].name) == len && !memcmp(out[i].name, name, len))
                return TILEC_ERR_ARG; /* a symbol given twice */
        memcpy(out[k].name, name, len);
        out[k].name[len] = 0;
        out[k].value = v;
        k++;
        p = end;
        if (*p == ',' && !*++p)
            return TILEC_ERR_ARG;
    }
    if (!k)
        return TILEC_ERR_ARG;
    *n = k;
    return TILEC_OK;
}

/* ---- peak bytes ---- */

tilec_status tilec_wir_peak_bytes(tilec_ctx *ctx, const tilec_wir *w, tilec_wir_peak_kind kind,
                                  const tilec_wir_size *sizes, size_t n, int64_t *out)
{
    if (!ctx || !w || !out || (!sizes && n))
        return TILEC_ERR_ARG;
    const char **names = malloc((w->n + 1) * sizeof *names);
    int64_t *bytes = malloc((w->n + 1) * sizeof *bytes);
    if (!names || !bytes) {
        free(names);
        free(bytes);
        return TILEC_ERR_NOMEM;
    }
    uint32_t nlive = 0;
    int64_t live = 0, peak = 0;
    tilec_status st = TILEC_OK;
    char bad[64];
    for (uint32_t i = 0; i < w->n && st == TILEC_OK; i++) {
        const tilec_wir_line *l = &w->lines[i];
        int64_t v = 0;
        switch (l->kind) {
        case TILEC_WIR_ALLOCATE:
        case TILEC_WIR_REUSE:
        case TILEC_WIR_EXTERN_ALLOC:
        case TILEC_WIR_MULTI_OUTPUT:
        case TILEC_WIR_COLLECTIVE: /* its result: new memory, live from here (its input lives through it) */
            if (!l->bytes)
                break; /* the tuple of a multi-output extern holds no storage */
            if ((st = wir_expr_eval(l->bytes_expr, sizes, n, &v, bad)) != TILEC_OK) {
                if (bad[0])
                    diag_at(ctx, &w->mod->src, &l->loc, TILEC_SEV_ERROR,
                            "graph '%s': no value for the size symbol '%s' (needed by '%s', %s bytes)", w->graph->name,
                            bad, l->name, l->bytes);
                else
                    diag_at(ctx, &w->mod->src, &l->loc, TILEC_SEV_ERROR,
                            "graph '%s': the size %s of '%s' cannot be computed (overflow or division by zero)",
                            w->graph->name, l->bytes, l->name);
                break;
            }
            names[nlive] = l->name;
            bytes[nlive++] = v;
            if (l->kind != TILEC_WIR_REUSE)
                live += v;
            break;
        case TILEC_WIR_FREE_IF_NOT_REUSED:
            if (kind == TILEC_WIR_PEAK_RESERVED && l->key)
                break; /* back in the wrapper's pool: still reserved */
            __attribute__((fallthrough));
        case TILEC_WIR_FREE:
            for (uint32_t j = nlive; j-- > 0;)
                if (!strcmp(names[j], l->name)) {
                    live -= bytes[j];
                    names[j] = "";
                    break;
                }
            break;
        default: break;
        }
        if (live > peak)
            peak = live;
    }
    free(names);
    free(bytes);
    if (st == TILEC_OK)
        *out = peak;
    return st;
}
