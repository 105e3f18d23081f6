/* bundle.c: bundles to bytes and back. serialize checks the bundle and
 * writes the format of docs/runtime.md ("Kernel cache and bundles");
 * parse checks every byte of untrusted input (header, checksums, key,
 * every count and length) in a first pass that allocates nothing, then
 * builds the bundle in a second: never a crash, never a partial bundle. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/twin_check.h"
#include "tilec/cache.h"

/* ORDER BUNDLE_FORMAT: header offsets (all integers little-endian). */
enum {
    H_MAGIC = 0,        /* 8 bytes "TILECBND" */
    H_VERSION = 8,      /* u32 */
    H_FLAGS = 12,       /* u32, 0 */
    H_TOTAL = 16,       /* u64: the whole file, header included */
    H_PAYLOAD_SUM = 24, /* u64: checksum of bytes [64, total) */
    H_KEY_LEN = 32,     /* u32 */
    H_NKERNELS = 36,    /* u32 */
    H_RESERVED = 40,    /* 16 bytes, 0 */
    H_HEADER_SUM = 56,  /* u64: checksum of bytes [0, 56) */
};
_Static_assert(H_HEADER_SUM + 8 == TILEC_BUNDLE_HEADER_SIZE, "the header is 64 bytes");

/* The fixed part of a kernel record: name length, threads, smem, nparams
 * (u32 each), written (u64), split-K slices and bytes, the twin's name
 * length (u32 each) and image size (u64); the name, kinds, the twin and
 * the image are extra. A twin is its name, threads, smem, nmaps,
 * persistent, kbound, kfrom, kper, one_tma (u32 each) and nmaps maps of
 * TWIN_MAP_WORDS u32. */
enum {
    K_FIXED = 4 + 4 + 4 + 4 + 8 + 4 + 4 + 4 + 8,
    K_MIN = K_FIXED + 1 + 1,
    TWIN_FIXED = 8 * 4,
    TWIN_MAP_WORDS = sizeof(tilec_tma_map) / sizeof(uint32_t),
};
_Static_assert(sizeof(tilec_tma_map) == TWIN_MAP_WORDS * sizeof(uint32_t), "a tensor map is a row of u32");

/* The words of a tensor map in stored order, and which of them are
 * parameter indices: 1 below the kernel's parameter count, 2 that or
 * TILEC_TMA_NONE, 3 that or a constant (TILEC_TMA_CONST | c), 4 any of
 * the three (docs/runtime.md, "The bundle format"). */
static const struct {
    size_t at;
    int param;
} map_words[TWIN_MAP_WORDS] = {
    {offsetof(tilec_tma_map, ptr), 1},        {offsetof(tilec_tma_map, rows), 4},
    {offsetof(tilec_tma_map, cols), 3},       {offsetof(tilec_tma_map, stride), 3},
    {offsetof(tilec_tma_map, box_rows), 0},   {offsetof(tilec_tma_map, box_cols), 0},
    {offsetof(tilec_tma_map, elem_bytes), 0}, {offsetof(tilec_tma_map, bf16), 0},
    {offsetof(tilec_tma_map, batched), 0},    {offsetof(tilec_tma_map, bs[0]), 2},
    {offsetof(tilec_tma_map, bs[1]), 2},      {offsetof(tilec_tma_map, bgrid), 0},
    {offsetof(tilec_tma_map, bscale), 0},     {offsetof(tilec_tma_map, im2col), 0},
    {offsetof(tilec_tma_map, ih), 3},         {offsetof(tilec_tma_map, iw), 3},
    {offsetof(tilec_tma_map, fr), 4},         {offsetof(tilec_tma_map, fs), 4},
    {offsetof(tilec_tma_map, pad), 4},        {offsetof(tilec_tma_map, cstride), 4},
};

static uint32_t *map_word(tilec_tma_map *m, int f) { return (uint32_t *)(void *)((char *)m + map_words[f].at); }

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

