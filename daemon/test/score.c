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

#include "score.h"
#include "topo.h"

#define W_NS 5000000000LL
#define PROBES 50

/* What a fault does to one direction src -> dst in window w. */
typedef struct {
    double loss;        /* ratio */
    double delay_ns;    /* added one-way delay */
    bool residual_only; /* no clock: report the loop residual, not the OWD */
} effect_t;

typedef effect_t (*fault_f) (int s, int d, int64_t w, void *arg);

static effect_t no_fault (int s, int d, int64_t w, void *arg)
{
    return (effect_t){0};
}

/* Feed one window of all-pairs probing and close it. */
static void
window (fm_score_t *sc, const fm_topo_t *t, int64_t w, fault_f fn, void *arg)
{
    int n = (int)fm_topo_nnodes (t);

    for (int s = 0; s < n; s++) {
        for (int d = 0; d < n; d++) {
            if (s == d) {
                continue;
            }
            effect_t e = fn (s, d, w, arg);
            int ls = fm_topo_node_leaf (t, s), ld = fm_topo_node_leaf (t, d);
            int via = ls >= 0 && ls != ld ? (s + d) % (int)fm_topo_nspines (t) : -1;
            int lost = (int)(PROBES * e.loss + 0.5);
            /* deterministic small noise, +-150 ns */
            int64_t noise = ((s * 7 + d * 3 + w) % 3 - 1) * 150;
            fm_link_window_t r = {
                .job_id = 1,
                .src = s,
                .dst = d,
                .via = via,
                .start_ns = w * W_NS,
                .end_ns = (w + 1) * W_NS,
                .sent = PROBES,
                .received = PROBES - lost,
                .owd_p50_ns = 3000 + noise + (int64_t)e.delay_ns,
                .owd_p99_ns = 5000 + noise + (int64_t)e.delay_ns,
                .rtt_p50_ns = 7000 + noise,
                .loop_residual_ns = FM_SCORE_NONE,
            };
            if (e.residual_only) {
                r.owd_p50_ns = r.owd_p99_ns = FM_SCORE_NONE;
                r.loop_residual_ns = noise / 4 + (int64_t)(e.delay_ns / 2);
            }
            if (lost == PROBES) {
                r.owd_p50_ns = r.owd_p99_ns = r.rtt_p50_ns = FM_SCORE_NONE;
            }
            assert_int_equal (fm_score_add_link (sc, &r), 0);
        }
    }
    assert_int_equal (fm_score_close_window (sc, (w + 1) * W_NS), 0);
}

typedef struct {
    int node;
    fm_side_t side;
    double loss, delay_ns;
    int64_t from, until; /* windows [from, until) */
    bool residual_only;
    int64_t period; /* > 0: active every other `period` windows */
} nodefault_t;

static effect_t node_fault (int s, int d, int64_t w, void *arg)
{
    const nodefault_t *f = arg;
    bool hit = ((f->side & FM_SIDE_TX) && s == f->node)
               || ((f->side & FM_SIDE_RX) && d == f->node);
    bool on = w >= f->from && w < f->until;

    if (on && f->period > 0) {
        on = ((w - f->from) / f->period) % 2 == 0;
    }
    if (!hit || !on) {
        return (effect_t){.residual_only = f->residual_only};
    }
    return (effect_t){f->loss, f->delay_ns, f->residual_only};
}

typedef struct {
    fm_topo_t *topo;
    fm_score_t *sc;
    fm_score_params_t p;
} fx_t;

static fx_t *fx_flat (int n, const fm_score_params_t *p)
{
    fx_t *fx = calloc (1, sizeof (*fx));

    assert_non_null (fx);
    fx->topo = fm_topo_create_flat ();
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf (name, sizeof (name), "n%d", i);
        assert_int_equal (fm_topo_add_node (fx->topo, name), i);
    }
    if (p) {
        fx->p = *p;
    } else {
        fm_score_params_default (&fx->p);
    }
    fx->sc = fm_score_create (fx->topo, &fx->p);
    assert_non_null (fx->sc);
    return fx;
}

