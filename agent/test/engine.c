/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sodium.h>

#include "engine.h"
#include "fmtime.h"

/* Two (or three) real engines on loopback in one process, driven by one
 * poll loop, as the agent's event loop drives one.
 */

static uint8_t key[FM_PROBE_KEY_SIZE];

static struct sockaddr_in loopback (int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons (port)};

    sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    return sin;
}

/* an engine on the loopback port (0: any); the test fails without one */
static fm_engine_t *create_on (const fm_engine_cfg_t *cfg, int port)
{
    struct sockaddr_in sin = loopback (port);
    fm_error_t err;
    fm_engine_t *e =
        fm_engine_create (cfg, (struct sockaddr *)&sin, sizeof (sin), &err);

    if (!e) {
        fail_msg ("fm_engine_create: %s", err.text);
    }
    return e;
}

static fm_engine_t *make_engine_grace (double rate, int64_t offset, int64_t grace)
{
    fm_engine_cfg_t cfg = {
        .rate = rate,
        .timeout_ns = 200 * 1000 * 1000,
        .max_samples = 10000,
        .clock = {.offset_ns = offset},
        .startup_grace_ns = grace,
    };

    return create_on (&cfg, 0);
}

static fm_engine_t *make_engine (double rate, int64_t offset)
{
    return make_engine_grace (rate, offset, 0);
}

static void set_node (fm_node_t *n, const char *name, int port)
{
    struct sockaddr_in sin = loopback (port);

    memset (n, 0, sizeof (*n));
    snprintf (n->name, sizeof (n->name), "%s", name);
    memcpy (&n->addr, &sin, sizeof (sin));
    n->addrlen = sizeof (sin);
}

/* Runs the engines for duration_ns of the time this process could run: a
 * wake-up later than the engines' next deadline (a loaded machine left us
 * waiting for a CPU) moves the end out by as much, up to 4x the duration,
 * since the probes due meanwhile were not sent; the tests count probes, not
 * seconds.
 */
static void drive (fm_engine_t **e, int n, int64_t duration_ns)
{
    const int64_t stall_slack = 2 * 1000 * 1000;
    int64_t start = fm_time_mono_ns ();
    int64_t end = start + duration_ns;

    for (;;) {
        struct pollfd pfd[4];
        int64_t now = fm_time_mono_ns ();
        int64_t deadline = end;
        int64_t woke;
        int timeout;

        if (now >= end) {
            break;
        }
        for (int i = 0; i < n; i++) {
            int64_t d = fm_engine_deadline (e[i]);
            if (d < deadline) {
                deadline = d;
            }
            pfd[i] = (struct pollfd){.fd = fm_engine_fd (e[i]), .events = POLLIN};
        }
        timeout = deadline > now ? (int)((deadline - now) / 1000000) + 1 : 0;
        assert_true (poll (pfd, n, timeout) >= 0);
        woke = fm_time_mono_ns ();
        if (deadline < now) {
            deadline = now;
        }
        if (woke > deadline + stall_slack) {
            end += woke - deadline;
            if (end > start + 4 * duration_ns) {
                end = start + 4 * duration_ns;
            }
        }
        for (int i = 0; i < n; i++) {
            /* POLLERR: a transmit stamp waits on the error queue */
            if (pfd[i].revents & (POLLIN | POLLERR)) {
                fm_engine_input (e[i]);
            }
            fm_engine_run (e[i], fm_time_mono_ns ());
        }
    }
}

static int setup (void **state)
{
    if (sodium_init () < 0) {
        return -1;
    }
    randombytes_buf (key, sizeof (key));
    return 0;
}

static void test_create_invalid (void **state)
{
    fm_engine_cfg_t cfg = {.rate = 0, .timeout_ns = 1, .max_samples = 1};
    struct sockaddr_in sin = loopback (0);
    fm_error_t err;

    errno = 0;
    assert_null (fm_engine_create (&cfg, (struct sockaddr *)&sin, sizeof (sin), &err));
    assert_int_equal (errno, EINVAL);
    cfg.rate = FM_ENGINE_MAX_RATE * 2;
    assert_null (fm_engine_create (&cfg, (struct sockaddr *)&sin, sizeof (sin), &err));
    /* a boost is above the rate, at most the maximum, and lasts */
    cfg.rate = 10;
    cfg.boost_rate = 10;
    cfg.boost_ns = 1;
    assert_null (fm_engine_create (&cfg, (struct sockaddr *)&sin, sizeof (sin), &err));
    cfg.boost_rate = FM_ENGINE_MAX_RATE * 2;
    assert_null (fm_engine_create (&cfg, (struct sockaddr *)&sin, sizeof (sin), &err));
    cfg.boost_rate = 20;
    cfg.boost_ns = 0;
    assert_null (fm_engine_create (&cfg, (struct sockaddr *)&sin, sizeof (sin), &err));
    cfg.boost_rate = 0;
    cfg.early_ns = -1;
    assert_null (fm_engine_create (&cfg, (struct sockaddr *)&sin, sizeof (sin), &err));
    fm_engine_destroy (NULL);
}

