/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_SPANK_PROC_H
#define FM_SPANK_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/* Process helpers of the plugin: they run inside slurmd/slurmstepd, so they
 * never leave a child behind unwaited, never block without a bound and never
 * signal a process that is not provably the one they started.
 */

/* Start argv[0] detached from the caller (setsid and a double fork, so that
 * the job prolog can return and Slurm never waits for it), with stdin
 * /dev/null, stdout and stderr appended to logfile, signals reset and no
 * inherited descriptors. The process writes "PID STARTTIME\n" to pidfile
 * (created exclusively, mode 0644) before exec. Returns the pid once exec
 * succeeded, or -1/errno with err (pidfile removed again).
 */
pid_t fm_proc_spawn_detached (char *const argv[],
                         const char *pidfile,
                         const char *logfile,
                         fm_error_t *err);

/* The start time (clock ticks since boot, /proc/PID/stat field 22) and state
 * character of pid. -1/errno (ESRCH: no such process).
 */
int fm_proc_stat (pid_t pid, unsigned long long *starttime, char *state);

/* Whether the process pidfile names is still the one that wrote it: same
 * start time, not a zombie, and (when match is not NULL) its command line
 * holds the argument sequence `match` (args separated by '\0', e.g.
 * "--job\0" "42"; matchlen bytes). Returns its pid, 0 when it is gone, or
 * -1/errno with err when the pidfile is unreadable or malformed.
 */
pid_t fm_proc_ours (const char *pidfile,
                    const char *match,
                    size_t matchlen,
                    fm_error_t *err);

typedef enum {
    FM_STOP_GONE = 0,   /* was not running (anymore) */
    FM_STOP_EXITED = 1, /* exited within the grace time after SIGTERM */
    FM_STOP_KILLED = 2, /* needed SIGKILL */
} fm_stop_t;

/* Stop the process of pidfile (see fm_proc_ours): SIGTERM, wait up to
 * grace_ns, then SIGKILL. Removes the pidfile. Returns fm_stop_t or -1/errno.
 */
int fm_proc_stop (const char *pidfile,
                  const char *match,
                  size_t matchlen,
                  int64_t grace_ns,
                  fm_error_t *err);

/* Run argv as uid/gid (supplementary groups: gid only) in a child, with
 * stdin/stdout /dev/null and stderr kept, and wait at most timeout_ns (then
 * SIGKILL). Returns the exit status (0..255), 128+signal, or -1/errno.
 * The privileges are dropped in the child only, irrevocably, before exec.
 */
int fm_proc_run_as (
    uid_t uid, gid_t gid, char *const argv[], int64_t timeout_ns, fm_error_t *err);

#endif /* FM_SPANK_PROC_H */