int tilec_bundle_name_ok(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        int alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
        if (!alpha && !(i > 0 && ch >= '0' && ch <= '9'))
            return 0;
    }
    return 1;
}

int tilec_cache_key_ok(const char *k, size_t n)
{
    if (!k || n == 0 || n > TILEC_CACHE_MAX_KEY)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)k[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-'))
            return 0;
    }
    return 1;
}

static tilec_rt_status fail(char *why, size_t why_size, tilec_rt_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static tilec_rt_status fail(char *why, size_t why_size, tilec_rt_status st, const char *fmt, ...)
{
    if (why && why_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* ---- names, checked for duplicates in O(n log n) ---- */

typedef struct name_ref {
    const char *s;
    size_t n;
} name_ref;

static int name_cmp(const void *a, const void *b)
{
    const name_ref *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* 1 and the duplicate in *dup when two names are equal, else 0 (sorts
 * names). */
static int find_duplicate(name_ref *names, uint32_t n, name_ref *dup)
{
    qsort(names, n, sizeof *names, name_cmp);
    for (uint32_t i = 1; i < n; i++)
        if (name_cmp(&names[i - 1], &names[i]) == 0) {
            *dup = names[i];
            return 1;
        }
    return 0;
}

/* ---- free and copy ---- */

void tilec_bundle_free(tilec_bundle *b)
{
    if (!b)
        return;
    if (b->kernels)
        for (uint32_t i = 0; i < b->nkernels; i++) {
            free(b->kernels[i].name);
            free(b->kernels[i].image);
            free(b->kernels[i].twin.name);
        }
    free(b->kernels);
    free(b);
}

tilec_rt_status tilec_bundle_copy(const tilec_bundle *b, tilec_bundle **out)
{
    if (!out)
        return TILEC_RT_INVALID_ARG;
    *out = NULL;
    if (!b || (b->nkernels && !b->kernels))
        return TILEC_RT_INVALID_ARG;
    tilec_bundle *c = calloc(1, sizeof *c);
    if (!c)
        return TILEC_RT_NOMEM;
    if (b->nkernels) {
        c->kernels = calloc(b->nkernels, sizeof *c->kernels);
        if (!c->kernels) {
            free(c);
            return TILEC_RT_NOMEM;
        }
    }
    c->nkernels = b->nkernels;
    for (uint32_t i = 0; i < b->nkernels; i++) {
        const tilec_bundle_kernel *s = &b->kernels[i];
        tilec_bundle_kernel *d = &c->kernels[i];
        *d = *s;
        d->name = NULL;
        d->image = NULL;
        d->twin.name = NULL;
        if ((s->name && !(d->name = strdup(s->name))) || (s->twin.name && !(d->twin.name = strdup(s->twin.name))))
            goto nomem;
        if (s->image && s->size) {
            if (!(d->image = malloc(s->size)))
                goto nomem;
            memcpy(d->image, s->image, s->size);
        }
    }
    *out = c;
    return TILEC_RT_OK;
nomem:
    tilec_bundle_free(c);
    return TILEC_RT_NOMEM;
}

/* ---- serialize ---- */

/* Check one kernel's launch fields (shared by serialize and parse). */
static int meta_ok(uint32_t threads, uint32_t nparams, const char **what)
{
    if (threads == 0 || threads > TILEC_RT_MAX_BLOCK) {
        *what = "a block size outside 1..1024";
        return 0;
    }
    if (nparams > TILEC_RT_MAX_PARAMS) {
        *what = "more than 64 parameters";
        return 0;
    }
    return 1;
}

/* Check split-K and the written mask against nparams. */
static int split_ok(uint32_t split_k, uint32_t split_bytes, uint64_t written, uint32_t nparams, const char **what)
{
    if (split_k == 1 || split_k > 64 || !split_k != !split_bytes) {
        *what = "a split-K of other than 0 or 2 to 64 slices, or partial bytes without it";
        return 0;
    }
    if (nparams < 64 && written >> nparams) {
        *what = "a written parameter past the parameter count";
        return 0;
    }
    return 1;
}

const char *rt_twin_why(const tilec_tma_meta *t, uint32_t nparams)
{
    if (t->threads == 0 || t->threads > TILEC_RT_MAX_BLOCK || t->nmaps > TILEC_TMA_MAX_MAPS || t->persistent > 5)
        return "a twin with a block size outside 1..1024, more than 3 maps or a persistence other than 0 to 4";
    if (t->kper && t->kbound >= nparams)
        return "a twin's K loop bound names a parameter past the parameter count";
    if (t->one_tma > 1 || (t->one_tma && t->persistent != 2 && t->persistent != 4))
        return "a twin's one-tile flag (one_tma) other than 0 or 1, or set where the twin is not paired (persistence "
               "2 or 4)";
    for (uint32_t m = 0; m < t->nmaps; m++)
        for (int f = 0; f < TWIN_MAP_WORDS; f++) {
            uint32_t v = *map_word((tilec_tma_map *)&t->maps[m], f);
            int k = map_words[f].param;
            if (k && v >= nparams && !((k == 2 || k == 4) && v == TILEC_TMA_NONE) &&
                !(k >= 3 && TILEC_TMA_IS_CONST(v)))
                return "a twin's tensor map names a parameter past the parameter count";
        }
    for (uint32_t m = 0; m < t->nmaps; m++) {
        const tilec_tma_map *mp = &t->maps[m];
        if (mp->batched > 1 || (mp->batched && (mp->bgrid < 1 || mp->bgrid > 2 || !mp->bscale)))
            return "a twin's batched tensor map with a batch on a grid axis other than 1 or 2, or its stride "
                   "times 0";
        if (mp->im2col > TILEC_TMA_IM2COL_OUT || (mp->im2col && (mp->batched || mp->rows == TILEC_TMA_NONE)))
            return "a twin's im2col tensor map that is batched, has no image count, or a kind other than 0, 1 or 2";
        if (mp->im2col == TILEC_TMA_IM2COL_OUT && (mp->fr == TILEC_TMA_NONE || mp->fs == TILEC_TMA_NONE))
            return "a twin's im2col tensor map of the output's extents (kind 2) without them";
        if (!mp->im2col && (mp->ih || mp->iw || mp->fr || mp->fs || mp->pad || mp->cstride))
            return "a twin's tiled tensor map with im2col words that are not 0";
    }
    return NULL;
}

tilec_rt_status tilec_bundle_serialize(const tilec_bundle *b, const char *key, void **buf, size_t *len)
{
    if (!buf || !len)
        return TILEC_RT_INVALID_ARG;
    *buf = NULL;
    *len = 0;
    if (!b || !key)
        return TILEC_RT_INVALID_ARG;
    size_t key_len = strnlen(key, TILEC_CACHE_MAX_KEY + 1);
    if (!tilec_cache_key_ok(key, key_len))
        return TILEC_RT_INVALID_ARG;
    if (b->nkernels == 0 || b->nkernels > TILEC_BUNDLE_MAX_KERNELS || !b->kernels)
        return TILEC_RT_INVALID_ARG;
    uint64_t total = TILEC_BUNDLE_HEADER_SIZE + (uint64_t)key_len;
    for (uint32_t i = 0; i < b->nkernels; i++) {
        const tilec_bundle_kernel *k = &b->kernels[i];
        const char *what;
        if (!k->name || !k->image || k->size == 0 || k->size > TILEC_BUNDLE_MAX_SIZE)
            return TILEC_RT_INVALID_ARG;
        size_t nl = strnlen(k->name, TILEC_BUNDLE_MAX_NAME + 1);
        if (nl > TILEC_BUNDLE_MAX_NAME || !tilec_bundle_name_ok(k->name, nl) || !meta_ok(k->threads, k->nparams, &what) ||
            !split_ok(k->split_k, k->split_bytes, k->written, k->nparams, &what))
            return TILEC_RT_INVALID_ARG;
        for (uint32_t j = 0; j < k->nparams; j++)
            if ((unsigned)k->kinds[j] >= TILEC_RT_PARAM_KIND_COUNT)
                return TILEC_RT_INVALID_ARG;
        size_t tl = k->twin.name ? strnlen(k->twin.name, TILEC_BUNDLE_MAX_NAME + 1) : 0;
        if (k->twin.name && (tl > TILEC_BUNDLE_MAX_NAME || !tilec_bundle_name_ok(k->twin.name, tl) ||
                             rt_twin_why(&k->twin, k->nparams)))
            return TILEC_RT_INVALID_ARG;
        total += K_FIXED + nl + k->nparams + (uint64_t)k->size;
        if (k->twin.name)
            total += tl + TWIN_FIXED + (uint64_t)k->twin.nmaps * TWIN_MAP_WORDS * 4;
        if (total > TILEC_BUNDLE_MAX_SIZE)
            return TILEC_RT_INVALID_ARG;
    }
    name_ref *names = malloc(b->nkernels * sizeof *names);
    if (!names)
        return TILEC_RT_NOMEM;
    for (uint32_t i = 0; i < b->nkernels; i++)
        names[i] = (name_ref){b->kernels[i].name, strlen(b->kernels[i].name)};
    name_ref dup;
    int d = find_duplicate(names, b->nkernels, &dup);
    free(names);
    if (d)
        return TILEC_RT_INVALID_ARG;

    uint8_t *out = malloc((size_t)total);
    if (!out)
        return TILEC_RT_NOMEM;
    uint8_t *p = out + TILEC_BUNDLE_HEADER_SIZE;
    memcpy(p, key, key_len);
    p += key_len;
    for (uint32_t i = 0; i < b->nkernels; i++) {
        const tilec_bundle_kernel *k = &b->kernels[i];
        size_t nl = strlen(k->name);
        put32(p, (uint32_t)nl);
        memcpy(p + 4, k->name, nl);
        p += 4 + nl;
        put32(p, k->threads);
        put32(p + 4, k->smem_bytes);
        put32(p + 8, k->nparams);
        p += 12;
        for (uint32_t j = 0; j < k->nparams; j++)
            *p++ = (uint8_t)k->kinds[j];
        put64(p, k->written);
        put32(p + 8, k->split_k);
        put32(p + 12, k->split_bytes);
        p += 16;
        size_t tl = k->twin.name ? strlen(k->twin.name) : 0;
        put32(p, (uint32_t)tl);
        p += 4;
        if (tl) {
            memcpy(p, k->twin.name, tl);
            p += tl;
            put32(p, k->twin.threads);
            put32(p + 4, k->twin.smem_bytes);
            put32(p + 8, k->twin.nmaps);
            put32(p + 12, k->twin.persistent);
            put32(p + 16, k->twin.kbound);
            put32(p + 20, k->twin.kfrom);
            put32(p + 24, k->twin.kper);
            put32(p + 28, k->twin.one_tma);
            p += TWIN_FIXED;
            for (uint32_t m = 0; m < k->twin.nmaps; m++)
                for (int f = 0; f < TWIN_MAP_WORDS; f++, p += 4)
                    put32(p, *map_word((tilec_tma_map *)&k->twin.maps[m], f));
        }
        put64(p, (uint64_t)k->size);
        memcpy(p + 8, k->image, k->size);
        p += 8 + k->size;
    }
    memset(out, 0, TILEC_BUNDLE_HEADER_SIZE);
    memcpy(out + H_MAGIC, TILEC_BUNDLE_MAGIC, 8);
    put32(out + H_VERSION, TILEC_BUNDLE_VERSION);
    put64(out + H_TOTAL, total);
    put64(out + H_PAYLOAD_SUM,
          tilec_bundle_checksum(out + TILEC_BUNDLE_HEADER_SIZE, (size_t)total - TILEC_BUNDLE_HEADER_SIZE));
    put32(out + H_KEY_LEN, (uint32_t)key_len);
    put32(out + H_NKERNELS, b->nkernels);
    put64(out + H_HEADER_SUM, tilec_bundle_checksum(out, H_HEADER_SUM));
    *buf = out;
    *len = (size_t)total;
    return TILEC_RT_OK;
}

/* ---- parse ---- */

/* A bounded reader over the payload: every take checks the bytes left. */
typedef struct reader {
    const uint8_t *p;
    size_t left;
} reader;

static int take(reader *r, size_t n, const uint8_t **at)
{
    if (n > r->left)
        return 0;
    *at = r->p;
    r->p += n;
    r->left -= n;
    return 1;
}

/* One kernel record, checked; pointers into the input. */
typedef struct krec {
    const uint8_t *name, *kinds, *image, *twin_name;
    uint32_t name_len, threads, smem, nparams, split_k, split_bytes, twin_len;
    uint64_t size, written;
    tilec_tma_meta twin; /* name NULL */
} krec;

#define BAD(...) fail(why, why_size, TILEC_RT_MODULE_ERROR, __VA_ARGS__)

static tilec_rt_status read_kernel(reader *r, uint32_t i, krec *k, char *why, size_t why_size)
{
    const uint8_t *at;
    memset(k, 0, sizeof *k);
    if (!take(r, 4, &at))
        return BAD("kernel %u: truncated before its name length", i);
    k->name_len = get32(at);
    if (k->name_len == 0 || k->name_len > TILEC_BUNDLE_MAX_NAME)
        return BAD("kernel %u: a name of %u bytes (1 to %u allowed)", i, k->name_len, TILEC_BUNDLE_MAX_NAME);
    if (!take(r, k->name_len, &k->name))
        return BAD("kernel %u: a name of %u bytes runs past the end", i, k->name_len);
    if (!tilec_bundle_name_ok((const char *)k->name, k->name_len))
        return BAD("kernel %u: its name is not a C identifier", i);
    if (!take(r, 12, &at))
        return BAD("kernel %u: truncated in its launch metadata", i);
    k->threads = get32(at);
    k->smem = get32(at + 4);
    k->nparams = get32(at + 8);
    const char *what;
    if (!meta_ok(k->threads, k->nparams, &what))
        return BAD("kernel %u (%.*s): %s (threads %u, %u parameters)", i, (int)k->name_len, (const char *)k->name, what,
                   k->threads, k->nparams);
    if (!take(r, k->nparams, &k->kinds))
        return BAD("kernel %u: truncated in its parameter kinds", i);
    for (uint32_t j = 0; j < k->nparams; j++)
        if (k->kinds[j] >= TILEC_RT_PARAM_KIND_COUNT)
            return BAD("kernel %u: parameter %u has unknown kind %u", i, j, k->kinds[j]);
    if (!take(r, 20, &at))
        return BAD("kernel %u: truncated in its split-K and twin fields", i);
    k->written = get64(at);
    k->split_k = get32(at + 8);
    k->split_bytes = get32(at + 12);
    k->twin_len = get32(at + 16);
    if (!split_ok(k->split_k, k->split_bytes, k->written, k->nparams, &what))
        return BAD("kernel %u (%.*s): %s (split %u, %u bytes, written 0x%llx)", i, (int)k->name_len,
                   (const char *)k->name, what, k->split_k, k->split_bytes, (unsigned long long)k->written);
    if (k->twin_len > TILEC_BUNDLE_MAX_NAME)
        return BAD("kernel %u: a twin name of %u bytes (1 to %u allowed)", i, k->twin_len, TILEC_BUNDLE_MAX_NAME);
    if (k->twin_len) {
        if (!take(r, k->twin_len, &k->twin_name) || !take(r, TWIN_FIXED, &at))
            return BAD("kernel %u: truncated in its twin", i);
        if (!tilec_bundle_name_ok((const char *)k->twin_name, k->twin_len))
            return BAD("kernel %u: its twin's name is not a C identifier", i);
        k->twin.threads = get32(at);
        k->twin.smem_bytes = get32(at + 4);
        k->twin.nmaps = get32(at + 8);
        k->twin.persistent = get32(at + 12);
        k->twin.kbound = get32(at + 16);
        k->twin.kfrom = get32(at + 20);
        k->twin.kper = get32(at + 24);
        k->twin.one_tma = get32(at + 28); /* rt_twin_why: 0, or 1 on a paired twin */
        if (k->twin.nmaps > TILEC_TMA_MAX_MAPS)
            return BAD("kernel %u: a twin with %u tensor maps (at most %d)", i, k->twin.nmaps, TILEC_TMA_MAX_MAPS);
        for (uint32_t m = 0; m < k->twin.nmaps; m++)
            for (int f = 0; f < TWIN_MAP_WORDS; f++) {
                if (!take(r, 4, &at))
                    return BAD("kernel %u: truncated in its twin's tensor map %u", i, m);
                *map_word(&k->twin.maps[m], f) = get32(at);
            }
        if ((what = rt_twin_why(&k->twin, k->nparams)))
            return BAD("kernel %u (%.*s): %s", i, (int)k->name_len, (const char *)k->name, what);
    }
    if (!take(r, 8, &at))
        return BAD("kernel %u: truncated before its image size", i);
    k->size = get64(at);
    if (k->size == 0)
        return BAD("kernel %u: an empty image", i);
    if (k->size > r->left)
        return BAD("kernel %u: an image of %llu bytes runs past the end (%zu left)", i, (unsigned long long)k->size,
                   r->left);
    take(r, (size_t)k->size, &k->image);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_bundle_parse(const void *buf, size_t len, const char *key, tilec_bundle **out, char *why,
                                   size_t why_size)
{
    if (why && why_size)
        why[0] = 0;
    if (!out)
        return fail(why, why_size, TILEC_RT_INVALID_ARG, "no place for the bundle");
    *out = NULL;
    if (!buf && len)
        return fail(why, why_size, TILEC_RT_INVALID_ARG, "no input");
    const uint8_t *in = buf;

    /* the header */
    if (len < TILEC_BUNDLE_HEADER_SIZE)
        return BAD("truncated: %zu bytes, shorter than the %u-byte header", len, TILEC_BUNDLE_HEADER_SIZE);
    if (memcmp(in + H_MAGIC, TILEC_BUNDLE_MAGIC, 8) != 0)
        return BAD("not a tilec bundle (bad magic)");
    uint32_t version = get32(in + H_VERSION);
    if (version != TILEC_BUNDLE_VERSION)
        return BAD("bundle format version %u; this tilec reads version %u", version, TILEC_BUNDLE_VERSION);
    if (get64(in + H_HEADER_SUM) != tilec_bundle_checksum(in, H_HEADER_SUM))
        return BAD("header checksum mismatch");
    if (get32(in + H_FLAGS) != 0)
        return BAD("unknown flags 0x%x", get32(in + H_FLAGS));
    for (int i = 0; i < 16; i++)
        if (in[H_RESERVED + i])
            return BAD("reserved header byte %d is not 0", H_RESERVED + i);
    uint64_t total = get64(in + H_TOTAL);
    if (total < TILEC_BUNDLE_HEADER_SIZE || total > TILEC_BUNDLE_MAX_SIZE)
        return BAD("a total size of %llu bytes (%u to %u allowed)", (unsigned long long)total, TILEC_BUNDLE_HEADER_SIZE,
                   TILEC_BUNDLE_MAX_SIZE);
    if (len < total)
        return BAD("truncated: %zu of %llu bytes", len, (unsigned long long)total);
    if (len > total)
        return BAD("%zu bytes of trailing garbage after the %llu-byte bundle", len - (size_t)total,
                   (unsigned long long)total);
    uint32_t key_len = get32(in + H_KEY_LEN);
    uint32_t nk = get32(in + H_NKERNELS);
    if (key_len == 0 || key_len > TILEC_CACHE_MAX_KEY)
        return BAD("a key of %u bytes (1 to %u allowed)", key_len, TILEC_CACHE_MAX_KEY);
    if (nk == 0 || nk > TILEC_BUNDLE_MAX_KERNELS)
        return BAD("%u kernels (1 to %u allowed)", nk, TILEC_BUNDLE_MAX_KERNELS);
    size_t payload = len - TILEC_BUNDLE_HEADER_SIZE;
    if ((uint64_t)key_len + (uint64_t)nk * K_MIN > payload)
        return BAD("%u kernels and a %u-byte key cannot fit in %zu bytes", nk, key_len, payload);
    if (get64(in + H_PAYLOAD_SUM) != tilec_bundle_checksum(in + TILEC_BUNDLE_HEADER_SIZE, payload))
        return BAD("payload checksum mismatch");

    /* the key */
    reader r = {in + TILEC_BUNDLE_HEADER_SIZE, payload};
    const uint8_t *stored;
    take(&r, key_len, &stored);
    if (!tilec_cache_key_ok((const char *)stored, key_len))
        return BAD("the stored key is malformed");
    if (key && (strlen(key) != key_len || memcmp(key, stored, key_len) != 0))
        return BAD("stored under key %.*s, not %.128s", (int)key_len, (const char *)stored, key);

    /* pass 1: check every kernel, allocate nothing but the index */
    krec *ks = malloc(nk * sizeof *ks);
    name_ref *names = malloc(nk * sizeof *names);
    if (!ks || !names) {
        free(ks);
        free(names);
        return fail(why, why_size, TILEC_RT_NOMEM, "out of memory for %u kernels", nk);
    }
    tilec_rt_status st = TILEC_RT_OK;
    for (uint32_t i = 0; i < nk && st == TILEC_RT_OK; i++) {
        st = read_kernel(&r, i, &ks[i], why, why_size);
        names[i] = (name_ref){(const char *)ks[i].name, ks[i].name_len};
    }
    if (st == TILEC_RT_OK && r.left)
        st = BAD("%zu bytes after the last kernel", r.left);
    name_ref dup;
    if (st == TILEC_RT_OK && find_duplicate(names, nk, &dup))
        st = BAD("kernel %.*s appears twice", (int)dup.n, dup.s);
    free(names);
    if (st != TILEC_RT_OK) {
        free(ks);
        return st;
    }

    /* pass 2: build */
    tilec_bundle *b = calloc(1, sizeof *b);
    if (b)
        b->kernels = calloc(nk, sizeof *b->kernels);
    if (!b || !b->kernels) {
        free(b);
        free(ks);
        return fail(why, why_size, TILEC_RT_NOMEM, "out of memory for %u kernels", nk);
    }
    b->nkernels = nk;
    for (uint32_t i = 0; i < nk; i++) {
        tilec_bundle_kernel *d = &b->kernels[i];
        const krec *k = &ks[i];
        d->name = malloc((size_t)k->name_len + 1);
        d->image = malloc((size_t)k->size);
        d->twin = k->twin;
        d->twin.name = k->twin_len ? malloc((size_t)k->twin_len + 1) : NULL;
        if (!d->name || !d->image || (k->twin_len && !d->twin.name)) {
            tilec_bundle_free(b);
            free(ks);
            return fail(why, why_size, TILEC_RT_NOMEM, "out of memory for kernel %u", i);
        }
        memcpy(d->name, k->name, k->name_len);
        d->name[k->name_len] = 0;
        memcpy(d->image, k->image, (size_t)k->size);
        d->size = (size_t)k->size;
        d->threads = k->threads;
        d->smem_bytes = k->smem;
        d->nparams = k->nparams;
        for (uint32_t j = 0; j < k->nparams; j++)
            d->kinds[j] = (tilec_rt_param_kind)k->kinds[j];
        d->written = k->written;
        d->split_k = k->split_k;
        d->split_bytes = k->split_bytes;
        if (k->twin_len) {
            memcpy(d->twin.name, k->twin_name, k->twin_len);
            d->twin.name[k->twin_len] = 0;
        }
    }
    free(ks);
    *out = b;
    return TILEC_RT_OK;
}
