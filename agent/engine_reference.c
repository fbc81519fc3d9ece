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

/* est on the wire; false when it does not fit (a bound beyond 4 s is none) */
static bool to_wire (const fm_clock_estimate_t *est, fm_probe_clock_t *c)
{
    double drift_bound = ceil (est->drift_bound_ppb);

    if (!est->valid || llabs (est->offset_ns) > FM_PROBE_OFFSET_MAX_NS
        || !(fabs (est->drift_ppb) <= FM_PROBE_DRIFT_MAX_PPT / 1000)
        || est->bound_ns < 0 || est->bound_ns > UINT32_MAX
        || !(drift_bound >= 0 && drift_bound <= UINT32_MAX)) {
        return false;
    }
    *c = (fm_probe_clock_t){.offset_ns = est->offset_ns,
                            .drift_ppt = llround (est->drift_ppb * 1000),
                            .bound_ns = (uint32_t)est->bound_ns,
                            .drift_bound_ppb = (uint32_t)drift_bound};
    return true;
}

/* A reply to node `to` carries our latest estimates of the reference and of
 * `to` (doc/clock.md, Network effect in the agent).
 */
void fm_engine_reference_put_views (fm_engine_t *e, uint16_t to, fm_probe_t *r)
{
    target_t *t = fm_engine_find_target (e, to);

    if (to_wire (&e->ref_view, &r->ref)) {
        r->flags |= FM_PROBE_FLAG_REF;
        r->clock_at = e->ref_view.at_ns;
    }
    /* both from one fm_engine_reference_estimate(): one time */
    if (t && to_wire (&t->view, &r->edge)) {
        r->flags |= FM_PROBE_FLAG_EDGE;
        r->clock_at = t->view.at_ns;
    }
}

/* est of a peer's view carried from its time at to its time now: the
 * offset by the drift, the bound by the drift's bound
 */
static void carry (const fm_probe_clock_t *c, double age, double *offset, double *bound)
{
    *offset = (double)c->offset_ns + (double)c->drift_ppt * 1e-12 * age;
    *bound = (double)c->bound_ns + (double)c->drift_bound_ppb * 1e-9 * fabs (age);
}

/* The candidate through target t, whose estimate est is at engine time now:
 * the edge to t, the mean of both ends' estimates where t sent its own (the
 * role bias of the requesting end cancels), plus t's estimate of the
 * reference (0 for the reference itself). False when t sent none fresh.
 */
static bool
candidate (const target_t *t, const fm_clock_estimate_t *est, fm_clocknet_cand_t *c)
{
    double offset = (double)est->offset_ns, bound = (double)est->bound_ns;
    double drift = est->drift_ppb, drift_bound = est->drift_bound_ppb;
    double age = (double)est->at_ns + (double)est->offset_ns - (double)t->peer_at;
    double ref = 0, ref_bound = 0, ref_drift = 0, ref_drift_bound = 0;
    bool fresh = t->peer_flags != 0 && fabs (age) <= (double)PEER_VIEW_MAX_AGE_NS;

    if (fresh && (t->peer_flags & FM_PROBE_FLAG_EDGE)) {
        double theirs, their_bound;
        double a, b;
        carry (&t->peer_edge, age, &theirs, &their_bound);
        /* weighted as variances: a fallback's microseconds do not spoil a
         * pure-pair estimate, and alike estimates are a plain mean
         */
        a = 1. / fmax (bound * bound, 1.);
        b = 1. / fmax (their_bound * their_bound, 1.);
        a /= a + b;
        b = 1. - a;
        offset = a * offset - b * theirs;
        bound = a * bound + b * their_bound;
        drift = a * drift - b * (double)t->peer_edge.drift_ppt * 1e-3;
        drift_bound = a * drift_bound + b * t->peer_edge.drift_bound_ppb;
    }
    if (t->index != 0) {
        if (!fresh || !(t->peer_flags & FM_PROBE_FLAG_REF)) {
            return false;
        }
        carry (&t->peer_ref, age, &ref, &ref_bound);
        ref_drift = (double)t->peer_ref.drift_ppt * 1e-3;
        ref_drift_bound = t->peer_ref.drift_bound_ppb;
    }
    *c = (fm_clocknet_cand_t){
        .offset_ns = offset + ref,
        .drift_ppb = drift + ref_drift,
        .bound_ns = bound + ref_bound,
        .drift_bound_ppb = drift_bound + ref_drift_bound,
        /* a bound of 0 ns would hand one candidate everything */
        .weight = 1. / fmax (bound * bound + ref_bound * ref_bound, 1.),
    };
    return true;
}

int fm_engine_reference_estimate (fm_engine_t *e,
                                  int64_t now_ns,
                                  fm_clock_estimate_t *out)
{
    fm_clocknet_cand_t *cand = e->cand, m;
    fm_clock_estimate_t direct = {.why = "node 0 is not probed"};
    size_t n = 0;
    unsigned samples[2] = {0, 0};

    e->ref_view = (fm_clock_estimate_t){.why = "no estimate"};
    if (e->my_index == 0) {
        e->ref_view =
            (fm_clock_estimate_t){.valid = true, .why = "ok", .at_ns = now_ns};
        *out = e->ref_view;
        return 0;
    }
    for (size_t i = 0; i < e->ntargets; i++) {
        target_t *t = &e->targets[i];
        fm_clock_estimate_t est;
        int rc = fm_engine_clock_estimate_target (e, t, now_ns, &est, true);
        t->view = est;
        if (t->index == 0) {
            direct = est;
        }
        if (rc == 0 && fm_engine_pairs (e) && candidate (t, &est, &cand[n])) {
            samples[0] += est.samples[0];
            samples[1] += est.samples[1];
            n++;
        }
    }
    if (!fm_engine_pairs (e) || n == 0 || fm_clocknet_combine (cand, n, &m) < 0) {
        *out = direct;
        e->ref_view = direct;
        if (!direct.valid) {
            errno = EAGAIN;
            return -1;
        }
        return 0;
    }
    if (n > 1) {
        e->cnt.clock_combined++;
    }
    *out = (fm_clock_estimate_t){
        .valid = true,
        .why = "ok",
        .at_ns = now_ns,
        .offset_ns = llround (m.offset_ns),
        .drift_ppb = m.drift_ppb,
        .bound_ns = (int64_t)ceil (m.bound_ns),
        .owd_ns = direct.valid ? direct.owd_ns : 0,
        .owd_dir_ns = {direct.valid ? direct.owd_dir_ns[0] : 0,
                       direct.valid ? direct.owd_dir_ns[1] : 0},
        .drift_bound_ppb = m.drift_bound_ppb,
        .samples = {samples[0], samples[1]},
    };
    e->ref_view = *out;
    return 0;
}
