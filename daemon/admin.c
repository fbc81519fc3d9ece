/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fm/api.h"

#include "admin.h"
#include "monitor.h"
#include "validate.h"
#include "fmtime.h"

#define ACTIONS_LIMIT_MAX 10000

json_t *fm_admin_action_json (const fm_action_rec_t *a)
{
    json_t *o = json_pack ("{s:I,s:I,s:s,s:s,s:s,s:s,s:s,s:b}",
                           "id",
                           (json_int_t)a->id,
                           "at_ns",
                           (json_int_t)a->at_ns,
                           "kind",
                           a->kind,
                           "element",
                           a->element,
                           "reason",
                           a->reason,
                           "explain",
                           a->explain,
                           "result",
                           a->result,
                           "dry_run",
                           a->dry_run);

    if (o) {
        json_object_set_new (
            o, "node", a->node[0] ? json_string (a->node) : json_null ());
        json_object_set_new (o,
                             "job_id",
                             a->job_id ? json_integer ((json_int_t)a->job_id)
                                       : json_null ());
    }
    return o;
}

static json_t *actions_array (const fm_action_rec_t *v, size_t n, bool oldest_first)
{
    json_t *a = json_array ();

    for (size_t i = 0; a && i < n; i++) {
        json_t *x = fm_admin_action_json (&v[oldest_first ? n - 1 - i : i]);
        if (!x || json_array_append_new (a, x) < 0) {
            json_decref (a);
            return NULL;
        }
    }
    return a;
}

json_t *fm_admin_job_actions (fm_daemon_t *d, int64_t job_id, fm_response_t *resp)
{
    fm_action_rec_t *v;
    size_t n;
    fm_error_t err;
    json_t *a;

    if (fm_store_actions (d->store, 0, job_id, NULL, ACTIONS_LIMIT_MAX, &v, &n, &err)
        < 0) {
        fm_api_store_error (resp, errno, err.text);
        return NULL;
    }
    a = actions_array (v, n, true);
    free (v);
    if (!a) {
        fm_api_error (resp, 500, "internal", NULL, "out of memory");
    }
    return a;
}

void fm_admin_fabric (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp)
{
    json_t *o;

    (void)req;
    if (!d->monitor) {
        fm_api_error (resp, 503, "unavailable", NULL, "the fabric loop is not running");
        return;
    }
    if (!(o = fm_monitor_state_json (d->monitor))) {
        fm_api_error (resp, 500, "internal", NULL, "out of memory");
        return;
    }
    fm_api_json (resp, 200, o);
}

static const char *query (const fm_request_t *req, const char *key)
{
    return req->query ? req->query (req->query_arg, key) : NULL;
}

static int int_param (const fm_request_t *req,
                      const char *key,
                      int64_t lo,
                      int64_t hi,
                      int64_t *v,
                      fm_response_t *resp)
{
    const char *s = query (req, key);
    char *end;
    long long x;

    if (!s) {
        return 0;
    }
    errno = 0;
    x = strtoll (s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || x < lo || x > hi) {
        fm_api_error (resp,
                      400,
                      "invalid_field",
                      key,
                      "%s: expected an integer within [%lld, %lld]",
                      key,
                      (long long)lo,
                      (long long)hi);
        return -1;
    }
    *v = x;
    return 0;
}

void fm_admin_actions (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp)
{
    int64_t since, job = 0, limit = 100;
    const char *node = query (req, "node");
    fm_action_rec_t *v;
    size_t n;
    fm_error_t err;
    json_t *a;

    if (fm_api_since (
            d, req, 24 * 3600 * FM_NSEC_PER_SEC, fm_time_real_ns (), &since, resp)
            < 0
        || int_param (req, "job", 1, FM_API_JOB_ID_MAX, &job, resp) < 0
        || int_param (req, "limit", 1, ACTIONS_LIMIT_MAX, &limit, resp) < 0) {
        return;
    }
    if (node && !fm_validate_node_name (node)) {
        fm_api_error (resp, 400, "invalid_field", "node", "node: not a node name");
        return;
    }
    if (fm_store_actions (d->store, since, job, node, (size_t)limit, &v, &n, &err)
        < 0) {
        fm_api_store_error (resp, errno, err.text);
        return;
    }
    a = actions_array (v, n, false);
    free (v);
    fm_api_json (
        resp,
        200,
        a ? json_pack ("{s:I,s:o}", "since_ns", (json_int_t)since, "actions", a)
          : NULL);
}

static const char *str_of (json_t *o, const char *key)
{
    const char *s = json_string_value (json_object_get (o, key));

    return s ? s : "";
}

