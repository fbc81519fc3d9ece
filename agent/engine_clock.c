/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <linux/errqueue.h>
#include <linux/sockios.h>
#include <linux/net_tstamp.h>
#include <sodium.h>
#include <sys/socket.h>

#include "engine_private.h"

/* Target t's clock estimate at engine time now_ns: huygens, or its fallback
 * over all pairs where huygens refuses or its pure pairs miss the floor that
 * all pairs show (fm_clock_pick). The fallback's longer window knows the drift
 * better, and the drift is what carries an estimate forward to the next.
 * Huygens' offset is the mean of the latest refreshes' (fm_clock_smooth), and
 * a refresh records its own. A valid estimate also becomes t's model for the
 * one-way delays.
 */
int fm_engine_clock_estimate_target (
    fm_engine_t *e, target_t *t, int64_t now_ns, fm_clock_estimate_t *out, bool refresh)
{
    fm_clock_estimate_t pure, alt = {.valid = false, .why = "no fallback"}, picked;
    int rc;

    fm_clock_est_estimate (t->clock, now_ns, &pure);
    if (t->fallback) {
        fm_clock_est_estimate (t->fallback, now_ns, &alt);
    }
    /* out keeps huygens' reason when the fallback has nothing either */
    rc = fm_clock_pick (&pure, &alt, FLOOR_TOLERANCE_NS, out);
    if (rc == 1 && !refresh) {
        e->cnt.clock_fallbacks++;
    }
    /* only huygens' own: the fallback's first estimates improve quickly as
     * its window fills, and their mean lags the newest
     */
    if (rc == 0) {
        picked = *out;
        fm_clock_smooth_apply (&t->smooth, out);
        if (refresh) {
            fm_clock_smooth_add (&t->smooth, &picked);
        }
    } else if (refresh) {
        fm_clock_smooth_init (&t->smooth, SMOOTH_SPAN_NS);
    }
    t->model.valid = rc >= 0;
    if (rc >= 0) {
        t->model.have = true;
        t->model.at = now_ns;
        t->model.theta = out->offset_ns;
        t->model.drift = out->drift_ppb * 1e-9;
        return 0;
    }
    errno = EAGAIN;
    return -1;
}

/* theta at engine time t from t's model; false when out of range */
bool fm_engine_clock_model_theta (const target_t *t, int64_t at, int64_t *theta)
{
    int64_t dt;
    double corr;

    if (!t->model.have || __builtin_sub_overflow (at, t->model.at, &dt)) {
        return false;
    }
    corr = t->model.drift * (double)dt;
    return fabs (corr) < 4e18
           && !__builtin_add_overflow (t->model.theta, (int64_t)llround (corr), theta);
}

static void clock_add (fm_engine_t *e, target_t *t, const fm_clock_sample_t *smp)
{
    t->model.fed = true;
    if (fm_clock_est_add (t->clock, smp) == 1) {
        e->cnt.clock_samples++;
    }
    if (t->fallback) {
        fm_clock_est_add (t->fallback, smp);
    }
}

/* A complete exchange: the naive estimator's sample; huygens follows the
 * one-way delays with it in holdover.
 */
void fm_engine_clock_exchange (fm_engine_t *e,
                               target_t *t,
                               const fm_clock_exchange_t *x)
{
    fm_clock_sample_t smp = {.type = FM_CLOCK_SAMPLE_EXCHANGE, .exchange = *x};

    clock_add (e, t, &smp);
}

/* Feed the coded pair that holds request seq to the target's estimator, each
 * direction once all four of its stamps are known, and only stamps of one
 * kind: a NIC clock and the system clock are different clocks.
 */
void fm_engine_clock_feed_pair (fm_engine_t *e, target_t *t, uint64_t seq)
{
    uint64_t k = seq & ~(uint64_t)1;
    req_t *a = &t->ring[k % RING_SIZE];
    req_t *b = &t->ring[(k + 1) % RING_SIZE];
    fm_clock_sample_t smp = {.type = FM_CLOCK_SAMPLE_PAIR};

    if (!fm_engine_pairs (e) || k + 1 >= t->next_seq || !a->used || a->seq != k
        || !b->used || b->seq != k + 1) {
        return;
    }
    if (!a->pair_out_fed && a->have_t1 && b->have_t1 && a->replied && b->replied
        && a->t2 != 0 && b->t2 != 0) {
        a->pair_out_fed = true;
        if (a->t1_hw != b->t1_hw || a->t2_hw != b->t2_hw || a->t1_hw != a->t2_hw) {
            e->cnt.mixed_stamps++;
        } else {
            smp.pair = (fm_clock_pair_t){.dir = FM_CLOCK_DIR_OUT,
                                         .tx_ns = {a->t1, b->t1},
                                         .rx_ns = {a->t2, b->t2}};
            clock_add (e, t, &smp);
        }
    }
    if (!a->pair_in_fed && a->have_t3 && b->have_t3 && a->t4 != 0 && b->t4 != 0) {
        a->pair_in_fed = true;
        if (a->t3_hw != b->t3_hw || a->t4_hw != b->t4_hw || a->t3_hw != a->t4_hw) {
            e->cnt.mixed_stamps++;
        } else {
            smp.pair = (fm_clock_pair_t){.dir = FM_CLOCK_DIR_IN,
                                         .tx_ns = {a->t3, b->t3},
                                         .rx_ns = {a->t4, b->t4}};
            clock_add (e, t, &smp);
        }
    }
}

int64_t fm_engine_clock_now (fm_engine_t *e, int64_t *host_ns)
{
    int64_t h = fm_time_real_ns ();

    if (host_ns) {
        *host_ns = h;
    }
    return fm_vclock_map (e->vclock, h);
}

double fm_engine_clock_rate_ppb (const fm_engine_t *e)
{
    return e->vclock ? fm_vclock_rate_ppb (e->vclock) : 0.;
}

int fm_engine_clock_estimate (fm_engine_t *e,
                              size_t i,
                              int64_t now_ns,
                              fm_clock_estimate_t *out)
{
    if (i >= e->ntargets) {
        errno = EINVAL;
        return -1;
    }
    return fm_engine_clock_estimate_target (e, &e->targets[i], now_ns, out, true);
}
