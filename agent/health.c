/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fm/api.h"
#include "health.h"
#include "log.h"

const fm_health_collector_t *const fm_health_collectors[] = {
    &fm_health_net,
    &fm_health_ib,
    &fm_health_nvml,
    &fm_health_amdsmi,
    &fm_health_topo,
    NULL,
};

/* Records and sets */

void fm_health_set_init (fm_health_set_t *set)
{
    set->rec = NULL;
    set->n = set->cap = 0;
}

void fm_health_set_clear (fm_health_set_t *set)
{
    set->n = 0;
}

void fm_health_set_free (fm_health_set_t *set)
{
    if (set) {
        free (set->rec);
        fm_health_set_init (set);
    }
}

int fm_health_set_add (fm_health_set_t *set, const fm_health_record_t *rec)
{
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 64;
        fm_health_record_t *r = realloc (set->rec, cap * sizeof (*r));

        if (!r) {
            errno = ENOMEM;
            return -1;
        }
        set->rec = r;
        set->cap = cap;
    }
    set->rec[set->n++] = *rec;
    return 0;
}

static void copy (char *dst, const char *src)
{
    snprintf (dst, FM_HEALTH_NAME_MAX, "%s", src ? src : "");
}

static int add (fm_health_set_t *set,
                fm_hrec_kind_t kind,
                fm_hval_t vtype,
                const char *device,
                int port,
                const char *name,
                int64_t delta,
                int64_t value,
                const char *text,
                fm_hclass_t cls)
{
    fm_health_record_t r = {.kind = kind,
                            .vtype = vtype,
                            .cls = cls,
                            .port = port,
                            .delta = delta,
                            .value = value};

    copy (r.device, device);
    copy (r.name, name);
    copy (r.text, text);
    return fm_health_set_add (set, &r);
}

int fm_health_add_counter (fm_health_set_t *set,
                           fm_hrec_kind_t kind,
                           const char *device,
                           int port,
                           const char *name,
                           int64_t delta,
                           int64_t value,
                           fm_hclass_t cls)
{
    return add (
        set, kind, FM_HVAL_COUNTER, device, port, name, delta, value, NULL, cls);
}

int fm_health_add_gauge (fm_health_set_t *set,
                         fm_hrec_kind_t kind,
                         const char *device,
                         int port,
                         const char *name,
                         int64_t value,
                         fm_hclass_t cls)
{
    return add (set, kind, FM_HVAL_GAUGE, device, port, name, 0, value, NULL, cls);
}

int fm_health_add_text (fm_health_set_t *set,
                        fm_hrec_kind_t kind,
                        const char *device,
                        int port,
                        const char *name,
                        const char *text,
                        fm_hclass_t cls)
{
    return add (set, kind, FM_HVAL_TEXT, device, port, name, 0, 0, text, cls);
}

const char *fm_health_class_name (fm_hclass_t cls)
{
    switch (cls) {
    case FM_HCLASS_INFO:
        return "info";
    case FM_HCLASS_APP:
        return "application";
    case FM_HCLASS_WARN:
        return "warning";
    case FM_HCLASS_FAULT:
        return "fault";
    case FM_HCLASS_RESET:
        return "reset";
    case FM_HCLASS_REBOOT:
        return "reboot";
    }
    return "unknown";
}

/* Memo: an open-addressing hash of string keys. */

typedef struct {
    char *key;
    int64_t value;
    bool has_value;
    bool noted;
} memo_entry_t;

struct fm_health_memo {
    memo_entry_t *e;
    size_t cap; /* power of two */
    size_t n;
};

/* A bound on memory for a node with absurdly many counters. */
#define MEMO_MAX (1u << 17)

fm_health_memo_t *fm_health_memo_create (void)
{
    fm_health_memo_t *m = calloc (1, sizeof (*m));

    if (!m || !(m->e = calloc (256, sizeof (*m->e)))) {
        free (m);
        errno = ENOMEM;
        return NULL;
    }
    m->cap = 256;
    return m;
}

void fm_health_memo_destroy (fm_health_memo_t *m)
{
    int saved = errno;

    if (m) {
        for (size_t i = 0; i < m->cap; i++) {
            free (m->e[i].key);
        }
        free (m->e);
        free (m);
    }
    errno = saved;
}

static size_t hash (const char *s)
{
    size_t h = 14695981039346656037ULL;

    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    }
    return h;
}

