/* check.c: the checker's entry point: item names of the module, then each
 * kernel, extern and graph in source order (parser/check_*.c, sharing
 * parser/check_internal.h). Graphs are checked with symbolic sizes. */
#include <stdlib.h>
#include <string.h>

#include "parser/check_internal.h"
#include "parser/graph_alloc.h"
#include "parser/graph_coll.h"

static const char *const reserved[] = {"view"}; /* and the allocating builtins (graph_alloc.h) and the collectives (graph_coll.h) */

int chk_module(tilec_ctx *ctx, tilec_module *mod)
{
    checker store = {.ctx = ctx, .mod = mod, .ar = &mod->ar, .variant = -1};
    checker *ck = &store;
    ar_init(&ck->scratch);
    size_t errors0 = ctx->nerrors;
    if (gen_expand(ctx, mod)) {
        ar_free(&ck->scratch);
        return -1;
    }
    /* the items, then the generic kernels' names (graphs call them) */
    for (uint32_t i = 0; i < mod->items.n + mod->generics.n; i++) {
        tilec_item gitem = {.kind = TILEC_ITEM_KERNEL};
        tilec_item *it = i < mod->items.n ? mod->items.v[i] : &gitem;
        if (i >= mod->items.n)
            gitem.u.kernel = mod->generics.v[i - mod->items.n];
        const char *name = it->u.kernel->name;
        tilec_loc loc = it->kind == TILEC_ITEM_KERNEL   ? it->u.kernel->loc
                        : it->kind == TILEC_ITEM_EXTERN ? it->u.ext->loc
                                                        : it->u.graph->loc;
        for (size_t r = 0; r < sizeof reserved / sizeof reserved[0] + 1; r++)
            if (r < sizeof reserved / sizeof reserved[0] ? !strcmp(name, reserved[r]) : ga_is_builtin(name) || gc_is_builtin(name))
                chk_err(ck, &loc, "'%s' is a built-in of graphs and cannot name a kernel, extern or graph", name);
        item_name *old = NULL;
        HASH_FIND_STR(ck->items, name, old);
        if (old) {
            const tilec_kernel *inst = it->kind == TILEC_ITEM_KERNEL ? it->u.kernel : NULL;
            const tilec_kernel *was = old->kind == TILEC_ITEM_KERNEL ? old->node : NULL;
            if (inst && !inst->generic && was && was->generic)
                inst = was;
            if (inst && inst->generic)
                chk_err(ck, &loc, "'%s' is defined twice (an instance of generic kernel '%s' has that name)", name,
                    inst->generic);
            else
                chk_err(ck, &loc, "'%s' is defined twice", name);
            chk_note(ck, &old->loc, "the first definition of '%s' is here", name);
            continue;
        }
        item_name *n = ar_alloc(&mod->ar, sizeof *n);
        if (!n) {
            ck->oom = 1;
            break;
        }
        n->name = name;
        n->kind = it->kind;
        n->node = it->u.kernel;
        n->loc = loc;
        HASH_ADD_KEYPTR(hh, ck->items, n->name, strlen(n->name), n);
    }
    chk_consts(ck);
    for (uint32_t i = 0; i < mod->items.n && !chk_stop(ck); i++) {
        tilec_item *it = mod->items.v[i];
        if (it->kind == TILEC_ITEM_KERNEL)
            chk_kernel(ck, it->u.kernel);
        else if (it->kind == TILEC_ITEM_EXTERN)
            chk_extern(ck, it->u.ext);
        else
            chk_graph(ck, it->u.graph);
    }
    if (ck->oom && !ctx->stopped)
        diag_at(ctx, &mod->src, NULL, TILEC_SEV_ERROR, "out of memory while checking");
    chk_reset_graph(ck);
    HASH_CLEAR(hh, ck->items);
    seen_msg *s, *tmp;
    HASH_ITER(hh, ck->seen, s, tmp)
    {
        HASH_DEL(ck->seen, s);
        free(s->key);
        free(s);
    }
    free(ck->stack);
    ar_free(&ck->scratch);
    return ctx->nerrors > errors0 || ck->oom || ctx->stopped ? -1 : 0;
}
