/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <slurm/slurm.h>

#include "plugin.h"

/* Remote context (slurmstepd): the task environment, and on the batch step
 * the path of the job's output file, which the epilog needs but cannot learn
 * from Slurm: only the batch task itself sees it, on its stdout.
 */

int fm_spank_remote_user_init (spank_t sp)
{
    fm_request_t req = fm_plugin_request (sp);
    uint32_t job_id;
    char url[512];

    if (!fm_plugin.ready || req.mode == FM_MODE_OFF) {
        return 0;
    }
    if (spank_get_item (sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS) {
        return 0;
    }
    snprintf (
        url, sizeof (url), "%s/v1/jobs/%u/summary", fm_plugin.conf.daemon, job_id);
    if (spank_setenv (sp, "FABRIC_MONITOR", "1", 1) != ESPANK_SUCCESS
        || spank_setenv (sp, "FABRIC_MONITOR_MODE", fm_opts_mode_name (req.mode), 1)
               != ESPANK_SUCCESS
        || spank_setenv (sp, "FABRIC_MONITOR_SUMMARY", url, 1) != ESPANK_SUCCESS
        /* for fabric-check run as a step: where to post, with what */
        || spank_setenv (sp, "FABRIC_MONITOR_DAEMON", fm_plugin.conf.daemon, 1)
               != ESPANK_SUCCESS
        || spank_setenv (sp, "FABRIC_MONITOR_CHECK", fm_plugin.conf.check, 1)
               != ESPANK_SUCCESS
        || (fm_plugin.conf.munge_socket[0]
            && spank_setenv (
                   sp, "FABRIC_MONITOR_MUNGE_SOCKET", fm_plugin.conf.munge_socket, 1)
                   != ESPANK_SUCCESS)) {
        fm_spank_verbose ("cannot set the task environment");
    }
    return 0;
}

int fm_spank_remote_task_init (spank_t sp)
{
    fm_request_t req = fm_plugin_request (sp);
    uint32_t job_id, step_id, task_id;
    char dir[512], file[600], target[4096], node[64];
    ssize_t n;
    int fd;

    if (!fm_plugin.ready || req.mode == FM_MODE_OFF) {
        return 0;
    }
    fm_spank_steer_task (sp);
    fm_spank_precheck_task (sp, &req);
    if (spank_get_item (sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS
        || spank_get_item (sp, S_TASK_GLOBAL_ID, &task_id) != ESPANK_SUCCESS
        || step_id != SLURM_BATCH_SCRIPT || task_id != 0) {
        return 0;
    }
    n = readlink ("/proc/self/fd/1", target, sizeof (target) - 1);
    if (n <= 0 || target[0] != '/') {
        return 0; /* a pipe or socket: nothing to append to */
    }
    target[n] = '\0';
    if (spank_getenv (sp, "SLURMD_NODENAME", node, sizeof (node)) != ESPANK_SUCCESS
        || fm_plugin_jobdir (node, job_id, dir, sizeof (dir)) < 0) {
        return 0;
    }
    /* We run as the job's user here, in the directory the prolog made for
     * it. The epilog opens the path with this same identity, so a lie here
     * gains the user nothing.
     */
    snprintf (file, sizeof (file), "%s/out/stdout", dir);
    fd = open (file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        fm_spank_debug ("%s: %s", file, strerror (errno));
        return 0;
    }
    if (write (fd, target, (size_t)n) != n) {
        fm_spank_debug ("%s: short write", file);
    }
    close (fd);
    return 0;
}
