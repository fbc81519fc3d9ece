/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

#define POLL_NS (20LL * 1000 * 1000)

static void sleep_ns (int64_t ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};

    while (nanosleep (&ts, &ts) < 0 && errno == EINTR) {
    }
}

static int64_t mono_ns (void)
{
    struct timespec ts;

    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int read_small (const char *path, char *buf, size_t size, int flags)
{
    int fd = open (path, O_RDONLY | O_CLOEXEC | flags);
    size_t off = 0;

    if (fd < 0) {
        return -1;
    }
    while (off < size - 1) {
        ssize_t r = read (fd, buf + off, size - 1 - off);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        off += (size_t)r;
    }
    close (fd);
    buf[off] = '\0';
    return (int)off;
}

int fm_proc_stat (pid_t pid, unsigned long long *starttime, char *state)
{
    char path[64], buf[1024], *p;
    unsigned long long st;
    char s;

    snprintf (path, sizeof (path), "/proc/%d/stat", (int)pid);
    if (read_small (path, buf, sizeof (buf), 0) < 0) {
        errno = ESRCH;
        return -1;
    }
    /* comm may hold spaces and parentheses: parse after the last ')' */
    if (!(p = strrchr (buf, ')'))
        || sscanf (
               p + 1,
               " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
               "%*d %*d %llu",
               &s,
               &st)
               != 2) {
        errno = EPROTO;
        return -1;
    }
    *starttime = st;
    *state = s;
    return 0;
}

static void reset_child (void)
{
    sigset_t none;

    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++) {
        signal (sig, SIG_DFL);
    }
}

static void write_all (int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t w = write (fd, p, len);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return;
        }
        p += w;
        len -= (size_t)w;
    }
}

/* The grandchild: becomes the detached process. Reports errno over `report`
 * when anything fails; a successful exec closes `report` (O_CLOEXEC).
 */
static void __attribute__ ((noreturn))
grandchild (char *const argv[], const char *pidfile, const char *logfile, int report)
{
    unsigned long long st;
    char state, line[64];
    int fd, len, e;

    reset_child ();
    if ((fd = open ("/dev/null", O_RDONLY)) < 0 || dup2 (fd, STDIN_FILENO) < 0) {
        goto fail;
    }
    if (fd != STDIN_FILENO) {
        close (fd);
    }
    fd = open (logfile, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY, 0600);
    if (fd < 0 || dup2 (fd, STDOUT_FILENO) < 0 || dup2 (fd, STDERR_FILENO) < 0) {
        goto fail;
    }
    if (fd > STDERR_FILENO) {
        close (fd);
    }
    /* descriptors of slurmd must not leak into a process that outlives it */
    for (int i = STDERR_FILENO + 1; i < 1024; i++) {
        if (i != report) {
            close (i);
        }
    }
    if (fm_proc_stat (getpid (), &st, &state) < 0) {
        goto fail;
    }
    fd = open (pidfile, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        goto fail;
    }
    len = snprintf (line, sizeof (line), "%d %llu\n", (int)getpid (), st);
    if (write (fd, line, (size_t)len) != len || close (fd) < 0) {
        unlink (pidfile);
        goto fail;
    }
    if (chdir ("/") < 0) {
        unlink (pidfile);
        goto fail;
    }
    execv (argv[0], argv);
    unlink (pidfile);
fail:
    e = errno;
    write_all (report, &e, sizeof (e));
    _exit (127);
}

pid_t fm_proc_spawn_detached (char *const argv[],
                         const char *pidfile,
                         const char *logfile,
                         fm_error_t *err)
{
    int pfd[2], status, e = 0;
    pid_t child, pid = -1;
    ssize_t r;

    if (!argv || !argv[0] || argv[0][0] != '/' || !pidfile || !logfile) {
        errno = EINVAL;
        return fm_errprintf (err,
                             "spawn: absolute program path, pidfile and log needed");
    }
    if (pipe2 (pfd, O_CLOEXEC) < 0) {
        return fm_errprintf (err, "pipe: %s", strerror (errno));
    }
    if ((child = fork ()) < 0) {
        e = errno;
        close (pfd[0]);
        close (pfd[1]);
        errno = e;
        return fm_errprintf (err, "fork: %s", strerror (errno));
    }
    if (child == 0) {
        pid_t g;
        close (pfd[0]);
        if (setsid () < 0) {
            e = errno;
            write_all (pfd[1], &e, sizeof (e));
            _exit (127);
        }
        if ((g = fork ()) < 0) {
            e = errno;
            write_all (pfd[1], &e, sizeof (e));
            _exit (127);
        }
        if (g == 0) {
            grandchild (argv, pidfile, logfile, pfd[1]);
        }
        /* the grandchild is reparented to init: nobody here waits for it */
        _exit (0);
    }
    close (pfd[1]);
    while (waitpid (child, &status, 0) < 0 && errno == EINTR) {
    }
    /* EOF without data: exec succeeded (the pipe closed on exec) */
    while ((r = read (pfd[0], &e, sizeof (e))) < 0 && errno == EINTR) {
    }
    close (pfd[0]);
    if (r == sizeof (e)) {
        errno = e;
        return fm_errprintf (err, "cannot start %s: %s", argv[0], strerror (e));
    }
    if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
        errno = ECHILD;
        return fm_errprintf (
            err, "cannot start %s: intermediate process failed", argv[0]);
    }
    {
        char buf[64];
        int p;
        if (read_small (pidfile, buf, sizeof (buf), O_NOFOLLOW) < 0
            || sscanf (buf, "%d", &p) != 1) {
            errno = EPROTO;
            return fm_errprintf (err, "%s: unreadable after start", pidfile);
        }
        pid = p;
    }
    return pid;
}

