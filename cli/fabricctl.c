/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "conf.h"
#include "duration.h"
#include "fm/api.h"
#include "fmtime.h"
#include "dconf.h"
#include "httpclient.h"
#include "watch.h"

#define DEFAULT_CONFIG FM_SYSCONFDIR "/fabric-monitor/fabricd.conf"
#define MAX_ANSWER (64 * 1024 * 1024)

typedef struct {
    const char *url;
    const char *socket;
    bool json;
    char *owned_url; /* from the configuration, freed at exit */
    char *owned_socket;
} ctl_t;

static void die (const char *fmt, ...)
    __attribute__ ((format (printf, 1, 2), noreturn));

static void die (const char *fmt, ...)
{
    va_list ap;

    fprintf (stderr, "fabricctl: ");
    va_start (ap, fmt);
    vfprintf (stderr, fmt, ap);
    va_end (ap);
    fputc ('\n', stderr);
    exit (1);
}

/* METHOD path with an optional JSON body; dies with a clear message on any
 * failure. With soft, an HTTP error answer returns NULL instead (the command
 * goes on without that part).
 */
static json_t *
request (const ctl_t *c, const char *method, const char *path, json_t *body, bool soft)
{
    /* a drain waits for the fabric loop and Slurm */
    fm_httpclient_opts_t opts = {.url = c->url,
                                 .socket = c->socket,
                                 .auth = FM_HTTPCLIENT_AUTH_TRY,
                                 .timeout_s = body ? 90 : 30,
                                 .connect_timeout_s = 5,
                                 .max_answer = MAX_ANSWER};
    fm_httpclient_answer_t a;
    fm_httpclient_t *hc;
    json_error_t jerr;
    fm_error_t err;
    char *text = NULL;
    json_t *o;
    int rc;

    if (body && !(text = json_dumps (body, JSON_COMPACT))) {
        die ("out of memory");
    }
    if (!(hc = fm_httpclient_create (&opts, &err))) {
        die ("%s", err.text);
    }
    /* Without a credential the request still goes out: fabricd --insecure-local
     * needs none, and any other fabricd answers 401, explained below.
     */
    rc = fm_httpclient_request (hc, method, path, text, text ? strlen (text) : 0, &a, &err);
    fm_httpclient_destroy (hc);
    free (text);
    if (rc < 0) {
        if (a.unreachable) {
            die ("cannot reach fabricd at %s: %s (is fabricd running?)", c->url, err.text);
        }
        die ("%s%s: %s", c->url, path, err.text);
    }
    o = json_loadb (a.body ? a.body : "", a.len, 0, &jerr);
    fm_httpclient_answer_clear (&a);
    if (!o) {
        die ("%s%s: HTTP %ld with an answer that is not JSON (%s)",
             c->url,
             path,
             a.status,
             jerr.text);
    }
    if (a.status < 200 || a.status > 299) {
        const char *msg = NULL, *ecode = NULL;
        if (soft) {
            json_decref (o);
            return NULL;
        }
        json_unpack (o, "{s:{s?s, s?s}}", "error", "code", &ecode, "message", &msg);
        if (a.status == 401 && !a.authenticated) {
            die ("%s: HTTP 401: cannot create a munge credential: %s",
                 path,
                 a.auth_err.text);
        }
        die ("%s: HTTP %ld %s: %s",
             path,
             a.status,
             ecode ? ecode : "",
             msg ? msg : "(no message)");
    }
    return o;
}

static json_t *get (const ctl_t *c, const char *path)
{
    return request (c, "GET", path, NULL, false);
}

/* An aligned table: cells are copied. */
typedef struct {
    size_t ncols, nrows, cap;
    char **cells;
    size_t width[16];
} table_t;

static void row (table_t *t, ...)
{
    va_list ap;

    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 32;
        if (!(t->cells = realloc (t->cells, t->cap * t->ncols * sizeof (char *)))) {
            die ("out of memory");
        }
    }
    va_start (ap, t);
    for (size_t i = 0; i < t->ncols; i++) {
        const char *s = va_arg (ap, const char *);
        char *copy = strdup (s ? s : "-");
        size_t len;
        if (!copy) {
            die ("out of memory");
        }
        t->cells[t->nrows * t->ncols + i] = copy;
        if ((len = strlen (copy)) > t->width[i]) {
            t->width[i] = len;
        }
    }
    va_end (ap);
    t->nrows++;
}

