/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <slurm/slurm.h>

#include "plugin.h"
#include "proc.h"
#include "stubs.h"

/* The plugin's entry points driven as Slurm drives them, against stub
 * spank_* symbols, with a real detached "agent" (a shell script that records
 * its arguments and how it was stopped) and real files.
 */

static char tmpdir[256];
static char agent[300];
static char statedir[300];
static char arg_agent[320], arg_statedir[320];

static void write_file (const char *path, const char *text, mode_t mode)
{
    FILE *fp = fopen (path, "w");

    assert_non_null (fp);
    fputs (text, fp);
    fclose (fp);
    chmod (path, mode);
}

static int read_file (const char *path, char *buf, size_t size)
{
    FILE *fp = fopen (path, "r");
    size_t n;

    if (!fp) {
        return -1;
    }
    n = fread (buf, 1, size - 1, fp);
    buf[n] = '\0';
    fclose (fp);
    return (int)n;
}

static void sleep_ms (int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

    nanosleep (&ts, NULL);
}

/* Wait up to 5 s for path to appear. */
static bool wait_file (const char *path)
{
    for (int i = 0; i < 250; i++) {
        if (access (path, F_OK) == 0) {
            return true;
        }
        sleep_ms (20);
    }
    return false;
}

static int setup (void **state)
{
    char script[1024];

    snprintf (tmpdir, sizeof (tmpdir), "/tmp/fm-spank-test.XXXXXX");
    if (!mkdtemp (tmpdir)) {
        return -1;
    }
    snprintf (agent, sizeof (agent), "%s/agent", tmpdir);
    snprintf (statedir, sizeof (statedir), "%s/state", tmpdir);
    snprintf (arg_agent, sizeof (arg_agent), "agent=%s", agent);
    snprintf (arg_statedir, sizeof (arg_statedir), "statedir=%s", statedir);
    snprintf (script,
              sizeof (script),
              "#!/bin/sh\n"
              "d=%s\n"
              "if [ \"$1\" = --summary ]; then\n"
              "  echo \"$*\" > $d/summary-args\n"
              "  while [ $# -gt 0 ]; do [ \"$1\" = --output ] && out=$2; shift; done\n"
              "  echo \"fabric-monitor: summary by uid $(id -u)\" >> \"$out\"\n"
              "  exit 0\n"
              "fi\n"
              "trap 'echo term > $d/terms; exit 0' TERM\n"
              "echo \"$*\" > $d/args.tmp && mv $d/args.tmp $d/args\n"
              "while [ -d $d ]; do sleep 0.05; done\n",
              tmpdir);
    write_file (agent, script, 0755);
    return 0;
}

static int teardown (void **state)
{
    char cmd[512];

    snprintf (cmd, sizeof (cmd), "rm -rf '%s'", tmpdir);
    return system (cmd) == 0 ? 0 : -1;
}

static void reset (spank_context_t ctx)
{
    char path[512];

    memset (&stub, 0, sizeof (stub));
    stub.ctx = ctx;
    stub.job_id = 42;
    stub.step_id = SLURM_BATCH_SCRIPT;
    stub.uid = getuid ();
    stub.gid = getgid ();
    snprintf (path, sizeof (path), "%s/args", tmpdir);
    unlink (path);
    snprintf (path, sizeof (path), "%s/terms", tmpdir);
    unlink (path);
    setenv ("SLURMD_NODENAME", "fmn1", 1);
    unsetenv ("SLURM_JOB_NODELIST");
    setenv ("SLURM_NODELIST", "fmn[1-2]", 1); /* what slurmd 22.05 sets */
}

static int init (int ac, char **av)
{
    return slurm_spank_init (NULL, ac, av);
}

