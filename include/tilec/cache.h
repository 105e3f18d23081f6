/* cache.h: the kernel cache. Bundles (every kernel of one compiled module
 * with its launch metadata, serialized to one checksummed byte string),
 * cache keys (XXH3-128 over everything that decides the compiled code,
 * the compiler's own identity included), and the cache itself: memory (by
 * key), then one file per bundle in the cache directory (published
 * atomically so that any number of processes may share it, bounded in
 * size, least recently used evicted first), then, when TILEC_CACHE_REDIS
 * names one, a Redis server a fleet shares.
 *
 * The library never prints (except the "tilec cache:" lines asked for with
 * TILEC_LOGS=cache) and never exits. docs/runtime.md, "Kernel cache and
 * bundles", gives the file format byte by byte. */
#ifndef TILEC_CACHE_H
#define TILEC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "tilec/runtime.h"
#include "tilec/tma.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- bundles ---- */

/* One kernel of a bundle: the stored form of a compiled variant's
 * description (tilec_kernel_desc, tilec/kernel_desc.h) with the memory it
 * owns: its name, its CUBIN and everything a launch needs (block size,
 * dynamic shared memory, parameter kinds, the parameters it writes,
 * split-K, the sm_90a twin). A warm start takes all of it from here and
 * lowers nothing (docs/runtime.md, "Warm starts without lowering"). The
 * kernel's own name and variant number are the module's, not stored. */
typedef struct tilec_bundle_kernel {
    char *name;          /* "matmul_v2": a C identifier, 1 to TILEC_BUNDLE_MAX_NAME bytes */
    void *image;         /* the CUBIN (never empty) */
    size_t size;         /* its size in bytes */
    uint32_t threads;    /* block size, 1 to TILEC_RT_MAX_BLOCK */
    uint32_t smem_bytes; /* dynamic shared memory */
    uint32_t nparams;    /* 0 to TILEC_RT_MAX_PARAMS */
    tilec_rt_param_kind kinds[TILEC_RT_MAX_PARAMS];
    uint64_t written;    /* bit i: the kernel stores through pointer parameter i */
    uint32_t split_k;    /* split-K slices: 0 (none) or 2 to 64 */
    uint32_t split_bytes; /* split-K: a block's f32 partial bytes (0 without split-K) */
    tilec_tma_meta twin; /* the sm_90a twin; twin.name (owned) NULL: none */
} tilec_bundle_kernel;

/* Every kernel of one compiled module: 1 to TILEC_BUNDLE_MAX_KERNELS
 * kernels with distinct names. A bundle returned by the library is one
 * malloc'd block per string and image; free it with tilec_bundle_free. */
typedef struct tilec_bundle {
    uint32_t nkernels;
    tilec_bundle_kernel *kernels;
} tilec_bundle;

/* The format (docs/runtime.md gives every byte). ORDER BUNDLE_FORMAT: bump
 * TILEC_BUNDLE_VERSION on any change; readers reject other versions. */
#define TILEC_BUNDLE_MAGIC "TILECBND" /* 8 bytes, no NUL in the file */
#define TILEC_BUNDLE_VERSION 8u /* 2: written, split-K and the twin; 3: a batched map's grid axis and constant; 4: the twin's K loop trips; 5: constant map extents and persistence 4; 6: im2col maps; 7: im2col maps of the output's extents (kind 2); 8: the twin's one_tma in the word reserved before */
#define TILEC_BUNDLE_HEADER_SIZE 64u
#define TILEC_BUNDLE_MAX_SIZE (1u << 30) /* 1 GiB: larger files are never read */
#define TILEC_BUNDLE_MAX_KERNELS 65536u
#define TILEC_BUNDLE_MAX_NAME 1088u /* TILEC_MAX_IDENT (1024) and "_v" with the variant number */
#define TILEC_CACHE_MAX_CHOICES 4096u /* multikernel-*.choice files kept per directory (oldest go) */
#define TILEC_CACHE_MAX_KEY 128u /* keys: 1 to 128 of [A-Za-z0-9_-] */

/* Free a bundle, its names and images. NULL is a no-op. */
void tilec_bundle_free(tilec_bundle *b);

