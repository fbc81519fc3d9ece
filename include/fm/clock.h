/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CLOCK_PUBLIC_H
#define FM_CLOCK_PUBLIC_H

/* libfmclock: read the job's synchronised timeline on any node of the job.
 *
 * The fabric-monitor agent of a job publishes, in a shared-memory page, how
 * this host's clock (CLOCK_REALTIME) maps to the job's reference timeline and
 * how far that mapping may be off. Any process can read "job time now" with
 * its error bound, lock-free and without a system call beyond clock_gettime:
 *
 *     fm_clock_t *clk = fm_clock_open (getenv ("SLURM_JOB_ID"));
 *     struct timespec t;
 *     uint64_t bound;
 *     if (clk && fm_clock_now (clk, &t, &bound) == 0)
 *         ... t is job time, true job time is within t +- bound ns ...
 *     fm_clock_close (clk);
 *
 * Job time counts nanoseconds like CLOCK_REALTIME (same epoch, same units);
 * at every instant all nodes of the job agree on it to within the bounds they
 * report. The agent never steps or slews the host clock. Link with -lfmclock.
 * A handle may be shared by threads; fm_clock_close must come after the last
 * use.
 */

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* declared here too: strict ISO C modes do not get it from <time.h> */
struct timespec;

typedef struct fm_clock fm_clock_t;

/* A consistent snapshot of what the agent published. */
typedef struct {
    bool valid;             /* the agent has an estimate it stands behind */
    uint32_t ref_node;      /* the job node whose clock is the reference */
    uint64_t generation;    /* counts publications */
    int64_t epoch_ns;       /* host CLOCK_REALTIME at which the rest holds */
    int64_t offset_ns;      /* job time - host time at epoch_ns */
    double drift_ppb;       /* d(job time - host time) / d host time, ppb */
    int64_t bound_ns;       /* error bound at epoch_ns */
    int64_t bound_rate_ppb; /* the bound grows this fast away from epoch_ns */
    int64_t ref_epoch_ns;   /* job time at which the job's timeline began */
    int64_t valid_until_ns; /* host time after which the data are stale */
} fm_clock_info_t;

/* Open the timeline of a job: job is a Slurm job id ("1234", "1234_7"; at
 * most 64 characters of [A-Za-z0-9_.-]) naming the shared-memory object the
 * agent creates, or an absolute path to a page file. The page must be a
 * regular file not writable by group or others, owned by root or the caller.
 * NULL with errno: EINVAL (bad name), ENOENT (no agent publishes for this
 * job on this node), EACCES/EPERM (unsafe page), EPROTO (not a page of a
 * version this library reads), ENOMEM.
 */
fm_clock_t *fm_clock_open (const char *job);

/* Job time now and its bound (either pointer may be NULL). 0 on success;
 * -1 with errno EAGAIN (the agent has no valid estimate yet, or a write never
 * finished), ESTALE (the agent stopped refreshing: data past valid_until),
 * EPROTO (the page changed format), ERANGE (the published numbers put job
 * time outside the int64 ns range), EINVAL.
 */
int fm_clock_now (fm_clock_t *clk, struct timespec *ts, uint64_t *bound_ns);

/* The raw published data, for callers that do their own arithmetic (valid
 * may be false; staleness is not checked). 0, or -1 with errno EAGAIN,
 * EPROTO, EINVAL.
 */
int fm_clock_info (fm_clock_t *clk, fm_clock_info_t *info);

/* NULL-safe; preserves errno. */
void fm_clock_close (fm_clock_t *clk);

#ifdef __cplusplus
}
#endif

#endif /* FM_CLOCK_PUBLIC_H */
