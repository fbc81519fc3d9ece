/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "path.h"

#define FOREIGN_UID 12345
#define OTHER_UID 4321

static char base[64];

static const char *p (const char *rel)
{
    static char bufs[4][512];
    static int n;
    char *b = bufs[n++ % 4];

    snprintf (b, sizeof (bufs[0]), "%s/%s", base, rel);
    return b;
}

static void make_file (const char *path, mode_t mode)
{
    int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true (fd >= 0);
    close (fd);
    assert_int_equal (chmod (path, mode), 0);
}

static void make_dir (const char *path, mode_t mode)
{
    assert_int_equal (mkdir (path, 0700), 0);
    assert_int_equal (chmod (path, mode), 0);
}

/* A fresh tree per test under /tmp (root-owned, 01777: the sticky case). */
static int setup (void **state)
{
    strcpy (base, "/tmp/fm-path-XXXXXX");
    return mkdtemp (base) ? 0 : -1;
}

static int teardown (void **state)
{
    char cmd[128];

    snprintf (cmd, sizeof (cmd), "rm -rf '%s'", base);
    return system (cmd) == 0 ? 0 : -1;
}

static void
expect_fail (const char *path, uid_t owner, int flags, int err_no, const char *msg)
{
    fm_error_t err = {""};
    const char *shown = path ? path : "(null)";

    errno = 0;
    if (fm_path_check_secure (path, owner, flags, &err) != -1) {
        fail_msg ("'%s' passed", shown);
    }
    if (errno != err_no) {
        fail_msg ("'%s': errno %d, want %d (%s)", shown, errno, err_no, err.text);
    }
    if (msg && strcmp (err.text, msg) != 0) {
        fail_msg ("'%s': got '%s', want '%s'", shown, err.text, msg);
    }
}

static void expect_ok (const char *path, uid_t owner, int flags)
{
    fm_error_t err = {""};

    if (fm_path_check_secure (path, owner, flags, &err) != 0) {
        fail_msg ("'%s' refused: %s", path, err.text);
    }
}

/* The expected message: "'path': reason". */
static char *why (const char *path, const char *reason)
{
    static char buf[300];
    snprintf (buf, sizeof (buf), "'%s': %s", path, reason);
    return buf;
}

static void test_invalid (void **state)
{
    expect_fail (
        "relative/path", 0, 0, EINVAL, "'relative/path': not an absolute path");
    expect_fail ("", 0, 0, EINVAL, NULL);
    expect_fail (NULL, 0, 0, EINVAL, NULL);
    errno = 0;
    assert_int_equal (fm_path_check_secure ("x", 0, 0, NULL), -1);
    assert_int_equal (errno, EINVAL);
    errno = 0;
    assert_int_equal (fm_path_mkdir_secure ("x/y", 0700, NULL), -1);
    assert_int_equal (errno, EINVAL);
    errno = 0;
    assert_int_equal (fm_path_mkdir_secure (NULL, 0700, NULL), -1);
    assert_int_equal (errno, EINVAL);
}

static void test_too_long (void **state)
{
    char *long_path = malloc (PATH_MAX + 16);

    assert_non_null (long_path);
    long_path[0] = '/';
    memset (long_path + 1, 'a', PATH_MAX + 1);
    long_path[PATH_MAX + 2] = '\0';
    errno = 0;
    assert_int_equal (fm_path_check_secure (long_path, 0, 0, NULL), -1);
    assert_int_equal (errno, ENAMETOOLONG);
    errno = 0;
    assert_int_equal (fm_path_mkdir_secure (long_path, 0700, NULL), -1);
    assert_int_equal (errno, ENAMETOOLONG);
    free (long_path);
}

static void test_secure_tree (void **state)
{
    struct stat sb;

    /* the tree really sits in a sticky world-writable directory */
    assert_int_equal (stat ("/tmp", &sb), 0);
    assert_true ((sb.st_mode & 07777) == 01777);
    make_file (p ("f"), 0600);
    expect_ok (
        p ("f"), 0, FM_PATH_MUST_EXIST | FM_PATH_NO_SYMLINK | FM_PATH_NO_GROUP_READ);
    expect_ok (p ("f"), FOREIGN_UID, 0);
    expect_ok (base, 0, FM_PATH_MUST_EXIST);
    expect_ok ("/", 0, FM_PATH_MUST_EXIST);
    /* trailing and doubled slashes */
    expect_ok (p ("/f"), 0, FM_PATH_MUST_EXIST);
    make_file (p ("readable"), 0644);
    expect_ok (p ("readable"), 0, FM_PATH_MUST_EXIST);
}

static void test_missing (void **state)
{
    expect_ok (p ("nofile"), 0, 0);
    expect_fail (p ("nofile"),
                 0,
                 FM_PATH_MUST_EXIST,
                 ENOENT,
                 why (p ("nofile"), "No such file or directory"));
    expect_fail (p ("nodir/file"), 0, 0, ENOENT, NULL);
    make_file (p ("f"), 0600);
    expect_fail (p ("f/x"), 0, 0, ENOTDIR, why (p ("f"), "not a directory"));
}

