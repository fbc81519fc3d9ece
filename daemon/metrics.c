/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

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
                                           "length_required",
                                           "too_large",
                                           "unsupported_media_type",
                                           "internal",
                                           "unavailable",
                                           "other"};
#define NREJECT (sizeof (reject_codes) / sizeof (reject_codes[0]))

struct route_stats {
    uint64_t by_code[NCODES];
    uint64_t hist[NBUCKETS + 1];
    uint64_t count;
    double sum;
};

struct fm_metrics {
    const char *const *names;
    size_t nroutes;
    struct route_stats *routes;
    uint64_t rejected[NREJECT];
    fm_ingest_counts_t ingest;
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
    for (i = 0; i < NCODES; i++) {
        if (codes[i] == status) {
            r->by_code[i]++;
            break;
        }
    }
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

char *fm_metrics_render (fm_metrics_t *m,
                         fm_store_t *st,
                         int64_t since_ns,
                         int64_t start_real_ns,
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
        || fm_store_links (st, since_ns, 0, 0, &links, &nlinks, err) < 0) {
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
    fprintf (fp,
             "# HELP fabricd_http_requests_total HTTP requests answered.\n"
             "# TYPE fabricd_http_requests_total counter\n");
    for (size_t r = 0; r < m->nroutes; r++) {
        for (size_t c = 0; c < NCODES; c++) {
            if (m->routes[r].by_code[c]) {
                fprintf (fp,
                         "fabricd_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
                         m->names[r],
                         codes[c],
                         (unsigned long long)m->routes[r].by_code[c]);
            }
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
                     "fabricd_ingest_rejected_total{code=\"%s\"} %llu\n",
                     reject_codes[i],
                     (unsigned long long)m->rejected[i]);
        }
    }
    fprintf (fp,
             "# HELP fabricd_node_last_seen_seconds End of the node's latest window.\n"
             "# TYPE fabricd_node_last_seen_seconds gauge\n");
    for (size_t i = 0; i < nnodes; i++) {
        fprintf (fp,
                 "fabricd_node_last_seen_seconds{node=\"%s\"} %.3f\n",
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
             "# HELP fabricd_node_loss_ratio Probe loss over the node's links.\n"
             "# TYPE fabricd_node_loss_ratio gauge\n");
    for (size_t i = 0; i < nnodes; i++) {
        fprintf (fp,
                 "fabricd_node_loss_ratio{node=\"%s\"} %.6f\n",
                 nodes[i].node,
                 nodes[i].sent > 0 ? (double)nodes[i].lost / nodes[i].sent : 0.0);
    }
    fprintf (fp,
             "# HELP fabricd_link_loss_ratio Probe loss of one link direction.\n"
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
             "# HELP fabricd_link_rtt_p99_seconds Largest p99 round-trip time.\n"
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
             "# HELP fabricd_link_owd_p99_seconds Largest p99 one-way delay.\n"
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
