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

#include "plan.h"

/* "n0".."n{N-1}" and a leafspine text of `leaves` blocks under `spines`. */
typedef struct {
    size_t n;
    char **names;
    fm_topo_t *topo;
} job_t;

static void job_make (job_t *j, const int *leaf_sizes, int leaves, int spines)
{
    size_t cap = 256 + (size_t)leaves * 64 + (size_t)spines * 64;
    char *text = calloc (1, cap);
    size_t used = 0, n = 0;
    fm_error_t err;

    for (int l = 0; l < leaves; l++) {
        n += (size_t)leaf_sizes[l];
    }
    j->n = n;
    j->names = calloc (n, sizeof (*j->names));
    assert_non_null (text);
    assert_non_null (j->names);
    n = 0;
    for (int l = 0; l < leaves; l++) {
        used += (size_t)snprintf (text + used,
                                  cap - used,
                                  "SwitchName=leaf%d Nodes=n[%zu-%zu]\n",
                                  l,
                                  n,
                                  n + (size_t)leaf_sizes[l] - 1);
        for (int k = 0; k < leaf_sizes[l]; k++, n++) {
            assert_true (asprintf (&j->names[n], "n%zu", n) > 0);
        }
    }
    for (int s = 0; spines > 0 && s < spines; s++) {
        used += (size_t)snprintf (text + used,
                                  cap - used,
                                  "SwitchName=spine%d Switches=leaf[0-%d]\n",
                                  s,
                                  leaves - 1);
    }
    j->topo = leaves > 0 ? fm_topo_parse (text, &err) : NULL;
    if (leaves > 0 && !j->topo) {
        fail_msg ("topology: %s", err.text);
    }
    free (text);
}

static void job_flat (job_t *j, size_t n)
{
    j->n = n;
    j->names = calloc (n, sizeof (*j->names));
    assert_non_null (j->names);
    for (size_t i = 0; i < n; i++) {
        assert_true (asprintf (&j->names[i], "n%zu", i) > 0);
    }
    j->topo = NULL;
}

static void job_free (job_t *j)
{
    for (size_t i = 0; i < j->n; i++) {
        free (j->names[i]);
    }
    free (j->names);
    fm_topo_destroy (j->topo);
}

static fm_plan_t *plan_of (const job_t *j, const fm_plan_params_t *p)
{
    fm_error_t err;
    fm_plan_t *pl =
        fm_plan_create (j->topo, (const char *const *)j->names, j->n, p, &err);

    if (!pl) {
        fail_msg ("plan: %s", err.text);
    }
    return pl;
}

/* Targets are distinct, not self, at most peers; probers mirror them. */
static void check_edges (const fm_plan_t *pl, size_t maxout)
{
    size_t n = fm_plan_nnodes (pl), sum_t = 0, sum_p = 0;

    for (size_t i = 0; i < n; i++) {
        const uint32_t *t;
        size_t k = fm_plan_targets (pl, i, &t);
        assert_true (k <= maxout);
        assert_true (k >= 1);
        sum_t += k;
        for (size_t a = 0; a < k; a++) {
            assert_true (t[a] < n);
            assert_int_not_equal (t[a], i);
            for (size_t b = a + 1; b < k; b++) {
                assert_int_not_equal (t[a], t[b]);
            }
            const uint32_t *pv;
            size_t np = fm_plan_probers (pl, t[a], &pv);
            bool found = false;
            for (size_t q = 0; q < np && !found; q++) {
                found = pv[q] == i;
            }
            assert_true (found);
        }
        const uint32_t *pv;
        sum_p += fm_plan_probers (pl, i, &pv);
        /* the clock parent is probed */
        int parent = fm_plan_parent (pl, i);
        if (i == 0) {
            assert_int_equal (parent, -1);
            assert_int_equal (fm_plan_depth (pl, i), 0);
        } else {
            bool found = false;
            assert_true (parent >= 0 && (size_t)parent < n);
            for (size_t a = 0; a < k && !found; a++) {
                found = t[a] == (uint32_t)parent;
            }
            assert_true (found);
            assert_int_equal (fm_plan_depth (pl, i), fm_plan_depth (pl, parent) + 1);
        }
    }
    assert_int_equal (sum_t, sum_p);
}

