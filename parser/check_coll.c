/* check_coll.c: the collectives of graphs (parser/graph_coll.h): their
 * form, the dtypes NCCL reduces or moves, the axis, and the result's
 * shape in the size symbol `world` (the communicator's number of ranks):
 * all_gather multiplies its axis by world, reduce_scatter divides it. */
#include <string.h>


#include "parser/check_internal.h"
#include "parser/graph_coll.h"

/* NCCL reduces these (ncclInt8 .. ncclBfloat16); the byte-moving
 * collectives take any dtype. avg is floating point only. */
static int reducible(tilec_dtype dt)
{
    return dt != TILEC_DT_BOOL && dt != TILEC_DT_I16 && dt != TILEC_DT_U16;
}

int chk_graph_coll(checker *ck, tilec_stmt *s)
{
    const tilec_expr *v = s->value;
    gc_form f;
    const char *why = NULL;
    const tilec_expr *at = NULL;
    if (!gc_read(v, &f, &why, &at))
        return 0;
    if (s->kind != TILEC_ST_LET) {
        chk_err(ck, &v->loc, "bind the result of %s with let name = %s(...)", v->name, v->name);
        return 1;
    }
    if (why) {
        chk_err(ck, at == v ? &v->loc : chk_start_of(at), "%s", why);
        return 1;
    }
    binding *b = chk_tensor_arg(ck, f.of, ar_printf(&ck->scratch, "the first argument of %s", v->name), NULL);
    if (!b)
        return 1;
    int reduces = f.coll == TILEC_COLL_ALL_REDUCE || f.coll == TILEC_COLL_REDUCE_SCATTER;
    if (reduces && !reducible(b->dtype)) {
        chk_err(ck, &f.of->loc, "%s cannot reduce '%s' (%s): NCCL reduces i8, u8, i32, u32, i64, u64, f16, bf16, f32 "
            "and f64", v->name, b->name, b->text);
        return 1;
    }
    if (reduces && f.op == TILEC_REDOP_AVG && tilec_dtype_class(b->dtype) != 'f') {
        chk_err(ck, &f.op_at->loc, "%s: avg averages floating-point tensors, but '%s' is %s (use sum and divide)",
            v->name, b->name, b->text);
        return 1;
    }
    const poly **dims = ar_array(&ck->scratch, b->rank ? b->rank : 1, sizeof *dims);
    if (!dims) {
        ck->oom = 1;
        return 1;
    }
    memcpy(dims, b->dims, b->rank * sizeof *dims);
    if (f.axis) {
        int64_t ax = f.axis_value;
        if (!b->rank || ax < -(int64_t)b->rank || ax >= (int64_t)b->rank) {
            if (!b->rank)
                chk_err(ck, &f.of->loc, "%s needs a tensor of rank 1 or more, but '%s' is %s", v->name, b->name, b->text);
            else
                chk_err(ck, chk_start_of(f.axis), "%s: axis %lld is out of range for '%s' (%s, rank %u: -%u to %u)",
                    v->name, (long long)ax, b->name, b->text, b->rank, b->rank, b->rank - 1);
            return 1;
        }
        uint32_t d = (uint32_t)(ax < 0 ? ax + (int64_t)b->rank : ax);
        poly_why pw = {0};
        dims[d] = gc_result_dim(&ck->scratch, f.coll, b->dims[d], &pw);
        if (!dims[d]) {
            if (!chk_size_limit_err(ck, &f.of->loc, &pw, "the result size of the collective"))
                ck->oom = 1;
            return 1;
        }
    }
    binding *r = chk_bind_tensor(ck, s->names[0], &s->name_locs[0], b->dtype, dims, b->rank);
    if (r)
        s->types[0] = r->text;
    return 1;
}

/* A graph that calls a collective has the size symbol `world`: bound
 * before its parameters, so that a dimension named world checks against
 * the communicator; a parameter may not take the name. */
void chk_graph_world(checker *ck, const tilec_graph *g)
{
    if (!gc_graph_has(g))
        return;
    for (uint32_t i = 0; i < g->nparams; i++)
        if (g->params[i].name && !strcmp(g->params[i].name, GC_WORLD))
            chk_err(ck, &g->params[i].loc,
                "'%s' is the number of ranks in a graph with collectives (the communicator's size); rename this "
                "parameter", GC_WORLD);
    symbol *s = ar_alloc(&ck->scratch, sizeof *s);
    if (!s || !(s->value = poly_atom(&ck->scratch, GC_WORLD))) {
        ck->oom = 1;
        return;
    }
    s->name = GC_WORLD;
    s->loc = g->loc;
    s->origin = "the communicator's number of ranks";
    HASH_ADD_KEYPTR(hh, ck->syms, s->name, strlen(s->name), s);
}
