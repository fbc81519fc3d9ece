/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

#define S 1000000000LL

static fm_policy_node_t failed (const char *name)
{
    return (fm_policy_node_t){
        .name = name,
        .leaf = "leaf0",
        .state = FM_STATE_FAILED,
        .cls = "loss",
        .evidence = "tx loss 2.10% (105/5000 probes) from 9 peers, 3 windows",
        .explain = "node:x: failed loss\n  window@...",
        .weight = 1,
    };
}

static fm_policy_node_t healthy (const char *name, int windows)
{
    return (fm_policy_node_t){.name = name,
                              .state = FM_STATE_HEALTHY,
                              .healthy_windows = windows,
                              .weight = 1};
}

static int decide (fm_policy_t *pol,
                   fm_policy_node_t *nodes,
                   size_t n,
                   const fm_policy_job_t *jobs,
                   size_t njobs,
                   int64_t now,
                   fm_policy_output_t *out)
{
    fm_policy_input_t in = {
        .nodes = nodes,
        .nnodes = n,
        .total_nodes = 100,
        .jobs = jobs,
        .njobs = njobs,
        .now_ns = now,
    };
    assert_int_equal (fm_policy_decide (pol, &in, out), 0);
    return (int)out->nactions;
}

static fm_policy_t *make (void (*tweak) (fm_policy_params_t *))
{
    fm_policy_params_t p;
    fm_policy_params_default (&p);
    if (tweak) {
        tweak (&p);
    }
    fm_policy_t *pol = fm_policy_create (&p);
    assert_non_null (pol);
    return pol;
}

