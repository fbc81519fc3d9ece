/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

/* clock-sim: the clock estimators and the network effect on simulated
 * clocks. N nodes, each with a virtual clock (offset, drift, random-walk
 * wander); each node probes K random peers with coded pairs in both
 * directions through paths with queueing (exponential, a heavy Pareto tail,
 * occasional millisecond outliers), timestamp noise and a few asymmetric
 * (degraded) paths. Prints p50/p99 |estimated - true| pairwise offset error
 * of the pairwise Huygens fits, of the network effect over them, and of the
 * naive min-RTT exchange for reference. Exits 1 unless the network effect
 * cuts the p99 at least 2x (the acceptance figure).
 */

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "vclock.h"
#include "clocknet.h"
#include "fmtime.h"

#define T0 1796000000000000000LL /* a CLOCK_REALTIME-sized origin */
#define GRID_NS 1000000LL        /* clock samples every 1 ms, interpolated */

typedef struct {
    unsigned nodes, peers;
    uint64_t seed;
    double window_s;
    double period_ms; /* one coded pair per direction per period, per edge */
    double gap_ns;    /* coded pair send gap */
    double guard_ns;
    double owd_min_us, owd_max_us;
    double p_idle;     /* chance a probe meets an empty queue */
    double queue_us;   /* mean of the exponential queueing */
    double p_heavy;    /* chance of a Pareto(alpha 1.5) delay instead */
    double heavy_us;   /* its scale */
    double p_outlier;  /* chance of a 0.1-1.5 ms delay */
    double stamp_ns;   /* timestamp noise sd */
    double asym_ns;    /* per-path asymmetry sd */
    double p_degraded; /* fraction of paths with a 1-5 us asymmetry */
    double drift_ppm;  /* sd of the clocks' drift */
    double wander_ppb; /* random walk per sqrt(s) */
} sim_opts_t;

typedef struct {
    unsigned u, v;
    double owd_ns[2]; /* base delay out (u -> v) and in */
    bool degraded;
} path_t;

typedef struct {
    sim_opts_t o;
    fm_vclock_rng_t rng;
    size_t grid_len;
    int64_t *grid; /* nodes x grid_len virtual readings */
    path_t *paths;
    size_t npaths;
} sim_t;

/* Node k's clock at real time T0 + rel_ns. */
static double clock_at (const sim_t *s, unsigned k, double rel_ns)
{
    const int64_t *g = s->grid + (size_t)k * s->grid_len;
    double pos = rel_ns / (double)GRID_NS;
    size_t j;
    double frac;

    if (pos < 0) {
        pos = 0;
    }
    j = (size_t)pos;
    if (j + 1 >= s->grid_len) {
        j = s->grid_len - 2;
    }
    frac = pos - (double)j;
    /* relative to T0 in integers first, then the fraction as a double */
    return (double)(g[j] - T0) + frac * (double)(g[j + 1] - g[j]);
}

static int64_t stamp (sim_t *s, unsigned k, double rel_ns)
{
    return T0
           + llround (clock_at (s, k, rel_ns)
                      + s->o.stamp_ns * fm_vclock_rng_normal (&s->rng));
}

static double queue_delay (sim_t *s)
{
    double u = fm_vclock_rng_uniform (&s->rng), q = 0.;

    if (u >= s->o.p_idle) {
        if (fm_vclock_rng_uniform (&s->rng) < s->o.p_heavy) {
            q = s->o.heavy_us * 1e3 * pow (fm_vclock_rng_uniform (&s->rng), -1. / 1.5);
        } else {
            q = fm_vclock_rng_exp (&s->rng, s->o.queue_us * 1e3);
        }
    }
    if (fm_vclock_rng_uniform (&s->rng) < s->o.p_outlier) {
        q += 1e5 + 1.4e6 * fm_vclock_rng_uniform (&s->rng);
    }
    return q;
}

static int make_clocks (sim_t *s)
{
    s->grid_len = (size_t)(s->o.window_s * 1e9 / GRID_NS) + 3;
    if (!(s->grid = calloc ((size_t)s->o.nodes * s->grid_len, sizeof (*s->grid)))) {
        return -1;
    }
    for (unsigned k = 0; k < s->o.nodes; k++) {
        fm_vclock_params_t p = {
            .offset_ns = llround (1e6 * fm_vclock_rng_normal (&s->rng)),
            .drift_ppb = fmax (
                -30e3,
                fmin (30e3, s->o.drift_ppm * 1e3 * fm_vclock_rng_normal (&s->rng))),
            .wander_ppb = s->o.wander_ppb,
            .seed = fm_vclock_rng_u64 (&s->rng),
        };
        fm_vclock_t *vc = fm_vclock_create (&p, T0, NULL);

        if (!vc) {
            return -1;
        }
        for (size_t j = 0; j < s->grid_len; j++) {
            s->grid[(size_t)k * s->grid_len + j] =
                fm_vclock_map (vc, T0 + (int64_t)j * GRID_NS);
        }
        fm_vclock_destroy (vc);
    }
    return 0;
}

