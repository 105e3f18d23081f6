/* wir.h: the wrapper IR of graphs (public, read-only for users). A graph
 * lowers to a flat array of lines, each a tagged struct with the .tile
 * location it comes from; passes rewrite the lines (memory planning), then
 * an emitter walks them once. The text form is documented in
 * docs/wrapper-ir.md and wrapper_ir/print.c. */
#ifndef TILEC_WIR_H
#define TILEC_WIR_H

#include <stddef.h>
#include <stdint.h>

#include "tilec/collective.h"
#include "tilec/iexpr.h"
#include "tilec/tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The line kinds, the single source of truth for the enum, the names and
 * the emitter hook table. X(ENUM, hook field name). ORDER WIR: the enum,
 * tilec_wir_kind_name() and tilec_wir_hooks.by_kind follow this order. */
#define TILEC_WIR_LINES(X)                        \
    X(COMMENT, comment)                           \
    X(KERNEL_DEF, kernel_def)                     \
    X(ALLOCATE, allocate)                         \
    X(REUSE, reuse)                               \
    X(FREE_IF_NOT_REUSED, free_if_not_reused)     \
    X(FREE, free)                                 \
    X(REINTERPRET, reinterpret)                   \
    X(KERNEL_CALL, kernel_call)                   \
    X(EXTERN_CALL, extern_call)                   \
    X(EXTERN_ALLOC, extern_alloc)                 \
    X(MULTI_OUTPUT, multi_output)                 \
    X(ASSERT_SHAPE, assert_shape)                 \
    X(COLLECTIVE, collective)                     \
    X(LOOP, loop)                                 \
    X(END_LOOP, end_loop)                         \
    X(ASSERT_LIST, assert_list)                   \
    X(MAKE_LIST, make_list)                       \
    X(LIST_OF, list_of)

typedef enum tilec_wir_kind {
#define TILEC_X(E, e) TILEC_WIR_##E,
    TILEC_WIR_LINES(TILEC_X)
#undef TILEC_X
    TILEC_WIR_KIND_COUNT
} tilec_wir_kind;

/* "KERNEL_CALL"; "?" out of range. */
const char *tilec_wir_kind_name(tilec_wir_kind k);

/* An argument of a KERNEL_CALL, EXTERN_CALL or EXTERN_ALLOC. */
typedef enum tilec_wir_arg_kind {
    TILEC_WIR_ARG_BUFFER, /* text: a buffer (tensor) name */
    TILEC_WIR_ARG_SIZE,   /* text: a canonical size expression ("R*C") */
    TILEC_WIR_ARG_SCALAR, /* text: a literal ("0.5", "-inf", "true") or a scalar parameter name */
    TILEC_WIR_ARG_LIST,   /* text: a tensor list parameter of the graph, a MAKE_LIST's or a LIST_OF's list, for
                             a kernel's [*T] (KERNEL_CALL only) */
    TILEC_WIR_ARG_ITEM,   /* text: "xs[i]", tensor i of the graph's list xs (the name up to the first '['),
                             expr: i; for a kernel's *T (KERNEL_CALL only): the address of that tensor,
                             which the wrappers check 0 <= i < len(xs) before the call */
} tilec_wir_arg_kind;

typedef struct tilec_wir_arg {
    tilec_wir_arg_kind kind;
    const char *text;
    const tilec_ix *expr; /* SIZE: the size as an integer expression (text is its canonical text); ITEM: the index */
} tilec_wir_arg;

