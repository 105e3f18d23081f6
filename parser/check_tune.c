/* check_tune.c: a kernel's tuning space (docs/tuning.md). The header: its
 * axes are checked (not empty, no axis twice or also a hint, values
 * distinct, ranges forwards, warps and stages by their rules, the product
 * bounded) and put first among the hints, the first value of each the base
 * configuration; a kernel with no hints, tune or variants gets the default
 * space of its kind (a dot, a row or an elementwise kernel, by its body)
 * when it names a free tile hint of that space. After
 * the base configuration is checked, an axis that sizes a tile must be
 * powers of two; then every configuration of the product is checked as a
 * variant with its errors captured: one that fails is pruned with its first
 * error as the reason, the others stay variants for the tuning pass
 * (lower/tune.c), which keeps the best. */
#include <stdlib.h>
#include <string.h>

#include "parser/check_internal.h"
#include "parser/tune.h"

/* The default spaces (docs/tuning.md): an axis `named` is in the space
 * only when the kernel names it (a row kernel without ROWS keeps one row a
 * program). keep: the candidates kept a shape class (0: TILEC_TUNE_KEEP). */
typedef struct space_axis {
    const char *name;
    int64_t values[8];
    uint32_t n;
    bool named;
} space_axis;

static const space_axis dot_space[] = {
    {"BM", {64, 128, 256}, 3, false}, {"BN", {64, 128, 256}, 3, false}, {"BK", {32, 64}, 2, false},
    {"warps", {4, 8}, 2, false},      {"stages", {2, 3, 4}, 3, false},
};
static const space_axis row_space[] = {
    {"ROWS", {1, 2, 4, 8, 16, 32}, 6, true},
    {"BLOCK", {128, 256, 512, 1024, 2048, 4096, 8192, 16384}, 8, true},
    {"warps", {1, 2, 4, 8, 16}, 5, false},
};
static const space_axis elementwise_space[] = {
    {"BLOCK", {256, 512, 1024, 2048, 4096, 8192}, 6, true},
    {"warps", {1, 2, 4, 8, 16}, 5, false},
};

static const struct {
    const space_axis *axes;
    uint32_t n, keep;
} spaces[] = {
    [TILEC_TUNE_DOT] = {dot_space, sizeof dot_space / sizeof dot_space[0], 0},
    [TILEC_TUNE_ROW] = {row_space, sizeof row_space / sizeof row_space[0], 4},
    [TILEC_TUNE_ELEMENTWISE] = {elementwise_space, sizeof elementwise_space / sizeof elementwise_space[0], 2},
};

static const char *const reductions[] = {"sum", "max", "min", "prod", "argmax", "argmin", "cumsum", "scan"};

int chk_tune_reduction(const char *call)
{
    for (size_t i = 0; i < sizeof reductions / sizeof reductions[0]; i++)
        if (!strcmp(call, reductions[i]))
            return 1;
    return 0;
}

int chk_tune_expr_uses(const tilec_expr *e, const char *call, const char *name)
{
    if (!e)
        return 0;
    if (call && e->kind == TILEC_EX_CALL && !strcmp(e->name, call))
        return 1;
    if (name && e->kind == TILEC_EX_NAME && !strcmp(e->name, name))
        return 1;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (chk_tune_expr_uses(e->args[i], call, name))
            return 1;
    return 0;
}

static int block_uses(const tilec_block *b, const char *call, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (chk_tune_expr_uses(s->value, call, name) || chk_tune_expr_uses(s->lo, call, name) || chk_tune_expr_uses(s->hi, call, name) ||
            chk_tune_expr_uses(s->step, call, name) || block_uses(&s->body, call, name) || block_uses(&s->orelse, call, name))
            return 1;
        for (uint32_t j = 0; j < s->nvalues; j++)
            if (chk_tune_expr_uses(s->values[j], call, name))
                return 1;
    }
    return 0;
}

/* Whether a let, a tuple let or a loop of the block binds name. */
static int block_binds(const tilec_block *b, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        for (uint32_t j = 0; s->kind != TILEC_ST_ASSIGN && j < s->nnames; j++)
            if (s->names[j] && !strcmp(s->names[j], name))
                return 1;
        if (block_binds(&s->body, name) || block_binds(&s->orelse, name))
            return 1;
    }
    return 0;
}

