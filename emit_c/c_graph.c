/* c_graph.c: the CUDA-graph mode of a generated C wrapper
 * (NAME_set_cuda_graph). Every kernel argument of NAME_run has a slot of a
 * launch plan (tilec/plan.h): in graph mode NAME_run does its checks and
 * allocations as always, stores each launch's arguments in its slots
 * instead of launching, and runs the plan once at the end, which replays
 * the CUDA graph recorded for those slot values or records one (the same
 * runtime code as the Python wrapper's graph mode). The plan is built by
 * NAME_set_cuda_graph from tables written here. A fill (zeros, ones,
 * full) is a step too: its buffer's address and sizes go to slots. An
 * output that is a copy of an input is copied after the plan runs, on the
 * same (legacy) stream, as in eager mode: no kernel touches it, so it needs
 * no slot. An extern call is a step as well: each of its tensors' address
 * and sizes go to slots (a strided view is refused at run time: the plan's
 * extern steps take row-major tensors), and the plan calls the extern on
 * its stream, inside the capture when it records: an extern for graph mode
 * must do stream-ordered work only, as anything torch's CUDA graphs
 * capture. */
#include <string.h>

#include "emit_c/c_internal.h"
#include "util/escape.h"

void cg_unsupported(cstate *s, const char *why)
{
    if (!s->no_graph)
        s->no_graph = why;
}

/* One slot's name and type in the plan's tables. */
static void cg_slot(cstate *s, uint32_t slot, const char *name, const char *type)
{
    sb_puts(&s->gnames, slot ? ",\n    " : "    ");
    esc_c_string(&s->gnames, name, strlen(name));
    sb_puts(&s->gtypes, slot ? (slot % 4 ? ", " : ",\n    ") : "    ");
    sb_puts(&s->gtypes, type);
}

/* Slots for the address and the `rank` sizes of tensor `t` (a C
 * expression of a tilec_tensor), named `name` and "`name` size d", from
 * s->nslots on, their statements indented by `indent`. Returns the
 * address's slot. */
static uint32_t cg_tensor_slots(cstate *s, const char *indent, const char *t, const char *name, uint32_t rank)
{
    uint32_t first = s->nslots;
    char sname[300];
    sb_printf(&s->body, "%stl_sl[%u].ptr = %s.data;\n", indent, first, t);
    cg_slot(s, first, name, "TILEC_PLAN_PTR");
    for (uint32_t d = 0; d < rank; d++) {
        sb_printf(&s->body, "%stl_sl[%u].i64 = %s.sizes[%u];\n", indent, first + 1 + d, t, d);
        snprintf(sname, sizeof sname, "%.250s size %u", name, d);
        cg_slot(s, first + 1 + d, sname, "TILEC_PLAN_INT");
    }
    s->nslots += 1 + rank;
    return first;
}

/* A fill of buffer `buf` (its C name) of tensor `name` in graph mode: its
 * address and sizes to slots (before the eager branch), and a fill step. */
void cg_fill(cstate *s, const char *name, const char *buf, tilec_dtype dt, uint32_t rank, uint64_t bits)
{
    char sname[300];
    snprintf(sname, sizeof sname, "fill %.250s", name);
    sb_puts(&s->body, "    if (tl_g) { /* graph mode: a fill step of the plan */\n");
    uint32_t first = cg_tensor_slots(s, "        ", buf, sname, rank);
    cg_seq_push(s, "        ", s->nsteps, first, 1 + rank);
    sb_puts(&s->body, "    } else ");
    sb_puts(&s->gsteps, s->nsteps ? ",\n    {" : "    {");
    sb_printf(&s->gsteps, "NULL, NULL, %s, %u, %u, 0x%llxULL}", dt_enum(dt), first, rank, (unsigned long long)bits);
    s->nsteps++;
}

/* The statements of graph mode for one launch (before the eager branch),
 * and its step and slots in the plan's tables. */
