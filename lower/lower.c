/* lower.c: a checked kernel variant to CUDA C; the entry points of the
 * lowering.
 *
 * One CUDA block runs one program instance with 32*warps threads. A tile
 * value is either virtual (a pure function of the element index: range,
 * broadcasts, arithmetic on them), re-computed inline wherever it is used,
 * or materialized in registers: each thread holds E elements in a layout.
 * The canonical layout gives each thread V contiguous elements of the
 * row-major tile, chunk after chunk, so loads and stores of contiguous
 * pointers become vector accesses. Dot accumulators live in the layout of
 * the instruction that produces them (mma.sync fragments for f16/bf16, a
 * TMxTN register block for f32). A materialized tile read at another shape
 * or layout goes through shared memory. See docs/lowering.md, whose "where
 * things are" names the file of each part.
 *
 * The pipeline of one variant: the signature and hints, the parameters
 * bound as scalars, a scan of the body (lower_scan_assigned), the body
 * statement by statement (stmt.c), then the translation unit: headers, the
 * prelude (prelude.c) and the kernel. */
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "lower/lower_internal.h"
#include "parser/parse.h"
#include "tilec/lower.h"
#include "util/escape.h"
#include "util/strbuf.h"

uint32_t tilec_kernel_variant_count(const tilec_kernel *k) { return !k ? 0 : k->nvariants ? k->nvariants : 1; }

static tilec_arg_kind arg_kind(const tilec_param *p)
{
    if (p->type.kind == TILEC_TE_POINTER)
        return TILEC_ARG_PTR;
    if (p->type.kind == TILEC_TE_LIST)
        return TILEC_ARG_LIST;
    static const tilec_arg_kind kinds[] = {TILEC_ARG_BOOL, TILEC_ARG_I8, TILEC_ARG_I16, TILEC_ARG_I32, TILEC_ARG_I64,
                                           TILEC_ARG_U8, TILEC_ARG_U16, TILEC_ARG_U32, TILEC_ARG_U64, TILEC_ARG_F16,
                                           TILEC_ARG_BF16, TILEC_ARG_F32, TILEC_ARG_F64};
    return kinds[p->type.dtype];
}

uint32_t lower_list_cap(const tilec_kernel *k)
{
    uint32_t lists = 0;
    for (uint32_t i = 0; i < k->nparams; i++)
        lists += k->params[i].type.kind == TILEC_TE_LIST;
    return tilec_rt_list_cap(k->nparams, lists);
}

