/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_VCLOCK_H
#define FM_VCLOCK_H

/* A virtual clock for tests and benchmarks: it maps real timestamps (the host
 * clock, kernel timestamps included) to the readings of a clock that is off by
 * offset_ns, runs drift_ppb fast, and optionally wanders (a random walk of its
 * frequency). The agent's time source applies it to every timestamp it reads;
 * nothing ever steps or slews the host clock.
 *
 *   virt(r) = r + offset_ns + drift_ppb 1e-9 (r - origin) + W(r)
 *
 * W is 0 at origin; its frequency starts at 0 and takes a Gaussian step of
 * standard deviation wander_ppb sqrt(dt / 1 s) over each mapped interval dt,
 * the phase integrating it, so W is continuous and its frequency a random walk.
 * Reproducible: the same seed and the same sequence of mapped times give the
 * same readings.
 */

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* |drift| and |wander| limits: far beyond any crystal, keeps virt monotonic */
#define FM_VCLOCK_DRIFT_MAX_PPB 1000000.
#define FM_VCLOCK_WANDER_MAX_PPB 10000.

typedef struct {
    int64_t offset_ns; /* virt - real at origin */
    double drift_ppb;  /* constant frequency error */
    double wander_ppb; /* random walk step per sqrt(second), 0: none */
    uint64_t seed;     /* for the wander */
} fm_vclock_params_t;

typedef struct fm_vclock fm_vclock_t;

/* origin_ns: the real time at which virt - real = offset_ns. NULL with errno
 * EINVAL (parameters out of range, err says which) or ENOMEM.
 */
fm_vclock_t *
fm_vclock_create (const fm_vclock_params_t *p, int64_t origin_ns, fm_error_t *err);

/* NULL-safe; preserves errno. */
void fm_vclock_destroy (fm_vclock_t *vc);

/* The virtual reading for real time real_ns. Times after the latest mapped
 * one advance the wander; earlier ones (a kernel timestamp read after a later
 * clock reading) are interpolated back along the current frequency, so a
 * reading never moves the walk backwards. Saturates at the int64 range.
 */
int64_t fm_vclock_map (fm_vclock_t *vc, int64_t real_ns);

/* The inverse of the linear part at the latest state: the real time whose
 * reading is virt_ns (a deadline on the virtual clock, as a real time).
 */
int64_t fm_vclock_unmap (const fm_vclock_t *vc, int64_t virt_ns);

/* The current frequency error, drift plus wander, in ppb. */
double fm_vclock_rate_ppb (const fm_vclock_t *vc);

/* Parse "OFFSET[,DRIFT_PPB[,WANDER_PPB[,SEED]]]" with OFFSET in ns (a signed
 * integer), e.g. "-250000,15000,5,42" (config and test knobs). -1/EINVAL with
 * err on anything else.
 */
int fm_vclock_params_parse (const char *s, fm_vclock_params_t *p, fm_error_t *err);

/* A small deterministic generator (splitmix64) for the wander, the tests and
 * the benchmark, so that their runs replay from a seed.
 */
typedef struct {
    uint64_t s;
} fm_vclock_rng_t;

void fm_vclock_rng_seed (fm_vclock_rng_t *r, uint64_t seed);
uint64_t fm_vclock_rng_u64 (fm_vclock_rng_t *r);
double fm_vclock_rng_uniform (fm_vclock_rng_t *r); /* in (0, 1) */
double fm_vclock_rng_normal (fm_vclock_rng_t *r);  /* standard normal */
double fm_vclock_rng_exp (fm_vclock_rng_t *r, double mean);

#endif /* FM_VCLOCK_H */
