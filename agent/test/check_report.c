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

#include "check_report.h"

static char names[6][FM_CHECK_NAME_MAX] = {
    "fmn1", "fmn2", "fmn3", "fmn4", "fmn5", "fmn6"};

/* quick on 6 nodes: fmn6 behind a slow link, the pair fmn2-fmn3 failed */
static void results (fm_check_result_t *r)
{
    static const uint32_t ends[6][2] = {{0, 1}, {2, 3}, {4, 5}, {1, 2}, {3, 4}, {0, 5}};

    memset (r, 0, 6 * sizeof (*r));
    for (uint32_t i = 0; i < 6; i++) {
        r[i].a = ends[i][0];
        r[i].b = ends[i][1];
        r[i].ok = true;
        r[i].lat_p50_ns = 30000 + i;
        r[i].lat_p99_ns = 60000 + i;
        r[i].bw_bps = 8000000000LL;
    }
    r[2].bw_bps = r[5].bw_bps = 1000000;
    r[3].ok = false;
    snprintf (r[3].error, sizeof (r[3].error), "ping:\ttimed\nout");
}

static void test_roundtrip (void **state)
{
    fm_check_result_t in[6], *out = NULL;
    size_t n = 0;
    fm_error_t err;
    char *text;

    results (in);
    assert_non_null (text = fm_check_report_encode (in, 6));
    assert_int_equal (fm_check_report_decode (text, 6, &out, &n, &err), 0);
    assert_int_equal (n, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal (out[i].a, in[i].a);
        assert_int_equal (out[i].b, in[i].b);
        assert_int_equal (out[i].ok, in[i].ok);
        assert_int_equal (out[i].lat_p50_ns, in[i].lat_p50_ns);
        assert_int_equal (out[i].lat_p99_ns, in[i].lat_p99_ns);
        assert_int_equal (out[i].bw_bps, in[i].bw_bps);
    }
    /* separators in errors are flattened, an empty error stays empty */
    assert_string_equal (out[3].error, "ping: timed out");
    assert_string_equal (out[0].error, "");
    /* decoding appends */
    assert_int_equal (fm_check_report_decode (text, 6, &out, &n, &err), 0);
    assert_int_equal (n, 12);
    assert_int_equal (fm_check_report_decode ("", 6, &out, &n, &err), 0);
    assert_int_equal (n, 12);
    free (text);
    free (out);
}

static void test_decode_rejects (void **state)
{
    static const char *bad[] = {
        "0\t4\t1\t1\t1\t1\t-\n",                    /* node index out of range */
        "1\t1\t1\t1\t1\t1\t-\n",                    /* a node with itself */
        "0\t1\t2\t1\t1\t1\t-\n",                    /* ok not 0/1 */
        "0\t1\t1\t-5\t1\t1\t-\n",                   /* negative */
        "0\t1\t1\t1\t1\t-\n",                       /* a field missing */
        "0\t1\t1\t1\t1\t1\t-\tx\n",                 /* one too many */
        "0\t1\t1\t1x\t1\t1\t-\n",                   /* trailing junk */
        "0\t1\t1\t99999999999999999999\t1\t1\t-\n", /* overflow */
    };
    fm_check_result_t *r = NULL;
    size_t n = 0;
    fm_error_t err;

    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        errno = 0;
        assert_int_equal (fm_check_report_decode (bad[i], 4, &r, &n, &err), -1);
        assert_int_equal (errno, EPROTO);
        assert_int_equal (n, 0);
    }
    free (r);
}

static void test_table (void **state)
{
    fm_check_result_t r[6];
    fm_check_node_t nodes[6];
    fm_check_summary_t s;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;

    results (r);
    assert_int_equal (fm_check_verdict (r, 6, 6, NULL, nodes, &s), 0);
    fm_check_verdict_sort (r, 6);
    assert_non_null (f = open_memstream (&buf, &len));
    fm_check_report_print_table (f, FM_CHECK_QUICK, names, 6, r, 6, nodes, &s, 1.5);
    fclose (f);
    /* the failed pair is the first row, the verdict the last line */
    assert_non_null (strstr (buf, "fabric-check: quick, 6 nodes, 6 pairs, 1.50 s\n"));
    assert_true (strstr (buf, "FAILED: ping: timed out") < strstr (buf, "SLOW"));
    assert_non_null (strstr (buf, "slow nodes: fmn6 (2/2 pairs)\n"));
    assert_non_null (strstr (buf, "fabric-check: FAIL bad nodes: fmn6\n"));
    free (buf);

    for (int i = 0; i < 6; i++) {
        r[i].ok = true;
        r[i].bw_bps = 8000000000LL;
    }
    assert_int_equal (fm_check_verdict (r, 6, 6, NULL, nodes, &s), 0);
    assert_non_null (f = open_memstream (&buf, &len));
    fm_check_report_print_table (f, FM_CHECK_FULL, names, 6, r, 6, nodes, &s, 1.5);
    fclose (f);
    assert_non_null (strstr (buf, "\nfabric-check: PASS\n"));
    assert_null (strstr (buf, "FAIL"));
    free (buf);
}

static void test_json (void **state)
{
    fm_check_result_t r[6];
    fm_check_node_t nodes[6];
    fm_check_summary_t s;
    json_t *o, *p;

    results (r);
    assert_int_equal (fm_check_verdict (r, 6, 6, NULL, nodes, &s), 0);
    assert_non_null (
        o = fm_check_report_body (42, FM_CHECK_QUICK, names, 6, NULL, r, 6));
    assert_int_equal (json_integer_value (json_object_get (o, "job_id")), 42);
    assert_string_equal (json_string_value (json_object_get (o, "mode")), "quick");
    assert_int_equal (json_object_size (o), 3);
    p = json_array_get (json_object_get (o, "pairs"), 3);
    assert_string_equal (json_string_value (json_object_get (p, "a")), "fmn2");
    assert_string_equal (json_string_value (json_object_get (p, "b")), "fmn3");
    assert_true (json_is_false (json_object_get (p, "ok")));
    assert_non_null (json_object_get (p, "error"));
    /* a good pair has no error field */
    assert_null (
        json_object_get (json_array_get (json_object_get (o, "pairs"), 0), "error"));
    json_decref (o);
    assert_non_null (
        o = fm_check_report_json (42, FM_CHECK_FULL, names, 6, NULL, r, 6, nodes));
    assert_true (json_is_false (json_object_get (o, "passed")));
    p = json_array_get (json_object_get (o, "nodes"), 5);
    assert_string_equal (json_string_value (json_object_get (p, "name")), "fmn6");
    assert_true (json_is_true (json_object_get (p, "slow")));
    assert_null (json_object_get (o, "reference"));
    json_decref (o);
    /* --reference: the body names the reference nodes, in node order */
    const bool ref[6] = {false, true, false, true, false, false};
    assert_non_null (o = fm_check_report_body (42, FM_CHECK_FULL, names, 6, ref, r, 6));
    assert_int_equal (json_object_size (o), 4);
    p = json_object_get (o, "reference");
    assert_int_equal (json_array_size (p), 2);
    assert_string_equal (json_string_value (json_array_get (p, 0)), "fmn2");
    assert_string_equal (json_string_value (json_array_get (p, 1)), "fmn4");
    json_decref (o);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_roundtrip),
        cmocka_unit_test (test_decode_rejects),
        cmocka_unit_test (test_table),
        cmocka_unit_test (test_json),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
