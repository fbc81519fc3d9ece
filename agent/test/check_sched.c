/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "check_sched.h"

/* Common properties: pairs sorted by round, a < b < n, rounds below
 * nrounds, no rank twice in a round, no pair twice. Returns the adjacency.
 */
static unsigned char *
check_common (const fm_check_pair_t *p, size_t np, uint32_t n, uint32_t nrounds)
{
    unsigned char *adj = calloc ((size_t)n * n, 1);
    unsigned char *busy = calloc ((size_t)n * nrounds, 1);

    assert_non_null (adj);
    assert_non_null (busy);
    for (size_t i = 0; i < np; i++) {
        assert_true (p[i].a < p[i].b);
        assert_true (p[i].b < n);
        assert_true (p[i].round < nrounds);
        if (i > 0) {
            assert_true (p[i - 1].round <= p[i].round);
        }
        assert_int_equal (busy[p[i].round * n + p[i].a], 0);
        assert_int_equal (busy[p[i].round * n + p[i].b], 0);
        busy[p[i].round * n + p[i].a] = busy[p[i].round * n + p[i].b] = 1;
        assert_int_equal (adj[p[i].a * n + p[i].b], 0);
        adj[p[i].a * n + p[i].b] = adj[p[i].b * n + p[i].a] = 1;
    }
    free (busy);
    return adj;
}

static void test_quick_ring (void **state)
{
    for (uint32_t n = 2; n <= 41; n++) {
        fm_check_pair_t *p;
        size_t np;
        uint32_t nr;
        unsigned char *adj;

        assert_int_equal (fm_check_sched_schedule (FM_CHECK_QUICK, n, &p, &np, &nr), 0);
        adj = check_common (p, np, n, nr);
        if (n == 2) {
            assert_int_equal (np, 1);
            assert_int_equal (nr, 1);
        } else {
            /* exactly the ring: each node meets both neighbours, nothing else */
            assert_int_equal (np, n);
            assert_int_equal (nr, n % 2 ? 3 : 2);
            for (uint32_t i = 0; i < n; i++) {
                uint32_t deg = 0;
                assert_int_equal (adj[i * n + (i + 1) % n], 1);
                for (uint32_t j = 0; j < n; j++) {
                    deg += adj[i * n + j];
                }
                assert_int_equal (deg, 2);
            }
        }
        free (adj);
        free (p);
    }
}

static void test_quick_four (void **state)
{
    /* the documented example: (0,1) (2,3), then (1,2) (0,3) */
    fm_check_pair_t *p;
    size_t np;
    uint32_t nr;

    assert_int_equal (fm_check_sched_schedule (FM_CHECK_QUICK, 4, &p, &np, &nr), 0);
    assert_int_equal (np, 4);
    assert_int_equal (p[0].a, 0);
    assert_int_equal (p[0].b, 1);
    assert_int_equal (p[0].round, 0);
    assert_int_equal (p[1].a, 2);
    assert_int_equal (p[1].b, 3);
    assert_int_equal (p[1].round, 0);
    assert_int_equal (p[2].a, 1);
    assert_int_equal (p[2].b, 2);
    assert_int_equal (p[2].round, 1);
    assert_int_equal (p[3].a, 0);
    assert_int_equal (p[3].b, 3);
    assert_int_equal (p[3].round, 1);
    free (p);
}

static void test_full_all_pairs (void **state)
{
    for (uint32_t n = 2; n <= FM_CHECK_FULL_MAX; n += (n < 20 ? 1 : 27)) {
        fm_check_pair_t *p;
        size_t np;
        uint32_t nr;
        unsigned char *adj;

        assert_int_equal (fm_check_sched_schedule (FM_CHECK_FULL, n, &p, &np, &nr), 0);
        assert_int_equal (np, (size_t)n * (n - 1) / 2);
        assert_int_equal (nr, n % 2 ? n : n - 1);
        adj = check_common (p, np, n, nr);
        for (uint32_t i = 0; i < n; i++) {
            for (uint32_t j = 0; j < n; j++) {
                assert_int_equal (adj[i * n + j], i != j);
            }
        }
        free (adj);
        free (p);
    }
}

static void test_bounds (void **state)
{
    fm_check_pair_t *p = NULL;
    size_t np = 7;
    uint32_t nr = 7;

    errno = 0;
    assert_int_equal (fm_check_sched_schedule (FM_CHECK_QUICK, 1, &p, &np, &nr), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_check_sched_schedule (FM_CHECK_FULL, 0, &p, &np, &nr), -1);
    assert_int_equal (
        fm_check_sched_schedule (FM_CHECK_FULL, FM_CHECK_FULL_MAX + 1, &p, &np, &nr),
        -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (
        fm_check_sched_schedule (FM_CHECK_QUICK, FM_CHECK_NODES_MAX + 1, &p, &np, &nr),
        -1);
    /* nothing is touched on failure */
    assert_null (p);
    assert_int_equal (np, 7);
    assert_int_equal (nr, 7);
    assert_int_equal (
        fm_check_sched_schedule (FM_CHECK_QUICK, FM_CHECK_NODES_MAX, &p, &np, &nr), 0);
    assert_int_equal (np, FM_CHECK_NODES_MAX);
    free (p);
    assert_string_equal (fm_check_sched_mode_name (FM_CHECK_FULL), "full");
    assert_string_equal (fm_check_sched_mode_name (FM_CHECK_QUICK), "quick");
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_quick_ring),
        cmocka_unit_test (test_quick_four),
        cmocka_unit_test (test_full_all_pairs),
        cmocka_unit_test (test_bounds),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
