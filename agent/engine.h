/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_ENGINE_H
#define FM_AGENT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "clock.h"
#include "vclock.h"
#include "error.h"
#include "fm/probe.h"
#include "linkwin.h"
#include "wire.h"

/* The probe engine: one non-blocking UDP socket with kernel timestamps
 * (SO_TIMESTAMPING, transmit stamps read back from the socket's error queue):
 * software stamps, or the NIC's hardware stamps when hardware timestamping
 * is enabled on the interface of the bound address. It answers every node of
 * the job and probes a set of targets.
 * It owns no thread and no timer: the caller polls fm_engine_fd() for input
 * and calls fm_engine_run() by fm_engine_deadline().
 */
typedef struct fm_engine fm_engine_t;

#define FM_ENGINE_MAX_NODES 65535
#define FM_ENGINE_MAX_RATE 500.0

typedef struct {
    char name[64];
    struct sockaddr_storage addr;
    socklen_t addrlen;
} fm_node_t;

typedef struct {
    double rate;        /* probes per second per target, (0, FM_ENGINE_MAX_RATE] */
    int64_t timeout_ns; /* a request without reply after this is lost */
    size_t max_samples; /* per target per window */
    /* A virtual clock (lib/vclock.h) applied to every timestamp the
     * engine reads, kernel stamps included: tests and benchmarks simulate
     * node clocks with it. All zero: the host clock as it is.
     */
    fm_vclock_params_t clock;
    /* The clock estimator run per target (lib/clock.h). Huygens sends the
     * requests in coded pairs, two back to back, and feeds each pair in both
     * directions: out from our transmit and the peer's receive stamps of the
     * two requests, in from the peer's transmit and our receive stamps of the
     * two replies. Naive feeds the four-stamp exchanges. The rate stays
     * probes per second: a pair goes every 2 / rate seconds.
     */
    fm_clock_est_type_t estimator;
    /* After a target's address becomes known, requests it leaves unanswered
     * for this long are not losses until it first answers: the peer may not
     * have heard of us yet (it learns our address from fabricd).
     */
    int64_t startup_grace_ns;
    /* A target that lost a request is probed at boost_rate (above rate, at
     * most FM_ENGINE_MAX_RATE; 0: never) until boost_ns after its last loss:
     * a low rate keeps a healthy fabric cheap, and a lossy link gets the
     * samples that show it soon.
     */
    double boost_rate;
    int64_t boost_ns;
    /* A run sends a target's probe up to early_ns before it is due (>= 0): a
     * wakeup for a datagram takes the sends that would need one of their own
     * soon. The schedule stays, and so does the rate.
     */
    int64_t early_ns;
} fm_engine_cfg_t;

typedef struct {
    uint64_t sent_requests;
    uint64_t sent_replies;
    uint64_t send_errors;
    uint64_t received;
    uint64_t dropped[FM_WIRE_NREASONS]; /* [FM_WIRE_OK] stays 0 */
    uint64_t unknown_sender; /* authentic, but not from a known node's known address */
    uint64_t stale;          /* replies to an earlier epoch of ours */
    uint64_t duplicate;
    uint64_t startup_unanswered; /* requests left unanswered within the grace */
    uint64_t peer_gone;          /* requests outstanding to a peer that said bye */
    uint64_t no_rx_stamp;
    uint64_t no_tx_stamp;     /* transmit stamps that never came or did not match */
    uint64_t bad_sample;      /* exchanges with impossible timestamps */
    uint64_t mixed_stamps;    /* exchanges mixing hardware and software stamps */
    uint64_t hw_stamps;       /* receive stamps taken by the NIC */
    uint64_t clock_samples;   /* pairs or exchanges the clock estimators kept */
    uint64_t clock_fallbacks; /* huygens estimates answered by the fit over all pairs */
    uint64_t sw_stamps;       /* receive stamps taken by the kernel */
    uint64_t boosts;          /* targets that went to the boost rate */
    uint64_t clock_combined;  /* reference estimates combined over peers */
} fm_engine_counters_t;

/* Bind a UDP socket to addr (port 0 picks one) and enable timestamping.
 * NULL/errno with a message in err.
 */
fm_engine_t *fm_engine_create (const fm_engine_cfg_t *cfg,
                               const struct sockaddr *addr,
                               socklen_t addrlen,
                               fm_error_t *err);
void fm_engine_destroy (fm_engine_t *e);

