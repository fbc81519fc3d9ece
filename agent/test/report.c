/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "agent.h"
#include "report.h"
#include "summary.h"

static fm_linkstats_t sample_stats (void)
{
    fm_linkstats_t s = {
        .samples = 3,
        .rtt = {3, 10, 20, 30, 40, 50},
        .owd_fwd = {3, 5, 6, 7, 8, 9},
        .owd_rev = {3, -2, 4, 5, 6, 7},
        .have_offset = true,
        .offset_ns = 1000,
        .offset_err_ns = 5,
        .probes = 10,
        .lost = 3,
        .lost_fwd = 1,
        .lost_rev = 2,
        .reorder_fwd = 1,
        .reorder_rev = 50, /* more than received: must be clamped */
    };
    return s;
}

static void test_window_json (void **state)
{
    fm_linkstats_t st[2] = {sample_stats (), {0}};
    const char *peers[] = {"fmn2", "fmn3"};
    fm_report_clock_t clock = {
        .valid = true, .offset_ns = -1000, .error_ns = 5, .drift_ppb = 2.5e6};
    json_t *health = json_pack ("[{s:s}]", "type", "steer");
    json_t *w = fm_agent_report_window (7, 100, 200, &clock, peers, st, 2, health);
    json_t *links, *l;
    json_int_t v;

    assert_non_null (w);
    /* the window holds the health array it was given */
    assert_ptr_equal (json_object_get (w, "health"), health);
    assert_int_equal (json_integer_value (json_object_get (w, "seq")), 7);
    assert_int_equal (json_integer_value (json_object_get (w, "start_ns")), 100);
    assert_int_equal (json_integer_value (json_object_get (w, "end_ns")), 200);
    assert_int_equal (json_unpack (w, "{s:{s:I}}", "clock", "offset_ns", &v), 0);
    assert_int_equal (v, -1000);
    /* over the API's 1000 ppm: clamped */
    assert_true (
        json_real_value (json_object_get (json_object_get (w, "clock"), "drift_ppb"))
        == 1e6);
    links = json_object_get (w, "links");
    assert_int_equal (json_array_size (links), 4);

    /* out: 10 sent, the peer missed 1 */
    l = json_array_get (links, 0);
    assert_string_equal (json_string_value (json_object_get (l, "peer")), "fmn2");
    assert_string_equal (json_string_value (json_object_get (l, "dir")), "out");
    assert_int_equal (json_integer_value (json_object_get (l, "sent")), 10);
    assert_int_equal (json_integer_value (json_object_get (l, "received")), 9);
    assert_int_equal (json_integer_value (json_object_get (l, "lost")), 1);
    assert_int_equal (json_integer_value (json_object_get (l, "reordered")), 1);
    assert_int_equal (json_unpack (l, "{s:{s:I}}", "owd_ns", "p99", &v), 0);
    assert_int_equal (v, 8);
    assert_int_equal (json_unpack (l, "{s:{s:I}}", "rtt_ns", "max", &v), 0);
    assert_int_equal (v, 50);
    /* in: the 9 replies the peer sent, 2 of them lost */
    l = json_array_get (links, 1);
    assert_string_equal (json_string_value (json_object_get (l, "dir")), "in");
    assert_int_equal (json_integer_value (json_object_get (l, "sent")), 9);
    assert_int_equal (json_integer_value (json_object_get (l, "received")), 7);
    assert_int_equal (json_integer_value (json_object_get (l, "lost")), 2);
    assert_int_equal (json_integer_value (json_object_get (l, "reordered")), 7);
    assert_int_equal (json_unpack (l, "{s:{s:I}}", "owd_ns", "p50", &v), 0);
    assert_int_equal (v, 4);
    /* no samples: null quantiles, zero counts */
    l = json_array_get (links, 2);
    assert_true (json_is_null (json_object_get (l, "rtt_ns")));
    assert_true (json_is_null (json_object_get (l, "owd_ns")));
    assert_int_equal (json_integer_value (json_object_get (l, "sent")), 0);
    json_decref (w);
}

static void test_window_without_clock (void **state)
{
    fm_linkstats_t st = sample_stats ();
    const char *peers[] = {"x"};
    fm_report_clock_t clock = {0};
    json_t *w;

    st.have_offset = false;
    st.rtt.max = 100LL * 1000000000LL; /* over the API's 60 s: clamped */
    w = fm_agent_report_window (1, 1, 2, &clock, peers, &st, 1, NULL);
    assert_null (json_object_get (w, "clock"));
    assert_null (json_object_get (w, "health"));
    assert_true (json_is_null (
        json_object_get (json_array_get (json_object_get (w, "links"), 0), "owd_ns")));
    assert_int_equal (
        json_integer_value (json_object_get (
            json_object_get (json_array_get (json_object_get (w, "links"), 0),
                             "rtt_ns"),
            "max")),
        60000000000LL);
    json_decref (w);
}

