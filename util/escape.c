/* escape.c: user text into generated C, CUDA and Python (escape.h). */
#include "util/escape.h"

void esc_c_comment(strbuf *b, const char *text)
{
    for (const char *p = text; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c == '*' && p[1] == '/') || (c == '/' && p[1] == '*'))
            sb_printf(b, "%c ", c); /* no end, and no nested start (-Wcomment) */
        else if (c < 0x20 || c == 0x7f || c == '\\' || c == '?')
            sb_putc(b, ' '); /* no newline, continuation or trigraph can leak out */
        else
            sb_putc(b, (char)c);
    }
}

void esc_c_string(strbuf *b, const char *s, size_t n)
{
    sb_puts(b, "\"");
    for (size_t i = 0, col = 0; i < n; i++, col++) {
        unsigned char c = (unsigned char)s[i];
        if (col >= 80) {
            sb_puts(b, "\"\n    \"");
            col = 0;
        }
        if (c == '"' || c == '\\')
            sb_printf(b, "\\%c", c);
        else if (c == '\n')
            sb_puts(b, "\\n");
        else if (c < 0x20 || c >= 0x7f || c == '?')
            sb_printf(b, "\\%03o", c);
        else
            sb_putc(b, (char)c);
    }
    sb_puts(b, "\"");
}

void esc_c_format(strbuf *b, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == '"' || *p == '\\')
            sb_printf(b, "\\%c", *p);
        else if (*p == '%')
            sb_puts(b, "%%");
        else if (*p == '\n')
            sb_puts(b, "\\n");
        else if (*p < 0x20 || *p >= 0x7f || *p == '?')
            sb_printf(b, "\\%03o", *p);
        else
            sb_putc(b, (char)*p);
    }
}

/* The length of the valid UTF-8 sequence at p (a non-ASCII lead byte), or 0. */
static int utf8_len(const unsigned char *p)
{
    int n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
    if (p[0] > 0xf4)
        return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if (n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0)))
        return 0; /* overlong, or a surrogate */
    if (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90)))
        return 0;
    return n;
}

void esc_py_text(strbuf *b, const char *text, int doc, const char *cont)
{
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        if (*p == '\n') {
            sb_puts(b, cont);
            p++;
        } else if (*p < 0x20 || *p == 0x7f) {
            sb_putc(b, ' ');
            p++;
        } else if (doc && (*p == '\\' || *p == '"')) {
            sb_putc(b, '\\');
            sb_putc(b, (char)*p++);
        } else if (*p >= 0x80) {
            int n = utf8_len(p);
            if (n)
                sb_add(b, (const char *)p, (size_t)n);
            else
                sb_putc(b, '?');
            p += n ? n : 1;
        } else {
            sb_putc(b, (char)*p++);
        }
    }
}

/* esc_py_str's loop; pct: '%' doubled (esc_py_format) */
static void py_str(strbuf *b, const char *s, int fstring, int pct)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (pct && *p == '%')
            sb_puts(b, "%%"), p++;
        else if (*p == '"' || *p == '\\')
            sb_printf(b, "\\%c", *p++);
        else if (*p == '\n')
            sb_puts(b, "\\n"), p++;
        else if (*p < 0x20 || *p == 0x7f)
            sb_printf(b, "\\x%02x", *p++);
        else if (fstring && (*p == '{' || *p == '}'))
            sb_putc(b, (char)*p), sb_putc(b, (char)*p++);
        else if (*p >= 0x80) {
            int n = utf8_len(p);
            if (n)
                sb_add(b, (const char *)p, (size_t)n);
            else
                sb_puts(b, "\\ufffd");
            p += n ? n : 1;
        } else
            sb_putc(b, (char)*p++);
    }
}

void esc_py_format(strbuf *b, const char *s) { py_str(b, s, 0, 1); }

void esc_py_str(strbuf *b, const char *s, int fstring) { py_str(b, s, fstring, 0); }

/* The bytes of the .tile source: one b"..." literal per source line. */
void esc_py_bytes(strbuf *b, const char *s, size_t n, const char *indent)
{
    sb_printf(b, "%sb\"", indent);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            sb_printf(b, "\\%c", c);
        else if (c == '\n') {
            sb_puts(b, "\\n\"");
            if (i + 1 < n)
                sb_printf(b, "\n%sb\"", indent);
            else
                return;
        } else if (c == '\t')
            sb_puts(b, "\\t");
        else if (c < 0x20 || c >= 0x7f)
            sb_printf(b, "\\x%02x", c);
        else
            sb_putc(b, (char)c);
    }
    sb_putc(b, '"');
}
