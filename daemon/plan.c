/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "vclock.h"

/* A leaf switch's share of the job (or the whole job without a tree). */
typedef struct {
    uint32_t *members; /* by rank; rank 0 is the leaf's clock reference */
    size_t size;
    uint32_t *offsets; /* a permutation of 1 .. size-1: the ring's rotation */
    int leaf;          /* topology id, -1 without a tree */
    char name[FM_TOPO_NAME_MAX + 1];
    int *spines, *uplinks; /* sorted by spine id */
    size_t nspines;
} group_t;

/* A fixed cross slot: the leaves laid end to end in a random order, each
 * leaf's members rotated by a random amount, and every position mapped to
 * the one `shift` further on. With shift in [gmax, n - gmax] no node lands in
 * its own leaf; each leaf's probes spread over the leaves `shift` away.
 */
struct xslot {
    uint32_t *gorder;   /* the leaves in order */
    uint32_t *start;    /* start[t]: position of gorder[t]'s first member */
    uint32_t *start_of; /* by group */
    uint32_t *rot;      /* by group */
    uint32_t shift;
};

/* One epoch's targets, and the probers they imply, as offsets into v. */
typedef struct {
    uint32_t *toff, *tv, *poff, *pv;
} edges_t;

struct fm_plan {
    fm_plan_params_t p;
    size_t n, m, gmax;
    group_t *g;
    uint32_t *group_of, *rank_of;
    /* the job-wide circulant: a random order of the nodes (so that a leaf's
     * probers come from many leaves) and a permutation of the offsets 1 .. n-1 */
    uint32_t *order, *pos_of, *offsets;
    /* the fixed cross slots, each a bijection onto other leaves */
    struct xslot *xs;
    size_t nxs;
    int32_t *parent;
    unsigned *depth;
    bool all_pairs;
    uint64_t epoch;
    edges_t cur;
    /* coverage of the current epoch, by topology id; -1: not on a job path */
    size_t ntopo_uplinks, ntopo_spines;
    double *up_cover, *sp_cover;
    int *up_group, *up_spine; /* uplink id -> group, spine id */
    char (*spine_name)[FM_TOPO_NAME_MAX + 1];
};

void fm_plan_params_default (fm_plan_params_t *p)
{
    *p = (fm_plan_params_t){.peers = 10,
                            .local = 4,
                            .rotate_local = 1,
                            .rotate_cross = 2,
                            .all_pairs_max = 16,
                            .clock_fanout = 16,
                            .min_cover = 3,
                            .seed = 0};
}

static void edges_free (edges_t *e)
{
    free (e->toff);
    free (e->tv);
    free (e->poff);
    free (e->pv);
    *e = (edges_t){0};
}

void fm_plan_destroy (fm_plan_t *pl)
{
    if (!pl) {
        return;
    }
    int saved = errno;
    for (size_t i = 0; pl->g && i < pl->m; i++) {
        free (pl->g[i].members);
        free (pl->g[i].offsets);
        free (pl->g[i].spines);
        free (pl->g[i].uplinks);
    }
    free (pl->g);
    free (pl->group_of);
    free (pl->rank_of);
    free (pl->order);
    free (pl->pos_of);
    free (pl->offsets);
    for (size_t j = 0; pl->xs && j < pl->nxs; j++) {
        free (pl->xs[j].gorder);
        free (pl->xs[j].start);
        free (pl->xs[j].start_of);
        free (pl->xs[j].rot);
    }
    free (pl->xs);
    free (pl->parent);
    free (pl->depth);
    edges_free (&pl->cur);
    free (pl->up_cover);
    free (pl->sp_cover);
    free (pl->up_group);
    free (pl->up_spine);
    free (pl->spine_name);
    free (pl);
    errno = saved;
}

