/* test_robust.c: hostile input to the whole front end. Random bytes,
 * every truncated prefix and random mutations of every example, deep
 * nesting, huge files: each must end in a diagnostic (or a clean parse),
 * never a crash, hang or leak (`make asan` runs this under ASan+UBSan). */
#include <criterion/criterion.h>
#include <glob.h>
#include <time.h>

#include "helpers.h"

/* Parse; an error status must come with at least one located error,
 * success with none. */
static void expect_consistent(const char *what, const char *text, size_t len)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_string(ctx, what, text, len, &m);
    if (st == TILEC_OK) {
        cr_expect_eq(tilec_ctx_error_count(ctx), 0, "%s: success with errors", what);
        cr_expect_not_null(m);
    } else {
        cr_expect_eq(st, TILEC_ERR_INPUT, "%s: status %d", what, st);
        cr_expect_gt(tilec_ctx_error_count(ctx), 0, "%s: failure without a diagnostic", what);
        const tilec_diag *d = tilec_ctx_diag(ctx, 0);
        cr_expect(d && d->message[0], "%s: empty message", what);
        cr_expect_null(m);
    }
    membuf out = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&out));
    free(out.s);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

static unsigned long long rng_state;
static unsigned rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng_state >> 33);
}

Test(robust, random_bytes, .timeout = 60)
{
    rng_state = (unsigned long long)time(NULL);
    cr_log_info("random_bytes seed %llu", rng_state);
    char buf[512];
    for (int round = 0; round < 3000; round++) {
        size_t n = rnd() % sizeof buf;
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)rnd();
        expect_consistent("random.tile", buf, n);
        /* random tokens are more likely to get past the lexer */
        static const char *const words[] = {"kernel", "graph", "extern", "let", "for", "in", "..", "(", ")", "{",
                                            "}", "[", "]", ",", ";", ":", "=", "+", "*", "x", "n", "f32", "*f32",
                                            "1", "2.5", "range(4)", "load", "store", "if", "->", "None", "\n"};
        size_t k = 0;
        size_t nw = rnd() % 60;
        for (size_t i = 0; i < nw; i++) {
            const char *w = words[rnd() % (sizeof words / sizeof words[0])];
            size_t l = strlen(w);
            if (k + l + 1 >= sizeof buf)
                break;
            memcpy(buf + k, w, l);
            k += l;
            buf[k++] = ' ';
        }
        expect_consistent("words.tile", buf, k);
    }
}

static char **example_files(size_t *n)
{
    glob_t g;
    char **v = NULL;
    *n = 0;
    if (glob("examples/*.tile", 0, NULL, &g) == 0) {
        v = calloc(g.gl_pathc, sizeof *v);
        for (size_t i = 0; i < g.gl_pathc; i++)
            v[(*n)++] = strdup(g.gl_pathv[i]);
        globfree(&g);
    }
    return v;
}

Test(robust, truncated_prefixes_of_examples, .timeout = 120)
{
    size_t n;
    char **files = example_files(&n);
    cr_assert_gt(n, 0);
    for (size_t f = 0; f < n; f++) {
        size_t len = 0;
        char *text = read_file(files[f], &len);
        cr_assert(text);
        for (size_t cut = 0; cut < len; cut++)
            expect_consistent(files[f], text, cut);
        free(text);
        free(files[f]);
    }
    free(files);
}

Test(robust, mutated_examples, .timeout = 120)
{
    rng_state = (unsigned long long)time(NULL) ^ 0x9e3779b97f4a7c15ULL;
    cr_log_info("mutated_examples seed %llu", rng_state);
    size_t n;
    char **files = example_files(&n);
    for (size_t f = 0; f < n; f++) {
        size_t len = 0;
        char *text = read_file(files[f], &len);
        cr_assert(text && len);
        char *copy = malloc(len + 1);
        for (int round = 0; round < 400; round++) {
            memcpy(copy, text, len);
            int edits = 1 + (int)(rnd() % 4);
            for (int e = 0; e < edits; e++)
                copy[rnd() % len] = (char)(rnd() % 3 ? " ();,{}[]+-*0aZ:\n"[rnd() % 17] : (char)rnd());
            expect_consistent(files[f], copy, len);
        }
        free(copy);
        free(text);
        free(files[f]);
    }
    free(files);
}

