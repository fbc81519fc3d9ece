/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixtures/tree.h"
#include "health.h"
#include "log.h"

/* Log lines, to check that a problem is reported once. */
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
    snprintf (root, sizeof (root), "/tmp/fm-health-net-XXXXXX");
    if (!mkdtemp (root)) {
        return -1;
    }
    nlogs = 0;
    fm_log_set_handler (capture, NULL);
    fm_log_set_level (LOG_DEBUG);
    return 0;
}

static int teardown (void **state)
{
    char sys[128];

    /* test_real_veth mounts a sysfs there; a failed assertion leaves it */
    snprintf (sys, sizeof (sys), "%s/sys", root);
    (void)umount2 (sys, MNT_DETACH);
    tree_remove (root);
    fm_log_set_handler (NULL, NULL);
    return 0;
}

static void put (const char *rel, const char *content)
{
    char path[512];

    snprintf (path, sizeof (path), "sys/class/net/%s", rel);
    assert_int_equal (tree_put (root, path, content), 0);
}

/* A NIC as sysfs shows it; hw adds the device link that marks hardware. */
static void make_nic (const char *dev, bool hw, const char *oper, const char *speed)
{
    static const char *const stats[] = {
        "rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_crc_errors", NULL};
    char rel[128];

    snprintf (rel, sizeof (rel), "%s/operstate", dev);
    put (rel, oper);
    snprintf (rel, sizeof (rel), "%s/carrier", dev);
    put (rel, strcmp (oper, "up") == 0 ? "1" : "0");
    snprintf (rel, sizeof (rel), "%s/speed", dev);
    put (rel, speed);
    snprintf (rel, sizeof (rel), "%s/carrier_changes", dev);
    put (rel, "2");
    for (int i = 0; stats[i]; i++) {
        snprintf (rel, sizeof (rel), "%s/statistics/%s", dev, stats[i]);
        put (rel, "0");
    }
    if (hw) {
        snprintf (rel, sizeof (rel), "sys/class/net/%s/device", dev);
        assert_int_equal (tree_mkdir (root, rel), 0);
    }
}

static const fm_health_record_t *
get (const fm_health_set_t *s, const char *dev, const char *name)
{
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp (s->rec[i].device, dev) == 0 && strcmp (s->rec[i].name, name) == 0) {
            return &s->rec[i];
        }
    }
    return NULL;
}

static bool has_device (const fm_health_set_t *s, const char *dev)
{
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp (s->rec[i].device, dev) == 0) {
            return true;
        }
    }
    return false;
}

static void test_init_errors (void **state)
{
    const char *bad[] = {"eth0", "a/b", NULL};
    fm_health_conf_t conf = {.root = "/nonexistent-fm-root"};
    fm_error_t err;

    errno = 0;
    assert_null (fm_health_net.init (&conf, &err));
    assert_int_equal (errno, ENOENT);
    assert_non_null (strstr (err.text, "/nonexistent-fm-root/sys/class/net"));
    put ("eth0/operstate", "up");
    conf.root = root;
    conf.netdevs = bad;
    assert_null (fm_health_net.init (&conf, &err));
    assert_int_equal (errno, EINVAL);
    fm_health_net.fini (NULL);
}

static void test_deltas (void **state)
{
    fm_health_conf_t conf = {.root = root, .no_ethtool = true};
    fm_health_set_t s = {0};
    const fm_health_record_t *r;
    fm_error_t err;
    void *c;
    json_t *a, *o;

    make_nic ("eth0", true, "up", "-1");
    make_nic ("ens1", true, "up", "25000");
    make_nic ("lo", false, "unknown", "0");
    put ("eth0/statistics/rx_errors", "5");
    assert_non_null (c = fm_health_net.init (&conf, &err));
    assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
    /* lo has no device link: not hardware */
    assert_false (has_device (&s, "lo"));
    assert_non_null (r = get (&s, "eth0", "rx_errors"));
    assert_int_equal (r->delta, 0);
    assert_int_equal (r->value, 5);
    assert_int_equal (get (&s, "eth0", "speed_mbps")->value, 0); /* -1: unknown */
    assert_int_equal (get (&s, "ens1", "speed_mbps")->value, 25000);
    assert_int_equal (get (&s, "eth0", "link_up")->value, 1);

    /* the next window: counters moved, the link went down */
    put ("eth0/statistics/rx_errors", "9");
    put ("eth0/statistics/rx_crc_errors", "3");
    put ("eth0/carrier_changes", "4");
    put ("eth0/operstate", "down");
    put ("eth0/carrier", "0");
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
    r = get (&s, "eth0", "rx_errors");
    assert_int_equal (r->delta, 4);
    assert_int_equal (r->value, 9);
    assert_int_equal (r->cls, FM_HCLASS_WARN);
    assert_int_equal (get (&s, "eth0", "carrier_changes")->delta, 2);
    assert_int_equal (get (&s, "eth0", "rx_crc_errors")->delta, 3);
    assert_int_equal (get (&s, "eth0", "link_up")->value, 0);
    assert_int_equal (get (&s, "ens1", "rx_errors")->delta, 0);

    a = fm_health_json_render (&s, 0, NULL);
    assert_int_equal (json_array_size (a), 2);
    o = json_array_get (a, 0); /* eth0 has problems: first */
    assert_string_equal (json_string_value (json_object_get (o, "name")), "eth0");
    assert_true (json_is_false (json_object_get (o, "link_up")));
    assert_int_equal (json_integer_value (json_object_get (o, "rx_errors")), 4);
    assert_int_equal (json_integer_value (json_object_get (o, "carrier_changes")), 2);
    json_decref (a);

    /* a counter that went backwards was reset */
    put ("eth0/statistics/rx_errors", "1");
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
    assert_int_equal (get (&s, "eth0", "rx_errors")->delta, 1);
    assert_int_equal (nlogs, 0);
    fm_health_net.fini (c);
    fm_health_set_free (&s);
}

