/* bundle_seeds.c: writes valid bundles (1, 2 and 5 kernels, every
 * parameter kind, empty and long names) into DIR as seeds for
 * fuzz_bundle. Usage: bundle_seeds DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/cache.h"

static const char KEY[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bundle_seeds DIR\n");
        return 2;
    }
    static const unsigned counts[] = {1, 2, 5};
    char names[5][40];
    unsigned char images[5][64];
    tilec_bundle_kernel ks[5];
    for (unsigned s = 0; s < sizeof counts / sizeof counts[0]; s++) {
        memset(ks, 0, sizeof ks);
        for (unsigned i = 0; i < counts[s]; i++) {
            snprintf(names[i], sizeof names[i], i == 4 ? "a_rather_long_kernel_name_v%u" : "k%u", i);
            for (unsigned j = 0; j < sizeof images[i]; j++)
                images[i][j] = (unsigned char)(i * 31 + j);
            ks[i].name = names[i];
            ks[i].image = images[i];
            ks[i].size = 8 + 8 * i;
            ks[i].threads = 32u << i;
            ks[i].smem_bytes = 1024 * i;
            ks[i].nparams = i * 2 + 1;
            for (unsigned p = 0; p < ks[i].nparams; p++)
                ks[i].kinds[p] = (tilec_rt_param_kind)(p % TILEC_RT_PARAM_KIND_COUNT);
            ks[i].written = 1u << (i % ks[i].nparams);
            if (i == 1) { /* split-K */
                ks[i].split_k = 4;
                ks[i].split_bytes = 64 * 64 * 4;
            }
            if (i == 2 || i == 4) { /* a twin whose maps name parameters, one batched; the persistent one knows
                                     * its loop's trips (K, parameter 4, over 64) */
                static char twin[] = "k_tma";
                ks[i].twin = (tilec_tma_meta){.name = twin, .threads = 384, .smem_bytes = 99000, .nmaps = 2,
                                              .persistent = i == 4, .kbound = i == 4 ? 4 : TILEC_TMA_NONE,
                                              .kper = i == 4 ? 64 : 0};
                for (unsigned m = 0; m < 2; m++)
                    ks[i].twin.maps[m] = (tilec_tma_map){.ptr = m, .rows = 3, .cols = 4, .stride = 4, .box_rows = 64,
                                                         .box_cols = 64, .elem_bytes = 2, .batched = m,
                                                         .bs = {m ? 3 : TILEC_TMA_NONE, TILEC_TMA_NONE},
                                                         .bgrid = m ? 2 : 0, .bscale = m};
            }
        }
        tilec_bundle b = {counts[s], ks};
        void *buf = NULL;
        size_t len = 0;
        if (tilec_bundle_serialize(&b, KEY, &buf, &len) != TILEC_RT_OK) {
            fprintf(stderr, "bundle_seeds: serialize failed\n");
            return 1;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/bundle%u", argv[1], counts[s]);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
            fprintf(stderr, "bundle_seeds: cannot write %s\n", path);
            return 1;
        }
        free(buf);
    }
    return 0;
}
