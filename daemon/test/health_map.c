/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "health_map.h"
#include "report_parse.h"
#include "score.h"
#include "topo.h"

/* The window health types of doc/health.md: fabricd's validation of each
 * (report.c), what fm_health_map makes of them, and what scoring does with
 * that (GPU faults count, application XIDs never do).
 */

#define NOW 1800000000000000000LL
#define W_NS 5000000000LL

/* One record of every type; each line is one array element. */
static const char *const records[] = {
    /* 0 */ "{\"type\":\"nic\",\"name\":\"eth0\",\"link_up\":false,\"speed_mbps\":0,"
            "\"rx_errors\":3,\"tx_errors\":4,\"rx_dropped\":100,\"tx_dropped\":0,"
            "\"carrier_changes\":2}",
    /* 1 */
    "{\"type\":\"ib_port\",\"device\":\"mlx5_1\",\"port\":1,\"state\":\"DOWN\","
    "\"phys_state\":\"Polling\",\"rate_gbps\":0,\"symbol_error\":7,"
    "\"link_error_recovery\":1,\"link_downed\":1,\"port_rcv_errors\":2,"
    "\"port_xmit_discards\":0,\"port_xmit_wait\":900}",
    /* 2 */
    "{\"type\":\"gpu\",\"vendor\":\"nvidia\",\"device\":\"0000:17:00.0\","
    "\"class\":\"reset\",\"counters\":{\"ecc_dbe_volatile\":1},"
    "\"gauges\":{\"throttle_reasons\":0,\"remap_pending\":-1}}",
    /* 3 */
    "{\"type\":\"xid\",\"device\":\"0000:17:00.0\",\"xid\":79,\"count\":2,"
    "\"class\":\"reboot\",\"action\":\"RESTART_BM\"}",
    /* 4 */
    "{\"type\":\"xid\",\"device\":\"0000:17:00.0\",\"xid\":13,\"count\":5,"
    "\"class\":\"application\",\"action\":\"RESTART_APP\"}",
    /* 5 */
    "{\"type\":\"gpu_nic\",\"gpu\":\"0000:17:00.0\",\"nic\":\"mlx5_0\","
    "\"path\":\"PIX\"}",
    /* 6 */
    "{\"type\":\"counters\",\"kind\":\"ib_port\",\"device\":\"mlx5_1\","
    "\"port\":1,\"counters\":{\"hw:rx_icrc_encapsulated\":3},"
    "\"attrs\":{\"link_layer\":\"Ethernet\",\"netdev\":\"eth2\"}}",
    /* 7 */ "{\"type\":\"steer\",\"var\":\"NCCL_IB_HCA\",\"exclude\":\"mlx5_1:1\"}",
    /* 8 */
    "{\"type\":\"pcie\",\"device\":\"0000:3b:00.0\",\"width\":8,"
    "\"max_width\":16,\"speed_gts\":16,\"max_speed_gts\":16}",
    /* 9 */ "{\"type\":\"clock_source\",\"source\":\"tsc\",\"ntp_synchronized\":false}",
    /* 10 */
    "{\"type\":\"ib_port\",\"device\":\"mlx5_0\",\"port\":1,"
    "\"state\":\"ACTIVE\",\"phys_state\":\"LinkUp\",\"rate_gbps\":200,"
    "\"symbol_error\":0,\"link_error_recovery\":0,\"link_downed\":0,"
    "\"port_rcv_errors\":0,\"port_xmit_discards\":0,"
    "\"port_xmit_wait\":12345}",
    NULL,
};

static char *health_array (void)
{
    static char buf[8192];
    size_t off = 0;

    buf[off++] = '[';
    for (int i = 0; records[i]; i++) {
        off += (size_t)snprintf (
            buf + off, sizeof (buf) - off, "%s%s", i ? "," : "", records[i]);
    }
    snprintf (buf + off, sizeof (buf) - off, "]");
    return buf;
}

/* A report body with `health` as its only window's health array. */
static char *body_with (const char *health)
{
    static char buf[16384];

    snprintf (buf,
              sizeof (buf),
              "{\"job_id\":7,\"node\":\"n1\",\"windows\":[{\"seq\":3,"
              "\"start_ns\":1799999995000000000,\"end_ns\":1800000000000000000,"
              "\"links\":[],\"health\":%s}]}",
              health);
    return buf;
}

static int parse (const char *body, fm_report_t *rep, fm_invalid_t *inv)
{
    return fm_report_parse (body, strlen (body), NOW, rep, inv);
}