static void test_file_writable (void **state)
{
    make_file (p ("g"), 0620);
    expect_fail (p ("g"), 0, 0, EPERM, why (p ("g"), "writable by group or other"));
    make_file (p ("o"), 0602);
    expect_fail (p ("o"), 0, 0, EPERM, why (p ("o"), "writable by group or other"));
    /* sticky does not excuse a writable regular file */
    make_file (p ("s"), 01666);
    expect_fail (p ("s"), 0, 0, EPERM, NULL);
}

static void test_parent_writable (void **state)
{
    make_dir (p ("d"), 0770);
    make_file (p ("d/f"), 0600);
    expect_fail (p ("d/f"), 0, 0, EPERM, why (p ("d"), "writable by group or other"));
    /* also when the file does not exist yet */
    expect_fail (p ("d/new"), 0, 0, EPERM, NULL);
    make_dir (p ("w"), 0777);
    make_dir (p ("w/sub"), 0700);
    make_file (p ("w/sub/f"), 0600);
    expect_fail (
        p ("w/sub/f"), 0, 0, EPERM, why (p ("w"), "writable by group or other"));
}

static void test_sticky_dir (void **state)
{
    make_dir (p ("t"), 01777);
    make_file (p ("t/f"), 0600);
    expect_ok (p ("t/f"), 0, FM_PATH_MUST_EXIST);
    expect_ok (p ("t"), 0, FM_PATH_MUST_EXIST);
    make_dir (p ("t/sub"), 0755);
    expect_ok (p ("t/sub"), 0, FM_PATH_MUST_EXIST);
}

static void test_foreign_owner (void **state)
{
    if (geteuid () != 0) {
        skip ();
    }
    make_file (p ("f"), 0600);
    assert_int_equal (chown (p ("f"), FOREIGN_UID, 0), 0);
    expect_fail (
        p ("f"), 0, 0, EPERM, why (p ("f"), "owned by uid 12345, not root or uid 0"));
    expect_ok (p ("f"), FOREIGN_UID, FM_PATH_MUST_EXIST);
    expect_fail (p ("f"), OTHER_UID, 0, EPERM, NULL);
    make_dir (p ("d"), 0755);
    make_file (p ("d/f"), 0600);
    assert_int_equal (chown (p ("d"), FOREIGN_UID, 0), 0);
    expect_fail (p ("d/f"),
                 OTHER_UID,
                 0,
                 EPERM,
                 why (p ("d"), "owned by uid 12345, not root or uid 4321"));
    expect_ok (p ("d/f"), FOREIGN_UID, 0);
}

static void test_symlinks (void **state)
{
    char want[300];

    make_file (p ("f"), 0600);
    assert_int_equal (symlink (p ("f"), p ("link")), 0);
    expect_ok (p ("link"), 0, FM_PATH_MUST_EXIST);
    expect_fail (p ("link"),
                 0,
                 FM_PATH_NO_SYMLINK,
                 EPERM,
                 why (p ("link"), "is a symbolic link"));
    /* the target is judged: writable target, or a target in a writable directory */
    make_file (p ("gw"), 0660);
    assert_int_equal (symlink ("gw", p ("link-gw")), 0);
    expect_fail (
        p ("link-gw"), 0, 0, EPERM, why (p ("gw"), "writable by group or other"));
    make_dir (p ("bad"), 0777);
    make_file (p ("bad/t"), 0600);
    assert_int_equal (symlink (p ("bad/t"), p ("link-bad")), 0);
    expect_fail (
        p ("link-bad"), 0, 0, EPERM, why (p ("bad"), "writable by group or other"));
    /* a dangling link cannot be vetted */
    assert_int_equal (symlink (p ("nowhere"), p ("dangling")), 0);
    snprintf (want,
              sizeof (want),
              "'%s': cannot resolve symbolic link: No such file or directory",
              p ("dangling"));
    expect_fail (p ("dangling"), 0, 0, ENOENT, want);
    /* a symlinked directory on the way: its target is checked */
    make_dir (p ("d"), 0700);
    make_file (p ("d/f"), 0600);
    assert_int_equal (symlink (p ("d"), p ("dlink")), 0);
    expect_ok (p ("dlink/f"), 0, FM_PATH_MUST_EXIST | FM_PATH_NO_SYMLINK);
    assert_int_equal (symlink (p ("bad"), p ("blink")), 0);
    expect_fail (
        p ("blink/t"), 0, 0, EPERM, why (p ("bad"), "writable by group or other"));
}

static void test_no_group_read (void **state)
{
    make_file (p ("key"), 0600);
    expect_ok (p ("key"), 0, FM_PATH_NO_GROUP_READ);
    make_file (p ("gkey"), 0640);
    expect_fail (p ("gkey"),
                 0,
                 FM_PATH_NO_GROUP_READ,
                 EPERM,
                 why (p ("gkey"), "readable by group or other"));
    make_file (p ("okey"), 0604);
    expect_fail (p ("okey"), 0, FM_PATH_NO_GROUP_READ, EPERM, NULL);
    /* without the flag a readable file is fine */
    expect_ok (p ("gkey"), 0, 0);
}

