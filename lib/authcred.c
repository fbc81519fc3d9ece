/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <munge.h>
#include <sodium.h>

#include "fm/api.h"
#include "authcred.h"

int fm_authcred_payload (const char *method,
                         const char *path,
                         const void *body,
                         size_t len,
                         char *buf,
                         size_t size)
{
    unsigned char hash[crypto_hash_sha256_BYTES];
    char hex[crypto_hash_sha256_BYTES * 2 + 1];
    int n;

    if (!method || !path || !buf || (!body && len > 0)
        || (strcmp (method, "GET") != 0 && strcmp (method, "POST") != 0)
        || path[0] != '/') {
        errno = EINVAL;
        return -1;
    }
    for (const char *p = path; *p; p++) {
        if ((unsigned char)*p <= ' ' || *p == 0x7f) {
            errno = EINVAL;
            return -1;
        }
    }
    crypto_hash_sha256 (hash, body ? body : (const void *)"", len);
    sodium_bin2hex (hex, sizeof (hex), hash, sizeof (hash));
    n = snprintf (buf, size, "%s %s %s %s", FM_API_AUTH_PAYLOAD_TAG, method, path, hex);
    if (n < 0 || (size_t)n >= size) {
        errno = ERANGE;
        return -1;
    }
    return n;
}

char *fm_authcred_header (const char *method,
                          const char *path,
                          const void *body,
                          size_t len,
                          const char *socket,
                          fm_error_t *err)
{
    munge_ctx_t ctx = NULL;
    munge_err_t e;
    char *payload = NULL;
    char *cred = NULL;
    char *header = NULL;
    size_t size;
    int n;

    if (!path) {
        errno = EINVAL;
        fm_errprintf (err, "no request path");
        return NULL;
    }
    size = FM_AUTHCRED_PAYLOAD_LEN (strlen (path));
    if (!(payload = malloc (size))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    if ((n = fm_authcred_payload (method, path, body, len, payload, size)) < 0) {
        fm_errprintf (err, "cannot build the credential payload: %s", strerror (errno));
        goto error;
    }
    if (!(ctx = munge_ctx_create ())) {
        errno = ENOMEM;
        fm_errprintf (err, "cannot create a munge context");
        goto error;
    }
    if (socket
        && (e = munge_ctx_set (ctx, MUNGE_OPT_SOCKET, socket)) != EMUNGE_SUCCESS) {
        errno = EINVAL;
        fm_errprintf (err, "munge socket %s: %s", socket, munge_ctx_strerror (ctx));
        goto error;
    }
    if ((e = munge_encode (&cred, ctx, payload, n)) != EMUNGE_SUCCESS) {
        errno = e == EMUNGE_SOCKET ? ECONNREFUSED : EPERM;
        fm_errprintf (err, "munge: %s", munge_ctx_strerror (ctx));
        goto error;
    }
    size = strlen (FM_API_AUTH_SCHEME) + 1 + strlen (cred) + 1;
    if (!(header = malloc (size))) {
        fm_errprintf (err, "out of memory");
        goto error;
    }
    snprintf (header, size, "%s %s", FM_API_AUTH_SCHEME, cred);
    free (cred);
    free (payload);
    munge_ctx_destroy (ctx);
    return header;
error : {
    int saved = errno;
    free (cred);
    free (payload);
    if (ctx) {
        munge_ctx_destroy (ctx);
    }
    errno = saved;
}
    return NULL;
}
