/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "duration.h"
#include "fmtime.h"

#define CONF_LINE_MAX 4096
#define CONF_FILE_MAX (1024 * 1024)

struct value {
    bool set;
    bool locked;
    union {
        int64_t i; /* INT, DURATION, SIZE */
        double d;
        bool b;
        int e;
        char *s;
    } u;
};

struct fm_conf {
    const fm_conf_item_t *table;
    size_t n;
    struct value *vals;
};

static void value_clear (const fm_conf_item_t *item, struct value *v)
{
    if (item->type == FM_CONF_STRING) {
        free (v->u.s);
    }
    memset (v, 0, sizeof (*v));
}

static bool unbounded (const fm_conf_item_t *item)
{
    return item->min == 0 && item->max == 0;
}

/* Durations in messages read as the user wrote them: "[1s, 1h]", not ns. */
static void format_duration (int64_t ns, char *buf, size_t len)
{
    static const struct {
        const char *unit;
        int64_t ns;
    } units[] = {
        {"d", 86400 * FM_NSEC_PER_SEC},
        {"h", 3600 * FM_NSEC_PER_SEC},
        {"m", 60 * FM_NSEC_PER_SEC},
        {"s", FM_NSEC_PER_SEC},
        {"ms", 1000000},
        {"us", 1000},
    };

    for (size_t i = 0; i < sizeof (units) / sizeof (units[0]); i++) {
        if (ns != 0 && ns % units[i].ns == 0) {
            snprintf (buf, len, "%" PRId64 "%s", ns / units[i].ns, units[i].unit);
            return;
        }
    }
    snprintf (buf, len, "%" PRId64 "ns", ns);
}

static void format_size (int64_t bytes, char *buf, size_t len)
{
    static const char suffix[] = "kMGT";
    int k = -1;

    while (k < 3 && bytes != 0 && bytes % 1024 == 0) {
        bytes /= 1024;
        k++;
    }
    if (k < 0) {
        snprintf (buf, len, "%" PRId64, bytes);
    } else {
        snprintf (buf, len, "%" PRId64 "%c", bytes, suffix[k]);
    }
}

static void
format_bound (const fm_conf_item_t *item, double bound, char *buf, size_t len)
{
    switch (item->type) {
    case FM_CONF_DURATION:
        format_duration ((int64_t)bound, buf, len);
        break;
    case FM_CONF_SIZE:
        format_size ((int64_t)bound, buf, len);
        break;
    case FM_CONF_INT:
        snprintf (buf, len, "%" PRId64, (int64_t)bound);
        break;
    default:
        snprintf (buf, len, "%g", bound);
        break;
    }
}

static int
range_check (const fm_conf_item_t *item, const char *text, double v, fm_error_t *err)
{
    char lo[32], hi[32];

    if (unbounded (item) || (v >= item->min && v <= item->max)) {
        return 0;
    }
    format_bound (item, item->min, lo, sizeof (lo));
    format_bound (item, item->max, hi, sizeof (hi));
    errno = ERANGE;
    return fm_errprintf (
        err, "%s: %s is out of range [%s, %s]", item->key, text, lo, hi);
}

