/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
/* fabric-sim: generate the probe windows agents would send for a topology, a
 * noise model and a fault list; feed them through the real scoring,
 * localization and policy code on a simulated clock; print one JSON line per
 * fault, false positive and action, and a summary line. doc/scenario.md.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "error.h"
#include "localize.h"
#include "plan.h"
#include "probing.h"
#include "policy.h"
#include "scenario.h"
#include "score.h"
#include "topo.h"

#define NS 1000000000.0

typedef struct {
    uint64_t s[4];
    double spare;
    bool has_spare;
} rng_t;

static uint64_t rotl (uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix (uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void rng_seed (rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) {
        r->s[i] = splitmix (&seed);
    }
    r->has_spare = false;
}

/* xoshiro256** */
static uint64_t rng_next (rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl (s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl (s[3], 45);
    return result;
}

static double rng_uniform (rng_t *r)
{
    return (double)(rng_next (r) >> 11) * 0x1.0p-53;
}

/* Marsaglia's polar method; the second value is kept for the next call. */
static double rng_normal (rng_t *r)
{
    double u, v, q;

    if (r->has_spare) {
        r->has_spare = false;
        return r->spare;
    }
    do {
        u = 2.0 * rng_uniform (r) - 1.0;
        v = 2.0 * rng_uniform (r) - 1.0;
        q = u * u + v * v;
    } while (q >= 1.0 || q == 0.0);
    q = sqrt (-2.0 * log (q) / q);
    r->spare = v * q;
    r->has_spare = true;
    return u * q;
}

/* Lost probes among n, each lost with probability p; p0n is (1-p)^n. */
static int binomial (rng_t *r, int n, double p, double p0n)
{
    if (p <= 0 || n <= 0) {
        return 0;
    }
    if (p >= 1.0 - 1e-12) {
        return n;
    }
    double u = rng_uniform (r);
    double prob = p0n, cum = p0n;
    int k = 0;
    while (u > cum && k < n) {
        prob *= (double)(n - k) / (double)(k + 1) * p / (1.0 - p);
        k++;
        cum += prob;
        if (prob < 1e-300 && cum < u) {
            break;
        }
    }
    return k;
}

typedef struct {
    const fm_sim_fault_t *f;
    int node, leaf, spine; /* resolved target */
    double frac;           /* active fraction of the current window */
    int transitions;       /* flap: up/down changes in the window */
    /* evaluation */
    bool detected, correct;
    double detected_s;
    char localized[160];
    fm_side_t side;
    fm_class_t cls;
} fault_rt_t;

typedef struct {
    fm_elem_kind_t kind;
    int id;
} ekey_t;

/* The cluster as the simulated Slurm sees it. */
typedef struct {
    bool drained;
    char *reason;
    int64_t weight;
    bool touched;
} snode_t;

static bool applies (const fault_rt_t *fr, int s, int d, int ls, int ld, int via)
{
    int dir = fr->f->dir;
    bool cross = ls != ld && via >= 0;

    switch (fr->f->target_kind) {
    case FM_SIM_NODE:
        return ((dir & 1) && s == fr->node) || ((dir & 2) && d == fr->node);
    case FM_SIM_UPLINK:
        if (!cross || via != fr->spine) {
            return false;
        }
        return ((dir & 1) && ls == fr->leaf) || ((dir & 2) && ld == fr->leaf);
    case FM_SIM_SWITCH:
        if (fr->spine >= 0) {
            return cross && via == fr->spine;
        }
        return ((dir & 1) && ls == fr->leaf) || ((dir & 2) && ld == fr->leaf);
    }
    return false;
}

/* Fraction of [t0, t1) the fault is active (down, for a flap). */
static double active_frac (const fm_sim_fault_t *f, double t0, double t1, int *trans)
{
    double a = f->at_s > t0 ? f->at_s : t0;
    double b = f->until_s < t1 ? f->until_s : t1;

    *trans = 0;
    if (b <= a) {
        return 0;
    }
    if (f->kind != FM_SIM_FLAP) {
        return (b - a) / (t1 - t0);
    }
    double half = f->period_s / 2, on = 0;
    double k0 = floor ((a - f->at_s) / f->period_s);
    for (double k = k0;; k++) {
        double ds = f->at_s + k * f->period_s, de = ds + half;
        if (ds >= b) {
            break;
        }
        double x = ds > a ? ds : a, y = de < b ? de : b;
        if (y > x) {
            on += y - x;
        }
        if (ds > a && ds < b) {
            (*trans)++;
        }
        if (de > a && de < b) {
            (*trans)++;
        }
    }
    return on / (t1 - t0);
}

static char *read_file (const char *path, fm_error_t *err)
{
    FILE *fp = fopen (path, "r");
    char *buf;
    size_t n;

    if (!fp) {
        fm_errprintf (err, "%s: %s", path, strerror (errno));
        return NULL;
    }
    if (!(buf = malloc (1024 * 1024 + 2))) {
        fclose (fp);
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    n = fread (buf, 1, 1024 * 1024 + 1, fp);
    fclose (fp);
    if (n > 1024 * 1024) {
        free (buf);
        errno = EFBIG;
        fm_errprintf (err, "%s: larger than 1 MiB", path);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static fm_topo_t *build_topo (const fm_scenario_t *sc, fm_error_t *err)
{
    fm_topo_t *t;

    if (!sc->leafspine) {
        if (!(t = fm_topo_create_flat ())) {
            fm_errprintf (err, "out of memory");
            return NULL;
        }
        for (int i = 0; i < sc->nodes; i++) {
            char name[32];
            snprintf (name, sizeof (name), "n%d", i);
            if (fm_topo_add_node (t, name) < 0) {
                fm_errprintf (err, "adding %s: %s", name, strerror (errno));
                fm_topo_destroy (t);
                return NULL;
            }
        }
        return t;
    }
    /* through the real topology.conf parser */
    size_t cap = (size_t)(sc->leaves + sc->spines) * 64 + 64, used = 0;
    char *text = malloc (cap);
    if (!text) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    for (int l = 0; l < sc->leaves; l++) {
        int a = l * sc->nodes_per_leaf, b = a + sc->nodes_per_leaf - 1;
        used += (size_t)snprintf (text + used,
                                  cap - used,
                                  a == b ? "SwitchName=leaf%d Nodes=n%d\n"
                                         : "SwitchName=leaf%d Nodes=n[%d-%d]\n",
                                  l,
                                  a,
                                  b);
    }
    for (int s = 0; s < sc->spines; s++) {
        used +=
            (size_t)snprintf (text + used,
                              cap - used,
                              sc->leaves == 1 ? "SwitchName=spine%d Switches=leaf0\n"
                                              : "SwitchName=spine%d "
                                                "Switches=leaf[0-%d]\n",
                              s,
                              sc->leaves - 1);
    }
    t = fm_topo_parse (text, err);
    free (text);
    return t;
}

static int resolve (fault_rt_t *fr, const fm_topo_t *t, fm_error_t *err)
{
    const fm_sim_fault_t *f = fr->f;

    fr->node = fr->leaf = fr->spine = -1;
    switch (f->target_kind) {
    case FM_SIM_NODE:
        fr->node = fm_topo_node_find (t, f->a);
        break;
    case FM_SIM_UPLINK:
        fr->leaf = fm_topo_leaf_find (t, f->a);
        fr->spine = fm_topo_spine_find (t, f->b);
        if (fm_topo_uplink_find (t, fr->leaf, fr->spine) < 0) {
            fr->leaf = -1;
        }
        break;
    case FM_SIM_SWITCH:
        fr->leaf = fm_topo_leaf_find (t, f->a);
        if (fr->leaf < 0) {
            fr->spine = fm_topo_spine_find (t, f->a);
        }
        break;
    }
    if (fr->node < 0 && fr->leaf < 0 && fr->spine < 0) {
        errno = EINVAL;
        return fm_errprintf (err, "fault target %s is not in the topology", f->target);
    }
    return 0;
}

static const char *dir_name (int dir)
{
    return fm_localize_side_name ((fm_side_t)dir);
}

static void emit (json_t *o)
{
    char *s = json_dumps (o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (s) {
        puts (s);
        free (s);
    }
    json_decref (o);
}

typedef struct {
    const fm_scenario_t *sc;
    const fm_topo_t *topo;
    fault_rt_t *faults;
    size_t nfaults;
    double grace_s;
    int dets, correct_dets, fps;
} eval_t;

static void on_detection (eval_t *ev, const fm_elem_status_t *e, double t)
{
    char name[160];
    bool any = false, ok = false;

    fm_score_text_elem_name (ev->topo, e->kind, e->id, name, sizeof (name));
    ev->dets++;
    for (size_t i = 0; i < ev->nfaults; i++) {
        fault_rt_t *fr = &ev->faults[i];
        const fm_sim_fault_t *f = fr->f;
        if (strcmp (f->target, name) != 0 || t < f->at_s
            || t > f->until_s + ev->grace_s) {
            continue;
        }
        bool dir_ok = e->kind == FM_ELEM_SPINE || (int)e->side == f->dir;
        any = true;
        ok = ok || dir_ok;
        if (!fr->correct && (dir_ok || !fr->detected)) {
            fr->detected = true;
            fr->correct = dir_ok;
            fr->detected_s = t;
            snprintf (fr->localized, sizeof (fr->localized), "%s", name);
            fr->side = e->side;
            fr->cls = e->cls;
        }
    }
    if (ok) {
        ev->correct_dets++;
    }
    if (!any) {
        ev->fps++;
        emit (json_pack ("{s:{s:s,s:s,s:s,s:s,s:f}}",
                         "false_positive",
                         "localized",
                         name,
                         "dir",
                         fm_localize_side_name (e->side),
                         "class",
                         fm_localize_class_name (e->cls),
                         "state",
                         fm_score_state_name (e->state),
                         "at_s",
                         t));
    }
}

static bool is_node_target (const eval_t *ev, int node, double t)
{
    for (size_t i = 0; i < ev->nfaults; i++) {
        const fault_rt_t *fr = &ev->faults[i];
        if (fr->f->target_kind == FM_SIM_NODE && fr->node == node && t >= fr->f->at_s
            && t <= fr->f->until_s + ev->grace_s) {
            return true;
        }
    }
    return false;
}

static int cmp_double (const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage (FILE *fp)
{
    fprintf (fp,
             "Usage: fabric-sim --scenario FILE.json [--quiet]\n"
             "  --quiet  print only fault lines and the summary\n");
}

int main (int argc, char **argv)
{
    static const struct option opts[] = {
        {"scenario", required_argument, NULL, 's'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL;
    bool quiet = false;
    fm_error_t err;
    fm_scenario_t sc;
    int c, rc = 1;

    while ((c = getopt_long (argc, argv, "s:qh", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            path = optarg;
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            usage (stdout);
            return 0;
        default:
            usage (stderr);
            return 2;
        }
    }
    if (!path || optind != argc) {
        usage (stderr);
        return 2;
    }
    char *text = read_file (path, &err);
    if (!text) {
        fprintf (stderr, "fabric-sim: %s\n", err.text);
        return 1;
    }
    if (fm_scenario_parse (text, &sc, &err) < 0) {
        fprintf (stderr, "fabric-sim: %s: %s\n", path, err.text);
        free (text);
        return 1;
    }
    free (text);

    struct timespec w0, w1;
    clock_gettime (CLOCK_MONOTONIC, &w0);
    fm_topo_t *topo = build_topo (&sc, &err);
    fm_score_params_t sp;
    fm_policy_params_t pp;
    fm_score_t *score = NULL;
    fm_policy_t *pol = NULL;
    fault_rt_t *faults = calloc (sc.nfaults + 1, sizeof (*faults));
    fault_rt_t **active = calloc (sc.nfaults + 1, sizeof (*active));
    int n = sc.nodes;
    fm_plan_params_t plp;
    fm_plan_t *plan = NULL;
    fm_plan_params_default (&plp);
    plp.peers = (unsigned)sc.peers;
    plp.seed = sc.seed;
    int k = n - 1 <= (int)plp.all_pairs_max ? n - 1 : sc.peers;
    fm_sim_probing_t pr = {
        .n = n, .k = k, .cover_min = -1, .spine_min = -1, .plan_cover_min = -1};
    pr.ntarg = malloc ((size_t)n * sizeof (int));
    pr.peer = malloc ((size_t)n * (size_t)k * sizeof (int));
    pr.via = malloc ((size_t)n * (size_t)k * sizeof (int));
    pr.base = malloc ((size_t)n * (size_t)k * sizeof (float));
    int *peer = pr.peer, *via = pr.via;
    float *base = pr.base;
    int *last_up = NULL, *last_sp = NULL;
    double *up_cnt = NULL, *sp_cnt = NULL, *close_s = NULL;
    const char **names = NULL;
    int *leaf = malloc ((size_t)n * sizeof (int));
    snode_t *sn = calloc ((size_t)n, sizeof (*sn));
    ekey_t *prev = NULL, *cur = NULL;
    size_t nprev = 0, ncur = 0;
    size_t ekcap = 0;
    int *touched = malloc ((size_t)n * sizeof (int));
    size_t ntouched = 0;
    unsigned char *listed = calloc ((size_t)n, 1);
    fm_policy_node_t *pin = NULL;
    char (*evid)[256] = NULL;
    char (*expl)[2048] = NULL;
    fm_policy_elem_t *pel = NULL;
    char (*elname)[160] = NULL;
    char (*elevid)[256] = NULL;
    size_t pcap = 0, elcap = 0;
    fm_policy_output_t out = {0};
    double *delays = NULL;
    int false_drains = 0, drains = 0;
    uint64_t records = 0;

    if (!topo) {
        fprintf (stderr, "fabric-sim: topology: %s\n", err.text);
        goto done;
    }
    if (!faults || !active || !peer || !via || !base || !leaf || !sn || !touched
        || !listed) {
        fprintf (stderr, "fabric-sim: out of memory\n");
        goto done;
    }
    for (size_t i = 0; i < sc.nfaults; i++) {
        faults[i].f = &sc.faults[i];
        if (resolve (&faults[i], topo, &err) < 0) {
            fprintf (stderr, "fabric-sim: faults[%zu]: %s\n", i, err.text);
            goto done;
        }
    }
    fm_score_params_default (&sp);
    fm_policy_params_default (&pp);
    pp.dry_run = sc.dry_run;
    if (sc.max_drain_fraction >= 0) {
        pp.max_drain_fraction = sc.max_drain_fraction;
    }
    if (sc.max_drains_per_hour >= 0) {
        pp.max_drains_per_hour = sc.max_drains_per_hour;
    }
    if (!(score = fm_score_create (topo, &sp)) || !(pol = fm_policy_create (&pp))) {
        fprintf (stderr, "fabric-sim: %s\n", strerror (errno));
        goto done;
    }

    rng_t rng;
    rng_seed (&rng, sc.seed);
    for (int i = 0; i < n; i++) {
        leaf[i] = fm_topo_node_leaf (topo, i);
        sn[i].weight = 1;
    }
    /* the real probe plan, as fabricd hands it to the agents */
    size_t nu = fm_topo_nuplinks (topo), nsp = fm_topo_nspines (topo);
    names = malloc ((size_t)n * sizeof (*names));
    last_up = malloc ((nu + 1) * sizeof (int));
    last_sp = malloc ((nsp + 1) * sizeof (int));
    up_cnt = malloc ((nu + 1) * sizeof (double));
    sp_cnt = malloc ((nsp + 1) * sizeof (double));
    if (!names || !last_up || !last_sp || !up_cnt || !sp_cnt || !pr.ntarg) {
        fprintf (stderr, "fabric-sim: out of memory\n");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        names[i] = fm_topo_node_name (topo, i);
    }
    if (!(plan = fm_plan_create (topo, names, (size_t)n, &plp, &err))) {
        fprintf (stderr, "fabric-sim: plan: %s\n", err.text);
        goto done;
    }
    if (fm_plan_check (plan, &err) < 0) {
        fprintf (stderr, "fabric-sim: plan: %s\n", err.text);
    }
    fm_sim_probing_apply (&pr, plan, topo, &sc, leaf, last_up, last_sp, up_cnt, sp_cnt);

    eval_t ev = {.sc = &sc,
                 .topo = topo,
                 .faults = faults,
                 .nfaults = sc.nfaults,
                 .grace_s =
                     (sp.recover_windows + sp.persist_windows + 2) * sc.window_s + 30};
    int probes = (int)lround (sc.rate_hz * sc.window_s);
    double p0n_noise = pow (1.0 - sc.loss, probes);
    long nwin = (long)floor (sc.duration_s / sc.window_s + 1e-9);
    double jitter_ns = sc.jitter_us * 1000.0;
    double epoch_s = (double)FM_PLAN_EPOCH_DEFAULT_NS / NS;
    if (!(close_s = calloc ((size_t)nwin + 1, sizeof (double)))) {
        fprintf (stderr, "fabric-sim: out of memory\n");
        goto done;
    }

    for (long w = 0; w < nwin; w++) {
        double t0 = w * sc.window_s, t1 = t0 + sc.window_s;
        int64_t s_ns = (int64_t)llround (t0 * NS), e_ns = (int64_t)llround (t1 * NS);
        size_t nact = 0;

        uint64_t epoch = (uint64_t)floor (t0 / epoch_s + 1e-9);
        if (epoch != fm_plan_epoch (plan)) {
            if (fm_plan_set_epoch (plan, epoch) < 0) {
                fprintf (stderr, "fabric-sim: plan: %s\n", strerror (errno));
                goto done;
            }
            fm_sim_probing_apply (
                &pr, plan, topo, &sc, leaf, last_up, last_sp, up_cnt, sp_cnt);
        }
        for (size_t i = 0; i < sc.nfaults; i++) {
            faults[i].frac = active_frac (faults[i].f, t0, t1, &faults[i].transitions);
            if (faults[i].frac > 0 || faults[i].transitions > 0) {
                active[nact++] = &faults[i];
            }
        }
        for (int s = 0; s < n; s++) {
            for (int j = 0; j < pr.ntarg[s]; j++) {
                size_t fi = (size_t)s * (size_t)k + (size_t)j;
                int d = peer[fi], v = via[fi];
                double ploss = sc.loss, down = 0, delay = 0, delay99 = 0, rdelay = 0;
                bool faulty = false;
                for (size_t a = 0; a < nact; a++) {
                    const fault_rt_t *fr = active[a];
                    if (fr->f->kind == FM_SIM_DELAY
                        && applies (fr, d, s, leaf[d], leaf[s], v)) {
                        rdelay += fr->frac >= 0.5 ? fr->f->value_us * 1000.0 : 0;
                    }
                    if (!applies (fr, s, d, leaf[s], leaf[d], v)) {
                        continue;
                    }
                    faulty = true;
                    switch (fr->f->kind) {
                    case FM_SIM_LOSS:
                        ploss = 1.0 - (1.0 - ploss) * (1.0 - fr->f->value * fr->frac);
                        break;
                    case FM_SIM_DELAY:
                        delay += fr->frac >= 0.5 ? fr->f->value_us * 1000.0 : 0;
                        delay99 += fr->f->value_us * 1000.0;
                        break;
                    case FM_SIM_DOWN:
                    case FM_SIM_FLAP:
                        if (fr->frac > down) {
                            down = fr->frac;
                        }
                        break;
                    }
                }
                int ndown = (int)lround (probes * down);
                int rest = probes - ndown;
                int lost = ndown
                           + binomial (&rng,
                                       rest,
                                       ploss,
                                       faulty ? pow (1.0 - ploss, rest) : p0n_noise);
                int recv = probes - lost;
                double b = base[fi];
                fm_link_window_t r = {
                    .job_id = 1,
                    .src = s,
                    .dst = d,
                    .via = v,
                    .start_ns = s_ns,
                    .end_ns = e_ns,
                    .sent = probes,
                    .received = recv,
                    .owd_p50_ns = FM_SCORE_NONE,
                    .owd_p99_ns = FM_SCORE_NONE,
                    .rtt_p50_ns = FM_SCORE_NONE,
                    .loop_residual_ns = FM_SCORE_NONE,
                };
                if (recv > 0) {
                    /* p50 of exponential jitter over recv samples */
                    double med =
                        jitter_ns
                        * (M_LN2 + 2.0 / sqrt ((double)recv) * rng_normal (&rng) * 0.5);
                    if (med < 0) {
                        med = 0;
                    }
                    r.owd_p50_ns = (int64_t)(b + med + delay);
                    r.owd_p99_ns = (int64_t)(b + jitter_ns * 4.6 + delay99);
                    r.rtt_p50_ns = (int64_t)(2 * b + 2 * med + delay + rdelay + 1000);
                    /* triangular noise: cheaper than a normal, same role */
                    double tri = rng_uniform (&rng) + rng_uniform (&rng) - 1.0;
                    r.loop_residual_ns = (int64_t)(tri * 0.1 * jitter_ns);
                }
                if (fm_score_add_link (score, &r) < 0) {
                    fprintf (stderr, "fabric-sim: add_link: %s\n", strerror (errno));
                    goto done;
                }
                records++;
            }
        }
        for (size_t a = 0; a < nact; a++) {
            const fault_rt_t *fr = active[a];
            if (fr->f->target_kind != FM_SIM_NODE || fr->f->dir != FM_SIDE_BOTH) {
                continue;
            }
            fm_health_event_t he = {.node = fr->node, .at_ns = e_ns};
            if (fr->f->kind == FM_SIM_DOWN) {
                he.kind = FM_HEALTH_LINK_DOWN;
            } else if (fr->f->kind == FM_SIM_FLAP && fr->transitions > 0) {
                he.kind = FM_HEALTH_CARRIER;
                he.count = fr->transitions;
            } else {
                continue;
            }
            if (fm_score_add_health (score, &he) < 0) {
                fprintf (stderr, "fabric-sim: add_health: %s\n", strerror (errno));
                goto done;
            }
        }
        struct timespec c0, c1;
        clock_gettime (CLOCK_MONOTONIC, &c0);
        if (fm_score_close_window (score, e_ns) < 0) {
            fprintf (stderr, "fabric-sim: close_window: %s\n", strerror (errno));
            goto done;
        }
        clock_gettime (CLOCK_MONOTONIC, &c1);
        close_s[w] = (double)(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / NS;

        /* detections: elements newly degraded or failed */
        size_t ne = fm_score_nelems (score);
        if (ne > ekcap) {
            ekcap = ne * 2;
            ekey_t *a = realloc (prev, ekcap * sizeof (*a));
            if (a) {
                prev = a;
            }
            ekey_t *b2 = realloc (cur, ekcap * sizeof (*b2));
            if (b2) {
                cur = b2;
            }
            if (!a || !b2) {
                fprintf (stderr, "fabric-sim: out of memory\n");
                goto done;
            }
        }
        ncur = 0;
        for (size_t i = 0; i < ne; i++) {
            const fm_elem_status_t *e = fm_score_elem (score, i);
            if (e->state < FM_STATE_DEGRADED) {
                continue;
            }
            bool seen = false;
            for (size_t q = 0; q < nprev && !seen; q++) {
                seen = prev[q].kind == e->kind && prev[q].id == e->id;
            }
            if (!seen) {
                on_detection (&ev, e, t1);
            }
            cur[ncur++] = (ekey_t){e->kind, e->id};
        }
        ekey_t *sw = prev;
        prev = cur;
        cur = sw;
        nprev = ncur;

        /* policy: nodes the score tracks or that Slurm shows touched */
        size_t np = 0, nel = 0;
        size_t need = ne + ntouched;
        if (need > pcap) {
            pcap = need * 2;
            void *a = realloc (pin, pcap * sizeof (*pin));
            if (a) {
                pin = a;
            }
            void *b = realloc (evid, pcap * sizeof (*evid));
            if (b) {
                evid = b;
            }
            void *cc = realloc (expl, pcap * sizeof (*expl));
            if (cc) {
                expl = cc;
            }
            if (!a || !b || !cc) {
                fprintf (stderr, "fabric-sim: out of memory\n");
                goto done;
            }
        }
        if (ne > elcap) {
            elcap = ne * 2;
            void *a = realloc (pel, elcap * sizeof (*pel));
            if (a) {
                pel = a;
            }
            void *b = realloc (elname, elcap * sizeof (*elname));
            if (b) {
                elname = b;
            }
            void *cc = realloc (elevid, elcap * sizeof (*elevid));
            if (cc) {
                elevid = cc;
            }
            if (!a || !b || !cc) {
                fprintf (stderr, "fabric-sim: out of memory\n");
                goto done;
            }
        }
        for (size_t i = 0; i < ne; i++) {
            const fm_elem_status_t *e = fm_score_elem (score, i);
            if (e->kind != FM_ELEM_NODE) {
                fm_score_text_elem_name (
                    topo, e->kind, e->id, elname[nel], sizeof (elname[0]));
                fm_score_text_evidence (topo, e, elevid[nel], sizeof (elevid[0]));
                pel[nel] = (fm_policy_elem_t){elname[nel], e->state, elevid[nel]};
                nel++;
                continue;
            }
            size_t x = np++;
            listed[e->id] = 1;
            fm_score_text_evidence (topo, e, evid[x], sizeof (evid[0]));
            fm_score_text_explain (topo, e, expl[x], sizeof (expl[0]));
            pin[x] = (fm_policy_node_t){
                .name = fm_topo_node_name (topo, e->id),
                .leaf = fm_topo_leaf_name (topo, leaf[e->id]),
                .state = e->state,
                .cls = fm_localize_class_name (e->cls),
                .evidence = evid[x],
                .explain = expl[x],
                .healthy_windows = fm_score_node_clean (score, e->id),
                .drained = sn[e->id].drained,
                .reason = sn[e->id].reason,
                .weight = sn[e->id].weight,
            };
        }
        for (size_t i = 0; i < ntouched; i++) {
            int id = touched[i];
            if (listed[id]) {
                continue;
            }
            pin[np++] = (fm_policy_node_t){
                .name = fm_topo_node_name (topo, id),
                .leaf = fm_topo_leaf_name (topo, leaf[id]),
                .state = FM_STATE_HEALTHY,
                .healthy_windows = fm_score_node_clean (score, id),
                .drained = sn[id].drained,
                .reason = sn[id].reason,
                .weight = sn[id].weight,
            };
        }
        for (size_t i = 0; i < ne; i++) {
            const fm_elem_status_t *e = fm_score_elem (score, i);
            if (e->kind == FM_ELEM_NODE) {
                listed[e->id] = 0;
            }
        }
        fm_policy_input_t in = {
            .nodes = pin,
            .nnodes = np,
            .total_nodes = (size_t)n,
            .elems = pel,
            .nelems = nel,
            .now_ns = e_ns,
        };
        if (fm_policy_decide (pol, &in, &out) < 0) {
            fprintf (stderr, "fabric-sim: policy: %s\n", strerror (errno));
            goto done;
        }
        for (size_t i = 0; i < out.nactions; i++) {
            const fm_action_t *a = &out.actions[i];
            int id = fm_topo_node_find (topo, a->node);
            if (a->kind == FM_ACT_DRAIN) {
                drains++;
                if (!is_node_target (&ev, id, t1)) {
                    false_drains++;
                }
            }
            if (!quiet) {
                emit (json_pack ("{s:s,s:s,s:f,s:s,s:I,s:b}",
                                 "action",
                                 fm_policy_action_name (a->kind),
                                 "node",
                                 a->node,
                                 "at_s",
                                 t1,
                                 "reason",
                                 a->reason,
                                 "weight",
                                 (json_int_t)a->weight,
                                 "dry_run",
                                 a->dry_run));
            }
            if (a->dry_run || id < 0) {
                continue;
            }
            snode_t *x = &sn[id];
            if (!x->touched) {
                x->touched = true;
                touched[ntouched++] = id;
            }
            switch (a->kind) {
            case FM_ACT_DRAIN:
                x->drained = true;
                free (x->reason);
                x->reason = strdup (a->reason);
                break;
            case FM_ACT_RESUME:
                x->drained = false;
                free (x->reason);
                x->reason = NULL;
                break;
            case FM_ACT_SET_WEIGHT:
                x->weight = a->weight;
                break;
            case FM_ACT_SIGNAL:
            case FM_ACT_REQUEUE:
                break;
            }
        }
        if (!quiet) {
            for (size_t i = 0; i < out.nalarms; i++) {
                emit (json_pack ("{s:s,s:f,s:s}",
                                 "alarm",
                                 out.alarms[i].element,
                                 "at_s",
                                 t1,
                                 "text",
                                 out.alarms[i].text));
            }
        }
    }
    clock_gettime (CLOCK_MONOTONIC, &w1);

    size_t nrecalled = 0, ndet = 0;
    delays = calloc (sc.nfaults + 1, sizeof (double));
    for (size_t i = 0; i < sc.nfaults; i++) {
        const fault_rt_t *fr = &faults[i];
        static const char *const kinds[] = {"loss", "delay", "down", "flap"};
        json_t *o = json_pack ("{s:I,s:s,s:s,s:s,s:f}",
                               "fault",
                               (json_int_t)i,
                               "target",
                               fr->f->target,
                               "dir",
                               dir_name (fr->f->dir),
                               "kind",
                               kinds[fr->f->kind],
                               "at_s",
                               fr->f->at_s);
        if (fr->detected) {
            json_object_set_new (o, "detected_at_s", json_real (fr->detected_s));
            json_object_set_new (
                o, "detect_s", json_real (fr->detected_s - fr->f->at_s));
            json_object_set_new (o, "localized", json_string (fr->localized));
            json_object_set_new (
                o, "localized_dir", json_string (fm_localize_side_name (fr->side)));
            json_object_set_new (
                o, "class", json_string (fm_localize_class_name (fr->cls)));
        } else {
            json_object_set_new (o, "detected_at_s", json_null ());
            json_object_set_new (o, "localized", json_null ());
        }
        json_object_set_new (o, "correct", json_boolean (fr->correct));
        emit (o);
        if (fr->correct) {
            nrecalled++;
            if (delays) {
                delays[ndet++] = fr->detected_s - fr->f->at_s;
            }
        }
    }
    double precision = ev.dets ? (double)ev.correct_dets / ev.dets : 1.0;
    double recall = sc.nfaults ? (double)nrecalled / sc.nfaults : 1.0;
    double median = 0;
    if (ndet > 0) {
        qsort (delays, ndet, sizeof (double), cmp_double);
        median =
            ndet % 2 ? delays[ndet / 2] : (delays[ndet / 2 - 1] + delays[ndet / 2]) / 2;
    }
    double wall = (w1.tv_sec - w0.tv_sec) + (w1.tv_nsec - w0.tv_nsec) / NS;
    fprintf (stderr,
             "fabric-sim: %d nodes, %ld windows, %llu link-window records in "
             "%.2f s wall (%.0f records/s); detections=%d correct=%d "
             "false_positives=%d drains=%d\n",
             n,
             nwin,
             (unsigned long long)records,
             wall,
             records / (wall > 0 ? wall : 1),
             ev.dets,
             ev.correct_dets,
             ev.fps,
             drains);
    qsort (close_s, (size_t)nwin, sizeof (double), cmp_double);
    fprintf (stderr,
             "fabric-sim: plan: %zu epochs of %.0f s, every pair within %llu epochs; "
             "least independent probers per window: uplink %.1f, spine %.1f "
             "(ECMP by hash; plan's count %.1f); probes/s per node %.1f sent, "
             "busiest node %.1f sent+answered (at %.3g/s per peer); "
             "%.0f link records/s into fabricd; scoring %.1f ms per window "
             "(median; max %.1f)\n",
             pr.epochs,
             epoch_s,
             (unsigned long long)fm_plan_cycle (plan),
             pr.cover_min,
             pr.spine_min,
             pr.plan_cover_min,
             pr.sent_mean,
             pr.busiest,
             sc.rate_hz,
             (double)records / (nwin * sc.window_s),
             nwin > 0 ? close_s[nwin / 2] * 1e3 : 0,
             nwin > 0 ? close_s[nwin - 1] * 1e3 : 0);
    printf ("precision=%.4f recall=%.4f median_detect_s=%.1f false_drains=%d\n",
            precision,
            recall,
            median,
            false_drains);
    rc = 0;
done:
    free (delays);
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
    fm_score_destroy (score);
    for (int i = 0; sn && i < n; i++) {
        free (sn[i].reason);
    }
    free (sn);
    free (pin);
    free (evid);
    free (expl);
    free (pel);
    free (elname);
    free (elevid);
    free (listed);
    free (touched);
    free (prev);
    free (cur);
    free (leaf);
    free (base);
    free (via);
    free (peer);
    free (pr.ntarg);
    free (names);
    free (last_up);
    free (last_sp);
    free (up_cnt);
    free (sp_cnt);
    free (close_s);
    fm_plan_destroy (plan);
    free (active);
    free (faults);
    fm_topo_destroy (topo);
    fm_scenario_release (&sc);
    return rc;
}
