/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "health.h"
#include "log.h"

/* The AMD SMI collector against test/fake_amdsmi.c, loaded by path through
 * the collector's own dlopen, scripted through $FM_FAKE_AMDSMI.
 */

static char logs[64][256];
static int nlogs;

static void capture (int level, const char *msg, void *arg)
{
    if (nlogs < 64) {
        snprintf (logs[nlogs++], sizeof (logs[0]), "%s", msg);
    }
}

static int logged (const char *needle)
{
    int n = 0;

    for (int i = 0; i < nlogs; i++) {
        n += strstr (logs[i], needle) != NULL;
    }
    return n;
}

static char script[64];
static char lib[1024];
static char lib_other[1024];

/* The fake libraries: $FM_HEALTH_FAKE_DIR, else libtool's objdir under the
 * build tree that `make check` exports.
 */
static void fake_path (char *buf, size_t len, const char *name)
{
    const char *dir = getenv ("FM_HEALTH_FAKE_DIR");
    const char *build = getenv ("FM_BUILDDIR");

    if (dir) {
        snprintf (buf, len, "%s/%s.so", dir, name);
    } else {
        snprintf (buf, len, "%s/agent/test/.libs/%s.so", build ? build : "..", name);
    }
}

static int setup (void **state)
{
    int fd;

    snprintf (script, sizeof (script), "/tmp/fm-health-amdsmi-XXXXXX");
    if ((fd = mkstemp (script)) < 0) {
        return -1;
    }
    close (fd);
    setenv ("FM_FAKE_AMDSMI", script, 1);
    nlogs = 0;
    fm_log_set_handler (capture, NULL);
    fm_log_set_level (LOG_DEBUG);
    return 0;
}

static int teardown (void **state)
{
    unlink (script);
    fm_log_set_handler (NULL, NULL);
    return 0;
}

static void write_script (const char *text)
{
    FILE *f = fopen (script, "w");

    assert_non_null (f);
    fputs (text, f);
    assert_int_equal (fclose (f), 0);
}

static const fm_health_record_t *
get (const fm_health_set_t *s, fm_hrec_kind_t kind, const char *dev, const char *name)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->rec[i].kind == kind && strcmp (s->rec[i].device, dev) == 0
            && strcmp (s->rec[i].name, name) == 0) {
            return &s->rec[i];
        }
    }
    return NULL;
}

#define GPU0 "0000:c1:00.0"
#define GPU1 "0001:03:00.1"

static void test_sample (void **state)
{
    fm_health_conf_t conf = {.amdsmi_library = lib};
    fm_health_set_t s = {0};
    const fm_health_record_t *r;
    fm_error_t err;
    json_t *a, *o;
    void *c;

    write_script ("gpu 0 0 c1 0 0\n"
                  "gpu 1 1 3 0 1\n"
                  "ecc 0 10 0 2\n"
                  "xgmi 0 0\n");
    assert_non_null (c = fm_health_amdsmi.init (&conf, &err));
    assert_int_equal (fm_health_amdsmi.sample (c, &s, &err), 0);
    r = get (&s, FM_HREC_GPU, GPU0, "ecc_correctable");
    assert_int_equal (r->value, 10);
    assert_int_equal (r->delta, 0);
    assert_string_equal (get (&s, FM_HREC_GPU, GPU0, "vendor")->text, "amd");
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "xgmi_error_status")->value, 0);
    /* the PCI address decoded from amdsmi_bdf_t, function included */
    assert_non_null (get (&s, FM_HREC_GPU, GPU1, "vendor"));
    assert_null (get (&s, FM_HREC_GPU, GPU1, "ecc_correctable"));
    assert_int_equal (logged (GPU1 ": ECC counts not supported"), 1);

    write_script ("gpu 0 0 c1 0 0\n"
                  "gpu 1 1 3 0 1\n"
                  "ecc 0 25 1 5\n"
                  "xgmi 0 2\n");
    for (int i = 0; i < 2; i++) {
        fm_health_set_clear (&s);
        assert_int_equal (fm_health_amdsmi.sample (c, &s, &err), 0);
        if (i == 1) {
            break;
        }
        assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "ecc_correctable")->delta, 15);
        assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "ecc_correctable")->cls,
                          FM_HCLASS_INFO);
        r = get (&s, FM_HREC_GPU, GPU0, "ecc_uncorrectable");
        assert_int_equal (r->delta, 1);
        assert_int_equal (r->cls, FM_HCLASS_FAULT);
        r = get (&s, FM_HREC_GPU, GPU0, "ecc_deferred");
        assert_int_equal (r->delta, 3);
        assert_int_equal (r->cls, FM_HCLASS_WARN);
        r = get (&s, FM_HREC_GPU, GPU0, "xgmi_error_status");
        assert_int_equal (r->value, 2);
        assert_int_equal (r->cls, FM_HCLASS_WARN);
        a = fm_health_json_render (&s, FM_HEALTH_RENDER_EXTENDED, NULL);
        o = json_array_get (a, 0);
        assert_string_equal (json_string_value (json_object_get (o, "vendor")), "amd");
        assert_string_equal (json_string_value (json_object_get (o, "class")), "fault");
        assert_int_equal (json_integer_value (json_object_get (
                              json_object_get (o, "counters"), "ecc_deferred")),
                          3);
        json_decref (a);
    }
    /* nothing new: zero deltas; the sticky XGMI status is still reported */
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "ecc_uncorrectable")->delta, 0);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "xgmi_error_status")->value, 2);
    assert_int_equal (logged (GPU1 ": ECC counts not supported"), 1);
    fm_health_amdsmi.fini (c);
    fm_health_set_free (&s);
}

static void test_init_failures (void **state)
{
    fm_health_conf_t conf = {.amdsmi_library = lib};
    fm_error_t err;

    write_script ("init 8\ngpu 0 0 c1 0 0\n");
    errno = 0;
    assert_null (fm_health_amdsmi.init (&conf, &err));
    assert_int_equal (errno, ENODEV);
    assert_non_null (strstr (err.text, "amdsmi_init"));
    write_script ("");
    assert_null (fm_health_amdsmi.init (&conf, &err));
    assert_int_equal (errno, ENODEV);
    assert_non_null (strstr (err.text, "no AMD GPU"));
    conf.amdsmi_library = "/nonexistent/libamd_smi.so";
    assert_null (fm_health_amdsmi.init (&conf, &err));
    assert_int_equal (errno, ENOENT);
    conf.amdsmi_library = lib_other;
    assert_null (fm_health_amdsmi.init (&conf, &err));
    assert_int_equal (errno, ENOSYS);
    assert_non_null (strstr (err.text, "no symbol amdsmi_init"));
    fm_health_amdsmi.fini (NULL);
}

static void test_default_library (void **state)
{
    fm_error_t err;
    void *c = fm_health_amdsmi.init (NULL, &err);

    if (c) {
        print_message ("# real AMD SMI present\n");
        fm_health_amdsmi.fini (c);
        return;
    }
    print_message ("# no real AMD SMI here: %s\n", err.text);
    assert_true (errno == ENOENT || errno == ENODEV);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_sample, setup, teardown),
        cmocka_unit_test_setup_teardown (test_init_failures, setup, teardown),
        cmocka_unit_test_setup_teardown (test_default_library, setup, teardown),
    };

    fake_path (lib, sizeof (lib), "fake_amdsmi");
    fake_path (lib_other, sizeof (lib_other), "fake_nvml");
    fm_log_init ("test-health-amdsmi", 0, LOG_DEBUG);
    return cmocka_run_group_tests (tests, NULL, NULL);
}
