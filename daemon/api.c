/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fm/api.h"
#include "duration.h"
#include "fmtime.h"
#include "api.h"
#include "arena.h"
#include "jobs.h"
#include "rendezvous.h"
#include "report_parse.h"
#include "webpage.h"
#include "admin.h"
#include "monitor.h"
#include "checks.h"

enum route {
    R_STATUS,
    R_AGENTS,
    R_REPORTS,
    R_NODES,
    R_LINKS,
    R_JOB,
    R_JOB_PEERS,
    R_JOB_SUMMARY,
    R_METRICS,
    R_PAGE_INDEX,
    R_PAGE_JOB,
    R_FABRIC,
    R_ACTIONS,
    R_EXPLAIN,
    R_DRAIN,
    R_RESUME,
    R_CHECKS,
    R_CHECKS_QUERY,
    R_OTHER,
};

const char *const fm_api_route_names[] = {
    [R_STATUS] = "/v1/status",
    [R_AGENTS] = "/v1/agents",
    [R_REPORTS] = "/v1/reports",
    [R_NODES] = "/v1/nodes",
    [R_LINKS] = "/v1/links",
    [R_JOB] = "/v1/jobs/{id}",
    [R_JOB_PEERS] = "/v1/jobs/{id}/peers",
    [R_JOB_SUMMARY] = "/v1/jobs/{id}/summary",
    [R_METRICS] = "/metrics",
    [R_PAGE_INDEX] = "/",
    [R_PAGE_JOB] = "/jobs/{id}",
    [R_FABRIC] = "/v1/fabric",
    [R_ACTIONS] = "/v1/actions",
    [R_EXPLAIN] = "/v1/explain",
    [R_DRAIN] = "/v1/drain",
    [R_RESUME] = "/v1/resume",
    [R_CHECKS] = "/v1/checks",
    /* same path, GET: told apart by method in fm_api_handle_as */
    [R_CHECKS_QUERY] = "/v1/checks?job={id}",
    [R_OTHER] = "other",
};
const size_t fm_api_nroutes =
    sizeof (fm_api_route_names) / sizeof (fm_api_route_names[0]);

typedef enum {
    ROLE_PUBLIC,   /* no credential */
    ROLE_REPORTER, /* root or report_uids */
    ROLE_ADMIN,
    ROLE_JOB,      /* the job's owner, admins, reporters: checked by the handler */
    ROLE_METRICS,  /* public or admin, by configuration */
    ROLE_PAGE,     /* public or admin, by configuration (pages_public) */
    ROLE_PAGE_JOB, /* public or as ROLE_JOB, by configuration */
} role_t;

static const struct {
    const char *method;
    role_t role;
} routes[] = {
    [R_STATUS] = {"GET", ROLE_PUBLIC},
    [R_AGENTS] = {"POST", ROLE_REPORTER},
    [R_REPORTS] = {"POST", ROLE_REPORTER},
    [R_NODES] = {"GET", ROLE_ADMIN},
    [R_LINKS] = {"GET", ROLE_ADMIN},
    [R_JOB] = {"GET", ROLE_JOB},
    [R_JOB_PEERS] = {"GET", ROLE_JOB},
    [R_JOB_SUMMARY] = {"GET", ROLE_JOB},
    [R_METRICS] = {"GET", ROLE_METRICS},
    [R_PAGE_INDEX] = {"GET", ROLE_PAGE},
    [R_PAGE_JOB] = {"GET", ROLE_PAGE_JOB},
    [R_FABRIC] = {"GET", ROLE_ADMIN},
    [R_ACTIONS] = {"GET", ROLE_ADMIN},
    [R_EXPLAIN] = {"GET", ROLE_ADMIN},
    [R_DRAIN] = {"POST", ROLE_ADMIN},
    [R_RESUME] = {"POST", ROLE_ADMIN},
    [R_CHECKS] = {"POST", ROLE_JOB},
    [R_CHECKS_QUERY] = {"GET", ROLE_JOB},
};

void fm_api_error (fm_response_t *resp,
                   int status,
                   const char *code,
                   const char *field,
                   const char *fmt,
                   ...)
{
    char msg[512];
    va_list ap;
    json_t *e;

    va_start (ap, fmt);
    vsnprintf (msg, sizeof (msg), fmt, ap);
    va_end (ap);
    e = json_pack ("{s:s, s:s}", "code", code, "message", msg);
    if (e && field) {
        json_object_set_new (e, "field", json_string (field));
    }
    fm_api_json (resp, status, e ? json_pack ("{s:o}", "error", e) : NULL);
    if (resp->status == status) {
        resp->error_code = code;
    }
}

