/* gen_kernel.c: the generator of well-typed kernels (see gen_kernel.h).
 * Top-down: every expression is generated for a type chosen first (element
 * type, shape, pointer or not), from the forms that give that type, so the
 * result type-checks whatever the choices are. Shapes use three tile sizes
 * DA, DB, DC (hints, powers of two, at least 16 so that dot on f16/bf16 is
 * always allowed) and 1. */
#include "fuzz/gen_kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

enum { B_, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64, NDT };
static const char *const dtn[NDT] = {"bool", "i8", "i16", "i32", "i64", "u8", "u16",
                                     "u32",  "u64", "f16", "bf16", "f32", "f64"};
static int is_int(int d) { return d >= I8 && d <= U64; }
static int is_float(int d) { return d >= F16; }
static int is_atomic(int d) { return d == I32 || d == U32 || d == U64 || d == F16 || d == BF16 || d == F32 || d == F64; }

/* a type: element type, rank 0-2, dims as indices into g->dim, pointer */
typedef struct ty {
    int dt, rank, d[2], ptr;
} ty;

typedef struct var {
    char name[16];
    ty t;
    int assignable;
} var;

#define MAXV 256
#define MAXP 20 /* one pointer per element type, and a few more */
#define MAXNODES 1500
#define MAXLOADS 6
typedef struct gen {
    const uint8_t *data;
    size_t size, pos;
    strbuf b;
    int ind;
    var v[MAXV];
    int nv, nnames;
    int pdt[MAXP], np;   /* pointer parameters p0.. and their element types */
    int sdt[MAXP], ns;   /* scalar parameters s0.. */
    int dim[3];          /* DA, DB, DC */
    int grid2;           /* the grid has two axes */
    int stmts;           /* statements left */
    int nodes;           /* expression nodes so far (past MAXNODES: leaves only) */
    int loads;           /* loads open around the current point (address of an address ...) */
} gen;

static const char *const dimn[3] = {"DA", "DB", "DC"};

static unsigned pick(gen *g, unsigned n)
{
    if (n <= 1 || g->pos >= g->size)
        return 0;
    return g->data[g->pos++] % n;
}

static void out(gen *g, const char *s) { sb_puts(&g->b, s); }
static void outf(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&g->b, fmt, ap);
    va_end(ap);
}

static ty scalar(int dt) { return (ty){dt, 0, {0, 0}, 0}; }

static ty random_ty(gen *g)
{
    ty t = scalar((int)pick(g, NDT));
    if (t.dt == B_ && pick(g, 2))
        t.dt = F32;
    t.rank = (int)pick(g, 3);
    t.d[0] = (int)pick(g, 3);
    t.d[1] = (int)pick(g, 3);
    return t;
}

static void dims(gen *g, const ty *t) /* ", DA, DB" */
{
    for (int i = 0; i < t->rank; i++)
        outf(g, ", %s", dimn[t->d[i]]);
}

static int same(const ty *a, const ty *b)
{
    return a->dt == b->dt && a->rank == b->rank && a->ptr == b->ptr && (a->rank < 1 || a->d[0] == b->d[0]) &&
           (a->rank < 2 || a->d[1] == b->d[1]);
}

static void ex(gen *g, ty t, int depth);
static void ptr(gen *g, ty t, int depth);

/* fn(a0, a1, ...): each argument generated for its type (a pointer type
 * gives a pointer expression) */
static void call(gen *g, const char *fn, int n, const ty *ts, int depth)
{
    outf(g, "%s(", fn);
    for (int i = 0; i < n; i++) {
        if (i)
            out(g, ", ");
        if (ts[i].ptr)
            ptr(g, ts[i], depth);
        else
            ex(g, ts[i], depth);
    }
    out(g, ")");
}

static ty bools(const ty *t) { return (ty){B_, t->rank, {t->d[0], t->d[1]}, 0}; }
static ty transposed(const ty *t) { return (ty){t->dt, 2, {t->d[1], t->d[0]}, t->ptr}; }

static void literal(gen *g, int dt)
{
    static const char *const ints[] = {"0", "1", "3", "7", "100"};
    static const char *const flts[] = {"0.0", "1.5", "-2.25", "1e-3", "inf"};
    if (dt == B_)
        out(g, pick(g, 2) ? "true" : "false");
    else if (is_int(dt))
        out(g, ints[pick(g, 5)]);
    else
        out(g, flts[pick(g, 5)]);
}

