/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
/* A window's health records as the JSON array of POST /v1/reports
 * (doc/api.md "Health records", doc/health.md).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm/api.h"
#include "health.h"
#include "log.h"

static const char *const nic_counters[] = {
    "rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "carrier_changes", NULL};
static const char *const ib_counters[] = {"symbol_error",
                                          "link_error_recovery",
                                          "link_downed",
                                          "port_rcv_errors",
                                          "port_xmit_discards",
                                          "port_xmit_wait",
                                          NULL};
static const char *const ib_states[] = {
    "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER", NULL};

/* Text records that the api.md objects already carry. */
static const char *const strict_text[] = {"operstate", "state", "phys_state", NULL};

static bool in_list (const char *const *list, const char *s)
{
    for (; *list; list++) {
        if (strcmp (*list, s) == 0) {
            return true;
        }
    }
    return false;
}

typedef struct {
    json_t *o;
    fm_hclass_t cls;
    size_t order;
} obj_t;

typedef struct {
    obj_t *v;
    size_t n;
    size_t cap;
} objs_t;

static int objs_push (objs_t *a, json_t *o, fm_hclass_t cls)
{
    if (!o) {
        errno = ENOMEM;
        return -1;
    }
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        obj_t *v = realloc (a->v, cap * sizeof (*v));

        if (!v) {
            json_decref (o);
            errno = ENOMEM;
            return -1;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n] = (obj_t){.o = o, .cls = cls, .order = a->n};
    a->n++;
    return 0;
}

static bool same_group (const fm_health_record_t *a, const fm_health_record_t *b)
{
    return a->kind == b->kind && a->port == b->port
           && strcmp (a->device, b->device) == 0;
}

static const fm_health_record_t *
find (const fm_health_record_t *const *g, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp (g[i]->name, name) == 0) {
            return g[i];
        }
    }
    return NULL;
}

static json_int_t delta_of (const fm_health_record_t *r)
{
    return r && r->vtype == FM_HVAL_COUNTER && r->delta > 0 ? (json_int_t)r->delta : 0;
}

static int set_int (json_t *o, const char *key, json_int_t v)
{
    return json_object_set_new (o, key, json_integer (v));
}

/* The api.md object of a NIC or IB port group; NULL (no error) when the group
 * lacks what the API requires, *bad set to -1 on ENOMEM.
 */
static json_t *strict_object (const fm_health_record_t *const *g, size_t n, int *bad)
{
    const fm_health_record_t *r0 = g[0];
    json_t *o;
    int rc = 0;

    if (r0->kind == FM_HREC_NIC) {
        const fm_health_record_t *up = find (g, n, "link_up");
        const fm_health_record_t *speed = find (g, n, "speed_mbps");
        int64_t mbps = speed ? speed->value : 0;

        if (!up || strlen (r0->device) < 1 || strlen (r0->device) > 15) {
            return NULL;
        }
        mbps = mbps < 0 || mbps > 10000000 ? 0 : mbps;
        o = json_pack ("{s:s, s:s, s:b, s:I}",
                       "type",
                       "nic",
                       "name",
                       r0->device,
                       "link_up",
                       up->value != 0,
                       "speed_mbps",
                       (json_int_t)mbps);
        for (int i = 0; o && nic_counters[i]; i++) {
            rc |= set_int (o, nic_counters[i], delta_of (find (g, n, nic_counters[i])));
        }
    } else {
        const fm_health_record_t *state = find (g, n, "state");
        const fm_health_record_t *phys = find (g, n, "phys_state");
        const fm_health_record_t *rate = find (g, n, "rate_mbps");

        if (!state || !in_list (ib_states, state->text) || !phys
            || strlen (phys->text) < 1 || strlen (phys->text) > 31 || r0->port < 1
            || r0->port > 255 || strlen (r0->device) < 1) {
            return NULL;
        }
        o = json_pack ("{s:s, s:s, s:i, s:s, s:s, s:f}",
                       "type",
                       "ib_port",
                       "device",
                       r0->device,
                       "port",
                       r0->port,
                       "state",
                       state->text,
                       "phys_state",
                       phys->text,
                       "rate_gbps",
                       rate && rate->value > 0 ? (double)rate->value / 1000.0 : 0.0);
        for (int i = 0; o && ib_counters[i]; i++) {
            rc |= set_int (o, ib_counters[i], delta_of (find (g, n, ib_counters[i])));
        }
    }
    if (!o || rc) {
        json_decref (o);
        *bad = -1;
        return NULL;
    }
    return o;
}

