/* splitk.c: split-K, the `split_k = S` hint (docs/lowering.md, "Split-K").
 *
 * The kernel's pipelined dot loop is cut into S contiguous slices of whole
 * steps; slice z of a tile runs in the block at grid z index
 * pid(2) * S + z (the launch multiplies grid axis 2 by S: lower/grid.c),
 * so pid() and num_programs() keep their meaning. Each block writes its f32
 * accumulator registers to a scratch workspace (hidden parameter
 * tl_split_part), fences, and counts itself in the tile's counter
 * (tl_split_cnt); the block that arrives last adds the S partials in
 * slice order (the same sum whichever block is last), resets the counter
 * for the next launch and runs the rest of the kernel once. The runtime
 * owns both buffers (runtime/program.c). */
#include <string.h>

#include "lower/lower_internal.h"

enum { SPLIT_MAX = 64 };


/* The first statement of b (nested blocks too) that stores or adds
 * atomically, or that assigns `name` (NULL: none). */
static const tilec_stmt *find_effect(const tilec_block *b, const char *assigns)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_DOC)
            continue;
        if (!assigns && (lower_calls(s->value, BI_STORE) || lower_calls(s->value, BI_ATOMIC_ADD)))
            return s;
        if (assigns && s->kind == TILEC_ST_ASSIGN && !strcmp(s->names[0], assigns))
            return s;
        const tilec_stmt *t = find_effect(&s->body, assigns);
        if (!t)
            t = find_effect(&s->orelse, assigns);
        if (t)
            return t;
    }
    return NULL;
}

/* The first `for` nested inside b, or NULL. */
static const tilec_stmt *find_loop(const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_FOR)
            return s;
        const tilec_stmt *t = find_loop(&s->body);
        if (!t)
            t = find_loop(&s->orelse);
        if (t)
            return t;
    }
    return NULL;
}

void lower_split_begin(lw *L)
{
    const tilec_kernel *k = L->k;
    int64_t S = tilec_kernel_hint(k, L->variant, "split_k", 1);
    L->split = 0;
    L->split_loop = NULL;
    if (S == 1)
        return;
    if (S < 1 || S > SPLIT_MAX) {
        lower_fail(L, &k->loc, "split_k = %lld: the number of K slices must be 1 (no split) to %d", (long long)S,
                   SPLIT_MAX);
        return;
    }
    const tilec_block *b = &k->body;
    const tilec_stmt *loop = NULL;
    uint32_t at = 0;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        const tilec_stmt *inner = find_loop(&s->body);
        if (!inner)
            inner = find_loop(&s->orelse);
        if (inner) {
            lower_fail(
                L, &inner->loc,
                "split_k = %lld needs the kernel's dot loop as a statement of the kernel's body, and no other loop",
                (long long)S);
            return;
        }
        if (s->kind != TILEC_ST_FOR)
            continue;
        if (loop) {
            lower_fail(L, &s->loc,
                       "split_k = %lld needs exactly one loop, the kernel's dot loop; this is a second one (line %u is "
                       "the first)",
                       (long long)S, loop->loc.line);
            return;
        }
        loop = s;
        at = i;
    }
    if (!loop) {
        lower_fail(L, &k->loc,
                   "split_k = %lld needs a dot loop `for k in lo .. hi step BK { ... acc = acc + dot(a, b); }`; the "
                   "kernel has no loop",
                   (long long)S);
        return;
    }
    const tilec_stmt *upd = NULL;
    for (uint32_t i = 0; i < loop->body.nstmts && !upd; i++)
        if (lower_dot_update(loop->body.stmts[i]))
            upd = loop->body.stmts[i];
    if (!upd) {
        lower_fail(L, &loop->loc, "split_k = %lld: this loop has no `acc = acc + dot(a, b)` to split", (long long)S);
        return;
    }
    const tilec_block before = {b->stmts, at};
    const tilec_stmt *eff = find_effect(&before, NULL);
    if (eff) {
        lower_fail(L, &eff->loc,
                   "split_k = %lld: this statement writes memory before the dot loop, and every one of the %lld K "
                   "slices would run it",
                   (long long)S, (long long)S);
        return;
    }
    const char *acc = upd->names[0];
    const tilec_stmt *init = NULL;
    for (uint32_t i = 0; i < at; i++)
        if (b->stmts[i]->kind == TILEC_ST_LET && !strcmp(b->stmts[i]->names[0], acc))
            init = b->stmts[i];
    if (!init || !(tilec_is_builtin(init->value, BI_ZEROS)) ||
        find_effect(&before, acc)) {
        lower_fail(L, &upd->loc,
                   "split_k = %lld: the accumulator '%s' must be `let %s = zeros(...)` before the loop and not "
                   "assigned before it (each K slice starts from zero and the partial sums are added)",
                   (long long)S, acc, acc);
        return;
    }
    int64_t step = 1;
    if (loop->step && (lower_const_int(L, loop->step, &step) != 0 || step < 1)) {
        lower_fail(L, &loop->loc, "split_k = %lld: the loop's step must be a positive constant (a hint such as BK)",
                   (long long)S);
        return;
    }
    L->split = (int)S;
    L->split_loop = loop;
}

