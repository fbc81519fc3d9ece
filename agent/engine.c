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

#include "clocknet.h"
#include "engine.h"
#include "log.h"
#include "fmtime.h"

/* The least window of the pure-pair estimator. Few pairs are pure on busy
 * software-stamped paths, and over 2 s the envelope rests on a handful of
 * them: it jumps by hundreds of ns as they enter and leave (doc/clock.md).
 */
#define ESTIMATE_WINDOW_NS (16LL * 1000 * 1000 * 1000)
/* The share of its lowest pairs the pure-pair estimator leaves out of its
 * final fit: a lone pair 100-300 ns below the delay floor held the envelope
 * for a whole window (doc/clock.md).
 */
#define ESTIMATE_TRIM (1. / 128)
/* the least window of huygens' fallback over all pairs */
#define FALLBACK_WINDOW_NS (32LL * 1000 * 1000 * 1000)
/* The time the fallback's samples must cover before it answers. Its envelope
 * rests on the few probes that met no queue, and over less than a few seconds
 * those pin no slope: under clock-bench --jitter 100,50 its drifts at 1-2 s
 * were 100-225 ppm off, its offsets 50-130 us (within its bound, but useless).
 */
#define FALLBACK_MIN_SPAN_NS (4LL * 1000 * 1000 * 1000)
/* How far above the fallback's floor huygens' pure pairs may put theirs
 * (doc/clock.md, Fallback): under per-packet jitter pure pairs are pairs
 * whose two probes met equal queues, microseconds above the floor; without
 * jitter the two floors agree within tens of ns.
 */
#define FLOOR_TOLERANCE_NS 500
/* The span of refreshes whose offsets are averaged (doc/clock.md, Smoothing). */
#define SMOOTH_SPAN_NS (4LL * 1000 * 1000 * 1000)
/* A peer's estimates from its replies older than this are not combined:
 * they are refreshed at every reply, and a quiet peer's carried drift
 * error grows (doc/clock.md, Network effect in the agent).
 */
#define PEER_VIEW_MAX_AGE_NS (4LL * 1000 * 1000 * 1000)
/* Outstanding requests per target. Must exceed rate * timeout. */
#define RING_SIZE 2048
/* Transmit stamps not yet read back; stamps arrive within microseconds. */
#define TXQ_SIZE 1024
/* A kernel transmit stamp taken this long after the send is not ours. */
#define TX_STAMP_SLACK_NS (100LL * 1000 * 1000)
/* How often each target's clock estimate is refreshed for the one-way
 * delays: holdover needs the estimator to look at its newest samples often.
 * Without new samples only the window's expiry changes the estimate, so it
 * is refreshed less often then (at default probing, most refreshes).
 */
#define MODEL_REFRESH_NS (250LL * 1000 * 1000)
#define MODEL_IDLE_REFRESH_NS (1000LL * 1000 * 1000)

typedef struct {
    uint64_t seq;
    int64_t sent_mono;
    int64_t t1, t2, t3, t4;
    bool t1_hw, t2_hw, t3_hw, t4_hw;
    bool have_t3;
    bool pair_out_fed, pair_in_fed; /* on the pair's first request */
    bool used;
    bool have_t1;
    bool replied;
    bool resolved; /* replied or counted lost */
    bool sampled;
} req_t;

typedef struct {
    uint16_t index;
    int64_t next_send;
    int64_t interval;
    int64_t boost_until; /* monotonic; probed at the boost rate before it */
    uint64_t next_seq;
    uint64_t oldest; /* lowest seq not yet resolved */
    bool have_max_reply;
    uint64_t max_reply_seq;
    bool have_peer_epoch;
    uint32_t peer_epoch;
    bool gone;               /* it said bye: neither probed nor counted */
    uint32_t gone_epoch;     /* the epoch that said it */
    bool answered;           /* a reply arrived since the address became known */
    uint64_t first_answered; /* the seq of that first reply */
    int64_t grace_until;     /* monotonic; see startup_grace_ns */
    fm_linkwin_t *win;
    fm_clock_est_t *clock;
    /* huygens only: the same envelope fit over every pair, pure or not, for
     * when too few pairs are pure (per-packet jitter queues every probe
     * differently); each probe's delay is still an upper bound
     */
    fm_clock_est_t *fallback;
    fm_clock_smooth_t smooth; /* the picked offsets of the latest refreshes */
    /* The network effect (fm_engine_reference_estimate): our estimate of
     * the peer at the last combination, which our replies to it carry, and
     * the estimates its latest reply carried, at its time peer_at.
     */
    fm_clock_estimate_t view;
    uint16_t peer_flags; /* FM_PROBE_FLAG_REF, FM_PROBE_FLAG_EDGE */
    int64_t peer_at;
    fm_probe_clock_t peer_ref, peer_edge;
    req_t *ring;
    /* The latest valid clock estimate, theta(t) = theta + drift (t - at), for
     * the window's one-way delays: with holdover, a sudden change of one
     * direction's delay shows there instead of half in each (doc/clock.md).
     */
    struct {
        bool valid; /* fresh: a window may start on it */
        bool have;  /* values from an earlier estimate are there */
        int64_t at, theta;
        double drift;      /* ns per ns */
        int64_t refreshed; /* monotonic */
        bool fed;          /* samples since the refresh */
    } model;
    /* how this window's one-way delays are taken, fixed by its first
     * exchange: against the model, or (none yet) its min-RTT exchange
     */
    enum { WIN_UNSET, WIN_RAW, WIN_MODEL } win_mode;
} target_t;

