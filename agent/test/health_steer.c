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
#include <sys/stat.h>

#include <cmocka.h>

#include "fixtures/tree.h"
#include "health.h"
#include "log.h"

/* Steering (health_steer.c): which ports leave NCCL_IB_HCA, the file the
 * plugin reads, and the ib collector driving it from a fake sysfs tree whose
 * port goes bad between two samples.
 */

static char root[64], file[128];

static void quiet (int level, const char *msg, void *arg)
{
}

static int setup (void **state)
{
    snprintf (root, sizeof (root), "/tmp/fm-health-steer-XXXXXX");
    if (!mkdtemp (root)) {
        return -1;
    }
    snprintf (file, sizeof (file), "%s/nccl_ib_hca", root);
    fm_log_set_handler (quiet, NULL);
    return 0;
}

static int teardown (void **state)
{
    tree_remove (root);
    fm_log_set_handler (NULL, NULL);
    return 0;
}

/* The file's content, "" when there is none (static buffer). */
static const char *content (void)
{
    static char buf[512];

    if (fm_health_read_file (file, buf, sizeof (buf)) < 0) {
        assert_int_equal (errno, ENOENT);
        return NULL;
    }
    return buf;
}

static void port (fm_health_set_t *s,
                  const char *dev,
                  int p,
                  const char *state,
                  const char *phys,
                  int64_t downed,
                  int64_t symbol)
{
    assert_int_equal (
        fm_health_add_text (s, FM_HREC_IB_PORT, dev, p, "state", state, FM_HCLASS_INFO),
        0);
    assert_int_equal (
        fm_health_add_text (
            s, FM_HREC_IB_PORT, dev, p, "phys_state", phys, FM_HCLASS_INFO),
        0);
    assert_int_equal (
        fm_health_add_counter (s, FM_HREC_IB_PORT, dev, p, "link_downed", downed, 0, 0),
        0);
    assert_int_equal (fm_health_add_counter (
                          s, FM_HREC_IB_PORT, dev, p, "symbol_error", symbol, 0, 0),
                      0);
}

static void test_rules (void **state)
{
    fm_health_set_t s = {0};
    fm_health_steer_t *st;
    struct stat sb;

    /* a stale file of an earlier agent of this job goes */
    assert_int_equal (tree_put (root, "nccl_ib_hca", "mlx5_9:1"), 0);
    assert_non_null (st = fm_health_steer_create (file));
    assert_null (content ());
    /* all well: nothing to write */
    port (&s, "mlx5_0", 1, "ACTIVE", "LinkUp", 0, 0);
    port (&s, "mlx5_1", 1, "ACTIVE", "LinkUp", 0, 0);
    port (&s, "mlx5_2", 1, "ACTIVE", "LinkUp", 0, 9); /* under the threshold */
    assert_int_equal (fm_health_steer_update (st, &s), 0);
    assert_string_equal (fm_health_steer_exclude (st), "");
    assert_null (content ());
    /* mlx5_1 goes down */
    fm_health_set_clear (&s);
    port (&s, "mlx5_0", 1, "ACTIVE", "LinkUp", 0, 0);
    port (&s, "mlx5_1", 1, "DOWN", "Polling", 0, 0);
    port (&s, "mlx5_2", 1, "ACTIVE", "LinkUp", 0, 0);
    assert_int_equal (fm_health_steer_update (st, &s), 1);
    assert_string_equal (fm_health_steer_exclude (st), "mlx5_1:1");
    assert_string_equal (content (), "mlx5_1:1");
    assert_int_equal (stat (file, &sb), 0);
    assert_int_equal (sb.st_mode & 0777, 0644);
    /* back up: still left out for the rest of the job; a flap (link_downed)
     * and a burst of symbol errors add the others
     */
    fm_health_set_clear (&s);
    port (&s, "mlx5_0", 1, "ACTIVE", "LinkUp", 1, 0);
    port (&s, "mlx5_1", 1, "ACTIVE", "LinkUp", 0, 0);
    port (&s, "mlx5_2", 1, "ACTIVE", "LinkUp", 0, 0);
    assert_int_equal (fm_health_steer_update (st, &s), 1);
    assert_string_equal (content (), "mlx5_0:1,mlx5_1:1");
    assert_int_equal (fm_health_steer_update (st, &s), 0);
    /* every port degraded: excluding them all would send NCCL to TCP */
    fm_health_set_clear (&s);
    port (&s, "mlx5_2", 1, "ACTIVE", "LinkUp", 0, 10);
    assert_int_equal (fm_health_steer_update (st, &s), 1);
    assert_string_equal (fm_health_steer_exclude (st), "");
    assert_string_equal (content (), "");
    /* other kinds and port 0 are not HCA ports */
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_add_text (
                          &s, FM_HREC_NIC, "eth0", 0, "state", "DOWN", FM_HCLASS_INFO),
                      0);
    assert_int_equal (fm_health_steer_update (st, &s), 0);
    assert_int_equal (fm_health_steer_update (st, NULL), 0);
    fm_health_steer_destroy (st);
    fm_health_steer_destroy (NULL);
    fm_health_set_free (&s);
}

