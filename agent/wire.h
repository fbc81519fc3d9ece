/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#ifndef FM_AGENT_WIRE_H
#define FM_AGENT_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "fm/probe.h"

/* Why a datagram was dropped; the agent keeps one counter per reason. */
typedef enum {
    FM_WIRE_OK = 0,
    FM_WIRE_BAD_SIZE,    /* not FM_PROBE_SIZE bytes */
    FM_WIRE_BAD_MAGIC,   /* not a probe at all */
    FM_WIRE_BAD_VERSION, /* a probe of another protocol version */
    FM_WIRE_BAD_FORMAT,  /* unknown type, reserved bits set */
    FM_WIRE_BAD_TAG,     /* authentication failed (wrong key, forged, corrupted) */
    FM_WIRE_FOREIGN,     /* authentic but for another job or node */
    FM_WIRE_NREASONS,
} fm_wire_reason_t;

/* Short names for logs and reports ("bad_tag", ...). */
const char *fm_wire_reason_name (fm_wire_reason_t reason);

/* Encode p into buf (FM_PROBE_SIZE bytes) and authenticate it with key.
 * Returns FM_PROBE_SIZE, or -1/EINVAL for an unknown type.
 */
int fm_wire_encode (const fm_probe_t *p,
                    const uint8_t key[FM_PROBE_KEY_SIZE],
                    uint8_t buf[FM_PROBE_SIZE]);

/* Validate and decode a received datagram. The tag is checked before any
 * field is trusted; job_id and dst_index must match ours. On success fills p
 * and returns FM_WIRE_OK; otherwise p is untouched and the reason is returned.
 */
fm_wire_reason_t fm_wire_decode (const void *buf,
                                 size_t len,
                                 const uint8_t key[FM_PROBE_KEY_SIZE],
                                 uint64_t job_id,
                                 uint16_t my_index,
                                 fm_probe_t *p);

#endif /* FM_AGENT_WIRE_H */