static void test_valid (void **state)
{
    fm_report_t rep = {0};
    fm_invalid_t inv;
    char *h = health_array ();

    if (parse (body_with (h), &rep, &inv) < 0) {
        fail_msg ("%s", inv.message);
    }
    assert_int_equal (rep.nwindows, 1);
    json_t *a = json_loads (rep.windows[0].health_json, 0, NULL);
    assert_non_null (a);
    assert_int_equal (json_array_size (a), 11);
    json_decref (a);
    fm_report_parse_release (&rep);
}

/* records[idx] with `from` replaced by `to`, inside a full body. */
static const struct {
    int idx;
    const char *from, *to, *field;
} bad[] = {
    {2, "\"vendor\":\"nvidia\"", "\"vendor\":\"intel\"", "health[0].vendor"},
    {2, "\"class\":\"reset\"", "\"class\":\"bad\"", "health[0].class"},
    {2, "\"ecc_dbe_volatile\":1", "\"ecc_dbe_volatile\":-1", "health[0].counters"},
    {2, "\"ecc_dbe_volatile\":1", "\"ecc_dbe_volatile\":1.5", "health[0].counters"},
    {2, "\"ecc_dbe_volatile\":1", "\"\":1", "health[0].counters"},
    {2, "\"throttle_reasons\":0", "\"throttle_reasons\":\"x\"", "health[0].gauges"},
    {2, "{\"ecc_dbe_volatile\":1}", "[1]", "health[0].counters"},
    {2,
     ",\"gauges\":{\"throttle_reasons\":0,\"remap_pending\":-1}",
     "",
     "health[0].gauges"},
    {2, "\"class\"", "\"extra\":1,\"class\"", "health[0].extra"},
    {3, "\"count\":2", "\"count\":0", "health[0].count"},
    {3, "\"xid\":79", "\"xid\":4294967296", "health[0].xid"},
    {3, "\"action\":\"RESTART_BM\"", "\"action\":\"\"", "health[0].action"},
    {3, "\"class\":\"reboot\"", "\"class\":\"Reboot\"", "health[0].class"},
    {3, "\"device\":\"0000:17:00.0\",", "", "health[0].device"},
    {5, "\"path\":\"PIX\"", "\"path\":\"NVL\"", "health[0].path"},
    {5, "\"nic\":\"mlx5_0\"", "\"nic\":7", "health[0].nic"},
    {6, "\"kind\":\"ib_port\"", "\"kind\":\"gpu\"", "health[0].kind"},
    {6,
     "\"hw:rx_icrc_encapsulated\":3",
     "\"hw:rx_icrc_encapsulated\":0",
     "health[0].counters"},
    {6,
     "\"link_layer\":\"Ethernet\"",
     "\"link_layer\":3",
     "health[0].attrs.link_layer"},
    {6, "\"port\":1", "\"port\":256", "health[0].port"},
    {7, "\"exclude\":\"mlx5_1:1\"", "\"exclude\":\"mlx5 1\"", "health[0].exclude"},
    {7, "\"var\":\"NCCL_IB_HCA\"", "\"var\":\"LD_PRELOAD\"", "health[0].var"},
    {7, "}", ",\"why\":\"x\"}", "health[0].why"},
};

static void test_invalid (void **state)
{
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        const char *rec = records[bad[i].idx];
        const char *p = strstr (rec, bad[i].from);
        char one[2048], arr[2100], want[128];
        fm_report_t rep = {.job_id = 42};
        fm_invalid_t inv;

        assert_non_null (p);
        snprintf (one,
                  sizeof (one),
                  "%.*s%s%s",
                  (int)(p - rec),
                  rec,
                  bad[i].to,
                  p + strlen (bad[i].from));
        snprintf (arr, sizeof (arr), "[%s]", one);
        assert_int_equal (parse (body_with (arr), &rep, &inv), -1);
        snprintf (want, sizeof (want), "windows[0].%s", bad[i].field);
        if (strcmp (inv.field, want) != 0) {
            fail_msg ("case %zu: field '%s', want '%s' (%s)",
                      i,
                      inv.field,
                      want,
                      inv.message);
        }
        assert_int_equal (rep.job_id, 42);
    }
}

/* A gpu record with `ncounters` counters. */
static const char *gpu_with (int ncounters)
{
    static char rec[4096];
    int off = snprintf (rec,
                        sizeof (rec),
                        "[{\"type\":\"gpu\",\"vendor\":\"amd\",\"device\":\"d\","
                        "\"class\":\"info\",\"gauges\":{},\"counters\":{");

    for (int i = 0; i < ncounters; i++) {
        off += snprintf (
            rec + off, sizeof (rec) - (size_t)off, "%s\"c%d\":1", i ? "," : "", i);
    }
    snprintf (rec + off, sizeof (rec) - (size_t)off, "}}]");
    return rec;
}

