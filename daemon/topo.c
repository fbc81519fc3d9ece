/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hostlist.h"
#include "topo.h"

/* Open-addressing map from a string (owned elsewhere) to an index. */
typedef struct {
    const char **keys;
    int *vals;
    size_t cap; /* power of two, 0 when empty */
    size_t n;
} strmap_t;

static uint64_t hash_str (const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ULL;
    }
    return h;
}

static int strmap_get (const strmap_t *m, const char *key)
{
    if (m->cap == 0) {
        return -1;
    }
    for (size_t i = hash_str (key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) {
            return -1;
        }
        if (strcmp (m->keys[i], key) == 0) {
            return m->vals[i];
        }
    }
}

static int strmap_put (strmap_t *m, const char *key, int val)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        const char **keys = calloc (cap, sizeof (*keys));
        int *vals = calloc (cap, sizeof (*vals));
        if (!keys || !vals) {
            free (keys);
            free (vals);
            errno = ENOMEM;
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (m->keys[i]) {
                size_t j = hash_str (m->keys[i]) & (cap - 1);
                while (keys[j]) {
                    j = (j + 1) & (cap - 1);
                }
                keys[j] = m->keys[i];
                vals[j] = m->vals[i];
            }
        }
        free (m->keys);
        free (m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t i = hash_str (key) & (m->cap - 1);
    while (m->keys[i]) {
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return 0;
}

static void strmap_free (strmap_t *m)
{
    free (m->keys);
    free (m->vals);
}

typedef struct {
    char **names;
    size_t n, cap;
    strmap_t map;
} namelist_t;

static void namelist_free (namelist_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free (l->names[i]);
    }
    free (l->names);
    strmap_free (&l->map);
}

/* Append a copy of name; returns its index. */
static int namelist_add (namelist_t *l, const char *name)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **names = realloc (l->names, cap * sizeof (*names));
        if (!names) {
            return -1;
        }
        l->names = names;
        l->cap = cap;
    }
    char *copy = strdup (name);
    if (!copy) {
        return -1;
    }
    if (strmap_put (&l->map, copy, (int)l->n) < 0) {
        free (copy);
        return -1;
    }
    l->names[l->n] = copy;
    return (int)l->n++;
}

struct fm_topo {
    namelist_t nodes;
    int *node_leaf;
    size_t node_leaf_cap;
    namelist_t leaves;
    int **leaf_nodes;
    size_t *leaf_nnodes;
    namelist_t spines;
    size_t nuplinks;
    int *up_leaf, *up_spine;
    /* (leaf, spine) -> uplink, open addressing over leaf * nspines + spine */
    int64_t *up_keys;
    int *up_vals;
    size_t up_cap;
    /* leaf * nspines + spine -> uplink, when small enough to be dense */
    int *up_dense;
};

fm_topo_t *fm_topo_create_flat (void)
{
    fm_topo_t *t = calloc (1, sizeof (*t));

    if (!t) {
        errno = ENOMEM;
    }
    return t;
}

void fm_topo_destroy (fm_topo_t *t)
{
    if (t) {
        int saved = errno;
        namelist_free (&t->nodes);
        free (t->node_leaf);
        for (size_t i = 0; i < t->leaves.n; i++) {
            free (t->leaf_nodes[i]);
        }
        free (t->leaf_nodes);
        free (t->leaf_nnodes);
        namelist_free (&t->leaves);
        namelist_free (&t->spines);
        free (t->up_leaf);
        free (t->up_spine);
        free (t->up_keys);
        free (t->up_vals);
        free (t->up_dense);
        free (t);
        errno = saved;
    }
}

static bool name_valid (const char *s)
{
    size_t len = strlen (s);

    if (len == 0 || len > FM_TOPO_NAME_MAX) {
        return false;
    }
    for (const char *p = s; *p; p++) {
        if (!isalnum ((unsigned char)*p) && !strchr ("-_.", *p)) {
            return false;
        }
    }
    return true;
}