/* The __global__ function of one variant into L->out. */
void lower_emit_kernel(lw *L, const char *fname)
{
    const tilec_kernel *k = L->k;
    /* a target may arrange its warps itself (the sm_90a twin's consumers) */
    L->nwarps = L->tg->warps ? L->tg->warps(L) : (int)tilec_kernel_hint(k, L->variant, "warps", 4);
    L->nt = 32 * L->nwarps;
    strbuf hints;
    sb_init(&hints);
    for (uint32_t i = 0; i < k->nhints; i++)
        sb_printf(&hints, "%s%s = %lld", i ? ", " : "", k->hints[i].name,
                  (long long)tilec_kernel_hint(k, L->variant, k->hints[i].name, 0));
    if (k->nvariants && k->ntune_hints)
        lower_line(L, "/* %s, tune candidate %d: %s */", k->name, L->variant, sb_str(&hints));
    else if (k->nvariants)
        lower_line(L, "/* %s, variant %d: %s */", k->name, L->variant, sb_str(&hints));
    else
        lower_line(L, "/* %s: %s */", k->name, sb_str(&hints));
    sb_free(&hints);
    lower_scan_assigned(L, &k->body);
    lower_sign_scan(L); /* the exp calls whose argument is <= 0 (sign.c) */
    lower_launch_order(L); /* pid(0) in reverse where the loops grow with it (order.c) */
    if (L->tg->split_k)
        lower_split_begin(L);
    lower_index_widths(L);
    strbuf sig;
    sb_init(&sig);
    uint32_t cap = lower_list_cap(k);
    if (cap) /* tensor lists: a table by value, packed by the runtime (tilec/param_kind.h) */
        lower_line(L, "#ifndef TL_LIST\n#define TL_LIST\ntemplate <class T, int N> struct tl_list { long long n; T *ptr[N]; "
                      "long long numel[N]; };\n#endif");
    for (uint32_t i = 0; i < k->nparams; i++) {
        const tilec_param *p = &k->params[i];
        if (p->type.kind == TILEC_TE_LIST)
            sb_printf(&sig, "%sconst tl_list<%s, %u> %s", i ? ", " : "", lower_ctype(p->type.dtype), cap,
                      lower_cname(L, p->name));
        else
            sb_printf(&sig, "%s%s%s%s", i ? ", " : "", lower_ctype(p->type.dtype),
                      p->type.kind == TILEC_TE_POINTER ? " *" : " ", lower_cname(L, p->name));
    }
    if (L->tg->params) /* the target's own parameters (the sm_90a twin's tensor maps) */
        sb_puts(&sig, L->tg->params(L));
    sb_puts(&sig, lower_split_params(L)); /* split_k: the runtime's workspace and tile counters */
    /* `blocks`: at least that many blocks per SM (the register cap that follows) */
    int64_t blocks = tilec_kernel_hint(k, L->variant, "blocks", 0);
    const char *bounds = L->tg->launch_bounds ? L->tg->launch_bounds(L, blocks)
                         : blocks > 0         ? lower_fmt(L, "%d, %lld", L->nt, (long long)blocks)
                                              : lower_fmt(L, "%d", L->nt);
    lower_line(L, "extern \"C\" __global__ void __launch_bounds__(%s) %s(%s)", bounds, fname, sb_str(&sig));
    sb_free(&sig);
    lower_line(L, "{");
    L->ind++;
    lower_line(L, "extern __shared__ __align__(16) unsigned char tl_smem[];");
    const char *ids = L->tg->thread_ids ? L->tg->thread_ids(L) : NULL;
    if (ids)
        lower_line(L, "%s", ids);
    else
        lower_line(L, "const int tl_tid = threadIdx.x, tl_lane = tl_tid & 31, tl_warp = tl_tid >> 5;");
    lower_line(L, "(void)tl_smem; (void)tl_lane; (void)tl_warp;");
    if (L->tg->preamble)
        L->tg->preamble(L);
    lower_split_preamble(L);
    for (uint32_t i = 0; i < k->nhints; i++) {
        int64_t v = tilec_kernel_hint(k, L->variant, k->hints[i].name, 0);
        lower_line(L, "constexpr %s %s = %lld%s;", v > INT32_MAX || v < INT32_MIN ? "long long" : "int",
             lower_cname(L, k->hints[i].name), (long long)v, v > INT32_MAX || v < INT32_MIN ? "LL" : "");
    }
    for (uint32_t i = 0; i < k->nparams; i++) {
        const tilec_param *p = &k->params[i];
        tilec_type t = {.kind = TILEC_TY_VALUE, .dtype = p->type.dtype,
                        .ptr = p->type.kind == TILEC_TE_POINTER || p->type.kind == TILEC_TE_LIST,
                        .list = p->type.kind == TILEC_TE_LIST};
        val *v = lower_newval(L, VK_SCALAR, &t, lower_cname(L, p->name));
        if (!t.ptr && lower_compute_dt(t.dtype) != t.dtype) { /* an f16/bf16 scalar: computed in f32 */
            v->c = lower_fmt(L, "tl_arg%u", i);
            lower_line(L, "const %s %s = %s;", lower_cctype(t.dtype), v->c, lower_ld_elem(L, lower_cname(L, p->name), t.dtype));
        }
        if (!t.ptr)
            v->ty.dtype = lower_compute_dt(t.dtype);
        lower_bind(L, p->name, v);
    }
    lower_plan(L);
    L->depth = 1;
    L->tw.body = L->out.n;
    lower_emit_block(L, &k->body);
    L->tw.end = L->out.n;
    L->ind--;
    lower_line(L, "}");
}

