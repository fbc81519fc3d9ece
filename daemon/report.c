/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm/api.h"
#include "health_map.h"
#include "hostlist.h"
#include "report.h"

typedef struct ctx {
    const char *path; /* JSON path of the object being checked, "" at the top */
    fm_invalid_t *inv;
    /* When path is NULL the path is parent's + "." + seg (+ "[idx]" when idx >= 0),
     * rendered only for an error: the streaming parser names every entry.
     */
    const struct ctx *parent;
    const char *seg;
    long idx;
} ctx_t;

static void render (const ctx_t *c, char *buf, size_t size)
{
    size_t n;

    if (c->path) {
        snprintf (buf, size, "%s", c->path);
        return;
    }
    render (c->parent, buf, size);
    n = strlen (buf);
    if (c->idx >= 0) {
        snprintf (buf + n, size - n, "%s%s[%ld]", n ? "." : "", c->seg, c->idx);
    } else {
        snprintf (buf + n, size - n, "%s%s", n ? "." : "", c->seg);
    }
}

static int vfail (ctx_t *c, const char *key, const char *fmt, va_list ap)
    __attribute__ ((format (printf, 3, 0)));

static int vfail (ctx_t *c, const char *key, const char *fmt, va_list ap)
{
    char msg[200], path[192];

    render (c, path, sizeof (path));
    if (key) {
        snprintf (c->inv->field,
                  sizeof (c->inv->field),
                  "%s%s%s",
                  path,
                  path[0] ? "." : "",
                  key);
    } else {
        snprintf (c->inv->field, sizeof (c->inv->field), "%s", path);
    }
    vsnprintf (msg, sizeof (msg), fmt, ap);
    snprintf (c->inv->message,
              sizeof (c->inv->message),
              "%s: %s",
              c->inv->field[0] ? c->inv->field : "body",
              msg);
    errno = EINVAL;
    return -1;
}

static int fail (ctx_t *c, const char *key, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

static int fail (ctx_t *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start (ap, fmt);
    rc = vfail (c, key, fmt, ap);
    va_end (ap);
    return rc;
}

static int too_large (ctx_t *c, const char *key, size_t max)
{
    c->inv->too_large = true;
    return fail (c, key, "more than %zu entries", max);
}

static int check_object (ctx_t *c, json_t *o, const char *const allowed[])
{
    const char *key;
    json_t *v;

    if (!json_is_object (o)) {
        return fail (c, NULL, "must be an object");
    }
    json_object_foreach (o, key, v) {
        size_t i;
        for (i = 0; allowed[i]; i++) {
            if (strcmp (key, allowed[i]) == 0) {
                break;
            }
        }
        if (!allowed[i]) {
            return fail (c, key, "unknown field");
        }
    }
    return 0;
}

/* Returns 1 when found, 0 when absent and optional, -1 on error. */
static int get_int (ctx_t *c,
                    json_t *o,
                    const char *key,
                    bool required,
                    int64_t min,
                    int64_t max,
                    int64_t *out)
{
    json_t *v = json_object_get (o, key);
    json_int_t x;

    if (!v) {
        return required ? fail (c, key, "required") : 0;
    }
    if (!json_is_integer (v)) {
        return fail (c, key, "must be an integer");
    }
    x = json_integer_value (v);
    if (x < min) {
        return fail (c, key, "must be >= %lld", (long long)min);
    }
    if (x > max) {
        return fail (c, key, "must be <= %lld", (long long)max);
    }
    *out = x;
    return 1;
}

static int
get_num (ctx_t *c, json_t *o, const char *key, bool required, double min, double max)
{
    json_t *v = json_object_get (o, key);
    double x;

    if (!v) {
        return required ? fail (c, key, "required") : 0;
    }
    if (!json_is_number (v)) {
        return fail (c, key, "must be a number");
    }
    x = json_number_value (v);
    if (!isfinite (x)) {
        return fail (c, key, "must be finite");
    }
    if (x < min || x > max) {
        return fail (c, key, "must be within [%g, %g]", min, max);
    }
    return 1;
}

static int get_bool (ctx_t *c, json_t *o, const char *key, bool required)
{
    json_t *v = json_object_get (o, key);

    if (!v) {
        return required ? fail (c, key, "required") : 0;
    }
    if (!json_is_boolean (v)) {
        return fail (c, key, "must be true or false");
    }
    return 1;
}

static int get_str (ctx_t *c,
                    json_t *o,
                    const char *key,
                    bool required,
                    size_t minlen,
                    size_t maxlen,
                    const char **out)
{
    json_t *v = json_object_get (o, key);
    size_t len;

    if (!v) {
        return required ? fail (c, key, "required") : 0;
    }
    if (!json_is_string (v)) {
        return fail (c, key, "must be a string");
    }
    len = json_string_length (v);
    if (strlen (json_string_value (v)) != len) {
        return fail (c, key, "must not contain NUL");
    }
    if (len < minlen || len > maxlen) {
        return fail (c, key, "length must be within [%zu, %zu]", minlen, maxlen);
    }
    for (const char *p = json_string_value (v); *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            return fail (c, key, "must not contain control characters");
        }
    }
    if (out) {
        *out = json_string_value (v);
    }
    return 1;
}