/* a scalar pointer of element type dt: a parameter, or a pointer let */
static void ptr_base(gen *g, int dt)
{
    int cand[MAXV], n = 0;
    for (int i = 0; i < g->nv; i++)
        if (g->v[i].t.ptr && g->v[i].t.dt == dt && g->v[i].t.rank == 0)
            cand[n++] = i;
    if (n && pick(g, 2)) {
        out(g, g->v[cand[pick(g, (unsigned)n)]].name);
        return;
    }
    int p = -1;
    for (int i = 0; i < g->np; i++)
        if (g->pdt[i] == dt)
            p = i;
    if (p < 0 || (g->np < MAXP - NDT && pick(g, 4) == 0)) { /* a new parameter */
        p = g->np++;
        g->pdt[p] = dt;
    }
    outf(g, "p%d", p);
}

/* an integer offset tile of the shape of t, or nothing for a scalar */
static void offsets(gen *g, const ty *t)
{
    if (t->rank == 0) {
        if (pick(g, 2)) {
            out(g, " + ");
            ex(g, scalar(pick(g, 2) ? I32 : I64), 0);
        }
        return;
    }
    if (t->rank == 1) {
        switch (pick(g, 3)) {
        case 0: outf(g, " + range(%s)", dimn[t->d[0]]); break;
        case 1: outf(g, " + (pid(0) * %s + range(%s))", dimn[t->d[0]], dimn[t->d[0]]); break;
        default: out(g, " + "); ex(g, (ty){I32, 1, {t->d[0], 0}, 0}, 0); break;
        }
        return;
    }
    outf(g, " + (range(%s)[:, None] * %s + range(%s)[None, :])", dimn[t->d[0]], dimn[t->d[1]], dimn[t->d[1]]);
}

static int use_var(gen *g, const ty *t, int scalar_ok);

/* a pointer (tile) of element type t.dt and t's shape */
static void ptr(gen *g, ty t, int depth)
{
    unsigned k = depth > 0 ? pick(g, 6) : pick(g, 2) ? 0 : 6;
    if (k == 6 || k == 3) { /* a pointer let of this type, perhaps moved */
        out(g, "(");
        if (use_var(g, &t, 0)) {
            if (pick(g, 2))
                offsets(g, &(ty){t.dt, 0, {0, 0}, 1});
            out(g, ")");
            return;
        }
        ptr_base(g, t.dt);
        offsets(g, &t);
        out(g, ")");
        return;
    }
    if (k == 4 && t.rank == 2) { /* trans of the transposed pointer tile */
        call(g, "trans", 1, (ty[]){transposed(&t)}, depth - 1);
        return;
    }
    if (k == 5) {
        call(g, "where", 3, (ty[]){bools(&t), t, t}, depth - 1);
        return;
    }
    out(g, "(");
    ptr_base(g, t.dt);
    offsets(g, &t);
    out(g, ")");
}

/* ", MASK" or nothing; 1 when a mask was written */
static int mask_opt(gen *g, const ty *t, int depth)
{
    if (pick(g, 3) == 0)
        return 0;
    out(g, ", ");
    if (t->rank == 1 && pick(g, 2))
        outf(g, "pid(0) * %s + range(%s) < n", dimn[t->d[0]], dimn[t->d[0]]);
    else
        ex(g, bools(t), depth);
    return 1;
}

static void load(gen *g, ty t, int depth)
{
    g->loads++;
    out(g, "load(");
    ptr(g, (ty){t.dt, t.rank, {t.d[0], t.d[1]}, 1}, depth);
    if (pick(g, 3) && mask_opt(g, &t, depth > 0 ? depth - 1 : 0)) {
        if (t.dt != B_ && pick(g, 2)) {
            out(g, ", ");
            literal(g, I32);
        }
    }
    out(g, ")");
    g->loads--;
}

/* a variable of type t (or a scalar of t's element type, which broadcasts), if any */
static int use_var(gen *g, const ty *t, int scalar_ok)
{
    int cand[MAXV], n = 0;
    for (int i = 0; i < g->nv; i++) {
        const ty *u = &g->v[i].t;
        if (same(u, t) || (scalar_ok && !u->ptr && u->rank == 0 && u->dt == t->dt))
            cand[n++] = i;
    }
    if (!n)
        return 0;
    out(g, g->v[cand[pick(g, (unsigned)n)]].name);
    return 1;
}

