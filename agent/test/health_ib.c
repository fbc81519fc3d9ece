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

#include <cmocka.h>

#include "fixtures/tree.h"
#include "health.h"
#include "log.h"

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

static char root[64];

static int setup (void **state)
{
    snprintf (root, sizeof (root), "/tmp/fm-health-ib-XXXXXX");
    if (!mkdtemp (root)) {
        return -1;
    }
    nlogs = 0;
    fm_log_set_handler (capture, NULL);
    return 0;
}

static int teardown (void **state)
{
    tree_remove (root);
    fm_log_set_handler (NULL, NULL);
    return 0;
}

static void put (const char *hca, int port, const char *rel, const char *content)
{
    char path[512];

    if (port) {
        snprintf (
            path, sizeof (path), "sys/class/infiniband/%s/ports/%d/%s", hca, port, rel);
    } else {
        snprintf (path, sizeof (path), "sys/class/infiniband/%s/%s", hca, rel);
    }
    assert_int_equal (tree_put (root, path, content), 0);
}

/* A port as mlx5 shows it, counters at 0. */
static void make_port (const char *hca, int port, const char *link_layer)
{
    static const char *const counters[] = {"symbol_error",
                                           "link_error_recovery",
                                           "link_downed",
                                           "port_rcv_errors",
                                           "port_xmit_discards",
                                           "port_xmit_wait",
                                           "port_rcv_data",
                                           "port_xmit_packets",
                                           NULL};

    put (hca, port, "state", "4: ACTIVE");
    put (hca, port, "phys_state", "5: LinkUp");
    put (hca, port, "rate", "200 Gb/sec (4X HDR)");
    put (hca, port, "link_layer", link_layer);
    for (int i = 0; counters[i]; i++) {
        char rel[128];

        snprintf (rel, sizeof (rel), "counters/%s", counters[i]);
        put (hca, port, rel, "0");
    }
    put (hca, port, "hw_counters/out_of_buffer", "0");
    put (hca, port, "hw_counters/local_ack_timeout_err", "0");
    put (hca, port, "hw_counters/rx_write_requests", "0");
}

static const fm_health_record_t *
get (const fm_health_set_t *s, const char *dev, int port, const char *name)
{
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp (s->rec[i].device, dev) == 0 && s->rec[i].port == port
            && strcmp (s->rec[i].name, name) == 0) {
            return &s->rec[i];
        }
    }
    return NULL;
}

static void test_init_errors (void **state)
{
    const char *bad[] = {"..", NULL};
    fm_health_conf_t conf = {.root = root};
    fm_error_t err;

    errno = 0;
    assert_null (fm_health_ib.init (&conf, &err));
    assert_int_equal (errno, ENOENT);
    assert_non_null (strstr (err.text, "no RDMA devices"));
    make_port ("mlx5_0", 1, "InfiniBand");
    conf.hcas = bad;
    assert_null (fm_health_ib.init (&conf, &err));
    assert_int_equal (errno, EINVAL);
    fm_health_ib.fini (NULL);
}

