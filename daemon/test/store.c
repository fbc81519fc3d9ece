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
#include <sqlite3.h>

#include "store_private.h"

#define T0 1800000000000000000LL
#define SEC 1000000000LL

typedef struct {
    char dir[64];
    char path[96];
} fixture_t;

static int setup (void **state)
{
    fixture_t *f = calloc (1, sizeof (*f));

    if (!f) {
        return -1;
    }
    snprintf (f->dir, sizeof (f->dir), "/tmp/fm-store-test.XXXXXX");
    if (!mkdtemp (f->dir)) {
        free (f);
        return -1;
    }
    snprintf (f->path, sizeof (f->path), "%s/db", f->dir);
    *state = f;
    return 0;
}

static int teardown (void **state)
{
    fixture_t *f = *state;
    char p[128];
    const char *sfx[] = {"", "-wal", "-shm"};

    for (size_t i = 0; i < 3; i++) {
        snprintf (p, sizeof (p), "%s%s", f->path, sfx[i]);
        unlink (p);
    }
    rmdir (f->dir);
    free (f);
    return 0;
}

static void
reg (fm_store_t *st, int64_t job, int64_t uid, const char *node, bool want_new)
{
    fm_job_t j = {.job_id = job,
                  .user_id = uid,
                  .expected = 2,
                  .window_ns = 5 * SEC,
                  .created_ns = T0};
    fm_agent_t a = {.probe_port = 9000, .registered_ns = T0};
    fm_error_t err;
    int64_t id;
    bool created;

    memset (j.probe_key, (int)job, sizeof (j.probe_key));
    snprintf (a.node, sizeof (a.node), "%s", node);
    snprintf (a.probe_addr, sizeof (a.probe_addr), "127.0.0.1");
    assert_int_equal (fm_store_register (st, &j, &a, "[]", &id, &created, &err), 0);
    assert_true (id > 0);
    assert_int_equal (created, want_new);
}

/* A report of windows seq0..seq0+n-1 from node about peer. */
typedef struct {
    fm_report_t rep;
    fm_window_t w[4];
    fm_link_rec_t l[4][2];
} rep_t;

static void mkrep (rep_t *r,
                   int64_t job,
                   const char *node,
                   const char *peer,
                   int64_t seq0,
                   size_t n,
                   int64_t end0,
                   int64_t lost)
{
    memset (r, 0, sizeof (*r));
    r->rep.job_id = job;
    r->rep.node = node;
    r->rep.windows = r->w;
    r->rep.nwindows = n;
    for (size_t i = 0; i < n; i++) {
        fm_window_t *w = &r->w[i];
        w->seq = seq0 + (int64_t)i;
        w->end_ns = end0 + (int64_t)i * 5 * SEC;
        w->start_ns = w->end_ns - 5 * SEC;
        w->has_clock = true;
        w->clock_offset_ns = 7;
        w->clock_error_ns = 3;
        w->health_json = (char *)"[]";
        w->links = r->l[i];
        w->nlinks = 2;
        for (int d = 0; d < 2; d++) {
            fm_link_rec_t *l = &r->l[i][d];
            l->peer = peer;
            l->dir = d;
            l->rtt.present = d == 0;
            l->rtt.p50 = 100;
            l->rtt.p90 = 200;
            l->rtt.p99 = 300 + (int64_t)i;
            l->rtt.max = 400 + (int64_t)i;
            l->sent = 100;
            l->lost = d == 0 ? lost : 0;
            l->received = 100 - l->lost;
        }
        r->rep.nrecords += 2;
    }
}

