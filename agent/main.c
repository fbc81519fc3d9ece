/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "agent.h"
#include "engine.h"
#include "fm/api.h"
#include "log.h"
#include "summary.h"
#include "duration.h"
#include "fmtime.h"

static const char usage_text[] =
    "Usage: fabric-agent --daemon URL --job ID --node NAME [OPTIONS]\n"
    "       fabric-agent --summary --daemon URL --job ID [--output FILE]\n"
    "\n"
    "Probe the network between the nodes of a Slurm job and report to fabricd.\n"
    "Normally started by the fabric_monitor SPANK plugin in the job prolog.\n"
    "\n"
    "  --daemon URL        fabricd base URL (http://HOST:PORT)\n"
    "  --job ID            Slurm job id\n"
    "  --node NAME         this node's name in the job's node list\n"
    "  --nodes LIST        the job's nodes as a hostlist (default "
    "$SLURM_JOB_NODELIST)\n"
    "  --uid UID           the job owner's uid (default $SLURM_JOB_UID, else ours)\n"
    "  --munge-socket PATH munged socket (default: munge's own)\n"
    "  --statedir DIR      state directory; undelivered windows spool in DIR/spool\n"
    "                      (default /run/fabric-monitor/job.ID)\n"
    "  --rate N            probes per second to each peer, max 500 (default:\n"
    "                      10, or 12 a second shared by the peers when more than 1)\n"
    "  --window DUR        report window (default: the daemon's, normally 5s)\n"
    "  --port P            UDP probe port (default: any free port)\n"
    "  --bind ADDR         probe address (default: the address NAME resolves to)\n"
    "  --peers K           targets in jobs of more than 17 nodes, chosen by fabricd's\n"
    "                      probe plan and sharing the probe budget (default 10)\n"
    "  --flush DUR         on SIGTERM, try this long to deliver (default 5s)\n"
    "  --log-level LEVEL   err, warning, notice, info (default), debug\n"
    "  --mode MODE         the job's mode, observe (default) or protect\n"
    "  --clock EST         clock estimator, huygens (default) or naive\n"
    "  --clock-page PATH   publish job time in file PATH instead of the job's\n"
    "                      shared memory page (tests: several agents per host)\n"
    "  --health-root DIR   read sysfs health (net, infiniband) under DIR instead\n"
    "                      of / (recorded trees, tests); %n stands for NAME\n"
    "  --summary           print the job's fabric summary and exit\n"
    "  --output FILE       with --summary: append to FILE (must exist) instead of "
    "stdout\n"
    "  --wait DUR          with --summary: first wait up to DUR for every agent's\n"
    "                      last window (default 0: do not wait)\n"
    "  --clock-offset NS   testing only: read every timestamp (kernel stamps too)\n"
    "                      through a virtual clock that is off by NS ...\n"
    "  --clock-drift-ppb N ... and runs N ppb fast; $FM_AGENT_VCLOCK\n"
    "                      (OFFSET[,DRIFT_PPB[,WANDER_PPB[,SEED]]]) sets all of\n"
    "                      them, these options override it. The host clock is\n"
    "                      never stepped or slewed\n"
    "  --help              this text\n";

enum {
    OPT_DAEMON = 256,
    OPT_JOB,
    OPT_NODE,
    OPT_NODES,
    OPT_UID,
    OPT_MUNGE,
    OPT_STATEDIR,
    OPT_RATE,
    OPT_WINDOW,
    OPT_PORT,
    OPT_BIND,
    OPT_PEERS,
    OPT_FLUSH,
    OPT_LOGLEVEL,
    OPT_SUMMARY,
    OPT_OUTPUT,
    OPT_CLOCK_OFFSET,
    OPT_CLOCK_DRIFT,
    OPT_MODE,
    OPT_WAIT,
    OPT_CLOCK,
    OPT_CLOCK_PAGE,
    OPT_HEALTH_ROOT,
    OPT_HELP,
};

