/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "fm/api.h"
#include "health_map.h"
#include "jsonlex.h"
#include "report_parse.h"
#include "validate.h"

/* POST /v1/reports is parsed in one pass straight into fm_report_t, without a
 * jansson document: with a thousand link entries per request, building the DOM
 * cost several times the rest of ingest. Only the small health arrays go
 * through jansson and the validators of validate.c.
 */

/* One validator per health entry type (doc/health.md); o is an object. */
typedef fm_validate_ctx_t ctx_t;

static int health_nic (ctx_t *c, json_t *o)
{
    static const char *const fields[] = {"type",
                                         "name",
                                         "link_up",
                                         "speed_mbps",
                                         "rx_errors",
                                         "tx_errors",
                                         "rx_dropped",
                                         "tx_dropped",
                                         "carrier_changes",
                                         NULL};
    int64_t x;

    if (fm_validate_object (c, o, fields) < 0
        || fm_validate_str (c, o, "name", true, 1, 15, NULL) < 0
        || fm_validate_bool (c, o, "link_up", true) < 0
        || fm_validate_int (c, o, "speed_mbps", true, 0, 10000000, &x) < 0) {
        return -1;
    }
    for (int i = 4; fields[i]; i++) {
        if (fm_validate_int (c, o, fields[i], true, 0, INT64_MAX, &x) < 0) {
            return -1;
        }
    }
    return 0;
}

static int health_ib_port (ctx_t *c, json_t *o)
{
    static const char *const fields[] = {"type",
                                         "device",
                                         "port",
                                         "state",
                                         "phys_state",
                                         "rate_gbps",
                                         "symbol_error",
                                         "link_error_recovery",
                                         "link_downed",
                                         "port_rcv_errors",
                                         "port_xmit_discards",
                                         "port_xmit_wait",
                                         NULL};
    static const char *const states[] = {
        "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER", NULL};
    int64_t x;

    if (fm_validate_object (c, o, fields) < 0
        || fm_validate_str (c, o, "device", true, 1, 63, NULL) < 0
        || fm_validate_int (c, o, "port", true, 1, 255, &x) < 0
        || fm_validate_enum (c, o, "state", states, NULL) < 0
        || fm_validate_str (c, o, "phys_state", true, 1, 31, NULL) < 0
        || fm_validate_num (c, o, "rate_gbps", true, 0, 1e6) < 0) {
        return -1;
    }
    for (int i = 6; fields[i]; i++) {
        if (fm_validate_int (c, o, fields[i], true, 0, INT64_MAX, &x) < 0) {
            return -1;
        }
    }
    return 0;
}

static int health_pcie (ctx_t *c, json_t *o)
{
    static const char *const fields[] = {
        "type", "device", "width", "max_width", "speed_gts", "max_speed_gts", NULL};
    int64_t x;

    if (fm_validate_object (c, o, fields) < 0
        || fm_validate_str (c, o, "device", true, 1, 63, NULL) < 0
        || fm_validate_int (c, o, "width", true, 0, 32, &x) < 0
        || fm_validate_int (c, o, "max_width", true, 0, 32, &x) < 0
        || fm_validate_num (c, o, "speed_gts", true, 0, 1e4) < 0
        || fm_validate_num (c, o, "max_speed_gts", true, 0, 1e4) < 0) {
        return -1;
    }
    return 0;
}

static int health_clock_source (ctx_t *c, json_t *o)
{
    static const char *const fields[] = {
        "type", "source", "ntp_synchronized", "ntp_offset_ns", NULL};
    int64_t x;

    if (fm_validate_object (c, o, fields) < 0
        || fm_validate_str (c, o, "source", true, 1, 63, NULL) < 0
        || fm_validate_bool (c, o, "ntp_synchronized", true) < 0
        || fm_validate_int (c,
                            o,
                            "ntp_offset_ns",
                            false,
                            -FM_API_CLOCK_ABS_MAX_NS,
                            FM_API_CLOCK_ABS_MAX_NS,
                            &x)
               < 0) {
        return -1;
    }
    return 0;
}

