/* print.c: the stable text form of wrapper IR (`tilec FILE --emit ir`),
 * written through the hook table like any emitter (the built-in "ir"
 * emitter, NAME.ir per graph), and `--emit ir` on the one graph pipeline
 * (emit.c's wir_each_graph) with its sizes and peak bytes.
 *
 * The form, one IR line per text line, each ending in "  @line:col" (the
 * .tile location), sizes as canonical polynomials ("4*R*C"):
 *
 *   graph NAME(x: f32[R, C], alpha: f32)              the header
 *   kernel K (N variant[s])                           KERNEL_DEF
 *   assert_shape x: f32[R, C] binds R, C              ASSERT_SHAPE ("binds" lists the
 *                                                     symbols bound here; others are checked)
 *   make_list sublist0: [*f32] = ps[0:k]              MAKE_LIST (a sub-list, passed to the next call)
 *   list_of ws: [*f32] = [a, b]                       LIST_OF (a list of the graph's tensors)
 *   assert_list ps: [*f32]                            ASSERT_LIST (a tensor list parameter; a call
 *                                                     names it as an argument, whole)
 *   # text                                            COMMENT (\\ and control bytes escaped)
 *   alloc t: f32[R, C] (4*R*C bytes)                  ALLOCATE (row-major, device 0, align 256;
 *                                                     " dev1" / " align N" only when otherwise)
 *   alloc z: f32[N] (4*N bytes) fill 0               ALLOCATE of zeros, ones, full: every
 *                                                     element starts as the value
 *   reuse u <- t: f32[R, C] (4*R*C bytes)             REUSE: u takes over t's storage (and its fill)
 *   free_if_not_reused t                              FREE_IF_NOT_REUSED
 *   free t                                            FREE
 *   view v = y as f32[R*C] strides [1] offset 0       REINTERPRET
 *   view c = x[C*i:C*i+C] as f32[C, H] strides [H, 1] offset C*H*i     REINTERPRET of a slice
 *   view w = xs[i] as f32[O, I] strides [I, 1] offset 0   REINTERPRET of one tensor of a list
 *                                                     (checked 0 <= start <= stop <= the axis' size)
 *   for i in 0 .. n step 1                            LOOP (the lines up to its end_for repeat)
 *   end_for i                                         END_LOOP
 *   call K_v0 grid(cdiv(n, BLOCK)) (x, t, R*C, 0.5)   KERNEL_CALL (K_v* when the runtime picks
 *                                                     one of several variants)
 *   extern_call E "sym" (a, b) writes (a, b)          EXTERN_CALL
 *   wait y (overlapped: h2, gelu, p2)                 EXTERN_CALL of a collective's wait
 *   extern_alloc h: f32[M, N] (4*M*N bytes) = E "sym" (a, b)      EXTERN_ALLOC, one result
 *   extern_alloc tuple0 = E "sym" (a) -> 2 results    EXTERN_ALLOC, several results
 *   multi_output s = tuple0[0]: f32[R] (4*R bytes)    MULTI_OUTPUT
 *   collective y = all_reduce(x, sum): f32[R, C] (4*C*R bytes)      COLLECTIVE (the result is a
 *                                                     new buffer; also all_gather(x, axis 0),
 *                                                     reduce_scatter(x, sum, axis 0), broadcast(x, root 0))
 *   return y, s                                       the outputs
 */
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "parser/graph_coll.h"
#include "util/strbuf.h"
#include "tilec/emitter.h"
#include "wrapper_ir/emit.h"
#include "wrapper_ir/registry.h"
#include "wrapper_ir/wir.h"

static void escaped(strbuf *b, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\')
            sb_puts(b, "\\\\");
        else if (c < 0x20 || c == 0x7f)
            sb_printf(b, "\\x%02x", c);
        else
            sb_putc(b, (char)c);
    }
}

static void quoted(strbuf *b, const char *s)
{
    sb_putc(b, '"');
    for (; s && *s; s++) {
        if (*s == '"')
            sb_puts(b, "\\\"");
        else
            escaped(b, (char[]){*s, 0});
    }
    sb_putc(b, '"');
}

