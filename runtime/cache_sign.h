/* cache_sign.h: the fleet secret and the HMAC-SHA256 tags of the entries
 * the cache keeps in its shared (Redis) tier (cache_sign.c). The MAC is
 * OpenSSL's libcrypto (HMAC, EVP_sha256, CRYPTO_memcmp), opened with
 * dlopen only when a secret is configured: tilec builds and runs without
 * it otherwise. Thread-safe once made. */
#ifndef TILEC_RUNTIME_CACHE_SIGN_H
#define TILEC_RUNTIME_CACHE_SIGN_H

#include <stddef.h>
#include <stdint.h>

enum { SIGN_TAG_LEN = 32, SIGN_SECRET_MIN = 16, SIGN_SECRET_MAX = 4096 };

typedef struct cache_signer cache_signer;

/* The secret of TILEC_CACHE_SECRET_FILE (a regular file no other user may
 * read; a trailing newline is dropped) or TILEC_CACHE_SECRET (the secret
 * itself), with libcrypto loaded (TILEC_LIBCRYPTO names another library).
 * NULL with why "" when neither variable is set; NULL with why set when
 * the setting is malformed (both set, unreadable, shorter than
 * SIGN_SECRET_MIN bytes) or libcrypto cannot be loaded. */
cache_signer *cache_signer_from_env(char *why, size_t why_size);
void cache_signer_free(cache_signer *s);

/* HMAC-SHA256 of data[0..len) under the secret into tag. 0, or -1. */
int cache_sign(const cache_signer *s, const void *data, size_t len, uint8_t tag[SIGN_TAG_LEN]);
/* 1 when tag is the tag of data[0..len) (compared in constant time). */
int cache_sign_check(const cache_signer *s, const void *data, size_t len, const uint8_t tag[SIGN_TAG_LEN]);

#endif