static int is_param(const tilec_kernel *k, const char *name)
{
    for (uint32_t i = 0; i < k->nparams; i++)
        if (!strcmp(k->params[i].name, name))
            return 1;
    return 0;
}

const char *chk_tune_kind_name(tilec_tune_kind kind)
{
    static const char *const names[] = {"an unclassified", "a dot", "a row", "an elementwise"};
    return names[kind];
}

tilec_tune_kind chk_tune_kind(const tilec_kernel *k)
{
    if (block_uses(&k->body, "dot", NULL))
        return TILEC_TUNE_DOT;
    for (size_t i = 0; i < sizeof reductions / sizeof reductions[0]; i++)
        if (block_uses(&k->body, reductions[i], NULL))
            return k->ngrid == 1 ? TILEC_TUNE_ROW : TILEC_TUNE_OTHER;
    return TILEC_TUNE_ELEMENTWISE;
}

/* Whether the kernel names `name` as a free hint: in its body or grid,
 * neither a parameter nor bound by a let or a loop. */
static int names_free(const tilec_kernel *k, const char *name)
{
    if (is_param(k, name) || block_binds(&k->body, name))
        return 0;
    if (block_uses(&k->body, NULL, name))
        return 1;
    for (uint32_t i = 0; i < k->ngrid; i++)
        if (chk_tune_expr_uses(k->grid[i], NULL, name))
            return 1;
    return 0;
}

/* The kind whose default space a kernel written without tile hints gets,
 * or TILEC_TUNE_OTHER: no hints, tune or variants, and it names a free
 * tile hint of its kind's space (BM, BN, BK; ROWS, BLOCK; BLOCK). */
static tilec_tune_kind wants_default(const tilec_kernel *k)
{
    if (k->tune || k->nhints || k->has_variants || chk_first_list(k)) /* a list kernel has one variant */
        return TILEC_TUNE_OTHER;
    tilec_tune_kind kind = chk_tune_kind(k);
    if (kind == TILEC_TUNE_OTHER)
        return kind;
    static const char *const tiles[][3] = {
        [TILEC_TUNE_DOT] = {"BM", "BN", "BK"}, [TILEC_TUNE_ROW] = {"ROWS", "BLOCK"}, [TILEC_TUNE_ELEMENTWISE] = {"BLOCK"}};
    for (size_t i = 0; i < 3 && tiles[kind][i]; i++)
        if (names_free(k, tiles[kind][i]))
            return kind;
    return TILEC_TUNE_OTHER;
}

/* After `undefined name 'X'` in a kernel, X a tile hint of a default space
 * (BM BN BK ROWS BLOCK): a note at the kernel saying why it got no default
 * space and what to write, so that a user who read "Default spaces" is not
 * left with the bare error. */
void chk_tune_note_undefined(checker *ck, const char *name)
{
    static const char *const tiles[][3] = {
        [TILEC_TUNE_DOT] = {"BM", "BN", "BK"}, [TILEC_TUNE_ROW] = {"ROWS", "BLOCK"}, [TILEC_TUNE_ELEMENTWISE] = {"BLOCK"}};
    const tilec_kernel *k = ck->k;
    if (!k || k->tune_default || !ck->emitted || ck->capture)
        return;
    if (strcmp(name, "BM") && strcmp(name, "BN") && strcmp(name, "BK") && strcmp(name, "ROWS") && strcmp(name, "BLOCK"))
        return;
    const tilec_param *l = chk_first_list(k);
    tilec_tune_kind kind = chk_tune_kind(k);
    const char *what = k->nhints && k->has_variants ? "hints and variants" : k->nhints ? "hints" : "variants";
    if (k->tune)
        chk_note(ck, &k->loc, "kernel '%s' has a tune space of its own, so it gets no default one; add %s to it as an axis "
                 "(%s = 64 | 128) or to its hints", k->name, name, name);
    else if (k->nhints || k->has_variants)
        chk_note(ck, &k->loc, "kernel '%s' has %s, so it gets no default tune space; define %s in its hints (%s = 1024) "
                 "or drop its %s (docs/tuning.md, \"Default spaces\")", k->name, what, name, name, what);
    else if (l)
        chk_note(ck, &k->loc, "kernel '%s' takes the tensor list '%s', so it has one variant and no default tune space; "
                 "set %s in its hints: hints { %s = 1024 }", k->name, l->name, name, name);
    else if (kind == TILEC_TUNE_OTHER)
        chk_note(ck, &k->loc, "kernel '%s' reduces under a grid of %u axes, which no default tune space fits (a row "
                 "kernel's grid has one axis); set %s in its hints: hints { %s = 1024 }", k->name, (unsigned)k->ngrid,
                 name, name);
    else {
        const char *const *t = tiles[kind];
        chk_note(ck, &k->loc, "%s is not a tile hint of the default space of %s kernel (%s%s%s%s%s), which kernel '%s' "
                 "does not name; set %s in its hints: hints { %s = 1024 }", name, chk_tune_kind_name(kind), t[0],
                 t[1] ? ", " : "", t[1] ? t[1] : "", t[2] ? ", " : "", t[2] ? t[2] : "", k->name, name, name);
    }
}

