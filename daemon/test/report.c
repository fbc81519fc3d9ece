/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fm/api.h"
#include "registration.h"
#include "report_parse.h"
#include "validate.h"

#define NOW 1800000000000000000LL

static const char *const valid =
    "{\"job_id\":7,\"node\":\"n1\",\"windows\":[{\"seq\":3,"
    "\"start_ns\":1799999995000000000,\"end_ns\":1800000000000000000,"
    "\"clock\":{\"offset_ns\":-12,\"error_ns\":4},"
    "\"links\":[{\"peer\":\"n2\",\"dir\":\"out\","
    "\"rtt_ns\":{\"p50\":10,\"p90\":20,\"p99\":30,\"max\":40},"
    "\"owd_ns\":{\"p50\":-5,\"p90\":1,\"p99\":2,\"max\":3},"
    "\"sent\":100,\"received\":97,\"lost\":3,\"reordered\":2},"
    "{\"peer\":\"n2\",\"dir\":\"in\",\"rtt_ns\":null,\"owd_ns\":null,"
    "\"sent\":0,\"received\":0,\"lost\":0,\"reordered\":0}],"
    "\"health\":[{\"type\":\"ib_port\",\"device\":\"mlx5_0\",\"port\":1,"
    "\"state\":\"ACTIVE\",\"phys_state\":\"LinkUp\",\"rate_gbps\":200,"
    "\"symbol_error\":0,\"link_error_recovery\":0,\"link_downed\":1,"
    "\"port_rcv_errors\":0,\"port_xmit_discards\":0,\"port_xmit_wait\":5},"
    "{\"type\":\"pcie\",\"device\":\"0000:3b:00.0\",\"width\":8,\"max_width\":16,"
    "\"speed_gts\":16,\"max_speed_gts\":16},"
    "{\"type\":\"clock_source\",\"source\":\"tsc\",\"ntp_synchronized\":false,"
    "\"ntp_offset_ns\":-3}]}]}";

static json_t *load (const char *s)
{
    json_t *o = json_loads (s, JSON_REJECT_DUPLICATES, NULL);
    assert_non_null (o);
    return o;
}

static int parse (const char *text, int64_t now, fm_report_t *rep, fm_invalid_t *inv)
{
    return fm_report_parse (text, strlen (text), now, rep, inv);
}

/* valid with the first occurrence of `from` replaced by `to` (static buffer). */
static const char *mutate (const char *from, const char *to)
{
    static char buf[4096];
    const char *p = strstr (valid, from);

    assert_non_null (p);
    snprintf (
        buf, sizeof (buf), "%.*s%s%s", (int)(p - valid), valid, to, p + strlen (from));
    return buf;
}

static void test_valid (void **state)
{
    fm_report_t rep;
    fm_invalid_t inv;

    /* The document is valid JSON for jansson too. */
    json_decref (load (valid));
    assert_int_equal (parse (valid, NOW, &rep, &inv), 0);
    assert_int_equal (rep.job_id, 7);
    assert_string_equal (rep.node, "n1");
    assert_int_equal (rep.nwindows, 1);
    assert_int_equal (rep.nrecords, 2);
    assert_int_equal (rep.windows[0].seq, 3);
    assert_true (rep.windows[0].has_clock);
    assert_int_equal (rep.windows[0].clock_offset_ns, -12);
    assert_int_equal (rep.windows[0].links[0].dir, FM_DIR_OUT);
    assert_true (rep.windows[0].links[0].rtt.present);
    assert_int_equal (rep.windows[0].links[0].rtt.p99, 30);
    assert_int_equal (rep.windows[0].links[0].owd.p50, -5);
    assert_int_equal (rep.windows[0].links[1].dir, FM_DIR_IN);
    assert_false (rep.windows[0].links[1].rtt.present);
    assert_int_equal (rep.windows[0].links[0].lost, 3);
    assert_non_null (strstr (rep.windows[0].health_json, "\"mlx5_0\""));
    assert_false (rep.final);
    assert_false (rep.windows[0].has_drift);
    fm_report_parse_release (&rep);
    assert_int_equal (
        parse (mutate ("\"error_ns\":4", "\"error_ns\":4,\"drift_ppb\":-25.5e3"),
               NOW,
               &rep,
               &inv),
        0);
    assert_true (rep.windows[0].has_drift);
    assert_true (rep.windows[0].clock_drift_ppb == -25500);
    fm_report_parse_release (&rep);
    fm_report_parse_release (NULL);
    for (int v = 0; v < 2; v++) {
        char *t;
        assert_true (asprintf (&t, "{\"final\":%s,%s", v ? "true" : "false", valid + 1)
                     > 0);
        assert_int_equal (parse (t, NOW, &rep, &inv), 0);
        assert_int_equal (rep.final, v == 1);
        fm_report_parse_release (&rep);
        free (t);
    }
}

