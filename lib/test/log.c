/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "fmtime.h"

struct capture {
    int count;
    int level;
    char msg[2048];
};

static void capture_cb (int level, const char *msg, void *arg)
{
    struct capture *c = arg;

    c->count++;
    c->level = level;
    snprintf (c->msg, sizeof (c->msg), "%s", msg);
}

static int setup (void **state)
{
    static struct capture c;

    memset (&c, 0, sizeof (c));
    fm_log_init ("logtest", 0, LOG_INFO);
    fm_log_set_handler (capture_cb, &c);
    *state = &c;
    return 0;
}

static int teardown (void **state)
{
    fm_log_fini ();
    return 0;
}

static const struct {
    const char *s;
    int level;
} level_vectors[] = {
    {"err", LOG_ERR},
    {"warning", LOG_WARNING},
    {"notice", LOG_NOTICE},
    {"info", LOG_INFO},
    {"debug", LOG_DEBUG},
    {"DEBUG", LOG_DEBUG},
    {"3", LOG_ERR},
    {"7", LOG_DEBUG},
    {"5", LOG_NOTICE},
    {"", -1},
    {"2", -1},
    {"8", -1},
    {"33", -1},
    {"-1", -1},
    {"verbose", -1},
    {"info ", -1},
    {"emerg", -1},
};

static void test_level_parse (void **state)
{
    for (size_t i = 0; i < sizeof (level_vectors) / sizeof (level_vectors[0]); i++) {
        errno = 0;
        int l = fm_log_level_parse (level_vectors[i].s);
        if (l != level_vectors[i].level) {
            fail_msg (
                "'%s' gave %d, want %d", level_vectors[i].s, l, level_vectors[i].level);
        }
        if (l < 0) {
            assert_int_equal (errno, EINVAL);
        }
    }
    errno = 0;
    assert_int_equal (fm_log_level_parse (NULL), -1);
    assert_int_equal (errno, EINVAL);
}

static int evaluated;

static int side_effect (void)
{
    return ++evaluated;
}

static void test_level_filter (void **state)
{
    struct capture *c = *state;

    fm_log_set_level (LOG_WARNING);
    assert_int_equal (fm_log_get_level (), LOG_WARNING);
    fm_info ("not shown %d", side_effect ());
    assert_int_equal (c->count, 0);
    /* the macro must not evaluate arguments of a disabled level */
    assert_int_equal (evaluated, 0);
    fm_warn ("shown %d", side_effect ());
    assert_int_equal (evaluated, 1);
    assert_int_equal (c->count, 1);
    assert_int_equal (c->level, LOG_WARNING);
    assert_string_equal (c->msg, "shown 1");
    fm_err ("error %s", "x");
    assert_int_equal (c->count, 2);
    assert_int_equal (c->level, LOG_ERR);
    /* fm_log_msg filters too */
    fm_log_msg (LOG_DEBUG, "hidden");
    assert_int_equal (c->count, 2);
    /* out-of-range levels are clamped */
    fm_log_set_level (99);
    assert_int_equal (fm_log_get_level (), LOG_DEBUG);
    fm_log_set_level (-5);
    assert_int_equal (fm_log_get_level (), LOG_EMERG);
}

static void test_errno_and_m (void **state)
{
    struct capture *c = *state;

    errno = ENOENT;
    fm_log_msg (LOG_ERR, "open: %m");
    assert_int_equal (errno, ENOENT);
    assert_string_equal (c->msg, "open: No such file or directory");
}

static void test_long_message_truncated (void **state)
{
    struct capture *c = *state;
    char big[3000];

    memset (big, 'a', sizeof (big) - 1);
    big[sizeof (big) - 1] = '\0';
    fm_log_msg (LOG_ERR, "%s", big);
    assert_int_equal (c->count, 1);
    assert_int_equal (strlen (c->msg), 1023);
}

static void test_handler_removed (void **state)
{
    struct capture *c = *state;

    fm_log_set_handler (NULL, NULL);
    fm_log_msg (LOG_ERR, "nobody listens");
    assert_int_equal (c->count, 0);
}

static void test_stderr_sink (void **state)
{
    char path[] = "/tmp/fm-log-XXXXXX";
    int fd = mkstemp (path);
    int saved = dup (STDERR_FILENO);
    char buf[256] = "";
    ssize_t n;

    assert_true (fd >= 0 && saved >= 0);
    unlink (path);
    fflush (stderr);
    assert_true (dup2 (fd, STDERR_FILENO) >= 0);
    fm_log_init ("myprog", FM_LOG_STDERR, LOG_DEBUG);
    fm_log_msg (LOG_WARNING, "disk %d%% full", 93);
    fm_debug ("dbg");
    fm_log_init (NULL, FM_LOG_STDERR, LOG_DEBUG);
    fm_notice ("default ident");
    fflush (stderr);
    dup2 (saved, STDERR_FILENO);
    close (saved);
    n = pread (fd, buf, sizeof (buf) - 1, 0);
    close (fd);
    assert_true (n > 0);
    buf[n] = '\0';
    assert_string_equal (buf,
                         "myprog: warning: disk 93% full\n"
                         "myprog: debug: dbg\n" PACKAGE_NAME
                         ": notice: default ident\n");
}

