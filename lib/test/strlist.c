/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "strlist.h"

static void test_add_has_del (void **state)
{
    char **v = NULL;
    size_t n = 0, cap = 0;
    char name[16];

    for (int i = 0; i < 20; i++) {
        snprintf (name, sizeof (name), "node%d", i);
        assert_int_equal (fm_strlist_add (&v, &n, &cap, name), 0);
    }
    assert_int_equal (n, 20);
    assert_true (cap >= 20);
    /* a second add of a name already there keeps one copy */
    assert_int_equal (fm_strlist_add (&v, &n, &cap, "node7"), 0);
    assert_int_equal (n, 20);
    assert_true (fm_strlist_has (v, n, "node19"));
    assert_false (fm_strlist_has (v, n, "node20"));
    assert_false (fm_strlist_has (v, n, "node"));
    fm_strlist_del (v, &n, "node0");
    fm_strlist_del (v, &n, "absent");
    assert_int_equal (n, 19);
    assert_false (fm_strlist_has (v, n, "node0"));
    assert_true (fm_strlist_has (v, n, "node1"));
    fm_strlist_free (v, n);
}

static void test_empty (void **state)
{
    size_t n = 0;

    assert_false (fm_strlist_has (NULL, 0, "x"));
    fm_strlist_del (NULL, &n, "x");
    assert_int_equal (n, 0);
    fm_strlist_free (NULL, 0);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_add_has_del),
        cmocka_unit_test (test_empty),
    };

    return cmocka_run_group_tests_name ("strlist", tests, NULL, NULL);
}
