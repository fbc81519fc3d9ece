/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_FMTIME_H
#define FM_FMTIME_H

#include <stdint.h>
#include <time.h>

#define FM_NSEC_PER_SEC 1000000000LL

/* CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds. */
int64_t fm_time_mono_ns (void);
int64_t fm_time_real_ns (void);

int64_t fm_time_from_timespec (const struct timespec *ts);
struct timespec fm_time_to_timespec (int64_t ns);

/* Format ns as RFC 3339 UTC with microseconds ("2026-12-02T14:52:24.123456Z").
 * Returns buf, or NULL/ERANGE when len is too small.
 */
char *fm_time_format_rfc3339 (int64_t real_ns, char *buf, size_t len);

#endif /* FM_FMTIME_H */