/* A deep copy of b into *out (caller frees with tilec_bundle_free).
 * TILEC_RT_NOMEM or TILEC_RT_INVALID_ARG (NULL arguments). */
tilec_rt_status tilec_bundle_copy(const tilec_bundle *b, tilec_bundle **out);

/* Serialize b, stored under `key`, into a malloc'd buffer *buf of *len
 * bytes (caller frees). The bundle is checked first: a bad key, no
 * kernels, a name that is not a C identifier or appears twice, an empty or
 * NULL image, threads outside 1..1024, more than 64 parameters or an
 * unknown kind gives TILEC_RT_INVALID_ARG; a result over
 * TILEC_BUNDLE_MAX_SIZE too. TILEC_RT_NOMEM when out of memory. On failure
 * *buf is NULL and *len 0. */
tilec_rt_status tilec_bundle_serialize(const tilec_bundle *b, const char *key, void **buf, size_t *len);

/* Parse and fully validate len bytes (magic, version, header checksum,
 * total size against len, reserved bytes, payload checksum, the key, every
 * count, length and offset, the kernels as serialize checks them) before
 * building anything. `key` NULL accepts any stored key. On success *out is
 * a new bundle and why[0] is 0. Any torn, truncated, bit-flipped, trailing,
 * other-version or other-key input gives TILEC_RT_MODULE_ERROR with a
 * sentence in why[why_size] (why may be NULL) and *out NULL: never a
 * partial bundle. TILEC_RT_NOMEM when out of memory, TILEC_RT_INVALID_ARG
 * for NULL buf (with len > 0) or out. */
tilec_rt_status tilec_bundle_parse(const void *buf, size_t len, const char *key, tilec_bundle **out, char *why,
                                   size_t why_size);

/* Whether s[0..n) is a C identifier (what a kernel name in a bundle must
 * be; the length bound is the caller's). */
int tilec_bundle_name_ok(const char *s, size_t n);

/* The checksum of the format: XXH64 with seed 0 (libxxhash, the reference xxHash
 * algorithm), over the header's first 56 bytes and over the payload.
 * Exposed so that tests can forge headers that pass it. */
uint64_t tilec_bundle_checksum(const void *data, size_t len);

typedef struct tilec_cache tilec_cache;

/* ---- keys ---- */

/* A cache key is the XXH3-128 (libxxhash) hex digest of everything that
 * decides the compiled code: the key scheme, the compiler's identity (a
 * hash of tilec's own sources taken at build time), the NVRTC version,
 * the NVRTC options that decide the code, the architecture, then what the
 * caller adds: every kernel's name, generated CUDA source and launch
 * metadata. Strings go in length-prefixed, so fields cannot run into each
 * other. */
#define TILEC_CACHE_KEY_LEN 32u /* hex digits */

typedef struct tilec_cache_keyer tilec_cache_keyer;

/* Start a key for code compiled for arch ("sm_90"). The identity is the
 * build's, unless cache c (may be NULL) was opened with
 * TILEC_CACHE_IDENTITY set (for tests only: it stands for a rebuilt
 * compiler). TILEC_RT_INVALID_ARG (arch or out NULL), TILEC_RT_NOMEM. */
tilec_rt_status tilec_cache_keyer_new(const tilec_cache *c, const char *arch, tilec_cache_keyer **out);
/* Add a string (NULL is its own value, distinct from ""), an integer, or
 * raw bytes. k NULL is a no-op. */
void tilec_cache_keyer_add_str(tilec_cache_keyer *k, const char *s);
void tilec_cache_keyer_add_u64(tilec_cache_keyer *k, uint64_t v);
void tilec_cache_keyer_add_bytes(tilec_cache_keyer *k, const void *data, size_t len);
/* One kernel: its name, CUDA source and launch metadata. `path` (may be
 * NULL) is the .tile file's name, which the lowering writes only in
 * comments (the header line, the .tile line markers): its occurrences in
 * the source are left out, so the same module keys the same from any
 * checkout on any machine. */