/* A file that cannot be written is retried at the next update. */
static void test_write_failure (void **state)
{
    fm_health_set_t s = {0};
    fm_health_steer_t *st;

    snprintf (file, sizeof (file), "%s/later/nccl_ib_hca", root);
    assert_non_null (st = fm_health_steer_create (file));
    port (&s, "mlx5_0", 1, "ACTIVE", "LinkUp", 0, 0);
    port (&s, "mlx5_1", 1, "INIT", "LinkUp", 0, 0);
    errno = 0;
    assert_int_equal (fm_health_steer_update (st, &s), -1);
    assert_int_equal (errno, ENOENT);
    assert_int_equal (tree_mkdir (root, "later"), 0);
    /* no change, but the pending write happens */
    assert_int_equal (fm_health_steer_update (st, &s), 0);
    assert_string_equal (content (), "mlx5_1:1");
    fm_health_steer_destroy (st);
    fm_health_set_free (&s);
}

static void put_port (const char *hca, const char *state, const char *symbol)
{
    static const char *const counters[] = {"symbol_error",
                                           "link_error_recovery",
                                           "link_downed",
                                           "port_rcv_errors",
                                           "port_xmit_discards",
                                           "port_xmit_wait",
                                           NULL};
    char rel[256];

    snprintf (rel, sizeof (rel), "sys/class/infiniband/%s/ports/1/state", hca);
    assert_int_equal (tree_put (root, rel, state), 0);
    snprintf (rel, sizeof (rel), "sys/class/infiniband/%s/ports/1/phys_state", hca);
    assert_int_equal (tree_put (root, rel, "5: LinkUp"), 0);
    snprintf (rel, sizeof (rel), "sys/class/infiniband/%s/ports/1/rate", hca);
    assert_int_equal (tree_put (root, rel, "200 Gb/sec (4X HDR)"), 0);
    snprintf (rel, sizeof (rel), "sys/class/infiniband/%s/ports/1/link_layer", hca);
    assert_int_equal (tree_put (root, rel, "InfiniBand"), 0);
    for (int i = 0; counters[i]; i++) {
        snprintf (rel,
                  sizeof (rel),
                  "sys/class/infiniband/%s/ports/1/counters/%s",
                  hca,
                  counters[i]);
        assert_int_equal (tree_put (root, rel, i == 0 ? symbol : "0"), 0);
    }
}

/* The ib collector on a fake tree: mlx5_1's port loses its link between two
 * windows, then counts symbol errors on mlx5_0 stay below the threshold.
 */
static void test_collector (void **state)
{
    fm_health_conf_t conf = {.root = root};
    fm_health_set_t s = {0};
    fm_health_steer_t *st;
    fm_error_t err;
    void *ib;

    put_port ("mlx5_0", "4: ACTIVE", "100");
    put_port ("mlx5_1", "4: ACTIVE", "0");
    assert_non_null (ib = fm_health_ib.init (&conf, &err));
    assert_non_null (st = fm_health_steer_create (file));
    assert_int_equal (fm_health_ib.sample (ib, &s, &err), 0);
    /* the first sample is the baseline: 100 old symbol errors are no delta */
    assert_int_equal (fm_health_steer_update (st, &s), 0);
    put_port ("mlx5_0", "4: ACTIVE", "105");
    put_port ("mlx5_1", "1: DOWN", "0");
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_ib.sample (ib, &s, &err), 0);
    assert_int_equal (fm_health_steer_update (st, &s), 1);
    assert_string_equal (content (), "mlx5_1:1");
    fm_health_steer_destroy (st);
    fm_health_ib.fini (ib);
    fm_health_set_free (&s);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_rules, setup, teardown),
        cmocka_unit_test_setup_teardown (test_write_failure, setup, teardown),
        cmocka_unit_test_setup_teardown (test_collector, setup, teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
