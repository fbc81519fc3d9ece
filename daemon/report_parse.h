/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_REPORT_PARSE_H
#define FM_REPORT_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"
#include "validate.h"

/* Parse and validate a POST /v1/reports body (len bytes) against `now_ns`.
 * On failure -1/EINVAL with the field (or inv->syntax) in inv and *rep untouched.
 */
int fm_report_parse (
    const char *body, size_t len, int64_t now_ns, fm_report_t *rep, fm_invalid_t *inv);
void fm_report_parse_release (fm_report_t *rep);

#endif /* FM_REPORT_PARSE_H */