void lower_free(lw *L)
{
    ar_free(&L->ar);
    sb_free(&L->out);
    free(L->binds);
    free(L->mats);
    free(L->spilled);
    sb_free(&L->notes);
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* One lowering of variant `variant` of k into L, stages without a hint
 * at most cap, the analysis's trace into axlog (or NULL); the kernel's
 * function name. */
static const char *lower_once(lw *L, tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, int variant, int cap,
                              strbuf *axlog)
{
    memset(L, 0, sizeof *L);
    L->ctx = ctx;
    L->m = m;
    L->k = k;
    L->variant = k->nvariants ? variant : -1;
    L->stages_cap = cap;
    L->axlog = axlog;
    L->tg = &lower_target_portable;
    ar_init(&L->ar);
    sb_init(&L->out);
    sb_init(&L->notes);
    /* loop-carried steps read as affine in the loop variable (ivstep.c): every pass below sees the rewrite */
    k = lower_ivstep(L, k);
    /* names up to TILEC_MAX_IDENT: no fixed buffer (one truncated long names) */
    const char *fname = lower_fmt(L, "%s_v%d", k->name, variant);
    lower_emit_kernel(L, fname);
    return fname;
}

int lower_axinfo_probe(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, int variant, strbuf *log)
{
    lw L;
    lower_once(&L, ctx, m, k, variant, LOWER_STAGES_MAX, log);
    int r = L.failed ? -1 : 0;
    lower_free(&L);
    return r;
}

tilec_status tilec_lower_kernel(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, int variant,
                                tilec_kernel_code *out)
{
    if (!ctx || !m || !k || !out || variant < 0 || (uint32_t)variant >= tilec_kernel_variant_count(k))
        return TILEC_ERR_ARG;
    memset(out, 0, sizeof *out);
    lw L;
    const char *fname;
    /* dot loops without a `stages` hint take the deepest ring that fits
     * (lower_stages); when what follows them overflows shared memory,
     * lower again with fewer stages */
    for (int cap = LOWER_STAGES_MAX;; cap--) {
        fname = lower_once(&L, ctx, m, k, variant, cap, NULL);
        if (L.failed || L.smem <= SMEM_LIMIT || L.stages_auto < 2)
            break;
        cap = L.stages_auto;
        lower_free(&L);
    }
    /* the translation unit: a header line, the headers it needs, the prelude, the kernel */
    strbuf tu;
    sb_init(&tu);
    sb_printf(&tu, "// Generated by tilec %s from %s: kernel %s\n", TILEC_VERSION_STRING, "<module>", k->name);
    if (lower_needs_half(sb_str(&L.out)))
        sb_puts(&tu, lower_half_headers);
    sb_puts(&tu, lower_prelude);
    sb_putc(&tu, '\n');
    sb_add(&tu, sb_str(&L.out), L.out.n);
    lower_min_sm(sb_str(&L.out), m->src.name, out); /* the body alone: the sm_90a twin is compiled only for sm_90a */
    if (L.tg->emit_twins && L.tg->emit_twins(&L, fname, &tu, &out->tma) < 0) /* the sm_90a twin */
        L.failed = 1;
    sb_free(&L.out);
    L.out = tu;
    if (!L.failed && L.smem > SMEM_LIMIT)
        lower_fail(&L, &k->loc, "needs more than %d bytes of shared memory (the most a block may have on sm_90)", SMEM_LIMIT);
    if (L.failed || L.out.failed || L.ar.failed) {
        free(out->tma.name);
        out->tma.name = NULL;
        if (!L.failed)
            diag_at(ctx, &m->src, &k->loc, TILEC_SEV_ERROR, "out of memory while lowering kernel '%s'", k->name);
        lower_free(&L);
        return TILEC_ERR_INPUT;
    }
    strbuf rem, rep;
    sb_init(&rem);
    sb_init(&rep);
    lower_remarks_render(&L, out->tma.name != NULL, &rem);
    sb_printf(&rep, "%s: %d threads, %u bytes of shared memory, %d __syncthreads\n%s", fname, L.nt, L.smem, L.nsync,
              sb_str(&L.notes));
    for (const char *p = sb_str(&rem); *p;) { /* the remarks close the report, one "  remark: " a line */
        size_t n = strcspn(p, "\n");
        sb_printf(&rep, "  remark: %.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
    out->layouts = rep.failed ? NULL : sb_take(&rep);
    out->remarks = rem.failed ? NULL : sb_take(&rem);
    sb_free(&rep);
    sb_free(&rem);
    out->name = dupstr(fname);
    out->source = sb_take(&L.out);
    out->threads = (uint32_t)L.nt;
    out->smem_bytes = L.smem;
    out->split_k = L.split ? (uint32_t)L.split : 0;
    out->split_bytes = L.split_bytes;
    out->variant = variant;
    out->kernel = k;
    out->written = tilec_kernel_written_params(k);
    out->nparams = k->nparams;
    out->params = calloc(k->nparams ? k->nparams : 1, sizeof *out->params);
    for (uint32_t i = 0; out->params && i < k->nparams; i++)
        out->params[i] = arg_kind(&k->params[i]);
    lower_free(&L);
    if (!out->name || !out->source || !out->params || !out->layouts || !out->remarks) {
        tilec_kernel_code_free(out);
        return TILEC_ERR_NOMEM;
    }
    return TILEC_OK;
}

void tilec_kernel_code_free(tilec_kernel_code *code)
{
    if (!code)
        return;
    free(code->name);
    free(code->source);
    free(code->params);
    free(code->tma.name);
    free(code->layouts);
    free(code->remarks);
    memset(code, 0, sizeof *code);
}

/* Every variant of every kernel of m lowered, what `part` takes of each
 * appended to b. */
static tilec_status each_variant(tilec_ctx *ctx, const tilec_module *m, strbuf *b,
                                 const char *(*part)(const tilec_kernel_code *))
{
    tilec_status st = TILEC_OK;
    for (uint32_t i = 0; i < m->kernels.n && st == TILEC_OK; i++) {
        const tilec_kernel *k = m->kernels.v[i];
        for (uint32_t v = 0; v < tilec_kernel_variant_count(k) && st == TILEC_OK; v++) {
            tilec_kernel_code code;
            st = tilec_lower_kernel(ctx, m, k, (int)v, &code);
            if (st == TILEC_OK) {
                sb_puts(b, part(&code));
                tilec_kernel_code_free(&code);
            }
        }
    }
    return st;
}

static const char *part_layouts(const tilec_kernel_code *c) { return c->layouts; }

/* the kernel without the prelude (written once for the whole file) */
static const char *part_kernel(const tilec_kernel_code *c)
{
    const char *fn = strstr(c->source, lower_prelude);
    return fn ? fn + strlen(lower_prelude) : c->source;
}

static tilec_status sink_out(tilec_status st, strbuf *b, tilec_sink sink)
{
    if (st == TILEC_OK && b->failed)
        st = TILEC_ERR_NOMEM;
    if (st == TILEC_OK && sink.write(sink.user, sb_str(b), b->n))
        st = TILEC_ERR_IO;
    sb_free(b);
    return st;
}

/* The layout report of every variant (--emit layouts). */
tilec_status tilec_module_emit_layouts(tilec_ctx *ctx, const tilec_module *m, tilec_sink sink)
{
    if (!ctx || !m || !sink.write)
        return TILEC_ERR_ARG;
    strbuf b;
    sb_init(&b);
    return sink_out(each_variant(ctx, m, &b, part_layouts), &b, sink);
}

tilec_status tilec_module_emit_cuda(tilec_ctx *ctx, const tilec_module *m, tilec_sink sink)
{
    return m ? tilec_modules_emit_cuda(ctx, &m, 1, sink) : TILEC_ERR_ARG;
}

/* A kernel of ms[i] named as one of an earlier module: a diagnostic at it
 * naming the first, and nonzero. */
static int kernel_defined_twice(tilec_ctx *ctx, const tilec_module *const *ms, size_t i)
{
    int bad = 0;
    for (uint32_t a = 0; a < ms[i]->kernels.n; a++) {
        const tilec_kernel *k = ms[i]->kernels.v[a];
        for (size_t j = 0; j < i; j++)
            for (uint32_t b = 0; b < ms[j]->kernels.n; b++) {
                const tilec_kernel *first = ms[j]->kernels.v[b];
                if (strcmp(first->name, k->name))
                    continue;
                diag_at(ctx, &ms[i]->src, &k->loc, TILEC_SEV_ERROR,
                        "kernel '%s' is also defined at %s:%u:%u: one CUDA file cannot hold both (%s_v0 would be "
                        "defined twice); rename one",
                        k->name, ms[j]->src.name, first->loc.line, first->loc.col, k->name);
                bad = 1;
            }
    }
    return bad;
}

tilec_status tilec_modules_emit_cuda(tilec_ctx *ctx, const tilec_module *const *ms, size_t n, tilec_sink sink)
{
    if (!ctx || (!ms && n) || !sink.write)
        return TILEC_ERR_ARG;
    for (size_t i = 0; i < n; i++)
        if (!ms[i])
            return TILEC_ERR_ARG;
    tilec_status st = TILEC_OK;
    for (size_t i = 1; i < n; i++)
        if (kernel_defined_twice(ctx, ms, i))
            st = TILEC_ERR_INPUT;
    strbuf body;
    sb_init(&body);
    for (size_t i = 0; i < n && st == TILEC_OK; i++)
        st = each_variant(ctx, ms[i], &body, part_kernel);
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "// Generated by tilec %s from ", TILEC_VERSION_STRING);
    for (size_t i = 0; i < n; i++) {
        sb_puts(&b, i ? ", " : "");
        esc_c_comment(&b, ms[i]->src.name);
    }
    sb_putc(&b, '\n');
    if (lower_needs_half(sb_str(&body)))
        sb_puts(&b, lower_half_headers);
    sb_puts(&b, lower_prelude);
    sb_add(&b, sb_str(&body), body.n);
    sb_free(&body);
    return sink_out(st, &b, sink);
}
