/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "localize.h"
#include "topo.h"

/* 4 leaves of 4 nodes (n0..n15), 2 spines; every node probes every other. */
#define NN 16
#define NF (NN * (NN - 1))

typedef struct {
    fm_topo_t *topo;
    fm_localize_t *loc;
    fm_flow_ev_t flows[NF];
    size_t n;
    fm_localize_params_t p;
} fx_t;

static int leaf_of (int n)
{
    return n / 4;
}

static int via_of (int s, int d)
{
    return leaf_of (s) == leaf_of (d) ? -1 : (s + d) % 2;
}

static int setup (void **state)
{
    fx_t *fx = calloc (1, sizeof (*fx));
    fm_error_t err;

    fx->topo = fm_topo_parse ("SwitchName=leaf0 Nodes=n[0-3]\n"
                              "SwitchName=leaf1 Nodes=n[4-7]\n"
                              "SwitchName=leaf2 Nodes=n[8-11]\n"
                              "SwitchName=leaf3 Nodes=n[12-15]\n"
                              "SwitchName=spine0 Switches=leaf[0-3]\n"
                              "SwitchName=spine1 Switches=leaf[0-3]\n",
                              &err);
    assert_non_null (fx->topo);
    fx->loc = fm_localize_create (fx->topo);
    assert_non_null (fx->loc);
    for (int s = 0; s < NN; s++) {
        for (int d = 0; d < NN; d++) {
            if (s == d) {
                continue;
            }
            fx->flows[fx->n++] = (fm_flow_ev_t){
                .src = s,
                .dst = d,
                .via = via_of (s, d),
                .sent = 100,
                .zn = 2,
                .cur_sent = 50,
                .cur_zn = 1,
            };
        }
    }
    fm_localize_params_default (&fx->p);
    *state = fx;
    return 0;
}

static int teardown (void **state)
{
    fx_t *fx = *state;
    fm_localize_destroy (fx->loc);
    fm_topo_destroy (fx->topo);
    free (fx);
    return 0;
}

static void lossy (fm_flow_ev_t *f, double ratio)
{
    f->lost = f->sent * ratio;
    f->cur_lost = f->cur_sent * ratio;
}

static void slow (fm_flow_ev_t *f, double us)
{
    double z = us * 1000 / 200; /* sigma 200 ns */
    f->zs = f->zn * z;
    f->infl_ns = f->zn * us * 1000;
    f->cur_zs = z;
    f->cur_infl_ns = us * 1000;
}

static int run (fx_t *fx, const fm_hyp_t **h)
{
    int n = fm_localize_run (fx->loc, fx->flows, fx->n, &fx->p, h);
    assert_true (n >= 0);
    return n;
}

static void test_clean (void **state)
{
    fx_t *fx = *state;
    const fm_hyp_t *h;

    /* baseline noise: one lost probe somewhere is nobody's fault */
    fx->flows[3].lost = 1;
    fx->flows[3].cur_lost = 1;
    assert_int_equal (run (fx, &h), 0);
    for (size_t i = 0; i < fx->n; i++) {
        assert_int_equal (fx->flows[i].explained, -1);
    }
}

/* A bad NIC explains its links in one direction. */
static void test_node_direction (void **state)
{
    static const struct {
        int node;
        fm_side_t side;
    } cases[] = {{5, FM_SIDE_TX}, {9, FM_SIDE_RX}, {14, FM_SIDE_BOTH}};

    for (size_t c = 0; c < sizeof (cases) / sizeof (cases[0]); c++) {
        fx_t *fx = *state;
        const fm_hyp_t *h;
        for (size_t i = 0; i < fx->n; i++) {
            fm_flow_ev_t *f = &fx->flows[i];
            bool hit = ((cases[c].side & FM_SIDE_TX) && f->src == cases[c].node)
                       || ((cases[c].side & FM_SIDE_RX) && f->dst == cases[c].node);
            lossy (f, hit ? 0.05 : 0);
        }
        assert_int_equal (run (fx, &h), 1);
        assert_int_equal (h[0].kind, FM_ELEM_NODE);
        assert_int_equal (h[0].id, cases[c].node);
        assert_int_equal (h[0].side, cases[c].side);
        assert_int_equal (h[0].cls, FM_CLASS_LOSS);
        assert_true (h[0].current);
        assert_true (h[0].witnesses >= 2);
        assert_int_equal (h[0].nflows, cases[c].side == FM_SIDE_BOTH ? 30 : 15);
    }
}

