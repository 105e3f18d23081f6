/* record.h: a module build's source record (internal to api/), and the
 * move between a lowered variant and its bundle entry. The record is kept
 * in the cache (tilec_cache_record_put) under a key over the module's
 * text; it names the bundle the lowering gave, and the bundle holds each
 * variant's whole launch description (tilec_bundle_kernel), so a warm
 * start finds everything with no lowering (docs/runtime.md, "Warm starts
 * without lowering"). */
#ifndef TILEC_API_RECORD_H
#define TILEC_API_RECORD_H

#include "tilec/cache.h"
#include "tilec/lower.h"

/* The record key of module m compiled for arch: the cache's key scheme
 * (the compiler's identity, NVRTC's version and options, the arch) over
 * the module's text (not its file name, which the lowering writes only in
 * comments). "" when no key can be made. */
void rec_key(const tilec_cache *c, const char *arch, const tilec_module *m, char key[TILEC_CACHE_KEY_LEN + 1]);

/* The record of a module whose bundle is under bundle_key: a malloc'd
 * text, NULL when out of memory. */
char *rec_format(const char *bundle_key);

/* Read a record back: the bundle key it names. 0, or -1 when the text is
 * not a record of this format. */
int rec_parse(const char *text, char bundle_key[TILEC_CACHE_KEY_LEN + 1]);

/* The bundle entry of a lowered variant: every launch field of c, its
 * image and parameter kinds. The entry borrows c's strings and image (it
 * is serialised, never freed). */
void rec_to_bundle(tilec_bundle_kernel *bk, const tilec_kernel_code *c, void *image, size_t size,
                   const tilec_rt_param_kind *kinds);

/* A variant's launch fields back from its bundle entry into c (zeroed
 * first; its name and the twin's are copies: free with
 * tilec_kernel_code_free), for a kernel that declares nparams parameters
 * whose kinds are `kinds`. 0, or -1 (c freed) when the entry does not fit
 * (another parameter count or kind) or memory runs out. */
int rec_from_bundle(const tilec_bundle_kernel *bk, tilec_kernel_code *c, uint32_t nparams,
                    const tilec_rt_param_kind *kinds);

#endif
