/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_DAEMON_API_H
#define FM_DAEMON_API_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "auth.h"
#include "daemon.h"

/* One HTTP request as the transport (http.c) hands it over. */
typedef struct {
    const char *method;
    const char *path;          /* without the query string */
    const char *uri;           /* request target as sent, for the credential */
    const char *authorization; /* header value, NULL if absent */
    const char *content_type;  /* header value, NULL if absent */
    const char *body;
    size_t body_len;
    bool has_body;  /* a Content-Length or chunked body was sent */
    bool too_large; /* the body went over max_body and was dropped */
    const char *(*query) (void *arg, const char *key); /* NULL if none */
    void *query_arg;
} fm_request_t;

typedef struct {
    int status;
    char *body; /* malloc'd */
    size_t len;
    const char *content_type;
    const char *error_code; /* the error's code (a static string), NULL on success */
} fm_response_t;

extern const char *const fm_api_route_names[];
extern const size_t fm_api_nroutes;

/* Route, authenticate, authorise and answer. resp->body is the caller's. */
void fm_api_handle (fm_daemon_t *d, const fm_request_t *req, fm_response_t *resp);

/* Same, acting as ident instead of decoding a credential (tests). */
void fm_api_handle_as (fm_daemon_t *d,
                       const fm_request_t *req,
                       const fm_ident_t *ident,
                       fm_response_t *resp);

/* Helpers for the handlers in rendezvous.c and jobs.c. code must be a static string. */
void fm_api_error (fm_response_t *resp,
                   int status,
                   const char *code,
                   const char *field,
                   const char *fmt,
                   ...) __attribute__ ((format (printf, 5, 6)));
void fm_api_json (fm_response_t *resp, int status, json_t *o); /* steals o */

/* Query parameter "since" as a duration back from now; def_ns when absent.
 * -1 with a 400 in resp when malformed or beyond retention.
 */
int fm_api_since (fm_daemon_t *d,
                  const fm_request_t *req,
                  int64_t def_ns,
                  int64_t now_ns,
                  int64_t *since_ns,
                  fm_response_t *resp);

/* Map a store errno to 404/409/503/500. */
void fm_api_store_error (fm_response_t *resp, int errnum, const char *text);

#endif /* FM_DAEMON_API_H */