pid_t fm_proc_ours (const char *pidfile,
                    const char *match,
                    size_t matchlen,
                    fm_error_t *err)
{
    char buf[64], path[64], cmd[8192];
    unsigned long long want, st;
    char state, extra;
    int pid, n;

    if (read_small (pidfile, buf, sizeof (buf), O_NOFOLLOW) < 0) {
        return fm_errprintf (err, "%s: %s", pidfile, strerror (errno));
    }
    if (sscanf (buf, "%d %llu %c", &pid, &want, &extra) != 2 || pid <= 1) {
        errno = EPROTO;
        return fm_errprintf (err, "%s: malformed", pidfile);
    }
    if (fm_proc_stat (pid, &st, &state) < 0
        || st != want
        /* this machine reaps orphans slowly: a zombie is as good as gone */
        || state == 'Z' || state == 'X') {
        return 0;
    }
    if (match) {
        snprintf (path, sizeof (path), "/proc/%d/cmdline", pid);
        if ((n = read_small (path, cmd, sizeof (cmd), 0)) <= 0) {
            return 0;
        }
        if (!memmem (cmd, (size_t)n, match, matchlen)) {
            return 0;
        }
    }
    return pid;
}

int fm_proc_stop (const char *pidfile,
                  const char *match,
                  size_t matchlen,
                  int64_t grace_ns,
                  fm_error_t *err)
{
    pid_t pid = fm_proc_ours (pidfile, match, matchlen, err);
    int64_t deadline;
    int ret = FM_STOP_GONE;

    if (pid < 0) {
        if (errno == ENOENT) {
            return FM_STOP_GONE;
        }
        if (errno == EPROTO) {
            unlink (pidfile);
        }
        return -1;
    }
    if (pid > 0 && kill (pid, SIGTERM) == 0) {
        ret = FM_STOP_EXITED;
        deadline = mono_ns () + grace_ns;
        while (fm_proc_ours (pidfile, match, matchlen, NULL) > 0) {
            if (mono_ns () >= deadline) {
                /* checked again just above: still the very same process */
                kill (pid, SIGKILL);
                ret = FM_STOP_KILLED;
                break;
            }
            sleep_ns (POLL_NS);
        }
    }
    unlink (pidfile);
    return ret;
}

int fm_proc_run_as (
    uid_t uid, gid_t gid, char *const argv[], int64_t timeout_ns, fm_error_t *err)
{
    pid_t pid;
    int status, e;
    int64_t deadline;

    if (!argv || !argv[0] || argv[0][0] != '/') {
        errno = EINVAL;
        return fm_errprintf (err, "run: absolute program path needed");
    }
    if ((pid = fork ()) < 0) {
        return fm_errprintf (err, "fork: %s", strerror (errno));
    }
    if (pid == 0) {
        int fd;
        reset_child ();
        if ((fd = open ("/dev/null", O_RDWR)) >= 0) {
            dup2 (fd, STDIN_FILENO);
            dup2 (fd, STDOUT_FILENO);
            if (fd > STDERR_FILENO) {
                close (fd);
            }
        }
        for (int i = STDERR_FILENO + 1; i < 1024; i++) {
            close (i);
        }
        /* groups first: once the uid is dropped they cannot be changed */
        if (setgroups (1, &gid) < 0 || setresgid (gid, gid, gid) < 0
            || setresuid (uid, uid, uid) < 0) {
            _exit (126);
        }
        /* paranoia: regaining root must be impossible now */
        if (uid != 0 && (setuid (0) == 0 || seteuid (0) == 0)) {
            _exit (126);
        }
        if (chdir ("/") < 0) {
            _exit (126);
        }
        execv (argv[0], argv);
        _exit (127);
    }
    deadline = mono_ns () + timeout_ns;
    for (;;) {
        pid_t r = waitpid (pid, &status, WNOHANG);
        if (r == pid) {
            break;
        }
        if (r < 0 && errno != EINTR) {
            return fm_errprintf (err, "waitpid: %s", strerror (errno));
        }
        if (mono_ns () >= deadline) {
            kill (pid, SIGKILL);
            while (waitpid (pid, &status, 0) < 0 && errno == EINTR) {
            }
            errno = ETIMEDOUT;
            return fm_errprintf (err, "%s did not finish in time: killed", argv[0]);
        }
        sleep_ns (POLL_NS);
    }
    if (WIFEXITED (status)) {
        e = WEXITSTATUS (status);
        if (e == 126) {
            errno = EPERM;
            return fm_errprintf (
                err, "cannot switch to uid %u gid %u", (unsigned)uid, (unsigned)gid);
        }
        return e;
    }
    return 128 + WTERMSIG (status);
}