static void test_garbage_and_missing (void **state)
{
    fm_health_conf_t conf = {.root = root, .no_ethtool = true};
    fm_health_set_t s = {0};
    fm_error_t err;
    void *c;

    make_nic ("eth0", true, "up", "10000");
    put ("eth0/statistics/rx_errors", "garbage");
    tree_unlink (root, "sys/class/net/eth0/statistics/tx_dropped");
    assert_non_null (c = fm_health_net.init (&conf, &err));
    for (int i = 0; i < 3; i++) {
        fm_health_set_clear (&s);
        assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
        assert_null (get (&s, "eth0", "rx_errors"));
        assert_null (get (&s, "eth0", "tx_dropped"));
        assert_non_null (get (&s, "eth0", "tx_errors"));
    }
    /* reported once each, however many windows */
    assert_int_equal (logged ("statistics/rx_errors: not a counter"), 1);
    assert_int_equal (logged ("statistics/tx_dropped: No such file"), 1);
    assert_int_equal (nlogs, 2);
    put ("eth0/statistics/rx_errors", "12");
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
    assert_int_equal (get (&s, "eth0", "rx_errors")->value, 12);
    assert_int_equal (logged ("rx_errors: readable again"), 1);
    /* a missing operstate leaves the device out rather than guessing */
    tree_unlink (root, "sys/class/net/eth0/operstate");
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
    assert_int_equal (s.n, 0);
    assert_int_equal (logged ("operstate"), 1);
    fm_health_net.fini (c);
    fm_health_set_free (&s);
}

static void test_allow_list (void **state)
{
    const char *list[] = {"lo", "missing0", NULL};
    fm_health_conf_t conf = {.root = root, .netdevs = list, .no_ethtool = true};
    fm_health_set_t s = {0};
    fm_error_t err;
    void *c;

    make_nic ("lo", false, "unknown", "0");
    make_nic ("eth0", true, "up", "1000");
    assert_non_null (c = fm_health_net.init (&conf, &err));
    for (int i = 0; i < 2; i++) {
        fm_health_set_clear (&s);
        assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
    }
    assert_true (has_device (&s, "lo"));
    assert_false (has_device (&s, "eth0"));
    /* "unknown" with carrier: lo is up */
    put ("lo/carrier", "1");
    fm_health_set_clear (&s);
    assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
    assert_int_equal (get (&s, "lo", "link_up")->value, 1);
    assert_int_equal (logged ("missing0: no such device"), 1);
    fm_health_net.fini (c);
    fm_health_set_free (&s);
}

/* ethtool on a name the kernel does not know: skipped, said once (debug). */
static void test_ethtool_skip (void **state)
{
    fm_health_conf_t conf = {.root = root};
    fm_health_set_t s = {0};
    fm_error_t err;
    void *c;

    make_nic ("fmnodev0", true, "up", "1000");
    assert_non_null (c = fm_health_net.init (&conf, &err));
    for (int i = 0; i < 2; i++) {
        fm_health_set_clear (&s);
        assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
        assert_non_null (get (&s, "fmnodev0", "rx_errors"));
    }
    assert_int_equal (logged ("fmnodev0: no ethtool statistics: No such device"), 1);
    fm_health_net.fini (c);
    fm_health_set_free (&s);
}

/* This machine's /sys, as the agent will read it. */
static void test_real_sys (void **state)
{
    fm_health_set_t s = {0};
    fm_error_t err;
    void *c = fm_health_net.init (NULL, &err);
    size_t devs = 0;

    if (!c) {
        skip ();
    }
    assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
    for (size_t i = 0; i < s.n; i++) {
        const fm_health_record_t *r = &s.rec[i];

        assert_int_equal (r->kind, FM_HREC_NIC);
        if (strcmp (r->name, "link_up") == 0) {
            devs++;
        }
        if (r->vtype == FM_HVAL_TEXT) {
            print_message ("# real /sys: %s %s=%s\n", r->device, r->name, r->text);
        } else if (strcmp (r->name, "link_up") == 0
                   || strcmp (r->name, "speed_mbps") == 0
                   || strcmp (r->name, "carrier_changes") == 0 || r->value != 0) {
            print_message (
                "# real /sys: %s %s=%lld\n", r->device, r->name, (long long)r->value);
        }
    }
    print_message ("# real /sys: %zu hardware netdevs, %zu records\n", devs, s.n);
    for (int i = 0; i < nlogs; i++) {
        print_message ("# log: %s\n", logs[i]);
    }
    fm_health_net.fini (c);
    fm_health_set_free (&s);
}

