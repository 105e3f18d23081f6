/* c_sizes.h: the sizes of a generated C wrapper, each computed once with
 * overflow checks in a block that NAME_run runs after its input checks
 * and before it allocates or launches anything (c_sizes.c). */
#ifndef TILEC_EMIT_C_SIZES_H
#define TILEC_EMIT_C_SIZES_H

#include <stdint.h>

#include "tilec/ast.h"
#include "tilec/iexpr.h"
#include "util/strbuf.h"
#include "util/strset.h"

/* The generated helpers the checks call (tl_add, tl_mul, ..., tl_bytes). */
extern const char csz_prelude[];

typedef struct csz_text csz_text;

typedef struct csz {
    const tilec_graph *g;
    strbuf checks;   /* the block */
    csz_text *texts; /* size text -> its checked local */
    strset keys;     /* the checks made ("i32 C*R", "bytes DT {s_R, s_C}") */
    uint32_t nlocals;
    int failed;
    /* for loops (c_loop.c): the variables of the open loops; a size that
     * names one is computed at the top of its loop's body (csz_loop_use),
     * not in the block */
    const char *loopvars[64];
    size_t loop_at[64]; /* where each open loop's body starts in the run body (c_loop.c indents it) */
    uint32_t nloops;
} csz;

void csz_init(csz *z, const tilec_graph *g);
void csz_free(csz *z);

/* The scalar parameter of g named `name` (n bytes), or NULL. */
const tilec_param *csz_scalar_param(const tilec_graph *g, const char *name, size_t n);
/* C spelling of one symbol of g: s_NAME, or p_NAME for a scalar parameter. */
void csz_symbol(strbuf *b, const tilec_graph *g, const char *name, size_t n);
/* The C spelling of size e (its canonical text: `text`) where it is used:
 * a literal, a symbol, or the local "z3" that the block computes with
 * overflow checks; `what` names it in the message of a failed check
 * ("dimension 0 of t"). */
void csz_use(csz *z, strbuf *out, const char *text, const tilec_ix *e, const char *what);
/* A tensor `name` of dtype dt (dt_enum: its C enumerator) and the given
 * sizes: the block checks its bytes fit 63 bits; *dims gets the
 * "{s_R, z0}" initializer of its sizes. */
void csz_tensor(csz *z, strbuf *dims, const char *name, const char *dt_enum, tilec_dtype dt, uint32_t rank,
                const char *const *sizes, const tilec_ix *const *exprs);
/* The byte offset `offset` (its tree: expr) * elem of a view, checked; its C spelling. */
void csz_offset(csz *z, strbuf *out, const char *view, const char *offset, const tilec_ix *expr, uint32_t elem);
/* The block checks that `text` fits a kernel parameter of dtype dt
 * (i32, u32 or u64; others need no check), once per text and dtype. */
void csz_fits(csz *z, const char *text, const tilec_ix *expr, tilec_dtype dt, const char *param, const char *kernel);

/* 1 when e names the variable of an open loop (from loopvars[from] on). */
int csz_in_loop(const csz *z, const tilec_ix *e, uint32_t from);
/* Size `text` (tree e) computed with overflow checks into a local at the
 * top of the current loop's body (written to out, indented by ind), found
 * by csz_use until csz_loop_end; with dt i32, u32 or u64 (else
 * TILEC_DT_COUNT) it is checked to fit kernel parameter `param` too. */
void csz_loop_use(csz *z, strbuf *out, const char *ind, const char *text, const tilec_ix *e, const char *what,
                  tilec_dtype dt, const char *param, const char *kernel);
/* The innermost loop ends: its locals go out of scope. */
void csz_loop_end(csz *z);
/* The text a view's byte offset is keyed by ("(C*i)*4"), into b. */
void csz_offset_text(strbuf *b, const char *offset, uint32_t elem);

#endif
