/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "grow.h"
#include "strlist.h"

#define HOUR_NS (3600LL * 1000000000LL)

/* What we remember about a node between decisions. */
typedef struct {
    char *name;
    bool drained;   /* drained by us (or, in dry_run, as if) */
    bool confirmed; /* Slurm has shown our drain */
    bool weight_set;
    int64_t orig_weight, set_weight;
    bool alarmed; /* a refused drain was reported */
} nmem_t;

typedef struct {
    int64_t job_id;
    char node[64];
    int64_t signaled_ns;
    bool done;
} protect_t;

struct fm_policy {
    fm_policy_params_t p;
    nmem_t *mem;
    size_t nmem, mem_cap;
    int64_t *drains; /* times of our drains within the last hour */
    size_t ndrains, drains_cap;
    protect_t *prot;
    size_t nprot, prot_cap;
    char **elem_alarmed;
    size_t nelem_alarmed, elem_cap;
    char **leaf_alarmed;
    size_t nleaf_alarmed, leaf_cap;
    int64_t last_now;
};

void fm_policy_params_default (fm_policy_params_t *p)
{
    *p = (fm_policy_params_t){
        .dry_run = false,
        .auto_resume = true,
        .resume_windows = 12,
        .max_drain_fraction = 0.02,
        .max_drains_per_hour = 10,
        .degraded_weight_add = 1000,
        .protect_signal = SIGUSR1,
        .protect_grace_ns = 120LL * 1000000000LL,
    };
}

const char *fm_policy_action_name (fm_action_kind_t k)
{
    switch (k) {
    case FM_ACT_DRAIN:
        return "drain";
    case FM_ACT_RESUME:
        return "resume";
    case FM_ACT_SET_WEIGHT:
        return "set_weight";
    case FM_ACT_SIGNAL:
        return "signal";
    case FM_ACT_REQUEUE:
        break;
    }
    return "requeue";
}

bool fm_policy_reason_ours (const char *reason)
{
    return reason
           && strncmp (
                  reason, FM_POLICY_REASON_PREFIX, strlen (FM_POLICY_REASON_PREFIX))
                  == 0;
}

fm_policy_t *fm_policy_create (const fm_policy_params_t *p)
{
    fm_policy_t *pol;

    if (!p || p->resume_windows < 1 || !(p->max_drain_fraction >= 0)
        || p->max_drain_fraction > 1 || p->max_drains_per_hour < 0
        || p->degraded_weight_add < 0 || p->degraded_weight_add > 1000000000LL
        || p->protect_signal <= 0 || p->protect_signal >= 65
        || p->protect_grace_ns < 0) {
        errno = EINVAL;
        return NULL;
    }
    if (!(pol = calloc (1, sizeof (*pol)))) {
        errno = ENOMEM;
        return NULL;
    }
    pol->p = *p;
    pol->last_now = INT64_MIN;
    return pol;
}

void fm_policy_destroy (fm_policy_t *pol)
{
    if (pol) {
        int saved = errno;
        for (size_t i = 0; i < pol->nmem; i++) {
            free (pol->mem[i].name);
        }
        free (pol->mem);
        free (pol->drains);
        free (pol->prot);
        fm_strlist_free (pol->elem_alarmed, pol->nelem_alarmed);
        fm_strlist_free (pol->leaf_alarmed, pol->nleaf_alarmed);
        free (pol);
        errno = saved;
    }
}

void fm_policy_output_free (fm_policy_output_t *out)
{
    if (out) {
        free (out->actions);
        free (out->alarms);
        *out = (fm_policy_output_t){0};
    }
}

/* Linear: the memory holds only nodes we acted on, a handful. */
static nmem_t *mem_find (fm_policy_t *pol, const char *name)
{
    for (size_t i = 0; i < pol->nmem; i++) {
        if (strcmp (pol->mem[i].name, name) == 0) {
            return &pol->mem[i];
        }
    }
    return NULL;
}

