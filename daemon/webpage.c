/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sodium.h>

#include "duration.h"
#include "fmtime.h"
#include "monitor.h"
#include "webpage.h"

#define INDEX_SINCE_NS (300 * FM_NSEC_PER_SEC)
#define WORST_LINKS 20
#define MAX_ACTIONS 200
#define CLOCK_BUCKETS 120
#define CLOCK_MAX_POINTS (FM_WEBPAGE_GRID_MAX * CLOCK_BUCKETS)

/* The document's style and a policy that forbids everything but it and the
 * inline SVG: a page can load nothing and run nothing, whatever a node name
 * turns out to hold.
 */
static const char head_fmt[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"
    " style-src 'unsafe-inline'; img-src data:\">\n"
    "<meta name=\"viewport\" content=\"width=device-width\">\n"
    "<title>%s</title>\n<style>\n"
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}\n"
    "h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}\n"
    ".meta{color:#555}table{border-collapse:collapse}\n"
    "td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}\n"
    "th{border-bottom:1px solid #999}tr:nth-child(even) td{background:#f4f4f4}\n"
    ".num{text-align:right;font-variant-numeric:tabular-nums}\n"
    ".st-failed{color:#b2182b;font-weight:bold}.st-degraded{color:#d6604d}\n"
    ".st-suspect{color:#b8860b}.st-healthy{color:#1a9850}\n"
    "svg text{font:11px monospace;fill:#222}.none{color:#777}\n"
    "a{color:#2166ac}\n"
    "</style></head><body>\n";

static void esc (FILE *fp, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs ("&amp;", fp);
            break;
        case '<':
            fputs ("&lt;", fp);
            break;
        case '>':
            fputs ("&gt;", fp);
            break;
        case '"':
            fputs ("&quot;", fp);
            break;
        case '\'':
            fputs ("&#39;", fp);
            break;
        default:
            fputc (*s, fp);
            break;
        }
    }
}

/* UTC to the second: what a person compares with logs and Slurm. */
static const char *fmt_time (int64_t ns, char *buf, size_t len)
{
    time_t t = (time_t)(ns / FM_NSEC_PER_SEC);
    struct tm tm;

    if (!gmtime_r (&t, &tm) || strftime (buf, len, "%Y-%m-%d %H:%M:%SZ", &tm) == 0) {
        snprintf (buf, len, "%lld", (long long)ns);
    }
    return buf;
}

static double loss_of (int64_t lost, int64_t sent)
{
    return sent > 0 ? (double)lost / (double)sent : 0.0;
}

/* Take the document from the stream into resp: 200 text/html, or a 500.
 * *text and *size are the stream's, valid once it is closed.
 */
static void finish (FILE *fp, char **text, size_t *size, fm_response_t *resp)
{
    bool bad = ferror (fp) != 0;

    if (fclose (fp) != 0 || bad) {
        free (*text);
        fm_api_error (resp, 500, "internal", NULL, "out of memory");
        return;
    }
    free (resp->body);
    resp->status = 200;
    resp->body = *text;
    resp->len = *size;
    resp->content_type = "text/html; charset=utf-8";
}

static FILE *start (const char *title, char **text, size_t *size, fm_response_t *resp)
{
    FILE *fp = open_memstream (text, size);

    if (!fp) {
        fm_api_error (resp, 500, "internal", NULL, "out of memory");
        return NULL;
    }
    fprintf (fp, head_fmt, title);
    return fp;
}