static const struct {
    const char *from, *to, *field;
} bad[] = {
    {"\"job_id\":7", "\"job_id\":7,\"x\":1", "x"},
    {"\"job_id\":7", "\"job_id\":7,\"final\":1", "final"},
    {"\"job_id\":7", "\"job_id\":7,\"final\":null", "final"},
    {"\"job_id\":7", "\"job_id\":-7", "job_id"},
    {"\"job_id\":7", "\"job_id\":7.0", "job_id"},
    {"\"job_id\":7", "\"job_id\":4294967295", "job_id"},
    {"\"node\":\"n1\"", "\"node\":\"-n1\"", "node"},
    {"\"node\":\"n1\"", "\"node\":\"\"", "node"},
    {"\"node\":\"n1\"", "\"node\":1", "node"},
    {"\"seq\":3", "\"seq\":-1", "windows[0].seq"},
    {"\"seq\":3", "\"seq\":null", "windows[0].seq"},
    {"\"end_ns\":1800000000000000000",
     "\"end_ns\":1799999995000000000",
     "windows[0].end_ns"},
    {"\"end_ns\":1800000000000000000",
     "\"end_ns\":1803600000000000001",
     "windows[0].end_ns"},
    {"\"start_ns\":1799999995000000000", "\"start_ns\":1000", "windows[0].start_ns"},
    {"\"offset_ns\":-12", "\"offset_ns\":-1000000000001", "windows[0].clock.offset_ns"},
    {"\"error_ns\":4", "\"error_ns\":4,\"z\":0", "windows[0].clock.z"},
    {"\"error_ns\":4", "\"bound\":4", "windows[0].clock.bound"},
    {"\"error_ns\":4",
     "\"error_ns\":4,\"drift_ppb\":1000000.5",
     "windows[0].clock.drift_ppb"},
    {"\"error_ns\":4",
     "\"error_ns\":4,\"drift_ppb\":\"1\"",
     "windows[0].clock.drift_ppb"},
    {"\"dir\":\"out\"", "\"dir\":\"OUT\"", "windows[0].links[0].dir"},
    {"\"p90\":20", "\"p90\":5", "windows[0].links[0].rtt_ns.p90"},
    {"\"p50\":10", "\"p50\":-10", "windows[0].links[0].rtt_ns.p50"},
    {"\"max\":40", "\"max\":60000000001", "windows[0].links[0].rtt_ns.max"},
    {"\"max\":40}", "\"max\":40,\"p75\":1}", "windows[0].links[0].rtt_ns.p75"},
    {"\"p50\":10,\"p90\":20,", "\"p90\":20,", "windows[0].links[0].rtt_ns.p50"},
    {"\"rtt_ns\":{\"p50\":10,\"p90\":20,\"p99\":30,\"max\":40}",
     "\"rtt_ns\":[10,20,30,40]",
     "windows[0].links[0].rtt_ns"},
    {"\"sent\":100", "\"sent\":1000000001", "windows[0].links[0].sent"},
    {"\"lost\":3", "\"lost\":101", "windows[0].links[0].lost"},
    {"\"reordered\":2", "\"reordered\":98", "windows[0].links[0].reordered"},
    {"\"reordered\":2", "\"reordered\":2.5", "windows[0].links[0].reordered"},
    {"\"received\":97", "\"received\":true", "windows[0].links[0].received"},
    {"\"peer\":\"n2\",\"dir\":\"in\"",
     "\"peer\":\"n2\",\"dir\":\"out\"",
     "windows[0].links[1].peer"},
    {"\"links\":[", "\"links\":{}, \"l\":[", "windows[0].links"},
    {"\"type\":\"ib_port\"", "\"type\":\"fan\"", "windows[0].health[0].type"},
    {"\"state\":\"ACTIVE\"", "\"state\":\"UP\"", "windows[0].health[0].state"},
    {"\"rate_gbps\":200", "\"rate_gbps\":-1", "windows[0].health[0].rate_gbps"},
    {"\"port\":1", "\"port\":0", "windows[0].health[0].port"},
    {"\"link_downed\":1", "\"link_downed\":-1", "windows[0].health[0].link_downed"},
    {"\"width\":8", "\"width\":33", "windows[0].health[1].width"},
    {"\"ntp_synchronized\":false",
     "\"ntp_synchronized\":0",
     "windows[0].health[2].ntp_synchronized"},
    {"\"port_xmit_wait\":5",
     "\"port_xmit_wait\":5,\"extra\":1",
     "windows[0].health[0].extra"},
    {"\"seq\":3", "\"seq\":3,\"probe_drops\":[]", "windows[0].probe_drops"},
    {"\"seq\":3",
     "\"seq\":3,\"probe_drops\":{\"bad_key\":1}",
     "windows[0].probe_drops.bad_key"},
    {"\"seq\":3",
     "\"seq\":3,\"probe_drops\":{\"bad_tag\":-1}",
     "windows[0].probe_drops.bad_tag"},
    {"\"seq\":3",
     "\"seq\":3,\"probe_drops\":{\"foreign\":1000000001}",
     "windows[0].probe_drops.foreign"},
    {"\"seq\":3",
     "\"seq\":3,\"probe_drops\":{\"unknown_sender\":\"1\"}",
     "windows[0].probe_drops.unknown_sender"},
    {"\"windows\":[{", "\"windows\":[1,{", "windows[0]"},
    {"\"windows\":[", "\"windows\":[],\"w\":[", "w"},
};

