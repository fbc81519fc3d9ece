/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <sodium.h>

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
    size_t npeers_known;
    bool peers_changed;
    bool poll_now; /* a node we cannot answer yet is probing us */
    fm_spool_t *spool;
    bool last_spooled; /* the last window of this agent's life is in the spool */
    uint64_t sent_windows;
    uint64_t refused_windows;
} shared_t;

double fm_agent_default_rate (size_t ntargets)
{
    double share = ntargets ? FM_AGENT_PROBE_BUDGET / (double)ntargets : 0;

    return ntargets && share < FM_AGENT_RATE_DEFAULT ? share : FM_AGENT_RATE_DEFAULT;
}

size_t fm_agent_pick_targets (size_t n, uint16_t self, unsigned k, uint16_t *out)
{
    size_t m = 0;

    if (n - 1 <= FM_AGENT_ALL_PEERS_MAX || k >= n - 1) {
        for (size_t i = 0; i < n; i++) {
            if (i != self) {
                out[m++] = (uint16_t)i;
            }
        }
        return m;
    }
    if (self != 0) {
        out[m++] = 0;
    }
    while (m < k) {
        uint16_t c = (uint16_t)randombytes_uniform ((uint32_t)n);
        bool dup = c == self;
        for (size_t i = 0; i < m && !dup; i++) {
            dup = out[i] == c;
        }
        if (!dup) {
            out[m++] = c;
        }
    }
    return m;
}

static int parse_key (const char *hex, uint8_t *key)
{
    size_t len;

    if (!hex || strlen (hex) != 2 * FM_PROBE_KEY_SIZE) {
        return -1;
    }
    return sodium_hex2bin (key, FM_PROBE_KEY_SIZE, hex, strlen (hex), NULL, &len, NULL)
                       == 0
                   && len == FM_PROBE_KEY_SIZE
               ? 0
               : -1;
}

/* Take the peers[] of a registration or peers answer (under lock). */
static void take_peers (shared_t *sh, json_t *peers)
{
    size_t i;
    json_t *p;

    json_array_foreach (peers, i, p) {
        const char *node, *addr;
        json_int_t port;
        int idx;

        if (json_unpack (p,
                         "{s:s, s:s, s:I}",
                         "node",
                         &node,
                         "probe_addr",
                         &addr,
                         "probe_port",
                         &port)
                < 0
            || port < 1 || port > 65535 || strlen (addr) >= INET6_ADDRSTRLEN) {
            continue;
        }
        /* ourselves: counted from the start */
        if ((idx = fm_hostlist_find (sh->hosts, node)) < 0
            || strcmp (node, sh->cfg->node) == 0) {
            continue;
        }
        if (sh->peers[idx].port != port || strcmp (sh->peers[idx].addr, addr) != 0) {
            if (sh->peers[idx].port == 0) {
                sh->npeers_known++;
            }
            snprintf (sh->peers[idx].node, sizeof (sh->peers[idx].node), "%s", node);
            snprintf (sh->peers[idx].addr, sizeof (sh->peers[idx].addr), "%s", addr);
            sh->peers[idx].port = (int)port;
            sh->peers_changed = true;
        }
    }
}

static void notify_main (shared_t *sh)
{
    uint64_t one = 1;

    if (write (sh->notify_fd, &one, sizeof (one)) < 0) {
        fm_debug ("eventfd: %s", strerror (errno));
    }
}

/* A daemon that is down or misconfigured stays so for a while: say it once an
 * hour, with the number of failed retries, not once per retry. */
static int do_register (shared_t *sh, fm_client_t *c, fm_ratelimit_t *rl)
{
    const fm_agent_cfg_t *cfg = sh->cfg;
    json_t *req, *ans = NULL, *peers;
    char *body;
    const char *key;
    json_int_t window_ns;
    fm_error_t err;
    int status;

    req = json_pack ("{s:I, s:s, s:s, s:I, s:s, s:s, s:i}",
                     "job_id",
                     (json_int_t)cfg->job_id,
                     "mode",
                     cfg->mode ? cfg->mode : "observe",
                     "node",
                     cfg->node,
                     "user_id",
                     (json_int_t)cfg->user_id,
                     "job_nodes",
                     cfg->job_nodes,
                     "probe_addr",
                     sh->probe_addr,
                     "probe_port",
                     sh->probe_port);
    if (!req || !(body = json_dumps (req, JSON_COMPACT))) {
        json_decref (req);
        return -1;
    }
    json_decref (req);
    status = fm_client_request (c, "POST", "/v1/agents", body, &ans, &err);
    free (body);
    if (status != 200 && status != 201) {
        fm_log_ratelimited (rl,
                            LOG_WARNING,
                            "registration with %s failed: %s",
                            cfg->daemon_url,
                            err.text);
        json_decref (ans);
        return -1;
    }
    if (json_unpack (ans,
                     "{s:s, s:I, s:o}",
                     "probe_key",
                     &key,
                     "window_ns",
                     &window_ns,
                     "peers",
                     &peers)
            < 0
        || !json_is_array (peers) || window_ns < FM_NSEC_PER_SEC / 10
        || window_ns > FM_API_WINDOW_MAX_NS) {
        fm_warn ("registration answer from %s is malformed", cfg->daemon_url);
        json_decref (ans);
        return -1;
    }
    pthread_mutex_lock (&sh->lock);
    if (parse_key (key, sh->key) < 0) {
        pthread_mutex_unlock (&sh->lock);
        fm_warn ("registration answer carries no valid probe_key");
        json_decref (ans);
        return -1;
    }
    sh->window_ns = cfg->window_ns > 0 ? cfg->window_ns : window_ns;
    sh->registered = true;
    take_peers (sh, peers);
    pthread_mutex_unlock (&sh->lock);
    json_decref (ans);
    fm_info ("registered for job %" PRIu64 " as %s (%s:%d)",
             cfg->job_id,
             cfg->node,
             sh->probe_addr,
             sh->probe_port);
    notify_main (sh);
    return 0;
}

