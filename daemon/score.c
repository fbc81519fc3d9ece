/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "score.h"

/* Which delay signal a link's baseline was learned from: a change of signal
 * (a clock estimate appears or goes) restarts learning.
 */
typedef enum {
    SIG_NONE = 0,
    SIG_OWD,
    SIG_RESIDUAL,
    SIG_RTT,
} signal_t;

typedef struct {
    int32_t src, dst, via;
    int64_t last_w;
    /* baseline of the delay signal */
    signal_t kind;
    int nbase;
    double base, var;
    /* decayed evidence */
    double sent_d, lost_d, zs_d, zn_d, infl_d;
    /* the open window */
    double c_sent, c_recv;
    double owd_sum, res_sum, rtt_sum;
    int owd_n, res_n, rtt_n;
    bool open;
    /* this window's signal, kept for the baseline update after localization */
    signal_t w_kind;
    double w_x, w_z;
    bool w_has_z;
} flow_t;

typedef struct {
    bool link_down, pcie, unsync;
    int64_t carrier, port_errors, gpu_faults;
    bool any;
} health_t;

/* An element's merged implication in one window. */
typedef struct {
    fm_elem_kind_t kind;
    int id;
    fm_side_t side;
    fm_class_t cls;
    double gain, sent, lost, cur_sent, cur_lost, delay_ns;
    int nflows, witnesses;
    int peers[4];
    bool local;
    bool gpu;
    int64_t carrier;
} implic_t;

struct fm_score {
    const fm_topo_t *topo;
    fm_score_params_t p;
    size_t nn;
    flow_t *flows;
    size_t nflows, flows_cap;
    /* (src, dst) -> flow index + 1 */
    uint64_t *fkeys;
    int32_t *fvals;
    size_t fcap;
    size_t *open;
    size_t nopen, open_cap;
    size_t hint; /* the flow after the last one looked up: records usually
                  * arrive in the same order every window */
    fm_flow_ev_t *ev;
    size_t ev_cap;
    fm_localize_t *loc;
    health_t *health;
    bool *seen;
    int *clean;
    int32_t *node_elem;
    fm_elem_status_t *elems;
    size_t nelems, elems_cap;
    implic_t *imp;
    size_t nimp, imp_cap;
    int64_t w;
    int64_t last_end;
    double loss_l, loss_s; /* decayed lost and sent of unexplained flows */
    double gvar;           /* mean delay variance of learned links */
};

void fm_score_params_default (fm_score_params_t *p)
{
    fm_localize_params_default (&p->loc);
    p->decay = 0.7;
    p->persist_windows = 2;
    p->recover_windows = 6;
    p->learn_windows = 6;
    p->fail_loss = 0.005;
    p->fail_delay_ns = 1e6;
    p->sigma_floor_ns = 200;
    p->z_clip = 50;
    p->loss_prior = 1e-5;
    p->loss_floor = 1e-7;
    p->port_errors_min = 10;
    p->flap_episodes = 2;
    p->flap_horizon_ns = 3600LL * 1000000000LL;
}

const char *fm_score_state_name (fm_state_t st)
{
    switch (st) {
    case FM_STATE_SUSPECT:
        return "suspect";
    case FM_STATE_DEGRADED:
        return "degraded";
    case FM_STATE_FAILED:
        return "failed";
    case FM_STATE_HEALTHY:
        break;
    }
    return "healthy";
}

static bool params_valid (const fm_score_params_t *p)
{
    return p->decay >= 0 && p->loc.loss_min_ratio >= 1 && p->loc.split_penalty >= 0
           && p->decay < 1 && p->persist_windows >= 1 && p->persist_windows <= 1000
           && p->recover_windows >= 1 && p->recover_windows <= 100000
           && p->learn_windows >= 1 && p->learn_windows <= 10000 && p->fail_loss > 0
           && p->fail_loss <= 1 && p->fail_delay_ns > 0 && p->sigma_floor_ns > 0
           && p->z_clip > 0 && p->loss_prior > 0 && p->loss_prior < 1
           && p->loss_floor > 0 && p->loss_floor < 1 && p->port_errors_min >= 1
           && p->flap_episodes >= 1 && p->flap_episodes <= 4 && p->flap_horizon_ns > 0
           && p->loc.min_gain > 0 && p->loc.min_peers >= 1 && p->loc.spread_ratio >= 0
           && p->loc.spread_ratio <= 1 && p->loc.delay_min_ns >= 0
           && p->loc.cur_min_gain >= 0 && p->loc.down_ratio > 0
           && p->loc.down_ratio <= 1 && p->loc.max_hyps >= 1;
}

