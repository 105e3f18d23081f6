/* emit_c.c: the "c" emitter. Each graph becomes NAME.h and NAME.c, which
 * compile with `cc -std=c11 -Wall -Werror -Iinclude` and link with
 * -ltilec. The .tile source is embedded as a string: NAME_load builds its
 * kernels through the runtime (the kernel cache makes that a file read
 * once warm); with the option "aot" (`--aot sm_90`) the CUBINs compiled
 * now are embedded instead, with their launch metadata and grids as C,
 * and NAME_load only loads them (tilec_program_load); NAME_run checks the input descriptors, allocates, launches
 * (variants through the multi-kernel), calls externs, and hands back the
 * outputs. TILEC_DEBUG_PRINT (read by NAME_load) turns on the debug
 * printer around every launch. Built with -DTILEC_BENCH_MAIN the .c file is a benchmark:
 * `./NAME R=4096 C=1024` runs the graph on random inputs and times it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "emit_c/c_sizes.h"
#include "tilec/emitter.h"
#include "tilec/lower.h"
#include "util/escape.h"
#include "util/mangle.h"
#include "util/strbuf.h"

typedef struct cstate {
    tilec_emit *e;
    const tilec_wir *w;
    const tilec_graph *g;
    strbuf body;   /* the statements of NAME_run */
    strbuf decls;  /* its buffer declarations */
    strbuf checked; /* size arguments already range-checked: "i32 N" */
    strbuf names[8]; /* the last names cn() spelled */
    int next;
    strbuf graph;    /* the graph's name in C (mg_c_graph) */
    csz sz;        /* the size block, spliced in after the input checks */
    size_t inputs_end; /* where in body the input checks end */
    int failed;
} cstate;

/* The C spelling of name in namespace kind (util/mangle.h); valid until
 * eight more names were spelled. */
static const char *cn(cstate *s, mg_c_kind kind, const char *name)
{
    strbuf *b = &s->names[s->next++ % 8];
    sb_reset(b);
    mg_c(b, kind, name, strlen(name));
    s->failed |= b->failed;
    return sb_str(b);
}

#define B(name) cn(s, MG_C_BUFFER, name)

/* The scalar parameter of g named `name` (n bytes), or NULL. */
static const tilec_param *scalar_param(const tilec_graph *g, const char *name, size_t n)
{
    for (uint32_t i = 0; g && i < g->nparams; i++)
        if (g->params[i].type.kind != TILEC_TE_TENSOR && strlen(g->params[i].name) == n &&
            !memcmp(g->params[i].name, name, n))
            return &g->params[i];
    return NULL;
}

/* C spelling of a size text: symbols and scalar parameters of g through
 * mg_c (as c_params declares them), cdiv(a, b) -> tl_cdiv(a, b). */
static void c_size(strbuf *b, const tilec_graph *g, const char *t)
{
    for (const char *p = t; *p;) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_') {
            const char *q = p;
            while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_')
                q++;
            /* sizes are int64_t: a u64 scalar is read as one, so range checks compare signed */
            const tilec_param *sp = *q == '(' ? NULL : scalar_param(g, p, (size_t)(q - p));
            int u64 = sp && sp->type.dtype == TILEC_DT_U64;
            if (*q == '(') {
                sb_printf(b, "tl_%.*s", (int)(q - p), p);
            } else {
                sb_puts(b, u64 ? "((int64_t)" : "");
                mg_c(b, sp ? MG_C_SCALAR : MG_C_SYMBOL, p, (size_t)(q - p));
                sb_puts(b, u64 ? ")" : "");
            }
            p = q;
        } else {
            sb_putc(b, *p++);
        }
    }
}

static const char *dt_enum(tilec_dtype d)
{
    static const char *const n[] = {"TILEC_DT_BOOL", "TILEC_DT_I8", "TILEC_DT_I16", "TILEC_DT_I32", "TILEC_DT_I64",
                                    "TILEC_DT_U8", "TILEC_DT_U16", "TILEC_DT_U32", "TILEC_DT_U64", "TILEC_DT_F16",
                                    "TILEC_DT_BF16", "TILEC_DT_F32", "TILEC_DT_F64"};
    return (unsigned)d < TILEC_DT_COUNT ? n[d] : "TILEC_DT_F32";
}

static const char *c_scalar_type(tilec_dtype d)
{
    switch (d) {
    case TILEC_DT_F32: return "float";
    case TILEC_DT_F64: return "double";
    case TILEC_DT_I64: return "int64_t";
    case TILEC_DT_U64: return "uint64_t";
    case TILEC_DT_U32: return "uint32_t";
    case TILEC_DT_BOOL: return "int";
    default: return "int32_t";
    }
}

/* A comment line. */
static void c_comment(strbuf *b, const char *indent, const char *text)
{
    sb_printf(b, "%s/* ", indent);
    esc_c_comment(b, text);
    sb_puts(b, " */\n");
}

/* "{s_R, tl_z0}": the sizes of line l's tensor, its bytes checked in the size block */
static void c_dims(cstate *s, strbuf *b, const tilec_wir_line *l)
{
    csz_tensor(&s->sz, b, l->name, dt_enum(l->dtype), l->dtype, l->rank, l->sizes);
}

/* tl_alloc(M, &b_NAME, "NAME", dtype, rank, {sizes}) */
static void c_alloc(cstate *s, const tilec_wir_line *l)
{
    sb_printf(&s->body, "    if (tl_alloc(M, &%s, \"%s\", %s, %u, (const int64_t[])", B(l->name), l->name,
              dt_enum(l->dtype), l->rank);
    c_dims(s, &s->body, l);
    sb_puts(&s->body, ", &tl_live, err, errlen))\n        goto tl_out;\n");
    sb_printf(&s->decls, "    tilec_tensor %s = {0};\n", B(l->name));
}

static int h_comment(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    c_comment(&s->body, "    ", l->text);
    return 0;
}

static int h_kernel_def(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    sb_printf(&s->body, "    /* kernel %s: %u variant%s, built by %s_load */\n", l->name, l->nvariants,
              l->nvariants == 1 ? "" : "s", sb_str(&s->graph));
    return 0;
}

static int h_allocate(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    sb_printf(&s->body, "    /* alloc %s: %s, ", l->name, tilec_dtype_name(l->dtype));
    esc_c_comment(&s->body, l->bytes);
    sb_puts(&s->body, " bytes */\n");
    c_alloc(s, l);
    return 0;
}

static int h_reuse(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    sb_printf(&s->decls, "    tilec_tensor %s = {0};\n", B(l->name));
    sb_printf(&s->body, "    /* reuse: %s takes the storage of %s */\n", l->name, l->from);
    sb_printf(&s->body, "    tl_shape(&%s, %s.data, %s, %u, (const int64_t[])", B(l->name), B(l->from), dt_enum(l->dtype),
              l->rank);
    c_dims(s, &s->body, l);
    sb_puts(&s->body, ");\n");
    return 0;
}

static int is_output(const cstate *s, const char *name)
{
    for (size_t i = 0; i < tilec_wir_output_count(s->w); i++)
        if (!strcmp(tilec_wir_output(s->w, i), name))
            return 1;
    return 0;
}

static int h_free(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    if (is_output(s, l->name))
        return 0;
    sb_printf(&s->body, "    tl_release(M, &tl_live, %s.data); /* %s */\n", B(l->name), l->name);
    return 0;
}

static int h_reinterpret(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    sb_printf(&s->decls, "    tilec_tensor %s = {0};\n", B(l->name));
    sb_printf(&s->body, "    /* view: %s of %s */\n", l->name, l->from);
    sb_printf(&s->body, "    tl_shape(&%s, %s.data + (uint64_t)", B(l->name), B(l->from));
    csz_offset(&s->sz, &s->body, l->name, l->offset, tilec_dtype_size(l->dtype));
    sb_printf(&s->body, ", %s, %u, (const int64_t[])", dt_enum(l->dtype), l->rank);
    c_dims(s, &s->body, l);
    sb_puts(&s->body, ");\n");
    return 0;
}

