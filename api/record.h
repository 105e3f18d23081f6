/* record.h: a module build's source record (internal to api/). The record
 * is kept in the cache (tilec_cache_record_put) under a key over the
 * module's text; it holds the key of the bundle the lowering gave and each
 * variant's launch metadata, so that a warm start finds its bundle with no
 * lowering (docs/runtime.md, "Warm starts without lowering"). */
#ifndef TILEC_API_RECORD_H
#define TILEC_API_RECORD_H

#include "tilec/cache.h"
#include "tilec/lower.h"

/* The record key of module m compiled for arch: the cache's key scheme
 * (the compiler's identity, NVRTC's version and options, the arch) over
 * the module's text (not its file name, which the lowering writes only in
 * comments). "" when no key can be made. */
void rec_key(const tilec_cache *c, const char *arch, const tilec_module *m, char key[TILEC_CACHE_KEY_LEN + 1]);

/* The record of n lowered variants (codes[i] for variant i) whose bundle
 * is under bundle_key: a malloc'd text, NULL when out of memory. */
char *rec_format(const char *bundle_key, const tilec_kernel_code *const *codes, uint32_t n);

/* Read a record back: the bundle key, and into each codes[i] (zeroed
 * first; free with tilec_kernel_code_free) the name, block size, shared
 * memory, parameter count and Hopper twin. nparams[i] is what variant i's
 * kernel declares. 0, or -1 (codes freed) when the text is not a record
 * of exactly these n variants. */
int rec_parse(const char *text, tilec_kernel_code *const *codes, const uint32_t *nparams, uint32_t n,
              char bundle_key[TILEC_CACHE_KEY_LEN + 1]);

#endif