static void fx_free (fx_t *fx)
{
    fm_score_destroy (fx->sc);
    fm_topo_destroy (fx->topo);
    free (fx);
}

static fm_state_t node_state (fx_t *fx, int node)
{
    const fm_elem_status_t *e = fm_score_find (fx->sc, FM_ELEM_NODE, node);
    return e ? e->state : FM_STATE_HEALTHY;
}

static void test_noise (void **state)
{
    fx_t *fx = fx_flat (8, NULL);

    for (int64_t w = 0; w < 40; w++) {
        window (fx->sc, fx->topo, w, no_fault, NULL);
    }
    assert_int_equal (fm_score_nelems (fx->sc), 0);
    assert_int_equal (fm_score_node_clean (fx->sc, 3), 40);
    assert_true (fm_score_p0 (fx->sc) < 1e-4);
    fx_free (fx);
}

/* States, persistence and hysteresis on the way in and out. */
static void test_states (void **state)
{
    fx_t *fx = fx_flat (8, NULL);
    nodefault_t f = {
        .node = 3, .side = FM_SIDE_TX, .loss = 0.1, .from = 10, .until = 14};
    int64_t w = 0;

    for (; w < 10; w++) {
        window (fx->sc, fx->topo, w, node_fault, &f);
    }
    assert_int_equal (node_state (fx, 3), FM_STATE_HEALTHY);
    window (fx->sc, fx->topo, w++, node_fault, &f);
    assert_int_equal (node_state (fx, 3), FM_STATE_SUSPECT);
    window (fx->sc, fx->topo, w++, node_fault, &f);
    const fm_elem_status_t *e = fm_score_find (fx->sc, FM_ELEM_NODE, 3);
    assert_non_null (e);
    assert_int_equal (e->state, FM_STATE_FAILED); /* 10% > fail_loss */
    assert_int_equal (e->side, FM_SIDE_TX);
    assert_int_equal (e->cls, FM_CLASS_LOSS);
    assert_int_equal (e->since_ns, 12 * W_NS);
    char buf[256];
    fm_score_text_evidence (fx->topo, e, buf, sizeof (buf));
    assert_non_null (strstr (buf, "tx loss"));
    assert_non_null (strstr (buf, "7 peers"));
    assert_int_equal (fm_score_node_clean (fx->sc, 3), 0);
    /* nobody else is blamed */
    assert_int_equal (fm_score_nelems (fx->sc), 1);
    for (; w < 14; w++) {
        window (fx->sc, fx->topo, w, node_fault, &f);
    }
    /* healthy again only after recover_windows clean windows */
    for (int i = 0; i < fx->p.recover_windows - 1; i++) {
        window (fx->sc, fx->topo, w++, node_fault, &f);
        assert_int_equal (node_state (fx, 3), FM_STATE_FAILED);
    }
    window (fx->sc, fx->topo, w++, node_fault, &f);
    assert_int_equal (node_state (fx, 3), FM_STATE_HEALTHY);
    assert_null (fm_score_find (fx->sc, FM_ELEM_NODE, 3));
    assert_true (fm_score_node_clean (fx->sc, 3) >= fx->p.recover_windows);
    fx_free (fx);
}

/* A one-window blip is never more than suspect; N is configurable. */
static void test_persistence (void **state)
{
    fm_score_params_t p;
    fm_score_params_default (&p);
    p.persist_windows = 4;
    fx_t *fx = fx_flat (8, &p);
    nodefault_t blip = {
        .node = 1, .side = FM_SIDE_RX, .loss = 0.5, .from = 10, .until = 11};
    int64_t w = 0;

    for (; w < 20; w++) {
        window (fx->sc, fx->topo, w, node_fault, &blip);
        assert_true (node_state (fx, 1) <= FM_STATE_SUSPECT);
    }
    assert_int_equal (node_state (fx, 1), FM_STATE_HEALTHY);
    nodefault_t f = {
        .node = 1, .side = FM_SIDE_RX, .loss = 0.5, .from = 20, .until = 40};
    for (int i = 0; i < 3; i++) {
        window (fx->sc, fx->topo, w++, node_fault, &f);
        assert_int_equal (node_state (fx, 1), FM_STATE_SUSPECT);
    }
    window (fx->sc, fx->topo, w++, node_fault, &f);
    assert_int_equal (node_state (fx, 1), FM_STATE_FAILED);
    assert_int_equal (fm_score_find (fx->sc, FM_ELEM_NODE, 1)->side, FM_SIDE_RX);
    fx_free (fx);
}