static void test_register (void **state)
{
    fixture_t *f = *state;
    fm_error_t err;
    fm_store_t *st = fm_store_open ("sqlite", f->path, FM_STORE_SYNC_NORMAL, &err);
    fm_job_t j = {.job_id = 1, .user_id = 77, .created_ns = T0};
    fm_agent_t a = {.node = "x", .probe_addr = "::1", .probe_port = 1};
    fm_agent_t *agents;
    size_t n;
    int64_t id;
    bool created;

    assert_non_null (st);
    assert_string_equal (fm_store_backend (st), "sqlite");
    assert_int_equal (fm_store_schema_version (st), 5);
    reg (st, 1, 77, "n1", true);
    reg (st, 1, 77, "n2", true);
    reg (st, 1, 77, "n1", false);
    /* Another owner for the same job is refused and changes nothing. */
    assert_int_equal (fm_store_register (st, &j, &a, "[]", &id, &created, &err), 0);
    j.user_id = 78;
    assert_int_equal (fm_store_register (st, &j, &a, "[]", &id, &created, &err), -1);
    assert_int_equal (errno, EEXIST);
    assert_int_equal (fm_store_job_get (st, 1, &j, &err), 0);
    assert_int_equal (j.user_id, 77);
    assert_int_equal (j.probe_key[0], 1); /* the first registration's key */
    assert_int_equal (j.mode, FM_JOB_OBSERVE);
    /* the first registration fixes the mode */
    j = (fm_job_t){
        .job_id = 4, .user_id = 77, .created_ns = T0, .mode = FM_JOB_PROTECT};
    assert_int_equal (fm_store_register (st, &j, &a, "[]", &id, &created, &err), 0);
    j.mode = FM_JOB_OBSERVE;
    snprintf (a.node, sizeof (a.node), "y");
    assert_int_equal (fm_store_register (st, &j, &a, "[]", &id, &created, &err), 0);
    assert_int_equal (j.mode, FM_JOB_PROTECT);
    assert_int_equal (fm_store_job_get (st, 4, &j, &err), 0);
    assert_int_equal (j.mode, FM_JOB_PROTECT);
    /* the node list: the newest (a requeued job runs on other nodes) */
    j = (fm_job_t){.job_id = 5, .user_id = 77, .created_ns = T0};
    assert_int_equal (fm_store_register (st, &j, &a, "[]", &id, &created, &err), 0);
    assert_int_equal (fm_store_job_get (st, 5, &j, &err), 0);
    assert_string_equal (j.nodes, "");
    j.expected = 2;
    snprintf (j.nodes, sizeof (j.nodes), "x,y");
    assert_int_equal (fm_store_register (st, &j, &a, "[]", &id, &created, &err), 0);
    j.expected = 3;
    snprintf (j.nodes, sizeof (j.nodes), "x,y,z");
    assert_int_equal (fm_store_register (st, &j, &a, "[]", &id, &created, &err), 0);
    assert_string_equal (j.nodes, "x,y,z");
    j.expected = 0; /* an agent without job_nodes changes nothing */
    j.nodes[0] = '\0';
    assert_int_equal (fm_store_register (st, &j, &a, "[]", &id, &created, &err), 0);
    assert_int_equal (fm_store_job_get (st, 5, &j, &err), 0);
    assert_string_equal (j.nodes, "x,y,z");
    assert_int_equal (j.expected, 3);
    assert_int_equal (fm_store_agents (st, 1, &agents, &n, &err), 0);
    assert_int_equal (n, 3);
    assert_string_equal (agents[0].node, "n1");
    assert_int_equal (agents[0].last_seq, -1);
    free (agents);
    assert_int_equal (fm_store_job_get (st, 2, &j, &err), -1);
    assert_int_equal (errno, ENOENT);
    assert_int_equal (fm_store_agent_lookup (st, 1, "n2", &err), 0);
    assert_int_equal (fm_store_agent_lookup (st, 1, "n9", &err), -1);
    assert_int_equal (errno, ENOENT);
    assert_int_equal (fm_store_agent_lookup (st, 2, "n1", &err), -1);
    assert_int_equal (errno, ENOENT);
    fm_store_close (st);
    fm_store_close (NULL);
}

