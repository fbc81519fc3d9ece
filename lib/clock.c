/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "clock.h"
#include "clock_private.h"

/* Holdover (doc/clock.md): the newest measurements per direction whose
 * lowest delay against the model tells a one-way delay change, and how many
 * times the model's bound a change must exceed
 */
#define HOLD_RECENT 16
#define HOLD_SIGMA 16.

static void hold_clear (struct fm_clock_est *est)
{
    est->fit_from = INT64_MIN;
    est->model.valid = false;
    est->holding = false;
    est->returning = false;
}

static void track_clear (struct fm_clock_est *est)
{
    for (int dir = 0; dir < 2; dir++) {
        est->track_next[dir] = 0;
        est->track_len[dir] = 0;
    }
}

static void track_push (struct fm_clock_est *est, int dir, int64_t t, int64_t d)
{
    est->track[dir][est->track_next[dir]] = (struct fm_clock_hold_sample){t, d};
    est->track_next[dir] = (est->track_next[dir] + 1) % FM_CLOCK_HOLD_TRACK;
    if (est->track_len[dir] < FM_CLOCK_HOLD_TRACK) {
        est->track_len[dir]++;
    }
}

/* Every well-formed sample, pure pair or not, goes on the track: each
 * probe's one-way measurement is an upper bound on owd +- theta, whatever
 * queue it met, and the lowest of the newest few is the path's.
 */
static void track_sample (struct fm_clock_est *est, const fm_clock_sample_t *s)
{
    if (s->type == FM_CLOCK_SAMPLE_EXCHANGE) {
        const fm_clock_exchange_t *x = &s->exchange;
        if (fm_clock_exchange_ok (x)) {
            /* both differences fit: fm_clock_exchange_ok checked them */
            track_push (est, FM_CLOCK_DIR_OUT, x->t1, x->t2 - x->t1);
            track_push (est, FM_CLOCK_DIR_IN, x->t4, x->t4 - x->t3);
        }
    } else if (s->type == FM_CLOCK_SAMPLE_PAIR) {
        const fm_clock_pair_t *p = &s->pair;
        int64_t d0, d1;
        if ((p->dir == FM_CLOCK_DIR_OUT || p->dir == FM_CLOCK_DIR_IN)
            && fm_clock_sub (p->rx_ns[0], p->tx_ns[0], &d0)
            && fm_clock_sub (p->rx_ns[1], p->tx_ns[1], &d1)) {
            track_push (est,
                        p->dir,
                        p->dir == FM_CLOCK_DIR_OUT ? p->tx_ns[0] : p->rx_ns[0],
                        d0 < d1 ? d0 : d1);
        }
    }
}

/* The model's theta at t, and its bound there; false when t is too far
 * from the anchor for the arithmetic.
 */
static bool
model_at (const struct fm_clock_model *m, int64_t t, int64_t *theta, double *bound)
{
    int64_t dt;
    double corr;

    if (!fm_clock_sub (t, m->t0, &dt)) {
        return false;
    }
    corr = m->b * (double)dt;
    if (!(fabs (corr) < 4e18)
        || __builtin_add_overflow (m->theta0, (int64_t)llround (corr), theta)) {
        return false;
    }
    *bound = m->bound0 + m->rate_unc * fabs ((double)dt);
    return *bound < 9e18;
}

/* Anchor the model to a valid estimate made at now_ns. */
static void
anchor (struct fm_clock_est *est, int64_t now_ns, const fm_clock_estimate_t *e)
{
    double rate = isfinite (e->drift_bound_ppb) ? e->drift_bound_ppb : 0.;

    est->model = (struct fm_clock_model){
        .valid = isfinite (e->drift_ppb),
        .t0 = now_ns,
        .theta0 = e->offset_ns,
        .b = e->drift_ppb * 1e-9,
        .bound0 = (double)e->bound_ns,
        .rate_unc = fmax (rate, est->cfg.holdover_ppb) * 1e-9,
        .owd0 = e->owd_ns,
    };
}

/* How far the one-way delay of direction dir has moved from the model's
 * baseline: the lowest of (d - theta(t)) out, (d + theta(t)) in, less owd0,
 * over the newest HOLD_RECENT measurements within the window of now_ns.
 * Queueing only adds, so the lowest is the path's; a clock step moves the
 * two directions by opposite amounts, a path change only its own. *oldest:
 * the time of the oldest one used. false: fewer of them, or out of range.
 */
static bool recent_shift (
    struct fm_clock_est *est, int dir, int64_t now_ns, double *shift, int64_t *oldest)
{
    unsigned n = 0;
    double lo = 0.;

