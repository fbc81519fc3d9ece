/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "fmtime.h"

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

char *fm_duration_format (int64_t ns, char *buf, size_t len)
{
    double v = (double)ns;
    double a = v < 0 ? -v : v;

    if (a < 1e3) {
        snprintf (buf, len, "%lldns", (long long)ns);
    } else if (a < 1e6) {
        snprintf (buf, len, "%.1fus", v / 1e3);
    } else if (a < 1e9) {
        snprintf (buf, len, "%.2fms", v / 1e6);
    } else {
        snprintf (buf, len, "%.2fs", v / 1e9);
    }
    return buf;
}
