/* c_graph_seq.c: the CUDA-graph mode of a generated C wrapper whose graph
 * keeps a for loop (a count known only at call time, or past the
 * unrolling limit): the design of the Python wrapper's run_seq
 * (docs/python.md, "Graphs with for loops"). The tables of c_graph.c
 * hold each step of the graph's text once; in graph mode NAME_run queues
 * every step it reaches, in order, with a copy of its slot values (a step
 * in a loop's body once per iteration; a tensor list slot with a copy of
 * its list, which the next iteration may make anew), and at its end runs the queue
 * through a launch plan made for that order of steps: step after step,
 * each with its own slots, so an iteration never overwrites the one
 * before it. The order is the trip counts: the plan is made the first
 * time an order comes and kept for the next calls (the 8 orders used
 * last), and its CUDA graphs are the runtime's (record once per set of
 * slot values, replay after). A call that fails a check (a slice out of
 * bounds in some iteration) launches nothing. */
#include "emit_c/c_internal.h"

int cg_seq_mode(const cstate *s) { return s->loops && s->nsteps; }

/* Does a kernel call of the graph take a tensor list (its queue then copies them)? */
static int seq_lists(const cstate *s)
{
    for (size_t i = 0; i < tilec_wir_line_count(s->w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(s->w, i);
        for (uint32_t a = 0; l->kind == TILEC_WIR_KERNEL_CALL && a < l->nargs; a++)
            if (l->args[a].kind == TILEC_WIR_ARG_LIST)
                return 1;
    }
    return 0;
}

void cg_seq_push(cstate *s, const char *indent, uint32_t step, uint32_t first, uint32_t n)
{
    if (!s->loops)
        return;
    sb_printf(&s->body,
              "%sif (tl_q_push(&tl_qu, %u, tl_sl + %u, %u)) {\n"
              "%s    tl_fail(err, errlen, \"%s: graph mode: out of memory queueing the steps\");\n"
              "%s    goto tl_out;\n%s}\n",
              indent, step, first, n, indent, s->g->name, indent, indent);
    sb_printf(&s->granges, "%s{%u, %u}", step ? (step % 6 ? ", " : ",\n    ") : "    ", first, n);
}

void cg_seq_list(cstate *s, const char *indent, uint32_t back)
{
    if (!s->loops)
        return;
    sb_printf(&s->body,
              "%sif (tl_q_list(&tl_qu, tl_qu.nsl - %u)) {\n"
              "%s    tl_fail(err, errlen, \"%s: graph mode: out of memory queueing the steps\");\n"
              "%s    goto tl_out;\n%s}\n",
              indent, back, indent, s->g->name, indent, indent);
}

void cg_add_step(strbuf *c, const cstate *s, int seq)
{
    const char *d = seq ? " + dk" : ""; /* tl_plan_seq: step i's slots are dk after the table's */
    sb_printf(c, "        tilec_plan_value v[64];\n"
                 "        for (uint32_t j = 0; j < tl_gsteps[i].nargs; j++)\n"
                 "            v[j].slot = (int32_t)(tl_gsteps[i].first + j%s);\n"
                 "        if (",
              d);
    if (s->nxt) /* extern steps: their tensors from tl_gxt */
        sb_printf(c, "tl_gsteps[i].ext) {\n"
                     "            tilec_plan_tensor ts[64];\n"
                     "            uint32_t nin = tl_gsteps[i].nargs, nt = nin + (uint32_t)tl_gsteps[i].bits;\n"
                     "            for (uint32_t j = 0; j < nt && j < 64; j++) {\n"
                     "                tilec_plan_tensor t = {(int32_t)%stl_gxt[tl_gsteps[i].first + j].slot%s,\n"
                     "                                       tl_gxt[tl_gsteps[i].first + j].dtype,\n"
                     "                                       tl_gxt[tl_gsteps[i].first + j].rank, {{0}}};\n"
                     "                for (uint32_t d = 0; d < t.rank; d++)\n"
                     "                    t.sizes[d].slot = t.data_slot + 1 + (int32_t)d;\n"
                     "                ts[j] = t;\n"
                     "            }\n"
                     "            ok = nt <= 64 &&\n"
                     "                 tilec_plan_add_extern(p, tl_gsteps[i].ext, ts, nin, ts + nin, nt - nin) == TILEC_RT_OK;\n"
                     "        } else if (",
                  seq ? "(" : "", seq ? " + dk)" : "");
    sb_printf(c, "!tl_gsteps[i].kernel) {\n"
                 "            tilec_plan_tensor t = {(int32_t)%stl_gsteps[i].first%s, (tilec_dtype)tl_gsteps[i].variant,\n"
                 "                                   tl_gsteps[i].nargs, {{0}}};\n"
                 "            for (uint32_t j = 0; j < t.rank; j++)\n"
                 "                t.sizes[j].slot = (int32_t)(t.data_slot + 1 + (int32_t)j);\n"
                 "            ok = tilec_plan_add_fill(p, &t, tl_gsteps[i].bits) == TILEC_RT_OK;\n"
                 "        } else {\n"
                 "            ok = tilec_plan_add_kernel(p, tl_gsteps[i].kernel, tl_gsteps[i].variant, v,\n"
                 "                                       tl_gsteps[i].nargs) == TILEC_RT_OK;\n"
                 "        }\n",
              seq ? "(" : "", seq ? " + dk)" : "");
}

/* tl_q and tl_q_push: what NAME_run's graph mode queues. */
static void seq_queue(strbuf *c, int lists)
{
    sb_puts(c, "/* graph mode with for loops: the steps a call reached, in order, and their slot values */\n");
    if (lists)
        sb_puts(c, "typedef struct tl_ql { /* a queued list slot's list, copied */\n"
                   "    struct tl_ql *next;\n    tilec_rt_list l;\n} tl_ql;\n\n");
    sb_printf(c, "typedef struct tl_q {\n    uint32_t *seq, n, cap;\n    tilec_rt_arg *sl;\n    uint32_t nsl, capsl;\n"
               "%s} tl_q;\n\n", lists ? "    tl_ql *lists;\n" : "");
    sb_puts(c, "static int tl_q_push(tl_q *q, uint32_t step, const tilec_rt_arg *v, uint32_t n)\n{\n"
               "    if (q->n == q->cap) {\n"
               "        uint32_t cap = q->cap ? 2 * q->cap : 64;\n"
               "        uint32_t *p = cap > q->cap ? realloc(q->seq, (size_t)cap * sizeof *p) : NULL;\n"
               "        if (!p)\n            return 1;\n"
               "        q->seq = p;\n        q->cap = cap;\n    }\n"
               "    if (n > q->capsl - q->nsl) {\n"
               "        uint32_t cap = q->capsl ? q->capsl : 256;\n"
               "        while (cap - q->nsl < n) {\n"
               "            if (cap > INT32_MAX / 2) /* plan slots are int32_t */\n                return 1;\n"
               "            cap *= 2;\n        }\n"
               "        tilec_rt_arg *p = realloc(q->sl, (size_t)cap * sizeof *p);\n"
               "        if (!p)\n            return 1;\n"
               "        q->sl = p;\n        q->capsl = cap;\n    }\n"
               "    q->seq[q->n++] = step;\n"
               "    if (n)\n        memcpy(q->sl + q->nsl, v, (size_t)n * sizeof *v);\n"
               "    q->nsl += n;\n    return 0;\n}\n\n");
    if (lists)
        sb_puts(c, "/* queued slot `at`, a tensor list: pointed at a copy of its list (count, addresses, element\n"
                   "   counts) as it is now, which the plan reads at the end of the call (a list made in a loop's\n"
               "   body is made anew by the next iteration) */\n"
               "static int tl_q_list(tl_q *q, uint32_t at)\n{\n"
               "    const tilec_rt_list *l = q->sl[at].list;\n"
               "    if (!l)\n        return 0;\n"
               "    size_t n = l->n;\n"
               "    tl_ql *c = malloc(sizeof *c + n * (sizeof(uint64_t) + sizeof(int64_t)));\n"
               "    if (!c)\n        return 1;\n"
               "    uint64_t *p = (uint64_t *)(c + 1);\n"
               "    int64_t *e = (int64_t *)(p + n);\n"
               "    if (n) {\n        memcpy(p, l->ptrs, n * sizeof *p);\n        memcpy(e, l->numels, n * sizeof *e);\n    }\n"
               "    c->l = (tilec_rt_list){l->n, p, e};\n"
               "    c->next = q->lists;\n    q->lists = c;\n"
               "    q->sl[at].list = &c->l;\n    return 0;\n}\n\n");
}

void cg_seq_funcs(cstate *s, strbuf *c)
{
    if (!cg_seq_mode(s))
        return;
    seq_queue(c, seq_lists(s));
    if (s->no_graph)
        return;
    const char *n = sb_str(&s->graph), *G = s->g->name;
    sb_printf(c, "/* each step's first slot in the tables above and its number of slots */\n"
                 "static const uint32_t tl_grange[%u][2] = {\n%s\n};\n\n",
              s->nsteps, sb_str(&s->granges));
    sb_printf(c, "/* a plan for the steps q ran, in order: run k of step i takes the slots after those of\n"
                 "   the runs before it (dk from the table's) */\n"
                 "static tilec_plan *tl_plan_seq(%s_module *M, const tl_q *q, char *err, size_t errlen)\n{\n"
                 "    tilec_plan *p = tilec_plan_new(M->prog, M->ext, \"%s\", q->nsl);\n"
                 "    if (!p) {\n        tl_fail(err, errlen, \"%s: cannot make the launch plan (out of memory)\");\n"
                 "        return NULL;\n    }\n"
                 "    int ok = 1;\n"
                 "    for (uint32_t k = 0, base = 0; k < q->n && ok; base += tl_grange[q->seq[k]][1], k++) {\n"
                 "        const uint32_t i = q->seq[k], first = tl_grange[i][0];\n"
                 "        const int64_t dk = (int64_t)base - first;\n"
                 "        for (uint32_t j = 0; j < tl_grange[i][1] && ok; j++)\n"
                 "            ok = tilec_plan_set_slot(p, base + j, tl_gtypes[first + j], tl_gnames[first + j]) == TILEC_RT_OK;\n"
                 "        if (!ok)\n            break;\n",
              n, G, G);
    cg_add_step(c, s, 1);
    sb_puts(c, "    }\n"
               "    if (!ok) {\n        tl_fail(err, errlen, \"%s\", tilec_plan_last_error(p));\n"
               "        tilec_plan_free(p);\n        return NULL;\n    }\n    return p;\n}\n\n");
    sb_printf(c, "/* the call's queue run through the plan of its order: the cached one, else a new one\n"
                 "   in place of the one used least recently */\n"
                 "static int tl_seq_run(%s_module *M, const tl_q *q, char *err, size_t errlen)\n{\n"
                 "    int hit = -1, lru = 0;\n"
                 "    for (int i = 0; i < 8 && hit < 0; i++) {\n"
                 "        if (M->seqs[i].plan && M->seqs[i].n == q->n &&\n"
                 "            (!q->n || !memcmp(M->seqs[i].seq, q->seq, (size_t)q->n * sizeof *q->seq)))\n"
                 "            hit = i;\n"
                 "        else if (M->seqs[lru].plan && (!M->seqs[i].plan || M->seqs[i].used < M->seqs[lru].used))\n"
                 "            lru = i;\n    }\n"
                 "    if (hit < 0) {\n"
                 "        uint32_t *seq = malloc((q->n ? q->n : 1) * sizeof *seq);\n"
                 "        tilec_plan *p = seq ? tl_plan_seq(M, q, err, errlen) : NULL;\n"
                 "        if (!p) {\n            free(seq);\n"
                 "            return seq ? 1 : tl_fail(err, errlen, \"%s: graph mode: out of memory\");\n        }\n"
                 "        if (tilec_plan_set_cuda_graph(p, M->graphs) != TILEC_RT_OK) {\n"
                 "            tl_fail(err, errlen, \"%%s\", tilec_plan_last_error(p));\n"
                 "            tilec_plan_free(p);\n            free(seq);\n            return 1;\n        }\n"
                 "        if (q->n)\n            memcpy(seq, q->seq, (size_t)q->n * sizeof *seq);\n"
                 "        tilec_plan_free(M->seqs[lru].plan);\n        free(M->seqs[lru].seq);\n"
                 "        M->seqs[lru].seq = seq;\n        M->seqs[lru].n = q->n;\n        M->seqs[lru].plan = p;\n"
                 "        hit = lru;\n    }\n"
                 "    M->seqs[hit].used = ++M->seq_clock;\n"
                 "    if (tilec_plan_run(M->seqs[hit].plan, q->sl, q->nsl, NULL) != TILEC_RT_OK)\n"
                 "        return tl_fail(err, errlen, \"%%s\", tilec_plan_last_error(M->seqs[hit].plan));\n"
                 "    return 0;\n}\n\n",
              n, G);
    sb_printf(c, "/* the plans of the orders seen, with their CUDA graphs, freed */\n"
                 "static void tl_seq_clear(%s_module *M)\n{\n"
                 "    for (int i = 0; i < 8; i++) {\n"
                 "        tilec_plan_free(M->seqs[i].plan);\n        free(M->seqs[i].seq);\n"
                 "        M->seqs[i].plan = NULL;\n        M->seqs[i].seq = NULL;\n        M->seqs[i].n = 0;\n    }\n}\n\n",
              n);
    sb_printf(c, "int %s_set_cuda_graph(%s_module *M, unsigned graphs, char *err, size_t errlen)\n{\n"
                 "    if (graphs) { /* what the runtime says of this count and this driver, before any call */\n"
                 "        tilec_plan *p = tilec_plan_new(M->prog, M->ext, \"%s\", 0);\n"
                 "        if (!p)\n            return tl_fail(err, errlen, \"%s: cannot make the launch plan (out of memory)\");\n"
                 "        if (tilec_plan_set_cuda_graph(p, graphs) != TILEC_RT_OK) {\n"
                 "            tl_fail(err, errlen, \"%%s\", tilec_plan_last_error(p));\n"
                 "            tilec_plan_free(p);\n            return 1;\n        }\n"
                 "        tilec_plan_free(p);\n    }\n"
                 "    tl_seq_clear(M);\n    M->graphs = graphs;\n    return 0;\n}\n\n",
              n, n, G, G);
}

void cg_seq_run(cstate *s, strbuf *c)
{
    (void)s;
    sb_puts(c, "    if (tl_g && tl_seq_run(M, &tl_qu, err, errlen))\n        goto tl_out;\n");
}

void cg_seq_out(cstate *s, strbuf *c)
{
    if (cg_seq_mode(s))
        sb_puts(c, "    free(tl_qu.seq);\n    free(tl_qu.sl);\n");
    if (cg_seq_mode(s) && seq_lists(s))
        sb_puts(c, "    while (tl_qu.lists) {\n        tl_ql *tl_nx = tl_qu.lists->next;\n"
                   "        free(tl_qu.lists);\n        tl_qu.lists = tl_nx;\n    }\n");
}