static mode_t mode_of (const char *path)
{
    struct stat sb;
    assert_int_equal (stat (path, &sb), 0);
    assert_true (S_ISDIR (sb.st_mode));
    return sb.st_mode & 07777;
}

static void test_mkdir_secure (void **state)
{
    fm_error_t err = {""};
    mode_t old = umask (027);

    if (fm_path_mkdir_secure (p ("a/b/c"), 0755, &err) != 0) {
        umask (old);
        fail_msg ("mkdir refused: %s", err.text);
    }
    umask (old);
    /* the exact mode despite the umask; parents get the mode too */
    assert_int_equal (mode_of (p ("a/b/c")), 0755);
    assert_int_equal (mode_of (p ("a/b")), 0755);
    /* an existing secure directory is fine, trailing slash too */
    assert_int_equal (fm_path_mkdir_secure (p ("a/b/c/"), 0700, &err), 0);
    assert_int_equal (mode_of (p ("a/b/c")), 0755);
    assert_int_equal (fm_path_mkdir_secure (p ("x"), 0700, &err), 0);
    assert_int_equal (mode_of (p ("x")), 0700);
}

static void test_mkdir_secure_errors (void **state)
{
    fm_error_t err = {""};
    struct stat sb;

    errno = 0;
    assert_int_equal (fm_path_mkdir_secure (p ("g"), 0770, &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (stat (p ("g"), &sb), -1);
    make_file (p ("f"), 0600);
    errno = 0;
    assert_int_equal (fm_path_mkdir_secure (p ("f"), 0700, &err), -1);
    assert_int_equal (errno, ENOTDIR);
    errno = 0;
    assert_int_equal (fm_path_mkdir_secure (p ("f/sub"), 0700, &err), -1);
    assert_int_equal (errno, ENOTDIR);
    /* an insecure existing directory */
    make_dir (p ("open"), 0777);
    errno = 0;
    assert_int_equal (fm_path_mkdir_secure (p ("open"), 0700, &err), -1);
    assert_int_equal (errno, EPERM);
    assert_string_equal (err.text, why (p ("open"), "writable by group or other"));
    /* under an insecure parent: refused before anything is created */
    errno = 0;
    assert_int_equal (fm_path_mkdir_secure (p ("open/a/b"), 0700, &err), -1);
    assert_int_equal (errno, EPERM);
    assert_int_equal (stat (p ("open/a"), &sb), -1);
    assert_int_equal (errno, ENOENT);
    /* a sticky world-writable directory is allowed */
    assert_int_equal (fm_path_mkdir_secure (p ("sticky"), 01777, &err), 0);
    assert_int_equal (mode_of (p ("sticky")), 01777);
    assert_int_equal (fm_path_mkdir_secure (p ("sticky/in"), 0700, &err), 0);
}

static void test_mkdir_secure_undo (void **state)
{
    fm_error_t err = {""};
    char rel[300] = "a/b/";
    struct stat sb;

    /* "a" and "a/b" get created, then the over-long component fails */
    memset (rel + 4, 'n', NAME_MAX + 1);
    rel[4 + NAME_MAX + 1] = '\0';
    errno = 0;
    assert_int_equal (fm_path_mkdir_secure (p (rel), 0700, &err), -1);
    assert_int_equal (errno, ENAMETOOLONG);
    /* and are removed again: no side effects on failure */
    assert_int_equal (stat (p ("a"), &sb), -1);
    assert_int_equal (errno, ENOENT);
}

static void test_mkdir_secure_foreign (void **state)
{
    fm_error_t err = {""};
    struct stat sb;

    if (geteuid () != 0) {
        skip ();
    }
    /* a directory owned by someone else is not the caller's */
    make_dir (p ("theirs"), 0755);
    assert_int_equal (chown (p ("theirs"), FOREIGN_UID, 0), 0);
    errno = 0;
    assert_int_equal (fm_path_mkdir_secure (p ("theirs"), 0700, &err), -1);
    assert_int_equal (errno, EPERM);
    errno = 0;
    assert_int_equal (fm_path_mkdir_secure (p ("theirs/mine"), 0700, &err), -1);
    assert_int_equal (errno, EPERM);
    assert_int_equal (stat (p ("theirs/mine"), &sb), -1);
}

int main (void)
{
#define T(f) cmocka_unit_test_setup_teardown (f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T (test_invalid),
        T (test_too_long),
        T (test_secure_tree),
        T (test_missing),
        T (test_file_writable),
        T (test_parent_writable),
        T (test_sticky_dir),
        T (test_foreign_owner),
        T (test_symlinks),
        T (test_no_group_read),
        T (test_mkdir_secure),
        T (test_mkdir_secure_errors),
        T (test_mkdir_secure_undo),
        T (test_mkdir_secure_foreign),
    };
#undef T
    setvbuf (stdout, NULL, _IOLBF, 0);
    return cmocka_run_group_tests_name ("path", tests, NULL, NULL);
}
