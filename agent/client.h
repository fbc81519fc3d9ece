/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_CLIENT_H
#define FM_AGENT_CLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

/* A small fabricd client (doc/api.md): HTTP/1.1, one connection a request,
 * every request authenticated with a fresh munge credential bound to method,
 * path and body. Plain HTTP only, as fabricd serves it. Not thread-safe; use
 * it from one thread.
 */
typedef struct fm_client fm_client_t;

/* url: "http://host[:port]" (a trailing "/" is allowed, no other path).
 * munge_socket may be NULL (munge's default). timeout_ms bounds each request.
 */
fm_client_t *fm_client_create (const char *url,
                               const char *munge_socket,
                               long timeout_ms,
                               fm_error_t *err);
void fm_client_destroy (fm_client_t *c);

/* Perform METHOD path with an optional JSON body. Returns the HTTP status
 * (any, including 4xx/5xx, with the parsed answer in *reply when it is JSON
 * and reply is not NULL), or -1 when no answer came (connection, timeout,
 * munge; errno and err). On a non-2xx status err holds the API's error message.
 * Answers over 4 MiB are refused.
 */
int fm_client_request (fm_client_t *c,
                       const char *method,
                       const char *path,
                       const char *body,
                       json_t **reply,
                       fm_error_t *err);

#endif /* FM_AGENT_CLIENT_H */
