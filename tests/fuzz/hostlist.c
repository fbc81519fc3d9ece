/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "hostlist.h"
#include "fuzz.h"

/* Hostlist expressions (lib/hostlist.c). Oracles from hostlist.h: at most
 * max_hosts names of 1..255 printable characters; find() returns the first
 * occurrence; compress() of the list expands back to the same list.
 */

/* Small enough that a cartesian product cannot make one input take seconds. */
#define MAX_HOSTS 1024

static bool same (const fm_hostlist_t *a, const fm_hostlist_t *b)
{
    if (fm_hostlist_count (a) != fm_hostlist_count (b)) {
        return false;
    }
    for (size_t i = 0; i < fm_hostlist_count (a); i++) {
        if (strcmp (fm_hostlist_nth (a, i), fm_hostlist_nth (b, i)) != 0) {
            return false;
        }
    }
    return true;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *expr = fuzz_strndup (data, size);
    fm_error_t err = {""};
    fm_hostlist_t *hl = fm_hostlist_expand (expr, MAX_HOSTS, &err);
    const char **names;
    size_t n;
    char *text;
    fm_hostlist_t *back;

    if (!hl) {
        fuzz_check (errno == EINVAL);
        fuzz_check (err.text[0] != '\0');
        free (expr);
        return 0;
    }
    n = fm_hostlist_count (hl);
    fuzz_check (n <= MAX_HOSTS);
    fuzz_check (fm_hostlist_nth (hl, n) == NULL);
    if (!(names = malloc ((n ? n : 1) * sizeof (*names)))) {
        abort ();
    }
    for (size_t i = 0; i < n; i++) {
        const char *h = fm_hostlist_nth (hl, i);
        size_t len = strlen (h);
        int at;

        fuzz_check (len >= 1 && len <= 255);
        for (size_t j = 0; j < len; j++) {
            fuzz_check ((unsigned char)h[j] > ' ' && h[j] != 0x7f);
        }
        /* find() is a linear scan: checking every name would be quadratic. */
        if (i < 64) {
            at = fm_hostlist_find (hl, h);
            fuzz_check (at >= 0 && (size_t)at <= i);
            fuzz_check (strcmp (fm_hostlist_nth (hl, (size_t)at), h) == 0);
        }
        names[i] = h;
    }
    text = fm_hostlist_compress (names, n);
    if (text) {
        back = fm_hostlist_expand (text, MAX_HOSTS, &err);
        if (!back || !same (hl, back)) {
            fprintf (stderr,
                     "'%s' compressed to '%s', which %s\n",
                     expr,
                     text,
                     back ? "expands to another list" : err.text);
            abort ();
        }
        fm_hostlist_destroy (back);
        free (text);
    } else {
        /* Only names that the grammar cannot express may be refused. */
        bool special = false;
        for (size_t i = 0; i < n; i++) {
            special |= strpbrk (names[i], "[],") != NULL;
        }
        fuzz_check (errno == EINVAL && special);
    }
    free (names);
    fm_hostlist_destroy (hl);
    free (expr);
    return 0;
}