/* Slow is degraded; very slow is failed. */
static void test_delay (void **state)
{
    fx_t *fx = fx_flat (8, NULL);
    nodefault_t f = {
        .node = 2, .side = FM_SIDE_RX, .delay_ns = 20000, .from = 10, .until = 100};
    int64_t w = 0;

    for (; w < 13; w++) {
        window (fx->sc, fx->topo, w, node_fault, &f);
    }
    const fm_elem_status_t *e = fm_score_find (fx->sc, FM_ELEM_NODE, 2);
    assert_non_null (e);
    assert_int_equal (e->state, FM_STATE_DEGRADED);
    assert_int_equal (e->cls, FM_CLASS_DELAY);
    assert_int_equal (e->side, FM_SIDE_RX);
    assert_true (e->delay_ns > 10000);
    f.delay_ns = 3e6;
    for (; w < 16; w++) {
        window (fx->sc, fx->topo, w, node_fault, &f);
    }
    assert_int_equal (node_state (fx, 2), FM_STATE_FAILED);
    char buf[2048];
    assert_true (
        fm_score_text_explain (
            fx->topo, fm_score_find (fx->sc, FM_ELEM_NODE, 2), buf, sizeof (buf))
        > 0);
    assert_non_null (strstr (buf, "node:n2: failed delay"));
    assert_non_null (strstr (buf, "window@"));
    assert_non_null (strstr (buf, "rx delay"));
    /* times as dates, never epoch seconds: the test's clock starts at 0 */
    assert_non_null (strstr (
        buf,
        "since 1970-01-01 00:01:15 UTC (first implicated 1970-01-01 00:00:55 UTC)"));
    assert_non_null (strstr (buf, "window@00:01:05 rx delay"));
    assert_null (strstr (buf, "0s "));
    fx_free (fx);
}

/* Without a clock estimate the loop residual carries the direction. */
static void test_residual (void **state)
{
    fx_t *fx = fx_flat (8, NULL);
    nodefault_t f = {.node = 4,
                     .side = FM_SIDE_TX,
                     .delay_ns = 30000,
                     .from = 10,
                     .until = 100,
                     .residual_only = true};

    for (int64_t w = 0; w < 13; w++) {
        window (fx->sc, fx->topo, w, node_fault, &f);
    }
    const fm_elem_status_t *e = fm_score_find (fx->sc, FM_ELEM_NODE, 4);
    assert_non_null (e);
    assert_int_equal (e->state, FM_STATE_DEGRADED);
    assert_int_equal (e->side, FM_SIDE_TX);
    fx_free (fx);
}

typedef struct {
    int s, d;
} pair_t;

static effect_t pair_fault (int s, int d, int64_t w, void *arg)
{
    const pair_t *p = arg;
    return (effect_t){.loss = s == p->s && d == p->d && w >= 10 ? 1.0 : 0};
}

/* One dead path is one peer's word: nobody is blamed. */
static void test_one_peer (void **state)
{
    fx_t *fx = fx_flat (8, NULL);
    pair_t p = {1, 4};

    for (int64_t w = 0; w < 30; w++) {
        window (fx->sc, fx->topo, w, pair_fault, &p);
        assert_int_equal (fm_score_nelems (fx->sc), 0);
    }
    fx_free (fx);
}

