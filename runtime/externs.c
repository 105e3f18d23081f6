/* externs.c: the extern kernel registry: symbol -> (function, user
 * pointer), called by name; the cuBLAS built-ins come from cublas.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/externs.h"

typedef struct ext_entry {
    char *symbol;
    tilec_extern_fn fn;
    void *user;
} ext_entry;

struct tilec_externs {
    pthread_mutex_t lock; /* guards entries, n, cap and last_error */
    ext_entry *entries;
    uint32_t n, cap;
    tilec_cublas *cublas; /* the built-ins' user pointer */
    char last_error[1024];
};

/* The entry of `symbol`, or NULL. Lock held. */
static ext_entry *find_locked(tilec_externs *x, const char *symbol)
{
    for (uint32_t i = 0; i < x->n; i++)
        if (strcmp(x->entries[i].symbol, symbol) == 0)
            return &x->entries[i];
    return NULL;
}

static int register_locked(tilec_externs *x, const char *symbol, tilec_extern_fn fn, void *user)
{
    ext_entry *e = find_locked(x, symbol);
    if (e) {
        e->fn = fn;
        e->user = user;
        return 0;
    }
    if (x->n == x->cap) {
        uint32_t cap = x->cap ? x->cap * 2 : 8;
        ext_entry *grown = realloc(x->entries, cap * sizeof *grown);
        if (!grown)
            return -1;
        x->entries = grown;
        x->cap = cap;
    }
    char *copy = strdup(symbol);
    if (!copy)
        return -1;
    x->entries[x->n++] = (ext_entry){copy, fn, user};
    return 0;
}

tilec_externs *tilec_externs_new_cublas(const char *cublas_library)
{
    tilec_externs *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    if (pthread_mutex_init(&x->lock, NULL) != 0) {
        free(x);
        return NULL;
    }
    x->cublas = tilec_cublas_new(cublas_library);
    if (!x->cublas || register_locked(x, "cublas.sgemm", tilec_cublas_sgemm, x->cublas) != 0 ||
        register_locked(x, "cublas.hgemm", tilec_cublas_hgemm, x->cublas) != 0) {
        tilec_externs_free(x);
        return NULL;
    }
    return x;
}

tilec_externs *tilec_externs_new(void) { return tilec_externs_new_cublas(NULL); }

void tilec_externs_free(tilec_externs *x)
{
    if (!x)
        return;
    for (uint32_t i = 0; i < x->n; i++)
        free(x->entries[i].symbol);
    free(x->entries);
    tilec_cublas_free(x->cublas);
    pthread_mutex_destroy(&x->lock);
    free(x);
}

int tilec_externs_register(tilec_externs *x, const char *symbol, tilec_extern_fn fn, void *user)
{
    if (!x || !symbol || !*symbol || !fn)
        return -1;
    pthread_mutex_lock(&x->lock);
    int r = register_locked(x, symbol, fn, user);
    pthread_mutex_unlock(&x->lock);
    return r;
}

static tilec_rt_status fail(tilec_externs *x, tilec_rt_status st, const char *msg)
{
    pthread_mutex_lock(&x->lock);
    snprintf(x->last_error, sizeof x->last_error, "%s", msg);
    pthread_mutex_unlock(&x->lock);
    return st;
}

tilec_rt_status tilec_externs_call(tilec_externs *x, const char *symbol, tilec_rt *rt, void *stream,
                                   const tilec_tensor *inputs, uint32_t ninputs, tilec_tensor *outputs,
                                   uint32_t noutputs)
{
    char msg[1024];
    if (!x)
        return TILEC_RT_INVALID_ARG;
    if (!symbol)
        return fail(x, TILEC_RT_INVALID_ARG, "tilec_externs_call: symbol is NULL");
    if ((ninputs && !inputs) || (noutputs && !outputs)) {
        snprintf(msg, sizeof msg, "tilec_externs_call(\"%s\"): %s is NULL with a count of %u", symbol,
                 ninputs && !inputs ? "inputs" : "outputs", ninputs && !inputs ? ninputs : noutputs);
        return fail(x, TILEC_RT_INVALID_ARG, msg);
    }

    /* Copy the entry out, then call with no lock held: the function may
     * take long or call the registry itself. */
    pthread_mutex_lock(&x->lock);
    ext_entry *e = find_locked(x, symbol);
    tilec_extern_fn fn = e ? e->fn : NULL;
    void *user = e ? e->user : NULL;
    pthread_mutex_unlock(&x->lock);
    if (!fn) {
        snprintf(msg, sizeof msg, "no extern kernel registered as \"%s\"", symbol);
        return fail(x, TILEC_RT_NOT_FOUND, msg);
    }

    char err[1024];
    err[0] = 0;
    int r = fn(user, rt, stream, inputs, ninputs, outputs, noutputs, err, sizeof err);
    if (r == 0)
        return TILEC_RT_OK;
    err[sizeof err - 1] = 0;
    if (!err[0])
        snprintf(err, sizeof err, "extern kernel \"%s\" failed (returned %d) with no message", symbol, r);
    return fail(x, TILEC_RT_LAUNCH_ERROR, err);
}

const char *tilec_externs_last_error(const tilec_externs *x)
{
    if (!x)
        return "no extern registry (NULL tilec_externs)";
    return x->last_error;
}
