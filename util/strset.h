/* strset.h: a set of strings found by hash (uthash), for emitters that
 * must do something once per key without a quadratic scan. */
#ifndef TILEC_UTIL_STRSET_H
#define TILEC_UTIL_STRSET_H

typedef struct strset_item strset_item;

typedef struct strset {
    strset_item *items;
    int failed; /* an allocation failed */
} strset;

/* 1 when key was not in s and is now added; 0 when it was (or when out of
 * memory: s->failed is then set). A zeroed strset is empty. */
int strset_add(strset *s, const char *key);
void strset_free(strset *s);

#endif
