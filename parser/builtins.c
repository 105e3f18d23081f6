/* builtins.c: the table of parser/builtins.h and its lookup by name. */
#include "parser/builtins.h"

#include <string.h>

static const tilec_builtin_info table[BI_COUNT] = {
    [BI_NONE] = {"", 0, 0, BK_ELEM},
#define TILEC_BUILTIN_ROW(e, s, lo, hi, kind) [BI_##e] = {s, lo, hi, kind},
    TILEC_BUILTINS(TILEC_BUILTIN_ROW)
#undef TILEC_BUILTIN_ROW
};

tilec_builtin tilec_builtin_find(const char *name)
{
    for (int i = BI_NONE + 1; i < BI_COUNT; i++)
        if (!strcmp(table[i].name, name))
            return (tilec_builtin)i;
    return BI_NONE;
}

const tilec_builtin_info *tilec_builtin_get(tilec_builtin b)
{
    return &table[b > BI_NONE && b < BI_COUNT ? b : BI_NONE];
}
