/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_AGENT_H
#define FM_AGENT_AGENT_H

#include <stdint.h>
#include <sys/types.h>

#include "clock.h"
#include "vclock.h"
#include "error.h"

/* Peers probed when the job has more nodes than this (plus one). */
#define FM_AGENT_ALL_PEERS_MAX 16
#define FM_AGENT_RANDOM_PEERS 10
/* Default probing: FM_AGENT_RATE_DEFAULT probes/s to each peer, but at most
 * FM_AGENT_PROBE_BUDGET/s from a node in all, so that a node's cost does not
 * grow with its peers: 16 peers get 0.75/s each (bench/agent-cost).
 */
#define FM_AGENT_RATE_DEFAULT 10.0
#define FM_AGENT_PROBE_BUDGET 12.0
/* At default probing, a peer that lost a probe is probed FM_AGENT_BOOST times
 * as often (at most FM_AGENT_RATE_DEFAULT) until FM_AGENT_BOOST_NS after its
 * last loss: a lossy link shows soon, a healthy fabric stays cheap.
 */
#define FM_AGENT_BOOST 4.0
#define FM_AGENT_BOOST_NS (30LL * 1000 * 1000 * 1000)

typedef struct {
    const char *daemon_url;
    uint64_t job_id;
    const char *node;         /* our name in the job's node list */
    const char *job_nodes;    /* hostlist expression */
    uid_t user_id;            /* the job's owner */
    const char *munge_socket; /* NULL: munge's default */
    const char *statedir;     /* spool lives in statedir/spool */
    double rate;              /* probes/s per peer; 0: fm_agent_default_rate() */
    int64_t window_ns;        /* 0: the daemon's report window */
    int port;                 /* UDP probe port, 0: any */
    const char *bind_addr;    /* NULL: the address our node name resolves to */
    unsigned random_peers; /* targets in jobs over FM_AGENT_ALL_PEERS_MAX + 1 nodes */
    fm_vclock_params_t clock; /* tests, benchmarks: this node's virtual clock */
    int64_t flush_ns;         /* on SIGTERM, try this long to deliver the spool */
    const char *mode;         /* the job's mode: "observe" or "protect" */
    fm_clock_est_type_t estimator; /* naive or huygens */
    const char *clock_page;        /* NULL: the job's shm page (libfmclock) */
    const char *health_root;       /* NULL: "/"; else a recorded sysfs tree */
} fm_agent_cfg_t;

/* In statedir: the HCA ports the job's new steps leave out of NCCL_IB_HCA
 * ("mlx5_1:1,mlx5_3:1\n"), for the SPANK plugin (doc/health.md "Steering").
 * Absent: no steering.
 */
#define FM_AGENT_STEER_FILE "nccl_ib_hca"

/* Run until SIGTERM/SIGINT: register, probe, report every window, and on the
 * signal close the last window and try to deliver everything spooled.
 * Returns the exit status (0 after a clean stop), with err on startup errors.
 */
int fm_agent_run (const fm_agent_cfg_t *cfg, fm_error_t *err);

/* How many of a job's n nodes a node probes: every other node when
 * n - 1 <= FM_AGENT_ALL_PEERS_MAX, else k. fabricd's probe plan chooses them
 * (doc/plan.md); the probe budget is shared by this many.
 */
size_t fm_agent_target_count (size_t n, unsigned k);

/* The default probes/s to each of ntargets peers. */
double fm_agent_default_rate (size_t ntargets);

#endif /* FM_AGENT_AGENT_H */
