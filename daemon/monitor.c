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

#include "actions.h"
#include "checks.h"
#include "health_map.h"
#include "hostlist.h"
#include "log.h"
#include "monitor.h"
#include "fmtime.h"
#include "topo.h"

/* Records waiting for the next window; past this, records are dropped and
 * counted rather than growing without bound while the loop is stuck in Slurm.
 */
#define QUEUE_MAX (1u << 20)
#define HEALTH_EVENTS_MAX 256
#define ALARMS_KEPT 64
#define JOB_NODES_MAX 65536
#define ADMIN_WAIT_NS (60LL * FM_NSEC_PER_SEC)

typedef struct {
    char src[64], dst[64];
    fm_link_window_t r; /* ids resolved at the window's end */
} qlink_t;

typedef struct {
    char node[64];
    int64_t at_ns;
    char *json;
} qhealth_t;

/* A monitored job as its reports show it. */
typedef struct {
    int64_t job_id;
    int64_t last_ns; /* realtime of its latest window */
    int mode;        /* fm_job_mode_t, -1 until looked up */
    char **nodes;    /* that reported */
    size_t nnodes;
    /* the loop's own */
    bool signaled;
    int64_t signaled_ns;
    int restarts_at_signal;
} mjob_t;

typedef struct cmd {
    struct cmd *next;
    fm_monitor_op_t op;
    char node[64];
    char reason[256];
    bool force;
    unsigned int uid;
    bool done;
    int rc, errnum;
    char result[32];
    fm_error_t err;
} cmd_t;

typedef struct {
    fm_alarm_t a;
    int64_t at_ns;
} alarm_rec_t;

/* A node drained by us that no job observes any more is validated before it
 * is resumed: held in a reservation only we can use, resumed, and probed by a
 * short monitored job with healthy peers, which also runs fabric-check.
 */
typedef struct {
    bool active;
    char node[64], peer[64], peer2[64], resv[96];
    int64_t job_id;
    int64_t started_ns, deadline_ns;
    int64_t sent, lost; /* probes to and from the node since the start */
} probation_t;

/* The validation job probes faster than jobs do, to decide in seconds. */
#define VALIDATE_RATE "50"
/* Loss decisions need this many probes, and confidence: passing wants the
 * loss below the threshold at 95% (Wilson upper bound, z 1.96: 0 lost of
 * about 770 at 0.5%), failing wants it above at z 3, so that the odd probe
 * lost while agents start does not fail a healthy node.
 */
#define VALIDATE_PROBES_MIN 200
#define VALIDATE_Z_PASS 1.96
#define VALIDATE_Z_FAIL 3.0
/* Jobs fabricd requeued get the healthy nodes before any validation does. */
#define VALIDATE_YIELD_NS (15LL * 60 * FM_NSEC_PER_SEC)

typedef struct {
    char node[64];
    int64_t not_before_ns;
} backoff_t;

#define BACKOFF_KEPT 64

struct fm_monitor {
    fm_daemon_t *d;
    fm_monitor_conf_t conf;
    char *actions_kind, *slurm_conf, *topology, *db_path;
    fm_store_t *store;
    fm_actions_t *act; /* NULL: actions = none */
    char *topo_text;   /* NULL: flat */
    fm_topo_t *topo;
    fm_score_t *score;
    fm_policy_t *pol;

    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* the loop: stop, a command */
    pthread_cond_t done; /* admins: a command finished */
    bool stop;
    qlink_t *q;
    size_t nq, qcap;
    qhealth_t *hq;
    size_t nhq, hqcap;
    uint64_t dropped;
    mjob_t *jobs;
    size_t njobs, jobs_cap;
    cmd_t *cmds;
    json_t *state;

    /* the loop's thread only */
    fm_node_info_t *slurm; /* sorted by name */
    size_t nslurm;
    bool slurm_ok;
    char **weighted; /* nodes whose weight we raised */
    size_t nweighted, weighted_cap;
    alarm_rec_t alarms[ALARMS_KEPT];
    size_t nalarms, alarm_next;
    int64_t windows, last_end;
    bool warned_slurm;
    fm_ratelimit_t rl_store, rl_link;
    int64_t *seen_ns; /* per topology node: end of the last window with probes */
    size_t nseen;
    probation_t prob;
    backoff_t backoff[BACKOFF_KEPT];
    size_t nbackoff;
    fm_actions_opts_t cmd_opts;
};

static bool name_fits (const char *s)
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

/* A topology with every node we know of, and a fresh scoring engine on it
 * (scoring state is per node id, so a new node set starts it over).
 */
static int
engine_build (fm_monitor_t *m, const char *const *extra, size_t nextra, fm_error_t *err)
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

static int node_cmp (const void *a, const void *b)
{
    return strcmp (((const fm_node_info_t *)a)->name,
                   ((const fm_node_info_t *)b)->name);
}

static const fm_node_info_t *slurm_find (const fm_monitor_t *m, const char *name)
{
    fm_node_info_t key;

    if (!m->slurm || !name_fits (name)) {
        return NULL;
    }
    snprintf (key.name, sizeof (key.name), "%s", name);
    return bsearch (&key, m->slurm, m->nslurm, sizeof (key), node_cmp);
}

/* Slurm's nodes, once a window. On failure the previous list stays and the
 * policy runs without Slurm's view of new nodes (it acts on nothing it
 * cannot see).
 */
static void slurm_refresh (fm_monitor_t *m)
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

static bool strv_has (char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp (v[i], s) == 0) {
            return true;
        }
    }
    return false;
}

static int strv_add (char ***v, size_t *n, size_t *cap, const char *s)
{
    if (strv_has (*v, *n, s)) {
        return 0;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        char **nv = realloc (*v, nc * sizeof (*nv));
        if (!nv) {
            return -1;
        }
        *v = nv;
        *cap = nc;
    }
    if (!((*v)[*n] = strdup (s))) {
        return -1;
    }
    (*n)++;
    return 0;
}

static void strv_del (char **v, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp (v[i], s) == 0) {
            free (v[i]);
            v[i] = v[--*n];
            return;
        }
    }
}

static void strv_free (char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free (v[i]);
    }
    free (v);
}

/* --- ingest (HTTP thread) --- */

static mjob_t *job_get (fm_monitor_t *m, int64_t job_id)
{
    for (size_t i = 0; i < m->njobs; i++) {
        if (m->jobs[i].job_id == job_id) {
            return &m->jobs[i];
        }
    }
    if (m->njobs == m->jobs_cap) {
        size_t nc = m->jobs_cap ? m->jobs_cap * 2 : 16;
        mjob_t *nv = realloc (m->jobs, nc * sizeof (*nv));
        if (!nv) {
            return NULL;
        }
        m->jobs = nv;
        m->jobs_cap = nc;
    }
    m->jobs[m->njobs] = (mjob_t){.job_id = job_id, .mode = -1};
    return &m->jobs[m->njobs++];
}

