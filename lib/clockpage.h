/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CLOCKPAGE_H
#define FM_CLOCKPAGE_H

/* The job timeline page: its layout (shared with libfmclock, lib/fmclock.c)
 * and the writer side, used by the agent. One writer per page; any number of
 * readers. Concurrency is a seqlock: the writer makes seq odd, stores the
 * record, makes seq even again; a reader copies the record between two
 * loads of seq and retries unless both are the same even value. Every field
 * is accessed with atomic builtins, so no access is a data race.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "error.h"

#define FM_CLOCKPAGE_MAGIC 0x464d434bu /* "FMCK" */
#define FM_CLOCKPAGE_VERSION 1u
#define FM_CLOCKPAGE_SHM_PREFIX "/fabric-monitor-clock."
#define FM_CLOCKPAGE_JOB_MAX 64

enum {
    FM_CLOCKPAGE_VALID = 1,
};

/* Fixed-width fields only, 8-byte aligned: the layout is the ABI between
 * the agent and libfmclock readers of the same version.
 */
struct fm_clockpage_layout {
    uint32_t magic;
    uint32_t version;
    uint32_t size; /* sizeof (struct fm_clockpage_layout) */
    uint32_t seq;
    uint32_t flags;
    uint32_t ref_node;
    uint64_t generation;
    int64_t epoch_ns;
    int64_t offset_ns;
    uint64_t drift_bits; /* a double, ppb */
    int64_t bound_ns;
    int64_t bound_rate_ppb;
    int64_t ref_epoch_ns;
    int64_t valid_until_ns;
};

/* The shared-memory name for a job id, or the path itself when it starts with
 * '/' and has a further '/' (a file; shm names have exactly one, leading).
 * 0, or -1 when the id or path is malformed or does not fit.
 */
static inline int
fm_clockpage_name (const char *job, char *buf, size_t len, bool *is_path)
{
    size_t n;

    if (!job || !buf) {
        return -1;
    }
    n = strlen (job);
    if (job[0] == '/') {
        if (!strchr (job + 1, '/') || n >= len) {
            return -1;
        }
        memcpy (buf, job, n + 1);
        *is_path = true;
        return 0;
    }
    if (n == 0 || n > FM_CLOCKPAGE_JOB_MAX || job[0] == '.'
        || sizeof (FM_CLOCKPAGE_SHM_PREFIX) + n > len) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char c = job[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
              || c == '_' || c == '.' || c == '-')) {
            return -1;
        }
    }
    memcpy (buf, FM_CLOCKPAGE_SHM_PREFIX, sizeof (FM_CLOCKPAGE_SHM_PREFIX) - 1);
    memcpy (buf + sizeof (FM_CLOCKPAGE_SHM_PREFIX) - 1, job, n + 1);
    *is_path = false;
    return 0;
}

/* What the writer publishes; the fields as in fm_clock_info_t
 * (include/fm/clock.h). Times are host CLOCK_REALTIME: a writer running on a
 * virtual clock folds it into offset and drift first.
 */
typedef struct {
    bool valid;
    uint32_t ref_node;
    int64_t epoch_ns;
    int64_t offset_ns;
    double drift_ppb;
    int64_t bound_ns;
    int64_t bound_rate_ppb;
    int64_t ref_epoch_ns;
    int64_t valid_until_ns;
} fm_clockpage_data_t;

typedef struct fm_clockpage fm_clockpage_t;

/* Create (or take over, when it is a regular file of ours) the page for job
 * (a job id or a path, as fm_clock_open takes), mode 0644, initialised
 * invalid. NULL with errno and err: EINVAL, EEXIST (a page of someone else's
 * is in the way), or what shm_open/open/ftruncate/mmap failed with.
 */
fm_clockpage_t *fm_clockpage_create (const char *job, fm_error_t *err);

/* Publish one record (generation counts up). -1/EINVAL on bad arguments: a
 * negative bound or bound rate, |drift| over 1e9 ppb or not a number, or a
 * valid record whose valid_until_ns is not after its epoch.
 */
int fm_clockpage_publish (fm_clockpage_t *pg, const fm_clockpage_data_t *d);

/* Mark the page invalid (readers get EAGAIN) without other changes. */
int fm_clockpage_invalidate (fm_clockpage_t *pg);

/* Unmap and close; with unlink, also remove the name. NULL-safe, keeps errno. */
void fm_clockpage_destroy (fm_clockpage_t *pg, bool unlink);

#endif /* FM_CLOCKPAGE_H */
