/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vclock.h"

#define T0 1796000000000000000LL
#define SEC 1000000000LL

static void test_linear (void **state)
{
    fm_vclock_params_t p = {.offset_ns = -250000, .drift_ppb = 15000.};
    fm_vclock_t *vc = fm_vclock_create (&p, T0, NULL);

    assert_non_null (vc);
    assert_true (fm_vclock_map (vc, T0) == T0 - 250000);
    /* 15 ppm: 15 us per second, exactly, whatever the absolute time */
    assert_true (fm_vclock_map (vc, T0 + SEC) == T0 + SEC - 250000 + 15000);
    assert_true (fm_vclock_map (vc, T0 + 100 * SEC)
                 == T0 + 100 * SEC - 250000 + 1500000);
    assert_true (fm_vclock_map (vc, T0 - SEC) == T0 - SEC - 250000 - 15000);
    /* one ns of real time is one ns of virtual time, within rounding */
    assert_true (fm_vclock_map (vc, T0 + 7) - fm_vclock_map (vc, T0) == 7);
    assert_true (fabs (fm_vclock_rate_ppb (vc) - 15000.) < 1e-9);
    /* unmap inverts */
    for (int64_t r = T0 - 3 * SEC; r <= T0 + 3 * SEC; r += SEC / 3) {
        int64_t back = fm_vclock_unmap (vc, fm_vclock_map (vc, r));
        assert_true (llabs (back - r) <= 1);
    }
    fm_vclock_destroy (vc);
}

static void test_identity_and_null (void **state)
{
    fm_vclock_params_t p = {0};
    fm_vclock_t *vc = fm_vclock_create (&p, 0, NULL);

    assert_non_null (vc);
    assert_true (fm_vclock_map (vc, T0) == T0);
    assert_true (fm_vclock_map (NULL, 123) == 123);
    assert_true (fm_vclock_unmap (NULL, 123) == 123);
    assert_true (fm_vclock_rate_ppb (NULL) == 0.);
    fm_vclock_destroy (vc);
    fm_vclock_destroy (NULL);
}

static void test_saturates (void **state)
{
    fm_vclock_params_t p = {.offset_ns = INT64_MAX / 2 + 1};
    fm_vclock_t *vc = fm_vclock_create (&p, 0, NULL);

    assert_non_null (vc);
    assert_true (fm_vclock_map (vc, INT64_MAX / 2 + 10) == INT64_MAX);
    fm_vclock_destroy (vc);
    p.offset_ns = INT64_MIN / 2 - 1;
    vc = fm_vclock_create (&p, 0, NULL);
    assert_non_null (vc);
    assert_true (fm_vclock_map (vc, INT64_MIN / 2 - 10) == INT64_MIN);
    fm_vclock_destroy (vc);
}

static void test_bad_params (void **state)
{
    fm_vclock_params_t p = {.drift_ppb = 2e6};
    fm_error_t err;

    errno = 0;
    assert_null (fm_vclock_create (&p, 0, &err));
    assert_int_equal (errno, EINVAL);
    assert_non_null (strstr (err.text, "drift"));
    p.drift_ppb = NAN;
    assert_null (fm_vclock_create (&p, 0, &err));
    p.drift_ppb = 0;
    p.wander_ppb = -1;
    assert_null (fm_vclock_create (&p, 0, &err));
    assert_non_null (strstr (err.text, "wander"));
    assert_null (fm_vclock_create (NULL, 0, &err));
}

/* The wander is a random walk of the frequency: after t seconds the
 * frequency's spread is wander sqrt(t), the phase's about wander t^1.5 / sqrt 3.
 */
static void test_wander_statistics (void **state)
{
    enum { N = 400, STEPS = 100 };
    double f2 = 0., ph2 = 0., fmean = 0.;
    double wander = 50.;

    for (int k = 0; k < N; k++) {
        fm_vclock_params_t p = {.wander_ppb = wander, .seed = 1000 + k};
        fm_vclock_t *vc = fm_vclock_create (&p, T0, NULL);
        int64_t v = 0;

        assert_non_null (vc);
        for (int i = 1; i <= STEPS; i++) {
            v = fm_vclock_map (vc, T0 + i * (SEC / 10)); /* 10 s in all */
        }
        f2 += fm_vclock_rate_ppb (vc) * fm_vclock_rate_ppb (vc);
        fmean += fm_vclock_rate_ppb (vc);
        ph2 += (double)(v - (T0 + 10 * SEC)) * (double)(v - (T0 + 10 * SEC));
        fm_vclock_destroy (vc);
    }
    /* frequency sd: 50 sqrt(10) = 158 ppb; phase sd: 50e-9 * 10^1.5 / sqrt 3 s = 913 ns
     */
    double fsd = sqrt (f2 / N), phsd = sqrt (ph2 / N);
    assert_true (fsd > 158. * 0.85 && fsd < 158. * 1.15);
    assert_true (fabs (fmean / N) < 3 * 158. / sqrt (N));
    assert_true (phsd > 913. * 0.85 && phsd < 913. * 1.15);
}

