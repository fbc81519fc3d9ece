/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

/* Load generator for POST /v1/reports: simulated agents of one job post batches
 * of windows; prints records/s, request latency quantiles and CPU seconds per
 * million link-window records (fabricd's when --pid is given, and our own).
 * With --agents N, N agents run concurrently, each on its own connection and
 * at a real agent's pace (one window per --interval); errors are counted, not
 * fatal, and fabricd's resident memory is sampled (with --pid) to show whether
 * it stays bounded.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fm/api.h"
#include "fmtime.h"
#include "httpclient.h"

/* --retry gives up on a batch after this long. */
#define RETRY_NS (60 * FM_NSEC_PER_SEC)

typedef struct {
    const char *url;
    const char *socket; /* NULL: no credential (fabricd --insecure-local) */
    int64_t job_id;
    int nodes, peers, windows, threads;
    int64_t requests; /* total; 0 with duration */
    double duration_s;
    bool retry; /* resend a batch until it is acknowledged */
    int agents; /* paced mode: this many concurrent agents (0: as fast as possible) */
    double interval_s; /* paced mode: one batch per agent this often */
    FILE *ack;         /* "node seq" per acknowledged window */
    pthread_mutex_t lock;
    int64_t next_request;
    int64_t records, acked_windows, failures;
    int64_t http_errors, net_errors; /* paced mode: non-200 answers, transport errors */
    int64_t *lat_ns;
    size_t nlat, lat_cap;
    int64_t t_end;
} bench_t;

typedef struct {
    bench_t *b;
    int first_node, nnodes;
    int64_t *seq;
    fm_httpclient_t *http;
    char *buf;
    size_t cap;
    unsigned rnd;
} worker_t;

