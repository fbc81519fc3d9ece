/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
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
#include "checks.h"

/* POST /v1/checks and GET /v1/checks?job=N through the API with a real
 * store, and the ring and node queries behind them.
 */
typedef struct {
    char dir[64];
    char path[96];
    fm_daemon_t d;
    const char *job;
} fixture_t;

static const fm_ident_t root = {0, 0};
static const fm_ident_t owner = {1000, 1000};
static const fm_ident_t other = {1001, 1001};

/* quick on 4 nodes with fmn3 behind a slow link */
static const char good_body[] =
    "{\"job_id\":12,\"mode\":\"quick\",\"pairs\":["
    "{\"a\":\"fmn1\",\"b\":\"fmn2\",\"lat_p50_ns\":20000,\"lat_p99_ns\":80000,"
    "\"bw_bps\":10000000000,\"ok\":true},"
    "{\"a\":\"fmn3\",\"b\":\"fmn4\",\"lat_p50_ns\":500000,\"lat_p99_ns\":1200000,"
    "\"bw_bps\":500000,\"ok\":true},"
    "{\"a\":\"fmn2\",\"b\":\"fmn3\",\"lat_p50_ns\":510000,\"lat_p99_ns\":2000000,"
    "\"bw_bps\":505000,\"ok\":true},"
    "{\"a\":\"fmn1\",\"b\":\"fmn4\",\"lat_p50_ns\":18000,\"lat_p99_ns\":110000,"
    "\"bw_bps\":11000000000,\"ok\":true,\"error\":\"\"}]}";