static void shape(strbuf *b, const tilec_wir_line *l)
{
    sb_printf(b, "%s[", tilec_dtype_name(l->dtype));
    for (uint32_t d = 0; d < l->rank; d++)
        sb_printf(b, "%s%s", d ? ", " : "", l->sizes[d]);
    sb_putc(b, ']');
}

static void storage(strbuf *b, const tilec_wir_line *l)
{
    sb_puts(b, ": ");
    shape(b, l);
    sb_printf(b, " (%s bytes)", l->bytes);
    if (l->device != WIR_DEVICE)
        sb_printf(b, " dev%d", l->device);
    if (l->align != WIR_ALIGN)
        sb_printf(b, " align %u", l->align);
}

static void args(strbuf *b, const tilec_wir_arg *a, uint32_t n)
{
    sb_puts(b, " (");
    for (uint32_t i = 0; i < n; i++)
        sb_printf(b, "%s%s", i ? ", " : "", a[i].text);
    sb_putc(b, ')');
}

static int end(strbuf *b, const tilec_wir_line *l)
{
    sb_printf(b, "  @%u:%u\n", l->loc.line, l->loc.col);
    return b->failed;
}

static int p_comment(void *u, const tilec_wir_line *l)
{
    sb_puts(u, "# ");
    escaped(u, l->text);
    return end(u, l);
}

static int p_kernel_def(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "kernel %s (%u variant%s)", l->name, l->nvariants, l->nvariants == 1 ? "" : "s");
    return end(u, l);
}

/* the storage of an ALLOCATE or REUSE, and its fill */
static int filled(strbuf *b, const tilec_wir_line *l)
{
    storage(b, l);
    if (l->fill)
        sb_printf(b, " fill %s", l->fill);
    return end(b, l);
}

static int p_allocate(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "alloc %s", l->name);
    return filled(u, l);
}

static int p_reuse(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "reuse %s <- %s", l->name, l->from);
    return filled(u, l);
}

static int p_free_if_not_reused(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "free_if_not_reused %s", l->name);
    return end(u, l);
}

static int p_free(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "free %s", l->name);
    return end(u, l);
}

static int p_reinterpret(void *u, const tilec_wir_line *l)
{
    if (l->nargs == 1 && l->args[0].kind == TILEC_WIR_ARG_ITEM) /* one tensor of a list: view w = xs[i] */
        sb_printf(u, "view %s = %s", l->name, l->args[0].text);
    else
        sb_printf(u, "view %s = %s", l->name, l->from);
    if (l->nargs == 3) { /* a slice: start, stop, the axis' size */
        sb_putc(u, '[');
        for (uint32_t d = 0; d < l->index; d++)
            sb_puts(u, ":, ");
        sb_printf(u, "%s:%s]", l->args[0].text, l->args[1].text);
    }
    sb_puts(u, " as ");
    shape(u, l);
    sb_puts(u, " strides [");
    for (uint32_t d = 0; d < l->rank; d++)
        sb_printf(u, "%s%s", d ? ", " : "", l->strides[d]);
    sb_printf(u, "] offset %s", l->offset);
    return end(u, l);
}

static int p_kernel_call(void *u, const tilec_wir_line *l)
{
    if (l->nvariants == 1)
        sb_printf(u, "call %s_v0", l->name);
    else
        sb_printf(u, "call %s_v*", l->name);
    sb_printf(u, " grid(%s)", l->grid);
    args(u, l->args, l->nargs);
    return end(u, l);
}

static int p_extern_call(void *u, const tilec_wir_line *l)
{
    if (tilec_wir_is_wait(l)) {
        sb_printf(u, "wait %s", l->name);
        if (l->text && *l->text)
            sb_printf(u, " (overlapped: %s)", l->text);
        return end(u, l);
    }
    sb_printf(u, "extern_call %s ", l->name);
    quoted(u, l->symbol);
    args(u, l->args, l->nargs);
    sb_puts(u, " writes (");
    for (uint32_t i = 0; i < l->nouts; i++)
        sb_printf(u, "%s%s", i ? ", " : "", l->outs[i]);
    sb_putc(u, ')');
    return end(u, l);
}

static int p_extern_alloc(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "extern_alloc %s", l->name);
    if (l->bytes)
        storage(u, l);
    sb_printf(u, " = %s ", l->ext ? l->ext->name : "?");
    quoted(u, l->symbol);
    args(u, l->args, l->nargs);
    if (!l->bytes)
        sb_printf(u, " -> %u results", l->nresults);
    return end(u, l);
}