static void links_table (FILE *fp, const fm_link_stat_t *l, size_t n, size_t max)
{
    char b[4][32];

    if (n == 0) {
        fputs ("<p class=\"none\">no link windows</p>\n", fp);
        return;
    }
    fputs ("<table class=\"links\"><tr><th>src</th><th>dst</th><th>reporter</th>"
           "<th class=\"num\">windows</th><th class=\"num\">sent</th>"
           "<th class=\"num\">lost</th><th class=\"num\">loss</th>"
           "<th class=\"num\">rtt p99</th><th class=\"num\">owd p50</th>"
           "<th class=\"num\">owd p99</th></tr>\n",
           fp);
    for (size_t i = 0; i < n && i < max; i++) {
        fputs ("<tr><td>", fp);
        esc (fp, l[i].src);
        fputs ("</td><td>", fp);
        esc (fp, l[i].dst);
        fputs ("</td><td>", fp);
        esc (fp, l[i].reporter);
        fprintf (fp,
                 "</td><td class=\"num\">%lld</td><td class=\"num\">%lld</td>"
                 "<td class=\"num\">%lld</td><td class=\"num\">%.2f%%</td>"
                 "<td class=\"num\">%s</td><td class=\"num\">%s</td>"
                 "<td class=\"num\">%s</td></tr>\n",
                 (long long)l[i].windows,
                 (long long)l[i].sent,
                 (long long)l[i].lost,
                 100 * loss_of (l[i].lost, l[i].sent),
                 l[i].has_rtt ? fm_duration_format (l[i].rtt_p99_ns, b[0], 32) : "-",
                 l[i].has_owd ? fm_duration_format (l[i].owd_p50_ns, b[1], 32) : "-",
                 l[i].has_owd ? fm_duration_format (l[i].owd_p99_ns, b[2], 32) : "-");
    }
    fputs ("</table>\n", fp);
    if (n > max) {
        fprintf (fp, "<p class=\"none\">and %zu more</p>\n", n - max);
    }
}

/* ---- the job page ---- */

typedef struct {
    bool has_data, has_owd;
    int64_t owd_p50_ns, owd_p99_ns;
    int64_t sent, lost;
    double loss; /* the worst reporter's */
} cell_t;

static int cmp_name (const void *a, const void *b)
{
    return strverscmp (*(const char *const *)a, *(const char *const *)b);
}

static ssize_t name_index (char **names, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp (names[i], s) == 0) {
            return (ssize_t)i;
        }
    }
    return -1;
}

/* Linear interpolation between two colours a and b (0xRRGGBB) at t in [0,1]. */
static void mix (char *buf, size_t len, unsigned a, unsigned b, double t)
{
    unsigned c[3];

    t = t < 0 ? 0 : t > 1 ? 1 : t;
    for (int i = 0; i < 3; i++) {
        int sh = 16 - 8 * i;
        double x = ((a >> sh) & 0xff) * (1 - t) + ((b >> sh) & 0xff) * t;
        c[i] = (unsigned)lround (x);
    }
    snprintf (buf, len, "#%02x%02x%02x", c[0], c[1], c[2]);
}

/* Loss (any) is red, from light at 0.01% to dark at 10% on a log scale; a
 * clean pair is green to orange by its delay between the job's fastest and
 * slowest pair.
 */
static void cell_color (const cell_t *c, int64_t lo, int64_t hi, char *buf, size_t len)
{
    if (!c->has_data) {
        snprintf (buf, len, "#e0e0e0");
    } else if (c->lost > 0) {
        mix (buf, len, 0xf4a582, 0x67001f, (log10 (c->loss) + 4) / 3);
    } else if (!c->has_owd || hi <= lo) {
        snprintf (buf, len, "#a6d96a");
    } else {
        double t = (double)(c->owd_p50_ns - lo) / (double)(hi - lo);
        if (t < 0.5) {
            mix (buf, len, 0x1a9850, 0xfee08b, t * 2);
        } else {
            mix (buf, len, 0xfee08b, 0xf46d43, t * 2 - 1);
        }
    }
}