static void test_start_invalid (void **state)
{
    fm_engine_t *a = make_engine (10, 0);
    fm_node_t nodes[2];
    uint16_t self = 0, far = 5;
    fm_error_t err;

    set_node (&nodes[0], "a", fm_engine_port (a));
    set_node (&nodes[1], "b", 9);
    assert_int_equal (fm_engine_start (a, 1, key, nodes, 2, 2, NULL, 0, &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_engine_start (a, 1, key, nodes, 2, 0, &self, 1, &err), -1);
    assert_int_equal (fm_engine_start (a, 1, key, nodes, 2, 0, &far, 1, &err), -1);
    assert_int_equal (fm_engine_ntargets (a), 0);
    fm_engine_destroy (a);
}

static void test_loopback_pair (void **state)
{
    /* B's clock runs 3 ms ahead of A's */
    const int64_t off = 3 * 1000 * 1000;
    fm_engine_t *e[2] = {make_engine (100, 0), make_engine (100, off)};
    fm_node_t nodes[2];
    uint16_t ta = 1, tb = 0;
    fm_linkstats_t sa, sb;
    const fm_engine_counters_t *ca, *cb;
    fm_error_t err;

    set_node (&nodes[0], "a", fm_engine_port (e[0]));
    set_node (&nodes[1], "b", fm_engine_port (e[1]));
    assert_int_equal (fm_engine_start (e[0], 77, key, nodes, 2, 0, &ta, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 77, key, nodes, 2, 1, &tb, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 77, key, nodes, 2, 1, &tb, 1, &err), -1);
    assert_int_equal (fm_engine_target (e[0], 0), 1);
    assert_string_equal (fm_engine_node (e[0], 1)->name, "b");
    assert_null (fm_engine_node (e[0], 2));

    drive (e, 2, 1500LL * 1000 * 1000);
    fm_engine_close_window (e[0], &sa);
    fm_engine_close_window (e[1], &sb);
    ca = fm_engine_counters (e[0]);
    cb = fm_engine_counters (e[1]);
    print_message ("# a->b: %ju samples, rtt p50 %jd ns, offset %jd +- %jd ns\n",
                   (uintmax_t)sa.samples,
                   (intmax_t)sa.rtt.p50,
                   (intmax_t)sa.offset_ns,
                   (intmax_t)sa.offset_err_ns);

    /* about 150 requests each way at 100/s; replies came back for all */
    assert_true (ca->sent_requests >= 100 && ca->sent_requests <= 200);
    assert_true (cb->sent_replies >= ca->sent_requests - 2);
    assert_true (sa.probes >= 100);
    assert_int_equal (sa.lost, 0);
    assert_int_equal (sb.lost, 0);
    assert_int_equal (sa.lost_fwd, 0);
    /* every completed exchange used kernel stamps on both sides */
    assert_true (sa.samples >= sa.probes - 3);
    assert_int_equal (ca->no_rx_stamp + cb->no_rx_stamp, 0);
    assert_int_equal (ca->bad_sample + cb->bad_sample, 0);
    /* lo offers software stamps only: every stamp is one */
    {
        const char *ifname = NULL;
        assert_false (fm_engine_hw_stamps (e[0], &ifname));
        assert_non_null (ifname);
        assert_string_equal (ifname, "lo");
    }
    assert_int_equal (
        ca->hw_stamps + cb->hw_stamps + ca->mixed_stamps + cb->mixed_stamps, 0);
    assert_true (ca->sw_stamps >= ca->sent_requests - 2);
    for (int i = 1; i < FM_WIRE_NREASONS; i++) {
        assert_int_equal (ca->dropped[i] + cb->dropped[i], 0);
    }
    /* loopback RTT is microseconds, far below a millisecond */
    assert_true (sa.rtt.p50 > 0 && sa.rtt.p50 < 1000000);
    assert_true (sa.rtt.p50 <= sa.rtt.p90 && sa.rtt.p90 <= sa.rtt.p99
                 && sa.rtt.p99 <= sa.rtt.max);
    /* the simulated offset is recovered within the bound, from both sides */
    assert_true (sa.have_offset && sb.have_offset);
    assert_true (sa.offset_err_ns > 0 && sa.offset_err_ns < 500000);
    assert_true (llabs (sa.offset_ns - off) <= sa.offset_err_ns);
    assert_true (llabs (sb.offset_ns + off) <= sb.offset_err_ns);
    /* corrected one-way delays are small and non-negative within the bound */
    assert_true (sa.owd_fwd.p50 > -sa.offset_err_ns && sa.owd_fwd.p50 < 1000000);
    assert_true (sa.owd_rev.p50 > -sa.offset_err_ns && sa.owd_rev.p50 < 1000000);
    fm_engine_destroy (e[0]);
    fm_engine_destroy (e[1]);
}

static void test_foreign_and_garbage_dropped (void **state)
{
    fm_engine_t *e[3] = {make_engine (50, 0), make_engine (50, 0), make_engine (50, 0)};
    fm_node_t nodes[3];
    uint8_t other_key[FM_PROBE_KEY_SIZE];
    uint16_t t1 = 0;
    fm_linkstats_t s1;
    const fm_engine_counters_t *c0;
    struct sockaddr_in to = loopback (fm_engine_port (e[0]));
    char junk[FM_PROBE_SIZE] = "not a probe";
    fm_error_t err;
    int fd;

    randombytes_buf (other_key, sizeof (other_key));
    set_node (&nodes[0], "a", fm_engine_port (e[0]));
    set_node (&nodes[1], "b", fm_engine_port (e[1]));
    set_node (&nodes[2], "c", fm_engine_port (e[2]));
    /* a answers; b has the wrong key; c belongs to another job */
    assert_int_equal (fm_engine_start (e[0], 5, key, nodes, 3, 0, NULL, 0, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 5, other_key, nodes, 3, 1, &t1, 1, &err),
                      0);
    assert_int_equal (fm_engine_start (e[2], 6, key, nodes, 3, 2, &t1, 1, &err), 0);

    fd = socket (AF_INET, SOCK_DGRAM, 0);
    assert_true (fd >= 0);
    assert_int_equal (sendto (fd, junk, 5, 0, (struct sockaddr *)&to, sizeof (to)), 5);
    assert_int_equal (
        sendto (fd, junk, sizeof (junk), 0, (struct sockaddr *)&to, sizeof (to)),
        sizeof (junk));
    drive (e, 3, 600LL * 1000 * 1000);
    close (fd);

    c0 = fm_engine_counters (e[0]);
    assert_int_equal (c0->dropped[FM_WIRE_BAD_SIZE], 1);
    assert_int_equal (c0->dropped[FM_WIRE_BAD_MAGIC], 1);
    assert_true (c0->dropped[FM_WIRE_BAD_TAG] >= 10);
    assert_true (c0->dropped[FM_WIRE_FOREIGN] >= 10);
    /* nothing unauthenticated or foreign was ever answered */
    assert_int_equal (c0->sent_replies, 0);
    /* b got no replies: every request that timed out is lost */
    fm_engine_close_window (e[1], &s1);
    assert_true (s1.lost >= 10);
    assert_int_equal (s1.probes, s1.lost);
    assert_int_equal (s1.samples, 0);
    assert_false (s1.have_offset);
    for (int i = 0; i < 3; i++) {
        fm_engine_destroy (e[i]);
    }
}

static void test_unregistered_peer (void **state)
{
    /* b forgives a's silence for 2 s: a learns b's address within that */
    fm_engine_t *e[2] = {make_engine (50, 0), make_engine_grace (50, 0, 2000000000LL)};
    fm_node_t na[2], nb[2];
    uint16_t ta = 1, tb = 0;
    const fm_engine_counters_t *ca, *cb;
    fm_linkstats_t sb;
    fm_error_t err;

    /* a has not heard of b yet; b knows a */
    set_node (&na[0], "a", fm_engine_port (e[0]));
    memset (&na[1], 0, sizeof (na[1]));
    snprintf (na[1].name, sizeof (na[1].name), "b");
    na[1].addr.ss_family = AF_UNSPEC;
    set_node (&nb[0], "a", fm_engine_port (e[0]));
    set_node (&nb[1], "b", fm_engine_port (e[1]));
    assert_int_equal (fm_engine_start (e[0], 9, key, na, 2, 0, &ta, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 9, key, nb, 2, 1, &tb, 1, &err), 0);
    drive (e, 2, 300LL * 1000 * 1000);
    ca = fm_engine_counters (e[0]);
    cb = fm_engine_counters (e[1]);
    /* a neither probes b nor answers it, but notices it */
    assert_int_equal (ca->sent_requests, 0);
    assert_int_equal (ca->sent_replies, 0);
    assert_true (ca->unknown_sender >= 5);
    /* b's address arrives: from then on both directions work */
    assert_int_equal (
        fm_engine_set_addr (e[0], 1, (struct sockaddr *)&nb[1].addr, nb[1].addrlen), 0);
    assert_int_equal (
        fm_engine_set_addr (e[0], 0, (struct sockaddr *)&nb[0].addr, nb[0].addrlen),
        -1); /* not our own */
    fm_engine_close_window (e[1], &sb);
    drive (e, 2, 600LL * 1000 * 1000);
    assert_true (ca->sent_requests >= 15);
    assert_true (ca->sent_replies >= 15);
    fm_engine_close_window (e[1], &sb);
    assert_true (sb.samples >= 10);
    assert_true (cb->sent_replies >= 15);
    /* the requests a could not answer yet are not losses, in either direction */
    assert_true (cb->startup_unanswered >= 5);
    assert_int_equal (sb.lost, 0);
    assert_int_equal (sb.lost_fwd, 0);
    assert_int_equal (sb.lost_rev, 0);
    fm_engine_destroy (e[0]);
    fm_engine_destroy (e[1]);
}

/* b stops after 300 ms; with a bye its silence costs a nothing */
static void run_stop (bool bye, fm_linkstats_t *sa, uint64_t *sent_after)
{
    fm_engine_t *e[2] = {make_engine (50, 0), make_engine (50, 0)};
    fm_node_t nodes[2];
    uint16_t ta = 1, tb = 0;
    uint64_t sent;
    fm_error_t err;

    set_node (&nodes[0], "a", fm_engine_port (e[0]));
    set_node (&nodes[1], "b", fm_engine_port (e[1]));
    assert_int_equal (fm_engine_start (e[0], 3, key, nodes, 2, 0, &ta, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 3, key, nodes, 2, 1, &tb, 1, &err), 0);
    drive (e, 2, 300LL * 1000 * 1000);
    if (bye) {
        fm_engine_goodbye (e[1]);
    }
    fm_engine_destroy (e[1]);
    sent = fm_engine_counters (e[0])->sent_requests;
    drive (e, 1, 500LL * 1000 * 1000);
    *sent_after = fm_engine_counters (e[0])->sent_requests - sent;
    fm_engine_close_window (e[0], sa);
    fm_engine_destroy (e[0]);
}

/* Two engines, B on a virtual clock 3 ms ahead and 25 ppm fast, each with
 * estimator `type`: both see the other's clock, kernel stamps mapped too.
 */
static void check_clock (fm_clock_est_type_t type)
{
    fm_engine_cfg_t cfg = {
        .rate = 200,
        .timeout_ns = 200 * 1000 * 1000,
        .max_samples = 10000,
        .estimator = type,
    };
    fm_engine_t *e[2];
    fm_node_t nodes[2];
    uint16_t ta = 1, tb = 0;
    struct sockaddr_in sin = loopback (0);
    fm_clock_estimate_t ea, eb;
    fm_error_t err;
    int64_t host, now_b, now_a, truth;

    assert_non_null (
        e[0] = fm_engine_create (&cfg, (struct sockaddr *)&sin, sizeof (sin), &err));
    cfg.clock = (fm_vclock_params_t){.offset_ns = 3000000, .drift_ppb = 25000};
    assert_non_null (
        e[1] = fm_engine_create (&cfg, (struct sockaddr *)&sin, sizeof (sin), &err));
    set_node (&nodes[0], "a", fm_engine_port (e[0]));
    set_node (&nodes[1], "b", fm_engine_port (e[1]));
    assert_int_equal (fm_engine_start (e[0], 77, key, nodes, 2, 0, &ta, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 77, key, nodes, 2, 1, &tb, 1, &err), 0);
    assert_int_equal (fm_engine_clock_estimate (e[0], 0, 0, &ea), -1);
    assert_int_equal (errno, EAGAIN);
    assert_false (ea.valid);
    assert_int_equal (fm_engine_clock_estimate (e[0], 1, 0, &ea), -1);
    assert_int_equal (errno, EINVAL);

    drive (e, 2, 2500LL * 1000 * 1000);
    now_b = fm_engine_clock_now (e[1], &host);
    now_a = fm_engine_clock_now (e[0], NULL);
    truth = now_b - host; /* A runs on the host clock */
    assert_true (fm_engine_clock_rate_ppb (e[1]) == 25000);
    assert_true (fm_engine_clock_rate_ppb (e[0]) == 0);
    if (fm_engine_clock_estimate (e[0], 0, now_a, &ea) < 0) {
        fail_msg ("a: no estimate: %s (%ju samples, %ju mixed)",
                  ea.why,
                  (uintmax_t)fm_engine_counters (e[0])->clock_samples,
                  (uintmax_t)fm_engine_counters (e[0])->mixed_stamps);
    }
    if (fm_engine_clock_estimate (e[1], 0, now_b, &eb) < 0) {
        fail_msg ("b: no estimate: %s", eb.why);
    }
    print_message ("# %s: a sees b %+jd ns (true %+jd) +- %jd, %.0f ppb; b sees a %+jd "
                   "ns, %.0f ppb; %ju and %ju samples kept\n",
                   type == FM_CLOCK_EST_HUYGENS ? "huygens" : "naive",
                   (intmax_t)ea.offset_ns,
                   (intmax_t)truth,
                   (intmax_t)ea.bound_ns,
                   ea.drift_ppb,
                   (intmax_t)eb.offset_ns,
                   eb.drift_ppb,
                   (uintmax_t)fm_engine_counters (e[0])->clock_samples,
                   (uintmax_t)fm_engine_counters (e[1])->clock_samples);
    /* loopback with software stamps on a shared machine: microseconds, and
     * the 25 ppm within 2 (2 s of samples); a sign, a stamp left off the
     * virtual clock or a lost direction is off by milliseconds
     */
    assert_true (llabs (ea.offset_ns - truth) < 10000);
    assert_true (llabs (eb.offset_ns + truth) < 10000);
    assert_true (fabs (ea.drift_ppb - 25000) < 2000);
    assert_true (fabs (eb.drift_ppb + 25000) < 2000);
    assert_true (fm_engine_counters (e[0])->clock_samples >= 100);
    /* loopback queues the two probes of a pair alike: huygens answers itself */
    assert_int_equal (fm_engine_counters (e[0])->clock_fallbacks, 0);
    fm_engine_destroy (e[0]);
    fm_engine_destroy (e[1]);
}

static void test_clock_huygens (void **state)
{
    check_clock (FM_CLOCK_EST_HUYGENS);
}

static void test_clock_naive (void **state)
{
    check_clock (FM_CLOCK_EST_NAIVE);
}

/* Three engines probing each other on virtual clocks, each asking for its
 * reference estimate at the agent's refresh rate, so that the estimates its
 * replies carry go round: nodes 1 and 2 combine their edges with each
 * other's estimates of node 0; node 0 is the reference. The naive estimator
 * stays pairwise.
 */
static void check_reference (fm_clock_est_type_t type)
{
    fm_engine_cfg_t cfg = {
        .rate = 200,
        .timeout_ns = 200 * 1000 * 1000,
        .max_samples = 10000,
        .estimator = type,
    };
    static const fm_vclock_params_t clocks[3] = {
        {0},
        {.offset_ns = 3000000, .drift_ppb = 25000},
        {.offset_ns = -5000000, .drift_ppb = -30000},
    };
    fm_engine_t *e[3];
    fm_node_t nodes[3];
    uint16_t targets[3][2] = {{1, 2}, {0, 2}, {0, 1}};
    fm_clock_estimate_t est;
    fm_error_t err;

    for (int i = 0; i < 3; i++) {
        cfg.clock = clocks[i];
        e[i] = create_on (&cfg, 0);
    }
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf (name, sizeof (name), "n%d", i);
        set_node (&nodes[i], name, fm_engine_port (e[i]));
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal (
            fm_engine_start (e[i], 78, key, nodes, 3, (uint16_t)i, targets[i], 2, &err),
            0);
    }
    assert_int_equal (fm_engine_reference_estimate (e[1], 0, &est), -1);
    assert_int_equal (errno, EAGAIN);
    assert_false (est.valid);
    for (int step = 0; step < 12; step++) {
        drive (e, 3, 250LL * 1000 * 1000);
        for (int i = 0; i < 3; i++) {
            fm_engine_reference_estimate (e[i], fm_engine_clock_now (e[i], NULL), &est);
        }
    }
    assert_int_equal (
        fm_engine_reference_estimate (e[0], fm_engine_clock_now (e[0], NULL), &est), 0);
    assert_true (est.valid && est.offset_ns == 0 && est.bound_ns == 0);
    for (int i = 1; i < 3; i++) {
        int64_t host, now = fm_engine_clock_now (e[i], &host);
        int64_t truth = fm_engine_clock_now (e[0], NULL) - now;
        if (fm_engine_reference_estimate (e[i], now, &est) < 0) {
            fail_msg ("node %d: no reference estimate: %s", i, est.why);
        }
        print_message ("# %s: node %d sees the reference %+jd ns (true %+jd) +- %jd, "
                       "%.0f ppb; %ju combined\n",
                       type == FM_CLOCK_EST_HUYGENS ? "huygens" : "naive",
                       i,
                       (intmax_t)est.offset_ns,
                       (intmax_t)truth,
                       (intmax_t)est.bound_ns,
                       est.drift_ppb,
                       (uintmax_t)fm_engine_counters (e[i])->clock_combined);
        /* loopback on a shared machine: microseconds; a sign or a peer's
         * estimate taken the wrong way round is off by milliseconds
         */
        assert_true (llabs (est.offset_ns - truth) < 10000);
        assert_true (fabs (est.drift_ppb + clocks[i].drift_ppb) < 2000);
        if (type == FM_CLOCK_EST_HUYGENS) {
            assert_true (fm_engine_counters (e[i])->clock_combined > 0);
        } else {
            assert_int_equal (fm_engine_counters (e[i])->clock_combined, 0);
        }
    }
    for (int i = 0; i < 3; i++) {
        fm_engine_destroy (e[i]);
    }
}

