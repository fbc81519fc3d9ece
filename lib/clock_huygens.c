/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "clock_private.h"

/* Huygens: coded probe pairs filtered for purity, then the max-margin fit of
 * offset and drift over the lower envelopes of both directions.
 */

/* the envelope thickness for the bound is the residual at rank n / this */
#define HUYGENS_THICK_DIV 8
/* the most points trimmed per direction */
#define HUYGENS_TRIM_MAX 64

struct sample {
    int64_t t; /* local clock */
    int64_t d; /* one-way measurement, see clock.h */
};

struct ring {
    struct sample *s;
    unsigned head; /* oldest */
    unsigned len;
};

struct huygens {
    struct fm_clock_est est;
    unsigned cap;
    struct ring ring[2];
    fm_clock_point_t *pts[2]; /* estimate scratch, cap each */
};

static void huygens_destroy (struct fm_clock_est *est)
{
    struct huygens *h = fm_clock_container_of (est, struct huygens, est);

    for (int i = 0; i < 2; i++) {
        free (h->ring[i].s);
        free (h->pts[i]);
    }
    free (h);
}

static struct fm_clock_est *huygens_create (const fm_clock_config_t *cfg)
{
    struct huygens *h = calloc (1, sizeof (*h));

    if (!h) {
        return NULL;
    }
    h->cap = cfg->capacity;
    for (int i = 0; i < 2; i++) {
        if (!(h->ring[i].s = calloc (h->cap, sizeof (struct sample)))
            || !(h->pts[i] = calloc (h->cap, sizeof (fm_clock_point_t)))) {
            huygens_destroy (&h->est);
            return NULL;
        }
    }
    return &h->est;
}

static void huygens_reset (struct fm_clock_est *est)
{
    struct huygens *h = fm_clock_container_of (est, struct huygens, est);

    for (int i = 0; i < 2; i++) {
        h->ring[i].head = 0;
        h->ring[i].len = 0;
    }
}

static struct sample *ring_at (struct huygens *h, struct ring *r, unsigned i)
{
    return &r->s[(r->head + i) % h->cap];
}

/* b lies more than window before a (or so far off that a - b overflows) */
static bool older (int64_t a, int64_t b, int64_t window)
{
    int64_t d;

    return !fm_clock_sub (a, b, &d) || d > window;
}

static void
ring_push (struct huygens *h, struct ring *r, struct sample s, int64_t window_ns)
{
    /* forget what fell out of the window behind the newest sample; samples
     * arrive nearly in time order, stragglers are skipped at estimate time
     */
    while (r->len > 0 && older (s.t, ring_at (h, r, 0)->t, window_ns)) {
        r->head = (r->head + 1) % h->cap;
        r->len--;
        h->est.stats.expired++;
    }
    if (r->len == h->cap) {
        r->head = (r->head + 1) % h->cap;
        r->len--;
        h->est.stats.expired++;
    }
    *ring_at (h, r, r->len) = s;
    r->len++;
}

static int huygens_add (struct fm_clock_est *est, const fm_clock_sample_t *s)
{
    struct huygens *h = fm_clock_container_of (est, struct huygens, est);
    const fm_clock_pair_t *p = &s->pair;
    int64_t d0, d1;
    struct sample smp;

    /* an exchange is no coded pair: the generic layer follows the paths
     * with it (holdover), the fit does not use it
     */
    if (s->type == FM_CLOCK_SAMPLE_EXCHANGE && fm_clock_exchange_ok (&s->exchange)) {
        return 0;
    }
    if (s->type != FM_CLOCK_SAMPLE_PAIR
        || (p->dir != FM_CLOCK_DIR_OUT && p->dir != FM_CLOCK_DIR_IN)
        || !fm_clock_sub (p->rx_ns[0], p->tx_ns[0], &d0)
        || !fm_clock_sub (p->rx_ns[1], p->tx_ns[1], &d1)) {
        est->stats.invalid++;
        return 0;
    }
    if (!est->cfg.all_pairs
        && !fm_clock_pair_is_pure (p, est->cfg.guard_ns, est->cfg.max_gap_ns)) {
        est->stats.impure++;
        return 0;
    }
    /* both probes of a pure pair saw the same queue; each is an upper bound on
     * owd +- theta, so the smaller is the better one
     */
    smp.d = d0 < d1 ? d0 : d1;
    smp.t = p->dir == FM_CLOCK_DIR_OUT ? p->tx_ns[0] : p->rx_ns[0];
    ring_push (h, &h->ring[p->dir], smp, est->cfg.window_ns);
    est->stats.accepted++;
    return 1;
}

