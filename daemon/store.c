/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_private.h"

fm_store_t *fm_store_open (const char *backend,
                           const char *path,
                           fm_store_sync_t sync,
                           fm_error_t *err)
{
    if (!backend || !path) {
        errno = EINVAL;
        fm_errprintf (err, "store: no backend or path");
        return NULL;
    }
    if (strcmp (backend, "sqlite") == 0) {
        return fm_store_sqlite_open (path, sync, err);
    }
    errno = EINVAL;
    fm_errprintf (err, "store: unknown backend '%s'", backend);
    return NULL;
}

void fm_store_close (fm_store_t *st)
{
    if (st) {
        int saved = errno;
        st->ops->close (st);
        errno = saved;
    }
}

int fm_store_schema_version (fm_store_t *st)
{
    return st->ops->schema_version (st);
}

int fm_store_register (fm_store_t *st,
                       fm_job_t *job,
                       const fm_agent_t *agent,
                       const char *nics_json,
                       int64_t *agent_id,
                       bool *created,
                       fm_error_t *err)
{
    return st->ops->reg (st, job, agent, nics_json, agent_id, created, err);
}

int fm_store_job_get (fm_store_t *st, int64_t job_id, fm_job_t *job, fm_error_t *err)
{
    return st->ops->job_get (st, job_id, job, err);
}

int fm_store_agents (
    fm_store_t *st, int64_t job_id, fm_agent_t **agents, size_t *n, fm_error_t *err)
{
    return st->ops->agents (st, job_id, agents, n, err);
}

int fm_store_agent_lookup (fm_store_t *st,
                           int64_t job_id,
                           const char *node,
                           fm_error_t *err)
{
    return st->ops->agent_lookup (st, job_id, node, err);
}

int fm_store_put_report (fm_store_t *st,
                         const fm_report_t *rep,
                         fm_store_put_result_t *res,
                         fm_error_t *err)
{
    return st->ops->put_report (st, rep, res, err);
}

int fm_store_links (fm_store_t *st,
                    int64_t since_ns,
                    int64_t job_id,
                    size_t limit,
                    fm_link_stat_t **links,
                    size_t *n,
                    fm_error_t *err)
{
    return st->ops->links (st, since_ns, job_id, limit, links, n, err);
}

int fm_store_nodes (fm_store_t *st,
                    int64_t since_ns,
                    fm_node_stat_t **nodes,
                    size_t *n,
                    fm_error_t *err)
{
    return st->ops->nodes (st, since_ns, nodes, n, err);
}

void fm_store_nodes_free (fm_node_stat_t *nodes, size_t n)
{
    if (nodes) {
        for (size_t i = 0; i < n; i++) {
            free (nodes[i].health_json);
        }
        free (nodes);
    }
}

int fm_store_counts (fm_store_t *st, fm_store_counts_t *c, fm_error_t *err)
{
    return st->ops->counts (st, c, err);
}

int fm_store_job_counts (fm_store_t *st,
                         int64_t job_id,
                         int64_t since_ns,
                         int64_t *windows,
                         int64_t *records,
                         fm_error_t *err)
{
    return st->ops->job_counts (st, job_id, since_ns, windows, records, err);
}

int fm_store_prune (fm_store_t *st,
                    int64_t before_ns,
                    int64_t *removed,
                    fm_error_t *err)
{
    return st->ops->prune (st, before_ns, removed, err);
}

int fm_store_checkpoint (fm_store_t *st, fm_error_t *err)
{
    return st->ops->checkpoint (st, err);
}

int fm_store_action_add (fm_store_t *st, fm_action_rec_t *rec, fm_error_t *err)
{
    return st->ops->action_add (st, rec, err);
}

int fm_store_actions (fm_store_t *st,
                      int64_t since_ns,
                      int64_t job_id,
                      const char *node,
                      size_t limit,
                      fm_action_rec_t **recs,
                      size_t *n,
                      fm_error_t *err)
{
    return st->ops->actions (st, since_ns, job_id, node, limit, recs, n, err);
}

int fm_store_clock_series (fm_store_t *st,
                           int64_t job_id,
                           size_t buckets,
                           size_t max_points,
                           fm_clock_point_t **pts,
                           size_t *n,
                           fm_error_t *err)
{
    if (!st->ops->clock_series) {
        errno = ENOTSUP;
        return fm_errprintf (err, "clock series: not supported by this store");
    }
    if (buckets == 0 || max_points == 0) {
        errno = EINVAL;
        return fm_errprintf (err, "clock series: no buckets");
    }
    return st->ops->clock_series (st, job_id, buckets, max_points, pts, n, err);
}

const char *fm_store_backend (const fm_store_t *st)
{
    return st->ops->name;
}