fm_score_t *fm_score_create (const fm_topo_t *topo, const fm_score_params_t *p)
{
    fm_score_t *s;

    if (!topo || !p || !params_valid (p)) {
        errno = EINVAL;
        return NULL;
    }
    if (!(s = calloc (1, sizeof (*s)))) {
        errno = ENOMEM;
        return NULL;
    }
    s->topo = topo;
    s->p = *p;
    s->nn = fm_topo_nnodes (topo);
    s->loc = fm_localize_create (topo);
    s->health = calloc (s->nn + 1, sizeof (*s->health));
    s->seen = calloc (s->nn + 1, sizeof (*s->seen));
    s->clean = calloc (s->nn + 1, sizeof (*s->clean));
    s->node_elem = malloc ((s->nn + 1) * sizeof (*s->node_elem));
    if (!s->loc || !s->health || !s->seen || !s->clean || !s->node_elem) {
        fm_score_destroy (s);
        errno = ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < s->nn; i++) {
        s->node_elem[i] = -1;
    }
    s->last_end = INT64_MIN;
    return s;
}

void fm_score_destroy (fm_score_t *s)
{
    if (s) {
        int saved = errno;
        free (s->flows);
        free (s->fkeys);
        free (s->fvals);
        free (s->open);
        free (s->ev);
        fm_localize_destroy (s->loc);
        free (s->health);
        free (s->seen);
        free (s->clean);
        free (s->node_elem);
        free (s->elems);
        free (s->imp);
        free (s);
        errno = saved;
    }
}

static uint64_t flow_key (int32_t src, int32_t dst)
{
    return ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst;
}

static size_t key_slot (uint64_t k, size_t cap)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ULL) >> 17) & (cap - 1);
}

static int flow_rehash (fm_score_t *s)
{
    size_t cap = s->fcap ? s->fcap * 2 : 1024;
    uint64_t *keys = malloc (cap * sizeof (*keys));
    int32_t *vals = calloc (cap, sizeof (*vals));

    if (!keys || !vals) {
        free (keys);
        free (vals);
        return -1;
    }
    for (size_t i = 0; i < s->nflows; i++) {
        uint64_t k = flow_key (s->flows[i].src, s->flows[i].dst);
        size_t j = key_slot (k, cap);
        while (vals[j]) {
            j = (j + 1) & (cap - 1);
        }
        keys[j] = k;
        vals[j] = (int32_t)i + 1;
    }
    free (s->fkeys);
    free (s->fvals);
    s->fkeys = keys;
    s->fvals = vals;
    s->fcap = cap;
    return 0;
}

static flow_t *flow_get (fm_score_t *s, int32_t src, int32_t dst)
{
    uint64_t k = flow_key (src, dst);

    if (s->hint < s->nflows && s->flows[s->hint].src == src
        && s->flows[s->hint].dst == dst) {
        return &s->flows[s->hint++];
    }
    if (s->fcap) {
        for (size_t j = key_slot (k, s->fcap); s->fvals[j];
             j = (j + 1) & (s->fcap - 1)) {
            if (s->fkeys[j] == k) {
                s->hint = (size_t)s->fvals[j];
                return &s->flows[s->fvals[j] - 1];
            }
        }
    }
    if ((s->nflows + 1) * 2 > s->fcap && flow_rehash (s) < 0) {
        return NULL;
    }
    if (s->nflows == s->flows_cap) {
        size_t cap = s->flows_cap ? s->flows_cap * 2 : 1024;
        flow_t *v = realloc (s->flows, cap * sizeof (*v));
        if (!v) {
            return NULL;
        }
        s->flows = v;
        s->flows_cap = cap;
    }
    size_t j = key_slot (k, s->fcap);
    while (s->fvals[j]) {
        j = (j + 1) & (s->fcap - 1);
    }
    s->fkeys[j] = k;
    s->fvals[j] = (int32_t)s->nflows + 1;
    flow_t *f = &s->flows[s->nflows++];
    *f = (flow_t){.src = src, .dst = dst, .via = -1, .last_w = -2};
    s->hint = s->nflows;
    return f;
}

