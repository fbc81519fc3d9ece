/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"

#define DEFAULT_MAX_HOSTS ((size_t)1 << 20)
#define HOST_NAME_CAP 255
/* 18 digits always fit in uint64_t, so range arithmetic cannot overflow */
#define NUMBER_DIGITS_MAX 18

struct fm_hostlist {
    char **names;
    size_t count;
};

struct range {
    uint64_t lo;
    uint64_t hi;
    int width;
};

/* One bracket group and the literal text before it; the last segment of a
 * host item may have text and no group.
 */
struct segment {
    const char *text;
    size_t text_len;
    struct range *ranges;
    size_t nranges;
    uint64_t count; /* names the group produces, 1 without a group */
};

struct item {
    struct segment *segs;
    size_t nsegs;
    uint64_t count;
};

static bool is_digit (char c)
{
    return c >= '0' && c <= '9';
}

/* Positions in messages are 1-based columns of expr. */
static int
parse_err (fm_error_t *err, const char *expr, const char *p, const char *what)
{
    errno = EINVAL;
    return fm_errprintf (err, "%s at position %zu", what, (size_t)(p - expr) + 1);
}

/* The character is echoed, so an unprintable one must not reach a log raw. */
static int non_digit (fm_error_t *err, const char *expr, const char *p)
{
    unsigned char c = (unsigned char)*p;
    char what[40];

    if (c > ' ' && c < 0x7f) {
        snprintf (what, sizeof (what), "non-digit '%c' in range", c);
    } else {
        snprintf (what, sizeof (what), "non-digit 0x%02x in range", c);
    }
    return parse_err (err, expr, p, what);
}

static void item_free (struct item *it)
{
    for (size_t i = 0; i < it->nsegs; i++) {
        free (it->segs[i].ranges);
    }
    free (it->segs);
    it->segs = NULL;
    it->nsegs = 0;
}

static int parse_number (
    const char *expr, const char **pp, uint64_t *val, int *width, fm_error_t *err)
{
    const char *p = *pp;
    uint64_t v = 0;
    int n = 0;

    if (!is_digit (*p)) {
        if (*p == ']' || *p == ',' || *p == '-') {
            return parse_err (err, expr, p, "empty range");
        }
        return non_digit (err, expr, p);
    }
    while (is_digit (*p)) {
        if (++n > NUMBER_DIGITS_MAX) {
            return parse_err (err, expr, p, "number too long");
        }
        v = v * 10 + (uint64_t)(*p - '0');
        p++;
    }
    *val = v;
    *width = n;
    *pp = p;
    return 0;
}

/* Parse "lo[-hi](,lo[-hi])*]" starting after '['; leaves *pp after ']'. */
static int parse_group (const char *expr,
                        const char **pp,
                        struct segment *seg,
                        size_t max_hosts,
                        fm_error_t *err)
{
    const char *p = *pp;
    const char *open = p - 1;

    seg->count = 0;
    for (;;) {
        struct range r;
        const char *start = p;
        int hi_width; /* unused: padding follows the lower bound */
        struct range *nr;

        if (*p == '\0') {
            return parse_err (err, expr, open, "unbalanced '['");
        }
        if (parse_number (expr, &p, &r.lo, &r.width, err) < 0) {
            return -1;
        }
        r.hi = r.lo;
        if (*p == '-') {
            p++;
            if (*p == '\0') {
                return parse_err (err, expr, open, "unbalanced '['");
            }
            if (parse_number (expr, &p, &r.hi, &hi_width, err) < 0) {
                return -1;
            }
            if (r.hi < r.lo) {
                char what[64];
                snprintf (what,
                          sizeof (what),
                          "reversed range %llu-%llu",
                          (unsigned long long)r.lo,
                          (unsigned long long)r.hi);
                return parse_err (err, expr, start, what);
            }
        }
        if (*p == '\0') {
            return parse_err (err, expr, open, "unbalanced '['");
        }
        if (*p == '[') {
            return parse_err (err, expr, p, "nested '['");
        }
        if (*p != ',' && *p != ']') {
            return non_digit (err, expr, p);
        }
        seg->count += r.hi - r.lo + 1;
        if (seg->count > max_hosts) {
            errno = EINVAL;
            return fm_errprintf (err, "more than %zu hosts", max_hosts);
        }
        if (!(nr = realloc (seg->ranges, (seg->nranges + 1) * sizeof (*nr)))) {
            return fm_errprintf (err, "out of memory");
        }
        seg->ranges = nr;
        seg->ranges[seg->nranges++] = r;
        if (*p++ == ']') {
            break;
        }
    }
    *pp = p;
    return 0;
}

