/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "health.h"
#include "log.h"

/* Steering NCCL/RCCL off degraded rails (doc/health.md "Steering"). The agent
 * decides, the plugin applies: the plugin runs as the job's user at task start
 * and must not probe hardware or talk to fabricd, so it only reads the small
 * file written here.
 */

typedef struct {
    char device[FM_HEALTH_NAME_MAX];
    int port;
    bool degraded; /* sticky: a rail that failed once in a job is not trusted */
} port_t;

struct fm_health_steer {
    char *path;
    port_t ports[FM_HEALTH_STEER_PORTS];
    size_t nports;
    bool all_noted; /* "every port is degraded" was said */
    bool full_noted;
    char exclude[FM_HEALTH_STEER_MAX];
    bool dirty; /* exclude changed and is not on disk yet */
};

fm_health_steer_t *fm_health_steer_create (const char *path)
{
    fm_health_steer_t *st = calloc (1, sizeof (*st));

    if (!st || !path || !(st->path = strdup (path))) {
        free (st);
        errno = ENOMEM;
        return NULL;
    }
    /* a restarted agent (requeue, crash) decides afresh: no stale exclusion */
    if (unlink (path) < 0 && errno != ENOENT) {
        fm_debug ("steering: %s: %s", path, strerror (errno));
    }
    return st;
}

void fm_health_steer_destroy (fm_health_steer_t *st)
{
    int saved = errno;

    if (st) {
        free (st->path);
        free (st);
    }
    errno = saved;
}

const char *fm_health_steer_exclude (const fm_health_steer_t *st)
{
    return st->exclude;
}

static port_t *port_get (fm_health_steer_t *st, const fm_health_record_t *r)
{
    for (size_t i = 0; i < st->nports; i++) {
        if (st->ports[i].port == r->port
            && strcmp (st->ports[i].device, r->device) == 0) {
            return &st->ports[i];
        }
    }
    if (st->nports == FM_HEALTH_STEER_PORTS) {
        if (!st->full_noted) {
            fm_warn ("steering: more than %d HCA ports; %s:%d and later ignored",
                     FM_HEALTH_STEER_PORTS,
                     r->device,
                     r->port);
            st->full_noted = true;
        }
        return NULL;
    }
    port_t *p = &st->ports[st->nports++];
    snprintf (p->device, sizeof (p->device), "%s", r->device);
    p->port = r->port;
    return p;
}

/* Why this record makes its port degraded, or NULL. */
static const char *bad_record (const fm_health_record_t *r, int64_t *errors)
{
    if (r->vtype == FM_HVAL_TEXT && strcmp (r->name, "state") == 0
        && strcmp (r->text, "ACTIVE") != 0) {
        return "state";
    }
    if (r->vtype == FM_HVAL_TEXT && strcmp (r->name, "phys_state") == 0
        && strcmp (r->text, "LinkUp") != 0) {
        return "phys_state";
    }
    if (r->vtype != FM_HVAL_COUNTER || r->delta <= 0) {
        return NULL;
    }
    if (strcmp (r->name, "link_downed") == 0
        || strcmp (r->name, "link_error_recovery") == 0) {
        return r->name;
    }
    if (strcmp (r->name, "symbol_error") == 0
        || strcmp (r->name, "port_rcv_errors") == 0) {
        *errors += r->delta;
    }
    return NULL;
}

static int write_file (fm_health_steer_t *st)
{
    char tmp[4200];
    size_t len = strlen (st->exclude);
    int fd, e;

    if (snprintf (tmp, sizeof (tmp), "%s.tmp", st->path) >= (int)sizeof (tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -1;
    }
    /* the plugin reads it as the job's user: umask must not hide it */
    if (fchmod (fd, 0644) < 0
        || (len > 0 && write (fd, st->exclude, len) != (ssize_t)len)
        || write (fd, "\n", 1) != 1 || close (fd) < 0) {
        e = errno ? errno : EIO;
        close (fd);
        unlink (tmp);
        errno = e;
        return -1;
    }
    if (rename (tmp, st->path) < 0) {
        e = errno;
        unlink (tmp);
        errno = e;
        return -1;
    }
    return 0;
}

int fm_health_steer_update (fm_health_steer_t *st, const fm_health_set_t *set)
{
    char next[FM_HEALTH_STEER_MAX] = "";
    size_t off = 0, ndegraded = 0;
    bool changed;

    for (size_t i = 0; set && i < set->n; i++) {
        const fm_health_record_t *r = &set->rec[i];
        int64_t errors = 0;
        const char *why;
        port_t *p;

        if (r->kind != FM_HREC_IB_PORT || r->port < 1 || !(p = port_get (st, r))) {
            continue;
        }
        why = bad_record (r, &errors);
        if (!why && errors >= FM_HEALTH_STEER_ERRORS) {
            why = "errors";
        }
        if (why && !p->degraded) {
            p->degraded = true;
            fm_notice ("steering: %s port %d degraded (%s%s%s): left out of "
                       "NCCL_IB_HCA for new steps",
                       p->device,
                       p->port,
                       why,
                       r->vtype == FM_HVAL_TEXT ? " " : "",
                       r->vtype == FM_HVAL_TEXT ? r->text : "");
        }
    }
    for (size_t i = 0; i < st->nports; i++) {
        ndegraded += st->ports[i].degraded;
    }
    if (ndegraded > 0 && ndegraded == st->nports) {
        if (!st->all_noted) {
            fm_warn ("steering: every HCA port is degraded; NCCL_IB_HCA left alone");
            st->all_noted = true;
        }
    } else {
        for (size_t i = 0; i < st->nports; i++) {
            if (st->ports[i].degraded) {
                off += (size_t)snprintf (next + off,
                                         sizeof (next) - off,
                                         "%s%s:%d",
                                         off ? "," : "",
                                         st->ports[i].device,
                                         st->ports[i].port);
            }
        }
    }
    changed = strcmp (next, st->exclude) != 0;
    if (changed) {
        snprintf (st->exclude, sizeof (st->exclude), "%s", next);
        st->dirty = true;
    }
    if (st->dirty) {
        if (write_file (st) < 0) {
            return -1;
        }
        st->dirty = false;
    }
    return changed ? 1 : 0;
}
