/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>

#include "fm/api.h"
#include "report.h"

static int64_t clamp (int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static json_t *quantiles (const fm_quantiles_t *q, int64_t lo, int64_t hi)
{
    if (q->n == 0) {
        return json_null ();
    }
    return json_pack ("{s:I, s:I, s:I, s:I}",
                      "p50",
                      (json_int_t)clamp (q->p50, lo, hi),
                      "p90",
                      (json_int_t)clamp (q->p90, lo, hi),
                      "p99",
                      (json_int_t)clamp (q->p99, lo, hi),
                      "max",
                      (json_int_t)clamp (q->max, lo, hi));
}

static json_t *link_entry (const char *peer,
                           const char *dir,
                           const fm_linkstats_t *s,
                           const fm_quantiles_t *owd,
                           uint64_t sent,
                           uint64_t lost,
                           uint64_t reordered)
{
    uint64_t received;
    json_t *owd_j = s->have_offset
                        ? quantiles (owd, -FM_API_OWD_ABS_MAX_NS, FM_API_OWD_ABS_MAX_NS)
                        : json_null ();

    sent = sent > FM_API_COUNT_MAX ? FM_API_COUNT_MAX : sent;
    lost = lost > sent ? sent : lost;
    received = sent - lost;
    reordered = reordered > received ? received : reordered;
    return json_pack ("{s:s, s:s, s:o, s:o, s:I, s:I, s:I, s:I}",
                      "peer",
                      peer,
                      "dir",
                      dir,
                      "rtt_ns",
                      quantiles (&s->rtt, 0, FM_API_RTT_MAX_NS),
                      "owd_ns",
                      owd_j,
                      "sent",
                      (json_int_t)sent,
                      "received",
                      (json_int_t)received,
                      "lost",
                      (json_int_t)lost,
                      "reordered",
                      (json_int_t)reordered);
}

json_t *fm_agent_report_window (uint64_t seq,
                                int64_t start_ns,
                                int64_t end_ns,
                                const fm_report_clock_t *clock,
                                const char *const *peers,
                                const fm_linkstats_t *stats,
                                size_t n,
                                json_t *health)
{
    json_t *w, *links;

    if (!(links = json_array ())) {
        json_decref (health);
        goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        const fm_linkstats_t *s = &stats[i];
        /* out: our requests; in: the peer's replies to the requests it got */
        json_t *out = link_entry (
            peers[i], "out", s, &s->owd_fwd, s->probes, s->lost_fwd, s->reorder_fwd);
        json_t *in = link_entry (peers[i],
                                 "in",
                                 s,
                                 &s->owd_rev,
                                 s->probes - s->lost_fwd,
                                 s->lost_rev,
                                 s->reorder_rev);
        if (json_array_append_new (links, out) < 0
            || json_array_append_new (links, in) < 0) {
            json_decref (links);
            json_decref (health);
            goto nomem;
        }
    }
    w = json_pack ("{s:I, s:I, s:I, s:o}",
                   "seq",
                   (json_int_t)seq,
                   "start_ns",
                   (json_int_t)start_ns,
                   "end_ns",
                   (json_int_t)end_ns,
                   "links",
                   links);
    if (!w) {
        json_decref (health);
        goto nomem;
    }
    /* set_new takes the reference also when it fails */
    if (health && json_object_set_new (w, "health", health) < 0) {
        json_decref (w);
        goto nomem;
    }
    if (clock && clock->valid) {
        double drift = clock->drift_ppb;
        json_t *c;
        if (!(drift >= -FM_REPORT_DRIFT_MAX_PPB)) {
            drift = -FM_REPORT_DRIFT_MAX_PPB; /* NaN too */
        } else if (drift > FM_REPORT_DRIFT_MAX_PPB) {
            drift = FM_REPORT_DRIFT_MAX_PPB;
        }
        c = json_pack ("{s:I, s:I, s:f}",
                       "offset_ns",
                       (json_int_t)clamp (clock->offset_ns,
                                          -FM_API_CLOCK_ABS_MAX_NS,
                                          FM_API_CLOCK_ABS_MAX_NS),
                       "error_ns",
                       (json_int_t)clamp (clock->error_ns, 0, FM_API_CLOCK_ABS_MAX_NS),
                       "drift_ppb",
                       drift);
        if (!c || json_object_set_new (w, "clock", c) < 0) {
            json_decref (w);
            goto nomem;
        }
    }
    return w;
nomem:
    errno = ENOMEM;
    return NULL;
}

int fm_agent_report_add_drops (json_t *w,
                               const uint64_t counts[FM_API_PROBE_DROP_NREASONS])
{
    static const char *const names[] = {FM_API_PROBE_DROP_REASONS};
    json_t *o = NULL;

    for (int i = 0; i < FM_API_PROBE_DROP_NREASONS; i++) {
        if (counts[i] == 0) {
            continue;
        }
        if ((!o && !(o = json_object ()))
            || json_object_set_new (
                   o,
                   names[i],
                   json_integer ((json_int_t)(counts[i] > FM_API_COUNT_MAX
                                                  ? FM_API_COUNT_MAX
                                                  : counts[i])))
                   < 0) {
            json_decref (o);
            errno = ENOMEM;
            return -1;
        }
    }
    if (o && json_object_set_new (w, "probe_drops", o) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

fm_report_clock_t fm_agent_report_clock (const fm_clock_estimate_t *to_reference)
{
    fm_report_clock_t c = {0};

    if (to_reference && to_reference->valid) {
        c.valid = true;
        c.offset_ns = -to_reference->offset_ns;
        c.error_ns = to_reference->bound_ns;
        c.drift_ppb = -to_reference->drift_ppb;
    }
    return c;
}