static void test_reports (void **state)
{
    fixture_t *f = *state;
    fm_error_t err;
    fm_store_t *st = fm_store_open (
        "sqlite", f->path, FM_STORE_SYNC_FULL | FM_STORE_BACKGROUND_CHECKPOINT, &err);
    fm_store_put_result_t res;
    fm_store_counts_t c;
    fm_link_stat_t *links;
    fm_node_stat_t *nodes;
    fm_agent_t *agents;
    rep_t r;
    size_t n;
    int64_t w, rec;

    assert_non_null (st);
    reg (st, 5, 1, "a", true);
    reg (st, 5, 1, "b", true);
    mkrep (&r, 5, "a", "b", 0, 3, T0, 10);
    assert_int_equal (fm_store_put_report (st, &r.rep, &res, &err), 0);
    assert_int_equal (res.accepted, 3);
    assert_int_equal (res.records, 6);
    assert_int_equal (res.duplicates, 0);

    /* Idempotent resend: seq 1..2 are stored, 3 is new. */
    mkrep (&r, 5, "a", "b", 1, 3, T0 + 5 * SEC, 10);
    assert_int_equal (fm_store_put_report (st, &r.rep, &res, &err), 0);
    assert_int_equal (res.accepted, 1);
    assert_int_equal (res.duplicates, 2);
    assert_int_equal (res.records, 2);

    /* A failing batch stores nothing: the second window repeats (peer, dir). */
    mkrep (&r, 5, "b", "a", 0, 2, T0, 0);
    r.l[1][1].dir = FM_DIR_OUT;
    assert_int_equal (fm_store_put_report (st, &r.rep, &res, &err), -1);
    assert_int_equal (errno, EEXIST);
    assert_int_equal (fm_store_counts (st, &c, &err), 0);
    assert_int_equal (c.windows, 4);
    assert_int_equal (c.records, 8);
    assert_int_equal (c.jobs, 1);
    /* ... and the node cache was flushed with the rollback. */
    mkrep (&r, 5, "b", "newpeer", 0, 1, T0, 0);
    assert_int_equal (fm_store_put_report (st, &r.rep, &res, &err), 0);
    assert_int_equal (res.accepted, 1);

    assert_int_equal (fm_store_agents (st, 5, &agents, &n, &err), 0);
    assert_int_equal (n, 2);
    assert_int_equal (agents[0].last_seq, 3);
    assert_int_equal (agents[0].windows, 4);
    assert_false (agents[0].final);
    assert_false (agents[1].final);
    free (agents);

    /* A final batch marks its agent alone, even when it is all duplicates (a
     * resend); a failed one marks nothing; a new registration clears it.
     */
    mkrep (&r, 5, "b", "a", 0, 2, T0, 0);
    r.rep.final = true;
    r.l[1][1].dir = FM_DIR_OUT;
    assert_int_equal (fm_store_put_report (st, &r.rep, &res, &err), -1);
    assert_int_equal (fm_store_agents (st, 5, &agents, &n, &err), 0);
    assert_false (agents[1].final);
    free (agents);
    mkrep (&r, 5, "b", "a", 0, 1, T0, 0);
    r.rep.final = true;
    assert_int_equal (fm_store_put_report (st, &r.rep, &res, &err), 0);
    assert_int_equal (res.duplicates, 1);
    assert_int_equal (fm_store_agents (st, 5, &agents, &n, &err), 0);
    assert_false (agents[0].final);
    assert_true (agents[1].final);
    free (agents);
    reg (st, 5, 1, "b", false);
    assert_int_equal (fm_store_agents (st, 5, &agents, &n, &err), 0);
    assert_false (agents[1].final);
    free (agents);

    assert_int_equal (fm_store_links (st, 0, 0, 0, &links, &n, &err), 0);
    assert_int_equal (n, 4);
    /* Worst first: a->b lost 40 of 400. */
    assert_string_equal (links[0].src, "a");
    assert_string_equal (links[0].dst, "b");
    assert_string_equal (links[0].reporter, "a");
    assert_int_equal (links[0].windows, 4);
    assert_int_equal (links[0].sent, 400);
    assert_int_equal (links[0].lost, 40);
    assert_true (links[0].has_rtt);
    assert_int_equal (links[0].rtt_p50_ns, 100);
    assert_int_equal (links[0].rtt_p99_ns, 302); /* max over windows */
    assert_false (links[0].has_owd);
    /* Then by rtt p99 (known first), then names. */
    assert_string_equal (links[1].src, "b");
    assert_string_equal (links[1].dst, "newpeer");
    /* The "in" entry of a about b is traffic b -> a. */
    assert_string_equal (links[2].src, "b");
    assert_string_equal (links[2].dst, "a");
    assert_string_equal (links[2].reporter, "a");
    assert_false (links[2].has_rtt);
    free (links);
    assert_int_equal (fm_store_links (st, 0, 5, 1, &links, &n, &err), 0);
    assert_int_equal (n, 1);
    free (links);
    assert_int_equal (fm_store_links (st, 0, 6, 0, &links, &n, &err), 0);
    assert_int_equal (n, 0);
    free (links);
    assert_int_equal (fm_store_links (st, T0 + 11 * SEC, 0, 0, &links, &n, &err), 0);
    assert_int_equal (n, 2); /* only a's last window is recent enough */
    free (links);

    assert_int_equal (fm_store_nodes (st, 0, &nodes, &n, &err), 0);
    assert_int_equal (n, 2);
    assert_string_equal (nodes[0].node, "a");
    assert_int_equal (nodes[0].windows, 4);
    assert_int_equal (nodes[0].links, 2);
    assert_int_equal (nodes[0].last_seen_ns, T0 + 15 * SEC);
    assert_true (nodes[0].has_clock);
    assert_string_equal (nodes[0].health_json, "[]");
    fm_store_nodes_free (nodes, n);

    assert_int_equal (fm_store_checkpoint (st, &err), 0);
    assert_int_equal (fm_store_job_counts (st, 5, 0, &w, &rec, &err), 0);
    assert_int_equal (w, 5);
    assert_int_equal (rec, 10);

    /* Retention: windows ending before T0 + 6 s go; the job stays (windows left). */
    assert_int_equal (fm_store_prune (st, T0 + 6 * SEC, &w, &err), 0);
    assert_int_equal (w, 3);
    assert_int_equal (fm_store_counts (st, &c, &err), 0);
    assert_int_equal (c.windows, 2);
    assert_int_equal (c.jobs, 1);
    assert_int_equal (fm_store_prune (st, T0 + 100 * SEC, &w, &err), 0);
    assert_int_equal (fm_store_counts (st, &c, &err), 0);
    assert_int_equal (c.windows, 0);
    assert_int_equal (c.records, 0);
    assert_int_equal (c.jobs, 0);
    fm_store_close (st);
}