static void leaf(gen *g, ty t)
{
    switch (++g->nodes > MAXNODES ? 3 : pick(g, 4)) {
    case 0:
        if (use_var(g, &t, 0))
            return;
        break;
    case 1:
        if (g->loads < MAXLOADS) { /* loads nest through offsets: bound them (the language's nesting limit) */
            load(g, t, 0);
            return;
        }
        break;
    case 2:
        if (t.dt == I32 && t.rank == 1) {
            outf(g, "range(%s)", dimn[t.d[0]]);
            return;
        }
        if (t.dt == I32 && t.rank == 0) {
            out(g, pick(g, 2) ? "pid(0)" : "n");
            return;
        }
        if (t.rank == 0 && g->ns < MAXP && pick(g, 2)) { /* a new scalar parameter */
            g->sdt[g->ns] = t.dt;
            outf(g, "s%d", g->ns++);
            return;
        }
        break;
    default:
        break;
    }
    if (t.rank == 0) {
        outf(g, "cast(");
        literal(g, t.dt);
        outf(g, ", %s)", dtn[t.dt]);
    } else if (pick(g, 3) == 0) {
        outf(g, "zeros(%s", dtn[t.dt]);
        dims(g, &t);
        out(g, ")");
    } else {
        outf(g, "full(%s, ", dtn[t.dt]);
        literal(g, t.dt);
        dims(g, &t);
        out(g, ")");
    }
}

static void binary(gen *g, ty t, int depth, const char *op)
{
    ty s = scalar(t.dt);
    int sa = t.rank && pick(g, 4) == 0, sb = !sa && t.rank && pick(g, 4) == 0;
    out(g, "(");
    ex(g, sa ? s : t, depth - 1);
    outf(g, " %s ", op);
    if (sa) /* the tile side */
        ex(g, t, depth - 1);
    else if (!sb && !is_float(t.dt) && t.dt != B_ && pick(g, 4) == 0) /* an untyped int adapts */
        out(g, op[0] == '/' || op[0] == '%' ? "3" : "7"); /* a constant zero divisor is an error */
    else if (!sb && is_float(t.dt) && pick(g, 4) == 0)
        literal(g, F32);
    else
        ex(g, sb ? s : t, depth - 1);
    out(g, ")");
}

/* t's shape with one more axis (its last) of size d */
static ty widen(ty t, int d)
{
    t.d[t.rank++] = d;
    return t;
}

/* cumsum / cumprod / cummax / cummin / scan giving t (rank >= 1), with
 * the optional exclusive and reverse flags; cumsum of bools gives i32 */
static void scan(gen *g, ty t, int depth)
{
    static const char *const flags[] = {"", ", true", ", false", ", true, true", ", false, true", ", true, false"};
    int axis = (int)pick(g, (unsigned)t.rank);
    const char *ax = pick(g, 3) == 0 ? (axis == t.rank - 1 ? "-1" : "-2") : (axis ? "1" : "0");
    const char *fl = flags[pick(g, 6)];
    if (t.dt == I32 && pick(g, 4) == 0) {
        out(g, "cumsum(");
        ex(g, bools(&t), depth - 1);
        outf(g, ", %s%s)", ax, fl);
        return;
    }
    if (t.dt == B_) {
        leaf(g, t);
        return;
    }
    unsigned k = pick(g, 5);
    if (k < 4) {
        static const char *const fns[] = {"cumsum", "cumprod", "cummax", "cummin"};
        outf(g, "%s(", fns[k]);
        ex(g, t, depth - 1);
        outf(g, ", %s%s)", ax, fl);
        return;
    }
    /* scan(x, axis, init, a, b, combine [, exclusive [, reverse]]): fresh names */
    char a[16], b[16];
    snprintf(a, sizeof a, "v%d", g->nnames++);
    snprintf(b, sizeof b, "v%d", g->nnames++);
    out(g, "scan(");
    ex(g, t, depth - 1);
    outf(g, ", %s, ", ax);
    literal(g, t.dt);
    outf(g, ", %s, %s, ", a, b);
    switch (pick(g, is_int(t.dt) ? 7 : 4)) {
    case 0: outf(g, "%s + %s", a, b); break;
    case 1: outf(g, "%s * %s", b, a); break;
    case 2: outf(g, "maximum(%s, %s)", a, b); break;
    case 3: outf(g, "minimum(%s, %s)", b, a); break;
    case 4: outf(g, "%s & %s", a, b); break;
    case 5: outf(g, "%s | %s", a, b); break;
    default: outf(g, "%s ^ %s", a, b); break;
    }
    outf(g, "%s)", fl);
}

