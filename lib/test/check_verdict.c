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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "check_verdict.h"

#define GBIT 1000000000LL

static fm_check_result_t pair (uint32_t a, uint32_t b, int64_t lat, int64_t bw)
{
    fm_check_result_t r = {.a = a, .b = b, .ok = true};

    r.lat_p50_ns = lat;
    r.lat_p99_ns = 2 * lat;
    r.bw_bps = bw;
    return r;
}

/* quick on 4 nodes, node 3 behind a 1 Mbit/s link: pairs (2,3) and (0,3) */
static void test_slow_node_quick (void **state)
{
    fm_check_result_t r[4] = {
        pair (0, 1, 30000, 8 * GBIT),
        pair (2, 3, 900000, 1000000),
        pair (1, 2, 32000, 7 * GBIT),
        pair (0, 3, 950000, 990000),
    };
    fm_check_node_t nodes[4];
    fm_check_summary_t s;

    assert_int_equal (fm_check_verdict (r, 4, 4, NULL, nodes, &s), 0);
    assert_true (r[1].slow);
    assert_true (r[3].slow);
    assert_false (r[0].slow);
    assert_false (r[2].slow);
    assert_true (nodes[3].slow);
    assert_int_equal (nodes[3].nslow, 2);
    /* its neighbours have one slow pair of two: not slow */
    assert_false (nodes[0].slow);
    assert_false (nodes[2].slow);
    assert_false (nodes[1].slow);
    assert_int_equal (s.nslow_nodes, 1);
    assert_int_equal (s.nfailed_nodes, 0);
    fm_check_verdict_sort (r, 4);
    /* worst first: the 990 kbit/s pair, then the 1 Mbit/s one */
    assert_int_equal (r[0].a, 0);
    assert_int_equal (r[0].b, 3);
    assert_int_equal (r[1].a, 2);
    assert_int_equal (r[1].b, 3);
    assert_true (r[1].badness >= r[2].badness);
    assert_true (r[2].badness >= r[3].badness);
}

static void test_failed_first (void **state)
{
    fm_check_result_t r[3] = {
        pair (0, 1, 30000, 1000000),
        pair (1, 2, 30000, 8 * GBIT),
        pair (0, 2, 30000, 8 * GBIT),
    };
    fm_check_node_t nodes[3];
    fm_check_summary_t s;

    r[2].ok = false;
    snprintf (r[2].error, sizeof (r[2].error), "connect: timed out");
    assert_int_equal (fm_check_verdict (r, 3, 3, NULL, nodes, &s), 0);
    assert_true (isinf (r[2].badness));
    assert_false (r[2].slow);
    fm_check_verdict_sort (r, 3);
    assert_false (r[0].ok);
    assert_int_equal (r[1].bw_bps, 1000000);
    /* one failed pair of two: not failed */
    assert_false (nodes[0].failed);
    assert_false (nodes[2].failed);
}

static void test_failed_node (void **state)
{
    fm_check_result_t r[4] = {
        pair (0, 1, 30000, 8 * GBIT),
        pair (2, 3, 30000, 8 * GBIT),
        pair (1, 2, 30000, 8 * GBIT),
        pair (0, 3, 30000, 8 * GBIT),
    };
    fm_check_node_t nodes[4];
    fm_check_summary_t s;

    r[1].ok = r[3].ok = false;
    assert_int_equal (fm_check_verdict (r, 4, 4, NULL, nodes, &s), 0);
    assert_true (nodes[3].failed);
    assert_false (nodes[3].slow);
    assert_false (nodes[0].failed);
    assert_int_equal (s.nfailed_nodes, 1);
    assert_int_equal (s.nslow_nodes, 0);
    /* no good pair at all: medians 0, every node failed */
    for (int i = 0; i < 4; i++) {
        r[i].ok = false;
    }
    assert_int_equal (fm_check_verdict (r, 4, 4, NULL, nodes, &s), 0);
    assert_int_equal (s.median_bw_bps, 0);
    assert_int_equal (s.nfailed_nodes, 4);
}

