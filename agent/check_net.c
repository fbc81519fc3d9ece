/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fmtime.h"
#include "linkwin.h"
#include "check_net.h"

/* Protocol, all integers big-endian:
 *   client -> server  hello: "FMCK" ver:u32 rank:u32 round:u32 ping_size:u32
 *                     window_ms:u32 bw_bytes:u64                 (32 bytes)
 *   server -> client  "FMOK"
 *   client -> server  ping_size bytes starting 'P'; the server echoes them
 *   client -> server  ping_size bytes starting 'B', then bw_bytes at most
 *   server -> client  bytes:u64 elapsed_ns:u64 after counting for window_ms
 *                     or bw_bytes, whichever comes first
 */
#define MAGIC "FMCK"
#define PROTO_VERSION 1
#define HELLO_LEN 32
#define CHUNK (64 * 1024)

static void put32 (unsigned char *p, uint32_t v)
{
    v = htonl (v);
    memcpy (p, &v, 4);
}

static uint32_t get32 (const unsigned char *p)
{
    uint32_t v;

    memcpy (&v, p, 4);
    return ntohl (v);
}

static void put64 (unsigned char *p, uint64_t v)
{
    put32 (p, (uint32_t)(v >> 32));
    put32 (p + 4, (uint32_t)v);
}

static uint64_t get64 (const unsigned char *p)
{
    return (uint64_t)get32 (p) << 32 | get32 (p + 4);
}

static int wait_fd (int fd, short events, int64_t deadline)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    int64_t left;
    int rc;

    for (;;) {
        left = deadline - fm_time_mono_ns ();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        rc = poll (&pfd, 1, (int)((left + 999999) / 1000000));
        if (rc > 0) {
            return 0;
        }
        if (rc < 0 && errno != EINTR) {
            return -1;
        }
    }
}

/* Move exactly len bytes on a non-blocking socket before deadline. */
static int io_full (int fd, void *buf, size_t len, bool out, int64_t deadline)
{
    unsigned char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = out ? send (fd, p, len, MSG_NOSIGNAL) : recv (fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0) {
            errno = ECONNRESET; /* the peer closed mid-message */
            return -1;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return -1;
        }
        if (wait_fd (fd, out ? POLLOUT : POLLIN, deadline) < 0) {
            return -1;
        }
    }
    return 0;
}

static void tune (int fd)
{
    int one = 1;

    /* each ping must leave at once, not wait for Nagle */
    (void)setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof (one));
}

int fm_check_net_listen (const char *addr, uint16_t *port, fm_error_t *err)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof (sin);
    int fd, one = 1;

    if (inet_pton (AF_INET, addr, &sin.sin_addr) != 1) {
        errno = EINVAL;
        return fm_errprintf (err, "%s: not an IPv4 address", addr);
    }
    if ((fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
        return fm_errprintf (err, "socket: %s", strerror (errno));
    }
    (void)setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one));
    if (bind (fd, (struct sockaddr *)&sin, sizeof (sin)) < 0 || listen (fd, 16) < 0
        || getsockname (fd, (struct sockaddr *)&sin, &len) < 0) {
        int e = errno;
        close (fd);
        errno = e;
        return fm_errprintf (err, "listen on %s: %s", addr, strerror (errno));
    }
    *port = ntohs (sin.sin_port);
    return fd;
}

static int client_fail (fm_check_result_t *res, const char *what, int fd)
{
    snprintf (res->error, sizeof (res->error), "%s: %s", what, strerror (errno));
    res->ok = false;
    if (fd >= 0) {
        close (fd);
    }
    return -1;
}