/* Every node picks K distinct peers; a pair chosen from both ends is one path. */
static int make_paths (sim_t *s)
{
    unsigned n = s->o.nodes, k = s->o.peers;
    unsigned *peers = calloc ((size_t)n * k, sizeof (*peers));

    if (!peers || !(s->paths = calloc ((size_t)n * k, sizeof (*s->paths)))) {
        free (peers);
        return -1;
    }
    for (unsigned u = 0; u < n; u++) {
        for (unsigned j = 0; j < k; j++) {
            unsigned v;
            bool dup;
            do {
                v = (unsigned)(fm_vclock_rng_u64 (&s->rng) % n);
                dup = v == u;
                for (unsigned i = 0; i < j && !dup; i++) {
                    dup = peers[(size_t)u * k + i] == v;
                }
            } while (dup);
            peers[(size_t)u * k + j] = v;
        }
    }
    for (unsigned u = 0; u < n; u++) {
        for (unsigned j = 0; j < k; j++) {
            unsigned v = peers[(size_t)u * k + j];
            bool mutual = false;
            path_t *p;
            double base, asym;

            /* v also chose u: count the path once, from the smaller index */
            for (unsigned i = 0; i < k; i++) {
                mutual |= peers[(size_t)v * k + i] == u;
            }
            if (mutual && v < u) {
                continue;
            }
            p = &s->paths[s->npaths++];
            p->u = u;
            p->v = v;
            base = 1e3
                   * (s->o.owd_min_us
                      + (s->o.owd_max_us - s->o.owd_min_us)
                            * fm_vclock_rng_uniform (&s->rng));
            asym = s->o.asym_ns * fm_vclock_rng_normal (&s->rng);
            if (fm_vclock_rng_uniform (&s->rng) < s->o.p_degraded) {
                double a = 1e3 + 4e3 * fm_vclock_rng_uniform (&s->rng);
                asym += fm_vclock_rng_uniform (&s->rng) < 0.5 ? -a : a;
                p->degraded = true;
            }
            p->owd_ns[FM_CLOCK_DIR_OUT] = base + asym / 2;
            p->owd_ns[FM_CLOCK_DIR_IN] = base - asym / 2;
        }
    }
    free (peers);
    return 0;
}

/* One coded pair on path p in direction dir, first probe sent at rel. */
static fm_clock_sample_t coded_pair (sim_t *s, const path_t *p, int dir, double rel)
{
    fm_clock_sample_t smp = {.type = FM_CLOCK_SAMPLE_PAIR};
    unsigned from = dir == FM_CLOCK_DIR_OUT ? p->u : p->v;
    unsigned to = dir == FM_CLOCK_DIR_OUT ? p->v : p->u;
    double q0 = queue_delay (s), q1;

    /* the second probe meets the same queue a third of the time (a pair
     * that passes the filter without being idle), else a queue of its own
     */
    q1 = fm_vclock_rng_uniform (&s->rng) < 0.33 ? q0 : queue_delay (s);
    smp.pair.dir = dir;
    for (int k = 0; k < 2; k++) {
        double send = rel + k * s->o.gap_ns;
        smp.pair.tx_ns[k] = stamp (s, from, send);
        smp.pair.rx_ns[k] = stamp (s, to, send + p->owd_ns[dir] + (k ? q1 : q0));
    }
    return smp;
}

static fm_clock_sample_t exchange (sim_t *s, const path_t *p, double rel)
{
    fm_clock_sample_t smp = {.type = FM_CLOCK_SAMPLE_EXCHANGE};
    double t2 = rel + p->owd_ns[FM_CLOCK_DIR_OUT] + queue_delay (s);
    double t3 = t2 + 5000.;
    double t4 = t3 + p->owd_ns[FM_CLOCK_DIR_IN] + queue_delay (s);

    smp.exchange.t1 = stamp (s, p->u, rel);
    smp.exchange.t2 = stamp (s, p->v, t2);
    smp.exchange.t3 = stamp (s, p->v, t3);
    smp.exchange.t4 = stamp (s, p->u, t4);
    return smp;
}