int fm_score_add_link (fm_score_t *s, const fm_link_window_t *r)
{
    if (!s || !r || r->src < 0 || (size_t)r->src >= s->nn || r->dst < 0
        || (size_t)r->dst >= s->nn || r->src == r->dst || r->via < -1
        || (r->via >= 0 && (size_t)r->via >= fm_topo_nspines (s->topo))
        || r->start_ns >= r->end_ns || r->sent < 0 || r->received < 0
        || r->received > r->sent || r->sent > 1000000000LL
        || (r->owd_p50_ns != FM_SCORE_NONE
            && (r->owd_p50_ns < -60000000000LL || r->owd_p50_ns > 60000000000LL))
        || (r->rtt_p50_ns != FM_SCORE_NONE
            && (r->rtt_p50_ns < 0 || r->rtt_p50_ns > 60000000000LL))
        || (r->loop_residual_ns != FM_SCORE_NONE
            && (r->loop_residual_ns < -60000000000LL
                || r->loop_residual_ns > 60000000000LL))) {
        errno = EINVAL;
        return -1;
    }
    flow_t *f = flow_get (s, r->src, r->dst);
    if (!f) {
        errno = ENOMEM;
        return -1;
    }
    if (!f->open) {
        if (s->nopen == s->open_cap) {
            size_t cap = s->open_cap ? s->open_cap * 2 : 1024;
            size_t *v = realloc (s->open, cap * sizeof (*v));
            if (!v) {
                errno = ENOMEM;
                return -1;
            }
            s->open = v;
            s->open_cap = cap;
        }
        s->open[s->nopen++] = (size_t)(f - s->flows);
        f->open = true;
    }
    if (r->via >= 0) {
        f->via = r->via;
    }
    f->c_sent += (double)r->sent;
    f->c_recv += (double)r->received;
    if (r->owd_p50_ns != FM_SCORE_NONE) {
        f->owd_sum += (double)r->owd_p50_ns;
        f->owd_n++;
    }
    if (r->loop_residual_ns != FM_SCORE_NONE) {
        f->res_sum += (double)r->loop_residual_ns;
        f->res_n++;
    }
    if (r->rtt_p50_ns != FM_SCORE_NONE) {
        f->rtt_sum += (double)r->rtt_p50_ns;
        f->rtt_n++;
    }
    s->seen[r->src] = s->seen[r->dst] = true;
    return 0;
}

int fm_score_add_health (fm_score_t *s, const fm_health_event_t *e)
{
    if (!s || !e || e->node < 0 || (size_t)e->node >= s->nn || e->count < 0
        || e->kind < FM_HEALTH_LINK_DOWN || e->kind > FM_HEALTH_GPU_FAULT) {
        errno = EINVAL;
        return -1;
    }
    health_t *h = &s->health[e->node];
    h->any = true;
    switch (e->kind) {
    case FM_HEALTH_LINK_DOWN:
        h->link_down = true;
        break;
    case FM_HEALTH_CARRIER:
        h->carrier += e->count;
        break;
    case FM_HEALTH_PORT_ERRORS:
        h->port_errors += e->count;
        break;
    case FM_HEALTH_PCIE_DEGRADED:
        h->pcie = true;
        break;
    case FM_HEALTH_CLOCK_UNSYNC:
        h->unsync = true;
        break;
    case FM_HEALTH_GPU_FAULT:
        h->gpu_faults += e->count;
        break;
    }
    s->seen[e->node] = true;
    return 0;
}

