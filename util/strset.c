/* strset.c: a set of strings found by hash (see strset.h). */
#include <stdlib.h>
#include <string.h>

#include "util/strset.h"

#define uthash_nonfatal_oom(e) ((void)0)
#include "util/hashtable.h"

struct strset_item {
    UT_hash_handle hh;
    char key[];
};

int strset_add(strset *s, const char *key)
{
    strset_item *k = NULL;
    size_t n = strlen(key);
    HASH_FIND(hh, s->items, key, n, k);
    if (k)
        return 0;
    if (!(k = malloc(sizeof *k + n + 1))) {
        s->failed = 1;
        return 0;
    }
    memcpy(k->key, key, n + 1);
    HASH_ADD_KEYPTR(hh, s->items, k->key, n, k);
    if (!k->hh.tbl) {
        free(k);
        s->failed = 1;
        return 0;
    }
    return 1;
}

void strset_free(strset *s)
{
    strset_item *k, *tmp;
    HASH_ITER(hh, s->items, k, tmp) {
        HASH_DEL(s->items, k);
        free(k);
    }
    s->items = NULL;
}
