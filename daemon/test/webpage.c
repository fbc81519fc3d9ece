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
#include "webpage.h"

#define SEC 1000000000LL
#define JOB 42
#define OWNER 1000

/* The fourth name is one no agent would send, stored here directly: the
 * page must escape it wherever it appears.
 */
static const char *const nodes[] = {"n1", "n2", "n10", "x<b>\"'&"};
#define NNODES 4
static const char evil_esc[] = "x&lt;b&gt;&quot;&#39;&amp;";

typedef struct {
    char dir[64];
    char path[96];
    fm_daemon_t d;
} fixture_t;

static const fm_ident_t owner = {OWNER, OWNER};
static const fm_ident_t other = {1001, 1001};

static void reg (fixture_t *f, const char *node, int64_t now)
{
    fm_job_t j = {.job_id = JOB,
                  .user_id = OWNER,
                  .expected = NNODES,
                  .window_ns = 5 * SEC,
                  .created_ns = now - 60 * SEC};
    fm_agent_t a = {.probe_port = 9000, .registered_ns = now - 60 * SEC};
    fm_error_t err;
    int64_t id;
    bool created;

    snprintf (a.node, sizeof (a.node), "%s", node);
    snprintf (a.probe_addr, sizeof (a.probe_addr), "127.0.0.1");
    assert_int_equal (fm_store_register (f->d.store, &j, &a, "[]", &id, &created, &err),
                      0);
}

/* Node i reports 3 windows of out-links to every other node; n1 -> n2 loses
 * 5 of 100 probes, the one-way delay grows with the destination's index and
 * the clock error bound with the window.
 */
static void report (fixture_t *f, size_t i, int64_t now)
{
    fm_window_t w[3];
    fm_link_rec_t l[3][NNODES];
    fm_report_t rep = {.job_id = JOB, .node = nodes[i], .windows = w, .nwindows = 3};
    fm_store_put_result_t res;
    fm_error_t err;

    memset (w, 0, sizeof (w));
    memset (l, 0, sizeof (l));
    for (size_t k = 0; k < 3; k++) {
        size_t nl = 0;
        w[k].seq = (int64_t)k;
        w[k].end_ns = now - (int64_t)(2 - k) * 5 * SEC;
        w[k].start_ns = w[k].end_ns - 5 * SEC;
        w[k].has_clock = true;
        w[k].clock_offset_ns = 10;
        w[k].clock_error_ns = 1000 * (int64_t)(i + 1) + 100 * (int64_t)k;
        w[k].health_json = (char *)"[]";
        w[k].links = l[k];
        for (size_t p = 0; p < NNODES; p++) {
            fm_link_rec_t *x = &l[k][nl];
            if (p == i) {
                continue;
            }
            x->peer = nodes[p];
            x->dir = FM_DIR_OUT;
            x->rtt.present = true;
            x->rtt.p50 = x->rtt.p90 = x->rtt.p99 = x->rtt.max = 20000;
            x->owd.present = true;
            x->owd.p50 = 10000 * (int64_t)(p + 1);
            x->owd.p90 = x->owd.p99 = x->owd.max = x->owd.p50 + 500;
            x->sent = 100;
            x->lost = i == 0 && p == 1 ? 5 : 0;
            x->received = x->sent - x->lost;
            nl++;
        }
        w[k].nlinks = nl;
        rep.nrecords += nl;
    }
    assert_int_equal (fm_store_put_report (f->d.store, &rep, &res, &err), 0);
    assert_int_equal (res.accepted, 3);
}

static int setup (void **state)
{
    fixture_t *f = calloc (1, sizeof (*f));
    fm_idlist_t none = {0};
    fm_error_t err;

    if (!f || sodium_init () < 0) {
        return -1;
    }
    snprintf (f->dir, sizeof (f->dir), "/tmp/fm-webpage-test.XXXXXX");
    if (!mkdtemp (f->dir)) {
        return -1;
    }
    snprintf (f->path, sizeof (f->path), "%s/db", f->dir);
    f->d.store = fm_store_open ("sqlite", f->path, FM_STORE_SYNC_NORMAL, &err);
    f->d.auth = fm_auth_create (NULL, &none, &none, &none, true, &err);
    f->d.retention_ns = 86400 * SEC;
    f->d.window_ns = 5 * SEC;
    if (!f->d.store || !f->d.auth) {
        return -1;
    }
    *state = f;
    return 0;
}

