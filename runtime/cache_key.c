/* cache_key.c: cache keys. XXH3-128 from libxxhash (used header-only, so
 * the library links nothing more) over the key scheme, the compiler's
 * identity (tilec_build_identity, generated at build time from tilec's own
 * sources by tools/identity.sh), the NVRTC version and code options, the
 * architecture, then what the caller adds (each kernel's name, CUDA source
 * and launch metadata). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "runtime/cache_shared.h"
#include "runtime/nvrtc_internal.h"

/* Bump when what goes into a key changes shape. */
#define KEY_SCHEME "tilec-cache-key-2"

extern const char tilec_build_identity[]; /* $(BUILD)/gen/identity.c */

struct tilec_cache_keyer {
    XXH3_state_t st;
};

const char *tilec_cache_identity(const tilec_cache *c)
{
    return c && c->identity[0] ? c->identity : tilec_build_identity;
}

void tilec_cache_keyer_add_bytes(tilec_cache_keyer *k, const void *data, size_t len)
{
    if (k && len && data)
        XXH3_128bits_update(&k->st, data, len);
}

void tilec_cache_keyer_add_u64(tilec_cache_keyer *k, uint64_t v)
{
    const uint8_t le[8] = {(uint8_t)v,         (uint8_t)(v >> 8),  (uint8_t)(v >> 16), (uint8_t)(v >> 24),
                           (uint8_t)(v >> 32), (uint8_t)(v >> 40), (uint8_t)(v >> 48), (uint8_t)(v >> 56)};
    tilec_cache_keyer_add_bytes(k, le, sizeof le);
}

/* The length first (2^64 - 1 for NULL), then the bytes. */
void tilec_cache_keyer_add_str(tilec_cache_keyer *k, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    tilec_cache_keyer_add_u64(k, s ? (uint64_t)n : UINT64_MAX);
    tilec_cache_keyer_add_bytes(k, s, n);
}

/* The source, each occurrence of path (which the lowering writes only in
 * comments) as a NUL and a fixed token: a source holds no NUL, so the
 * stream stays unambiguous; a NUL and 0x01 end it. */
static void add_source(tilec_cache_keyer *k, const char *source, const char *path)
{
    static const char token[] = "\0<module>";
    size_t pl = path ? strlen(path) : 0;
    const char *p = source ? source : "";
    for (const char *hit; pl && (hit = strstr(p, path)) != NULL; p = hit + pl) {
        tilec_cache_keyer_add_bytes(k, p, (size_t)(hit - p));
        tilec_cache_keyer_add_bytes(k, token, sizeof token - 1);
    }
    tilec_cache_keyer_add_bytes(k, p, strlen(p));
    tilec_cache_keyer_add_bytes(k, "\0\1", 2);
}

void tilec_cache_keyer_add_kernel(tilec_cache_keyer *k, const char *name, const char *source, const char *path,
                                  uint32_t threads, uint32_t smem_bytes, uint32_t nparams,
                                  const tilec_rt_param_kind *kinds)
{
    tilec_cache_keyer_add_str(k, name);
    add_source(k, source, path);
    tilec_cache_keyer_add_u64(k, threads);
    tilec_cache_keyer_add_u64(k, smem_bytes);
    tilec_cache_keyer_add_u64(k, nparams);
    for (uint32_t i = 0; kinds && i < nparams; i++)
        tilec_cache_keyer_add_u64(k, (uint64_t)kinds[i]);
}

tilec_rt_status tilec_cache_keyer_new(const tilec_cache *c, const char *arch, tilec_cache_keyer **out)
{
    if (out)
        *out = NULL;
    if (!arch || !out)
        return TILEC_RT_INVALID_ARG;
    tilec_cache_keyer *k = aligned_alloc(64, (sizeof *k + 63) / 64 * 64);
    if (!k)
        return TILEC_RT_NOMEM;
    XXH3_128bits_reset(&k->st);
    int maj = 0, min = 0;
    tilec_nvrtc_version(&maj, &min);
    char opts[256];
    rt_nvrtc_options_line(arch, opts, sizeof opts);
    tilec_cache_keyer_add_str(k, KEY_SCHEME);
    tilec_cache_keyer_add_str(k, tilec_cache_identity(c));
    tilec_cache_keyer_add_u64(k, (uint64_t)maj << 32 | (uint32_t)min);
    tilec_cache_keyer_add_str(k, opts);
    tilec_cache_keyer_add_str(k, arch);
    *out = k;
    return TILEC_RT_OK;
}

void tilec_cache_keyer_final(tilec_cache_keyer *k, char key[TILEC_CACHE_KEY_LEN + 1])
{
    if (!k || !key) {
        if (key)
            key[0] = 0;
        free(k);
        return;
    }
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(&k->st));
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        key[2 * i] = digits[canon.digest[i] >> 4];
        key[2 * i + 1] = digits[canon.digest[i] & 15];
    }
    key[TILEC_CACHE_KEY_LEN] = 0;
    free(k);
}
