/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "grow.h"
#include "store_sqlite_private.h"

static void column_copy (sqlite3_stmt *q, int col, char *buf, size_t len)
{
    const unsigned char *t = sqlite3_column_text (q, col);

    snprintf (buf, len, "%s", t ? (const char *)t : "");
}

/* One row into a zeroed element; -1 (out of memory) stops the query. */
typedef int (*row_fn) (sqlite3_stmt *q, void *elem);
/* Frees an array of count elements and what they own. */
typedef void (*rows_free_fn) (void *v, size_t count);

typedef struct {
    size_t size;  /* of an element */
    size_t first; /* elements allocated at the first row */
    row_fn row;
    rows_free_fn release; /* NULL: free() */
    const char *what;     /* for an error: "select links" */
} rows_t;

static void rows_release (const rows_t *r, void *v, size_t count)
{
    if (r->release) {
        r->release (v, count);
    } else {
        free (v);
    }
}

/* Step the bound statement q to its end, an element per row, into *out (n of
 * them, malloc'd) and reset q. -1 with err, nothing allocated, on failure.
 */
static int rows_read (sqlite_store_t *s,
                      sqlite3_stmt *q,
                      const rows_t *r,
                      void *out,
                      size_t *n,
                      fm_error_t *err)
{
    void *v = NULL;
    size_t count = 0, alloc = 0;
    int rc, e;

    while ((rc = sqlite3_step (q)) == SQLITE_ROW) {
        char *elem;
        if (fm_grow (&v, &alloc, count + 1, r->size, r->first) < 0) {
            goto nomem;
        }
        elem = (char *)v + count * r->size;
        memset (elem, 0, r->size);
        if (r->row (q, elem) < 0) {
            goto nomem;
        }
        count++;
    }
    if (rc != SQLITE_DONE) {
        rows_release (r, v, count);
        fm_store_sqlite_dberr (s, err, r->what);
        e = errno;
        sqlite3_reset (q);
        errno = e;
        return -1;
    }
    sqlite3_reset (q);
    memcpy (out, &v, sizeof (v));
    *n = count;
    return 0;
nomem:
    rows_release (r, v, count);
    sqlite3_reset (q);
    errno = ENOMEM;
    return fm_errprintf (err, "out of memory");
}

static int agent_row (sqlite3_stmt *q, void *elem)
{
    fm_agent_t *a = elem;

    a->agent_id = sqlite3_column_int64 (q, 0);
    snprintf (
        a->node, sizeof (a->node), "%s", (const char *)sqlite3_column_text (q, 1));
    snprintf (a->probe_addr,
              sizeof (a->probe_addr),
              "%s",
              (const char *)sqlite3_column_text (q, 2));
    a->probe_port = sqlite3_column_int64 (q, 3);
    a->registered_ns = sqlite3_column_int64 (q, 4);
    a->last_seq =
        sqlite3_column_type (q, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64 (q, 5);
    a->windows = sqlite3_column_int64 (q, 6);
    a->final = sqlite3_column_int (q, 7) != 0;
    return 0;
}

int fm_store_sqlite_query_agents (
    fm_store_t *st, int64_t job_id, fm_agent_t **out, size_t *n, fm_error_t *err)
{
    static const rows_t r = {sizeof (fm_agent_t), 16, agent_row, NULL, "select agents"};
    sqlite_store_t *s = S (st);
    sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_AGENTS);

    sqlite3_bind_int64 (q, 1, job_id);
    return rows_read (s, q, &r, out, n, err);
}

static int link_row (sqlite3_stmt *q, void *elem)
{
    fm_link_stat_t *l = elem;

    snprintf (l->src, sizeof (l->src), "%s", (const char *)sqlite3_column_text (q, 0));
    snprintf (l->dst, sizeof (l->dst), "%s", (const char *)sqlite3_column_text (q, 1));
    snprintf (l->reporter,
              sizeof (l->reporter),
              "%s",
              (const char *)sqlite3_column_text (q, 2));
    l->windows = sqlite3_column_int64 (q, 3);
    l->last_end_ns = sqlite3_column_int64 (q, 4);
    l->sent = sqlite3_column_int64 (q, 5);
    l->received = sqlite3_column_int64 (q, 6);
    l->lost = sqlite3_column_int64 (q, 7);
    l->reordered = sqlite3_column_int64 (q, 8);
    if (sqlite3_column_type (q, 9) != SQLITE_NULL) {
        l->has_rtt = true;
        l->rtt_p50_ns = sqlite3_column_int64 (q, 9);
        l->rtt_p99_ns = sqlite3_column_int64 (q, 10);
    }
    if (sqlite3_column_type (q, 11) != SQLITE_NULL) {
        l->has_owd = true;
        l->owd_p50_ns = sqlite3_column_int64 (q, 11);
        l->owd_p99_ns = sqlite3_column_int64 (q, 12);
    }
    return 0;
}