static int user_version (const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    int v;

    assert_int_equal (sqlite3_open (path, &db), SQLITE_OK);
    assert_int_equal (sqlite3_prepare_v2 (db, "PRAGMA user_version", -1, &q, NULL),
                      SQLITE_OK);
    assert_int_equal (sqlite3_step (q), SQLITE_ROW);
    v = sqlite3_column_int (q, 0);
    sqlite3_finalize (q);
    sqlite3_close (db);
    return v;
}

static void test_actions (void **state)
{
    fixture_t *f = *state;
    fm_error_t err;
    fm_store_t *st = fm_store_open ("sqlite", f->path, FM_STORE_SYNC_NORMAL, &err);
    fm_action_rec_t a = {.at_ns = T0, .job_id = 7, .dry_run = false};
    fm_action_rec_t *v;
    size_t n;

    assert_non_null (st);
    snprintf (a.kind, sizeof (a.kind), "drain");
    snprintf (a.node, sizeof (a.node), "n1");
    snprintf (a.element, sizeof (a.element), "node:n1");
    snprintf (a.reason, sizeof (a.reason), "fabric: loss: 'quoted' %s", "x");
    snprintf (a.result, sizeof (a.result), "done");
    assert_int_equal (fm_store_action_add (st, &a, &err), 0);
    assert_true (a.id > 0);
    a.at_ns = T0 + SEC;
    a.job_id = 0;
    snprintf (a.kind, sizeof (a.kind), "alarm");
    snprintf (a.node, sizeof (a.node), "%s", "");
    a.dry_run = true;
    assert_int_equal (fm_store_action_add (st, &a, &err), 0);
    a.at_ns = T0 + 2 * SEC;
    snprintf (a.node, sizeof (a.node), "n2");
    assert_int_equal (fm_store_action_add (st, &a, &err), 0);

    /* newest first, every field back */
    assert_int_equal (fm_store_actions (st, 0, 0, NULL, 0, &v, &n, &err), 0);
    assert_int_equal (n, 3);
    assert_int_equal (v[0].at_ns, T0 + 2 * SEC);
    assert_string_equal (v[2].kind, "drain");
    assert_string_equal (v[2].reason, "fabric: loss: 'quoted' x");
    assert_string_equal (v[2].element, "node:n1");
    assert_string_equal (v[2].result, "done");
    assert_int_equal (v[2].job_id, 7);
    assert_false (v[2].dry_run);
    assert_true (v[1].dry_run);
    free (v);
    /* filters: job, node, since, limit */
    assert_int_equal (fm_store_actions (st, 0, 7, NULL, 0, &v, &n, &err), 0);
    assert_int_equal (n, 1);
    free (v);
    assert_int_equal (fm_store_actions (st, 0, 0, "n2", 0, &v, &n, &err), 0);
    assert_int_equal (n, 1);
    assert_int_equal (v[0].at_ns, T0 + 2 * SEC);
    free (v);
    assert_int_equal (fm_store_actions (st, T0 + SEC, 0, NULL, 0, &v, &n, &err), 0);
    assert_int_equal (n, 2);
    free (v);
    assert_int_equal (fm_store_actions (st, 0, 0, NULL, 1, &v, &n, &err), 0);
    assert_int_equal (n, 1);
    free (v);
    /* they outlive pruning of the windows */
    int64_t removed;
    assert_int_equal (fm_store_prune (st, T0 + 10 * SEC, &removed, &err), 0);
    assert_int_equal (fm_store_actions (st, 0, 0, NULL, 0, &v, &n, &err), 0);
    assert_int_equal (n, 3);
    free (v);
    fm_store_close (st);
}

