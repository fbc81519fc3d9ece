/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

int fm_errprintf (fm_error_t *err, const char *fmt, ...)
{
    int saved_errno = errno;

    if (err) {
        va_list ap;

        va_start (ap, fmt);
        /* vsnprintf always terminates; a long message is cut, never overflows */
        if (vsnprintf (err->text, sizeof (err->text), fmt, ap) < 0) {
            err->text[0] = '\0';
        }
        va_end (ap);
    }
    errno = saved_errno;
    return -1;
}

void fm_error_clear (fm_error_t *err)
{
    if (err) {
        err->text[0] = '\0';
    }
}
