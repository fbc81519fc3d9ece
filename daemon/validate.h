/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_VALIDATE_H
#define FM_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* Strict validation of request bodies (doc/api.md). Validators name the
 * offending field as a JSON path ("windows[3].links[0].sent").
 */
typedef struct {
    char field[256];
    char message[512];
    bool too_large; /* a count cap was exceeded: 413 rather than 400 */
    bool syntax;    /* not JSON at all (invalid_json); field is empty */
} fm_invalid_t;

/* Where in the body a validator is: errors are written to inv. */
typedef struct fm_validate_ctx {
    const char *path; /* JSON path of the object being checked, "" at the top */
    fm_invalid_t *inv;
    /* When path is NULL the path is parent's + "." + seg (+ "[idx]" when idx >= 0),
     * rendered only for an error: the streaming parser names every entry.
     */
    const struct fm_validate_ctx *parent;
    const char *seg;
    long idx;
} fm_validate_ctx_t;

/* The JSON path of c ("windows[3].links[0]") into buf. */
void fm_validate_path (const fm_validate_ctx_t *c, char *buf, size_t size);

/* Each check returns 0 when the field is valid (the getters: 1 when found, 0
 * when absent and optional), or -1/EINVAL with the field and reason in c->inv.
 */
int fm_validate_fail (fm_validate_ctx_t *c, const char *key, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));
/* A count cap exceeded: inv->too_large (413). */
int fm_validate_too_large (fm_validate_ctx_t *c, const char *key, size_t max);
/* o is an object whose keys are all in allowed (NULL-terminated). */
int fm_validate_object (fm_validate_ctx_t *c, json_t *o, const char *const allowed[]);
int fm_validate_int (fm_validate_ctx_t *c,
                     json_t *o,
                     const char *key,
                     bool required,
                     int64_t min,
                     int64_t max,
                     int64_t *out);
int fm_validate_num (fm_validate_ctx_t *c,
                     json_t *o,
                     const char *key,
                     bool required,
                     double min,
                     double max);
int fm_validate_bool (fm_validate_ctx_t *c, json_t *o, const char *key, bool required);
int fm_validate_str (fm_validate_ctx_t *c,
                     json_t *o,
                     const char *key,
                     bool required,
                     size_t minlen,
                     size_t maxlen,
                     const char **out);
/* A string among choices (NULL-terminated); its position in *index. */
int fm_validate_enum (fm_validate_ctx_t *c,
                      json_t *o,
                      const char *key,
                      const char *const choices[],
                      int *index);
/* A required node name (fm_validate_node_name). */
int fm_validate_node (fm_validate_ctx_t *c,
                      json_t *o,
                      const char *key,
                      const char **out);
/* A required object of names to integers within [min, max], or with min > max
 * to strings.
 */
int fm_validate_map (
    fm_validate_ctx_t *c, json_t *o, const char *key, int64_t min, int64_t max);
/* "mlx5_1:1,mlx5_3:1". */
int fm_validate_hca_list (fm_validate_ctx_t *c, json_t *o, const char *key);

/* Shared field checks, also used for path parameters. */
bool fm_validate_node_name (const char *s);
bool fm_validate_ip_literal (const char *s);

#endif /* FM_VALIDATE_H */
