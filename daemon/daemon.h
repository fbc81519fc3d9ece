/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_DAEMON_H
#define FM_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "metrics.h"
#include "store.h"

typedef struct fm_monitor fm_monitor_t;
typedef struct fm_checks fm_checks_t;
typedef struct fm_jobplan fm_jobplan_t;

/* What every request handler needs; owned by main.c (or a test). */
typedef struct {
    fm_store_t *store;
    fm_auth_t *auth;
    fm_metrics_t *metrics;
    fm_monitor_t *monitor; /* NULL when the fabric loop is not running */
    fm_checks_t *checks;   /* fabric-check results (checks.h); NULL: none kept */
    fm_jobplan_t *plans;   /* probe plans (jobplan.h); NULL: agents get all peers */
    int64_t start_real_ns;
    int64_t start_mono_ns;
    int64_t max_body;
    int64_t retention_ns;
    int64_t window_ns;
    int64_t plan_epoch_ns; /* probe plan rotation (plan_epoch); 0: none */
    bool metrics_public;
    size_t metrics_links; /* per-link series in /metrics: the worst this many */
    bool pages_public; /* serve / and /jobs/{id} without a credential */
    bool insecure;
} fm_daemon_t;

#endif /* FM_DAEMON_H */
