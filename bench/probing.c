/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>

#include "probing.h"

/* splitmix64: the pair's spine and base delay, from the pair and the seed */
static uint64_t mix (uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void fm_sim_probing_apply (fm_sim_probing_t *pr,
                           const fm_plan_t *pl,
                           const fm_topo_t *topo,
                           const fm_scenario_t *sc,
                           const int *leaf,
                           int *last_up,
                           int *last_sp,
                           double *up_cnt,
                           double *sp_cnt)
{
    size_t nu = fm_topo_nuplinks (topo), ns = fm_topo_nspines (topo);
    double sent = 0, busiest = 0;
    fm_plan_coverage_t pc;

    for (size_t u = 0; u < nu; u++) {
        last_up[u] = -1;
        up_cnt[u] = 0;
    }
    for (size_t sp = 0; sp < ns; sp++) {
        last_sp[sp] = -1;
        sp_cnt[sp] = 0;
    }
    for (int s = 0; s < pr->n; s++) {
        const uint32_t *t, *pv;
        size_t k = fm_plan_targets (pl, (size_t)s, &t);
        size_t np = fm_plan_probers (pl, (size_t)s, &pv);
        pr->ntarg[s] = (int)k;
        for (size_t j = 0; j < k; j++) {
            size_t fi = (size_t)s * (size_t)pr->k + j;
            int d = (int)t[j];
            bool cross = sc->leafspine && leaf[s] != leaf[d];
            uint64_t h = ((uint64_t)s << 32 | (uint32_t)d) ^ sc->seed;
            int v = cross ? (int)(mix (&h) % (uint64_t)sc->spines) : -1;
            double b = sc->base_owd_us * 1000.0 * (cross ? 1.5 : 1.0);
            pr->peer[fi] = d;
            pr->via[fi] = v;
            pr->base[fi] = (float)(b + (double)(mix (&h) >> 11) / 0x1p53 * 0.05 * b);
            if (v >= 0) {
                int ids[2] = {fm_topo_uplink_find (topo, leaf[s], v),
                              fm_topo_uplink_find (topo, leaf[d], v)};
                for (int w = 0; w < 2; w++) {
                    if (ids[w] >= 0 && last_up[ids[w]] != s) {
                        last_up[ids[w]] = s;
                        up_cnt[ids[w]]++;
                    }
                }
                if (last_sp[v] != s) {
                    last_sp[v] = s;
                    sp_cnt[v]++;
                }
            }
        }
        sent += (double)k * sc->rate_hz;
        if ((double)(k + np) * sc->rate_hz > busiest) {
            busiest = (double)(k + np) * sc->rate_hz;
        }
    }
    sent /= pr->n;
    fm_plan_coverage (pl, &pc);
    for (size_t u = 0; u < nu; u++) {
        if (fm_plan_uplink_cover (pl, (int)u) >= 0
            && (pr->cover_min < 0 || up_cnt[u] < pr->cover_min)) {
            pr->cover_min = up_cnt[u];
        }
    }
    for (size_t sp = 0; sp < ns; sp++) {
        if (fm_plan_spine_cover (pl, (int)sp) >= 0
            && (pr->spine_min < 0 || sp_cnt[sp] < pr->spine_min)) {
            pr->spine_min = sp_cnt[sp];
        }
    }
    if (pc.nuplinks > 0
        && (pr->plan_cover_min < 0 || pc.worst_cover < pr->plan_cover_min)) {
        pr->plan_cover_min = pc.worst_cover;
    }
    pr->sent_mean = sent > pr->sent_mean ? sent : pr->sent_mean;
    pr->busiest = busiest > pr->busiest ? busiest : pr->busiest;
    pr->epochs++;
}