static void table_print (table_t *t)
{
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t i = 0; i < t->ncols; i++) {
            const char *s = t->cells[r * t->ncols + i];
            if (i + 1 == t->ncols) {
                printf ("%s\n", s);
            } else {
                printf ("%-*s  ", (int)t->width[i], s);
            }
            free (t->cells[r * t->ncols + i]);
        }
    }
    free (t->cells);
}

static const char *fmt_ns (json_t *v, char *buf, size_t len)
{
    return json_is_integer (v) ? fm_duration_format (json_integer_value (v), buf, len) : "-";
}

static const char *fmt_int (json_t *v, char *buf, size_t len)
{
    if (!json_is_integer (v)) {
        return "-";
    }
    snprintf (buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value (v));
    return buf;
}

static const char *fmt_pct (json_t *v, char *buf, size_t len)
{
    if (!json_is_number (v)) {
        return "-";
    }
    snprintf (buf, len, "%.2f%%", json_number_value (v) * 100);
    return buf;
}

static const char *fmt_age (json_t *v, char *buf, size_t len)
{
    int64_t age;

    if (!json_is_integer (v)) {
        return "-";
    }
    age = (fm_time_real_ns () - json_integer_value (v)) / FM_NSEC_PER_SEC;
    if (age < 0) {
        age = 0;
    }
    if (age < 120) {
        snprintf (buf, len, "%llds ago", (long long)age);
    } else if (age < 7200) {
        snprintf (buf, len, "%lldm ago", (long long)age / 60);
    } else {
        snprintf (buf, len, "%lldh ago", (long long)age / 3600);
    }
    return buf;
}

static void print_json (json_t *o)
{
    char *s = json_dumps (o, JSON_INDENT (2) | JSON_SORT_KEYS);

    if (!s) {
        die ("out of memory");
    }
    printf ("%s\n", s);
    free (s);
}

static const char *str (json_t *o, const char *key)
{
    const char *v = json_string_value (json_object_get (o, key));

    return v ? v : "-";
}

static void fmt_time (json_t *v, char *buf, size_t len)
{
    time_t t = (time_t)(json_integer_value (v) / FM_NSEC_PER_SEC);
    struct tm tm;

    if (!json_is_integer (v) || !localtime_r (&t, &tm)
        || !strftime (buf, len, "%Y-%m-%d %H:%M:%S %Z", &tm)) {
        snprintf (buf, len, "-");
    }
}

static void links_table (json_t *links)
{
    table_t t = {.ncols = 11};
    size_t i;
    json_t *l;

    row (&t,
         "SRC",
         "DST",
         "REPORTER",
         "WINDOWS",
         "SENT",
         "LOST",
         "LOSS",
         "RTT_P50",
         "RTT_P99",
         "OWD_P50",
         "OWD_P99");
    json_array_foreach (links, i, l) {
        char b[8][32];
        row (&t,
             json_string_value (json_object_get (l, "src")),
             json_string_value (json_object_get (l, "dst")),
             json_string_value (json_object_get (l, "reporter")),
             fmt_int (json_object_get (l, "windows"), b[0], 32),
             fmt_int (json_object_get (l, "sent"), b[1], 32),
             fmt_int (json_object_get (l, "lost"), b[2], 32),
             fmt_pct (json_object_get (l, "loss_ratio"), b[3], 32),
             fmt_ns (json_object_get (l, "rtt_p50_ns"), b[4], 32),
             fmt_ns (json_object_get (l, "rtt_p99_ns"), b[5], 32),
             fmt_ns (json_object_get (l, "owd_p50_ns"), b[6], 32),
             fmt_ns (json_object_get (l, "owd_p99_ns"), b[7], 32));
    }
    table_print (&t);
}

