/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "client.h"

/* The request path against a live fabricd is covered by t0100; here the
 * input validation, the failures before any answer, and what the client
 * sends and makes of answers fabricd would not give (chunked, truncated,
 * garbage, silence), from a scripted server on 127.0.0.1. Requests carry a
 * real MUNGE credential: the scripted cases start their own munged (root).
 */

static void test_url_validation (void **state)
{
    static const char *good[] = {
        "http://127.0.0.1:8470",
        "http://10.77.0.1:8470/",
        "http://[::1]:8470",
        "http://fabricd.example",
    };
    static const char *bad[] = {
        "",
        "127.0.0.1:8470",
        "ftp://x",
        "https://fabricd.example:443",
        "http://h:0",
        "http://h:65536",
        "http://h:",
        "http://h:8x",
        "http://[::1",
        "http://[]:80",
        "http://",
        "http:///x",
        "http://h/v1",
        "http://user@h",
        "http://h?x=1",
        "http://h#f",
        "http://h x",
        "http://h\n",
    };
    fm_error_t err;

    for (size_t i = 0; i < sizeof (good) / sizeof (good[0]); i++) {
        fm_client_t *c = fm_client_create (good[i], NULL, 1000, &err);
        assert_non_null (c);
        fm_client_destroy (c);
    }
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        errno = 0;
        assert_null (fm_client_create (bad[i], NULL, 1000, &err));
        assert_int_equal (errno, EINVAL);
        assert_non_null (strstr (err.text, "invalid daemon URL"));
    }
    assert_null (fm_client_create (NULL, NULL, 1000, &err));
    assert_null (fm_client_create ("http://h", NULL, 0, &err));
    fm_client_destroy (NULL);
}

static void test_request_failures (void **state)
{
    fm_client_t *c =
        fm_client_create ("http://127.0.0.1:9", "/nonexistent/munge.sock", 500, NULL);
    fm_error_t err;
    json_t *reply = (json_t *)1;

    assert_non_null (c);
    /* a path must be absolute and short */
    errno = 0;
    assert_int_equal (fm_client_request (c, "GET", "v1/status", NULL, &reply, &err),
                      -1);
    assert_int_equal (errno, EINVAL);
    assert_null (reply);
    /* no munged behind the socket: no credential, no request */
    assert_int_equal (fm_client_request (c, "GET", "/v1/status", NULL, &reply, &err),
                      -1);
    assert_non_null (strstr (err.text, "munge"));
    assert_null (reply);
    fm_client_destroy (c);
}

/* A one-connection-at-a-time server thread: reads a request (head and
 * Content-Length body), keeps it, writes the scripted answer, closes.
 */
typedef struct {
    int lfd;
    uint16_t port;
    const char *answer; /* NULL: read the request and never answer */
    char request[8192];
    pthread_t thread;
} server_t;

static void *serve (void *arg)
{
    server_t *sv = arg;
    int fd = accept (sv->lfd, NULL, NULL);
    size_t len = 0;
    char *eoh = NULL;

    if (fd < 0) {
        return NULL;
    }
    for (;;) {
        ssize_t k = recv (fd, sv->request + len, sizeof (sv->request) - 1 - len, 0);
        if (k <= 0) {
            break;
        }
        len += (size_t)k;
        sv->request[len] = '\0';
        if ((eoh = strstr (sv->request, "\r\n\r\n"))) {
            const char *cl = strstr (sv->request, "Content-Length: ");
            size_t want = (size_t)(eoh + 4 - sv->request) + (cl ? strtoul (cl + 16, NULL, 10) : 0);
            if (len >= want) {
                break;
            }
        }
    }
    if (sv->answer) {
        (void)!write (fd, sv->answer, strlen (sv->answer));
    } else {
        char c;
        (void)!read (fd, &c, 1); /* until the client gives up */
    }
    close (fd);
    return NULL;
}

