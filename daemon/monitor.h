/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_MONITOR_H
#define FM_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon.h"
#include "error.h"
#include "policy.h"
#include "report.h"
#include "score.h"
#include "store.h"

/* fabricd's fabric loop: link windows from ingested reports feed the scoring
 * and localization (score.h); at the end of every window the policy
 * (policy.h) decides and the Slurm actions backend (actions.h) carries the
 * decision out; every action and alarm is recorded in the store
 * (fm_store_action_add()). It runs in a thread of its own, which alone uses
 * the actions handle and its own store connection.
 */
typedef struct fm_monitor fm_monitor_t;

typedef struct {
    const char *actions;    /* "auto", "libslurm", "scontrol", "none" */
    const char *slurm_conf; /* NULL or "": SLURM_CONF, else Slurm's default */
    const char *topology;   /* "auto", "flat" or a topology.conf path */
    const char *db_path;    /* the store, opened again for this thread */
    fm_store_sync_t sync;
    int64_t window_ns;
    bool auto_validate;          /* validate a drained node before resuming it */
    bool validate_check;         /* ... with fabric-check, which must pass */
    int64_t validate_backoff_ns; /* between failed validations of a node */
    fm_score_params_t score;
    fm_policy_params_t policy;
} fm_monitor_conf_t;

/* Open the store, create the actions backend (actions = none: every decision
 * is recorded as a dry run), read the topology and Slurm's node list. Fatal
 * configuration problems are NULL + err; Slurm not answering is not (the loop
 * retries). Strings in conf are copied. d outlives the monitor.
 */
fm_monitor_t *
fm_monitor_create (fm_daemon_t *d, const fm_monitor_conf_t *conf, fm_error_t *err);

/* Start the thread. */
int fm_monitor_start (fm_monitor_t *m, fm_error_t *err);

/* Stop the thread (finishing the Slurm call in progress) and free. NULL-safe. */
void fm_monitor_destroy (fm_monitor_t *m);

/* The topology text read at creation (NULL: flat); constant while m lives. */
const char *fm_monitor_topology_text (const fm_monitor_t *m);

/* Called by the report handler after a report was stored (duplicates are
 * not passed again). Copies what it needs; cheap; thread-safe. NULL-safe.
 */
void fm_monitor_ingest (fm_monitor_t *m, const fm_report_t *rep);

/* A snapshot for the API and the pages, a new reference (NULL on ENOMEM):
 * {"window_ns":N, "windows":N, "last_end_ns":N, "dry_run":B, "backend":"...",
 *  "topology":"flat"|"tree", "nodes":N, "policy":{...}, "blast":{...},
 *  "alarms":[{"element","text","at_ns"}],
 *  "drained":[{"node","reason","state"}],
 *  "elements":[{"name":"node:fmn3","kind":"node"|"uplink"|"switch",
 *               "state":"suspect"|"degraded"|"failed"|"healthy","class":"loss",
 *               "side":"rx"|"tx"|"both","score":F,"since_ns":N,
 *               "evidence":"...", "explain":"..."}]}
 * elements lists what is not healthy or recently was; drained, the nodes
 * Slurm shows with a "fabric:" reason at the last window.
 */
json_t *fm_monitor_state_json (fm_monitor_t *m);

typedef enum {
    FM_MONITOR_DRAIN,  /* reason required: becomes "fabric: manual: <reason>" */
    FM_MONITOR_RESUME, /* ours ("fabric:") only, unless force */
} fm_monitor_op_t;

/* An administrator's drain or resume (fabricctl), carried out by the loop's
 * thread between windows; waits for it. *result: "done", "already",
 * "foreign". -1 with errno/err: ENOTSUP (actions = none), EPERM (not ours
 * without force), ENOENT, EAGAIN, EINVAL, ETIMEDOUT (the loop did not get to
 * it in time).
 */
int fm_monitor_admin (fm_monitor_t *m,
                      fm_monitor_op_t op,
                      const char *node,
                      const char *reason,
                      bool force,
                      unsigned int uid,
                      char *result,
                      size_t result_len,
                      fm_error_t *err);

#define FM_MONITOR_MANUAL_PREFIX FM_POLICY_REASON_PREFIX " manual:"

#endif /* FM_MONITOR_H */
