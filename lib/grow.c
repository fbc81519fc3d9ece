/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

int fm_grow (void *v, size_t *cap, size_t need, size_t size, size_t first)
{
    void *old, *nv;
    size_t c;

    if (need <= *cap) {
        return 0;
    }
    c = *cap ? *cap : first;
    while (c < need) {
        c *= 2;
    }
    /* v points at a pointer of any object type: read and written as bytes */
    memcpy (&old, v, sizeof (old));
    if (!(nv = realloc (old, c * size))) {
        errno = ENOMEM;
        return -1;
    }
    memcpy (v, &nv, sizeof (nv));
    *cap = c;
    return 0;
}