static int add_node_leaf (fm_topo_t *t, const char *name, int leaf)
{
    int id = strmap_get (&t->nodes.map, name);

    if (id >= 0) {
        return id;
    }
    if (!name_valid (name)) {
        errno = EINVAL;
        return -1;
    }
    if (t->nodes.n >= FM_TOPO_MAX_NODES) {
        errno = ENOSPC;
        return -1;
    }
    if (t->nodes.n == t->node_leaf_cap) {
        size_t cap = t->node_leaf_cap ? t->node_leaf_cap * 2 : 64;
        int *nl = realloc (t->node_leaf, cap * sizeof (*nl));
        if (!nl) {
            errno = ENOMEM;
            return -1;
        }
        t->node_leaf = nl;
        t->node_leaf_cap = cap;
    }
    id = namelist_add (&t->nodes, name);
    if (id < 0) {
        errno = ENOMEM;
        return -1;
    }
    t->node_leaf[id] = leaf;
    return id;
}

int fm_topo_add_node (fm_topo_t *t, const char *name)
{
    if (!t || !name) {
        errno = EINVAL;
        return -1;
    }
    return add_node_leaf (t, name, -1);
}

/* One parsed SwitchName line. */
typedef struct {
    char *name;
    char *nodes;    /* hostlist or NULL */
    char *switches; /* hostlist or NULL */
    int level;      /* -1 when absent */
    int line;
    int leaf, spine; /* indices once classified, else -1 */
    int *children;   /* switch record indices */
    size_t nchildren;
    int depth; /* computed level */
    int mark;  /* DFS: 0 new, 1 active, 2 done */
} swrec_t;

typedef struct {
    swrec_t *v;
    size_t n, cap;
} swrecs_t;

static void swrecs_free (swrecs_t *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free (r->v[i].name);
        free (r->v[i].nodes);
        free (r->v[i].switches);
        free (r->v[i].children);
    }
    free (r->v);
}

static int
set_field (char **field, const char *val, int line, const char *key, fm_error_t *err)
{
    if (*field) {
        errno = EINVAL;
        return fm_errprintf (err, "line %d: duplicate %s", line, key);
    }
    if (!(*field = strdup (val))) {
        errno = ENOMEM;
        return fm_errprintf (err, "out of memory");
    }
    return 0;
}

/* Parse one logical line (comments and continuations already removed). */
static int parse_line (char *line, int lineno, swrecs_t *recs, fm_error_t *err)
{
    swrec_t rec = {.level = -1, .line = lineno, .leaf = -1, .spine = -1};
    char *save = NULL;
    bool any = false;

    for (char *tok = strtok_r (line, " \t\r", &save); tok;
         tok = strtok_r (NULL, " \t\r", &save)) {
        char *eq = strchr (tok, '=');
        any = true;
        if (!eq || eq == tok || eq[1] == '\0') {
            errno = EINVAL;
            fm_errprintf (err, "line %d: expected key=value, got '%.40s'", lineno, tok);
            goto fail;
        }
        *eq = '\0';
        const char *val = eq + 1;
        if (strcasecmp (tok, "SwitchName") == 0) {
            if (set_field (&rec.name, val, lineno, "SwitchName", err) < 0) {
                goto fail;
            }
            if (!name_valid (val)) {
                errno = EINVAL;
                fm_errprintf (err, "line %d: bad switch name '%.40s'", lineno, val);
                goto fail;
            }
        } else if (strcasecmp (tok, "Nodes") == 0) {
            if (set_field (&rec.nodes, val, lineno, "Nodes", err) < 0) {
                goto fail;
            }
        } else if (strcasecmp (tok, "Switches") == 0) {
            if (set_field (&rec.switches, val, lineno, "Switches", err) < 0) {
                goto fail;
            }
        } else if (strcasecmp (tok, "Level") == 0) {
            char *end;
            long lv = strtol (val, &end, 10);
            if (*end || lv < 0 || lv > 64 || rec.level >= 0) {
                errno = EINVAL;
                fm_errprintf (err, "line %d: bad Level '%.20s'", lineno, val);
                goto fail;
            }
            rec.level = (int)lv;
        } else if (strcasecmp (tok, "LinkSpeed") == 0) {
            /* bandwidth hint for Slurm's scheduler; not needed here */
        } else {
            errno = EINVAL;
            fm_errprintf (err, "line %d: unknown key '%.40s'", lineno, tok);
            goto fail;
        }
    }
    if (!any) {
        return 0;
    }
    if (!rec.name) {
        errno = EINVAL;
        fm_errprintf (err, "line %d: missing SwitchName", lineno);
        goto fail;
    }
    if (!rec.nodes && !rec.switches) {
        errno = EINVAL;
        fm_errprintf (
            err, "line %d: switch %s has neither Nodes nor Switches", lineno, rec.name);
        goto fail;
    }
    if (recs->n >= FM_TOPO_MAX_SWITCHES) {
        errno = EINVAL;
        fm_errprintf (
            err, "line %d: more than %d switches", lineno, FM_TOPO_MAX_SWITCHES);
        goto fail;
    }
    if (recs->n == recs->cap) {
        size_t cap = recs->cap ? recs->cap * 2 : 16;
        swrec_t *v = realloc (recs->v, cap * sizeof (*v));
        if (!v) {
            errno = ENOMEM;
            fm_errprintf (err, "out of memory");
            goto fail;
        }
        recs->v = v;
        recs->cap = cap;
    }
    recs->v[recs->n++] = rec;
    return 0;
fail:
    free (rec.name);
    free (rec.nodes);
    free (rec.switches);
    return -1;
}