static void ex(gen *g, ty t, int depth)
{
    if (depth <= 0 || g->nodes > MAXNODES) {
        leaf(g, t);
        return;
    }
    unsigned k = pick(g, 16);
    switch (k) {
    case 0:
    case 1:
        leaf(g, t);
        return;
    case 2: /* arithmetic, bitwise or logical */
        if (t.dt == B_) {
            static const char *const ops[] = {"&&", "||", "&", "|", "^"};
            binary(g, t, depth, ops[pick(g, 5)]);
        } else if (is_int(t.dt)) {
            static const char *const ops[] = {"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"};
            binary(g, t, depth, ops[pick(g, 10)]);
        } else {
            static const char *const ops[] = {"+", "-", "*", "/", "%"};
            binary(g, t, depth, ops[pick(g, 5)]);
        }
        return;
    case 3: /* unary */
        out(g, t.dt == B_ ? "!" : is_int(t.dt) && pick(g, 2) ? "~" : "-");
        out(g, "(");
        ex(g, t, depth - 1);
        out(g, ")");
        return;
    case 4: { /* cast from another element type */
        ty u = t;
        u.dt = (int)pick(g, NDT);
        outf(g, "cast(");
        ex(g, u, depth - 1);
        outf(g, ", %s)", dtn[t.dt]);
        return;
    }
    case 5:
        call(g, "where", 3, (ty[]){bools(&t), t, t}, depth - 1);
        return;
    case 6:
        if (t.dt == B_) { /* a comparison */
            static const char *const ops[] = {"<", "<=", ">", ">=", "==", "!="};
            ty u = t;
            u.dt = 1 + (int)pick(g, NDT - 1);
            out(g, "(");
            ex(g, u, depth - 1);
            outf(g, " %s ", ops[pick(g, 6)]);
            ex(g, u, depth - 1);
            out(g, ")");
            return;
        }
        call(g, pick(g, 2) ? "maximum" : "minimum", 2, (ty[]){t, t}, depth - 1);
        return;
    case 7:
        if (is_float(t.dt)) {
            static const char *const fns[] = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin",
                                              "cos", "tanh", "sigmoid", "erf", "floor", "ceil", "abs"};
            if (pick(g, 4) == 0)
                call(g, "fma", 3, (ty[]){t, t, t}, depth - 1);
            else
                call(g, fns[pick(g, 14)], 1, &t, depth - 1);
            return;
        }
        if (t.dt != B_) {
            call(g, "abs", 1, &t, depth - 1);
            return;
        }
        break;
    case 8: /* a reduction over a new last axis */
        if (t.rank < 2 && t.dt != B_) {
            int d = (int)pick(g, 3);
            if (t.dt == I32 && pick(g, 3) == 0) {
                ty u = widen(t, d);
                u.dt = pick(g, 2) ? B_ : (int)(1 + pick(g, NDT - 1));
                if (u.dt == B_) {
                    out(g, "sum(");
                } else {
                    outf(g, "%s(", pick(g, 2) ? "argmax" : "argmin");
                }
                ex(g, u, depth - 1);
                outf(g, ", %d)", t.rank);
                return;
            }
            static const char *const fns[] = {"sum", "max", "min"};
            outf(g, "%s(", fns[pick(g, 3)]);
            ex(g, widen(t, d), depth - 1);
            outf(g, ", %s)", pick(g, 2) ? "-1" : t.rank ? "1" : "0");
            return;
        }
        break;
    case 9: /* dot */
        if (t.dt == F32 && t.rank == 2) {
            static const int dts[] = {F16, BF16, F32};
            int a = dts[pick(g, 3)], kd = (int)pick(g, 3);
            call(g, "dot", 2, (ty[]){{a, 2, {t.d[0], kd}, 0}, {a, 2, {kd, t.d[1]}, 0}}, depth - 1);
            return;
        }
        break;
    case 10: /* outer broadcast */
        if (t.rank == 2) {
            out(g, "(");
            ex(g, (ty){t.dt, 1, {t.d[0], 0}, 0}, depth - 1);
            out(g, t.dt == B_ ? "[:, None] & " : "[:, None] + ");
            ex(g, (ty){t.dt, 1, {t.d[1], 0}, 0}, depth - 1);
            out(g, "[None, :])");
            return;
        }
        break;
    case 11:
        if (t.rank == 2) {
            call(g, "trans", 1, (ty[]){transposed(&t)}, depth - 1);
            return;
        }
        break;
    case 13:
    case 14: /* a scan along an axis of t */
        if (t.rank > 0) {
            scan(g, t, depth);
            return;
        }
        break;
    case 12:
        if (is_atomic(t.dt)) {
            out(g, "atomic_add(");
            ptr(g, (ty){t.dt, t.rank, {t.d[0], t.d[1]}, 1}, depth - 1);
            out(g, ", ");
            ex(g, t, depth - 1);
            mask_opt(g, &t, depth - 1);
            out(g, ")");
            return;
        }
        break;
    default:
        load(g, t, depth - 1);
        return;
    }
    leaf(g, t);
}