/* Parse one top-level item (up to an unbracketed ',' or the end). */
static int parse_item (const char *expr,
                       const char **pp,
                       struct item *it,
                       size_t max_hosts,
                       fm_error_t *err)
{
    const char *p = *pp;

    it->count = 1;
    if (*p == ',' || *p == '\0') {
        return parse_err (err, expr, p, "empty host name");
    }
    while (*p != ',' && *p != '\0') {
        struct segment seg = {.text = p, .count = 1};
        struct segment *ns;

        while (*p != ',' && *p != '\0' && *p != '[') {
            if (*p == ']') {
                return parse_err (err, expr, p, "unbalanced ']'");
            }
            if ((unsigned char)*p <= ' ' || *p == 0x7f) {
                return parse_err (err, expr, p, "invalid character");
            }
            p++;
        }
        seg.text_len = (size_t)(p - seg.text);
        if (*p == '[') {
            p++;
            if (parse_group (expr, &p, &seg, max_hosts, err) < 0) {
                free (seg.ranges);
                return -1;
            }
        }
        if (!(ns = realloc (it->segs, (it->nsegs + 1) * sizeof (*ns)))) {
            free (seg.ranges);
            return fm_errprintf (err, "out of memory");
        }
        it->segs = ns;
        it->segs[it->nsegs++] = seg;
        /* both factors are <= max_hosts <= INT_MAX, so the product fits */
        it->count *= seg.count;
        if (it->count > max_hosts) {
            errno = EINVAL;
            return fm_errprintf (err, "more than %zu hosts", max_hosts);
        }
    }
    *pp = p;
    return 0;
}

/* Value of the k-th name of a group (0-based), and its zero-pad width. */
static void group_nth (const struct segment *seg, uint64_t k, uint64_t *val, int *width)
{
    for (size_t i = 0; i < seg->nranges; i++) {
        uint64_t n = seg->ranges[i].hi - seg->ranges[i].lo + 1;
        if (k < n) {
            *val = seg->ranges[i].lo + k;
            *width = seg->ranges[i].width;
            return;
        }
        k -= n;
    }
}

static int expand_item (const struct item *it, fm_hostlist_t *hl, fm_error_t *err)
{
    uint64_t *idx = calloc (it->nsegs, sizeof (*idx));
    int rc = -1;

    if (!idx) {
        return fm_errprintf (err, "out of memory");
    }
    for (uint64_t n = 0; n < it->count; n++) {
        char name[HOST_NAME_CAP + 1];
        size_t len = 0;

        for (size_t s = 0; s < it->nsegs; s++) {
            const struct segment *seg = &it->segs[s];
            int w;

            if (seg->text_len > HOST_NAME_CAP - len) {
                goto toolong;
            }
            memcpy (name + len, seg->text, seg->text_len);
            len += seg->text_len;
            if (seg->nranges > 0) {
                uint64_t v = 0;
                int width = 0;
                group_nth (seg, idx[s], &v, &width);
                w = snprintf (name + len,
                              sizeof (name) - len,
                              "%0*llu",
                              width,
                              (unsigned long long)v);
                if (w < 0 || (size_t)w >= sizeof (name) - len) {
                    goto toolong;
                }
                len += (size_t)w;
            }
        }
        name[len] = '\0';
        if (!(hl->names[hl->count] = strdup (name))) {
            fm_errprintf (err, "out of memory");
            goto out;
        }
        hl->count++;
        /* odometer: the rightmost group varies fastest */
        for (size_t s = it->nsegs; s-- > 0;) {
            if (++idx[s] < it->segs[s].count) {
                break;
            }
            idx[s] = 0;
        }
    }
    rc = 0;
    goto out;
toolong:
    errno = EINVAL;
    fm_errprintf (err, "host name longer than %d characters", HOST_NAME_CAP);
out:
    free (idx);
    return rc;
}

