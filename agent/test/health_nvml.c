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

/* The NVML collector against test/fake_nvml.c, loaded by path through the
 * collector's own dlopen, scripted through $FM_FAKE_NVML.
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
static char lib_min[1024];
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

    snprintf (script, sizeof (script), "/tmp/fm-health-nvml-XXXXXX");
    if ((fd = mkstemp (script)) < 0) {
        return -1;
    }
    close (fd);
    setenv ("FM_FAKE_NVML", script, 1);
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

static const fm_health_record_t *
xid (const fm_health_set_t *s, const char *dev, int64_t code)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->rec[i].kind == FM_HREC_XID && strcmp (s->rec[i].device, dev) == 0
            && s->rec[i].value == code) {
            return &s->rec[i];
        }
    }
    return NULL;
}

static size_t count_kind (const fm_health_set_t *s, fm_hrec_kind_t kind)
{
    size_t n = 0;

    for (size_t i = 0; i < s->n; i++) {
        n += s->rec[i].kind == kind;
    }
    return n;
}

#define GPU0 "0000:17:00.0"
#define GPU1 "0000:ca:00.0"

static void test_sample (void **state)
{
    fm_health_conf_t conf = {.nvml_library = lib};
    fm_health_set_t s = {0};
    const fm_health_record_t *r;
    fm_error_t err;
    void *c;

    write_script ("device 0 0 17 0\n"
                  "device 1 0 ca 0\n"
                  "ecc 0 5 0 10 1\n"
                  "remap 0 2 0 0 0\n"
                  "retired 0 1 0 0\n"
                  "throttle 0 1\n"
                  "nvlink 0 0 1 0 0 3 0\n"
                  "nvlink 0 1 1 0 1 0 0\n"
                  "nvlink 0 2 0 0 0 0 0\n"
                  "xid 1 0 13\n");
    assert_non_null (c = fm_health_nvml.init (&conf, &err));
    assert_int_equal (fm_health_nvml.sample (c, &s, &err), 0);
    r = get (&s, FM_HREC_GPU, GPU0, "ecc_sbe_volatile");
    assert_int_equal (r->delta, 0);
    assert_int_equal (r->value, 5);
    assert_string_equal (get (&s, FM_HREC_GPU, GPU0, "vendor")->text, "nvidia");
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "nvlink_active")->value, 2);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "nvlink_crc_flit")->value, 3);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "throttle_reasons")->cls,
                      FM_HCLASS_INFO); /* GPU idle */
    /* XIDs that happened since the event set was created are this window's */
    r = xid (&s, GPU0, 13);
    assert_non_null (r);
    assert_int_equal (r->delta, 1);
    assert_int_equal (r->cls, FM_HCLASS_APP);
    assert_string_equal (r->text, "RESTART_APP");
    /* GPU 1 supports none of it: said once each, at debug level */
    assert_null (get (&s, FM_HREC_GPU, GPU1, "ecc_sbe_volatile"));
    assert_int_equal (logged (GPU1 ": ECC counts not supported"), 1);

    write_script ("device 0 0 17 0\n"
                  "device 1 0 ca 0\n"
                  "ecc 0 9 1 14 2\n"
                  "remap 0 2 1 1 1\n"
                  "retired 0 1 0 1\n"
                  "throttle 0 48\n"
                  "nvlink 0 0 1 2 0 10 1\n"
                  "nvlink 0 1 1 0 1 4 0\n"
                  "nvlink 0 2 0 0 0 0 0\n"
                  "xid 1 0 13\n"
                  "xid 2 1 79\n"
                  "xid 3 1 79\n"
                  "xid 4 0 48\n"
                  "xid 5 0 31\n");
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_nvml.sample (c, &s, &err), 0);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "ecc_sbe_volatile")->delta, 4);
    r = get (&s, FM_HREC_GPU, GPU0, "ecc_dbe_volatile");
    assert_int_equal (r->delta, 1);
    assert_int_equal (r->cls, FM_HCLASS_RESET);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "ecc_dbe_aggregate")->delta, 1);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "remapped_rows_uncorrectable")->delta,
                      1);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "remap_pending")->value, 1);
    r = get (&s, FM_HREC_GPU, GPU0, "remap_failure");
    assert_int_equal (r->value, 1);
    assert_int_equal (r->cls, FM_HCLASS_FAULT);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "retired_pages_pending")->value, 1);
    r = get (&s, FM_HREC_GPU, GPU0, "throttle_reasons");
    assert_int_equal (r->value, 0x48);
    assert_int_equal (r->cls, FM_HCLASS_WARN); /* HW slowdown + thermal */
    /* NVLink deltas summed over the active links */
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "nvlink_crc_flit")->delta, 11);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "nvlink_replay")->delta, 2);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "nvlink_crc_data")->delta, 1);
    /* new XIDs only, counted per GPU and code, classed by the policy */
    assert_null (xid (&s, GPU0, 13));
    r = xid (&s, GPU1, 79);
    assert_int_equal (r->delta, 2);
    assert_int_equal (r->cls, FM_HCLASS_REBOOT);
    assert_int_equal (xid (&s, GPU0, 48)->cls, FM_HCLASS_RESET);
    assert_int_equal (xid (&s, GPU0, 31)->cls, FM_HCLASS_APP);
    assert_int_equal (count_kind (&s, FM_HREC_XID), 3);
    assert_int_equal (logged (GPU1 ": ECC counts not supported"), 1);

    json_t *a = fm_health_json_render (&s, FM_HEALTH_RENDER_EXTENDED, NULL);
    /* most severe first: the row remap failure (fault), then XID 79 (reboot) */
    json_t *o = json_array_get (a, 0);
    assert_string_equal (json_string_value (json_object_get (o, "type")), "gpu");
    assert_string_equal (json_string_value (json_object_get (o, "class")), "fault");
    assert_int_equal (json_integer_value (json_object_get (
                          json_object_get (o, "counters"), "ecc_dbe_volatile")),
                      1);
    o = json_array_get (a, 1);
    assert_string_equal (json_string_value (json_object_get (o, "type")), "xid");
    assert_int_equal (json_integer_value (json_object_get (o, "xid")), 79);
    assert_int_equal (json_integer_value (json_object_get (o, "count")), 2);
    assert_string_equal (json_string_value (json_object_get (o, "device")), GPU1);
    json_decref (a);
    /* api.md has no GPU types: nothing to send fabricd v1 */
    a = fm_health_json_render (&s, 0, NULL);
    assert_int_equal (json_array_size (a), 0);
    json_decref (a);

    /* a window with nothing new */
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_nvml.sample (c, &s, &err), 0);
    assert_int_equal (count_kind (&s, FM_HREC_XID), 0);
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "ecc_sbe_volatile")->delta, 0);
    fm_health_nvml.fini (c);
    fm_health_set_free (&s);
}

