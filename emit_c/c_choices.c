/* c_choices.c: --choices FILE with --aot (the emitter option "choices"):
 * the multi-kernel choices `tilec tune ... --choices FILE` wrote (one line
 * per kernel, target, device model and shape; docs/tuning.md "Ahead of
 * time"), each checked against the module (the kernel, its variant count,
 * the chosen variant's hints, the shape's names: its integer parameters in
 * order), embedded in the table of the architecture it was tuned for as
 * tl_choicesSFX, which NAME_load hands to the runtime
 * (tilec_program_use_choices): those shapes launch their variant untimed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "emit_c/c_internal.h"
#include "tilec/choices.h"
#include "util/escape.h"

enum { CH_LINE = 4096 };

static void c_variant_hints(strbuf *b, const tilec_kernel *k, int variant)
{
    for (uint32_t i = 0; i < k->nhints; i++)
        sb_printf(b, "%s%s=%" PRId64, i ? "," : "", k->hints[i].name,
                  (int64_t)tilec_kernel_hint(k, variant, k->hints[i].name, 0));
}

static int int_param(const tilec_kernel *k, size_t i, const char **name)
{
    int ptr = 0;
    tilec_dtype dt = TILEC_DT_F32;
    tilec_kernel_param_info(k, i, name, &ptr, &dt);
    return !ptr && (dt == TILEC_DT_I32 || dt == TILEC_DT_U32 || dt == TILEC_DT_I64 || dt == TILEC_DT_U64);
}

static void c_choice_sizes(strbuf *b, const tilec_kernel *k, const tilec_wir_size *sizes, size_t n)
{
    int first = 1;
    for (size_t i = 0; i < tilec_kernel_param_count(k); i++) {
        const char *name;
        if (!int_param(k, i, &name))
            continue;
        int64_t v = -1;
        for (size_t j = 0; j < n; j++)
            if (!strcmp(sizes[j].name, name))
                v = sizes[j].value;
        sb_printf(b, "%s%s=%" PRId64, first ? "" : ",", name, v);
        first = 0;
    }
    if (first)
        sb_putc(b, '-'); /* no integer parameter: one shape */
}

/* A device name a line can hold between double quotes. */
static int device_ok(const char *d)
{
    if (!*d || strlen(d) > 255)
        return 0;
    for (; *d; d++)
        if (*d == '"' || (unsigned char)*d < 32 || *d == 127)
            return 0;
    return 1;
}

int tilec_choice_line(const tilec_kernel *k, const char *target, const char *device, const tilec_wir_size *sizes,
                      size_t n, int variant, char *buf, size_t size)
{
    char list[C_AOT_MAX_ARCHS][16];
    uint32_t nv = k && k->nvariants ? k->nvariants : 1;
    if (!k || !target || !device || (n && !sizes) || !buf || !size || c_aot_archs(target, list) != 1 ||
        !device_ok(device) || variant < 0 || (uint32_t)variant >= nv)
        return -1;
    strbuf b, sz, h;
    sb_init(&b);
    sb_init(&sz);
    sb_init(&h);
    c_choice_sizes(&sz, k, sizes, n);
    c_variant_hints(&h, k, variant);
    sb_printf(&b, "%s %s \"%s\" %s -> variant %d of %u {%s}\n", k->name, target, device, sb_str(&sz), variant, nv,
              sb_str(&h));
    int len = -1;
    if (!b.failed && !sz.failed && !h.failed && !strstr(sb_str(&sz), "=-1") && b.n < size) {
        memcpy(buf, sb_str(&b), b.n + 1);
        len = (int)b.n;
    }
    sb_free(&b);
    sb_free(&sz);
    sb_free(&h);
    return len;
}

/* Line ln of path (text, no newline) into out, or -1 with the error said. */
static int ch_line(tilec_ctx *ctx, const tilec_module *m, const char *path, int ln, const char *text, c_choice *out)
{
    char kernel[128], target[16], device[256], sizes[1024], hints[2048];
    int variant = -1, end = -1;
    unsigned nv = 0;
    memset(out, 0, sizeof *out);
    if (sscanf(text, "%127s %15s \"%255[^\"]\" %1023s -> variant %d of %u {%2047[^}]}%n", kernel, target, device, sizes,
               &variant, &nv, hints, &end) != 7 ||
        end < 0 || text[end]) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR,
                "--choices %s:%d: not a choice line (KERNEL TARGET \"DEVICE\" NAME=N,... -> variant V of N "
                "{HINTS}, as `tilec tune ... --choices FILE` writes)",
                path, ln);
        return -1;
    }
    char list[C_AOT_MAX_ARCHS][16];
    if (c_aot_archs(target, list) != 1 || !device_ok(device)) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR, "--choices %s:%d: %s", path, ln,
                !device_ok(device) ? "the device name holds a control character" : "the target is no GPU architecture");
        return -1;
    }
    const tilec_kernel *k = tilec_module_find_kernel(m, kernel);
    if (!k) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR, "--choices %s:%d: the module has no kernel '%s'", path, ln, kernel);
        return -1;
    }
    uint32_t have = k->nvariants ? k->nvariants : 1;
    strbuf want, got;
    sb_init(&want);
    sb_init(&got);
    int bad = 0;
    tilec_wir_size sz[64];
    size_t nsz = 0;
    if (nv != have || variant < 0 || (unsigned)variant >= nv) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR,
                "--choices %s:%d: kernel %s has %u variant%s here, and the line chooses variant %d of %u: it was "
                "tuned for another form of the kernel (run tilec tune again)",
                path, ln, kernel, have, have == 1 ? "" : "s", variant, nv);
        bad = 1;
    } else if (c_variant_hints(&want, k, variant), strcmp(sb_str(&want), hints)) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR,
                "--choices %s:%d: kernel %s's variant %d is {%s} here, not {%s}: it was tuned for another form of "
                "the kernel (run tilec tune again)",
                path, ln, kernel, variant, sb_str(&want), hints);
        bad = 1;
    } else if ((strcmp(sizes, "-") && tilec_wir_parse_sizes(sizes, sz, 64, &nsz) != TILEC_OK) ||
               (c_choice_sizes(&got, k, sz, nsz), strcmp(sb_str(&got), sizes))) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR,
                "--choices %s:%d: '%s' is not kernel %s's shape: its integer parameters in order, each a positive "
                "size (NAME=N,...)",
                path, ln, sizes, kernel);
        bad = 1;
    }
    bad |= want.failed || got.failed;
    sb_free(&want);
    sb_free(&got);
    if (bad)
        return -1;
    snprintf(out->kernel, sizeof out->kernel, "%s", kernel);
    snprintf(out->target, sizeof out->target, "%s", target);
    snprintf(out->device, sizeof out->device, "%s", device);
    snprintf(out->sizes, sizeof out->sizes, "%s", sizes);
    for (size_t i = 0; i < nsz; i++)
        out->key[i] = sz[i].value;
    out->nkey = (uint32_t)nsz;
    out->variant = variant;
    out->line = ln;
    return 0;
}

