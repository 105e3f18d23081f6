/* dot.c: an emitter plugin that draws each graph of a .tile module as a
 * Graphviz digraph, NAME.dot. Build it as a shared object (`make` builds
 * build/examples/emitters/libtilec_dot.so) and load it with
 *
 *     tilec FILE.tile --plugin build/examples/emitters/libtilec_dot.so --emit dot -o out
 *
 * What it draws (see examples/emitters/README.md):
 *  - input tensors (ASSERT_SHAPE): light blue boxes "name\ndtype[shape]";
 *  - input tensor lists (ASSERT_LIST): light blue stacked boxes "name\n[*dtype]",
 *    connected to each kernel that takes one both ways (written in place);
 *  - collectives (COLLECTIVE): octagons between their input and result;
 *  - buffers the graph allocates (ALLOCATE, REUSE, EXTERN_ALLOC results,
 *    MULTI_OUTPUT): boxes; a REUSE also gets a dashed edge old -> new;
 *  - views (REINTERPRET): dotted-outline boxes with a dotted edge from the
 *    base buffer;
 *  - kernel calls: ellipses "kernel\nN variants\ngrid(...)\nline L";
 *  - extern calls: hexagons "extern \"symbol\"\nline L";
 *  - outputs: filled gold with a double border;
 *  - doc comments: lines of the graph's label, in order.
 * Frees and kernel definitions draw nothing.
 *
 * Reads and writes. An EXTERN_CALL line names the buffers it writes (outs);
 * the others it reads. A KERNEL_CALL line does not say, so this plugin
 * looks at the kernel itself (the public syntax tree, tilec/ast.h): a
 * pointer parameter is written when it is a leaf of the address of a
 * store() or atomic_add() (through the lets it comes from), and read when
 * it is a leaf of the address of a load() or atomic_add(). Edges:
 * buffer -> call for a read, call -> buffer for a write, both for both; a
 * pointer parameter the kernel neither loads nor stores through gets a
 * dotted buffer -> call edge. Each edge is labelled with the parameter.
 *
 * Every label is escaped for a DOT quoted string (quotes, backslashes,
 * newlines, control bytes, '&', invalid UTF-8), so no .tile text can
 * break the file. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/emitter.h"

int tilec_plugin_register(tilec_ctx *ctx);

/* ---- a growable string ---- */
typedef struct buf {
    char *s;
    size_t n, cap;
    int failed;
} buf;

static void buf_put(buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->failed = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void buf_str(buf *b, const char *s) { buf_put(b, s, strlen(s)); }

static void buf_fmt(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_fmt(buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        b->failed = 1;
    else
        buf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* The length of the valid UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, min = 0x10000;
    else
        return 0;
    unsigned v = c & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3fu);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    return n;
}

/* Append text escaped for the inside of a DOT "..." string: '"' and '\'
 * get a backslash, a newline becomes \n (a centred line break), '&' becomes
 * &amp; (Graphviz reads entities in labels), other control bytes and
 * invalid UTF-8 become '?'. NULL appends nothing. */
static void buf_esc(buf *b, const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    while (s && *s) {
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            char two[2] = {'\\', (char)c};
            buf_put(b, two, 2);
        } else if (c == '\n') {
            buf_str(b, "\\n");
        } else if (c == '&') {
            buf_str(b, "&amp;");
        } else if (c == '\t') {
            buf_str(b, " ");
        } else if (c < 0x20 || c == 0x7f) {
            buf_str(b, "?");
        } else if (c >= 0x80) {
            size_t n = utf8_len(s);
            if (!n) {
                buf_str(b, "?");
            } else {
                buf_put(b, (const char *)s, n);
                s += n;
                continue;
            }
        } else {
            buf_put(b, (const char *)s, 1);
        }
        s++;
    }
}

/* ---- reads and writes of a kernel's pointer parameters ---- */
enum { USE_READ = 1, USE_WRITE = 2 };

static void mark_expr(const tilec_kernel *k, const tilec_expr *e, unsigned *use, unsigned how, int depth);

/* Every let (or assignment) of `name` anywhere in the body: its value's leaves. */
static void mark_let(const tilec_kernel *k, const tilec_block *b, const char *name, unsigned *use, unsigned how,
                     int depth)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if ((s->kind == TILEC_ST_LET || s->kind == TILEC_ST_ASSIGN) && s->nnames && s->value &&
            !strcmp(s->names[0], name))
            mark_expr(k, s->value, use, how, depth + 1);
        mark_let(k, &s->body, name, use, how, depth);
        mark_let(k, &s->orelse, name, use, how, depth);
    }
}

