/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "fm/api.h"
#include "fmtime.h"
#include "check_verdict.h"
#include "checks.h"
#include "store.h"

#define NAME_MAX_LEN 63

typedef struct {
    int64_t job_id;
    int64_t received_ns;
    uid_t uid;
    bool trusted;
    bool full;
    uint32_t nnodes;
    char (*names)[NAME_MAX_LEN + 1];
    bool *ref; /* NULL: no reference nodes */
    fm_check_node_t *nodes;
    size_t npairs;
    fm_check_result_t *pairs;
} entry_t;

struct fm_checks {
    pthread_mutex_t lock;
    entry_t **ring;
    size_t size;
    size_t next; /* slot of the next result */
};

static void entry_free (entry_t *e)
{
    if (e) {
        free (e->names);
        free (e->ref);
        free (e->nodes);
        free (e->pairs);
        free (e);
    }
}

fm_checks_t *fm_checks_create (size_t ring, fm_error_t *err)
{
    fm_checks_t *c;

    if (ring < 1 || ring > 4096) {
        errno = EINVAL;
        fm_errprintf (err, "checks: ring size %zu not within 1..4096", ring);
        return NULL;
    }
    if (!(c = calloc (1, sizeof (*c)))
        || !(c->ring = calloc (ring, sizeof (*c->ring)))) {
        free (c);
        errno = ENOMEM;
        fm_errprintf (err, "checks: out of memory");
        return NULL;
    }
    pthread_mutex_init (&c->lock, NULL);
    c->size = ring;
    return c;
}

void fm_checks_destroy (fm_checks_t *c)
{
    int e = errno;

    if (c) {
        for (size_t i = 0; i < c->size; i++) {
            entry_free (c->ring[i]);
        }
        free (c->ring);
        pthread_mutex_destroy (&c->lock);
        free (c);
    }
    errno = e;
}

static int bad (const char **field, const char *f, fm_error_t *err, const char *msg)
{
    *field = f;
    errno = EINVAL;
    return fm_errprintf (err, "%s: %s", f, msg);
}

static bool valid_name (const char *s)
{
    size_t n = strlen (s);

    if (n == 0 || n > NAME_MAX_LEN || s[0] == '.' || s[0] == '-') {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
              || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.')) {
            return false;
        }
    }
    return true;
}

static int job_of (const json_t *o, int64_t *job_id)
{
    json_t *j = json_object_get (o, "job_id");

    if (!json_is_integer (j) || json_integer_value (j) < 1
        || json_integer_value (j) > FM_API_JOB_ID_MAX) {
        errno = EINVAL;
        return -1;
    }
    *job_id = json_integer_value (j);
    return 0;
}

static json_t *load (const char *body, size_t len)
{
    return json_loadb (body, len, JSON_REJECT_DUPLICATES, NULL);
}

int fm_checks_body_job (const char *body, size_t len, int64_t *job_id)
{
    json_t *o = load (body, len);
    int rc = o ? job_of (o, job_id) : -1;

    json_decref (o);
    if (rc < 0) {
        errno = EINVAL;
    }
    return rc;
}

/* The index of name in e's table, added when new; -1 when full. */
static int node_index (entry_t *e, const char *name)
{
    for (uint32_t i = 0; i < e->nnodes; i++) {
        if (strcmp (e->names[i], name) == 0) {
            return (int)i;
        }
    }
    if (e->nnodes == FM_CHECKS_NODES_MAX) {
        return -1;
    }
    snprintf (e->names[e->nnodes], sizeof (e->names[0]), "%s", name);
    return (int)e->nnodes++;
}

static int get_value (json_t *p, const char *key, int64_t *v)
{
    json_t *j = json_object_get (p, key);

    if (!json_is_integer (j) || json_integer_value (j) < 0
        || json_integer_value (j) > FM_CHECKS_VALUE_MAX) {
        return -1;
    }
    *v = json_integer_value (j);
    return 0;
}

