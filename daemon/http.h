/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_HTTP_H
#define FM_HTTP_H

#include "daemon.h"
#include "error.h"

/* The HTTP/1.1 transport: libmicrohttpd with one internal polling thread, which
 * is the only thread that touches d->store, d->auth and d->metrics.
 */
typedef struct fm_http fm_http_t;

/* Bind addr:port (errors such as EADDRINUSE are reported here, in err) and
 * start serving. Signals should be blocked by the caller first.
 */
fm_http_t *fm_http_start (fm_daemon_t *d,
                          const char *addr,
                          int port,
                          unsigned max_connections,
                          unsigned timeout_s,
                          fm_error_t *err);

/* Stop serving; waits for the request in progress. NULL-safe. */
void fm_http_stop (fm_http_t *h);

/* Is addr a loopback address literal (127.0.0.0/8, ::1)? */
bool fm_http_is_loopback (const char *addr);

#endif /* FM_HTTP_H */