static void mark_expr(const tilec_kernel *k, const tilec_expr *e, unsigned *use, unsigned how, int depth)
{
    if (!e || depth > 32)
        return;
    if (e->kind == TILEC_EX_NAME && e->name) {
        for (uint32_t i = 0; i < k->nparams; i++)
            if (k->params[i].name && !strcmp(k->params[i].name, e->name)) {
                if (k->params[i].type.kind == TILEC_TE_POINTER)
                    use[i] |= how;
                return;
            }
        mark_let(k, &k->body, e->name, use, how, depth);
        return;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        mark_expr(k, e->args[i], use, how, depth);
}

/* Find load/store/atomic_add calls anywhere in an expression. */
static void find_expr(const tilec_kernel *k, const tilec_expr *e, unsigned *use)
{
    if (!e)
        return;
    if (e->kind == TILEC_EX_CALL && e->name && e->nargs) {
        if (!strcmp(e->name, "load"))
            mark_expr(k, e->args[0], use, USE_READ, 0);
        else if (!strcmp(e->name, "store"))
            mark_expr(k, e->args[0], use, USE_WRITE, 0);
        else if (!strcmp(e->name, "atomic_add"))
            mark_expr(k, e->args[0], use, USE_READ | USE_WRITE, 0);
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        find_expr(k, e->args[i], use);
}

static void find_block(const tilec_kernel *k, const tilec_block *b, unsigned *use)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        find_expr(k, s->value, use);
        find_expr(k, s->lo, use);
        find_expr(k, s->hi, use);
        find_expr(k, s->step, use);
        for (uint32_t j = 0; j < s->nvalues; j++)
            find_expr(k, s->values[j], use);
        find_block(k, &s->body, use);
        find_block(k, &s->orelse, use);
    }
}

/* ---- the emitter ---- */
typedef struct tuple {
    char *name; /* the tuple of a multi-output extern */
    unsigned call;
} tuple;

typedef struct dot {
    tilec_emit *e;
    char file[300];
    buf out;      /* the body, in line order */
    buf comments; /* doc comments, for the graph's label */
    unsigned ncalls;
    tuple *tuples;
    size_t ntuples;
} dot;

static void shape(buf *b, const tilec_wir_line *l)
{
    buf_esc(b, tilec_dtype_name(l->dtype));
    buf_str(b, "[");
    for (uint32_t i = 0; i < l->rank; i++) {
        if (i)
            buf_str(b, ", ");
        buf_esc(b, l->sizes ? l->sizes[i] : "?");
    }
    buf_str(b, "]");
}

/* A buffer node: "buf_NAME" [label="NAME\ndtype[shape]<extra>", attrs]. */
static void buffer_node(dot *d, const tilec_wir_line *l, const char *extra, const char *attrs)
{
    buf *b = &d->out;
    buf_str(b, "  \"buf_");
    buf_esc(b, l->name);
    buf_str(b, "\" [label=\"");
    buf_esc(b, l->name);
    buf_str(b, "\\n");
    shape(b, l);
    if (extra)
        buf_esc(b, extra);
    buf_str(b, "\"");
    if (attrs)
        buf_fmt(b, ", %s", attrs);
    buf_str(b, "];\n");
}

/* An edge between a buffer and call node `call`; to_call: buffer -> call. */
static void edge(dot *d, const char *name, unsigned call, int to_call, const char *label, const char *attrs)
{
    buf *b = &d->out;
    if (to_call) {
        buf_str(b, "  \"buf_");
        buf_esc(b, name);
        buf_fmt(b, "\" -> \"call_%u\"", call);
    } else {
        buf_fmt(b, "  \"call_%u\" -> \"buf_", call);
        buf_esc(b, name);
        buf_str(b, "\"");
    }
    if (label || attrs) {
        buf_str(b, " [");
        if (label) {
            buf_str(b, "label=\"");
            buf_esc(b, label);
            buf_str(b, "\"");
        }
        if (attrs)
            buf_fmt(b, "%s%s", label ? ", " : "", attrs);
        buf_str(b, "]");
    }
    buf_str(b, ";\n");
}

