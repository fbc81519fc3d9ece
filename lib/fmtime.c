/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "fmtime.h"

static int64_t clock_ns (clockid_t id)
{
    struct timespec ts;

    /* cannot fail for these clocks on Linux; a failure would be our bug */
    if (clock_gettime (id, &ts) < 0) {
        return -1;
    }
    return fm_time_from_timespec (&ts);
}

int64_t fm_time_mono_ns (void)
{
    return clock_ns (CLOCK_MONOTONIC);
}

int64_t fm_time_real_ns (void)
{
    return clock_ns (CLOCK_REALTIME);
}

/* Saturates rather than wrapping: a clamped value is wrong, a wrapped one is
 * wrong with the opposite sign.
 */
int64_t fm_time_from_timespec (const struct timespec *ts)
{
    int64_t ns;

    if (__builtin_mul_overflow ((int64_t)ts->tv_sec, FM_NSEC_PER_SEC, &ns)
        || __builtin_add_overflow (ns, (int64_t)ts->tv_nsec, &ns)) {
        return ts->tv_sec < 0 ? INT64_MIN : INT64_MAX;
    }
    return ns;
}

/* tv_nsec is always in [0, 1e9), so -1.5 s is { -2, 500000000 }. */
struct timespec fm_time_to_timespec (int64_t ns)
{
    struct timespec ts;
    int64_t sec = ns / FM_NSEC_PER_SEC;
    int64_t rem = ns % FM_NSEC_PER_SEC;

    if (rem < 0) {
        sec--;
        rem += FM_NSEC_PER_SEC;
    }
    ts.tv_sec = (time_t)sec;
    ts.tv_nsec = (long)rem;
    return ts;
}

char *fm_time_format_rfc3339 (int64_t real_ns, char *buf, size_t len)
{
    struct timespec ts = fm_time_to_timespec (real_ns);
    struct tm tm;
    char date[64];
    int n;

    if (!buf) {
        errno = EINVAL;
        return NULL;
    }
    if (!gmtime_r (&ts.tv_sec, &tm)) {
        errno = EOVERFLOW;
        return NULL;
    }
    if (strftime (date, sizeof (date), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        errno = EOVERFLOW;
        return NULL;
    }
    n = snprintf (buf, len, "%s.%06ldZ", date, ts.tv_nsec / 1000);
    if (n < 0 || (size_t)n >= len) {
        if (len > 0) {
            buf[0] = '\0';
        }
        errno = ERANGE;
        return NULL;
    }
    return buf;
}