static void shuffle (uint32_t *v, size_t n, fm_vclock_rng_t *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(fm_vclock_rng_u64 (rng) % i);
        uint32_t t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static int check_params (const fm_plan_params_t *p, size_t n, fm_error_t *err)
{
    if (n == 0) {
        errno = EINVAL;
        return fm_errprintf (err, "a plan needs at least one node");
    }
    if (n > FM_PLAN_MAX_NODES) {
        errno = E2BIG;
        return fm_errprintf (err,
                             "%zu nodes: a job of at most %d nodes is supported",
                             n,
                             FM_PLAN_MAX_NODES);
    }
    if (p->peers < 3 || p->peers > FM_PLAN_PEERS_MAX || p->local < 1
        || p->local > p->peers - 2 || p->rotate_local > p->local || p->rotate_cross < 1
        || p->rotate_cross > p->peers - 1 - p->local || p->clock_fanout < 2
        || p->min_cover < 1 || p->all_pairs_max > FM_PLAN_PEERS_MAX) {
        errno = EINVAL;
        return fm_errprintf (
            err,
            "plan parameters out of range: peers %u (3..%d), "
            "local %u (1..peers-2), rotating %u local (<= local) "
            "and %u across (1..peers-1-local), clock fanout %u (>= 2), "
            "all-pairs max %u (<= %d), min cover %u (>= 1)",
            p->peers,
            FM_PLAN_PEERS_MAX,
            p->local,
            p->rotate_local,
            p->rotate_cross,
            p->clock_fanout,
            p->all_pairs_max,
            FM_PLAN_PEERS_MAX,
            p->min_cover);
    }
    return 0;
}

/* Group the nodes by leaf (in order of first appearance: node 0's first). */
static int make_groups (fm_plan_t *pl,
                        const fm_topo_t *topo,
                        const char *const *nodes,
                        fm_error_t *err)
{
    bool tree = topo && fm_topo_nleaves (topo) > 0;
    size_t nl = tree ? fm_topo_nleaves (topo) : 0;
    int *leaf_group = NULL, *leaf_of = calloc (pl->n, sizeof (*leaf_of));

    if (!leaf_of || (tree && !(leaf_group = malloc (nl * sizeof (*leaf_group))))) {
        goto nomem;
    }
    for (size_t l = 0; l < nl; l++) {
        leaf_group[l] = -1;
    }
    pl->m = 0;
    for (size_t i = 0; i < pl->n; i++) {
        int leaf = -1;
        if (tree) {
            int node = fm_topo_node_find (topo, nodes[i]);
            if ((leaf = fm_topo_node_leaf (topo, node)) < 0) {
                errno = EINVAL;
                fm_errprintf (err,
                              "the topology does not place job node %s under a "
                              "leaf switch",
                              nodes[i]);
                goto fail;
            }
            if (leaf_group[leaf] < 0) {
                leaf_group[leaf] = (int)pl->m++;
            }
            pl->group_of[i] = (uint32_t)leaf_group[leaf];
        } else {
            pl->group_of[i] = 0;
            pl->m = 1;
        }
        leaf_of[i] = leaf;
    }
    if (!(pl->g = calloc (pl->m, sizeof (*pl->g)))) {
        goto nomem;
    }
    for (size_t i = 0; i < pl->n; i++) {
        group_t *g = &pl->g[pl->group_of[i]];
        if (g->size == 0) {
            g->leaf = leaf_of[i];
            snprintf (g->name,
                      sizeof (g->name),
                      "%s",
                      tree ? fm_topo_leaf_name (topo, g->leaf) : "");
        }
        g->size++;
    }
    for (size_t j = 0; j < pl->m; j++) {
        group_t *g = &pl->g[j];
        if (!(g->members = malloc (g->size * sizeof (*g->members)))
            || (g->size > 1
                && !(g->offsets = malloc ((g->size - 1) * sizeof (*g->offsets))))) {
            goto nomem;
        }
        if (g->size > pl->gmax) {
            pl->gmax = g->size;
        }
        g->size = 0;
    }
    for (size_t i = 0; i < pl->n; i++) {
        group_t *g = &pl->g[pl->group_of[i]];
        g->members[g->size++] = (uint32_t)i;
    }
    free (leaf_of);
    free (leaf_group);
    return 0;
nomem:
    errno = ENOMEM;
    fm_errprintf (err, "out of memory");
fail:
    free (leaf_of);
    free (leaf_group);
    return -1;
}

/* The seeded orders: groups after the root's, members after the root, each
 * group's ring offsets. Then ranks, clock parents and depths.
 */
static void make_orders (fm_plan_t *pl)
{
    fm_vclock_rng_t rng;
    unsigned f = pl->p.clock_fanout;

    fm_vclock_rng_seed (&rng, pl->p.seed ^ 0x706c616e2d763100ULL);
    if (pl->m > 2) {
        /* group 0 holds node 0 and stays first: the clock tree's top */
        for (size_t i = pl->m - 1; i > 1; i--) {
            size_t j = 1 + (size_t)(fm_vclock_rng_u64 (&rng) % i);
            group_t t = pl->g[i];
            pl->g[i] = pl->g[j];
            pl->g[j] = t;
        }
    }
    for (size_t j = 0; j < pl->m; j++) {
        group_t *g = &pl->g[j];
        if (j == 0) {
            shuffle (g->members + 1, g->size - 1, &rng); /* node 0 stays rank 0 */
        } else {
            shuffle (g->members, g->size, &rng);
        }
        for (size_t o = 1; o < g->size; o++) {
            g->offsets[o - 1] = (uint32_t)o;
        }
        if (g->size > 1) {
            shuffle (g->offsets, g->size - 1, &rng);
        }
        for (size_t r = 0; r < g->size; r++) {
            pl->group_of[g->members[r]] = (uint32_t)j;
            pl->rank_of[g->members[r]] = (uint32_t)r;
        }
    }
    for (size_t j = 0; j < pl->m; j++) {
        const group_t *g = &pl->g[j];
        for (size_t r = 0; r < g->size; r++) {
            uint32_t i = g->members[r];
            int32_t parent;
            if (pl->all_pairs) {
                parent = i == 0 ? -1 : 0;
            } else if (r > 0) {
                parent = (int32_t)g->members[(r - 1) / f];
            } else if (j > 0) {
                parent = (int32_t)pl->g[(j - 1) / f].members[0];
            } else {
                parent = -1;
            }
            pl->parent[i] = parent;
            pl->depth[i] = parent < 0 ? 0 : pl->depth[parent] + 1;
        }
    }
    for (uint32_t i = 0; i < pl->n; i++) {
        pl->order[i] = i;
    }
    shuffle (pl->order, pl->n, &rng);
    for (uint32_t p = 0; p < pl->n; p++) {
        pl->pos_of[pl->order[p]] = p;
    }
    for (size_t o = 1; o < pl->n; o++) {
        pl->offsets[o - 1] = (uint32_t)o;
    }
    shuffle (pl->offsets, pl->n - 1, &rng);
}

static int make_xslots (fm_plan_t *pl)
{
    fm_vclock_rng_t rng;
    size_t own = pl->p.peers - 1 - pl->p.rotate_cross;

    /* fm_plan_check tries more peers: slots for all of them while small */
    pl->nxs = pl->m <= 4096 ? FM_PLAN_PEERS_MAX : own;
    if (pl->m < 2 || pl->nxs == 0) {
        pl->nxs = 0;
        return 0;
    }
    if (!(pl->xs = calloc (pl->nxs, sizeof (*pl->xs)))) {
        return -1;
    }
    fm_vclock_rng_seed (&rng, pl->p.seed ^ 0x782d736c6f747300ULL);
    for (size_t j = 0; j < pl->nxs; j++) {
        struct xslot *x = &pl->xs[j];
        uint32_t pos = 0;
        if (!(x->gorder = malloc (pl->m * sizeof (uint32_t)))
            || !(x->start = malloc (pl->m * sizeof (uint32_t)))
            || !(x->start_of = malloc (pl->m * sizeof (uint32_t)))
            || !(x->rot = malloc (pl->m * sizeof (uint32_t)))) {
            return -1;
        }
        for (uint32_t t = 0; t < pl->m; t++) {
            x->gorder[t] = t;
        }
        shuffle (x->gorder, pl->m, &rng);
        for (uint32_t t = 0; t < pl->m; t++) {
            uint32_t g = x->gorder[t];
            x->start[t] = x->start_of[g] = pos;
            x->rot[g] = (uint32_t)(fm_vclock_rng_u64 (&rng) % pl->g[g].size);
            pos += (uint32_t)pl->g[g].size;
        }
        if (pl->n >= 2 * pl->gmax) {
            x->shift =
                (uint32_t)(pl->gmax
                           + fm_vclock_rng_u64 (&rng) % (pl->n - 2 * pl->gmax + 1));
        } else {
            x->shift = (uint32_t)(1 + fm_vclock_rng_u64 (&rng) % (pl->n - 1));
        }
    }
    return 0;
}

static uint32_t xslot_target (const fm_plan_t *pl, const struct xslot *x, uint32_t i)
{
    uint32_t g = pl->group_of[i], size = (uint32_t)pl->g[g].size;
    uint32_t p = x->start_of[g] + (pl->rank_of[i] + x->rot[g]) % size;
    size_t lo = 0, hi = pl->m;

    p = (uint32_t)((p + x->shift) % pl->n);
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (x->start[mid] <= p) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    const group_t *h = &pl->g[x->gorder[lo]];
    uint32_t q = p - x->start[lo];
    return h->members[(q + (uint32_t)h->size - x->rot[x->gorder[lo]]) % h->size];
}

/* Each group's spines (and uplinks) that lead to another of the job's leaves. */
static int make_paths (fm_plan_t *pl, const fm_topo_t *topo)
{
    size_t ns = fm_topo_nspines (topo), nu = fm_topo_nuplinks (topo);
    unsigned *groups_under = calloc (ns ? ns : 1, sizeof (*groups_under));

    pl->ntopo_spines = ns;
    pl->ntopo_uplinks = nu;
    if (!groups_under || !(pl->sp_cover = malloc ((ns ? ns : 1) * sizeof (double)))
        || !(pl->up_cover = malloc ((nu ? nu : 1) * sizeof (double)))
        || !(pl->up_group = malloc ((nu ? nu : 1) * sizeof (int)))
        || !(pl->up_spine = malloc ((nu ? nu : 1) * sizeof (int)))
        || !(pl->spine_name = calloc (ns ? ns : 1, sizeof (*pl->spine_name)))) {
        free (groups_under);
        return -1;
    }
    for (size_t u = 0; u < nu; u++) {
        pl->up_group[u] = pl->up_spine[u] = -1;
    }
    for (size_t s = 0; s < ns; s++) {
        snprintf (pl->spine_name[s],
                  sizeof (pl->spine_name[s]),
                  "%s",
                  fm_topo_spine_name (topo, (int)s));
        for (size_t j = 0; j < pl->m; j++) {
            if (fm_topo_uplink_find (topo, pl->g[j].leaf, (int)s) >= 0) {
                groups_under[s]++;
            }
        }
    }
    for (size_t j = 0; j < pl->m; j++) {
        group_t *g = &pl->g[j];
        for (size_t s = 0; s < ns; s++) {
            g->nspines += groups_under[s] >= 2
                          && fm_topo_uplink_find (topo, g->leaf, (int)s) >= 0;
        }
        if (g->nspines == 0) {
            continue;
        }
        if (!(g->spines = malloc (g->nspines * sizeof (int)))
            || !(g->uplinks = malloc (g->nspines * sizeof (int)))) {
            free (groups_under);
            return -1;
        }
        g->nspines = 0;
        for (size_t s = 0; s < ns; s++) {
            int u = fm_topo_uplink_find (topo, g->leaf, (int)s);
            if (groups_under[s] >= 2 && u >= 0) {
                g->spines[g->nspines] = (int)s;
                g->uplinks[g->nspines++] = u;
                pl->up_group[u] = (int)j;
                pl->up_spine[u] = (int)s;
            }
        }
    }
    for (size_t s = 0; s < ns; s++) {
        pl->sp_cover[s] = groups_under[s] >= 2 ? 0 : -1;
    }
    free (groups_under);
    return 0;
}

static int cmp_str (const void *a, const void *b)
{
    return strcmp (*(const char *const *)a, *(const char *const *)b);
}

/* A node named twice would probe itself. */
static int check_unique (const char *const *nodes, size_t n, fm_error_t *err)
{
    const char **v = malloc (n * sizeof (*v));

    if (!v) {
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    memcpy (v, nodes, n * sizeof (*v));
    qsort (v, n, sizeof (*v), cmp_str);
    for (size_t i = 1; i < n; i++) {
        if (strcmp (v[i - 1], v[i]) == 0) {
            errno = EINVAL;
            fm_errprintf (err, "node %s is listed twice", v[i]);
            free (v);
            return -1;
        }
    }
    free (v);
    return 0;
}

fm_plan_t *fm_plan_create (const fm_topo_t *topo,
                           const char *const *nodes,
                           size_t n,
                           const fm_plan_params_t *p,
                           fm_error_t *err)
{
    fm_plan_t *pl;

    if (check_params (p, n, err) < 0) {
        return NULL;
    }
    if (!(pl = calloc (1, sizeof (*pl)))) {
        goto nomem;
    }
    pl->p = *p;
    pl->n = n;
    pl->all_pairs = n - 1 <= p->all_pairs_max;
    if (!(pl->group_of = malloc (n * sizeof (*pl->group_of)))
        || !(pl->rank_of = malloc (n * sizeof (*pl->rank_of)))
        || !(pl->parent = malloc (n * sizeof (*pl->parent)))
        || !(pl->depth = malloc (n * sizeof (*pl->depth)))
        || !(pl->order = malloc (n * sizeof (*pl->order)))
        || !(pl->pos_of = malloc (n * sizeof (*pl->pos_of)))
        || !(pl->offsets = malloc (n * sizeof (*pl->offsets)))) {
        goto nomem;
    }
    if (make_groups (pl, topo, nodes, err) < 0) {
        fm_plan_destroy (pl);
        return NULL;
    }
    if (check_unique (nodes, n, err) < 0) {
        fm_plan_destroy (pl);
        return NULL;
    }
    make_orders (pl);
    if (make_xslots (pl) < 0) {
        goto nomem;
    }
    if (topo && fm_topo_nleaves (topo) > 0 && make_paths (pl, topo) < 0) {
        goto nomem;
    }
    if (fm_plan_set_epoch (pl, 0) < 0) {
        goto nomem;
    }
    return pl;
nomem:
    fm_plan_destroy (pl);
    errno = ENOMEM;
    fm_errprintf (err, "out of memory");
    return NULL;
}

static bool add_target (uint32_t *v, size_t *k, uint32_t self, uint32_t x)
{
    if (x == self) {
        return false;
    }
    for (size_t i = 0; i < *k; i++) {
        if (v[i] == x) {
            return false;
        }
    }
    v[(*k)++] = x;
    return true;
}

/* The ring slots of a node of group g with `peers` targets. */
static size_t ring_slots (const fm_plan_t *pl, const group_t *g, unsigned peers)
{
    size_t slots = pl->m == 1 ? peers - 1 : pl->p.local;

    return slots < g->size - 1 ? slots : g->size - 1;
}

/* A circulant's offsets in epoch e: the first `slots - rot` of the
 * permutation always (their pairs keep their history: baselines, clock
 * fits), and a window of `rot` over the rest that moves every epoch.
 * Fills out[0..slots); returns the epochs the window takes to come round.
 */
static uint64_t circulant (const uint32_t *offsets,
                           size_t noffsets,
                           size_t slots,
                           size_t rot,
                           uint64_t e,
                           uint32_t *out)
{
    size_t fixed, pool;

    rot = rot < slots ? rot : slots;
    fixed = slots - rot;
    pool = noffsets - fixed;
    for (size_t j = 0; j < fixed; j++) {
        out[j] = offsets[j];
    }
    for (size_t j = 0; j < rot; j++) {
        out[fixed + j] = offsets[fixed + (e * rot + j) % pool];
    }
    return rot ? (pool + rot - 1) / rot : 1;
}

static size_t ring_rotating (const fm_plan_t *pl)
{
    return pl->m == 1 ? pl->p.rotate_cross : pl->p.rotate_local;
}

/* Node i's targets at epoch e with `peers` of them: its clock parent, its
 * leaf's ring, the fixed cross slots (other leaves, diverse), and the
 * rotating window of the job-wide circulant (a random order of all the
 * nodes), which brings every pair round. Each ring offset, slot and
 * circulant offset adds exactly one prober to every node.
 */
static size_t
fill (const fm_plan_t *pl, unsigned peers, uint64_t e, uint32_t i, uint32_t *v)
{
    const group_t *g = &pl->g[pl->group_of[i]];
    uint32_t r = pl->rank_of[i], o[FM_PLAN_PEERS_MAX];
    size_t k = 0;

    if (pl->all_pairs) {
        for (uint32_t j = 0; j < pl->n; j++) {
            add_target (v, &k, i, j);
        }
        return k;
    }
    if (pl->parent[i] >= 0) {
        add_target (v, &k, i, (uint32_t)pl->parent[i]);
    }
    size_t slots = ring_slots (pl, g, peers);
    if (slots > 0) {
        circulant (g->offsets, g->size - 1, slots, ring_rotating (pl), e, o);
    }
    for (size_t j = 0; j < slots; j++) {
        add_target (v, &k, i, g->members[(r + o[j]) % g->size]);
    }
    if (pl->m < 2) {
        return k;
    }
    /* ring slots a small leaf cannot use go across */
    size_t cross = peers - 1 - slots, rot = pl->p.rotate_cross;
    for (size_t j = 0; j < cross - rot; j++) {
        if (j < pl->nxs) {
            add_target (v, &k, i, xslot_target (pl, &pl->xs[j], i));
        } else {
            add_target (v, &k, i, pl->order[(pl->pos_of[i] + pl->offsets[j]) % pl->n]);
        }
    }
    circulant (pl->offsets, pl->n - 1, rot, rot, e, o);
    for (size_t j = 0; j < rot; j++) {
        add_target (v, &k, i, pl->order[(pl->pos_of[i] + o[j]) % pl->n]);
    }
    /* slots that met a node already listed: the circulant's next offsets,
     * each another bijection (at most `peers` more probers anywhere) */
    for (size_t j = rot; k < peers && j < rot + peers && j < pl->n - 1; j++) {
        uint32_t x = pl->offsets[(e * rot + j) % (pl->n - 1)];
        add_target (v, &k, i, pl->order[(pl->pos_of[i] + x) % pl->n]);
    }
    return k;
}

static int build (const fm_plan_t *pl, unsigned peers, uint64_t e, edges_t *out)
{
    size_t cap = pl->all_pairs ? pl->n - 1 : peers;
    size_t total = 0;
    edges_t x = {0};

    if (!(x.toff = malloc ((pl->n + 1) * sizeof (*x.toff)))
        || !(x.poff = calloc (pl->n + 1, sizeof (*x.poff)))
        || !(x.tv = malloc ((pl->n * cap + 1) * sizeof (*x.tv)))) {
        goto nomem;
    }
    for (uint32_t i = 0; i < pl->n; i++) {
        x.toff[i] = (uint32_t)total;
        total += fill (pl, peers, e, i, x.tv + total);
    }
    x.toff[pl->n] = (uint32_t)total;
    if (!(x.pv = malloc ((total + 1) * sizeof (*x.pv)))) {
        goto nomem;
    }
    for (size_t t = 0; t < total; t++) {
        x.poff[x.tv[t] + 1]++;
    }
    for (size_t i = 0; i < pl->n; i++) {
        x.poff[i + 1] += x.poff[i];
    }
    /* fill in prober order; poff[i] walks up and is restored after */
    for (uint32_t i = 0; i < pl->n; i++) {
        for (uint32_t t = x.toff[i]; t < x.toff[i + 1]; t++) {
            x.pv[x.poff[x.tv[t]]++] = i;
        }
    }
    for (size_t i = pl->n; i > 0; i--) {
        x.poff[i] = x.poff[i - 1];
    }
    x.poff[0] = 0;
    *out = x;
    return 0;
nomem:
    edges_free (&x);
    errno = ENOMEM;
    return -1;
}

/* Covers of one epoch's edges into up[] and sp[] (by topology id): each
 * prober adds what its pairs cross, at most 1 per uplink or spine.
 */
static int cover (const fm_plan_t *pl, const edges_t *x, double *up, double *sp)
{
    size_t nu = pl->ntopo_uplinks, ns = pl->ntopo_spines;
    double *acc = NULL;
    int *touched = NULL;
    size_t ntouched = 0;

    for (size_t u = 0; u < nu; u++) {
        up[u] = pl->up_group[u] >= 0 ? 0 : -1;
    }
    for (size_t s = 0; s < ns; s++) {
        sp[s] = pl->sp_cover[s] >= 0 ? 0 : -1;
    }
    if (pl->m < 2) {
        return 0;
    }
    /* [0, nu) uplinks, [nu, nu + ns) spines */
    if (!(acc = calloc (nu + ns, sizeof (*acc)))
        || !(touched = malloc ((nu + ns) * sizeof (*touched)))) {
        free (acc);
        errno = ENOMEM;
        return -1;
    }
    for (uint32_t i = 0; i < pl->n; i++) {
        const group_t *a = &pl->g[pl->group_of[i]];
        for (uint32_t t = x->toff[i]; t < x->toff[i + 1]; t++) {
            const group_t *b = &pl->g[pl->group_of[x->tv[t]]];
            size_t common = 0, p, q;
            for (int pass = 0; pass < 2 && a != b; pass++) {
                for (p = 0, q = 0; p < a->nspines && q < b->nspines;) {
                    if (a->spines[p] < b->spines[q]) {
                        p++;
                    } else if (a->spines[p] > b->spines[q]) {
                        q++;
                    } else if (pass == 0) {
                        common++, p++, q++;
                    } else {
                        int ids[3] = {
                            a->uplinks[p], b->uplinks[q], (int)nu + a->spines[p]};
                        for (int w = 0; w < 3; w++) {
                            if (acc[ids[w]] == 0) {
                                touched[ntouched++] = ids[w];
                            }
                            acc[ids[w]] += 1.0 / (double)common;
                        }
                        p++, q++;
                    }
                }
                if (common == 0) {
                    break;
                }
            }
        }
        for (size_t z = 0; z < ntouched; z++) {
            int id = touched[z];
            double v = acc[id] < 1 ? acc[id] : 1;
            if ((size_t)id < nu) {
                up[id] += v;
            } else {
                sp[id - (int)nu] += v;
            }
            acc[id] = 0;
        }
        ntouched = 0;
    }
    free (acc);
    free (touched);
    return 0;
}

int fm_plan_set_epoch (fm_plan_t *pl, uint64_t e)
{
    edges_t x;

    if (build (pl, pl->p.peers, e, &x) < 0) {
        return -1;
    }
    edges_free (&pl->cur);
    pl->cur = x;
    pl->epoch = e;
    if (pl->up_cover && cover (pl, &pl->cur, pl->up_cover, pl->sp_cover) < 0) {
        return -1;
    }
    return 0;
}

uint64_t fm_plan_epoch (const fm_plan_t *pl)
{
    return pl->epoch;
}

size_t fm_plan_nnodes (const fm_plan_t *pl)
{
    return pl->n;
}

size_t fm_plan_targets (const fm_plan_t *pl, size_t i, const uint32_t **v)
{
    if (i >= pl->n) {
        *v = NULL;
        return 0;
    }
    *v = pl->cur.tv + pl->cur.toff[i];
    return pl->cur.toff[i + 1] - pl->cur.toff[i];
}

size_t fm_plan_probers (const fm_plan_t *pl, size_t i, const uint32_t **v)
{
    if (i >= pl->n) {
        *v = NULL;
        return 0;
    }
    *v = pl->cur.pv + pl->cur.poff[i];
    return pl->cur.poff[i + 1] - pl->cur.poff[i];
}

int fm_plan_parent (const fm_plan_t *pl, size_t i)
{
    return i < pl->n ? pl->parent[i] : -1;
}

unsigned fm_plan_depth (const fm_plan_t *pl, size_t i)
{
    return i < pl->n ? pl->depth[i] : 0;
}

uint64_t fm_plan_cycle (const fm_plan_t *pl)
{
    uint32_t o[FM_PLAN_PEERS_MAX];
    uint64_t c = 1, x;

    if (pl->all_pairs) {
        return 1;
    }
    for (size_t j = 0; j < pl->m; j++) {
        const group_t *g = &pl->g[j];
        size_t slots = g->size > 1 ? ring_slots (pl, g, pl->p.peers) : 0;
        if (slots > 0) {
            x = circulant (g->offsets, g->size - 1, slots, ring_rotating (pl), 0, o);
            c = x > c ? x : c;
        }
    }
    if (pl->m >= 2) {
        x = circulant (
            pl->offsets, pl->n - 1, pl->p.rotate_cross, pl->p.rotate_cross, 0, o);
        c = x > c ? x : c;
    }
    return c;
}

/* Coverage summary of covers up[] and sp[]. */
static void summarize (const fm_plan_t *pl,
                       const double *up,
                       const double *sp,
                       fm_plan_coverage_t *c)
{
    *c = (fm_plan_coverage_t){.uplink_min = -1, .spine_min = -1, .worst_cover = -1};
    for (size_t u = 0; up && u < pl->ntopo_uplinks; u++) {
        if (up[u] < 0) {
            continue;
        }
        c->nuplinks++;
        if (c->uplink_min < 0 || up[u] < c->uplink_min) {
            c->uplink_min = up[u];
        }
        if (c->worst_cover < 0 || up[u] < c->worst_cover) {
            c->worst_cover = up[u];
            snprintf (c->worst,
                      sizeof (c->worst),
                      "%s-%s",
                      pl->g[pl->up_group[u]].name,
                      pl->spine_name[pl->up_spine[u]]);
        }
    }
    for (size_t s = 0; sp && s < pl->ntopo_spines; s++) {
        if (sp[s] < 0) {
            continue;
        }
        c->nspines++;
        if (c->spine_min < 0 || sp[s] < c->spine_min) {
            c->spine_min = sp[s];
        }
        if (c->worst_cover < 0 || sp[s] < c->worst_cover) {
            c->worst_cover = sp[s];
            snprintf (c->worst, sizeof (c->worst), "%s", pl->spine_name[s]);
        }
    }
}

void fm_plan_coverage (const fm_plan_t *pl, fm_plan_coverage_t *c)
{
    summarize (pl, pl->up_cover, pl->sp_cover, c);
}

double fm_plan_uplink_cover (const fm_plan_t *pl, int uplink)
{
    return pl->up_cover && uplink >= 0 && (size_t)uplink < pl->ntopo_uplinks
               ? pl->up_cover[uplink]
               : -1;
}

double fm_plan_spine_cover (const fm_plan_t *pl, int spine)
{
    return pl->sp_cover && spine >= 0 && (size_t)spine < pl->ntopo_spines
               ? pl->sp_cover[spine]
               : -1;
}

int fm_plan_check (const fm_plan_t *pl, fm_error_t *err)
{
    fm_plan_coverage_t c;
    double *up, *sp;
    unsigned enough = 0;

    fm_plan_coverage (pl, &c);
    if (c.worst_cover < 0 || c.worst_cover >= pl->p.min_cover) {
        return 0;
    }
    up = malloc ((pl->ntopo_uplinks + 1) * sizeof (*up));
    sp = malloc ((pl->ntopo_spines + 1) * sizeof (*sp));
    for (unsigned peers = pl->p.peers + 1; up && sp && peers <= FM_PLAN_PEERS_MAX;
         peers++) {
        edges_t x;
        fm_plan_coverage_t cc;
        if (build (pl, peers, pl->epoch, &x) < 0) {
            break;
        }
        int rc = cover (pl, &x, up, sp);
        edges_free (&x);
        if (rc < 0) {
            break;
        }
        summarize (pl, up, sp, &cc);
        if (cc.worst_cover >= pl->p.min_cover) {
            enough = peers;
            break;
        }
    }
    free (up);
    free (sp);
    errno = ERANGE;
    if (enough) {
        return fm_errprintf (err,
                             "%s is crossed by %.1f independent probing pairs per "
                             "window, fewer than %u; %u peers per node would cover it",
                             c.worst,
                             c.worst_cover,
                             pl->p.min_cover,
                             enough);
    }
    return fm_errprintf (err,
                         "%s is crossed by %.1f independent probing pairs per window, "
                         "fewer than %u, and no plan of up to %d peers per node "
                         "covers it: too few of the job's nodes on one side",
                         c.worst,
                         c.worst_cover,
                         pl->p.min_cover,
                         FM_PLAN_PEERS_MAX);
}
