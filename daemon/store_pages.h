/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_STORE_PAGES_H
#define FM_STORE_PAGES_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "store.h"

/* Store reads that only the HTML pages (webpage.h) need. */

typedef struct {
    char node[64];
    int64_t end_ns;   /* the latest window end of the bucket */
    int64_t error_ns; /* the largest clock error bound of the bucket */
} fm_clock_point_t;

/* The clock error bound of each node of job_id over the job's windows that
 * carry a clock estimate, in at most `buckets` time buckets per node (each
 * the largest bound of its windows, so that a spike is never averaged away),
 * ordered by node then time; at most max_points in all. malloc'd into *pts;
 * *n may be 0. -1/ENOTSUP for a backend without it.
 */
int fm_store_pages_clock_series (fm_store_t *st,
                                 int64_t job_id,
                                 size_t buckets,
                                 size_t max_points,
                                 fm_clock_point_t **pts,
                                 size_t *n,
                                 fm_error_t *err);

#endif /* FM_STORE_PAGES_H */