static void test_health (void **state)
{
    fx_t *fx = fx_flat (8, NULL);
    int64_t w = 0;

    for (; w < 8; w++) {
        window (fx->sc, fx->topo, w, no_fault, NULL);
    }
    for (; w < 10; w++) {
        fm_health_event_t he = {
            .node = 5, .at_ns = w * W_NS, .kind = FM_HEALTH_LINK_DOWN};
        assert_int_equal (fm_score_add_health (fx->sc, &he), 0);
        window (fx->sc, fx->topo, w, no_fault, NULL);
    }
    const fm_elem_status_t *e = fm_score_find (fx->sc, FM_ELEM_NODE, 5);
    assert_non_null (e);
    assert_int_equal (e->state, FM_STATE_FAILED);
    assert_int_equal (e->cls, FM_CLASS_DOWN);
    char buf[256];
    fm_score_text_evidence (fx->topo, e, buf, sizeof (buf));
    assert_non_null (strstr (buf, "node health: link down"));
    /* port errors below the threshold do not count, above they degrade */
    fm_health_event_t pe = {.node = 6, .kind = FM_HEALTH_PORT_ERRORS, .count = 3};
    assert_int_equal (fm_score_add_health (fx->sc, &pe), 0);
    window (fx->sc, fx->topo, w++, no_fault, NULL);
    assert_null (fm_score_find (fx->sc, FM_ELEM_NODE, 6));
    pe.count = 50;
    for (int i = 0; i < 2; i++) {
        assert_int_equal (fm_score_add_health (fx->sc, &pe), 0);
        window (fx->sc, fx->topo, w++, no_fault, NULL);
    }
    e = fm_score_find (fx->sc, FM_ELEM_NODE, 6);
    assert_non_null (e);
    assert_int_equal (e->state, FM_STATE_DEGRADED);
    assert_int_equal (e->cls, FM_CLASS_PORT_ERRORS);
    fx_free (fx);
}

static void test_flap (void **state)
{
    fx_t *fx = fx_flat (8, NULL);
    nodefault_t f = {.node = 6,
                     .side = FM_SIDE_BOTH,
                     .loss = 1.0,
                     .from = 10,
                     .until = 40,
                     .period = 2};
    int64_t w = 0;

    for (; w < 13; w++) {
        window (fx->sc, fx->topo, w, node_fault, &f);
    }
    const fm_elem_status_t *e = fm_score_find (fx->sc, FM_ELEM_NODE, 6);
    assert_non_null (e);
    assert_int_equal (e->cls, FM_CLASS_DOWN);
    for (; w < 16; w++) {
        window (fx->sc, fx->topo, w, node_fault, &f);
        assert_int_equal (node_state (fx, 6), FM_STATE_FAILED);
    }
    e = fm_score_find (fx->sc, FM_ELEM_NODE, 6);
    assert_int_equal (e->cls, FM_CLASS_FLAP);
    assert_int_equal (e->side, FM_SIDE_BOTH);
    assert_true (e->episodes >= 2);
    fx_free (fx);
}

typedef struct {
    const fm_topo_t *t;
    int mode; /* 0: NIC rx of n5; 1: uplink spine1 -> leaf1 */
} ls_t;

static effect_t ls_fault (int s, int d, int64_t w, void *arg)
{
    const ls_t *a = arg;
    int ls = fm_topo_node_leaf (a->t, s), ld = fm_topo_node_leaf (a->t, d);
    int via = ls != ld ? (s + d) % 2 : -1;

    if (w < 10) {
        return (effect_t){0};
    }
    if (a->mode == 0) {
        return (effect_t){.loss = d == 5 ? 0.1 : 0};
    }
    return (effect_t){.loss = ld == 1 && ls != 1 && via == 1 ? 0.1 : 0};
}

