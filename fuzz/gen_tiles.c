/* gen_tiles.c: `gen_tiles N DIR [SEED]` writes N generated modules
 * (fuzz/gen_kernel.c) as DIR/gen0000.tile ..., each from 1024 bytes of a
 * xorshift stream seeded with SEED (default 1) and the file's number, so a
 * failing file can be made again by its number. tools/gen_nvrtc.sh runs
 * them through the checker, NVRTC, cc and Python. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz/gen_kernel.h"

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gen_tiles N DIR [SEED]\n");
        return 2;
    }
    long n = strtol(argv[1], NULL, 10);
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    for (long i = 0; i < n; i++) {
        uint64_t s = (seed * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)i * 0xD1B54A32D192ED03ull) ^ 0x5bd1e995u;
        for (int w = 0; w < 8; w++)
            next(&s);
        uint8_t bytes[1024];
        for (size_t j = 0; j < sizeof bytes; j++)
            bytes[j] = (uint8_t)(next(&s) >> 24);
        char *text = gen_kernel(bytes, sizeof bytes), path[4096];
        if (!text) {
            fprintf(stderr, "gen_tiles: out of memory\n");
            return 1;
        }
        snprintf(path, sizeof path, "%s/gen%04ld.tile", argv[2], i);
        FILE *f = fopen(path, "w");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
            perror(path);
            free(text);
            return 1;
        }
        free(text);
    }
    return 0;
}
