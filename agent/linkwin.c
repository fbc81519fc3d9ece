/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linkwin.h"

struct fm_linkwin {
    size_t max;
    size_t n;
    int64_t *rtt;
    int64_t *fwd_raw; /* t2 - t1: delay plus offset */
    int64_t *rev_raw; /* t4 - t3: delay minus offset */
    int64_t best_rtt;
    int64_t best_offset;
    uint64_t replies;
    uint64_t lost;
    uint64_t late;
    uint64_t reorder_rev;
    uint64_t dropped;
    /* cumulative remote counters: last seen, and as of the previous close */
    bool remote_seen;
    uint64_t rem_lost;
    uint64_t rem_reorder;
    uint64_t base_lost;
    uint64_t base_reorder;
};

static int cmp_i64 (const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

int64_t fm_linkwin_quantile_sorted (const int64_t *sorted, size_t n, double q)
{
    double rank = ceil (q * (double)n);
    size_t i = rank < 1 ? 0 : (size_t)rank - 1;

    if (i >= n) {
        i = n - 1;
    }
    return sorted[i];
}

void fm_linkwin_quantiles (int64_t *v, size_t n, fm_quantiles_t *q)
{
    memset (q, 0, sizeof (*q));
    if (n == 0) {
        return;
    }
    qsort (v, n, sizeof (v[0]), cmp_i64);
    q->n = n;
    q->min = v[0];
    q->p50 = fm_linkwin_quantile_sorted (v, n, 0.50);
    q->p90 = fm_linkwin_quantile_sorted (v, n, 0.90);
    q->p99 = fm_linkwin_quantile_sorted (v, n, 0.99);
    q->max = v[n - 1];
}

fm_linkwin_t *fm_linkwin_create (size_t max_samples)
{
    fm_linkwin_t *w;

    if (max_samples == 0 || max_samples > (1u << 24)) {
        errno = EINVAL;
        return NULL;
    }
    if (!(w = calloc (1, sizeof (*w)))) {
        return NULL;
    }
    w->max = max_samples;
    w->rtt = calloc (max_samples, sizeof (int64_t));
    w->fwd_raw = calloc (max_samples, sizeof (int64_t));
    w->rev_raw = calloc (max_samples, sizeof (int64_t));
    if (!w->rtt || !w->fwd_raw || !w->rev_raw) {
        fm_linkwin_destroy (w);
        errno = ENOMEM;
        return NULL;
    }
    return w;
}

void fm_linkwin_destroy (fm_linkwin_t *w)
{
    if (w) {
        int saved = errno;
        free (w->rtt);
        free (w->fwd_raw);
        free (w->rev_raw);
        free (w);
        errno = saved;
    }
}

int fm_linkwin_add (fm_linkwin_t *w, int64_t t1, int64_t t2, int64_t t3, int64_t t4)
{
    int64_t rtt;

    if (t4 < t1 || t3 < t2) {
        errno = EINVAL;
        return -1;
    }
    rtt = (t4 - t1) - (t3 - t2);
    if (rtt < 0) {
        errno = EINVAL;
        return -1;
    }
    if (w->n == w->max) {
        w->dropped++;
        return 0;
    }
    w->rtt[w->n] = rtt;
    w->fwd_raw[w->n] = t2 - t1;
    w->rev_raw[w->n] = t4 - t3;
    /* Queuing only adds delay, so the fastest exchange is the one least
     * distorted by it: its midpoint gives the offset, its half RTT the bound.
     */
    if (w->n == 0 || rtt < w->best_rtt) {
        w->best_rtt = rtt;
        w->best_offset = ((t2 - t1) - (t4 - t3)) / 2;
    }
    w->n++;
    return 0;
}

void fm_linkwin_reply (fm_linkwin_t *w, bool reordered)
{
    w->replies++;
    if (reordered) {
        w->reorder_rev++;
    }
}

void fm_linkwin_timeout (fm_linkwin_t *w)
{
    w->lost++;
}

void fm_linkwin_late (fm_linkwin_t *w)
{
    w->late++;
}

void fm_linkwin_remote (fm_linkwin_t *w,
                        uint64_t sent,
                        uint64_t rx_count,
                        uint64_t rx_reorder)
{
    uint64_t lost = sent > rx_count ? sent - rx_count : 0;

    /* Replies may arrive out of order: keep the cumulative maximum so that
     * an older reply never makes the counters go backwards.
     */
    if (!w->remote_seen || lost > w->rem_lost) {
        w->rem_lost = lost;
    }
    if (!w->remote_seen || rx_reorder > w->rem_reorder) {
        w->rem_reorder = rx_reorder;
    }
    w->remote_seen = true;
}

void fm_linkwin_remote_reset (fm_linkwin_t *w)
{
    w->remote_seen = false;
    w->rem_lost = w->rem_reorder = 0;
    w->base_lost = w->base_reorder = 0;
}

void fm_linkwin_remote_rebase (fm_linkwin_t *w)
{
    w->base_lost = w->rem_lost;
    w->base_reorder = w->rem_reorder;
}

void fm_linkwin_close (fm_linkwin_t *w, fm_linkstats_t *s)
{
    memset (s, 0, sizeof (*s));
    s->samples = w->n;
    if (w->n > 0) {
        s->have_offset = true;
        s->offset_ns = w->best_offset;
        s->offset_err_ns = (w->best_rtt + 1) / 2;
        for (size_t i = 0; i < w->n; i++) {
            w->fwd_raw[i] -= w->best_offset;
            w->rev_raw[i] += w->best_offset;
        }
    }
    fm_linkwin_quantiles (w->rtt, w->n, &s->rtt);
    fm_linkwin_quantiles (w->fwd_raw, w->n, &s->owd_fwd);
    fm_linkwin_quantiles (w->rev_raw, w->n, &s->owd_rev);
    s->probes = w->replies + w->lost;
    s->lost = w->lost;
    s->lost_fwd = w->rem_lost > w->base_lost ? w->rem_lost - w->base_lost : 0;
    if (s->lost_fwd > s->lost) {
        /* The peer already counts requests that have not timed out here yet:
         * leave the rest for the window in which they do.
         */
        s->lost_fwd = s->lost;
    }
    s->lost_rev = s->lost - s->lost_fwd;
    if (s->probes > 0) {
        s->loss_fwd = (double)s->lost_fwd / (double)s->probes;
    }
    if (s->probes > s->lost_fwd) {
        s->loss_rev = (double)s->lost_rev / (double)(s->probes - s->lost_fwd);
    }
    s->reorder_fwd =
        w->rem_reorder > w->base_reorder ? w->rem_reorder - w->base_reorder : 0;
    s->reorder_rev = w->reorder_rev;
    s->late = w->late;
    s->dropped = w->dropped;

    w->base_lost += s->lost_fwd;
    w->base_reorder = w->rem_reorder;
    w->n = 0;
    w->replies = w->lost = w->late = w->reorder_rev = w->dropped = 0;
}