static void heatmap (FILE *fp, char **names, size_t n, const cell_t *cells)
{
    size_t maxlen = 0;
    int cs, margin, size;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    char b[3][32], color[16];

    for (size_t i = 0; i < n; i++) {
        size_t l = strlen (names[i]);
        maxlen = l > maxlen ? l : maxlen;
    }
    for (size_t i = 0; i < n * n; i++) {
        if (cells[i].has_owd) {
            lo = cells[i].owd_p50_ns < lo ? cells[i].owd_p50_ns : lo;
            hi = cells[i].owd_p50_ns > hi ? cells[i].owd_p50_ns : hi;
        }
    }
    cs = n <= 8 ? 64 : n <= 16 ? 40 : n <= 32 ? 22 : 12;
    margin = 12 + 7 * (int)maxlen;
    size = margin + cs * (int)n + 4;
    fprintf (fp,
             "<svg id=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\""
             " height=\"%d\" data-nodes=\"%zu\" role=\"img\""
             " aria-label=\"one-way delay and loss, source rows, destination"
             " columns\">\n",
             size,
             size,
             n);
    for (size_t i = 0; i < n; i++) {
        int at = margin + cs * (int)i + cs / 2;
        fprintf (fp,
                 "<text x=\"%d\" y=\"%d\" text-anchor=\"end\""
                 " dominant-baseline=\"middle\">",
                 margin - 6,
                 at);
        esc (fp, names[i]);
        fprintf (fp,
                 "</text>\n<text transform=\"translate(%d,%d) rotate(-90)\""
                 " dominant-baseline=\"middle\">",
                 at,
                 margin - 6);
        esc (fp, names[i]);
        fputs ("</text>\n", fp);
    }
    for (size_t s = 0; s < n; s++) {
        for (size_t t = 0; t < n; t++) {
            const cell_t *c = &cells[s * n + t];
            int x = margin + cs * (int)t, y = margin + cs * (int)s;
            if (s == t) {
                fprintf (fp,
                         "<rect class=\"diag\" x=\"%d\" y=\"%d\" width=\"%d\""
                         " height=\"%d\" fill=\"#fff\" stroke=\"#ccc\"/>\n",
                         x,
                         y,
                         cs - 1,
                         cs - 1);
                continue;
            }
            cell_color (c, lo, hi, color, sizeof (color));
            fputs ("<rect class=\"cell\" data-src=\"", fp);
            esc (fp, names[s]);
            fputs ("\" data-dst=\"", fp);
            esc (fp, names[t]);
            fputs ("\" data-owd-ns=\"", fp);
            if (c->has_owd) {
                fprintf (fp, "%lld", (long long)c->owd_p50_ns);
            }
            fputs ("\" data-loss=\"", fp);
            if (c->has_data) {
                fprintf (fp, "%.6f", c->loss);
            }
            fprintf (fp,
                     "\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\">"
                     "<title>",
                     x,
                     y,
                     cs - 1,
                     cs - 1,
                     color);
            esc (fp, names[s]);
            fputs (" \xe2\x86\x92 ", fp);
            esc (fp, names[t]);
            if (!c->has_data) {
                fputs (": no data", fp);
            } else {
                fprintf (fp,
                         ": owd p50 %s p99 %s, loss %.3f%% (%lld of %lld)",
                         c->has_owd ? fm_duration_format (c->owd_p50_ns, b[0], 32) : "-",
                         c->has_owd ? fm_duration_format (c->owd_p99_ns, b[1], 32) : "-",
                         100 * c->loss,
                         (long long)c->lost,
                         (long long)c->sent);
            }
            fputs ("</title></rect>\n", fp);
            if (cs >= 40 && c->has_data) {
                /* Light text on the dark red of a lossy pair. */
                const char *ink = c->lost > 0 ? " style=\"fill:#fff\"" : "";
                fprintf (fp,
                         "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\"%s>%s</text>\n",
                         x + cs / 2,
                         y + cs / 2 - 2,
                         ink,
                         c->has_owd ? fm_duration_format (c->owd_p50_ns, b[2], 32) : "-");
                if (c->lost > 0) {
                    fprintf (fp,
                             "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\"%s>"
                             "%.2g%% lost</text>\n",
                             x + cs / 2,
                             y + cs / 2 + 11,
                             ink,
                             100 * c->loss);
                }
            }
        }
    }
    fputs ("</svg>\n<p class=\"meta\">Rows: source, columns: destination. Colour:"
           " <span style=\"color:#1a9850\">&#9632;</span> fastest to"
           " <span style=\"color:#f46d43\">&#9632;</span> slowest one-way delay"
           " (p50) of the job; <span style=\"color:#b2182b\">&#9632;</span> any loss"
           " (darker: more, 10% and above darkest);"
           " <span style=\"color:#e0e0e0\">&#9632;</span> no data. The worse of the"
           " sender's and the receiver's loss counts.</p>\n",
           fp);
}

/* The job's nodes (agents and every peer its links name), sorted, and one
 * cell per ordered pair from the links.
 */
