/* bundle_forge.h: writing bundle bytes by hand, for the tests and the
 * bundle fuzzer that forge cache files: little-endian fields, and resealing
 * (the total size and both checksums, at the offsets docs/runtime.md gives)
 * so that a forged file passes those checks and only the field under test
 * is wrong; and made-up bundles (make_bundle) with their comparison. */
#ifndef TILEC_TESTS_BUNDLE_FORGE_H
#define TILEC_TESTS_BUNDLE_FORGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/cache.h"

static inline void bundle_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void bundle_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* buf holds len >= TILEC_BUNDLE_HEADER_SIZE bytes. */
static inline void bundle_reseal(uint8_t *buf, size_t len)
{
    bundle_put64(buf + 16, len);
    bundle_put64(buf + 24, tilec_bundle_checksum(buf + TILEC_BUNDLE_HEADER_SIZE, len - TILEC_BUNDLE_HEADER_SIZE));
    bundle_put64(buf + 56, tilec_bundle_checksum(buf, 56));
}

/* A bundle of n kernels; `seed` varies sizes and contents. Image i is
 * 1 + 37 * i + seed bytes (odd sizes), byte j = (seed * 31 + i * 7 + j). */
static inline tilec_bundle *make_bundle(uint32_t n, unsigned seed)
{
    tilec_bundle *b = calloc(1, sizeof *b);
    b->nkernels = n;
    b->kernels = calloc(n, sizeof *b->kernels);
    for (uint32_t i = 0; i < n; i++) {
        tilec_bundle_kernel *k = &b->kernels[i];
        char name[64];
        snprintf(name, sizeof name, "kernel_%u_v%u", i, seed);
        k->name = strdup(name);
        k->size = 1 + 37 * i + seed;
        k->image = malloc(k->size);
        for (size_t j = 0; j < k->size; j++)
            ((uint8_t *)k->image)[j] = (uint8_t)(seed * 31 + i * 7 + j);
        k->threads = 32u << (i % 6);
        k->smem_bytes = (i * 4096u + seed) % (200u << 10);
        k->nparams = (i * 5 + seed) % (TILEC_RT_MAX_PARAMS + 1);
        for (uint32_t j = 0; j < k->nparams; j++)
            k->kinds[j] = (tilec_rt_param_kind)((i + j + seed) % TILEC_RT_PARAM_KIND_COUNT);
        k->written = k->nparams ? (0x9e3779b97f4a7c15ull * (i + seed + 1)) >> (64 - k->nparams) : 0;
        if (i % 3 == 1) { /* split-K */
            k->split_k = 2 + (i + seed) % 63;
            k->split_bytes = 4u * (i + 1);
        }
        if (i % 3 == 2) { /* a twin with up to 3 maps naming parameters below nparams */
            snprintf(name, sizeof name, "kernel_%u_v%u_tma", i, seed);
            k->twin.name = strdup(name);
            k->twin.threads = 384;
            k->twin.smem_bytes = 1000u * i + seed;
            k->twin.nmaps = k->nparams ? (i + seed) % (TILEC_TMA_MAX_MAPS + 1) : 0;
            k->twin.persistent = (i + seed) % 3; /* 2: paired tiles (tilec/tma.h) */
            /* the dot loop's trips: known (a bound parameter, a start, a step) or not (kper 0) */
            k->twin.kper = k->nparams && (i + seed) % 2 ? 64u << (seed % 3) : 0;
            k->twin.kbound = k->twin.kper ? (i + seed) % k->nparams : TILEC_TMA_NONE;
            k->twin.kfrom = k->twin.kper ? seed * 16u : 0;
            k->twin.one_tma = k->twin.persistent == 2 && seed % 2; /* its one-tile twin reads by TMA */
            for (uint32_t m = 0; m < k->twin.nmaps; m++) {
                tilec_tma_map *mp = &k->twin.maps[m];
                mp->ptr = m % k->nparams;
                mp->rows = mp->cols = mp->stride = (m + i) % k->nparams;
                mp->box_rows = 64 + m, mp->box_cols = 64, mp->elem_bytes = 2, mp->bf16 = m & 1;
                mp->batched = m == 2;
                mp->bs[0] = m == 2 ? 0 : TILEC_TMA_NONE;
                mp->bs[1] = TILEC_TMA_NONE;
                mp->bgrid = m == 2 ? 1 + (i + seed) % 2 : 0; /* a batch in pid(2) or a head in pid(1) */
                mp->bscale = m == 2 ? 1 + seed : 0;
                if (m == 1) { /* a convolution's image in im2col mode: 3 x 1 taps, a padding parameter */
                    mp->im2col = 1;
                    mp->ih = mp->iw = (m + i) % k->nparams;
                    mp->fr = TILEC_TMA_CONST | 3u, mp->fs = TILEC_TMA_NONE;
                    mp->pad = (i + seed) % k->nparams, mp->cstride = TILEC_TMA_NONE;
                }
            }
        }
    }
    return b;
}

/* 1 when a and b hold the same kernels. */
static inline int bundle_eq(const tilec_bundle *a, const tilec_bundle *b)
{
    if (!a || !b || a->nkernels != b->nkernels)
        return 0;
    for (uint32_t i = 0; i < a->nkernels; i++) {
        const tilec_bundle_kernel *x = &a->kernels[i], *y = &b->kernels[i];
        if (strcmp(x->name, y->name) || x->size != y->size || memcmp(x->image, y->image, x->size) ||
            x->threads != y->threads || x->smem_bytes != y->smem_bytes || x->nparams != y->nparams ||
            memcmp(x->kinds, y->kinds, x->nparams * sizeof x->kinds[0]) || x->written != y->written ||
            x->split_k != y->split_k || x->split_bytes != y->split_bytes || !x->twin.name != !y->twin.name)
            return 0;
        if (x->twin.name && (strcmp(x->twin.name, y->twin.name) || x->twin.threads != y->twin.threads ||
                             x->twin.smem_bytes != y->twin.smem_bytes || x->twin.nmaps != y->twin.nmaps ||
                             x->twin.persistent != y->twin.persistent || x->twin.kbound != y->twin.kbound ||
                             x->twin.kfrom != y->twin.kfrom || x->twin.kper != y->twin.kper ||
                             x->twin.one_tma != y->twin.one_tma ||
                             memcmp(x->twin.maps, y->twin.maps, x->twin.nmaps * sizeof x->twin.maps[0])))
            return 0;
    }
    return 1;
}

#endif