/* The delay signal of a flow in the open window, in ns of one direction. */
static signal_t flow_signal (const fm_score_t *s, const flow_t *f, double *x)
{
    bool unsync = s->health[f->src].unsync || s->health[f->dst].unsync;

    if (f->owd_n > 0 && !unsync) {
        *x = f->owd_sum / f->owd_n;
        return SIG_OWD;
    }
    if (f->res_n > 0 && !unsync) {
        *x = 2.0 * f->res_sum / f->res_n;
        return SIG_RESIDUAL;
    }
    if (f->rtt_n > 0) {
        /* the direction is unknown: each direction's record carries half */
        *x = f->rtt_sum / f->rtt_n / 2.0;
        return SIG_RTT;
    }
    return SIG_NONE;
}

static void baseline_update (fm_score_t *s, flow_t *f, double x, double z, bool has_z)
{
    if (f->nbase < s->p.learn_windows) {
        /* Welford while learning */
        f->nbase++;
        double d = x - f->base;
        f->base += d / f->nbase;
        f->var += (d * (x - f->base) - f->var) / f->nbase;
        return;
    }
    /* a link that stays slow is not learned as normal */
    if (has_z && fabs (z) >= 3.0) {
        return;
    }
    const double a = 0.05;
    double d = x - f->base;
    f->base += a * d;
    f->var = (1 - a) * f->var + a * d * d;
}

static implic_t *implic_get (fm_score_t *s, fm_elem_kind_t kind, int id)
{
    for (size_t i = 0; i < s->nimp; i++) {
        if (s->imp[i].kind == kind && s->imp[i].id == id) {
            return &s->imp[i];
        }
    }
    if (fm_grow (&s->imp, &s->imp_cap, s->nimp + 1, sizeof (*s->imp), 64) < 0) {
        return NULL;
    }
    implic_t *m = &s->imp[s->nimp++];
    *m = (implic_t){.kind = kind, .id = id, .peers = {-1, -1, -1, -1}};
    return m;
}

static int class_rank (fm_class_t c)
{
    static const int rank[] = {
        [FM_CLASS_NONE] = 0,
        [FM_CLASS_PCIE] = 1,
        [FM_CLASS_PORT_ERRORS] = 2,
        [FM_CLASS_DELAY] = 3,
        [FM_CLASS_LOSS] = 4,
        [FM_CLASS_DOWN] = 5,
        [FM_CLASS_FLAP] = 6,
    };
    return rank[c];
}

static void implic_class (implic_t *m, fm_class_t c)
{
    if (class_rank (c) > class_rank (m->cls)) {
        m->cls = c;
    }
}

static fm_state_t severity (const fm_score_t *s, const implic_t *m)
{
    double ratio = m->cur_sent > 0 ? m->cur_lost / m->cur_sent
                   : m->sent > 0   ? m->lost / m->sent
                                   : 0;
    switch (m->cls) {
    case FM_CLASS_DOWN:
    case FM_CLASS_FLAP:
        return FM_STATE_FAILED;
    case FM_CLASS_LOSS:
        return ratio >= s->p.fail_loss ? FM_STATE_FAILED : FM_STATE_DEGRADED;
    case FM_CLASS_DELAY:
        return m->delay_ns >= s->p.fail_delay_ns ? FM_STATE_FAILED : FM_STATE_DEGRADED;
    case FM_CLASS_PORT_ERRORS:
    case FM_CLASS_PCIE:
    case FM_CLASS_NONE:
        break;
    }
    return FM_STATE_DEGRADED;
}

static fm_elem_status_t *elem_get (fm_score_t *s, fm_elem_kind_t kind, int id)
{
    if (kind == FM_ELEM_NODE && s->node_elem[id] >= 0) {
        return &s->elems[s->node_elem[id]];
    }
    if (kind != FM_ELEM_NODE) {
        for (size_t i = 0; i < s->nelems; i++) {
            if (s->elems[i].kind == kind && s->elems[i].id == id) {
                return &s->elems[i];
            }
        }
    }
    if (fm_grow (&s->elems, &s->elems_cap, s->nelems + 1, sizeof (*s->elems), 64) < 0) {
        return NULL;
    }
    fm_elem_status_t *e = &s->elems[s->nelems];
    *e = (fm_elem_status_t){.kind = kind, .id = id};
    if (kind == FM_ELEM_NODE) {
        s->node_elem[id] = (int32_t)s->nelems;
    }
    s->nelems++;
    return e;
}

