/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_STORE_SQLITE_PRIVATE_H
#define FM_STORE_SQLITE_PRIVATE_H

#include <stdint.h>

#include <sqlite3.h>

#include "store_private.h"

/* The SQLite backend's state, shared by store_sqlite.c (connection, schema,
 * writes) and store_sqlite_query.c (the reads behind the API and the pages).
 */
enum {
    S_BEGIN,
    S_COMMIT,
    S_ROLLBACK,
    S_NODE_INS,
    S_NODE_SEL,
    S_JOB_SEL,
    S_JOB_INS,
    S_JOB_EXPECTED,
    S_AGENT_SEL,
    S_AGENT_INS,
    S_AGENT_UPD,
    S_AGENTS,
    S_AGENT_FINAL,
    S_WIN_INS,
    S_LINK_INS,
    S_LINKS,
    S_NODES,
    S_COUNTS,
    S_JOB_COUNTS,
    S_PRUNE_LINKS,
    S_PRUNE_WINDOWS,
    S_PRUNE_AGENTS,
    S_PRUNE_JOBS,
    S_ACTION_INS,
    S_ACTIONS,
    S_COUNT
};

/* Node name -> id, so that a batch does not look every peer name up. Flushed
 * whenever a transaction rolls back (its ids may not exist any more).
 */
#define NODE_BUCKETS 1024
struct node_entry {
    struct node_entry *next;
    int64_t id;
    char name[];
};

typedef struct {
    struct fm_store base;
    sqlite3 *db;
    sqlite3_stmt *stmt[S_COUNT];
    struct node_entry *nodes[NODE_BUCKETS];
    int version;
} sqlite_store_t;

static inline sqlite_store_t *S (fm_store_t *st)
{
    return (sqlite_store_t *)st;
}

/* Statement i, reset and unbound. */
sqlite3_stmt *fm_store_sqlite_stmt (sqlite_store_t *s, int i);
/* errno from SQLite's error (EBUSY, ENOSPC, EEXIST, ENOMEM, EIO) and the
 * message in err; -1.
 */
int fm_store_sqlite_dberr (sqlite_store_t *s, fm_error_t *err, const char *what);

/* store_sqlite_query.c: the backend's read operations (struct fm_store_ops) */
int fm_store_sqlite_query_agents (
    fm_store_t *st, int64_t job_id, fm_agent_t **out, size_t *n, fm_error_t *err);
int fm_store_sqlite_query_links (fm_store_t *st,
                                 int64_t since_ns,
                                 int64_t job_id,
                                 size_t limit,
                                 fm_link_stat_t **out,
                                 size_t *n,
                                 fm_error_t *err);
int fm_store_sqlite_query_nodes (
    fm_store_t *st, int64_t since_ns, fm_node_stat_t **out, size_t *n, fm_error_t *err);
int fm_store_sqlite_query_counts (fm_store_t *st,
                                  fm_store_counts_t *c,
                                  fm_error_t *err);
int fm_store_sqlite_query_job_counts (fm_store_t *st,
                                      int64_t job_id,
                                      int64_t since_ns,
                                      int64_t *windows,
                                      int64_t *records,
                                      fm_error_t *err);
int fm_store_sqlite_query_actions (fm_store_t *st,
                                   int64_t since_ns,
                                   int64_t job_id,
                                   const char *node,
                                   size_t limit,
                                   fm_action_rec_t **out,
                                   size_t *n,
                                   fm_error_t *err);
int fm_store_sqlite_query_clock_series (fm_store_t *st,
                                        int64_t job_id,
                                        size_t buckets,
                                        size_t max_points,
                                        fm_clock_point_t **pts,
                                        size_t *n,
                                        fm_error_t *err);

#endif /* FM_STORE_SQLITE_PRIVATE_H */