static int default_space(checker *ck, tilec_kernel *k, tilec_tune_kind kind)
{
    const space_axis *axes = spaces[kind].axes;
    uint32_t n = 0;
    k->tune = ar_array(ck->ar, spaces[kind].n, sizeof *k->tune);
    if (!k->tune)
        return -1;
    for (uint32_t i = 0; i < spaces[kind].n; i++) {
        if (axes[i].named && !names_free(k, axes[i].name))
            continue;
        tilec_tune_axis *a = &k->tune[n++];
        a->name = axes[i].name;
        a->loc = k->loc;
        a->nvalues = axes[i].n;
        a->values = ar_array(ck->ar, a->nvalues, sizeof *a->values);
        a->value_locs = ar_array(ck->ar, a->nvalues, sizeof *a->value_locs);
        if (!a->values || !a->value_locs)
            return -1;
        for (uint32_t j = 0; j < a->nvalues; j++) {
            a->values[j] = axes[i].values[j];
            a->value_locs[j] = k->loc;
        }
    }
    k->ntune = n;
    k->tune_loc = k->loc;
    k->tune_keep = spaces[kind].keep;
    k->tune_default = true;
    return 0;
}

static int value_ok(checker *ck, const tilec_tune_axis *a, uint32_t j)
{
    int64_t v = a->values[j];
    if (!strcmp(a->name, "warps") && (v < 1 || v > 32 || (v & (v - 1)))) {
        chk_err(ck, &a->value_locs[j], "tune axis warps: warps must be 1, 2, 4, 8, 16 or 32, got %lld", (long long)v);
        return 0;
    }
    if (!strcmp(a->name, "stages") && (v < 1 || v > TILEC_MAX_STAGES)) {
        chk_err(ck, &a->value_locs[j], "tune axis stages: stages must be from 1 to %d, got %lld", TILEC_MAX_STAGES,
                (long long)v);
        return 0;
    }
    if (!strcmp(a->name, "split_k") && (v < 1 || v > 64)) {
        chk_err(ck, &a->value_locs[j], "tune axis split_k: split_k must be from 1 to 64, got %lld", (long long)v);
        return 0;
    }
    for (uint32_t i = 0; i < j; i++)
        if (a->values[i] == v) {
            chk_err(ck, &a->value_locs[j], "tune axis %s lists %lld twice", a->name, (long long)v);
            chk_note(ck, &a->value_locs[i], "the first %lld is here", (long long)v);
            return 0;
        }
    return 1;
}

