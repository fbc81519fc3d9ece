/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fmtime.h"
#include "check_net.h"

/* The pair test over real TCP on 127.0.0.1, server in a thread. */
typedef struct {
    int lfd;
    uint32_t expect, round;
    fm_check_params_t p;
    int rc;
    fm_error_t err;
} server_t;

static void *serve (void *arg)
{
    server_t *s = arg;

    s->rc = fm_check_net_serve (s->lfd, s->expect, s->round, &s->p, &s->err);
    return NULL;
}

static const fm_check_params_t params = {
    .pings = 50,
    .ping_size = 64,
    .ping_budget_ns = 200000000,
    .bw_bytes = 4 << 20,
    .bw_window_ns = 500000000,
    .timeout_ns = 1000000000,
};

static void start (server_t *s, struct sockaddr_in *sin, pthread_t *t)
{
    fm_error_t err;
    uint16_t port;

    s->lfd = fm_check_net_listen ("127.0.0.1", &port, &err);
    assert_true (s->lfd >= 0);
    memset (sin, 0, sizeof (*sin));
    sin->sin_family = AF_INET;
    sin->sin_port = htons (port);
    inet_pton (AF_INET, "127.0.0.1", &sin->sin_addr);
    assert_int_equal (pthread_create (t, NULL, serve, s), 0);
}

static void test_pair (void **state)
{
    server_t s = {.expect = 3, .round = 1, .p = params};
    fm_check_result_t r = {.a = 3, .b = 5};
    struct sockaddr_in sin;
    pthread_t t;

    start (&s, &sin, &t);
    fm_check_net_client (&sin, 3, 1, &params, &r);
    pthread_join (t, NULL);
    close (s.lfd);
    assert_true (r.ok);
    assert_string_equal (r.error, "");
    assert_int_equal (s.rc, 0);
    assert_true (r.lat_p50_ns > 0);
    assert_true (r.lat_p99_ns >= r.lat_p50_ns);
    /* all 4 MiB fit in the window on loopback: at least 4 MiB per 500 ms */
    assert_true (r.bw_bps >= (int64_t)(4 << 20) * 8 * 2);
    assert_int_equal (r.a, 3);
    assert_int_equal (r.b, 5);
}

static void test_window_bounds_bytes (void **state)
{
    /* more bytes than the window lets through are never counted: the
     * client gets its answer after the window, well before the deadline
     */
    fm_check_params_t p = params;
    server_t s = {.expect = 0, .round = 0};
    fm_check_result_t r = {0};
    struct sockaddr_in sin;
    pthread_t t;
    int64_t t0;

    p.bw_bytes = FM_CHECK_BW_BYTES_MAX;
    p.bw_window_ns = 50000000;
    s.p = p;
    start (&s, &sin, &t);
    t0 = fm_time_mono_ns ();
    fm_check_net_client (&sin, 0, 0, &p, &r);
    pthread_join (t, NULL);
    close (s.lfd);
    assert_true (r.ok);
    assert_true (fm_time_mono_ns () - t0 < p.ping_budget_ns + p.timeout_ns);
    assert_true (r.bw_bps > 0);
}

static void test_wrong_peer (void **state)
{
    /* the server waits for rank 2 in round 0; rank 1 is refused */
    fm_check_params_t p = params;
    server_t s = {.expect = 2, .round = 0};
    fm_check_result_t r = {0};
    struct sockaddr_in sin;
    pthread_t t;

    p.timeout_ns = 100000000;
    p.ping_budget_ns = 10000000;
    p.bw_window_ns = 10000000;
    s.p = p;
    start (&s, &sin, &t);
    fm_check_net_client (&sin, 1, 0, &p, &r);
    pthread_join (t, NULL);
    assert_false (r.ok);
    assert_non_null (strstr (r.error, "hello"));
    assert_int_equal (s.rc, -1);
    /* wrong round */
    s.expect = 1;
    s.round = 4;
    assert_int_equal (pthread_create (&t, NULL, serve, &s), 0);
    fm_check_net_client (&sin, 1, 0, &p, &r);
    pthread_join (t, NULL);
    assert_false (r.ok);
    assert_int_equal (s.rc, -1);
    close (s.lfd);
}

static void test_no_server (void **state)
{
    fm_check_result_t r = {.ok = true};
    struct sockaddr_in sin;
    fm_error_t err;
    uint16_t port;
    int fd;

    /* a port that was just free: connection refused */
    fd = fm_check_net_listen ("127.0.0.1", &port, &err);
    assert_true (fd >= 0);
    close (fd);
    memset (&sin, 0, sizeof (sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons (port);
    inet_pton (AF_INET, "127.0.0.1", &sin.sin_addr);
    fm_check_net_client (&sin, 0, 0, &params, &r);
    assert_false (r.ok);
    assert_non_null (strstr (r.error, "connect"));
    errno = 0;
    assert_int_equal (fm_check_net_listen ("not-an-address", &port, &err), -1);
    assert_int_equal (errno, EINVAL);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_pair),
        cmocka_unit_test (test_window_bounds_bytes),
        cmocka_unit_test (test_wrong_peer),
        cmocka_unit_test (test_no_server),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
