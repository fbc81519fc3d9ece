/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "arena.h"

#define CHUNK (1024 * 1024)
#define ALIGN 16

struct chunk {
    struct chunk *next;
    size_t size, used;
    max_align_t data[];
};

static struct chunk *head;
static size_t used_total;

static struct chunk *chunk_new (size_t need)
{
    size_t size = need > CHUNK ? need : CHUNK;
    struct chunk *c = malloc (sizeof (*c) + size);

    if (c) {
        c->next = NULL;
        c->size = size;
        c->used = 0;
    }
    return c;
}

static void *arena_malloc (size_t n)
{
    size_t need = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    struct chunk *c;
    void *p;

    if (need < n) {
        return NULL;
    }
    if (!head || head->size - head->used < need) {
        if (!(c = chunk_new (need))) {
            return NULL;
        }
        c->next = head;
        head = c;
    }
    p = (char *)head->data + head->used;
    head->used += need;
    used_total += need;
    return p;
}

static void arena_free (void *p)
{
    /* Everything goes at fm_arena_reset(). */
}

int fm_arena_install (void)
{
    if (!head && !(head = chunk_new (CHUNK))) {
        errno = ENOMEM;
        return -1;
    }
    json_set_alloc_funcs (arena_malloc, arena_free);
    return 0;
}

void fm_arena_reset (void)
{
    struct chunk *keep = NULL;

    /* Keep one default-sized chunk; give back the rest (large requests). */
    while (head) {
        struct chunk *c = head;
        head = c->next;
        if (!keep && c->size == CHUNK) {
            keep = c;
        } else {
            free (c);
        }
    }
    if (keep) {
        keep->next = NULL;
        keep->used = 0;
    }
    head = keep;
    used_total = 0;
}

size_t fm_arena_used (void)
{
    return used_total;
}