/* A bad leaf uplink explains cross-leaf paths only, and its direction. */
static void test_uplink (void **state)
{
    fx_t *fx = *state;
    const fm_hyp_t *h;

    /* leaf1 -> spine0: traffic leaving leaf1 through spine 0 */
    for (size_t i = 0; i < fx->n; i++) {
        fm_flow_ev_t *f = &fx->flows[i];
        lossy (f, leaf_of (f->src) == 1 && f->via == 0 ? 0.2 : 0);
    }
    assert_int_equal (run (fx, &h), 1);
    assert_int_equal (h[0].kind, FM_ELEM_UPLINK);
    assert_int_equal (fm_topo_uplink_leaf (fx->topo, h[0].id), 1);
    assert_int_equal (fm_topo_uplink_spine (fx->topo, h[0].id), 0);
    assert_int_equal (h[0].side, FM_SIDE_TX);

    /* spine1 -> leaf2, as delay */
    for (size_t i = 0; i < fx->n; i++) {
        fm_flow_ev_t *f = &fx->flows[i];
        lossy (f, 0);
        slow (f, leaf_of (f->dst) == 2 && f->via == 1 ? 50 : 0);
    }
    assert_int_equal (run (fx, &h), 1);
    assert_int_equal (h[0].kind, FM_ELEM_UPLINK);
    assert_int_equal (fm_topo_uplink_leaf (fx->topo, h[0].id), 2);
    assert_int_equal (fm_topo_uplink_spine (fx->topo, h[0].id), 1);
    assert_int_equal (h[0].side, FM_SIDE_RX);
    assert_int_equal (h[0].cls, FM_CLASS_DELAY);
    assert_true (fabs (h[0].delay_ns - 50000) < 1);
}

static void test_switches (void **state)
{
    fx_t *fx = *state;
    const fm_hyp_t *h;

    /* everything through leaf3, both ways, is dead */
    for (size_t i = 0; i < fx->n; i++) {
        fm_flow_ev_t *f = &fx->flows[i];
        lossy (f, leaf_of (f->src) == 3 || leaf_of (f->dst) == 3 ? 1.0 : 0);
    }
    assert_int_equal (run (fx, &h), 1);
    assert_int_equal (h[0].kind, FM_ELEM_LEAF);
    assert_int_equal (h[0].id, 3);
    assert_int_equal (h[0].side, FM_SIDE_BOTH);
    assert_int_equal (h[0].cls, FM_CLASS_DOWN);

    /* a spine: every path through spine1 */
    for (size_t i = 0; i < fx->n; i++) {
        fm_flow_ev_t *f = &fx->flows[i];
        lossy (f, f->via == 1 ? 0.1 : 0);
    }
    assert_int_equal (run (fx, &h), 1);
    assert_int_equal (h[0].kind, FM_ELEM_SPINE);
    assert_int_equal (h[0].id, 1);

    /* two bad uplinks of spine1 are two uplinks, not the spine */
    for (size_t i = 0; i < fx->n; i++) {
        fm_flow_ev_t *f = &fx->flows[i];
        bool a = leaf_of (f->src) == 0 && f->via == 1;
        bool b = leaf_of (f->dst) == 2 && f->via == 1;
        lossy (f, a || b ? 0.2 : 0);
    }
    int n = run (fx, &h);
    assert_int_equal (n, 2);
    for (int i = 0; i < n; i++) {
        assert_int_equal (h[i].kind, FM_ELEM_UPLINK);
    }

    /* two bad nodes under one leaf are two nodes, not the switch */
    for (size_t i = 0; i < fx->n; i++) {
        fm_flow_ev_t *f = &fx->flows[i];
        lossy (f, f->src == 4 || f->src == 6 ? 0.02 : 0);
    }
    n = run (fx, &h);
    assert_int_equal (n, 2);
    assert_int_equal (h[0].kind, FM_ELEM_NODE);
    assert_int_equal (h[1].kind, FM_ELEM_NODE);
    assert_int_equal (h[0].side, FM_SIDE_TX);
}