static int parse_pair (
    json_t *p, entry_t *e, fm_check_result_t *r, const char **field, fm_error_t *err)
{
    static const char *known[] = {
        "a", "b", "lat_p50_ns", "lat_p99_ns", "bw_bps", "ok", "error"};
    const char *key, *a, *b;
    json_t *v;
    int ia, ib;

    if (!json_is_object (p)) {
        return bad (field, "pairs", err, "each pair must be an object");
    }
    json_object_foreach (p, key, v) {
        size_t k = 0;
        while (k < sizeof (known) / sizeof (known[0]) && strcmp (key, known[k]) != 0) {
            k++;
        }
        if (k == sizeof (known) / sizeof (known[0])) {
            return bad (field, "pairs", err, "unknown field in a pair");
        }
    }
    a = json_string_value (json_object_get (p, "a"));
    b = json_string_value (json_object_get (p, "b"));
    if (!a || !valid_name (a)) {
        return bad (field, "pairs.a", err, "want a node name");
    }
    if (!b || !valid_name (b) || strcmp (a, b) == 0) {
        return bad (field, "pairs.b", err, "want a node name other than a");
    }
    if ((ia = node_index (e, a)) < 0 || (ib = node_index (e, b)) < 0) {
        return bad (field, "pairs", err, "too many nodes");
    }
    memset (r, 0, sizeof (*r));
    r->a = (uint32_t)ia;
    r->b = (uint32_t)ib;
    if (get_value (p, "lat_p50_ns", &r->lat_p50_ns) < 0) {
        return bad (field, "pairs.lat_p50_ns", err, "want an integer 0..1e15");
    }
    if (get_value (p, "lat_p99_ns", &r->lat_p99_ns) < 0
        || r->lat_p99_ns < r->lat_p50_ns) {
        return bad (field, "pairs.lat_p99_ns", err, "want an integer >= lat_p50_ns");
    }
    if (get_value (p, "bw_bps", &r->bw_bps) < 0) {
        return bad (field, "pairs.bw_bps", err, "want an integer 0..1e15");
    }
    if (!json_is_boolean (json_object_get (p, "ok"))) {
        return bad (field, "pairs.ok", err, "want true or false");
    }
    r->ok = json_is_true (json_object_get (p, "ok"));
    if ((v = json_object_get (p, "error"))) {
        const char *s = json_string_value (v);
        if (!s || strlen (s) >= sizeof (r->error)) {
            return bad (
                field, "pairs.error", err, "want a string of at most 127 bytes");
        }
        snprintf (r->error, sizeof (r->error), "%s", s);
    }
    return 0;
}

