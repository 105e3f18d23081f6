/* strbuf.c: a growable heap string. */
#include "util/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_init(strbuf *b) { memset(b, 0, sizeof *b); }
void sb_free(strbuf *b) { free(b->s); sb_init(b); }
void sb_reset(strbuf *b)
{
    b->n = 0;
    if (b->s)
        b->s[0] = 0;
    b->failed = 0;
}

static int sb_grow(strbuf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (extra > SIZE_MAX / 2 - b->n) {
        b->failed = 1;
        return -1;
    }
    size_t need = b->n + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->failed = 1;
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

void sb_add(strbuf *b, const char *s, size_t n)
{
    if (sb_grow(b, n))
        return;
    if (n)
        memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

void sb_puts(strbuf *b, const char *s) { sb_add(b, s, strlen(s)); }
void sb_putc(strbuf *b, char c) { sb_add(b, &c, 1); }

void sb_vprintf(strbuf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || sb_grow(b, (size_t)n))
        return;
    vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
    b->n += (size_t)n;
}

void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

const char *sb_str(strbuf *b) { return b->s ? b->s : ""; }

char *sb_take(strbuf *b)
{
    char *s = b->s;
    if (!s)
        s = calloc(1, 1);
    sb_init(b);
    return s;
}

int sb_set_add(strbuf *b, const char *key)
{
    size_t k = strlen(key);
    for (const char *p = b->s; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n == k && !memcmp(p, key, k))
            return 0;
        p += n + (nl != NULL);
    }
    sb_puts(b, key);
    sb_putc(b, '\n');
    return 1;
}