/* One line. Which fields are set depends on the kind:
 *
 *  COMMENT             text
 *  KERNEL_DEF          name (kernel), kernel, nvariants
 *  ALLOCATE            name, dtype, rank, sizes, strides, bytes, device, align, key;
 *                      fill and fill_bits for zeros, ones, full (else fill NULL)
 *  REUSE               ALLOCATE's fields, and from: the freed buffer it takes over
 *  FREE_IF_NOT_REUSED  name, bytes
 *  FREE                name, bytes
 *  REINTERPRET         name (the view), from (its base), dtype, rank, sizes, strides, offset;
 *                      a slice (x[a:b], offset a times the axis' stride) also has
 *                      index (the axis) and three SIZE args: start a, stop b and the
 *                      base's size n on that axis, which the wrappers check
 *                      0 <= a <= b <= n at run time (nargs 0 for a plain view)
 *  KERNEL_CALL         name (kernel), kernel, nvariants, args (a LIST arg for each
 *                      [*T] parameter), grid
 *  EXTERN_CALL         name (extern), ext, symbol, args, outs (buffers it writes)
 *  EXTERN_ALLOC        name (the result, or the tuple of a multi-output extern),
 *                      ext, symbol, args, nresults; one result: dtype, rank, sizes,
 *                      strides, bytes
 *  MULTI_OUTPUT        name (the result), from (the tuple), index, dtype, rank,
 *                      sizes, strides, bytes
 *  ASSERT_SHAPE        name (a tensor parameter), index (its position among the
 *                      graph's parameters), dtype, rank, sizes (as written:
 *                      a symbol or an integer), binds (per dimension: 1 when
 *                      the dimension binds its symbol, 0 when it checks it)
 *  COLLECTIVE          name (the result, a new buffer), from (the input), coll,
 *                      redop (all_reduce, reduce_scatter), index (the axis of
 *                      all_gather and reduce_scatter, 0 .. rank - 1), root
 *                      (broadcast), symbol (the name the wrappers register
 *                      it under on their extern registry: "tilec:coll:NAME"),
 *                      and the result's dtype, rank, sizes, strides, bytes.
 *                      Sizes may use the symbol `world` (the communicator's
 *                      number of ranks), which such a graph binds first.
 *                      wait: the symbol of its wait ("tilec:wait:NAME").
 *                      A collective runs on the communicator's own stream;
 *                      its wait, an EXTERN_CALL line with that symbol, no
 *                      args and no outs (name: the result, from: the input,
 *                      text: the work lines it overlaps, ", "-separated, or
 *                      ""), makes the graph's stream wait for it. Lowering
 *                      puts the wait before the first later line that names
 *                      the input or the result (or before the next LOOP or
 *                      END_LOOP, or before the return), and
 *                      their frees after it (tilec_wir_is_wait).
 *  LOOP                name (the loop variable, a size symbol of the lines up to
 *                      its END_LOOP), three SIZE args: lo, hi, step (step > 0);
 *                      the lines up to the matching END_LOOP run for name = lo,
 *                      lo + step, ... while name < hi. Loops nest. A loop
 *                      whose bounds are constants is unrolled by lowering
 *                      when small enough (TILEC_MAX_UNROLL): its iterations'
 *                      lines, no LOOP (docs/wrapper-ir.md, "Unrolled loops").
 *  END_LOOP            name (the variable of the LOOP it closes)
 *  ASSERT_LIST         name (a tensor list parameter [*T]), index (its position
 *                      among the graph's parameters), dtype (T): the caller's
 *                      tensors, any number, each contiguous and of its own
 *                      size; a KERNEL_CALL passes it whole as a LIST argument.
 *                      The wrappers check it; nothing allocates, frees or
 *                      plans it (docs/wrapper-ir.md, "Tensor lists").
 *  MAKE_LIST           name (a new list, a name no other of the graph has), from
 *                      (the tensor list parameter it is part of), dtype, and one
 *                      or two SIZE args: start a and stop b (nargs 1: to the
 *                      end): the sub-list from[a:b], tensors a to b - 1 of
 *                      from, which the wrappers check 0 <= a <= b <= len(from)
 *                      where the line stands (in every iteration of a loop);
 *                      a later KERNEL_CALL passes it as a LIST argument (the
 *                      next, or any, for a list bound with let: let ys =
 *                      xs[a:b]). from may be another MAKE_LIST's or a
 *                      LIST_OF's list.
 *  LIST_OF             name (a new list: a let's name, or a name no other of the
 *                      graph has), dtype, and one BUFFER arg per tensor (at
 *                      least one, all of that dtype, each contiguous, of any
 *                      shape): the list [a, b, c] of the graph's tensors, made
 *                      where the line stands (in every iteration of a loop)
 *                      from their addresses and element counts; a later
 *                      KERNEL_CALL passes it as a LIST argument. Lowering
 *                      keeps each tensor alive to the list's last use.
 *
 * Buffers allocated between a LOOP and its END_LOOP are freed there too
 * (every iteration allocates and frees its own); a buffer made before the
 * loop and used in it is freed after the END_LOOP.
 *
 * Size texts are canonical polynomials in the graph's size symbols (see
 * docs/wrapper-ir.md), so equal sizes have equal text. Every size comes
 * twice: as that text (to print, and to compare) and as an integer
 * expression (tilec/iexpr.h: size_exprs, stride_exprs, bytes_expr,
 * offset_expr, a SIZE argument's expr), the tree of the same shape that
 * emitters print in their language and that memory planning evaluates
 * with the one evaluator: nothing parses the text back. */