void fm_api_json (fm_response_t *resp, int status, json_t *o)
{
    char *text = o ? fm_arena_json_dump (o) : NULL;

    json_decref (o);
    free (resp->body);
    resp->content_type = "application/json";
    if (!text) {
        static const char oom[] = "{\"error\":{\"code\":\"internal\","
                                  "\"message\":\"out of memory\"}}";
        resp->status = 500;
        resp->error_code = "internal";
        resp->body = strdup (oom);
        resp->len = resp->body ? strlen (oom) : 0;
        return;
    }
    resp->status = status;
    resp->len = strlen (text);
    resp->body = text;
}

void fm_api_store_error (fm_response_t *resp, int errnum, const char *text)
{
    switch (errnum) {
    case ENOENT:
        fm_api_error (resp, 404, "not_found", NULL, "%s", text);
        break;
    case EEXIST:
        fm_api_error (resp, 409, "conflict", NULL, "%s", text);
        break;
    case EBUSY:
        fm_api_error (resp, 503, "unavailable", NULL, "store busy: %s", text);
        break;
    case ENOSPC:
        fm_api_error (resp, 503, "unavailable", NULL, "store full: %s", text);
        break;
    default:
        fm_api_error (resp, 500, "internal", NULL, "%s", text);
        break;
    }
}

int fm_api_since (fm_daemon_t *d,
                  const fm_request_t *req,
                  int64_t def_ns,
                  int64_t now_ns,
                  int64_t *since_ns,
                  fm_response_t *resp)
{
    const char *s = req->query ? req->query (req->query_arg, "since") : NULL;
    int64_t ns;

    if (!s) {
        *since_ns = def_ns < 0 ? 0 : now_ns - def_ns;
        return 0;
    }
    if (fm_duration_parse (s, &ns) < 0) {
        fm_api_error (resp,
                      400,
                      "invalid_field",
                      "since",
                      "since: not a duration ('5m', '1h', ...)");
        return -1;
    }
    if (ns > d->retention_ns) {
        fm_api_error (resp,
                      400,
                      "invalid_field",
                      "since",
                      "since: longer than the retention (%lld s)",
                      (long long)(d->retention_ns / FM_NSEC_PER_SEC));
        return -1;
    }
    *since_ns = now_ns - ns;
    return 0;
}

/* "/v1/jobs/123[/peers|/summary]", the page "/jobs/123" */
static int match (const char *path, int64_t *job_id)
{
    static const char jobs[] = "/v1/jobs/", page[] = "/jobs/";
    const char *p;
    char *end;
    long long v;

    for (int r = 0; r < R_OTHER; r++) {
        if (r != R_JOB && r != R_JOB_PEERS && r != R_JOB_SUMMARY && r != R_PAGE_JOB
            && strcmp (path, fm_api_route_names[r]) == 0) {
            return r;
        }
    }
    if (strncmp (path, page, sizeof (page) - 1) == 0) {
        p = path + sizeof (page) - 1;
    } else if (strncmp (path, jobs, sizeof (jobs) - 1) == 0) {
        p = path + sizeof (jobs) - 1;
    } else {
        return R_OTHER;
    }
    if (*p < '1' || *p > '9') {
        return R_OTHER;
    }
    errno = 0;
    v = strtoll (p, &end, 10);
    if (errno != 0 || v > FM_API_JOB_ID_MAX) {
        return R_OTHER;
    }
    *job_id = v;
    if (p == path + sizeof (page) - 1) {
        return *end == '\0' ? R_PAGE_JOB : R_OTHER;
    }
    if (*end == '\0') {
        return R_JOB;
    }
    if (strcmp (end, "/peers") == 0) {
        return R_JOB_PEERS;
    }
    if (strcmp (end, "/summary") == 0) {
        return R_JOB_SUMMARY;
    }
    return R_OTHER;
}