/* Probe drops: only the nonzero reasons, capped; none at all: no field. */
static void test_window_drops (void **state)
{
    fm_linkstats_t st = sample_stats ();
    const char *peers[] = {"x"};
    fm_report_clock_t clock = {0};
    uint64_t counts[FM_API_PROBE_DROP_NREASONS] = {0};
    json_t *w = fm_agent_report_window (1, 1, 2, &clock, peers, &st, 1, NULL), *d;

    assert_non_null (w);
    assert_int_equal (fm_agent_report_add_drops (w, counts), 0);
    assert_null (json_object_get (w, "probe_drops"));
    counts[4] = 12;                     /* bad_tag */
    counts[6] = 3;                      /* unknown_sender */
    counts[5] = FM_API_COUNT_MAX + 10u; /* foreign */
    assert_int_equal (fm_agent_report_add_drops (w, counts), 0);
    d = json_object_get (w, "probe_drops");
    assert_int_equal (json_object_size (d), 3);
    assert_int_equal (json_integer_value (json_object_get (d, "bad_tag")), 12);
    assert_int_equal (json_integer_value (json_object_get (d, "unknown_sender")), 3);
    assert_int_equal (json_integer_value (json_object_get (d, "foreign")),
                      FM_API_COUNT_MAX);
    json_decref (w);
}

static void test_clock_from_reference (void **state)
{
    fm_clock_estimate_t e = {
        .valid = true, .offset_ns = 1000, .drift_ppb = -30.5, .bound_ns = 5};
    fm_report_clock_t c = fm_agent_report_clock (&e);

    /* the estimate says reference - local = +1000: local is 1000 behind */
    assert_true (c.valid);
    assert_int_equal (c.offset_ns, -1000);
    assert_int_equal (c.error_ns, 5);
    assert_true (c.drift_ppb == 30.5);
    e.valid = false;
    assert_false (fm_agent_report_clock (&e).valid);
    assert_false (fm_agent_report_clock (NULL).valid);
}

static void test_target_count (void **state)
{
    /* up to 17 nodes: everybody else */
    assert_int_equal (fm_agent_target_count (17, 10), 16);
    assert_int_equal (fm_agent_target_count (2, 10), 1);
    assert_int_equal (fm_agent_target_count (1, 10), 0);
    assert_int_equal (fm_agent_target_count (0, 10), 0);
    /* beyond: k, whatever the job's size */
    assert_int_equal (fm_agent_target_count (18, 10), 10);
    assert_int_equal (fm_agent_target_count (16384, 10), 10);
    assert_int_equal (fm_agent_target_count (64, 12), 12);
    assert_int_equal (fm_agent_target_count (20, 40), 19);
}

static void test_summary_text (void **state)
{
    json_error_t jerr;
    json_t *j = json_loads (
        "{\"job_id\": 42, \"since_ns\": 1, \"windows\": 24, \"records\": 288, "
        "\"links\": ["
        "{\"src\": \"fmn1\", \"dst\": \"fmn3\", \"reporter\": \"fmn3\", \"windows\": 6,"
        " \"last_end_ns\": 5, \"sent\": 300, \"received\": 285, \"lost\": 15,"
        " \"reordered\": 0, \"loss_ratio\": 0.05, \"rtt_p50_ns\": 41200,"
        " \"rtt_p99_ns\": 2500000, \"owd_p50_ns\": null, \"owd_p99_ns\": null}]}",
        0,
        &jerr);
    char *t;
    fm_error_t err;

    assert_non_null (j);
    assert_non_null ((t = fm_summary_format (j, &err)));
    assert_non_null (strstr (t,
                             "fabric-monitor: network summary of job 42: 24 report "
                             "windows, 288 link records, 1 links\n"));
    assert_non_null (strstr (t, "fabric-monitor: fmn1 -> fmn3"));
    assert_non_null (strstr (t, "   5.00%    41.2us    2.50ms         -         -\n"));
    /* every line carries the prefix */
    for (char *p = t; *p; p = strchr (p, '\n') + 1) {
        assert_int_equal (strncmp (p, "fabric-monitor: ", 16), 0);
    }
    free (t);
    json_decref (j);

    /* fabricd lists the worst links and counts them all */
    j = json_loads (
        "{\"job_id\": 42, \"windows\": 24, \"records\": 288, \"nlinks\": 250,"
        " \"links\": [{\"src\": \"fmn1\", \"dst\": \"fmn3\", \"reporter\": \"fmn3\","
        " \"sent\": 300, \"lost\": 15, \"loss_ratio\": 0.05, \"rtt_p50_ns\": null,"
        " \"rtt_p99_ns\": null, \"owd_p50_ns\": null, \"owd_p99_ns\": null}]}",
        0,
        &jerr);
    assert_non_null (j);
    assert_non_null ((t = fm_summary_format (j, &err)));
    assert_non_null (strstr (t, "288 link records, 250 links\n"));
    assert_non_null (strstr (t, "fabric-monitor: ... 249 more links"));
    free (t);
    json_decref (j);

    j = json_loads ("{\"job_id\": 1, \"links\": 3}", 0, &jerr);
    errno = 0;
    assert_null (fm_summary_format (j, &err));
    assert_int_equal (errno, EPROTO);
    json_decref (j);
    j = json_loads (
        "{\"job_id\": 1, \"windows\": 0, \"records\": 0, \"links\": [{}]}", 0, &jerr);
    assert_null (fm_summary_format (j, &err));
    json_decref (j);
}