/* Through the whole engine: a NIC versus a leaf uplink, and the direction. */
static void test_nic_vs_uplink (void **state)
{
    for (int mode = 0; mode < 2; mode++) {
        fm_error_t err;
        fm_topo_t *t = fm_topo_parse ("SwitchName=leaf0 Nodes=n[0-3]\n"
                                      "SwitchName=leaf1 Nodes=n[4-7]\n"
                                      "SwitchName=leaf2 Nodes=n[8-11]\n"
                                      "SwitchName=spine0 Switches=leaf[0-2]\n"
                                      "SwitchName=spine1 Switches=leaf[0-2]\n",
                                      &err);
        assert_non_null (t);
        fm_score_params_t p;
        fm_score_params_default (&p);
        fm_score_t *sc = fm_score_create (t, &p);
        assert_non_null (sc);
        ls_t a = {t, mode};
        for (int64_t w = 0; w < 13; w++) {
            window (sc, t, w, ls_fault, &a);
        }
        assert_int_equal (fm_score_nelems (sc), 1);
        const fm_elem_status_t *e = fm_score_elem (sc, 0);
        char name[64];
        fm_score_text_elem_name (t, e->kind, e->id, name, sizeof (name));
        assert_string_equal (name, mode == 0 ? "node:n5" : "uplink:leaf1-spine1");
        assert_int_equal (e->side, FM_SIDE_RX);
        assert_int_equal (e->state, FM_STATE_FAILED);
        fm_score_destroy (sc);
        fm_topo_destroy (t);
    }
}

/* A failed node started over (validation after a drain) is judged afresh. */
static void test_forget (void **state)
{
    fx_t *fx = fx_flat (6, NULL);
    nodefault_t f = {
        .node = 2, .side = FM_SIDE_BOTH, .loss = 0.2, .from = 8, .until = 1000};
    int64_t w = 0;

    for (; w < 12; w++) {
        window (fx->sc, fx->topo, w, node_fault, &f);
    }
    assert_int_equal (node_state (fx, 2), FM_STATE_FAILED);
    assert_int_equal (fm_score_forget (fx->sc, FM_ELEM_NODE, 2), 0);
    assert_null (fm_score_find (fx->sc, FM_ELEM_NODE, 2));
    assert_int_equal (fm_score_node_clean (fx->sc, 2), 0);
    /* the fault is still there: failed again after persist_windows */
    for (int i = 0; i < fx->p.persist_windows; i++) {
        window (fx->sc, fx->topo, w++, node_fault, &f);
    }
    assert_int_equal (node_state (fx, 2), FM_STATE_FAILED);
    /* cleared and forgotten: clean from the first window on */
    f.until = w;
    assert_int_equal (fm_score_forget (fx->sc, FM_ELEM_NODE, 2), 0);
    window (fx->sc, fx->topo, w++, node_fault, &f);
    window (fx->sc, fx->topo, w++, node_fault, &f);
    assert_int_equal (node_state (fx, 2), FM_STATE_HEALTHY);
    assert_int_equal (fm_score_node_clean (fx->sc, 2), 2);
    assert_int_equal (fm_score_forget (fx->sc, FM_ELEM_NODE, 99), -1);
    assert_int_equal (fm_score_forget (NULL, FM_ELEM_NODE, 1), -1);
    fx_free (fx);
}

/* A plan that rotates its pairs (doc/plan.md): each node probes one peer,
 * another every 10 windows. The pairs of past epochs are forgotten, and a
 * fault is still found on the pairs of the present one.
 */
