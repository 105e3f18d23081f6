/* query.c: what every emitter asks of a wrapper IR, below both the
 * emitters and the emit driver: its graph, lines and outputs, the names
 * of line kinds, the shape line of an input, the results of an extern,
 * and the walks of its lines (tilec_wir_walk, and tilec_wir_dispatch into
 * an emitter's hooks). */
#include <stdio.h>
#include <string.h>

#include "dsl/diag.h"
#include "wrapper_ir/wir.h"

static const char *const kind_names[] = {
#define X(E, e) #E,
    TILEC_WIR_LINES(X)
#undef X
};

const char *tilec_wir_kind_name(tilec_wir_kind k)
{
    return (unsigned)k < TILEC_WIR_KIND_COUNT ? kind_names[k] : "?";
}

const tilec_graph *tilec_wir_graph(const tilec_wir *w) { return w ? w->graph : NULL; }
size_t tilec_wir_line_count(const tilec_wir *w) { return w ? w->n : 0; }
const tilec_wir_line *tilec_wir_line_at(const tilec_wir *w, size_t i) { return w && i < w->n ? &w->lines[i] : NULL; }
size_t tilec_wir_output_count(const tilec_wir *w) { return w ? w->noutputs : 0; }
const char *tilec_wir_output(const tilec_wir *w, size_t i) { return w && i < w->noutputs ? w->outputs[i] : NULL; }

size_t tilec_wir_tuple_results(const tilec_wir *w, const tilec_wir_line *alloc, const tilec_wir_line **lines,
                               size_t cap)
{
    size_t n = 0;
    if (!w || !alloc || !alloc->name)
        return 0;
    /* lowering writes a tuple's results right after its allocation; a line
     * from elsewhere is searched for in every line */
    size_t first = alloc >= w->lines && alloc < w->lines + w->n ? (size_t)(alloc - w->lines) + 1 : 0;
    for (size_t i = first; i < w->n; i++) {
        const tilec_wir_line *m = &w->lines[i];
        if (m->kind == TILEC_WIR_MULTI_OUTPUT && m->from && !strcmp(m->from, alloc->name)) {
            if (n < cap)
                lines[n] = m;
            n++;
        } else if (first) {
            break;
        }
    }
    return n;
}

size_t tilec_wir_extern_results(const tilec_wir *w, const tilec_wir_line *alloc, const tilec_wir_line **lines,
                                size_t cap)
{
    if (!alloc || alloc->kind != TILEC_WIR_EXTERN_ALLOC || !lines || !cap)
        return 0;
    if (alloc->nresults <= 1) {
        lines[0] = alloc;
        return 1;
    }
    size_t n = tilec_wir_tuple_results(w, alloc, lines, cap);
    return n == alloc->nresults && n <= cap ? n : 0;
}

int tilec_wir_walk(const tilec_wir *w, tilec_wir_visit_fn fn, void *user)
{
    for (uint32_t i = 0; w && fn && i < w->n; i++) {
        int r = fn(user, &w->lines[i]);
        if (r)
            return r;
    }
    return 0;
}

int tilec_wir_is_output(const tilec_wir *w, const char *name)
{
    for (uint32_t i = 0; w && name && i < w->noutputs; i++)
        if (!strcmp(w->outputs[i], name))
            return 1;
    return 0;
}

int tilec_wir_is_input(const tilec_wir *w, const char *name)
{
    for (uint32_t i = 0; w && name && i < w->n; i++)
        if (w->lines[i].kind == TILEC_WIR_ASSERT_SHAPE && !strcmp(w->lines[i].name, name))
            return 1;
    return 0;
}

const tilec_wir_line *tilec_wir_input_shape(const tilec_wir *w, uint32_t param)
{
    for (uint32_t i = 0; w && i < w->n; i++)
        if (w->lines[i].kind == TILEC_WIR_ASSERT_SHAPE && w->lines[i].index == param)
            return &w->lines[i];
    return NULL;
}

int wir_each_line(const tilec_wir *w, const tilec_wir_hooks *hooks, void *user, uint32_t *at)
{
    for (uint32_t i = 0; i < w->n; i++) {
        const tilec_wir_line *l = &w->lines[i];
        tilec_wir_hook h = (unsigned)l->kind < TILEC_WIR_KIND_COUNT ? hooks->by_kind[l->kind] : NULL;
        *at = i;
        if (!h)
            return -1;
        if (h(user, l))
            return 1;
    }
    return 0;
}

tilec_status tilec_wir_dispatch(tilec_ctx *ctx, const tilec_wir *w, const tilec_wir_hooks *hooks, const char *who,
                                void *user)
{
    if (!ctx || !w || !hooks)
        return TILEC_ERR_ARG;
    if (!who)
        who = "?";
    uint32_t at = 0;
    int r = wir_each_line(w, hooks, user, &at);
    const tilec_wir_line *l = r ? &w->lines[at] : NULL;
    if (r < 0) {
        diag_at(ctx, &w->mod->src, &l->loc, TILEC_SEV_ERROR, "emitter '%s' has no hook for line kind %s", who,
                tilec_wir_kind_name(l->kind));
        return TILEC_ERR_ARG;
    }
    if (r > 0) {
        diag_at(ctx, &w->mod->src, &l->loc, TILEC_SEV_ERROR, "emitter '%s' failed at a %s line of graph '%s'", who,
                tilec_wir_kind_name(l->kind), w->graph->name);
        return TILEC_ERR_IO;
    }
    return TILEC_OK;
}

int tilec_wir_has_collectives(const tilec_wir *w)
{
    for (uint32_t i = 0; w && i < w->n; i++)
        if (w->lines[i].kind == TILEC_WIR_COLLECTIVE)
            return 1;
    return 0;
}

void tilec_wir_coll_where(const tilec_wir *w, const tilec_wir_line *l, char *buf, size_t n)
{
    if (!n)
        return;
    (void)w;
    int k = snprintf(buf, n, "line %u: %s = %s(%s", l->loc.line, l->name, tilec_coll_name(l->coll), l->from);
    size_t at = k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
    if (l->coll == TILEC_COLL_ALL_REDUCE || l->coll == TILEC_COLL_REDUCE_SCATTER)
        at += (size_t)snprintf(buf + at, n - at, ", %s", tilec_redop_name(l->redop)), at = at < n ? at : n - 1;
    if (l->coll == TILEC_COLL_ALL_GATHER || l->coll == TILEC_COLL_REDUCE_SCATTER)
        at += (size_t)snprintf(buf + at, n - at, ", %u", l->index), at = at < n ? at : n - 1;
    if (l->coll == TILEC_COLL_BROADCAST)
        at += (size_t)snprintf(buf + at, n - at, ", %lld", (long long)l->root), at = at < n ? at : n - 1;
    snprintf(buf + at, n - at, ")");
}