static const struct option longopts[] = {
    {"daemon", required_argument, NULL, OPT_DAEMON},
    {"job", required_argument, NULL, OPT_JOB},
    {"node", required_argument, NULL, OPT_NODE},
    {"nodes", required_argument, NULL, OPT_NODES},
    {"uid", required_argument, NULL, OPT_UID},
    {"munge-socket", required_argument, NULL, OPT_MUNGE},
    {"statedir", required_argument, NULL, OPT_STATEDIR},
    {"rate", required_argument, NULL, OPT_RATE},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"port", required_argument, NULL, OPT_PORT},
    {"bind", required_argument, NULL, OPT_BIND},
    {"peers", required_argument, NULL, OPT_PEERS},
    {"flush", required_argument, NULL, OPT_FLUSH},
    {"log-level", required_argument, NULL, OPT_LOGLEVEL},
    {"summary", no_argument, NULL, OPT_SUMMARY},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"clock-offset", required_argument, NULL, OPT_CLOCK_OFFSET},
    {"clock-drift-ppb", required_argument, NULL, OPT_CLOCK_DRIFT},
    {"mode", required_argument, NULL, OPT_MODE},
    {"clock", required_argument, NULL, OPT_CLOCK},
    {"clock-page", required_argument, NULL, OPT_CLOCK_PAGE},
    {"health-root", required_argument, NULL, OPT_HEALTH_ROOT},
    {"wait", required_argument, NULL, OPT_WAIT},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static int parse_int (const char *s, long long min, long long max, long long *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll (s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        return -1;
    }
    *out = v;
    return 0;
}

/* tmpl with every "%n" replaced by node (one tree per node of a test
 * cluster that shares one file system). 0, or -1 when it does not fit.
 */
static int expand_node (const char *tmpl, const char *node, char *buf, size_t size)
{
    size_t off = 0, nlen = strlen (node);

    for (const char *p = tmpl; *p; p++) {
        if (p[0] == '%' && p[1] == 'n') {
            if (off + nlen >= size) {
                return -1;
            }
            memcpy (buf + off, node, nlen);
            off += nlen;
            p++;
        } else {
            if (off + 1 >= size) {
                return -1;
            }
            buf[off++] = *p;
        }
    }
    buf[off] = '\0';
    return 0;
}

