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

#include "agent_private.h"

/* The probe loop's own state (the main thread). */
typedef struct {
    shared_t *sh;
    fm_engine_t *engine;
    bool started;
    uint16_t *targets;
    size_t ntargets, max_targets;
    const char **target_names;
    uint64_t plan_epoch; /* the plan epoch of targets */
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

double fm_agent_default_rate (size_t ntargets)
{
    double share = ntargets ? FM_AGENT_PROBE_BUDGET / (double)ntargets : 0;

    return ntargets && share < FM_AGENT_RATE_DEFAULT ? share : FM_AGENT_RATE_DEFAULT;
}

size_t fm_agent_target_count (size_t n, unsigned k)
{
    if (n == 0) {
        return 0;
    }
    return n - 1 <= FM_AGENT_ALL_PEERS_MAX || k >= n - 1 ? n - 1 : k;
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
    /* fabricd's plan, within the count our probe rate was set for */
    l->ntargets =
        sh->nplan_targets < l->max_targets ? sh->nplan_targets : l->max_targets;
    l->plan_epoch = sh->plan_epoch;
    for (size_t i = 0; i < l->ntargets; i++) {
        l->targets[i] = sh->plan_targets[i];
        l->target_names[i] = fm_hostlist_nth (sh->hosts, l->targets[i]);
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

/* Our estimate of the reference clock (node 0, the root of the plan's clock
 * tree, reached through our clock parent) at engine time now:
 * theta = reference - local.
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
    if (!(a = fm_health_json_render (&l->hset, FM_HEALTH_RENDER_EXTENDED, &dropped))) {
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
_Static_assert(FM_WIRE_NREASONS == FM_API_PROBE_DROP_NREASONS, "probe drop reasons");

/* A new epoch of fabricd's plan (doc/plan.md): its targets from the next
 * window on; the ones that stay keep their state. Called between windows.
 */
static void retarget (loop_t *l)
{
    shared_t *sh = l->sh;
    fm_error_t err;
    uint64_t epoch;
    size_t n;

    pthread_mutex_lock (&sh->lock);
    if (!sh->have_plan || sh->plan_epoch == l->plan_epoch) {
        pthread_mutex_unlock (&sh->lock);
        return;
    }
    n = sh->nplan_targets < l->max_targets ? sh->nplan_targets : l->max_targets;
    memcpy (l->targets, sh->plan_targets, n * sizeof (*l->targets));
    epoch = sh->plan_epoch;
    pthread_mutex_unlock (&sh->lock);
    if (fm_engine_set_targets (l->engine, l->targets, n, &err) < 0) {
        fm_warn ("plan epoch %" PRIu64 ": keeping the targets of epoch %" PRIu64 ": %s",
                 epoch,
                 l->plan_epoch,
                 err.text);
    }
    l->ntargets = fm_engine_ntargets (l->engine);
    for (size_t i = 0; i < l->ntargets; i++) {
        l->targets[i] = fm_engine_target (l->engine, i);
        l->target_names[i] = fm_hostlist_nth (sh->hosts, l->targets[i]);
    }
    l->plan_epoch = epoch;
    fm_debug ("plan epoch %" PRIu64 ": probing %zu nodes", epoch, l->ntargets);
}

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
        clock = fm_agent_report_clock (&est);
    }
    if (end <= l->window_start_real) {
        end = l->window_start_real + 1;
    }
    w = fm_agent_report_window (seq,
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
        if (fm_agent_report_add_drops (w, delta) == 0) {
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
    if (!last) {
        retarget (l);
    }
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

/* The targets among the job's n nodes, the probe rates and the coalescing
 * of wakeups that follow from them.
 */
static int targets_plan (loop_t *l, fm_engine_cfg_t *ecfg, size_t n, fm_error_t *err)
{
    const fm_agent_cfg_t *cfg = l->sh->cfg;
    double top_rate;

    if (!(l->sh->peers = calloc (n, sizeof (*l->sh->peers)))
        || !(l->sh->plan_targets = calloc (n, sizeof (*l->sh->plan_targets)))
        || !(l->sh->need = calloc (n, sizeof (*l->sh->need)))
        || !(l->targets = calloc (n, sizeof (*l->targets)))
        || !(l->target_names = calloc (n, sizeof (*l->target_names)))) {
        return fm_errprintf (err, "out of memory");
    }
    /* which ones: fabricd's plan, with the registration (start_engine) */
    l->ntargets = l->max_targets = fm_agent_target_count (n, cfg->random_peers);
    l->rate = cfg->rate > 0 ? cfg->rate : fm_agent_default_rate (l->ntargets);
    ecfg->rate = l->rate;
    /* a rate the user set is kept as it is */
    if (cfg->rate == 0 && l->rate < FM_AGENT_RATE_DEFAULT) {
        ecfg->boost_rate = l->rate * FM_AGENT_BOOST < FM_AGENT_RATE_DEFAULT
                               ? l->rate * FM_AGENT_BOOST
                               : FM_AGENT_RATE_DEFAULT;
        ecfg->boost_ns = FM_AGENT_BOOST_NS;
    }
    top_rate = ecfg->boost_rate > l->rate ? ecfg->boost_rate : l->rate;
    l->coalesce_ns = (int64_t)(1e9 / top_rate) / 2;
    if (l->coalesce_ns > COALESCE_NS) {
        l->coalesce_ns = COALESCE_NS;
    }
    /* a window holds at most rate * window samples; allow for a 60 s window */
    ecfg->max_samples = (size_t)(top_rate * 60) + 16;
    return 0;
}

/* The probe socket on the node's address (or bind_addr), the address we
 * register, and the job timeline page (the agent works without it).
 */
static int engine_open (loop_t *l, const fm_engine_cfg_t *ecfg, fm_error_t *err)
{
    const fm_agent_cfg_t *cfg = l->sh->cfg;
    struct sockaddr_storage bind_ss;
    socklen_t bind_len;
    char job[32];
    fm_error_t perr;

    if (resolve (cfg->bind_addr ? cfg->bind_addr : cfg->node,
                 cfg->port,
                 AF_UNSPEC,
                 &bind_ss,
                 &bind_len,
                 cfg->bind_addr != NULL)
        < 0) {
        return fm_errprintf (err,
                             "cannot resolve probe address %s",
                             cfg->bind_addr ? cfg->bind_addr : cfg->node);
    }
    if (!(l->engine =
              fm_engine_create (ecfg, (struct sockaddr *)&bind_ss, bind_len, err))) {
        return -1;
    }
    l->sh->probe_port = fm_engine_port (l->engine);
    snprintf (job, sizeof (job), "%" PRIu64, cfg->job_id);
    if (!(l->page =
              fm_clockpage_create (cfg->clock_page ? cfg->clock_page : job, &perr))) {
        fm_warn ("job timeline page not published: %s", perr.text);
    }
    if (getnameinfo ((struct sockaddr *)&bind_ss,
                     bind_len,
                     l->sh->probe_addr,
                     sizeof (l->sh->probe_addr),
                     NULL,
                     0,
                     NI_NUMERICHOST)
        != 0) {
        return fm_errprintf (err, "cannot format probe address");
    }
    return 0;
}

/* Health collection and NCCL steering; without them the agent still probes. */
static void health_open (loop_t *l)
{
    const fm_agent_cfg_t *cfg = l->sh->cfg;
    fm_health_conf_t hc = {.root = cfg->health_root,
                           /* ethtool reads this namespace, not a tree */
                           .no_ethtool = cfg->health_root != NULL};
    char path[4096];
    fm_error_t herr;

    if (!(l->health = fm_health_create (&hc, &herr))) {
        fm_warn ("health: not collected: %s", herr.text);
    }
    snprintf (path, sizeof (path), "%s/" FM_AGENT_STEER_FILE, cfg->statedir);
    if (l->health && !(l->steer = fm_health_steer_create (path))) {
        fm_warn ("steering: %s", strerror (errno));
    }
}

static int spool_open (shared_t *sh, fm_error_t *err)
{
    char spooldir[4096];

    snprintf (spooldir, sizeof (spooldir), "%s/spool", sh->cfg->statedir);
    if (!(sh->spool =
              fm_spool_open (spooldir, SPOOL_MAX_FILES, SPOOL_MAX_BYTES, err))) {
        return -1;
    }
    if ((sh->notify_fd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        return fm_errprintf (err, "eventfd: %s", strerror (errno));
    }
    return 0;
}

static void sync_init (shared_t *sh)
{
    pthread_condattr_t ca;

    pthread_mutex_init (&sh->lock, NULL);
    pthread_condattr_init (&ca);
    pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
    pthread_cond_init (&sh->cond, &ca);
    pthread_condattr_destroy (&ca);
}

/* Ask the session thread to stop, sending what it holds until flush_deadline
 * (0: at once), and wait for it.
 */
static void session_stop (shared_t *sh, pthread_t thread, int64_t flush_deadline)
{
    pthread_mutex_lock (&sh->lock);
    sh->stop = true;
    sh->flush_deadline = flush_deadline;
    pthread_cond_signal (&sh->cond);
    pthread_mutex_unlock (&sh->lock);
    pthread_join (thread, NULL);
}

static void started_say (const loop_t *l, int my_index, size_t n)
{
    const char *ifname;
    bool hw = fm_engine_hw_stamps (l->engine, &ifname);

    fm_info ("agent for job %" PRIu64 " on %s (index %d of %zu), probe port %d, "
             "%s timestamps (%s)",
             l->sh->cfg->job_id,
             l->sh->cfg->node,
             my_index,
             n,
             l->sh->probe_port,
             hw ? "hardware" : "software",
             ifname ? ifname : "any interface");
}

/* One ready descriptor. false when the loop is to end (*failed: with an
 * error).
 */
static bool event (loop_t *l, int fd, int sfd, bool *failed, fm_error_t *err)
{
    shared_t *sh = l->sh;
    bool go_on = true;

    if (fd == sfd) {
        struct signalfd_siginfo si;
        if (read (sfd, &si, sizeof (si)) == sizeof (si)) {
            fm_info ("signal %u: sending the last window and exiting", si.ssi_signo);
            go_on = false;
        }
    } else if (fd == sh->notify_fd) {
        drain (fd);
        pthread_mutex_lock (&sh->lock);
        if (sh->registered && !l->started && start_engine (l, err) < 0) {
            fm_err ("%s", err->text);
            go_on = false;
            *failed = true;
        } else if (l->started && sh->peers_changed) {
            apply_peers (l);
        }
        pthread_mutex_unlock (&sh->lock);
    } else if (fd == l->tfd_window) {
        drain (fd);
        close_window (l, false);
    } else if (fd == l->tfd_probe) {
        drain (fd);
    } else {
        input (l);
    }
    return go_on;
}

/* After the events of a wakeup: the probes due, the page, the next wakeup. */
static void probe_step (loop_t *l)
{
    int64_t now = fm_time_mono_ns (), deadline, wake;
    uint64_t sent = fm_engine_counters (l->engine)->sent_requests;

    fm_engine_run (l->engine, now);
    /* the software stamps of what we just sent are queued by now: read them
     * here rather than be woken for them
     */
    if (fm_engine_counters (l->engine)->sent_requests != sent) {
        input (l);
    }
    if (l->page
        && now - l->published >= (l->estimated ? PUBLISH_NS : PUBLISH_RETRY_NS)) {
        publish_clock (l);
        l->published = now;
    }
    deadline = fm_engine_deadline (l->engine);
    if (l->page && deadline > l->published + PUBLISH_MAX_NS) {
        deadline = l->published + PUBLISH_MAX_NS;
    }
    wake = deadline < now + l->coalesce_ns ? now + l->coalesce_ns : deadline;
    /* most wakeups are datagrams that leave the deadline as it was */
    if (wake != l->probe_armed) {
        arm (l->tfd_probe, wake, 0);
        l->probe_armed = wake;
    }
}

/* Until a signal, or an engine that cannot start: 0, or 1 on failure. */
static int run_loop (loop_t *l, int ep, int sfd, fm_error_t *err)
{
    bool running = true, failed = false;

    while (running) {
        struct epoll_event evs[8];
        int k = epoll_wait (ep, evs, 8, -1);

        if (k < 0 && errno != EINTR) {
            fm_err ("epoll_wait: %s", strerror (errno));
            break;
        }
        for (int i = 0; i < k; i++) {
            if (!event (l, evs[i].data.fd, sfd, &failed, err)) {
                running = false;
            }
        }
        if (l->started) {
            probe_step (l);
        }
    }
    if (l->started) {
        fm_engine_goodbye (l->engine);
        close_window (l, true);
    }
    return failed ? 1 : 0;
}

static void counters_say (const loop_t *l)
{
    const fm_engine_counters_t *c = fm_engine_counters (l->engine);
    uint64_t bad = 0;

    if (fm_spool_count (l->sh->spool) > 0) {
        /* Policy: they stay in the spool directory; the plugin's epilog
         * removes the job's state directory, so they are dropped with it.
         */
        fm_warn ("%zu windows could not be delivered", fm_spool_count (l->sh->spool));
    }
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
             (uintmax_t)l->sh->sent_windows,
             (uintmax_t)l->sh->refused_windows,
             (uintmax_t)fm_spool_dropped (l->sh->spool));
}

static void fd_close (int fd)
{
    if (fd >= 0) {
        close (fd);
    }
}

static void teardown (shared_t *sh, loop_t *l, int ep, int sfd)
{
    fd_close (ep);
    fd_close (sfd);
    fd_close (l->tfd_probe);
    fd_close (l->tfd_window);
    fd_close (sh->notify_fd);
    /* nobody stands behind the page any more: readers get ENOENT */
    fm_clockpage_destroy (l->page, true);
    fm_engine_destroy (l->engine);
    fm_health_steer_destroy (l->steer);
    fm_health_destroy (l->health);
    fm_health_set_free (&l->hset);
    fm_spool_destroy (sh->spool);
    free (l->targets);
    free (l->target_names);
    free (sh->peers);
    free (sh->plan_targets);
    free (sh->need);
    fm_hostlist_destroy (sh->hosts);
    sodium_memzero (sh->key, sizeof (sh->key));
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
    pthread_t thread;
    int ep = -1, sfd = -1, my_index, ret = 1;
    size_t n;

    if (!(sh.hosts = fm_hostlist_expand (cfg->job_nodes, FM_ENGINE_MAX_NODES, err))) {
        return 1;
    }
    n = fm_hostlist_count (sh.hosts);
    if ((my_index = fm_hostlist_find (sh.hosts, cfg->node)) < 0) {
        fm_errprintf (
            err, "node %s is not in the job's nodes %s", cfg->node, cfg->job_nodes);
        goto out;
    }
    if (targets_plan (&l, &ecfg, n, err) < 0 || engine_open (&l, &ecfg, err) < 0) {
        goto out;
    }
    health_open (&l);
    if (spool_open (&sh, err) < 0 || setup_fds (&ep, &sfd, &l, sh.notify_fd, err) < 0) {
        goto out;
    }
    sync_init (&sh);
    if (pthread_create (&thread, NULL, fm_agent_session_thread, &sh) != 0) {
        fm_errprintf (err, "cannot start the report thread");
    } else {
        started_say (&l, my_index, n);
        ret = run_loop (&l, ep, sfd, err);
        session_stop (&sh, thread, fm_time_mono_ns () + cfg->flush_ns);
        counters_say (&l);
    }
    pthread_cond_destroy (&sh.cond);
    pthread_mutex_destroy (&sh.lock);
out:
    teardown (&sh, &l, ep, sfd);
    return ret;
}
