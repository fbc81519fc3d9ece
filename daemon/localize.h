/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_LOCALIZE_H
#define FM_LOCALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topo.h"

/* Fault localization over the topology: pure computation, no I/O.
 *
 * Input: one evidence record per directed flow (src -> dst) observed in the
 * window, carrying decayed sums over recent windows and the current window's
 * own sums. Candidates are the elements a flow crosses, each with a side:
 * the source node's tx, the destination node's rx, the source leaf (tx), the
 * destination leaf (rx), and for cross-leaf flows whose spine is known the
 * leaf->spine uplink (tx: leaving the leaf), the spine->leaf uplink (rx) and the
 * spine. Each candidate's evidence is a log-likelihood ratio: loss against the
 * baseline loss rate p0 (binomial), delay as the pooled z-score of one-way delay
 * inflation (Gaussian). Pooling good flows into a candidate dilutes it, so the
 * element whose scope is exactly the bad flows wins; a greedy loop (the 007 /
 * NetBouncer idea) accepts the best candidate, removes the flows it explains and
 * repeats. A candidate is accepted only if its evidence is spread over at least
 * min_peers independent witnesses (peers for a node; member nodes or leaves for
 * a switch or uplink) and over about as many of them as a uniform fault would
 * touch (spread_ratio), so a switch is never blamed for one bad node and a node
 * never on one peer's word.
 */

typedef enum {
    FM_ELEM_NODE = 0,
    FM_ELEM_UPLINK = 1,
    FM_ELEM_LEAF = 2,
    FM_ELEM_SPINE = 3,
} fm_elem_kind_t;

typedef enum {
    FM_SIDE_TX =
        1, /* node: sending; leaf: traffic from its nodes; uplink: leaf->spine */
    FM_SIDE_RX =
        2, /* node: receiving; leaf: traffic to its nodes; uplink: spine->leaf */
    FM_SIDE_BOTH = 3, /* spines always report both */
} fm_side_t;

typedef enum {
    FM_CLASS_NONE = 0,
    FM_CLASS_DELAY,
    FM_CLASS_LOSS,
    FM_CLASS_DOWN,
    FM_CLASS_FLAP,
    FM_CLASS_PORT_ERRORS,
    FM_CLASS_PCIE,
} fm_class_t;

typedef struct {
    int32_t src, dst;
    int32_t via; /* spine index (fm_topo) the flow crossed, -1 unknown */
    /* decayed sums over recent windows */
    double sent, lost; /* probes */
    double zs, zn;     /* sum of weighted delay z-scores, sum of weights */
    double infl_ns;    /* sum of weighted delay inflation, ns */
    /* this window only */
    double cur_sent, cur_lost, cur_zs, cur_zn, cur_infl_ns;
    /* output: index of the hypothesis that explained the flow, -1 none */
    int32_t explained;
} fm_flow_ev_t;

typedef struct {
    double p0;             /* baseline loss ratio, > 0 */
    double min_gain;       /* log-likelihood ratio to accept a candidate (20) */
    int min_peers;         /* independent witnesses (2) */
    double spread_ratio;   /* observed / expected witnesses (0.5) */
    double delay_min_ns;   /* smallest mean inflation that counts (1000) */
    double cur_min_gain;   /* current-window LLR for "still happening" (2) */
    double down_ratio;     /* pooled loss ratio that means down (0.9) */
    double loss_min_ratio; /* pooled loss must exceed this multiple of p0 (3) */
    double split_penalty;  /* LLR charged per extra element when a finer
                            * explanation competes with an aggregate (10) */
    size_t max_hyps;       /* cap per window (256) */
} fm_localize_params_t;

#define FM_HYP_PEERS 8

typedef struct {
    fm_elem_kind_t kind;
    int id; /* node, uplink, leaf or spine index */
    fm_side_t side;
    fm_class_t cls; /* LOSS, DOWN or DELAY */
    double gain;    /* LLR over the decayed window */
    double loss_gain, delay_gain;
    double sent, lost; /* decayed pooled counts */
    double cur_sent, cur_lost;
    double delay_ns; /* mean inflation, ns (0 without delay evidence) */
    double cur_gain;
    bool current;    /* the current window shows the fault too */
    int nflows;      /* flows explained */
    int witnesses;   /* positive children */
    double expected; /* children a uniform fault would make positive */
    int nchildren;
    int peers[FM_HYP_PEERS]; /* first positive children: node ids (or leaf ids for
                              * a spine); -1 padded */
} fm_hyp_t;

typedef struct fm_localize fm_localize_t;

/* The defaults above, with p0 = 1e-5. */
void fm_localize_params_default (fm_localize_params_t *p);

/* A workspace bound to a topology (which must outlive it). NULL/ENOMEM. */
fm_localize_t *fm_localize_create (const fm_topo_t *topo);
void fm_localize_destroy (fm_localize_t *loc);

/* Localize one window. flows[i].explained is set; hypotheses are returned in
 * acceptance order through *hyps (owned by loc, valid until the next call).
 * Flow node ids must be < fm_topo_nnodes() and via < fm_topo_nspines():
 * otherwise -1/EINVAL and nothing is changed. Returns the hypothesis count.
 */
int fm_localize_run (fm_localize_t *loc,
                     fm_flow_ev_t *flows,
                     size_t nflows,
                     const fm_localize_params_t *p,
                     const fm_hyp_t **hyps);

/* Loss log-likelihood ratio of k lost of s against baseline p0 (0 when the
 * ratio is not above p0), and the delay one for a pooled z sum and weight,
 * scaled by (1 - min_ns / mean inflation)^2 (0 below min_ns).
 */
double fm_localize_loss_llr (double s, double k, double p0);
double fm_localize_delay_llr (double zs, double zn, double infl_ns, double min_ns);

const char *fm_localize_class_name (fm_class_t c);
const char *fm_localize_side_name (fm_side_t s);

#endif /* FM_LOCALIZE_H */
