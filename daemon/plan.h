/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_PLAN_H
#define FM_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "topo.h"

/* The probe plan of a job (doc/plan.md): which of the job's nodes each node
 * probes in an epoch, and the tree of clock references. Nodes are the job's
 * node indices (the order of its expanded node list, index 0 the clock root).
 *
 * - Up to all_pairs_max + 1 nodes: every node probes every other one.
 * - Otherwise each node probes up to `peers` targets: its clock parent, up to
 *   `local` nodes of its own leaf switch (a random circulant over the leaf's
 *   members) and the rest across the job (a random circulant over all its
 *   nodes, so mostly in other leaves). Most offsets stay (their pairs keep
 *   their baselines); rotate_local and rotate_cross of them move every epoch,
 *   so that every ordered pair of the job is probed within fm_plan_cycle()
 *   epochs. Each offset adds exactly one prober to every node.
 * - Without a switch tree the job is one group: a random circulant of degree
 *   `peers`, rotated the same way.
 * The clock tree: a heap of fan-out clock_fanout over each leaf's members
 * (rank 0, the leaf's reference, at the top) and another over the leaves'
 * references, with the root's leaf first.
 * Everything follows from (topology, node list, params, epoch): deterministic.
 */
typedef struct fm_plan fm_plan_t;

#define FM_PLAN_MAX_NODES 65535 /* node indices travel as 16 bits */
#define FM_PLAN_PEERS_MAX 64
/* How long an epoch's targets stay (fabricd.conf plan_epoch). */
#define FM_PLAN_EPOCH_DEFAULT_NS (60LL * 1000 * 1000 * 1000)

typedef struct {
    unsigned peers;         /* targets per node, [1, FM_PLAN_PEERS_MAX] */
    unsigned local;         /* of which at most this many in the node's own leaf */
    unsigned rotate_local;  /* of those, this many rotate every epoch */
    unsigned rotate_cross;  /* of the rest, this many rotate every epoch (>= 1) */
    unsigned all_pairs_max; /* jobs of up to this + 1 nodes probe all pairs */
    unsigned clock_fanout;  /* children per clock reference, >= 2 */
    unsigned min_cover;     /* independent probing pairs per uplink and spine */
    uint64_t seed;
} fm_plan_params_t;

/* peers 10, local 4, rotate_local 1, rotate_cross 2, all_pairs_max 16,
 * clock_fanout 16, min_cover 3, seed 0. */
void fm_plan_params_default (fm_plan_params_t *p);

/* A plan for the job whose nodes are nodes[0..n) at epoch 0. topo may be NULL
 * or flat (no switches). NULL and err: EINVAL (bad params, a duplicate node, a
 * node the switch tree does not place under a leaf), E2BIG (more than
 * FM_PLAN_MAX_NODES nodes), ENOMEM. The plan keeps no reference to topo.
 */
fm_plan_t *fm_plan_create (const fm_topo_t *topo,
                           const char *const *nodes,
                           size_t n,
                           const fm_plan_params_t *p,
                           fm_error_t *err);
void fm_plan_destroy (fm_plan_t *pl);

/* Compute the targets of epoch e (0, or -1/ENOMEM with the plan unchanged). */
int fm_plan_set_epoch (fm_plan_t *pl, uint64_t e);
uint64_t fm_plan_epoch (const fm_plan_t *pl);

size_t fm_plan_nnodes (const fm_plan_t *pl);
/* The current epoch's targets of node i, and the nodes that probe it. */
size_t fm_plan_targets (const fm_plan_t *pl, size_t i, const uint32_t **v);
size_t fm_plan_probers (const fm_plan_t *pl, size_t i, const uint32_t **v);
/* Node i's clock reference (-1 for the root, node 0) and its hops to the root. */
int fm_plan_parent (const fm_plan_t *pl, size_t i);
unsigned fm_plan_depth (const fm_plan_t *pl, size_t i);
/* Epochs after which every ordered pair of the job has been probed, from any
 * starting epoch (1 when all pairs are probed in every epoch).
 */
uint64_t fm_plan_cycle (const fm_plan_t *pl);

/* Coverage in the current epoch (doc/plan.md, Coverage): for each uplink
 * (leaf, spine) on a path between two of the job's leaves, and each spine
 * above two of them, the number of distinct nodes whose probes cross it (each
 * pair counted 1/S when S spines join its two leaves: ECMP picks one).
 */
typedef struct {
    size_t nuplinks, nspines; /* on the job's paths */
    double uplink_min, spine_min;
    char worst[2 * FM_TOPO_NAME_MAX + 2]; /* "leaf-spine" or the spine; "" */
    double worst_cover;
} fm_plan_coverage_t;

void fm_plan_coverage (const fm_plan_t *pl, fm_plan_coverage_t *c);
/* Covers of uplink u / spine s (topology ids); -1 when not on the job's paths. */
double fm_plan_uplink_cover (const fm_plan_t *pl, int uplink);
double fm_plan_spine_cover (const fm_plan_t *pl, int spine);

/* 0 when every uplink and spine on the job's paths is covered min_cover
 * times in the current epoch, else -1/ERANGE with err naming the worst one and
 * the least peers that would cover it (or that none up to FM_PLAN_PEERS_MAX
 * would), or ENOMEM.
 */
int fm_plan_check (const fm_plan_t *pl, fm_error_t *err);

#endif /* FM_PLAN_H */