static void cmd_status (const ctl_t *c)
{
    json_t *o = get (c, "/v1/status");

    if (c->json) {
        print_json (o);
    } else {
        json_t *st = json_object_get (o, "store"), *in = json_object_get (o, "ingest");
        char b[8][32];
        table_t t = {.ncols = 2};
        row (&t, "status:", json_string_value (json_object_get (o, "status")));
        row (&t, "version:", json_string_value (json_object_get (o, "version")));
        row (&t, "api:", json_string_value (json_object_get (o, "api")));
        row (&t, "uptime:", fmt_ns (json_object_get (o, "uptime_ns"), b[0], 32));
        row (&t,
             "insecure:",
             json_is_true (json_object_get (o, "insecure")) ? "yes" : "no");
        row (&t, "store:", json_string_value (json_object_get (st, "backend")));
        row (&t, "jobs:", fmt_int (json_object_get (st, "jobs"), b[1], 32));
        row (&t, "nodes:", fmt_int (json_object_get (st, "nodes"), b[2], 32));
        row (&t, "windows:", fmt_int (json_object_get (st, "windows"), b[3], 32));
        row (&t, "records:", fmt_int (json_object_get (st, "records"), b[4], 32));
        row (&t, "ingested:", fmt_int (json_object_get (in, "records"), b[5], 32));
        row (&t, "rejected:", fmt_int (json_object_get (in, "rejected"), b[6], 32));
        json_t *f = request (c, "GET", "/v1/fabric", NULL, true);
        if (f) {
            json_t *bl = json_object_get (f, "blast"), *el;
            size_t i, bad = 0;
            json_array_foreach (json_object_get (f, "elements"), i, el) {
                bad += strcmp (str (el, "state"), "healthy") != 0;
            }
            snprintf (b[7], 32, "%zu not healthy", bad);
            row (&t, "fabric:", b[7]);
            row (&t,
                 "fabric drains:",
                 fmt_int (json_object_get (bl, "drained"), b[0], 32));
            row (&t,
                 "alarms (1 h):",
                 fmt_int (json_object_get (bl, "alarms_active"), b[1], 32));
            table_print (&t);
            json_array_foreach (json_object_get (f, "alarms"), i, el) {
                char when[32];
                if (i == 5) {
                    break;
                }
                fmt_time (json_object_get (el, "at_ns"), when, sizeof (when));
                printf (
                    "alarm %s %s: %s\n", when, str (el, "element"), str (el, "text"));
            }
            json_decref (f);
        } else {
            table_print (&t);
        }
    }
    json_decref (o);
}

static void cmd_nodes (const ctl_t *c)
{
    json_t *o = get (c, "/v1/nodes");
    table_t t = {.ncols = 9};
    size_t i;
    json_t *n;

    if (c->json) {
        print_json (o);
        json_decref (o);
        return;
    }
    row (&t,
         "NODE",
         "LAST_SEEN",
         "JOB",
         "WINDOWS",
         "LINKS",
         "LOSS",
         "RTT_P99_MAX",
         "CLOCK_OFFSET",
         "HEALTH");
    json_array_foreach (json_object_get (o, "nodes"), i, n) {
        char b[8][32];
        snprintf (
            b[6], 32, "%zu records", json_array_size (json_object_get (n, "health")));
        row (&t,
             json_string_value (json_object_get (n, "node")),
             fmt_age (json_object_get (n, "last_seen_ns"), b[0], 32),
             fmt_int (json_object_get (n, "last_job_id"), b[1], 32),
             fmt_int (json_object_get (n, "windows"), b[2], 32),
             fmt_int (json_object_get (n, "links"), b[3], 32),
             fmt_pct (json_object_get (n, "loss_ratio"), b[4], 32),
             fmt_ns (json_object_get (n, "rtt_p99_max_ns"), b[5], 32),
             fmt_ns (json_object_get (n, "clock_offset_ns"), b[7], 32),
             b[6]);
    }
    table_print (&t);
    json_decref (o);
}

static void cmd_links (const ctl_t *c, long worst)
{
    char path[64];
    json_t *o;

    if (worst > 0) {
        snprintf (path, sizeof (path), "/v1/links?worst=%ld", worst);
    } else {
        snprintf (path, sizeof (path), "/v1/links");
    }
    o = get (c, path);
    if (c->json) {
        print_json (o);
    } else {
        links_table (json_object_get (o, "links"));
    }
    json_decref (o);
}

