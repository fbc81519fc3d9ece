/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>
#include <munge.h>
#include <sodium.h>

#include "fmtime.h"
#include "api.h"
#include "authcred.h"
#include "fuzz.h"

/* Request routing and handling: fm_api_handle() (daemon/api.c and the handlers
 * behind it) on a real SQLite store, with requests as http.c builds them from
 * what libmicrohttpd parsed. There is no pure routing function taking method,
 * path and headers (match() and handle() are static, and handle() also
 * authenticates and runs the handler), so the whole dispatch is the target;
 * doc/fuzzing.md describes the split that would expose routing alone.
 *
 * Input: up to MAX_REQUESTS raw HTTP/1.1 requests separated by NUL bytes, run
 * in order against a store that is fresh for each input (so that "register,
 * then report" sequences are reachable, and a reproducer needs no history).
 * This harness does libmicrohttpd's part: request line, headers, %-decoding of
 * the path and of query arguments, and http.c's Content-Length rules.
 *
 * Credentials: linked with -Wl,--wrap=munge_decode; "Authorization: Munge U"
 * with U a decimal uid decodes to a correct payload for this request from uid
 * U, "Munge mU" to a payload for another request, "Munge r" to a replay, "Munge
 * s" to munged being unreachable, anything else to an invalid credential.
 * The wall clock is fixed (-Wl,--wrap=fm_time_real_ns) so that report windows
 * in the corpus stay valid and a reproducer replays the same way.
 *
 * With FUZZ_TRACE set in the environment, each answer goes to stderr (to check
 * what a corpus file reaches).
 *
 * Oracles: every response has a body, a status in 200..599 and a content type;
 * a JSON one parses, and an error status carries {"error":{"code":...}} equal
 * to resp.error_code.
 */

#define MAX_REQUESTS 8
#define NOW_NS 1800000000000000000LL

munge_err_t __wrap_munge_decode (
    const char *cred, munge_ctx_t ctx, void **buf, int *len, uid_t *uid, gid_t *gid);
int64_t __wrap_fm_time_real_ns (void);

static struct {
    char tmp[96];
    char dir[128];
    char db[160];
    fm_daemon_t d;
    const fm_request_t *req; /* the request being authenticated */
    bool trace;              /* FUZZ_TRACE set: print each request's answer */
} fx;

int64_t __wrap_fm_time_real_ns (void)
{
    return NOW_NS;
}

static char *
payload_for (const char *method, const char *uri, const char *body, size_t len, int *n)
{
    size_t size = FM_AUTHCRED_PAYLOAD_LEN (strlen (uri));
    char *buf = malloc (size);

    if (!buf) {
        abort ();
    }
    if ((*n = fm_authcred_payload (method, uri, len ? body : NULL, len, buf, size))
        < 0) {
        free (buf);
        return NULL;
    }
    return buf;
}

munge_err_t __wrap_munge_decode (
    const char *cred, munge_ctx_t ctx, void **buf, int *len, uid_t *uid, gid_t *gid)
{
    const fm_request_t *r = fx.req;
    bool other = cred[0] == 'm';
    const char *digits = other ? cred + 1 : cred;
    char *end;
    unsigned long v;
    char *p;
    int n;

    (void)ctx;
    *buf = NULL;
    *len = 0;
    if (strcmp (cred, "r") == 0) {
        return EMUNGE_CRED_REPLAYED;
    }
    if (strcmp (cred, "s") == 0) {
        return EMUNGE_SOCKET;
    }
    errno = 0;
    v = strtoul (digits, &end, 10);
    if (!isdigit ((unsigned char)digits[0]) || *end != '\0' || errno != 0
        || v > 4294967294UL) {
        return EMUNGE_CRED_INVALID;
    }
    p = other ? payload_for ("GET", "/elsewhere", NULL, 0, &n)
              : payload_for (r->method, r->uri, r->body, r->body_len, &n);
    if (!p) {
        /* No payload binds this request (a path with spaces, say). */
        return EMUNGE_CRED_INVALID;
    }
    *buf = p;
    *len = n;
    *uid = (uid_t)v;
    *gid = (gid_t)v;
    return EMUNGE_SUCCESS;
}

