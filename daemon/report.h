/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_REPORT_H
#define FM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fm/api.h"

/* An agent's report (POST /v1/reports) as report_parse.c reads it: what the
 * monitor, the store and the pages take.
 */
typedef struct {
    bool present;
    int64_t p50, p90, p99, max;
} fm_quant_t;

typedef enum {
    FM_DIR_OUT = 0,
    FM_DIR_IN = 1,
} fm_dir_t;

typedef struct {
    const char *peer; /* in fm_report_t.strings */
    fm_dir_t dir;
    fm_quant_t rtt, owd;
    int64_t sent, received, lost, reordered;
} fm_link_rec_t;

/* clock.drift_ppb bound (doc/api.md) */
#define FM_WINDOW_DRIFT_MAX_PPB 1e6

typedef struct {
    int64_t seq;
    int64_t start_ns, end_ns;
    bool has_clock;
    int64_t clock_offset_ns, clock_error_ns;
    bool has_drift;
    double clock_drift_ppb; /* |x| <= FM_WINDOW_DRIFT_MAX_PPB */
    fm_link_rec_t *links;
    size_t nlinks;
    char *health_json; /* compact JSON array, malloc'd */
    /* probe datagrams the agent dropped, by FM_API_PROBE_DROP_REASONS */
    int64_t probe_drops[FM_API_PROBE_DROP_NREASONS];
} fm_window_t;

typedef struct {
    int64_t job_id;
    const char *node; /* in strings */
    bool final;       /* the agent's last batch: it stopped after these windows */
    fm_window_t *windows;
    size_t nwindows;
    size_t nrecords;
    char *strings; /* the decoded strings that node and peer point into */
} fm_report_t;

#endif /* FM_REPORT_H */
