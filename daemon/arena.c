/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
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

/* Each thread has its own arena, enabled by fm_arena_install() or its first
 * fm_arena_reset(); other threads (the fabric loop) get plain malloc'd
 * memory. A header before every block says which, so that jansson's free
 * releases malloc'd blocks and leaves arena blocks to the reset.
 */
static __thread struct chunk *head;
static __thread size_t used_total;

enum { FROM_ARENA = 0x41524e41, FROM_MALLOC = 0x4d4c4f43 };

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

/* A thread that used the arena ends (the HTTP server's): its chunks go. */
static void thread_exit (void *arg)
{
    (void)arg;
    while (head) {
        struct chunk *c = head;
        head = c->next;
        free (c);
    }
}

static void exit_key_create (void)
{
    pthread_key_create (&exit_key, thread_exit);
}

#define HDR ALIGN

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

static int arena_start (void)
{
    pthread_once (&exit_once, exit_key_create);
    if (!(head = chunk_new (CHUNK))) {
        return -1;
    }
    used_total = 0;
    pthread_setspecific (exit_key, head);
    return 0;
}

static void *arena_malloc (size_t n)
{
    size_t need = (n + HDR + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    struct chunk *c;
    char *p;

    if (need < n) {
        return NULL;
    }
    if (!head) {
        if (!(p = malloc (n + HDR))) {
            return NULL;
        }
        *(uint32_t *)p = FROM_MALLOC;
        return p + HDR;
    }
    if (head->size - head->used < need) {
        if (!(c = chunk_new (need))) {
            return NULL;
        }
        c->next = head;
        head = c;
    }
    p = (char *)head->data + head->used;
    head->used += need;
    used_total += need;
    *(uint32_t *)p = FROM_ARENA;
    return p + HDR;
}

static void arena_free (void *p)
{
    char *h = p ? (char *)p - HDR : NULL;

    /* arena blocks all go at fm_arena_reset() */
    if (h && *(uint32_t *)h == FROM_MALLOC) {
        free (h);
    }
}

int fm_arena_install (void)
{
    if (!head && arena_start () < 0) {
        errno = ENOMEM;
        return -1;
    }
    json_set_alloc_funcs (arena_malloc, arena_free);
    return 0;
}

void fm_arena_reset (void)
{
    struct chunk *keep = NULL;

    if (!head) {
        arena_start (); /* this thread uses the arena from now on */
        return;
    }

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

char *fm_arena_json_dump (const json_t *o)
{
    size_t n = json_dumpb (o, NULL, 0, JSON_COMPACT);
    char *s;

    if (n == 0 || !(s = malloc (n + 1))) {
        errno = ENOMEM;
        return NULL;
    }
    if (json_dumpb (o, s, n, JSON_COMPACT) != n) {
        free (s);
        errno = ENOMEM;
        return NULL;
    }
    s[n] = '\0';
    return s;
}