static int count_episodes (const fm_score_t *s, const fm_elem_status_t *e, int64_t now)
{
    int n = 0;

    for (int i = 0; i < 4; i++) {
        if (e->episode_ns[i] != 0 && now - e->episode_ns[i] <= s->p.flap_horizon_ns) {
            n++;
        }
    }
    return n;
}

static void add_episode (fm_elem_status_t *e, int64_t now)
{
    int oldest = 0;

    for (int i = 1; i < 4; i++) {
        if (e->episode_ns[i] < e->episode_ns[oldest]) {
            oldest = i;
        }
    }
    e->episode_ns[oldest] = now;
}

static void
elem_implicated (fm_score_t *s, fm_elem_status_t *e, const implic_t *m, int64_t now)
{
    implic_t mm = *m;
    bool down = m->cls == FM_CLASS_DOWN && m->cur_sent > 0
                && m->cur_lost / m->cur_sent >= s->p.loc.down_ratio;

    if (m->local && m->cls == FM_CLASS_DOWN) {
        down = true;
    }
    if (down && !e->was_down) {
        add_episode (e, now);
    }
    for (int64_t c = 0; c < m->carrier && c < 4; c++) {
        add_episode (e, now);
    }
    e->was_down = down;
    e->episodes = count_episodes (s, e, now);
    if (e->episodes >= s->p.flap_episodes
        && (m->cls == FM_CLASS_DOWN || m->carrier > 0)) {
        mm.cls = FM_CLASS_FLAP;
    }
    fm_state_t sev = severity (s, &mm);
    e->streak++;
    e->clean = 0;
    e->gap = 0;
    e->side = m->side;
    e->score = m->gain;
    e->loss_ratio = m->sent > 0 ? m->lost / m->sent : 0;
    e->delay_ns = m->delay_ns;
    e->witnesses = m->witnesses;
    if (e->state == FM_STATE_HEALTHY) {
        e->state = FM_STATE_SUSPECT;
        e->since_ns = now;
        e->first_ns = now;
        e->cls = FM_CLASS_NONE;
    }
    if (class_rank (mm.cls) >= class_rank (e->cls)) {
        e->cls = mm.cls;
    }
    if (e->state == FM_STATE_SUSPECT && e->streak >= s->p.persist_windows) {
        e->state = sev;
        e->since_ns = now;
    } else if (e->state >= FM_STATE_DEGRADED && sev > e->state) {
        e->state = sev;
        e->since_ns = now;
    }
    fm_score_hist_t *h = &e->hist[e->nhist++ % FM_SCORE_HISTORY];
    *h = (fm_score_hist_t){
        .end_ns = now,
        .side = m->side,
        .cls = mm.cls,
        .gain = m->gain,
        .sent = m->sent,
        .lost = m->lost,
        .delay_ns = m->delay_ns,
        .nflows = m->nflows,
        .witnesses = m->witnesses,
        .current = true,
        .local = m->local,
        .gpu = m->gpu,
    };
    memcpy (h->peers, m->peers, sizeof (h->peers));
}

static void elem_clear (fm_score_t *s, fm_elem_status_t *e, int64_t now)
{
    e->was_down = false;
    if (e->state == FM_STATE_SUSPECT) {
        if (++e->gap > 1) {
            e->state = FM_STATE_HEALTHY;
            e->streak = 0;
            e->since_ns = now;
        }
    } else if (e->state >= FM_STATE_DEGRADED) {
        e->streak = 0;
        if (++e->clean >= s->p.recover_windows) {
            e->state = FM_STATE_HEALTHY;
            e->since_ns = now;
        }
    }
}

static void merge_hyp (implic_t *m, const fm_hyp_t *h)
{
    m->side |= h->side;
    implic_class (m, h->cls);
    m->gain += h->gain;
    m->sent += h->sent;
    m->lost += h->lost;
    m->cur_sent += h->cur_sent;
    m->cur_lost += h->cur_lost;
    if (h->delay_ns > m->delay_ns) {
        m->delay_ns = h->delay_ns;
    }
    m->nflows += h->nflows;
    m->witnesses += h->witnesses;
    for (int i = 0, j = 0; i < 4 && j < FM_HYP_PEERS; j++) {
        if (m->peers[i] >= 0) {
            i++;
            j--;
            continue;
        }
        m->peers[i++] = h->peers[j];
    }
}

