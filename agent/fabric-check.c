/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fm/api.h"
#include "hostlist.h"
#include "duration.h"
#include "fmtime.h"
#include "check_net.h"
#include "check_pmix.h"
#include "check_post.h"
#include "check_report.h"
#include "check_sched.h"
#include "check_verdict.h"

/* fabric-check: an all-pairs (or ring) latency and bandwidth test between the
 * nodes of a job step, one task per node, wired up through PMIx.
 * Exit status: 0 all nodes good, 1 a node is slow or failed, 2 usage,
 * 3 the check itself could not run (PMIx, sockets, time limit).
 */
#define EXIT_BAD 1
#define EXIT_USAGE 2
#define EXIT_ERROR 3
#define KEY_EP "fm.check.ep"
#define KEY_RES "fm.check.res"

static const char usage_text[] =
    "Usage: srun --mpi=pmix -N N --ntasks-per-node=1 fabric-check [OPTIONS]\n"
    "\n"
    "Test latency and bandwidth between the nodes of a job step over TCP.\n"
    "\n"
    "  --quick             ring pairs: even/odd, then odd/even (default)\n"
    "  --full              every pair of nodes (at most 128 nodes)\n"
    "  --json              print the result as JSON instead of a table\n"
    "  --reference NODES   known-good nodes of the step (a hostlist): their\n"
    "                      pairs set the norm the others are judged by\n"
    "  --daemon URL        post the result to fabricd (default\n"
    "                      $FABRIC_MONITOR_DAEMON; none: not posted)\n"
    "  --munge-socket PATH munged socket (default $FABRIC_MONITOR_MUNGE_SOCKET,\n"
    "                      else munge's own)\n"
    "  --no-post           do not post the result\n"
    "  --bind ADDR         test address (default: the address of the node name)\n"
    "  --pings N           latency: round trips per pair (default 200)\n"
    "  --ping-size BYTES   latency: message size (default 64)\n"
    "  --ping-time DUR     latency: at most this long per pair (default 200ms)\n"
    "  --bw-bytes BYTES    bandwidth: bytes per pair at most (default 64M)\n"
    "  --bw-time DUR       bandwidth: measure this long at most (default 250ms)\n"
    "  --timeout DUR       give up on a peer after this long (default 2s)\n"
    "  --time-limit DUR    the whole check (default 60s)\n"
    "  --help              this text\n"
    "\n"
    "Exit status: 0 pass, 1 a node is slow or failed, 2 usage, 3 error.\n";

enum {
    OPT_QUICK = 256,
    OPT_FULL,
    OPT_JSON,
    OPT_REFERENCE,
    OPT_DAEMON,
    OPT_MUNGE,
    OPT_NO_POST,
    OPT_BIND,
    OPT_PINGS,
    OPT_PING_SIZE,
    OPT_PING_TIME,
    OPT_BW_BYTES,
    OPT_BW_TIME,
    OPT_TIMEOUT,
    OPT_TIME_LIMIT,
    OPT_HELP,
};

static const struct option longopts[] = {
    {"quick", no_argument, NULL, OPT_QUICK},
    {"full", no_argument, NULL, OPT_FULL},
    {"json", no_argument, NULL, OPT_JSON},
    {"reference", required_argument, NULL, OPT_REFERENCE},
    {"daemon", required_argument, NULL, OPT_DAEMON},
    {"munge-socket", required_argument, NULL, OPT_MUNGE},
    {"no-post", no_argument, NULL, OPT_NO_POST},
    {"bind", required_argument, NULL, OPT_BIND},
    {"pings", required_argument, NULL, OPT_PINGS},
    {"ping-size", required_argument, NULL, OPT_PING_SIZE},
    {"ping-time", required_argument, NULL, OPT_PING_TIME},
    {"bw-bytes", required_argument, NULL, OPT_BW_BYTES},
    {"bw-time", required_argument, NULL, OPT_BW_TIME},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"time-limit", required_argument, NULL, OPT_TIME_LIMIT},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

