/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <slurm/slurm.h>

#include "plugin.h"

/* --fabric-monitor=...,precheck: before the batch script starts, the batch
 * step's task_init (remote context, on the batch host, as the job's user,
 * with the job's output file on fd 1) runs
 *   srun --jobid=ID --mpi=pmix -N NODES --ntasks-per-node=1 fabric-check --quick
 * as a step of the job and copies its table into the job's output, so the
 * result comes before anything the script prints (doc/fabric-check.md says
 * why here and not in the prolog). With protect and a bad node, a detached
 * helper requeues the job held, excludes the node and releases it.
 */

#define CHECK_TIMEOUT_NS (90LL * 1000000000LL) /* srun + fabric-check's 30 s */
#define REQUEUE_WAIT_NS (30LL * 1000000000LL)
#define RESTARTS_MAX 3
#define BAD_PREFIX "fabric-check: FAIL bad nodes: "
#define BAD_MAX 1024
#define LINE_MAX_LEN 4096

extern char **environ;

static void out (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* To the job's output (fd 1 is the file Slurm opened for the batch task). */
static void out (const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    int n;

    va_start (ap, fmt);
    n = vsnprintf (buf, sizeof (buf), fmt, ap);
    va_end (ap);
    if (n > 0) {
        (void)!write (STDOUT_FILENO,
                      buf,
                      (size_t)n < sizeof (buf) ? (size_t)n : sizeof (buf) - 1);
    }
}

static int64_t mono_ns (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A node list from fabric-check, going into scontrol's argv: names and commas. */
static bool valid_nodes (const char *s)
{
    if (!s[0] || strlen (s) >= BAD_MAX) {
        return false;
    }
    for (; *s; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')
              || (*s >= '0' && *s <= '9') || *s == ',' || *s == '-' || *s == '_'
              || *s == '.')) {
            return false;
        }
    }
    return true;
}

static void scan_line (const char *line, char *bad, size_t size)
{
    size_t n = sizeof (BAD_PREFIX) - 1;

    if (strncmp (line, BAD_PREFIX, n) == 0 && valid_nodes (line + n)) {
        snprintf (bad, size, "%s", line + n);
    }
}

/* Copy the child's output to ours line by line, noting the bad nodes. */
static void relay (int fd, int64_t deadline, char *bad, size_t size)
{
    char line[LINE_MAX_LEN];
    size_t len = 0;

    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - mono_ns ();
        char c;
        ssize_t n;

        if (left <= 0 || poll (&pfd, 1, (int)(left / 1000000) + 1) == 0) {
            return;
        }
        n = read (fd, &c, 1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        (void)!write (STDOUT_FILENO, &c, 1);
        if (c == '\n' || len == sizeof (line) - 1) {
            line[len] = '\0';
            scan_line (line, bad, size);
            len = 0;
        } else {
            line[len++] = c;
        }
    }
}

/* The child's exit status, killing it at the deadline; -1 when killed. */
static int reap (pid_t pid, int64_t deadline)
{
    int status;

    for (;;) {
        pid_t r = waitpid (pid, &status, WNOHANG);
        if (r == pid) {
            return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
        }
        if (r < 0 && errno != EINTR) {
            return -1;
        }
        if (mono_ns () >= deadline) {
            kill (pid, SIGKILL);
            deadline = INT64_MAX;
        }
        usleep (50000);
    }
}

