/* choice_entry.h: the multi-kernel's stored choices (choice_entry.c), the
 * one place where a choice meets the cache's tiers: the directory's file
 * <dir>/multikernel-<hash>.choice and, when TILEC_CACHE_REDIS names a
 * tier, the value "tilec:choice-<hash>" there. <hash> (40 hex digits) is
 * the choice's whole key: the program's bundle key (the kernels' sources,
 * so the kernel and its variant set), the kernel's name and variant count,
 * the device model's name, the driver's version and the shape key
 * (multikernel.c's choice_hash). An entry is one line,
 * "tilec multi-kernel choice 2 <v> <hash> <sum>\n", <sum> the XXH64 of
 * "<v> <hash>" in 16 hex digits: an entry served for another key, or torn,
 * or any other bytes, is refused and the shape timed again. */
#ifndef TILEC_RUNTIME_CHOICE_ENTRY_H
#define TILEC_RUNTIME_CHOICE_ENTRY_H

#include <stdint.h>

#include "runtime/cache_remote.h"

typedef enum { CHOICE_NONE, CHOICE_DISK, CHOICE_REDIS } choice_where;

/* Where choices live: a directory ("" for none) and the Redis tier, opened
 * on first use from the environment (cache_remote_from_env) and owned. */
typedef struct choice_store {
    const char *dir;
    cache_remote *remote;
    int remote_tried;
} choice_store;

/* The variant stored under hash (0 .. nvariants - 1): the directory
 * first, then Redis (a Redis hit is copied to the directory). -1 when
 * none; *where says which tier answered; refused says why an entry was
 * refused ("" when none was). */
int choice_get(choice_store *s, const char *hash, uint32_t nvariants, choice_where *where, char *refused,
               size_t refused_size);
/* Store v under hash in the directory (atomically) and Redis (when it
 * may be written). Failures are silent: a lost choice is only timed
 * again. */
void choice_put(choice_store *s, const char *hash, int v);
void choice_store_close(choice_store *s);

#endif
