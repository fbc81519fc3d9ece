/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* The statuses fabricd answers; any other one is counted as code="other", so
 * that no request goes uncounted (the last slot).
 */
static const int codes[] = {
    200, 201, 400, 401, 403, 404, 405, 409, 411, 413, 415, 500, 503};
#define NCODES (sizeof (codes) / sizeof (codes[0]))

static const double buckets[] = {0.0001,
                                 0.00025,
                                 0.0005,
                                 0.001,
                                 0.0025,
                                 0.005,
                                 0.01,
                                 0.025,
                                 0.05,
                                 0.1,
                                 0.25,
                                 0.5,
                                 1,
                                 2.5};
#define NBUCKETS (sizeof (buckets) / sizeof (buckets[0]))

static const char *const reject_codes[] = {"invalid_json",
                                           "invalid_field",
                                           "auth_required",
                                           "auth_invalid",
                                           "auth_replayed",
                                           "auth_mismatch",
                                           "forbidden",
                                           "not_found",
                                           "method_not_allowed",
                                           "conflict",
                                           "length_required",
                                           "too_large",
                                           "unsupported_media_type",
                                           "internal",
                                           "unavailable",
                                           "other"};
#define NREJECT (sizeof (reject_codes) / sizeof (reject_codes[0]))

/* Label values of fabricd_actions_total; the last of each is the catch-all. */
static const char *const action_kinds[] = {
    "drain", "resume", "weight", "signal", "requeue", "alarm", "other"};
#define NKINDS (sizeof (action_kinds) / sizeof (action_kinds[0]))
static const char *const action_results[] = {
    "done", "already", "foreign", "dry_run", "error", "other"};
#define NRESULTS (sizeof (action_results) / sizeof (action_results[0]))

struct route_stats {
    uint64_t by_code[NCODES + 1];
    uint64_t hist[NBUCKETS + 1];
    uint64_t count;
    double sum;
};

static const char *const drop_reasons[] = {FM_API_PROBE_DROP_REASONS};

struct drop_node {
    char node[FM_API_NODE_MAX + 1];
    uint64_t n[FM_API_PROBE_DROP_NREASONS];
};

struct fm_metrics {
    const char *const *names;
    size_t nroutes;
    struct route_stats *routes;
    uint64_t rejected[NREJECT];
    fm_ingest_counts_t ingest;
    struct drop_node *drops; /* by node; the first is "_other" */
    size_t ndrops, capdrops;
    /* Written by the monitor's thread, read by the HTTP thread. */
    _Atomic uint64_t actions[NKINDS][NRESULTS];
    _Atomic int64_t alarms;
};

fm_metrics_t *fm_metrics_create (const char *const *route_names, size_t nroutes)
{
    fm_metrics_t *m;

    if (!route_names || nroutes == 0) {
        errno = EINVAL;
        return NULL;
    }
    if (!(m = calloc (1, sizeof (*m)))
        || !(m->routes = calloc (nroutes, sizeof (m->routes[0])))) {
        free (m);
        return NULL;
    }
    m->names = route_names;
    m->nroutes = nroutes;
    return m;
}

void fm_metrics_destroy (fm_metrics_t *m)
{
    if (m) {
        free (m->routes);
        free (m->drops);
        free (m);
    }
}

void fm_metrics_request (fm_metrics_t *m, size_t route, int status, double seconds)
{
    struct route_stats *r;
    size_t i;

    if (route >= m->nroutes) {
        route = m->nroutes - 1;
    }
    r = &m->routes[route];
    for (i = 0; i < NCODES && codes[i] != status; i++) {
        ;
    }
    r->by_code[i]++;
    for (i = 0; i < NBUCKETS && seconds > buckets[i]; i++) {
        ;
    }
    r->hist[i]++;
    r->count++;
    r->sum += seconds;
}

void fm_metrics_ingest (fm_metrics_t *m,
                        size_t windows,
                        size_t records,
                        size_t duplicates)
{
    m->ingest.requests++;
    m->ingest.windows += windows;
    m->ingest.records += records;
    m->ingest.duplicates += duplicates;
}

/* The node's slot, added if need be; NULL: no room (not even "_other") */
static struct drop_node *drop_slot (fm_metrics_t *m, const char *node)
{
    if (m->ndrops == 0) {
        node = "_other"; /* the first slot, made before any node's */
    }
    for (size_t i = 0; i < m->ndrops; i++) {
        if (strcmp (m->drops[i].node, node) == 0) {
            return &m->drops[i];
        }
    }
    if (m->ndrops > FM_METRICS_DROP_NODES_MAX) {
        return &m->drops[0];
    }
    if (m->ndrops == m->capdrops) {
        size_t nc = m->capdrops ? m->capdrops * 2 : 16;
        struct drop_node *nv = realloc (m->drops, nc * sizeof (*nv));
        if (!nv) {
            return m->ndrops > 0 ? &m->drops[0] : NULL;
        }
        m->drops = nv;
        m->capdrops = nc;
    }
    memset (&m->drops[m->ndrops], 0, sizeof (m->drops[0]));
    snprintf (m->drops[m->ndrops].node, sizeof (m->drops[0].node), "%s", node);
    return &m->drops[m->ndrops++];
}