static nmem_t *mem_get (fm_policy_t *pol, const char *name)
{
    nmem_t *m = mem_find (pol, name);

    if (m) {
        return m;
    }
    if (fm_grow (&pol->mem, &pol->mem_cap, pol->nmem + 1, sizeof (*pol->mem), 16) < 0) {
        return NULL;
    }
    char *copy = strdup (name);
    if (!copy) {
        errno = ENOMEM;
        return NULL;
    }
    m = &pol->mem[pol->nmem++];
    *m = (nmem_t){.name = copy};
    return m;
}

static void mem_gc (fm_policy_t *pol)
{
    size_t keep = 0;

    for (size_t i = 0; i < pol->nmem; i++) {
        nmem_t *m = &pol->mem[i];
        if (!m->drained && !m->weight_set && !m->alarmed) {
            free (m->name);
            continue;
        }
        pol->mem[keep++] = *m;
    }
    pol->nmem = keep;
}

static fm_action_t *act_add (fm_policy_t *pol,
                             fm_policy_output_t *out,
                             fm_action_kind_t kind,
                             const char *node)
{
    if (fm_grow (&out->actions,
                 &out->actions_cap,
                 out->nactions + 1,
                 sizeof (*out->actions),
                 16)
        < 0) {
        return NULL;
    }
    fm_action_t *a = &out->actions[out->nactions++];
    *a = (fm_action_t){.kind = kind, .dry_run = pol->p.dry_run};
    snprintf (a->node, sizeof (a->node), "%s", node ? node : "");
    return a;
}

