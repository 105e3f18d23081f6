/* escape.h: the one way each kind of user text (file names, doc comments,
 * extern symbols, the .tile source) gets into generated text, per target.
 * Names are not text: they go through util/mangle.h. docs/emitters.md
 * "Text from the .tile file" says what each escape guarantees. */
#ifndef TILEC_UTIL_ESCAPE_H
#define TILEC_UTIL_ESCAPE_H

#include <stddef.h>

#include "util/strbuf.h"

/* C and CUDA: text for inside a block or line comment. Nothing can end the
 * comment, start a nested one, or continue or break its line: "*" "/" and
 * "/" "*" are split by a space; control bytes, backslashes and '?'
 * (trigraphs) become spaces. */
void esc_c_comment(strbuf *b, const char *text);
/* C and CUDA: a string literal "..." of any n bytes: quotes, backslashes
 * and '?' escaped, bytes outside printable ASCII in octal, split every 80
 * bytes. */
void esc_c_string(strbuf *b, const char *s, size_t n);
/* C: text inside the format string literal of a printf-like call: as
 * esc_c_string's inside (no quotes, no line splits), '%' doubled, so a
 * size expression such as T % 128 names itself in a message. */
void esc_c_format(strbuf *b, const char *text);

/* Python: text for a comment (doc == 0) or a docstring (doc != 0): control
 * bytes become spaces, invalid UTF-8 '?', a newline becomes `cont`; in a
 * docstring '\' and '"' are escaped, so nothing can end it. */
void esc_py_text(strbuf *b, const char *text, int doc, const char *cont);
/* Python: the inside of a "..." str literal (of an f-string when fstring:
 * braces doubled): quotes, backslashes and control bytes escaped, invalid
 * UTF-8 as U+FFFD. */
void esc_py_str(strbuf *b, const char *s, int fstring);
/* Python: the inside of a "..." str literal that is the left operand of
 * '%' formatting: as esc_py_str's, '%' doubled. */
void esc_py_format(strbuf *b, const char *s);
/* Python: n bytes as b"..." literals, one per line of s, each on its own
 * line after `indent`. */
void esc_py_bytes(strbuf *b, const char *s, size_t n, const char *indent);

#endif
