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

    if (j->nnodes >= JOB_NODES_MAX || fm_strlist_has (j->nodes, j->nnodes, node)) {
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

    if (!m || !rep || !fm_monitor_name_fits (rep->node)) {
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
            if (l->dir != FM_DIR_OUT || !fm_monitor_name_fits (l->peer)
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
