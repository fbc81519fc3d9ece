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

#include "spool.h"

static char dir[256];
static char spooldir[300];

static int setup (void **state)
{
    snprintf (dir, sizeof (dir), "/tmp/fm-spool-test.XXXXXX");
    if (!mkdtemp (dir)) {
        return -1;
    }
    snprintf (spooldir, sizeof (spooldir), "%s/spool", dir);
    return 0;
}

static int teardown (void **state)
{
    char cmd[512];

    snprintf (cmd, sizeof (cmd), "rm -rf '%s'", dir);
    return system (cmd) == 0 ? 0 : -1;
}

static void wipe (void)
{
    char cmd[512];

    snprintf (cmd, sizeof (cmd), "rm -rf '%s'", spooldir);
    assert_int_equal (system (cmd), 0);
}

static void test_put_get_remove (void **state)
{
    fm_error_t err;
    fm_spool_t *s;
    uint64_t seqs[8];
    char *t;
    struct stat sb;

    wipe ();
    assert_non_null ((s = fm_spool_open (spooldir, 10, 1024, &err)));
    assert_int_equal (stat (spooldir, &sb), 0);
    assert_int_equal (sb.st_mode & 0777, 0700);
    assert_int_equal (fm_spool_count (s), 0);
    assert_int_equal (fm_spool_last (s), -1);
    assert_int_equal (fm_spool_put (s, 5, "{\"seq\":5}", &err), 0);
    assert_int_equal (fm_spool_put (s, 9, "{\"seq\":9}", &err), 0);
    /* windows only ever get newer */
    assert_int_equal (fm_spool_put (s, 7, "x", &err), -1);
    assert_int_equal (errno, EEXIST);
    assert_int_equal (fm_spool_put (s, 9, "x", &err), -1);
    assert_int_equal (fm_spool_count (s), 2);
    assert_int_equal (fm_spool_oldest (s, seqs, 8), 2);
    assert_int_equal (seqs[0], 5);
    assert_int_equal (seqs[1], 9);
    assert_int_equal (fm_spool_last (s), 9);
    assert_non_null ((t = fm_spool_get (s, 9)));
    assert_string_equal (t, "{\"seq\":9}");
    free (t);
    assert_null (fm_spool_get (s, 6));
    assert_int_equal (errno, ENOENT);
    assert_int_equal (fm_spool_remove (s, 5), 0);
    assert_int_equal (fm_spool_remove (s, 5), -1);
    assert_int_equal (fm_spool_oldest (s, seqs, 8), 1);
    assert_int_equal (seqs[0], 9);
    fm_spool_destroy (s);
    fm_spool_destroy (NULL);
}

static void test_drop_oldest (void **state)
{
    fm_error_t err;
    fm_spool_t *s;
    uint64_t seqs[8];

    wipe ();
    s = fm_spool_open (spooldir, 3, 1024, &err);
    for (uint64_t i = 1; i <= 5; i++) {
        assert_int_equal (fm_spool_put (s, i * 10, "{}", &err), 0);
    }
    /* full at 3: the two oldest made room for the newest */
    assert_int_equal (fm_spool_count (s), 3);
    assert_int_equal (fm_spool_dropped (s), 2);
    fm_spool_oldest (s, seqs, 8);
    assert_int_equal (seqs[0], 30);
    assert_int_equal (seqs[2], 50);
    /* size cap */
    assert_int_equal (fm_spool_put (s, 60, "0123456789", &err), 0);
    fm_spool_destroy (s);
    s = fm_spool_open (spooldir, 3, 5, &err);
    assert_int_equal (fm_spool_put (s, 70, "0123456789", &err), -1);
    assert_int_equal (errno, EFBIG);
    /* and an oversized file already on disk is not loaded into memory */
    assert_null (fm_spool_get (s, 60));
    fm_spool_destroy (s);
}

static void test_reopen_survives (void **state)
{
    fm_error_t err;
    fm_spool_t *s;
    uint64_t seqs[8];
    char path[512];
    FILE *fp;

    wipe ();
    s = fm_spool_open (spooldir, 4, 1024, &err);
    fm_spool_put (s, 100, "{\"a\":1}", &err);
    fm_spool_put (s, 200, "{\"a\":2}", &err);
    fm_spool_destroy (s);
    /* not ours: ignored; a half-written temporary from a crash too */
    snprintf (path, sizeof (path), "%s/README", spooldir);
    fp = fopen (path, "w");
    fclose (fp);
    snprintf (path, sizeof (path), "%s/.00000000000000000300.json.tmp", spooldir);
    fp = fopen (path, "w");
    fclose (fp);
    /* a restarted agent resends what is left, in order */
    s = fm_spool_open (spooldir, 4, 1024, &err);
    assert_int_equal (fm_spool_count (s), 2);
    fm_spool_oldest (s, seqs, 8);
    assert_int_equal (seqs[0], 100);
    assert_int_equal (seqs[1], 200);
    fm_spool_destroy (s);
    /* reopened with a smaller limit: only the newest are kept */
    s = fm_spool_open (spooldir, 1, 1024, &err);
    assert_int_equal (fm_spool_count (s), 1);
    fm_spool_oldest (s, seqs, 8);
    assert_int_equal (seqs[0], 200);
    assert_int_equal (fm_spool_dropped (s), 1);
    fm_spool_destroy (s);
}

static void test_open_errors (void **state)
{
    fm_error_t err;
    char bad[300];

    assert_null (fm_spool_open (spooldir, 0, 1, &err));
    assert_int_equal (errno, EINVAL);
    assert_null (fm_spool_open ("relative/spool", 1, 1, &err));
    /* group-writable parent: refused, nothing created */
    snprintf (bad, sizeof (bad), "%s/open", dir);
    mkdir (bad, 0777);
    chmod (bad, 0777);
    snprintf (bad, sizeof (bad), "%s/open/spool", dir);
    if (geteuid () == 0 || getuid () != 0) {
        assert_null (fm_spool_open (bad, 1, 1, &err));
        assert_int_equal (access (bad, F_OK), -1);
    }
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_put_get_remove),
        cmocka_unit_test (test_drop_oldest),
        cmocka_unit_test (test_reopen_survives),
        cmocka_unit_test (test_open_errors),
    };
    return cmocka_run_group_tests (tests, setup, teardown);
}
