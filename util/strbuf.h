/* strbuf.h: a growable heap string for building messages and output. */
#ifndef TILEC_UTIL_STRBUF_H
#define TILEC_UTIL_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct strbuf {
    char *s;     /* always NUL-terminated once anything was added */
    size_t n, cap;
    int failed;  /* an allocation failed; the content is incomplete */
} strbuf;

void sb_init(strbuf *b);
void sb_free(strbuf *b);
void sb_reset(strbuf *b);
void sb_add(strbuf *b, const char *s, size_t n);
void sb_puts(strbuf *b, const char *s);
void sb_putc(strbuf *b, char c);
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(strbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
const char *sb_str(strbuf *b); /* "" when empty */
char *sb_take(strbuf *b);      /* caller frees; the buffer is reset */
/* A set of lines kept in b: 1 when `key` (no newline) was not in it and is
 * now added, 0 when it was there already. */
int sb_set_add(strbuf *b, const char *key);

#endif
