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

#include "fm/api.h"
#include "health.h"
#include "log.h"

static void test_memo_delta (void **state)
{
    fm_health_memo_t *m = fm_health_memo_create ();
    int64_t d = -1;

    assert_non_null (m);
    assert_int_equal (fm_health_memo_delta (m, "eth0/rx_errors", 100, &d), 0);
    assert_int_equal (d, 0); /* first sample: baseline */
    assert_int_equal (fm_health_memo_delta (m, "eth0/rx_errors", 130, &d), 1);
    assert_int_equal (d, 30);
    assert_int_equal (fm_health_memo_delta (m, "eth0/rx_errors", 130, &d), 1);
    assert_int_equal (d, 0);
    /* counter reset (driver reload): what it counted since */
    assert_int_equal (fm_health_memo_delta (m, "eth0/rx_errors", 7, &d), 1);
    assert_int_equal (d, 7);
    assert_int_equal (fm_health_memo_delta (m, "eth1/rx_errors", 5, &d), 0);
    assert_int_equal (d, 0);
    /* growth past the initial table keeps every key */
    for (int i = 0; i < 5000; i++) {
        char key[32];

        snprintf (key, sizeof (key), "k%d", i);
        assert_int_equal (fm_health_memo_delta (m, key, i, &d), 0);
    }
    for (int i = 0; i < 5000; i += 499) {
        char key[32];

        snprintf (key, sizeof (key), "k%d", i);
        assert_int_equal (fm_health_memo_delta (m, key, i + 3, &d), 1);
        assert_int_equal (d, 3);
    }
    fm_health_memo_destroy (m);
    fm_health_memo_destroy (NULL);
}

static void test_memo_note (void **state)
{
    fm_health_memo_t *m = fm_health_memo_create ();

    assert_true (fm_health_memo_note (m, "a"));
    assert_false (fm_health_memo_note (m, "a"));
    assert_false (fm_health_memo_unnote (m, "b"));
    assert_true (fm_health_memo_unnote (m, "a"));
    assert_false (fm_health_memo_unnote (m, "a"));
    assert_true (fm_health_memo_note (m, "a"));
    fm_health_memo_destroy (m);
}

static void test_parse (void **state)
{
    int64_t v = 0;

    assert_int_equal (fm_health_parse_u64 ("0", &v), 0);
    assert_int_equal (v, 0);
    assert_int_equal (fm_health_parse_u64 ("18446744073", &v), 0);
    assert_int_equal (v, 18446744073LL);
    assert_int_equal (fm_health_parse_u64 (" 42\n", &v), 0);
    assert_int_equal (v, 42);
    assert_int_equal (fm_health_parse_u64 ("0x1f", &v), 0);
    assert_int_equal (v, 31);
    assert_int_equal (fm_health_parse_u64 ("9223372036854775807", &v), 0);
    assert_int_equal (v, INT64_MAX);
    errno = 0;
    assert_int_equal (fm_health_parse_u64 ("9223372036854775808", &v), -1);
    assert_int_equal (errno, ERANGE);
    assert_int_equal (fm_health_parse_u64 ("99999999999999999999999", &v), -1);
    assert_int_equal (errno, ERANGE);
    const char *bad[] = {"", "-1", "abc", "12abc", "1 2", "N/A", " ", NULL};
    for (int i = 0; bad[i]; i++) {
        errno = 0;
        assert_int_equal (fm_health_parse_u64 (bad[i], &v), -1);
        assert_int_equal (errno, EINVAL);
    }
}

