/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "duration.h"
#include "fmtime.h"
#include "httpclient.h"
#include "watch.h"

#define MAX_ANSWER (16 * 1024 * 1024)
#define DEFAULT_WINDOW_NS (5 * FM_NSEC_PER_SEC) /* fabricd's report_window default */
#define MIN_INTERVAL_NS (FM_NSEC_PER_SEC / 10)
#define MAX_INTERVAL_NS (3600 * FM_NSEC_PER_SEC)
/* A node whose latest window is older than this many windows is silent. */
#define SILENT_INTERVALS 3
/* A clock error bound above this makes one-way delays meaningless. */
#define CLOCK_ERROR_BAD_NS (1000 * 1000)

static volatile sig_atomic_t stop;

static void on_signal (int sig)
{
    (void)sig;
    stop = 1;
}

/* GET path as JSON, or NULL with the reason in msg: unlike fabricctl's other
 * commands a failed refresh is shown, and the next one tried.
 */
static json_t *fetch (const char *url,
                      const char *socket,
                      const char *path,
                      long timeout_s,
                      char *msg,
                      size_t msglen)
{
    fm_httpclient_opts_t opts = {.url = url,
                                 .socket = socket,
                                 .auth = FM_HTTPCLIENT_AUTH_TRY,
                                 .timeout_s = timeout_s,
                                 .connect_timeout_s = timeout_s,
                                 .max_answer = MAX_ANSWER};
    fm_httpclient_answer_t a = {0};
    fm_httpclient_t *hc;
    fm_error_t err;
    json_t *o = NULL;

    if (!(hc = fm_httpclient_create (&opts, &err))) {
        snprintf (msg, msglen, "%s", err.text);
        return NULL;
    }
    if (fm_httpclient_request (hc, "GET", path, NULL, 0, &a, &err) < 0) {
        snprintf (msg, msglen, "cannot reach fabricd at %s: %s", url, err.text);
    } else if (!(o = json_loadb (a.body ? a.body : "", a.len, 0, NULL))) {
        snprintf (
            msg, msglen, "%s: HTTP %ld with an answer that is not JSON", path, a.status);
    } else if (a.status < 200 || a.status > 299) {
        const char *ecode = "", *emsg = "(no message)";
        json_unpack (o, "{s:{s?s, s?s}}", "error", "code", &ecode, "message", &emsg);
        snprintf (msg, msglen, "%s: HTTP %ld %s: %s", path, a.status, ecode, emsg);
        json_decref (o);
        o = NULL;
    }
    fm_httpclient_answer_clear (&a);
    fm_httpclient_destroy (hc);
    return o;
}

static const char *fmt_ns (json_t *v, char *buf, size_t len)
{
    return json_is_integer (v) ? fm_duration_format (json_integer_value (v), buf, len) : "-";
}

static const char *str (json_t *o, const char *key)
{
    const char *s = json_string_value (json_object_get (o, key));

    return s ? s : "-";
}

/* Why a node is not healthy, from its latest window and the last `since`:
 * the first reason that applies, NULL when none does.
 */
static const char *
node_trouble (json_t *n, int64_t now, int64_t window, char *buf, size_t len)
{
    json_t *h;
    size_t i;
    int64_t seen = json_integer_value (json_object_get (n, "last_seen_ns"));
    double loss = json_number_value (json_object_get (n, "loss_ratio"));
    json_t *cerr = json_object_get (n, "clock_error_ns");

    if (now - seen > SILENT_INTERVALS * window) {
        snprintf (buf,
                  len,
                  "silent\tno window for %llds",
                  (long long)((now - seen) / FM_NSEC_PER_SEC));
        return buf;
    }
    json_array_foreach (json_object_get (n, "health"), i, h) {
        const char *type = str (h, "type");
        if (strcmp (type, "nic") == 0
            && json_is_false (json_object_get (h, "link_up"))) {
            snprintf (buf, len, "nic-down\t%s link down", str (h, "name"));
            return buf;
        }
        if (strcmp (type, "ib_port") == 0 && strcmp (str (h, "state"), "ACTIVE") != 0) {
            snprintf (buf,
                      len,
                      "ib-port\t%s port %lld %s",
                      str (h, "device"),
                      (long long)json_integer_value (json_object_get (h, "port")),
                      str (h, "state"));
            return buf;
        }
    }
    if (loss > 0) {
        snprintf (buf, len, "lossy\tloss %.2f%%", loss * 100);
        return buf;
    }
    if (json_is_integer (cerr) && json_integer_value (cerr) > CLOCK_ERROR_BAD_NS) {
        char b[32];
        snprintf (buf, len, "clock\terror bound %s", fmt_ns (cerr, b, sizeof (b)));
        return buf;
    }
    return NULL;
}