/* Nothing is blamed on one peer's word. */
static void test_one_peer (void **state)
{
    fx_t *fx = *state;
    const fm_hyp_t *h;

    for (size_t i = 0; i < fx->n; i++) {
        fm_flow_ev_t *f = &fx->flows[i];
        lossy (f, f->src == 2 && f->dst == 7 ? 1.0 : 0);
    }
    assert_int_equal (run (fx, &h), 0);
    /* without the two-peer and spread rules the same evidence would blame one */
    fx->p.min_peers = 1;
    fx->p.spread_ratio = 0;
    assert_true (run (fx, &h) >= 1);
}

/* Old evidence alone is not "current". */
static void test_current (void **state)
{
    fx_t *fx = *state;
    const fm_hyp_t *h;

    for (size_t i = 0; i < fx->n; i++) {
        fm_flow_ev_t *f = &fx->flows[i];
        lossy (f, f->src == 1 ? 0.3 : 0);
        f->cur_lost = 0;
    }
    assert_int_equal (run (fx, &h), 1);
    assert_false (h[0].current);
}

static void test_invalid (void **state)
{
    fx_t *fx = *state;
    const fm_hyp_t *h;

    fx->flows[0].dst = 99;
    assert_int_equal (fm_localize_run (fx->loc, fx->flows, fx->n, &fx->p, &h), -1);
    assert_int_equal (errno, EINVAL);
    fx->flows[0].dst = fx->flows[0].src;
    assert_int_equal (fm_localize_run (fx->loc, fx->flows, fx->n, &fx->p, &h), -1);
    fx->flows[0].dst = 1;
    fx->flows[0].via = 5;
    assert_int_equal (fm_localize_run (fx->loc, fx->flows, fx->n, &fx->p, &h), -1);
    fx->flows[0].via = -1;
    fx->flows[0].lost = 200; /* more than sent */
    assert_int_equal (fm_localize_run (fx->loc, fx->flows, fx->n, &fx->p, &h), -1);
    fx->flows[0].lost = 0;
    fx->p.p0 = 0;
    assert_int_equal (fm_localize_run (fx->loc, fx->flows, fx->n, &fx->p, &h), -1);
    assert_null (fm_localize_create (NULL));
    fm_localize_destroy (NULL);
}

static void test_llr (void **state)
{
    assert_true (fm_localize_loss_llr (1000, 0, 1e-5) == 0);
    assert_true (fm_localize_loss_llr (1000, 0.005, 1e-5) == 0); /* below p0 */
    /* 10 of 1000 against 1e-5: 10 ln(1000) + 990 ln(0.99 / 0.99999) */
    double want = 10 * log (0.01 / 1e-5) + 990 * log (0.99 / (1 - 1e-5));
    assert_true (fabs (fm_localize_loss_llr (1000, 10, 1e-5) - want) < 1e-9);
    assert_true (fm_localize_loss_llr (50, 50, 1e-5) > 500);
    assert_true (fm_localize_delay_llr (100, 4, 4 * 1000, 2000) == 0); /* 1 us < 2 us */
    assert_true (fabs (fm_localize_delay_llr (100, 4, 4 * 5000, 2000) - 1250 * 0.36)
                 < 1e-9);
    assert_true (fabs (fm_localize_delay_llr (100, 4, 4 * 5000, 0) - 1250) < 1e-9);
    assert_string_equal (fm_localize_class_name (FM_CLASS_FLAP), "flap");
    assert_string_equal (fm_localize_side_name (FM_SIDE_RX), "rx");
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_clean, setup, teardown),
        cmocka_unit_test_setup_teardown (test_node_direction, setup, teardown),
        cmocka_unit_test_setup_teardown (test_uplink, setup, teardown),
        cmocka_unit_test_setup_teardown (test_switches, setup, teardown),
        cmocka_unit_test_setup_teardown (test_one_peer, setup, teardown),
        cmocka_unit_test_setup_teardown (test_current, setup, teardown),
        cmocka_unit_test_setup_teardown (test_invalid, setup, teardown),
        cmocka_unit_test (test_llr),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
