/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vclock.h"

struct fm_vclock {
    fm_vclock_params_t p;
    int64_t origin;
    int64_t last;    /* latest real time mapped */
    double phase_ns; /* W(last) */
    double freq_ppb; /* wander frequency at last */
    fm_vclock_rng_t rng;
};

void fm_vclock_rng_seed (fm_vclock_rng_t *r, uint64_t seed)
{
    r->s = seed;
}

uint64_t fm_vclock_rng_u64 (fm_vclock_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double fm_vclock_rng_uniform (fm_vclock_rng_t *r)
{
    return ((double)(fm_vclock_rng_u64 (r) >> 11) + 0.5) / 9007199254740992.0;
}

double fm_vclock_rng_normal (fm_vclock_rng_t *r)
{
    double u = fm_vclock_rng_uniform (r);
    double v = fm_vclock_rng_uniform (r);

    return sqrt (-2. * log (u)) * cos (2. * M_PI * v);
}

double fm_vclock_rng_exp (fm_vclock_rng_t *r, double mean)
{
    return -mean * log (fm_vclock_rng_uniform (r));
}

static int check (const fm_vclock_params_t *p, fm_error_t *err)
{
    if (!p) {
        errno = EINVAL;
        return fm_errprintf (err, "no virtual clock parameters");
    }
    if (!(fabs (p->drift_ppb) <= FM_VCLOCK_DRIFT_MAX_PPB)) {
        errno = EINVAL;
        return fm_errprintf (err,
                             "virtual clock drift must be within +-%.0f ppb",
                             FM_VCLOCK_DRIFT_MAX_PPB);
    }
    if (!(p->wander_ppb >= 0 && p->wander_ppb <= FM_VCLOCK_WANDER_MAX_PPB)) {
        errno = EINVAL;
        return fm_errprintf (err,
                             "virtual clock wander must be within [0, %.0f] ppb",
                             FM_VCLOCK_WANDER_MAX_PPB);
    }
    return 0;
}

fm_vclock_t *
fm_vclock_create (const fm_vclock_params_t *p, int64_t origin_ns, fm_error_t *err)
{
    fm_vclock_t *vc;

    if (check (p, err) < 0) {
        return NULL;
    }
    if (!(vc = calloc (1, sizeof (*vc)))) {
        fm_errprintf (err, "virtual clock: out of memory");
        return NULL;
    }
    vc->p = *p;
    vc->origin = origin_ns;
    vc->last = origin_ns;
    fm_vclock_rng_seed (&vc->rng, p->seed);
    return vc;
}

void fm_vclock_destroy (fm_vclock_t *vc)
{
    int saved_errno = errno;

    free (vc);
    errno = saved_errno;
}

static int64_t saturate (double v)
{
    if (v >= 9.2e18) {
        return INT64_MAX;
    }
    if (v <= -9.2e18) {
        return INT64_MIN;
    }
    return (int64_t)llround (v);
}

/* Extra virtual ns over real ns since origin, before the offset. The real
 * interval is an integer difference first: as doubles, absolute times lose ns.
 */
static double excess (const fm_vclock_t *vc, int64_t real_ns, double phase_ns)
{
    double since = (double)real_ns - (double)vc->origin;
    int64_t d;

    if (!__builtin_sub_overflow (real_ns, vc->origin, &d)) {
        since = (double)d;
    }
    return vc->p.drift_ppb * 1e-9 * since + phase_ns;
}

int64_t fm_vclock_map (fm_vclock_t *vc, int64_t real_ns)
{
    double phase;
    int64_t ext, off;

    if (!vc) {
        return real_ns;
    }
    phase = vc->phase_ns;
    if (vc->p.wander_ppb > 0) {
        if (real_ns > vc->last) {
            double dt = (double)real_ns - (double)vc->last;
            double step =
                vc->p.wander_ppb * sqrt (dt * 1e-9) * fm_vclock_rng_normal (&vc->rng);
            double f = vc->freq_ppb + step;

            /* the walk is bounded so that the clock never runs backwards */
            if (f > FM_VCLOCK_DRIFT_MAX_PPB) {
                f = FM_VCLOCK_DRIFT_MAX_PPB;
            }
            if (f < -FM_VCLOCK_DRIFT_MAX_PPB) {
                f = -FM_VCLOCK_DRIFT_MAX_PPB;
            }
            /* trapezoid: the frequency moved linearly over the interval */
            phase += (vc->freq_ppb + f) / 2 * 1e-9 * dt;
            vc->phase_ns = phase;
            vc->freq_ppb = f;
            vc->last = real_ns;
        } else {
            phase -= vc->freq_ppb * 1e-9 * ((double)vc->last - (double)real_ns);
        }
    }
    ext = saturate (excess (vc, real_ns, phase));
    if (__builtin_add_overflow (ext, vc->p.offset_ns, &off)
        || __builtin_add_overflow (real_ns, off, &off)) {
        return real_ns > 0 ? INT64_MAX : INT64_MIN;
    }
    return off;
}

int64_t fm_vclock_unmap (const fm_vclock_t *vc, int64_t virt_ns)
{
    double rate, v;
    int64_t base, dv;

    if (!vc) {
        return virt_ns;
    }
    /* virt = last + offset + excess(last) + rate (r - last) */
    rate = 1. + fm_vclock_rate_ppb (vc) * 1e-9;
    base = saturate ((double)vc->p.offset_ns + excess (vc, vc->last, vc->phase_ns));
    if (__builtin_add_overflow (vc->last, base, &base)
        || __builtin_sub_overflow (virt_ns, base, &dv)) {
        return virt_ns;
    }
    v = (double)dv / rate;
    return vc->last + saturate (v);
}

double fm_vclock_rate_ppb (const fm_vclock_t *vc)
{
    return vc ? vc->p.drift_ppb + vc->freq_ppb : 0.;
}

int fm_vclock_params_parse (const char *s, fm_vclock_params_t *p, fm_error_t *err)
{
    fm_vclock_params_t v = {0};
    char *end;

    if (!s || !p || strlen (s) > 128) {
        errno = EINVAL;
        return fm_errprintf (err, "virtual clock: missing or too long specification");
    }
    errno = 0;
    v.offset_ns = strtoll (s, &end, 10);
    if (errno || end == s) {
        errno = EINVAL;
        return fm_errprintf (err, "virtual clock: bad offset in '%s'", s);
    }
    if (*end == ',') {
        s = end + 1;
        v.drift_ppb = strtod (s, &end);
        if (end == s) {
            errno = EINVAL;
            return fm_errprintf (err, "virtual clock: bad drift in '%s'", s);
        }
    }
    if (*end == ',') {
        s = end + 1;
        v.wander_ppb = strtod (s, &end);
        if (end == s) {
            errno = EINVAL;
            return fm_errprintf (err, "virtual clock: bad wander in '%s'", s);
        }
    }
    if (*end == ',') {
        s = end + 1;
        errno = 0;
        v.seed = strtoull (s, &end, 10);
        if (errno || end == s || *s == '-') {
            errno = EINVAL;
            return fm_errprintf (err, "virtual clock: bad seed in '%s'", s);
        }
    }
    if (*end != '\0') {
        errno = EINVAL;
        return fm_errprintf (err, "virtual clock: trailing '%s'", end);
    }
    if (check (&v, err) < 0) {
        return -1;
    }
    *p = v;
    return 0;
}