/* Levels from the leaves up; a cycle is an error. */
static int visit (swrecs_t *recs, int i, fm_error_t *err)
{
    swrec_t *r = &recs->v[i];

    if (r->mark == 2) {
        return 0;
    }
    if (r->mark == 1) {
        errno = EINVAL;
        return fm_errprintf (err, "line %d: switch cycle through %s", r->line, r->name);
    }
    r->mark = 1;
    r->depth = 0;
    for (size_t c = 0; c < r->nchildren; c++) {
        if (visit (recs, r->children[c], err) < 0) {
            return -1;
        }
        if (recs->v[r->children[c]].depth + 1 > r->depth) {
            r->depth = recs->v[r->children[c]].depth + 1;
        }
    }
    r->mark = 2;
    return 0;
}

static int uplink_add (fm_topo_t *t, int leaf, int spine)
{
    size_t n = t->nuplinks;
    int *ul = realloc (t->up_leaf, (n + 1) * sizeof (*ul));
    if (!ul) {
        return -1;
    }
    t->up_leaf = ul;
    int *us = realloc (t->up_spine, (n + 1) * sizeof (*us));
    if (!us) {
        return -1;
    }
    t->up_spine = us;
    t->up_leaf[n] = leaf;
    t->up_spine[n] = spine;
    t->nuplinks++;
    return 0;
}

static int64_t up_key (int leaf, int spine)
{
    return ((int64_t)leaf << 32) | (uint32_t)spine;
}

static size_t up_slot (int64_t k, size_t cap)
{
    uint64_t z = (uint64_t)k;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return (size_t)(z ^ (z >> 31)) & (cap - 1);
}

static int uplink_index (fm_topo_t *t)
{
    size_t cap = 16;

    while (cap < t->nuplinks * 2 + 2) {
        cap *= 2;
    }
    t->up_keys = malloc (cap * sizeof (*t->up_keys));
    t->up_vals = malloc (cap * sizeof (*t->up_vals));
    if (!t->up_keys || !t->up_vals) {
        return -1;
    }
    for (size_t i = 0; i < cap; i++) {
        t->up_keys[i] = -1;
    }
    t->up_cap = cap;
    for (size_t u = 0; u < t->nuplinks; u++) {
        int64_t k = up_key (t->up_leaf[u], t->up_spine[u]);
        size_t i = up_slot (k, cap);
        while (t->up_keys[i] >= 0) {
            i = (i + 1) & (cap - 1);
        }
        t->up_keys[i] = k;
        t->up_vals[i] = (int)u;
    }
    /* localization looks uplinks up for every flow of every window */
    size_t cells = t->leaves.n * t->spines.n;
    if (cells > 0 && cells <= (1u << 22)) {
        if (!(t->up_dense = malloc (cells * sizeof (int)))) {
            return -1;
        }
        for (size_t c = 0; c < cells; c++) {
            t->up_dense[c] = -1;
        }
        for (size_t u = 0; u < t->nuplinks; u++) {
            t->up_dense[(size_t)t->up_leaf[u] * t->spines.n + (size_t)t->up_spine[u]] =
                (int)u;
        }
    }
    return 0;
}

/* Build the topology from parsed records. */
static int oom (fm_error_t *err)
{
    errno = ENOMEM;
    return fm_errprintf (err, "out of memory");
}

/* Switch name -> record, each name once. */
static int switches_index (swrecs_t *recs, strmap_t *sw, fm_error_t *err)
{
    for (size_t i = 0; i < recs->n; i++) {
        if (strmap_get (sw, recs->v[i].name) >= 0) {
            errno = EINVAL;
            fm_errprintf (
                err, "line %d: duplicate switch %s", recs->v[i].line, recs->v[i].name);
            return -1;
        }
        if (strmap_put (sw, recs->v[i].name, (int)i) < 0) {
            return oom (err);
        }
    }
    return 0;
}

