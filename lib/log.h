/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_LOG_H
#define FM_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

/* Levels are syslog's: LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG. */

typedef enum {
    FM_LOG_STDERR = 1,
    FM_LOG_SYSLOG = 2,
} fm_log_sink_b;

/* A caller-supplied sink (tests, the SPANK plugin's slurm_* loggers). */
typedef void (*fm_log_f) (int level, const char *msg, void *arg);

/* Set the program name prefixed to every line, the sinks and the maximum level
 * logged. May be called again to change them. ident is copied (NULL means
 * PACKAGE_NAME). Stderr lines read "ident: level: msg"; syslog uses openlog(ident)
 * with LOG_DAEMON. Before any call: stderr, LOG_INFO. Not thread-safe: configure
 * logging before starting threads.
 */
void fm_log_init (const char *ident, int sinks, int level);
void fm_log_set_level (int level);
int fm_log_get_level (void);
/* fn (NULL removes it) receives every logged message in addition to the sinks;
 * pass sinks 0 to fm_log_init() to route messages to fn only.
 */
void fm_log_set_handler (fm_log_f fn, void *arg);
/* Close syslog, drop the handler, fall back to stderr. */
void fm_log_fini (void);

/* Parse "err", "warning", "notice", "info", "debug" (or 3..7). -1/EINVAL on error. */
int fm_log_level_parse (const char *s);

void fm_log_msg (int level, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));

/* Arguments are evaluated only when the level is enabled. */
#define fm_log(level, ...)                                                   \
    do {                                                                      \
        if ((level) <= fm_log_get_level ())                                   \
            fm_log_msg ((level), __VA_ARGS__);                                \
    } while (0)
#define fm_err(...) fm_log (LOG_ERR, __VA_ARGS__)
#define fm_warn(...) fm_log (LOG_WARNING, __VA_ARGS__)
#define fm_notice(...) fm_log (LOG_NOTICE, __VA_ARGS__)
#define fm_info(...) fm_log (LOG_INFO, __VA_ARGS__)
#define fm_debug(...) fm_log (LOG_DEBUG, __VA_ARGS__)

/* Rate limiting for messages caused by external input (one bad packet per
 * second must not become one log line per packet). Zero-initialise, then set
 * interval_ns and burst.
 */
typedef struct {
    int64_t interval_ns;   /* length of one window */
    unsigned burst;        /* messages allowed per window */
    int64_t window_start;  /* monotonic ns */
    unsigned emitted;      /* in the current window */
    uint64_t suppressed;   /* since the last emitted message */
} fm_ratelimit_t;

#define FM_RATELIMIT_INIT(interval_s, burst_n)                               \
    { .interval_ns = (int64_t)(interval_s) * 1000000000LL, .burst = (burst_n) }

/* Log unless the limit is exceeded; when a new window opens after suppression,
 * the first message says how many were suppressed. Returns true if logged.
 * A message above the current level is not logged and does not count.
 * interval_ns <= 0 or burst 0 disables limiting.
 */
bool fm_log_ratelimited (fm_ratelimit_t *rl, int level, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

/* The decision alone, with an explicit clock, so it can be tested. A window
 * opens at the first message after the previous one expired. On true,
 * *suppressed (may be NULL) is the count refused since the last allowed one.
 */
bool fm_log_ratelimit_allow (fm_ratelimit_t *rl, int64_t now_ns, uint64_t *suppressed);

#endif /* FM_LOG_H */