static void test_invalid (void **state)
{
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        fm_report_t rep = {.job_id = 42};
        fm_invalid_t inv;
        const char *text = mutate (bad[i].from, bad[i].to);

        json_decref (load (text));
        assert_int_equal (parse (text, NOW, &rep, &inv), -1);
        if (bad[i].field) {
            if (strcmp (inv.field, bad[i].field) != 0) {
                fail_msg ("case %zu: field '%s', want '%s' (%s)",
                          i,
                          inv.field,
                          bad[i].field,
                          inv.message);
            }
        }
        assert_false (inv.too_large);
        assert_false (inv.syntax);
        assert_non_null (strstr (inv.message, inv.field));
        assert_int_equal (rep.job_id, 42); /* untouched */
    }
}

/* Not JSON (or not an object): invalid_json, no field. */
static const struct {
    const char *from, *to;
} syntax_bad[] = {
    {"\"seq\":3", "\"seq\":3,\"seq\":4"},
    {"\"sent\":100", "\"sent\":100,\"sent\":1"},
    {"\"p50\":10,", "\"p50\":10,\"p50\":10,"},
    {"\"offset_ns\":-12", "\"offset_ns\":NaN"},
    {"\"offset_ns\":-12", "\"offset_ns\":-0012"},
    {"\"sent\":100", "\"sent\":99999999999999999999"},
    {"\"sent\":100", "\"sent\":1."},
    {"\"node\":\"n1\"", "\"node\":\"n\\x1\""},
    {"\"node\":\"n1\"", "\"node\":\"n\\ud800\""},
    {"\"node\":\"n1\"", "\"node\":\"n\xff\""},
    {"\"node\":\"n1\"", "\"node\":\"n\\u0000\""},
    {"\"node\":\"n1\"", "\"node\":\"n1"},
    {"\"node\":\"n1\"", "\"node\":\"n1\",,"},
    {"\"state\":\"ACTIVE\"", "\"state\":\"ACTIVE\",\"state\":\"ACTIVE\""},
    {"\"port\":1", "\"port\":tru"},
    {"}]}]}", "}]}]}x"},
    {"}]}]}", "}]}]"},
    {"\"seq\":3", "\"seq\":3,\"probe_drops\":{\"bad_tag\":1,\"bad_tag\":2}"},
};