    /* newest first */
    for (unsigned i = 0; i < est->track_len[dir] && n < HOLD_RECENT; i++) {
        const struct fm_clock_hold_sample *s =
            &est->track[dir][(est->track_next[dir] + FM_CLOCK_HOLD_TRACK - 1 - i)
                             % FM_CLOCK_HOLD_TRACK];
        int64_t dt, theta, v;
        double bound;

        if (s->t < est->fit_from || !fm_clock_sub (s->t, now_ns, &dt)
            || dt < -est->cfg.window_ns || dt > est->cfg.window_ns) {
            continue;
        }
        if (!model_at (&est->model, s->t, &theta, &bound)
            || (dir == FM_CLOCK_DIR_OUT ? __builtin_sub_overflow (s->d, theta, &v)
                                        : __builtin_add_overflow (s->d, theta, &v))
            || __builtin_sub_overflow (v, est->model.owd0, &v)) {
            return false;
        }
        if (n == 0 || (double)v < lo) {
            lo = (double)v;
        }
        if (n == 0 || s->t < *oldest) {
            *oldest = s->t;
        }
        n++;
    }
    *shift = lo;
    return n == HOLD_RECENT;
}

/* Report the model's prediction at now_ns, with the delay changes seen. */
static bool hold_report (struct fm_clock_est *est,
                         int64_t now_ns,
                         const double shift[2],
                         fm_clock_estimate_t *out)
{
    const struct fm_clock_model *m = &est->model;
    int64_t theta, o[2];
    double bound;

    if (!model_at (m, now_ns, &theta, &bound)) {
        return false;
    }
    for (int dir = 0; dir < 2; dir++) {
        if (!(fabs (shift[dir]) < 4e18)
            || __builtin_add_overflow (
                m->owd0, (int64_t)llround (shift[dir]), &o[dir])) {
            return false;
        }
    }
    out->valid = true;
    out->holdover = true;
    out->offset_ns = theta;
    out->drift_ppb = m->b * 1e9;
    out->drift_bound_ppb = m->rate_unc * 1e9;
    out->bound_ns = (int64_t)ceil (bound);
    out->owd_dir_ns[FM_CLOCK_DIR_OUT] = o[FM_CLOCK_DIR_OUT];
    out->owd_dir_ns[FM_CLOCK_DIR_IN] = o[FM_CLOCK_DIR_IN];
    out->owd_ns = o[0] / 2 + o[1] / 2;
    return true;
}

/* The estimator's own estimate at now_ns into out (valid or refused). */
static void fit (struct fm_clock_est *est, int64_t now_ns, fm_clock_estimate_t *out)
{
    memset (out, 0, sizeof (*out));
    est->ops->estimate (est, now_ns, out);
    if (out->valid) {
        out->owd_dir_ns[FM_CLOCK_DIR_OUT] = out->owd_ns;
        out->owd_dir_ns[FM_CLOCK_DIR_IN] = out->owd_ns;
    }
}

/* Start the model afresh on the samples from since on. */
static void reanchor (struct fm_clock_est *est,
                      int64_t since,
                      int64_t now_ns,
                      fm_clock_estimate_t *out)
{
    if (est->fit_from < since) {
        est->fit_from = since;
    }
    fit (est, now_ns, out);
    est->stats.reanchors++;
    est->holding = est->returning = false;
    /* without an estimate there is no model: the next one anchors */
    est->model.valid = false;
    if (out->valid) {
        anchor (est, now_ns, out);
    }
}

/* Holdover (doc/clock.md, "Holdover"). Once an estimate has anchored the
 * model, each estimate first checks the newest measurements of both
 * directions against it. While both stay within tol of the baseline, the
 * estimator's own estimate answers and re-anchors the model: steady state
 * is the plain estimator. A change beyond tol, more than the model's bound
 * and drift uncertainty allow, is taken for a path change: the model's
 * prediction answers instead, until the delays are back at the baseline
 * (then the estimate restarts on samples from the return on), or the
 * change has stayed for holdover_ns, or the prediction's own bound has
 * grown to half the change (then the estimate restarts on samples from the
 * change on, and absorbs it as any pairwise estimate would).  A move of
 * both directions by opposite amounts is the clock's, not a path's: the
 * estimate restarts on the newest samples at once.
 */
