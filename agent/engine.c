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

static int64_t real_now (fm_engine_t *e)
{
    return fm_vclock_map (e->vclock, fm_time_real_ns ());
}

bool fm_engine_pairs (const fm_engine_t *e)
{
    return e->cfg.estimator == FM_CLOCK_EST_HUYGENS;
}

static int64_t probe_interval (const fm_engine_t *e, double rate)
{
    /* a pair every two probe intervals: the probe rate stays the same */
    return (int64_t)((fm_engine_pairs (e) ? 2e9 : 1e9) / rate);
}

fm_engine_t *fm_engine_create (const fm_engine_cfg_t *cfg,
                               const struct sockaddr *addr,
                               socklen_t addrlen,
                               fm_error_t *err)
{
    fm_engine_t *e;
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof (ss);

    if (!cfg || !addr || !(cfg->rate > 0 && cfg->rate <= FM_ENGINE_MAX_RATE)
        || (cfg->boost_rate != 0
            && !(cfg->boost_rate > cfg->rate && cfg->boost_rate <= FM_ENGINE_MAX_RATE
                 && cfg->boost_ns > 0))
        || (cfg->estimator != FM_CLOCK_EST_NAIVE
            && cfg->estimator != FM_CLOCK_EST_HUYGENS)
        || cfg->timeout_ns <= 0 || cfg->max_samples == 0 || cfg->early_ns < 0
        || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)) {
        errno = EINVAL;
        fm_errprintf (err, "invalid probe engine configuration");
        return NULL;
    }
    if (!(e = calloc (1, sizeof (*e)))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    e->cfg = *cfg;
    e->family = addr->sa_family;
    e->fd = -1;
    if ((cfg->clock.offset_ns != 0 || cfg->clock.drift_ppb != 0
         || cfg->clock.wander_ppb != 0)
        && !(e->vclock = fm_vclock_create (&cfg->clock, fm_time_real_ns (), err))) {
        goto error;
    }
    e->fd = socket (addr->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (e->fd < 0) {
        fm_errprintf (err, "socket: %s", strerror (errno));
        goto error;
    }
    if (bind (e->fd, addr, addrlen) < 0) {
        fm_errprintf (err, "bind: %s", strerror (errno));
        goto error;
    }
    if (fm_engine_tstamp_ifname (addr, e->ifname) == 0) {
        e->hw = fm_engine_tstamp_hw_on (e->fd, e->ifname);
    }
    if (fm_engine_tstamp_enable (e->fd, true, e->hw) < 0) {
        fm_errprintf (err, "SO_TIMESTAMPING: %s", strerror (errno));
        goto error;
    }
    if (getsockname (e->fd, (struct sockaddr *)&ss, &sslen) < 0) {
        fm_errprintf (err, "getsockname: %s", strerror (errno));
        goto error;
    }
    e->port = ntohs (ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                             : ((struct sockaddr_in6 *)&ss)->sin6_port);
    /* A restarted agent must not be confused with its previous life. */
    e->epoch = randombytes_random ();
    for (int i = 0; i < FM_WIRE_NREASONS; i++) {
        e->rl[i] = (fm_ratelimit_t)FM_RATELIMIT_INIT (60, 1);
    }
    e->rl_send = (fm_ratelimit_t)FM_RATELIMIT_INIT (60, 1);
    return e;
error:
    fm_engine_destroy (e);
    return NULL;
}

static void target_free (target_t *t)
{
    fm_linkwin_destroy (t->win);
    fm_clock_est_destroy (t->clock);
    fm_clock_est_destroy (t->fallback);
    free (t->ring);
}

void fm_engine_destroy (fm_engine_t *e)
{
    if (e) {
        int saved = errno;
        if (e->fd >= 0) {
            close (e->fd);
        }
        fm_vclock_destroy (e->vclock);
        for (size_t i = 0; i < e->ntargets; i++) {
            target_free (&e->targets[i]);
        }
        free (e->targets);
        free (e->cand);
        free (e->requesters);
        free (e->nodes);
        sodium_memzero (e->key, sizeof (e->key));
        free (e);
        errno = saved;
    }
}

int fm_engine_fd (const fm_engine_t *e)
{
    return e->fd;
}

int fm_engine_port (const fm_engine_t *e)
{
    return e->port;
}

/* A fresh target for node index, its first probe at a random phase. */
static int
target_init (fm_engine_t *e, target_t *t, uint16_t index, int64_t now, fm_error_t *err)
{
    int64_t interval = probe_interval (e, e->cfg.rate);

    *t = (target_t){.index = index, .interval = interval};
    /* random phases keep the nodes of a job from probing in lock step */
    t->next_send = now + (int64_t)randombytes_uniform ((uint32_t)interval);
    t->grace_until = now + e->cfg.startup_grace_ns;
    fm_clock_smooth_init (&t->smooth, SMOOTH_SPAN_NS);
    if (!(t->win = fm_linkwin_create (e->cfg.max_samples))
        || !(t->clock = fm_clock_est_create (e->cfg.estimator, &e->ccfg, err))
        || (fm_engine_pairs (e)
            && !(t->fallback =
                     fm_clock_est_create (FM_CLOCK_EST_HUYGENS, &e->fcfg, err)))
        || !(t->ring = calloc (RING_SIZE, sizeof (req_t)))) {
        target_free (t);
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    return 0;
}

int fm_engine_start (fm_engine_t *e,
                     uint64_t job_id,
                     const uint8_t key[FM_PROBE_KEY_SIZE],
                     const fm_node_t *nodes,
                     size_t nnodes,
                     uint16_t my_index,
                     const uint16_t *targets,
                     size_t ntargets,
                     fm_error_t *err)
{
    target_t *tv = NULL;
    fm_node_t *nv = NULL;
    requester_t *rv = NULL;
    fm_clocknet_cand_t *cv = NULL;
    int64_t now = fm_time_mono_ns ();
    size_t made = 0;

    if (e->started) {
        errno = EINVAL;
        return fm_errprintf (err, "probe engine already started");
    }
    if (nnodes == 0 || nnodes > FM_ENGINE_MAX_NODES || my_index >= nnodes
        || ntargets >= nnodes) {
        errno = EINVAL;
        return fm_errprintf (err,
                             "invalid node list (%zu nodes, index %u, %zu targets)",
                             nnodes,
                             my_index,
                             ntargets);
    }
    for (size_t i = 0; i < nnodes; i++) {
        if (nodes[i].addr.ss_family != AF_UNSPEC
            && nodes[i].addr.ss_family != e->family) {
            errno = EINVAL;
            return fm_errprintf (
                err, "node %s: address family differs from ours", nodes[i].name);
        }
    }
    for (size_t i = 0; i < ntargets; i++) {
        if (targets[i] >= nnodes || targets[i] == my_index) {
            errno = EINVAL;
            return fm_errprintf (err, "invalid target index %u", targets[i]);
        }
    }
    if (!(nv = calloc (nnodes, sizeof (*nv))) || !(rv = calloc (nnodes, sizeof (*rv)))
        || (ntargets > 0 && !(tv = calloc (ntargets, sizeof (*tv))))
        || !(cv = calloc (ntargets + 1, sizeof (*cv)))) {
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        goto fail;
    }
    memcpy (nv, nodes, nnodes * sizeof (*nv));
    /* and enough samples at slow rates: 64 per direction */
    fm_clock_config_default (&e->ccfg);
    e->ccfg.window_ns = (int64_t)fmax (ESTIMATE_WINDOW_NS, 128e9 / e->cfg.rate);
    /* few probes of a jittered path come through unqueued: the fallback
     * needs a much longer window to pin its envelope (doc/clock.md, Fallback)
     */
    e->fcfg = e->ccfg;
    e->fcfg.all_pairs = true;
    /* under jitter the fallback's envelope rests on its lowest ~2 %: none to spare */
    e->ccfg.trim = ESTIMATE_TRIM;
    if (e->fcfg.window_ns < FALLBACK_WINDOW_NS) {
        e->fcfg.window_ns = FALLBACK_WINDOW_NS;
    }
    if (e->fcfg.min_span_ns < FALLBACK_MIN_SPAN_NS) {
        e->fcfg.min_span_ns = FALLBACK_MIN_SPAN_NS;
    }
    for (; made < ntargets; made++) {
        if (target_init (e, &tv[made], targets[made], now, err) < 0) {
            goto fail;
        }
    }
    e->job_id = job_id;
    memcpy (e->key, key, FM_PROBE_KEY_SIZE);
    e->nodes = nv;
    e->nnodes = nnodes;
    e->requesters = rv;
    e->targets = tv;
    e->ntargets = ntargets;
    e->cand = cv;
    e->my_index = my_index;
    e->started = true;
    return 0;
fail:
    for (size_t i = 0; i < made; i++) {
        target_free (&tv[i]);
    }
    free (tv);
    free (rv);
    free (nv);
    free (cv);
    return -1;
}

int fm_engine_set_targets (fm_engine_t *e,
                           const uint16_t *targets,
                           size_t ntargets,
                           fm_error_t *err)
{
    target_t *tv = NULL;
    fm_clocknet_cand_t *cv;
    int64_t now = fm_time_mono_ns ();
    int *moved_to = NULL;
    size_t made = 0;

    if (!e->started || ntargets >= e->nnodes) {
        errno = EINVAL;
        return fm_errprintf (
            err, "invalid targets (%zu of %zu nodes)", ntargets, e->nnodes);
    }
    for (size_t i = 0; i < ntargets; i++) {
        if (targets[i] >= e->nnodes || targets[i] == e->my_index) {
            errno = EINVAL;
            return fm_errprintf (err, "invalid target index %u", targets[i]);
        }
    }
    if ((ntargets > 0 && !(tv = calloc (ntargets, sizeof (*tv))))
        || !(moved_to = malloc ((e->ntargets + 1) * sizeof (*moved_to)))
        || !(cv = calloc (ntargets + 1, sizeof (*cv)))) {
        free (tv);
        free (moved_to);
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    for (size_t i = 0; i < e->ntargets; i++) {
        moved_to[i] = -1;
    }
    /* a target that stays keeps everything: its window, clock fits, ring */
    for (; made < ntargets; made++) {
        target_t *old = NULL;
        for (size_t i = 0; i < e->ntargets && !old; i++) {
            if (e->targets[i].index == targets[made] && moved_to[i] < 0) {
                old = &e->targets[i];
                moved_to[i] = (int)made;
            }
        }
        if (old) {
            tv[made] = *old;
        } else if (target_init (e, &tv[made], targets[made], now, err) < 0) {
            /* free the new ones only: the others are still e's */
            for (size_t i = 0; i < made; i++) {
                bool kept = false;
                for (size_t j = 0; j < e->ntargets && !kept; j++) {
                    kept = moved_to[j] == (int)i;
                }
                if (!kept) {
                    target_free (&tv[i]);
                }
            }
            free (tv);
            free (moved_to);
            free (cv);
            return -1;
        }
    }
    /* transmit stamps still to come name targets by position */
    for (size_t i = 0; i < TXQ_SIZE; i++) {
        txent_t *tx = &e->txq[i];
        if (tx->used && tx->kind == TX_REQUEST) {
            if (tx->node < e->ntargets && moved_to[tx->node] >= 0) {
                tx->node = (uint16_t)moved_to[tx->node];
            } else {
                tx->used = false;
            }
        }
    }
    for (size_t i = 0; i < e->ntargets; i++) {
        if (moved_to[i] < 0) {
            target_free (&e->targets[i]);
        }
    }
    free (e->targets);
    free (e->cand);
    free (moved_to);
    e->targets = tv;
    e->ntargets = ntargets;
    e->cand = cv;
    return 0;
}

int64_t fm_engine_deadline (const fm_engine_t *e)
{
    int64_t d = INT64_MAX;

    for (size_t i = 0; i < e->ntargets; i++) {
        const target_t *t = &e->targets[i];
        if (t->next_send < d) {
            d = t->next_send;
        }
        if (t->oldest < t->next_seq) {
            const req_t *r = &t->ring[t->oldest % RING_SIZE];
            if (r->sent_mono + e->cfg.timeout_ns < d) {
                d = r->sent_mono + e->cfg.timeout_ns;
            }
        }
    }
    return d;
}

static int send_probe (fm_engine_t *e,
                       const fm_probe_t *p,
                       const fm_node_t *to,
                       tx_kind_t kind,
                       uint16_t node,
                       int64_t *tx_user)
{
    uint8_t buf[FM_PROBE_SIZE];
    txent_t *tx;

    if (fm_wire_encode (p, e->key, buf) < 0) {
        return -1;
    }
    *tx_user = real_now (e);
    if (sendto (e->fd,
                buf,
                sizeof (buf),
                0,
                (const struct sockaddr *)&to->addr,
                to->addrlen)
        < 0) {
        e->cnt.send_errors++;
        fm_log_ratelimited (
            &e->rl_send, LOG_WARNING, "probe to %s: %s", to->name, strerror (errno));
        fm_engine_tstamp_resync (e);
        return -1;
    }
    tx = &e->txq[e->tx_next_id % TXQ_SIZE];
    if (tx->used) {
        e->cnt.no_tx_stamp++;
    }
    *tx = (txent_t){
        .id = e->tx_next_id,
        .used = true,
        .kind = kind,
        .node = node,
        .seq = p->seq,
        .epoch = p->req_epoch,
        .tx_user = *tx_user,
    };
    e->tx_next_id++;
    return 0;
}

static int64_t target_interval (const fm_engine_t *e, const target_t *t, int64_t now)
{
    return now < t->boost_until ? probe_interval (e, e->cfg.boost_rate) : t->interval;
}

static void boost (fm_engine_t *e, target_t *t, int64_t now)
{
    int64_t interval;

    if (e->cfg.boost_rate == 0) {
        return;
    }
    if (now >= t->boost_until) {
        e->cnt.boosts++;
        /* the next probe need not wait out the slow interval */
        interval = probe_interval (e, e->cfg.boost_rate);
        if (t->next_send > now + interval) {
            t->next_send = now + interval;
        }
    }
    t->boost_until = now + e->cfg.boost_ns;
}

static void expire (fm_engine_t *e, target_t *t, int64_t now)
{
    while (t->oldest < t->next_seq) {
        req_t *r = &t->ring[t->oldest % RING_SIZE];
        if (!r->resolved) {
            if (now - r->sent_mono < e->cfg.timeout_ns
                && t->next_seq - t->oldest < RING_SIZE) {
                break;
            }
            r->resolved = true;
            /* sent in the grace time before the peer first answered */
            if (r->sent_mono < t->grace_until
                && (!t->answered || r->seq < t->first_answered)) {
                e->cnt.startup_unanswered++;
            } else {
                fm_linkwin_timeout (t->win);
                boost (e, t, now);
            }
        }
        t->oldest++;
    }
}

static void send_request (fm_engine_t *e, size_t ti, int64_t now)
{
    target_t *t = &e->targets[ti];
    req_t *r = &t->ring[t->next_seq % RING_SIZE];
    fm_probe_t p = {
        .type = FM_PROBE_REQUEST,
        .job_id = e->job_id,
        .src_index = e->my_index,
        .dst_index = t->index,
        .epoch = e->epoch,
        .seq = t->next_seq,
    };
    int64_t tx_user;

    if (e->nodes[t->index].addr.ss_family == AF_UNSPEC || t->gone) {
        return; /* not registered yet, or stopped */
    }
    /* the slot is reused only once its request is resolved (see expire()) */
    *r = (req_t){.seq = t->next_seq, .sent_mono = now, .used = true};
    /* A request that never made it onto the wire times out and counts as
     * lost, which it is from the job's point of view.
     */
    if (send_probe (e, &p, &e->nodes[t->index], TX_REQUEST, (uint16_t)ti, &tx_user)
        == 0) {
        e->cnt.sent_requests++;
    }
    t->next_seq++;
}

void fm_engine_run (fm_engine_t *e, int64_t now)
{
    for (size_t i = 0; i < e->ntargets; i++) {
        target_t *t = &e->targets[i];
        int64_t interval, early;

        expire (e, t, now);
        interval = target_interval (e, t, now);
        /* a quarter interval early at most: one send a run keeps up */
        early = e->cfg.early_ns < interval / 4 ? e->cfg.early_ns : interval / 4;
        if (now >= t->next_send - early) {
            int64_t j = (int64_t)randombytes_uniform ((uint32_t)(interval / 5 + 1));
            send_request (e, i, now);
            if (fm_engine_pairs (e)) {
                /* the second of the pair right behind the first: seq 2k, 2k+1 */
                send_request (e, i, now);
            }
            t->next_send += interval - interval / 10 + j;
            if (t->next_send < now) {
                /* we were stalled: do not burst to catch up */
                t->next_send = now + interval;
            }
            expire (e, t, now);
        }
        if (now - t->model.refreshed
            >= (t->model.fed ? MODEL_REFRESH_NS : MODEL_IDLE_REFRESH_NS)) {
            fm_clock_estimate_t est;
            t->model.refreshed = now;
            t->model.fed = false;
            fm_engine_clock_estimate_target (e, t, real_now (e), &est, false);
        }
    }
}

static void drop (fm_engine_t *e, fm_wire_reason_t why, const char *from)
{
    e->cnt.dropped[why]++;
    fm_log_ratelimited (&e->rl[why],
                        LOG_WARNING,
                        "dropping probe datagrams from %s: %s (%ju so far)",
                        from,
                        fm_wire_reason_name (why),
                        (uintmax_t)e->cnt.dropped[why]);
}

static void handle_request (
    fm_engine_t *e, const fm_probe_t *p, int64_t t2, bool have_rx, bool t2_hw)
{
    requester_t *q = &e->requesters[p->src_index];
    fm_probe_t r;
    int64_t tx_user;

    if (!q->active || q->epoch != p->epoch) {
        *q = (requester_t){.active = true, .epoch = p->epoch};
    } else if (p->seq < q->max_seq) {
        q->rx_reorder++;
    } else if (p->seq == q->max_seq && q->rx_count > 0) {
        e->cnt.duplicate++;
        return;
    }
    q->rx_count++;
    if (p->seq > q->max_seq) {
        q->max_seq = p->seq;
    }
    if (q->t3q_len > 0) {
        q->last = q->t3q[q->t3q_head];
        q->t3q_head = (q->t3q_head + 1) % T3Q_SIZE;
        q->t3q_len--;
        q->have_t3 = true;
    }
    r = (fm_probe_t){
        .type = FM_PROBE_REPLY,
        .flags = (uint16_t)((have_rx && t2_hw ? FM_PROBE_FLAG_T2_HW : 0)
                            | (q->have_t3 && q->last.hw ? FM_PROBE_FLAG_T3_HW : 0)),
        .job_id = e->job_id,
        .src_index = e->my_index,
        .dst_index = p->src_index,
        .epoch = e->epoch,
        .seq = p->seq,
        .t2 = have_rx ? t2 : 0,
        .t3 = q->have_t3 ? q->last.t3 : 0,
        .t3_seq = q->have_t3 ? q->last.seq : FM_PROBE_SEQ_NONE,
        .rx_count = q->rx_count,
        .rx_reorder = q->rx_reorder,
        .req_epoch = p->epoch,
    };
    fm_engine_reference_put_views (e, p->src_index, &r);
    /* the peer's configured address, never the datagram's source: a forged
     * source cannot turn us into a reflector
     */
    if (send_probe (e, &r, &e->nodes[p->src_index], TX_REPLY, p->src_index, &tx_user)
        == 0) {
        e->cnt.sent_replies++;
    }
}

/* A peer stopped: what it leaves unanswered is not loss. */
static void handle_bye (fm_engine_t *e, const fm_probe_t *p)
{
    target_t *t = fm_engine_find_target (e, p->src_index);

    e->requesters[p->src_index].active = false;
    if (!t || t->gone) {
        return;
    }
    t->gone = true;
    t->gone_epoch = p->epoch;
    for (; t->oldest < t->next_seq; t->oldest++) {
        req_t *r = &t->ring[t->oldest % RING_SIZE];
        if (!r->resolved) {
            r->resolved = true;
            e->cnt.peer_gone++;
        }
    }
}

/* A request from a peer that said bye, in a new life: probe it again. */
static void revive (fm_engine_t *e, const fm_probe_t *p)
{
    target_t *t = fm_engine_find_target (e, p->src_index);

    if (t && t->gone && p->epoch != t->gone_epoch) {
        t->gone = false;
        t->answered = false;
        t->grace_until = fm_time_mono_ns () + e->cfg.startup_grace_ns;
    }
}

target_t *fm_engine_find_target (fm_engine_t *e, uint16_t index)
{
    for (size_t i = 0; i < e->ntargets; i++) {
        if (e->targets[i].index == index) {
            return &e->targets[i];
        }
    }
    return NULL;
}

/* One exchange into t's window. In a model window the peer's stamps are
 * taken back to our clock first (both by theta at t1, so that the RTT stays
 * exact): the one-way delays are then the model's, and the window's own
 * min-RTT offset is only the residual, undone at close.
 */
static int window_add (target_t *t, int64_t t1, int64_t t2, int64_t t3, int64_t t4)
{
    int64_t theta;

    if (t->win_mode == WIN_UNSET) {
        t->win_mode = t->model.valid ? WIN_MODEL : WIN_RAW;
    }
    if (t->win_mode == WIN_MODEL) {
        if (!fm_engine_clock_model_theta (t, t1, &theta)
            || __builtin_sub_overflow (t2, theta, &t2)
            || __builtin_sub_overflow (t3, theta, &t3)) {
            errno = EINVAL;
            return -1;
        }
    }
    return fm_linkwin_add (t->win, t1, t2, t3, t4);
}

static void
handle_reply (fm_engine_t *e, const fm_probe_t *p, int64_t t4, bool have_rx, bool t4_hw)
{
    target_t *t = fm_engine_find_target (e, p->src_index);
    req_t *r;

    if (!t || p->req_epoch != e->epoch || p->seq >= t->next_seq) {
        e->cnt.stale++;
        return;
    }
    if (!t->have_peer_epoch || t->peer_epoch != p->epoch) {
        /* the peer restarted: its cumulative counters started again */
        fm_linkwin_remote_reset (t->win);
        t->answered = false;
        t->have_peer_epoch = true;
        t->peer_epoch = p->epoch;
        t->have_max_reply = false;
        /* a restarted peer may come back on another clock */
        fm_clock_est_reset (t->clock);
        if (t->fallback) {
            fm_clock_est_reset (t->fallback);
        }
        fm_clock_smooth_init (&t->smooth, SMOOTH_SPAN_NS);
        t->model.valid = false;
    }
    t->peer_flags = p->flags & (FM_PROBE_FLAG_REF | FM_PROBE_FLAG_EDGE);
    t->peer_at = p->clock_at;
    t->peer_ref = p->ref;
    t->peer_edge = p->edge;
    r = &t->ring[p->seq % RING_SIZE];
    if (!r->used || r->seq != p->seq) {
        e->cnt.stale++;
        return;
    }
    if (r->replied) {
        e->cnt.duplicate++;
        return;
    }
    r->replied = true;
    if (r->resolved) {
        fm_linkwin_late (t->win);
    } else {
        bool reordered = t->have_max_reply && p->seq < t->max_reply_seq;
        r->resolved = true;
        fm_linkwin_reply (t->win, reordered);
        if (!t->have_max_reply || p->seq > t->max_reply_seq) {
            t->max_reply_seq = p->seq;
            t->have_max_reply = true;
        }
    }
    fm_linkwin_remote (t->win, p->seq + 1, p->rx_count, p->rx_reorder);
    if (!t->answered) {
        /* what the peer missed before it knew us is not the fabric's doing */
        t->answered = true;
        t->first_answered = p->seq;
        fm_linkwin_remote_rebase (t->win);
    }
    r->t2 = p->t2;
    r->t2_hw = (p->flags & FM_PROBE_FLAG_T2_HW) != 0;
    r->t4 = have_rx ? t4 : 0;
    r->t4_hw = t4_hw;
    fm_engine_clock_feed_pair (e, t, p->seq);
    /* the reply to an earlier request completes that request's exchange */
    if (p->t3_seq != FM_PROBE_SEQ_NONE && p->t3_seq < t->next_seq) {
        req_t *s = &t->ring[p->t3_seq % RING_SIZE];
        bool t3_hw = (p->flags & FM_PROBE_FLAG_T3_HW) != 0;
        if (s->used && s->seq == p->t3_seq && !s->have_t3 && p->t3 != 0) {
            s->t3 = p->t3;
            s->t3_hw = t3_hw;
            s->have_t3 = true;
            fm_engine_clock_feed_pair (e, t, p->t3_seq);
        }
        if (s->used && s->seq == p->t3_seq && s->replied && !s->sampled && s->have_t1
            && s->t2 != 0 && s->t4 != 0) {
            s->sampled = true;
            /* four stamps of one clock kind per side, or the sample is noise */
            if (s->t1_hw != s->t4_hw || s->t2_hw != t3_hw) {
                e->cnt.mixed_stamps++;
            } else if (window_add (t, s->t1, s->t2, p->t3, s->t4) < 0) {
                e->cnt.bad_sample++;
            } else {
                fm_engine_clock_exchange (
                    e,
                    t,
                    &(fm_clock_exchange_t){
                        .t1 = s->t1, .t2 = s->t2, .t3 = p->t3, .t4 = s->t4});
            }
        }
    }
}

static void format_addr (const struct sockaddr_storage *ss, char *buf, size_t len)
{
    if (getnameinfo ((const struct sockaddr *)ss,
                     sizeof (*ss),
                     buf,
                     len,
                     NULL,
                     0,
                     NI_NUMERICHOST)
        != 0) {
        snprintf (buf, len, "?");
    }
}

static bool same_addr (const struct sockaddr_storage *a,
                       const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family) {
        return false;
    }
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port
               && memcmp (&x->sin6_addr, &y->sin6_addr, sizeof (x->sin6_addr)) == 0;
    }
    return false;
}

static void read_data (fm_engine_t *e)
{
    for (;;) {
        char control[512];
        uint8_t buf[FM_PROBE_SIZE + 1];
        struct sockaddr_storage from;
        struct iovec iov = {.iov_base = buf, .iov_len = sizeof (buf)};
        struct msghdr msg = {
            .msg_name = &from,
            .msg_namelen = sizeof (from),
            .msg_iov = &iov,
            .msg_iovlen = 1,
            .msg_control = control,
            .msg_controllen = sizeof (control),
        };
        struct cmsghdr *c;
        ssize_t n;
        int64_t ts = 0;
        bool have_ts = false, hw = false;
        fm_probe_t p;
        fm_wire_reason_t why;

        if ((n = recvmsg (e->fd, &msg, MSG_DONTWAIT)) < 0) {
            return;
        }
        e->cnt.received++;
        for (c = CMSG_FIRSTHDR (&msg); c; c = CMSG_NXTHDR (&msg, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
                struct scm_timestamping sts;
                memcpy (&sts, CMSG_DATA (c), sizeof (sts));
                have_ts = fm_engine_tstamp_pick (e, &sts, &ts, &hw);
            }
        }
        if (!e->started) {
            continue;
        }
        why = (msg.msg_flags & MSG_TRUNC)
                  ? FM_WIRE_BAD_SIZE
                  : fm_wire_decode (buf, (size_t)n, e->key, e->job_id, e->my_index, &p);
        if (why != FM_WIRE_OK) {
            char host[64];
            format_addr (&from, host, sizeof (host));
            drop (e, why, host);
            continue;
        }
        /* A peer whose agent started again elsewhere (a requeued job, a
         * restart on a new port) sends from an address we do not know yet:
         * answering the old one would go nowhere.  Drop it and let the
         * count make the agent ask fabricd for the peers now.
         */
        if (p.src_index >= e->nnodes
            || !same_addr (&from, &e->nodes[p.src_index].addr)) {
            e->cnt.unknown_sender++;
            continue;
        }
        if (!have_ts) {
            e->cnt.no_rx_stamp++;
        }
        if (have_ts) {
            if (hw) {
                e->cnt.hw_stamps++;
            } else {
                e->cnt.sw_stamps++;
            }
        }
        if (p.type == FM_PROBE_REQUEST) {
            revive (e, &p);
            handle_request (e, &p, ts, have_ts, hw);
        } else if (p.type == FM_PROBE_REPLY) {
            handle_reply (e, &p, ts, have_ts, hw);
        } else {
            handle_bye (e, &p);
        }
    }
}

void fm_engine_input (fm_engine_t *e)
{
    /* stamps first, so that a reply finds its request's t1 already known */
    fm_engine_tstamp_read_errqueue (e);
    read_data (e);
    fm_engine_tstamp_read_errqueue (e);
}

int fm_engine_set_addr (fm_engine_t *e,
                        uint16_t index,
                        const struct sockaddr *addr,
                        socklen_t addrlen)
{
    if (index >= e->nnodes || index == e->my_index || addr->sa_family != e->family
        || addrlen > sizeof (e->nodes[index].addr)) {
        errno = EINVAL;
        return -1;
    }
    memcpy (&e->nodes[index].addr, addr, addrlen);
    e->nodes[index].addrlen = addrlen;
    for (size_t i = 0; i < e->ntargets; i++) {
        if (e->targets[i].index == index && !e->targets[i].answered) {
            e->targets[i].grace_until = fm_time_mono_ns () + e->cfg.startup_grace_ns;
        }
    }
    return 0;
}

size_t fm_engine_ntargets (const fm_engine_t *e)
{
    return e->ntargets;
}

uint16_t fm_engine_target (const fm_engine_t *e, size_t i)
{
    return e->targets[i].index;
}

const fm_node_t *fm_engine_node (const fm_engine_t *e, uint16_t index)
{
    return index < e->nnodes ? &e->nodes[index] : NULL;
}

uint16_t fm_engine_my_index (const fm_engine_t *e)
{
    return e->my_index;
}

static int64_t sat_add (int64_t a, int64_t b)
{
    int64_t r;

    if (__builtin_add_overflow (a, b, &r)) {
        return b > 0 ? INT64_MAX : INT64_MIN;
    }
    return r;
}

static void shift_quantiles (fm_quantiles_t *q, int64_t by)
{
    if (q->n > 0) {
        q->min = sat_add (q->min, by);
        q->p50 = sat_add (q->p50, by);
        q->p90 = sat_add (q->p90, by);
        q->p99 = sat_add (q->p99, by);
        q->max = sat_add (q->max, by);
    }
}

void fm_engine_close_window (fm_engine_t *e, fm_linkstats_t *stats)
{
    int64_t now = fm_time_mono_ns ();

    for (size_t i = 0; i < e->ntargets; i++) {
        target_t *t = &e->targets[i];
        fm_linkstats_t *s = &stats[i];

        expire (e, t, now);
        fm_linkwin_close (t->win, s);
        /* the window took its delays against its min-RTT exchange, which
         * here is the offset left after the model's: undo it
         */
        if (t->win_mode == WIN_MODEL && s->have_offset) {
            int64_t theta;
            shift_quantiles (&s->owd_fwd, s->offset_ns);
            shift_quantiles (&s->owd_rev, -s->offset_ns);
            if (fm_engine_clock_model_theta (t, real_now (e), &theta)) {
                s->offset_ns = theta;
            }
        }
        t->win_mode = WIN_UNSET;
    }
}

void fm_engine_goodbye (fm_engine_t *e)
{
    if (!e->started) {
        return;
    }
    for (size_t i = 0; i < e->nnodes; i++) {
        fm_probe_t p = {
            .type = FM_PROBE_BYE,
            .job_id = e->job_id,
            .src_index = e->my_index,
            .dst_index = (uint16_t)i,
            .epoch = e->epoch,
        };
        int64_t tx_user;
        if (i != e->my_index && e->nodes[i].addr.ss_family != AF_UNSPEC) {
            send_probe (e, &p, &e->nodes[i], TX_BYE, (uint16_t)i, &tx_user);
        }
    }
}

bool fm_engine_hw_stamps (const fm_engine_t *e, const char **ifname)
{
    if (ifname) {
        *ifname = e->ifname[0] ? e->ifname : NULL;
    }
    return e->hw;
}

const fm_engine_counters_t *fm_engine_counters (const fm_engine_t *e)
{
    return &e->cnt;
}