/* probe_drops: the counts by reason, zero where absent */
static void test_probe_drops (void **state)
{
    fm_report_t rep;
    fm_invalid_t inv;
    const char *text =
        mutate ("\"seq\":3", "\"seq\":3,\"probe_drops\":{\"bad_tag\":5,\"unknown_sender\":2}");

    assert_int_equal (parse (text, NOW, &rep, &inv), 0);
    for (int i = 0; i < FM_API_PROBE_DROP_NREASONS; i++) {
        assert_int_equal (rep.windows[0].probe_drops[i], i == 4 ? 5 : i == 6 ? 2 : 0);
    }
    fm_report_parse_release (&rep);
    assert_int_equal (parse (valid, NOW, &rep, &inv), 0);
    for (int i = 0; i < FM_API_PROBE_DROP_NREASONS; i++) {
        assert_int_equal (rep.windows[0].probe_drops[i], 0);
    }
    fm_report_parse_release (&rep);
}

static void test_syntax (void **state)
{
    const char *text;
    fm_report_t rep;
    fm_invalid_t inv;

    for (size_t i = 0; i < sizeof (syntax_bad) / sizeof (syntax_bad[0]); i++) {
        text = mutate (syntax_bad[i].from, syntax_bad[i].to);
        assert_null (json_loads (text, JSON_REJECT_DUPLICATES, NULL));
        if (parse (text, NOW, &rep, &inv) != -1 || !inv.syntax) {
            fail_msg ("case %zu accepted or not a syntax error: %s", i, inv.message);
        }
        assert_string_equal (inv.field, "");
        assert_non_null (strstr (inv.message, "not valid JSON"));
    }
    /* Escapes are decoded: "\u006e1" is n1. */
    text = mutate ("\"node\":\"n1\"", "\"node\":\"\\u006e1\"");
    assert_int_equal (parse (text, NOW, &rep, &inv), 0);
    assert_string_equal (rep.node, "n1");
    fm_report_parse_release (&rep);
    text = mutate ("\"node\":\"n1\"", "\"node\":\"n\\u00e9\"");
    assert_int_equal (parse (text, NOW, &rep, &inv), -1);
    assert_string_equal (inv.field, "node");
    assert_int_equal (fm_report_parse (NULL, 0, NOW, &rep, &inv), -1);
    assert_true (inv.syntax);
}

static void test_not_object (void **state)
{
    fm_report_t rep;
    fm_invalid_t inv;

    assert_int_equal (parse ("[1]", NOW, &rep, &inv), -1);
    assert_true (inv.syntax);
    assert_string_equal (inv.field, "");
}

static void test_future (void **state)
{
    fm_report_t rep;
    fm_invalid_t inv;

    /* The same document, judged two days earlier, lies in the future. */
    assert_int_equal (parse (valid, NOW - 2 * 86400000000000LL, &rep, &inv), -1);
    assert_string_equal (inv.field, "windows[0].start_ns");
}

static int parse_json (json_t *o, fm_report_t *rep, fm_invalid_t *inv)
{
    char *text = json_dumps (o, JSON_COMPACT);
    int rc;

    assert_non_null (text);
    rc = parse (text, NOW, rep, inv);
    free (text);
    return rc;
}

static void test_caps (void **state)
{
    fm_report_t rep;
    fm_invalid_t inv;
    json_t *o = load (valid);
    json_t *w = json_array_get (json_object_get (o, "windows"), 0);
    json_t *windows = json_array ();
    json_t *links = json_array ();

    for (int i = 0; i <= FM_API_MAX_WINDOWS; i++) {
        json_array_append (windows, w);
    }
    json_object_set_new (o, "windows", windows);
    assert_int_equal (parse_json (o, &rep, &inv), -1);
    assert_true (inv.too_large);
    assert_string_equal (inv.field, "windows");

    /* Copies of one entry: the cap is checked before uniqueness. */
    for (int i = 0; i <= FM_API_MAX_LINKS; i++) {
        json_array_append (links, json_array_get (json_object_get (w, "links"), 0));
    }
    json_object_set_new (o, "windows", json_pack ("[O]", w));
    json_object_set_new (
        json_array_get (json_object_get (o, "windows"), 0), "links", links);
    assert_int_equal (parse_json (o, &rep, &inv), -1);
    assert_true (inv.too_large);
    assert_string_equal (inv.field, "windows[0].links");
    json_decref (o);
}