static int h_kernel_call(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    const tilec_kernel *k = l->kernel;
    if (!k || l->nargs != k->nparams || l->nargs > 64)
        return -1;
    sb_printf(&s->body, "    { /* %s, line %u */\n", k->name, l->loc.line);
    /* sizes must fit the parameter's type: checked in the size block */
    for (uint32_t i = 0; i < l->nargs; i++)
        if (k->params[i].type.kind != TILEC_TE_POINTER && l->args[i].kind == TILEC_WIR_ARG_SIZE)
            csz_fits(&s->sz, l->args[i].text, k->params[i].type.dtype, k->params[i].name, k->name);
    sb_printf(&s->body, "        tilec_rt_arg a[%u] = {", l->nargs ? l->nargs : 1);
    for (uint32_t i = 0; i < l->nargs; i++) {
        const tilec_param *p = &k->params[i];
        const tilec_wir_arg *a = &l->args[i];
        sb_puts(&s->body, i ? ", " : "");
        if (p->type.kind == TILEC_TE_POINTER) {
            sb_printf(&s->body, "{.ptr = %s.data}", B(a->text));
            continue;
        }
        static const char *const fields[] = {"i32", "i32", "i32", "i32", "i64", "u32", "u32", "u32", "u64",
                                             "f32", "f32", "f32", "f64"};
        const char *f = fields[p->type.dtype];
        sb_printf(&s->body, "{.%s = (%s)(", f, c_scalar_type(p->type.dtype));
        if (a->kind == TILEC_WIR_ARG_SCALAR) {
            const char *t = a->text;
            if (!strcmp(t, "true") || !strcmp(t, "false"))
                sb_puts(&s->body, t[0] == 't' ? "1" : "0");
            else if (strstr(t, "inf"))
                sb_printf(&s->body, "%sINFINITY", t[0] == '-' ? "-" : "");
            else if ((t[0] >= 'a' && t[0] <= 'z') || (t[0] >= 'A' && t[0] <= 'Z') || t[0] == '_')
                sb_puts(&s->body, cn(s, MG_C_SCALAR, t));
            else
                sb_puts(&s->body, t);
        } else {
            strbuf what;
            sb_init(&what);
            sb_printf(&what, "argument '%s' of %s", p->name, k->name);
            csz_use(&s->sz, &s->body, a->text, sb_str(&what));
            s->failed |= what.failed;
            sb_free(&what);
        }
        sb_puts(&s->body, ")}");
    }
    sb_puts(&s->body, "};\n");
    /* the debug printer: one branch when off */
    uint32_t nt = 0;
    for (uint32_t i = 0; i < l->nargs; i++)
        nt += k->params[i].type.kind == TILEC_TE_POINTER;
    sb_puts(&s->body, "        tilec_rt_status st;\n        if (M->dbg.level) {\n");
    sb_printf(&s->body, "            const tl_dbg_arg da[%u] = {", nt ? nt : 1);
    for (uint32_t i = 0, j = 0; i < l->nargs; i++) {
        if (k->params[i].type.kind != TILEC_TE_POINTER)
            continue;
        sb_puts(&s->body, j++ ? ", {" : "{");
        esc_c_string(&s->body, k->params[i].name, strlen(k->params[i].name));
        sb_puts(&s->body, ", ");
        esc_c_string(&s->body, l->args[i].text, strlen(l->args[i].text));
        sb_printf(&s->body, ", &%s}", B(l->args[i].text));
    }
    sb_printf(&s->body, "%s};\n            st = tl_dbg_launch(&M->dbg, M->rt, M->prog, ", nt ? "" : "{0}");
    esc_c_string(&s->body, s->g->name, strlen(s->g->name));
    sb_puts(&s->body, ", ");
    esc_c_string(&s->body, k->name, strlen(k->name));
    sb_puts(&s->body, ", ");
    esc_c_string(&s->body, l->grid ? l->grid : "", l->grid ? strlen(l->grid) : 0);
    sb_printf(&s->body, ", %d, a, %u, da, %u);\n        } else\n", l->nvariants > 1, l->nargs, nt);
    if (l->nvariants > 1)
        sb_printf(&s->body, "            st = tilec_program_launch_best(M->prog, \"%s\", a, %u, NULL, NULL);\n",
                  k->name, l->nargs);
    else
        sb_printf(&s->body, "            st = tilec_program_launch(M->prog, \"%s\", 0, a, %u, NULL);\n",
                  k->name, l->nargs);
    sb_printf(&s->body,
              "        if (st != TILEC_RT_OK) {\n"
              "            tl_fail(err, errlen, \"%s: launch of %s failed: %%s\", tilec_rt_last_error(M->rt));\n"
              "            goto tl_out;\n"
              "        }\n    }\n",
              s->g->name, k->name);
    return 0;
}

/* externs: inputs are the argument buffers; outputs the given list */
static void c_extern(cstate *s, const tilec_wir_line *l, const char *const *outs, uint32_t nouts)
{
    sb_printf(&s->body, "    { /* extern %s \"", l->name);
    esc_c_comment(&s->body, l->symbol); /* the parser allows [A-Za-z0-9_.] only: escaped all the same */
    sb_printf(&s->body, "\", line %u */\n", l->loc.line);
    sb_printf(&s->body, "        const tilec_tensor in[%u] = {", l->nargs ? l->nargs : 1);
    for (uint32_t i = 0; i < l->nargs; i++)
        sb_printf(&s->body, "%s%s", i ? ", " : "", B(l->args[i].text));
    sb_printf(&s->body, "%s};\n", l->nargs ? "" : "{0}");
    sb_printf(&s->body, "        tilec_tensor out[%u] = {", nouts ? nouts : 1);
    for (uint32_t i = 0; i < nouts; i++)
        sb_printf(&s->body, "%s%s", i ? ", " : "", B(outs[i]));
    sb_printf(&s->body, "%s};\n", nouts ? "" : "{0}");
    sb_puts(&s->body, "        if (tilec_externs_call(M->ext, ");
    esc_c_string(&s->body, l->symbol, strlen(l->symbol));
    sb_printf(&s->body, ", M->rt, NULL, in, %u, out, %u) != TILEC_RT_OK) {\n", l->nargs, nouts);
    sb_printf(&s->body, "            tl_fail(err, errlen, \"%s: %%s\", tilec_externs_last_error(M->ext));\n"
                        "            goto tl_out;\n        }\n    }\n",
              s->g->name);
}

static int h_extern_call(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    c_extern(s, l, l->outs, l->nouts);
    return 0;
}

static int h_extern_alloc(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    const tilec_wir_line *res[64]; /* the result, or each of a tuple */
    const char *outs[64];
    size_t n = tilec_wir_extern_results(s->w, l, res, 64);
    if (!n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        c_alloc(s, res[i]);
        outs[i] = res[i]->name;
    }
    c_extern(s, l, outs, (uint32_t)n);
    return 0;
}

static int h_multi_output(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    sb_printf(&s->body, "    /* %s is result %u of %s */\n", l->name, l->index, l->from);
    return 0;
}