static void indent(gen *g)
{
    for (int i = 0; i < g->ind; i++)
        out(g, "    ");
}

static var *new_var(gen *g, ty t, int assignable)
{
    if (g->nv == MAXV)
        return NULL;
    var *v = &g->v[g->nv++];
    snprintf(v->name, sizeof v->name, "v%d", g->nnames++);
    v->t = t;
    v->assignable = assignable;
    return v;
}

static void block(gen *g, int depth);

static void stmt(gen *g, int depth)
{
    g->stmts--;
    indent(g);
    unsigned k = pick(g, 10);
    switch (k) {
    case 0:
    case 1: { /* let */
        ty t = random_ty(g);
        var *v = new_var(g, t, 1);
        if (!v)
            break;
        g->nv--; /* not visible in its own value */
        outf(g, "let %s = ", v->name);
        ex(g, t, 1 + (int)pick(g, 3));
        out(g, ";\n");
        g->nv++;
        return;
    }
    case 2: { /* a pointer let */
        ty t = random_ty(g);
        t.ptr = 1;
        if (pick(g, 3) == 0)
            t.rank = 0;
        var *v = new_var(g, t, 1);
        if (!v)
            break;
        g->nv--; /* not visible in its own value */
        outf(g, "let %s = ", v->name);
        ptr(g, t, (int)pick(g, 2));
        out(g, ";\n");
        g->nv++;
        return;
    }
    case 3:
    case 9: { /* re-assignment of a value or a pointer */
        int cand[MAXV], n = 0;
        for (int i = 0; i < g->nv; i++)
            if (g->v[i].assignable)
                cand[n++] = i;
        if (!n)
            break;
        var *v = &g->v[cand[pick(g, (unsigned)n)]];
        outf(g, "%s = ", v->name);
        if (v->t.ptr && pick(g, 2)) { /* moved: p = p + k, p = k + p, p = p - k */
            ty off = pick(g, 2) ? scalar(pick(g, 3) ? I32 : I64) : (ty){I32, v->t.rank, {v->t.d[0], v->t.d[1]}, 0};
            unsigned f = pick(g, 3);
            if (f == 1) {
                ex(g, off, 1);
                outf(g, " + %s", v->name);
            } else {
                outf(g, "%s %s ", v->name, f ? "-" : "+");
                ex(g, off, 1);
            }
        } else if (v->t.ptr)
            ptr(g, v->t, (int)pick(g, 2));
        else
            ex(g, v->t, 1 + (int)pick(g, 2));
        out(g, ";\n");
        return;
    }
    case 4:
    case 5: { /* store */
        ty t = random_ty(g);
        t.ptr = 1;
        ty val = t;
        val.ptr = 0;
        if (pick(g, 4) == 0)
            val.dt = (int)pick(g, NDT); /* converted to the pointee type */
        if (pick(g, 4) == 0)
            val.rank = 0;
        out(g, "store(");
        ptr(g, t, 1);
        out(g, ", ");
        ex(g, val, 1 + (int)pick(g, 2));
        t.ptr = 0;
        mask_opt(g, &t, 1);
        out(g, ");\n");
        return;
    }
    case 6: { /* atomic_add as a statement */
        static const int dts[] = {I32, U32, U64, F16, BF16, F32, F64};
        ty t = random_ty(g);
        t.dt = dts[pick(g, 7)];
        out(g, "atomic_add(");
        ptr(g, (ty){t.dt, t.rank, {t.d[0], t.d[1]}, 1}, 1);
        out(g, ", ");
        ex(g, t, 1);
        mask_opt(g, &t, 1);
        out(g, ");\n");
        return;
    }
    case 7:
        if (depth < 2) {
            int nv = g->nv;
            var *v = new_var(g, scalar(I32), 0);
            if (!v)
                break;
            static const char *const ends[] = {"4", "n", "DA"};
            outf(g, "for %s in 0 .. %s", v->name, ends[pick(g, 3)]);
            if (pick(g, 2))
                outf(g, " step %d", 1 + (int)pick(g, 3));
            out(g, " {\n");
            block(g, depth + 1);
            indent(g);
            out(g, "}\n");
            g->nv = nv; /* the loop variable dies with the loop */
            return;
        }
        break;
    case 8:
        if (depth < 2) {
            out(g, "if ");
            ex(g, scalar(B_), 2);
            out(g, " {\n");
            block(g, depth + 1);
            indent(g);
            out(g, "}");
            if (pick(g, 2)) {
                out(g, " else {\n");
                block(g, depth + 1);
                indent(g);
                out(g, "}");
            }
            out(g, "\n");
            return;
        }
        break;
    default:
        break;
    }
    /* the fallback: a masked 1-D copy */
    out(g, "store(p0 + pid(0) * DA + range(DA), ");
    ex(g, (ty){I32, 1, {0, 0}, 0}, 1);
    out(g, ", pid(0) * DA + range(DA) < n);\n");
    if (!g->np) {
        g->pdt[0] = I32;
        g->np = 1;
    }
}

