/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "fm/api.h"
#include "dconf.h"

static const char *const store_sync_choices[] = {"normal", "full", NULL};
static const char *const actions_choices[] = {
    "auto", "libslurm", "scontrol", "none", NULL};
static const char *const signal_choices[] = {
    "USR1", "USR2", "TERM", "INT", "HUP", "CONT", "URG", NULL};

const fm_conf_item_t fm_dconf_table[] = {
    {"listen_address",
     FM_CONF_STRING,
     FM_API_DEFAULT_ADDRESS,
     0,
     255,
     NULL,
     "IPv4 or IPv6 address the HTTP server binds"},
    {"listen_port", FM_CONF_INT, "8470", 1, 65535, NULL, "HTTP port"},
    {"state_dir",
     FM_CONF_STRING,
     "/var/lib/fabric-monitor",
     0,
     1024,
     NULL,
     "directory holding the SQLite store (fabricd.db)"},
    {"munge_socket",
     FM_CONF_STRING,
     "/run/munge/munge.socket.2",
     0,
     1024,
     NULL,
     "munged socket used to decode credentials"},
    {"report_uids",
     FM_CONF_STRING,
     "",
     0,
     4096,
     NULL,
     "users (names or uids) besides root allowed to register agents and post reports"
     " (the SlurmUser)"},
    {"admin_uids",
     FM_CONF_STRING,
     "",
     0,
     4096,
     NULL,
     "users besides root allowed to read everything"},
    {"admin_groups",
     FM_CONF_STRING,
     "",
     0,
     4096,
     NULL,
     "groups whose members may read everything"},
    {"retention",
     FM_CONF_DURATION,
     "30d",
     60e9,
     3650 * 86400e9,
     NULL,
     "how long report windows are kept"},
    {"prune_interval",
     FM_CONF_DURATION,
     "10m",
     1e9,
     86400e9,
     NULL,
     "how often windows older than retention are deleted"},
    {"max_body",
     FM_CONF_SIZE,
     "4M",
     1024,
     64 * 1024 * 1024,
     NULL,
     "largest accepted request body"},
    {"max_connections",
     FM_CONF_INT,
     "256",
     1,
     65536,
     NULL,
     "concurrent HTTP connections"},
    {"connection_timeout",
     FM_CONF_DURATION,
     "30s",
     1e9,
     3600e9,
     NULL,
     "idle HTTP connections are closed after this"},
    {"report_window",
     FM_CONF_DURATION,
     "5s",
     1e9,
     3600e9,
     NULL,
     "report window length handed to agents"},
    {"metrics_public",
     FM_CONF_BOOL,
     "yes",
     0,
     0,
     NULL,
     "serve GET /metrics without a credential"},
    {"pages_public",
     FM_CONF_BOOL,
     "no",
     0,
     0,
     NULL,
     "serve the HTML pages (/ and /jobs/{id}) without a credential"},
    {"store_sync",
     FM_CONF_ENUM,
     "normal",
     0,
     0,
     store_sync_choices,
     "normal: acknowledged reports survive a daemon crash; full: also power loss"},
    {"actions",
     FM_CONF_ENUM,
     "auto",
     0,
     0,
     actions_choices,
     "Slurm actions backend: auto (libslurm when built in, else scontrol), libslurm,"
     " scontrol, or none (decide, record, never call Slurm)"},
    {"slurm_conf",
     FM_CONF_STRING,
     "",
     0,
     4096,
     NULL,
     "slurm.conf for the actions (empty: SLURM_CONF, else Slurm's default)"},
    {"topology",
     FM_CONF_STRING,
     "auto",
     0,
     4096,
     NULL,
     "auto (topology.conf beside slurm.conf, flat when absent), flat, or a"
     " topology.conf path"},
    {"dry_run",
     FM_CONF_BOOL,
     "no",
     0,
     0,
     NULL,
     "decide and record actions without calling Slurm"},
    {"auto_resume",
     FM_CONF_BOOL,
     "yes",
     0,
     0,
     NULL,
     "resume nodes fabricd drained once healthy for resume_windows"},
    {"auto_validate",
     FM_CONF_BOOL,
     "yes",
     0,
     0,
     NULL,
     "before resuming a drained node no job observes, hold it in a reservation and"
     " probe it with a short monitored job and healthy peers"},
    {"validate_check",
     FM_CONF_BOOL,
     "yes",
     0,
     0,
     NULL,
     "the validation job also runs fabric-check against its peers, and the node"
     " passes only when that check passes"},
    {"validate_backoff",
     FM_CONF_DURATION,
     "10m",
     0,
     7 * 86400e9,
     NULL,
     "after a failed validation, wait this long before validating the node again"},
    {"resume_windows",
     FM_CONF_INT,
     "12",
     1,
     100000,
     NULL,
     "healthy windows before a fabric drain is resumed or a weight restored"},
    {"persist_windows",
     FM_CONF_INT,
     "2",
     1,
     1000,
     NULL,
     "windows an element must be implicated before it is degraded or failed"},
    {"recover_windows",
     FM_CONF_INT,
     "6",
     1,
     100000,
     NULL,
     "clean windows before an element is healthy again"},
    {"max_drain_fraction",
     FM_CONF_DOUBLE,
     "0.02",
     0,
     1,
     NULL,
     "most nodes drained by fabricd at once, as a fraction of all (at least 1)"},
    {"max_drains_per_hour",
     FM_CONF_INT,
     "10",
     0,
     100000,
     NULL,
     "most drains by fabricd in any hour"},
    {"degraded_weight_add",
     FM_CONF_INT,
     "1000",
     0,
     1000000000,
     NULL,
     "added to the Slurm Weight of a degraded node, so it is used last"},
    {"protect_signal",
     FM_CONF_ENUM,
     "USR1",
     0,
     0,
     signal_choices,
     "checkpoint notice sent to the batch shell of a protected job"},
    {"protect_grace",
     FM_CONF_DURATION,
     "120s",
     0,
     86400e9,
     NULL,
     "time between the checkpoint notice and the requeue"},
    {"log_level",
     FM_CONF_STRING,
     "info",
     0,
     16,
     NULL,
     "err, warning, notice, info or debug"},
    {"syslog", FM_CONF_BOOL, "no", 0, 0, NULL, "also log to syslog"},
    {.key = NULL},
};

