/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_DURATION_H
#define FM_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Parse a duration such as "500ms", "5s", "2m", "1h", "7d", "250us", "10ns";
 * a bare number is seconds. Fractions allowed ("1.5s"). Negative, overflowing
 * or malformed input: -1/EINVAL (ERANGE on overflow).
 */
int fm_duration_parse (const char *s, int64_t *ns);

/* Format ns for a person: "850ns", "12.3us", "1.20ms", "2.50s" (the unit
 * that keeps one to three digits before the point). Returns buf.
 */
char *fm_duration_format (int64_t ns, char *buf, size_t len);

#endif /* FM_DURATION_H */
