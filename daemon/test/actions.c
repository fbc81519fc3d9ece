/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
/* What needs no Slurm: reason formatting, parsing of `scontrol -o` lines,
 * error mapping, and the scontrol backend's argument vectors and environment,
 * observed through a stand-in scontrol script that records its argv (the
 * real scontrol is exercised by t3101-actions.t on the minicluster).
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "actions.h"
#include "log.h"

static const char node_line[] =
    "NodeName=fmn1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 "
    "OS=Linux 6.1 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 State=IDLE+DRAIN "
    "ThreadsPerCore=1 TmpDisk=0 Weight=17 Owner=N/A Partitions=fm  "
    "ExtSensorsTemp=n/s Reason=fabric: loss: 5% a=b [root@2026-12-02T16:26:09]";

static const char job_line[] =
    "JobId=42 JobName=wrap UserId=root(0) JobState=RUNNING Reason=None "
    "Dependency=(null) Requeue=1 Restarts=2 BatchFlag=1 ReqNodeList=fmn9 "
    "ExcNodeList=(null) NodeList=fmn[2-3] BatchHost=fmn2 NumNodes=2 "
    "WorkDir=/home/x y StdOut=/home/x y/NodeList=zz";

static void test_reason_format (void **state)
{
    char out[16];

    assert_int_equal (fm_actions_reason_format ("  fabric:\tloss \n 5%  ", out, 64), 0);
    assert_string_equal (out, "fabric: loss 5%");
    assert_int_equal (fm_actions_reason_format ("\"fabric: x\"", out, sizeof (out)), 0);
    assert_string_equal (out, "'fabric: x'");
    /* Cut at 15 bytes, never inside a UTF-8 character ("é" is 2 bytes). */
    assert_int_equal (fm_actions_reason_format ("fabric: abcdefé", out, sizeof (out)),
                      0);
    assert_string_equal (out, "fabric: abcdef");
    assert_int_equal (fm_actions_reason_format ("fabric: abcdefgh", out, sizeof (out)),
                      0);
    assert_string_equal (out, "fabric: abcdefg");
    errno = 0;
    assert_int_equal (fm_actions_reason_format (" \n\t ", out, sizeof (out)), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_actions_reason_format ("x", out, 1), -1);
    assert_int_equal (fm_actions_reason_format (NULL, out, sizeof (out)), -1);
}

