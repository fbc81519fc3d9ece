/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <slurm/spank.h>

#include "plugin.h"

/* The only file that knows Slurm's entry points: each one dispatches on the
 * context it is called in to the per-context files.
 *
 * Contexts and what happens there:
 *   local (srun), allocator (sbatch, salloc): --fabric-monitor is parsed and
 *     a bad value refused (option callback, plugin.c);
 *   job_script (slurmd prolog/epilog, PrologFlags=Alloc required): the
 *     agent is started and stopped, the summary appended (job_script.c);
 *   remote (slurmstepd): task environment, output path (remote.c).
 */

SPANK_PLUGIN (fabric_monitor, 1)

#if HAVE_DECL_ESPANK_JOB_FAILURE
/* Slurm >= 25.05: a failing init fails the job only, never drains the node. */
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

int slurm_spank_init (spank_t sp, int ac, char **av)
{
    switch (spank_context ()) {
    case S_CTX_LOCAL:
    case S_CTX_ALLOCATOR:
    case S_CTX_REMOTE:
    case S_CTX_JOB_SCRIPT:
        return fm_plugin_setup (sp, ac, av);
    default:
        return 0;
    }
}

int slurm_spank_job_prolog (spank_t sp, int ac, char **av)
{
    switch (spank_context ()) {
    case S_CTX_JOB_SCRIPT:
        fm_plugin_setup_conf (ac, av);
        return fm_spank_job_script_prolog (sp);
    default:
        return 0;
    }
}

int slurm_spank_user_init (spank_t sp, int ac, char **av)
{
    switch (spank_context ()) {
    case S_CTX_REMOTE:
        return fm_spank_remote_user_init (sp);
    default:
        return 0;
    }
}

int slurm_spank_task_init (spank_t sp, int ac, char **av)
{
    switch (spank_context ()) {
    case S_CTX_REMOTE:
        return fm_spank_remote_task_init (sp);
    default:
        return 0;
    }
}

int slurm_spank_job_epilog (spank_t sp, int ac, char **av)
{
    switch (spank_context ()) {
    case S_CTX_JOB_SCRIPT:
        fm_plugin_setup_conf (ac, av);
        return fm_spank_job_script_epilog (sp);
    default:
        return 0;
    }
}