void fm_metrics_probe_drops (fm_metrics_t *m,
                             const char *node,
                             const int64_t drops[FM_API_PROBE_DROP_NREASONS])
{
    struct drop_node *d;

    if (!drop_slot (m, "_other") || !(d = drop_slot (m, node))) {
        return;
    }
    for (int i = 0; i < FM_API_PROBE_DROP_NREASONS; i++) {
        if (drops[i] > 0) {
            d->n[i] += (uint64_t)drops[i];
        }
    }
}

void fm_metrics_rejected (fm_metrics_t *m, const char *code)
{
    size_t i;

    for (i = 0; i < NREJECT - 1; i++) {
        if (strcmp (code, reject_codes[i]) == 0) {
            break;
        }
    }
    m->rejected[i]++;
    m->ingest.rejected++;
}

void fm_metrics_ingest_counts (const fm_metrics_t *m, fm_ingest_counts_t *c)
{
    *c = m->ingest;
}

/* Index of s in the first n - 1 names, else n - 1 (the catch-all). A result
 * "error: EAGAIN: ..." is an "error".
 */
static size_t label_index (const char *const *names, size_t n, const char *s)
{
    size_t i;

    if (!s) {
        return n - 1;
    }
    for (i = 0; i < n - 1; i++) {
        size_t len = strlen (names[i]);
        if (strncmp (s, names[i], len) == 0
            && (s[len] == '\0' || (strcmp (names[i], "error") == 0 && s[len] == ':'))) {
            break;
        }
    }
    return i;
}

void fm_metrics_action (fm_metrics_t *m, const char *kind, const char *result)
{
    if (m) {
        atomic_fetch_add_explicit (
            &m->actions[label_index (action_kinds, NKINDS, kind)]
                       [label_index (action_results, NRESULTS, result)],
            1,
            memory_order_relaxed);
    }
}

void fm_metrics_alarms (fm_metrics_t *m, int64_t active)
{
    if (m) {
        atomic_store_explicit (&m->alarms, active, memory_order_relaxed);
    }
}

/* Requests by route and status, and their latency. */
static void render_http (FILE *fp, const fm_metrics_t *m)
{
    fprintf (fp,
             "# HELP fabricd_http_requests_total HTTP requests answered.\n"
             "# TYPE fabricd_http_requests_total counter\n");
    for (size_t r = 0; r < m->nroutes; r++) {
        for (size_t c = 0; c <= NCODES; c++) {
            char code[16];
            if (!m->routes[r].by_code[c]) {
                continue;
            }
            if (c < NCODES) {
                snprintf (code, sizeof (code), "%d", codes[c]);
            } else {
                snprintf (code, sizeof (code), "other");
            }
            fprintf (fp,
                     "fabricd_http_requests_total{route=\"%s\",code=\"%s\"} %llu\n",
                     m->names[r],
                     code,
                     (unsigned long long)m->routes[r].by_code[c]);
        }
    }
    fprintf (fp,
             "# HELP fabricd_http_request_duration_seconds Time to answer a request.\n"
             "# TYPE fabricd_http_request_duration_seconds histogram\n");
    for (size_t r = 0; r < m->nroutes; r++) {
        uint64_t cum = 0;
        if (m->routes[r].count == 0) {
            continue;
        }
        for (size_t b = 0; b < NBUCKETS; b++) {
            cum += m->routes[r].hist[b];
            fprintf (fp,
                     "fabricd_http_request_duration_seconds_bucket{route=\"%s\","
                     "le=\"%g\"} %llu\n",
                     m->names[r],
                     buckets[b],
                     (unsigned long long)cum);
        }
        fprintf (fp,
                 "fabricd_http_request_duration_seconds_bucket{route=\"%s\","
                 "le=\"+Inf\"} %llu\n",
                 m->names[r],
                 (unsigned long long)m->routes[r].count);
        fprintf (fp,
                 "fabricd_http_request_duration_seconds_sum{route=\"%s\"} %.9f\n",
                 m->names[r],
                 m->routes[r].sum);
        fprintf (fp,
                 "fabricd_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
                 m->names[r],
                 (unsigned long long)m->routes[r].count);
    }
}