/* The daemon's window: its fabric loop's, else that of the most recent job
 * any node reported for, else the default.
 */
static int64_t
daemon_window (const char *url, const char *socket, json_t *fabric, json_t *nodes)
{
    json_int_t job = 0, newest = 0;
    char path[64], msg[256];
    json_t *n, *o;
    int64_t w = DEFAULT_WINDOW_NS;
    json_int_t fw = json_integer_value (json_object_get (fabric, "window_ns"));
    size_t i;

    if (fw >= MIN_INTERVAL_NS && fw <= MAX_INTERVAL_NS) {
        return fw;
    }
    json_array_foreach (nodes, i, n) {
        json_int_t seen = json_integer_value (json_object_get (n, "last_seen_ns"));
        if (seen > newest) {
            newest = seen;
            job = json_integer_value (json_object_get (n, "last_job_id"));
        }
    }
    if (job <= 0) {
        return w;
    }
    snprintf (path, sizeof (path), "/v1/jobs/%lld", (long long)job);
    if ((o = fetch (url, socket, path, 10, msg, sizeof (msg)))) {
        json_int_t v = json_integer_value (json_object_get (o, "window_ns"));
        if (v >= MIN_INTERVAL_NS && v <= MAX_INTERVAL_NS) {
            w = v;
        }
        json_decref (o);
    }
    return w;
}

typedef struct {
    const char *url, *socket;
    int64_t interval, window; /* window: 0 until the daemon's is known */
    bool interval_set;
    long worst, count;
} watch_t;

static void frame (watch_t *w, long n)
{
    char path[96], msg[512], when[40], b[4][32];
    int64_t now = fm_time_real_ns ();
    long timeout_s = (long)(w->interval / FM_NSEC_PER_SEC) + 1;
    char fmsg[512];
    json_t *nodes, *links = NULL, *fabric = NULL, *n_arr, *l;
    size_t i, bad = 0, lossy = 0;

    if (timeout_s > 10) {
        timeout_s = 10;
    }
    nodes = fetch (w->url, w->socket, "/v1/nodes", timeout_s, msg, sizeof (msg));
    /* The fabric loop's judgement; a daemon without it (503) still has the
     * nodes' own view below.
     */
    if (nodes) {
        fabric =
            fetch (w->url, w->socket, "/v1/fabric", timeout_s, fmsg, sizeof (fmsg));
    }
    if (nodes && w->window == 0) {
        w->window =
            daemon_window (w->url, w->socket, fabric, json_object_get (nodes, "nodes"));
        if (!w->interval_set) {
            w->interval = w->window;
        }
    }
    if (nodes) {
        /* Links over the last few windows: recent enough to be live, long
         * enough to hold a window of every node.
         */
        snprintf (path,
                  sizeof (path),
                  "/v1/links?worst=%ld&since=%llds",
                  w->worst,
                  (long long)((SILENT_INTERVALS * w->window) / FM_NSEC_PER_SEC + 1));
        links = fetch (w->url, w->socket, path, timeout_s, msg, sizeof (msg));
    }
    /* Home, clear: the frame replaces the previous one in a terminal. */
    printf ("\033[H\033[2J");
    printf ("fabricctl watch  %s  every %s  %s",
            w->url,
            fm_duration_format (w->interval, b[0], 32),
            fm_time_format_rfc3339 (now, when, sizeof (when)) ? when : "");
    if (w->count > 0) {
        printf ("  (%ld/%ld)", n, w->count);
    }
    printf ("\n\n");
    if (!nodes || !links) {
        printf ("%s\n", msg);
        json_decref (nodes);
        json_decref (fabric);
        fflush (stdout);
        return;
    }
    n_arr = json_object_get (nodes, "nodes");
    json_array_foreach (json_object_get (links, "links"), i, l) {
        lossy += json_integer_value (json_object_get (l, "lost")) > 0;
    }
    json_array_foreach (n_arr, i, l) {
        char why[160];
        bad += node_trouble (l, now, w->window, why, sizeof (why)) != NULL;
    }
    printf ("nodes %zu  not healthy %zu  worst links %zu (lossy %zu)\n\n",
            json_array_size (n_arr),
            bad,
            json_array_size (json_object_get (links, "links")),
            lossy);
    printf ("FABRIC ELEMENTS NOT HEALTHY\n");
    if (!fabric) {
        printf ("  (%s)\n", fmsg);
    } else if (json_array_size (json_object_get (fabric, "elements")) == 0) {
        printf ("  (none)\n");
    } else {
        printf ("  %-24s %-9s %-8s %s\n", "ELEMENT", "STATE", "CLASS", "EVIDENCE");
        json_array_foreach (json_object_get (fabric, "elements"), i, l) {
            printf ("  %-24s %-9s %-8s %s\n",
                    str (l, "name"),
                    str (l, "state"),
                    str (l, "class"),
                    str (l, "evidence"));
        }
    }
    json_array_foreach (json_object_get (fabric, "alarms"), i, l) {
        printf ("  ALARM %s: %s\n", str (l, "element"), str (l, "text"));
    }
    printf ("\nNODES NOT HEALTHY\n");
    if (bad == 0) {
        printf ("  (none)\n");
    } else {
        printf ("  %-20s %-9s %s\n", "NODE", "STATE", "WHY");
        json_array_foreach (n_arr, i, l) {
            char why[160], *tab;
            if (!node_trouble (l, now, w->window, why, sizeof (why))) {
                continue;
            }
            tab = strchr (why, '\t');
            *tab = '\0';
            printf ("  %-20s %-9s %s\n", str (l, "node"), why, tab + 1);
        }
    }
    printf ("\nWORST LINKS\n");
    if (json_array_size (json_object_get (links, "links")) == 0) {
        printf ("  (none)\n");
    } else {
        printf ("  %-16s %-16s %-16s %8s %10s %10s %10s\n",
                "SRC",
                "DST",
                "REPORTER",
                "LOSS",
                "RTT_P99",
                "OWD_P50",
                "OWD_P99");
        json_array_foreach (json_object_get (links, "links"), i, l) {
            printf ("  %-16s %-16s %-16s %7.2f%% %10s %10s %10s\n",
                    str (l, "src"),
                    str (l, "dst"),
                    str (l, "reporter"),
                    json_number_value (json_object_get (l, "loss_ratio")) * 100,
                    fmt_ns (json_object_get (l, "rtt_p99_ns"), b[1], 32),
                    fmt_ns (json_object_get (l, "owd_p50_ns"), b[2], 32),
                    fmt_ns (json_object_get (l, "owd_p99_ns"), b[3], 32));
        }
    }
    fflush (stdout);
    json_decref (nodes);
    json_decref (links);
    json_decref (fabric);
}