static void job_node_add (mjob_t *j, const char *node)
{
    char **nv;

    if (j->nnodes >= JOB_NODES_MAX || strv_has (j->nodes, j->nnodes, node)) {
        return;
    }
    if (!(nv = realloc (j->nodes, (j->nnodes + 1) * sizeof (*nv)))) {
        return;
    }
    j->nodes = nv;
    if ((j->nodes[j->nnodes] = strdup (node))) {
        j->nnodes++;
    }
}

static bool queue_room (fm_monitor_t *m, size_t more)
{
    if (m->nq + more > QUEUE_MAX) {
        return false;
    }
    if (m->nq + more > m->qcap) {
        size_t nc = m->qcap ? m->qcap : 1024;
        while (nc < m->nq + more) {
            nc *= 2;
        }
        qlink_t *nv = realloc (m->q, nc * sizeof (*nv));
        if (!nv) {
            return false;
        }
        m->q = nv;
        m->qcap = nc;
    }
    return true;
}

static bool quant_p50 (const fm_quant_t *q, int64_t *v)
{
    if (!q->present) {
        return false;
    }
    *v = q->p50;
    return true;
}

void fm_monitor_ingest (fm_monitor_t *m, const fm_report_t *rep)
{
    mjob_t *j;

    if (!m || !rep || !name_fits (rep->node)) {
        return;
    }
    pthread_mutex_lock (&m->lock);
    if ((j = job_get (m, rep->job_id))) {
        job_node_add (j, rep->node);
    }
    for (size_t w = 0; w < rep->nwindows; w++) {
        const fm_window_t *win = &rep->windows[w];
        if (j && win->end_ns > j->last_ns) {
            j->last_ns = win->end_ns;
        }
        if (!queue_room (m, win->nlinks)) {
            m->dropped += win->nlinks;
            continue;
        }
        for (size_t i = 0; i < win->nlinks; i++) {
            const fm_link_rec_t *l = &win->links[i];
            /* The sender's view of each direction: it counts what it sent and
             * learns from the peer's replies what arrived. The receiver's
             * "in" entries describe the same probes and would count them
             * twice.
             */
            if (l->dir != FM_DIR_OUT || !name_fits (l->peer)
                || strcmp (l->peer, rep->node) == 0) {
                continue;
            }
            qlink_t *x = &m->q[m->nq++];
            snprintf (x->src, sizeof (x->src), "%s", rep->node);
            snprintf (x->dst, sizeof (x->dst), "%s", l->peer);
            x->r = (fm_link_window_t){
                .job_id = rep->job_id,
                .via = -1,
                .start_ns = win->start_ns,
                .end_ns = win->end_ns,
                .sent = l->sent,
                .received = l->sent - l->lost,
                .owd_p50_ns = FM_SCORE_NONE,
                .owd_p99_ns = FM_SCORE_NONE,
                .rtt_p50_ns = FM_SCORE_NONE,
                .loop_residual_ns = FM_SCORE_NONE,
            };
            if (x->r.received < 0) {
                x->r.received = 0;
            }
            quant_p50 (&l->owd, &x->r.owd_p50_ns);
            if (l->owd.present) {
                x->r.owd_p99_ns = l->owd.p99;
            }
            quant_p50 (&l->rtt, &x->r.rtt_p50_ns);
        }
        if (win->health_json && strcmp (win->health_json, "[]") != 0) {
            if (m->nhq == m->hqcap) {
                size_t nc = m->hqcap ? m->hqcap * 2 : 64;
                qhealth_t *nv =
                    m->nhq < QUEUE_MAX / 64 ? realloc (m->hq, nc * sizeof (*nv)) : NULL;
                if (!nv) {
                    m->dropped++;
                    continue;
                }
                m->hq = nv;
                m->hqcap = nc;
            }
            qhealth_t *h = &m->hq[m->nhq];
            snprintf (h->node, sizeof (h->node), "%s", rep->node);
            h->at_ns = win->end_ns;
            if ((h->json = strdup (win->health_json))) {
                m->nhq++;
            }
        }
    }
    pthread_mutex_unlock (&m->lock);
}

/* --- the window (loop thread) --- */

static void alarm_keep (fm_monitor_t *m, const fm_alarm_t *a, int64_t now)
{
    m->alarms[m->alarm_next] = (alarm_rec_t){.a = *a, .at_ns = now};
    m->alarm_next = (m->alarm_next + 1) % ALARMS_KEPT;
    if (m->nalarms < ALARMS_KEPT) {
        m->nalarms++;
    }
}

static int64_t alarms_active (const fm_monitor_t *m, int64_t now)
{
    int64_t n = 0;

    for (size_t i = 0; i < m->nalarms; i++) {
        n += now - m->alarms[i].at_ns < 3600LL * FM_NSEC_PER_SEC;
    }
    return n;
}

static void record (fm_monitor_t *m, fm_action_rec_t *rec)
{
    fm_error_t err;

    fm_metrics_action (m->d->metrics, rec->kind, rec->result);
    if (fm_store_action_add (m->store, rec, &err) < 0) {
        fm_log_ratelimited (
            &m->rl_store, LOG_WARNING, "store: action not recorded: %s", err.text);
    }
}

/* The monitored job whose agent on node reported last: drains are recorded
 * under it, so that its summary lists them.
 */
static int64_t job_of_node (fm_monitor_t *m, const char *node)
{
    int64_t best = 0, best_ns = INT64_MIN;

    pthread_mutex_lock (&m->lock);
    for (size_t i = 0; i < m->njobs; i++) {
        if (m->jobs[i].last_ns > best_ns
            && strv_has (m->jobs[i].nodes, m->jobs[i].nnodes, node)) {
            best = m->jobs[i].job_id;
            best_ns = m->jobs[i].last_ns;
        }
    }
    pthread_mutex_unlock (&m->lock);
    return best;
}

static const char *kind_word (fm_action_kind_t k)
{
    return k == FM_ACT_SET_WEIGHT ? "weight" : fm_policy_action_name (k);
}

static void mark_signaled (fm_monitor_t *m, int64_t job_id, int restarts, int64_t now)
{
    pthread_mutex_lock (&m->lock);
    for (size_t i = 0; i < m->njobs; i++) {
        if (m->jobs[i].job_id == job_id) {
            m->jobs[i].signaled = true;
            m->jobs[i].signaled_ns = now;
            m->jobs[i].restarts_at_signal = restarts;
        }
    }
    pthread_mutex_unlock (&m->lock);
}

static bool backed_off (const fm_monitor_t *m, const char *node, int64_t now);

/* Why node validation holds the policy's action a back, or NULL. */
static const char *held_why (const fm_monitor_t *m, const fm_action_t *a, int64_t now)
{
    /* A failed validation drained it again, and the healthy windows behind
     * this resume may be that validation job's own: only the next validation,
     * after the backoff, resumes it.
     */
    if (a->kind == FM_ACT_RESUME && backed_off (m, a->node, now)) {
        return "its last validation failed";
    }
    /* The windows behind this drain are the validation job's own: the
     * validation judges them, and drains the node with its own reason.
     */
    if (a->kind == FM_ACT_DRAIN && m->prob.active && strcmp (a->node, m->prob.node) == 0) {
        return "its validation is running";
    }
    return NULL;
}