static int resolve (const char *name, bool groups, unsigned int *id, fm_error_t *err)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul (name, &end, 10);
    if (*name >= '0' && *name <= '9') {
        if (errno != 0 || *end != '\0' || v >= UINT_MAX) {
            errno = EINVAL;
            return fm_errprintf (
                err, "bad %s id '%s'", groups ? "group" : "user", name);
        }
        *id = (unsigned int)v;
        return 0;
    }
    if (groups) {
        struct group *gr = getgrnam (name);
        if (!gr) {
            errno = EINVAL;
            return fm_errprintf (err, "unknown group '%s'", name);
        }
        *id = gr->gr_gid;
    } else {
        struct passwd *pw = getpwnam (name);
        if (!pw) {
            errno = EINVAL;
            return fm_errprintf (err, "unknown user '%s'", name);
        }
        *id = pw->pw_uid;
    }
    return 0;
}

int fm_idlist_parse (const char *s, bool groups, fm_idlist_t *out, fm_error_t *err)
{
    fm_idlist_t l = {0};
    char *copy, *tok, *save = NULL;

    if (!s || !out) {
        errno = EINVAL;
        return fm_errprintf (err, "no list");
    }
    if (!(copy = strdup (s))) {
        return fm_errprintf (err, "out of memory");
    }
    for (tok = strtok_r (copy, ", \t", &save); tok;
         tok = strtok_r (NULL, ", \t", &save)) {
        unsigned int id = 0;
        if (l.n == sizeof (l.ids) / sizeof (l.ids[0])) {
            free (copy);
            errno = EINVAL;
            return fm_errprintf (
                err, "more than %zu entries", sizeof (l.ids) / sizeof (l.ids[0]));
        }
        if (resolve (tok, groups, &id, err) < 0) {
            int saved = errno;
            free (copy);
            errno = saved;
            return -1;
        }
        l.ids[l.n++] = id;
    }
    free (copy);
    *out = l;
    return 0;
}

bool fm_idlist_has (const fm_idlist_t *l, unsigned int id)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->ids[i] == id) {
            return true;
        }
    }
    return false;
}
