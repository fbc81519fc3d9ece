/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "log.h"
#include "fmtime.h"

/* Long enough for any sane message; longer ones are truncated, not dropped. */
#define LOG_LINE_MAX 1024

static struct {
    char ident[64];
    int sinks;
    int level;
    bool syslog_open;
    fm_log_f handler;
    void *handler_arg;
} logger = {
    .ident = PACKAGE_NAME,
    .sinks = FM_LOG_STDERR,
    .level = LOG_INFO,
};

static const char *level_names[] = {
    [LOG_EMERG] = "emerg",
    [LOG_ALERT] = "alert",
    [LOG_CRIT] = "crit",
    [LOG_ERR] = "err",
    [LOG_WARNING] = "warning",
    [LOG_NOTICE] = "notice",
    [LOG_INFO] = "info",
    [LOG_DEBUG] = "debug",
};

void fm_log_init (const char *ident, int sinks, int level)
{
    if (logger.syslog_open) {
        closelog ();
        logger.syslog_open = false;
    }
    /* openlog keeps the pointer, so ident must live in our static buffer */
    snprintf (logger.ident, sizeof (logger.ident), "%s", ident ? ident : PACKAGE_NAME);
    logger.sinks = sinks;
    fm_log_set_level (level);
    if (sinks & FM_LOG_SYSLOG) {
        openlog (logger.ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
        logger.syslog_open = true;
    }
}

void fm_log_set_level (int level)
{
    if (level < LOG_EMERG) {
        level = LOG_EMERG;
    }
    if (level > LOG_DEBUG) {
        level = LOG_DEBUG;
    }
    logger.level = level;
}

int fm_log_get_level (void)
{
    return logger.level;
}

void fm_log_set_handler (fm_log_f fn, void *arg)
{
    logger.handler = fn;
    logger.handler_arg = arg;
}

void fm_log_fini (void)
{
    if (logger.syslog_open) {
        closelog ();
        logger.syslog_open = false;
    }
    logger.handler = NULL;
    logger.handler_arg = NULL;
    logger.sinks = FM_LOG_STDERR;
}

int fm_log_level_parse (const char *s)
{
    if (!s) {
        errno = EINVAL;
        return -1;
    }
    if (s[0] >= '0' + LOG_ERR && s[0] <= '0' + LOG_DEBUG && s[1] == '\0') {
        return s[0] - '0';
    }
    for (int i = LOG_ERR; i <= LOG_DEBUG; i++) {
        if (strcasecmp (s, level_names[i]) == 0) {
            return i;
        }
    }
    errno = EINVAL;
    return -1;
}

static void emit (int level, const char *msg)
{
    const char *name =
        level >= LOG_EMERG && level <= LOG_DEBUG ? level_names[level] : "log";

    if (logger.sinks & FM_LOG_STDERR) {
        /* one call, so that concurrent writers do not interleave mid-line */
        fprintf (stderr, "%s: %s: %s\n", logger.ident, name, msg);
    }
    if (logger.sinks & FM_LOG_SYSLOG) {
        syslog (level, "%s", msg);
    }
    if (logger.handler) {
        logger.handler (level, msg, logger.handler_arg);
    }
}

static void vlog (int level, const char *suffix, const char *fmt, va_list ap)
    __attribute__ ((format (printf, 3, 0)));

static void vlog (int level, const char *suffix, const char *fmt, va_list ap)
{
    char buf[LOG_LINE_MAX];
    int saved_errno = errno;
    /* the suffix (a suppressed count) must survive truncation of the message */
    size_t room = sizeof (buf) - (suffix ? strlen (suffix) : 0);

    if (vsnprintf (buf, room, fmt, ap) < 0) {
        snprintf (buf, room, "(unformattable message)");
    }
    if (suffix) {
        size_t used = strlen (buf);
        snprintf (buf + used, sizeof (buf) - used, "%s", suffix);
    }
    emit (level, buf);
    errno = saved_errno;
}

void fm_log_msg (int level, const char *fmt, ...)
{
    va_list ap;

    if (level > logger.level) {
        return;
    }
    va_start (ap, fmt);
    vlog (level, NULL, fmt, ap);
    va_end (ap);
}

bool fm_log_ratelimit_allow (fm_ratelimit_t *rl, int64_t now_ns, uint64_t *suppressed)
{
    if (suppressed) {
        *suppressed = 0;
    }
    if (rl->interval_ns <= 0 || rl->burst == 0) {
        return true;
    }
    /* An idle window (nothing emitted) restarts at the first message, so the
     * zero-initialised state needs no special case. A clock that went
     * backwards also opens a new window rather than muting forever.
     */
    if (rl->emitted == 0 || now_ns < rl->window_start
        || now_ns - rl->window_start >= rl->interval_ns) {
        rl->window_start = now_ns;
        rl->emitted = 0;
    }
    if (rl->emitted < rl->burst) {
        rl->emitted++;
        if (suppressed) {
            *suppressed = rl->suppressed;
        }
        rl->suppressed = 0;
        return true;
    }
    rl->suppressed++;
    return false;
}

bool fm_log_ratelimited (fm_ratelimit_t *rl, int level, const char *fmt, ...)
{
    uint64_t suppressed;
    char suffix[64] = "";
    va_list ap;

    /* a disabled level must not use up the burst */
    if (level > logger.level) {
        return false;
    }
    if (!fm_log_ratelimit_allow (rl, fm_time_mono_ns (), &suppressed)) {
        return false;
    }
    if (suppressed > 0) {
        snprintf (suffix,
                  sizeof (suffix),
                  " (%llu similar messages suppressed)",
                  (unsigned long long)suppressed);
    }
    va_start (ap, fmt);
    vlog (level, suffix, fmt, ap);
    va_end (ap);
    return true;
}
