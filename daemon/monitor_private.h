/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_MONITOR_PRIVATE_H
#define FM_MONITOR_PRIVATE_H

/* The monitor's state, shared by its files (doc/layout.md): monitor.c,
 * monitor_ingest.c, monitor_window.c, monitor_actions.c, monitor_probation.c.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actions.h"
#include "checks.h"
#include "health_map.h"
#include "hostlist.h"
#include "log.h"
#include "monitor.h"
#include "strlist.h"
#include "fmtime.h"
#include "topo.h"

/* Records waiting for the next window; past this, records are dropped and
 * counted rather than growing without bound while the loop is stuck in Slurm.
 */
#define QUEUE_MAX (1u << 20)
#define HEALTH_EVENTS_MAX 256
#define ALARMS_KEPT 64
#define JOB_NODES_MAX 65536
#define ADMIN_WAIT_NS (60LL * FM_NSEC_PER_SEC)

typedef struct {
    char src[64], dst[64];
    fm_link_window_t r; /* ids resolved at the window's end */
} qlink_t;

typedef struct {
    char node[64];
    int64_t at_ns;
    char *json;
} qhealth_t;

/* A monitored job as its reports show it. */
typedef struct {
    int64_t job_id;
    int64_t last_ns; /* realtime of its latest window */
    int mode;        /* fm_job_mode_t, -1 until looked up */
    char **nodes;    /* that reported */
    size_t nnodes;
    /* the loop's own */
    bool signaled;
    int64_t signaled_ns;
    int restarts_at_signal;
} mjob_t;

typedef struct cmd {
    struct cmd *next;
    fm_monitor_op_t op;
    char node[64];
    char reason[256];
    bool force;
    unsigned int uid;
    bool done;
    int rc, errnum;
    char result[32];
    fm_error_t err;
} cmd_t;

typedef struct {
    fm_alarm_t a;
    int64_t at_ns;
} alarm_rec_t;

/* A node drained by us that no job observes any more is validated before it
 * is resumed: held in a reservation only we can use, resumed, and probed by a
 * short monitored job with healthy peers, which also runs fabric-check.
 */
typedef struct {
    bool active;
    char node[64], peer[64], peer2[64], resv[96];
    int64_t job_id;
    int64_t started_ns, deadline_ns;
    int64_t sent, lost; /* probes to and from the node since the start */
} probation_t;

/* The validation job probes faster than jobs do, to decide in seconds. */
#define VALIDATE_RATE "50"
/* Loss decisions need this many probes, and confidence: passing wants the
 * loss below the threshold at 95% (Wilson upper bound, z 1.96: 0 lost of
 * about 770 at 0.5%), failing wants it above at z 3, so that the odd probe
 * lost while agents start does not fail a healthy node.
 */
#define VALIDATE_PROBES_MIN 200
#define VALIDATE_Z_PASS 1.96
#define VALIDATE_Z_FAIL 3.0
/* Jobs fabricd requeued get the healthy nodes before any validation does. */
#define VALIDATE_YIELD_NS (15LL * 60 * FM_NSEC_PER_SEC)

typedef struct {
    char node[64];
    int64_t not_before_ns;
} backoff_t;

#define BACKOFF_KEPT 64

struct fm_monitor {
    fm_daemon_t *d;
    fm_monitor_conf_t conf;
    char *actions_kind, *slurm_conf, *topology, *db_path;
    fm_store_t *store;
    fm_actions_t *act; /* NULL: actions = none */
    char *topo_text;   /* NULL: flat */
    fm_topo_t *topo;
    fm_score_t *score;
    fm_policy_t *pol;

    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* the loop: stop, a command */
    pthread_cond_t done; /* admins: a command finished */
    bool stop;
    qlink_t *q;
    size_t nq, qcap;
    qhealth_t *hq;
    size_t nhq, hqcap;
    uint64_t dropped;
    mjob_t *jobs;
    size_t njobs, jobs_cap;
    cmd_t *cmds;
    json_t *state;

    /* the loop's thread only */
    fm_node_info_t *slurm; /* sorted by name */
    size_t nslurm;
    bool slurm_ok;
    char **weighted; /* nodes whose weight we raised */
    size_t nweighted, weighted_cap;
    alarm_rec_t alarms[ALARMS_KEPT];
    size_t nalarms, alarm_next;
    int64_t windows, last_end;
    bool warned_slurm;
    fm_ratelimit_t rl_store, rl_link;
    int64_t *seen_ns; /* per topology node: end of the last window with probes */
    size_t nseen;
    probation_t prob;
    backoff_t backoff[BACKOFF_KEPT];
    size_t nbackoff;
    fm_actions_opts_t cmd_opts;
};

/* Protected jobs that report, with where Slurm runs them now. */
typedef struct {
    fm_policy_job_t *v;
    fm_hostlist_t **hl;
    const char ***names;
    size_t n;
    size_t waiting; /* jobs we moved that wait to start again */
} jobs_in_t;

/* monitor.c: set-up, Slurm's node list, the loop and its admin queue */
bool fm_monitor_name_fits (const char *s);
/* A topology with every node we know of, and a fresh scoring engine on it
 * (scoring state is per node id, so a new node set starts it over).
 */
int fm_monitor_engine_build (fm_monitor_t *m,
                             const char *const *extra,
                             size_t nextra,
                             fm_error_t *err);
const fm_node_info_t *fm_monitor_slurm_find (const fm_monitor_t *m, const char *name);
/* Slurm's nodes, once a window. On failure the previous list stays and the
 * policy runs without Slurm's view of new nodes (it acts on nothing it
 * cannot see).
 */
void fm_monitor_slurm_refresh (fm_monitor_t *m);
bool fm_monitor_is_manual (const char *reason);

/* monitor_actions.c: the policy's actions carried out, the jobs they touch */
void fm_monitor_actions_alarm_keep (fm_monitor_t *m, const fm_alarm_t *a, int64_t now);
int64_t fm_monitor_actions_alarms_active (const fm_monitor_t *m, int64_t now);
void fm_monitor_actions_record (fm_monitor_t *m, fm_action_rec_t *rec);
/* The monitored job whose agent on node reported last: drains are recorded
 * under it, so that its summary lists them.
 */
int64_t fm_monitor_actions_job_of_node (fm_monitor_t *m, const char *node);
void fm_monitor_actions_execute (fm_monitor_t *m, const fm_action_t *a, int64_t now);
void fm_monitor_actions_jobs_free (jobs_in_t *ji);
int fm_monitor_actions_jobs_collect (fm_monitor_t *m, int64_t now, jobs_in_t *ji);
bool fm_monitor_actions_backed_off (const fm_monitor_t *m,
                                    const char *node,
                                    int64_t now);
void fm_monitor_actions_backoff_set (fm_monitor_t *m, const char *node, int64_t until);

/* monitor_probation.c: validation of the nodes we drained */
/* End a probation: the job and the reservation go; a failed node is drained
 * again with the reason.
 */
void fm_monitor_probation_end (fm_monitor_t *m, const char *drain_reason, int64_t now);
void fm_monitor_probation_step (fm_monitor_t *m, int64_t now, size_t waiting);

/* monitor_window.c: the window close (loop thread) and the state it publishes */
json_t *
fm_monitor_window_state (fm_monitor_t *m, int64_t now, const fm_policy_params_t *pp);
void fm_monitor_window_publish (fm_monitor_t *m,
                                int64_t now,
                                const fm_policy_params_t *pp);
void fm_monitor_window_close (fm_monitor_t *m, int64_t end_ns);

#endif /* FM_MONITOR_PRIVATE_H */
