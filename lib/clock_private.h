/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CLOCK_PRIVATE_H
#define FM_CLOCK_PRIVATE_H

/* The estimator vtable behind fm_clock_est_t (linuxptp servo style): each
 * implementation embeds struct fm_clock_est first and recovers itself with
 * container_of. Only clock*.c include this.
 */

#include <stddef.h>

#include "clock.h"

#define fm_clock_container_of(ptr, type, member)                                       \
    ((type *)((char *)(ptr)-offsetof (type, member)))

struct fm_clock_est_ops {
    const char *name;
    /* cfg has passed fm_clock_config_check() */
    struct fm_clock_est *(*create) (const fm_clock_config_t *cfg);
    void (*destroy) (struct fm_clock_est *est);
    /* 1 kept, 0 filtered (the implementation counts it in est->stats) */
    int (*add) (struct fm_clock_est *est, const fm_clock_sample_t *s);
    /* fills out (valid or not); the generic layer sets at_ns and errno */
    void (*estimate) (struct fm_clock_est *est,
                      int64_t now_ns,
                      fm_clock_estimate_t *out);
    void (*reset) (struct fm_clock_est *est);
};

/* Holdover (clock.c, doc/clock.md): the newest one-way measurements per
 * direction, pure or not, and the established model they are checked
 * against.
 */
#define FM_CLOCK_HOLD_TRACK 64

struct fm_clock_hold_sample {
    int64_t t; /* local clock */
    int64_t d; /* one-way measurement, see clock.h */
};

/* theta(t) = theta0 + b (t - t0), good to bound0 at t0 and to rate_unc more
 * per ns away from it
 */
struct fm_clock_model {
    bool valid;
    int64_t t0;      /* local time of the anchoring estimate */
    int64_t theta0;  /* theta at t0 */
    double b;        /* drift, ns per ns */
    double bound0;   /* offset bound at t0 */
    double rate_unc; /* drift uncertainty, ns per ns */
    int64_t owd0;    /* the anchoring estimate's minimum one-way delay */
};

struct fm_clock_est {
    const struct fm_clock_est_ops *ops;
    fm_clock_config_t cfg;
    fm_clock_stats_t stats;
    /* estimates use only samples from this local time on (INT64_MIN: all):
     * holdover restarts the estimate on one side of a delay change
     */
    int64_t fit_from;
    struct fm_clock_hold_sample track[2][FM_CLOCK_HOLD_TRACK];
    unsigned track_next[2], track_len[2];
    struct fm_clock_model model;
    bool holding;       /* a one-way delay change is held off the model */
    bool returning;     /* holding, and the delays look back at the baseline */
    int64_t hold_since; /* local time the change was seen */
};

extern const struct fm_clock_est_ops fm_clock_naive_ops;
extern const struct fm_clock_est_ops fm_clock_huygens_ops;

/* a - b, or false when it does not fit in int64 */
static inline bool fm_clock_sub (int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_sub_overflow (a, b, r);
}

/* An exchange whose stamps are causally ordered on each clock, with
 * differences that fit in int64.
 */
static inline bool fm_clock_exchange_ok (const fm_clock_exchange_t *x)
{
    int64_t d41, d32, d21, d43;

    return fm_clock_sub (x->t4, x->t1, &d41) && fm_clock_sub (x->t3, x->t2, &d32)
           && fm_clock_sub (x->t2, x->t1, &d21) && fm_clock_sub (x->t4, x->t3, &d43)
           && d41 >= 0 && d32 >= 0 && d32 <= d41;
}

/* Keep the k smallest values of a stream in low[0 .. *have), ascending (k >= 1):
 * the fit's thickness and huygens' trim want the few lowest residuals of many.
 */
static inline void
fm_clock_keep_smallest (double *low, unsigned *have, unsigned k, double r)
{
    unsigned j;

    if (*have == k && r >= low[k - 1]) {
        return;
    }
    if (*have < k) {
        (*have)++;
    }
    for (j = *have - 1; j > 0 && low[j - 1] > r; j--) {
        low[j] = low[j - 1];
    }
    low[j] = r;
}

/* Set out to a refusal. */
static inline void fm_clock_refuse (fm_clock_estimate_t *out, const char *why)
{
    out->valid = false;
    out->why = why;
}

#endif /* FM_CLOCK_PRIVATE_H */
