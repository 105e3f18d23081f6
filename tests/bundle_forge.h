/* bundle_forge.h: writing bundle bytes by hand, for the tests and the
 * bundle fuzzer that forge cache files: little-endian fields, and resealing
 * (the total size and both checksums, at the offsets docs/runtime.md gives)
 * so that a forged file passes those checks and only the field under test
 * is wrong. */
#ifndef TILEC_TESTS_BUNDLE_FORGE_H
#define TILEC_TESTS_BUNDLE_FORGE_H

#include <stddef.h>
#include <stdint.h>

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

#endif