int fm_store_sqlite_query_links (fm_store_t *st,
                                 int64_t since_ns,
                                 int64_t job_id,
                                 size_t limit,
                                 fm_link_stat_t **out,
                                 size_t *n,
                                 fm_error_t *err)
{
    static const rows_t r = {
        sizeof (fm_link_stat_t), 64, link_row, NULL, "select links"};
    sqlite_store_t *s = S (st);
    sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_LINKS);

    sqlite3_bind_int64 (q, 1, since_ns);
    sqlite3_bind_int64 (q, 2, job_id);
    sqlite3_bind_int64 (q, 3, limit ? (int64_t)limit : -1);
    return rows_read (s, q, &r, out, n, err);
}

static int node_row (sqlite3_stmt *q, void *elem)
{
    fm_node_stat_t *x = elem;

    snprintf (
        x->node, sizeof (x->node), "%s", (const char *)sqlite3_column_text (q, 0));
    x->last_seen_ns = sqlite3_column_int64 (q, 1);
    x->last_job_id = sqlite3_column_int64 (q, 2);
    if (sqlite3_column_type (q, 3) != SQLITE_NULL) {
        x->has_clock = true;
        x->clock_offset_ns = sqlite3_column_int64 (q, 3);
        x->clock_error_ns = sqlite3_column_int64 (q, 4);
    }
    if (!(x->health_json = strdup ((const char *)sqlite3_column_text (q, 5)))) {
        return -1;
    }
    x->windows = sqlite3_column_int64 (q, 6);
    x->links = sqlite3_column_int64 (q, 7);
    x->sent = sqlite3_column_int64 (q, 8);
    x->lost = sqlite3_column_int64 (q, 9);
    if (sqlite3_column_type (q, 10) != SQLITE_NULL) {
        x->has_rtt = true;
        x->rtt_p99_max_ns = sqlite3_column_int64 (q, 10);
    }
    if (sqlite3_column_type (q, 11) != SQLITE_NULL) {
        x->has_drift = true;
        x->clock_drift_ppb = sqlite3_column_double (q, 11);
    }
    return 0;
}

static void nodes_release (void *v, size_t count)
{
    fm_store_nodes_free (v, count);
}

int fm_store_sqlite_query_nodes (
    fm_store_t *st, int64_t since_ns, fm_node_stat_t **out, size_t *n, fm_error_t *err)
{
    static const rows_t r = {
        sizeof (fm_node_stat_t), 64, node_row, nodes_release, "select nodes"};
    sqlite_store_t *s = S (st);
    sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_NODES);

    sqlite3_bind_int64 (q, 1, since_ns);
    return rows_read (s, q, &r, out, n, err);
}

int fm_store_sqlite_query_counts (fm_store_t *st, fm_store_counts_t *c, fm_error_t *err)
{
    sqlite_store_t *s = S (st);
    sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_COUNTS);

    if (sqlite3_step (q) != SQLITE_ROW) {
        return fm_store_sqlite_dberr (s, err, "counts");
    }
    c->jobs = sqlite3_column_int64 (q, 0);
    c->nodes = sqlite3_column_int64 (q, 1);
    c->windows = sqlite3_column_int64 (q, 2);
    c->records = sqlite3_column_int64 (q, 3);
    sqlite3_reset (q);
    return 0;
}

int fm_store_sqlite_query_job_counts (fm_store_t *st,
                                      int64_t job_id,
                                      int64_t since_ns,
                                      int64_t *windows,
                                      int64_t *records,
                                      fm_error_t *err)
{
    sqlite_store_t *s = S (st);
    sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_JOB_COUNTS);

    sqlite3_bind_int64 (q, 1, job_id);
    sqlite3_bind_int64 (q, 2, since_ns);
    if (sqlite3_step (q) != SQLITE_ROW) {
        return fm_store_sqlite_dberr (s, err, "job counts");
    }
    *windows = sqlite3_column_int64 (q, 0);
    *records = sqlite3_column_int64 (q, 1);
    sqlite3_reset (q);
    return 0;
}

static int action_row (sqlite3_stmt *q, void *elem)
{
    fm_action_rec_t *a = elem;

    a->id = sqlite3_column_int64 (q, 0);
    a->at_ns = sqlite3_column_int64 (q, 1);
    column_copy (q, 2, a->kind, sizeof (a->kind));
    column_copy (q, 3, a->node, sizeof (a->node));
    a->job_id = sqlite3_column_int64 (q, 4);
    column_copy (q, 5, a->element, sizeof (a->element));
    column_copy (q, 6, a->reason, sizeof (a->reason));
    column_copy (q, 7, a->explain, sizeof (a->explain));
    column_copy (q, 8, a->result, sizeof (a->result));
    a->dry_run = sqlite3_column_int (q, 9) != 0;
    return 0;
}

