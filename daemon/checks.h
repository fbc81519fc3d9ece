/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CHECKS_H
#define FM_CHECKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "api.h"
#include "error.h"

/* fabric-check results posted as evidence (doc/api.md "Checks"), kept in
 * memory: the latest FM_CHECKS_RING results, the oldest dropped first.
 * Thread-safe: the HTTP thread adds, the monitor asks.
 */
typedef struct fm_checks fm_checks_t;

#define FM_CHECKS_RING 64
#define FM_CHECKS_PAIRS_MAX 8192 /* a full check of 128 nodes has 8128 */
#define FM_CHECKS_NODES_MAX 4096
#define FM_CHECKS_VALUE_MAX 1000000000000000LL /* ns or bit/s: 1e15 */

/* ring: results kept, 1..4096. NULL with errno and err. */
fm_checks_t *fm_checks_create (size_t ring, fm_error_t *err);
void fm_checks_destroy (fm_checks_t *c);

/* Validate a POST /v1/checks body and keep it, received at now_ns from uid;
 * trusted: posted by a reporter or admin (only those count for
 * fm_checks_node_result). On a bad body -1/EINVAL, *field names the
 * offending field (static string, NULL: syntax) and err says why; ENOMEM.
 * *job_id is the body's job id when it parsed that far.
 */
int fm_checks_add (fm_checks_t *c,
                   const char *body,
                   size_t len,
                   uid_t uid,
                   bool trusted,
                   int64_t now_ns,
                   int64_t *job_id,
                   const char **field,
                   fm_error_t *err);

/* The job id of a body, without keeping it (for authorisation before
 * fm_checks_add): -1/EINVAL when absent or invalid.
 */
int fm_checks_body_job (const char *body, size_t len, int64_t *job_id);

/* The results of job_id readable by id (all for admins and reporters, else
 * those of a job id owns or that id posted), newest first, as the JSON
 * array of GET /v1/checks. job_uid: the job's owner, -1 when unknown.
 */
json_t *fm_checks_json (fm_checks_t *c,
                        int64_t job_id,
                        const fm_ident_t *id,
                        bool privileged,
                        int64_t job_uid);

/* For resume decisions: the newest trusted result received at or after
 * since_ns that tested node. 0 with *passed 1 (the node was neither slow nor
 * failed) or 0; -1/ENOENT when there is none, -1/EINVAL on bad arguments.
 */
int fm_checks_node_result (fm_checks_t *c,
                           const char *node,
                           int64_t since_ns,
                           int *passed);

/* The handlers of POST /v1/checks and GET /v1/checks?job=N (api.c routes;
 * authorisation is theirs: the job's owner, reporters and admins).
 */
void fm_checks_post (fm_daemon_t *d,
                     const fm_request_t *req,
                     const fm_ident_t *id,
                     fm_response_t *resp);
void fm_checks_get (fm_daemon_t *d,
                    const fm_request_t *req,
                    const fm_ident_t *id,
                    fm_response_t *resp);

#endif /* FM_CHECKS_H */