/* Run scontrol with args; its exit status or -1. */
static int scontrol (char *const *argv)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status, rc;

    posix_spawn_file_actions_init (&fa);
    posix_spawn_file_actions_addopen (&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen (&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    rc = posix_spawnp (&pid, "scontrol", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy (&fa);
    if (rc != 0) {
        return -1;
    }
    while (waitpid (pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

/* The detached helper: outlives the batch step that the requeue kills.
 * Tells the parent over fd whether the requeue was accepted.
 */
static void requeue_helper (int fd, uint32_t job_id, const char *bad)
{
    char id[16], jobid[32], exc[BAD_MAX + 16], comment[BAD_MAX + 80];
    char *hold[] = {"scontrol", "requeuehold", id, NULL};
    char *update[] = {"scontrol", "update", jobid, exc, comment, NULL};
    char *release[] = {"scontrol", "release", id, NULL};
    char ok;

    snprintf (id, sizeof (id), "%u", job_id);
    snprintf (jobid, sizeof (jobid), "jobid=%u", job_id);
    snprintf (exc, sizeof (exc), "ExcNodeList=%s", bad);
    snprintf (comment,
              sizeof (comment),
              "Comment=fabric-monitor precheck: requeued without %s",
              bad);
    ok = scontrol (hold) == 0 ? '1' : '0';
    (void)!write (fd, &ok, 1);
    close (fd);
    if (ok != '1') {
        _exit (1);
    }
    /* the job only takes the update once it is pending again */
    for (int i = 0; i < 120 && scontrol (update) != 0; i++) {
        usleep (250000);
    }
    /* released even if the update failed: a job held forever is worse */
    scontrol (release);
    _exit (0);
}

/* 0 when the requeue was accepted, -1 otherwise. */
static int requeue (uint32_t job_id, const char *bad)
{
    int p[2], null;
    char ok = '0';
    pid_t pid;

    if (pipe2 (p, O_CLOEXEC) < 0) {
        return -1;
    }
    if ((pid = fork ()) < 0) {
        close (p[0]);
        close (p[1]);
        return -1;
    }
    if (pid == 0) {
        /* setsid and a second fork: reparented away from the step, so that
         * proctrack does not kill it with the job (proctrack/linuxproc;
         * doc/fabric-check.md has the cgroup caveat)
         */
        close (p[0]);
        if (setsid () < 0 || fork () != 0) {
            _exit (0);
        }
        if ((null = open ("/dev/null", O_RDWR)) >= 0) {
            dup2 (null, STDIN_FILENO);
            dup2 (null, STDOUT_FILENO);
            dup2 (null, STDERR_FILENO);
        }
        requeue_helper (p[1], job_id, bad);
    }
    close (p[1]);
    while (waitpid (pid, NULL, 0) < 0 && errno == EINTR) {
    }
    {
        struct pollfd pfd = {.fd = p[0], .events = POLLIN};
        if (poll (&pfd, 1, (int)(REQUEUE_WAIT_NS / 1000000)) > 0
            && read (p[0], &ok, 1) != 1) {
            ok = '0';
        }
    }
    close (p[0]);
    return ok == '1' ? 0 : -1;
}

static int
run_check (spank_t sp, uint32_t job_id, const char *nodes, char *bad, size_t size)
{
    char jobid[32], conf[1024];
    char *argv[24];
    posix_spawn_file_actions_t fa;
    int p[2], ac = 0, rc;
    pid_t pid;
    int64_t deadline = mono_ns () + CHECK_TIMEOUT_NS;

    /* srun must read the slurm.conf the job's slurmd uses (configless) */
    if (spank_getenv (sp, "SLURM_CONF", conf, sizeof (conf)) == ESPANK_SUCCESS) {
        setenv ("SLURM_CONF", conf, 1);
    }
    snprintf (jobid, sizeof (jobid), "--jobid=%u", job_id);
    argv[ac++] = "srun";
    argv[ac++] = jobid;
    argv[ac++] = "--mpi=pmix";
    argv[ac++] = "-N";
    argv[ac++] = (char *)nodes;
    argv[ac++] = "--ntasks-per-node=1";
    argv[ac++] = "--job-name=fabric-precheck";
    argv[ac++] = "--quiet";
    argv[ac++] = fm_plugin.conf.check;
    argv[ac++] = "--quick";
    argv[ac++] = "--time-limit";
    argv[ac++] = "30s";
    argv[ac++] = "--daemon";
    argv[ac++] = fm_plugin.conf.daemon;
    if (fm_plugin.conf.munge_socket[0]) {
        argv[ac++] = "--munge-socket";
        argv[ac++] = fm_plugin.conf.munge_socket;
    }
    argv[ac] = NULL;
    if (pipe2 (p, O_CLOEXEC) < 0) {
        return -1;
    }
    posix_spawn_file_actions_init (&fa);
    posix_spawn_file_actions_adddup2 (&fa, p[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen (&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    rc = posix_spawnp (&pid, "srun", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy (&fa);
    close (p[1]);
    if (rc != 0) {
        close (p[0]);
        errno = rc;
        return -1;
    }
    relay (p[0], deadline, bad, size);
    close (p[0]);
    return reap (pid, deadline);
}

int fm_spank_precheck_task (spank_t sp, const fm_request_t *req)
{
    uint32_t job_id, step_id, task_id;
    char nodes[16], restarts[16], bad[BAD_MAX] = "";
    int rc;

    if (!req->precheck || spank_get_item (sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS
        || spank_get_item (sp, S_TASK_GLOBAL_ID, &task_id) != ESPANK_SUCCESS
        || step_id != SLURM_BATCH_SCRIPT || task_id != 0) {
        return 0;
    }
    if (spank_getenv (sp, "SLURM_JOB_NUM_NODES", nodes, sizeof (nodes))
            != ESPANK_SUCCESS
        || strspn (nodes, "0123456789") != strlen (nodes) || atoi (nodes) < 2) {
        out ("fabric-monitor: precheck skipped: it needs a job of 2 nodes or more\n");
        return 0;
    }
    if (access (fm_plugin.conf.check, X_OK) < 0) {
        out ("fabric-monitor: precheck skipped: %s: %s\n",
             fm_plugin.conf.check,
             strerror (errno));
        return 0;
    }
    out ("fabric-monitor: precheck of job %u: fabric-check --quick on %s nodes\n",
         job_id,
         nodes);
    rc = run_check (sp, job_id, nodes, bad, sizeof (bad));
    if (rc == 0) {
        out ("fabric-monitor: precheck passed\n");
        return 0;
    }
    if (rc != 1 || !bad[0]) {
        out ("fabric-monitor: precheck could not run (%s %d); the job goes on\n",
             rc < 0 ? "error" : "exit",
             rc < 0 ? errno : rc);
        return 0;
    }
    if (fm_plugin_request (sp).mode != FM_MODE_PROTECT) {
        out ("fabric-monitor: precheck found bad nodes: %s; the job goes on "
             "(with protect it would be requeued without them)\n",
             bad);
        return 0;
    }
    if (spank_getenv (sp, "SLURM_RESTART_COUNT", restarts, sizeof (restarts))
            == ESPANK_SUCCESS
        && atoi (restarts) >= RESTARTS_MAX) {
        out ("fabric-monitor: precheck found bad nodes: %s; requeued %s times "
             "already, the job goes on\n",
             bad,
             restarts);
        return 0;
    }
    if (requeue (job_id, bad) < 0) {
        out ("fabric-monitor: precheck found bad nodes: %s; the requeue was "
             "refused (--no-requeue?), the job goes on\n",
             bad);
        return 0;
    }
    out ("fabric-monitor: precheck found bad nodes: %s; job %u requeued without "
         "them\n",
         bad,
         job_id);
    fm_spank_info ("job %u: precheck: requeued without %s", job_id, bad);
    /* Slurm defers signals to a step whose tasks have not started, so the
     * requeue cannot kill us here, and an optional plugin's error would not
     * stop the script: end the batch task before the script starts
     */
    _exit (1);
}