typedef struct tilec_wir_line {
    tilec_wir_kind kind;
    tilec_loc loc; /* the .tile statement (or parameter, or kernel) */
    const char *name;
    const char *from;
    const char *text;
    const tilec_kernel *kernel;
    const tilec_extern *ext;
    const char *symbol;
    uint32_t nvariants;
    tilec_dtype dtype;
    uint32_t rank;
    const char **sizes;
    const char **strides;
    const uint8_t *binds;
    const char *offset;
    const char *bytes;
    int device;
    uint32_t align;
    const char *key; /* the pool key "device:dtype:bytes:align" of a buffer memory planning may reuse, else NULL */
    uint32_t index;
    uint32_t nresults;
    tilec_wir_arg *args;
    uint32_t nargs;
    const char **outs;
    uint32_t nouts;
    const char *grid; /* the kernel's grid as written, "cdiv(n, BLOCK)" or "rows, cols" */
    /* the sizes, strides, bytes and offset above as integer expressions
     * (set where their texts are; rank entries each) */
    const tilec_ix *const *size_exprs;
    const tilec_ix *const *stride_exprs;
    const tilec_ix *bytes_expr;
    const tilec_ix *offset_expr;
    const char *fill; /* ALLOCATE, REUSE: every element starts as this value ("0", "-inf", "true"), or NULL */
    uint64_t fill_bits; /* the value's bit pattern, in the low tilec_dtype_size(dtype) bytes */
    tilec_coll coll;    /* COLLECTIVE */
    tilec_redop redop;  /* COLLECTIVE: all_reduce, reduce_scatter */
    int64_t root;       /* COLLECTIVE: broadcast's root rank */
    const char *wait;   /* COLLECTIVE: the symbol of its wait line */
} tilec_wir_line;


/* The lines of one graph; owns its memory (one arena). */
typedef struct tilec_wir tilec_wir;

/* Lower a checked graph of m to lines. On failure the context holds a
 * diagnostic at the graph statement. */
tilec_status tilec_wir_lower(tilec_ctx *ctx, const tilec_module *m, const tilec_graph *g, tilec_wir **out);
/* Memory planning, in place: FREE_IF_NOT_REUSED of a pooled buffer and a
 * later ALLOCATE with the same pool key become REUSE (last freed first);
 * the reused buffer's FREE_IF_NOT_REUSED is dropped. */
tilec_status tilec_wir_plan(tilec_ctx *ctx, tilec_wir *w);
void tilec_wir_free(tilec_wir *w);

const tilec_graph *tilec_wir_graph(const tilec_wir *w);
size_t tilec_wir_line_count(const tilec_wir *w);
const tilec_wir_line *tilec_wir_line_at(const tilec_wir *w, size_t i);
/* 1 when the graph of w has COLLECTIVE lines (its wrappers need a
 * communicator, and the size symbol `world` is the communicator's size). */
int tilec_wir_has_collectives(const tilec_wir *w);
/* 1 when l is the wait of a collective (an EXTERN_CALL line of no extern
 * whose symbol starts "tilec:wait:"), else 0. */
int tilec_wir_is_wait(const tilec_wir_line *l);
/* "line 29: y = all_reduce(p, sum)": a COLLECTIVE line as the wrappers
 * name it in run-time messages, after the graph's name that they put
 * before every extern's message ("tp_mlp: line 29: ..."), into buf[n]
 * (truncated, always NUL-terminated when n > 0). */
void tilec_wir_coll_where(const tilec_wir *w, const tilec_wir_line *l, char *buf, size_t n);
/* The graph's returned buffers, in order. */
size_t tilec_wir_output_count(const tilec_wir *w);
const char *tilec_wir_output(const tilec_wir *w, size_t i);
/* 1 when `name` is one of the graph's returned buffers (an emitter does not
 * free those), else 0. */
int tilec_wir_is_output(const tilec_wir *w, const char *name);
/* 1 when `name` is one of the graph's tensor parameters (the caller's
 * buffers: an output that is one is handed back as a copy), else 0. */
int tilec_wir_is_input(const tilec_wir *w, const char *name);
/* The ASSERT_SHAPE line of the graph's tensor parameter number `param`
 * (its dtype, rank and sizes), or NULL (a scalar, or out of range). */
const tilec_wir_line *tilec_wir_input_shape(const tilec_wir *w, uint32_t param);
/* The MULTI_OUTPUT lines that take results of the tuple an EXTERN_ALLOC
 * line `alloc` makes, in order, up to cap of them into lines; returns how
 * many there are (compare with alloc->nresults). */
size_t tilec_wir_tuple_results(const tilec_wir *w, const tilec_wir_line *alloc, const tilec_wir_line **lines,
                               size_t cap);
/* What an emitter allocates for an EXTERN_ALLOC line `alloc`: the line
 * itself when it makes one result, else its MULTI_OUTPUT lines in order
 * (each has the result's name, dtype and sizes). Returns how many went
 * into lines, or 0 when they do not match alloc->nresults or exceed cap. */
size_t tilec_wir_extern_results(const tilec_wir *w, const tilec_wir_line *alloc, const tilec_wir_line **lines,
                                size_t cap);

