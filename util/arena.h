/* arena.h: one arena per lifetime (a module, a lowering); freed in one call. */
#ifndef TILEC_UTIL_ARENA_H
#define TILEC_UTIL_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct ar_chunk ar_chunk;
typedef struct arena {
    ar_chunk *head;
    size_t used, cap; /* within head */
    int failed;       /* an allocation failed; every later one returns NULL too */
} arena;

void ar_init(arena *a);
void ar_free(arena *a);
/* Zeroed memory aligned to 16 bytes, or NULL when out of memory (sticky). */
void *ar_alloc(arena *a, size_t n);
void *ar_array(arena *a, size_t count, size_t size);
char *ar_strndup(arena *a, const char *s, size_t n);
char *ar_strdup(arena *a, const char *s);
char *ar_printf(arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A growable array of pointers living in an arena. */
typedef struct ar_vec {
    void **v;
    uint32_t n, cap;
} ar_vec;
int ar_vec_push(arena *a, ar_vec *vec, void *item); /* 0 ok, -1 out of memory */

#endif
