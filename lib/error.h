/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_ERROR_H
#define FM_ERROR_H

/* A human-readable explanation that travels beside errno. */
typedef struct {
    char text[160];
} fm_error_t;

/* Format a message into err (which may be NULL); errno is preserved.
 * Always returns -1 so that callers can write `return fm_errprintf (...)`.
 */
int fm_errprintf (fm_error_t *err, const char *fmt, ...)
    __attribute__ ((format (printf, 2, 3)));

/* Clear err (which may be NULL). */
void fm_error_clear (fm_error_t *err);

#endif /* FM_ERROR_H */