static void test_reference_huygens (void **state)
{
    check_reference (FM_CLOCK_EST_HUYGENS);
}

static void test_reference_naive (void **state)
{
    check_reference (FM_CLOCK_EST_NAIVE);
}

/* Once a clock estimate exists, a window's one-way delays are taken against
 * it, sample by sample. With B 25 ppm fast, the window's single min-RTT
 * offset (the fallback) is off by up to 25 us at the ends of a 2 s window,
 * so one direction's fastest delays come out negative; against the model
 * both stay at loopback's few microseconds.
 */
static void test_owd_against_model (void **state)
{
    fm_engine_cfg_t cfg = {
        .rate = 200,
        .timeout_ns = 200 * 1000 * 1000,
        .max_samples = 10000,
        .estimator = FM_CLOCK_EST_HUYGENS,
    };
    fm_engine_t *e[2];
    fm_node_t nodes[2];
    uint16_t ta = 1, tb = 0;
    struct sockaddr_in sin = loopback (0);
    fm_linkstats_t sa, sb;
    fm_error_t err;
    int64_t host, truth;

    assert_non_null (
        e[0] = fm_engine_create (&cfg, (struct sockaddr *)&sin, sizeof (sin), &err));
    cfg.clock = (fm_vclock_params_t){.offset_ns = -7000000, .drift_ppb = 25000};
    assert_non_null (
        e[1] = fm_engine_create (&cfg, (struct sockaddr *)&sin, sizeof (sin), &err));
    set_node (&nodes[0], "a", fm_engine_port (e[0]));
    set_node (&nodes[1], "b", fm_engine_port (e[1]));
    assert_int_equal (fm_engine_start (e[0], 78, key, nodes, 2, 0, &ta, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 78, key, nodes, 2, 1, &tb, 1, &err), 0);
    /* the first windows start before there is any estimate */
    drive (e, 2, 2500LL * 1000 * 1000);
    fm_engine_close_window (e[0], &sa);
    fm_engine_close_window (e[1], &sb);
    drive (e, 2, 2000LL * 1000 * 1000);
    fm_engine_close_window (e[0], &sa);
    fm_engine_close_window (e[1], &sb);
    truth = fm_engine_clock_now (e[1], &host) - host;
    print_message ("# owd a->b min %jd p50 %jd, b->a min %jd p50 %jd ns; offset %jd"
                   " (true %jd)\n",
                   (intmax_t)sa.owd_fwd.min,
                   (intmax_t)sa.owd_fwd.p50,
                   (intmax_t)sa.owd_rev.min,
                   (intmax_t)sa.owd_rev.p50,
                   (intmax_t)sa.offset_ns,
                   (intmax_t)truth);
    assert_true (sa.samples > 100 && sb.samples > 100);
    assert_true (sa.have_offset && sb.have_offset);
    assert_true (llabs (sa.offset_ns - truth) < 10000);
    assert_true (llabs (sb.offset_ns + truth) < 10000);
    assert_true (sa.owd_fwd.min > -5000 && sa.owd_rev.min > -5000);
    assert_true (sb.owd_fwd.min > -5000 && sb.owd_rev.min > -5000);
    assert_true (sa.owd_fwd.p50 < 1000000 && sa.owd_rev.p50 < 1000000);
    fm_engine_destroy (e[0]);
    fm_engine_destroy (e[1]);
}

