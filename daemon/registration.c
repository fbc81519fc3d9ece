/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "fm/api.h"
#include "hostlist.h"
#include "registration.h"
#include "validate.h"

static int parse_nic (fm_validate_ctx_t *c, json_t *o)
{
    static const char *const fields[] = {
        "name", "addr", "kind", "speed_mbps", "device", NULL};
    static const char *const kinds[] = {"ethernet", "infiniband", "other", NULL};
    const char *addr;
    int64_t x;
    int rc;

    if (fm_validate_object (c, o, fields) < 0
        || fm_validate_str (c, o, "name", true, 1, 15, NULL) < 0
        || fm_validate_enum (c, o, "kind", kinds, NULL) < 0
        || fm_validate_int (c, o, "speed_mbps", false, 0, 10000000, &x) < 0
        || fm_validate_str (c, o, "device", false, 1, 63, NULL) < 0
        || (rc = fm_validate_str (c, o, "addr", false, 1, 63, &addr)) < 0) {
        return -1;
    }
    if (rc == 1 && !fm_validate_ip_literal (addr)) {
        return fm_validate_fail (c, "addr", "not an IPv4 or IPv6 address");
    }
    return 0;
}

int fm_registration_parse (json_t *root, fm_registration_t *reg, fm_invalid_t *inv)
{
    static const char *const fields[] = {"job_id",
                                         "node",
                                         "user_id",
                                         "job_nodes",
                                         "probe_addr",
                                         "probe_port",
                                         "nics",
                                         "mode",
                                         NULL};
    static const char *const modes[] = {"observe", "protect", NULL};
    fm_registration_t r = {0};
    char path[64];
    fm_validate_ctx_t c = {.path = "", .inv = inv};
    fm_validate_ctx_t sub = {.path = path, .inv = inv};
    json_t *nics, *v;
    size_t i;
    int rc;

    memset (inv, 0, sizeof (*inv));
    if (fm_validate_object (&c, root, fields) < 0
        || fm_validate_int (&c, root, "job_id", true, 1, FM_API_JOB_ID_MAX, &r.job_id)
               < 0
        || fm_validate_node (&c, root, "node", &r.node) < 0
        || fm_validate_int (&c, root, "user_id", true, 0, FM_API_UID_MAX, &r.user_id)
               < 0
        || (rc = fm_validate_str (
                &c, root, "job_nodes", false, 1, FM_API_JOB_NODES_MAX, &r.job_nodes))
               < 0
        || fm_validate_str (&c, root, "probe_addr", true, 1, 63, &r.probe_addr) < 0
        || fm_validate_int (&c, root, "probe_port", true, 1, 65535, &r.probe_port)
               < 0) {
        return -1;
    }
    if (!fm_validate_ip_literal (r.probe_addr)) {
        return fm_validate_fail (&c, "probe_addr", "not an IPv4 or IPv6 address");
    }
    if (json_object_get (root, "mode")) {
        int mode;
        if (fm_validate_enum (&c, root, "mode", modes, &mode) < 0) {
            return -1;
        }
        r.mode = (fm_job_mode_t)mode;
    }
    if (rc == 1) {
        fm_error_t err;
        fm_hostlist_t *hl = fm_hostlist_expand (r.job_nodes, 65536, &err);
        if (!hl) {
            return fm_validate_fail (&c, "job_nodes", "%s", err.text);
        }
        r.expected = (int64_t)fm_hostlist_count (hl);
        if (fm_hostlist_find (hl, r.node) < 0) {
            fm_hostlist_destroy (hl);
            return fm_validate_fail (
                &c, "job_nodes", "does not contain node '%s'", r.node);
        }
        fm_hostlist_destroy (hl);
    }
    nics = json_object_get (root, "nics");
    if (nics) {
        if (!json_is_array (nics)) {
            return fm_validate_fail (&c, "nics", "must be an array");
        }
        if (json_array_size (nics) > FM_API_MAX_NICS) {
            return fm_validate_too_large (&c, "nics", FM_API_MAX_NICS);
        }
        json_array_foreach (nics, i, v) {
            snprintf (path, sizeof (path), "nics[%zu]", i);
            if (parse_nic (&sub, v) < 0) {
                return -1;
            }
        }
    }
    if (!(r.nics_json = nics ? fm_arena_json_dump (nics) : strdup ("[]"))) {
        return fm_validate_fail (&c, "nics", "out of memory");
    }
    *reg = r;
    return 0;
}

const char *fm_registration_mode_name (fm_job_mode_t mode)
{
    return mode == FM_JOB_PROTECT ? "protect" : "observe";
}

void fm_registration_release (fm_registration_t *reg)
{
    if (reg) {
        free (reg->nics_json);
        reg->nics_json = NULL;
    }
}
