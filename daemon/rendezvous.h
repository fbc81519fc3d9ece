/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_RENDEZVOUS_H
#define FM_RENDEZVOUS_H

#include "api.h"

/* POST /v1/agents: register an agent and answer the job's peers and probe key. */
void fm_rendezvous_register (fm_daemon_t *d,
                      const fm_request_t *req,
                      const fm_ident_t *id,
                      fm_response_t *resp);

/* GET /v1/jobs/{id}/peers. */
void fm_rendezvous_peers (fm_daemon_t *d,
                   const fm_request_t *req,
                   const fm_ident_t *id,
                   int64_t job_id,
                   fm_response_t *resp);

#endif /* FM_RENDEZVOUS_H */