int fm_store_sqlite_query_actions (fm_store_t *st,
                                   int64_t since_ns,
                                   int64_t job_id,
                                   const char *node,
                                   size_t limit,
                                   fm_action_rec_t **out,
                                   size_t *n,
                                   fm_error_t *err)
{
    static const rows_t r = {
        sizeof (fm_action_rec_t), 16, action_row, NULL, "select actions"};
    sqlite_store_t *s = S (st);
    sqlite3_stmt *q = fm_store_sqlite_stmt (s, S_ACTIONS);

    sqlite3_bind_int64 (q, 1, since_ns);
    sqlite3_bind_int64 (q, 2, job_id);
    if (node) {
        sqlite3_bind_text (q, 3, node, -1, SQLITE_STATIC);
    } else {
        sqlite3_bind_null (q, 3);
    }
    sqlite3_bind_int64 (q, 4, limit ? (int64_t)limit : -1);
    return rows_read (s, q, &r, out, n, err);
}

/* Prepared per call: a page is rare next to reports, and this keeps the
 * backend's statement table to the hot paths.
 */
static const char range_sql[] = "SELECT min(end_ns), max(end_ns) FROM windows"
                                " WHERE job_id = ?1 AND clock_error_ns IS NOT NULL";
static const char series_sql[] = "SELECT n.name, max(w.end_ns), max(w.clock_error_ns)"
                                 " FROM windows w JOIN nodes n ON n.id = w.node_id"
                                 " WHERE w.job_id = ?1 AND w.clock_error_ns IS NOT NULL"
                                 " GROUP BY w.node_id, (w.end_ns - ?2) / ?3"
                                 " ORDER BY n.name, 2 LIMIT ?4";

static int series_fail (sqlite3 *db, sqlite3_stmt *q, fm_error_t *err)
{
    int code = sqlite3_extended_errcode (db) & 0xff;

    fm_errprintf (err, "clock series: %s", sqlite3_errmsg (db));
    sqlite3_finalize (q);
    errno = code == SQLITE_BUSY || code == SQLITE_LOCKED ? EBUSY : EIO;
    return -1;
}

int fm_store_sqlite_query_clock_series (fm_store_t *st,
                                        int64_t job_id,
                                        size_t buckets,
                                        size_t max_points,
                                        fm_clock_point_t **pts,
                                        size_t *n,
                                        fm_error_t *err)
{
    sqlite3 *db = S (st)->db;
    sqlite3_stmt *q = NULL;
    fm_clock_point_t *v = NULL;
    size_t count = 0, alloc = 0;
    int64_t lo, hi, width;
    int rc;

    if (sqlite3_prepare_v2 (db, range_sql, -1, &q, NULL) != SQLITE_OK) {
        return series_fail (db, q, err);
    }
    sqlite3_bind_int64 (q, 1, job_id);
    if (sqlite3_step (q) != SQLITE_ROW) {
        return series_fail (db, q, err);
    }
    if (sqlite3_column_type (q, 0) == SQLITE_NULL) {
        sqlite3_finalize (q);
        *pts = NULL;
        *n = 0;
        return 0;
    }
    lo = sqlite3_column_int64 (q, 0);
    hi = sqlite3_column_int64 (q, 1);
    sqlite3_finalize (q);
    /* hi - lo + 1 spread over the buckets, rounded up: bucket indexes stay
     * below `buckets`.
     */
    width = (hi - lo) / (int64_t)buckets + 1;
    if (sqlite3_prepare_v2 (db, series_sql, -1, &q, NULL) != SQLITE_OK) {
        return series_fail (db, q, err);
    }
    sqlite3_bind_int64 (q, 1, job_id);
    sqlite3_bind_int64 (q, 2, lo);
    sqlite3_bind_int64 (q, 3, width);
    sqlite3_bind_int64 (q, 4, (int64_t)max_points);
    while ((rc = sqlite3_step (q)) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text (q, 0);
        if (fm_grow (&v, &alloc, count + 1, sizeof (*v), 64) < 0) {
            free (v);
            sqlite3_finalize (q);
            return fm_errprintf (err, "out of memory");
        }
        snprintf (v[count].node,
                  sizeof (v[count].node),
                  "%s",
                  name ? (const char *)name : "");
        v[count].end_ns = sqlite3_column_int64 (q, 1);
        v[count].error_ns = sqlite3_column_int64 (q, 2);
        count++;
    }
    if (rc != SQLITE_DONE) {
        free (v);
        return series_fail (db, q, err);
    }
    sqlite3_finalize (q);
    *pts = v;
    *n = count;
    return 0;
}
