/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */

/* The mean of a peer's recent offsets (doc/clock.md, Smoothing). */

#include "config.h"

#include <math.h>
#include <string.h>

#include "clock.h"
#include "clock_private.h"

void fm_clock_smooth_init (fm_clock_smooth_t *s, int64_t span_ns)
{
    memset (s, 0, sizeof (*s));
    s->span_ns = span_ns;
}

/* The mean of the held offsets within the span before est, carried to est's
 * time with its drift, as a difference from est's offset; false when none.
 */
static bool held_mean (const fm_clock_smooth_t *s,
                       const fm_clock_estimate_t *est,
                       double *diff,
                       size_t *used)
{
    double sum = 0., rate = est->drift_ppb * 1e-9;
    size_t k = 0;

    for (size_t j = 0; j < s->n; j++) {
        size_t i = (s->next + FM_CLOCK_SMOOTH_MAX - 1 - j) % FM_CLOCK_SMOOTH_MAX;
        int64_t age, delta;

        if (!fm_clock_sub (est->at_ns, s->at_ns[i], &age) || age < 0 || age > s->span_ns
            || !fm_clock_sub (s->offset_ns[i], est->offset_ns, &delta)) {
            continue;
        }
        sum += (double)delta + rate * (double)age;
        k++;
    }
    if (k == 0 || !isfinite (sum)) {
        return false;
    }
    *diff = sum / (double)k;
    *used = k;
    return true;
}

void fm_clock_smooth_add (fm_clock_smooth_t *s, const fm_clock_estimate_t *est)
{
    size_t last = (s->next + FM_CLOCK_SMOOTH_MAX - 1) % FM_CLOCK_SMOOTH_MAX;
    double diff;
    size_t used;

    if (!est->valid) {
        s->n = 0;
        return;
    }
    if (s->n > 0
        && (est->at_ns < s->at_ns[last] || !held_mean (s, est, &diff, &used)
            || fabs (diff) > (double)est->bound_ns)) {
        s->n = 0;
    }
    s->at_ns[s->next] = est->at_ns;
    s->offset_ns[s->next] = est->offset_ns;
    s->next = (s->next + 1) % FM_CLOCK_SMOOTH_MAX;
    if (s->n < FM_CLOCK_SMOOTH_MAX) {
        s->n++;
    }
}

void fm_clock_smooth_apply (const fm_clock_smooth_t *s, fm_clock_estimate_t *est)
{
    double diff, moved;
    size_t used;
    int64_t shift, offset, bound;

    if (!est->valid || !held_mean (s, est, &diff, &used)
        || fabs (diff) > (double)est->bound_ns) {
        return;
    }
    /* est is one more of the offsets averaged */
    moved = diff * (double)used / (double)(used + 1);
    if (!(fabs (moved) < 9e18)) {
        return;
    }
    shift = llround (moved);
    if (__builtin_add_overflow (est->offset_ns, shift, &offset)
        || __builtin_add_overflow (est->bound_ns, shift < 0 ? -shift : shift, &bound)) {
        return;
    }
    est->offset_ns = offset;
    est->bound_ns = bound;
}
