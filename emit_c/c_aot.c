/* c_aot.c: --aot ARCH (the emitter option "aot"): every kernel variant
 * compiled now and embedded in the generated .c file with its launch
 * metadata, its grid as C that computes what tilec_kernel_grid would and,
 * for sm_90a, its twin's metadata (tilec/tma.h); NAME_load then only
 * loads them (tilec_program_load), and launches go through the runtime,
 * which takes the twins as for a program built at run time. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "emit_c/c_internal.h"
#include "tilec/lower.h"
#include "tilec/param_kind.h"
#include "wrapper_ir/session.h"

/* Temporary t as C's name of symbol `name` of kernel k: its argument, or
 * the variant's hint value. -1: neither. */
static int aot_grid_sym(strbuf *b, const tilec_kernel *k, int variant, const char *name, int t)
{
    for (uint32_t i = 0; i < k->nparams; i++)
        if (!strcmp(k->params[i].name, name)) {
            sb_printf(b, "    const int64_t t%d = a[%u];\n", t, i);
            return 0;
        }
    for (uint32_t i = 0; i < k->nhints; i++)
        if (!strcmp(k->hints[i].name, name)) {
            sb_printf(b, "    const int64_t t%d = INT64_C(%" PRId64 ");\n", t, (int64_t)tilec_kernel_hint(k, variant, name, 0));
            return 0;
        }
    return -1;
}

/* Temporary t = ta op tc, failing (return -1) where tilec_ix_apply fails:
 * the rules of tilec/iexpr.h spelled in C (cdiv as the size block's tl_cdiv). */
static void aot_grid_op(strbuf *b, tilec_ix_op op, int t, int a, int c)
{
    static const char *const ovf[] = {[TILEC_IX_ADD] = "add", [TILEC_IX_SUB] = "sub", [TILEC_IX_MUL] = "mul"};
    static const char *const bits[] = {[TILEC_IX_AND] = "&", [TILEC_IX_OR] = "|", [TILEC_IX_XOR] = "^",
                                       [TILEC_IX_SHL] = "<<", [TILEC_IX_SHR] = ">>"};
    switch (op) {
    case TILEC_IX_NEG: sb_printf(b, "    int64_t t%d;\n    if (__builtin_sub_overflow((int64_t)0, t%d, &t%d))\n        return -1;\n", t, a, t); return;
    case TILEC_IX_NOT: sb_printf(b, "    const int64_t t%d = ~t%d;\n", t, a); return;
    case TILEC_IX_LNOT: sb_printf(b, "    const int64_t t%d = (int64_t)!t%d;\n", t, a); return;
    case TILEC_IX_ADD:
    case TILEC_IX_SUB:
    case TILEC_IX_MUL:
        sb_printf(b, "    int64_t t%d;\n    if (__builtin_%s_overflow(t%d, t%d, &t%d))\n        return -1;\n", t, ovf[op], a, c, t);
        return;
    case TILEC_IX_DIV:
        sb_printf(b, "    if (!t%d || (t%d == INT64_MIN && t%d == -1))\n        return -1;\n    const int64_t t%d = t%d / t%d;\n",
                  c, a, c, t, a, c);
        return;
    case TILEC_IX_MOD:
        sb_printf(b, "    if (!t%d)\n        return -1;\n    const int64_t t%d = t%d == -1 ? 0 : t%d %% t%d;\n", c, t, c, a, c);
        return;
    case TILEC_IX_CDIV:
        sb_printf(b, "    if (t%d <= 0)\n        return -1;\n    const int64_t t%d = t%d / t%d + (t%d %% t%d > 0);\n", c, t, a,
                  c, a, c);
        return;
    case TILEC_IX_SHL:
    case TILEC_IX_SHR: /* of a value >= 0, by 0 to 62, no bit lost */
        sb_printf(b, "    if (t%d < 0 || t%d < 0 || t%d > 62", a, c, c);
        if (op == TILEC_IX_SHL)
            sb_printf(b, " || t%d > (INT64_MAX >> t%d)", a, c);
        sb_printf(b, ")\n        return -1;\n    const int64_t t%d = t%d %s t%d;\n", t, a, bits[op], c);
        return;
    case TILEC_IX_MIN:
    case TILEC_IX_MAX:
        sb_printf(b, "    const int64_t t%d = t%d %s t%d ? t%d : t%d;\n", t, a, op == TILEC_IX_MIN ? "<" : ">", c, a, c);
        return;
    default: sb_printf(b, "    const int64_t t%d = t%d %s t%d;\n", t, a, bits[op], c); return;
    }
}

