/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "monitor_private.h"

bool fm_monitor_name_fits (const char *s)
{
    return s && strlen (s) < 64;
}

/* Topology text: the configured file, or topology.conf beside slurm.conf. */
static int topology_load (fm_monitor_t *m, fm_error_t *err)
{
    char path[4096];
    const char *src = m->topology ? m->topology : "auto";
    struct stat sb;
    FILE *fp;

    if (strcmp (src, "flat") == 0) {
        return 0;
    }
    if (strcmp (src, "auto") == 0) {
        const char *conf = m->slurm_conf ? m->slurm_conf : getenv ("SLURM_CONF");
        const char *slash;
        if (!conf || !*conf) {
            conf = "/etc/slurm/slurm.conf";
        }
        slash = strrchr (conf, '/');
        snprintf (path,
                  sizeof (path),
                  "%.*s/topology.conf",
                  slash ? (int)(slash - conf) : 1,
                  slash ? conf : ".");
        if (stat (path, &sb) < 0) {
            fm_info ("topology: no %s: flat", path);
            return 0;
        }
    } else {
        snprintf (path, sizeof (path), "%s", src);
    }
    if (!(fp = fopen (path, "re"))) {
        return fm_errprintf (err, "topology %s: %s", path, strerror (errno));
    }
    if (fstat (fileno (fp), &sb) < 0 || sb.st_size > FM_TOPO_TEXT_MAX) {
        fclose (fp);
        errno = EFBIG;
        return fm_errprintf (
            err, "topology %s: larger than %d bytes", path, FM_TOPO_TEXT_MAX);
    }
    if (!(m->topo_text = calloc (1, (size_t)sb.st_size + 1))) {
        fclose (fp);
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    if (fread (m->topo_text, 1, (size_t)sb.st_size, fp) != (size_t)sb.st_size) {
        fclose (fp);
        free (m->topo_text);
        m->topo_text = NULL;
        errno = EIO;
        return fm_errprintf (err, "topology %s: short read", path);
    }
    fclose (fp);
    fm_info ("topology: %s", path);
    return 0;
}

const char *fm_monitor_topology_text (const fm_monitor_t *m)
{
    return m->topo_text;
}

/* A topology with every node we know of, and a fresh scoring engine on it
 * (scoring state is per node id, so a new node set starts it over).
 */
int fm_monitor_engine_build (fm_monitor_t *m,
                             const char *const *extra,
                             size_t nextra,
                             fm_error_t *err)
{
    fm_topo_t *t;
    fm_score_t *s;
    size_t before = m->topo ? fm_topo_nnodes (m->topo) : 0;

    if (m->topo_text) {
        t = fm_topo_parse (m->topo_text, err);
    } else if (!(t = fm_topo_create_flat ())) {
        fm_errprintf (err, "out of memory");
    }
    if (!t) {
        return -1;
    }
    for (size_t i = 0; m->topo && i < before; i++) {
        if (fm_topo_add_node (t, fm_topo_node_name (m->topo, (int)i)) < 0) {
            goto fail;
        }
    }
    for (size_t i = 0; i < m->nslurm; i++) {
        if (fm_topo_add_node (t, m->slurm[i].name) < 0) {
            goto fail;
        }
    }
    for (size_t i = 0; i < nextra; i++) {
        if (fm_topo_add_node (t, extra[i]) < 0) {
            fm_warn ("topology: cannot add node '%s': %s", extra[i], strerror (errno));
        }
    }
    if (!(s = fm_score_create (t, &m->conf.score))) {
        goto fail;
    }
    int64_t *seen = calloc (fm_topo_nnodes (t) + 1, sizeof (*seen));
    if (!seen) {
        fm_score_destroy (s);
        errno = ENOMEM;
        goto fail;
    }
    for (size_t i = 0; m->topo && i < m->nseen; i++) {
        int id = fm_topo_node_find (t, fm_topo_node_name (m->topo, (int)i));
        if (id >= 0) {
            seen[id] = m->seen_ns[i];
        }
    }
    free (m->seen_ns);
    m->seen_ns = seen;
    m->nseen = fm_topo_nnodes (t);
    fm_score_destroy (m->score);
    fm_topo_destroy (m->topo);
    m->topo = t;
    m->score = s;
    if (before) {
        fm_notice ("topology: %zu nodes now (was %zu): scoring starts over",
                   fm_topo_nnodes (t),
                   before);
    }
    return 0;
fail:
    fm_errprintf (err, "topology: %s", strerror (errno));
    fm_topo_destroy (t);
    return -1;
}

bool fm_monitor_is_manual (const char *reason)
{
    return reason
           && strncmp (
                  reason, FM_MONITOR_MANUAL_PREFIX, strlen (FM_MONITOR_MANUAL_PREFIX))
                  == 0;
}

static int node_cmp (const void *a, const void *b)
{
    return strcmp (((const fm_node_info_t *)a)->name,
                   ((const fm_node_info_t *)b)->name);
}

const fm_node_info_t *fm_monitor_slurm_find (const fm_monitor_t *m, const char *name)
{
    fm_node_info_t key;

    if (!m->slurm || !fm_monitor_name_fits (name)) {
        return NULL;
    }
    snprintf (key.name, sizeof (key.name), "%s", name);
    return bsearch (&key, m->slurm, m->nslurm, sizeof (key), node_cmp);
}

/* Slurm's nodes, once a window. On failure the previous list stays and the
 * policy runs without Slurm's view of new nodes (it acts on nothing it
 * cannot see).
 */
void fm_monitor_slurm_refresh (fm_monitor_t *m)
{
    fm_node_info_t *v;
    size_t n;
    fm_error_t err;

    if (!m->act) {
        return;
    }
    if (fm_actions_nodes_list (m->act, &v, &n, &err) < 0) {
        if (!m->warned_slurm) {
            fm_warn ("slurm: cannot list nodes: %s (retrying every window)", err.text);
            m->warned_slurm = true;
        }
        m->slurm_ok = false;
        return;
    }
    if (m->warned_slurm) {
        fm_notice ("slurm: answering again");
        m->warned_slurm = false;
    }
    qsort (v, n, sizeof (*v), node_cmp);
    free (m->slurm);
    m->slurm = v;
    m->nslurm = n;
    m->slurm_ok = true;
}

static void admin_run (fm_monitor_t *m, cmd_t *c)
{
    fm_action_rec_t rec = {.at_ns = fm_time_real_ns ()};
    char reason[256];
    int rc;

    snprintf (rec.node, sizeof (rec.node), "%s", c->node);
    snprintf (rec.element, sizeof (rec.element), "node:%s", c->node);
    snprintf (rec.explain, sizeof (rec.explain), "by uid %u through the API", c->uid);
    if (c->op == FM_MONITOR_DRAIN) {
        snprintf (rec.kind, sizeof (rec.kind), "drain");
        snprintf (
            reason, sizeof (reason), "%s %.200s", FM_MONITOR_MANUAL_PREFIX, c->reason);
        rc = fm_actions_drain (m->act, c->node, reason, &c->err);
        snprintf (rec.reason, sizeof (rec.reason), "%s", reason);
    } else {
        snprintf (rec.kind, sizeof (rec.kind), "resume");
        rc = c->force ? fm_actions_resume_force (m->act, c->node, &c->err)
                      : fm_actions_resume (m->act, c->node, &c->err);
        snprintf (rec.reason,
                  sizeof (rec.reason),
                  "%s",
                  c->force ? "administrator (forced)" : "administrator");
    }
    c->rc = rc;
    c->errnum = rc < 0 ? errno : 0;
    rec.dry_run = m->conf.policy.dry_run;
    if (rc >= 0 && rec.dry_run) {
        snprintf (c->result, sizeof (c->result), "dry_run");
        snprintf (rec.result, sizeof (rec.result), "dry_run");
    } else if (rc < 0) {
        snprintf (rec.result, sizeof (rec.result), "error: %.56s", c->err.text);
    } else {
        snprintf (c->result, sizeof (c->result), "%s", fm_actions_result_name (rc));
        snprintf (rec.result, sizeof (rec.result), "%s", c->result);
    }
    fm_notice ("admin (uid %u): %s %s: %s", c->uid, rec.kind, c->node, rec.result);
    fm_monitor_actions_record (m, &rec);
    if (rc >= 0) {
        fm_monitor_slurm_refresh (m); /* drains and fabricctl show it at once */
        fm_monitor_window_publish (m, rec.at_ns, &m->conf.policy);
    }
}

static int64_t next_tick (const fm_monitor_t *m, int64_t now)
{
    /* window ends aligned to the wall clock as the agents' are, plus a lag
     * for the reports of the window that just ended to arrive
     */
    int64_t w = m->conf.window_ns;
    int64_t lag = w / 5 < FM_NSEC_PER_SEC ? w / 5 : FM_NSEC_PER_SEC;

    return (now / w + 1) * w + lag;
}

static void *loop (void *arg)
{
    fm_monitor_t *m = arg;
    int64_t tick = next_tick (m, fm_time_real_ns ());

    pthread_mutex_lock (&m->lock);
    while (!m->stop) {
        int64_t now = fm_time_real_ns ();
        if (m->cmds) {
            cmd_t *c = m->cmds;
            m->cmds = c->next;
            pthread_mutex_unlock (&m->lock);
            admin_run (m, c);
            pthread_mutex_lock (&m->lock);
            c->done = true;
            pthread_cond_broadcast (&m->done);
            continue;
        }
        if (now >= tick) {
            int64_t w = m->conf.window_ns;
            pthread_mutex_unlock (&m->lock);
            fm_monitor_window_close (m, (tick / w) * w);
            pthread_mutex_lock (&m->lock);
            tick = next_tick (m, fm_time_real_ns ());
            continue;
        }
        struct timespec ts;
        clock_gettime (CLOCK_MONOTONIC, &ts);
        int64_t until = fm_time_from_timespec (&ts) + (tick - now);
        ts = fm_time_to_timespec (until);
        pthread_cond_timedwait (&m->wake, &m->lock, &ts);
    }
    /* commands still queued are answered rather than left waiting */
    for (cmd_t *c = m->cmds; c; c = c->next) {
        c->rc = -1;
        c->errnum = EAGAIN;
        fm_errprintf (&c->err, "fabricd is stopping");
        c->done = true;
    }
    m->cmds = NULL;
    pthread_cond_broadcast (&m->done);
    pthread_mutex_unlock (&m->lock);
    return NULL;
}

fm_monitor_t *
fm_monitor_create (fm_daemon_t *d, const fm_monitor_conf_t *conf, fm_error_t *err)
{
    fm_monitor_t *m;
    pthread_condattr_t ca;

    if (!d || !conf || !conf->db_path || conf->window_ns <= 0) {
        errno = EINVAL;
        fm_errprintf (err, "monitor: invalid configuration");
        return NULL;
    }
    if (!(m = calloc (1, sizeof (*m)))) {
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    m->d = d;
    m->conf = *conf;
    m->rl_store = (fm_ratelimit_t)FM_RATELIMIT_INIT (60, 3);
    m->rl_link = (fm_ratelimit_t)FM_RATELIMIT_INIT (60, 3);
    pthread_mutex_init (&m->lock, NULL);
    pthread_condattr_init (&ca);
    pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
    pthread_cond_init (&m->wake, &ca);
    pthread_cond_init (&m->done, &ca);
    pthread_condattr_destroy (&ca);
    if ((conf->slurm_conf && *conf->slurm_conf
         && !(m->slurm_conf = strdup (conf->slurm_conf)))
        || !(m->topology = strdup (conf->topology ? conf->topology : "auto"))
        || !(m->db_path = strdup (conf->db_path))
        || !(m->actions_kind = strdup (conf->actions ? conf->actions : "auto"))) {
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        goto fail;
    }
    m->conf.slurm_conf = m->slurm_conf;
    m->conf.topology = m->topology;
    m->conf.db_path = m->db_path;
    m->conf.actions = m->actions_kind;
    if (!(m->pol = fm_policy_create (&conf->policy))) {
        fm_errprintf (err, "policy: invalid parameters");
        goto fail;
    }
    if (!(m->store = fm_store_open ("sqlite", m->db_path, conf->sync, err))) {
        goto fail;
    }
    m->cmd_opts = (fm_actions_opts_t){.slurm_conf = m->slurm_conf};
    if (strcmp (m->actions_kind, "none") != 0) {
        fm_actions_opts_t ao = {
            .slurm_conf = m->slurm_conf,
            .dry_run = conf->policy.dry_run,
        };
        if (!(m->act = fm_actions_create (m->actions_kind, &ao, err))) {
            goto fail;
        }
    }
    if (topology_load (m, err) < 0) {
        goto fail;
    }
    fm_monitor_slurm_refresh (m);
    if (fm_monitor_engine_build (m, NULL, 0, err) < 0) {
        goto fail;
    }
    m->state = fm_monitor_window_state (m, fm_time_real_ns (), &m->conf.policy);
    fm_notice ("fabric loop: %s actions%s, %s topology with %zu nodes, window %.1f s",
               m->act ? fm_actions_kind (m->act) : "no",
               conf->policy.dry_run || !m->act ? " (dry run)" : "",
               m->topo_text ? "tree" : "flat",
               fm_topo_nnodes (m->topo),
               (double)conf->window_ns / 1e9);
    return m;
fail : {
    int e = errno;
    fm_monitor_destroy (m);
    errno = e;
}
    return NULL;
}

int fm_monitor_start (fm_monitor_t *m, fm_error_t *err)
{
    int rc;

    if ((rc = pthread_create (&m->thread, NULL, loop, m)) != 0) {
        errno = rc;
        return fm_errprintf (err, "monitor thread: %s", strerror (rc));
    }
    m->started = true;
    return 0;
}

void fm_monitor_destroy (fm_monitor_t *m)
{
    int e = errno;

    if (!m) {
        return;
    }
    if (m->started) {
        pthread_mutex_lock (&m->lock);
        m->stop = true;
        pthread_cond_broadcast (&m->wake);
        pthread_mutex_unlock (&m->lock);
        pthread_join (m->thread, NULL);
    }
    for (size_t i = 0; i < m->nhq; i++) {
        free (m->hq[i].json);
    }
    free (m->hq);
    free (m->q);
    for (size_t i = 0; i < m->njobs; i++) {
        fm_strlist_free (m->jobs[i].nodes, m->jobs[i].nnodes);
    }
    free (m->jobs);
    fm_strlist_free (m->weighted, m->nweighted);
    if (m->prob.active) {
        fm_monitor_probation_end (
            m, "fabric: validation: interrupted: fabricd stopped", fm_time_real_ns ());
    }
    free (m->seen_ns);
    free (m->slurm);
    json_decref (m->state);
    fm_score_destroy (m->score);
    fm_topo_destroy (m->topo);
    fm_policy_destroy (m->pol);
    fm_actions_destroy (m->act);
    fm_store_close (m->store);
    free (m->topo_text);
    free (m->slurm_conf);
    free (m->topology);
    free (m->db_path);
    free (m->actions_kind);
    pthread_cond_destroy (&m->wake);
    pthread_cond_destroy (&m->done);
    pthread_mutex_destroy (&m->lock);
    free (m);
    errno = e;
}

json_t *fm_monitor_state_json (fm_monitor_t *m)
{
    json_t *o;

    if (!m) {
        return NULL;
    }
    pthread_mutex_lock (&m->lock);
    o = m->state ? json_deep_copy (m->state) : NULL;
    pthread_mutex_unlock (&m->lock);
    if (!o) {
        o = json_pack ("{s:I,s:I,s:b,s:s,s:[],s:[],s:[]}",
                       "window_ns",
                       (json_int_t)m->conf.window_ns,
                       "windows",
                       (json_int_t)0,
                       "dry_run",
                       m->conf.policy.dry_run || !m->act,
                       "backend",
                       m->act ? fm_actions_kind (m->act) : "none",
                       "elements",
                       "alarms",
                       "drained");
    }
    return o;
}

int fm_monitor_admin (fm_monitor_t *m,
                      fm_monitor_op_t op,
                      const char *node,
                      const char *reason,
                      bool force,
                      unsigned int uid,
                      char *result,
                      size_t result_len,
                      fm_error_t *err)
{
    cmd_t *c, **tail;
    struct timespec ts;
    int rc = 0;

    if (!m || !fm_monitor_name_fits (node) || !*node
        || (op == FM_MONITOR_DRAIN && (!reason || !*reason || strlen (reason) > 200))) {
        errno = EINVAL;
        return fm_errprintf (err,
                             op == FM_MONITOR_DRAIN
                                 ? "a node and a reason (at most 200 "
                                   "bytes) are required"
                                 : "a node is required");
    }
    if (!m->act) {
        errno = ENOTSUP;
        return fm_errprintf (err,
                             "fabricd has no Slurm actions backend (actions = none)");
    }
    if (!m->started) {
        errno = EAGAIN;
        return fm_errprintf (err, "the fabric loop is not running");
    }
    if (!(c = calloc (1, sizeof (*c)))) {
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    c->op = op;
    c->force = force;
    c->uid = uid;
    snprintf (c->node, sizeof (c->node), "%s", node);
    snprintf (c->reason, sizeof (c->reason), "%s", reason ? reason : "");
    clock_gettime (CLOCK_MONOTONIC, &ts);
    ts = fm_time_to_timespec (fm_time_from_timespec (&ts) + ADMIN_WAIT_NS);
    pthread_mutex_lock (&m->lock);
    for (tail = &m->cmds; *tail; tail = &(*tail)->next) {
    }
    *tail = c;
    pthread_cond_broadcast (&m->wake);
    while (!c->done && rc == 0) {
        rc = pthread_cond_timedwait (&m->done, &m->lock, &ts);
    }
    if (!c->done) {
        /* still queued: take it back; being run: let the loop finish it */
        for (tail = &m->cmds; *tail && *tail != c; tail = &(*tail)->next) {
        }
        if (*tail) {
            *tail = c->next;
            pthread_mutex_unlock (&m->lock);
            free (c);
            errno = ETIMEDOUT;
            return fm_errprintf (err, "the fabric loop is busy; try again");
        }
        while (!c->done) {
            pthread_cond_wait (&m->done, &m->lock);
        }
    }
    pthread_mutex_unlock (&m->lock);
    if (c->rc < 0) {
        int e = c->errnum;
        fm_errprintf (err, "%s", c->err.text);
        free (c);
        errno = e;
        return -1;
    }
    snprintf (result, result_len, "%s", c->result);
    free (c);
    return 0;
}
