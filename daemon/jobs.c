/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fmtime.h"
#include "jobs.h"
#include "admin.h"

#define DEFAULT_SINCE_NS (300 * FM_NSEC_PER_SEC)

static json_t *int_or_null (bool present, int64_t v)
{
    return present ? json_integer (v) : json_null ();
}

json_t *fm_jobs_link_json (const fm_link_stat_t *l)
{
    return json_pack ("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f,"
                      " s:o, s:o, s:o, s:o}",
                      "src",
                      l->src,
                      "dst",
                      l->dst,
                      "reporter",
                      l->reporter,
                      "windows",
                      (json_int_t)l->windows,
                      "last_end_ns",
                      (json_int_t)l->last_end_ns,
                      "sent",
                      (json_int_t)l->sent,
                      "received",
                      (json_int_t)l->received,
                      "lost",
                      (json_int_t)l->lost,
                      "reordered",
                      (json_int_t)l->reordered,
                      "loss_ratio",
                      l->sent > 0 ? (double)l->lost / (double)l->sent : 0.0,
                      "rtt_p50_ns",
                      int_or_null (l->has_rtt, l->rtt_p50_ns),
                      "rtt_p99_ns",
                      int_or_null (l->has_rtt, l->rtt_p99_ns),
                      "owd_p50_ns",
                      int_or_null (l->has_owd, l->owd_p50_ns),
                      "owd_p99_ns",
                      int_or_null (l->has_owd, l->owd_p99_ns));
}

/* The worst `limit` links (0: all) as JSON; *total (may be NULL): how many
 * there are in all.
 */
static json_t *links_array (fm_daemon_t *d,
                            int64_t since_ns,
                            int64_t job_id,
                            size_t limit,
                            size_t *total,
                            fm_response_t *resp)
{
    fm_link_stat_t *links = NULL;
    fm_error_t err;
    size_t n = 0;
    json_t *a;

    if (fm_store_links (d->store, since_ns, job_id, total ? 0 : limit, &links, &n, &err)
        < 0) {
        fm_api_store_error (resp, errno, err.text);
        return NULL;
    }
    if (total) {
        *total = n;
        if (limit > 0 && n > limit) {
            n = limit;
        }
    }
    if (!(a = json_array ())) {
        goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        if (json_array_append_new (a, fm_jobs_link_json (&links[i])) < 0) {
            json_decref (a);
            goto nomem;
        }
    }
    free (links);
    return a;
nomem:
    free (links);
    fm_api_error (resp, 500, "internal", NULL, "out of memory");
    return NULL;
}

/* Query `worst`: an integer within [1, 10000], else dflt. */
static int
worst_param (const fm_request_t *req, size_t dflt, size_t *limit, fm_response_t *resp)
{
    const char *worst = req->query ? req->query (req->query_arg, "worst") : NULL;
    long long v;
    char *end;

    *limit = dflt;
    if (!worst) {
        return 0;
    }
    errno = 0;
    v = strtoll (worst, &end, 10);
    if (errno != 0 || end == worst || *end != '\0' || v < 1 || v > 10000) {
        fm_api_error (resp,
                      400,
                      "invalid_field",
                      "worst",
                      "worst: must be an integer within [1, 10000]");
        return -1;
    }
    *limit = (size_t)v;
    return 0;
}

void fm_jobs_links (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp)
{
    int64_t now = fm_time_real_ns ();
    int64_t since;
    size_t limit;
    json_t *a;

    if (fm_api_since (d, req, DEFAULT_SINCE_NS, now, &since, resp) < 0
        || worst_param (req, 0, &limit, resp) < 0) {
        return;
    }
    if (!(a = links_array (d, since, 0, limit, NULL, resp))) {
        return;
    }
    fm_api_json (
        resp, 200, json_pack ("{s:I, s:o}", "since_ns", (json_int_t)since, "links", a));
}

