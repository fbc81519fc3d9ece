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

#include <cmocka.h>

#include "topo.h"

static void test_conf (void **state)
{
    const char *text = "# leaf switches\n"
                       "SwitchName=leaf1 Nodes=fmn[1-4] LinkSpeed=100\n"
                       "SwitchName=leaf2 Nodes=fmn[5-6],gpu01\n"
                       "\n"
                       "SwitchName=spine1 Switches=leaf[1-2]   # both leaves\n"
                       "switchname=spine2 switches=leaf1\n";
    fm_error_t err;
    fm_topo_t *t = fm_topo_parse (text, &err);

    assert_non_null (t);
    assert_int_equal (fm_topo_nnodes (t), 7);
    assert_int_equal (fm_topo_nleaves (t), 2);
    assert_int_equal (fm_topo_nspines (t), 2);
    assert_int_equal (fm_topo_nuplinks (t), 3);
    assert_string_equal (fm_topo_node_name (t, 0), "fmn1");
    assert_int_equal (fm_topo_node_find (t, "gpu01"), 6);
    assert_int_equal (fm_topo_node_find (t, "fmn9"), -1);
    int l1 = fm_topo_leaf_find (t, "leaf1"), l2 = fm_topo_leaf_find (t, "leaf2");
    int s1 = fm_topo_spine_find (t, "spine1"), s2 = fm_topo_spine_find (t, "spine2");
    assert_true (l1 >= 0 && l2 >= 0 && s1 >= 0 && s2 >= 0);
    assert_int_equal (fm_topo_node_leaf (t, fm_topo_node_find (t, "fmn3")), l1);
    assert_int_equal (fm_topo_node_leaf (t, fm_topo_node_find (t, "fmn5")), l2);
    size_t n;
    const int *m = fm_topo_leaf_nodes (t, l2, &n);
    assert_int_equal (n, 3);
    assert_string_equal (fm_topo_node_name (t, m[2]), "gpu01");
    int u = fm_topo_uplink_find (t, l1, s2);
    assert_true (u >= 0);
    assert_int_equal (fm_topo_uplink_leaf (t, u), l1);
    assert_int_equal (fm_topo_uplink_spine (t, u), s2);
    assert_true (fm_topo_uplink_find (t, l2, s1) >= 0);
    assert_int_equal (fm_topo_uplink_find (t, l2, s2), -1); /* spine2 lacks leaf2 */
    assert_null (fm_topo_node_name (t, 7));
    assert_null (fm_topo_leaf_name (t, -1));
    assert_int_equal (fm_topo_uplink_leaf (t, 99), -1);
    fm_topo_destroy (t);
}

/* `scontrol show topology` prints Level and the descendants of upper switches. */
static void test_scontrol (void **state)
{
    const char *text =
        "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=tux[0-3]\n"
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=tux[4-7]\n"
        "SwitchName=s2 Level=1 LinkSpeed=1 Nodes=tux[0-7] Switches=s[0-1]\n"
        "SwitchName=s3 Level=2 LinkSpeed=1 Nodes=tux[0-7] Switches=s2\n";
    fm_error_t err;
    fm_topo_t *t = fm_topo_parse (text, &err);

    assert_non_null (t);
    assert_int_equal (fm_topo_nnodes (t), 8);
    assert_int_equal (fm_topo_nleaves (t), 2);
    /* s3 is above the parents of leaves: kept out of localization */
    assert_int_equal (fm_topo_nspines (t), 1);
    assert_int_equal (fm_topo_nuplinks (t), 2);
    assert_int_equal (fm_topo_spine_find (t, "s3"), -1);
    fm_topo_destroy (t);
}

static void test_continuation (void **state)
{
    fm_error_t err;
    fm_topo_t *t = fm_topo_parse ("SwitchName=a \\\n  Nodes=n[01-03]\r\n"
                                  "SwitchName=b Nodes=n04\n"
                                  "SwitchName=top Switches=a,b",
                                  &err);

    assert_non_null (t);
    assert_int_equal (fm_topo_nnodes (t), 4);
    assert_string_equal (fm_topo_node_name (t, 0), "n01");
    assert_int_equal (fm_topo_nuplinks (t), 2);
    fm_topo_destroy (t);
}

