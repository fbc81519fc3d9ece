/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_REPORT_H
#define FM_AGENT_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"

/* The clock estimate of this node against the job's reference node. */
typedef struct {
    bool valid;
    int64_t offset_ns; /* local - reference */
    int64_t error_ns;
} fm_clock_est_t;

/* One window object of POST /v1/reports (doc/api.md): for each target peer
 * an `out` and an `in` link entry built from stats[i]. Values are clamped to
 * the API's ranges. NULL/ENOMEM.
 */
json_t *fm_report_window (uint64_t seq,
                          int64_t start_ns,
                          int64_t end_ns,
                          const fm_clock_est_t *clock,
                          const char *const *peers,
                          const fm_linkstats_t *stats,
                          size_t n);

/* The clock estimate from the stats of the link to the reference node, which
 * measured offset = reference - local. Invalid without a sample.
 */
fm_clock_est_t fm_report_clock (const fm_linkstats_t *to_reference);

#endif /* FM_AGENT_REPORT_H */