/* Same seed, same readings; reading an earlier time does not rewind the walk
 * and the clock never runs backwards.
 */
static void test_wander_reproducible_monotonic (void **state)
{
    fm_vclock_params_t p = {
        .offset_ns = 1000, .drift_ppb = -30000., .wander_ppb = 200., .seed = 42};
    fm_vclock_t *a = fm_vclock_create (&p, T0, NULL);
    fm_vclock_t *b = fm_vclock_create (&p, T0, NULL);
    int64_t prev = INT64_MIN;

    assert_non_null (a);
    assert_non_null (b);
    for (int i = 0; i < 10000; i++) {
        int64_t r = T0 + i * 1000000LL;
        int64_t va = fm_vclock_map (a, r);

        assert_true (va == fm_vclock_map (b, r));
        assert_true (va > prev);
        prev = va;
        /* a late kernel timestamp from 0.5 ms ago reads before the present */
        if (i > 0) {
            int64_t late = fm_vclock_map (a, r - 500000);
            assert_true (late < va);
            assert_true (late > va - 600000);
            fm_vclock_map (b, r - 500000);
        }
    }
    fm_vclock_destroy (a);
    fm_vclock_destroy (b);
}

static void test_parse (void **state)
{
    fm_vclock_params_t p;
    fm_error_t err;

    assert_int_equal (fm_vclock_params_parse ("-250000,15000,5,42", &p, &err), 0);
    assert_true (p.offset_ns == -250000);
    assert_true (p.drift_ppb == 15000.);
    assert_true (p.wander_ppb == 5.);
    assert_true (p.seed == 42);
    assert_int_equal (fm_vclock_params_parse ("123", &p, &err), 0);
    assert_true (p.offset_ns == 123 && p.drift_ppb == 0. && p.wander_ppb == 0.);
    assert_int_equal (fm_vclock_params_parse ("0,-1.5e3", &p, &err), 0);
    assert_true (p.drift_ppb == -1500.);

    const char *bad[] = {"",
                         "x",
                         "1,",
                         "1,2,",
                         "1,2,3,",
                         "1,2,3,-4",
                         "1,2,3,4,5",
                         "1 ",
                         "99999999999999999999",
                         "1,3e6",
                         "1,0,-2",
                         "1,nan"};
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        p.offset_ns = 77;
        errno = 0;
        assert_int_equal (fm_vclock_params_parse (bad[i], &p, &err), -1);
        assert_int_equal (errno, EINVAL);
        assert_true (p.offset_ns == 77); /* untouched on failure */
    }
    assert_int_equal (fm_vclock_params_parse (NULL, &p, &err), -1);
}

static void test_rng (void **state)
{
    fm_vclock_rng_t r;
    double sum = 0., sum2 = 0., esum = 0.;

    fm_vclock_rng_seed (&r, 1);
    uint64_t first = fm_vclock_rng_u64 (&r);
    fm_vclock_rng_seed (&r, 1);
    assert_true (fm_vclock_rng_u64 (&r) == first);
    for (int i = 0; i < 100000; i++) {
        double u = fm_vclock_rng_uniform (&r);
        double n = fm_vclock_rng_normal (&r);
        assert_true (u > 0. && u < 1.);
        sum += n;
        sum2 += n * n;
        esum += fm_vclock_rng_exp (&r, 3.);
    }
    assert_true (fabs (sum / 100000) < 0.02);
    assert_true (fabs (sum2 / 100000 - 1.) < 0.02);
    assert_true (fabs (esum / 100000 - 3.) < 0.05);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_linear),
        cmocka_unit_test (test_identity_and_null),
        cmocka_unit_test (test_saturates),
        cmocka_unit_test (test_bad_params),
        cmocka_unit_test (test_wander_statistics),
        cmocka_unit_test (test_wander_reproducible_monotonic),
        cmocka_unit_test (test_parse),
        cmocka_unit_test (test_rng),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