/* Switches= into record indexes. */
static int children_resolve (swrecs_t *recs, strmap_t *sw, fm_error_t *err)
{
    for (size_t i = 0; i < recs->n; i++) {
        swrec_t *r = &recs->v[i];
        if (!r->switches) {
            continue;
        }
        fm_error_t herr;
        fm_hostlist_t *hl =
            fm_hostlist_expand (r->switches, FM_TOPO_MAX_SWITCHES, &herr);
        if (!hl) {
            errno = EINVAL;
            fm_errprintf (err, "line %d: Switches: %s", r->line, herr.text);
            return -1;
        }
        r->nchildren = fm_hostlist_count (hl);
        r->children = calloc (r->nchildren ? r->nchildren : 1, sizeof (int));
        if (!r->children) {
            fm_hostlist_destroy (hl);
            return oom (err);
        }
        for (size_t c = 0; c < r->nchildren; c++) {
            int ci = strmap_get (sw, fm_hostlist_nth (hl, c));
            if (ci < 0) {
                errno = EINVAL;
                fm_errprintf (err,
                              "line %d: switch %s lists undefined switch %.63s",
                              r->line,
                              r->name,
                              fm_hostlist_nth (hl, c));
                fm_hostlist_destroy (hl);
                return -1;
            }
            r->children[c] = ci;
        }
        fm_hostlist_destroy (hl);
    }
    return 0;
}

/* Each switch's depth above the leaves, checked against its Level=; the
 * leaves named.
 */
static int levels_check (fm_topo_t *t, swrecs_t *recs, fm_error_t *err)
{
    for (size_t i = 0; i < recs->n; i++) {
        if (visit (recs, (int)i, err) < 0) {
            return -1;
        }
    }
    for (size_t i = 0; i < recs->n; i++) {
        swrec_t *r = &recs->v[i];
        if (r->level >= 0 && r->level != r->depth) {
            errno = EINVAL;
            fm_errprintf (err,
                          "line %d: switch %s has Level=%d but is at level %d",
                          r->line,
                          r->name,
                          r->level,
                          r->depth);
            return -1;
        }
        if (r->depth == 0) {
            r->leaf = namelist_add (&t->leaves, r->name);
            if (r->leaf < 0) {
                return oom (err);
            }
        }
    }
    return 0;
}

/* The nodes under each leaf, each under one leaf only. */
static int leaves_fill (fm_topo_t *t, swrecs_t *recs, fm_error_t *err)
{
    t->leaf_nodes = calloc (t->leaves.n + 1, sizeof (*t->leaf_nodes));
    t->leaf_nnodes = calloc (t->leaves.n + 1, sizeof (*t->leaf_nnodes));
    if (!t->leaf_nodes || !t->leaf_nnodes) {
        return oom (err);
    }
    for (size_t i = 0; i < recs->n; i++) {
        swrec_t *r = &recs->v[i];
        if (r->leaf < 0) {
            continue;
        }
        fm_error_t herr;
        fm_hostlist_t *hl = fm_hostlist_expand (r->nodes, FM_TOPO_MAX_NODES, &herr);
        if (!hl) {
            errno = EINVAL;
            fm_errprintf (err, "line %d: Nodes: %s", r->line, herr.text);
            return -1;
        }
        size_t n = fm_hostlist_count (hl);
        t->leaf_nodes[r->leaf] = calloc (n ? n : 1, sizeof (int));
        if (!t->leaf_nodes[r->leaf]) {
            fm_hostlist_destroy (hl);
            return oom (err);
        }
        for (size_t k = 0; k < n; k++) {
            const char *name = fm_hostlist_nth (hl, k);
            if (fm_topo_node_find (t, name) >= 0) {
                errno = EINVAL;
                fm_errprintf (err,
                              "line %d: node %s is already under another switch",
                              r->line,
                              name);
                fm_hostlist_destroy (hl);
                return -1;
            }
            int id = add_node_leaf (t, name, r->leaf);
            if (id < 0) {
                int e = errno;
                fm_errprintf (err,
                              "line %d: node '%.63s': %s",
                              r->line,
                              name,
                              e == EINVAL ? "bad name" : strerror (e));
                fm_hostlist_destroy (hl);
                errno = e;
                return -1;
            }
            t->leaf_nodes[r->leaf][t->leaf_nnodes[r->leaf]++] = id;
        }
        fm_hostlist_destroy (hl);
    }
    return 0;
}