/* Sort by time. The ring holds samples in arrival order, which is time order
 * but for stragglers, so insertion sort runs in about linear time where
 * qsort() would cost n log n at every estimate.
 */
static void sort_points (fm_clock_point_t *p, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        fm_clock_point_t x = p[i];
        size_t j = i;

        while (j > 0 && p[j - 1].t > x.t) {
            p[j] = p[j - 1];
            j--;
        }
        p[j] = x;
    }
}

/* In-window samples of one direction as points relative to (now, dref), sorted. */
static size_t gather (struct huygens *h,
                      int dir,
                      int64_t now_ns,
                      int64_t dref,
                      int64_t *t_first,
                      int64_t *t_last)
{
    struct ring *r = &h->ring[dir];
    size_t n = 0;
    int64_t sign = dir == FM_CLOCK_DIR_OUT ? 1 : -1;

    for (unsigned i = 0; i < r->len; i++) {
        const struct sample *s = ring_at (h, r, i);
        int64_t dt, dd;

        if (s->t < h->est.fit_from || !fm_clock_sub (s->t, now_ns, &dt)
            || dt < -h->est.cfg.window_ns || dt > h->est.cfg.window_ns
            || !fm_clock_sub (s->d, sign * dref, &dd)) {
            continue;
        }
        if (n == 0 || s->t < *t_first) {
            *t_first = s->t;
        }
        if (n == 0 || s->t > *t_last) {
            *t_last = s->t;
        }
        h->pts[dir][n].t = (double)dt;
        h->pts[dir][n].d = (double)dd;
        n++;
    }
    sort_points (h->pts[dir], n);
    return n;
}

/* How far the point p of direction dir lies above its support line. */
static double residual (const fm_clock_fit_t *fit, int dir, const fm_clock_point_t *p)
{
    double theta = fit->a + fit->b * p->t;

    return dir == FM_CLOCK_DIR_OUT ? p->d - theta - fit->margin
                                   : p->d + theta - fit->margin;
}

/* Leave out the m points of p (sorted) that lie lowest against fit, keeping
 * the order of the rest. Returns how many are left.
 */
static size_t
trim (fm_clock_point_t *p, size_t n, int dir, const fm_clock_fit_t *fit, unsigned m)
{
    double low[HUYGENS_TRIM_MAX], cut;
    unsigned have = 0, below = 0, at_cut;
    size_t kept = 0;

    for (size_t i = 0; i < n; i++) {
        fm_clock_keep_smallest (low, &have, m, residual (fit, dir, &p[i]));
    }
    cut = low[have - 1];
    for (size_t i = 0; i < n; i++) {
        below += residual (fit, dir, &p[i]) < cut;
    }
    /* of the points exactly at the cut, only as many go as make m */
    at_cut = have - below;
    for (size_t i = 0; i < n; i++) {
        double r = residual (fit, dir, &p[i]);

        if (r < cut || (r == cut && at_cut > 0)) {
            at_cut -= r == cut;
            continue;
        }
        p[kept++] = p[i];
    }
    return kept;
}

/* An envelope the fit touches at isolated points is a guess; one with many
 * points within a few ns of it is well pinned. The thickness (k-th smallest
 * residual) bounds how far each support line may sit above the truth; its
 * effect on theta is half the sum at the middle of the span and grows with the
 * slope uncertainty (sum / span) away from it.
 */
static double offset_bound (const fm_clock_fit_t *fit)
{
    double thick = fit->thick[0] + fit->thick[1];
    double tc = (fit->t_lo + fit->t_hi) / 2;

    return thick / 2 + fabs (tc) * thick / (fit->t_hi - fit->t_lo) + 1.;
}

static double drift_bound (const fm_clock_fit_t *fit)
{
    return (fit->thick[0] + fit->thick[1]) / (fit->t_hi - fit->t_lo);
}

static int envelope_fit (struct huygens *h, const size_t n[2], fm_clock_fit_t *fit)
{
    unsigned k = (unsigned)((n[0] < n[1] ? n[0] : n[1]) / HUYGENS_THICK_DIV);

    return fm_clock_fit (h->pts[0], n[0], h->pts[1], n[1], k > 1 ? k : 1, fit);
}

