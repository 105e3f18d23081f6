/* test_names.c: the manglers of util/mangle.h are injective and meet no
 * keyword, builtin or name of the generated code's own, for every target
 * (a property over every name below, in every namespace), and kernels
 * whose names are such words compile with NVRTC (issue 14, items 1, 5, 6
 * and the naming part of 9). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "tilec/lower.h"
#include "tilec/runtime.h"
#include "util/mangle.h"

/* C, C++ (alternative tokens included) and CUDA keywords, builtins, types,
 * macros and device functions; libc names the wrappers use; the generated
 * code's own identifiers; and the spellings of every mangling (a user may
 * write any of them). */
static const char *const words[] = {
    /* C */
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Alignas",
    "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert",
    "_Thread_local", "alignas", "alignof", "bool", "true", "false", "nullptr", "static_assert", "thread_local",
    "typeof", "typeof_unqual", "constexpr", "NULL", "main", "errno", "INFINITY", "NAN", "isnan", "isinf",
    "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "INT32_MIN", "INT32_MAX", "UINT32_MAX", "INT64_C", "UINT64_C", "PRIx64", "stdin", "stdout", "stderr",
    "printf", "fprintf", "snprintf", "vsnprintf", "malloc", "calloc", "free", "memcpy", "memset", "strlen",
    "strncmp", "strchr", "strtoll", "getenv", "atoi", "mkdir", "fopen", "fclose", "fwrite", "fputc", "va_list",
    "va_start", "va_end", "clock_gettime", "timespec", "CLOCK_MONOTONIC", "exit", "abort", "u_int", "u_char",
    /* C++ */
    "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor", "xor_eq", "asm", "catch",
    "class", "const_cast", "consteval", "constinit", "co_await", "co_return", "co_yield", "decltype", "delete",
    "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace", "new", "noexcept", "operator",
    "private", "protected", "public", "reinterpret_cast", "requires", "static_cast", "template", "this", "throw",
    "try", "typeid", "typename", "using", "virtual", "wchar_t", "char8_t", "char16_t", "char32_t", "concept",
    "final", "override", "std",
    /* CUDA */
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "__global__", "__device__", "__host__",
    "__shared__", "__constant__", "__restrict__", "__forceinline__", "__noinline__", "__launch_bounds__",
    "__align__", "__syncthreads", "__syncwarp", "__shfl_sync", "__shfl_xor_sync", "__shfl_down_sync",
    "__ballot_sync", "__activemask", "__half", "half", "__nv_bfloat16", "nv_bfloat16", "__half2float",
    "__float2half_rn", "__bfloat162float", "__float2bfloat16_rn", "uint4", "float4", "int4", "float2", "dim3",
    "atomicAdd", "atomicMax", "atomicMin", "atomicCAS", "atomicExch", "expf", "exp", "__expf", "exp2f", "logf",
    "log", "log2f", "sqrtf", "sqrt", "rsqrtf", "fabsf", "fabs", "fmaxf", "fminf", "fmaf", "fma", "fmodf",
    "fmod", "floorf", "floor", "ceilf", "ceil", "sinf", "cosf", "tanhf", "tanh", "erff", "erf", "powf", "min",
    "max", "abs", "__fdividef", "__CUDA_ARCH__", "__CUDACC__", "__cvta_generic_to_shared", "clock64",
    /* the generated code's own */
    "tilec", "tl", "err", "errlen", "M", "a", "st", "da", "in", "out", "it", "iters", "ms", "ev", "rt", "mem",
    "seed", "t0", "t1", "g", "tl_rc", "tl_live", "tl_out", "tl_mem", "tl_fail", "tl_alloc", "tl_release",
    "tl_trim", "tl_shape", "tl_cdiv", "tl_max", "tl_min", "tl_contiguous", "tl_dbg", "tl_dbg_arg",
    "tl_dbg_launch", "tl_kernels", "tl_source", "tl_smem", "tl_tid", "tl_lane", "tl_warp", "tl_j", "tl_c",
    "tl_l", "tl_i0", "tl_p", "tl_v0", "tl_m0", "tl_t0", "tl_vec", "tl_cp_wait", "TL_NKERNELS", "tilec_tensor",
    "tilec_externs", "tilec_rt", "tilec_program", "TILEC_GRAPH_x_H", "TILEC_DT_F32",
    /* from here on: not reserved, but every mangling's spelling and the old ones */
    "min_", "min__", "x", "x_", "_x", "_x_", "__x", "v_x", "v_min", "t_x", "b_x", "s_N", "s_x", "p_x", "out_y",
    "in_x", "o_x", "g_x", "g_tilec", "g_g_x", "_x_s", "_x_info", "x_info", "x_info_", "_N_s", "N", "x_s",
    "tl_x", "tl_x_", "tilec_x", "TILEC_x", "x_v0", "v_v_x", "b_b_x", "t_t_x"};
