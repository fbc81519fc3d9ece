/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "authcred.h"
#include "client.h"
#include "fm/api.h"
#include "fmtime.h"

/* HTTP/1.1 over one TCP connection a request ("Connection: close"), written
 * here rather than taken from libcurl: the agent sits on every node of every
 * job, and libcurl's dependency tree (OpenSSL, GnuTLS, Kerberos, LDAP, SSH,
 * HTTP/2...) was half of its resident memory (bench/agent-cost) for requests
 * that fabricd, a plain HTTP server, answers every few seconds.
 */

#define ANSWER_MAX (4 * 1024 * 1024)
#define HEAD_MAX (64 * 1024) /* status line and headers */
#define URL_MAX 256
#define HOST_MAX 256

struct fm_client {
    char base[URL_MAX];
    char host[HOST_MAX]; /* as in the URL: a name, an IPv4 or a [IPv6] literal */
    char node[HOST_MAX]; /* what getaddrinfo() resolves: brackets removed */
    char port[8];
    char *munge_socket;
    long timeout_ms;
};

typedef struct {
    char *data;
    size_t len, cap;
} buf_t;

static int buf_add (buf_t *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *d = realloc (b->data, cap);
        if (!d) {
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy (b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* http://HOST[:PORT][/]: host, node and port of c. */
static bool parse_url (fm_client_t *c, const char *url)
{
    const char *host, *end, *port = NULL;
    size_t len = strlen (url), hlen;

    if (len == 0 || len >= URL_MAX || strncmp (url, "http://", 7) != 0) {
        return false;
    }
    for (const char *p = url; *p; p++) {
        if (*p <= ' ' || *p >= 0x7f || *p == '?' || *p == '#' || *p == '@') {
            return false;
        }
    }
    host = url + 7;
    end = host + strcspn (host, "/");
    if (*end == '/' && end[1] != '\0') {
        return false; /* no path */
    }
    if (*host == '[') {
        const char *rb = memchr (host, ']', (size_t)(end - host));
        if (!rb || rb == host + 1 || (rb + 1 < end && rb[1] != ':')) {
            return false;
        }
        hlen = (size_t)(rb + 1 - host);
        snprintf (c->node, sizeof (c->node), "%.*s", (int)(rb - host - 1), host + 1);
        port = rb + 1 < end ? rb + 2 : NULL;
    } else {
        const char *colon = memchr (host, ':', (size_t)(end - host));
        hlen = (size_t)((colon ? colon : end) - host);
        snprintf (c->node, sizeof (c->node), "%.*s", (int)hlen, host);
        port = colon ? colon + 1 : NULL;
    }
    if (hlen == 0 || c->node[0] == '\0') {
        return false;
    }
    snprintf (c->host, sizeof (c->host), "%.*s", (int)hlen, host);
    if (port) {
        size_t plen = (size_t)(end - port);
        long v = 0;
        if (plen == 0 || plen > 5 || strspn (port, "0123456789") < plen) {
            return false;
        }
        for (size_t i = 0; i < plen; i++) {
            v = v * 10 + (port[i] - '0');
        }
        if (v < 1 || v > 65535) {
            return false;
        }
        snprintf (c->port, sizeof (c->port), "%ld", v);
    } else {
        snprintf (c->port, sizeof (c->port), "80");
    }
    return true;
}

fm_client_t *fm_client_create (const char *url,
                               const char *munge_socket,
                               long timeout_ms,
                               fm_error_t *err)
{
    fm_client_t *c;

    if (!(c = calloc (1, sizeof (*c)))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    if (!url || !parse_url (c, url) || timeout_ms <= 0) {
        free (c);
        errno = EINVAL;
        fm_errprintf (
            err, "invalid daemon URL '%s' (want http://HOST[:PORT])", url ? url : "");
        return NULL;
    }
    snprintf (c->base, sizeof (c->base), "%s", url);
    if (c->base[strlen (c->base) - 1] == '/') {
        c->base[strlen (c->base) - 1] = '\0';
    }
    c->timeout_ms = timeout_ms;
    if (munge_socket && !(c->munge_socket = strdup (munge_socket))) {
        free (c);
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    return c;
}

void fm_client_destroy (fm_client_t *c)
{
    if (c) {
        int saved = errno;
        free (c->munge_socket);
        free (c);
        errno = saved;
    }
}

/* Milliseconds left before deadline (monotonic ns), at least 0. */
static int left_ms (int64_t deadline)
{
    int64_t left = (deadline - fm_time_mono_ns ()) / 1000000;

    return left < 0 ? 0 : left > 60000 ? 60000 : (int)left;
}

/* Wait for events on fd until the deadline: 0, or -1/ETIMEDOUT. */
static int wait_fd (int fd, short events, int64_t deadline)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    int n;

    do {
        n = poll (&pfd, 1, left_ms (deadline));
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return n < 0 ? -1 : 0;
}

/* A connected non-blocking socket to c's host, tried address by address. */
static int connect_host (const fm_client_t *c, int64_t deadline, fm_error_t *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res, *ai;
    int rc, fd = -1, e = ECONNREFUSED;

    if ((rc = getaddrinfo (c->node, c->port, &hints, &res)) != 0) {
        errno = rc == EAI_SYSTEM ? errno : EHOSTUNREACH;
        return fm_errprintf (err, "%s: %s", c->node, gai_strerror (rc));
    }
    for (ai = res; ai; ai = ai->ai_next) {
        socklen_t len = sizeof (e);
        fd = socket (ai->ai_family,
                     ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                     ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        if (connect (fd, ai->ai_addr, ai->ai_addrlen) == 0
            || (errno == EINPROGRESS && wait_fd (fd, POLLOUT, deadline) == 0
                && getsockopt (fd, SOL_SOCKET, SO_ERROR, &e, &len) == 0 && e == 0)) {
            break;
        }
        e = errno == EINPROGRESS ? e : errno;
        close (fd);
        fd = -1;
    }
    freeaddrinfo (res);
    if (fd < 0) {
        errno = e;
        return fm_errprintf (err, "connect to %s: %s", c->host, strerror (e));
    }
    return fd;
}

static int send_all (int fd, const char *p, size_t n, int64_t deadline)
{
    while (n > 0) {
        ssize_t k = send (fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && errno == EAGAIN) {
            if (wait_fd (fd, POLLOUT, deadline) < 0) {
                return -1;
            }
        } else if (k < 0 && errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

/* The value of header name in head (NUL-terminated header block), or NULL. */
static const char *header (const char *head, const char *name)
{
    size_t n = strlen (name);

    for (const char *l = strstr (head, "\r\n"); l; l = strstr (l + 2, "\r\n")) {
        if (strncasecmp (l + 2, name, n) == 0 && l[2 + n] == ':') {
            const char *v = l + 3 + n;
            return v + strspn (v, " \t");
        }
    }
    return NULL;
}

/* Decode a chunked body in place; -1 when malformed or incomplete. */
static int unchunk (char *body, size_t len, size_t *out)
{
    size_t r = 0, w = 0;

    for (;;) {
        char *end;
        unsigned long n;
        const char *eol = memmem (body + r, len - r, "\r\n", 2);
        if (!eol) {
            return -1;
        }
        errno = 0;
        n = strtoul (body + r, &end, 16);
        if (errno || end == body + r || n > ANSWER_MAX || (size_t)(eol - body) + 2 + n + 2 > len) {
            return -1;
        }
        r = (size_t)(eol - body) + 2;
        if (n == 0) {
            *out = w;
            body[w] = '\0';
            return 0;
        }
        memmove (body + w, body + r, n);
        w += n;
        r += n + 2;
    }
}

/* Read the answer: status, and body (NUL-terminated) in b. -1 with errno. */
static int read_answer (int fd, int64_t deadline, buf_t *b, size_t *body_off)
{
    char chunk[16384], *eoh = NULL;
    size_t want = SIZE_MAX;
    const char *v;
    bool chunked = false;

    for (;;) {
        ssize_t k = recv (fd, chunk, sizeof (chunk), 0);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k < 0 && errno == EAGAIN) {
            if (wait_fd (fd, POLLIN, deadline) < 0) {
                return -1;
            }
            continue;
        }
        if (k < 0) {
            return -1;
        }
        if (k > 0 && buf_add (b, chunk, (size_t)k) < 0) {
            return -1;
        }
        if (!eoh && (eoh = strstr (b->data ? b->data : "", "\r\n\r\n"))) {
            *body_off = (size_t)(eoh - b->data) + 4;
            eoh[2] = '\0'; /* the header block ends with its last CRLF */
            if ((v = header (b->data, "Content-Length"))) {
                want = *body_off + strtoul (v, NULL, 10);
            }
            v = header (b->data, "Transfer-Encoding");
            chunked = v && strncasecmp (v, "chunked", 7) == 0;
        }
        if (!eoh && b->len > HEAD_MAX) {
            errno = EPROTO;
            return -1;
        }
        if (eoh && b->len - *body_off > ANSWER_MAX) {
            errno = EFBIG;
            return -1;
        }
        /* chunked: "Connection: close" ends it */
        if (k == 0 || (eoh && !chunked && b->len >= want)) {
            break;
        }
    }
    if (!eoh || (want != SIZE_MAX && b->len < want)) {
        errno = EPROTO; /* closed before the answer was complete */
        return -1;
    }
    if (chunked) {
        size_t n;
        if (unchunk (b->data + *body_off, b->len - *body_off, &n) < 0) {
            errno = EPROTO;
            return -1;
        }
        b->len = *body_off + n;
    } else if (want != SIZE_MAX) {
        b->len = want;
        b->data[b->len] = '\0';
    }
    return 0;
}

static int status_of (const char *head)
{
    int status = 0;

    if (strncmp (head, "HTTP/1.", 7) != 0 || sscanf (head + 8, " %3d", &status) != 1
        || status < 100 || status > 599) {
        return -1;
    }
    return status;
}

int fm_client_request (fm_client_t *c,
                       const char *method,
                       const char *path,
                       const char *body,
                       json_t **reply,
                       fm_error_t *err)
{
    int64_t deadline = fm_time_mono_ns () + (int64_t)c->timeout_ms * 1000000;
    size_t blen = body ? strlen (body) : 0, body_off = 0;
    char *auth = NULL, *req = NULL;
    buf_t b = {0};
    json_t *j = NULL;
    fm_error_t cerr;
    int fd = -1, status, n, ret = -1;

    if (reply) {
        *reply = NULL;
    }
    if (strlen (path) >= 1024 || path[0] != '/' || strpbrk (path, " \r\n")) {
        errno = EINVAL;
        return fm_errprintf (err, "invalid request path");
    }
    if (strcmp (method, "POST") != 0 && strcmp (method, "GET") != 0) {
        errno = EINVAL;
        return fm_errprintf (err, "unsupported method %s", method);
    }
    if (!(auth = fm_authcred_header (method, path, body, blen, c->munge_socket, err))) {
        return -1;
    }
    n = asprintf (&req,
                  "%s %s HTTP/1.1\r\nHost: %s%s%s\r\nAuthorization: %s\r\n"
                  "User-Agent: fabric-agent/" PACKAGE_VERSION "\r\n"
                  "Accept: application/json\r\nConnection: close\r\n"
                  "%s"
                  "Content-Length: %zu\r\n\r\n",
                  method,
                  path,
                  c->host,
                  strcmp (c->port, "80") ? ":" : "",
                  strcmp (c->port, "80") ? c->port : "",
                  auth,
                  body ? "Content-Type: application/json\r\n" : "",
                  blen);
    if (n < 0) {
        req = NULL;
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        goto done;
    }
    if ((fd = connect_host (c, deadline, &cerr)) < 0) {
        fm_errprintf (err, "%s %s%s: %s", method, c->base, path, cerr.text);
        goto done;
    }
    if (send_all (fd, req, (size_t)n, deadline) < 0
        || (blen && send_all (fd, body, blen, deadline) < 0)
        || read_answer (fd, deadline, &b, &body_off) < 0) {
        int e = errno;
        fm_errprintf (err,
                      "%s %s%s: %s",
                      method,
                      c->base,
                      path,
                      e == ETIMEDOUT ? "timed out"
                      : e == EFBIG   ? "answer too large"
                      : e == EPROTO  ? "malformed or truncated answer"
                                     : strerror (e));
        errno = e;
        goto done;
    }
    if ((status = status_of (b.data)) < 0) {
        errno = EPROTO;
        fm_errprintf (err, "%s %s%s: not an HTTP answer", method, c->base, path);
        goto done;
    }
    if (b.len > body_off) {
        j = json_loadb (b.data + body_off, b.len - body_off, 0, NULL);
    }
    if (status < 200 || status > 299) {
        const char *msg = NULL, *code = NULL;
        json_unpack (j, "{s:{s?s, s?s}}", "error", "code", &code, "message", &msg);
        fm_errprintf (err,
                      "%s %s: HTTP %d %s: %s",
                      method,
                      path,
                      status,
                      code ? code : "",
                      msg ? msg : "(no message)");
    }
    if (reply) {
        *reply = j;
        j = NULL;
    }
    ret = status;
done:
    if (fd >= 0) {
        close (fd);
    }
    json_decref (j);
    free (req);
    free (auth);
    free (b.data);
    return ret;
}