/* One open flow's evidence for the window (x, its z-score against the
 * baseline) into ev; links with a baseline add their variance to gvar.
 */
static void flow_evidence (
    fm_score_t *s, flow_t *f, fm_flow_ev_t *ev, double *gvar_sum, size_t *gvar_n)
{
    const fm_score_params_t *p = &s->p;
    double x = 0, z = 0, infl = 0;
    signal_t kind = flow_signal (s, f, &x);
    bool has_z = false;

    if (f->last_w != s->w - 1) {
        f->sent_d = f->lost_d = f->zs_d = f->zn_d = f->infl_d = 0;
    }
    if (kind != f->kind) {
        f->kind = kind;
        f->nbase = 0;
        f->base = f->var = 0;
    }
    if (kind != SIG_NONE && f->nbase >= p->learn_windows) {
        /* a few windows give a noisy variance: shrink it towards the mean
         * of all links, so z-scores of equally slowed links agree
         */
        double nb = f->nbase < 100 ? f->nbase : 100;
        double var = s->gvar > 0 ? (nb * f->var + 20 * s->gvar) / (nb + 20) : f->var;
        double sigma = sqrt (var);
        *gvar_sum += f->var;
        (*gvar_n)++;
        if (sigma < p->sigma_floor_ns) {
            sigma = p->sigma_floor_ns;
        }
        infl = x - f->base;
        z = infl / sigma;
        if (z > p->z_clip) {
            z = p->z_clip;
        } else if (z < -p->z_clip) {
            z = -p->z_clip;
        }
        has_z = true;
    }
    double lost = f->c_sent - f->c_recv;
    f->sent_d = f->sent_d * p->decay + f->c_sent;
    f->lost_d = f->lost_d * p->decay + lost;
    f->zs_d = f->zs_d * p->decay + (has_z ? z : 0);
    f->zn_d = f->zn_d * p->decay + (has_z ? 1 : 0);
    f->infl_d = f->infl_d * p->decay + (has_z ? infl : 0);
    *ev = (fm_flow_ev_t){
        .src = f->src,
        .dst = f->dst,
        .via = f->via,
        .sent = f->sent_d,
        .lost = f->lost_d,
        .zs = f->zs_d,
        .zn = f->zn_d,
        .infl_ns = f->infl_d,
        .cur_sent = f->c_sent,
        .cur_lost = lost,
        .cur_zs = has_z ? z : 0,
        .cur_zn = has_z ? 1 : 0,
        .cur_infl_ns = has_z ? infl : 0,
        .explained = -1,
    };
    f->w_kind = kind;
    f->w_x = x;
    f->w_z = z;
    f->w_has_z = has_z;
}

/* The window's counts into the loss estimate and the baselines (flows that
 * no hypothesis explains), and every open flow closed.
 */
static void flows_close (fm_score_t *s)
{
    s->loss_l *= 0.99;
    s->loss_s *= 0.99;
    for (size_t i = 0; i < s->nopen; i++) {
        flow_t *f = &s->flows[s->open[i]];
        if (s->ev[i].explained < 0) {
            s->loss_l += s->ev[i].cur_lost;
            s->loss_s += s->ev[i].cur_sent;
            if (f->w_kind != SIG_NONE) {
                baseline_update (s, f, f->w_x, f->w_z, f->w_has_z);
            }
        }
        f->last_w = s->w;
        f->c_sent = f->c_recv = 0;
        f->owd_sum = f->res_sum = f->rtt_sum = 0;
        f->owd_n = f->res_n = f->rtt_n = 0;
        f->open = false;
    }
    s->nopen = 0;
}

static int implicate_hyps (fm_score_t *s, const fm_hyp_t *hyps, int nh)
{
    for (int i = 0; i < nh; i++) {
        if (!hyps[i].current) {
            continue;
        }
        implic_t *m = implic_get (s, hyps[i].kind, hyps[i].id);
        if (!m) {
            errno = ENOMEM;
            return -1;
        }
        merge_hyp (m, &hyps[i]);
    }
    return 0;
}