static void poll_peers (shared_t *sh, fm_client_t *c)
{
    char path[64];
    json_t *ans = NULL, *peers;
    fm_error_t err;

    snprintf (path, sizeof (path), "/v1/jobs/%" PRIu64 "/peers", sh->cfg->job_id);
    if (fm_client_request (c, "GET", path, NULL, &ans, &err) != 200) {
        fm_debug ("peers: %s", err.text);
    } else if (json_unpack (ans, "{s:o}", "peers", &peers) == 0
               && json_is_array (peers)) {
        bool changed;
        pthread_mutex_lock (&sh->lock);
        take_peers (sh, peers);
        changed = sh->peers_changed;
        pthread_mutex_unlock (&sh->lock);
        if (changed) {
            notify_main (sh);
        }
    }
    json_decref (ans);
}

/* Send the oldest spooled windows in one request. 0 when the spool made
 * progress (sent, or a window the daemon refuses for good was dropped),
 * -1 when the daemon should be retried later.
 */
static int send_batch (shared_t *sh, fm_client_t *c)
{
    uint64_t seqs[BATCH_MAX];
    size_t n, used = 0;
    bool final;
    char *parts[BATCH_MAX] = {0};
    char *head = NULL, *body = NULL;
    size_t len, off;
    fm_error_t err;
    int status, ret = -1;

    pthread_mutex_lock (&sh->lock);
    n = fm_spool_oldest (sh->spool, seqs, BATCH_MAX);
    for (; used < n; used++) {
        if (!(parts[used] = fm_spool_get (sh->spool, seqs[used]))) {
            /* unreadable: cannot ever be sent */
            fm_warn ("spool: window %" PRIu64 " unreadable: %s; dropped",
                     seqs[used],
                     strerror (errno));
            fm_spool_remove (sh->spool, seqs[used]);
            break;
        }
    }
    /* A batch that empties the spool after the last window went in is the
     * last one, and says so, so that whoever reads the job's summary knows
     * that it has everything from us.
     */
    final = sh->last_spooled && used > 0 && used == fm_spool_count (sh->spool);
    pthread_mutex_unlock (&sh->lock);
    if (used == 0) {
        return n > 0 ? 0 : -1;
    }
    if (asprintf (&head,
                  "{\"job_id\":%" PRIu64 ",%s\"node\":",
                  sh->cfg->job_id,
                  final ? "\"final\":true," : "")
        < 0) {
        head = NULL;
        goto done;
    }
    {
        json_t *node = json_string (sh->cfg->node);
        char *nj = node ? json_dumps (node, JSON_ENCODE_ANY) : NULL;
        json_decref (node);
        if (!nj) {
            goto done;
        }
        len = strlen (head) + strlen (nj) + 16;
        for (size_t i = 0; i < used; i++) {
            len += strlen (parts[i]) + 1;
        }
        if (!(body = malloc (len))) {
            free (nj);
            goto done;
        }
        off = (size_t)sprintf (body, "%s%s,\"windows\":[", head, nj);
        free (nj);
    }
    for (size_t i = 0; i < used; i++) {
        off += (size_t)sprintf (body + off, "%s%s", i ? "," : "", parts[i]);
    }
    sprintf (body + off, "]}");
    status = fm_client_request (c, "POST", "/v1/reports", body, NULL, &err);
    pthread_mutex_lock (&sh->lock);
    if (status >= 200 && status <= 299) {
        for (size_t i = 0; i < used; i++) {
            fm_spool_remove (sh->spool, seqs[i]);
        }
        sh->sent_windows += used;
        ret = 0;
    } else if (status == 400 || status == 404 || status == 409 || status == 413) {
        /* Resending the same bytes can never succeed. Drop the oldest window
         * alone, so that one bad window costs itself and not the batch.
         */
        fm_warn ("daemon refused window %" PRIu64 " for good: %s; dropped",
                 seqs[0],
                 err.text);
        fm_spool_remove (sh->spool, seqs[0]);
        sh->refused_windows++;
        ret = 0;
    } else {
        fm_debug ("report: %s", err.text);
    }
    pthread_mutex_unlock (&sh->lock);
done:
    for (size_t i = 0; i < used; i++) {
        free (parts[i]);
    }
    free (head);
    free (body);
    return ret;
}

