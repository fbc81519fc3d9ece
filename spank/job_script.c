/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path.h"
#include "plugin.h"
#include "proc.h"

/* Job script context: slurm_spank_job_prolog and _epilog, run by slurmd as
 * root on every node of the allocation.
 *
 * REQUIREMENT: slurm.conf must have PrologFlags=Alloc. Without it Slurm runs
 * the job prolog lazily, only on the nodes where a step starts, so most
 * nodes of a job would have no agent and nothing to probe.
 *
 * Nothing here may fail a job or drain a node unless the site asked for it
 * with the plugstack argument `failonerror`: every problem is logged and
 * the job goes on unmonitored.
 */

#define AGENT_GRACE_NS                                                                 \
    (10LL * 1000000000LL) /* agent's flush (5 s) plus one HTTP try                     \
                           */
/* The summary first waits for the last windows of the job's other agents,
 * which their own epilogs are stopping meanwhile: at most SUMMARY_WAIT, then
 * one request of at most 5 s.
 */
#define SUMMARY_WAIT "10s"
#define SUMMARY_TIMEOUT_NS (20LL * 1000000000LL)
#define OUTPATH_MAX 4096

typedef struct {
    uint32_t job_id;
    uid_t uid;
    gid_t gid;
    const char *node;
    char nodedir[512];
    char jobdir[600];
} job_t;

static int get_job (spank_t sp, job_t *job)
{
    struct passwd *pw;

    if (!(job->node = getenv ("SLURMD_NODENAME"))) {
        fm_spank_verbose ("SLURMD_NODENAME not set");
        return -1;
    }
    if (spank_get_item (sp, S_JOB_ID, &job->job_id) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_UID, &job->uid) != ESPANK_SUCCESS) {
        fm_spank_verbose ("job id or uid unavailable");
        return -1;
    }
    if (spank_get_item (sp, S_JOB_GID, &job->gid) != ESPANK_SUCCESS) {
        if (!(pw = getpwuid (job->uid))) {
            fm_spank_verbose (
                "job %u: no group for uid %u", job->job_id, (unsigned)job->uid);
            return -1;
        }
        job->gid = pw->pw_gid;
    }
    if (fm_plugin_nodedir (job->node, job->nodedir, sizeof (job->nodedir)) < 0
        || fm_plugin_jobdir (job->node, job->job_id, job->jobdir, sizeof (job->jobdir))
               < 0) {
        fm_spank_err (
            "job %u: unusable state directory for node %s", job->job_id, job->node);
        return -1;
    }
    return 0;
}

/* Remove what the agent, the plugin and the batch task left in a job
 * directory, two levels deep, never following a link. Names the user may
 * have planted in out/ are removed like ours.
 */