static void
hold_estimate (struct fm_clock_est *est, int64_t now_ns, fm_clock_estimate_t *out)
{
    double shift[2] = {0., 0.}, tol, bound = 0., worst;
    int64_t oldest[2] = {0, 0}, theta, held;
    bool have, back, clock_moved;

    fit (est, now_ns, out);
    if (est->cfg.holdover_ns == 0) {
        return;
    }
    if (!est->model.valid) {
        if (out->valid) {
            anchor (est, now_ns, out);
        }
        return;
    }
    have = model_at (&est->model, now_ns, &theta, &bound)
           && recent_shift (est, FM_CLOCK_DIR_OUT, now_ns, &shift[0], &oldest[0])
           && recent_shift (est, FM_CLOCK_DIR_IN, now_ns, &shift[1], &oldest[1]);
    /* the bound's growth since t0 is the drift allowance */
    tol = fmax ((double)est->cfg.guard_ns, HOLD_SIGMA * est->model.bound0)
          + (bound - est->model.bound0);
    worst = fmax (fabs (shift[0]), fabs (shift[1]));
    back = have && worst <= tol;
    /* equal and opposite: the paths are as they were and the model's
     * offset is what moved (a wrong drift, a step), which no path does
     */
    clock_moved = have && !back && shift[0] * shift[1] < 0.
                  && fabs (shift[0] + shift[1]) <= tol;
    if (!est->holding && (!have || back)) {
        if (out->valid) {
            anchor (est, now_ns, out);
        }
        return;
    }
    if (clock_moved) {
        reanchor (est, oldest[0] < oldest[1] ? oldest[0] : oldest[1], now_ns, out);
        return;
    }
    if (!est->holding) {
        est->holding = true;
        est->returning = false;
        est->hold_since = now_ns;
        est->stats.holdovers++;
    }
    if (back) {
        /* the delays are back: estimate again from the return on */
        if (!est->returning) {
            est->returning = true;
            est->fit_from = oldest[0] < oldest[1] ? oldest[0] : oldest[1];
            fit (est, now_ns, out);
        }
        if (out->valid) {
            est->holding = est->returning = false;
            anchor (est, now_ns, out);
            return;
        }
    } else {
        est->returning = false;
        if (have
            && (!fm_clock_sub (now_ns, est->hold_since, &held)
                || held >= est->cfg.holdover_ns || 2 * bound >= worst)) {
            /* the change stayed: a clock step explains it as well */
            reanchor (est, est->hold_since, now_ns, out);
            return;
        }
    }
    if (!have || !hold_report (est, now_ns, shift, out)) {
        unsigned n0 = out->samples[0], n1 = out->samples[1];

        memset (out, 0, sizeof (*out));
        out->samples[0] = n0;
        out->samples[1] = n1;
        fm_clock_refuse (out, "holdover: too few recent samples to follow the paths");
    }
}

void fm_clock_config_default (fm_clock_config_t *cfg)
{
    if (!cfg) {
        return;
    }
    cfg->window_ns = 2000000000LL;
    cfg->guard_ns = 1500;
    cfg->max_gap_ns = 200000;
    cfg->all_pairs = false;
    cfg->trim = 0.;
    cfg->min_samples = 16;
    cfg->min_span_ns = 500000000LL;
    cfg->capacity = 8192;
    cfg->holdover_ns = 300LL * 1000000000LL;
    cfg->holdover_ppb = 100.;
}

int fm_clock_config_check (const fm_clock_config_t *cfg, fm_error_t *err)
{
    if (!cfg) {
        errno = EINVAL;
        return fm_errprintf (err, "no clock configuration");
    }
    if (cfg->window_ns <= 0 || cfg->window_ns > FM_CLOCK_WINDOW_MAX_NS) {
        errno = EINVAL;
        return fm_errprintf (err, "clock window must be within (0, 1h]");
    }
    if (cfg->guard_ns < 0 || cfg->guard_ns > cfg->window_ns) {
        errno = EINVAL;
        return fm_errprintf (err, "coded pair guard must be within [0, window]");
    }
    if (cfg->max_gap_ns <= 0 || cfg->max_gap_ns > cfg->window_ns) {
        errno = EINVAL;
        return fm_errprintf (err, "coded pair max gap must be within (0, window]");
    }
    if (!(cfg->trim >= 0. && cfg->trim <= FM_CLOCK_TRIM_MAX)) {
        errno = EINVAL;
        return fm_errprintf (err, "trim must be within [0, %g]", FM_CLOCK_TRIM_MAX);
    }
    if (cfg->min_samples < 2 || cfg->min_samples > cfg->capacity) {
        errno = EINVAL;
        return fm_errprintf (err, "min samples must be within [2, capacity]");
    }
    if (cfg->min_span_ns < 0 || cfg->min_span_ns > cfg->window_ns) {
        errno = EINVAL;
        return fm_errprintf (err, "min span must be within [0, window]");
    }
    if (cfg->capacity > FM_CLOCK_CAPACITY_MAX) {
        errno = EINVAL;
        return fm_errprintf (err, "capacity must be at most %u", FM_CLOCK_CAPACITY_MAX);
    }
    if (cfg->holdover_ns < 0 || cfg->holdover_ns > FM_CLOCK_WINDOW_MAX_NS) {
        errno = EINVAL;
        return fm_errprintf (err, "holdover must be within [0, 1h]");
    }
    if (!(cfg->holdover_ppb >= 0. && cfg->holdover_ppb <= FM_CLOCK_HOLDOVER_PPB_MAX)) {
        errno = EINVAL;
        return fm_errprintf (err,
                             "holdover drift uncertainty must be within [0, 100 ppm]");
    }
    return 0;
}