static int h_assert_shape(void *u, const tilec_wir_line *l)
{
    cstate *s = u;
    strbuf *b = &s->body, t;
    sb_init(&t); /* the parameter: spelled once, cn() spells others meanwhile */
    mg_c(&t, MG_C_TENSOR, l->name, strlen(l->name));
    const char *T = sb_str(&t), *G = s->g->name;
    /* an input no kernel reads is still checked: not a warning */
    sb_printf(&s->decls, "    tilec_tensor %s __attribute__((unused)) = {0};\n", B(l->name));
    sb_printf(b, "    if (!%s || %s->dtype != %s || %s->rank != %u)\n", T, T, dt_enum(l->dtype), T, l->rank);
    sb_printf(b, "        return tl_fail(err, errlen, \"%s: %s must be a %s tensor of rank %u\");\n", G, l->name,
              tilec_dtype_name(l->dtype), l->rank);
    sb_printf(b, "    if (tl_bytes(%s->dtype, %u, %s->sizes, NULL))\n"
                 "        return tl_fail(err, errlen, \"%s: %s has a negative dimension or more than 2^63 - 1 bytes\");\n",
              T, l->rank, T, G, l->name);
    for (uint32_t d = 0; d < l->rank; d++) {
        if (l->binds && l->binds[d]) {
            sb_printf(b, "    const int64_t %s __attribute__((unused)) = %s->sizes[%u];\n",
                      cn(s, MG_C_SYMBOL, l->sizes[d]), T, d);
        } else {
            sb_printf(b, "    if (%s->sizes[%u] != (", T, d);
            c_size(b, s->g, l->sizes[d]);
            sb_printf(b, "))\n        return tl_fail(err, errlen, \"%s: dimension %u of %s is %%lld, but %s is %%lld\", "
                         "(long long)%s->sizes[%u], (long long)(",
                      G, d, l->name, l->sizes[d], T, d);
            c_size(b, s->g, l->sizes[d]);
            sb_puts(b, "));\n");
        }
    }
    sb_printf(b, "    if (!tl_contiguous(%s))\n        return tl_fail(err, errlen, \"%s: %s must be contiguous (row-major)\");\n",
              T, G, l->name);
    sb_printf(b, "    %s = *%s;\n", B(l->name), T); /* only once checked: it may be NULL */
    s->failed |= t.failed;
    sb_free(&t);
    s->inputs_end = b->n;
    return 0;
}

static const char prologue[] =
    "#include <math.h>\n"
    "#include <stdarg.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "\n"
    "typedef struct tl_mem {\n"
    "    uint64_t p[256], bytes[256];\n"
    "    int n;\n"
    "} tl_mem;\n"
    "\n"
    "static int tl_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));\n"
    "static int tl_fail(char *err, size_t errlen, const char *fmt, ...)\n"
    "{\n"
    "    if (err && errlen) {\n"
    "        va_list ap;\n"
    "        va_start(ap, fmt);\n"
    "        vsnprintf(err, errlen, fmt, ap);\n"
    "        va_end(ap);\n"
    "    }\n"
    "    return 1;\n"
    "}\n"
    "\n"
    "static inline void tl_shape(tilec_tensor *t, uint64_t data, tilec_dtype dt, uint32_t rank, const int64_t *sizes)\n"
    "{\n"
    "    memset(t, 0, sizeof *t);\n"
    "    t->data = data;\n"
    "    t->dtype = dt;\n"
    "    t->rank = rank;\n"
    "    int64_t st = 1;\n"
    "    for (int d = (int)rank - 1; d >= 0; d--) {\n"
    "        t->sizes[d] = sizes[d];\n"
    "        t->strides[d] = st;\n"
    "        st *= sizes[d];\n"
    "    }\n"
    "}\n"
    "\n"
    "static inline int tl_contiguous(const tilec_tensor *t)\n"
    "{\n"
    "    int64_t st = 1;\n"
    "    for (int d = (int)t->rank - 1; d >= 0; d--) {\n"
    "        if (t->sizes[d] != 1 && t->strides[d] != st)\n"
    "            return 0;\n"
    "        st *= t->sizes[d];\n"
    "    }\n"
    "    return 1;\n"
    "}\n"
    "\n";

/* The debug printer (docs/emitters.md), read once by NAME_load:
 * TILEC_DEBUG_PRINT=3 names each launch on stderr, 2 also prints the
 * statistics of every tensor argument after it (synchronized), 1 also
 * saves every tensor argument before and after it to TILEC_DEBUG_DIR;
 * TILEC_DEBUG_KERNELS=a,b limits it to those kernels. Off, a launch costs
 * one branch. */