/* A range lo .. hi to its values (half-open, as a for loop's). */
static int expand_range(checker *ck, tilec_tune_axis *a)
{
    int64_t lo = a->values[0], hi = a->values[1];
    if (hi <= lo) {
        chk_err(ck, &a->value_locs[1], "tune axis %s: the range %lld .. %lld is %s (a range is half-open, [lo, hi))",
                a->name, (long long)lo, (long long)hi, hi < lo ? "backwards" : "empty");
        return 0;
    }
    if (hi - lo > TILEC_MAX_TUNE_CONFIGS) {
        chk_err(ck, &a->value_locs[1], "tune axis %s: the range %lld .. %lld has %lld values, more than %d", a->name,
                (long long)lo, (long long)hi, (long long)(hi - lo), TILEC_MAX_TUNE_CONFIGS);
        return 0;
    }
    uint32_t n = (uint32_t)(hi - lo);
    int64_t *vals = ar_array(ck->ar, n, sizeof *vals);
    tilec_loc *locs = ar_array(ck->ar, n, sizeof *locs);
    if (!vals || !locs) {
        ck->oom = 1;
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        vals[i] = lo + i;
        locs[i] = a->value_locs[0];
    }
    a->values = vals;
    a->value_locs = locs;
    a->nvalues = n;
    a->range = false;
    return 1;
}

/* tune ... for { M = 16 | 4096, N = 8192 }: the shape classes. */
static int classes_ok(checker *ck, tilec_kernel *k)
{
    if (k->tune_for && !k->ntune_for) {
        chk_err(ck, &k->tune_loc, "tune ... for { } of kernel '%s' lists no shape class; name a parameter such as "
                "M = 16 | 4096", k->name);
        return 0;
    }
    int ok = 1;
    int64_t n = 1;
    for (uint32_t i = 0; i < k->ntune_for; i++) {
        tilec_tune_axis *a = &k->tune_for[i];
        const tilec_param *p = NULL;
        for (uint32_t j = 0; j < k->nparams; j++)
            if (!strcmp(k->params[j].name, a->name))
                p = &k->params[j];
        if (!p || p->type.kind != TILEC_TE_SCALAR ||
            (tilec_dtype_class(p->type.dtype) != 's' && tilec_dtype_class(p->type.dtype) != 'u')) {
            chk_err(ck, &a->loc, "tune ... for: '%s' is not an integer scalar parameter of kernel '%s'", a->name,
                    k->name);
            ok = 0;
        }
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(k->tune_for[j].name, a->name)) {
                chk_err(ck, &a->loc, "tune ... for: '%s' is listed twice", a->name);
                chk_note(ck, &k->tune_for[j].loc, "the first '%s' is here", a->name);
                ok = 0;
            }
        if (a->range && !expand_range(ck, a)) {
            ok = 0;
            continue;
        }
        for (uint32_t j = 0; j < a->nvalues; j++) {
            if (a->values[j] < 1) {
                chk_err(ck, &a->value_locs[j], "tune ... for: a size of a shape class must be positive, got %lld",
                        (long long)a->values[j]);
                ok = 0;
            }
            ok &= value_ok(ck, a, j);
        }
        if (n <= TILEC_MAX_TUNE_CLASSES)
            n *= a->nvalues;
    }
    if (ok && n > TILEC_MAX_TUNE_CLASSES) {
        chk_err(ck, &k->tune_loc, "the tune space of kernel '%s' has %lld shape classes, more than %d", k->name,
                (long long)n, TILEC_MAX_TUNE_CLASSES);
        ok = 0;
    }
    return ok;
}