static int setup (void **state)
{
    fixture_t *f = calloc (1, sizeof (*f));
    fm_idlist_t none = {0};
    fm_error_t err;

    if (!f || sodium_init () < 0) {
        return -1;
    }
    snprintf (f->dir, sizeof (f->dir), "/tmp/fm-checks-test.XXXXXX");
    if (!mkdtemp (f->dir)) {
        return -1;
    }
    snprintf (f->path, sizeof (f->path), "%s/db", f->dir);
    f->d.store = fm_store_open ("sqlite", f->path, FM_STORE_SYNC_NORMAL, &err);
    f->d.auth = fm_auth_create (NULL, &none, &none, &none, true, &err);
    f->d.metrics = fm_metrics_create (fm_api_route_names, fm_api_nroutes);
    f->d.checks = fm_checks_create (FM_CHECKS_RING, &err);
    f->d.max_body = 4 << 20;
    f->d.retention_ns = 86400 * FM_NSEC_PER_SEC;
    f->d.window_ns = 5 * FM_NSEC_PER_SEC;
    f->d.insecure = true;
    f->d.start_real_ns = fm_time_real_ns ();
    f->d.start_mono_ns = fm_time_mono_ns ();
    if (!f->d.store || !f->d.auth || !f->d.metrics || !f->d.checks) {
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

    fm_checks_destroy (f->d.checks);
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

    return strcmp (key, "job") == 0 ? f->job : NULL;
}

static int call (fixture_t *f,
                 const char *method,
                 const char *body,
                 const fm_ident_t *ident,
                 json_t **out)
{
    fm_request_t req = {
        .method = method,
        .path = "/v1/checks",
        .uri = "/v1/checks",
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
    *out = json_loadb (resp.body, resp.len, 0, NULL);
    free (resp.body);
    return status;
}

static const char *error_field (json_t *o)
{
    const char *field = "";

    json_unpack (o, "{s:{s:s}}", "error", "field", &field);
    return field;
}

static void register_job (fixture_t *f)
{
    fm_request_t req = {
        .method = "POST",
        .path = "/v1/agents",
        .uri = "/v1/agents",
        .content_type = "application/json",
        .body = "{\"job_id\":12,\"node\":\"fmn1\",\"user_id\":1000,"
                "\"probe_addr\":\"127.0.0.1\",\"probe_port\":1}",
        .has_body = true,
    };
    fm_response_t resp;

    req.body_len = strlen (req.body);
    fm_api_handle_as (&f->d, &req, &root, &resp);
    assert_int_equal (resp.status, 201);
    free (resp.body);
}

static void test_post_and_get (void **state)
{
    fixture_t *f = *state;
    json_t *o, *c, *nodes;
    int passed = -1;

    assert_int_equal (call (f, "POST", good_body, &root, &o), 200);
    assert_true (json_is_true (json_object_get (o, "trusted")));
    json_decref (o);
    f->job = "12";
    assert_int_equal (call (f, "GET", NULL, &root, &o), 200);
    assert_int_equal (json_array_size (json_object_get (o, "checks")), 1);
    c = json_array_get (json_object_get (o, "checks"), 0);
    assert_string_equal (json_string_value (json_object_get (c, "mode")), "quick");
    assert_true (json_is_false (json_object_get (c, "passed")));
    /* judged by fabric-check's rule, worst pair first */
    assert_string_equal (json_string_value (json_object_get (
                             json_array_get (json_object_get (c, "pairs"), 0), "a")),
                         "fmn3");
    nodes = json_object_get (c, "nodes");
    assert_int_equal (json_array_size (nodes), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *n = json_array_get (nodes, i);
        bool slow =
            strcmp (json_string_value (json_object_get (n, "name")), "fmn3") == 0;
        assert_int_equal (json_is_true (json_object_get (n, "slow")), slow);
        assert_int_equal (json_is_true (json_object_get (n, "passed")), !slow);
    }
    json_decref (o);

    assert_int_equal (fm_checks_node_result (f->d.checks, "fmn3", 0, &passed), 0);
    assert_int_equal (passed, 0);
    assert_int_equal (fm_checks_node_result (f->d.checks, "fmn4", 0, &passed), 0);
    assert_int_equal (passed, 1);
    errno = 0;
    assert_int_equal (fm_checks_node_result (f->d.checks, "fmn9", 0, &passed), -1);
    assert_int_equal (errno, ENOENT);
    /* older than since: not evidence */
    assert_int_equal (
        fm_checks_node_result (
            f->d.checks, "fmn3", fm_time_real_ns () + FM_NSEC_PER_SEC, &passed),
        -1);
    assert_int_equal (errno, ENOENT);
    assert_int_equal (fm_checks_node_result (NULL, "fmn3", 0, &passed), -1);
    assert_int_equal (errno, EINVAL);

    /* other jobs are not mixed in */
    f->job = "13";
    assert_int_equal (call (f, "GET", NULL, &root, &o), 200);
    assert_int_equal (json_array_size (json_object_get (o, "checks")), 0);
    json_decref (o);
}

static void test_newest_wins (void **state)
{
    fixture_t *f = *state;
    char body[512];
    json_t *o;
    int passed = -1;

    assert_int_equal (call (f, "POST", good_body, &root, &o), 200);
    json_decref (o);
    assert_int_equal (fm_checks_node_result (f->d.checks, "fmn3", 0, &passed), 0);
    assert_int_equal (passed, 0);
    /* fmn3 healed: the same check, all links fast */
    snprintf (body,
              sizeof (body),
              "{\"job_id\":12,\"mode\":\"quick\",\"pairs\":["
              "{\"a\":\"fmn3\",\"b\":\"fmn4\",\"lat_p50_ns\":20000,"
              "\"lat_p99_ns\":80000,\"bw_bps\":9000000000,\"ok\":true},"
              "{\"a\":\"fmn2\",\"b\":\"fmn3\",\"lat_p50_ns\":21000,"
              "\"lat_p99_ns\":90000,\"bw_bps\":9500000000,\"ok\":true}]}");
    assert_int_equal (call (f, "POST", body, &root, &o), 200);
    json_decref (o);
    assert_int_equal (fm_checks_node_result (f->d.checks, "fmn3", 0, &passed), 0);
    assert_int_equal (passed, 1);
    f->job = "12";
    assert_int_equal (call (f, "GET", NULL, &root, &o), 200);
    assert_int_equal (json_array_size (json_object_get (o, "checks")), 2);
    assert_true (json_is_true (
        json_object_get (json_array_get (json_object_get (o, "checks"), 0), "passed")));
    json_decref (o);
}

/* A validation's check of three: the node under test and two reference
 * peers. Judged by the peers' pair, the slow node is found although its two
 * pairs are the run's majority.
 */
static void test_reference (void **state)
{
    static const char body[] =
        "{\"job_id\":12,\"mode\":\"full\",\"reference\":[\"fmn1\",\"fmn3\"],"
        "\"pairs\":["
        "{\"a\":\"fmn1\",\"b\":\"fmn2\",\"lat_p50_ns\":800000,\"lat_p99_ns\":900000,"
        "\"bw_bps\":20000000,\"ok\":true},"
        "{\"a\":\"fmn2\",\"b\":\"fmn3\",\"lat_p50_ns\":810000,\"lat_p99_ns\":990000,"
        "\"bw_bps\":21000000,\"ok\":true},"
        "{\"a\":\"fmn1\",\"b\":\"fmn3\",\"lat_p50_ns\":25000,\"lat_p99_ns\":70000,"
        "\"bw_bps\":9000000000,\"ok\":true}]}";
    fixture_t *f = *state;
    json_t *o, *c;
    int passed = -1;

    assert_int_equal (call (f, "POST", body, &root, &o), 200);
    json_decref (o);
    assert_int_equal (fm_checks_node_result (f->d.checks, "fmn2", 0, &passed), 0);
    assert_int_equal (passed, 0);
    assert_int_equal (fm_checks_node_result (f->d.checks, "fmn1", 0, &passed), 0);
    assert_int_equal (passed, 1);
    f->job = "12";
    assert_int_equal (call (f, "GET", NULL, &root, &o), 200);
    c = json_array_get (json_object_get (o, "checks"), 0);
    assert_int_equal (json_array_size (json_object_get (c, "reference")), 2);
    assert_string_equal (
        json_string_value (json_array_get (json_object_get (c, "reference"), 0)), "fmn1");
    json_decref (o);
    /* a reference that names no node of the pairs, or is no array of names */
    const char *bad[] = {
        "{\"job_id\":12,\"mode\":\"full\",\"reference\":[\"fmn9\"],\"pairs\":["
        "{\"a\":\"fmn1\",\"b\":\"fmn2\",\"lat_p50_ns\":1,\"lat_p99_ns\":1,"
        "\"bw_bps\":1,\"ok\":true}]}",
        "{\"job_id\":12,\"mode\":\"full\",\"reference\":\"fmn1\",\"pairs\":["
        "{\"a\":\"fmn1\",\"b\":\"fmn2\",\"lat_p50_ns\":1,\"lat_p99_ns\":1,"
        "\"bw_bps\":1,\"ok\":true}]}",
        "{\"job_id\":12,\"mode\":\"full\",\"reference\":[1],\"pairs\":["
        "{\"a\":\"fmn1\",\"b\":\"fmn2\",\"lat_p50_ns\":1,\"lat_p99_ns\":1,"
        "\"bw_bps\":1,\"ok\":true}]}",
        "{\"job_id\":12,\"mode\":\"full\",\"reference\":[\"fmn1\",\"fmn2\",\"fmn1\"],"
        "\"pairs\":[{\"a\":\"fmn1\",\"b\":\"fmn2\",\"lat_p50_ns\":1,"
        "\"lat_p99_ns\":1,\"bw_bps\":1,\"ok\":true}]}",
    };
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        assert_int_equal (call (f, "POST", bad[i], &root, &o), 400);
        assert_string_equal (error_field (o), "reference");
        json_decref (o);
    }
}

static void test_invalid (void **state)
{
    static const struct {
        const char *body, *field;
    } bad[] = {
        {"{\"job_id\":12,\"mode\":\"quick\",\"pairs\":[],\"x\":1}", "body"},
        {"{\"job_id\":0,\"mode\":\"quick\",\"pairs\":[]}", "job_id"},
        {"{\"job_id\":\"12\",\"mode\":\"quick\",\"pairs\":[]}", "job_id"},
        {"{\"job_id\":12,\"mode\":\"slow\",\"pairs\":[]}", "mode"},
        {"{\"job_id\":12,\"mode\":\"quick\",\"pairs\":[]}", "pairs"},
        {"{\"job_id\":12,\"mode\":\"quick\",\"pairs\":{}}", "pairs"},
        {"{\"job_id\":12,\"mode\":\"full\",\"pairs\":[1]}", "pairs"},
        {"{\"job_id\":12,\"mode\":\"full\",\"pairs\":[{\"a\":\"n1\",\"b\":\"n2\","
         "\"lat_p50_ns\":1,\"lat_p99_ns\":1,\"bw_bps\":1,\"ok\":true,\"z\":1}]}",
         "pairs"},
        {"{\"job_id\":12,\"mode\":\"full\",\"pairs\":[{\"a\":\"n1\",\"b\":\"n1\","
         "\"lat_p50_ns\":1,\"lat_p99_ns\":1,\"bw_bps\":1,\"ok\":true}]}",
         "pairs.b"},
        {"{\"job_id\":12,\"mode\":\"full\",\"pairs\":[{\"a\":\"n/1\",\"b\":\"n2\","
         "\"lat_p50_ns\":1,\"lat_p99_ns\":1,\"bw_bps\":1,\"ok\":true}]}",
         "pairs.a"},
        {"{\"job_id\":12,\"mode\":\"full\",\"pairs\":[{\"a\":\"n1\",\"b\":\"n2\","
         "\"lat_p50_ns\":-1,\"lat_p99_ns\":1,\"bw_bps\":1,\"ok\":true}]}",
         "pairs.lat_p50_ns"},
        {"{\"job_id\":12,\"mode\":\"full\",\"pairs\":[{\"a\":\"n1\",\"b\":\"n2\","
         "\"lat_p50_ns\":5,\"lat_p99_ns\":4,\"bw_bps\":1,\"ok\":true}]}",
         "pairs.lat_p99_ns"},
        {"{\"job_id\":12,\"mode\":\"full\",\"pairs\":[{\"a\":\"n1\",\"b\":\"n2\","
         "\"lat_p50_ns\":1,\"lat_p99_ns\":1,\"bw_bps\":10000000000000000,\"ok\":true}]"
         "}",
         "pairs.bw_bps"},
        {"{\"job_id\":12,\"mode\":\"full\",\"pairs\":[{\"a\":\"n1\",\"b\":\"n2\","
         "\"lat_p50_ns\":1,\"lat_p99_ns\":1,\"bw_bps\":1,\"ok\":1}]}",
         "pairs.ok"},
        {"{\"job_id\":12,\"mode\":\"full\",\"pairs\":[{\"a\":\"n1\",\"b\":\"n2\","
         "\"lat_p50_ns\":1,\"lat_p99_ns\":1,\"bw_bps\":1,\"ok\":true,\"error\":7}]}",
         "pairs.error"},
        {"[1]", ""},
        {"{\"job_id\":12,", ""},
        {"{\"job_id\":12,\"job_id\":12,\"mode\":\"quick\",\"pairs\":[]}", ""},
    };
    fixture_t *f = *state;
    json_t *o;

    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        assert_int_equal (call (f, "POST", bad[i].body, &root, &o), 400);
        assert_string_equal (error_field (o), bad[i].field);
        json_decref (o);
    }
    f->job = "12";
    assert_int_equal (call (f, "GET", NULL, &root, &o), 200);
    assert_int_equal (json_array_size (json_object_get (o, "checks")), 0);
    json_decref (o);
    f->job = "12x";
    assert_int_equal (call (f, "GET", NULL, &root, &o), 400);
    json_decref (o);
    f->job = NULL;
    assert_int_equal (call (f, "GET", NULL, &root, &o), 400);
    json_decref (o);
    assert_int_equal (call (f, "PUT", "{}", &root, &o), 405);
    json_decref (o);
}