static const char debug_prelude[] =
    "#include <sys/stat.h>\n"
    "\n"
    "typedef struct tl_dbg {\n"
    "    int level; /* TILEC_DEBUG_PRINT: 0 off, 3 names, 2 + statistics, 1 + files */\n"
    "    char dir[1024], kernels[1024];\n"
    "    unsigned long long launches;\n"
    "} tl_dbg;\n"
    "\n"
    "typedef struct tl_dbg_arg {\n"
    "    const char *param, *buffer;\n"
    "    const tilec_tensor *t;\n"
    "} tl_dbg_arg;\n"
    "\n"
    "static void tl_dbg_init(tl_dbg *d)\n"
    "{\n"
    "    const char *v = getenv(\"TILEC_DEBUG_PRINT\"), *dir = getenv(\"TILEC_DEBUG_DIR\"), *k = getenv(\"TILEC_DEBUG_KERNELS\");\n"
    "    memset(d, 0, sizeof *d);\n"
    "    d->level = v ? atoi(v) : 0;\n"
    "    if (d->level < 0 || d->level > 3)\n"
    "        d->level = 0;\n"
    "    snprintf(d->dir, sizeof d->dir, \"%s\", dir && *dir ? dir : \"tilec_debug\");\n"
    "    snprintf(d->kernels, sizeof d->kernels, \"%s\", k ? k : \"\");\n"
    "}\n"
    "\n"
    "/* is kernel k in the comma-separated TILEC_DEBUG_KERNELS (empty: every kernel)? */\n"
    "static int tl_dbg_match(const tl_dbg *d, const char *k)\n"
    "{\n"
    "    size_t n = strlen(k);\n"
    "    if (!d->kernels[0])\n"
    "        return 1;\n"
    "    for (const char *p = d->kernels;;) {\n"
    "        const char *q = strchr(p, ',');\n"
    "        size_t m = q ? (size_t)(q - p) : strlen(p);\n"
    "        if (m == n && !strncmp(p, k, n))\n"
    "            return 1;\n"
    "        if (!q)\n"
    "            return 0;\n"
    "        p = q + 1;\n"
    "    }\n"
    "}\n"
    "\n"
    "static size_t tl_dbg_numel(const tilec_tensor *t)\n"
    "{\n"
    "    size_t n = 1;\n"
    "    for (uint32_t d = 0; d < t->rank; d++)\n"
    "        n *= (size_t)t->sizes[d];\n"
    "    return n;\n"
    "}\n"
    "\n"
    "static void tl_dbg_shape(const tilec_tensor *t, char *buf, size_t cap)\n"
    "{\n"
    "    size_t k = (size_t)snprintf(buf, cap, \"%s[\", tilec_dtype_name(t->dtype));\n"
    "    for (uint32_t d = 0; d < t->rank && k < cap; d++)\n"
    "        k += (size_t)snprintf(buf + k, cap - k, \"%s%lld\", d ? \", \" : \"\", (long long)t->sizes[d]);\n"
    "    if (k < cap)\n"
    "        snprintf(buf + k, cap - k, \"]\");\n"
    "}\n"
    "\n"
    "/* element i of host copy h as a double; 0 and *ok = 0 for a dtype it cannot read */\n"
    "static double tl_dbg_elem(const unsigned char *h, size_t i, tilec_dtype dt, int *ok)\n"
    "{\n"
    "    switch (dt) {\n"
    "    case TILEC_DT_F32: { float f; memcpy(&f, h + i * 4, 4); return (double)f; }\n"
    "    case TILEC_DT_F64: { double f; memcpy(&f, h + i * 8, 8); return f; }\n"
    "    case TILEC_DT_BF16: {\n"
    "        uint16_t b; memcpy(&b, h + i * 2, 2);\n"
    "        uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return (double)f; }\n"
    "    case TILEC_DT_F16: {\n"
    "        uint16_t b; memcpy(&b, h + i * 2, 2);\n"
    "        int e = (b >> 10) & 0x1f, m = b & 0x3ff;\n"
    "        double v = (double)(e ? m + 1024 : m) / 16777216.0; /* no libm: scale by 2^(e-1) */\n"
    "        for (int j = 1; j < e && e < 31; j++)\n            v *= 2.0;\n"
    "        if (e == 31)\n            v = m ? (double)NAN : (double)INFINITY;\n"
    "        return (b & 0x8000) ? -v : v; }\n"
    "    case TILEC_DT_I32: { int32_t v; memcpy(&v, h + i * 4, 4); return (double)v; }\n"
    "    case TILEC_DT_I64: { int64_t v; memcpy(&v, h + i * 8, 8); return (double)v; }\n"
    "    case TILEC_DT_U32: { uint32_t v; memcpy(&v, h + i * 4, 4); return (double)v; }\n"
    "    case TILEC_DT_U64: { uint64_t v; memcpy(&v, h + i * 8, 8); return (double)v; }\n"
    "    case TILEC_DT_I16: { int16_t v; memcpy(&v, h + i * 2, 2); return (double)v; }\n"
    "    case TILEC_DT_U16: { uint16_t v; memcpy(&v, h + i * 2, 2); return (double)v; }\n"
    "    case TILEC_DT_I8: return (double)(int8_t)h[i];\n"
    "    case TILEC_DT_U8: case TILEC_DT_BOOL: return (double)h[i];\n"
    "    default: *ok = 0; return 0;\n"
    "    }\n"
    "}\n"
    "\n"
    "static double tl_dbg_sqrt(double x) /* no libm */\n"
    "{\n"
    "    double r = x > 1 ? x : 1;\n"
    "    for (int i = 0; i < 200 && x > 0; i++)\n        r = 0.5 * (r + x / r);\n"
    "    return x > 0 ? r : 0;\n"
    "}\n"
    "\n"
    "/* level 2: numel, min, max, mean, std (of the finite elements), NaN and Inf counts */\n"
    "static void tl_dbg_stats(const char *k, const tl_dbg_arg *a, const unsigned char *h, size_t n)\n"
    "{\n"
    "    char shape[256];\n"
    "    tl_dbg_shape(a->t, shape, sizeof shape);\n"
    "    double lo = 0, hi = 0, mean = 0, m2 = 0;\n"
    "    size_t nan = 0, inf = 0, fin = 0;\n"
    "    int ok = 1;\n"
    "    for (size_t i = 0; i < n && ok; i++) {\n"
    "        double v = tl_dbg_elem(h, i, a->t->dtype, &ok);\n"
    "        if (isnan(v))\n            nan++;\n"
    "        else if (isinf(v))\n            inf++;\n"
    "        else {\n"
    "            lo = fin && lo < v ? lo : v;\n"
    "            hi = fin && hi > v ? hi : v;\n"
    "            double dv = v - mean;\n"
    "            mean += dv / (double)++fin;\n"
    "            m2 += dv * (v - mean);\n"
    "        }\n"
    "    }\n"
    "    if (!ok)\n"
    "        fprintf(stderr, \"tilec debug:   %s %s (%s) %s: no statistics for this dtype\\n\", k, a->param, a->buffer, shape);\n"
    "    else\n"
    "        fprintf(stderr, \"tilec debug:   %s %s (%s) %s: numel=%zu min=%.6g max=%.6g mean=%.6g std=%.6g nan=%zu inf=%zu\\n\",\n"
    "                k, a->param, a->buffer, shape, n, lo, hi, mean, fin ? tl_dbg_sqrt(m2 / (double)fin) : 0.0, nan, inf);\n"
    "}\n"
    "\n"
    "/* level 1: DIR/<launch>_<kernel>_<param>_<when>.bin (raw bytes) and .json (what they are) */\n"
    "static void tl_dbg_save(tl_dbg *d, const char *graph, const char *k, const tl_dbg_arg *a, const char *when,\n"
    "                        const unsigned char *h, size_t bytes)\n"
    "{\n"
    "    char path[1400], shape[256];\n"
    "    mkdir(d->dir, 0777);\n"
    "    snprintf(path, sizeof path, \"%s/%06llu_%s_%s_%s.bin\", d->dir, d->launches, k, a->param, when);\n"
    "    FILE *f = fopen(path, \"wb\");\n"
    "    if (!f || fwrite(h, 1, bytes, f) != bytes)\n"
    "        fprintf(stderr, \"tilec debug: cannot write %s\\n\", path);\n"
    "    if (f)\n        fclose(f);\n"
    "    snprintf(path, sizeof path, \"%s/%06llu_%s_%s_%s.json\", d->dir, d->launches, k, a->param, when);\n"
    "    if (!(f = fopen(path, \"w\"))) {\n"
    "        fprintf(stderr, \"tilec debug: cannot write %s\\n\", path);\n        return;\n    }\n"
    "    tl_dbg_shape(a->t, shape, sizeof shape);\n"
    "    fprintf(f, \"{\\\"graph\\\": \\\"%s\\\", \\\"kernel\\\": \\\"%s\\\", \\\"launch\\\": %llu, \\\"arg\\\": \\\"%s\\\", \"\n"
    "               \"\\\"buffer\\\": \\\"%s\\\", \\\"when\\\": \\\"%s\\\", \\\"dtype\\\": \\\"%s\\\", \\\"shape\\\": [\",\n"
    "            graph, k, d->launches, a->param, a->buffer, when, tilec_dtype_name(a->t->dtype));\n"
    "    for (uint32_t i = 0; i < a->t->rank; i++)\n"
    "        fprintf(f, \"%s%lld\", i ? \", \" : \"\", (long long)a->t->sizes[i]);\n"
    "    fprintf(f, \"], \\\"bytes\\\": %zu}\\n\", bytes);\n"
    "    fclose(f);\n"
    "}\n"
    "\n"
    "/* copy every tensor argument to the host: statistics (level 2) or files (level 1) */\n"
    "static void tl_dbg_dump(tl_dbg *d, tilec_rt *rt, const char *graph, const char *k, const tl_dbg_arg *a, uint32_t na,\n"
    "                        const char *when)\n"
    "{\n"
    "    for (uint32_t i = 0; i < na; i++) {\n"
    "        size_t n = tl_dbg_numel(a[i].t), bytes = n * tilec_dtype_size(a[i].t->dtype);\n"
    "        unsigned char *h = bytes ? malloc(bytes) : NULL;\n"
    "        if (!a[i].t->data || !h || tilec_rt_memcpy_dtoh(rt, h, a[i].t->data, bytes) != TILEC_RT_OK)\n"
    "            fprintf(stderr, \"tilec debug:   %s %s (%s): cannot read it: %s\\n\", k, a[i].param, a[i].buffer,\n"
    "                    bytes ? tilec_rt_last_error(rt) : \"empty\");\n"
    "        else if (d->level == 1)\n"
    "            tl_dbg_save(d, graph, k, &a[i], when, h, bytes);\n"
    "        else\n"
    "            tl_dbg_stats(k, &a[i], h, n);\n"
    "        free(h);\n"
    "    }\n"
    "}\n"
    "\n"
    "/* a launch with the debug printer on (d->level != 0) */\n"
    "__attribute__((unused)) static tilec_rt_status tl_dbg_launch(tl_dbg *d, tilec_rt *rt, tilec_program *prog, const char *graph, const char *k,\n"
    "                                     const char *grid, int best, const tilec_rt_arg *args, uint32_t nargs,\n"
    "                                     const tl_dbg_arg *a, uint32_t na)\n"
    "{\n"
    "    int on = tl_dbg_match(d, k);\n"
    "    d->launches++;\n"
    "    if (on) {\n"
    "        fprintf(stderr, \"tilec debug: [%llu] %s: %s grid (%s)\", d->launches, graph, k, grid);\n"
    "        for (uint32_t i = 0; i < na; i++) {\n"
    "            char shape[256];\n"
    "            tl_dbg_shape(a[i].t, shape, sizeof shape);\n"
    "            fprintf(stderr, \"%s%s=%s %s\", i ? \", \" : \" \", a[i].param, a[i].buffer, shape);\n"
    "        }\n"
    "        fputc('\\n', stderr);\n"
    "        if (d->level == 1)\n"
    "            tl_dbg_dump(d, rt, graph, k, a, na, \"before\");\n"
    "    }\n"
    "    tilec_rt_status st = best ? tilec_program_launch_best(prog, k, args, nargs, NULL, NULL)\n"
    "                              : tilec_program_launch(prog, k, 0, args, nargs, NULL);\n"
    "    if (st != TILEC_RT_OK || !on || d->level == 3)\n"
    "        return st;\n"
    "    if ((st = tilec_rt_synchronize(rt)) != TILEC_RT_OK)\n"
    "        return st;\n"
    "    tl_dbg_dump(d, rt, graph, k, a, na, \"after\");\n"
    "    return TILEC_RT_OK;\n"
    "}\n"
    "\n";