/* Counters and attributes of a NIC or IB group that api.md has no field for. */
static json_t *extra_object (const fm_health_record_t *const *g, size_t n, int *bad)
{
    const fm_health_record_t *r0 = g[0];
    const char *const *known = r0->kind == FM_HREC_NIC ? nic_counters : ib_counters;
    json_t *counters = json_object ();
    json_t *attrs = json_object ();
    json_t *o = NULL;
    int rc = 0;

    if (!counters || !attrs) {
        goto nomem;
    }
    if (r0->port < 0 || r0->port > 255) {
        json_decref (counters);
        json_decref (attrs);
        return NULL; /* api.md's port range: not renderable */
    }
    /* fabricd refuses more than FM_HEALTH_OBJ_MAX entries, or an empty string,
     * with a 400 for the whole window: the rest are left out
     */
    for (size_t i = 0; i < n; i++) {
        if (g[i]->vtype == FM_HVAL_COUNTER && g[i]->delta > 0
            && g[i]->cls >= FM_HCLASS_WARN && !in_list (known, g[i]->name)
            && json_object_size (counters) < FM_HEALTH_OBJ_MAX) {
            rc |= set_int (counters, g[i]->name, g[i]->delta);
        } else if (g[i]->vtype == FM_HVAL_TEXT && !in_list (strict_text, g[i]->name)
                   && g[i]->text[0] != '\0'
                   && json_object_size (attrs) < FM_HEALTH_OBJ_MAX) {
            rc |= json_object_set_new (attrs, g[i]->name, json_string (g[i]->text));
        }
    }
    if (rc) {
        goto nomem;
    }
    if (json_object_size (counters) == 0 && json_object_size (attrs) == 0) {
        json_decref (counters);
        json_decref (attrs);
        return NULL;
    }
    o = json_pack ("{s:s, s:s, s:s, s:i, s:o, s:o}",
                   "type",
                   "counters",
                   "kind",
                   r0->kind == FM_HREC_NIC ? "nic" : "ib_port",
                   "device",
                   r0->device,
                   "port",
                   r0->port,
                   "counters",
                   counters,
                   "attrs",
                   attrs);
    if (!o) {
        *bad = -1;
    }
    return o;
nomem:
    json_decref (counters);
    json_decref (attrs);
    *bad = -1;
    return NULL;
}

static json_t *gpu_object (const fm_health_record_t *const *g, size_t n, int *bad)
{
    const fm_health_record_t *vendor = find (g, n, "vendor");
    json_t *counters = json_object ();
    json_t *gauges = json_object ();
    fm_hclass_t cls = FM_HCLASS_INFO;
    json_t *o;
    int rc = 0;

    for (size_t i = 0; counters && gauges && i < n; i++) {
        cls = g[i]->cls > cls ? g[i]->cls : cls;
        if (g[i]->vtype == FM_HVAL_COUNTER
            && json_object_size (counters) < FM_HEALTH_OBJ_MAX) {
            rc |= set_int (counters, g[i]->name, g[i]->delta);
        } else if (g[i]->vtype == FM_HVAL_GAUGE
                   && json_object_size (gauges) < FM_HEALTH_OBJ_MAX) {
            rc |= set_int (gauges, g[i]->name, g[i]->value);
        }
    }
    if (!counters || !gauges || rc) {
        json_decref (counters);
        json_decref (gauges);
        *bad = -1;
        return NULL;
    }
    o = json_pack ("{s:s, s:s, s:s, s:s, s:o, s:o}",
                   "type",
                   "gpu",
                   "vendor",
                   vendor ? vendor->text : "unknown",
                   "device",
                   g[0]->device,
                   "class",
                   fm_health_class_name (cls),
                   "counters",
                   counters,
                   "gauges",
                   gauges);
    if (!o) {
        *bad = -1;
    }
    return o;
}

