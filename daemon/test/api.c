/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "fmtime.h"
#include "api.h"
#include "jobplan.h"

typedef struct {
    char dir[64];
    char path[96];
    fm_daemon_t d;
    const char *since, *worst;
} fixture_t;

static const fm_ident_t root = {0, 0};
static const fm_ident_t owner = {1000, 1000};
static const fm_ident_t other = {1001, 1001};

static int setup (void **state)
{
    fixture_t *f = calloc (1, sizeof (*f));
    fm_idlist_t none = {0};
    fm_error_t err;

    if (!f || sodium_init () < 0) {
        return -1;
    }
    snprintf (f->dir, sizeof (f->dir), "/tmp/fm-api-test.XXXXXX");
    if (!mkdtemp (f->dir)) {
        return -1;
    }
    snprintf (f->path, sizeof (f->path), "%s/db", f->dir);
    f->d.store = fm_store_open ("sqlite", f->path, FM_STORE_SYNC_NORMAL, &err);
    f->d.auth = fm_auth_create (NULL, &none, &none, &none, true, &err);
    f->d.metrics = fm_metrics_create (fm_api_route_names, fm_api_nroutes);
    f->d.max_body = 65536;
    f->d.retention_ns = 86400 * FM_NSEC_PER_SEC;
    f->d.window_ns = 5 * FM_NSEC_PER_SEC;
    f->d.metrics_public = true;
    f->d.metrics_links = 100;
    f->d.insecure = true;
    f->d.start_real_ns = fm_time_real_ns ();
    f->d.start_mono_ns = fm_time_mono_ns ();
    if (!f->d.store || !f->d.auth || !f->d.metrics) {
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown (void **state)
{
    fixture_t *f = *state;
    char p[128];
    const char *sfx[] = {"", "-wal", "-shm"};

    fm_store_close (f->d.store);
    fm_auth_destroy (f->d.auth);
    fm_metrics_destroy (f->d.metrics);
    for (size_t i = 0; i < 3; i++) {
        snprintf (p, sizeof (p), "%s%s", f->path, sfx[i]);
        unlink (p);
    }
    rmdir (f->dir);
    free (f);
    return 0;
}

static const char *query (void *arg, const char *key)
{
    fixture_t *f = arg;

    if (strcmp (key, "since") == 0) {
        return f->since;
    }
    if (strcmp (key, "worst") == 0) {
        return f->worst;
    }
    return NULL;
}

/* Send one request as ident; returns the status, the parsed body in *out. */
static int call (fixture_t *f,
                 const char *method,
                 const char *path,
                 const char *body,
                 const fm_ident_t *ident,
                 json_t **out)
{
    fm_request_t req = {
        .method = method,
        .path = path,
        .uri = path,
        .content_type = "application/json",
        .body = body,
        .body_len = body ? strlen (body) : 0,
        .has_body = body != NULL,
        .query = query,
        .query_arg = f,
    };
    fm_response_t resp;
    int status;

    fm_api_handle_as (&f->d, &req, ident, &resp);
    assert_non_null (resp.body);
    status = resp.status;
    if (out) {
        *out = json_loadb (resp.body, resp.len, 0, NULL);
    }
    free (resp.body);
    return status;
}

static const char *error_code (json_t *o)
{
    const char *code = "";

    json_unpack (o, "{s:{s:s}}", "error", "code", &code);
    return code;
}

static void register_two (fixture_t *f)
{
    json_t *o;

    assert_int_equal (call (f,
                            "POST",
                            "/v1/agents",
                            "{\"job_id\":12,\"node\":\"x1\",\"user_id\":1000,"
                            "\"probe_addr\":\"127.0.0.1\",\"probe_port\":1}",
                            &root,
                            &o),
                      201);
    json_decref (o);
    assert_int_equal (call (f,
                            "POST",
                            "/v1/agents",
                            "{\"job_id\":12,\"node\":\"x2\",\"user_id\":1000,"
                            "\"probe_addr\":\"127.0.0.1\",\"probe_port\":2}",
                            &root,
                            &o),
                      201);
    assert_int_equal (json_array_size (json_object_get (o, "peers")), 2);
    json_decref (o);
}

static void post_report (fixture_t *f, int64_t seq, int lost)
{
    char body[1024];
    int64_t now = fm_time_real_ns ();
    json_t *o;

    snprintf (body,
              sizeof (body),
              "{\"job_id\":12,\"node\":\"x1\",\"windows\":[{\"seq\":%lld,"
              "\"start_ns\":%lld,\"end_ns\":%lld,\"links\":[{\"peer\":\"x2\","
              "\"dir\":\"out\",\"rtt_ns\":{\"p50\":1,\"p90\":2,\"p99\":3,\"max\":4},"
              "\"owd_ns\":null,\"sent\":10,\"received\":%d,\"lost\":%d,"
              "\"reordered\":0}]}]}",
              (long long)seq,
              (long long)(now - 5 * FM_NSEC_PER_SEC),
              (long long)now,
              10 - lost,
              lost);
    assert_int_equal (call (f, "POST", "/v1/reports", body, &root, &o), 200);
    json_decref (o);
}

static void test_routing (void **state)
{
    fixture_t *f = *state;
    json_t *o;

    assert_int_equal (call (f, "GET", "/v1/status", NULL, NULL, &o), 200);
    assert_string_equal (json_string_value (json_object_get (o, "api")), "v1");
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/nothing", NULL, &root, &o), 404);
    assert_string_equal (error_code (o), "not_found");
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/jobs/0", NULL, &root, &o), 404);
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/jobs/12x", NULL, &root, &o), 404);
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/jobs/99999999999", NULL, &root, &o), 404);
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/jobs/12/other", NULL, &root, &o), 404);
    json_decref (o);
    assert_int_equal (call (f, "POST", "/v1/status", "{}", &root, &o), 405);
    assert_string_equal (error_code (o), "method_not_allowed");
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/reports", NULL, &root, &o), 405);
    json_decref (o);
    assert_int_equal (call (f, "POST", "/v1/reports", NULL, &root, &o), 411);
    json_decref (o);
    assert_int_equal (call (f, "POST", "/v1/reports", "[1]", &root, &o), 400);
    assert_string_equal (error_code (o), "invalid_json");
    json_decref (o);
    assert_int_equal (
        call (f, "POST", "/v1/reports", "{\"job_id\":1,\"job_id\":2}", &root, &o), 400);
    assert_string_equal (error_code (o), "invalid_json");
    json_decref (o);
    assert_int_equal (call (f, "POST", "/v1/agents", "{\"job_id\":1}", &root, &o), 400);
    assert_string_equal (error_code (o), "invalid_field");
    assert_string_equal (
        json_string_value (json_object_get (json_object_get (o, "error"), "field")),
        "node");
    json_decref (o);
}

static void test_transport_flags (void **state)
{
    fixture_t *f = *state;
    fm_request_t req = {.method = "POST",
                        .path = "/v1/reports",
                        .uri = "/v1/reports",
                        .content_type = "text/plain",
                        .body = "{}",
                        .body_len = 2,
                        .has_body = true};
    fm_response_t resp;

    fm_api_handle_as (&f->d, &req, &root, &resp);
    assert_int_equal (resp.status, 415);
    free (resp.body);
    req.content_type = "application/json; charset=utf-8";
    req.too_large = true;
    fm_api_handle_as (&f->d, &req, &root, &resp);
    assert_int_equal (resp.status, 413);
    assert_string_equal (resp.error_code, "too_large");
    free (resp.body);
}

static void test_roles (void **state)
{
    fixture_t *f = *state;
    json_t *o;

    register_two (f);
    assert_int_equal (call (f,
                            "POST",
                            "/v1/agents",
                            "{\"job_id\":12,\"node\":\"x3\",\"user_id\":1000,"
                            "\"probe_addr\":\"127.0.0.1\",\"probe_port\":3}",
                            &owner,
                            &o),
                      403);
    assert_string_equal (error_code (o), "forbidden");
    json_decref (o);
    assert_int_equal (call (f, "POST", "/v1/reports", "{}", &owner, &o), 403);
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/nodes", NULL, &owner, &o), 403);
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/links", NULL, &owner, &o), 403);
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/jobs/12", NULL, &owner, &o), 200);
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/jobs/12/peers", NULL, &owner, &o), 200);
    assert_null (json_object_get (o, "probe_key"));
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/jobs/12/peers", NULL, &root, &o), 200);
    assert_int_equal (strlen (json_string_value (json_object_get (o, "probe_key"))),
                      64);
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/jobs/12/summary", NULL, &other, &o), 403);
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/jobs/12", NULL, &other, &o), 403);
    json_decref (o);
    assert_int_equal (call (f, "GET", "/v1/jobs/13", NULL, &root, &o), 404);
    json_decref (o);
    /* metrics: public by configuration, else admins only. */
    assert_int_equal (call (f, "GET", "/metrics", NULL, &other, NULL), 200);
    f->d.metrics_public = false;
    assert_int_equal (call (f, "GET", "/metrics", NULL, &other, NULL), 403);
    assert_int_equal (call (f, "GET", "/metrics", NULL, &root, NULL), 200);
}

static void test_reads (void **state)
{
    fixture_t *f = *state;
    fm_request_t req = {.method = "GET", .path = "/metrics", .uri = "/metrics"};
    fm_response_t resp;
    json_t *o;

    register_two (f);
    post_report (f, 0, 5);
    post_report (f, 1, 0);
    assert_int_equal (call (f,
                            "POST",
                            "/v1/reports",
                            "{\"job_id\":12,\"node\":\"x9\",\"windows\":[{\"seq\":0,"
                            "\"start_ns\":1700000000000000000,"
                            "\"end_ns\":1700000001000000000,\"links\":[]}]}",
                            &root,
                            &o),
                      404);
    json_decref (o);

    assert_int_equal (call (f, "GET", "/v1/links", NULL, &root, &o), 200);
    assert_int_equal (json_array_size (json_object_get (o, "links")), 1);
    assert_int_equal (json_integer_value (json_object_get (
                          json_array_get (json_object_get (o, "links"), 0), "lost")),
                      5);
    json_decref (o);
    f->worst = "0";
    assert_int_equal (call (f, "GET", "/v1/links", NULL, &root, &o), 400);
    json_decref (o);
    f->worst = "1";
    f->since = "1s";
    /* Both windows ended at least a few microseconds ago, within 1 s. */
    assert_int_equal (call (f, "GET", "/v1/links", NULL, &root, &o), 200);
    assert_int_equal (json_array_size (json_object_get (o, "links")), 1);
    json_decref (o);
    f->since = "2d";
    assert_int_equal (call (f, "GET", "/v1/nodes", NULL, &root, &o), 400);
    assert_non_null (strstr (
        json_string_value (json_object_get (json_object_get (o, "error"), "message")),
        "retention"));
    json_decref (o);
    f->since = NULL;
    assert_int_equal (call (f, "GET", "/v1/nodes", NULL, &root, &o), 200);
    assert_int_equal (json_integer_value (json_object_get (
                          json_array_get (json_object_get (o, "nodes"), 0), "windows")),
                      2);
    json_decref (o);
    f->worst = NULL;
    assert_int_equal (call (f, "GET", "/v1/jobs/12/summary", NULL, &owner, &o), 200);
    assert_int_equal (json_integer_value (json_object_get (o, "records")), 2);
    /* the worst links, and how many there are in all */
    size_t nall = json_array_size (json_object_get (o, "links"));
    assert_true (nall >= 1);
    assert_int_equal (json_integer_value (json_object_get (o, "nlinks")), nall);
    json_decref (o);
    f->worst = "1";
    assert_int_equal (call (f, "GET", "/v1/jobs/12/summary", NULL, &owner, &o), 200);
    assert_int_equal (json_array_size (json_object_get (o, "links")), 1);
    assert_int_equal (json_integer_value (json_object_get (o, "nlinks")), nall);
    json_decref (o);
    f->worst = "10001";
    assert_int_equal (call (f, "GET", "/v1/jobs/12/summary", NULL, &owner, &o), 400);
    json_decref (o);
    f->worst = NULL;
    assert_int_equal (call (f, "GET", "/v1/status", NULL, NULL, &o), 200);
    assert_int_equal (json_integer_value (
                          json_object_get (json_object_get (o, "ingest"), "rejected")),
                      1);
    json_decref (o);

    fm_api_handle_as (&f->d, &req, NULL, &resp);
    assert_int_equal (resp.status, 200);
    assert_string_equal (resp.content_type, "text/plain; version=0.0.4");
    assert_non_null (
        strstr (resp.body, "fabricd_ingest_rejected_total{reason=\"not_found\"} 1\n"));
    assert_non_null (strstr (resp.body,
                             "fabricd_link_loss_ratio{src=\"x1\",dst=\"x2\","
                             "reporter=\"x1\"} 0.250000\n"));
    assert_non_null (strstr (resp.body,
                             "fabricd_http_requests_total{route=\"/v1/reports\","
                             "code=\"200\"} 2\n"));
    free (resp.body);
}

/* The rendezvous through the real handler, with the probe plan on a
 * leafspine of `leaves` x 8: every answer names the node's targets and
 * probers only, its size does not grow with the job, and the answers agree
 * (A lists B as a target exactly when B lists A as a prober).
 */
static void rendezvous_job (fixture_t *f, int leaves, size_t *max_bytes)
{
    int n = leaves * 8;
    size_t cap = (size_t)leaves * 64 + 64, used = 0;
    char *topo = malloc (cap), body[512],
         **targets = calloc ((size_t)n, sizeof (char *));
    char **probers = calloc ((size_t)n, sizeof (char *));
    json_t *o;

    assert_non_null (topo);
    for (int l = 0; l < leaves; l++) {
        used += (size_t)snprintf (topo + used,
                                  cap - used,
                                  "SwitchName=leaf%d Nodes=n[%d-%d]\n",
                                  l,
                                  8 * l,
                                  8 * l + 7);
    }
    snprintf (
        topo + used, cap - used, "SwitchName=spine Switches=leaf[0-%d]\n", leaves - 1);
    assert_non_null (f->d.plans = fm_jobplan_create (topo, FM_JOBPLAN_NODES_KEPT));
    *max_bytes = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            fm_response_t resp;
            snprintf (body,
                      sizeof (body),
                      "{\"job_id\":%d,\"node\":\"n%d\",\"user_id\":1000,"
                      "\"probe_addr\":\"127.0.0.1\",\"probe_port\":%d,"
                      "\"job_nodes\":\"n[0-%d]\"}",
                      40 + leaves,
                      i,
                      1000 + i,
                      n - 1);
            fm_request_t req = {.method = "POST",
                                .path = "/v1/agents",
                                .uri = "/v1/agents",
                                .content_type = "application/json",
                                .body = body,
                                .body_len = strlen (body),
                                .has_body = true};
            fm_api_handle_as (&f->d, &req, &root, &resp);
            assert_int_equal (resp.status, pass == 0 ? 201 : 200);
            assert_non_null (o = json_loadb (resp.body, resp.len, 0, NULL));
            size_t nt = json_array_size (json_object_get (o, "targets"));
            size_t np = json_array_size (json_object_get (o, "probers"));
            size_t npeers = json_array_size (json_object_get (o, "peers"));
            assert_true (nt >= 1 && nt <= 10);
            assert_true (npeers <= nt + np);
            if (pass == 1) {
                /* all registered: every target and prober has its address */
                size_t i2;
                json_t *x;
                assert_true (npeers >= nt && npeers >= np);
                *max_bytes = resp.len > *max_bytes ? resp.len : *max_bytes;
                targets[i] = json_dumps (json_object_get (o, "targets"), JSON_COMPACT);
                probers[i] = json_dumps (json_object_get (o, "probers"), JSON_COMPACT);
                char self[32];
                snprintf (self, sizeof (self), "n%d", i);
                json_array_foreach (json_object_get (o, "peers"), i2, x) {
                    assert_string_not_equal (
                        json_string_value (json_object_get (x, "node")), self);
                }
            }
            json_decref (o);
            free (resp.body);
        }
    }
    for (int a = 0; a < n; a++) {
        char name[32];
        snprintf (name, sizeof (name), "\"n%d\"", a);
        for (int b = 0; b < n; b++) {
            char other_name[32];
            snprintf (other_name, sizeof (other_name), "\"n%d\"", b);
            bool a_targets_b = strstr (targets[a], other_name) != NULL;
            bool b_probed_by_a = strstr (probers[b], name) != NULL;
            assert_true (a_targets_b == b_probed_by_a);
        }
    }
    for (int i = 0; i < n; i++) {
        free (targets[i]);
        free (probers[i]);
    }
    free (targets);
    free (probers);
    fm_jobplan_destroy (f->d.plans);
    f->d.plans = NULL;
    free (topo);
}

static void test_rendezvous_bounded (void **state)
{
    fixture_t *f = *state;
    size_t at64, at1024;

    rendezvous_job (f, 8, &at64);
    rendezvous_job (f, 128, &at1024);
    print_message (
        "# registration answer: at most %zu bytes at 64 nodes, %zu at 1024\n",
        at64,
        at1024);
    /* k peers whatever N: the same bound at 16 times the nodes */
    assert_true (at64 < 6000);
    assert_true (at1024 < 6000);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_routing, setup, teardown),
        cmocka_unit_test_setup_teardown (test_transport_flags, setup, teardown),
        cmocka_unit_test_setup_teardown (test_roles, setup, teardown),
        cmocka_unit_test_setup_teardown (test_reads, setup, teardown),
        cmocka_unit_test_setup_teardown (test_rendezvous_bounded, setup, teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
