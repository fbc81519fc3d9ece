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
#include <cmocka.h>

#include "linkwin.h"

static void test_quantiles_empty (void **state)
{
    fm_quantiles_t q;

    fm_linkwin_quantiles (NULL, 0, &q);
    assert_int_equal (q.n, 0);
    assert_int_equal (q.p50, 0);
    assert_int_equal (q.max, 0);
}

static void test_quantiles_nearest_rank (void **state)
{
    int64_t v[100];
    fm_quantiles_t q;

    /* 1..100 shuffled: nearest rank puts p50 at 50, p90 at 90, p99 at 99 */
    for (int i = 0; i < 100; i++) {
        v[i] = ((i * 37) % 100) + 1;
    }
    fm_linkwin_quantiles (v, 100, &q);
    assert_int_equal (q.n, 100);
    assert_int_equal (q.min, 1);
    assert_int_equal (q.p50, 50);
    assert_int_equal (q.p90, 90);
    assert_int_equal (q.p99, 99);
    assert_int_equal (q.max, 100);
}

static void test_quantiles_small (void **state)
{
    int64_t one[] = {7};
    int64_t three[] = {30, -10, 20};
    int64_t ten[10];
    fm_quantiles_t q;

    fm_linkwin_quantiles (one, 1, &q);
    assert_int_equal (q.p50, 7);
    assert_int_equal (q.p99, 7);
    fm_linkwin_quantiles (three, 3, &q);
    assert_int_equal (q.min, -10);
    assert_int_equal (q.p50, 20); /* ceil(1.5) = 2nd */
    assert_int_equal (q.p90, 30);
    /* one outlier in ten is p99 and max but not p90 */
    for (int i = 0; i < 10; i++) {
        ten[i] = i == 4 ? 1000000 : 100;
    }
    fm_linkwin_quantiles (ten, 10, &q);
    assert_int_equal (q.p50, 100);
    assert_int_equal (q.p90, 100);
    assert_int_equal (q.p99, 1000000);
    assert_int_equal (q.max, 1000000);
}

static void test_create_invalid (void **state)
{
    errno = 0;
    assert_null (fm_linkwin_create (0));
    assert_int_equal (errno, EINVAL);
    fm_linkwin_destroy (NULL);
}

/* An exchange over a path with delays d_fwd and d_rev, the peer's clock
 * `offset` ahead of ours, and `hold` ns between the peer's receive and send.
 */
static void exchange (fm_linkwin_t *w,
                      int64_t t1,
                      int64_t d_fwd,
                      int64_t d_rev,
                      int64_t offset,
                      int64_t hold)
{
    int64_t t2 = t1 + d_fwd + offset;
    int64_t t3 = t2 + hold;
    int64_t t4 = t3 - offset + d_rev;

    assert_int_equal (fm_linkwin_add (w, t1, t2, t3, t4), 0);
}

static void test_offset_and_owd (void **state)
{
    fm_linkwin_t *w = fm_linkwin_create (100);
    fm_linkstats_t s;
    const int64_t off = 5000000; /* 5 ms */

    assert_non_null (w);
    /* a symmetric fastest exchange (10 us each way) and slower queued ones */
    exchange (w, 1000, 20000, 30000, off, 700);
    exchange (w, 2000, 10000, 10000, off, 500);
    exchange (w, 3000, 50000, 10000, off, 900);
    exchange (w, 4000, 10000, 90000, off, 100);
    fm_linkwin_close (w, &s);
    assert_int_equal (s.samples, 4);
    assert_true (s.have_offset);
    assert_int_equal (s.offset_ns, off);
    assert_int_equal (s.offset_err_ns, 10000);
    assert_int_equal (s.rtt.min, 20000);
    assert_int_equal (s.rtt.max, 100000);
    /* one-way delays come back exactly once the offset is removed */
    assert_int_equal (s.owd_fwd.min, 10000);
    assert_int_equal (s.owd_fwd.max, 50000);
    assert_int_equal (s.owd_fwd.p50, 10000);
    assert_int_equal (s.owd_rev.min, 10000);
    assert_int_equal (s.owd_rev.max, 90000);
    assert_int_equal (s.owd_rev.p90, 90000);

    /* the next window starts empty */
    fm_linkwin_close (w, &s);
    assert_int_equal (s.samples, 0);
    assert_false (s.have_offset);
    assert_int_equal (s.rtt.n, 0);
    fm_linkwin_destroy (w);
}

static void test_asymmetric_bias_within_bound (void **state)
{
    fm_linkwin_t *w = fm_linkwin_create (10);
    fm_linkstats_t s;

    /* 2.7 us one way, 0.6 us back (the bias seen on veth): the estimate is
     * off by half the asymmetry, and the error bound still covers it
     */
    exchange (w, 100, 2700, 600, -123456, 50);
    fm_linkwin_close (w, &s);
    assert_int_equal (s.offset_err_ns, (3300 + 1) / 2);
    assert_true (llabs (s.offset_ns - -123456) <= s.offset_err_ns);
    assert_int_equal (s.offset_ns - -123456, (2700 - 600) / 2);
    fm_linkwin_destroy (w);
}

