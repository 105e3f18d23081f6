/* nvrtc.c: the compile service: CUDA C++ source to CUBIN through NVRTC,
 * with options fixed per call. Needs no GPU and no driver. NVRTC is not
 * linked: it is loaded with dlopen on the first call that needs it (one
 * table of entry points for the process, filled once), so everything but
 * compiling works on a machine without the CUDA toolkit. */
#define _DEFAULT_SOURCE /* wait4 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef" /* nvrtc.h tests undefined macros */
#include <nvrtc.h>
#pragma GCC diagnostic pop

#include "runtime/nvrtc_internal.h"
#include "runtime/watch.h"
#include "tilec/runtime.h"
#include "util/fdio.h"

#ifndef TILEC_CUDA_HOME
#define TILEC_CUDA_HOME "/usr/local/cuda" /* the build may set another default */
#endif

enum { NV_FIXED_OPTS = 5, NV_PATH_MAX = 4096 };

/* ---- loading NVRTC ----
 * $TILEC_NVRTC (a path or a library name) alone when set; else the
 * sonames of the majors whose API this file uses through the loader's
 * search (LD_LIBRARY_PATH, ld.so.cache), then lib64/ and lib/ of each
 * CUDA home ($TILEC_CUDA_HOME, $CUDA_HOME, $CUDA_PATH, the build's
 * default). The types come from nvrtc.h; no symbol of it is linked. */
#define NV_CALLS(X)                                                                                                   \
    X(GetErrorString)                                                                                                 \
    X(Version)                                                                                                        \
    X(GetNumSupportedArchs)                                                                                           \
    X(GetSupportedArchs)                                                                                              \
    X(CreateProgram)                                                                                                  \
    X(DestroyProgram)                                                                                                 \
    X(CompileProgram)                                                                                                 \
    X(GetCUBINSize)                                                                                                   \
    X(GetCUBIN)                                                                                                       \
    X(GetProgramLogSize)                                                                                              \
    X(GetProgramLog)

static struct nv_api {
#define X(name) __typeof__(&nvrtc##name) name;
    NV_CALLS(X)
#undef X
    void *lib;
    char error[1536]; /* why it could not be loaded ("" when it was) */
} nv;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static const char *const nv_sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};

/* dlopen name; on success resolve every entry point into nv (1), else
 * note why in last (0). */
static int nv_open(const char *name, char *last, size_t size)
{
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        const char *why = dlerror();
        snprintf(last, size, "%s", why ? why : name);
        return 0;
    }
