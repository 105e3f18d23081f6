/* log.h: the runtime's log channels, chosen by the user through
 * TILEC_LOGS, a comma list of channel names ("async_compile,cache");
 * "all" enables every channel. The library writes a channel's report
 * only when its channel is enabled, and only to stderr. */
#ifndef TILEC_LOG_H
#define TILEC_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

/* The channels the runtime knows (a channel name is any string; these are
 * the ones it reports on). */
#define TILEC_LOG_ASYNC_COMPILE "async_compile"
/* each lowered kernel's remarks: the path of every dot loop and of every
 * load, store and atomic add (its vector width) and, where it is not the
 * target's best, why (docs/lowering.md, "Remarks") */
#define TILEC_LOG_REMARKS "remarks"
/* the sm_90a twins (tilec/tma.h): each one resolved when its program is
 * made or loaded, or why not, and each launch of its variant: the twin
 * (grid, tensor maps) or, when an operand does not qualify, why not */
#define TILEC_LOG_TMA "tma"
/* each tune space: which configurations were pruned and why, which were
 * kept and their rank per shape class (docs/tuning.md); at run time, per
 * kernel and shape key, the variants timed with their times and the winner */
#define TILEC_LOG_TUNE "tune"

/* 1 when `channel` is enabled by $TILEC_LOGS, else 0. The variable is read
 * at each call (no cache), so a program may change it between calls.
 * NULL or "" is never enabled. Thread-safe as getenv is: safe unless
 * another thread calls setenv/putenv/unsetenv at the same time. */
int tilec_log_enabled(const char *channel);

/* The same test against a given spec instead of $TILEC_LOGS (NULL: none).
 * Items are separated by commas; blanks (spaces, tabs) around an item are
 * ignored; names match exactly (case-sensitive, no prefixes). Pure. */
int tilec_log_spec_enables(const char *spec, const char *channel);

#ifdef __cplusplus
}
#endif

#endif