/* Fit again without each direction's lowest points. Where that leaves too
 * few points or no sound fit, the first fit stands. The bound covers both
 * fits: the truth may be where the lone low points put it.
 */
static void trimmed_fit (struct huygens *h,
                         size_t n[2],
                         fm_clock_fit_t *fit,
                         double *bound,
                         double *rate_bound)
{
    const fm_clock_config_t *cfg = &h->est.cfg;
    fm_clock_fit_t all = *fit;
    size_t left[2];
    unsigned m[2];

    for (int dir = 0; dir < 2; dir++) {
        m[dir] = (unsigned)fmin (fmax (floor ((double)n[dir] * cfg->trim), 1.),
                                 HUYGENS_TRIM_MAX);
        if (n[dir] < cfg->min_samples + m[dir]) {
            return;
        }
    }
    for (int dir = 0; dir < 2; dir++) {
        left[dir] = trim (h->pts[dir], n[dir], dir, &all, m[dir]);
    }
    if (envelope_fit (h, left, fit) < 0 || !(fit->margin > 0)) {
        *fit = all;
        return;
    }
    n[0] = left[0];
    n[1] = left[1];
    *bound = fmax (offset_bound (fit), fabs (fit->a - all.a) + offset_bound (&all));
    *rate_bound = fmax (drift_bound (fit), fabs (fit->b - all.b) + drift_bound (&all));
}

static void
huygens_estimate (struct fm_clock_est *est, int64_t now_ns, fm_clock_estimate_t *out)
{
    struct huygens *h = fm_clock_container_of (est, struct huygens, est);
    int64_t first[2] = {0, 0}, last[2] = {0, 0};
    int64_t dref = 0, span;
    size_t n[2];
    fm_clock_fit_t fit;
    double bound, rate_bound;
    int64_t offset;

    /* theta is near the first out measurement; fitting relative to it keeps
     * the doubles small whatever the clocks' absolute difference
     */
    if (h->ring[FM_CLOCK_DIR_OUT].len > 0) {
        dref = ring_at (h, &h->ring[FM_CLOCK_DIR_OUT], 0)->d;
    }
    if (dref == INT64_MIN) {
        dref++; /* so that -dref exists */
    }
    for (int dir = 0; dir < 2; dir++) {
        n[dir] = gather (h, dir, now_ns, dref, &first[dir], &last[dir]);
        out->samples[dir] = (unsigned)n[dir];
    }
    if (n[0] < est->cfg.min_samples || n[1] < est->cfg.min_samples) {
        fm_clock_refuse (out, "too few pure samples in one direction");
        return;
    }
    span = (last[0] < last[1] ? last[0] : last[1])
           - (first[0] > first[1] ? first[0] : first[1]);
    if (span < est->cfg.min_span_ns || span <= 0) {
        fm_clock_refuse (out, "samples of both directions span too short a time");
        return;
    }
    if (envelope_fit (h, n, &fit) < 0) {
        fm_clock_refuse (out, "envelope fit failed");
        return;
    }
    if (!(fit.margin > 0)) {
        /* some out and in samples sum to a negative round trip: timestamps
         * that cannot be right, and no line through them can be trusted
         */
        fm_clock_refuse (out, "inconsistent timestamps (negative margin)");
        return;
    }
    bound = offset_bound (&fit);
    rate_bound = drift_bound (&fit);
    if (est->cfg.trim > 0) {
        trimmed_fit (h, n, &fit, &bound, &rate_bound);
    }
    if (!isfinite (fit.a) || fabs (fit.a) > 4e18 || !(bound < 9e18)
        || !(fit.margin < 4e18)
        || __builtin_add_overflow ((int64_t)llround (fit.a), dref, &offset)) {
        fm_clock_refuse (out, "estimate out of range");
        return;
    }
    out->valid = true;
    out->offset_ns = offset;
    out->drift_ppb = fit.b * 1e9;
    out->bound_ns = (int64_t)ceil (bound);
    out->owd_ns = (int64_t)llround (fit.margin);
    out->drift_bound_ppb = rate_bound * 1e9;
    out->samples[0] = (unsigned)n[0];
    out->samples[1] = (unsigned)n[1];
}

const struct fm_clock_est_ops fm_clock_huygens_ops = {
    .name = "huygens",
    .create = huygens_create,
    .destroy = huygens_destroy,
    .add = huygens_add,
    .estimate = huygens_estimate,
    .reset = huygens_reset,
};
