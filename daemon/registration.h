/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_REGISTRATION_H
#define FM_REGISTRATION_H

#include <stdint.h>
#include <jansson.h>

#include "validate.h"

/* POST /v1/agents: an agent's registration (doc/api.md). */
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
const char *fm_registration_mode_name (fm_job_mode_t mode);

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

#endif /* FM_REGISTRATION_H */
