/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonlex.h"

int fm_jsonlex_syntax (fm_jsonlex_t *l, const char *what)
{
    l->inv->field[0] = '\0';
    l->inv->syntax = true;
    snprintf (l->inv->message,
              sizeof (l->inv->message),
              "body is not valid JSON: %s at offset %zu",
              what,
              (size_t)(l->p - l->start));
    errno = EINVAL;
    return -1;
}

int fm_jsonlex_peek (fm_jsonlex_t *l)
{
    while (l->p < l->end
           && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r')) {
        l->p++;
    }
    return l->p < l->end ? (unsigned char)*l->p : -1;
}

int fm_jsonlex_expect (fm_jsonlex_t *l, char c, const char *what)
{
    if (fm_jsonlex_peek (l) != c) {
        return fm_jsonlex_syntax (l, what);
    }
    l->p++;
    return 0;
}

int fm_jsonlex_literal (fm_jsonlex_t *l, const char *word)
{
    size_t n = strlen (word);

    if ((size_t)(l->end - l->p) < n || memcmp (l->p, word, n) != 0) {
        return fm_jsonlex_syntax (l, "invalid literal");
    }
    l->p += n;
    return 0;
}

/* Length of the valid UTF-8 sequence at p (p[0] >= 0x80), or -1. */
static int utf8_len (const unsigned char *p, const unsigned char *end)
{
    uint32_t cp;
    int n;

    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        n = 2;
        cp = p[0] & 0x1f;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3;
        cp = p[0] & 0x0f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4;
        cp = p[0] & 0x07;
    } else {
        return -1;
    }
    if (end - p < n) {
        return -1;
    }
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return -1;
        }
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff))
        || (cp >= 0xd800 && cp <= 0xdfff)) {
        return -1;
    }
    return n;
}

static int hex4 (fm_jsonlex_t *l, uint32_t *v)
{
    *v = 0;
    if (l->end - l->p < 4) {
        return fm_jsonlex_syntax (l, "short \\u escape");
    }
    for (int i = 0; i < 4; i++) {
        char c = *l->p++;
        *v <<= 4;
        if (c >= '0' && c <= '9') {
            *v |= (uint32_t)(c - '0');
        } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
            *v |= (uint32_t)((c | 0x20) - 'a' + 10);
        } else {
            return fm_jsonlex_syntax (l, "bad \\u escape");
        }
    }
    return 0;
}

static char *put_utf8 (char *o, uint32_t cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xc0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xe0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (char)(0xf0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    }
    return o;
}

/* Decode a string into l->strings; *out stays valid with the report. */
int fm_jsonlex_string (fm_jsonlex_t *l, const char **out, size_t *len)
{
    char *o = l->strings + l->slen;
    char *first = o;

    if (fm_jsonlex_peek (l) != '"') {
        return fm_jsonlex_syntax (l, "expected a string");
    }
    l->p++;
    for (;;) {
        unsigned char c;
        if (l->p >= l->end) {
            return fm_jsonlex_syntax (l, "unterminated string");
        }
        c = (unsigned char)*l->p;
        if (c == '"') {
            l->p++;
            break;
        }
        if (c < 0x20) {
            return fm_jsonlex_syntax (l, "control character in a string");
        }
        if (c == '\\') {
            uint32_t cp;
            if (++l->p >= l->end) {
                return fm_jsonlex_syntax (l, "unterminated string");
            }
            switch (*l->p++) {
            case '"':
                *o++ = '"';
                break;
            case '\\':
                *o++ = '\\';
                break;
            case '/':
                *o++ = '/';
                break;
            case 'b':
                *o++ = '\b';
                break;
            case 'f':
                *o++ = '\f';
                break;
            case 'n':
                *o++ = '\n';
                break;
            case 'r':
                *o++ = '\r';
                break;
            case 't':
                *o++ = '\t';
                break;
            case 'u':
                if (hex4 (l, &cp) < 0) {
                    return -1;
                }
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    uint32_t lo;
                    if (l->end - l->p < 2 || l->p[0] != '\\' || l->p[1] != 'u') {
                        return fm_jsonlex_syntax (l, "lone surrogate");
                    }
                    l->p += 2;
                    if (hex4 (l, &lo) < 0) {
                        return -1;
                    }
                    if (lo < 0xdc00 || lo > 0xdfff) {
                        return fm_jsonlex_syntax (l, "lone surrogate");
                    }
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    return fm_jsonlex_syntax (l, "lone surrogate");
                }
                if (cp == 0) {
                    return fm_jsonlex_syntax (l, "NUL in a string");
                }
                o = put_utf8 (o, cp);
                break;
            default:
                return fm_jsonlex_syntax (l, "bad escape");
            }
        } else if (c >= 0x80) {
            int n =
                utf8_len ((const unsigned char *)l->p, (const unsigned char *)l->end);
            if (n < 0) {
                return fm_jsonlex_syntax (l, "invalid UTF-8");
            }
            memcpy (o, l->p, (size_t)n);
            o += n;
            l->p += n;
        } else {
            *o++ = (char)c;
            l->p++;
        }
    }
    *o++ = '\0';
    l->slen = (size_t)(o - l->strings);
    *out = first;
    *len = (size_t)(o - first) - 1;
    return 0;
}

