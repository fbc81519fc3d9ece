/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_CONF_H
#define FM_CONF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

/* A typed configuration table, one per program:
 *
 *   static const fm_conf_item_t items[] = {
 *       { "listen_port", FM_CONF_INT, "8470", 1, 65535, NULL, "HTTP port" },
 *       { "window", FM_CONF_DURATION, "5s", 1e9, 3600e9, NULL, "report window" },
 *       { "store", FM_CONF_ENUM, "sqlite", 0, 0, (const char *[]){ "sqlite", NULL },
 * ... }, { .key = NULL },   (designated: clang warns about { NULL })
 *   };
 *
 * Files hold `key = value` lines; `#` starts a comment; values may be double
 * quoted (with \" and \\ escapes). Unknown keys, bad values and duplicate keys
 * are errors naming file:line. Values set with fm_conf_set_locked() (the
 * command line) win over the file.
 *
 * Numeric types with min == max == 0 are unbounded. Lines are capped at 4096
 * bytes and texts at 1 MiB (EFBIG). A repeated key is an error within one
 * load; a later load overrides an earlier one. Values must not contain control
 * characters other than tab. errno: EINVAL malformed, ERANGE out of range.
 */
typedef enum {
    FM_CONF_INT,      /* int64_t, range [min, max] */
    FM_CONF_DOUBLE,   /* double, range [min, max], finite only */
    FM_CONF_BOOL,     /* yes/no, true/false, on/off, 1/0 */
    FM_CONF_STRING,   /* any string; max = maximum length when non-zero */
    FM_CONF_ENUM,     /* one of choices[]; stored as its index */
    FM_CONF_DURATION, /* fm_duration_parse(); int64 ns, range [min, max] */
    FM_CONF_SIZE,     /* "64k", "10M", "1G", "1T" (powers of 1024); int64 bytes */
} fm_conf_type_t;

typedef struct {
    const char *key;
    fm_conf_type_t type;
    const char *def; /* default, parsed like a file value; NULL = unset */
    double min;
    double max;
    const char *const *choices; /* FM_CONF_ENUM only, NULL-terminated */
    const char *help;
} fm_conf_item_t;

typedef struct fm_conf fm_conf_t;

/* Create a config holding every default. A bad default is our bug: NULL/EINVAL
 * with the key in err. The table must outlive the config.
 */
fm_conf_t *fm_conf_create (const fm_conf_item_t *table, fm_error_t *err);
void fm_conf_destroy (fm_conf_t *conf);

/* Parse a file. On any error nothing in conf changes (-1, errno, "path:line: ..."
 * in err). A path that is not a regular file is refused (EINVAL).
 */
int fm_conf_load_file (fm_conf_t *conf, const char *path, fm_error_t *err);

/* Parse text as if it were a file named `name`. Same rules as fm_conf_load_file(). */
int fm_conf_load_string (fm_conf_t *conf,
                         const char *name,
                         const char *text,
                         fm_error_t *err);

/* Set one value; _locked values are not overridden by later file loads, nor by
 * fm_conf_set() (which then returns 0 and changes nothing); a later
 * fm_conf_set_locked() does override. Errors read "key: message".
 */
int fm_conf_set (fm_conf_t *conf, const char *key, const char *value, fm_error_t *err);
int fm_conf_set_locked (fm_conf_t *conf,
                        const char *key,
                        const char *value,
                        fm_error_t *err);

/* Getters. Asking for a key that is not in the table, or with the wrong type,
 * is our bug and asserts.
 */
int64_t fm_conf_int (const fm_conf_t *conf, const char *key);
double fm_conf_double (const fm_conf_t *conf, const char *key);
bool fm_conf_bool (const fm_conf_t *conf, const char *key);
const char *fm_conf_string (const fm_conf_t *conf, const char *key); /* NULL if unset */
int fm_conf_enum (const fm_conf_t *conf, const char *key);
/* The choice itself ("auto"); NULL only for a key that is not an enum. */
const char *fm_conf_enum_name (const fm_conf_t *conf, const char *key);
int64_t fm_conf_duration (const fm_conf_t *conf, const char *key);
int64_t fm_conf_size (const fm_conf_t *conf, const char *key);

/* Write every key with its current value as a valid config file (for
 * --show-config): help as a comment, strings quoted, an unset key as "#key =".
 * Loading the dump restores the same values. 0, or -1/errno.
 */
int fm_conf_dump (const fm_conf_t *conf, FILE *fp);

#endif /* FM_CONF_H */
