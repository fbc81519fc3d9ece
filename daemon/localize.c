/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "localize.h"

typedef enum {
    C_NODE_TX,
    C_NODE_RX,
    C_NODE_BOTH,
    C_LEAF_TX,
    C_LEAF_RX,
    C_LEAF_BOTH,
    C_UP_TX,
    C_UP_RX,
    C_UP_BOTH,
    C_SPINE,
} ctype_t;

typedef struct {
    double s, k, zs, zn, is;
} stat_t;

typedef struct {
    ctype_t type;
    int idx;
    int tries;  /* evaluations that rejected it */
    double key; /* gain when last computed */
} cand_t;

static void heap_down (cand_t *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l].key > h[m].key) {
            m = l;
        }
        if (r < n && h[r].key > h[m].key) {
            m = r;
        }
        if (m == i) {
            return;
        }
        cand_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void heap_push (cand_t *h, size_t *n, cand_t c)
{
    size_t i = (*n)++;

    h[i] = c;
    while (i > 0 && h[(i - 1) / 2].key < h[i].key) {
        cand_t t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static cand_t heap_pop (cand_t *h, size_t *n)
{
    cand_t top = h[0];

    h[0] = h[--(*n)];
    heap_down (h, *n, 0);
    return top;
}

struct fm_localize {
    const fm_topo_t *topo;
    size_t nn, nl, ns, nu;
    stat_t *node_tx, *node_rx, *leaf_tx, *leaf_rx, *leaf_in, *up_tx, *up_rx, *spine;
    /* per-window flow index by source and destination node (CSR) */
    size_t *src_off, *dst_off, *via_off;
    size_t *src_list, *dst_list, *via_list;
    size_t flow_cap;
    /* the flows of one candidate and their children */
    size_t *sel;
    int *sel_child;
    size_t nsel;
    /* per-child sums, reset through a stamp */
    unsigned *stamp;
    unsigned cur_stamp;
    size_t nchild;
    stat_t *child;
    int *touched;
    /* sub-elements of an aggregate (refine_gain), reset through a stamp */
    size_t nsub;
    stat_t *sub;
    unsigned *sub_stamp;
    unsigned sub_cur;
    int *sub_touched;
    unsigned char *sel_done;
    cand_t *cands; /* a max-heap by key during the greedy loop */
    cand_t *blocked;
    size_t ncands, cands_cap;
    fm_hyp_t *hyps;
    size_t hyps_cap;
};

void fm_localize_params_default (fm_localize_params_t *p)
{
    *p = (fm_localize_params_t){
        .p0 = 1e-5,
        .min_gain = 20.0,
        .min_peers = 2,
        .spread_ratio = 0.5,
        .delay_min_ns = 1000.0,
        .cur_min_gain = 2.0,
        .down_ratio = 0.9,
        .split_penalty = 10.0,
        .loss_min_ratio = 3.0,
        .max_hyps = 256,
    };
}

const char *fm_localize_class_name (fm_class_t c)
{
    switch (c) {
    case FM_CLASS_DELAY:
        return "delay";
    case FM_CLASS_LOSS:
        return "loss";
    case FM_CLASS_DOWN:
        return "down";
    case FM_CLASS_FLAP:
        return "flap";
    case FM_CLASS_PORT_ERRORS:
        return "port-errors";
    case FM_CLASS_PCIE:
        return "pcie";
    case FM_CLASS_NONE:
        break;
    }
    return "none";
}

const char *fm_localize_side_name (fm_side_t s)
{
    switch (s) {
    case FM_SIDE_TX:
        return "tx";
    case FM_SIDE_RX:
        return "rx";
    case FM_SIDE_BOTH:
        break;
    }
    return "both";
}

double fm_localize_loss_llr (double s, double k, double p0)
{
    if (s <= 0 || k <= 0 || p0 <= 0 || p0 >= 1) {
        return 0.0;
    }
    double p = k / s;
    if (p <= p0) {
        return 0.0;
    }
    if (p >= 1.0) {
        return k * log (1.0 / p0);
    }
    return k * log (p / p0) + (s - k) * log ((1.0 - p) / (1.0 - p0));
}

double fm_localize_delay_llr (double zs, double zn, double infl_ns, double min_ns)
{
    if (zn <= 0 || zs <= 0 || infl_ns <= 0 || infl_ns / zn < min_ns) {
        return 0.0;
    }
    /* fade in above min_ns instead of a step, so that an aggregate and its parts
     * hovering around the floor do not take turns being blamed
     */
    double fade = 1.0 - min_ns * zn / infl_ns;
    return zs * zs / (2.0 * zn) * fade * fade;
}

fm_localize_t *fm_localize_create (const fm_topo_t *topo)
{
    fm_localize_t *loc = calloc (1, sizeof (*loc));

    if (!loc || !topo) {
        free (loc);
        errno = topo ? ENOMEM : EINVAL;
        return NULL;
    }
    loc->topo = topo;
    loc->nn = fm_topo_nnodes (topo);
    loc->nl = fm_topo_nleaves (topo);
    loc->ns = fm_topo_nspines (topo);
    loc->nu = fm_topo_nuplinks (topo);
    size_t nc = loc->nn > loc->nl ? loc->nn : loc->nl;
    if (nc < loc->ns + 2) {
        nc = loc->ns + 2;
    }
    loc->nchild = nc;
    loc->node_tx = calloc (loc->nn + 1, sizeof (stat_t));
    loc->node_rx = calloc (loc->nn + 1, sizeof (stat_t));
    loc->leaf_tx = calloc (loc->nl + 1, sizeof (stat_t));
    loc->leaf_rx = calloc (loc->nl + 1, sizeof (stat_t));
    loc->leaf_in = calloc (loc->nl + 1, sizeof (stat_t));
    loc->up_tx = calloc (loc->nu + 1, sizeof (stat_t));
    loc->up_rx = calloc (loc->nu + 1, sizeof (stat_t));
    loc->spine = calloc (loc->ns + 1, sizeof (stat_t));
    loc->src_off = calloc (loc->nn + 2, sizeof (size_t));
    loc->dst_off = calloc (loc->nn + 2, sizeof (size_t));
    loc->via_off = calloc (loc->ns + 2, sizeof (size_t));
    loc->stamp = calloc (nc + 1, sizeof (unsigned));
    loc->child = calloc (nc + 1, sizeof (stat_t));
    loc->touched = calloc (nc + 1, sizeof (int));
    loc->nsub = 2 * loc->nn + 2 * loc->nu;
    loc->sub = calloc (loc->nsub + 1, sizeof (stat_t));
    loc->sub_stamp = calloc (loc->nsub + 1, sizeof (unsigned));
    loc->sub_touched = calloc (loc->nsub + 1, sizeof (int));
    if (!loc->node_tx || !loc->node_rx || !loc->leaf_tx || !loc->leaf_rx
        || !loc->leaf_in || !loc->up_tx || !loc->up_rx || !loc->spine || !loc->src_off
        || !loc->dst_off || !loc->stamp || !loc->child || !loc->touched) {
        fm_localize_destroy (loc);
        errno = ENOMEM;
        return NULL;
    }
    return loc;
}

void fm_localize_destroy (fm_localize_t *loc)
{
    if (loc) {
        int saved = errno;
        free (loc->node_tx);
        free (loc->node_rx);
        free (loc->leaf_tx);
        free (loc->leaf_rx);
        free (loc->leaf_in);
        free (loc->up_tx);
        free (loc->up_rx);
        free (loc->spine);
        free (loc->src_off);
        free (loc->dst_off);
        free (loc->via_off);
        free (loc->src_list);
        free (loc->dst_list);
        free (loc->via_list);
        free (loc->sel);
        free (loc->sel_child);
        free (loc->stamp);
        free (loc->child);
        free (loc->touched);
        free (loc->sub);
        free (loc->sub_stamp);
        free (loc->sub_touched);
        free (loc->sel_done);
        free (loc->cands);
        free (loc->blocked);
        free (loc->hyps);
        free (loc);
        errno = saved;
    }
}

static void stat_add (stat_t *a, const fm_flow_ev_t *f, double sign)
{
    a->s += sign * f->sent;
    a->k += sign * f->lost;
    a->zs += sign * f->zs;
    a->zn += sign * f->zn;
    a->is += sign * f->infl_ns;
}

static void stat_sum (stat_t *out, const stat_t *a, const stat_t *b, const stat_t *c)
{
    out->s = a->s + b->s - (c ? c->s : 0);
    out->k = a->k + b->k - (c ? c->k : 0);
    out->zs = a->zs + b->zs - (c ? c->zs : 0);
    out->zn = a->zn + b->zn - (c ? c->zn : 0);
    out->is = a->is + b->is - (c ? c->is : 0);
}

/* Add (sign 1) or remove (-1) one flow from every candidate it crosses. */
static void flow_account (fm_localize_t *loc, const fm_flow_ev_t *f, double sign)
{
    int ls = fm_topo_node_leaf (loc->topo, f->src);
    int ld = fm_topo_node_leaf (loc->topo, f->dst);

    stat_add (&loc->node_tx[f->src], f, sign);
    stat_add (&loc->node_rx[f->dst], f, sign);
    if (ls >= 0) {
        stat_add (&loc->leaf_tx[ls], f, sign);
    }
    if (ld >= 0) {
        stat_add (&loc->leaf_rx[ld], f, sign);
    }
    if (ls >= 0 && ls == ld) {
        stat_add (&loc->leaf_in[ls], f, sign);
    }
    if (ls >= 0 && ld >= 0 && ls != ld && f->via >= 0) {
        int ut = fm_topo_uplink_find (loc->topo, ls, f->via);
        int ur = fm_topo_uplink_find (loc->topo, ld, f->via);
        stat_add (&loc->spine[f->via], f, sign);
        if (ut >= 0) {
            stat_add (&loc->up_tx[ut], f, sign);
        }
        if (ur >= 0) {
            stat_add (&loc->up_rx[ur], f, sign);
        }
    }
}

static void cand_stats (const fm_localize_t *loc, cand_t c, stat_t *st)
{
    switch (c.type) {
    case C_NODE_TX:
        *st = loc->node_tx[c.idx];
        break;
    case C_NODE_RX:
        *st = loc->node_rx[c.idx];
        break;
    case C_NODE_BOTH:
        stat_sum (st, &loc->node_tx[c.idx], &loc->node_rx[c.idx], NULL);
        break;
    case C_LEAF_TX:
        *st = loc->leaf_tx[c.idx];
        break;
    case C_LEAF_RX:
        *st = loc->leaf_rx[c.idx];
        break;
    case C_LEAF_BOTH:
        stat_sum (st, &loc->leaf_tx[c.idx], &loc->leaf_rx[c.idx], &loc->leaf_in[c.idx]);
        break;
    case C_UP_TX:
        *st = loc->up_tx[c.idx];
        break;
    case C_UP_RX:
        *st = loc->up_rx[c.idx];
        break;
    case C_UP_BOTH:
        stat_sum (st, &loc->up_tx[c.idx], &loc->up_rx[c.idx], NULL);
        break;
    case C_SPINE:
        *st = loc->spine[c.idx];
        break;
    }
}

static double
stat_gain (const stat_t *st, const fm_localize_params_t *p, double *lg, double *dg)
{
    /* p0 is itself an estimate: a pool barely above it is not evidence */
    bool above = st->s > 0 && st->k >= p->loss_min_ratio * p->p0 * st->s;
    *lg = above ? fm_localize_loss_llr (st->s, st->k, p->p0) : 0.0;
    *dg = fm_localize_delay_llr (st->zs, st->zn, st->is, p->delay_min_ns);
    return *lg + *dg;
}

static int cand_push (fm_localize_t *loc, ctype_t type, int idx, double key)
{
    if (loc->ncands == loc->cands_cap) {
        size_t cap = loc->cands_cap ? loc->cands_cap * 2 : 64;
        cand_t *v = realloc (loc->cands, cap * sizeof (*v));
        if (!v) {
            return -1;
        }
        loc->cands = v;
        cand_t *b = realloc (loc->blocked, cap * sizeof (*b));
        if (!b) {
            return -1;
        }
        loc->blocked = b;
        loc->cands_cap = cap;
    }
    loc->cands[loc->ncands++] = (cand_t){.type = type, .idx = idx, .key = key};
    return 0;
}

static void sel_add (fm_localize_t *loc, size_t fi, int child)
{
    loc->sel[loc->nsel] = fi;
    loc->sel_child[loc->nsel] = child;
    loc->nsel++;
}

/* Collect the unexplained flows of a candidate and the child each belongs to. */
static size_t select_flows (fm_localize_t *loc, const fm_flow_ev_t *flows, cand_t c)
{
    const fm_topo_t *t = loc->topo;
    const int *members = NULL;
    size_t nm = 0;
    int leaf = -1, spine = -1;

    loc->nsel = 0;
    switch (c.type) {
    case C_NODE_TX:
    case C_NODE_RX:
    case C_NODE_BOTH:
        if (c.type != C_NODE_RX) {
            for (size_t i = loc->src_off[c.idx]; i < loc->src_off[c.idx + 1]; i++) {
                size_t fi = loc->src_list[i];
                if (flows[fi].explained < 0) {
                    sel_add (loc, fi, flows[fi].dst);
                }
            }
        }
        if (c.type != C_NODE_TX) {
            for (size_t i = loc->dst_off[c.idx]; i < loc->dst_off[c.idx + 1]; i++) {
                size_t fi = loc->dst_list[i];
                if (flows[fi].explained < 0) {
                    sel_add (loc, fi, flows[fi].src);
                }
            }
        }
        return loc->nsel;
    case C_LEAF_TX:
    case C_LEAF_RX:
    case C_LEAF_BOTH:
        leaf = c.idx;
        break;
    case C_UP_TX:
    case C_UP_RX:
    case C_UP_BOTH:
        leaf = fm_topo_uplink_leaf (t, c.idx);
        spine = fm_topo_uplink_spine (t, c.idx);
        break;
    case C_SPINE:
        for (size_t i = loc->via_off[c.idx]; i < loc->via_off[c.idx + 1]; i++) {
            size_t fi = loc->via_list[i];
            const fm_flow_ev_t *f = &flows[fi];
            int ls = fm_topo_node_leaf (t, f->src);
            int ld = fm_topo_node_leaf (t, f->dst);
            if (f->explained < 0 && f->via == c.idx && ls >= 0 && ld >= 0 && ls != ld) {
                sel_add (loc, fi, ls);
            }
        }
        return loc->nsel;
    }
    members = fm_topo_leaf_nodes (t, leaf, &nm);
    bool tx = c.type == C_LEAF_TX || c.type == C_LEAF_BOTH || c.type == C_UP_TX
              || c.type == C_UP_BOTH;
    bool rx = c.type == C_LEAF_RX || c.type == C_LEAF_BOTH || c.type == C_UP_RX
              || c.type == C_UP_BOTH;
    bool up = spine >= 0;
    for (size_t m = 0; m < nm; m++) {
        int n = members[m];
        if (tx) {
            for (size_t i = loc->src_off[n]; i < loc->src_off[n + 1]; i++) {
                size_t fi = loc->src_list[i];
                const fm_flow_ev_t *f = &flows[fi];
                if (f->explained >= 0) {
                    continue;
                }
                if (up && (f->via != spine || fm_topo_node_leaf (t, f->dst) == leaf)) {
                    continue;
                }
                sel_add (loc, fi, n);
            }
        }
        if (rx) {
            for (size_t i = loc->dst_off[n]; i < loc->dst_off[n + 1]; i++) {
                size_t fi = loc->dst_list[i];
                const fm_flow_ev_t *f = &flows[fi];
                int ls = fm_topo_node_leaf (t, f->src);
                if (f->explained >= 0) {
                    continue;
                }
                if (up && (f->via != spine || ls == leaf)) {
                    continue;
                }
                /* an intra-leaf flow was already taken on the tx side */
                if (!up && tx && ls == leaf) {
                    continue;
                }
                sel_add (loc, fi, n);
            }
        }
    }
    return loc->nsel;
}

static double phi (double x)
{
    return 0.5 * erfc (-x / sqrt (2.0));
}

static void hyp_kind (cand_t c, fm_hyp_t *h)
{
    static const fm_side_t side[] = {
        [C_NODE_TX] = FM_SIDE_TX,
        [C_NODE_RX] = FM_SIDE_RX,
        [C_NODE_BOTH] = FM_SIDE_BOTH,
        [C_LEAF_TX] = FM_SIDE_TX,
        [C_LEAF_RX] = FM_SIDE_RX,
        [C_LEAF_BOTH] = FM_SIDE_BOTH,
        [C_UP_TX] = FM_SIDE_TX,
        [C_UP_RX] = FM_SIDE_RX,
        [C_UP_BOTH] = FM_SIDE_BOTH,
        [C_SPINE] = FM_SIDE_BOTH,
    };
    h->id = c.idx;
    h->side = side[c.type];
    if (c.type <= C_NODE_BOTH) {
        h->kind = FM_ELEM_NODE;
    } else if (c.type <= C_LEAF_BOTH) {
        h->kind = FM_ELEM_LEAF;
    } else if (c.type <= C_UP_BOTH) {
        h->kind = FM_ELEM_UPLINK;
    } else {
        h->kind = FM_ELEM_SPINE;
    }
}

/* Sub-elements of an aggregate, for the refinement test: [0, nn) node tx,
 * [nn, 2nn) node rx, [2nn, 2nn + nu) uplink tx, [2nn + nu, 2nn + 2nu) uplink rx.
 * Fills ids with those of c's kind that flow f crosses.
 */
static int
sub_ids (const fm_localize_t *loc, cand_t c, const fm_flow_ev_t *f, int ids[4])
{
    int ls = fm_topo_node_leaf (loc->topo, f->src);
    int ld = fm_topo_node_leaf (loc->topo, f->dst);
    bool cross = ls >= 0 && ld >= 0 && ls != ld && f->via >= 0;
    int nn = (int)loc->nn, nu = (int)loc->nu;
    int ut = cross ? fm_topo_uplink_find (loc->topo, ls, f->via) : -1;
    int ur = cross ? fm_topo_uplink_find (loc->topo, ld, f->via) : -1;
    int n = 0, leaf;

    switch (c.type) {
    case C_SPINE:
        if (ut >= 0) {
            ids[n++] = 2 * nn + ut;
        }
        if (ur >= 0) {
            ids[n++] = 2 * nn + nu + ur;
        }
        break;
    case C_LEAF_TX:
    case C_LEAF_RX:
    case C_LEAF_BOTH:
        if (ls == c.idx && c.type != C_LEAF_RX) {
            ids[n++] = f->src;
            if (ut >= 0) {
                ids[n++] = 2 * nn + ut;
            }
        }
        if (ld == c.idx && c.type != C_LEAF_TX) {
            ids[n++] = nn + f->dst;
            if (ur >= 0) {
                ids[n++] = 2 * nn + nu + ur;
            }
        }
        break;
    case C_UP_TX:
    case C_UP_RX:
    case C_UP_BOTH:
        leaf = fm_topo_uplink_leaf (loc->topo, c.idx);
        if (ls == leaf && c.type != C_UP_RX) {
            ids[n++] = f->src;
        }
        if (ld == leaf && c.type != C_UP_TX) {
            ids[n++] = nn + f->dst;
        }
        break;
    case C_NODE_TX:
    case C_NODE_RX:
    case C_NODE_BOTH:
        break;
    }
    return n;
}

/* The rx id paired with a tx id, or -1. */
static int sub_rx_of (const fm_localize_t *loc, int id)
{
    int nn = (int)loc->nn, nu = (int)loc->nu;

    if (id < nn) {
        return id + nn;
    }
    if (id >= 2 * nn && id < 2 * nn + nu) {
        return id + nu;
    }
    return -1;
}

static double part_gain (const stat_t *st, const fm_localize_params_t *p, bool use_loss)
{
    double lg, dg;

    stat_gain (st, p, &lg, &dg);
    return use_loss ? lg : dg;
}

/* The best explanation of an aggregate's flows by a few of its parts (nodes,
 * uplinks), chosen greedily, each extra part charged split_penalty. A finer
 * model always fits at least as well, so only a clear excess over the
 * aggregate's own gain means it pools separate faults (two bad uplinks of one
 * spine are not a bad spine, two bad nodes not a bad switch). Only a few parts
 * may stand in: when every part carries a share, the aggregate is the fault.
 */
static double refine_gain (fm_localize_t *loc,
                           const fm_flow_ev_t *flows,
                           size_t n,
                           const fm_localize_params_t *p,
                           cand_t c,
                           bool use_loss)
{
    size_t ntouched = 0;
    double sum = 0, best = 0;
    int ids[4];

    if (++loc->sub_cur == 0) {
        memset (loc->sub_stamp, 0, loc->nsub * sizeof (unsigned));
        loc->sub_cur = 1;
    }
    for (size_t i = 0; i < n; i++) {
        const fm_flow_ev_t *f = &flows[loc->sel[i]];
        int m = sub_ids (loc, c, f, ids);
        loc->sel_done[i] = 0;
        for (int j = 0; j < m; j++) {
            if (loc->sub_stamp[ids[j]] != loc->sub_cur) {
                loc->sub_stamp[ids[j]] = loc->sub_cur;
                loc->sub[ids[j]] = (stat_t){0};
                loc->sub_touched[ntouched++] = ids[j];
            }
            stat_add (&loc->sub[ids[j]], f, 1.0);
        }
    }
    size_t kmax = ntouched / 4 > 2 ? ntouched / 4 : 2;
    if (kmax > 8) {
        kmax = 8;
    }
    for (size_t k = 0; k < kmax; k++) {
        int pick = -1, pick_rx = -1;
        double pg = -1;
        for (size_t t = 0; t < ntouched; t++) {
            int id = loc->sub_touched[t];
            double g = part_gain (&loc->sub[id], p, use_loss);
            if (g > pg) {
                pg = g;
                pick = id;
                pick_rx = -1;
            }
            int rx = sub_rx_of (loc, id);
            if (rx >= 0 && loc->sub_stamp[rx] == loc->sub_cur) {
                stat_t both;
                stat_sum (&both, &loc->sub[id], &loc->sub[rx], NULL);
                g = part_gain (&both, p, use_loss);
                if (g > pg) {
                    pg = g;
                    pick = id;
                    pick_rx = rx;
                }
            }
        }
        if (pg < p->min_gain) {
            break;
        }
        sum += pg;
        if (sum - p->split_penalty * (double)k > best) {
            best = sum - p->split_penalty * (double)k;
        }
        for (size_t i = 0; i < n; i++) {
            const fm_flow_ev_t *f = &flows[loc->sel[i]];
            if (loc->sel_done[i]) {
                continue;
            }
            int m = sub_ids (loc, c, f, ids);
            bool member = false;
            for (int j = 0; j < m; j++) {
                member = member || ids[j] == pick || ids[j] == pick_rx;
            }
            if (member) {
                loc->sel_done[i] = 1;
                for (int j = 0; j < m; j++) {
                    stat_add (&loc->sub[ids[j]], f, -1.0);
                }
            }
        }
    }
    return best;
}

/* Whether a finer explanation beats an aggregate candidate whose dominant
 * evidence (loss or delay: a dead node inside a slow switch must not make the
 * switch look heterogeneous) has gain g.
 */
static bool split_better (fm_localize_t *loc,
                          const fm_flow_ev_t *flows,
                          size_t n,
                          const fm_localize_params_t *p,
                          cand_t c,
                          double g,
                          bool use_loss)
{
    if (c.type == C_NODE_TX || c.type == C_NODE_RX || c.type == C_NODE_BOTH) {
        return false;
    }
    return refine_gain (loc, flows, n, p, c, use_loss) > g;
}

/* Test the selected flows of a candidate; fill h and return true to accept. */
static bool evaluate (fm_localize_t *loc,
                      const fm_flow_ev_t *flows,
                      size_t n,
                      const fm_localize_params_t *p,
                      cand_t cand,
                      fm_hyp_t *h)
{
    stat_t st = {0};
    double cs = 0, ck = 0, czs = 0, czn = 0, cis = 0;
    size_t ntouched = 0;

    if (++loc->cur_stamp == 0) {
        memset (loc->stamp, 0, loc->nchild * sizeof (unsigned));
        loc->cur_stamp = 1;
    }
    for (size_t i = 0; i < n; i++) {
        const fm_flow_ev_t *f = &flows[loc->sel[i]];
        int ch = loc->sel_child[i];
        stat_add (&st, f, 1.0);
        cs += f->cur_sent;
        ck += f->cur_lost;
        czs += f->cur_zs;
        czn += f->cur_zn;
        cis += f->cur_infl_ns;
        if (loc->stamp[ch] != loc->cur_stamp) {
            loc->stamp[ch] = loc->cur_stamp;
            loc->child[ch] = (stat_t){0};
            loc->touched[ntouched++] = ch;
        }
        stat_add (&loc->child[ch], f, 1.0);
    }
    double lg, dg;
    double g = stat_gain (&st, p, &lg, &dg);
    if (g < p->min_gain) {
        return false;
    }
    bool use_loss = lg >= dg;
    double phat = st.s > 0 ? st.k / st.s : 0;
    double mu = st.zn > 0 ? st.zs / st.zn : 0;
    double expected = 0;
    int witnesses = 0, npeers = 0;
    for (int i = 0; i < FM_HYP_PEERS; i++) {
        h->peers[i] = -1;
    }
    for (size_t i = 0; i < ntouched; i++) {
        const stat_t *c = &loc->child[loc->touched[i]];
        bool pos;
        if (use_loss) {
            pos = c->k > 0;
            expected += 1.0 - pow (1.0 - phat, c->s);
        } else {
            if (c->zn <= 0) {
                continue;
            }
            pos = c->zs / c->zn >= mu / 2;
            expected += phi ((mu / 2) * sqrt (c->zn));
        }
        if (pos) {
            witnesses++;
            if (npeers < FM_HYP_PEERS) {
                h->peers[npeers++] = loc->touched[i];
            }
        }
    }
    if (witnesses < p->min_peers || witnesses < p->spread_ratio * expected) {
        return false;
    }
    if (split_better (loc, flows, n, p, cand, use_loss ? lg : dg, use_loss)) {
        return false;
    }
    h->gain = g;
    h->loss_gain = lg;
    h->delay_gain = dg;
    h->sent = st.s;
    h->lost = st.k;
    h->cur_sent = cs;
    h->cur_lost = ck;
    h->delay_ns = dg > 0 ? st.is / st.zn : 0;
    h->cur_gain = fm_localize_loss_llr (cs, ck, p->p0)
                  + fm_localize_delay_llr (czs, czn, cis, p->delay_min_ns);
    /* Still happening: the window alone is evidence, and of the same size as the
     * decayed estimate; stale evidence of an ended fault plus one noise loss is
     * not.
     */
    bool same = use_loss ? cs > 0 && ck / cs >= 0.25 * phat
                         : czn > 0 && st.zn > 0 && cis / czn >= 0.5 * (st.is / st.zn);
    h->current = h->cur_gain >= p->cur_min_gain && same;
    h->nflows = (int)n;
    h->witnesses = witnesses;
    h->expected = expected;
    h->nchildren = (int)ntouched;
    if (use_loss) {
        bool down = phat >= p->down_ratio || (cs > 0 && ck / cs >= p->down_ratio);
        h->cls = down ? FM_CLASS_DOWN : FM_CLASS_LOSS;
    } else {
        h->cls = FM_CLASS_DELAY;
    }
    return true;
}

static int build_index (fm_localize_t *loc, const fm_flow_ev_t *flows, size_t nflows)
{
    if (nflows > loc->flow_cap || !loc->src_list) {
        size_t cap = nflows ? nflows : 1;
        size_t *sl = malloc (cap * sizeof (*sl));
        size_t *dl = malloc (cap * sizeof (*dl));
        size_t *vl = malloc (cap * sizeof (*vl));
        size_t *se = malloc (cap * sizeof (*se));
        int *sc = malloc (cap * sizeof (*sc));
        unsigned char *sd = malloc (cap);
        if (!sl || !dl || !vl || !se || !sc || !sd) {
            free (sl);
            free (dl);
            free (vl);
            free (se);
            free (sc);
            free (sd);
            return -1;
        }
        free (loc->sel_done);
        loc->sel_done = sd;
        free (loc->src_list);
        free (loc->dst_list);
        free (loc->via_list);
        loc->via_list = vl;
        free (loc->sel);
        free (loc->sel_child);
        loc->src_list = sl;
        loc->dst_list = dl;
        loc->sel = se;
        loc->sel_child = sc;
    }
    loc->flow_cap = nflows;
    memset (loc->src_off, 0, (loc->nn + 2) * sizeof (size_t));
    memset (loc->dst_off, 0, (loc->nn + 2) * sizeof (size_t));
    memset (loc->via_off, 0, (loc->ns + 2) * sizeof (size_t));
    for (size_t i = 0; i < nflows; i++) {
        loc->src_off[flows[i].src + 2]++;
        loc->dst_off[flows[i].dst + 2]++;
        if (flows[i].via >= 0) {
            loc->via_off[flows[i].via + 2]++;
        }
    }
    for (size_t n = 2; n < loc->nn + 2; n++) {
        loc->src_off[n] += loc->src_off[n - 1];
        loc->dst_off[n] += loc->dst_off[n - 1];
    }
    for (size_t n = 2; n < loc->ns + 2; n++) {
        loc->via_off[n] += loc->via_off[n - 1];
    }
    for (size_t i = 0; i < nflows; i++) {
        loc->src_list[loc->src_off[flows[i].src + 1]++] = i;
        loc->dst_list[loc->dst_off[flows[i].dst + 1]++] = i;
        if (flows[i].via >= 0) {
            loc->via_list[loc->via_off[flows[i].via + 1]++] = i;
        }
    }
    return 0;
}

int fm_localize_run (fm_localize_t *loc,
                     fm_flow_ev_t *flows,
                     size_t nflows,
                     const fm_localize_params_t *p,
                     const fm_hyp_t **hyps)
{
    size_t nh = 0;

    if (!loc || (!flows && nflows) || !p || !hyps || p->p0 <= 0 || p->p0 >= 1) {
        errno = EINVAL;
        return -1;
    }
    for (size_t i = 0; i < nflows; i++) {
        const fm_flow_ev_t *f = &flows[i];
        if (f->src < 0 || (size_t)f->src >= loc->nn || f->dst < 0
            || (size_t)f->dst >= loc->nn || f->src == f->dst || f->via < -1
            || (f->via >= 0 && (size_t)f->via >= loc->ns) || !(f->sent >= 0)
            || !(f->lost >= 0) || f->lost > f->sent + 1e-9 || !(f->zn >= 0)
            || !isfinite (f->zs) || !isfinite (f->infl_ns) || !(f->cur_sent >= 0)
            || !(f->cur_lost >= 0) || !(f->cur_zn >= 0) || !isfinite (f->cur_zs)
            || !isfinite (f->cur_infl_ns)) {
            errno = EINVAL;
            return -1;
        }
    }
    if (build_index (loc, flows, nflows) < 0) {
        errno = ENOMEM;
        return -1;
    }
    memset (loc->node_tx, 0, loc->nn * sizeof (stat_t));
    memset (loc->node_rx, 0, loc->nn * sizeof (stat_t));
    memset (loc->leaf_tx, 0, loc->nl * sizeof (stat_t));
    memset (loc->leaf_rx, 0, loc->nl * sizeof (stat_t));
    memset (loc->leaf_in, 0, loc->nl * sizeof (stat_t));
    memset (loc->up_tx, 0, loc->nu * sizeof (stat_t));
    memset (loc->up_rx, 0, loc->nu * sizeof (stat_t));
    memset (loc->spine, 0, loc->ns * sizeof (stat_t));
    for (size_t i = 0; i < nflows; i++) {
        flows[i].explained = -1;
        flow_account (loc, &flows[i], 1.0);
    }
    loc->ncands = 0;
    static const struct {
        ctype_t type;
        int which; /* 0 nodes, 1 leaves, 2 uplinks, 3 spines */
    } kinds[] = {
        {C_NODE_TX, 0},
        {C_NODE_RX, 0},
        {C_NODE_BOTH, 0},
        {C_LEAF_TX, 1},
        {C_LEAF_RX, 1},
        {C_LEAF_BOTH, 1},
        {C_UP_TX, 2},
        {C_UP_RX, 2},
        {C_UP_BOTH, 2},
        {C_SPINE, 3},
    };
    for (size_t k = 0; k < sizeof (kinds) / sizeof (kinds[0]); k++) {
        size_t count = kinds[k].which == 0   ? loc->nn
                       : kinds[k].which == 1 ? loc->nl
                       : kinds[k].which == 2 ? loc->nu
                                             : loc->ns;
        for (size_t i = 0; i < count; i++) {
            cand_t c = {.type = kinds[k].type, .idx = (int)i};
            stat_t st;
            double lg, dg;
            cand_stats (loc, c, &st);
            if (!(st.k > 0 || st.zs > 0)) {
                continue;
            }
            double g = stat_gain (&st, p, &lg, &dg);
            if (g >= p->min_gain) {
                if (cand_push (loc, c.type, c.idx, g) < 0) {
                    errno = ENOMEM;
                    return -1;
                }
            }
        }
    }
    /* Best first, from a max-heap keyed by gain. Keys go stale as flows are
     * explained; gains only shrink then, so a popped candidate whose fresh gain
     * is below the next key goes back in. A rejected candidate waits for the
     * next acceptance, which may remove the flows that made it fail (a dead node
     * inside a slow switch), and is dropped after four rejections.
     */
    for (size_t i = loc->ncands / 2; i-- > 0;) {
        heap_down (loc->cands, loc->ncands, i);
    }
    size_t nblocked = 0;
    while (nh < p->max_hyps && loc->ncands > 0) {
        cand_t c = heap_pop (loc->cands, &loc->ncands);
        stat_t st;
        double lg, dg;
        cand_stats (loc, c, &st);
        double g = stat_gain (&st, p, &lg, &dg);
        if (g < p->min_gain) {
            continue;
        }
        if (loc->ncands > 0 && g < loc->cands[0].key) {
            c.key = g;
            heap_push (loc->cands, &loc->ncands, c);
            continue;
        }
        size_t n = select_flows (loc, flows, c);
        fm_hyp_t h = {0};
        if (!evaluate (loc, flows, n, p, c, &h)) {
            if (++c.tries < 4) {
                loc->blocked[nblocked++] = c;
            }
            continue;
        }
        hyp_kind (c, &h);
        if (nh == loc->hyps_cap) {
            size_t cap = loc->hyps_cap ? loc->hyps_cap * 2 : 16;
            fm_hyp_t *v = realloc (loc->hyps, cap * sizeof (*v));
            if (!v) {
                errno = ENOMEM;
                return -1;
            }
            loc->hyps = v;
            loc->hyps_cap = cap;
        }
        for (size_t i = 0; i < n; i++) {
            fm_flow_ev_t *f = &flows[loc->sel[i]];
            flow_account (loc, f, -1.0);
            f->explained = (int32_t)nh;
        }
        loc->hyps[nh++] = h;
        for (size_t i = 0; i < nblocked; i++) {
            cand_stats (loc, loc->blocked[i], &st);
            loc->blocked[i].key = stat_gain (&st, p, &lg, &dg);
            heap_push (loc->cands, &loc->ncands, loc->blocked[i]);
        }
        nblocked = 0;
    }
    *hyps = loc->hyps;
    return (int)nh;
}
