/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_GROW_H
#define FM_GROW_H

#include <stddef.h>

/* Room for `need` elements of `size` bytes in the array *v (v: the address
 * of a pointer to it, of any type) that has room for *cap: the capacity
 * starts at `first` and doubles. 0, or -1/ENOMEM with *v and *cap as they
 * were.
 */
int fm_grow (void *v, size_t *cap, size_t need, size_t size, size_t first);

#endif /* FM_GROW_H */