static int client_connect (const struct sockaddr_in *peer,
                           const fm_check_params_t *p,
                           fm_check_result_t *res)
{
    int fd, soerr = 0;
    socklen_t len = sizeof (soerr);

    if ((fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
        return client_fail (res, "socket", -1);
    }
    tune (fd);
    if (connect (fd, (const struct sockaddr *)peer, sizeof (*peer)) < 0) {
        if (errno != EINPROGRESS) {
            return client_fail (res, "connect", fd);
        }
        if (wait_fd (fd, POLLOUT, fm_time_mono_ns () + p->timeout_ns) < 0) {
            return client_fail (res, "connect", fd);
        }
        if (getsockopt (fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr != 0) {
            errno = soerr ? soerr : errno;
            return client_fail (res, "connect", fd);
        }
    }
    return fd;
}

static int client_latency (int fd,
                           const fm_check_params_t *p,
                           unsigned char *buf,
                           fm_check_result_t *res)
{
    int64_t *rtt, end = fm_time_mono_ns () + p->ping_budget_ns;
    fm_quantiles_t q;
    uint32_t k = 0;

    if (!(rtt = malloc ((size_t)p->pings * sizeof (*rtt)))) {
        return client_fail (res, "latency", -1);
    }
    memset (buf, 0, p->ping_size);
    while (k < p->pings && (k == 0 || fm_time_mono_ns () < end)) {
        int64_t t0 = fm_time_mono_ns ();
        buf[0] = 'P';
        if (io_full (fd, buf, p->ping_size, true, t0 + p->timeout_ns) < 0
            || io_full (fd, buf, p->ping_size, false, t0 + p->timeout_ns) < 0) {
            free (rtt);
            return client_fail (res, "ping", -1);
        }
        /* one way is half the round trip, as osu_latency reports it */
        rtt[k++] = (fm_time_mono_ns () - t0) / 2;
    }
    fm_linkwin_quantiles (rtt, k, &q);
    res->lat_p50_ns = q.p50;
    res->lat_p99_ns = q.p99;
    free (rtt);
    return 0;
}

static int client_bandwidth (int fd, const fm_check_params_t *p, fm_check_result_t *res)
{
    unsigned char reply[16];
    size_t got = 0;
    uint64_t sent = 0, bytes, ns;
    int64_t deadline = fm_time_mono_ns () + p->bw_window_ns + p->timeout_ns;
    char *chunk;

    if (!(chunk = calloc (1, CHUNK))) {
        return client_fail (res, "bandwidth", -1);
    }
    while (got < sizeof (reply)) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - fm_time_mono_ns ();
        ssize_t n;

        if (sent < p->bw_bytes) {
            pfd.events |= POLLOUT;
        }
        if (left <= 0) {
            errno = ETIMEDOUT;
            free (chunk);
            return client_fail (res, "bandwidth", -1);
        }
        if (poll (&pfd, 1, (int)((left + 999999) / 1000000)) < 0) {
            if (errno == EINTR) {
                continue;
            }
            free (chunk);
            return client_fail (res, "bandwidth", -1);
        }
        if (pfd.revents & POLLIN) {
            n = recv (fd, reply + got, sizeof (reply) - got, 0);
            if (n == 0) {
                errno = ECONNRESET;
            }
            if (n <= 0 && errno != EAGAIN && errno != EINTR) {
                free (chunk);
                return client_fail (res, "bandwidth result", -1);
            }
            got += n > 0 ? (size_t)n : 0;
        } else if (pfd.revents & (POLLERR | POLLHUP)) {
            errno = ECONNRESET;
            free (chunk);
            return client_fail (res, "bandwidth", -1);
        } else if (pfd.revents & POLLOUT) {
            uint64_t want = p->bw_bytes - sent;
            n = send (fd, chunk, want < CHUNK ? (size_t)want : CHUNK, MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN && errno != EINTR) {
                free (chunk);
                return client_fail (res, "bandwidth", -1);
            }
            sent += n > 0 ? (uint64_t)n : 0;
        }
    }
    free (chunk);
    bytes = get64 (reply);
    ns = get64 (reply + 8);
    if (ns == 0 || bytes > p->bw_bytes) {
        errno = EPROTO;
        return client_fail (res, "bandwidth result", -1);
    }
    res->bw_bps = (int64_t)((double)bytes * 8.0 * 1e9 / (double)ns);
    return 0;
}

void fm_check_net_client (const struct sockaddr_in *peer,
                          uint32_t me,
                          uint32_t round,
                          const fm_check_params_t *p,
                          fm_check_result_t *res)
{
    unsigned char hello[HELLO_LEN], *buf;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    int fd;

    res->ok = false;
    res->error[0] = '\0';
    res->lat_p50_ns = res->lat_p99_ns = res->bw_bps = 0;
    if ((fd = client_connect (peer, p, res)) < 0) {
        return;
    }
    memcpy (hello, MAGIC, 4);
    put32 (hello + 4, PROTO_VERSION);
    put32 (hello + 8, me);
    put32 (hello + 12, round);
    put32 (hello + 16, p->ping_size);
    put32 (hello + 20, (uint32_t)(p->bw_window_ns / 1000000));
    put64 (hello + 24, p->bw_bytes);
    if (io_full (fd, hello, sizeof (hello), true, fm_time_mono_ns () + p->timeout_ns)
            < 0
        || io_full (fd, hello, 4, false, fm_time_mono_ns () + p->timeout_ns) < 0) {
        client_fail (res, "hello", fd);
        return;
    }
    if (memcmp (hello, "FMOK", 4) != 0) {
        errno = EPROTO;
        client_fail (res, "hello", fd);
        return;
    }
    if (!(buf = malloc (p->ping_size))) {
        client_fail (res, "ping", fd);
        return;
    }
    if (client_latency (fd, p, buf, res) == 0) {
        buf[0] = 'B';
        if (io_full (fd, buf, p->ping_size, true, fm_time_mono_ns () + p->timeout_ns)
            < 0) {
            client_fail (res, "bandwidth", -1);
        } else if (client_bandwidth (fd, p, res) == 0) {
            res->ok = true;
        }
    }
    free (buf);
    /* drop what is still queued at once instead of draining it through a
     * possibly slow link into the next round
     */
    (void)setsockopt (fd, SOL_SOCKET, SO_LINGER, &lg, sizeof (lg));
    close (fd);
}

/* Checks the client's hello; fills the parameters the server needs. */
static int hello_parse (const unsigned char *h,
                        uint32_t expect,
                        uint32_t round,
                        uint32_t *ping_size,
                        int64_t *window_ns,
                        uint64_t *bw_bytes)
{
    if (memcmp (h, MAGIC, 4) != 0 || get32 (h + 4) != PROTO_VERSION
        || get32 (h + 8) != expect || get32 (h + 12) != round) {
        return -1;
    }
    *ping_size = get32 (h + 16);
    *window_ns = (int64_t)get32 (h + 20) * 1000000;
    *bw_bytes = get64 (h + 24);
    if (*ping_size < FM_CHECK_PING_SIZE_MIN || *ping_size > FM_CHECK_PING_SIZE_MAX
        || *window_ns <= 0 || *window_ns > FM_CHECK_WINDOW_MAX_NS || *bw_bytes == 0
        || *bw_bytes > FM_CHECK_BW_BYTES_MAX) {
        return -1;
    }
    return 0;
}

static int
serve_one (int fd, uint32_t expect, uint32_t round, const fm_check_params_t *p)
{
    unsigned char hello[HELLO_LEN], reply[16], *buf, *sink;
    uint32_t ping_size;
    uint64_t bw_bytes, got = 0;
    int64_t window_ns, start, end;
    int rc = -1;

    if (io_full (fd, hello, sizeof (hello), false, fm_time_mono_ns () + p->timeout_ns)
        < 0) {
        return -1;
    }
    if (hello_parse (hello, expect, round, &ping_size, &window_ns, &bw_bytes) < 0) {
        errno = EPROTO;
        return -1;
    }
    memcpy (hello, "FMOK", 4);
    buf = malloc (ping_size);
    sink = malloc (CHUNK);
    if (!buf || !sink
        || io_full (fd, hello, 4, true, fm_time_mono_ns () + p->timeout_ns) < 0) {
        goto out;
    }
    for (;;) {
        if (io_full (fd, buf, ping_size, false, fm_time_mono_ns () + p->timeout_ns)
            < 0) {
            goto out;
        }
        if (buf[0] == 'B') {
            break;
        }
        if (buf[0] != 'P') {
            errno = EPROTO;
            goto out;
        }
        if (io_full (fd, buf, ping_size, true, fm_time_mono_ns () + p->timeout_ns)
            < 0) {
            goto out;
        }
    }
    start = fm_time_mono_ns ();
    end = start + window_ns;
    while (got < bw_bytes && fm_time_mono_ns () < end) {
        uint64_t want = bw_bytes - got;
        ssize_t n = recv (fd, sink, want < CHUNK ? (size_t)want : CHUNK, 0);
        if (n > 0) {
            got += (uint64_t)n;
        } else if (n == 0) {
            errno = ECONNRESET;
            goto out;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (wait_fd (fd, POLLIN, end) < 0 && errno != ETIMEDOUT) {
                goto out;
            }
        } else if (errno != EINTR) {
            goto out;
        }
    }
    put64 (reply, got);
    put64 (reply + 8, (uint64_t)(fm_time_mono_ns () - start));
    if (io_full (fd, reply, sizeof (reply), true, fm_time_mono_ns () + p->timeout_ns)
        < 0) {
        goto out;
    }
    /* wait for the client's reset, so that our close cannot overtake the
     * reply with a reset of our own
     */
    (void)shutdown (fd, SHUT_WR);
    end = fm_time_mono_ns () + p->timeout_ns;
    while (fm_time_mono_ns () < end) {
        ssize_t n = recv (fd, sink, CHUNK, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            break;
        }
        if (n < 0 && wait_fd (fd, POLLIN, end) < 0) {
            break;
        }
    }
    rc = 0;
out:
    free (buf);
    free (sink);
    return rc;
}

int fm_check_net_serve (int lfd,
                        uint32_t expect,
                        uint32_t round,
                        const fm_check_params_t *p,
                        fm_error_t *err)
{
    /* the client may spend a timeout connecting, then its budgets */
    int64_t deadline =
        fm_time_mono_ns () + 3 * p->timeout_ns + p->ping_budget_ns + p->bw_window_ns;
    int last = ETIMEDOUT;

    for (;;) {
        int fd, rc;

        if (wait_fd (lfd, POLLIN, deadline) < 0) {
            errno = errno == ETIMEDOUT ? last : errno;
            return fm_errprintf (
                err, "waiting for rank %u: %s", (unsigned)expect, strerror (errno));
        }
        fd = accept4 (lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        tune (fd);
        rc = serve_one (fd, expect, round, p);
        last = errno;
        close (fd);
        if (rc == 0) {
            return 0;
        }
    }
}