/* b's agent starts again on another port (a requeued job, a restart): a
 * keeps b's old address until fabricd tells it the new one.  Until then it
 * answers nothing, since the answer would go to the old address, and counts
 * the sender as unknown so that the agent asks fabricd at once.
 */
static void test_peer_moved (void **state)
{
    fm_engine_t *e[2] = {make_engine (50, 0), make_engine (50, 0)};
    fm_node_t na[2], nb[2];
    uint16_t ta = 1, tb = 0;
    const fm_engine_counters_t *ca;
    fm_linkstats_t sa, sb;
    uint64_t replies, unknown;
    fm_error_t err;

    set_node (&na[0], "a", fm_engine_port (e[0]));
    set_node (&na[1], "b", fm_engine_port (e[1]));
    assert_int_equal (fm_engine_start (e[0], 11, key, na, 2, 0, &ta, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 11, key, na, 2, 1, &tb, 1, &err), 0);
    drive (e, 2, 300LL * 1000 * 1000);
    ca = fm_engine_counters (e[0]);
    assert_true (ca->sent_replies >= 5);
    assert_int_equal (ca->unknown_sender, 0);

    fm_engine_destroy (e[1]);
    /* a answers what the old b sent before it stopped */
    drive (e, 1, 50LL * 1000 * 1000);
    e[1] = make_engine (50, 0);
    set_node (&nb[0], "a", fm_engine_port (e[0]));
    set_node (&nb[1], "b", fm_engine_port (e[1]));
    assert_int_equal (fm_engine_start (e[1], 11, key, nb, 2, 1, &tb, 1, &err), 0);
    replies = ca->sent_replies;
    unknown = ca->unknown_sender;
    drive (e, 2, 400LL * 1000 * 1000);
    assert_true (ca->unknown_sender - unknown >= 5);
    assert_int_equal (ca->sent_replies, replies);
    fm_engine_close_window (e[1], &sb);
    assert_int_equal (sb.samples, 0);

    assert_int_equal (
        fm_engine_set_addr (e[0], 1, (struct sockaddr *)&nb[1].addr, nb[1].addrlen), 0);
    fm_engine_close_window (e[0], &sa);
    unknown = ca->unknown_sender;
    drive (e, 2, 600LL * 1000 * 1000);
    assert_int_equal (ca->unknown_sender, unknown);
    fm_engine_close_window (e[0], &sa);
    fm_engine_close_window (e[1], &sb);
    /* both directions work again: a's probes reach the new b, b's are
     * answered; b's requests still unanswered at the change (up to the
     * 200 ms timeout's worth) are lost, and nothing after them
     */
    assert_true (sa.samples >= 15);
    assert_true (sb.samples >= 10);
    assert_true (sb.lost <= 12);
    drive (e, 2, 400LL * 1000 * 1000);
    fm_engine_close_window (e[0], &sa);
    fm_engine_close_window (e[1], &sb);
    assert_true (sa.samples >= 10 && sb.samples >= 10);
    assert_int_equal (sa.lost + sb.lost, 0);
    fm_engine_destroy (e[0]);
    fm_engine_destroy (e[1]);
}