static void wait_until (shared_t *sh, int64_t mono_deadline)
{
    struct timespec ts;
    int64_t now = fm_time_mono_ns ();

    if (mono_deadline <= now) {
        return;
    }
    /* the condvar uses CLOCK_MONOTONIC (set in fm_agent_run) */
    ts = fm_time_to_timespec (mono_deadline);
    pthread_cond_timedwait (&sh->cond, &sh->lock, &ts);
}

static void *http_thread (void *arg)
{
    shared_t *sh = arg;
    fm_client_t *c;
    fm_error_t err;
    int64_t backoff = BACKOFF_MIN_NS, next_try = 0, next_peers = 0;
    fm_ratelimit_t rl = FM_RATELIMIT_INIT (60, 1);
    fm_ratelimit_t rl_register = FM_RATELIMIT_INIT (3600, 1);
    bool last_chance = false, failed_at_stop = false;
    bool poll_asked = false; /* by a datagram from an unknown sender */

    if (!(c = fm_client_create (
              sh->cfg->daemon_url, sh->cfg->munge_socket, HTTP_TIMEOUT_MS, &err))) {
        fm_err ("%s", err.text);
        return NULL;
    }
    pthread_mutex_lock (&sh->lock);
    for (;;) {
        int64_t now = fm_time_mono_ns ();
        bool registered = sh->registered;
        size_t pending = fm_spool_count (sh->spool);
        int64_t wake;

        if (sh->stop
            && (pending == 0 || !registered || failed_at_stop
                || now >= sh->flush_deadline)) {
            break;
        }
        if (sh->stop && !last_chance) {
            /* one more try regardless of the backoff; a failure ends it */
            next_try = now;
            last_chance = true;
        }
        pthread_mutex_unlock (&sh->lock);
        if (!registered) {
            if (now >= next_try) {
                if (do_register (sh, c, &rl_register) == 0) {
                    backoff = BACKOFF_MIN_NS;
                    next_try = 0;
                    next_peers = now + PEER_POLL_NS;
                } else {
                    next_try = now + backoff;
                    backoff =
                        backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
                }
            }
        } else {
            pthread_mutex_lock (&sh->lock);
            if (sh->poll_now && !poll_asked) {
                /* at most every PEER_POLL_MIN_NS however many probes arrive */
                int64_t earliest = next_peers - PEER_POLL_NS + PEER_POLL_MIN_NS;
                next_peers = earliest > now ? earliest : now;
                poll_asked = true;
            }
            sh->poll_now = false;
            bool complete = sh->npeers_known >= fm_hostlist_count (sh->hosts);
            pthread_mutex_unlock (&sh->lock);
            if ((!complete || poll_asked) && now >= next_peers) {
                poll_peers (sh, c);
                next_peers = now + PEER_POLL_NS;
                poll_asked = false;
            }
            if (pending > 0 && now >= next_try) {
                if (send_batch (sh, c) == 0) {
                    backoff = BACKOFF_MIN_NS;
                    next_try = 0;
                } else {
                    next_try = now + backoff;
                    backoff =
                        backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
                    failed_at_stop = last_chance;
                    fm_log_ratelimited (&rl,
                                        LOG_WARNING,
                                        "fabricd unreachable: %zu windows spooled",
                                        pending);
                }
            }
        }
        pthread_mutex_lock (&sh->lock);
        now = fm_time_mono_ns ();
        wake = now + 10 * FM_NSEC_PER_SEC;
        if (!sh->registered || fm_spool_count (sh->spool) > 0) {
            if (next_try > now && next_try < wake) {
                wake = next_try;
            } else if (next_try <= now) {
                continue;
            }
        }
        if (sh->registered
            && (sh->npeers_known < fm_hostlist_count (sh->hosts) || poll_asked)
            && next_peers < wake) {
            wake = next_peers;
        }
        if (sh->stop && sh->flush_deadline < wake) {
            wake = sh->flush_deadline;
        }
        if (!sh->stop && !sh->poll_now) {
            wait_until (sh, wake);
        }
    }
    pthread_mutex_unlock (&sh->lock);
    fm_client_destroy (c);
    return NULL;
}