void tilec_cache_keyer_add_kernel(tilec_cache_keyer *k, const char *name, const char *source, const char *path,
                                  uint32_t threads, uint32_t smem_bytes, uint32_t nparams,
                                  const tilec_rt_param_kind *kinds);
/* Write the key (TILEC_CACHE_KEY_LEN lowercase hex digits and a NUL) and
 * free k. k NULL: key "" (and nothing freed). */
void tilec_cache_keyer_final(tilec_cache_keyer *k, char key[TILEC_CACHE_KEY_LEN + 1]);
/* The identity keys made with c hold (32 hex digits, or the test
 * override); c NULL: the build's. */
const char *tilec_cache_identity(const tilec_cache *c);

/* SHA-256 (FIPS 180-4), for names that need a digest (multi-kernel choice
 * files); no longer the cache key. Fed through update_str/update_u64 so
 * that fields cannot run into each other. */
typedef struct tilec_hasher {
    uint32_t state[8];
    uint64_t bytes; /* total fed so far */
    uint8_t block[64];
    size_t used; /* bytes waiting in block */
} tilec_hasher;

void tilec_hasher_init(tilec_hasher *h);
/* Raw bytes (len 0 is a no-op; data may then be NULL). */
void tilec_hasher_update(tilec_hasher *h, const void *data, size_t len);
/* A string as its length (8 bytes, little-endian) then its bytes, so
 * ("ab","c") and ("a","bc") differ. NULL is its own value, distinct from
 * "" (length 2^64 - 1, no bytes). */
void tilec_hasher_update_str(tilec_hasher *h, const char *s);
/* An integer as 8 bytes, little-endian. */
void tilec_hasher_update_u64(tilec_hasher *h, uint64_t v);
/* 64 lowercase hex digits and a NUL. Init again before reusing h. */
void tilec_hasher_final(tilec_hasher *h, char hex[65]);

/* ---- the cache ---- */

/* Whether k[0..n) is a valid key: 1 to TILEC_CACHE_MAX_KEY of [A-Za-z0-9_-]. */
int tilec_cache_key_ok(const char *k, size_t n);

/* Open a cache in directory `dir`, or with dir NULL the first of
 * $TILEC_CACHE_DIR, $XDG_CACHE_HOME/tilec (an absolute XDG_CACHE_HOME
 * only) and $HOME/.cache/tilec; empty variables count as unset. A relative
 * dir is made absolute against the working directory at open. Missing
 * directories are created with mode 0700 (parents too); existing ones keep
 * their mode.
 *
 * TILEC_FORCE_DISABLE_CACHES set to anything but "" or "0" turns both
 * levels off: get always misses, put does nothing and succeeds. A
 * directory that cannot be created, is not a directory, cannot be written,
 * is writable by every user, or whose file names would be too long is not
 * an error: the cache then works in memory only and
 * tilec_cache_last_error says why. TILEC_LOGS (a comma list) containing
 * "cache" or "all" prints one "tilec cache: ..." line on stderr per event.
 * TILEC_CACHE_MAX_BYTES bounds the directory; TILEC_CACHE_REDIS and its
 * companions (docs/runtime.md) add the remote tier. The environment is
 * read here, once.
 *
 * Returns TILEC_RT_OK, TILEC_RT_INVALID_ARG (out NULL, dir ""), or
 * TILEC_RT_NOMEM; *out is NULL on failure. No global state; every call on
 * a cache is thread-safe. */
tilec_rt_status tilec_cache_open(const char *dir, tilec_cache **out);
/* Free the cache and its memory level (the files stay). NULL is a no-op. */
void tilec_cache_close(tilec_cache *c);

/* Look `key` up: memory first, then the file <dir>/<key>.tilecbundle
 * (a regular file of at most TILEC_BUNDLE_MAX_SIZE bytes, parsed with
 * tilec_bundle_parse against key; a disk hit is kept in memory and marks
 * the file used), then the Redis tier when TILEC_CACHE_REDIS names one (a
 * value validated like a file; a hit is kept in memory and copied to the
 * directory). On a hit *out is the caller's own copy. A missing file is a
 * miss (TILEC_RT_NOT_FOUND). A corrupt or foreign file is a miss too:
 * counted in `corrupt`, logged, and removed so that the next put replaces
 * it. Any remote fault is a miss with one log line, never an error.
 * TILEC_RT_INVALID_ARG for a bad key or NULL argument, TILEC_RT_NOMEM. */