static void remove_tree (int parent, const char *name, int depth)
{
    int fd = openat (parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d;
    struct dirent *ent;

    if (fd >= 0 && depth > 0 && (d = fdopendir (fd))) {
        while ((ent = readdir (d))) {
            if (strcmp (ent->d_name, ".") == 0 || strcmp (ent->d_name, "..") == 0) {
                continue;
            }
            if (unlinkat (dirfd (d), ent->d_name, 0) < 0 && errno == EISDIR) {
                remove_tree (dirfd (d), ent->d_name, depth - 1);
            }
        }
        closedir (d);
    } else if (fd >= 0) {
        close (fd);
    }
    if (unlinkat (parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
        fm_spank_verbose ("cannot remove %s: %s", name, strerror (errno));
    }
}

static void match_arg (uint32_t job_id, char *buf, size_t size, size_t *len)
{
    int n = snprintf (buf, size, "--job%c%u", '\0', job_id);

    /* the terminating NUL of the id is part of the match: 42 must not match 421 */
    *len = (size_t)n + 1;
}

static int prepare_dirs (const job_t *job, fm_error_t *err)
{
    char out[700];
    struct stat sb;

    if (fm_path_mkdir_secure (job->nodedir, 0755, err) < 0) {
        return -1;
    }
    if (mkdir (job->jobdir, 0711) < 0) {
        if (errno != EEXIST) {
            return fm_errprintf (err, "%s: %s", job->jobdir, strerror (errno));
        }
        /* a requeued job, or a node that crashed: stop a stale agent, reuse */
        if (fm_path_check_secure (
                job->jobdir, 0, FM_PATH_MUST_EXIST | FM_PATH_NO_SYMLINK, err)
            < 0) {
            return -1;
        }
    }
    snprintf (out, sizeof (out), "%s/out", job->jobdir);
    if (mkdir (out, 0700) < 0 && errno != EEXIST) {
        return fm_errprintf (err, "%s: %s", out, strerror (errno));
    }
    if (lstat (out, &sb) < 0 || !S_ISDIR (sb.st_mode)
        || lchown (out, job->uid, job->gid) < 0 || chmod (out, 0700) < 0) {
        return fm_errprintf (
            err, "%s: cannot hand it to uid %u", out, (unsigned)job->uid);
    }
    return 0;
}

int fm_spank_job_script_prolog (spank_t sp)
{
    fm_request_t req;
    job_t job;
    fm_error_t err;
    /* the prolog's environment has SLURM_NODELIST (22.05); be ready for both */
    const char *nodes = getenv ("SLURM_JOB_NODELIST");
    char pidfile[700], logfile[700], jobid[16], uid[16], rate[32], match[32];
    char *argv[24];
    size_t matchlen;
    int ac = 0;
    pid_t pid;

    if (!fm_plugin.ready) {
        return 0;
    }
    if (!nodes) {
        nodes = getenv ("SLURM_NODELIST");
    }
    req = fm_plugin_request (sp);
    if (req.mode == FM_MODE_OFF) {
        return 0;
    }
    if (get_job (sp, &job) < 0) {
        goto fail;
    }
    if (!nodes) {
        fm_spank_err ("job %u: SLURM_NODELIST not set; not monitored", job.job_id);
        goto fail;
    }
    if (access (fm_plugin.conf.agent, X_OK) < 0) {
        fm_spank_err ("job %u: agent %s: %s; not monitored",
                      job.job_id,
                      fm_plugin.conf.agent,
                      strerror (errno));
        goto fail;
    }
    /* it runs as root: nobody but root may be able to replace it */
    if (fm_path_check_secure (fm_plugin.conf.agent, 0, FM_PATH_MUST_EXIST, &err) < 0) {
        fm_spank_err ("job %u: agent %s; not monitored", job.job_id, err.text);
        goto fail;
    }
    if (prepare_dirs (&job, &err) < 0) {
        fm_spank_err ("job %u: %s; not monitored", job.job_id, err.text);
        goto fail;
    }
    snprintf (pidfile, sizeof (pidfile), "%s/agent.pid", job.jobdir);
    snprintf (logfile, sizeof (logfile), "%s/job.%u.log", job.nodedir, job.job_id);
    match_arg (job.job_id, match, sizeof (match), &matchlen);
    if (fm_proc_stop (pidfile, match, matchlen, AGENT_GRACE_NS, &err) > 0) {
        fm_spank_info ("job %u: stopped a stale agent", job.job_id);
    }
    snprintf (jobid, sizeof (jobid), "%u", job.job_id);
    snprintf (uid, sizeof (uid), "%u", (unsigned)job.uid);
    argv[ac++] = fm_plugin.conf.agent;
    argv[ac++] = "--daemon";
    argv[ac++] = fm_plugin.conf.daemon;
    argv[ac++] = "--job";
    argv[ac++] = jobid;
    argv[ac++] = "--node";
    argv[ac++] = (char *)job.node;
    argv[ac++] = "--nodes";
    argv[ac++] = (char *)nodes;
    argv[ac++] = "--uid";
    argv[ac++] = uid;
    argv[ac++] = "--statedir";
    argv[ac++] = job.jobdir;
    argv[ac++] = "--mode";
    argv[ac++] = (char *)fm_opts_mode_name (req.mode);
    if (fm_plugin.conf.munge_socket[0]) {
        argv[ac++] = "--munge-socket";
        argv[ac++] = fm_plugin.conf.munge_socket;
    }
    if (fm_plugin.conf.health_root[0]) {
        argv[ac++] = "--health-root";
        argv[ac++] = fm_plugin.conf.health_root;
    }
    if (req.rate > 0) {
        snprintf (rate, sizeof (rate), "%g", req.rate);
        argv[ac++] = "--rate";
        argv[ac++] = rate;
    }
    argv[ac] = NULL;
    if ((pid = fm_proc_spawn_detached (argv, pidfile, logfile, &err)) < 0) {
        fm_spank_err ("job %u: %s; not monitored", job.job_id, err.text);
        goto fail;
    }
    fm_spank_info ("job %u: agent %d started on %s (%s)",
                   job.job_id,
                   (int)pid,
                   job.node,
                   fm_opts_mode_name (req.mode));
    return 0;
fail:
    return fm_plugin.conf.failonerror ? -1 : 0;
}

/* The output path the batch task recorded (see remote.c), or -1. */
static int read_outpath (const job_t *job, char *buf, size_t size)
{
    char file[700];
    struct stat sb;
    ssize_t n;
    int fd;

    snprintf (file, sizeof (file), "%s/out/stdout", job->jobdir);
    if ((fd = open (file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0) {
        return -1;
    }
    if (fstat (fd, &sb) < 0 || !S_ISREG (sb.st_mode) || sb.st_size <= 0
        || (size_t)sb.st_size >= size) {
        close (fd);
        return -1;
    }
    n = read (fd, buf, size - 1);
    close (fd);
    if (n <= 0 || buf[0] != '/' || memchr (buf, '\0', (size_t)n)) {
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

static void append_summary (const job_t *job)
{
    char outpath[OUTPATH_MAX], jobid[16];
    char *argv[16];
    struct stat sb;
    fm_error_t err;
    int ac = 0, rc;

    if (read_outpath (job, outpath, sizeof (outpath)) < 0) {
        return; /* not the batch host, or output not in a file */
    }
    /* The job may have rewritten the recorded path or swapped the file under
     * it. Slurm made the output file, owned by the job user, so anything else
     * (a link, a FIFO, someone else's file the user happens to be able to
     * write) is not the job's output: refuse it here, before anything runs.
     * The agent then opens it without following links, as the job user.
     */
    if (lstat (outpath, &sb) < 0 || !S_ISREG (sb.st_mode) || sb.st_uid != job->uid) {
        fm_spank_info ("job %u: summary not written: %s is not a regular file"
                       " owned by uid %u",
                       job->job_id,
                       outpath,
                       (unsigned)job->uid);
        return;
    }
    snprintf (jobid, sizeof (jobid), "%u", job->job_id);
    argv[ac++] = fm_plugin.conf.agent;
    argv[ac++] = "--summary";
    argv[ac++] = "--daemon";
    argv[ac++] = fm_plugin.conf.daemon;
    argv[ac++] = "--job";
    argv[ac++] = jobid;
    argv[ac++] = "--output";
    argv[ac++] = outpath;
    argv[ac++] = "--wait";
    argv[ac++] = SUMMARY_WAIT;
    if (fm_plugin.conf.munge_socket[0]) {
        argv[ac++] = "--munge-socket";
        argv[ac++] = fm_plugin.conf.munge_socket;
    }
    argv[ac] = NULL;
    /* with the job user's identity only: the path came from the user */
    rc = fm_proc_run_as (job->uid, job->gid, argv, SUMMARY_TIMEOUT_NS, &err);
    if (rc < 0) {
        fm_spank_verbose ("job %u: summary: %s", job->job_id, err.text);
    } else if (rc != 0) {
        fm_spank_verbose ("job %u: summary: %s exited with %d",
                          job->job_id,
                          fm_plugin.conf.agent,
                          rc);
    }
}

int fm_spank_job_script_epilog (spank_t sp)
{
    job_t job;
    fm_error_t err;
    char pidfile[700], match[32];
    size_t matchlen;
    struct stat sb;
    int rc;

    if (!fm_plugin.ready || get_job (sp, &job) < 0) {
        return 0;
    }
    if (lstat (job.jobdir, &sb) < 0 || !S_ISDIR (sb.st_mode)) {
        return 0; /* this job was not monitored here */
    }
    snprintf (pidfile, sizeof (pidfile), "%s/agent.pid", job.jobdir);
    match_arg (job.job_id, match, sizeof (match), &matchlen);
    rc = fm_proc_stop (pidfile, match, matchlen, AGENT_GRACE_NS, &err);
    if (rc < 0) {
        fm_spank_verbose ("job %u: %s", job.job_id, err.text);
    } else if (rc == FM_STOP_KILLED) {
        fm_spank_info ("job %u: agent did not stop within %llds: killed",
                       job.job_id,
                       AGENT_GRACE_NS / 1000000000LL);
    }
    if (access (fm_plugin.conf.agent, X_OK) == 0) {
        append_summary (&job);
    }
    remove_tree (AT_FDCWD, job.jobdir, 2);
    return 0;
}