static int p_multi_output(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "multi_output %s = %s[%u]", l->name, l->from, l->index);
    storage(u, l);
    return end(u, l);
}

static int p_collective(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "collective %s = %s(%s", l->name, tilec_coll_name(l->coll), l->from);
    if (l->coll == TILEC_COLL_ALL_REDUCE || l->coll == TILEC_COLL_REDUCE_SCATTER)
        sb_printf(u, ", %s", tilec_redop_name(l->redop));
    if (l->coll == TILEC_COLL_ALL_GATHER || l->coll == TILEC_COLL_REDUCE_SCATTER)
        sb_printf(u, ", axis %u", l->index);
    if (l->coll == TILEC_COLL_BROADCAST)
        sb_printf(u, ", root %lld", (long long)l->root);
    sb_putc(u, ')');
    storage(u, l);
    return end(u, l);
}

static int p_loop(void *u, const tilec_wir_line *l)
{
    if (l->nargs != 3)
        return 1;
    sb_printf(u, "for %s in %s .. %s step %s", l->name, l->args[0].text, l->args[1].text, l->args[2].text);
    return end(u, l);
}

static int p_end_loop(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "end_for %s", l->name);
    return end(u, l);
}

static int p_assert_shape(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "assert_shape %s: ", l->name);
    shape(u, l);
    const char *sep = " binds ";
    for (uint32_t d = 0; d < l->rank; d++)
        if (l->binds[d]) {
            sb_printf(u, "%s%s", sep, l->sizes[d]);
            sep = ", ";
        }
    return end(u, l);
}

static int p_assert_list(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "assert_list %s: [*%s]", l->name, tilec_dtype_name(l->dtype));
    return end(u, l);
}

static int p_make_list(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "make_list %s: [*%s] = %s[%s:%s]", l->name, tilec_dtype_name(l->dtype), l->from,
              l->nargs ? l->args[0].text : "?", l->nargs > 1 ? l->args[1].text : "");
    return end(u, l);
}

static int p_list_of(void *u, const tilec_wir_line *l)
{
    sb_printf(u, "list_of %s: [*%s] = [", l->name, tilec_dtype_name(l->dtype));
    for (uint32_t i = 0; i < l->nargs; i++)
        sb_printf(u, "%s%s", i ? ", " : "", l->args[i].text);
    sb_putc(u, ']');
    return end(u, l);
}

#define TEXT_HOOKS                                                                                       \
    .comment = p_comment, .kernel_def = p_kernel_def, .allocate = p_allocate, .reuse = p_reuse,          \
    .free_if_not_reused = p_free_if_not_reused, .free = p_free, .reinterpret = p_reinterpret,            \
    .kernel_call = p_kernel_call, .extern_call = p_extern_call, .extern_alloc = p_extern_alloc,          \
    .multi_output = p_multi_output, .assert_shape = p_assert_shape, .collective = p_collective,          \
    .loop = p_loop, .end_loop = p_end_loop, .assert_list = p_assert_list, .make_list = p_make_list, \
    .list_of = p_list_of

const tilec_wir_hooks wir_text_hooks = {
    .comment = p_comment,
    .kernel_def = p_kernel_def,
    .allocate = p_allocate,
    .reuse = p_reuse,
    .free_if_not_reused = p_free_if_not_reused,
    .free = p_free,
    .reinterpret = p_reinterpret,
    .kernel_call = p_kernel_call,
    .extern_call = p_extern_call,
    .extern_alloc = p_extern_alloc,
    .multi_output = p_multi_output,
    .assert_shape = p_assert_shape,
    .collective = p_collective,
    .loop = p_loop,
    .end_loop = p_end_loop,
    .assert_list = p_assert_list,
    .make_list = p_make_list,
    .list_of = p_list_of,
};

