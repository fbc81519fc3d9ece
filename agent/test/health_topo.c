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

/* hwloc's PCI discovery on a real machine leaks a little from inside its
 * plugins (libpciaccess); not ours to fix. The fixture runs do not.
 */
const char *__lsan_default_suppressions (void);
const char *__lsan_default_suppressions (void)
{
    return "leak:libhwloc.so\n";
}

/* The suppression needs the whole stack: hwloc frames sit below the plugin's. */
const char *__asan_default_options (void);
const char *__asan_default_options (void)
{
    return "fast_unwind_on_malloc=0";
}

static char xml[4096];

static const char *path_of (const fm_health_set_t *s, const char *gpu, const char *nic)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->rec[i].kind == FM_HREC_TOPO && strcmp (s->rec[i].device, gpu) == 0
            && strcmp (s->rec[i].name, nic) == 0) {
            return s->rec[i].text;
        }
    }
    return NULL;
}

/* topo-5gpu.xml says which GPU sits where; each GPU gets its closest RDMA
 * NICs, never the plain eno1, and the BMC's VGA is not a GPU.
 */
static void test_fixture (void **state)
{
    fm_health_conf_t conf = {.topology_xml = xml};
    fm_health_set_t s = {0};
    fm_error_t err;
    json_t *a;
    void *c;

    assert_non_null (c = fm_health_topo.init (&conf, &err));
    assert_int_equal (fm_health_topo.sample (c, &s, &err), 0);
    assert_string_equal (path_of (&s, "0000:03:00.0", "mlx5_0"), "PIX");
    assert_string_equal (path_of (&s, "0000:07:00.0", "mlx5_1"), "PXB");
    assert_string_equal (path_of (&s, "0000:83:00.0", "mlx5_2"), "PHB");
    assert_string_equal (path_of (&s, "0000:c1:00.0", "mlx5_2"), "NODE");
    assert_string_equal (path_of (&s, "0000:e1:00.0", "mlx5_0"), "SYS");
    assert_string_equal (path_of (&s, "0000:e1:00.0", "mlx5_1"), "SYS");
    assert_string_equal (path_of (&s, "0000:e1:00.0", "mlx5_2"), "SYS");
    assert_null (path_of (&s, "0000:03:00.0", "mlx5_1")); /* not the closest */
    assert_null (path_of (&s, "0000:0b:00.0", "eno1"));
    assert_int_equal (s.n, 7);
    for (size_t i = 0; i < s.n; i++) {
        assert_string_not_equal (s.rec[i].name, "eno1");
        assert_string_not_equal (s.rec[i].device, "0000:0b:00.0");
    }
    a = fm_health_json_render (&s, FM_HEALTH_RENDER_EXTENDED, NULL);
    assert_int_equal (json_array_size (a), 7);
    assert_string_equal (
        json_string_value (json_object_get (json_array_get (a, 0), "type")), "gpu_nic");
    json_decref (a);
    /* once per job */
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_topo.sample (c, &s, &err), 0);
    assert_int_equal (s.n, 0);
    fm_health_topo.fini (c);
    fm_health_set_free (&s);
}

static void test_bad_xml (void **state)
{
    fm_health_conf_t conf = {.topology_xml = "/nonexistent/topo.xml"};
    char path[] = "/tmp/fm-health-topo-XXXXXX";
    fm_error_t err;
    FILE *f;
    int fd;

    errno = 0;
    assert_null (fm_health_topo.init (&conf, &err));
    assert_int_equal (errno, ENOENT);
    assert_non_null (strstr (err.text, "/nonexistent/topo.xml"));
    assert_true ((fd = mkstemp (path)) >= 0);
    assert_non_null (f = fdopen (fd, "w"));
    fputs ("<topology version=\"2.0\"><object type=\"Machine\"", f);
    fclose (f);
    conf.topology_xml = path;
    assert_null (fm_health_topo.init (&conf, &err));
    unlink (path);
    fm_health_topo.fini (NULL);
}

/* This machine, as the agent will see it. */
static void test_real_machine (void **state)
{
    fm_health_set_t s = {0};
    fm_error_t err;
    void *c = fm_health_topo.init (NULL, &err);

    assert_non_null (c);
    assert_int_equal (fm_health_topo.sample (c, &s, &err), 0);
    print_message ("# this machine: %zu GPU-NIC pairs\n", s.n);
    for (size_t i = 0; i < s.n; i++) {
        assert_int_equal (s.rec[i].kind, FM_HREC_TOPO);
        print_message (
            "# %s - %s: %s\n", s.rec[i].device, s.rec[i].name, s.rec[i].text);
    }
    fm_health_topo.fini (c);
    fm_health_set_free (&s);
}

int main (void)
{
    const char *src = getenv ("FM_SRCDIR");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_fixture),
        cmocka_unit_test (test_bad_xml),
        cmocka_unit_test (test_real_machine),
    };

    snprintf (
        xml, sizeof (xml), "%s/agent/test/fixtures/topo-5gpu.xml", src ? src : "..");
    fm_log_init ("test-health-topo", 0, LOG_INFO);
    return cmocka_run_group_tests (tests, NULL, NULL);
}