tilec_rt_status tilec_cache_get(tilec_cache *c, const char *key, tilec_bundle **out);

/* Store a copy of b under key in memory (replacing any) and on disk: the
 * serialized bundle goes into a temporary file in the same directory
 * (.<key>.tilecbundle.tmp.XXXXXX, mkstemp, mode 0600), is written whole,
 * fsync'd, renamed over <key>.tilecbundle, and the directory fsync'd
 * (best effort). Concurrent puts of one key from many processes leave one
 * whole file; readers see a whole old or a whole new one. When the disk
 * write fails (read-only directory, full disk, I/O error) the temporary
 * file is removed, write_failures counts it, the last error says why, and
 * TILEC_CACHE_IO_ERROR is returned; the memory level still holds the
 * bundle. A bundle that tilec_bundle_serialize refuses gives
 * TILEC_RT_INVALID_ARG and is stored nowhere. A write past RLIMIT_FSIZE
 * raises SIGXFSZ: the library leaves signal dispositions alone. After a
 * write, least recently used files go while the directory is over its
 * bound. The bundle is also stored on the Redis tier, if any (its faults
 * are logged, never returned). */
tilec_rt_status tilec_cache_put(tilec_cache *c, const char *key, const tilec_bundle *b);

/* ---- records ---- */

/* A record is a short text kept under a key beside the bundles: in
 * memory, and as <dir>/<key>.tilecrecord (a checksummed header line, then
 * the text; published like a bundle), never in the Redis tier. The
 * library's build keeps one per module source (docs/runtime.md, "Warm
 * starts without lowering"): the key of the bundle its lowering gave and
 * the launch metadata, so that a warm start skips the lowering. At most
 * TILEC_CACHE_MAX_RECORD bytes, no NUL. Records past
 * TILEC_CACHE_MAX_RECORDS in a directory are swept, oldest first; clear
 * removes them. */
#define TILEC_CACHE_MAX_RECORD (1u << 20)
#define TILEC_CACHE_MAX_RECORDS 4096u

/* The record under key in a malloc'd NUL-terminated *text: TILEC_RT_OK;
 * TILEC_RT_NOT_FOUND when there is none (a corrupt file is removed and
 * counts as none); TILEC_RT_INVALID_ARG, TILEC_RT_NOMEM. */
tilec_rt_status tilec_cache_record_get(tilec_cache *c, const char *key, char **text);
/* Keep text under key (replacing any record there): TILEC_RT_OK (also
 * when the cache is disabled), TILEC_CACHE_IO_ERROR when the file could
 * not be written (memory still has it), TILEC_RT_INVALID_ARG,
 * TILEC_RT_NOMEM. */
tilec_rt_status tilec_cache_record_put(tilec_cache *c, const char *key, const char *text);

/* The status of a failed disk write. runtime.h has no I/O status yet;
 * until it gains one, the cache reports these as module errors (the
 * bundle could not be stored). */
#define TILEC_CACHE_IO_ERROR TILEC_RT_IO_ERROR

typedef struct tilec_cache_stats {
    uint64_t mem_hits;       /* gets answered from memory */
    uint64_t disk_hits;      /* gets answered from a file */
    uint64_t misses;         /* gets answered TILEC_RT_NOT_FOUND (corrupt files included) */
    uint64_t corrupt;        /* files rejected by the parser (and removed) */
    uint64_t writes;         /* files published */
    uint64_t write_failures; /* puts whose file could not be published */
    uint64_t stale_removed;  /* killed writers' temporary files removed at open */
    uint64_t choices_removed; /* multi-kernel .choice files over TILEC_CACHE_MAX_CHOICES removed at open */
    uint64_t evicted;        /* bundle files removed to keep the directory under its bound */
    uint64_t remote_hits;    /* gets answered by the Redis tier */
    uint64_t remote_misses;  /* gets the Redis tier did not have */
    uint64_t remote_rejected; /* Redis values that failed validation (replaced by the next put) */
    uint64_t remote_faults;  /* Redis errors: down, slow, refused, dropped (each a local compile) */
    uint64_t remote_writes;  /* bundles published to Redis */
    uint64_t record_hits;    /* record gets answered (memory or file) */
    uint64_t record_misses;  /* record gets answered TILEC_RT_NOT_FOUND */
    uint64_t records_removed; /* .tilecrecord files over TILEC_CACHE_MAX_RECORDS removed at open */
} tilec_cache_stats;