typedef struct {
    fm_check_mode_t mode;
    bool json, post;
    const char *daemon, *munge_socket, *bind;
    fm_hostlist_t *reference; /* NULL: none */
    fm_check_params_t p;
    int64_t time_limit_ns;
} opts_t;

static void die_usage (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

static void die_usage (const char *fmt, ...)
{
    va_list ap;

    fprintf (stderr, "fabric-check: ");
    va_start (ap, fmt);
    vfprintf (stderr, fmt, ap);
    va_end (ap);
    fprintf (stderr, "\nTry 'fabric-check --help'.\n");
    exit (EXIT_USAGE);
}

static uint64_t parse_size (const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    unsigned long long v;
    uint64_t mult = 1;

    errno = 0;
    v = strtoull (s, &end, 10);
    if (end != s && *end && !end[1]) {
        switch (*end) {
        case 'K':
            mult = 1ULL << 10;
            end++;
            break;
        case 'M':
            mult = 1ULL << 20;
            end++;
            break;
        case 'G':
            mult = 1ULL << 30;
            end++;
            break;
        default:
            break;
        }
    }
    if (errno || end == s || *end || s[0] == '-' || v > max / mult || v * mult < min) {
        die_usage ("%s: want %llu..%llu (K, M, G suffixes allowed), not '%s'",
                   opt,
                   (unsigned long long)min,
                   (unsigned long long)max,
                   s);
    }
    return v * mult;
}

static int64_t parse_dur (const char *opt, const char *s, int64_t min, int64_t max)
{
    int64_t ns;

    if (fm_duration_parse (s, &ns) < 0 || ns < min || ns > max) {
        die_usage ("%s: want a duration from %lldms to %llds, not '%s'",
                   opt,
                   (long long)(min / 1000000),
                   (long long)(max / FM_NSEC_PER_SEC),
                   s);
    }
    return ns;
}

static void parse_opts (int argc, char **argv, opts_t *o)
{
    int c;

    *o = (opts_t){
        .mode = FM_CHECK_QUICK,
        .post = true,
        .daemon = getenv ("FABRIC_MONITOR_DAEMON"),
        .munge_socket = getenv ("FABRIC_MONITOR_MUNGE_SOCKET"),
        .p =
            {
                .pings = 200,
                .ping_size = 64,
                .ping_budget_ns = 200 * 1000000LL,
                .bw_bytes = 64ULL << 20,
                .bw_window_ns = 250 * 1000000LL,
                .timeout_ns = 2 * FM_NSEC_PER_SEC,
            },
        .time_limit_ns = 60 * FM_NSEC_PER_SEC,
    };
    while ((c = getopt_long (argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_QUICK:
            o->mode = FM_CHECK_QUICK;
            break;
        case OPT_FULL:
            o->mode = FM_CHECK_FULL;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_REFERENCE: {
            fm_error_t err;
            fm_hostlist_destroy (o->reference);
            if (!(o->reference =
                      fm_hostlist_expand (optarg, FM_CHECK_NODES_MAX, &err))) {
                die_usage ("--reference: %s", err.text);
            }
            break;
        }
        case OPT_DAEMON:
            o->daemon = optarg;
            break;
        case OPT_MUNGE:
            o->munge_socket = optarg;
            break;
        case OPT_NO_POST:
            o->post = false;
            break;
        case OPT_BIND:
            o->bind = optarg;
            break;
        case OPT_PINGS:
            o->p.pings =
                (uint32_t)parse_size ("--pings", optarg, 1, FM_CHECK_PINGS_MAX);
            break;
        case OPT_PING_SIZE:
            o->p.ping_size = (uint32_t)parse_size (
                "--ping-size", optarg, FM_CHECK_PING_SIZE_MIN, FM_CHECK_PING_SIZE_MAX);
            break;
        case OPT_PING_TIME:
            o->p.ping_budget_ns =
                parse_dur ("--ping-time", optarg, 1000000, FM_CHECK_WINDOW_MAX_NS);
            break;
        case OPT_BW_BYTES:
            o->p.bw_bytes =
                parse_size ("--bw-bytes", optarg, 1024, FM_CHECK_BW_BYTES_MAX);
            break;
        case OPT_BW_TIME:
            o->p.bw_window_ns =
                parse_dur ("--bw-time", optarg, 1000000, FM_CHECK_WINDOW_MAX_NS);
            break;
        case OPT_TIMEOUT:
            o->p.timeout_ns =
                parse_dur ("--timeout", optarg, 10000000, 60 * FM_NSEC_PER_SEC);
            break;
        case OPT_TIME_LIMIT:
            o->time_limit_ns = parse_dur (
                "--time-limit", optarg, FM_NSEC_PER_SEC, 3600 * FM_NSEC_PER_SEC);
            break;
        case OPT_HELP:
            fputs (usage_text, stdout);
            exit (0);
        default:
            die_usage ("unknown option");
        }
    }
    if (optind < argc) {
        die_usage ("unexpected argument '%s'", argv[optind]);
    }
    if (o->daemon && o->daemon[0] == '\0') {
        o->daemon = NULL;
    }
}

static void on_alarm (int sig)
{
    static const char msg[] = "fabric-check: time limit reached\n";

    (void)sig;
    (void)!write (STDERR_FILENO, msg, sizeof (msg) - 1);
    _exit (EXIT_ERROR);
}

/* This node's name: Slurm's, else the short host name. */
static int node_name (char *buf, size_t size)
{
    const char *s = getenv ("SLURMD_NODENAME");
    char host[256];

    if (!s || !s[0]) {
        if (gethostname (host, sizeof (host)) < 0) {
            return -1;
        }
        host[sizeof (host) - 1] = '\0';
        host[strcspn (host, ".")] = '\0';
        s = host;
    }
    if (strlen (s) >= size || strpbrk (s, " \t\n")) {
        errno = EINVAL;
        return -1;
    }
    snprintf (buf, size, "%s", s);
    return 0;
}

/* The first non-loopback IPv4 address name resolves to. */
static int node_addr (const char *name, char *buf, size_t size)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res, *ai;
    int rc = -1;

    if (getaddrinfo (name, NULL, &hints, &res) != 0) {
        errno = ENOENT;
        return -1;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        struct sockaddr_in *sin = (struct sockaddr_in *)ai->ai_addr;
        if ((ntohl (sin->sin_addr.s_addr) >> 24) != 127
            && inet_ntop (AF_INET, &sin->sin_addr, buf, (socklen_t)size)) {
            rc = 0;
            break;
        }
    }
    freeaddrinfo (res);
    if (rc < 0) {
        errno = EADDRNOTAVAIL;
    }
    return rc;
}

typedef struct {
    char name[FM_CHECK_NAME_MAX];
    struct sockaddr_in sin;
} endpoint_t;

static int parse_endpoints (char **vals, uint32_t n, endpoint_t *ep, fm_error_t *err)
{
    for (uint32_t r = 0; r < n; r++) {
        char name[FM_CHECK_NAME_MAX], addr[INET_ADDRSTRLEN];
        unsigned port;

        if (sscanf (vals[r], "%63s %15s %u", name, addr, &port) != 3 || port == 0
            || port > 65535 || inet_pton (AF_INET, addr, &ep[r].sin.sin_addr) != 1) {
            errno = EPROTO;
            return fm_errprintf (err, "rank %u published a bad endpoint", (unsigned)r);
        }
        snprintf (ep[r].name, sizeof (ep[r].name), "%s", name);
        ep[r].sin.sin_family = AF_INET;
        ep[r].sin.sin_port = htons ((uint16_t)port);
    }
    return 0;
}

/* Rank 0: judge, print, post. Returns the exit status. */
static int
conclude (const opts_t *o, endpoint_t *ep, uint32_t size, char **vals, double elapsed_s)
{
    char (*names)[FM_CHECK_NAME_MAX];
    fm_check_result_t *r = NULL;
    fm_check_node_t *nodes;
    bool *ref = NULL;
    fm_check_summary_t sum;
    const char *jobid = getenv ("SLURM_JOB_ID");
    int64_t job_id = 0;
    size_t n = 0;
    fm_error_t err;
    int rc = EXIT_ERROR;

    names = calloc (size, sizeof (*names));
    nodes = calloc (size, sizeof (*nodes));
    if (!names || !nodes || (o->reference && !(ref = calloc (size, sizeof (*ref))))) {
        fprintf (stderr, "fabric-check: out of memory\n");
        goto out;
    }
    for (uint32_t i = 0; i < size; i++) {
        snprintf (names[i], sizeof (names[i]), "%s", ep[i].name);
        if (fm_check_report_decode (vals[i], size, &r, &n, &err) < 0) {
            fprintf (stderr, "fabric-check: rank %u: %s\n", (unsigned)i, err.text);
            goto out;
        }
    }
    for (size_t k = 0; ref && k < fm_hostlist_count (o->reference); k++) {
        const char *h = fm_hostlist_nth (o->reference, k);
        uint32_t i = 0;
        while (i < size && strcmp (names[i], h) != 0) {
            i++;
        }
        if (i == size) {
            fprintf (stderr, "fabric-check: --reference: %s is not a node of this step\n", h);
            rc = EXIT_USAGE;
            goto out;
        }
        ref[i] = true;
    }
    if (fm_check_verdict (r, n, size, ref, nodes, &sum) < 0) {
        fprintf (stderr, "fabric-check: cannot judge: %s\n", strerror (errno));
        goto out;
    }
    fm_check_verdict_sort (r, n);
    if (jobid) {
        job_id = strtoll (jobid, NULL, 10);
        if (job_id < 1 || job_id > FM_API_JOB_ID_MAX) {
            job_id = 0;
        }
    }
    if (o->json) {
        json_t *j =
            fm_check_report_json (job_id, o->mode, names, size, ref, r, n, nodes);
        if (!j || json_dumpf (j, stdout, JSON_COMPACT) < 0) {
            json_decref (j);
            fprintf (stderr, "fabric-check: out of memory\n");
            goto out;
        }
        json_decref (j);
        putchar ('\n');
    } else {
        fm_check_report_print_table (
            stdout, o->mode, names, size, r, n, nodes, &sum, elapsed_s);
    }
    fflush (stdout);
    if (o->post && o->daemon && job_id > 0) {
        json_t *body = fm_check_report_body (job_id, o->mode, names, size, ref, r, n);
        if (!body || fm_check_post (o->daemon, o->munge_socket, body, &err) < 0) {
            fprintf (stderr,
                     "fabric-check: result not posted to %s: %s\n",
                     o->daemon,
                     body ? err.text : "out of memory");
        }
        json_decref (body);
    }
    rc = sum.nfailed_nodes || sum.nslow_nodes ? EXIT_BAD : 0;
out:
    free (names);
    free (nodes);
    free (ref);
    free (r);
    return rc;
}

/* Run this rank's part of every round; appends the results it measured. */
static int run_rounds (const opts_t *o,
                       fm_check_pmix_t *px,
                       int lfd,
                       uint32_t rank,
                       const endpoint_t *ep,
                       const fm_check_pair_t *pairs,
                       size_t npairs,
                       uint32_t nrounds,
                       fm_check_result_t *mine,
                       size_t *nmine,
                       fm_error_t *err)
{
    size_t i = 0;

    *nmine = 0;
    for (uint32_t round = 0; round < nrounds; round++) {
        for (; i < npairs && pairs[i].round == round; i++) {
            const fm_check_pair_t *pr = &pairs[i];
            if (pr->a == rank) {
                fm_check_result_t *res = &mine[(*nmine)++];
                res->a = pr->a;
                res->b = pr->b;
                fm_check_net_client (&ep[pr->b].sin, rank, round, &o->p, res);
            } else if (pr->b == rank) {
                fm_error_t e;
                /* the client records the outcome; ours only says why */
                if (fm_check_net_serve (lfd, pr->a, round, &o->p, &e) < 0) {
                    fprintf (stderr, "fabric-check: %s: %s\n", ep[rank].name, e.text);
                }
            }
        }
        if (fm_check_pmix_barrier (px, err) < 0) {
            return -1;
        }
    }
    return 0;
}

int main (int argc, char **argv)
{
    opts_t o;
    fm_check_pmix_t *px = NULL;
    fm_check_pair_t *pairs = NULL;
    fm_check_result_t *mine = NULL;
    endpoint_t *ep = NULL;
    char **vals = NULL, name[FM_CHECK_NAME_MAX], addr[INET_ADDRSTRLEN], mine_ep[128];
    char *text = NULL;
    uint32_t rank, size = 0, nrounds;
    size_t npairs, nmine;
    uint16_t port;
    int64_t t0 = fm_time_mono_ns ();
    fm_error_t err;
    int lfd = -1, rc = EXIT_ERROR;

    parse_opts (argc, argv, &o);
    signal (SIGALRM, on_alarm);
    signal (SIGPIPE, SIG_IGN);
    alarm ((unsigned)((o.time_limit_ns + FM_NSEC_PER_SEC - 1) / FM_NSEC_PER_SEC));
    if (node_name (name, sizeof (name)) < 0) {
        fprintf (stderr, "fabric-check: no usable node name: %s\n", strerror (errno));
        goto out;
    }
    if (o.bind) {
        snprintf (addr, sizeof (addr), "%s", o.bind);
    } else if (node_addr (name, addr, sizeof (addr)) < 0) {
        fprintf (stderr,
                 "fabric-check: %s resolves to no IPv4 address but loopback; "
                 "use --bind\n",
                 name);
        goto out;
    }
    if (!(px = fm_check_pmix_init (&rank, &size, &err))) {
        fprintf (stderr, "fabric-check: %s\n", err.text);
        goto out;
    }
    if (fm_check_sched_schedule (o.mode, size, &pairs, &npairs, &nrounds) < 0) {
        if (rank == 0) {
            fprintf (stderr,
                     "fabric-check: %s needs 2 to %d nodes, one task per node "
                     "(have %u tasks)\n",
                     fm_check_sched_mode_name (o.mode),
                     o.mode == FM_CHECK_FULL ? FM_CHECK_FULL_MAX : FM_CHECK_NODES_MAX,
                     (unsigned)size);
        }
        rc = EXIT_USAGE;
        goto out;
    }
    if ((lfd = fm_check_net_listen (addr, &port, &err)) < 0) {
        fprintf (stderr, "fabric-check: %s: %s\n", name, err.text);
        goto out;
    }
    snprintf (mine_ep, sizeof (mine_ep), "%s %s %u", name, addr, (unsigned)port);
    ep = calloc (size, sizeof (*ep));
    mine = calloc (size, sizeof (*mine));
    if (!ep || !mine) {
        fprintf (stderr, "fabric-check: out of memory\n");
        goto out;
    }
    if (fm_check_pmix_allgather (px, KEY_EP, mine_ep, true, &vals, &err) < 0
        || parse_endpoints (vals, size, ep, &err) < 0) {
        fprintf (stderr, "fabric-check: %s: %s\n", name, err.text);
        goto out;
    }
    fm_check_pmix_values_free (vals, size);
    vals = NULL;
    if (run_rounds (&o, px, lfd, rank, ep, pairs, npairs, nrounds, mine, &nmine, &err)
            < 0
        || !(text = fm_check_report_encode (mine, nmine))
        || fm_check_pmix_allgather (px, KEY_RES, text, rank == 0, &vals, &err) < 0) {
        fprintf (stderr, "fabric-check: %s: %s\n", name, text ? err.text : "no memory");
        goto out;
    }
    rc = rank == 0
             ? conclude (&o, ep, size, vals, (double)(fm_time_mono_ns () - t0) / 1e9)
             : 0;
out:
    if (lfd >= 0) {
        close (lfd);
    }
    fm_check_pmix_values_free (vals, size);
    free (text);
    free (ep);
    free (mine);
    free (pairs);
    fm_check_pmix_fini (px);
    fm_hostlist_destroy (o.reference);
    return rc;
}