static void test_bye_is_not_loss (void **state)
{
    fm_linkstats_t s;
    uint64_t after;

    run_stop (false, &s, &after);
    assert_true (s.lost >= 10); /* the control: silence is loss */
    assert_true (after >= 20);
    run_stop (true, &s, &after);
    assert_int_equal (s.lost, 0);
    assert_true (s.probes >= 10);
    assert_true (after <= 1); /* a stopped probing b */
}

static fm_engine_t *make_engine_boost (double boost_rate, int port)
{
    fm_engine_cfg_t cfg = {
        .rate = 4,
        .timeout_ns = 200 * 1000 * 1000,
        .max_samples = 10000,
        .boost_rate = boost_rate,
        .boost_ns = 500 * 1000 * 1000,
    };

    return create_on (&cfg, port);
}

/* a probes b at 4/s (boosted to boost_rate on a loss, for 500 ms after the
 * last): the requests a sends in 1 s of b's silence, and in 1 s a while
 * after b is back on its port
 */
static void run_boost (double boost_rate, uint64_t *silent, uint64_t *after)
{
    fm_engine_t *e[2] = {make_engine_boost (boost_rate, 0), make_engine_boost (0, 0)};
    int port_b = fm_engine_port (e[1]);
    fm_node_t nodes[2];
    uint16_t ta = 1, tb = 0;
    uint64_t sent;
    fm_error_t err;

    set_node (&nodes[0], "a", fm_engine_port (e[0]));
    set_node (&nodes[1], "b", port_b);
    assert_int_equal (fm_engine_start (e[0], 5, key, nodes, 2, 0, &ta, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 5, key, nodes, 2, 1, &tb, 1, &err), 0);
    drive (e, 2, 600LL * 1000 * 1000);
    assert_int_equal (fm_engine_counters (e[0])->boosts, 0);
    fm_engine_destroy (e[1]);
    sent = fm_engine_counters (e[0])->sent_requests;
    drive (e, 1, 1000LL * 1000 * 1000);
    *silent = fm_engine_counters (e[0])->sent_requests - sent;
    assert_int_equal (fm_engine_counters (e[0])->boosts, boost_rate > 0 ? 1 : 0);
    e[1] = make_engine_boost (0, port_b);
    assert_int_equal (fm_engine_start (e[1], 5, key, nodes, 2, 1, &tb, 1, &err), 0);
    /* the last loss comes at most 200 ms after b is back, the boost ends
     * 500 ms after that
     */
    drive (e, 2, 900LL * 1000 * 1000);
    sent = fm_engine_counters (e[0])->sent_requests;
    drive (e, 2, 1000LL * 1000 * 1000);
    *after = fm_engine_counters (e[0])->sent_requests - sent;
    fm_engine_destroy (e[0]);
    fm_engine_destroy (e[1]);
}