#define T3Q_SIZE 8

typedef struct {
    bool hw;
    uint64_t seq;
    int64_t t3;
} t3_t;

/* What we know about requests arriving from one node (responder side). */
typedef struct {
    bool active;
    uint32_t epoch;
    uint64_t rx_count;
    uint64_t rx_reorder;
    uint64_t max_seq;
    /* Transmit stamps of our replies, oldest first, each carried by a later
     * reply: two replies of a coded pair often leave before the first one's
     * stamp is read, so one slot would lose every pair's first stamp. When
     * none is pending the latest goes again, in case its reply was lost.
     */
    t3_t t3q[T3Q_SIZE];
    unsigned t3q_head, t3q_len;
    bool have_t3;
    t3_t last;
} requester_t;

typedef enum { TX_REQUEST = 1, TX_REPLY = 2, TX_BYE = 3 } tx_kind_t;

typedef struct {
    uint32_t id;
    bool used;
    tx_kind_t kind;
    uint16_t node; /* target index (request) or node index (reply) */
    uint64_t seq;
    uint32_t epoch; /* reply: the requester epoch answered */
    int64_t tx_user;
} txent_t;

struct fm_engine {
    fm_engine_cfg_t cfg;
    fm_vclock_t *vclock; /* NULL: the host clock */
    int fd;
    int family;
    int port;
    bool hw; /* the NIC stamps in hardware: prefer its stamps */
    char ifname[IF_NAMESIZE];
    bool started;
    uint64_t job_id;
    uint8_t key[FM_PROBE_KEY_SIZE];
    uint32_t epoch;
    uint16_t my_index;
    fm_node_t *nodes;
    size_t nnodes;
    requester_t *requesters;
    target_t *targets;
    size_t ntargets;
    uint32_t tx_next_id;
    txent_t txq[TXQ_SIZE];
    fm_engine_counters_t cnt;
    fm_ratelimit_t rl[FM_WIRE_NREASONS];
    fm_ratelimit_t rl_send;
    /* our estimate of the reference at the last combination, for replies */
    fm_clock_estimate_t ref_view;
    fm_clocknet_cand_t *cand; /* one per target */
};

static int64_t real_now (fm_engine_t *e)
{
    return fm_vclock_map (e->vclock, fm_time_real_ns ());
}

static bool pairs (const fm_engine_t *e)
{
    return e->cfg.estimator == FM_CLOCK_EST_HUYGENS;
}

static int64_t probe_interval (const fm_engine_t *e, double rate)
{
    /* a pair every two probe intervals: the probe rate stays the same */
    return (int64_t)((pairs (e) ? 2e9 : 1e9) / rate);
}

static int enable_timestamps (int fd, bool with_id, bool hw)
{
    int flags = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE
                | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_TSONLY;

    if (with_id) {
        flags |= SOF_TIMESTAMPING_OPT_ID;
    }
    if (hw) {
        flags |= SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_RX_HARDWARE
                 | SOF_TIMESTAMPING_RAW_HARDWARE;
    }
    return setsockopt (fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof (flags));
}

/* The interface holding addr, into ifname. -1 when none does (a wildcard). */
static int find_ifname (const struct sockaddr *addr, char *ifname)
{
    struct ifaddrs *ifa, *i;
    int ret = -1;

    if (getifaddrs (&ifa) < 0) {
        return -1;
    }
    for (i = ifa; i && ret < 0; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != addr->sa_family) {
            continue;
        }
        if ((addr->sa_family == AF_INET
             && ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr
                    == ((const struct sockaddr_in *)addr)->sin_addr.s_addr)
            || (addr->sa_family == AF_INET6
                && memcmp (&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
                           &((const struct sockaddr_in6 *)addr)->sin6_addr,
                           sizeof (struct in6_addr))
                       == 0)) {
            snprintf (ifname, IF_NAMESIZE, "%s", i->ifa_name);
            ret = 0;
        }
    }
    freeifaddrs (ifa);
    return ret;
}

