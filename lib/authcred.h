/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AUTHCRED_H
#define FM_AUTHCRED_H

#include <stddef.h>

#include "error.h"

/* Client side of the fabricd request authentication (doc/api.md,
 * "Authentication"). Link daemon/libfmauthcred.la with $(MUNGE_LIBS) and
 * $(SODIUM_LIBS).
 */

/* Length of the payload buffer fm_authcred_payload() needs for a path of
 * path_len bytes.
 */
#define FM_AUTHCRED_PAYLOAD_LEN(path_len) ((path_len) + 4 + 5 + 64 + 4)

/* Write "fm1 METHOD PATH HEXSHA256(body)" into buf. body may be NULL when len is 0.
 * Returns the payload length, or -1/EINVAL (bad method, path with spaces or
 * control characters) or -1/ERANGE (buf too small).
 */
int fm_authcred_payload (const char *method,
                         const char *path,
                         const void *body,
                         size_t len,
                         char *buf,
                         size_t size);

/* Create the value of the Authorization header, "Munge <credential>", for one
 * request. socket NULL means munge's default socket. Returns a malloc'd string
 * or NULL with errno and the munge error in err.
 */
char *fm_authcred_header (const char *method,
                          const char *path,
                          const void *body,
                          size_t len,
                          const char *socket,
                          fm_error_t *err);

#endif /* FM_AUTHCRED_H */