static void test_latency_rule (void **state)
{
    /* 4x the median but within the 200 us floor: noise, not slow */
    fm_check_result_t r[4] = {
        pair (0, 1, 20000, 8 * GBIT),
        pair (2, 3, 20000, 8 * GBIT),
        pair (1, 2, 20000, 8 * GBIT),
        pair (0, 3, 150000, 8 * GBIT),
    };
    fm_check_node_t nodes[4];
    fm_check_summary_t s;

    assert_int_equal (fm_check_verdict (r, 4, 4, NULL, nodes, &s), 0);
    assert_int_equal (s.median_lat_p50_ns, 20000);
    assert_false (r[3].slow);
    /* beyond both: slow */
    r[3].lat_p50_ns = 20000 + FM_CHECK_LAT_FLOOR_NS + 1;
    assert_int_equal (fm_check_verdict (r, 4, 4, NULL, nodes, &s), 0);
    assert_true (r[3].slow);
    /* bandwidth exactly a quarter of the median is not below it */
    r[3].lat_p50_ns = 20000;
    r[3].bw_bps = 2 * GBIT;
    assert_int_equal (fm_check_verdict (r, 4, 4, NULL, nodes, &s), 0);
    assert_int_equal (s.median_bw_bps, 8 * GBIT);
    assert_false (r[3].slow);
    r[3].bw_bps = 2 * GBIT - 1;
    assert_int_equal (fm_check_verdict (r, 4, 4, NULL, nodes, &s), 0);
    assert_true (r[3].slow);
}

/* A node under validation with two known-good peers (a full check of three):
 * its two pairs are the majority, and only the peers' pair is the norm.
 */
static void test_reference (void **state)
{
    fm_check_result_t r[3] = {
        pair (0, 1, 900000, 20000000),
        pair (0, 2, 950000, 25000000),
        pair (1, 2, 30000, 9 * GBIT),
    };
    const bool ref[3] = {false, true, true};
    const bool ref_one[3] = {false, true, false};
    fm_check_node_t nodes[3];
    fm_check_summary_t s;

    /* without the reference the slow node sets the norm */
    assert_int_equal (fm_check_verdict (r, 3, 3, NULL, nodes, &s), 0);
    assert_false (s.by_reference);
    assert_int_equal (s.nslow_nodes, 0);
    assert_int_equal (s.median_bw_bps, 25000000);
    assert_int_equal (fm_check_verdict (r, 3, 3, ref, nodes, &s), 0);
    assert_true (s.by_reference);
    assert_int_equal (s.median_bw_bps, 9 * GBIT);
    assert_int_equal (s.median_lat_p50_ns, 30000);
    assert_true (nodes[0].slow);
    assert_false (nodes[1].slow);
    assert_false (nodes[2].slow);
    assert_false (r[2].slow);
    assert_int_equal (s.nslow_nodes, 1);
    /* healed: every pair alike, nobody slow */
    r[0] = pair (0, 1, 31000, 8 * GBIT);
    r[1] = pair (0, 2, 29000, 10 * GBIT);
    assert_int_equal (fm_check_verdict (r, 3, 3, ref, nodes, &s), 0);
    assert_int_equal (s.nslow_nodes + s.nfailed_nodes, 0);
    /* a reference pair that failed is no norm: the run's medians serve */
    r[2].ok = false;
    assert_int_equal (fm_check_verdict (r, 3, 3, ref, nodes, &s), 0);
    assert_false (s.by_reference);
    assert_int_equal (s.median_lat_p50_ns, 30000);
    /* one reference node makes no reference pair */
    r[2].ok = true;
    assert_int_equal (fm_check_verdict (r, 3, 3, ref_one, nodes, &s), 0);
    assert_false (s.by_reference);
}

static void test_bad_input (void **state)
{
    fm_check_result_t r[1] = {pair (0, 4, 1, 1)};
    fm_check_node_t nodes[4] = {{.npairs = 9}};
    fm_check_summary_t s = {.nslow_nodes = 9};

    errno = 0;
    assert_int_equal (fm_check_verdict (r, 1, 4, NULL, nodes, &s), -1);
    assert_int_equal (errno, EINVAL);
    r[0].b = 0;
    assert_int_equal (fm_check_verdict (r, 1, 4, NULL, nodes, &s), -1);
    assert_int_equal (nodes[0].npairs, 9);
    assert_int_equal (s.nslow_nodes, 9);
    assert_int_equal (fm_check_verdict (NULL, 0, 4, NULL, nodes, &s), 0);
    assert_int_equal (s.nslow_nodes, 0);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_slow_node_quick),
        cmocka_unit_test (test_failed_first),
        cmocka_unit_test (test_failed_node),
        cmocka_unit_test (test_latency_rule),
        cmocka_unit_test (test_reference),
        cmocka_unit_test (test_bad_input),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
