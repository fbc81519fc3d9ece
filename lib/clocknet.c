/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clocknet.h"

struct net {
    unsigned n;
    size_t m;
    const fm_clocknet_edge_t *e;
    size_t *row;            /* CSR over incidences: row[k] .. row[k + 1] */
    size_t *cur;            /* fill cursors while building */
    size_t *inc;            /* edge index of each incidence */
    double *w;              /* current weight per edge */
    double *diag;           /* weighted degree, the Jacobi preconditioner */
    double *b;              /* right-hand side */
    double *base[2];        /* offset and drift along a tree from node 0 */
    double *x[2];           /* corrections to base, solved for */
    double *r, *z, *p, *ap; /* CG work */
    bool *reach;            /* connected to node 0 */
    unsigned iterations;
};

void fm_clocknet_opts_default (fm_clocknet_opts_t *opts)
{
    if (opts) {
        opts->tol = 1e-10;
        opts->max_iter = 0;
        opts->rounds = 20;
        opts->huber_k = 2.;
    }
}

static void net_free (struct net *g)
{
    free (g->row);
    free (g->cur);
    free (g->inc);
    free (g->w);
    free (g->b);
    free (g->reach);
}

static int net_alloc (struct net *g)
{
    size_t n = g->n;

    g->row = calloc (n + 1, sizeof (*g->row));
    g->cur = calloc (n, sizeof (*g->cur));
    g->inc = calloc (2 * g->m, sizeof (*g->inc));
    g->w = calloc (g->m, sizeof (*g->w));
    g->b = calloc (10 * n, sizeof (*g->b));
    g->reach = calloc (n, sizeof (*g->reach));
    if (!g->row || !g->cur || !g->inc || !g->w || !g->b || !g->reach) {
        net_free (g);
        errno = ENOMEM;
        return -1;
    }
    g->diag = g->b + n;
    g->base[0] = g->diag + n;
    g->base[1] = g->base[0] + n;
    g->x[0] = g->base[1] + n;
    g->x[1] = g->x[0] + n;
    g->r = g->x[1] + n;
    g->z = g->r + n;
    g->p = g->z + n;
    g->ap = g->p + n;
    return 0;
}

static void net_build (struct net *g)
{
    for (size_t i = 0; i < g->m; i++) {
        g->row[g->e[i].u + 1]++;
        g->row[g->e[i].v + 1]++;
    }
    for (unsigned k = 0; k < g->n; k++) {
        g->row[k + 1] += g->row[k];
        g->cur[k] = g->row[k];
    }
    for (size_t i = 0; i < g->m; i++) {
        g->inc[g->cur[g->e[i].u]++] = i;
        g->inc[g->cur[g->e[i].v]++] = i;
    }
}

static unsigned other (const struct net *g, size_t edge, unsigned k)
{
    return g->e[edge].u == k ? g->e[edge].v : g->e[edge].u;
}

/* Breadth-first from node 0, the cursors as the queue: marks what node 0
 * reaches and accumulates the edge values along the tree it walks. The solve
 * then works on the data minus this tree solution, values at the scale of the
 * measurement noise rather than of the clocks' offsets (seconds, for virtual
 * clocks), so that its relative tolerance means nanoseconds.
 */
static unsigned net_reach (struct net *g)
{
    size_t head = 0, tail = 0;

    g->reach[0] = true;
    g->cur[tail++] = 0;
    while (head < tail) {
        unsigned k = (unsigned)g->cur[head++];
        for (size_t j = g->row[k]; j < g->row[k + 1]; j++) {
            const fm_clocknet_edge_t *e = &g->e[g->inc[j]];
            unsigned o = other (g, g->inc[j], k);
            double sign = e->v == o ? 1. : -1.;

            if (!g->reach[o]) {
                g->reach[o] = true;
                g->base[0][o] = g->base[0][k] + sign * e->offset_ns;
                g->base[1][o] = g->base[1][k] + sign * e->drift_ppb;
                g->cur[tail++] = o;
            }
        }
    }
    return (unsigned)tail;
}