static int dot_begin(tilec_emit *e, void **state)
{
    dot *d = calloc(1, sizeof *d);
    if (!d)
        return -1;
    d->e = e;
    snprintf(d->file, sizeof d->file, "%.250s.dot", tilec_emit_graph(e)->name);
    *state = d;
    return 0;
}

static int dot_comment(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    buf_str(&d->comments, "# ");
    buf_esc(&d->comments, l->text);
    buf_str(&d->comments, "\\l");
    return d->comments.failed;
}

static int dot_skip(void *user, const tilec_wir_line *l)
{
    (void)l;
    return ((dot *)user)->out.failed;
}

static int dot_input(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    buffer_node(d, l, "\ninput", "style=filled, fillcolor=lightblue");
    return d->out.failed;
}

/* A list's node: a stacked box named and typed, then `rest` (its kind and style). */
static void list_node(buf *b, const tilec_wir_line *l, const char *rest)
{
    buf_str(b, "  \"buf_");
    buf_esc(b, l->name);
    buf_str(b, "\" [label=\"");
    buf_esc(b, l->name);
    buf_fmt(b, "\\n[*%s]\\n%s];\n", tilec_dtype_name(l->dtype), rest);
}

static int dot_list(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    list_node(&d->out, l, "input list\", shape=box3d, style=filled, fillcolor=lightblue");
    return d->out.failed;
}

/* MAKE_LIST: a sub-list of a list parameter, with an edge from it. */
static int dot_make_list(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    buf *b = &d->out;
    list_node(b, l, "sub-list\", shape=box3d");
    buf_str(b, "  \"buf_");
    buf_esc(b, l->from ? l->from : "?");
    buf_str(b, "\" -> \"buf_");
    buf_esc(b, l->name);
    buf_str(b, "\" [style=dashed];\n");
    return b->failed;
}

/* LIST_OF: a list of the graph's tensors, with an edge from each. */
static int dot_list_of(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    buf *b = &d->out;
    buf_str(b, "  \"buf_");
    buf_esc(b, l->name);
    buf_str(b, "\" [label=\"");
    buf_esc(b, l->name);
    buf_fmt(b, "\\n[*%s]\\nlist of %u\", shape=box3d];\n", tilec_dtype_name(l->dtype), l->nargs);
    for (uint32_t i = 0; i < l->nargs; i++) {
        buf_str(b, "  \"buf_");
        buf_esc(b, l->args[i].text);
        buf_str(b, "\" -> \"buf_");
        buf_esc(b, l->name);
        buf_str(b, "\" [style=dashed];\n");
    }
    return b->failed;
}

static int dot_allocate(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    buffer_node(d, l, NULL, NULL);
    return d->out.failed;
}

static int dot_reuse(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    buffer_node(d, l, NULL, NULL);
    buf *b = &d->out;
    buf_str(b, "  \"buf_");
    buf_esc(b, l->from);
    buf_str(b, "\" -> \"buf_");
    buf_esc(b, l->name);
    buf_str(b, "\" [style=dashed, label=\"reuse\", color=gray40, fontcolor=gray40];\n");
    return b->failed;
}

static int dot_view(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    buf extra = {0};
    buf_str(&extra, "\nview of ");
    buf_str(&extra, l->from ? l->from : "?");
    buf_str(&extra, ", offset ");
    buf_str(&extra, l->offset ? l->offset : "0");
    if (extra.failed) {
        free(extra.s);
        return -1;
    }
    buffer_node(d, l, extra.s, "style=dotted");
    free(extra.s);
    buf *b = &d->out;
    buf_str(b, "  \"buf_");
    buf_esc(b, l->from);
    buf_str(b, "\" -> \"buf_");
    buf_esc(b, l->name);
    buf_str(b, "\" [style=dotted, label=\"view\"];\n");
    return b->failed;
}