static void execute (fm_monitor_t *m, const fm_action_t *a, int64_t now)
{
    fm_action_rec_t rec = {.at_ns = now, .dry_run = a->dry_run};
    const char *why;
    fm_job_info_t info = {0};
    fm_error_t err = {0};
    int rc = 0;

    snprintf (rec.kind, sizeof (rec.kind), "%s", kind_word (a->kind));
    snprintf (rec.node, sizeof (rec.node), "%s", a->node);
    if (a->node[0]) {
        snprintf (rec.element, sizeof (rec.element), "node:%s", a->node);
    }
    snprintf (rec.reason, sizeof (rec.reason), "%s", a->reason);
    snprintf (rec.explain, sizeof (rec.explain), "%s", a->explain);
    rec.job_id = a->kind == FM_ACT_SIGNAL || a->kind == FM_ACT_REQUEUE
                     ? a->job_id
                     : job_of_node (m, a->node);
    if (a->dry_run || !m->act) {
        snprintf (rec.result, sizeof (rec.result), "dry_run");
        rec.dry_run = true;
        fm_notice ("policy: dry-run: would %s %s%s%s",
                   rec.kind,
                   a->node[0] ? a->node : "",
                   a->reason[0] ? ": " : "",
                   a->reason);
        record (m, &rec);
        return;
    }
    if ((why = held_why (m, a, now))) {
        snprintf (rec.result, sizeof (rec.result), "held");
        fm_notice ("policy: %s %s held: %s", rec.kind, a->node, why);
        record (m, &rec);
        return;
    }
    switch (a->kind) {
    case FM_ACT_DRAIN:
        rc = fm_actions_drain (m->act, a->node, a->reason, &err);
        break;
    case FM_ACT_RESUME:
        rc = fm_actions_resume (m->act, a->node, &err);
        break;
    case FM_ACT_SET_WEIGHT:
        rc = fm_actions_set_weight (m->act, a->node, a->weight, &err);
        break;
    case FM_ACT_SIGNAL:
        if (fm_actions_job_info (m->act, a->job_id, &info, NULL) == 0) {
            mark_signaled (m, a->job_id, info.restarts, now);
        }
        fm_actions_job_info_clear (&info);
        rc = fm_actions_signal_job (m->act, a->job_id, a->signal, true, &err);
        break;
    case FM_ACT_REQUEUE:
        rc = fm_actions_requeue (m->act, a->job_id, &err);
        break;
    }
    if (rc < 0) {
        int e = errno;
        snprintf (rec.result, sizeof (rec.result), "error: %.56s", err.text);
        fm_warn ("policy: %s %s%s%" PRId64 " failed: %s (%s)",
                 rec.kind,
                 a->node,
                 rec.job_id ? " job " : "",
                 rec.job_id,
                 err.text,
                 e == EAGAIN ? "retried next window" : "not retried");
        /* Transient failures are decided again next window; the backend reads
         * before it writes, so a call that did reach Slurm is not repeated.
         */
        if (e == EAGAIN) {
            fm_policy_action_failed (m->pol, a);
        }
    } else {
        snprintf (rec.result,
                  sizeof (rec.result),
                  "%s",
                  rc == FM_ACTIONS_ALREADY   ? "already"
                  : rc == FM_ACTIONS_FOREIGN ? "foreign"
                                             : "done");
        fm_notice ("policy: %s %s job %" PRId64 ": %s (%s)",
                   rec.kind,
                   a->node,
                   rec.job_id,
                   a->reason,
                   rec.result);
        if (a->kind == FM_ACT_SET_WEIGHT) {
            const fm_node_info_t *ni = slurm_find (m, a->node);
            if (ni && a->weight > ni->weight) {
                strv_add (&m->weighted, &m->nweighted, &m->weighted_cap, a->node);
            } else {
                strv_del (m->weighted, &m->nweighted, a->node);
            }
        }
    }
    record (m, &rec);
}

/* Protected jobs that report, with where Slurm runs them now. */
typedef struct {
    fm_policy_job_t *v;
    fm_hostlist_t **hl;
    const char ***names;
    size_t n;
    size_t waiting; /* jobs we moved that wait to start again */
} jobs_in_t;

static void jobs_in_free (jobs_in_t *ji)
{
    for (size_t i = 0; i < ji->n; i++) {
        fm_hostlist_destroy (ji->hl[i]);
        free (ji->names[i]);
    }
    free (ji->v);
    free (ji->hl);
    free (ji->names);
    *ji = (jobs_in_t){0};
}

static int jobs_collect (fm_monitor_t *m, int64_t now, jobs_in_t *ji)
{
    int64_t *ids = NULL, *sig_ns = NULL;
    bool *sig = NULL;
    int *base = NULL;
    size_t n = 0;

    pthread_mutex_lock (&m->lock);
    for (size_t i = 0; i < m->njobs; i++) {
        mjob_t *j = &m->jobs[i];
        if (j->mode < 0) {
            fm_job_t sj;
            fm_error_t err;
            j->mode = fm_store_job_get (m->store, j->job_id, &sj, &err) == 0
                          ? (int)sj.mode
                          : FM_JOB_OBSERVE;
        }
    }
    /* forget jobs silent for an hour */
    size_t keep = 0;
    for (size_t i = 0; i < m->njobs; i++) {
        if (now - m->jobs[i].last_ns > 3600LL * FM_NSEC_PER_SEC) {
            strv_free (m->jobs[i].nodes, m->jobs[i].nnodes);
            continue;
        }
        m->jobs[keep++] = m->jobs[i];
    }
    m->njobs = keep;
    if (m->njobs
        && (!(ids = calloc (m->njobs, sizeof (*ids)))
            || !(sig = calloc (m->njobs, sizeof (*sig)))
            || !(sig_ns = calloc (m->njobs, sizeof (*sig_ns)))
            || !(base = calloc (m->njobs, sizeof (*base))))) {
        pthread_mutex_unlock (&m->lock);
        free (ids);
        free (sig);
        free (sig_ns);
        free (base);
        return -1;
    }
    for (size_t i = 0; i < m->njobs; i++) {
        if (m->jobs[i].mode == FM_JOB_PROTECT) {
            ids[n] = m->jobs[i].job_id;
            sig[n] = m->jobs[i].signaled;
            sig_ns[n] = m->jobs[i].signaled_ns;
            base[n++] = m->jobs[i].restarts_at_signal;
        }
    }
    pthread_mutex_unlock (&m->lock);

    *ji = (jobs_in_t){0};
    if (n && m->act
        && (!(ji->v = calloc (n, sizeof (*ji->v)))
            || !(ji->hl = calloc (n, sizeof (*ji->hl)))
            || !(ji->names = calloc (n, sizeof (*ji->names))))) {
        jobs_in_free (ji);
        n = 0;
    }
    for (size_t i = 0; m->act && i < n; i++) {
        fm_job_info_t info = {0};
        fm_error_t err;
        if (fm_actions_job_info (m->act, ids[i], &info, &err) < 0) {
            fm_actions_job_info_clear (&info);
            continue;
        }
        fm_hostlist_t *hl = info.nodes && *info.nodes
                                ? fm_hostlist_expand (info.nodes, 65536, &err)
                                : NULL;
        size_t nn = fm_hostlist_count (hl);
        const char **names = nn ? calloc (nn, sizeof (*names)) : NULL;
        for (size_t k = 0; names && k < nn; k++) {
            names[k] = fm_hostlist_nth (hl, k);
        }
        ji->hl[ji->n] = hl;
        ji->names[ji->n] = names;
        ji->v[ji->n++] = (fm_policy_job_t){
            .job_id = ids[i],
            .nodes = names,
            .nnodes = names ? nn : 0,
            .protect = true,
            .requeued =
                sig[i] && (info.state == FM_JOB_PENDING || info.restarts > base[i]),
        };
        if (sig[i] && info.state == FM_JOB_PENDING
            && now - sig_ns[i] < VALIDATE_YIELD_NS) {
            ji->waiting++;
        }
        fm_actions_job_info_clear (&info);
    }
    free (ids);
    free (sig);
    free (sig_ns);
    free (base);
    return 0;
}