void cg_kernel(cstate *s, const tilec_kernel *k, uint32_t nargs, int best)
{
    sb_puts(&s->body, "        if (tl_g) { /* graph mode: the arguments go to the plan's slots */\n");
    for (uint32_t i = 0; i < nargs; i++) {
        const tilec_param *p = &k->params[i];
        uint32_t slot = s->nslots + i;
        strbuf name;
        sb_init(&name);
        sb_printf(&name, "%s %s", k->name, p->name);
        if (p->type.kind == TILEC_TE_LIST) { /* keyed by its tensors (tilec/plan.h) */
            sb_printf(&s->body, "            tl_sl[%u].list = a[%u].list;\n", slot, i);
            cg_slot(s, slot, sb_str(&name), "TILEC_PLAN_LIST");
            sb_free(&name);
            continue;
        }
        if (p->type.kind == TILEC_TE_POINTER) {
            sb_printf(&s->body, "            tl_sl[%u].ptr = a[%u].ptr;\n", slot, i);
            cg_slot(s, slot, sb_str(&name), "TILEC_PLAN_PTR");
            sb_free(&name);
            continue;
        }
        const char *f = c_arg_field(p->type.dtype);
        if (f[0] == 'f')
            sb_printf(&s->body, "            tl_sl[%u].f64 = a[%u].%s;\n", slot, i, f);
        else
            sb_printf(&s->body, "            tl_sl[%u].i64 = (int64_t)a[%u].%s;\n", slot, i, f);
        cg_slot(s, slot, sb_str(&name), f[0] == 'f' ? "TILEC_PLAN_FLOAT" : "TILEC_PLAN_INT");
        sb_free(&name);
    }
    cg_seq_push(s, "            ", s->nsteps, s->nslots, nargs);
    for (uint32_t i = 0; i < nargs; i++) /* a list queued by value (c_graph_seq.c) */
        if (k->params[i].type.kind == TILEC_TE_LIST)
            cg_seq_list(s, "            ", nargs - i);
    sb_puts(&s->body, "            st = TILEC_RT_OK;\n        } else ");
    sb_puts(&s->gsteps, s->nsteps ? ",\n    {" : "    {");
    esc_c_string(&s->gsteps, k->name, strlen(k->name));
    sb_printf(&s->gsteps, ", NULL, %d, %u, %u, 0}", best ? -1 : 0, s->nslots, nargs);
    s->nslots += nargs;
    s->nsteps++;
}

/* The dtype and rank of buffer `name`: a graph input's, or those of the
 * line that makes it. 0 when no line names it. */
static int cg_buffer(cstate *s, const char *name, tilec_dtype *dt, uint32_t *rank)
{
    for (uint32_t i = 0; i < s->g->nparams; i++) {
        const tilec_wir_line *in = tilec_wir_input_shape(s->w, i);
        if (in && s->g->params[i].name && !strcmp(s->g->params[i].name, name)) {
            *dt = in->dtype;
            *rank = in->rank;
            return 1;
        }
    }
    for (size_t i = 0; i < tilec_wir_line_count(s->w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(s->w, i);
        int makes = l->kind == TILEC_WIR_ALLOCATE || l->kind == TILEC_WIR_REUSE || l->kind == TILEC_WIR_REINTERPRET ||
                    l->kind == TILEC_WIR_MULTI_OUTPUT || l->kind == TILEC_WIR_COLLECTIVE ||
                    (l->kind == TILEC_WIR_EXTERN_ALLOC && l->nresults <= 1);
        if (makes && l->name && !strcmp(l->name, name)) {
            *dt = l->dtype;
            *rank = l->rank;
            return 1;
        }
    }
    return 0;
}

void cg_extern(cstate *s, const tilec_wir_line *l, const char *const *outs, uint32_t nouts)
{
    uint32_t n = l->nargs + nouts;
    tilec_dtype dts[64];
    uint32_t ranks[64];
    for (uint32_t i = 0; i < n && i < 64; i++)
        if (!cg_buffer(s, i < l->nargs ? l->args[i].text : outs[i - l->nargs], &dts[i], &ranks[i]))
            cg_unsupported(s, "an extern call's tensor has no known dtype and rank");
    if (n > 64)
        cg_unsupported(s, "an extern call takes more than 64 tensors");
    if (s->no_graph) {
        sb_puts(&s->body, "        ");
        return;
    }
    sb_puts(&s->body, "        if (tl_g) { /* graph mode: an extern step of the plan */\n");
    if (n) /* (a collective's wait takes no tensors) */
        sb_printf(&s->body,
              "            for (uint32_t i = 0; i < %u; i++)\n"
              "                if (!tl_contiguous(i < %u ? &in[i] : &out[i - %u])) {\n"
              "                    tl_fail(err, errlen, \"%s: graph mode: argument %%u of extern %s is a strided view \"\n"
              "                                         \"(the launch plan's extern steps take row-major tensors)\", i + 1);\n"
              "                    goto tl_out;\n"
              "                }\n",
              n, l->nargs, l->nargs, s->g->name, l->ext && l->ext->name ? l->ext->name : l->symbol);
    uint32_t slot0 = s->nslots;
    sb_puts(&s->gsteps, s->nsteps ? ",\n    {" : "    {");
    sb_puts(&s->gsteps, "NULL, ");
    esc_c_string(&s->gsteps, l->symbol, strlen(l->symbol));
    sb_printf(&s->gsteps, ", 0, %u, %u, %u}", s->nxt, l->nargs, nouts);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = i < l->nargs ? i : i - l->nargs;
        char t[32], sname[300];
        snprintf(t, sizeof t, "%s[%u]", i < l->nargs ? "in" : "out", j);
        snprintf(sname, sizeof sname, "%.120s %.120s", l->name, i < l->nargs ? l->args[i].text : outs[j]);
        uint32_t first = cg_tensor_slots(s, "            ", t, sname, ranks[i]);
        sb_puts(&s->gxt, s->nxt ? ",\n    {" : "    {");
        sb_printf(&s->gxt, "%u, %s, %u}", first, dt_enum(dts[i]), ranks[i]);
        s->nxt++;
    }
    cg_seq_push(s, "            ", s->nsteps, slot0, s->nslots - slot0);
    sb_puts(&s->body, "        } else ");
    s->nsteps++;
}

