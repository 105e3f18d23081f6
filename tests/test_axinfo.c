/* test_axinfo.c: the analysis of index, pointer and mask tiles
 * (lower/axinfo.c) gives the same answers however a user spells the
 * same access: inline or through lets, pointer lets, `&` or `&&`,
 * `trans`, `where`, casts, loop-carried offsets; and the loads it feeds
 * take the vector width and the mask test that the answers allow. Each
 * row lowers a kernel whose one [16, 64] f32 load is probed: the trace of
 * what the load read (lower_axinfo_probe) and the CUDA C it became. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"
#include "lower/lower_internal.h"
#include "tilec/lower.h"

typedef struct spelling {
    const char *name;
    const char *body;  /* after `let r`, `let c`; the probed load on a line of its own */
    const char *want;  /* in the probed load's trace line, each ';'-free piece separated by '|' */
    const char *never; /* not in it, or NULL */
    int vec;           /* the CUDA C loads 4 elements at a time */
    int by_last;       /* the vector access is decided by the run's last mask element */
} spelling;

static const spelling rows[] = {
    {"inline &&", "let v = load(x + r[:, None] * N + c[None, :], r[:, None] < M && c[None, :] < N, 0.0);\n",
     "vec 4|[1] stride 1 contig 64 cons 1|[0] stride ? contig 1 cons 1|mask [0] cons 1 prefix [1] cons 1 prefix", NULL, 1, 1},
    {"& of indexed comparisons (docs/language.md's form)",
     "let v = load(x + r[:, None] * N + c[None, :], (r < M)[:, None] & (c < N)[None, :], 0.0);\n",
     "vec 4|[1] stride 1 contig 64|mask [0] cons 1 prefix [1] cons 1 prefix", NULL, 1, 1},
    {"named mask, offsets and pointer",
     "let m = (r < M)[:, None] & (c < N)[None, :];\nlet o = r[:, None] * N + c[None, :];\nlet p = x + o;\n"
     "let v = load(p, m, 0.0);\n",
     "vec 4|[1] stride 1 contig 64|[1] cons 1 prefix", NULL, 1, 1},
    {"a 1-D mask broadcast over the rows", "let v = load(x + r[:, None] * N + c[None, :], c < N, 0.0);\n", "vec 4|mask [0] cons 1 prefix",
     NULL, 1, 1},
    {"| of prefixes", "let v = load(x + r[:, None] * N + c[None, :], (c < N)[None, :] | (r < 0)[:, None], 0.0);\n",
     "vec 4|[1] cons 1 prefix", NULL, 1, 1},
    {"!= is no prefix", "let v = load(x + r[:, None] * N + c[None, :], c[None, :] != 5, 0.0);\n", "vec 4|mask [0] cons 1 prefix [1] cons 1",
     "[1] cons 1 prefix", 1, 0},
    {"a bound falling along the axis is no prefix", "let v = load(x + r[:, None] * N + c[None, :], c[None, :] < N - c[None, :], 0.0);\n",
     "vec 4", "[1] cons 1 prefix", 1, 0},
    {"trans", "let v = load(x + trans(c[:, None] + r[None, :] * N), r[:, None] < M, 0.0);\n",
     "vec 4|[0] stride ? contig 1|[1] stride 1 contig 64", NULL, 1, 1},
    {"where with a condition constant along the axis",
     "let v = load(x + where((r < M)[:, None], r[:, None] * N + c[None, :], c[None, :]), r[:, None] < M, 0.0);\n",
     "vec 4|[1] stride 1 contig 64", NULL, 1, 1},
    {"where with a condition varying along the axis",
     "let v = load(x + where(c[None, :] < 8, r[:, None] * N + c[None, :], c[None, :]), r[:, None] < M, 0.0);\n",
     "vec 0|[1] stride ?", NULL, 0, 0},
    {"casts to i64", "let v = load(x + cast(r, i64)[:, None] * cast(N, i64) + cast(c, i64)[None, :], r[:, None] < M, 0.0);\n",
     "vec 4|[1] stride 1 contig 64", NULL, 1, 1},
    {"scalar pointer let", "let base = x + pid(0) * 16 * N;\nlet v = load(base + (r[:, None] - pid(0) * 16) * N + c[None, :], r[:, None] < M, 0.0);\n",
     "vec 4|[1] stride 1 contig 64", NULL, 1, 1},
    {"stride 2", "let v = load(x + r[:, None] * N + c[None, :] * 2, r[:, None] < M, 0.0);\n", "vec 0|[1] stride 2 contig 1", NULL, 0,
     0},
    {"reversed", "let v = load(x + r[:, None] * N + (63 - c)[None, :], r[:, None] < M, 0.0);\n", "vec 0|[1] stride -1 contig 1", NULL, 0,
     0},
    {"loop-carried pointer (p = p + 64)",
     "let p = x + r[:, None] * N + c[None, :];\nlet acc = zeros(f32, 16, 64);\nfor k in 0 .. N step 64 {\n"
     "acc = acc + load(p, r[:, None] < M, 0.0);\np = p + 64;\n}\nlet v = acc;\n",
     "vec 4|[1] stride 1 contig 64", NULL, 1, 1},
    {"loop-carried pointer stepped by a tile",
     "let p = x + r[:, None] * N + c[None, :];\nlet acc = zeros(f32, 16, 64);\nfor k in 0 .. N step 64 {\n"
     "acc = acc + load(p, r[:, None] < M, 0.0);\np = p + c[None, :];\n}\nlet v = acc;\n",
     "vec 0|[1] stride ?", NULL, 0, 0},
};