/* edge i's value less what the tree solution already explains */
static double reduced (const struct net *g, int which, size_t i)
{
    const fm_clocknet_edge_t *e = &g->e[i];
    double th = which ? e->drift_ppb : e->offset_ns;

    return th - (g->base[which][e->v] - g->base[which][e->u]);
}

/* y = L x with the current weights */
static void laplacian (const struct net *g, const double *x, double *y)
{
    for (unsigned k = 0; k < g->n; k++) {
        double s = 0.;
        for (size_t j = g->row[k]; j < g->row[k + 1]; j++) {
            size_t e = g->inc[j];
            s += g->w[e] * (x[k] - x[other (g, e, k)]);
        }
        y[k] = s;
    }
}

static double dot (const double *a, const double *b, unsigned n)
{
    double s = 0.;

    for (unsigned k = 0; k < n; k++) {
        s += a[k] * b[k];
    }
    return s;
}

/* Jacobi-preconditioned CG on L x = b, from the x given. L is singular (the
 * constants of every component), but b sums to zero on each component, so
 * the system is consistent and CG stays within the range of L.
 */
static int cg (struct net *g, const double *b, double *x, double tol, unsigned max_iter)
{
    unsigned n = g->n;
    double bn = sqrt (dot (b, b, n)), rz, rz_new;

    for (unsigned k = 0; k < n; k++) {
        g->diag[k] = 0.;
        for (size_t j = g->row[k]; j < g->row[k + 1]; j++) {
            g->diag[k] += g->w[g->inc[j]];
        }
    }
    laplacian (g, x, g->ap);
    for (unsigned k = 0; k < n; k++) {
        g->r[k] = b[k] - g->ap[k];
        g->z[k] = g->diag[k] > 0 ? g->r[k] / g->diag[k] : 0.;
        g->p[k] = g->z[k];
    }
    rz = dot (g->r, g->z, n);
    for (unsigned it = 0; it < max_iter; it++) {
        double alpha, pap;

        if (sqrt (dot (g->r, g->r, n)) <= tol * bn || rz == 0.) {
            return 0;
        }
        laplacian (g, g->p, g->ap);
        pap = dot (g->p, g->ap, n);
        if (!(pap > 0.)) {
            return 0; /* the residual lies in the null space: nothing left */
        }
        alpha = rz / pap;
        for (unsigned k = 0; k < n; k++) {
            x[k] += alpha * g->p[k];
            g->r[k] -= alpha * g->ap[k];
            g->z[k] = g->diag[k] > 0 ? g->r[k] / g->diag[k] : 0.;
        }
        rz_new = dot (g->r, g->z, n);
        for (unsigned k = 0; k < n; k++) {
            g->p[k] = g->z[k] + rz_new / rz * g->p[k];
        }
        rz = rz_new;
        g->iterations++;
    }
    return sqrt (dot (g->r, g->r, n)) <= tol * bn ? 0 : -1;
}

/* which: 0 offset, 1 drift */
static int solve (struct net *g, int which, double tol, unsigned max_iter)
{
    memset (g->b, 0, g->n * sizeof (*g->b));
    for (size_t i = 0; i < g->m; i++) {
        double th = reduced (g, which, i);
        g->b[g->e[i].v] += g->w[i] * th;
        g->b[g->e[i].u] -= g->w[i] * th;
    }
    return cg (g, g->b, g->x[which], tol, max_iter);
}

static double resid_of (const struct net *g, int which, size_t i)
{
    const fm_clocknet_edge_t *e = &g->e[i];

    return reduced (g, which, i) - (g->x[which][e->v] - g->x[which][e->u]);
}