static int
get_enum (ctx_t *c, json_t *o, const char *key, const char *const choices[], int *index)
{
    const char *s;

    if (get_str (c, o, key, true, 1, 63, &s) < 0) {
        return -1;
    }
    for (int i = 0; choices[i]; i++) {
        if (strcmp (s, choices[i]) == 0) {
            if (index) {
                *index = i;
            }
            return 1;
        }
    }
    return fail (c, key, "unknown value '%s'", s);
}

char *fm_json_dump (const json_t *o)
{
    size_t n = json_dumpb (o, NULL, 0, JSON_COMPACT);
    char *s;

    if (n == 0 || !(s = malloc (n + 1))) {
        errno = ENOMEM;
        return NULL;
    }
    if (json_dumpb (o, s, n, JSON_COMPACT) != n) {
        free (s);
        errno = ENOMEM;
        return NULL;
    }
    s[n] = '\0';
    return s;
}

bool fm_node_name_valid (const char *s)
{
    size_t len;

    if (!s || (len = strlen (s)) == 0 || len > FM_API_NODE_MAX) {
        return false;
    }
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')
          || (s[0] >= '0' && s[0] <= '9'))) {
        return false;
    }
    for (const char *p = s; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-')) {
            return false;
        }
    }
    return true;
}

bool fm_ip_literal_valid (const char *s)
{
    unsigned char buf[16];

    return s && (inet_pton (AF_INET, s, buf) == 1 || inet_pton (AF_INET6, s, buf) == 1);
}

static int get_node (ctx_t *c, json_t *o, const char *key, const char **out)
{
    if (get_str (c, o, key, true, 1, FM_API_NODE_MAX, out) < 0) {
        return -1;
    }
    if (!fm_node_name_valid (*out)) {
        return fail (c, key, "not a valid node name");
    }
    return 0;
}

/* An object of at most FM_HEALTH_MAP_MAX names (1..63 characters, no control
 * characters) to integers within [min, max] (gpu.counters, gpu.gauges,
 * counters.counters) or, with min > max, to strings of 1..63 (counters.attrs).
 */
#define FM_HEALTH_MAP_MAX 32

static int get_map (ctx_t *c, json_t *o, const char *key, int64_t min, int64_t max)
{
    json_t *m = json_object_get (o, key), *v;
    const char *name;

    if (!m) {
        return fail (c, key, "required");
    }
    if (!json_is_object (m)) {
        return fail (c, key, "must be an object");
    }
    if (json_object_size (m) > FM_HEALTH_MAP_MAX) {
        return fail (c, key, "more than %d entries", FM_HEALTH_MAP_MAX);
    }
    json_object_foreach (m, name, v) {
        size_t len = strlen (name);
        bool ok = len >= 1 && len <= 63;

        for (const char *p = name; ok && *p; p++) {
            ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
        }
        if (!ok) {
            return fail (c, key, "names must be 1..63 printable characters");
        }
        if (min > max) {
            ctx_t sub = {.parent = c, .seg = key, .idx = -1, .inv = c->inv};
            if (get_str (&sub, m, name, true, 1, 63, NULL) < 0) {
                return -1;
            }
        } else if (!json_is_integer (v) || json_integer_value (v) < min
                   || json_integer_value (v) > max) {
            return fail (c,
                         key,
                         "'%s' must be an integer within [%lld, %lld]",
                         name,
                         (long long)min,
                         (long long)max);
        }
    }
    return 0;
}

