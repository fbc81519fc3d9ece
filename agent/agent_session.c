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
            snprintf (sh->peers[idx].node, sizeof (sh->peers[idx].node), "%s", node);
            snprintf (sh->peers[idx].addr, sizeof (sh->peers[idx].addr), "%s", addr);
            sh->peers[idx].port = (int)port;
            sh->peers_changed = true;
        }
    }
}

/* Node names of a plan answer as indices into v (at most cap, each once);
 * names not in the job are left out. */
static size_t
plan_indices (const shared_t *sh, json_t *names, uint16_t *v, size_t n, size_t cap)
{
    size_t i;
    json_t *x;

    json_array_foreach (names, i, x) {
        int idx = json_is_string (x)
                      ? fm_hostlist_find (sh->hosts, json_string_value (x))
                      : -1;
        bool dup = idx < 0 || strcmp (json_string_value (x), sh->cfg->node) == 0;
        for (size_t q = 0; q < n && !dup; q++) {
            dup = v[q] == (uint16_t)idx;
        }
        if (!dup && n < cap) {
            v[n++] = (uint16_t)idx;
        }
    }
    return n;
}

/* Take the targets[] and probers[] of a plan answer (under lock). */
static int take_plan (shared_t *sh, json_t *ans)
{
    json_t *targets = json_object_get (ans, "targets");
    json_t *probers = json_object_get (ans, "probers");
    size_t n = fm_hostlist_count (sh->hosts);

    if (!json_is_array (targets) || !json_is_array (probers)) {
        return -1;
    }
    json_t *plan = json_object_get (ans, "plan");
    json_int_t epoch = json_integer_value (json_object_get (plan, "epoch"));
    json_int_t next = json_integer_value (json_object_get (plan, "next_ns"));

    sh->nplan_targets = plan_indices (sh, targets, sh->plan_targets, 0, n);
    memcpy (sh->need, sh->plan_targets, sh->nplan_targets * sizeof (*sh->need));
    sh->nneed = plan_indices (sh, probers, sh->need, sh->nplan_targets, n);
    sh->have_plan = true;
    sh->plan_epoch = epoch > 0 ? (uint64_t)epoch : 0;
    sh->plan_next_real = next > 0 ? next : 0;
    return 0;
}

/* Have we the addresses of every node of our plan? (under lock) */
static bool peers_complete (const shared_t *sh)
{
    for (size_t i = 0; i < sh->nneed; i++) {
        if (sh->peers[sh->need[i]].port == 0) {
            return false;
        }
    }
    return true;
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
    if (take_plan (sh, ans) < 0) {
        pthread_mutex_unlock (&sh->lock);
        fm_warn ("registration answer from %s carries no probe plan (targets, "
                 "probers): is fabricd older than this agent?",
                 cfg->daemon_url);
        json_decref (ans);
        return -1;
    }
    json_t *plan = json_object_get (ans, "plan");
    const char *warning = json_string_value (json_object_get (plan, "warning"));
    if (warning) {
        fm_warn ("fabricd's probe plan: %s", warning);
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
    char path[64 + FM_API_NODE_MAX];
    json_t *ans = NULL, *peers;
    fm_error_t err;

    snprintf (path,
              sizeof (path),
              "/v1/jobs/%" PRIu64 "/peers?node=%s",
              sh->cfg->job_id,
              sh->cfg->node);
    if (fm_client_request (c, "GET", path, NULL, &ans, &err) != 200) {
        fm_debug ("peers: %s", err.text);
    } else if (json_unpack (ans, "{s:o}", "peers", &peers) == 0
               && json_is_array (peers)) {
        bool changed;
        pthread_mutex_lock (&sh->lock);
        take_peers (sh, peers);
        /* a new epoch's targets: the probe loop takes them at its next
         * window (close_window) */
        if (take_plan (sh, ans) < 0) {
            fm_debug ("peers answer without a plan");
        }
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

void *fm_agent_session_thread (void *arg)
{
    shared_t *sh = arg;
    fm_client_t *c;
    fm_error_t err;
    int64_t backoff = BACKOFF_MIN_NS, next_try = 0, next_peers = 0;
    fm_ratelimit_t rl = FM_RATELIMIT_INIT (60, 1);
    fm_ratelimit_t rl_register = FM_RATELIMIT_INIT (3600, 1);
    bool last_chance = false, failed_at_stop = false;
    bool poll_asked = false; /* by a datagram from an unknown sender */
    /* so that a job's agents do not all ask at the epoch's first instant */
    int64_t epoch_jitter =
        (int64_t)randombytes_uniform (2000) * 1000 * 1000 + 100 * 1000 * 1000;
    int64_t epoch_retry = 0; /* monotonic */

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
            bool complete = peers_complete (sh);
            /* the plan's next epoch, a little after fabricd's, spread out */
            bool epoch_due = sh->plan_next_real > 0 && now >= epoch_retry
                             && fm_time_real_ns () >= sh->plan_next_real + epoch_jitter;
            pthread_mutex_unlock (&sh->lock);
            if (epoch_due) {
                poll_peers (sh, c);
                /* fabricd away: ask again later, not at once */
                next_peers = epoch_retry = now + PEER_POLL_NS;
            }
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
        if (sh->registered && (!peers_complete (sh) || poll_asked)
            && next_peers < wake) {
            wake = next_peers;
        }
        if (sh->registered && sh->plan_next_real > 0) {
            int64_t at = now + (sh->plan_next_real + epoch_jitter - fm_time_real_ns ());
            at = at > epoch_retry ? at : epoch_retry;
            if (at < wake) {
                wake = at > now ? at : now;
            }
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