/* "node:fmn3", "fmn3" (a node), "uplink:leaf1-spine", "switch:leaf1". */
void fm_admin_explain (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp)
{
    const char *name = query (req, "name");
    char element[128], node[64] = "";
    json_t *st, *elems, *x, *found = NULL, *drained = NULL;
    fm_action_rec_t *v = NULL;
    size_t n = 0, i;
    fm_error_t err;

    if (!name || !*name || strlen (name) > 100) {
        fm_api_error (resp,
                      400,
                      "invalid_field",
                      "name",
                      "name: an element or node name is required");
        return;
    }
    if (!d->monitor) {
        fm_api_error (resp, 503, "unavailable", NULL, "the fabric loop is not running");
        return;
    }
    if (strchr (name, ':')) {
        snprintf (element, sizeof (element), "%s", name);
        if (strncmp (name, "node:", 5) == 0) {
            snprintf (node, sizeof (node), "%s", name + 5);
        }
    } else {
        snprintf (element, sizeof (element), "node:%s", name);
        snprintf (node, sizeof (node), "%s", name);
    }
    if (node[0] && !fm_validate_node_name (node)) {
        fm_api_error (resp, 400, "invalid_field", "name", "name: not a node name");
        return;
    }
    if (!(st = fm_monitor_state_json (d->monitor))) {
        fm_api_error (resp, 500, "internal", NULL, "out of memory");
        return;
    }
    elems = json_object_get (st, "elements");
    json_array_foreach (elems, i, x) {
        if (strcmp (str_of (x, "name"), element) == 0) {
            found = json_incref (x);
        }
    }
    json_array_foreach (json_object_get (st, "drained"), i, x) {
        if (node[0] && strcmp (str_of (x, "node"), node) == 0) {
            drained = json_incref (x);
        }
    }
    json_decref (st);
    if (node[0] && fm_store_actions (d->store, 0, 0, node, 20, &v, &n, &err) < 0) {
        json_decref (found);
        json_decref (drained);
        fm_api_store_error (resp, errno, err.text);
        return;
    }
    json_t *acts = actions_array (v, n, false);
    free (v);
    fm_api_json (resp,
                 200,
                 acts ? json_pack ("{s:s,s:o,s:o,s:o}",
                                   "name",
                                   element,
                                   "element",
                                   found ? found : json_null (),
                                   "drained",
                                   drained ? drained : json_null (),
                                   "actions",
                                   acts)
                      : NULL);
}

void fm_admin_drain (fm_daemon_t *d,
                     const fm_request_t *req,
                     const fm_ident_t *id,
                     bool resume,
                     fm_response_t *resp)
{
    json_error_t jerr;
    json_t *body;
    const char *node = NULL, *reason = NULL;
    int force = 0;
    char result[32];
    fm_error_t err;

    if (!(body = json_loadb (req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr))
        || !json_is_object (body)) {
        json_decref (body);
        fm_api_error (resp, 400, "invalid_json", NULL, "body: %s", jerr.text);
        return;
    }
    if (resume ? json_unpack_ex (
            body, &jerr, JSON_STRICT, "{s:s, s?b}", "node", &node, "force", &force)
               : json_unpack_ex (body,
                                 &jerr,
                                 JSON_STRICT,
                                 "{s:s, s:s}",
                                 "node",
                                 &node,
                                 "reason",
                                 &reason)) {
        fm_api_error (resp, 400, "invalid_field", NULL, "body: %s", jerr.text);
        json_decref (body);
        return;
    }
    if (!fm_validate_node_name (node)) {
        fm_api_error (resp, 400, "invalid_field", "node", "node: not a node name");
        json_decref (body);
        return;
    }
    if (!d->monitor) {
        json_decref (body);
        fm_api_error (resp, 503, "unavailable", NULL, "the fabric loop is not running");
        return;
    }
    if (fm_monitor_admin (d->monitor,
                          resume ? FM_MONITOR_RESUME : FM_MONITOR_DRAIN,
                          node,
                          reason,
                          force,
                          (unsigned)id->uid,
                          result,
                          sizeof (result),
                          &err)
        < 0) {
        int e = errno;
        json_decref (body);
        switch (e) {
        case EINVAL:
            fm_api_error (resp, 400, "invalid_field", NULL, "%s", err.text);
            break;
        case EPERM:
            fm_api_error (resp, 409, "conflict", "node", "%s", err.text);
            break;
        case ENOENT:
            fm_api_error (resp, 404, "not_found", "node", "%s", err.text);
            break;
        case ENOTSUP:
            fm_api_error (resp, 501, "not_implemented", NULL, "%s", err.text);
            break;
        default:
            fm_api_error (resp, 503, "unavailable", NULL, "%s", err.text);
            break;
        }
        return;
    }
    fm_api_json (resp, 200, json_pack ("{s:s,s:s}", "node", node, "result", result));
    json_decref (body);
}