/* "mlx5_1:1,mlx5_3:1": what NCCL_IB_HCA was told to leave out (doc/health.md). */
static int get_hca_list (ctx_t *c, json_t *o, const char *key)
{
    const char *s;

    if (get_str (c, o, key, true, 3, 4095, &s) < 0) {
        return -1;
    }
    for (const char *p = s; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'
              || *p == ':' || *p == ',')) {
            return fail (c, key, "want DEVICE:PORT[,DEVICE:PORT...]");
        }
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
    static const char *const nic[] = {"type",
                                      "name",
                                      "link_up",
                                      "speed_mbps",
                                      "rx_errors",
                                      "tx_errors",
                                      "rx_dropped",
                                      "tx_dropped",
                                      "carrier_changes",
                                      NULL};
    static const char *const ib[] = {"type",
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
    static const char *const pcie[] = {
        "type", "device", "width", "max_width", "speed_gts", "max_speed_gts", NULL};
    static const char *const clk[] = {
        "type", "source", "ntp_synchronized", "ntp_offset_ns", NULL};
    static const char *const gpu[] = {
        "type", "vendor", "device", "class", "counters", "gauges", NULL};
    static const char *const xid[] = {
        "type", "device", "xid", "count", "class", "action", NULL};
    static const char *const gpu_nic[] = {"type", "gpu", "nic", "path", NULL};
    static const char *const counters[] = {
        "type", "kind", "device", "port", "counters", "attrs", NULL};
    static const char *const steer[] = {"type", "var", "exclude", NULL};
    static const char *const ib_states[] = {
        "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER", NULL};
    static const char *const vendors[] = {"nvidia", "amd", "unknown", NULL};
    static const char *const paths[] = {"PIX", "PXB", "PHB", "NODE", "SYS", NULL};
    static const char *const kinds[] = {"nic", "ib_port", NULL};
    static const char *const vars[] = {"NCCL_IB_HCA", NULL};
    int type;
    int64_t x;

    if (!json_is_object (o)) {
        return fail (c, NULL, "must be an object");
    }
    if (get_enum (c, o, "type", types, &type) < 0) {
        return -1;
    }
    switch (type) {
    case 0:
        if (check_object (c, o, nic) < 0
            || get_str (c, o, "name", true, 1, 15, NULL) < 0
            || get_bool (c, o, "link_up", true) < 0
            || get_int (c, o, "speed_mbps", true, 0, 10000000, &x) < 0) {
            return -1;
        }
        for (int i = 4; nic[i]; i++) {
            if (get_int (c, o, nic[i], true, 0, INT64_MAX, &x) < 0) {
                return -1;
            }
        }
        return 0;
    case 1:
        if (check_object (c, o, ib) < 0
            || get_str (c, o, "device", true, 1, 63, NULL) < 0
            || get_int (c, o, "port", true, 1, 255, &x) < 0
            || get_enum (c, o, "state", ib_states, NULL) < 0
            || get_str (c, o, "phys_state", true, 1, 31, NULL) < 0
            || get_num (c, o, "rate_gbps", true, 0, 1e6) < 0) {
            return -1;
        }
        for (int i = 6; ib[i]; i++) {
            if (get_int (c, o, ib[i], true, 0, INT64_MAX, &x) < 0) {
                return -1;
            }
        }
        return 0;
    case 2:
        if (check_object (c, o, pcie) < 0
            || get_str (c, o, "device", true, 1, 63, NULL) < 0
            || get_int (c, o, "width", true, 0, 32, &x) < 0
            || get_int (c, o, "max_width", true, 0, 32, &x) < 0
            || get_num (c, o, "speed_gts", true, 0, 1e4) < 0
            || get_num (c, o, "max_speed_gts", true, 0, 1e4) < 0) {
            return -1;
        }
        return 0;
    case 3:
        if (check_object (c, o, clk) < 0
            || get_str (c, o, "source", true, 1, 63, NULL) < 0
            || get_bool (c, o, "ntp_synchronized", true) < 0
            || get_int (c,
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
    case 4:
        if (check_object (c, o, gpu) < 0 || get_enum (c, o, "vendor", vendors, NULL) < 0
            || get_str (c, o, "device", true, 1, 63, NULL) < 0
            || get_enum (c, o, "class", fm_health_class_names, NULL) < 0
            || get_map (c, o, "counters", 0, INT64_MAX) < 0
            || get_map (c, o, "gauges", INT64_MIN, INT64_MAX) < 0) {
            return -1;
        }
        return 0;
    case 5:
        if (check_object (c, o, xid) < 0
            || get_str (c, o, "device", true, 1, 63, NULL) < 0
            || get_int (c, o, "xid", true, 0, UINT32_MAX, &x) < 0
            || get_int (c, o, "count", true, 1, INT64_MAX, &x) < 0
            || get_enum (c, o, "class", fm_health_class_names, NULL) < 0
            || get_str (c, o, "action", true, 1, 31, NULL) < 0) {
            return -1;
        }
        return 0;
    case 6:
        if (check_object (c, o, gpu_nic) < 0
            || get_str (c, o, "gpu", true, 1, 63, NULL) < 0
            || get_str (c, o, "nic", true, 1, 63, NULL) < 0
            || get_enum (c, o, "path", paths, NULL) < 0) {
            return -1;
        }
        return 0;
    case 7:
        if (check_object (c, o, counters) < 0
            || get_enum (c, o, "kind", kinds, NULL) < 0
            || get_str (c, o, "device", true, 1, 63, NULL) < 0
            || get_int (c, o, "port", true, 0, 255, &x) < 0
            || get_map (c, o, "counters", 1, INT64_MAX) < 0
            || get_map (c, o, "attrs", 1, 0) < 0) {
            return -1;
        }
        return 0;
    default:
        if (check_object (c, o, steer) < 0 || get_enum (c, o, "var", vars, NULL) < 0
            || get_hca_list (c, o, "exclude") < 0) {
            return -1;
        }
        return 0;
    }
}

static void window_free (fm_window_t *w)
{
    free (w->links);
    free (w->health_json);
}

/* POST /v1/reports is parsed in one pass straight into fm_report_t, without a
 * jansson document: with a thousand link entries per request, building the DOM
 * cost several times the rest of ingest. Only the small health arrays go
 * through jansson and the validators above.
 */
#define MAX_DEPTH 32

typedef struct {
    const char *start, *p, *end;
    char *strings; /* decoded strings; never longer in total than the input */
    size_t slen;
    fm_invalid_t *inv;
} lex_t;

static int syntax (lex_t *l, const char *what)
{
    l->inv->field[0] = '\0';
    l->inv->syntax = true;
    snprintf (l->inv->message,
              sizeof (l->inv->message),
              "body is not valid JSON: %s at offset %zu",
              what,
              (size_t)(l->p - l->start));
    errno = EINVAL;
    return -1;
}

static int peek (lex_t *l)
{
    while (l->p < l->end
           && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r')) {
        l->p++;
    }
    return l->p < l->end ? (unsigned char)*l->p : -1;
}

static int expect (lex_t *l, char c, const char *what)
{
    if (peek (l) != c) {
        return syntax (l, what);
    }
    l->p++;
    return 0;
}

static int literal (lex_t *l, const char *word)
{
    size_t n = strlen (word);

    if ((size_t)(l->end - l->p) < n || memcmp (l->p, word, n) != 0) {
        return syntax (l, "invalid literal");
    }
    l->p += n;
    return 0;
}

/* Length of the valid UTF-8 sequence at p (p[0] >= 0x80), or -1. */
static int utf8_len (const unsigned char *p, const unsigned char *end)
{
    uint32_t cp;
    int n;

    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        n = 2;
        cp = p[0] & 0x1f;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3;
        cp = p[0] & 0x0f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4;
        cp = p[0] & 0x07;
    } else {
        return -1;
    }
    if (end - p < n) {
        return -1;
    }
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return -1;
        }
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff))
        || (cp >= 0xd800 && cp <= 0xdfff)) {
        return -1;
    }
    return n;
}