int fm_clock_est_type_parse (const char *name)
{
    if (name && !strcmp (name, "naive")) {
        return FM_CLOCK_EST_NAIVE;
    }
    if (name && !strcmp (name, "huygens")) {
        return FM_CLOCK_EST_HUYGENS;
    }
    errno = EINVAL;
    return -1;
}

fm_clock_est_t *fm_clock_est_create (fm_clock_est_type_t type,
                                     const fm_clock_config_t *cfg,
                                     fm_error_t *err)
{
    const struct fm_clock_est_ops *ops;
    fm_clock_config_t def;
    struct fm_clock_est *est;

    switch (type) {
    case FM_CLOCK_EST_NAIVE:
        ops = &fm_clock_naive_ops;
        break;
    case FM_CLOCK_EST_HUYGENS:
        ops = &fm_clock_huygens_ops;
        break;
    default:
        errno = EINVAL;
        fm_errprintf (err, "unknown clock estimator type %d", (int)type);
        return NULL;
    }
    if (!cfg) {
        fm_clock_config_default (&def);
        cfg = &def;
    }
    if (fm_clock_config_check (cfg, err) < 0) {
        return NULL;
    }
    if (!(est = ops->create (cfg))) {
        fm_errprintf (err, "%s estimator: out of memory", ops->name);
        return NULL;
    }
    est->ops = ops;
    est->cfg = *cfg;
    memset (&est->stats, 0, sizeof (est->stats));
    track_clear (est);
    hold_clear (est);
    return est;
}

void fm_clock_est_destroy (fm_clock_est_t *est)
{
    if (est) {
        int saved_errno = errno;
        est->ops->destroy (est);
        errno = saved_errno;
    }
}

const char *fm_clock_est_name (const fm_clock_est_t *est)
{
    return est ? est->ops->name : NULL;
}

int fm_clock_est_add (fm_clock_est_t *est, const fm_clock_sample_t *s)
{
    if (!est || !s) {
        errno = EINVAL;
        return -1;
    }
    track_sample (est, s);
    return est->ops->add (est, s);
}

int fm_clock_est_estimate (fm_clock_est_t *est,
                           int64_t now_ns,
                           fm_clock_estimate_t *out)
{
    if (!est || !out) {
        errno = EINVAL;
        return -1;
    }
    hold_estimate (est, now_ns, out);
    out->at_ns = now_ns;
    if (!out->valid) {
        errno = EAGAIN;
        return -1;
    }
    out->why = "ok";
    return 0;
}

void fm_clock_est_stats (const fm_clock_est_t *est, fm_clock_stats_t *stats)
{
    if (est && stats) {
        *stats = est->stats;
    }
}

void fm_clock_est_reset (fm_clock_est_t *est)
{
    if (est) {
        est->ops->reset (est);
        track_clear (est);
        hold_clear (est);
    }
}

int fm_clock_pick (const fm_clock_estimate_t *pure,
                   const fm_clock_estimate_t *all,
                   int64_t floor_tol_ns,
                   fm_clock_estimate_t *out)
{
    int64_t above;

    if (!all->valid) {
        *out = *pure;
        return pure->valid ? 0 : -1;
    }
    /* Every probe's delay is an upper bound on owd +- theta, queued or not, so
     * the fallback sees the floor. Pure pairs whose envelope stays above it met
     * equal queues by chance, as under per-packet jitter, not no queue. A
     * model anchored on them goes into holdover as the truth shows through;
     * a real path change holds both models, and either serves.
     */
    if (!pure->valid || pure->holdover
        || !fm_clock_sub (pure->owd_ns, all->owd_ns, &above) || above > floor_tol_ns) {
        *out = *all;
        return 1;
    }
    *out = *pure;
    /* the fallback's longer window pins the slope better */
    if (!all->holdover && all->drift_bound_ppb < pure->drift_bound_ppb) {
        out->drift_ppb = all->drift_ppb;
        out->drift_bound_ppb = all->drift_bound_ppb;
    }
    return 0;
}

bool fm_clock_pair_is_pure (const fm_clock_pair_t *p,
                            int64_t guard_ns,
                            int64_t max_gap_ns)
{
    int64_t txg, rxg, dev;

    if (!p || !fm_clock_sub (p->tx_ns[1], p->tx_ns[0], &txg)
        || !fm_clock_sub (p->rx_ns[1], p->rx_ns[0], &rxg)) {
        return false;
    }
    if (txg <= 0 || rxg <= 0 || txg > max_gap_ns) {
        return false;
    }
    dev = rxg - txg; /* both in (0, INT64_MAX]: cannot overflow */
    return dev <= guard_ns && dev >= -guard_ns;
}
