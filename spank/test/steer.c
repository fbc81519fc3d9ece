/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
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
#include <slurm/slurm.h>

#include "plugin.h"
#include "stubs.h"

/* NCCL_IB_HCA steering (steer.c) through the remote task_init entry point,
 * against stub spank_* symbols and a real job directory with the agent's file.
 */

static char tmpdir[256], jobdir[512], file[600], arg_statedir[320];

static void put (const char *text, uid_t owner)
{
    FILE *fp = fopen (file, "w");

    assert_non_null (fp);
    fputs (text, fp);
    fclose (fp);
    assert_int_equal (chown (file, owner, 0), 0);
}

static int setup (void **state)
{
    char *av[2] = {"default=observe", arg_statedir};

    snprintf (tmpdir, sizeof (tmpdir), "/tmp/fm-steer-test.XXXXXX");
    if (!mkdtemp (tmpdir)) {
        return -1;
    }
    snprintf (arg_statedir, sizeof (arg_statedir), "statedir=%s", tmpdir);
    snprintf (jobdir, sizeof (jobdir), "%s/fmn2", tmpdir);
    mkdir (jobdir, 0755);
    snprintf (jobdir, sizeof (jobdir), "%s/fmn2/job.42", tmpdir);
    mkdir (jobdir, 0711);
    snprintf (file, sizeof (file), "%s/" FM_SPANK_STEER_FILE, jobdir);
    memset (&stub, 0, sizeof (stub));
    stub.ctx = S_CTX_REMOTE;
    fm_plugin_setup_conf (2, av);
    setenv ("SLURMD_NODENAME", "fmn2", 1);
    unsetenv ("NCCL_IB_HCA");
    return fm_plugin.ready ? 0 : -1;
}

static int teardown (void **state)
{
    char cmd[512];

    snprintf (cmd, sizeof (cmd), "rm -rf '%s'", tmpdir);
    return system (cmd) == 0 ? 0 : -1;
}

/* task_init of task `task` of step 0 of job 42 */
static void task_init (uint32_t task)
{
    stub.nenv = 0;
    stub.nlog = 0;
    stub.job_id = 42;
    stub.step_id = 0;
    stub.task_id = task;
    assert_int_equal (fm_spank_remote_task_init (NULL), 0);
}

static void test_parse (void **state)
{
    char v[64];

    assert_int_equal (fm_spank_steer_parse ("mlx5_1:1\n", v, sizeof (v)), 1);
    assert_string_equal (v, "^=mlx5_1:1");
    assert_int_equal (fm_spank_steer_parse ("mlx5_1:1,mlx5_3:2", v, sizeof (v)), 1);
    assert_string_equal (v, "^=mlx5_1:1,mlx5_3:2");
    assert_int_equal (fm_spank_steer_parse ("\n", v, sizeof (v)), 0);
    assert_int_equal (fm_spank_steer_parse ("", v, sizeof (v)), 0);
    static const char *const bad[] = {"mlx5_1",
                                      "mlx5_1:",
                                      ":1",
                                      "mlx5_1:1,",
                                      "mlx5_1:1,,x:1",
                                      "mlx5_1:x",
                                      "mlx5_1:1:2",
                                      "mlx5 1:1",
                                      "mlx5_1:1;rm",
                                      "a:1\nb:1\n",
                                      "a:1,:1",
                                      NULL};
    for (int i = 0; bad[i]; i++) {
        errno = 0;
        if (fm_spank_steer_parse (bad[i], v, sizeof (v)) != -1 || errno != EINVAL) {
            fail_msg ("'%s' accepted", bad[i]);
        }
    }
    errno = 0;
    assert_int_equal (fm_spank_steer_parse ("mlx5_1:1", v, 8), -1);
    assert_int_equal (errno, ENAMETOOLONG);
}

static void test_task (void **state)
{
    /* no file: nothing */
    task_init (0);
    assert_null (stub_env ("NCCL_IB_HCA"));
    /* every task of every step gets it, not only the batch task */
    put ("mlx5_1:1\n", 0);
    task_init (3);
    assert_string_equal (stub_env ("NCCL_IB_HCA"), "^=mlx5_1:1");
    assert_true (stub_logged ("NCCL_IB_HCA=^=mlx5_1:1"));
    /* nothing degraded (any more): nothing */
    put ("\n", 0);
    task_init (0);
    assert_null (stub_env ("NCCL_IB_HCA"));
    /* a file root did not write is not the agent's */
    put ("mlx5_1:1\n", 65534);
    task_init (0);
    assert_null (stub_env ("NCCL_IB_HCA"));
    /* malformed: ignored, said */
    put ("mlx5_1:1;x\n", 0);
    task_init (0);
    assert_null (stub_env ("NCCL_IB_HCA"));
    assert_true (stub_logged ("malformed"));
    /* the job's own choice stays */
    put ("mlx5_1:1\n", 0);
    setenv ("NCCL_IB_HCA", "mlx5_0", 1);
    task_init (0);
    assert_null (stub_env ("NCCL_IB_HCA"));
    assert_true (stub_logged ("set by the job"));
    unsetenv ("NCCL_IB_HCA");
    /* a job without the plugin's mode: untouched */
    fm_plugin.conf.def = FM_MODE_OFF;
    task_init (0);
    assert_null (stub_env ("NCCL_IB_HCA"));
    fm_plugin.conf.def = FM_MODE_OBSERVE;
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_parse),
        cmocka_unit_test_setup_teardown (test_task, setup, teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
