/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_HEALTH_MAP_H
#define FM_HEALTH_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "score.h"

/* The `class` values of gpu and xid health records (doc/health.md), by
 * severity, NULL-terminated.
 */
extern const char *const fm_health_map_class_names[];

/* Map one window's health array (fm_window_t.health_json: the compact JSON
 * array that report_parse.c validated) of node `node` at `at_ns` to scoring events
 * (doc/health.md "What fabricd makes of it"): at most cap into ev, their
 * number into *n. Records that mean nothing is wrong, and application-class
 * XIDs, give no event. Pure: no allocation survives the call.
 * 0, or -1/EINVAL when health_json is not a JSON array of typed records (ev
 * and *n are then unchanged), ENOMEM.
 */
int fm_health_map (const char *health_json,
                   int32_t node,
                   int64_t at_ns,
                   fm_health_event_t *ev,
                   size_t cap,
                   size_t *n);

#endif /* FM_HEALTH_MAP_H */
