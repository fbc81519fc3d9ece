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
#include <curl/curl.h>

#include "client.h"

/* The request path against a live fabricd is covered by t0100; here the
 * input validation and the failures that happen before any answer.
 */

static void test_url_validation (void **state)
{
    static const char *good[] = {
        "http://127.0.0.1:8470",
        "http://10.77.0.1:8470/",
        "https://fabricd.example:443",
        "http://[::1]:8470",
    };
    static const char *bad[] = {
        "",
        "127.0.0.1:8470",
        "ftp://x",
        "http://",
        "http:///x",
        "http://h/v1",
        "http://user@h",
        "http://h?x=1",
        "http://h#f",
        "http://h x",
        "http://h\n",
    };
    fm_error_t err;

    for (size_t i = 0; i < sizeof (good) / sizeof (good[0]); i++) {
        fm_client_t *c = fm_client_create (good[i], NULL, 1000, &err);
        assert_non_null (c);
        fm_client_destroy (c);
    }
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        errno = 0;
        assert_null (fm_client_create (bad[i], NULL, 1000, &err));
        assert_int_equal (errno, EINVAL);
        assert_non_null (strstr (err.text, "invalid daemon URL"));
    }
    assert_null (fm_client_create (NULL, NULL, 1000, &err));
    assert_null (fm_client_create ("http://h", NULL, 0, &err));
    fm_client_destroy (NULL);
}

static void test_request_failures (void **state)
{
    fm_client_t *c =
        fm_client_create ("http://127.0.0.1:9", "/nonexistent/munge.sock", 500, NULL);
    fm_error_t err;
    json_t *reply = (json_t *)1;

    assert_non_null (c);
    /* a path must be absolute and short */
    errno = 0;
    assert_int_equal (fm_client_request (c, "GET", "v1/status", NULL, &reply, &err),
                      -1);
    assert_int_equal (errno, EINVAL);
    assert_null (reply);
    /* no munged behind the socket: no credential, no request */
    assert_int_equal (fm_client_request (c, "GET", "/v1/status", NULL, &reply, &err),
                      -1);
    assert_non_null (strstr (err.text, "munge"));
    assert_null (reply);
    fm_client_destroy (c);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_url_validation),
        cmocka_unit_test (test_request_failures),
    };
    int rc;

    curl_global_init (CURL_GLOBAL_DEFAULT);
    rc = cmocka_run_group_tests (tests, NULL, NULL);
    curl_global_cleanup ();
    return rc;
}