static char *kernel_text(const spelling *s)
{
    const char *head = "kernel k(x: *f32, y: *f32, M: i32, N: i32)\n"
                       "    grid (cdiv(M, 16))\n"
                       "    hints { warps = 4 }\n"
                       "{\n"
                       "let r = pid(0) * 16 + range(16);\n"
                       "let c = range(64);\n";
    const char *tail = "store(y + r, sum(v, 1), r < M);\n}\n";
    size_t n = strlen(head) + strlen(s->body) + strlen(tail) + 1;
    char *t = malloc(n);
    cr_assert(t);
    snprintf(t, n, "%s%s%s", head, s->body, tail);
    return t;
}

/* The trace line of the [16, 64] load (the store of [16] is the other). */
static char *load_line(const char *trace)
{
    for (const char *p = trace; (p = strstr(p, " load axis ")); p++) {
        const char *b = p;
        while (b > trace && b[-1] != '\n')
            b--;
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - b) : strlen(b);
        char *l = malloc(n + 1);
        memcpy(l, b, n);
        l[n] = 0;
        return l;
    }
    return NULL;
}

static void check(const spelling *s)
{
    char *text = kernel_text(s);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "axinfo.tile", text, strlen(text), &m), TILEC_OK, "%s: does not check:\n%s", s->name, text);
    const tilec_kernel *k = tilec_module_kernel(m, 0);
    strbuf log;
    sb_init(&log);
    cr_assert_eq(lower_axinfo_probe(ctx, m, k, 0, &log), 0, "%s: does not lower", s->name);
    char *line = load_line(sb_str(&log));
    cr_assert(line, "%s: no load in the trace:\n%s", s->name, sb_str(&log));
    char want[512];
    snprintf(want, sizeof want, "%s", s->want);
    for (char *save = NULL, *w = strtok_r(want, "|", &save); w; w = strtok_r(NULL, "|", &save))
        cr_expect(strstr(line, w), "%s: '%s' not in\n  %s", s->name, w, line);
    if (s->never)
        cr_expect(!strstr(line, s->never), "%s: '%s' in\n  %s", s->name, s->never, line);
    /* what the CUDA C does with it */
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, k, 0, &code), TILEC_OK, "%s", s->name);
    int vec = strstr(code.source, "tl_c < 8; tl_c += 4") != NULL;
    cr_expect_eq(vec, s->vec, "%s: vector loads %d, want %d\n%s", s->name, vec, s->vec, code.source);
    if (s->vec) {
        int by_last = strstr(code.source, "if (tl_m3 && ((unsigned long long)tl_p & 15) == 0)") != NULL;
        cr_expect_eq(by_last, s->by_last, "%s: run decided by its last mask element %d, want %d\n%s", s->name, by_last, s->by_last,
                     code.source);
    }
    tilec_kernel_code_free(&code);
    free(line);
    sb_free(&log);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    free(text);
}

Test(axinfo, every_spelling_of_one_access_gets_the_same_answers)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        check(&rows[i]);
}

/* The defect this analysis fixed as a class: masks joined by `&` (the
 * form docs/language.md recommends) were not known to be true on a
 * prefix, so every element of a run was tested before a vector access;
 * the same for `|`. */
Test(axinfo, masks_joined_by_and_are_decided_by_the_run_s_last_element)
{
    check(&rows[1]);
    check(&rows[4]);
}

/* A mask of lower rank than the access (broadcast from the right) is a
 * prefix along the axes it spans and constant along the others; it was
 * not examined at all. */
Test(axinfo, a_mask_of_lower_rank_is_examined_through_its_broadcast)
{
    check(&rows[3]);
}
