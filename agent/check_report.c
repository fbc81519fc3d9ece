/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_report.h"
#include "duration.h"

#define LINE_MAX_LEN 256

char *fm_check_report_encode (const fm_check_result_t *r, size_t n)
{
    size_t cap = n * LINE_MAX_LEN + 1, len = 0;
    char *s;

    if (!(s = malloc (cap))) {
        return NULL;
    }
    s[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char e[FM_CHECK_ERROR_MAX];
        int k;

        snprintf (e, sizeof (e), "%s", r[i].error[0] ? r[i].error : "-");
        for (char *p = e; *p; p++) {
            if (*p == '\t' || *p == '\n') {
                *p = ' ';
            }
        }
        k = snprintf (s + len,
                      cap - len,
                      "%" PRIu32 "\t%" PRIu32 "\t%d\t%" PRId64 "\t%" PRId64 "\t%" PRId64
                      "\t%s\n",
                      r[i].a,
                      r[i].b,
                      r[i].ok ? 1 : 0,
                      r[i].lat_p50_ns,
                      r[i].lat_p99_ns,
                      r[i].bw_bps,
                      e);
        len += (size_t)k;
    }
    return s;
}

static int parse_u (const char *s, uint64_t max, uint64_t *v)
{
    char *end;

    if (*s < '0' || *s > '9') {
        return -1;
    }
    errno = 0;
    *v = strtoull (s, &end, 10);
    return errno == 0 && *end == '\0' && *v <= max ? 0 : -1;
}

static int parse_line (char *line, uint32_t nnodes, fm_check_result_t *r)
{
    char *f[7], *save = NULL;
    uint64_t v[6];
    int k = 0;

    for (char *t = strtok_r (line, "\t", &save); t; t = strtok_r (NULL, "\t", &save)) {
        if (k == 7) {
            return -1;
        }
        f[k++] = t;
    }
    if (k != 7) {
        return -1;
    }
    for (int i = 0; i < 6; i++) {
        if (parse_u (f[i], INT64_MAX, &v[i]) < 0) {
            return -1;
        }
    }
    if (v[0] >= nnodes || v[1] >= nnodes || v[0] == v[1] || v[2] > 1
        || strlen (f[6]) >= sizeof (r->error)) {
        return -1;
    }
    memset (r, 0, sizeof (*r));
    r->a = (uint32_t)v[0];
    r->b = (uint32_t)v[1];
    r->ok = v[2] == 1;
    r->lat_p50_ns = (int64_t)v[3];
    r->lat_p99_ns = (int64_t)v[4];
    r->bw_bps = (int64_t)v[5];
    snprintf (r->error, sizeof (r->error), "%s", strcmp (f[6], "-") ? f[6] : "");
    return 0;
}

int fm_check_report_decode (const char *text,
                            uint32_t nnodes,
                            fm_check_result_t **r,
                            size_t *n,
                            fm_error_t *err)
{
    size_t lines = 0, k = *n;
    char *copy, *save = NULL;
    fm_check_result_t *out;

    for (const char *p = text; *p; p++) {
        lines += *p == '\n';
    }
    if (lines == 0) {
        return 0;
    }
    if (!(copy = strdup (text)) || !(out = realloc (*r, (*n + lines) * sizeof (**r)))) {
        free (copy);
        return fm_errprintf (err, "out of memory");
    }
    *r = out;
    for (char *l = strtok_r (copy, "\n", &save); l; l = strtok_r (NULL, "\n", &save)) {
        if (k == *n + lines || parse_line (l, nnodes, &out[k]) < 0) {
            free (copy);
            errno = EPROTO;
            return fm_errprintf (err, "malformed result line %zu", k - *n + 1);
        }
        k++;
    }
    free (copy);
    *n = k;
    return 0;
}

static void fmt_bw (char *buf, size_t size, int64_t bps)
{
    if (bps >= 1000000000) {
        snprintf (buf, size, "%.2f Gbit/s", (double)bps / 1e9);
    } else if (bps >= 1000000) {
        snprintf (buf, size, "%.2f Mbit/s", (double)bps / 1e6);
    } else {
        snprintf (buf, size, "%.1f kbit/s", (double)bps / 1e3);
    }
}

static void print_nodes (FILE *f,
                         const char *label,
                         char (*names)[FM_CHECK_NAME_MAX],
                         uint32_t nnodes,
                         const fm_check_node_t *nodes,
                         bool failed)
{
    bool any = false;

    for (uint32_t i = 0; i < nnodes; i++) {
        if (failed ? nodes[i].failed : nodes[i].slow) {
            fprintf (f,
                     "%s%s (%u/%u pairs)",
                     any ? ", " : label,
                     names[i],
                     failed ? nodes[i].nfailed : nodes[i].nslow,
                     nodes[i].npairs);
            any = true;
        }
    }
    if (any) {
        fputc ('\n', f);
    }
}

