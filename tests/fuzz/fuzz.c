/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <string.h>

#include "fuzz.h"

char *fuzz_strndup (const uint8_t *data, size_t size)
{
    char *s = size > 0 ? strndup ((const char *)data, size) : strdup ("");

    if (!s) {
        abort ();
    }
    return s;
}

char *fuzz_field (const uint8_t **data, size_t *size, char sep)
{
    const uint8_t *end = *size > 0 ? memchr (*data, sep, *size) : NULL;
    size_t n = end ? (size_t)(end - *data) : *size;
    char *s = fuzz_strndup (*data, n);

    *data += end ? n + 1 : n;
    *size -= end ? n + 1 : n;
    return s;
}
