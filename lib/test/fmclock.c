/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fm/clock.h"
#include "clockpage.h"
#include "fmtime.h"

#define SEC 1000000000LL

/* Per test: a private directory with the page file, removed in teardown
 * whatever the test did.
 */
struct fixture {
    char dir[64];
    char path[128];
    char shm_job[64];
    pid_t child[4]; /* processes a test started, stopped in teardown */
};

static int setup (void **state)
{
    struct fixture *f = calloc (1, sizeof (*f));

    if (!f) {
        return -1;
    }
    snprintf (f->dir, sizeof (f->dir), "/tmp/fmclock-test.XXXXXX");
    if (!mkdtemp (f->dir)) {
        free (f);
        return -1;
    }
    snprintf (f->path, sizeof (f->path), "%s/page", f->dir);
    snprintf (f->shm_job, sizeof (f->shm_job), "fmtest-%ld", (long)getpid ());
    *state = f;
    return 0;
}

static int teardown (void **state)
{
    struct fixture *f = *state;
    char name[128];

    for (size_t i = 0; i < sizeof (f->child) / sizeof (f->child[0]); i++) {
        if (f->child[i] > 0) {
            (void)kill (f->child[i], SIGKILL);
            (void)waitpid (f->child[i], NULL, 0);
        }
    }
    (void)unlink (f->path);
    (void)rmdir (f->dir);
    snprintf (name, sizeof (name), "%s%s", FM_CLOCKPAGE_SHM_PREFIX, f->shm_job);
    (void)shm_unlink (name);
    free (f);
    return 0;
}

static fm_clockpage_data_t
record (int64_t epoch, int64_t offset, double drift, int64_t bound, int64_t rate)
{
    return (fm_clockpage_data_t){
        .valid = true,
        .ref_node = 3,
        .epoch_ns = epoch,
        .offset_ns = offset,
        .drift_ppb = drift,
        .bound_ns = bound,
        .bound_rate_ppb = rate,
        .ref_epoch_ns = epoch - 60 * SEC,
        .valid_until_ns = epoch + 60 * SEC,
    };
}

static void test_names (void **state)
{
    char buf[128];
    bool is_path;
    char longid[FM_CLOCKPAGE_JOB_MAX + 2];

    assert_int_equal (fm_clockpage_name ("1234_7", buf, sizeof (buf), &is_path), 0);
    assert_string_equal (buf, "/fabric-monitor-clock.1234_7");
    assert_false (is_path);
    assert_int_equal (fm_clockpage_name ("/run/x/page", buf, sizeof (buf), &is_path),
                      0);
    assert_string_equal (buf, "/run/x/page");
    assert_true (is_path);

    memset (longid, '1', sizeof (longid) - 1);
    longid[sizeof (longid) - 1] = '\0';
    const char *bad[] = {"", ".hidden", "a/b", "12 34", "/nodir", longid, "x\n"};
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        assert_int_equal (fm_clockpage_name (bad[i], buf, sizeof (buf), &is_path), -1);
        errno = 0;
        assert_null (fm_clock_open (bad[i]));
        assert_int_equal (errno, EINVAL);
    }
    assert_int_equal (fm_clockpage_name ("1234", buf, 10, &is_path), -1);
    errno = 0;
    assert_null (fm_clock_open (NULL));
    assert_int_equal (errno, EINVAL);
}

static void test_open_missing (void **state)
{
    struct fixture *f = *state;

    errno = 0;
    assert_null (fm_clock_open (f->path));
    assert_int_equal (errno, ENOENT);
    errno = 0;
    assert_null (fm_clock_open (f->shm_job));
    assert_int_equal (errno, ENOENT);
}