/* A real syslog round trip: in a private mount namespace, a datagram socket
 * at /dev/log receives what glibc's syslog() sends.
 */
static int syslog_child (void)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    char buf[512];
    ssize_t n;
    int s;

    if (unshare (CLONE_NEWNS) < 0
        || mount ("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0
        || mount ("tmpfs", "/dev", "tmpfs", 0, "mode=0755") < 0) {
        return 77;
    }
    strcpy (sun.sun_path, "/dev/log");
    if ((s = socket (AF_UNIX, SOCK_DGRAM, 0)) < 0
        || bind (s, (struct sockaddr *)&sun, sizeof (sun)) < 0) {
        return 10;
    }
    fm_log_init ("sysid", FM_LOG_SYSLOG, LOG_INFO);
    fm_log_msg (LOG_WARNING, "via syslog %d", 7);
    fm_debug ("filtered");
    fm_log_msg (LOG_ERR, "second");
    n = recv (s, buf, sizeof (buf) - 1, MSG_DONTWAIT);
    if (n <= 0) {
        return 11;
    }
    buf[n] = '\0';
    /* "<28>Dec  2 15:00:00 sysid[1234]: via syslog 7" */
    if (strncmp (buf, "<28>", 4) != 0 || !strstr (buf, " sysid[")
        || !strstr (buf, "]: via syslog 7")) {
        fprintf (stderr, "got '%s'\n", buf);
        return 12;
    }
    n = recv (s, buf, sizeof (buf) - 1, MSG_DONTWAIT);
    if (n <= 0) {
        return 13;
    }
    buf[n] = '\0';
    if (strncmp (buf, "<27>", 4) != 0 || !strstr (buf, "]: second")) {
        fprintf (stderr, "got '%s'\n", buf);
        return 14;
    }
    /* the debug message must not have been sent */
    if (recv (s, buf, sizeof (buf), MSG_DONTWAIT) >= 0) {
        return 15;
    }
    fm_log_fini ();
    return 0;
}

static void test_syslog_sink (void **state)
{
    pid_t pid;
    int status;

    fflush (stdout);
    fflush (stderr);
    if ((pid = fork ()) == 0) {
        _exit (syslog_child ());
    }
    assert_true (pid > 0);
    assert_int_equal (waitpid (pid, &status, 0), pid);
    assert_true (WIFEXITED (status));
    if (WEXITSTATUS (status) == 77) {
        skip ();
    }
    assert_int_equal (WEXITSTATUS (status), 0);
}

static void test_ratelimit_burst (void **state)
{
    fm_ratelimit_t rl = FM_RATELIMIT_INIT (10, 3);
    int64_t t0 = 1000 * FM_NSEC_PER_SEC;
    uint64_t sup = 99;

    assert_true (rl.interval_ns == 10 * FM_NSEC_PER_SEC);
    /* three allowed in the window, the rest refused */
    for (int i = 0; i < 3; i++) {
        assert_true (fm_log_ratelimit_allow (&rl, t0 + i, &sup));
        assert_int_equal (sup, 0);
    }
    for (int i = 0; i < 5; i++) {
        assert_false (fm_log_ratelimit_allow (&rl, t0 + FM_NSEC_PER_SEC * i, &sup));
        assert_int_equal (sup, 0);
    }
    /* still inside the window one ns before its end */
    assert_false (fm_log_ratelimit_allow (&rl, t0 + 10 * FM_NSEC_PER_SEC - 1, &sup));
    /* the next window opens: allowed, and reports the 6 suppressed */
    assert_true (fm_log_ratelimit_allow (&rl, t0 + 10 * FM_NSEC_PER_SEC, &sup));
    assert_int_equal (sup, 6);
    /* the count was reset */
    assert_true (fm_log_ratelimit_allow (&rl, t0 + 10 * FM_NSEC_PER_SEC + 1, &sup));
    assert_int_equal (sup, 0);
    assert_true (fm_log_ratelimit_allow (&rl, t0 + 10 * FM_NSEC_PER_SEC + 2, NULL));
    assert_false (fm_log_ratelimit_allow (&rl, t0 + 10 * FM_NSEC_PER_SEC + 3, NULL));
}

