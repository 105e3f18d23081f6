/* fuzz_bundle.c: libFuzzer target for the kernel cache's bundle reader.
 * Every input is parsed as a bundle directly (with and without an expected
 * key), and also stored in place of a cache file and read back through the
 * cache, which must treat anything but a valid bundle as a miss and remove
 * the file. A bundle that parses must serialize back to the same bytes.
 * A copy with the header's fixed fields and checksums made right is parsed
 * as well, so that mutations reach the key and the kernel records.
 * Built by `make fuzz`; see docs/reliability.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/bundle_forge.h"
#include "tilec/cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char KEY[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static char fz_dir[64];
static char fz_file[160];
static tilec_cache *fz_cache;

static void fz_cleanup(void)
{
    if (fz_cache)
        tilec_cache_close(fz_cache);
    if (fz_file[0])
        unlink(fz_file);
    if (fz_dir[0]) {
        char cmd[96];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", fz_dir);
        if (system(cmd) != 0)
            return;
    }
}

static void fz_setup(void)
{
    if (fz_dir[0])
        return;
    strcpy(fz_dir, "/tmp/tilec-fuzz-XXXXXX");
    if (!mkdtemp(fz_dir)) {
        fz_dir[0] = 0;
        abort();
    }
    atexit(fz_cleanup);
    snprintf(fz_file, sizeof fz_file, "%s/%s.tilecbundle", fz_dir, KEY);
    /* The cache must keep KEY in fz_file: store a bundle and look. */
    static char name[] = "k";
    static unsigned char image[] = {1, 2, 3};
    tilec_bundle_kernel k;
    memset(&k, 0, sizeof k);
    k.name = name;
    k.image = image;
    k.size = sizeof image;
    k.threads = 32;
    tilec_bundle b = {1, &k};
    if (tilec_cache_open(fz_dir, &fz_cache) != TILEC_RT_OK || tilec_cache_put(fz_cache, KEY, &b) != TILEC_RT_OK ||
        access(fz_file, F_OK) != 0)
        abort();
    tilec_cache_close(fz_cache);
    fz_cache = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_setup();
    char why[256];
    tilec_bundle *b = NULL;
    for (int k = 0; k < 2; k++) {
        tilec_rt_status st = tilec_bundle_parse(data, size, k ? KEY : NULL, &b, why, sizeof why);
        if (st != TILEC_RT_OK) {
            if (b)
                abort(); /* never a partial bundle */
            continue;
        }
        void *buf = NULL;
        size_t len = 0;
        if (tilec_bundle_serialize(b, k ? KEY : NULL, &buf, &len) == TILEC_RT_OK) {
            if (k && (len != size || memcmp(buf, data, size) != 0))
                abort(); /* a bundle that parses is the bytes it came from */
            free(buf);
        }
        tilec_bundle_free(b);
        b = NULL;
    }

    /* The checksums stop almost every mutation at the header: parse a copy
     * with magic, version, flags, size and both checksums made right, so
     * that the key and the kernel records behind them get fuzzed too. */
    if (size >= TILEC_BUNDLE_HEADER_SIZE) {
        uint8_t *fixed = malloc(size);
        if (!fixed)
            abort();
        memcpy(fixed, data, size);
        memcpy(fixed, TILEC_BUNDLE_MAGIC, 8);
        bundle_put32(fixed + 8, TILEC_BUNDLE_VERSION);
        bundle_put32(fixed + 12, 0);
        bundle_reseal(fixed, size);
        if (tilec_bundle_parse(fixed, size, NULL, &b, why, sizeof why) == TILEC_RT_OK) {
            void *buf = NULL;
            size_t len = 0;
            if (tilec_bundle_serialize(b, NULL, &buf, &len) == TILEC_RT_OK) {
                tilec_bundle *again = NULL;
                if (tilec_bundle_parse(buf, len, NULL, &again, why, sizeof why) != TILEC_RT_OK)
                    abort(); /* what serialize writes parses */
                tilec_bundle_free(again);
                free(buf);
            }
            tilec_bundle_free(b);
            b = NULL;
        } else if (b) {
            abort();
        }
        free(fixed);
    }

    /* The same bytes in place of the cache file, read by a fresh cache. */
    FILE *f = fopen(fz_file, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    tilec_cache *c = NULL;
    if (tilec_cache_open(fz_dir, &c) != TILEC_RT_OK)
        abort();
    tilec_rt_status st = tilec_cache_get(c, KEY, &b);
    if (st == TILEC_RT_OK) {
        tilec_bundle_free(b);
    } else if (access(fz_file, F_OK) == 0) {
        abort(); /* a bad cache file is removed */
    }
    tilec_cache_close(c);
    return 0;
}
