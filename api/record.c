/* record.c: a module build's source record, written and read back (see
 * record.h). The text, one line per variant in module order:
 *
 *   tilec source record 3
 *   bundle <bundle key>
 *   kernel <name> <threads> <smem> <nparams> split <S> <bytes> twin -
 *   kernel <name> <threads> <smem> <nparams> split <S> <bytes> twin <name> <threads> <smem> <nmaps> <persistent>
 *          <map fields>...
 *
 * Only the compiler that wrote a record reads it (its identity is in the
 * key), yet every field is checked: a record that does not fit is a miss,
 * never a wrong launch. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/record.h"
#include "tilec/limits.h"
#include "tilec/runtime.h"
#include "util/strbuf.h"

#define REC_HEAD "tilec source record 3" /* 2: split-K (split S BYTES); 3: the twin's persistence */

/* The fields of a tensor map, in record order; `param` fields are
 * parameter indices (below the kernel's parameter count), 2 where
 * TILEC_TMA_NONE may stand instead. */
static const struct {
    size_t at;
    int param;
} map_fields[] = {
    {offsetof(tilec_tma_map, ptr), 1},        {offsetof(tilec_tma_map, rows), 1},
    {offsetof(tilec_tma_map, cols), 1},       {offsetof(tilec_tma_map, stride), 1},
    {offsetof(tilec_tma_map, box_rows), 0},   {offsetof(tilec_tma_map, box_cols), 0},
    {offsetof(tilec_tma_map, elem_bytes), 0}, {offsetof(tilec_tma_map, bf16), 0},
    {offsetof(tilec_tma_map, batched), 0},    {offsetof(tilec_tma_map, bs[0]), 2},
    {offsetof(tilec_tma_map, bs[1]), 2},
};
enum { NFIELDS = sizeof map_fields / sizeof map_fields[0] };
_Static_assert(sizeof(tilec_tma_map) == NFIELDS * sizeof(uint32_t),
               "a tensor map field is missing from the record (map_fields)");
/* the twin as the record knows it: name, threads, smem, nmaps, maps */
struct rec_twin_shape {
    char *name;
    uint32_t threads, smem_bytes, nmaps, persistent;
    tilec_tma_map maps[TILEC_TMA_MAX_MAPS];
};
_Static_assert(sizeof(tilec_tma_meta) == sizeof(struct rec_twin_shape), "a twin field is missing from the record");

void rec_key(const tilec_cache *c, const char *arch, const tilec_module *m, char key[TILEC_CACHE_KEY_LEN + 1])
{
    tilec_cache_keyer *k = NULL;
    size_t len = 0;
    const char *text = tilec_module_source(m, &len);
    key[0] = 0;
    if (!text || tilec_cache_keyer_new(c, arch, &k) != TILEC_RT_OK)
        return;
    tilec_cache_keyer_add_str(k, REC_HEAD); /* not the file's name: the same module hits from any checkout */
    tilec_cache_keyer_add_u64(k, len);
    tilec_cache_keyer_add_bytes(k, text, len);
    tilec_cache_keyer_final(k, key);
}

static void put_map(strbuf *b, const tilec_tma_map *mp)
{
    for (int f = 0; f < NFIELDS; f++)
        sb_printf(b, " %u", *(const uint32_t *)(const void *)((const char *)mp + map_fields[f].at));
}

char *rec_format(const char *bundle_key, const tilec_kernel_code *const *codes, uint32_t n)
{
    strbuf b;
    sb_init(&b);
    sb_printf(&b, REC_HEAD "\nbundle %s\n", bundle_key);
    for (uint32_t i = 0; i < n; i++) {
        const tilec_kernel_code *c = codes[i];
        const tilec_tma_meta *t = &c->tma;
        sb_printf(&b, "kernel %s %u %u %u split %u %u twin", c->name, c->threads, c->smem_bytes, c->nparams, c->split_k,
                  c->split_bytes);
        if (!t->name)
            sb_puts(&b, " -");
        else
            sb_printf(&b, " %s %u %u %u %u", t->name, t->threads, t->smem_bytes, t->nmaps, t->persistent);
        for (uint32_t m = 0; t->name && m < t->nmaps && m < TILEC_TMA_MAX_MAPS; m++)
            put_map(&b, &t->maps[m]);
        sb_putc(&b, '\n');
    }
    if (b.failed) {
        sb_free(&b);
        return NULL;
    }
    return sb_take(&b);
}

