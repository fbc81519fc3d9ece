/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_STORE_PRIVATE_H
#define FM_STORE_PRIVATE_H

#include "store.h"

/* A backend embeds struct fm_store first and fills ops; store.c dispatches. */
struct fm_store_ops {
    const char *name;
    void (*close) (fm_store_t *st);
    int (*schema_version) (fm_store_t *st);
    int (*reg) (fm_store_t *st,
                fm_job_t *job,
                const fm_agent_t *agent,
                const char *nics_json,
                int64_t *agent_id,
                bool *created,
                fm_error_t *err);
    int (*job_get) (fm_store_t *st, int64_t job_id, fm_job_t *job, fm_error_t *err);
    int (*agents) (fm_store_t *st,
                   int64_t job_id,
                   fm_agent_t **agents,
                   size_t *n,
                   fm_error_t *err);
    int (*agent_lookup) (fm_store_t *st,
                         int64_t job_id,
                         const char *node,
                         fm_error_t *err);
    int (*put_report) (fm_store_t *st,
                       const fm_report_t *rep,
                       fm_store_put_result_t *res,
                       fm_error_t *err);
    int (*links) (fm_store_t *st,
                  int64_t since_ns,
                  int64_t job_id,
                  size_t limit,
                  fm_link_stat_t **links,
                  size_t *n,
                  fm_error_t *err);
    int (*nodes) (fm_store_t *st,
                  int64_t since_ns,
                  fm_node_stat_t **nodes,
                  size_t *n,
                  fm_error_t *err);
    int (*counts) (fm_store_t *st, fm_store_counts_t *c, fm_error_t *err);
    int (*job_counts) (fm_store_t *st,
                       int64_t job_id,
                       int64_t since_ns,
                       int64_t *windows,
                       int64_t *records,
                       fm_error_t *err);
    int (*prune) (fm_store_t *st, int64_t before_ns, int64_t *removed, fm_error_t *err);
    int (*checkpoint) (fm_store_t *st, fm_error_t *err);
    int (*action_add) (fm_store_t *st, fm_action_rec_t *rec, fm_error_t *err);
    int (*actions) (fm_store_t *st,
                    int64_t since_ns,
                    int64_t job_id,
                    const char *node,
                    size_t limit,
                    fm_action_rec_t **recs,
                    size_t *n,
                    fm_error_t *err);
    /* NULL: ENOTSUP. buckets and max_points are > 0. */
    int (*clock_series) (fm_store_t *st,
                         int64_t job_id,
                         size_t buckets,
                         size_t max_points,
                         fm_clock_point_t **pts,
                         size_t *n,
                         fm_error_t *err);
};

struct fm_store {
    const struct fm_store_ops *ops;
};

fm_store_t *
fm_store_sqlite_open (const char *path, fm_store_sync_t sync, fm_error_t *err);

/* For tests: open and migrate only up to schema version `version`. A handle
 * at an older version than the latest can only be closed.
 */
fm_store_t *fm_store_sqlite_open_version (const char *path,
                                          fm_store_sync_t sync,
                                          int version,
                                          fm_error_t *err);

#endif /* FM_STORE_PRIVATE_H */