/* Walk the lines in order; stops at the first nonzero return and returns it. */
typedef int (*tilec_wir_visit_fn)(void *user, const tilec_wir_line *line);
int tilec_wir_walk(const tilec_wir *w, tilec_wir_visit_fn fn, void *user);

/* The hook table of an emitter: one hook per line kind, from the X-macro.
 * Fill it with designated initializers (.kernel_call = my_call); by_kind
 * indexes the same hooks by tilec_wir_kind. */
typedef int (*tilec_wir_hook)(void *user, const tilec_wir_line *line);
#define TILEC_WIR_HOOK_FIELD(E, e) tilec_wir_hook e;
typedef struct tilec_wir_hooks {
    union {
        struct {
            TILEC_WIR_LINES(TILEC_WIR_HOOK_FIELD)
        };
        tilec_wir_hook by_kind[TILEC_WIR_KIND_COUNT];
    };
} tilec_wir_hooks;

/* Call the hook of every line in order. A NULL hook is an error naming
 * `who` and the line kind; a hook returning nonzero stops the walk with
 * an error naming the line. */
tilec_status tilec_wir_dispatch(tilec_ctx *ctx, const tilec_wir *w, const tilec_wir_hooks *hooks,
                                const char *who, void *user);

/* The stable text form: a header, one line per IR line, a return line. */
tilec_status tilec_wir_print(const tilec_wir *w, tilec_sink sink);

/* Values of size symbols ("R=4096,C=1024"). */
typedef struct tilec_wir_size {
    char name[64];
    int64_t value;
} tilec_wir_size;
/* Parse "R=4096,C=1024" into at most cap entries; TILEC_ERR_ARG (with
 * nothing recorded) on bad text, a name longer than 63 bytes, a value
 * that is not a positive integer, or too many entries. */
tilec_status tilec_wir_parse_sizes(const char *spec, tilec_wir_size *out, size_t cap, size_t *n);
/* Evaluate a line's size (size_exprs, stride_exprs, bytes_expr,
 * offset_expr, a size argument's expr: tilec/iexpr.h trees) with the
 * given values of the size symbols, by the one evaluator (tilec_ix_eval).
 * TILEC_ERR_ARG for an unknown symbol or a malformed tree,
 * TILEC_ERR_INPUT on overflow or division by zero (cdiv: a divisor <= 0).
 * A size's text (what the ir form prints) is for reading only: no
 * function parses it back. */
tilec_status tilec_wir_eval_expr(const tilec_ix *e, const tilec_wir_size *sizes, size_t n, int64_t *out);
/* Peak bytes of the graph's own buffers (inputs excluded) for the given
 * symbol values, walking the lines as they are (call before and after
 * tilec_wir_plan to compare). Two models:
 *  RESERVED  what a wrapper holds: ALLOCATE, EXTERN_ALLOC and MULTI_OUTPUT
 *            take new memory, REUSE takes none, FREE releases, and
 *            FREE_IF_NOT_REUSED of a pooled buffer returns it to the
 *            wrapper's pool, where only a REUSE can take it (it stays
 *            reserved); memory planning lowers this peak.
 *  LIVE      bytes in live buffers: every free releases at once; reuse
 *            cannot change it (the lower bound RESERVED approaches).
 * Errors (an unknown symbol, overflow) are reported on ctx. */
typedef enum tilec_wir_peak_kind { TILEC_WIR_PEAK_RESERVED, TILEC_WIR_PEAK_LIVE } tilec_wir_peak_kind;
tilec_status tilec_wir_peak_bytes(tilec_ctx *ctx, const tilec_wir *w, tilec_wir_peak_kind kind,
                                  const tilec_wir_size *sizes, size_t n, int64_t *out);

/* Every name of sizes must be a size symbol of a graph of m (a scalar
 * parameter or a named dimension): else TILEC_ERR_INPUT with an error on
 * ctx naming it and the known ones. tilec_module_emit_ir checks this first;
 * the command checks it before it writes anything. */
tilec_status tilec_module_check_sizes(tilec_ctx *ctx, const tilec_module *m, const tilec_wir_size *sizes, size_t n);

/* `tilec FILE --emit ir [--sizes R=4096,C=1024]`: every graph of m
 * lowered, planned when `plan` is nonzero, and printed; graphs separated
 * by a blank line. With sizes (nsizes > 0) each graph ends with a line
 * "peak bytes with R=4096, C=1024: P planned, U unplanned, L live"
 * (RESERVED peaks with and without planning, and the LIVE peak). */
tilec_status tilec_module_emit_ir(tilec_ctx *ctx, const tilec_module *m, int plan, const tilec_wir_size *sizes,
                                  size_t nsizes, tilec_sink sink);

#ifdef __cplusplus
}
#endif
#endif
