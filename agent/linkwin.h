/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_LINKWIN_H
#define FM_AGENT_LINKWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nearest-rank quantiles of one sample set (ns). n == 0: all fields 0. */
typedef struct {
    uint64_t n;
    int64_t min;
    int64_t p50;
    int64_t p90;
    int64_t p99;
    int64_t max;
} fm_quantiles_t;

/* Sort v[0..n) in place and fill q. Never fails; v may be NULL when n is 0. */
void fm_linkwin_quantiles (int64_t *v, size_t n, fm_quantiles_t *q);

/* The nearest-rank q-quantile (0 < q <= 1) of a sorted array of n > 0 values. */
int64_t fm_linkwin_quantile_sorted (const int64_t *sorted, size_t n, double q);

/* One window of measurements between this node (A) and one peer (B), from
 * A's requests and B's replies. "fwd" is A->B, "rev" is B->A. The offset is
 * B's clock minus A's.
 */
typedef struct {
    uint64_t samples;       /* complete four-timestamp exchanges */
    fm_quantiles_t rtt;     /* (t4 - t1) - (t3 - t2) */
    fm_quantiles_t owd_fwd; /* t2 - t1 - offset */
    fm_quantiles_t owd_rev; /* t4 - t3 + offset */
    bool have_offset;
    int64_t offset_ns;     /* from the minimum-RTT exchange of the window */
    int64_t offset_err_ns; /* half that RTT: the true offset is within +- this */
    uint64_t probes;       /* requests resolved this window: replied or timed out */
    uint64_t lost;         /* timed out */
    uint64_t lost_fwd;     /* requests the peer says it never received */
    uint64_t lost_rev;     /* the rest: replies that never came back */
    double loss_fwd;       /* lost_fwd / probes */
    double loss_rev;       /* lost_rev / (probes - lost_fwd) */
    uint64_t reorder_fwd;  /* requests the peer received after a higher seq */
    uint64_t reorder_rev;  /* replies we received after a higher seq */
    uint64_t late;         /* replies that came after their request timed out */
    uint64_t dropped;      /* samples not kept because the window was full */
} fm_linkstats_t;

typedef struct fm_linkwin fm_linkwin_t;

/* A window accumulator keeping at most max_samples exchanges (further ones
 * are counted in `dropped`). NULL/ENOMEM or EINVAL (max_samples 0).
 */
fm_linkwin_t *fm_linkwin_create (size_t max_samples);
void fm_linkwin_destroy (fm_linkwin_t *w);

/* A complete exchange: t1 request sent (A), t2 request received (B),
 * t3 reply sent (B), t4 reply received (A). Exchanges whose timestamps are not
 * causally ordered on each clock (t4 < t1, t3 < t2) or whose RTT is negative
 * are dropped as clock glitches and return -1/EINVAL.
 */
int fm_linkwin_add (fm_linkwin_t *w, int64_t t1, int64_t t2, int64_t t3, int64_t t4);

/* A reply arrived (counts towards probes); reordered: its seq was below the
 * highest seen.
 */
void fm_linkwin_reply (fm_linkwin_t *w, bool reordered);
void fm_linkwin_timeout (fm_linkwin_t *w);
void fm_linkwin_late (fm_linkwin_t *w);

/* The peer's cumulative view of our requests, carried in every reply:
 * `sent` requests were sent up to the one being answered, `rx_count` of them
 * arrived, `rx_reorder` out of order. Cumulative values survive lost replies;
 * the window reports the increase since the previous window.
 */
void fm_linkwin_remote (fm_linkwin_t *w,
                        uint64_t sent,
                        uint64_t rx_count,
                        uint64_t rx_reorder);

/* Our epoch or the peer's changed: cumulative counters restart from zero. */
void fm_linkwin_remote_reset (fm_linkwin_t *w);

/* Count only what the peer misses from now on: its cumulative counters as
 * last seen become the base (the peer's first answer, after a start-up
 * during which it could not answer yet).
 */
void fm_linkwin_remote_rebase (fm_linkwin_t *w);

/* Compute the window's statistics into s and start a new window. */
void fm_linkwin_close (fm_linkwin_t *w, fm_linkstats_t *s);

#endif /* FM_AGENT_LINKWIN_H */
