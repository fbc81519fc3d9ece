/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fmtime.h"

static void test_clocks (void **state)
{
    int64_t m1 = fm_time_mono_ns ();
    int64_t m2 = fm_time_mono_ns ();
    int64_t r = fm_time_real_ns ();
    struct timespec ts;

    assert_true (m1 > 0);
    assert_true (m2 >= m1);
    clock_gettime (CLOCK_REALTIME, &ts);
    /* the two reads of the real clock are well within a second of each other */
    assert_true (fm_time_from_timespec (&ts) - r >= 0);
    assert_true (fm_time_from_timespec (&ts) - r < FM_NSEC_PER_SEC);
    /* after 2020-01-01 */
    assert_true (r > 1577836800LL * FM_NSEC_PER_SEC);
}

static const struct {
    int64_t ns;
    time_t sec;
    long nsec;
} ts_vectors[] = {
    {0, 0, 0},
    {1, 0, 1},
    {999999999, 0, 999999999},
    {1000000000, 1, 0},
    {1500000000, 1, 500000000},
    {-1, -1, 999999999},
    {-1000000000, -1, 0},
    {-1500000000, -2, 500000000},
    {INT64_MAX, INT64_MAX / 1000000000, INT64_MAX % 1000000000},
};

static void test_timespec_vectors (void **state)
{
    for (size_t i = 0; i < sizeof (ts_vectors) / sizeof (ts_vectors[0]); i++) {
        struct timespec ts = fm_time_to_timespec (ts_vectors[i].ns);
        assert_int_equal (ts.tv_sec, ts_vectors[i].sec);
        assert_int_equal (ts.tv_nsec, ts_vectors[i].nsec);
        assert_true (fm_time_from_timespec (&ts) == ts_vectors[i].ns);
    }
}

static void test_timespec_saturates (void **state)
{
    struct timespec big = {.tv_sec = INT64_MAX / 1000, .tv_nsec = 0};
    struct timespec small = {.tv_sec = INT64_MIN / 1000, .tv_nsec = 0};

    assert_true (fm_time_from_timespec (&big) == INT64_MAX);
    assert_true (fm_time_from_timespec (&small) == INT64_MIN);
}

static const struct {
    int64_t ns;
    const char *s;
} rfc_vectors[] = {
    {0, "1970-01-01T00:00:00.000000Z"},
    {1796222344123456789LL, "2026-12-02T14:39:04.123456Z"},
    {951782400000000000LL, "2000-02-29T00:00:00.000000Z"},
    {999, "1970-01-01T00:00:00.000000Z"},
    {1000, "1970-01-01T00:00:00.000001Z"},
    {-1, "1969-12-31T23:59:59.999999Z"},
    {-1500000000LL, "1969-12-31T23:59:58.500000Z"},
};

static void test_rfc3339 (void **state)
{
    char buf[64];

    for (size_t i = 0; i < sizeof (rfc_vectors) / sizeof (rfc_vectors[0]); i++) {
        assert_ptr_equal (fm_time_format_rfc3339 (rfc_vectors[i].ns, buf, sizeof (buf)),
                          buf);
        assert_string_equal (buf, rfc_vectors[i].s);
    }
}

static void test_rfc3339_short_buffer (void **state)
{
    char buf[28];

    /* 27 characters and the NUL fit exactly */
    assert_non_null (fm_time_format_rfc3339 (0, buf, sizeof (buf)));
    errno = 0;
    assert_null (fm_time_format_rfc3339 (0, buf, sizeof (buf) - 1));
    assert_int_equal (errno, ERANGE);
    errno = 0;
    assert_null (fm_time_format_rfc3339 (0, buf, 0));
    assert_int_equal (errno, ERANGE);
    errno = 0;
    assert_null (fm_time_format_rfc3339 (0, NULL, 10));
    assert_int_equal (errno, EINVAL);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_clocks),
        cmocka_unit_test (test_timespec_vectors),
        cmocka_unit_test (test_timespec_saturates),
        cmocka_unit_test (test_rfc3339),
        cmocka_unit_test (test_rfc3339_short_buffer),
    };
    setvbuf (stdout, NULL, _IOLBF, 0);
    return cmocka_run_group_tests_name ("fmtime", tests, NULL, NULL);
}