static void test_bad_samples (void **state)
{
    fm_linkwin_t *w = fm_linkwin_create (10);
    fm_linkstats_t s;

    errno = 0;
    assert_int_equal (fm_linkwin_add (w, 100, 200, 300, 50), -1); /* t4 < t1 */
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_linkwin_add (w, 100, 300, 200, 400), -1); /* t3 < t2 */
    /* the peer claims to have held the probe longer than the round trip */
    assert_int_equal (fm_linkwin_add (w, 100, 150, 500, 200), -1);
    fm_linkwin_close (w, &s);
    assert_int_equal (s.samples, 0);
    fm_linkwin_destroy (w);
}

static void test_full_window_counts_dropped (void **state)
{
    fm_linkwin_t *w = fm_linkwin_create (3);
    fm_linkstats_t s;

    for (int i = 0; i < 5; i++) {
        exchange (w, 1000 * i, 100 + i, 100, 0, 10);
    }
    fm_linkwin_close (w, &s);
    assert_int_equal (s.samples, 3);
    assert_int_equal (s.dropped, 2);
    assert_int_equal (s.rtt.max, 202);
    fm_linkwin_destroy (w);
}

static void test_loss_and_reorder (void **state)
{
    fm_linkwin_t *w = fm_linkwin_create (10);
    fm_linkstats_t s;

    /* window 1: 10 requests; 8 replies (one of them reordered), 2 timed out.
     * The peer saw 9 of 10 requests, 1 of them out of order: one request and
     * one reply were lost.
     */
    for (int i = 0; i < 8; i++) {
        fm_linkwin_reply (w, i == 3);
    }
    fm_linkwin_timeout (w);
    fm_linkwin_timeout (w);
    fm_linkwin_remote (w, 10, 9, 1);
    fm_linkwin_remote (w, 7, 7, 0); /* an older reply arriving late */
    fm_linkwin_late (w);
    fm_linkwin_close (w, &s);
    assert_int_equal (s.probes, 10);
    assert_int_equal (s.lost, 2);
    assert_int_equal (s.lost_fwd, 1);
    assert_int_equal (s.lost_rev, 1);
    assert_true (s.loss_fwd > 0.0999 && s.loss_fwd < 0.1001);
    assert_true (s.loss_rev > 0.111 && s.loss_rev < 0.1112); /* 1 of 9 */
    assert_int_equal (s.reorder_fwd, 1);
    assert_int_equal (s.reorder_rev, 1);
    assert_int_equal (s.late, 1);

    /* window 2 reports only the increase of the cumulative counters */
    for (int i = 0; i < 10; i++) {
        fm_linkwin_reply (w, false);
    }
    fm_linkwin_remote (w, 20, 19, 1);
    fm_linkwin_close (w, &s);
    assert_int_equal (s.probes, 10);
    assert_int_equal (s.lost, 0);
    assert_int_equal (s.lost_fwd, 0);
    assert_int_equal (s.reorder_fwd, 0);
    assert_int_equal (s.reorder_rev, 0);
    assert_true (s.loss_fwd == 0.0);

    /* window 3: the peer already knows of a lost request that has not timed
     * out here yet; it is attributed in the window where it times out
     */
    for (int i = 0; i < 9; i++) {
        fm_linkwin_reply (w, false);
    }
    fm_linkwin_remote (w, 30, 28, 1);
    fm_linkwin_close (w, &s);
    assert_int_equal (s.lost, 0);
    assert_int_equal (s.lost_fwd, 0);
    fm_linkwin_timeout (w);
    fm_linkwin_close (w, &s);
    assert_int_equal (s.lost, 1);
    assert_int_equal (s.lost_fwd, 1);
    assert_int_equal (s.lost_rev, 0);

    /* rebase: what the peer missed so far is forgotten */
    fm_linkwin_remote (w, 50, 40, 3);
    fm_linkwin_remote_rebase (w);
    fm_linkwin_timeout (w);
    fm_linkwin_close (w, &s);
    assert_int_equal (s.lost, 1);
    assert_int_equal (s.lost_fwd, 0);
    assert_int_equal (s.lost_rev, 1);
    assert_int_equal (s.reorder_fwd, 0);

    /* the peer restarted: counters begin again without a bogus jump */
    fm_linkwin_remote_reset (w);
    fm_linkwin_reply (w, false);
    fm_linkwin_remote (w, 1, 1, 0);
    fm_linkwin_close (w, &s);
    assert_int_equal (s.lost_fwd, 0);
    assert_int_equal (s.reorder_fwd, 0);
    fm_linkwin_destroy (w);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_quantiles_empty),
        cmocka_unit_test (test_quantiles_nearest_rank),
        cmocka_unit_test (test_quantiles_small),
        cmocka_unit_test (test_create_invalid),
        cmocka_unit_test (test_offset_and_owd),
        cmocka_unit_test (test_asymmetric_bias_within_bound),
        cmocka_unit_test (test_bad_samples),
        cmocka_unit_test (test_full_window_counts_dropped),
        cmocka_unit_test (test_loss_and_reorder),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
