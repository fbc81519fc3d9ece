/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_STORE_H
#define FM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "fm/api.h"
#include "registration.h"
#include "report.h"

/* The store keeps jobs, agent registrations and report windows. It is an opaque
 * handle over a backend (store_private.h); one handle is used by one thread at a
 * time. Every function returns 0 or -1 with errno and a message in err.
 */
typedef struct fm_store fm_store_t;

typedef enum {
    FM_STORE_SYNC_NORMAL = 0,           /* durable across a crash of the daemon */
    FM_STORE_SYNC_FULL = 1,             /* durable across power loss */
    FM_STORE_BACKGROUND_CHECKPOINT = 2, /* flag: see fm_store_checkpoint() */
} fm_store_sync_t;

/* Open (creating and migrating) the store at path. backend: "sqlite". */
fm_store_t *fm_store_open (const char *backend,
                           const char *path,
                           fm_store_sync_t sync,
                           fm_error_t *err);
void fm_store_close (fm_store_t *st);

int fm_store_schema_version (fm_store_t *st);

typedef struct {
    int64_t job_id;
    int64_t user_id;
    int64_t expected;
    int64_t window_ns;
    int64_t created_ns;
    fm_job_mode_t mode; /* fixed by the job's first registration */
    unsigned char probe_key[32];
    /* the job's node list (a hostlist) as its agents gave it; "" unknown */
    char nodes[FM_API_JOB_NODES_MAX + 1];
} fm_job_t;

typedef struct {
    int64_t agent_id;
    char node[64];
    char probe_addr[64];
    int64_t probe_port;
    int64_t registered_ns;
    int64_t last_seq; /* -1 when none */
    int64_t windows;
    bool final; /* its last batch (`final: true`) arrived since it registered */
} fm_agent_t;

/* Register (job, node). A new job takes job->user_id, expected, window_ns,
 * created_ns, mode, probe_key and nodes from *job (expected and nodes also
 * when they differ: a requeued job); an existing one keeps the rest and *job is
 * overwritten with the stored values. The agent row is created or updated.
 * *created says whether (job, node) was new. EEXIST + err when the job exists
 * with another user_id.
 */
int fm_store_register (fm_store_t *st,
                       fm_job_t *job,
                       const fm_agent_t *agent,
                       const char *nics_json,
                       int64_t *agent_id,
                       bool *created,
                       fm_error_t *err);

/* Look a job up: 0, or -1/ENOENT. */
int fm_store_job_get (fm_store_t *st, int64_t job_id, fm_job_t *job, fm_error_t *err);

/* The job's agents ordered by agent_id, malloc'd into *agents. */
int fm_store_agents (
    fm_store_t *st, int64_t job_id, fm_agent_t **agents, size_t *n, fm_error_t *err);

/* Is (job, node) registered? 0 yes, -1/ENOENT no. */
int fm_store_agent_lookup (fm_store_t *st,
                           int64_t job_id,
                           const char *node,
                           fm_error_t *err);

typedef struct {
    size_t accepted;   /* windows stored */
    size_t duplicates; /* windows whose seq was already stored */
    size_t records;    /* link entries stored */
} fm_store_put_result_t;

/* Store every window of the report in one transaction: all or nothing. A
 * final report also marks the agent final (a registration clears it).
 */
int fm_store_put_report (fm_store_t *st,
                         const fm_report_t *rep,
                         fm_store_put_result_t *res,
                         fm_error_t *err);

typedef struct {
    char src[64];
    char dst[64];
    char reporter[64];
    int64_t windows;
    int64_t last_end_ns;
    int64_t sent, received, lost, reordered;
    bool has_rtt, has_owd;
    int64_t rtt_p50_ns, rtt_p99_ns, owd_p50_ns, owd_p99_ns;
} fm_link_stat_t;

/* Links from windows ending at or after since_ns, of job_id (0: all jobs), in
 * the order of doc/api.md (worst first). limit 0: all.
 */
int fm_store_links (fm_store_t *st,
                    int64_t since_ns,
                    int64_t job_id,
                    size_t limit,
                    fm_link_stat_t **links,
                    size_t *n,
                    fm_error_t *err);