/* The health/steering and actions sections (doc/health.md). */
static void test_summary_sections (void **state)
{
    json_error_t jerr;
    char *t;
    fm_error_t err;
    json_t *j = json_loads (
        "{\"job_id\": 7, \"windows\": 2, \"records\": 0, \"links\": [],"
        " \"health\": [{\"node\": \"fmn2\", \"health\": ["
        "  {\"type\": \"steer\", \"var\": \"NCCL_IB_HCA\", \"exclude\": \"mlx5_1:1\"},"
        "  {\"type\": \"ib_port\", \"device\": \"mlx5_1\", \"port\": 1,"
        "   \"state\": \"DOWN\", \"phys_state\": \"Polling\", \"link_downed\": 1},"
        "  {\"type\": \"ib_port\", \"device\": \"mlx5_0\", \"port\": 1,"
        "   \"state\": \"ACTIVE\", \"phys_state\": \"LinkUp\", \"link_downed\": 0},"
        "  {\"type\": \"xid\", \"device\": \"0000:17:00.0\", \"xid\": 13, \"count\": 4,"
        "   \"class\": \"application\", \"action\": \"RESTART_APP\"},"
        "  {\"type\": \"xid\", \"device\": \"0000:17:00.0\", \"xid\": 79, \"count\": 1,"
        "   \"class\": \"reboot\", \"action\": \"RESTART_BM\"},"
        "  {\"type\": \"nic\", \"name\": \"eth0\", \"link_up\": true,"
        "   \"carrier_changes\": 2}]},"
        "  {\"node\": \"fmn3\", \"health\": ["
        "  {\"type\": \"nic\", \"name\": \"eth0\", \"link_up\": true,"
        "   \"carrier_changes\": 0}]}],"
        " \"actions\": [{\"at_ns\": 1800000003000000000, \"kind\": \"drain\","
        "   \"node\": \"fmn3\", \"reason\": \"fabric: loss\\n2%\", \"result\": "
        "\"done\"},"
        "  {\"at_ns\": 1800000009000000000, \"kind\": \"resume\", \"node\": \"fmn3\","
        "   \"reason\": \"clean\", \"result\": \"dry_run\"}]}",
        0,
        &jerr);

    assert_non_null (j);
    setenv ("TZ", "UTC", 1);
    tzset ();
    assert_non_null ((t = fm_summary_format (j, &err)));
    assert_non_null (strstr (t,
                             "fabric-monitor: steering fmn2: NCCL_IB_HCA=^=mlx5_1:1 "
                             "for steps started after"));
    assert_non_null (strstr (t, "health fmn2: mlx5_1 port 1 DOWN (Polling)"));
    assert_null (strstr (t, "mlx5_0"));
    assert_non_null (strstr (t, "health fmn2: GPU 0000:17:00.0 XID 79 x1 (reboot"));
    assert_null (strstr (t, "XID 13")); /* the application's own */
    assert_non_null (strstr (t, "health fmn2: eth0 link up, 2 carrier changes"));
    assert_null (strstr (t, "health fmn3"));
    /* 1800000003 s is 2027-01-15 08:00:03 UTC; the newline cannot forge a line */
    assert_non_null (strstr (
        t, "fabric-monitor: action 08:00:03 drain fmn3: fabric: loss?2% (done)\n"));
    assert_non_null (strstr (t, "action 08:00:09 resume fmn3: clean (dry_run)\n"));
    for (char *p = t; *p; p = strchr (p, '\n') + 1) {
        assert_int_equal (strncmp (p, "fabric-monitor: ", 16), 0);
    }
    free (t);
    json_decref (j);

    static const char *const bad[] = {
        "\"actions\": {}",
        "\"actions\": [{\"at_ns\": 1, \"kind\": \"drain\"}]",
        "\"health\": [{\"node\": \"x\"}]",
        "\"health\": 3",
        NULL,
    };
    for (int i = 0; bad[i]; i++) {
        char text[512];
        snprintf (text,
                  sizeof (text),
                  "{\"job_id\": 1, \"windows\": 0, \"records\": 0, \"links\": [], %s}",
                  bad[i]);
        assert_non_null (j = json_loads (text, 0, &jerr));
        errno = 0;
        assert_null (fm_summary_format (j, &err));
        assert_int_equal (errno, EPROTO);
        json_decref (j);
    }
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_window_json),
        cmocka_unit_test (test_window_without_clock),
        cmocka_unit_test (test_window_drops),
        cmocka_unit_test (test_clock_from_reference),
        cmocka_unit_test (test_target_count),
        cmocka_unit_test (test_summary_text),
        cmocka_unit_test (test_summary_sections),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