static int grid (const fm_agent_t *agents,
                 size_t nagents,
                 const fm_link_stat_t *links,
                 size_t nlinks,
                 char ***names_out,
                 size_t *n_out,
                 cell_t **cells_out)
{
    size_t cap = nagents + 2 * nlinks, n = 0;
    char **names = calloc (cap ? cap : 1, sizeof (*names));
    cell_t *cells;

    if (!names) {
        return -1;
    }
    for (size_t i = 0; i < nagents; i++) {
        if (name_index (names, n, agents[i].node) < 0) {
            names[n++] = (char *)agents[i].node;
        }
    }
    for (size_t i = 0; i < nlinks; i++) {
        if (name_index (names, n, links[i].src) < 0) {
            names[n++] = (char *)links[i].src;
        }
        if (name_index (names, n, links[i].dst) < 0) {
            names[n++] = (char *)links[i].dst;
        }
    }
    qsort (names, n, sizeof (*names), cmp_name);
    if (n > FM_WEBPAGE_GRID_MAX) {
        *names_out = names;
        *n_out = n;
        *cells_out = NULL;
        return 0;
    }
    if (!(cells = calloc (n > 0 ? n * n : 1, sizeof (*cells)))) {
        free (names);
        return -1;
    }
    for (size_t i = 0; i < nlinks; i++) {
        const fm_link_stat_t *l = &links[i];
        ssize_t s = name_index (names, n, l->src), t = name_index (names, n, l->dst);
        cell_t *c;
        double loss = loss_of (l->lost, l->sent);
        if (s < 0 || t < 0 || s == t) {
            continue;
        }
        c = &cells[(size_t)s * n + (size_t)t];
        if (!c->has_data || loss > c->loss) {
            c->loss = loss;
            c->lost = l->lost;
            c->sent = l->sent;
        }
        c->has_data = true;
        if (l->has_owd && (!c->has_owd || l->owd_p99_ns > c->owd_p99_ns)) {
            c->has_owd = true;
            c->owd_p50_ns = l->owd_p50_ns;
            c->owd_p99_ns = l->owd_p99_ns;
        }
    }
    *names_out = names;
    *n_out = n;
    *cells_out = cells;
    return 0;
}

static const char *const palette[] = {"#1f77b4",
                                      "#ff7f0e",
                                      "#2ca02c",
                                      "#d62728",
                                      "#9467bd",
                                      "#8c564b",
                                      "#e377c2",
                                      "#7f7f7f",
                                      "#bcbd22",
                                      "#17becf"};
#define NPALETTE (sizeof (palette) / sizeof (palette[0]))

static void clock_chart (FILE *fp, const fm_clock_point_t *p, size_t n)
{
    const int w = 640, h = 200, l = 70, r = 10, t = 10, bm = 24;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN, ymax = 1;
    size_t lines = 0;
    char b[2][32];

    if (n == 0) {
        fputs ("<p class=\"none\">no window carried a clock estimate</p>\n", fp);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        t0 = p[i].end_ns < t0 ? p[i].end_ns : t0;
        t1 = p[i].end_ns > t1 ? p[i].end_ns : t1;
        ymax = p[i].error_ns > ymax ? p[i].error_ns : ymax;
    }
    fprintf (fp,
             "<svg id=\"clock\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\""
             " height=\"%d\" role=\"img\" aria-label=\"clock error bound by node\">\n"
             "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\""
             " stroke=\"#999\"/>\n"
             "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n"
             "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n"
             "<text x=\"%d\" y=\"%d\">0s</text>\n"
             "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">+%s</text>\n",
             w,
             h,
             l,
             t,
             w - l - r,
             h - t - bm,
             l - 4,
             t + 10,
             fm_duration_format (ymax, b[0], 32),
             l - 4,
             h - bm,
             l,
             h - 8,
             w - r,
             h - 8,
             fm_duration_format (t1 - t0, b[1], 32));
    for (size_t i = 0; i < n;) {
        size_t j = i;
        fputs ("<polyline class=\"clock-node\" data-node=\"", fp);
        esc (fp, p[i].node);
        fprintf (fp,
                 "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                 palette[lines % NPALETTE]);
        for (; j < n && strcmp (p[j].node, p[i].node) == 0; j++) {
            double x =
                l
                + (t1 > t0 ? (double)(p[j].end_ns - t0) / (double)(t1 - t0) : 0.5)
                      * (w - l - r);
            double y = (h - bm) - (double)p[j].error_ns / (double)ymax * (h - t - bm);
            fprintf (fp, "%.1f,%.1f ", x, y);
        }
        fputs ("\"><title>", fp);
        esc (fp, p[i].node);
        fputs ("</title></polyline>\n", fp);
        lines++;
        i = j;
    }
    fputs ("</svg>\n<p class=\"meta\">Clock error bound of each node's offset estimate"
           " (the largest of each time slice) since the job's first window:",
           fp);
    lines = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp (p[i].node, p[i - 1].node) != 0) {
            fprintf (fp,
                     " <span style=\"color:%s\">&#9632;</span>&nbsp;",
                     palette[lines++ % NPALETTE]);
            esc (fp, p[i].node);
        }
    }
    fputs ("</p>\n", fp);
}