typedef struct {
    char node[64];
    int64_t last_seen_ns;
    int64_t last_job_id;
    int64_t windows;
    bool has_clock;
    int64_t clock_offset_ns, clock_error_ns;
    bool has_drift;
    double clock_drift_ppb;
    int64_t links;
    int64_t sent, lost;
    bool has_rtt;
    int64_t rtt_p99_max_ns;
    char *health_json; /* latest window's health array, malloc'd */
} fm_node_stat_t;

int fm_store_nodes (fm_store_t *st,
                    int64_t since_ns,
                    fm_node_stat_t **nodes,
                    size_t *n,
                    fm_error_t *err);
void fm_store_nodes_free (fm_node_stat_t *nodes, size_t n);

typedef struct {
    int64_t jobs, nodes, windows, records;
} fm_store_counts_t;

int fm_store_counts (fm_store_t *st, fm_store_counts_t *c, fm_error_t *err);

/* Windows and records of one job ending at or after since_ns. */
int fm_store_job_counts (fm_store_t *st,
                         int64_t job_id,
                         int64_t since_ns,
                         int64_t *windows,
                         int64_t *records,
                         fm_error_t *err);

/* Delete windows that ended before before_ns, and jobs left without windows that
 * were created before it. *removed = windows deleted.
 */
int fm_store_prune (fm_store_t *st,
                    int64_t before_ns,
                    int64_t *removed,
                    fm_error_t *err);

/* Move committed data from the log into the database without blocking writers.
 * fabricd's HTTP connection opens with FM_STORE_BACKGROUND_CHECKPOINT and the main
 * thread calls this every second on its own connection, so that the fsync of a
 * checkpoint does not delay answers; the HTTP connection still checkpoints
 * itself when the log passes 64 MiB (the log can only restart from its
 * beginning once a writer sees it fully copied).
 */
int fm_store_checkpoint (fm_store_t *st, fm_error_t *err);

/* One thing fabricd's policy did or decided (daemon/monitor.c), kept for
 * `fabricctl drains/explain`, the job summary and the per-job page. Strings
 * are NUL-terminated and cut to their buffers.
 */
typedef struct {
    int64_t id;         /* assigned by fm_store_action_add() */
    int64_t at_ns;      /* realtime */
    char kind[16];      /* drain resume weight signal requeue alarm */
    char node[64];      /* "" when not about a node */
    int64_t job_id;     /* 0 when not about a job */
    char element[96];   /* "node:fmn3", "uplink:leaf0-spine0", "policy" */
    char reason[256];   /* drain: the Slurm reason; others: why */
    char explain[1024]; /* the evidence chain behind it */
    char result[64];    /* done already foreign dry_run "error: EAGAIN: ..." */
    bool dry_run;
} fm_action_rec_t;

/* Append a record; rec->id is set. */
int fm_store_action_add (fm_store_t *st, fm_action_rec_t *rec, fm_error_t *err);

/* Records at or after since_ns, newest first, filtered by job_id (0: any) and
 * node (NULL: any); the monitor records a drain made for a job's sake with
 * that job's id. limit 0: all. malloc'd.
 */
int fm_store_actions (fm_store_t *st,
                      int64_t since_ns,
                      int64_t job_id,
                      const char *node,
                      size_t limit,
                      fm_action_rec_t **recs,
                      size_t *n,
                      fm_error_t *err);

/* For the HTML pages (webpage.h). */
typedef struct {
    char node[64];
    int64_t end_ns;   /* the latest window end of the bucket */
    int64_t error_ns; /* the largest clock error bound of the bucket */
} fm_clock_point_t;

/* The clock error bound of each node of job_id over the job's windows that
 * carry a clock estimate, in at most `buckets` time buckets per node (each
 * the largest bound of its windows, so that a spike is never averaged away),
 * ordered by node then time; at most max_points in all. malloc'd into *pts;
 * *n may be 0. -1/ENOTSUP for a backend without it.
 */
int fm_store_clock_series (fm_store_t *st,
                           int64_t job_id,
                           size_t buckets,
                           size_t max_points,
                           fm_clock_point_t **pts,
                           size_t *n,
                           fm_error_t *err);

const char *fm_store_backend (const fm_store_t *st);

#endif /* FM_STORE_H */