static int dot_kernel_call(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    buf *b = &d->out;
    unsigned id = ++d->ncalls;
    const tilec_kernel *k = l->kernel;
    buf_fmt(b, "  \"call_%u\" [shape=ellipse, style=filled, fillcolor=palegreen, label=\"", id);
    buf_esc(b, k ? k->name : l->name);
    buf_fmt(b, "\\n%u variant%s", l->nvariants, l->nvariants == 1 ? "" : "s");
    if (l->grid) {
        buf_str(b, "\\ngrid(");
        buf_esc(b, l->grid);
        buf_str(b, ")");
    }
    buf_fmt(b, "\\nline %u\"];\n", l->loc.line);

    unsigned *use = NULL;
    if (k && k->nparams) {
        use = calloc(k->nparams, sizeof *use);
        if (!use)
            return -1;
        find_block(k, &k->body, use);
    }
    for (uint32_t i = 0; i < l->nargs; i++) {
        const char *pname = k && i < k->nparams ? k->params[i].name : NULL;
        if (l->args[i].kind == TILEC_WIR_ARG_LIST) { /* its tensors, read and written in place */
            edge(d, l->args[i].text, id, 1, pname, NULL);
            edge(d, l->args[i].text, id, 0, pname, NULL);
        }
        if (l->args[i].kind == TILEC_WIR_ARG_ITEM) { /* xs[i]: one of the list's tensors, edges labelled xs[i] */
            const char *t = l->args[i].text, *br = strchr(t, '[');
            char *name = br ? strndup(t, (size_t)(br - t)) : NULL;
            if (!name) {
                free(use);
                return -1;
            }
            edge(d, name, id, 1, t, "style=dashed");
            edge(d, name, id, 0, t, "style=dashed");
            free(name);
            continue;
        }
        if (l->args[i].kind != TILEC_WIR_ARG_BUFFER)
            continue;
        /* no kernel to look at: connected both ways */
        unsigned u = k && i < k->nparams ? use[i] : USE_READ | USE_WRITE;
        if (u & USE_READ)
            edge(d, l->args[i].text, id, 1, pname, NULL);
        if (u & USE_WRITE)
            edge(d, l->args[i].text, id, 0, pname, NULL);
        if (!u)
            edge(d, l->args[i].text, id, 1, pname, "style=dotted");
    }
    free(use);
    return b->failed;
}

static void extern_node(dot *d, const tilec_wir_line *l, unsigned id)
{
    buf *b = &d->out;
    buf_fmt(b, "  \"call_%u\" [shape=hexagon, style=filled, fillcolor=lightsalmon, label=\"extern ", id);
    buf_esc(b, l->ext ? l->ext->name : l->name);
    buf_str(b, "\\n\\\"");
    buf_esc(b, l->symbol);
    buf_fmt(b, "\\\"\\nline %u\"];\n", l->loc.line);
}

static int is_out(const tilec_wir_line *l, const char *name)
{
    for (uint32_t i = 0; i < l->nouts; i++)
        if (l->outs[i] && !strcmp(l->outs[i], name))
            return 1;
    return 0;
}

static int dot_extern_call(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    unsigned id = ++d->ncalls;
    extern_node(d, l, id);
    for (uint32_t i = 0; i < l->nargs; i++)
        if (l->args[i].kind == TILEC_WIR_ARG_BUFFER && !is_out(l, l->args[i].text))
            edge(d, l->args[i].text, id, 1, NULL, NULL);
    for (uint32_t i = 0; i < l->nouts; i++)
        edge(d, l->outs[i], id, 0, "writes", NULL);
    return d->out.failed;
}

static int dot_extern_alloc(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    unsigned id = ++d->ncalls;
    extern_node(d, l, id);
    for (uint32_t i = 0; i < l->nargs; i++)
        if (l->args[i].kind == TILEC_WIR_ARG_BUFFER)
            edge(d, l->args[i].text, id, 1, NULL, NULL);
    if (l->nresults == 1) {
        buffer_node(d, l, NULL, NULL);
        edge(d, l->name, id, 0, NULL, NULL);
    } else {
        /* the results come as MULTI_OUTPUT lines naming this tuple */
        tuple *t = realloc(d->tuples, (d->ntuples + 1) * sizeof *t);
        if (!t)
            return -1;
        d->tuples = t;
        t[d->ntuples].name = strdup(l->name ? l->name : "");
        t[d->ntuples].call = id;
        if (!t[d->ntuples].name)
            return -1;
        d->ntuples++;
    }
    return d->out.failed;
}

static int dot_multi_output(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    char extra[64];
    snprintf(extra, sizeof extra, "\nresult %u", l->index);
    buffer_node(d, l, extra, NULL);
    for (size_t i = 0; i < d->ntuples; i++)
        if (l->from && !strcmp(d->tuples[i].name, l->from)) {
            edge(d, l->name, d->tuples[i].call, 0, NULL, NULL);
            break;
        }
    return d->out.failed;
}

