/* log.c: which log channels $TILEC_LOGS enables. No state: the variable
 * is parsed at each call. */
#include <stdlib.h>
#include <string.h>

#include "tilec/log.h"

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* 1 when the item [s, e) is `name` once its surrounding blanks are cut. */
static int item_is(const char *s, const char *e, const char *name, size_t len)
{
    while (s < e && is_blank(*s))
        s++;
    while (e > s && is_blank(e[-1]))
        e--;
    return (size_t)(e - s) == len && memcmp(s, name, len) == 0;
}

int tilec_log_spec_enables(const char *spec, const char *channel)
{
    if (!spec || !channel || !*channel)
        return 0;
    size_t len = strlen(channel);
    for (const char *s = spec;;) {
        const char *e = strchr(s, ',');
        if (!e)
            e = s + strlen(s);
        if (item_is(s, e, channel, len) || item_is(s, e, "all", 3))
            return 1;
        if (!*e)
            return 0;
        s = e + 1;
    }
}

int tilec_log_enabled(const char *channel) { return tilec_log_spec_enables(getenv("TILEC_LOGS"), channel); }