static void die_usage (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

static void die_usage (const char *fmt, ...)
{
    va_list ap;

    fprintf (stderr, "fabric-agent: ");
    va_start (ap, fmt);
    vfprintf (stderr, fmt, ap);
    va_end (ap);
    fprintf (stderr, "\nTry 'fabric-agent --help'.\n");
    exit (2);
}

typedef struct {
    fm_agent_cfg_t cfg;
    int64_t wait_ns;
    bool summary, have_job;
    const char *output;
    int level;
    /* the collectors' sysfs paths have room for a root of this size */
    char statedir[256], health_root[256];
} args_t;

/* The job's and the agent's own options; false for any other. */
static bool option_job (args_t *a, int c, const char *arg)
{
    long long v;

    switch (c) {
    case OPT_DAEMON:
        a->cfg.daemon_url = arg;
        return true;
    case OPT_JOB:
        if (parse_int (arg, 1, FM_API_JOB_ID_MAX, &v) < 0) {
            die_usage ("invalid job id '%s'", arg);
        }
        a->cfg.job_id = (uint64_t)v;
        a->have_job = true;
        return true;
    case OPT_NODE:
        a->cfg.node = arg;
        return true;
    case OPT_NODES:
        a->cfg.job_nodes = arg;
        return true;
    case OPT_UID:
        if (parse_int (arg, 0, FM_API_UID_MAX, &v) < 0) {
            die_usage ("invalid uid '%s'", arg);
        }
        a->cfg.user_id = (uid_t)v;
        return true;
    case OPT_MUNGE:
        a->cfg.munge_socket = arg;
        return true;
    case OPT_STATEDIR:
        a->cfg.statedir = arg;
        return true;
    case OPT_MODE:
        if (strcmp (arg, "observe") != 0 && strcmp (arg, "protect") != 0) {
            die_usage ("invalid mode '%s' (want observe or protect)", arg);
        }
        a->cfg.mode = arg;
        return true;
    case OPT_SUMMARY:
        a->summary = true;
        return true;
    case OPT_OUTPUT:
        a->output = arg;
        return true;
    case OPT_WAIT:
        if (fm_duration_parse (arg, &a->wait_ns) < 0 || a->wait_ns < 0
            || a->wait_ns > 3600 * FM_NSEC_PER_SEC) {
            die_usage ("invalid duration '%s' (want at most 1h)", arg);
        }
        return true;
    case OPT_LOGLEVEL:
        if ((a->level = fm_log_level_parse (arg)) < 0) {
            die_usage ("invalid log level '%s'", arg);
        }
        return true;
    }
    return false;
}

/* How it probes and keeps time; false for any other option. */
static bool option_probe (args_t *a, int c, const char *arg)
{
    long long v;
    int rc;

    switch (c) {
    case OPT_RATE: {
        char *end;
        errno = 0;
        a->cfg.rate = strtod (arg, &end);
        if (errno != 0 || end == arg || *end != '\0'
            || !(a->cfg.rate > 0 && a->cfg.rate <= FM_ENGINE_MAX_RATE)) {
            die_usage ("invalid rate '%s' (want 0 < N <= 500)", arg);
        }
        return true;
    }
    case OPT_WINDOW:
        if (fm_duration_parse (arg, &a->cfg.window_ns) < 0
            || a->cfg.window_ns < FM_NSEC_PER_SEC / 10
            || a->cfg.window_ns > FM_API_WINDOW_MAX_NS) {
            die_usage ("invalid window '%s' (want 100ms..1h)", arg);
        }
        return true;
    case OPT_PORT:
        if (parse_int (arg, 0, 65535, &v) < 0) {
            die_usage ("invalid port '%s'", arg);
        }
        a->cfg.port = (int)v;
        return true;
    case OPT_BIND:
        a->cfg.bind_addr = arg;
        return true;
    case OPT_PEERS:
        if (parse_int (arg, 1, FM_ENGINE_MAX_NODES, &v) < 0) {
            die_usage ("invalid peer count '%s'", arg);
        }
        a->cfg.random_peers = (unsigned)v;
        return true;
    case OPT_FLUSH:
        if (fm_duration_parse (arg, &a->cfg.flush_ns) < 0) {
            die_usage ("invalid duration '%s'", arg);
        }
        return true;
    case OPT_CLOCK_OFFSET:
        if (parse_int (arg, -FM_API_CLOCK_ABS_MAX_NS, FM_API_CLOCK_ABS_MAX_NS, &v)
            < 0) {
            die_usage ("invalid clock offset '%s'", arg);
        }
        a->cfg.clock.offset_ns = v;
        return true;
    case OPT_CLOCK_DRIFT: {
        char *end;
        errno = 0;
        a->cfg.clock.drift_ppb = strtod (arg, &end);
        if (errno != 0 || end == arg || *end != '\0'
            || !(fabs (a->cfg.clock.drift_ppb) <= FM_VCLOCK_DRIFT_MAX_PPB)) {
            die_usage ("invalid clock drift '%s' (want |N| <= 1e6 ppb)", arg);
        }
        return true;
    }
    case OPT_CLOCK:
        if ((rc = fm_clock_est_type_parse (arg)) < 0) {
            die_usage ("invalid clock estimator '%s' (want huygens or naive)", arg);
        }
        a->cfg.estimator = (fm_clock_est_type_t)rc;
        return true;
    case OPT_CLOCK_PAGE:
        if (arg[0] != '/') {
            die_usage ("--clock-page wants an absolute path, not '%s'", arg);
        }
        a->cfg.clock_page = arg;
        return true;
    case OPT_HEALTH_ROOT:
        if (arg[0] != '/' || strlen (arg) >= sizeof (a->health_root)) {
            die_usage ("--health-root wants an absolute path of at most %zu "
                       "characters, not '%s'",
                       sizeof (a->health_root) - 1,
                       arg);
        }
        a->cfg.health_root = arg;
        return true;
    }
    return false;
}

/* -1 to go on, else the exit status. */
static int args_parse (int argc, char **argv, args_t *a)
{
    const char *vclock;
    fm_error_t err;
    int c;

    if ((vclock = getenv ("FM_AGENT_VCLOCK"))
        && fm_vclock_params_parse (vclock, &a->cfg.clock, &err) < 0) {
        die_usage ("FM_AGENT_VCLOCK: %s", err.text);
    }
    while ((c = getopt_long (argc, argv, "", longopts, NULL)) != -1) {
        if (option_job (a, c, optarg) || option_probe (a, c, optarg)) {
            continue;
        }
        if (c == OPT_HELP) {
            fputs (usage_text, stdout);
            return 0;
        }
        fputs (usage_text, stderr);
        return 2;
    }
    if (optind < argc) {
        die_usage ("unexpected argument '%s'", argv[optind]);
    }
    if (!a->cfg.daemon_url || !a->have_job) {
        die_usage ("%s", "--daemon and --job are required");
    }
    return -1;
}

/* hwloc dlopens every plugin it finds at its first topology, blacklisted
 * components or not; the agent uses none of them (health_topo.c reads sysfs
 * and parses fixtures with the built-in XML reader), and the X11, OpenCL and
 * libxml2/ICU trees they pull in were 2 MiB of its memory. Set before any
 * thread starts.
 */
static void hwloc_plugins_off (void)
{
    setenv ("HWLOC_PLUGINS_BLACKLIST",
            "hwloc_gl,hwloc_opencl,hwloc_pci,hwloc_xml_libxml,hwloc_cuda,"
            "hwloc_nvml,hwloc_rsmi,hwloc_levelzero",
            1);
}

/* What the probing agent needs beyond the summary's options. */
static void args_complete (args_t *a)
{
    fm_agent_cfg_t *cfg = &a->cfg;

    if (!cfg->node) {
        die_usage ("%s", "--node is required");
    }
    if (!cfg->job_nodes && !(cfg->job_nodes = getenv ("SLURM_JOB_NODELIST"))) {
        die_usage ("%s", "--nodes is required (SLURM_JOB_NODELIST is not set)");
    }
    if (strlen (cfg->job_nodes) > FM_API_JOB_NODES_MAX) {
        die_usage ("%s", "--nodes is longer than 4096 characters");
    }
    if (cfg->health_root && strstr (cfg->health_root, "%n")) {
        if (expand_node (
                cfg->health_root, cfg->node, a->health_root, sizeof (a->health_root))
            < 0) {
            die_usage ("--health-root: too long with node %s", cfg->node);
        }
        cfg->health_root = a->health_root;
    }
    if (!cfg->statedir) {
        snprintf (a->statedir,
                  sizeof (a->statedir),
                  "/run/fabric-monitor/job.%" PRIu64,
                  cfg->job_id);
        cfg->statedir = a->statedir;
    }
}

int main (int argc, char **argv)
{
    args_t a = {
        .cfg =
            {
                .random_peers = FM_AGENT_RANDOM_PEERS,
                .flush_ns = 5 * FM_NSEC_PER_SEC,
                .user_id = getuid (),
                .mode = "observe",
                .estimator = FM_CLOCK_EST_HUYGENS,
            },
        .level = LOG_INFO,
    };
    fm_error_t err;
    int rc;

    if ((rc = args_parse (argc, argv, &a)) >= 0) {
        return rc;
    }
    fm_log_init ("fabric-agent", FM_LOG_STDERR, a.level);
    hwloc_plugins_off ();
    if (sodium_init () < 0) {
        fm_err ("cannot initialise libsodium");
        return 1;
    }
    if (a.summary) {
        rc = fm_summary_fetch (a.cfg.daemon_url,
                               a.cfg.munge_socket,
                               a.cfg.job_id,
                               a.output,
                               a.wait_ns,
                               &err);
        if (rc < 0) {
            fm_err ("summary: %s", err.text);
        }
        return rc < 0 ? 1 : 0;
    }
    args_complete (&a);
    if ((rc = fm_agent_run (&a.cfg, &err)) != 0) {
        fm_err ("%s", err.text);
    }
    return rc;
}
