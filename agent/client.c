/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "authcred.h"
#include "client.h"
#include "fm/api.h"

#define ANSWER_MAX (4 * 1024 * 1024)
#define URL_MAX 256

struct fm_client {
    CURL *curl;
    char base[URL_MAX];
    char *munge_socket;
    long timeout_ms;
};

typedef struct {
    char *data;
    size_t len;
    size_t cap;
    int overflow;
} buf_t;

static size_t write_cb (char *ptr, size_t size, size_t nmemb, void *arg)
{
    buf_t *b = arg;
    size_t n = size * nmemb;

    if (b->len + n > ANSWER_MAX) {
        b->overflow = 1;
        return 0;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc (b->data, cap);
        if (!p) {
            return 0;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy (b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

static int valid_url (const char *url)
{
    const char *host, *slash;
    size_t len = strlen (url);

    if (len == 0 || len >= URL_MAX) {
        return 0;
    }
    if (strncmp (url, "http://", 7) == 0) {
        host = url + 7;
    } else if (strncmp (url, "https://", 8) == 0) {
        host = url + 8;
    } else {
        return 0;
    }
    if (*host == '\0' || *host == '/') {
        return 0;
    }
    for (const char *p = url; *p; p++) {
        if (*p <= ' ' || *p >= 0x7f || *p == '?' || *p == '#' || *p == '@') {
            return 0;
        }
    }
    slash = strchr (host, '/');
    return !slash || slash[1] == '\0';
}

fm_client_t *fm_client_create (const char *url,
                               const char *munge_socket,
                               long timeout_ms,
                               fm_error_t *err)
{
    fm_client_t *c;

    if (!url || !valid_url (url) || timeout_ms <= 0) {
        errno = EINVAL;
        fm_errprintf (
            err, "invalid daemon URL '%s' (want http://HOST[:PORT])", url ? url : "");
        return NULL;
    }
    if (!(c = calloc (1, sizeof (*c)))) {
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    snprintf (c->base, sizeof (c->base), "%s", url);
    if (c->base[strlen (c->base) - 1] == '/') {
        c->base[strlen (c->base) - 1] = '\0';
    }
    c->timeout_ms = timeout_ms;
    if ((munge_socket && !(c->munge_socket = strdup (munge_socket)))
        || !(c->curl = curl_easy_init ())) {
        fm_client_destroy (c);
        errno = ENOMEM;
        fm_errprintf (err, "cannot create an HTTP client");
        return NULL;
    }
    return c;
}

void fm_client_destroy (fm_client_t *c)
{
    if (c) {
        int saved = errno;
        if (c->curl) {
            curl_easy_cleanup (c->curl);
        }
        free (c->munge_socket);
        free (c);
        errno = saved;
    }
}

int fm_client_request (fm_client_t *c,
                       const char *method,
                       const char *path,
                       const char *body,
                       json_t **reply,
                       fm_error_t *err)
{
    char url[URL_MAX + 1024];
    char *auth = NULL, *hdr = NULL;
    struct curl_slist *headers = NULL;
    buf_t b = {0};
    size_t blen = body ? strlen (body) : 0;
    long status = 0;
    CURLcode rc;
    json_t *j = NULL;
    int ret = -1;

    if (reply) {
        *reply = NULL;
    }
    if (strlen (path) >= 1024 || path[0] != '/') {
        errno = EINVAL;
        return fm_errprintf (err, "invalid request path");
    }
    snprintf (url, sizeof (url), "%s%s", c->base, path);
    if (!(auth = fm_authcred_header (method, path, body, blen, c->munge_socket, err))) {
        return -1;
    }
    if (asprintf (&hdr, "Authorization: %s", auth) < 0) {
        hdr = NULL;
        fm_errprintf (err, "out of memory");
        goto done;
    }
    headers = curl_slist_append (headers, hdr);
    if (body) {
        headers = curl_slist_append (headers, "Content-Type: application/json");
    }
    /* no "Expect: 100-continue" round trip for report bodies */
    headers = curl_slist_append (headers, "Expect:");
    if (!headers) {
        fm_errprintf (err, "out of memory");
        goto done;
    }
    curl_easy_reset (c->curl);
    curl_easy_setopt (c->curl, CURLOPT_URL, url);
    curl_easy_setopt (c->curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt (c->curl, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt (c->curl, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt (c->curl, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt (c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt (
        c->curl, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt (c->curl, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt (c->curl, CURLOPT_WRITEDATA, &b);
    if (strcmp (method, "POST") == 0) {
        curl_easy_setopt (c->curl, CURLOPT_POST, 1L);
        curl_easy_setopt (c->curl, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt (c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    } else if (strcmp (method, "GET") != 0) {
        errno = EINVAL;
        fm_errprintf (err, "unsupported method %s", method);
        goto done;
    }
    if ((rc = curl_easy_perform (c->curl)) != CURLE_OK) {
        errno = b.overflow ? EFBIG : EIO;
        fm_errprintf (err,
                      "%s %s: %s",
                      method,
                      url,
                      b.overflow ? "answer too large" : curl_easy_strerror (rc));
        goto done;
    }
    curl_easy_getinfo (c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (b.data) {
        j = json_loadb (b.data, b.len, 0, NULL);
    }
    if (status < 200 || status > 299) {
        const char *msg = NULL, *code = NULL;
        json_unpack (j, "{s:{s?s, s?s}}", "error", "code", &code, "message", &msg);
        fm_errprintf (err,
                      "%s %s: HTTP %ld %s: %s",
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
    ret = (int)status;
done:
    json_decref (j);
    curl_slist_free_all (headers);
    free (hdr);
    free (auth);
    free (b.data);
    return ret;
}