static void test_loss_boosts_rate (void **state)
{
    uint64_t silent, after;

    /* the control: 4/s, lost or not */
    run_boost (0, &silent, &after);
    print_message ("# no boost: %ju sent in 1 s of silence, %ju after\n",
                   (uintmax_t)silent,
                   (uintmax_t)after);
    assert_true (silent >= 2 && silent <= 7);
    assert_true (after >= 2 && after <= 7);
    /* 40/s from the first loss, 200-450 ms into the silence; 4/s once the
     * losses have stopped for 500 ms
     */
    run_boost (40, &silent, &after);
    print_message ("# boost to 40/s: %ju sent in 1 s of silence, %ju after\n",
                   (uintmax_t)silent,
                   (uintmax_t)after);
    assert_true (silent >= 15);
    assert_true (after >= 2 && after <= 7);
}

/* A run sends a probe due within early_ns, up to a quarter interval, and
 * keeps the schedule: at 5/s, runs every 10 ms for 2 s send about 10.
 */
static void test_early_send (void **state)
{
    fm_engine_cfg_t cfg = {
        .rate = 5,
        .timeout_ns = 200 * 1000 * 1000,
        .max_samples = 10000,
        .early_ns = 100 * 1000 * 1000,
    };
    fm_engine_t *e[2];
    fm_node_t nodes[2];
    uint16_t ta = 1, tb = 0;
    uint64_t sent;
    int64_t due, end;
    fm_error_t err;

    e[0] = create_on (&cfg, 0);
    cfg.early_ns = 0;
    e[1] = create_on (&cfg, 0);
    set_node (&nodes[0], "a", fm_engine_port (e[0]));
    set_node (&nodes[1], "b", fm_engine_port (e[1]));
    assert_int_equal (fm_engine_start (e[0], 9, key, nodes, 2, 0, &ta, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 9, key, nodes, 2, 1, &tb, 1, &err), 0);
    for (int i = 0; i < 2; i++) {
        due = fm_engine_deadline (e[i]);
        sent = fm_engine_counters (e[i])->sent_requests;
        /* a quarter of the 200 ms interval, not early_ns's 100 ms */
        fm_engine_run (e[i], due - 60 * 1000 * 1000);
        assert_int_equal (fm_engine_counters (e[i])->sent_requests, sent);
        /* a sends 40 ms early; b, without early_ns, waits */
        fm_engine_run (e[i], due - 40 * 1000 * 1000);
        assert_int_equal (fm_engine_counters (e[i])->sent_requests - sent, i == 0 ? 1 : 0);
        fm_engine_run (e[i], due);
        assert_int_equal (fm_engine_counters (e[i])->sent_requests - sent, 1);
    }
    sent = fm_engine_counters (e[0])->sent_requests;
    end = fm_time_mono_ns () + 2000LL * 1000 * 1000;
    while (fm_time_mono_ns () < end) {
        fm_engine_input (e[0]);
        fm_engine_input (e[1]);
        fm_engine_run (e[0], fm_time_mono_ns ());
        fm_engine_run (e[1], fm_time_mono_ns ());
        usleep (10 * 1000);
    }
    sent = fm_engine_counters (e[0])->sent_requests - sent;
    print_message ("# 5/s, 50 ms early, runs every 10 ms: %ju sent in 2 s\n", (uintmax_t)sent);
    assert_true (sent >= 8 && sent <= 12);
    fm_engine_destroy (e[0]);
    fm_engine_destroy (e[1]);
}

