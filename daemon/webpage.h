/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_WEBPAGE_H
#define FM_WEBPAGE_H

#include <stdint.h>

#include "api.h"
#include "auth.h"
#include "daemon.h"

/* The HTML pages of doc/api.md "Pages": self-contained documents (inline CSS
 * and SVG, no script, no external asset) for a browser at 3 a.m. Every text
 * that comes from the store or the monitor is HTML-escaped.
 */

/* Heatmaps are drawn for jobs of at most this many nodes; larger jobs get the
 * worst-links table only (an N x N grid of thousands would be unreadable).
 */
#define FM_WEBPAGE_GRID_MAX 64

/* GET /: nodes grouped by the monitor's state (without a monitor, from the
 * store alone), the elements that are not healthy, and the worst links of
 * the last 5 minutes. The caller has authorised the request.
 */
void fm_webpage_index (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp);

/* GET /jobs/{id}: a heatmap of one-way delay and loss between the job's
 * nodes (one SVG rect per ordered pair, class "cell", with data-src,
 * data-dst, data-owd-ns and data-loss), the clock error bound of each node
 * over the job's windows, and the actions taken for the job. ident: who asks
 * (the job's owner, an admin or a report uid may read it, as for
 * GET /v1/jobs/{id}), or NULL when the pages are public. 404 for an unknown
 * job, 403 for anybody else.
 */
void fm_webpage_job (fm_daemon_t *d,
                     const fm_request_t *req,
                     const fm_ident_t *ident,
                     int64_t job_id,
                     fm_response_t *resp);

#endif /* FM_WEBPAGE_H */