static void test_read_file (void **state)
{
    char dir[] = "/tmp/fm-health-XXXXXX";
    char path[64];
    char buf[8];
    FILE *f;

    assert_non_null (mkdtemp (dir));
    snprintf (path, sizeof (path), "%s/x", dir);
    assert_non_null (f = fopen (path, "w"));
    fputs ("up\n", f);
    fclose (f);
    assert_int_equal (fm_health_read_file (path, buf, sizeof (buf)), 0);
    assert_string_equal (buf, "up");
    assert_non_null (f = fopen (path, "w"));
    fputs ("0123456789", f);
    fclose (f);
    assert_int_equal (fm_health_read_file (path, buf, sizeof (buf)), -1);
    assert_int_equal (errno, EFBIG);
    unlink (path);
    assert_int_equal (fm_health_read_file (path, buf, sizeof (buf)), -1);
    assert_int_equal (errno, ENOENT);
    rmdir (dir);
}

static void test_names (void **state)
{
    const char *good[] = {"eth0", "mlx5_0", NULL};
    const char *slash[] = {"eth0", "../etc", NULL};
    const char *dots[] = {"..", NULL};
    const char *empty[] = {"", NULL};
    const char *longname[] = {"abcdefghijklmnop", NULL};
    fm_error_t err;
    char **v;

    assert_non_null (v = fm_health_names_copy (good, 15, &err));
    assert_string_equal (v[0], "eth0");
    assert_string_equal (v[1], "mlx5_0");
    assert_null (v[2]);
    fm_health_names_free (v);
    fm_health_names_free (NULL);
    assert_null (fm_health_names_copy (slash, 15, &err));
    assert_int_equal (errno, EINVAL);
    assert_non_null (strstr (err.text, "../etc"));
    assert_null (fm_health_names_copy (dots, 15, &err));
    assert_null (fm_health_names_copy (empty, 15, &err));
    assert_null (fm_health_names_copy (longname, 15, &err));
    assert_int_equal (errno, EINVAL);
}

static void
nic (fm_health_set_t *s, const char *dev, bool up, int64_t rx_err, int64_t crc)
{
    assert_int_equal (
        fm_health_add_text (
            s, FM_HREC_NIC, dev, 0, "operstate", up ? "up" : "down", FM_HCLASS_INFO),
        0);
    assert_int_equal (fm_health_add_gauge (s,
                                           FM_HREC_NIC,
                                           dev,
                                           0,
                                           "link_up",
                                           up,
                                           up ? FM_HCLASS_INFO : FM_HCLASS_WARN),
                      0);
    assert_int_equal (fm_health_add_gauge (
                          s, FM_HREC_NIC, dev, 0, "speed_mbps", 100000, FM_HCLASS_INFO),
                      0);
    assert_int_equal (fm_health_add_counter (s,
                                             FM_HREC_NIC,
                                             dev,
                                             0,
                                             "rx_errors",
                                             rx_err,
                                             1000 + rx_err,
                                             rx_err ? FM_HCLASS_WARN : FM_HCLASS_INFO),
                      0);
    assert_int_equal (fm_health_add_counter (s,
                                             FM_HREC_NIC,
                                             dev,
                                             0,
                                             "rx_crc_errors",
                                             crc,
                                             crc,
                                             crc ? FM_HCLASS_WARN : FM_HCLASS_INFO),
                      0);
}

