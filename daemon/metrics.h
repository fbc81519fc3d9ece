/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_METRICS_H
#define FM_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "fm/api.h"

#include "error.h"
#include "store.h"

/* Counters and the Prometheus exposition of GET /metrics (doc/api.md). Used by
 * one thread, except fm_metrics_action() and fm_metrics_alarms().
 */
typedef struct fm_metrics fm_metrics_t;

/* route_names: the route labels, indexed by the route numbers passed to
 * fm_metrics_request(); the array must outlive the metrics.
 */
fm_metrics_t *fm_metrics_create (const char *const *route_names, size_t nroutes);
void fm_metrics_destroy (fm_metrics_t *m);

void fm_metrics_request (fm_metrics_t *m, size_t route, int status, double seconds);
void fm_metrics_ingest (fm_metrics_t *m,
                        size_t windows,
                        size_t records,
                        size_t duplicates);
/* A refused POST /v1/reports, by its error code (doc/api.md); codes outside
 * the documented set count as "other".
 */
void fm_metrics_rejected (fm_metrics_t *m, const char *code);

/* Add a report's probe drops of node (FM_API_PROBE_DROP_REASONS order) to
 * fabricd_probe_drops_total. Past FM_METRICS_DROP_NODES_MAX nodes, or
 * without memory, the counts go to node "_other".
 */
#define FM_METRICS_DROP_NODES_MAX 16384
void fm_metrics_probe_drops (fm_metrics_t *m,
                             const char *node,
                             const int64_t drops[FM_API_PROBE_DROP_NREASONS]);

/* The policy took or decided an action (fm_action_rec_t kind and result:
 * "drain", "done"; a result "error: ..." counts as "error"; unknown values as
 * "other"). Unlike the rest, these two may be called from any thread while
 * the HTTP thread renders. NULL-safe.
 */
void fm_metrics_action (fm_metrics_t *m, const char *kind, const char *result);

/* The number of alarms now raised (fabricd_alarms_active). */
void fm_metrics_alarms (fm_metrics_t *m, int64_t active);

typedef struct {
    uint64_t requests, windows, records, duplicates, rejected;
} fm_ingest_counts_t;

void fm_metrics_ingest_counts (const fm_metrics_t *m, fm_ingest_counts_t *c);

/* Render the exposition, with node and link gauges from windows ending at or
 * after since_ns: a series per node and gauge, and per-link series for the
 * max_links worst links only (by loss, then p99 RTT), so that the exposition
 * grows with the nodes and not with the links. Returns a malloc'd text, *len
 * its length; NULL/errno + err.
 */
char *fm_metrics_render (fm_metrics_t *m,
                         fm_store_t *st,
                         int64_t since_ns,
                         int64_t start_real_ns,
                         size_t max_links,
                         size_t *len,
                         fm_error_t *err);

#endif /* FM_METRICS_H */
