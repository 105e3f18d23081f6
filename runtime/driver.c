/* driver.c: loading the CUDA driver at run time: dlopen libcuda.so.1,
 * find cuGetProcAddress, resolve every entry point through it. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt_internal.h"

static const char default_driver[] = "libcuda.so.1";

static const struct entry {
    const char *symbol;
    int version;
    int required;
    size_t offset; /* of the field in rt_driver */
} entries[] = {
#define X(field, type, ver, required) {"cu" #field, (ver), (required), offsetof(rt_driver, field)},
    RT_DRIVER_CALLS(X)
#undef X
};

/* Ask the driver for one entry point at ABI version `ver`. */
static CUresult proc_address(const rt_driver *d, const char *sym, int ver, void **fn,
                             CUdriverProcAddressQueryResult *found)
{
    *fn = NULL;
    *found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (d->proc)
        return d->proc(sym, fn, ver, CU_GET_PROC_ADDRESS_DEFAULT, found);
    CUresult r = d->proc_legacy(sym, fn, ver, CU_GET_PROC_ADDRESS_DEFAULT);
    if (r == CUDA_SUCCESS && *fn)
        *found = CU_GET_PROC_ADDRESS_SUCCESS;
    return r;
}

static const char *query_name(CUdriverProcAddressQueryResult q)
{
    switch (q) {
    case CU_GET_PROC_ADDRESS_SUCCESS:
        return "CU_GET_PROC_ADDRESS_SUCCESS";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND:
        return "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
        return "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT";
    }
    return "unknown query result";
}

void rt_driver_describe(const rt_driver *d, CUresult r, char *buf, size_t size)
{
    const char *name = NULL, *text = NULL;
    if (d->GetErrorName && d->GetErrorName(r, &name) != CUDA_SUCCESS)
        name = NULL;
    if (d->GetErrorString && d->GetErrorString(r, &text) != CUDA_SUCCESS)
        text = NULL;
    if (name && text)
        snprintf(buf, size, "%s (%s)", name, text);
    else if (name)
        snprintf(buf, size, "%s", name);
    else
        snprintf(buf, size, "CUresult %d", (int)r);
}

void rt_driver_unload(rt_driver *d)
{
    /* Loaded with RTLD_NODELETE: the driver stays mapped for the life of
     * the process (unloading libcuda is not supported); this only drops
     * our reference. */
    if (d->lib)
        dlclose(d->lib);
    memset(d, 0, sizeof *d);
}

tilec_rt_status rt_driver_load(rt_driver *d, const char *lib_name, char *err, size_t err_size)
{
    memset(d, 0, sizeof *d);
    d->lib_name = lib_name ? lib_name : default_driver;
    d->lib = dlopen(d->lib_name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!d->lib) {
        const char *why = dlerror();
        snprintf(err, err_size, "no CUDA driver found (%s could not be loaded: %s)", d->lib_name,
                 why ? why : "unknown dlopen error");
        return TILEC_RT_NO_DRIVER;
    }
    /* cuGetProcAddress_v2 is the CUDA 12 form (flags and a query result);
     * plain cuGetProcAddress is the 11.3 form without the result. */
    void *sym = dlsym(d->lib, "cuGetProcAddress_v2");
    if (sym) {
        d->proc = (PFN_cuGetProcAddress_v12000)sym;
    } else if ((sym = dlsym(d->lib, "cuGetProcAddress")) != NULL) {
        d->proc_legacy = (PFN_cuGetProcAddress_v11030)sym;
    } else {
        snprintf(err, err_size,
                 "the CUDA driver %s is too old: it has neither cuGetProcAddress_v2 nor "
                 "cuGetProcAddress (CUDA 11.3 or newer needed)",
                 d->lib_name);
        rt_driver_unload(d);
        return TILEC_RT_DRIVER_TOO_OLD;
    }

    /* The error names come first in the table, so that every later
     * message can use them; the version right after them. */
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        const struct entry *e = &entries[i];
        void *fn;
        CUdriverProcAddressQueryResult found;
        CUresult r = proc_address(d, e->symbol, e->version, &fn, &found);
        if (r == CUDA_SUCCESS && fn && found == CU_GET_PROC_ADDRESS_SUCCESS) {
            /* A data pointer into a function-pointer field: POSIX guarantees
             * they have one representation (dlsym relies on it too). */
            memcpy((char *)d + e->offset, &fn, sizeof fn);
        } else if (e->required) {
            char res[160];
            rt_driver_describe(d, r, res, sizeof res);
            snprintf(err, err_size,
                     "the CUDA driver %s (version %d.%d) is too old: cuGetProcAddress(\"%s\", %d) "
                     "returned %s, %s",
                     d->lib_name, d->version / 1000, d->version % 1000 / 10, e->symbol, e->version, res,
                     query_name(found));
            rt_driver_unload(d);
            return TILEC_RT_DRIVER_TOO_OLD;
        }
        if (d->DriverGetVersion && !d->version && d->DriverGetVersion(&d->version) != CUDA_SUCCESS)
            d->version = 0;
    }
    return TILEC_RT_OK;
}
