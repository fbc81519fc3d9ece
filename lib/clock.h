/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CLOCK_H
#define FM_CLOCK_H

/* Pairwise clock estimators: from probe timestamps taken on this node ("local")
 * and on one peer, estimate theta(t) = peer clock - local clock, as an offset at
 * a local time plus a relative drift, with an error bound.
 *
 * Sign convention, used throughout: a probe sent local -> peer ("out") has the
 * one-way measurement d = rx(peer clock) - tx(local clock) = owd + theta; a probe
 * sent peer -> local ("in") has d = rx(local) - tx(peer) = owd - theta. Queueing
 * only ever adds to owd, so the lower envelopes of both directions carry the
 * information; the estimators never average raw samples.
 *
 * Timestamps are nanoseconds of each host's clock as the agent's time source
 * reads it (kernel TX/RX timestamps, passed through fm_vclock in tests). An
 * estimator never touches any host clock.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum {
    FM_CLOCK_EST_NAIVE = 0,   /* min-RTT four-timestamp exchange: the baseline */
    FM_CLOCK_EST_HUYGENS = 1, /* coded probe pairs + max-margin envelope fit */
} fm_clock_est_type_t;

typedef enum {
    FM_CLOCK_DIR_OUT = 0, /* local -> peer */
    FM_CLOCK_DIR_IN = 1,  /* peer -> local */
} fm_clock_dir_t;

/* One request/response exchange: t1 local send, t2 peer receive, t3 peer send,
 * t4 local receive. Accepted by the naive estimator.
 */
typedef struct {
    int64_t t1, t2, t3, t4;
} fm_clock_exchange_t;

/* One coded probe pair in one direction: two probes sent back to back. tx are
 * the sender's kernel TX timestamps of probe 0 and 1 (sender's clock), rx the
 * receiver's kernel RX timestamps (receiver's clock). Accepted by huygens.
 */
typedef struct {
    fm_clock_dir_t dir;
    int64_t tx_ns[2];
    int64_t rx_ns[2];
} fm_clock_pair_t;

typedef enum {
    FM_CLOCK_SAMPLE_EXCHANGE = 0,
    FM_CLOCK_SAMPLE_PAIR = 1,
} fm_clock_sample_type_t;

typedef struct {
    fm_clock_sample_type_t type;
    union {
        fm_clock_exchange_t exchange;
        fm_clock_pair_t pair;
    };
} fm_clock_sample_t;

typedef struct {
    /* samples older than now - window are forgotten (2 s) */
    int64_t window_ns;
    /* coded pair: max |rx gap - tx gap| of a pure pair (1.5 us) */
    int64_t guard_ns;
    /* coded pair: max tx gap still "back to back" (200 us) */
    int64_t max_gap_ns;
    /* huygens: fit every pair, pure or not (false): each probe's delay is an
     * upper bound whatever its queue, so the envelope holds without the
     * filter, only less well pinned (the agent's fallback under jitter)
     */
    bool all_pairs;
    /* huygens: the share of each direction's lowest points left out of a
     * second fit (0: one fit). A lone sample below the delay floor, such as a
     * pair's second probe sent in one batch with the first, otherwise holds
     * the envelope for a whole window (the agent's pure-pair estimator: 1/128)
     */
    double trim;
    /* needed to report: per direction (huygens) or in all (naive) (16) */
    unsigned min_samples;
    /* time the samples must cover to report (huygens: both directions) (500 ms) */
    int64_t min_span_ns;
    /* samples kept per direction; the oldest go first (8192) */
    unsigned capacity;
    /* holdover (doc/clock.md): the longest a sudden one-way delay
     * change is held off the clock model before the model re-anchors to it
     * (300 s); 0 turns holdover off
     */
    int64_t holdover_ns;
    /* holdover: the least drift uncertainty assumed of an
     * established model, ppb (100); the prediction's bound grows by it
     */
    double holdover_ppb;
} fm_clock_config_t;

