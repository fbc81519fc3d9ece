/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_IDLIST_H
#define FM_IDLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* A list of ids resolved from "name, 123, other" (user or group names). */
typedef struct {
    size_t n;
    unsigned int ids[64];
} fm_idlist_t;

/* Parse a comma/space separated list of user (groups false) or group names and
 * numeric ids into out. Unknown names, more than 64 entries: -1/EINVAL + err.
 */
int fm_idlist_parse (const char *s, bool groups, fm_idlist_t *out, fm_error_t *err);
bool fm_idlist_has (const fm_idlist_t *l, unsigned int id);

#endif /* FM_IDLIST_H */
