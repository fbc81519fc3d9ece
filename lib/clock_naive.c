/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "clock.h"
#include "clock_private.h"

/* The baseline: of the exchanges in the window, the one with the smallest
 * round trip gives theta = ((t2 - t1) + (t3 - t4)) / 2, right to within half
 * that round trip whatever the split between directions. Drift comes from the
 * best exchanges of the oldest and the newest third of the window (thirds, so
 * that the two are always at least a third of the window apart).
 */

struct exch {
    int64_t tm;    /* local midpoint (t1 + t4) / 2 */
    int64_t theta; /* ((t2 - t1) + (t3 - t4)) / 2 */
    int64_t rtt;   /* (t4 - t1) - (t3 - t2) */
};

struct naive {
    struct fm_clock_est est;
    unsigned cap;
    unsigned head;
    unsigned len;
    struct exch *x;
};

static void naive_destroy (struct fm_clock_est *est)
{
    struct naive *nv = fm_clock_container_of (est, struct naive, est);

    free (nv->x);
    free (nv);
}

static struct fm_clock_est *naive_create (const fm_clock_config_t *cfg)
{
    struct naive *nv = calloc (1, sizeof (*nv));

    if (!nv || !(nv->x = calloc (cfg->capacity, sizeof (*nv->x)))) {
        free (nv);
        return NULL;
    }
    nv->cap = cfg->capacity;
    return &nv->est;
}

static void naive_reset (struct fm_clock_est *est)
{
    struct naive *nv = fm_clock_container_of (est, struct naive, est);

    nv->head = 0;
    nv->len = 0;
}

static struct exch *at (struct naive *nv, unsigned i)
{
    return &nv->x[(nv->head + i) % nv->cap];
}

/* b lies more than window before a (or so far off that a - b overflows) */
static bool older (int64_t a, int64_t b, int64_t window)
{
    int64_t d;

    return !fm_clock_sub (a, b, &d) || d > window;
}

static int naive_add (struct fm_clock_est *est, const fm_clock_sample_t *s)
{
    struct naive *nv = fm_clock_container_of (est, struct naive, est);
    const fm_clock_exchange_t *x = &s->exchange;
    int64_t d41, d32, d21, d34, sum;
    struct exch e;

    if (s->type != FM_CLOCK_SAMPLE_EXCHANGE || !fm_clock_sub (x->t4, x->t1, &d41)
        || !fm_clock_sub (x->t3, x->t2, &d32) || !fm_clock_sub (x->t2, x->t1, &d21)
        || !fm_clock_sub (x->t3, x->t4, &d34) || d41 < 0 || d32 < 0 || d32 > d41
        || __builtin_add_overflow (d21, d34, &sum)) {
        est->stats.invalid++;
        return 0;
    }
    e.tm = x->t1 + d41 / 2;
    e.rtt = d41 - d32;
    e.theta = sum / 2;
    while (nv->len > 0 && older (e.tm, at (nv, 0)->tm, est->cfg.window_ns)) {
        nv->head = (nv->head + 1) % nv->cap;
        nv->len--;
        est->stats.expired++;
    }
    if (nv->len == nv->cap) {
        nv->head = (nv->head + 1) % nv->cap;
        nv->len--;
        est->stats.expired++;
    }
    *at (nv, nv->len) = e;
    nv->len++;
    est->stats.accepted++;
    return 1;
}

static void
naive_estimate (struct fm_clock_est *est, int64_t now_ns, fm_clock_estimate_t *out)
{
    struct naive *nv = fm_clock_container_of (est, struct naive, est);
    int64_t w = est->cfg.window_ns;
    const struct exch *best = NULL, *part[3] = {NULL, NULL, NULL};
    unsigned n = 0;
    double drift = 0., drift_err = 0., bound, corr;
    int64_t dt, dtheta, offset, age, tlo = 0, thi = 0, span;
    bool any = false;

    /* the thirds divide the time the exchanges cover, not the window: a
     * window still filling has a drift as soon as it spans min_span
     */
    for (unsigned i = 0; i < nv->len; i++) {
        const struct exch *e = at (nv, i);

        if (e->tm >= est->fit_from && fm_clock_sub (now_ns, e->tm, &age) && age <= w
            && age >= -w) {
            tlo = !any || e->tm < tlo ? e->tm : tlo;
            thi = !any || e->tm > thi ? e->tm : thi;
            any = true;
        }
    }
    span = thi - tlo; /* both within the window of now: no overflow */
    for (unsigned i = 0; i < nv->len; i++) {
        const struct exch *e = at (nv, i);
        int third;

        if (e->tm < est->fit_from || !fm_clock_sub (now_ns, e->tm, &age) || age > w
            || age < -w) {
            continue;
        }
        n++;
        if (!best || e->rtt < best->rtt) {
            best = e;
        }
        third = e->tm - tlo > 2 * (span / 3) ? 2 : e->tm - tlo > span / 3 ? 1 : 0;
        if (!part[third] || e->rtt < part[third]->rtt) {
            part[third] = e;
        }
    }
    out->samples[0] = n;
    if (n < est->cfg.min_samples) {
        fm_clock_refuse (out, "too few exchanges");
        return;
    }
    /* An unknown drift is no drift of 0: reported as 0, it made the first
     * second's estimates microseconds off and outside their bounds
     * (clock-bench, 25 ppm), so refuse until the exchanges span min_span.
     */
    if (span < est->cfg.min_span_ns || !part[0] || !part[2]
        || part[2]->tm <= part[0]->tm
        || !fm_clock_sub (part[2]->theta, part[0]->theta, &dtheta)) {
        fm_clock_refuse (out, "exchanges span too short a time to know the drift");
        return;
    }
    drift = (double)dtheta / (double)(part[2]->tm - part[0]->tm);
    drift_err =
        (double)(part[0]->rtt + part[2]->rtt) / 2 / (double)(part[2]->tm - part[0]->tm);
    /* integer differences first: absolute clock readings lose ns as doubles */
    dt = now_ns - best->tm; /* within the window, checked above */
    corr = drift * (double)dt;
    bound = (double)best->rtt / 2 + fabs ((double)dt) * drift_err;
    if (fabs (corr) > 4e18 || bound > 9e18
        || __builtin_add_overflow (best->theta, (int64_t)llround (corr), &offset)) {
        fm_clock_refuse (out, "estimate out of range");
        return;
    }
    out->valid = true;
    out->offset_ns = offset;
    out->drift_ppb = drift * 1e9;
    out->bound_ns = (int64_t)ceil (bound);
    out->owd_ns = best->rtt / 2;
    out->drift_bound_ppb = drift_err * 1e9;
}

const struct fm_clock_est_ops fm_clock_naive_ops = {
    .name = "naive",
    .create = naive_create,
    .destroy = naive_destroy,
    .add = naive_add,
    .estimate = naive_estimate,
    .reset = naive_reset,
};
