/* overlap.c: where each collective's wait goes (issue 32, overlap). Every
 * COLLECTIVE runs on the communicator's communication stream; an
 * EXTERN_CALL of the symbol "tilec:wait:NAME" (no tensors) makes the
 * graph's stream wait for it. The wait goes before the first later line
 * that names the collective's input or result (reads the result, writes or
 * even reads the input, makes a view of either), before the next LOOP or
 * END_LOOP (a collective in a loop's body is joined in its iteration, one
 * before a loop before the loop starts), or before the return: the kernels and externs in between run while the collective does. The
 * frees of the input and the result found in between move to just after
 * the wait, so memory planning (plan.c, which runs after) cannot hand
 * either buffer to another line while the collective may still use it.
 * A collective with no work in that window (its result or input is the
 * next work line's, or only the return follows) overlaps nothing: it runs
 * on the graph's stream, without the communication stream's fork and join
 * (two events and two cross-stream waits a call, a few microseconds of
 * GPU time each; torch.distributed runs a synchronous collective on the
 * current stream likewise), unless an earlier collective's wait is still
 * to come (then it queues behind that one on the communication stream, so
 * two collectives of a communicator never run at once): it gets no wait
 * line and no wait symbol, and its frees stay where they are. */
#include <string.h>

#include "wrapper_ir/wir.h"

static int same(const char *a, const char *b) { return a && b && !strcmp(a, b); }

/* does line l name buffer a or b (other than as the buffer a free gives back)? */
static int names(const tilec_wir_line *l, const char *a, const char *b)
{
    if (l->kind == TILEC_WIR_COMMENT || l->kind == TILEC_WIR_KERNEL_DEF)
        return 0;
    if (same(l->name, a) || same(l->name, b) || same(l->from, a) || same(l->from, b))
        return 1;
    for (uint32_t i = 0; i < l->nargs; i++)
        if (l->args[i].kind == TILEC_WIR_ARG_BUFFER && (same(l->args[i].text, a) || same(l->args[i].text, b)))
            return 1;
    for (uint32_t i = 0; i < l->nouts; i++)
        if (same(l->outs[i], a) || same(l->outs[i], b))
            return 1;
    return 0;
}

static int is_free(const tilec_wir_line *l)
{
    return l->kind == TILEC_WIR_FREE || l->kind == TILEC_WIR_FREE_IF_NOT_REUSED;
}

/* work the graph's stream does (what a collective can overlap) */
static int is_work(const tilec_wir_line *l)
{
    return l->kind == TILEC_WIR_KERNEL_CALL || l->kind == TILEC_WIR_EXTERN_CALL || l->kind == TILEC_WIR_EXTERN_ALLOC;
}

int wir_overlap(tilec_wir *w)
{
    uint32_t n = w->n, ncoll = 0;
    for (uint32_t i = 0; i < n; i++)
        ncoll += w->lines[i].kind == TILEC_WIR_COLLECTIVE;
    if (!ncoll)
        return 0;
    /* waits[q]: the wait of the q-th collective, coll[q] its line, pos[q] the line it goes
       before (n: the return); owner[j]: 1 + the line of the collective whose wait a free
       moves after (0: it stays) */
    tilec_wir_line *waits = ar_array(&w->ar, ncoll, sizeof *waits), *out = ar_array(&w->ar, n + ncoll, sizeof *out);
    uint32_t *coll = ar_array(&w->ar, ncoll, sizeof *coll), *pos = ar_array(&w->ar, ncoll, sizeof *pos);
    uint32_t *owner = ar_array(&w->ar, n, sizeof *owner);
    if (!waits || !out || !coll || !pos || !owner)
        return -1;
    memset(owner, 0, n * sizeof *owner);
    uint32_t nw = 0;
    for (uint32_t i = 0; i < n; i++) {
        tilec_wir_line *c = &w->lines[i];
        if (c->kind != TILEC_WIR_COLLECTIVE)
            continue;
        int pending = 0; /* an earlier collective's wait comes after this line */
        for (uint32_t q = 0; q < nw; q++)
            pending |= pos[q] > i;
        strbuf what; /* the work it overlaps, for the text form */
        sb_init(&what);
        uint32_t j = i + 1;
        for (; j < n; j++) {
            const tilec_wir_line *l = &w->lines[j];
            if (is_free(l) && (same(l->name, c->name) || same(l->name, c->from)))
                owner[j] = i + 1;
            else if (names(l, c->name, c->from) || l->kind == TILEC_WIR_LOOP || l->kind == TILEC_WIR_END_LOOP)
                break; /* nor across a loop's start or end: the iteration that ran it joins it */
            else if (is_work(l))
                sb_printf(&what, "%s%s", what.n ? ", " : "", l->name);
        }
        if (!what.failed && !what.n && !pending) { /* nothing to overlap: on the graph's stream */
            sb_free(&what);
            for (uint32_t f = i + 1; f < j; f++)
                if (owner[f] == i + 1)
                    owner[f] = 0;
            continue;
        }
        c->wait = ar_printf(&w->ar, "tilec:wait:%s", c->name);
        tilec_wir_line *wl = &waits[nw];
        memset(wl, 0, sizeof *wl);
        wl->kind = TILEC_WIR_EXTERN_CALL;
        wl->loc = j < n ? w->lines[j].loc : w->ret_loc;
        wl->name = c->name;
        wl->from = c->from;
        wl->symbol = c->wait;
        wl->device = WIR_DEVICE;
        wl->text = ar_printf(&w->ar, "%s", what.failed ? "" : sb_str(&what));
        int bad = what.failed;
        sb_free(&what);
        if (bad || !c->wait || !wl->text)
            return -1;
        coll[nw] = i;
        pos[nw++] = j;
    }
    uint32_t k = 0;
    for (uint32_t at = 0; at <= n; at++) {
        for (uint32_t q = 0; q < nw; q++) {
            if (pos[q] != at)
                continue;
            out[k++] = waits[q];
            for (uint32_t j = coll[q] + 1; j < at; j++) /* the frees it held back, after it */
                if (owner[j] == coll[q] + 1)
                    out[k++] = w->lines[j];
        }
        if (at < n && !owner[at])
            out[k++] = w->lines[at];
    }
    w->lines = out;
    w->n = k;
    w->cap = n + ncoll;
    return 0;
}

int tilec_wir_is_wait(const tilec_wir_line *l)
{
    return l && l->kind == TILEC_WIR_EXTERN_CALL && !l->ext && l->symbol && !strncmp(l->symbol, "tilec:wait:", 11);
}
