/* c_bench.c: the benchmark main of a generated .c file: built with
 * -DTILEC_BENCH_MAIN, `./NAME R=4096 C=1024 [iters=N]` runs the graph on
 * random inputs and prints the median time of a call. */
#include <string.h>

#include "emit_c/c_internal.h"

void c_bench_main(strbuf *c, cstate *s)
{
    const tilec_graph *g = s->g;
    const char *n = sb_str(&s->graph);
    sb_puts(c, "\n#ifdef TILEC_BENCH_MAIN\n#include <time.h>\n"
               "static int64_t tl_arg(int argc, char **argv, const char *name, int64_t dflt)\n{\n"
               "    size_t k = strlen(name);\n"
               "    for (int i = 1; i < argc; i++)\n"
               "        if (!strncmp(argv[i], name, k) && argv[i][k] == '=')\n"
               "            return strtoll(argv[i] + k + 1, NULL, 10);\n"
               "    return dflt;\n}\n\n"
               "static int tl_random(tilec_rt *rt, tilec_tensor *t, tl_mem *mem, unsigned long long *seed)\n{\n"
               "    uint64_t bytes = 0;\n"
               "    if (tl_bytes(t->dtype, t->rank, t->sizes, &bytes) || bytes >= SIZE_MAX / 2)\n        return 1;\n"
               "    size_t es = tilec_dtype_size(t->dtype), n = (size_t)bytes / es;\n"
               "    unsigned char *h = malloc(n * es + 1);\n"
               "    if (!h || tilec_rt_malloc(rt, n * es + 1, &t->data) != TILEC_RT_OK) {\n        free(h);\n        return 1;\n    }\n"
               "    mem->p[mem->n++] = t->data;\n"
               "    for (size_t i = 0; i < n; i++) {\n"
               "        *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;\n"
               "        float f = (float)((*seed >> 40) & 0xffff) / 32768.0f - 1.0f;\n"
               "        if (es == 4 && t->dtype == TILEC_DT_F32)\n            memcpy(h + i * 4, &f, 4);\n"
               "        else if (es == 2) { /* f16/bf16: a small normal number either way */\n"
               "            uint16_t v = (uint16_t)(0x3800u | ((*seed >> 45) & 0x3ffu)); memcpy(h + i * 2, &v, 2); }\n"
               "        else\n            memset(h + i * es, (int)((*seed >> 33) & 0x3f), es);\n    }\n"
               "    int bad = tilec_rt_memcpy_htod(rt, t->data, h, n * es) != TILEC_RT_OK;\n"
               "    free(h);\n    return bad;\n}\n\n"
               "int main(int argc, char **argv)\n{\n"
               "    tilec_rt *rt = NULL;\n"
               "    if (tilec_rt_open(0, &rt) != TILEC_RT_OK) {\n"
               "        fprintf(stderr, \"%s\\n\", tilec_rt_last_error(rt));\n        tilec_rt_close(rt);\n        return 1;\n    }\n"
               "    char err[1024];\n    unsigned long long seed = 12345;\n    tl_mem mem = {.n = 0};\n");
    sb_printf(c, "    %s_module *M = NULL;\n    struct timespec t0, t1;\n    clock_gettime(CLOCK_MONOTONIC, &t0);\n"
                 "    if (%s_load(rt, &M, err, sizeof err)) {\n"
                 "        fprintf(stderr, \"%%s\\n\", err);\n        return 1;\n    }\n"
                 "    clock_gettime(CLOCK_MONOTONIC, &t1);\n"
                 "    printf(\"%s: load %%.2f ms\\n\", (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);\n",
              n, n, n);
    /* symbols and scalars from the command line */
    for (size_t i = 0; i < tilec_wir_line_count(s->w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(s->w, i);
        if (l->kind != TILEC_WIR_ASSERT_SHAPE)
            continue;
        for (uint32_t d = 0; d < l->rank; d++)
            if (l->binds && l->binds[d])
                sb_printf(c, "    const int64_t %s = tl_arg(argc, argv, \"%s\", 1024);\n", cn(s, MG_C_SYMBOL, l->sizes[d]),
                          l->sizes[d]);
    }
    int lists = 0;
    for (uint32_t i = 0; i < g->nparams; i++) {
        const tilec_param *p = &g->params[i];
        if (p->type.kind == TILEC_TE_LIST) { /* count= tensors of numel= elements each */
            if (!lists++)
                sb_puts(c, "    const int64_t tl_count = tl_arg(argc, argv, \"count\", 4), tl_numel = tl_arg(argc, argv, "
                           "\"numel\", 65536);\n"
                           "    if (tl_count < 0 || tl_count > 16 || tl_numel < 0) {\n"
                           "        fprintf(stderr, \"count= is 0 to 16 tensors a list, numel= their elements (>= 0)\\n\");\n"
                           "        return 1;\n    }\n");
            const char *in = cn(s, MG_C_BENCH_IN, p->name);
            sb_printf(c, "    uint64_t tl_lp%u[16];\n    int64_t tl_ln%u[16];\n"
                         "    for (int64_t i = 0; i < tl_count; i++) {\n"
                         "        tilec_tensor t;\n        tl_shape(&t, 0, %s, 1, (const int64_t[]){tl_numel});\n"
                         "        if (mem.n >= 256 || tl_random(rt, &t, &mem, &seed))\n            return 1;\n"
                         "        tl_lp%u[i] = t.data;\n        tl_ln%u[i] = tl_numel;\n    }\n"
                         "    const tilec_rt_list %s = {(uint32_t)tl_count, tl_lp%u, tl_ln%u};\n",
                      i, i, dt_enum(p->type.dtype), i, i, in, i, i);
            continue;
        }
        if (p->type.kind != TILEC_TE_TENSOR) {
            sb_printf(c, "    const %s %s = (%s)tl_arg(argc, argv, \"%s\", 1);\n", c_scalar_type(p->type.dtype),
                      cn(s, MG_C_SCALAR, p->name), c_scalar_type(p->type.dtype), p->name);
            continue;
        }
        const tilec_wir_line *a = tilec_wir_input_shape(s->w, i);
        const char *in = cn(s, MG_C_BENCH_IN, p->name);
        sb_printf(c, "    tilec_tensor %s;\n    tl_shape(&%s, 0, %s, %u, (const int64_t[]){", in, in,
                  dt_enum(p->type.dtype), a ? a->rank : 0);
        for (uint32_t d = 0; a && d < a->rank; d++) {
            sb_puts(c, d ? ", " : "");
            c_dim(c, s->g, a->size_exprs[d]);
        }
        sb_printf(c, "%s});\n    if (tl_random(rt, &%s, &mem, &seed))\n        return 1;\n", a && a->rank ? "" : "0",
                  cn(s, MG_C_BENCH_IN, p->name));
    }
    size_t nout = tilec_wir_output_count(s->w);
    sb_puts(c, "    int iters = (int)tl_arg(argc, argv, \"iters\", 50);\n    if (iters < 1 || iters > 100000)\n        iters = 50;\n"
               "    float *ms = calloc((size_t)iters, sizeof *ms);\n"
               "    void *ev[2];\n    tilec_rt_event_create(rt, &ev[0]);\n    tilec_rt_event_create(rt, &ev[1]);\n"
               "    for (int it = -3; it < iters; it++) {\n");
    for (size_t i = 0; i < nout; i++)
        sb_printf(c, "        tilec_tensor %s;\n", cn(s, MG_C_BENCH_OUT, tilec_wir_output(s->w, i)));
    sb_puts(c, "        tilec_rt_event_record(rt, ev[0], NULL);\n");
    sb_printf(c, "        if (%s_run(M", n);
    for (uint32_t i = 0; i < g->nparams; i++) {
        tilec_tyexpr_kind k = g->params[i].type.kind;
        sb_printf(c, ", %s%s", k == TILEC_TE_TENSOR || k == TILEC_TE_LIST ? "&" : "",
                  cn(s, k == TILEC_TE_TENSOR || k == TILEC_TE_LIST ? MG_C_BENCH_IN : MG_C_SCALAR, g->params[i].name));
    }
    for (size_t i = 0; i < nout; i++)
        sb_printf(c, ", &%s", cn(s, MG_C_BENCH_OUT, tilec_wir_output(s->w, i)));
    sb_puts(c, ", err, sizeof err)) {\n            fprintf(stderr, \"%s\\n\", err);\n            return 1;\n        }\n"
               "        tilec_rt_event_record(rt, ev[1], NULL);\n        tilec_rt_event_synchronize(rt, ev[1]);\n"
               "        if (it >= 0)\n            tilec_rt_event_elapsed_ms(rt, ev[0], ev[1], &ms[it]);\n");
    /* free outputs that own storage (not views: their base is freed) */
    for (size_t i = 0; i < nout; i++) {
        const char *o = tilec_wir_output(s->w, i);
        int view = 0;
        for (size_t k = 0; k < tilec_wir_line_count(s->w); k++) {
            const tilec_wir_line *l = tilec_wir_line_at(s->w, k);
            if (l->kind == TILEC_WIR_REINTERPRET && !strcmp(l->name, o))
                view = 1;
        }
        if (!view)
            sb_printf(c, "        %s_release(M, &%s);\n", n, cn(s, MG_C_BENCH_OUT, o));
    }
    sb_printf(c, "    }\n"
                 "    for (int a = 0; a < iters; a++)\n        for (int b = a + 1; b < iters; b++)\n"
                 "            if (ms[b] < ms[a]) {\n                float x = ms[a];\n                ms[a] = ms[b];\n"
                 "                ms[b] = x;\n            }\n"
                 "    printf(\"%s: %%.4f ms per call (median of %%d)\\n\", (double)ms[iters / 2], iters);\n"
                 "    free(ms);\n    for (int i = 0; i < mem.n; i++)\n        tilec_rt_free(rt, mem.p[i]);\n"
                 "    %s_unload(M);\n    tilec_rt_close(rt);\n    return 0;\n}\n#endif\n",
              n, n);
}