static const char *kind_name (fm_elem_kind_t k)
{
    switch (k) {
    case FM_ELEM_NODE:
        return "node";
    case FM_ELEM_UPLINK:
        return "uplink";
    case FM_ELEM_LEAF:
    case FM_ELEM_SPINE:
        break;
    }
    return "switch";
}

static bool is_manual (const char *reason)
{
    return reason
           && strncmp (
                  reason, FM_MONITOR_MANUAL_PREFIX, strlen (FM_MONITOR_MANUAL_PREFIX))
                  == 0;
}

static json_t *state_build (fm_monitor_t *m, int64_t now, const fm_policy_params_t *pp)
{
    json_t *o, *el = json_array (), *al = json_array (), *dr = json_array ();
    size_t ne = m->score ? fm_score_nelems (m->score) : 0;
    size_t ours = 0;
    char name[128], *text = malloc (8192);

    for (size_t i = 0; text && i < ne; i++) {
        const fm_elem_status_t *e = fm_score_elem (m->score, i);
        fm_score_elem_name (m->topo, e->kind, e->id, name, sizeof (name));
        json_t *x = json_pack ("{s:s,s:s,s:s,s:s,s:s,s:f,s:I,s:I}",
                               "name",
                               name,
                               "kind",
                               kind_name (e->kind),
                               "state",
                               fm_score_state_name (e->state),
                               "class",
                               fm_localize_class_name (e->cls),
                               "side",
                               fm_localize_side_name (e->side),
                               "score",
                               e->score,
                               "since_ns",
                               (json_int_t)e->since_ns,
                               "witnesses",
                               (json_int_t)e->witnesses);
        if (x) {
            fm_score_evidence (m->topo, e, text, 8192);
            json_object_set_new (x, "evidence", json_string (text));
            fm_score_explain (m->topo, e, text, 8192);
            json_object_set_new (x, "explain", json_string (text));
        }
        json_array_append_new (el, x);
    }
    free (text);
    for (size_t i = 0; i < m->nalarms; i++) {
        const alarm_rec_t *r =
            &m->alarms[(m->alarm_next + ALARMS_KEPT - 1 - i) % ALARMS_KEPT];
        json_array_append_new (al,
                               json_pack ("{s:s,s:s,s:I}",
                                          "element",
                                          r->a.element,
                                          "text",
                                          r->a.text,
                                          "at_ns",
                                          (json_int_t)r->at_ns));
    }
    for (size_t i = 0; i < m->nslurm; i++) {
        const fm_node_info_t *ni = &m->slurm[i];
        if (fm_policy_reason_ours (ni->reason)
            && (ni->state & (FM_NODE_DRAIN | FM_NODE_DOWN | FM_NODE_FAIL))) {
            ours += !is_manual (ni->reason);
            json_array_append_new (dr,
                                   json_pack ("{s:s,s:s,s:b}",
                                              "node",
                                              ni->name,
                                              "reason",
                                              ni->reason,
                                              "manual",
                                              is_manual (ni->reason)));
        }
    }
    size_t total = m->topo ? fm_topo_nnodes (m->topo) : 0;
    size_t limit = (size_t)(pp->max_drain_fraction * (double)total);
    o = json_pack ("{s:I,s:I,s:I,s:b,s:s,s:s,s:I,s:I,s:o,s:o,s:o,"
                   "s:{s:b,s:b,s:i,s:f,s:i,s:I,s:s,s:I,s:i,s:i},"
                   "s:{s:I,s:I,s:I}}",
                   "window_ns",
                   (json_int_t)m->conf.window_ns,
                   "windows",
                   (json_int_t)m->windows,
                   "last_end_ns",
                   (json_int_t)m->last_end,
                   "dry_run",
                   pp->dry_run || !m->act,
                   "backend",
                   m->act ? fm_actions_kind (m->act) : "none",
                   "topology",
                   m->topo_text ? "tree" : "flat",
                   "nodes",
                   (json_int_t)total,
                   "dropped",
                   (json_int_t)m->dropped,
                   "elements",
                   el,
                   "alarms",
                   al,
                   "drained",
                   dr,
                   "policy",
                   "auto_resume",
                   pp->auto_resume,
                   "auto_validate",
                   m->conf.auto_validate,
                   "resume_windows",
                   pp->resume_windows,
                   "max_drain_fraction",
                   pp->max_drain_fraction,
                   "max_drains_per_hour",
                   pp->max_drains_per_hour,
                   "degraded_weight_add",
                   (json_int_t)pp->degraded_weight_add,
                   "protect_signal",
                   sigabbrev_np (pp->protect_signal) ? sigabbrev_np (pp->protect_signal)
                                                     : "?",
                   "protect_grace_s",
                   (json_int_t)(pp->protect_grace_ns / FM_NSEC_PER_SEC),
                   "persist_windows",
                   m->conf.score.persist_windows,
                   "recover_windows",
                   m->conf.score.recover_windows,
                   "blast",
                   "drained",
                   (json_int_t)ours,
                   "limit",
                   (json_int_t)(limit < 1 ? 1 : limit),
                   "alarms_active",
                   (json_int_t)alarms_active (m, now));
    return o;
}

static bool node_idle (const fm_node_info_t *ni)
{
    return (ni->state & FM_NODE_IDLE)
           && !(ni->state
                & (FM_NODE_DOWN | FM_NODE_DRAIN | FM_NODE_FAIL | FM_NODE_NO_RESPOND
                   | FM_NODE_RESERVED | FM_NODE_MAINT | FM_NODE_COMPLETING));
}

static bool node_failing (const fm_monitor_t *m, const char *name)
{
    int id = fm_topo_node_find (m->topo, name);
    const fm_elem_status_t *e =
        id >= 0 ? fm_score_find (m->score, FM_ELEM_NODE, id) : NULL;

    return e && e->state != FM_STATE_HEALTHY;
}

