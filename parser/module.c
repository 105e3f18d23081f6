/* module.c: the module's accessors (tilec/tilec.h): walking its items,
 * finding one by name, a kernel's hints per variant, freeing it. Every
 * layer above the parser reads a module through them. */
#include <stdlib.h>
#include <string.h>

#include "parser/module.h"
#include "tilec/tilec.h"

void tilec_module_free(tilec_module *m)
{
    if (!m)
        return;
    ar_free(&m->ar);
    free(m);
}

/* Every accessor takes NULL (or an index out of range) as "nothing": 0 or NULL. */
size_t tilec_module_item_count(const tilec_module *m) { return m ? m->items.n : 0; }
const tilec_item *tilec_module_item(const tilec_module *m, size_t i) { return m && i < m->items.n ? m->items.v[i] : NULL; }
size_t tilec_module_kernel_count(const tilec_module *m) { return m ? m->kernels.n : 0; }
const tilec_kernel *tilec_module_kernel(const tilec_module *m, size_t i)
{
    return m && i < m->kernels.n ? m->kernels.v[i] : NULL;
}
size_t tilec_module_extern_count(const tilec_module *m) { return m ? m->externs.n : 0; }
const tilec_extern *tilec_module_extern(const tilec_module *m, size_t i)
{
    return m && i < m->externs.n ? m->externs.v[i] : NULL;
}
size_t tilec_module_graph_count(const tilec_module *m) { return m ? m->graphs.n : 0; }
const tilec_graph *tilec_module_graph(const tilec_module *m, size_t i)
{
    return m && i < m->graphs.n ? m->graphs.v[i] : NULL;
}
const char *tilec_module_file(const tilec_module *m) { return m ? m->src.name : NULL; }
const char *tilec_module_source(const tilec_module *m, size_t *len)
{
    if (len)
        *len = m ? m->src.len : 0;
    return m ? m->src.text : NULL;
}

/* Items have distinct names (the checker guarantees it). */
static const void *find(const ar_vec *v, const char *name)
{
    for (uint32_t i = 0; name && i < v->n; i++)
        if (!strcmp(((const tilec_kernel *)v->v[i])->name, name))
            return v->v[i];
    return NULL;
}

const tilec_kernel *tilec_module_find_kernel(const tilec_module *m, const char *name)
{
    return m ? find(&m->kernels, name) : NULL;
}
const tilec_extern *tilec_module_find_extern(const tilec_module *m, const char *name)
{
    return m ? find(&m->externs, name) : NULL;
}
const tilec_graph *tilec_module_find_graph(const tilec_module *m, const char *name)
{
    return m ? find(&m->graphs, name) : NULL;
}

int64_t tilec_kernel_hint(const tilec_kernel *k, int variant, const char *name, int64_t dflt)
{
    if (!k || !name || (variant >= 0 && (uint32_t)variant >= (k->nvariants ? k->nvariants : 1)))
        return dflt;
    const tilec_variant *v = variant >= 0 && (uint32_t)variant < k->nvariants ? &k->variants[variant] : NULL;
    for (uint32_t i = 0; i < k->nhints; i++)
        if (!strcmp(k->hints[i].name, name))
            return v && v->values ? v->values[i] : k->hints[i].value;
    return dflt;
}

size_t tilec_kernel_param_count(const tilec_kernel *k) { return k ? k->nparams : 0; }

int tilec_kernel_param_info(const tilec_kernel *k, size_t i, const char **name, int *pointer, tilec_dtype *dtype)
{
    if (!k || i >= k->nparams)
        return -1;
    const tilec_param *p = &k->params[i];
    if (name)
        *name = p->name;
    if (pointer)
        *pointer = p->type.kind == TILEC_TE_LIST ? 2 : p->type.kind == TILEC_TE_POINTER;
    if (dtype)
        *dtype = p->type.dtype;
    return 0;
}

const tilec_kernel *tilec_module_find_generic(const tilec_module *m, const char *name)
{
    return m ? find(&m->generics, name) : NULL;
}

const char *tilec_kernel_name(const tilec_kernel *k) { return k ? k->name : NULL; }

const tilec_kernel *tilec_kernel_instance(const tilec_kernel *g, size_t i)
{
    return g && i < g->ninstances ? g->instances[i] : NULL;
}

size_t tilec_kernel_tparam_count(const tilec_kernel *k) { return k ? k->ntparams : 0; }

int tilec_kernel_tparam_info(const tilec_kernel *k, size_t j, const char **name, int *bound)
{
    if (!k || j >= k->ntparams)
        return -1;
    if (name)
        *name = k->tparams[j].name;
    if (bound)
        *bound = k->targs ? (int)k->targs[j] : -1;
    return 0;
}

int tilec_kernel_param_tparam(const tilec_kernel *k, size_t i)
{
    if (!k || i >= k->nparams || !k->params[i].type.tparam)
        return -1;
    for (uint32_t j = 0; j < k->ntparams; j++)
        if (!strcmp(k->tparams[j].name, k->params[i].type.tparam))
            return (int)j;
    return -1;
}