static void actions_table (FILE *fp, const fm_action_rec_t *a, size_t n)
{
    char b[40];

    if (n == 0) {
        fputs ("<p class=\"none\">no action was taken for this job</p>\n", fp);
        return;
    }
    fputs ("<table class=\"actions\"><tr><th>time</th><th>kind</th><th>node</th>"
           "<th>element</th><th>reason</th><th>result</th></tr>\n",
           fp);
    for (size_t i = 0; i < n; i++) {
        fprintf (fp, "<tr><td>%s</td><td>", fmt_time (a[i].at_ns, b, sizeof (b)));
        esc (fp, a[i].kind);
        fputs ("</td><td>", fp);
        esc (fp, a[i].node);
        fputs ("</td><td>", fp);
        esc (fp, a[i].element);
        fputs ("</td><td>", fp);
        esc (fp, a[i].reason);
        if (a[i].explain[0]) {
            fputs ("<br><small>", fp);
            esc (fp, a[i].explain);
            fputs ("</small>", fp);
        }
        fputs ("</td><td>", fp);
        esc (fp, a[i].result);
        fputs (a[i].dry_run ? " (dry run)</td></tr>\n" : "</td></tr>\n", fp);
    }
    fputs ("</table>\n", fp);
}

void fm_webpage_job (fm_daemon_t *d,
                     const fm_request_t *req,
                     const fm_ident_t *ident,
                     int64_t job_id,
                     fm_response_t *resp)
{
    fm_job_t job;
    fm_agent_t *agents = NULL;
    fm_link_stat_t *links = NULL;
    fm_clock_point_t *clock = NULL;
    fm_action_rec_t *acts = NULL;
    size_t nagents = 0, nlinks = 0, nclock = 0, nacts = 0, n = 0;
    char **names = NULL;
    cell_t *cells = NULL;
    fm_error_t err, aerr;
    char title[64], b[2][40], *text = NULL;
    size_t size = 0;
    bool acts_ok;
    FILE *fp;

    (void)req;
    if (fm_store_job_get (d->store, job_id, &job, &err) < 0) {
        fm_api_store_error (resp, errno, err.text);
        return;
    }
    sodium_memzero (job.probe_key, sizeof (job.probe_key));
    if (ident && !fm_auth_may_read_job (d->auth, ident, job.user_id)) {
        fm_api_error (resp,
                      403,
                      "forbidden",
                      NULL,
                      "uid %u may not read job %lld",
                      (unsigned)ident->uid,
                      (long long)job_id);
        return;
    }
    if (fm_store_agents (d->store, job_id, &agents, &nagents, &err) < 0
        || fm_store_links (d->store, 0, job_id, 0, &links, &nlinks, &err) < 0
        || fm_store_clock_series (
               d->store, job_id, CLOCK_BUCKETS, CLOCK_MAX_POINTS, &clock, &nclock, &err)
               < 0) {
        fm_api_store_error (resp, errno, err.text);
        goto out;
    }
    /* The page still shows the fabric when the action log cannot be read. */
    acts_ok =
        fm_store_actions (d->store, 0, job_id, NULL, MAX_ACTIONS, &acts, &nacts, &aerr)
        == 0;
    if (grid (agents, nagents, links, nlinks, &names, &n, &cells) < 0) {
        fm_api_error (resp, 500, "internal", NULL, "out of memory");
        goto out;
    }
    snprintf (title, sizeof (title), "job %lld - fabric-monitor", (long long)job_id);
    if (!(fp = start (title, &text, &size, resp))) {
        goto out;
    }
    fprintf (
        fp,
        "<p><a href=\"/\">fabric-monitor</a></p>\n<h1>Job %lld</h1>\n"
        "<p class=\"meta\">mode %s &middot; owner uid %lld &middot; nodes %zu"
        " of %lld &middot; window %s &middot; since %s &middot; page made %s</p>\n",
        (long long)job_id,
        fm_registration_mode_name (job.mode),
        (long long)job.user_id,
        nagents,
        (long long)job.expected,
        fm_duration_format (job.window_ns, b[0], 40),
        fmt_time (job.created_ns, b[1], 40),
        fmt_time (fm_time_real_ns (), title, sizeof (title)));
    fputs ("<h2>One-way delay and loss</h2>\n", fp);
    if (cells) {
        heatmap (fp, names, n, cells);
    } else {
        fprintf (fp,
                 "<p class=\"none\">%zu nodes: more than %d, no heatmap; the worst"
                 " links follow</p>\n",
                 n,
                 FM_WEBPAGE_GRID_MAX);
    }
    fputs ("<h2>Worst links</h2>\n", fp);
    links_table (fp, links, nlinks, WORST_LINKS);
    fputs ("<h2>Clock error bound</h2>\n", fp);
    clock_chart (fp, clock, nclock);
    fputs ("<h2>Actions</h2>\n", fp);
    if (acts_ok) {
        actions_table (fp, acts, nacts);
    } else {
        fputs ("<p class=\"none\">the action log cannot be read: ", fp);
        esc (fp, aerr.text);
        fputs ("</p>\n", fp);
    }
    fputs ("</body></html>\n", fp);
    finish (fp, &text, &size, resp);
out:
    free (agents);
    free (links);
    free (clock);
    free (acts);
    free (names);
    free (cells);
}

