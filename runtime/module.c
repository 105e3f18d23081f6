/* module.c: module images (checked, then loaded), kernels resolved once
 * with their launch metadata, and the static launch. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel_internal.h"
#include "runtime/rt_internal.h"
#include "util/arena.h"

struct tilec_rt_module {
    tilec_rt *rt;
    CUmodule mod;
    arena ar; /* the kernels, their names and kinds */
};

CUmodule rt_module_cu(const tilec_rt_module *m) { return m->mod; }

/* ---- launch metadata ---- */

size_t tilec_rt_param_size(tilec_rt_param_kind kind)
{
    switch (kind) {
    case TILEC_RT_PARAM_I32:
    case TILEC_RT_PARAM_F32:
    case TILEC_RT_PARAM_U32:
        return 4;
    case TILEC_RT_PARAM_POINTER:
    case TILEC_RT_PARAM_I64:
    case TILEC_RT_PARAM_F64:
    case TILEC_RT_PARAM_U64:
        return 8;
    case TILEC_RT_PARAM_LIST: /* its table's size is the kernel's: tilec_rt_list_bytes */
    case TILEC_RT_PARAM_KIND_COUNT:
        break;
    }
    return 0;
}

static const char *kind_name(tilec_rt_param_kind kind)
{
    /* ORDER PARAM_KIND */
    static const char *const names[TILEC_RT_PARAM_KIND_COUNT] = {"pointer", "i32", "i64", "f32",
                                                                 "f64",     "u32", "u64", "tensor list"};
    return (unsigned)kind < TILEC_RT_PARAM_KIND_COUNT ? names[kind] : "unknown";
}