static void test_rotation (void **state)
{
    int n = 40;
    fx_t *fx = fx_flat (n, NULL);
    int64_t w;

    for (w = 0; w < 400; w++) {
        int64_t e = w / 10;
        for (int s = 0; s < n; s++) {
            int d = (int)((s + 1 + e) % (n - 1));
            d = d >= s ? d + 1 : d;
            bool hit = w >= 380 && (d == 7 || s == 7);
            fm_link_window_t r = {
                .job_id = 1,
                .src = s,
                .dst = d,
                .via = -1,
                .start_ns = w * W_NS,
                .end_ns = (w + 1) * W_NS,
                .sent = PROBES,
                .received = hit ? PROBES - 10 : PROBES,
                .owd_p50_ns = 3000,
                .owd_p99_ns = 5000,
                .rtt_p50_ns = 7000,
                .loop_residual_ns = FM_SCORE_NONE,
            };
            assert_int_equal (fm_score_add_link (fx->sc, &r), 0);
        }
        assert_int_equal (fm_score_close_window (fx->sc, (w + 1) * W_NS), 0);
    }
    /* 40 epochs of 40 pairs; kept: at most (120 + 32) / 10 + 1 epochs' worth */
    assert_true (fm_score_nflows (fx->sc) <= (size_t)n * 17);
    assert_true (fm_score_nflows (fx->sc) >= (size_t)n * 12);
    assert_int_equal (node_state (fx, 7), FM_STATE_FAILED);
    assert_int_equal (node_state (fx, 8), FM_STATE_HEALTHY);
    fx_free (fx);
}

static void test_invalid (void **state)
{
    fx_t *fx = fx_flat (4, NULL);
    fm_link_window_t ok = {
        .src = 0,
        .dst = 1,
        .via = -1,
        .start_ns = 0,
        .end_ns = W_NS,
        .sent = 10,
        .received = 10,
        .owd_p50_ns = 100,
        .owd_p99_ns = 200,
        .rtt_p50_ns = 300,
        .loop_residual_ns = FM_SCORE_NONE,
    };
    fm_link_window_t r;

    assert_int_equal (fm_score_add_link (fx->sc, &ok), 0);
    r = ok, r.dst = 0;
    assert_int_equal (fm_score_add_link (fx->sc, &r), -1);
    assert_int_equal (errno, EINVAL);
    r = ok, r.dst = 9;
    assert_int_equal (fm_score_add_link (fx->sc, &r), -1);
    r = ok, r.received = 11;
    assert_int_equal (fm_score_add_link (fx->sc, &r), -1);
    r = ok, r.end_ns = 0;
    assert_int_equal (fm_score_add_link (fx->sc, &r), -1);
    r = ok, r.via = 0; /* flat: there is no spine 0 */
    assert_int_equal (fm_score_add_link (fx->sc, &r), -1);
    r = ok, r.rtt_p50_ns = -5;
    assert_int_equal (fm_score_add_link (fx->sc, &r), -1);
    assert_int_equal (fm_score_add_link (NULL, &ok), -1);
    fm_health_event_t he = {.node = 7, .kind = FM_HEALTH_LINK_DOWN};
    assert_int_equal (fm_score_add_health (fx->sc, &he), -1);
    he.node = 1;
    he.kind = (fm_health_kind_t)99;
    assert_int_equal (fm_score_add_health (fx->sc, &he), -1);
    assert_int_equal (fm_score_close_window (fx->sc, W_NS), 0);
    assert_int_equal (fm_score_close_window (fx->sc, W_NS), -1);
    assert_int_equal (errno, EINVAL);
    fm_score_params_t p;
    fm_score_params_default (&p);
    p.decay = 1.0;
    assert_null (fm_score_create (fx->topo, &p));
    fm_score_params_default (&p);
    p.persist_windows = 0;
    assert_null (fm_score_create (fx->topo, &p));
    assert_null (fm_score_create (NULL, &p));
    fm_score_destroy (NULL);
    assert_string_equal (fm_score_state_name (FM_STATE_DEGRADED), "degraded");
    fx_free (fx);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_noise),
        cmocka_unit_test (test_states),
        cmocka_unit_test (test_persistence),
        cmocka_unit_test (test_delay),
        cmocka_unit_test (test_residual),
        cmocka_unit_test (test_one_peer),
        cmocka_unit_test (test_health),
        cmocka_unit_test (test_flap),
        cmocka_unit_test (test_nic_vs_uplink),
        cmocka_unit_test (test_forget),
        cmocka_unit_test (test_rotation),
        cmocka_unit_test (test_invalid),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