static void test_ib_deltas (void **state)
{
    fm_health_conf_t conf = {.root = root};
    fm_health_set_t s = {0};
    const fm_health_record_t *r;
    fm_error_t err;
    json_t *a, *o;
    void *c;

    make_port ("mlx5_0", 1, "InfiniBand");
    put ("mlx5_0", 1, "counters/symbol_error", "7");
    assert_non_null (c = fm_health_ib.init (&conf, &err));
    assert_int_equal (fm_health_ib.sample (c, &s, &err), 0);
    r = get (&s, "mlx5_0", 1, "symbol_error");
    assert_int_equal (r->delta, 0);
    assert_int_equal (r->value, 7);
    assert_string_equal (get (&s, "mlx5_0", 1, "state")->text, "ACTIVE");
    assert_string_equal (get (&s, "mlx5_0", 1, "phys_state")->text, "LinkUp");
    assert_int_equal (get (&s, "mlx5_0", 1, "rate_mbps")->value, 200000);
    assert_null (get (&s, "mlx5_0", 1, "netdev")); /* InfiniBand: no netdev */

    put ("mlx5_0", 1, "counters/symbol_error", "19");
    put ("mlx5_0", 1, "counters/link_downed", "1");
    put ("mlx5_0", 1, "counters/port_xmit_wait", "123456");
    put ("mlx5_0", 1, "counters/port_rcv_data", "99999");
    put ("mlx5_0", 1, "hw_counters/out_of_buffer", "17");
    put ("mlx5_0", 1, "hw_counters/rx_write_requests", "500");
    put ("mlx5_0", 1, "state", "1: DOWN");
    put ("mlx5_0", 1, "phys_state", "3: Disabled");
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_ib.sample (c, &s, &err), 0);
    assert_int_equal (get (&s, "mlx5_0", 1, "symbol_error")->delta, 12);
    assert_int_equal (get (&s, "mlx5_0", 1, "symbol_error")->cls, FM_HCLASS_WARN);
    assert_int_equal (get (&s, "mlx5_0", 1, "link_downed")->delta, 1);
    assert_int_equal (get (&s, "mlx5_0", 1, "port_xmit_wait")->delta, 123456);
    assert_int_equal (get (&s, "mlx5_0", 1, "hw:out_of_buffer")->delta, 17);
    assert_int_equal (get (&s, "mlx5_0", 1, "hw:out_of_buffer")->cls, FM_HCLASS_WARN);
    /* traffic is not an error */
    assert_int_equal (get (&s, "mlx5_0", 1, "port_rcv_data")->cls, FM_HCLASS_INFO);
    assert_int_equal (get (&s, "mlx5_0", 1, "hw:rx_write_requests")->cls,
                      FM_HCLASS_INFO);
    assert_int_equal (get (&s, "mlx5_0", 1, "state")->cls, FM_HCLASS_WARN);

    a = fm_health_json_render (&s, 0, NULL);
    assert_int_equal (json_array_size (a), 1);
    o = json_array_get (a, 0);
    assert_string_equal (json_string_value (json_object_get (o, "type")), "ib_port");
    assert_string_equal (json_string_value (json_object_get (o, "device")), "mlx5_0");
    assert_string_equal (json_string_value (json_object_get (o, "state")), "DOWN");
    assert_string_equal (json_string_value (json_object_get (o, "phys_state")),
                         "Disabled");
    assert_true (json_real_value (json_object_get (o, "rate_gbps")) == 200.0);
    assert_int_equal (json_integer_value (json_object_get (o, "symbol_error")), 12);
    assert_int_equal (json_integer_value (json_object_get (o, "link_downed")), 1);
    json_decref (a);
    a = fm_health_json_render (&s, FM_HEALTH_RENDER_EXTENDED, NULL);
    assert_int_equal (json_array_size (a), 2);
    o = json_object_get (json_array_get (a, 1), "counters");
    assert_int_equal (json_integer_value (json_object_get (o, "hw:out_of_buffer")), 17);
    assert_null (json_object_get (o, "port_rcv_data"));
    assert_null (json_object_get (o, "symbol_error"));
    json_decref (a);
    assert_int_equal (nlogs, 0);
    fm_health_ib.fini (c);
    fm_health_set_free (&s);
}