/* One grid expression (the checker's tree, tilec_kernel.gridx) as C
 * statements computing temporary *out; what tilec_kernel_grid evaluates
 * (it fails on the same inputs). -1: no tree or an unknown name (the
 * launch always fails). */
static int aot_grid_expr(strbuf *b, const tilec_kernel *k, int variant, const tilec_ix *e, int *tmp, int *out)
{
    int a = 0, c = 0;
    if (!e)
        return -1;
    if (e->op == TILEC_IX_INT) {
        *out = (*tmp)++;
        sb_printf(b, "    const int64_t t%d = INT64_C(%" PRId64 ");\n", *out, e->value);
        return 0;
    }
    if (e->op == TILEC_IX_SYM) {
        *out = (*tmp)++;
        return aot_grid_sym(b, k, variant, e->name, *out);
    }
    if (aot_grid_expr(b, k, variant, e->a, tmp, &a) || (e->b && aot_grid_expr(b, k, variant, e->b, tmp, &c)))
        return -1;
    *out = (*tmp)++;
    aot_grid_op(b, e->op, *out, a, c);
    return 0;
}

static const char *aot_kind_name(tilec_rt_param_kind k)
{
    static const char *const names[] = {"TILEC_RT_PARAM_POINTER", "TILEC_RT_PARAM_I32", "TILEC_RT_PARAM_I64",
                                        "TILEC_RT_PARAM_F32", "TILEC_RT_PARAM_F64", "TILEC_RT_PARAM_U32",
                                        "TILEC_RT_PARAM_U64", "TILEC_RT_PARAM_LIST"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "TILEC_RT_PARAM_POINTER";
}

/* What the walk over the compiled variants writes into. */
typedef struct aot_walk {
    tilec_ctx *ctx;
    strbuf *c;    /* NAME.c: each variant's image, kinds, grid and twin */
    strbuf table; /* the tilec_aot_kernel table */
    uint32_t total;
    int twins;       /* the CUBINs hold the sm_90a twins (compiled for sm_90a) */
    const char *sfx; /* after each name ("_sm_80"): one table per architecture */
} aot_walk;

/* A tilec_tma_map field that is a parameter index, TILEC_TMA_NONE or a
 * constant (TILEC_TMA_CONST | c). */
static void aot_index(strbuf *c, const char *sep, uint32_t i)
{
    if (i == TILEC_TMA_NONE)
        sb_printf(c, "%sTILEC_TMA_NONE", sep);
    else if (TILEC_TMA_IS_CONST(i)) /* an extent or stride the hints fix */
        sb_printf(c, "%sTILEC_TMA_CONST | %uu", sep, i & ~TILEC_TMA_CONST);
    else
        sb_printf(c, "%s%u", sep, i);
}

/* The variant's sm_90a twin (tilec/tma.h) as C: tl_tma_ID, the metadata
 * the runtime launches it by (its tensor maps built from the arguments at
 * each launch, its shared memory, its grid). */
static void aot_twin(strbuf *c, const char *id, const tilec_tma_meta *t)
{
    sb_printf(c, "static char tl_twin_%s[] = \"%s\";\n", id, t->name);
    sb_printf(c, "static const tilec_tma_meta tl_tma_%s = {tl_twin_%s, %u, %u, %u, %u, {", id, id, t->threads,
              t->smem_bytes, t->nmaps, t->persistent);
    for (uint32_t i = 0; i < t->nmaps && i < TILEC_TMA_MAX_MAPS; i++) {
        const tilec_tma_map *m = &t->maps[i];
        sb_printf(c, "%s\n    {%u, ", i ? "," : "", m->ptr);
        aot_index(c, "", m->rows); /* TILEC_TMA_NONE: rows the kernel proves (a gather twin's B) */
        aot_index(c, ", ", m->cols);
        aot_index(c, ", ", m->stride);
        sb_printf(c, ", %u, %u, %u, %u, %u, {", m->box_rows, m->box_cols, m->elem_bytes, m->bf16, m->batched);
        aot_index(c, "", m->bs[0]);
        aot_index(c, ", ", m->bs[1]);
        sb_printf(c, "}, %u, %u, %u", m->bgrid, m->bscale, m->im2col);
        /* an im2col map's image extents, filter, padding and stride (tilec/tma.h); a tiled map's 0 */
        const uint32_t w[6] = {m->ih, m->iw, m->fr, m->fs, m->pad, m->cstride};
        for (int j = 0; j < 6; j++)
            aot_index(c, ", ", w[j]);
        sb_puts(c, "}");
    }
    sb_puts(c, t->nmaps ? "}, " : "{0}}, "); /* no maps (a twin fed by cp.async): no empty braces in C11 */
    /* the dot loop's trips a tile, which the launch weighs (kper 0: not known); whether a paired twin's
     * one-tile twin reads its epilogue's tile by TMA */
    aot_index(c, "", t->kbound);
    sb_printf(c, ", %u, %u, %u};\n", t->kfrom, t->kper, t->one_tma);
}

/* A variant's grid as C: tl_grid_ID(args, grid). */
static int aot_grid_fn(strbuf *c, const char *id, const tilec_kernel *k, uint32_t v)
{
    sb_printf(c, "static int tl_grid_%s(const int64_t *a, uint32_t g[3])\n{\n    (void)a;\n", id);
    strbuf body;
    sb_init(&body);
    int tmp = 0, ok = 1, res[3] = {-1, -1, -1};
    int gv = k->nvariants ? (int)v : -1;
    for (uint32_t d = 0; d < 3 && d < k->ngrid && ok; d++)
        ok = k->gridx && aot_grid_expr(&body, k, gv, k->gridx[d], &tmp, &res[d]) == 0;
    if (!ok) {
        sb_puts(c, "    (void)g;\n    return -1; /* a grid the runtime cannot evaluate */\n}\n");
    } else {
        sb_add(c, sb_str(&body), body.n);
        /* split_k: axis 2 also counts the K slices, as tilec_kernel_grid */
        int64_t split = tilec_kernel_hint(k, gv, "split_k", 1);
        for (int d = 0; d < 3; d++) {
            if (d == 2 && split > 1 && res[d] < 0)
                sb_printf(c, "    g[2] = %lld;\n", (long long)split);
            else if (d == 2 && split > 1)
                sb_printf(c, "    if (t%d < 0 || t%d > 65535 / %lld)\n        return -1;\n    g[2] = (uint32_t)(t%d * %lld);\n",
                          res[d], res[d], (long long)split, res[d], (long long)split);
            else if (res[d] < 0)
                sb_printf(c, "    g[%d] = 1;\n", d);
            else
                sb_printf(c, "    if (t%d < 0 || t%d > %s)\n        return -1;\n    g[%d] = (uint32_t)t%d;\n",
                          res[d], res[d], d ? "65535" : "INT64_C(2147483647)", d, res[d]);
        }
        sb_puts(c, "    return 0;\n}\n");
    }
    int bad = body.failed;
    sb_free(&body);
    return bad;
}

/* One compiled variant into NAME.c and the table. */
static int aot_variant(void *user, const wir_compiled *wc)
{
    const tilec_kernel_desc *w = &wc->d;
    aot_walk *a = user;
    const tilec_kernel *k = wc->k;
    uint32_t v = (uint32_t)w->variant;
    strbuf *c = a->c;
    if (!w->kinds) {
        diag_at(a->ctx, NULL, NULL, TILEC_SEV_ERROR,
                "kernel '%s': a parameter cannot be passed to a kernel yet (pointers and 32/64-bit scalars can)",
                k->name);
        return -1;
    }
    char id[300]; /* NAME_vV, then the architecture's suffix */
    snprintf(id, sizeof id, "%.200s_v%u%s", k->name, v, a->sfx);
    sb_printf(c, "static const unsigned char tl_cubin_%s[%zu] = {", id, w->size);
    for (size_t b = 0; b < w->size; b++)
        sb_printf(c, "%s0x%02x,", b % 16 ? "" : "\n    ", ((const unsigned char *)w->image)[b]);
    sb_puts(c, "\n};\n");
    if (w->nparams) {
        sb_printf(c, "static const tilec_rt_param_kind tl_kinds_%s[] = {", id);
        for (uint32_t p = 0; p < w->nparams; p++)
            sb_printf(c, "%s%s", p ? ", " : "", aot_kind_name(w->kinds[p]));
        sb_puts(c, "};\n");
    }
    int bad = aot_grid_fn(c, id, k, v);
    char kref[320] = "NULL", split[64], twin[320] = "NULL";
    snprintf(split, sizeof split, ", %u, %u", w->split_k, w->split_bytes);
    if (w->nparams)
        snprintf(kref, sizeof kref, "tl_kinds_%s", id);
    if (a->twins && w->tma && w->tma->name) {
        aot_twin(c, id, w->tma);
        snprintf(twin, sizeof twin, "&tl_tma_%s", id);
    }
    sb_printf(&a->table,
              "    {\"%s\", %u, %u, \"%s\", tl_cubin_%s, sizeof tl_cubin_%s, %u, %u, %u, %s,\n"
              "     UINT64_C(0x%" PRIx64 "), tl_grid_%s%s, %s},\n",
              k->name, v, w->nvariants, w->name, id, id, w->threads, w->smem_bytes, w->nparams, kref,
              tilec_kernel_written_params(k), id, split, twin);
    a->total++;
    return bad;
}

/* One architecture's kernels: the CUBINs and what launches them, then
 * their table tl_kernelsSFX of TL_NKERNELSSFX entries, then the choices
 * tuned for it (*nchoices of them). */
static int aot_arch(tilec_emit *e, strbuf *c, const char *arch, const char *sfx, const c_choices *cs,
                    uint32_t *nchoices)
{
    tilec_ctx *ctx = tilec_emit_ctx(e);
    /* the twins are compiled for sm_90a only (lower/wgmma.c: under
     * __CUDA_ARCH_FEAT_SM90_ALL); another target's CUBINs have none */
    aot_walk a = {ctx, c, {0}, 0, !strcmp(arch, "sm_90a"), sfx};
    sb_init(&a.table);
    sb_printf(c, "/* the kernels, compiled ahead of time for %s */\n", arch);
    if (a.twins) /* the twins' metadata is a positional initialiser of tilec_tma_meta: of this layout */
        sb_printf(c, "#if TILEC_TMA_META_LAYOUT != %d\n#error \"tilec_tma_meta is not of the layout this wrapper's "
                     "sm_90a tables were written for: emit the wrapper again with this tilec\"\n#endif\n",
                  TILEC_TMA_META_LAYOUT);
    wir_compile_fn compile = emit_session_compile(e); /* the API's: tilec_program_compile */
    int bad = compile(ctx, tilec_emit_module(e), arch, emit_session_build(e), aot_variant, &a) != TILEC_OK;
    sb_printf(c, "\n#define TL_NKERNELS%s %uu\nstatic const tilec_aot_kernel tl_kernels%s[%s] = {\n", sfx, a.total, sfx,
              a.total ? "" : "1");
    sb_add(c, sb_str(&a.table), a.table.n);
    sb_puts(c, a.total ? "};\n\n" : "    {0},\n};\n\n");
    bad |= a.table.failed;
    sb_free(&a.table);
    *nchoices = c_choices_table(c, cs, arch, sfx);
    return bad ? -1 : 0;
}

int c_aot_kernels(tilec_emit *e, strbuf *c, const char *archs, int *choices)
{
    *choices = 0;
    tilec_ctx *ctx = tilec_emit_ctx(e);
    if (!emit_session_compile(e)) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR, "--aot: this emit session cannot compile kernels");
        return -1;
    }
    /* "sm_80,sm_90a": every name checked before anything compiles */
    char list[C_AOT_MAX_ARCHS][16];
    int n = c_aot_archs(archs, list);
    if (n < 0) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR,
                "--aot: '%s' is not a GPU architecture or a list of them (sm_XY: sm_80, sm_90, sm_90a, ...; up "
                "to %d different ones separated by commas)",
                archs, C_AOT_MAX_ARCHS);
        return -1;
    }
    const char *file = tilec_emit_option(e, "choices");
    c_choices cs = {0};
    if (file && c_choices_read(ctx, tilec_emit_module(e), file, &cs))
        return -1;
    uint32_t nc[C_AOT_MAX_ARCHS] = {0};
    int bad = 0;
    if (n == 1) {
        bad = aot_arch(e, c, list[0], "", &cs, &nc[0]);
        if (nc[0])
            sb_puts(c, "/* the kernels, then the choices tuned for them */\n"
                       "static tilec_rt_status tl_load_program(tilec_rt *rt, tilec_program **p)\n{\n"
                       "    tilec_rt_status st = tilec_program_load(rt, tl_kernels, TL_NKERNELS, p);\n"
                       "    return st == TILEC_RT_OK ? tilec_program_use_choices(*p, tl_choices, TL_NCHOICES) : st;\n"
                       "}\n\n");
        *choices = nc[0] > 0;
        c_choices_free(&cs);
        return bad;
    }
    for (int i = 0; i < n && !bad; i++) {
        char sfx[24];
        snprintf(sfx, sizeof sfx, "_%.15s", list[i]);
        bad = aot_arch(e, c, list[i], sfx, &cs, &nc[i]);
    }
    c_choices_free(&cs);
    sb_printf(c, "#define TL_NARCHS %du\nstatic const tilec_aot_table tl_archs[] = {\n", n);
    for (int i = 0; i < n; i++) {
        sb_printf(c, "    {\"%s\", tl_kernels_%s, TL_NKERNELS_%s", list[i], list[i], list[i]);
        if (nc[i])
            sb_printf(c, ", tl_choices_%s, TL_NCHOICES_%s},\n", list[i], list[i]);
        else
            sb_puts(c, ", NULL, 0u},\n");
    }
    sb_puts(c, "};\n\n");
    return bad;
}