const char *lower_split_params(const lw *L)
{
    return L->split ? ", float *__restrict__ tl_split_part, unsigned int *__restrict__ tl_split_cnt" : "";
}

void lower_split_preamble(lw *L)
{
    if (L->split)
        lower_line(L, "const int tl_slice = (int)blockIdx.z %% %d; /* split_k: this block's K slice */", L->split);
}

int lower_split_check_loop(lw *L, const tilec_stmt *loop, int pipelined)
{
    if (!L->split || loop != L->split_loop)
        return 1;
    if (!pipelined) {
        lower_fail(L, &loop->loc,
                   "split_k = %d: this loop is not a pipelined dot loop (docs/lowering.md, \"Software pipelining\"): "
                   "line %u: %s",
                   L->split, L->miss_line ? L->miss_line : loop->loc.line, L->miss ? L->miss : "(no reason recorded)");
        return 0;
    }
    return 1;
}

void lower_split_bounds(lw *L)
{
    int S = L->split;
    lower_line(L, "/* split_k = %d: this block runs steps [tl_slice * tl_per, (tl_slice + 1) * tl_per) */", S);
    /* where hi0 - lo0 + st - 1 may pass 2^31 - 1 (cp_wraps): the count in 64 bits, an empty slice starting at hi0 */
    int w = L->cp_wraps;
    lower_line(L, "const tl_ix tl_steps = tl_hi0 > tl_lo0 ? %s : 0;",
               w ? "(tl_ix)(((long long)tl_hi0 - tl_lo0 + tl_st - 1) / tl_st)" : "(tl_hi0 - tl_lo0 + tl_st - 1) / tl_st");
    lower_line(L, "const tl_ix tl_per = (tl_steps + %d) / %d;", S - 1, S);
    lower_line(L, "const tl_ix tl_lo = %stl_lo0 + (tl_ix)tl_slice * tl_per * tl_st;",
               w ? "(tl_ix)tl_slice * tl_per >= tl_steps ? tl_hi0 : " : "");
    lower_line(L, "const tl_ix tl_hi = ((tl_ix)tl_slice + 1) * tl_per >= tl_steps ? tl_hi0 : tl_lo0 + ((tl_ix)tl_slice "
                  "+ 1) * tl_per * tl_st;");
}

void lower_split_reduce(lw *L, const val *acc)
{
    int S = L->split, E = acc->ly.E, nt = L->nt;
    uint32_t flag = lower_alloc_smem(L, 4);
    L->split_bytes = (uint32_t)E * (uint32_t)nt * 4u;
    lower_line(L, "{ /* split_k = %d: the partial sums of this tile's slices, added by the block that finishes last */",
               S);
    L->ind++;
    lower_line(L,
               "const unsigned int tl_tile = ((unsigned int)blockIdx.z / %du * gridDim.y + blockIdx.y) * gridDim.x + "
               "blockIdx.x;",
               S);
    lower_line(L, "float *tl_mine = tl_split_part + ((size_t)tl_tile * %d + tl_slice) * %d;", S, E * nt);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j)", E);
    lower_line(L, "    __stcg(tl_mine + tl_j * %d + tl_tid, %s[tl_j]);", nt, acc->c);
    lower_line(L, "__threadfence();");
    lower_line(L, "__syncthreads();");
    lower_line(L, "unsigned int *tl_last = (unsigned int *)(tl_smem + %u);", flag);
    lower_line(L, "if (tl_tid == 0) {");
    lower_line(L, "    const unsigned int tl_seen = atomicAdd(tl_split_cnt + tl_tile, 1u);");
    lower_line(L, "    *tl_last = tl_seen == %du;", S - 1);
    lower_line(L, "    if (tl_seen == %du)", S - 1);
    lower_line(L, "        tl_split_cnt[tl_tile] = 0u; /* every slice has counted: ready for the next launch */");
    lower_line(L, "    __threadfence();");
    lower_line(L, "}");
    lower_line(L, "__syncthreads();");
    lower_line(L, "if (!*tl_last)");
    lower_line(L, "    return; /* another slice of this tile finishes it */");
    lower_line(L, "const float *tl_all = tl_split_part + (size_t)tl_tile * %d;", S * E * nt);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) {", E);
    lower_line(L, "    float tl_s = tl_slice == 0 ? %s[tl_j] : __ldcg(tl_all + tl_j * %d + tl_tid);", acc->c, nt);
    lower_line(L, "    #pragma unroll");
    lower_line(L, "    for (int tl_z = 1; tl_z < %d; ++tl_z) /* slice order: the same sum whichever block is last */",
               S);
    lower_line(L,
               "        tl_s += tl_z == tl_slice ? %s[tl_j] : __ldcg(tl_all + (size_t)tl_z * %d + tl_j * %d + tl_tid);",
               acc->c, E * nt, nt);
    lower_line(L, "    %s[tl_j] = tl_s;", acc->c);
    lower_line(L, "}");
    L->ind--;
    lower_line(L, "}");
    lower_note(
        L, "  split_k = %d: the loop's steps in %d slices (grid axis 2 times %d), %u bytes of f32 partials per block",
        S, S, S, L->split_bytes);
}
