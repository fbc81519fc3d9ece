/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <munge.h>

#include "fm/api.h"
#include "auth.h"
#include "authcred.h"

struct fm_auth {
    munge_ctx_t ctx;
    bool insecure;
    fm_idlist_t report_uids;
    fm_idlist_t admin_uids;
    fm_idlist_t admin_gids;
};

fm_auth_t *fm_auth_create (const char *socket,
                           const fm_idlist_t *report_uids,
                           const fm_idlist_t *admin_uids,
                           const fm_idlist_t *admin_gids,
                           bool insecure,
                           fm_error_t *err)
{
    fm_auth_t *a;

    if (!report_uids || !admin_uids || !admin_gids || (!socket && !insecure)) {
        errno = EINVAL;
        fm_errprintf (err, "auth: missing arguments");
        return NULL;
    }
    if (!(a = calloc (1, sizeof (*a)))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    a->insecure = insecure;
    a->report_uids = *report_uids;
    a->admin_uids = *admin_uids;
    a->admin_gids = *admin_gids;
    if (socket) {
        if (!(a->ctx = munge_ctx_create ())) {
            free (a);
            errno = ENOMEM;
            fm_errprintf (err, "cannot create a munge context");
            return NULL;
        }
        if (munge_ctx_set (a->ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
            fm_errprintf (
                err, "munge socket %s: %s", socket, munge_ctx_strerror (a->ctx));
            munge_ctx_destroy (a->ctx);
            free (a);
            errno = EINVAL;
            return NULL;
        }
    }
    return a;
}

void fm_auth_destroy (fm_auth_t *a)
{
    if (a) {
        int saved = errno;
        if (a->ctx) {
            munge_ctx_destroy (a->ctx);
        }
        free (a);
        errno = saved;
    }
}

int fm_auth_selftest (fm_auth_t *a, fm_error_t *err)
{
    char *cred = NULL;
    void *buf = NULL;
    int len;
    munge_err_t e;

    if (!a->ctx) {
        return 0;
    }
    if ((e = munge_encode (&cred, a->ctx, "fabricd", 7)) != EMUNGE_SUCCESS) {
        errno = ECONNREFUSED;
        return fm_errprintf (err, "munge: %s", munge_ctx_strerror (a->ctx));
    }
    e = munge_decode (cred, a->ctx, &buf, &len, NULL, NULL);
    free (cred);
    free (buf);
    if (e != EMUNGE_SUCCESS) {
        errno = EPERM;
        return fm_errprintf (err, "munge: %s", munge_ctx_strerror (a->ctx));
    }
    return 0;
}

fm_auth_result_t fm_auth_identify (fm_auth_t *a,
                                   const char *method,
                                   const char *uri,
                                   const char *authz,
                                   const void *body,
                                   size_t len,
                                   fm_ident_t *id,
                                   char *msg,
                                   size_t msglen)
{
    size_t scheme = strlen (FM_API_AUTH_SCHEME);
    char *expect = NULL;
    void *payload = NULL;
    int plen = 0;
    uid_t uid;
    gid_t gid;
    munge_err_t e;
    fm_auth_result_t rc;
    size_t size;
    int n;

    if (a->insecure) {
        /* Without munged nothing can be checked: a credential sent anyway (fabricctl
         * sends one whenever a local munged exists) is ignored.
         */
        id->uid = 0;
        id->gid = 0;
        return FM_AUTH_OK;
    }
    if (!authz) {
        snprintf (msg,
                  msglen,
                  "an 'Authorization: %s <credential>' header is required",
                  FM_API_AUTH_SCHEME);
        return FM_AUTH_REQUIRED;
    }
    if (strncmp (authz, FM_API_AUTH_SCHEME, scheme) != 0 || authz[scheme] != ' '
        || authz[scheme + 1] == '\0') {
        snprintf (msg,
                  msglen,
                  "the Authorization header must be '%s <credential>'",
                  FM_API_AUTH_SCHEME);
        return FM_AUTH_INVALID;
    }
    e = munge_decode (authz + scheme + 1, a->ctx, &payload, &plen, &uid, &gid);
    switch (e) {
    case EMUNGE_SUCCESS:
        break;
    case EMUNGE_CRED_REPLAYED:
        free (payload);
        snprintf (msg, msglen, "munge credential replayed");
        return FM_AUTH_REPLAYED;
    case EMUNGE_SOCKET:
    case EMUNGE_NO_MEMORY:
    case EMUNGE_SNAFU:
        free (payload);
        snprintf (msg,
                  msglen,
                  "cannot decode the credential: %s",
                  munge_ctx_strerror (a->ctx) ? munge_ctx_strerror (a->ctx)
                                              : munge_strerror (e));
        return FM_AUTH_ERROR;
    default:
        free (payload);
        snprintf (msg, msglen, "invalid munge credential: %s", munge_strerror (e));
        return FM_AUTH_INVALID;
    }
    size = FM_AUTHCRED_PAYLOAD_LEN (strlen (uri));
    if (!(expect = malloc (size))) {
        free (payload);
        snprintf (msg, msglen, "out of memory");
        return FM_AUTH_ERROR;
    }
    n = fm_authcred_payload (method, uri, body, len, expect, size);
    if (n < 0 || plen != n || memcmp (payload, expect, (size_t)n) != 0) {
        snprintf (msg,
                  msglen,
                  "the credential's payload does not match this request"
                  " (method, path or body hash)");
        rc = FM_AUTH_MISMATCH;
    } else {
        id->uid = uid;
        id->gid = gid;
        rc = FM_AUTH_OK;
    }
    free (expect);
    free (payload);
    return rc;
}

bool fm_auth_is_reporter (const fm_auth_t *a, const fm_ident_t *id)
{
    return id->uid == 0 || fm_idlist_has (&a->report_uids, id->uid);
}

static bool in_admin_group (const fm_auth_t *a, const fm_ident_t *id)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    gid_t groups[256];
    int ngroups = (int)(sizeof (groups) / sizeof (groups[0]));

    if (a->admin_gids.n == 0) {
        return false;
    }
    if (fm_idlist_has (&a->admin_gids, id->gid)) {
        return true;
    }
    if (getpwuid_r (id->uid, &pw, buf, sizeof (buf), &res) != 0 || !res) {
        return false;
    }
    if (fm_idlist_has (&a->admin_gids, pw.pw_gid)) {
        return true;
    }
    /* When the user is in more groups than fit, the ones seen still count. */
    if (getgrouplist (pw.pw_name, pw.pw_gid, groups, &ngroups) < 0) {
        ngroups = (int)(sizeof (groups) / sizeof (groups[0]));
    }
    for (int i = 0; i < ngroups; i++) {
        if (fm_idlist_has (&a->admin_gids, groups[i])) {
            return true;
        }
    }
    return false;
}

bool fm_auth_is_admin (const fm_auth_t *a, const fm_ident_t *id)
{
    return id->uid == 0 || fm_idlist_has (&a->admin_uids, id->uid)
           || in_admin_group (a, id);
}

bool fm_auth_may_read_job (const fm_auth_t *a, const fm_ident_t *id, int64_t job_uid)
{
    return (int64_t)id->uid == job_uid || fm_auth_is_admin (a, id)
           || fm_auth_is_reporter (a, id);
}