enum { NWORDS = sizeof words / sizeof words[0] };

/* The words no mangled name may be: all before "min_". */
static size_t nreserved(void)
{
    size_t n = 0;
    while (strcmp(words[n], "min_"))
        n++;
    return n;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every spelling in v[0..n) differs from every other and from every word. */
static void expect_distinct(char **v, size_t n, const char *target)
{
    qsort(v, n, sizeof *v, cmp);
    for (size_t i = 1; i < n; i++)
        cr_expect_str_neq(v[i - 1], v[i], "%s: two names meet at '%s'", target, v[i]);
    for (size_t i = 0; i < n; i++)
        for (size_t w = 0; w < nreserved(); w++)
            cr_expect_str_neq(v[i], words[w], "%s: a mangled name is the word '%s'", target, words[w]);
}

static char *take(strbuf *b)
{
    cr_assert(!b->failed);
    return sb_take(b);
}

Test(names, cuda_is_injective_and_meets_nothing)
{
    char *v[NWORDS];
    for (size_t i = 0; i < NWORDS; i++) {
        strbuf b;
        sb_init(&b);
        mg_cuda(&b, words[i]);
        v[i] = take(&b);
        cr_expect(strncmp(v[i], "tl_", 3) && strncmp(v[i], "__", 2), "%s", v[i]);
    }
    expect_distinct(v, NWORDS, "CUDA");
    for (size_t i = 0; i < NWORDS; i++)
        free(v[i]);
}

/* All the C namespaces at once: a name of one kind never meets a name of
 * another, and graph prefixes never make a library or wrapper name. */
Test(names, c_is_injective_across_namespaces)
{
    enum { NK = MG_C_BENCH_OUT + 1 };
    char **v = calloc(NK * NWORDS, sizeof *v);
    cr_assert(v);
    size_t n = 0;
    for (int k = 0; k < NK; k++)
        for (size_t i = 0; i < NWORDS; i++) {
            strbuf b;
            sb_init(&b);
            mg_c(&b, (mg_c_kind)k, words[i], strlen(words[i]));
            v[n++] = take(&b);
        }
    expect_distinct(v, n, "C");
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    static const char *const suffix[] = {"module", "load", "unload", "externs", "release", "run"};
    n = 0;
    for (size_t i = 0; i < NWORDS; i++)
        for (size_t s = 0; s < 6; s++) {
            strbuf b;
            sb_init(&b);
            mg_c_graph(&b, words[i]);
            sb_printf(&b, "_%s", suffix[s]);
            v[n++] = take(&b);
            cr_expect(strncmp(v[n - 1], "tl_", 3) && strncmp(v[n - 1], "tilec_", 6) && v[n - 1][0] != '_', "%s",
                      v[n - 1]);
        }
    expect_distinct(v, n, "C graph");
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Python: keywords and builtins as Python itself lists them, and the
 * wrapper's helpers (_NAME_s, _NAME_info) against every parameter. */
Test(names, python_is_injective_and_meets_no_keyword_or_builtin)
{
    FILE *p = popen("python3 -c 'import keyword, builtins; print(\"\\n\".join(keyword.kwlist + dir(builtins)))'", "r");
    cr_assert(p);
    char *py[400];
    size_t npy = 0;
    char line[128];
    while (npy < 400 && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        py[npy++] = strdup(line);
    }
    cr_assert_eq(pclose(p), 0);
    cr_assert_geq(npy, 150, "python3 listed %zu keywords and builtins", npy);
    size_t cap = 4 * (NWORDS + npy), n = 0;
    char **v = calloc(cap, sizeof *v);
    cr_assert(v);
    for (size_t i = 0; i < NWORDS + npy; i++) {
        const char *w = i < NWORDS ? words[i] : py[i - NWORDS];
        strbuf b, s, f, c;
        sb_init(&b);
        sb_init(&s);
        sb_init(&f);
        sb_init(&c);
        mg_py(&b, w, strlen(w));
        mg_py_helper(&s, w, strlen(w), "s");
        mg_py_helper(&f, w, strlen(w), "info");
        mg_py_helper(&c, w, strlen(w), "copy");
        v[n++] = take(&b);
        v[n++] = take(&s);
        v[n++] = take(&f);
        v[n++] = take(&c);
        for (size_t k = 0; k < npy; k++)
            cr_expect_str_neq(v[n - 4], py[k], "Python: '%s' is a keyword or builtin", v[n - 4]);
    }
    /* duplicates in the input (a word that is also a builtin) are one name */
    qsort(v, n, sizeof *v, cmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || strcmp(v[m - 1], v[i]))
            v[m++] = v[i];
        else
            free(v[i]);
    for (size_t i = 1; i < m; i++)
        cr_expect_str_neq(v[i - 1], v[i]);
    /* two different inputs, one output? count the distinct inputs */
    char **in = calloc(NWORDS + npy, sizeof *in);
    cr_assert(in);
    for (size_t i = 0; i < NWORDS + npy; i++)
        in[i] = (char *)(i < NWORDS ? words[i] : py[i - NWORDS]);
    qsort(in, NWORDS + npy, sizeof *in, cmp);
    size_t distinct = 0;
    for (size_t i = 0; i < NWORDS + npy; i++)
        distinct += !i || strcmp(in[i - 1], in[i]);
    cr_expect_eq(m, 4 * distinct, "%zu distinct names make %zu spellings, not %zu", distinct, m, 4 * distinct);
    for (size_t i = 0; i < m; i++)
        free(v[i]);
    for (size_t i = 0; i < npy; i++)
        free(py[i]);
    free(in);
    free(v);
}

/* A graph's module file shadows no module of the running Python's
 * standard library (sys.stdlib_module_names, Python 3.10 on) and none of
 * the packages the wrapper or its users import; the mapping stays
 * injective with mg_py (every changed name ends with '_', no kept one
 * does). */
Test(names, python_module_names_shadow_nothing)
{
    FILE *p = popen("python3 -c 'import sys; print(\"\\n\".join(sorted(sys.stdlib_module_names)))' 2>/dev/null",
                    "r");
    cr_assert(p);
    char line[128];
    size_t n = 0;
    static const char *const more[] = {"tilec", "torch", "numpy", "cupy"};
    for (size_t i = 0;; i++) {
        const char *w = i < 4 ? more[i] : fgets(line, sizeof line, p) ? line : NULL;
        if (!w)
            break;
        line[strcspn(line, "\n")] = 0;
        strbuf b;
        sb_init(&b);
        mg_py_module(&b, w, strlen(w));
        cr_expect_str_neq(sb_str(&b), w, "a graph named '%s' writes %s.py", w, w);
        cr_expect_eq(b.s[b.n - 1], '_', "%s", sb_str(&b));
        sb_free(&b);
        n++;
    }
    int st = pclose(p);
    if (st != 0)
        cr_skip_test("no python3 with sys.stdlib_module_names (3.10 or newer) here");
    cr_expect_gt(n, 200, "python3 listed %zu modules", n);
    /* a name of nothing keeps its spelling, as mg_py gives it */
    static const char *const kept[] = {"e2e", "block", "lambda", "x_"};
    for (size_t i = 0; i < 4; i++) {
        strbuf a, b;
        sb_init(&a);
        sb_init(&b);
        mg_py(&a, kept[i], strlen(kept[i]));
        mg_py_module(&b, kept[i], strlen(kept[i]));
        cr_expect_str_eq(sb_str(&a), sb_str(&b));
        sb_free(&a);
        sb_free(&b);
    }
}

/* Kernels whose parameters, hints, lets and loop variables are C++ and
 * CUDA words (expf, not_eq, static_cast, atomicAdd, __syncthreads, float,
 * int, min and min_) compile with NVRTC for sm_90. */
Test(names, keyword_named_kernels_compile_with_nvrtc, .timeout = 300)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, "tests/golden/ok/names.tile", &m), TILEC_OK);
    cr_assert_eq(tilec_module_kernel_count(m), 2);
    for (size_t i = 0; i < tilec_module_kernel_count(m); i++) {
        const tilec_kernel *k = tilec_module_kernel(m, i);
        tilec_kernel_code code;
        cr_assert_eq(tilec_lower_kernel(ctx, m, k, 0, &code), TILEC_OK, "%s", k->name);
        void *cubin = NULL;
        size_t size = 0;
        char *log = NULL;
        tilec_rt_status st = tilec_nvrtc_compile(code.source, code.name, "sm_90", NULL, 0, &cubin, &size, &log);
        cr_expect_eq(st, TILEC_RT_OK, "%s does not compile:\n%s\n%s", code.name, log ? log : "", code.source);
        free(cubin);
        free(log);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}