static bool backed_off (const fm_monitor_t *m, const char *node, int64_t now)
{
    for (size_t i = 0; i < m->nbackoff; i++) {
        if (strcmp (m->backoff[i].node, node) == 0) {
            return now < m->backoff[i].not_before_ns;
        }
    }
    return false;
}

static void backoff_set (fm_monitor_t *m, const char *node, int64_t until)
{
    size_t i;

    for (i = 0; i < m->nbackoff && strcmp (m->backoff[i].node, node) != 0; i++) {
    }
    if (i == m->nbackoff) {
        if (m->nbackoff < BACKOFF_KEPT) {
            m->nbackoff++;
        } else {
            i = 0; /* the oldest entry matters least */
        }
    }
    snprintf (m->backoff[i].node, sizeof (m->backoff[i].node), "%s", node);
    m->backoff[i].not_before_ns = until;
}

static int command (fm_monitor_t *m, char *const argv[], char **out, fm_error_t *err)
{
    return fm_actions_scontrol_command (&m->cmd_opts, argv, out, err);
}

static void
validate_record (fm_monitor_t *m, int64_t now, const char *result, const char *fmt, ...)
    __attribute__ ((format (printf, 4, 5)));

static void
validate_record (fm_monitor_t *m, int64_t now, const char *result, const char *fmt, ...)
{
    fm_action_rec_t rec = {.at_ns = now};
    va_list ap;

    snprintf (rec.kind, sizeof (rec.kind), "validate");
    snprintf (rec.node, sizeof (rec.node), "%s", m->prob.node);
    snprintf (rec.element, sizeof (rec.element), "node:%s", m->prob.node);
    snprintf (rec.result, sizeof (rec.result), "%s", result);
    va_start (ap, fmt);
    vsnprintf (rec.reason, sizeof (rec.reason), fmt, ap);
    va_end (ap);
    if (m->prob.job_id) {
        snprintf (rec.explain,
                  sizeof (rec.explain),
                  "validation job %" PRId64 " on %s with %s%s%s in reservation %s",
                  m->prob.job_id,
                  m->prob.node,
                  m->prob.peer,
                  m->prob.peer2[0] ? " and " : "",
                  m->prob.peer2,
                  m->prob.resv);
    }
    fm_notice ("validate %s: %s: %s", m->prob.node, result, rec.reason);
    record (m, &rec);
}

/* End a probation: the job and the reservation go; a failed node is drained
 * again with the reason.
 */
static void probation_end (fm_monitor_t *m, const char *drain_reason, int64_t now)
{
    fm_error_t err;
    char id[32], name[128];

    if (m->prob.job_id) {
        snprintf (id, sizeof (id), "%" PRId64, m->prob.job_id);
        char *argv[] = {"scancel", id, NULL};
        if (command (m, argv, NULL, &err) < 0) {
            fm_warn ("validate %s: scancel %s: %s", m->prob.node, id, err.text);
        }
    }
    if (drain_reason) {
        if (fm_actions_drain (m->act, m->prob.node, drain_reason, &err) < 0) {
            fm_warn ("validate %s: cannot drain it again: %s", m->prob.node, err.text);
        }
        backoff_set (m, m->prob.node, now + m->conf.validate_backoff_ns);
    }
    if (m->prob.resv[0]) {
        snprintf (name, sizeof (name), "ReservationName=%s", m->prob.resv);
        char *argv[] = {"scontrol", "delete", name, NULL};
        if (command (m, argv, NULL, &err) < 0) {
            fm_warn ("validate %s: delete reservation %s: %s",
                     m->prob.node,
                     m->prob.resv,
                     err.text);
        }
    }
    m->prob = (probation_t){0};
}

static void probation_start (
    fm_monitor_t *m, const char *node, const char *peer, const char *peer2, int64_t now)
{
    const fm_policy_params_t *pp = &m->conf.policy;
    int64_t w = m->conf.window_ns;
    int64_t run_s =
        ((pp->resume_windows + m->conf.score.persist_windows + 8) * w) / FM_NSEC_PER_SEC
        + 30;
    char nodes[256], resv_arg[160], dur[32], wrap[512], tlimit[32], *out = NULL;
    fm_error_t err;
    struct passwd *pw = getpwuid (geteuid ());
    char users[80];

    m->prob = (probation_t){.active = true};
    snprintf (m->prob.node, sizeof (m->prob.node), "%s", node);
    snprintf (m->prob.peer, sizeof (m->prob.peer), "%s", peer);
    snprintf (m->prob.peer2, sizeof (m->prob.peer2), "%s", peer2 ? peer2 : "");
    snprintf (m->prob.resv, sizeof (m->prob.resv), "fm-validate-%s", node);
    m->prob.started_ns = now;
    snprintf (nodes,
              sizeof (nodes),
              "Nodes=%s,%s%s%s",
              node,
              peer,
              peer2 ? "," : "",
              peer2 ? peer2 : "");
    snprintf (resv_arg, sizeof (resv_arg), "ReservationName=%s", m->prob.resv);
    snprintf (dur, sizeof (dur), "Duration=%lld", (long long)(run_s / 60 + 2));
    snprintf (users, sizeof (users), "Users=%s", pw ? pw->pw_name : "root");
    char *create[] = {"scontrol",
                      "create",
                      "reservation",
                      resv_arg,
                      nodes,
                      "StartTime=now",
                      dur,
                      users,
                      "Flags=MAINT,IGNORE_JOBS",
                      NULL};
    if (command (m, create, NULL, &err) < 0) {
        m->prob.resv[0] = '\0';
        validate_record (m, now, "error", "cannot reserve %s: %s", node, err.text);
        backoff_set (m, node, now + m->conf.validate_backoff_ns);
        m->prob = (probation_t){0};
        return;
    }
    /* judged on what the validation job shows, not on the evidence that
     * drained it (nobody observed the node since)
     */
    fm_score_forget (m->score, FM_ELEM_NODE, fm_topo_node_find (m->topo, node));
    if (fm_actions_resume (m->act, node, &err) < 0) {
        validate_record (m, now, "error", "cannot resume %s: %s", node, err.text);
        backoff_set (m, node, now + m->conf.validate_backoff_ns);
        probation_end (m, NULL, now);
        return;
    }
    snprintf (resv_arg, sizeof (resv_arg), "--reservation=%s", m->prob.resv);
    snprintf (nodes,
              sizeof (nodes),
              "--nodelist=%s,%s%s%s",
              node,
              peer,
              peer2 ? "," : "",
              peer2 ? peer2 : "");
    char nnodes[16];
    snprintf (nnodes, sizeof (nnodes), "--nodes=%d", peer2 ? 3 : 2);
    /* The check's program and fabricd's URL come from the plugin's task
     * environment; the names were checked by shell_safe() in the caller.
     */
    if (m->conf.validate_check) {
        snprintf (wrap,
                  sizeof (wrap),
                  "srun --mpi=pmix --ntasks-per-node=1 --quiet"
                  " \"${FABRIC_MONITOR_CHECK:-fabric-check}\" --full"
                  " --reference %s%s%s --time-limit 30s; exec sleep %lld",
                  peer,
                  peer2 ? "," : "",
                  peer2 ? peer2 : "",
                  (long long)run_s);
    } else {
        snprintf (wrap, sizeof (wrap), "exec sleep %lld", (long long)run_s);
    }
    snprintf (tlimit, sizeof (tlimit), "--time=%lld", (long long)(run_s / 60 + 2));
    char *sbatch[] = {"sbatch",
                      "--parsable",
                      resv_arg,
                      nnodes,
                      nodes,
                      tlimit,
                      "--job-name=fm-validate",
                      "--fabric-monitor=observe,rate=" VALIDATE_RATE,
                      "--output=/dev/null",
                      "--no-requeue",
                      "--wrap",
                      wrap,
                      NULL};
    if (command (m, sbatch, &out, &err) < 0 || !out
        || (m->prob.job_id = strtoll (out, NULL, 10)) <= 0) {
        char reason[256];
        snprintf (reason,
                  sizeof (reason),
                  "fabric: validation: cannot submit the validation job: %.150s",
                  out ? out : err.text);
        validate_record (m, now, "error", "%s", reason + strlen ("fabric: "));
        m->prob.job_id = 0;
        free (out);
        probation_end (m, reason, now);
        return;
    }
    free (out);
    m->prob.deadline_ns = now + (run_s + 60) * FM_NSEC_PER_SEC;
    validate_record (m,
                     now,
                     "started",
                     "unobserved since its drain: validating with %s%s%s before it"
                     " is resumed for good",
                     peer,
                     peer2 ? " and " : "",
                     peer2 ? peer2 : "");
}

