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

/* What every request handler needs; owned by main.c (or a test). */
typedef struct {
    fm_store_t *store;
    fm_auth_t *auth;
    fm_metrics_t *metrics;
    int64_t start_real_ns;
    int64_t start_mono_ns;
    int64_t max_body;
    int64_t retention_ns;
    int64_t window_ns;
    bool metrics_public;
    bool insecure;
} fm_daemon_t;

#endif /* FM_DAEMON_H */
