/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_DAEMON_ADMIN_H
#define FM_DAEMON_ADMIN_H

#include <jansson.h>

#include "api.h"
#include "daemon.h"
#include "store.h"

/* The fabric loop's endpoints (doc/api.md "Fabric state and actions"), all
 * for administrators: GET /v1/fabric, GET /v1/actions, GET /v1/explain,
 * POST /v1/drain, POST /v1/resume.
 */
void fm_admin_fabric (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp);
void fm_admin_actions (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp);
void fm_admin_explain (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp);
void fm_admin_drain (fm_daemon_t *d,
                     const fm_request_t *req,
                     const fm_ident_t *id,
                     bool resume,
                     fm_response_t *resp);

/* One action record as the API shows it; NULL on ENOMEM. */
json_t *fm_admin_action_json (const fm_action_rec_t *a);

/* The records of job_id, oldest first; NULL with a response on failure. */
json_t *fm_admin_job_actions (fm_daemon_t *d, int64_t job_id, fm_response_t *resp);

#endif /* FM_DAEMON_ADMIN_H */