/* At most 32 counters per gpu object. */
static void test_map_cap (void **state)
{
    fm_report_t rep = {0};
    fm_invalid_t inv;

    assert_int_equal (parse (body_with (gpu_with (33)), &rep, &inv), -1);
    assert_string_equal (inv.field, "windows[0].health[0].counters");
    if (parse (body_with (gpu_with (32)), &rep, &inv) < 0) {
        fail_msg ("%s", inv.message);
    }
    fm_report_parse_release (&rep);
}

static size_t count_kind (const fm_health_event_t *ev,
                          size_t n,
                          fm_health_kind_t kind,
                          int64_t *total)
{
    size_t k = 0;

    *total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind == kind) {
            k++;
            *total += ev[i].count;
        }
    }
    return k;
}

static void test_map (void **state)
{
    fm_health_event_t ev[32];
    size_t n = 99;
    int64_t t;

    assert_int_equal (fm_health_map (health_array (), 4, 123, ev, 32, &n), 0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal (ev[i].node, 4);
        assert_int_equal (ev[i].at_ns, 123);
    }
    /* nic down + ib port DOWN */
    assert_int_equal (count_kind (ev, n, FM_HEALTH_LINK_DOWN, &t), 2);
    /* down episodes: the nic's 2 carrier changes ending down are one flap
     * before the down it ends with; the ib port's one link_downed is its DOWN
     */
    assert_int_equal (count_kind (ev, n, FM_HEALTH_CARRIER, &t), 1);
    assert_int_equal (t, 1);
    /* nic rx+tx errors (not drops) 7; ib 7+1+2+0 (not xmit_wait) 10 */
    assert_int_equal (count_kind (ev, n, FM_HEALTH_PORT_ERRORS, &t), 2);
    assert_int_equal (t, 17);
    /* gpu record of class reset (1) and XID 79 x2; XID 13 is the application's */
    assert_int_equal (count_kind (ev, n, FM_HEALTH_GPU_FAULT, &t), 2);
    assert_int_equal (t, 3);
    assert_int_equal (count_kind (ev, n, FM_HEALTH_PCIE_DEGRADED, &t), 1);
    assert_int_equal (count_kind (ev, n, FM_HEALTH_CLOCK_UNSYNC, &t), 1);
    assert_int_equal (n, 9);
}

/* Carrier edges and link_downed become down episodes, each counted once. */
static void test_map_episodes (void **state)
{
    static const struct {
        const char *rec;
        int64_t carrier; /* CARRIER count, 0: no event */
        bool down;
    } cases[] = {
        {"{\"type\":\"nic\",\"link_up\":true,\"carrier_changes\":2}", 1, false},
        {"{\"type\":\"nic\",\"link_up\":true,\"carrier_changes\":1}", 1, false},
        {"{\"type\":\"nic\",\"link_up\":true,\"carrier_changes\":5}", 3, false},
        {"{\"type\":\"nic\",\"link_up\":false,\"carrier_changes\":1}", 0, true},
        {"{\"type\":\"nic\",\"link_up\":false,\"carrier_changes\":3}", 1, true},
        {"{\"type\":\"nic\",\"link_up\":true,\"carrier_changes\":0}", 0, false},
        {"{\"type\":\"ib_port\",\"state\":\"ACTIVE\",\"phys_state\":\"LinkUp\","
         "\"link_downed\":2}",
         2,
         false},
        {"{\"type\":\"ib_port\",\"state\":\"ACTIVE\",\"phys_state\":\"Polling\","
         "\"link_downed\":3}",
         2,
         true},
        {"{\"type\":\"ib_port\",\"state\":\"INIT\",\"phys_state\":\"LinkUp\","
         "\"link_downed\":0}",
         0,
         true},
    };
    for (size_t i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
        fm_health_event_t ev[4];
        size_t n;
        char arr[512];
        int64_t t;

        snprintf (arr, sizeof (arr), "[%s]", cases[i].rec);
        assert_int_equal (fm_health_map (arr, 0, 0, ev, 4, &n), 0);
        assert_int_equal (count_kind (ev, n, FM_HEALTH_CARRIER, &t),
                          cases[i].carrier > 0);
        assert_int_equal (t, cases[i].carrier);
        assert_int_equal (count_kind (ev, n, FM_HEALTH_LINK_DOWN, &t), cases[i].down);
    }
}