static int health_gpu (ctx_t *c, json_t *o)
{
    static const char *const fields[] = {
        "type", "vendor", "device", "class", "counters", "gauges", NULL};
    static const char *const vendors[] = {"nvidia", "amd", "unknown", NULL};

    if (fm_validate_object (c, o, fields) < 0
        || fm_validate_enum (c, o, "vendor", vendors, NULL) < 0
        || fm_validate_str (c, o, "device", true, 1, 63, NULL) < 0
        || fm_validate_enum (c, o, "class", fm_health_map_class_names, NULL) < 0
        || fm_validate_map (c, o, "counters", 0, INT64_MAX) < 0
        || fm_validate_map (c, o, "gauges", INT64_MIN, INT64_MAX) < 0) {
        return -1;
    }
    return 0;
}

static int health_xid (ctx_t *c, json_t *o)
{
    static const char *const fields[] = {
        "type", "device", "xid", "count", "class", "action", NULL};
    int64_t x;

    if (fm_validate_object (c, o, fields) < 0
        || fm_validate_str (c, o, "device", true, 1, 63, NULL) < 0
        || fm_validate_int (c, o, "xid", true, 0, UINT32_MAX, &x) < 0
        || fm_validate_int (c, o, "count", true, 1, INT64_MAX, &x) < 0
        || fm_validate_enum (c, o, "class", fm_health_map_class_names, NULL) < 0
        || fm_validate_str (c, o, "action", true, 1, 31, NULL) < 0) {
        return -1;
    }
    return 0;
}

static int health_gpu_nic (ctx_t *c, json_t *o)
{
    static const char *const fields[] = {"type", "gpu", "nic", "path", NULL};
    static const char *const paths[] = {"PIX", "PXB", "PHB", "NODE", "SYS", NULL};

    if (fm_validate_object (c, o, fields) < 0
        || fm_validate_str (c, o, "gpu", true, 1, 63, NULL) < 0
        || fm_validate_str (c, o, "nic", true, 1, 63, NULL) < 0
        || fm_validate_enum (c, o, "path", paths, NULL) < 0) {
        return -1;
    }
    return 0;
}

static int health_counters (ctx_t *c, json_t *o)
{
    static const char *const fields[] = {
        "type", "kind", "device", "port", "counters", "attrs", NULL};
    static const char *const kinds[] = {"nic", "ib_port", NULL};
    int64_t x;

    if (fm_validate_object (c, o, fields) < 0
        || fm_validate_enum (c, o, "kind", kinds, NULL) < 0
        || fm_validate_str (c, o, "device", true, 1, 63, NULL) < 0
        || fm_validate_int (c, o, "port", true, 0, 255, &x) < 0
        || fm_validate_map (c, o, "counters", 1, INT64_MAX) < 0
        || fm_validate_map (c, o, "attrs", 1, 0) < 0) {
        return -1;
    }
    return 0;
}

static int health_steer (ctx_t *c, json_t *o)
{
    static const char *const fields[] = {"type", "var", "exclude", NULL};
    static const char *const vars[] = {"NCCL_IB_HCA", NULL};

    if (fm_validate_object (c, o, fields) < 0
        || fm_validate_enum (c, o, "var", vars, NULL) < 0
        || fm_validate_hca_list (c, o, "exclude") < 0) {
        return -1;
    }
    return 0;
}

static int parse_health (ctx_t *c, json_t *o)
{
    static const char *const types[] = {"nic",
                                        "ib_port",
                                        "pcie",
                                        "clock_source",
                                        "gpu",
                                        "xid",
                                        "gpu_nic",
                                        "counters",
                                        "steer",
                                        NULL};
    static int (*const check[]) (ctx_t *, json_t *) = {health_nic,
                                                       health_ib_port,
                                                       health_pcie,
                                                       health_clock_source,
                                                       health_gpu,
                                                       health_xid,
                                                       health_gpu_nic,
                                                       health_counters,
                                                       health_steer};
    int type;

    if (!json_is_object (o)) {
        return fm_validate_fail (c, NULL, "must be an object");
    }
    if (fm_validate_enum (c, o, "type", types, &type) < 0) {
        return -1;
    }
    return check[type](c, o);
}