static void test_gpu_lost (void **state)
{
    fm_health_conf_t conf = {.nvml_library = lib};
    fm_health_set_t s = {0};
    fm_error_t err;
    void *c;

    write_script ("device 0 0 17 0\necc 0 0 0 0 0\n");
    assert_non_null (c = fm_health_nvml.init (&conf, &err));
    write_script ("device 0 0 17 0\necc 0 0 0 0 0\nlost 0\n");
    for (int i = 0; i < 2; i++) {
        fm_health_set_clear (&s);
        assert_int_equal (fm_health_nvml.sample (c, &s, &err), 0);
        assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "gpu_lost")->cls,
                          FM_HCLASS_REBOOT);
    }
    assert_int_equal (logged (GPU0 ": ECC counts: GPU is lost"), 1);
    fm_health_nvml.fini (c);
    fm_health_set_free (&s);
}

static void test_init_failures (void **state)
{
    fm_health_conf_t conf = {.nvml_library = lib};
    fm_error_t err;

    /* nvmlInit fails (NVML_ERROR_DRIVER_NOT_LOADED) */
    write_script ("init 9\ndevice 0 0 17 0\n");
    errno = 0;
    assert_null (fm_health_nvml.init (&conf, &err));
    assert_int_equal (errno, ENODEV);
    assert_non_null (strstr (err.text, "nvmlInit"));
    /* no GPU */
    write_script ("");
    assert_null (fm_health_nvml.init (&conf, &err));
    assert_int_equal (errno, ENODEV);
    assert_non_null (strstr (err.text, "no NVIDIA GPU"));
    /* no library */
    conf.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    assert_null (fm_health_nvml.init (&conf, &err));
    assert_int_equal (errno, ENOENT);
    assert_non_null (strstr (err.text, "/nonexistent/libnvidia-ml.so.1"));
    /* a library that is not NVML: a required symbol is missing */
    conf.nvml_library = lib_other;
    assert_null (fm_health_nvml.init (&conf, &err));
    assert_int_equal (errno, ENOSYS);
    assert_non_null (strstr (err.text, "no symbol nvmlInit_v2"));
    fm_health_nvml.fini (NULL);
}