static void test_init_registers_everywhere (void **state)
{
    spank_context_t ctxs[] = {
        S_CTX_LOCAL, S_CTX_ALLOCATOR, S_CTX_REMOTE, S_CTX_JOB_SCRIPT};
    char *bad[] = {"nonsense=1"};

    for (size_t i = 0; i < 4; i++) {
        reset (ctxs[i]);
        assert_int_equal (init (0, NULL), 0);
        assert_int_equal (stub.registered, 1);
        assert_string_equal (stub.option->name, "fabric-monitor");
        assert_int_equal (stub.option->has_arg, 2);
        assert_true (fm_plugin.ready);
    }
    /* a site error makes the plugin inert, not the job fail */
    reset (S_CTX_JOB_SCRIPT);
    assert_int_equal (init (1, bad), 0);
    assert_int_equal (stub.registered, 1);
    assert_false (fm_plugin.ready);
    assert_true (stub_logged ("unknown plugstack argument 'nonsense=1'"));
    assert_int_equal (slurm_spank_job_prolog (NULL, 1, bad), 0);
    assert_int_equal (slurm_spank_job_epilog (NULL, 1, bad), 0);
}

static void test_option_callback (void **state)
{
    reset (S_CTX_ALLOCATOR);
    init (0, NULL);
    /* sbatch --fabric-monitor=bogus is refused with a message */
    assert_int_equal (stub.option->cb (0, "bogus", 0), -1);
    assert_true (stub_logged ("invalid value 'bogus'"));
    assert_int_equal (stub.option->cb (0, "protect,rate=5", 0), 0);
    assert_int_equal (stub.option->cb (0, NULL, 0), 0);
    /* remotely a bad value never fails the step, it disables monitoring */
    reset (S_CTX_REMOTE);
    init (0, NULL);
    assert_int_equal (stub.option->cb (0, "bogus", 1), 0);
    assert_int_equal (fm_plugin_request (NULL).mode, FM_MODE_OFF);
}

static void test_task_environment (void **state)
{
    char *av[] = {"daemon=http://10.77.0.1:8470"};
    char *def[] = {"default=observe"};

    reset (S_CTX_REMOTE);
    init (1, av);
    assert_int_equal (stub.option->cb (0, "protect", 1), 0);
    assert_int_equal (slurm_spank_user_init (NULL, 1, av), 0);
    assert_string_equal (stub_env ("FABRIC_MONITOR"), "1");
    assert_string_equal (stub_env ("FABRIC_MONITOR_MODE"), "protect");
    assert_string_equal (stub_env ("FABRIC_MONITOR_SUMMARY"),
                         "http://10.77.0.1:8470/v1/jobs/42/summary");

    /* without the option and with default=off: nothing */
    reset (S_CTX_REMOTE);
    init (0, NULL);
    slurm_spank_user_init (NULL, 0, NULL);
    assert_int_equal (stub.nenv, 0);

    /* default=observe monitors jobs that did not ask; the batch step sees "" */
    reset (S_CTX_REMOTE);
    init (1, def);
    slurm_spank_user_init (NULL, 1, def);
    assert_string_equal (stub_env ("FABRIC_MONITOR_MODE"), "observe");
    reset (S_CTX_REMOTE);
    init (1, def);
    stub.option->cb (0, "", 1);
    slurm_spank_user_init (NULL, 1, def);
    assert_string_equal (stub_env ("FABRIC_MONITOR_MODE"), "observe");
    reset (S_CTX_REMOTE);
    init (1, def);
    stub.option->cb (0, "off", 1);
    slurm_spank_user_init (NULL, 1, def);
    assert_int_equal (stub.nenv, 0);
}

static void prolog_args (char **av, int *ac)
{
    *ac = 0;
    av[(*ac)++] = "daemon=http://10.77.0.1:8470";
    av[(*ac)++] = arg_agent;
    av[(*ac)++] = arg_statedir;
    av[(*ac)++] = "munge_socket=/run/munge/test.sock";
}

