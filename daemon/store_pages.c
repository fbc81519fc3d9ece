/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_pages.h"
#include "store_private.h"

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

static int fail (sqlite3 *db, sqlite3_stmt *q, fm_error_t *err)
{
    int code = sqlite3_extended_errcode (db) & 0xff;

    fm_errprintf (err, "clock series: %s", sqlite3_errmsg (db));
    sqlite3_finalize (q);
    errno = code == SQLITE_BUSY || code == SQLITE_LOCKED ? EBUSY : EIO;
    return -1;
}

int fm_store_pages_clock_series (fm_store_t *st,
                                 int64_t job_id,
                                 size_t buckets,
                                 size_t max_points,
                                 fm_clock_point_t **pts,
                                 size_t *n,
                                 fm_error_t *err)
{
    sqlite3 *db = fm_store_sqlite_db (st);
    sqlite3_stmt *q = NULL;
    fm_clock_point_t *v = NULL;
    size_t count = 0, alloc = 0;
    int64_t lo, hi, width;
    int rc;

    if (!db) {
        errno = ENOTSUP;
        return fm_errprintf (err, "clock series: not supported by this store");
    }
    if (buckets == 0 || max_points == 0) {
        errno = EINVAL;
        return fm_errprintf (err, "clock series: no buckets");
    }
    if (sqlite3_prepare_v2 (db, range_sql, -1, &q, NULL) != SQLITE_OK) {
        return fail (db, q, err);
    }
    sqlite3_bind_int64 (q, 1, job_id);
    if (sqlite3_step (q) != SQLITE_ROW) {
        return fail (db, q, err);
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
        return fail (db, q, err);
    }
    sqlite3_bind_int64 (q, 1, job_id);
    sqlite3_bind_int64 (q, 2, lo);
    sqlite3_bind_int64 (q, 3, width);
    sqlite3_bind_int64 (q, 4, (int64_t)max_points);
    while ((rc = sqlite3_step (q)) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text (q, 0);
        if (count == alloc) {
            size_t nalloc = alloc ? alloc * 2 : 64;
            fm_clock_point_t *nv = realloc (v, nalloc * sizeof (*v));
            if (!nv) {
                free (v);
                sqlite3_finalize (q);
                errno = ENOMEM;
                return fm_errprintf (err, "out of memory");
            }
            v = nv;
            alloc = nalloc;
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
        return fail (db, q, err);
    }
    sqlite3_finalize (q);
    *pts = v;
    *n = count;
    return 0;
}
