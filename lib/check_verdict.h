/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CHECK_VERDICT_H
#define FM_CHECK_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What fabric-check concludes from its pair results; shared by fabric-check
 * and fabricd (daemon/checks.c), so that both judge a result alike.
 *
 * The rule (doc/fabric-check.md): a pair is slow when its bandwidth is below
 * a quarter of the median of the run's good pairs, or its median latency is
 * above four times the run's median AND at least 200 us above it (the floor
 * keeps microsecond noise on an idle LAN from counting). A node is slow
 * (failed) when more than half of its pairs are slow (failed): the culprit
 * of a bad link is in all of its pairs, each neighbour in only one.
 *
 * With reference nodes (nodes known good, such as the peers of a node under
 * validation), the medians are those of the pairs between reference nodes:
 * a run of three, one node bad, would otherwise take the bad node's two
 * pairs for the norm. Without such a pair the run's own medians serve.
 */
#define FM_CHECK_SLOW_FACTOR 4
#define FM_CHECK_LAT_FLOOR_NS 200000
#define FM_CHECK_ERROR_MAX 128

typedef struct {
    uint32_t a, b; /* node indices */
    bool ok;       /* the test ran to its end */
    int64_t lat_p50_ns;
    int64_t lat_p99_ns;
    int64_t bw_bps; /* bits per second */
    char error[FM_CHECK_ERROR_MAX];
    /* filled by fm_check_verdict() */
    bool slow;
    double badness; /* inf: failed; else how many times worse than the median */
} fm_check_result_t;

typedef struct {
    uint32_t npairs, nslow, nfailed;
    bool slow, failed;
} fm_check_node_t;

typedef struct {
    int64_t median_bw_bps;     /* 0 when no pair succeeded */
    int64_t median_lat_p50_ns; /* 0 when no pair succeeded */
    bool by_reference;         /* the medians are the reference pairs' */
    uint32_t nslow_nodes, nfailed_nodes;
} fm_check_summary_t;

/* Judge n results over nnodes nodes: sets each result's slow and badness,
 * fills nodes[nnodes] and *sum. ref: NULL, or nnodes flags marking the
 * reference nodes. -1/EINVAL when a result names a node index >= nnodes or a
 * pair of a node with itself (nothing is changed then).
 */
int fm_check_verdict (fm_check_result_t *r,
                      size_t n,
                      uint32_t nnodes,
                      const bool *ref,
                      fm_check_node_t *nodes,
                      fm_check_summary_t *sum);

/* Order judged results worst first: failed pairs, then by badness, ties by
 * node indices.
 */
void fm_check_verdict_sort (fm_check_result_t *r, size_t n);

#endif /* FM_CHECK_VERDICT_H */