static int setup_job (void **state)
{
    fixture_t *f;
    int64_t now = fm_time_real_ns ();

    if (setup (state) < 0) {
        return -1;
    }
    f = *state;
    for (size_t i = 0; i < NNODES; i++) {
        reg (f, nodes[i], now);
    }
    for (size_t i = 0; i < NNODES; i++) {
        report (f, i, now);
    }
    return 0;
}

static int teardown (void **state)
{
    fixture_t *f = *state;
    char p[128];
    const char *sfx[] = {"", "-wal", "-shm"};

    fm_store_close (f->d.store);
    fm_auth_destroy (f->d.auth);
    for (size_t i = 0; i < 3; i++) {
        snprintf (p, sizeof (p), "%s%s", f->path, sfx[i]);
        unlink (p);
    }
    rmdir (f->dir);
    free (f);
    return 0;
}

static size_t count (const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = hay; (p = strstr (p, needle)); p += strlen (needle)) {
        n++;
    }
    return n;
}

/* The page as a NUL-terminated string (the body is not NUL-terminated). */
static char *page (fixture_t *f, const fm_ident_t *who, int64_t job, int *status)
{
    fm_request_t req = {.method = "GET", .path = "/jobs/42", .uri = "/jobs/42"};
    fm_response_t resp = {0};
    char *s;

    fm_webpage_job (&f->d, &req, who, job, &resp);
    assert_non_null (resp.body);
    *status = resp.status;
    s = strndup (resp.body, resp.len);
    assert_non_null (s);
    if (resp.status == 200) {
        assert_string_equal (resp.content_type, "text/html; charset=utf-8");
    }
    free (resp.body);
    return s;
}

static void test_heatmap_cells (void **state)
{
    fixture_t *f = *state;
    int status;
    char *s = page (f, &owner, JOB, &status);
    const char *evil_cell;

    assert_int_equal (status, 200);
    /* N x (N - 1) ordered pairs, the diagonal drawn apart. */
    assert_int_equal (count (s, "<rect class=\"cell\""), NNODES * (NNODES - 1));
    assert_int_equal (count (s, "<rect class=\"diag\""), NNODES);
    assert_non_null (strstr (s, "data-nodes=\"4\""));
    /* n1 -> n2 lost 15 of 300: the worst reporter's ratio, and its delay. */
    assert_non_null (strstr (s,
                             "data-src=\"n1\" data-dst=\"n2\" data-owd-ns=\"20000\""
                             " data-loss=\"0.050000\""));
    assert_non_null (strstr (s,
                             "data-src=\"n2\" data-dst=\"n1\" data-owd-ns=\"10000\""
                             " data-loss=\"0.000000\""));
    /* Natural order: n2 before n10. */
    assert_true (strstr (s, "data-src=\"n2\"") < strstr (s, "data-src=\"n10\""));
    /* Escaped in attributes and text, never raw. */
    assert_null (strstr (s, "x<b>"));
    assert_null (strstr (s, "\"'&"));
    evil_cell = strstr (s, "data-src=\"n1\" data-dst=\"x&lt;b&gt;&quot;&#39;&amp;\"");
    assert_non_null (evil_cell);
    assert_true (count (s, evil_esc) >= 2 * NNODES);
    /* No script, no external asset. */
    assert_null (strstr (s, "<script"));
    assert_null (strstr (s, "src=\"http"));
    assert_null (strstr (s, "href=\"http"));
    free (s);
}

static void test_clock_series (void **state)
{
    fixture_t *f = *state;
    fm_clock_point_t *p;
    fm_error_t err;
    size_t n;
    int status;
    char *s;

    assert_int_equal (fm_store_clock_series (f->d.store, JOB, 120, 1000, &p, &n, &err),
                      0);
    assert_int_equal (n, NNODES * 3);
    /* Ordered by node, then time; each bucket keeps its window's bound. */
    assert_string_equal (p[0].node, "n1");
    assert_int_equal (p[0].error_ns, 1000);
    assert_int_equal (p[2].error_ns, 1200);
    assert_true (p[1].end_ns > p[0].end_ns);
    free (p);
    /* One bucket: the largest bound of the node's windows, never an average. */
    assert_int_equal (fm_store_clock_series (f->d.store, JOB, 1, 1000, &p, &n, &err),
                      0);
    assert_int_equal (n, NNODES);
    assert_int_equal (p[0].error_ns, 1200);
    free (p);
    assert_int_equal (fm_store_clock_series (f->d.store, JOB, 120, 5, &p, &n, &err), 0);
    assert_int_equal (n, 5);
    free (p);
    assert_int_equal (fm_store_clock_series (f->d.store, 7, 120, 1000, &p, &n, &err),
                      0);
    assert_int_equal (n, 0);
    assert_int_equal (fm_store_clock_series (f->d.store, JOB, 0, 1000, &p, &n, &err),
                      -1);

    s = page (f, &owner, JOB, &status);
    assert_int_equal (count (s, "<polyline class=\"clock-node\""), NNODES);
    assert_non_null (strstr (s, "<polyline class=\"clock-node\" data-node=\"n1\""));
    assert_non_null (strstr (s, "data-node=\"x&lt;b&gt;&quot;&#39;&amp;\""));
    free (s);
}