/* a collective: a node of its own between its input and its result */
static int dot_collective(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    buf *b = &d->out;
    unsigned id = ++d->ncalls;
    buf_fmt(b, "  \"call_%u\" [shape=octagon, style=filled, fillcolor=lightblue, label=\"", id);
    buf_esc(b, tilec_coll_name(l->coll));
    if (l->coll == TILEC_COLL_ALL_REDUCE || l->coll == TILEC_COLL_REDUCE_SCATTER)
        buf_fmt(b, " %s", tilec_redop_name(l->redop));
    buf_fmt(b, "\\nline %u\"];\n", l->loc.line);
    edge(d, l->from, id, 1, NULL, NULL);
    buffer_node(d, l, NULL, NULL);
    edge(d, l->name, id, 0, NULL, NULL);
    return b->failed;
}

/* a graph's for loop: its lines in a cluster labelled with the loop */
static int dot_loop(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    buf *b = &d->out;
    buf_fmt(b, "  subgraph \"cluster_loop_%u\" {\n  label=\"for ", ++d->ncalls);
    buf_esc(b, l->name);
    for (uint32_t i = 0; i < l->nargs && i < 3; i++) {
        buf_str(b, i == 0 ? " in " : i == 1 ? " .. " : " step ");
        buf_esc(b, l->args[i].text);
    }
    buf_str(b, "\";\n");
    return b->failed;
}

static int dot_end_loop(void *user, const tilec_wir_line *l)
{
    dot *d = user;
    (void)l;
    buf_str(&d->out, "  }\n");
    return d->out.failed;
}

static void dot_free(dot *d)
{
    for (size_t i = 0; i < d->ntuples; i++)
        free(d->tuples[i].name);
    free(d->tuples);
    free(d->out.s);
    free(d->comments.s);
    free(d);
}

static int dot_end(tilec_emit *e, void *state)
{
    dot *d = state;
    const tilec_wir *w = tilec_emit_wir(e);
    buf head = {0};
    buf_str(&head, "digraph \"");
    buf_esc(&head, tilec_emit_graph(e)->name);
    buf_str(&head, "\" {\n  graph [rankdir=TB, labelloc=t, labeljust=l, fontname=\"Helvetica\", label=\"graph ");
    buf_esc(&head, tilec_emit_graph(e)->name);
    buf_str(&head, "\\l");
    if (d->comments.s)
        buf_str(&head, d->comments.s);
    buf_str(&head, "\"];\n  node [shape=box, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n");
    if (d->out.s)
        buf_str(&head, d->out.s);
    for (size_t i = 0; i < tilec_wir_output_count(w); i++) {
        buf_str(&head, "  \"buf_");
        buf_esc(&head, tilec_wir_output(w, i));
        buf_str(&head, "\" [style=\"filled,bold\", fillcolor=gold, peripheries=2];\n");
    }
    buf_str(&head, "}\n");
    int r = head.failed || d->out.failed || d->comments.failed ? -1
                                                                 : tilec_emit_write(e, d->file, head.s, head.n);
    free(head.s);
    dot_free(d);
    return r;
}

static const tilec_emitter dot_emitter = {
    TILEC_EMITTER_HEADER,
    .name = "dot",
    .description = "a Graphviz picture of each graph (NAME.dot)",
    .begin = dot_begin,
    .hooks = {{{
        .comment = dot_comment,
        .kernel_def = dot_skip,
        .allocate = dot_allocate,
        .reuse = dot_reuse,
        .free_if_not_reused = dot_skip,
        .free = dot_skip,
        .reinterpret = dot_view,
        .kernel_call = dot_kernel_call,
        .assert_list = dot_list,
        .make_list = dot_make_list,
        .list_of = dot_list_of,
        .extern_call = dot_extern_call,
        .extern_alloc = dot_extern_alloc,
        .multi_output = dot_multi_output,
        .assert_shape = dot_input,
        .collective = dot_collective,
        .loop = dot_loop,
        .end_loop = dot_end_loop,
    }}},
    .end = dot_end,
};

int tilec_plugin_register(tilec_ctx *ctx)
{
    return tilec_register_emitter(ctx, &dot_emitter) == TILEC_OK ? 0 : 1;
}