static void cmd_job (const ctl_t *c, const char *id)
{
    char path[64], b[8][32];
    table_t t = {.ncols = 6};
    json_t *job, *sum, *a;
    char *end;
    long long v;
    size_t i;

    errno = 0;
    v = strtoll (id, &end, 10);
    if (errno != 0 || end == id || *end != '\0' || v < 1 || v > FM_API_JOB_ID_MAX) {
        die ("'%s' is not a job id", id);
    }
    snprintf (path, sizeof (path), "/v1/jobs/%lld", v);
    job = get (c, path);
    snprintf (path, sizeof (path), "/v1/jobs/%lld/summary", v);
    sum = get (c, path);
    if (c->json) {
        json_object_set (job, "summary", sum);
        print_json (job);
        json_decref (job);
        json_decref (sum);
        return;
    }
    printf ("job %lld  user %s  nodes %zu/%s  windows %s  records %s\n\n",
            v,
            fmt_int (json_object_get (job, "user_id"), b[0], 32),
            json_array_size (json_object_get (job, "agents")),
            fmt_int (json_object_get (job, "expected"), b[1], 32),
            fmt_int (json_object_get (sum, "windows"), b[2], 32),
            fmt_int (json_object_get (sum, "records"), b[3], 32));
    row (&t, "AGENT", "NODE", "PROBE", "REGISTERED", "LAST_SEQ", "WINDOWS");
    json_array_foreach (json_object_get (job, "agents"), i, a) {
        char probe[96];
        snprintf (probe,
                  sizeof (probe),
                  "%s:%s",
                  json_string_value (json_object_get (a, "probe_addr")),
                  fmt_int (json_object_get (a, "probe_port"), b[4], 32));
        row (&t,
             fmt_int (json_object_get (a, "agent_id"), b[0], 32),
             json_string_value (json_object_get (a, "node")),
             probe,
             fmt_age (json_object_get (a, "registered_ns"), b[1], 32),
             fmt_int (json_object_get (a, "last_seq"), b[2], 32),
             fmt_int (json_object_get (a, "windows"), b[3], 32));
    }
    table_print (&t);
    printf ("\n");
    links_table (json_object_get (sum, "links"));
    json_decref (job);
    json_decref (sum);
}

static void actions_table (json_t *actions)
{
    table_t t = {.ncols = 6};
    size_t i;
    json_t *a;

    row (&t, "TIME", "ACTION", "NODE", "JOB", "RESULT", "REASON");
    json_array_foreach (actions, i, a) {
        char when[32], job[32], result[96];
        fmt_time (json_object_get (a, "at_ns"), when, sizeof (when));
        fmt_int (json_object_get (a, "job_id"), job, sizeof (job));
        snprintf (result,
                  sizeof (result),
                  "%s%s",
                  str (a, "result"),
                  json_is_true (json_object_get (a, "dry_run"))
                          && strcmp (str (a, "result"), "dry_run") != 0
                      ? " (dry run)"
                      : "");
        row (&t,
             when,
             str (a, "kind"),
             json_is_string (json_object_get (a, "node")) ? str (a, "node")
                                                          : str (a, "element"),
             job,
             result,
             str (a, "reason"));
    }
    table_print (&t);
}

static void cmd_drains (const ctl_t *c)
{
    json_t *o = get (c, "/v1/fabric"), *blast = json_object_get (o, "blast"), *n;
    table_t t = {.ncols = 3};
    size_t i;
    char b[2][32];

    if (c->json) {
        print_json (json_object_get (o, "drained"));
        json_decref (o);
        return;
    }
    row (&t, "NODE", "BY", "REASON");
    json_array_foreach (json_object_get (o, "drained"), i, n) {
        row (&t,
             str (n, "node"),
             json_is_true (json_object_get (n, "manual")) ? "admin" : "fabricd",
             str (n, "reason"));
    }
    table_print (&t);
    printf ("\ndrained by fabricd: %s of at most %s%s\n",
            fmt_int (json_object_get (blast, "drained"), b[0], 32),
            fmt_int (json_object_get (blast, "limit"), b[1], 32),
            json_is_true (json_object_get (o, "dry_run"))
                ? " (dry run: nothing changes)"
                : "");
    json_decref (o);
}