#define X(fn)                                                                                                         \
    {                                                                                                                 \
        void *sym = dlsym(lib, "nvrtc" #fn);                                                                          \
        if (!sym) {                                                                                                   \
            snprintf(last, size, "%s has no nvrtc" #fn " (NVRTC 12 or newer needed)", name);                         \
            dlclose(lib);                                                                                             \
            return 0;                                                                                                 \
        }                                                                                                             \
        memcpy(&nv.fn, &sym, sizeof sym);                                                                             \
    }
    NV_CALLS(X)
#undef X
    nv.lib = lib;
    return 1;
}

static void nv_load_once(void)
{
    char last[1024] = "";
    const char *forced = getenv("TILEC_NVRTC");
    if (forced && *forced) {
        if (!nv_open(forced, last, sizeof last))
            snprintf(nv.error, sizeof nv.error,
                     "NVRTC could not be loaded from TILEC_NVRTC=%.400s (%.600s): point TILEC_NVRTC at the CUDA "
                     "toolkit's libnvrtc.so, or unset it to search the usual places",
                     forced, last);
        return;
    }
    for (size_t i = 0; i < sizeof nv_sonames / sizeof nv_sonames[0]; i++)
        if (nv_open(nv_sonames[i], last, sizeof last))
            return;
    const char *homes[] = {getenv("TILEC_CUDA_HOME"), getenv("CUDA_HOME"), getenv("CUDA_PATH"), TILEC_CUDA_HOME};
    char tried[512] = "", path[NV_PATH_MAX];
    size_t at = 0;
    for (size_t h = 0; h < sizeof homes / sizeof homes[0]; h++) {
        if (!homes[h] || !*homes[h])
            continue;
        if (at < sizeof tried)
            at += (size_t)snprintf(tried + at, sizeof tried - at, ", %s/lib64", homes[h]);
        for (size_t d = 0; d < 2; d++)
            for (size_t i = 0; i < sizeof nv_sonames / sizeof nv_sonames[0]; i++) {
                int n = snprintf(path, sizeof path, "%s/%s/%s", homes[h], d ? "lib" : "lib64", nv_sonames[i]);
                if (n > 0 && (size_t)n < sizeof path && access(path, F_OK) == 0 && nv_open(path, last, sizeof last))
                    return;
            }
    }
    snprintf(nv.error, sizeof nv.error,
             "NVRTC not found (tried libnvrtc.so.13, libnvrtc.so.12 and libnvrtc.so on the library path%s; last "
             "error: %.600s): compiling kernels needs the CUDA toolkit's NVRTC (12 or 13); install it, or set "
             "TILEC_NVRTC to the path of libnvrtc.so (or TILEC_CUDA_HOME to the toolkit)",
             tried, last);
}

/* NULL when NVRTC is loaded, else why it is not (the same text each time). */
static const char *nv_load(void)
{
    pthread_once(&nv_once, nv_load_once);
    return nv.lib ? NULL : nv.error;
}

const char *tilec_nvrtc_load_error(void)
{
    return nv_load();
}

/* Set *log to a malloc'd formatted message (when log is not NULL). */
static void log_printf(char **log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void log_printf(char **log, const char *fmt, ...)
{
    if (!log)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    *log = s;
}

/* 1 for a real architecture NVRTC can make a CUBIN for: sm_ then two or
 * three digits, then optionally 'a' (arch-specific) or 'f' (family). */
static int arch_ok(const char *arch)
{
    if (strncmp(arch, "sm_", 3) != 0)
        return 0;
    const char *p = arch + 3;
    size_t digits = 0;
    while (p[digits] >= '0' && p[digits] <= '9')
        digits++;
    if (digits < 2 || digits > 3)
        return 0;
    p += digits;
    if (*p == 'a' || *p == 'f')
        p++;
    return *p == 0;
}

static int has_fp16_header(const char *home, char *dir, size_t size)
{
    if (!home || !*home)
        return 0;
    char probe[NV_PATH_MAX];
    int n = snprintf(probe, sizeof probe, "%s/include/cuda_fp16.h", home);
    if (n < 0 || (size_t)n >= sizeof probe || access(probe, R_OK) != 0)
        return 0;
    n = snprintf(dir, size, "%s/include", home);
    return n > 0 && (size_t)n < size;
}

tilec_rt_status tilec_nvrtc_include_dir(char *buf, size_t size)
{
    if (!buf || size == 0)
        return TILEC_RT_INVALID_ARG;
    buf[0] = 0;
    const char *homes[] = {getenv("TILEC_CUDA_HOME"), getenv("CUDA_HOME"), getenv("CUDA_PATH"), TILEC_CUDA_HOME};
    for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++)
        if (has_fp16_header(homes[i], buf, size))
            return TILEC_RT_OK;
    buf[0] = 0;
    return TILEC_RT_OK;
}

/* The options that decide the code NVRTC makes, arch_opt first: every
 * compile passes them, and the cache key holds them (the include
 * directory, a path that differs between machines holding the same
 * headers, is left to the NVRTC version). Returns how many; at most
 * NV_FIXED_OPTS - 1. */
static int nv_code_options(const char *arch_opt, const char **opts)
{
    int n = 0;
    opts[n++] = arch_opt;
    opts[n++] = "-default-device";
    opts[n++] = "--std=c++17";
    /* line tables quadruple a CUBIN (500 against 113 KB for the matmul
     * example): only when asked, for profilers */
    const char *li = getenv("TILEC_LINEINFO");
    if (li && !strcmp(li, "1"))
        opts[n++] = "-lineinfo";
    return n;
}

void rt_nvrtc_options_line(const char *arch, char *buf, size_t size)
{
    char arch_opt[64];
    const char *opts[NV_FIXED_OPTS];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch ? arch : "");
    int n = nv_code_options(arch_opt, opts);
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? " " : "", opts[i]);
}