/* A block: its lets die at the end (names stay unique: no shadowing). */
static void block(gen *g, int depth)
{
    int nv = g->nv;
    g->ind++;
    int n = 1 + (int)pick(g, depth ? 3 : 8);
    for (int i = 0; i < n && g->stmts > 0; i++)
        stmt(g, depth);
    g->ind--;
    g->nv = nv;
}

/* ---- the graph: allocations, views, kernel and extern calls ---- */

static int dt_size(int dt) { return dt == B_ || dt == I8 || dt == U8 ? 1 : dt == I16 || dt == U16 || dt == F16 || dt == BF16 ? 2 : dt == I64 || dt == U64 || dt == F64 ? 8 : 4; }

#define MAXT 48
typedef struct gtensor {
    char name[8];
    int dt;
    int scale; /* M * scale elements */
} gtensor;

typedef struct graphgen {
    gen *g;
    strbuf *h;           /* the graph's body */
    strbuf *ext;         /* extern declarations */
    gtensor t[MAXT];
    int nt, nalloc;
    int ext_of[NDT][3];  /* extern k of each dtype declared (1 + its number), per form */
    int next;
} graphgen;

static void g_size(graphgen *G, int scale)
{
    static const char *const m[] = {"M", "M * 1", "(M + 1) * 1 - 1"};
    if (scale == 1)
        sb_puts(G->h, m[pick(G->g, 3)]);
    else
        sb_printf(G->h, pick(G->g, 2) ? "M * %d" : "%d * M", scale);
}

static void g_literal(graphgen *G, int dt)
{
    static const char *const ints[] = {"0", "1", "7", "-3"};
    static const char *const flts[] = {"0.5", "-inf", "1", "-2.25"};
    if (dt == B_)
        sb_puts(G->h, pick(G->g, 2) ? "true" : "false");
    else if (is_int(dt))
        sb_puts(G->h, ints[pick(G->g, dt >= U8 ? 3 : 4)]);
    else
        sb_puts(G->h, flts[pick(G->g, 4)]);
}

/* a new tensor of dt (M * scale elements) allocated or filled: its
 * index, or -1 when the table is full */
static int g_alloc(graphgen *G, int dt, int scale)
{
    if (G->nt == MAXT)
        return -1;
    gtensor *x = &G->t[G->nt];
    snprintf(x->name, sizeof x->name, "a%d", G->nalloc++);
    x->dt = dt;
    x->scale = scale;
    int like = -1;
    for (int i = 0; i < G->nt; i++)
        if (G->t[i].dt == dt && G->t[i].scale == scale)
            like = i;
    sb_printf(G->h, "    let %s = ", x->name);
    unsigned k = pick(G->g, like >= 0 ? 8 : 4);
    if (k >= 4) {
        static const char *const f[] = {"empty_like", "zeros_like", "ones_like", "full_like"};
        sb_printf(G->h, "%s(%s", f[k - 4], G->t[like].name);
        if (k == 7) {
            sb_puts(G->h, ", ");
            g_literal(G, dt);
        }
    } else {
        static const char *const f[] = {"empty", "zeros", "ones", "full"};
        sb_printf(G->h, "%s(%s, [", f[k], dtn[dt]);
        g_size(G, scale);
        sb_puts(G->h, "]");
        if (k == 3) {
            sb_puts(G->h, ", ");
            g_literal(G, dt);
        }
    }
    sb_puts(G->h, ");\n");
    return G->nt++;
}

