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

#include "fmtime.h"
#include "metrics.h"

static const char *const routes[] = {"/v1/reports", "other"};

typedef struct {
    char dir[64];
    char path[96];
    fm_store_t *st;
    fm_metrics_t *m;
} fixture_t;

static int setup (void **state)
{
    fixture_t *f = calloc (1, sizeof (*f));
    fm_error_t err;

    if (!f) {
        return -1;
    }
    snprintf (f->dir, sizeof (f->dir), "/tmp/fm-metrics-test.XXXXXX");
    if (!mkdtemp (f->dir)) {
        return -1;
    }
    snprintf (f->path, sizeof (f->path), "%s/db", f->dir);
    f->st = fm_store_open ("sqlite", f->path, FM_STORE_SYNC_NORMAL, &err);
    f->m = fm_metrics_create (routes, 2);
    if (!f->st || !f->m) {
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

    fm_store_close (f->st);
    fm_metrics_destroy (f->m);
    for (size_t i = 0; i < 3; i++) {
        snprintf (p, sizeof (p), "%s%s", f->path, sfx[i]);
        unlink (p);
    }
    rmdir (f->dir);
    free (f);
    return 0;
}

static char *render (fixture_t *f)
{
    fm_error_t err;
    size_t len;
    char *text = fm_metrics_render (f->m, f->st, 0, fm_time_real_ns (), &len, &err);

    assert_non_null (text);
    assert_int_equal (strlen (text), len);
    return text;
}

static void test_create_invalid (void **state)
{
    (void)state;
    assert_null (fm_metrics_create (NULL, 1));
    assert_null (fm_metrics_create (routes, 0));
    fm_metrics_destroy (NULL);
}

static void test_requests_other_status (void **state)
{
    fixture_t *f = *state;
    char *t;

    fm_metrics_request (f->m, 0, 200, 0.001);
    fm_metrics_request (f->m, 0, 418, 0.001);
    fm_metrics_request (f->m, 0, 502, 0.001);
    fm_metrics_request (f->m, 7, 404, 0.001); /* out of range: the last route */
    t = render (f);
    assert_non_null (strstr (
        t, "fabricd_http_requests_total{route=\"/v1/reports\",code=\"200\"} 1\n"));
    assert_non_null (strstr (
        t, "fabricd_http_requests_total{route=\"/v1/reports\",code=\"other\"} 2\n"));
    assert_non_null (
        strstr (t, "fabricd_http_requests_total{route=\"other\",code=\"404\"} 1\n"));
    assert_non_null (strstr (
        t, "fabricd_http_request_duration_seconds_count{route=\"/v1/reports\"} 3\n"));
    free (t);
}

static void test_rejected_reasons (void **state)
{
    fixture_t *f = *state;
    fm_ingest_counts_t c;
    char *t;

    fm_metrics_rejected (f->m, "method_not_allowed");
    fm_metrics_rejected (f->m, "conflict");
    fm_metrics_rejected (f->m, "conflict");
    fm_metrics_rejected (f->m, "no_such_code");
    t = render (f);
    assert_non_null (
        strstr (t, "fabricd_ingest_rejected_total{reason=\"method_not_allowed\"} 1\n"));
    assert_non_null (
        strstr (t, "fabricd_ingest_rejected_total{reason=\"conflict\"} 2\n"));
    assert_non_null (strstr (t, "fabricd_ingest_rejected_total{reason=\"other\"} 1\n"));
    assert_null (strstr (t, "{code=\""));
    fm_metrics_ingest_counts (f->m, &c);
    assert_int_equal (c.rejected, 4);
    free (t);
}

static void test_actions_and_alarms (void **state)
{
    fixture_t *f = *state;
    char *t;

    t = render (f);
    /* Declared before any action, so that dashboards find the series. */
    assert_non_null (strstr (t, "# TYPE fabricd_actions_total counter\n"));
    assert_non_null (strstr (t, "\nfabricd_alarms_active 0\n"));
    assert_null (strstr (t, "fabricd_actions_total{"));
    free (t);
    fm_metrics_action (f->m, "drain", "done");
    fm_metrics_action (f->m, "drain", "done");
    fm_metrics_action (f->m, "drain", "error: EAGAIN: slurmctld busy");
    fm_metrics_action (f->m, "weight", "dry_run");
    fm_metrics_action (f->m, "reboot", "errorish");
    fm_metrics_action (f->m, NULL, NULL);
    fm_metrics_action (NULL, "drain", "done");
    fm_metrics_alarms (f->m, 3);
    fm_metrics_alarms (NULL, 1);
    t = render (f);
    assert_non_null (
        strstr (t, "fabricd_actions_total{kind=\"drain\",result=\"done\"} 2\n"));
    assert_non_null (
        strstr (t, "fabricd_actions_total{kind=\"drain\",result=\"error\"} 1\n"));
    assert_non_null (
        strstr (t, "fabricd_actions_total{kind=\"weight\",result=\"dry_run\"} 1\n"));
    assert_non_null (
        strstr (t, "fabricd_actions_total{kind=\"other\",result=\"other\"} 2\n"));
    assert_non_null (strstr (t, "\nfabricd_alarms_active 3\n"));
    free (t);
}

static void test_node_names (void **state)
{
    fixture_t *f = *state;
    fm_job_t j = {.job_id = 5, .user_id = 1, .window_ns = 5000000000LL};
    fm_agent_t a = {.node = "n1", .probe_addr = "127.0.0.1", .probe_port = 1};
    fm_window_t w = {.seq = 0,
                     .has_clock = true,
                     .clock_offset_ns = 20,
                     .clock_error_ns = 1500,
                     .health_json = (char *)"[]"};
    fm_report_t rep = {.job_id = 5, .node = "n1", .windows = &w, .nwindows = 1};
    fm_store_put_result_t res;
    fm_error_t err;
    int64_t id;
    bool created;
    char *t;

    j.created_ns = fm_time_real_ns ();
    w.end_ns = j.created_ns;
    w.start_ns = w.end_ns - 5000000000LL;
    assert_int_equal (fm_store_register (f->st, &j, &a, "[]", &id, &created, &err), 0);
    assert_int_equal (fm_store_put_report (f->st, &rep, &res, &err), 0);
    t = render (f);
    assert_non_null (strstr (t,
                             "# TYPE fabricd_node_last_seen_timestamp_seconds gauge\n"
                             "fabricd_node_last_seen_timestamp_seconds{node=\"n1\"} "));
    assert_null (strstr (t, "fabricd_node_last_seen_seconds"));
    assert_non_null (
        strstr (t, "fabricd_node_clock_error_seconds{node=\"n1\"} 0.000001500\n"));
    free (t);
}

/* Probe drops add up per node and reason; past the node cap they go to
 * "_other", so that memory stays bounded however many names arrive.
 */
static void test_probe_drops (void **state)
{
    fixture_t *f = *state;
    int64_t d[FM_API_PROBE_DROP_NREASONS] = {0};
    char *t, node[32];

    t = render (f);
    assert_non_null (strstr (t, "# TYPE fabricd_probe_drops_total counter\n"));
    assert_null (strstr (t, "fabricd_probe_drops_total{"));
    free (t);
    d[4] = 7; /* bad_tag */
    fm_metrics_probe_drops (f->m, "n1", d);
    d[4] = 3;
    d[6] = 2; /* unknown_sender */
    fm_metrics_probe_drops (f->m, "n1", d);
    d[4] = 0;
    d[5] = 1; /* foreign */
    d[6] = 0;
    fm_metrics_probe_drops (f->m, "n2", d);
    t = render (f);
    assert_non_null (
        strstr (t, "fabricd_probe_drops_total{node=\"n1\",reason=\"bad_tag\"} 10\n"));
    assert_non_null (strstr (
        t, "fabricd_probe_drops_total{node=\"n1\",reason=\"unknown_sender\"} 2\n"));
    assert_non_null (
        strstr (t, "fabricd_probe_drops_total{node=\"n2\",reason=\"foreign\"} 1\n"));
    assert_null (strstr (t, "node=\"n2\",reason=\"bad_tag\""));
    assert_null (strstr (t, "node=\"_other\""));
    free (t);
    for (int i = 0; i < FM_METRICS_DROP_NODES_MAX + 5; i++) {
        snprintf (node, sizeof (node), "x%d", i);
        fm_metrics_probe_drops (f->m, node, d);
    }
    t = render (f);
    /* n1, n2 and the first MAX - 2 x's have their own series */
    assert_non_null (
        strstr (t, "fabricd_probe_drops_total{node=\"_other\",reason=\"foreign\"} 7\n"));
    snprintf (node, sizeof (node), "{node=\"x%d\"", FM_METRICS_DROP_NODES_MAX - 3);
    assert_non_null (strstr (t, node));
    snprintf (node, sizeof (node), "{node=\"x%d\"", FM_METRICS_DROP_NODES_MAX - 2);
    assert_null (strstr (t, node));
    free (t);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_create_invalid),
        cmocka_unit_test_setup_teardown (test_requests_other_status, setup, teardown),
        cmocka_unit_test_setup_teardown (test_rejected_reasons, setup, teardown),
        cmocka_unit_test_setup_teardown (test_actions_and_alarms, setup, teardown),
        cmocka_unit_test_setup_teardown (test_node_names, setup, teardown),
        cmocka_unit_test_setup_teardown (test_probe_drops, setup, teardown),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
