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

json_t *
fm_monitor_window_state (fm_monitor_t *m, int64_t now, const fm_policy_params_t *pp)
{
    json_t *o, *el = json_array (), *al = json_array (), *dr = json_array ();
    size_t ne = m->score ? fm_score_nelems (m->score) : 0;
    size_t ours = 0;
    char name[128], *text = malloc (8192);

    for (size_t i = 0; text && i < ne; i++) {
        const fm_elem_status_t *e = fm_score_elem (m->score, i);
        fm_score_text_elem_name (m->topo, e->kind, e->id, name, sizeof (name));
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
            fm_score_text_evidence (m->topo, e, text, 8192);
            json_object_set_new (x, "evidence", json_string (text));
            fm_score_text_explain (m->topo, e, text, 8192);
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
            ours += !fm_monitor_is_manual (ni->reason);
            json_array_append_new (dr,
                                   json_pack ("{s:s,s:s,s:b}",
                                              "node",
                                              ni->name,
                                              "reason",
                                              ni->reason,
                                              "manual",
                                              fm_monitor_is_manual (ni->reason)));
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
                   (json_int_t)fm_monitor_actions_alarms_active (m, now));
    return o;
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

void fm_monitor_window_publish (fm_monitor_t *m,
                                int64_t now,
                                const fm_policy_params_t *pp)
{
    json_t *st = fm_monitor_window_state (m, now, pp);

    if (st) {
        pthread_mutex_lock (&m->lock);
        json_decref (m->state);
        m->state = st;
        pthread_mutex_unlock (&m->lock);
    }
}

/* What the HTTP thread queued during the window, taken whole under the lock. */
typedef struct {
    qlink_t *q;
    size_t nq;
    qhealth_t *hq;
    size_t nhq;
} queued_t;

static void queue_take (fm_monitor_t *m, queued_t *qd)
{
    pthread_mutex_lock (&m->lock);
    qd->q = m->q;
    qd->nq = m->nq;
    qd->hq = m->hq;
    qd->nhq = m->nhq;
    m->q = NULL;
    m->nq = m->qcap = 0;
    m->hq = NULL;
    m->nhq = m->hqcap = 0;
    pthread_mutex_unlock (&m->lock);
}

static void queue_free (queued_t *qd)
{
    for (size_t i = 0; i < qd->nhq; i++) {
        free (qd->hq[i].json);
    }
    free (qd->q);
    free (qd->hq);
}

/* Nodes that reports name and the topology does not: a new engine with them. */
static void topology_extend (fm_monitor_t *m, const queued_t *qd)
{
    char **unknown = NULL;
    size_t nunknown = 0, ucap = 0;

    for (size_t i = 0; i < qd->nq; i++) {
        const char *nm[2] = {qd->q[i].src, qd->q[i].dst};
        for (int k = 0; k < 2; k++) {
            if (fm_topo_node_find (m->topo, nm[k]) < 0
                && fm_strlist_add (&unknown, &nunknown, &ucap, nm[k]) < 0) {
                break;
            }
        }
    }
    if (nunknown) {
        fm_error_t err;
        if (fm_monitor_engine_build (m, (const char *const *)unknown, nunknown, &err)
            < 0) {
            fm_warn ("%s", err.text);
        }
    }
    fm_strlist_free (unknown, nunknown);
}

/* The window's links into the score, and into the probation's probe count. */
static void score_links (fm_monitor_t *m, const queued_t *qd, int64_t end_ns)
{
    for (size_t i = 0; i < qd->nq; i++) {
        const qlink_t *ql = &qd->q[i];
        fm_link_window_t r = ql->r;
        r.src = fm_topo_node_find (m->topo, ql->src);
        r.dst = fm_topo_node_find (m->topo, ql->dst);
        r.via = only_spine (m->topo, r.src, r.dst);
        if (r.src >= 0 && r.dst >= 0 && (size_t)r.src < m->nseen
            && (size_t)r.dst < m->nseen && r.sent > 0) {
            m->seen_ns[r.src] = m->seen_ns[r.dst] = end_ns;
        }
        if (m->prob.active && r.end_ns > m->prob.started_ns
            && (strcmp (ql->src, m->prob.node) == 0
                || strcmp (ql->dst, m->prob.node) == 0)) {
            m->prob.sent += r.sent;
            m->prob.lost += r.sent - r.received;
        }
        if (r.src < 0 || r.dst < 0 || fm_score_add_link (m->score, &r) < 0) {
            fm_log_ratelimited (&m->rl_link,
                                LOG_DEBUG,
                                "score: link %s->%s of job %" PRId64 " left out",
                                ql->src,
                                ql->dst,
                                r.job_id);
        }
    }
}

static void score_health (fm_monitor_t *m, const queued_t *qd)
{
    for (size_t i = 0; i < qd->nhq; i++) {
        fm_health_event_t ev[HEALTH_EVENTS_MAX];
        size_t nev = 0;
        int id = fm_topo_node_find (m->topo, qd->hq[i].node);
        if (id >= 0
            && fm_health_map (
                   qd->hq[i].json, id, qd->hq[i].at_ns, ev, HEALTH_EVENTS_MAX, &nev)
                   == 0) {
            for (size_t k = 0; k < nev; k++) {
                fm_score_add_health (m->score, &ev[k]);
            }
        }
    }
}

/* The policy's input: what the score tracks, what Slurm shows drained by us,
 * and the nodes whose weight we raised. The arrays own the texts.
 */
typedef struct {
    fm_policy_node_t *nodes;
    size_t nnodes;
    fm_policy_elem_t *elems;
    size_t nelems;
    char (*evid)[512], (*expl)[1024], (*elname)[96];
    jobs_in_t jobs;
} pinput_t;

static void pinput_free (pinput_t *pi)
{
    for (size_t i = 0; pi->elems && i < pi->nelems; i++) {
        free ((char *)pi->elems[i].evidence);
    }
    fm_monitor_actions_jobs_free (&pi->jobs);
    free (pi->nodes);
    free (pi->elems);
    free (pi->evid);
    free (pi->expl);
    free (pi->elname);
}

/* The score's elements: switches and links as elements, nodes as nodes (but
 * an administrator's drain, which is theirs to resume).
 */
static void pinput_scored (fm_monitor_t *m, pinput_t *pi)
{
    size_t ne = fm_score_nelems (m->score);
    size_t np = 0, nel = 0;

    for (size_t i = 0; i < ne; i++) {
        const fm_elem_status_t *e = fm_score_elem (m->score, i);
        if (e->kind != FM_ELEM_NODE) {
            fm_score_text_elem_name (
                m->topo, e->kind, e->id, pi->elname[nel], sizeof (pi->elname[0]));
            fm_score_text_evidence (m->topo, e, pi->evid[np], sizeof (pi->evid[0]));
            pi->elems[nel] =
                (fm_policy_elem_t){pi->elname[nel], e->state, strdup (pi->evid[np])};
            nel++;
            continue;
        }
        const char *name = fm_topo_node_name (m->topo, e->id);
        const fm_node_info_t *ni = fm_monitor_slurm_find (m, name);
        if (ni && fm_monitor_is_manual (ni->reason)) {
            continue;
        }
        fm_score_text_evidence (m->topo, e, pi->evid[np], sizeof (pi->evid[0]));
        fm_score_text_explain (m->topo, e, pi->expl[np], sizeof (pi->expl[0]));
        pi->nodes[np] = (fm_policy_node_t){
            .name = name,
            .leaf = fm_topo_leaf_name (m->topo, fm_topo_node_leaf (m->topo, e->id)),
            .state = e->state,
            .cls = fm_localize_class_name (e->cls),
            .evidence = pi->evid[np],
            .explain = pi->expl[np],
            .healthy_windows = fm_score_node_clean (m->score, e->id),
            .drained =
                ni && (ni->state & (FM_NODE_DRAIN | FM_NODE_DOWN | FM_NODE_FAIL)),
            .reason = ni ? ni->reason : NULL,
            .weight = ni ? ni->weight : 1,
        };
        if (!ni && m->act) {
            /* Slurm does not know it (or did not answer): act on nothing. */
            pi->nodes[np].state = FM_STATE_HEALTHY;
            pi->nodes[np].healthy_windows = 0;
        }
        np++;
    }
    pi->nnodes = np;
    pi->nelems = nel;
}

/* Nodes Slurm shows drained by us, or whose weight we raised, that the score
 * does not list: healthy to the policy, so that it can undo what we did.
 */
static void pinput_ours (fm_monitor_t *m, pinput_t *pi)
{
    for (size_t i = 0; i < m->nslurm + m->nweighted; i++) {
        const fm_node_info_t *ni =
            i < m->nslurm ? &m->slurm[i]
                          : fm_monitor_slurm_find (m, m->weighted[i - m->nslurm]);
        if (!ni || (i < m->nslurm && !fm_policy_reason_ours (ni->reason))
            || fm_monitor_is_manual (ni->reason)) {
            continue;
        }
        bool listed = false;
        for (size_t k = 0; k < pi->nnodes && !listed; k++) {
            listed = strcmp (pi->nodes[k].name, ni->name) == 0;
        }
        if (listed) {
            continue;
        }
        int id = fm_topo_node_find (m->topo, ni->name);
        pi->nodes[pi->nnodes++] = (fm_policy_node_t){
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
}

static int pinput_build (fm_monitor_t *m, int64_t end_ns, pinput_t *pi)
{
    size_t ne = fm_score_nelems (m->score);
    size_t cap = ne + m->nslurm + m->nweighted + 1;

    if (!(pi->nodes = calloc (cap, sizeof (*pi->nodes)))
        || !(pi->elems = calloc (ne + 1, sizeof (*pi->elems)))
        || !(pi->evid = calloc (cap, sizeof (*pi->evid)))
        || !(pi->expl = calloc (cap, sizeof (*pi->expl)))
        || !(pi->elname = calloc (ne + 1, sizeof (*pi->elname)))) {
        fm_warn ("policy: out of memory");
        return -1;
    }
    pinput_scored (m, pi);
    pinput_ours (m, pi);
    if (fm_monitor_actions_jobs_collect (m, end_ns, &pi->jobs) < 0) {
        fm_warn ("policy: out of memory");
    }
    return 0;
}

static int policy_run (fm_monitor_t *m,
                       const fm_policy_params_t *pp,
                       const pinput_t *pi,
                       int64_t end_ns,
                       fm_policy_output_t *out)
{
    fm_policy_input_t in = {
        .nodes = pi->nodes,
        .nnodes = pi->nnodes,
        .total_nodes =
            m->nslurm > fm_topo_nnodes (m->topo) ? m->nslurm : fm_topo_nnodes (m->topo),
        .jobs = pi->jobs.v,
        .njobs = pi->jobs.n,
        .elems = pi->elems,
        .nelems = pi->nelems,
        .now_ns = end_ns,
        /* A node we drained goes back through its validation alone: healthy
         * windows from the validation job's first seconds, or from the job
         * that saw it fail (a low loss shows no loss in some windows), are
         * not proof that the fault is gone.
         */
        .resume_by_validation = m->conf.auto_validate && !pp->dry_run,
    };

    if (fm_policy_decide (m->pol, &in, out) < 0) {
        fm_warn ("policy: %s", strerror (errno));
        return -1;
    }
    return 0;
}

static void alarms_record (fm_monitor_t *m,
                           const fm_policy_output_t *out,
                           const fm_policy_params_t *pp,
                           int64_t end_ns)
{
    for (size_t i = 0; i < out->nalarms; i++) {
        fm_action_rec_t rec = {.at_ns = end_ns, .dry_run = pp->dry_run};
        fm_warn ("alarm: %s: %s", out->alarms[i].element, out->alarms[i].text);
        fm_monitor_actions_alarm_keep (m, &out->alarms[i], end_ns);
        snprintf (rec.kind, sizeof (rec.kind), "alarm");
        snprintf (rec.element, sizeof (rec.element), "%.95s", out->alarms[i].element);
        snprintf (rec.reason, sizeof (rec.reason), "%.255s", out->alarms[i].text);
        snprintf (rec.result, sizeof (rec.result), "raised");
        if (strncmp (rec.element, "node:", 5) == 0) {
            snprintf (rec.node, sizeof (rec.node), "%.63s", rec.element + 5);
            rec.job_id = fm_monitor_actions_job_of_node (m, rec.node);
        }
        fm_monitor_actions_record (m, &rec);
    }
}

void fm_monitor_window_close (fm_monitor_t *m, int64_t end_ns)
{
    fm_policy_params_t pp = m->conf.policy;
    fm_policy_output_t out = {0};
    pinput_t pi = {0};
    queued_t qd;

    queue_take (m, &qd);
    fm_monitor_slurm_refresh (m);
    topology_extend (m, &qd);
    score_links (m, &qd, end_ns);
    score_health (m, &qd);
    queue_free (&qd);

    if (end_ns <= m->last_end) {
        end_ns = m->last_end + 1;
    }
    if (fm_score_close_window (m->score, end_ns) < 0) {
        fm_warn ("score: cannot close the window: %s", strerror (errno));
        return;
    }
    m->last_end = end_ns;
    m->windows++;

    if (pinput_build (m, end_ns, &pi) == 0) {
        if (!m->act) {
            pp.dry_run = true;
        }
        if (policy_run (m, &pp, &pi, end_ns, &out) == 0) {
            alarms_record (m, &out, &pp, end_ns);
            for (size_t i = 0; i < out.nactions; i++) {
                fm_monitor_actions_execute (m, &out.actions[i], end_ns);
            }
            fm_monitor_probation_step (m, end_ns, pi.jobs.waiting);
        }
    }
    fm_metrics_alarms (m->d->metrics, fm_monitor_actions_alarms_active (m, end_ns));
    fm_monitor_window_publish (m, end_ns, &pp);
    pinput_free (&pi);
    fm_policy_output_free (&out);
}