static void test_migrations (void **state)
{
    fixture_t *f = *state;
    fm_error_t err;
    fm_store_t *st;
    fm_store_put_result_t res;
    fm_store_counts_t c;
    fm_job_t j;
    fm_agent_t *agents;
    size_t n;
    sqlite3 *db;
    rep_t r;

    /* A store left at schema 1 by an older fabricd, with data in it. */
    assert_non_null (
        st = fm_store_sqlite_open_version (f->path, FM_STORE_SYNC_NORMAL, 1, &err));
    assert_int_equal (fm_store_schema_version (st), 1);
    fm_store_close (st);
    assert_int_equal (user_version (f->path), 1);
    assert_int_equal (sqlite3_open (f->path, &db), SQLITE_OK);
    assert_int_equal (
        sqlite3_exec (db,
                      "INSERT INTO nodes (id, name) VALUES (1, 'm1'), (2, 'm2');"
                      "INSERT INTO jobs VALUES (3, 0, 2, 5000000000,"
                      " 1800000000000000000, zeroblob (32));"
                      "INSERT INTO agents (job_id, node_id, probe_addr, probe_port,"
                      " nics, registered_ns) VALUES (3, 1, '127.0.0.1', 9000, '[]',"
                      " 1800000000000000000);"
                      "INSERT INTO windows (job_id, node_id, seq, start_ns, end_ns,"
                      " nlinks, health) VALUES"
                      " (3, 1, 0, 1799999995000000000, 1800000000000000000, 2, '[]'),"
                      " (3, 1, 1, 1800000000000000000, 1800000005000000000, 2, '[]');",
                      NULL,
                      NULL,
                      NULL),
        SQLITE_OK);
    sqlite3_close (db);

    assert_non_null (st =
                         fm_store_open ("sqlite", f->path, FM_STORE_SYNC_NORMAL, &err));
    assert_int_equal (fm_store_schema_version (st), 5);
    assert_int_equal (fm_store_counts (st, &c, &err), 0);
    assert_int_equal (c.windows, 2);
    /* what schema 1 did not know reads as the defaults */
    assert_int_equal (fm_store_job_get (st, 3, &j, &err), 0);
    assert_int_equal (j.mode, FM_JOB_OBSERVE);
    assert_string_equal (j.nodes, "");
    assert_int_equal (fm_store_agents (st, 3, &agents, &n, &err), 0);
    assert_int_equal (n, 1);
    assert_false (agents[0].final);
    free (agents);
    /* The resend after an upgrade is still a duplicate. */
    mkrep (&r, 3, "m1", "m2", 0, 2, T0, 0);
    assert_int_equal (fm_store_put_report (st, &r.rep, &res, &err), 0);
    assert_int_equal (res.duplicates, 2);
    fm_store_close (st);
    assert_int_equal (user_version (f->path), 5);

    /* A newer schema is not touched. */
    assert_int_equal (sqlite3_open (f->path, &db), SQLITE_OK);
    assert_int_equal (sqlite3_exec (db, "PRAGMA user_version = 99", NULL, NULL, NULL),
                      SQLITE_OK);
    sqlite3_close (db);
    assert_null (fm_store_open ("sqlite", f->path, FM_STORE_SYNC_NORMAL, &err));
    assert_int_equal (errno, EPROTO);
    assert_non_null (strstr (err.text, "newer"));
    assert_int_equal (user_version (f->path), 99);

    assert_null (fm_store_open ("bogus", f->path, FM_STORE_SYNC_NORMAL, &err));
    assert_int_equal (errno, EINVAL);
    assert_null (
        fm_store_open ("sqlite", "/nonexistent/dir/db", FM_STORE_SYNC_NORMAL, &err));
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_register, setup, teardown),
        cmocka_unit_test_setup_teardown (test_reports, setup, teardown),
        cmocka_unit_test_setup_teardown (test_migrations, setup, teardown),
        cmocka_unit_test_setup_teardown (test_actions, setup, teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