/* ---- the index ---- */

static const char *const states[] = {"failed", "degraded", "suspect", "healthy"};
#define NSTATES (sizeof (states) / sizeof (states[0]))

/* Where a state sorts: worst first; one this page does not know (a newer
 * monitor's) with the healthy, under its own name.
 */
static size_t rank (const char *state)
{
    for (size_t i = 0; state && i < NSTATES - 1; i++) {
        if (strcmp (state, states[i]) == 0) {
            return i;
        }
    }
    return NSTATES - 1;
}

/* The monitor's state of node `name`, "healthy" when it lists none, NULL
 * without a monitor (state NULL).
 */
static const char *node_state (json_t *state, const char *name)
{
    size_t i;
    json_t *e;

    if (!state) {
        return NULL;
    }
    json_array_foreach (json_object_get (state, "elements"), i, e) {
        const char *en = json_string_value (json_object_get (e, "name"));
        const char *st = json_string_value (json_object_get (e, "state"));
        if (en && st && strncmp (en, "node:", 5) == 0 && strcmp (en + 5, name) == 0) {
            return st;
        }
    }
    return "healthy";
}

static void node_row (FILE *fp, const fm_node_stat_t *x, const char *state)
{
    char b[3][40];

    fputs ("<tr><td>", fp);
    esc (fp, x->node);
    fputs ("</td><td class=\"st-", fp);
    esc (fp, state ? state : "unknown");
    fputs ("\">", fp);
    esc (fp, state ? state : "-");
    fprintf (fp,
             "</td><td>%s</td><td><a href=\"/jobs/%lld\">%lld</a></td>"
             "<td class=\"num\">%lld</td><td class=\"num\">%.2f%%</td>"
             "<td class=\"num\">%s</td><td class=\"num\">%s</td></tr>\n",
             fmt_time (x->last_seen_ns, b[0], 40),
             (long long)x->last_job_id,
             (long long)x->last_job_id,
             (long long)x->windows,
             100 * loss_of (x->lost, x->sent),
             x->has_rtt ? fm_duration_format (x->rtt_p99_max_ns, b[1], 40) : "-",
             x->has_clock ? fm_duration_format (x->clock_error_ns, b[2], 40) : "-");
}

