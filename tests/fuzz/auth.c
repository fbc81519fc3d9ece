/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <munge.h>
#include <sodium.h>

#include "fm/api.h"
#include "auth.h"
#include "authcred.h"
#include "fuzz.h"

/* The Authorization header and credential payload checks: fm_auth_identify()
 * (daemon/auth.c) and fm_authcred_payload() (lib/authcred.c).
 *
 * munged's decoding is a cryptographic oracle that no fuzzer gets past, and it
 * runs out of process; this target is linked with -Wl,--wrap=munge_decode, and
 * the wrapper plays munged: the input chooses what the "credential" decodes to
 * (error code, payload), which is exactly the untrusted data auth.c parses.
 *
 * Input: a control byte, then method, uri, Authorization value and decoded
 * payload, each ended by '\n', then the body (the rest).
 *   control & 0x1f: the munge error to return (mod 19; 0 = success)
 *   control & 0x20: no Authorization header at all
 *   control & 0x40: decode to the correct payload for the request, whatever the
 *                   payload field says, so that the fuzzer reaches the success path
 */

munge_err_t __wrap_munge_decode (
    const char *cred, munge_ctx_t ctx, void **buf, int *len, uid_t *uid, gid_t *gid);

static struct {
    munge_err_t err;
    const char *payload;
    size_t payload_len;
    const char *cred_seen;
} munged;

munge_err_t __wrap_munge_decode (
    const char *cred, munge_ctx_t ctx, void **buf, int *len, uid_t *uid, gid_t *gid)
{
    (void)ctx;
    munged.cred_seen = cred;
    if (buf) {
        *buf = NULL;
    }
    if (len) {
        *len = 0;
    }
    /* Like libmunge, a payload also comes with these three errors. */
    if (munged.err != EMUNGE_SUCCESS && munged.err != EMUNGE_CRED_EXPIRED
        && munged.err != EMUNGE_CRED_REWOUND && munged.err != EMUNGE_CRED_REPLAYED) {
        return munged.err;
    }
    if (buf && munged.payload_len > 0) {
        char *p = malloc (munged.payload_len + 1);
        if (!p) {
            abort ();
        }
        memcpy (p, munged.payload, munged.payload_len);
        p[munged.payload_len] = '\0';
        *buf = p;
        if (len) {
            *len = (int)munged.payload_len;
        }
    }
    if (uid) {
        *uid = 1000;
    }
    if (gid) {
        *gid = 100;
    }
    return munged.err;
}

static fm_auth_t *auth;

int LLVMFuzzerInitialize (int *argc, char ***argv)
{
    fm_idlist_t none = {0};
    fm_error_t err;

    (void)argc;
    (void)argv;
    if (sodium_init () < 0) {
        abort ();
    }
    /* A socket makes it a secure instance; nothing connects to it. */
    if (!(auth = fm_auth_create (
              "/nonexistent/munge.socket", &none, &none, &none, false, &err))) {
        fprintf (stderr, "fm_auth_create: %s\n", err.text);
        abort ();
    }
    return 0;
}

/* fm_authcred_payload() alone: the format, and the buffer size contract. */
static int
payload (const char *method, const char *uri, const char *body, size_t len, char **out)
{
    size_t size = FM_AUTHCRED_PAYLOAD_LEN (strlen (uri));
    char *buf = malloc (size);
    char *small;
    int n;

    if (!buf) {
        abort ();
    }
    errno = 0;
    n = fm_authcred_payload (method, uri, len ? body : NULL, len, buf, size);
    if (n < 0) {
        fuzz_check (errno == EINVAL);
        free (buf);
        *out = NULL;
        return -1;
    }
    fuzz_check ((size_t)n == strlen (buf));
    fuzz_check ((size_t)n == strlen ("fm1  ") + strlen (method) + strlen (uri) + 65);
    fuzz_check (strncmp (buf, "fm1 ", 4) == 0);
    fuzz_check (strspn (buf + n - 64, "0123456789abcdef") == 64);
    /* One byte short of the terminator: ERANGE, not a truncated payload. */
    if (!(small = malloc ((size_t)n))) {
        abort ();
    }
    fuzz_check (
        fm_authcred_payload (method, uri, len ? body : NULL, len, small, (size_t)n)
            == -1
        && errno == ERANGE);
    free (small);
    *out = buf;
    return n;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    uint8_t control;
    char *method, *uri, *authz, *pl, *expect = NULL;
    char msg[256];
    fm_ident_t id = {12345, 12345};
    fm_auth_result_t r;
    int n;

    if (size < 1) {
        return -1;
    }
    control = data[0];
    data++;
    size--;
    method = fuzz_field (&data, &size, '\n');
    uri = fuzz_field (&data, &size, '\n');
    authz = fuzz_field (&data, &size, '\n');
    pl = fuzz_field (&data, &size, '\n');
    /* The body is the rest, NUL bytes and all. */
    n = payload (method, uri, (const char *)data, size, &expect);
    munged.err = (munge_err_t)((control & 0x1f) % 19);
    munged.payload = pl;
    munged.payload_len = strlen (pl);
    if ((control & 0x40) && expect) {
        munged.payload = expect;
        munged.payload_len = (size_t)n;
    }
    munged.cred_seen = NULL;
    memset (msg, 'x', sizeof (msg));
    r = fm_auth_identify (auth,
                          method,
                          uri,
                          control & 0x20 ? NULL : authz,
                          size ? data : NULL,
                          size,
                          &id,
                          msg,
                          sizeof (msg));
    fuzz_check (r >= FM_AUTH_OK && r <= FM_AUTH_ERROR);
    if (r == FM_AUTH_OK) {
        /* Only a well-formed header whose payload binds this very request. */
        fuzz_check (!(control & 0x20) && munged.err == EMUNGE_SUCCESS);
        fuzz_check (strncmp (authz, "Munge ", 6) == 0 && authz[6] != '\0');
        fuzz_check (munged.cred_seen == authz + 6);
        fuzz_check (expect && munged.payload_len == (size_t)n
                    && memcmp (munged.payload, expect, (size_t)n) == 0);
        fuzz_check (id.uid == 1000 && id.gid == 100);
    } else {
        fuzz_check (memchr (msg, '\0', sizeof (msg)) != NULL && msg[0] != '\0');
        fuzz_check (id.uid == 12345 && id.gid == 12345);
        if (control & 0x20) {
            fuzz_check (r == FM_AUTH_REQUIRED);
        }
    }
    if (munged.err == EMUNGE_SUCCESS && (control & 0x40) && expect && !(control & 0x20)
        && strncmp (authz, "Munge ", 6) == 0 && authz[6] != '\0') {
        fuzz_check (r == FM_AUTH_OK);
    }
    free (expect);
    free (pl);
    free (authz);
    free (uri);
    free (method);
    return 0;
}
