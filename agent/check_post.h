/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CHECK_POST_H
#define FM_CHECK_POST_H

#include <jansson.h>

#include "error.h"

/* POST body to url's /v1/checks with a munge credential (agent/client.c).
 * 0 when fabricd accepted it; -1 with errno and err otherwise.
 */
int fm_check_post (const char *url,
                   const char *munge_socket,
                   const json_t *body,
                   fm_error_t *err);

#endif /* FM_CHECK_POST_H */
