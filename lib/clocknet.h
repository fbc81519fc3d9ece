/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CLOCKNET_H
#define FM_CLOCKNET_H

/* The network effect: combine pairwise estimates over a job's probe graph
 * into one offset and drift per node against the job's reference timeline.
 *
 * Nodes are 0..n-1; the reference timeline is node 0's clock (node 0 reads 0
 * offset, 0 drift, 0 bound). Every edge measures theta_e = clock v - clock u
 * (an fm_clock_est_estimate() run on u for peer v, all evaluated at one common
 * epoch). The solve is weighted least squares,
 *     minimise sum_e w_e (x_v - x_u - theta_e)^2,  w_e = 1 / bound_e^2,
 * by preconditioned conjugate gradients on the graph Laplacian (sparse:
 * O(edges) per iteration), then Huber reweighting rounds that shrink the
 * weight of edges whose residual exceeds huber_k robust standard deviations,
 * so that one asymmetric path cannot pull its neighbours. Loop consistency is what
 * gives the gain: the per-edge residuals r_e = theta_e - (x_v - x_u) expose edges that
 * violate it (an asymmetric or degraded path shows as a large residual that persists
 * from solve to solve; tracking persistence is the caller's).
 */

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Caps on the problem size the solver accepts (external input sizes it). */
#define FM_CLOCKNET_NODES_MAX 1000000u
#define FM_CLOCKNET_EDGES_MAX 20000000u

typedef struct {
    unsigned u, v;    /* u != v, both < n */
    double offset_ns; /* theta: clock v - clock u at the epoch */
    double drift_ppb; /* d theta / dt */
    double bound_ns;  /* the pairwise bound, > 0 */
} fm_clocknet_edge_t;

typedef struct {
    bool valid;       /* false: not connected to node 0 (no estimate) */
    double offset_ns; /* clock of this node - reference clock at the epoch */
    double drift_ppb;
    double bound_ns; /* approximate, see doc/clock.md */
} fm_clocknet_node_t;

typedef struct {
    double residual_ns;        /* theta_e - (x_v - x_u) */
    double drift_residual_ppb; /* the same for the drift */
    double score;              /* |residual_ns| / bound_ns */
    double weight;             /* final weight over 1 / bound^2: 1, or less when
                                  the robust rounds discounted the edge */
} fm_clocknet_resid_t;

typedef struct {
    double tol;        /* CG stops at |residual| <= tol |rhs| (1e-10) */
    unsigned max_iter; /* per CG solve, 0: 10 n + 100 */
    unsigned rounds;   /* max Huber reweighting rounds after the first solve (20) */
    double huber_k;    /* in robust standard deviations of the normalised
                          residuals r / bound (2) */
} fm_clocknet_opts_t;

typedef struct {
    unsigned iterations; /* CG iterations, all solves */
    unsigned reached;    /* nodes connected to node 0 */
    double scale;        /* sqrt(weighted chi^2 / dof) of the final fit, >= 0
                            (0 when there are no loops) */
    double robust_scale; /* 1.4826 MAD of r / bound after the first solve
                            (floor 0.1): score / robust_scale above 5 or so
                            marks an edge that breaks loop consistency */
} fm_clocknet_info_t;

void fm_clocknet_opts_default (fm_clocknet_opts_t *opts);

/* Solve. nodes (n entries) and resid (n_edges entries, may be NULL) and info
 * (may be NULL) are written only on success. opts NULL means the defaults.
 * -1 with errno EINVAL (bad edge or sizes, err says which), ENOMEM, or
 * ERANGE (CG did not converge) and nothing written.
 */
int fm_clocknet_solve (unsigned n,
                       const fm_clocknet_edge_t *edges,
                       size_t n_edges,
                       const fm_clocknet_opts_t *opts,
                       fm_clocknet_node_t *nodes,
                       fm_clocknet_resid_t *resid,
                       fm_clocknet_info_t *info,
                       fm_error_t *err);

/* The network effect where a node is: one step of it, repeated at every
 * refresh on every node of the job (doc/clock.md, Network effect in the
 * agent). A candidate is the node's offset to the reference through one
 * peer: the edge to the peer plus the peer's own offset to the reference.
 * The weighted mean of the candidates, each node taking its peers' latest,
 * is a Jacobi iteration of the same least squares fm_clocknet_solve() solves
 * in one place.
 */
typedef struct {
    double offset_ns;       /* reference - this node */
    double drift_ppb;       /* d offset / dt */
    double bound_ns;        /* error bound of offset_ns, >= 0 */
    double drift_bound_ppb; /* error bound of drift_ppb, >= 0 */
    double weight;          /* > 0: 1 / (edge bound^2 + peer's bound^2) */
} fm_clocknet_cand_t;

/* out: the weighted mean offset and drift of the n candidates, weight their
 * sum, and the tightest bound that any one candidate's gives: min over k of
 * bound_k + |mean - offset_k| (so, when every candidate's bound holds, the
 * mean's holds). -1 with errno EINVAL (n == 0, a value not finite, a bound
 * < 0, a weight <= 0) and out not written.
 */
int fm_clocknet_combine (const fm_clocknet_cand_t *cand,
                         size_t n,
                         fm_clocknet_cand_t *out);

#endif /* FM_CLOCKNET_H */
