/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "log.h"
#include "api.h"
#include "arena.h"
#include "http.h"

struct fm_http {
    struct MHD_Daemon *mhd;
    fm_daemon_t *d;
    int fd;
};

/* Per request; created by the URI logger, which sees the raw request target. */
struct conn {
    char *uri;
    char *body;
    size_t len, cap;
    bool started;
    bool has_body;
    bool too_large;
};

bool fm_http_is_loopback (const char *addr)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (inet_pton (AF_INET, addr, &a4) == 1) {
        return (ntohl (a4.s_addr) >> 24) == 127;
    }
    if (inet_pton (AF_INET6, addr, &a6) == 1) {
        return IN6_IS_ADDR_LOOPBACK (&a6);
    }
    return false;
}

static void *uri_logger (void *cls, const char *uri, struct MHD_Connection *con)
{
    struct conn *c = calloc (1, sizeof (*c));

    if (c && !(c->uri = strdup (uri ? uri : "/"))) {
        free (c);
        c = NULL;
    }
    return c;
}

static void completed (void *cls,
                       struct MHD_Connection *con,
                       void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    struct conn *c = *con_cls;

    if (c) {
        free (c->uri);
        free (c->body);
        free (c);
        *con_cls = NULL;
    }
}

static const char *query (void *arg, const char *key)
{
    return MHD_lookup_connection_value (arg, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result
reply (struct MHD_Connection *con, fm_response_t *resp, bool close)
{
    struct MHD_Response *r;
    enum MHD_Result rc;

    r = MHD_create_response_from_buffer (resp->len, resp->body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free (resp->body);
        return MHD_NO;
    }
    MHD_add_response_header (r, MHD_HTTP_HEADER_CONTENT_TYPE, resp->content_type);
    if (close) {
        MHD_add_response_header (r, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    rc = MHD_queue_response (con, (unsigned)resp->status, r);
    MHD_destroy_response (r);
    return rc;
}

static enum MHD_Result dispatch (struct fm_http *h,
                                 struct MHD_Connection *con,
                                 struct conn *c,
                                 const char *url,
                                 const char *method)
{
    fm_request_t req = {
        .method = method,
        .path = url,
        .uri = c->uri,
        .authorization = MHD_lookup_connection_value (
            con, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
        .content_type = MHD_lookup_connection_value (
            con, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE),
        .body = c->body,
        .body_len = c->len,
        .has_body = c->has_body,
        .too_large = c->too_large,
        .query = query,
        .query_arg = con,
    };
    fm_response_t resp;

    fm_api_handle (h->d, &req, &resp);
    /* No JSON value survives a request (resp.body is malloc'd). */
    fm_arena_reset ();
    if (!resp.body) {
        return MHD_NO;
    }
    return reply (con, &resp, c->too_large);
}

static enum MHD_Result handler (void *cls,
                                struct MHD_Connection *con,
                                const char *url,
                                const char *method,
                                const char *version,
                                const char *upload_data,
                                size_t *upload_data_size,
                                void **con_cls)
{
    struct fm_http *h = cls;
    struct conn *c = *con_cls;
    size_t max = (size_t)h->d->max_body;

    if (!c) {
        return MHD_NO;
    }
    if (!c->started) {
        const char *cl = MHD_lookup_connection_value (
            con, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *te = MHD_lookup_connection_value (
            con, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        c->started = true;
        if (cl) {
            char *end;
            unsigned long long n;
            errno = 0;
            n = strtoull (cl, &end, 10);
            c->has_body = n > 0;
            if (errno != 0 || n > max) {
                /* Refuse before reading a byte of the body. */
                c->too_large = true;
                return dispatch (h, con, c, url, method);
            }
            if (n > 0 && !(c->body = malloc (n))) {
                return MHD_NO;
            }
            c->cap = n;
        } else if (te) {
            c->has_body = true;
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (c->too_large) {
            return MHD_YES;
        }
        if (n > max - c->len) {
            c->too_large = true;
            free (c->body);
            c->body = NULL;
            c->len = c->cap = 0;
            return MHD_YES;
        }
        if (c->len + n > c->cap) {
            size_t ncap = c->cap ? c->cap : 4096;
            char *nb;
            while (ncap < c->len + n) {
                ncap *= 2;
            }
            if (ncap > max) {
                ncap = max;
            }
            if (!(nb = realloc (c->body, ncap))) {
                return MHD_NO;
            }
            c->body = nb;
            c->cap = ncap;
        }
        memcpy (c->body + c->len, upload_data, n);
        c->len += n;
        c->has_body = true;
        return MHD_YES;
    }
    return dispatch (h, con, c, url, method);
}

static void mhd_log (void *cls, const char *fmt, va_list ap)
    __attribute__ ((format (printf, 2, 0)));

static void mhd_log (void *cls, const char *fmt, va_list ap)
{
    char buf[256];

    vsnprintf (buf, sizeof (buf), fmt, ap);
    buf[strcspn (buf, "\n")] = '\0';
    fm_info ("http: %s", buf);
}

static int listen_socket (const char *addr, int port, bool *v6, fm_error_t *err)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    socklen_t sslen;
    int one = 1;
    int fd;

    if (inet_pton (AF_INET, addr, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons ((uint16_t)port);
        sslen = sizeof (*sin);
        *v6 = false;
    } else if (inet_pton (AF_INET6, addr, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons ((uint16_t)port);
        sslen = sizeof (*sin6);
        *v6 = true;
    } else {
        errno = EINVAL;
        return fm_errprintf (err, "listen_address '%s' is not an IP address", addr);
    }
    if ((fd = socket (ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
        return fm_errprintf (err, "socket: %s", strerror (errno));
    }
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one));
    if (bind (fd, (struct sockaddr *)&ss, sslen) < 0 || listen (fd, 128) < 0) {
        int saved = errno;
        close (fd);
        errno = saved;
        return fm_errprintf (
            err, "cannot listen on %s port %d: %s", addr, port, strerror (saved));
    }
    return fd;
}

fm_http_t *fm_http_start (fm_daemon_t *d,
                          const char *addr,
                          int port,
                          unsigned max_connections,
                          unsigned timeout_s,
                          fm_error_t *err)
{
    struct fm_http *h;
    bool v6 = false;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG
                     | MHD_USE_ITC;

    if (!(h = calloc (1, sizeof (*h)))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    h->d = d;
    if ((h->fd = listen_socket (addr, port, &v6, err)) < 0) {
        free (h);
        return NULL;
    }
    if (v6) {
        flags |= MHD_USE_IPv6;
    }
    h->mhd = MHD_start_daemon (flags,
                               0,
                               NULL,
                               NULL,
                               handler,
                               h,
                               MHD_OPTION_EXTERNAL_LOGGER,
                               mhd_log,
                               h,
                               MHD_OPTION_LISTEN_SOCKET,
                               h->fd,
                               MHD_OPTION_URI_LOG_CALLBACK,
                               uri_logger,
                               h,
                               MHD_OPTION_NOTIFY_COMPLETED,
                               completed,
                               h,
                               MHD_OPTION_CONNECTION_LIMIT,
                               max_connections,
                               MHD_OPTION_CONNECTION_TIMEOUT,
                               timeout_s,
                               MHD_OPTION_END);
    if (!h->mhd) {
        close (h->fd);
        free (h);
        errno = EIO;
        fm_errprintf (err, "libmicrohttpd failed to start on %s port %d", addr, port);
        return NULL;
    }
    return h;
}

void fm_http_stop (fm_http_t *h)
{
    if (h) {
        int saved = errno;
        /* Quiescing hands the listening socket back, so it is closed exactly once. */
        MHD_quiesce_daemon (h->mhd);
        MHD_stop_daemon (h->mhd);
        close (h->fd);
        free (h);
        errno = saved;
    }
}