int fm_engine_fd (const fm_engine_t *e);
/* The bound port (host order). */
int fm_engine_port (const fm_engine_t *e);

/* Start probing for a job: nodes[] is the job's node list (index = position),
 * my_index is ours, targets[] the indices to probe (not my_index). A node
 * whose address family is AF_UNSPEC has not registered yet: it is neither
 * probed nor answered until fm_engine_set_addr() names it. Copies everything.
 * May be called once. -1/EINVAL with err on bad input.
 */
int fm_engine_start (fm_engine_t *e,
                     uint64_t job_id,
                     const uint8_t key[FM_PROBE_KEY_SIZE],
                     const fm_node_t *nodes,
                     size_t nnodes,
                     uint16_t my_index,
                     const uint16_t *targets,
                     size_t ntargets,
                     fm_error_t *err);

/* Probe targets[] from now on (a rotated probe plan): a target that stays
 * keeps its state (window, clock estimates, outstanding requests), a new one
 * starts as at fm_engine_start, one that goes is dropped with its window.
 * Call it right after fm_engine_close_window so that no window mixes the
 * two sets. -1/EINVAL (not started, a bad index) or ENOMEM, nothing changed.
 */
int fm_engine_set_targets (fm_engine_t *e,
                           const uint16_t *targets,
                           size_t ntargets,
                           fm_error_t *err);

/* Set (or change) the probe address of node index. -1/EINVAL. */
int fm_engine_set_addr (fm_engine_t *e,
                        uint16_t index,
                        const struct sockaddr *addr,
                        socklen_t addrlen);

/* Monotonic ns by which fm_engine_run() must be called (INT64_MAX: never). */
int64_t fm_engine_deadline (const fm_engine_t *e);

/* Send the probes that are due and expire timed out requests. */
void fm_engine_run (fm_engine_t *e, int64_t now_mono);

/* Read everything queued on the socket (data and transmit stamps). */
void fm_engine_input (fm_engine_t *e);

size_t fm_engine_ntargets (const fm_engine_t *e);
/* Node index of target i. */
uint16_t fm_engine_target (const fm_engine_t *e, size_t i);
const fm_node_t *fm_engine_node (const fm_engine_t *e, uint16_t index);
uint16_t fm_engine_my_index (const fm_engine_t *e);

/* Close the window: stats[i] for target i (fm_engine_ntargets() entries). */
void fm_engine_close_window (fm_engine_t *e, fm_linkstats_t *stats);

/* We stop: tell every node of the job (FM_PROBE_BYE), so that our silence
 * from now on is not counted as loss. Best effort, one datagram each.
 */
void fm_engine_goodbye (fm_engine_t *e);

/* Whether hardware stamps are in use, and the interface of the bound address
 * (NULL for a wildcard address).
 */
bool fm_engine_hw_stamps (const fm_engine_t *e, const char **ifname);

const fm_engine_counters_t *fm_engine_counters (const fm_engine_t *e);

/* The engine's clock (the virtual one, if any) now, and the host
 * CLOCK_REALTIME reading it maps (host_ns may be NULL).
 */
int64_t fm_engine_clock_now (fm_engine_t *e, int64_t *host_ns);

/* The current frequency error of the engine's clock against the host's, ppb
 * (0 without a virtual clock).
 */
double fm_engine_clock_rate_ppb (const fm_engine_t *e);

/* Target i's clock against ours (theta = peer - local) at time now_ns of the
 * engine's clock, as fm_clock_est_estimate(): 0, or -1/EAGAIN with out->why.
 * With huygens, when too few of its pairs are pure, the same fit over every
 * pair, pure or not, answers instead (counted in clock_fallbacks).
 */
int fm_engine_clock_estimate (fm_engine_t *e,
                              size_t i,
                              int64_t now_ns,
                              fm_clock_estimate_t *out);

/* Our estimate of the job's reference clock, node 0 (theta = reference -
 * local), at time now_ns of the engine's clock. Node 0 reads exactly 0. With
 * huygens, the network effect: the combination of every target's estimate
 * with that target's own estimate of the reference, carried by its replies
 * (fm_clocknet_combine, doc/clock.md); naive: node 0's pairwise estimate.
 * Each call also sets what our replies carry from then on. 0, or -1/EAGAIN
 * with out->why.
 */
int fm_engine_reference_estimate (fm_engine_t *e,
                                  int64_t now_ns,
                                  fm_clock_estimate_t *out);

#endif /* FM_AGENT_ENGINE_H */