static void elements_table (FILE *fp, json_t *state)
{
    json_t *elements = json_object_get (state, "elements");
    json_t *alarms = json_object_get (state, "alarms");
    size_t i;
    json_t *e;

    fputs ("<h2>Elements not healthy</h2>\n", fp);
    if (json_array_size (elements) == 0) {
        fputs ("<p class=\"none\">none</p>\n", fp);
    } else {
        fputs ("<table class=\"elements\"><tr><th>element</th><th>state</th>"
               "<th>class</th><th>side</th><th class=\"num\">score</th>"
               "<th>evidence</th></tr>\n",
               fp);
        for (size_t s = 0; s < NSTATES; s++) {
            json_array_foreach (elements, i, e) {
                const char *st = json_string_value (json_object_get (e, "state"));
                if (rank (st) != s) {
                    continue;
                }
                fputs ("<tr><td>", fp);
                esc (fp, json_string_value (json_object_get (e, "name")));
                fputs ("</td><td class=\"st-", fp);
                esc (fp, st ? st : "unknown");
                fputs ("\">", fp);
                esc (fp, st ? st : "-");
                fputs ("</td><td>", fp);
                esc (fp, json_string_value (json_object_get (e, "class")));
                fputs ("</td><td>", fp);
                esc (fp, json_string_value (json_object_get (e, "side")));
                fprintf (fp,
                         "</td><td class=\"num\">%.2f</td><td>",
                         json_number_value (json_object_get (e, "score")));
                esc (fp, json_string_value (json_object_get (e, "evidence")));
                fputs ("</td></tr>\n", fp);
            }
        }
        fputs ("</table>\n", fp);
    }
    if (json_array_size (alarms) > 0) {
        fputs ("<h2>Alarms</h2>\n<ul>\n", fp);
        json_array_foreach (alarms, i, e) {
            fputs ("<li>", fp);
            esc (fp, json_string_value (json_object_get (e, "element")));
            fputs (": ", fp);
            esc (fp, json_string_value (json_object_get (e, "text")));
            fputs ("</li>\n", fp);
        }
        fputs ("</ul>\n", fp);
    }
}

void fm_webpage_index (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp)
{
    fm_node_stat_t *nodes = NULL;
    fm_link_stat_t *links = NULL;
    size_t nnodes = 0, nlinks = 0, lossy = 0;
    json_t *state = NULL;
    fm_error_t err;
    char *text = NULL, b[40];
    size_t size = 0;
    FILE *fp;

    (void)req;
    if (fm_store_nodes (
            d->store, fm_time_real_ns () - INDEX_SINCE_NS, &nodes, &nnodes, &err)
            < 0
        || fm_store_links (d->store,
                           fm_time_real_ns () - INDEX_SINCE_NS,
                           0,
                           0,
                           &links,
                           &nlinks,
                           &err)
               < 0) {
        fm_api_store_error (resp, errno, err.text);
        goto out;
    }
    if (d->monitor && !(state = fm_monitor_state_json (d->monitor))) {
        fm_api_error (resp, 500, "internal", NULL, "out of memory");
        goto out;
    }
    if (!(fp = start ("fabric-monitor", &text, &size, resp))) {
        goto out;
    }
    fprintf (fp,
             "<h1>fabric-monitor</h1>\n<p class=\"meta\">fabricd %s &middot; %zu nodes"
             " &middot; page made %s%s</p>\n",
             PACKAGE_VERSION,
             nnodes,
             fmt_time (fm_time_real_ns (), b, sizeof (b)),
             state ? "" : " &middot; the fabric monitor is not running: no states");
    if (state) {
        elements_table (fp, state);
    }
    fputs ("<h2>Nodes</h2>\n", fp);
    if (nnodes == 0) {
        fputs ("<p class=\"none\">no node has reported</p>\n", fp);
    } else {
        fputs ("<table class=\"nodes\"><tr><th>node</th><th>state</th>"
               "<th>last window</th><th>last job</th>"
               "<th class=\"num\">windows (5m)</th><th class=\"num\">loss (5m)</th>"
               "<th class=\"num\">rtt p99 max</th><th class=\"num\">clock error</th>"
               "</tr>\n",
               fp);
        /* Worst state first; without a monitor, the store's order (by name). */
        for (size_t s = 0; s < (state ? NSTATES : 1); s++) {
            for (size_t i = 0; i < nnodes; i++) {
                const char *st = node_state (state, nodes[i].node);
                if (!state || rank (st) == s) {
                    node_row (fp, &nodes[i], st);
                }
            }
        }
        fputs ("</table>\n", fp);
    }
    for (size_t i = 0; i < nlinks; i++) {
        lossy += links[i].lost > 0;
    }
    fprintf (fp, "<h2>Links (5m): %zu lossy, %zu clean</h2>\n", lossy, nlinks - lossy);
    links_table (fp, links, nlinks, WORST_LINKS);
    fputs ("</body></html>\n", fp);
    finish (fp, &text, &size, resp);
out:
    json_decref (state);
    fm_store_nodes_free (nodes, nnodes);
    free (links);
}
