/* cache.c: `tilec cache stats|list|prune|clear`, the kernel cache's
 * directory looked at and tidied from the command line (the library calls
 * of include/tilec/cache.h: usage, list, prune, clear). The directory is
 * --dir, else the one the library picks ($TILEC_CACHE_DIR,
 * $XDG_CACHE_HOME/tilec, ~/.cache/tilec). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "tilec/cache.h"

enum { CC_OK = 0, CC_FAIL = 1, CC_USAGE = 2 };

static const char cc_usage[] =
    "usage: tilec cache COMMAND [--dir DIR]\n"
    "  stats                  entries, bytes against the bound, hits, misses, evictions\n"
    "  list                   every entry, most recently used first\n"
    "  prune [--max-bytes N] [--unused-for AGE]\n"
    "                         remove invalid entries, those unused for AGE (30d, 12h, 45m, 90s),\n"
    "                         then the least recently used down to N bytes (K, M, G; default\n"
    "                         TILEC_CACHE_MAX_BYTES or 1G)\n"
    "  clear                  remove every entry and multi-kernel choice\n";

static int cc_usage_error(const char *what, const char *arg) { return cli_sub_usage_error("cache", cc_usage, what, arg); }

/* "512", "64K", "10M", "1G" */
static int cc_bytes(const char *s, uint64_t *out)
{
    if (!cli_is_digits(s))
        return -1;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (errno || end == s || *end || *s == '-' || (n >> (64 - (shift ? shift : 1))))
        return -1;
    *out = (uint64_t)n << shift;
    return 0;
}

/* "30d", "12h", "45m", "90s" (or plain seconds) */
static int cc_age(const char *s, int64_t *out)
{
    if (!cli_is_digits(s))
        return -1;
    char *end;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    long long unit = *end == 'd' ? 86400 : *end == 'h' ? 3600 : *end == 'm' ? 60 : 1;
    if (*end == 'd' || *end == 'h' || *end == 'm' || *end == 's')
        end++;
    if (errno || end == s || *end || n <= 0 || n > INT64_MAX / unit)
        return -1;
    *out = n * unit;
    return 0;
}