/* What ingest stored and refused, and the probes the agents dropped. */
static void render_ingest (FILE *fp, const fm_metrics_t *m)
{
    fprintf (fp,
             "# HELP fabricd_ingest_windows_total Report windows stored.\n"
             "# TYPE fabricd_ingest_windows_total counter\n"
             "fabricd_ingest_windows_total %llu\n"
             "# HELP fabricd_ingest_records_total Link-window records stored.\n"
             "# TYPE fabricd_ingest_records_total counter\n"
             "fabricd_ingest_records_total %llu\n"
             "# HELP fabricd_ingest_duplicates_total Windows acknowledged as"
             " duplicates.\n"
             "# TYPE fabricd_ingest_duplicates_total counter\n"
             "fabricd_ingest_duplicates_total %llu\n",
             (unsigned long long)m->ingest.windows,
             (unsigned long long)m->ingest.records,
             (unsigned long long)m->ingest.duplicates);
    fprintf (fp,
             "# HELP fabricd_ingest_rejected_total Report requests refused.\n"
             "# TYPE fabricd_ingest_rejected_total counter\n");
    for (size_t i = 0; i < NREJECT; i++) {
        if (m->rejected[i]) {
            fprintf (fp,
                     "fabricd_ingest_rejected_total{reason=\"%s\"} %llu\n",
                     reject_codes[i],
                     (unsigned long long)m->rejected[i]);
        }
    }
    fprintf (fp,
             "# HELP fabricd_probe_drops_total Probe datagrams the agents dropped, by"
             " node and reason.\n"
             "# TYPE fabricd_probe_drops_total counter\n");
    for (size_t i = 0; i < m->ndrops; i++) {
        for (int r = 0; r < FM_API_PROBE_DROP_NREASONS; r++) {
            if (m->drops[i].n[r]) {
                fprintf (fp,
                         "fabricd_probe_drops_total{node=\"%s\",reason=\"%s\"} %llu\n",
                         m->drops[i].node,
                         drop_reasons[r],
                         (unsigned long long)m->drops[i].n[r]);
            }
        }
    }
}

/* What the policy did and holds raised. */
static void render_actions (FILE *fp, fm_metrics_t *m)
{
    fprintf (fp,
             "# HELP fabricd_actions_total Actions the policy took or decided, by"
             " kind and result.\n"
             "# TYPE fabricd_actions_total counter\n");
    for (size_t k = 0; k < NKINDS; k++) {
        for (size_t r = 0; r < NRESULTS; r++) {
            uint64_t v = atomic_load_explicit (&m->actions[k][r], memory_order_relaxed);
            if (v) {
                fprintf (fp,
                         "fabricd_actions_total{kind=\"%s\",result=\"%s\"} %llu\n",
                         action_kinds[k],
                         action_results[r],
                         (unsigned long long)v);
            }
        }
    }
    fprintf (fp,
             "# HELP fabricd_alarms_active Alarms the policy holds raised.\n"
             "# TYPE fabricd_alarms_active gauge\n"
             "fabricd_alarms_active %lld\n",
             (long long)atomic_load_explicit (&m->alarms, memory_order_relaxed));
}

/* One series per node and gauge. */
static void render_nodes (FILE *fp, const fm_node_stat_t *nodes, size_t nnodes)
{
    fprintf (fp,
             "# HELP fabricd_node_last_seen_timestamp_seconds End of the node's latest"
             " window.\n"
             "# TYPE fabricd_node_last_seen_timestamp_seconds gauge\n");
    for (size_t i = 0; i < nnodes; i++) {
        fprintf (fp,
                 "fabricd_node_last_seen_timestamp_seconds{node=\"%s\"} %.3f\n",
                 nodes[i].node,
                 nodes[i].last_seen_ns / 1e9);
    }
    fprintf (fp,
             "# HELP fabricd_node_clock_offset_seconds Latest clock offset estimate.\n"
             "# TYPE fabricd_node_clock_offset_seconds gauge\n");
    for (size_t i = 0; i < nnodes; i++) {
        if (nodes[i].has_clock) {
            fprintf (fp,
                     "fabricd_node_clock_offset_seconds{node=\"%s\"} %.9f\n",
                     nodes[i].node,
                     nodes[i].clock_offset_ns / 1e9);
        }
    }
    fprintf (fp,
             "# HELP fabricd_node_clock_error_seconds Error bound of the latest clock"
             " offset estimate.\n"
             "# TYPE fabricd_node_clock_error_seconds gauge\n");
    for (size_t i = 0; i < nnodes; i++) {
        if (nodes[i].has_clock) {
            fprintf (fp,
                     "fabricd_node_clock_error_seconds{node=\"%s\"} %.9f\n",
                     nodes[i].node,
                     nodes[i].clock_error_ns / 1e9);
        }
    }
    fprintf (fp,
             "# HELP fabricd_node_loss_ratio Probe loss over the node's links.\n"
             "# TYPE fabricd_node_loss_ratio gauge\n");
    for (size_t i = 0; i < nnodes; i++) {
        fprintf (fp,
                 "fabricd_node_loss_ratio{node=\"%s\"} %.6f\n",
                 nodes[i].node,
                 nodes[i].sent > 0 ? (double)nodes[i].lost / nodes[i].sent : 0.0);
    }
    fprintf (fp,
             "# HELP fabricd_node_rtt_p99_max_seconds Largest p99 round-trip time over"
             " the node's links.\n"
             "# TYPE fabricd_node_rtt_p99_max_seconds gauge\n");
    for (size_t i = 0; i < nnodes; i++) {
        if (nodes[i].has_rtt) {
            fprintf (fp,
                     "fabricd_node_rtt_p99_max_seconds{node=\"%s\"} %.9f\n",
                     nodes[i].node,
                     nodes[i].rtt_p99_max_ns / 1e9);
        }
    }
}

