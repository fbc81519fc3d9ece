/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "health.h"

static void test_xid_policy (void **state)
{
    /* application errors never blame the GPU */
    const unsigned int app[] = {13, 31, 43, 45, 68, 109};
    for (size_t i = 0; i < sizeof (app) / sizeof (app[0]); i++) {
        assert_int_equal (fm_health_xid_class (app[i]), FM_HCLASS_APP);
    }
    const unsigned int reset[] = {48, 62, 64, 74, 95, 119, 120, 140};
    for (size_t i = 0; i < sizeof (reset) / sizeof (reset[0]); i++) {
        assert_int_equal (fm_health_xid_class (reset[i]), FM_HCLASS_RESET);
        assert_string_equal (fm_health_xid_action (reset[i]), "RESET_GPU");
    }
    assert_int_equal (fm_health_xid_class (79), FM_HCLASS_REBOOT);
    assert_string_equal (fm_health_xid_action (79), "RESTART_BM");
    assert_int_equal (fm_health_xid_class (63), FM_HCLASS_WARN);
    assert_int_equal (fm_health_xid_class (92), FM_HCLASS_WARN);
    assert_int_equal (fm_health_xid_class (94), FM_HCLASS_WARN);
    assert_string_equal (fm_health_xid_action (94), "RESTART_APP");
    assert_string_equal (fm_health_xid_action (13), "RESTART_APP");
    /* unknown ones are reported, not ignored, and blame nobody yet */
    assert_int_equal (fm_health_xid_class (0), FM_HCLASS_WARN);
    assert_int_equal (fm_health_xid_class (4000000000u), FM_HCLASS_WARN);
    assert_string_equal (fm_health_xid_action (999), "UNKNOWN");
    assert_true (FM_HCLASS_APP < FM_HCLASS_WARN && FM_HCLASS_WARN < FM_HCLASS_RESET
                 && FM_HCLASS_RESET < FM_HCLASS_REBOOT
                 && FM_HCLASS_REBOOT < FM_HCLASS_FAULT);
    assert_string_equal (fm_health_class_name (FM_HCLASS_APP), "application");
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_xid_policy),
    };

    return cmocka_run_group_tests (tests, NULL, NULL);
}