/* Node-local health events that count on their own. */
static int implicate_health (fm_score_t *s)
{
    const fm_score_params_t *p = &s->p;

    for (size_t n = 0; n < s->nn; n++) {
        health_t *h = &s->health[n];
        if (!h->any) {
            continue;
        }
        bool counts = h->link_down || h->carrier > 0
                      || h->port_errors >= p->port_errors_min || h->pcie
                      || h->gpu_faults > 0;
        if (counts) {
            implic_t *m = implic_get (s, FM_ELEM_NODE, (int)n);
            if (!m) {
                errno = ENOMEM;
                return -1;
            }
            m->side |= FM_SIDE_BOTH;
            m->local = true;
            m->gpu = m->gpu || h->gpu_faults > 0;
            m->carrier += h->carrier;
            if (h->link_down || h->carrier > 0) {
                implic_class (m, FM_CLASS_DOWN);
            } else if (h->port_errors >= p->port_errors_min) {
                implic_class (m, FM_CLASS_PORT_ERRORS);
            } else {
                /* a GPU fault has no class of its own among the fabric's: it
                 * ranks as node-local hardware degradation (degraded, not
                 * failed); the evidence line names it
                 */
                implic_class (m, FM_CLASS_PCIE);
            }
        }
        *h = (health_t){0};
    }
    return 0;
}

static int elems_step (fm_score_t *s, int64_t end_ns)
{
    /* step every tracked element, then the implicated ones not yet tracked */
    for (size_t i = 0; i < s->nimp; i++) {
        fm_elem_status_t *e = elem_get (s, s->imp[i].kind, s->imp[i].id);
        if (!e) {
            errno = ENOMEM;
            return -1;
        }
        elem_implicated (s, e, &s->imp[i], end_ns);
        e->gap = -1; /* marks "implicated this window" until the sweep below */
    }
    for (size_t i = 0; i < s->nelems; i++) {
        fm_elem_status_t *e = &s->elems[i];
        if (e->gap == -1) {
            e->gap = 0;
        } else if (e->kind != FM_ELEM_NODE || s->seen[e->id]) {
            elem_clear (s, e, end_ns);
        }
    }
    return 0;
}

/* Clean windows per node that reported in this one. */
static void nodes_clean (fm_score_t *s)
{
    for (size_t n = 0; n < s->nn; n++) {
        if (s->seen[n]) {
            int32_t ei = s->node_elem[n];
            bool imp = ei >= 0 && s->elems[ei].streak > 0 && s->elems[ei].clean == 0;
            s->clean[n] = imp ? 0 : s->clean[n] + 1;
        }
        s->seen[n] = false;
    }
}

/* Flows not reported for this many windows are forgotten: a probe plan that
 * rotates its pairs (doc/plan.md) would otherwise leave every pair it ever
 * probed in the table. Checked every FLOW_FORGET_EVERY windows.
 */
#define FLOW_FORGET_WINDOWS 120
#define FLOW_FORGET_EVERY 32

static int flows_forget (fm_score_t *s)
{
    size_t keep = 0;

    if (s->w % FLOW_FORGET_EVERY != 0) {
        return 0;
    }
    for (size_t i = 0; i < s->nflows; i++) {
        if (s->flows[i].last_w >= s->w - FLOW_FORGET_WINDOWS) {
            s->flows[keep++] = s->flows[i];
        }
    }
    if (keep == s->nflows) {
        return 0;
    }
    s->nflows = keep;
    s->hint = 0;
    /* the same capacity, rebuilt: flow_rehash doubles it */
    s->fcap /= 2;
    return flow_rehash (s);
}

static void elems_forget (fm_score_t *s)
{
    /* forget elements that are healthy again */
    size_t keep = 0;
    for (size_t i = 0; i < s->nelems; i++) {
        fm_elem_status_t *e = &s->elems[i];
        if (e->kind == FM_ELEM_NODE) {
            s->node_elem[e->id] = -1;
        }
        if (e->state == FM_STATE_HEALTHY) {
            continue;
        }
        if (e->kind == FM_ELEM_NODE) {
            s->node_elem[e->id] = (int32_t)keep;
        }
        s->elems[keep++] = *e;
    }
    s->nelems = keep;
}