static void test_registration (void **state)
{
    fm_registration_t reg;
    fm_invalid_t inv;
    json_t *o = load ("{\"job_id\":9,\"node\":\"fmn2\",\"user_id\":1000,"
                      "\"job_nodes\":\"fmn[1-4]\",\"probe_addr\":\"::1\","
                      "\"probe_port\":7000,\"nics\":[{\"name\":\"ib0\","
                      "\"kind\":\"infiniband\",\"device\":\"mlx5_0\","
                      "\"speed_mbps\":200000,\"addr\":\"10.0.0.2\"}]}");

    assert_int_equal (fm_registration_parse (o, &reg, &inv), 0);
    assert_int_equal (reg.expected, 4);
    assert_string_equal (reg.probe_addr, "::1");
    assert_non_null (strstr (reg.nics_json, "mlx5_0"));
    fm_registration_release (&reg);
    assert_int_equal (reg.mode, FM_JOB_OBSERVE);
    json_object_set_new (o, "mode", json_string ("protect"));
    assert_int_equal (fm_registration_parse (o, &reg, &inv), 0);
    assert_int_equal (reg.mode, FM_JOB_PROTECT);
    assert_string_equal (fm_registration_mode_name (reg.mode), "protect");
    fm_registration_release (&reg);
    json_object_set_new (o, "mode", json_string ("off"));
    assert_int_equal (fm_registration_parse (o, &reg, &inv), -1);
    assert_string_equal (inv.field, "mode");
    json_object_set_new (o, "mode", json_true ());
    assert_int_equal (fm_registration_parse (o, &reg, &inv), -1);
    assert_string_equal (inv.field, "mode");
    json_object_del (o, "mode");

    json_object_set_new (o, "probe_addr", json_string ("10.0.0.256"));
    assert_int_equal (fm_registration_parse (o, &reg, &inv), -1);
    assert_string_equal (inv.field, "probe_addr");
    json_object_set_new (o, "probe_addr", json_string ("10.0.0.1"));
    json_object_set_new (o, "job_nodes", json_string ("fmn[3-4]"));
    assert_int_equal (fm_registration_parse (o, &reg, &inv), -1);
    assert_string_equal (inv.field, "job_nodes");
    json_object_set_new (o, "job_nodes", json_string ("fmn[4-1]"));
    assert_int_equal (fm_registration_parse (o, &reg, &inv), -1);
    assert_string_equal (inv.field, "job_nodes");
    json_object_del (o, "job_nodes");
    json_object_set_new (
        o, "nics", json_pack ("[{s:s, s:s}]", "name", "eth0", "kind", "token-ring"));
    assert_int_equal (fm_registration_parse (o, &reg, &inv), -1);
    assert_string_equal (inv.field, "nics[0].kind");
    json_object_del (o, "nics");
    assert_int_equal (fm_registration_parse (o, &reg, &inv), 0);
    assert_int_equal (reg.expected, 0);
    assert_string_equal (reg.nics_json, "[]");
    fm_registration_release (&reg);
    json_object_del (o, "user_id");
    assert_int_equal (fm_registration_parse (o, &reg, &inv), -1);
    assert_string_equal (inv.field, "user_id");
    json_decref (o);
}

static void test_names (void **state)
{
    assert_true (fm_validate_node_name ("fmn01.rack-2_a"));
    assert_false (fm_validate_node_name (""));
    assert_false (fm_validate_node_name (NULL));
    assert_false (fm_validate_node_name ("_x"));
    assert_false (fm_validate_node_name ("a b"));
    assert_false (fm_validate_node_name ("a/b"));
    assert_true (fm_validate_node_name (
        "a123456789012345678901234567890123456789012345678901234567890bc"));
    assert_false (fm_validate_node_name (
        "a123456789012345678901234567890123456789012345678901234567890bcd"));
    assert_true (fm_validate_ip_literal ("127.0.0.1"));
    assert_true (fm_validate_ip_literal ("fe80::1"));
    assert_false (fm_validate_ip_literal ("localhost"));
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_valid),
        cmocka_unit_test (test_invalid),
        cmocka_unit_test (test_probe_drops),
        cmocka_unit_test (test_syntax),
        cmocka_unit_test (test_not_object),
        cmocka_unit_test (test_future),
        cmocka_unit_test (test_caps),
        cmocka_unit_test (test_registration),
        cmocka_unit_test (test_names),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