static int cmp_double (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 1.4826 median |r / bound|: the typical normalised residual as a standard
 * deviation, blind to the few edges that are far off. Floored so that exact
 * data (residuals at rounding level) do not turn rounding into outliers.
 */
static int robust_scale (const struct net *g, double *scale)
{
    double *z;

    if (g->m == 0) {
        *scale = 1.;
        return 0;
    }
    if (!(z = malloc (g->m * sizeof (*z)))) {
        return -1;
    }
    for (size_t i = 0; i < g->m; i++) {
        z[i] = fabs (resid_of (g, 0, i)) / g->e[i].bound_ns;
    }
    qsort (z, g->m, sizeof (*z), cmp_double);
    *scale = fmax (1.4826 * z[g->m / 2], 0.1);
    free (z);
    return 0;
}

static int
check_edges (unsigned n, const fm_clocknet_edge_t *edges, size_t m, fm_error_t *err)
{
    for (size_t i = 0; i < m; i++) {
        const fm_clocknet_edge_t *e = &edges[i];

        if (e->u >= n || e->v >= n || e->u == e->v) {
            errno = EINVAL;
            return fm_errprintf (err, "edge %zu: bad nodes %u-%u", i, e->u, e->v);
        }
        if (!isfinite (e->offset_ns) || !isfinite (e->drift_ppb)
            || !isfinite (e->bound_ns) || !(e->bound_ns > 0.)) {
            errno = EINVAL;
            return fm_errprintf (err, "edge %zu: non-finite value or bound <= 0", i);
        }
    }
    return 0;
}

int fm_clocknet_solve (unsigned n,
                       const fm_clocknet_edge_t *edges,
                       size_t n_edges,
                       const fm_clocknet_opts_t *opts,
                       fm_clocknet_node_t *nodes,
                       fm_clocknet_resid_t *resid,
                       fm_clocknet_info_t *info,
                       fm_error_t *err)
{
    fm_clocknet_opts_t def;
    struct net g = {.n = n, .m = n_edges, .e = edges};
    unsigned max_iter, reached;
    double chi2 = 0., scale = 1., dof, w0 = 0., rscale = 1.;
    size_t m_reached = 0;

    if (!opts) {
        fm_clocknet_opts_default (&def);
        opts = &def;
    }
    if (n == 0 || n > FM_CLOCKNET_NODES_MAX || n_edges > FM_CLOCKNET_EDGES_MAX || !nodes
        || (n_edges > 0 && !edges)) {
        errno = EINVAL;
        return fm_errprintf (err, "clock network: bad sizes or arguments");
    }
    if (!(opts->tol > 0.) || !(opts->huber_k > 0.) || opts->rounds > 100) {
        errno = EINVAL;
        return fm_errprintf (err, "clock network: bad options");
    }
    if (check_edges (n, edges, n_edges, err) < 0) {
        return -1;
    }
    if (net_alloc (&g) < 0) {
        return fm_errprintf (err, "clock network: out of memory");
    }
    max_iter = opts->max_iter ? opts->max_iter : 10 * n + 100;
    net_build (&g);
    reached = net_reach (&g);
    for (size_t i = 0; i < n_edges; i++) {
        g.w[i] = 1. / (edges[i].bound_ns * edges[i].bound_ns);
    }
    if (solve (&g, 0, opts->tol, max_iter) < 0) {
        goto noconv;
    }
    /* Huber M-estimation by iteratively reweighted least squares: an edge
     * whose normalised residual z = |r| / (bound s) exceeds k keeps the
     * weight it would have at exactly k, so its pull stops growing. s is a
     * robust scale of the normalised residuals (1.4826 MAD, from the first
     * solve): the bounds are bounds, often a few times the typical error,
     * and k counts in typical errors.
     */
    if (robust_scale (&g, &rscale) < 0) {
        net_free (&g);
        errno = ENOMEM;
        return fm_errprintf (err, "clock network: out of memory");
    }
    for (unsigned round = 0; round < opts->rounds; round++) {
        double change = 0.;

        for (size_t i = 0; i < n_edges; i++) {
            double b = edges[i].bound_ns;
            double z = fabs (resid_of (&g, 0, i)) / (b * rscale);
            double w = 1. / (b * b);

            if (z > opts->huber_k) {
                w *= opts->huber_k / z;
            }
            change = fmax (change, fabs (w - g.w[i]) * b * b);
            g.w[i] = w;
        }
        if (change < 1e-3) {
            break;
        }
        if (solve (&g, 0, opts->tol, max_iter) < 0) {
            goto noconv;
        }
    }
    if (solve (&g, 1, opts->tol, max_iter) < 0) {
        goto noconv;
    }

    for (size_t i = 0; i < n_edges; i++) {
        if (g.reach[edges[i].u]) {
            double r = resid_of (&g, 0, i);
            chi2 += g.w[i] * r * r;
            m_reached++;
        }
    }
    /* more loops than unknowns: the fit says how well the bounds describe
     * the scatter, and bounds that were too optimistic are scaled up
     */
    dof = (double)m_reached - (double)(reached - 1);
    if (dof > 0) {
        scale = sqrt (chi2 / dof);
    }
    for (size_t j = g.row[0]; j < g.row[1]; j++) {
        w0 += g.w[g.inc[j]];
    }
    for (unsigned k = 0; k < n; k++) {
        fm_clocknet_node_t *nd = &nodes[k];
        double wk = g.diag[k];

        nd->valid = g.reach[k];
        if (!nd->valid) {
            nd->offset_ns = nd->drift_ppb = nd->bound_ns = 0.;
            continue;
        }
        nd->offset_ns = g.base[0][k] + g.x[0][k] - g.x[0][0];
        nd->drift_ppb = g.base[1][k] + g.x[1][k] - g.x[1][0];
        /* the variance of x_k - x_0 is the effective resistance between them,
         * about 1/W_k + 1/W_0 on a well-connected graph (W: weighted degree)
         */
        nd->bound_ns =
            k == 0 ? 0. : sqrt (1. / wk + 1. / w0) * (scale > 1. ? scale : 1.);
    }
    if (resid) {
        for (size_t i = 0; i < n_edges; i++) {
            resid[i].residual_ns = resid_of (&g, 0, i);
            resid[i].drift_residual_ppb = resid_of (&g, 1, i);
            resid[i].score = fabs (resid[i].residual_ns) / edges[i].bound_ns;
            resid[i].weight = g.w[i] * edges[i].bound_ns * edges[i].bound_ns;
        }
    }
    if (info) {
        info->iterations = g.iterations;
        info->reached = reached;
        info->scale = dof > 0 ? scale : 0.;
        info->robust_scale = rscale;
    }
    net_free (&g);
    return 0;
noconv:
    net_free (&g);
    errno = ERANGE;
    return fm_errprintf (err, "clock network: conjugate gradients did not converge");
}

int fm_clocknet_combine (const fm_clocknet_cand_t *cand,
                         size_t n,
                         fm_clocknet_cand_t *out)
{
    fm_clocknet_cand_t m = {0};

    if (n == 0) {
        errno = EINVAL;
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        const fm_clocknet_cand_t *c = &cand[k];
        if (!isfinite (c->offset_ns) || !isfinite (c->drift_ppb)
            || !(c->bound_ns >= 0. && c->bound_ns < INFINITY)
            || !(c->drift_bound_ppb >= 0. && c->drift_bound_ppb < INFINITY)
            || !(c->weight > 0. && c->weight < INFINITY)) {
            errno = EINVAL;
            return -1;
        }
        m.weight += c->weight;
        m.offset_ns += c->weight * c->offset_ns;
        m.drift_ppb += c->weight * c->drift_ppb;
    }
    if (!(m.weight < INFINITY)) {
        errno = EINVAL;
        return -1;
    }
    m.offset_ns /= m.weight;
    m.drift_ppb /= m.weight;
    m.bound_ns = m.drift_bound_ppb = INFINITY;
    for (size_t k = 0; k < n; k++) {
        const fm_clocknet_cand_t *c = &cand[k];
        m.bound_ns = fmin (m.bound_ns, c->bound_ns + fabs (m.offset_ns - c->offset_ns));
        m.drift_bound_ppb = fmin (
            m.drift_bound_ppb, c->drift_bound_ppb + fabs (m.drift_ppb - c->drift_ppb));
    }
    *out = m;
    return 0;
}
