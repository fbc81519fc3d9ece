/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_SIM_PROBING_H
#define FM_SIM_PROBING_H

#include <stddef.h>

#include "plan.h"
#include "scenario.h"
#include "topo.h"

/* The probing of one plan epoch: each node's targets, the spine its probes
 * cross (ECMP: a hash of the pair) and their base delay (a hash too, so that
 * a pair keeps both across epochs).
 */
typedef struct {
    int n, k;        /* nodes, most targets per node */
    int *ntarg;      /* per node */
    int *peer, *via; /* [s * k + j] */
    float *base;
    /* what the epochs showed */
    double cover_min, spine_min; /* distinct probers, via the ECMP hash */
    double plan_cover_min;       /* the plan's own (1/S per pair) count */
    double sent_mean, busiest;   /* probes/s: sent; sent + answered */
    size_t epochs;
} fm_sim_probing_t;

/* Take the plan's current epoch into pr, and add what it shows: covers
 * (last_up, last_sp, up_cnt, sp_cnt are scratch of the topology's uplinks and
 * spines), probe rates at the scenario's rate_hz.
 */
void fm_sim_probing_apply (fm_sim_probing_t *pr,
                           const fm_plan_t *pl,
                           const fm_topo_t *topo,
                           const fm_scenario_t *sc,
                           const int *leaf,
                           int *last_up,
                           int *last_sp,
                           double *up_cnt,
                           double *sp_cnt);

#endif /* FM_SIM_PROBING_H */