fm_hostlist_t *fm_hostlist_expand (const char *expr, size_t max_hosts, fm_error_t *err)
{
    fm_hostlist_t *hl = NULL;
    struct item *items = NULL;
    size_t nitems = 0;
    uint64_t total = 0;
    const char *p = expr;
    int saved_errno;

    if (!expr) {
        errno = EINVAL;
        fm_errprintf (err, "no hostlist expression");
        return NULL;
    }
    if (max_hosts == 0) {
        max_hosts = DEFAULT_MAX_HOSTS;
    }
    /* indices are returned as int by fm_hostlist_find() */
    if (max_hosts > INT_MAX) {
        max_hosts = INT_MAX;
    }
    /* First pass: parse and count, so the cap is enforced before allocating. */
    while (*p != '\0') {
        struct item *ni;

        if (!(ni = realloc (items, (nitems + 1) * sizeof (*ni)))) {
            fm_errprintf (err, "out of memory");
            goto error;
        }
        items = ni;
        items[nitems] = (struct item){0};
        if (parse_item (expr, &p, &items[nitems++], max_hosts, err) < 0) {
            goto error;
        }
        total += items[nitems - 1].count;
        if (total > max_hosts) {
            errno = EINVAL;
            fm_errprintf (err, "more than %zu hosts", max_hosts);
            goto error;
        }
        if (*p == ',') {
            p++;
            if (*p == '\0') {
                parse_err (err, expr, p, "empty host name");
                goto error;
            }
        }
    }
    if (!(hl = calloc (1, sizeof (*hl)))
        || !(hl->names = calloc (total > 0 ? total : 1, sizeof (char *)))) {
        fm_errprintf (err, "out of memory");
        goto error;
    }
    for (size_t i = 0; i < nitems; i++) {
        if (expand_item (&items[i], hl, err) < 0) {
            goto error;
        }
    }
    for (size_t i = 0; i < nitems; i++) {
        item_free (&items[i]);
    }
    free (items);
    return hl;
error:
    saved_errno = errno;
    for (size_t i = 0; i < nitems; i++) {
        item_free (&items[i]);
    }
    free (items);
    fm_hostlist_destroy (hl);
    errno = saved_errno;
    return NULL;
}

void fm_hostlist_destroy (fm_hostlist_t *hl)
{
    if (hl) {
        int saved_errno = errno;
        if (hl->names) {
            for (size_t i = 0; i < hl->count; i++) {
                free (hl->names[i]);
            }
            free (hl->names);
        }
        free (hl);
        errno = saved_errno;
    }
}

size_t fm_hostlist_count (const fm_hostlist_t *hl)
{
    return hl ? hl->count : 0;
}

const char *fm_hostlist_nth (const fm_hostlist_t *hl, size_t i)
{
    if (!hl || i >= hl->count) {
        return NULL;
    }
    return hl->names[i];
}

int fm_hostlist_find (const fm_hostlist_t *hl, const char *host)
{
    if (!hl || !host) {
        return -1;
    }
    for (size_t i = 0; i < hl->count; i++) {
        if (strcmp (hl->names[i], host) == 0) {
            return (int)i;
        }
    }
    return -1;
}

struct buf {
    char *data;
    size_t len;
    size_t size;
};

