/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "clock.h"
#include "clock_private.h"

void fm_clock_config_default (fm_clock_config_t *cfg)
{
    if (!cfg) {
        return;
    }
    cfg->window_ns = 2000000000LL;
    cfg->guard_ns = 1500;
    cfg->max_gap_ns = 200000;
    cfg->min_samples = 16;
    cfg->min_span_ns = 500000000LL;
    cfg->capacity = 8192;
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
    memset (out, 0, sizeof (*out));
    est->ops->estimate (est, now_ns, out);
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
    }
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