static void test_prolog_epilog (void **state)
{
    char *av[8];
    int ac;
    char path[512], buf[2048], want[2048], out[512];
    struct stat sb;
    pid_t pid;
    int stdout_copy, fd;

    prolog_args (av, &ac);
    reset (S_CTX_JOB_SCRIPT);
    stub.opt_given = true;
    stub.optarg = "protect,rate=20";
    assert_int_equal (init (ac, av), 0);
    assert_int_equal (slurm_spank_job_prolog (NULL, ac, av), 0);

    /* the agent runs detached, in its own session, with the documented argv */
    snprintf (path, sizeof (path), "%s/args", tmpdir);
    assert_true (wait_file (path));
    read_file (path, buf, sizeof (buf));
    snprintf (want,
              sizeof (want),
              "--daemon http://10.77.0.1:8470 --job 42 --node fmn1 --nodes fmn[1-2] "
              "--uid %u --statedir %s/fmn1/job.42 --mode protect "
              "--munge-socket /run/munge/test.sock --rate 20\n",
              (unsigned)getuid (),
              statedir);
    assert_string_equal (buf, want);
    snprintf (path, sizeof (path), "%s/fmn1/job.42/agent.pid", statedir);
    assert_int_equal (read_file (path, buf, sizeof (buf)) > 0, 1);
    pid = atoi (buf);
    assert_true (pid > 1);
    assert_int_equal (kill (pid, 0), 0);
    /* a new session, of which it is not the leader (no controlling tty ever) */
    assert_int_not_equal (getsid (pid), getsid (0));
    assert_int_not_equal (getsid (pid), pid);
    /* the batch task's directory belongs to the job user alone */
    snprintf (path, sizeof (path), "%s/fmn1/job.42/out", statedir);
    assert_int_equal (lstat (path, &sb), 0);
    assert_int_equal (sb.st_uid, getuid ());
    assert_int_equal (sb.st_mode & 07777, 0700);

    /* the batch task records its output file (remote task_init) */
    snprintf (out, sizeof (out), "%s/slurm-42.out", tmpdir);
    write_file (out, "job output\n", 0644);
    reset (S_CTX_REMOTE);
    init (ac, av);
    stub.option->cb (0, "protect,rate=20", 1);
    fflush (stdout);
    stdout_copy = dup (STDOUT_FILENO);
    fd = open (out, O_WRONLY | O_APPEND);
    dup2 (fd, STDOUT_FILENO);
    close (fd);
    assert_int_equal (slurm_spank_task_init (NULL, ac, av), 0);
    dup2 (stdout_copy, STDOUT_FILENO);
    close (stdout_copy);
    snprintf (path, sizeof (path), "%s/fmn1/job.42/out/stdout", statedir);
    read_file (path, buf, sizeof (buf));
    assert_string_equal (buf, out);

    /* epilog: the agent is asked to stop (SIGTERM) and the summary appended */
    reset (S_CTX_JOB_SCRIPT);
    stub.opt_given = true;
    stub.optarg = "protect,rate=20";
    init (ac, av);
    assert_int_equal (slurm_spank_job_epilog (NULL, ac, av), 0);
    snprintf (path, sizeof (path), "%s/terms", tmpdir);
    assert_int_equal (read_file (path, buf, sizeof (buf)), 5);
    assert_string_equal (buf, "term\n");
    assert_int_equal (fm_proc_ours (path, NULL, 0, NULL), -1);
    snprintf (path, sizeof (path), "%s/fmn1/job.42", statedir);
    assert_int_equal (access (path, F_OK), -1);
    if (geteuid () == 0) {
        read_file (out, buf, sizeof (buf));
        assert_string_equal (buf, "job output\nfabric-monitor: summary by uid 0\n");
        snprintf (path, sizeof (path), "%s/summary-args", tmpdir);
        read_file (path, buf, sizeof (buf));
        snprintf (want,
                  sizeof (want),
                  "--summary --daemon http://10.77.0.1:8470 --job 42 --output %s "
                  "--wait 10s --munge-socket /run/munge/test.sock\n",
                  out);
        assert_string_equal (buf, want);
    }
}