static void remove_db (void)
{
    static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
    char p[200];

    for (size_t i = 0; i < sizeof (sfx) / sizeof (sfx[0]); i++) {
        snprintf (p, sizeof (p), "%s%s", fx.db, sfx[i]);
        unlink (p);
    }
}

int LLVMFuzzerInitialize (int *argc, char ***argv)
{
    static const fm_idlist_t report = {1, {990}};
    static const fm_idlist_t admins = {1, {991}};
    static const fm_idlist_t none = {0};
    const char *tmp = access ("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv ("TMPDIR");
    fm_error_t err;

    (void)argc;
    (void)argv;
    if (sodium_init () < 0) {
        abort ();
    }
    snprintf (fx.tmp, sizeof (fx.tmp), "%s", tmp ? tmp : "/tmp");
    /* Secure: a socket path, which nothing ever connects to (see the wrapper). */
    fx.d.auth = fm_auth_create (
        "/nonexistent/munge.socket", &report, &admins, &none, false, &err);
    fx.d.metrics = fm_metrics_create (fm_api_route_names, fm_api_nroutes);
    if (!fx.d.auth || !fx.d.metrics) {
        abort ();
    }
    fx.d.max_body = 65536;
    fx.d.retention_ns = 86400 * FM_NSEC_PER_SEC;
    fx.d.window_ns = 5 * FM_NSEC_PER_SEC;
    fx.d.metrics_public = false;
    fx.d.metrics_links = 100;
    fx.d.start_real_ns = NOW_NS;
    fx.d.start_mono_ns = fm_time_mono_ns ();
    fx.trace = getenv ("FUZZ_TRACE") != NULL;
    return 0;
}

static int unhex (int c)
{
    return isdigit (c) ? c - '0' : tolower (c) - 'a' + 10;
}

/* libmicrohttpd's MHD_http_unescape(): %XX where both are hex digits. */
static void unescape (char *s)
{
    char *o = s;

    for (char *p = s; *p; p++) {
        if (p[0] == '%' && isxdigit ((unsigned char)p[1])
            && isxdigit ((unsigned char)p[2])) {
            *o++ =
                (char)(unhex ((unsigned char)p[1]) << 4 | unhex ((unsigned char)p[2]));
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
}

struct query {
    char *keys[16];
    char *values[16];
    size_t n;
};

static const char *query (void *arg, const char *key)
{
    struct query *q = arg;

    for (size_t i = 0; i < q->n; i++) {
        if (strcmp (q->keys[i], key) == 0) {
            return q->values[i];
        }
    }
    return NULL;
}

static void parse_query (char *s, struct query *q)
{
    char *save = NULL;

    for (char *a = strtok_r (s, "&", &save); a && q->n < 16;
         a = strtok_r (NULL, "&", &save)) {
        char *eq = strchr (a, '=');
        if (eq) {
            *eq = '\0';
        }
        unescape (a);
        q->keys[q->n] = a;
        q->values[q->n] = eq ? eq + 1 : "";
        if (eq) {
            unescape (eq + 1);
        }
        q->n++;
    }
}

static void check_response (const fm_response_t *resp)
{
    json_t *o;

    fuzz_check (resp->body != NULL);
    fuzz_check (resp->status >= 200 && resp->status <= 599);
    fuzz_check (resp->content_type != NULL);
    if (strcmp (resp->content_type, "application/json") != 0) {
        fuzz_check (resp->status == 200);
        return;
    }
    o = json_loadb (resp->body, resp->len, 0, NULL);
    fuzz_check (o != NULL);
    if (resp->status >= 400) {
        const char *code = NULL;
        fuzz_check (json_unpack (o, "{s:{s:s}}", "error", "code", &code) == 0);
        fuzz_check (resp->error_code && strcmp (code, resp->error_code) == 0);
    }
    json_decref (o);
}

/* One request of text (len bytes, NUL-free); malformed ones are libmicrohttpd's
 * to refuse and are skipped.
 */
static void one (char *text, size_t len)
{
    char *eol = strchr (text, '\n');
    char *method, *target, *sp, *uri, *qs, *line, *body;
    const char *authz = NULL, *ctype = NULL, *clen = NULL, *te = NULL;
    struct query q = {.n = 0};
    fm_request_t req;
    fm_response_t resp;
    bool too_large = false, has_body = false;

    if (!eol) {
        return;
    }
    *eol = '\0';
    if (eol > text && eol[-1] == '\r') {
        eol[-1] = '\0';
    }
    method = text;
    if (!(target = strchr (method, ' '))) {
        return;
    }
    *target++ = '\0';
    /* The protocol version is libmicrohttpd's business. */
    if ((sp = strchr (target, ' '))) {
        *sp = '\0';
    }
    if (method[0] == '\0' || target[0] == '\0') {
        return;
    }
    /* Headers up to an empty line; the body is whatever follows it. */
    line = eol + 1;
    body = text + len;
    while (line < text + len) {
        char *next = strchr (line, '\n');
        char *colon, *v;
        if (next) {
            *next = '\0';
            if (next > line && next[-1] == '\r') {
                next[-1] = '\0';
            }
        }
        if (line[0] == '\0') {
            body = next ? next + 1 : text + len;
            break;
        }
        if ((colon = strchr (line, ':'))) {
            *colon = '\0';
            for (v = colon + 1; *v == ' ' || *v == '\t'; v++) {
            }
            if (strcasecmp (line, "Authorization") == 0) {
                authz = v;
            } else if (strcasecmp (line, "Content-Type") == 0) {
                ctype = v;
            } else if (strcasecmp (line, "Content-Length") == 0) {
                clen = v;
            } else if (strcasecmp (line, "Transfer-Encoding") == 0) {
                te = v;
            }
        }
        if (!next) {
            break;
        }
        line = next + 1;
    }
    if (!(uri = strdup (target))) {
        abort ();
    }
    if ((qs = strchr (target, '?'))) {
        *qs++ = '\0';
        parse_query (qs, &q);
    }
    unescape (target);
    size_t blen = (size_t)(text + len - body);
    /* http.c: a Content-Length over max_body is refused before the body is read. */
    if (clen) {
        char *end;
        unsigned long long n;
        errno = 0;
        n = strtoull (clen, &end, 10);
        has_body = n > 0;
        too_large = errno != 0 || n > (unsigned long long)fx.d.max_body;
    } else if (te) {
        has_body = true;
    }
    if (blen > 0) {
        has_body = true;
    }
    if (blen > (size_t)fx.d.max_body) {
        too_large = true;
    }
    req = (fm_request_t){
        .method = method,
        .path = target,
        .uri = uri,
        .authorization = authz,
        .content_type = ctype,
        .body = too_large ? NULL : body,
        .body_len = too_large ? 0 : blen,
        .has_body = has_body,
        .too_large = too_large,
        .query = query,
        .query_arg = &q,
    };
    fx.req = &req;
    fm_api_handle (&fx.d, &req, &resp);
    fx.req = NULL;
    if (fx.trace) {
        fprintf (stderr,
                 "%s %s -> %d %.*s\n",
                 method,
                 uri,
                 resp.status,
                 resp.len > 300 ? 300 : (int)resp.len,
                 resp.body ? resp.body : "");
    }
    check_response (&resp);
    free (resp.body);
    free (uri);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    fm_error_t err;
    char *copy;
    size_t off = 0;

    if (!(copy = malloc (size + 1))) {
        abort ();
    }
    if (size > 0) {
        memcpy (copy, data, size);
    }
    copy[size] = '\0';
    /* A directory per input, not per process: libFuzzer may leave by _exit(). */
    snprintf (fx.dir, sizeof (fx.dir), "%s/fm-fuzz-http.XXXXXX", fx.tmp);
    if (!mkdtemp (fx.dir)) {
        perror (fx.dir);
        abort ();
    }
    snprintf (fx.db, sizeof (fx.db), "%s/db", fx.dir);
    if (!(fx.d.store = fm_store_open ("sqlite", fx.db, FM_STORE_SYNC_NORMAL, &err))) {
        fprintf (stderr, "fm_store_open: %s\n", err.text);
        abort ();
    }
    for (int i = 0; i < MAX_REQUESTS && off < size; i++) {
        size_t len = strlen (copy + off);
        one (copy + off, len);
        off += len + 1;
    }
    fm_store_close (fx.d.store);
    fx.d.store = NULL;
    remove_db ();
    rmdir (fx.dir);
    free (copy);
    return 0;
}