static memo_entry_t *memo_find (fm_health_memo_t *m, const char *key)
{
    size_t i = hash (key) & (m->cap - 1);

    while (m->e[i].key && strcmp (m->e[i].key, key) != 0) {
        i = (i + 1) & (m->cap - 1);
    }
    return &m->e[i];
}

static int memo_grow (fm_health_memo_t *m)
{
    fm_health_memo_t bigger = {.cap = m->cap * 2, .n = m->n};

    if (!(bigger.e = calloc (bigger.cap, sizeof (*bigger.e)))) {
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->e[i].key) {
            *memo_find (&bigger, m->e[i].key) = m->e[i];
        }
    }
    free (m->e);
    *m = bigger;
    return 0;
}

/* The entry for key, created when missing. NULL/ENOMEM or ENOSPC. */
static memo_entry_t *memo_get (fm_health_memo_t *m, const char *key)
{
    memo_entry_t *e = memo_find (m, key);

    if (e->key) {
        return e;
    }
    if (m->n >= MEMO_MAX) {
        errno = ENOSPC;
        return NULL;
    }
    if ((m->n + 1) * 10 > m->cap * 7) {
        if (memo_grow (m) < 0) {
            return NULL;
        }
        e = memo_find (m, key);
    }
    if (!(e->key = strdup (key))) {
        errno = ENOMEM;
        return NULL;
    }
    m->n++;
    return e;
}

int fm_health_memo_delta (fm_health_memo_t *m,
                          const char *key,
                          int64_t value,
                          int64_t *delta)
{
    memo_entry_t *e = memo_get (m, key);
    int known;

    if (!e) {
        return -1;
    }
    known = e->has_value;
    if (!known) {
        *delta = 0;
    } else if (value >= e->value) {
        *delta = value - e->value;
    } else {
        *delta = value;
    }
    e->value = value;
    e->has_value = true;
    return known;
}

bool fm_health_memo_note (fm_health_memo_t *m, const char *key)
{
    memo_entry_t *e = memo_get (m, key);

    /* Without memory, logging every time is better than never. */
    if (!e) {
        return true;
    }
    if (e->noted) {
        return false;
    }
    e->noted = true;
    return true;
}

bool fm_health_memo_unnote (fm_health_memo_t *m, const char *key)
{
    memo_entry_t *e = memo_find (m, key);

    if (!e->key || !e->noted) {
        return false;
    }
    e->noted = false;
    return true;
}

/* sysfs helpers */

int fm_health_read_file (const char *path, char *buf, size_t len)
{
    int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    ssize_t n;
    size_t got = 0;
    int saved;

    if (fd < 0) {
        return -1;
    }
    while (got < len && (n = read (fd, buf + got, len - got)) != 0) {
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            saved = errno;
            close (fd);
            errno = saved;
            return -1;
        }
        got += (size_t)n;
    }
    close (fd);
    if (got == len) {
        errno = EFBIG;
        return -1;
    }
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == ' ')) {
        got--;
    }
    buf[got] = '\0';
    return 0;
}