/* a tensor of dt: one there is, or a new one (there is always one of each
 * pointer type of k0: the graph's inputs and its result) */
static int g_tensor(graphgen *G, int dt)
{
    int cand[MAXT], n = 0;
    for (int i = 0; i < G->nt; i++)
        if (G->t[i].dt == dt)
            cand[n++] = i;
    int k = n && pick(G->g, 4) ? -1 : g_alloc(G, dt, 1 + (int)pick(G->g, 2));
    return k >= 0 || !n ? k : cand[pick(G->g, (unsigned)n)];
}

/* let aK = view(x, U[...]) of the same byte size */
static void g_view(graphgen *G)
{
    if (!G->nt || G->nt == MAXT)
        return;
    int i = (int)pick(G->g, (unsigned)G->nt), u = (int)pick(G->g, NDT);
    int bytes = dt_size(G->t[i].dt) * G->t[i].scale;
    if (bytes % dt_size(u))
        u = U8;
    gtensor *x = &G->t[G->nt];
    snprintf(x->name, sizeof x->name, "a%d", G->nalloc++);
    x->dt = u;
    x->scale = bytes / dt_size(u);
    sb_printf(G->h, "    let %s = view(%s, %s[", x->name, G->t[i].name, dtn[u]);
    g_size(G, x->scale);
    sb_puts(G->h, "]);\n");
    G->nt++;
}

/* k0(...) on tensors of its pointer types; out0: the result's tensor as p0 */
static void g_kernel_call(graphgen *G, int out0)
{
    gen *g = G->g;
    int arg[MAXP];
    for (int i = 0; i < g->np; i++)
        if ((arg[i] = i == 0 && out0 ? 0 : g_tensor(G, g->pdt[i])) < 0)
            return; /* not reached: every pointer type has a tensor */
    sb_puts(G->h, "    k0(");
    for (int i = 0; i < g->np; i++)
        sb_printf(G->h, "%s, ", G->t[arg[i]].name);
    static const char *const n[] = {"M", "M * 2 - M", "cdiv(M, 2)", "c0", "M / 3"};
    sb_puts(G->h, n[pick(g, 5)]);
    for (int i = 0; i < g->ns; i++) {
        sb_puts(G->h, ", ");
        if (g->sdt[i] == B_)
            sb_puts(G->h, pick(g, 2) ? "true" : "false");
        else if (is_int(g->sdt[i]))
            sb_puts(G->h, pick(g, 2) ? "3" : "c0");
        else
            sb_puts(G->h, pick(g, 2) ? "1.5" : pick(g, 2) ? "-inf" : "M");
    }
    sb_puts(G->h, ");\n");
}

/* an extern call: -> T[N], no result (writes its argument), or two results */
static void g_extern_call(graphgen *G)
{
    if (!G->nt)
        return;
    int i = (int)pick(G->g, (unsigned)G->nt), dt = G->t[i].dt, form = (int)pick(G->g, 3);
    if (!G->ext_of[dt][form]) {
        G->ext_of[dt][form] = ++G->next;
        int e = G->next - 1;
        if (form == 0)
            sb_printf(G->ext, "extern e%d(x: %s[N]) -> %s[N] = \"gen.e%d\";\n", e, dtn[dt], dtn[dt], e);
        else if (form == 1)
            sb_printf(G->ext, "extern e%d(x: %s[N]) = \"gen.e%d\";\n", e, dtn[dt], e);
        else
            sb_printf(G->ext, "extern e%d(x: %s[N]) -> (%s[N], i32[2 * N]) = \"gen.e%d\";\n", e, dtn[dt], dtn[dt], e);
    }
    int e = G->ext_of[dt][form] - 1;
    if (form == 1) {
        sb_printf(G->h, "    e%d(%s);\n", e, G->t[i].name);
        return;
    }
    if (G->nt + 2 > MAXT)
        return;
    gtensor *r = &G->t[G->nt++];
    snprintf(r->name, sizeof r->name, "a%d", G->nalloc++);
    r->dt = dt;
    r->scale = G->t[i].scale;
    if (form == 0) {
        sb_printf(G->h, "    let %s = e%d(%s);\n", r->name, e, G->t[i].name);
        return;
    }
    gtensor *r2 = &G->t[G->nt++];
    snprintf(r2->name, sizeof r2->name, "a%d", G->nalloc++);
    r2->dt = I32;
    r2->scale = 2 * G->t[i].scale;
    sb_printf(G->h, "    let (%s, %s) = e%d(%s);\n", r->name, r2->name, e, G->t[i].name);
}

