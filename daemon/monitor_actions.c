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

void fm_monitor_actions_alarm_keep (fm_monitor_t *m, const fm_alarm_t *a, int64_t now)
{
    m->alarms[m->alarm_next] = (alarm_rec_t){.a = *a, .at_ns = now};
    m->alarm_next = (m->alarm_next + 1) % ALARMS_KEPT;
    if (m->nalarms < ALARMS_KEPT) {
        m->nalarms++;
    }
}

int64_t fm_monitor_actions_alarms_active (const fm_monitor_t *m, int64_t now)
{
    int64_t n = 0;

    for (size_t i = 0; i < m->nalarms; i++) {
        n += now - m->alarms[i].at_ns < 3600LL * FM_NSEC_PER_SEC;
    }
    return n;
}

void fm_monitor_actions_record (fm_monitor_t *m, fm_action_rec_t *rec)
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
int64_t fm_monitor_actions_job_of_node (fm_monitor_t *m, const char *node)
{
    int64_t best = 0, best_ns = INT64_MIN;

    pthread_mutex_lock (&m->lock);
    for (size_t i = 0; i < m->njobs; i++) {
        if (m->jobs[i].last_ns > best_ns
            && fm_strlist_has (m->jobs[i].nodes, m->jobs[i].nnodes, node)) {
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

/* Why node validation holds the policy's action a back, or NULL. */
static const char *held_why (const fm_monitor_t *m, const fm_action_t *a, int64_t now)
{
    /* A failed validation drained it again, and the healthy windows behind
     * this resume may be that validation job's own: only the next validation,
     * after the backoff, resumes it.
     */
    if (a->kind == FM_ACT_RESUME && fm_monitor_actions_backed_off (m, a->node, now)) {
        return "its last validation failed";
    }
    /* The windows behind this drain are the validation job's own: the
     * validation judges them, and drains the node with its own reason.
     */
    if (a->kind == FM_ACT_DRAIN && m->prob.active
        && strcmp (a->node, m->prob.node) == 0) {
        return "its validation is running";
    }
    return NULL;
}

void fm_monitor_actions_execute (fm_monitor_t *m, const fm_action_t *a, int64_t now)
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
                     : fm_monitor_actions_job_of_node (m, a->node);
    if (a->dry_run || !m->act) {
        snprintf (rec.result, sizeof (rec.result), "dry_run");
        rec.dry_run = true;
        fm_notice ("policy: dry-run: would %s %s%s%s",
                   rec.kind,
                   a->node[0] ? a->node : "",
                   a->reason[0] ? ": " : "",
                   a->reason);
        fm_monitor_actions_record (m, &rec);
        return;
    }
    if ((why = held_why (m, a, now))) {
        snprintf (rec.result, sizeof (rec.result), "held");
        fm_notice ("policy: %s %s held: %s", rec.kind, a->node, why);
        fm_monitor_actions_record (m, &rec);
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
        snprintf (rec.result, sizeof (rec.result), "%s", fm_actions_result_name (rc));
        fm_notice ("policy: %s %s job %" PRId64 ": %s (%s)",
                   rec.kind,
                   a->node,
                   rec.job_id,
                   a->reason,
                   rec.result);
        if (a->kind == FM_ACT_SET_WEIGHT) {
            const fm_node_info_t *ni = fm_monitor_slurm_find (m, a->node);
            if (ni && a->weight > ni->weight) {
                fm_strlist_add (&m->weighted, &m->nweighted, &m->weighted_cap, a->node);
            } else {
                fm_strlist_del (m->weighted, &m->nweighted, a->node);
            }
        }
    }
    fm_monitor_actions_record (m, &rec);
}

void fm_monitor_actions_jobs_free (jobs_in_t *ji)
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

int fm_monitor_actions_jobs_collect (fm_monitor_t *m, int64_t now, jobs_in_t *ji)
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
            fm_strlist_free (m->jobs[i].nodes, m->jobs[i].nnodes);
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
        fm_monitor_actions_jobs_free (ji);
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

bool fm_monitor_actions_backed_off (const fm_monitor_t *m,
                                    const char *node,
                                    int64_t now)
{
    for (size_t i = 0; i < m->nbackoff; i++) {
        if (strcmp (m->backoff[i].node, node) == 0) {
            return now < m->backoff[i].not_before_ns;
        }
    }
    return false;
}

void fm_monitor_actions_backoff_set (fm_monitor_t *m, const char *node, int64_t until)
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
