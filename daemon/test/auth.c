/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "auth.h"
#include "authcred.h"
#include "idlist.h"

static void test_payload (void **state)
{
    char buf[256];
    int n;

    n = fm_authcred_payload ("GET", "/v1/nodes", NULL, 0, buf, sizeof (buf));
    assert_string_equal (
        buf,
        "fm1 GET /v1/nodes "
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert_int_equal (n, (int)strlen (buf));
    n = fm_authcred_payload ("POST", "/v1/reports", "abc", 3, buf, sizeof (buf));
    assert_string_equal (
        buf,
        "fm1 POST /v1/reports "
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    errno = 0;
    assert_int_equal (fm_authcred_payload ("PUT", "/v1/x", NULL, 0, buf, sizeof (buf)),
                      -1);
    assert_int_equal (errno, EINVAL);
    assert_int_equal (
        fm_authcred_payload ("GET", "/v1/a b", NULL, 0, buf, sizeof (buf)), -1);
    assert_int_equal (fm_authcred_payload ("GET", "v1", NULL, 0, buf, sizeof (buf)),
                      -1);
    assert_int_equal (fm_authcred_payload ("POST", "/v1/x", NULL, 3, buf, sizeof (buf)),
                      -1);
    errno = 0;
    assert_int_equal (fm_authcred_payload ("GET", "/v1/nodes", NULL, 0, buf, 20), -1);
    assert_int_equal (errno, ERANGE);
}

static void test_idlist (void **state)
{
    fm_idlist_t l;
    fm_error_t err;
    struct passwd *pw = getpwnam ("nobody");

    assert_non_null (pw);
    assert_int_equal (fm_idlist_parse ("0, nobody 42", false, &l, &err), 0);
    assert_int_equal (l.n, 3);
    assert_true (fm_idlist_has (&l, 0));
    assert_true (fm_idlist_has (&l, pw->pw_uid));
    assert_true (fm_idlist_has (&l, 42));
    assert_false (fm_idlist_has (&l, 43));
    assert_int_equal (fm_idlist_parse ("", false, &l, &err), 0);
    assert_int_equal (l.n, 0);
    l.n = 7;
    assert_int_equal (fm_idlist_parse ("no-such-user-xyz", false, &l, &err), -1);
    assert_int_equal (errno, EINVAL);
    assert_non_null (strstr (err.text, "no-such-user-xyz"));
    assert_int_equal (l.n, 7); /* untouched */
    assert_int_equal (fm_idlist_parse ("12abc", false, &l, &err), -1);
    assert_int_equal (fm_idlist_parse ("no-such-group-xyz", true, &l, &err), -1);
    assert_non_null (strstr (err.text, "group"));
}

static void test_decisions (void **state)
{
    struct passwd *pw;
    uid_t nobody_uid, daemon_uid;
    gid_t nobody_gid, daemon_gid;
    fm_idlist_t report = {1, {500}};
    fm_idlist_t admins = {1, {600}};
    fm_idlist_t groups = {0};
    fm_error_t err;
    fm_auth_t *a;
    fm_ident_t root = {0, 0}, slurm = {500, 500}, adm = {600, 600}, user;

    /* getpwnam's result is static: copy before the next call. */
    assert_non_null (pw = getpwnam ("nobody"));
    nobody_uid = pw->pw_uid;
    nobody_gid = pw->pw_gid;
    assert_non_null (pw = getpwnam ("daemon"));
    daemon_uid = pw->pw_uid;
    daemon_gid = pw->pw_gid;
    assert_int_not_equal (nobody_gid, daemon_gid);
    groups.n = 1;
    groups.ids[0] = nobody_gid;
    assert_non_null (a = fm_auth_create (NULL, &report, &admins, &groups, true, &err));

    assert_true (fm_auth_is_reporter (a, &root));
    assert_true (fm_auth_is_reporter (a, &slurm));
    assert_false (fm_auth_is_reporter (a, &adm));
    assert_true (fm_auth_is_admin (a, &root));
    assert_true (fm_auth_is_admin (a, &adm));
    assert_false (fm_auth_is_admin (a, &slurm));

    /* nobody is an admin through its primary group, found by uid (not by the
     * credential's gid, which here is another one).
     */
    user.uid = nobody_uid;
    user.gid = 12345;
    assert_true (fm_auth_is_admin (a, &user));
    user.uid = daemon_uid;
    user.gid = daemon_gid;
    assert_false (fm_auth_is_admin (a, &user));

    assert_true (fm_auth_may_read_job (a, &user, daemon_uid));
    assert_false (fm_auth_may_read_job (a, &user, 4242));
    assert_true (fm_auth_may_read_job (a, &slurm, 4242));
    assert_true (fm_auth_may_read_job (a, &adm, 4242));
    fm_auth_destroy (a);
    fm_auth_destroy (NULL);
}

static void test_identify (void **state)
{
    fm_idlist_t none = {0};
    fm_error_t err;
    fm_ident_t id = {99, 99};
    char msg[256];
    fm_auth_t *a;

    /* Insecure: no header acts as root. */
    assert_non_null (a = fm_auth_create (NULL, &none, &none, &none, true, &err));
    assert_int_equal (
        fm_auth_identify (a, "GET", "/v1/nodes", NULL, NULL, 0, &id, msg, sizeof (msg)),
        FM_AUTH_OK);
    assert_int_equal (id.uid, 0);
    /* A header sent anyway is ignored: nothing could check it. */
    id.uid = 99;
    assert_int_equal (
        fm_auth_identify (
            a, "GET", "/v1/nodes", "Munge xyz", NULL, 0, &id, msg, sizeof (msg)),
        FM_AUTH_OK);
    assert_int_equal (id.uid, 0);
    fm_auth_destroy (a);

    assert_null (fm_auth_create (NULL, &none, &none, &none, false, &err));
    assert_non_null (
        a = fm_auth_create ("/nonexistent/sock", &none, &none, &none, false, &err));
    assert_int_equal (
        fm_auth_identify (a, "GET", "/v1/nodes", NULL, NULL, 0, &id, msg, sizeof (msg)),
        FM_AUTH_REQUIRED);
    assert_non_null (strstr (msg, "Authorization"));
    assert_int_equal (
        fm_auth_identify (
            a, "GET", "/v1/nodes", "Basic abc", NULL, 0, &id, msg, sizeof (msg)),
        FM_AUTH_INVALID);
    assert_int_equal (
        fm_auth_identify (
            a, "GET", "/v1/nodes", "Munge ", NULL, 0, &id, msg, sizeof (msg)),
        FM_AUTH_INVALID);
    /* munged is unreachable: a local failure, not the client's. */
    assert_int_equal (
        fm_auth_identify (
            a, "GET", "/v1/nodes", "Munge MUNGE:abc:", NULL, 0, &id, msg, sizeof (msg)),
        FM_AUTH_ERROR);
    assert_int_equal (fm_auth_selftest (a, &err), -1);
    assert_non_null (strstr (err.text, "munge"));
    fm_auth_destroy (a);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_payload),
        cmocka_unit_test (test_idlist),
        cmocka_unit_test (test_decisions),
        cmocka_unit_test (test_identify),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
