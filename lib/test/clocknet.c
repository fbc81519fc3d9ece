/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vclock.h"
#include "clocknet.h"

/* complete graph on n nodes with theta = x_v - x_u + noise */
static size_t complete (unsigned n,
                        const double *x,
                        const double *dr,
                        double noise,
                        fm_vclock_rng_t *rng,
                        fm_clocknet_edge_t *e)
{
    size_t m = 0;

    for (unsigned u = 0; u < n; u++) {
        for (unsigned v = u + 1; v < n; v++) {
            e[m].u = u;
            e[m].v = v;
            e[m].offset_ns = x[v] - x[u] + noise * fm_vclock_rng_normal (rng);
            e[m].drift_ppb = dr[v] - dr[u];
            e[m].bound_ns = noise > 0 ? noise : 10.;
            m++;
        }
    }
    return m;
}

static void test_exact (void **state)
{
    double x[5] = {1000., 1100., 950., 1030., 1007.};
    double dr[5] = {5., -3., 12., 0., 7.5};
    fm_clocknet_edge_t e[10];
    fm_clocknet_node_t nd[5];
    fm_clocknet_resid_t r[10];
    fm_clocknet_info_t info;
    fm_vclock_rng_t rng;
    size_t m;

    fm_vclock_rng_seed (&rng, 1);
    m = complete (5, x, dr, 0., &rng, e);
    /* one edge measured the other way round */
    e[3].u = e[3].v;
    e[3].v = 0;
    e[3].offset_ns = -e[3].offset_ns;
    e[3].drift_ppb = -e[3].drift_ppb;
    assert_int_equal (fm_clocknet_solve (5, e, m, NULL, nd, r, &info, NULL), 0);
    /* the reference is node 0 */
    assert_true (nd[0].valid);
    assert_true (nd[0].offset_ns == 0. && nd[0].drift_ppb == 0.
                 && nd[0].bound_ns == 0.);
    for (int k = 0; k < 5; k++) {
        assert_true (nd[k].valid);
        assert_true (fabs (nd[k].offset_ns - (x[k] - x[0])) < 1e-6);
        assert_true (fabs (nd[k].drift_ppb - (dr[k] - dr[0])) < 1e-6);
    }
    for (size_t i = 0; i < m; i++) {
        assert_true (fabs (r[i].residual_ns) < 1e-6);
        assert_true (fabs (r[i].drift_residual_ppb) < 1e-6);
        assert_true (r[i].weight == 1.);
    }
    assert_int_equal (info.reached, 5);
    assert_true (info.scale < 1e-6);
}

/* A known asymmetric edge: +600 ns on 2-4 among 20 ns noise. It has the
 * largest residual, is discounted, and does not drag the nodes it joins.
 */
static void test_asymmetric_edge (void **state)
{
    enum { N = 8 };
    double x[N], dr[N] = {0};
    fm_clocknet_edge_t e[N * (N - 1) / 2];
    fm_clocknet_resid_t r[N * (N - 1) / 2];
    fm_clocknet_node_t nd[N];
    fm_vclock_rng_t rng;
    size_t m, bad = 0, worst = 0;

    fm_vclock_rng_seed (&rng, 2);
    for (int k = 0; k < N; k++) {
        x[k] = 1e6 * fm_vclock_rng_normal (&rng);
    }
    m = complete (N, x, dr, 20., &rng, e);
    for (size_t i = 0; i < m; i++) {
        if (e[i].u == 2 && e[i].v == 4) {
            bad = i;
            e[i].offset_ns += 600.;
        }
    }
    assert_int_equal (fm_clocknet_solve (N, e, m, NULL, nd, r, NULL, NULL), 0);
    for (size_t i = 0; i < m; i++) {
        if (fabs (r[i].residual_ns) > fabs (r[worst].residual_ns)) {
            worst = i;
        }
    }
    assert_int_equal (worst, bad);
    assert_true (r[bad].residual_ns > 450.);
    assert_true (r[bad].score > 20.);
    assert_true (r[bad].weight < 0.2);
    for (size_t i = 0; i < m; i++) {
        if (i != bad) {
            assert_true (fabs (r[i].residual_ns) < 100.);
        }
    }
    for (int k = 0; k < N; k++) {
        assert_true (fabs (nd[k].offset_ns - (x[k] - x[0])) < 40.);
    }

    /* without the robust rounds the edge still stands out, but drags more */
    fm_clocknet_opts_t o;
    fm_clocknet_opts_default (&o);
    o.rounds = 0;
    assert_int_equal (fm_clocknet_solve (N, e, m, &o, nd, r, NULL, NULL), 0);
    for (size_t i = 0; i < m; i++) {
        if (i != bad) {
            assert_true (fabs (r[i].residual_ns) < fabs (r[bad].residual_ns));
        }
    }
    assert_true (r[bad].weight == 1.);
}