void fm_jobs_nodes (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp)
{
    fm_node_stat_t *nodes = NULL;
    fm_error_t err;
    size_t n = 0;
    int64_t since;
    json_t *a;

    if (fm_api_since (d, req, DEFAULT_SINCE_NS, fm_time_real_ns (), &since, resp) < 0) {
        return;
    }
    if (fm_store_nodes (d->store, since, &nodes, &n, &err) < 0) {
        fm_api_store_error (resp, errno, err.text);
        return;
    }
    if (!(a = json_array ())) {
        goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        const fm_node_stat_t *x = &nodes[i];
        json_t *health = json_loads (x->health_json, 0, NULL);
        json_t *o =
            json_pack ("{s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I, s:I, s:f,"
                       " s:o, s:o}",
                       "node",
                       x->node,
                       "last_seen_ns",
                       (json_int_t)x->last_seen_ns,
                       "last_job_id",
                       (json_int_t)x->last_job_id,
                       "windows",
                       (json_int_t)x->windows,
                       "clock_offset_ns",
                       int_or_null (x->has_clock, x->clock_offset_ns),
                       "clock_error_ns",
                       int_or_null (x->has_clock, x->clock_error_ns),
                       "clock_drift_ppb",
                       x->has_drift ? json_real (x->clock_drift_ppb) : json_null (),
                       "links",
                       (json_int_t)x->links,
                       "sent",
                       (json_int_t)x->sent,
                       "lost",
                       (json_int_t)x->lost,
                       "loss_ratio",
                       x->sent > 0 ? (double)x->lost / (double)x->sent : 0.0,
                       "rtt_p99_max_ns",
                       int_or_null (x->has_rtt, x->rtt_p99_max_ns),
                       "health",
                       health ? health : json_array ());
        if (!o || json_array_append_new (a, o) < 0) {
            json_decref (a);
            goto nomem;
        }
    }
    fm_store_nodes_free (nodes, n);
    fm_api_json (
        resp, 200, json_pack ("{s:I, s:o}", "since_ns", (json_int_t)since, "nodes", a));
    return;
nomem:
    fm_store_nodes_free (nodes, n);
    fm_api_error (resp, 500, "internal", NULL, "out of memory");
}

/* 0 when the job exists and id may read it, else -1 with resp filled. */
static int job_access (fm_daemon_t *d,
                       const fm_ident_t *id,
                       int64_t job_id,
                       fm_job_t *job,
                       fm_response_t *resp)
{
    fm_error_t err;

    if (fm_store_job_get (d->store, job_id, job, &err) < 0) {
        fm_api_store_error (resp, errno, err.text);
        return -1;
    }
    sodium_memzero (job->probe_key, sizeof (job->probe_key));
    if (!fm_auth_may_read_job (d->auth, id, job->user_id)) {
        fm_api_error (resp,
                      403,
                      "forbidden",
                      NULL,
                      "uid %u may not read job %lld",
                      (unsigned)id->uid,
                      (long long)job_id);
        return -1;
    }
    return 0;
}

void fm_jobs_get (fm_daemon_t *d,
                  const fm_request_t *req,
                  const fm_ident_t *id,
                  int64_t job_id,
                  fm_response_t *resp)
{
    fm_job_t job;
    fm_agent_t *agents = NULL;
    fm_error_t err;
    size_t n = 0;
    json_t *a;

    if (job_access (d, id, job_id, &job, resp) < 0) {
        return;
    }
    if (fm_store_agents (d->store, job_id, &agents, &n, &err) < 0) {
        fm_api_store_error (resp, errno, err.text);
        return;
    }
    if (!(a = json_array ())) {
        goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *o =
            json_pack ("{s:I, s:s, s:s, s:I, s:I, s:o, s:I, s:b}",
                       "agent_id",
                       (json_int_t)agents[i].agent_id,
                       "node",
                       agents[i].node,
                       "probe_addr",
                       agents[i].probe_addr,
                       "probe_port",
                       (json_int_t)agents[i].probe_port,
                       "registered_ns",
                       (json_int_t)agents[i].registered_ns,
                       "last_seq",
                       int_or_null (agents[i].last_seq >= 0, agents[i].last_seq),
                       "windows",
                       (json_int_t)agents[i].windows,
                       "final",
                       agents[i].final);
        if (!o || json_array_append_new (a, o) < 0) {
            json_decref (a);
            goto nomem;
        }
    }
    free (agents);
    fm_api_json (resp,
                 200,
                 json_pack ("{s:I, s:s, s:I, s:I, s:I, s:I, s:o}",
                            "job_id",
                            (json_int_t)job.job_id,
                            "mode",
                            fm_registration_mode_name (job.mode),
                            "user_id",
                            (json_int_t)job.user_id,
                            "created_ns",
                            (json_int_t)job.created_ns,
                            "expected",
                            (json_int_t)job.expected,
                            "window_ns",
                            (json_int_t)job.window_ns,
                            "agents",
                            a));
    return;
nomem:
    free (agents);
    fm_api_error (resp, 500, "internal", NULL, "out of memory");
}