/* A veth pair in a network namespace of our own, read through a sysfs
 * mounted in it: the real kernel files, real carrier flaps, real drops and
 * the real SIOCETHTOOL path (veth has ethtool statistics, lo has none).
 * Last in the list: it leaves this process in the new namespaces.
 */
static void test_real_veth (void **state)
{
    const char *list[] = {"fmhv0", "fmhv1", "lo", NULL};
    fm_health_conf_t conf = {.root = root, .netdevs = list};
    fm_health_set_t s = {0};
    char sys[128];
    fm_error_t err;
    void *c;
    int fd;
    struct sockaddr_ll ll = {.sll_family = AF_PACKET};
    unsigned char frame[60] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5};
    int one = 1;

    if (unshare (CLONE_NEWNET | CLONE_NEWNS) < 0) {
        print_message ("# no namespaces (%s): skipped\n", strerror (errno));
        skip ();
    }
    assert_int_equal (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    snprintf (sys, sizeof (sys), "%s/sys", root);
    assert_int_equal (tree_mkdir (root, "sys"), 0);
    assert_int_equal (mount ("sysfs", sys, "sysfs", 0, NULL), 0);
    if (system ("ip link add fmhv0 type veth peer name fmhv1 2>/dev/null") != 0) {
        umount (sys);
        print_message ("# cannot create a veth pair: skipped\n");
        skip ();
    }
    assert_int_equal (system ("ip link set lo up && ip link set fmhv0 up"), 0);

    assert_non_null (c = fm_health_net.init (&conf, &err));
    assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
    assert_true (has_device (&s, "fmhv0") && has_device (&s, "fmhv1")
                 && has_device (&s, "lo"));
    /* fmhv1 is down, so fmhv0 has no carrier */
    assert_int_equal (get (&s, "fmhv0", "link_up")->value, 0);
    assert_int_equal (get (&s, "lo", "link_up")->value, 1);
    assert_int_equal (logged ("lo: no ethtool statistics: not supported"), 1);
    assert_int_equal (logged ("fmhv0: no ethtool"), 0);
    assert_int_equal (logged ("fmhv1: no ethtool"), 0);

    /* five frames straight to the driver while there is no carrier: dropped */
    ll.sll_ifindex = (int)if_nametoindex ("fmhv0");
    ll.sll_protocol = htons (0x88b5);
    ll.sll_halen = 6;
    memset (ll.sll_addr, 0xff, 6);
    assert_true ((fd = socket (AF_PACKET, SOCK_RAW, htons (0x88b5))) >= 0);
    assert_int_equal (
        setsockopt (fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof (one)), 0);
    for (int i = 0; i < 5; i++) {
        (void)sendto (
            fd, frame, sizeof (frame), 0, (struct sockaddr *)&ll, sizeof (ll));
    }
    close (fd);
    /* and a flap: carrier on, then off again */
    assert_int_equal (
        system ("ip link set fmhv1 up && sleep 0.2 && ip link set fmhv1 down"), 0);

    fm_health_set_clear (&s);
    assert_int_equal (fm_health_net.sample (c, &s, &err), 0);
    print_message ("# veth: fmhv0 tx_dropped +%lld, carrier_changes +%lld\n",
                   (long long)get (&s, "fmhv0", "tx_dropped")->delta,
                   (long long)get (&s, "fmhv0", "carrier_changes")->delta);
    assert_int_equal (get (&s, "fmhv0", "tx_dropped")->delta, 5);
    assert_int_equal (get (&s, "fmhv0", "carrier_changes")->delta, 2);
    assert_int_equal (get (&s, "fmhv1", "carrier_changes")->delta, 2);
    assert_int_equal (get (&s, "fmhv0", "link_up")->value, 0);
    /* still said once */
    assert_int_equal (logged ("lo: no ethtool statistics"), 1);
    fm_health_net.fini (c);
    fm_health_set_free (&s);
    assert_int_equal (umount (sys), 0);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_init_errors, setup, teardown),
        cmocka_unit_test_setup_teardown (test_deltas, setup, teardown),
        cmocka_unit_test_setup_teardown (test_garbage_and_missing, setup, teardown),
        cmocka_unit_test_setup_teardown (test_allow_list, setup, teardown),
        cmocka_unit_test_setup_teardown (test_ethtool_skip, setup, teardown),
        cmocka_unit_test_setup_teardown (test_real_sys, setup, teardown),
        cmocka_unit_test_setup_teardown (test_real_veth, setup, teardown),
    };

    fm_log_init ("test-health-net", 0, LOG_DEBUG);
    return cmocka_run_group_tests (tests, NULL, NULL);
}