static void window_free (fm_window_t *w)
{
    free (w->links);
    free (w->health_json);
}

static int field_index (const char *key, const char *const names[])
{
    for (int i = 0; names[i]; i++) {
        if (key[0] == names[i][0] && strcmp (key, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* Read the value of field `idx` once; seen is a bit mask. */
static int once (fm_jsonlex_t *l, unsigned *seen, int idx)
{
    if (*seen & (1u << idx)) {
        return fm_jsonlex_syntax (l, "duplicate object key");
    }
    *seen |= 1u << idx;
    return 0;
}

/* A wrong type is the client's field error; what is no JSON value at all is a
 * syntax error.
 */
static int wrong_type (fm_jsonlex_t *l, ctx_t *c, const char *key, const char *want)
{
    int ch = fm_jsonlex_peek (l);

    if (ch == -1 || !strchr ("\"{[tfn-0123456789", ch)) {
        return fm_jsonlex_syntax (l, "invalid value");
    }
    return fm_validate_fail (c, key, "%s", want);
}

static int read_int (fm_jsonlex_t *l, ctx_t *c, const char *key, int64_t *out)
{
    int ch = fm_jsonlex_peek (l);
    fm_jsonlex_num_t n;

    if (ch != '-' && !(ch >= '0' && ch <= '9')) {
        return wrong_type (l, c, key, "must be an integer");
    }
    if (fm_jsonlex_number (l, &n) < 0) {
        return -1;
    }
    if (!n.is_int) {
        return fm_validate_fail (c, key, "must be an integer");
    }
    *out = n.i;
    return 0;
}

static int
read_str (fm_jsonlex_t *l, ctx_t *c, const char *key, const char **out, size_t *len)
{
    if (fm_jsonlex_peek (l) != '"') {
        return wrong_type (l, c, key, "must be a string");
    }
    return fm_jsonlex_string (l, out, len);
}

static int read_bool (fm_jsonlex_t *l, ctx_t *c, const char *key, bool *out)
{
    int ch = fm_jsonlex_peek (l);

    if (ch != 't' && ch != 'f') {
        return wrong_type (l, c, key, "must be a boolean");
    }
    if (fm_jsonlex_literal (l, ch == 't' ? "true" : "false") < 0) {
        return -1;
    }
    *out = ch == 't';
    return 0;
}

static int range (ctx_t *c, const char *key, int64_t v, int64_t min, int64_t max)
{
    if (v < min) {
        return fm_validate_fail (c, key, "must be >= %lld", (long long)min);
    }
    if (v > max) {
        return fm_validate_fail (c, key, "must be <= %lld", (long long)max);
    }
    return 0;
}

/* Check the presence of every field in `required` (a bit mask) in order. */
static int required (ctx_t *c, unsigned seen, unsigned mask, const char *const names[])
{
    for (int i = 0; names[i]; i++) {
        if ((mask & (1u << i)) && !(seen & (1u << i))) {
            return fm_validate_fail (c, names[i], "required");
        }
    }
    return 0;
}

static int node_name (ctx_t *c, const char *key, const char *s, size_t len)
{
    if (len < 1 || len > FM_API_NODE_MAX) {
        return fm_validate_fail (
            c, key, "length must be within [1, %d]", FM_API_NODE_MAX);
    }
    if (!fm_validate_node_name (s)) {
        return fm_validate_fail (c, key, "not a valid node name");
    }
    return 0;
}

static int stream_quant (
    fm_jsonlex_t *l, ctx_t *c, const char *key, int64_t min, int64_t max, fm_quant_t *q)
{
    static const char *const fields[] = {"p50", "p90", "p99", "max", NULL};
    ctx_t sub = {NULL, c->inv, c, key, -1};
    char k[64];
    int64_t vals[4] = {0};
    unsigned seen = 0;
    bool first = true;
    int rc;

    if (fm_jsonlex_peek (l) == 'n') {
        q->present = false;
        return fm_jsonlex_literal (l, "null");
    }
    if (fm_jsonlex_peek (l) != '{') {
        return fm_validate_fail (c, key, "must be an object");
    }
    l->p++;
    while ((rc = fm_jsonlex_next_key (l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            return fm_validate_fail (&sub, k, "unknown field");
        }
        if (once (l, &seen, i) < 0 || read_int (l, &sub, k, &vals[i]) < 0) {
            return -1;
        }
    }
    if (rc < 0 || required (&sub, seen, 0xf, fields) < 0) {
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        if (range (&sub, fields[i], vals[i], min, max) < 0) {
            return -1;
        }
        if (i > 0 && vals[i] < vals[i - 1]) {
            return fm_validate_fail (&sub, fields[i], "must be >= %s", fields[i - 1]);
        }
    }
    q->present = true;
    q->p50 = vals[0];
    q->p90 = vals[1];
    q->p99 = vals[2];
    q->max = vals[3];
    return 0;
}

static int stream_link (fm_jsonlex_t *l, ctx_t *c, fm_link_rec_t *r)
{
    static const char *const fields[] = {"peer",
                                         "dir",
                                         "rtt_ns",
                                         "owd_ns",
                                         "sent",
                                         "received",
                                         "lost",
                                         "reordered",
                                         NULL};
    unsigned seen = 0;
    bool first = true;
    char k[64];
    const char *s;
    size_t len;
    int rc;

    if (fm_jsonlex_peek (l) != '{') {
        return fm_validate_fail (c, NULL, "must be an object");
    }
    l->p++;
    while ((rc = fm_jsonlex_next_key (l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            return fm_validate_fail (c, k, "unknown field");
        }
        if (once (l, &seen, i) < 0) {
            return -1;
        }
        switch (i) {
        case 0:
            if (read_str (l, c, k, &r->peer, &len) < 0
                || node_name (c, k, r->peer, len) < 0) {
                return -1;
            }
            break;
        case 1:
            if (read_str (l, c, k, &s, &len) < 0) {
                return -1;
            }
            if (strcmp (s, "out") == 0) {
                r->dir = FM_DIR_OUT;
            } else if (strcmp (s, "in") == 0) {
                r->dir = FM_DIR_IN;
            } else {
                return fm_validate_fail (c, k, "unknown value '%.32s'", s);
            }
            break;
        case 2:
            if (stream_quant (l, c, k, 0, FM_API_RTT_MAX_NS, &r->rtt) < 0) {
                return -1;
            }
            break;
        case 3:
            if (stream_quant (
                    l, c, k, -FM_API_OWD_ABS_MAX_NS, FM_API_OWD_ABS_MAX_NS, &r->owd)
                < 0) {
                return -1;
            }
            break;
        default:
            if (read_int (l,
                          c,
                          k,
                          i == 4   ? &r->sent
                          : i == 5 ? &r->received
                          : i == 6 ? &r->lost
                                   : &r->reordered)
                < 0) {
                return -1;
            }
            break;
        }
    }
    if (rc < 0 || required (c, seen, 0xff, fields) < 0
        || range (c, "sent", r->sent, 0, FM_API_COUNT_MAX) < 0
        || range (c, "received", r->received, 0, FM_API_COUNT_MAX) < 0
        || range (c, "lost", r->lost, 0, r->sent) < 0
        || range (c, "reordered", r->reordered, 0, r->received) < 0) {
        return -1;
    }
    return 0;
}

static unsigned link_hash (const fm_link_rec_t *r)
{
    unsigned h = 2166136261u ^ (unsigned)r->dir;

    for (const char *p = r->peer; *p; p++) {
        h = (h ^ (unsigned char)*p) * 16777619u;
    }
    return h;
}

/* Each (peer, dir) at most once per window. */
static int unique_links (ctx_t *c, fm_window_t *w)
{
    ctx_t sub = {NULL, c->inv, c, "links", 0};
    size_t size = 16;
    uint32_t *slots;

    while (size < 2 * w->nlinks) {
        size *= 2;
    }
    if (!(slots = calloc (size, sizeof (*slots)))) {
        return fm_validate_fail (c, "links", "out of memory");
    }
    for (size_t i = 0; i < w->nlinks; i++) {
        size_t j = link_hash (&w->links[i]) & (size - 1);
        while (slots[j]) {
            const fm_link_rec_t *o = &w->links[slots[j] - 1];
            if (o->dir == w->links[i].dir && strcmp (o->peer, w->links[i].peer) == 0) {
                free (slots);
                sub.idx = (long)i;
                return fm_validate_fail (
                    &sub, "peer", "duplicate (peer, dir) in this window");
            }
            j = (j + 1) & (size - 1);
        }
        slots[j] = (uint32_t)i + 1;
    }
    free (slots);
    return 0;
}

static int stream_health (fm_jsonlex_t *l, ctx_t *c, fm_window_t *w)
{
    const char *from = NULL;
    char prefix[192], path[224];
    ctx_t sub = {.path = path, .inv = c->inv};
    json_error_t jerr;
    json_t *a, *v;
    size_t i;

    if (fm_jsonlex_peek (l) != '[') {
        return fm_validate_fail (c, "health", "must be an array");
    }
    from = l->p;
    if (fm_jsonlex_skip_value (l, 2) < 0) {
        return -1;
    }
    if (!(a = json_loadb (
              from, (size_t)(l->p - from), JSON_REJECT_DUPLICATES, &jerr))) {
        l->p = from + jerr.position;
        return fm_jsonlex_syntax (l, jerr.text);
    }
    if (json_array_size (a) > FM_API_MAX_HEALTH) {
        json_decref (a);
        return fm_validate_too_large (c, "health", FM_API_MAX_HEALTH);
    }
    fm_validate_path (c, prefix, sizeof (prefix));
    json_array_foreach (a, i, v) {
        snprintf (path, sizeof (path), "%s.health[%zu]", prefix, i);
        if (parse_health (&sub, v) < 0) {
            json_decref (a);
            return -1;
        }
    }
    w->health_json = fm_arena_json_dump (a);
    json_decref (a);
    if (!w->health_json) {
        return fm_validate_fail (c, "health", "out of memory");
    }
    return 0;
}

static int stream_links (fm_jsonlex_t *l, ctx_t *c, fm_window_t *w)
{
    ctx_t sub = {NULL, c->inv, c, "links", 0};
    size_t cap = 0;
    bool first = true;
    int rc;

    if (fm_jsonlex_peek (l) != '[') {
        return fm_validate_fail (c, "links", "must be an array");
    }
    l->p++;
    while ((rc = fm_jsonlex_next_elem (l, &first)) == 1) {
        if (w->nlinks == FM_API_MAX_LINKS) {
            return fm_validate_too_large (c, "links", FM_API_MAX_LINKS);
        }
        if (w->nlinks == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            fm_link_rec_t *n = realloc (w->links, ncap * sizeof (*n));
            if (!n) {
                return fm_validate_fail (c, "links", "out of memory");
            }
            w->links = n;
            cap = ncap;
        }
        memset (&w->links[w->nlinks], 0, sizeof (w->links[0]));
        sub.idx = (long)w->nlinks;
        if (stream_link (l, &sub, &w->links[w->nlinks]) < 0) {
            return -1;
        }
        w->nlinks++;
    }
    return rc < 0 ? -1 : unique_links (c, w);
}

static int stream_clock (fm_jsonlex_t *l, ctx_t *c, fm_window_t *w)
{
    static const char *const fields[] = {"offset_ns", "error_ns", "drift_ppb", NULL};
    ctx_t sub = {NULL, c->inv, c, "clock", -1};
    char k[64];
    unsigned seen = 0;
    bool first = true;
    int rc;

    if (fm_jsonlex_peek (l) != '{') {
        return fm_validate_fail (&sub, NULL, "must be an object");
    }
    l->p++;
    while ((rc = fm_jsonlex_next_key (l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            return fm_validate_fail (&sub, k, "unknown field");
        }
        if (once (l, &seen, i) < 0) {
            return -1;
        }
        if (i == 2) {
            fm_jsonlex_num_t n;
            int ch = fm_jsonlex_peek (l);
            if (ch != '-' && !(ch >= '0' && ch <= '9')) {
                return wrong_type (l, &sub, k, "must be a number");
            }
            if (fm_jsonlex_number (l, &n) < 0) {
                return -1;
            }
            w->clock_drift_ppb = n.is_int ? (double)n.i : n.d;
            if (!(fabs (w->clock_drift_ppb) <= FM_WINDOW_DRIFT_MAX_PPB)) {
                return fm_validate_fail (&sub, k, "must be within [-1e6, 1e6]");
            }
            w->has_drift = true;
            continue;
        }
        if (read_int (l, &sub, k, i == 0 ? &w->clock_offset_ns : &w->clock_error_ns)
            < 0) {
            return -1;
        }
    }
    if (rc < 0 || required (&sub, seen, 0x3, fields) < 0
        || range (&sub,
                  "offset_ns",
                  w->clock_offset_ns,
                  -FM_API_CLOCK_ABS_MAX_NS,
                  FM_API_CLOCK_ABS_MAX_NS)
               < 0
        || range (&sub, "error_ns", w->clock_error_ns, 0, FM_API_CLOCK_ABS_MAX_NS)
               < 0) {
        return -1;
    }
    w->has_clock = true;
    return 0;
}

static int stream_drops (fm_jsonlex_t *l, ctx_t *c, fm_window_t *w)
{
    static const char *const fields[] = {FM_API_PROBE_DROP_REASONS, NULL};
    ctx_t sub = {NULL, c->inv, c, "probe_drops", -1};
    char k[64];
    unsigned seen = 0;
    bool first = true;
    int rc;

    if (fm_jsonlex_peek (l) != '{') {
        return fm_validate_fail (&sub, NULL, "must be an object");
    }
    l->p++;
    while ((rc = fm_jsonlex_next_key (l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            return fm_validate_fail (&sub, k, "unknown field");
        }
        if (once (l, &seen, i) < 0 || read_int (l, &sub, k, &w->probe_drops[i]) < 0
            || range (&sub, k, w->probe_drops[i], 0, FM_API_COUNT_MAX) < 0) {
            return -1;
        }
    }
    return rc < 0 ? -1 : 0;
}

static int stream_window (fm_jsonlex_t *l, ctx_t *c, int64_t now_ns, fm_window_t *w)
{
    static const char *const fields[] = {
        "seq", "start_ns", "end_ns", "clock", "links", "health", "probe_drops", NULL};
    unsigned seen = 0;
    bool first = true;
    char k[64];
    int rc;

    if (fm_jsonlex_peek (l) != '{') {
        return fm_validate_fail (c, NULL, "must be an object");
    }
    l->p++;
    while ((rc = fm_jsonlex_next_key (l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            return fm_validate_fail (c, k, "unknown field");
        }
        if (once (l, &seen, i) < 0) {
            return -1;
        }
        switch (i) {
        case 0:
        case 1:
        case 2:
            if (read_int (l,
                          c,
                          k,
                          i == 0   ? &w->seq
                          : i == 1 ? &w->start_ns
                                   : &w->end_ns)
                < 0) {
                return -1;
            }
            break;
        case 3:
            if (stream_clock (l, c, w) < 0) {
                return -1;
            }
            break;
        case 4:
            if (stream_links (l, c, w) < 0) {
                return -1;
            }
            break;
        case 6:
            if (stream_drops (l, c, w) < 0) {
                return -1;
            }
            break;
        default:
            if (stream_health (l, c, w) < 0) {
                return -1;
            }
            break;
        }
    }
    if (rc < 0 || required (c, seen, 0x17, fields) < 0
        || range (c, "seq", w->seq, 0, FM_API_SEQ_MAX) < 0
        || range (c,
                  "start_ns",
                  w->start_ns,
                  FM_API_TIME_MIN_NS,
                  now_ns + FM_API_FUTURE_SLACK_NS)
               < 0
        || range (c,
                  "end_ns",
                  w->end_ns,
                  w->start_ns + 1,
                  w->start_ns + FM_API_WINDOW_MAX_NS)
               < 0) {
        return -1;
    }
    if (w->end_ns > now_ns + FM_API_FUTURE_SLACK_NS) {
        return fm_validate_fail (c, "end_ns", "more than a day in the future");
    }
    if (!w->health_json && !(w->health_json = strdup ("[]"))) {
        return fm_validate_fail (c, "health", "out of memory");
    }
    return 0;
}

int fm_report_parse (
    const char *body, size_t len, int64_t now_ns, fm_report_t *rep, fm_invalid_t *inv)
{
    static const char *const fields[] = {"job_id", "node", "windows", "final", NULL};
    fm_report_t r = {0};
    fm_jsonlex_t l = {
        body ? body : "", body ? body : "", (body ? body : "") + len, NULL, 0, inv};
    char k[64];
    ctx_t c = {.path = "", .inv = inv};
    ctx_t sub = {NULL, inv, &c, "windows", 0};
    unsigned seen = 0;
    bool first = true;
    size_t cap = 0, nodelen = 0;
    int rc;

    memset (inv, 0, sizeof (*inv));
    if ((!body && len > 0) || !(r.strings = l.strings = malloc (len + 1))) {
        snprintf (inv->message, sizeof (inv->message), "out of memory");
        errno = ENOMEM;
        return -1;
    }
    if (fm_jsonlex_peek (&l) != '{') {
        fm_jsonlex_syntax (&l, "the body must be a JSON object");
        goto error;
    }
    l.p++;
    while ((rc = fm_jsonlex_next_key (&l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            fm_validate_fail (&c, k, "unknown field");
            goto error;
        }
        if (once (&l, &seen, i) < 0) {
            goto error;
        }
        if (i == 0) {
            if (read_int (&l, &c, k, &r.job_id) < 0) {
                goto error;
            }
            continue;
        }
        if (i == 1) {
            if (read_str (&l, &c, k, &r.node, &nodelen) < 0) {
                goto error;
            }
            continue;
        }
        if (i == 3) {
            if (read_bool (&l, &c, k, &r.final) < 0) {
                goto error;
            }
            continue;
        }
        if (fm_jsonlex_peek (&l) != '[') {
            fm_validate_fail (&c, k, "must be an array");
            goto error;
        }
        l.p++;
        bool efirst = true;
        while ((rc = fm_jsonlex_next_elem (&l, &efirst)) == 1) {
            if (r.nwindows == FM_API_MAX_WINDOWS) {
                fm_validate_too_large (&c, "windows", FM_API_MAX_WINDOWS);
                goto error;
            }
            if (r.nwindows == cap) {
                size_t ncap = cap ? cap * 2 : 16;
                fm_window_t *n = realloc (r.windows, ncap * sizeof (*n));
                if (!n) {
                    fm_validate_fail (&c, "windows", "out of memory");
                    goto error;
                }
                r.windows = n;
                cap = ncap;
            }
            memset (&r.windows[r.nwindows], 0, sizeof (r.windows[0]));
            sub.idx = (long)r.nwindows;
            rc = stream_window (&l, &sub, now_ns, &r.windows[r.nwindows]);
            /* Counted even on failure, so that the error path frees it. */
            r.nwindows++;
            if (rc < 0) {
                goto error;
            }
            r.nrecords += r.windows[r.nwindows - 1].nlinks;
        }
        if (rc < 0) {
            goto error;
        }
    }
    if (rc < 0) {
        goto error;
    }
    if (fm_jsonlex_peek (&l) != -1) {
        fm_jsonlex_syntax (&l, "trailing characters after the object");
        goto error;
    }
    if (required (&c, seen, 0x7, fields) < 0
        || range (&c, "job_id", r.job_id, 1, FM_API_JOB_ID_MAX) < 0
        || node_name (&c, "node", r.node, nodelen) < 0) {
        goto error;
    }
    if (r.nwindows == 0) {
        fm_validate_fail (&c, "windows", "must not be empty");
        goto error;
    }
    *rep = r;
    return 0;
error:
    for (size_t i = 0; i < r.nwindows; i++) {
        window_free (&r.windows[i]);
    }
    free (r.windows);
    free (r.strings);
    errno = EINVAL;
    return -1;
}

void fm_report_parse_release (fm_report_t *rep)
{
    if (rep) {
        int saved = errno;
        for (size_t i = 0; i < rep->nwindows; i++) {
            window_free (&rep->windows[i]);
        }
        free (rep->windows);
        free (rep->strings);
        memset (rep, 0, sizeof (*rep));
        errno = saved;
    }
}