static void test_map_nothing_wrong (void **state)
{
    fm_health_event_t ev[4];
    size_t n = 99;
    char arr[1024];

    /* an active port with congestion only, locality, steering, an APP XID */
    snprintf (arr,
              sizeof (arr),
              "[%s,%s,%s,%s]",
              records[10],
              records[5],
              records[7],
              records[4]);
    assert_int_equal (fm_health_map (arr, 1, 0, ev, 4, &n), 0);
    assert_int_equal (n, 0);
    assert_int_equal (fm_health_map ("[]", 1, 0, NULL, 0, &n), 0);
    assert_int_equal (n, 0);
}

static void test_map_cap_and_errors (void **state)
{
    fm_health_event_t ev[3] = {{.node = -7}, {.node = -7}, {.node = -7}};
    size_t n = 99;

    assert_int_equal (fm_health_map (health_array (), 2, 5, ev, 2, &n), 0);
    assert_int_equal (n, 2);
    assert_int_equal (ev[2].node, -7); /* nothing past cap */
    static const char *const malformed[] = {
        "", "[", "{}", "[1]", "[{\"type\":3}]", "[{\"link_up\":false}]", "null", NULL};
    for (int i = 0; malformed[i]; i++) {
        n = 99;
        errno = 0;
        assert_int_equal (fm_health_map (malformed[i], 2, 5, ev, 3, &n), -1);
        assert_int_equal (errno, EINVAL);
        assert_int_equal (n, 99);
    }
    /* a bad record late in the array changes nothing either */
    ev[0].node = -7;
    assert_int_equal (
        fm_health_map ("[{\"type\":\"nic\",\"link_up\":false},7]", 2, 5, ev, 3, &n),
        -1);
    assert_int_equal (ev[0].node, -7);
    assert_int_equal (fm_health_map (NULL, 2, 5, ev, 3, &n), -1);
    assert_int_equal (fm_health_map ("[]", 2, 5, ev, 3, NULL), -1);
}

/* Through scoring: a GPU needing a reboot degrades its node; a node whose GPUs
 * only report application XIDs stays healthy however many there are.
 */
static void test_score (void **state)
{
    fm_topo_t *topo = fm_topo_create_flat ();
    fm_score_params_t p;
    fm_score_t *sc;
    char arr[512], buf[256];

    assert_non_null (topo);
    for (int i = 0; i < 4; i++) {
        snprintf (buf, sizeof (buf), "n%d", i);
        assert_int_equal (fm_topo_add_node (topo, buf), i);
    }
    fm_score_params_default (&p);
    assert_non_null (sc = fm_score_create (topo, &p));
    for (int64_t w = 1; w <= 3; w++) {
        fm_health_event_t ev[8];
        size_t n;

        assert_int_equal (fm_health_map ("["
                                         "{\"type\":\"xid\",\"device\":\"g\","
                                         "\"xid\":79,\"count\":1,\"class\":\"reboot\","
                                         "\"action\":\"RESTART_BM\"}]",
                                         1,
                                         w * W_NS,
                                         ev,
                                         8,
                                         &n),
                          0);
        assert_int_equal (n, 1);
        assert_int_equal (fm_score_add_health (sc, &ev[0]), 0);
        snprintf (arr, sizeof (arr), "[%s,%s]", records[4], records[4]);
        assert_int_equal (fm_health_map (arr, 2, w * W_NS, ev, 8, &n), 0);
        assert_int_equal (n, 0);
        assert_int_equal (fm_score_close_window (sc, w * W_NS), 0);
    }
    const fm_elem_status_t *e = fm_score_find (sc, FM_ELEM_NODE, 1);
    assert_non_null (e);
    assert_int_equal (e->state, FM_STATE_DEGRADED);
    fm_score_text_evidence (topo, e, buf, sizeof (buf));
    assert_non_null (strstr (buf, "gpu fault"));
    assert_null (fm_score_find (sc, FM_ELEM_NODE, 2));
    /* out of range kind */
    fm_health_event_t badk = {.node = 1, .kind = FM_HEALTH_GPU_FAULT + 1};
    assert_int_equal (fm_score_add_health (sc, &badk), -1);
    fm_score_destroy (sc);
    fm_topo_destroy (topo);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_valid),
        cmocka_unit_test (test_invalid),
        cmocka_unit_test (test_map_cap),
        cmocka_unit_test (test_map),
        cmocka_unit_test (test_map_episodes),
        cmocka_unit_test (test_map_nothing_wrong),
        cmocka_unit_test (test_map_cap_and_errors),
        cmocka_unit_test (test_score),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