static void test_disconnected (void **state)
{
    fm_clocknet_edge_t e[] = {
        {.u = 0, .v = 1, .offset_ns = 10., .bound_ns = 5.},
        {.u = 1, .v = 2, .offset_ns = 20., .bound_ns = 5.},
        {.u = 3, .v = 4, .offset_ns = 99., .bound_ns = 5.},
    };
    fm_clocknet_node_t nd[6];
    fm_clocknet_info_t info;

    assert_int_equal (fm_clocknet_solve (6, e, 3, NULL, nd, NULL, &info, NULL), 0);
    assert_int_equal (info.reached, 3);
    assert_true (nd[0].valid && nd[1].valid && nd[2].valid);
    assert_false (nd[3].valid || nd[4].valid || nd[5].valid);
    assert_true (fabs (nd[2].offset_ns - 30.) < 1e-9);
    /* a tree: no loops, so no scale from the data */
    assert_true (info.scale == 0.);
    /* the bound grows with the distance in the approximation's terms */
    assert_true (nd[1].bound_ns > 0. && nd[2].bound_ns > 0.);

    /* no edges at all: node 0 alone */
    assert_int_equal (fm_clocknet_solve (3, NULL, 0, NULL, nd, NULL, &info, NULL), 0);
    assert_int_equal (info.reached, 1);
    assert_true (nd[0].valid && !nd[1].valid);
}