static tilec_rt_status meta_invalid(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tilec_rt_status meta_invalid(char *why, size_t why_size, const char *fmt, ...)
{
    if (why && why_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
    }
    return TILEC_RT_INVALID_ARG;
}

tilec_rt_status tilec_rt_launch_meta_check(const tilec_rt_launch_meta *meta, char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = 0;
    if (!meta)
        return meta_invalid(why, why_size, "no launch metadata");
    if (meta->block_x == 0 || meta->block_x > TILEC_RT_MAX_BLOCK)
        return meta_invalid(why, why_size, "block of %u threads; it must be 1 to %d", meta->block_x,
                            TILEC_RT_MAX_BLOCK);
    if (meta->nparams > TILEC_RT_MAX_PARAMS)
        return meta_invalid(why, why_size, "%u parameters; at most %d are supported", meta->nparams,
                            TILEC_RT_MAX_PARAMS);
    if (meta->nparams && !meta->kinds)
        return meta_invalid(why, why_size, "%u parameters but no parameter kinds", meta->nparams);
    for (uint32_t i = 0; i < meta->nparams; i++)
        if ((unsigned)meta->kinds[i] >= TILEC_RT_PARAM_KIND_COUNT)
            return meta_invalid(why, why_size, "parameter %u has unknown kind %d", i, (int)meta->kinds[i]);
    return TILEC_RT_OK;
}

/* ---- checking an image before the driver reads it ---- */

static uint64_t rd(const unsigned char *p, int n) /* little-endian */
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* 1 when [off, off + len) lies inside an image of `size` bytes. */
static int inside(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

enum { EM_CUDA = 190, SHT_NOBITS = 8, ELF64_EHDR = 64, ELF64_SHDR = 64, ELF64_PHDR = 56 };

static const char *check_elf(const unsigned char *p, size_t size)
{
    if (size < ELF64_EHDR)
        return "truncated ELF header";
    if (p[4] != 2 || p[5] != 1)
        return "not a 64-bit little-endian ELF file";
    if (rd(p + 0x12, 2) != EM_CUDA)
        return "an ELF file, but not a CUBIN (e_machine is not EM_CUDA)";
    uint64_t phoff = rd(p + 0x20, 8), shoff = rd(p + 0x28, 8);
    uint64_t phentsize = rd(p + 0x36, 2), phnum = rd(p + 0x38, 2);
    uint64_t shentsize = rd(p + 0x3A, 2), shnum = rd(p + 0x3C, 2);
    if (phnum && (phentsize < ELF64_PHDR || !inside(phoff, phnum * phentsize, size)))
        return "program headers lie outside the image (truncated?)";
    if (shnum && (shentsize < ELF64_SHDR || !inside(shoff, shnum * shentsize, size)))
        return "section headers lie outside the image (truncated?)";
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *sh = p + shoff + i * shentsize;
        uint64_t type = rd(sh + 4, 4);
        if (type != 0 && type != SHT_NOBITS && !inside(rd(sh + 0x18, 8), rd(sh + 0x20, 8), size))
            return "a section lies outside the image (truncated?)";
    }
    for (uint64_t i = 0; i < phnum; i++) {
        const unsigned char *ph = p + phoff + i * phentsize;
        if (!inside(rd(ph + 8, 8), rd(ph + 0x20, 8), size))
            return "a segment lies outside the image (truncated?)";
    }
    return NULL;
}

static const char *check_image(const unsigned char *p, size_t size)
{
    if (size >= 4 && memcmp(p, "\177ELF", 4) == 0)
        return check_elf(p, size);
    if (size >= 4 && rd(p, 4) == 0xBA55ED50u) { /* fatbinary */
        if (size < 16)
            return "truncated fatbinary header";
        uint64_t header = rd(p + 6, 2), body = rd(p + 8, 8);
        if (!inside(header, body, size))
            return "fatbinary larger than the image (truncated?)";
        return NULL;
    }
    if (!memchr(p, 0, size))
        return "neither a CUBIN (ELF), a fatbinary nor NUL-terminated PTX";
    return NULL;
}

/* ---- modules ---- */

tilec_rt_status tilec_rt_module_load(tilec_rt *rt, const void *image, size_t size, tilec_rt_module **out)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!out)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_module_load: out is NULL");
    *out = NULL;
    if (!image || size == 0)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_module_load: empty image");
    const char *bad = check_image(image, size);
    if (bad)
        return rt_fail(rt, TILEC_RT_MODULE_ERROR, "module image of %zu bytes rejected: %s", size, bad);
    tilec_rt_module *m = calloc(1, sizeof *m);
    if (!m)
        return rt_fail(rt, TILEC_RT_NOMEM, "tilec_rt_module_load: out of memory");
    CUresult r = rt->drv.ModuleLoadData(&m->mod, image);
    if (r != CUDA_SUCCESS) {
        free(m);
        tilec_rt_status s = TILEC_RT_DRIVER_ERROR;
        if (r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
            r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
            r == CUDA_ERROR_INVALID_SOURCE || r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND)
            s = TILEC_RT_MODULE_ERROR;
        return rt_cu_fail(rt, s, r, "cuModuleLoadData(image of %zu bytes, device %d is %s, driver %d.%d)",
                          size, rt->ordinal, rt->props.arch, rt->drv.version / 1000,
                          rt->drv.version % 1000 / 10);
    }
    m->rt = rt;
    ar_init(&m->ar);
    *out = m;
    return TILEC_RT_OK;
}

void tilec_rt_module_unload(tilec_rt_module *m)
{
    if (!m)
        return;
    tilec_rt *rt = m->rt;
    const tilec_rt_kernel *last = atomic_load_explicit(&rt->last_launch, memory_order_acquire);
    if (last && last->module == m)
        atomic_compare_exchange_strong(&rt->last_launch, &last, NULL);
    if (rt_enter(rt) == TILEC_RT_OK) {
        CUresult r = rt->drv.ModuleUnload(m->mod);
        if (r != CUDA_SUCCESS)
            rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuModuleUnload");
    }
    ar_free(&m->ar);
    free(m);
}

