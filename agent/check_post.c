/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "client.h"
#include "check_post.h"

#define POST_TIMEOUT_MS 5000

int fm_check_post (const char *url,
                   const char *munge_socket,
                   const json_t *body,
                   fm_error_t *err)
{
    fm_client_t *c;
    char *text;
    int status;

    if (!(text = json_dumps (body, JSON_COMPACT))) {
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    if (!(c = fm_client_create (url, munge_socket, POST_TIMEOUT_MS, err))) {
        free (text);
        return -1;
    }
    status = fm_client_request (c, "POST", "/v1/checks", text, NULL, err);
    fm_client_destroy (c);
    free (text);
    if (status < 0) {
        return -1;
    }
    if (status < 200 || status > 299) {
        errno = EPROTO;
        return -1; /* err holds the API's message */
    }
    return 0;
}