static void test_too_many_pairs (void **state)
{
    fixture_t *f = *state;
    size_t n = FM_CHECKS_PAIRS_MAX + 1, len = 0;
    char *body = malloc (n * 120 + 64);
    json_t *o;

    assert_non_null (body);
    len += (size_t)sprintf (body, "{\"job_id\":12,\"mode\":\"full\",\"pairs\":[");
    for (size_t i = 0; i < n; i++) {
        len += (size_t)sprintf (body + len,
                                "%s{\"a\":\"n%zu\",\"b\":\"m%zu\",\"lat_p50_ns\":1,"
                                "\"lat_p99_ns\":1,\"bw_bps\":1,\"ok\":true}",
                                i ? "," : "",
                                i % 100,
                                i / 100);
    }
    strcpy (body + len, "]}");
    assert_int_equal (call (f, "POST", body, &root, &o), 400);
    assert_string_equal (error_field (o), "pairs");
    json_decref (o);
    free (body);
}

static void test_authorisation (void **state)
{
    fixture_t *f = *state;
    json_t *o;
    int passed;

    /* the job is unknown: only reporters and admins may post for it */
    assert_int_equal (call (f, "POST", good_body, &owner, &o), 403);
    json_decref (o);
    register_job (f);
    assert_int_equal (call (f, "POST", good_body, &other, &o), 403);
    json_decref (o);
    assert_int_equal (call (f, "POST", good_body, &owner, &o), 200);
    assert_true (json_is_false (json_object_get (o, "trusted")));
    json_decref (o);
    /* the owner's own result is evidence to read, not to resume a node on */
    errno = 0;
    assert_int_equal (fm_checks_node_result (f->d.checks, "fmn4", 0, &passed), -1);
    assert_int_equal (errno, ENOENT);
    f->job = "12";
    assert_int_equal (call (f, "GET", NULL, &owner, &o), 200);
    assert_int_equal (json_array_size (json_object_get (o, "checks")), 1);
    json_decref (o);
    assert_int_equal (call (f, "GET", NULL, &other, &o), 200);
    assert_int_equal (json_array_size (json_object_get (o, "checks")), 0);
    json_decref (o);
    assert_int_equal (call (f, "POST", "{\"mode\":\"quick\"}", &owner, &o), 400);
    assert_string_equal (error_field (o), "job_id");
    json_decref (o);
}

