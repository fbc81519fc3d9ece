/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_ARENA_H
#define FM_ARENA_H

#include <stddef.h>
#include <jansson.h>

/* A bump allocator for jansson in fabricd's HTTP thread: a report of a
 * thousand link entries is tens of thousands of small JSON values, and malloc
 * and free dominated ingest. Once installed, every jansson allocation of a
 * thread that uses the arena (the one that installed it, and any that called
 * fm_arena_reset()) comes from that thread's arena, and jansson's frees of
 * them are no-ops; other threads get malloc'd memory that jansson frees. So:
 *   - no JSON value made in an arena thread, and no string from json_dumps()
 *     there, may outlive its fm_arena_reset(): copy out with json_dumpb()
 *     into malloc'd memory (or json_deep_copy() in a thread without arena);
 *   - what a thread without arena makes lives until jansson frees it.
 */
int fm_arena_install (void);

/* Release everything allocated since the last reset (keeps one chunk). */
void fm_arena_reset (void);

/* Bytes handed out since the last reset. */
size_t fm_arena_used (void);

/* Compact JSON text of o in malloc'd memory (never jansson's allocator, which
 * may be the request arena). NULL/ENOMEM.
 */
char *fm_arena_json_dump (const json_t *o);

#endif /* FM_ARENA_H */