static int hex4 (lex_t *l, uint32_t *v)
{
    *v = 0;
    if (l->end - l->p < 4) {
        return syntax (l, "short \\u escape");
    }
    for (int i = 0; i < 4; i++) {
        char c = *l->p++;
        *v <<= 4;
        if (c >= '0' && c <= '9') {
            *v |= (uint32_t)(c - '0');
        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            *v |= (uint32_t)((c | 0x20) - 'a' + 10);
        } else {
            return syntax (l, "bad \\u escape");
        }
    }
    return 0;
}

static char *put_utf8 (char *o, uint32_t cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xc0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xe0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (char)(0xf0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    }
    return o;
}

/* Decode a string into l->strings; *out stays valid with the report. */
static int lex_string (lex_t *l, const char **out, size_t *len)
{
    char *o = l->strings + l->slen;
    char *first = o;

    if (peek (l) != '"') {
        return syntax (l, "expected a string");
    }
    l->p++;
    for (;;) {
        unsigned char c;
        if (l->p >= l->end) {
            return syntax (l, "unterminated string");
        }
        c = (unsigned char)*l->p;
        if (c == '"') {
            l->p++;
            break;
        }
        if (c < 0x20) {
            return syntax (l, "control character in a string");
        }
        if (c == '\\') {
            uint32_t cp;
            if (++l->p >= l->end) {
                return syntax (l, "unterminated string");
            }
            switch (*l->p++) {
            case '"':
                *o++ = '"';
                break;
            case '\\':
                *o++ = '\\';
                break;
            case '/':
                *o++ = '/';
                break;
            case 'b':
                *o++ = '\b';
                break;
            case 'f':
                *o++ = '\f';
                break;
            case 'n':
                *o++ = '\n';
                break;
            case 'r':
                *o++ = '\r';
                break;
            case 't':
                *o++ = '\t';
                break;
            case 'u':
                if (hex4 (l, &cp) < 0) {
                    return -1;
                }
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    uint32_t lo;
                    if (l->end - l->p < 2 || l->p[0] != '\\' || l->p[1] != 'u') {
                        return syntax (l, "lone surrogate");
                    }
                    l->p += 2;
                    if (hex4 (l, &lo) < 0) {
                        return -1;
                    }
                    if (lo < 0xdc00 || lo > 0xdfff) {
                        return syntax (l, "lone surrogate");
                    }
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    return syntax (l, "lone surrogate");
                }
                if (cp == 0) {
                    return syntax (l, "NUL in a string");
                }
                o = put_utf8 (o, cp);
                break;
            default:
                return syntax (l, "bad escape");
            }
        } else if (c >= 0x80) {
            int n =
                utf8_len ((const unsigned char *)l->p, (const unsigned char *)l->end);
            if (n < 0) {
                return syntax (l, "invalid UTF-8");
            }
            memcpy (o, l->p, (size_t)n);
            o += n;
            l->p += n;
        } else {
            *o++ = (char)c;
            l->p++;
        }
    }
    *o++ = '\0';
    l->slen = (size_t)(o - l->strings);
    *out = first;
    *len = (size_t)(o - first) - 1;
    return 0;
}

