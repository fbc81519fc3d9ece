/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_HOSTLIST_H
#define FM_HOSTLIST_H

#include <stddef.h>

#include "error.h"

/* Slurm hostlist expressions, without libslurm so that every binary (agent,
 * daemon, CLI, plugin) can use them: "fmn[1-4]", "node[01-04,07]",
 * "rack[1-2]-gpu[01-02]" (cartesian product, left to right), "a,b[1-2],c".
 * Zero padding follows the range's lower bound width ("[08-11]" -> 08 09 10 11).
 * Duplicates are kept, in order. "" is the empty list. Names are at most 255
 * characters; whitespace and control characters are refused.
 */
typedef struct fm_hostlist fm_hostlist_t;

/* Parse and expand. Malformed input (unbalanced brackets, reversed or empty
 * ranges, non-digits in a range, more than max_hosts names): NULL/EINVAL with
 * the offending position in err. max_hosts 0 means the default cap (1 << 20).
 * Positions are 1-based columns: "reversed range 5-3 at position 3".
 */
fm_hostlist_t *fm_hostlist_expand (const char *expr, size_t max_hosts, fm_error_t *err);
void fm_hostlist_destroy (fm_hostlist_t *hl);

size_t fm_hostlist_count (const fm_hostlist_t *hl);
const char *fm_hostlist_nth (const fm_hostlist_t *hl, size_t i); /* NULL if out of range */
int fm_hostlist_find (const fm_hostlist_t *hl, const char *host); /* index or -1 */

/* Compress a list of names back into one expression, in the given order,
 * merging consecutive numeric suffixes with equal padding:
 * {fmn1,fmn2,fmn3,fmn7} -> "fmn[1-3,7]". Returns malloc'd string or NULL/errno
 * (EINVAL for a name that could not be expanded back: empty, with '[', ']',
 * ',' or whitespace, longer than 255). fm_hostlist_expand() of the result gives
 * the same list.
 */
char *fm_hostlist_compress (const char *const *hosts, size_t n);

#endif /* FM_HOSTLIST_H */