static void test_now (void **state)
{
    struct fixture *f = *state;
    fm_clockpage_t *pg = fm_clockpage_create (f->path, NULL);
    fm_clock_t *clk;
    fm_clockpage_data_t d;
    fm_clock_info_t info;
    struct timespec ts;
    uint64_t bound;
    int64_t host, job;

    assert_non_null (pg);
    clk = fm_clock_open (f->path);
    assert_non_null (clk);

    /* a fresh page holds no estimate */
    errno = 0;
    assert_int_equal (fm_clock_now (clk, &ts, &bound), -1);
    assert_int_equal (errno, EAGAIN);
    assert_int_equal (fm_clock_info (clk, &info), 0);
    assert_false (info.valid);

    /* job time is 5 s ahead, its rate 2 ppm faster, epoch one second ago:
     * now = host + 5 s + 2 us, bound 300 ns + 1 s * 1 ppm
     */
    host = fm_time_real_ns ();
    d = record (host - SEC, 5 * SEC, 2000., 300, 1000);
    assert_int_equal (fm_clockpage_publish (pg, &d), 0);
    assert_int_equal (fm_clock_now (clk, &ts, &bound), 0);
    job = fm_time_from_timespec (&ts);
    host = fm_time_real_ns () - host; /* the time the calls took */
    assert_true (job - (fm_time_real_ns () + 5 * SEC + 2000) < 1000);
    assert_true (job - (fm_time_real_ns () - host + 5 * SEC + 2000) > -10 * 1000000LL);
    assert_true (bound >= 1300 && bound < 1300 + 10000);
    assert_int_equal (fm_clock_now (clk, NULL, NULL), 0);

    assert_int_equal (fm_clock_info (clk, &info), 0);
    assert_true (info.valid);
    assert_int_equal (info.ref_node, 3);
    assert_true (info.offset_ns == 5 * SEC);
    assert_true (info.drift_ppb == 2000.);
    assert_true (info.bound_ns == 300 && info.bound_rate_ppb == 1000);
    assert_true (info.ref_epoch_ns == d.ref_epoch_ns);
    assert_true (info.valid_until_ns == d.valid_until_ns);
    assert_true (info.generation >= 2);

    /* stale: the writer stopped refreshing */
    d.valid_until_ns = d.epoch_ns + 1;
    assert_int_equal (fm_clockpage_publish (pg, &d), 0);
    errno = 0;
    assert_int_equal (fm_clock_now (clk, &ts, &bound), -1);
    assert_int_equal (errno, ESTALE);

    /* invalidated: EAGAIN, the rest of the record kept */
    d.valid_until_ns = d.epoch_ns + 60 * SEC;
    assert_int_equal (fm_clockpage_publish (pg, &d), 0);
    assert_int_equal (fm_clockpage_invalidate (pg), 0);
    errno = 0;
    assert_int_equal (fm_clock_now (clk, &ts, &bound), -1);
    assert_int_equal (errno, EAGAIN);
    assert_int_equal (fm_clock_info (clk, &info), 0);
    assert_false (info.valid);
    assert_true (info.offset_ns == 5 * SEC);

    /* records a reader could not tell from good ones are refused */
    fm_clockpage_data_t bad = d;
    bad.bound_ns = -1;
    assert_int_equal (fm_clockpage_publish (pg, &bad), -1);
    bad = d;
    bad.drift_ppb = 0. / 0.;
    assert_int_equal (fm_clockpage_publish (pg, &bad), -1);
    bad = d;
    bad.valid_until_ns = bad.epoch_ns;
    errno = 0;
    assert_int_equal (fm_clockpage_publish (pg, &bad), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (fm_clockpage_publish (NULL, &d), -1);
    assert_int_equal (fm_clockpage_invalidate (NULL), -1);
    assert_int_equal (fm_clock_now (NULL, &ts, &bound), -1);
    assert_int_equal (fm_clock_info (clk, NULL), -1);

    fm_clock_close (clk);
    fm_clock_close (NULL);
    fm_clockpage_destroy (pg, true);
    fm_clockpage_destroy (NULL, true);
    assert_int_equal (access (f->path, F_OK), -1);
}

/* Through a real shm name; a new writer takes over its own page. */
static void test_shm_and_takeover (void **state)
{
    struct fixture *f = *state;
    fm_clockpage_t *pg = fm_clockpage_create (f->shm_job, NULL);
    fm_clockpage_data_t d = record (fm_time_real_ns (), 42, 0., 10, 0);
    fm_clock_t *clk;
    fm_clock_info_t info;
    uint64_t gen;

    assert_non_null (pg);
    assert_int_equal (fm_clockpage_publish (pg, &d), 0);
    clk = fm_clock_open (f->shm_job);
    assert_non_null (clk);
    assert_int_equal (fm_clock_info (clk, &info), 0);
    assert_true (info.valid && info.offset_ns == 42);
    gen = info.generation;
    /* the agent restarts: same page, invalid until it publishes again */
    fm_clockpage_destroy (pg, false);
    pg = fm_clockpage_create (f->shm_job, NULL);
    assert_non_null (pg);
    assert_int_equal (fm_clock_info (clk, &info), 0);
    assert_false (info.valid);
    assert_true (info.generation > gen);
    fm_clock_close (clk);
    fm_clockpage_destroy (pg, true);
    errno = 0;
    assert_null (fm_clock_open (f->shm_job));
    assert_int_equal (errno, ENOENT);
}

static void write_file (const char *path, const void *buf, size_t len, mode_t mode)
{
    int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    assert_true (fd >= 0);
    assert_true (write (fd, buf, len) == (ssize_t)len);
    assert_int_equal (fchmod (fd, mode), 0);
    close (fd);
}

static void test_unsafe_or_foreign_pages (void **state)
{
    struct fixture *f = *state;
    struct fm_clockpage_layout l = {0};
    char small[8] = {0};
    fm_clock_t *clk;
    fm_clock_info_t info;
    fm_error_t err;

    /* too small to be a page */
    write_file (f->path, small, sizeof (small), 0644);
    errno = 0;
    assert_null (fm_clock_open (f->path));
    assert_int_equal (errno, EPROTO);

    /* some other format */
    l.magic = 0xdeadbeef;
    l.version = 1;
    write_file (f->path, &l, sizeof (l), 0644);
    errno = 0;
    assert_null (fm_clock_open (f->path));
    assert_int_equal (errno, EPROTO);

    /* all zero: created, never written; opens, reads EAGAIN */
    memset (&l, 0, sizeof (l));
    write_file (f->path, &l, sizeof (l), 0644);
    clk = fm_clock_open (f->path);
    assert_non_null (clk);
    errno = 0;
    assert_int_equal (fm_clock_info (clk, &info), -1);
    assert_int_equal (errno, EAGAIN);
    fm_clock_close (clk);

    /* writable by others: anyone could set this process's time */
    assert_int_equal (chmod (f->path, 0666), 0);
    errno = 0;
    assert_null (fm_clock_open (f->path));
    assert_int_equal (errno, EACCES);

    /* a symlink is not followed */
    char link[160];
    snprintf (link, sizeof (link), "%s/link", f->dir);
    assert_int_equal (chmod (f->path, 0644), 0);
    assert_int_equal (symlink (f->path, link), 0);
    errno = 0;
    assert_null (fm_clock_open (link));
    assert_int_equal (errno, ELOOP);
    errno = 0;
    assert_null (fm_clockpage_create (link, &err));
    assert_int_equal (errno, ELOOP);
    assert_int_equal (unlink (link), 0);

    if (geteuid () != 0) {
        return;
    }
    /* a page owned by somebody else: the reader refuses it, and the
     * writer will not adopt it
     */
    assert_int_equal (chown (f->path, 65534, 65534), 0);
    errno = 0;
    assert_null (fm_clock_open (f->path));
    assert_int_equal (errno, EACCES);
    errno = 0;
    assert_null (fm_clockpage_create (f->path, &err));
    assert_int_equal (errno, EEXIST);
    assert_non_null (strstr (err.text, "not ours"));
    assert_int_equal (access (f->path, F_OK), 0); /* and left alone */
}

/* A page with values no writer of ours publishes: the reader computes
 * nothing undefined and refuses what does not fit.
 */
static void test_hostile_values (void **state)
{
    struct fixture *f = *state;
    struct fm_clockpage_layout l = {
        .magic = FM_CLOCKPAGE_MAGIC,
        .version = FM_CLOCKPAGE_VERSION,
        .size = sizeof (l),
        .flags = FM_CLOCKPAGE_VALID,
        .valid_until_ns = INT64_MAX,
    };
    double nan = 0. / 0., huge = 1e300;
    fm_clock_t *clk;
    struct timespec ts;
    uint64_t bound;

    memcpy (&l.drift_bits, &nan, sizeof (nan));
    write_file (f->path, &l, sizeof (l), 0644);
    clk = fm_clock_open (f->path);
    assert_non_null (clk);
    errno = 0;
    assert_int_equal (fm_clock_now (clk, &ts, &bound), -1);
    assert_int_equal (errno, ERANGE);
    fm_clock_close (clk);

    memcpy (&l.drift_bits, &huge, sizeof (huge));
    write_file (f->path, &l, sizeof (l), 0644);
    clk = fm_clock_open (f->path);
    assert_non_null (clk);
    assert_int_equal (fm_clock_now (clk, &ts, &bound), -1);
    assert_int_equal (errno, ERANGE);
    fm_clock_close (clk);

    /* job time beyond int64; an epoch so far back that host - epoch overflows */
    l.drift_bits = 0;
    l.offset_ns = INT64_MAX;
    write_file (f->path, &l, sizeof (l), 0644);
    clk = fm_clock_open (f->path);
    assert_non_null (clk);
    assert_int_equal (fm_clock_now (clk, &ts, &bound), -1);
    assert_int_equal (errno, ERANGE);
    fm_clock_close (clk);
    l.offset_ns = 0;
    l.epoch_ns = INT64_MIN;
    write_file (f->path, &l, sizeof (l), 0644);
    clk = fm_clock_open (f->path);
    assert_non_null (clk);
    assert_int_equal (fm_clock_now (clk, &ts, &bound), -1);
    assert_int_equal (errno, ESTALE);
    fm_clock_close (clk);

    /* negative and enormous bounds: clamped, never wrapped */
    l.epoch_ns = fm_time_real_ns () - SEC;
    l.bound_ns = -5;
    l.bound_rate_ppb = -1000;
    write_file (f->path, &l, sizeof (l), 0644);
    clk = fm_clock_open (f->path);
    assert_non_null (clk);
    assert_int_equal (fm_clock_now (clk, &ts, &bound), 0);
    assert_true (bound == 0);
    fm_clock_close (clk);
    l.bound_ns = INT64_MAX;
    l.bound_rate_ppb = INT64_MAX;
    write_file (f->path, &l, sizeof (l), 0644);
    clk = fm_clock_open (f->path);
    assert_non_null (clk);
    assert_int_equal (fm_clock_now (clk, &ts, &bound), 0);
    assert_true (bound == UINT64_MAX);
    fm_clock_close (clk);
}

/* The seqlock under fire: a writer process publishes records whose fields
 * are all functions of one counter; reader processes check every snapshot
 * is one record, never a mix, and that generations never go back.
 */
#define HAMMER_READERS 3
#define HAMMER_READS 2000000       /* snapshots each reader checks */
#define HAMMER_DISTINCT 10000      /* records each reader must have seen */
#define HAMMER_LIMIT_NS (30 * SEC) /* on a loaded machine too */

static fm_clockpage_data_t hammer_record (int64_t i)
{
    return (fm_clockpage_data_t){
        .valid = true,
        .ref_node = (uint32_t)(i & 0xffff),
        .epoch_ns = 3 * i,
        .offset_ns = i,
        .drift_ppb = (double)i * 0.5,
        .bound_ns = 2 * i + 1,
        .bound_rate_ppb = 5 * i,
        .ref_epoch_ns = 7 * i,
        .valid_until_ns = INT64_MAX - i,
    };
}

static int hammer_reader (const char *path)
{
    fm_clock_t *clk = fm_clock_open (path);
    fm_clock_info_t v;
    uint64_t last_gen = 0, distinct = 0, reads = 0;
    int64_t end = fm_time_mono_ns () + HAMMER_LIMIT_NS;

    if (!clk) {
        return 10;
    }
    while (reads < HAMMER_READS || distinct < HAMMER_DISTINCT) {
        if ((reads & 1023) == 0 && fm_time_mono_ns () > end) {
            return 14; /* the hammering did not happen */
        }
        int64_t i;

        if (fm_clock_info (clk, &v) < 0) {
            if (errno == EAGAIN) {
                continue;
            }
            return 11;
        }
        reads++;
        if (!v.valid) {
            continue; /* the writer's initial record */
        }
        i = v.offset_ns;
        if (v.ref_node != (uint32_t)(i & 0xffff) || v.epoch_ns != 3 * i
            || v.drift_ppb != (double)i * 0.5 || v.bound_ns != 2 * i + 1
            || v.bound_rate_ppb != 5 * i || v.ref_epoch_ns != 7 * i
            || v.valid_until_ns != INT64_MAX - i) {
            return 12; /* torn */
        }
        if (v.generation < last_gen) {
            return 13;
        }
        if (v.generation != last_gen) {
            distinct++;
        }
        last_gen = v.generation;
    }
    fm_clock_close (clk);
    return 0;
}

static void test_seqlock_hammer (void **state)
{
    struct fixture *f = *state;
    fm_clockpage_t *pg = fm_clockpage_create (f->path, NULL);
    pid_t writer, readers[HAMMER_READERS];
    int status;

    assert_non_null (pg);
    writer = fork ();
    assert_true (writer >= 0);
    f->child[0] = writer;
    if (writer == 0) {
        /* until the parent stops it, or a safety limit */
        int64_t end = fm_time_mono_ns () + 2 * HAMMER_LIMIT_NS;
        for (int64_t i = 1; fm_time_mono_ns () < end; i++) {
            fm_clockpage_data_t d = hammer_record (i);
            if (fm_clockpage_publish (pg, &d) < 0) {
                _exit (1);
            }
        }
        _exit (2);
    }
    for (int r = 0; r < HAMMER_READERS; r++) {
        readers[r] = fork ();
        if (readers[r] == 0) {
            /* the writer's page is not the reader's (valgrind's leak check
             * runs in forked children too)
             */
            fm_clockpage_destroy (pg, false);
            _exit (hammer_reader (f->path));
        }
        f->child[1 + r] = readers[r];
    }
    int rstatus[HAMMER_READERS];
    for (int r = 0; r < HAMMER_READERS; r++) {
        rstatus[r] = -1;
        if (readers[r] > 0 && waitpid (readers[r], &status, 0) == readers[r]) {
            f->child[1 + r] = 0;
            rstatus[r] = WIFEXITED (status) ? WEXITSTATUS (status) : -1;
        }
    }
    /* the writer is still writing: it never stops on its own first */
    assert_int_equal (kill (writer, SIGTERM), 0);
    assert_true (waitpid (writer, &status, 0) == writer);
    f->child[0] = 0;
    assert_true (WIFSIGNALED (status) && WTERMSIG (status) == SIGTERM);
    for (int r = 0; r < HAMMER_READERS; r++) {
        assert_int_equal (rstatus[r], 0);
    }
    fm_clockpage_destroy (pg, true);
}

/* A writer that died inside a write leaves seq odd: readers give up with
 * EAGAIN instead of spinning, and the next writer repairs the page.
 */
static void test_stuck_writer (void **state)
{
    struct fixture *f = *state;
    fm_clockpage_t *pg = fm_clockpage_create (f->path, NULL);
    fm_clockpage_data_t d = record (fm_time_real_ns (), 7, 0., 10, 0);
    struct fm_clockpage_layout l;
    fm_clock_t *clk;
    fm_clock_info_t info;
    int fd;

    assert_non_null (pg);
    assert_int_equal (fm_clockpage_publish (pg, &d), 0);
    fm_clockpage_destroy (pg, false);
    fd = open (f->path, O_RDWR);
    assert_true (fd >= 0);
    assert_true (pread (fd, &l, sizeof (l), 0) == (ssize_t)sizeof (l));
    l.seq |= 1u;
    assert_true (pwrite (fd, &l, sizeof (l), 0) == (ssize_t)sizeof (l));
    close (fd);
    clk = fm_clock_open (f->path);
    assert_non_null (clk);
    errno = 0;
    assert_int_equal (fm_clock_info (clk, &info), -1);
    assert_int_equal (errno, EAGAIN);
    pg = fm_clockpage_create (f->path, NULL);
    assert_non_null (pg);
    assert_int_equal (fm_clockpage_publish (pg, &d), 0);
    assert_int_equal (fm_clock_info (clk, &info), 0);
    assert_true (info.valid && info.offset_ns == 7);
    fm_clock_close (clk);
    fm_clockpage_destroy (pg, true);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_names, setup, teardown),
        cmocka_unit_test_setup_teardown (test_open_missing, setup, teardown),
        cmocka_unit_test_setup_teardown (test_now, setup, teardown),
        cmocka_unit_test_setup_teardown (test_shm_and_takeover, setup, teardown),
        cmocka_unit_test_setup_teardown (test_unsafe_or_foreign_pages, setup, teardown),
        cmocka_unit_test_setup_teardown (test_hostile_values, setup, teardown),
        cmocka_unit_test_setup_teardown (test_seqlock_hammer, setup, teardown),
        cmocka_unit_test_setup_teardown (test_stuck_writer, setup, teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