static int c_begin(tilec_emit *e, void **state)
{
    cstate *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    s->e = e;
    s->w = tilec_emit_wir(e);
    s->g = tilec_emit_graph(e);
    sb_init(&s->body);
    sb_init(&s->decls);
    sb_init(&s->graph);
    for (int i = 0; i < 8; i++)
        sb_init(&s->names[i]);
    mg_c_graph(&s->graph, s->g->name);
    csz_init(&s->sz, s->g);
    *state = s;
    return 0;
}

/* ", const tilec_tensor *t_x, float p_eps" */
static void c_params(strbuf *b, const tilec_graph *g)
{
    for (uint32_t i = 0; i < g->nparams; i++) {
        const tilec_param *p = &g->params[i];
        int tensor = p->type.kind == TILEC_TE_TENSOR;
        sb_printf(b, ", %s%s", tensor ? "const tilec_tensor *" : c_scalar_type(p->type.dtype), tensor ? "" : " ");
        mg_c(b, tensor ? MG_C_TENSOR : MG_C_SCALAR, p->name, strlen(p->name));
    }
}

/* -DTILEC_BENCH_MAIN: `./NAME R=4096 C=1024 [iters=N]` times the graph on
 * random inputs (device events, median). */
static void c_bench_main(strbuf *c, cstate *s)
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
    for (uint32_t i = 0; i < g->nparams; i++) {
        const tilec_param *p = &g->params[i];
        if (p->type.kind != TILEC_TE_TENSOR) {
            sb_printf(c, "    const %s %s = (%s)tl_arg(argc, argv, \"%s\", 1);\n", c_scalar_type(p->type.dtype),
                      cn(s, MG_C_SCALAR, p->name), c_scalar_type(p->type.dtype), p->name);
            continue;
        }
        const tilec_wir_line *a = NULL;
        for (size_t k = 0; k < tilec_wir_line_count(s->w) && !a; k++) {
            const tilec_wir_line *l = tilec_wir_line_at(s->w, k);
            if (l->kind == TILEC_WIR_ASSERT_SHAPE && l->index == i)
                a = l;
        }
        const char *in = cn(s, MG_C_BENCH_IN, p->name);
        sb_printf(c, "    tilec_tensor %s;\n    tl_shape(&%s, 0, %s, %u, (const int64_t[]){", in, in,
                  dt_enum(p->type.dtype), a ? a->rank : 0);
        for (uint32_t d = 0; a && d < a->rank; d++) {
            sb_puts(c, d ? ", " : "");
            c_size(c, s->g, a->sizes[d]);
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
    for (uint32_t i = 0; i < g->nparams; i++)
        sb_printf(c, ", %s%s", g->params[i].type.kind == TILEC_TE_TENSOR ? "&" : "",
                  cn(s, g->params[i].type.kind == TILEC_TE_TENSOR ? MG_C_BENCH_IN : MG_C_SCALAR, g->params[i].name));
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

/* ---- --aot ARCH: the kernels compiled now, embedded with their launch metadata ---- */

/* "sm_90", "sm_90a", "sm_100f": what NVRTC's --gpu-architecture takes */
static int aot_arch_ok(const char *a)
{
    if (strncmp(a, "sm_", 3))
        return 0;
    size_t d = 0;
    while (a[3 + d] >= '0' && a[3 + d] <= '9')
        d++;
    const char *t = a + 3 + d;
    return d >= 2 && d <= 3 && a[3] != '0' && (!*t || (!t[1] && (*t == 'a' || *t == 'f')));
}

/* One grid expression as C statements computing temporary *out; what
 * tilec_kernel_grid evaluates (it fails on the same inputs). -1: a form
 * the grid evaluator does not know (the launch always fails). */
static int aot_grid_expr(strbuf *b, const tilec_kernel *k, int variant, const tilec_expr *e, int *tmp, int *out)
{
    int a = 0, c = 0, t;
    switch (e->kind) {
    case TILEC_EX_INT:
        t = (*tmp)++;
        sb_printf(b, "    const int64_t t%d = INT64_C(%" PRId64 ");\n", t, (int64_t)e->ival);
        *out = t;
        return 0;
    case TILEC_EX_NAME:
        for (uint32_t i = 0; i < k->nparams; i++)
            if (!strcmp(k->params[i].name, e->name)) {
                t = (*tmp)++;
                sb_printf(b, "    const int64_t t%d = a[%u];\n", t, i);
                *out = t;
                return 0;
            }
        for (uint32_t i = 0; i < k->nhints; i++)
            if (!strcmp(k->hints[i].name, e->name)) {
                t = (*tmp)++;
                sb_printf(b, "    const int64_t t%d = INT64_C(%" PRId64 ");\n", t,
                          (int64_t)tilec_kernel_hint(k, variant, e->name, 0));
                *out = t;
                return 0;
            }
        return -1;
    case TILEC_EX_UNARY:
        if (aot_grid_expr(b, k, variant, e->args[0], tmp, &a))
            return -1;
        t = (*tmp)++;
        if (e->op == TILEC_OP_NEG)
            sb_printf(b, "    int64_t t%d;\n    if (__builtin_sub_overflow((int64_t)0, t%d, &t%d))\n        return -1;\n", t,
                      a, t);
        else
            sb_printf(b, "    const int64_t t%d = %st%d;\n", t, e->op == TILEC_OP_BITNOT ? "~" : "(int64_t)!", a);
        *out = t;
        return 0;
    case TILEC_EX_CALL:
        if (strcmp(e->name, "cdiv") || e->nargs != 2 || aot_grid_expr(b, k, variant, e->args[0], tmp, &a) ||
            aot_grid_expr(b, k, variant, e->args[1], tmp, &c))
            return -1;
        t = (*tmp)++;
        sb_printf(b, "    if (t%d <= 0)\n        return -1;\n    const int64_t t%d = t%d <= 0 ? 0 : t%d / t%d + (t%d %% t%d > 0);\n",
                  c, t, a, a, c, a, c);
        *out = t;
        return 0;
    case TILEC_EX_BINARY: {
        const char *ovf = e->op == TILEC_OP_ADD ? "add" : e->op == TILEC_OP_SUB ? "sub" : e->op == TILEC_OP_MUL ? "mul" : NULL;
        const char *op = e->op == TILEC_OP_DIV ? "/" : e->op == TILEC_OP_MOD ? "%" : e->op == TILEC_OP_SHL ? "<<"
                       : e->op == TILEC_OP_SHR ? ">>" : NULL;
        if ((!ovf && !op) || aot_grid_expr(b, k, variant, e->args[0], tmp, &a) ||
            aot_grid_expr(b, k, variant, e->args[1], tmp, &c))
            return -1;
        t = (*tmp)++;
        if (ovf)
            sb_printf(b, "    int64_t t%d;\n    if (__builtin_%s_overflow(t%d, t%d, &t%d))\n        return -1;\n", t, ovf, a,
                      c, t);
        else if (op[0] == '/' || op[0] == '%')
            sb_printf(b, "    if (!t%d || (t%d == INT64_MIN && t%d == -1))\n        return -1;\n    const int64_t t%d = t%d %s t%d;\n",
                      c, a, c, t, a, op, c);
        else { /* shifts of a value >= 0, no bit lost: what tilec_kernel_grid allows */
            sb_printf(b, "    if (t%d < 0 || t%d < 0 || t%d > 62", a, c, c);
            if (op[0] == '<')
                sb_printf(b, " || t%d > (INT64_MAX >> t%d)", a, c);
            sb_printf(b, ")\n        return -1;\n    const int64_t t%d = t%d %s t%d;\n", t, a, op, c);
        }
        *out = t;
        return 0;
    }
    default:
        return -1;
    }
}

static const char *aot_kind_name(tilec_rt_param_kind k)
{
    static const char *const names[] = {"TILEC_RT_PARAM_POINTER", "TILEC_RT_PARAM_I32", "TILEC_RT_PARAM_I64",
                                        "TILEC_RT_PARAM_F32", "TILEC_RT_PARAM_F64", "TILEC_RT_PARAM_U32",
                                        "TILEC_RT_PARAM_U64"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "TILEC_RT_PARAM_POINTER";
}

/* Every variant of every kernel of m compiled for arch, as C: the CUBINs,
 * grid functions, and the table tilec_program_load takes (tl_kernels,
 * TL_NKERNELS). 0, or -1 with a diagnostic in ctx. */
static int aot_kernels(tilec_emit *e, strbuf *c, const char *arch)
{
    tilec_ctx *ctx = tilec_emit_ctx(e);
    const tilec_module *m = tilec_emit_module(e);
    if (!aot_arch_ok(arch)) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR,
                "--aot: '%s' is not a GPU architecture (sm_XY: sm_80, sm_90, sm_90a, ...)", arch);
        return -1;
    }
    strbuf table;
    sb_init(&table);
    uint32_t total = 0;
    int bad = 0;
    sb_printf(c, "/* the kernels, compiled ahead of time for %s */\n", arch);
    for (size_t i = 0; i < tilec_module_kernel_count(m) && !bad; i++) {
        const tilec_kernel *k = tilec_module_kernel(m, i);
        uint32_t nv = tilec_kernel_variant_count(k);
        uint64_t written = tilec_kernel_written_params(k);
        for (uint32_t v = 0; v < nv && !bad; v++, total++) {
            tilec_kernel_code code = {0};
            void *cubin = NULL;
            size_t size = 0;
            if (tilec_compile_kernel(ctx, m, k, (int)v, arch, &code, &cubin, &size) != TILEC_OK) {
                bad = 1;
                break;
            }
            tilec_rt_param_kind kinds[64];
            for (uint32_t a = 0; a < code.nparams && !bad; a++)
                if (a >= 64 || tilec_rt_param_kind_of(code.params[a], &kinds[a])) {
                    diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR,
                            "kernel '%s': parameter %u cannot be passed to a kernel yet (pointers and 32/64-bit "
                            "scalars can)", k->name, a + 1);
                    bad = 1;
                }
            if (!bad) {
                sb_printf(c, "static const unsigned char tl_cubin_%s_v%u[%zu] = {", k->name, v, size);
                for (size_t b = 0; b < size; b++)
                    sb_printf(c, "%s0x%02x,", b % 16 ? "" : "\n    ", ((const unsigned char *)cubin)[b]);
                sb_puts(c, "\n};\n");
                if (code.nparams) {
                    sb_printf(c, "static const tilec_rt_param_kind tl_kinds_%s_v%u[] = {", k->name, v);
                    for (uint32_t a = 0; a < code.nparams; a++)
                        sb_printf(c, "%s%s", a ? ", " : "", aot_kind_name(kinds[a]));
                    sb_puts(c, "};\n");
                }
                sb_printf(c, "static int tl_grid_%s_v%u(const int64_t *a, uint32_t g[3])\n{\n    (void)a;\n", k->name,
                          v);
                strbuf body;
                sb_init(&body);
                int tmp = 0, ok = 1, res[3] = {-1, -1, -1};
                int gv = k->nvariants ? (int)v : -1;
                for (uint32_t d = 0; d < 3 && d < k->ngrid && ok; d++)
                    ok = aot_grid_expr(&body, k, gv, k->grid[d], &tmp, &res[d]) == 0;
                if (!ok) {
                    sb_puts(c, "    (void)g;\n    return -1; /* a grid the runtime cannot evaluate */\n}\n");
                } else {
                    sb_add(c, sb_str(&body), body.n);
                    for (int d = 0; d < 3; d++) {
                        if (res[d] < 0)
                            sb_printf(c, "    g[%d] = 1;\n", d);
                        else
                            sb_printf(c, "    if (t%d < 0 || t%d > %s)\n        return -1;\n    g[%d] = (uint32_t)t%d;\n",
                                      res[d], res[d], d ? "65535" : "INT64_C(2147483647)", d, res[d]);
                    }
                    sb_puts(c, "    return 0;\n}\n");
                }
                bad |= body.failed;
                sb_free(&body);
                char kref[300] = "NULL";
                if (code.nparams)
                    snprintf(kref, sizeof kref, "tl_kinds_%.250s_v%u", k->name, v);
                sb_printf(&table,
                          "    {\"%s\", %u, %u, \"%s\", tl_cubin_%s_v%u, sizeof tl_cubin_%s_v%u, %u, %u, %u, %s,\n"
                          "     UINT64_C(0x%" PRIx64 "), tl_grid_%s_v%u},\n",
                          k->name, v, nv, code.name, k->name, v, k->name, v, code.threads, code.smem_bytes, code.nparams,
                          kref, written, k->name, v);
            }
            free(cubin);
            tilec_kernel_code_free(&code);
        }
    }
    sb_printf(c, "\n#define TL_NKERNELS %uu\nstatic const tilec_aot_kernel tl_kernels[%s] = {\n", total,
              total ? "" : "1");
    sb_add(c, sb_str(&table), table.n);
    sb_puts(c, total ? "};\n\n" : "    {0},\n};\n\n");
    bad |= table.failed;
    sb_free(&table);
    return bad ? -1 : 0;
}

