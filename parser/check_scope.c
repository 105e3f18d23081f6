/* check_scope.c: names and scopes of the checker: its diagnostics (an
 * error met again in another hint configuration is reported once, naming
 * the variant), the bindings of names, and entering and leaving scopes. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "parser/check_internal.h"

__attribute__((format(printf, 4, 0))) static void verr(checker *ck, const tilec_loc *loc, tilec_severity sev, const char *fmt, va_list ap)
{
    if (sev == TILEC_SEV_NOTE) {
        if (ck->emitted)
            diag_vat(ck->ctx, &ck->mod->src, loc, sev, fmt, ap);
        return;
    }
    strbuf b;
    sb_init(&b);
    sb_vprintf(&b, fmt, ap);
    if (b.failed) {
        ck->oom = 1;
        sb_free(&b);
        return;
    }
    if (ck->capture) { /* a tune configuration: the reason it is pruned */
        if (loc)
            sb_printf(&b, " (line %u)", loc->line);
        chk_tune_record(ck, sb_str(&b));
        ck->emitted = 0;
        sb_free(&b);
        return;
    }
    ck->emitted = 1;
    if (ck->k && (ck->k->nvariants || ck->k->generic)) {
        /* the same error in another configuration (a variant's hints, a
         * generic kernel's instance) is reported once */
        strbuf key;
        sb_init(&key);
        sb_printf(&key, "%u:%u:%s", loc ? loc->line : 0, loc ? loc->col : 0, sb_str(&b));
        if (ck->k->generic) {
            const char *with = gen_instance_text(&ck->scratch, ck->k);
            sb_printf(&b, " (in kernel %s with %s%s", ck->k->generic, with ? with : "?", ck->variant >= 0 ? ", " : ")");
        }
        seen_msg *s = NULL;
        HASH_FIND_STR(ck->seen, sb_str(&key), s);
        if (s) {
            ck->emitted = 0;
            sb_free(&key);
            sb_free(&b);
            return;
        }
        s = calloc(1, sizeof *s);
        if (s) {
            s->key = sb_take(&key);
            HASH_ADD_KEYPTR(hh, ck->seen, s->key, strlen(s->key), s);
        } else {
            ck->oom = 1;
        }
        sb_free(&key);
        if (ck->variant >= 0 && ck->k->has_variants)
            sb_printf(&b, "%svariant %d)", ck->k->generic ? "" : " (in ", ck->variant);
    }
    diag_at(ck->ctx, &ck->mod->src, loc, sev, "%s", sb_str(&b));
    sb_free(&b);
}

__attribute__((format(printf, 3, 4))) void chk_err(checker *ck, const tilec_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verr(ck, loc, TILEC_SEV_ERROR, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) void chk_note(checker *ck, const tilec_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verr(ck, loc, TILEC_SEV_NOTE, fmt, ap);
    va_end(ap);
}

binding *chk_lookup(checker *ck, const char *name)
{
    binding *b = NULL;
    HASH_FIND_STR(ck->env, name, b);
    return b;
}

/* Bind a name; a name already visible is an error (no shadowing). */
binding *chk_bind(checker *ck, const char *name, const tilec_loc *loc, bkind kind, const char *what)
{
    binding *old = chk_lookup(ck, name);
    if (old) {
        static const char *const kinds[] = {"a parameter", "a hint", "a variable", "a loop variable",
                                            "a tensor", "a scalar", "a tensor list"};
        chk_err(ck, loc, "%s '%s' is already defined as %s", what, name, kinds[old->kind]);
        chk_note(ck, &old->loc, "'%s' is defined here", name);
        return NULL;
    }
    binding *b = ar_alloc(&ck->scratch, sizeof *b);
    if (!b) {
        ck->oom = 1;
        return NULL;
    }
    b->name = name;
    b->loc = *loc;
    b->kind = kind;
    b->depth = ck->depth;
    if (ck->nstack == ck->capstack) {
        size_t cap = ck->capstack ? ck->capstack * 2 : 32;
        binding **s = realloc(ck->stack, cap * sizeof *s);
        if (!s) {
            ck->oom = 1;
            return NULL;
        }
        ck->stack = s;
        ck->capstack = cap;
    }
    ck->stack[ck->nstack++] = b;
    HASH_ADD_KEYPTR(hh, ck->env, b->name, strlen(b->name), b);
    return b;
}

void chk_leave_scope(checker *ck)
{
    while (ck->nstack && ck->stack[ck->nstack - 1]->depth == ck->depth) {
        binding *b = ck->stack[--ck->nstack];
        HASH_DEL(ck->env, b);
    }
    ck->depth--;
}

void chk_reset_env(checker *ck)
{
    HASH_CLEAR(hh, ck->syms); /* graph symbols live in the scratch arena too */
    HASH_CLEAR(hh, ck->env);
    ck->nstack = 0;
    ck->depth = 0;
    ar_free(&ck->scratch);
    ar_init(&ck->scratch);
}