/* graph g0(t..: T[M], c0: i32) [-> (r0: T0[M])]: p0 is the result when the
 * kernel has another pointer; statements: allocations (empty, zeros, ones,
 * full, *_like), views, calls of k0 and of externs, in any order */
static void graph(gen *g, strbuf *h)
{
    int out0 = g->np > 1;
    strbuf body, ext;
    sb_init(&body);
    sb_init(&ext);
    graphgen G = {.g = g, .h = &body, .ext = &ext};
    sb_puts(h, "graph g0(");
    for (int i = out0; i < g->np; i++) {
        gtensor *x = &G.t[G.nt++];
        snprintf(x->name, sizeof x->name, "t%d", i % 100000); /* i < g->np, a handful */
        x->dt = g->pdt[i];
        x->scale = 1;
        sb_printf(h, "t%d: %s[M], ", i, dtn[g->pdt[i]]);
    }
    sb_puts(h, "c0: i32)");
    if (out0) {
        sb_printf(h, " -> (r0: %s[M])", dtn[g->pdt[0]]);
        /* the result first (index 0), so the kernel calls write it */
        memmove(&G.t[1], &G.t[0], (size_t)G.nt * sizeof G.t[0]);
        G.nt++;
        snprintf(G.t[0].name, sizeof G.t[0].name, "a%d", G.nalloc++);
        G.t[0].dt = g->pdt[0];
        G.t[0].scale = 1;
        sb_printf(&body, "    let %s = %s(%s, [M]);\n", G.t[0].name, pick(g, 2) ? "empty" : "zeros", dtn[g->pdt[0]]);
    }
    int n = 1 + (int)pick(g, 6), called = 0;
    for (int i = 0; i < n; i++) {
        switch (pick(g, 5)) {
        case 0: g_alloc(&G, (int)pick(g, NDT), 1 + (int)pick(g, 2)); break;
        case 1: g_view(&G); break;
        case 2: g_extern_call(&G); break;
        default: g_kernel_call(&G, out0); called = 1; break;
        }
    }
    if (!called)
        g_kernel_call(&G, out0);
    if (out0)
        sb_printf(&body, "    return %s;\n", G.t[0].name);
    sb_puts(h, " {\n");
    sb_puts(h, sb_str(&body));
    sb_puts(h, "}\n");
    if (ext.n)
        sb_puts(h, sb_str(&ext));
    h->failed |= body.failed || ext.failed;
    sb_free(&body);
    sb_free(&ext);
}

char *gen_kernel(const uint8_t *data, size_t size)
{
    gen *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->data = data;
    g->size = size;
    sb_init(&g->b);
    static const int sizes[] = {16, 32, 64};
    for (int i = 0; i < 3; i++)
        g->dim[i] = sizes[pick(g, i == 2 ? 2 : 3)];
    g->grid2 = (int)pick(g, 4) == 0;
    int warps = 1 << pick(g, 4);
    g->stmts = 24;
    block(g, 0);
    if (!g->np) { /* the graph needs a tensor to bind M */
        g->pdt[0] = F32;
        g->np = 1;
    }

    strbuf h, ps;
    sb_init(&h);
    sb_init(&ps);
    for (int i = 0; i < g->np; i++)
        sb_printf(&ps, "p%d: *%s, ", i, dtn[g->pdt[i]]);
    sb_puts(&ps, "n: i32");
    for (int i = 0; i < g->ns; i++)
        sb_printf(&ps, ", s%d: %s", i, dtn[g->sdt[i]]);
    sb_printf(&h, "/// generated by fuzz/gen_kernel.c\nkernel k0(%s)\n", sb_str(&ps));
    sb_printf(&h, "    grid (cdiv(n, DA)%s)\n", g->grid2 ? ", 2" : "");
    sb_printf(&h, "    hints { DA = %d, DB = %d, DC = %d, warps = %d }\n", g->dim[0], g->dim[1], g->dim[2], warps);
    if (pick(g, 3) == 0)
        sb_printf(&h, "    variants { { warps = %d }, {} }\n", warps == 1 ? 2 : warps / 2);
    sb_puts(&h, "{\n");
    sb_puts(&h, sb_str(&g->b));
    sb_puts(&h, "}\n\n");
    graph(g, &h);
    int failed = h.failed || g->b.failed || ps.failed;
    sb_free(&ps);
    sb_free(&g->b);
    free(g);
    if (failed) {
        sb_free(&h);
        return NULL;
    }
    return sb_take(&h);
}