static void test_ratelimit_window_starts_at_first (void **state)
{
    fm_ratelimit_t rl = {.interval_ns = 100, .burst = 1};
    uint64_t sup;

    /* zero-initialised: the first window starts at the first message */
    assert_true (fm_log_ratelimit_allow (&rl, 5000, &sup));
    assert_false (fm_log_ratelimit_allow (&rl, 5099, &sup));
    assert_true (fm_log_ratelimit_allow (&rl, 5100, &sup));
    assert_int_equal (sup, 1);
    /* an idle gap of many windows: next message allowed, window restarts */
    assert_true (fm_log_ratelimit_allow (&rl, 90000, &sup));
    assert_int_equal (sup, 0);
    assert_false (fm_log_ratelimit_allow (&rl, 90050, &sup));
    /* a clock that went backwards opens a new window */
    assert_true (fm_log_ratelimit_allow (&rl, 10, &sup));
    assert_int_equal (sup, 1);
}

static void test_ratelimit_disabled (void **state)
{
    fm_ratelimit_t zero = {0};
    fm_ratelimit_t noburst = {.interval_ns = 100};
    uint64_t sup = 5;

    for (int i = 0; i < 100; i++) {
        assert_true (fm_log_ratelimit_allow (&zero, i, &sup));
        assert_int_equal (sup, 0);
        assert_true (fm_log_ratelimit_allow (&noburst, i, NULL));
    }
}

static void test_log_ratelimited (void **state)
{
    struct capture *c = *state;
    /* an hour-long window: the real clock cannot open a new one mid-test */
    fm_ratelimit_t rl = FM_RATELIMIT_INIT (3600, 2);

    assert_true (fm_log_ratelimited (&rl, LOG_WARNING, "bad packet %d", 1));
    assert_true (fm_log_ratelimited (&rl, LOG_WARNING, "bad packet %d", 2));
    assert_string_equal (c->msg, "bad packet 2");
    assert_false (fm_log_ratelimited (&rl, LOG_WARNING, "bad packet %d", 3));
    assert_false (fm_log_ratelimited (&rl, LOG_WARNING, "bad packet %d", 4));
    assert_int_equal (c->count, 2);
    assert_int_equal (rl.suppressed, 2);
    /* a disabled level neither logs nor consumes the limit */
    assert_false (fm_log_ratelimited (&rl, LOG_DEBUG, "dbg"));
    assert_int_equal (rl.suppressed, 2);
    /* pretend the window expired: the first message carries the count */
    rl.window_start -= 3600 * FM_NSEC_PER_SEC;
    assert_true (fm_log_ratelimited (&rl, LOG_WARNING, "bad packet %d", 5));
    assert_int_equal (c->count, 3);
    assert_string_equal (c->msg, "bad packet 5 (2 similar messages suppressed)");
}

static void test_log_ratelimited_suffix_survives (void **state)
{
    struct capture *c = *state;
    fm_ratelimit_t rl = FM_RATELIMIT_INIT (3600, 1);
    char big[2000];
    const char *want = " (1 similar messages suppressed)";

    memset (big, 'b', sizeof (big) - 1);
    big[sizeof (big) - 1] = '\0';
    assert_true (fm_log_ratelimited (&rl, LOG_ERR, "x"));
    assert_false (fm_log_ratelimited (&rl, LOG_ERR, "x"));
    rl.window_start -= 3600 * FM_NSEC_PER_SEC;
    assert_true (fm_log_ratelimited (&rl, LOG_ERR, "%s", big));
    assert_int_equal (strlen (c->msg), 1023);
    assert_string_equal (c->msg + strlen (c->msg) - strlen (want), want);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown (test_level_parse, setup, teardown),
        cmocka_unit_test_setup_teardown (test_level_filter, setup, teardown),
        cmocka_unit_test_setup_teardown (test_errno_and_m, setup, teardown),
        cmocka_unit_test_setup_teardown (test_long_message_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown (test_handler_removed, setup, teardown),
        cmocka_unit_test_setup_teardown (test_stderr_sink, setup, teardown),
        cmocka_unit_test_setup_teardown (test_syslog_sink, setup, teardown),
        cmocka_unit_test (test_ratelimit_burst),
        cmocka_unit_test (test_ratelimit_window_starts_at_first),
        cmocka_unit_test (test_ratelimit_disabled),
        cmocka_unit_test_setup_teardown (test_log_ratelimited, setup, teardown),
        cmocka_unit_test_setup_teardown (
            test_log_ratelimited_suffix_survives, setup, teardown),
    };
    setvbuf (stdout, NULL, _IOLBF, 0);
    return cmocka_run_group_tests_name ("log", tests, NULL, NULL);
}