static int
alarm_add (fm_policy_output_t *out, const char *element, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

static int
alarm_add (fm_policy_output_t *out, const char *element, const char *fmt, ...)
{
    va_list ap;

    if (fm_grow (
            &out->alarms, &out->alarms_cap, out->nalarms + 1, sizeof (*out->alarms), 16)
        < 0) {
        return -1;
    }
    fm_alarm_t *al = &out->alarms[out->nalarms++];
    snprintf (al->element, sizeof (al->element), "%s", element);
    va_start (ap, fmt);
    vsnprintf (al->text, sizeof (al->text), fmt, ap);
    va_end (ap);
    return 0;
}

static bool has_reason (const fm_policy_node_t *n)
{
    return n->reason && n->reason[0] != '\0';
}

/* Someone else's node: a reason that is not ours, or drained without one and
 * not by us.
 */
static bool foreign (const fm_policy_node_t *n, const nmem_t *m)
{
    if (has_reason (n)) {
        return !fm_policy_reason_ours (n->reason);
    }
    return n->drained && !(m && m->drained);
}

static bool job_on (const fm_policy_job_t *j, const char *node)
{
    for (size_t i = 0; i < j->nnodes; i++) {
        if (j->nodes[i] && strcmp (j->nodes[i], node) == 0) {
            return true;
        }
    }
    return false;
}

static protect_t *prot_find (fm_policy_t *pol, int64_t job_id)
{
    for (size_t i = 0; i < pol->nprot; i++) {
        if (pol->prot[i].job_id == job_id) {
            return &pol->prot[i];
        }
    }
    return NULL;
}

static void explain_copy (fm_action_t *a, const fm_policy_node_t *n, const char *pre)
{
    snprintf (a->explain,
              sizeof (a->explain),
              "%s%s%s",
              pre,
              n->explain ? "\n" : "",
              n->explain ? n->explain : "");
}

/* Start protect sequences for protected jobs on a node we have drained. */
static int protect_start (fm_policy_t *pol,
                          const fm_policy_input_t *in,
                          const fm_policy_node_t *n,
                          fm_policy_output_t *out)
{
    for (size_t j = 0; j < in->njobs; j++) {
        const fm_policy_job_t *job = &in->jobs[j];
        if (!job->protect || job->requeued || !job_on (job, n->name)
            || prot_find (pol, job->job_id)) {
            continue;
        }
        if (fm_grow (
                &pol->prot, &pol->prot_cap, pol->nprot + 1, sizeof (*pol->prot), 16)
            < 0) {
            return -1;
        }
        fm_action_t *a = act_add (pol, out, FM_ACT_SIGNAL, n->name);
        if (!a) {
            return -1;
        }
        protect_t *pr = &pol->prot[pol->nprot++];
        *pr = (protect_t){.job_id = job->job_id, .signaled_ns = in->now_ns};
        snprintf (pr->node, sizeof (pr->node), "%s", n->name);
        a->job_id = job->job_id;
        a->signal = pol->p.protect_signal;
        snprintf (
            a->reason,
            sizeof (a->reason),
            "checkpoint notice: node %s failing (%s); requeue in %llds unless the "
            "job requeues itself",
            n->name,
            n->cls ? n->cls : "fabric",
            (long long)(pol->p.protect_grace_ns / 1000000000LL));
        explain_copy (a, n, n->evidence ? n->evidence : "");
    }
    return 0;
}

static int
protect_step (fm_policy_t *pol, const fm_policy_input_t *in, fm_policy_output_t *out)
{
    size_t keep = 0;

    for (size_t i = 0; i < pol->nprot; i++) {
        protect_t *pr = &pol->prot[i];
        const fm_policy_job_t *job = NULL;
        for (size_t j = 0; j < in->njobs; j++) {
            if (in->jobs[j].job_id == pr->job_id) {
                job = &in->jobs[j];
            }
        }
        if (!job || job->requeued || !job_on (job, pr->node)) {
            /* ended, requeued itself, or moved: the sequence is over */
            continue;
        }
        if (!pr->done && in->now_ns - pr->signaled_ns >= pol->p.protect_grace_ns) {
            fm_action_t *a = act_add (pol, out, FM_ACT_REQUEUE, pr->node);
            if (!a) {
                return -1;
            }
            a->job_id = pr->job_id;
            snprintf (a->reason,
                      sizeof (a->reason),
                      "grace of %llds after the checkpoint notice expired",
                      (long long)(pol->p.protect_grace_ns / 1000000000LL));
            pr->done = true;
        }
        pol->prot[keep++] = *pr;
    }
    pol->nprot = keep;
    return 0;
}

static int cmp_leaf (const void *a, const void *b)
{
    return strcmp ((*(const fm_policy_node_t *const *)a)->leaf,
                   (*(const fm_policy_node_t *const *)b)->leaf);
}

/* Two or more failing nodes behind one leaf switch: an alarm on the switch
 * (once), and the evidence is the switch's. The failing nodes sorted by leaf
 * make it O(n log n) however many fail.
 */
static int
attribute (fm_policy_t *pol, const fm_policy_input_t *in, fm_policy_output_t *out)
{
    const fm_policy_node_t **failed = NULL;
    size_t nf = 0;
    int rc = 0;

    for (size_t i = 0; i < in->nnodes; i++) {
        if (in->nodes[i].state == FM_STATE_FAILED && in->nodes[i].leaf) {
            nf++;
        }
    }
    if (nf < 2) {
        return 0;
    }
    if (!(failed = malloc (nf * sizeof (*failed)))) {
        errno = ENOMEM;
        return -1;
    }
    nf = 0;
    for (size_t i = 0; i < in->nnodes; i++) {
        if (in->nodes[i].state == FM_STATE_FAILED && in->nodes[i].leaf) {
            failed[nf++] = &in->nodes[i];
        }
    }
    qsort (failed, nf, sizeof (*failed), cmp_leaf);
    for (size_t i = 0, j; i < nf && rc == 0; i = j) {
        const char *leaf = failed[i]->leaf;
        bool unexplained = false;
        for (j = i; j < nf && strcmp (failed[j]->leaf, leaf) == 0; j++) {
            unexplained |= !has_reason (failed[j]);
        }
        if (j - i < 2 || !unexplained
            || fm_strlist_has (pol->leaf_alarmed, pol->nleaf_alarmed, leaf)) {
            continue;
        }
        char el[96];
        snprintf (el, sizeof (el), "switch:%s", leaf);
        if (alarm_add (out,
                       el,
                       "blast radius: %zu failing nodes share switch %s; the "
                       "evidence is attributed to the switch, not the nodes",
                       j - i,
                       leaf)
                < 0
            || fm_strlist_add (
                   &pol->leaf_alarmed, &pol->nleaf_alarmed, &pol->leaf_cap, leaf)
                   < 0) {
            rc = -1;
        }
    }
    free (failed);
    return rc;
}

int fm_policy_action_failed (fm_policy_t *pol, const fm_action_t *a)
{
    nmem_t *m;
    protect_t *pr;

    if (!pol || !a) {
        errno = EINVAL;
        return -1;
    }
    m = mem_find (pol, a->node);
    switch (a->kind) {
    case FM_ACT_DRAIN:
        if (m) {
            m->drained = m->confirmed = false;
        }
        /* the newest drain time is this one: it did not happen */
        if (pol->ndrains > 0) {
            pol->ndrains--;
        }
        break;
    case FM_ACT_RESUME:
        if (m) {
            m->drained = true;
        } else if ((m = mem_get (pol, a->node))) {
            m->drained = true;
        } else {
            return -1;
        }
        break;
    case FM_ACT_SET_WEIGHT:
        if (m && m->weight_set && a->weight == m->set_weight) {
            m->weight_set = false; /* raise it again next time */
        } else if (m && !m->weight_set && a->weight == m->orig_weight) {
            m->weight_set = true; /* restore it again next time */
        }
        break;
    case FM_ACT_SIGNAL:
        if ((pr = prot_find (pol, a->job_id))) {
            *pr = pol->prot[--pol->nprot];
        }
        break;
    case FM_ACT_REQUEUE:
        if ((pr = prot_find (pol, a->job_id))) {
            pr->done = false;
        }
        break;
    }
    return 0;
}

static bool input_valid (const fm_policy_t *pol,
                         const fm_policy_input_t *in,
                         const fm_policy_output_t *out)
{
    if (!pol || !in || !out || (!in->nodes && in->nnodes) || (!in->jobs && in->njobs)
        || (!in->elems && in->nelems) || in->now_ns < pol->last_now) {
        return false;
    }
    for (size_t i = 0; i < in->nnodes; i++) {
        if (!in->nodes[i].name || strlen (in->nodes[i].name) >= 64) {
            return false;
        }
    }
    for (size_t i = 0; i < in->nelems; i++) {
        if (!in->elems[i].name) {
            return false;
        }
    }
    return true;
}

/* Drains older than an hour leave max_drains_per_hour's count. */
static void drains_expire (fm_policy_t *pol, int64_t now)
{
    size_t keep = 0;

    for (size_t i = 0; i < pol->ndrains; i++) {
        if (now - pol->drains[i] < HOUR_NS) {
            pol->drains[keep++] = pol->drains[i];
        }
    }
    pol->ndrains = keep;
}

/* What we remember against what Slurm says. */
static int reconcile (fm_policy_t *pol, const fm_policy_input_t *in)
{
    for (size_t i = 0; i < in->nnodes; i++) {
        const fm_policy_node_t *n = &in->nodes[i];
        nmem_t *m = mem_find (pol, n->name);
        if (foreign (n, m)) {
            if (m) {
                /* someone else owns the node now */
                m->drained = m->confirmed = m->weight_set = m->alarmed = false;
            }
            continue;
        }
        if (n->drained && fm_policy_reason_ours (n->reason)) {
            if (!(m = mem_get (pol, n->name))) {
                return -1;
            }
            m->drained = true;
            m->confirmed = true;
        } else if (m && m->drained && m->confirmed && !n->drained && !pol->p.dry_run) {
            /* resumed by an admin; an unconfirmed drain may still be on its way */
            m->drained = m->confirmed = false;
        }
    }
    return 0;
}

/* The blast-radius limits, as this window uses them up. */
typedef struct {
    size_t ours;  /* nodes drained by us */
    size_t limit; /* max_drain_fraction of the nodes, at least 1 */
    bool refused; /* a drain was refused this window */
} budget_t;

static budget_t budget (const fm_policy_t *pol, const fm_policy_input_t *in)
{
    size_t total = in->total_nodes > in->nnodes ? in->total_nodes : in->nnodes;
    budget_t b = {0};

    for (size_t i = 0; i < pol->nmem; i++) {
        b.ours += pol->mem[i].drained;
    }
    b.limit = (size_t)floor (pol->p.max_drain_fraction * (double)total);
    if (b.limit < 1) {
        b.limit = 1;
    }
    return b;
}

/* A drain the limits refuse: one alarm until the node is healthy again. */
static int drain_refused (fm_policy_t *pol,
                          const fm_policy_node_t *n,
                          const char *why,
                          budget_t *b,
                          fm_policy_output_t *out)
{
    nmem_t *m;

    b->refused = true;
    if (!(m = mem_get (pol, n->name))) {
        return -1;
    }
    if (!m->alarmed) {
        char el[96];
        snprintf (el, sizeof (el), "node:%s", n->name);
        if (alarm_add (out,
                       el,
                       "blast radius (%s: %zu drained, %zu in "
                       "the last hour): not draining failed node %s: "
                       "%s",
                       why,
                       b->ours,
                       pol->ndrains,
                       n->name,
                       n->evidence ? n->evidence : "")
            < 0) {
            return -1;
        }
        m->alarmed = true;
    }
    return 0;
}

static int node_failed (fm_policy_t *pol,
                        const fm_policy_input_t *in,
                        const fm_policy_node_t *n,
                        nmem_t *m,
                        budget_t *b,
                        fm_policy_output_t *out)
{
    if (!(m && m->drained)) {
        const char *why = NULL;
        if (b->ours >= b->limit) {
            why = "max_drain_fraction";
        } else if ((int64_t)pol->ndrains >= pol->p.max_drains_per_hour) {
            why = "max_drains_per_hour";
        }
        if (why) {
            return drain_refused (pol, n, why, b, out);
        }
        fm_action_t *a = act_add (pol, out, FM_ACT_DRAIN, n->name);
        if (!a || !(m = mem_get (pol, n->name))
            || fm_grow (&pol->drains,
                        &pol->drains_cap,
                        pol->ndrains + 1,
                        sizeof (*pol->drains),
                        16)
                   < 0) {
            return -1;
        }
        snprintf (a->reason,
                  sizeof (a->reason),
                  "%s %s: %s",
                  FM_POLICY_REASON_PREFIX,
                  n->cls ? n->cls : "failed",
                  n->evidence ? n->evidence : "no details");
        explain_copy (a, n, a->reason);
        m->drained = true;
        pol->drains[pol->ndrains++] = in->now_ns;
        b->ours++;
    }
    return protect_start (pol, in, n, out);
}

static int node_degraded (fm_policy_t *pol,
                          const fm_policy_node_t *n,
                          nmem_t *m,
                          fm_policy_output_t *out)
{
    if (!(m && m->weight_set) && !n->drained) {
        fm_action_t *a = act_add (pol, out, FM_ACT_SET_WEIGHT, n->name);
        if (!a || !(m = mem_get (pol, n->name))) {
            return -1;
        }
        m->weight_set = true;
        m->orig_weight = n->weight;
        m->set_weight = n->weight + pol->p.degraded_weight_add;
        a->weight = m->set_weight;
        snprintf (a->reason,
                  sizeof (a->reason),
                  "degraded (%s): %s",
                  n->cls ? n->cls : "slow",
                  n->evidence ? n->evidence : "");
        explain_copy (a, n, a->reason);
    }
    return 0;
}

/* Healthy for resume_windows: undo what we did to it. */
static int node_healthy (fm_policy_t *pol,
                         const fm_policy_input_t *in,
                         const fm_policy_node_t *n,
                         nmem_t *m,
                         fm_policy_output_t *out)
{
    const fm_policy_params_t *p = &pol->p;

    m->alarmed = false;
    if (n->healthy_windows < p->resume_windows) {
        return 0;
    }
    if (m->weight_set) {
        if (n->weight == m->set_weight || p->dry_run) {
            fm_action_t *a = act_add (pol, out, FM_ACT_SET_WEIGHT, n->name);
            if (!a) {
                return -1;
            }
            a->weight = m->orig_weight;
            snprintf (a->reason,
                      sizeof (a->reason),
                      "healthy for %d windows: weight restored",
                      n->healthy_windows);
        }
        m->weight_set = false;
    }
    if (m->drained && p->auto_resume && !in->resume_by_validation) {
        fm_action_t *a = act_add (pol, out, FM_ACT_RESUME, n->name);
        if (!a) {
            return -1;
        }
        snprintf (a->reason,
                  sizeof (a->reason),
                  "healthy for %d windows after a fabric drain",
                  n->healthy_windows);
        m->drained = m->confirmed = false;
    }
    return 0;
}

static int nodes_decide (fm_policy_t *pol,
                         const fm_policy_input_t *in,
                         budget_t *b,
                         fm_policy_output_t *out)
{
    for (size_t i = 0; i < in->nnodes; i++) {
        const fm_policy_node_t *n = &in->nodes[i];
        nmem_t *m = mem_find (pol, n->name);
        int rc = 0;
        if (foreign (n, m)) {
            continue;
        }
        if (n->state == FM_STATE_FAILED) {
            rc = node_failed (pol, in, n, m, b, out);
        } else if (n->state == FM_STATE_DEGRADED) {
            rc = node_degraded (pol, n, m, out);
        } else if (n->state == FM_STATE_HEALTHY && m) {
            rc = node_healthy (pol, in, n, m, out);
        }
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* Fabric elements: one alarm per episode. */
static int
elems_alarm (fm_policy_t *pol, const fm_policy_input_t *in, fm_policy_output_t *out)
{
    char **still = NULL;
    size_t nstill = 0, still_cap = 0;

    for (size_t i = 0; i < in->nelems; i++) {
        const fm_policy_elem_t *e = &in->elems[i];
        if (e->state < FM_STATE_DEGRADED) {
            continue;
        }
        if (!fm_strlist_has (pol->elem_alarmed, pol->nelem_alarmed, e->name)) {
            if (alarm_add (out,
                           e->name,
                           "%s %s: %s",
                           e->name,
                           fm_score_state_name (e->state),
                           e->evidence ? e->evidence : "")
                < 0) {
                fm_strlist_free (still, nstill);
                return -1;
            }
        }
        if (fm_strlist_add (&still, &nstill, &still_cap, e->name) < 0) {
            fm_strlist_free (still, nstill);
            return -1;
        }
    }
    fm_strlist_free (pol->elem_alarmed, pol->nelem_alarmed);
    pol->elem_alarmed = still;
    pol->nelem_alarmed = nstill;
    pol->elem_cap = still_cap;
    return 0;
}

int fm_policy_decide (fm_policy_t *pol,
                      const fm_policy_input_t *in,
                      fm_policy_output_t *out)
{
    budget_t b;

    if (!input_valid (pol, in, out)) {
        errno = EINVAL;
        return -1;
    }
    out->nactions = 0;
    out->nalarms = 0;
    pol->last_now = in->now_ns;

    drains_expire (pol, in->now_ns);
    if (reconcile (pol, in) < 0) {
        return -1;
    }
    b = budget (pol, in);
    if (nodes_decide (pol, in, &b, out) < 0 || protect_step (pol, in, out) < 0) {
        return -1;
    }
    if (b.refused && attribute (pol, in, out) < 0) {
        return -1;
    }
    if (!b.refused) {
        fm_strlist_free (pol->leaf_alarmed, pol->nleaf_alarmed);
        pol->leaf_alarmed = NULL;
        pol->nleaf_alarmed = pol->leaf_cap = 0;
    }
    if (elems_alarm (pol, in, out) < 0) {
        return -1;
    }
    mem_gc (pol);
    return 0;
}