/* The limits fm_clock_config_check() enforces on a configuration. */
#define FM_CLOCK_WINDOW_MAX_NS (3600LL * 1000000000LL)
#define FM_CLOCK_CAPACITY_MAX 1000000u
#define FM_CLOCK_HOLDOVER_PPB_MAX 100000. /* 100 ppm: a free-running oscillator */
#define FM_CLOCK_TRIM_MAX 0.25

typedef struct {
    bool valid;        /* false: refused; only why is meaningful */
    const char *why;   /* static text: why refused, or "ok" */
    int64_t at_ns;     /* local time the estimate refers to (the now passed in) */
    int64_t offset_ns; /* theta at at_ns: peer clock - local clock */
    double drift_ppb;  /* d theta / dt, parts per billion (peer runs faster if > 0) */
    int64_t bound_ns;  /* error bound of offset_ns (see doc/clock.md for its model) */
    int64_t owd_ns;    /* huygens: estimated minimum one-way delay; naive: min RTT/2 */
    /* minimum one-way delay per direction (fm_clock_dir_t): owd_ns both,
     * except in holdover, where they differ by the change each saw
     */
    int64_t owd_dir_ns[2];
    /* a sudden one-way delay change is held off the clock: offset
     * and drift are the established model's prediction, and the bound
     * includes its growth since (doc/clock.md)
     */
    bool holdover;
    /* the uncertainty of drift_ppb the estimator derives from its data */
    double drift_bound_ppb;
    unsigned samples[2]; /* samples used, indexed by fm_clock_dir_t (naive: [0]) */
} fm_clock_estimate_t;

typedef struct {
    uint64_t accepted;  /* samples kept */
    uint64_t impure;    /* coded pairs rejected by the gap test */
    uint64_t invalid;   /* malformed samples (time running backwards, wrong type) */
    uint64_t expired;   /* dropped from the window or by capacity */
    uint64_t holdovers; /* one-way delay changes held off the clock model */
    uint64_t reanchors; /* holdovers ended by re-anchoring: the change stayed */
} fm_clock_stats_t;

typedef struct fm_clock_est fm_clock_est_t;

/* Fill cfg with the defaults above. */
void fm_clock_config_default (fm_clock_config_t *cfg);

/* 0 when cfg is usable, else -1/EINVAL with a reason in err. */
int fm_clock_config_check (const fm_clock_config_t *cfg, fm_error_t *err);

/* "naive" or "huygens" -> type; -1/EINVAL otherwise. */
int fm_clock_est_type_parse (const char *name);

/* Create an estimator for one peer; cfg NULL means the defaults. The config is
 * copied. NULL with errno (EINVAL, ENOMEM) and err filled on failure.
 */
fm_clock_est_t *fm_clock_est_create (fm_clock_est_type_t type,
                                     const fm_clock_config_t *cfg,
                                     fm_error_t *err);

/* NULL-safe; preserves errno. */
void fm_clock_est_destroy (fm_clock_est_t *est);

const char *fm_clock_est_name (const fm_clock_est_t *est);

/* Offer one sample. Returns 1 when kept; 0 when filtered out, which is counted
 * in the stats and is not an error: an impure pair, malformed timestamps, or a
 * sample type this estimator does not take (naive takes exchanges, huygens
 * pairs). -1/EINVAL for NULL arguments.
 */
int fm_clock_est_add (fm_clock_est_t *est, const fm_clock_sample_t *s);

/* Estimate theta at local time now_ns from the samples within the window that
 * ends at now_ns. Always fills *out; returns 0 when out->valid, else -1 with
 * errno EAGAIN (not enough data: out->why says what is missing). -1/EINVAL for
 * bad arguments.
 */
int fm_clock_est_estimate (fm_clock_est_t *est,
                           int64_t now_ns,
                           fm_clock_estimate_t *out);

void fm_clock_est_stats (const fm_clock_est_t *est, fm_clock_stats_t *stats);

/* Drop all samples (after a peer restart, say); the stats are kept. */
void fm_clock_est_reset (fm_clock_est_t *est);

