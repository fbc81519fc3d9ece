/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fm/api.h"
#include "fmtime.h"
#include "jobplan.h"
#include "rendezvous.h"
#include "registration.h"

/* Every registered agent of the job: O(N), for readers without a node. */
static json_t *all_peers (fm_daemon_t *d, const fm_job_t *job, fm_response_t *resp)
{
    fm_agent_t *agents = NULL;
    fm_error_t err;
    size_t n = 0;
    json_t *peers;

    if (fm_store_agents (d->store, job->job_id, &agents, &n, &err) < 0) {
        fm_api_store_error (resp, errno, err.text);
        return NULL;
    }
    if (!(peers = json_array ())) {
        goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_pack ("{s:I, s:s, s:s, s:I, s:I}",
                               "agent_id",
                               (json_int_t)agents[i].agent_id,
                               "node",
                               agents[i].node,
                               "probe_addr",
                               agents[i].probe_addr,
                               "probe_port",
                               (json_int_t)agents[i].probe_port,
                               "registered_ns",
                               (json_int_t)agents[i].registered_ns);
        if (!p || json_array_append_new (peers, p) < 0) {
            json_decref (peers);
            goto nomem;
        }
    }
    free (agents);
    return peers;
nomem:
    free (agents);
    fm_api_error (resp, 500, "internal", NULL, "out of memory");
    return NULL;
}

/* The rendezvous answer (doc/api.md "Registration"): for `node`, its probe
 * plan's targets and probers and their agents (doc/plan.md); without a node
 * or without the job's node list, every agent. with_key only for reporters.
 */
static json_t *peers_json (fm_daemon_t *d,
                           const fm_job_t *job,
                           const char *node,
                           bool with_key,
                           fm_response_t *resp)
{
    char hex[FM_API_PROBE_KEY_BYTES * 2 + 1];
    fm_error_t err;
    json_t *o, *peers;

    o = json_pack ("{s:I, s:s, s:I, s:I}",
                   "job_id",
                   (json_int_t)job->job_id,
                   "mode",
                   fm_registration_mode_name (job->mode),
                   "window_ns",
                   (json_int_t)job->window_ns,
                   "expected",
                   (json_int_t)job->expected);
    if (!o) {
        fm_api_error (resp, 500, "internal", NULL, "out of memory");
        return NULL;
    }
    /* a registration without job_nodes gets no plan: every agent */
    if (node && d->plans && job->nodes[0]) {
        if (fm_jobplan_answer (d->plans,
                               d->store,
                               job,
                               node,
                               d->plan_epoch_ns,
                               fm_time_real_ns (),
                               o,
                               &err)
            < 0) {
            json_decref (o);
            if (errno == ENOENT || errno == EINVAL || errno == E2BIG) {
                fm_api_error (resp,
                              errno == ENOENT ? 404 : 409,
                              "no_plan",
                              "node",
                              "%s",
                              err.text);
            } else {
                fm_api_store_error (resp, errno, err.text);
            }
            return NULL;
        }
    } else if (!(peers = all_peers (d, job, resp))
               || json_object_set_new (o, "peers", peers) < 0) {
        json_decref (o);
        return NULL;
    }
    if (with_key) {
        sodium_bin2hex (hex, sizeof (hex), job->probe_key, sizeof (job->probe_key));
        json_object_set_new (o, "probe_key", json_string (hex));
    }
    return o;
}

void fm_rendezvous_register (fm_daemon_t *d,
                      const fm_request_t *req,
                      const fm_ident_t *id,
                      fm_response_t *resp)
{
    fm_registration_t reg;
    fm_invalid_t inv;
    fm_job_t job = {0};
    fm_agent_t agent = {0};
    fm_error_t err;
    json_error_t jerr;
    json_t *root, *o;
    int64_t agent_id;
    bool created;

    root = json_loadb (
        req->body ? req->body : "", req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root || !json_is_object (root)) {
        json_decref (root);
        fm_api_error (resp,
                      400,
                      "invalid_json",
                      NULL,
                      "body is not a JSON object: %s",
                      root ? "wrong type" : jerr.text);
        return;
    }
    if (fm_registration_parse (root, &reg, &inv) < 0) {
        json_decref (root);
        fm_api_error (resp,
                      inv.too_large ? 413 : 400,
                      inv.too_large ? "too_large" : "invalid_field",
                      inv.field,
                      "%s",
                      inv.message);
        return;
    }
    job.job_id = reg.job_id;
    job.user_id = reg.user_id;
    job.expected = reg.expected;
    job.window_ns = d->window_ns;
    job.mode = reg.mode;
    job.created_ns = fm_time_real_ns ();
    snprintf (job.nodes, sizeof (job.nodes), "%s", reg.job_nodes ? reg.job_nodes : "");
    /* Generated for every registration, kept only by the one that creates the job. */
    randombytes_buf (job.probe_key, sizeof (job.probe_key));
    snprintf (agent.node, sizeof (agent.node), "%s", reg.node);
    snprintf (agent.probe_addr, sizeof (agent.probe_addr), "%s", reg.probe_addr);
    agent.probe_port = reg.probe_port;
    agent.registered_ns = job.created_ns;
    json_decref (root);
    if (fm_store_register (
            d->store, &job, &agent, reg.nics_json, &agent_id, &created, &err)
        < 0) {
        fm_registration_release (&reg);
        sodium_memzero (job.probe_key, sizeof (job.probe_key));
        fm_api_store_error (resp, errno, err.text);
        return;
    }
    fm_registration_release (&reg);
    agent.agent_id = agent_id;
    if (d->plans) {
        fm_jobplan_agent (d->plans, job.job_id, &agent);
    }
    o = peers_json (d, &job, agent.node, true, resp);
    sodium_memzero (job.probe_key, sizeof (job.probe_key));
    if (!o) {
        return;
    }
    json_object_set_new (o, "agent_id", json_integer (agent_id));
    fm_api_json (resp, created ? 201 : 200, o);
}

void fm_rendezvous_peers (fm_daemon_t *d,
                   const fm_request_t *req,
                   const fm_ident_t *id,
                   int64_t job_id,
                   fm_response_t *resp)
{
    fm_job_t job;
    fm_error_t err;
    json_t *o;

    if (fm_store_job_get (d->store, job_id, &job, &err) < 0) {
        fm_api_store_error (resp, errno, err.text);
        return;
    }
    if (!fm_auth_may_read_job (d->auth, id, job.user_id)) {
        sodium_memzero (job.probe_key, sizeof (job.probe_key));
        fm_api_error (resp,
                      403,
                      "forbidden",
                      NULL,
                      "uid %u may not read job %lld",
                      (unsigned)id->uid,
                      (long long)job_id);
        return;
    }
    o = peers_json (d,
                    &job,
                    req->query ? req->query (req->query_arg, "node") : NULL,
                    fm_auth_is_reporter (d->auth, id),
                    resp);
    sodium_memzero (job.probe_key, sizeof (job.probe_key));
    if (o) {
        fm_api_json (resp, 200, o);
    }
}