static int c_end(tilec_emit *e, void *state)
{
    cstate *s = state;
    const tilec_graph *g = s->g;
    const tilec_module *m = tilec_emit_module(e);
    const char *n = sb_str(&s->graph), *file = tilec_module_file(m);
    char hname[300], cname[300];
    snprintf(hname, sizeof hname, "%.250s.h", n);
    snprintf(cname, sizeof cname, "%.250s.c", n);
    size_t nout = tilec_wir_output_count(s->w);
    const char *aot = tilec_emit_option(e, "aot");

    /* ---- NAME.h ---- */
    strbuf h;
    sb_init(&h);
    sb_printf(&h, "/* Generated by tilec %s from ", tilec_version());
    esc_c_comment(&h, file);
    sb_putc(&h, '\n');
    sb_printf(&h, "   graph %s: do not edit. */\n#ifndef TILEC_GRAPH_%s_H\n#define TILEC_GRAPH_%s_H\n\n", n, n, n);
    sb_puts(&h, "#include <stddef.h>\n\n#include \"tilec/externs.h\"\n#include \"tilec/program.h\"\n"
                "#include \"tilec/tensor.h\"\n\n");
    if (g->doc)
        c_comment(&h, "", g->doc);
    sb_printf(&h, "typedef struct %s_module %s_module;\n\n", n, n);
    if (aot)
        sb_printf(&h, "/* Load the graph's kernels, compiled ahead of time for %s (no NVRTC, no parsing). 0, or 1\n"
                      "   with a message in err. */\nint %s_load(tilec_rt *rt, %s_module **out, char *err, size_t errlen);\n",
                  aot, n, n);
    else
        sb_printf(&h, "/* Build the graph's kernels for rt's device (from the kernel cache once warm). 0, or 1 with a\n"
                      "   message in err. */\nint %s_load(tilec_rt *rt, %s_module **out, char *err, size_t errlen);\n", n, n);
    sb_printf(&h, "void %s_unload(%s_module *m);\n", n, n);
    sb_printf(&h, "/* The registry of extern kernels the graph calls (register your own on it). */\n"
                  "tilec_externs *%s_externs(%s_module *m);\n", n, n);
    sb_printf(&h, "/* Give an output back when done with it: its memory serves the next call. */\n"
                  "void %s_release(%s_module *m, tilec_tensor *t);\n", n, n);
    sb_printf(&h, "/* Run the graph. Inputs must be contiguous; the outputs are allocated here and handed over\n"
                  "   (free each with tilec_rt_free unless it is a view of another). 0, or 1 with a message. */\n");
    strbuf params;
    sb_init(&params);
    c_params(&params, g);
    sb_printf(&h, "int %s_run(%s_module *m%s", n, n, sb_str(&params));
    for (size_t i = 0; i < nout; i++)
        sb_printf(&h, ", tilec_tensor *%s", cn(s, MG_C_OUTPUT, tilec_wir_output(s->w, i)));
    sb_puts(&h, ", char *err, size_t errlen);\n\n#endif\n");

    /* ---- NAME.c ---- */
    strbuf c;
    sb_init(&c);
    sb_printf(&c, "/* Generated by tilec %s from ", tilec_version());
    esc_c_comment(&c, file);
    sb_putc(&c, '\n');
    sb_printf(&c, "   graph %s: do not edit. */\n#include \"%s\"\n\n", n, hname);
    sb_puts(&c, prologue);
    sb_puts(&c, csz_prelude);
    sb_puts(&c, debug_prelude);
    strbuf fileq; /* the file name as a C string literal: it may hold any bytes */
    sb_init(&fileq);
    esc_c_string(&fileq, file, strlen(file));
    int aot_bad = 0;
    if (aot) {
        aot_bad = aot_kernels(e, &c, aot);
    } else {
        sb_puts(&c, "/* the .tile module, built at load time */\nstatic const char tl_source[] =\n    ");
        size_t srclen = 0;
        const char *src = tilec_module_source(m, &srclen);
        esc_c_string(&c, src, srclen);
        sb_puts(&c, ";\n\n");
    }
    sb_printf(&c,
              "/* freed intermediates kept for the next call, by size: cuMemAlloc and cuMemFree\n"
              "   cost far more than the kernels of a small graph */\n"
              "typedef struct tl_spare {\n    uint64_t p, bytes;\n} tl_spare;\n\n"
              "struct %s_module {\n    tilec_rt *rt;\n    tilec_ctx *ctx;\n    tilec_module *mod;\n"
              "    tilec_cache *cache;\n    tilec_program *prog;\n    tilec_externs *ext;\n"
              "    tl_spare spare[64];\n    int nspare;\n    tl_dbg dbg;\n};\n\n",
              n);
    sb_printf(&c,
              "/* give every spare buffer back to the device */\n"
              "static void tl_trim(%s_module *M)\n{\n"
              "    for (int i = 0; i < M->nspare; i++)\n        tilec_rt_free(M->rt, M->spare[i].p);\n"
              "    M->nspare = 0;\n}\n\n",
              n);
    sb_printf(&c,
              "/* a spare of the same size, else a new buffer; when the device is full, the spares\n"
              "   go back to it and the allocation is tried once more */\n"
              "static int tl_alloc(%s_module *M, tilec_tensor *t, const char *name, tilec_dtype dt, uint32_t rank,\n"
              "                    const int64_t *sizes, tl_mem *mem, char *err, size_t errlen)\n{\n"
              "    uint64_t bytes = 0, p = 0;\n"
              "    char shape[128];\n"
              "    if (tl_bytes(dt, rank, sizes, &bytes))\n"
              "        return tl_fail(err, errlen, \"%s: %%s (%%s[%%s]) has a negative dimension or more than 2^63 - 1 bytes\",\n"
              "                       name, tilec_dtype_name(dt), tl_dims(shape, sizeof shape, rank, sizes));\n"
              "    if (!bytes)\n        bytes = 1;\n"
              "    if (mem->n == 256)\n"
              "        return tl_fail(err, errlen, \"%s: more than 256 live buffers at %%s\", name);\n"
              "    for (int i = 0; i < M->nspare && !p; i++)\n"
              "        if (M->spare[i].bytes == bytes) {\n"
              "            p = M->spare[i].p;\n            M->spare[i] = M->spare[--M->nspare];\n        }\n"
              "    if (!p && tilec_rt_malloc(M->rt, bytes, &p) != TILEC_RT_OK && M->nspare) {\n"
              "        tl_trim(M);\n        p = 0;\n        tilec_rt_malloc(M->rt, bytes, &p);\n    }\n"
              "    if (!p)\n"
              "        return tl_fail(err, errlen, \"%s: cannot allocate %%s (%%s[%%s], %%llu bytes): %%s\", name,\n"
              "                       tilec_dtype_name(dt), tl_dims(shape, sizeof shape, rank, sizes), (unsigned long long)bytes, tilec_rt_last_error(M->rt));\n"
              "    mem->p[mem->n] = p;\n    mem->bytes[mem->n++] = bytes;\n"
              "    tl_shape(t, p, dt, rank, sizes);\n    return 0;\n}\n\n",
              n, n, n, n);
    sb_printf(&c, "/* an intermediate the graph is done with: kept for the next call (stream order makes\n"
                  "   reuse safe), or freed when the spare list is full */\n"
                  "static void tl_release(%s_module *M, tl_mem *mem, uint64_t p)\n{\n"
                  "    for (int i = 0; i < mem->n; i++)\n        if (mem->p[i] == p) {\n"
                  "            if (M->nspare < 64)\n                M->spare[M->nspare++] = (tl_spare){p, mem->bytes[i]};\n"
                  "            else\n                tilec_rt_free(M->rt, p);\n"
                  "            mem->p[i] = mem->p[--mem->n];\n            mem->bytes[i] = mem->bytes[mem->n];\n"
                  "            return;\n        }\n}\n\n",
              n);
    if (aot)
        sb_printf(&c,
                  "int %s_load(tilec_rt *rt, %s_module **out, char *err, size_t errlen)\n{\n"
                  "    %s_module *M = calloc(1, sizeof *M);\n"
                  "    if (!M)\n        return tl_fail(err, errlen, \"%s: out of memory\");\n"
                  "    M->rt = rt;\n    tl_dbg_init(&M->dbg);\n    M->ext = tilec_externs_new();\n"
                  "    tilec_rt_status st = M->ext ? tilec_program_load(rt, tl_kernels, TL_NKERNELS, &M->prog) : TILEC_RT_NOMEM;\n"
                  "    if (st != TILEC_RT_OK) {\n"
                  "        tl_fail(err, errlen, \"%s: cannot load the kernels (compiled for %s): %%s: %%s\",\n"
                  "                tilec_rt_status_string(st), tilec_rt_last_error(rt));\n"
                  "        %s_unload(M);\n        return 1;\n    }\n    *out = M;\n    return 0;\n}\n\n",
                  n, n, n, n, n, aot, n);
    else
        sb_printf(&c,
                  "int %s_load(tilec_rt *rt, %s_module **out, char *err, size_t errlen)\n{\n"
                  "    %s_module *M = calloc(1, sizeof *M);\n"
                  "    if (!M)\n        return tl_fail(err, errlen, \"%s: out of memory\");\n"
                  "    M->rt = rt;\n    tl_dbg_init(&M->dbg);\n    M->ctx = tilec_ctx_new();\n    M->ext = tilec_externs_new();\n"
                  "    tilec_cache_open(NULL, &M->cache);\n"
                  "    tilec_build_options o = {.cache = M->cache};\n"
                  "    if (!M->ctx || !M->ext ||\n"
                  "        tilec_parse_string(M->ctx, %s, tl_source, sizeof tl_source - 1, &M->mod) != TILEC_OK ||\n"
                  "        tilec_program_build(M->ctx, rt, M->mod, &o, &M->prog) != TILEC_OK) {\n"
                  "        const tilec_diag *d = M->ctx ? tilec_ctx_diag(M->ctx, 0) : NULL;\n"
                  "        tl_fail(err, errlen, \"%s: cannot build the kernels: %%s\", d ? d->message : \"out of memory\");\n"
                  "        %s_unload(M);\n        return 1;\n    }\n    *out = M;\n    return 0;\n}\n\n",
                  n, n, n, n, sb_str(&fileq), n, n);
    sb_printf(&c,
              "void %s_unload(%s_module *M)\n{\n    if (!M)\n        return;\n"
              "    tilec_program_free(M->prog);\n    tilec_module_free(M->mod);\n    tilec_cache_close(M->cache);\n"
              "    tl_trim(M);\n"
              "    tilec_externs_free(M->ext);\n    tilec_ctx_free(M->ctx);\n    free(M);\n}\n\n",
              n, n);
    sb_printf(&c, "tilec_externs *%s_externs(%s_module *M) { return M->ext; }\n\n", n, n);
    sb_printf(&c, "void %s_release(%s_module *M, tilec_tensor *t)\n{\n"
                  "    uint64_t bytes = 0;\n"
                  "    if (!t->data)\n        return;\n"
                  "    if (t->rank > TILEC_TENSOR_MAX_RANK || tl_bytes(t->dtype, t->rank, t->sizes, &bytes)) {\n"
                  "        tilec_rt_free(M->rt, t->data); /* not one of ours as it is: not kept */\n"
                  "        t->data = 0;\n        return;\n    }\n"
                  "    if (M->nspare < 64)\n        M->spare[M->nspare++] = (tl_spare){t->data, bytes ? bytes : 1};\n"
                  "    else\n        tilec_rt_free(M->rt, t->data);\n    t->data = 0;\n}\n\n",
              n, n);
    sb_printf(&c, "int %s_run(%s_module *M%s", n, n, sb_str(&params));
    for (size_t i = 0; i < nout; i++)
        sb_printf(&c, ", tilec_tensor *%s", cn(s, MG_C_OUTPUT, tilec_wir_output(s->w, i)));
    sb_puts(&c, ", char *err, size_t errlen)\n{\n    int tl_rc = 1;\n    tl_mem tl_live = {.n = 0};\n");
    sb_add(&c, sb_str(&s->decls), s->decls.n);
    for (uint32_t i = 0; i < g->nparams; i++) /* a scalar no kernel takes is not a warning */
        if (g->params[i].type.kind != TILEC_TE_TENSOR)
            sb_printf(&c, "    (void)%s;\n", cn(s, MG_C_SCALAR, g->params[i].name));
    sb_add(&c, sb_str(&s->body), s->inputs_end);
    sb_add(&c, sb_str(&s->sz.checks), s->sz.checks.n);
    sb_add(&c, sb_str(&s->body) + s->inputs_end, s->body.n - s->inputs_end);
    for (size_t i = 0; i < nout; i++) {
        const char *o = tilec_wir_output(s->w, i);
        int input = 0;
        for (uint32_t p = 0; p < g->nparams; p++)
            input |= g->params[p].type.kind == TILEC_TE_TENSOR && !strcmp(g->params[p].name, o);
        if (input) /* the caller owns its input: it gets a copy it may free */
            sb_printf(&c,
                      "    { /* %s is an input: the output is a copy */\n"
                      "        const tilec_tensor tl_in = %s;\n"
                      "        if (tl_alloc(M, &%s, \"%s\", tl_in.dtype, tl_in.rank, tl_in.sizes, &tl_live, err, errlen))\n"
                      "            goto tl_out;\n"
                      "        uint64_t tl_n = 0; /* checked with the inputs */\n"
                      "        (void)tl_bytes(tl_in.dtype, tl_in.rank, tl_in.sizes, &tl_n);\n"
                      "        if (tl_n && tilec_rt_memcpy_dtod(M->rt, %s.data, tl_in.data, tl_n) != TILEC_RT_OK) {\n"
                      "            tl_fail(err, errlen, \"%s: cannot copy %s: %%s\", tilec_rt_last_error(M->rt));\n"
                      "            goto tl_out;\n        }\n    }\n",
                      o, B(o), B(o), o, B(o), g->name, o);
        sb_printf(&c, "    *%s = %s;\n", cn(s, MG_C_OUTPUT, o), B(o));
    }
    sb_puts(&c, "    tl_live.n = 0; /* the outputs now belong to the caller */\n    tl_rc = 0;\ntl_out:\n"
                "    if (tl_rc) { /* a failed call gives all its memory back, and the spares */\n"
                "        tilec_rt_synchronize(M->rt);\n"
                "        for (int i = 0; i < tl_live.n; i++)\n            tilec_rt_free(M->rt, tl_live.p[i]);\n"
                "        tl_trim(M);\n    }\n"
                "    return tl_rc;\n}\n");

    c_bench_main(&c, s);
    int bad = aot_bad || s->failed || s->sz.failed || s->sz.checks.failed || h.failed || c.failed || fileq.failed || s->body.failed || s->decls.failed ||
              tilec_emit_write(e, hname, sb_str(&h), h.n) || tilec_emit_write(e, cname, sb_str(&c), c.n);
    sb_free(&h);
    sb_free(&c);
    sb_free(&params);
    sb_free(&fileq);
    sb_free(&s->body);
    csz_free(&s->sz);
    sb_free(&s->decls);
    sb_free(&s->graph);
    for (int i = 0; i < 8; i++)
        sb_free(&s->names[i]);
    free(s);
    return bad ? -1 : 0;
}

const tilec_emitter tilec_emit_c_emitter = {
    TILEC_EMITTER_HEADER,
    .name = "c",
    .description = "a C wrapper per graph (NAME.c, NAME.h) over libtilec",
    .begin = c_begin,
    .hooks =
        {
            {
                {
                    .comment = h_comment,
                    .kernel_def = h_kernel_def,
                    .allocate = h_allocate,
                    .reuse = h_reuse,
                    .free_if_not_reused = h_free,
                    .free = h_free,
                    .reinterpret = h_reinterpret,
                    .kernel_call = h_kernel_call,
                    .extern_call = h_extern_call,
                    .extern_alloc = h_extern_alloc,
                    .multi_output = h_multi_output,
                    .assert_shape = h_assert_shape,
                },
            },
        },
    .end = c_end,
};