static void test_errors (void **state)
{
    fm_clocknet_edge_t e = {.u = 0, .v = 1, .offset_ns = 1., .bound_ns = 1.};
    fm_clocknet_node_t nd[2] = {{.valid = true, .offset_ns = 42.}};
    fm_clocknet_opts_t o;
    fm_error_t err;

    struct {
        fm_clocknet_edge_t e;
        const char *msg;
    } bad[] = {
        {{.u = 0, .v = 2, .bound_ns = 1.}, "bad nodes"},
        {{.u = 1, .v = 1, .bound_ns = 1.}, "bad nodes"},
        {{.u = 0, .v = 1, .bound_ns = 0.}, "bound"},
        {{.u = 0, .v = 1, .bound_ns = -1.}, "bound"},
        {{.u = 0, .v = 1, .bound_ns = 1., .offset_ns = NAN}, "non-finite"},
        {{.u = 0, .v = 1, .bound_ns = INFINITY}, "non-finite"},
    };
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        errno = 0;
        assert_int_equal (
            fm_clocknet_solve (2, &bad[i].e, 1, NULL, nd, NULL, NULL, &err), -1);
        assert_int_equal (errno, EINVAL);
        assert_non_null (strstr (err.text, bad[i].msg));
        assert_true (nd[0].offset_ns == 42.); /* nothing written */
    }
    assert_int_equal (fm_clocknet_solve (0, &e, 1, NULL, nd, NULL, NULL, &err), -1);
    assert_int_equal (fm_clocknet_solve (2, &e, 1, NULL, NULL, NULL, NULL, &err), -1);
    assert_int_equal (fm_clocknet_solve (2, NULL, 1, NULL, nd, NULL, NULL, &err), -1);
    fm_clocknet_opts_default (&o);
    o.tol = 0.;
    assert_int_equal (fm_clocknet_solve (2, &e, 1, &o, nd, NULL, NULL, &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_true (nd[0].offset_ns == 42.);
}

struct graph {
    unsigned n;
    size_t m;
    fm_clocknet_edge_t *e;
    double *x, *err_pair;
};

/* n nodes, each probing k distinct random peers (edges deduplicated) */
static void
random_graph (struct graph *g, unsigned n, unsigned k, double noise, uint64_t seed)
{
    fm_vclock_rng_t rng;
    unsigned char *seen = calloc ((size_t)n * n, 1);

    assert_non_null (seen);
    fm_vclock_rng_seed (&rng, seed);
    g->n = n;
    g->m = 0;
    g->e = calloc ((size_t)n * k, sizeof (*g->e));
    g->x = calloc (n, sizeof (*g->x));
    g->err_pair = calloc ((size_t)n * k, sizeof (*g->err_pair));
    assert_non_null (g->e);
    assert_non_null (g->x);
    assert_non_null (g->err_pair);
    for (unsigned i = 0; i < n; i++) {
        g->x[i] = 1e7 * fm_vclock_rng_normal (&rng);
    }
    for (unsigned u = 0; u < n; u++) {
        for (unsigned j = 0; j < k; j++) {
            unsigned v = (unsigned)(fm_vclock_rng_u64 (&rng) % n);
            if (v == u || seen[(size_t)u * n + v]) {
                continue;
            }
            seen[(size_t)u * n + v] = seen[(size_t)v * n + u] = 1;
            g->err_pair[g->m] = noise * fm_vclock_rng_normal (&rng);
            g->e[g->m] = (fm_clocknet_edge_t){
                .u = u,
                .v = v,
                .bound_ns = noise,
                .offset_ns = g->x[v] - g->x[u] + g->err_pair[g->m],
            };
            g->m++;
        }
    }
    free (seen);
}

static void graph_free (struct graph *g)
{
    free (g->e);
    free (g->x);
    free (g->err_pair);
}

static int cmp_double (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 1000 nodes, 10 peers each: converges, and the pairwise error shrinks by
 * about sqrt(degree / 2), as loop consistency predicts.
 */
static void test_scale_1000 (void **state)
{
    struct graph g;
    fm_clocknet_node_t *nd;
    fm_clocknet_info_t info;
    double *ep, *en;

    random_graph (&g, 1000, 10, 50., 3);
    nd = calloc (g.n, sizeof (*nd));
    ep = calloc (g.m, sizeof (*ep));
    en = calloc (g.m, sizeof (*en));
    assert_non_null (nd);
    assert_non_null (ep);
    assert_non_null (en);
    assert_int_equal (fm_clocknet_solve (g.n, g.e, g.m, NULL, nd, NULL, &info, NULL),
                      0);
    assert_int_equal (info.reached, 1000);
    assert_true (info.iterations < 2000);
    /* Gaussian noise matching the bounds: the scale is about 1 */
    assert_true (info.scale > 0.8 && info.scale < 1.2);
    for (size_t i = 0; i < g.m; i++) {
        const fm_clocknet_edge_t *e = &g.e[i];
        double truth = g.x[e->v] - g.x[e->u];
        ep[i] = fabs (e->offset_ns - truth);
        en[i] = fabs (nd[e->v].offset_ns - nd[e->u].offset_ns - truth);
    }
    qsort (ep, g.m, sizeof (*ep), cmp_double);
    qsort (en, g.m, sizeof (*en), cmp_double);
    print_message ("# 1000 nodes, %zu edges, %u CG iterations: p99 %.1f -> %.1f ns\n",
                   g.m,
                   info.iterations,
                   ep[g.m * 99 / 100],
                   en[g.m * 99 / 100]);
    assert_true (en[g.m * 99 / 100] < ep[g.m * 99 / 100] / 2.5);
    /* and the node bounds cover the node errors nearly always */
    unsigned covered = 0;
    for (unsigned k = 0; k < g.n; k++) {
        covered +=
            fabs (nd[k].offset_ns - (g.x[k] - g.x[0])) <= 3 * nd[k].bound_ns + 1e-9;
    }
    assert_true (covered >= 990);
    free (nd);
    free (ep);
    free (en);
    graph_free (&g);
}

/* Clocks minutes apart (virtual clocks, a node off NTP): the answer is still
 * right to the nanosecond, the tolerance acting on the noise, not the offsets.
 */
static void test_large_offsets (void **state)
{
    struct graph g;
    fm_clocknet_node_t *nd;
    double worst = 0.;

    random_graph (&g, 300, 6, 0., 5);
    for (unsigned k = 0; k < g.n; k++) {
        g.x[k] *= 1e5; /* sd 1e12 ns: 17 minutes */
    }
    for (size_t i = 0; i < g.m; i++) {
        g.e[i].offset_ns = g.x[g.e[i].v] - g.x[g.e[i].u];
        g.e[i].bound_ns = 10.;
    }
    nd = calloc (g.n, sizeof (*nd));
    assert_non_null (nd);
    assert_int_equal (fm_clocknet_solve (g.n, g.e, g.m, NULL, nd, NULL, NULL, NULL), 0);
    for (unsigned k = 0; k < g.n; k++) {
        worst = fmax (worst, fabs (nd[k].offset_ns - (g.x[k] - g.x[0])));
    }
    /* doubles carry about 1e-4 ns at 1e12 ns */
    assert_true (worst < 0.01);
    free (nd);
    graph_free (&g);
}

static void test_no_convergence (void **state)
{
    struct graph g;
    fm_clocknet_node_t *nd;
    fm_clocknet_opts_t o;
    fm_error_t err;

    random_graph (&g, 200, 4, 50., 4);
    nd = calloc (g.n, sizeof (*nd));
    assert_non_null (nd);
    fm_clocknet_opts_default (&o);
    o.max_iter = 2;
    errno = 0;
    assert_int_equal (fm_clocknet_solve (g.n, g.e, g.m, &o, nd, NULL, NULL, &err), -1);
    assert_int_equal (errno, ERANGE);
    assert_non_null (strstr (err.text, "converge"));
    assert_false (nd[0].valid);
    free (nd);
    graph_free (&g);
}

static void test_combine_rules (void **state)
{
    fm_clocknet_cand_t c[2] = {
        {.offset_ns = 100.,
         .drift_ppb = 10.,
         .bound_ns = 20.,
         .drift_bound_ppb = 5.,
         .weight = 1. / 400},
        {.offset_ns = 130.,
         .drift_ppb = 14.,
         .bound_ns = 40.,
         .drift_bound_ppb = 10.,
         .weight = 1. / 1600},
    };
    fm_clocknet_cand_t m, untouched;

    assert_int_equal (fm_clocknet_combine (c, 2, &m), 0);
    /* weights 4 : 1 */
    assert_true (fabs (m.offset_ns - 106.) < 1e-9);
    assert_true (fabs (m.drift_ppb - 10.8) < 1e-9);
    assert_true (fabs (m.weight - 1. / 320) < 1e-12);
    /* the first candidate's bound, widened by the distance moved, is tighter */
    assert_true (fabs (m.bound_ns - 26.) < 1e-9);
    assert_true (fabs (m.drift_bound_ppb - 5.8) < 1e-9);
    /* one candidate is itself */
    assert_int_equal (fm_clocknet_combine (c + 1, 1, &m), 0);
    assert_true (fabs (m.offset_ns - 130.) < 1e-9 && fabs (m.drift_ppb - 14.) < 1e-9);
    assert_true (fabs (m.bound_ns - 40.) < 1e-9
                 && fabs (m.drift_bound_ppb - 10.) < 1e-9);

    memset (&untouched, 0x5a, sizeof (untouched));
    m = untouched;
    errno = 0;
    assert_int_equal (fm_clocknet_combine (c, 0, &m), -1);
    assert_int_equal (errno, EINVAL);
    c[1].weight = 0.;
    assert_int_equal (fm_clocknet_combine (c, 2, &m), -1);
    c[1].weight = INFINITY;
    assert_int_equal (fm_clocknet_combine (c, 2, &m), -1);
    c[1].weight = 1e308;
    c[0].weight = 1e308; /* a sum beyond the doubles */
    assert_int_equal (fm_clocknet_combine (c, 2, &m), -1);
    c[0].weight = c[1].weight = 1.;
    c[1].bound_ns = -1.;
    assert_int_equal (fm_clocknet_combine (c, 2, &m), -1);
    c[1].bound_ns = 1.;
    c[1].drift_ppb = NAN;
    assert_int_equal (fm_clocknet_combine (c, 2, &m), -1);
    c[1].drift_ppb = 0.;
    c[1].drift_bound_ppb = INFINITY;
    assert_int_equal (fm_clocknet_combine (c, 2, &m), -1);
    assert_memory_equal (&m, &untouched, sizeof (m));
}

/* Whenever every candidate's bound holds, the combination's does. */
static void test_combine_bound_holds (void **state)
{
    fm_vclock_rng_t rng;

    fm_vclock_rng_seed (&rng, 7);
    for (int trial = 0; trial < 20000; trial++) {
        fm_clocknet_cand_t c[6], m;
        unsigned n = 1 + (unsigned)(fm_vclock_rng_u64 (&rng) % 6);
        double truth = 1e6 * fm_vclock_rng_normal (&rng), min_bound = INFINITY;
        for (unsigned k = 0; k < n; k++) {
            double b = 1. + 500. * fm_vclock_rng_uniform (&rng);
            c[k] = (fm_clocknet_cand_t){
                .offset_ns = truth + b * (2 * fm_vclock_rng_uniform (&rng) - 1),
                .drift_ppb = 3. + b / 100 * (2 * fm_vclock_rng_uniform (&rng) - 1),
                .bound_ns = b,
                .drift_bound_ppb = b / 100,
                /* weights unrelated to the bounds: the rule must not care */
                .weight = fm_vclock_rng_uniform (&rng),
            };
            min_bound = fmin (min_bound, b);
        }
        assert_int_equal (fm_clocknet_combine (c, n, &m), 0);
        assert_true (fabs (m.offset_ns - truth) <= m.bound_ns + 1e-6);
        assert_true (fabs (m.drift_ppb - 3.) <= m.drift_bound_ppb + 1e-9);
        assert_true (m.bound_ns >= min_bound - 1e-9 || n == 1);
    }
}

/* The combination repeated on every node of a complete graph, each taking
 * its peers' latest as the agents do: it settles, and it beats each node's
 * own edge to the reference. Edges carry a role bias that the mean of an
 * edge's two ends cancels (doc/clock.md).
 */
static void test_combine_iterated (void **state)
{
    enum { N = 8, SEEDS = 200, ROUNDS = 40 };
    double sq_direct = 0., sq_net = 0., moved = 0.;
    fm_vclock_rng_t rng;

    fm_vclock_rng_seed (&rng, 11);
    for (int seed = 0; seed < SEEDS; seed++) {
        double x[N], meas[N][N], rho[N], bound[N];
        bool have[N];
        for (int i = 0; i < N; i++) {
            x[i] = 1e6 * fm_vclock_rng_normal (&rng);
        }
        /* meas[i][j]: i's estimate of x_j - x_i, 20 ns noise, +30 ns bias */
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < N; j++) {
                meas[i][j] = x[j] - x[i] + 30. + 20. * fm_vclock_rng_normal (&rng);
            }
            have[i] = i == 0;
            rho[i] = bound[i] = 0.;
        }
        for (int round = 0; round < ROUNDS; round++) {
            double next[N], next_bound[N];
            for (int i = 1; i < N; i++) {
                fm_clocknet_cand_t c[N], m;
                unsigned n = 0;
                for (int j = 0; j < N; j++) {
                    double edge = (meas[i][j] - meas[j][i]) / 2, b = 60.;
                    if (j == i || !have[j]) {
                        continue;
                    }
                    c[n++] = (fm_clocknet_cand_t){
                        .offset_ns = edge + rho[j],
                        .bound_ns = b + bound[j],
                        .weight = 1. / (b * b + bound[j] * bound[j]),
                    };
                }
                assert_int_equal (fm_clocknet_combine (c, n, &m), 0);
                next[i] = m.offset_ns;
                next_bound[i] = m.bound_ns;
            }
            for (int i = 1; i < N; i++) {
                if (round == ROUNDS - 1) {
                    moved = fmax (moved, fabs (next[i] - rho[i]));
                }
                rho[i] = next[i];
                bound[i] = next_bound[i];
                have[i] = true;
            }
        }
        for (int i = 1; i < N; i++) {
            double truth = x[0] - x[i];
            sq_direct += pow (meas[i][0] - truth, 2);
            sq_net += pow (rho[i] - truth, 2);
        }
    }
    sq_direct = sqrt (sq_direct / (SEEDS * (N - 1)));
    sq_net = sqrt (sq_net / (SEEDS * (N - 1)));
    print_message ("# rms error: own edge %.1f ns, combined %.1f ns; last round moved "
                   "%.2g ns\n",
                   sq_direct,
                   sq_net,
                   moved);
    assert_true (moved < 0.01);
    /* the bias alone is 30 ns on the own edge; the combination has none */
    assert_true (sq_net < 15.);
    assert_true (sq_net < sq_direct / 2);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_exact),
        cmocka_unit_test (test_asymmetric_edge),
        cmocka_unit_test (test_disconnected),
        cmocka_unit_test (test_errors),
        cmocka_unit_test (test_scale_1000),
        cmocka_unit_test (test_large_offsets),
        cmocka_unit_test (test_no_convergence),
        cmocka_unit_test (test_combine_rules),
        cmocka_unit_test (test_combine_bound_holds),
        cmocka_unit_test (test_combine_iterated),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