/* Upper switches: their nodes must be under some leaf; a switch above a leaf
 * is a spine and the pair an uplink.
 */
static int uplinks_link (fm_topo_t *t, swrecs_t *recs, fm_error_t *err)
{
    for (size_t i = 0; i < recs->n; i++) {
        swrec_t *r = &recs->v[i];
        if (r->leaf >= 0) {
            continue;
        }
        if (r->nodes) {
            /* scontrol prints an upper switch's descendants: they must exist */
            fm_error_t herr;
            fm_hostlist_t *hl = fm_hostlist_expand (r->nodes, FM_TOPO_MAX_NODES, &herr);
            if (!hl) {
                errno = EINVAL;
                fm_errprintf (err, "line %d: Nodes: %s", r->line, herr.text);
                return -1;
            }
            for (size_t k = 0; k < fm_hostlist_count (hl); k++) {
                if (fm_topo_node_find (t, fm_hostlist_nth (hl, k)) < 0) {
                    errno = EINVAL;
                    fm_errprintf (err,
                                  "line %d: node %.63s of upper switch %s is under "
                                  "no leaf",
                                  r->line,
                                  fm_hostlist_nth (hl, k),
                                  r->name);
                    fm_hostlist_destroy (hl);
                    return -1;
                }
            }
            fm_hostlist_destroy (hl);
        }
        for (size_t c = 0; c < r->nchildren; c++) {
            swrec_t *child = &recs->v[r->children[c]];
            if (child->leaf < 0) {
                continue;
            }
            if (r->spine < 0) {
                r->spine = namelist_add (&t->spines, r->name);
                if (r->spine < 0) {
                    return oom (err);
                }
            }
            /* a leaf listed twice by the same parent is one uplink */
            bool dup = false;
            for (size_t d = 0; d < c; d++) {
                if (r->children[d] == r->children[c]) {
                    dup = true;
                }
            }
            if (!dup && uplink_add (t, child->leaf, r->spine) < 0) {
                return oom (err);
            }
        }
    }
    if (uplink_index (t) < 0) {
        return oom (err);
    }
    return 0;
}

static int build (fm_topo_t *t, swrecs_t *recs, fm_error_t *err)
{
    strmap_t sw = {0};
    int rc = -1;

    if (switches_index (recs, &sw, err) == 0 && children_resolve (recs, &sw, err) == 0
        && levels_check (t, recs, err) == 0 && leaves_fill (t, recs, err) == 0
        && uplinks_link (t, recs, err) == 0) {
        rc = 0;
    }
    strmap_free (&sw);
    return rc;
}

