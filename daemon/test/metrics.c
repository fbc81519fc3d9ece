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
    char *text =
        fm_metrics_render (f->m, f->st, 0, fm_time_real_ns (), 100, &len, &err);

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
    assert_non_null (strstr (
        t, "fabricd_probe_drops_total{node=\"_other\",reason=\"foreign\"} 7\n"));
    snprintf (node, sizeof (node), "{node=\"x%d\"", FM_METRICS_DROP_NODES_MAX - 3);
    assert_non_null (strstr (t, node));
    snprintf (node, sizeof (node), "{node=\"x%d\"", FM_METRICS_DROP_NODES_MAX - 2);
    assert_null (strstr (t, node));
    free (t);
}

/* Series count at the size of the sites this is for: a 16k-node job whose
 * agents report 4 links each (65,536 link directions). The per-node series
 * grow with the nodes; the per-link ones stop at max_links, the worst first.
 */
#define BIG_NODES 16384
#define BIG_LINKS 4

static size_t count_lines (const char *t, const char *prefix)
{
    size_t n = 0, len = strlen (prefix);

    for (const char *p = t; p && *p; p = strchr (p, '\n'), p = p ? p + 1 : NULL) {
        n += strncmp (p, prefix, len) == 0;
    }
    return n;
}

static void test_series_bounded (void **state)
{
    fixture_t *f = *state;
    fm_job_t j = {.job_id = 9, .user_id = 1, .window_ns = 5000000000LL};
    fm_link_rec_t links[BIG_LINKS];
    char node[32], peers[BIG_LINKS][32];
    fm_store_put_result_t res;
    fm_error_t err;
    size_t len, series = 0;
    int64_t id;
    bool created;
    char *t;

    j.created_ns = fm_time_real_ns ();
    for (int i = 0; i < BIG_NODES; i++) {
        fm_agent_t a = {.probe_addr = "127.0.0.1", .probe_port = 1};
        snprintf (a.node, sizeof (a.node), "n%d", i);
        assert_int_equal (fm_store_register (f->st, &j, &a, "[]", &id, &created, &err),
                          0);
    }
    for (int i = 0; i < BIG_NODES; i++) {
        fm_window_t w = {.seq = 0,
                         .start_ns = j.created_ns - 5000000000LL,
                         .end_ns = j.created_ns,
                         .links = links,
                         .nlinks = BIG_LINKS,
                         .health_json = (char *)"[]"};
        fm_report_t rep = {.job_id = 9,
                           .node = node,
                           .windows = &w,
                           .nwindows = 1,
                           .nrecords = BIG_LINKS};
        snprintf (node, sizeof (node), "n%d", i);
        for (int k = 0; k < BIG_LINKS; k++) {
            snprintf (peers[k], sizeof (peers[k]), "n%d", (i + k + 1) % BIG_NODES);
            links[k] = (fm_link_rec_t){
                .peer = peers[k],
                .dir = FM_DIR_OUT,
                .rtt = {.present = true,
                        .p50 = 10000,
                        .p99 = 20000 + i,
                        .max = 30000 + i},
                .owd = {.present = true, .p50 = 5000, .p99 = 9000, .max = 9000},
                .sent = 100,
                .received = 100 - (i % 7 == 0 ? 1 : 0),
                .lost = i % 7 == 0 ? 1 : 0,
            };
        }
        assert_int_equal (fm_store_put_report (f->st, &rep, &res, &err), 0);
    }
    t = fm_metrics_render (f->m, f->st, 0, fm_time_real_ns (), 100, &len, &err);
    assert_non_null (t);
    assert_int_equal (count_lines (t, "fabricd_node_loss_ratio{"), BIG_NODES);
    assert_int_equal (count_lines (t, "fabricd_node_rtt_p99_max_seconds{"), BIG_NODES);
    assert_int_equal (count_lines (t, "fabricd_link_loss_ratio{"), 100);
    assert_int_equal (count_lines (t, "fabricd_link_rtt_p99_seconds{"), 100);
    assert_int_equal (count_lines (t, "fabricd_link_owd_p99_seconds{"), 100);
    /* the worst first: every listed link is one that lost probes */
    assert_null (strstr (t, "fabricd_link_loss_ratio{src=\"n1\","));
    for (const char *p = t; *p; p = strchr (p, '\n') + 1) {
        series += *p != '#';
    }
    /* 3 per node here (last seen, loss, p99 RTT; 5 with a clock estimate),
     * 3 per listed link, and the handful of fabricd's own
     */
    print_message (
        "16384 nodes, 65536 link directions: %zu series, %zu bytes\n", series, len);
    assert_true (series <= 3 * (size_t)BIG_NODES + 3 * 100 + 64);
    free (t);
    t = fm_metrics_render (f->m, f->st, 0, fm_time_real_ns (), 0, &len, &err);
    assert_non_null (t);
    assert_int_equal (count_lines (t, "fabricd_link_loss_ratio{"), 0);
    assert_non_null (strstr (t, "# TYPE fabricd_link_loss_ratio gauge\n"));
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
        cmocka_unit_test_setup_teardown (test_series_bounded, setup, teardown),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