static int
render_group (objs_t *a, const fm_health_record_t *const *g, size_t n, int flags)
{
    fm_hclass_t cls = FM_HCLASS_INFO;
    int bad = 0;
    json_t *o;

    for (size_t i = 0; i < n; i++) {
        cls = g[i]->cls > cls ? g[i]->cls : cls;
    }
    switch (g[0]->kind) {
    case FM_HREC_NIC:
    case FM_HREC_IB_PORT:
        if ((o = strict_object (g, n, &bad)) && objs_push (a, o, cls) < 0) {
            return -1;
        }
        if (bad == 0 && (flags & FM_HEALTH_RENDER_EXTENDED)
            && (o = extra_object (g, n, &bad)) && objs_push (a, o, cls) < 0) {
            return -1;
        }
        return bad;
    case FM_HREC_GPU:
        if (!(flags & FM_HEALTH_RENDER_EXTENDED)) {
            return 0;
        }
        return (o = gpu_object (g, n, &bad)) ? objs_push (a, o, cls) : bad;
    case FM_HREC_XID:
    case FM_HREC_TOPO:
        if (!(flags & FM_HEALTH_RENDER_EXTENDED)) {
            return 0;
        }
        for (size_t i = 0; i < n; i++) {
            if (g[i]->kind == FM_HREC_XID) {
                o = json_pack ("{s:s, s:s, s:I, s:I, s:s, s:s}",
                               "type",
                               "xid",
                               "device",
                               g[i]->device,
                               "xid",
                               (json_int_t)g[i]->value,
                               "count",
                               (json_int_t)g[i]->delta,
                               "class",
                               fm_health_class_name (g[i]->cls),
                               "action",
                               g[i]->text);
            } else {
                o = json_pack ("{s:s, s:s, s:s, s:s}",
                               "type",
                               "gpu_nic",
                               "gpu",
                               g[i]->device,
                               "nic",
                               g[i]->name,
                               "path",
                               g[i]->text);
            }
            if (objs_push (a, o, g[i]->cls) < 0) {
                return -1;
            }
        }
        return 0;
    }
    return 0;
}

static int by_severity (const void *pa, const void *pb)
{
    const obj_t *a = pa;
    const obj_t *b = pb;

    if (a->cls != b->cls) {
        return a->cls > b->cls ? -1 : 1;
    }
    return a->order < b->order ? -1 : a->order > b->order;
}

json_t *fm_health_json_render (const fm_health_set_t *set, int flags, size_t *dropped)
{
    const fm_health_record_t **g = NULL;
    bool *done = NULL;
    objs_t a = {0};
    json_t *arr = NULL;
    size_t n = set ? set->n : 0;

    if (n
        && (!(g = malloc (n * sizeof (*g))) || !(done = calloc (n, sizeof (*done))))) {
        goto nomem;
    }
    for (size_t i = 0; i < n; i++) {
        size_t gn = 0;

        if (done[i]) {
            continue;
        }
        for (size_t j = i; j < n; j++) {
            if (!done[j] && same_group (&set->rec[i], &set->rec[j])) {
                g[gn++] = &set->rec[j];
                done[j] = true;
            }
        }
        if (render_group (&a, g, gn, flags) < 0) {
            goto nomem;
        }
    }
    if (a.n > 0) {
        qsort (a.v, a.n, sizeof (*a.v), by_severity);
    }
    if (!(arr = json_array ())) {
        goto nomem;
    }
    for (size_t i = 0; i < a.n; i++) {
        if (i < FM_API_MAX_HEALTH && json_array_append (arr, a.v[i].o) < 0) {
            goto nomem;
        }
    }
    if (dropped) {
        *dropped = a.n > FM_API_MAX_HEALTH ? a.n - FM_API_MAX_HEALTH : 0;
    }
    for (size_t i = 0; i < a.n; i++) {
        json_decref (a.v[i].o);
    }
    free (a.v);
    free (g);
    free (done);
    return arr;
nomem:
    for (size_t i = 0; i < a.n; i++) {
        json_decref (a.v[i].o);
    }
    free (a.v);
    free (g);
    free (done);
    json_decref (arr);
    errno = ENOMEM;
    return NULL;
}