static int resolve (const char *host,
                    int port,
                    int family,
                    struct sockaddr_storage *ss,
                    socklen_t *len,
                    bool numeric)
{
    struct addrinfo hints = {.ai_family = family, .ai_socktype = SOCK_DGRAM};
    struct addrinfo *res;
    char portstr[16];
    int rc;

    if (numeric) {
        hints.ai_flags = AI_NUMERICHOST;
    }
    snprintf (portstr, sizeof (portstr), "%d", port);
    if ((rc = getaddrinfo (host, portstr, &hints, &res)) != 0) {
        errno = EINVAL;
        return -1;
    }
    memcpy (ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo (res);
    return 0;
}

typedef struct {
    shared_t *sh;
    fm_engine_t *engine;
    bool started;
    uint16_t *targets;
    size_t ntargets;
    const char **target_names;
    int64_t window_start_real;
    uint64_t last_seq;
    uint64_t unknown_seen;
    uint64_t drops_reported[FM_API_PROBE_DROP_NREASONS]; /* engine counts so far */
    int tfd_probe;
    int64_t probe_armed; /* tfd_probe's deadline, monotonic */
    int tfd_window;
    fm_clockpage_t *page; /* NULL: not published */
    int64_t published;    /* monotonic: the page's last refresh */
    bool estimated;       /* the last refresh had an estimate to publish */
    double rate;          /* probes/s to each peer */
    int64_t coalesce_ns;  /* see COALESCE_NS */
    int64_t ref_epoch_ns; /* job time of the first valid publication, 0: none */
    fm_ratelimit_t rl_clock;
    fm_health_t *health;      /* NULL: no health records */
    fm_health_set_t hset;     /* this window's records */
    fm_health_steer_t *steer; /* NULL: no steering file */
    bool steer_failing;       /* the steering file could not be written */
    bool health_capped;       /* "records left out" was said */
} loop_t;

static void arm (int tfd, int64_t mono_deadline, int64_t interval)
{
    struct itimerspec its = {0};

    if (mono_deadline == INT64_MAX) {
        its.it_value.tv_sec = 0; /* disarm */
    } else {
        if (mono_deadline <= 0) {
            mono_deadline = 1;
        }
        its.it_value = fm_time_to_timespec (mono_deadline);
        its.it_interval = fm_time_to_timespec (interval);
    }
    if (timerfd_settime (tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        fm_err ("timerfd_settime: %s", strerror (errno));
    }
}

static void apply_peers (loop_t *l)
{
    shared_t *sh = l->sh;
    size_t n = fm_hostlist_count (sh->hosts);
    uint16_t me = (uint16_t)fm_hostlist_find (sh->hosts, sh->cfg->node);

    for (size_t i = 0; i < n; i++) {
        struct sockaddr_storage ss;
        socklen_t len;
        if (i == me || sh->peers[i].port == 0) {
            continue;
        }
        if (resolve (sh->peers[i].addr, sh->peers[i].port, AF_UNSPEC, &ss, &len, true)
                < 0
            || fm_engine_set_addr (l->engine, (uint16_t)i, (struct sockaddr *)&ss, len)
                   < 0) {
            fm_warn ("peer %s: unusable probe address %s:%d",
                     sh->peers[i].node,
                     sh->peers[i].addr,
                     sh->peers[i].port);
        }
    }
    sh->peers_changed = false;
}

static int start_engine (loop_t *l, fm_error_t *err)
{
    shared_t *sh = l->sh;
    size_t n = fm_hostlist_count (sh->hosts);
    uint16_t me = (uint16_t)fm_hostlist_find (sh->hosts, sh->cfg->node);
    fm_node_t *nodes = calloc (n, sizeof (*nodes));
    int rc;

    if (!nodes) {
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        snprintf (nodes[i].name,
                  sizeof (nodes[i].name),
                  "%s",
                  fm_hostlist_nth (sh->hosts, i));
        nodes[i].addr.ss_family = AF_UNSPEC;
    }
    rc = fm_engine_start (l->engine,
                          sh->cfg->job_id,
                          sh->key,
                          nodes,
                          n,
                          me,
                          l->targets,
                          l->ntargets,
                          err);
    free (nodes);
    if (rc < 0) {
        return -1;
    }
    apply_peers (l);
    l->started = true;
    l->window_start_real = fm_time_real_ns ();
    arm (l->tfd_window, fm_time_mono_ns () + sh->window_ns, sh->window_ns);
    fm_info ("probing %zu of %zu nodes at %.3g/s, %.3gs windows",
             l->ntargets,
             n - 1,
             l->rate,
             (double)sh->window_ns / 1e9);
    return 0;
}

/* Our estimate of the reference clock (node 0, which fm_agent_pick_targets
 * always probes) at engine time now: theta = reference - local.
 */
static bool reference_estimate (loop_t *l, int64_t now, fm_clock_estimate_t *out)
{
    return fm_engine_reference_estimate (l->engine, now, out) == 0;
}

/* Publish job time - host time on the page: the engine's clock (virtual in
 * tests) plus theta, folded onto the host clock (doc/clock.md).
 */
static void publish_clock (loop_t *l)
{
    fm_clock_estimate_t est;
    fm_clockpage_data_t d = {.ref_node = 0};
    int64_t host, now;

    if (!l->page || !l->started) {
        return;
    }
    now = fm_engine_clock_now (l->engine, &host);
    if (!reference_estimate (l, now, &est)) {
        fm_log_ratelimited (&l->rl_clock, LOG_DEBUG, "no clock estimate: %s", est.why);
        fm_clockpage_invalidate (l->page);
        l->estimated = false;
        return;
    }
    d.valid = true;
    d.epoch_ns = host;
    d.offset_ns = now - host + est.offset_ns;
    d.drift_ppb = fm_engine_clock_rate_ppb (l->engine) + est.drift_ppb;
    d.bound_ns = est.bound_ns;
    d.bound_rate_ppb = PUBLISH_BOUND_RATE_PPB;
    /* A naive estimate (--clock naive: it fills only samples[0]) has a drift
     * no better than its bound over the half window (about 1 s), and bound_ns
     * per second is bound_ns ppb.
     */
    if (est.samples[FM_CLOCK_DIR_IN] == 0 && est.bound_ns > d.bound_rate_ppb) {
        d.bound_rate_ppb = est.bound_ns;
    }
    if (l->ref_epoch_ns == 0) {
        l->ref_epoch_ns = host + d.offset_ns;
    }
    d.ref_epoch_ns = l->ref_epoch_ns;
    d.valid_until_ns = host + PUBLISH_VALID_NS;
    l->estimated = true;
    if (fm_clockpage_publish (l->page, &d) < 0) {
        fm_debug ("clock page: %s", strerror (errno));
    }
}

/* This window's health array (doc/health.md): the collectors' records, and
 * while the job is steered off degraded rails the steer record first. NULL
 * when there is none to send; every failure is logged once per streak.
 */
static json_t *health_window (loop_t *l)
{
    size_t dropped = 0;
    const char *exclude;
    json_t *a, *st;
    int rc;

    if (!l->health) {
        return NULL;
    }
    fm_health_set_clear (&l->hset);
    /* a collector that fails is logged by fm_health_sample, once per streak */
    (void)fm_health_sample (l->health, &l->hset);
    if (l->steer) {
        if ((rc = fm_health_steer_update (l->steer, &l->hset)) < 0
            && !l->steer_failing) {
            fm_warn ("steering: cannot write the NCCL_IB_HCA file: %s",
                     strerror (errno));
        } else if (rc >= 0 && l->steer_failing) {
            fm_info ("steering: NCCL_IB_HCA file written again");
        }
        l->steer_failing = rc < 0;
    }
    if (!(a = fm_health_render (&l->hset, FM_HEALTH_RENDER_EXTENDED, &dropped))) {
        fm_err ("health: out of memory: window sent without it");
        return NULL;
    }
    if (dropped > 0 && !l->health_capped) {
        fm_info ("health: %zu records over the %d of a window left out (the least "
                 "severe; said once)",
                 dropped,
                 FM_API_MAX_HEALTH);
        l->health_capped = true;
    }
    exclude = l->steer ? fm_health_steer_exclude (l->steer) : "";
    if (exclude[0] != '\0') {
        st = json_pack ("{s:s, s:s, s:s}",
                        "type",
                        "steer",
                        "var",
                        "NCCL_IB_HCA",
                        "exclude",
                        exclude);
        if (!st || json_array_insert_new (a, 0, st) < 0) {
            json_decref (a);
            return NULL;
        }
        if (json_array_size (a) > FM_API_MAX_HEALTH) {
            json_array_remove (a, json_array_size (a) - 1);
        }
    }
    return a;
}

/* the wire's reasons but FM_WIRE_OK, then unknown senders */
_Static_assert (FM_WIRE_NREASONS == FM_API_PROBE_DROP_NREASONS, "probe drop reasons");

static void close_window (loop_t *l, bool last)
{
    shared_t *sh = l->sh;
    fm_linkstats_t *stats = calloc (l->ntargets ? l->ntargets : 1, sizeof (*stats));
    int64_t end = fm_time_real_ns ();
    uint64_t seq = (uint64_t)(end / 1000000);
    fm_report_clock_t clock = {0};
    fm_clock_estimate_t est;
    json_t *w;
    char *text = NULL;
    fm_error_t err;

    if (!stats) {
        fm_err ("out of memory: window lost");
        return;
    }
    fm_engine_close_window (l->engine, stats);
    /* sequence numbers must grow across restarts of the agent: take the time */
    if (seq <= l->last_seq) {
        seq = l->last_seq + 1;
    }
    if (reference_estimate (l, fm_engine_clock_now (l->engine, NULL), &est)) {
        clock = fm_report_clock (&est);
    }
    if (end <= l->window_start_real) {
        end = l->window_start_real + 1;
    }
    w = fm_report_window (seq,
                          l->window_start_real,
                          end,
                          &clock,
                          l->target_names,
                          stats,
                          l->ntargets,
                          health_window (l));
    if (w) {
        const fm_engine_counters_t *c = fm_engine_counters (l->engine);
        uint64_t now[FM_API_PROBE_DROP_NREASONS], delta[FM_API_PROBE_DROP_NREASONS];

        for (int i = 1; i < FM_WIRE_NREASONS; i++) {
            now[i - 1] = c->dropped[i];
        }
        now[FM_WIRE_NREASONS - 1] = c->unknown_sender;
        for (int i = 0; i < FM_API_PROBE_DROP_NREASONS; i++) {
            delta[i] = now[i] - l->drops_reported[i];
        }
        if (fm_report_add_drops (w, delta) == 0) {
            memcpy (l->drops_reported, now, sizeof (now));
            text = json_dumps (w, JSON_COMPACT);
        }
    }
    json_decref (w);
    free (stats);
    l->window_start_real = end;
    if (!text) {
        fm_err ("out of memory: window lost");
        return;
    }
    fm_debug ("window %s", text);
    pthread_mutex_lock (&sh->lock);
    if (fm_spool_put (sh->spool, seq, text, &err) < 0) {
        fm_err ("window %" PRIu64 " lost: %s", seq, err.text);
    } else {
        l->last_seq = seq;
        sh->last_spooled = last;
        pthread_cond_signal (&sh->cond);
    }
    pthread_mutex_unlock (&sh->lock);
    free (text);
}

/* Read what arrived; a datagram from a node registered after our last look
 * makes the report thread ask fabricd for the peers now, rather than let
 * its probes go unanswered until the next poll.
 */
static void input (loop_t *l)
{
    const fm_engine_counters_t *c;

    fm_engine_input (l->engine);
    c = fm_engine_counters (l->engine);
    if (c->unknown_sender != l->unknown_seen) {
        l->unknown_seen = c->unknown_sender;
        pthread_mutex_lock (&l->sh->lock);
        l->sh->poll_now = true;
        pthread_cond_signal (&l->sh->cond);
        pthread_mutex_unlock (&l->sh->lock);
    }
}

static int setup_fds (int *ep, int *sfd, loop_t *l, int notify_fd, fm_error_t *err)
{
    sigset_t mask;
    struct epoll_event ev = {.events = EPOLLIN};
    int fds[5];

    sigemptyset (&mask);
    sigaddset (&mask, SIGTERM);
    sigaddset (&mask, SIGINT);
    sigaddset (&mask, SIGHUP);
    if (pthread_sigmask (SIG_BLOCK, &mask, NULL) != 0
        || (*sfd = signalfd (-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
        return fm_errprintf (err, "signalfd: %s", strerror (errno));
    }
    l->tfd_probe = timerfd_create (CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    l->tfd_window = timerfd_create (CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (l->tfd_probe < 0 || l->tfd_window < 0
        || (*ep = epoll_create1 (EPOLL_CLOEXEC)) < 0) {
        return fm_errprintf (err, "timerfd/epoll: %s", strerror (errno));
    }
    fds[0] = fm_engine_fd (l->engine);
    fds[1] = l->tfd_probe;
    fds[2] = l->tfd_window;
    fds[3] = *sfd;
    fds[4] = notify_fd;
    for (int i = 0; i < 5; i++) {
        ev.data.fd = fds[i];
        if (epoll_ctl (*ep, EPOLL_CTL_ADD, fds[i], &ev) < 0) {
            return fm_errprintf (err, "epoll_ctl: %s", strerror (errno));
        }
    }
    return 0;
}

static void drain (int fd)
{
    uint64_t v;

    while (read (fd, &v, sizeof (v)) > 0) {
    }
}

int fm_agent_run (const fm_agent_cfg_t *cfg, fm_error_t *err)
{
    shared_t sh = {.cfg = cfg, .notify_fd = -1};
    loop_t l = {.sh = &sh,
                .tfd_probe = -1,
                .tfd_window = -1,
                .rl_clock = FM_RATELIMIT_INIT (10, 5)};
    fm_engine_cfg_t ecfg = {
        .timeout_ns = REQUEST_TIMEOUT_NS,
        .max_samples = 0,
        .clock = cfg->clock,
        .estimator = cfg->estimator,
        .startup_grace_ns = STARTUP_GRACE_NS,
        .early_ns = EARLY_NS,
    };
    struct sockaddr_storage bind_ss;
    socklen_t bind_len;
    pthread_condattr_t ca;
    pthread_t thread;
    bool thread_started = false;
    char spooldir[4096];
    int ep = -1, sfd = -1, my_index, ret = 1;
    size_t n;
    double top_rate;
    bool running = true, failed = false;

    if (!(sh.hosts = fm_hostlist_expand (cfg->job_nodes, FM_ENGINE_MAX_NODES, err))) {
        return 1;
    }
    n = fm_hostlist_count (sh.hosts);
    if ((my_index = fm_hostlist_find (sh.hosts, cfg->node)) < 0) {
        fm_errprintf (
            err, "node %s is not in the job's nodes %s", cfg->node, cfg->job_nodes);
        goto out;
    }
    if (!(sh.peers = calloc (n, sizeof (*sh.peers)))
        || !(l.targets = calloc (n, sizeof (*l.targets)))
        || !(l.target_names = calloc (n, sizeof (*l.target_names)))) {
        fm_errprintf (err, "out of memory");
        goto out;
    }
    sh.npeers_known = 1; /* ourselves */
    l.ntargets =
        fm_agent_pick_targets (n, (uint16_t)my_index, cfg->random_peers, l.targets);
    for (size_t i = 0; i < l.ntargets; i++) {
        l.target_names[i] = fm_hostlist_nth (sh.hosts, l.targets[i]);
    }
    l.rate = cfg->rate > 0 ? cfg->rate : fm_agent_default_rate (l.ntargets);
    ecfg.rate = l.rate;
    /* a rate the user set is kept as it is */
    if (cfg->rate == 0 && l.rate < FM_AGENT_RATE_DEFAULT) {
        ecfg.boost_rate = l.rate * FM_AGENT_BOOST < FM_AGENT_RATE_DEFAULT
                              ? l.rate * FM_AGENT_BOOST
                              : FM_AGENT_RATE_DEFAULT;
        ecfg.boost_ns = FM_AGENT_BOOST_NS;
    }
    top_rate = ecfg.boost_rate > l.rate ? ecfg.boost_rate : l.rate;
    l.coalesce_ns = (int64_t)(1e9 / top_rate) / 2;
    if (l.coalesce_ns > COALESCE_NS) {
        l.coalesce_ns = COALESCE_NS;
    }
    /* a window holds at most rate * window samples; allow for a 60 s window */
    ecfg.max_samples = (size_t)(top_rate * 60) + 16;
    if (resolve (cfg->bind_addr ? cfg->bind_addr : cfg->node,
                 cfg->port,
                 AF_UNSPEC,
                 &bind_ss,
                 &bind_len,
                 cfg->bind_addr != NULL)
        < 0) {
        fm_errprintf (err,
                      "cannot resolve probe address %s",
                      cfg->bind_addr ? cfg->bind_addr : cfg->node);
        goto out;
    }
    if (!(l.engine =
              fm_engine_create (&ecfg, (struct sockaddr *)&bind_ss, bind_len, err))) {
        goto out;
    }
    sh.probe_port = fm_engine_port (l.engine);
    {
        char job[32];
        fm_error_t perr;
        snprintf (job, sizeof (job), "%" PRIu64, cfg->job_id);
        /* job time for the job's processes; the agent works without it */
        if (!(l.page = fm_clockpage_create (cfg->clock_page ? cfg->clock_page : job,
                                            &perr))) {
            fm_warn ("job timeline page not published: %s", perr.text);
        }
    }
    if (getnameinfo ((struct sockaddr *)&bind_ss,
                     bind_len,
                     sh.probe_addr,
                     sizeof (sh.probe_addr),
                     NULL,
                     0,
                     NI_NUMERICHOST)
        != 0) {
        fm_errprintf (err, "cannot format probe address");
        goto out;
    }
    {
        fm_health_conf_t hc = {.root = cfg->health_root,
                               /* ethtool reads this namespace, not a tree */
                               .no_ethtool = cfg->health_root != NULL};
        char path[4096];
        fm_error_t herr;

        if (!(l.health = fm_health_create (&hc, &herr))) {
            fm_warn ("health: not collected: %s", herr.text);
        }
        snprintf (path, sizeof (path), "%s/" FM_AGENT_STEER_FILE, cfg->statedir);
        if (l.health && !(l.steer = fm_health_steer_create (path))) {
            fm_warn ("steering: %s", strerror (errno));
        }
    }
    snprintf (spooldir, sizeof (spooldir), "%s/spool", cfg->statedir);
    if (!(sh.spool = fm_spool_open (spooldir, SPOOL_MAX_FILES, SPOOL_MAX_BYTES, err))) {
        goto out;
    }
    if ((sh.notify_fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        fm_errprintf (err, "eventfd: %s", strerror (errno));
        goto out;
    }
    if (setup_fds (&ep, &sfd, &l, sh.notify_fd, err) < 0) {
        goto out;
    }
    pthread_mutex_init (&sh.lock, NULL);
    pthread_condattr_init (&ca);
    pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
    pthread_cond_init (&sh.cond, &ca);
    pthread_condattr_destroy (&ca);
    if (pthread_create (&thread, NULL, http_thread, &sh) != 0) {
        fm_errprintf (err, "cannot start the report thread");
        goto out_sync;
    }
    thread_started = true;
    {
        const char *ifname;
        bool hw = fm_engine_hw_stamps (l.engine, &ifname);
        fm_info ("agent for job %" PRIu64 " on %s (index %d of %zu), probe port %d, "
                 "%s timestamps (%s)",
                 cfg->job_id,
                 cfg->node,
                 my_index,
                 n,
                 sh.probe_port,
                 hw ? "hardware" : "software",
                 ifname ? ifname : "any interface");
    }

    while (running) {
        struct epoll_event evs[8];
        int k = epoll_wait (ep, evs, 8, -1);

        if (k < 0 && errno != EINTR) {
            fm_err ("epoll_wait: %s", strerror (errno));
            break;
        }
        for (int i = 0; i < k; i++) {
            int fd = evs[i].data.fd;
            if (fd == sfd) {
                struct signalfd_siginfo si;
                if (read (sfd, &si, sizeof (si)) == sizeof (si)) {
                    fm_info ("signal %u: sending the last window and exiting",
                             si.ssi_signo);
                    running = false;
                }
            } else if (fd == sh.notify_fd) {
                drain (fd);
                pthread_mutex_lock (&sh.lock);
                if (sh.registered && !l.started && start_engine (&l, err) < 0) {
                    fm_err ("%s", err->text);
                    running = false;
                    failed = true;
                } else if (l.started && sh.peers_changed) {
                    apply_peers (&l);
                }
                pthread_mutex_unlock (&sh.lock);
            } else if (fd == l.tfd_window) {
                drain (fd);
                close_window (&l, false);
            } else if (fd == l.tfd_probe) {
                drain (fd);
            } else {
                input (&l);
            }
        }
        if (l.started) {
            int64_t now = fm_time_mono_ns (), deadline, wake;
            uint64_t sent = fm_engine_counters (l.engine)->sent_requests;

            fm_engine_run (l.engine, now);
            /* the software stamps of what we just sent are queued by now:
             * read them here rather than be woken for them
             */
            if (fm_engine_counters (l.engine)->sent_requests != sent) {
                input (&l);
            }
            if (l.page
                && now - l.published >= (l.estimated ? PUBLISH_NS : PUBLISH_RETRY_NS)) {
                publish_clock (&l);
                l.published = now;
            }
            deadline = fm_engine_deadline (l.engine);
            if (l.page && deadline > l.published + PUBLISH_MAX_NS) {
                deadline = l.published + PUBLISH_MAX_NS;
            }
            wake = deadline < now + l.coalesce_ns ? now + l.coalesce_ns : deadline;
            /* most wakeups are datagrams that leave the deadline as it was */
            if (wake != l.probe_armed) {
                arm (l.tfd_probe, wake, 0);
                l.probe_armed = wake;
            }
        }
    }
    if (l.started) {
        fm_engine_goodbye (l.engine);
        close_window (&l, true);
    }
    ret = failed ? 1 : 0;
    pthread_mutex_lock (&sh.lock);
    sh.stop = true;
    sh.flush_deadline = fm_time_mono_ns () + cfg->flush_ns;
    pthread_cond_signal (&sh.cond);
    pthread_mutex_unlock (&sh.lock);
    pthread_join (thread, NULL);
    thread_started = false;
    if (fm_spool_count (sh.spool) > 0) {
        /* Policy: they stay in the spool directory; the plugin's epilog
         * removes the job's state directory, so they are dropped with it.
         */
        fm_warn ("%zu windows could not be delivered", fm_spool_count (sh.spool));
    }
    {
        const fm_engine_counters_t *c = fm_engine_counters (l.engine);
        uint64_t bad = 0;
        for (int i = 1; i < FM_WIRE_NREASONS; i++) {
            bad += c->dropped[i];
        }
        fm_info ("sent %ju requests, %ju replies; dropped %ju bad datagrams; "
                 "%ju boosts after a loss; "
                 "%ju windows delivered, %ju refused, %ju evicted from the spool",
                 (uintmax_t)c->sent_requests,
                 (uintmax_t)c->sent_replies,
                 (uintmax_t)bad,
                 (uintmax_t)c->boosts,
                 (uintmax_t)sh.sent_windows,
                 (uintmax_t)sh.refused_windows,
                 (uintmax_t)fm_spool_dropped (sh.spool));
    }
out_sync:
    if (thread_started) {
        pthread_mutex_lock (&sh.lock);
        sh.stop = true;
        sh.flush_deadline = 0;
        pthread_cond_signal (&sh.cond);
        pthread_mutex_unlock (&sh.lock);
        pthread_join (thread, NULL);
    }
    pthread_cond_destroy (&sh.cond);
    pthread_mutex_destroy (&sh.lock);
out:
    if (ep >= 0) {
        close (ep);
    }
    if (sfd >= 0) {
        close (sfd);
    }
    if (l.tfd_probe >= 0) {
        close (l.tfd_probe);
    }
    if (l.tfd_window >= 0) {
        close (l.tfd_window);
    }
    if (sh.notify_fd >= 0) {
        close (sh.notify_fd);
    }
    /* nobody stands behind the page any more: readers get ENOENT */
    fm_clockpage_destroy (l.page, true);
    fm_engine_destroy (l.engine);
    fm_health_steer_destroy (l.steer);
    fm_health_destroy (l.health);
    fm_health_set_free (&l.hset);
    fm_spool_destroy (sh.spool);
    free (l.targets);
    free (l.target_names);
    free (sh.peers);
    fm_hostlist_destroy (sh.hosts);
    sodium_memzero (sh.key, sizeof (sh.key));
    return ret;
}
