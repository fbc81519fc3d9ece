/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_SPOOL_H
#define FM_AGENT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Report windows waiting for fabricd, one file per window named by its
 * sequence number, in a directory of their own. Every window goes through the
 * spool, so a window is on disk before the agent first tries to send it and
 * an unreachable daemon only makes the spool grow. Drop policy: when the
 * spool holds max_files windows, the OLDEST is deleted to make room (recent
 * windows describe the fabric as it is now; old ones mostly repeat what the
 * daemon will not act on anymore). Each drop is counted.
 */
typedef struct fm_spool fm_spool_t;

/* Open (creating it 0700 if needed, refusing an insecure one) dir.
 * Windows left by an earlier agent of the same job are kept and resent.
 * NULL/errno + err.
 */
fm_spool_t *
fm_spool_open (const char *dir, size_t max_files, size_t max_bytes, fm_error_t *err);
void fm_spool_destroy (fm_spool_t *s);

/* Store text (one JSON window) as seq; evicts the oldest when full.
 * Files over max_bytes are refused: -1/EFBIG. -1/errno + err on I/O errors.
 */
int fm_spool_put (fm_spool_t *s, uint64_t seq, const char *text, fm_error_t *err);

/* Number of windows held and the n oldest sequence numbers into seqs[]
 * (ascending); returns how many were written.
 */
size_t fm_spool_count (const fm_spool_t *s);
size_t fm_spool_oldest (const fm_spool_t *s, uint64_t *seqs, size_t n);

/* The highest seq held, or -1 when empty (a restarted agent continues after it). */
int64_t fm_spool_last (const fm_spool_t *s);

/* Read window seq (malloc'd NUL-terminated text) or NULL/errno. */
char *fm_spool_get (fm_spool_t *s, uint64_t seq);

/* Delete window seq (sent, or refused for good). */
int fm_spool_remove (fm_spool_t *s, uint64_t seq);

/* Windows evicted by the drop policy since open. */
uint64_t fm_spool_dropped (const fm_spool_t *s);

#endif /* FM_AGENT_SPOOL_H */