static int cmp_double (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile (double *v, size_t n, double q)
{
    size_t i;

    if (n == 0) {
        return NAN;
    }
    qsort (v, n, sizeof (*v), cmp_double);
    i = (size_t)ceil (q * (double)n) - 1;
    return v[i < n ? i : n - 1];
}

static void usage (FILE *fp)
{
    fprintf (fp,
             "Usage: clock-sim [OPTIONS]\n"
             "  --nodes N          nodes (1000)\n"
             "  --peers K          peers each node probes (10)\n"
             "  --seed S           random seed (1)\n"
             "  --window SEC       fit window (2)\n"
             "  --period MS        coded pair period per direction per path (10)\n"
             "  --stamp-noise NS   timestamp noise sd (50)\n"
             "  --queue US         mean exponential queueing (5)\n"
             "  --idle P           chance of an empty queue (0.3)\n"
             "  --outliers P       chance of a 0.1-1.5 ms delay (0.005)\n"
             "  --asym NS          per-path asymmetry sd (20)\n"
             "  --degraded P       fraction of 1-5 us asymmetric paths (0.005)\n"
             "  --wander PPB       clock frequency random walk per sqrt(s) (2)\n");
}

static int parse_uint (const char *s,
                       unsigned long long lo,
                       unsigned long long hi,
                       unsigned long long *v)
{
    char *end;
    unsigned long long u;

    errno = 0;
    u = strtoull (s, &end, 10);
    if (errno || end == s || *end || *s == '-' || u < lo || u > hi) {
        return -1;
    }
    *v = u;
    return 0;
}

static int parse_double (const char *s, double lo, double hi, double *v)
{
    char *end;
    double d;

    errno = 0;
    d = strtod (s, &end);
    if (errno || end == s || *end || !(d >= lo && d <= hi)) {
        return -1;
    }
    *v = d;
    return 0;
}

int main (int argc, char **argv)
{
    static const struct option longopts[] = {
        {"nodes", required_argument, NULL, 'n'},
        {"peers", required_argument, NULL, 'k'},
        {"seed", required_argument, NULL, 's'},
        {"window", required_argument, NULL, 'w'},
        {"period", required_argument, NULL, 'p'},
        {"stamp-noise", required_argument, NULL, 'S'},
        {"queue", required_argument, NULL, 'q'},
        {"idle", required_argument, NULL, 'i'},
        {"outliers", required_argument, NULL, 'o'},
        {"asym", required_argument, NULL, 'a'},
        {"degraded", required_argument, NULL, 'd'},
        {"wander", required_argument, NULL, 'W'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sim_t s = {.o = {
                   .nodes = 1000,
                   .peers = 10,
                   .seed = 1,
                   .window_s = 2.,
                   .period_ms = 10.,
                   .gap_ns = 10000.,
                   .guard_ns = 1500.,
                   .owd_min_us = 5.,
                   .owd_max_us = 50.,
                   .p_idle = 0.3,
                   .queue_us = 5.,
                   .p_heavy = 0.05,
                   .heavy_us = 20.,
                   .p_outlier = 0.005,
                   .stamp_ns = 50.,
                   .asym_ns = 20.,
                   .p_degraded = 0.005,
                   .drift_ppm = 10.,
                   .wander_ppb = 2.,
               }};
    fm_clock_config_t cfg;
    fm_clock_est_t *hy, *nv;
    fm_clocknet_edge_t *edges;
    fm_clocknet_node_t *nodes;
    fm_clocknet_resid_t *res;
    fm_clocknet_info_t info;
    fm_error_t err;
    double *truth, *e_pair, *e_net, *e_naive, *score;
    size_t m = 0, n_naive = 0, refused = 0, covered = 0, degraded = 0, caught = 0;
    fm_clock_stats_t st;
    int64_t t_start, t_fit, t_net;
    double p99_pair, p99_net, now_rel, thresh;
    unsigned long long u = 0;
    int opt;

    while ((opt = getopt_long (argc, argv, "h", longopts, NULL)) != -1) {
        int rc = 0;
        switch (opt) {
        case 'n':
            rc = parse_uint (optarg, 3, 100000, &u);
            s.o.nodes = (unsigned)u;
            break;
        case 'k':
            rc = parse_uint (optarg, 1, 1000, &u);
            s.o.peers = (unsigned)u;
            break;
        case 's':
            rc = parse_uint (optarg, 0, UINT64_MAX, &u);
            s.o.seed = (uint64_t)u;
            break;
        case 'w':
            rc = parse_double (optarg, 0.5, 60, &s.o.window_s);
            break;
        case 'p':
            rc = parse_double (optarg, 0.1, 1000, &s.o.period_ms);
            break;
        case 'S':
            rc = parse_double (optarg, 0, 1e5, &s.o.stamp_ns);
            break;
        case 'q':
            rc = parse_double (optarg, 0, 1e4, &s.o.queue_us);
            break;
        case 'i':
            rc = parse_double (optarg, 0, 1, &s.o.p_idle);
            break;
        case 'o':
            rc = parse_double (optarg, 0, 1, &s.o.p_outlier);
            break;
        case 'a':
            rc = parse_double (optarg, 0, 1e6, &s.o.asym_ns);
            break;
        case 'd':
            rc = parse_double (optarg, 0, 1, &s.o.p_degraded);
            break;
        case 'W':
            rc = parse_double (optarg, 0, 1e3, &s.o.wander_ppb);
            break;
        case 'h':
            usage (stdout);
            return 0;
        default:
            usage (stderr);
            return 2;
        }
        if (rc < 0) {
            fprintf (stderr, "clock-sim: bad value '%s'\n", optarg);
            return 2;
        }
    }
    if (optind != argc || s.o.peers >= s.o.nodes) {
        usage (stderr);
        return 2;
    }
    t_start = fm_time_mono_ns ();
    fm_vclock_rng_seed (&s.rng, s.o.seed);
    if (make_clocks (&s) < 0 || make_paths (&s) < 0) {
        fprintf (stderr, "clock-sim: out of memory\n");
        return 1;
    }
    fm_clock_config_default (&cfg);
    cfg.window_ns = (int64_t)(s.o.window_s * 1e9);
    cfg.min_span_ns = cfg.window_ns / 4;
    cfg.guard_ns = (int64_t)s.o.guard_ns;
    cfg.capacity = (unsigned)(s.o.window_s * 1e3 / s.o.period_ms) + 16;
    hy = fm_clock_est_create (FM_CLOCK_EST_HUYGENS, &cfg, &err);
    nv = fm_clock_est_create (FM_CLOCK_EST_NAIVE, &cfg, &err);
    edges = calloc (s.npaths, sizeof (*edges));
    truth = calloc (s.npaths, sizeof (*truth));
    e_pair = calloc (s.npaths, sizeof (*e_pair));
    e_net = calloc (s.npaths, sizeof (*e_net));
    e_naive = calloc (s.npaths, sizeof (*e_naive));
    score = calloc (s.npaths, sizeof (*score));
    res = calloc (s.npaths, sizeof (*res));
    nodes = calloc (s.o.nodes, sizeof (*nodes));
    if (!hy || !nv || !edges || !truth || !e_pair || !e_net || !e_naive || !score
        || !res || !nodes) {
        fprintf (stderr, "clock-sim: %s\n", hy && nv ? "out of memory" : err.text);
        return 1;
    }

    /* every path: both directions probed over one window, then fitted at its
     * end, as node u would; the estimates all refer to real time T0 + window
     */
    now_rel = s.o.window_s * 1e9;
    for (size_t i = 0; i < s.npaths; i++) {
        const path_t *p = &s.paths[i];
        double period = s.o.period_ms * 1e6;
        double phase = period * fm_vclock_rng_uniform (&s.rng);
        int64_t now_u = T0 + llround (clock_at (&s, p->u, now_rel));
        fm_clock_estimate_t e;

        fm_clock_est_reset (hy);
        fm_clock_est_reset (nv);
        for (double t = phase; t < now_rel - period; t += period) {
            for (int dir = 0; dir < 2; dir++) {
                /* each direction on its own schedule: the two are independent */
                fm_clock_sample_t smp = coded_pair (&s, p, dir, t + dir * period / 2);
                (void)fm_clock_est_add (hy, &smp);
            }
            fm_clock_sample_t x = exchange (&s, p, t);
            (void)fm_clock_est_add (nv, &x);
        }
        truth[i] = clock_at (&s, p->v, now_rel) - clock_at (&s, p->u, now_rel);
        if (fm_clock_est_estimate (nv, now_u, &e) == 0) {
            e_naive[n_naive++] = fabs ((double)e.offset_ns - truth[i]);
        }
        if (fm_clock_est_estimate (hy, now_u, &e) < 0) {
            refused++;
            continue;
        }
        if (fabs ((double)e.offset_ns - truth[i]) <= (double)e.bound_ns) {
            covered++;
        }
        edges[m] = (fm_clocknet_edge_t){
            .u = p->u,
            .v = p->v,
            .offset_ns = (double)e.offset_ns,
            .drift_ppb = e.drift_ppb,
            .bound_ns = (double)e.bound_ns,
        };
        truth[m] = truth[i];
        s.paths[m] = *p; /* compact: paths[j] now matches edges[j] */
        m++;
    }
    fm_clock_est_stats (hy, &st);
    t_fit = fm_time_mono_ns ();
    if (fm_clocknet_solve (s.o.nodes, edges, m, NULL, nodes, res, &info, &err) < 0) {
        fprintf (stderr, "clock-sim: %s\n", err.text);
        return 1;
    }
    t_net = fm_time_mono_ns ();
    for (size_t i = 0; i < m; i++) {
        const fm_clocknet_edge_t *e = &edges[i];
        e_pair[i] = fabs (e->offset_ns - truth[i]);
        e_net[i] = fabs (nodes[e->v].offset_ns - nodes[e->u].offset_ns - truth[i]);
        score[i] = res[i].score;
    }
    /* degraded paths: do they stand out among the residual scores? */
    thresh = 5. * info.robust_scale;
    for (size_t i = 0; i < m; i++) {
        degraded += s.paths[i].degraded;
        caught += s.paths[i].degraded && score[i] > thresh;
    }
    size_t flagged = 0;
    for (size_t i = 0; i < m; i++) {
        flagged += score[i] > thresh;
    }

    printf ("clock-sim: %u nodes, %u peers each, %zu paths, seed %llu, window %.1f s, "
            "a coded pair per direction every %.0f ms\n",
            s.o.nodes,
            s.o.peers,
            s.npaths,
            (unsigned long long)s.o.seed,
            s.o.window_s,
            s.o.period_ms);
    printf ("  clocks: offset sd 1 ms, drift sd %.0f ppm, wander %.1f ppb/sqrt(s); "
            "stamps sd %.0f ns\n",
            s.o.drift_ppm,
            s.o.wander_ppb,
            s.o.stamp_ns);
    printf ("  paths: owd %.0f-%.0f us, idle %.0f%%, queue exp %.0f us + %.0f%% "
            "Pareto(1.5, %.0f us), %.1f%% outliers 0.1-1.5 ms, asymmetry sd %.0f ns, "
            "%.1f%% degraded (1-5 us)\n",
            s.o.owd_min_us,
            s.o.owd_max_us,
            s.o.p_idle * 100,
            s.o.queue_us,
            s.o.p_heavy * 100,
            s.o.heavy_us,
            s.o.p_outlier * 100,
            s.o.asym_ns,
            s.o.p_degraded * 100);
    printf ("  huygens: %.1f%% of coded pairs pure; %zu paths estimated, %zu refused; "
            "|error| <= bound on %.1f%%\n",
            100. * (double)st.accepted / (double)(st.accepted + st.impure + st.invalid),
            m,
            refused,
            m ? 100. * (double)covered / (double)m : 0.);
    {
        double p50_pair, p50_net, p50_naive, p99_naive;

        p50_naive = quantile (e_naive, n_naive, 0.5);
        p99_naive = quantile (e_naive, n_naive, 0.99);
        p50_pair = quantile (e_pair, m, 0.5);
        p99_pair = quantile (e_pair, m, 0.99);
        p50_net = quantile (e_net, m, 0.5);
        p99_net = quantile (e_net, m, 0.99);
        printf ("  |estimated - true| pairwise offset, ns:     p50      p99\n");
        printf ("    naive min-RTT exchange             %9.1f %9.1f\n",
                p50_naive,
                p99_naive);
        printf (
            "    huygens, pairwise only             %9.1f %9.1f\n", p50_pair, p99_pair);
        printf (
            "    huygens + network effect           %9.1f %9.1f\n", p50_net, p99_net);
        printf ("  network effect: p50 %.2fx, p99 %.2fx better\n",
                p50_pair / p50_net,
                p99_pair / p99_net);
    }
    printf ("  network solve: %u CG iterations, scale %.2f, %.1f ms; "
            "degraded paths flagged (score > %.1f): %zu of %zu, %zu flagged in all\n",
            info.iterations,
            info.scale,
            (double)(t_net - t_fit) / 1e6,
            thresh,
            caught,
            degraded,
            flagged);
    printf ("  run time %.2f s\n", (double)(fm_time_mono_ns () - t_start) / 1e9);
    bool pass = p99_net * 2. <= p99_pair;
    printf ("  acceptance (network effect cuts p99 >= 2x): %s\n",
            pass ? "PASS" : "FAIL");

    fm_clock_est_destroy (hy);
    fm_clock_est_destroy (nv);
    free (edges);
    free (truth);
    free (e_pair);
    free (e_net);
    free (e_naive);
    free (score);
    free (res);
    free (nodes);
    free (s.grid);
    free (s.paths);
    return pass ? 0 : 1;
}
