/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AUTH_H
#define FM_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "idlist.h"
#include "error.h"

/* Server side of request authentication (doc/api.md "Authentication"). */
typedef struct fm_auth fm_auth_t;

typedef struct {
    uid_t uid;
    gid_t gid;
} fm_ident_t;

typedef enum {
    FM_AUTH_OK = 0,
    FM_AUTH_REQUIRED, /* no credential */
    FM_AUTH_INVALID,  /* does not decode, expired, malformed header */
    FM_AUTH_REPLAYED, /* munged saw it before */
    FM_AUTH_MISMATCH, /* payload does not bind this request */
    FM_AUTH_ERROR,    /* munged unreachable or other local failure */
} fm_auth_result_t;

/* socket: munged socket (NULL when insecure). The id lists are copied. */
fm_auth_t *fm_auth_create (const char *socket,
                           const fm_idlist_t *report_uids,
                           const fm_idlist_t *admin_uids,
                           const fm_idlist_t *admin_gids,
                           bool insecure,
                           fm_error_t *err);
void fm_auth_destroy (fm_auth_t *a);

/* Encode and decode one credential, so that start-up fails when munged is not usable.
 */
int fm_auth_selftest (fm_auth_t *a, fm_error_t *err);

/* Authenticate one request: authz is the Authorization header (NULL if absent),
 * uri the request target as sent. On FM_AUTH_OK *id is filled (root when
 * insecure, whatever authz holds). msg explains any other result.
 */
fm_auth_result_t fm_auth_identify (fm_auth_t *a,
                                   const char *method,
                                   const char *uri,
                                   const char *authz,
                                   const void *body,
                                   size_t len,
                                   fm_ident_t *id,
                                   char *msg,
                                   size_t msglen);

/* Authorisation decisions. */
bool fm_auth_is_reporter (const fm_auth_t *a, const fm_ident_t *id);
bool fm_auth_is_admin (const fm_auth_t *a, const fm_ident_t *id);
bool fm_auth_may_read_job (const fm_auth_t *a, const fm_ident_t *id, int64_t job_uid);

#endif /* FM_AUTH_H */