static void test_roce_netdev (void **state)
{
    fm_health_conf_t conf = {.root = root};
    fm_health_set_t s = {0};
    fm_error_t err;
    void *c;

    /* mlx5_0: the GID table names the netdev (first entry empty) */
    make_port ("mlx5_0", 1, "Ethernet");
    put ("mlx5_0", 1, "gid_attrs/ndevs/0", "");
    put ("mlx5_0", 1, "gid_attrs/ndevs/1", "ens1f0np0");
    /* mlx5_1: no GID netdev yet, the PCI function's only netdev */
    make_port ("mlx5_1", 1, "Ethernet");
    assert_int_equal (
        tree_mkdir (root, "sys/class/infiniband/mlx5_1/device/net/ens1f1np1"), 0);
    /* mlx5_2: InfiniBand, and two ports */
    make_port ("mlx5_2", 1, "InfiniBand");
    make_port ("mlx5_2", 2, "InfiniBand");
    assert_non_null (c = fm_health_ib.init (&conf, &err));
    assert_int_equal (fm_health_ib.sample (c, &s, &err), 0);
    assert_string_equal (get (&s, "mlx5_0", 1, "netdev")->text, "ens1f0np0");
    assert_string_equal (get (&s, "mlx5_0", 1, "link_layer")->text, "Ethernet");
    assert_string_equal (get (&s, "mlx5_1", 1, "netdev")->text, "ens1f1np1");
    assert_null (get (&s, "mlx5_2", 1, "netdev"));
    assert_non_null (get (&s, "mlx5_2", 2, "symbol_error"));
    fm_health_ib.fini (c);
    fm_health_set_free (&s);

    /* an allow list keeps only the named HCAs */
    const char *only[] = {"mlx5_2", NULL};
    conf.hcas = only;
    assert_non_null (c = fm_health_ib.init (&conf, &err));
    assert_int_equal (fm_health_ib.sample (c, &s, &err), 0);
    for (size_t i = 0; i < s.n; i++) {
        assert_string_equal (s.rec[i].device, "mlx5_2");
    }
    fm_health_ib.fini (c);
    fm_health_set_free (&s);
}

static void test_ib_errors (void **state)
{
    fm_health_conf_t conf = {.root = root};
    fm_health_set_t s = {0};
    fm_error_t err;
    json_t *a;
    void *c;

    make_port ("mlx5_0", 1, "InfiniBand");
    put ("mlx5_0", 1, "rate", "fast");
    put ("mlx5_0", 1, "counters/port_rcv_errors", "-3");
    tree_unlink (root,
                 "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_discards");
    /* an HCA without ports directory */
    assert_int_equal (tree_mkdir (root, "sys/class/infiniband/mlx5_9"), 0);
    assert_non_null (c = fm_health_ib.init (&conf, &err));
    for (int i = 0; i < 3; i++) {
        fm_health_set_clear (&s);
        assert_int_equal (fm_health_ib.sample (c, &s, &err), 0);
        assert_null (get (&s, "mlx5_0", 1, "rate_mbps"));
        assert_null (get (&s, "mlx5_0", 1, "port_rcv_errors"));
        assert_non_null (get (&s, "mlx5_0", 1, "symbol_error"));
    }
    assert_int_equal (logged ("ports/1/rate: unexpected content"), 1);
    assert_int_equal (logged ("port_rcv_errors: not a counter"), 1);
    assert_int_equal (logged ("port_xmit_discards: No such file"), 1);
    assert_int_equal (logged ("mlx5_9/ports"), 1);
    assert_int_equal (nlogs, 4);
    /* still a valid api.md object: unknown rate is 0, missing counters 0 */
    a = fm_health_json_render (&s, 0, NULL);
    assert_int_equal (json_array_size (a), 1);
    assert_true (json_real_value (json_object_get (json_array_get (a, 0), "rate_gbps"))
                 == 0.0);
    json_decref (a);
    /* garbage state: the port cannot be expressed in api.md terms */
    put ("mlx5_0", 1, "state", "4: ACT\x01IVE");
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_ib.sample (c, &s, &err), 0);
    assert_null (get (&s, "mlx5_0", 1, "state"));
    a = fm_health_json_render (&s, 0, NULL);
    assert_int_equal (json_array_size (a), 0);
    json_decref (a);
    assert_int_equal (logged ("ports/1/state: unexpected content"), 1);
    fm_health_ib.fini (c);
    fm_health_set_free (&s);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_init_errors, setup, teardown),
        cmocka_unit_test_setup_teardown (test_ib_deltas, setup, teardown),
        cmocka_unit_test_setup_teardown (test_roce_netdev, setup, teardown),
        cmocka_unit_test_setup_teardown (test_ib_errors, setup, teardown),
    };

    fm_log_init ("test-health-ib", 0, LOG_INFO);
    return cmocka_run_group_tests (tests, NULL, NULL);
}