/* The module's fields for graph mode. */
void cg_fields(cstate *s, strbuf *c)
{
    sb_puts(c, "    tilec_plan *plan; /* graph mode (NAME_set_cuda_graph): the launch plan */\n"
               "    unsigned graphs;  /* how many CUDA graphs it keeps; 0: eager */\n");
    if (cg_seq_mode(s))
        sb_puts(c, "    struct {\n        uint32_t *seq, n; /* the steps a call ran, in order (its trip counts) */\n"
                   "        tilec_plan *plan; /* their plan, with its CUDA graphs */\n        uint64_t used;\n"
                   "    } seqs[8];          /* graph mode with for loops: the 8 orders used last */\n"
                   "    uint64_t seq_clock;\n");
}

/* NAME.h: the declaration of NAME_set_cuda_graph. */
void cg_header(cstate *s, strbuf *h)
{
    const char *n = sb_str(&s->graph);
    sb_printf(h,
              "/* CUDA graphs, opt-in (off by default): keep up to `graphs` recorded CUDA graphs (at most 64;\n"
              "   0 turns graph mode off and frees them). In graph mode %s_run checks and allocates as\n"
              "   always, then runs its launches as one launch plan: a call whose slot values (the addresses\n"
              "   of its inputs, outputs and intermediates, its sizes and scalars) are new is recorded (run\n"
              "   eagerly first when its sizes are new too); a call with known values replays its graph with\n"
              "   one cuGraphLaunch. Release each output after use and the same addresses come back, so\n"
              "   calls of one shape replay. An extern the graph calls is a step of the plan, called on the\n"
              "   plan's stream and captured with the launches: in graph mode it must do stream-ordered work\n"
              "   only. 0, or 1 with a message. */\n"
              "int %s_set_cuda_graph(%s_module *m, unsigned graphs, char *err, size_t errlen);\n",
              n, n, n);
}

