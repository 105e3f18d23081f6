/* cache_sign.c: the fleet secret and HMAC-SHA256 tags (cache_sign.h).
 * libcrypto is opened with dlopen (like libhiredis and libcuda): only a
 * process that configures a secret needs it, and no OpenSSL header is
 * needed at build time. The functions used have kept their signatures
 * from OpenSSL 1.1 to 3.x: the one-shot HMAC(), EVP_sha256(),
 * CRYPTO_memcmp() and OPENSSL_cleanse(). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cache_sign.h"

struct cache_signer {
    const void *md; /* EVP_sha256() */
    unsigned char *(*hmac)(const void *md, const void *key, int key_len, const unsigned char *d, size_t n,
                           unsigned char *out, unsigned int *out_len);
    int (*memcmp_ct)(const void *a, const void *b, size_t n);
    void (*cleanse)(void *p, size_t n);
    size_t len;
    unsigned char secret[SIGN_SECRET_MAX];
};

static void ssay(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void ssay(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

static int load_crypto(cache_signer *s, char *why, size_t why_size)
{
    static const char *const names[] = {"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"};
    const char *path = getenv("TILEC_LIBCRYPTO");
    void *lib = NULL;
    if (path && *path)
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    for (size_t i = 0; !lib && !(path && *path) && i < sizeof names / sizeof names[0]; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        ssay(why, why_size, "a cache secret is set but libcrypto cannot be loaded (%s): %s",
             path && *path ? path : "libcrypto.so.3", dlerror());
        return -1;
    }
    const void *(*sha256)(void) = NULL;
    *(void **)&sha256 = dlsym(lib, "EVP_sha256");
    *(void **)&s->hmac = dlsym(lib, "HMAC");
    *(void **)&s->memcmp_ct = dlsym(lib, "CRYPTO_memcmp");
    *(void **)&s->cleanse = dlsym(lib, "OPENSSL_cleanse");
    if (!sha256 || !s->hmac || !s->memcmp_ct || !s->cleanse || !(s->md = sha256())) {
        ssay(why, why_size, "the libcrypto loaded lacks HMAC, EVP_sha256, CRYPTO_memcmp or OPENSSL_cleanse");
        return -1;
    }
    return 0;
}

/* The secret file's bytes into s: a regular file, not a link, that no
 * other user may read or write. */
static int read_secret_file(cache_signer *s, const char *path, char *why, size_t why_size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        ssay(why, why_size, "TILEC_CACHE_SECRET_FILE=%s cannot be read: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    const char *bad = !S_ISREG(st.st_mode) ? "is not a regular file"
                      : (st.st_mode & 0007) ? "may be read or written by other users (chmod o-rwx)"
                      : st.st_size > SIGN_SECRET_MAX ? "is over 4096 bytes"
                                                     : NULL;
    ssize_t n = bad ? -1 : read(fd, s->secret, sizeof s->secret);
    close(fd);
    if (bad || n < 0) {
        ssay(why, why_size, "TILEC_CACHE_SECRET_FILE=%s %s", path, bad ? bad : strerror(errno));
        return -1;
    }
    s->len = (size_t)n;
    return 0;
}

cache_signer *cache_signer_from_env(char *why, size_t why_size)
{
    why[0] = 0;
    const char *file = getenv("TILEC_CACHE_SECRET_FILE"), *text = getenv("TILEC_CACHE_SECRET");
    int has_file = file && *file, has_text = text && *text;
    if (!has_file && !has_text)
        return NULL;
    if (has_file && has_text) {
        ssay(why, why_size, "both TILEC_CACHE_SECRET_FILE and TILEC_CACHE_SECRET are set; set one");
        return NULL;
    }
    cache_signer *s = calloc(1, sizeof *s);
    if (!s) {
        ssay(why, why_size, "out of memory for the cache secret");
        return NULL;
    }
    if (has_file && read_secret_file(s, file, why, why_size) != 0)
        goto fail;
    if (has_text) {
        s->len = strnlen(text, SIGN_SECRET_MAX + 1);
        if (s->len > SIGN_SECRET_MAX) {
            ssay(why, why_size, "TILEC_CACHE_SECRET is over %d bytes", SIGN_SECRET_MAX);
            goto fail;
        }
        memcpy(s->secret, text, s->len);
    }
    while (s->len && (s->secret[s->len - 1] == '\n' || s->secret[s->len - 1] == '\r'))
        s->len--;
    if (s->len < SIGN_SECRET_MIN) {
        ssay(why, why_size, "the cache secret (%s) has %zu bytes; at least %d are needed",
             has_file ? "TILEC_CACHE_SECRET_FILE" : "TILEC_CACHE_SECRET", s->len, SIGN_SECRET_MIN);
        goto fail;
    }
    if (load_crypto(s, why, why_size) != 0)
        goto fail;
    return s;
fail:
    memset(s->secret, 0, sizeof s->secret); /* the bytes are freed just after; the compiler may drop this */
    free(s);
    return NULL;
}

void cache_signer_free(cache_signer *s)
{
    if (!s)
        return;
    s->cleanse(s->secret, sizeof s->secret);
    free(s);
}

int cache_sign(const cache_signer *s, const void *data, size_t len, uint8_t tag[SIGN_TAG_LEN])
{
    unsigned int n = 0;
    if (!s->hmac(s->md, s->secret, (int)s->len, data, len, tag, &n) || n != SIGN_TAG_LEN)
        return -1;
    return 0;
}

int cache_sign_check(const cache_signer *s, const void *data, size_t len, const uint8_t tag[SIGN_TAG_LEN])
{
    uint8_t want[SIGN_TAG_LEN];
    int ok = cache_sign(s, data, len, want) == 0 && s->memcmp_ct(want, tag, SIGN_TAG_LEN) == 0;
    s->cleanse(want, sizeof want);
    return ok;
}