/* ---- kernels ---- */

static tilec_rt_status check_params(tilec_rt *rt, CUfunction fn, const char *name, const tilec_rt_launch_meta *meta)
{
    if (!rt->drv.FuncGetParamInfo) /* drivers before 12.4 cannot tell */
        return TILEC_RT_OK;
    for (uint32_t i = 0; i <= meta->nparams; i++) {
        size_t off = 0, sz = 0;
        CUresult r = rt->drv.FuncGetParamInfo(fn, i, &off, &sz);
        if (i == meta->nparams) {
            if (r == CUDA_SUCCESS)
                return rt_fail(rt, TILEC_RT_INVALID_ARG,
                               "kernel '%s' has more than the %u parameters of its launch metadata", name,
                               meta->nparams);
            break;
        }
        if (r == CUDA_ERROR_INVALID_VALUE)
            return rt_fail(rt, TILEC_RT_INVALID_ARG,
                           "kernel '%s' has %u parameters; its launch metadata lists %u", name, i, meta->nparams);
        if (r != CUDA_SUCCESS) /* not answerable for this kernel: skip the check */
            return TILEC_RT_OK;
        size_t want = meta->kinds[i] == TILEC_RT_PARAM_LIST ? tilec_rt_list_bytes(tilec_rt_list_cap_of(meta->kinds, meta->nparams))
                                                            : tilec_rt_param_size(meta->kinds[i]);
        if (sz != want)
            return rt_fail(rt, TILEC_RT_INVALID_ARG,
                           "kernel '%s' parameter %u is %zu bytes, but its launch metadata says %s (%zu bytes)",
                           name, i, sz, kind_name(meta->kinds[i]), want);
    }
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_kernel_get(tilec_rt_module *m, const char *name, const tilec_rt_launch_meta *meta,
                                    tilec_rt_kernel **out)
{
    if (!m)
        return TILEC_RT_INVALID_ARG;
    tilec_rt *rt = m->rt;
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!out || !name)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_kernel_get: NULL name or out");
    *out = NULL;
    char why[256];
    if (tilec_rt_launch_meta_check(meta, why, sizeof why) != TILEC_RT_OK)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "kernel '%s': bad launch metadata: %s", name, why);

    rt_driver *d = &rt->drv;
    CUfunction fn = NULL;
    CUresult r = d->ModuleGetFunction(&fn, m->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return rt_cu_fail(rt, TILEC_RT_NOT_FOUND, r,
                          "kernel '%s' not found in the module (is it extern \"C\" __global__?): "
                          "cuModuleGetFunction",
                          name);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuModuleGetFunction(\"%s\")", name);

    int max_threads = 0, static_smem = 0;
    r = d->FuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r,
                          "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel '%s')", name);
    if (meta->block_x > (uint32_t)max_threads)
        return rt_fail(rt, TILEC_RT_INVALID_ARG,
                       "kernel '%s' runs at most %d threads per block (its registers allow no more); its "
                       "launch metadata asks for %u",
                       name, max_threads, meta->block_x);
    r = d->FuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r,
                          "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kernel '%s')", name);
    uint64_t smem = (uint64_t)meta->dyn_smem_bytes + (uint64_t)(static_smem > 0 ? static_smem : 0);
    if (smem > rt->props.smem_per_block_optin)
        return rt_fail(rt, TILEC_RT_INVALID_ARG,
                       "kernel '%s' needs %d bytes of static and %u of dynamic shared memory; device %d (%s) "
                       "allows %llu per block",
                       name, static_smem, meta->dyn_smem_bytes, rt->ordinal, rt->props.name,
                       (unsigned long long)rt->props.smem_per_block_optin);
    if (smem > TILEC_RT_DEFAULT_SMEM) { /* past 48 KiB a block must opt in */
        r = d->FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)meta->dyn_smem_bytes);
        if (r != CUDA_SUCCESS)
            return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r,
                              "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, %u, kernel "
                              "'%s')",
                              meta->dyn_smem_bytes, name);
    }
    st = check_params(rt, fn, name, meta);
    if (st != TILEC_RT_OK)
        return st;

    tilec_rt_kernel *k = ar_alloc(&m->ar, sizeof *k);
    char *kname = ar_strdup(&m->ar, name);
    tilec_rt_param_kind *kinds = ar_array(&m->ar, meta->nparams ? meta->nparams : 1, sizeof *kinds);
    if (!k || !kname || !kinds)
        return rt_fail(rt, TILEC_RT_NOMEM, "tilec_rt_kernel_get('%s'): out of memory", name);
    if (meta->nparams)
        memcpy(kinds, meta->kinds, meta->nparams * sizeof *kinds);
    k->launch = d->LaunchKernel;
    k->fn = fn;
    k->block_x = meta->block_x;
    k->dyn_smem = meta->dyn_smem_bytes;
    k->nparams = meta->nparams;
    k->rt = rt;
    k->name = kname;
    k->kinds = kinds;
    k->module = m;
    *out = k;
    return TILEC_RT_OK;
}