/* Wilson score interval of lost/sent at z. */
static void loss_bounds (int64_t lost, int64_t sent, double z, double *lo, double *hi)
{
    double n = (double)sent, p = n > 0 ? (double)lost / n : 0;
    double c = 1 + z * z / n;
    double mid = p + z * z / (2 * n);
    double half = z * sqrt (p * (1 - p) / n + z * z / (4 * n * n));

    *lo = (mid - half) / c;
    *hi = (mid + half) / c;
}

/* Node names go into a shell command line (the validation job's script). */
static bool shell_safe (const char *name)
{
    if (!name[0]) {
        return false;
    }
    for (const char *c = name; *c; c++) {
        if (!(isalnum ((unsigned char)*c) || *c == '-' || *c == '_' || *c == '.')) {
            return false;
        }
    }
    return true;
}

/* The validation job's fabric-check verdict on its node: 1 passed, 0 not,
 * -1 no result yet. Posted by the job's owner, fabricd's own user.
 */
static int check_result (fm_monitor_t *m)
{
    fm_ident_t self = {.uid = geteuid (), .gid = getegid ()};
    json_t *a = fm_checks_json (m->d->checks, m->prob.job_id, &self, true, -1);
    json_t *r, *n;
    size_t i, k;
    int rc = -1;

    json_array_foreach (a, i, r) {
        json_array_foreach (json_object_get (r, "nodes"), k, n) {
            const char *name = json_string_value (json_object_get (n, "name"));
            if (rc < 0 && name && strcmp (name, m->prob.node) == 0) {
                rc = json_is_true (json_object_get (n, "passed"));
            }
        }
    }
    json_decref (a);
    return rc;
}

