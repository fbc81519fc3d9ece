/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CHECK_SCHED_H
#define FM_CHECK_SCHED_H

#include <stddef.h>
#include <stdint.h>

/* Which pairs of ranks fabric-check tests, and in which round. */
typedef enum {
    FM_CHECK_QUICK, /* the ring: even/odd pairs, then odd/even pairs */
    FM_CHECK_FULL,  /* every pair (round-robin tournament) */
} fm_check_mode_t;

#define FM_CHECK_NODES_MAX 4096 /* quick */
#define FM_CHECK_FULL_MAX 128   /* full: n-1 rounds, n(n-1)/2 pairs */

typedef struct {
    uint32_t a;     /* lower rank: connects and measures */
    uint32_t b;     /* higher rank: accepts and echoes */
    uint32_t round; /* no rank appears twice in one round */
} fm_check_pair_t;

const char *fm_check_sched_mode_name (fm_check_mode_t mode);

/* The schedule for n ranks, sorted by round. quick: the n ring pairs (i, i+1
 * mod n) in 2 rounds (3 when n is odd), one pair for n = 2; full: all
 * n(n-1)/2 pairs in n-1 rounds (n when n is odd). *pairs is malloc'd.
 * -1/EINVAL when n < 2 or above the mode's maximum, -1/ENOMEM.
 */
int fm_check_sched_schedule (fm_check_mode_t mode,
                             uint32_t n,
                             fm_check_pair_t **pairs,
                             size_t *npairs,
                             uint32_t *nrounds);

#endif /* FM_CHECK_SCHED_H */