/* "reference": the names of known-good nodes among the pairs' (optional). */
static int
parse_reference (json_t *refs, entry_t *e, const char **field, fm_error_t *err)
{
    json_t *v;
    size_t i;

    if (!refs) {
        return 0;
    }
    if (!json_is_array (refs) || json_array_size (refs) > e->nnodes) {
        return bad (field, "reference", err, "want an array of the pairs' node names");
    }
    if (!(e->ref = calloc (e->nnodes, sizeof (*e->ref)))) {
        *field = NULL;
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    json_array_foreach (refs, i, v) {
        const char *name = json_string_value (v);
        uint32_t k = 0;
        while (name && k < e->nnodes && strcmp (e->names[k], name) != 0) {
            k++;
        }
        if (!name || k == e->nnodes) {
            return bad (field, "reference", err, "names a node of no pair");
        }
        e->ref[k] = true;
    }
    return 0;
}

static int parse (json_t *o, entry_t *e, const char **field, fm_error_t *err)
{
    const char *key, *mode;
    json_t *v, *pairs;
    size_t i;

    json_object_foreach (o, key, v) {
        if (strcmp (key, "job_id") != 0 && strcmp (key, "mode") != 0
            && strcmp (key, "pairs") != 0 && strcmp (key, "reference") != 0) {
            *field = "body";
            errno = EINVAL;
            return fm_errprintf (err, "unknown field '%.64s'", key);
        }
    }
    if (job_of (o, &e->job_id) < 0) {
        return bad (field, "job_id", err, "want a Slurm job id");
    }
    mode = json_string_value (json_object_get (o, "mode"));
    if (!mode || (strcmp (mode, "quick") != 0 && strcmp (mode, "full") != 0)) {
        return bad (field, "mode", err, "want quick or full");
    }
    e->full = strcmp (mode, "full") == 0;
    pairs = json_object_get (o, "pairs");
    if (!json_is_array (pairs) || json_array_size (pairs) == 0
        || json_array_size (pairs) > FM_CHECKS_PAIRS_MAX) {
        return bad (field, "pairs", err, "want an array of 1 to 8192 pairs");
    }
    e->npairs = json_array_size (pairs);
    /* a node is in at least one pair: never more nodes than 2 per pair */
    e->names = calloc (e->npairs * 2 < FM_CHECKS_NODES_MAX ? e->npairs * 2
                                                           : FM_CHECKS_NODES_MAX,
                       sizeof (*e->names));
    e->pairs = calloc (e->npairs, sizeof (*e->pairs));
    if (!e->names || !e->pairs) {
        *field = NULL;
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    json_array_foreach (pairs, i, v) {
        if (parse_pair (v, e, &e->pairs[i], field, err) < 0) {
            return -1;
        }
    }
    if (!(e->nodes = calloc (e->nnodes, sizeof (*e->nodes)))) {
        *field = NULL;
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    return parse_reference (json_object_get (o, "reference"), e, field, err);
}

int fm_checks_add (fm_checks_t *c,
                   const char *body,
                   size_t len,
                   uid_t uid,
                   bool trusted,
                   int64_t now_ns,
                   int64_t *job_id,
                   const char **field,
                   fm_error_t *err)
{
    json_error_t jerr;
    fm_check_summary_t sum;
    entry_t *e;
    json_t *o;

    *field = NULL;
    if (!(o = json_loadb (body, len, JSON_REJECT_DUPLICATES, &jerr))
        || !json_is_object (o)) {
        json_decref (o);
        errno = EINVAL;
        return fm_errprintf (err, "not a JSON object: %s", o ? "" : jerr.text);
    }
    if (!(e = calloc (1, sizeof (*e)))) {
        json_decref (o);
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    if (parse (o, e, field, err) < 0) {
        int errnum = errno;
        if (e->job_id) {
            *job_id = e->job_id;
        }
        json_decref (o);
        entry_free (e);
        errno = errnum;
        return -1;
    }
    json_decref (o);
    /* indices come from our own table: the verdict cannot refuse them */
    (void)fm_check_verdict (e->pairs, e->npairs, e->nnodes, e->ref, e->nodes, &sum);
    fm_check_verdict_sort (e->pairs, e->npairs);
    e->received_ns = now_ns;
    e->uid = uid;
    e->trusted = trusted;
    *job_id = e->job_id;
    pthread_mutex_lock (&c->lock);
    entry_free (c->ring[c->next]);
    c->ring[c->next] = e;
    c->next = (c->next + 1) % c->size;
    pthread_mutex_unlock (&c->lock);
    return 0;
}

static bool node_passed (const fm_check_node_t *n)
{
    return !n->slow && !n->failed;
}

static json_t *entry_json (const entry_t *e)
{
    json_t *pairs = json_array (), *nodes = json_array ();
    json_t *refs = json_array ();
    bool passed = true;

    for (size_t i = 0; pairs && i < e->npairs; i++) {
        const fm_check_result_t *r = &e->pairs[i];
        json_t *p = json_pack ("{s:s, s:s, s:I, s:I, s:I, s:b, s:b}",
                               "a",
                               e->names[r->a],
                               "b",
                               e->names[r->b],
                               "lat_p50_ns",
                               (json_int_t)r->lat_p50_ns,
                               "lat_p99_ns",
                               (json_int_t)r->lat_p99_ns,
                               "bw_bps",
                               (json_int_t)r->bw_bps,
                               "ok",
                               r->ok,
                               "slow",
                               r->slow);
        if (p && r->error[0]) {
            json_object_set_new (p, "error", json_string (r->error));
        }
        if (!p || json_array_append_new (pairs, p) < 0) {
            goto fail;
        }
    }
    for (uint32_t i = 0; refs && e->ref && i < e->nnodes; i++) {
        if (e->ref[i] && json_array_append_new (refs, json_string (e->names[i])) < 0) {
            goto fail;
        }
    }
    for (uint32_t i = 0; nodes && i < e->nnodes; i++) {
        json_t *n = json_pack ("{s:s, s:b, s:b, s:b}",
                               "name",
                               e->names[i],
                               "passed",
                               node_passed (&e->nodes[i]),
                               "slow",
                               e->nodes[i].slow,
                               "failed",
                               e->nodes[i].failed);
        passed = passed && node_passed (&e->nodes[i]);
        if (!n || json_array_append_new (nodes, n) < 0) {
            goto fail;
        }
    }
    if (!pairs || !nodes || !refs) {
        goto fail;
    }
    return json_pack ("{s:I, s:s, s:I, s:I, s:b, s:b, s:o, s:o, s:o}",
                      "job_id",
                      (json_int_t)e->job_id,
                      "mode",
                      e->full ? "full" : "quick",
                      "received_ns",
                      (json_int_t)e->received_ns,
                      "uid",
                      (json_int_t)e->uid,
                      "trusted",
                      e->trusted,
                      "passed",
                      passed,
                      "pairs",
                      pairs,
                      "nodes",
                      nodes,
                      "reference",
                      refs);
fail:
    json_decref (pairs);
    json_decref (nodes);
    json_decref (refs);
    return NULL;
}

json_t *fm_checks_json (fm_checks_t *c,
                        int64_t job_id,
                        const fm_ident_t *id,
                        bool privileged,
                        int64_t job_uid)
{
    json_t *a = json_array ();

    if (!a) {
        return NULL;
    }
    pthread_mutex_lock (&c->lock);
    for (size_t k = 1; k <= c->size; k++) {
        const entry_t *e = c->ring[(c->next + c->size - k) % c->size];
        json_t *o;
        if (!e || e->job_id != job_id
            || !(privileged || (int64_t)id->uid == job_uid || e->uid == id->uid)) {
            continue;
        }
        if (!(o = entry_json (e)) || json_array_append_new (a, o) < 0) {
            json_decref (a);
            a = NULL;
            break;
        }
    }
    pthread_mutex_unlock (&c->lock);
    return a;
}

int fm_checks_node_result (fm_checks_t *c,
                           const char *node,
                           int64_t since_ns,
                           int *passed)
{
    int rc = -1;

    if (!c || !node || !passed) {
        errno = EINVAL;
        return -1;
    }
    pthread_mutex_lock (&c->lock);
    for (size_t k = 1; k <= c->size && rc < 0; k++) {
        const entry_t *e = c->ring[(c->next + c->size - k) % c->size];
        if (!e || !e->trusted || e->received_ns < since_ns) {
            continue;
        }
        for (uint32_t i = 0; i < e->nnodes; i++) {
            if (strcmp (e->names[i], node) == 0) {
                *passed = node_passed (&e->nodes[i]);
                rc = 0;
                break;
            }
        }
    }
    pthread_mutex_unlock (&c->lock);
    if (rc < 0) {
        errno = ENOENT;
    }
    return rc;
}

/* The owner of job_id per the store, -1 when the store does not know it. */
static int64_t job_owner (fm_daemon_t *d, int64_t job_id)
{
    fm_job_t job;
    fm_error_t err;
    int64_t uid;

    if (fm_store_job_get (d->store, job_id, &job, &err) < 0) {
        return -1;
    }
    uid = job.user_id;
    sodium_memzero (&job, sizeof (job));
    return uid;
}

static bool privileged (fm_daemon_t *d, const fm_ident_t *id)
{
    return fm_auth_is_reporter (d->auth, id) || fm_auth_is_admin (d->auth, id);
}

void fm_checks_post (fm_daemon_t *d,
                     const fm_request_t *req,
                     const fm_ident_t *id,
                     fm_response_t *resp)
{
    bool trusted = privileged (d, id);
    const char *field = NULL;
    int64_t job_id = 0;
    fm_error_t err;

    if (!d->checks) {
        fm_api_error (resp, 503, "unavailable", NULL, "checks are not kept");
        return;
    }
    /* a job's owner may post for it, as evidence only: nodes are judged
     * for service on results from reporters and admins alone
     */
    if (!trusted
        && (fm_checks_body_job (req->body, req->body_len, &job_id) < 0
            || job_owner (d, job_id) != (int64_t)id->uid)) {
        if (job_id == 0) {
            fm_api_error (
                resp, 400, "invalid_field", "job_id", "job_id: want a job id");
        } else {
            fm_api_error (resp,
                          403,
                          "forbidden",
                          NULL,
                          "uid %u may not post checks for job %lld",
                          (unsigned)id->uid,
                          (long long)job_id);
        }
        return;
    }
    if (fm_checks_add (d->checks,
                       req->body,
                       req->body_len,
                       id->uid,
                       trusted,
                       fm_time_real_ns (),
                       &job_id,
                       &field,
                       &err)
        < 0) {
        if (errno == ENOMEM) {
            fm_api_error (resp, 500, "internal", NULL, "%s", err.text);
        } else if (!field) {
            fm_api_error (resp, 400, "invalid_json", NULL, "%s", err.text);
        } else {
            fm_api_error (resp, 400, "invalid_field", field, "%s", err.text);
        }
        return;
    }
    fm_api_json (
        resp,
        200,
        json_pack ("{s:I, s:b}", "job_id", (json_int_t)job_id, "trusted", trusted));
}

void fm_checks_get (fm_daemon_t *d,
                    const fm_request_t *req,
                    const fm_ident_t *id,
                    fm_response_t *resp)
{
    const char *s = req->query ? req->query (req->query_arg, "job") : NULL;
    bool priv = privileged (d, id);
    int64_t job_id, owner;
    char *end;
    json_t *a;

    if (!d->checks) {
        fm_api_error (resp, 503, "unavailable", NULL, "checks are not kept");
        return;
    }
    if (!s || *s < '1' || *s > '9') {
        fm_api_error (resp, 400, "invalid_field", "job", "job: want ?job=ID");
        return;
    }
    errno = 0;
    job_id = strtoll (s, &end, 10);
    if (errno != 0 || *end != '\0' || job_id > FM_API_JOB_ID_MAX) {
        fm_api_error (resp, 400, "invalid_field", "job", "job: want ?job=ID");
        return;
    }
    owner = priv ? -1 : job_owner (d, job_id);
    if (!(a = fm_checks_json (d->checks, job_id, id, priv, owner))) {
        fm_api_error (resp, 500, "internal", NULL, "out of memory");
        return;
    }
    fm_api_json (resp, 200, json_pack ("{s:o}", "checks", a));
}