static void test_prolog_failsafe (void **state)
{
    char *av[8];
    char missing[] = "agent=/nonexistent/fabric-agent";
    char fail[] = "failonerror";
    char path[512];
    int ac;

    prolog_args (av, &ac);
    /* mode off: nothing is started or created */
    reset (S_CTX_JOB_SCRIPT);
    stub.opt_given = true;
    stub.optarg = "off";
    init (ac, av);
    assert_int_equal (slurm_spank_job_prolog (NULL, ac, av), 0);
    snprintf (path, sizeof (path), "%s/fmn1/job.42", statedir);
    assert_int_equal (access (path, F_OK), -1);
    /* a job that did not ask, default off */
    reset (S_CTX_JOB_SCRIPT);
    init (ac, av);
    assert_int_equal (slurm_spank_job_prolog (NULL, ac, av), 0);
    assert_int_equal (access (path, F_OK), -1);

    /* agent missing: logged, job goes on; failonerror makes it fatal */
    av[1] = missing;
    reset (S_CTX_JOB_SCRIPT);
    stub.opt_given = true;
    init (ac, av);
    assert_int_equal (slurm_spank_job_prolog (NULL, ac, av), 0);
    assert_true (stub_logged ("/nonexistent/fabric-agent"));
    assert_true (stub_logged ("not monitored"));
    av[ac++] = fail;
    reset (S_CTX_JOB_SCRIPT);
    stub.opt_given = true;
    init (ac, av);
    assert_int_equal (slurm_spank_job_prolog (NULL, ac, av), -1);
    /* the epilog of an unmonitored job does nothing and never fails */
    assert_int_equal (slurm_spank_job_epilog (NULL, ac, av), 0);

    /* an agent others could replace is never run as root */
    ac--;
    {
        char gw[400], cmd[1024], arg[420];
        snprintf (gw, sizeof (gw), "%s/gw", tmpdir);
        mkdir (gw, 0777);
        chmod (gw, 0777);
        snprintf (cmd, sizeof (cmd), "cp '%s' '%s/agent'", agent, gw);
        assert_int_equal (system (cmd), 0);
        snprintf (arg, sizeof (arg), "agent=%s/agent", gw);
        av[1] = arg;
        reset (S_CTX_JOB_SCRIPT);
        stub.opt_given = true;
        init (ac, av);
        assert_int_equal (slurm_spank_job_prolog (NULL, ac, av), 0);
        assert_true (stub_logged ("not monitored"));
        assert_int_equal (access (path, F_OK), -1);
        av[1] = arg_agent;
    }
    /* Slurm items unavailable */
    reset (S_CTX_JOB_SCRIPT);
    stub.opt_given = true;
    stub.no_items = true;
    init (ac, av);
    assert_int_equal (slurm_spank_job_prolog (NULL, ac, av), 0);
    assert_int_equal (slurm_spank_job_epilog (NULL, ac, av), 0);
}

static pid_t start_sleeper (bool ignore_term)
{
    pid_t pid = fork ();

    assert_true (pid >= 0);
    if (pid == 0) {
        execl ("/bin/sh",
               "sh",
               "-c",
               ignore_term ? "trap '' TERM; while :; do sleep 1; done"
                           : "while :; do sleep 1; done",
               "sh",
               "--job",
               (char *)NULL);
        _exit (127);
    }
    sleep_ms (50);
    return pid;
}