static int buf_append (struct buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->size) {
        size_t size = b->size ? b->size : 64;
        char *nd;
        while (b->len + n + 1 > size) {
            size *= 2;
        }
        if (!(nd = realloc (b->data, size))) {
            return -1;
        }
        b->data = nd;
        b->size = size;
    }
    memcpy (b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* Split a name into prefix and trailing number; false when it has none
 * (or one too long to do arithmetic on, which is then kept as text).
 */
static bool
split_suffix (const char *name, size_t *prefix_len, uint64_t *val, int *ndigits)
{
    size_t len = strlen (name);
    size_t i = len;
    uint64_t v = 0;

    while (i > 0 && is_digit (name[i - 1])) {
        i--;
    }
    if (i == len || len - i > NUMBER_DIGITS_MAX) {
        return false;
    }
    for (size_t k = i; k < len; k++) {
        v = v * 10 + (uint64_t)(name[k] - '0');
    }
    *prefix_len = i;
    *val = v;
    *ndigits = (int)(len - i);
    return true;
}

/* Would "%0*llu" of val with width reproduce these digits exactly? */
static bool fits_width (uint64_t val, int width, int ndigits)
{
    int natural = 1;
    for (uint64_t v = val; v >= 10; v /= 10) {
        natural++;
    }
    return ndigits == (natural > width ? natural : width);
}

static int append_number (struct buf *b, uint64_t v, int width)
{
    char num[32];
    int n = snprintf (num, sizeof (num), "%0*llu", width, (unsigned long long)v);
    return buf_append (b, num, (size_t)n);
}

char *fm_hostlist_compress (const char *const *hosts, size_t n)
{
    struct buf b = {0};
    size_t i = 0;

    if (!hosts && n > 0) {
        errno = EINVAL;
        return NULL;
    }
    for (size_t k = 0; k < n; k++) {
        /* a name the expander would reject cannot round-trip */
        if (!hosts[k] || hosts[k][0] == '\0' || strlen (hosts[k]) > HOST_NAME_CAP) {
            errno = EINVAL;
            return NULL;
        }
        for (const char *c = hosts[k]; *c; c++) {
            if (*c == '[' || *c == ']' || *c == ',' || (unsigned char)*c <= ' '
                || *c == 0x7f) {
                errno = EINVAL;
                return NULL;
            }
        }
    }
    if (buf_append (&b, "", 0) < 0) {
        goto nomem;
    }
    while (i < n) {
        size_t g = i; /* the group's first host holds the shared prefix */
        size_t plen, pl;
        uint64_t lo, hi, v;
        int width, nd;
        size_t nranges = 0;
        size_t group_start;

        if (i > 0 && buf_append (&b, ",", 1) < 0) {
            goto nomem;
        }
        if (!split_suffix (hosts[g], &plen, &lo, &width)) {
            if (buf_append (&b, hosts[g], strlen (hosts[g])) < 0) {
                goto nomem;
            }
            i++;
            continue;
        }
        if (buf_append (&b, hosts[g], plen) < 0 || buf_append (&b, "[", 1) < 0) {
            goto nomem;
        }
        group_start = b.len;
        while (i < n && split_suffix (hosts[i], &pl, &lo, &width) && pl == plen
               && strncmp (hosts[i], hosts[g], plen) == 0) {
            hi = lo;
            i++;
            while (i < n && split_suffix (hosts[i], &pl, &v, &nd) && pl == plen
                   && strncmp (hosts[i], hosts[g], plen) == 0 && v == hi + 1
                   && fits_width (v, width, nd)) {
                hi = v;
                i++;
            }
            if ((nranges++ > 0 && buf_append (&b, ",", 1) < 0)
                || append_number (&b, lo, width) < 0
                || (hi != lo
                    && (buf_append (&b, "-", 1) < 0
                        || append_number (&b, hi, width) < 0))) {
                goto nomem;
            }
        }
        if (nranges == 1 && !strchr (b.data + group_start, '-')) {
            /* a lone number needs no brackets: drop the '[' */
            memmove (b.data + group_start - 1,
                     b.data + group_start,
                     b.len - group_start + 1);
            b.len--;
        } else if (buf_append (&b, "]", 1) < 0) {
            goto nomem;
        }
    }
    return b.data;
nomem:
    free (b.data);
    errno = ENOMEM;
    return NULL;
}