void wir_text_header(strbuf *b, const tilec_wir *w)
{
    const tilec_graph *g = w->graph;
    sb_printf(b, "graph %s(", g->name);
    for (uint32_t i = 0; i < g->nparams; i++) {
        const tilec_param *p = &g->params[i];
        int list = p->type.kind == TILEC_TE_LIST;
        sb_printf(b, "%s%s%s: %s%s%s", i ? ", " : "", p->out ? "out " : "", p->name, list ? "[*" : "",
                  tilec_dtype_name(p->type.dtype), list ? "]" : "");
        if (p->type.kind != TILEC_TE_TENSOR)
            continue;
        const tilec_wir_line *a = tilec_wir_input_shape(w, i);
        sb_putc(b, '[');
        for (uint32_t d = 0; a && d < a->rank; d++)
            sb_printf(b, "%s%s", d ? ", " : "", a->sizes[d]);
        sb_putc(b, ']');
    }
    sb_printf(b, ")  @%u:%u\n", g->loc.line, g->loc.col);
}

/* The text form into b; nonzero when a hook failed. */
static int print_into(strbuf *b, const tilec_wir *w)
{
    uint32_t at;
    wir_text_header(b, w);
    if (wir_each_line(w, &wir_text_hooks, b, &at))
        return 1;
    wir_text_return(b, w);
    return b->failed;
}

void wir_text_return(strbuf *b, const tilec_wir *w)
{
    sb_puts(b, "return");
    for (uint32_t i = 0; i < w->noutputs; i++)
        sb_printf(b, "%s%s", i ? ", " : " ", w->outputs[i]);
    sb_printf(b, "  @%u:%u\n", w->ret_loc.line, w->ret_loc.col);
}

static tilec_status flush(strbuf *b, tilec_sink sink)
{
    tilec_status st = TILEC_OK;
    if (b->failed)
        st = TILEC_ERR_NOMEM;
    else if (b->n && sink.write(sink.user, b->s, b->n))
        st = TILEC_ERR_IO;
    sb_free(b);
    return st;
}

tilec_status tilec_wir_print(const tilec_wir *w, tilec_sink sink)
{
    if (!w || !sink.write)
        return TILEC_ERR_ARG;
    strbuf b;
    sb_init(&b);
    print_into(&b, w);
    return flush(&b, sink);
}

/* The size names the graphs of m know: the symbols of their tensor
 * parameters and their integer scalar parameters (and world in a graph
 * with collectives), one a line in `known`. */
static void size_names(const tilec_module *m, strbuf *known)
{
    for (size_t i = 0; i < tilec_module_graph_count(m); i++) {
        const tilec_graph *g = tilec_module_graph(m, i);
        if (gc_graph_has(g)) /* the communicator's size */
            sb_set_add(known, GC_WORLD);
        for (uint32_t p = 0; p < g->nparams; p++) {
            const tilec_tyexpr *t = &g->params[p].type;
            char cls = tilec_dtype_class(t->dtype);
            if (t->kind == TILEC_TE_SCALAR && (cls == 's' || cls == 'u'))
                sb_set_add(known, g->params[p].name);
            for (uint32_t d = 0; t->kind == TILEC_TE_TENSOR && d < t->ndims; d++)
                if (t->dims[d]->kind == TILEC_EX_NAME)
                    sb_set_add(known, t->dims[d]->name);
        }
    }
}

/* Every name in sizes must be one the module knows: a typo is an error
 * that names it and lists the known names, never a silently ignored size. */
tilec_status tilec_module_check_sizes(tilec_ctx *ctx, const tilec_module *m, const tilec_wir_size *sizes, size_t n)
{
    if (!ctx || !m || (!sizes && n))
        return TILEC_ERR_ARG;
    strbuf known;
    sb_init(&known);
    size_names(m, &known);
    tilec_status st = known.failed ? TILEC_ERR_NOMEM : TILEC_OK;
    for (size_t k = 0; k < n && st == TILEC_OK; k++) {
        const char *s = sb_str(&known);
        size_t l = strnlen(sizes[k].name, sizeof sizes[k].name);
        int found = 0;
        for (const char *p = s; *p && !found; p = strchr(p, '\n') + 1)
            found = !strncmp(p, sizes[k].name, l) && p[l] == '\n';
        if (found)
            continue;
        strbuf list;
        sb_init(&list);
        for (const char *p = s; *p; p = strchr(p, '\n') + 1)
            sb_printf(&list, "%s%.*s", list.n ? ", " : "", (int)(strchr(p, '\n') - p), p);
        dsl_source src = {tilec_module_file(m), "", 0};
        diag_at(ctx, &src, NULL, TILEC_SEV_ERROR, "--sizes names '%.*s', which no graph of the module has (known: %s)",
                (int)l, sizes[k].name, list.n ? sb_str(&list) : "none");
        sb_free(&list);
        st = TILEC_ERR_INPUT;
    }
    sb_free(&known);
    return st;
}