static void test_stop_only_ours (void **state)
{
    char pidfile[512], line[64];
    unsigned long long st;
    char s;
    pid_t pid = start_sleeper (true);
    fm_error_t err;
    int status;

    snprintf (pidfile, sizeof (pidfile), "%s/x.pid", tmpdir);
    assert_int_equal (fm_proc_stat (pid, &st, &s), 0);

    /* same pid, other start time: a recycled pid is never signalled */
    snprintf (line, sizeof (line), "%d %llu\n", (int)pid, st + 1);
    write_file (pidfile, line, 0644);
    assert_int_equal (fm_proc_stop (pidfile, NULL, 0, 100000000, &err), FM_STOP_GONE);
    assert_int_equal (kill (pid, 0), 0);
    assert_int_equal (access (pidfile, F_OK), -1);

    /* the right process, but its command line lacks the job argument */
    snprintf (line, sizeof (line), "%d %llu\n", (int)pid, st);
    write_file (pidfile, line, 0644);
    assert_int_equal (fm_proc_stop (pidfile,
                                    "--job\0"
                                    "7",
                                    8,
                                    100000000,
                                    &err),
                      FM_STOP_GONE);
    assert_int_equal (kill (pid, 0), 0);

    /* ours, ignoring SIGTERM: killed after the grace time */
    write_file (pidfile, line, 0644);
    assert_int_equal (fm_proc_stop (pidfile, "--job", 6, 200000000, &err),
                      FM_STOP_KILLED);
    assert_int_equal (waitpid (pid, &status, 0), pid);
    assert_true (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);

    /* malformed and missing pidfiles */
    write_file (pidfile, "garbage\n", 0644);
    assert_int_equal (fm_proc_stop (pidfile, NULL, 0, 1000, &err), -1);
    assert_int_equal (errno, EPROTO);
    assert_int_equal (access (pidfile, F_OK), -1);
    assert_int_equal (fm_proc_stop (pidfile, NULL, 0, 1000, &err), FM_STOP_GONE);
}

static void test_spawn_errors (void **state)
{
    char pidfile[512], logfile[512];
    char *rel[] = {"agent", NULL};
    char *missing[] = {"/nonexistent/agent", NULL};
    fm_error_t err;

    snprintf (pidfile, sizeof (pidfile), "%s/s.pid", tmpdir);
    snprintf (logfile, sizeof (logfile), "%s/s.log", tmpdir);
    assert_int_equal (fm_proc_spawn_detached (rel, pidfile, logfile, &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_proc_spawn_detached (missing, pidfile, logfile, &err), -1);
    assert_int_equal (errno, ENOENT);
    assert_non_null (strstr (err.text, "/nonexistent/agent"));
    assert_int_equal (access (pidfile, F_OK), -1);
}

static void test_run_as (void **state)
{
    char *t[] = {"/bin/true", NULL};
    char *f[] = {"/bin/sh", "-c", "exit 3", NULL};
    char *slow[] = {"/bin/sleep", "10", NULL};
    fm_error_t err;

    assert_int_equal (fm_proc_run_as (getuid (), getgid (), t, 1000000000, &err),
                      geteuid () == 0 ? 0 : -1);
    if (geteuid () != 0) {
        skip ();
    }
    assert_int_equal (fm_proc_run_as (0, 0, f, 1000000000, &err), 3);
    assert_int_equal (fm_proc_run_as (0, 0, slow, 100000000, &err), -1);
    assert_int_equal (errno, ETIMEDOUT);
    /* a dropped identity sticks: the child runs as the target uid */
    {
        char *id[] = {"/bin/sh", "-c", "test \"$(id -u)\" = 65534", NULL};
        assert_int_equal (fm_proc_run_as (65534, 65534, id, 2000000000, &err), 0);
    }
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_init_registers_everywhere),
        cmocka_unit_test (test_option_callback),
        cmocka_unit_test (test_task_environment),
        cmocka_unit_test (test_prolog_epilog),
        cmocka_unit_test (test_prolog_failsafe),
        cmocka_unit_test (test_stop_only_ours),
        cmocka_unit_test (test_spawn_errors),
        cmocka_unit_test (test_run_as),
    };
    return cmocka_run_group_tests (tests, setup, teardown);
}
