/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_PRIVATE_H
#define FM_AGENT_PRIVATE_H

/* The agent's state shared by the probe loop (agent.c, the main thread) and
 * the session with fabricd (agent_session.c, its own thread).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>

#include "agent.h"
#include "clockpage.h"
#include "client.h"
#include "engine.h"
#include "fm/api.h"
#include "health.h"
#include "hostlist.h"
#include "log.h"
#include "report.h"
#include "spool.h"
#include "fmtime.h"

#define SPOOL_MAX_FILES 2048
#define SPOOL_MAX_BYTES (1024 * 1024)
#define BATCH_MAX 32
#define HTTP_TIMEOUT_MS 3000
#define BACKOFF_MIN_NS (1LL * FM_NSEC_PER_SEC)
#define BACKOFF_MAX_NS (30LL * FM_NSEC_PER_SEC)
#define PEER_POLL_NS (2LL * FM_NSEC_PER_SEC)
#define PEER_POLL_MIN_NS (50LL * 1000 * 1000)
#define REQUEST_TIMEOUT_NS (1LL * FM_NSEC_PER_SEC)
/* the job timeline page: refreshed at a wakeup this long after the last,
 * woken for after PUBLISH_MAX_NS, trusted for PUBLISH_VALID_NS
 */
#define PUBLISH_NS (250LL * 1000 * 1000)
#define PUBLISH_MAX_NS (1000LL * 1000 * 1000)
/* while there is no estimate, a wakeup this long after the last refresh
 * tries again: the first estimate is on the page within a wakeup or two, not
 * up to PUBLISH_NS later
 */
#define PUBLISH_RETRY_NS (20LL * 1000 * 1000)
/* Timer wakeups are coalesced: probes and timeouts that come due within
 * this much of each other, or half a probe interval when that is shorter,
 * are handled in one wakeup (a probe leaves up to that late, which its
 * randomised interval absorbs; a target gets one pair a wakeup). Arriving datagrams are
 * still answered at once: a reply's hold time, t3 - t2, is on the
 * responder's clock, and the naive estimator's offset is off by half of it
 * times the clocks' rate difference.
 */
#define COALESCE_NS (50LL * 1000 * 1000)
/* and a wakeup sends the probes due within this much (at most a quarter of
 * their interval): most then go out with an answer instead of on a wakeup
 */
#define EARLY_NS (250LL * 1000 * 1000)
#define PUBLISH_VALID_NS (2LL * FM_NSEC_PER_SEC)
/* how fast the published bound grows away from its epoch: the drift
 * uncertainty, conservatively (doc/clock.md)
 */
#define PUBLISH_BOUND_RATE_PPB 100
/* a peer polls fabricd for new nodes at least this often (PEER_POLL_NS) */
#define STARTUP_GRACE_NS PEER_POLL_NS

typedef struct {
    char node[FM_API_NODE_MAX + 1];
    char addr[INET6_ADDRSTRLEN];
    int port;
} peer_info_t;

/* State shared by the probe loop (main thread) and the HTTP thread. */
typedef struct {
    const fm_agent_cfg_t *cfg;
    fm_hostlist_t *hosts;
    char probe_addr[INET6_ADDRSTRLEN];
    int probe_port;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int notify_fd; /* eventfd: the HTTP thread has news for main */
    /* under lock */
    bool stop;
    int64_t flush_deadline; /* monotonic */
    bool registered;
    uint8_t key[FM_PROBE_KEY_SIZE];
    int64_t window_ns;
    peer_info_t *peers; /* by node index; port 0 = not registered */
    bool peers_changed;
    /* fabricd's probe plan for us (doc/plan.md): whom we probe, and the nodes
     * whose addresses we need (our targets and the nodes that probe us) */
    uint16_t *plan_targets;
    size_t nplan_targets;
    bool have_plan;
    uint64_t plan_epoch;    /* of plan_targets */
    int64_t plan_next_real; /* realtime ns of the next epoch, 0: it stays */
    uint16_t *need;
    size_t nneed;
    bool poll_now; /* a node we cannot answer yet is probing us */
    fm_spool_t *spool;
    bool last_spooled; /* the last window of this agent's life is in the spool */
    uint64_t sent_windows;
    uint64_t refused_windows;
} shared_t;

/* agent_session.c */
void *fm_agent_session_thread (void *arg);

#endif /* FM_AGENT_PRIVATE_H */
