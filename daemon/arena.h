/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_ARENA_H
#define FM_ARENA_H

#include <stddef.h>

/* A bump allocator for jansson in fabricd's HTTP thread: a report of a
 * thousand link entries is tens of thousands of small JSON values, and malloc
 * and free dominated ingest. Every jansson allocation of the process comes from
 * the arena once installed, and jansson's frees are no-ops, so:
 *   - only one thread may use jansson;
 *   - no JSON value, and no string from json_dumps(), may outlive
 *     fm_arena_reset(): copy out with json_dumpb() into malloc'd memory.
 */
int fm_arena_install (void);

/* Release everything allocated since the last reset (keeps one chunk). */
void fm_arena_reset (void);

/* Bytes handed out since the last reset. */
size_t fm_arena_used (void);

#endif /* FM_ARENA_H */
