/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium.h>

#include "conf.h"
#include "fm/api.h"
#include "log.h"
#include "path.h"
#include "fmtime.h"
#include "api.h"
#include "arena.h"
#include "dconf.h"
#include "idlist.h"
#include "http.h"
#include "jobplan.h"
#include "monitor.h"
#include "checks.h"

#define DEFAULT_CONFIG FM_SYSCONFDIR "/fabric-monitor/fabricd.conf"

static const struct option longopts[] = {
    {"config", required_argument, NULL, 'c'},
    {"insecure-local", no_argument, NULL, 'I'},
    {"log-level", required_argument, NULL, 'L'},
    {"show-config", no_argument, NULL, 'S'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

static void usage (FILE *fp)
{
    fprintf (
        fp,
        "Usage: fabricd [OPTIONS]\n"
        "The fabric-monitor site daemon (HTTP API: doc/api.md). Runs in the\n"
        "foreground and logs to stderr.\n"
        "  -c, --config PATH      configuration file (default %s)\n"
        "      --insecure-local   no munge: accept unauthenticated requests as root;\n"
        "                         development only, loopback addresses only\n"
        "      --log-level LEVEL  err, warning, notice, info or debug\n"
        "      --show-config      print the effective configuration and exit\n"
        "  -h, --help             this text\n"
        "  -V, --version          print the version\n",
        DEFAULT_CONFIG);
}

static void die (const char *fmt, ...)
    __attribute__ ((format (printf, 1, 2), noreturn));

static void die (const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    va_start (ap, fmt);
    vsnprintf (buf, sizeof (buf), fmt, ap);
    va_end (ap);
    /* stderr is always a sink, so fatal start-up errors reach the terminal. */
    fm_err ("%s", buf);
    exit (1);
}

/* systemd Type=notify without libsystemd. */
static void sd_notify_msg (const char *msg)
{
    const char *path = getenv ("NOTIFY_SOCKET");
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t len;
    int fd;

    if (!path || (path[0] != '/' && path[0] != '@')
        || (len = strlen (path)) >= sizeof (sun.sun_path)) {
        return;
    }
    memcpy (sun.sun_path, path, len);
    if (sun.sun_path[0] == '@') {
        sun.sun_path[0] = '\0';
    }
    if ((fd = socket (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
        return;
    }
    if (sendto (fd,
                msg,
                strlen (msg),
                MSG_NOSIGNAL,
                (struct sockaddr *)&sun,
                (socklen_t)(offsetof (struct sockaddr_un, sun_path) + len))
        < 0) {
        fm_warn ("sd_notify: %s", strerror (errno));
    }
    close (fd);
}

static void prune (fm_store_t *st, int64_t retention_ns)
{
    fm_error_t err;
    int64_t removed;

    if (fm_store_prune (st, fm_time_real_ns () - retention_ns, &removed, &err) < 0) {
        fm_warn ("prune: %s", err.text);
    } else if (removed > 0) {
        fm_info ("pruned %lld windows older than the retention", (long long)removed);
    }
}

static const int protect_signals[] = {
    SIGUSR1, SIGUSR2, SIGTERM, SIGINT, SIGHUP, SIGCONT, SIGURG};

/* The fabric loop, from the configuration; NULL after logging why. */
static fm_monitor_t *monitor_create (fm_daemon_t *d,
                                     fm_conf_t *conf,
                                     const char *db_path,
                                     fm_store_sync_t sync)
{
    fm_monitor_conf_t mc = {
        .actions = fm_conf_enum_name (conf, "actions"),
        .slurm_conf = fm_conf_string (conf, "slurm_conf"),
        .topology = fm_conf_string (conf, "topology"),
        .db_path = db_path,
        .sync = sync,
        .window_ns = fm_conf_duration (conf, "report_window"),
        .auto_validate = fm_conf_bool (conf, "auto_validate"),
        .validate_check = fm_conf_bool (conf, "validate_check"),
        .validate_backoff_ns = fm_conf_duration (conf, "validate_backoff"),
    };
    fm_monitor_t *m;
    fm_error_t err;

    fm_score_params_default (&mc.score);
    mc.score.persist_windows = (int)fm_conf_int (conf, "persist_windows");
    mc.score.recover_windows = (int)fm_conf_int (conf, "recover_windows");
    fm_policy_params_default (&mc.policy);
    mc.policy.dry_run = fm_conf_bool (conf, "dry_run");
    mc.policy.auto_resume = fm_conf_bool (conf, "auto_resume");
    mc.policy.resume_windows = (int)fm_conf_int (conf, "resume_windows");
    mc.policy.max_drain_fraction = fm_conf_double (conf, "max_drain_fraction");
    mc.policy.max_drains_per_hour = (int)fm_conf_int (conf, "max_drains_per_hour");
    mc.policy.degraded_weight_add = fm_conf_int (conf, "degraded_weight_add");
    mc.policy.protect_signal = protect_signals[fm_conf_enum (conf, "protect_signal")];
    mc.policy.protect_grace_ns = fm_conf_duration (conf, "protect_grace");
    if (!(m = fm_monitor_create (d, &mc, &err))) {
        fm_err ("fabric loop: %s", err.text);
    }
    return m;
}

typedef struct {
    const char *config;
    const char *log_level;
    bool insecure, show;
} args_t;

/* -1 to go on, else the exit status. */
static int args_parse (int argc, char **argv, args_t *a)
{
    int opt;

    while ((opt = getopt_long (argc, argv, "c:hV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            a->config = optarg;
            break;
        case 'I':
            a->insecure = true;
            break;
        case 'L':
            a->log_level = optarg;
            break;
        case 'S':
            a->show = true;
            break;
        case 'h':
            usage (stdout);
            return 0;
        case 'V':
            printf ("fabricd %s (API %s)\n", PACKAGE_VERSION, FM_API_VERSION_STRING);
            return 0;
        default:
            usage (stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf (stderr, "fabricd: unexpected argument '%s'\n", argv[optind]);
        usage (stderr);
        return 2;
    }
    return -1;
}

static fm_conf_t *config_load (const args_t *a)
{
    fm_error_t err;
    fm_conf_t *conf;

    if (!(conf = fm_conf_create (fm_dconf_table, &err))) {
        die ("%s", err.text);
    }
    if (a->log_level
        && fm_conf_set_locked (conf, "log_level", a->log_level, &err) < 0) {
        die ("--log-level: %s", err.text);
    }
    if (a->config || access (DEFAULT_CONFIG, F_OK) == 0) {
        if (fm_conf_load_file (conf, a->config ? a->config : DEFAULT_CONFIG, &err)
            < 0) {
            die ("%s", err.text);
        }
    }
    return conf;
}

static void logging_start (const fm_conf_t *conf)
{
    int level;

    if ((level = fm_log_level_parse (fm_conf_string (conf, "log_level"))) < 0) {
        die ("log_level: unknown level '%s'", fm_conf_string (conf, "log_level"));
    }
    fm_log_init ("fabricd",
                 FM_LOG_STDERR | (fm_conf_bool (conf, "syslog") ? FM_LOG_SYSLOG : 0),
                 level);
}

static void idlist (const fm_conf_t *conf, const char *key, bool groups, fm_idlist_t *l)
{
    fm_error_t err;

    if (fm_idlist_parse (fm_conf_string (conf, key), groups, l, &err) < 0) {
        die ("%s: %s", key, err.text);
    }
}

/* Who may report and administer, checked with munge (none with --insecure-local,
 * which listens on loopback only).
 */
static void auth_open (fm_daemon_t *d, const fm_conf_t *conf, bool insecure)
{
    const char *addr = fm_conf_string (conf, "listen_address");
    const char *socket_path = fm_conf_string (conf, "munge_socket");
    fm_idlist_t report_uids, admin_uids, admin_gids;
    fm_error_t err;

    idlist (conf, "report_uids", false, &report_uids);
    idlist (conf, "admin_uids", false, &admin_uids);
    idlist (conf, "admin_groups", true, &admin_gids);
    if (insecure) {
        if (!addr || !fm_http_is_loopback (addr)) {
            die (
                "--insecure-local refuses listen_address '%s': only loopback addresses",
                addr ? addr : "");
        }
        fm_warn ("--insecure-local: requests are not authenticated; development only");
        socket_path = NULL;
    } else if (!socket_path || !*socket_path) {
        die ("munge_socket is not configured: fabricd needs munge to authenticate"
             " requests (or --insecure-local for development)");
    }
    if (!(d->auth = fm_auth_create (
              socket_path, &report_uids, &admin_uids, &admin_gids, insecure, &err))) {
        die ("%s", err.text);
    }
    if (fm_auth_selftest (d->auth, &err) < 0) {
        die (
            "munge is not usable (socket %s): %s; start munged, or use --insecure-local"
            " for development",
            socket_path,
            err.text);
    }
}

/* The store in state_dir, and a second connection (*pruner), so that pruning
 * runs in the main thread without blocking the HTTP thread for longer than one
 * transaction. Returns the database's path.
 */
static char *store_open (fm_daemon_t *d,
                         const fm_conf_t *conf,
                         fm_store_sync_t *sync,
                         fm_store_t **pruner)
{
    const char *state_dir = fm_conf_string (conf, "state_dir");
    fm_error_t err;
    char *db_path;

    if (!state_dir || state_dir[0] != '/') {
        die ("state_dir must be an absolute path");
    }
    if (fm_path_mkdir_secure (state_dir, 0700, &err) < 0) {
        die ("state_dir: %s", err.text);
    }
    if (asprintf (&db_path, "%s/fabricd.db", state_dir) < 0) {
        die ("out of memory");
    }
    *sync = fm_conf_enum (conf, "store_sync") == 1 ? FM_STORE_SYNC_FULL
                                                   : FM_STORE_SYNC_NORMAL;
    if (!(d->store = fm_store_open (
              "sqlite", db_path, *sync | FM_STORE_BACKGROUND_CHECKPOINT, &err))) {
        die ("store %s: %s", db_path, err.text);
    }
    if (!(*pruner = fm_store_open ("sqlite", db_path, *sync, &err))) {
        die ("store %s: %s", db_path, err.text);
    }
    return db_path;
}

static void daemon_init (fm_daemon_t *d, const fm_conf_t *conf, bool insecure)
{
    fm_error_t err;

    if (fm_arena_install () < 0) {
        die ("out of memory");
    }
    if (!(d->metrics = fm_metrics_create (fm_api_route_names, fm_api_nroutes))) {
        die ("out of memory");
    }
    d->start_real_ns = fm_time_real_ns ();
    d->start_mono_ns = fm_time_mono_ns ();
    d->max_body = fm_conf_size (conf, "max_body");
    d->retention_ns = fm_conf_duration (conf, "retention");
    d->window_ns = fm_conf_duration (conf, "report_window");
    d->plan_epoch_ns = fm_conf_duration (conf, "plan_epoch");
    d->metrics_public = fm_conf_bool (conf, "metrics_public");
    d->metrics_links = (size_t)fm_conf_int (conf, "metrics_links");
    d->pages_public = fm_conf_bool (conf, "pages_public");
    d->insecure = insecure;
    if (!(d->checks = fm_checks_create (FM_CHECKS_RING, &err))) {
        die ("%s", err.text);
    }
}

/* INT, TERM and HUP are taken by sigtimedwait in the main thread. */
static void signals_block (sigset_t *sigs)
{
    sigemptyset (sigs);
    sigaddset (sigs, SIGINT);
    sigaddset (sigs, SIGTERM);
    sigaddset (sigs, SIGHUP);
    pthread_sigmask (SIG_BLOCK, sigs, NULL);
    signal (SIGPIPE, SIG_IGN);
}

static fm_http_t *
http_start (fm_daemon_t *d, const fm_conf_t *conf, const char *db_path)
{
    const char *addr = fm_conf_string (conf, "listen_address");
    fm_error_t err;
    fm_http_t *http;

    if (!(http = fm_http_start (d,
                                addr,
                                (int)fm_conf_int (conf, "listen_port"),
                                (unsigned)fm_conf_int (conf, "max_connections"),
                                (unsigned)(fm_conf_duration (conf, "connection_timeout")
                                           / FM_NSEC_PER_SEC),
                                &err))) {
        die ("%s", err.text);
    }
    fm_notice ("listening on %s port %lld, store %s (schema %d)%s",
               addr,
               (long long)fm_conf_int (conf, "listen_port"),
               db_path,
               fm_store_schema_version (d->store),
               d->insecure ? ", INSECURE" : "");
    return http;
}

/* Until a signal asks to stop: WAL checkpoints every second, pruning every
 * prune_ns.
 */
static void
serve (fm_store_t *pruner, int64_t retention_ns, int64_t prune_ns, const sigset_t *sigs)
{
    int64_t next_prune;
    fm_error_t err;

    prune (pruner, retention_ns);
    next_prune = fm_time_mono_ns () + prune_ns;
    for (;;) {
        struct timespec ts = fm_time_to_timespec (FM_NSEC_PER_SEC);
        int sig = sigtimedwait (sigs, NULL, &ts);

        if (sig == SIGHUP) {
            fm_info ("SIGHUP ignored: restart fabricd to change its configuration");
        } else if (sig > 0) {
            fm_notice ("signal %d: shutting down", sig);
            break;
        }
        if (fm_store_checkpoint (pruner, &err) < 0) {
            fm_warn ("%s", err.text);
        }
        if (fm_time_mono_ns () >= next_prune) {
            prune (pruner, retention_ns);
            next_prune = fm_time_mono_ns () + prune_ns;
        }
    }
}

int main (int argc, char **argv)
{
    args_t args = {0};
    fm_daemon_t d = {0};
    fm_store_t *pruner;
    fm_store_sync_t sync;
    fm_http_t *http;
    fm_error_t err;
    fm_conf_t *conf;
    char *db_path;
    sigset_t sigs;
    int rc;

    fm_log_init ("fabricd", FM_LOG_STDERR, LOG_INFO);
    if ((rc = args_parse (argc, argv, &args)) >= 0) {
        return rc;
    }
    conf = config_load (&args);
    if (args.show) {
        fm_conf_dump (conf, stdout);
        fm_conf_destroy (conf);
        return 0;
    }
    logging_start (conf);
    if (sodium_init () < 0) {
        die ("libsodium failed to initialise");
    }
    auth_open (&d, conf, args.insecure);
    db_path = store_open (&d, conf, &sync, &pruner);
    daemon_init (&d, conf, args.insecure);
    if (!(d.monitor = monitor_create (&d, conf, db_path, sync))) {
        exit (1);
    }
    if (!(d.plans = fm_jobplan_create (fm_monitor_topology_text (d.monitor),
                                       FM_JOBPLAN_NODES_KEPT))) {
        die ("out of memory");
    }
    signals_block (&sigs);
    http = http_start (&d, conf, db_path);
    if (fm_monitor_start (d.monitor, &err) < 0) {
        die ("%s", err.text);
    }
    sd_notify_msg ("READY=1");

    serve (pruner, d.retention_ns, fm_conf_duration (conf, "prune_interval"), &sigs);

    sd_notify_msg ("STOPPING=1");
    fm_http_stop (http);
    fm_monitor_destroy (d.monitor);
    fm_jobplan_destroy (d.plans);
    fm_checks_destroy (d.checks);
    fm_store_close (pruner);
    fm_store_close (d.store);
    fm_metrics_destroy (d.metrics);
    fm_auth_destroy (d.auth);
    free (db_path);
    fm_conf_destroy (conf);
    fm_log_fini ();
    return 0;
}
