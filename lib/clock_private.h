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

struct fm_clock_est {
    const struct fm_clock_est_ops *ops;
    fm_clock_config_t cfg;
    fm_clock_stats_t stats;
};

extern const struct fm_clock_est_ops fm_clock_naive_ops;
extern const struct fm_clock_est_ops fm_clock_huygens_ops;

/* a - b, or false when it does not fit in int64 */
static inline bool fm_clock_sub (int64_t a, int64_t b, int64_t *r)
{
    return !__builtin_sub_overflow (a, b, r);
}

/* Set out to a refusal. */
static inline void fm_clock_refuse (fm_clock_estimate_t *out, const char *why)
{
    out->valid = false;
    out->why = why;
}

#endif /* FM_CLOCK_PRIVATE_H */
