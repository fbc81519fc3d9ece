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

#include "duration.h"

static const struct {
    const char *s;
    int64_t ns;
} dur_ok[] = {
    {"0", 0},
    {"5", 5000000000LL},
    {"1.5", 1500000000LL},
    {"10ns", 10},
    {"250us", 250000},
    {"500ms", 500000000},
    {"5s", 5000000000LL},
    {"2m", 120000000000LL},
    {"1h", 3600000000000LL},
    {"7d", 604800000000000LL},
    {"1.5s", 1500000000LL},
    {"0.25ms", 250000},
    {"1.5ns", 1},
    {"0.000000001", 1},
    {"0.0000000009", 0},
    {"1.123456789123456789123456789s", 1123456789},
    {"0.5d", 43200000000000LL},
    {"9223372036854775807ns", INT64_MAX},
    {"9223372036s", 9223372036000000000LL},
    {"007s", 7000000000LL},
};

static const struct {
    const char *s;
    int err;
} dur_bad[] = {
    {"", EINVAL},
    {"-1s", EINVAL},
    {"+1s", EINVAL},
    {" 1s", EINVAL},
    {"1s ", EINVAL},
    {"1 s", EINVAL},
    {"s", EINVAL},
    {"1x", EINVAL},
    {"1sec", EINVAL},
    {"1S", EINVAL},
    {"1.s", EINVAL},
    {".5s", EINVAL},
    {"1..5s", EINVAL},
    {"1ss", EINVAL},
    {"1e3", EINVAL},
    {"0x10", EINVAL},
    {"9223372036854775808ns", ERANGE},
    {"9223372037s", ERANGE},
    {"106752d", ERANGE},
    {"99999999999999999999999", ERANGE},
};

static void test_duration_ok (void **state)
{
    for (size_t i = 0; i < sizeof (dur_ok) / sizeof (dur_ok[0]); i++) {
        int64_t ns = -42;
        if (fm_duration_parse (dur_ok[i].s, &ns) < 0) {
            fail_msg ("'%s' rejected: %s", dur_ok[i].s, strerror (errno));
        }
        if (ns != dur_ok[i].ns) {
            fail_msg ("'%s' gave %lld, want %lld",
                      dur_ok[i].s,
                      (long long)ns,
                      (long long)dur_ok[i].ns);
        }
    }
}

static void test_duration_bad (void **state)
{
    for (size_t i = 0; i < sizeof (dur_bad) / sizeof (dur_bad[0]); i++) {
        int64_t ns = -42;
        errno = 0;
        if (fm_duration_parse (dur_bad[i].s, &ns) != -1) {
            fail_msg ("'%s' accepted as %lld", dur_bad[i].s, (long long)ns);
        }
        if (errno != dur_bad[i].err) {
            fail_msg ("'%s': errno %d, want %d", dur_bad[i].s, errno, dur_bad[i].err);
        }
        /* no side effect on failure */
        assert_true (ns == -42);
    }
}

static void test_duration_null (void **state)
{
    int64_t ns;

    errno = 0;
    assert_int_equal (fm_duration_parse (NULL, &ns), -1);
    assert_int_equal (errno, EINVAL);
    errno = 0;
    assert_int_equal (fm_duration_parse ("1s", NULL), -1);
    assert_int_equal (errno, EINVAL);
}

static const struct {
    int64_t ns;
    const char *s;
} fmt_vectors[] = {
    {0, "0ns"},
    {999, "999ns"},
    {-999, "-999ns"},
    {1000, "1.0us"},
    {12345, "12.3us"},
    {-12345, "-12.3us"},
    {999949, "999.9us"},
    {1000000, "1.00ms"},
    {1204999, "1.20ms"},
    {999994999, "999.99ms"},
    {1000000000, "1.00s"},
    {2500000000LL, "2.50s"},
    {-2500000000LL, "-2.50s"},
};

static void test_format (void **state)
{
    char buf[32];

    for (size_t i = 0; i < sizeof (fmt_vectors) / sizeof (fmt_vectors[0]); i++) {
        assert_ptr_equal (fm_duration_format (fmt_vectors[i].ns, buf, sizeof (buf)), buf);
        assert_string_equal (buf, fmt_vectors[i].s);
    }
}

/* what fm_duration_format prints, fm_duration_parse reads back (ns and s exact) */
static void test_format_parses (void **state)
{
    static const int64_t exact[] = {0, 7, 999, 2000000000LL, 86400000000000LL};
    char buf[32];
    int64_t ns;

    for (size_t i = 0; i < sizeof (exact) / sizeof (exact[0]); i++) {
        fm_duration_format (exact[i], buf, sizeof (buf));
        assert_int_equal (fm_duration_parse (buf, &ns), 0);
        assert_true (ns == exact[i]);
    }
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_duration_ok),
        cmocka_unit_test (test_duration_bad),
        cmocka_unit_test (test_duration_null),
        cmocka_unit_test (test_format),
        cmocka_unit_test (test_format_parses),
    };

    return cmocka_run_group_tests_name ("duration", tests, NULL, NULL);
}