/* Each of the job's nodes whose latest window is this job's: its health
 * records (the agent's steering among them), for the summary.
 */
static json_t *health_array (fm_daemon_t *d, int64_t job_id, fm_response_t *resp)
{
    fm_node_stat_t *nodes = NULL;
    fm_agent_t *agents = NULL;
    size_t n = 0, na = 0;
    fm_error_t err;
    json_t *a = json_array ();

    if (!a) {
        fm_api_error (resp, 500, "internal", NULL, "out of memory");
        return NULL;
    }
    if (fm_store_agents (d->store, job_id, &agents, &na, &err) < 0
        || fm_store_nodes (d->store, 0, &nodes, &n, &err) < 0) {
        fm_api_store_error (resp, errno, err.text);
        free (agents);
        json_decref (a);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        bool ours = false;
        for (size_t k = 0; k < na && !ours; k++) {
            ours = strcmp (agents[k].node, nodes[i].node) == 0;
        }
        if (!ours || nodes[i].last_job_id != job_id || !nodes[i].health_json) {
            continue;
        }
        json_t *h = json_loads (nodes[i].health_json, 0, NULL);
        if (json_is_array (h) && json_array_size (h) > 0) {
            json_array_append_new (
                a, json_pack ("{s:s,s:o}", "node", nodes[i].node, "health", h));
        } else {
            json_decref (h);
        }
    }
    fm_store_nodes_free (nodes, n);
    free (agents);
    return a;
}

void fm_jobs_summary (fm_daemon_t *d,
                      const fm_request_t *req,
                      const fm_ident_t *id,
                      int64_t job_id,
                      fm_response_t *resp)
{
    fm_job_t job;
    fm_error_t err;
    int64_t since, windows, records;
    size_t limit, nlinks;
    json_t *a, *acts, *health;

    if (job_access (d, id, job_id, &job, resp) < 0
        || fm_api_since (d, req, -1, fm_time_real_ns (), &since, resp) < 0
        || worst_param (req, FM_JOBS_SUMMARY_LINKS, &limit, resp) < 0) {
        return;
    }
    if (fm_store_job_counts (d->store, job_id, since, &windows, &records, &err) < 0) {
        fm_api_store_error (resp, errno, err.text);
        return;
    }
    if (!(a = links_array (d, since, job_id, limit, &nlinks, resp))) {
        return;
    }
    if (!(acts = fm_admin_job_actions (d, job_id, resp))) {
        json_decref (a);
        return;
    }
    if (!(health = health_array (d, job_id, resp))) {
        json_decref (a);
        json_decref (acts);
        return;
    }
    fm_api_json (resp,
                 200,
                 json_pack ("{s:I, s:s, s:I, s:I, s:I, s:I, s:o, s:o, s:o}",
                            "job_id",
                            (json_int_t)job_id,
                            "mode",
                            fm_registration_mode_name (job.mode),
                            "since_ns",
                            (json_int_t)since,
                            "windows",
                            (json_int_t)windows,
                            "records",
                            (json_int_t)records,
                            "nlinks",
                            (json_int_t)nlinks,
                            "links",
                            a,
                            "actions",
                            acts,
                            "health",
                            health));
}
