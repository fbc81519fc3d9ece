/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_SPANK_PLUGIN_H
#define FM_SPANK_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <slurm/spank.h>

#include "opts.h"

/* State of the plugin inside one Slurm process. Every context calls
 * fm_plugin_setup() from slurm_spank_init first.
 */
typedef struct {
    bool setup_done; /* fm_plugin_setup() or fm_plugin_setup_conf() ran */
    bool ready;      /* plugstack arguments parsed; false: the plugin is inert */
    fm_spank_conf_t conf;
    bool opt_seen; /* the option callback ran (remote: from the job's env) */
    bool opt_valid;
    fm_request_t req;
} fm_plugin_t;

extern fm_plugin_t fm_plugin;

/* Parse plugstack.conf arguments and register --fabric-monitor. Always 0:
 * problems are logged, never turned into failed jobs.
 */
int fm_plugin_setup (spank_t sp, int ac, char **av);

/* The configuration alone, for entry points Slurm may call without calling
 * slurm_spank_init first in this process (job prolog and epilog): parses the
 * plugstack arguments unless already done.
 */
void fm_plugin_setup_conf (int ac, char **av);

/* The mode of the job as seen from here: the option when given (getopt in
 * the job script context, the callback elsewhere), else default=.
 */
fm_request_t fm_plugin_request (spank_t sp);

/* "<statedir>/<node>/job.<id>": the node level keeps nodes apart when the
 * state directory is shared (diskless nodes, the minicluster).
 * -1/ENAMETOOLONG or EINVAL (a node name that is not a plain name).
 */
int fm_plugin_nodedir (const char *node, char *buf, size_t size);
int fm_plugin_jobdir (const char *node, uint32_t job_id, char *buf, size_t size);

/* Per-context entry points (job_script.c, remote.c). */
int fm_spank_job_script_prolog (spank_t sp);
int fm_spank_job_script_epilog (spank_t sp);
int fm_spank_remote_user_init (spank_t sp);
int fm_spank_remote_task_init (spank_t sp);

/* NCCL/RCCL steering (steer.c, doc/health.md "Steering"). The agent writes
 * the degraded HCA ports of this node to FM_SPANK_STEER_FILE in the job's
 * directory (the name is FM_AGENT_STEER_FILE of agent/agent.h).
 */
#define FM_SPANK_STEER_FILE "nccl_ib_hca"
#define FM_SPANK_STEER_MAX 4096

/* The file's text ("mlx5_1:1,mlx5_3:1\n") as the NCCL_IB_HCA value
 * ("^=mlx5_1:1,mlx5_3:1") into value. 1 when there is something to exclude,
 * 0 when not (empty), -1/EINVAL (malformed) or ENAMETOOLONG.
 */
int fm_spank_steer_parse (const char *text, char *value, size_t size);

/* Remote context, task_init: set NCCL_IB_HCA in the task's environment from
 * the agent's file unless the job set it. Always 0: steering is advice.
 */
int fm_spank_steer_task (spank_t sp);

/* Remote context, task_init of the batch task: with ",precheck", run
 * fabric-check --quick over the job's nodes first and show its result in the
 * job's output (precheck.c, doc/fabric-check.md). Always 0; once the job
 * was requeued without a bad node (protect) the task never returns: the
 * requeue kills it, else it exits, so that the script never starts.
 */
int fm_spank_precheck_task (spank_t sp, const fm_request_t *req);

/* Messages: "fabric-monitor: " prefixed, to Slurm's logs. */
#define fm_spank_err(fmt, ...) slurm_error ("fabric-monitor: " fmt, ##__VA_ARGS__)
#define fm_spank_info(fmt, ...) slurm_info ("fabric-monitor: " fmt, ##__VA_ARGS__)
#define fm_spank_verbose(fmt, ...) slurm_verbose ("fabric-monitor: " fmt, ##__VA_ARGS__)
#define fm_spank_debug(fmt, ...) slurm_debug ("fabric-monitor: " fmt, ##__VA_ARGS__)

#endif /* FM_SPANK_PLUGIN_H */