int fm_jsonlex_number (fm_jsonlex_t *l, fm_jsonlex_num_t *n)
{
    const char *s = l->p, *p = l->p;
    bool neg = false, frac = false;
    uint64_t v = 0;

    if (p < l->end && *p == '-') {
        neg = true;
        p++;
    }
    if (p >= l->end || *p < '0' || *p > '9') {
        return fm_jsonlex_syntax (l, "invalid number");
    }
    if (*p == '0') {
        p++;
    } else {
        while (p < l->end && *p >= '0' && *p <= '9') {
            unsigned d = (unsigned)(*p++ - '0');
            if (v > (UINT64_MAX - d) / 10) {
                l->p = s;
                return fm_jsonlex_syntax (l, "integer out of range");
            }
            v = v * 10 + d;
        }
    }
    if (p < l->end && *p == '.') {
        frac = true;
        if (++p >= l->end || *p < '0' || *p > '9') {
            return fm_jsonlex_syntax (l, "invalid number");
        }
        while (p < l->end && *p >= '0' && *p <= '9') {
            p++;
        }
    }
    if (p < l->end && (*p == 'e' || *p == 'E')) {
        frac = true;
        p++;
        if (p < l->end && (*p == '+' || *p == '-')) {
            p++;
        }
        if (p >= l->end || *p < '0' || *p > '9') {
            return fm_jsonlex_syntax (l, "invalid number");
        }
        while (p < l->end && *p >= '0' && *p <= '9') {
            p++;
        }
    }
    l->p = p;
    n->is_int = !frac;
    if (!frac) {
        if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0)) {
            l->p = s;
            return fm_jsonlex_syntax (l, "integer out of range");
        }
        n->i = neg ? (int64_t)(0 - v) : (int64_t)v;
        n->d = (double)n->i;
    } else {
        char buf[64];
        if ((size_t)(p - s) >= sizeof (buf)) {
            l->p = s;
            return fm_jsonlex_syntax (l, "number too long");
        }
        memcpy (buf, s, (size_t)(p - s));
        buf[p - s] = '\0';
        n->d = strtod (buf, NULL);
        if (!isfinite (n->d)) {
            l->p = s;
            return fm_jsonlex_syntax (l, "number out of range");
        }
    }
    return 0;
}

/* Check the syntax of any value and step over it. */
int fm_jsonlex_skip_value (fm_jsonlex_t *l, int depth)
{
    size_t save = l->slen;
    const char *s;
    size_t len;
    fm_jsonlex_num_t n;
    int c = fm_jsonlex_peek (l);

    if (depth > FM_JSONLEX_MAX_DEPTH) {
        return fm_jsonlex_syntax (l, "nested too deeply");
    }
    switch (c) {
    case '"':
        if (fm_jsonlex_string (l, &s, &len) < 0) {
            return -1;
        }
        l->slen = save;
        return 0;
    case '{':
    case '[':
        l->p++;
        if (fm_jsonlex_peek (l) == (c == '{' ? '}' : ']')) {
            l->p++;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                if (fm_jsonlex_string (l, &s, &len) < 0
                    || fm_jsonlex_expect (l, ':', "expected ':'") < 0) {
                    return -1;
                }
                l->slen = save;
            }
            if (fm_jsonlex_skip_value (l, depth + 1) < 0) {
                return -1;
            }
            if (fm_jsonlex_peek (l) == ',') {
                l->p++;
                continue;
            }
            return fm_jsonlex_expect (
                l, c == '{' ? '}' : ']', "expected ',' or the end");
        }
    case 't':
        return fm_jsonlex_literal (l, "true");
    case 'f':
        return fm_jsonlex_literal (l, "false");
    case 'n':
        return fm_jsonlex_literal (l, "null");
    default:
        return fm_jsonlex_number (l, &n);
    }
}

/* After '{': 1 with the key in buf and ':' consumed, 0 at '}', -1 on error. */
int fm_jsonlex_next_key (fm_jsonlex_t *l, bool *first, char *buf, size_t size)
{
    size_t save = l->slen;
    const char *key;
    size_t len;
    int c = fm_jsonlex_peek (l);

    if (c == '}') {
        l->p++;
        return 0;
    }
    if (!*first) {
        if (c != ',') {
            return fm_jsonlex_syntax (l, "expected ',' or '}'");
        }
        l->p++;
    }
    *first = false;
    if (fm_jsonlex_string (l, &key, &len) < 0
        || fm_jsonlex_expect (l, ':', "expected ':'") < 0) {
        return -1;
    }
    if (len >= size) {
        len = size - 1;
    }
    memcpy (buf, key, len);
    buf[len] = '\0';
    l->slen = save;
    return 1;
}

/* After '[': 1 when an element follows, 0 at ']', -1 on error. */
int fm_jsonlex_next_elem (fm_jsonlex_t *l, bool *first)
{
    int c = fm_jsonlex_peek (l);

    if (c == ']') {
        l->p++;
        return 0;
    }
    if (!*first) {
        if (c != ',') {
            return fm_jsonlex_syntax (l, "expected ',' or ']'");
        }
        l->p++;
    }
    *first = false;
    return 1;
}
