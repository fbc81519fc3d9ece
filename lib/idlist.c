/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "idlist.h"

static int resolve (const char *name, bool groups, unsigned int *id, fm_error_t *err)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul (name, &end, 10);
    if (*name >= '0' && *name <= '9') {
        if (errno != 0 || *end != '\0' || v >= UINT_MAX) {
            errno = EINVAL;
            return fm_errprintf (
                err, "bad %s id '%s'", groups ? "group" : "user", name);
        }
        *id = (unsigned int)v;
        return 0;
    }
    if (groups) {
        struct group *gr = getgrnam (name);
        if (!gr) {
            errno = EINVAL;
            return fm_errprintf (err, "unknown group '%s'", name);
        }
        *id = gr->gr_gid;
    } else {
        struct passwd *pw = getpwnam (name);
        if (!pw) {
            errno = EINVAL;
            return fm_errprintf (err, "unknown user '%s'", name);
        }
        *id = pw->pw_uid;
    }
    return 0;
}

int fm_idlist_parse (const char *s, bool groups, fm_idlist_t *out, fm_error_t *err)
{
    fm_idlist_t l = {0};
    char *copy, *tok, *save = NULL;

    if (!s || !out) {
        errno = EINVAL;
        return fm_errprintf (err, "no list");
    }
    if (!(copy = strdup (s))) {
        return fm_errprintf (err, "out of memory");
    }
    for (tok = strtok_r (copy, ", \t", &save); tok;
         tok = strtok_r (NULL, ", \t", &save)) {
        unsigned int id = 0;
        if (l.n == sizeof (l.ids) / sizeof (l.ids[0])) {
            free (copy);
            errno = EINVAL;
            return fm_errprintf (
                err, "more than %zu entries", sizeof (l.ids) / sizeof (l.ids[0]));
        }
        if (resolve (tok, groups, &id, err) < 0) {
            int saved = errno;
            free (copy);
            errno = saved;
            return -1;
        }
        l.ids[l.n++] = id;
    }
    free (copy);
    *out = l;
    return 0;
}

bool fm_idlist_has (const fm_idlist_t *l, unsigned int id)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->ids[i] == id) {
            return true;
        }
    }
    return false;
}