/* ---- reading ---- */

/* A cursor over one line's space-separated words. */
typedef struct words {
    const char *p, *end;
} words;

static int word(words *w, const char **s, size_t *n)
{
    while (w->p < w->end && *w->p == ' ')
        w->p++;
    *s = w->p;
    while (w->p < w->end && *w->p != ' ')
        w->p++;
    *n = (size_t)(w->p - *s);
    return *n > 0;
}

static int is_word(words *w, const char *lit)
{
    const char *s;
    size_t n;
    return word(w, &s, &n) && n == strlen(lit) && !memcmp(s, lit, n);
}

static int number(words *w, uint32_t max, uint32_t *out)
{
    const char *s;
    size_t n;
    if (!word(w, &s, &n) || n > 10)
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || (i == 0 && s[i] == '0' && n > 1))
            return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max)
        return 0;
    *out = (uint32_t)v;
    return 1;
}

/* A C identifier of at most TILEC_MAX_IDENT + 32 bytes, malloc'd. */
static char *ident(words *w)
{
    const char *s;
    size_t n;
    if (!word(w, &s, &n) || n > TILEC_MAX_IDENT + 32 || !tilec_bundle_name_ok(s, n))
        return NULL;
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = 0;
    }
    return r;
}

static int read_twin(words *w, tilec_tma_meta *t, uint32_t nparams)
{
    const char *s;
    size_t n;
    const char *save = w->p;
    if (word(w, &s, &n) && n == 1 && s[0] == '-')
        return 1;
    w->p = save;
    if (!(t->name = ident(w)) || !number(w, 1024, &t->threads) || !t->threads || !number(w, UINT32_MAX, &t->smem_bytes) ||
        !number(w, TILEC_TMA_MAX_MAPS, &t->nmaps) || !number(w, 2, &t->persistent))
        return 0;
    for (uint32_t m = 0; m < t->nmaps; m++)
        for (int f = 0; f < NFIELDS; f++) {
            uint32_t *v = (uint32_t *)(void *)((char *)&t->maps[m] + map_fields[f].at);
            int p = map_fields[f].param;
            if (!number(w, UINT32_MAX, v) || (p && *v >= nparams && !(p == 2 && *v == TILEC_TMA_NONE)))
                return 0;
        }
    return 1;
}

static int read_kernel(words *w, tilec_kernel_code *c, uint32_t nparams)
{
    return is_word(w, "kernel") && (c->name = ident(w)) && number(w, 1024, &c->threads) && c->threads &&
           number(w, UINT32_MAX, &c->smem_bytes) && number(w, TILEC_RT_MAX_PARAMS, &c->nparams) &&
           c->nparams == nparams && is_word(w, "split") && number(w, 64, &c->split_k) && c->split_k != 1 &&
           number(w, UINT32_MAX, &c->split_bytes) && !c->split_k == !c->split_bytes && is_word(w, "twin") &&
           read_twin(w, &c->tma, nparams);
}

/* The next line of text (without its newline) as a cursor; 0 at the end. */
static int line(const char **text, words *w)
{
    const char *nl = strchr(*text, '\n');
    if (!nl)
        return 0;
    w->p = *text;
    w->end = nl;
    *text = nl + 1;
    return 1;
}

static int at_end(const words *w) { return w->p == w->end; }

int rec_parse(const char *text, tilec_kernel_code *const *codes, const uint32_t *nparams, uint32_t n,
              char bundle_key[TILEC_CACHE_KEY_LEN + 1])
{
    words w;
    const char *s;
    size_t len;
    for (uint32_t i = 0; i < n; i++)
        memset(codes[i], 0, sizeof *codes[i]);
    int ok = text && line(&text, &w) && (size_t)(w.end - w.p) == strlen(REC_HEAD) &&
             !memcmp(w.p, REC_HEAD, strlen(REC_HEAD)) && line(&text, &w) && is_word(&w, "bundle") &&
             word(&w, &s, &len) && len == TILEC_CACHE_KEY_LEN && tilec_cache_key_ok(s, len) && at_end(&w);
    if (ok) {
        memcpy(bundle_key, s, len);
        bundle_key[len] = 0;
    }
    for (uint32_t i = 0; ok && i < n; i++)
        ok = line(&text, &w) && read_kernel(&w, codes[i], nparams[i]) && at_end(&w);
    if (ok && *text == 0)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        tilec_kernel_code_free(codes[i]);
    return -1;
}
