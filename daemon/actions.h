/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_ACTIONS_H
#define FM_ACTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* What fabricd does to Slurm: read nodes and jobs, drain/resume/reweight nodes,
 * signal and requeue jobs. Two backends behind one small vtable: "libslurm"
 * (RPCs through libslurm, when configure found it) and "scontrol" (runs
 * scontrol/scancel with an argv, never a shell). Not thread-safe: one thread
 * (fabricd's policy loop) owns a handle.
 *
 * Every call returns -1 with errno and err filled with Slurm's message on
 * failure. EAGAIN means transient (slurmctld unreachable, timed out, busy):
 * retry later. Mutating calls read the current state first and do nothing
 * when it is already what was asked, so a retry after a call that took effect
 * is harmless; they return FM_ACTIONS_DONE (0), FM_ACTIONS_ALREADY or
 * FM_ACTIONS_FOREIGN. With dry_run they read, log what they would do, return
 * what they would have returned, and change nothing.
 */

typedef enum {
    FM_NODE_IDLE = 1 << 0,
    FM_NODE_ALLOC = 1 << 1,
    FM_NODE_MIXED = 1 << 2,
    FM_NODE_DOWN = 1 << 3,
    FM_NODE_DRAIN = 1 << 4, /* DRAIN flag: DRAINING when ALLOC/MIXED, else DRAINED */
    FM_NODE_FAIL = 1 << 5,
    FM_NODE_COMPLETING = 1 << 6,
    FM_NODE_NO_RESPOND = 1 << 7,
    FM_NODE_MAINT = 1 << 8,
    FM_NODE_RESERVED = 1 << 9,
    FM_NODE_FUTURE = 1 << 10,
    FM_NODE_UNKNOWN = 1 << 11,
} fm_node_state_b;

#define FM_ACTIONS_NODE_NAME_MAX 64
#define FM_ACTIONS_REASON_MAX 256

typedef struct {
    char name[FM_ACTIONS_NODE_NAME_MAX];
    unsigned state;                     /* fm_node_state_b */
    char reason[FM_ACTIONS_REASON_MAX]; /* "" when none; without "[user@time]" */
    int64_t weight;
} fm_node_info_t;

typedef enum {
    FM_JOB_PENDING,
    FM_JOB_RUNNING,
    FM_JOB_SUSPENDED,
    FM_JOB_ENDED, /* COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, ... */
} fm_job_state_t;

typedef struct {
    int64_t job_id;
    fm_job_state_t state;
    char state_name[32]; /* Slurm's base state name: "RUNNING", "COMPLETED" */
    bool completing;
    char *nodes; /* hostlist expression, "" when none; owned */
    char batch_host[FM_ACTIONS_NODE_NAME_MAX];
    bool requeue; /* requeue allowed */
    int restarts; /* SLURM_RESTART_COUNT of the current run */
} fm_job_info_t;

typedef enum {
    FM_ACTIONS_DONE = 0,    /* done now (dry_run: would be done) */
    FM_ACTIONS_ALREADY = 1, /* the state already was what was asked */
    FM_ACTIONS_FOREIGN = 2, /* drain: the node carries someone else's reason */
} fm_actions_result_t;

typedef struct {
    const char *slurm_conf; /* NULL: Slurm's default lookup */
    const char *scontrol;   /* NULL: "scontrol" from PATH */
    const char *scancel;    /* NULL: "scancel" from PATH */
    int timeout_ms;         /* per command (scontrol backend); 0: 30000 */
    bool dry_run;
} fm_actions_opts_t;

typedef struct fm_actions fm_actions_t;

/* kind "libslurm", "scontrol" or "auto" (libslurm when built in, else
 * scontrol). Strings in opts are copied. NULL/EINVAL (unknown kind),
 * ENOTSUP (libslurm not built in), ENOENT (slurm_conf unreadable), EBUSY
 * (libslurm already initialised with another slurm_conf), ENOMEM.
 */
fm_actions_t *
fm_actions_create (const char *kind, const fm_actions_opts_t *opts, fm_error_t *err);
void fm_actions_destroy (fm_actions_t *a);
const char *fm_actions_kind (const fm_actions_t *a); /* "libslurm", "scontrol" */

/* ENOENT: no such node. */
int fm_actions_node_info (fm_actions_t *a,
                          const char *node,
                          fm_node_info_t *info,
                          fm_error_t *err);
/* All nodes; *nodes is malloc'd (free()). */
int fm_actions_nodes_list (fm_actions_t *a,
                           fm_node_info_t **nodes,
                           size_t *count,
                           fm_error_t *err);

/* reason must start with "fabric:" (EINVAL otherwise); it is sanitised as by
 * fm_actions_reason_format(). ALREADY when drained with a fabric reason
 * (left as is), FOREIGN when the node has any other reason (drained, down or
 * not: it is not touched).
 */
int fm_actions_drain (fm_actions_t *a,
                      const char *node,
                      const char *reason,
                      fm_error_t *err);
/* Re-reads the node: EPERM unless its reason starts with "fabric:"; ALREADY
 * when it is neither drained nor down.
 */
int fm_actions_resume (fm_actions_t *a, const char *node, fm_error_t *err);
/* The same whatever the reason (an administrator's explicit request). */
int fm_actions_resume_force (fm_actions_t *a, const char *node, fm_error_t *err);
/* weight 1..UINT32_MAX-1 (EINVAL); ALREADY when equal. */
int fm_actions_set_weight (fm_actions_t *a,
                           const char *node,
                           int64_t weight,
                           fm_error_t *err);

/* ESRCH: no such job or not running/suspended. batch_only: the batch shell
 * only (scancel --batch); else every step but the batch shell (Slurm's default).
 */
int fm_actions_signal_job (
    fm_actions_t *a, int64_t job_id, int sig, bool batch_only, fm_error_t *err);
/* ALREADY when the job is pending (already requeued); EPERM when the job
 * does not allow requeue; ESRCH when it has ended or does not exist.
 */
int fm_actions_requeue (fm_actions_t *a, int64_t job_id, fm_error_t *err);

/* Release with fm_actions_job_info_clear(). ESRCH: no such job. */
int fm_actions_job_info (fm_actions_t *a,
                         int64_t job_id,
                         fm_job_info_t *info,
                         fm_error_t *err);
/* Running or suspended jobs whose nodes include node; release with
 * fm_actions_job_info_free().
 */
int fm_actions_jobs_on_node (fm_actions_t *a,
                             const char *node,
                             fm_job_info_t **jobs,
                             size_t *count,
                             fm_error_t *err);
void fm_actions_job_info_clear (fm_job_info_t *info);

/* Run any Slurm client command (argv[0] from PATH) as the scontrol backend
 * runs its own: SLURM_CONF from opts, its timeout, no shell, capped output.
 * out (may be NULL) receives stdout, malloc'd. Whatever the backend, for what
 * only the commands offer (sbatch with SPANK options, reservations).
 * 0, or -1/errno as the calls above (EAGAIN on a timeout).
 */
int fm_actions_scontrol_command (const fm_actions_opts_t *opts,
                                 char *const argv[],
                                 char **out,
                                 fm_error_t *err);
void fm_actions_job_info_free (fm_job_info_t *jobs, size_t count);

const char *fm_actions_result_name (int result); /* "done", "already", "foreign" */

/* Make reason safe for Slurm: control characters become spaces, '"' becomes
 * '\'' (scontrol strips a leading and a trailing quote), runs of spaces
 * collapse, ends are trimmed, and it is cut to size - 1 bytes on a UTF-8
 * character boundary. 0, or -1/EINVAL when nothing is left or size < 2.
 */
int fm_actions_reason_format (const char *in, char *out, size_t size);
/* The scontrol backend's text parsers (actions_scontrol.c), exposed for the
 * unit tests.
 */
/* Parse one line of `scontrol -o show node`. -1/EINVAL (err) when malformed. */
int fm_actions_scontrol_parse_node_line (const char *line,
                                         fm_node_info_t *info,
                                         fm_error_t *err);
/* Parse one line of `scontrol -o show job` (info->nodes malloc'd). */
int fm_actions_scontrol_parse_job_line (const char *line,
                                        fm_job_info_t *info,
                                        fm_error_t *err);
/* errno for Slurm's message (scontrol/scancel output or slurm_strerror()). */
int fm_actions_scontrol_errno_from_message (const char *msg);

/* The backend vtable. Backends fill plain data; actions.c does the checks,
 * idempotence and dry_run. Each returns 0 or -1/errno with err.
 */
typedef enum {
    FM_NODE_UPDATE_DRAIN, /* with reason */
    FM_NODE_UPDATE_RESUME,
    FM_NODE_UPDATE_WEIGHT, /* with weight */
} fm_node_update_t;

typedef struct {
    const char *name;
    void *(*create) (const fm_actions_opts_t *opts, fm_error_t *err);
    void (*destroy) (void *impl);
    /* node NULL: all nodes. ENOENT for a named node that does not exist. */
    int (*nodes_load) (void *impl,
                       const char *node,
                       fm_node_info_t **nodes,
                       size_t *count,
                       fm_error_t *err);
    int (*node_update) (void *impl,
                        const char *node,
                        fm_node_update_t what,
                        const char *reason,
                        int64_t weight,
                        fm_error_t *err);
    /* job_id 0: all jobs. ESRCH for a job that does not exist. */
    int (*jobs_load) (void *impl,
                      int64_t job_id,
                      fm_job_info_t **jobs,
                      size_t *count,
                      fm_error_t *err);
    int (*job_signal) (
        void *impl, int64_t job_id, int sig, bool batch_only, fm_error_t *err);
    int (*job_requeue) (void *impl, int64_t job_id, fm_error_t *err);
} fm_actions_ops_t;

extern const fm_actions_ops_t fm_actions_scontrol_ops;
#if HAVE_LIBSLURM
extern const fm_actions_ops_t fm_actions_libslurm_ops;
#endif

#endif /* FM_ACTIONS_H */