void tilec_cache_get_stats(const tilec_cache *c, tilec_cache_stats *s);

/* One tier's counters, bundles and records together. The tiers are walked
 * in order: memory first, then the directory (when there is one), then
 * the Redis tier (when TILEC_CACHE_REDIS names one); a disabled cache has
 * none. The fields of tilec_cache_stats that name a tier are sums of
 * these. */
typedef struct tilec_cache_tier_stats {
    const char *name;  /* "memory", "disk", "redis" (static) */
    uint64_t hits;     /* lookups this tier answered */
    uint64_t misses;   /* lookups that asked it and found nothing */
    uint64_t rejected; /* values that failed validation (removed from the tier when it can) */
    uint64_t faults;   /* lookups and stores it failed (a write that failed, a server down) */
    uint64_t writes;   /* stores it took (copies promoted from a later tier are not counted) */
} tilec_cache_tier_stats;

/* Tier i's counters (0 is the first tier walked): TILEC_RT_OK,
 * TILEC_RT_NOT_FOUND when the cache has no tier i, TILEC_RT_INVALID_ARG. */
tilec_rt_status tilec_cache_get_tier_stats(const tilec_cache *c, uint32_t i, tilec_cache_tier_stats *s);
/* The cache directory; NULL when disabled or memory-only. */
const char *tilec_cache_dir(const tilec_cache *c);
/* The last failure or fallback ("" when none). The string belongs to the
 * cache and changes at the next failure: with several threads, read it
 * from the one that saw the failure before another fails. Never NULL. */
const char *tilec_cache_last_error(const tilec_cache *c);

/* ---- the directory: size bound, listing, pruning ---- */

/* The default bound on the directory's bundles (TILEC_CACHE_MAX_BYTES
 * overrides it; 0 there means no bound). */
#define TILEC_CACHE_DEFAULT_MAX_BYTES (1ull << 30)

/* The bound in force (0: none). */
uint64_t tilec_cache_max_bytes(const tilec_cache *c);
/* The Redis tier as TILEC_CACHE_REDIS names it ("host:port",
 * "redis://user:***@host:6379/2": the password masked), or NULL when there
 * is none. */
const char *tilec_cache_remote(const tilec_cache *c);
/* How the Redis tier is used: "signed, read-write" (a fleet secret),
 * "signed, read-only (...)", "unsigned, read-only (...)" (no secret: the
 * default), "unsigned, read-write (TILEC_CACHE_REDIS_WRITE=1)"; NULL when
 * there is none (docs/runtime.md, "Trust"). */
const char *tilec_cache_remote_mode(const tilec_cache *c);
/* Why the Redis tier is not, or was not, usable; "" when nothing went
 * wrong. With no tier: "TILEC_CACHE_REDIS=VALUE is malformed: WHY; no
 * remote tier" (the password masked), "redis URL: built without Redis
 * support ..." or another setting's fault; with one: its last fault
 * ("redis URL: cannot connect: Connection refused", "... AUTH refused:
 * ..."). Also logged (TILEC_LOGS=cache) and in tilec_cache_last_error; the
 * library prints nothing. The string belongs to the cache. */
const char *tilec_cache_remote_problem(const tilec_cache *c);
/* Connect to the Redis tier now (authenticating, selecting its database)
 * and PING it: TILEC_RT_OK; TILEC_RT_NOT_FOUND when there is no tier;
 * TILEC_RT_IO_ERROR when it cannot be used (tilec_cache_remote_problem
 * says why); TILEC_RT_INVALID_ARG for NULL. */
