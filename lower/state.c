/* state.c: the lowering's working state: errors (naming the kernel and
 * variant), the output lines and temporaries, the CUDA names of .tile
 * names, the scopes that bind them to values, hints, and the shared memory
 * a kernel allocates. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "lower/lower_internal.h"
#include "parser/ast_ix.h"
#include "util/mangle.h"

void lower_fail(lw *L, const tilec_loc *loc, const char *fmt, ...)
{
    if (L->failed)
        return;
    L->failed = 1;
    if (L->quiet)
        return;
    strbuf b;
    sb_init(&b);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    if (L->k->nvariants && L->k->ntune_hints) {
        strbuf c;
        sb_init(&c);
        for (uint32_t i = 0; i < L->k->ntune; i++)
            sb_printf(&c, "%s%s = %lld", i ? ", " : "", L->k->tune[i].name,
                      (long long)tilec_kernel_hint(L->k, L->variant, L->k->tune[i].name, 0));
        diag_at(L->ctx, &L->m->src, loc, TILEC_SEV_ERROR, "kernel '%s' (tune %s): %s", L->k->name, sb_str(&c),
                sb_str(&b));
        sb_free(&c);
    } else if (L->k->nvariants)
        diag_at(L->ctx, &L->m->src, loc, TILEC_SEV_ERROR, "kernel '%s' (variant %d): %s", L->k->name, L->variant,
                sb_str(&b));
    else
        diag_at(L->ctx, &L->m->src, loc, TILEC_SEV_ERROR, "kernel '%s': %s", L->k->name, sb_str(&b));
    sb_free(&b);
}

const char *lower_fmt(lw *L, const char *f, ...)
{
    strbuf b;
    sb_init(&b);
    va_list ap;
    va_start(ap, f);
    sb_vprintf(&b, f, ap);
    va_end(ap);
    const char *s = ar_strdup(&L->ar, sb_str(&b));
    sb_free(&b);
    if (!s)
        L->failed = 1;
    return s ? s : "0";
}

void lower_line(lw *L, const char *f, ...)
{
    for (int i = 0; i < L->ind; i++)
        sb_puts(&L->out, "    ");
    va_list ap;
    va_start(ap, f);
    size_t at = L->out.n;
    sb_vprintf(&L->out, f, ap);
    va_end(ap);
    if (!L->out.failed && !strcmp(sb_str(&L->out) + at, "__syncthreads();"))
        L->nsync++;
    sb_putc(&L->out, '\n');
}

const char *lower_newtmp(lw *L, const char *stem) { return lower_fmt(L, "tl_%s%d", stem, L->tmp++); }

const tilec_type *lower_ty(const lw *L, const tilec_expr *e)
{
    const tilec_type *w = lower_ix_type(L, e);
    if (w)
        return w;
    return L->variant >= 0 && e->vtypes ? &e->vtypes[L->variant] : &e->type;
}

/* The CUDA name of a .tile parameter, hint, let or loop variable:
 * v_NAME (util/mangle.h), which no C++ or CUDA name and none of ours meets. */
const char *lower_cname(lw *L, const char *name)
{
    strbuf b;
    sb_init(&b);
    mg_cuda(&b, name);
    const char *c = b.failed ? NULL : ar_strdup(&L->ar, sb_str(&b));
    sb_free(&b);
    if (!c) {
        L->failed = 1;
        return "v_";
    }
    return c;
}

val *lower_lookup(lw *L, const char *name)
{
    for (int i = L->nbinds - 1; i >= 0; i--)
        if (!strcmp(L->binds[i].name, name))
            return L->binds[i].v;
    return NULL;
}

void lower_bind(lw *L, const char *name, val *v)
{
    if (L->nbinds == L->capbinds) {
        int cap = L->capbinds ? L->capbinds * 2 : 32;
        lbind *b = realloc(L->binds, (size_t)cap * sizeof *b);
        if (!b) {
            L->failed = 1;
            return;
        }
        L->binds = b;
        L->capbinds = cap;
    }
    L->binds[L->nbinds++] = (lbind){name, v, L->depth};
    L->ax_gen++; /* axinfo.c's answers may read the name */
}

void lower_leave(lw *L)
{
    while (L->nbinds && L->binds[L->nbinds - 1].depth == L->depth)
        L->nbinds--;
    L->depth--;
    L->ax_gen++;
}

val *lower_newval(lw *L, vkind kind, const tilec_type *t, const char *c)
{
    val *v = ar_alloc(&L->ar, sizeof *v);
    if (!v) {
        L->failed = 1;
        static val dummy;
        return &dummy;
    }
    v->kind = kind;
    v->ty = *t;
    v->held = t->dtype;
    v->c = c;
    v->smem = -1;
    v->rlet = NULL;
    v->rld = v->rbt = 0;
    return v;
}

int lower_hint_value(const lw *L, const char *name, int64_t *out)
{
    for (uint32_t i = 0; i < L->k->nhints; i++)
        if (!strcmp(L->k->hints[i].name, name)) {
            *out = tilec_kernel_hint(L->k, L->variant, name, 0);
            return 1;
        }
    return 0;
}

static int const_lookup(void *user, const tilec_ix *sym, int64_t *out)
{
    const tilec_expr *e = sym->origin;
    return e && e->kind == TILEC_EX_NAME && lower_hint_value(user, e->name, out) ? 0 : 1;
}

int lower_const_int(lw *L, const tilec_expr *e, int64_t *out)
{
    if (e->kind == TILEC_EX_INT) {
        *out = e->ival;
        return 0;
    }
    const tilec_ix *x = ast_to_ix(&L->ar, e, 0, NULL);
    return x && tilec_ix_eval(x, const_lookup, L, out, NULL) == TILEC_IX_OK ? 0 : -1;
}

int lower_axis(lw *L, const tilec_expr *call, uint32_t i, int rank)
{
    int64_t a = 0;
    if (i >= call->nargs || lower_const_int(L, call->args[i], &a) || (a < 0 && (a += rank) < 0) || a >= rank) {
        lower_fail(L, &call->loc,
                   "the axis of %s must be a compile-time integer (literals, hints, constants) "
                   "from %d to %d",
                   call->name, -rank, rank - 1);
        return 0;
    }
    return (int)a;
}

uint32_t lower_alloc_smem(lw *L, int64_t bytes)
{
    /* the need counts on past the limit (bytes over 2^40 as 2^40: never near a wrap) */
    L->smem_need = ((L->smem_need + 15) & ~(int64_t)15) + (bytes < 0 || bytes > ((int64_t)1 << 40) ? (int64_t)1 << 40 : bytes);
    uint32_t off = (L->smem + 15u) & ~15u;
    if (bytes < 0 || off + (uint64_t)bytes > SMEM_LIMIT) {
        L->smem = SMEM_LIMIT + 1;
        return 0;
    }
    L->smem = off + (uint32_t)bytes;
    return off;
}