int fm_score_close_window (fm_score_t *s, int64_t end_ns)
{
    fm_localize_params_t lp;
    const fm_hyp_t *hyps = NULL;
    double gvar_sum = 0;
    size_t gvar_n = 0;
    int nh = 0;

    if (!s || end_ns <= s->last_end) {
        errno = EINVAL;
        return -1;
    }
    if (fm_grow (&s->ev, &s->ev_cap, s->nopen + 1, sizeof (*s->ev), 64) < 0) {
        errno = ENOMEM;
        return -1;
    }
    s->w++;
    lp = s->p.loc;
    lp.p0 = fm_score_p0 (s);
    for (size_t i = 0; i < s->nopen; i++) {
        flow_evidence (s, &s->flows[s->open[i]], &s->ev[i], &gvar_sum, &gvar_n);
    }
    /* learning: baselines and p0 first, blame nothing yet */
    if (s->w > s->p.learn_windows
        && (nh = fm_localize_run (s->loc, s->ev, s->nopen, &lp, &hyps)) < 0) {
        return -1;
    }
    if (gvar_n > 0) {
        s->gvar = gvar_sum / (double)gvar_n;
    }
    flows_close (s);
    s->nimp = 0;
    if (implicate_hyps (s, hyps, nh) < 0 || implicate_health (s) < 0
        || elems_step (s, end_ns) < 0) {
        return -1;
    }
    nodes_clean (s);
    elems_forget (s);
    if (flows_forget (s) < 0) {
        return -1;
    }
    s->last_end = end_ns;
    return 0;
}

size_t fm_score_nflows (const fm_score_t *s)
{
    return s->nflows;
}

size_t fm_score_nelems (const fm_score_t *s)
{
    return s ? s->nelems : 0;
}

const fm_elem_status_t *fm_score_elem (const fm_score_t *s, size_t i)
{
    return s && i < s->nelems ? &s->elems[i] : NULL;
}

const fm_elem_status_t *fm_score_find (const fm_score_t *s, fm_elem_kind_t kind, int id)
{
    if (!s) {
        return NULL;
    }
    if (kind == FM_ELEM_NODE) {
        if (id < 0 || (size_t)id >= s->nn || s->node_elem[id] < 0) {
            return NULL;
        }
        return &s->elems[s->node_elem[id]];
    }
    for (size_t i = 0; i < s->nelems; i++) {
        if (s->elems[i].kind == kind && s->elems[i].id == id) {
            return &s->elems[i];
        }
    }
    return NULL;
}

int fm_score_forget (fm_score_t *s, fm_elem_kind_t kind, int id)
{
    size_t keep = 0;

    if (!s || id < 0 || (kind == FM_ELEM_NODE && (size_t)id >= s->nn)) {
        errno = EINVAL;
        return -1;
    }
    for (size_t i = 0; i < s->nelems; i++) {
        fm_elem_status_t *e = &s->elems[i];
        if (e->kind == FM_ELEM_NODE) {
            s->node_elem[e->id] = -1;
        }
        if (e->kind == kind && e->id == id) {
            continue;
        }
        if (e->kind == FM_ELEM_NODE) {
            s->node_elem[e->id] = (int32_t)keep;
        }
        s->elems[keep++] = *e;
    }
    s->nelems = keep;
    if (kind == FM_ELEM_NODE) {
        s->clean[id] = 0;
    }
    return 0;
}

int fm_score_node_clean (const fm_score_t *s, int node)
{
    if (!s || node < 0 || (size_t)node >= s->nn) {
        return 0;
    }
    return s->clean[node];
}

double fm_score_p0 (const fm_score_t *s)
{
    /* the prior weighs as much as 1e5 probes */
    double p0 = (s->loss_l + s->p.loss_prior * 1e5) / (s->loss_s + 1e5);
    return p0 < s->p.loss_floor ? s->p.loss_floor : p0;
}
