/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strlist.h"

bool fm_strlist_has (char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp (v[i], s) == 0) {
            return true;
        }
    }
    return false;
}

int fm_strlist_add (char ***v, size_t *n, size_t *cap, const char *s)
{
    char *copy;

    if (fm_strlist_has (*v, *n, s)) {
        return 0;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        char **nv = realloc (*v, nc * sizeof (*nv));
        if (!nv) {
            errno = ENOMEM;
            return -1;
        }
        *v = nv;
        *cap = nc;
    }
    if (!(copy = strdup (s))) {
        errno = ENOMEM;
        return -1;
    }
    (*v)[(*n)++] = copy;
    return 0;
}

void fm_strlist_del (char **v, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp (v[i], s) == 0) {
            free (v[i]);
            v[i] = v[--*n];
            return;
        }
    }
}

void fm_strlist_free (char **v, size_t n)
{
    if (v) {
        for (size_t i = 0; i < n; i++) {
            free (v[i]);
        }
        free (v);
    }
}