/* Drain with our reason; not again; resume only after M healthy windows. */
static void test_drain_resume (void **state)
{
    fm_policy_t *pol = make (NULL);
    fm_policy_output_t out = {0};
    fm_policy_node_t n = failed ("n1");

    assert_int_equal (decide (pol, &n, 1, NULL, 0, 10 * S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_DRAIN);
    assert_string_equal (out.actions[0].node, "n1");
    assert_string_equal (out.actions[0].reason,
                         "fabric: loss: tx loss 2.10% (105/5000 probes) from 9 peers, "
                         "3 windows");
    assert_non_null (strstr (out.actions[0].explain, "window@"));
    assert_false (out.actions[0].dry_run);
    /* Slurm now shows it drained with our reason: nothing more to do */
    n.drained = true;
    n.reason = "fabric: loss: tx loss";
    assert_int_equal (decide (pol, &n, 1, NULL, 0, 15 * S, &out), 0);
    fm_policy_node_t h = healthy ("n1", 11);
    h.drained = true;
    h.reason = n.reason;
    assert_int_equal (decide (pol, &h, 1, NULL, 0, 20 * S, &out), 0);
    h.healthy_windows = 12;
    assert_int_equal (decide (pol, &h, 1, NULL, 0, 25 * S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_RESUME);
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

/* With validation in charge of resuming, the policy drains and restores
 * weights but never resumes a node it drained, however long it looks healthy.
 */
static void test_resume_by_validation (void **state)
{
    fm_policy_t *pol = make (NULL);
    fm_policy_output_t out = {0};
    fm_policy_node_t nodes[2] = {failed ("n1"), failed ("slow1")};
    fm_policy_input_t in = {
        .nodes = nodes,
        .nnodes = 2,
        .total_nodes = 100,
        .now_ns = 10 * S,
        .resume_by_validation = true,
    };

    nodes[1].state = FM_STATE_DEGRADED;
    nodes[1].cls = "delay";
    nodes[1].weight = 10;
    assert_int_equal (fm_policy_decide (pol, &in, &out), 0);
    assert_int_equal (out.nactions, 2);
    assert_int_equal (out.actions[0].kind, FM_ACT_DRAIN);
    assert_int_equal (out.actions[1].kind, FM_ACT_SET_WEIGHT);
    int64_t raised = out.actions[1].weight;
    nodes[0] = healthy ("n1", 1000);
    nodes[0].drained = true;
    nodes[0].reason = "fabric: loss: tx loss";
    nodes[1] = healthy ("slow1", 1000);
    nodes[1].weight = raised;
    in.now_ns = 20 * S;
    assert_int_equal (fm_policy_decide (pol, &in, &out), 0);
    assert_int_equal (out.nactions, 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_SET_WEIGHT);
    assert_string_equal (out.actions[0].node, "slow1");
    assert_int_equal (out.actions[0].weight, 10);
    /* the same node, the same windows: without validation it is resumed */
    in.now_ns = 30 * S;
    in.resume_by_validation = false;
    nodes[1].weight = 10;
    assert_int_equal (fm_policy_decide (pol, &in, &out), 0);
    assert_int_equal (out.nactions, 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_RESUME);
    assert_string_equal (out.actions[0].node, "n1");
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

/* Nodes drained or annotated by anyone else are never touched. */
static void test_foreign (void **state)
{
    fm_policy_t *pol = make (NULL);
    fm_policy_output_t out = {0};
    fm_policy_node_t nodes[4] = {
        failed ("a"), failed ("b"), healthy ("c", 100), healthy ("d", 100)};

    nodes[0].drained = true;
    nodes[0].reason = "NHC: check_fs_mount: /scratch";
    nodes[1].reason = "bad DIMM, ticket 4242"; /* a reason without a drain */
    nodes[2].drained = true;
    nodes[2].reason = "admin: maintenance";
    nodes[3].drained = true; /* drained, no reason, not by us */
    nodes[3].state = FM_STATE_DEGRADED;
    assert_int_equal (decide (pol, nodes, 4, NULL, 0, S, &out), 0);
    /* still untouched later */
    nodes[2].healthy_windows = 1000;
    assert_int_equal (decide (pol, nodes, 4, NULL, 0, 2 * S, &out), 0);
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

/* Resume only ours: a fabric reason on a node we drained, also after a restart. */
static void test_resume_only_ours (void **state)
{
    fm_policy_t *pol = make (NULL);
    fm_policy_output_t out = {0};
    fm_policy_node_t nodes[2] = {healthy ("ours", 50), healthy ("theirs", 50)};

    nodes[0].drained = true;
    nodes[0].reason = "fabric: down: link down";
    nodes[1].drained = true;
    nodes[1].reason = "fabricated: not our prefix";
    assert_int_equal (decide (pol, nodes, 2, NULL, 0, S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_RESUME);
    assert_string_equal (out.actions[0].node, "ours");
    assert_true (fm_policy_reason_ours ("fabric: x"));
    assert_false (fm_policy_reason_ours ("Fabric: x"));
    assert_false (fm_policy_reason_ours (NULL));
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

static void no_resume (fm_policy_params_t *p)
{
    p->auto_resume = false;
}

static void test_auto_resume_off (void **state)
{
    fm_policy_t *pol = make (no_resume);
    fm_policy_output_t out = {0};
    fm_policy_node_t h = healthy ("n1", 500);

    h.drained = true;
    h.reason = "fabric: loss: x";
    assert_int_equal (decide (pol, &h, 1, NULL, 0, S, &out), 0);
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

static void test_weight (void **state)
{
    fm_policy_t *pol = make (NULL);
    fm_policy_output_t out = {0};
    fm_policy_node_t n = failed ("slow1");

    n.state = FM_STATE_DEGRADED;
    n.cls = "delay";
    n.weight = 10;
    assert_int_equal (decide (pol, &n, 1, NULL, 0, S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_SET_WEIGHT);
    assert_int_equal (out.actions[0].weight, 1010);
    n.weight = 1010;
    assert_int_equal (decide (pol, &n, 1, NULL, 0, 2 * S, &out), 0); /* once */
    fm_policy_node_t h = healthy ("slow1", 3);
    h.weight = 1010;
    assert_int_equal (decide (pol, &h, 1, NULL, 0, 3 * S, &out), 0); /* not yet */
    h.healthy_windows = 12;
    assert_int_equal (decide (pol, &h, 1, NULL, 0, 4 * S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_SET_WEIGHT);
    assert_int_equal (out.actions[0].weight, 10);

    /* an admin changed the weight meanwhile: it stays */
    n.weight = 10;
    assert_int_equal (decide (pol, &n, 1, NULL, 0, 5 * S, &out), 1);
    h.weight = 77;
    assert_int_equal (decide (pol, &h, 1, NULL, 0, 6 * S, &out), 0);
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

/* Drain first, checkpoint notice, grace, then requeue. */
static void test_protect (void **state)
{
    fm_policy_t *pol = make (NULL);
    fm_policy_output_t out = {0};
    fm_policy_node_t n = failed ("g7");
    const char *nodes1[] = {"g6", "g7"};
    const char *nodes2[] = {"g7"};
    fm_policy_job_t jobs[3] = {
        {.job_id = 101, .nodes = nodes1, .nnodes = 2, .protect = true},
        {.job_id = 102, .nodes = nodes2, .nnodes = 1, .protect = false},
        {.job_id = 103, .nodes = nodes2, .nnodes = 1, .protect = true},
    };

    assert_int_equal (decide (pol, &n, 1, jobs, 3, 100 * S, &out), 3);
    assert_int_equal (out.actions[0].kind, FM_ACT_DRAIN);
    assert_int_equal (out.actions[1].kind, FM_ACT_SIGNAL);
    assert_int_equal (out.actions[1].job_id, 101);
    assert_int_equal (out.actions[1].signal, SIGUSR1);
    assert_int_equal (out.actions[2].kind, FM_ACT_SIGNAL);
    assert_int_equal (out.actions[2].job_id, 103);
    n.drained = true;
    n.reason = "fabric: loss: x";
    /* within the grace period: nothing */
    assert_int_equal (decide (pol, &n, 1, jobs, 3, 219 * S, &out), 0);
    /* job 103 requeued itself; 101 did not */
    jobs[2].requeued = true;
    assert_int_equal (decide (pol, &n, 1, jobs, 3, 220 * S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_REQUEUE);
    assert_int_equal (out.actions[0].job_id, 101);
    assert_int_equal (decide (pol, &n, 1, jobs, 3, 230 * S, &out), 0); /* once */
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

/* Actions the backend could not carry out are decided again, once each. */
static void test_action_failed (void **state)
{
    fm_policy_t *pol = make (NULL);
    fm_policy_output_t out = {0};
    fm_policy_node_t n = failed ("f1");
    const char *nodes[] = {"f1"};
    fm_policy_job_t job = {.job_id = 9, .nodes = nodes, .nnodes = 1, .protect = true};
    fm_action_t drain, sig, req;

    assert_int_equal (decide (pol, &n, 1, &job, 1, 10 * S, &out), 2);
    drain = out.actions[0];
    sig = out.actions[1];
    assert_int_equal (drain.kind, FM_ACT_DRAIN);
    assert_int_equal (sig.kind, FM_ACT_SIGNAL);
    /* slurmctld was down: both are retried, and count once against the hour */
    assert_int_equal (fm_policy_action_failed (pol, &drain), 0);
    assert_int_equal (fm_policy_action_failed (pol, &sig), 0);
    assert_int_equal (decide (pol, &n, 1, &job, 1, 15 * S, &out), 2);
    assert_int_equal (out.actions[0].kind, FM_ACT_DRAIN);
    assert_int_equal (out.actions[1].kind, FM_ACT_SIGNAL);
    /* applied now: not decided a third time */
    n.drained = true;
    n.reason = "fabric: loss: x";
    assert_int_equal (decide (pol, &n, 1, &job, 1, 20 * S, &out), 0);
    /* the requeue after the grace fails once, then is made again */
    assert_int_equal (decide (pol, &n, 1, &job, 1, 140 * S, &out), 1);
    req = out.actions[0];
    assert_int_equal (req.kind, FM_ACT_REQUEUE);
    assert_int_equal (fm_policy_action_failed (pol, &req), 0);
    assert_int_equal (decide (pol, &n, 1, &job, 1, 145 * S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_REQUEUE);
    assert_int_equal (decide (pol, &n, 1, &job, 1, 150 * S, &out), 0);
    /* a failed resume is retried while the node stays healthy */
    fm_policy_node_t h = healthy ("f1", 12);
    h.drained = true;
    h.reason = n.reason;
    job.requeued = true;
    assert_int_equal (decide (pol, &h, 1, &job, 1, 160 * S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_RESUME);
    assert_int_equal (fm_policy_action_failed (pol, &out.actions[0]), 0);
    assert_int_equal (decide (pol, &h, 1, &job, 1, 165 * S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_RESUME);
    assert_int_equal (fm_policy_action_failed (NULL, &req), -1);
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

/* Blast radius: at most 2% of 100 nodes; then alarms and the shared switch. */
static void test_blast_fraction (void **state)
{
    fm_policy_t *pol = make (NULL);
    fm_policy_output_t out = {0};
    fm_policy_node_t n[4] = {failed ("a"), failed ("b"), failed ("c"), failed ("d")};
    const char *names[] = {"a", "b", "c", "d"};

    for (int i = 0; i < 4; i++) {
        n[i].name = names[i];
    }
    assert_int_equal (decide (pol, n, 4, NULL, 0, S, &out), 2);
    assert_int_equal (out.actions[0].kind, FM_ACT_DRAIN);
    assert_int_equal (out.actions[1].kind, FM_ACT_DRAIN);
    assert_int_equal (out.nalarms, 3);
    assert_non_null (strstr (out.alarms[0].text, "max_drain_fraction"));
    assert_string_equal (out.alarms[0].element, "node:c");
    assert_string_equal (out.alarms[2].element, "switch:leaf0");
    assert_non_null (strstr (out.alarms[2].text, "4 failing nodes share switch leaf0"));
    /* alarms are not repeated every window */
    assert_int_equal (decide (pol, n, 4, NULL, 0, 2 * S, &out), 0);
    assert_int_equal (out.nalarms, 0);
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

static void per_hour (fm_policy_params_t *p)
{
    p->max_drain_fraction = 1.0;
    p->max_drains_per_hour = 2;
}

static void test_blast_hour (void **state)
{
    fm_policy_t *pol = make (per_hour);
    fm_policy_output_t out = {0};
    fm_policy_node_t a = failed ("a"), b = failed ("b"), c = failed ("c");

    assert_int_equal (decide (pol, &a, 1, NULL, 0, S, &out), 1);
    assert_int_equal (decide (pol, &b, 1, NULL, 0, 2 * S, &out), 1);
    assert_int_equal (decide (pol, &c, 1, NULL, 0, 3 * S, &out), 0);
    assert_int_equal (out.nalarms, 1);
    assert_non_null (strstr (out.alarms[0].text, "max_drains_per_hour"));
    /* an hour after the first drain there is room again */
    assert_int_equal (decide (pol, &c, 1, NULL, 0, 3602 * S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_DRAIN);
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

static void dry (fm_policy_params_t *p)
{
    p->dry_run = true;
}

static void test_dry_run (void **state)
{
    fm_policy_t *pol = make (dry);
    fm_policy_output_t out = {0};
    fm_policy_node_t n = failed ("n1");

    assert_int_equal (decide (pol, &n, 1, NULL, 0, S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_DRAIN);
    assert_true (out.actions[0].dry_run);
    /* Slurm still shows it up: remembered as if drained, not repeated */
    assert_int_equal (decide (pol, &n, 1, NULL, 0, 2 * S, &out), 0);
    fm_policy_node_t h = healthy ("n1", 12);
    assert_int_equal (decide (pol, &h, 1, NULL, 0, 3 * S, &out), 1);
    assert_int_equal (out.actions[0].kind, FM_ACT_RESUME);
    assert_true (out.actions[0].dry_run);
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

static void test_elements (void **state)
{
    fm_policy_t *pol = make (NULL);
    fm_policy_output_t out = {0};
    fm_policy_elem_t e = {"switch:leaf7", FM_STATE_FAILED, "both down 100%"};
    fm_policy_input_t in = {.elems = &e, .nelems = 1, .total_nodes = 10, .now_ns = S};

    assert_int_equal (fm_policy_decide (pol, &in, &out), 0);
    assert_int_equal (out.nactions, 0);
    assert_int_equal (out.nalarms, 1);
    assert_string_equal (out.alarms[0].element, "switch:leaf7");
    in.now_ns = 2 * S;
    assert_int_equal (fm_policy_decide (pol, &in, &out), 0);
    assert_int_equal (out.nalarms, 0); /* same episode */
    in.nelems = 0;
    in.now_ns = 3 * S;
    assert_int_equal (fm_policy_decide (pol, &in, &out), 0);
    in.nelems = 1;
    in.now_ns = 4 * S;
    assert_int_equal (fm_policy_decide (pol, &in, &out), 0);
    assert_int_equal (out.nalarms, 1); /* a new episode */
    fm_policy_output_free (&out);
    fm_policy_destroy (pol);
}

static void test_invalid (void **state)
{
    fm_policy_t *pol = make (NULL);
    fm_policy_output_t out = {0};
    fm_policy_node_t n = failed (NULL);
    fm_policy_input_t in = {.nodes = &n, .nnodes = 1, .now_ns = 10 * S};

    assert_int_equal (fm_policy_decide (pol, &in, &out), -1);
    assert_int_equal (errno, EINVAL);
    n.name = "ok";
    assert_int_equal (fm_policy_decide (pol, &in, &out), 0);
    in.now_ns = 5 * S;
    assert_int_equal (fm_policy_decide (pol, &in, &out), -1);
    assert_int_equal (fm_policy_decide (NULL, &in, &out), -1);
    fm_policy_params_t p;
    fm_policy_params_default (&p);
    p.max_drain_fraction = 2;
    assert_null (fm_policy_create (&p));
    fm_policy_params_default (&p);
    p.protect_signal = 0;
    assert_null (fm_policy_create (&p));
    assert_null (fm_policy_create (NULL));
    fm_policy_destroy (NULL);
    fm_policy_output_free (NULL);
    fm_policy_output_free (&out);
    assert_string_equal (fm_policy_action_name (FM_ACT_REQUEUE), "requeue");
    fm_policy_destroy (pol);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_drain_resume),
        cmocka_unit_test (test_foreign),
        cmocka_unit_test (test_resume_only_ours),
        cmocka_unit_test (test_auto_resume_off),
        cmocka_unit_test (test_resume_by_validation),
        cmocka_unit_test (test_weight),
        cmocka_unit_test (test_protect),
        cmocka_unit_test (test_action_failed),
        cmocka_unit_test (test_blast_fraction),
        cmocka_unit_test (test_blast_hour),
        cmocka_unit_test (test_dry_run),
        cmocka_unit_test (test_elements),
        cmocka_unit_test (test_invalid),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
