/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm/api.h"
#include "validate.h"

void fm_validate_path (const fm_validate_ctx_t *c, char *buf, size_t size)
{
    size_t n;

    if (c->path) {
        snprintf (buf, size, "%s", c->path);
        return;
    }
    fm_validate_path (c->parent, buf, size);
    n = strlen (buf);
    if (c->idx >= 0) {
        snprintf (buf + n, size - n, "%s%s[%ld]", n ? "." : "", c->seg, c->idx);
    } else {
        snprintf (buf + n, size - n, "%s%s", n ? "." : "", c->seg);
    }
}

static int vfail (fm_validate_ctx_t *c, const char *key, const char *fmt, va_list ap)
    __attribute__ ((format (printf, 3, 0)));

static int vfail (fm_validate_ctx_t *c, const char *key, const char *fmt, va_list ap)
{
    char msg[200], path[192];

    fm_validate_path (c, path, sizeof (path));
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

int fm_validate_fail (fm_validate_ctx_t *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start (ap, fmt);
    rc = vfail (c, key, fmt, ap);
    va_end (ap);
    return rc;
}

int fm_validate_too_large (fm_validate_ctx_t *c, const char *key, size_t max)
{
    c->inv->too_large = true;
    return fm_validate_fail (c, key, "more than %zu entries", max);
}

int fm_validate_object (fm_validate_ctx_t *c, json_t *o, const char *const allowed[])
{
    const char *key;
    json_t *v;

    if (!json_is_object (o)) {
        return fm_validate_fail (c, NULL, "must be an object");
    }
    json_object_foreach (o, key, v) {
        size_t i;
        for (i = 0; allowed[i]; i++) {
            if (strcmp (key, allowed[i]) == 0) {
                break;
            }
        }
        if (!allowed[i]) {
            return fm_validate_fail (c, key, "unknown field");
        }
    }
    return 0;
}

/* Returns 1 when found, 0 when absent and optional, -1 on error. */
int fm_validate_int (fm_validate_ctx_t *c,
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
        return required ? fm_validate_fail (c, key, "required") : 0;
    }
    if (!json_is_integer (v)) {
        return fm_validate_fail (c, key, "must be an integer");
    }
    x = json_integer_value (v);
    if (x < min) {
        return fm_validate_fail (c, key, "must be >= %lld", (long long)min);
    }
    if (x > max) {
        return fm_validate_fail (c, key, "must be <= %lld", (long long)max);
    }
    *out = x;
    return 1;
}

int fm_validate_num (fm_validate_ctx_t *c,
                     json_t *o,
                     const char *key,
                     bool required,
                     double min,
                     double max)
{
    json_t *v = json_object_get (o, key);
    double x;

    if (!v) {
        return required ? fm_validate_fail (c, key, "required") : 0;
    }
    if (!json_is_number (v)) {
        return fm_validate_fail (c, key, "must be a number");
    }
    x = json_number_value (v);
    if (!isfinite (x)) {
        return fm_validate_fail (c, key, "must be finite");
    }
    if (x < min || x > max) {
        return fm_validate_fail (c, key, "must be within [%g, %g]", min, max);
    }
    return 1;
}

int fm_validate_bool (fm_validate_ctx_t *c, json_t *o, const char *key, bool required)
{
    json_t *v = json_object_get (o, key);

    if (!v) {
        return required ? fm_validate_fail (c, key, "required") : 0;
    }
    if (!json_is_boolean (v)) {
        return fm_validate_fail (c, key, "must be true or false");
    }
    return 1;
}

int fm_validate_str (fm_validate_ctx_t *c,
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
        return required ? fm_validate_fail (c, key, "required") : 0;
    }
    if (!json_is_string (v)) {
        return fm_validate_fail (c, key, "must be a string");
    }
    len = json_string_length (v);
    if (strlen (json_string_value (v)) != len) {
        return fm_validate_fail (c, key, "must not contain NUL");
    }
    if (len < minlen || len > maxlen) {
        return fm_validate_fail (
            c, key, "length must be within [%zu, %zu]", minlen, maxlen);
    }
    for (const char *p = json_string_value (v); *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            return fm_validate_fail (c, key, "must not contain control characters");
        }
    }
    if (out) {
        *out = json_string_value (v);
    }
    return 1;
}

int fm_validate_enum (fm_validate_ctx_t *c,
                      json_t *o,
                      const char *key,
                      const char *const choices[],
                      int *index)
{
    const char *s;

    if (fm_validate_str (c, o, key, true, 1, 63, &s) < 0) {
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
    return fm_validate_fail (c, key, "unknown value '%s'", s);
}

bool fm_validate_node_name (const char *s)
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

bool fm_validate_ip_literal (const char *s)
{
    unsigned char buf[16];

    return s && (inet_pton (AF_INET, s, buf) == 1 || inet_pton (AF_INET6, s, buf) == 1);
}

int fm_validate_node (fm_validate_ctx_t *c,
                      json_t *o,
                      const char *key,
                      const char **out)
{
    if (fm_validate_str (c, o, key, true, 1, FM_API_NODE_MAX, out) < 0) {
        return -1;
    }
    if (!fm_validate_node_name (*out)) {
        return fm_validate_fail (c, key, "not a valid node name");
    }
    return 0;
}

/* An object of at most FM_HEALTH_MAP_MAX names (1..63 characters, no control
 * characters) to integers within [min, max] (gpu.counters, gpu.gauges,
 * counters.counters) or, with min > max, to strings of 1..63 (counters.attrs).
 */
#define FM_HEALTH_MAP_MAX 32

int fm_validate_map (
    fm_validate_ctx_t *c, json_t *o, const char *key, int64_t min, int64_t max)
{
    json_t *m = json_object_get (o, key), *v;
    const char *name;

    if (!m) {
        return fm_validate_fail (c, key, "required");
    }
    if (!json_is_object (m)) {
        return fm_validate_fail (c, key, "must be an object");
    }
    if (json_object_size (m) > FM_HEALTH_MAP_MAX) {
        return fm_validate_fail (c, key, "more than %d entries", FM_HEALTH_MAP_MAX);
    }
    json_object_foreach (m, name, v) {
        size_t len = strlen (name);
        bool ok = len >= 1 && len <= 63;

        for (const char *p = name; ok && *p; p++) {
            ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
        }
        if (!ok) {
            return fm_validate_fail (
                c, key, "names must be 1..63 printable characters");
        }
        if (min > max) {
            fm_validate_ctx_t sub = {.parent = c, .seg = key, .idx = -1, .inv = c->inv};
            if (fm_validate_str (&sub, m, name, true, 1, 63, NULL) < 0) {
                return -1;
            }
        } else if (!json_is_integer (v) || json_integer_value (v) < min
                   || json_integer_value (v) > max) {
            return fm_validate_fail (c,
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
int fm_validate_hca_list (fm_validate_ctx_t *c, json_t *o, const char *key)
{
    const char *s;

    if (fm_validate_str (c, o, key, true, 3, 4095, &s) < 0) {
        return -1;
    }
    for (const char *p = s; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'
              || *p == ':' || *p == ',')) {
            return fm_validate_fail (c, key, "want DEVICE:PORT[,DEVICE:PORT...]");
        }
    }
    return 0;
}
