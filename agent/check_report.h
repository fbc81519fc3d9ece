/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CHECK_REPORT_H
#define FM_CHECK_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "check_sched.h"
#include "check_verdict.h"
#include "error.h"

#define FM_CHECK_NAME_MAX 64 /* node names, NUL included */

/* The results a rank measured as text, to move them through PMIx: one line
 * "a b ok lat_p50_ns lat_p99_ns bw_bps error" (tab separated) per result.
 * Tabs and newlines in errors become spaces. malloc'd; NULL/ENOMEM.
 */
char *fm_check_report_encode (const fm_check_result_t *r, size_t n);

/* Parse text made by fm_check_report_encode, appending to *r (realloc'd, *n
 * updated). Node indices must be < nnodes. -1/EPROTO with err (and *r, *n
 * unchanged) on anything malformed.
 */
int fm_check_report_decode (const char *text,
                            uint32_t nnodes,
                            fm_check_result_t **r,
                            size_t *n,
                            fm_error_t *err);

/* The table for people, worst pairs first (r must be judged and sorted),
 * then the nodes' verdicts and a last line "fabric-check: PASS" or
 * "fabric-check: FAIL bad nodes: a,b" that the SPANK plugin looks for.
 */
void fm_check_report_print_table (FILE *f,
                                  fm_check_mode_t mode,
                                  char (*names)[FM_CHECK_NAME_MAX],
                                  uint32_t nnodes,
                                  const fm_check_result_t *r,
                                  size_t n,
                                  const fm_check_node_t *nodes,
                                  const fm_check_summary_t *sum,
                                  double elapsed_s);

/* The POST /v1/checks body (doc/api.md). job_id 0: no job (the field is
 * then 0, which fabricd refuses). ref: NULL, or nnodes flags naming the
 * reference nodes (the body's "reference"). New reference, NULL/ENOMEM.
 */
json_t *fm_check_report_body (int64_t job_id,
                              fm_check_mode_t mode,
                              char (*names)[FM_CHECK_NAME_MAX],
                              uint32_t nnodes,
                              const bool *ref,
                              const fm_check_result_t *r,
                              size_t n);

/* --json: the body plus "nodes" (verdict per node) and "passed". */
json_t *fm_check_report_json (int64_t job_id,
                              fm_check_mode_t mode,
                              char (*names)[FM_CHECK_NAME_MAX],
                              uint32_t nnodes,
                              const bool *ref,
                              const fm_check_result_t *r,
                              size_t n,
                              const fm_check_node_t *nodes);

#endif /* FM_CHECK_REPORT_H */