static unsigned rnd (unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

/* Paced mode: worker threads need little stack, and a thousand of them fit. */
#define AGENT_STACK (256 * 1024)
/* Paced mode: a report of this many peers, as a real agent's in a large job. */
#define AGENT_PEERS 10

static int
post (worker_t *w, const char *path, const char *body, size_t len, long *code)
{
    fm_httpclient_answer_t a;
    fm_error_t err;

    if (fm_httpclient_request (w->http, "POST", path, body, len, &a, &err) < 0) {
        if (w->b->socket && !a.authenticated) {
            fprintf (stderr, "ingest: %s\n", err.text);
        }
        return -1;
    }
    *code = a.status;
    return 0;
}

static void put (worker_t *w, size_t *len, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

static void put (worker_t *w, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start (ap, fmt);
        n = vsnprintf (w->buf + *len, w->cap - *len, fmt, ap);
        va_end (ap);
        if (n >= 0 && (size_t)n < w->cap - *len) {
            *len += (size_t)n;
            return;
        }
        w->cap *= 2;
        if (!(w->buf = realloc (w->buf, w->cap))) {
            fprintf (stderr, "ingest: out of memory\n");
            exit (1);
        }
    }
}

/* One batch of b->windows windows for node, starting at seq. */
static size_t batch (worker_t *w, int node, int64_t seq, int64_t now)
{
    bench_t *b = w->b;
    size_t len = 0;

    put (w,
         &len,
         "{\"job_id\":%" PRId64 ",\"node\":\"bn%d\",\"windows\":[",
         b->job_id,
         node);
    for (int i = 0; i < b->windows; i++) {
        int64_t end = now - (int64_t)(b->windows - i) * 5 * FM_NSEC_PER_SEC;
        put (w,
             &len,
             "%s{\"seq\":%" PRId64 ",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64
             ",\"clock\":{\"offset_ns\":%u,\"error_ns\":%u},\"links\":[",
             i ? "," : "",
             seq + i,
             (int64_t)(end - 5 * FM_NSEC_PER_SEC),
             end,
             rnd (&w->rnd) % 5000,
             500 + rnd (&w->rnd) % 500);
        for (int p = 0, k = 0; k < b->peers; p++) {
            int peer = (node + 1 + p) % b->nodes;
            if (peer == node) {
                continue;
            }
            for (int dir = 0; dir < 2; dir++) {
                unsigned r50 = 8000 + rnd (&w->rnd) % 4000;
                unsigned o50 = r50 / 2;
                unsigned lost = rnd (&w->rnd) % 64 == 0 ? 1 : 0;
                put (w,
                     &len,
                     "%s{\"peer\":\"bn%d\",\"dir\":\"%s\",\"rtt_ns\":{\"p50\":%u,"
                     "\"p90\":%u,"
                     "\"p99\":%u,\"max\":%u},\"owd_ns\":{\"p50\":%u,\"p90\":%u,\"p99\":"
                     "%u,"
                     "\"max\":%u},\"sent\":50,\"received\":%u,\"lost\":%u,"
                     "\"reordered\":0}",
                     k || dir ? "," : "",
                     peer,
                     dir ? "in" : "out",
                     r50,
                     r50 + 2000,
                     r50 + 9000,
                     r50 + 30000,
                     o50,
                     o50 + 1000,
                     o50 + 4500,
                     o50 + 15000,
                     50 - lost,
                     lost);
            }
            k++;
        }
        put (w,
             &len,
             "],\"health\":[{\"type\":\"nic\",\"name\":\"eth0\",\"link_up\":true,"
             "\"speed_mbps\":100000,\"rx_errors\":0,\"tx_errors\":0,"
             "\"rx_dropped\":0,\"tx_dropped\":0,\"carrier_changes\":0}]}");
    }
    put (w, &len, "]}");
    return len;
}

static bool take_request (bench_t *b)
{
    bool ok;

    pthread_mutex_lock (&b->lock);
    if (b->requests > 0) {
        ok = b->next_request < b->requests;
    } else {
        ok = fm_time_mono_ns () < b->t_end;
    }
    if (ok) {
        b->next_request++;
    }
    pthread_mutex_unlock (&b->lock);
    return ok;
}

static void *run (void *arg)
{
    worker_t *w = arg;
    bench_t *b = w->b;
    int turn = 0;

    while (take_request (b)) {
        int node = w->first_node + turn++ % w->nnodes;
        int64_t *seq = &w->seq[node - w->first_node];
        size_t len = batch (w, node, *seq, fm_time_real_ns ());
        long code = 0;
        int64_t t0;

        int64_t give_up = fm_time_mono_ns () + RETRY_NS;
        for (;;) {
            t0 = fm_time_mono_ns ();
            if (post (w, "/v1/reports", w->buf, len, &code) == 0 && code == 200) {
                break;
            }
            pthread_mutex_lock (&b->lock);
            b->failures++;
            pthread_mutex_unlock (&b->lock);
            if (!b->retry || t0 > give_up) {
                fprintf (stderr, "ingest: POST /v1/reports failed (HTTP %ld)\n", code);
                exit (1);
            }
            usleep (50000);
        }
        pthread_mutex_lock (&b->lock);
        if (b->nlat == b->lat_cap) {
            b->lat_cap = b->lat_cap ? b->lat_cap * 2 : 4096;
            if (!(b->lat_ns = realloc (b->lat_ns, b->lat_cap * sizeof (int64_t)))) {
                fprintf (stderr, "ingest: out of memory\n");
                exit (1);
            }
        }
        b->lat_ns[b->nlat++] = fm_time_mono_ns () - t0;
        b->records += (int64_t)b->windows * b->peers * 2;
        b->acked_windows += b->windows;
        if (b->ack) {
            for (int i = 0; i < b->windows; i++) {
                fprintf (b->ack, "bn%d %" PRId64 "\n", node, *seq + i);
            }
            fflush (b->ack);
        }
        pthread_mutex_unlock (&b->lock);
        *seq += b->windows;
    }
    return NULL;
}

static void sleep_until (int64_t mono_ns)
{
    struct timespec ts = {.tv_sec = mono_ns / FM_NSEC_PER_SEC,
                          .tv_nsec = mono_ns % FM_NSEC_PER_SEC};

    while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* One agent at a real agent's pace: a batch every interval, the first one at a
 * random point of the first interval so that the agents do not post in step.
 */
static void *run_paced (void *arg)
{
    worker_t *w = arg;
    bench_t *b = w->b;
    int64_t interval = (int64_t)(b->interval_s * 1e9);
    int64_t next =
        fm_time_mono_ns () + (int64_t)(rnd (&w->rnd) % 1000) * interval / 1000;

    for (;; next += interval) {
        size_t len;
        long code = 0;
        int64_t t0, dt;
        int rc;

        if (next >= b->t_end) {
            break;
        }
        sleep_until (next);
        len = batch (w, w->first_node, w->seq[0], fm_time_real_ns ());
        t0 = fm_time_mono_ns ();
        rc = post (w, "/v1/reports", w->buf, len, &code);
        dt = fm_time_mono_ns () - t0;
        pthread_mutex_lock (&b->lock);
        if (rc < 0 || code != 200) {
            b->failures++;
            if (rc < 0) {
                b->net_errors++;
            } else {
                b->http_errors++;
            }
        } else {
            b->records += (int64_t)b->windows * b->peers * 2;
            b->acked_windows += b->windows;
            w->seq[0] += b->windows;
        }
        /* failed requests count in the latency too: a slow refusal is slow */
        if (b->nlat == b->lat_cap) {
            b->lat_cap = b->lat_cap ? b->lat_cap * 2 : 4096;
            if (!(b->lat_ns = realloc (b->lat_ns, b->lat_cap * sizeof (int64_t)))) {
                fprintf (stderr, "ingest: out of memory\n");
                exit (1);
            }
        }
        b->lat_ns[b->nlat++] = dt;
        pthread_mutex_unlock (&b->lock);
    }
    return NULL;
}

/* Resident set of pid in KiB, or -1. */
static long proc_rss_kib (long pid)
{
    char path[64], line[256];
    long kib = -1;
    FILE *fp;

    snprintf (path, sizeof (path), "/proc/%ld/status", pid);
    if (!(fp = fopen (path, "r"))) {
        return -1;
    }
    while (fgets (line, sizeof (line), fp)) {
        if (sscanf (line, "VmRSS: %ld kB", &kib) == 1) {
            break;
        }
    }
    fclose (fp);
    return kib;
}

typedef struct {
    long pid;
    long start, max, end; /* KiB */
    long at_min[64];      /* one sample a minute, for the trend */
    int nmin;
    pthread_mutex_t lock;
    bool stop;
} rss_t;

static void *sample_rss (void *arg)
{
    rss_t *r = arg;
    int64_t t0 = fm_time_mono_ns (), next = t0;

    for (;;) {
        long kib = proc_rss_kib (r->pid);
        bool stop;

        pthread_mutex_lock (&r->lock);
        if (kib >= 0) {
            if (r->start < 0) {
                r->start = kib;
            }
            r->max = kib > r->max ? kib : r->max;
            r->end = kib;
            if ((next - t0) / (60 * FM_NSEC_PER_SEC) >= r->nmin && r->nmin < 64) {
                r->at_min[r->nmin++] = kib;
            }
        }
        stop = r->stop;
        pthread_mutex_unlock (&r->lock);
        if (stop) {
            return NULL;
        }
        next += FM_NSEC_PER_SEC;
        sleep_until (next);
    }
}

static int register_nodes (worker_t *w)
{
    bench_t *b = w->b;
    char body[512];

    for (int i = 0; i < b->nodes; i++) {
        long code = 0;
        int n = snprintf (body,
                          sizeof (body),
                          "{\"job_id\":%" PRId64 ",\"node\":\"bn%d\",\"user_id\":%u,"
                          "\"job_nodes\":\"bn[0-%d]\",\"probe_addr\":\"127.0.0.1\","
                          "\"probe_port\":%d}",
                          b->job_id,
                          i,
                          (unsigned)getuid (),
                          b->nodes - 1,
                          20000 + i);
        int64_t give_up = fm_time_mono_ns () + RETRY_NS;
        for (;;) {
            if (post (w, "/v1/agents", body, (size_t)n, &code) == 0
                && (code == 200 || code == 201)) {
                break;
            }
            if (!b->retry || fm_time_mono_ns () > give_up) {
                fprintf (stderr, "ingest: POST /v1/agents failed (HTTP %ld)\n", code);
                return -1;
            }
            usleep (50000);
        }
    }
    return 0;
}

static double proc_cpu (long pid)
{
    char path[64], buf[1024];
    unsigned long ut, st;
    FILE *fp;
    char *p;

    snprintf (path, sizeof (path), "/proc/%ld/stat", pid);
    if (!(fp = fopen (path, "r"))) {
        return -1;
    }
    if (!fgets (buf, sizeof (buf), fp) || !(p = strrchr (buf, ')'))
        || sscanf (
               p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st)
               != 2) {
        fclose (fp);
        return -1;
    }
    fclose (fp);
    return (double)(ut + st) / (double)sysconf (_SC_CLK_TCK);
}

static double self_cpu (void)
{
    struct rusage ru;

    getrusage (RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec
           + ru.ru_stime.tv_usec / 1e6;
}

static int cmp64 (const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void usage (FILE *fp)
{
    fprintf (
        fp,
        "Usage: ingest [OPTIONS]\n"
        "  --url URL           fabricd (default %s)\n"
        "  --munge-socket PATH sign requests with munge (else: fabricd "
        "--insecure-local)\n"
        "  --job ID            job id (default 4242)\n"
        "  --nodes N           simulated agents (default 32)\n"
        "  --peers P           peers per node, both directions each (default N-1)\n"
        "  --windows W         windows per request (default 16)\n"
        "  --threads T         concurrent connections (default 2)\n"
        "  --requests R        requests to send (default 400)\n"
        "  --duration S        send for S seconds instead\n"
        "  --pid PID           report fabricd's CPU time\n"
        "  --retry             resend a batch until acknowledged (kill -9 tests)\n"
        "  --ack-log FILE      append \"node seq\" for every acknowledged window\n"
        "  --agents N          N concurrent agents (job of N nodes, 10 peers, 1 "
        "window\n"
        "                      per request), each on its own connection, at one\n"
        "                      request per --interval, for --duration S; errors are\n"
        "                      counted, and with --pid fabricd's RSS is sampled\n"
        "  --interval S        with --agents: seconds between an agent's reports "
        "(default 5)\n",
        FM_API_DEFAULT_URL);
}

int main (int argc, char **argv)
{
    static const struct option opts[] = {
        {"url", required_argument, NULL, 'u'},
        {"munge-socket", required_argument, NULL, 'm'},
        {"job", required_argument, NULL, 'j'},
        {"nodes", required_argument, NULL, 'n'},
        {"peers", required_argument, NULL, 'p'},
        {"windows", required_argument, NULL, 'w'},
        {"threads", required_argument, NULL, 't'},
        {"requests", required_argument, NULL, 'r'},
        {"duration", required_argument, NULL, 'd'},
        {"pid", required_argument, NULL, 'P'},
        {"retry", no_argument, NULL, 'R'},
        {"ack-log", required_argument, NULL, 'a'},
        {"agents", required_argument, NULL, 'A'},
        {"interval", required_argument, NULL, 'I'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bench_t b = {.url = FM_API_DEFAULT_URL,
                 .job_id = 4242,
                 .nodes = 32,
                 .peers = -1,
                 .windows = 16,
                 .threads = 2,
                 .requests = 400,
                 .interval_s = 5};
    rss_t rss = {.start = -1, .max = -1, .end = -1};
    pthread_t rss_tid;
    pthread_attr_t attr;
    long pid = 0;
    fm_httpclient_opts_t http_opts;
    fm_error_t err;
    worker_t *w;
    pthread_t *tid;
    double cpu0 = 0, cpu1, self0, elapsed;
    int64_t t0;
    int opt;

    pthread_mutex_init (&b.lock, NULL);
    while ((opt = getopt_long (argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 'u':
            b.url = optarg;
            break;
        case 'm':
            b.socket = optarg;
            break;
        case 'j':
            b.job_id = strtoll (optarg, NULL, 10);
            break;
        case 'n':
            b.nodes = atoi (optarg);
            break;
        case 'p':
            b.peers = atoi (optarg);
            break;
        case 'w':
            b.windows = atoi (optarg);
            break;
        case 't':
            b.threads = atoi (optarg);
            break;
        case 'r':
            b.requests = strtoll (optarg, NULL, 10);
            break;
        case 'd':
            b.duration_s = atof (optarg);
            b.requests = 0;
            break;
        case 'P':
            pid = strtol (optarg, NULL, 10);
            break;
        case 'R':
            b.retry = true;
            break;
        case 'a':
            if (!(b.ack = fopen (optarg, "a"))) {
                fprintf (stderr, "ingest: %s: %s\n", optarg, strerror (errno));
                return 1;
            }
            break;
        case 'A':
            b.agents = atoi (optarg);
            break;
        case 'I':
            b.interval_s = atof (optarg);
            break;
        case 'h':
            usage (stdout);
            return 0;
        default:
            usage (stderr);
            return 2;
        }
    }
    if (b.agents != 0) {
        if (b.agents < 2 || b.agents > 100000 || b.duration_s <= 0
            || b.interval_s <= 0) {
            fprintf (stderr,
                     "ingest: --agents needs 2..100000, --duration, --interval\n");
            usage (stderr);
            return 2;
        }
        b.nodes = b.threads = b.agents;
        b.windows = 1;
        if (b.peers < 0) {
            b.peers = b.nodes - 1 < AGENT_PEERS ? b.nodes - 1 : AGENT_PEERS;
        }
    }
    if (b.peers < 0) {
        b.peers = b.nodes - 1;
    }
    if (b.nodes < 2 || b.peers < 1 || b.peers >= b.nodes || b.windows < 1
        || b.windows > FM_API_MAX_WINDOWS || b.threads < 1 || b.threads > b.nodes
        || b.peers * 2 > FM_API_MAX_LINKS || (b.requests <= 0 && b.duration_s <= 0)) {
        fprintf (stderr, "ingest: inconsistent options\n");
        usage (stderr);
        return 2;
    }
    if (fm_httpclient_global_init (&err) < 0) {
        fprintf (stderr, "ingest: %s\n", err.text);
        return 1;
    }
    http_opts = (fm_httpclient_opts_t){
        .url = b.url,
        .socket = b.socket,
        .auth = b.socket ? FM_HTTPCLIENT_AUTH_REQUIRE : FM_HTTPCLIENT_AUTH_NONE,
        .timeout_s = 30,
        .connect_timeout_s = 30,
    };
    w = calloc ((size_t)b.threads, sizeof (*w));
    tid = calloc ((size_t)b.threads, sizeof (*tid));
    if (!w || !tid) {
        return 1;
    }
    for (int i = 0; i < b.threads; i++) {
        w[i].b = &b;
        w[i].first_node = i * b.nodes / b.threads;
        w[i].nnodes = (i + 1) * b.nodes / b.threads - w[i].first_node;
        w[i].seq = calloc ((size_t)w[i].nnodes, sizeof (int64_t));
        w[i].http = fm_httpclient_create (&http_opts, &err);
        w[i].cap = b.agents ? 1 << 12 : 1 << 16;
        w[i].buf = malloc (w[i].cap);
        w[i].rnd = 12345u + (unsigned)i;
        if (!w[i].seq || !w[i].http || !w[i].buf) {
            return 1;
        }
    }
    if (register_nodes (&w[0]) < 0) {
        return 1;
    }
    if (pid > 0 && (cpu0 = proc_cpu (pid)) < 0) {
        fprintf (stderr, "ingest: cannot read the CPU time of pid %ld\n", pid);
        return 1;
    }
    if (pid > 0) {
        rss.pid = pid;
        pthread_mutex_init (&rss.lock, NULL);
        if (pthread_create (&rss_tid, NULL, sample_rss, &rss) != 0) {
            fprintf (stderr, "ingest: cannot start the RSS sampler\n");
            return 1;
        }
    }
    self0 = self_cpu ();
    t0 = fm_time_mono_ns ();
    b.t_end = t0 + (int64_t)(b.duration_s * 1e9);
    pthread_attr_init (&attr);
    if (b.agents) {
        pthread_attr_setstacksize (&attr, AGENT_STACK);
    }
    for (int i = 0; i < b.threads; i++) {
        int e = pthread_create (&tid[i], &attr, b.agents ? run_paced : run, &w[i]);
        if (e != 0) {
            fprintf (stderr, "ingest: cannot start thread %d: %s\n", i, strerror (e));
            return 1;
        }
    }
    pthread_attr_destroy (&attr);
    for (int i = 0; i < b.threads; i++) {
        pthread_join (tid[i], NULL);
    }
    elapsed = (fm_time_mono_ns () - t0) / 1e9;
    if (pid > 0) {
        pthread_mutex_lock (&rss.lock);
        rss.stop = true;
        pthread_mutex_unlock (&rss.lock);
        pthread_join (rss_tid, NULL);
        pthread_mutex_destroy (&rss.lock);
    }
    qsort (b.lat_ns, b.nlat, sizeof (int64_t), cmp64);
    printf ("requests %zu windows %" PRId64 " records %" PRId64 " (%d per request)"
            " failures %" PRId64 " elapsed %.3f s\n",
            b.nlat,
            b.acked_windows,
            b.records,
            b.windows * b.peers * 2,
            b.failures,
            elapsed);
    printf ("records/s %.0f\n", b.records / elapsed);
    if (b.agents) {
        printf ("agents %d interval %.3g s errors %" PRId64 " (http %" PRId64
                ", transport %" PRId64 ")\n",
                b.agents,
                b.interval_s,
                b.failures,
                b.http_errors,
                b.net_errors);
    }
    if (pid > 0 && rss.start >= 0) {
        printf ("fabricd rss start %ld KiB max %ld KiB end %ld KiB; per minute:",
                rss.start,
                rss.max,
                rss.end);
        for (int i = 0; i < rss.nmin; i++) {
            printf (" %ld", rss.at_min[i]);
        }
        printf ("\n");
    }
    if (b.nlat > 0) {
        printf ("latency p50 %.3f ms p99 %.3f ms\n",
                b.lat_ns[b.nlat / 2] / 1e6,
                b.lat_ns[(b.nlat * 99) / 100] / 1e6);
    }
    if (pid > 0 && (cpu1 = proc_cpu (pid)) >= 0 && b.records > 0) {
        printf ("fabricd cpu %.3f s = %.3f s per 1M records\n",
                cpu1 - cpu0,
                (cpu1 - cpu0) * 1e6 / b.records);
    }
    if (b.records > 0) {
        printf ("ingest cpu %.3f s per 1M records\n",
                (self_cpu () - self0) * 1e6 / b.records);
    }
    for (int i = 0; i < b.threads; i++) {
        fm_httpclient_destroy (w[i].http);
        free (w[i].seq);
        free (w[i].buf);
    }
    free (w);
    free (tid);
    free (b.lat_ns);
    if (b.ack) {
        fclose (b.ack);
    }
    fm_httpclient_global_fini ();
    return b.agents && b.failures > 0 ? 1 : 0;
}