static void test_ring_bound (void **state)
{
    fm_checks_t *c;
    fm_error_t err;
    const char *field;
    int64_t job;
    fm_ident_t id = root;
    json_t *a;
    char body[sizeof (good_body) + 8];

    errno = 0;
    assert_null (fm_checks_create (0, &err));
    assert_int_equal (errno, EINVAL);
    assert_null (fm_checks_create (4097, &err));
    fm_checks_destroy (NULL);
    assert_non_null (c = fm_checks_create (2, &err));
    for (int j = 20; j < 23; j++) {
        snprintf (body, sizeof (body), "%s", good_body);
        memcpy (strstr (body, "12"), j == 20 ? "20" : j == 21 ? "21" : "22", 2);
        assert_int_equal (
            fm_checks_add (c, body, strlen (body), 0, true, j, &job, &field, &err), 0);
        assert_int_equal (job, j);
    }
    /* the oldest (job 20) was dropped */
    assert_non_null (a = fm_checks_json (c, 20, &id, true, -1));
    assert_int_equal (json_array_size (a), 0);
    json_decref (a);
    assert_non_null (a = fm_checks_json (c, 22, &id, true, -1));
    assert_int_equal (json_array_size (a), 1);
    json_decref (a);
    errno = 0;
    assert_int_equal (fm_checks_add (c, "{}", 2, 0, true, 1, &job, &field, &err), -1);
    assert_int_equal (errno, EINVAL);
    fm_checks_destroy (c);
}

static void test_route_names (void **state)
{
    /* the metrics label each route by name: the two methods must differ */
    size_t hits = 0;

    for (size_t i = 0; i < fm_api_nroutes; i++) {
        hits += strncmp (fm_api_route_names[i], "/v1/checks", 10) == 0;
        for (size_t j = 0; j < i; j++) {
            assert_string_not_equal (fm_api_route_names[i], fm_api_route_names[j]);
        }
    }
    assert_int_equal (hits, 2);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_post_and_get, setup, teardown),
        cmocka_unit_test_setup_teardown (test_newest_wins, setup, teardown),
        cmocka_unit_test_setup_teardown (test_reference, setup, teardown),
        cmocka_unit_test_setup_teardown (test_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown (test_too_many_pairs, setup, teardown),
        cmocka_unit_test_setup_teardown (test_authorisation, setup, teardown),
        cmocka_unit_test_setup_teardown (test_ring_bound, setup, teardown),
        cmocka_unit_test (test_route_names),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