/* The same over IPv6: stamps come back on the IPv6 error queue. */
/* A rotated plan: a target that stays keeps its sequence, a new one is
 * probed from the next run, one that goes is no longer probed.
 */
static void test_set_targets (void **state)
{
    fm_engine_t *e[3] = {
        make_engine (100, 0), make_engine (100, 0), make_engine (100, 0)};
    fm_node_t nodes[3];
    uint16_t first = 1, both[2] = {1, 2}, last = 2, self = 0, none = 3;
    fm_linkstats_t s[2];
    fm_error_t err;
    uint64_t to_b;

    set_node (&nodes[0], "a", fm_engine_port (e[0]));
    set_node (&nodes[1], "b", fm_engine_port (e[1]));
    set_node (&nodes[2], "c", fm_engine_port (e[2]));
    assert_int_equal (fm_engine_start (e[0], 77, key, nodes, 3, 0, &first, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 77, key, nodes, 3, 1, NULL, 0, &err), 0);
    assert_int_equal (fm_engine_start (e[2], 77, key, nodes, 3, 2, NULL, 0, &err), 0);
    drive (e, 3, 500LL * 1000 * 1000);
    fm_engine_close_window (e[0], s);
    assert_true (s[0].probes >= 20);
    assert_int_equal (s[0].lost, 0);

    assert_int_equal (fm_engine_set_targets (e[0], both, 2, &err), 0);
    assert_int_equal (fm_engine_ntargets (e[0]), 2);
    assert_int_equal (fm_engine_target (e[0], 0), 1);
    assert_int_equal (fm_engine_target (e[0], 1), 2);
    drive (e, 3, 500LL * 1000 * 1000);
    fm_engine_close_window (e[0], s);
    assert_true (s[0].probes >= 20 && s[1].probes >= 20);
    assert_int_equal (s[0].lost + s[1].lost, 0);
    /* b's requests went on from where they were: its peer saw no gap */
    assert_int_equal (s[0].lost_fwd, 0);

    to_b = fm_engine_counters (e[1])->sent_replies;
    assert_int_equal (fm_engine_set_targets (e[0], &last, 1, &err), 0);
    assert_int_equal (fm_engine_target (e[0], 0), 2);
    drive (e, 3, 500LL * 1000 * 1000);
    fm_engine_close_window (e[0], s);
    assert_true (s[0].probes >= 20);
    assert_int_equal (s[0].lost, 0);
    /* b is not probed any more (a reply or two in flight at the change) */
    assert_true (fm_engine_counters (e[1])->sent_replies <= to_b + 2);

    assert_int_equal (fm_engine_set_targets (e[0], &self, 1, &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_engine_set_targets (e[0], &none, 1, &err), -1);
    assert_int_equal (fm_engine_target (e[0], 0), 2);
    for (int i = 0; i < 3; i++) {
        fm_engine_destroy (e[i]);
    }
}

static void test_loopback_ipv6 (void **state)
{
    fm_engine_cfg_t cfg = {.rate = 100, .timeout_ns = 200000000, .max_samples = 1000};
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6,
                                .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    fm_engine_t *e[2];
    fm_node_t nodes[2];
    uint16_t ta = 1, tb = 0;
    fm_linkstats_t sa;
    fm_error_t err;

    e[0] = fm_engine_create (&cfg, (struct sockaddr *)&sin6, sizeof (sin6), &err);
    if (!e[0] && errno == EADDRNOTAVAIL) {
        skip (); /* no IPv6 loopback here */
    }
    assert_non_null (e[0]);
    e[1] = fm_engine_create (&cfg, (struct sockaddr *)&sin6, sizeof (sin6), &err);
    assert_non_null (e[1]);
    for (int i = 0; i < 2; i++) {
        struct sockaddr_in6 a = sin6;
        a.sin6_port = htons (fm_engine_port (e[i]));
        memset (&nodes[i], 0, sizeof (nodes[i]));
        snprintf (nodes[i].name, sizeof (nodes[i].name), "v6-%d", i);
        memcpy (&nodes[i].addr, &a, sizeof (a));
        nodes[i].addrlen = sizeof (a);
    }
    /* an IPv4 node in an IPv6 job is refused */
    {
        fm_node_t mixed[2] = {nodes[0], nodes[1]};
        set_node (&mixed[1], "v4", 9);
        assert_int_equal (fm_engine_start (e[0], 4, key, mixed, 2, 0, &ta, 1, &err),
                          -1);
    }
    assert_int_equal (fm_engine_start (e[0], 4, key, nodes, 2, 0, &ta, 1, &err), 0);
    assert_int_equal (fm_engine_start (e[1], 4, key, nodes, 2, 1, &tb, 1, &err), 0);
    drive (e, 2, 600LL * 1000 * 1000);
    fm_engine_close_window (e[0], &sa);
    assert_true (sa.probes >= 40);
    assert_int_equal (sa.lost, 0);
    assert_true (sa.samples >= sa.probes - 3);
    assert_true (sa.have_offset && llabs (sa.offset_ns) <= sa.offset_err_ns);
    assert_int_equal (fm_engine_counters (e[0])->no_tx_stamp, 0);
    fm_engine_destroy (e[0]);
    fm_engine_destroy (e[1]);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_create_invalid),
        cmocka_unit_test (test_start_invalid),
        cmocka_unit_test (test_loopback_pair),
        cmocka_unit_test (test_foreign_and_garbage_dropped),
        cmocka_unit_test (test_unregistered_peer),
        cmocka_unit_test (test_peer_moved),
        cmocka_unit_test (test_bye_is_not_loss),
        cmocka_unit_test (test_loss_boosts_rate),
        cmocka_unit_test (test_early_send),
        cmocka_unit_test (test_loopback_ipv6),
        cmocka_unit_test (test_set_targets),
        cmocka_unit_test (test_clock_huygens),
        cmocka_unit_test (test_clock_naive),
        cmocka_unit_test (test_reference_huygens),
        cmocka_unit_test (test_reference_naive),
        cmocka_unit_test (test_owd_against_model),
    };
    return cmocka_run_group_tests (tests, setup, NULL);
}