int c_choices_read(tilec_ctx *ctx, const tilec_module *m, const char *path, c_choices *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR, "--choices %s: cannot read it: %s", path, strerror(errno));
        return -1;
    }
    char text[CH_LINE + 2];
    int ln = 0, bad = 0;
    while (!bad && fgets(text, sizeof text, f)) {
        ln++;
        size_t len = strlen(text);
        if (len && text[len - 1] == '\n')
            text[--len] = 0;
        else if (!feof(f) || len > CH_LINE) {
            diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR, "--choices %s:%d: a line longer than %d bytes", path, ln,
                    CH_LINE);
            bad = 1;
            break;
        }
        if (!len || text[0] == '#')
            continue;
        c_choice c;
        bad = ch_line(ctx, m, path, ln, text, &c) != 0;
        for (size_t i = 0; !bad && i < out->n; i++) {
            const c_choice *o = &out->v[i];
            if (!strcmp(o->kernel, c.kernel) && !strcmp(o->target, c.target) && !strcmp(o->device, c.device) &&
                !strcmp(o->sizes, c.sizes)) {
                diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR,
                        "--choices %s:%d: a second choice for kernel %s on %s \"%s\" at %s (the first at line %d)",
                        path, ln, c.kernel, c.target, c.device, c.sizes, o->line);
                bad = 1;
            }
        }
        if (bad)
            break;
        c_choice *v = realloc(out->v, (out->n + 1) * sizeof *v);
        if (!v) {
            diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR, "--choices %s: out of memory", path);
            bad = 1;
            break;
        }
        out->v = v;
        out->v[out->n++] = c;
    }
    if (!bad && ferror(f)) {
        diag_at(ctx, NULL, NULL, TILEC_SEV_ERROR, "--choices %s: cannot read it: %s", path, strerror(errno));
        bad = 1;
    }
    fclose(f);
    if (bad)
        c_choices_free(out);
    return bad ? -1 : 0;
}

void c_choices_free(c_choices *cs)
{
    free(cs->v);
    cs->v = NULL;
    cs->n = 0;
}

uint32_t c_choices_table(strbuf *c, const c_choices *cs, const char *arch, const char *sfx)
{
    uint32_t n = 0;
    for (size_t i = 0; i < cs->n; i++) {
        if (strcmp(cs->v[i].target, arch))
            continue;
        if (!n)
            sb_printf(c, "/* the multi-kernel choices tuned ahead of time for %s (tilec tune --choices): the variant\n"
                         "   each device model launches, untimed, at each shape (the kernel's integer arguments) */\n",
                      arch);
        sb_printf(c, "static const int64_t tl_key%s_%u[] = {", sfx, n);
        for (uint32_t j = 0; j < cs->v[i].nkey; j++)
            sb_printf(c, "%sINT64_C(%" PRId64 ")", j ? ", " : "", cs->v[i].key[j]);
        sb_puts(c, "};\n");
        n++;
    }
    if (!n)
        return 0;
    sb_printf(c, "#define TL_NCHOICES%s %uu\nstatic const tilec_aot_choice tl_choices%s[] = {\n", sfx, n, sfx);
    n = 0;
    for (size_t i = 0; i < cs->n; i++) {
        const c_choice *x = &cs->v[i];
        if (strcmp(x->target, arch))
            continue;
        sb_puts(c, "    {");
        esc_c_string(c, x->kernel, strlen(x->kernel));
        sb_puts(c, ", ");
        esc_c_string(c, x->device, strlen(x->device));
        sb_printf(c, ", %u, tl_key%s_%u, %d}, /* %s */\n", x->nkey, sfx, n++, x->variant, x->sizes);
    }
    sb_puts(c, "};\n\n");
    return n;
}
