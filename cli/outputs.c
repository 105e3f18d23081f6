/* outputs.c: the files one run of the command writes into -o DIR (cubin,
 * c, py, a plugin's), gathered in memory and written only once every
 * module succeeded, after the whole set is checked: no two outputs on one
 * path (the same name, or two names of one file through a link), no output
 * on an input file (compared by device and inode, so ./a.tile, a symlink
 * or a hard link are caught as well as the path as given). Then the
 * directory (with any missing parents) is made, every file is written to a
 * temporary beside it, and the temporaries are renamed into place: a
 * refused or failed run writes nothing and creates nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

/* Is st the file of an input of o (a regular file: a terminal or a pipe
 * read and written is no overwrite)? Its index, or -1. */
static int input_of(const cli_opts *o, const struct stat *st)
{
    for (int i = 0; S_ISREG(st->st_mode) && i < o->nfiles; i++) {
        struct stat in;
        int got = strcmp(o->files[i], "-") ? stat(o->files[i], &in) : fstat(STDIN_FILENO, &in);
        if (got == 0 && in.st_dev == st->st_dev && in.st_ino == st->st_ino)
            return i;
    }
    return -1;
}

int cli_refuse_input(const cli_opts *o, const char *path)
{
    struct stat st;
    int i = path && stat(path, &st) == 0 ? input_of(o, &st) : -1;
    if (i < 0)
        return 0;
    return cli_error("the output %s is the input %s: refusing to overwrite it", path, cli_name(o, i));
}

/* The nearest existing directory at or above dir; 0, or an error said. */
int cli_check_dir(const char *dir)
{
    char *p = strdup(dir);
    if (!p)
        return cli_error("out of memory");
    struct stat st;
    int status = 0;
    for (;;) {
        if (stat(p, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                status = cli_error("cannot write into %s: %s is not a directory", dir, p);
            else if (access(p, W_OK | X_OK) != 0)
                status = cli_error("cannot write into %s: %s: %s", dir, p, strerror(errno));
            break;
        }
        if (errno != ENOENT && errno != ENOTDIR) {
            status = cli_error("cannot write into %s: %s: %s", dir, p, strerror(errno));
            break;
        }
        char *slash = strrchr(p, '/');
        while (slash && slash > p && slash[1] == '\0') { /* "out/": the slash ends no name */
            *slash = '\0';
            slash = strrchr(p, '/');
        }
        if (!slash) { /* a relative name with no existing part: the current directory */
            if (access(".", W_OK | X_OK) != 0)
                status = cli_error("cannot write into %s: .: %s", dir, strerror(errno));
            break;
        }
        slash[slash == p] = '\0'; /* "/x" -> "/" */
    }
    free(p);
    return status;
}

/* mkdir -p dir; 0 or an error said. */
static int make_dirs(const char *dir)
{
    char *p = strdup(dir);
    if (!p)
        return cli_error("out of memory");
    int status = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s)
            continue;
        char c = *s;
        *s = '\0';
        struct stat st;
        if (stat(p, &st) != 0 && mkdir(p, 0777) != 0 && errno != EEXIST) {
            status = cli_error("cannot create %s: %s", p, strerror(errno));
            break;
        }
        *s = c;
        if (!c)
            break;
    }
    free(p);
    return status;
}

int cli_outputs_add(cli_outputs *s, int module, const char *name, const void *data, size_t len)
{
    for (size_t i = 0; s->o->out && i < s->n; i++)
        if (!strcmp(s->v[i].name, name)) {
            const char *a = cli_name(s->o, s->v[i].module), *b = cli_name(s->o, module);
            if (s->v[i].module == module)
                return cli_error("%s: two outputs are both %s/%s", a, s->o->out, name);
            return cli_error("%s and %s both write %s/%s (rename one of the two)", a, b, s->o->out, name);
        }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        cli_output *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return cli_error("out of memory");
        s->v = v;
        s->cap = cap;
    }
    cli_output *out = &s->v[s->n];
    out->name = strdup(name);
    out->data = malloc(len ? len : 1);
    out->tmp = NULL;
    out->module = module;
    if (!out->name || !out->data) {
        free(out->name);
        free(out->data);
        return cli_error("out of memory");
    }
    memcpy(out->data, data, len);
    out->len = len;
    s->n++;
    return 0;
}

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* No output is an input, none is a directory, no two are one file. */
static int check_all(cli_outputs *s)
{
    struct stat *sts = calloc(s->n + 1, sizeof *sts);
    int status = sts ? 0 : cli_error("out of memory");
    for (size_t i = 0; i < s->n && !status; i++) {
        char *p = path_in(s->o->out, s->v[i].name);
        if (!p)
            status = cli_error("out of memory");
        else if (stat(p, &sts[i]) != 0)
            sts[i].st_ino = 0; /* a new file: nothing to meet */
        else if (S_ISDIR(sts[i].st_mode))
            status = cli_error("cannot write %s: %s", p, strerror(EISDIR));
        else if (!(status = cli_refuse_input(s->o, p)))
            for (size_t k = 0; k < i && !status; k++)
                if (sts[k].st_ino && sts[k].st_dev == sts[i].st_dev && sts[k].st_ino == sts[i].st_ino)
                    status =
                        cli_error("%s/%s and %s are one file (a link): both are outputs", s->o->out, s->v[k].name, p);
        free(p);
    }
    free(sts);
    return status;
}

int cli_outputs_commit(cli_outputs *s)
{
    if (!s->n)
        return 0;
    int status = check_all(s);
    if (!status)
        status = make_dirs(s->o->out);
    for (size_t i = 0; i < s->n && !status; i++) { /* every temporary first */
        char *p = path_in(s->o->out, s->v[i].name);
        size_t n = p ? strlen(p) + 8 : 0;
        int fd = -1;
        if (p && (s->v[i].tmp = malloc(n))) {
            snprintf(s->v[i].tmp, n, "%s.XXXXXX", p);
            fd = mkstemp(s->v[i].tmp);
        }
        FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (fd >= 0)
            cli_usual_mode(fd);
        int bad = !f || fwrite(s->v[i].data, 1, s->v[i].len, f) != s->v[i].len;
        if (f)
            bad |= fclose(f) != 0;
        else if (fd >= 0)
            close(fd);
        if (bad) {
            status = cli_error("cannot write %s: %s", p ? p : s->v[i].name, strerror(errno ? errno : ENOMEM));
            if (fd >= 0)
                unlink(s->v[i].tmp);
            free(s->v[i].tmp);
            s->v[i].tmp = NULL;
        }
        free(p);
    }
    for (size_t i = 0; i < s->n; i++) { /* then the renames (or, after a failure, the clean-up) */
        if (!s->v[i].tmp)
            continue;
        char *p = status ? NULL : path_in(s->o->out, s->v[i].name);
        if (!status && (!p || rename(s->v[i].tmp, p) != 0))
            status = cli_error("cannot write %s: %s", p ? p : s->v[i].name, p ? strerror(errno) : "out of memory");
        if (status)
            unlink(s->v[i].tmp);
        free(p);
        free(s->v[i].tmp);
        s->v[i].tmp = NULL;
    }
    return status;
}

void cli_outputs_free(cli_outputs *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].name);
        free(s->v[i].data);
        free(s->v[i].tmp);
    }
    free(s->v);
    *s = (cli_outputs){0};
}