static void bad_usage (const char *what)
{
    fprintf (stderr,
             "fabricctl watch: %s\n"
             "Usage: fabricctl watch [--interval DURATION] [--count N] [--worst N]\n",
             what);
    exit (2);
}

static long parse_long (const char *s, long lo, long hi, const char *what)
{
    char *end;
    long v;

    errno = 0;
    v = strtol (s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        bad_usage (what);
    }
    return v;
}

void fm_watch_run (const char *url, const char *socket, int argc, char **argv)
{
    static const struct option opts[] = {
        {"interval", required_argument, NULL, 'i'},
        {"count", required_argument, NULL, 'n'},
        {"worst", required_argument, NULL, 'w'},
        {NULL, 0, NULL, 0},
    };
    struct sigaction sa = {.sa_handler = on_signal};
    watch_t w = {
        .url = url, .socket = socket, .interval = DEFAULT_WINDOW_NS, .worst = 10};
    int opt;

    while ((opt = getopt_long (argc, argv, "+", opts, NULL)) != -1) {
        switch (opt) {
        case 'i':
            if (fm_duration_parse (optarg, &w.interval) < 0
                || w.interval < MIN_INTERVAL_NS || w.interval > MAX_INTERVAL_NS) {
                bad_usage ("--interval: a duration from 100ms to 1h ('5s', '1m')");
            }
            w.interval_set = true;
            break;
        case 'n':
            w.count = parse_long (optarg, 1, 1000000, "--count: an integer >= 1");
            break;
        case 'w':
            w.worst =
                parse_long (optarg, 1, 100, "--worst: an integer within [1, 100]");
            break;
        default:
            bad_usage ("unknown option");
        }
    }
    if (optind != argc) {
        bad_usage ("unexpected argument");
    }
    sigemptyset (&sa.sa_mask);
    sigaction (SIGINT, &sa, NULL);
    sigaction (SIGTERM, &sa, NULL);
    for (long n = 1; !stop; n++) {
        struct timespec ts;
        int64_t until;
        frame (&w, n);
        if (w.count > 0 && n >= w.count) {
            break;
        }
        /* Sleep in slices so that a signal ends the view at once. */
        until = fm_time_mono_ns () + w.interval;
        while (!stop && fm_time_mono_ns () < until) {
            int64_t left = until - fm_time_mono_ns ();
            ts = fm_time_to_timespec (left < FM_NSEC_PER_SEC / 10 ? left
                                                                : FM_NSEC_PER_SEC / 10);
            nanosleep (&ts, NULL);
        }
    }
    printf ("\n");
    fflush (stdout);
}
