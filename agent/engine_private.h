/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_ENGINE_PRIVATE_H
#define FM_ENGINE_PRIVATE_H

/* The probe engine's state, shared by engine.c (the probe protocol),
 * engine_tstamp.c (kernel and NIC timestamps), engine_clock.c (clock
 * estimation per target) and engine_reference.c (the network effect and the
 * choice of reference).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>
#include <sys/socket.h>
#include <linux/errqueue.h>

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
    /* the estimators' configurations, for targets added later */
    fm_clock_config_t ccfg, fcfg;
};

/* engine.c */
bool fm_engine_pairs (const fm_engine_t *e);
target_t *fm_engine_find_target (fm_engine_t *e, uint16_t index);

/* engine_tstamp.c */
int fm_engine_tstamp_enable (int fd, bool with_id, bool hw);
/* The interface holding addr, into ifname. -1 when none does (a wildcard). */
int fm_engine_tstamp_ifname (const struct sockaddr *addr, char *ifname);
/* Whether the NIC of ifname already stamps every packet in hardware. We
 * never change the NIC's setting ourselves (SIOCSHWTSTAMP): it is shared by
 * the whole node, and ptp4l or another tool may own it. An admin enables it
 * with `hwstamp_ctl -i IF -t 1 -r 1`.
 */
bool fm_engine_tstamp_hw_on (int fd, const char *ifname);
/* The stamp of a control message: the NIC's when we use hardware stamps
 * and it gave one, else the kernel's software stamp.
 */
bool fm_engine_tstamp_pick (fm_engine_t *e,
                            const struct scm_timestamping *sts,
                            int64_t *ts,
                            bool *hw);
void fm_engine_tstamp_resync (fm_engine_t *e);
void fm_engine_tstamp_read_errqueue (fm_engine_t *e);

/* engine_clock.c */
/* A complete exchange: the naive estimator's sample; huygens follows the
 * one-way delays with it in holdover.
 */
void fm_engine_clock_exchange (fm_engine_t *e,
                               target_t *t,
                               const fm_clock_exchange_t *x);
/* Target t's clock estimate at engine time now_ns: huygens, or its fallback
 * over all pairs where huygens refuses or its pure pairs miss the floor that
 * all pairs show (fm_clock_pick). The fallback's longer window knows the drift
 * better, and the drift is what carries an estimate forward to the next.
 * Huygens' offset is the mean of the latest refreshes' (fm_clock_smooth), and
 * a refresh records its own. A valid estimate also becomes t's model for the
 * one-way delays.
 */
int fm_engine_clock_estimate_target (fm_engine_t *e,
                                     target_t *t,
                                     int64_t now_ns,
                                     fm_clock_estimate_t *out,
                                     bool refresh);
/* theta at engine time t from t's model; false when out of range */
bool fm_engine_clock_model_theta (const target_t *t, int64_t at, int64_t *theta);
/* Feed the coded pair that holds request seq to the target's estimator, each
 * direction once all four of its stamps are known, and only stamps of one
 * kind: a NIC clock and the system clock are different clocks.
 */
void fm_engine_clock_feed_pair (fm_engine_t *e, target_t *t, uint64_t seq);

/* engine_reference.c */
/* A reply to node `to` carries our latest estimates of the reference and of
 * `to` (doc/clock.md, Network effect in the agent).
 */
void fm_engine_reference_put_views (fm_engine_t *e, uint16_t to, fm_probe_t *r);

#endif /* FM_ENGINE_PRIVATE_H */
