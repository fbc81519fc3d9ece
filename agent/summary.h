/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_SUMMARY_H
#define FM_AGENT_SUMMARY_H

#include <jansson.h>
#include <stdint.h>

#include "error.h"

/* Lines shown at most; the links come worst first. */
#define FM_SUMMARY_MAX_LINKS 40
#define FM_SUMMARY_MAX_ACTIONS 40

/* Render the answer of GET /v1/jobs/{id}/summary as text for a job's output
 * file, every line prefixed "fabric-monitor: ": the links, then when present
 * the nodes' health and steering (`health`, doc/health.md) and fabricd's
 * `actions`, one line each. Returns a malloc'd string, or NULL/EPROTO with err
 * when the answer is not the documented object.
 */
char *fm_summary_format (json_t *summary, fm_error_t *err);

/* How often fm_summary_fetch asks whether the job's agents are done. */
#define FM_SUMMARY_POLL_NS (200LL * 1000 * 1000)

/* Fetch the job's summary from the daemon and append its text to `output`
 * (opened O_APPEND|O_NOFOLLOW, never created, a regular file owned by the
 * effective uid; NULL: stdout), with the
 * identity of the calling process. With wait_ns > 0 it first polls
 * GET /v1/jobs/{id} until every registered agent of the job has sent its
 * final batch, or wait_ns passed (then a line of the text says how many had
 * not), so that the summary covers the job's last windows. 0 or -1/errno + err.
 */
int fm_summary_fetch (const char *daemon_url,
                      const char *munge_socket,
                      uint64_t job_id,
                      const char *output,
                      int64_t wait_ns,
                      fm_error_t *err);

/* From a GET /v1/jobs/{id} answer: the number of agents, and of those not
 * final yet, into *agents and *pending. -1/EPROTO when it is not the
 * documented object.
 */
int fm_summary_pending (json_t *job, size_t *agents, size_t *pending);

#endif /* FM_AGENT_SUMMARY_H */
