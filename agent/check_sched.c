/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "check_sched.h"

const char *fm_check_sched_mode_name (fm_check_mode_t mode)
{
    return mode == FM_CHECK_FULL ? "full" : "quick";
}

static void add (fm_check_pair_t *p, size_t *n, uint32_t x, uint32_t y, uint32_t round)
{
    p[*n].a = x < y ? x : y;
    p[*n].b = x < y ? y : x;
    p[*n].round = round;
    (*n)++;
}

/* Every node meets both ring neighbours, so a bad node shows up in two pairs
 * while each of its neighbours has only one bad pair: enough to tell the
 * culprit apart (check_verdict.c) at O(n) cost.
 */
static size_t quick (fm_check_pair_t *p, uint32_t n, uint32_t *nrounds)
{
    size_t k = 0;

    if (n == 2) {
        add (p, &k, 0, 1, 0);
        *nrounds = 1;
        return k;
    }
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        add (p, &k, i, i + 1, 0);
    }
    for (uint32_t i = 1; i + 1 < n; i += 2) {
        add (p, &k, i, i + 1, 1);
    }
    /* the closing edge (n-1, 0): with n even n-1 is odd and 0 is free in
     * round 1; with n odd both ends are busy in rounds 0 and 1
     */
    add (p, &k, n - 1, 0, n % 2 == 0 ? 1 : 2);
    *nrounds = n % 2 == 0 ? 2 : 3;
    return k;
}

/* The circle method: rank m-1 stays put, the others rotate; with n odd a
 * dummy rank m-1 = n gives each round one bye.
 */
static size_t full (fm_check_pair_t *p, uint32_t n, uint32_t *nrounds)
{
    uint32_t m = n % 2 == 0 ? n : n + 1;
    size_t k = 0;

    for (uint32_t r = 0; r < m - 1; r++) {
        if (m - 1 < n) {
            add (p, &k, r, m - 1, r);
        }
        for (uint32_t j = 1; j < m / 2; j++) {
            add (p, &k, (r + j) % (m - 1), (r + (m - 1) - j) % (m - 1), r);
        }
    }
    *nrounds = m - 1;
    return k;
}

int fm_check_sched_schedule (fm_check_mode_t mode,
                             uint32_t n,
                             fm_check_pair_t **pairs,
                             size_t *npairs,
                             uint32_t *nrounds)
{
    size_t cap;
    fm_check_pair_t *p;

    if (n < 2 || (mode == FM_CHECK_QUICK && n > FM_CHECK_NODES_MAX)
        || (mode == FM_CHECK_FULL && n > FM_CHECK_FULL_MAX)) {
        errno = EINVAL;
        return -1;
    }
    cap = mode == FM_CHECK_FULL ? (size_t)n * (n - 1) / 2 : n;
    if (!(p = calloc (cap, sizeof (*p)))) {
        return -1;
    }
    *npairs = mode == FM_CHECK_FULL ? full (p, n, nrounds) : quick (p, n, nrounds);
    *pairs = p;
    return 0;
}