tilec_rt_status tilec_nvrtc_version(int *major, int *minor)
{
    if (!major || !minor)
        return TILEC_RT_INVALID_ARG;
    if (nv_load())
        return TILEC_RT_COMPILE_ERROR;
    return nv.Version(major, minor) == NVRTC_SUCCESS ? TILEC_RT_OK : TILEC_RT_COMPILE_ERROR;
}

tilec_rt_status tilec_nvrtc_arch_supported(const char *arch, char *known, size_t size)
{
    if (known && size)
        known[0] = 0;
    int n = 0, list[128];
    if (nv_load())
        return TILEC_RT_COMPILE_ERROR;
    if (nv.GetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 || n > 128 ||
        nv.GetSupportedArchs(list) != NVRTC_SUCCESS)
        return TILEC_RT_COMPILE_ERROR;
    int number = arch && arch_ok(arch) ? atoi(arch + 3) : -1, found = 0;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        found |= list[i] == number;
        if (known && at < size)
            at += (size_t)snprintf(known + at, size - at, "%ssm_%d", i ? ", " : "", list[i]);
    }
    if (known && at >= size && size)
        known[size - 1] = 0;
    return found ? TILEC_RT_OK : TILEC_RT_INVALID_ARG;
}

static char *program_log(nvrtcProgram prog)
{
    size_t n = 0;
    if (nv.GetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0)
        return NULL;
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    if (nv.GetProgramLog(prog, s) != NVRTC_SUCCESS) {
        free(s);
        return NULL;
    }
    s[n] = 0;
    return s;
}

/* 1 when the log holds nothing but blanks. */
static int blank(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\n' && *s != '\r' && *s != '\t')
            return 0;
    return 1;
}