static void server_start (server_t *sv, const char *answer)
{
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
    socklen_t slen = sizeof (sin);

    memset (sv, 0, sizeof (*sv));
    sv->answer = answer;
    assert_true ((sv->lfd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
    assert_int_equal (bind (sv->lfd, (struct sockaddr *)&sin, sizeof (sin)), 0);
    assert_int_equal (listen (sv->lfd, 4), 0);
    assert_int_equal (getsockname (sv->lfd, (struct sockaddr *)&sin, &slen), 0);
    sv->port = ntohs (sin.sin_port);
    assert_int_equal (pthread_create (&sv->thread, NULL, serve, sv), 0);
}

static void server_join (server_t *sv)
{
    pthread_join (sv->thread, NULL);
    close (sv->lfd);
}

typedef struct {
    char dir[64], sock[96];
    pid_t pid;
} munged_t;

static munged_t md;

/* munged of our own, as t0100 starts it; skipped without root or munged. */
static int munged_up (void **state)
{
    char key[128], pidf[128], log[128], seed[128], cmd[768];
    FILE *f;
    int fd;

    if (geteuid () != 0 || system ("command -v munged >/dev/null 2>&1") != 0) {
        return 0;
    }
    snprintf (md.dir, sizeof (md.dir), "/tmp/fm-client-test.XXXXXX");
    if (!mkdtemp (md.dir)) {
        return -1;
    }
    snprintf (key, sizeof (key), "%s/key", md.dir);
    snprintf (pidf, sizeof (pidf), "%s/pid", md.dir);
    snprintf (log, sizeof (log), "%s/log", md.dir);
    snprintf (seed, sizeof (seed), "%s/seed", md.dir);
    snprintf (md.sock, sizeof (md.sock), "%s/sock", md.dir);
    if ((fd = open (key, O_WRONLY | O_CREAT | O_EXCL, 0400)) < 0) {
        return -1;
    }
    for (int i = 0; i < 1024; i++) {
        char c = (char)(rand () ^ i);
        (void)!write (fd, &c, 1);
    }
    close (fd);
    snprintf (cmd,
              sizeof (cmd),
              "munged --force --socket=%s --key-file=%s --pid-file=%s --log-file=%s"
              " --seed-file=%s",
              md.sock,
              key,
              pidf,
              log,
              seed);
    if (system (cmd) != 0 || !(f = fopen (pidf, "r"))) {
        md.sock[0] = '\0';
        return 0;
    }
    if (fscanf (f, "%d", &md.pid) != 1) {
        md.pid = 0;
    }
    fclose (f);
    chmod (md.dir, 0755);
    return 0;
}

static int munged_down (void **state)
{
    char cmd[128];

    if (md.pid > 0) {
        kill (md.pid, SIGTERM);
        for (int i = 0; i < 50 && kill (md.pid, 0) == 0; i++) {
            usleep (100000);
        }
    }
    if (md.dir[0]) {
        snprintf (cmd, sizeof (cmd), "rm -rf '%s'", md.dir);
        (void)!system (cmd);
    }
    return 0;
}

/* One request against a server scripted with answer; returns the status. */
static int exchange (server_t *sv,
                     const char *answer,
                     const char *method,
                     const char *body,
                     long timeout_ms,
                     json_t **reply,
                     fm_error_t *err)
{
    char url[64];
    fm_client_t *c;
    int rc;

    server_start (sv, answer);
    snprintf (url, sizeof (url), "http://127.0.0.1:%u/", (unsigned)sv->port);
    assert_non_null (c = fm_client_create (url, md.sock, timeout_ms, err));
    rc = fm_client_request (c, method, "/v1/test", body, reply, err);
    fm_client_destroy (c);
    server_join (sv);
    return rc;
}

static void test_exchange (void **state)
{
    server_t sv;
    fm_error_t err;
    json_t *reply = NULL;
    char host[64];

    if (!md.sock[0]) {
        skip ();
    }
    /* a POST, and what went on the wire */
    assert_int_equal (exchange (&sv,
                                "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                                "content-length: 12\r\n\r\n{\"stored\":3}",
                                "POST",
                                "{\"a\":1}",
                                2000,
                                &reply,
                                &err),
                      201);
    assert_int_equal (json_integer_value (json_object_get (reply, "stored")), 3);
    json_decref (reply);
    assert_non_null (strstr (sv.request, "POST /v1/test HTTP/1.1\r\n"));
    snprintf (host, sizeof (host), "\r\nHost: 127.0.0.1:%u\r\n", (unsigned)sv.port);
    assert_non_null (strstr (sv.request, host));
    assert_non_null (strstr (sv.request, "\r\nAuthorization: Munge MUNGE:"));
    assert_non_null (strstr (sv.request, "\r\nContent-Type: application/json\r\n"));
    assert_non_null (strstr (sv.request, "\r\nContent-Length: 7\r\n\r\n{\"a\":1}"));

    /* a GET has no body and no Content-Type; a chunked answer */
    assert_int_equal (exchange (&sv,
                                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "5\r\n{\"n\":\r\n3\r\n42}\r\n0\r\n\r\n",
                                "GET",
                                NULL,
                                2000,
                                &reply,
                                &err),
                      200);
    assert_int_equal (json_integer_value (json_object_get (reply, "n")), 42);
    json_decref (reply);
    assert_non_null (strstr (sv.request, "GET /v1/test HTTP/1.1\r\n"));
    assert_null (strstr (sv.request, "Content-Type"));
    assert_non_null (strstr (sv.request, "\r\nContent-Length: 0\r\n"));

    /* an API error: the status, and the message in err */
    assert_int_equal (exchange (&sv,
                                "HTTP/1.1 409 Conflict\r\nContent-Length: 53\r\n\r\n"
                                "{\"error\":{\"code\":\"conflict\",\"message\":\"job is over\"}}",
                                "POST",
                                "{}",
                                2000,
                                NULL,
                                &err),
                      409);
    assert_non_null (strstr (err.text, "HTTP 409 conflict: job is over"));

    /* an answer without a body is a status all the same */
    assert_int_equal (
        exchange (&sv, "HTTP/1.0 204 No Content\r\n\r\n", "GET", NULL, 2000, &reply, &err),
        204);
    assert_null (reply);
}

static void test_bad_answers (void **state)
{
    static const char *bad[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"short\":1}",
        "hello, this is no HTTP\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n",
        "",
    };
    server_t sv;
    fm_error_t err;
    json_t *reply = (json_t *)1;

    if (!md.sock[0]) {
        skip ();
    }
    for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++) {
        errno = 0;
        assert_int_equal (exchange (&sv, bad[i], "GET", NULL, 2000, &reply, &err), -1);
        assert_int_equal (errno, EPROTO);
        assert_null (reply);
        assert_non_null (strstr (err.text, "GET http://127.0.0.1:"));
    }
    /* a server that never answers: the timeout bounds the whole request */
    errno = 0;
    assert_int_equal (exchange (&sv, NULL, "POST", "{}", 300, &reply, &err), -1);
    assert_int_equal (errno, ETIMEDOUT);
    assert_non_null (strstr (err.text, "timed out"));
}

static void test_refused (void **state)
{
    server_t sv;
    char url[64];
    fm_client_t *c;
    fm_error_t err;

    if (!md.sock[0]) {
        skip ();
    }
    /* a port that was just closed */
    server_start (&sv, "");
    snprintf (url, sizeof (url), "http://127.0.0.1:%u", (unsigned)sv.port);
    {
        /* let the thread's accept return, then close the listener */
        int fd = socket (AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_port = htons (sv.port),
                                  .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
        assert_int_equal (connect (fd, (struct sockaddr *)&sin, sizeof (sin)), 0);
        close (fd);
    }
    server_join (&sv);
    assert_non_null (c = fm_client_create (url, md.sock, 1000, &err));
    errno = 0;
    assert_int_equal (fm_client_request (c, "GET", "/v1/status", NULL, NULL, &err), -1);
    assert_int_equal (errno, ECONNREFUSED);
    assert_non_null (strstr (err.text, "connect to 127.0.0.1"));
    fm_client_destroy (c);
}

int main (void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test (test_url_validation),
        cmocka_unit_test (test_request_failures),
        cmocka_unit_test (test_exchange),
        cmocka_unit_test (test_bad_answers),
        cmocka_unit_test (test_refused),
    };

    signal (SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests (tests, munged_up, munged_down);
}