static size_t max_fanin (const fm_plan_t *pl)
{
    size_t m = 0;

    for (size_t i = 0; i < fm_plan_nnodes (pl); i++) {
        const uint32_t *pv;
        size_t k = fm_plan_probers (pl, i, &pv);
        m = k > m ? k : m;
    }
    return m;
}

/* From epoch e0, fm_plan_cycle() epochs probe every ordered pair. */
static void check_cycle (fm_plan_t *pl, uint64_t e0)
{
    size_t n = fm_plan_nnodes (pl);
    unsigned char *seen = calloc (n * n, 1);
    uint64_t c = fm_plan_cycle (pl);

    assert_non_null (seen);
    for (uint64_t e = e0; e < e0 + c; e++) {
        assert_int_equal (fm_plan_set_epoch (pl, e), 0);
        for (size_t i = 0; i < n; i++) {
            const uint32_t *t;
            size_t k = fm_plan_targets (pl, i, &t);
            for (size_t a = 0; a < k; a++) {
                seen[i * n + t[a]] = 1;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            if (i != j && !seen[i * n + j]) {
                fail_msg ("pair %zu -> %zu not probed in %llu epochs from %llu",
                          i,
                          j,
                          (unsigned long long)c,
                          (unsigned long long)e0);
            }
        }
    }
    free (seen);
}

static void test_all_pairs (void **state)
{
    job_t j;
    fm_plan_params_t p;

    fm_plan_params_default (&p);
    job_flat (&j, 17);
    fm_plan_t *pl = plan_of (&j, &p);
    for (size_t i = 0; i < 17; i++) {
        const uint32_t *t;
        assert_int_equal (fm_plan_targets (pl, i, &t), 16);
    }
    check_edges (pl, 16);
    assert_int_equal (fm_plan_cycle (pl), 1);
    fm_plan_destroy (pl);
    job_free (&j);
}

/* The minicluster's 8 leaves x 8 nodes under one spine. */
static void test_leafspine_64 (void **state)
{
    int sizes[8] = {8, 8, 8, 8, 8, 8, 8, 8};
    job_t j;
    fm_plan_params_t p;
    fm_plan_coverage_t c;
    fm_error_t err;

    fm_plan_params_default (&p);
    p.seed = 64;
    job_make (&j, sizes, 8, 1);
    fm_plan_t *pl = plan_of (&j, &p);
    check_edges (pl, p.peers);
    fm_plan_coverage (pl, &c);
    assert_int_equal (c.nuplinks, 8);
    assert_int_equal (c.nspines, 1);
    assert_true (c.uplink_min >= 3);
    assert_int_equal (fm_plan_check (pl, &err), 0);
    /* in its own leaf: the parent and up to 4 more */
    for (size_t i = 0; i < j.n; i++) {
        const uint32_t *t;
        size_t k = fm_plan_targets (pl, i, &t), local = 0;
        int li = fm_topo_node_leaf (j.topo, fm_topo_node_find (j.topo, j.names[i]));
        for (size_t a = 0; a < k; a++) {
            local +=
                fm_topo_node_leaf (j.topo, fm_topo_node_find (j.topo, j.names[t[a]]))
                == li;
        }
        assert_true (local <= p.local + 1 + p.rotate_cross);
        assert_true (k - local >= 3); /* across leaves */
    }
    /* fan-in: clock children (<= 2 fanout) + ring + cross slots */
    assert_true (max_fanin (pl) <= 2 * p.clock_fanout + 2 * p.peers + p.local);
    check_cycle (pl, 0);
    check_cycle (pl, 1234567);
    fm_plan_destroy (pl);
    job_free (&j);
}

static void test_deterministic (void **state)
{
    int sizes[5] = {7, 9, 3, 12, 1};
    job_t j;
    fm_plan_params_t p;

    fm_plan_params_default (&p);
    job_make (&j, sizes, 5, 2);
    p.seed = 7;
    fm_plan_t *a = plan_of (&j, &p), *b = plan_of (&j, &p);
    p.seed = 8;
    fm_plan_t *c = plan_of (&j, &p);
    bool differ = false;
    for (uint64_t e = 0; e < 3; e++) {
        assert_int_equal (fm_plan_set_epoch (a, e), 0);
        assert_int_equal (fm_plan_set_epoch (b, e), 0);
        assert_int_equal (fm_plan_set_epoch (c, e), 0);
        for (size_t i = 0; i < j.n; i++) {
            const uint32_t *ta, *tb, *tc;
            size_t ka = fm_plan_targets (a, i, &ta), kb = fm_plan_targets (b, i, &tb);
            size_t kc = fm_plan_targets (c, i, &tc);
            assert_int_equal (ka, kb);
            assert_memory_equal (ta, tb, ka * sizeof (*ta));
            differ |= ka != kc || memcmp (ta, tc, ka * sizeof (*ta)) != 0;
        }
        check_edges (a, p.peers);
    }
    assert_true (differ);
    /* unequal leaves, still every pair in time */
    check_cycle (a, 99);
    fm_plan_destroy (a);
    fm_plan_destroy (b);
    fm_plan_destroy (c);
    job_free (&j);
}

/* Without a topology: a random circulant of degree `peers`. */
static void test_flat (void **state)
{
    job_t j;
    fm_plan_params_t p;
    fm_plan_coverage_t c;

    fm_plan_params_default (&p);
    p.seed = 1;
    job_flat (&j, 1000);
    fm_plan_t *pl = plan_of (&j, &p);
    check_edges (pl, p.peers);
    for (size_t i = 1; i < j.n; i++) {
        const uint32_t *t;
        size_t k = fm_plan_targets (pl, i, &t);
        assert_true (k >= p.peers - 1);
    }
    /* ring in-degree peers - 1, plus clock children */
    assert_true (max_fanin (pl) <= p.peers - 1 + p.clock_fanout);
    /* 1000 nodes, fan-out 16: 1 + 16 + 256 + 4096 */
    unsigned depth = 0;
    for (size_t i = 0; i < j.n; i++) {
        depth = fm_plan_depth (pl, i) > depth ? fm_plan_depth (pl, i) : depth;
    }
    assert_int_equal (depth, 3);
    fm_plan_coverage (pl, &c);
    assert_int_equal (c.nuplinks, 0);
    /* 7 fixed offsets of 999, 2 rotating: (999 - 7) / 2 */
    assert_int_equal (fm_plan_cycle (pl), 496);
    check_cycle (pl, 5);
    fm_plan_destroy (pl);
    job_free (&j);
}

/* 16,384 nodes: 512 leaves of 32 under 16 spines (tests/sim/scale-16k.json). */
static void test_scale_16k (void **state)
{
    int *sizes = malloc (512 * sizeof (*sizes));
    job_t j;
    fm_plan_params_t p;
    fm_plan_coverage_t c;
    fm_error_t err;

    for (int l = 0; l < 512; l++) {
        sizes[l] = 32;
    }
    fm_plan_params_default (&p);
    job_make (&j, sizes, 512, 16);
    fm_plan_t *pl = plan_of (&j, &p);
    for (uint64_t e = 0; e < 4; e++) {
        assert_int_equal (fm_plan_set_epoch (pl, e * 1000), 0);
        check_edges (pl, p.peers);
        fm_plan_coverage (pl, &c);
        assert_int_equal (c.nuplinks, 512 * 16);
        assert_int_equal (c.nspines, 16);
        assert_true (c.uplink_min >= p.min_cover);
        assert_int_equal (fm_plan_check (pl, &err), 0);
        assert_true (max_fanin (pl) <= 2 * p.clock_fanout + 2 * p.peers + p.local);
    }
    unsigned depth = 0;
    for (size_t i = 0; i < j.n; i++) {
        depth = fm_plan_depth (pl, i) > depth ? fm_plan_depth (pl, i) : depth;
    }
    /* leaf references 3 deep (1 + 16 + 256 + ...), members 2 more */
    assert_true (depth <= 5);
    /* 2 rotating of the circulant's 16383 offsets */
    assert_int_equal (fm_plan_cycle (pl), 8192);
    fm_plan_destroy (pl);
    job_free (&j);
    free (sizes);
}

/* A leaf with one of the job's nodes under 8 spines cannot be covered. */
static void test_short_cover (void **state)
{
    int sizes[4] = {30, 30, 30, 1};
    job_t j;
    fm_plan_params_t p;
    fm_error_t err;

    fm_plan_params_default (&p);
    job_make (&j, sizes, 4, 8);
    fm_plan_t *pl = plan_of (&j, &p);
    assert_int_equal (fm_plan_check (pl, &err), -1);
    assert_int_equal (errno, ERANGE);
    assert_non_null (strstr (err.text, "leaf3-spine"));
    assert_non_null (strstr (err.text, "fewer than 3"));
    /* the lone node gets no more probers than any: one per slot */
    assert_true (max_fanin (pl) <= 2 * p.clock_fanout + 2 * p.peers + p.local);
    fm_plan_destroy (pl);
    job_free (&j);

    /* one node a leaf under 16 spines: more peers would do */
    int ones[40];
    for (int l = 0; l < 40; l++) {
        ones[l] = 1;
    }
    job_make (&j, ones, 40, 16);
    p.min_cover = 2;
    pl = plan_of (&j, &p);
    assert_int_equal (fm_plan_check (pl, &err), -1);
    assert_non_null (strstr (err.text, "peers per node would cover it"));
    fm_plan_destroy (pl);
    /* and with them it does */
    unsigned enough = 0;
    assert_int_equal (sscanf (strstr (err.text, "fewer than 2; ") + 14, "%u", &enough),
                      1);
    assert_true (enough > p.peers);
    p.peers = enough;
    pl = plan_of (&j, &p);
    assert_int_equal (fm_plan_check (pl, &err), 0);
    fm_plan_destroy (pl);
    job_free (&j);
}

static void test_errors (void **state)
{
    int sizes[2] = {10, 10};
    job_t j;
    fm_plan_params_t p;
    fm_error_t err;

    fm_plan_params_default (&p);
    job_make (&j, sizes, 2, 1);
    free (j.names[19]);
    j.names[19] = strdup ("elsewhere7");
    assert_null (fm_plan_create (j.topo, (const char *const *)j.names, j.n, &p, &err));
    assert_int_equal (errno, EINVAL);
    assert_non_null (strstr (err.text, "elsewhere7"));
    free (j.names[19]);
    j.names[19] = strdup ("n3");
    assert_null (fm_plan_create (NULL, (const char *const *)j.names, j.n, &p, &err));
    assert_int_equal (errno, EINVAL);
    assert_non_null (strstr (err.text, "n3 is listed twice"));
    p.peers = 2;
    assert_null (fm_plan_create (NULL, (const char *const *)j.names, j.n, &p, &err));
    assert_int_equal (errno, EINVAL);
    fm_plan_params_default (&p);
    p.local = p.peers - 1;
    assert_null (fm_plan_create (NULL, (const char *const *)j.names, j.n, &p, &err));
    assert_int_equal (errno, EINVAL);
    job_free (&j);

    fm_plan_params_default (&p);
    const char **many = calloc (FM_PLAN_MAX_NODES + 1, sizeof (*many));
    for (size_t i = 0; i < FM_PLAN_MAX_NODES + 1; i++) {
        many[i] = "x";
    }
    assert_null (fm_plan_create (NULL, many, FM_PLAN_MAX_NODES + 1, &p, &err));
    assert_int_equal (errno, E2BIG);
    assert_non_null (strstr (err.text, "at most 65535"));
    free (many);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_all_pairs),
        cmocka_unit_test (test_leafspine_64),
        cmocka_unit_test (test_deterministic),
        cmocka_unit_test (test_flat),
        cmocka_unit_test (test_scale_16k),
        cmocka_unit_test (test_short_cover),
        cmocka_unit_test (test_errors),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