tilec_rt_status tilec_nvrtc_compile(const char *source, const char *program_name, const char *arch,
                                    const char *const *extra_options, size_t nopts, void **cubin,
                                    size_t *cubin_size, char **log)
{
    if (log)
        *log = NULL;
    if (cubin)
        *cubin = NULL;
    if (cubin_size)
        *cubin_size = 0;
    if (!source || !arch || !cubin || !cubin_size || (nopts && !extra_options)) {
        log_printf(log, "tilec_nvrtc_compile: NULL source, arch, output or options\n");
        return TILEC_RT_INVALID_ARG;
    }
    if (!arch_ok(arch)) {
        log_printf(log, "tilec_nvrtc_compile: arch '%s' is not a real GPU architecture (sm_90, sm_90a, sm_100f...)\n",
                   arch);
        return TILEC_RT_INVALID_ARG;
    }
    for (size_t i = 0; i < nopts; i++)
        if (!extra_options[i]) {
            log_printf(log, "tilec_nvrtc_compile: extra option %zu is NULL\n", i);
            return TILEC_RT_INVALID_ARG;
        }
    if (nopts > (size_t)(1 << 20)) {
        log_printf(log, "tilec_nvrtc_compile: %zu extra options\n", nopts);
        return TILEC_RT_INVALID_ARG;
    }
    const char *name = program_name && *program_name ? program_name : "kernel.cu";
    const char *missing = nv_load();
    if (missing) {
        log_printf(log, "%s: %s\n", name, missing);
        return TILEC_RT_COMPILE_ERROR;
    }

    char arch_opt[64], inc_dir[NV_PATH_MAX], inc_opt[NV_PATH_MAX + 3];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    tilec_nvrtc_include_dir(inc_dir, sizeof inc_dir);
    snprintf(inc_opt, sizeof inc_opt, "-I%s", inc_dir);
    const char **opts = malloc((NV_FIXED_OPTS + nopts) * sizeof *opts);
    if (!opts)
        return TILEC_RT_NOMEM;
    int n = nv_code_options(arch_opt, opts);
    if (inc_dir[0])
        opts[n++] = inc_opt;
    for (size_t i = 0; i < nopts; i++)
        opts[n++] = extra_options[i];

    nvrtcProgram prog = NULL;
    nvrtcResult r = nv.CreateProgram(&prog, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        free(opts);
        log_printf(log, "%s: nvrtcCreateProgram: %s\n", name, nv.GetErrorString(r));
        return r == NVRTC_ERROR_OUT_OF_MEMORY ? TILEC_RT_NOMEM : TILEC_RT_COMPILE_ERROR;
    }
    r = nv.CompileProgram(prog, n, opts);
    free(opts);
    char *text = program_log(prog);
    tilec_rt_status st = TILEC_RT_OK;
    if (r != NVRTC_SUCCESS) {
        st = r == NVRTC_ERROR_OUT_OF_MEMORY ? TILEC_RT_NOMEM : TILEC_RT_COMPILE_ERROR;
        const char *hint = inc_dir[0] ? ""
                                      : "tilec: no CUDA include directory found (set TILEC_CUDA_HOME to the "
                                        "toolkit holding include/cuda_fp16.h)\n";
        /* The whole log; a status line first when it is not a plain
         * compilation error (a bad option, an internal failure). */
        if (r == NVRTC_ERROR_COMPILATION && !blank(text))
            log_printf(log, "%s%s", text, hint);
        else
            log_printf(log, "%s: nvrtcCompileProgram: %s\n%s%s", name, nv.GetErrorString(r), text ? text : "",
                       hint);
    } else {
        size_t size = 0;
        void *bin = NULL;
        r = nv.GetCUBINSize(prog, &size);
        if (r == NVRTC_SUCCESS && size > 0 && (bin = malloc(size)) != NULL)
            r = nv.GetCUBIN(prog, bin);
        if (r != NVRTC_SUCCESS || size == 0 || !bin) {
            free(bin);
            st = !bin && r == NVRTC_SUCCESS && size > 0 ? TILEC_RT_NOMEM : TILEC_RT_COMPILE_ERROR;
            log_printf(log, "%s: nvrtcGetCUBIN for %s: %s (%zu bytes)\n", name, arch, nv.GetErrorString(r),
                       size);
        } else {
            *cubin = bin;
            *cubin_size = size;
            if (log && !blank(text)) {
                *log = text; /* warnings */
                text = NULL;
            }
        }
    }
    free(text);
    nv.DestroyProgram(&prog);
    return st;
}

/* ---- compiles in a child process ----
 * NVRTC serializes concurrent compiles inside one process (seen with NVRTC
 * 13.0 on the H100 machine: 16 threads compiled 32 kernels no faster than
 * one), so the pool's workers each fork a child that compiles and sends
 * the result back through a pipe. The parent calls no NVRTC function while
 * children run; glibc keeps malloc usable in the child. */



