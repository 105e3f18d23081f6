/* record.c: a module build's source record, written and read back, and
 * the move between a lowered variant and its bundle entry (see record.h).
 * The record's text:
 *
 *   tilec source record 4
 *   bundle <bundle key>
 *
 * Everything a launch needs is in the bundle (docs/runtime.md, "The
 * bundle format"), which checks every field when it is read; a record or
 * a bundle that does not fit is a miss, never a wrong launch. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/record.h"
#include "tilec/limits.h"
#include "tilec/runtime.h"
#include "util/strbuf.h"

/* 2: split-K; 3: the twin's persistence; 4: the launch fields moved to the
 * bundle (format 2) */
#define REC_HEAD "tilec source record 4"

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

char *rec_format(const char *bundle_key)
{
    strbuf b;
    sb_init(&b);
    sb_printf(&b, REC_HEAD "\nbundle %s\n", bundle_key);
    if (b.failed) {
        sb_free(&b);
        return NULL;
    }
    return sb_take(&b);
}

int rec_parse(const char *text, char bundle_key[TILEC_CACHE_KEY_LEN + 1])
{
    static const char head[] = REC_HEAD "\nbundle ";
    size_t hl = sizeof head - 1;
    if (!text || strncmp(text, head, hl))
        return -1;
    const char *s = text + hl;
    size_t len = strcspn(s, "\n");
    if (len != TILEC_CACHE_KEY_LEN || !tilec_cache_key_ok(s, len) || s[len] != '\n' || s[len + 1])
        return -1;
    memcpy(bundle_key, s, len);
    bundle_key[len] = 0;
    return 0;
}

void rec_to_bundle(tilec_bundle_kernel *bk, const tilec_kernel_code *c, void *image, size_t size,
                   const tilec_rt_param_kind *kinds)
{
    memset(bk, 0, sizeof *bk);
    bk->name = c->name;
    bk->image = image;
    bk->size = size;
    bk->threads = c->threads;
    bk->smem_bytes = c->smem_bytes;
    bk->nparams = c->nparams;
    memcpy(bk->kinds, kinds, c->nparams * sizeof kinds[0]);
    bk->written = c->written;
    bk->split_k = c->split_k;
    bk->split_bytes = c->split_bytes;
    bk->twin = c->tma; /* twin.name borrowed, or NULL */
}

int rec_from_bundle(const tilec_bundle_kernel *bk, tilec_kernel_code *c, uint32_t nparams,
                    const tilec_rt_param_kind *kinds)
{
    memset(c, 0, sizeof *c);
    if (bk->nparams != nparams || (nparams && memcmp(bk->kinds, kinds, nparams * sizeof kinds[0])))
        return -1;
    c->name = strdup(bk->name);
    c->threads = bk->threads;
    c->smem_bytes = bk->smem_bytes;
    c->nparams = bk->nparams;
    c->written = bk->written;
    c->split_k = bk->split_k;
    c->split_bytes = bk->split_bytes;
    c->tma = bk->twin;
    c->tma.name = bk->twin.name ? strdup(bk->twin.name) : NULL;
    if (!c->name || (bk->twin.name && !c->tma.name)) {
        tilec_kernel_code_free(c);
        return -1;
    }
    return 0;
}