static void cmd_drain (
    const ctl_t *c, const char *node, const char *reason, bool force, bool resume)
{
    json_t *body = resume ? json_pack ("{s:s,s:b}", "node", node, "force", force)
                          : json_pack ("{s:s,s:s}", "node", node, "reason", reason);
    json_t *o;

    if (!body) {
        die ("out of memory");
    }
    o = request (c, "POST", resume ? "/v1/resume" : "/v1/drain", body, false);
    json_decref (body);
    if (c->json) {
        print_json (o);
    } else {
        const char *r = str (o, "result");
        printf ("%s %s: %s\n",
                resume ? "resume" : "drain",
                node,
                strcmp (r, "already") == 0
                    ? (resume ? "it was not drained" : "already drained by fabricd")
                : strcmp (r, "foreign") == 0 ? "it has another reason: left as it is"
                                             : r);
    }
    json_decref (o);
}

static void cmd_actions (const ctl_t *c, const char *job, const char *node)
{
    char path[256];
    json_t *o;

    snprintf (path,
              sizeof (path),
              "/v1/actions?limit=200%s%s%s%s",
              job ? "&job=" : "",
              job ? job : "",
              node ? "&node=" : "",
              node ? node : "");
    o = get (c, path);
    if (c->json) {
        print_json (o);
    } else {
        actions_table (json_object_get (o, "actions"));
    }
    json_decref (o);
}

static void cmd_explain (const ctl_t *c, const char *name)
{
    char path[256];
    json_t *o, *e, *d;

    for (const char *p = name; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9') || strchr ("-_.:", *p))) {
            die ("'%s' is not a node or element name", name);
        }
    }
    snprintf (path, sizeof (path), "/v1/explain?name=%s", name);
    o = get (c, path);
    if (c->json) {
        print_json (o);
        json_decref (o);
        return;
    }
    e = json_object_get (o, "element");
    d = json_object_get (o, "drained");
    printf ("%s\n", str (o, "name"));
    if (json_is_object (e)) {
        char since[32];
        fmt_time (json_object_get (e, "since_ns"), since, sizeof (since));
        printf ("  state:    %s since %s (%s, %s side, score %.1f, %lld witnesses)\n",
                str (e, "state"),
                since,
                str (e, "class"),
                str (e, "side"),
                json_real_value (json_object_get (e, "score")),
                (long long)json_integer_value (json_object_get (e, "witnesses")));
        printf ("  evidence: %s\n", str (e, "evidence"));
        printf ("  windows:\n");
        const char *x = str (e, "explain");
        while (*x) {
            const char *nl = strchr (x, '\n');
            int len = nl ? (int)(nl - x) : (int)strlen (x);
            printf ("    %.*s\n", len, x);
            x += len + (nl != NULL);
        }
    } else {
        printf ("  state:    healthy (no evidence against it in the recent windows)\n");
    }
    if (json_is_object (d)) {
        printf ("  slurm:    drained: %s\n", str (d, "reason"));
    }
    printf ("\n");
    actions_table (json_object_get (o, "actions"));
    json_decref (o);
}