static bool is_json (const char *ct)
{
    static const char want[] = "application/json";
    size_t n = sizeof (want) - 1;

    return ct && strncasecmp (ct, want, n) == 0
           && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static void status (fm_daemon_t *d, fm_response_t *resp)
{
    fm_store_counts_t c;
    fm_ingest_counts_t ic;
    fm_error_t err;
    json_t *o;

    if (fm_store_counts (d->store, &c, &err) < 0) {
        fm_api_store_error (resp, errno, err.text);
        return;
    }
    fm_metrics_ingest_counts (d->metrics, &ic);
    o = json_pack ("{s:s, s:s, s:s, s:I, s:I, s:b,"
                   " s:{s:s, s:i, s:I, s:I, s:I, s:I},"
                   " s:{s:I, s:I, s:I, s:I, s:I}}",
                   "status",
                   "ok",
                   "version",
                   PACKAGE_VERSION,
                   "api",
                   FM_API_VERSION_STRING,
                   "uptime_ns",
                   (json_int_t)(fm_time_mono_ns () - d->start_mono_ns),
                   "now_ns",
                   (json_int_t)fm_time_real_ns (),
                   "insecure",
                   d->insecure,
                   "store",
                   "backend",
                   fm_store_backend (d->store),
                   "schema_version",
                   fm_store_schema_version (d->store),
                   "jobs",
                   (json_int_t)c.jobs,
                   "nodes",
                   (json_int_t)c.nodes,
                   "windows",
                   (json_int_t)c.windows,
                   "records",
                   (json_int_t)c.records,
                   "ingest",
                   "requests",
                   (json_int_t)ic.requests,
                   "windows",
                   (json_int_t)ic.windows,
                   "duplicates",
                   (json_int_t)ic.duplicates,
                   "records",
                   (json_int_t)ic.records,
                   "rejected",
                   (json_int_t)ic.rejected);
    fm_api_json (resp, 200, o);
}

static void reports (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp)
{
    fm_report_t rep;
    fm_invalid_t inv;
    fm_store_put_result_t res;
    fm_error_t err;

    if (fm_report_parse (req->body, req->body_len, fm_time_real_ns (), &rep, &inv)
        < 0) {
        if (inv.syntax) {
            fm_api_error (resp, 400, "invalid_json", NULL, "%s", inv.message);
        } else if (inv.too_large) {
            fm_api_error (resp, 413, "too_large", inv.field, "%s", inv.message);
        } else {
            fm_api_error (resp, 400, "invalid_field", inv.field, "%s", inv.message);
        }
        return;
    }
    if (fm_store_agent_lookup (d->store, rep.job_id, rep.node, &err) < 0
        || fm_store_put_report (d->store, &rep, &res, &err) < 0) {
        fm_api_store_error (resp, errno, err.text);
        fm_report_parse_release (&rep);
        return;
    }
    /* A batch with windows stored before (a resend whose answer was lost) is
     * not scored again: its evidence was counted, or is stale by now.
     */
    if (res.duplicates == 0) {
        int64_t drops[FM_API_PROBE_DROP_NREASONS] = {0};
        bool any = false;

        fm_monitor_ingest (d->monitor, &rep);
        for (size_t w = 0; w < rep.nwindows; w++) {
            for (int i = 0; i < FM_API_PROBE_DROP_NREASONS; i++) {
                drops[i] += rep.windows[w].probe_drops[i];
                any = any || rep.windows[w].probe_drops[i] > 0;
            }
        }
        if (any) {
            fm_metrics_probe_drops (d->metrics, rep.node, drops);
        }
    }
    fm_report_parse_release (&rep);
    fm_metrics_ingest (d->metrics, res.accepted, res.records, res.duplicates);
    fm_api_json (resp,
                 200,
                 json_pack ("{s:I, s:I, s:I}",
                            "accepted",
                            (json_int_t)res.accepted,
                            "duplicates",
                            (json_int_t)res.duplicates,
                            "records",
                            (json_int_t)res.records));
}

static void metrics (fm_daemon_t *d, fm_response_t *resp)
{
    fm_error_t err;
    size_t len;
    char *text;

    text = fm_metrics_render (d->metrics,
                              d->store,
                              fm_time_real_ns () - 300 * FM_NSEC_PER_SEC,
                              d->start_real_ns,
                              d->metrics_links,
                              &len,
                              &err);
    if (!text) {
        fm_api_store_error (resp, errno, err.text);
        return;
    }
    free (resp->body);
    resp->status = 200;
    resp->body = text;
    resp->len = len;
    resp->content_type = "text/plain; version=0.0.4";
}

static const char *auth_code (fm_auth_result_t r)
{
    switch (r) {
    case FM_AUTH_REQUIRED:
        return "auth_required";
    case FM_AUTH_REPLAYED:
        return "auth_replayed";
    case FM_AUTH_MISMATCH:
        return "auth_mismatch";
    default:
        return "auth_invalid";
    }
}

static void handle (fm_daemon_t *d,
                    const fm_request_t *req,
                    const fm_ident_t *as,
                    int route,
                    int64_t job_id,
                    fm_response_t *resp)
{
    fm_ident_t ident;
    role_t role;

    if (route == R_OTHER) {
        fm_api_error (resp, 404, "not_found", NULL, "no such endpoint: %s", req->path);
        return;
    }
    if (strcmp (req->method, routes[route].method) != 0) {
        fm_api_error (resp,
                      405,
                      "method_not_allowed",
                      NULL,
                      "%s takes %s, not %s",
                      fm_api_route_names[route],
                      routes[route].method,
                      req->method);
        return;
    }
    if (strcmp (req->method, "POST") == 0) {
        if (req->too_large) {
            fm_api_error (resp,
                          413,
                          "too_large",
                          NULL,
                          "body is larger than %lld bytes",
                          (long long)d->max_body);
            return;
        }
        if (!req->has_body) {
            fm_api_error (
                resp, 411, "length_required", NULL, "a JSON body is required");
            return;
        }
        if (!is_json (req->content_type)) {
            fm_api_error (resp,
                          415,
                          "unsupported_media_type",
                          NULL,
                          "Content-Type must be application/json");
            return;
        }
    }
    role = routes[route].role;
    if (role == ROLE_METRICS) {
        role = d->metrics_public ? ROLE_PUBLIC : ROLE_ADMIN;
    } else if (role == ROLE_PAGE) {
        role = d->pages_public ? ROLE_PUBLIC : ROLE_ADMIN;
    } else if (role == ROLE_PAGE_JOB) {
        role = d->pages_public ? ROLE_PUBLIC : ROLE_JOB;
    }
    if (role != ROLE_PUBLIC) {
        if (as) {
            ident = *as;
        } else {
            char msg[256];
            fm_auth_result_t r;
            r = fm_auth_identify (d->auth,
                                  req->method,
                                  req->uri,
                                  req->authorization,
                                  req->body,
                                  req->body_len,
                                  &ident,
                                  msg,
                                  sizeof (msg));
            if (r == FM_AUTH_ERROR) {
                fm_api_error (resp, 503, "unavailable", NULL, "%s", msg);
                return;
            }
            if (r != FM_AUTH_OK) {
                fm_api_error (resp, 401, auth_code (r), NULL, "%s", msg);
                return;
            }
        }
        if ((role == ROLE_REPORTER && !fm_auth_is_reporter (d->auth, &ident))
            || (role == ROLE_ADMIN && !fm_auth_is_admin (d->auth, &ident))) {
            fm_api_error (resp,
                          403,
                          "forbidden",
                          NULL,
                          "uid %u may not %s %s",
                          (unsigned)ident.uid,
                          req->method,
                          fm_api_route_names[route]);
            return;
        }
    }
    switch (route) {
    case R_STATUS:
        status (d, resp);
        break;
    case R_AGENTS:
        fm_rendezvous_register (d, req, &ident, resp);
        break;
    case R_REPORTS:
        reports (d, req, resp);
        break;
    case R_NODES:
        fm_jobs_nodes (d, req, resp);
        break;
    case R_LINKS:
        fm_jobs_links (d, req, resp);
        break;
    case R_JOB:
        fm_jobs_get (d, req, &ident, job_id, resp);
        break;
    case R_JOB_PEERS:
        fm_rendezvous_peers (d, req, &ident, job_id, resp);
        break;
    case R_JOB_SUMMARY:
        fm_jobs_summary (d, req, &ident, job_id, resp);
        break;
    case R_FABRIC:
        fm_admin_fabric (d, req, resp);
        break;
    case R_ACTIONS:
        fm_admin_actions (d, req, resp);
        break;
    case R_EXPLAIN:
        fm_admin_explain (d, req, resp);
        break;
    case R_DRAIN:
    case R_RESUME:
        fm_admin_drain (d, req, &ident, route == R_RESUME, resp);
        break;
    case R_CHECKS:
        fm_checks_post (d, req, &ident, resp);
        break;
    case R_CHECKS_QUERY:
        fm_checks_get (d, req, &ident, resp);
        break;
    case R_PAGE_INDEX:
        fm_webpage_index (d, req, resp);
        break;
    case R_PAGE_JOB:
        fm_webpage_job (d, req, role == ROLE_PUBLIC ? NULL : &ident, job_id, resp);
        break;
    default:
        metrics (d, resp);
        break;
    }
}

void fm_api_handle_as (fm_daemon_t *d,
                       const fm_request_t *req,
                       const fm_ident_t *ident,
                       fm_response_t *resp)
{
    int64_t t0 = fm_time_mono_ns ();
    int64_t job_id = 0;
    int route = match (req->path, &job_id);

    if (route == R_CHECKS && strcmp (req->method, "GET") == 0) {
        route = R_CHECKS_QUERY;
    }

    memset (resp, 0, sizeof (*resp));
    handle (d, req, ident, route, job_id, resp);
    if (route == R_REPORTS && resp->status >= 300) {
        fm_metrics_rejected (d->metrics, resp->error_code ? resp->error_code : "other");
    }
    fm_metrics_request (d->metrics,
                        (size_t)route,
                        resp->status,
                        (double)(fm_time_mono_ns () - t0) / 1e9);
}

void fm_api_handle (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp)
{
    fm_api_handle_as (d, req, NULL, resp);
}
