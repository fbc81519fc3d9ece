/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_JOBPLAN_H
#define FM_JOBPLAN_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"
#include "store.h"

/* The probe plans of recent jobs (doc/plan.md), with their agents' probe
 * addresses, so that the rendezvous answers each agent with its own targets
 * and probers only: O(k) per answer, not O(N). A job's entry is built on
 * first use from its node list (fm_job_t.nodes), the topology text and the
 * job's agents in the store; registrations keep it current. Least recently
 * used jobs go first when the entries hold more than max_nodes nodes.
 * Thread-safe.
 */
typedef struct fm_jobplan fm_jobplan_t;

/* fabricd's bound: about 200 bytes a node, 50 MB. */
#define FM_JOBPLAN_NODES_KEPT (256 * 1024)

/* topo_text: a topology (fm_topo_parse), NULL for none; copied. NULL/ENOMEM. */
fm_jobplan_t *fm_jobplan_create (const char *topo_text, size_t max_nodes);
void fm_jobplan_destroy (fm_jobplan_t *c);

/* A registration: keep node's address if the job's plan is cached. */
void fm_jobplan_agent (fm_jobplan_t *c, int64_t job_id, const fm_agent_t *agent);

/* Set in o (the rendezvous answer) for `node` of job at realtime now_ns:
 * "peers" (the agents among its targets and probers that registered),
 * "targets" and "probers" (node names), "plan" ({"epoch", "epoch_ns",
 * "next_ns", "nodes", "depth", "parent" (its clock parent, null for the
 * root), "warning"?}). Epochs of epoch_ns (0: the plan
 * stays at epoch 0) count from the job's creation. -1 with err: ENOENT (node
 * not in the job), EINVAL (no node list or a bad one), ENOMEM, or a store
 * error's errno.
 */
int fm_jobplan_answer (fm_jobplan_t *c,
                       fm_store_t *st,
                       const fm_job_t *job,
                       const char *node,
                       int64_t epoch_ns,
                       int64_t now_ns,
                       json_t *o,
                       fm_error_t *err);

#endif /* FM_JOBPLAN_H */
