/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_JOBS_H
#define FM_JOBS_H

#include "api.h"

/* Read endpoints: GET /v1/nodes, /v1/links, /v1/jobs/{id}, /v1/jobs/{id}/summary. */
void fm_jobs_nodes (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp);
void fm_jobs_links (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp);
void fm_jobs_get (fm_daemon_t *d,
                  const fm_request_t *req,
                  const fm_ident_t *id,
                  int64_t job_id,
                  fm_response_t *resp);
/* The links GET /v1/jobs/{id}/summary lists, worst first, unless its query
 * `worst` says otherwise; its `nlinks` counts them all. The answer grows with
 * the job's nodes (health), never with its links.
 */
#define FM_JOBS_SUMMARY_LINKS 100

void fm_jobs_summary (fm_daemon_t *d,
                      const fm_request_t *req,
                      const fm_ident_t *id,
                      int64_t job_id,
                      fm_response_t *resp);

/* A link object of doc/api.md. */
json_t *fm_jobs_link_json (const fm_link_stat_t *l);

#endif /* FM_JOBS_H */
