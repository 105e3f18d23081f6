/* tilec.h: the public API of the tilec front end: parsing + checking a
 * .tile file into a module, and walking it. Statuses, contexts,
 * diagnostics and sinks are in tilec/core.h, which this header includes.
 *
 * Arguments, for every function of include/tilec/: a NULL pointer where an
 * object is needed, an index, variant or kind out of range, or a sink
 * without a write function is never a crash. Calls that return a status
 * return TILEC_ERR_ARG (TILEC_RT_INVALID_ARG in the runtime); accessors
 * return NULL or 0 (tilec_kernel_hint: dflt); free and clear functions do
 * nothing. tests/test_api_args.c calls every one of them that way. */
#ifndef TILEC_TILEC_H
#define TILEC_TILEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tilec/ast.h"
#include "tilec/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parse and check. On success *out is a module to free with
 * tilec_module_free(); on failure *out is NULL and the context holds the
 * diagnostics (TILEC_ERR_INPUT), or the status says what else failed.
 * `name` is the file name used in locations. */
tilec_status tilec_parse_file(tilec_ctx *ctx, const char *path, tilec_module **out);
tilec_status tilec_parse_string(tilec_ctx *ctx, const char *name, const char *text,
                                size_t len, tilec_module **out);
void tilec_module_free(tilec_module *m);

/* Walking a module. Items keep their source order. */
size_t tilec_module_item_count(const tilec_module *m);
const tilec_item *tilec_module_item(const tilec_module *m, size_t i);
size_t tilec_module_kernel_count(const tilec_module *m);
const tilec_kernel *tilec_module_kernel(const tilec_module *m, size_t i);
size_t tilec_module_extern_count(const tilec_module *m);
const tilec_extern *tilec_module_extern(const tilec_module *m, size_t i);
size_t tilec_module_graph_count(const tilec_module *m);
const tilec_graph *tilec_module_graph(const tilec_module *m, size_t i);
const tilec_kernel *tilec_module_find_kernel(const tilec_module *m, const char *name);
const tilec_extern *tilec_module_find_extern(const tilec_module *m, const char *name);
const tilec_graph *tilec_module_find_graph(const tilec_module *m, const char *name);
const char *tilec_module_file(const tilec_module *m);
/* The module's .tile text (len bytes, NUL-terminated). */
const char *tilec_module_source(const tilec_module *m, size_t *len);

/* The value of hint `name` for variant `variant` of kernel k (-1: the base
 * hints), after the variant's overrides; `dflt` when the hint is absent. */
int64_t tilec_kernel_hint(const tilec_kernel *k, int variant, const char *name, int64_t dflt);

/* Kernel k's parameters, for bindings that check arguments before a
 * launch: parameter i's name, whether it is a pointer (1; 2: a tensor
 * list [*T], docs/language.md §4.3), and its type (the element type of a
 * pointer or list). -1 when k is NULL or i out of range. */
size_t tilec_kernel_param_count(const tilec_kernel *k);
int tilec_kernel_param_info(const tilec_kernel *k, size_t i, const char **name, int *pointer, tilec_dtype *dtype);

/* Generic kernels (docs/language.md §4.2). The module's items hold their
 * instances (ordinary kernels named NAME__DTYPE); the kernel as written is
 * found by name here (NULL: no generic kernel of that name); any kernel's
 * name (NULL for NULL); a generic kernel's
 * instances in order (NULL past the last). For a generic kernel or an
 * instance: the number of type parameters, type parameter j's name and
 * (an instance) the dtype bound to it (-1 for the generic kernel), and the
 * type parameter that is the type of parameter i (-1: none). */
const tilec_kernel *tilec_module_find_generic(const tilec_module *m, const char *name);
const char *tilec_kernel_name(const tilec_kernel *k);
const tilec_kernel *tilec_kernel_instance(const tilec_kernel *g, size_t i);
size_t tilec_kernel_tparam_count(const tilec_kernel *k);
int tilec_kernel_tparam_info(const tilec_kernel *k, size_t j, const char **name, int *bound);
int tilec_kernel_param_tparam(const tilec_kernel *k, size_t i);

/* Write a stable text dump of the module (kernels with their checked types,
 * externs, graphs): the form of `tilec FILE --emit ast`. */
tilec_status tilec_module_dump_ast(const tilec_module *m, tilec_sink sink);

#ifdef __cplusplus
}
#endif
#endif
