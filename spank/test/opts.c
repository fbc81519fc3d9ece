/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "opts.h"

/* The spank_* and slurm_* symbols libfmspank.la refers to, unused here. */
#include "stubs.h"

static void test_request_valid (void **state)
{
    static const struct {
        const char *arg;
        fm_mode_t mode;
        double rate;
    } ok[] = {
        {NULL, FM_MODE_OBSERVE, 0},
        {"", FM_MODE_OBSERVE, 0},
        {"observe", FM_MODE_OBSERVE, 0},
        {"protect", FM_MODE_PROTECT, 0},
        {"off", FM_MODE_OFF, 0},
        {"protect,rate=20", FM_MODE_PROTECT, 20},
        {"rate=0.5", FM_MODE_OBSERVE, 0.5},
        {"observe,rate=500", FM_MODE_OBSERVE, 500},
    };
    for (size_t i = 0; i < sizeof (ok) / sizeof (ok[0]); i++) {
        fm_request_t r = {.mode = 99};
        fm_error_t err;
        assert_int_equal (fm_opts_request_parse (ok[i].arg, &r, &err), 0);
        assert_int_equal (r.mode, ok[i].mode);
        assert_true (r.rate == ok[i].rate);
    }
}

static void test_request_invalid (void **state)
{
    static const char *bad[] = {
        "bogus",
        "OBSERVE",
        "observe,protect",
        "rate=0",
        "rate=501",
        "rate=x",
        "rate=",
        "rate=1,rate=2",
        "observe,foo=1",
        ",",
        "rate=nan",
        "rate=1e999",
        "rate=10,protect",
        "observeobserveobserveobserveobserveobserveobserveobserveobserveobserve",
    };
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        fm_request_t r = {.mode = FM_MODE_PROTECT, .rate = 7};
        fm_error_t err = {""};
        errno = 0;
        assert_int_equal (fm_opts_request_parse (bad[i], &r, &err), -1);
        assert_int_equal (errno, EINVAL);
        /* the user sees which value and what is allowed */
        assert_non_null (strstr (err.text, "--fabric-monitor"));
        assert_int_equal (r.mode, FM_MODE_PROTECT);
        assert_true (r.rate == 7);
    }
}

static void test_bogus_message (void **state)
{
    fm_request_t r;
    fm_error_t err;

    fm_opts_request_parse ("bogus", &r, &err);
    assert_string_equal (err.text,
                         "--fabric-monitor: invalid value 'bogus' "
                         "(want observe, protect or off, optionally ,rate=N)");
}

static void test_conf_defaults (void **state)
{
    fm_spank_conf_t c;
    fm_error_t err;

    assert_int_equal (fm_opts_conf_parse (0, NULL, &c, &err), 0);
    assert_string_equal (c.daemon, FM_SPANK_DEFAULT_DAEMON);
    assert_string_equal (c.agent, FM_SPANK_DEFAULT_AGENT);
    assert_string_equal (c.statedir, FM_SPANK_DEFAULT_STATEDIR);
    assert_string_equal (c.munge_socket, "");
    assert_int_equal (c.def, FM_MODE_OFF);
    assert_false (c.failonerror);
}

static void test_conf_all (void **state)
{
    char *av[] = {"daemon=http://10.77.0.1:8470",
                  "agent=/opt/fm/bin/fabric-agent",
                  "munge_socket=/run/munge/sock",
                  "statedir=/var/run/fm",
                  "default=observe",
                  "failonerror",
                  "health_root=/var/tmp/fix/%n"};
    fm_spank_conf_t c;
    fm_error_t err;

    assert_int_equal (fm_opts_conf_parse (7, av, &c, &err), 0);
    assert_string_equal (c.health_root, "/var/tmp/fix/%n");
    assert_string_equal (c.daemon, "http://10.77.0.1:8470");
    assert_string_equal (c.agent, "/opt/fm/bin/fabric-agent");
    assert_string_equal (c.munge_socket, "/run/munge/sock");
    assert_string_equal (c.statedir, "/var/run/fm");
    assert_int_equal (c.def, FM_MODE_OBSERVE);
    assert_true (c.failonerror);
}

static void test_conf_invalid (void **state)
{
    static char *bad[] = {"daemon=ftp://x",
                          "daemon=https://fabricd:8470",
                          "agent=relative/path",
                          "statedir=",
                          "default=maybe",
                          "munge_socket=sock",
                          "verbose",
                          "health_root=sys",
                          "daemon="};
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        fm_spank_conf_t c = {.def = FM_MODE_PROTECT};
        fm_error_t err = {""};
        char *av[] = {"default=observe", bad[i]};
        errno = 0;
        assert_int_equal (fm_opts_conf_parse (2, av, &c, &err), -1);
        assert_int_equal (errno, EINVAL);
        assert_true (strlen (err.text) > 0);
        assert_int_equal (c.def, FM_MODE_PROTECT); /* unchanged on failure */
    }
}

static void test_mode_names (void **state)
{
    assert_string_equal (fm_opts_mode_name (FM_MODE_OFF), "off");
    assert_string_equal (fm_opts_mode_name (FM_MODE_OBSERVE), "observe");
    assert_string_equal (fm_opts_mode_name (FM_MODE_PROTECT), "protect");
    assert_string_equal (fm_opts_mode_name (7), "?");
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_request_valid),
        cmocka_unit_test (test_request_invalid),
        cmocka_unit_test (test_bogus_message),
        cmocka_unit_test (test_conf_defaults),
        cmocka_unit_test (test_conf_all),
        cmocka_unit_test (test_conf_invalid),
        cmocka_unit_test (test_mode_names),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
