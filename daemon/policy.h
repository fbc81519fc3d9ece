/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_POLICY_H
#define FM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "score.h"

/* What to do about scored nodes, as a pure decision: inputs are the scores, the
 * nodes as Slurm reports them, the jobs on them and the clock; the output is a
 * list of actions and alarms, each with its explanation. The actions backend
 * (scontrol / slurmrestd) executes them; it is not here.
 *
 * Rules, in the LBNL NHC tradition:
 *  - a failed node is drained with reason "fabric: <class>: <evidence>";
 *  - a node that carries any reason that is not ours ("fabric:" prefix) is never
 *    touched: no drain, resume or weight change (someone else owns it);
 *  - with auto_resume, a node drained with a "fabric:" reason is resumed after
 *    resume_windows healthy windows;
 *  - a degraded node gets weight + degraded_weight_add, restored when it has
 *    been healthy for resume_windows (unless someone changed it meanwhile);
 *  - a protected job on a failing node: the node is drained first, then the job
 *    gets protect_signal (checkpoint notice); after protect_grace_ns, unless it
 *    requeued itself, it is requeued;
 *  - blast radius: at most max(1, max_drain_fraction * nodes) nodes drained by
 *    us at once and max_drains_per_hour drains in any hour; past either, no more
 *    drains, an alarm, and when failing nodes share a leaf switch the evidence is
 *    attributed to it;
 *  - failed switches and uplinks raise alarms (nothing in Slurm to drain);
 *  - dry_run: the same decisions, flagged, and remembered as if applied.
 */

typedef struct {
    bool dry_run;
    bool auto_resume;            /* (true) */
    int resume_windows;          /* M (12) */
    double max_drain_fraction;   /* (0.02) */
    int max_drains_per_hour;     /* (10) */
    int64_t degraded_weight_add; /* (1000) */
    int protect_signal;          /* (SIGUSR1) */
    int64_t protect_grace_ns;    /* (120 s) */
} fm_policy_params_t;

void fm_policy_params_default (fm_policy_params_t *p);

/* One node: the fabric's view and Slurm's. Strings are borrowed for the call. */
typedef struct {
    const char *name;
    const char *leaf; /* leaf switch name, NULL in a flat topology */
    fm_state_t state;
    const char *cls;      /* class name ("loss"), NULL when healthy */
    const char *evidence; /* one line with numbers, NULL when healthy */
    const char *explain;  /* the chain, may be NULL */
    int healthy_windows;  /* consecutive observed healthy windows */
    /* Slurm */
    bool drained;       /* DRAIN, DRAINING, DRAINED, DOWN, FAIL */
    const char *reason; /* NULL or "" when none */
    int64_t weight;
} fm_policy_node_t;

typedef struct {
    int64_t job_id;
    const char *const *nodes; /* where it runs */
    size_t nnodes;
    bool protect;  /* asked for --fabric-protect */
    bool requeued; /* requeued (by itself or us) since we signalled */
} fm_policy_job_t;

/* A failing fabric element that is not a node (a switch or uplink). */
typedef struct {
    const char *name; /* "switch:leaf7", "uplink:leaf7-spine3" */
    fm_state_t state;
    const char *evidence;
} fm_policy_elem_t;

typedef struct {
    const fm_policy_node_t *nodes; /* nodes may be omitted when healthy, not
                                    * drained and never touched by us */
    size_t nnodes;
    size_t total_nodes; /* cluster size for max_drain_fraction */
    const fm_policy_job_t *jobs;
    size_t njobs;
    const fm_policy_elem_t *elems;
    size_t nelems;
    int64_t now_ns;
    /* Drained nodes go back through fabricd's validation alone: no RESUME,
     * whatever auto_resume says (weights are still restored). */
    bool resume_by_validation;
} fm_policy_input_t;

typedef enum {
    FM_ACT_DRAIN,
    FM_ACT_RESUME,
    FM_ACT_SET_WEIGHT,
    FM_ACT_SIGNAL,
    FM_ACT_REQUEUE,
} fm_action_kind_t;

typedef struct {
    fm_action_kind_t kind;
    char node[64];      /* "" for job actions without a node */
    int64_t job_id;     /* SIGNAL, REQUEUE */
    int signal;         /* SIGNAL */
    int64_t weight;     /* SET_WEIGHT */
    char reason[256];   /* DRAIN: the Slurm reason; others: why */
    char explain[1024]; /* the chain behind the decision */
    bool dry_run;
} fm_action_t;

typedef struct {
    char element[96]; /* "node:n3", "switch:leaf7", "policy" */
    char text[512];
} fm_alarm_t;

typedef struct {
    fm_action_t *actions;
    size_t nactions;
    fm_alarm_t *alarms;
    size_t nalarms;
    size_t actions_cap, alarms_cap;
} fm_policy_output_t;

typedef struct fm_policy fm_policy_t;

/* NULL/EINVAL for bad params, ENOMEM. */
fm_policy_t *fm_policy_create (const fm_policy_params_t *p);
void fm_policy_destroy (fm_policy_t *pol);

/* Decide. out is reset first (zero-initialise it once; release with
 * fm_policy_output_free()). Remembers drains, weights and protect sequences
 * between calls. 0, or -1/EINVAL (missing names, time going back), ENOMEM.
 */
int fm_policy_decide (fm_policy_t *pol,
                      const fm_policy_input_t *in,
                      fm_policy_output_t *out);
void fm_policy_output_free (fm_policy_output_t *out);

/* The backend could not carry a (non-dry-run) action out: forget that it was
 * applied, so that the next decision makes it again. Call before the next
 * fm_policy_decide(). 0, or -1/EINVAL, ENOMEM.
 */
int fm_policy_action_failed (fm_policy_t *pol, const fm_action_t *a);

/* True if reason is one of ours. */
bool fm_policy_reason_ours (const char *reason);
const char *fm_policy_action_name (fm_action_kind_t k);

#define FM_POLICY_REASON_PREFIX "fabric:"

#endif /* FM_POLICY_H */
