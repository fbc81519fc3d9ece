/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_HTTPCLIENT_H
#define FM_HTTPCLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The HTTP client of fabricctl, its watch view and the benchmarks: one libcurl
 * handle (kept connections) per client, requests signed with a munge
 * credential (lib/authcred.h). Not thread-safe: one client per thread.
 */
typedef struct fm_httpclient fm_httpclient_t;

typedef enum {
    FM_HTTPCLIENT_AUTH_NONE,    /* send no credential */
    FM_HTTPCLIENT_AUTH_TRY,     /* without a credential the request still goes out */
    FM_HTTPCLIENT_AUTH_REQUIRE, /* no credential: the request fails */
} fm_httpclient_auth_t;

typedef struct {
    const char *url;      /* "http://host:port", paths are appended */
    const char *socket;   /* munge socket, NULL for munge's default */
    fm_httpclient_auth_t auth;
    long timeout_s;       /* whole request */
    long connect_timeout_s;
    size_t max_answer;    /* bytes of answer kept; 0 discards the answer */
} fm_httpclient_opts_t;

typedef struct {
    long status;          /* HTTP status; 0 when no answer came */
    char *body;           /* NUL-terminated answer (caller frees), NULL when none */
    size_t len;
    bool authenticated;   /* a credential went with the request */
    fm_error_t auth_err;  /* why not, when it did not */
    bool unreachable;     /* transport failure: could not connect */
    bool too_large;       /* transport failure: answer over max_answer */
} fm_httpclient_answer_t;

/* Call fm_httpclient_global_init() once before any thread uses a client and
 * fm_httpclient_global_fini() at exit (libcurl's global state).
 */
int fm_httpclient_global_init (fm_error_t *err);
void fm_httpclient_global_fini (void);

fm_httpclient_t *fm_httpclient_create (const fm_httpclient_opts_t *opts, fm_error_t *err);
void fm_httpclient_destroy (fm_httpclient_t *c);

/* METHOD path, with a JSON body when body is not NULL. 0 when an answer came
 * (any status, in ans), -1 with the transport's reason in err otherwise; ans
 * is filled in both cases. Release with fm_httpclient_answer_clear().
 */
int fm_httpclient_request (fm_httpclient_t *c,
                           const char *method,
                           const char *path,
                           const char *body,
                           size_t len,
                           fm_httpclient_answer_t *ans,
                           fm_error_t *err);
void fm_httpclient_answer_clear (fm_httpclient_answer_t *ans);

#endif /* FM_HTTPCLIENT_H */