tilec_rt_status tilec_cache_remote_ping(tilec_cache *c);
/* The value bytes this handle has received from the Redis tier (a value
 * over TILEC_CACHE_REDIS_MAX_BYTES is refused on its length: at most its
 * first 64 KiB come). */
uint64_t tilec_cache_remote_bytes_read(const tilec_cache *c);

/* The directory as a whole: its bundles and the counters every process
 * using it adds to (kept in the directory's .tilec-stats). */
typedef struct tilec_cache_usage {
    uint64_t entries;     /* bundle files */
    uint64_t bytes;       /* their sizes */
    uint64_t max_bytes;   /* the bound (0: none) */
    int64_t oldest_use;   /* last use of the least recently used entry (Unix seconds; 0: no entry) */
    int64_t newest_use;   /* last use of the most recently used one */
    uint64_t local_hits;  /* lookups answered from this directory (or a process's memory level) */
    uint64_t remote_hits; /* lookups answered by the Redis tier */
    uint64_t misses;      /* lookups that compiled */
    uint64_t writes;      /* bundles written */
    uint64_t evicted;     /* bundles evicted by the bound */
    uint64_t corrupt;     /* files and remote values rejected */
    uint64_t remote_faults; /* Redis errors */
} tilec_cache_usage;

/* One entry of the directory. */
typedef struct tilec_cache_entry {
    char key[TILEC_CACHE_MAX_KEY + 1];
    uint64_t bytes;
    uint32_t kernels; /* from the header; 0 when the header is not a bundle's */
    int64_t created;  /* Unix seconds */
    int64_t last_use; /* Unix seconds */
} tilec_cache_entry;

/* TILEC_RT_OK; TILEC_RT_NOT_FOUND when c has no directory (disabled or
 * memory only); TILEC_RT_IO_ERROR when it cannot be read;
 * TILEC_RT_INVALID_ARG, TILEC_RT_NOMEM. */
tilec_rt_status tilec_cache_usage_get(tilec_cache *c, tilec_cache_usage *u);
/* Every entry, most recently used first, in a malloc'd array (free() it). */
tilec_rt_status tilec_cache_list(tilec_cache *c, tilec_cache_entry **out, size_t *n);
/* Remove the entries that fail validation, those unused for
 * unused_for_seconds or more (0: none by age), then the least recently
 * used down to max_bytes (0: the cache's bound; UINT64_MAX: none).
 * *removed and *freed (may be NULL) say how many and how many bytes. */
tilec_rt_status tilec_cache_prune(tilec_cache *c, uint64_t max_bytes, int64_t unused_for_seconds, uint64_t *removed,
                                  uint64_t *freed);
/* Remove every bundle and multi-kernel choice file (temporary files of
 * live writers stay; the counters stay). */
tilec_rt_status tilec_cache_clear(tilec_cache *c, uint64_t *removed, uint64_t *freed);

/* ---- fault injection, for tests ---- */

/* The steps of publishing a bundle, in order. ORDER CACHE_STEP */
typedef enum tilec_cache_step {
    TILEC_CACHE_STEP_BEFORE_WRITE = 0,     /* temporary file created, nothing written */
    TILEC_CACHE_STEP_MID_WRITE = 1,        /* the first half of the bytes written */
    TILEC_CACHE_STEP_BEFORE_FSYNC = 2,     /* every byte written */
    TILEC_CACHE_STEP_BEFORE_RENAME = 3,    /* fsync'd and closed */
    TILEC_CACHE_STEP_BEFORE_DIR_FSYNC = 4, /* renamed: the file is published */
    TILEC_CACHE_STEP_COUNT                 /* not a step */
} tilec_cache_step;

/* Called by put at each step with the temporary file's path (the final
 * one at BEFORE_DIR_FSYNC). Return 0 to go on, or an errno value to make
 * the step fail as if its system call had failed with it (ENOSPC, EIO...);
 * or _exit() from it in a forked child to kill a writer there. */
typedef int (*tilec_cache_fault_fn)(void *user, tilec_cache_step step, const char *path);
/* Install (fn NULL: remove) the hook on this cache. */
void tilec_cache_set_fault_hook(tilec_cache *c, tilec_cache_fault_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
