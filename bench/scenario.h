/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_SCENARIO_H
#define FM_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* A fabric-sim scenario (doc/scenario.md is the contract). */

typedef enum {
    FM_SIM_LOSS,
    FM_SIM_DELAY,
    FM_SIM_DOWN,
    FM_SIM_FLAP,
} fm_sim_fault_kind_t;

typedef enum {
    FM_SIM_NODE,
    FM_SIM_UPLINK,
    FM_SIM_SWITCH,
} fm_sim_target_kind_t;

typedef struct {
    double at_s, until_s;
    fm_sim_fault_kind_t kind;
    fm_sim_target_kind_t target_kind;
    char
        target[160]; /* as written: "node:n42", "uplink:leaf7-spine3", "switch:leaf7" */
    char a[64], b[64]; /* node or switch name; uplink: leaf and spine */
    int dir;           /* 1 tx, 2 rx, 3 both (the fm_side_t values) */
    double value;      /* loss ratio */
    double value_us;   /* added one-way delay */
    double period_s;   /* flap: down for the first half of each period */
} fm_sim_fault_t;

typedef struct {
    uint64_t seed;
    bool leafspine;
    int leaves, nodes_per_leaf, spines, nodes;
    int peers;
    double rate_hz, window_s;
    double base_owd_us, jitter_us, loss;
    double duration_s;
    fm_sim_fault_t *faults;
    size_t nfaults;
    /* optional "policy" overrides */
    bool dry_run;
    double max_drain_fraction; /* < 0: default */
    int max_drains_per_hour;   /* < 0: default */
} fm_scenario_t;

#define FM_SCENARIO_MAX_FAULTS 1024
#define FM_SCENARIO_MAX_NODES (1 << 20)

/* Parse and validate a scenario document (text of at most 1 MiB). Unknown keys,
 * bad types and out-of-range values are errors naming the field.
 */
int fm_scenario_parse (const char *text, fm_scenario_t *sc, fm_error_t *err);
void fm_scenario_release (fm_scenario_t *sc);

#endif /* FM_SCENARIO_H */