/* `--emit ir` on the graph pipeline (emit.c): each graph's peak bytes
 * before planning, its text and its peaks after. */
typedef struct ir_pass {
    tilec_ctx *ctx;
    strbuf *b;
    int plan;
    const tilec_wir_size *sizes;
    size_t nsizes;
    int64_t before, live;
} ir_pass;

static tilec_status ir_unplanned(void *user, tilec_wir *w, size_t index)
{
    (void)index;
    ir_pass *p = user;
    tilec_status st = TILEC_OK;
    if (p->nsizes)
        st = tilec_wir_peak_bytes(p->ctx, w, TILEC_WIR_PEAK_RESERVED, p->sizes, p->nsizes, &p->before);
    if (st == TILEC_OK && p->nsizes)
        st = tilec_wir_peak_bytes(p->ctx, w, TILEC_WIR_PEAK_LIVE, p->sizes, p->nsizes, &p->live);
    return st;
}

static tilec_status ir_graph(void *user, tilec_wir *w, size_t index)
{
    ir_pass *p = user;
    strbuf *b = p->b;
    int64_t after = 0;
    tilec_status st = TILEC_OK;
    if (p->nsizes)
        st = tilec_wir_peak_bytes(p->ctx, w, TILEC_WIR_PEAK_RESERVED, p->sizes, p->nsizes, &after);
    if (st != TILEC_OK)
        return st;
    if (index)
        sb_putc(b, '\n');
    print_into(b, w);
    if (p->nsizes) {
        sb_puts(b, "peak bytes with");
        for (size_t k = 0; k < p->nsizes; k++)
            sb_printf(b, "%s%s=%lld", k ? ", " : " ", p->sizes[k].name, (long long)p->sizes[k].value);
        if (p->plan)
            sb_printf(b, ": %lld planned, %lld unplanned, %lld live\n", (long long)after, (long long)p->before,
                      (long long)p->live);
        else
            sb_printf(b, ": %lld unplanned, %lld live\n", (long long)p->before, (long long)p->live);
    }
    return TILEC_OK;
}

tilec_status tilec_module_emit_ir(tilec_ctx *ctx, const tilec_module *m, int plan, const tilec_wir_size *sizes,
                                  size_t nsizes, tilec_sink sink)
{
    if (!ctx || !m || !sink.write || (!sizes && nsizes))
        return TILEC_ERR_ARG;
    tilec_status st = tilec_module_check_sizes(ctx, m, sizes, nsizes);
    if (st != TILEC_OK)
        return st;
    strbuf b;
    sb_init(&b);
    ir_pass p = {.ctx = ctx, .b = &b, .plan = plan, .sizes = sizes, .nsizes = nsizes};
    st = wir_each_graph(ctx, m, plan, ir_unplanned, ir_graph, &p);
    if (st != TILEC_OK) {
        sb_free(&b);
        return st;
    }
    return flush(&b, sink);
}

/* ---- the built-in "ir" emitter: the text form, NAME.ir per graph ---- */

static int ir_begin(tilec_emit *e, void **state)
{
    strbuf *b = malloc(sizeof *b);
    if (!b)
        return -1;
    sb_init(b);
    wir_text_header(b, tilec_emit_wir(e));
    *state = b;
    return 0;
}

static int ir_end(tilec_emit *e, void *state)
{
    strbuf *b = state;
    wir_text_return(b, tilec_emit_wir(e));
    char file[300];
    snprintf(file, sizeof file, "%.250s.ir", tilec_emit_graph(e)->name);
    int r = b->failed ? -1 : tilec_emit_write(e, file, sb_str(b), b->n);
    sb_free(b);
    free(b);
    return r;
}

const tilec_emitter wir_ir_emitter = {
    TILEC_EMITTER_HEADER,
    .name = "ir",
    .description = "the wrapper IR of each graph as text (NAME.ir)",
    .begin = ir_begin,
    .hooks = {{{TEXT_HOOKS}}},
    .end = ir_end,
};
