/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_verdict.h"

static int cmp_i64 (const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

    return (a > b) - (a < b);
}

static bool in_reference (const fm_check_result_t *r, const bool *ref)
{
    return !ref || (ref[r->a] && ref[r->b]);
}

/* Median of the good pairs' values (between reference nodes when ref is
 * not NULL); v is scratch of n entries.
 */
static int64_t
median (const fm_check_result_t *r, size_t n, const bool *ref, bool bw, int64_t *v)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        if (r[i].ok && in_reference (&r[i], ref)) {
            v[k++] = bw ? r[i].bw_bps : r[i].lat_p50_ns;
        }
    }
    if (k == 0) {
        return 0;
    }
    qsort (v, k, sizeof (*v), cmp_i64);
    return k % 2 ? v[k / 2] : v[k / 2 - 1] + (v[k / 2] - v[k / 2 - 1]) / 2;
}

static double badness (const fm_check_result_t *r, const fm_check_summary_t *s)
{
    double b = 1.0;

    if (!r->ok) {
        return INFINITY;
    }
    if (s->median_bw_bps > 0) {
        b = r->bw_bps > 0 ? (double)s->median_bw_bps / (double)r->bw_bps : INFINITY;
    }
    if (s->median_lat_p50_ns > 0) {
        double l = (double)r->lat_p50_ns / (double)s->median_lat_p50_ns;
        b = l > b ? l : b;
    }
    return b;
}

static bool is_slow (const fm_check_result_t *r, const fm_check_summary_t *s)
{
    int64_t m = s->median_lat_p50_ns;

    if (!r->ok) {
        return false;
    }
    if (s->median_bw_bps > 0 && r->bw_bps * FM_CHECK_SLOW_FACTOR < s->median_bw_bps) {
        return true;
    }
    return m > 0 && r->lat_p50_ns > FM_CHECK_SLOW_FACTOR * m
           && r->lat_p50_ns - m >= FM_CHECK_LAT_FLOOR_NS;
}

int fm_check_verdict (fm_check_result_t *r,
                      size_t n,
                      uint32_t nnodes,
                      const bool *ref,
                      fm_check_node_t *nodes,
                      fm_check_summary_t *sum)
{
    fm_check_summary_t s = {0};
    int64_t *v;
    size_t nref = 0;

    for (size_t i = 0; i < n; i++) {
        if (r[i].a >= nnodes || r[i].b >= nnodes || r[i].a == r[i].b) {
            errno = EINVAL;
            return -1;
        }
    }
    if (!(v = malloc ((n ? n : 1) * sizeof (*v)))) {
        return -1;
    }
    for (size_t i = 0; ref && i < n; i++) {
        nref += r[i].ok && in_reference (&r[i], ref);
    }
    s.by_reference = nref > 0;
    if (!s.by_reference) {
        ref = NULL;
    }
    s.median_bw_bps = median (r, n, ref, true, v);
    s.median_lat_p50_ns = median (r, n, ref, false, v);
    free (v);
    memset (nodes, 0, nnodes * sizeof (*nodes));
    for (size_t i = 0; i < n; i++) {
        uint32_t ends[2] = {r[i].a, r[i].b};
        r[i].slow = is_slow (&r[i], &s);
        r[i].badness = badness (&r[i], &s);
        for (int e = 0; e < 2; e++) {
            fm_check_node_t *nd = &nodes[ends[e]];
            nd->npairs++;
            nd->nslow += r[i].slow;
            nd->nfailed += !r[i].ok;
        }
    }
    for (uint32_t i = 0; i < nnodes; i++) {
        nodes[i].failed = nodes[i].nfailed * 2 > nodes[i].npairs;
        /* a node that failed is reported as failed, not also as slow */
        nodes[i].slow = !nodes[i].failed && nodes[i].nslow * 2 > nodes[i].npairs;
        s.nfailed_nodes += nodes[i].failed;
        s.nslow_nodes += nodes[i].slow;
    }
    *sum = s;
    return 0;
}

static int cmp_worst (const void *x, const void *y)
{
    const fm_check_result_t *a = x, *b = y;

    if (a->ok != b->ok) {
        return a->ok ? 1 : -1;
    }
    if (a->badness != b->badness) {
        return a->badness > b->badness ? -1 : 1;
    }
    if (a->a != b->a) {
        return a->a < b->a ? -1 : 1;
    }
    return (a->b > b->b) - (a->b < b->b);
}

void fm_check_verdict_sort (fm_check_result_t *r, size_t n)
{
    qsort (r, n, sizeof (*r), cmp_worst);
}
