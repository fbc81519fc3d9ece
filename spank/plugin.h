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
 * fm_spank_setup() from slurm_spank_init first.
 */
typedef struct {
    bool setup_done; /* fm_spank_setup() or fm_spank_setup_conf() ran */
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
int fm_spank_setup (spank_t sp, int ac, char **av);

/* The configuration alone, for entry points Slurm may call without calling
 * slurm_spank_init first in this process (job prolog and epilog): parses the
 * plugstack arguments unless already done.
 */
void fm_spank_setup_conf (int ac, char **av);

/* The mode of the job as seen from here: the option when given (getopt in
 * the job script context, the callback elsewhere), else default=.
 */
fm_request_t fm_spank_request (spank_t sp);

/* "<statedir>/<node>/job.<id>": the node level keeps nodes apart when the
 * state directory is shared (diskless nodes, the minicluster).
 * -1/ENAMETOOLONG or EINVAL (a node name that is not a plain name).
 */
int fm_spank_nodedir (const char *node, char *buf, size_t size);
int fm_spank_jobdir (const char *node, uint32_t job_id, char *buf, size_t size);

/* Per-context entry points (job_script.c, remote.c). */
int fm_spank_job_prolog (spank_t sp);
int fm_spank_job_epilog (spank_t sp);
int fm_spank_remote_user_init (spank_t sp);
int fm_spank_remote_task_init (spank_t sp);

/* Messages: "fabric-monitor: " prefixed, to Slurm's logs. */
#define fm_spank_err(fmt, ...) slurm_error ("fabric-monitor: " fmt, ##__VA_ARGS__)
#define fm_spank_info(fmt, ...) slurm_info ("fabric-monitor: " fmt, ##__VA_ARGS__)
#define fm_spank_verbose(fmt, ...) slurm_verbose ("fabric-monitor: " fmt, ##__VA_ARGS__)
#define fm_spank_debug(fmt, ...) slurm_debug ("fabric-monitor: " fmt, ##__VA_ARGS__)

#endif /* FM_SPANK_PLUGIN_H */