static void test_actions (void **state)
{
    fixture_t *f = *state;
    fm_action_rec_t a = {.at_ns = fm_time_real_ns (), .job_id = JOB, .dry_run = true};
    fm_action_rec_t other_job = {.at_ns = fm_time_real_ns (), .job_id = 7};
    fm_error_t err;
    int status;
    char *s;

    s = page (f, &owner, JOB, &status);
    assert_non_null (strstr (s, "no action was taken for this job"));
    free (s);
    snprintf (a.kind, sizeof (a.kind), "drain");
    snprintf (a.node, sizeof (a.node), "n2");
    snprintf (a.element, sizeof (a.element), "node:n2");
    snprintf (a.reason, sizeof (a.reason), "fabric: <script>alert(1)</script>");
    snprintf (a.result, sizeof (a.result), "dry_run");
    snprintf (other_job.kind, sizeof (other_job.kind), "resume");
    snprintf (other_job.reason, sizeof (other_job.reason), "other job's");
    assert_int_equal (fm_store_action_add (f->d.store, &a, &err), 0);
    assert_int_equal (fm_store_action_add (f->d.store, &other_job, &err), 0);
    s = page (f, &owner, JOB, &status);
    assert_int_equal (status, 200);
    assert_int_equal (count (s, "<table class=\"actions\">"), 1);
    assert_non_null (strstr (s, "fabric: &lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_null (strstr (s, "<script"));
    assert_null (strstr (s, "other job&#39;s"));
    assert_non_null (strstr (s, "dry_run (dry run)"));
    free (s);
}

static void test_access (void **state)
{
    fixture_t *f = *state;
    int status;
    char *s;

    s = page (f, &other, JOB, &status);
    assert_int_equal (status, 403);
    assert_non_null (strstr (s, "\"forbidden\""));
    free (s);
    s = page (f, NULL, JOB, &status); /* pages_public */
    assert_int_equal (status, 200);
    free (s);
    s = page (f, &owner, 99, &status);
    assert_int_equal (status, 404);
    free (s);
}

static void test_empty_job (void **state)
{
    fixture_t *f = *state;
    int status;
    char *s;

    reg (f, "solo", fm_time_real_ns ());
    s = page (f, &owner, JOB, &status);
    assert_int_equal (status, 200);
    assert_int_equal (count (s, "<rect class=\"cell\""), 0);
    assert_int_equal (count (s, "<rect class=\"diag\""), 1);
    assert_non_null (strstr (s, "no window carried a clock estimate"));
    assert_non_null (strstr (s, "no link windows"));
    free (s);
}

static void test_index (void **state)
{
    fixture_t *f = *state;
    fm_request_t req = {.method = "GET", .path = "/", .uri = "/"};
    fm_response_t resp = {0};
    char *s;

    fm_webpage_index (&f->d, &req, &resp);
    assert_int_equal (resp.status, 200);
    s = strndup (resp.body, resp.len);
    free (resp.body);
    assert_non_null (s);
    /* Without a monitor: every node, no states. */
    assert_non_null (strstr (s, "the fabric monitor is not running"));
    assert_int_equal (count (s, "<td class=\"st-unknown\">"), NNODES);
    assert_non_null (strstr (s, "<a href=\"/jobs/42\">42</a>"));
    assert_non_null (strstr (s, evil_esc));
    assert_null (strstr (s, "x<b>"));
    assert_non_null (strstr (s, "Links (5m): 1 lossy, 11 clean"));
    free (s);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_heatmap_cells, setup_job, teardown),
        cmocka_unit_test_setup_teardown (test_clock_series, setup_job, teardown),
        cmocka_unit_test_setup_teardown (test_actions, setup_job, teardown),
        cmocka_unit_test_setup_teardown (test_access, setup_job, teardown),
        cmocka_unit_test_setup_teardown (test_empty_job, setup, teardown),
        cmocka_unit_test_setup_teardown (test_index, setup_job, teardown),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