/* Without the event and NVLink calls (an old driver): the rest still works,
 * and what is missing is said once, at init.
 */
static void test_missing_optional (void **state)
{
    fm_health_conf_t conf = {.nvml_library = lib_min};
    fm_health_set_t s = {0};
    fm_error_t err;
    void *c;

    write_script ("device 0 0 17 0\necc 0 1 0 1 0\nxid 1 0 79\nnvlink 0 0 1 0 0 0 0\n");
    assert_non_null (c = fm_health_nvml.init (&conf, &err));
    assert_int_equal (logged ("lacks the event calls: no XID events"), 1);
    assert_int_equal (logged ("lacks the NVLink calls"), 1);
    write_script ("device 0 0 17 0\necc 0 3 0 3 0\nxid 1 0 79\nnvlink 0 0 1 0 0 0 0\n");
    for (int i = 0; i < 2; i++) {
        fm_health_set_clear (&s);
        assert_int_equal (fm_health_nvml.sample (c, &s, &err), 0);
    }
    assert_int_equal (count_kind (&s, FM_HREC_XID), 0);
    assert_null (get (&s, FM_HREC_GPU, GPU0, "nvlink_active"));
    assert_int_equal (get (&s, FM_HREC_GPU, GPU0, "ecc_sbe_volatile")->value, 3);
    assert_int_equal (logged ("lacks the event calls"), 1);
    fm_health_nvml.fini (c);
    fm_health_set_free (&s);
}

/* The real library name by default: on a machine without the NVIDIA driver
 * the collector says so and stays out.
 */
static void test_default_library (void **state)
{
    fm_error_t err;
    void *c = fm_health_nvml.init (NULL, &err);

    if (c) {
        fm_health_set_t s = {0};

        print_message ("# real NVML present\n");
        assert_int_equal (fm_health_nvml.sample (c, &s, &err), 0);
        for (size_t i = 0; i < s.n; i++) {
            print_message ("# %s %s delta=%lld value=%lld %s\n",
                           s.rec[i].device,
                           s.rec[i].name,
                           (long long)s.rec[i].delta,
                           (long long)s.rec[i].value,
                           s.rec[i].text);
        }
        fm_health_nvml.fini (c);
        fm_health_set_free (&s);
        return;
    }
    print_message ("# no real NVML here: %s\n", err.text);
    if (errno == ENOENT) {
        assert_non_null (strstr (err.text, "libnvidia-ml.so.1"));
    } else {
        assert_int_equal (errno, ENODEV); /* library without a working driver */
    }
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_sample, setup, teardown),
        cmocka_unit_test_setup_teardown (test_gpu_lost, setup, teardown),
        cmocka_unit_test_setup_teardown (test_init_failures, setup, teardown),
        cmocka_unit_test_setup_teardown (test_missing_optional, setup, teardown),
        cmocka_unit_test_setup_teardown (test_default_library, setup, teardown),
    };

    fake_path (lib, sizeof (lib), "fake_nvml");
    fake_path (lib_min, sizeof (lib_min), "fake_nvml_min");
    fake_path (lib_other, sizeof (lib_other), "fake_amdsmi");
    fm_log_init ("test-health-nvml", 0, LOG_DEBUG);
    return cmocka_run_group_tests (tests, NULL, NULL);
}