static void cc_human(uint64_t b, char *buf, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void cc_ago(int64_t t, char *buf, size_t n)
{
    long long d = (long long)(time(NULL) - t);
    if (!t)
        snprintf(buf, n, "-");
    else if (d < 120)
        snprintf(buf, n, "%llds ago", d < 0 ? 0 : d);
    else if (d < 7200)
        snprintf(buf, n, "%lldm ago", d / 60);
    else if (d < 172800)
        snprintf(buf, n, "%lldh ago", d / 3600);
    else
        snprintf(buf, n, "%lldd ago", d / 86400);
}

static int cc_stats(tilec_cache *c)
{
    tilec_cache_usage u;
    if (tilec_cache_usage_get(c, &u) != TILEC_RT_OK) {
        cli_error("cache: %s", tilec_cache_last_error(c));
        return CC_FAIL;
    }
    char have[32], bound[32], a[32], b[32];
    cc_human(u.bytes, have, sizeof have);
    cc_human(u.max_bytes, bound, sizeof bound);
    cc_ago(u.oldest_use, a, sizeof a);
    cc_ago(u.newest_use, b, sizeof b);
    const char *remote = tilec_cache_remote(c);
    printf("directory      %s\n", tilec_cache_dir(c));
    printf("entries        %llu\n", (unsigned long long)u.entries);
    if (u.max_bytes)
        printf("bytes          %llu (%s) of %llu (%s)\n", (unsigned long long)u.bytes, have,
               (unsigned long long)u.max_bytes, bound);
    else
        printf("bytes          %llu (%s), no bound\n", (unsigned long long)u.bytes, have);
    printf("last use       oldest %s, newest %s\n", a, b);
    printf("hits           local %llu, remote %llu\n", (unsigned long long)u.local_hits,
           (unsigned long long)u.remote_hits);
    printf("misses         %llu\n", (unsigned long long)u.misses);
    printf("writes         %llu\n", (unsigned long long)u.writes);
    printf("evicted        %llu\n", (unsigned long long)u.evicted);
    printf("rejected       %llu\n", (unsigned long long)u.corrupt);
    /* the tier as it is now: connected to (PING), or why not */
    const char *problem = tilec_cache_remote_problem(c);
    if (remote && tilec_cache_remote_ping(c) == TILEC_RT_OK)
        printf("remote         redis %s, %s, reachable\n", remote, tilec_cache_remote_mode(c));
    else if (remote)
        printf("remote         %s\n", tilec_cache_remote_problem(c));
    else if (*problem)
        printf("remote         none: %s\n", problem);
    else
        printf("remote         none (TILEC_CACHE_REDIS is unset)\n");
    printf("remote faults  %llu\n", (unsigned long long)u.remote_faults);
    return CC_OK;
}

static int cc_list(tilec_cache *c)
{
    tilec_cache_entry *v;
    size_t n;
    if (tilec_cache_list(c, &v, &n) != TILEC_RT_OK) {
        cli_error("cache: %s", tilec_cache_last_error(c));
        return CC_FAIL;
    }
    printf("%-32s %10s %7s %10s %10s\n", "KEY", "BYTES", "KERNELS", "USED", "CREATED");
    for (size_t i = 0; i < n; i++) {
        char used[32], made[32];
        cc_ago(v[i].last_use, used, sizeof used);
        cc_ago(v[i].created, made, sizeof made);
        printf("%-32s %10llu %7u %10s %10s\n", v[i].key, (unsigned long long)v[i].bytes, v[i].kernels, used, made);
    }
    free(v);
    return CC_OK;
}

static int cc_done(tilec_cache *c, tilec_rt_status st, const char *verb, uint64_t removed, uint64_t freed)
{
    if (st != TILEC_RT_OK) {
        cli_error("cache: %s", tilec_cache_last_error(c));
        return CC_FAIL;
    }
    char h[32];
    cc_human(freed, h, sizeof h);
    printf("%s %llu files (%s) from %s\n", verb, (unsigned long long)removed, h, tilec_cache_dir(c));
    return CC_OK;
}

int cli_cache(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : NULL, *dir = NULL;
    uint64_t max_bytes = 0;
    int64_t unused = 0;
    if (!cmd || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(cc_usage, cmd ? stdout : stderr);
        return cmd ? CC_OK : CC_USAGE;
    }
    int prune = !strcmp(cmd, "prune");
    if (strcmp(cmd, "stats") && strcmp(cmd, "list") && !prune && strcmp(cmd, "clear"))
        return cc_usage_error("unknown command", cmd);
    for (int i = 2; i < argc; i += 2) { /* every option takes a value */
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--dir") && val) {
            dir = val;
        } else if (prune && !strcmp(a, "--max-bytes") && val) {
            if (cc_bytes(val, &max_bytes) != 0)
                return cc_usage_error("--max-bytes wants a size (512, 64K, 10M, 1G)", val);
            if (!max_bytes)
                max_bytes = 1; /* 0 would mean the default bound: --max-bytes 0 empties the cache */
        } else if (prune && !strcmp(a, "--unused-for") && val) {
            if (cc_age(val, &unused) != 0)
                return cc_usage_error("--unused-for wants an age (30d, 12h, 45m, 90s)", val);
        } else {
            return cc_usage_error("unknown or incomplete option", a);
        }
    }
    tilec_cache *c;
    if (tilec_cache_open(dir, &c) != TILEC_RT_OK) {
        cli_error("cache: cannot open the cache");
        return CC_FAIL;
    }
    int rc;
    uint64_t removed = 0, freed = 0;
    tilec_rt_status st;
    if (!strcmp(cmd, "stats")) {
        rc = cc_stats(c);
    } else if (!strcmp(cmd, "list")) {
        rc = cc_list(c);
    } else if (prune) {
        st = tilec_cache_prune(c, max_bytes, unused, &removed, &freed);
        rc = cc_done(c, st, "pruned", removed, freed);
    } else {
        st = tilec_cache_clear(c, &removed, &freed);
        rc = cc_done(c, st, "removed", removed, freed);
    }
    tilec_cache_close(c);
    return rc;
}