static void probation_fail (fm_monitor_t *m, int64_t now, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

/* fmt: the reason after "fabric: ", as Slurm shows it and explain records. */
static void probation_fail (fm_monitor_t *m, int64_t now, const char *fmt, ...)
{
    char reason[256];
    va_list ap;
    int n = snprintf (reason, sizeof (reason), "fabric: ");

    va_start (ap, fmt);
    vsnprintf (reason + n, sizeof (reason) - (size_t)n, fmt, ap);
    va_end (ap);
    validate_record (m, now, "failed", "%s", reason + n);
    probation_end (m, reason, now);
}

/* A validation passes when the job shows resume_windows clean windows, loss
 * below fail_loss with confidence and (validate_check) a passing fabric-check;
 * it fails as soon as any of them shows the fault, or at the deadline.
 */
static void probation_judge (fm_monitor_t *m, int64_t now)
{
    const fm_policy_params_t *pp = &m->conf.policy;
    int id = fm_topo_node_find (m->topo, m->prob.node);
    const fm_elem_status_t *e =
        id >= 0 ? fm_score_find (m->score, FM_ELEM_NODE, id) : NULL;
    double thr = m->conf.score.fail_loss, lo = 0, hi = 1;
    int check = m->conf.validate_check ? -1 : 1; /* -1: no result yet */
    int clean = id >= 0 ? fm_score_node_clean (m->score, id) : 0;
    char peers[160];

    snprintf (peers,
              sizeof (peers),
              "%s%s%s",
              m->prob.peer,
              m->prob.peer2[0] ? " and " : "",
              m->prob.peer2);
    if (m->prob.sent >= VALIDATE_PROBES_MIN) {
        loss_bounds (m->prob.lost, m->prob.sent, VALIDATE_Z_FAIL, &lo, &hi);
        if (lo > thr) {
            probation_fail (m,
                            now,
                            "loss: validation failed: loss %.2f%% (%lld/%lld probes)"
                            " on its links with %s",
                            100.0 * (double)m->prob.lost / (double)m->prob.sent,
                            (long long)m->prob.lost,
                            (long long)m->prob.sent,
                            peers);
            return;
        }
        loss_bounds (m->prob.lost, m->prob.sent, VALIDATE_Z_PASS, &lo, &hi);
    }
    if (m->conf.validate_check) {
        check = check_result (m);
    }
    if (check == 0) {
        probation_fail (m,
                        now,
                        "check: validation failed: fabric-check of job %" PRId64
                        " found it slow or failing against %s",
                        m->prob.job_id,
                        peers);
    } else if (e && e->state >= FM_STATE_DEGRADED) {
        char ev[200];
        fm_score_evidence (m->topo, e, ev, sizeof (ev));
        probation_fail (
            m, now, "%s: validation failed: %s", fm_localize_class_name (e->cls), ev);
    } else if (clean >= pp->resume_windows && check == 1 && hi < thr) {
        validate_record (m,
                         now,
                         "passed",
                         "healthy for %d windows with %s, loss %lld/%lld probes%s:"
                         " resumed",
                         clean,
                         peers,
                         (long long)m->prob.lost,
                         (long long)m->prob.sent,
                         m->conf.validate_check ? ", fabric-check passed" : "");
        probation_end (m, NULL, now);
    } else if (now >= m->prob.deadline_ns) {
        probation_fail (m,
                        now,
                        "validation: not shown healthy before the deadline: %d/%d clean"
                        " windows, %lld/%lld probes lost%s",
                        clean,
                        pp->resume_windows,
                        (long long)m->prob.lost,
                        (long long)m->prob.sent,
                        check < 0 ? ", no fabric-check result" : "");
    }
}

static void probation_step (fm_monitor_t *m, int64_t now, size_t waiting)
{
    const fm_policy_params_t *pp = &m->conf.policy;
    int64_t w = m->conf.window_ns;

    if (!m->act || pp->dry_run || !pp->auto_resume || !m->conf.auto_validate
        || !m->slurm_ok) {
        return;
    }
    if (m->prob.active) {
        probation_judge (m, now);
        return;
    }
    if (waiting) {
        return;
    }
    for (size_t i = 0; i < m->nslurm; i++) {
        const fm_node_info_t *ni = &m->slurm[i];
        int id = fm_topo_node_find (m->topo, ni->name);
        if (!(ni->state & FM_NODE_DRAIN)
            || (ni->state & (FM_NODE_ALLOC | FM_NODE_MIXED))
            || !fm_policy_reason_ours (ni->reason) || is_manual (ni->reason) || id < 0
            || now - m->seen_ns[id] < 3 * w || backed_off (m, ni->name, now)
            || !shell_safe (ni->name)) {
            continue;
        }
        /* up to two healthy idle peers, on the same leaf when there are */
        const char *peer = NULL, *peer2 = NULL;
        int leaf = fm_topo_node_leaf (m->topo, id);
        for (int pass = 0; pass < 2; pass++) {
            for (size_t k = 0; k < m->nslurm; k++) {
                const fm_node_info_t *p = &m->slurm[k];
                int pid = fm_topo_node_find (m->topo, p->name);
                bool same = pid >= 0 && fm_topo_node_leaf (m->topo, pid) == leaf;
                if (k == i || !node_idle (p) || node_failing (m, p->name)
                    || !shell_safe (p->name) || (pass == 0 && !same) || p->name == peer
                    || p->name == peer2) {
                    continue;
                }
                if (!peer) {
                    peer = p->name;
                } else if (!peer2) {
                    peer2 = p->name;
                }
            }
        }
        if (peer) {
            probation_start (m, ni->name, peer, peer2, now);
            return;
        }
    }
}

/* The spine a cross-leaf flow must cross when its two leaves share exactly
 * one (else -1: ECMP hides which); agents do not trace their paths.
 */
static int only_spine (const fm_topo_t *t, int src, int dst)
{
    int ls = src >= 0 ? fm_topo_node_leaf (t, src) : -1;
    int ld = dst >= 0 ? fm_topo_node_leaf (t, dst) : -1;
    int found = -1;

    if (ls < 0 || ld < 0 || ls == ld) {
        return -1;
    }
    for (size_t sp = 0; sp < fm_topo_nspines (t); sp++) {
        if (fm_topo_uplink_find (t, ls, (int)sp) >= 0
            && fm_topo_uplink_find (t, ld, (int)sp) >= 0) {
            if (found >= 0) {
                return -1;
            }
            found = (int)sp;
        }
    }
    return found;
}

static void state_publish (fm_monitor_t *m, int64_t now, const fm_policy_params_t *pp)
{
    json_t *st = state_build (m, now, pp);

    if (st) {
        pthread_mutex_lock (&m->lock);
        json_decref (m->state);
        m->state = st;
        pthread_mutex_unlock (&m->lock);
    }
}

static void window_close (fm_monitor_t *m, int64_t end_ns)
{
    qlink_t *q;
    qhealth_t *hq;
    size_t nq, nhq;
    char **unknown = NULL;
    size_t nunknown = 0, ucap = 0;
    fm_policy_output_t out = {0};
    fm_policy_node_t *pin = NULL;
    fm_policy_elem_t *pel = NULL;
    char (*evid)[512] = NULL, (*expl)[1024] = NULL, (*elname)[96] = NULL;
    jobs_in_t ji = {0};
    size_t np = 0, nel = 0;
    fm_policy_params_t pp = m->conf.policy;

    pthread_mutex_lock (&m->lock);
    q = m->q;
    nq = m->nq;
    hq = m->hq;
    nhq = m->nhq;
    m->q = NULL;
    m->nq = m->qcap = 0;
    m->hq = NULL;
    m->nhq = m->hqcap = 0;
    pthread_mutex_unlock (&m->lock);

    slurm_refresh (m);
    for (size_t i = 0; i < nq; i++) {
        const char *nm[2] = {q[i].src, q[i].dst};
        for (int k = 0; k < 2; k++) {
            if (fm_topo_node_find (m->topo, nm[k]) < 0
                && strv_add (&unknown, &nunknown, &ucap, nm[k]) < 0) {
                break;
            }
        }
    }
    if (nunknown) {
        fm_error_t err;
        if (engine_build (m, (const char *const *)unknown, nunknown, &err) < 0) {
            fm_warn ("%s", err.text);
        }
    }
    for (size_t i = 0; i < nq; i++) {
        fm_link_window_t r = q[i].r;
        r.src = fm_topo_node_find (m->topo, q[i].src);
        r.dst = fm_topo_node_find (m->topo, q[i].dst);
        r.via = only_spine (m->topo, r.src, r.dst);
        if (r.src >= 0 && r.dst >= 0 && (size_t)r.src < m->nseen
            && (size_t)r.dst < m->nseen && r.sent > 0) {
            m->seen_ns[r.src] = m->seen_ns[r.dst] = end_ns;
        }
        if (m->prob.active && r.end_ns > m->prob.started_ns
            && (strcmp (q[i].src, m->prob.node) == 0
                || strcmp (q[i].dst, m->prob.node) == 0)) {
            m->prob.sent += r.sent;
            m->prob.lost += r.sent - r.received;
        }
        if (r.src < 0 || r.dst < 0 || fm_score_add_link (m->score, &r) < 0) {
            fm_log_ratelimited (&m->rl_link,
                                LOG_DEBUG,
                                "score: link %s->%s of job %" PRId64 " left out",
                                q[i].src,
                                q[i].dst,
                                r.job_id);
        }
    }
    for (size_t i = 0; i < nhq; i++) {
        fm_health_event_t ev[HEALTH_EVENTS_MAX];
        size_t nev = 0;
        int id = fm_topo_node_find (m->topo, hq[i].node);
        if (id >= 0
            && fm_health_map (hq[i].json, id, hq[i].at_ns, ev, HEALTH_EVENTS_MAX, &nev)
                   == 0) {
            for (size_t k = 0; k < nev; k++) {
                fm_score_add_health (m->score, &ev[k]);
            }
        }
        free (hq[i].json);
    }
    free (q);
    free (hq);
    strv_free (unknown, nunknown);

    if (end_ns <= m->last_end) {
        end_ns = m->last_end + 1;
    }
    if (fm_score_close_window (m->score, end_ns) < 0) {
        fm_warn ("score: cannot close the window: %s", strerror (errno));
        return;
    }
    m->last_end = end_ns;
    m->windows++;

    /* The policy's input: what the score tracks, what Slurm shows drained by
     * us, and the nodes whose weight we raised.
     */
    size_t ne = fm_score_nelems (m->score);
    size_t cap = ne + m->nslurm + m->nweighted + 1;
    if (!(pin = calloc (cap, sizeof (*pin))) || !(pel = calloc (ne + 1, sizeof (*pel)))
        || !(evid = calloc (cap, sizeof (*evid)))
        || !(expl = calloc (cap, sizeof (*expl)))
        || !(elname = calloc (ne + 1, sizeof (*elname)))) {
        fm_warn ("policy: out of memory");
        goto done;
    }

    for (size_t i = 0; i < ne; i++) {
        const fm_elem_status_t *e = fm_score_elem (m->score, i);
        if (e->kind != FM_ELEM_NODE) {
            fm_score_elem_name (
                m->topo, e->kind, e->id, elname[nel], sizeof (elname[0]));
            fm_score_evidence (m->topo, e, evid[np], sizeof (evid[0]));
            pel[nel] = (fm_policy_elem_t){elname[nel], e->state, strdup (evid[np])};
            nel++;
            continue;
        }
        const char *name = fm_topo_node_name (m->topo, e->id);
        const fm_node_info_t *ni = slurm_find (m, name);
        if (ni && is_manual (ni->reason)) {
            continue; /* an administrator's drain: theirs to resume */
        }
        fm_score_evidence (m->topo, e, evid[np], sizeof (evid[0]));
        fm_score_explain (m->topo, e, expl[np], sizeof (expl[0]));
        pin[np] = (fm_policy_node_t){
            .name = name,
            .leaf = fm_topo_leaf_name (m->topo, fm_topo_node_leaf (m->topo, e->id)),
            .state = e->state,
            .cls = fm_localize_class_name (e->cls),
            .evidence = evid[np],
            .explain = expl[np],
            .healthy_windows = fm_score_node_clean (m->score, e->id),
            .drained =
                ni && (ni->state & (FM_NODE_DRAIN | FM_NODE_DOWN | FM_NODE_FAIL)),
            .reason = ni ? ni->reason : NULL,
            .weight = ni ? ni->weight : 1,
        };
        if (!ni && m->act) {
            /* Slurm does not know it (or did not answer): act on nothing. */
            pin[np].state = FM_STATE_HEALTHY;
            pin[np].healthy_windows = 0;
        }
        np++;
    }
    for (size_t i = 0; i < m->nslurm + m->nweighted; i++) {
        const fm_node_info_t *ni =
            i < m->nslurm ? &m->slurm[i] : slurm_find (m, m->weighted[i - m->nslurm]);
        if (!ni || (i < m->nslurm && !fm_policy_reason_ours (ni->reason))
            || is_manual (ni->reason)) {
            continue;
        }
        bool listed = false;
        for (size_t k = 0; k < np && !listed; k++) {
            listed = strcmp (pin[k].name, ni->name) == 0;
        }
        if (listed) {
            continue;
        }
        int id = fm_topo_node_find (m->topo, ni->name);
        pin[np++] = (fm_policy_node_t){
            .name = ni->name,
            .leaf = id >= 0
                        ? fm_topo_leaf_name (m->topo, fm_topo_node_leaf (m->topo, id))
                        : NULL,
            .state = FM_STATE_HEALTHY,
            .healthy_windows = id >= 0 ? fm_score_node_clean (m->score, id) : 0,
            .drained = (ni->state & (FM_NODE_DRAIN | FM_NODE_DOWN | FM_NODE_FAIL)) != 0,
            .reason = ni->reason,
            .weight = ni->weight,
        };
    }
    if (jobs_collect (m, end_ns, &ji) < 0) {
        fm_warn ("policy: out of memory");
    }
    if (!m->act) {
        pp.dry_run = true;
    }
    fm_policy_input_t in = {
        .nodes = pin,
        .nnodes = np,
        .total_nodes =
            m->nslurm > fm_topo_nnodes (m->topo) ? m->nslurm : fm_topo_nnodes (m->topo),
        .jobs = ji.v,
        .njobs = ji.n,
        .elems = pel,
        .nelems = nel,
        .now_ns = end_ns,
        /* A node we drained goes back through its validation alone: healthy
         * windows from the validation job's first seconds, or from the job
         * that saw it fail (a low loss shows no loss in some windows), are
         * not proof that the fault is gone.
         */
        .resume_by_validation = m->conf.auto_validate && !pp.dry_run,
    };
    if (fm_policy_decide (m->pol, &in, &out) < 0) {
        fm_warn ("policy: %s", strerror (errno));
        goto done;
    }
    for (size_t i = 0; i < out.nalarms; i++) {
        fm_action_rec_t rec = {.at_ns = end_ns, .dry_run = pp.dry_run};
        fm_warn ("alarm: %s: %s", out.alarms[i].element, out.alarms[i].text);
        alarm_keep (m, &out.alarms[i], end_ns);
        snprintf (rec.kind, sizeof (rec.kind), "alarm");
        snprintf (rec.element, sizeof (rec.element), "%.95s", out.alarms[i].element);
        snprintf (rec.reason, sizeof (rec.reason), "%.255s", out.alarms[i].text);
        snprintf (rec.result, sizeof (rec.result), "raised");
        if (strncmp (rec.element, "node:", 5) == 0) {
            snprintf (rec.node, sizeof (rec.node), "%.63s", rec.element + 5);
            rec.job_id = job_of_node (m, rec.node);
        }
        record (m, &rec);
    }
    for (size_t i = 0; i < out.nactions; i++) {
        execute (m, &out.actions[i], end_ns);
    }
    probation_step (m, end_ns, ji.waiting);
done:
    fm_metrics_alarms (m->d->metrics, alarms_active (m, end_ns));
    state_publish (m, end_ns, &pp);
    for (size_t i = 0; pel && i < nel; i++) {
        free ((char *)pel[i].evidence);
    }
    jobs_in_free (&ji);
    fm_policy_output_free (&out);
    free (pin);
    free (pel);
    free (evid);
    free (expl);
    free (elname);
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
        snprintf (c->result,
                  sizeof (c->result),
                  "%s",
                  rc == FM_ACTIONS_ALREADY   ? "already"
                  : rc == FM_ACTIONS_FOREIGN ? "foreign"
                                             : "done");
        snprintf (rec.result, sizeof (rec.result), "%s", c->result);
    }
    fm_notice ("admin (uid %u): %s %s: %s", c->uid, rec.kind, c->node, rec.result);
    record (m, &rec);
    if (rc >= 0) {
        slurm_refresh (m); /* drains and fabricctl show it at once */
        state_publish (m, rec.at_ns, &m->conf.policy);
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
            window_close (m, (tick / w) * w);
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
    slurm_refresh (m);
    if (engine_build (m, NULL, 0, err) < 0) {
        goto fail;
    }
    m->state = state_build (m, fm_time_real_ns (), &m->conf.policy);
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
        strv_free (m->jobs[i].nodes, m->jobs[i].nnodes);
    }
    free (m->jobs);
    strv_free (m->weighted, m->nweighted);
    if (m->prob.active) {
        probation_end (
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

    if (!m || !name_fits (node) || !*node
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