static char *repeat(const char *head, const char *unit, size_t times, const char *tail, size_t *len)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(hl + ul * times + tl + 1);
    memcpy(s, head, hl);
    for (size_t i = 0; i < times; i++)
        memcpy(s + hl + i * ul, unit, ul);
    memcpy(s + hl + ul * times, tail, tl + 1);
    *len = hl + ul * times + tl;
    return s;
}

Test(robust, deep_nesting_is_an_error, .timeout = 30)
{
    size_t len;
    char *open = repeat("kernel k(n: i32) grid (1) { let x = ", "(", 100000, "1", &len);
    char *diags;
    cr_expect_eq(parse_text("deep.tile", open, len, &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(strstr(diags, "error: nesting is too deep: more than 1000 levels"), "%s", diags);
    free(diags);
    free(open);
    char *neg = repeat("kernel k(n: i32) grid (1) { let x = ", "-", 100000, "1; }", &len);
    cr_expect_eq(parse_text("neg.tile", neg, len, &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(strstr(diags, "nesting is too deep"), "%s", diags);
    free(diags);
    free(neg);
    char *blocks = repeat("kernel k(n: i32) grid (1) ", "{ if true ", 50000, "", &len);
    cr_expect_eq(parse_text("blocks.tile", blocks, len, &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(strstr(diags, "nesting is too deep"), "%s", diags);
    free(diags);
    free(blocks);
}

Test(robust, moderately_deep_nesting_is_fine)
{
    size_t len;
    char *a = repeat("kernel k(n: i32) grid (1) { let x = ", "(", 200, "1", &len);
    char *b = repeat(a, ")", 200, "; }", &len);
    char *diags;
    cr_expect_eq(parse_text("ok.tile", b, len, &diags, NULL), TILEC_OK, "%s", diags);
    free(diags);
    free(a);
    free(b);
}

Test(robust, many_parameters, .timeout = 60)
{
    /* 10^5 parameters: linear time, and a duplicate found by hash */
    size_t n = 100000, len = 0;
    char *s = malloc(n * 24 + 128);
    len += (size_t)sprintf(s, "kernel k(");
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(s + len, "p%zu: i32, ", i);
    len += (size_t)sprintf(s + len, "p7: i32) grid (1) { }");
    char *diags;
    size_t nerr;
    cr_expect_eq(parse_text("params.tile", s, len, &diags, &nerr), TILEC_ERR_INPUT);
    cr_expect_eq(nerr, 1);
    cr_expect(strstr(diags, "error: parameter 'p7' is already defined as a parameter"), "%s", diags);
    free(diags);
    free(s);
}

Test(robust, long_lines_are_windowed_in_diagnostics, .timeout = 30)
{
    size_t len;
    char *s = repeat("kernel k(n: i32) grid (1) { /*", " + 1", 1000000, " */ @ }", &len);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_expect_eq(tilec_parse_string(ctx, "long.tile", s, len, &m), TILEC_ERR_INPUT);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert(d);
    cr_expect_str_eq(d->message, "unexpected character '@'");
    cr_expect_lt(strlen(d->source_line), 400);
    cr_expect_eq(d->source_line[d->source_col - 1], '@');
    tilec_ctx_free(ctx);
    free(s);
}

Test(robust, long_operator_chains_are_bounded, .timeout = 30)
{
    size_t len;
    char *s = repeat("kernel k(n: i32) grid (1) { let x = 1", " + 1", 100000, "; }", &len);
    char *diags;
    cr_expect_eq(parse_text("chain.tile", s, len, &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(strstr(diags, "error: expression is too deeply nested: more than 1000 levels"), "%s", diags);
    free(diags);
    free(s);
}

/* ---- absurd sizes: a clear error or a clean run, in bounded time and
 * memory (measured in a child: the growth of its peak RSS) ---- */

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tilec/lower.h"

typedef struct child_run {
    int code;    /* 0: checked (and lowered), 1: a located error, else broken */
    long rss_mb; /* the child's peak resident memory, less what it had at the fork */
    double secs;
    char first[256]; /* the first diagnostic */
} child_run;

static int discard(void *user, const char *data, size_t len)
{
    (void)user;
    (void)data;
    (void)len;
    return 0;
}

/* Parse text (or, with text NULL, the file at path `len`) in a child and,
 * when it checks, write every kernel's CUDA C. The child reports how much
 * its peak resident memory grew (RSS at the fork counts the parent's pages). */
static child_run run_in_child(const char *text, size_t len)
{
    child_run r;
    memset(&r, 0, sizeof r);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        struct rusage before;
        getrusage(RUSAGE_SELF, &before); /* the pages shared with the parent */
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_status st = text ? tilec_parse_string(ctx, "huge.tile", text, len, &m)
                               : tilec_parse_file(ctx, (const char *)(uintptr_t)len, &m);
        int code = 2;
        if (st == TILEC_OK)
            code = tilec_module_emit_cuda(ctx, m, (tilec_sink){discard, NULL}) == TILEC_OK ? 0 : 1;
        else if (st == TILEC_ERR_INPUT && tilec_ctx_error_count(ctx) > 0)
            code = 1;
        const tilec_diag *d = tilec_ctx_diag(ctx, 0);
        struct rusage after;
        getrusage(RUSAGE_SELF, &after);
        {
            char line[256];
            int n = snprintf(line, sizeof line, "%ld %u:%u: %s", after.ru_maxrss - before.ru_maxrss, d ? d->line : 0,
                             d ? d->col : 0, d ? d->message : "(no diagnostic)");
            if (write(fds[1], line, n > 0 && (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0)
                code = 3;
        }
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        _exit(code);
    }
    close(fds[1]);
    char msg[300];
    ssize_t got = read(fds[0], msg, sizeof msg - 1);
    msg[got > 0 ? got : 0] = 0;
    close(fds[0]);
    long grew_kb = 0;
    int off = 0;
    if (sscanf(msg, "%ld %n", &grew_kb, &off) == 1)
        snprintf(r.first, sizeof r.first, "%s", msg + off);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.rss_mb = grew_kb / 1024; /* peak resident memory the child added */
    r.secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return r;
}

static void report(const char *what, size_t bytes, const child_run *r)
{
    fprintf(stderr, "hostile: %-40s %9zu bytes: exit %d, %.2f s, %ld MB peak; %s\n", what, bytes, r->code, r->secs,
            r->rss_mb, r->first[0] ? r->first : "(no diagnostic)");
}

Test(hostile, tiles_of_2_to_the_40_elements, .timeout = 30)
{
    static const char *srcs[] = {
        "kernel k(x: *f32) grid (1) hints { B = 1099511627776 } { store(x + range(B), 1.0); }\n",
        "kernel k(x: *f32) grid (1) { let w = full(f32, 1.0, 1024, 1024, 1024, 1024); store(x + range(4), 1.0); }\n",
        "kernel k(x: *f32) grid (1) hints { A = 65536, B = 65536 } { let z = zeros(f32, A, B); }\n",
        "kernel k(x: *f32) grid (1) hints { B = 1024 } { let z = zeros(f32, B, B, B, B) + zeros(f32, B, B, B, B); }\n",
    };
    static const char *want[] = {"tile size must be a power of two from 1 to 65536, got 1099511627776",
                                 "tile [1024, 1024, 1024, 1024] has more than 1048576 elements",
                                 "tile [65536, 65536] has more than 1048576 elements",
                                 "tile [1024, 1024, 1024, 1024] has more than 1048576 elements"};
    for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
        child_run r = run_in_child(srcs[i], strlen(srcs[i]));
        report("tile of 2^40 elements", strlen(srcs[i]), &r);
        cr_expect_eq(r.code, 1, "case %zu: exit %d", i, r.code);
        cr_expect(strstr(r.first, want[i]), "case %zu: %s", i, r.first);
        cr_expect_lt(r.rss_mb, 200, "case %zu: %ld MB", i, r.rss_mb);
    }
}

/* A tile one thread cannot hold in registers (more than
 * TILEC_MAX_TILE_REGS = 256 a thread) is a checker error that says what
 * fits: a 256x256 f32 tile at warps = 1 made NVRTC take 105 s and 5.9 GB. */
Test(hostile, register_impossible_tiles, .timeout = 30)
{
    static const struct {
        const char *src, *want; /* want NULL: it checks */
    } cases[] = {
        {"kernel k(x: *f32) grid (1) hints { A = 256, warps = 1 } {\n"
         "    store(x + range(A)[:, None] * A + range(A)[None, :], zeros(f32, A, A));\n}\n",
         "tile [256, 256] needs 2048 registers in each of the 32 threads of warps = 1, more than 256: at warps = 1 a "
         "tile of f32 holds at most 8192 elements; this one needs warps = 8"},
        {"kernel k(x: *f32) grid (1) hints { A = 256, warps = 8 } {\n"
         "    store(x + range(A)[:, None] * A + range(A)[None, :], zeros(f32, A, A));\n}\n",
         NULL},
        {"kernel k(x: *f64) grid (1) hints { warps = 1 } { store(x + range(4096), zeros(f64, 4096)); }\n", NULL},
        {"kernel k(x: *f64) grid (1) hints { warps = 1 } { store(x + range(8192), zeros(f64, 8192)); }\n",
         "tile [8192] needs 512 registers in each of the 32 threads of warps = 1, more than 256: at warps = 1 a tile "
         "of f64 holds at most 4096 elements; this one needs warps = 2"},
        {"kernel k(x: *f32) grid (1) { let z = zeros(f32, 256, 512); }\n", /* warps = 4 when not set */
         "tile [256, 512] needs 1024 registers in each of the 128 threads of warps = 4, more than 256: at warps = 4 "
         "a tile of f32 holds at most 32768 elements; this one needs warps = 16"},
        {"kernel k(x: *f32) grid (1) hints { warps = 32 } { let z = zeros(f32, 1024, 1024); }\n",
         "tile [1024, 1024] needs 1024 registers in each of the 1024 threads of warps = 32, more than 256: at warps = "
         "32 a tile of f32 holds at most 262144 elements, and even warps = 32 is not enough; use a smaller tile"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        child_run r = run_in_child(cases[i].src, strlen(cases[i].src));
        report("register-impossible tile", strlen(cases[i].src), &r);
        cr_expect_eq(r.code, cases[i].want ? 1 : 0, "case %zu: exit %d: %s", i, r.code, r.first);
        if (cases[i].want)
            cr_expect(strstr(r.first, cases[i].want), "case %zu: %s", i, r.first);
    }
}

Test(hostile, a_million_parameters, .timeout = 120)
{
    size_t n = 1000000, len = 0;
    char *s = malloc(n * 24 + 128);
    cr_assert(s);
    len += (size_t)sprintf(s, "kernel k(");
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(s + len, "%sp%zu: i32", i ? ", " : "", i);
    len += (size_t)sprintf(s + len, ") grid (1) { }\n");
    child_run r = run_in_child(s, len);
    report("10^6 parameters (parse, check, lower)", len, &r);
    cr_expect_eq(r.code, 0, "exit %d: %s", r.code, r.first);
    /* about 450 bytes a parameter (the slack is for the sanitizers) */
    cr_expect_lt(r.rss_mb, 1536, "%ld MB", r.rss_mb);
    free(s);
}

Test(hostile, nesting_of_10_to_the_5, .timeout = 30)
{
    size_t len;
    char *a = repeat("kernel k(n: i32) grid (1) { let x = ", "(", 100000, "1", &len);
    char *b = repeat(a, ")", 100000, "; }\n", &len);
    child_run r = run_in_child(b, len);
    report("10^5 nested parentheses", len, &r);
    cr_expect_eq(r.code, 1);
    cr_expect(strstr(r.first, "nesting is too deep"), "%s", r.first);
    cr_expect_lt(r.rss_mb, 200, "%ld MB", r.rss_mb);
    free(a);
    free(b);
}

/* 100 MB: a valid file that is mostly comments, one 100 MB doc comment
 * line, one 100 MB expression, 100 MB of kernels; as text and as a file.
 * Each is one error (larger than TILEC_MAX_SOURCE, 16 MiB), found before
 * anything is built. */
static char *kernels_of(size_t bytes)
{
    const char unit[] = "kernel kXXXXXXX(x: *f32, n: i32) grid (cdiv(n, 256)) { let i = pid(0) * 256 + range(256); "
                        "store(x + i, 1.0, i < n); }\n";
    size_t ul = sizeof unit - 1, count = bytes / ul;
    char *s = malloc(count * ul + 1);
    cr_assert(s);
    for (size_t i = 0; i < count; i++) {
        memcpy(s + i * ul, unit, ul);
        char id[24];
        snprintf(id, sizeof id, "%07zu", i % 10000000);
        memcpy(s + i * ul + 8, id, 7);
    }
    s[count * ul] = 0;
    return s;
}

Test(hostile, files_of_100_mb, .timeout = 300)
{
    const size_t mb100 = (size_t)100 << 20;
    size_t len;
    char *cases[4];
    const char *what[4] = {"100 MB of comments after a kernel", "one 100 MB doc comment line",
                           "one 100 MB expression", "100 MB of kernels"};
    cases[0] = repeat("kernel k(x: *f32) grid (1) { store(x + range(4), 1.0); }\n",
                      "// a comment line of a hundred bytes, over and over: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
                      mb100 / 100, "", &len);
    cases[1] = repeat("/// ", "y", mb100, "\nkernel k(x: *f32) grid (1) { }\n", &len);
    cases[2] = repeat("kernel k(x: *f32) grid (1) { let a = 1", " + 1", mb100 / 4, "; }\n", &len);
    cases[3] = kernels_of(mb100);
    char dir[] = "/tmp/tilec_huge_XXXXXX", path[64];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/huge.tile", dir);
    for (int i = 0; i < 4; i++) {
        size_t n = strlen(cases[i]);
        child_run r = run_in_child(cases[i], n);
        report(what[i], n, &r);
        cr_expect_eq(r.code, 1, "%s: exit %d", what[i], r.code);
        cr_expect(strstr(r.first, "the source is larger than 16 MiB"), "%s: %s", what[i], r.first);
        cr_expect_lt(r.rss_mb, 64, "%s: %ld MB", what[i], r.rss_mb);
        FILE *f = fopen(path, "wb");
        cr_assert(f && fwrite(cases[i], 1, n, f) == n && fclose(f) == 0);
        r = run_in_child(NULL, (size_t)(uintptr_t)path);
        report(what[i], n, &r);
        cr_expect_eq(r.code, 1, "%s: exit %d", what[i], r.code);
        cr_expect(strstr(r.first, "the file is larger than 16 MiB"), "%s (file): %s", what[i], r.first);
        cr_expect_lt(r.rss_mb, 128, "%s (file): %ld MB", what[i], r.rss_mb);
        free(cases[i]);
    }
    unlink(path);
    rmdir(dir);
}

/* Just under the limit: 16 MiB of kernels (125,000) checks and lowers;
 * 16 MiB of the densest input ("a;" eight million times) is errors. Both
 * bounded (the sanitizer build uses more, hence the slack). */
Test(hostile, sixteen_mib_at_the_limit, .timeout = 300)
{
    const size_t lim = (size_t)16 << 20;
    char *k = kernels_of(lim - 4096);
    child_run r = run_in_child(k, strlen(k));
    report("16 MiB of kernels (check and lower)", strlen(k), &r);
    cr_expect_eq(r.code, 0, "exit %d: %s", r.code, r.first);
    cr_expect_lt(r.rss_mb, 3072, "%ld MB", r.rss_mb);
    free(k);
    size_t len;
    char *dense = repeat("kernel k(x: *f32) grid (1) {", "a;", (lim - 64) / 2, "}\n", &len);
    r = run_in_child(dense, len);
    report("16 MiB of 'a;' statements", len, &r);
    cr_expect_eq(r.code, 1, "exit %d", r.code);
    cr_expect_lt(r.rss_mb, 4096, "%ld MB", r.rss_mb);
    free(dense);
}

/* A NUL byte anywhere is an error at its place, never a silent truncation. */
Test(hostile, nul_bytes_anywhere)
{
    static const char *where[] = {"/// doc", "// comment", "/* block", "extern e(a: f32[N]) -> f32[N] = \"a", "kernel k",
                                  "kernel k(x: *f32) grid (1) { let a"};
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
        char buf[128];
        size_t n = strlen(where[i]);
        memcpy(buf, where[i], n);
        buf[n] = 0;
        memcpy(buf + n + 1, "x\n", 3);
        char *diags;
        cr_expect_eq(parse_text("nul.tile", buf, n + 3, &diags, NULL), TILEC_ERR_INPUT, "%s", where[i]);
        char want[64];
        snprintf(want, sizeof want, "nul.tile:1:%zu: error: unexpected NUL byte", n + 1);
        cr_expect(strstr(diags, want), "%s: %s", where[i], diags);
        free(diags);
    }
}

/* ---- bounded symbolic work (tilec/limits.h, docs/reliability.md) ---- */

#include "tilec/limits.h"
#include "tilec/wir.h"
#include "util/strbuf.h"

/* "(s0 + ... + s{k-1})" multiplied d times as a size: what
 * tools/gen_stress.py degree D K writes. */
static char *degree_src(int d, int k)
{
    strbuf b;
    sb_init(&b);
    sb_puts(&b, "graph g(x: f32[");
    for (int i = 0; i < k; i++)
        sb_printf(&b, "%ss%d", i ? ", " : "", i);
    sb_puts(&b, "]) {\n    let t = empty(f32, [");
    for (int j = 0; j < d; j++) {
        sb_puts(&b, j ? " * (" : "(");
        for (int i = 0; i < k; i++)
            sb_printf(&b, "%ss%d", i ? " + " : "", i);
        sb_putc(&b, ')');
    }
    sb_puts(&b, "]);\n}\n");
    char *s = strdup(sb_str(&b));
    sb_free(&b);
    return s;
}

/* A degree-8 size over 12 symbols (4,368 partial products at the third
 * product, 75,582 terms in all) took 6.8 s and more than 4 GB; now the
 * term limit stops it at once, naming the place and the count. */
Test(hostile, a_degree_8_size_is_a_clear_error, .timeout = 30)
{
    char *src = degree_src(8, 12);
    child_run r = run_in_child(src, strlen(src));
    report("degree-8 size over 12 symbols", strlen(src), &r);
    cr_expect_eq(r.code, 1, "exit %d", r.code);
    cr_expect(strstr(r.first, "2:215: a tensor size has too many terms to compare symbolically: 4368 (the limit is 1024 terms)"),
              "%s", r.first);
    cr_expect_lt(r.rss_mb, 100, "%ld MB", r.rss_mb);
    free(src);
    /* the degree limit: one symbol to the 17th */
    const char *deg = "graph g(x: f32[N]) { let t = empty(f32, [N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N*N]); }\n";
    r = run_in_child(deg, strlen(deg));
    cr_expect_eq(r.code, 1);
    cr_expect(strstr(r.first, "a tensor size has too high a degree to compare symbolically: 17 symbols in one term "
                              "(the limit is 16)"), "%s", r.first);
    /* the byte size is bounded too: four dimensions of 12 terms each */
    char *four = degree_src(1, 12), *dims = strstr(four, "empty(f32, [") + 12;
    size_t one = strcspn(dims, "]");
    char *src4 = malloc(strlen(four) + 4 * one + 16);
    snprintf(src4, strlen(four) + 4 * one + 16, "%.*s%.*s, %.*s, %.*s, %.*s]);\n}\n", (int)(dims - four), four,
             (int)one, dims, (int)one, dims, (int)one, dims, (int)one, dims);
    r = run_in_child(src4, strlen(src4));
    cr_expect_eq(r.code, 1, "exit %d", r.code);
    cr_expect(strstr(r.first, "2:9: the byte size of 't' has too many terms to compare symbolically: 4368"), "%s", r.first);
    free(src4);
    free(four);
}

/* 128k graph statements check, lower to wrapper IR and plan in a time
 * that grows with the graph: the name lookups, frees and pool searches
 * were scans (19 s for 64k statements, about 80 s for 128k); now about
 * 0.6 s. The timeout is the bound, generous enough for ASan. */
Test(hostile, a_graph_of_128k_statements_lowers_in_linear_time, .timeout = 60)
{
    strbuf b;
    sb_init(&b);
    sb_puts(&b, "kernel k(x: *f32, y: *f32, n: i32) grid (1) { store(y, load(x)); }\ngraph g(a: f32[N]) -> f32[N] {\n");
    const char *prev = "a";
    char name[32];
    enum { GROUPS = 128000 / 3 };
    for (int i = 0; i < GROUPS; i++) {
        sb_printf(&b, "    let t%d = empty(f32, [N]);\n    k(%s, t%d, N);\n    let v%d = view(t%d, f32[N]);\n", i, prev, i,
                  i, i);
        snprintf(name, sizeof name, "v%d", i);
        prev = name;
    }
    sb_printf(&b, "    return %s;\n}\n", prev);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "big.tile", sb_str(&b), b.n, &m), TILEC_OK);
    tilec_wir *w = NULL;
    cr_assert_eq(tilec_wir_lower(ctx, m, tilec_module_graph(m, 0), &w), TILEC_OK);
    cr_assert_eq(tilec_wir_plan(ctx, w), TILEC_OK);
    size_t reuses = 0;
    for (size_t i = 0; i < tilec_wir_line_count(w); i++)
        reuses += tilec_wir_line_at(w, i)->kind == TILEC_WIR_REUSE;
    cr_expect_eq(reuses, GROUPS - 2, "every buffer but the first two reuses a freed one");
    tilec_wir_free(w);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    sb_free(&b);
}

/* Over TILEC_MAX_GRAPH_STMTS statements: one error at the graph. */
Test(hostile, too_many_graph_statements, .timeout = 60)
{
    strbuf b;
    sb_init(&b);
    sb_puts(&b, "graph g(a: f32[N]) {\n");
    for (int i = 0; i <= TILEC_MAX_GRAPH_STMTS; i++)
        sb_puts(&b, "///\n");
    sb_puts(&b, "}\n");
    char *diags;
    cr_expect_eq(parse_text("many.tile", sb_str(&b), b.n, &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(strstr(diags, "many.tile:1:1: error: graph 'g' has 262145 statements (the limit is 262144)"), "%s", diags);
    free(diags);
    sb_free(&b);
}