const char *tilec_rt_kernel_name(const tilec_rt_kernel *k) { return k ? k->name : NULL; }

tilec_rt_launch_meta tilec_rt_kernel_meta(const tilec_rt_kernel *k)
{
    tilec_rt_launch_meta meta = {0};
    if (k) {
        meta.block_x = k->block_x;
        meta.dyn_smem_bytes = k->dyn_smem;
        meta.nparams = k->nparams;
        meta.kinds = k->kinds;
    }
    return meta;
}

/* ---- launch ---- */

static tilec_rt_status launch_failed(const tilec_rt_kernel *k, const uint32_t grid[3], void *stream, CUresult r)
    __attribute__((noinline, cold));

static tilec_rt_status launch_failed(const tilec_rt_kernel *k, const uint32_t grid[3], void *stream, CUresult r)
{
    const char *hint = r == CUDA_ERROR_INVALID_CONTEXT
                           ? " (is the runtime's context current in this thread? see tilec_rt_make_current)"
                           : "";
    tilec_rt_status st = rt_cu_fail(k->rt, TILEC_RT_LAUNCH_ERROR, r,
               "cuLaunchKernel(kernel '%s', grid %ux%ux%u, block %u, %u bytes of dynamic shared memory, "
               "stream %p)%s",
               k->name, grid[0], grid[1], grid[2], k->block_x, k->dyn_smem, stream, hint);
    /* whatever the CUresult, the launch is what failed, unless an earlier
     * kernel's fault left the context lost */
    return st == TILEC_RT_KERNEL_FAULT ? st : TILEC_RT_LAUNCH_ERROR;
}

tilec_rt_status tilec_rt_launch(const tilec_rt_kernel *k, const uint32_t grid[3], const tilec_rt_arg *args,
                                void *stream)
{
    /* The driver reads each argument through its address, as many bytes as
     * the kernel's parameter has: every union member starts at offset 0. */
    if (!k || !grid || (k->nparams && !args))
        return TILEC_RT_INVALID_ARG;
    void *params[TILEC_RT_MAX_PARAMS];
    for (uint32_t i = 0; i < k->nparams; i++) /* a tensor list's argument is the address of its packed table */
        params[i] = k->kinds[i] == TILEC_RT_PARAM_LIST ? (void *)(uintptr_t)args[i].ptr : (void *)&args[i];
    CUresult r = k->launch(k->fn, grid[0], grid[1], grid[2], k->block_x, 1, 1, k->dyn_smem, (CUstream)stream,
                           params, NULL);
    if (r == CUDA_SUCCESS) {
        atomic_store_explicit(&k->rt->last_launch, k, memory_order_release);
        return TILEC_RT_OK;
    }
    return launch_failed(k, grid, stream, r);
}
