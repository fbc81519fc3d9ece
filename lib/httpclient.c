/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "authcred.h"
#include "httpclient.h"

struct fm_httpclient {
    CURL *curl;
    char *url;
    char *socket;
    fm_httpclient_auth_t auth;
    long timeout_s, connect_timeout_s;
    size_t max_answer;
};

int fm_httpclient_global_init (fm_error_t *err)
{
    if (curl_global_init (CURL_GLOBAL_DEFAULT) != 0) {
        errno = ENOMEM;
        return fm_errprintf (err, "cannot initialise libcurl");
    }
    return 0;
}

void fm_httpclient_global_fini (void)
{
    curl_global_cleanup ();
}

void fm_httpclient_destroy (fm_httpclient_t *c)
{
    if (c) {
        int saved = errno;
        if (c->curl) {
            curl_easy_cleanup (c->curl);
        }
        free (c->url);
        free (c->socket);
        free (c);
        errno = saved;
    }
}

fm_httpclient_t *fm_httpclient_create (const fm_httpclient_opts_t *opts, fm_error_t *err)
{
    fm_httpclient_t *c;

    if (!opts || !opts->url) {
        errno = EINVAL;
        fm_errprintf (err, "no fabricd URL");
        return NULL;
    }
    if (!(c = calloc (1, sizeof (*c))) || !(c->url = strdup (opts->url))
        || (opts->socket && !(c->socket = strdup (opts->socket)))) {
        fm_httpclient_destroy (c);
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    if (!(c->curl = curl_easy_init ())) {
        fm_httpclient_destroy (c);
        errno = ENOMEM;
        fm_errprintf (err, "cannot initialise libcurl");
        return NULL;
    }
    c->auth = opts->auth;
    c->timeout_s = opts->timeout_s;
    c->connect_timeout_s = opts->connect_timeout_s;
    c->max_answer = opts->max_answer;
    return c;
}

typedef struct {
    fm_httpclient_answer_t *ans;
    size_t max;
} sink_t;

static size_t collect (char *p, size_t size, size_t n, void *arg)
{
    sink_t *s = arg;
    size_t len = size * n;
    char *nd;

    if (s->max == 0) {
        return len;
    }
    if (s->ans->len + len > s->max) {
        s->ans->too_large = true;
        return 0;
    }
    if (!(nd = realloc (s->ans->body, s->ans->len + len + 1))) {
        return 0;
    }
    memcpy (nd + s->ans->len, p, len);
    s->ans->body = nd;
    s->ans->len += len;
    s->ans->body[s->ans->len] = '\0';
    return len;
}

/* The request's headers, the credential first; NULL with err set when a
 * required credential or memory is missing.
 */
static struct curl_slist *headers (fm_httpclient_t *c,
                                   const char *method,
                                   const char *path,
                                   const char *body,
                                   size_t len,
                                   fm_httpclient_answer_t *ans,
                                   fm_error_t *err,
                                   bool *failed)
{
    struct curl_slist *h = NULL, *nh;
    char *auth = NULL, *line = NULL;

    *failed = false;
    if (c->auth != FM_HTTPCLIENT_AUTH_NONE
        && !(auth = fm_authcred_header (method, path, body, len, c->socket, &ans->auth_err))
        && c->auth == FM_HTTPCLIENT_AUTH_REQUIRE) {
        *failed = true;
        fm_errprintf (err, "%s", ans->auth_err.text);
        return NULL;
    }
    if (auth) {
        if (asprintf (&line, "Authorization: %s", auth) < 0) {
            line = NULL;
        }
        free (auth);
        if (!line || !(nh = curl_slist_append (h, line))) {
            goto nomem;
        }
        h = nh;
        free (line);
        ans->authenticated = true;
    }
    if (body) {
        if (!(nh = curl_slist_append (h, "Content-Type: application/json"))) {
            goto nomem;
        }
        h = nh;
    }
    return h;
nomem:
    free (line);
    curl_slist_free_all (h);
    *failed = true;
    errno = ENOMEM;
    fm_errprintf (err, "out of memory");
    return NULL;
}

int fm_httpclient_request (fm_httpclient_t *c,
                           const char *method,
                           const char *path,
                           const char *body,
                           size_t len,
                           fm_httpclient_answer_t *ans,
                           fm_error_t *err)
{
    char url[1024], errbuf[CURL_ERROR_SIZE] = "";
    sink_t sink = {.ans = ans, .max = c->max_answer};
    struct curl_slist *h;
    bool failed;
    CURLcode rc;

    memset (ans, 0, sizeof (*ans));
    if (snprintf (url, sizeof (url), "%s%s", c->url, path) >= (int)sizeof (url)) {
        errno = ENAMETOOLONG;
        return fm_errprintf (err, "URL too long");
    }
    h = headers (c, method, path, body, len, ans, err, &failed);
    if (failed) {
        return -1;
    }
    curl_easy_reset (c->curl);
    curl_easy_setopt (c->curl, CURLOPT_URL, url);
    curl_easy_setopt (c->curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt (c->curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt (c->curl, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt (c->curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt (c->curl, CURLOPT_TIMEOUT, c->timeout_s);
    curl_easy_setopt (c->curl, CURLOPT_CONNECTTIMEOUT, c->connect_timeout_s);
    /* timeouts by signal would hit whichever thread the process has */
    curl_easy_setopt (c->curl, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt (c->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt (c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    } else if (strcmp (method, "GET") != 0) {
        curl_easy_setopt (c->curl, CURLOPT_CUSTOMREQUEST, method);
    }
    rc = curl_easy_perform (c->curl);
    curl_slist_free_all (h);
    if (rc != CURLE_OK) {
        ans->unreachable = rc == CURLE_COULDNT_CONNECT;
        free (ans->body);
        ans->body = NULL;
        ans->len = 0;
        errno = EIO;
        return fm_errprintf (err,
                             "%s",
                             ans->too_large ? "answer too large"
                             : errbuf[0]    ? errbuf
                                            : curl_easy_strerror (rc));
    }
    curl_easy_getinfo (c->curl, CURLINFO_RESPONSE_CODE, &ans->status);
    return 0;
}

void fm_httpclient_answer_clear (fm_httpclient_answer_t *ans)
{
    if (ans) {
        free (ans->body);
        ans->body = NULL;
        ans->len = 0;
    }
}
