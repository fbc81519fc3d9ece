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

#include "error.h"

static void test_format (void **state)
{
    fm_error_t err;

    assert_int_equal (fm_errprintf (&err, "%s:%d: %s", "a.conf", 7, "bad"), -1);
    assert_string_equal (err.text, "a.conf:7: bad");
}

static void test_preserves_errno (void **state)
{
    fm_error_t err;

    errno = ENOENT;
    fm_errprintf (&err, "x");
    assert_int_equal (errno, ENOENT);
    errno = EPERM;
    fm_errprintf (NULL, "%s", "y");
    assert_int_equal (errno, EPERM);
}

static void test_null_err (void **state)
{
    assert_int_equal (fm_errprintf (NULL, "%d", 1), -1);
    fm_error_clear (NULL);
}

static void test_truncates (void **state)
{
    struct {
        fm_error_t err;
        char canary[16];
    } s;
    char long_msg[500];

    memset (s.canary, 'C', sizeof (s.canary));
    memset (long_msg, 'x', sizeof (long_msg) - 1);
    long_msg[sizeof (long_msg) - 1] = '\0';
    assert_int_equal (fm_errprintf (&s.err, "ab%s", long_msg), -1);
    assert_int_equal (strlen (s.err.text), sizeof (s.err.text) - 1);
    assert_memory_equal (s.err.text, "abxxx", 5);
    for (size_t i = 0; i < sizeof (s.canary); i++) {
        assert_int_equal (s.canary[i], 'C');
    }
}

static void test_clear (void **state)
{
    fm_error_t err;

    fm_errprintf (&err, "something");
    fm_error_clear (&err);
    assert_string_equal (err.text, "");
}

static void test_empty_message (void **state)
{
    fm_error_t err;

    strcpy (err.text, "old");
    fm_errprintf (&err, "%s", "");
    assert_string_equal (err.text, "");
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_format),
        cmocka_unit_test (test_preserves_errno),
        cmocka_unit_test (test_null_err),
        cmocka_unit_test (test_truncates),
        cmocka_unit_test (test_clear),
        cmocka_unit_test (test_empty_message),
    };
    setvbuf (stdout, NULL, _IOLBF, 0);
    return cmocka_run_group_tests_name ("error", tests, NULL, NULL);
}
