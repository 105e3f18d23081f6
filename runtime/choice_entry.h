/* choice_entry.h: the multi-kernel's stored choices (choice_entry.c), an
 * entry kind of the kernel cache (cache_kind_choice, cache_tier.h) walked
 * through its tiers like bundles and records: in the directory the file
 * <dir>/multikernel-<hash>.choice and, when TILEC_CACHE_REDIS names a
 * tier, the value "tilec:choice-<hash>" there (and the memory tier). <hash>
 * (40 hex digits) is the choice's whole key: the program's bundle key (the
 * kernels' sources, so the kernel and its variant set), the kernel's name
 * and variant count, the device model's name, the driver's version and the
 * shape key (multikernel.c's choice_hash). An entry is one line,
 * "tilec multi-kernel choice 2 <v> <hash> <sum>\n", <sum> the XXH64 of
 * "<v> <hash>" in 16 hex digits: an entry served for another key, or torn,
 * or any other bytes, is refused and the shape timed again.
 *
 * A program may outlive the tilec_cache it was built with (the caller
 * closes it when the build returns), so the choices walk the tiers of a
 * cache handle of the program's own: opened on the built cache's
 * directory (tilec_cache_open, with the same TILEC_CACHE_REDIS) on the
 * first shape that is not in memory, closed with the program. Borrowing
 * the build's handle would need a reference count on tilec_cache, a
 * public lifetime change; a second handle on one directory is what two
 * processes sharing it already are. */
#ifndef TILEC_RUNTIME_CHOICE_ENTRY_H
#define TILEC_RUNTIME_CHOICE_ENTRY_H

#include <stdint.h>

#include "runtime/cache_tier.h"

/* Where choices live: a directory ("" for none) and the program's own
 * cache handle on it, opened on first use and owned. Its calls come one
 * at a time (multikernel.c holds the program's mk_tune). */
typedef struct choice_store {
    const char *dir;
    tilec_cache *cache;
    int tried;
    uint32_t nvariants; /* the kernel of the lookup in progress: kind.arg */
    cache_kind kind;    /* cache_kind_choice with arg &nvariants; the memory tier keeps a pointer to it */
} choice_store;

/* The variant stored under hash (0 .. nvariants - 1) from the first tier
 * that has a valid entry (the directory, then Redis; a hit is copied to
 * the tiers before it). -1 when none; *from names the tier that answered
 * ("memory", "disk", "redis"; NULL when none); refused says why an entry
 * was refused ("" when none was). */
int choice_get(choice_store *s, const char *hash, uint32_t nvariants, const char **from, char *refused,
               size_t refused_size);
/* Store v under hash in every tier (the directory atomically; Redis when
 * it may be written). Failures are silent: a lost choice is only timed
 * again. */
void choice_put(choice_store *s, const char *hash, int v);
/* Walk c's tiers from now on (c owned; the first lookup opens one on dir
 * otherwise; a test hands one with a tier of its own). */
void choice_store_use(choice_store *s, tilec_cache *c);
void choice_store_close(choice_store *s);

#endif
