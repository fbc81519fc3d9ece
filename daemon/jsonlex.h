/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_JSONLEX_H
#define FM_JSONLEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "validate.h"

/* A JSON lexer over one request body, for parsers that read it in one pass
 * without a document (report_parse.c). Strings are decoded into `strings`
 * (never longer in total than the input); every error is a syntax error in
 * inv (inv->syntax, the offset in the message) and -1/EINVAL.
 */
/* nesting that fm_jsonlex_skip_value() follows */
#define FM_JSONLEX_MAX_DEPTH 32

typedef struct {
    const char *start, *p, *end;
    char *strings; /* decoded strings; never longer in total than the input */
    size_t slen;
    fm_invalid_t *inv;
} fm_jsonlex_t;

typedef struct {
    bool is_int;
    int64_t i;
    double d;
} fm_jsonlex_num_t;

int fm_jsonlex_syntax (fm_jsonlex_t *l, const char *what);
/* The next character after white space, -1 at the end. */
int fm_jsonlex_peek (fm_jsonlex_t *l);
int fm_jsonlex_expect (fm_jsonlex_t *l, char c, const char *what);
int fm_jsonlex_literal (fm_jsonlex_t *l, const char *word);
/* Decode a string into l->strings; *out stays valid with them. */
int fm_jsonlex_string (fm_jsonlex_t *l, const char **out, size_t *len);
int fm_jsonlex_number (fm_jsonlex_t *l, fm_jsonlex_num_t *n);
/* Check the syntax of any value and step over it. */
int fm_jsonlex_skip_value (fm_jsonlex_t *l, int depth);
/* After '{': 1 with the key in buf and ':' consumed, 0 at '}', -1 on error. */
int fm_jsonlex_next_key (fm_jsonlex_t *l, bool *first, char *buf, size_t size);
/* After '[': 1 when an element follows, 0 at ']', -1 on error. */
int fm_jsonlex_next_elem (fm_jsonlex_t *l, bool *first);

#endif /* FM_JSONLEX_H */
