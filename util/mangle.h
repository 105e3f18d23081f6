/* mangle.h: the one spelling of a .tile name in each generated language.
 *
 * Every identifier that comes from a .tile file and reaches generated code
 * goes through one of these functions, so a name can never meet a keyword,
 * a builtin, a name of the generated code's own, or another .tile name.
 * Each mapping is injective by construction (docs/lowering.md "Names",
 * docs/emitters.md "Names"):
 *
 *   CUDA    every parameter, hint, let and loop variable is v_NAME: nothing
 *           in C++, CUDA or its headers starts with "v_", and the lowering's
 *           own names start with tl_. Kernel entry points are NAME_vN.
 *   C       one kind word per namespace, KIND_NAME (t tensor parameter,
 *           b buffer, s size symbol, p scalar parameter, out output, in and
 *           o in the benchmark main): the word before the first '_' tells
 *           the kind, so two kinds never meet, and the wrapper's own names
 *           are tl_NAME or one word without '_' (M, err, errlen, a, st, in,
 *           out, ...). A graph name is the prefix of the public functions
 *           (NAME_run): kept, or g_NAME when it starts with tl, tilec,
 *           TILEC, '_' or g_, or is the name of a C11, POSIX or CUDA header
 *           (its NAME.h would hide the system's under -I).
 *   Python  parameters and buffers (call()'s keyword arguments) are NAME,
 *           or NAME_ for a keyword, a builtin, a name of the wrapper, or a
 *           name that starts or ends with '_': a kept name never ends with
 *           '_' and a mangled one always does. The wrapper's per-name
 *           helpers are _NAME_KIND (size symbols _NAME_s, argument infos
 *           _NAME_info): they start with '_', so they are no kept name, and
 *           end with a letter, so they are no mangled one; KIND has no '_'.
 *           A graph's module file is NAME.py, or NAME_.py for those and
 *           for a standard-library module or a package the wrapper's
 *           users import (mg_py_module), so it never shadows one.
 */
#ifndef TILEC_UTIL_MANGLE_H
#define TILEC_UTIL_MANGLE_H

#include <stddef.h>

#include "util/strbuf.h"

/* CUDA: a kernel parameter, hint, let or loop variable. */
void mg_cuda(strbuf *b, const char *name);

/* C: the namespaces of a generated wrapper. ORDER: c_kind_word in mangle.c. */
typedef enum mg_c_kind {
    MG_C_TENSOR, /* t_NAME: a tensor parameter of NAME_run */
    MG_C_BUFFER, /* b_NAME: the descriptor of a buffer */
    MG_C_SYMBOL, /* s_NAME: a size symbol */
    MG_C_SCALAR, /* p_NAME: a scalar parameter */
    MG_C_OUTPUT, /* out_NAME: an output parameter of NAME_run */
    MG_C_BENCH_IN,  /* in_NAME: an input of the benchmark main */
    MG_C_BENCH_OUT, /* o_NAME: an output of the benchmark main */
    MG_C_LIST,      /* l_NAME: a tensor list parameter of NAME_run */
} mg_c_kind;

/* C: name (n bytes) in namespace kind. */
void mg_c(strbuf *b, mg_c_kind kind, const char *name, size_t n);
/* C: the prefix of a graph's public functions and files. */
void mg_c_graph(strbuf *b, const char *name);

/* Python: a parameter, buffer or graph name (n bytes). */
void mg_py(strbuf *b, const char *name, size_t n);
/* Python: the module (file) name of a graph: as mg_py, and a name of a
 * standard-library module or of tilec, torch, numpy or cupy gets a '_'
 * (graph functools writes functools_.py, which shadows nothing). */
void mg_py_module(strbuf *b, const char *name, size_t n);
/* Python: the wrapper's helper of kind ("s", "info", "copy": letters only) for name. */
void mg_py_helper(strbuf *b, const char *name, size_t n, const char *kind);

#endif