static void cmd_policy (const ctl_t *c)
{
    json_t *o = get (c, "/v1/fabric"), *p = json_object_get (o, "policy"),
           *b = json_object_get (o, "blast"), *a;
    table_t t = {.ncols = 2};
    char v[16][32];
    size_t i;

    if (c->json) {
        print_json (o);
        json_decref (o);
        return;
    }
    snprintf (
        v[0], 32, "%g", json_real_value (json_object_get (p, "max_drain_fraction")));
    row (&t, "backend:", str (o, "backend"));
    row (&t, "dry_run:", json_is_true (json_object_get (o, "dry_run")) ? "yes" : "no");
    row (&t, "topology:", str (o, "topology"));
    row (&t, "nodes:", fmt_int (json_object_get (o, "nodes"), v[1], 32));
    row (&t, "window:", fmt_ns (json_object_get (o, "window_ns"), v[2], 32));
    row (&t,
         "auto_resume:",
         json_is_true (json_object_get (p, "auto_resume")) ? "yes" : "no");
    row (&t,
         "auto_validate:",
         json_is_true (json_object_get (p, "auto_validate")) ? "yes" : "no");
    row (&t,
         "resume_windows:",
         fmt_int (json_object_get (p, "resume_windows"), v[3], 32));
    row (&t,
         "persist_windows:",
         fmt_int (json_object_get (p, "persist_windows"), v[4], 32));
    row (&t, "max_drain_fraction:", v[0]);
    row (&t,
         "max_drains_per_hour:",
         fmt_int (json_object_get (p, "max_drains_per_hour"), v[5], 32));
    row (&t,
         "degraded_weight_add:",
         fmt_int (json_object_get (p, "degraded_weight_add"), v[6], 32));
    row (&t, "protect_signal:", str (p, "protect_signal"));
    snprintf (
        v[7], 32, "%s s", fmt_int (json_object_get (p, "protect_grace_s"), v[8], 32));
    row (&t, "protect_grace:", v[7]);
    snprintf (v[9],
              32,
              "%s of %s",
              fmt_int (json_object_get (b, "drained"), v[10], 32),
              fmt_int (json_object_get (b, "limit"), v[11], 32));
    row (&t, "drained by fabricd:", v[9]);
    row (
        &t, "alarms (1 h):", fmt_int (json_object_get (b, "alarms_active"), v[12], 32));
    table_print (&t);
    json_array_foreach (json_object_get (o, "alarms"), i, a) {
        char when[32];
        fmt_time (json_object_get (a, "at_ns"), when, sizeof (when));
        printf ("%salarm %s %s: %s\n",
                i ? "" : "\n",
                when,
                str (a, "element"),
                str (a, "text"));
    }
    json_decref (o);
}

/* URL and munge socket from fabricd's configuration, when it can be read. */
static void from_config (ctl_t *c, const char *path, bool required)
{
    fm_error_t err;
    fm_conf_t *conf;
    const char *addr;
    char *url;

    if (!required && access (path, R_OK) != 0) {
        return;
    }
    if (!(conf = fm_conf_create (fm_dconf_table, &err))) {
        die ("%s", err.text);
    }
    if (fm_conf_load_file (conf, path, &err) < 0) {
        die ("%s", err.text);
    }
    addr = fm_conf_string (conf, "listen_address");
    if (!addr || strcmp (addr, "0.0.0.0") == 0) {
        addr = "127.0.0.1";
    } else if (strcmp (addr, "::") == 0) {
        addr = "::1";
    }
    if (asprintf (&url,
                  strchr (addr, ':') ? "http://[%s]:%lld" : "http://%s:%lld",
                  addr,
                  (long long)fm_conf_int (conf, "listen_port"))
        < 0) {
        die ("out of memory");
    }
    if (!c->url) {
        c->url = c->owned_url = url;
    } else {
        free (url);
    }
    if (!c->socket && fm_conf_string (conf, "munge_socket")) {
        if (!(c->owned_socket = strdup (fm_conf_string (conf, "munge_socket")))) {
            die ("out of memory");
        }
        c->socket = c->owned_socket;
    }
    fm_conf_destroy (conf);
}

static void usage (FILE *fp)
{
    fprintf (fp,
             "Usage: fabricctl [OPTIONS] COMMAND\n"
             "Commands:\n"
             "  status            daemon status\n"
             "  nodes             nodes and their latest report\n"
             "  links [--worst N] links, worst first\n"
             "  job ID            a job's agents and links\n"
             "  drains            nodes drained with a fabric: reason\n"
             "  drain NODE --reason TEXT\n"
             "                    drain as \"fabric: manual: TEXT\" (never resumed by "
             "fabricd)\n"
             "  resume NODE [--force]\n"
             "                    resume a fabric drain (--force: any reason)\n"
             "  explain NODE|ELEMENT\n"
             "                    the evidence chain and the decisions about it\n"
             "  policy            the policy, blast-radius state and alarms\n"
             "  actions [--job ID] [--node NODE]\n"
             "                    what fabricd did and decided, newest first\n"
             "  watch [--interval D] [--count N] [--worst N]\n"
             "                    live view: unhealthy nodes, worst links\n"
             "Options:\n"
             "  -c, --config PATH    fabricd configuration to take the URL and munge "
             "socket\n"
             "                       from (default %s, if readable)\n"
             "  -u, --url URL        fabricd URL (default %s)\n"
             "  -m, --munge-socket PATH  munged socket\n"
             "  -j, --json           print the daemon's JSON instead of tables\n"
             "  -h, --help\n",
             DEFAULT_CONFIG,
             FM_API_DEFAULT_URL);
}