/* One series per link direction and gauge. */
static void render_links (FILE *fp, const fm_link_stat_t *links, size_t nlinks)
{
    fprintf (fp,
             "# HELP fabricd_link_loss_ratio Probe loss of one link direction (the"
             " metrics_links worst links).\n"
             "# TYPE fabricd_link_loss_ratio gauge\n");
    for (size_t i = 0; i < nlinks; i++) {
        fprintf (
            fp,
            "fabricd_link_loss_ratio{src=\"%s\",dst=\"%s\",reporter=\"%s\"} %.6f\n",
            links[i].src,
            links[i].dst,
            links[i].reporter,
            links[i].sent > 0 ? (double)links[i].lost / links[i].sent : 0.0);
    }
    fprintf (fp,
             "# HELP fabricd_link_rtt_p99_seconds Largest p99 round-trip time (the"
             " metrics_links worst links).\n"
             "# TYPE fabricd_link_rtt_p99_seconds gauge\n");
    for (size_t i = 0; i < nlinks; i++) {
        if (links[i].has_rtt) {
            fprintf (fp,
                     "fabricd_link_rtt_p99_seconds{src=\"%s\",dst=\"%s\","
                     "reporter=\"%s\"} %.9f\n",
                     links[i].src,
                     links[i].dst,
                     links[i].reporter,
                     links[i].rtt_p99_ns / 1e9);
        }
    }
    fprintf (fp,
             "# HELP fabricd_link_owd_p99_seconds Largest p99 one-way delay (the"
             " metrics_links worst links).\n"
             "# TYPE fabricd_link_owd_p99_seconds gauge\n");
    for (size_t i = 0; i < nlinks; i++) {
        if (links[i].has_owd) {
            fprintf (fp,
                     "fabricd_link_owd_p99_seconds{src=\"%s\",dst=\"%s\","
                     "reporter=\"%s\"} %.9f\n",
                     links[i].src,
                     links[i].dst,
                     links[i].reporter,
                     links[i].owd_p99_ns / 1e9);
        }
    }
}

char *fm_metrics_render (fm_metrics_t *m,
                         fm_store_t *st,
                         int64_t since_ns,
                         int64_t start_real_ns,
                         size_t max_links,
                         size_t *len,
                         fm_error_t *err)
{
    fm_node_stat_t *nodes = NULL;
    fm_link_stat_t *links = NULL;
    size_t nnodes = 0, nlinks = 0;
    char *text = NULL;
    size_t size = 0;
    FILE *fp;

    if (fm_store_nodes (st, since_ns, &nodes, &nnodes, err) < 0
        || (max_links > 0
            && fm_store_links (st, since_ns, 0, max_links, &links, &nlinks, err) < 0)) {
        fm_store_nodes_free (nodes, nnodes);
        return NULL;
    }
    if (!(fp = open_memstream (&text, &size))) {
        fm_store_nodes_free (nodes, nnodes);
        free (links);
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    fprintf (fp,
             "# HELP fabricd_up Whether fabricd is serving.\n"
             "# TYPE fabricd_up gauge\nfabricd_up 1\n");
    fprintf (fp,
             "# HELP fabricd_start_time_seconds Realtime fabricd started.\n"
             "# TYPE fabricd_start_time_seconds gauge\n"
             "fabricd_start_time_seconds %.3f\n",
             start_real_ns / 1e9);
    render_http (fp, m);
    render_ingest (fp, m);
    render_actions (fp, m);
    render_nodes (fp, nodes, nnodes);
    render_links (fp, links, nlinks);
    fm_store_nodes_free (nodes, nnodes);
    free (links);
    if (fclose (fp) != 0) {
        free (text);
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    *len = size;
    return text;
}