static int parse_int (const char *s, int64_t *out)
{
    char *end;
    long long v;

    if (!(isdigit ((unsigned char)s[0]) || s[0] == '-' || s[0] == '+')) {
        errno = EINVAL;
        return -1;
    }
    errno = 0;
    v = strtoll (s, &end, 10);
    if (errno == ERANGE) {
        return -1;
    }
    if (end == s || *end != '\0' || !isdigit ((unsigned char)end[-1])) {
        errno = EINVAL;
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_double (const char *s, double *out)
{
    char *end;
    double v;

    if (!(isdigit ((unsigned char)s[0]) || s[0] == '-' || s[0] == '+' || s[0] == '.')) {
        errno = EINVAL;
        return -1;
    }
    errno = 0;
    v = strtod (s, &end);
    if (end == s || *end != '\0') {
        errno = EINVAL;
        return -1;
    }
    if (!isfinite (v) || (errno == ERANGE && fabs (v) == HUGE_VAL)) {
        errno = ERANGE;
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_bool (const char *s, bool *out)
{
    static const char *yes[] = {"yes", "true", "on", "1"};
    static const char *no[] = {"no", "false", "off", "0"};

    for (size_t i = 0; i < sizeof (yes) / sizeof (yes[0]); i++) {
        if (strcasecmp (s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp (s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    errno = EINVAL;
    return -1;
}

static int parse_size (const char *s, int64_t *out)
{
    uint64_t v = 0;
    uint64_t mult = 1;
    const char *p = s;

    if (!isdigit ((unsigned char)*p)) {
        errno = EINVAL;
        return -1;
    }
    while (isdigit ((unsigned char)*p)) {
        if (__builtin_mul_overflow (v, 10, &v)
            || __builtin_add_overflow (v, (uint64_t)(*p - '0'), &v)) {
            errno = ERANGE;
            return -1;
        }
        p++;
    }
    switch (*p) {
    case '\0':
        break;
    case 'k':
    case 'K':
        mult = 1ULL << 10;
        break;
    case 'M':
        mult = 1ULL << 20;
        break;
    case 'G':
        mult = 1ULL << 30;
        break;
    case 'T':
        mult = 1ULL << 40;
        break;
    default:
        errno = EINVAL;
        return -1;
    }
    if (*p != '\0' && p[1] != '\0') {
        errno = EINVAL;
        return -1;
    }
    if (__builtin_mul_overflow (v, mult, &v) || v > INT64_MAX) {
        errno = ERANGE;
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

static void choices_list (const fm_conf_item_t *item, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; item->choices[i]; i++) {
        int n =
            snprintf (buf + used, len - used, "%s%s", i ? ", " : "", item->choices[i]);
        if (n < 0 || (size_t)n >= len - used) {
            break;
        }
        used += (size_t)n;
    }
}

/* Parse text (already unquoted) for item into v, which is left untouched on error. */
static int parse_value (const fm_conf_item_t *item,
                        const char *text,
                        struct value *v,
                        fm_error_t *err)
{
    struct value nv = {.set = true};
    const char *what = NULL;

    for (const char *c = text; *c; c++) {
        if (iscntrl ((unsigned char)*c) && *c != '\t') {
            errno = EINVAL;
            return fm_errprintf (err, "%s: control character in value", item->key);
        }
    }
    switch (item->type) {
    case FM_CONF_INT:
        if (parse_int (text, &nv.u.i) < 0) {
            what = "an integer";
            break;
        }
        if (range_check (item, text, (double)nv.u.i, err) < 0) {
            return -1;
        }
        break;
    case FM_CONF_DOUBLE:
        if (parse_double (text, &nv.u.d) < 0) {
            what = "a finite number";
            break;
        }
        if (range_check (item, text, nv.u.d, err) < 0) {
            return -1;
        }
        break;
    case FM_CONF_BOOL:
        if (parse_bool (text, &nv.u.b) < 0) {
            what = "yes/no, true/false, on/off or 1/0";
        }
        break;
    case FM_CONF_STRING:
        if (item->max > 0 && (double)strlen (text) > item->max) {
            errno = ERANGE;
            return fm_errprintf (
                err, "%s: longer than %.0f characters", item->key, item->max);
        }
        if (!(nv.u.s = strdup (text))) {
            return fm_errprintf (err, "%s: out of memory", item->key);
        }
        break;
    case FM_CONF_ENUM: {
        char list[128];
        for (int i = 0; item->choices[i]; i++) {
            if (strcmp (text, item->choices[i]) == 0) {
                nv.u.e = i;
                *v = nv;
                return 0;
            }
        }
        choices_list (item, list, sizeof (list));
        errno = EINVAL;
        return fm_errprintf (
            err, "%s: invalid value '%s' (expected one of: %s)", item->key, text, list);
    }
    case FM_CONF_DURATION:
        if (fm_duration_parse (text, &nv.u.i) < 0) {
            what = "a duration (such as 500ms, 5s, 2m, 1h)";
            break;
        }
        if (range_check (item, text, (double)nv.u.i, err) < 0) {
            return -1;
        }
        break;
    case FM_CONF_SIZE:
        if (parse_size (text, &nv.u.i) < 0) {
            what = "a size (bytes, or with a k, M, G or T suffix)";
            break;
        }
        if (range_check (item, text, (double)nv.u.i, err) < 0) {
            return -1;
        }
        break;
    }
    if (what) {
        if (errno == ERANGE) {
            return fm_errprintf (err, "%s: %s is out of range", item->key, text);
        }
        errno = EINVAL;
        return fm_errprintf (
            err, "%s: invalid value '%s' (expected %s)", item->key, text, what);
    }
    *v = nv;
    return 0;
}

static bool key_valid (const char *key)
{
    if (!key || !(isalpha ((unsigned char)key[0]) || key[0] == '_')) {
        return false;
    }
    for (const char *c = key; *c; c++) {
        if (!isalnum ((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.') {
            return false;
        }
    }
    return true;
}

static int lookup (const fm_conf_t *conf, const char *key, size_t keylen)
{
    for (size_t i = 0; i < conf->n; i++) {
        if (strlen (conf->table[i].key) == keylen
            && strncmp (conf->table[i].key, key, keylen) == 0) {
            return (int)i;
        }
    }
    return -1;
}

void fm_conf_destroy (fm_conf_t *conf)
{
    if (conf) {
        int saved_errno = errno;
        for (size_t i = 0; i < conf->n; i++) {
            value_clear (&conf->table[i], &conf->vals[i]);
        }
        free (conf->vals);
        free (conf);
        errno = saved_errno;
    }
}

fm_conf_t *fm_conf_create (const fm_conf_item_t *table, fm_error_t *err)
{
    fm_conf_t *conf;
    size_t n = 0;

    if (!table) {
        errno = EINVAL;
        fm_errprintf (err, "no configuration table");
        return NULL;
    }
    while (table[n].key) {
        n++;
    }
    if (!(conf = calloc (1, sizeof (*conf)))
        || !(conf->vals = calloc (n > 0 ? n : 1, sizeof (*conf->vals)))) {
        free (conf);
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    conf->table = table;
    conf->n = n;
    for (size_t i = 0; i < n; i++) {
        const fm_conf_item_t *item = &table[i];
        fm_error_t e;

        if (!key_valid (item->key)) {
            errno = EINVAL;
            fm_errprintf (err, "invalid key '%s' in table", item->key);
            goto error;
        }
        if (lookup (conf, item->key, strlen (item->key)) != (int)i) {
            errno = EINVAL;
            fm_errprintf (err, "duplicate key '%s' in table", item->key);
            goto error;
        }
        if (item->type == FM_CONF_ENUM && (!item->choices || !item->choices[0])) {
            errno = EINVAL;
            fm_errprintf (err, "%s: enum without choices", item->key);
            goto error;
        }
        if (item->type > FM_CONF_SIZE || item->min > item->max) {
            errno = EINVAL;
            fm_errprintf (err, "%s: invalid type or range in table", item->key);
            goto error;
        }
        if (item->def && parse_value (item, item->def, &conf->vals[i], &e) < 0) {
            errno = EINVAL;
            fm_errprintf (err, "bad default: %s", e.text);
            goto error;
        }
    }
    return conf;
error:
    fm_conf_destroy (conf);
    errno = EINVAL;
    return NULL;
}

static int set_value (
    fm_conf_t *conf, const char *key, const char *value, bool lock, fm_error_t *err)
{
    struct value nv;
    int i;

    if (!conf || !key || !value) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    if ((i = lookup (conf, key, strlen (key))) < 0) {
        errno = EINVAL;
        return fm_errprintf (err, "unknown key '%s'", key);
    }
    if (parse_value (&conf->table[i], value, &nv, err) < 0) {
        return -1;
    }
    if (conf->vals[i].locked && !lock) {
        value_clear (&conf->table[i], &nv);
        return 0;
    }
    value_clear (&conf->table[i], &conf->vals[i]);
    conf->vals[i] = nv;
    conf->vals[i].locked = lock;
    return 0;
}

int fm_conf_set (fm_conf_t *conf, const char *key, const char *value, fm_error_t *err)
{
    return set_value (conf, key, value, false, err);
}

int fm_conf_set_locked (fm_conf_t *conf,
                        const char *key,
                        const char *value,
                        fm_error_t *err)
{
    return set_value (conf, key, value, true, err);
}

/* Pending values of one load, committed only when the whole text parsed. */
struct staged {
    int line; /* 0 when the key did not appear */
    struct value v;
};

static void trim (char **start, char **end)
{
    while (*start < *end && isspace ((unsigned char)**start)) {
        (*start)++;
    }
    while (*end > *start && isspace ((unsigned char)(*end)[-1])) {
        (*end)--;
    }
}

/* Unquote a "..." value in place; rest is what follows the closing quote. */
static int unquote (char *p, char **rest, fm_error_t *err, const char *name, int line)
{
    char *out = p;
    char *in = p + 1;

    while (*in != '"') {
        if (*in == '\0') {
            errno = EINVAL;
            return fm_errprintf (err, "%s:%d: unterminated quoted string", name, line);
        }
        if (*in == '\\') {
            in++;
            if (*in != '"' && *in != '\\') {
                errno = EINVAL;
                return fm_errprintf (
                    err, "%s:%d: invalid escape (only \\\" and \\\\)", name, line);
            }
        }
        *out++ = *in++;
    }
    *rest = in + 1;
    *out = '\0';
    return 0;
}

static int parse_line (fm_conf_t *conf,
                       struct staged *st,
                       char *line,
                       int lineno,
                       const char *name,
                       fm_error_t *err)
{
    char *end = line + strlen (line);
    char *eq, *key, *kend, *val, *vend;
    fm_error_t e;
    int i;

    trim (&line, &end);
    *end = '\0';
    if (*line == '\0' || *line == '#') {
        return 0;
    }
    if (!(eq = strchr (line, '='))) {
        errno = EINVAL;
        return fm_errprintf (
            err, "%s:%d: missing '=' (expected key = value)", name, lineno);
    }
    key = line;
    kend = eq;
    trim (&key, &kend);
    *kend = '\0';
    if (*key == '\0') {
        errno = EINVAL;
        return fm_errprintf (err, "%s:%d: missing key before '='", name, lineno);
    }
    if ((i = lookup (conf, key, strlen (key))) < 0) {
        errno = EINVAL;
        return fm_errprintf (err, "%s:%d: unknown key '%s'", name, lineno, key);
    }
    if (st[i].line) {
        errno = EINVAL;
        return fm_errprintf (err,
                             "%s:%d: duplicate key '%s' (first set on line %d)",
                             name,
                             lineno,
                             key,
                             st[i].line);
    }
    val = eq + 1;
    vend = end;
    trim (&val, &vend);
    *vend = '\0';
    if (*val == '"') {
        char *rest = NULL;
        if (unquote (val, &rest, err, name, lineno) < 0) {
            return -1;
        }
        while (isspace ((unsigned char)*rest)) {
            rest++;
        }
        if (*rest != '\0' && *rest != '#') {
            errno = EINVAL;
            return fm_errprintf (
                err, "%s:%d: %s: text after the closing quote", name, lineno, key);
        }
    } else {
        char *hash = strchr (val, '#');
        if (hash) {
            *hash = '\0';
            vend = hash;
            trim (&val, &vend);
            *vend = '\0';
        }
    }
    if (parse_value (&conf->table[i], val, &st[i].v, &e) < 0) {
        return fm_errprintf (err, "%s:%d: %s", name, lineno, e.text);
    }
    st[i].line = lineno;
    return 0;
}

static int load_text (
    fm_conf_t *conf, const char *name, const char *text, size_t len, fm_error_t *err)
{
    struct staged *st;
    char line[CONF_LINE_MAX + 1];
    size_t pos = 0;
    int lineno = 0;
    int rc = -1;
    int saved_errno;

    if (len > CONF_FILE_MAX) {
        errno = EFBIG;
        return fm_errprintf (err, "%s: larger than %d bytes", name, CONF_FILE_MAX);
    }
    if (!(st = calloc (conf->n > 0 ? conf->n : 1, sizeof (*st)))) {
        return fm_errprintf (err, "%s: out of memory", name);
    }
    while (pos < len) {
        const char *nl = memchr (text + pos, '\n', len - pos);
        size_t llen = nl ? (size_t)(nl - (text + pos)) : len - pos;

        lineno++;
        if (llen > CONF_LINE_MAX) {
            errno = EINVAL;
            fm_errprintf (
                err, "%s:%d: line longer than %d bytes", name, lineno, CONF_LINE_MAX);
            goto out;
        }
        if (memchr (text + pos, '\0', llen)) {
            errno = EINVAL;
            fm_errprintf (err, "%s:%d: NUL byte in line", name, lineno);
            goto out;
        }
        memcpy (line, text + pos, llen);
        line[llen] = '\0';
        if (parse_line (conf, st, line, lineno, name, err) < 0) {
            goto out;
        }
        pos += llen + (nl ? 1 : 0);
    }
    for (size_t i = 0; i < conf->n; i++) {
        if (st[i].line && !conf->vals[i].locked) {
            value_clear (&conf->table[i], &conf->vals[i]);
            conf->vals[i] = st[i].v;
            st[i].v.u.s = NULL; /* now owned by conf */
        }
    }
    rc = 0;
out:
    saved_errno = errno;
    for (size_t i = 0; i < conf->n; i++) {
        if (st[i].line || st[i].v.set) {
            value_clear (&conf->table[i], &st[i].v);
        }
    }
    free (st);
    errno = saved_errno;
    return rc;
}

int fm_conf_load_string (fm_conf_t *conf,
                         const char *name,
                         const char *text,
                         fm_error_t *err)
{
    if (!conf || !text) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    return load_text (
        conf, name ? name : "(string)", text, strnlen (text, CONF_FILE_MAX + 1), err);
}

int fm_conf_load_file (fm_conf_t *conf, const char *path, fm_error_t *err)
{
    struct stat sb;
    char *buf = NULL;
    size_t len = 0;
    int fd;
    int rc = -1;
    int saved_errno;

    if (!conf || !path) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid argument");
    }
    /* O_NONBLOCK: opening a FIFO must not hang before we can refuse it */
    if ((fd = open (path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) < 0) {
        return fm_errprintf (err, "%s: %s", path, strerror (errno));
    }
    if (fstat (fd, &sb) < 0) {
        fm_errprintf (err, "%s: %s", path, strerror (errno));
        goto out;
    }
    if (!S_ISREG (sb.st_mode)) {
        errno = EINVAL;
        fm_errprintf (err, "%s: not a regular file", path);
        goto out;
    }
    if (sb.st_size > CONF_FILE_MAX) {
        errno = EFBIG;
        fm_errprintf (err, "%s: larger than %d bytes", path, CONF_FILE_MAX);
        goto out;
    }
    /* one byte more than the cap, in case the file grew since fstat */
    if (!(buf = malloc (CONF_FILE_MAX + 1))) {
        fm_errprintf (err, "%s: out of memory", path);
        goto out;
    }
    for (;;) {
        ssize_t n = read (fd, buf + len, CONF_FILE_MAX + 1 - len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fm_errprintf (err, "%s: %s", path, strerror (errno));
            goto out;
        }
        if (n == 0) {
            break;
        }
        len += (size_t)n;
        if (len > CONF_FILE_MAX) {
            break;
        }
    }
    rc = load_text (conf, path, buf, len, err);
out:
    saved_errno = errno;
    free (buf);
    close (fd);
    errno = saved_errno;
    return rc;
}

static const struct value *
get (const fm_conf_t *conf, const char *key, fm_conf_type_t type)
{
    static const struct value unset;
    int i = conf && key ? lookup (conf, key, strlen (key)) : -1;

    assert (i >= 0);
    if (i < 0) {
        return &unset;
    }
    assert (conf->table[i].type == type);
    if (conf->table[i].type != type) {
        return &unset;
    }
    return &conf->vals[i];
}

int64_t fm_conf_int (const fm_conf_t *conf, const char *key)
{
    return get (conf, key, FM_CONF_INT)->u.i;
}

double fm_conf_double (const fm_conf_t *conf, const char *key)
{
    return get (conf, key, FM_CONF_DOUBLE)->u.d;
}

bool fm_conf_bool (const fm_conf_t *conf, const char *key)
{
    return get (conf, key, FM_CONF_BOOL)->u.b;
}

const char *fm_conf_string (const fm_conf_t *conf, const char *key)
{
    const struct value *v = get (conf, key, FM_CONF_STRING);
    return v->set ? v->u.s : NULL;
}

int fm_conf_enum (const fm_conf_t *conf, const char *key)
{
    return get (conf, key, FM_CONF_ENUM)->u.e;
}

const char *fm_conf_enum_name (const fm_conf_t *conf, const char *key)
{
    int i = conf && key ? lookup (conf, key, strlen (key)) : -1;

    assert (i >= 0 && conf->table[i].type == FM_CONF_ENUM);
    if (i < 0 || conf->table[i].type != FM_CONF_ENUM) {
        return NULL;
    }
    return conf->table[i].choices[conf->vals[i].u.e];
}

int64_t fm_conf_duration (const fm_conf_t *conf, const char *key)
{
    return get (conf, key, FM_CONF_DURATION)->u.i;
}

int64_t fm_conf_size (const fm_conf_t *conf, const char *key)
{
    return get (conf, key, FM_CONF_SIZE)->u.i;
}

static int dump_string (const char *s, FILE *fp)
{
    if (fputc ('"', fp) == EOF) {
        return -1;
    }
    for (; *s; s++) {
        if ((*s == '"' || *s == '\\') && fputc ('\\', fp) == EOF) {
            return -1;
        }
        if (fputc (*s, fp) == EOF) {
            return -1;
        }
    }
    return fputc ('"', fp) == EOF ? -1 : 0;
}

int fm_conf_dump (const fm_conf_t *conf, FILE *fp)
{
    if (!conf || !fp) {
        errno = EINVAL;
        return -1;
    }
    for (size_t i = 0; i < conf->n; i++) {
        const fm_conf_item_t *item = &conf->table[i];
        const struct value *v = &conf->vals[i];
        char buf[64];
        int rc = 0;

        if (item->help && fprintf (fp, "# %s\n", item->help) < 0) {
            return -1;
        }
        if (!v->set) {
            /* commented out, so that loading the dump leaves it unset */
            if (fprintf (fp, "#%s =\n", item->key) < 0) {
                return -1;
            }
            continue;
        }
        if (fprintf (fp, "%s = ", item->key) < 0) {
            return -1;
        }
        switch (item->type) {
        case FM_CONF_INT:
            rc = fprintf (fp, "%" PRId64, v->u.i);
            break;
        case FM_CONF_DOUBLE:
            /* 17 significant digits restore the same double */
            rc = fprintf (fp, "%.17g", v->u.d);
            break;
        case FM_CONF_BOOL:
            rc = fputs (v->u.b ? "yes" : "no", fp);
            break;
        case FM_CONF_STRING:
            rc = dump_string (v->u.s, fp);
            break;
        case FM_CONF_ENUM:
            rc = fputs (item->choices[v->u.e], fp);
            break;
        case FM_CONF_DURATION:
            format_duration (v->u.i, buf, sizeof (buf));
            rc = fputs (buf, fp);
            break;
        case FM_CONF_SIZE:
            format_size (v->u.i, buf, sizeof (buf));
            rc = fputs (buf, fp);
            break;
        }
        if (rc < 0 || fputc ('\n', fp) == EOF) {
            return -1;
        }
    }
    return fflush (fp) == EOF ? -1 : 0;
}