int chk_tune_header(checker *ck, tilec_kernel *k)
{
    tilec_tune_kind kind = wants_default(k);
    if (kind != TILEC_TUNE_OTHER && default_space(ck, k, kind)) {
        ck->oom = 1;
        return 0;
    }
    if (!k->tune)
        return 1;
    int ok = 1;
    if (!k->ntune) {
        chk_err(ck, &k->tune_loc, "the tune space of kernel '%s' is empty; list an axis such as BM = 64 | 128",
                k->name);
        return 0;
    }
    if (k->has_variants) {
        chk_err(ck, &k->variant_loc, "kernel '%s' has both tune and variants; tune's candidates are its variants",
                k->name);
        chk_note(ck, &k->tune_loc, "the tune space is here");
        ok = 0;
    }
    ok &= classes_ok(ck, k);
    int64_t product = 1;
    for (uint32_t i = 0; i < k->ntune; i++) {
        tilec_tune_axis *a = &k->tune[i];
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(k->tune[j].name, a->name)) {
                chk_err(ck, &a->loc, "tune axis '%s' is listed twice", a->name);
                chk_note(ck, &k->tune[j].loc, "the first '%s' is here", a->name);
                ok = 0;
            }
        for (uint32_t j = 0; j < k->nhints; j++)
            if (!strcmp(k->hints[j].name, a->name)) {
                chk_err(ck, &a->loc, "'%s' is both a hint and a tune axis of kernel '%s'", a->name, k->name);
                chk_note(ck, &k->hints[j].loc, "the hint is here");
                ok = 0;
            }
        if (a->range && !expand_range(ck, a)) {
            ok = 0;
            continue;
        }
        for (uint32_t j = 0; j < a->nvalues; j++)
            ok &= value_ok(ck, a, j);
        if (product <= TILEC_MAX_TUNE_CONFIGS)
            product *= a->nvalues;
    }
    if (ok && product > TILEC_MAX_TUNE_CONFIGS) {
        chk_err(ck, &k->tune_loc, "the tune space of kernel '%s' has %s%lld configurations, more than %d; "
                "drop values or axes", k->name, product > TILEC_MAX_TUNE_CONFIGS * 1024LL ? "over " : "",
                (long long)product, TILEC_MAX_TUNE_CONFIGS);
        ok = 0;
    }
    /* the axes first among the hints, each its first value (also after an
     * error, so that the hints and the body see them) */
    tilec_hint *hints = ar_array(ck->ar, k->ntune + k->nhints, sizeof *hints);
    if (!hints) {
        ck->oom = 1;
        return 0;
    }
    uint32_t np = 0;
    for (uint32_t i = 0; i < k->ntune; i++) {
        const tilec_tune_axis *a = &k->tune[i];
        int clash = 0; /* reported above; bound once */
        for (uint32_t j = 0; j < np; j++)
            clash |= !strcmp(hints[j].name, a->name);
        for (uint32_t j = 0; j < k->nhints; j++)
            clash |= !strcmp(k->hints[j].name, a->name);
        if (clash)
            continue;
        tilec_expr *e = ar_alloc(ck->ar, sizeof *e);
        if (!e) {
            ck->oom = 1;
            return 0;
        }
        e->kind = TILEC_EX_INT;
        e->loc = a->value_locs[0];
        e->ival = a->values[0];
        e->depth = 1;
        hints[np++] = (tilec_hint){.name = a->name, .loc = a->loc, .expr = e};
    }
    if (k->nhints)
        memcpy(hints + np, k->hints, k->nhints * sizeof *hints);
    k->hints = hints;
    k->nhints += np;
    k->ntune_hints = np;
    k->tune_cands = NULL;
    return ok;
}

void chk_tune_mark_tile(checker *ck, const tilec_expr *e)
{
    const tilec_kernel *k = ck->k;
    if (!k || !k->ntune_hints || ck->variant >= 0 || ck->capture || e->kind != TILEC_EX_NAME)
        return;
    for (uint32_t i = 0; i < k->ntune; i++)
        if (!strcmp(k->tune[i].name, e->name))
            k->tune[i].tile_dim = true;
}

int chk_tune_tile_axes(checker *ck, tilec_kernel *k)
{
    int ok = 1;
    for (uint32_t i = 0; i < k->ntune; i++) {
        const tilec_tune_axis *a = &k->tune[i];
        for (uint32_t j = 0; a->tile_dim && j < a->nvalues; j++) {
            int64_t v = a->values[j];
            if (v <= 0 || v > TILEC_MAX_TILE_DIM || (v & (v - 1))) {
                chk_err(ck, &a->value_locs[j], "tune axis %s sizes tiles, so each value must be a power of two from "
                        "1 to %d, got %lld", a->name, TILEC_MAX_TILE_DIM, (long long)v);
                ok = 0;
            }
        }
    }
    return ok;
}