void fm_check_report_print_table (FILE *f,
                                  fm_check_mode_t mode,
                                  char (*names)[FM_CHECK_NAME_MAX],
                                  uint32_t nnodes,
                                  const fm_check_result_t *r,
                                  size_t n,
                                  const fm_check_node_t *nodes,
                                  const fm_check_summary_t *sum,
                                  double elapsed_s)
{
    char p50[32], p99[32], bw[32];
    bool any = false;

    fprintf (f,
             "fabric-check: %s, %u nodes, %zu pairs, %.2f s\n",
             fm_check_sched_mode_name (mode),
             nnodes,
             n,
             elapsed_s);
    fprintf (f,
             "%-16s %-16s %12s %12s %14s  %s\n",
             "NODE_A",
             "NODE_B",
             "LAT_P50",
             "LAT_P99",
             "BANDWIDTH",
             "STATUS");
    for (size_t i = 0; i < n; i++) {
        fm_duration_format (r[i].lat_p50_ns, p50, sizeof (p50));
        fm_duration_format (r[i].lat_p99_ns, p99, sizeof (p99));
        fmt_bw (bw, sizeof (bw), r[i].bw_bps);
        if (r[i].ok) {
            fprintf (f,
                     "%-16s %-16s %12s %12s %14s  %s",
                     names[r[i].a],
                     names[r[i].b],
                     p50,
                     p99,
                     bw,
                     r[i].slow ? "SLOW" : "ok");
            if (r[i].slow) {
                fprintf (f, " (%.1fx worse than the median)", r[i].badness);
            }
            fputc ('\n', f);
        } else {
            fprintf (f,
                     "%-16s %-16s %12s %12s %14s  FAILED: %s\n",
                     names[r[i].a],
                     names[r[i].b],
                     "-",
                     "-",
                     "-",
                     r[i].error);
        }
    }
    fm_duration_format (sum->median_lat_p50_ns, p50, sizeof (p50));
    fmt_bw (bw, sizeof (bw), sum->median_bw_bps);
    fprintf (f,
             "median%s: latency %s, bandwidth %s\n",
             sum->by_reference ? " of the reference pairs" : "",
             p50,
             bw);
    print_nodes (f, "failed nodes: ", names, nnodes, nodes, true);
    print_nodes (f, "slow nodes: ", names, nnodes, nodes, false);
    if (sum->nfailed_nodes == 0 && sum->nslow_nodes == 0) {
        fprintf (f, "fabric-check: PASS\n");
        return;
    }
    fprintf (f, "fabric-check: FAIL bad nodes: ");
    for (uint32_t i = 0; i < nnodes; i++) {
        if (nodes[i].failed || nodes[i].slow) {
            fprintf (f, "%s%s", any ? "," : "", names[i]);
            any = true;
        }
    }
    fputc ('\n', f);
}

static json_t *
pairs_json (char (*names)[FM_CHECK_NAME_MAX], const fm_check_result_t *r, size_t n)
{
    json_t *a = json_array ();

    for (size_t i = 0; a && i < n; i++) {
        json_t *o = json_pack ("{s:s, s:s, s:I, s:I, s:I, s:b}",
                               "a",
                               names[r[i].a],
                               "b",
                               names[r[i].b],
                               "lat_p50_ns",
                               (json_int_t)r[i].lat_p50_ns,
                               "lat_p99_ns",
                               (json_int_t)r[i].lat_p99_ns,
                               "bw_bps",
                               (json_int_t)r[i].bw_bps,
                               "ok",
                               r[i].ok);
        if (o && r[i].error[0]) {
            json_object_set_new (o, "error", json_string (r[i].error));
        }
        if (!o || json_array_append_new (a, o) < 0) {
            json_decref (a);
            return NULL;
        }
    }
    return a;
}

json_t *fm_check_report_body (int64_t job_id,
                              fm_check_mode_t mode,
                              char (*names)[FM_CHECK_NAME_MAX],
                              uint32_t nnodes,
                              const bool *ref,
                              const fm_check_result_t *r,
                              size_t n)
{
    json_t *pairs = pairs_json (names, r, n);
    json_t *refs = ref ? json_array () : NULL;
    json_t *o;

    for (uint32_t i = 0; refs && i < nnodes; i++) {
        if (ref[i] && json_array_append_new (refs, json_string (names[i])) < 0) {
            json_decref (refs);
            refs = NULL;
        }
    }
    o = json_pack ("{s:I, s:s, s:o}",
                   "job_id",
                   (json_int_t)job_id,
                   "mode",
                   fm_check_sched_mode_name (mode),
                   "pairs",
                   pairs);
    if (!pairs || !o || (ref && (!refs || json_object_set_new (o, "reference", refs) < 0))) {
        json_decref (o);
        errno = ENOMEM;
        return NULL;
    }
    return o;
}

json_t *fm_check_report_json (int64_t job_id,
                              fm_check_mode_t mode,
                              char (*names)[FM_CHECK_NAME_MAX],
                              uint32_t nnodes,
                              const bool *ref,
                              const fm_check_result_t *r,
                              size_t n,
                              const fm_check_node_t *nodes)
{
    json_t *o = fm_check_report_body (job_id, mode, names, nnodes, ref, r, n);
    json_t *a = json_array ();
    bool passed = true;

    for (uint32_t i = 0; o && a && i < nnodes; i++) {
        passed = passed && !nodes[i].slow && !nodes[i].failed;
        if (json_array_append_new (a,
                                   json_pack ("{s:s, s:b, s:b}",
                                              "name",
                                              names[i],
                                              "slow",
                                              nodes[i].slow,
                                              "failed",
                                              nodes[i].failed))
            < 0) {
            break;
        }
    }
    if (!o || !a || json_object_set_new (o, "nodes", a) < 0
        || json_object_set_new (o, "passed", json_boolean (passed)) < 0) {
        json_decref (o);
        errno = ENOMEM;
        return NULL;
    }
    return o;
}