/* tl_plan_build (the tables of the plan) and NAME_set_cuda_graph. */
void cg_funcs(cstate *s, strbuf *c)
{
    const char *n = sb_str(&s->graph);
    if (s->no_graph) {
        cg_seq_funcs(s, c); /* a graph with loops: its queue, which NAME_run's dead graph-mode branches name */
        sb_printf(c, "int %s_set_cuda_graph(%s_module *M, unsigned graphs, char *err, size_t errlen)\n{\n"
                     "    if (graphs)\n        return tl_fail(err, errlen, \"%s: no CUDA-graph mode: %s\");\n"
                     "    M->graphs = 0;\n    return 0;\n}\n\n",
                  n, n, s->g->name, s->no_graph);
        return;
    }
    if (s->nsteps) {
        sb_printf(c, "/* graph mode's launch plan: a slot per kernel argument (and per filled buffer's address\n"
                     "   and size), a step per launch or fill */\n"
                     "static const tilec_plan_slot_type tl_gtypes[%u] = {\n%s\n};\n", s->nslots, sb_str(&s->gtypes));
        sb_printf(c, "static const char *const tl_gnames[%u] = {\n%s\n};\n", s->nslots, sb_str(&s->gnames));
        sb_printf(c, "static const struct {\n"
                     "    const char *kernel; /* NULL: a fill of dtype `variant` and rank `nargs`, or an extern call */\n"
                     "    const char *ext;    /* an extern call's symbol: its nargs inputs and `bits` outputs are\n"
                     "                           tl_gxt[first ..] */\n"
                     "    int variant;\n    uint32_t first, nargs;\n    uint64_t bits;\n"
                     "} tl_gsteps[%u] = {\n%s\n};\n", s->nsteps, sb_str(&s->gsteps));
        if (s->nxt)
            sb_printf(c, "/* the extern steps' tensors: the address's slot (its sizes follow), dtype, rank */\n"
                         "static const struct {\n    uint32_t slot;\n    tilec_dtype dtype;\n    uint32_t rank;\n"
                         "} tl_gxt[%u] = {\n%s\n};\n", s->nxt, sb_str(&s->gxt));
        sb_puts(c, "\n");
    }
    if (cg_seq_mode(s)) { /* for loops: a plan per order of steps (c_graph_seq.c) */
        cg_seq_funcs(s, c);
        return;
    }
    sb_printf(c, "static tilec_plan *tl_plan_build(%s_module *M, char *err, size_t errlen)\n{\n"
                 "    tilec_plan *p = tilec_plan_new(M->prog, M->ext, \"%s\", %u);\n"
                 "    if (!p) {\n        tl_fail(err, errlen, \"%s: cannot make the launch plan (out of memory)\");\n"
                 "        return NULL;\n    }\n",
              n, s->g->name, s->nslots, s->g->name);
    if (s->nsteps) {
        sb_printf(c, "    int ok = 1;\n"
                     "    for (uint32_t i = 0; i < %u && ok; i++)\n"
                     "        ok = tilec_plan_set_slot(p, i, tl_gtypes[i], tl_gnames[i]) == TILEC_RT_OK;\n"
                     "    for (uint32_t i = 0; i < %u && ok; i++) {\n",
                  s->nslots, s->nsteps);
        cg_add_step(c, s, 0);
        sb_puts(c, "    }\n"
                   "    if (!ok) {\n        tl_fail(err, errlen, \"%s\", tilec_plan_last_error(p));\n"
                   "        tilec_plan_free(p);\n        return NULL;\n    }\n");
    }
    sb_puts(c, "    return p;\n}\n\n");
    sb_printf(c, "int %s_set_cuda_graph(%s_module *M, unsigned graphs, char *err, size_t errlen)\n{\n", n, n);
    sb_puts(c, "    if (graphs && !M->plan && !(M->plan = tl_plan_build(M, err, errlen)))\n        return 1;\n"
               "    if (M->plan && tilec_plan_set_cuda_graph(M->plan, graphs) != TILEC_RT_OK)\n"
               "        return tl_fail(err, errlen, \"%s\", tilec_plan_last_error(M->plan));\n"
               "    M->graphs = graphs;\n    return 0;\n}\n\n");
}

/* In NAME_run, after the statements: graph mode runs the plan. */
void cg_run(cstate *s, strbuf *c)
{
    if (cg_seq_mode(s) && !s->no_graph) {
        cg_seq_run(s, c);
        return;
    }
    sb_printf(c, "    if (tl_g && tilec_plan_run(M->plan, tl_sl, %u, NULL) != TILEC_RT_OK) {\n"
                 "        tl_fail(err, errlen, \"%%s\", tilec_plan_last_error(M->plan));\n"
                 "        goto tl_out;\n    }\n",
              s->nslots);
}

/* In NAME_run, the declarations of graph mode. */
void cg_decls(cstate *s, strbuf *c)
{
    sb_printf(c, "    const int tl_g = M->graphs && !M->dbg.level; /* graph mode (the debug printer runs eagerly) */\n"
                 "    tilec_rt_arg tl_sl[%u] __attribute__((unused)); /* its slots */\n",
              s->nslots ? s->nslots : 1);
    if (cg_seq_mode(s))
        sb_puts(c, "    tl_q tl_qu = {0}; /* graph mode with for loops: the steps run, in order */\n");
}
