/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_REPORT_H
#define FM_AGENT_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "fm/api.h"
#include "linkwin.h"

/* |clock.drift_ppb| accepted by fabricd (doc/api.md): 1000 ppm. */
#define FM_REPORT_DRIFT_MAX_PPB 1e6

/* The clock estimate of this node against the job's reference node. */
typedef struct {
    bool valid;
    int64_t offset_ns; /* local - reference */
    int64_t error_ns;
    double drift_ppb; /* d(local - reference) / dt */
} fm_report_clock_t;

/* One window object of POST /v1/reports (doc/api.md): for each target peer
 * an `out` and an `in` link entry built from stats[i]. Values are clamped to
 * the API's ranges. health (may be NULL: none) is the window's health array
 * (doc/health.md); the reference is taken, also on failure. NULL/ENOMEM.
 */
json_t *fm_agent_report_window (uint64_t seq,
                                int64_t start_ns,
                                int64_t end_ns,
                                const fm_report_clock_t *clock,
                                const char *const *peers,
                                const fm_linkstats_t *stats,
                                size_t n,
                                json_t *health);

/* Add to window w the "probe_drops" object: the nonzero of counts, in the
 * order of FM_API_PROBE_DROP_REASONS, each capped at FM_API_COUNT_MAX.
 * Nothing when all are zero. 0, or -1/ENOMEM with w untouched.
 */
int fm_agent_report_add_drops (json_t *w,
                               const uint64_t counts[FM_API_PROBE_DROP_NREASONS]);

/* This node's clock from the estimate of the reference node's clock
 * (theta = reference - local): invalid unless the estimate is.
 */
fm_report_clock_t fm_agent_report_clock (const fm_clock_estimate_t *to_reference);

#endif /* FM_AGENT_REPORT_H */