/* Keys of o, sorted and joined by ',' */
static void keys (json_t *o, char *buf, size_t len)
{
    const char *k;
    json_t *v;
    const char *sorted[32];
    size_t n = 0;

    buf[0] = '\0';
    json_object_foreach (o, k, v) {
        sorted[n++] = k;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            if (strcmp (sorted[j], sorted[i]) < 0) {
                const char *t = sorted[i];
                sorted[i] = sorted[j];
                sorted[j] = t;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        strncat (buf, sorted[i], len - strlen (buf) - 1);
        strncat (buf, ",", len - strlen (buf) - 1);
    }
}

static void test_render_nic (void **state)
{
    fm_health_set_t s = {0};
    json_t *a, *o;
    char k[512];
    size_t dropped = 99;

    nic (&s, "eth0", true, 3, 2);
    a = fm_health_json_render (&s, 0, &dropped);
    assert_non_null (a);
    assert_int_equal (dropped, 0);
    assert_int_equal (json_array_size (a), 1);
    o = json_array_get (a, 0);
    keys (o, k, sizeof (k));
    /* exactly doc/api.md's nic fields: fabricd refuses unknown ones */
    assert_string_equal (k,
                         "carrier_changes,link_up,name,rx_dropped,rx_errors,"
                         "speed_mbps,tx_dropped,tx_errors,type,");
    assert_string_equal (json_string_value (json_object_get (o, "type")), "nic");
    assert_string_equal (json_string_value (json_object_get (o, "name")), "eth0");
    assert_true (json_is_true (json_object_get (o, "link_up")));
    assert_int_equal (json_integer_value (json_object_get (o, "speed_mbps")), 100000);
    assert_int_equal (json_integer_value (json_object_get (o, "rx_errors")), 3);
    /* missing counters are zero deltas */
    assert_int_equal (json_integer_value (json_object_get (o, "tx_errors")), 0);
    json_decref (a);

    a = fm_health_json_render (&s, FM_HEALTH_RENDER_EXTENDED, NULL);
    assert_int_equal (json_array_size (a), 2);
    o = json_array_get (a, 1);
    assert_string_equal (json_string_value (json_object_get (o, "type")), "counters");
    assert_int_equal (json_integer_value (json_object_get (
                          json_object_get (o, "counters"), "rx_crc_errors")),
                      2);
    /* api.md counters are not repeated */
    assert_null (json_object_get (json_object_get (o, "counters"), "rx_errors"));
    json_decref (a);
    fm_health_set_free (&s);
}

static void test_render_ib (void **state)
{
    fm_health_set_t s = {0};
    json_t *a, *o;
    char k[512];

    fm_health_add_text (&s, FM_HREC_IB_PORT, "mlx5_0", 1, "state", "ACTIVE", 0);
    fm_health_add_text (&s, FM_HREC_IB_PORT, "mlx5_0", 1, "phys_state", "LinkUp", 0);
    fm_health_add_gauge (&s, FM_HREC_IB_PORT, "mlx5_0", 1, "rate_mbps", 2500, 0);
    fm_health_add_counter (
        &s, FM_HREC_IB_PORT, "mlx5_0", 1, "symbol_error", 4, 9, FM_HCLASS_WARN);
    fm_health_add_counter (
        &s, FM_HREC_IB_PORT, "mlx5_0", 1, "port_xmit_wait", 1000, 5000, FM_HCLASS_WARN);
    /* a port in a state api.md cannot express is left out, not invented */
    fm_health_add_text (&s, FM_HREC_IB_PORT, "mlx5_0", 2, "state", "NOP", 0);
    fm_health_add_text (&s, FM_HREC_IB_PORT, "mlx5_0", 2, "phys_state", "Polling", 0);
    a = fm_health_json_render (&s, 0, NULL);
    assert_int_equal (json_array_size (a), 1);
    o = json_array_get (a, 0);
    keys (o, k, sizeof (k));
    assert_string_equal (k,
                         "device,link_downed,link_error_recovery,phys_state,port,"
                         "port_rcv_errors,port_xmit_discards,port_xmit_wait,rate_gbps,"
                         "state,symbol_error,type,");
    assert_int_equal (json_integer_value (json_object_get (o, "port")), 1);
    assert_true (json_real_value (json_object_get (o, "rate_gbps")) == 2.5);
    assert_int_equal (json_integer_value (json_object_get (o, "symbol_error")), 4);
    assert_int_equal (json_integer_value (json_object_get (o, "port_xmit_wait")), 1000);
    json_decref (a);
    fm_health_set_free (&s);
}

static void test_render_extended_only (void **state)
{
    fm_health_set_t s = {0};
    json_t *a, *o;

    fm_health_add_text (&s, FM_HREC_GPU, "0000:17:00.0", 0, "vendor", "nvidia", 0);
    fm_health_add_counter (
        &s, FM_HREC_GPU, "0000:17:00.0", 0, "ecc_dbe_volatile", 1, 1, FM_HCLASS_RESET);
    fm_health_add_counter (
        &s, FM_HREC_XID, "0000:17:00.0", 0, "xid", 2, 79, FM_HCLASS_REBOOT);
    fm_health_add_text (&s, FM_HREC_TOPO, "0000:17:00.0", 0, "mlx5_0", "PIX", 0);
    a = fm_health_json_render (&s, 0, NULL);
    assert_int_equal (json_array_size (a), 0);
    json_decref (a);
    a = fm_health_json_render (&s, FM_HEALTH_RENDER_EXTENDED, NULL);
    assert_int_equal (json_array_size (a), 3);
    /* most severe first */
    o = json_array_get (a, 0);
    assert_string_equal (json_string_value (json_object_get (o, "type")), "xid");
    assert_int_equal (json_integer_value (json_object_get (o, "xid")), 79);
    assert_int_equal (json_integer_value (json_object_get (o, "count")), 2);
    assert_string_equal (json_string_value (json_object_get (o, "class")), "reboot");
    o = json_array_get (a, 1);
    assert_string_equal (json_string_value (json_object_get (o, "type")), "gpu");
    assert_string_equal (json_string_value (json_object_get (o, "vendor")), "nvidia");
    assert_string_equal (json_string_value (json_object_get (o, "class")), "reset");
    o = json_array_get (a, 2);
    assert_string_equal (json_string_value (json_object_get (o, "type")), "gpu_nic");
    assert_string_equal (json_string_value (json_object_get (o, "path")), "PIX");
    json_decref (a);
    fm_health_set_free (&s);
}

static void test_render_cap (void **state)
{
    fm_health_set_t s = {0};
    size_t dropped = 0;
    json_t *a;
    char dev[16];

    for (int i = 0; i < 100; i++) {
        snprintf (dev, sizeof (dev), "eth%d", i);
        nic (&s, dev, i != 77, i == 42 ? 5 : 0, 0);
    }
    a = fm_health_json_render (&s, 0, &dropped);
    assert_int_equal (json_array_size (a), FM_API_MAX_HEALTH);
    assert_int_equal (dropped, 100 - FM_API_MAX_HEALTH);
    /* the two NICs with problems survive the cap, ahead of the rest */
    assert_string_equal (
        json_string_value (json_object_get (json_array_get (a, 0), "name")), "eth42");
    assert_string_equal (
        json_string_value (json_object_get (json_array_get (a, 1), "name")), "eth77");
    assert_true (json_is_false (json_object_get (json_array_get (a, 1), "link_up")));
    assert_string_equal (
        json_string_value (json_object_get (json_array_get (a, 2), "name")), "eth0");
    json_decref (a);
    fm_health_set_free (&s);
    a = fm_health_json_render (NULL, 0, NULL);
    assert_int_equal (json_array_size (a), 0);
    json_decref (a);
}

static int nlogs;
static void count_log (int level, const char *msg, void *arg)
{
    nlogs++;
}

/* The extended objects stay within what fabricd accepts: at most
 * FM_HEALTH_OBJ_MAX names per object, no empty attribute, ports 0..255.
 */
static void test_render_object_caps (void **state)
{
    fm_health_set_t s = {0};
    json_t *a, *o;
    char name[32];

    fm_health_add_text (&s, FM_HREC_IB_PORT, "mlx5_0", 1, "state", "ACTIVE", 0);
    fm_health_add_text (&s, FM_HREC_IB_PORT, "mlx5_0", 1, "phys_state", "LinkUp", 0);
    fm_health_add_text (&s, FM_HREC_IB_PORT, "mlx5_0", 1, "netdev", "", 0);
    fm_health_add_text (&s, FM_HREC_IB_PORT, "mlx5_0", 1, "link_layer", "Ethernet", 0);
    for (int i = 0; i < 40; i++) {
        snprintf (name, sizeof (name), "hw:err_%d", i);
        fm_health_add_counter (
            &s, FM_HREC_IB_PORT, "mlx5_0", 1, name, 1, 1, FM_HCLASS_WARN);
        snprintf (name, sizeof (name), "g%d", i);
        fm_health_add_gauge (&s, FM_HREC_GPU, "0000:17:00.0", 0, name, i, 0);
    }
    /* a port number fabricd refuses: no counters object for it */
    fm_health_add_counter (
        &s, FM_HREC_IB_PORT, "mlx5_9", 300, "hw:x_err", 5, 5, FM_HCLASS_WARN);
    a = fm_health_json_render (&s, FM_HEALTH_RENDER_EXTENDED, NULL);
    assert_non_null (a);
    size_t i;
    int counters = 0, gpus = 0;
    json_array_foreach (a, i, o) {
        const char *type = json_string_value (json_object_get (o, "type"));
        if (strcmp (type, "counters") == 0) {
            counters++;
            assert_string_equal (json_string_value (json_object_get (o, "device")),
                                 "mlx5_0");
            assert_int_equal (json_object_size (json_object_get (o, "counters")),
                              FM_HEALTH_OBJ_MAX);
            assert_int_equal (json_object_size (json_object_get (o, "attrs")), 1);
            assert_null (json_object_get (json_object_get (o, "attrs"), "netdev"));
        } else if (strcmp (type, "gpu") == 0) {
            gpus++;
            assert_int_equal (json_object_size (json_object_get (o, "gauges")),
                              FM_HEALTH_OBJ_MAX);
        }
    }
    assert_int_equal (counters, 1);
    assert_int_equal (gpus, 1);
    json_decref (a);
    fm_health_set_free (&s);
}

static void test_runner (void **state)
{
    const char *src = getenv ("FM_SRCDIR");
    char xml[4096];
    const char *names[8];
    fm_health_conf_t conf = {
        .root = "/nonexistent-fm-root",
        .nvml_library = "/nonexistent/libnvidia-ml.so.1",
        .amdsmi_library = "/nonexistent/libamd_smi.so",
        .topology_xml = xml,
    };
    fm_health_set_t s = {0};
    fm_error_t err;
    fm_health_t *h;

    snprintf (
        xml, sizeof (xml), "%s/agent/test/fixtures/topo-5gpu.xml", src ? src : "..");
    nlogs = 0;
    fm_log_set_handler (count_log, NULL);
    h = fm_health_create (&conf, &err);
    assert_non_null (h);
    /* net, ib, nvml, amdsmi cannot run here: one line each */
    assert_int_equal (nlogs, 4);
    assert_int_equal (fm_health_active (h, names, 8), 1);
    assert_string_equal (names[0], "topo");
    assert_int_equal (fm_health_sample (h, &s), 0);
    assert_int_equal (s.n, 7);
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_sample (h, &s), 0);
    assert_int_equal (s.n, 0); /* once per job */
    fm_health_destroy (h);
    fm_health_destroy (NULL);
    fm_health_set_free (&s);
    fm_log_set_handler (NULL, NULL);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_memo_delta),
        cmocka_unit_test (test_memo_note),
        cmocka_unit_test (test_parse),
        cmocka_unit_test (test_read_file),
        cmocka_unit_test (test_names),
        cmocka_unit_test (test_render_nic),
        cmocka_unit_test (test_render_ib),
        cmocka_unit_test (test_render_extended_only),
        cmocka_unit_test (test_render_cap),
        cmocka_unit_test (test_render_object_caps),
        cmocka_unit_test (test_runner),
    };

    fm_log_init ("test-health", 0, LOG_INFO);
    return cmocka_run_group_tests (tests, NULL, NULL);
}