int fm_health_parse_u64 (const char *s, int64_t *out)
{
    char *end;
    unsigned long long v;

    while (*s == ' ' || *s == '\t') {
        s++;
    }
    if (!(*s >= '0' && *s <= '9')) {
        errno = EINVAL;
        return -1;
    }
    errno = 0;
    v = strtoull (s, &end, 0);
    if (errno == ERANGE || v > (unsigned long long)INT64_MAX) {
        errno = ERANGE;
        return -1;
    }
    if (end == s) {
        errno = EINVAL;
        return -1;
    }
    while (*end == ' ' || *end == '\t' || *end == '\n') {
        end++;
    }
    if (*end != '\0') {
        errno = EINVAL;
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

int fm_health_read_counter (fm_health_memo_t *m,
                            const char *what,
                            const char *path,
                            int64_t *out)
{
    char buf[64];

    if (fm_health_read_file (path, buf, sizeof (buf)) < 0
        || fm_health_parse_u64 (buf, out) < 0) {
        if (fm_health_memo_note (m, path)) {
            fm_warn ("health %s: %s: %s",
                     what,
                     path,
                     errno == EINVAL ? "not a counter" : strerror (errno));
        }
        return -1;
    }
    if (fm_health_memo_unnote (m, path)) {
        fm_info ("health %s: %s: readable again", what, path);
    }
    return 0;
}

bool fm_health_name_ok (const char *name, size_t maxlen)
{
    size_t len = strlen (name);

    return len > 0 && len <= maxlen && !strchr (name, '/') && strcmp (name, ".") != 0
           && strcmp (name, "..") != 0;
}

void fm_health_names_free (char **v)
{
    if (v) {
        for (char **p = v; *p; p++) {
            free (*p);
        }
        free (v);
    }
}

char **fm_health_names_copy (const char *const *list, size_t maxlen, fm_error_t *err)
{
    size_t n = 0;
    char **v;

    while (list[n]) {
        if (!fm_health_name_ok (list[n], maxlen)) {
            errno = EINVAL;
            fm_errprintf (err, "invalid device name '%.32s'", list[n]);
            return NULL;
        }
        if (++n > FM_HEALTH_DEVS_MAX) {
            errno = EINVAL;
            fm_errprintf (err, "more than %d devices", FM_HEALTH_DEVS_MAX);
            return NULL;
        }
    }
    if (!(v = calloc (n + 1, sizeof (*v)))) {
        errno = ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(v[i] = strdup (list[i]))) {
            fm_health_names_free (v);
            errno = ENOMEM;
            return NULL;
        }
    }
    return v;
}

void *fm_health_dlopen (const char *lib, const fm_health_sym_t *syms, fm_error_t *err)
{
    void *h = dlopen (lib, RTLD_NOW | RTLD_LOCAL);
    const char *why;

    if (!h) {
        why = dlerror ();
        fm_errprintf (err, "%s", why ? why : lib);
        errno = ENOENT;
        return NULL;
    }
    for (const fm_health_sym_t *s = syms; s->name; s++) {
        *s->fn = dlsym (h, s->name);
        if (*s->fn) {
            continue;
        }
        if (s->required) {
            fm_errprintf (err, "%s: no symbol %s", lib, s->name);
            dlclose (h);
            errno = ENOSYS;
            return NULL;
        }
        fm_debug ("health: %s: no %s", lib, s->name);
    }
    return h;
}

/* The runner */

typedef struct {
    const fm_health_collector_t *c;
    void *state;
    bool failing;
} running_t;

struct fm_health {
    running_t *run;
    size_t n;
};

fm_health_t *fm_health_create (const fm_health_conf_t *conf, fm_error_t *err)
{
    fm_health_t *h = calloc (1, sizeof (*h));
    size_t total = 0;

    while (fm_health_collectors[total]) {
        total++;
    }
    if (!h || !(h->run = calloc (total, sizeof (*h->run)))) {
        free (h);
        errno = ENOMEM;
        fm_errprintf (err, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < total; i++) {
        const fm_health_collector_t *c = fm_health_collectors[i];
        fm_error_t e = {{0}};
        void *state = c->init (conf, &e);

        if (!state) {
            if (errno == ENOMEM) {
                fm_health_destroy (h);
                errno = ENOMEM;
                fm_errprintf (err, "%s: out of memory", c->name);
                return NULL;
            }
            fm_info ("health %s: not collected: %s", c->name, e.text);
            continue;
        }
        h->run[h->n++] = (running_t){.c = c, .state = state};
    }
    return h;
}

int fm_health_sample (fm_health_t *h, fm_health_set_t *out)
{
    int failed = 0;

    for (size_t i = 0; i < h->n; i++) {
        running_t *r = &h->run[i];
        fm_error_t e = {{0}};

        if (r->c->sample (r->state, out, &e) < 0) {
            if (!r->failing) {
                fm_warn ("health %s: sample failed: %s", r->c->name, e.text);
            }
            r->failing = true;
            failed++;
        } else if (r->failing) {
            fm_info ("health %s: sampling again", r->c->name);
            r->failing = false;
        }
    }
    return failed ? -1 : 0;
}

size_t fm_health_active (const fm_health_t *h, const char **names, size_t max)
{
    for (size_t i = 0; i < h->n && i < max; i++) {
        names[i] = h->run[i].c->name;
    }
    return h->n;
}

void fm_health_destroy (fm_health_t *h)
{
    int saved = errno;

    if (h) {
        for (size_t i = 0; i < h->n; i++) {
            h->run[i].c->fini (h->run[i].state);
        }
        free (h->run);
        free (h);
    }
    errno = saved;
}
