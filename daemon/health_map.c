/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "health_map.h"

/* Window health records to scoring events (doc/health.md). */

const char *const fm_health_map_class_names[] = {
    "info", "application", "warning", "reset", "reboot", "fault", NULL};

/* A GPU or XID class that says the GPU itself needs a reset, a reboot or
 * service. "application" (the job's own fault), "info" and "warning" (watch
 * it) never count against the node.
 */
static bool gpu_fault_class (const char *cls)
{
    return cls
           && (strcmp (cls, "reset") == 0 || strcmp (cls, "reboot") == 0
               || strcmp (cls, "fault") == 0);
}

static int64_t field (json_t *o, const char *key)
{
    json_t *v = json_object_get (o, key);
    json_int_t x = json_is_integer (v) ? json_integer_value (v) : 0;

    return x > 0 ? (int64_t)x : 0;
}

/* Saturating sum of non-negative counter deltas. */
static int64_t sum (json_t *o, const char *const *keys)
{
    int64_t t = 0;

    for (; *keys; keys++) {
        int64_t x = field (o, *keys);
        t = x > INT64_MAX - t ? INT64_MAX : t + x;
    }
    return t;
}

typedef struct {
    fm_health_event_t *ev;
    size_t cap, n;
    int32_t node;
    int64_t at_ns;
} out_t;

static void emit (out_t *o, fm_health_kind_t kind, int64_t count)
{
    if (o->n < o->cap) {
        o->ev[o->n++] = (fm_health_event_t){
            .node = o->node, .at_ns = o->at_ns, .kind = kind, .count = count};
    }
}

static void map_nic (out_t *o, json_t *r)
{
    static const char *const errors[] = {"rx_errors", "tx_errors", NULL};
    int64_t x;

    bool down = json_is_false (json_object_get (r, "link_up"));

    /* CARRIER counts down episodes, carrier_changes both edges of each; a
     * link down at the end of the window is LINK_DOWN's episode, not one more
     */
    if (down) {
        emit (o, FM_HEALTH_LINK_DOWN, 1);
    }
    if ((x = (field (r, "carrier_changes") + (down ? 0 : 1)) / 2) > 0) {
        emit (o, FM_HEALTH_CARRIER, x);
    }
    /* drops are congestion or policy, not a broken port */
    if ((x = sum (r, errors)) > 0) {
        emit (o, FM_HEALTH_PORT_ERRORS, x);
    }
}

static void map_ib (out_t *o, json_t *r)
{
    static const char *const errors[] = {"symbol_error",
                                         "link_error_recovery",
                                         "port_rcv_errors",
                                         "port_xmit_discards",
                                         NULL};
    const char *state = json_string_value (json_object_get (r, "state"));
    const char *phys = json_string_value (json_object_get (r, "phys_state"));
    int64_t x;

    bool down = !state || strcmp (state, "ACTIVE") != 0 || !phys
                || strcmp (phys, "LinkUp") != 0;

    /* link_downed counts down events; while the port is down the last one is
     * LINK_DOWN's episode. port_xmit_wait is congestion: the fabric's delay
     * evidence covers it.
     */
    if (down) {
        emit (o, FM_HEALTH_LINK_DOWN, 1);
    }
    if ((x = field (r, "link_downed") - (down ? 1 : 0)) > 0) {
        emit (o, FM_HEALTH_CARRIER, x);
    }
    if ((x = sum (r, errors)) > 0) {
        emit (o, FM_HEALTH_PORT_ERRORS, x);
    }
}

static void map_pcie (out_t *o, json_t *r)
{
    json_t *w = json_object_get (r, "width"), *mw = json_object_get (r, "max_width");
    json_t *s = json_object_get (r, "speed_gts");
    json_t *ms = json_object_get (r, "max_speed_gts");

    if ((json_is_integer (w) && json_is_integer (mw)
         && json_integer_value (w) < json_integer_value (mw))
        || (json_is_number (s) && json_is_number (ms)
            && json_number_value (s) < json_number_value (ms))) {
        emit (o, FM_HEALTH_PCIE_DEGRADED, 1);
    }
}

int fm_health_map (const char *health_json,
                   int32_t node,
                   int64_t at_ns,
                   fm_health_event_t *ev,
                   size_t cap,
                   size_t *n)
{
    out_t o = {.ev = ev, .cap = cap, .node = node, .at_ns = at_ns};
    json_t *a, *r;
    size_t i;

    if (!health_json || !n || (cap > 0 && !ev)
        || !(a = json_loads (health_json, JSON_REJECT_DUPLICATES, NULL))) {
        errno = EINVAL;
        return -1;
    }
    if (!json_is_array (a)) {
        json_decref (a);
        errno = EINVAL;
        return -1;
    }
    /* first check the whole array, so that a bad record changes nothing */
    json_array_foreach (a, i, r) {
        if (!json_is_string (json_object_get (r, "type"))) {
            json_decref (a);
            errno = EINVAL;
            return -1;
        }
    }
    json_array_foreach (a, i, r) {
        const char *type = json_string_value (json_object_get (r, "type"));
        const char *cls = json_string_value (json_object_get (r, "class"));

        if (strcmp (type, "nic") == 0) {
            map_nic (&o, r);
        } else if (strcmp (type, "ib_port") == 0) {
            map_ib (&o, r);
        } else if (strcmp (type, "pcie") == 0) {
            map_pcie (&o, r);
        } else if (strcmp (type, "clock_source") == 0) {
            if (json_is_false (json_object_get (r, "ntp_synchronized"))) {
                emit (&o, FM_HEALTH_CLOCK_UNSYNC, 1);
            }
        } else if (strcmp (type, "xid") == 0) {
            if (gpu_fault_class (cls)) {
                emit (&o, FM_HEALTH_GPU_FAULT, field (r, "count"));
            }
        } else if (strcmp (type, "gpu") == 0) {
            if (gpu_fault_class (cls)) {
                emit (&o, FM_HEALTH_GPU_FAULT, 1);
            }
        }
        /* gpu_nic (locality), counters (detail the nic/ib_port object already
         * sums) and steer (what the job was told) are not evidence
         */
    }
    json_decref (a);
    *n = o.n;
    return 0;
}