/* Whether the NIC of ifname already stamps every packet in hardware. We
 * never change the NIC's setting ourselves (SIOCSHWTSTAMP): it is shared by
 * the whole node, and ptp4l or another tool may own it. An admin enables it
 * with `hwstamp_ctl -i IF -t 1 -r 1`.
 */
static bool hw_stamping_on (int fd, const char *ifname)
{
    struct hwtstamp_config hc = {0};
    struct ifreq ifr;

    memset (&ifr, 0, sizeof (ifr));
    snprintf (ifr.ifr_name, sizeof (ifr.ifr_name), "%s", ifname);
    ifr.ifr_data = (void *)&hc;
    if (ioctl (fd, SIOCGHWTSTAMP, &ifr) < 0) {
        return false;
    }
    return hc.tx_type == HWTSTAMP_TX_ON && hc.rx_filter == HWTSTAMP_FILTER_ALL;
}

/* The stamp of a control message: the NIC's when we use hardware stamps
 * and it gave one, else the kernel's software stamp.
 */
static bool
pick_stamp (fm_engine_t *e, const struct scm_timestamping *sts, int64_t *ts, bool *hw)
{
    if (e->hw && (sts->ts[2].tv_sec != 0 || sts->ts[2].tv_nsec != 0)) {
        *ts = fm_vclock_map (e->vclock, fm_time_from_timespec (&sts->ts[2]));
        *hw = true;
        return true;
    }
    *ts = fm_vclock_map (e->vclock, fm_time_from_timespec (&sts->ts[0]));
    *hw = false;
    return sts->ts[0].tv_sec != 0 || sts->ts[0].tv_nsec != 0;
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
    if (find_ifname (addr, e->ifname) == 0) {
        e->hw = hw_stamping_on (e->fd, e->ifname);
    }
    if (enable_timestamps (e->fd, true, e->hw) < 0) {
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

void fm_engine_destroy (fm_engine_t *e)
{
    if (e) {
        int saved = errno;
        if (e->fd >= 0) {
            close (e->fd);
        }
        fm_vclock_destroy (e->vclock);
        for (size_t i = 0; i < e->ntargets; i++) {
            fm_linkwin_destroy (e->targets[i].win);
            fm_clock_est_destroy (e->targets[i].clock);
            fm_clock_est_destroy (e->targets[i].fallback);
            free (e->targets[i].ring);
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
    int64_t interval = probe_interval (e, e->cfg.rate);
    fm_clock_config_t ccfg, fcfg;

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
    if (!(nv = calloc (nnodes, sizeof (*nv))) || !(rv = calloc (nnodes, sizeof (*rv)))
        || (ntargets > 0 && !(tv = calloc (ntargets, sizeof (*tv))))
        || !(cv = calloc (ntargets + 1, sizeof (*cv)))) {
        goto nomem;
    }
    memcpy (nv, nodes, nnodes * sizeof (*nv));
    /* and enough samples at slow rates: 64 per direction */
    fm_clock_config_default (&ccfg);
    ccfg.window_ns = (int64_t)fmax (ESTIMATE_WINDOW_NS, 128e9 / e->cfg.rate);
    /* few probes of a jittered path come through unqueued: the fallback
     * needs a much longer window to pin its envelope (doc/clock.md, Fallback)
     */
    fcfg = ccfg;
    fcfg.all_pairs = true;
    /* under jitter the fallback's envelope rests on its lowest ~2 %: none to spare */
    ccfg.trim = ESTIMATE_TRIM;
    if (fcfg.window_ns < FALLBACK_WINDOW_NS) {
        fcfg.window_ns = FALLBACK_WINDOW_NS;
    }
    if (fcfg.min_span_ns < FALLBACK_MIN_SPAN_NS) {
        fcfg.min_span_ns = FALLBACK_MIN_SPAN_NS;
    }
    for (size_t i = 0; i < ntargets; i++) {
        if (targets[i] >= nnodes || targets[i] == my_index) {
            errno = EINVAL;
            fm_errprintf (err, "invalid target index %u", targets[i]);
            goto fail;
        }
        tv[i].index = targets[i];
        tv[i].interval = interval;
        /* random phases keep the nodes of a job from probing in lock step */
        tv[i].next_send = now + (int64_t)randombytes_uniform ((uint32_t)interval);
        tv[i].grace_until = now + e->cfg.startup_grace_ns;
        fm_clock_smooth_init (&tv[i].smooth, SMOOTH_SPAN_NS);
        if (!(tv[i].win = fm_linkwin_create (e->cfg.max_samples))
            || !(tv[i].clock = fm_clock_est_create (e->cfg.estimator, &ccfg, err))
            || (pairs (e)
                && !(tv[i].fallback =
                         fm_clock_est_create (FM_CLOCK_EST_HUYGENS, &fcfg, err)))
            || !(tv[i].ring = calloc (RING_SIZE, sizeof (req_t)))) {
            ntargets = i + 1;
            goto nomem;
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
nomem:
    errno = ENOMEM;
    fm_errprintf (err, "out of memory");
fail:
    for (size_t i = 0; tv && i < ntargets; i++) {
        fm_linkwin_destroy (tv[i].win);
        fm_clock_est_destroy (tv[i].clock);
        fm_clock_est_destroy (tv[i].fallback);
        free (tv[i].ring);
    }
    free (tv);
    free (rv);
    free (nv);
    free (cv);
    return -1;
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

/* The kernel numbers every datagram sent with timestamping enabled
 * (SOF_TIMESTAMPING_OPT_ID); we number them the same way to match the stamps.
 * A failed send may or may not have consumed a number, so after one the
 * numbering is restarted: pending stamps are discarded, and the option is
 * cleared and set again, which resets the kernel's counter to zero.
 */
static void read_errqueue (fm_engine_t *e);

static void resync_tx_ids (fm_engine_t *e)
{
    /* only the stamps: reading data here would recurse into the sender */
    read_errqueue (e);
    for (int i = 0; i < TXQ_SIZE; i++) {
        if (e->txq[i].used) {
            e->txq[i].used = false;
            e->cnt.no_tx_stamp++;
        }
    }
    if (enable_timestamps (e->fd, false, e->hw) < 0
        || enable_timestamps (e->fd, true, e->hw) < 0) {
        fm_log_ratelimited (
            &e->rl_send, LOG_ERR, "SO_TIMESTAMPING: %s", strerror (errno));
    }
    e->tx_next_id = 0;
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
        resync_tx_ids (e);
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

/* Target t's clock estimate at engine time now_ns: huygens, or its fallback
 * over all pairs where huygens refuses or its pure pairs miss the floor that
 * all pairs show (fm_clock_pick). The fallback's longer window knows the drift
 * better, and the drift is what carries an estimate forward to the next.
 * Huygens' offset is the mean of the latest refreshes' (fm_clock_smooth), and
 * a refresh records its own. A valid estimate also becomes t's model for the
 * one-way delays.
 */
static int estimate_target (
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
static bool model_theta (const target_t *t, int64_t at, int64_t *theta)
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
            if (pairs (e)) {
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
            estimate_target (e, t, real_now (e), &est, false);
        }
    }
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
static void clock_exchange (fm_engine_t *e, target_t *t, const fm_clock_exchange_t *x)
{
    fm_clock_sample_t smp = {.type = FM_CLOCK_SAMPLE_EXCHANGE, .exchange = *x};

    clock_add (e, t, &smp);
}

/* Feed the coded pair that holds request seq to the target's estimator, each
 * direction once all four of its stamps are known, and only stamps of one
 * kind: a NIC clock and the system clock are different clocks.
 */
static void feed_pair (fm_engine_t *e, target_t *t, uint64_t seq)
{
    uint64_t k = seq & ~(uint64_t)1;
    req_t *a = &t->ring[k % RING_SIZE];
    req_t *b = &t->ring[(k + 1) % RING_SIZE];
    fm_clock_sample_t smp = {.type = FM_CLOCK_SAMPLE_PAIR};

    if (!pairs (e) || k + 1 >= t->next_seq || !a->used || a->seq != k || !b->used
        || b->seq != k + 1) {
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

static void tx_stamp (fm_engine_t *e, uint32_t id, int64_t ts, bool hw)
{
    txent_t *tx = &e->txq[id % TXQ_SIZE];

    if (!tx->used || tx->id != id) {
        e->cnt.no_tx_stamp++;
        return;
    }
    tx->used = false;
    /* a NIC clock is not the system clock: only software stamps can be
     * checked against the time of the send
     */
    if (!hw && (ts < tx->tx_user || ts - tx->tx_user > TX_STAMP_SLACK_NS)) {
        e->cnt.no_tx_stamp++;
        return;
    }
    if (tx->kind == TX_BYE) {
        return;
    }
    if (tx->kind == TX_REQUEST) {
        target_t *t = &e->targets[tx->node];
        req_t *r = &t->ring[tx->seq % RING_SIZE];
        if (r->used && r->seq == tx->seq) {
            r->t1 = ts;
            r->t1_hw = hw;
            r->have_t1 = true;
            feed_pair (e, t, tx->seq);
        }
    } else {
        requester_t *q = &e->requesters[tx->node];
        if (q->active && q->epoch == tx->epoch) {
            if (q->t3q_len == T3Q_SIZE) {
                q->t3q_head = (q->t3q_head + 1) % T3Q_SIZE;
                q->t3q_len--;
            }
            q->t3q[(q->t3q_head + q->t3q_len++) % T3Q_SIZE] =
                (t3_t){.hw = hw, .seq = tx->seq, .t3 = ts};
        }
    }
}

static void read_errqueue (fm_engine_t *e)
{
    for (;;) {
        char control[512];
        char data[64];
        struct iovec iov = {.iov_base = data, .iov_len = sizeof (data)};
        struct msghdr msg = {
            .msg_iov = &iov,
            .msg_iovlen = 1,
            .msg_control = control,
            .msg_controllen = sizeof (control),
        };
        struct cmsghdr *c;
        int64_t ts = 0;
        bool have_ts = false, have_id = false, hw = false;
        uint32_t id = 0;

        if (recvmsg (e->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
            return;
        }
        for (c = CMSG_FIRSTHDR (&msg); c; c = CMSG_NXTHDR (&msg, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
                struct scm_timestamping sts;
                memcpy (&sts, CMSG_DATA (c), sizeof (sts));
                have_ts = pick_stamp (e, &sts, &ts, &hw);
            } else if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR)
                       || (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
                struct sock_extended_err ee;
                memcpy (&ee, CMSG_DATA (c), sizeof (ee));
                if (ee.ee_errno == ENOMSG
                    && ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING) {
                    id = ee.ee_data;
                    have_id = true;
                }
            }
        }
        if (have_ts && have_id) {
            tx_stamp (e, id, ts, hw);
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

static target_t *find_target (fm_engine_t *e, uint16_t index);

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
static void put_views (fm_engine_t *e, uint16_t to, fm_probe_t *r)
{
    target_t *t = find_target (e, to);

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
    put_views (e, p->src_index, &r);
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
    target_t *t = find_target (e, p->src_index);

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
    target_t *t = find_target (e, p->src_index);

    if (t && t->gone && p->epoch != t->gone_epoch) {
        t->gone = false;
        t->answered = false;
        t->grace_until = fm_time_mono_ns () + e->cfg.startup_grace_ns;
    }
}

static target_t *find_target (fm_engine_t *e, uint16_t index)
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
        if (!model_theta (t, t1, &theta) || __builtin_sub_overflow (t2, theta, &t2)
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
    target_t *t = find_target (e, p->src_index);
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
    feed_pair (e, t, p->seq);
    /* the reply to an earlier request completes that request's exchange */
    if (p->t3_seq != FM_PROBE_SEQ_NONE && p->t3_seq < t->next_seq) {
        req_t *s = &t->ring[p->t3_seq % RING_SIZE];
        bool t3_hw = (p->flags & FM_PROBE_FLAG_T3_HW) != 0;
        if (s->used && s->seq == p->t3_seq && !s->have_t3 && p->t3 != 0) {
            s->t3 = p->t3;
            s->t3_hw = t3_hw;
            s->have_t3 = true;
            feed_pair (e, t, p->t3_seq);
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
                clock_exchange (
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

static bool same_addr (const struct sockaddr_storage *a, const struct sockaddr_storage *b)
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
                have_ts = pick_stamp (e, &sts, &ts, &hw);
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
        if (p.src_index >= e->nnodes || !same_addr (&from, &e->nodes[p.src_index].addr)) {
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
    read_errqueue (e);
    read_data (e);
    read_errqueue (e);
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
            if (model_theta (t, real_now (e), &theta)) {
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
    return estimate_target (e, &e->targets[i], now_ns, out, true);
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
        int rc = estimate_target (e, t, now_ns, &est, true);
        t->view = est;
        if (t->index == 0) {
            direct = est;
        }
        if (rc == 0 && pairs (e) && candidate (t, &est, &cand[n])) {
            samples[0] += est.samples[0];
            samples[1] += est.samples[1];
            n++;
        }
    }
    if (!pairs (e) || n == 0 || fm_clocknet_combine (cand, n, &m) < 0) {
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
