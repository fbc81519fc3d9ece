/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_STRLIST_H
#define FM_STRLIST_H

#include <stdbool.h>
#include <stddef.h>

/* A set of strings kept as a plain array (v, n, cap): small lists of node and
 * element names, searched linearly. The strings are the list's own copies.
 */
bool fm_strlist_has (char *const *v, size_t n, const char *s);

/* Add a copy of s unless it is there already. 0, or -1/ENOMEM with the list
 * as it was.
 */
int fm_strlist_add (char ***v, size_t *n, size_t *cap, const char *s);

/* Remove s when present; the order of the others may change. */
void fm_strlist_del (char **v, size_t *n, const char *s);

/* NULL-safe. */
void fm_strlist_free (char **v, size_t n);

#endif /* FM_STRLIST_H */