fm_topo_t *fm_topo_parse (const char *text, fm_error_t *err)
{
    swrecs_t recs = {0};
    fm_topo_t *t = NULL;
    char *line = NULL;
    size_t len = 0;
    int lineno = 0, startline = 1;

    if (!text) {
        errno = EINVAL;
        fm_errprintf (err, "no topology text");
        return NULL;
    }
    if (strlen (text) > FM_TOPO_TEXT_MAX) {
        errno = EFBIG;
        fm_errprintf (err, "topology text over %d bytes", FM_TOPO_TEXT_MAX);
        return NULL;
    }
    if (!(line = malloc (FM_TOPO_LINE_MAX + 1))) {
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    const char *p = text;
    while (*p) {
        const char *nl = strchr (p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen (p);
        const char *hash = memchr (p, '#', n);
        size_t keep = hash ? (size_t)(hash - p) : n;
        bool cont;

        lineno++;
        if (len == 0) {
            startline = lineno;
        }
        while (keep > 0
               && (p[keep - 1] == ' ' || p[keep - 1] == '\t' || p[keep - 1] == '\r')) {
            keep--;
        }
        cont = !hash && keep > 0 && p[keep - 1] == '\\';
        if (cont) {
            keep--;
        }
        if (len + keep + 1 > FM_TOPO_LINE_MAX) {
            errno = EFBIG;
            fm_errprintf (
                err, "line %d: longer than %d bytes", lineno, FM_TOPO_LINE_MAX);
            goto fail;
        }
        for (size_t i = 0; i < keep; i++) {
            if (iscntrl ((unsigned char)p[i]) && p[i] != '\t' && p[i] != '\r') {
                errno = EINVAL;
                fm_errprintf (err, "line %d: control character", lineno);
                goto fail;
            }
        }
        memcpy (line + len, p, keep);
        len += keep;
        if (cont) {
            line[len++] = ' ';
        } else {
            line[len] = '\0';
            if (parse_line (line, startline, &recs, err) < 0) {
                goto fail;
            }
            len = 0;
        }
        p = nl ? nl + 1 : p + n;
    }
    if (len > 0) {
        line[len] = '\0';
        if (parse_line (line, startline, &recs, err) < 0) {
            goto fail;
        }
    }
    if (!(t = fm_topo_create_flat ())) {
        fm_errprintf (err, "out of memory");
        goto fail;
    }
    if (build (t, &recs, err) < 0) {
        goto fail;
    }
    free (line);
    swrecs_free (&recs);
    return t;
fail:
    free (line);
    swrecs_free (&recs);
    fm_topo_destroy (t);
    return NULL;
}

size_t fm_topo_nnodes (const fm_topo_t *t)
{
    return t ? t->nodes.n : 0;
}

size_t fm_topo_nleaves (const fm_topo_t *t)
{
    return t ? t->leaves.n : 0;
}

size_t fm_topo_nspines (const fm_topo_t *t)
{
    return t ? t->spines.n : 0;
}

size_t fm_topo_nuplinks (const fm_topo_t *t)
{
    return t ? t->nuplinks : 0;
}

const char *fm_topo_node_name (const fm_topo_t *t, int node)
{
    if (!t || node < 0 || (size_t)node >= t->nodes.n) {
        return NULL;
    }
    return t->nodes.names[node];
}

int fm_topo_node_find (const fm_topo_t *t, const char *name)
{
    return t && name ? strmap_get (&t->nodes.map, name) : -1;
}

int fm_topo_node_leaf (const fm_topo_t *t, int node)
{
    if (!t || node < 0 || (size_t)node >= t->nodes.n) {
        return -1;
    }
    return t->node_leaf[node];
}

const char *fm_topo_leaf_name (const fm_topo_t *t, int leaf)
{
    if (!t || leaf < 0 || (size_t)leaf >= t->leaves.n) {
        return NULL;
    }
    return t->leaves.names[leaf];
}

int fm_topo_leaf_find (const fm_topo_t *t, const char *name)
{
    return t && name ? strmap_get (&t->leaves.map, name) : -1;
}

const int *fm_topo_leaf_nodes (const fm_topo_t *t, int leaf, size_t *n)
{
    if (!t || leaf < 0 || (size_t)leaf >= t->leaves.n) {
        if (n) {
            *n = 0;
        }
        return NULL;
    }
    if (n) {
        *n = t->leaf_nnodes[leaf];
    }
    return t->leaf_nodes[leaf];
}

const char *fm_topo_spine_name (const fm_topo_t *t, int spine)
{
    if (!t || spine < 0 || (size_t)spine >= t->spines.n) {
        return NULL;
    }
    return t->spines.names[spine];
}

int fm_topo_spine_find (const fm_topo_t *t, const char *name)
{
    return t && name ? strmap_get (&t->spines.map, name) : -1;
}

int fm_topo_uplink_find (const fm_topo_t *t, int leaf, int spine)
{
    if (!t || t->up_cap == 0 || leaf < 0 || spine < 0) {
        return -1;
    }
    if (t->up_dense) {
        if ((size_t)leaf >= t->leaves.n || (size_t)spine >= t->spines.n) {
            return -1;
        }
        return t->up_dense[(size_t)leaf * t->spines.n + (size_t)spine];
    }
    int64_t k = up_key (leaf, spine);
    size_t i = up_slot (k, t->up_cap);
    while (t->up_keys[i] >= 0) {
        if (t->up_keys[i] == k) {
            return t->up_vals[i];
        }
        i = (i + 1) & (t->up_cap - 1);
    }
    return -1;
}

int fm_topo_uplink_leaf (const fm_topo_t *t, int uplink)
{
    if (!t || uplink < 0 || (size_t)uplink >= t->nuplinks) {
        return -1;
    }
    return t->up_leaf[uplink];
}

int fm_topo_uplink_spine (const fm_topo_t *t, int uplink)
{
    if (!t || uplink < 0 || (size_t)uplink >= t->nuplinks) {
        return -1;
    }
    return t->up_spine[uplink];
}
