/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "timeutil.h"

static int64_t clock_ns (clockid_t id)
{
    struct timespec ts;

    /* cannot fail for these clocks on Linux; a failure would be our bug */
    if (clock_gettime (id, &ts) < 0) {
        return -1;
    }
    return fm_timespec_to_ns (&ts);
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
int64_t fm_timespec_to_ns (const struct timespec *ts)
{
    int64_t ns;

    if (__builtin_mul_overflow ((int64_t)ts->tv_sec, FM_NSEC_PER_SEC, &ns)
        || __builtin_add_overflow (ns, (int64_t)ts->tv_nsec, &ns)) {
        return ts->tv_sec < 0 ? INT64_MIN : INT64_MAX;
    }
    return ns;
}

/* tv_nsec is always in [0, 1e9), so -1.5 s is { -2, 500000000 }. */
struct timespec fm_ns_to_timespec (int64_t ns)
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

static const struct {
    const char *name;
    int64_t ns;
} units[] = {
    {"ns", 1LL},
    {"us", 1000LL},
    {"ms", 1000000LL},
    {"s", FM_NSEC_PER_SEC},
    {"m", 60 * FM_NSEC_PER_SEC},
    {"h", 3600 * FM_NSEC_PER_SEC},
    {"d", 86400 * FM_NSEC_PER_SEC},
};

static bool is_digit (char c)
{
    return c >= '0' && c <= '9';
}

int fm_duration_parse (const char *s, int64_t *ns)
{
    const char *p = s;
    uint64_t whole = 0;
    unsigned __int128 frac_num = 0;
    unsigned __int128 frac_den = 1;
    int frac_digits = 0;
    int64_t mult = -1;
    unsigned __int128 total;

    if (!s || !ns || !is_digit (*p)) {
        errno = EINVAL;
        return -1;
    }
    while (is_digit (*p)) {
        if (__builtin_mul_overflow (whole, 10, &whole)
            || __builtin_add_overflow (whole, (uint64_t)(*p - '0'), &whole)) {
            errno = ERANGE;
            return -1;
        }
        p++;
    }
    if (*p == '.') {
        p++;
        if (!is_digit (*p)) {
            errno = EINVAL;
            return -1;
        }
        while (is_digit (*p)) {
            /* at most 20 digits keep frac_num * mult within 128 bits; later digits
             * are worth less than a nanosecond even in days */
            if (frac_digits < 20) {
                frac_num = frac_num * 10 + (unsigned)(*p - '0');
                frac_den *= 10;
                frac_digits++;
            }
            p++;
        }
    }
    if (*p == '\0') {
        mult = FM_NSEC_PER_SEC;
    } else {
        for (size_t i = 0; i < sizeof (units) / sizeof (units[0]); i++) {
            if (strcmp (p, units[i].name) == 0) {
                mult = units[i].ns;
                break;
            }
        }
    }
    if (mult < 0) {
        errno = EINVAL;
        return -1;
    }
    total = (unsigned __int128)whole * (uint64_t)mult
            + frac_num * (uint64_t)mult / frac_den;
    if (total > INT64_MAX) {
        errno = ERANGE;
        return -1;
    }
    *ns = (int64_t)total;
    return 0;
}

char *fm_time_format_rfc3339 (int64_t real_ns, char *buf, size_t len)
{
    struct timespec ts = fm_ns_to_timespec (real_ns);
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