typedef struct {
    bool is_int;
    int64_t i;
    double d;
} num_t;

static int lex_number (lex_t *l, num_t *n)
{
    const char *s = l->p, *p = l->p;
    bool neg = false, frac = false;
    uint64_t v = 0;

    if (p < l->end && *p == '-') {
        neg = true;
        p++;
    }
    if (p >= l->end || *p < '0' || *p > '9') {
        return syntax (l, "invalid number");
    }
    if (*p == '0') {
        p++;
    } else {
        while (p < l->end && *p >= '0' && *p <= '9') {
            unsigned d = (unsigned)(*p++ - '0');
            if (v > (UINT64_MAX - d) / 10) {
                l->p = s;
                return syntax (l, "integer out of range");
            }
            v = v * 10 + d;
        }
    }
    if (p < l->end && *p == '.') {
        frac = true;
        if (++p >= l->end || *p < '0' || *p > '9') {
            return syntax (l, "invalid number");
        }
        while (p < l->end && *p >= '0' && *p <= '9') {
            p++;
        }
    }
    if (p < l->end && (*p == 'e' || *p == 'E')) {
        frac = true;
        p++;
        if (p < l->end && (*p == '+' || *p == '-')) {
            p++;
        }
        if (p >= l->end || *p < '0' || *p > '9') {
            return syntax (l, "invalid number");
        }
        while (p < l->end && *p >= '0' && *p <= '9') {
            p++;
        }
    }
    l->p = p;
    n->is_int = !frac;
    if (!frac) {
        if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0)) {
            l->p = s;
            return syntax (l, "integer out of range");
        }
        n->i = neg ? (int64_t)(0 - v) : (int64_t)v;
        n->d = (double)n->i;
    } else {
        char buf[64];
        if ((size_t)(p - s) >= sizeof (buf)) {
            l->p = s;
            return syntax (l, "number too long");
        }
        memcpy (buf, s, (size_t)(p - s));
        buf[p - s] = '\0';
        n->d = strtod (buf, NULL);
        if (!isfinite (n->d)) {
            l->p = s;
            return syntax (l, "number out of range");
        }
    }
    return 0;
}

/* Check the syntax of any value and step over it. */
static int skip_value (lex_t *l, int depth)
{
    size_t save = l->slen;
    const char *s;
    size_t len;
    num_t n;
    int c = peek (l);

    if (depth > MAX_DEPTH) {
        return syntax (l, "nested too deeply");
    }
    switch (c) {
    case '"':
        if (lex_string (l, &s, &len) < 0) {
            return -1;
        }
        l->slen = save;
        return 0;
    case '{':
    case '[':
        l->p++;
        if (peek (l) == (c == '{' ? '}' : ']')) {
            l->p++;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                if (lex_string (l, &s, &len) < 0
                    || expect (l, ':', "expected ':'") < 0) {
                    return -1;
                }
                l->slen = save;
            }
            if (skip_value (l, depth + 1) < 0) {
                return -1;
            }
            if (peek (l) == ',') {
                l->p++;
                continue;
            }
            return expect (l, c == '{' ? '}' : ']', "expected ',' or the end");
        }
    case 't':
        return literal (l, "true");
    case 'f':
        return literal (l, "false");
    case 'n':
        return literal (l, "null");
    default:
        return lex_number (l, &n);
    }
}

/* After '{': 1 with the key in buf and ':' consumed, 0 at '}', -1 on error. */
static int next_key (lex_t *l, bool *first, char *buf, size_t size)
{
    size_t save = l->slen;
    const char *key;
    size_t len;
    int c = peek (l);

    if (c == '}') {
        l->p++;
        return 0;
    }
    if (!*first) {
        if (c != ',') {
            return syntax (l, "expected ',' or '}'");
        }
        l->p++;
    }
    *first = false;
    if (lex_string (l, &key, &len) < 0 || expect (l, ':', "expected ':'") < 0) {
        return -1;
    }
    if (len >= size) {
        len = size - 1;
    }
    memcpy (buf, key, len);
    buf[len] = '\0';
    l->slen = save;
    return 1;
}

