/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_REPORT_H
#define FM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "fm/api.h"

/* Strict validation of request bodies (doc/api.md). Validators name the
 * offending field as a JSON path ("windows[3].links[0].sent").
 */
typedef struct {
    char field[256];
    char message[512];
    bool too_large; /* a count cap was exceeded: 413 rather than 400 */
    bool syntax;    /* not JSON at all (invalid_json); field is empty */
} fm_invalid_t;

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

/* Parse and validate a POST /v1/reports body (len bytes) against `now_ns`.
 * On failure -1/EINVAL with the field (or inv->syntax) in inv and *rep untouched.
 */
int fm_report_parse (
    const char *body, size_t len, int64_t now_ns, fm_report_t *rep, fm_invalid_t *inv);
void fm_report_release (fm_report_t *rep);

typedef struct {
    const char *addr;
    int64_t port;
} fm_nic_addr_t;

/* A job's mode (POST /v1/agents `mode`): observe only reports; protect also
 * lets fabricd act on what it sees. The values are stored: append only.
 */
typedef enum {
    FM_JOB_OBSERVE = 0,
    FM_JOB_PROTECT = 1,
} fm_job_mode_t;

/* "observe", "protect"; "observe" for anything else. */
const char *fm_job_mode_name (fm_job_mode_t mode);

typedef struct {
    int64_t job_id;
    const char *node;
    int64_t user_id;
    const char *job_nodes; /* NULL when absent */
    int64_t expected;      /* node count of job_nodes, 0 when absent */
    const char *probe_addr;
    int64_t probe_port;
    fm_job_mode_t mode; /* FM_JOB_OBSERVE when absent */
    char *nics_json;    /* compact array, malloc'd */
} fm_registration_t;

/* Validate a POST /v1/agents document. Strings are borrowed from root. */
int fm_registration_parse (json_t *root, fm_registration_t *reg, fm_invalid_t *inv);
void fm_registration_release (fm_registration_t *reg);

/* Compact JSON text of o in malloc'd memory (never jansson's allocator, which
 * may be the request arena: see arena.h). NULL/ENOMEM.
 */
char *fm_json_dump (const json_t *o);

/* Shared field checks, also used for path parameters. */
bool fm_node_name_valid (const char *s);
bool fm_ip_literal_valid (const char *s);

#endif /* FM_REPORT_H */
