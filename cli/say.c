/* say.c: what every file of the `tilec` command uses, below them all:
 * its error lines on stderr (one form, "tilec: error: ..."), the
 * library's diagnostics rendered, an input's name in messages, the check
 * of a number on the command line and the mode of a new file. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

int cli_is_digits(const char *s)
{
    size_t n = strspn(s, "0123456789");
    return n > 0 && n <= 20 && (s[n] == '\0' || (s[n] >= 'A' && s[n] <= 'z'));
}

/* "tilec: error: MESSAGE" and then tail on stderr. */
__attribute__((format(printf, 2, 0))) static void say(const char *tail, const char *fmt, va_list ap)
{
    fprintf(stderr, "tilec: error: ");
    vfprintf(stderr, fmt, ap);
    fputs(tail, stderr);
}

int cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("\n", fmt, ap);
    va_end(ap);
    return CLI_EXIT_INPUT;
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("\n(run 'tilec --help' for usage)\n", fmt, ap);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

int cli_sub_usage_error(const char *sub, const char *usage, const char *what, const char *arg)
{
    fprintf(stderr, "tilec: error: %s: %s%s%s\n%s", sub, what, arg ? ": " : "", arg ? arg : "", usage);
    return CLI_EXIT_USAGE;
}

void cli_flush_diags(tilec_ctx *ctx)
{
    tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
    tilec_ctx_clear_diags(ctx);
}

const char *cli_name(const cli_opts *o, int i)
{
    return o->source_name ? o->source_name : strcmp(o->files[i], "-") ? o->files[i] : "<stdin>";
}

void cli_usual_mode(int fd)
{
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
}