/* One estimate from huygens over pure pairs and its all-pairs fallback on the
 * same path (the agent's rule, doc/clock.md "Fallback"): the fallback where
 * huygens refuses, or where huygens' floor (owd_ns) lies more than
 * floor_tol_ns above the fallback's; else huygens, with the fallback's drift
 * where its drift bound is the tighter and neither is in holdover. 1 when out is
 * the fallback's estimate, 0 when huygens', -1 when both refuse (out is
 * huygens' refusal).
 */
int fm_clock_pick (const fm_clock_estimate_t *pure,
                   const fm_clock_estimate_t *all,
                   int64_t floor_tol_ns,
                   fm_clock_estimate_t *out);

/* The agent's smoothing of successive estimates of one peer (doc/clock.md,
 * Smoothing). Each refresh's envelope rests on a few support points, and as
 * they enter and leave the window the offset jumps by tens of ns; the mean of
 * the last span's offsets, each carried to now with the newest drift, does
 * not. A history is dropped where an estimate refuses, time runs backwards or
 * an estimate leaves the history's mean by more than its bound (holdover
 * re-anchoring, a switch of estimator): the older offsets no longer apply.
 */
#define FM_CLOCK_SMOOTH_MAX 128

typedef struct {
    int64_t span_ns; /* offsets older than this before the newest are left out */
    size_t n;        /* offsets held */
    size_t next;     /* ring slot of the next */
    int64_t at_ns[FM_CLOCK_SMOOTH_MAX];
    int64_t offset_ns[FM_CLOCK_SMOOTH_MAX];
} fm_clock_smooth_t;

void fm_clock_smooth_init (fm_clock_smooth_t *s, int64_t span_ns);

/* Record est's offset (one call per refresh), or drop the history (see above). */
void fm_clock_smooth_add (fm_clock_smooth_t *s, const fm_clock_estimate_t *est);

/* Replace a valid est's offset by the mean of the recorded offsets within the
 * span before est->at_ns and est's own, each carried to est->at_ns with
 * est's drift, and widen its bound by the distance moved. est stays as it is
 * where the history is empty or stale (est lies outside its bound of the mean).
 * Apply before adding est: est would otherwise count twice.
 */
void fm_clock_smooth_apply (const fm_clock_smooth_t *s, fm_clock_estimate_t *est);

/* Coded pair purity test alone: true when both gaps are positive, the tx gap is
 * at most max_gap_ns, and |rx gap - tx gap| <= guard_ns.
 */
bool fm_clock_pair_is_pure (const fm_clock_pair_t *p,
                            int64_t guard_ns,
                            int64_t max_gap_ns);

/* The max-margin envelope fit alone, exposed for tests and the benchmark.
 * Points are (t, d): t local time relative to an origin of the caller's choice
 * and d the one-way measurement of that direction, both ns; each array sorted
 * by t, ascending. Finds the line theta(t) = a + b t and margin D maximising D
 * subject to d_out >= theta(t) + D and d_in >= D - theta(t), exactly (convex
 * hulls and a merge of their edge slopes, see doc/clock.md).
 */
typedef struct {
    double t;
    double d;
} fm_clock_point_t;

typedef struct {
    double a;          /* theta at t = 0, ns */
    double b;          /* slope, ns per ns */
    double margin;     /* D: the minimum one-way delay the fit implies, ns */
    double thick[2];   /* per direction: envelope thickness, the k-th smallest
                          residual above the fitted support line, ns */
    double t_lo, t_hi; /* time span over which both directions have points */
} fm_clock_fit_t;

/* k >= 1 selects the residual reported as thickness (k capped at 64). 0 on
 * success; -1/EINVAL when a direction is empty, an array is unsorted or the
 * problem is unbounded (the two directions' time ranges do not interleave);
 * -1/ENOMEM.
 */
int fm_clock_fit (const fm_clock_point_t *out,
                  size_t n_out,
                  const fm_clock_point_t *in,
                  size_t n_in,
                  unsigned k,
                  fm_clock_fit_t *fit);

#endif /* FM_CLOCK_H */