int main (int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"url", required_argument, NULL, 'u'},
        {"munge-socket", required_argument, NULL, 'm'},
        {"json", no_argument, NULL, 'j'},
        {"worst", required_argument, NULL, 'w'},
        {"reason", required_argument, NULL, 'r'},
        {"force", no_argument, NULL, 'f'},
        {"job", required_argument, NULL, 'J'},
        {"node", required_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    ctl_t c = {0};
    fm_error_t err;
    const char *config = NULL;
    const char *cmd;
    const char *reason = NULL, *job = NULL, *node = NULL;
    bool force = false;
    long worst = 0;
    int opt;

    while ((opt = getopt_long (argc, argv, "+c:u:m:jh", opts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            config = optarg;
            break;
        case 'u':
            c.url = optarg;
            break;
        case 'm':
            c.socket = optarg;
            break;
        case 'j':
            c.json = true;
            break;
        case 'h':
            usage (stdout);
            return 0;
        default:
            usage (stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        usage (stderr);
        return 2;
    }
    cmd = argv[optind++];
    if (strcmp (cmd, "watch") != 0) {
        /* Options after the command, before or after its arguments ("links
         * --worst 5", "drain n1 --reason x"): parsed afresh (optind 0) over
         * the command's own vector, in GNU order, so arguments end up last.
         */
        int first = optind - 1;
        argc -= first;
        argv += first;
        optind = 0;
        while ((opt = getopt_long (argc, argv, "j", opts, NULL)) != -1) {
            char *end;
            if (opt == 'r') {
                reason = optarg;
            } else if (opt == 'f') {
                force = true;
            } else if (opt == 'J') {
                job = optarg;
            } else if (opt == 'N') {
                node = optarg;
            } else if (opt == 'w') {
                errno = 0;
                worst = strtol (optarg, &end, 10);
                if (errno != 0 || *end != '\0' || worst < 1 || worst > 10000) {
                    die ("--worst: expected an integer within [1, 10000]");
                }
            } else if (opt == 'j') {
                c.json = true;
            } else {
                usage (stderr);
                return 2;
            }
        }
    }
    if (!c.url || !c.socket) {
        from_config (&c, config ? config : DEFAULT_CONFIG, config != NULL);
    }
    if (!c.url) {
        c.url = FM_API_DEFAULT_URL;
    }
    if (fm_httpclient_global_init (&err) < 0) {
        die ("%s", err.text);
    }
    if (strcmp (cmd, "status") == 0 && optind == argc) {
        cmd_status (&c);
    } else if (strcmp (cmd, "nodes") == 0 && optind == argc) {
        cmd_nodes (&c);
    } else if (strcmp (cmd, "links") == 0 && optind == argc) {
        cmd_links (&c, worst);
    } else if (strcmp (cmd, "job") == 0 && optind + 1 == argc) {
        cmd_job (&c, argv[optind]);
    } else if (strcmp (cmd, "drains") == 0 && optind == argc) {
        cmd_drains (&c);
    } else if (strcmp (cmd, "drain") == 0 && optind + 1 == argc) {
        if (!reason || !*reason) {
            die ("drain needs --reason TEXT (it becomes \"fabric: manual: TEXT\")");
        }
        cmd_drain (&c, argv[optind], reason, false, false);
    } else if (strcmp (cmd, "resume") == 0 && optind + 1 == argc) {
        cmd_drain (&c, argv[optind], NULL, force, true);
    } else if (strcmp (cmd, "explain") == 0 && optind + 1 == argc) {
        cmd_explain (&c, argv[optind]);
    } else if (strcmp (cmd, "policy") == 0 && optind == argc) {
        cmd_policy (&c);
    } else if (strcmp (cmd, "actions") == 0 && optind == argc) {
        cmd_actions (&c, job, node);
    } else if (strcmp (cmd, "watch") == 0) {
        fm_watch_run (c.url, c.socket, argc, argv);
    } else {
        fprintf (stderr, "fabricctl: unknown command or wrong arguments: %s\n", cmd);
        usage (stderr);
        return 2;
    }
    fm_httpclient_global_fini ();
    free (c.owned_url);
    free (c.owned_socket);
    return 0;
}