int chk_tune_configs(checker *ck, tilec_kernel *k)
{
    uint32_t n = 1;
    for (uint32_t i = 0; i < k->ntune; i++)
        n *= k->tune[i].nvalues;
    k->tune_cands = ar_array(ck->ar, n, sizeof *k->tune_cands);
    k->variants = ar_array(ck->ar, n, sizeof *k->variants);
    if (!k->tune_cands || !k->variants) {
        ck->oom = 1;
        return 0;
    }
    k->ntune_cands = n;
    k->nvariants = n;
    /* the product, the last axis fastest */
    for (uint32_t c = 0; c < n; c++) {
        tilec_tune_cand *cand = &k->tune_cands[c];
        tilec_variant *v = &k->variants[c];
        cand->values = ar_array(ck->ar, k->ntune, sizeof *cand->values);
        v->overrides = ar_array(ck->ar, k->ntune, sizeof *v->overrides);
        if (!cand->values || !v->overrides) {
            ck->oom = 1;
            return 0;
        }
        cand->variant = (int)c;
        v->cand = c;
        v->loc = k->tune_loc;
        v->noverrides = k->ntune;
        uint32_t rest = c;
        for (uint32_t i = k->ntune; i-- > 0;) {
            const tilec_tune_axis *a = &k->tune[i];
            uint32_t j = rest % a->nvalues;
            rest /= a->nvalues;
            cand->values[i] = a->values[j];
            tilec_expr *e = ar_alloc(ck->ar, sizeof *e);
            if (!e) {
                ck->oom = 1;
                return 0;
            }
            *e = *k->hints[i].expr;
            e->ival = a->values[j];
            e->loc = a->value_locs[j];
            v->overrides[i] = (tilec_hint){.name = a->name, .loc = a->loc, .expr = e};
        }
    }
    return 1;
}

int chk_tune_capture_begin(checker *ck, tilec_kernel *k, uint32_t c)
{
    if (!k->ntune_hints)
        return 0;
    sb_init(&ck->captured);
    ck->capture = &k->tune_cands[c];
    ck->capture->tile_regs = 0;
    return 1;
}

void chk_tune_capture_end(checker *ck)
{
    if (ck->captured.n && !ck->capture->why)
        ck->capture->why = ar_strdup(ck->ar, sb_str(&ck->captured));
    sb_free(&ck->captured);
    ck->capture = NULL;
}

void chk_tune_record(checker *ck, const char *err)
{
    if (!ck->captured.n)
        sb_printf(&ck->captured, "%s", err);
}

void chk_tune_note_tile(checker *ck, int64_t regs) {
    if (ck->capture && regs > ck->capture->tile_regs)
        ck->capture->tile_regs = regs;
}

void chk_tune_note_dot(checker *ck, const tilec_type *a, const tilec_type *b)
{
    tilec_tune_cand *c = ck->capture;
    if (c && !c->dot_m) {
        c->dot_m = a->dims[0];
        c->dot_k = a->dims[1];
        c->dot_n = b->dims[1];
        c->dot_dtype = a->dtype;
    }
}

/* Remap every per-variant type of an expression to the kept variants. */
static void remap_expr(tilec_expr *e, const uint32_t *keep, uint32_t n)
{
    if (!e)
        return;
    if (e->vtypes)
        for (uint32_t j = 0; j < n; j++)
            e->vtypes[j] = e->vtypes[keep[j]];
    for (uint32_t i = 0; i < e->nargs; i++)
        remap_expr(e->args[i], keep, n);
}

static void remap_block(tilec_block *b, const uint32_t *keep, uint32_t n)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        tilec_stmt *s = b->stmts[i];
        remap_expr(s->value, keep, n);
        remap_expr(s->lo, keep, n);
        remap_expr(s->hi, keep, n);
        remap_expr(s->step, keep, n);
        for (uint32_t j = 0; j < s->nvalues; j++)
            remap_expr(s->values[j], keep, n);
        remap_block(&s->body, keep, n);
        remap_block(&s->orelse, keep, n);
    }
}

void chk_tune_keep_variants(tilec_kernel *k, const uint32_t *keep, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++)
        k->variants[j] = k->variants[keep[j]];
    for (uint32_t i = 0; i < k->ntune_cands; i++)
        k->tune_cands[i].variant = -1;
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t i = 0; i < k->ntune_cands; i++)
            if (k->variants[j].cand == i)
                k->tune_cands[i].variant = (int)j;
    for (uint32_t i = 0; i < k->ngrid; i++)
        remap_expr(k->grid[i], keep, n);
    remap_block(&k->body, keep, n);
    k->nvariants = n;
}
