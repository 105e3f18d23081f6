/* arena.c: bump allocator in chunks; one ar_free() releases everything. */
#include "util/arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ar_chunk {
    ar_chunk *next;
    size_t cap;
    _Alignas(16) unsigned char data[];
};

enum { AR_MIN_CHUNK = 64 * 1024 };

void ar_init(arena *a) { memset(a, 0, sizeof *a); }

void ar_free(arena *a)
{
    ar_chunk *c = a->head;
    while (c) {
        ar_chunk *next = c->next;
        free(c);
        c = next;
    }
    ar_init(a);
}

void *ar_alloc(arena *a, size_t n)
{
    if (a->failed)
        return NULL;
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    if (!a->head || a->cap - a->used < n) {
        size_t cap = n > AR_MIN_CHUNK ? n : AR_MIN_CHUNK;
        if (cap > SIZE_MAX - sizeof(ar_chunk)) {
            a->failed = 1;
            return NULL;
        }
        ar_chunk *c = malloc(sizeof(ar_chunk) + cap);
        if (!c) {
            a->failed = 1;
            return NULL;
        }
        c->cap = cap;
        c->next = a->head;
        a->head = c;
        a->used = 0;
        a->cap = cap;
    }
    void *p = a->head->data + a->used;
    a->used += n;
    memset(p, 0, n);
    return p;
}

void *ar_array(arena *a, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) {
        a->failed = 1;
        return NULL;
    }
    return ar_alloc(a, count * size);
}

char *ar_strndup(arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX) {
        a->failed = 1;
        return NULL;
    }
    char *p = ar_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

char *ar_strdup(arena *a, const char *s) { return ar_strndup(a, s, strlen(s)); }

char *ar_printf(arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = ar_alloc(a, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

int ar_vec_push(arena *a, ar_vec *vec, void *item)
{
    if (vec->n == vec->cap) {
        uint32_t cap = vec->cap ? vec->cap * 2 : 4;
        if (cap < vec->cap)
            return -1;
        void **v = ar_array(a, cap, sizeof *v);
        if (!v)
            return -1;
        if (vec->n)
            memcpy(v, vec->v, vec->n * sizeof *v);
        vec->v = v;
        vec->cap = cap;
    }
    vec->v[vec->n++] = item;
    return 0;
}