static void test_parse_node (void **state)
{
    fm_node_info_t n;
    fm_error_t err = {{0}};

    assert_int_equal (fm_actions_scontrol_parse_node_line (node_line, &n, &err), 0);
    assert_string_equal (n.name, "fmn1");
    assert_int_equal (n.state, FM_NODE_IDLE | FM_NODE_DRAIN);
    assert_int_equal (n.weight, 17);
    assert_string_equal (n.reason, "fabric: loss: 5% a=b");

    assert_int_equal (fm_actions_scontrol_parse_node_line (
                          "NodeName=a State=MIXED* Weight=1", &n, &err),
                      0);
    assert_int_equal (n.state, FM_NODE_MIXED | FM_NODE_NO_RESPOND);
    assert_string_equal (n.reason, "");
    /* A reason that happens to end in brackets without "user@" keeps them. */
    assert_int_equal (
        fm_actions_scontrol_parse_node_line (
            "NodeName=a State=DOWN+DRAIN Weight=1 Reason=see [ticket 7]", &n, &err),
        0);
    assert_string_equal (n.reason, "see [ticket 7]");
    assert_int_equal (n.state, FM_NODE_DOWN | FM_NODE_DRAIN);

    errno = 0;
    assert_int_equal (
        fm_actions_scontrol_parse_node_line ("State=IDLE Weight=1", &n, &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_non_null (strstr (err.text, "NodeName"));
    assert_int_equal (fm_actions_scontrol_parse_node_line (
                          "NodeName=a State=BOGUS Weight=1", &n, &err),
                      -1);
    assert_int_equal (fm_actions_scontrol_parse_node_line (
                          "NodeName=a State=IDLE Weight=x", &n, &err),
                      -1);
    /* "CfgWeight=" is not "Weight=". */
    assert_int_equal (fm_actions_scontrol_parse_node_line (
                          "NodeName=a State=IDLE CfgWeight=3", &n, &err),
                      -1);
}

static void test_parse_job (void **state)
{
    fm_job_info_t j;
    fm_error_t err = {{0}};

    assert_int_equal (fm_actions_scontrol_parse_job_line (job_line, &j, &err), 0);
    assert_int_equal (j.job_id, 42);
    assert_int_equal (j.state, FM_JOB_RUNNING);
    assert_string_equal (j.state_name, "RUNNING");
    assert_false (j.completing);
    assert_string_equal (j.nodes, "fmn[2-3]"); /* not ReqNodeList's fmn9 */
    assert_string_equal (j.batch_host, "fmn2");
    assert_true (j.requeue);
    assert_int_equal (j.restarts, 2);
    fm_actions_job_info_clear (&j);
    assert_null (j.nodes);

    assert_int_equal (fm_actions_scontrol_parse_job_line (
                          "JobId=7 JobState=COMPLETING Requeue=0 "
                          "Restarts=0 NodeList=(null) BatchHost=(null)",
                          &j,
                          &err),
                      0);
    assert_int_equal (j.state, FM_JOB_ENDED);
    assert_true (j.completing);
    assert_false (j.requeue);
    assert_string_equal (j.nodes, "");
    assert_string_equal (j.batch_host, "");
    fm_actions_job_info_clear (&j);

    assert_int_equal (fm_actions_scontrol_parse_job_line (
                          "JobId=7 JobState=WEIRD Requeue=0 Restarts=0 "
                          "NodeList=a",
                          &j,
                          &err),
                      -1);
    assert_non_null (strstr (err.text, "WEIRD"));
    assert_int_equal (
        fm_actions_scontrol_parse_job_line ("JobId=0 JobState=RUNNING", &j, &err), -1);
    assert_int_equal (
        fm_actions_scontrol_parse_job_line ("JobId=7 JobState=RUNNING Requeue=1 "
                                            "Restarts=0",
                                            &j,
                                            &err),
        -1);
    assert_non_null (strstr (err.text, "NodeList"));
}

static void test_errno_map (void **state)
{
    static const struct {
        const char *msg;
        int errnum;
    } t[] = {
        {"slurm_load_node error: Unable to contact slurm controller (connect failure)",
         EAGAIN},
        {"slurm_load_node error: Socket timed out on send/recv operation", EAGAIN},
        {"slurm_update error: Invalid node name specified", ENOENT},
        {"Node nosuch not found", ENOENT},
        {"slurm_load_jobs error: Invalid job id specified", ESRCH},
        {"scancel: error: Kill job error on job id 9: Job/step already completing or "
         "completed",
         ESRCH},
        {"Requested operation is presently disabled for job 2", EPERM},
        {"Access/permission denied", EPERM},
        {"something new", EIO},
    };

    for (size_t i = 0; i < sizeof (t) / sizeof (t[0]); i++) {
        assert_int_equal (fm_actions_scontrol_errno_from_message (t[i].msg),
                          t[i].errnum);
    }
    assert_int_equal (fm_actions_scontrol_errno_from_message (NULL), EIO);
}

/* A stand-in scontrol: records SLURM_CONF and each argv element on its own
 * line, answers `show node`/`show job` from files, and fails or hangs on
 * demand.
 */
static const char fake_script[] =
    "#!/bin/sh\n"
    "d=$(dirname \"$0\")\n"
    "{ echo \"conf=$SLURM_CONF\"; for a in \"$@\"; do echo \"arg=$a\"; done; "
    "echo end; } >>\"$d/calls\"\n"
    "[ -e \"$d/hang\" ] && exec sleep 60\n"
    "[ -e \"$d/big\" ] && exec head -c 34000000 /dev/zero\n"
    "if [ -e \"$d/down\" ]; then\n"
    "  echo 'slurm_load_node error: Unable to contact slurm controller (connect "
    "failure)' >&2; exit 1\n"
    "fi\n"
    "case \"$2\" in show) cat \"$d/$3.out\" ;; esac\n"
    "exit 0\n";

typedef struct {
    char dir[64];
    char path[128];
    fm_actions_t *a;
} fake_t;

static void fake_write (fake_t *f, const char *name, const char *text)
{
    char p[160];
    FILE *fp;

    snprintf (p, sizeof (p), "%s/%s", f->dir, name);
    assert_non_null (fp = fopen (p, "w"));
    fputs (text, fp);
    fclose (fp);
}

static char *fake_calls (fake_t *f)
{
    char p[160];
    static char buf[4096];
    FILE *fp;
    size_t n = 0;

    snprintf (p, sizeof (p), "%s/calls", f->dir);
    if ((fp = fopen (p, "r"))) {
        n = fread (buf, 1, sizeof (buf) - 1, fp);
        fclose (fp);
        unlink (p);
    }
    buf[n] = '\0';
    return buf;
}

static int fake_setup (void **state)
{
    fake_t *f = calloc (1, sizeof (*f));
    fm_actions_opts_t opts = {0};
    fm_error_t err = {{0}};

    assert_non_null (f);
    strcpy (f->dir, "/tmp/fm-actions-test.XXXXXX");
    assert_non_null (mkdtemp (f->dir));
    snprintf (f->path, sizeof (f->path), "%s/scontrol", f->dir);
    fake_write (f, "scontrol", fake_script);
    assert_int_equal (chmod (f->path, 0700), 0);
    fake_write (f, "slurm.conf", "");
    char conf[160];
    snprintf (conf, sizeof (conf), "%s/slurm.conf", f->dir);
    opts.slurm_conf = conf;
    opts.scontrol = f->path;
    opts.scancel = f->path;
    /* long enough to read 34 MB of output on a loaded CI machine under ASan,
     * and 10-50 times slower under valgrind; the hang case waits this long
     */
    opts.timeout_ms = getenv ("FM_VALGRIND") ? 20000 : 3000;
    assert_non_null (f->a = fm_actions_create ("scontrol", &opts, &err));
    assert_string_equal (fm_actions_kind (f->a), "scontrol");
    *state = f;
    return 0;
}

static int fake_teardown (void **state)
{
    fake_t *f = *state;
    const char *names[] = {"scontrol",
                           "slurm.conf",
                           "calls",
                           "node.out",
                           "job.out",
                           "down",
                           "hang",
                           "big"};
    char p[160];

    fm_actions_destroy (f->a);
    for (size_t i = 0; i < sizeof (names) / sizeof (names[0]); i++) {
        snprintf (p, sizeof (p), "%s/%s", f->dir, names[i]);
        unlink (p);
    }
    rmdir (f->dir);
    free (f);
    return 0;
}

static void test_scontrol_argv (void **state)
{
    fake_t *f = *state;
    fm_error_t err = {{0}};
    char want[1024];
    char conf[160];

    snprintf (conf, sizeof (conf), "conf=%s/slurm.conf\n", f->dir);
    fake_write (f, "node.out", "NodeName=fmn1 State=IDLE Weight=1\n");
    fake_calls (f);

    /* The reason is one argv element, sanitised; no shell is involved. */
    assert_int_equal (fm_actions_drain (f->a, "fmn1", "fabric: $(x) \"q\"; a b", &err),
                      FM_ACTIONS_DONE);
    snprintf (want,
              sizeof (want),
              "%sarg=-o\narg=show\narg=node\narg=fmn1\nend\n"
              "%sarg=update\narg=NodeName=fmn1\narg=State=DRAIN\n"
              "arg=Reason=fabric: $(x) 'q'; a b\nend\n",
              conf,
              conf);
    assert_string_equal (fake_calls (f), want);

    assert_int_equal (fm_actions_set_weight (f->a, "fmn1", 5, &err), FM_ACTIONS_DONE);
    assert_non_null (
        strstr (fake_calls (f), "arg=update\narg=NodeName=fmn1\narg=Weight=5\nend"));
    assert_int_equal (fm_actions_set_weight (f->a, "fmn1", 1, &err),
                      FM_ACTIONS_ALREADY);
    assert_null (strstr (fake_calls (f), "update"));

    /* Resume re-reads the reason; a foreign one is refused without an update. */
    fake_write (
        f, "node.out", "NodeName=fmn1 State=IDLE+DRAIN Weight=1 Reason=admin [a@t]\n");
    errno = 0;
    assert_int_equal (fm_actions_resume (f->a, "fmn1", &err), -1);
    assert_int_equal (errno, EPERM);
    assert_non_null (strstr (err.text, "admin"));
    assert_int_equal (fm_actions_drain (f->a, "fmn1", "fabric: x", &err),
                      FM_ACTIONS_FOREIGN);
    assert_null (strstr (fake_calls (f), "update"));
    fake_write (f,
                "node.out",
                "NodeName=fmn1 State=IDLE+DRAIN Weight=1 Reason=fabric: x [a@t]\n");
    assert_int_equal (fm_actions_drain (f->a, "fmn1", "fabric: y", &err),
                      FM_ACTIONS_ALREADY);
    assert_int_equal (fm_actions_resume (f->a, "fmn1", &err), FM_ACTIONS_DONE);
    assert_non_null (
        strstr (fake_calls (f), "arg=NodeName=fmn1\narg=State=RESUME\nend"));

    /* Jobs: scancel's and requeue's vectors. */
    fake_write (f,
                "job.out",
                "JobId=9 JobState=RUNNING Requeue=1 Restarts=0 NodeList=fmn[1-2] "
                "BatchHost=fmn1\n"
                "JobId=10 JobState=RUNNING Requeue=1 Restarts=0 NodeList=fmn3 "
                "BatchHost=fmn3\n");
    assert_int_equal (fm_actions_signal_job (f->a, 9, 10, true, &err), FM_ACTIONS_DONE);
    assert_non_null (
        strstr (fake_calls (f), "arg=--signal=10\narg=--batch\narg=9\nend"));
    assert_int_equal (fm_actions_signal_job (f->a, 9, 12, false, &err),
                      FM_ACTIONS_DONE);
    assert_non_null (strstr (fake_calls (f), "arg=--signal=12\narg=9\nend"));
    assert_int_equal (fm_actions_requeue (f->a, 9, &err), FM_ACTIONS_DONE);
    assert_non_null (strstr (fake_calls (f), "arg=requeue\narg=9\nend"));

    fm_job_info_t *jobs;
    size_t n;
    assert_int_equal (fm_actions_jobs_on_node (f->a, "fmn2", &jobs, &n, &err), 0);
    assert_int_equal (n, 1);
    assert_int_equal (jobs[0].job_id, 9);
    fm_actions_job_info_free (jobs, n);
    assert_non_null (strstr (fake_calls (f), "arg=-o\narg=show\narg=job\nend"));

    fake_write (
        f, "job.out", "JobId=9 JobState=PENDING Requeue=1 Restarts=1 NodeList=\n");
    assert_int_equal (fm_actions_requeue (f->a, 9, &err), FM_ACTIONS_ALREADY);
    errno = 0;
    assert_int_equal (fm_actions_signal_job (f->a, 9, 10, true, &err), -1);
    assert_int_equal (errno, ESRCH);
    fake_write (
        f, "job.out", "JobId=9 JobState=RUNNING Requeue=0 Restarts=0 NodeList=a\n");
    assert_int_equal (fm_actions_requeue (f->a, 9, &err), -1);
    assert_int_equal (errno, EPERM);
    assert_null (strstr (fake_calls (f), "requeue"));

    /* Names that would address other nodes never reach scontrol. */
    assert_int_equal (fm_actions_drain (f->a, "fmn[1-4]", "fabric: x", &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_actions_resume (f->a, "a State=DOWN", &err), -1);
    assert_int_equal (fm_actions_drain (f->a, "fmn1", "loss", &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_actions_set_weight (f->a, "fmn1", 0, &err), -1);
    assert_int_equal (fm_actions_signal_job (f->a, 0, 10, false, &err), -1);
    assert_string_equal (fake_calls (f), "");
}

static void test_scontrol_errors (void **state)
{
    fake_t *f = *state;
    fm_error_t err = {{0}};
    fm_node_info_t n;

    fake_write (f, "down", "");
    errno = 0;
    assert_int_equal (fm_actions_node_info (f->a, "fmn1", &n, &err), -1);
    assert_int_equal (errno, EAGAIN);
    assert_non_null (strstr (err.text, "Unable to contact slurm controller"));
    fake_write (f, "node.out", "garbage\n");
    char p[160];
    snprintf (p, sizeof (p), "%s/down", f->dir);
    unlink (p);
    assert_int_equal (fm_actions_node_info (f->a, "fmn1", &n, &err), -1);
    assert_int_equal (errno, EINVAL);
    fake_write (f, "node.out", "");
    assert_int_equal (fm_actions_node_info (f->a, "fmn1", &n, &err), -1);
    assert_int_equal (errno, ENOENT);

    /* Output past the cap is refused, not parsed. */
    fake_write (f, "big", "");
    errno = 0;
    assert_int_equal (fm_actions_node_info (f->a, "fmn1", &n, &err), -1);
    assert_int_equal (errno, EOVERFLOW);
    snprintf (p, sizeof (p), "%s/big", f->dir);
    unlink (p);

    fake_write (f, "hang", "");
    errno = 0;
    assert_int_equal (fm_actions_node_info (f->a, "fmn1", &n, &err), -1);
    assert_int_equal (errno, EAGAIN);
    assert_non_null (strstr (err.text, "timed out"));
}

static void test_dry_run (void **state)
{
    fake_t *f = *state;
    fm_actions_opts_t opts = {.scontrol = f->path, .scancel = f->path, .dry_run = true};
    fm_error_t err = {{0}};
    fm_actions_t *a;

    assert_non_null (a = fm_actions_create ("scontrol", &opts, &err));
    fake_write (f, "node.out", "NodeName=fmn1 State=IDLE Weight=1\n");
    fake_write (
        f, "job.out", "JobId=9 JobState=RUNNING Requeue=1 Restarts=0 NodeList=fmn1\n");
    fake_calls (f);
    assert_int_equal (fm_actions_drain (a, "fmn1", "fabric: x", &err), FM_ACTIONS_DONE);
    assert_int_equal (fm_actions_set_weight (a, "fmn1", 9, &err), FM_ACTIONS_DONE);
    assert_int_equal (fm_actions_signal_job (a, 9, 10, true, &err), FM_ACTIONS_DONE);
    assert_int_equal (fm_actions_requeue (a, 9, &err), FM_ACTIONS_DONE);
    char *calls = fake_calls (f);
    assert_null (strstr (calls, "update"));
    assert_null (strstr (calls, "requeue"));
    assert_null (strstr (calls, "--signal"));
    assert_non_null (strstr (calls, "conf=\n")); /* no slurm_conf: none set */
    fm_actions_destroy (a);
}

static void test_create (void **state)
{
    fm_error_t err = {{0}};
    fm_actions_opts_t opts = {.slurm_conf = "/nonexistent/slurm.conf"};

    errno = 0;
    assert_null (fm_actions_create ("slurmrestd", NULL, &err));
    assert_int_equal (errno, EINVAL);
    assert_null (fm_actions_create (NULL, NULL, &err));
    assert_null (fm_actions_create ("scontrol", &opts, &err));
    assert_int_equal (errno, ENOENT);
    assert_non_null (strstr (err.text, "/nonexistent/slurm.conf"));
#if HAVE_LIBSLURM
    /* No slurm.conf for libslurm: ENOENT (slurm_init() would exit), and
     * "auto" falls back to scontrol.
     */
    fm_actions_t *a;
    setenv ("SLURM_CONF", "/nonexistent/slurm.conf", 1);
    errno = 0;
    assert_null (fm_actions_create ("libslurm", NULL, &err));
    assert_int_equal (errno, ENOENT);
    assert_non_null (strstr (err.text, "SLURM_CONF=/nonexistent"));
    assert_non_null (a = fm_actions_create ("auto", NULL, &err));
    assert_string_equal (fm_actions_kind (a), "scontrol");
    fm_actions_destroy (a);
    unsetenv ("SLURM_CONF");
#else
    assert_null (fm_actions_create ("libslurm", NULL, &err));
    assert_int_equal (errno, ENOTSUP);
#endif
    fm_actions_destroy (NULL);
    assert_string_equal (fm_actions_result_name (FM_ACTIONS_FOREIGN), "foreign");
    assert_string_equal (fm_actions_result_name (-1), "error");
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_reason_format),
        cmocka_unit_test (test_parse_node),
        cmocka_unit_test (test_parse_job),
        cmocka_unit_test (test_errno_map),
        cmocka_unit_test_setup_teardown (test_scontrol_argv, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown (
            test_scontrol_errors, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown (test_dry_run, fake_setup, fake_teardown),
        cmocka_unit_test (test_create),
    };

    fm_log_init ("actions.t", 0, LOG_ERR);
    return cmocka_run_group_tests (tests, NULL, NULL);
}