static const struct {
    const char *text;
    const char *msg;
} bad[] = {
    {"SwitchName=a Nodes=n1 Colour=red\n", "line 1: unknown key 'Colour'"},
    {"Nodes=n1\n", "line 1: missing SwitchName"},
    {"SwitchName=a\n", "neither Nodes nor Switches"},
    {"SwitchName=a Nodes=n1\nSwitchName=a Nodes=n2\n", "line 2: duplicate switch a"},
    {"SwitchName=a Nodes=n1\nSwitchName=b Switches=a,c\n", "undefined switch c"},
    {"SwitchName=a Switches=b\nSwitchName=b Switches=a\n", "cycle"},
    {"SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n2\n", "node n2 is already under"},
    {"SwitchName=a Nodes=n[3-1]\n", "line 1: Nodes: reversed range"},
    {"SwitchName=a Nodes=n[1-2\n", "line 1: Nodes:"},
    {"SwitchName=a Level=1 Nodes=n1\n", "Level=1 but is at level 0"},
    {"SwitchName=a Level=x Nodes=n1\n", "bad Level"},
    {"SwitchName=a Nodes=n1 Nodes=n2\n", "duplicate Nodes"},
    {"SwitchName=bad/name Nodes=n1\n", "bad switch name"},
    {"SwitchName=a Nodes=n1\nSwitchName=t Nodes=n9 Switches=a\n", "under no leaf"},
    {"SwitchName=a junk\n", "expected key=value"},
    {"SwitchName=a Nodes=n1\x01\n", "control character"},
};

static void test_errors (void **state)
{
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        fm_error_t err = {.text = ""};
        errno = 0;
        fm_topo_t *t = fm_topo_parse (bad[i].text, &err);
        if (t || errno != EINVAL || !strstr (err.text, bad[i].msg)) {
            print_error ("case %zu: got '%s' errno %d, want '%s'\n",
                         i,
                         err.text,
                         errno,
                         bad[i].msg);
            fail ();
        }
    }
    fm_error_t err;
    assert_null (fm_topo_parse (NULL, &err));
    assert_int_equal (errno, EINVAL);
}

static void test_too_long (void **state)
{
    size_t len = FM_TOPO_LINE_MAX + 100;
    char *text = malloc (len + 1);
    fm_error_t err;

    assert_non_null (text);
    memset (text, 'a', len);
    memcpy (text, "SwitchName=a Nodes=n1", 21);
    text[len] = '\0';
    assert_null (fm_topo_parse (text, &err));
    assert_int_equal (errno, EFBIG);
    free (text);
}

static void test_flat (void **state)
{
    fm_topo_t *t = fm_topo_create_flat ();

    assert_non_null (t);
    assert_int_equal (fm_topo_add_node (t, "a1"), 0);
    assert_int_equal (fm_topo_add_node (t, "a2"), 1);
    assert_int_equal (fm_topo_add_node (t, "a1"), 0);
    assert_int_equal (fm_topo_add_node (t, "bad name"), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_topo_add_node (t, ""), -1);
    assert_int_equal (fm_topo_add_node (NULL, "x"), -1);
    assert_int_equal (fm_topo_nnodes (t), 2);
    assert_int_equal (fm_topo_node_leaf (t, 1), -1);
    assert_int_equal (fm_topo_nleaves (t), 0);
    assert_int_equal (fm_topo_uplink_find (t, 0, 0), -1);
    fm_topo_destroy (t);
    fm_topo_destroy (NULL);
    assert_int_equal (fm_topo_nnodes (NULL), 0);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_conf),
        cmocka_unit_test (test_scontrol),
        cmocka_unit_test (test_continuation),
        cmocka_unit_test (test_errors),
        cmocka_unit_test (test_too_long),
        cmocka_unit_test (test_flat),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