tilec_rt_status tilec_nvrtc_compile_isolated(const char *source, const char *program_name, const char *arch,
                                             const char *const *extra_options, size_t nopts, void **cubin,
                                             size_t *cubin_size, char **log)
{
    if (log)
        *log = NULL;
    if (!source || !arch || !cubin || !cubin_size || (nopts && !extra_options)) {
        log_printf(log, "tilec_nvrtc_compile_isolated: NULL source, arch, output or options\n");
        return TILEC_RT_INVALID_ARG;
    }
    *cubin = NULL;
    *cubin_size = 0;
    /* loaded here, not first in the child: a dlopen between fork and exec
     * of a threaded process may find the loader's lock held */
    if (nv_load())
        return tilec_nvrtc_compile(source, program_name, arch, extra_options, nopts, cubin, cubin_size, log);
    int fds[2];
    if (pipe(fds) != 0)
        return tilec_nvrtc_compile(source, program_name, arch, extra_options, nopts, cubin, cubin_size, log);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return tilec_nvrtc_compile(source, program_name, arch, extra_options, nopts, cubin, cubin_size, log);
    }
    if (pid == 0) {
        close(fds[0]);
        void *img = NULL;
        size_t size = 0;
        char *lg = NULL;
        int32_t st = tilec_nvrtc_compile(source, program_name, arch, extra_options, nopts, &img, &size, &lg);
        uint64_t hdr[3] = {(uint64_t)st, size, lg ? strlen(lg) : 0};
        int bad = fdio_write_all(fds[1], hdr, sizeof hdr) || (size && fdio_write_all(fds[1], img, size)) ||
                  (hdr[2] && fdio_write_all(fds[1], lg, hdr[2]));
        _exit(bad ? 1 : 0);
    }
    close(fds[1]);
    uint64_t hdr[3];
    tilec_rt_status st = TILEC_RT_COMPILE_ERROR;
    char *lg = NULL;
    void *img = NULL;
    rt_compile_limits lim;
    rt_compile_limits_get(&lim);
    if (rt_compile_watch(pid, fds[0], &lim, program_name, &lg)) {
        /* killed: lg says why */
    } else if (fdio_read_all(fds[0], hdr, sizeof hdr) == 0 && hdr[1] < ((uint64_t)1 << 31) && hdr[2] < ((uint64_t)1 << 30)) {
        img = hdr[1] ? malloc(hdr[1]) : NULL;
        lg = malloc(hdr[2] + 1);
        if ((hdr[1] && !img) || !lg || (hdr[1] && fdio_read_all(fds[0], img, hdr[1])) ||
            (hdr[2] && fdio_read_all(fds[0], lg, hdr[2]))) {
            free(img);
            free(lg);
            img = NULL;
            lg = NULL;
            st = TILEC_RT_NOMEM;
        } else {
            lg[hdr[2]] = 0;
            st = (tilec_rt_status)hdr[0];
        }
    }
    close(fds[0]);
    int wst = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &wst, 0, &ru) < 0 && errno == EINTR) {
    }
    /* the watchdog samples every 50 ms: a compile that finished sooner is
     * held to the memory limit by its peak resident set (ru_maxrss, KiB) */
    unsigned long peak_mb = (unsigned long)ru.ru_maxrss >> 10;
    if (st == TILEC_RT_OK && lim.max_mb && peak_mb > lim.max_mb) {
        free(lg);
        lg = rt_compile_over_memory(program_name, peak_mb, lim.max_mb, -1);
        st = TILEC_RT_COMPILE_ERROR;
    }
    if (!lg && st == TILEC_RT_COMPILE_ERROR) {
        char buf[128];
        if (WIFSIGNALED(wst))
            snprintf(buf, sizeof buf, "%s: the compile worker died of signal %d", program_name ? program_name : "kernel",
                     WTERMSIG(wst));
        else
            snprintf(buf, sizeof buf, "%s: the compile worker sent no result (exit status %d)",
                     program_name ? program_name : "kernel", WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
        lg = strdup(buf);
    }
    if (st == TILEC_RT_OK && img) {
        *cubin = img;
        *cubin_size = (size_t)hdr[1];
        if (log && lg && lg[0])
            *log = lg;
        else
            free(lg);
        return TILEC_RT_OK;
    }
    free(img);
    if (st == TILEC_RT_OK)
        st = TILEC_RT_COMPILE_ERROR;
    if (log)
        *log = lg;
    else
        free(lg);
    return st;
}