/* After '[': 1 when an element follows, 0 at ']', -1 on error. */
static int next_elem (lex_t *l, bool *first)
{
    int c = peek (l);

    if (c == ']') {
        l->p++;
        return 0;
    }
    if (!*first) {
        if (c != ',') {
            return syntax (l, "expected ',' or ']'");
        }
        l->p++;
    }
    *first = false;
    return 1;
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
static int once (lex_t *l, unsigned *seen, int idx)
{
    if (*seen & (1u << idx)) {
        return syntax (l, "duplicate object key");
    }
    *seen |= 1u << idx;
    return 0;
}

/* A wrong type is the client's field error; what is no JSON value at all is a
 * syntax error.
 */
static int wrong_type (lex_t *l, ctx_t *c, const char *key, const char *want)
{
    int ch = peek (l);

    if (ch == -1 || !strchr ("\"{[tfn-0123456789", ch)) {
        return syntax (l, "invalid value");
    }
    return fail (c, key, "%s", want);
}

static int read_int (lex_t *l, ctx_t *c, const char *key, int64_t *out)
{
    int ch = peek (l);
    num_t n;

    if (ch != '-' && !(ch >= '0' && ch <= '9')) {
        return wrong_type (l, c, key, "must be an integer");
    }
    if (lex_number (l, &n) < 0) {
        return -1;
    }
    if (!n.is_int) {
        return fail (c, key, "must be an integer");
    }
    *out = n.i;
    return 0;
}

static int read_str (lex_t *l, ctx_t *c, const char *key, const char **out, size_t *len)
{
    if (peek (l) != '"') {
        return wrong_type (l, c, key, "must be a string");
    }
    return lex_string (l, out, len);
}

static int read_bool (lex_t *l, ctx_t *c, const char *key, bool *out)
{
    int ch = peek (l);

    if (ch != 't' && ch != 'f') {
        return wrong_type (l, c, key, "must be a boolean");
    }
    if (literal (l, ch == 't' ? "true" : "false") < 0) {
        return -1;
    }
    *out = ch == 't';
    return 0;
}

static int range (ctx_t *c, const char *key, int64_t v, int64_t min, int64_t max)
{
    if (v < min) {
        return fail (c, key, "must be >= %lld", (long long)min);
    }
    if (v > max) {
        return fail (c, key, "must be <= %lld", (long long)max);
    }
    return 0;
}

/* Check the presence of every field in `required` (a bit mask) in order. */
static int required (ctx_t *c, unsigned seen, unsigned mask, const char *const names[])
{
    for (int i = 0; names[i]; i++) {
        if ((mask & (1u << i)) && !(seen & (1u << i))) {
            return fail (c, names[i], "required");
        }
    }
    return 0;
}

static int node_name (ctx_t *c, const char *key, const char *s, size_t len)
{
    if (len < 1 || len > FM_API_NODE_MAX) {
        return fail (c, key, "length must be within [1, %d]", FM_API_NODE_MAX);
    }
    if (!fm_node_name_valid (s)) {
        return fail (c, key, "not a valid node name");
    }
    return 0;
}

static int stream_quant (
    lex_t *l, ctx_t *c, const char *key, int64_t min, int64_t max, fm_quant_t *q)
{
    static const char *const fields[] = {"p50", "p90", "p99", "max", NULL};
    ctx_t sub = {NULL, c->inv, c, key, -1};
    char k[64];
    int64_t vals[4] = {0};
    unsigned seen = 0;
    bool first = true;
    int rc;

    if (peek (l) == 'n') {
        q->present = false;
        return literal (l, "null");
    }
    if (peek (l) != '{') {
        return fail (c, key, "must be an object");
    }
    l->p++;
    while ((rc = next_key (l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            return fail (&sub, k, "unknown field");
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
            return fail (&sub, fields[i], "must be >= %s", fields[i - 1]);
        }
    }
    q->present = true;
    q->p50 = vals[0];
    q->p90 = vals[1];
    q->p99 = vals[2];
    q->max = vals[3];
    return 0;
}

static int stream_link (lex_t *l, ctx_t *c, fm_link_rec_t *r)
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

    if (peek (l) != '{') {
        return fail (c, NULL, "must be an object");
    }
    l->p++;
    while ((rc = next_key (l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            return fail (c, k, "unknown field");
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
                return fail (c, k, "unknown value '%.32s'", s);
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
        return fail (c, "links", "out of memory");
    }
    for (size_t i = 0; i < w->nlinks; i++) {
        size_t j = link_hash (&w->links[i]) & (size - 1);
        while (slots[j]) {
            const fm_link_rec_t *o = &w->links[slots[j] - 1];
            if (o->dir == w->links[i].dir && strcmp (o->peer, w->links[i].peer) == 0) {
                free (slots);
                sub.idx = (long)i;
                return fail (&sub, "peer", "duplicate (peer, dir) in this window");
            }
            j = (j + 1) & (size - 1);
        }
        slots[j] = (uint32_t)i + 1;
    }
    free (slots);
    return 0;
}

static int stream_health (lex_t *l, ctx_t *c, fm_window_t *w)
{
    const char *from = NULL;
    char prefix[192], path[224];
    ctx_t sub = {.path = path, .inv = c->inv};
    json_error_t jerr;
    json_t *a, *v;
    size_t i;

    if (peek (l) != '[') {
        return fail (c, "health", "must be an array");
    }
    from = l->p;
    if (skip_value (l, 2) < 0) {
        return -1;
    }
    if (!(a = json_loadb (
              from, (size_t)(l->p - from), JSON_REJECT_DUPLICATES, &jerr))) {
        l->p = from + jerr.position;
        return syntax (l, jerr.text);
    }
    if (json_array_size (a) > FM_API_MAX_HEALTH) {
        json_decref (a);
        return too_large (c, "health", FM_API_MAX_HEALTH);
    }
    render (c, prefix, sizeof (prefix));
    json_array_foreach (a, i, v) {
        snprintf (path, sizeof (path), "%s.health[%zu]", prefix, i);
        if (parse_health (&sub, v) < 0) {
            json_decref (a);
            return -1;
        }
    }
    w->health_json = fm_json_dump (a);
    json_decref (a);
    if (!w->health_json) {
        return fail (c, "health", "out of memory");
    }
    return 0;
}

static int stream_links (lex_t *l, ctx_t *c, fm_window_t *w)
{
    ctx_t sub = {NULL, c->inv, c, "links", 0};
    size_t cap = 0;
    bool first = true;
    int rc;

    if (peek (l) != '[') {
        return fail (c, "links", "must be an array");
    }
    l->p++;
    while ((rc = next_elem (l, &first)) == 1) {
        if (w->nlinks == FM_API_MAX_LINKS) {
            return too_large (c, "links", FM_API_MAX_LINKS);
        }
        if (w->nlinks == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            fm_link_rec_t *n = realloc (w->links, ncap * sizeof (*n));
            if (!n) {
                return fail (c, "links", "out of memory");
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

static int stream_clock (lex_t *l, ctx_t *c, fm_window_t *w)
{
    static const char *const fields[] = {"offset_ns", "error_ns", "drift_ppb", NULL};
    ctx_t sub = {NULL, c->inv, c, "clock", -1};
    char k[64];
    unsigned seen = 0;
    bool first = true;
    int rc;

    if (peek (l) != '{') {
        return fail (&sub, NULL, "must be an object");
    }
    l->p++;
    while ((rc = next_key (l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            return fail (&sub, k, "unknown field");
        }
        if (once (l, &seen, i) < 0) {
            return -1;
        }
        if (i == 2) {
            num_t n;
            int ch = peek (l);
            if (ch != '-' && !(ch >= '0' && ch <= '9')) {
                return wrong_type (l, &sub, k, "must be a number");
            }
            if (lex_number (l, &n) < 0) {
                return -1;
            }
            w->clock_drift_ppb = n.is_int ? (double)n.i : n.d;
            if (!(fabs (w->clock_drift_ppb) <= FM_WINDOW_DRIFT_MAX_PPB)) {
                return fail (&sub, k, "must be within [-1e6, 1e6]");
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

static int stream_drops (lex_t *l, ctx_t *c, fm_window_t *w)
{
    static const char *const fields[] = {FM_API_PROBE_DROP_REASONS, NULL};
    ctx_t sub = {NULL, c->inv, c, "probe_drops", -1};
    char k[64];
    unsigned seen = 0;
    bool first = true;
    int rc;

    if (peek (l) != '{') {
        return fail (&sub, NULL, "must be an object");
    }
    l->p++;
    while ((rc = next_key (l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            return fail (&sub, k, "unknown field");
        }
        if (once (l, &seen, i) < 0 || read_int (l, &sub, k, &w->probe_drops[i]) < 0
            || range (&sub, k, w->probe_drops[i], 0, FM_API_COUNT_MAX) < 0) {
            return -1;
        }
    }
    return rc < 0 ? -1 : 0;
}

static int stream_window (lex_t *l, ctx_t *c, int64_t now_ns, fm_window_t *w)
{
    static const char *const fields[] = {
        "seq", "start_ns", "end_ns", "clock", "links", "health", "probe_drops", NULL};
    unsigned seen = 0;
    bool first = true;
    char k[64];
    int rc;

    if (peek (l) != '{') {
        return fail (c, NULL, "must be an object");
    }
    l->p++;
    while ((rc = next_key (l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            return fail (c, k, "unknown field");
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
        return fail (c, "end_ns", "more than a day in the future");
    }
    if (!w->health_json && !(w->health_json = strdup ("[]"))) {
        return fail (c, "health", "out of memory");
    }
    return 0;
}

int fm_report_parse (
    const char *body, size_t len, int64_t now_ns, fm_report_t *rep, fm_invalid_t *inv)
{
    static const char *const fields[] = {"job_id", "node", "windows", "final", NULL};
    fm_report_t r = {0};
    lex_t l = {
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
    if (peek (&l) != '{') {
        syntax (&l, "the body must be a JSON object");
        goto error;
    }
    l.p++;
    while ((rc = next_key (&l, &first, k, sizeof (k))) == 1) {
        int i = field_index (k, fields);
        if (i < 0) {
            fail (&c, k, "unknown field");
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
        if (peek (&l) != '[') {
            fail (&c, k, "must be an array");
            goto error;
        }
        l.p++;
        bool efirst = true;
        while ((rc = next_elem (&l, &efirst)) == 1) {
            if (r.nwindows == FM_API_MAX_WINDOWS) {
                too_large (&c, "windows", FM_API_MAX_WINDOWS);
                goto error;
            }
            if (r.nwindows == cap) {
                size_t ncap = cap ? cap * 2 : 16;
                fm_window_t *n = realloc (r.windows, ncap * sizeof (*n));
                if (!n) {
                    fail (&c, "windows", "out of memory");
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
    if (peek (&l) != -1) {
        syntax (&l, "trailing characters after the object");
        goto error;
    }
    if (required (&c, seen, 0x7, fields) < 0
        || range (&c, "job_id", r.job_id, 1, FM_API_JOB_ID_MAX) < 0
        || node_name (&c, "node", r.node, nodelen) < 0) {
        goto error;
    }
    if (r.nwindows == 0) {
        fail (&c, "windows", "must not be empty");
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

void fm_report_release (fm_report_t *rep)
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
static int parse_nic (ctx_t *c, json_t *o)
{
    static const char *const fields[] = {
        "name", "addr", "kind", "speed_mbps", "device", NULL};
    static const char *const kinds[] = {"ethernet", "infiniband", "other", NULL};
    const char *addr;
    int64_t x;
    int rc;

    if (check_object (c, o, fields) < 0 || get_str (c, o, "name", true, 1, 15, NULL) < 0
        || get_enum (c, o, "kind", kinds, NULL) < 0
        || get_int (c, o, "speed_mbps", false, 0, 10000000, &x) < 0
        || get_str (c, o, "device", false, 1, 63, NULL) < 0
        || (rc = get_str (c, o, "addr", false, 1, 63, &addr)) < 0) {
        return -1;
    }
    if (rc == 1 && !fm_ip_literal_valid (addr)) {
        return fail (c, "addr", "not an IPv4 or IPv6 address");
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
    ctx_t c = {.path = "", .inv = inv};
    ctx_t sub = {.path = path, .inv = inv};
    json_t *nics, *v;
    size_t i;
    int rc;

    memset (inv, 0, sizeof (*inv));
    if (check_object (&c, root, fields) < 0
        || get_int (&c, root, "job_id", true, 1, FM_API_JOB_ID_MAX, &r.job_id) < 0
        || get_node (&c, root, "node", &r.node) < 0
        || get_int (&c, root, "user_id", true, 0, FM_API_UID_MAX, &r.user_id) < 0
        || (rc = get_str (
                &c, root, "job_nodes", false, 1, FM_API_JOB_NODES_MAX, &r.job_nodes))
               < 0
        || get_str (&c, root, "probe_addr", true, 1, 63, &r.probe_addr) < 0
        || get_int (&c, root, "probe_port", true, 1, 65535, &r.probe_port) < 0) {
        return -1;
    }
    if (!fm_ip_literal_valid (r.probe_addr)) {
        return fail (&c, "probe_addr", "not an IPv4 or IPv6 address");
    }
    if (json_object_get (root, "mode")) {
        int mode;
        if (get_enum (&c, root, "mode", modes, &mode) < 0) {
            return -1;
        }
        r.mode = (fm_job_mode_t)mode;
    }
    if (rc == 1) {
        fm_error_t err;
        fm_hostlist_t *hl = fm_hostlist_expand (r.job_nodes, 65536, &err);
        if (!hl) {
            return fail (&c, "job_nodes", "%s", err.text);
        }
        r.expected = (int64_t)fm_hostlist_count (hl);
        if (fm_hostlist_find (hl, r.node) < 0) {
            fm_hostlist_destroy (hl);
            return fail (&c, "job_nodes", "does not contain node '%s'", r.node);
        }
        fm_hostlist_destroy (hl);
    }
    nics = json_object_get (root, "nics");
    if (nics) {
        if (!json_is_array (nics)) {
            return fail (&c, "nics", "must be an array");
        }
        if (json_array_size (nics) > FM_API_MAX_NICS) {
            return too_large (&c, "nics", FM_API_MAX_NICS);
        }
        json_array_foreach (nics, i, v) {
            snprintf (path, sizeof (path), "nics[%zu]", i);
            if (parse_nic (&sub, v) < 0) {
                return -1;
            }
        }
    }
    if (!(r.nics_json = nics ? fm_json_dump (nics) : strdup ("[]"))) {
        return fail (&c, "nics", "out of memory");
    }
    *reg = r;
    return 0;
}

const char *fm_job_mode_name (fm_job_mode_t mode)
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
